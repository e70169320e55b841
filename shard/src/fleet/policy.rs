//! From Fleet's objects to the scheduling framework's inputs, pure: a
//! ClusterResourcePlacement's `spec.policy` becomes a [`placement::Policy`], a
//! MemberCluster a [`placement::Candidate`] (eligible as KubeFleet's scheduler judges it:
//! not leaving, its member agent joined and heard from recently).

use placement::{Candidate, Number, Policy, PreferredTerm, Quantity, SelectorTerm, SpreadConstraint, Toleration};
use protocol::meta;
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::time::Duration;

/// The prefix of Fleet's resource property names, `[PREFIX]/[CAPACITY_TYPE]-[RESOURCE]`,
/// which KubeFleet's scheduler derives from a member's resource usage.
pub(crate) const RESOURCE_PROPERTY_PREFIX: &str = "resources.kubernetes-fleet.io/";

/// The placement type of a policy (`spec.policy.placementType`; no policy is PickAll).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PlacementType {
    PickAll,
    PickN,
    PickFixed,
}

impl PlacementType {
    pub fn of(policy: Option<&Value>) -> PlacementType {
        match policy.and_then(|p| p.get("placementType")).and_then(Value::as_str) {
            Some("PickN") => PlacementType::PickN,
            Some("PickFixed") => PlacementType::PickFixed,
            _ => PlacementType::PickAll,
        }
    }
}

/// The clusters a policy asks for: `None` for PickAll.
pub fn wanted(policy: Option<&Value>) -> Option<usize> {
    match PlacementType::of(policy) {
        PlacementType::PickAll => None,
        PlacementType::PickN => Some(number_of_clusters(policy) as usize),
        PlacementType::PickFixed => Some(cluster_names(policy).len()),
    }
}

fn number_of_clusters(policy: Option<&Value>) -> u32 {
    policy.and_then(|p| p.get("numberOfClusters")).and_then(Value::as_u64).unwrap_or(0) as u32
}

fn cluster_names(policy: Option<&Value>) -> Vec<String> {
    let names = policy.and_then(|p| p.get("clusterNames")).and_then(Value::as_array);
    names.into_iter().flatten().filter_map(Value::as_str).map(str::to_string).collect()
}

fn parse<T: DeserializeOwned>(value: &Value, what: &str) -> Result<T, String> {
    serde_json::from_value(value.clone()).map_err(|e| format!("{what}: {e}"))
}

/// The framework's policy for a placement named `crp` with Fleet policy `policy`.
/// Errors name the field a person must fix.
pub fn policy(crp: &str, policy: Option<&Value>) -> Result<Policy, String> {
    let kind = PlacementType::of(policy);
    let number = match kind {
        PlacementType::PickAll => Number::All,
        PlacementType::PickN => Number::N(number_of_clusters(policy)),
        PlacementType::PickFixed => Number::Fixed(cluster_names(policy)),
    };
    let mut out = Policy { number, tie_break_key: crp.to_string(), ..Policy::default() };
    let Some(policy) = policy else { return Ok(out) };
    let affinity = policy.pointer("/affinity/clusterAffinity");
    if let Some(terms) =
        affinity.and_then(|a| a.pointer("/requiredDuringSchedulingIgnoredDuringExecution/clusterSelectorTerms"))
    {
        let terms = terms.as_array().cloned().unwrap_or_default();
        let mut required = Vec::new();
        for (i, term) in terms.iter().enumerate() {
            let what = format!("spec.policy.affinity.clusterAffinity.requiredDuringSchedulingIgnoredDuringExecution.clusterSelectorTerms[{i}]");
            if term.get("propertySorter").is_some() {
                return Err(format!("{what}: propertySorter is only allowed in preferred terms"));
            }
            required.push(SelectorTerm {
                label_selector: term.get("labelSelector").map(|s| parse(s, &what)).transpose()?,
                claim_selector: None,
                property_selector: term.get("propertySelector").map(|s| parse(s, &what)).transpose()?,
            });
        }
        out.required = Some(required);
    }
    let preferred = affinity.and_then(|a| a.get("preferredDuringSchedulingIgnoredDuringExecution"));
    for (i, term) in preferred.and_then(Value::as_array).into_iter().flatten().enumerate() {
        let what = format!("spec.policy.affinity.clusterAffinity.preferredDuringSchedulingIgnoredDuringExecution[{i}]");
        if term.pointer("/preference/propertySelector").is_some() {
            return Err(format!("{what}: propertySelector is only allowed in required terms"));
        }
        let term: PreferredTerm = parse(term, &what)?;
        if !(-100..=100).contains(&term.weight) {
            return Err(format!("{what}.weight: must be between -100 and 100, not {}", term.weight));
        }
        out.preferred.push(term);
    }
    if kind == PlacementType::PickAll && !out.preferred.is_empty() {
        return Err("spec.policy.affinity: preferred affinity is not allowed with placementType PickAll".to_string());
    }
    for (i, toleration) in policy.get("tolerations").and_then(Value::as_array).into_iter().flatten().enumerate() {
        let toleration: Toleration = parse(toleration, &format!("spec.policy.tolerations[{i}]"))?;
        out.tolerations.push(toleration);
    }
    let spread = policy.get("topologySpreadConstraints").and_then(Value::as_array);
    for (i, constraint) in spread.into_iter().flatten().enumerate() {
        let constraint: SpreadConstraint = parse(constraint, &format!("spec.policy.topologySpreadConstraints[{i}]"))?;
        out.spread.push(constraint);
    }
    if kind == PlacementType::PickFixed && (policy.get("affinity").is_some() || !out.spread.is_empty()) {
        return Err("spec.policy: affinity and topologySpreadConstraints are not allowed with placementType PickFixed"
            .to_string());
    }
    Ok(out)
}

/// Lowercase hex of `bytes` (a digest).
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// How long a member may go unheard, and unhealthy, before it gets no new placements
/// (KubeFleet's scheduler uses five minutes for both).
#[derive(Clone, Copy, Debug)]
pub struct Eligibility {
    pub heartbeat_timeout: Duration,
    pub unhealthy_timeout: Duration,
}

impl Default for Eligibility {
    fn default() -> Self {
        Eligibility { heartbeat_timeout: Duration::from_secs(300), unhealthy_timeout: Duration::from_secs(300) }
    }
}

/// Why a member cannot take new placements, in KubeFleet's order of checks; `None` when
/// it can.
pub fn ineligible(member: &Value, now: jiff::Timestamp, limits: Eligibility) -> Option<String> {
    if meta::is_deleting(member) {
        return Some("cluster has left the fleet".to_string());
    }
    let agents = member.pointer("/status/agentStatus").and_then(Value::as_array);
    let Some(agent) =
        agents.into_iter().flatten().find(|a| a.get("type").and_then(Value::as_str) == Some("MemberAgent"))
    else {
        return Some("cluster has no member agent status yet".to_string());
    };
    let heard =
        agent.get("lastReceivedHeartbeat").and_then(Value::as_str).and_then(|t| t.parse::<jiff::Timestamp>().ok());
    let silent_for = heard.map(|at| now.duration_since(at));
    let too_long = |limit: Duration| jiff::SignedDuration::try_from(limit).unwrap_or(jiff::SignedDuration::MAX);
    match silent_for {
        None => return Some("cluster has never sent a heartbeat".to_string()),
        Some(silent) if silent > too_long(limits.heartbeat_timeout) => {
            return Some(format!("cluster has not sent a heartbeat for {}s", silent.as_secs()));
        }
        _ => {}
    }
    let condition = |kind: &str| {
        let conditions = agent.get("conditions").and_then(Value::as_array);
        conditions.into_iter().flatten().find(|c| c.get("type").and_then(Value::as_str) == Some(kind)).cloned()
    };
    let status = |c: &Value| c.get("status").and_then(Value::as_str) == Some("True");
    if !condition("Joined").is_some_and(|c| status(&c)) {
        return Some("cluster's member agent has not joined".to_string());
    }
    let Some(healthy) = condition("Healthy") else {
        return Some("cluster's member agent reports no health".to_string());
    };
    if !status(&healthy) {
        let since =
            healthy.get("lastTransitionTime").and_then(Value::as_str).and_then(|t| t.parse::<jiff::Timestamp>().ok());
        if since.is_none_or(|at| now.duration_since(at) > too_long(limits.unhealthy_timeout)) {
            return Some("cluster's member agent has been unhealthy for too long".to_string());
        }
    }
    None
}

/// The framework's view of a MemberCluster: labels, taints, properties (its reported
/// properties and `resources.kubernetes-fleet.io/<total|allocatable|available>-<resource>`
/// from its resource usage), and readiness from [`ineligible`].
///
/// As KubeFleet's scheduler reads them: a name under `resources.kubernetes-fleet.io/`
/// comes from `status.resourceUsage` (`capacity` is `total`) and only from there, any
/// other from `status.properties[name].value`; the member agent writes both.
pub fn candidate(member: &Value, now: jiff::Timestamp, limits: Eligibility) -> Candidate {
    let mut candidate = Candidate::new(meta::name(member).unwrap_or_default());
    candidate.labels = meta::labels(member).into_iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    if let Some(properties) = member.pointer("/status/properties").and_then(Value::as_object) {
        for (name, property) in properties.iter().filter(|(name, _)| !name.starts_with(RESOURCE_PROPERTY_PREFIX)) {
            if let Some(q) = property.get("value").and_then(quantity) {
                candidate.properties.insert(name.clone(), q);
            }
        }
    }
    for (field, capacity_type) in [("capacity", "total"), ("allocatable", "allocatable"), ("available", "available")] {
        let usage = member.pointer(&format!("/status/resourceUsage/{field}")).and_then(Value::as_object);
        for (resource, value) in usage.into_iter().flatten() {
            if let Some(q) = quantity(value) {
                candidate.properties.insert(format!("{RESOURCE_PROPERTY_PREFIX}{capacity_type}-{resource}"), q);
            }
        }
    }
    let taints = member.pointer("/spec/taints").and_then(Value::as_array);
    candidate.taints = taints.into_iter().flatten().filter_map(|t| serde_json::from_value(t.clone()).ok()).collect();
    candidate.ready = ineligible(member, now, limits).is_none();
    candidate
}

/// What the scheduler sees of a member (labels, taints, properties, eligibility) as one
/// text: when it changes, placements must be decided again; when only a heartbeat moved,
/// they need not.
pub fn fingerprint(member: &Value, now: jiff::Timestamp, limits: Eligibility) -> String {
    serde_json::to_string(&candidate(member, now, limits)).unwrap_or_default()
}

/// When a member's eligibility may change with no write: its last heartbeat growing too
/// old, or its being unhealthy for too long.
pub fn eligible_until(member: &Value, limits: Eligibility) -> Option<jiff::Timestamp> {
    let agents = member.pointer("/status/agentStatus").and_then(Value::as_array);
    let agent = agents.into_iter().flatten().find(|a| a.get("type").and_then(Value::as_str) == Some("MemberAgent"))?;
    let time = |v: Option<&Value>| v.and_then(Value::as_str).and_then(|t| t.parse::<jiff::Timestamp>().ok());
    let after = |at: jiff::Timestamp, limit: Duration| {
        jiff::SignedDuration::try_from(limit).ok().and_then(|d| at.checked_add(d).ok())
    };
    let heartbeat = time(agent.get("lastReceivedHeartbeat")).and_then(|at| after(at, limits.heartbeat_timeout));
    let conditions = agent.get("conditions").and_then(Value::as_array);
    let unhealthy = conditions
        .into_iter()
        .flatten()
        .find(|c| c.get("type").and_then(Value::as_str) == Some("Healthy"))
        .filter(|c| c.get("status").and_then(Value::as_str) != Some("True"))
        .and_then(|c| time(c.get("lastTransitionTime")))
        .and_then(|at| after(at, limits.unhealthy_timeout));
    heartbeat.into_iter().chain(unhealthy).min()
}

fn quantity(value: &Value) -> Option<Quantity> {
    match value {
        Value::String(text) => Quantity::parse(text).ok(),
        Value::Number(n) => n.as_f64().map(Quantity),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn now() -> jiff::Timestamp {
        "2026-01-01T00:10:00Z".parse().unwrap()
    }

    fn member(heartbeat: &str, joined: &str, healthy: Option<(&str, &str)>) -> Value {
        let mut conditions = vec![json!({"type": "Joined", "status": joined})];
        if let Some((status, since)) = healthy {
            conditions.push(json!({"type": "Healthy", "status": status, "lastTransitionTime": since}));
        }
        json!({"metadata": {"name": "m1", "labels": {"env": "prod"}},
        "spec": {"taints": [{"key": "k", "value": "v", "effect": "NoSchedule"}]},
        "status": {
            "agentStatus": [{"type": "MemberAgent", "lastReceivedHeartbeat": heartbeat, "conditions": conditions}],
            "properties": {"kubernetes-fleet.io/node-count": {"value": "3"}},
            "resourceUsage": {"allocatable": {"cpu": "1500m"}, "capacity": {"memory": "2Gi"}},
        }})
    }

    #[test]
    fn eligibility_follows_kubefleets_checks_in_order() {
        let limits = Eligibility::default();
        let healthy = Some(("True", "2026-01-01T00:00:00Z"));
        let cases = [
            (member("2026-01-01T00:09:00Z", "True", healthy), None),
            (member("2026-01-01T00:04:00Z", "True", healthy), Some("not sent a heartbeat for 360s")),
            (member("2026-01-01T00:09:00Z", "False", healthy), Some("has not joined")),
            (member("2026-01-01T00:09:00Z", "True", None), Some("reports no health")),
            (member("2026-01-01T00:09:00Z", "True", Some(("False", "2026-01-01T00:08:00Z"))), None),
            (member("2026-01-01T00:09:00Z", "True", Some(("False", "2026-01-01T00:01:00Z"))), Some("unhealthy")),
            (json!({"metadata": {"name": "m"}}), Some("no member agent status")),
            (json!({"metadata": {"name": "m", "deletionTimestamp": "2026-01-01T00:00:00Z"}}), Some("left the fleet")),
        ];
        for (member, expected) in cases {
            let got = ineligible(&member, now(), limits);
            match expected {
                None => assert_eq!(got, None, "{member}"),
                Some(part) => assert!(got.as_deref().is_some_and(|g| g.contains(part)), "{got:?} lacks {part:?}"),
            }
        }
    }

    #[test]
    fn a_heartbeat_alone_does_not_change_what_the_scheduler_sees() {
        let limits = Eligibility::default();
        let healthy = Some(("True", "2026-01-01T00:00:00Z"));
        let before = member("2026-01-01T00:09:00Z", "True", healthy);
        let after = member("2026-01-01T00:09:30Z", "True", healthy);
        assert_eq!(fingerprint(&before, now(), limits), fingerprint(&after, now(), limits));
        let silent = member("2026-01-01T00:04:00Z", "True", healthy);
        assert_ne!(fingerprint(&before, now(), limits), fingerprint(&silent, now(), limits));
        let mut relabelled = before.clone();
        relabelled["metadata"]["labels"]["env"] = json!("dev");
        assert_ne!(fingerprint(&before, now(), limits), fingerprint(&relabelled, now(), limits));
        assert_eq!(eligible_until(&before, limits), Some("2026-01-01T00:14:00Z".parse().unwrap()));
        let sick = member("2026-01-01T00:09:00Z", "True", Some(("False", "2026-01-01T00:08:00Z")));
        assert_eq!(eligible_until(&sick, limits), Some("2026-01-01T00:13:00Z".parse().unwrap()));
    }

    #[test]
    fn a_member_becomes_a_candidate_with_its_properties_and_taints() {
        let c = candidate(&member("2026-01-01T00:09:00Z", "True", Some(("True", "x"))), now(), Eligibility::default());
        assert!(c.ready);
        assert_eq!(c.labels.get("env").map(String::as_str), Some("prod"));
        assert_eq!(c.properties["kubernetes-fleet.io/node-count"], Quantity(3.0));
        assert_eq!(c.properties["resources.kubernetes-fleet.io/allocatable-cpu"], Quantity(1.5));
        assert_eq!(
            c.properties["resources.kubernetes-fleet.io/total-memory"],
            Quantity(2.0 * 1024.0 * 1024.0 * 1024.0)
        );
        assert_eq!(c.taints.len(), 1);
    }

    /// A property under the resource prefix in `status.properties` is not the member's
    /// resource usage: KubeFleet's scheduler never reads it, and neither does this.
    #[test]
    fn resource_properties_come_from_resource_usage_only() {
        let mut m = member("2026-01-01T00:09:00Z", "True", Some(("True", "x")));
        m["status"]["properties"]["resources.kubernetes-fleet.io/available-cpu"] = json!({"value": "100"});
        let c = candidate(&m, now(), Eligibility::default());
        assert!(!c.properties.contains_key("resources.kubernetes-fleet.io/available-cpu"), "{:?}", c.properties);
        assert_eq!(c.properties["resources.kubernetes-fleet.io/allocatable-cpu"], Quantity(1.5));
    }

    /// The statuses the member agent reports for three members' Nodes and Pods
    /// (`agent/src/fleet/properties.rs` checks it computes exactly these) place as
    /// KubeFleet's scheduler places by them: a required property selector on the node
    /// count or on available memory, and a preferred sorter on available or allocatable
    /// CPU (the biggest member has the least CPU free).
    #[test]
    fn placements_pick_by_the_properties_the_member_agent_reports() {
        let fixture: Value = serde_json::from_str(include_str!("../../../agent/testdata/fleet_member_status.json"))
            .expect("the fixture is JSON");
        let healthy = Some(("True", "2026-01-01T00:00:00Z"));
        let members = fixture["members"].as_object().expect("members");
        let candidates: Vec<Candidate> = members
            .iter()
            .map(|(name, reported)| {
                let mut m = member("2026-01-01T00:09:00Z", "True", healthy);
                m["metadata"]["name"] = json!(name);
                m["spec"] = json!({});
                m["status"]["properties"] = reported["status"]["properties"].clone();
                m["status"]["resourceUsage"] = reported["status"]["resourceUsage"].clone();
                candidate(&m, now(), Eligibility::default())
            })
            .collect();
        assert!(candidates.iter().all(|c| c.ready && c.properties.len() == 7), "{candidates:?}");
        let pick = |required: Value, sorter: &str| -> Vec<String> {
            let affinity = json!({"clusterAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {"clusterSelectorTerms": [
                    {"propertySelector": {"matchExpressions": [required]}}]},
                "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 100, "preference": {
                    "propertySorter": {"name": sorter, "sortOrder": "Descending"}}}]}});
            let fleet = json!({"placementType": "PickN", "numberOfClusters": 1, "affinity": affinity});
            let framework = policy("crp", Some(&fleet)).expect("policy");
            let state = placement::State::at(now());
            let decision = placement::decide(&placement::Profile::fleet(), &framework, &candidates, &state);
            decision.expect("decision").desired
        };
        let two_nodes = json!({"name": "kubernetes-fleet.io/node-count", "operator": "Ge", "values": ["2"]});
        assert_eq!(pick(two_nodes.clone(), "resources.kubernetes-fleet.io/available-cpu"), ["medium"]);
        assert_eq!(pick(two_nodes, "resources.kubernetes-fleet.io/allocatable-cpu"), ["large"]);
        let little_memory_free =
            json!({"name": "resources.kubernetes-fleet.io/available-memory", "operator": "Lt", "values": ["8Gi"]});
        assert_eq!(pick(little_memory_free, "resources.kubernetes-fleet.io/total-cpu"), ["small"]);
    }

    #[test]
    fn policies_translate_and_bad_ones_name_the_field() {
        let pick_n = json!({"placementType": "PickN", "numberOfClusters": 3,
            "affinity": {"clusterAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {"clusterSelectorTerms": [
                    {"labelSelector": {"matchLabels": {"env": "prod"}},
                     "propertySelector": {"matchExpressions": [{"name": "kubernetes-fleet.io/node-count", "operator": "Ge", "values": ["2"]}]}}]},
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": 20, "preference": {"propertySorter": {"name": "resources.kubernetes-fleet.io/allocatable-cpu", "sortOrder": "Descending"}}}]}},
            "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "region", "whenUnsatisfiable": "DoNotSchedule"}],
            "tolerations": [{"key": "k", "operator": "Exists"}]});
        let p = policy("crp", Some(&pick_n)).unwrap();
        assert_eq!(p.number, Number::N(3));
        assert_eq!(p.required.as_ref().map(Vec::len), Some(1));
        assert_eq!(p.preferred.len(), 1);
        assert_eq!(p.spread.len(), 1);
        assert_eq!(p.tolerations.len(), 1);
        assert_eq!(policy("crp", None).unwrap().number, Number::All);
        let fixed = json!({"placementType": "PickFixed", "clusterNames": ["a", "b"]});
        assert_eq!(policy("crp", Some(&fixed)).unwrap().number, Number::Fixed(vec!["a".into(), "b".into()]));
        let bad_weight = json!({"placementType": "PickN", "numberOfClusters": 1, "affinity": {"clusterAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 200, "preference": {}}]}}});
        assert!(policy("crp", Some(&bad_weight)).unwrap_err().contains("weight: must be between -100 and 100"));
        let preferred_pick_all = json!({"affinity": {"clusterAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 1, "preference": {}}]}}});
        assert!(policy("crp", Some(&preferred_pick_all)).unwrap_err().contains("PickAll"));
    }

    #[test]
    fn the_wanted_number_is_picks_or_names() {
        let five = json!({"placementType": "PickN", "numberOfClusters": 5});
        assert_eq!(wanted(Some(&five)), Some(5));
        assert_eq!(wanted(None), None);
    }
}
