//! The rest of what a kubectl user types against a real `atoll-shard`: client-side apply
//! with removed fields, server-side apply with conflicts and `--force-conflicts`, `diff`,
//! `--dry-run=server`, scripted `edit`, `wait`, and output formats.

use std::time::Duration;
use tests::ShardProcess;

const CONFIG: &str = r#"
apiVersion: v1
kind: ConfigMap
metadata:
  name: app
  namespace: default
  labels: {team: a}
data:
  color: blue
  size: "3"
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_side_apply_removes_fields_and_diff_and_dry_run_write_nothing() {
    let shard = ShardProcess::with_clusters(&["ca"]).await;
    let kubectl = || shard.kubectl().cluster("ca");

    kubectl().args(["apply", "-f", "-"]).stdin(CONFIG).ok();
    let object = kubectl().args(["get", "cm", "app", "-o", "json", "--show-managed-fields"]).ok().json().unwrap();
    let annotation = object["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"].clone();
    assert!(annotation.as_str().is_some_and(|a| a.contains("\"color\":\"blue\"")), "{object}");
    let managers: Vec<&str> = object["metadata"]["managedFields"]
        .as_array()
        .expect("managedFields recorded")
        .iter()
        .filter_map(|e| e["manager"].as_str())
        .collect();
    assert_eq!(managers, ["kubectl-client-side-apply"], "{object}");

    // Removing a field from the manifest removes it from the object.
    let reduced = CONFIG.replace("  size: \"3\"\n", "");
    kubectl().args(["apply", "-f", "-"]).stdin(reduced.clone()).ok();
    let object = kubectl().args(["get", "cm", "app", "-o", "json"]).ok().json().unwrap();
    assert_eq!(object["data"], serde_json::json!({"color": "blue"}), "{object}");

    // diff shows a pending change (exit 1) and changes nothing; no change is exit 0.
    let changed = reduced.replace("color: blue", "color: red");
    let diff = kubectl().args(["diff", "-f", "-"]).stdin(changed.clone()).run();
    assert_eq!(diff.status.code(), Some(1), "diff: {} {}", diff.stdout, diff.stderr);
    assert!(diff.stdout.contains("-  color: blue") && diff.stdout.contains("+  color: red"), "{}", diff.stdout);
    let same = kubectl().args(["diff", "-f", "-"]).stdin(reduced).run();
    assert_eq!(same.status.code(), Some(0), "diff of the live state: {} {}", same.stdout, same.stderr);

    // --dry-run=server on every mutating verb leaves the object as it was.
    let before = kubectl().args(["get", "cm", "app", "-o", "jsonpath={.metadata.resourceVersion}"]).ok().stdout;
    kubectl().args(["apply", "--dry-run=server", "-f", "-"]).stdin(changed).ok();
    kubectl().args(["label", "cm", "app", "x=y", "--dry-run=server"]).ok();
    kubectl().args(["annotate", "cm", "app", "x=y", "--dry-run=server"]).ok();
    kubectl().args(["patch", "cm", "app", "--dry-run=server", "-p", r#"{"data":{"n":"1"}}"#]).ok();
    kubectl().args(["create", "cm", "ghost", "--dry-run=server"]).ok();
    kubectl().args(["delete", "cm", "app", "--dry-run=server"]).ok();
    let after = kubectl().args(["get", "cm", "app", "-o", "jsonpath={.metadata.resourceVersion}"]).ok().stdout;
    assert_eq!(before, after);
    kubectl().args(["get", "cm", "ghost"]).fails();
    let taken = kubectl().args(["create", "cm", "app", "--dry-run=server"]).fails();
    assert!(taken.stderr.contains("already exists"), "{}", taken.stderr);

    // Protected namespaces and immutable payloads.
    let protected = kubectl().args(["delete", "namespace", "default"]).fails();
    assert!(protected.stderr.contains("this namespace may not be deleted"), "{}", protected.stderr);
    kubectl().args(["create", "cm", "frozen", "--from-literal=k=v"]).ok();
    kubectl().args(["patch", "cm", "frozen", "--type=merge", "-p", r#"{"immutable":true}"#]).ok();
    let frozen = kubectl().args(["patch", "cm", "frozen", "--type=merge", "-p", r#"{"data":{"k":"w"}}"#]).fails();
    assert!(frozen.stderr.contains("field is immutable when `immutable` is set"), "{}", frozen.stderr);

    // Kind rules beyond metadata: a binding to an unknown role kind, for an unknown subject kind.
    let binding = "apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata: {name: rb, namespace: default}\n\
                   roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Foo, name: r}\nsubjects: [{kind: Robot, name: x}]\n";
    let refused = kubectl().args(["apply", "-f", "-"]).stdin(binding).fails();
    assert!(
        refused.stderr.contains("roleRef.kind") && refused.stderr.contains("subjects[0].kind"),
        "{}",
        refused.stderr
    );

    // `kubectl events --for` selects on the involved object.
    let event = "apiVersion: v1\nkind: Event\nmetadata: {name: app.1, namespace: default}\n\
                 involvedObject: {apiVersion: v1, kind: ConfigMap, name: app, namespace: default}\n\
                 reason: Tested\nmessage: hello\ntype: Normal\n";
    kubectl().args(["create", "-f", "-"]).stdin(event).ok();
    let events = kubectl().args(["events", "--for", "configmap/app"]).ok().stdout;
    assert!(events.contains("Tested") && events.contains("hello"), "{events}");

    // events.k8s.io/v1 and core/v1 Events are one object seen through two APIs, as in kube.
    let new_style = "apiVersion: events.k8s.io/v1\nkind: Event\nmetadata: {name: app.2, namespace: default}\n\
                     regarding: {apiVersion: v1, kind: ConfigMap, name: app, namespace: default}\n\
                     eventTime: '2026-01-01T00:00:00.000000Z'\nreportingController: example.com/ctl\n\
                     reportingInstance: ctl-1\naction: Checked\nreason: NewStyle\nnote: from events.k8s.io\ntype: Normal\n";
    kubectl().args(["create", "-f", "-"]).stdin(new_style).ok();
    let core = kubectl().args(["get", "events.v1.", "app.2", "-o", "json"]).ok().json().unwrap();
    assert_eq!(core["message"], "from events.k8s.io", "{core}");
    assert_eq!(core["involvedObject"]["name"], "app", "{core}");
    let events = kubectl().args(["events", "--for", "configmap/app"]).ok().stdout;
    assert!(events.contains("NewStyle"), "{events}");
    let old_style = kubectl().args(["get", "events.v1.events.k8s.io", "app.1", "-o", "json"]).ok().json().unwrap();
    assert_eq!(old_style["note"], "hello", "{old_style}");
    assert_eq!(old_style["regarding"]["kind"], "ConfigMap", "{old_style}");

    // Output formats.
    let wide = kubectl().args(["get", "cm", "app", "-o", "wide"]).ok().stdout;
    assert!(wide.contains("DATA"), "{wide}");
    let columns =
        kubectl().args(["get", "cm", "-o", "custom-columns=NAME:.metadata.name,TEAM:.metadata.labels.team"]).ok();
    assert!(columns.stdout.contains("app") && columns.stdout.contains(" a"), "{}", columns.stdout);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_side_apply_tracks_owners_and_reports_conflicts() {
    let shard = ShardProcess::with_clusters(&["ssa"]).await;
    let kubectl = || shard.kubectl().cluster("ssa");

    let applied = kubectl().args(["apply", "--server-side", "-f", "-"]).stdin(CONFIG).ok();
    assert!(applied.stdout.contains("configmap/app serverside-applied"), "{}", applied.stdout);
    let object = kubectl().args(["get", "cm", "app", "-o", "json", "--show-managed-fields"]).ok().json().unwrap();
    let entry = &object["metadata"]["managedFields"][0];
    assert_eq!(entry["manager"], "kubectl");
    assert_eq!(entry["operation"], "Apply");
    assert!(entry["fieldsV1"]["f:data"]["f:color"].is_object(), "{entry}");

    // Another manager changing an owned field conflicts, naming manager and field.
    let other = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: app, namespace: default}\ndata: {color: green}\n";
    let conflict = kubectl().args(["apply", "--server-side", "--field-manager=other", "-f", "-"]).stdin(other).fails();
    assert!(conflict.stderr.contains("conflict"), "{}", conflict.stderr);
    assert!(conflict.stderr.contains("\"kubectl\""), "{}", conflict.stderr);
    assert!(conflict.stderr.contains(".data.color"), "{}", conflict.stderr);

    // --force-conflicts takes ownership.
    kubectl()
        .args(["apply", "--server-side", "--field-manager=other", "--force-conflicts", "-f", "-"])
        .stdin(other)
        .ok();
    let object = kubectl().args(["get", "cm", "app", "-o", "json", "--show-managed-fields"]).ok().json().unwrap();
    assert_eq!(object["data"]["color"], "green");
    let owners: Vec<String> = object["metadata"]["managedFields"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["fieldsV1"]["f:data"].get("f:color").is_some())
        .map(|e| e["manager"].as_str().unwrap_or_default().to_string())
        .collect();
    assert_eq!(owners, ["other"], "{object}");

    // Dropping a field from the applied config removes it, since no one else owns it.
    let smaller = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: app, namespace: default}\ndata: {color: blue}\n";
    kubectl().args(["apply", "--server-side", "--force-conflicts", "-f", "-"]).stdin(smaller).ok();
    let object = kubectl().args(["get", "cm", "app", "-o", "json"]).ok().json().unwrap();
    assert!(object["data"].get("size").is_none(), "{object}");
    assert!(object["metadata"]["labels"].get("team").is_none(), "{object}");

    // Plain writes are recorded too.
    kubectl().args(["label", "cm", "app", "tier=gold"]).ok();
    let object = kubectl().args(["get", "cm", "app", "-o", "json", "--show-managed-fields"]).ok().json().unwrap();
    let label_owner = object["metadata"]["managedFields"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["fieldsV1"]["f:metadata"]["f:labels"].get("f:tier").is_some())
        .map(|e| (e["manager"].clone(), e["operation"].clone()));
    assert_eq!(label_owner, Some(("kubectl-label".into(), "Update".into())), "{object}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn edit_and_wait() {
    let shard = ShardProcess::with_clusters(&["ed"]).await;
    let kubectl = || shard.kubectl().cluster("ed");
    kubectl().args(["apply", "-f", "-"]).stdin(CONFIG).ok();

    // A scripted editor: sed changes the value in the file kubectl hands it.
    let edited = kubectl().args(["edit", "cm", "app"]).env("EDITOR", "sed -i s/blue/purple/").ok();
    assert!(edited.stdout.contains("configmap/app edited"), "{}", edited.stdout);
    let color = kubectl().args(["get", "cm", "app", "-o", "jsonpath={.data.color}"]).ok().stdout;
    assert_eq!(color, "purple");

    // wait --for=jsonpath / --for=delete.
    kubectl().args(["wait", "cm/app", "--for=jsonpath={.data.color}=purple", "--timeout=20s"]).ok();
    // The waiter must see the object and then its DELETE: delete only once its watch is
    // established (a wait started after the delete would succeed on "not found" at once).
    let watches_before = shard.watches_started().await.unwrap();
    let waiter = kubectl().args(["wait", "cm/app", "--for=delete", "--timeout=60s"]).run_async();
    let waiting = tokio::spawn(waiter);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while shard.watches_started().await.unwrap() <= watches_before {
        assert!(tokio::time::Instant::now() < deadline, "kubectl wait never started watching");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(!waiting.is_finished(), "kubectl wait returned while cm/app still existed");
    kubectl().args(["delete", "cm", "app"]).ok();
    let waited = waiting.await.unwrap();
    assert!(waited.success(), "{} {}", waited.stdout, waited.stderr);
    assert!(waited.stdout.contains("configmap/app condition met"), "{}", waited.stdout);
}
