//! The adapter between authorization and the store: one logical cluster's RBAC objects
//! ([`StorePolicy`], a [`PolicySource`]) and its owner ([`StorePolicy::owner`]), read per
//! request.
//!
//! Nothing is cached across requests, so a new binding counts from the next request on
//! and there is no invalidation to get wrong: a non-master request costs a prefix scan of
//! the cluster's ClusterRoleBindings (usually empty or a handful), one of the namespace's
//! RoleBindings, and a point read per bound role. Within one request each read happens at
//! most once (the workspace-access check and the request check share them).

use super::policy::{Binding, Role};
use super::resolver::{PolicyError, PolicySource};
use crate::state::Shard;
use apiserver::objects;
use protocol::types::Owner;
use protocol::wellknown::OWNER_ANNOTATION;
use serde::de::DeserializeOwned;
use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use store::ListOptions;

/// The most RBAC objects of one resource (in one namespace) a request reads; a cluster
/// with more gets 500s naming the limit rather than unbounded work per request.
pub const POLICY_OBJECTS_MAX: usize = 10_000;

/// Roles read in one request, by (namespace, name); `None` for roles that do not exist.
type RoleCache = HashMap<(String, String), Option<Arc<Role>>>;

/// The RBAC objects of one logical cluster, read lazily from the store.
pub struct StorePolicy<'a> {
    shard: &'a Shard,
    cluster: &'a str,
    cluster_role_bindings: RefCell<Option<Arc<[Binding]>>>,
    role_bindings: RefCell<HashMap<String, Arc<[Binding]>>>,
    cluster_roles: RefCell<Option<Arc<[Arc<Role>]>>>,
    roles: RefCell<RoleCache>,
}

impl<'a> StorePolicy<'a> {
    /// The policy of `cluster` on `shard`; nothing is read until asked for.
    pub fn new(shard: &'a Shard, cluster: &'a str) -> Self {
        StorePolicy {
            shard,
            cluster,
            cluster_role_bindings: RefCell::default(),
            role_bindings: RefCell::default(),
            cluster_roles: RefCell::default(),
            roles: RefCell::default(),
        }
    }

    /// The owner recorded on the cluster's LogicalCluster, if any; decodes only the
    /// annotations.
    pub fn owner(&self) -> Option<Owner> {
        #[derive(serde::Deserialize)]
        struct Annotated {
            #[serde(default)]
            metadata: Annotations,
        }
        #[derive(serde::Deserialize, Default)]
        struct Annotations {
            #[serde(default)]
            annotations: Option<BTreeMap<String, String>>,
        }
        let record = self.shard.logical_cluster_record(self.cluster)?;
        let annotated: Annotated = serde_json::from_slice(&record.value).ok()?;
        Owner::parse(annotated.metadata.annotations?.get(OWNER_ANNOTATION)?)
    }

    /// Every object of an RBAC resource in the cluster (or one namespace of it). Objects
    /// that do not decode cannot grant anything and are skipped with a warning.
    fn list<T: DeserializeOwned>(
        &self,
        resource: &'static str,
        namespace: Option<&str>,
    ) -> Result<Vec<T>, PolicyError> {
        let rt = self.shard.registry.rbac(resource);
        let prefix = objects::collection_prefix(&rt, Some(self.cluster), namespace);
        let options =
            ListOptions { prefix: prefix.into_bytes(), limit: Some(POLICY_OBJECTS_MAX), ..ListOptions::default() };
        let mut items = Vec::new();
        let page = self
            .shard
            .store
            .list(&options, |key, stored| match serde_json::from_slice::<T>(&stored.value) {
                Ok(item) => {
                    items.push(item);
                    true
                }
                Err(error) => {
                    tracing::warn!(key = %String::from_utf8_lossy(key), %error, "RBAC object does not decode; ignored");
                    false
                }
            })
            .map_err(|source| PolicyError::Store { what: resource.to_string(), source })?;
        if page.next.is_some() {
            return Err(PolicyError::TooMany { what: resource, max: POLICY_OBJECTS_MAX });
        }
        Ok(items)
    }

    /// One Role (`namespace` given) or ClusterRole, read at most once per request.
    fn get_role(&self, namespace: Option<&str>, name: &str) -> Result<Option<Arc<Role>>, PolicyError> {
        let cache_key = (namespace.unwrap_or_default().to_string(), name.to_string());
        if let Some(cached) = self.roles.borrow().get(&cache_key) {
            return Ok(cached.clone());
        }
        // Stored names are validated path segments; anything else names nothing.
        if name.is_empty() || name.contains('/') {
            return Ok(None);
        }
        let (resource, rt) = match namespace {
            Some(_) => ("roles", self.shard.registry.rbac("roles")),
            None => ("clusterroles", self.shard.registry.rbac("clusterroles")),
        };
        let key = objects::key(&rt, self.cluster, namespace, name);
        let stored = self
            .shard
            .store
            .get(key.as_bytes())
            .map_err(|source| PolicyError::Store { what: format!("{resource} {name}"), source })?;
        let role = stored.and_then(|stored| match serde_json::from_slice::<Role>(&stored.value) {
            Ok(role) => Some(Arc::new(role)),
            Err(error) => {
                tracing::warn!(%key, %error, "RBAC role does not decode; ignored");
                None
            }
        });
        self.roles.borrow_mut().insert(cache_key, role.clone());
        Ok(role)
    }
}

impl PolicySource for StorePolicy<'_> {
    fn cluster_role_bindings(&self) -> Result<Arc<[Binding]>, PolicyError> {
        if let Some(cached) = self.cluster_role_bindings.borrow().as_ref() {
            return Ok(cached.clone());
        }
        let bindings: Arc<[Binding]> = self.list::<Binding>("clusterrolebindings", None)?.into();
        *self.cluster_role_bindings.borrow_mut() = Some(bindings.clone());
        Ok(bindings)
    }

    fn role_bindings(&self, namespace: &str) -> Result<Arc<[Binding]>, PolicyError> {
        if let Some(cached) = self.role_bindings.borrow().get(namespace) {
            return Ok(cached.clone());
        }
        let bindings: Arc<[Binding]> = self.list::<Binding>("rolebindings", Some(namespace))?.into();
        self.role_bindings.borrow_mut().insert(namespace.to_string(), bindings.clone());
        Ok(bindings)
    }

    fn role(&self, namespace: &str, name: &str) -> Result<Option<Arc<Role>>, PolicyError> {
        self.get_role(Some(namespace), name)
    }

    fn cluster_role(&self, name: &str) -> Result<Option<Arc<Role>>, PolicyError> {
        self.get_role(None, name)
    }

    fn cluster_roles(&self) -> Result<Arc<[Arc<Role>]>, PolicyError> {
        if let Some(cached) = self.cluster_roles.borrow().as_ref() {
            return Ok(cached.clone());
        }
        let roles: Arc<[Arc<Role>]> = self.list::<Role>("clusterroles", None)?.into_iter().map(Arc::new).collect();
        *self.cluster_roles.borrow_mut() = Some(roles.clone());
        Ok(roles)
    }
}
