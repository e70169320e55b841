use super::*;
use serde_json::json;

fn crp(policy: Value) -> Value {
    json!({
        "metadata": {"name": "web"},
        "spec": {
            "resourceSelectors": [{"group": "", "version": "v1", "kind": "Namespace", "name": "web"}],
            "policy": policy,
        },
    })
}

fn fields(causes: &Causes) -> Vec<&str> {
    causes.iter().map(|(field, _)| field.as_str()).collect()
}

fn required_term(term: Value) -> Value {
    json!({"placementType": "PickN", "numberOfClusters": 2, "affinity": {"clusterAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"clusterSelectorTerms": [term]}}}})
}

fn preferred_term(preference: Value) -> Value {
    json!({"placementType": "PickN", "numberOfClusters": 2, "affinity": {"clusterAffinity": {
        "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 10, "preference": preference}]}}})
}

/// Each of KubeFleet's create rules: a policy that passes, and for each broken one the
/// field a person has to fix.
#[test]
fn a_new_placement_is_refused_with_the_field_to_fix() {
    let required =
        "spec.policy.affinity.clusterAffinity.requiredDuringSchedulingIgnoredDuringExecution.clusterSelectorTerms[0]";
    let preferred = "spec.policy.affinity.clusterAffinity.preferredDuringSchedulingIgnoredDuringExecution[0]";
    let cases: Vec<(&str, Value, Vec<String>)> = vec![
        ("no policy is PickAll", Value::Null, vec![]),
        (
            "a valid PickN",
            json!({"placementType": "PickN", "numberOfClusters": 2,
                "tolerations": [{"key": "maintenance", "operator": "Exists"}],
                "topologySpreadConstraints": [{"topologyKey": "region", "maxSkew": 1}]}),
            vec![],
        ),
        (
            "PickFixed takes names only",
            json!({"placementType": "PickFixed", "clusterNames": ["a"], "numberOfClusters": 1,
                "affinity": {}, "tolerations": [{"key": "k", "operator": "Exists"}]}),
            vec![
                "spec.policy.numberOfClusters".into(),
                "spec.policy.affinity".into(),
                "spec.policy.tolerations".into(),
            ],
        ),
        (
            "PickFixed names are member names, each once",
            json!({"placementType": "PickFixed", "clusterNames": ["a", "Not_A_Name", "a", "x".repeat(64)]}),
            vec![
                "spec.policy.clusterNames[1]".into(),
                "spec.policy.clusterNames[2]".into(),
                "spec.policy.clusterNames[3]".into(),
            ],
        ),
        (
            "PickAll takes no names, count or spread",
            json!({"placementType": "PickAll", "clusterNames": ["a"], "numberOfClusters": 1,
                "topologySpreadConstraints": [{"topologyKey": "region"}]}),
            vec![
                "spec.policy.clusterNames".into(),
                "spec.policy.topologySpreadConstraints".into(),
                "spec.policy.numberOfClusters".into(),
            ],
        ),
        (
            "PickAll ranks nothing",
            json!({"placementType": "PickAll", "affinity": {"clusterAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 1, "preference": {}}]}}}),
            vec!["spec.policy.affinity.clusterAffinity.preferredDuringSchedulingIgnoredDuringExecution".into()],
        ),
        (
            "PickN needs its count and no names",
            json!({"placementType": "PickN", "clusterNames": ["a"]}),
            vec!["spec.policy.clusterNames".into(), "spec.policy.numberOfClusters".into()],
        ),
        (
            "spread needs a key, a skew of at least 1 and a known mode",
            json!({"placementType": "PickN", "numberOfClusters": 1, "topologySpreadConstraints": [
                {"maxSkew": 0, "whenUnsatisfiable": "Sometimes"}]}),
            vec![
                "spec.policy.topologySpreadConstraints[0].topologyKey".into(),
                "spec.policy.topologySpreadConstraints[0].maxSkew".into(),
                "spec.policy.topologySpreadConstraints[0].whenUnsatisfiable".into(),
            ],
        ),
        (
            "a required term filters: no sorter, valid labels",
            required_term(json!({"labelSelector": {"matchExpressions": [{"key": "env", "operator": "In"}]},
                "propertySorter": {"name": "kubernetes-fleet.io/node-count", "sortOrder": "Descending"}})),
            vec![format!("{required}.labelSelector"), format!("{required}.propertySorter")],
        ),
        (
            "property requirements: names, operators, one quantity",
            required_term(json!({"propertySelector": {"matchExpressions": [
                {"name": "resources.kubernetes-fleet.io/spare-cpu", "operator": "Gt", "values": ["1"]},
                {"name": "kubernetes-fleet.io/node-count", "operator": "Between", "values": ["1"]},
                {"name": "kubernetes-fleet.io/node-count", "operator": "Ge", "values": ["1", "2"]},
                {"name": "kubernetes-fleet.io/node-count", "operator": "Le", "values": ["many"]},
            ]}})),
            vec![
                format!("{required}.propertySelector.matchExpressions[0].name"),
                format!("{required}.propertySelector.matchExpressions[1].operator"),
                format!("{required}.propertySelector.matchExpressions[2].values"),
                format!("{required}.propertySelector.matchExpressions[3].values[0]"),
            ],
        ),
        (
            "property requirements that no value meets",
            required_term(json!({"propertySelector": {"matchExpressions": [
                {"name": "kubernetes-fleet.io/node-count", "operator": "Gt", "values": ["10"]},
                {"name": "kubernetes-fleet.io/node-count", "operator": "Lt", "values": ["5"]},
            ]}})),
            vec![format!("{required}.propertySelector.matchExpressions")],
        ),
        (
            "a preferred term scores: no property selector, a known sort order",
            preferred_term(json!({"propertySelector": {"matchExpressions": []},
                "propertySorter": {"name": "resources.kubernetes-fleet.io/available-cpu", "sortOrder": "Upward"}})),
            vec![
                format!("{preferred}.preference.propertySelector"),
                format!("{preferred}.preference.propertySorter.sortOrder"),
            ],
        ),
        (
            "tolerations: Exists without value, Equal with a key and a label value, each once",
            json!({"placementType": "PickAll", "tolerations": [
                {"key": "a", "operator": "Exists", "value": "x"},
                {"value": "x"},
                {"key": "b", "value": "not a label value!"},
                {"key": "c", "operator": "Equal", "value": "v"},
                {"key": "c", "value": "v"},
            ]}),
            vec![
                "spec.policy.tolerations[0].value".into(),
                "spec.policy.tolerations[1].key".into(),
                "spec.policy.tolerations[2].value".into(),
                "spec.policy.tolerations[4]".into(),
            ],
        ),
    ];
    for (case, policy, want) in cases {
        let mut object = crp(policy.clone());
        if policy.is_null() {
            object["spec"].as_object_mut().unwrap().remove("policy");
        }
        let causes = placement(None, &object);
        let want: Vec<&str> = want.iter().map(String::as_str).collect();
        assert_eq!(fields(&causes), want, "{case}: {causes:?}");
    }
}

#[test]
fn selectors_names_and_the_rollout_are_checked() {
    let mut object = crp(json!({"placementType": "PickAll"}));
    object["metadata"]["name"] = json!("p".repeat(64));
    object["spec"]["resourceSelectors"] = json!([
        {"group": "", "version": "v1", "kind": "Namespace", "name": "a", "labelSelector": {}},
        {"group": "", "version": "v1", "kind": "Namespace", "labelSelector": {"matchLabels": {"bad key!": "x"}}},
    ]);
    object["spec"]["strategy"] = json!({
        "rollingUpdate": {"maxUnavailable": "150%", "maxSurge": 1},
        "applyStrategy": {"type": "ClientSideApply", "serverSideApplyConfig": {"force": true}},
    });
    let causes = placement(None, &object);
    assert_eq!(
        fields(&causes),
        [
            "metadata.name",
            "spec.resourceSelectors[0]",
            "spec.resourceSelectors[1].labelSelector",
            "spec.strategy.rollingUpdate.maxUnavailable",
            "spec.strategy.applyStrategy.serverSideApplyConfig",
        ],
        "{causes:?}"
    );
}

/// The placement type and the tolerations already there cannot change; tolerations may
/// be added; a policy once set stays. The message says what to do instead.
#[test]
fn an_update_keeps_the_placement_type_and_every_toleration() {
    let tolerations = json!([{"key": "maintenance", "operator": "Exists"}, {"key": "zone", "value": "a"}]);
    let old = crp(json!({"placementType": "PickN", "numberOfClusters": 2, "tolerations": tolerations}));

    let mut scaled = old.clone();
    scaled["spec"]["policy"]["numberOfClusters"] = json!(3);
    assert!(placement(Some(&old), &scaled).is_empty(), "scaling is an update like any other");

    let mut added = old.clone();
    added["spec"]["policy"]["tolerations"] = json!([{"key": "zone", "operator": "Equal", "value": "a"},
        {"key": "maintenance", "operator": "Exists"}, {"key": "new", "operator": "Exists"}]);
    assert!(placement(Some(&old), &added).is_empty(), "added, reordered, the default operator spelled out");

    let mut changed = old.clone();
    changed["spec"]["policy"]["tolerations"][1]["value"] = json!("b");
    let causes = placement(Some(&old), &changed);
    assert_eq!(fields(&causes), ["spec.policy.tolerations"]);
    let message = &causes[0].1;
    assert!(message.starts_with("Forbidden: tolerations have been updated/deleted"), "{message}");
    assert!(message.contains("{key: \"zone\", operator: Equal, value: \"a\", effect: \"\"}"), "{message}");
    assert!(!message.contains("maintenance"), "only what is missing is named: {message}");

    let mut removed = old.clone();
    removed["spec"]["policy"].as_object_mut().unwrap().remove("tolerations");
    assert_eq!(fields(&placement(Some(&old), &removed)), ["spec.policy.tolerations"]);

    let mut retyped = old.clone();
    retyped["spec"]["policy"] = json!({"placementType": "PickAll", "tolerations": tolerations});
    let causes = placement(Some(&old), &retyped);
    assert_eq!(fields(&causes), ["spec.policy.placementType"]);
    assert!(causes[0].1.starts_with("Invalid value: \"PickAll\": placement type is immutable (it is PickN)"));
    assert!(causes[0].1.contains("create a new ClusterResourcePlacement"), "{}", causes[0].1);

    let mut dropped = old.clone();
    dropped["spec"].as_object_mut().unwrap().remove("policy");
    let causes = placement(Some(&old), &dropped);
    assert_eq!(fields(&causes), ["spec.policy"]);
    assert!(causes[0].1.contains("policy cannot be removed once set"), "{}", causes[0].1);

    // No policy is PickAll: adding PickAll explicitly keeps the type, PickN changes it.
    let mut bare = crp(Value::Null);
    bare["spec"].as_object_mut().unwrap().remove("policy");
    let mut explicit = bare.clone();
    explicit["spec"]["policy"] = json!({"placementType": "PickAll"});
    assert!(placement(Some(&bare), &explicit).is_empty());
    explicit["spec"]["policy"] = json!({"placementType": "PickN", "numberOfClusters": 1});
    assert_eq!(fields(&placement(Some(&bare), &explicit)), ["spec.policy.placementType"]);
}

/// The hub's own writes that leave the spec alone (status, annotations, finalizers) pass
/// the storage's validation even for a placement stored before a rule existed (a user's
/// request meets [`stored_invalid_update`] first).
#[test]
fn writes_that_leave_the_spec_alone_are_not_checked() {
    let stored = crp(json!({"placementType": "PickFixed", "clusterNames": ["a", "a"]}));
    assert!(!placement(None, &stored).is_empty());
    let mut annotated = stored.clone();
    annotated["metadata"]["annotations"] = json!({"placement.atoll.io/rebalance": "now"});
    annotated["status"] = json!({"conditions": []});
    assert!(placement(Some(&stored), &annotated).is_empty());
}

/// KubeFleet's rule for a stored placement that breaks the rules: a user's update of it
/// is refused (one that would fix it too) unless it is being deleted, with the causes of
/// the stored object and what to do; once it is being deleted any update passes, so a
/// finalizer can be removed; status writes and the hub's own writes never meet the rule.
#[test]
fn a_stored_invalid_placement_can_only_be_deleted() {
    let stored = crp(json!({"placementType": "PickFixed", "clusterNames": ["a", "a"]}));
    let refusal = stored_invalid_update(&stored, None);
    assert_eq!(fields(&refusal), ["spec", "spec.policy.clusterNames[1]"]);
    let why = &refusal[0].1;
    assert!(why.starts_with("Forbidden: the stored ClusterResourcePlacement \"web\" breaks the rules"), "{why}");
    assert!(why.contains("cannot be updated, only deleted"), "{why}");
    assert!(why.contains("kubectl delete clusterresourceplacement web"), "{why}");
    assert!(refusal[1].1.starts_with("in the stored object: Duplicate value: \"a\""), "{}", refusal[1].1);
    let error = ApiError::invalid("ClusterResourcePlacement", super::PLACEMENT_GROUP, "web", &refusal);
    assert_eq!(error.code, 422);

    let cases: Vec<(&str, Value, Option<&str>, bool)> = vec![
        ("a user's update of the stored invalid placement", stored.clone(), None, true),
        ("a status write", stored.clone(), Some("status"), false),
        ("a valid stored placement", crp(json!({"placementType": "PickFixed", "clusterNames": ["a"]})), None, false),
    ];
    for (case, old, subresource, refused) in cases {
        assert_eq!(!stored_invalid_update(&old, subresource).is_empty(), refused, "{case}");
    }

    let mut deleting = stored.clone();
    deleting["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
    deleting["metadata"]["finalizers"] = json!(["example.com/hold"]);
    assert!(stored_invalid_update(&deleting, None).is_empty(), "being deleted: let through");
    let mut released = deleting.clone();
    released["metadata"]["finalizers"] = json!([]);
    assert!(placement(Some(&deleting), &released).is_empty(), "the finalizer goes");
    let mut retyped = deleting.clone();
    retyped["spec"]["policy"] = json!({"placementType": "PickN"});
    assert!(placement(Some(&deleting), &retyped).is_empty(), "KubeFleet checks nothing more once it is deleted");

    // A valid placement being deleted is still checked as any update is.
    let mut valid = crp(json!({"placementType": "PickN", "numberOfClusters": 2}));
    valid["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
    let mut retyped = valid.clone();
    retyped["spec"]["policy"] = json!({"placementType": "PickAll"});
    assert_eq!(fields(&placement(Some(&valid), &retyped)), ["spec.policy.placementType"]);
}

#[test]
fn selectors_of_namespaced_kinds_are_refused() {
    let mut object = crp(json!({"placementType": "PickAll"}));
    object["spec"]["resourceSelectors"] = json!([
        {"group": "", "version": "v1", "kind": "Namespace", "name": "web"},
        {"group": "", "version": "v1", "kind": "ConfigMap", "name": "settings"},
        {"group": "example.io", "version": "v1", "kind": "Widget"},
    ]);
    let served = |group: &str, kind: &str| match (group, kind) {
        ("", "Namespace") => Some(false),
        ("", "ConfigMap") => Some(true),
        _ => None,
    };
    let causes = namespaced_selectors(&object, served);
    assert_eq!(fields(&causes), ["spec.resourceSelectors[1].kind"], "a kind not served yet is let in");
    assert!(causes[0].1.contains("select its Namespace"), "{}", causes[0].1);
}
