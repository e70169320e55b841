//! The MemberCluster's heartbeat: the agent's status on the hub (Joined, or Left once the
//! applier removed everything while leaving, and Healthy) and, while joined, the member's
//! properties and resource usage ([`properties`]), every period, as KubeFleet's agent
//! reports them with each heartbeat. It also tells the applier when the MemberCluster is
//! being deleted.

use super::{manifest, now, properties, status, to_value, DEFAULT_HEARTBEAT_SECONDS};
use anyhow::Context;
use kube::api::{Api, DynamicObject, Patch, PatchParams};
use kube::Client;
use serde_json::{json, Map, Value};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tracing::Instrument;

/// How long one heartbeat waits for the member's Nodes and Pods: a slow member must not
/// hold the heartbeat back until the hub counts the agent as gone (KubeFleet gives a
/// property provider the same 10 seconds).
const COLLECTION_TIMEOUT: Duration = Duration::from_secs(10);

/// The MemberCluster's heartbeat.
pub(super) struct Heartbeat {
    pub(super) members: Api<DynamicObject>,
    pub(super) name: String,
    /// The member cluster, whose Nodes and Pods are summed.
    pub(super) member: Client,
    /// The period when the command line sets it.
    pub(super) every: Option<Duration>,
    /// Set while the MemberCluster is being deleted.
    pub(super) leaving: Arc<AtomicBool>,
    /// Set by the applier once it removed what it applied, while leaving.
    pub(super) left: Arc<AtomicBool>,
}

impl Heartbeat {
    /// One heartbeat; returns the wait until the next.
    pub(super) async fn beat(&self) -> Duration {
        let default = self.every.unwrap_or(Duration::from_secs(DEFAULT_HEARTBEAT_SECONDS));
        let span = crate::traced::work_span("membercluster.heartbeat", "memberclusters", None, None, &self.name);
        let reported = self.report().instrument(span.clone()).await;
        let _logged_in_span = span.enter();
        match reported {
            Ok(Some(period)) => self.every.unwrap_or(period),
            Ok(None) => {
                tracing::info!(member_cluster = %self.name, "the MemberCluster does not exist; looking again next period");
                default
            }
            Err(error) => {
                crate::traced::failed();
                tracing::warn!(error = %format!("{error:#}"), "the heartbeat failed; trying again next period");
                default
            }
        }
    }

    /// Reports the agent Joined (or Left) and Healthy, and the member's properties while
    /// joined; returns the MemberCluster's heartbeat period, or `None` when there is no
    /// MemberCluster.
    async fn report(&self) -> anyhow::Result<Option<Duration>> {
        let Some(cluster) = self.members.get_opt(&self.name).await.context("read the MemberCluster")? else {
            return Ok(None);
        };
        let cluster = to_value(&cluster);
        let leaving = manifest::deleting(&cluster);
        if self.leaving.swap(leaving, Ordering::Relaxed) != leaving && leaving {
            tracing::info!(member_cluster = %self.name, "the MemberCluster is being deleted: leaving, no Work is applied any more");
        }
        if !leaving {
            // A MemberCluster of the same name made again: join it afresh.
            self.left.store(false, Ordering::Relaxed);
        }
        let left = leaving && self.left.load(Ordering::Relaxed);
        let now = now();
        let mut fields = Map::new();
        fields.insert("agentStatus".into(), status::agent_status(&cluster, left, &now));
        // KubeFleet's agent collects properties while joined only; a failure to read the
        // member must not stop the heartbeat, which says the agent is alive.
        if !leaving {
            match tokio::time::timeout(COLLECTION_TIMEOUT, properties::collect(&self.member, &now)).await {
                Ok(Ok(Some(reported))) => fields.extend(reported),
                Ok(Ok(None)) => {}
                Ok(Err(error)) => {
                    tracing::warn!(error = %format!("{error:#}"), "collecting the member's properties failed")
                }
                Err(_) => tracing::warn!(
                    timeout_seconds = COLLECTION_TIMEOUT.as_secs(),
                    "collecting the member's properties took too long; the heartbeat goes without them"
                ),
            }
        }
        let patch = json!({"status": fields});
        self.members
            .patch_status(&self.name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .context("write the heartbeat")?;
        let seconds = cluster.pointer("/spec/heartbeatPeriodSeconds").and_then(Value::as_u64);
        Ok(Some(Duration::from_secs(seconds.filter(|s| *s > 0).unwrap_or(DEFAULT_HEARTBEAT_SECONDS))))
    }
}
