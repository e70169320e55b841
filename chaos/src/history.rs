//! The history of a run: what every client asked, what it was told, and every watch event
//! it saw. Checkers judge this record only, never the live system, so a history saved to
//! a file can be judged again later (`atoll-chaos replay FILE`).
//!
//! Times are milliseconds since the start of the run, taken by the client: `invoke_ms`
//! before the request left, `complete_ms` after the answer arrived. Only their order
//! matters to the checkers (an operation that completed before another was invoked must
//! be visible to it); nothing here judges speed.

use serde::{Deserialize, Serialize};

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
}

/// A Workspace as the final read found it.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct WorkspaceRecord {
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

impl WatchRequest {
    /// The furthest RV this request proved it delivered everything up to: the start, the
    /// last event, or the last bookmark.
    pub fn progress_rv(&self) -> u64 {
        self.items.iter().map(WatchItem::rv).fold(self.start_rv, u64::max)
    }
}
