//! `atoll-agent`: syncs what is placed on one SyncTarget to one member cluster, serves
//! one OCM ManagedCluster as its registration agent, or one KubeFleet MemberCluster as
//! its member agent.

use clap::Parser;
use std::path::PathBuf;
use std::time::Duration;

/// Apply the objects placed on a SyncTarget to a member cluster (server-side apply), report their status back,
/// and heartbeat the SyncTarget. One agent per member cluster.
#[derive(Debug, Parser)]
#[command(name = "atoll-agent", version)]
struct Args {
    /// Kubeconfig for the workspace that holds the SyncTarget (its server URL ends in /clusters/<workspace>).
    #[arg(long)]
    hub_kubeconfig: PathBuf,
    /// The SyncTarget's name.
    #[arg(
        long,
        required_unless_present_any = ["managed_cluster", "member_cluster"],
        conflicts_with_all = ["managed_cluster", "member_cluster"]
    )]
    sync_target: Option<String>,
    /// Serve this OCM ManagedCluster instead: register it, renew its lease and report its
    /// status (ClusterClaims, node resources) from the member.
    #[arg(long, conflicts_with = "member_cluster")]
    managed_cluster: Option<String>,
    /// Serve this KubeFleet MemberCluster instead: heartbeat it, apply the Works in
    /// fleet-member-<NAME> to the member and report their status.
    #[arg(long)]
    member_cluster: Option<String>,
    /// Kubeconfig for the member cluster the objects are applied to.
    #[arg(long)]
    member_kubeconfig: PathBuf,
    /// Resources to sync: `resource` for the core group, `resource.group` otherwise.
    #[arg(long, value_delimiter = ',', default_values_t = agent::DEFAULT_RESOURCES.iter().map(|r| r.to_string()))]
    resources: Vec<String>,
    /// Seconds between heartbeats (`status.lastSyncerHeartbeatTime`, 10 when not given); keep it well under the
    /// shards' --sync-target-heartbeat-threshold-seconds. With --member-cluster it overrides the MemberCluster's
    /// spec.heartbeatPeriodSeconds.
    #[arg(long)]
    heartbeat_interval_seconds: Option<f64>,
    /// Seconds between re-reads of the SyncTarget's sync views (shards joining or leaving) and sweeps of orphaned
    /// downstream copies.
    #[arg(long, default_value_t = 10.0)]
    resync_seconds: f64,
    /// Field manager of the server-side applies to the member.
    #[arg(long, default_value = "atoll-agent")]
    field_manager: String,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let _telemetry = telemetry::init("atoll-agent", "info,kube=warn", None);
    let args = Args::parse();
    let seconds = |s: f64| Duration::from_secs_f64(s.max(0.1));
    if let Some(member_cluster) = args.member_cluster {
        return agent::fleet::run(agent::fleet::MemberConfig {
            hub_kubeconfig: args.hub_kubeconfig,
            member_cluster,
            member_kubeconfig: args.member_kubeconfig,
            heartbeat: args.heartbeat_interval_seconds.map(seconds),
            field_manager: args.field_manager,
        })
        .await;
    }
    let Some(sync_target) = args.sync_target else {
        let managed_cluster = args.managed_cluster.unwrap_or_default();
        return agent::ocm::run(agent::ocm::ManagedConfig {
            hub_kubeconfig: args.hub_kubeconfig,
            managed_cluster,
            member_kubeconfig: args.member_kubeconfig,
        })
        .await;
    };
    agent::run(agent::Config {
        hub_kubeconfig: args.hub_kubeconfig,
        sync_target,
        member_kubeconfig: args.member_kubeconfig,
        resources: args.resources,
        heartbeat_interval: seconds(args.heartbeat_interval_seconds.unwrap_or(10.0)),
        resync: seconds(args.resync_seconds),
        field_manager: args.field_manager,
    })
    .await
}
