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
    /// When its first command began (run time): the fault may take hold any time until
    /// that command returns (a `docker pause` freezes the container before the CLI hears
    /// back), so the fault's window opens here.
    pub from_ms: u64,
    /// When its heal's first command began: the fault may end any time from here (a
    /// paused container answers what it held as soon as it thaws, before `docker unpause`
    /// returns), so the window closes here.
    pub to_ms: u64,
    /// When its commands had returned: the fault was surely in place from here to
    /// [`HostFaultRecord::to_ms`] (0 in histories from before this was recorded).
    #[serde(default)]
    pub injected_ms: u64,
    /// When its heal's commands had returned (0 in histories from before this was
    /// recorded, whose `to_ms` was this time and whose `from_ms` was `injected_ms`).
    #[serde(default)]
    pub healed_ms: u64,
    /// The commands that injected it, in order (what its heal undid).
    pub commands: Vec<String>,
}
