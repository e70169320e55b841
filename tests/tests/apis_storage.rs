//! The `apis.kcp.io/v1alpha1` group on one real `atoll-shard`, driven by stock kubectl:
//! APIResourceSchemas are validated like CRDs and never change, APIExports get an identity
//! whose hash survives edits, patches, status writes, a restart and a delete/re-create,
//! APIBindings and APIExportEndpointSlices need an export reference, and `kubectl get` /
//! `kubectl explain` show kcp's columns and fields.

use http::StatusCode;
use serde_json::{json, Value};
use tests::ShardProcess;

const CLUSTER: &str = "provider";

const SCHEMA: &str = r#"
apiVersion: apis.kcp.io/v1alpha1
kind: APIResourceSchema
metadata:
  name: v1.widgets.example.io
spec:
  group: example.io
  scope: Namespaced
  names:
    plural: widgets
    kind: Widget
  versions:
  - name: v1
    storage: true
    subresources:
      status: {}
    schema:
      type: object
      properties:
        spec:
          type: object
          properties:
            size:
              type: integer
"#;

const EXPORT: &str = r#"
apiVersion: apis.kcp.io/v1alpha1
kind: APIExport
metadata:
  name: widgets
spec:
  latestResourceSchemas: [v1.widgets.example.io]
  permissionClaims:
  - resource: configmaps
    all: true
status:
  identityHash: forged-at-create
"#;

fn kubectl(shard: &ShardProcess) -> tests::Kubectl {
    shard.kubectl().cluster(CLUSTER)
}

fn identity_hash(shard: &ShardProcess, name: &str) -> String {
    let jsonpath = "jsonpath={.status.identityHash}";
    kubectl(shard).args(["get", "apiexport", name, "-o", jsonpath]).ok().stdout
}

/// POSTs an object to `resource` of the test cluster and returns the status code and body.
async fn post(shard: &ShardProcess, resource: &str, body: Value) -> (StatusCode, Value) {
    let path = format!("/clusters/{CLUSTER}/apis/apis.kcp.io/v1alpha1/{resource}");
    let response = shard.http().post_json(&path, &body).await.expect("POST reaches the shard");
    let status = response.status;
    (status, response.json().unwrap_or_else(|_| json!({"text": response.text()})))
}

/// The field paths of a 422's causes.
fn cause_fields(status: &Value) -> Vec<String> {
    let causes = status.pointer("/details/causes").and_then(Value::as_array).cloned().unwrap_or_default();
    causes.iter().filter_map(|c| c["field"].as_str().map(str::to_string)).collect()
}

fn schema_body(name: &str, edit: impl FnOnce(&mut Value)) -> Value {
    let mut body = json!({
        "apiVersion": "apis.kcp.io/v1alpha1",
        "kind": "APIResourceSchema",
        "metadata": {"name": name},
        "spec": {
            "group": "example.io",
            "scope": "Cluster",
            "names": {"plural": "gadgets", "kind": "Gadget"},
            "versions": [{"name": "v1", "storage": true, "schema": {"type": "object"}}]
        }
    });
    edit(&mut body);
    body
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn apis_objects_are_validated_immutable_and_keep_their_identity() {
    let mut shard = ShardProcess::with_clusters(&[CLUSTER]).await;

    schemas_are_validated_and_immutable(&shard).await;
    let hash = exports_get_an_identity_that_edits_cannot_change(&shard);

    shard.restart().await.expect("restart the shard");
    assert_eq!(identity_hash(&shard, "widgets"), hash, "the identity hash survives a restart");

    // kcp keeps the identity secret: an export re-created under the same name is the same API.
    kubectl(&shard).args(["delete", "apiexport", "widgets"]).ok();
    kubectl(&shard).args(["create", "-f", "-"]).stdin(EXPORT).ok();
    assert_eq!(identity_hash(&shard, "widgets"), hash, "a re-created export gets its identity back");
    kubectl(&shard).args(["create", "-f", "-"]).stdin(EXPORT.replace("name: widgets", "name: gadgets")).ok();
    let other = identity_hash(&shard, "gadgets");
    assert!(other.len() == 64 && other != hash, "another export, another identity: {other}");

    bindings_and_slices_need_an_export_reference(&shard).await;
    kubectl_explains_and_prints_kcp_columns(&shard);
}

async fn schemas_are_validated_and_immutable(shard: &ShardProcess) {
    kubectl(shard).args(["create", "-f", "-"]).stdin(SCHEMA).ok();
    let stored = kubectl(shard).args(["get", "apiresourceschema", "v1.widgets.example.io", "-o", "json"]).ok();
    let stored = stored.json().unwrap();
    assert_eq!(stored["spec"]["names"]["singular"], "widget", "defaulted like a CRD's: {stored}");
    assert_eq!(stored["spec"]["names"]["listKind"], "WidgetList");
    assert_eq!(stored["spec"]["versions"][0]["served"], true);
    assert_eq!(
        stored["spec"]["versions"][0]["schema"]["properties"]["spec"]["properties"]["size"]["type"], "integer",
        "the schema is stored whole, never pruned"
    );

    let bad = [
        ("v1.gadgets.example.org", schema_body("v1.gadgets.example.org", |_| {}), "metadata.name"),
        (
            "v1.gadgets.example.io",
            schema_body("v1.gadgets.example.io", |b| b["spec"]["versions"][0]["schema"]["type"] = json!("banana")),
            "spec.versions[0].schema.type",
        ),
        (
            "v1.gadgets.example.io",
            schema_body("v1.gadgets.example.io", |b| b["spec"]["versions"][0]["storage"] = json!(false)),
            "spec.versions",
        ),
        (
            "v1.gadgets.example.io",
            schema_body("v1.gadgets.example.io", |b| {
                b["spec"]["versions"][0]["schema"] = json!({"openAPIV3Schema": {"type": "object"}})
            }),
            "spec.versions[0].schema",
        ),
    ];
    for (name, body, field) in bad {
        let (status, answer) = post(shard, "apiresourceschemas", body).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{name}: {answer}");
        assert_eq!(answer["reason"], "Invalid", "{answer}");
        assert!(cause_fields(&answer).contains(&field.to_string()), "{field} in {answer}");
    }

    // Labels may change; the spec never does.
    kubectl(shard).args(["label", "apiresourceschema", "v1.widgets.example.io", "tier=gold"]).ok();
    let patch = r#"{"spec":{"scope":"Cluster"}}"#;
    let refused = kubectl(shard)
        .args(["patch", "apiresourceschema", "v1.widgets.example.io", "--type=merge", "-p", patch])
        .fails();
    assert!(
        refused.stderr.contains("is invalid") && refused.stderr.contains("spec is immutable"),
        "{}",
        refused.stderr
    );
    // Re-applying the manifest as written (without the defaulted fields) is no change.
    kubectl(shard).args(["replace", "-f", "-"]).stdin(SCHEMA).ok();
}

fn exports_get_an_identity_that_edits_cannot_change(shard: &ShardProcess) -> String {
    kubectl(shard).args(["create", "-f", "-"]).stdin(EXPORT).ok();
    let hash = identity_hash(shard, "widgets");
    assert_eq!(hash.len(), 64, "{hash:?}");
    assert!(hash.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)), "lowercase hex: {hash}");

    let forged = r#"{"status":{"identityHash":"forged"}}"#;
    kubectl(shard).args(["patch", "apiexport", "widgets", "--type=merge", "-p", forged]).ok();
    kubectl(shard).args(["patch", "apiexport", "widgets", "--subresource=status", "--type=merge", "-p", forged]).ok();
    // A scripted editor (no quotes or backslashes: kubectl then runs it without a shell).
    let sed = "sed -i -E s/[0-9a-f]{64}/forged/";
    // kubectl says "edited" only when the editor changed the file and the server took the
    // update ("Edit cancelled" if sed found no hash): so the forged hash was sent.
    let edited = kubectl(shard).args(["edit", "apiexport", "widgets", "--subresource=status"]).env("EDITOR", sed).ok();
    assert!(edited.stdout.contains("apiexport.apis.kcp.io/widgets edited"), "{} {}", edited.stdout, edited.stderr);
    let spec_edit = r#"{"spec":{"latestResourceSchemas":["v1.widgets.example.io","v2.widgets.example.io"]}}"#;
    kubectl(shard).args(["patch", "apiexport", "widgets", "--type=merge", "-p", spec_edit]).ok();
    assert_eq!(identity_hash(shard, "widgets"), hash, "no update changes the identity hash");
    let export = kubectl(shard).args(["get", "apiexport", "widgets", "-o", "json"]).ok().json().unwrap();
    assert_eq!(export["spec"]["latestResourceSchemas"][1], "v2.widgets.example.io", "{export}");
    assert_eq!(export["spec"]["permissionClaims"][0]["resource"], "configmaps", "claims are stored: {export}");

    let duplicate = r#"{"spec":{"latestResourceSchemas":["v1.widgets.example.io","v1.widgets.example.io"]}}"#;
    let refused = kubectl(shard).args(["patch", "apiexport", "widgets", "--type=merge", "-p", duplicate]).fails();
    assert!(refused.stderr.contains("spec.latestResourceSchemas[1]"), "{}", refused.stderr);
    hash
}

async fn bindings_and_slices_need_an_export_reference(shard: &ShardProcess) {
    let binding = |reference: Value| {
        json!({"apiVersion": "apis.kcp.io/v1alpha1", "kind": "APIBinding", "metadata": {"name": "widgets"},
            "spec": {"reference": reference}})
    };
    let cases = [
        (json!({}), "spec.reference.export"),
        (json!({"export": {"path": "root:org"}}), "spec.reference.export.name"),
        (json!({"export": {"path": "Root::org", "name": "widgets"}}), "spec.reference.export.path"),
    ];
    for (reference, field) in cases {
        let (status, answer) = post(shard, "apibindings", binding(reference)).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{answer}");
        assert_eq!(cause_fields(&answer), [field], "{answer}");
    }
    // The path is optional: empty means the binding's own workspace.
    let (status, answer) = post(shard, "apibindings", binding(json!({"export": {"name": "widgets"}}))).await;
    assert_eq!(status, StatusCode::CREATED, "{answer}");
    assert!(answer["status"].as_object().is_none_or(|s| s.get("phase").is_none()), "{answer}");

    let slice = |export: Value| {
        json!({"apiVersion": "apis.kcp.io/v1alpha1", "kind": "APIExportEndpointSlice",
            "metadata": {"name": "widgets"}, "spec": {"export": export}})
    };
    let (status, answer) = post(shard, "apiexportendpointslices", slice(json!({"path": "root"}))).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{answer}");
    assert_eq!(cause_fields(&answer), ["spec.export.name"], "{answer}");
    let (status, answer) = post(shard, "apiexportendpointslices", slice(json!({"name": "widgets"}))).await;
    assert_eq!(status, StatusCode::CREATED, "{answer}");
}

fn kubectl_explains_and_prints_kcp_columns(shard: &ShardProcess) {
    let explained = kubectl(shard).args(["explain", "apiexports.spec"]).ok().stdout;
    assert!(explained.contains("latestResourceSchemas") && explained.contains("identity"), "{explained}");
    let explained = kubectl(shard).args(["explain", "apibindings.spec.reference.export"]).ok().stdout;
    assert!(explained.contains("path") && explained.contains("name"), "{explained}");

    let header = |resource: &str| {
        let table = kubectl(shard).args(["get", resource]).ok().stdout;
        let first = table.lines().next().unwrap_or_default().to_string();
        first.split_whitespace().map(str::to_string).collect::<Vec<_>>()
    };
    assert_eq!(header("apibindings"), ["NAME", "AGE", "READY"]);
    assert_eq!(header("apiexports"), ["NAME", "AGE", "READY"]);
    assert_eq!(header("apiresourceschemas"), ["NAME", "AGE"]);
    assert_eq!(header("apiexportendpointslices"), ["NAME", "EXPORT", "PARTITION", "AGE"]);

    // The category kcp gives its kinds.
    let kcp = kubectl(shard).args(["get", "kcp", "-o", "name"]).ok().stdout;
    for object in ["apiexport.apis.kcp.io/widgets", "apibinding.apis.kcp.io/widgets"] {
        assert!(kcp.lines().any(|line| line == object), "{object} in {kcp}");
    }
}
