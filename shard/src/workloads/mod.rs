//! Kubernetes workload APIs in every logical cluster: Pods, Services, Deployments, Jobs
//! and the rest of what users place, stored and validated as kube-apiserver stores them,
//! run by nothing (a logical cluster is a control plane, as in kcp). The feature adds
//! its own rows to the table; their schemas are k8s-openapi's, so the table stays one
//! shared registry and serving these kinds costs no memory per workspace.

mod columns;
mod convert;
mod defaults;
mod rows;
mod strategy;
mod validate;

use apiserver::registry::Registry;

/// Adds the workload rows, each with its strategy.
pub fn register(registry: &mut Registry) {
    registry.add_rows(rows::rows());
}
