//! KubeFleet's envelope kinds (`placement.kubernetes-fleet.io/v1beta1` ResourceEnvelope
//! and ClusterResourceEnvelope) in a workspace that acts as the hub, through the
//! front-proxy with stock kubectl and real member agents (`atoll-agent --member-cluster`)
//! applying into two logical clusters of a member installation:
//!
//! - a ResourceEnvelope travels with its selected namespace and a ClusterResourceEnvelope
//!   is picked by a selector of its own kind; each reaches every member as a Work of its
//!   own in `fleet-member-<name>`, with KubeFleet's labels and its name
//!   (`<crp>-work-envelope-<16 hex of SHA-256 of type/namespace/name>`, computed here
//!   with `sha256sum`, outside the code under test); the agent applies what they wrap on
//!   the member, the hub applies none of it, and the placement lists the envelopes (not
//!   what they wrap) among its selected resources and reports Applied and Available;
//! - a change inside an envelope reaches the member copies through the same Works;
//! - a deleted ResourceEnvelope and a deselected ClusterResourceEnvelope take their Works
//!   with them, and the agent removes what they wrapped from the members;
//! - an envelope that wraps an object of the wrong scope fails the placement's selection
//!   with a condition naming the envelope, the key and the fix; fixing it places it, and
//!   deleting the placement takes what the envelopes wrapped off the members. An empty
//!   envelope is refused when written (422).

use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};
use tests::agent::wait_json;
use tests::fleet_members::{hub_workspace, FleetMembers};
use tests::installation::InstallationOptions;
use tests::placement::{condition, is_true, placed, yaml};

const MEMBERS: [&str; 2] = ["e1", "e2"];

/// The envelope kinds' apiVersion.
const ENVELOPE_API: &str = "placement.kubernetes-fleet.io/v1beta1";

/// The label KubeFleet's work generator puts on an envelope's Work, and the two naming it.
const TYPE_LABEL: &str = "kubernetes-fleet.io/envelope-work";
const NAME_LABEL: &str = "kubernetes-fleet.io/envelope-name";
const NAMESPACE_LABEL: &str = "kubernetes-fleet.io/envelope-namespace";
const PARENT_LABEL: &str = "kubernetes-fleet.io/parent-CRP";

/// What `kubectl get` of an absent object says.
const NOT_FOUND: &str = "NotFound";

/// The name `printf %s "$type/$namespace/$name" | sha256sum` gives, cut to 16 hex digits,
/// of placement `crp`'s Work for that envelope.
fn envelope_work_name(crp: &str, kind: &str, namespace: &str, name: &str) -> String {
    let mut child = std::process::Command::new("sha256sum")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("run sha256sum");
    let identity = format!("{kind}/{namespace}/{name}");
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), identity.as_bytes()).unwrap();
    let output = child.wait_with_output().unwrap();
    let digest = String::from_utf8(output.stdout).unwrap();
    format!("{crp}-work-envelope-{}", &digest[..16])
}

/// Waits until `done` holds, polling; the bound catches a bug, not a slow machine.
fn wait_until(what: &str, done: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(90);
    while !done() {
        assert!(Instant::now() < deadline, "{what} did not happen within 90 s");
        std::thread::sleep(Duration::from_millis(250));
    }
}

/// Asserts that `kubectl get` failed because the object is not there.
fn assert_absent(output: tests::Output, what: &str) {
    assert!(!output.success() && output.stderr.contains(NOT_FOUND), "{what}: {}{}", output.stdout, output.stderr);
}

/// A ResourceEnvelope `bundle` in namespace `team` wrapping a ConfigMap (of `version`)
/// and a Role.
fn bundle(version: &str) -> Value {
    json!({
        "apiVersion": ENVELOPE_API, "kind": "ResourceEnvelope",
        "metadata": {"name": "bundle", "namespace": "team"},
        "data": {
            "settings.yaml": {"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "wrapped-settings", "namespace": "team"}, "data": {"version": version}},
            "reader.yaml": {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
                "metadata": {"name": "wrapped-reader", "namespace": "team"},
                "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}]},
        },
    })
}

/// A ClusterResourceEnvelope `cluster-bundle` wrapping a ClusterRole allowing `verbs`.
fn cluster_bundle(verbs: &[&str]) -> Value {
    json!({
        "apiVersion": ENVELOPE_API, "kind": "ClusterResourceEnvelope",
        "metadata": {"name": "cluster-bundle"},
        "data": {"clusterrole.yaml": {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": "envelope-reader"},
            "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": verbs}]}},
    })
}

/// A PickAll placement `name` of namespace `namespace`, and of ClusterResourceEnvelope
/// `cluster_envelope` by a selector of its kind when given.
fn placement(name: &str, namespace: &str, cluster_envelope: Option<&str>) -> Value {
    let mut selectors = vec![json!({"group": "", "version": "v1", "kind": "Namespace", "name": namespace})];
    if let Some(envelope) = cluster_envelope {
        selectors.push(json!({"group": "placement.kubernetes-fleet.io", "version": "v1beta1",
            "kind": "ClusterResourceEnvelope", "name": envelope}));
    }
    json!({
        "apiVersion": "placement.kubernetes-fleet.io/v1", "kind": "ClusterResourcePlacement",
        "metadata": {"name": name},
        "spec": {"resourceSelectors": selectors, "policy": {"placementType": "PickAll"}},
    })
}

/// The Works of member `name` on the hub, by name.
fn works_of(kubectl: impl Fn() -> tests::Kubectl, name: &str) -> BTreeMap<String, Value> {
    let namespace = format!("fleet-member-{name}");
    let works = kubectl().args(["get", "works", "-n", &namespace, "-o", "json"]).ok().json().unwrap();
    let items = works["items"].as_array().cloned().unwrap_or_default();
    items.into_iter().map(|w| (w["metadata"]["name"].as_str().unwrap_or_default().to_string(), w)).collect()
}

/// The kinds of a Work's manifests, in order.
fn manifest_kinds(work: &Value) -> Vec<String> {
    let manifests = work["spec"]["workload"]["manifests"].as_array().cloned().unwrap_or_default();
    manifests.iter().filter_map(|m| m["kind"].as_str().map(str::to_string)).collect()
}

/// The `selectedResources` of a placement as `kind namespace/name` strings.
fn selected(crp: &Value) -> BTreeSet<String> {
    let list = crp["status"]["selectedResources"].as_array().cloned().unwrap_or_default();
    list.iter()
        .map(|r| {
            let text = |field: &str| r[field].as_str().unwrap_or_default().to_string();
            format!("{} {}/{} {}/{}", text("group"), text("version"), text("kind"), text("namespace"), text("name"))
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fleet_envelopes_carry_objects_to_members_and_only_there() {
    let (installation, hub) = hub_workspace(InstallationOptions::default()).await;
    let proxy = installation.proxy();
    let kubectl = || proxy.kubectl().cluster(&hub);

    let labelled: Vec<(&str, Value)> = MEMBERS.iter().map(|n| (*n, json!({"member": n}))).collect();
    let fleet = FleetMembers::join(&installation, &hub, &labelled).await;
    let in_member = |name: &str| fleet.shard.kubectl_with(&fleet.configs[name]);
    // Whether member `name` answers `kubectl get <args>` with NotFound.
    let gone = |name: &str, args: &[&str]| in_member(name).arg("get").args(args).run().stderr.contains(NOT_FOUND);
    for name in MEMBERS {
        wait_json(kubectl, &["membercluster", name], "joined by its agent", |m| is_true(m, "Joined"));
        wait_json(kubectl, &["namespace", &format!("fleet-member-{name}")], "the member's namespace", |ns| {
            ns["metadata"]["labels"]["kubernetes-fleet.io/is-fleet-resource"] == "true"
        });
    }

    // Namespace team with a plain ConfigMap and a ResourceEnvelope; a ClusterResourceEnvelope
    // beside it, picked by the placement's second selector.
    let team = vec![
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}}),
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "plain", "namespace": "team"},
            "data": {"a": "b"}}),
        bundle("1"),
        cluster_bundle(&["get"]),
    ];
    kubectl().args(["apply", "-f", "-"]).stdin(yaml(&team)).ok();
    kubectl().args(["apply", "-f", "-"]).stdin(yaml(&[placement("bundles", "team", Some("cluster-bundle"))])).ok();
    let available = wait_json(kubectl, &["crp", "bundles"], "the envelopes available everywhere", |c| {
        is_true(c, "ClusterResourcePlacementAvailable")
    });
    assert!(is_true(&available, "ClusterResourcePlacementApplied"), "{available}");
    let statuses = available["status"]["placementStatuses"].as_array().cloned().unwrap_or_default();
    let clusters: BTreeSet<&str> = statuses.iter().filter_map(|s| s["clusterName"].as_str()).collect();
    assert_eq!(clusters, BTreeSet::from(MEMBERS), "{available}");
    for status in &statuses {
        // A placement status holds its conditions itself, not under `status`.
        let per_cluster = json!({"status": status});
        assert!(is_true(&per_cluster, "Applied") && is_true(&per_cluster, "Available"), "{status}");
    }
    // The envelopes are selected, not what they wrap (KubeFleet lists envelopes only).
    let listed = selected(&available);
    let expected: BTreeSet<String> = [
        " v1/Namespace /team",
        " v1/ConfigMap team/plain",
        "placement.kubernetes-fleet.io v1beta1/ResourceEnvelope team/bundle",
        "placement.kubernetes-fleet.io v1beta1/ClusterResourceEnvelope /cluster-bundle",
    ]
    .into_iter()
    .map(String::from)
    .collect();
    assert_eq!(listed, expected, "{available}");

    let bundle_work = envelope_work_name("bundles", "ResourceEnvelope", "team", "bundle");
    let cluster_work = envelope_work_name("bundles", "ClusterResourceEnvelope", "", "cluster-bundle");
    for name in MEMBERS {
        let works = works_of(kubectl, name);
        let names: BTreeSet<&str> = works.keys().map(String::as_str).collect();
        assert_eq!(
            names,
            BTreeSet::from(["bundles-work", bundle_work.as_str(), cluster_work.as_str()]),
            "{name}: the main Work and one per envelope, named as KubeFleet names them"
        );
        let work = &works[&bundle_work];
        let labels = &work["metadata"]["labels"];
        assert_eq!(labels[TYPE_LABEL], "ResourceEnvelope", "{work}");
        assert_eq!(labels[NAME_LABEL], "bundle", "{work}");
        assert_eq!(labels[NAMESPACE_LABEL], "team", "{work}");
        assert_eq!(labels[PARENT_LABEL], "bundles", "{work}");
        assert_eq!(manifest_kinds(work), ["ConfigMap", "Role"], "{work}");
        assert!(is_true(work, "Applied") && is_true(work, "Available"), "{name}: {work}");
        let work = &works[&cluster_work];
        let labels = &work["metadata"]["labels"];
        assert_eq!(labels[TYPE_LABEL], "ClusterResourceEnvelope", "{work}");
        assert_eq!(labels[NAME_LABEL], "cluster-bundle", "{work}");
        assert!(labels.get(NAMESPACE_LABEL).is_none(), "a cluster-scoped envelope has no namespace label: {work}");
        assert_eq!(labels[PARENT_LABEL], "bundles", "{work}");
        assert_eq!(manifest_kinds(work), ["ClusterRole"], "{work}");
        assert!(is_true(work, "Applied") && is_true(work, "Available"), "{name}: {work}");
        // The main Work carries the plain objects: neither envelope nor what they wrap.
        assert_eq!(manifest_kinds(&works["bundles-work"]), ["Namespace", "ConfigMap"], "{name}");

        let settings = in_member(name)
            .args(["get", "configmap", "wrapped-settings", "-n", "team", "-o", "json"])
            .ok()
            .json()
            .unwrap();
        assert_eq!(settings["data"]["version"], "1", "{name}: {settings}");
        let role = in_member(name).args(["get", "role", "wrapped-reader", "-n", "team", "-o", "json"]).ok().json();
        assert_eq!(role.unwrap()["rules"][0]["verbs"], json!(["get"]), "{name}");
        let cluster_role = in_member(name).args(["get", "clusterrole", "envelope-reader", "-o", "json"]).ok().json();
        assert_eq!(cluster_role.unwrap()["rules"][0]["verbs"], json!(["get"]), "{name}");
        assert!(in_member(name).args(["get", "configmap", "plain", "-n", "team"]).run().success(), "{name}");
        // The envelopes themselves stay on the hub.
        assert!(!in_member(name).args(["get", "resourceenvelope", "bundle", "-n", "team"]).run().success());
        assert!(!in_member(name).args(["get", "clusterresourceenvelope", "cluster-bundle"]).run().success());
    }
    // The hub applies nothing an envelope wraps.
    let on_hub = |args: &[&str]| kubectl().arg("get").args(args).run();
    assert_absent(on_hub(&["configmap", "wrapped-settings", "-n", "team"]), "the wrapped ConfigMap on the hub");
    assert_absent(on_hub(&["role", "wrapped-reader", "-n", "team"]), "the wrapped Role on the hub");
    assert_absent(on_hub(&["clusterrole", "envelope-reader"]), "the wrapped ClusterRole on the hub");

    // A change inside each envelope: the same Works carry it, the members' copies follow.
    kubectl().args(["apply", "-f", "-"]).stdin(yaml(&[bundle("2"), cluster_bundle(&["get", "list"])])).ok();
    for name in MEMBERS {
        wait_until(&format!("{name}'s wrapped ConfigMap at version 2"), || {
            let out = in_member(name).args(["get", "configmap", "wrapped-settings", "-n", "team", "-o", "json"]).run();
            out.json().is_ok_and(|c| c["data"]["version"] == "2")
        });
        wait_until(&format!("{name}'s wrapped ClusterRole allows list"), || {
            let out = in_member(name).args(["get", "clusterrole", "envelope-reader", "-o", "json"]).run();
            out.json().is_ok_and(|r| r["rules"][0]["verbs"] == json!(["get", "list"]))
        });
        let names: BTreeSet<String> = works_of(kubectl, name).into_keys().collect();
        let expected = BTreeSet::from(["bundles-work".to_string(), bundle_work.clone(), cluster_work.clone()]);
        assert_eq!(names, expected, "{name}: updated in place, not replaced");
    }
    wait_json(kubectl, &["crp", "bundles"], "the change available everywhere", |c| {
        is_true(c, "ClusterResourcePlacementAvailable") && c["status"]["observedResourceIndex"] != "0"
    });
    assert_absent(on_hub(&["configmap", "wrapped-settings", "-n", "team"]), "the changed ConfigMap on the hub");
    assert_absent(on_hub(&["clusterrole", "envelope-reader"]), "the changed ClusterRole on the hub");

    // The ResourceEnvelope deleted: its Works go, and the agents remove what it wrapped.
    kubectl().args(["delete", "resourceenvelope", "bundle", "-n", "team"]).ok();
    for name in MEMBERS {
        let namespace = format!("fleet-member-{name}");
        wait_json(kubectl, &["works", "-n", &namespace], "the ResourceEnvelope's Work deleted", |l| {
            let items = l["items"].as_array().cloned().unwrap_or_default();
            !items.iter().any(|w| w["metadata"]["name"] == bundle_work.as_str())
        });
        wait_until(&format!("{name}'s wrapped ConfigMap and Role removed"), || {
            gone(name, &["configmap", "wrapped-settings", "-n", "team"])
                && gone(name, &["role", "wrapped-reader", "-n", "team"])
        });
        assert!(in_member(name).args(["get", "configmap", "plain", "-n", "team"]).run().success(), "{name}");
        assert!(in_member(name).args(["get", "clusterrole", "envelope-reader"]).run().success(), "{name}");
    }
    // The ClusterResourceEnvelope deselected: the same for it.
    kubectl().args(["apply", "-f", "-"]).stdin(yaml(&[placement("bundles", "team", None)])).ok();
    for name in MEMBERS {
        let namespace = format!("fleet-member-{name}");
        wait_json(kubectl, &["works", "-n", &namespace], "only the main Work left", |l| {
            let items = l["items"].as_array().cloned().unwrap_or_default();
            let names: Vec<&str> = items.iter().filter_map(|w| w["metadata"]["name"].as_str()).collect();
            names == ["bundles-work"]
        });
        wait_until(&format!("{name}'s wrapped ClusterRole removed"), || {
            gone(name, &["clusterrole", "envelope-reader"])
        });
        assert!(in_member(name).args(["get", "configmap", "plain", "-n", "team"]).run().success(), "{name}");
    }
    let after = wait_json(kubectl, &["crp", "bundles"], "the placement without envelopes", |c| {
        is_true(c, "ClusterResourcePlacementAvailable") && !selected(c).iter().any(|r| r.contains("Envelope"))
    });
    assert_eq!(selected(&after).len(), 2, "{after}");
    assert!(kubectl().args(["get", "clusterresourceenvelope", "cluster-bundle"]).run().success(), "deselected, kept");

    // An empty envelope is refused when written.
    let empty = json!({"apiVersion": ENVELOPE_API, "kind": "ResourceEnvelope",
        "metadata": {"name": "empty", "namespace": "team"}, "data": {}});
    let refused = kubectl().args(["create", "-f", "-"]).stdin(empty.to_string()).fails();
    assert!(refused.stderr.contains("Invalid") && refused.stderr.contains("data"), "{}", refused.stderr);
    assert_absent(on_hub(&["resourceenvelope", "empty", "-n", "team"]), "a refused envelope stored");

    // Envelopes wrapping objects of the wrong scope: the selection fails, and the
    // placement's Scheduled condition names the envelope, the key and what to do.
    let misfit_cluster = |data: Value| {
        json!({"apiVersion": ENVELOPE_API, "kind": "ClusterResourceEnvelope",
            "metadata": {"name": "misfit-cluster"}, "data": data})
    };
    let misfit = |data: Value| {
        json!({"apiVersion": ENVELOPE_API, "kind": "ResourceEnvelope",
            "metadata": {"name": "misfit", "namespace": "broken"}, "data": data})
    };
    let stray_config_map = json!({"cm.yaml": {"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "stray", "namespace": "broken"}, "data": {"a": "b"}}});
    let stray_cluster_role = json!({"role.yaml": {"apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole", "metadata": {"name": "stray"}, "rules": []}});
    let broken = vec![
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "broken"}}),
        misfit(stray_cluster_role),
        misfit_cluster(stray_config_map),
        placement("broken", "broken", Some("misfit-cluster")),
    ];
    kubectl().args(["apply", "-f", "-"]).stdin(yaml(&broken)).ok();
    let failed = |crp: &Value, envelope: &str| {
        condition(crp, "ClusterResourcePlacementScheduled")
            .is_some_and(|c| c["status"] == "False" && c["message"].as_str().unwrap_or_default().contains(envelope))
    };
    let refused = wait_json(kubectl, &["crp", "broken"], "the misfit ClusterResourceEnvelope named", |c| {
        failed(c, "ClusterResourceEnvelope misfit-cluster")
    });
    let scheduled = condition(&refused, "ClusterResourcePlacementScheduled").unwrap();
    assert_eq!(scheduled["reason"], "InvalidResourceSelectors", "{scheduled}");
    let message = scheduled["message"].as_str().unwrap();
    assert!(message.contains("key cm.yaml") && message.contains("wrap it in a ResourceEnvelope"), "{message}");
    let bindings = kubectl().args(["get", "clusterresourcebindings", "-o", "json"]).ok().json().unwrap();
    assert!(placed(&bindings, "broken").is_empty(), "a failed selection places nothing: {bindings}");
    // Fixed, the other misfit is named next.
    let guard = json!({"guard.yaml": {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": "guard"}, "rules": []}});
    kubectl().args(["apply", "-f", "-"]).stdin(yaml(&[misfit_cluster(guard)])).ok();
    let refused = wait_json(kubectl, &["crp", "broken"], "the misfit ResourceEnvelope named", |c| {
        failed(c, "ResourceEnvelope broken/misfit")
    });
    let scheduled = condition(&refused, "ClusterResourcePlacementScheduled").unwrap();
    assert_eq!(scheduled["reason"], "InvalidResourceSelectors", "{scheduled}");
    let message = scheduled["message"].as_str().unwrap();
    assert!(message.contains("key role.yaml") && message.contains("wrap it in a ClusterResourceEnvelope"), "{message}");
    // Both fixed: placed.
    let watcher = json!({"watcher.yaml": {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
        "metadata": {"name": "watcher", "namespace": "broken"}, "rules": []}});
    kubectl().args(["apply", "-f", "-"]).stdin(yaml(&[misfit(watcher)])).ok();
    let fixed = wait_json(kubectl, &["crp", "broken"], "the fixed envelopes available", |c| {
        is_true(c, "ClusterResourcePlacementAvailable")
    });
    assert!(is_true(&fixed, "ClusterResourcePlacementScheduled"), "{fixed}");
    for name in MEMBERS {
        assert!(in_member(name).args(["get", "role", "watcher", "-n", "broken"]).run().success(), "{name}");
        assert!(in_member(name).args(["get", "clusterrole", "guard"]).run().success(), "{name}");
        assert_absent(in_member(name).args(["get", "clusterrole", "stray"]).run(), "the stray ClusterRole");
        assert_absent(in_member(name).args(["get", "configmap", "stray", "-n", "broken"]).run(), "the stray ConfigMap");
    }
    assert_absent(on_hub(&["role", "watcher", "-n", "broken"]), "the fixed envelope's Role on the hub");
    assert_absent(on_hub(&["clusterrole", "guard"]), "the fixed envelope's ClusterRole on the hub");

    // The placement deleted: its envelopes' Works go with its bindings, and what they
    // wrapped leaves the members.
    kubectl().args(["delete", "crp", "broken"]).ok();
    for name in MEMBERS {
        wait_until(&format!("{name}'s envelope objects of the deleted placement removed"), || {
            gone(name, &["role", "watcher", "-n", "broken"]) && gone(name, &["clusterrole", "guard"])
        });
        let left: Vec<String> = works_of(kubectl, name)
            .into_iter()
            .filter(|(_, w)| w["metadata"]["labels"][PARENT_LABEL] == "broken")
            .map(|(n, _)| n)
            .collect();
        assert!(left.is_empty(), "{name}: {left:?}");
    }
}
