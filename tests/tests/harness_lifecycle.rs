//! The harness itself: a shard starts, answers every client the harness offers, and
//! survives SIGTERM and SIGKILL restarts on the same port and data dir. Other end-to-end
//! tests rely on exactly these steps, so when they fail this test says whether the
//! harness or the feature is at fault.

use http::StatusCode;
use tests::{ShardOptions, ShardProcess};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shard_restarts_on_the_same_port_and_every_client_connects() {
    let mut shard = ShardProcess::start(ShardOptions::default()).await.expect("start shard");
    let base_url = shard.base_url().to_string();
    assert_eq!(shard.http().get("/readyz").await.unwrap().status, StatusCode::OK);

    shard.create_logical_cluster("lifecycle").await.expect("create logical cluster");
    let namespaces = shard.http().get("/clusters/lifecycle/api/v1/namespaces").await.unwrap();
    assert_eq!(namespaces.status, StatusCode::OK, "{}", namespaces.text());

    // `get --raw` takes a path from the server's root: kubectl drops the server URL's path.
    let raw = shard.kubectl().args(["get", "--raw", "/clusters/lifecycle/api/v1/namespaces"]).ok();
    assert!(raw.json().unwrap()["kind"] == "NamespaceList", "{}", raw.stdout);

    let client = shard.kube_client("lifecycle").await;
    let api: kube::Api<k8s_openapi::api::core::v1::Namespace> = kube::Api::all(client);
    api.list(&Default::default()).await.expect("list namespaces with kube");

    shard.restart().await.expect("restart after SIGTERM");
    assert_eq!(shard.base_url(), base_url, "restart keeps the port");
    shard.kill9();
    shard.restart().await.expect("restart after SIGKILL");
    assert_eq!(shard.base_url(), base_url, "restart keeps the port");
    assert_eq!(shard.http().get("/readyz").await.unwrap().status, StatusCode::OK);

    let anonymous = shard.http_as(None).unwrap();
    let raw = anonymous
        .send_raw(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", std::time::Duration::from_secs(5))
        .await
        .unwrap();
    assert!(raw.starts_with(b"HTTP/1.1 "), "{}", String::from_utf8_lossy(&raw));
    let started = shard.log_tail(1000);
    assert!(started.matches("=== harness: starting atoll-shard").count() == 3, "{started}");

    let status = shard.stop().await.expect("stop");
    assert!(status.success(), "SIGTERM ends the shard cleanly: {status}");
}

/// Threads of process `pid` with the given name (Linux's `/proc/<pid>/task/*/comm`).
fn threads_named(pid: u32, name: &str) -> usize {
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).expect("list the process's threads");
    tasks
        .filter_map(|task| std::fs::read_to_string(task.ok()?.path().join("comm")).ok())
        .filter(|comm| comm.trim_end() == name)
        .count()
}

/// `--worker-threads` sizes the runtime that serves requests (tokio names its threads
/// `tokio-rt-worker`); the store's writer keeps its own thread, and the shard serves as
/// before. Zero threads is refused before anything starts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shard_runs_the_request_threads_it_is_told_to() {
    for threads in [1_usize, 3] {
        let options =
            ShardOptions { extra_args: vec!["--worker-threads".into(), threads.to_string()], ..Default::default() };
        let shard = ShardProcess::start(options).await.expect("start shard");
        let pid = shard.pid().expect("a running shard");
        assert_eq!(threads_named(pid, "tokio-rt-worker"), threads, "--worker-threads {threads}");
        assert_eq!(threads_named(pid, "store-writer"), 1);
        shard.create_logical_cluster("threads").await.expect("create logical cluster");
        let namespace = serde_json::json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "served"}});
        let created = shard.http().post_json("/clusters/threads/api/v1/namespaces", &namespace).await.unwrap();
        assert_eq!(created.status, StatusCode::CREATED, "{}", created.text());
    }
    let refused = std::process::Command::new(tests::binary("atoll-shard"))
        .args(["--data-dir", "/nonexistent/never-created", "--root", "--worker-threads", "0"])
        .output()
        .expect("run atoll-shard");
    assert_eq!(refused.status.code(), Some(2), "a usage error");
    let message = String::from_utf8_lossy(&refused.stderr);
    assert!(message.contains("--worker-threads"), "{message}");
    assert!(!std::path::Path::new("/nonexistent/never-created").exists());
}
