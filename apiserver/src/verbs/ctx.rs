//! The context every verb gets: the request's core, caller, scope, resource row,
//! parameters and headers, and how to answer in the negotiated representation.

use crate::registry::Core;
use crate::registry::ResourceType;
use crate::rest::negotiate::{self, Representation};
use crate::rest::request_info::ResourceRequest;
use crate::rest::status::{ApiError, ApiResult};
use crate::rest::{self, Response};
use crate::storage::{ObjectRef, WriteOptions};
use security::authn::Identity;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Arc;

/// Which logical clusters a request addresses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scope {
    /// One logical cluster, by name.
    Cluster(String),
    /// Every logical cluster on this shard (`/clusters/*`), list and watch only.
    Wildcard,
}

/// Everything a verb needs about its request.
pub struct Ctx {
    /// The store, the resource table and the core's counters.
    pub core: Arc<Core>,
    /// The caller.
    pub identity: Identity,
    /// The addressed cluster(s).
    pub scope: Scope,
    /// The parsed path.
    pub req: ResourceRequest,
    /// The resource's registry row.
    pub rt: Arc<ResourceType>,
    /// Query parameters.
    pub query: HashMap<String, String>,
    /// Request headers.
    pub headers: ::http::HeaderMap,
    /// The admission of this request's writes when a virtual workspace admitted it, in
    /// place of the registry's.
    pub writes: Option<Arc<dyn crate::registry::virtual_workspace::WriteAdmission>>,
    /// The logical clusters a request across all of them (`*`) may see, when a virtual
    /// workspace narrows it; `None`: every cluster.
    pub clusters: Option<Arc<std::collections::BTreeSet<String>>>,
}

impl Ctx {
    /// Whether an object stored under `key` is in a cluster this request may see.
    pub fn sees_cluster_of(&self, key: &[u8]) -> bool {
        let Some(clusters) = &self.clusters else { return true };
        crate::objects::split_key(key).is_some_and(|(cluster, _, _)| clusters.contains(cluster))
    }

    /// The cluster of a single-cluster request.
    pub fn cluster(&self) -> ApiResult<&str> {
        match &self.scope {
            Scope::Cluster(name) => Ok(name),
            Scope::Wildcard => Err(ApiError::method_not_allowed(
                "only list and watch are served across all logical clusters (/clusters/*)",
            )),
        }
    }

    /// The object the path names.
    pub fn object_ref(&self) -> ApiResult<ObjectRef<'_>> {
        let name = self.req.name.as_deref().ok_or_else(|| ApiError::bad_request("the request names no object"))?;
        Ok(ObjectRef { cluster: self.cluster()?, namespace: self.namespace(), name })
    }

    /// The namespace of the request, for namespaced resources.
    pub fn namespace(&self) -> Option<&str> {
        if self.rt.namespaced {
            self.req.namespace.as_deref()
        } else {
            None
        }
    }

    /// A query parameter.
    pub fn param(&self, name: &str) -> Option<&str> {
        self.query.get(name).map(String::as_str)
    }

    /// A header as text.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// `dryRun=All` → no write; any other value is 400, as in kube.
    pub fn write_options(&self) -> ApiResult<WriteOptions> {
        match self.param("dryRun") {
            None | Some("") => Ok(WriteOptions::default()),
            Some("All") => Ok(WriteOptions { dry_run: true }),
            Some(other) => Err(ApiError::bad_request(format!(
                "unsupported dryRun value {other:?}: the only supported value is \"All\""
            ))),
        }
    }

    /// The representation to answer in.
    pub fn representation(&self) -> ApiResult<Representation> {
        negotiate::choose(self.header("accept"), true, false)
    }

    /// Answers with one object in the negotiated representation.
    pub fn respond_object(&self, code: u16, object: &Value, warnings: &[String]) -> ApiResult<Response> {
        self.respond(code, object, None, warnings, |o| vec![o.clone()])
    }

    /// [`Ctx::respond_object`] for a created object whose JSON the write already produced:
    /// a plain JSON answer uses those bytes instead of serializing the object again.
    pub fn respond_created(&self, created: &crate::storage::Created, warnings: &[String]) -> ApiResult<Response> {
        self.respond(201, &created.object, created.json.clone(), warnings, |o| vec![o.clone()])
    }

    /// Answers with a list in the negotiated representation (a table has a row per item).
    pub fn respond_list(&self, code: u16, list: &Value, warnings: &[String]) -> ApiResult<Response> {
        self.respond(code, list, None, warnings, |l| {
            l.get("items").and_then(Value::as_array).cloned().unwrap_or_default()
        })
    }

    fn respond(
        &self,
        code: u16,
        value: &Value,
        json: Option<bytes::Bytes>,
        warnings: &[String],
        rows: impl Fn(&Value) -> Vec<Value>,
    ) -> ApiResult<Response> {
        let deprecation = self.rt.custom.as_ref().and_then(|c| c.deprecation.clone());
        let with_deprecation: Vec<String>;
        let warnings = match deprecation {
            Some(warning) => {
                with_deprecation = warnings.iter().cloned().chain([warning]).collect();
                &with_deprecation
            }
            None => warnings,
        };
        let converted;
        let value = match self.rt.converts() {
            true => {
                converted = self.present_all(value);
                &converted
            }
            false => value,
        };
        // `json` is the value's own JSON, so it serves only where nothing was converted.
        let json = json.filter(|_| !self.rt.converts());
        match (self.representation()?, json) {
            (Representation::Table, _) if value.get("kind").and_then(Value::as_str) != Some("Status") => {
                let include = crate::table::IncludeObject::parse(self.param("includeObject"));
                let list_meta = serde_json::json!({"resourceVersion": value.pointer("/metadata/resourceVersion").cloned().unwrap_or_default()});
                let table = crate::table::table(&self.rt, &rows(value), include, list_meta, true);
                Ok(rest::json_response(code, &table, warnings))
            }
            (Representation::Yaml, _) => {
                let yaml = serde_yaml_ng::to_string(value).map_err(|e| ApiError::internal(e.to_string()))?;
                Ok(rest::bytes_response(code, "application/yaml", yaml, warnings))
            }
            (Representation::Json, Some(json)) => Ok(rest::bytes_response(code, "application/json", json, warnings)),
            _ => Ok(rest::json_response(code, value, warnings)),
        }
    }
}

impl Ctx {
    /// A custom resource (or a list of them) in the version the request addressed.
    fn present_all(&self, value: &Value) -> Value {
        let mut value = value.clone();
        match value.get_mut("items").and_then(Value::as_array_mut) {
            Some(items) => items.iter_mut().for_each(|item| self.rt.strategy.to_version(&self.rt, item)),
            None => self.rt.strategy.to_version(&self.rt, &mut value),
        }
        value
    }

    /// One object as the client should see it (custom resources in the addressed version,
    /// with its defaults); other objects are borrowed as they are.
    pub fn present<'v>(&self, object: &'v Value) -> std::borrow::Cow<'v, Value> {
        if !self.rt.converts() {
            return std::borrow::Cow::Borrowed(object);
        }
        let mut object = object.clone();
        self.rt.strategy.to_version(&self.rt, &mut object);
        std::borrow::Cow::Owned(object)
    }
}
