//! A Fleet hub in a workspace behind the front-proxy, and member agents joined to it:
//! the set-up the Fleet end-to-end tests share. Each member is a logical cluster of a
//! member shard of its own, its MemberCluster is applied on the hub with stock kubectl,
//! and a real `atoll-agent --member-cluster` heartbeats it every second.

use crate::agent::AgentProcess;
use crate::installation::{Installation, InstallationOptions};
use crate::placement::{member_cluster, yaml};
use crate::shard::ShardProcess;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::PathBuf;
use tempfile::TempDir;

/// Starts an installation of `options` with a front-proxy, places one workspace `hub` on
/// it and waits until the proxy resolves it. Returns the installation and the hub's
/// logical cluster path (`root:<name>`).
pub async fn hub_workspace(options: InstallationOptions) -> (Installation, String) {
    let options = InstallationOptions { front_proxy: true, ..options };
    let installation = Installation::start_with(options).await.expect("start the installation");
    let placed = installation.place_workspaces("hub", 1, |p| p.values().any(|names| !names.is_empty())).await.unwrap();
    let hub = format!("root:{}", placed.values().flatten().next().unwrap());
    installation.proxy().wait_resolves(&hub).await.unwrap();
    (installation, hub)
}

/// Members of a Fleet hub with their agents running. Dropping it stops the agents before
/// the member shard (fields drop in order), and then removes their logs.
pub struct FleetMembers {
    /// Each member's agent, by member name.
    pub agents: BTreeMap<String, AgentProcess>,
    /// The shard whose logical clusters the members are.
    pub shard: ShardProcess,
    /// Each member's admin kubeconfig for its logical cluster, by member name (for
    /// `shard.kubectl_with`).
    pub configs: BTreeMap<String, PathBuf>,
    /// Where the agents log (`<name>.log`).
    pub logs: TempDir,
}

impl FleetMembers {
    /// Applies a MemberCluster for each `(name, labels)` on `hub` of `installation` and
    /// starts its agent as user `fleet-agent` (system:masters), heartbeating every second.
    /// Does not wait for the members to join: tests check that themselves.
    pub async fn join(installation: &Installation, hub: &str, members: &[(&str, Value)]) -> FleetMembers {
        let names: Vec<&str> = members.iter().map(|(name, _)| *name).collect();
        let shard = ShardProcess::with_clusters(&names).await;
        let proxy = installation.proxy();
        let objects: Vec<Value> = members.iter().map(|(name, labels)| member_cluster(name, labels.clone())).collect();
        proxy.kubectl().cluster(hub).args(["apply", "-f", "-"]).stdin(yaml(&objects)).ok();
        let logs = tempfile::tempdir().unwrap();
        let identity = installation.user_identity("fleet-agent", &["system:masters"]).unwrap();
        let hub_config = proxy.user_kubeconfig("fleet-agent", &identity, hub).unwrap();
        let mut configs = BTreeMap::new();
        let mut agents = BTreeMap::new();
        for name in names {
            let config = shard.user_kubeconfig(&format!("admin-{name}"), &["system:masters"], name).unwrap();
            let log = logs.path().join(format!("{name}.log"));
            let args = ["--heartbeat-interval-seconds", "1"];
            let agent = AgentProcess::start_member_cluster(&hub_config, name, &config, &args, &log).unwrap();
            agents.insert(name.to_string(), agent);
            configs.insert(name.to_string(), config);
        }
        FleetMembers { agents, shard, configs, logs }
    }
}
