//! REST semantics over raw HTTPS: generateName, dry runs, delete preconditions,
//! deletecollection, subresources and generation.

use http::Method;
use serde_json::{json, Value};
use tests::{ShardOptions, ShardProcess};

const CMS: &str = "/clusters/root/api/v1/namespaces/default/configmaps";

async fn send_json(http: &tests::TlsHttp, method: Method, path: &str, body: &Value) -> tests::HttpResponse {
    let bytes = serde_json::to_vec(body).unwrap();
    let content_type = if method == Method::PATCH { "application/merge-patch+json" } else { "application/json" };
    http.send(method, path, &[("content-type", content_type)], bytes).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn generate_name_dry_run_preconditions_and_collections() {
    let shard = ShardProcess::start(ShardOptions::default()).await.unwrap();
    let http = shard.http();

    let generated = http
        .post_json(CMS, &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"generateName": "gen-", "labels": {"batch": "x"}}}))
        .await
        .unwrap();
    assert_eq!(generated.status, 201, "{}", generated.text());
    let name = generated.json().unwrap()["metadata"]["name"].as_str().unwrap().to_string();
    assert!(name.starts_with("gen-") && name.len() == 9, "{name}");

    let dry = http
        .post_json(
            &format!("{CMS}?dryRun=All"),
            &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "dry"}}),
        )
        .await
        .unwrap();
    assert_eq!(dry.status, 201);
    assert_eq!(http.get(&format!("{CMS}/dry")).await.unwrap().status, 404, "a dry run stores nothing");

    for i in 0..3 {
        let labels = if i < 2 { json!({"batch": "x"}) } else { json!({"batch": "y"}) };
        let body =
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": format!("c{i}"), "labels": labels}});
        assert_eq!(http.post_json(CMS, &body).await.unwrap().status, 201);
    }
    let wrong_uid = json!({"kind": "DeleteOptions", "apiVersion": "v1", "preconditions": {"uid": "not-the-uid"}});
    let refused = send_json(&http, Method::DELETE, &format!("{CMS}/c0"), &wrong_uid).await;
    assert_eq!(refused.status, 409, "{}", refused.text());

    let deleted = http.send(Method::DELETE, &format!("{CMS}?labelSelector=batch%3Dx"), &[], vec![]).await.unwrap();
    assert_eq!(deleted.status, 200, "{}", deleted.text());
    assert_eq!(deleted.json().unwrap()["items"].as_array().unwrap().len(), 3, "gen-, c0 and c1");
    let left = http.get(CMS).await.unwrap().json().unwrap();
    let names: Vec<&str> =
        left["items"].as_array().unwrap().iter().map(|o| o["metadata"]["name"].as_str().unwrap()).collect();
    // The namespace's kube-root-ca.crt stays, as in kube.
    assert_eq!(names, ["c2", "kube-root-ca.crt"]);

    // Generation moves with content changes, not with metadata changes.
    let path = format!("{CMS}/c2");
    let before = http.get(&path).await.unwrap().json().unwrap();
    let labelled =
        send_json(&http, Method::PATCH, &path, &json!({"metadata": {"labels": {"more": "1"}}})).await.json().unwrap();
    assert_eq!(labelled["metadata"]["generation"], before["metadata"]["generation"]);
    let changed = send_json(&http, Method::PATCH, &path, &json!({"data": {"k": "v"}})).await.json().unwrap();
    assert_eq!(changed["metadata"]["generation"].as_i64(), before["metadata"]["generation"].as_i64().map(|g| g + 1));
    let unchanged = send_json(&http, Method::PATCH, &path, &json!({"data": {"k": "v"}})).await.json().unwrap();
    assert_eq!(
        unchanged["metadata"]["resourceVersion"], changed["metadata"]["resourceVersion"],
        "a no-op patch writes nothing"
    );

    // The namespace status subresource changes status only; the main resource ignores status.
    let ns = "/clusters/root/api/v1/namespaces/default";
    let main = send_json(&http, Method::PATCH, ns, &json!({"status": {"phase": "Bogus"}})).await.json().unwrap();
    assert_eq!(main["status"]["phase"], "Active");
    let status = send_json(&http, Method::PATCH, &format!("{ns}/status"), &json!({"metadata": {"labels": {"ignored": "yes"}}, "status": {"conditions": [{"type": "Test", "status": "True"}]}})).await.json().unwrap();
    assert_eq!(status["status"]["conditions"][0]["type"], "Test");
    assert!(status["metadata"]["labels"].get("ignored").is_none(), "{status}");

    // Process endpoints answer, and /metrics counts what was served in Prometheus text.
    for probe in ["/healthz", "/livez", "/readyz"] {
        assert_eq!(http.get(probe).await.unwrap().status, 200, "{probe}");
    }
    let metrics = http.get("/metrics").await.unwrap().text();
    assert!(metrics.contains("apiserver_request_total{"), "{metrics}");
    assert!(metrics.contains("resource=\"configmaps\""), "{metrics}");
    assert!(metrics.contains("atoll_store_batches_total"), "{metrics}");

    // A watch on a named object sees only that object.
    let named = http
        .send_streaming(Method::GET, &format!("{CMS}/c2?watch=true&resourceVersion=0&timeoutSeconds=2"), &[], vec![])
        .await
        .unwrap();
    use http_body_util::BodyExt;
    let body = named.into_body().collect().await.unwrap().to_bytes();
    let names: Vec<String> = String::from_utf8_lossy(&body)
        .lines()
        .map(|line| {
            serde_json::from_str::<Value>(line).unwrap()["object"]["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_string()
        })
        .collect();
    assert_eq!(names, ["c2"], "{}", String::from_utf8_lossy(&body));

    // A namespace already terminating answers a second DELETE with 409, as kube does.
    let held = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "held", "finalizers": ["x/y"]}});
    let ns_path = "/clusters/root/api/v1/namespaces";
    assert_eq!(
        http.post_json(ns_path, &json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "slow"}}))
            .await
            .unwrap()
            .status,
        201
    );
    assert_eq!(http.post_json(&format!("{ns_path}/slow/configmaps"), &held).await.unwrap().status, 201);
    assert_eq!(http.send(Method::DELETE, &format!("{ns_path}/slow"), &[], vec![]).await.unwrap().status, 200);
    let again = http.send(Method::DELETE, &format!("{ns_path}/slow"), &[], vec![]).await.unwrap();
    assert_eq!(again.status, 409, "{}", again.text());

    // A logical cluster being deleted refuses new content.
    shard.create_logical_cluster("leaving").await.unwrap();
    let lc = "/clusters/leaving/apis/core.kcp.io/v1alpha1/logicalclusters/cluster";
    let hold = json!({"metadata": {"finalizers": ["core.kcp.io/logicalcluster-deletion", "test/hold"]}});
    assert_eq!(send_json(&http, Method::PATCH, lc, &hold).await.status, 200);
    assert_eq!(http.send(Method::DELETE, lc, &[], vec![]).await.unwrap().status, 200);
    let refused = http
        .post_json(
            "/clusters/leaving/api/v1/namespaces/default/configmaps",
            &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "late"}}),
        )
        .await
        .unwrap();
    assert_eq!(refused.status, 403, "{}", refused.text());
}
