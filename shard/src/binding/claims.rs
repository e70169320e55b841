//! Permission claims (kcp's `permissionClaims`): an APIExport asks for access to objects
//! of other resources (ConfigMaps, Secrets, …) in the workspaces that bind it, and each
//! binding accepts or rejects every claim. The binding controller records the claims in
//! effect in `status.appliedPermissionClaims` (an accepted claim the export still makes).
//!
//! This controller marks what a claim grants, as kcp does, with a label on every object
//! of a claimed resource in a workspace whose binding applies the claim:
//! `claimed.internal.apis.kcp.io/<export key>: <claim value>` ([`label`]). The export's
//! view ([`crate::export_view`]) lists and watches claimed resources with that label as a
//! selector, so a claim that is rejected or dropped takes its objects out of the view at
//! once: the label goes, and a watch sees DELETED.
//!
//! It follows the shard's APIBindings (their applied claims, per logical cluster) and, for
//! every resource some binding claims, that resource's objects in every cluster, fixing
//! each object whose claim labels differ from what its cluster's bindings apply: at start,
//! when a binding's claims change, and when an object is written.

use crate::controllers::REQUEUE_DELAY;
use crate::state::Shard;
use crate::store_watch::{StoreConsumer, StoreSource};
use apiserver::objects;
use apiserver::registry::virtual_workspace::{keep_reserved, WriteAdmission};
use apiserver::registry::ResourceType;
use apiserver::rest::status::{ApiError, ApiResult};
use apiserver::storage::{self, ObjectRef, WriteOptions};
use parking_lot::RwLock;
use protocol::meta;
use protocol::watcher::{drive, Backoff};
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::Arc;
use tokio::sync::mpsc;

/// The prefix of every claim label's key.
pub const LABEL_PREFIX: &str = "claimed.internal.apis.kcp.io/";

/// The ordinary writes' guard of claim labels: only this controller marks what a claim
/// grants, so a user can neither put an object into a provider's view nor take it out.
#[derive(Debug, Default)]
pub struct ClaimLabels;

impl WriteAdmission for ClaimLabels {
    fn admit(&self, old: Option<&Value>, new: &mut Value, _subresource: Option<&str>) -> ApiResult<()> {
        keep_reserved(old, new, "labels", |key| key.starts_with(LABEL_PREFIX)).map_err(|field| {
            ApiError::forbidden(format!(
                "{field} marks what an APIExport's permission claim grants: only the shard writes it; accept or \
                 reject the claim in the APIBinding's spec.permissionClaims instead"
            ))
        })
    }
}

/// One claim in effect: which resource, and the label that marks what it grants.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Claim {
    /// API group of the claimed resource ("" for core).
    pub group: String,
    /// Its plural resource.
    pub resource: String,
    /// The identity hash of the export serving it; empty for built-ins.
    pub identity: String,
    /// The label key (per export).
    pub key: String,
    /// The label value (per claim).
    pub value: String,
}

fn short_hash(text: &str) -> String {
    Sha256::digest(text.as_bytes()).iter().take(16).map(|b| format!("{b:02x}")).collect()
}

/// The label marking objects claimed by export `export` of logical cluster
/// `export_cluster` under the claim of `group/resource` (of the export with
/// `identity_hash`, empty for built-ins). Pure.
pub fn label(export_cluster: &str, export: &str, group: &str, resource: &str, identity_hash: &str) -> (String, String) {
    let key = format!("{LABEL_PREFIX}{}", short_hash(&format!("{export_cluster}:{export}")));
    (key, short_hash(&format!("{group}/{resource}/{identity_hash}")))
}

/// The claims a binding applies, from its status and reference. Pure.
pub fn applied(binding: &Value) -> Vec<Claim> {
    if meta::is_deleting(binding) {
        return Vec::new();
    }
    let text = |pointer: &str| binding.pointer(pointer).and_then(Value::as_str).unwrap_or_default();
    let (export_cluster, export) = (text("/status/apiExportClusterName"), text("/spec/reference/export/name"));
    if export_cluster.is_empty() || export.is_empty() {
        return Vec::new();
    }
    let claims = binding.pointer("/status/appliedPermissionClaims").and_then(Value::as_array).into_iter().flatten();
    claims
        .filter_map(|claim| {
            let field = |name: &str| claim.get(name).and_then(Value::as_str).unwrap_or_default().to_string();
            let resource = field("resource");
            (!resource.is_empty()).then(|| {
                let identity = field("identityHash");
                let (key, value) = label(export_cluster, export, &field("group"), &resource, &identity);
                Claim { group: field("group"), resource, identity, key, value }
            })
        })
        .collect()
}

/// The claims of `export_claims` (an export's `spec.permissionClaims`) that `binding`
/// accepts, as `status.appliedPermissionClaims` lists them: a claim is matched by group,
/// resource and identity hash, and applies only while the export still makes it. Pure.
pub fn accepted(binding: &Value, export_claims: &[Value]) -> Vec<Value> {
    let same = |a: &Value, b: &Value| {
        let field = |v: &Value, name: &str| v.get(name).and_then(Value::as_str).unwrap_or_default().to_string();
        ["group", "resource", "identityHash"].iter().all(|name| field(a, name) == field(b, name))
    };
    let answers = binding.pointer("/spec/permissionClaims").and_then(Value::as_array).into_iter().flatten();
    let accepted: Vec<&Value> = answers.filter(|answer| answer["state"] == "Accepted").collect();
    export_claims.iter().filter(|claim| accepted.iter().any(|answer| same(claim, answer))).cloned().collect()
}

/// The claims each binding of each cluster applies.
#[derive(Debug, Default)]
pub struct ClaimIndex {
    by_cluster: RwLock<HashMap<String, BTreeMap<String, Vec<Claim>>>>,
}

impl ClaimIndex {
    /// Records `binding` of `cluster` as stored now; returns the claims of the cluster that
    /// changed (added or removed).
    fn observe(&self, cluster: &str, name: &str, binding: Option<&Value>) -> BTreeSet<Claim> {
        let claims = binding.map(applied).unwrap_or_default();
        let mut by_cluster = self.by_cluster.write();
        let bindings = by_cluster.entry(cluster.to_string()).or_default();
        let old = match claims.is_empty() {
            true => bindings.remove(name),
            false => bindings.insert(name.to_string(), claims.clone()),
        };
        let old: BTreeSet<Claim> = old.unwrap_or_default().into_iter().collect();
        let new: BTreeSet<Claim> = claims.into_iter().collect();
        if bindings.is_empty() {
            by_cluster.remove(cluster);
        }
        old.symmetric_difference(&new).cloned().collect()
    }

    /// The claims `cluster`'s bindings apply to `group/resource` of the export with
    /// `identity` (empty: a built-in).
    pub fn of(&self, cluster: &str, group: &str, resource: &str, identity: &str) -> Vec<Claim> {
        let by_cluster = self.by_cluster.read();
        let claims = by_cluster.get(cluster).into_iter().flat_map(|b| b.values()).flatten();
        claims.filter(|c| c.group == group && c.resource == resource && c.identity == identity).cloned().collect()
    }

    /// Every binding (cluster, name) with claims in effect.
    fn bindings(&self) -> Vec<(String, String)> {
        let by_cluster = self.by_cluster.read();
        let all =
            by_cluster.iter().flat_map(|(cluster, bindings)| bindings.keys().map(|b| (cluster.clone(), b.clone())));
        all.collect()
    }

    /// The clusters whose bindings apply the claim marked `key: value`.
    pub fn clusters_applying(&self, key: &str, value: &str) -> std::collections::BTreeSet<String> {
        let by_cluster = self.by_cluster.read();
        let applying = by_cluster
            .iter()
            .filter(|(_, bindings)| bindings.values().flatten().any(|claim| claim.key == key && claim.value == value));
        applying.map(|(cluster, _)| cluster.clone()).collect()
    }

    /// Every resource (group, resource, identity) some binding of this shard claims.
    fn resources(&self) -> HashSet<Claimed> {
        let by_cluster = self.by_cluster.read();
        let claims = by_cluster.values().flat_map(|b| b.values()).flatten();
        claims.map(|c| (c.group.clone(), c.resource.clone(), c.identity.clone())).collect()
    }
}

/// `object`'s labels as its cluster's `claims` want them: every claim label present,
/// none other; `None` when they already are. Pure.
pub fn relabelled(object: &Value, claims: &[Claim]) -> Option<BTreeMap<String, String>> {
    let labels = meta::labels(object);
    let mut wanted: BTreeMap<String, String> =
        labels.iter().filter(|(k, _)| !k.starts_with(LABEL_PREFIX)).map(|(k, v)| (k.clone(), v.clone())).collect();
    for claim in claims {
        wanted.insert(claim.key.clone(), claim.value.clone());
    }
    let current: BTreeMap<String, String> = labels.into_iter().collect();
    (current != wanted).then_some(wanted)
}

/// A claimed resource: group, resource, identity hash of its export (empty: built-in).
type Claimed = (String, String, String);

/// One object to look at: cluster, row, namespace, name.
type Fix = (String, Arc<ResourceType>, Option<String>, String);

/// Runs the claim labeller until the process ends.
pub async fn run(shard: Arc<Shard>, index: Arc<ClaimIndex>) {
    let Some(bindings) = super::bindings_row(&shard) else { return };
    let (fixes, mut pending) = mpsc::unbounded_channel::<Fix>();
    let retry = fixes.clone();
    let (resources, mut claimed) = mpsc::unbounded_channel::<(String, Arc<ResourceType>)>();
    let feed = BindingFeed {
        shard: shard.clone(),
        index: index.clone(),
        fixes: fixes.clone(),
        resources,
        listed: None,
        unresolved: HashSet::new(),
    };
    let prefix = objects::collection_prefix(&bindings, None, None).into_bytes();
    tokio::spawn(async move {
        let mut source = StoreSource::new(feed.shard.store.clone(), prefix, feed);
        drive::run("claim-bindings", &mut source, Backoff::new(REQUEUE_DELAY, REQUEUE_DELAY)).await;
    });
    // A watch per claimed resource, started the first time a binding claims it.
    let (watch_shard, watch_index) = (shard.clone(), index.clone());
    tokio::spawn(async move {
        let mut watched = HashSet::new();
        while let Some((name, rt)) = claimed.recv().await {
            if !watched.insert(name.clone()) {
                continue;
            }
            let feed = ObjectFeed { index: watch_index.clone(), rt: rt.clone(), fixes: fixes.clone() };
            let prefix = objects::collection_prefix(&rt, None, None).into_bytes();
            let mut source = StoreSource::new(watch_shard.store.clone(), prefix, feed).paged(500);
            tokio::spawn(async move {
                drive::run(&format!("claimed-{name}"), &mut source, Backoff::new(REQUEUE_DELAY, REQUEUE_DELAY)).await;
            });
        }
    });
    while let Some((cluster, rt, namespace, name)) = pending.recv().await {
        let claims = index.of(&cluster, &rt.group, &rt.resource, rt.identity().unwrap_or_default());
        let at = ObjectRef { cluster: &cluster, namespace: namespace.as_deref(), name: &name };
        let update = storage::guaranteed_update(&shard, &rt, &at, None, WriteOptions::default(), |old| {
            let mut new = old.clone();
            if let Some(labels) = relabelled(old, &claims) {
                let metadata = meta::metadata_mut(&mut new);
                match labels.is_empty() {
                    true => metadata.remove("labels"),
                    false => metadata.insert("labels".into(), serde_json::json!(labels)),
                };
            }
            Ok(new)
        });
        if let Err(error) = update.await {
            if !error.is_not_found() {
                tracing::warn!(cluster, name, error = %error.message, "claim labels not written; retrying");
                let retry = retry.clone();
                tokio::spawn(async move {
                    tokio::time::sleep(REQUEUE_DELAY).await;
                    let _ = retry.send((cluster, rt, namespace, name));
                });
            }
        }
    }
}

/// The row storing `group/resource` objects: a built-in's, or for a resource of another
/// export (`identity`), its bound CRD's on this shard (none when no workspace here binds
/// that export, so nothing of it can be claimed here).
pub fn row(shard: &Shard, group: &str, resource: &str, identity: &str) -> Option<Arc<ResourceType>> {
    if identity.is_empty() {
        let mut rows = shard.registry.all().iter();
        return rows.find(|r| r.group == group && r.resource == resource && r.strategy.stored()).cloned();
    }
    let rows = shard.registry.custom().of_cluster(super::BOUND_CRDS_CLUSTER);
    rows.into_iter().find(|r| r.group == group && r.resource == resource && r.identity() == Some(identity))
}

/// What the watch of a claimed resource's objects is called (its storage key prefix).
fn watch_name(rt: &ResourceType) -> String {
    rt.key_prefix(None)
}

/// APIBindings: keeps the index and, when a cluster's claims change, looks at every
/// object of the resources concerned in that cluster.
struct BindingFeed {
    shard: Arc<Shard>,
    index: Arc<ClaimIndex>,
    fixes: mpsc::UnboundedSender<Fix>,
    resources: mpsc::UnboundedSender<(String, Arc<ResourceType>)>,
    /// The bindings a relist in progress has handed over so far.
    listed: Option<HashSet<(String, String)>>,
    /// Claimed resources of other exports not served on this shard yet.
    unresolved: HashSet<Claimed>,
}

impl BindingFeed {
    fn observe(&mut self, cluster: &str, name: &str, binding: Option<&Value>) {
        let changed = self.index.observe(cluster, name, binding);
        // Another export's resource is served here only once a binding to that export has
        // made its bound CRD: until then its watch waits, and every binding write (which
        // is how that CRD comes) looks again.
        let waiting: Vec<Claimed> = self.unresolved.iter().cloned().collect();
        for claimed in waiting {
            if let Some(rt) = row(&self.shard, &claimed.0, &claimed.1, &claimed.2) {
                self.unresolved.remove(&claimed);
                let _ = self.resources.send((watch_name(&rt), rt));
            }
        }
        let resources: HashSet<Claimed> =
            changed.iter().map(|c| (c.group.clone(), c.resource.clone(), c.identity.clone())).collect();
        for (group, resource, identity) in resources {
            let Some(rt) = row(&self.shard, &group, &resource, &identity) else {
                self.unresolved.insert((group, resource, identity));
                continue;
            };
            let _ = self.resources.send((watch_name(&rt), rt.clone()));
            let prefix = objects::collection_prefix(&rt, Some(cluster), None);
            let options = store::ListOptions { prefix: prefix.into_bytes(), ..Default::default() };
            let Ok(page) = self.shard.store.list(&options, |_, _| true) else { continue };
            for (key, _) in &page.items {
                if let Some((cluster, namespace, name)) = objects::split_key(key) {
                    let namespace = (!namespace.is_empty()).then(|| namespace.to_string());
                    let _ = self.fixes.send((cluster.to_string(), rt.clone(), namespace, name.to_string()));
                }
            }
        }
    }
}

impl StoreConsumer for BindingFeed {
    fn listing(&mut self) {
        self.listed = Some(HashSet::new());
    }

    fn page(&mut self, items: &[(bytes::Bytes, store::Versioned)]) {
        for (key, stored) in items {
            let Some((cluster, _, name)) = objects::split_key(key) else { continue };
            let binding = objects::decode(stored).ok();
            self.observe(cluster, name, binding.as_ref());
            if let Some(listed) = &mut self.listed {
                listed.insert((cluster.to_string(), name.to_string()));
            }
        }
        let resources = self.index.resources();
        for (group, resource, identity) in resources {
            if let Some(rt) = row(&self.shard, &group, &resource, &identity) {
                let _ = self.resources.send((watch_name(&rt), rt));
            }
        }
    }

    /// A relist is the whole truth: bindings it did not hand over are gone (deleted while
    /// the watch was away), and so are their claims.
    fn listed(&mut self, _rv: u64) {
        let Some(listed) = self.listed.take() else { return };
        for (cluster, name) in self.index.bindings() {
            if !listed.contains(&(cluster.clone(), name.clone())) {
                self.observe(&cluster, &name, None);
            }
        }
    }

    fn event(&mut self, event: &store::Event) {
        let Some((cluster, _, name)) = objects::split_key(&event.key) else { return };
        let binding = event.value.as_ref().and_then(|v| serde_json::from_slice::<Value>(v).ok());
        self.observe(cluster, name, binding.as_ref());
    }
}

/// The objects of one claimed resource: each written one whose claim labels are not what
/// its cluster's bindings apply is queued.
struct ObjectFeed {
    index: Arc<ClaimIndex>,
    rt: Arc<ResourceType>,
    fixes: mpsc::UnboundedSender<Fix>,
}

impl ObjectFeed {
    fn look(&self, key: &[u8], value: &[u8]) {
        let Some((cluster, namespace, name)) = objects::split_key(key) else { return };
        let Ok(object) = serde_json::from_slice::<Value>(value) else { return };
        let claims = self.index.of(cluster, &self.rt.group, &self.rt.resource, self.rt.identity().unwrap_or_default());
        if relabelled(&object, &claims).is_some() {
            let namespace = (!namespace.is_empty()).then(|| namespace.to_string());
            let _ = self.fixes.send((cluster.to_string(), self.rt.clone(), namespace, name.to_string()));
        }
    }
}

impl StoreConsumer for ObjectFeed {
    fn page(&mut self, items: &[(bytes::Bytes, store::Versioned)]) {
        for (key, stored) in items {
            self.look(key, &stored.value);
        }
    }

    fn event(&mut self, event: &store::Event) {
        if let Some(value) = &event.value {
            self.look(&event.key, value);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn binding(claims: Value) -> Value {
        json!({
            "metadata": {"name": "b"},
            "spec": {"reference": {"export": {"path": "root:p", "name": "widgets"}}},
            "status": {"apiExportClusterName": "pc", "appliedPermissionClaims": claims},
        })
    }

    #[test]
    fn only_accepted_claims_the_export_makes_apply() {
        let export =
            [json!({"group": "", "resource": "configmaps", "all": true}), json!({"resource": "secrets", "all": true})];
        let binding = json!({"spec": {"permissionClaims": [
            {"resource": "configmaps", "all": true, "state": "Accepted"},
            {"resource": "secrets", "all": true, "state": "Rejected"},
            {"resource": "pods", "all": true, "state": "Accepted"},
        ]}});
        assert_eq!(accepted(&binding, &export), [export[0].clone()]);
        assert!(accepted(&json!({}), &export).is_empty());
    }

    #[test]
    fn labels_are_per_export_and_per_claim() {
        let (key, value) = label("pc", "widgets", "", "configmaps", "");
        assert!(key.starts_with(LABEL_PREFIX) && key.len() - LABEL_PREFIX.len() == 32, "{key}");
        assert_eq!(value.len(), 32);
        assert_ne!(label("pc", "gadgets", "", "configmaps", "").0, key, "another export, another key");
        assert_ne!(label("pc", "widgets", "", "secrets", "").1, value, "another claim, another value");
    }

    #[test]
    fn the_index_reports_what_changed() {
        let index = ClaimIndex::default();
        let claims = json!([{"group": "", "resource": "configmaps", "all": true}]);
        let changed = index.observe("c", "b", Some(&binding(claims.clone())));
        assert_eq!(changed.len(), 1);
        assert_eq!(index.of("c", "", "configmaps", "").len(), 1);
        assert!(index.of("c", "", "configmaps", "other-export").is_empty());
        assert!(index.observe("c", "b", Some(&binding(claims))).is_empty(), "nothing changed");
        assert_eq!(index.observe("c", "b", Some(&binding(json!([])))).len(), 1, "the claim went");
        assert!(index.of("c", "", "configmaps", "").is_empty());
        assert!(index.resources().is_empty());
    }

    #[test]
    fn objects_carry_exactly_their_clusters_claim_labels() {
        let claim = applied(&binding(json!([{"resource": "configmaps"}]))).remove(0);
        let plain = json!({"metadata": {"labels": {"app": "x"}}});
        let wanted = relabelled(&plain, std::slice::from_ref(&claim)).unwrap();
        assert_eq!(wanted.get(&claim.key), Some(&claim.value));
        assert_eq!(wanted.get("app").map(String::as_str), Some("x"));
        let labelled = json!({"metadata": {"labels": wanted}});
        assert!(relabelled(&labelled, std::slice::from_ref(&claim)).is_none());
        let stripped = relabelled(&labelled, &[]).unwrap();
        assert_eq!(stripped.len(), 1, "only app stays: {stripped:?}");
        let deleting = json!({"metadata": {"deletionTimestamp": "x"}, "status": {"apiExportClusterName": "pc"}});
        assert!(applied(&deleting).is_empty());
    }
}
