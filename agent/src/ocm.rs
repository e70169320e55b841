//! The agent as an OCM registration agent for one ManagedCluster: it registers the
//! cluster on the hub (created not accepted, as OCM's agent does; an admin accepts it),
//! renews its `managed-cluster-lease` every `spec.leaseDurationSeconds`, and reports the
//! cluster Joined and Available with the member's ClusterClaims
//! (`clusterclaims.cluster.open-cluster-management.io`) and, when the member has Nodes,
//! their summed allocatable and capacity. The hub's lease controller makes the cluster
//! Unknown when the renewals stop.

use crate::node_resources;
use anyhow::Context;
use kube::api::{Api, DynamicObject, ListParams, Patch, PatchParams, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use kube::Client;
use serde_json::{json, Value};
use std::path::PathBuf;
use std::time::Duration;
use tracing::Instrument;

/// What the agent is told in OCM mode.
#[derive(Debug, Clone)]
pub struct ManagedConfig {
    /// A kubeconfig for the hub workspace.
    pub hub_kubeconfig: PathBuf,
    /// The ManagedCluster's name.
    pub managed_cluster: String,
    /// A kubeconfig for the member cluster.
    pub member_kubeconfig: PathBuf,
}

const GROUP: &str = "cluster.open-cluster-management.io";
const LEASE: &str = "managed-cluster-lease";
/// OCM's default `spec.leaseDurationSeconds`.
const DEFAULT_LEASE_SECONDS: u64 = 60;
/// How often a cluster the hub has not accepted yet looks again.
const ACCEPTANCE_POLL: Duration = Duration::from_secs(1);

fn resource(group: &str, version: &str, kind: &str, plural: &str) -> ApiResource {
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, version, kind), plural)
}

/// Runs until the process ends.
pub async fn run(config: ManagedConfig) -> anyhow::Result<()> {
    let hub =
        crate::traced::client(crate::kube_config(&config.hub_kubeconfig).await?).context("build the hub client")?;
    let member = crate::traced::client(crate::kube_config(&config.member_kubeconfig).await?)
        .context("build the member client")?;
    let clusters: Api<DynamicObject> =
        Api::all_with(hub.clone(), &resource(GROUP, "v1", "ManagedCluster", "managedclusters"));
    let name = config.managed_cluster.clone();
    register(&clusters, &name).await;
    let leases: Api<DynamicObject> =
        Api::namespaced_with(hub.clone(), &name, &resource("coordination.k8s.io", "v1", "Lease", "leases"));
    tracing::info!(managed_cluster = %name, "registration agent started");
    loop {
        let interval = match clusters.get(&name).await {
            Ok(cluster) => {
                let seconds = cluster.data.pointer("/spec/leaseDurationSeconds").and_then(Value::as_u64);
                let lease = Duration::from_secs(seconds.filter(|s| *s > 0).unwrap_or(DEFAULT_LEASE_SECONDS));
                if cluster.data.pointer("/spec/hubAcceptsClient").and_then(Value::as_bool) == Some(true) {
                    let span =
                        crate::traced::work_span("managedcluster.heartbeat", "managedclusters", None, None, &name);
                    heartbeat(&leases, &clusters, &member, &name).instrument(span).await;
                    lease
                } else {
                    tracing::info!(managed_cluster = %name, "waiting for the hub to accept the cluster");
                    lease.min(ACCEPTANCE_POLL)
                }
            }
            Err(error) => {
                tracing::warn!(%error, "reading the ManagedCluster failed");
                Duration::from_secs(1)
            }
        };
        tokio::time::sleep(interval).await;
    }
}

/// Renews the cluster's lease and reports its status.
async fn heartbeat(leases: &Api<DynamicObject>, clusters: &Api<DynamicObject>, member: &Client, name: &str) {
    if let Err(error) = renew(leases).await {
        crate::traced::failed();
        tracing::warn!(error = %format!("{error:#}"), "renewing the lease failed");
    }
    if let Err(error) = report(clusters, member, name).await {
        crate::traced::failed();
        tracing::warn!(error = %format!("{error:#}"), "reporting the cluster's status failed");
    }
}

/// Creates the ManagedCluster unless it exists (an admin may have created it first).
async fn register(clusters: &Api<DynamicObject>, name: &str) {
    loop {
        match clusters.get_opt(name).await {
            Ok(Some(_)) => return,
            Ok(None) => {
                let object: DynamicObject = match serde_json::from_value(json!({
                    "apiVersion": format!("{GROUP}/v1"), "kind": "ManagedCluster",
                    "metadata": {"name": name}, "spec": {"hubAcceptsClient": false},
                })) {
                    Ok(object) => object,
                    Err(error) => {
                        tracing::error!(%error, "building the ManagedCluster");
                        return;
                    }
                };
                match clusters.create(&PostParams::default(), &object).await {
                    Ok(_) => return,
                    Err(kube::Error::Api(e)) if e.code == 409 => return,
                    Err(error) => tracing::warn!(%error, "registering the ManagedCluster failed; retrying"),
                }
            }
            Err(error) => tracing::warn!(%error, "reading the ManagedCluster failed; retrying"),
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

/// Sets the lease's renewTime to now (the hub creates the lease on acceptance).
async fn renew(leases: &Api<DynamicObject>) -> anyhow::Result<()> {
    let now = jiff::Timestamp::now().strftime("%Y-%m-%dT%H:%M:%S%.6fZ").to_string();
    let patch = json!({"spec": {"renewTime": now}});
    leases.patch(LEASE, &PatchParams::default(), &Patch::Merge(&patch)).await.context("patch the lease")?;
    Ok(())
}

/// Reports Joined and Available, the member's ClusterClaims and its nodes' resources.
async fn report(clusters: &Api<DynamicObject>, member: &Client, name: &str) -> anyhow::Result<()> {
    let claims: Api<DynamicObject> =
        Api::all_with(member.clone(), &resource(GROUP, "v1alpha1", "ClusterClaim", "clusterclaims"));
    let claims: Vec<Value> = match claims.list(&ListParams::default()).await {
        Ok(list) => list
            .items
            .iter()
            .filter_map(|c| {
                let value = c.data.pointer("/spec/value")?.as_str()?;
                Some(json!({"name": c.metadata.name.clone()?, "value": value}))
            })
            .collect(),
        // A member that does not serve ClusterClaims has none.
        Err(kube::Error::Api(e)) if e.code == 404 => Vec::new(),
        Err(error) => return Err(error).context("list the member's ClusterClaims"),
    };
    let mut status = json!({
        "conditions": [
            condition("ManagedClusterJoined", "ManagedClusterJoined", "Managed cluster joined"),
            condition("ManagedClusterConditionAvailable", "ManagedClusterAvailable", "Managed cluster is available"),
        ],
        "clusterClaims": claims,
    });
    // A member that serves no Nodes (a logical cluster) reports no resources; one whose
    // Nodes cannot be read now keeps the figures it reported last.
    match node_resources::list(member, "Node", "nodes", node_resources::NODE_PAGES_MAX).await {
        Ok(Some(nodes)) if !nodes.items.is_empty() => {
            let totals = node_resources::NodeTotals::of(&nodes.items);
            status["allocatable"] = Value::Object(totals.allocatable.to_list(true));
            status["capacity"] = Value::Object(totals.capacity.to_list(true));
        }
        Ok(_) => {}
        Err(error) => tracing::warn!(error = %format!("{error:#}"), "reading the member's Nodes failed"),
    }
    let patch = json!({"status": status});
    clusters.patch_status(name, &PatchParams::default(), &Patch::Merge(&patch)).await.context("patch the status")?;
    Ok(())
}

fn condition(kind: &str, reason: &str, message: &str) -> Value {
    let now = jiff::Timestamp::now().strftime("%Y-%m-%dT%H:%M:%SZ").to_string();
    json!({"type": kind, "status": "True", "reason": reason, "message": message, "lastTransitionTime": now})
}
