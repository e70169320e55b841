//! Bad input gets a Kubernetes Status with the right code; the shard keeps serving and
//! nothing stored is damaged.

use http::Method;
use serde_json::{json, Value};
use tests::{ShardOptions, ShardProcess};

/// method, path, headers, body, expected code, expected reason.
type Case = (Method, String, Vec<(&'static str, &'static str)>, Vec<u8>, u16, &'static str);

const CMS: &str = "/clusters/root/api/v1/namespaces/default/configmaps";

/// A JSON patch whose self-copies would double an array forty times.
fn copy_bomb() -> Value {
    let mut ops = vec![json!({"op": "add", "path": "/data/x", "value": "0123456789".repeat(100)})];
    ops.push(json!({"op": "add", "path": "/metadata/annotations", "value": {}}));
    ops.push(json!({"op": "add", "path": "/metadata/finalizers", "value": ["a"]}));
    ops.extend(
        (0..40).map(|_| json!({"op": "copy", "from": "/metadata/finalizers", "path": "/metadata/finalizers/-"})),
    );
    ops.extend((0..2000).map(|i| json!({"op": "copy", "from": "/data/x", "path": format!("/data/y{i}")})));
    Value::Array(ops)
}

fn status_of(response: &tests::HttpResponse) -> Value {
    let status = response.json().unwrap_or_else(|e| panic!("{e:#}"));
    assert_eq!(status["kind"], "Status", "{status}");
    assert_eq!(status["code"], response.status.as_u16(), "{status}");
    assert!(status["message"].as_str().is_some_and(|m| !m.is_empty()), "{status}");
    status
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_rejection_is_a_status_with_the_right_code() {
    let shard = ShardProcess::start(ShardOptions::default()).await.unwrap();
    let http = shard.http();
    let json_type = [("content-type", "application/json")];
    let keep = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "keep"}, "data": {"k": "v"}});
    assert_eq!(http.post_json(CMS, &keep).await.unwrap().status, 201);

    let big = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "big"}, "data": {"k": "x".repeat(4 << 20)}});
    let cases: Vec<Case> = vec![
        (Method::POST, CMS.into(), json_type.to_vec(), b"{not json".to_vec(), 400, "BadRequest"),
        (
            Method::POST,
            CMS.into(),
            vec![("content-type", "application/yaml")],
            b"a: [unclosed".to_vec(),
            400,
            "BadRequest",
        ),
        (
            Method::POST,
            format!("{CMS}?fieldValidation=Strict"),
            json_type.to_vec(),
            br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"},"bogus":1}"#.to_vec(),
            400,
            "BadRequest",
        ),
        (
            Method::POST,
            CMS.into(),
            json_type.to_vec(),
            br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"Not_Valid"}}"#.to_vec(),
            422,
            "Invalid",
        ),
        (Method::POST, CMS.into(), json_type.to_vec(), serde_json::to_vec(&big).unwrap(), 413, "RequestEntityTooLarge"),
        (
            Method::POST,
            CMS.into(),
            vec![("content-type", "text/plain")],
            b"hello".to_vec(),
            415,
            "UnsupportedMediaType",
        ),
        (Method::GET, "/clusters/root/api/v1/namespaces/default/widgets".into(), vec![], vec![], 404, "NotFound"),
        (Method::PUT, CMS.into(), json_type.to_vec(), b"{}".to_vec(), 405, "MethodNotAllowed"),
        (
            Method::POST,
            CMS.into(),
            json_type.to_vec(),
            br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x","namespace":"other"}}"#.to_vec(),
            400,
            "BadRequest",
        ),
        (
            Method::PUT,
            format!("{CMS}/keep"),
            json_type.to_vec(),
            br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"other"}}"#.to_vec(),
            400,
            "BadRequest",
        ),
        (
            Method::PUT,
            format!("{CMS}/keep"),
            json_type.to_vec(),
            br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"keep","resourceVersion":"1"}}"#.to_vec(),
            409,
            "Conflict",
        ),
        (Method::POST, CMS.into(), json_type.to_vec(), serde_json::to_vec(&keep).unwrap(), 409, "AlreadyExists"),
        (Method::GET, format!("{CMS}/missing"), vec![], vec![], 404, "NotFound"),
        (Method::GET, "/clusters/nowhere/api/v1/namespaces".into(), vec![], vec![], 404, "NotFound"),
        (Method::GET, format!("{CMS}?labelSelector=a%20in%20(b"), vec![], vec![], 400, "BadRequest"),
        (Method::GET, format!("{CMS}?fieldSelector=spec.foo%3Dbar"), vec![], vec![], 400, "BadRequest"),
        (
            Method::PATCH,
            format!("{CMS}/keep"),
            vec![("content-type", "application/json-patch+json")],
            br#"[{"op":"test","path":"/data/k","value":"nope"}]"#.to_vec(),
            422,
            "Invalid",
        ),
        (
            Method::POST,
            "/clusters/root/api/v1/namespaces/nonexistent/configmaps".into(),
            json_type.to_vec(),
            br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"}}"#.to_vec(),
            404,
            "NotFound",
        ),
        (
            Method::POST,
            CMS.into(),
            json_type.to_vec(),
            br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"typed"},"data":{"k":1}}"#.to_vec(),
            400,
            "BadRequest",
        ),
        (
            Method::PATCH,
            "/clusters/root/api/v1/namespaces/default/status".into(),
            vec![("content-type", "application/merge-patch+json")],
            br#"{"status":"not an object"}"#.to_vec(),
            400,
            "BadRequest",
        ),
        (
            Method::PATCH,
            format!("{CMS}/keep"),
            vec![("content-type", "application/json-patch+json")],
            serde_json::to_vec(&copy_bomb()).unwrap(),
            422,
            "Invalid",
        ),
    ];
    for (method, path, headers, body, code, reason) in cases {
        let response = http.send(method.clone(), &path, &headers, body).await.unwrap();
        assert_eq!(response.status.as_u16(), code, "{method} {path}: {}", response.text());
        assert_eq!(status_of(&response)["reason"], reason, "{method} {path}");
    }

    // Warn (the default) prunes unknown fields and says so in a Warning header.
    let warned = http
        .send(
            Method::POST,
            CMS,
            &json_type,
            br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"warned"},"bogus":1}"#.to_vec(),
        )
        .await
        .unwrap();
    assert_eq!(warned.status, 201, "{}", warned.text());
    let warning = warned.headers.get("warning").and_then(|w| w.to_str().ok()).unwrap_or_default();
    assert!(warning.contains("unknown field \\\"bogus\\\""), "{warning}");
    assert!(warned.json().unwrap().get("bogus").is_none());

    // Authentication and the wildcard endpoint.
    let anonymous = shard.http_as(None).unwrap();
    let response = anonymous.get(CMS).await.unwrap();
    assert_eq!(response.status, 401);
    status_of(&response);
    let user = shard.user_identity("alice", &["developers"]).unwrap();
    let alice = shard.http_as(Some(&user)).unwrap();
    let response = alice.get("/clusters/*/api/v1/configmaps").await.unwrap();
    assert_eq!(response.status, 403);
    status_of(&response);

    // Still serving, and the object written first is intact.
    let kept = http.get(&format!("{CMS}/keep")).await.unwrap().json().unwrap();
    assert_eq!(kept["data"]["k"], "v");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bearer_tokens_from_the_token_file_authenticate() {
    let dir = tempfile::tempdir().unwrap();
    let tokens = dir.path().join("tokens.csv");
    std::fs::write(
        &tokens,
        "# token,user,uid,groups\nsecret-admin,carol,1001,\"system:masters,ops\"\nsecret-dev,dave,1002\n",
    )
    .unwrap();
    let options = ShardOptions { token_file: Some(tokens), ..ShardOptions::default() };
    let shard = ShardProcess::start(options).await.unwrap();
    let anonymous = shard.http_as(None).unwrap();
    let with = |token: &'static str| [("authorization", token)];
    // Authenticated, but not authorized until the admin grants it.
    let denied = anonymous.send(Method::GET, CMS, &with("Bearer secret-dev"), vec![]).await.unwrap();
    assert_eq!(denied.status, 403, "{}", denied.text());
    shard
        .kubectl()
        .cluster("root")
        .args(["create", "clusterrolebinding", "dave", "--clusterrole=cluster-admin", "--user=dave"])
        .ok();
    let ok = anonymous.send(Method::GET, CMS, &with("Bearer secret-dev"), vec![]).await.unwrap();
    assert_eq!(ok.status, 200, "{}", ok.text());
    let wrong = anonymous.send(Method::GET, CMS, &with("Bearer nope"), vec![]).await.unwrap();
    assert_eq!(wrong.status, 401);
    status_of(&wrong);
    // Only system:masters may use the wildcard endpoint.
    let dev =
        anonymous.send(Method::GET, "/clusters/*/api/v1/configmaps", &with("Bearer secret-dev"), vec![]).await.unwrap();
    assert_eq!(dev.status, 403);
    let admin = anonymous
        .send(Method::GET, "/clusters/*/api/v1/configmaps", &with("Bearer secret-admin"), vec![])
        .await
        .unwrap();
    assert_eq!(admin.status, 200, "{}", admin.text());
    // kubectl with --token and no client certificate.
    let server = shard.cluster_url("root");
    let ca = shard.data_dir().join("pki").join("ca.crt");
    let output = std::process::Command::new("kubectl")
        .args(["--kubeconfig", "/dev/null", "--server", &server, "--certificate-authority"])
        .arg(&ca)
        .args(["--token", "secret-dev", "get", "namespaces", "-o", "name"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    assert_eq!(String::from_utf8_lossy(&output.stdout).trim(), "namespace/default");
}
