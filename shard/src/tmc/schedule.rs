//! Which SyncTarget of its Location a Placement's namespaces go to, as kcp's workload
//! placement scheduler chooses it: a SyncTarget of the Location's workspace that the
//! Location's `instanceSelector` matches, Ready, schedulable, not evicting, and supporting
//! every API the Placement's workspace binds (by identity hash). The scheduling framework
//! (`placement::Profile::kcp_sync_target`) filters and ranks; the current choice (kcp's
//! `internal.workload.kcp.io/synctarget` annotation) is kept while it stays valid; ties
//! go to a stable hash of the Placement, where kcp picked at random. Pure.

use placement::{ApiIdentity, Candidate, Outcome};
use protocol::meta;
use protocol::types::SYNC_TARGET_READY_CONDITION;
use serde_json::Value;

/// A SyncTarget as the framework's candidate. `supported` is what its
/// `supportedAPIExports` (resolved to identities) and accepted `syncedResources` add up
/// to; `None` when it names no export, so it takes built-in resources only.
pub fn candidate(target: &Value, supported: Option<Vec<ApiIdentity>>) -> Candidate {
    let mut candidate = Candidate::new(meta::name(target).unwrap_or_default());
    candidate.labels = meta::labels(target);
    candidate.ready =
        apiserver::conditions::is_true(target.get("status"), SYNC_TARGET_READY_CONDITION) && !meta::is_deleting(target);
    candidate.unschedulable = target.pointer("/spec/unschedulable").and_then(Value::as_bool) == Some(true);
    candidate.evict_after =
        target.pointer("/spec/evictAfter").and_then(Value::as_str).and_then(|t| t.parse::<jiff::Timestamp>().ok());
    candidate.supported_apis = supported;
    candidate
}

/// What the framework chose for one Placement.
#[derive(Debug, Clone, PartialEq)]
pub struct TargetChoice {
    /// The chosen SyncTarget's name, if any is valid.
    pub name: Option<String>,
    /// Why each SyncTarget was rejected, for the Placement's condition when none is left.
    pub rejected: Vec<String>,
    /// When the choice may stop being valid (an eviction starts): look again then.
    pub requeue_at: Option<jiff::Timestamp>,
}

/// Chooses a SyncTarget among `candidates` (the SyncTargets of the Location's workspace)
/// for the Placement keyed `placement_key`, whose current choice is the SyncTarget named
/// `current` (if any), given the Location's `instanceSelector` and the APIs its workspace
/// binds.
pub fn choose_target(
    placement_key: &str,
    current: Option<&str>,
    instance_selector: Option<&Value>,
    candidates: &[Candidate],
    bound: Vec<ApiIdentity>,
    now: jiff::Timestamp,
) -> anyhow::Result<TargetChoice> {
    // A Location without an instanceSelector selects no SyncTarget, as in kcp.
    let Some(selector) = instance_selector.filter(|s| !s.is_null()) else {
        return Ok(TargetChoice {
            name: None,
            rejected: vec!["the Location has no instanceSelector".into()],
            requeue_at: None,
        });
    };
    let term = placement::SelectorTerm {
        label_selector: Some(serde_json::from_value(selector.clone())?),
        ..Default::default()
    };
    let policy = placement::Policy {
        number: placement::Number::N(1),
        required: Some(vec![term]),
        bound_apis: bound,
        tie_break_key: placement_key.to_string(),
        ..Default::default()
    };
    let mut state = placement::State::at(now);
    state.current.extend(current.map(str::to_string));
    let decision = placement::decide(&placement::Profile::kcp_sync_target(), &policy, candidates, &state)?;
    let rejected = decision
        .clusters
        .iter()
        .filter(|report| report.outcome == Outcome::Rejected)
        .map(|report| format!("SyncTarget {}: {}", report.name, report.reason))
        .collect();
    Ok(TargetChoice { name: decision.desired.into_iter().next(), rejected, requeue_at: decision.requeue_at })
}

/// The APIs a workspace's APIBindings bind, by group, resource and identity hash (kcp's
/// own groups are served by every shard and never synced, so they do not count).
pub fn bound_apis(bindings: &[Value]) -> Vec<ApiIdentity> {
    let mut apis: Vec<ApiIdentity> = bindings
        .iter()
        .filter(|binding| !meta::is_deleting(binding))
        .flat_map(|binding| {
            binding.pointer("/status/boundResources").and_then(Value::as_array).cloned().unwrap_or_default()
        })
        .filter_map(|resource| {
            let text = |pointer: &str| resource.pointer(pointer).and_then(Value::as_str).map(str::to_string);
            let group = text("/group").unwrap_or_default();
            (!group.ends_with(".kcp.io")).then_some(ApiIdentity {
                group,
                resource: text("/resource")?,
                identity_hash: text("/schema/identityHash")?,
            })
        })
        .collect();
    apis.sort();
    apis.dedup();
    apis
}

/// The APIs a SyncTarget's syncer reports as accepted in `status.syncedResources`.
pub fn synced_apis(target: &Value) -> Vec<ApiIdentity> {
    let resources = target.pointer("/status/syncedResources").and_then(Value::as_array);
    resources
        .into_iter()
        .flatten()
        .filter(|r| r.get("state").and_then(Value::as_str) == Some(protocol::types::RESOURCE_SCHEMA_ACCEPTED_STATE))
        .filter_map(|r| {
            let text = |field: &str| r.get(field).and_then(Value::as_str).map(str::to_string);
            Some(ApiIdentity {
                group: text("group").unwrap_or_default(),
                resource: text("resource")?,
                identity_hash: text("identityHash").filter(|h| !h.is_empty())?,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn target(name: &str, cloud: &str, ready: bool, spec: Value) -> Value {
        let status = if ready { "True" } else { "False" };
        json!({"metadata": {"name": name, "labels": {"cloud": cloud}}, "spec": spec,
            "status": {"conditions": [{"type": "Ready", "status": status}]}})
    }

    fn widgets(hash: &str) -> ApiIdentity {
        ApiIdentity { group: "example.com".into(), resource: "widgets".into(), identity_hash: hash.into() }
    }

    #[test]
    fn a_valid_target_is_chosen_kept_and_replaced_when_it_goes() {
        let now: jiff::Timestamp = "2026-01-01T00:00:00Z".parse().unwrap();
        let selector = json!({"matchLabels": {"cloud": "aws"}});
        let candidates = vec![
            candidate(&target("a", "aws", true, json!({})), None),
            candidate(&target("b", "aws", true, json!({})), None),
            candidate(&target("c", "aws", false, json!({})), None),
            candidate(&target("g", "gce", true, json!({})), None),
        ];
        let first = choose_target("ws/p", None, Some(&selector), &candidates, vec![], now).unwrap();
        let name = first.name.clone().expect("a target");
        assert!(name == "a" || name == "b", "{name}");
        assert!(
            first.rejected.iter().any(|r| r.contains("SyncTarget c: rejected by Schedulable: not Ready")),
            "{:?}",
            first.rejected
        );
        // The same inputs make the same choice; a valid current choice is kept.
        assert_eq!(choose_target("ws/p", None, Some(&selector), &candidates, vec![], now).unwrap(), first);
        let other = if name == "a" { "b" } else { "a" };
        let kept = choose_target("ws/p", Some(other), Some(&selector), &candidates, vec![], now).unwrap();
        assert_eq!(kept.name.as_deref(), Some(other));
        // A current choice that is no longer Ready is replaced.
        let replaced = choose_target("ws/p", Some("c"), Some(&selector), &candidates, vec![], now).unwrap();
        assert!(matches!(replaced.name.as_deref(), Some("a" | "b")));
        // No instanceSelector: nothing.
        assert_eq!(choose_target("ws/p", None, None, &candidates, vec![], now).unwrap().name, None);
    }

    #[test]
    fn bound_apis_need_a_target_that_supports_them_by_identity() {
        let now = jiff::Timestamp::UNIX_EPOCH;
        let selector = json!({});
        let binding = json!({"status": {"boundResources": [
            {"group": "example.com", "resource": "widgets", "schema": {"identityHash": "h1"}},
            {"group": "tenancy.kcp.io", "resource": "workspaces", "schema": {"identityHash": "sys"}}]}});
        let bound = bound_apis(&[binding]);
        assert_eq!(bound, vec![widgets("h1")]);
        let plain = candidate(&target("plain", "aws", true, json!({})), None);
        let wrong = candidate(&target("wrong", "aws", true, json!({})), Some(vec![widgets("h2")]));
        let right = candidate(&target("right", "aws", true, json!({})), Some(vec![widgets("h1")]));
        let all = [plain.clone(), wrong, right];
        let choice = choose_target("ws/p", None, Some(&selector), &all, bound.clone(), now).unwrap();
        assert_eq!(choice.name.as_deref(), Some("right"));
        let none = choose_target("ws/p", None, Some(&selector), &all[..2], bound, now).unwrap();
        assert_eq!(none.name, None);
        assert_eq!(none.rejected.len(), 2, "{:?}", none.rejected);
        // Built-in resources need no binding: a target without exports takes the workspace.
        let builtin = choose_target("ws/p", None, Some(&selector), &[plain], vec![], now).unwrap();
        assert_eq!(builtin.name.as_deref(), Some("plain"));
    }

    #[test]
    fn synced_resources_count_when_accepted() {
        let target = json!({"status": {"syncedResources": [
            {"group": "example.com", "resource": "widgets", "identityHash": "h1", "state": "Accepted"},
            {"group": "example.com", "resource": "gadgets", "identityHash": "h3", "state": "Incompatible"}]}});
        assert_eq!(synced_apis(&target), vec![widgets("h1")]);
    }
}
