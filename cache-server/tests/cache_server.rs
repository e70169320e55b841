//! In-process tests of the cache server: real TLS, real gRPC, real RocksDB, on
//! 127.0.0.1:0 with a PKI in a temporary directory.

use cache_server::{start, Config, Running};
use protocol::cache::cache_client::CacheClient;
use protocol::cache::watch_event::Kind;
use protocol::cache::{
    change, replicate_request, Batch, Change, Hello, ListRequest, Replica, ReplicaKey, ReplicateRequest,
    ReplicateResponse, WatchEvent, WatchRequest,
};
use security::grpc::GrpcClient;
use security::pki;
use std::future::Future;
use std::path::PathBuf;
use std::time::Duration;
use tokio::sync::mpsc;
use tonic::{Code, Status, Streaming};

/// Anything that should happen within this long in tests does.
const EVENTUALLY: Duration = Duration::from_secs(15);

/// One installation: a shared PKI directory, and cache servers under one temp dir.
struct Installation {
    dir: tempfile::TempDir,
}

impl Installation {
    fn new() -> Self {
        Installation { dir: tempfile::tempdir().expect("tempdir") }
    }

    fn pki_dir(&self) -> PathBuf {
        self.dir.path().join("pki")
    }

    fn config(&self, name: &str, parents: Vec<String>) -> Config {
        let config = Config::in_dir(name, self.dir.path(), &self.pki_dir(), parents).expect("load the PKI");
        Config { resync_interval: Duration::from_secs(1), ..config }
    }

    async fn start(&self, name: &str, parents: Vec<String>) -> Running {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        start(self.config(name, parents), listener).await.expect("start the cache server")
    }

    /// A gRPC client presenting a fresh client certificate for `user` in `groups`.
    fn client(&self, user: &str, groups: &[&str]) -> GrpcClient {
        let groups: Vec<String> = groups.iter().map(|g| (*g).to_owned()).collect();
        let (cert, key) = pki::issue_client_cert(&self.pki_dir(), user, &groups).expect("issue a client cert");
        security::grpc::client(&self.ca(), &cert, &key).expect("gRPC client")
    }

    fn ca(&self) -> String {
        std::fs::read_to_string(self.pki_dir().join("ca.crt")).expect("read the serving CA")
    }

    fn shard(&self, name: &str) -> GrpcClient {
        self.client(&pki::peer_client_user(name), &["system:masters"])
    }

    fn admin(&self) -> GrpcClient {
        self.client("admin", &["system:masters"])
    }
}

fn url(server: &Running) -> String {
    format!("https://{}", server.local_addr())
}

fn connect(client: &GrpcClient, server: &Running) -> CacheClient<GrpcClient> {
    CacheClient::with_origin(client.clone(), url(server).parse().expect("uri"))
}

fn key(origin: &str, group: &str, resource: &str, name: &str) -> ReplicaKey {
    ReplicaKey {
        origin: origin.into(),
        cluster: "c1".into(),
        group: group.into(),
        resource: resource.into(),
        namespace: String::new(),
        name: name.into(),
    }
}

fn export(origin: &str, name: &str) -> ReplicaKey {
    key(origin, "apis.kcp.io", "apiexports", name)
}

fn shard_key(name: &str) -> ReplicaKey {
    key("root", "core.kcp.io", "shards", name)
}

fn replica(key: &ReplicaKey, source_rv: u64) -> Replica {
    let object = serde_json::json!({"metadata": {"name": key.name, "resourceVersion": source_rv.to_string()}});
    Replica {
        key: Some(key.clone()),
        uid: format!("uid-{}", key.name),
        source_rv,
        object: serde_json::to_vec(&object).expect("json"),
        sender: "whoever".into(),
    }
}

fn upsert(key: &ReplicaKey, source_rv: u64) -> Change {
    Change { change: Some(change::Change::Upsert(replica(key, source_rv))), force: false }
}

fn forced(key: &ReplicaKey, source_rv: u64) -> Change {
    Change { force: true, ..upsert(key, source_rv) }
}

fn tombstone(key: &ReplicaKey) -> Change {
    Change { change: Some(change::Change::Tombstone(key.clone())), force: false }
}

/// A replication stream, as a shard drives it.
struct Stream {
    requests: mpsc::Sender<ReplicateRequest>,
    acks: Streaming<ReplicateResponse>,
    /// The position the cache answered the Hello with.
    position: u64,
}

impl Stream {
    async fn open(cache: &mut CacheClient<GrpcClient>, sender: &str) -> Result<Stream, Status> {
        Stream::open_session(cache, Hello { sender: sender.into(), ..Hello::default() }).await
    }

    /// Opens a stream with `hello` (a shard's session: its epoch and store head).
    async fn open_session(cache: &mut CacheClient<GrpcClient>, hello: Hello) -> Result<Stream, Status> {
        let (requests, rx) = mpsc::channel(64);
        requests.send(ReplicateRequest { request: Some(replicate_request::Request::Hello(hello)) }).await.unwrap();
        let mut acks = cache.replicate(tokio_stream::wrappers::ReceiverStream::new(rx)).await?.into_inner();
        let answer = acks.message().await?.expect("an answer to the Hello");
        assert_eq!(answer.batches, 0);
        Ok(Stream { requests, acks, position: answer.position })
    }

    async fn send(&self, changes: Vec<Change>, position: u64) {
        let batch = Batch { changes, position, ..Batch::default() };
        self.requests.send(ReplicateRequest { request: Some(replicate_request::Request::Batch(batch)) }).await.unwrap();
    }

    async fn ack(&mut self) -> Result<ReplicateResponse, Status> {
        match tokio::time::timeout(EVENTUALLY, self.acks.message()).await.expect("an ack in time")? {
            Some(ack) => Ok(ack),
            None => Err(Status::unknown("the stream ended without an ack")),
        }
    }

    async fn apply(&mut self, changes: Vec<Change>, position: u64) -> Result<ReplicateResponse, Status> {
        self.send(changes, position).await;
        self.ack().await
    }
}

async fn list(cache: &mut CacheClient<GrpcClient>, request: ListRequest) -> (Vec<Replica>, u64) {
    let listed = cache.list(request).await.expect("list").into_inner();
    (listed.items, listed.rv)
}

async fn list_origin(cache: &mut CacheClient<GrpcClient>, origin: &str) -> Vec<String> {
    let (items, _) = list(cache, ListRequest { origin: origin.into(), ..ListRequest::default() }).await;
    items.iter().map(|r| r.key.as_ref().unwrap().name.clone()).collect()
}

async fn watch(cache: &mut CacheClient<GrpcClient>, from_rv: u64) -> Result<Streaming<WatchEvent>, Status> {
    let request = WatchRequest { group: "apis.kcp.io".into(), resource: "apiexports".into(), from_rv };
    Ok(cache.watch(request).await?.into_inner())
}

/// Whether `cache` holds exactly the replicas `names` of `origin` (a check for
/// [`eventually`]).
async fn holds_exactly(mut cache: CacheClient<GrpcClient>, origin: &str, names: &[&str]) -> bool {
    list_origin(&mut cache, origin).await == names
}

/// The next event other than a bookmark.
async fn next_change(events: &mut Streaming<WatchEvent>) -> WatchEvent {
    loop {
        let event = tokio::time::timeout(EVENTUALLY, events.message())
            .await
            .expect("an event in time")
            .expect("watch")
            .expect("open watch");
        if event.kind != Kind::Bookmark as i32 {
            return event;
        }
    }
}

fn summary(event: &WatchEvent) -> (i32, String, u64) {
    let replica = event.replica.as_ref().expect("replica");
    (event.kind, replica.key.as_ref().unwrap().name.clone(), replica.source_rv)
}

/// The status of a call that must fail.
fn refusal<T>(result: Result<T, Status>, what: &str) -> Status {
    match result {
        Ok(_) => panic!("expected a refusal: {what}"),
        Err(status) => status,
    }
}

/// Polls `check` until it holds.
async fn eventually<F, Fut>(what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let deadline = tokio::time::Instant::now() + EVENTUALLY;
    while !check().await {
        assert!(tokio::time::Instant::now() < deadline, "timed out waiting until {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn replicate_acknowledge_list_and_watch() {
    let installation = Installation::new();
    let server = installation.start("cache", Vec::new()).await;
    let mut cache = connect(&installation.shard("s1"), &server);

    let mut stream = Stream::open(&mut cache, "s1").await.expect("open");
    assert_eq!(stream.position, 0, "a new sender starts with a full sync");
    let ack = stream.apply(vec![upsert(&export("s1", "a"), 5)], 10).await.expect("ack");
    assert_eq!((ack.position, ack.batches), (10, 1));

    let (items, rv) = list(&mut cache, ListRequest::default()).await;
    assert_eq!(items.len(), 1);
    assert_eq!(items[0].sender, "s1", "the cache stamps the authenticated sender");
    assert_eq!(items[0].source_rv, 5);

    // Pipelined: two batches before reading any ack; acks come in order.
    let mut events = watch(&mut cache, rv).await.expect("watch");
    stream.send(vec![upsert(&export("s1", "b"), 6)], 11).await;
    stream.send(vec![upsert(&export("s1", "a"), 7)], 12).await;
    let acks = [stream.ack().await.expect("ack"), stream.ack().await.expect("ack")];
    assert_eq!(acks.map(|a| (a.position, a.batches)), [(11, 2), (12, 3)]);
    assert_eq!(summary(&next_change(&mut events).await), (Kind::Added as i32, "b".into(), 6));
    assert_eq!(summary(&next_change(&mut events).await), (Kind::Modified as i32, "a".into(), 7));

    // Replays and stale versions write nothing; a batch without position keeps it.
    let ack = stream.apply(vec![upsert(&export("s1", "a"), 7), upsert(&export("s1", "b"), 4)], 0).await.expect("ack");
    assert_eq!((ack.position, ack.batches), (12, 4));
    let ack = stream.apply(vec![tombstone(&export("s1", "b"))], 13).await.expect("ack");
    assert_eq!(ack.position, 13);
    let deleted = next_change(&mut events).await;
    assert_eq!(summary(&deleted), (Kind::Deleted as i32, "b".into(), 6), "DELETED carries the previous replica");

    // Idle watchers get bookmarks.
    let bookmark =
        tokio::time::timeout(EVENTUALLY, events.message()).await.expect("in time").expect("ok").expect("open");
    assert_eq!(bookmark.kind, Kind::Bookmark as i32);
    assert!(bookmark.rv >= deleted.rv);

    let (items, _) = list(
        &mut cache,
        ListRequest {
            resource: "apiexports".into(),
            group: "apis.kcp.io".into(),
            origin: "s1".into(),
            ..ListRequest::default()
        },
    )
    .await;
    assert_eq!(
        items.iter().map(|r| (r.key.as_ref().unwrap().name.as_str(), r.source_rv)).collect::<Vec<_>>(),
        [("a", 7)]
    );
    let (items, _) = list(&mut cache, ListRequest { sender: "other".into(), ..ListRequest::default() }).await;
    assert!(items.is_empty());
    server.stop().await;
}

#[tokio::test]
async fn positions_survive_a_restart() {
    let installation = Installation::new();
    let server = installation.start("cache", Vec::new()).await;
    let shard = installation.shard("s1");
    let mut stream = Stream::open(&mut connect(&shard, &server), "s1").await.expect("open");
    stream.apply(vec![upsert(&export("s1", "a"), 5)], 42).await.expect("ack");
    drop(stream);
    server.stop().await;

    let server = installation.start("cache", Vec::new()).await;
    let mut cache = connect(&shard, &server);
    let stream = Stream::open(&mut cache, "s1").await.expect("open");
    assert_eq!(stream.position, 42, "the sender resumes where its last ack left it");
    assert_eq!(list_origin(&mut cache, "s1").await, ["a"]);
    let other = Stream::open(&mut connect(&installation.shard("s2"), &server), "s2").await.expect("open");
    assert_eq!(other.position, 0);
    server.stop().await;
}

#[tokio::test]
async fn callers_are_held_to_their_certificates() {
    let installation = Installation::new();
    let server = installation.start("cache", Vec::new()).await;
    let mut s1 = connect(&installation.shard("s1"), &server);

    let denied = refusal(Stream::open(&mut s1, "s2").await, "a shard cannot send as another");
    assert_eq!(denied.code(), Code::PermissionDenied);
    assert!(denied.message().contains("\"s1\"") && denied.message().contains("\"s2\""), "{}", denied.message());

    let mut stream = Stream::open(&mut s1, "s1").await.expect("open");
    let refused = stream.apply(vec![upsert(&export("s1", "mine"), 1), upsert(&export("s2", "theirs"), 1)], 5).await;
    let refused = refusal(refused, "another origin is refused");
    assert_eq!(refused.code(), Code::PermissionDenied);
    assert!(
        refused.message().contains("origin \"s2\"") && refused.message().contains("\"s1\""),
        "{}",
        refused.message()
    );
    assert!(list_origin(&mut s1, "s1").await.is_empty(), "a refused batch writes nothing");

    let mut stream = Stream::open(&mut s1, "s1").await.expect("open");
    assert_eq!(stream.position, 0);
    let invalid = refusal(stream.apply(vec![Change { change: None, force: false }], 1).await, "invalid");
    assert_eq!(invalid.code(), Code::InvalidArgument);
    let mut stream = Stream::open(&mut s1, "s1").await.expect("open");
    let mut not_json = upsert(&export("s1", "x"), 1);
    if let Some(change::Change::Upsert(r)) = &mut not_json.change {
        r.object = b"<xml/>".to_vec();
    }
    let invalid = refusal(stream.apply(vec![not_json], 1).await, "invalid");
    assert_eq!(invalid.code(), Code::InvalidArgument);
    assert!(invalid.message().contains("apiexports s1/c1/-/x"), "{}", invalid.message());

    // A child cache relays any origin, under its own name only.
    let mut child = connect(&installation.client(&pki::cache_user("eu"), &[]), &server);
    assert_eq!(refusal(Stream::open(&mut child, "us").await, "not its name").code(), Code::PermissionDenied);
    let mut relay = Stream::open(&mut child, "eu").await.expect("open");
    relay.apply(vec![upsert(&export("s7", "relayed"), 1)], 3).await.expect("any origin");

    // Users outside system:masters may neither write nor read.
    let mut alice = connect(&installation.client("alice", &["dev"]), &server);
    assert_eq!(refusal(Stream::open(&mut alice, "alice").await, "denied").code(), Code::PermissionDenied);
    assert_eq!(refusal(alice.list(ListRequest::default()).await, "denied").code(), Code::PermissionDenied);
    server.stop().await;
}

#[tokio::test]
async fn calls_without_a_certificate_are_unauthenticated_but_health_is_open() {
    let installation = Installation::new();
    let server = installation.start("cache", Vec::new()).await;
    let tls = security::tls::client_config(&installation.ca(), None, &[]).expect("tls");
    let connector = hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config((*tls).clone())
        .https_only()
        .enable_all_versions()
        .build();
    let http = hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
        .build::<_, http_body_util::Empty<bytes::Bytes>>(connector.clone());
    let health = http.get(format!("{}/healthz", url(&server)).parse().unwrap()).await.expect("healthz");
    assert_eq!(health.status(), 200);
    let other = http.get(format!("{}/api", url(&server)).parse().unwrap()).await.expect("404");
    assert_eq!(other.status(), 404);

    let grpc = hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
        .http2_only(true)
        .build::<_, tonic::body::Body>(connector);
    let mut anonymous = CacheClient::with_origin(grpc, url(&server).parse().unwrap());
    let refused = refusal(anonymous.list(ListRequest::default()).await, "no certificate");
    assert_eq!(refused.code(), Code::Unauthenticated);
    server.stop().await;
}

#[tokio::test]
async fn operators_repair_replicas_by_force() {
    let installation = Installation::new();
    let server = installation.start("cache", Vec::new()).await;
    let mut shard = Stream::open(&mut connect(&installation.shard("s1"), &server), "s1").await.expect("open");
    shard.apply(vec![upsert(&export("s1", "a"), 9)], 1).await.expect("ack");

    let mut admin = connect(&installation.admin(), &server);
    let mut repair = Stream::open(&mut admin, "s1").await.expect("the operator may send as anyone");
    assert_eq!(repair.position, 1);
    repair.apply(vec![upsert(&export("s1", "a"), 3)], 0).await.expect("ack");
    let source_rv = |items: Vec<Replica>| items.iter().map(|r| r.source_rv).collect::<Vec<_>>();
    assert_eq!(source_rv(list(&mut admin, ListRequest::default()).await.0), [9], "unforced: older loses");
    let ack = repair.apply(vec![forced(&export("s1", "a"), 3), upsert(&export("s2", "b"), 1)], 0).await.expect("ack");
    assert_eq!(ack.position, 1, "a repair without a position keeps the sender's");
    assert_eq!(source_rv(list(&mut admin, ListRequest { origin: "s1".into(), ..Default::default() }).await.0), [3]);
    server.stop().await;
}

#[tokio::test]
async fn deletions_are_remembered_across_a_restart_until_the_retention_ends() {
    let installation = Installation::new();
    let server = installation.start("cache", Vec::new()).await;
    let a = export("s1", "a");
    let mut shard = Stream::open(&mut connect(&installation.shard("s1"), &server), "s1").await.expect("open");
    shard.apply(vec![upsert(&a, 5), tombstone(&a)], 1).await.expect("ack");
    drop(shard);
    let names = |items: Vec<Replica>| items.iter().map(|r| r.key.as_ref().unwrap().name.clone()).collect::<Vec<_>>();
    // A child cache the origin failed over from relays its late copy, as it is or as a repair.
    let late = |server: &Running| connect(&installation.client("system:atoll:cache:old", &[]), server);
    let mut old = Stream::open(&mut late(&server), "old").await.expect("open");
    old.apply(vec![upsert(&a, 5), forced(&a, 4)], 1).await.expect("ack");
    let mut admin = connect(&installation.admin(), &server);
    assert!(names(list(&mut admin, ListRequest::default()).await.0).is_empty(), "no resurrection");
    drop(old);
    server.stop().await;

    let server = installation.start("cache", Vec::new()).await;
    let remembered = |server: &Running| {
        let key = protocol::replication::replica_key(&a);
        cache_server::replicas::read_deletion(server.store(), &key).expect("read").expect("remembered")
    };
    let before = remembered(&server);
    assert_eq!((before.source_rv, before.sender.as_str()), (5, "s1"));
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let mut old = Stream::open(&mut late(&server), "old").await.expect("open");
    old.apply(vec![upsert(&a, 5)], 2).await.expect("ack");
    assert!(remembered(&server).at_unix > before.at_unix, "a refused late copy restarts the retention");
    let mut admin = connect(&installation.admin(), &server);
    assert!(names(list(&mut admin, ListRequest::default()).await.0).is_empty(), "remembered across a restart");
    // A recreation has a later source version and is accepted.
    let b = export("s1", "b");
    old.apply(vec![upsert(&b, 7), tombstone(&b)], 3).await.expect("ack");
    old.apply(vec![upsert(&b, 8)], 4).await.expect("ack");
    assert_eq!(names(list(&mut admin, ListRequest::default()).await.0), ["b"]);

    // Within the retention nothing is forgotten; after it, late copies are accepted again.
    let store = server.store().clone();
    let retention = Duration::from_secs(600);
    assert_eq!(cache_server::replicas::collect_deletions(&store, retention, None).await.expect("collect"), 0);
    let later = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() + 601;
    assert_eq!(cache_server::replicas::collect_deletions(&store, retention, Some(later)).await.expect("collect"), 2);
    drop(store);
    old.apply(vec![upsert(&a, 5)], 5).await.expect("ack");
    assert_eq!(names(list(&mut admin, ListRequest::default()).await.0), ["a", "b"]);

    // An operator's forced deletion is a repair, not a deletion on the origin: the
    // replica's sender may restore it.
    let mut repair = Stream::open(&mut admin, "s1").await.expect("open");
    repair.apply(vec![Change { force: true, ..tombstone(&a) }], 0).await.expect("ack");
    old.apply(vec![upsert(&a, 5)], 6).await.expect("ack");
    assert_eq!(names(list(&mut admin, ListRequest::default()).await.0), ["a", "b"]);
    drop((old, repair));
    server.stop().await;
}

#[tokio::test]
async fn a_compacted_watch_is_gone() {
    let installation = Installation::new();
    let server = installation.start("cache", Vec::new()).await;
    let mut cache = connect(&installation.shard("s1"), &server);
    let mut stream = Stream::open(&mut cache, "s1").await.expect("open");
    for rv in 1..=5 {
        stream.apply(vec![upsert(&export("s1", "a"), rv)], rv).await.expect("ack");
    }
    let (_, rv) = list(&mut cache, ListRequest::default()).await;
    server.store().compact_keeping(1).expect("compact");
    let gone = refusal(watch(&mut cache, 1).await, "410");
    assert_eq!(gone.code(), Code::OutOfRange);
    assert!(gone.message().contains("too old") && gone.message().contains("list again"), "{}", gone.message());
    let future = refusal(watch(&mut cache, rv + 1000).await, "from another life");
    assert_eq!(future.code(), Code::OutOfRange);
    watch(&mut cache, rv).await.expect("the current rv still watches");
    server.stop().await;
}

#[tokio::test]
async fn deleting_a_shard_replica_purges_its_replicas() {
    let installation = Installation::new();
    let server = installation.start("cache", Vec::new()).await;
    let mut s1 = Stream::open(&mut connect(&installation.shard("s1"), &server), "s1").await.expect("open");
    let schema = key("s1", "apis.kcp.io", "apiresourceschemas", "schema");
    s1.apply(vec![upsert(&export("s1", "a"), 1), upsert(&schema, 2)], 7).await.expect("ack");
    let mut root_cache = connect(&installation.shard("root"), &server);
    let mut root = Stream::open(&mut root_cache, "root").await.expect("open");
    root.apply(vec![upsert(&shard_key("s1"), 3), upsert(&shard_key("s2"), 4), upsert(&export("root", "r"), 5)], 9)
        .await
        .expect("ack");

    root.apply(vec![tombstone(&shard_key("s1"))], 10).await.expect("ack");
    assert!(list_origin(&mut root_cache, "s1").await.is_empty(), "every replica of s1 is purged");
    assert_eq!(list_origin(&mut root_cache, "root").await, ["r", "s2"]);
    let again = Stream::open(&mut connect(&installation.shard("s1"), &server), "s1").await.expect("open");
    assert_eq!(again.position, 0, "the deleted shard's position is purged too");
    server.stop().await;
}

#[tokio::test]
async fn a_child_cache_relays_to_its_parent_and_follows_its_shard_deletions() {
    let installation = Installation::new();
    // The child starts first, with data, while its parent is still down: it connects once
    // the parent is up, and starts with a full sync.
    let parent_listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let parent_url = format!("https://{}", parent_listener.local_addr().expect("addr"));
    let child = installation.start("child", vec![parent_url]).await;
    let mut s1 = Stream::open(&mut connect(&installation.shard("s1"), &child), "s1").await.expect("open");
    s1.apply(vec![upsert(&export("s1", "early"), 1)], 1).await.expect("ack");
    let parent = start(installation.config("parent", Vec::new()), parent_listener).await.expect("start parent");
    let admin = installation.admin();
    let mut at_parent = connect(&admin, &parent);
    eventually("the parent holds the child's early replica", || {
        let mut at_parent = at_parent.clone();
        async move { list_origin(&mut at_parent, "s1").await == ["early"] }
    })
    .await;
    let (items, _) = list(&mut at_parent, ListRequest::default()).await;
    assert_eq!(items[0].sender, "child", "the parent records the child as sender");

    // Live changes follow.
    s1.apply(vec![upsert(&export("s1", "late"), 2), tombstone(&export("s1", "early"))], 2).await.expect("ack");
    eventually("the parent follows the child's changes", || {
        let mut at_parent = at_parent.clone();
        async move { list_origin(&mut at_parent, "s1").await == ["late"] }
    })
    .await;

    // Drift at the parent is repaired by the child's periodic comparison.
    let mut tamper = Stream::open(&mut at_parent, "child").await.expect("operator");
    tamper.apply(vec![tombstone(&export("s1", "late"))], 0).await.expect("ack");
    assert!(list_origin(&mut at_parent, "s1").await.is_empty());
    eventually("the child repairs the parent", || {
        let mut at_parent = at_parent.clone();
        async move { list_origin(&mut at_parent, "s1").await == ["late"] }
    })
    .await;

    // The root shard replicates its Shard objects straight to the parent; when it deletes
    // Shard s1 there, the child purges s1's replicas although it never saw the tombstone.
    let mut root = Stream::open(&mut connect(&installation.shard("root"), &parent), "root").await.expect("open");
    root.apply(vec![upsert(&shard_key("s1"), 1)], 1).await.expect("ack");
    // Let the child's watch of the parent's Shard replicas see s1 first.
    tokio::time::sleep(Duration::from_millis(300)).await;
    root.apply(vec![tombstone(&shard_key("s1"))], 2).await.expect("ack");
    let mut at_child = connect(&admin, &child);
    eventually("the child purges the deleted shard's replicas", || {
        let mut at_child = at_child.clone();
        async move { list_origin(&mut at_child, "s1").await.is_empty() }
    })
    .await;
    // The child's repairs may have raced the purge; its tombstones settle the parent.
    eventually("the parent holds nothing of s1", || {
        let mut at_parent = at_parent.clone();
        async move { list_origin(&mut at_parent, "s1").await.is_empty() }
    })
    .await;
    let mut unrelated = Stream::open(&mut at_child, "s9").await.expect("open");
    unrelated.apply(vec![upsert(&export("s9", "kept"), 1)], 0).await.expect("ack");
    assert_eq!(list_origin(&mut at_child, "s9").await, ["kept"]);

    child.stop().await;
    parent.stop().await;
}

/// A shard that failed over from regional cache B to A deletes an object B had relayed to
/// the parent but B is cut off from the parent before it relays the deletion, and never
/// comes back. A, once it holds the shard's whole state of the newer session (settled),
/// speaks for the shard at the parent and deletes the copy B left behind.
#[tokio::test]
async fn the_settled_relay_deletes_what_the_old_relay_left_at_the_parent() {
    let installation = Installation::new();
    let parent = installation.start("parent", Vec::new()).await;
    let parent_url = url(&parent);
    let a = installation.start("a", vec![parent_url.clone()]).await;
    let b = installation.start("b", vec![parent_url]).await;
    let s1 = installation.shard("s1");
    let mut at_parent = connect(&installation.admin(), &parent);

    // Session 1 through B: its head (1) is reached by the first batch.
    let hello = |epoch, head| Hello { sender: "s1".into(), epoch, head };
    let mut to_b = Stream::open_session(&mut connect(&s1, &b), hello(1, 1)).await.expect("open to b");
    to_b.apply(vec![upsert(&export("s1", "left"), 1)], 1).await.expect("ack");
    eventually("b relays the object to the parent", || holds_exactly(at_parent.clone(), "s1", &["left"])).await;
    let (items, _) = list(&mut at_parent, ListRequest::default()).await;
    assert_eq!(items.iter().map(|r| r.sender.as_str()).collect::<Vec<_>>(), ["b"]);

    // B goes away before it learns of the deletion; the shard deletes at rv 2 and opens
    // session 2 to A, which never held the object: nothing to send but the position.
    drop(to_b);
    b.stop().await;
    let mut to_a = Stream::open_session(&mut connect(&s1, &a), hello(2, 2)).await.expect("open to a");
    assert_eq!(to_a.position, 0);
    to_a.apply(Vec::new(), 2).await.expect("ack");
    eventually("a deletes b's leftover at the parent", || holds_exactly(at_parent.clone(), "s1", &[])).await;

    // A stays the shard's voice: what the shard writes next arrives as usual.
    to_a.apply(vec![upsert(&export("s1", "next"), 3)], 3).await.expect("ack");
    eventually("the parent follows a", || holds_exactly(at_parent.clone(), "s1", &["next"])).await;
    let epochs = at_parent.list(ListRequest::default()).await.expect("list").into_inner().epochs;
    assert_eq!(epochs.len(), 1, "{epochs:?}");
    assert_eq!((epochs[0].epoch, epochs[0].via.as_str(), epochs[0].settled), (2, "a", true));

    a.stop().await;
    parent.stop().await;
}

/// A shard back at a regional cache it left holds stale copies there until its new session
/// settles: the cache's comparison with the parent must not bring them back meanwhile, even
/// once the parent has forgotten the deletion.
#[tokio::test]
async fn a_shard_back_at_its_old_cache_brings_back_nothing_before_it_settles() {
    let installation = Installation::new();
    let parent = installation.start("parent", Vec::new()).await;
    let parent_url = url(&parent);
    let s1 = installation.shard("s1");
    let hello = |epoch, head| Hello { sender: "s1".into(), epoch, head };
    let mut at_parent = connect(&installation.admin(), &parent);

    // Session 1 through A writes "stale"; A stops holding it.
    let a = installation.start("a", vec![parent_url.clone()]).await;
    let mut to_a = Stream::open_session(&mut connect(&s1, &a), hello(1, 1)).await.expect("open to a");
    to_a.apply(vec![upsert(&export("s1", "stale"), 1)], 1).await.expect("ack");
    eventually("a relays the object", || holds_exactly(at_parent.clone(), "s1", &["stale"])).await;
    drop(to_a);
    a.stop().await;

    // Session 2 through B, after the shard deleted it at rv 2; the parent forgets the
    // deletion (its retention ended).
    let b = installation.start("b", vec![parent_url.clone()]).await;
    let mut to_b = Stream::open_session(&mut connect(&s1, &b), hello(2, 2)).await.expect("open to b");
    to_b.apply(Vec::new(), 2).await.expect("ack");
    eventually("b deletes what a left", || holds_exactly(at_parent.clone(), "s1", &[])).await;
    drop(to_b);
    b.stop().await;
    let far = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() + 3600;
    let forgotten = cache_server::replicas::collect_deletions(parent.store(), Duration::from_secs(1), Some(far)).await;
    assert_eq!(forgotten.expect("collect"), 1, "the parent remembered the deletion");

    // Back at A, which still holds the stale copy: session 3 opens while A has no uplink,
    // and A restarts with it before the shard sent anything.
    let a = installation.start("a", Vec::new()).await;
    let to_a = Stream::open_session(&mut connect(&s1, &a), hello(3, 3)).await.expect("open to a");
    assert_eq!(to_a.position, 1, "a recorded session 1's position");
    drop(to_a);
    a.stop().await;
    let (_, rv) = list(&mut at_parent, ListRequest::default()).await;
    let mut events = watch(&mut at_parent, rv).await.expect("watch the parent");
    let a = installation.start("a", vec![parent_url]).await;
    let mut to_a = Stream::open_session(&mut connect(&s1, &a), hello(4, 4)).await.expect("open to a");
    assert_eq!(to_a.position, 1);
    // Several comparisons with the parent (one a second) while the session is unsettled.
    let quiet = async {
        loop {
            match events.message().await {
                Ok(Some(event)) if event.kind == Kind::Bookmark as i32 => continue,
                other => return other,
            }
        }
    };
    match tokio::time::timeout(Duration::from_secs(4), quiet).await {
        Err(_) => {}
        Ok(event) => panic!("the parent changed while the returning session was unsettled: {event:?}"),
    }
    assert!(list_origin(&mut at_parent, "s1").await.is_empty());

    // The shard's catch-up settles the session: the tombstone, then the head.
    to_a.apply(vec![tombstone(&export("s1", "stale"))], 4).await.expect("ack");
    to_a.apply(vec![upsert(&export("s1", "fresh"), 5)], 5).await.expect("ack");
    eventually("the parent follows a again", || holds_exactly(at_parent.clone(), "s1", &["fresh"])).await;
    eventually("the parent knows a settled session 4", || {
        let mut at_parent = at_parent.clone();
        async move {
            let epochs = at_parent.list(ListRequest::default()).await.expect("list").into_inner().epochs;
            epochs.iter().any(|r| r.origin == "s1" && r.epoch == 4 && r.via == "a" && r.settled)
        }
    })
    .await;

    a.stop().await;
    parent.stop().await;
}

/// Writes pipelined through two levels (shard → child → parent) at up to 1,000 writes/s,
/// each write its own batch, as a shard sends them: every one reaches the parent's watch
/// (each within [`EVENTUALLY`] of the previous one, a bound that holds on any machine),
/// exactly once, and in source order per object. How fast they get there is a
/// measurement for a benchmark, not for a test; the test only prints it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pipelined_writes_all_arrive_through_two_levels_in_order() {
    const WRITES: u64 = 3000;
    const OBJECTS: u64 = 100;
    let installation = Installation::new();
    let parent = installation.start("parent", Vec::new()).await;
    let child = installation.start("child", vec![url(&parent)]).await;
    let admin = installation.admin();
    let mut at_parent = connect(&admin, &parent);
    let (_, rv) = list(&mut at_parent, ListRequest::default()).await;
    let mut events = watch(&mut at_parent, rv).await.expect("watch");
    let mut shard = Stream::open(&mut connect(&installation.shard("s1"), &child), "s1").await.expect("open");

    let started = tokio::time::Instant::now();
    let sender = tokio::spawn(async move {
        let mut tick = tokio::time::interval(Duration::from_millis(1));
        for i in 1..=WRITES {
            tick.tick().await;
            shard.send(vec![upsert(&export("s1", &format!("e{}", i % OBJECTS)), i)], i).await;
        }
        for _ in 1..=WRITES {
            shard.ack().await.expect("ack");
        }
    });
    let mut seen = std::collections::BTreeSet::new();
    let mut last_per_object = std::collections::HashMap::new();
    while seen.len() < WRITES as usize {
        let (_, name, source_rv) = summary(&next_change(&mut events).await);
        assert!(seen.insert(source_rv), "source version {source_rv} arrived twice");
        let previous = last_per_object.insert(name.clone(), source_rv).unwrap_or_default();
        assert!(previous < source_rv, "{name}: {source_rv} arrived after {previous}");
    }
    sender.await.expect("sender");
    assert_eq!(seen.first().copied(), Some(1));
    assert_eq!(seen.last().copied(), Some(WRITES));
    assert_eq!(last_per_object.len() as u64, OBJECTS);
    println!("{WRITES} writes through two levels in {:?}", started.elapsed());
    child.stop().await;
    parent.stop().await;
}
