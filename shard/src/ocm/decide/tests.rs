use super::*;

fn cluster(name: &str, set: &str, labels: Value) -> Value {
    let mut labels = labels;
    labels[CLUSTER_SET_LABEL] = json!(set);
    json!({"metadata": {"name": name, "labels": labels}, "spec": {"hubAcceptsClient": true}})
}

fn set(name: &str) -> Value {
    json!({"metadata": {"name": name}, "spec": {"clusterSelector": {"selectorType": "ExclusiveClusterSetLabel"}}})
}

fn global() -> Value {
    json!({"metadata": {"name": "global"}, "spec": {"clusterSelector": {"selectorType": "LabelSelector", "labelSelector": {}}}})
}

fn binding(set: &str) -> Value {
    json!({"metadata": {"name": set, "namespace": "apps"}, "spec": {"clusterSet": set}})
}

fn placement(spec: Value) -> Value {
    json!({"metadata": {"name": "p", "namespace": "apps"}, "spec": spec})
}

fn score(cluster: &str, value: i64) -> Value {
    json!({
        "metadata": {"name": "cpu-ratio", "namespace": cluster},
        "status": {"scores": [{"name": "cpuRatio", "value": value}]},
    })
}

struct World {
    clusters: Vec<Value>,
    sets: Vec<Value>,
    bindings: Vec<Value>,
    scores: Vec<Value>,
}

impl World {
    fn two_sets() -> World {
        World {
            clusters: vec![
                cluster("east-1", "east", json!({"env": "prod"})),
                cluster("east-2", "east", json!({"env": "dev"})),
                cluster("west-1", "west", json!({"env": "prod"})),
                cluster("west-2", "west", json!({"env": "prod"})),
            ],
            sets: vec![set("east"), set("west")],
            bindings: vec![binding("east"), binding("west")],
            scores: Vec::new(),
        }
    }

    fn decide(&self, placement: &Value, current: &[String]) -> Verdict {
        let other = BTreeMap::new();
        super::decide(Inputs {
            placement,
            clusters: &self.clusters,
            sets: &self.sets,
            bindings: &self.bindings,
            scores: &self.scores,
            current,
            other_decisions: &other,
            pacing: &placement::pace::Pacing::none(),
            moves: &placement::pace::Moves::default(),
            now: "2026-11-25T10:00:00Z".parse().unwrap(),
        })
    }
}

fn sorted(mut names: Vec<String>) -> Vec<String> {
    names.sort();
    names
}

#[test]
fn without_bindings_nothing_is_selected_and_the_reason_says_so() {
    let mut world = World::two_sets();
    world.bindings.clear();
    let verdict = world.decide(&placement(json!({})), &[]);
    assert!(verdict.chosen.is_empty());
    assert_eq!(verdict.conditions[1].reason, "NoManagedClusterSetBindings");
    assert!(!verdict.conditions[0].status, "not misconfigured");
}

#[test]
fn sets_named_in_the_spec_must_be_bound() {
    let world = World::two_sets();
    let verdict = world.decide(&placement(json!({"clusterSets": ["north"]})), &[]);
    assert_eq!(verdict.conditions[1].reason, "NoIntersection");
    assert_eq!(verdict.conditions[1].message, "None of ManagedClusterSets [north] is bound to placement namespace");
}

#[test]
fn a_binding_to_a_set_that_does_not_exist_is_not_valid() {
    let mut world = World::two_sets();
    world.bindings = vec![binding("north")];
    assert_eq!(world.decide(&placement(json!({})), &[]).conditions[1].reason, "NoManagedClusterSetBindings");
}

#[test]
fn empty_sets_are_reported() {
    let mut world = World::two_sets();
    world.clusters.retain(|c| meta::name(c).unwrap().starts_with("west"));
    let verdict = world.decide(&placement(json!({"clusterSets": ["east"]})), &[]);
    assert_eq!(verdict.conditions[1].reason, "AllManagedClusterSetsEmpty");
}

#[test]
fn all_clusters_of_the_bound_sets_without_a_number() {
    let world = World::two_sets();
    let verdict = world.decide(&placement(json!({})), &[]);
    assert_eq!(sorted(verdict.chosen), ["east-1", "east-2", "west-1", "west-2"]);
    assert_eq!(verdict.conditions[1].reason, "AllDecisionsScheduled");
    assert!(verdict.conditions[1].status);
}

#[test]
fn the_spec_sets_narrow_the_bound_sets() {
    let world = World::two_sets();
    let verdict = world.decide(&placement(json!({"clusterSets": ["west"]})), &[]);
    assert_eq!(sorted(verdict.chosen), ["west-1", "west-2"]);
}

#[test]
fn a_label_selector_set_with_an_empty_selector_holds_every_cluster() {
    let mut world = World::two_sets();
    world.sets.push(global());
    world.bindings = vec![binding("global")];
    assert_eq!(world.decide(&placement(json!({})), &[]).chosen.len(), 4);
}

#[test]
fn predicates_are_ored_and_their_selectors_anded() {
    let mut world = World::two_sets();
    world.clusters[1]["status"] =
        json!({"clusterClaims": [{"name": "region.open-cluster-management.io", "value": "us-east-1"}]});
    let spec = json!({"predicates": [
        {"requiredClusterSelector": {"labelSelector": {"matchLabels": {"env": "prod"}}, "claimSelector": {"matchExpressions": [{"key": "region.open-cluster-management.io", "operator": "In", "values": ["us-west-2"]}]}}},
        {"requiredClusterSelector": {"claimSelector": {"matchExpressions": [{"key": "region.open-cluster-management.io", "operator": "In", "values": ["us-east-1"]}]}}},
    ]});
    let verdict = world.decide(&placement(spec), &[]);
    assert_eq!(verdict.chosen, ["east-2"]);
}

#[test]
fn no_matching_cluster_is_reported() {
    let world = World::two_sets();
    let spec = json!({"predicates": [{"requiredClusterSelector": {"labelSelector": {"matchLabels": {"env": "qa"}}}}]});
    let verdict = world.decide(&placement(spec), &[]);
    assert!(verdict.chosen.is_empty());
    assert_eq!(verdict.conditions[1].reason, "NoManagedClusterMatched");
}

#[test]
fn fewer_clusters_than_wanted_leaves_decisions_unscheduled() {
    let world = World::two_sets();
    let verdict = world.decide(&placement(json!({"numberOfClusters": 6})), &[]);
    assert_eq!(verdict.chosen.len(), 4);
    assert_eq!(verdict.conditions[1].reason, "NotAllDecisionsScheduled");
    assert_eq!(verdict.conditions[1].message, "2 cluster decisions unscheduled");
}

/// An add-on score in Exact mode decides alone; raising another cluster's score moves
/// the decision there.
#[test]
fn add_on_scores_pick_and_move_the_decision() {
    let mut world = World::two_sets();
    world.scores = vec![score("east-1", 80), score("east-2", 10), score("west-1", 50), score("west-2", 20)];
    let spec = json!({
        "numberOfClusters": 2,
        "prioritizerPolicy": {"mode": "Exact", "configurations": [
            {"scoreCoordinate": {"type": "AddOn", "addOn": {"resourceName": "cpu-ratio", "scoreName": "cpuRatio"}}, "weight": 1},
        ]},
    });
    let first = world.decide(&placement(spec.clone()), &[]);
    assert_eq!(sorted(first.chosen.clone()), ["east-1", "west-1"]);
    world.scores[3] = score("west-2", 95);
    let second = world.decide(&placement(spec), &first.chosen);
    assert_eq!(sorted(second.chosen), ["east-1", "west-2"]);
}

#[test]
fn a_no_select_taint_keeps_a_cluster_out_unless_tolerated() {
    let mut world = World::two_sets();
    world.clusters[0]["spec"]["taints"] = json!([{"key": "cluster.open-cluster-management.io/unreachable", "effect": "NoSelect", "timeAdded": "2026-11-25T09:59:00Z"}]);
    let verdict = world.decide(&placement(json!({})), &[]);
    assert_eq!(sorted(verdict.chosen), ["east-2", "west-1", "west-2"]);
    let tolerating =
        json!({"tolerations": [{"key": "cluster.open-cluster-management.io/unreachable", "operator": "Exists"}]});
    assert_eq!(world.decide(&placement(tolerating), &[]).chosen.len(), 4);
}

#[test]
fn a_bad_selector_marks_the_placement_misconfigured() {
    let world = World::two_sets();
    let spec = json!({"predicates": [{"requiredClusterSelector": {"labelSelector": {"matchExpressions": [{"key": "env", "operator": "Near"}]}}}]});
    let verdict = world.decide(&placement(spec), &[]);
    assert!(verdict.conditions[0].status, "{:?}", verdict.conditions);
    assert_eq!(verdict.conditions[0].reason, "Misconfigured");
    assert!(verdict.chosen.is_empty());
}
