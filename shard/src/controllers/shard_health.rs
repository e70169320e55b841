//! Shard health on Workspaces: this shard probes every other shard of its shard set; a
//! shard that has not answered for the grace period (`--shard-unavailable-grace-seconds`)
//! is declared unavailable, and every Workspace hosted here whose logical cluster lives
//! there goes from `Ready` to phase `Unavailable` with the condition
//! `WorkspaceShardAvailable` False (reason `ShardUnavailable`). When the shard answers
//! again those workspaces go back to `Ready` (condition True, reason `ShardAvailable`).
//!
//! The grace keeps a restart or a short partition from flapping every workspace of a
//! shard. Work happens only at a shard's transitions, never per workspace per probe: a
//! transition makes every workspace here placed on that shard agree with its state.
//! Nothing here is visible to users who may not see the Workspace objects themselves
//! (RBAC of the parent workspace); the front-proxy answers requests into a workspace on a
//! dead shard as it answers for a missing one unless the caller may see that workspace.
//!
//! [`Tracker`] is the pure core (probe results in, transitions out).

use crate::state::Shard;
use crate::tenancy::rows::TenancyRows;
use apiserver::objects;
use apiserver::storage::{self, ObjectRef, WriteOptions};
use protocol::meta;
use protocol::wellknown::SCHEDULED_SHARD_ANNOTATION;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The Workspace condition that says whether the workspace's shard answers.
pub const CONDITION: &str = "WorkspaceShardAvailable";
/// The phase of a workspace whose shard is unavailable (kcp's `Unavailable`).
pub const PHASE_UNAVAILABLE: &str = "Unavailable";
/// How often every other shard is probed.
const PROBE_INTERVAL: Duration = Duration::from_secs(1);
/// How long one probe may take before it counts as no answer (a stopped process accepts
/// connections but never answers).
const PROBE_TIMEOUT: Duration = Duration::from_secs(2);

/// The controller's timing.
#[derive(Debug, Clone, Copy)]
pub struct Settings {
    /// How long a shard may fail every probe before it is declared unavailable.
    pub grace: Duration,
}

/// What is declared about a shard.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Declared {
    /// Nothing yet (this process just started).
    Unknown,
    /// It answers.
    Available,
    /// It has failed every probe for the grace period.
    Unavailable,
}

/// A change of what is declared about a shard.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transition {
    /// The shard answers (again, or for the first time since this process started).
    Available,
    /// The shard has failed every probe for at least the grace.
    Unavailable,
}

/// One shard's probe history.
#[derive(Debug, Clone, Copy)]
struct ShardState {
    declared: Declared,
    /// The first failed probe since the last answer.
    failing_since: Option<Instant>,
}

/// Probe results in, transitions out. Pure: the caller supplies the time.
#[derive(Debug)]
pub struct Tracker {
    grace: Duration,
    shards: HashMap<String, ShardState>,
}

impl Tracker {
    /// A tracker that declares a shard unavailable after `grace` of failed probes.
    pub fn new(grace: Duration) -> Tracker {
        Tracker { grace, shards: HashMap::new() }
    }

    /// Records one probe of `shard` at `now`; returns the transition it caused, if any.
    /// The first answer after a start is a transition too, so workspaces left
    /// `Unavailable` by an earlier run recover.
    pub fn observe(&mut self, shard: &str, answered: bool, now: Instant) -> Option<Transition> {
        let state = self
            .shards
            .entry(shard.to_string())
            .or_insert(ShardState { declared: Declared::Unknown, failing_since: None });
        if answered {
            state.failing_since = None;
            if state.declared == Declared::Available {
                return None;
            }
            state.declared = Declared::Available;
            return Some(Transition::Available);
        }
        let since = *state.failing_since.get_or_insert(now);
        if state.declared == Declared::Unavailable || now.duration_since(since) < self.grace {
            return None;
        }
        state.declared = Declared::Unavailable;
        Some(Transition::Unavailable)
    }

    /// Forgets shards that left the shard set.
    pub fn retain(&mut self, known: impl Fn(&str) -> bool) {
        self.shards.retain(|name, _| known(name));
    }
}

/// Probes the other shards forever and updates the Workspaces placed on a shard whose
/// availability changed.
pub async fn run(shard: Arc<Shard>, settings: Settings) {
    let mut tracker = Tracker::new(settings.grace);
    let mut interval = tokio::time::interval(PROBE_INTERVAL);
    interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        interval.tick().await;
        let set = shard.membership.current();
        tracker.retain(|name| set.shard(name).is_some());
        let others: Vec<_> = set.iter().filter(|info| info.name != shard.name).cloned().collect();
        let probes = others.iter().map(|info| async {
            let answer = tokio::time::timeout(PROBE_TIMEOUT, shard.peers.probe(&info.base_url)).await;
            (info.name.clone(), matches!(answer, Ok(Ok(()))))
        });
        for (name, answered) in futures::future::join_all(probes).await {
            let Some(transition) = tracker.observe(&name, answered, Instant::now()) else { continue };
            match transition {
                Transition::Unavailable => {
                    tracing::warn!(shard = %name, grace_s = settings.grace.as_secs_f64(), "shard declared unavailable")
                }
                Transition::Available => tracing::info!(shard = %name, "shard available"),
            }
            mark_workspaces(&shard, &name, transition, settings.grace).await;
        }
    }
}

/// Makes every Workspace hosted here and placed on `target` agree with `transition`.
async fn mark_workspaces(shard: &Shard, target: &str, transition: Transition, grace: Duration) {
    let rt = shard.registry.workspaces();
    let (from, to) = match transition {
        Transition::Unavailable => ("Ready", PHASE_UNAVAILABLE),
        Transition::Available => (PHASE_UNAVAILABLE, "Ready"),
    };
    let mut affected = Vec::new();
    let scanned = objects::scan(&shard.store, &rt, |cluster, workspace| {
        let placed_there =
            meta::annotations(workspace).get(SCHEDULED_SHARD_ANNOTATION).map(String::as_str) == Some(target);
        if placed_there && phase(workspace) == Some(from) && !meta::is_deleting(workspace) {
            affected.push((cluster.to_string(), meta::name(workspace).unwrap_or_default().to_string()));
        }
    });
    if let Err(error) = scanned {
        tracing::warn!(%error, shard = %target, "listing the workspaces of a shard failed");
        return;
    }
    let condition = match transition {
        Transition::Unavailable => condition_unavailable(target, grace),
        Transition::Available => json!({"type": CONDITION, "status": "True", "reason": "ShardAvailable",
            "message": format!("shard {target} answers")}),
    };
    for (cluster, name) in &affected {
        let at = ObjectRef { cluster, namespace: None, name };
        let written = storage::guaranteed_update(shard, &rt, &at, Some("status"), WriteOptions::default(), |old| {
            Ok(with_phase(old, from, to, &condition))
        })
        .await;
        if let Err(e) = written {
            tracing::warn!(error = %e.message, workspace = %name, "marking the workspace's shard availability failed");
        }
    }
    tracing::info!(shard = %target, workspaces = affected.len(), phase = to, "marked the workspaces on the shard");
}

/// The condition of a workspace whose shard `target` is declared unavailable.
fn condition_unavailable(target: &str, grace: Duration) -> Value {
    json!({
        "type": CONDITION,
        "status": "False",
        "reason": "ShardUnavailable",
        "message": format!(
            "shard {target} hosting this workspace has not answered for more than {}s; its content cannot be reached until the shard is back",
            grace.as_secs()
        ),
    })
}

fn phase(workspace: &Value) -> Option<&str> {
    workspace.pointer("/status/phase").and_then(Value::as_str)
}

/// `old` moved from phase `from` to `to` with `condition` set (other conditions kept);
/// unchanged when it is no longer in `from` (it moved on meanwhile). Pure.
fn with_phase(old: &Value, from: &str, to: &str, condition: &Value) -> Value {
    let mut new = old.clone();
    if phase(old) != Some(from) || meta::is_deleting(old) {
        return new;
    }
    let mut status = old.get("status").cloned().filter(Value::is_object).unwrap_or_else(|| json!({}));
    let mut conditions: Vec<Value> = status.get("conditions").and_then(Value::as_array).cloned().unwrap_or_default();
    conditions.retain(|c| c.get("type").and_then(Value::as_str) != Some(CONDITION));
    conditions.push(condition.clone());
    status["conditions"] = Value::from(conditions);
    status["phase"] = Value::from(to);
    new["status"] = apiserver::conditions::with_transition_times(old.get("status"), &status);
    new
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shard_is_unavailable_only_after_the_grace_and_available_at_its_first_answer() {
        let grace = Duration::from_secs(10);
        let start = Instant::now();
        let at = |s: u64| start + Duration::from_secs(s);
        let mut tracker = Tracker::new(grace);
        // (seconds, answered, transition)
        let table = [
            (0, true, Some(Transition::Available)),
            (1, true, None),
            (2, false, None),
            (11, false, None),
            (12, true, None),
            (13, false, None),
            (22, false, None),
            (23, false, Some(Transition::Unavailable)),
            (30, false, None),
            (31, true, Some(Transition::Available)),
            (32, true, None),
        ];
        for (seconds, answered, want) in table {
            assert_eq!(tracker.observe("s", answered, at(seconds)), want, "at {seconds}s, answered {answered}");
        }
    }

    #[test]
    fn after_a_restart_a_dead_shard_waits_out_the_grace_and_a_live_one_recovers_at_once() {
        let start = Instant::now();
        let mut tracker = Tracker::new(Duration::from_secs(5));
        assert_eq!(tracker.observe("dead", false, start), None);
        assert_eq!(tracker.observe("dead", false, start + Duration::from_secs(5)), Some(Transition::Unavailable));
        assert_eq!(tracker.observe("back", false, start), None);
        assert_eq!(tracker.observe("back", true, start + Duration::from_secs(1)), Some(Transition::Available));
        tracker.retain(|name| name == "back");
        assert_eq!(tracker.observe("dead", false, start + Duration::from_secs(6)), None, "forgotten: grace again");
    }

    #[test]
    fn only_workspaces_still_in_the_expected_phase_move() {
        let condition = condition_unavailable("shard-2", Duration::from_secs(30));
        let ready = json!({"metadata": {"name": "w"}, "status": {"phase": "Ready", "conditions": [
            {"type": "WorkspaceScheduled", "status": "True", "lastTransitionTime": "t0"}]}});
        let moved = with_phase(&ready, "Ready", PHASE_UNAVAILABLE, &condition);
        assert_eq!(moved["status"]["phase"], PHASE_UNAVAILABLE);
        let conditions = moved["status"]["conditions"].as_array().unwrap();
        assert_eq!(conditions[0]["lastTransitionTime"], "t0", "other conditions are kept");
        assert_eq!(conditions[1]["reason"], "ShardUnavailable");
        let initializing = json!({"metadata": {"name": "w"}, "status": {"phase": "Initializing"}});
        assert_eq!(with_phase(&initializing, "Ready", PHASE_UNAVAILABLE, &condition), initializing);
        let mut deleting = ready.clone();
        deleting["metadata"]["deletionTimestamp"] = json!("t1");
        assert_eq!(with_phase(&deleting, "Ready", PHASE_UNAVAILABLE, &condition), deleting);
    }
}
