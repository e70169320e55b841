//! What the agent-partition scenario records: the hub's bindings and heartbeats over
//! time, the agents' faults, and where each placement and its objects ended.

use serde::{Deserialize, Serialize};

/// What the agent-partition scenario recorded.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct PlacementRecord {
    /// The hub's heartbeat (and health) timeout.
    pub heartbeat_timeout_ms: u64,
    /// Every MemberCluster, each served by one agent.
    pub members: Vec<String>,
    /// Every fault on an agent: a partition from the hub or a `kill -9` and restart.
    pub faults: Vec<AgentFault>,
    /// Every ClusterResourceBinding event seen, in order (a re-list adds one per binding
    /// listed and a removal for each one known and no longer listed).
    pub bindings: Vec<BindingEvent>,
    /// The MemberClusters' `lastReceivedHeartbeat` on the hub, sampled through the run.
    pub heartbeats: Vec<HeartbeatSample>,
    /// Every placement, as read after healing.
    pub placements: Vec<PlacementOutcome>,
    /// The selected objects on the hub after healing.
    pub hub_objects: Vec<PlacedObject>,
    /// The selected namespaces' objects on every member after healing.
    pub member_objects: Vec<MemberObject>,
    /// Updates of the selected objects the hub acknowledged during the run.
    pub writes: u64,
}

/// One fault on one member's agent.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct AgentFault {
    /// The member whose agent it hit.
    pub member: String,
    /// The fault, in words (`Blackhole`, `Cut`, `kill -9`).
    pub what: String,
    /// Whether the agent was cut off from the hub while it kept running (a partition),
    /// rather than killed.
    pub partition: bool,
    /// When it was injected.
    pub from_ms: u64,
    /// When it was lifted (healed, or the agent restarted).
    pub to_ms: u64,
}

/// A ClusterResourceBinding as one event showed it.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct BindingEvent {
    /// When it was seen.
    pub at_ms: u64,
    /// The binding's name.
    pub binding: String,
    /// Its placement (`kubernetes-fleet.io/parent-CRP`).
    pub crp: String,
    /// `spec.targetCluster`.
    pub cluster: String,
    /// Whether it places the cluster: it exists and its state is not Unscheduled.
    pub scheduled: bool,
}

/// One MemberCluster's last heartbeat as the hub held it at one moment.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct HeartbeatSample {
    /// When the hub was read.
    pub at_ms: u64,
    /// The MemberCluster.
    pub member: String,
    /// `status.agentStatus[].lastReceivedHeartbeat` (RFC 3339, orders as text).
    pub last_received: String,
}

/// A ClusterResourcePlacement after healing.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct PlacementOutcome {
    /// Its name.
    pub crp: String,
    /// The namespace it selects.
    pub namespace: String,
    /// Whether it keeps its clusters (Fleet's default; no rescheduling opt-in).
    pub sticky: bool,
    /// N of a PickN placement; `None` for PickAll.
    pub pick: Option<u32>,
    /// The clusters its bindings place.
    pub picked: Vec<String>,
    /// The clusters its status reports Applied.
    pub applied: Vec<String>,
    /// The clusters its status reports Available.
    pub available: Vec<String>,
}

/// A selected object on the hub.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct PlacedObject {
    /// Its namespace.
    pub namespace: String,
    /// Its name.
    pub name: String,
    /// Its content (the ConfigMap's `data`, as JSON).
    pub data: String,
}

/// A selected namespace's object on a member.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct MemberObject {
    /// The member holding it.
    pub member: String,
    /// The object.
    pub object: PlacedObject,
}
