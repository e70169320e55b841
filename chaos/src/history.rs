//! The history of a run: what every client asked, what it was told, and every watch event
//! it saw. Checkers judge this record only, never the live system, so a history saved to
//! a file can be judged again later (`atoll-chaos replay FILE`).
//!
//! Times are milliseconds since the start of the run, taken by the client: `invoke_ms`
//! before the request left, `complete_ms` after the answer arrived. Only their order
//! matters to the checkers (an operation that completed before another was invoked must
//! be visible to it); nothing here judges speed.

use serde::{Deserialize, Serialize};

mod hosts;
mod placement;
pub use hosts::HostFaultRecord;
pub use placement::{
    AgentFault, BindingEvent, HeartbeatSample, MemberObject, PlacedObject, PlacementOutcome, PlacementRecord,
};

/// Everything one run recorded.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct History {
    /// The seed the run's fault schedule and workload were drawn from.
    pub seed: u64,
    /// The scenario's name.
    pub scenario: String,
    /// The faults injected, in order.
    pub faults: Vec<FaultRecord>,
    /// Every client operation (writes and reads), in invocation order per client.
    pub operations: Vec<Operation>,
    /// Every watch request the watchers opened, in the order each watcher opened them.
    pub watches: Vec<WatchRequest>,
    /// What each collection held after healing, read once every client had stopped.
    pub final_states: Vec<FinalState>,
    /// The spells during which a shard's disk was full (the disk-full scenario).
    #[serde(default)]
    pub disk_full: Vec<DiskFullSpell>,
    /// Every Workspace of the storm's parent after healing (the workspace-storm scenario).
    #[serde(default)]
    pub workspaces: Vec<WorkspaceRecord>,
    /// Every LogicalCluster owned by a Workspace, read from every shard after healing.
    #[serde(default)]
    pub logical_clusters: Vec<LogicalClusterRecord>,
    /// Every create and delete a storm issued, with its parent and what it was told (the
    /// workspace-storm, front-proxy and root-down scenarios).
    #[serde(default)]
    pub workspace_operations: Vec<WorkspaceOperation>,
    /// The spells during which a process was down or frozen (the front-proxy scenario),
    /// which the availability checker judges the other shards' requests against.
    #[serde(default)]
    pub fault_windows: Vec<FaultWindow>,
    /// What the front-proxy resolved after healing (the front-proxy scenario).
    #[serde(default)]
    pub index: Option<IndexRecord>,
    /// What the shards and caches held after healing (the cache scenario).
    #[serde(default)]
    pub replication: Option<ReplicationRecord>,
    /// What happened while a shard was down for a long spell (the root-down scenario).
    #[serde(default)]
    pub outage: Option<OutageRecord>,
    /// Placements, bindings and heartbeats while agents were cut off from their hub
    /// (the agent-partition scenario).
    #[serde(default)]
    pub placement: Option<PlacementRecord>,
    /// Every fault on a container of the docker-compose installation (the hosts scenario).
    #[serde(default)]
    pub hosts: Vec<HostFaultRecord>,
}

/// The replicated objects of the live shards and every cache's replicas, read after
/// healing and a bounded wait for convergence.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct ReplicationRecord {
    /// The shards of the installation at the end (a replica of any other origin is left
    /// over from a shard that is gone).
    pub live_shards: Vec<String>,
    /// Every replicated object the live shards hold (their wildcard lists).
    pub sources: Vec<ReplicaRecord>,
    /// Every replicated object whose delete a shard acknowledged during the run, by id.
    pub deleted: Vec<String>,
    /// How many creates of replicated objects the shards acknowledged during the run.
    #[serde(default)]
    pub created: usize,
    /// How many patches of replicated objects the shards acknowledged during the run.
    #[serde(default)]
    pub updated: usize,
    /// What each cache held.
    pub caches: Vec<CacheRecord>,
    /// The scripted deletes after a failover (the cache-partition scenario), which the run
    /// proves took place.
    #[serde(default)]
    pub failover_deletes: Vec<FailoverDelete>,
    /// Writes made while the cache a shard had to fail over to accepted connections and
    /// never answered (the cache-partition scenario).
    #[serde(default)]
    pub silent_failovers: Vec<SilentFailover>,
}

/// A write a shard made after its stream to a healthy cache broke while the other cache of
/// its list accepted connections and never answered (frozen, or a blackhole): the shard
/// must give up on the silent cache and bring the write to the healthy one.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct SilentFailover {
    /// The object written (as in [`ReplicaRecord::id`]).
    pub id: String,
    /// The cache that accepted connections and never answered.
    pub silent_cache: String,
    /// The cache that served, whose stream was cut.
    pub healthy_cache: String,
    /// The healthy cache received the write within the bound the scenario allows.
    pub delivered: bool,
}

/// One cache's replicas.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct CacheRecord {
    /// The cache server's name.
    pub cache: String,
    /// Its replicas.
    pub replicas: Vec<ReplicaRecord>,
    /// The origins (shards) this cache is judged for; `None`: every live shard. A regional
    /// cache holds what the shards currently replicating to it send: a shard that failed
    /// over to a sibling left its copies behind, which the cache cannot know are stale, so
    /// the cache is judged only for the shards that replicate to it at the end (the parent
    /// above it is judged for all, and must not take the left-behind copies back).
    #[serde(default)]
    pub origins: Option<Vec<String>>,
    /// The cache's record of each origin's newest replication session and the cache that
    /// relays it (what fencing decides by), as its List answered.
    #[serde(default)]
    pub relays: Vec<RelayRecord>,
}

/// A cache's record of one origin's newest replication session.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct RelayRecord {
    /// The source shard.
    pub origin: String,
    /// Its session's epoch.
    pub epoch: u64,
    /// The cache that relays that session (the origin itself when it connected here).
    pub via: String,
    /// Whether the cache holds the origin's whole state of that session.
    #[serde(default)]
    pub settled: bool,
}

/// A delete of a replicated object that its shard made after failing over from the
/// regional cache that still held the object to a sibling, while the old cache was cut
/// off from the parent; the old cache reached the parent again afterwards.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct FailoverDelete {
    /// The object's id (as in [`ReplicaRecord::id`]).
    pub id: String,
    /// The regional cache the shard failed over from.
    pub from_cache: String,
    /// The sibling it failed over to.
    pub to_cache: String,
    /// The old cache held the object when the shard deleted it.
    pub old_cache_held_it: bool,
    /// The sibling held it before the delete: the shard replicated there.
    pub sibling_held_it: bool,
    /// The parent had dropped it before the old cache reached the parent again.
    pub parent_dropped_it: bool,
}

/// A replicated object, on its shard or in a cache.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct ReplicaRecord {
    /// `origin/cluster/group/resource/[namespace/]name` (the group `core` when empty).
    pub id: String,
    /// The object's UID.
    pub uid: String,
    /// The resourceVersion on its origin shard.
    pub source_rv: u64,
}

/// What a fault window took away.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub enum FaultTarget {
    /// A shard, by name: its own requests may fail, every other shard's must not.
    Shard(String),
    /// The front-proxy: every request through it may fail.
    FrontProxy,
    /// A cache server, by name: it hosts no logical cluster, so every shard must keep
    /// answering.
    Cache(String),
}

/// A spell during which one process was killed or frozen, from the fault to the moment
/// it served again (for a restarted front-proxy: once it routed every workload cluster).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct FaultWindow {
    /// What was faulted.
    pub target: FaultTarget,
    /// The fault, in words (`SIGSTOP`, `kill -9`).
    pub what: String,
    /// When the fault was injected.
    pub from_ms: u64,
    /// When it was lifted and the process served again.
    pub to_ms: u64,
}

/// The front-proxy's routing after healing, probed through the proxy once every client
/// had stopped and the Workspaces had settled.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct IndexRecord {
    /// The parent the Workspaces were created in (`root`).
    pub parent: String,
    /// Every Workspace whose delete the front-proxy acknowledged during the run.
    pub deleted: Vec<String>,
    /// One probe per Workspace created (acknowledged) during the run, live or deleted.
    pub probes: Vec<PathProbe>,
    /// `atoll_front_proxy_indexed_logical_clusters`: how many logical clusters the proxy
    /// routes to.
    pub indexed_clusters: Option<u64>,
    /// How many LogicalClusters the shards hold together (wildcard lists, every shard).
    pub stored_clusters: u64,
}

/// `GET /clusters/<parent>:<workspace>/apis/core.kcp.io/v1alpha1/logicalclusters/cluster`
/// through the front-proxy: where the path led.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct PathProbe {
    /// The Workspace's name in the parent.
    pub workspace: String,
    /// The HTTP status (0: no answer).
    pub status: u16,
    /// The answering LogicalCluster's `kcp.io/cluster` annotation, on a 2xx.
    pub cluster: Option<String>,
    /// The answering LogicalCluster's `spec.owner.uid`, on a 2xx.
    pub owner_uid: Option<String>,
}

/// A long outage of one shard and what the rest of the installation did meanwhile.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct OutageRecord {
    /// The shard that was down.
    pub shard: String,
    /// When it was killed.
    pub from_ms: u64,
    /// When it served again after its restart.
    pub to_ms: u64,
    /// When a request straight to the shard found it down (at least one at the start of
    /// the outage and one just before the restart): the proof that it was.
    pub down_probes_ms: Vec<u64>,
    /// Workspaces the run created during the outage and saw Ready.
    pub scheduled: Vec<ScheduledWorkspace>,
    /// APIBindings the run created during the outage.
    pub bindings: Vec<BindingRecord>,
}

/// A Workspace seen Ready.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct ScheduledWorkspace {
    /// Its path.
    pub path: String,
    /// The shard its logical cluster landed on.
    pub shard: String,
    /// When it was seen Ready.
    pub ready_ms: u64,
}

/// An APIBinding the run created.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct BindingRecord {
    /// The path of the workspace holding it.
    pub workspace: String,
    /// The shard hosting that workspace.
    pub shard: String,
    /// The export it binds, as `path:name`.
    pub export: String,
    /// When its create was acknowledged.
    pub created_ms: u64,
    /// When it was first seen Bound, if it was during the outage.
    pub bound_ms: Option<u64>,
    /// Its `status.phase` after healing (empty when unset or unreadable).
    pub final_phase: String,
}

/// A Workspace as the final read found it.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct WorkspaceRecord {
    /// The path of the workspace it is in (`root` in histories written before this was
    /// recorded, when only root's Workspaces were).
    #[serde(default = "root_parent")]
    pub parent: String,
    /// Its name in the parent.
    pub name: String,
    /// Its UID, which its LogicalCluster names as owner.
    pub uid: String,
    /// `status.phase` (empty when unset).
    pub phase: String,
    /// `spec.cluster`: the logical cluster scheduled for it, if any.
    pub cluster: Option<String>,
    /// The shard `spec.URL` names, if any.
    pub shard: Option<String>,
    /// Whether it is being deleted (a deletionTimestamp).
    pub deleting: bool,
}

/// The parent of Workspaces recorded before their parent was: root.
fn root_parent() -> String {
    "root".to_string()
}

/// One create or delete of a Workspace by a storm, and what the storm was told.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct WorkspaceOperation {
    /// The path of the workspace the storm worked in (`root` when not recorded).
    #[serde(default = "root_parent")]
    pub parent: String,
    /// The Workspace's name (a storm never reuses one).
    pub name: String,
    /// [`OperationKind::Create`] or [`OperationKind::Delete`].
    pub kind: OperationKind,
    /// The UID an acknowledged create answered with.
    pub uid: Option<String>,
    /// When the request left.
    pub invoke_ms: u64,
    /// When the answer (or the failure) arrived.
    pub complete_ms: u64,
    /// What the storm was told.
    pub outcome: Outcome,
}

/// A LogicalCluster owned by a Workspace, as the final read of one shard found it.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct LogicalClusterRecord {
    /// The shard it is stored on.
    pub shard: String,
    /// The logical cluster's name.
    pub name: String,
    /// `spec.owner.name`: the owning Workspace's name.
    pub owner_name: String,
    /// `spec.owner.uid`: the owning Workspace's UID.
    pub owner_uid: String,
}

/// A spell during which the filesystem under one shard's store had no free space.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct DiskFullSpell {
    /// The shard whose disk was full.
    pub shard: String,
    /// When the filler had filled the disk.
    pub from_ms: u64,
    /// When the filler was removed.
    pub to_ms: u64,
}

/// One injected fault, as logged.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct FaultRecord {
    /// When it was injected.
    pub at_ms: u64,
    /// What it was, in words (`"shard-1: kill -9"`, `"proxy root: blackhole"`).
    pub what: String,
}

/// One client operation on one object of one collection.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct Operation {
    /// The collection (one shard's logical cluster, namespace and resource), for example
    /// `shard-1/chaos/default/configmaps`. Checkers compare only within one collection.
    pub collection: String,
    /// The shard that serves the collection; resourceVersions are ordered per shard.
    pub shard: String,
    /// The client that issued it.
    pub client: u32,
    /// The object's name (empty for a list).
    pub name: String,
    /// What was asked.
    pub kind: OperationKind,
    /// The value written (a create or update), unique per write so that a read can name
    /// the write it saw.
    pub value: Option<String>,
    /// When the request left the client.
    pub invoke_ms: u64,
    /// When the answer arrived (or the client gave up).
    pub complete_ms: u64,
    /// What the client was told.
    pub outcome: Outcome,
}

/// The kinds of operation the workload issues.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub enum OperationKind {
    /// POST of a new object.
    Create,
    /// PUT of an existing object (no resourceVersion precondition).
    Update,
    /// DELETE of an object.
    Delete,
    /// GET of one object.
    Get,
    /// LIST of the collection.
    List,
}

impl OperationKind {
    /// Whether the operation changes state.
    pub fn is_write(self) -> bool {
        matches!(self, OperationKind::Create | OperationKind::Update | OperationKind::Delete)
    }
}

/// What a client was told.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub enum Outcome {
    /// 2xx with the object's resourceVersion (for a delete: the RV in the answer, if any),
    /// and for reads the value found.
    Ok {
        /// The resourceVersion the server answered with (a list's own RV for a list).
        rv: u64,
        /// The value read (a get), if the object has one.
        value: Option<String>,
    },
    /// A read found nothing (404).
    NotFound,
    /// A definite refusal (4xx such as 409 or 404 on a write): nothing was written.
    Fail {
        /// The HTTP status.
        status: u16,
    },
    /// No answer, a 5xx, or a broken connection: the write may or may not have happened.
    Unknown {
        /// Why the outcome is unknown.
        reason: String,
    },
}

/// One watch request: the RV it started from and everything it delivered until it ended.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct WatchRequest {
    /// The collection watched.
    pub collection: String,
    /// The watcher that opened it.
    pub watcher: u32,
    /// Requests of one watcher that resume one another share a session; a 410 (and the
    /// re-list after it) starts a new session.
    pub session: u32,
    /// The resourceVersion the request asked to start after.
    pub start_rv: u64,
    /// The state the session started from (the list before its first watch), as
    /// name → (rv, value); only on a session's first request.
    pub initial: Option<Vec<(String, u64, Option<String>)>>,
    /// What arrived, in order.
    pub items: Vec<WatchItem>,
    /// How it ended.
    pub end: WatchEnd,
    /// When the request left the watcher.
    #[serde(default)]
    pub opened_ms: u64,
    /// When it ended (the stream closed, broke or went silent).
    #[serde(default)]
    pub ended_ms: u64,
}

/// One line of a watch stream.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub enum WatchItem {
    /// ADDED, MODIFIED or DELETED.
    Event {
        /// The event type.
        kind: EventKind,
        /// The object's name.
        name: String,
        /// The object's resourceVersion in the event.
        rv: u64,
        /// The object's value.
        value: Option<String>,
    },
    /// A BOOKMARK: the server promises every event up to `rv` has been sent.
    Bookmark {
        /// The bookmark's resourceVersion.
        rv: u64,
    },
}

/// The type of a watch event carrying an object.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub enum EventKind {
    /// ADDED.
    Added,
    /// MODIFIED.
    Modified,
    /// DELETED.
    Deleted,
}

/// How a watch request ended.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub enum WatchEnd {
    /// The server closed the stream (timeoutSeconds, or the run's end).
    Closed,
    /// The connection broke or the request failed.
    Broken {
        /// What went wrong.
        reason: String,
    },
    /// An honest 410 Gone: the start RV was compacted away.
    Gone,
}

/// What one collection held at the end of the run.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct FinalState {
    /// The collection.
    pub collection: String,
    /// The list's resourceVersion.
    pub rv: u64,
    /// The objects, as name → (rv, value).
    pub objects: Vec<(String, u64, Option<String>)>,
}

impl WatchItem {
    /// The item's resourceVersion.
    pub fn rv(&self) -> u64 {
        match self {
            WatchItem::Event { rv, .. } | WatchItem::Bookmark { rv } => *rv,
        }
    }
}

impl History {
    /// The watch requests that were open when `window` began and ended after it began,
    /// on the faulted shard (or, for the front-proxy, on any): the streams a killed or
    /// frozen process cut or held.
    pub fn watches_open_at<'a>(&'a self, window: &'a FaultWindow) -> impl Iterator<Item = &'a WatchRequest> + 'a {
        self.watches.iter().filter(move |w| {
            let on_target = match &window.target {
                FaultTarget::FrontProxy => true,
                // Collections are named `<shard>/<cluster>/…`.
                FaultTarget::Shard(shard) => w.collection.split('/').next() == Some(shard.as_str()),
                FaultTarget::Cache(_) => false,
            };
            on_target && w.opened_ms < window.from_ms && window.from_ms < w.ended_ms
        })
    }
}

impl WatchRequest {
    /// The furthest RV this request proved it delivered everything up to: the start, the
    /// last event, or the last bookmark.
    pub fn progress_rv(&self) -> u64 {
        self.items.iter().map(WatchItem::rv).fold(self.start_rv, u64::max)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn watch(collection: &str, opened_ms: u64, ended_ms: u64) -> WatchRequest {
        WatchRequest {
            collection: collection.to_string(),
            watcher: 0,
            session: 0,
            start_rv: 1,
            initial: None,
            items: Vec::new(),
            end: WatchEnd::Closed,
            opened_ms,
            ended_ms,
        }
    }

    #[test]
    fn watches_open_at_a_window_are_those_it_cut_on_its_target() {
        let history = History {
            watches: vec![
                watch("shard-1/c/chaos/configmaps", 10, 200),
                watch("root/c/chaos/configmaps", 10, 200),
                watch("shard-1/c/chaos/configmaps", 10, 90),
                watch("shard-1/c/chaos/configmaps", 150, 300),
            ],
            ..History::default()
        };
        let window = |target| FaultWindow { target, what: "SIGSTOP".to_string(), from_ms: 100, to_ms: 400 };
        let on_shard = window(FaultTarget::Shard("shard-1".to_string()));
        assert_eq!(history.watches_open_at(&on_shard).count(), 1);
        assert_eq!(history.watches_open_at(&window(FaultTarget::FrontProxy)).count(), 2);
    }
}
