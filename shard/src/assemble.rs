//! Assembles a shard from the core and its features: the only module that names every
//! feature. Each feature registers its resources' strategies into the table here, so the
//! generic storage and verbs never import a feature.

use crate::binding::strategy::BindingState;
use crate::paths::PathIndex;
use crate::registry::Registry;
use crate::state::Shard;
use std::sync::{Arc, Weak};

/// Handles the features' strategies give their controllers.
#[derive(Debug)]
pub struct Handles {
    /// The binding feature's indexes and the queue its controller drains.
    pub bindings: Arc<BindingState>,
}

/// The resource table with every feature's strategies. `shard` is the shard under
/// construction (`Arc::new_cyclic`): strategies that need more than the core keep a weak
/// reference to it; `paths` and `base_url` go to the LogicalCluster strategy; `root_ca`
/// (the installation's CA, PEM) is what every namespace's `kube-root-ca.crt` holds.
pub fn registry(shard: Weak<Shard>, paths: Arc<PathIndex>, base_url: String, root_ca: &str) -> (Registry, Handles) {
    let mut registry = crate::strategy::kube_registry();
    let root_ca = Some(Arc::from(root_ca));
    registry.set_strategy("", "configmaps", Arc::new(crate::strategy::ConfigMap { root_ca }));
    crate::workloads::register(&mut registry);
    crate::tmc::register(&mut registry, shard.clone());
    crate::tenancy::strategy::register(&mut registry, shard.clone(), paths, base_url);
    crate::crd::strategy::register(&mut registry);
    crate::apis::register(&mut registry);
    let bindings = crate::binding::strategy::register(&mut registry, shard);
    crate::authz::review::register(&mut registry);
    (registry, Handles { bindings })
}

/// Starts every controller; `handles` are what the features' strategies feed them, `tmc`
/// the placement controllers' timing.
pub fn start_controllers(shard: Arc<Shard>, handles: Handles, tmc: crate::tmc::Settings) {
    tokio::spawn(crate::controllers::namespace::run(shard.clone()));
    tokio::spawn(crate::crd::cleanup::run(shard.clone()));
    tokio::spawn(crate::controllers::logical_cluster::run(shard.clone()));
    tokio::spawn(crate::controllers::gc::run(shard.clone()));
    tokio::spawn(crate::controllers::workspace::run(shard.clone()));
    tokio::spawn(crate::tmc::controller::run(shard.clone(), tmc));
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
            // CRDs and the controllers of pods here, not ConfigMaps, Secrets, RBAC, Pods,
            // Services and the like.
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
            let tracks =
                row.group.ends_with(".kcp.io") || row.resource == "customresourcedefinitions" || workload_controller;
            assert_eq!(row.strategy.tracks_generation(), tracks, "{}.{}", row.resource, row.group);
            let review = row.group == "authorization.k8s.io";
            assert_eq!(row.strategy.stored(), !review, "{}.{}", row.resource, row.group);
        }
        assert_eq!(registry.namespaces().verbs().len(), 7, "namespaces have no deletecollection");
        let bindings = registry.get("apis.kcp.io", "v1alpha1", "apibindings").expect("apibindings row");
        assert!(format!("{:?}", bindings.strategy).starts_with("Binding"));
    }
}
