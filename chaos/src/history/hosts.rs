//! What the `hosts` scenario records of each fault on a container of the docker-compose
//! installation (what the clients saw of it is judged from the fault windows, see
//! [`crate::check::availability::window_effects`]).

use serde::{Deserialize, Serialize};

use crate::hosts::fault::HostFault;

/// One fault on one container, from the seed's schedule.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct HostFaultRecord {
    /// The compose service whose container was faulted (`shard-1`, `cache-a`).
    pub service: String,
    /// What was done to it.
    pub fault: HostFault,
    /// The step's offset in the fault phase, as the seed drew it.
    pub scheduled_ms: u64,
    /// When the fault was in place (run time).
    pub from_ms: u64,
    /// When its heal was complete.
    pub to_ms: u64,
    /// The commands that injected it, in order (what its heal undid).
    pub commands: Vec<String>,
}
