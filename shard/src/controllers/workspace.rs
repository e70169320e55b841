//! The workspace scheduler, on the shard that hosts the Workspace objects.
//!
//! Optimistic, consistent-hash scheduling: draw a random logical-cluster name, map it to
//! a shard on the ring, record the draw on the Workspace (so a restart resumes it), and
//! create the LogicalCluster there, owned by the Workspace's UID. A LogicalCluster of that
//! name owned by someone else means another draw; an unreachable shard means a back-off,
//! a note that the shard is suspect for a while, and another draw. The Workspace then
//! goes Initializing → Ready: the remote LogicalCluster is checked with exponential
//! back-off (never watched across shards) until its initializers are gone.
//!
//! Deleting a Workspace deletes its LogicalCluster on the other shard, and the
//! Workspace's finalizer goes only once that cluster is gone, nested workspaces included
//! (the other shard's logical-cluster controller deletes those first).

use super::for_each_object;
use crate::metrics::RetryLabels;
use crate::peer::PeerError;
use crate::state::Shard;
use crate::tenancy::rows::TenancyRows;
use crate::tenancy::{self, clusters};
use apiserver::rest::status::ApiResult;
use apiserver::storage::{self, ObjectRef, WriteOptions};
use apiserver::strategy::UNRESTRICTED_WRITE as SCHEDULER_WRITE;
use parking_lot::Mutex;
use protocol::meta;
use protocol::wellknown::{
    CLUSTER_ANNOTATION, SCHEDULED_CLUSTER_ANNOTATION, SCHEDULED_SHARD_ANNOTATION, WORKSPACE_FINALIZER,
};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tracing::Instrument;

/// First wait between checks of a remote cluster; doubles up to [`BACKOFF_MAX`].
const BACKOFF_START: Duration = Duration::from_millis(20);
/// Longest wait between checks of a remote cluster.
const BACKOFF_MAX: Duration = Duration::from_secs(2);
/// How long a shard that did not answer is avoided by new draws.
const SUSPECT_FOR: Duration = Duration::from_secs(10);

/// Shards that recently failed to answer.
#[derive(Debug, Default)]
struct Suspects(Mutex<HashMap<String, Instant>>);

impl Suspects {
    fn mark(&self, shard: &str) {
        self.0.lock().insert(shard.to_string(), Instant::now());
    }

    fn contains(&self, shard: &str) -> bool {
        self.0.lock().get(shard).is_some_and(|since| since.elapsed() < SUSPECT_FOR)
    }
}

/// One worker per workspace at a time; events for a busy key mark it to run again.
#[derive(Debug, Default)]
struct Workers(Mutex<HashMap<String, bool>>);

impl Workers {
    /// True when the caller must start a worker for `key`.
    fn offer(&self, key: &str) -> bool {
        let mut busy = self.0.lock();
        match busy.get_mut(key) {
            Some(again) => {
                *again = true;
                false
            }
            None => {
                busy.insert(key.to_string(), false);
                true
            }
        }
    }

    /// Called by a finished worker: true when it must run once more.
    fn finish(&self, key: &str) -> bool {
        let mut busy = self.0.lock();
        match busy.get_mut(key) {
            Some(again) if *again => {
                *again = false;
                true
            }
            _ => {
                busy.remove(key);
                false
            }
        }
    }
}

/// Watches the Workspaces of every cluster on this shard and drives each to Ready, or
/// away when deleted.
pub async fn run(shard: Arc<Shard>) {
    let rt = shard.registry.workspaces();
    let workers = Arc::new(Workers::default());
    let suspects = Arc::new(Suspects::default());
    for_each_object(shard.clone(), rt, move |workspace, cause| {
        if !needs_work(&workspace) {
            return;
        }
        let Some(cluster) = meta::annotations(&workspace).get(CLUSTER_ANNOTATION).cloned() else { return };
        let name = meta::name(&workspace).unwrap_or_default().to_string();
        let key = format!("{cluster}/{name}");
        if !workers.offer(&key) {
            return;
        }
        let (shard, workers, suspects) = (shard.clone(), workers.clone(), suspects.clone());
        // The first pass continues the trace of the write that queued it (the user's
        // `kubectl create workspace`): its peer call shows the scheduling on the target
        // shard in that trace.
        let mut cause = cause;
        tokio::spawn(async move {
            loop {
                let span = super::reconcile_span("workspace.reconcile", &cluster, &name, cause.take());
                reconcile(&shard, &suspects, &cluster, &name).instrument(span).await;
                if !workers.finish(&key) {
                    break;
                }
            }
        });
    })
    .await;
}

fn needs_work(workspace: &Value) -> bool {
    if meta::is_deleting(workspace) {
        return meta::finalizers(workspace).iter().any(|f| f == WORKSPACE_FINALIZER);
    }
    !is_placed(workspace)
}

/// Ready, or Ready on a shard that does not answer (`super::shard_health` moves it
/// between the two): the scheduler is done with it, and must not draw it anew.
fn is_placed(workspace: &Value) -> bool {
    matches!(
        workspace.pointer("/status/phase").and_then(Value::as_str),
        Some("Ready" | super::shard_health::PHASE_UNAVAILABLE)
    )
}

/// What a reconcile step asks for next.
enum Next {
    /// Run the next step now.
    Now,
    /// Wait (backing off) and look again.
    Later,
    /// Nothing more to do.
    Done,
}

async fn reconcile(shard: &Shard, suspects: &Suspects, cluster: &str, name: &str) {
    let rt = shard.registry.workspaces();
    let at = ObjectRef { cluster, namespace: None, name };
    let mut backoff = BACKOFF_START;
    loop {
        let workspace = match storage::get(shard, &rt, &at) {
            Ok((workspace, _)) => workspace,
            Err(e) if e.is_not_found() => return,
            Err(e) => {
                tracing::warn!(error = %e.message, "reading the workspace failed");
                Value::Null
            }
        };
        let next = if workspace.is_null() {
            Ok(Next::Later)
        } else if meta::is_deleting(&workspace) {
            finalize(shard, &at, &workspace).await
        } else {
            match workspace.pointer("/status/phase").and_then(Value::as_str) {
                _ if is_placed(&workspace) => Ok(Next::Done),
                Some("Initializing") => check_initialized(shard, &at, &workspace).await,
                _ => schedule(shard, suspects, &at, &workspace).await,
            }
        };
        match next {
            Ok(Next::Now) => backoff = BACKOFF_START,
            Ok(Next::Done) => return,
            Ok(Next::Later) => {
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(BACKOFF_MAX);
            }
            Err(e) => {
                tracing::warn!(code = e.code, error = %e.message, "workspace step failed; retrying");
                retried(shard, "failed");
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(BACKOFF_MAX);
            }
        }
    }
}

/// Where the scheduler put (or is putting) the workspace: cluster name and shard name.
fn placement(workspace: &Value) -> Option<(String, String)> {
    let annotations = meta::annotations(workspace);
    let cluster = annotations.get(SCHEDULED_CLUSTER_ANNOTATION)?;
    let shard = annotations.get(SCHEDULED_SHARD_ANNOTATION)?;
    Some((cluster.clone(), shard.clone()))
}

/// Draws a new logical-cluster name and its shard (avoiding suspect shards), and records
/// them on the workspace.
async fn draw(shard: &Shard, suspects: &Suspects, at: &ObjectRef<'_>) -> ApiResult<Next> {
    let Some((cluster, target)) = tenancy::draw(shard, |s| suspects.contains(s)) else {
        tracing::info!("no shard known yet; waiting for the shard set");
        return Ok(Next::Later);
    };
    tracing::debug!(%cluster, %target, "drew a logical cluster");
    scheduler_write(shard, at, |workspace| tenancy::record_draw(workspace, &cluster, &target)).await?;
    Ok(Next::Now)
}

async fn schedule(shard: &Shard, suspects: &Suspects, at: &ObjectRef<'_>, workspace: &Value) -> ApiResult<Next> {
    let Some((cluster, target)) = placement(workspace) else { return draw(shard, suspects, at).await };
    let set = shard.membership.current();
    let Some(info) = set.shard(&target) else {
        tracing::info!(%target, "the drawn shard left the installation; drawing again");
        retried(shard, "redraw");
        return draw(shard, suspects, at).await;
    };
    let parent = tenancy::parent(shard, at.cluster)?;
    let body = tenancy::logical_cluster_for(workspace, &parent);
    let logical_cluster = match clusters::create(shard, info, &cluster, &body).await {
        Ok(lc) => lc,
        Err(e) if e.is_already_exists() => match clusters::get(shard, info, &cluster).await {
            Ok(existing) if tenancy::owned_by(&existing, workspace) => existing,
            Ok(_) => {
                tracing::info!(%cluster, %target, "logical cluster name taken by someone else; drawing again");
                retried(shard, "redraw");
                return draw(shard, suspects, at).await;
            }
            Err(error) => return peer_failed(shard, suspects, at, &target, error).await,
        },
        Err(error) => return peer_failed(shard, suspects, at, &target, error).await,
    };
    let ready = logical_cluster.pointer("/status/phase").and_then(Value::as_str) == Some("Ready");
    let url = format!("{}/clusters/{cluster}", info.external_url);
    scheduler_write(shard, at, |workspace| {
        workspace["spec"]["cluster"] = Value::from(cluster.as_str());
        workspace["spec"]["URL"] = Value::from(url.as_str());
        let status = workspace.as_object_mut().expect("objects").entry("status").or_insert_with(|| json!({}));
        status["phase"] = Value::from(if ready { "Ready" } else { "Initializing" });
        status["conditions"] =
            json!([condition("WorkspaceScheduled", "True", "Scheduled", &format!("scheduled onto shard {target}"))]);
        if ready {
            status["initializers"] = json!([]);
        }
    })
    .await?;
    tracing::info!(%cluster, %target, ready, "scheduled the workspace");
    if ready {
        observe_ready(shard, workspace);
    }
    Ok(if ready { Next::Done } else { Next::Now })
}

/// A failed call to the target shard: an unreachable shard is avoided for a while and
/// the workspace drawn again; a refusal is retried later.
async fn peer_failed(
    shard: &Shard,
    suspects: &Suspects,
    at: &ObjectRef<'_>,
    target: &str,
    error: PeerError,
) -> ApiResult<Next> {
    match error {
        PeerError::Unreachable { .. } => {
            tracing::info!(%error, %target, "target shard unreachable; drawing again after a back-off");
            retried(shard, "unreachable");
            suspects.mark(target);
            draw(shard, suspects, at).await?;
            Ok(Next::Later)
        }
        PeerError::Status { .. } => {
            tracing::warn!(%error, %target, "target shard refused the logical cluster; retrying");
            retried(shard, "refused");
            Ok(Next::Later)
        }
    }
}

/// Initializing: look at the remote LogicalCluster; Ready once its initializers are gone.
async fn check_initialized(shard: &Shard, at: &ObjectRef<'_>, workspace: &Value) -> ApiResult<Next> {
    let Some((cluster, target)) = placement(workspace) else { return Ok(Next::Later) };
    let Some(info) = shard.membership.current().shard(&target).cloned() else { return Ok(Next::Later) };
    let logical_cluster = match clusters::get(shard, &info, &cluster).await {
        Ok(lc) => lc,
        Err(error) => {
            tracing::debug!(%error, "checking the logical cluster failed");
            return Ok(Next::Later);
        }
    };
    let pending = logical_cluster.pointer("/status/initializers").cloned().unwrap_or_else(|| json!([]));
    let ready = logical_cluster.pointer("/status/phase").and_then(Value::as_str) == Some("Ready");
    if !ready && workspace.pointer("/status/initializers") == Some(&pending) {
        return Ok(Next::Later);
    }
    scheduler_write(shard, at, |workspace| {
        workspace["status"]["initializers"] = pending.clone();
        if ready {
            workspace["status"]["phase"] = Value::from("Ready");
        }
    })
    .await?;
    if ready {
        observe_ready(shard, workspace);
    }
    Ok(if ready { Next::Done } else { Next::Later })
}

/// Records the time from the workspace's creation until now, when it went Ready.
fn observe_ready(shard: &Shard, workspace: &Value) {
    let created = workspace.pointer("/metadata/creationTimestamp").and_then(Value::as_str);
    let Some(created) = created.and_then(|c| c.parse::<jiff::Timestamp>().ok()) else { return };
    let seconds = jiff::Timestamp::now().duration_since(created).as_secs_f64();
    shard.metrics.workspace_scheduling_seconds.observe(seconds.max(0.0));
}

/// Counts a scheduling step tried again.
fn retried(shard: &Shard, reason: &'static str) {
    shard.metrics.workspace_scheduling_retries.get_or_create(&RetryLabels { reason }).inc();
}

/// Deleting: delete the LogicalCluster on its shard, wait until it is gone, then let the
/// Workspace go.
async fn finalize(shard: &Shard, at: &ObjectRef<'_>, workspace: &Value) -> ApiResult<Next> {
    if !meta::finalizers(workspace).iter().any(|f| f == WORKSPACE_FINALIZER) {
        return Ok(Next::Done);
    }
    if let Some((cluster, target)) = placement(workspace) {
        match shard.membership.current().shard(&target).cloned() {
            Some(info) => match clusters::get(shard, &info, &cluster).await {
                Err(e) if e.is_not_found() => {}
                Ok(lc) if !tenancy::owned_by(&lc, workspace) => {}
                Ok(lc) => {
                    if !meta::is_deleting(&lc) {
                        if let Err(error) = clusters::delete(shard, &info, &cluster).await {
                            tracing::debug!(%error, "deleting the logical cluster failed");
                        }
                    }
                    return Ok(Next::Later);
                }
                Err(error) => {
                    tracing::debug!(%error, "checking the logical cluster failed");
                    return Ok(Next::Later);
                }
            },
            None => {
                tracing::warn!(%target, %cluster, "the workspace's shard left the installation; its cluster is abandoned")
            }
        }
    }
    let rt = shard.registry.workspaces();
    match storage::remove_finalizer(shard, &rt, at, WORKSPACE_FINALIZER).await {
        Ok(_) => Ok(Next::Done),
        Err(e) if e.is_not_found() => Ok(Next::Done),
        Err(e) => Err(e),
    }
}

/// Writes spec, status and annotations of a workspace together, as only the scheduler may.
async fn scheduler_write<F>(shard: &Shard, at: &ObjectRef<'_>, change: F) -> ApiResult<Value>
where
    F: Fn(&mut Value),
{
    let rt = shard.registry.workspaces();
    storage::guaranteed_update(shard, &rt, at, Some(SCHEDULER_WRITE), WriteOptions::default(), |old| {
        let mut new = old.clone();
        change(&mut new);
        Ok(new)
    })
    .await
}

fn condition(kind: &str, status: &str, reason: &str, message: &str) -> Value {
    json!({
        "type": kind,
        "status": status,
        "reason": reason,
        "message": message,
        "lastTransitionTime": storage::now(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn busy_keys_run_again_once_when_offered_meanwhile() {
        let workers = Workers::default();
        assert!(workers.offer("a"));
        assert!(!workers.offer("a"));
        assert!(!workers.offer("a"));
        assert!(workers.finish("a"), "offered while busy: run again");
        assert!(!workers.finish("a"));
        assert!(workers.offer("a"), "idle again");
    }

    #[test]
    fn suspects_expire() {
        let suspects = Suspects::default();
        suspects.mark("s1");
        assert!(suspects.contains("s1"));
        assert!(!suspects.contains("s2"));
    }
}
