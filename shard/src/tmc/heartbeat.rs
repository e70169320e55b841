//! SyncTarget status as kcp's heartbeat controller keeps it: a SyncTarget whose agent has
//! not written `status.lastSyncerHeartbeatTime` within the threshold is not Ready
//! (`HeartbeatHealthy` and `Ready` False, reason `ErrorHeartbeat`), and is Ready again
//! with the next heartbeat. The status also lists one sync view per shard of the
//! installation (`status.virtualWorkspaces[].syncerURL`), so the agent finds every shard
//! whose workspaces may place namespaces on it.

use super::Settings;
use crate::state::Shard;
use apiserver::registry::ResourceType;
use apiserver::storage::{self, ObjectRef, WriteOptions};
use protocol::meta;
use protocol::types::{ERROR_HEARTBEAT_MISSED_REASON, HEARTBEAT_HEALTHY_CONDITION, SYNC_TARGET_READY_CONDITION};
use serde_json::{json, Value};

/// The path of the sync view of SyncTarget `name` in logical cluster `cluster` on a shard
/// (`<shard URL><path>` is a Kubernetes API base the agent lists and watches under).
pub fn view_path(cluster: &str, name: &str) -> String {
    format!("/services/syncer/{cluster}/{name}")
}

/// Writes `target`'s conditions and sync views when they should change.
pub async fn reconcile(
    shard: &Shard,
    rt: &ResourceType,
    cluster: &str,
    target: &Value,
    settings: Settings,
) -> anyhow::Result<()> {
    if meta::is_deleting(target) {
        return Ok(());
    }
    let name = meta::name(target).unwrap_or_default();
    // Each shard's external URL with its `/shards/<name>` prefix: a view is served by one
    // shard, and the front-proxy (an installation's usual external URL) routes the prefix
    // to it, as a shard addressed directly accepts its own.
    let base = |external: &str, name: &str| format!("{}/shards/{name}", external.trim_end_matches('/'));
    let mut shards: Vec<String> =
        shard.membership.current().iter().map(|info| base(&info.external_url, &info.name)).collect();
    if shards.is_empty() {
        shards.push(base(&shard.external_url, &shard.name));
    }
    let views: Vec<String> = shards.iter().map(|url| format!("{url}{}", view_path(cluster, name))).collect();
    let wanted = status(target, &views, settings, jiff::Timestamp::now());
    let current = target.get("status").cloned().unwrap_or_else(|| json!({}));
    if apiserver::conditions::same_status(&current, &wanted) {
        return Ok(());
    }
    let at = ObjectRef { cluster, namespace: None, name };
    storage::guaranteed_update(shard, rt, &at, Some("status"), WriteOptions::default(), |old| {
        let mut new = old.clone();
        let old_status = old.get("status").cloned().unwrap_or_else(|| json!({}));
        let mut merged = status(old, &views, settings, jiff::Timestamp::now());
        merged["conditions"] =
            apiserver::conditions::with_transition_times(Some(&old_status), &merged)["conditions"].clone();
        new["status"] = merged;
        Ok(new)
    })
    .await
    .map_err(|e| anyhow::anyhow!(e.message))?;
    Ok(())
}

/// `target`'s status with its heartbeat conditions and sync views at `now`: everything
/// else the agent wrote is kept, and other conditions too. Pure.
pub fn status(target: &Value, views: &[String], settings: Settings, now: jiff::Timestamp) -> Value {
    let mut status = target.get("status").cloned().filter(Value::is_object).unwrap_or_else(|| json!({}));
    let heartbeat =
        status.get("lastSyncerHeartbeatTime").and_then(Value::as_str).and_then(|t| t.parse::<jiff::Timestamp>().ok());
    let threshold = settings.heartbeat_threshold.as_secs_f64();
    let healthy = match heartbeat {
        None => Err("No heartbeat yet seen".to_string()),
        Some(at) if at.duration_until(now).as_secs_f64() > threshold => {
            Err(format!("No heartbeat since {at} (more than {threshold}s)"))
        }
        Some(_) => Ok(()),
    };
    let condition = |kind: &str| match &healthy {
        Ok(()) => json!({"type": kind, "status": "True"}),
        Err(message) => json!({"type": kind, "status": "False", "reason": ERROR_HEARTBEAT_MISSED_REASON,
            "severity": "Error", "message": message}),
    };
    let mut conditions: Vec<Value> =
        vec![condition(SYNC_TARGET_READY_CONDITION), condition(HEARTBEAT_HEALTHY_CONDITION)];
    let others = status.get("conditions").and_then(Value::as_array).cloned().unwrap_or_default();
    conditions.extend(others.into_iter().filter(|c| {
        let kind = c.get("type").and_then(Value::as_str).unwrap_or_default();
        kind != SYNC_TARGET_READY_CONDITION && kind != HEARTBEAT_HEALTHY_CONDITION
    }));
    status["conditions"] = Value::Array(conditions);
    status["virtualWorkspaces"] = views.iter().map(|url| json!({"syncerURL": url})).collect();
    status
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn ready_follows_the_heartbeat_and_views_are_listed() {
        let settings = Settings { heartbeat_threshold: Duration::from_secs(60), ..Settings::default() };
        let now: jiff::Timestamp = "2026-01-01T00:10:00Z".parse().unwrap();
        let views = ["https://a/services/syncer/c/t".to_string()];
        let never = status(&json!({}), &views, settings, now);
        assert_eq!(never["conditions"][0]["status"], "False");
        assert_eq!(never["conditions"][0]["reason"], "ErrorHeartbeat");
        assert_eq!(never["virtualWorkspaces"], json!([{"syncerURL": "https://a/services/syncer/c/t"}]));
        let fresh = json!({"status": {"lastSyncerHeartbeatTime": "2026-01-01T00:09:30Z",
            "conditions": [{"type": "SyncerAuthorized", "status": "True"}], "capacity": {"cpu": "4"}}});
        let ready = status(&fresh, &views, settings, now);
        assert_eq!(ready["conditions"][0], json!({"type": "Ready", "status": "True"}));
        assert_eq!(ready["conditions"][2]["type"], "SyncerAuthorized");
        assert_eq!(ready["capacity"]["cpu"], "4");
        let stale = json!({"status": {"lastSyncerHeartbeatTime": "2026-01-01T00:08:00Z"}});
        assert_eq!(status(&stale, &views, settings, now)["conditions"][1]["status"], "False");
    }
}
