//! Virtual workspaces: filtered, authorized API roots spanning the logical clusters of one
//! shard (the placement sync view, the APIExport view). A feature registers one per path
//! prefix; the serving binary's request entry point hands it every request under its
//! prefix, where the path is `<prefix><view>/clusters/<name or *>/<Kubernetes API path>`.
//! The virtual workspace authorizes the caller for the view (instead of the addressed
//! cluster's RBAC) and narrows the request: which clusters, which resources (it may
//! rename the addressed resource, e.g. to the identity-qualified name its objects are
//! stored under), which objects (selectors), what discovery shows and what writes may
//! change; the generic verbs then serve it.

use super::ResourceType;
use crate::rest::request_info::Target;
use crate::rest::status::ApiResult;
use protocol::path::ClusterRef;
use security::authn::Identity;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Arc;

/// Admission of every write made through the API (create, update, patch, apply), given
/// the stored object (`None`: a create) and the object about to be stored, which it may
/// amend. The registry holds the ones that apply to ordinary requests; a virtual
/// workspace gives its own for the writes it admits. Controllers write through storage
/// directly and are not subject to it.
pub trait WriteAdmission: Send + Sync + std::fmt::Debug {
    /// Refuses the write, amends `new`, or lets it pass; `subresource` is `status` and the
    /// like, `None` for the object itself.
    fn admit(&self, old: Option<&Value>, new: &mut Value, subresource: Option<&str>) -> ApiResult<()>;
}

/// Keeps the entries of `metadata.<field>` (`labels`, `annotations`) whose keys are
/// `reserved` as `old` has them, for a write admission guarding a system's own metadata:
/// a write may not add or change one (`Err` names it), and one the write leaves out is
/// put back. Pure.
pub fn keep_reserved(
    old: Option<&Value>,
    new: &mut Value,
    field: &str,
    reserved: impl Fn(&str) -> bool,
) -> Result<(), String> {
    let before = old.map(|o| protocol::meta::string_map(o, field)).unwrap_or_default();
    let after = protocol::meta::string_map(new, field);
    if let Some((key, _)) = after.iter().find(|(key, value)| reserved(key) && before.get(*key) != Some(*value)) {
        return Err(format!("metadata.{field}[{key}]"));
    }
    for (key, value) in before.iter().filter(|(key, _)| reserved(key) && !after.contains_key(*key)) {
        protocol::meta::set_map_entry(new, field, key, Some(value));
    }
    Ok(())
}

/// What a virtual workspace admits a request to.
#[derive(Debug, Clone)]
pub struct Admitted {
    /// The logical cluster it may address, `None` for every cluster of the shard.
    pub cluster: Option<String>,
    /// The admission of its writes in place of the registry's; `None` keeps the
    /// registry's (the view's writes are ordinary API writes).
    pub writes: Option<Arc<dyn WriteAdmission>>,
    /// What discovery lists in the view; `None` lists what the addressed cluster (or, for
    /// `*`, the whole shard) serves.
    pub served: Option<Vec<Arc<ResourceType>>>,
    /// For `*`: the only logical clusters whose objects it lists and watches; `None`:
    /// every cluster of the shard.
    pub clusters: Option<std::collections::BTreeSet<String>>,
}

/// One kind of virtual workspace.
pub trait VirtualWorkspace: Send + Sync + std::fmt::Debug {
    /// The path prefix it serves, with a trailing `/` (`/services/syncer/`).
    fn prefix(&self) -> &'static str;

    /// Authorizes `identity` for `view` (the path between the prefix and `/clusters/`) and
    /// narrows the request (`target` and `query`, which it may change): where it may go,
    /// and what its writes may change.
    fn admit(
        &self,
        identity: &Identity,
        view: &str,
        cluster: &ClusterRef,
        target: &mut Target,
        query: &mut HashMap<String, String>,
    ) -> ApiResult<Admitted>;
}

/// Splits a request path under `prefix` into the view and the API path (`/clusters/...`).
/// Pure.
pub fn split<'p>(prefix: &str, path: &'p str) -> Option<(&'p str, &'p str)> {
    let rest = path.strip_prefix(prefix)?;
    let at = rest.find("/clusters/")?;
    let view = &rest[..at];
    (!view.is_empty()).then_some((view, &rest[at..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reserved_metadata_can_be_neither_set_nor_dropped_by_a_write() {
        let reserved = |key: &str| key.starts_with("sys/");
        let old = serde_json::json!({"metadata": {"labels": {"sys/a": "1", "app": "x"}}});
        let mut kept = serde_json::json!({"metadata": {"labels": {"app": "y"}}});
        assert_eq!(keep_reserved(Some(&old), &mut kept, "labels", reserved), Ok(()));
        assert_eq!(kept["metadata"]["labels"]["sys/a"], "1", "left out, put back");
        let mut changed = serde_json::json!({"metadata": {"labels": {"sys/a": "2"}}});
        assert_eq!(keep_reserved(Some(&old), &mut changed, "labels", reserved), Err("metadata.labels[sys/a]".into()));
        let mut forged = serde_json::json!({"metadata": {"labels": {"sys/b": "1"}}});
        assert!(keep_reserved(None, &mut forged, "labels", reserved).is_err());
    }

    #[test]
    fn paths_split_into_the_view_and_the_api_path() {
        let prefix = "/services/syncer/";
        let split = |path| split(prefix, path);
        assert_eq!(
            split("/services/syncer/root:inv/aws-1/clusters/*/api/v1/configmaps"),
            Some(("root:inv/aws-1", "/clusters/*/api/v1/configmaps"))
        );
        assert_eq!(split("/services/syncer/root/t"), None);
        assert_eq!(split("/services/syncer//clusters/*/api"), None);
        assert_eq!(split("/clusters/root/api"), None);
    }
}
