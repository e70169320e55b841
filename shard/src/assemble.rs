//! Assembles a shard from the core and its features: the only module that names every
//! feature. Each feature registers its resources' strategies into the table here, so the
//! generic storage and verbs never import a feature.

use crate::binding::strategy::BindingState;
use crate::paths::PathIndex;
use crate::state::Shard;
use apiserver::registry::Registry;
use std::sync::{Arc, Weak};

/// Handles the features' strategies give their controllers.
#[derive(Debug)]
pub struct Handles {
    /// The binding feature's indexes and the queue its controller drains.
    pub bindings: Arc<BindingState>,
    /// The permission claims each cluster's bindings apply.
    pub claims: Arc<crate::binding::claims::ClaimIndex>,
}

/// The resource table with every feature's strategies. `shard` is the shard under
/// construction (`Arc::new_cyclic`): strategies that need more than the core keep a weak
/// reference to it; `paths` and `base_url` go to the LogicalCluster strategy; `root_ca`
/// (the installation's CA, PEM) is what every namespace's `kube-root-ca.crt` holds.
pub fn registry(shard: Weak<Shard>, paths: Arc<PathIndex>, base_url: String, root_ca: &str) -> (Registry, Handles) {
    let mut registry = apiserver::strategy::kube_registry();
    let root_ca = Some(Arc::from(root_ca));
    registry.set_strategy("", "configmaps", Arc::new(apiserver::strategy::ConfigMap { root_ca }));
    crate::workloads::register(&mut registry);
    crate::tmc::register(&mut registry, shard.clone());
    crate::ocm::register(&mut registry);
    crate::fleet::register(&mut registry);
    registry.add_write_admission(Arc::new(crate::controllers::pacing::Reserved));
    crate::tenancy::strategy::register(&mut registry, shard.clone(), paths, base_url);
    crate::crd::strategy::register(&mut registry);
    crate::apis::register(&mut registry);
    let bindings = crate::binding::strategy::register(&mut registry, shard.clone());
    let claims = Arc::new(crate::binding::claims::ClaimIndex::default());
    registry.add_write_admission(Arc::new(crate::binding::claims::ClaimLabels));
    let view = crate::export_view::ExportView { shard, bound: bindings.bound.clone(), claims: claims.clone() };
    registry.add_virtual_workspace(Arc::new(view));
    crate::authz::review::register(&mut registry);
    (registry, Handles { bindings, claims })
}

/// Starts every controller; `handles` are what the features' strategies feed them, `tmc`
/// and `fleet` the placement controllers' timing, `health` when a silent shard's
/// workspaces go Unavailable.
pub fn start_controllers(
    shard: Arc<Shard>,
    handles: Handles,
    tmc: crate::tmc::Settings,
    fleet: crate::fleet::controller::Settings,
    ocm: crate::ocm::controller::Settings,
    health: crate::controllers::shard_health::Settings,
) {
    tokio::spawn(crate::controllers::namespace::run(shard.clone()));
    tokio::spawn(crate::crd::cleanup::run(shard.clone()));
    tokio::spawn(crate::controllers::logical_cluster::run(shard.clone()));
    tokio::spawn(crate::controllers::gc::run(shard.clone()));
    tokio::spawn(crate::controllers::workspace::run(shard.clone()));
    tokio::spawn(crate::controllers::shard_health::run(shard.clone(), health));
    tokio::spawn(crate::tmc::controller::run(shard.clone(), tmc));
    tokio::spawn(crate::ocm::controller::run(shard.clone(), ocm));
    tokio::spawn(crate::fleet::controller::run(shard.clone(), fleet));
    tokio::spawn(crate::export_view::endpoints::run(shard.clone(), handles.bindings.bound.clone()));
    tokio::spawn(crate::binding::claims::run(shard.clone(), handles.claims));
    tokio::spawn(crate::binding::run(shard.clone(), handles.bindings));
    tokio::spawn(crate::controllers::membership::run(shard));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn features_give_their_rows_the_behaviour_the_table_had() {
        let (registry, _) = registry(Weak::new(), Arc::default(), "https://shard".into(), "CA");
        for row in registry.all() {
            // kube sets generations for kinds with a spec controllers act on: kcp's kinds,
            // CRDs, OCM's kinds (custom resources on an OCM hub) and the controllers of
            // pods here, not ConfigMaps, Secrets, RBAC, Pods, Services and the like.
            let workload_controller = matches!(
                row.resource.as_str(),
                "deployments"
                    | "replicasets"
                    | "statefulsets"
                    | "daemonsets"
                    | "replicationcontrollers"
                    | "jobs"
                    | "cronjobs"
                    | "ingresses"
                    | "networkpolicies"
                    | "poddisruptionbudgets"
            );
            let tracks = row.group.ends_with(".kcp.io")
                || row.group == crate::ocm::CLUSTER_GROUP
                || row.group.ends_with("kubernetes-fleet.io")
                || row.resource == "customresourcedefinitions"
                || workload_controller;
            assert_eq!(row.strategy.tracks_generation(), tracks, "{}.{}", row.resource, row.group);
            let review = row.group == "authorization.k8s.io" || row.resource == "selfsubjectreviews";
            assert_eq!(row.strategy.stored(), !review, "{}.{}", row.resource, row.group);
        }
        assert_eq!(registry.namespaces().verbs().len(), 7, "namespaces have no deletecollection");
        let bindings = registry.get("apis.kcp.io", "v1alpha1", "apibindings").expect("apibindings row");
        assert!(format!("{:?}", bindings.strategy).starts_with("Binding"));
    }
}

/// Strategic merge patches of every served built-in kind against kube's published list
/// semantics: the served table is only known once every feature has added its rows.
#[cfg(test)]
mod patch_lists {
    use super::*;
    use apiserver::patch::{apply_strategic_merge_patch, schema_lists};
    use protocol::managed::{PatchList, PathElement};
    use serde_json::{json, Map, Value};

    /// Every list field of every served built-in kind, against kube's published
    /// extensions (`list_semantics.json`, read independently here): a strategic merge
    /// patch merges exactly the lists kube tags `merge`, by their merge key, and replaces
    /// the rest.
    #[test]
    fn every_builtin_list_field_patches_as_its_schema_says() {
        let published: Value =
            serde_json::from_str(include_str!("../../protocol/src/openapi/list_semantics.json")).unwrap();
        let components = protocol::openapi::builtin_components();
        let registry = registry(Weak::new(), Default::default(), String::new(), "CA").0;
        let mut checked = 0;
        let mut merged = 0;
        for row in registry.all() {
            if !row.schema_name.starts_with("io.k8s.") {
                continue;
            }
            let root = protocol::openapi::schema_ref(&row.schema_name);
            let lists = schema_lists(&root);
            let mut seen = std::collections::HashSet::new();
            walk_lists(components, &row.schema_name, &mut Vec::new(), &mut seen, &mut |schema, field, path| {
                let tags = published.pointer(&format!("/{schema}/{field}"));
                let strategy = tags.and_then(|t| t.get("x-kubernetes-patch-strategy")).and_then(Value::as_str);
                let merges = strategy.is_some_and(|s| s.split(',').any(|p| p == "merge"));
                let key = tags.and_then(|t| t.get("x-kubernetes-patch-merge-key")).and_then(Value::as_str);
                let expected =
                    if merges { PatchList::Merge { key: key.map(String::from) } } else { PatchList::Replace };
                assert_eq!(lists(path), expected, "{} {schema}.{field} at {path:?}", row.kind);
                // Below another list, building the object would need that list's keys too.
                if !path.iter().any(|element| matches!(element, PathElement::Index(_))) {
                    check_patch_behaviour(&lists, path, &expected);
                }
                checked += 1;
                merged += usize::from(merges);
            });
        }
        assert!(checked > 300 && merged > 40, "walked {checked} list fields, {merged} merged");
    }

    /// Builds an object with a list at `path` and patches it: merged lists keep the old
    /// item beside the new one, replaced lists do not.
    fn check_patch_behaviour(lists: &dyn Fn(&[PathElement]) -> PatchList, path: &[PathElement], expected: &PatchList) {
        let item = |n: u32| match expected {
            PatchList::Merge { key: Some(key) } => json!({ key.as_str(): format!("k{n}") }),
            _ => json!(format!("v{n}")),
        };
        let wrap = |leaf: Value| {
            path.iter().rev().fold(leaf, |inner, element| match element {
                PathElement::Field(name) => json!({ name.as_str(): inner }),
                _ => json!([inner]),
            })
        };
        let mut target = wrap(json!([item(1)]));
        let patch = wrap(json!([item(2)]));
        apply_strategic_merge_patch(&mut target, &patch, lists).unwrap();
        let mut pointer = String::new();
        for element in path {
            match element {
                PathElement::Field(name) => pointer.push_str(&format!("/{name}")),
                _ => pointer.push_str("/0"),
            }
        }
        let length = target.pointer(&pointer).and_then(Value::as_array).map(Vec::len);
        let wanted = if matches!(expected, PatchList::Replace) { 1 } else { 2 };
        assert_eq!(length, Some(wanted), "{pointer}: {target}");
    }

    /// Calls `visit(schema, field, path)` for every array property reachable from the
    /// component `name`, each (schema, field) once.
    fn walk_lists(
        components: &Map<String, Value>,
        name: &str,
        path: &mut Vec<PathElement>,
        seen: &mut std::collections::HashSet<(String, String)>,
        visit: &mut dyn FnMut(&str, &str, &[PathElement]),
    ) {
        let Some(properties) = components.get(name).and_then(|s| s.get("properties")).and_then(Value::as_object) else {
            return;
        };
        for (field, property) in properties {
            if !seen.insert((name.to_string(), field.clone())) {
                continue;
            }
            path.push(PathElement::field(field.as_str()));
            let reference = |schema: &Value| -> Option<String> {
                let direct = schema.get("$ref").and_then(Value::as_str);
                let wrapped = schema.pointer("/allOf/0/$ref").and_then(Value::as_str);
                direct.or(wrapped).and_then(protocol::openapi::ref_name).map(String::from)
            };
            if property.get("type").and_then(Value::as_str) == Some("array") {
                visit(name, field, path);
                if let Some(item) = property.get("items").and_then(&reference) {
                    path.push(PathElement::Index(0));
                    walk_lists(components, &item, path, seen, visit);
                    path.pop();
                }
            } else if let Some(child) = reference(property) {
                walk_lists(components, &child, path, seen, visit);
            }
            path.pop();
        }
    }
}
