//! The shard's cache informer against real cache servers (in-process, real TLS, gRPC and
//! RocksDB): it lists and watches one cache, and fails over to the next when that one
//! goes away, listing again there; with every cache down it waits longer each round.

use cache_server::{start, Config, Running};
use protocol::cache::cache_client::CacheClient;
use protocol::cache::{change, replicate_request, Batch, Change, Hello, Replica, ReplicaKey, ReplicateRequest};
use security::grpc::GrpcClient;
use security::pki;
use shard::cache::CacheIndex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Anything that should happen within this long in tests does.
const EVENTUALLY: Duration = Duration::from_secs(20);

/// A PKI and cache servers under one temporary directory.
struct Installation {
    dir: tempfile::TempDir,
}

impl Installation {
    fn new() -> Self {
        Installation { dir: tempfile::tempdir().expect("tempdir") }
    }

    async fn start(&self, name: &str) -> Running {
        let config = Config::in_dir(name, self.dir.path(), &self.dir.path().join("pki"), Vec::new()).expect("PKI");
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        start(config, listener).await.expect("start a cache server")
    }

    /// A client with shard `name`'s peer certificate.
    fn shard_client(&self, name: &str) -> GrpcClient {
        let pki_dir = self.dir.path().join("pki");
        let groups = ["system:masters".to_string()];
        let (cert, key) =
            pki::issue_client_cert(&pki_dir, &pki::peer_client_user(name), &groups).expect("issue a client cert");
        let ca = std::fs::read_to_string(pki_dir.join("ca.crt")).expect("read the serving CA");
        security::grpc::client(&ca, &cert, &key).expect("gRPC client")
    }
}

fn url(server: &Running) -> String {
    format!("https://{}", server.local_addr())
}

/// An APIExport replica of shard `s1`, in logical cluster `provider` at `path`.
fn export(name: &str, path: &str) -> Replica {
    let object = serde_json::json!({
        "apiVersion": "apis.kcp.io/v1alpha1",
        "kind": "APIExport",
        "metadata": {"name": name, "uid": format!("uid-{name}"), "annotations": {"kcp.io/path": path}},
    });
    Replica {
        key: Some(ReplicaKey {
            origin: "s1".into(),
            cluster: "provider".into(),
            group: "apis.kcp.io".into(),
            resource: "apiexports".into(),
            namespace: String::new(),
            name: name.into(),
        }),
        uid: format!("uid-{name}"),
        source_rv: 1,
        object: serde_json::to_vec(&object).unwrap(),
        sender: "s1".into(),
    }
}

/// Writes replicas into `server` as shard `s1` and waits for the acknowledgement.
async fn replicate(client: &GrpcClient, server: &Running, replicas: Vec<Replica>) {
    let mut cache = CacheClient::with_origin(client.clone(), url(server).parse().unwrap());
    let (tx, rx) = tokio::sync::mpsc::channel(4);
    let hello = ReplicateRequest {
        request: Some(replicate_request::Request::Hello(Hello { sender: "s1".into(), ..Hello::default() })),
    };
    tx.send(hello).await.unwrap();
    let changes = replicas.into_iter().map(|r| Change { change: Some(change::Change::Upsert(r)), force: false });
    let batch = Batch { changes: changes.collect(), position: 0, ..Batch::default() };
    tx.send(ReplicateRequest { request: Some(replicate_request::Request::Batch(batch)) }).await.unwrap();
    let mut acks = cache.replicate(tokio_stream::wrappers::ReceiverStream::new(rx)).await.unwrap().into_inner();
    acks.message().await.unwrap().expect("the hello's answer");
    acks.message().await.unwrap().expect("the batch's ack");
}

async fn eventually(what: &str, check: impl Fn() -> bool) {
    let deadline = Instant::now() + EVENTUALLY;
    while !check() {
        assert!(Instant::now() < deadline, "{what} not within {EVENTUALLY:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_informer_follows_one_cache_and_fails_over_to_the_next() {
    let installation = Installation::new();
    let first = installation.start("first").await;
    let second = installation.start("second").await;
    let client = installation.shard_client("s1");
    replicate(&client, &first, vec![export("a", "root:org")]).await;
    replicate(&client, &second, vec![export("b", "root:other")]).await;

    let index = Arc::new(CacheIndex::default());
    let informer = tokio::spawn(shard::cache::run(index.clone(), vec![url(&first), url(&second)], client.clone()));
    assert!(index.wait_synced(EVENTUALLY).await, "the first list");
    let has = |name: &str| index.get("apis.kcp.io", "apiexports", "provider", "", name).is_some();
    assert!(has("a") && !has("b"), "the informer reads the first cache only");
    assert_eq!(index.cluster_of_path("root:org").as_deref(), Some("provider"), "paths come from the replicas");

    // A change arrives through the watch.
    replicate(&client, &first, vec![export("c", "root:org")]).await;
    eventually("the watched change", || has("c")).await;

    // The first cache goes away: the informer lists the second one instead.
    first.stop().await;
    eventually("failover to the second cache", || has("b") && !has("a") && !has("c")).await;
    assert_eq!(index.cluster_of_path("root:other").as_deref(), Some("provider"));
    informer.abort();
    second.stop().await;
}

/// A cache server that is down: it accepts connections and drops them at once, counting
/// them.
async fn dead_cache() -> (String, Arc<AtomicUsize>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let url = format!("https://{}", listener.local_addr().expect("address"));
    let accepted = Arc::new(AtomicUsize::new(0));
    let counter = accepted.clone();
    tokio::spawn(async move {
        while let Ok((socket, _)) = listener.accept().await {
            counter.fetch_add(1, Ordering::SeqCst);
            drop(socket);
        }
    });
    (url, accepted)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_every_cache_down_the_informer_waits_longer_each_round() {
    let installation = Installation::new();
    Config::in_dir("pki-only", installation.dir.path(), &installation.dir.path().join("pki"), Vec::new()).expect("PKI");
    let client = installation.shard_client("s1");
    let (first, first_attempts) = dead_cache().await;
    let (second, second_attempts) = dead_cache().await;

    let index = Arc::new(CacheIndex::default());
    let informer = tokio::spawn(shard::cache::run(index.clone(), vec![first, second], client));
    tokio::time::sleep(Duration::from_secs(2)).await;
    informer.abort();
    let attempts = first_attempts.load(Ordering::SeqCst) + second_attempts.load(Ordering::SeqCst);
    // Rounds start at 0, 0.1, 0.3, 0.7 and 1.5 s: about ten connections in two seconds.
    // A back-off that starts over on every failover retries every 100 ms: about forty.
    assert!(attempts >= 2, "both caches were tried ({attempts} connections)");
    assert!(attempts <= 16, "{attempts} connections in 2 s: the back-off does not grow");
    assert!(!index.is_synced());
}
