//! What a member's Nodes and Pods say about its size: CPU and memory summed over the
//! Nodes' capacity and allocatable, and over the requests of the Pods running on them.
//! The OCM registration agent reports the sums as a ManagedCluster's `status.capacity`
//! and `status.allocatable`, the KubeFleet member agent as a MemberCluster's
//! `status.resourceUsage` (see `fleet::properties`); both read them from here so that
//! the two never disagree about a member.
//!
//! The sums are pure ([`NodeTotals::of`], [`requested`]); [`list`] is the one I/O, and a
//! member that does not serve a resource at all (a logical cluster of an Atoll
//! installation serves no Nodes and no Pods) has none of it rather than an error.
//!
//! Amounts are kept in thousandths of their unit and written back as Kubernetes writes
//! quantities (canonical form: `3500m`, `4`, `1536Mi`, `16G`), keeping the format of
//! the first quantity summed, as `resource.Quantity.Add` does: Node memory in `Ki`
//! stays binary, CPU in cores stays decimal.

use anyhow::Context;
use kube::api::{Api, DynamicObject, ListParams};
use kube::core::{ApiResource, GroupVersionKind};
use kube::Client;
use serde_json::{Map, Value};

/// Objects asked for per list request.
const PAGE_SIZE: u32 = 500;
/// Pages of Nodes listed at most: 5,000 Nodes, the largest cluster Kubernetes supports.
pub const NODE_PAGES_MAX: usize = 10;
/// Pages of Pods listed at most: 10,000 Pods. KubeFleet's member agent counts only the
/// first 100 Pods and warns; counting more keeps the available figures right on busy
/// members, and the bound keeps a heartbeat's cost fixed on the busiest (where the
/// figures are then an overestimate, and the agent warns as KubeFleet does).
pub const POD_PAGES_MAX: usize = 20;

/// One resource summed: an exact amount in thousandths of its unit.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Amount {
    /// The amount in thousandths of the unit (millicores, millibytes): every quantity a
    /// Node or a request states in practice is a whole number of these, so sums are exact.
    milli: i128,
    /// Whether any object stated the resource (OCM reports only those).
    stated: bool,
    /// Whether the sum is written in binary units (`Ki`, `Mi`, …).
    binary: bool,
}

impl Amount {
    /// Adds a quantity as text; one that does not parse is left out (a Node the kubelet
    /// wrote cannot have one).
    fn add(&mut self, text: &str) {
        let Ok(quantity) = placement::Quantity::parse(text) else { return };
        if self.milli == 0 {
            // resource.Quantity.Add takes the format of the term added to a zero sum.
            self.binary = binary_suffix(text);
        }
        self.milli += (quantity.0 * 1000.0).round() as i128;
        self.stated = true;
    }

    /// `self` less `other`, never below zero (KubeFleet clamps available capacity at 0).
    fn less(self, other: Amount) -> Amount {
        Amount { milli: (self.milli - other.milli).max(0), ..self }
    }

    /// The amount as Kubernetes writes it.
    pub fn quantity(&self) -> String {
        canonical(self.milli, self.binary)
    }
}

/// CPU and memory.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Resources {
    pub cpu: Amount,
    pub memory: Amount,
}

impl Resources {
    /// Adds the `cpu` and `memory` of a resource list (`{"cpu": "4", "memory": "16Gi"}`).
    fn add_list(&mut self, list: Option<&Value>) {
        for (name, amount) in [("cpu", &mut self.cpu), ("memory", &mut self.memory)] {
            if let Some(text) = list.and_then(|l| l.get(name)).and_then(Value::as_str) {
                amount.add(text);
            }
        }
    }

    /// `self` less `other`, each resource clamped at zero.
    pub fn less(&self, other: &Resources) -> Resources {
        Resources { cpu: self.cpu.less(other.cpu), memory: self.memory.less(other.memory) }
    }

    /// The resource list as quantities: every resource (KubeFleet reports 0 for a resource
    /// no Node states), or only those some object stated (`stated_only`, as OCM does).
    pub fn to_list(self, stated_only: bool) -> Map<String, Value> {
        [("cpu", self.cpu), ("memory", self.memory)]
            .into_iter()
            .filter(|(_, amount)| amount.stated || !stated_only)
            .map(|(name, amount)| (name.to_string(), Value::String(amount.quantity())))
            .collect()
    }
}

/// What the Nodes of a member add up to.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NodeTotals {
    pub count: usize,
    /// `status.capacity` summed.
    pub capacity: Resources,
    /// `status.allocatable` summed.
    pub allocatable: Resources,
}

impl NodeTotals {
    /// Sums every Node, schedulable or not, ready or not, as KubeFleet's member agent does.
    pub fn of(nodes: &[Value]) -> NodeTotals {
        let mut totals = NodeTotals { count: nodes.len(), ..NodeTotals::default() };
        for node in nodes {
            totals.capacity.add_list(node.pointer("/status/capacity"));
            totals.allocatable.add_list(node.pointer("/status/allocatable"));
        }
        totals
    }
}

/// The CPU and memory requested by Pods that hold them on a Node: bound to one
/// (`spec.nodeName`) and neither Succeeded nor Failed. As in KubeFleet's member agent,
/// the requests of `spec.containers` count; init containers and pod overhead do not.
pub fn requested(pods: &[Value]) -> Resources {
    let mut total = Resources::default();
    for pod in pods.iter().filter(|pod| holds_resources(pod)) {
        let containers = pod.pointer("/spec/containers").and_then(Value::as_array);
        for container in containers.into_iter().flatten() {
            total.add_list(container.pointer("/resources/requests"));
        }
    }
    total
}

fn holds_resources(pod: &Value) -> bool {
    let bound = pod.pointer("/spec/nodeName").and_then(Value::as_str).is_some_and(|n| !n.is_empty());
    let phase = pod.pointer("/status/phase").and_then(Value::as_str);
    bound && !matches!(phase, Some("Succeeded" | "Failed"))
}

fn binary_suffix(text: &str) -> bool {
    ["Ki", "Mi", "Gi", "Ti", "Pi", "Ei"].iter().any(|suffix| text.ends_with(suffix))
}

/// Kubernetes' canonical form of `milli` thousandths: binary units when `binary` and the
/// amount is a whole multiple of 1024 (as `resource.Quantity` falls back to decimal
/// below 1024 or with a fraction), else the largest decimal suffix that keeps the
/// number whole (`m` for a fraction).
fn canonical(milli: i128, binary: bool) -> String {
    if milli % 1000 != 0 {
        return decimal(milli, -3);
    }
    let whole = milli / 1000;
    if binary && whole.abs() >= 1024 {
        return base_1024(whole);
    }
    decimal(whole, 0)
}

/// `mantissa × 10^exponent` with trailing zeros moved into the suffix, three at a time.
fn decimal(mut mantissa: i128, mut exponent: i32) -> String {
    while mantissa != 0 && mantissa % 1000 == 0 && exponent < 18 {
        mantissa /= 1000;
        exponent += 3;
    }
    let suffix = match exponent {
        -3 => "m",
        3 => "k",
        6 => "M",
        9 => "G",
        12 => "T",
        15 => "P",
        18 => "E",
        _ => "",
    };
    format!("{mantissa}{suffix}")
}

fn base_1024(mut number: i128) -> String {
    const SUFFIXES: [&str; 7] = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"];
    let mut power = 0;
    while number % 1024 == 0 && power < SUFFIXES.len() - 1 {
        number /= 1024;
        power += 1;
    }
    format!("{number}{}", SUFFIXES[power])
}

/// Objects of one kind listed from a member.
#[derive(Debug, Default)]
pub struct Listed {
    pub items: Vec<Value>,
    /// Whether more were there than `pages_max` pages hold (the rest are not in `items`).
    pub truncated: bool,
}

/// Lists every object of a core kind (`Node`, `Pod`) in the member, [`PAGE_SIZE`] at a
/// time and at most `pages_max` pages; `None` when the member does not serve the kind.
pub async fn list(member: &Client, kind: &str, plural: &str, pages_max: usize) -> anyhow::Result<Option<Listed>> {
    let resource = ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk("", "v1", kind), plural);
    let api: Api<DynamicObject> = Api::all_with(member.clone(), &resource);
    let mut listed = Listed::default();
    let mut token: Option<String> = None;
    for _ in 0..pages_max {
        let mut params = ListParams::default().limit(PAGE_SIZE);
        if let Some(token) = &token {
            params = params.continue_token(token);
        }
        let page = match api.list(&params).await {
            Ok(page) => page,
            Err(kube::Error::Api(e)) if e.code == 404 => return Ok(None),
            Err(error) => return Err(error).with_context(|| format!("list the member's {plural}")),
        };
        listed.items.extend(page.items.iter().map(|o| serde_json::to_value(o).unwrap_or(Value::Null)));
        token = page.metadata.continue_.filter(|t| !t.is_empty());
        if token.is_none() {
            return Ok(Some(listed));
        }
    }
    listed.truncated = true;
    Ok(Some(listed))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn node(capacity: Value, allocatable: Value) -> Value {
        json!({"kind": "Node", "status": {"capacity": capacity, "allocatable": allocatable}})
    }

    fn pod(node: &str, phase: &str, requests: &[(&str, &str)]) -> Value {
        let containers: Vec<Value> = requests
            .iter()
            .map(|(cpu, memory)| json!({"name": "c", "resources": {"requests": {"cpu": cpu, "memory": memory}}}))
            .collect();
        json!({"kind": "Pod", "spec": {"nodeName": node, "containers": containers}, "status": {"phase": phase}})
    }

    /// Canonical quantities as `resource.Quantity.String()` writes them.
    #[test]
    fn amounts_are_written_as_kubernetes_writes_quantities() {
        let cases = [
            (3_500, false, "3500m"),
            (4_000, false, "4"),
            (0, false, "0"),
            (0, true, "0"),
            (100, false, "100m"),
            (2_000_000, false, "2k"),
            (1_500_000, false, "1500"),
            (16_000_000_000_000, false, "16G"),
            (1_536 * 1024 * 1024 * 1000, true, "1536Mi"),
            (16 * 1024 * 1024 * 1024 * 1000, true, "16Gi"),
            (8_145_456 * 1024 * 1000, true, "8145456Ki"),
            (512_000, true, "512"),
            (1_000_000, true, "1k"),
            (1_500 * 1000, true, "1500"),
            (2_000_000_000_000, true, "1953125Ki"),
        ];
        for (milli, binary, want) in cases {
            assert_eq!(canonical(milli, binary), want, "{milli} binary={binary}");
        }
    }

    /// Nodes sum to their count, capacity and allocatable; the format of the first
    /// quantity decides the sum's.
    #[test]
    fn nodes_are_summed() {
        let cases: Vec<(&str, Vec<Value>, usize, [&str; 4])> = vec![
            ("no nodes", vec![], 0, ["0", "0", "0", "0"]),
            (
                "cores and millicores, Ki and Mi",
                vec![
                    node(json!({"cpu": "4", "memory": "8145456Ki"}), json!({"cpu": "3920m", "memory": "7000Mi"})),
                    node(json!({"cpu": "2", "memory": "4Gi"}), json!({"cpu": "1500m", "memory": "3Gi"})),
                ],
                2,
                ["6", "12339760Ki", "5420m", "10072Mi"],
            ),
            (
                "decimal memory stays decimal",
                vec![node(json!({"cpu": "1", "memory": "16G"}), json!({"cpu": "1", "memory": "15G"}))],
                1,
                ["1", "16G", "1", "15G"],
            ),
            (
                "a node without figures counts but adds nothing",
                vec![node(json!({}), json!({})), node(json!({"cpu": "2"}), json!({"cpu": "2"}))],
                2,
                ["2", "0", "2", "0"],
            ),
        ];
        for (case, nodes, count, [cpu, memory, allocatable_cpu, allocatable_memory]) in cases {
            let totals = NodeTotals::of(&nodes);
            assert_eq!(totals.count, count, "{case}");
            assert_eq!(totals.capacity.cpu.quantity(), cpu, "{case}");
            assert_eq!(totals.capacity.memory.quantity(), memory, "{case}");
            assert_eq!(totals.allocatable.cpu.quantity(), allocatable_cpu, "{case}");
            assert_eq!(totals.allocatable.memory.quantity(), allocatable_memory, "{case}");
        }
    }

    /// Only pods bound to a node and not finished hold resources; their containers'
    /// requests add up.
    #[test]
    fn requests_count_for_bound_unfinished_pods() {
        let pods = [
            pod("n1", "Running", &[("100m", "128Mi"), ("250m", "64Mi")]),
            pod("n2", "Pending", &[("1", "1Gi")]),
            pod("", "Pending", &[("8", "8Gi")]),
            pod("n1", "Succeeded", &[("8", "8Gi")]),
            pod("n1", "Failed", &[("8", "8Gi")]),
            json!({"spec": {"nodeName": "n1", "containers": [{"name": "no-requests"}]}, "status": {"phase": "Running"}}),
        ];
        let total = requested(&pods);
        assert_eq!(total.cpu.quantity(), "1350m");
        assert_eq!(total.memory.quantity(), "1216Mi");
    }

    #[test]
    fn what_is_left_never_goes_below_zero() {
        let nodes = [node(json!({"cpu": "2", "memory": "2Gi"}), json!({"cpu": "2", "memory": "2Gi"}))];
        let allocatable = NodeTotals::of(&nodes).allocatable;
        let some = requested(&[pod("n1", "Running", &[("500m", "512Mi")])]);
        let left = allocatable.less(&some);
        assert_eq!([left.cpu.quantity(), left.memory.quantity()], ["1500m", "1536Mi"]);
        let too_much = requested(&[pod("n1", "Running", &[("3", "3Gi")])]);
        let left = allocatable.less(&too_much);
        assert_eq!([left.cpu.quantity(), left.memory.quantity()], ["0", "0"]);
    }

    #[test]
    fn lists_carry_every_resource_or_only_stated_ones() {
        let totals = NodeTotals::of(&[node(json!({"cpu": "2"}), json!({"cpu": "2"}))]);
        assert_eq!(Value::Object(totals.capacity.to_list(false)), json!({"cpu": "2", "memory": "0"}));
        assert_eq!(Value::Object(totals.capacity.to_list(true)), json!({"cpu": "2"}));
    }
}
