//! The clients of a run: writers and watchers over HTTPS (through the fault proxies),
//! each recording every request and its outcome in the shared history.
//!
//! Each object has exactly one writer, which issues its operations one at a time with
//! resourceVersion preconditions on updates and deletes. That is what lets the ledger
//! order an object's writes by the history alone: a write whose outcome was lost can
//! only land before the writer's next acknowledged write, never after it.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use http::Method;
use http_body_util::BodyExt;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{json, Value};
use tests::TlsHttp;

use crate::history::{
    EventKind, FinalState, History, Operation, OperationKind, Outcome, WatchEnd, WatchItem, WatchRequest,
};

/// The namespace every object of a run lives in.
pub const NAMESPACE: &str = "chaos";

/// How many objects each writer owns.
pub const OBJECTS_PER_WRITER: usize = 4;

/// The pause between two operations of one writer: bounds the load on two cores.
const WRITE_INTERVAL: Duration = Duration::from_millis(25);

/// How long a watch request may stay open (`timeoutSeconds`) before it is resumed.
const WATCH_TIMEOUT_SECONDS: u64 = 4;

/// How long a watch may stay silent before the watcher gives up on it (a bookmark comes
/// at its start and every 10 s; a blackholed stream says nothing at all).
const WATCH_IDLE: Duration = Duration::from_secs(8);

/// The pause before a watcher retries a request that failed without delivering anything.
const RETRY_PAUSE: Duration = Duration::from_millis(200);

/// How long a watcher keeps trying to reach the final RV once it is known.
pub const CATCH_UP: Duration = Duration::from_secs(30);

/// One collection the workload writes and watches: a logical cluster on one shard.
#[derive(Clone, Debug)]
pub struct Target {
    /// The shard serving it.
    pub shard: String,
    /// The logical cluster.
    pub cluster: String,
    /// A client that reaches the shard through its fault proxy.
    pub http: TlsHttp,
}

impl Target {
    /// The collection's name in the history.
    pub fn collection(&self) -> String {
        format!("{}/{}/{NAMESPACE}/configmaps", self.shard, self.cluster)
    }

    /// The collection's URL path.
    pub fn path(&self) -> String {
        format!("/clusters/{}/api/v1/namespaces/{NAMESPACE}/configmaps", self.cluster)
    }
}

/// The history under construction, shared by every client of a run.
#[derive(Clone)]
pub struct Recorder {
    started: Instant,
    history: Arc<Mutex<History>>,
    stop: Arc<AtomicBool>,
    /// collection → the final list's RV, once known: watchers stop when they reach it.
    finish_at: Arc<Mutex<BTreeMap<String, u64>>>,
}

impl Recorder {
    /// A recorder for a run of `scenario` drawn from `seed`.
    pub fn new(seed: u64, scenario: &str) -> Recorder {
        let history = History { seed, scenario: scenario.to_string(), ..History::default() };
        Recorder {
            started: Instant::now(),
            history: Arc::new(Mutex::new(history)),
            stop: Arc::new(AtomicBool::new(false)),
            finish_at: Arc::default(),
        }
    }

    /// Milliseconds since the run started.
    pub fn now_ms(&self) -> u64 {
        self.started.elapsed().as_millis() as u64
    }

    fn with<T>(&self, f: impl FnOnce(&mut History) -> T) -> T {
        f(&mut self.history.lock().unwrap_or_else(std::sync::PoisonError::into_inner))
    }

    /// Logs a fault with its time.
    pub fn fault(&self, what: String) {
        let at_ms = self.now_ms();
        println!("[{at_ms:>6} ms] fault: {what}");
        self.with(|h| h.faults.push(crate::history::FaultRecord { at_ms, what }));
    }

    /// Records a spell of full disk under `shard`'s store.
    pub fn disk_full(&self, spell: crate::history::DiskFullSpell) {
        self.with(|h| h.disk_full.push(spell));
    }

    /// Records a spell during which a process was down or frozen.
    pub fn window(&self, window: crate::history::FaultWindow) {
        self.with(|h| h.fault_windows.push(window));
    }

    /// Records a fault on a container of the docker-compose installation.
    pub fn host_fault(&self, record: crate::history::HostFaultRecord) {
        self.with(|h| h.hosts.push(record));
    }

    /// Tells writers to stop after their current operation.
    pub fn stop_writers(&self) {
        self.stop.store(true, Ordering::SeqCst);
    }

    /// Records the final state and tells watchers of that collection where to stop.
    pub fn finish(&self, state: FinalState) {
        lock(&self.finish_at).insert(state.collection.clone(), state.rv);
        self.with(|h| h.final_states.push(state));
    }

    /// A copy of the history recorded so far.
    pub fn snapshot(&self) -> History {
        self.with(|h| h.clone())
    }

    fn record(&self, op: Operation) {
        self.with(|h| h.operations.push(op));
    }

    fn record_watch(&self, request: WatchRequest) {
        self.with(|h| h.watches.push(request));
    }

    fn finish_rv(&self, collection: &str) -> Option<u64> {
        lock(&self.finish_at).get(collection).copied()
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// What a writer believes about one of its objects.
#[derive(Clone, Copy, Debug)]
enum Known {
    Absent,
    Present(u64),
    /// The last write's outcome is unknown: read before writing again.
    Unsure,
}

fn rv_of(object: &Value) -> Option<u64> {
    object["metadata"]["resourceVersion"].as_str()?.parse().ok()
}

fn value_of(object: &Value) -> Option<String> {
    object["data"]["v"].as_str().map(str::to_string)
}

fn configmap(name: &str, value: &str, rv: Option<u64>) -> Value {
    let mut metadata = json!({"name": name});
    if let Some(rv) = rv {
        metadata["resourceVersion"] = json!(rv.to_string());
    }
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata, "data": {"v": value}})
}

/// The outcome of an answered request: 2xx → Ok, a 404 read → NotFound, other 4xx (a
/// definite refusal) → Fail, 5xx and 429 → Unknown.
fn classify(status: http::StatusCode, body: &[u8], read: bool) -> Outcome {
    let object: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    match status.as_u16() {
        200..=299 => Outcome::Ok { rv: rv_of(&object).unwrap_or(0), value: value_of(&object) },
        404 if read => Outcome::NotFound,
        // The Status's message goes into the history: a 5xx must say what went wrong.
        429 | 500..=599 => {
            let message = object["message"].as_str().unwrap_or("(no Status message)");
            Outcome::Unknown { reason: format!("HTTP {status}: {message}") }
        }
        code => Outcome::Fail { status: code },
    }
}

/// Runs one writer until the recorder says stop; `seed` drives its choices.
pub async fn writer(recorder: Recorder, target: Target, client: u32, seed: u64) {
    let mut rng = StdRng::seed_from_u64(seed);
    let names: Vec<String> = (0..OBJECTS_PER_WRITER).map(|k| format!("w{client}-{k}")).collect();
    let mut known = vec![Known::Unsure; names.len()];
    let mut sequence = 0u64;
    while !recorder.stop.load(Ordering::SeqCst) {
        let slot = rng.gen_range(0..names.len());
        sequence += 1;
        let value = format!("c{client}-{sequence}");
        let listing = sequence.is_multiple_of(10);
        let (kind, method, path, body) = plan(&target, &names[slot], known[slot], &value, listing, rng.gen_bool(0.25));
        let invoke_ms = recorder.now_ms();
        let answer = target.http.send(method, &path, &[("content-type", "application/json")], body).await;
        let complete_ms = recorder.now_ms();
        let outcome = match &answer {
            Ok(response) => classify(response.status, &response.body, !kind.is_write()),
            Err(error) => Outcome::Unknown { reason: format!("{error:#}") },
        };
        if !listing {
            known[slot] = next_known(kind, &outcome);
        }
        let value = matches!(kind, OperationKind::Create | OperationKind::Update).then_some(value);
        let name = if kind == OperationKind::List { String::new() } else { names[slot].clone() };
        let pause = if matches!(outcome, Outcome::Unknown { .. }) { WRITE_INTERVAL * 8 } else { WRITE_INTERVAL };
        recorder.record(Operation {
            collection: target.collection(),
            shard: target.shard.clone(),
            client,
            name,
            kind,
            value,
            invoke_ms,
            complete_ms,
            outcome,
        });
        tokio::time::sleep(pause).await;
    }
}

/// The next request for an object in state `known`: a read when unsure, a create when
/// absent, else an update (or, when `delete`, a delete) with an RV precondition; when
/// `listing`, a list of the collection instead, whose RV the ledger checks.
fn plan(
    target: &Target,
    name: &str,
    known: Known,
    value: &str,
    listing: bool,
    delete: bool,
) -> (OperationKind, Method, String, Vec<u8>) {
    let collection = target.path();
    let object = format!("{collection}/{name}");
    let body = |v: &Value| serde_json::to_vec(v).unwrap_or_default();
    match known {
        _ if listing => (OperationKind::List, Method::GET, collection, Vec::new()),
        Known::Unsure => (OperationKind::Get, Method::GET, object, Vec::new()),
        Known::Absent => (OperationKind::Create, Method::POST, collection, body(&configmap(name, value, None))),
        Known::Present(rv) if delete => {
            let options = json!({"apiVersion": "v1", "kind": "DeleteOptions",
                "preconditions": {"resourceVersion": rv.to_string()}});
            (OperationKind::Delete, Method::DELETE, object, body(&options))
        }
        Known::Present(rv) => (OperationKind::Update, Method::PUT, object, body(&configmap(name, value, Some(rv)))),
    }
}

fn next_known(kind: OperationKind, outcome: &Outcome) -> Known {
    match (kind, outcome) {
        (OperationKind::Delete, Outcome::Ok { .. }) | (_, Outcome::NotFound) => Known::Absent,
        (_, Outcome::Ok { rv, .. }) => Known::Present(*rv),
        _ => Known::Unsure,
    }
}

/// Lists a collection: (list RV, objects as name → (rv, value)).
pub async fn list(http: &TlsHttp, path: &str) -> anyhow::Result<(u64, Vec<(String, u64, Option<String>)>)> {
    let list = http.get_json(path).await?;
    let rv = rv_of(&list).ok_or_else(|| anyhow::anyhow!("list {path} has no resourceVersion"))?;
    let objects = tests::tls_http::list_items(&list)
        .iter()
        .map(|item| {
            let name = item["metadata"]["name"].as_str().unwrap_or_default().to_string();
            (name, rv_of(item).unwrap_or(0), value_of(item))
        })
        .filter(|(name, _, _)| name != "kube-root-ca.crt")
        .collect();
    Ok((rv, objects))
}

/// Runs one watcher: list, watch from the list's RV, resume from the last RV reached
/// after every disconnect, re-list after a 410; stops once it reached the final RV (or
/// [`CATCH_UP`] after the final RV became known).
pub async fn watcher(recorder: Recorder, target: Target, watcher: u32) {
    let collection = target.collection();
    let mut session = 0u32;
    let mut give_up: Option<Instant> = None;
    'sessions: loop {
        let (mut rv, objects) = match list(&target.http, &target.path()).await {
            Ok(listed) => listed,
            Err(_) => {
                if past(&recorder, &collection, &mut give_up, 0) {
                    return;
                }
                tokio::time::sleep(RETRY_PAUSE).await;
                continue;
            }
        };
        let mut initial = Some(objects);
        loop {
            let mut request = watch_once(&target, watcher, session, rv, initial.take(), recorder.now_ms()).await;
            request.ended_ms = recorder.now_ms();
            let gone = request.end == WatchEnd::Gone;
            // A request that failed at once (a dead or refusing shard) is retried after a
            // pause, so a watcher does not spin on a fault.
            let failed_at_once = request.items.is_empty() && request.end != WatchEnd::Closed;
            rv = request.progress_rv();
            recorder.record_watch(request);
            if past(&recorder, &collection, &mut give_up, rv) {
                return;
            }
            if failed_at_once {
                tokio::time::sleep(RETRY_PAUSE).await;
            }
            if gone {
                session += 1;
                continue 'sessions;
            }
        }
    }
}

/// Whether the watcher is done: it reached the final RV, or gave up catching up to it.
fn past(recorder: &Recorder, collection: &str, give_up: &mut Option<Instant>, rv: u64) -> bool {
    let Some(final_rv) = recorder.finish_rv(collection) else { return false };
    let deadline = *give_up.get_or_insert_with(|| Instant::now() + CATCH_UP);
    rv >= final_rv || Instant::now() >= deadline
}

/// One watch request from `start_rv`, opened at `opened_ms`, read until it ends (the
/// caller stamps the end).
async fn watch_once(
    target: &Target,
    watcher: u32,
    session: u32,
    start_rv: u64,
    initial: Option<Vec<(String, u64, Option<String>)>>,
    opened_ms: u64,
) -> WatchRequest {
    let mut request = WatchRequest {
        collection: target.collection(),
        watcher,
        session,
        start_rv,
        initial,
        items: Vec::new(),
        end: WatchEnd::Closed,
        opened_ms,
        ended_ms: opened_ms,
    };
    let path = format!(
        "{}?watch=true&resourceVersion={start_rv}&allowWatchBookmarks=true&timeoutSeconds={WATCH_TIMEOUT_SECONDS}",
        target.path()
    );
    let response = match target.http.send_streaming(Method::GET, &path, &[], Vec::new()).await {
        Ok(response) => response,
        Err(error) => {
            request.end = WatchEnd::Broken { reason: format!("{error:#}") };
            return request;
        }
    };
    if response.status() == http::StatusCode::GONE {
        request.end = WatchEnd::Gone;
        return request;
    }
    if !response.status().is_success() {
        request.end = WatchEnd::Broken { reason: format!("HTTP {}", response.status()) };
        return request;
    }
    request.end = read_stream(response.into_body(), &mut request.items).await;
    request
}

/// Reads watch lines into `items` until the stream ends, breaks, goes idle or says 410.
async fn read_stream(mut body: hyper::body::Incoming, items: &mut Vec<WatchItem>) -> WatchEnd {
    let mut buffer = Vec::new();
    loop {
        let frame = match tokio::time::timeout(WATCH_IDLE, body.frame()).await {
            Err(_) => return WatchEnd::Broken { reason: format!("silent for {WATCH_IDLE:?}") },
            Ok(None) => return WatchEnd::Closed,
            Ok(Some(Err(error))) => return WatchEnd::Broken { reason: error.to_string() },
            Ok(Some(Ok(frame))) => frame,
        };
        if let Some(data) = frame.data_ref() {
            buffer.extend_from_slice(data);
        }
        while let Some(end) = buffer.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = buffer.drain(..=end).collect();
            match parse_line(&line) {
                Ok(Some(item)) => items.push(item),
                Ok(None) => {}
                Err(end) => return end,
            }
        }
    }
}

/// One watch line: an item, nothing (an empty line), or the end (an ERROR event).
fn parse_line(line: &[u8]) -> Result<Option<WatchItem>, WatchEnd> {
    if line.iter().all(u8::is_ascii_whitespace) {
        return Ok(None);
    }
    let event: Value =
        serde_json::from_slice(line).map_err(|e| WatchEnd::Broken { reason: format!("unparsable watch line: {e}") })?;
    let object = &event["object"];
    let kind = match event["type"].as_str().unwrap_or_default() {
        "ADDED" => EventKind::Added,
        "MODIFIED" => EventKind::Modified,
        "DELETED" => EventKind::Deleted,
        "BOOKMARK" => return Ok(Some(WatchItem::Bookmark { rv: rv_of(object).unwrap_or(0) })),
        "ERROR" if object["code"] == 410 => return Err(WatchEnd::Gone),
        other => return Err(WatchEnd::Broken { reason: format!("watch event {other}: {object}") }),
    };
    let name = object["metadata"]["name"].as_str().unwrap_or_default().to_string();
    Ok(Some(WatchItem::Event { kind, name, rv: rv_of(object).unwrap_or(0), value: value_of(object) }))
}
