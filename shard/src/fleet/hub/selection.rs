//! What a ClusterResourcePlacement selects on the hub: its resource selectors resolved to
//! objects (a selected namespace brings everything in it), shared between placements that
//! select the same things, and which objects may be placed at all.

use super::*;
use crate::fleet::envelope;

impl Hub<'_> {
    /// [`Self::select`], once per distinct list of selectors in a pass: placements that
    /// select the same things share the work.
    pub(super) fn select_cached(
        &self,
        crp: &Value,
        shared: &Shared<'_>,
        selection: &mut Selection,
    ) -> Result<Vec<Value>, String> {
        let key = crp.pointer("/spec/resourceSelectors").map(Value::to_string).unwrap_or_default();
        if let Some((objects, selected)) = shared.selected.lock().get(&key) {
            selection.namespaces.clone_from(&selected.namespaces);
            selection.resources.clone_from(&selected.resources);
            return objects.clone();
        }
        let mut selected = Selection::default();
        let objects = self.select(crp, &mut selected);
        selection.namespaces.clone_from(&selected.namespaces);
        selection.resources.clone_from(&selected.resources);
        shared.selected.lock().insert(key, (objects.clone(), selected));
        objects
    }

    /// The prepared, ordered objects a placement selects, or why its selectors are wrong.
    pub(super) fn select(&self, crp: &Value, selection: &mut Selection) -> Result<Vec<Value>, String> {
        let selectors = resources::selectors(crp)?;
        let mut picked: BTreeMap<(String, String, String), Value> = BTreeMap::new();
        for (i, selector) in selectors.iter().enumerate() {
            let rt = self.shard.registry.resource_for_kind(self.cluster, &selector.group, &selector.kind).ok_or_else(
                || {
                    format!(
                        "spec.resourceSelectors[{i}]: the hub serves no kind {} in group {:?} (version {})",
                        selector.kind, selector.group, selector.version
                    )
                },
            )?;
            selection.resources.insert(rt.key_prefix(None));
            if rt.namespaced {
                return Err(format!(
                    "spec.resourceSelectors[{i}]: {} is namespaced; a ClusterResourcePlacement selects cluster-scoped resources (select their Namespace)",
                    selector.kind
                ));
            }
            // A selector by name reads one object, not the whole collection.
            let candidates = match &selector.name {
                Some(name) => {
                    let at = ObjectRef { cluster: self.cluster, namespace: None, name };
                    match storage::get(self.shard, &rt, &at) {
                        Ok((object, _)) => vec![object],
                        Err(e) if e.is_not_found() => Vec::new(),
                        Err(e) => return Err(e.message),
                    }
                }
                None => self.list(&rt).map_err(|e| e.to_string())?,
            };
            for object in candidates {
                if meta::is_deleting(&object) || !selector.picks(&object) {
                    continue;
                }
                if selector.is_namespace() {
                    let namespace = meta::name(&object).unwrap_or_default().to_string();
                    if resources::reserved_namespace(&namespace) {
                        continue;
                    }
                    selection.namespaces.insert(namespace.clone());
                    if !selector.namespace_only {
                        for inner in self.namespace_contents(&namespace).map_err(|e| e.to_string())? {
                            insert(&mut picked, inner);
                        }
                    }
                }
                insert(&mut picked, object);
            }
        }
        let mut out = Vec::new();
        for object in picked.into_values() {
            // An envelope travels whole: the work generator unwraps it into a Work of its
            // own. What it carries is checked here, so a bad one fails the selection.
            if let Some(Err(message)) = envelope::envelope_contents(&object) {
                return Err(message);
            }
            out.push(resources::prepare(&object));
        }
        resources::sort(&mut out);
        Ok(out)
    }

    /// Every stored object in a namespace of the hub that placement carries.
    pub(super) fn namespace_contents(&self, namespace: &str) -> anyhow::Result<Vec<Value>> {
        let mut out = Vec::new();
        for rt in self.shard.registry.stored(self.cluster) {
            if !rt.namespaced || !placeable(&rt) {
                continue;
            }
            let prefix = objects::collection_prefix(&rt, Some(self.cluster), Some(namespace));
            let options = store::ListOptions { prefix: prefix.into_bytes(), ..Default::default() };
            let page = self.shard.store.list(&options, |_, _| true)?;
            for (_, stored) in &page.items {
                let mut object = objects::decode(stored).map_err(api)?;
                if meta::is_deleting(&object) || has_controller(&object) || members_make_their_own(&rt, &object) {
                    continue;
                }
                if object.get("apiVersion").is_none() {
                    object["apiVersion"] = json!(rt.api_version());
                    object["kind"] = json!(rt.kind);
                }
                out.push(object);
            }
        }
        Ok(out)
    }
}

pub(super) fn group_of<'a>(kind: &str, group: &'a str) -> &'a str {
    if kind == "Namespace" {
        ""
    } else {
        group
    }
}

pub(super) fn insert(picked: &mut BTreeMap<(String, String, String), Value>, object: Value) {
    let kind = object.get("kind").and_then(Value::as_str).unwrap_or_default().to_string();
    let namespace = meta::namespace(&object).unwrap_or_default().to_string();
    let name = meta::name(&object).unwrap_or_default().to_string();
    picked.insert((kind, namespace, name), object);
}

/// Whether objects of `rt` travel with their namespace: not events, leases, endpoints
/// (members make their own) nor the control plane's own kinds, but for KubeFleet's
/// ResourceEnvelope, which is there to be placed.
pub(super) fn placeable(rt: &ResourceType) -> bool {
    if rt.group == PLACEMENT_GROUP && rt.kind == envelope::RESOURCE_ENVELOPE {
        return true;
    }
    let skipped_group = rt.group == "events.k8s.io"
        || rt.group == "coordination.k8s.io"
        || rt.group == "discovery.k8s.io"
        || rt.group.ends_with(".kcp.io")
        || rt.group.ends_with("kubernetes-fleet.io")
        || rt.group.ends_with("open-cluster-management.io");
    let skipped_core = rt.group.is_empty() && matches!(rt.resource.as_str(), "events" | "endpoints" | "pods");
    !(skipped_group || skipped_core)
}

/// Objects another object controls (a ReplicaSet of a Deployment) are made again on the
/// member; KubeFleet does not place them.
pub(super) fn has_controller(object: &Value) -> bool {
    let owners = object.pointer("/metadata/ownerReferences").and_then(Value::as_array);
    owners.into_iter().flatten().any(|o| o.get("controller").and_then(Value::as_bool) == Some(true))
}

/// What every member namespace has of its own: the `default` ServiceAccount, the
/// `kube-root-ca.crt` ConfigMap (the hub's CA must not replace the member's) and
/// ServiceAccount token Secrets.
pub(super) fn members_make_their_own(rt: &ResourceType, object: &Value) -> bool {
    let name = meta::name(object).unwrap_or_default();
    match (rt.group.as_str(), rt.resource.as_str()) {
        ("", "serviceaccounts") => name == "default",
        ("", "configmaps") => name == "kube-root-ca.crt",
        ("", "secrets") => object.get("type").and_then(Value::as_str) == Some("kubernetes.io/service-account-token"),
        _ => false,
    }
}
