//! The TMC controllers of one shard, on one work queue:
//! - a workspace pass per logical cluster with Placements: each Placement's Location
//!   ([`super::placement`]) and SyncTarget ([`super::schedule`]), its status and kcp's
//!   `internal.workload.kcp.io/synctarget` annotation; the default Placement of a workload
//!   APIBinding; then each namespace's scheduling labels and annotations
//!   ([`super::namespaces`]);
//! - a namespace pass that hands a scheduled namespace's labels and annotations down to
//!   the objects in it (kcp's resource controller);
//! - a resync, every [`RESYNC`]: Location status, SyncTarget heartbeats, and every
//!   workspace with Placements again (Locations and SyncTargets of other shards change
//!   in the cache, which no local write announces).
//!
//! Writes of Placements, namespaces and APIBindings queue their workspace; a write of an
//! object in a scheduled namespace that lacks the namespace's labels queues the namespace.
//! The Location workspace is read through the fallback lister, so an inventory on another
//! shard is read from the cache, also while that shard is down.

use super::namespaces::{self, PlacementView};
use super::placement::{self as choice, Found};
use super::schedule;
use super::Settings;
use crate::cache::lister;
use crate::controllers::queue::WorkQueue;
use crate::controllers::{earliest, REQUEUE_DELAY};
use crate::state::Shard;
use crate::store_watch::{StoreConsumer, StoreSource};
use apiserver::objects;
use apiserver::registry::ResourceType;
use apiserver::storage::{self, ObjectRef, WriteOptions};
use parking_lot::Mutex;
use placement::ApiIdentity;
use protocol::meta;
use protocol::types::{
    COMPUTE_API_EXPORT_ANNOTATION, INTERNAL_SYNC_TARGET_PLACEMENT_ANNOTATION, LOCATION_RESOURCE, PLACEMENT_RESOURCE,
    SCHEDULING_KCP_API_VERSION, SCHEDULING_KCP_GROUP, SKIP_DEFAULT_OBJECT_CREATION_ANNOTATION, SYNC_TARGET_RESOURCE,
    WORKLOAD_KCP_GROUP,
};
use protocol::watcher::{drive, Backoff};
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

/// How often Locations, SyncTargets and every workspace with Placements are looked at
/// again.
const RESYNC: Duration = Duration::from_secs(2);

/// The name of the Placement created for a workload APIBinding (kcp's).
pub const DEFAULT_PLACEMENT: &str = "default";

/// The export kcp's compute workspace serves the Kubernetes workload APIs through.
const KUBERNETES_EXPORT: &str = protocol::types::DEFAULT_SUPPORTED_API_EXPORT;

/// Work the queue holds.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Item {
    /// A logical cluster's Placements and namespaces.
    Workspace(String),
    /// The objects of one namespace (cluster, namespace).
    Namespace(String, String),
}

/// What a scheduled namespace hands down: its state labels and deletion annotations.
type Inherited = (BTreeMap<String, String>, BTreeMap<String, String>);

/// The controllers' shared state.
struct Tmc {
    shard: Arc<Shard>,
    settings: Settings,
    queue: WorkQueue<Item>,
    /// Scheduled namespaces (cluster, namespace) and what they hand down.
    scheduled: Mutex<HashMap<(String, String), Inherited>>,
    /// Workspaces whose last whole pass found no Placement and left no namespace
    /// scheduled: until a Placement appears, a namespace write there has nothing to
    /// schedule, and their namespaces are not listed again (a hub workspace creating
    /// thousands of namespaces would otherwise pay for all of them at every one).
    idle: Mutex<HashSet<String>>,
}

/// Runs the TMC controllers until the process ends.
pub async fn run(shard: Arc<Shard>, settings: Settings) {
    let Some(placements) = shard.registry.get(SCHEDULING_KCP_GROUP, "v1alpha1", PLACEMENT_RESOURCE) else { return };
    let tmc = Arc::new(Tmc {
        shard: shard.clone(),
        settings,
        queue: WorkQueue::default(),
        scheduled: Mutex::default(),
        idle: Mutex::default(),
    });
    let mut watched = vec![placements, shard.registry.namespaces()];
    watched.extend(shard.registry.get(protocol::types::APIS_KCP_GROUP, "v1alpha1", "apibindings"));
    for rt in watched {
        let tmc = tmc.clone();
        let prefix = objects::collection_prefix(&rt, None, None).into_bytes();
        tokio::spawn(async move {
            let mut source = StoreSource::new(tmc.shard.store.clone(), prefix, WorkspaceFeed(tmc.clone()));
            drive::run(&rt.resource, &mut source, Backoff::new(REQUEUE_DELAY, REQUEUE_DELAY)).await;
        });
    }
    let objects = tmc.clone();
    tokio::spawn(async move {
        let feed = ObjectFeed(objects.clone());
        let mut source = StoreSource::new(objects.shard.store.clone(), Vec::new(), feed).paged(500);
        drive::run("tmc-objects", &mut source, Backoff::new(REQUEUE_DELAY, REQUEUE_DELAY)).await;
    });
    tokio::spawn(work(tmc.clone()));
    let mut tick = tokio::time::interval(RESYNC);
    loop {
        tick.tick().await;
        tmc.resync().await;
    }
}

/// Takes items off the queue, one at a time.
async fn work(tmc: Arc<Tmc>) {
    loop {
        let item = tmc.queue.next().await;
        let outcome = match &item {
            Item::Workspace(cluster) => tmc.workspace(cluster).await,
            Item::Namespace(cluster, namespace) => tmc.namespace_objects(cluster, namespace).await.map(|()| None),
        };
        tmc.queue.done(&item);
        match outcome {
            Ok(requeue) => {
                tmc.queue.forget(&item);
                if let Some(after) = requeue {
                    tmc.add_after(item, after);
                }
            }
            Err(error) => {
                tracing::warn!(%error, ?item, "placement work failed; retrying");
                if let Some(after) = tmc.queue.schedule_retry(&item) {
                    let tmc = tmc.clone();
                    tokio::spawn(async move {
                        tokio::time::sleep(after).await;
                        tmc.queue.retry(item);
                    });
                }
            }
        }
    }
}

impl Tmc {
    fn add_after(self: &Arc<Self>, item: Item, after: Duration) {
        let tmc = self.clone();
        tokio::spawn(async move {
            tokio::time::sleep(after).await;
            tmc.queue.add(item);
        });
    }

    fn row(&self, group: &str, resource: &str) -> anyhow::Result<Arc<ResourceType>> {
        self.shard
            .registry
            .get(group, "v1alpha1", resource)
            .ok_or_else(|| anyhow::anyhow!("{resource}.{group} is not served"))
    }

    /// Location status and SyncTarget heartbeats of this shard, and every workspace with
    /// Placements queued again.
    async fn resync(&self) {
        for (group, resource) in [(SCHEDULING_KCP_GROUP, LOCATION_RESOURCE), (WORKLOAD_KCP_GROUP, SYNC_TARGET_RESOURCE)]
        {
            let Ok(rt) = self.row(group, resource) else { return };
            let mut found = Vec::new();
            let scanned = objects::scan(&self.shard.store, &rt, |cluster, object| {
                found.push((cluster.to_string(), object.clone()))
            });
            if let Err(error) = scanned {
                tracing::warn!(%error, resource, "listing failed");
                continue;
            }
            for (cluster, object) in found {
                let done = match resource {
                    LOCATION_RESOURCE => super::location::reconcile(&self.shard, &rt, &cluster, &object).await,
                    _ => super::heartbeat::reconcile(&self.shard, &rt, &cluster, &object, self.settings).await,
                };
                if let Err(error) = done {
                    tracing::warn!(%error, %cluster, resource, "status update failed; retrying");
                }
            }
        }
        let Ok(rt) = self.row(SCHEDULING_KCP_GROUP, PLACEMENT_RESOURCE) else { return };
        let mut clusters = HashSet::new();
        let _ = objects::scan(&self.shard.store, &rt, |cluster, _| {
            clusters.insert(cluster.to_string());
        });
        for cluster in clusters {
            self.queue.add(Item::Workspace(cluster));
        }
    }

    /// One workspace: default Placements, each Placement's choices and status, then each
    /// namespace. Returns when to look again.
    async fn workspace(self: &Arc<Self>, cluster: &str) -> anyhow::Result<Option<Duration>> {
        let shard = &self.shard;
        let placements_rt = self.row(SCHEDULING_KCP_GROUP, PLACEMENT_RESOURCE)?;
        let bindings_rt = self.row(protocol::types::APIS_KCP_GROUP, "apibindings")?;
        let bindings = objects::list_in_cluster(&shard.store, &bindings_rt, cluster).map_err(error)?;
        self.default_placements(cluster, &placements_rt, &bindings_rt, &bindings).await?;
        let placements = objects::list_in_cluster(&shard.store, &placements_rt, cluster).map_err(error)?;
        let scheduled_here = |tmc: &Tmc| tmc.scheduled.lock().keys().any(|(c, _)| c == cluster);
        let idle = placements.is_empty() && !scheduled_here(self);
        if idle && self.idle.lock().contains(cluster) {
            return Ok(None);
        }
        let namespaces =
            objects::list_in_cluster(&shard.store, &shard.registry.namespaces(), cluster).map_err(error)?;
        let bound = schedule::bound_apis(&bindings);
        let now = jiff::Timestamp::now();
        let mut requeue: Option<Duration> = None;
        let mut views = Vec::new();
        // One Placement or namespace that fails does not hold up the others.
        let mut failed = None;
        for placement in placements.iter().filter(|p| !meta::is_deleting(p)) {
            match self.placement(cluster, &placements_rt, placement, &namespaces, &bound, now).await {
                Ok((updated, again)) => {
                    views.push(PlacementView::of(&updated));
                    requeue = earliest(requeue, again);
                }
                Err(error) => {
                    views.push(PlacementView::of(placement));
                    failed = Some(error.context(format!("placement {}", meta::name(placement).unwrap_or_default())));
                }
            }
        }
        let namespaces_rt = shard.registry.namespaces();
        let names: HashSet<&str> = namespaces.iter().filter_map(meta::name).collect();
        self.scheduled.lock().retain(|(c, ns), _| c != cluster || names.contains(ns.as_str()));
        for namespace in &namespaces {
            let changes = namespaces::schedule(namespace, &views, self.settings.removal_grace, now);
            requeue = earliest(requeue, changes.requeue_after);
            let name = meta::name(namespace).unwrap_or_default();
            let written = if changes.is_empty() {
                namespace.clone()
            } else {
                let at = ObjectRef { cluster, namespace: None, name };
                let written =
                    storage::guaranteed_update(shard, &namespaces_rt, &at, None, WriteOptions::default(), |old| {
                        let mut new = old.clone();
                        changes.apply(&mut new);
                        Ok(new)
                    })
                    .await;
                match written {
                    Ok(written) => written,
                    Err(e) if e.is_not_found() => continue,
                    Err(e) => {
                        failed = Some(anyhow::anyhow!("namespace {name}: {}", e.message));
                        continue;
                    }
                }
            };
            self.note_scheduled(cluster, name, &written);
        }
        if idle && failed.is_none() && !scheduled_here(self) {
            self.idle.lock().insert(cluster.to_string());
        } else {
            self.idle.lock().remove(cluster);
        }
        match failed {
            Some(error) => Err(error),
            None => Ok(requeue),
        }
    }

    /// Records what a namespace hands down; queues its objects when that changed.
    fn note_scheduled(&self, cluster: &str, name: &str, namespace: &Value) {
        let inherited = namespaces::inherited(namespace);
        let key = (cluster.to_string(), name.to_string());
        let mut scheduled = self.scheduled.lock();
        let before = if inherited.0.is_empty() && inherited.1.is_empty() {
            scheduled.remove(&key)
        } else {
            scheduled.insert(key.clone(), inherited.clone())
        };
        drop(scheduled);
        if before.unwrap_or_default() != inherited {
            self.queue.add(Item::Namespace(key.0, key.1));
        }
    }

    /// One Placement: its Location and SyncTarget, its annotation and status. Returns the
    /// Placement as written and when its choice may stop being valid.
    async fn placement(
        &self,
        cluster: &str,
        rt: &ResourceType,
        placement: &Value,
        namespaces: &[Value],
        bound: &[ApiIdentity],
        now: jiff::Timestamp,
    ) -> anyhow::Result<(Value, Option<Duration>)> {
        let shard = &self.shard;
        let name = meta::name(placement).unwrap_or_default();
        let key = format!("{cluster}/{name}");
        let path = choice::location_path(cluster, placement);
        let location_cluster = lister::local_cluster(shard, &path)
            .or_else(|| shard.cache.cluster_of_path(&path))
            .unwrap_or_else(|| path.clone());
        let (locations, _) = lister::list(shard, SCHEDULING_KCP_GROUP, LOCATION_RESOURCE, &location_cluster);
        let location = choice::choose_location(&key, placement, &path, &locations, now)?;
        let mut target = Err(String::from("no Location is selected"));
        let mut requeue = None;
        if let Some(location) = location.as_deref() {
            let location = locations.iter().find(|l| meta::name(l) == Some(location)).expect("a chosen location");
            let (targets, _) = lister::list(shard, WORKLOAD_KCP_GROUP, SYNC_TARGET_RESOURCE, &location_cluster);
            let candidates: Vec<_> =
                targets.iter().map(|t| schedule::candidate(t, self.supported_apis(t, &location_cluster))).collect();
            let current_key = meta::annotations(placement).get(INTERNAL_SYNC_TARGET_PLACEMENT_ANNOTATION).cloned();
            let current = candidates
                .iter()
                .find(|c| Some(placement::sync_target_key(&location_cluster, &c.name)) == current_key)
                .map(|c| c.name.clone());
            let instance_selector = location.pointer("/spec/instanceSelector");
            let chosen =
                schedule::choose_target(&key, current.as_deref(), instance_selector, &candidates, bound.to_vec(), now)?;
            requeue =
                chosen.requeue_at.map(|at| Duration::from_secs_f64(at.duration_since(now).as_secs_f64().max(0.1)));
            target = match chosen.name {
                Some(name) => Ok(name),
                None if chosen.rejected.is_empty() => Err("the Location selects no SyncTarget".to_string()),
                None => Err(chosen.rejected.join(", ")),
            };
        }
        let wanted_key = target.as_ref().ok().map(|name| placement::sync_target_key(&location_cluster, name));
        let selects_namespaces = {
            let selecting = PlacementView { valid: location.is_some(), ..PlacementView::of(placement) };
            namespaces.iter().any(|ns| selecting.selects(&meta::labels(ns)))
        };
        let found = Found {
            path: &path,
            location: location.as_deref(),
            target: target.as_deref().map_err(String::as_str),
            selects_namespaces,
        };
        let wanted = choice::status(found);
        let at = ObjectRef { cluster, namespace: None, name };
        let mut current = placement.clone();
        let annotated = meta::annotations(placement).get(INTERNAL_SYNC_TARGET_PLACEMENT_ANNOTATION).cloned();
        if annotated != wanted_key {
            current = storage::guaranteed_update(shard, rt, &at, None, WriteOptions::default(), |old| {
                let mut new = old.clone();
                meta::set_map_entry(
                    &mut new,
                    "annotations",
                    INTERNAL_SYNC_TARGET_PLACEMENT_ANNOTATION,
                    wanted_key.as_deref(),
                );
                Ok(new)
            })
            .await
            .map_err(|e| anyhow::anyhow!(e.message))?;
        }
        if !current.get("status").is_some_and(|status| apiserver::conditions::same_status(status, &wanted)) {
            current = storage::guaranteed_update(shard, rt, &at, Some("status"), WriteOptions::default(), |old| {
                let mut new = old.clone();
                new["status"] = apiserver::conditions::with_transition_times(old.get("status"), &wanted);
                Ok(new)
            })
            .await
            .map_err(|e| anyhow::anyhow!(e.message))?;
        }
        Ok((current, requeue))
    }

    /// What a SyncTarget in `cluster` supports besides built-in resources: the resources
    /// of the APIExports its `supportedAPIExports` name (by identity), and what its agent
    /// reports accepted. `None` when it names no export (built-in resources only).
    fn supported_apis(&self, target: &Value, cluster: &str) -> Option<Vec<ApiIdentity>> {
        let exports =
            target.pointer("/spec/supportedAPIExports").and_then(Value::as_array).filter(|e| !e.is_empty())?;
        let mut apis = schedule::synced_apis(target);
        for reference in exports {
            let text = |field: &str| reference.get(field).and_then(Value::as_str).filter(|t| !t.is_empty());
            let Some(name) = text("export") else { continue };
            let path = text("path").unwrap_or(cluster);
            let group = protocol::types::APIS_KCP_GROUP;
            let Some(export) = lister::get(&self.shard, group, "apiexports", path, "", name) else { continue };
            let Some(identity) = export.object.pointer("/status/identityHash").and_then(Value::as_str) else {
                continue;
            };
            let schemas = export.object.pointer("/spec/latestResourceSchemas").and_then(Value::as_array);
            for schema_name in schemas.into_iter().flatten().filter_map(Value::as_str) {
                let schema = lister::get(&self.shard, group, "apiresourceschemas", &export.cluster, "", schema_name);
                if let Some((group, resource)) = schema.and_then(|s| crate::binding::schema::group_resource(&s.object))
                {
                    apis.push(ApiIdentity { group, resource, identity_hash: identity.to_string() });
                }
            }
        }
        Some(apis)
    }

    /// kcp's default Placement: a bound APIBinding to a workload export (kcp's
    /// `kubernetes` compute export, or one annotated as compute) gets a Placement
    /// `default` over every namespace and Location of the export's workspace, once; the
    /// binding is then annotated so that deleting the Placement does not bring it back.
    async fn default_placements(
        &self,
        cluster: &str,
        placements_rt: &ResourceType,
        bindings_rt: &ResourceType,
        bindings: &[Value],
    ) -> anyhow::Result<()> {
        for binding in bindings {
            let annotations = meta::annotations(binding);
            let bound = binding.pointer("/status/phase").and_then(Value::as_str) == Some("Bound");
            if !bound || meta::is_deleting(binding) || annotations.contains_key(SKIP_DEFAULT_OBJECT_CREATION_ANNOTATION)
            {
                continue;
            }
            let Some(reference) = crate::binding::export_ref(binding, cluster) else { continue };
            let export = lister::get(
                &self.shard,
                protocol::types::APIS_KCP_GROUP,
                "apiexports",
                &reference.path,
                "",
                &reference.name,
            );
            let compute = reference.name == KUBERNETES_EXPORT
                || annotations.contains_key(COMPUTE_API_EXPORT_ANNOTATION)
                || export.is_some_and(|e| meta::annotations(&e.object).contains_key(COMPUTE_API_EXPORT_ANNOTATION));
            if !compute {
                continue;
            }
            let placement = json!({
                "apiVersion": SCHEDULING_KCP_API_VERSION,
                "kind": protocol::types::PLACEMENT_KIND,
                "metadata": {"name": DEFAULT_PLACEMENT},
                "spec": {
                    "locationSelectors": [{}],
                    "namespaceSelector": {},
                    "locationResource": {"group": WORKLOAD_KCP_GROUP, "version": "v1alpha1", "resource": SYNC_TARGET_RESOURCE},
                    "locationWorkspace": reference.path,
                },
            });
            match storage::create(&self.shard, placements_rt, cluster, placement, WriteOptions::default()).await {
                Ok(_) => {}
                Err(e) if e.is_already_exists() => {}
                Err(e) => return Err(anyhow::anyhow!(e.message)),
            }
            let at = ObjectRef { cluster, namespace: None, name: meta::name(binding).unwrap_or_default() };
            storage::guaranteed_update(&self.shard, bindings_rt, &at, None, WriteOptions::default(), |old| {
                let mut new = old.clone();
                meta::set_annotation(&mut new, SKIP_DEFAULT_OBJECT_CREATION_ANNOTATION, "true");
                Ok(new)
            })
            .await
            .map_err(|e| anyhow::anyhow!(e.message))?;
        }
        Ok(())
    }

    /// The keys of every SyncTarget this shard knows (its own, and the cache's replicas),
    /// or `None` while the cache has not been read yet (absence would prove nothing).
    fn known_keys(&self) -> Option<HashSet<String>> {
        if !self.shard.cache.is_synced() {
            return None;
        }
        let mut keys = HashSet::new();
        let key_of =
            |target: &Value| meta::labels(target).get(protocol::types::INTERNAL_SYNC_TARGET_KEY_LABEL).cloned();
        if let Ok(rt) = self.row(WORKLOAD_KCP_GROUP, SYNC_TARGET_RESOURCE) {
            objects::scan(&self.shard.store, &rt, |_, target| keys.extend(key_of(target))).ok()?;
        }
        keys.extend(
            self.shard.cache.list_all(WORKLOAD_KCP_GROUP, SYNC_TARGET_RESOURCE).iter().filter_map(|t| key_of(t)),
        );
        Some(keys)
    }

    /// Hands a namespace's scheduling labels and annotations down to the objects in it.
    async fn namespace_objects(&self, cluster: &str, namespace: &str) -> anyhow::Result<()> {
        let shard = &self.shard;
        let ns_rt = shard.registry.namespaces();
        let ns = match storage::get(shard, &ns_rt, &ObjectRef { cluster, namespace: None, name: namespace }) {
            Ok((ns, _)) => ns,
            Err(e) if e.is_not_found() => return Ok(()),
            Err(e) => return Err(anyhow::anyhow!(e.message)),
        };
        let (labels, annotations) = namespaces::inherited(&ns);
        let now = jiff::Timestamp::now();
        let known = self.known_keys();
        let gone = |key: &str| known.as_ref().is_some_and(|known| !known.contains(key));
        let rows = shard.registry.stored(cluster);
        let mut failed = None;
        for rt in rows.iter().filter(|rt| rt.namespaced && synced(&rt.group, &rt.resource)) {
            let prefix = objects::collection_prefix(rt, Some(cluster), Some(namespace));
            let options = store::ListOptions { prefix: prefix.into_bytes(), ..Default::default() };
            let page = shard.store.list(&options, |_, _| true).map_err(|e| anyhow::anyhow!(e))?;
            for (_, stored) in &page.items {
                let Ok(object) = objects::decode(stored) else { continue };
                let changes = namespaces::inherit(&object, &labels, &annotations, now, &gone);
                if changes.is_empty() {
                    continue;
                }
                let at =
                    ObjectRef { cluster, namespace: Some(namespace), name: meta::name(&object).unwrap_or_default() };
                let written = storage::guaranteed_update(shard, rt, &at, None, WriteOptions::default(), |old| {
                    let mut new = old.clone();
                    namespaces::inherit(old, &labels, &annotations, now, &gone).apply(&mut new);
                    Ok(new)
                })
                .await;
                match written {
                    Ok(_) => {}
                    Err(e) if e.is_not_found() => {}
                    Err(e) => failed = Some(anyhow::anyhow!("{} {}: {}", rt.resource, at.name, e.message)),
                }
            }
        }
        failed.map_or(Ok(()), Err)
    }
}

/// Whether namespaced objects of `group`/`resource` are synced to member clusters, and
/// so inherit their namespace's scheduling: all but kcp's own, RBAC, events, leases and
/// service accounts (which every cluster makes for itself).
pub fn synced(group: &str, resource: &str) -> bool {
    let excluded_groups = ["rbac.authorization.k8s.io", "coordination.k8s.io", "events.k8s.io", "authorization.k8s.io"];
    let excluded = group.ends_with(".kcp.io")
        || excluded_groups.contains(&group)
        || (group.is_empty() && matches!(resource, "events" | "serviceaccounts"));
    !excluded
}

/// Writes and deletions of Placements, namespaces and APIBindings, to queue their
/// workspace (from the key: nothing is decoded).
struct WorkspaceFeed(Arc<Tmc>);

impl WorkspaceFeed {
    fn queue(&self, key: &[u8]) {
        if let Some((cluster, _, _)) = objects::split_key(key) {
            self.0.queue.add(Item::Workspace(cluster.to_string()));
        }
    }
}

impl StoreConsumer for WorkspaceFeed {
    fn page(&mut self, items: &[(bytes::Bytes, store::Versioned)]) {
        items.iter().for_each(|(key, _)| self.queue(key));
    }

    fn event(&mut self, event: &store::Event) {
        self.queue(&event.key);
    }
}

/// Every write of the shard, to queue the scheduled namespaces whose objects lost (or
/// never had) the namespace's labels.
struct ObjectFeed(Arc<Tmc>);

impl StoreConsumer for ObjectFeed {
    fn page(&mut self, _items: &[(bytes::Bytes, store::Versioned)]) {}

    /// After a (re)list, writes made while the watch was away are unknown: every scheduled
    /// namespace's objects are looked at again (the first workspace pass queues them at
    /// start).
    fn listed(&mut self, _rv: u64) {
        let scheduled: Vec<(String, String)> = self.0.scheduled.lock().keys().cloned().collect();
        for (cluster, namespace) in scheduled {
            self.0.queue.add(Item::Namespace(cluster, namespace));
        }
    }

    fn event(&mut self, event: &store::Event) {
        let Some(value) = &event.value else { return };
        let Some(parts) = objects::split_key_in_full(&event.key) else { return };
        let (cluster, namespace) = (parts.cluster, parts.namespace);
        let group = if parts.group == "core" { "" } else { parts.group };
        if namespace.is_empty() || !synced(group, parts.resource) {
            return;
        }
        let key = (cluster.to_string(), namespace.to_string());
        let Some((labels, annotations)) = self.0.scheduled.lock().get(&key).cloned() else { return };
        let Ok(object) = serde_json::from_slice::<Value>(value) else { return };
        if !namespaces::inherit(&object, &labels, &annotations, jiff::Timestamp::now(), &|_| false).is_empty() {
            self.0.queue.add(Item::Namespace(key.0, key.1));
        }
    }
}

fn error(e: apiserver::rest::status::ApiError) -> anyhow::Error {
    anyhow::anyhow!(e.message)
}
