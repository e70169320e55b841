//! What KubeFleet's hub refuses when a ClusterResourcePlacement is created or updated
//! (its validating webhook and the CEL rules of its CRD), pure: the refusals become the
//! causes of a 422, each with the field to fix and what to do instead. A placement the
//! hub would only find wrong later (its status saying so) is refused at the door, as on
//! a Fleet hub.
//!
//! A stored placement that breaks the rules (stored before a rule existed) can only be
//! deleted, as KubeFleet's webhook has it: a user's update of it is refused with a 422
//! that names what is wrong ([`stored_invalid_update`]), unless it is being deleted, and
//! then any update goes through, so that whoever holds it with a finalizer can let go.
//! The hub's own writes (status, annotations, finalizers) never meet that refusal: they
//! are not user requests, and a write that leaves `spec` alone is not checked at all, as
//! KubeFleet's webhook sees no status writes. An update that changes `spec` of a valid
//! placement is checked as a create is, plus what may not change (`transitions`).
//!
//! Whether a selected kind is cluster-scoped needs the cluster's resource table: that is
//! checked when a placement is created ([`namespaced_selectors`]); a kind the hub does not
//! serve yet (its CRD may come next) is let in, and the placement's status says so.

use super::policy::{self as fleet_policy, PlacementType, RESOURCE_PROPERTY_PREFIX};
use super::rollout;
use super::PLACEMENT_GROUP;
use apiserver::registry::strategy::{Causes, Committed, Hook, Strategy};
use apiserver::registry::{Core, ResourceType};
use apiserver::rest::status::{ApiError, ApiResult};
use apiserver::strategy::invalid;
use placement::Quantity;
use protocol::meta;
use protocol::names::{dns1123_subdomain, label_value, qualified_name};
use protocol::selector::LabelSelector;
use security::authn::Identity;
use serde_json::Value;
use std::collections::BTreeSet;

/// KubeFleet's limit on a placement's name (a DNS-1035 label's length: it becomes label
/// values and the prefix of its snapshots' names) and on a PickFixed cluster name.
const NAME_MAX_LENGTH: usize = 63;
const CAPACITY_TYPES: [&str; 3] = ["allocatable", "available", "total"];
const PROPERTY_OPERATORS: [&str; 6] = ["Gt", "Ge", "Eq", "Ne", "Lt", "Le"];

/// The causes of a 422 for `crp`, created (`old` is `None`) or updated from `old`.
pub fn placement(old: Option<&Value>, crp: &Value) -> Causes {
    let mut causes = Causes::new();
    if let Some(old) = old {
        if old.get("spec") == crp.get("spec") {
            return causes;
        }
        // KubeFleet lets any update of an invalid placement that is being deleted through.
        if meta::is_deleting(old) && !placement(None, old).is_empty() {
            return causes;
        }
        transitions(old, crp, &mut causes);
    }
    let name = meta::name(crp).unwrap_or_default();
    if name.len() > NAME_MAX_LENGTH {
        let why = format!("must be no more than {NAME_MAX_LENGTH} characters: Fleet writes it into label values");
        causes.push(("metadata.name".into(), invalid(name, &why)));
    }
    selectors(crp, &mut causes);
    let before = causes.len();
    if let Some(policy) = crp.pointer("/spec/policy") {
        policy_rules(policy, &mut causes);
    }
    // The scheduler's own reading of the policy catches what is left (a term of the
    // wrong shape), so that nothing it would refuse later gets in.
    if causes.len() == before {
        if let Err(error) = fleet_policy::policy(name, crp.pointer("/spec/policy")) {
            let (field, message) = error.split_once(": ").unwrap_or(("spec.policy", error.as_str()));
            causes.push((field.to_string(), format!("Invalid value: {message}")));
        }
    }
    strategy_rules(crp, &mut causes);
    causes
}

/// Why a user's update of the stored placement `old` through `subresource` is refused:
/// KubeFleet's webhook denies every update of a stored placement that is invalid unless it
/// is being deleted, whatever the update changes (even one that would fix it), so such a
/// placement is deleted and created again. The causes start with that, then list what is
/// wrong with the stored placement. Writes to `status` are not refused, as KubeFleet's
/// webhook does not see them.
pub fn stored_invalid_update(old: &Value, subresource: Option<&str>) -> Causes {
    if subresource.is_some() || meta::is_deleting(old) {
        return Causes::new();
    }
    let stored = placement(None, old);
    if stored.is_empty() {
        return stored;
    }
    let name = meta::name(old).unwrap_or_default();
    let why = format!(
        "Forbidden: the stored ClusterResourcePlacement {name:?} breaks the rules listed after this (it was stored \
         before they applied), and as on a KubeFleet hub such a placement cannot be updated, only deleted: delete \
         it (kubectl delete clusterresourceplacement {name}) and create it again with those fields fixed"
    );
    let mut causes = vec![("spec".to_string(), why)];
    causes.extend(stored.into_iter().map(|(field, message)| (field, format!("in the stored object: {message}"))));
    causes
}

/// What an update may not change: the placement type, a policy once set, and any
/// toleration already there (tolerations may only be added).
fn transitions(old: &Value, new: &Value, causes: &mut Causes) {
    let (old_policy, new_policy) = (old.pointer("/spec/policy"), new.pointer("/spec/policy"));
    let old_type = type_name(PlacementType::of(old_policy));
    if old_policy.is_some() && new_policy.is_none() {
        let why = format!(
            "Forbidden: policy cannot be removed once set; put it back (placementType {old_type}) or create a new \
             ClusterResourcePlacement"
        );
        causes.push(("spec.policy".into(), why));
        return;
    }
    let new_type = type_name(PlacementType::of(new_policy));
    if new_type != old_type {
        let why = format!(
            "placement type is immutable (it is {old_type}); to pick clusters another way, create a new \
             ClusterResourcePlacement and delete this one"
        );
        causes.push(("spec.policy.placementType".into(), invalid(new_type, &why)));
    }
    let kept: BTreeSet<Toleration> = tolerations(new_policy).into_iter().collect();
    let gone: Vec<String> =
        tolerations(old_policy).iter().filter(|t| !kept.contains(t)).map(Toleration::show).collect();
    if !gone.is_empty() {
        let why = format!(
            "Forbidden: tolerations have been updated/deleted, only additions to tolerations are allowed; missing \
             now: {}. Keep every existing toleration as it is and add new ones",
            gone.join(", ")
        );
        causes.push(("spec.policy.tolerations".into(), why));
    }
}

fn type_name(kind: PlacementType) -> &'static str {
    match kind {
        PlacementType::PickAll => "PickAll",
        PlacementType::PickN => "PickN",
        PlacementType::PickFixed => "PickFixed",
    }
}

/// A toleration as KubeFleet compares them: its four fields, the operator defaulted.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Toleration {
    key: String,
    operator: String,
    value: String,
    effect: String,
}

impl Toleration {
    fn read(value: &Value) -> Toleration {
        let text = |field: &str| value.get(field).and_then(Value::as_str).unwrap_or_default().to_string();
        let operator = Some(text("operator")).filter(|o| !o.is_empty()).unwrap_or_else(|| "Equal".into());
        Toleration { key: text("key"), operator, value: text("value"), effect: text("effect") }
    }

    fn show(&self) -> String {
        let Toleration { key, operator, value, effect } = self;
        format!("{{key: {key:?}, operator: {operator}, value: {value:?}, effect: {effect:?}}}")
    }
}

fn tolerations(policy: Option<&Value>) -> Vec<Toleration> {
    let list = policy.and_then(|p| p.get("tolerations")).and_then(Value::as_array);
    list.into_iter().flatten().map(Toleration::read).collect()
}

/// Each resource selector: a name or labels, not both, and labels that parse.
fn selectors(crp: &Value, causes: &mut Causes) {
    let list = crp.pointer("/spec/resourceSelectors").and_then(Value::as_array);
    for (i, selector) in list.into_iter().flatten().enumerate() {
        let at = format!("spec.resourceSelectors[{i}]");
        let named = selector.get("name").and_then(Value::as_str).is_some_and(|n| !n.is_empty());
        if let Some(labels) = selector.get("labelSelector") {
            if named {
                let why = "Forbidden: name and labelSelector are mutually exclusive in a resource selector; select \
                           by name or by labels, in two selectors if both are wanted";
                causes.push((at.clone(), why.into()));
            }
            label_selector(labels, &format!("{at}.labelSelector"), causes);
        }
    }
}

fn label_selector(selector: &Value, at: &str, causes: &mut Causes) {
    if let Err(error) = LabelSelector::from_label_selector_json(selector) {
        causes.push((at.to_string(), format!("Invalid value: {error}")));
    }
}

/// The policy's fields as its placement type allows them, each one well formed.
fn policy_rules(policy: &Value, causes: &mut Causes) {
    let kind = PlacementType::of(Some(policy));
    let type_ = type_name(kind);
    let present = |field: &str| policy.get(field).is_some_and(|v| !v.is_null());
    let non_empty = |field: &str| policy.get(field).and_then(Value::as_array).is_some_and(|a| !a.is_empty());
    let mut not_with = |field: &str, only: &str| {
        let why =
            format!("Forbidden: {field} cannot be set when placementType is {type_}; it is only valid for {only}");
        causes.push((format!("spec.policy.{field}"), why));
    };
    match kind {
        PlacementType::PickFixed => {
            for (field, only) in [
                ("numberOfClusters", "PickN"),
                ("affinity", "PickAll and PickN"),
                ("topologySpreadConstraints", "PickN"),
                ("tolerations", "PickAll and PickN"),
            ] {
                if present(field) {
                    not_with(field, only);
                }
            }
            cluster_names(policy, causes);
            return;
        }
        PlacementType::PickAll => {
            for (field, only) in [("clusterNames", "PickFixed"), ("topologySpreadConstraints", "PickN")] {
                if non_empty(field) {
                    not_with(field, only);
                }
            }
            if present("numberOfClusters") {
                not_with("numberOfClusters", "PickN");
            }
        }
        PlacementType::PickN => {
            if non_empty("clusterNames") {
                not_with("clusterNames", "PickFixed");
            }
            if !present("numberOfClusters") {
                let why = "Required value: numberOfClusters must be set when placementType is PickN";
                causes.push(("spec.policy.numberOfClusters".into(), why.into()));
            }
            spread(policy, causes);
        }
    }
    affinity(policy, kind, causes);
    toleration_rules(policy, causes);
}

/// PickFixed's names: member names, each once.
fn cluster_names(policy: &Value, causes: &mut Causes) {
    let mut seen = BTreeSet::new();
    let names = policy.get("clusterNames").and_then(Value::as_array);
    for (i, name) in names.into_iter().flatten().enumerate() {
        let at = format!("spec.policy.clusterNames[{i}]");
        let name = name.as_str().unwrap_or_default();
        let mut errors = dns1123_subdomain(name);
        if name.len() > NAME_MAX_LENGTH {
            errors.push(format!("must be no more than {NAME_MAX_LENGTH} characters"));
        }
        if !errors.is_empty() {
            let why = format!("not a valid member cluster name: {}", errors.join("; "));
            causes.push((at.clone(), invalid(name, &why)));
        }
        if !seen.insert(name) {
            causes.push((at, format!("Duplicate value: {name:?}: cluster names must be unique for PickFixed")));
        }
    }
}

fn spread(policy: &Value, causes: &mut Causes) {
    let list = policy.get("topologySpreadConstraints").and_then(Value::as_array);
    for (i, constraint) in list.into_iter().flatten().enumerate() {
        let at = format!("spec.policy.topologySpreadConstraints[{i}]");
        if constraint.get("topologyKey").and_then(Value::as_str).is_none_or(str::is_empty) {
            causes.push((format!("{at}.topologyKey"), "Required value: the label that names a domain".into()));
        }
        if let Some(skew) = constraint.get("maxSkew").and_then(Value::as_i64).filter(|s| *s < 1) {
            causes.push((format!("{at}.maxSkew"), invalid(&skew.to_string(), "must be at least 1")));
        }
        let when = constraint.get("whenUnsatisfiable").and_then(Value::as_str).unwrap_or("DoNotSchedule");
        if !["DoNotSchedule", "ScheduleAnyway"].contains(&when) {
            let why = "Unsupported value: supported values: \"DoNotSchedule\", \"ScheduleAnyway\"";
            causes.push((format!("{at}.whenUnsatisfiable"), format!("{why} (got {when:?})")));
        }
    }
}

/// Required terms filter (labels and properties, no sorter); preferred terms score
/// (labels and a sorter, no property selector), and only when picking N.
fn affinity(policy: &Value, kind: PlacementType, causes: &mut Causes) {
    let base = "spec.policy.affinity.clusterAffinity";
    let Some(affinity) = policy.pointer("/affinity/clusterAffinity") else { return };
    let required = affinity.pointer("/requiredDuringSchedulingIgnoredDuringExecution/clusterSelectorTerms");
    for (i, term) in required.and_then(Value::as_array).into_iter().flatten().enumerate() {
        let at = format!("{base}.requiredDuringSchedulingIgnoredDuringExecution.clusterSelectorTerms[{i}]");
        if let Some(labels) = term.get("labelSelector") {
            label_selector(labels, &format!("{at}.labelSelector"), causes);
        }
        if term.get("propertySorter").is_some() {
            let why = "Forbidden: propertySorter is not allowed in required terms; sort in a preferred term";
            causes.push((format!("{at}.propertySorter"), why.into()));
        }
        if let Some(selector) = term.get("propertySelector") {
            property_selector(selector, &format!("{at}.propertySelector"), causes);
        }
    }
    let preferred = affinity.get("preferredDuringSchedulingIgnoredDuringExecution").and_then(Value::as_array);
    let preferred = preferred.filter(|p| !p.is_empty());
    if kind == PlacementType::PickAll {
        if preferred.is_some() {
            let why = "Forbidden: preferred terms would be ignored: PickAll picks every cluster that passes the \
                       required terms; use PickN to rank clusters";
            causes.push((format!("{base}.preferredDuringSchedulingIgnoredDuringExecution"), why.into()));
        }
        return;
    }
    for (i, term) in preferred.into_iter().flatten().enumerate() {
        let at = format!("{base}.preferredDuringSchedulingIgnoredDuringExecution[{i}]");
        if let Some(weight) = term.get("weight").and_then(Value::as_i64).filter(|w| !(-100..=100).contains(w)) {
            causes.push((format!("{at}.weight"), invalid(&weight.to_string(), "must be between -100 and 100")));
        }
        let preference = term.get("preference").cloned().unwrap_or_default();
        if let Some(labels) = preference.get("labelSelector") {
            label_selector(labels, &format!("{at}.preference.labelSelector"), causes);
        }
        if preference.get("propertySelector").is_some() {
            let why = "Forbidden: propertySelector is not allowed in preferred terms; filter in a required term";
            causes.push((format!("{at}.preference.propertySelector"), why.into()));
        }
        if let Some(sorter) = preference.get("propertySorter") {
            let at = format!("{at}.preference.propertySorter");
            let name = sorter.get("name").and_then(Value::as_str).unwrap_or_default();
            if let Err(why) = property_name(name) {
                causes.push((format!("{at}.name"), invalid(name, &why)));
            }
            let order = sorter.get("sortOrder").and_then(Value::as_str).unwrap_or_default();
            if !["Ascending", "Descending"].contains(&order) {
                let why = format!("Unsupported value: {order:?}: supported values: \"Ascending\", \"Descending\"");
                causes.push((format!("{at}.sortOrder"), why));
            }
        }
    }
}

/// A property selector's requirements: known names and operators, one quantity each,
/// and, per property, requirements that some value can meet together.
fn property_selector(selector: &Value, at: &str, causes: &mut Causes) {
    let mut bounds: std::collections::BTreeMap<&str, Bounds> = Default::default();
    let list = selector.get("matchExpressions").and_then(Value::as_array);
    for (i, requirement) in list.into_iter().flatten().enumerate() {
        let at = format!("{at}.matchExpressions[{i}]");
        let name = requirement.get("name").and_then(Value::as_str).unwrap_or_default();
        if let Err(why) = property_name(name) {
            causes.push((format!("{at}.name"), invalid(name, &why)));
        }
        let operator = requirement.get("operator").and_then(Value::as_str).unwrap_or_default();
        if !PROPERTY_OPERATORS.contains(&operator) {
            let supported: Vec<String> = PROPERTY_OPERATORS.iter().map(|o| format!("{o:?}")).collect();
            let why = format!("Unsupported value: {operator:?}: supported values: {}", supported.join(", "));
            causes.push((format!("{at}.operator"), why));
            continue;
        }
        let values: Vec<&str> = requirement
            .get("values")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        let [value] = values.as_slice() else {
            let why = format!("Invalid value: operator {operator} requires exactly one value, got {}", values.len());
            causes.push((format!("{at}.values"), why));
            continue;
        };
        match Quantity::parse(value) {
            Ok(quantity) => bounds.entry(name).or_default().add(operator, quantity.0),
            Err(_) => causes.push((format!("{at}.values[0]"), invalid(value, "not a valid resource quantity"))),
        }
    }
    for (name, bounds) in bounds {
        if let Some(why) = bounds.contradiction() {
            let why = format!("Invalid value: the requirements on property {name} exclude every value: {why}");
            causes.push((format!("{at}.matchExpressions"), why));
        }
    }
}

/// The requirements on one property, folded: the tightest bounds (value, strict), the
/// values it must equal and those it must not.
#[derive(Default)]
struct Bounds {
    lower: Option<(f64, bool)>,
    upper: Option<(f64, bool)>,
    equal: Vec<f64>,
    not_equal: Vec<f64>,
}

impl Bounds {
    fn add(&mut self, operator: &str, value: f64) {
        let tighter_lower = |old: Option<(f64, bool)>, new: (f64, bool)| match old {
            Some(old) if old.0 > new.0 || (old.0 == new.0 && old.1) => Some(old),
            _ => Some(new),
        };
        let tighter_upper = |old: Option<(f64, bool)>, new: (f64, bool)| match old {
            Some(old) if old.0 < new.0 || (old.0 == new.0 && old.1) => Some(old),
            _ => Some(new),
        };
        match operator {
            "Gt" => self.lower = tighter_lower(self.lower, (value, true)),
            "Ge" => self.lower = tighter_lower(self.lower, (value, false)),
            "Lt" => self.upper = tighter_upper(self.upper, (value, true)),
            "Le" => self.upper = tighter_upper(self.upper, (value, false)),
            "Eq" => self.equal.push(value),
            _ => self.not_equal.push(value),
        }
    }

    /// Why no value meets every requirement, when none does.
    fn contradiction(&self) -> Option<String> {
        if let [first, rest @ ..] = self.equal.as_slice() {
            if let Some(other) = rest.iter().find(|v| *v != first) {
                return Some(format!("Eq {first} and Eq {other}"));
            }
            if self.not_equal.contains(first) {
                return Some(format!("Eq and Ne {first}"));
            }
            let below = self.lower.is_some_and(|(l, strict)| *first < l || (strict && *first == l));
            let above = self.upper.is_some_and(|(u, strict)| *first > u || (strict && *first == u));
            if below || above {
                return Some(format!("Eq {first} is outside the bounds"));
            }
        }
        let (Some((lower, lower_strict)), Some((upper, upper_strict))) = (self.lower, self.upper) else { return None };
        (lower > upper || (lower == upper && (lower_strict || upper_strict)))
            .then(|| format!("the lower bound {lower} is above the upper bound {upper}"))
    }
}

/// Fleet's property names: `resources.kubernetes-fleet.io/<capacity type>-<resource>`, or
/// `[prefix/]segment[/segment…]` with a DNS-subdomain (or qualified-name) prefix and
/// qualified-name segments.
fn property_name(name: &str) -> Result<(), String> {
    if let Some(resource) = name.strip_prefix(RESOURCE_PROPERTY_PREFIX) {
        let Some((capacity, _)) = resource.split_once('-') else {
            return Err(format!("a resource property is {RESOURCE_PROPERTY_PREFIX}[CAPACITY_TYPE]-[RESOURCE_NAME]"));
        };
        if !CAPACITY_TYPES.contains(&capacity) {
            return Err(format!("capacity type {capacity:?} is none of {}", CAPACITY_TYPES.join(", ")));
        }
        return errors_to_result(qualified_name(name));
    }
    let segments: Vec<&str> = name.split('/').collect();
    let [prefix, rest @ ..] = segments.as_slice() else { return Ok(()) };
    if rest.is_empty() {
        return errors_to_result(qualified_name(name));
    }
    if !dns1123_subdomain(prefix).is_empty() && !qualified_name(prefix).is_empty() {
        return Err(format!("prefix {prefix:?} is neither a DNS subdomain nor a qualified name"));
    }
    rest.iter().try_for_each(|segment| {
        errors_to_result(qualified_name(segment)).map_err(|why| format!("segment {segment:?}: {why}"))
    })
}

fn errors_to_result(errors: Vec<String>) -> Result<(), String> {
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors.join("; "))
    }
}

/// Tolerations: well-formed keys and values, `Exists` without a value, `Equal` with a
/// key, each once. (The schema refuses other operators and effects than Fleet's.)
fn toleration_rules(policy: &Value, causes: &mut Causes) {
    let mut seen = BTreeSet::new();
    let list = policy.get("tolerations").and_then(Value::as_array);
    for (i, raw) in list.into_iter().flatten().enumerate() {
        let at = format!("spec.policy.tolerations[{i}]");
        let toleration = Toleration::read(raw);
        if !toleration.key.is_empty() {
            if let Err(why) = errors_to_result(qualified_name(&toleration.key)) {
                causes.push((format!("{at}.key"), invalid(&toleration.key, &why)));
            }
        }
        match toleration.operator.as_str() {
            "Exists" if !toleration.value.is_empty() => {
                let why = "value must be empty when operator is Exists";
                causes.push((format!("{at}.value"), invalid(&toleration.value, why)));
            }
            "Equal" => {
                if toleration.key.is_empty() {
                    let why = "Required value: operator must be Exists when key is empty (a toleration of every taint)";
                    causes.push((format!("{at}.key"), why.into()));
                }
                if let Err(why) = errors_to_result(label_value(&toleration.value)) {
                    causes.push((format!("{at}.value"), invalid(&toleration.value, &why)));
                }
            }
            _ => {}
        }
        let shown = toleration.show();
        if !seen.insert(toleration) {
            causes.push((at, format!("Duplicate value: {shown}: tolerations must be unique")));
        }
    }
}

/// The rollout strategy's limits: counts or percentages, and a server-side apply
/// configuration only for server-side apply.
fn strategy_rules(crp: &Value, causes: &mut Causes) {
    let rolling = crp.pointer("/spec/strategy/rollingUpdate");
    for field in ["maxUnavailable", "maxSurge"] {
        if let Err(why) = rollout::scaled(rolling.and_then(|r| r.get(field)), 25, 10) {
            causes.push((format!("spec.strategy.rollingUpdate.{field}"), format!("Invalid value: {why}")));
        }
    }
    let apply = crp.pointer("/spec/strategy/applyStrategy");
    let server_side = apply.and_then(|a| a.get("type")).and_then(Value::as_str) == Some("ServerSideApply");
    if apply.and_then(|a| a.get("serverSideApplyConfig")).is_some() && !server_side {
        let why = "Forbidden: serverSideApplyConfig is only valid when type is ServerSideApply";
        causes.push(("spec.strategy.applyStrategy.serverSideApplyConfig".into(), why.into()));
    }
}

/// The causes for selectors of namespaced kinds, which a ClusterResourcePlacement cannot
/// place by themselves (KubeFleet's webhook refuses them too); `namespaced` tells whether
/// the hub serves a group and kind namespaced (`None`: not served).
pub fn namespaced_selectors(crp: &Value, namespaced: impl Fn(&str, &str) -> Option<bool>) -> Causes {
    let mut causes = Causes::new();
    let list = crp.pointer("/spec/resourceSelectors").and_then(Value::as_array);
    for (i, selector) in list.into_iter().flatten().enumerate() {
        let text = |field: &str| selector.get(field).and_then(Value::as_str).unwrap_or_default();
        let (group, kind) = (text("group"), text("kind"));
        if namespaced(group, kind) == Some(true) {
            let why = format!(
                "{kind} is namespaced and a ClusterResourcePlacement selects cluster-scoped resources: select its \
                 Namespace (group \"\", version v1, kind Namespace) to place what is in it"
            );
            causes.push((format!("spec.resourceSelectors[{i}].kind"), invalid(kind, &why)));
        }
    }
    causes
}

/// ClusterResourcePlacements: a custom resource defined in code, with the rules above.
#[derive(Debug, Default)]
pub struct PlacementStrategy(pub crate::crd::strategy::CustomResource);

impl Strategy for PlacementStrategy {
    fn tracks_generation(&self) -> bool {
        self.0.tracks_generation()
    }

    fn converts(&self) -> bool {
        self.0.converts()
    }

    fn to_storage(&self, rt: &ResourceType, object: &mut Value) {
        self.0.to_storage(rt, object)
    }

    fn to_version(&self, rt: &ResourceType, object: &mut Value) {
        self.0.to_version(rt, object)
    }

    /// A new placement's selectors name cluster-scoped kinds of its cluster.
    fn admit(&self, core: &Core, rt: &ResourceType, cluster: &str, object: &mut Value) -> ApiResult<()> {
        self.0.admit(core, rt, cluster, object)?;
        let served =
            |group: &str, kind: &str| core.registry.resource_for_kind(cluster, group, kind).map(|r| r.namespaced);
        let causes = namespaced_selectors(object, served);
        if causes.is_empty() {
            return Ok(());
        }
        Err(ApiError::invalid(&rt.kind, &rt.group, meta::name(object).unwrap_or_default(), &causes))
    }

    /// A user's update of a stored invalid placement is refused unless it is being deleted
    /// (the hub's own writes do not come this way).
    fn admit_caller_update(
        &self,
        _caller: &Identity,
        _cluster: &str,
        old: &Value,
        _new: &Value,
        subresource: Option<&str>,
    ) -> ApiResult<()> {
        let causes = stored_invalid_update(old, subresource);
        if causes.is_empty() {
            return Ok(());
        }
        Err(ApiError::invalid(
            "ClusterResourcePlacement",
            PLACEMENT_GROUP,
            meta::name(old).unwrap_or_default(),
            &causes,
        ))
    }

    fn validate(&self, rt: &ResourceType, old: Option<&Value>, object: &Value) -> Causes {
        let mut causes = self.0.validate(rt, old, object);
        causes.extend(placement(old, object));
        causes
    }

    fn after_commit<'a>(&'a self, core: &'a Core, committed: Committed<'a>) -> Hook<'a> {
        self.0.after_commit(core, committed)
    }
}

#[cfg(test)]
mod tests;
