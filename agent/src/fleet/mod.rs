//! The agent as a KubeFleet member agent for one MemberCluster. An admin creates the
//! MemberCluster on the hub; the agent heartbeats it every `spec.heartbeatPeriodSeconds`
//! (`status.agentStatus`, `MemberAgent` Joined and Healthy), and applies the Works the
//! hub writes to namespace `fleet-member-<name>` to the member with server-side apply,
//! Namespaces and CustomResourceDefinitions first, each object marked with the Work it
//! came from. It reports each Work's Applied and Available conditions and one condition
//! pair per manifest, holds the Work with its finalizer while its objects may exist,
//! deletes them when the Work goes, and deletes objects no Work wants any more.
//!
//! Leaving (KubeFleet's InternalMemberCluster state Leave; here the agent reads the
//! MemberCluster itself): once the MemberCluster is being deleted the agent applies
//! nothing more, deletes every object it applied from the member's Works, lets go of
//! the Works, and only then reports Joined False, which tells the hub that it may delete
//! the member's namespace and let the MemberCluster go.
//!
//! Works are followed with a watch; every [`FULL_PASS`] every Work is applied again
//! (drift in the member is undone) and the sweep runs, and every [`RETRY`] the Works with
//! something not applied or not available yet are looked at again.
//!
//! - [`heartbeat`]: the MemberCluster's status on the hub, and whether it is leaving;
//!   `properties`: the member's node count and resource usage in that status.
//! - `works`: the loop over the Works and one pass over a Work.
//! - `apply`: one manifest applied to the member, its kind discovered.
//! - `removal`: leaving, a deleted Work's clean-up, and the sweep.
//! - `manifest`, `status`: what a Work asks for and what the agent reports (pure).

mod apply;
mod heartbeat;
mod manifest;
mod properties;
mod removal;
mod status;
mod works;

use anyhow::Context;
use heartbeat::Heartbeat;
use kube::api::{Api, DynamicObject};
use kube::core::{ApiResource, GroupVersionKind};
use kube::Client;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Notify;

/// What the agent is told in KubeFleet mode.
#[derive(Debug, Clone)]
pub struct MemberConfig {
    /// A kubeconfig for the hub workspace.
    pub hub_kubeconfig: PathBuf,
    /// The MemberCluster's name.
    pub member_cluster: String,
    /// A kubeconfig for the member cluster.
    pub member_kubeconfig: PathBuf,
    /// How often the MemberCluster is heartbeated; `None`: its `spec.heartbeatPeriodSeconds`.
    pub heartbeat: Option<Duration>,
    /// The field manager of the agent's server-side applies.
    pub field_manager: String,
}

const CLUSTER_GROUP: &str = "cluster.kubernetes-fleet.io";
const PLACEMENT_GROUP: &str = "placement.kubernetes-fleet.io";
/// KubeFleet's default `spec.heartbeatPeriodSeconds`.
const DEFAULT_HEARTBEAT_SECONDS: u64 = 60;
/// How often Works with something not applied or not available yet are looked at again.
const RETRY: Duration = Duration::from_secs(2);
/// How often every Work is applied again and objects no Work wants are removed.
const FULL_PASS: Duration = Duration::from_secs(10);
/// Attempts at one apply that fails for want of the member (5xx, transport).
const APPLY_ATTEMPTS: u32 = 3;
/// Discovery attempts for a kind right after a CustomResourceDefinition was applied (the
/// member takes a moment to serve it).
const DISCOVERY_ATTEMPTS: u32 = 6;
/// Attempts at changing a Work's finalizers while others change them too.
const FINALIZER_ATTEMPTS: u32 = 5;
/// The kinds the sweep lists from the start (an earlier run may have applied them);
/// others once this run applies them: group, version, kind, plural, namespaced.
const SWEPT_FROM_START: &[(&str, &str, &str, &str, bool)] = &[
    ("", "v1", "ConfigMap", "configmaps", true),
    ("", "v1", "Secret", "secrets", true),
    ("", "v1", "Namespace", "namespaces", false),
    ("", "v1", "Service", "services", true),
    ("", "v1", "ServiceAccount", "serviceaccounts", true),
    ("apps", "v1", "Deployment", "deployments", true),
];

fn resource(group: &str, version: &str, kind: &str, plural: &str) -> ApiResource {
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, version, kind), plural)
}

fn now() -> String {
    jiff::Timestamp::now().strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

fn to_value(object: &DynamicObject) -> Value {
    serde_json::to_value(object).unwrap_or(Value::Null)
}

fn text<'a>(object: &'a Value, pointer: &str) -> &'a str {
    object.pointer(pointer).and_then(Value::as_str).unwrap_or_default()
}

/// Whether the member refuses an object itself (rather than failing to take it).
fn refused(code: u16) -> bool {
    (400..500).contains(&code) && code != 429
}

/// Runs until the process ends.
pub async fn run(config: MemberConfig) -> anyhow::Result<()> {
    let hub =
        crate::traced::client(crate::kube_config(&config.hub_kubeconfig).await?).context("build the hub client")?;
    let member = crate::traced::client(crate::kube_config(&config.member_kubeconfig).await?)
        .context("build the member client")?;
    let members: Api<DynamicObject> =
        Api::all_with(hub.clone(), &resource(CLUSTER_GROUP, "v1", "MemberCluster", "memberclusters"));
    let namespace = format!("fleet-member-{}", config.member_cluster);
    let works: Api<DynamicObject> =
        Api::namespaced_with(hub, &namespace, &resource(PLACEMENT_GROUP, "v1", "Work", "works"));
    tracing::info!(member_cluster = %config.member_cluster, %namespace, "KubeFleet member agent started");
    let leaving = Arc::new(AtomicBool::new(false));
    let left = Arc::new(AtomicBool::new(false));
    let beat_now = Arc::new(Notify::new());
    let heartbeat = Heartbeat {
        members,
        name: config.member_cluster.clone(),
        member: member.clone(),
        every: config.heartbeat,
        leaving: leaving.clone(),
        left: left.clone(),
    };
    // The first heartbeat comes before any Work is applied: a cluster that is leaving applies nothing.
    let mut wait = heartbeat.beat().await;
    let woken = beat_now.clone();
    tokio::spawn(async move {
        loop {
            // The applier wakes the heartbeat once it has left, so the hub hears it at once.
            tokio::select! {
                _ = tokio::time::sleep(wait) => {}
                _ = woken.notified() => {}
            }
            wait = heartbeat.beat().await;
        }
    });
    let applied_types = SWEPT_FROM_START
        .iter()
        .map(|&(group, version, kind, plural, namespaced)| {
            let found = Resolved { resource: resource(group, version, kind, plural), namespaced };
            (key(&found.resource), found)
        })
        .collect();
    let mut applier = Applier {
        member,
        works,
        namespace,
        field_manager: config.field_manager,
        leaving,
        left,
        beat_now,
        resolved: HashMap::new(),
        applied_types,
        crd_applied: false,
        reconciled: HashMap::new(),
        pending: BTreeSet::new(),
        announced: HashMap::new(),
    };
    applier.follow().await
}

/// A resource of the member, as discovery resolved it.
#[derive(Debug, Clone)]
struct Resolved {
    resource: ApiResource,
    namespaced: bool,
}

/// `plural.group`: what names a resource in the agent's books.
fn key(resource: &ApiResource) -> String {
    format!("{}.{}", resource.plural, resource.group)
}

/// Applies the Works to the member; one task owns it.
struct Applier {
    member: Client,
    /// The Works in the MemberCluster's namespace of the hub.
    works: Api<DynamicObject>,
    /// That namespace.
    namespace: String,
    field_manager: String,
    leaving: Arc<AtomicBool>,
    /// Set once, while leaving, everything applied is removed and the Works let go.
    left: Arc<AtomicBool>,
    /// Wakes the heartbeat (to report Left at once).
    beat_now: Arc<Notify>,
    /// Member discovery, per kind asked for.
    resolved: HashMap<GroupVersionKind, Resolved>,
    /// The resources the sweep lists, by [`key`].
    applied_types: BTreeMap<String, Resolved>,
    /// Whether the current Work's pass applied a CustomResourceDefinition.
    crd_applied: bool,
    /// The [`manifest::fingerprint`] of each Work last settled: a watch event that
    /// changes none of it (the status the agent wrote) needs no pass.
    reconciled: HashMap<String, String>,
    /// Works with something not settled, looked at again every [`RETRY`].
    pending: BTreeSet<String>,
    /// The generation of each Work whose manifests were all applied, for the log.
    announced: HashMap<String, i64>,
}
