//! Which resources each logical cluster's APIBindings bind: group and resource → the
//! bound CRD (in [`protocol::wellknown::BOUND_CRDS_CLUSTER`]) that defines and stores them.
//!
//! Filled from the store at start and kept current by the binding controller, from the
//! bindings' `status.boundResources`: a binding serves once it is Bound.

use super::schema;
use apiserver::registry::Core;
use parking_lot::RwLock;
use protocol::meta;
use serde_json::Value;
use std::collections::HashMap;

/// One bound resource: group, plural resource, bound CRD name.
type Entry = (String, String, String);
/// Per APIBinding name, what it binds.
type Bindings = HashMap<String, Vec<Entry>>;

/// Per logical cluster, per APIBinding, the resources it binds.
#[derive(Debug, Default)]
pub struct BoundResources {
    by_cluster: RwLock<HashMap<Box<str>, Bindings>>,
    /// Per Bound binding (cluster, name), its export (the export's cluster, its name):
    /// also for exports that bind no resource (permission claims only).
    exports: RwLock<HashMap<(String, String), (String, String)>>,
}

impl BoundResources {
    /// Records an APIBinding object of `cluster` as stored now.
    pub fn observe(&self, cluster: &str, binding: &Value) {
        let Some(name) = meta::name(binding) else { return };
        let bound = binding.pointer("/status/phase").and_then(Value::as_str) == Some("Bound");
        let entries = if bound { schema::bound_crds_of(binding) } else { Vec::new() };
        let text = |pointer: &str| binding.pointer(pointer).and_then(Value::as_str).unwrap_or_default().to_string();
        let export = (text("/status/apiExportClusterName"), text("/spec/reference/export/name"));
        let id = (cluster.to_string(), name.to_string());
        match bound && !export.0.is_empty() && !meta::is_deleting(binding) {
            true => self.exports.write().insert(id, export),
            false => self.exports.write().remove(&id),
        };
        let mut by_cluster = self.by_cluster.write();
        let bindings = by_cluster.entry(cluster.into()).or_default();
        if entries.is_empty() {
            bindings.remove(name);
        } else {
            bindings.insert(name.to_string(), entries);
        }
    }

    /// Forgets a removed APIBinding.
    pub fn forget(&self, cluster: &str, name: &str) {
        self.exports.write().remove(&(cluster.to_string(), name.to_string()));
        if let Some(bindings) = self.by_cluster.write().get_mut(cluster) {
            bindings.remove(name);
        }
    }

    /// Whether some binding on this shard is Bound to export `name` of logical cluster
    /// `export_cluster`.
    pub fn binds_export(&self, export_cluster: &str, name: &str) -> bool {
        self.exports.read().values().any(|(cluster, export)| cluster == export_cluster && export == name)
    }

    /// The bound CRD serving `group/resource` in `cluster`, if a binding binds it.
    pub fn crd_of(&self, cluster: &str, group: &str, resource: &str) -> Option<String> {
        let by_cluster = self.by_cluster.read();
        let mut entries = by_cluster.get(cluster)?.values().flatten();
        entries.find(|(g, r, _)| g == group && r == resource).map(|(_, _, crd)| crd.clone())
    }

    /// The binding of `cluster` other than `except` that binds `group/resource`, with the
    /// bound CRD it uses.
    pub fn bound_by_other(&self, cluster: &str, except: &str, group: &str, resource: &str) -> Option<(String, String)> {
        let by_cluster = self.by_cluster.read();
        let bindings = by_cluster.get(cluster)?.iter().filter(|(name, _)| name.as_str() != except);
        for (name, entries) in bindings {
            if let Some((_, _, crd)) = entries.iter().find(|(g, r, _)| g == group && r == resource) {
                return Some((name.clone(), crd.clone()));
            }
        }
        None
    }

    /// Every bound CRD `cluster` uses.
    pub fn crds_of(&self, cluster: &str) -> Vec<String> {
        let by_cluster = self.by_cluster.read();
        let entries = by_cluster.get(cluster).into_iter().flat_map(|b| b.values()).flatten();
        entries.map(|(_, _, crd)| crd.clone()).collect()
    }

    /// The bound CRDs of every binding on this shard to the export with `identity` (the
    /// export's `status.identityHash`): empty when no workspace here binds it.
    pub fn crds_with_identity(&self, identity: &str) -> Vec<String> {
        let prefix = format!("{}-", identity.get(..16).unwrap_or(identity));
        let by_cluster = self.by_cluster.read();
        let entries = by_cluster.values().flat_map(|b| b.values()).flatten();
        let mut crds: Vec<String> =
            entries.filter(|(_, _, crd)| crd.starts_with(&prefix)).map(|(_, _, crd)| crd.clone()).collect();
        crds.sort();
        crds.dedup();
        crds
    }

    /// Forgets every binding of a logical cluster that is gone.
    pub fn forget_cluster(&self, cluster: &str) {
        self.exports.write().retain(|(c, _), _| c != cluster);
        self.by_cluster.write().remove(cluster);
    }

    /// Rebuilds the index from every APIBinding in the store.
    pub fn load(&self, core: &Core) -> anyhow::Result<()> {
        let Some(rt) = super::bindings_row(core) else { return Ok(()) };
        apiserver::objects::scan(&core.store, &rt, |cluster, object| self.observe(cluster, object))?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn binding(name: &str, phase: &str, identity: &str) -> Value {
        json!({"metadata": {"name": name}, "status": {"phase": phase, "boundResources": [
            {"group": "example.io", "resource": "widgets", "schema": {"name": "v1.widgets.example.io", "UID": "u1", "identityHash": identity}}
        ]}})
    }

    #[test]
    fn bound_bindings_serve_their_resources() {
        let index = BoundResources::default();
        index.observe("c", &binding("a", "Binding", "x"));
        assert!(index.crd_of("c", "example.io", "widgets").is_none(), "not bound yet");
        index.observe("c", &binding("a", "Bound", "x"));
        assert_eq!(index.crd_of("c", "example.io", "widgets"), Some(schema::bound_crd_name("x", "u1")));
        assert!(index.crd_of("other", "example.io", "widgets").is_none());
        assert!(index.bound_by_other("c", "a", "example.io", "widgets").is_none());
        assert!(index.bound_by_other("c", "b", "example.io", "widgets").is_some());
        assert_eq!(index.crds_with_identity("x"), vec![schema::bound_crd_name("x", "u1")]);
        assert!(index.crds_with_identity("y").is_empty());
        assert!(!index.binds_export("pc", "widgets"), "no apiExportClusterName in the status");
        let mut with_export = binding("a", "Bound", "x");
        with_export["spec"] = json!({"reference": {"export": {"path": "root:p", "name": "widgets"}}});
        with_export["status"]["apiExportClusterName"] = json!("pc");
        index.observe("c", &with_export);
        assert!(index.binds_export("pc", "widgets"));
        index.forget("c", "a");
        assert!(!index.binds_export("pc", "widgets"));
        assert!(index.crds_of("c").is_empty());
        assert!(index.crds_with_identity("x").is_empty());
    }
}
