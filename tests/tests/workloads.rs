//! Workload APIs in a logical cluster, driven the way their users drive them: stock
//! kubectl's commands that need no controller, kube-rs creating, patching, listing,
//! watching and deleting Deployments and Services, and the API details clients trip over
//! (what every namespace holds, patches by schema, typed decoding).

use futures::{StreamExt, TryStreamExt};
use http::Method;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Service, ServiceAccount};
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams};
use kube::Api;
use serde_json::{json, Value};
use std::time::Duration;
use tests::{Kubectl, ShardProcess};

const CLUSTER: &str = "work";

fn kubectl(shard: &ShardProcess) -> Kubectl {
    shard.kubectl().cluster(CLUSTER)
}

fn get_json(shard: &ShardProcess, args: &[&str]) -> Value {
    let mut all = vec!["get"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["-o", "json"]);
    kubectl(shard).args(all).ok().json().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_drives_deployments_services_and_jobs() {
    let shard = ShardProcess::with_clusters(&[CLUSTER]).await;
    let k = || kubectl(&shard);

    // create deployment: kube's defaults, status and generation.
    k().args(["create", "deployment", "web", "--image=nginx:1.27", "--replicas=2", "--port=80"]).ok();
    let web = get_json(&shard, &["deployment", "web"]);
    assert_eq!(web["spec"]["replicas"], 2);
    assert_eq!(web["spec"]["strategy"]["rollingUpdate"]["maxSurge"], "25%");
    assert_eq!(web["spec"]["revisionHistoryLimit"], 10);
    assert_eq!(web["spec"]["template"]["spec"]["restartPolicy"], "Always");
    assert_eq!(web["spec"]["template"]["spec"]["containers"][0]["imagePullPolicy"], "IfNotPresent");
    assert_eq!(web["spec"]["template"]["spec"]["containers"][0]["ports"][0]["protocol"], "TCP");
    assert_eq!(web["metadata"]["generation"], 1);
    let table = k().args(["get", "deployments"]).ok().stdout;
    assert!(table.starts_with("NAME") && table.contains("READY") && table.contains("UP-TO-DATE"), "{table}");
    assert!(table.contains("web    0/2"), "{table}");
    let wide = k().args(["get", "deploy", "-o", "wide"]).ok().stdout;
    assert!(wide.contains("nginx:1.27") && wide.contains("app=web"), "{wide}");

    // scale through the scale subresource; set image through a strategic merge patch.
    k().args(["scale", "deployment/web", "--replicas=3"]).ok();
    k().args(["set", "image", "deployment/web", "nginx=nginx:1.28"]).ok();
    let web = get_json(&shard, &["deployment", "web"]);
    assert_eq!(web["spec"]["replicas"], 3);
    let containers = web["spec"]["template"]["spec"]["containers"].as_array().unwrap();
    assert_eq!(containers.len(), 1, "set image merged the container by name: {containers:?}");
    assert_eq!(containers[0]["image"], "nginx:1.28");
    assert_eq!(web["metadata"]["generation"], 3, "two spec changes");

    // label, describe, edit.
    k().args(["label", "deployment", "web", "tier=front"]).ok();
    let described = k().args(["describe", "deployment", "web"]).ok().stdout;
    for line in ["Name:                   web", "Replicas:", "StrategyType:           RollingUpdate", "nginx:1.28"] {
        assert!(described.contains(line), "describe lacks {line:?}:\n{described}");
    }
    let editor = "sed -i -e 's/replicas: 3/replicas: 4/'";
    k().args(["edit", "deployment/web"]).env("KUBE_EDITOR", editor).ok();
    assert_eq!(get_json(&shard, &["deployment", "web"])["spec"]["replicas"], 4);

    // expose: kubectl reads the selector and creates a Service kube would default.
    k().args(["expose", "deployment", "web", "--port=8080", "--target-port=80"]).ok();
    let service = get_json(&shard, &["service", "web"]);
    assert_eq!(service["spec"]["selector"], json!({"app": "web"}));
    assert_eq!(service["spec"]["type"], "ClusterIP");
    assert_eq!(service["spec"]["sessionAffinity"], "None");
    assert_eq!(service["spec"]["ports"][0], json!({"port": 8080, "protocol": "TCP", "targetPort": 80}));
    let services = k().args(["get", "svc"]).ok().stdout;
    assert!(services.contains("PORT(S)") && services.contains("8080/TCP"), "{services}");

    // apply, client- and server-side.
    let manifest = r#"
apiVersion: apps/v1
kind: Deployment
metadata: {name: api, labels: {app: api}}
spec:
  selector: {matchLabels: {app: api}}
  template:
    metadata: {labels: {app: api}}
    spec:
      containers:
      - {name: api, image: "busybox:1.36", args: ["sleep", "3600"], env: [{name: A, value: "1"}]}
"#;
    k().args(["apply", "-f", "-"]).stdin(manifest).ok();
    k().args(["apply", "-f", "-"]).stdin(manifest.replace("\"1\"", "\"2\"")).ok();
    let api = get_json(&shard, &["deployment", "api"]);
    assert_eq!(api["spec"]["template"]["spec"]["containers"][0]["env"], json!([{"name": "A", "value": "2"}]));
    let server_side = manifest.replace("name: api, labels", "name: api-ssa, labels");
    k().args(["apply", "--server-side", "-f", "-"]).stdin(server_side.clone()).ok();
    k().args(["apply", "--server-side", "-f", "-"]).stdin(server_side.replace("busybox:1.36", "busybox:1.37")).ok();
    let ssa = get_json(&shard, &["deployment", "api-ssa", "--show-managed-fields"]);
    assert_eq!(ssa["spec"]["template"]["spec"]["containers"][0]["image"], "busybox:1.37");
    assert_eq!(ssa["metadata"]["managedFields"][0]["manager"], "kubectl");

    // create job: the generated selector and template labels, a table of its own.
    k().args(["create", "job", "pi", "--image=perl:5.34", "--", "perl", "-e", "print 1"]).ok();
    let job = get_json(&shard, &["job", "pi"]);
    let uid = job["metadata"]["uid"].as_str().unwrap();
    assert_eq!(job["spec"]["selector"]["matchLabels"]["batch.kubernetes.io/controller-uid"], uid);
    assert_eq!(job["spec"]["template"]["metadata"]["labels"]["job-name"], "pi");
    assert_eq!(job["spec"]["template"]["spec"]["restartPolicy"], "Never");
    assert_eq!(job["spec"]["backoffLimit"], 6);
    let jobs = k().args(["get", "jobs"]).ok().stdout;
    assert!(jobs.contains("COMPLETIONS") && jobs.contains("0/1"), "{jobs}");

    // explain reads the published schema.
    let explained = k().args(["explain", "deployment.spec.strategy"]).ok().stdout;
    assert!(explained.contains("rollingUpdate") && explained.contains("RollingUpdateDeployment"), "{explained}");

    // `get all` finds the kinds in the `all` category.
    let everything = k().args(["get", "all"]).ok().stdout;
    for name in ["deployment.apps/web", "service/web", "job.batch/pi"] {
        assert!(everything.contains(name), "get all lacks {name}:\n{everything}");
    }

    // Bad input: kube's codes and messages.
    let no_selector = r#"{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"bad"},
        "spec":{"template":{"metadata":{"labels":{"a":"b"}},"spec":{"containers":[{"name":"c"}]}}}}"#;
    let refused = k().args(["create", "-f", "-"]).stdin(no_selector).fails().stderr;
    assert!(refused.contains("spec.selector: Required value"), "{refused}");
    assert!(refused.contains("spec.template.spec.containers[0].image: Required value"), "{refused}");
    let typed = r#"{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"bad"},"spec":{"replicas":"two"}}"#;
    let refused = k().args(["create", "-f", "-", "--validate=false"]).stdin(typed).fails().stderr;
    assert!(refused.contains("spec.replicas: invalid type"), "{refused}");
    let http = shard.http();
    let path = format!("/clusters/{CLUSTER}/apis/apps/v1/namespaces/default/deployments/web");
    let not_a_list = http
        .send(Method::PATCH, &path, &[("content-type", "application/json-patch+json")], r#"{"op":"add"}"#)
        .await
        .unwrap();
    assert_eq!(not_a_list.status, 400, "{}", not_a_list.text());
    assert!(not_a_list.text().contains("must be an array"), "{}", not_a_list.text());
    assert_eq!(http.get(&path).await.unwrap().status, 200, "the server keeps serving");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_namespace_has_a_default_service_account_and_the_root_ca() {
    let shard = ShardProcess::with_clusters(&[CLUSTER]).await;
    let k = || kubectl(&shard);
    k().args(["create", "namespace", "team"]).ok();
    let accounts = k().args(["get", "serviceaccounts", "-n", "team", "-o", "name"]).ok().stdout;
    assert_eq!(accounts.trim(), "serviceaccount/default");
    let ca = get_json(&shard, &["configmap", "kube-root-ca.crt", "-n", "team"]);
    let pem = ca["data"]["ca.crt"].as_str().unwrap();
    let kubeconfig: Value = serde_json::from_str(&std::fs::read_to_string(shard.kubeconfig_path()).unwrap()).unwrap();
    assert!(pem.starts_with("-----BEGIN CERTIFICATE-----"), "{pem}");
    let ca_data = kubeconfig["clusters"][0]["cluster"]["certificate-authority-data"].as_str().unwrap();
    use base64::Engine;
    let trusted = base64::engine::general_purpose::STANDARD.decode(ca_data).unwrap();
    assert_eq!(pem.trim(), String::from_utf8(trusted).unwrap().trim(), "the CA clients trust");

    // Across namespaces, with the rest of the list.
    let all = get_json(&shard, &["serviceaccounts", "-A"]);
    let namespaces: Vec<&str> =
        all["items"].as_array().unwrap().iter().map(|i| i["metadata"]["namespace"].as_str().unwrap()).collect();
    for ns in ["default", "team"] {
        assert!(namespaces.contains(&ns), "{namespaces:?}");
    }

    // A first write stores it with its identity; a create of the name is a conflict.
    let before = get_json(&shard, &["sa", "default", "-n", "team"]);
    k().args(["label", "sa", "default", "-n", "team", "owner=me"]).ok();
    let after = get_json(&shard, &["sa", "default", "-n", "team"]);
    assert_eq!(after["metadata"]["uid"], before["metadata"]["uid"]);
    assert_eq!(after["metadata"]["labels"]["owner"], "me");
    let again = k().args(["create", "serviceaccount", "default", "-n", "team"]).fails().stderr;
    assert!(again.contains("AlreadyExists") || again.contains("already exists"), "{again}");
    let accounts = k().args(["get", "sa", "-n", "team", "-o", "name"]).ok().stdout;
    assert_eq!(accounts.trim(), "serviceaccount/default", "stored once, listed once");

    // Deleted, it is back at once as a new object, as kube's controller recreates it
    // (kubectl's wait for the deletion sees the uid change).
    k().args(["delete", "sa", "default", "-n", "team"]).ok();
    let back = get_json(&shard, &["sa", "default", "-n", "team"]);
    assert!(back["metadata"].get("labels").is_none(), "a fresh one: {back}");
    assert_ne!(back["metadata"]["uid"], after["metadata"]["uid"]);
    k().args(["delete", "configmap", "kube-root-ca.crt", "-n", "team"]).ok();
    assert!(get_json(&shard, &["configmap", "kube-root-ca.crt", "-n", "team"])["data"]["ca.crt"].is_string());

    // A strategic merge patch adding a finalizer keeps everyone else's (the list is a set).
    k().args(["create", "configmap", "held", "-n", "team"]).ok();
    let add = |finalizer: &str| format!(r#"{{"metadata":{{"finalizers":["{finalizer}"]}}}}"#);
    k().args(["patch", "configmap", "held", "-n", "team", "-p", &add("a.example/one")]).ok();
    k().args(["patch", "configmap", "held", "-n", "team", "-p", &add("b.example/two")]).ok();
    let held = get_json(&shard, &["configmap", "held", "-n", "team"]);
    assert_eq!(held["metadata"]["finalizers"], json!(["a.example/one", "b.example/two"]));
    k().clear_finalizers("configmap", "held", "team");
}

fn deployment(name: &str, image: &str) -> Deployment {
    serde_json::from_value(json!({
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
        "spec": {"selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "main", "image": image}]}}}
    }))
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kube_rs_creates_patches_lists_watches_and_deletes_workloads() {
    let shard = ShardProcess::with_clusters(&[CLUSTER]).await;
    let client = shard.kube_client(CLUSTER).await;
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), "default");
    let services: Api<Service> = Api::namespaced(client.clone(), "default");

    let watch = deployments.watch(&WatchParams::default(), "0").await.unwrap().boxed();
    let created = deployments.create(&PostParams::default(), &deployment("web", "nginx:1")).await.unwrap();
    let spec = created.spec.as_ref().unwrap();
    assert_eq!(spec.replicas, Some(1), "kube's default replica count");
    assert_eq!(spec.strategy.as_ref().unwrap().type_.as_deref(), Some("RollingUpdate"));

    let patched = deployments
        .patch("web", &PatchParams::default(), &Patch::Merge(json!({"spec": {"replicas": 3}})))
        .await
        .unwrap();
    assert_eq!(patched.spec.unwrap().replicas, Some(3));
    let strategic = json!({"spec": {"template": {"spec": {"containers": [{"name": "side", "image": "busybox"}]}}}});
    let patched = deployments.patch("web", &PatchParams::default(), &Patch::Strategic(strategic)).await.unwrap();
    let names: Vec<String> =
        patched.spec.unwrap().template.spec.unwrap().containers.into_iter().map(|c| c.name).collect();
    assert_eq!(names, ["main", "side"], "containers merge by name");
    let operations: json_patch::Patch =
        serde_json::from_value(json!([{"op": "replace", "path": "/spec/replicas", "value": 5}])).unwrap();
    let patched = deployments.patch("web", &PatchParams::default(), &Patch::Json::<()>(operations)).await.unwrap();
    assert_eq!(patched.spec.unwrap().replicas, Some(5));

    deployments.create(&PostParams::default(), &deployment("api", "busybox")).await.unwrap();
    let listed = deployments.list(&ListParams::default()).await.unwrap();
    let names: Vec<String> = listed.items.iter().filter_map(|d| d.metadata.name.clone()).collect();
    assert_eq!(names, ["api", "web"]);
    let page = deployments.list(&ListParams::default().limit(1)).await.unwrap();
    assert_eq!(page.metadata.remaining_item_count, Some(1));

    let service: Service = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
        "spec": {"selector": {"app": "web"}, "ports": [{"name": "http", "port": 80}, {"name": "https", "port": 443}]}
    }))
    .unwrap();
    let created = services.create(&PostParams::default(), &service).await.unwrap();
    assert_eq!(created.spec.as_ref().unwrap().type_.as_deref(), Some("ClusterIP"));
    let strategic = json!({"spec": {"ports": [{"name": "metrics", "port": 9090}]}});
    let patched = services.patch("web", &PatchParams::default(), &Patch::Strategic(strategic)).await.unwrap();
    let ports: Vec<i32> = patched.spec.unwrap().ports.unwrap().iter().map(|p| p.port).collect();
    assert_eq!(ports, [80, 443, 9090], "service ports merge by port");
    let merged = services
        .patch("web", &PatchParams::default(), &Patch::Merge(json!({"spec": {"sessionAffinity": "ClientIP"}})))
        .await
        .unwrap();
    assert_eq!(merged.spec.unwrap().session_affinity.as_deref(), Some("ClientIP"));
    assert_eq!(services.list(&ListParams::default()).await.unwrap().items.len(), 1);

    deployments.delete("api", &DeleteParams::default()).await.unwrap();
    services.delete("web", &DeleteParams::default()).await.unwrap();
    assert!(services.get_opt("web").await.unwrap().is_none());

    // The watch saw every step of the deployments, in order.
    let events: Vec<WatchEvent<Deployment>> =
        tokio::time::timeout(Duration::from_secs(20), watch.take(6).try_collect())
            .await
            .expect("six events within 20 s")
            .unwrap();
    let seen: Vec<String> = events
        .iter()
        .map(|event| match event {
            WatchEvent::Added(d) => format!("ADDED {}", d.metadata.name.clone().unwrap()),
            WatchEvent::Modified(d) => format!("MODIFIED {}", d.metadata.name.clone().unwrap()),
            WatchEvent::Deleted(d) => format!("DELETED {}", d.metadata.name.clone().unwrap()),
            other => format!("{other:?}"),
        })
        .collect();
    assert_eq!(seen, ["ADDED web", "MODIFIED web", "MODIFIED web", "MODIFIED web", "ADDED api", "DELETED api"]);

    // The namespace's implicit objects are typed objects too.
    let accounts: Api<ServiceAccount> = Api::namespaced(client.clone(), "default");
    assert!(accounts.get_opt("default").await.unwrap().is_some());
    let mut initial = accounts.watch(&WatchParams::default().timeout(2), "0").await.unwrap().boxed();
    match tokio::time::timeout(Duration::from_secs(10), initial.try_next()).await.unwrap().unwrap() {
        Some(WatchEvent::Added(account)) => assert_eq!(account.metadata.name.as_deref(), Some("default")),
        other => panic!("a watch from 0 starts with the default ServiceAccount: {other:?}"),
    }
    let configs: Api<ConfigMap> = Api::namespaced(client, "default");
    let ca = configs.get("kube-root-ca.crt").await.unwrap();
    assert!(ca.data.unwrap()["ca.crt"].starts_with("-----BEGIN CERTIFICATE-----"));
}
