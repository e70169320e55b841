//! CustomResourceDefinitions on a real `atoll-shard`, driven by stock kubectl: versions,
//! structural validation, defaulting, pruning, subresources, printer columns, explain,
//! scope, isolation between logical clusters, and cleanup when the CRD goes.

use std::time::Duration;
use tests::ShardProcess;

const CRONTAB_CRD: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: crontabs.stable.example.com
spec:
  group: stable.example.com
  scope: Namespaced
  names:
    plural: crontabs
    singular: crontab
    kind: CronTab
    shortNames: [ct]
  versions:
  - name: v1
    served: true
    storage: true
    subresources:
      status: {}
      scale:
        specReplicasPath: .spec.replicas
        statusReplicasPath: .status.replicas
    additionalPrinterColumns:
    - name: Spec
      type: string
      jsonPath: .spec.cronSpec
    - name: Replicas
      type: integer
      jsonPath: .spec.replicas
    schema:
      openAPIV3Schema:
        type: object
        description: A CronTab runs a command on a schedule.
        properties:
          spec:
            type: object
            description: What to run and when.
            properties:
              cronSpec:
                type: string
                pattern: '^(\d+|\*)(/\d+)?(\s+(\d+|\*)(/\d+)?){4}$'
                description: The schedule in cron format.
              image:
                type: string
              replicas:
                type: integer
                minimum: 1
                maximum: 10
                default: 1
              extra:
                type: object
                x-kubernetes-preserve-unknown-fields: true
            required: [cronSpec]
          status:
            type: object
            properties:
              replicas:
                type: integer
  - name: v1beta1
    served: true
    storage: false
    deprecated: true
    deprecationWarning: "stable.example.com/v1beta1 CronTab is deprecated; use stable.example.com/v1"
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
"#;

const WIDGET_CRD: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.org
spec:
  group: example.org
  scope: Cluster
  names: {plural: widgets, singular: widget, kind: Widget}
  versions:
  - name: v1
    served: true
    storage: true
    selectableFields: [{jsonPath: .spec.size}]
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size: {type: string, enum: [small, large]}
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crds_serve_validate_default_and_print() {
    let shard = ShardProcess::with_clusters(&["alpha", "beta"]).await;
    let kubectl = || shard.kubectl().cluster("alpha");

    kubectl().args(["apply", "-f", "-"]).stdin(CRONTAB_CRD).ok();
    kubectl().args(["wait", "--for=condition=Established", "crd/crontabs.stable.example.com", "--timeout=30s"]).ok();

    // kubectl asks for strict field validation by default; unknown fields are then a 400.
    let strict = kubectl()
        .args(["apply", "-f", "-"])
        .stdin("apiVersion: stable.example.com/v1\nkind: CronTab\nmetadata: {name: strict, namespace: default}\nspec: {cronSpec: '* * * * *', dropped: yes}\n")
        .fails();
    assert!(strict.stderr.contains(r#"unknown field "spec.dropped""#), "{}", strict.stderr);
    let created = kubectl()
        .args(["apply", "--validate=false", "-f", "-"])
        .stdin(
            "apiVersion: stable.example.com/v1\nkind: CronTab\nmetadata: {name: nightly, namespace: default}\n\
             spec: {cronSpec: '0 3 * * *', image: backup:1, extra: {anything: [1, 2]}, dropped: yes}\n",
        )
        .ok();
    assert!(created.stdout.contains("crontab.stable.example.com/nightly created"), "{}", created.stdout);

    // Defaulted, pruned, and the preserved subtree kept.
    let object = kubectl().args(["get", "ct", "nightly", "-o", "json"]).ok().json().unwrap();
    assert_eq!(object["spec"]["replicas"], 1, "{object}");
    assert!(object["spec"].get("dropped").is_none(), "unknown fields are pruned: {object}");
    assert_eq!(object["spec"]["extra"]["anything"], serde_json::json!([1, 2]));

    // Re-applying with a change and a removed field goes through a JSON merge patch.
    kubectl()
        .args(["apply", "-f", "-"])
        .stdin(
            "apiVersion: stable.example.com/v1\nkind: CronTab\nmetadata: {name: nightly, namespace: default}\n\
             spec: {cronSpec: '0 3 * * *', image: backup:2}\n",
        )
        .ok();
    let object = kubectl().args(["get", "ct", "nightly", "-o", "json"]).ok().json().unwrap();
    assert_eq!(object["spec"]["image"], "backup:2", "{object}");
    assert!(object["spec"].get("extra").is_none(), "a field dropped from the manifest stays: {object}");

    // Printer columns.
    let table = kubectl().args(["get", "crontabs"]).ok().stdout;
    assert!(table.contains("SPEC") && table.contains("REPLICAS"), "{table}");
    assert!(table.contains("0 3 * * *"), "{table}");

    // Every schema violation is listed with its field path.
    let bad = kubectl()
        .args(["apply", "-f", "-"])
        .stdin(
            "apiVersion: stable.example.com/v1\nkind: CronTab\nmetadata: {name: broken, namespace: default}\n\
             spec: {cronSpec: 'every day', replicas: 50, image: 7}\n",
        )
        .fails();
    for field in ["spec.cronSpec", "spec.replicas", "spec.image"] {
        assert!(bad.stderr.contains(field), "{field} missing from: {}", bad.stderr);
    }
    assert!(bad.stderr.contains("is invalid"), "{}", bad.stderr);
    let missing = kubectl()
        .args(["create", "-f", "-"])
        .stdin(
            "apiVersion: stable.example.com/v1\nkind: CronTab\nmetadata: {name: empty, namespace: default}\nspec: {}\n",
        )
        .fails();
    assert!(missing.stderr.contains("spec.cronSpec: Required value"), "{}", missing.stderr);
    kubectl().args(["get", "ct", "broken"]).fails();

    // Server-side apply addressed in a version other than the storage one.
    let beta_apply =
        "apiVersion: stable.example.com/v1beta1\nkind: CronTab\nmetadata: {name: nightly, namespace: default}\n\
                      spec: {note: from-beta}\n";
    kubectl().args(["apply", "--server-side", "--field-manager=beta", "-f", "-"]).stdin(beta_apply).ok();

    // Another served version reads the same object.
    let beta_output = kubectl().args(["get", "crontabs.v1beta1.stable.example.com", "nightly", "-o", "json"]).ok();
    let beta = beta_output.json().unwrap();
    assert_eq!(beta["apiVersion"], "stable.example.com/v1beta1");
    assert!(
        beta_output.stderr.contains("v1beta1 CronTab is deprecated; use stable.example.com/v1"),
        "{}",
        beta_output.stderr
    );

    // Status subresource: the main resource ignores status; /status writes it.
    kubectl()
        .args(["patch", "ct", "nightly", "--type=merge", "--subresource=status", "-p", r#"{"status":{"replicas":2}}"#])
        .ok();
    kubectl().args(["patch", "ct", "nightly", "--type=merge", "-p", r#"{"status":{"replicas":9}}"#]).ok();
    let object = kubectl().args(["get", "ct", "nightly", "-o", "json"]).ok().json().unwrap();
    assert_eq!(object["status"]["replicas"], 2, "{object}");

    // Scale subresource.
    kubectl().args(["scale", "ct", "nightly", "--replicas=4"]).ok();
    let object = kubectl().args(["get", "ct", "nightly", "-o", "json"]).ok().json().unwrap();
    assert_eq!(object["spec"]["replicas"], 4, "{object}");
    let scale = kubectl()
        .args(["get", "--raw", "/clusters/alpha/apis/stable.example.com/v1/namespaces/default/crontabs/nightly/scale"])
        .ok()
        .json()
        .unwrap();
    assert_eq!(scale["kind"], "Scale");
    assert_eq!(scale["status"]["replicas"], 2);

    // explain reads the published OpenAPI.
    let explained = kubectl().args(["explain", "crontab.spec.cronSpec"]).ok().stdout;
    assert!(explained.contains("The schedule in cron format"), "{explained}");

    // Strategic merge patch is refused for custom resources, as in kube.
    let strategic = kubectl().args(["patch", "ct", "nightly", "-p", r#"{"spec":{"image":"x"}}"#]).fails();
    assert!(
        strategic.stderr.contains("UnsupportedMediaType") || strategic.stderr.contains("unknown format"),
        "{}",
        strategic.stderr
    );

    // Isolation: beta knows nothing of the CRD.
    let other = shard.kubectl().cluster("beta").args(["get", "crontabs"]).fails();
    assert!(other.stderr.contains("the server doesn't have a resource type"), "{}", other.stderr);

    // Cluster-scoped CRs and enum validation.
    kubectl().args(["apply", "-f", "-"]).stdin(WIDGET_CRD).ok();
    kubectl().args(["wait", "--for=condition=Established", "crd/widgets.example.org", "--timeout=30s"]).ok();
    kubectl()
        .args(["apply", "-f", "-"])
        .stdin("apiVersion: example.org/v1\nkind: Widget\nmetadata: {name: w1}\nspec: {size: small}\n")
        .ok();
    let wrong = kubectl()
        .args(["apply", "-f", "-"])
        .stdin("apiVersion: example.org/v1\nkind: Widget\nmetadata: {name: w2}\nspec: {size: huge}\n")
        .fails();
    assert!(wrong.stderr.contains("Unsupported value: \"huge\""), "{}", wrong.stderr);
    let listed = kubectl().args(["get", "widgets", "-o", "name"]).ok().stdout;
    assert_eq!(listed.trim(), "widget.example.org/w1");

    // Server-side apply of a custom resource, and its conflicts.
    let ssa = "apiVersion: example.org/v1\nkind: Widget\nmetadata: {name: w3}\nspec: {size: small}\n";
    kubectl().args(["apply", "--server-side", "--field-manager=one", "-f", "-"]).stdin(ssa).ok();
    let conflict = kubectl()
        .args(["apply", "--server-side", "--field-manager=two", "-f", "-"])
        .stdin(ssa.replace("small", "large"))
        .fails();
    assert!(conflict.stderr.contains(".spec.size") && conflict.stderr.contains("\"one\""), "{}", conflict.stderr);

    // selectableFields make CR fields usable in field selectors.
    let small = kubectl().args(["get", "widgets", "--field-selector", "spec.size=small", "-o", "name"]).ok().stdout;
    assert_eq!(small.lines().collect::<Vec<_>>(), ["widget.example.org/w1", "widget.example.org/w3"], "{small}");
    let none = kubectl().args(["get", "widgets", "--field-selector", "spec.size=large", "-o", "name"]).ok().stdout;
    assert!(none.trim().is_empty(), "{none}");
    let unknown = kubectl().args(["get", "widgets", "--field-selector", "spec.other=x"]).fails();
    assert!(unknown.stderr.contains("spec.other"), "{}", unknown.stderr);

    // Deleting the CRD deletes its objects and the resource.
    kubectl().args(["delete", "crd", "crontabs.stable.example.com", "--timeout=60s"]).ok();
    let gone = kubectl().args(["get", "crontabs"]).fails();
    // kubectl's discovery cache may still list the resource; then the list itself is a 404.
    assert!(
        gone.stderr.contains("the server doesn't have a resource type")
            || gone.stderr.contains("could not find the requested resource"),
        "{}",
        gone.stderr
    );
    kubectl().args(["apply", "-f", "-"]).stdin(CRONTAB_CRD).ok();
    kubectl().args(["wait", "--for=condition=Established", "crd/crontabs.stable.example.com", "--timeout=30s"]).ok();
    let empty = kubectl().args(["get", "crontabs", "-A", "-o", "name"]).ok().stdout;
    assert!(empty.trim().is_empty(), "objects of a deleted CRD came back: {empty}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_crds_are_refused_and_crds_survive_restart() {
    let mut shard = ShardProcess::with_clusters(&["gamma"]).await;
    let kubectl = |shard: &ShardProcess| shard.kubectl().cluster("gamma");

    let nonstructural =
        CRONTAB_CRD.replace("              image:\n                type: string\n", "              image: {}\n");
    let refused = kubectl(&shard).args(["apply", "-f", "-"]).stdin(nonstructural).fails();
    assert!(
        refused.stderr.contains("spec.versions[0].schema.openAPIV3Schema.properties[spec].properties[image].type"),
        "{}",
        refused.stderr
    );

    let misnamed = WIDGET_CRD.replace("name: widgets.example.org", "name: gadgets.example.org");
    let refused = kubectl(&shard).args(["apply", "-f", "-"]).stdin(misnamed).fails();
    assert!(refused.stderr.contains("metadata.name"), "{}", refused.stderr);

    let shadowing = WIDGET_CRD.replace("widgets", "roles").replace("example.org", "rbac.authorization.k8s.io");
    kubectl(&shard).args(["apply", "-f", "-"]).stdin(shadowing).fails();

    kubectl(&shard).args(["apply", "-f", "-"]).stdin(WIDGET_CRD).ok();
    kubectl(&shard)
        .args(["apply", "-f", "-"])
        .stdin("apiVersion: example.org/v1\nkind: Widget\nmetadata: {name: kept}\nspec: {size: large}\n")
        .ok();
    shard.kill9();
    shard.restart().await.expect("restart");
    let mut listed = String::new();
    for _ in 0..50 {
        listed = kubectl(&shard).args(["get", "widgets", "-o", "name"]).run().stdout;
        if listed.contains("kept") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(listed.trim(), "widget.example.org/kept");

    // Deleting the logical cluster takes its custom resources and CRDs along: a cluster
    // created again under the same name starts empty.
    kubectl(&shard).args(["delete", "--raw", "/clusters/gamma/apis/core.kcp.io/v1alpha1/logicalclusters/cluster"]).ok();
    let mut recreated = false;
    for _ in 0..100 {
        if shard.create_logical_cluster("gamma").await.is_ok() {
            recreated = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert!(recreated, "the logical cluster could not be created again");
    let crds = kubectl(&shard).args(["get", "crds", "-o", "name"]).ok().stdout;
    assert!(crds.trim().is_empty(), "{crds}");
    let raw = kubectl(&shard).args(["get", "--raw", "/clusters/gamma/apis/example.org/v1/widgets"]).fails();
    assert!(raw.stderr.contains("NotFound") || raw.stderr.contains("not find"), "{}", raw.stderr);
}
