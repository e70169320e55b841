//! Placement made real: `atoll-agent` processes sync what is placed on their SyncTargets
//! into member clusters. The hub is root + 2 shards, a cache and the front-proxy; the
//! inventory (Locations cloud=aws and cloud=gce with two SyncTargets each, one agent per
//! target, and the widgets APIExport) lives on one shard, the user workspace with its
//! Placement (on aws) on the other. The members are four logical clusters of a second
//! Atoll installation, standing in for physical clusters: the agent only uses the
//! Kubernetes API. Everything is driven with stock kubectl.
//!
//! - a ConfigMap and a CR (a bound Widget) appear in the chosen member, held upstream by
//!   the agent's finalizer; the member's status flows back; an object the member rejects
//!   shows why upstream while the rest syncs;
//! - the chosen agent dies: its SyncTarget stops heartbeating, the namespace moves to the
//!   other target of the Location, whose agent syncs it; the old member is cleaned up when
//!   the old agent returns;
//! - deleting the Placement: labels, then the downstream objects, go, and no finalizer is
//!   left behind.

use http::StatusCode;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::PathBuf;
use tests::agent::{location, states, sync_target, wait_json, AgentProcess};
use tests::cache::CacheTopology;
use tests::installation::{Installation, InstallationOptions};
use tests::kubectl::Kubectl;
use tests::otlp::Receiver;
use tests::shard::ShardProcess;
use tests::traces::{agent_apply, wait_for, AgentApply, Trace, INTERNAL, SERVER};

const FINALIZER: &str = "workload.kcp.io/syncer-";

/// kcp's two Locations, each with two SyncTargets, each served by an agent.
const TARGETS: [&str; 4] = ["aws-1", "aws-2", "gce-1", "gce-2"];

fn inventory(path: &str) -> String {
    let target = |name: &str| {
        let spec = format!(r#"{{supportedAPIExports: [{{export: widgets, path: "{path}"}}]}}"#);
        sync_target(name, &name[..3], &spec)
    };
    let rbac = |name: &str| {
        format!(
            r#"
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: agent-{name}
  annotations: {{internal.kcp.io/replicate: "true"}}
rules:
- apiGroups: [tenancy.kcp.io]
  resources: [workspaces/content]
  verbs: [access]
- apiGroups: [workload.kcp.io]
  resources: [synctargets]
  resourceNames: [{name}]
  verbs: [get, list, watch, sync]
- apiGroups: [workload.kcp.io]
  resources: [synctargets/status]
  resourceNames: [{name}]
  verbs: [get, patch, update]
- apiGroups: [apis.kcp.io]
  resources: [apiexports, apiresourceschemas]
  verbs: [get, list]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: agent-{name}
  annotations: {{internal.kcp.io/replicate: "true"}}
roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: agent-{name}}}
subjects: [{{apiGroup: rbac.authorization.k8s.io, kind: User, name: agent-{name}}}]
"#
        )
    };
    let widgets = r#"
apiVersion: apis.kcp.io/v1alpha1
kind: APIResourceSchema
metadata: {name: v1.widgets.example.io}
spec:
  group: example.io
  names: {kind: Widget, listKind: WidgetList, plural: widgets, singular: widget}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      type: object
      x-kubernetes-preserve-unknown-fields: true
---
apiVersion: apis.kcp.io/v1alpha1
kind: APIExport
metadata: {name: widgets}
spec:
  latestResourceSchemas: [v1.widgets.example.io]
"#;
    let mut documents: Vec<String> = TARGETS.iter().flat_map(|t| [target(t), rbac(t)]).collect();
    documents.extend([widgets.to_string(), location("aws", "aws"), location("gce", "gce")]);
    documents.join("\n---\n")
}

/// The member's Widget CRD: it refuses sizes over 10 (the hub's schema does not).
const MEMBER_CRD: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.io}
spec:
  group: example.io
  names: {kind: Widget, listKind: WidgetList, plural: widgets, singular: widget}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size: {type: integer, maximum: 10}
          status:
            type: object
            x-kubernetes-preserve-unknown-fields: true
"#;

fn user_objects(inventory: &str) -> String {
    let objects = [
        json!({"apiVersion": "apis.kcp.io/v1alpha1", "kind": "APIBinding", "metadata": {"name": "widgets"},
            "spec": {"reference": {"export": {"path": inventory, "name": "widgets"}}}}),
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "app", "labels": {"team": "a"}}}),
        json!({"apiVersion": "scheduling.kcp.io/v1alpha1", "kind": "Placement", "metadata": {"name": "on-aws"},
            "spec": {"locationSelectors": [{"matchLabels": {"cloud": "aws"}}],
                "locationResource": {"group": "workload.kcp.io", "version": "v1alpha1", "resource": "synctargets"},
                "namespaceSelector": {"matchLabels": {"team": "a"}}, "locationWorkspace": inventory}}),
    ];
    objects.iter().map(|o| serde_yaml_ng::to_string(o).unwrap()).collect::<Vec<_>>().join("---\n")
}

fn widget(name: &str, size: u32) -> String {
    json!({"apiVersion": "example.io/v1", "kind": "Widget", "metadata": {"name": name, "namespace": "app"},
        "spec": {"size": size}})
    .to_string()
}

/// The member's copies of `resource` owned by SyncTarget `key`, by name.
fn copies(member: &dyn Fn() -> Kubectl, resource: &str, key: &str) -> BTreeMap<String, Value> {
    let selector = format!("internal.workload.kcp.io/cluster={key}");
    let list = member().args(["get", resource, "-A", "-l", &selector, "-o", "json"]).ok().json().unwrap();
    let items = list["items"].as_array().cloned().unwrap_or_default();
    items.into_iter().map(|item| (item["metadata"]["name"].as_str().unwrap_or_default().to_string(), item)).collect()
}

fn wait_copies(
    member: &dyn Fn() -> Kubectl,
    resource: &str,
    key: &str,
    what: &str,
    check: impl Fn(&BTreeMap<String, Value>) -> bool,
) {
    let deadline = std::time::Instant::now() + tests::agent::WAIT;
    loop {
        let found = copies(member, resource, key);
        if check(&found) {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{what}: member {resource} {:?}",
            found.keys().collect::<Vec<_>>()
        );
        std::thread::sleep(std::time::Duration::from_millis(250));
    }
}

/// The sync view answers the SyncTarget's own agent only, narrowed to what is placed on
/// the target, and lets it write only its own keys and status; ordinary users cannot
/// place objects by writing placement's labels.
async fn views_admit_their_agent_only(
    installation: &Installation,
    inventory: &str,
    chosen: &str,
    other: &str,
    key: &str,
    user_path: &str,
) {
    let shard = installation.by_name("shard-2").unwrap();
    let target =
        installation.proxy().kubectl().cluster(inventory).args(["get", "synctarget", chosen, "-o", "json"]).ok();
    let target = target.json().unwrap();
    let views: Vec<&str> = target["status"]["virtualWorkspaces"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|v| v["syncerURL"].as_str())
        .collect();
    let view = views.iter().find(|url| url.starts_with(shard.base_url())).expect("a view on shard-2");
    let prefix = view.strip_prefix(shard.base_url()).unwrap().to_string();
    let as_agent =
        |name: &str| shard.http_as(Some(&installation.user_identity(&format!("agent-{name}"), &[]).unwrap())).unwrap();
    let agent = as_agent(chosen);
    let listed = agent.get(&format!("{prefix}/clusters/*/api/v1/configmaps")).await.unwrap();
    assert_eq!(listed.status, StatusCode::OK, "{}", listed.text());
    let items = listed.json().unwrap()["items"].as_array().cloned().unwrap();
    assert!(!items.is_empty() && items.iter().all(|cm| states(cm).contains_key(key)), "{items:?}");
    let cluster = items[0]["metadata"]["annotations"]["kcp.io/cluster"].as_str().unwrap().to_string();
    let refused = as_agent(other).get(&format!("{prefix}/clusters/*/api/v1/configmaps")).await.unwrap();
    assert_eq!(refused.status, StatusCode::FORBIDDEN, "another target's agent: {}", refused.text());
    let anonymous = shard.http_as(None).unwrap().get(&format!("{prefix}/clusters/*/api/v1/configmaps")).await.unwrap();
    assert_eq!(anonymous.status, StatusCode::UNAUTHORIZED, "{}", anonymous.text());
    let collection = format!("{prefix}/clusters/{cluster}/api/v1/namespaces/app/configmaps");
    let created = agent.post_json(&collection, &json!({"metadata": {"name": "sneaky"}})).await.unwrap();
    assert_eq!(created.status, StatusCode::METHOD_NOT_ALLOWED, "{}", created.text());
    let merge = [("content-type", "application/merge-patch+json")];
    let spec = agent
        .send(
            http::Method::PATCH,
            &format!("{collection}/settings"),
            &merge,
            json!({"data": {"color": "red"}}).to_string(),
        )
        .await
        .unwrap();
    assert_eq!(spec.status, StatusCode::FORBIDDEN, "an agent may not change content: {}", spec.text());
    // Objects not placed on the target are not in its view.
    let usr = || installation.proxy().kubectl().cluster(user_path);
    usr().args(["create", "namespace", "quiet"]).ok();
    usr().args(["create", "configmap", "lonely", "-n", "quiet"]).ok();
    let lonely =
        agent.get(&format!("{prefix}/clusters/{cluster}/api/v1/namespaces/quiet/configmaps/lonely")).await.unwrap();
    assert_eq!(lonely.status, StatusCode::NOT_FOUND, "{}", lonely.text());
    // A user who may write ConfigMaps cannot place one by labelling it, nor unplace one.
    let grants = r#"
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: config-editor}
rules:
- {apiGroups: [tenancy.kcp.io], resources: [workspaces/content], verbs: [access]}
- {apiGroups: [""], resources: [configmaps], verbs: ["*"]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: dev-config-editor}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: config-editor}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: dev}]
"#;
    usr().args(["apply", "-f", "-"]).stdin(grants).ok();
    let dev = installation.proxy().http_as(Some(&installation.user_identity("dev", &[]).unwrap())).unwrap();
    let forged = json!({"metadata": {"name": "forged", "labels": {format!("state.workload.kcp.io/{key}"): "Sync"}}});
    let forged =
        dev.post_json(&format!("/clusters/{user_path}/api/v1/namespaces/quiet/configmaps"), &forged).await.unwrap();
    assert_eq!(forged.status, StatusCode::FORBIDDEN, "{}", forged.text());
    let replaced = json!({"metadata": {"name": "settings", "namespace": "app"}, "data": {"color": "green"}});
    let put = dev
        .send(
            http::Method::PUT,
            &format!("/clusters/{user_path}/api/v1/namespaces/app/configmaps/settings"),
            &[("content-type", "application/json")],
            replaced.to_string(),
        )
        .await
        .unwrap();
    assert_eq!(put.status, StatusCode::OK, "{}", put.text());
    let kept = put.json().unwrap();
    assert!(states(&kept).contains_key(key), "a replace without placement's keys keeps them: {kept}");
    assert!(finalizers(&kept).contains(&format!("{FINALIZER}{key}")), "{kept}");
}

/// The agent's sync of the ConfigMap `settings` is one trace: its `agent.sync` span, the
/// client span of its call to the member, and the member's apply as that call's child.
/// Its heartbeat is a trace too, through to the hub shard's write of the SyncTarget.
async fn sync_is_one_trace(receiver: &Receiver, target: &str) {
    let AgentApply { work: sync, call } = agent_apply(receiver, "agent.sync", "settings", target).await;
    assert_eq!(sync.kind, INTERNAL, "{sync:?}");
    assert_eq!(sync.attribute("atoll.resource"), Some("configmaps"), "{sync:?}");
    assert_eq!(sync.attribute("k8s.namespace.name"), Some("app"), "{sync:?}");
    assert!(call.attribute("url.full").is_some_and(|u| u.contains("/configmaps/settings")), "{call:?}");

    let heartbeat = wait_for(receiver, "a heartbeat of the target, with the hub's write", |spans| {
        spans
            .iter()
            .filter(|s| s.service == "atoll-agent" && s.name == "synctarget.heartbeat")
            .find(|s| {
                spans.iter().any(|w| w.trace_id == s.trace_id && w.kind == SERVER && w.name.ends_with(" synctargets"))
            })
            .cloned()
    })
    .await;
    assert_eq!(heartbeat.parent_span_id, "", "a heartbeat starts its own trace: {heartbeat:?}");
    let trace = Trace::of(&receiver.spans(), &heartbeat.trace_id);
    let write = trace.find("the hub's write", |s| s.service == "atoll-shard" && s.name.ends_with(" synctargets"));
    assert!(trace.descends(write, &heartbeat), "{}", trace.dump());
}

fn finalizers(object: &Value) -> Vec<String> {
    let list = object.pointer("/metadata/finalizers").and_then(Value::as_array).cloned().unwrap_or_default();
    list.iter().filter_map(Value::as_str).map(str::to_string).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agents_sync_placed_objects_to_members_and_clean_up() {
    // Every process exports its spans here: the agents' syncs are traced end to end.
    let receiver = Receiver::start(true).await.expect("start the OTLP receiver");
    for (name, value) in receiver.env() {
        // One test in this binary: nothing else reads the environment concurrently.
        std::env::set_var(name, value);
    }
    let options = InstallationOptions {
        extra_shards: 2,
        front_proxy: true,
        caches: Some(CacheTopology::single()),
        extra_args: ["--placement-removal-grace-seconds", "1", "--sync-target-heartbeat-threshold-seconds", "4"]
            .map(String::from)
            .to_vec(),
        ..InstallationOptions::default()
    };
    let installation = Installation::start_with(options).await.expect("start the hub");
    let member = ShardProcess::with_clusters(&TARGETS).await;
    let count = |p: &BTreeMap<String, Vec<String>>, shard: &str| p.get(shard).map_or(0, Vec::len);
    let placed = installation
        .place_workspaces("agent", 40, |p| count(p, "shard-1") >= 1 && count(p, "shard-2") >= 1)
        .await
        .expect("an inventory workspace on shard-1 and a user workspace on shard-2");
    let inventory_path = format!("root:{}", placed["shard-1"][0]);
    let user_path = format!("root:{}", placed["shard-2"][0]);
    let proxy = installation.proxy();
    for path in [&inventory_path, &user_path] {
        proxy.wait_resolves(path).await.unwrap();
    }
    let inv = || proxy.kubectl().cluster(&inventory_path);
    let usr = || proxy.kubectl().cluster(&user_path);
    inv().args(["apply", "-f", "-"]).stdin(inventory(&inventory_path)).ok();

    // One member cluster per SyncTarget, each with the Widget CRD.
    let member_config = |cluster: &str| -> PathBuf {
        member.user_kubeconfig(&format!("admin-{cluster}"), &["system:masters"], cluster).unwrap()
    };
    let members: BTreeMap<&str, PathBuf> = TARGETS.iter().map(|t| (*t, member_config(t))).collect();
    for config in members.values() {
        member.kubectl_with(config).args(["apply", "-f", "-"]).stdin(MEMBER_CRD).ok();
    }
    let logs = tempfile::tempdir().unwrap();
    let mut agents: BTreeMap<&str, AgentProcess> = BTreeMap::new();
    for (target, member_kubeconfig) in &members {
        let user = format!("agent-{target}");
        let identity = installation.user_identity(&user, &[]).unwrap();
        let hub = proxy.user_kubeconfig(&user, &identity, &inventory_path).unwrap();
        let extra = [
            "--resources",
            "configmaps,widgets.example.io",
            "--heartbeat-interval-seconds",
            "1",
            "--resync-seconds",
            "1",
        ];
        let log = logs.path().join(format!("{target}.log"));
        agents.insert(target, AgentProcess::start(&hub, target, member_kubeconfig, &extra, &log).unwrap());
    }
    // The agents' heartbeats make both targets Ready.
    for location in ["aws", "gce"] {
        wait_json(inv, &["location", location], "both targets available", |l| l["status"]["availableInstances"] == 2);
    }

    usr().args(["apply", "-f", "-"]).stdin(user_objects(&inventory_path)).ok();
    wait_json(usr, &["apibinding", "widgets"], "the widgets binding Bound", |b| b["status"]["phase"] == "Bound");
    usr().args(["create", "configmap", "settings", "-n", "app", "--from-literal=color=blue"]).ok();
    usr().args(["create", "-f", "-"]).stdin(widget("small", 3)).ok();
    let placement = wait_json(usr, &["placement", "on-aws"], "the Placement Bound to a target", |p| {
        p["status"]["phase"] == "Bound"
            && p["metadata"]["annotations"]["internal.workload.kcp.io/synctarget"].is_string()
    });
    let chosen_key =
        placement["metadata"]["annotations"]["internal.workload.kcp.io/synctarget"].as_str().unwrap().to_string();
    let targets = inv().args(["get", "synctargets", "-o", "json"]).ok().json().unwrap();
    let key_of = |name: &str| -> String {
        let items = targets["items"].as_array().unwrap();
        let target = items.iter().find(|t| t["metadata"]["name"] == name).unwrap();
        target["metadata"]["labels"]["internal.workload.kcp.io/key"].as_str().unwrap().to_string()
    };
    let chosen = if key_of("aws-1") == chosen_key { "aws-1" } else { "aws-2" };
    let other = if chosen == "aws-1" { "aws-2" } else { "aws-1" };
    let other_key = key_of(other);
    let in_member = |target: &str| {
        let config = members[target].clone();
        let member = &member;
        move || member.kubectl_with(&config)
    };
    let chosen_member = in_member(chosen);
    let other_member = in_member(other);

    // The ConfigMap and the Widget appear in the chosen member, in a namespace of their own.
    wait_copies(&chosen_member, "configmaps", &chosen_key, "the ConfigMap synced", |c| c.contains_key("settings"));
    wait_copies(&chosen_member, "widgets", &chosen_key, "the Widget synced", |c| c.contains_key("small"));
    let copy = &copies(&chosen_member, "configmaps", &chosen_key)["settings"];
    assert_eq!(copy["data"]["color"], "blue");
    let downstream_ns = copy["metadata"]["namespace"].as_str().unwrap().to_string();
    assert!(downstream_ns.starts_with("kcp-"), "{downstream_ns}");
    let ns = chosen_member().args(["get", "namespace", &downstream_ns, "-o", "json"]).ok().json().unwrap();
    let locator: Value =
        serde_json::from_str(ns["metadata"]["annotations"]["kcp.io/namespace-locator"].as_str().unwrap()).unwrap();
    assert_eq!(locator["namespace"], "app", "{locator}");
    assert!(copies(&other_member, "configmaps", &other_key).is_empty());
    let upstream = wait_json(usr, &["configmap", "settings", "-n", "app"], "held by the agent", |cm| {
        finalizers(cm).contains(&format!("{FINALIZER}{chosen_key}"))
    });
    assert_eq!(states(&upstream)[&chosen_key], "Sync");
    sync_is_one_trace(&receiver, chosen).await;

    // The member's status flows back up; a Widget the member refuses says why upstream.
    let status = json!({"status": {"phase": "Running"}}).to_string();
    chosen_member()
        .args(["patch", "widget", "small", "-n", &downstream_ns, "--subresource=status", "--type=merge", "-p", &status])
        .ok();
    wait_json(usr, &["widget", "small", "-n", "app"], "the member's status upstream", |w| {
        w["status"]["phase"] == "Running"
    });
    usr().args(["create", "-f", "-"]).stdin(widget("huge", 1000)).ok();
    let refused = wait_json(usr, &["widget", "huge", "-n", "app"], "the refusal recorded", |w| {
        w["metadata"]["annotations"][format!("experimental.status.workload.kcp.io/{chosen_key}")].is_string()
    });
    let why = refused["metadata"]["annotations"][format!("experimental.status.workload.kcp.io/{chosen_key}")]
        .as_str()
        .unwrap();
    assert!(why.contains("MemberRejected") && why.contains("less than or equal to 10"), "{why}");
    views_admit_their_agent_only(&installation, &inventory_path, chosen, other, &chosen_key, &user_path).await;
    usr().args(["create", "configmap", "after", "-n", "app", "--from-literal=k=v"]).ok();
    wait_copies(&chosen_member, "configmaps", &chosen_key, "syncing goes on", |c| c.contains_key("after"));
    usr().args(["delete", "widget", "huge", "-n", "app", "--wait=false"]).ok();

    // The chosen agent dies: no heartbeat, the namespace moves to the other target, whose
    // agent syncs it; the old copies stay until the old agent is back.
    agents.get_mut(chosen).unwrap().kill9();
    wait_copies(&other_member, "configmaps", &other_key, "the ConfigMap moved", |c| {
        c.contains_key("settings") && c.contains_key("after")
    });
    wait_copies(&other_member, "widgets", &other_key, "the Widget moved", |c| c.contains_key("small"));
    assert!(
        copies(&chosen_member, "configmaps", &chosen_key).contains_key("settings"),
        "the old member keeps its copy"
    );
    agents.get_mut(chosen).unwrap().restart().unwrap();
    wait_copies(&chosen_member, "configmaps", &chosen_key, "the old member cleaned up", |c| c.is_empty());
    wait_copies(&chosen_member, "widgets", &chosen_key, "the old member's widgets cleaned up", |c| c.is_empty());
    let moved = wait_json(usr, &["configmap", "settings", "-n", "app"], "the old agent let go", |cm| {
        !finalizers(cm).contains(&format!("{FINALIZER}{chosen_key}")) && !states(cm).contains_key(&chosen_key)
    });
    assert!(finalizers(&moved).contains(&format!("{FINALIZER}{other_key}")), "{moved}");

    // Deleting the Placement: labels, then downstream copies, go; no finalizer stays.
    usr().args(["delete", "placement", "on-aws"]).ok();
    wait_copies(&other_member, "configmaps", &other_key, "downstream ConfigMaps deleted", |c| c.is_empty());
    wait_copies(&other_member, "widgets", &other_key, "downstream Widgets deleted", |c| c.is_empty());
    for (resource, name) in [("configmap", "settings"), ("configmap", "after"), ("widget", "small")] {
        wait_json(usr, &[resource, name, "-n", "app"], "released upstream", |o| {
            states(o).is_empty() && !finalizers(o).iter().any(|f| f.starts_with(FINALIZER))
        });
    }
    let gone = usr().args(["get", "widget", "huge", "-n", "app"]).fails();
    assert!(gone.stderr.contains("NotFound"), "the refused Widget was deleted: {}", gone.stderr);
    for agent in agents.values() {
        assert!(!agent.log_tail(200).contains("panicked"), "{}", agent.log_tail(50));
    }
}
