//! Watch semantics (410 Gone, bookmarks, streaming lists), a kube-rs watcher that survives
//! a 410 by re-listing, and durability under kill -9.

use futures::StreamExt;
use http::Method;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::runtime::watcher::{self, Event};
use kube::runtime::WatchStreamExt;
use kube::Api;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::time::Duration;
use tests::{ShardOptions, ShardProcess};

const CMS: &str = "/clusters/root/api/v1/namespaces/default/configmaps";

fn configmap(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"v": name}})
}

fn small_retention() -> ShardOptions {
    ShardOptions {
        extra_args: vec!["--retention-events".into(), "5".into(), "--compaction-interval-seconds".into(), "1".into()],
        ..ShardOptions::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_from_a_compacted_rv_is_an_in_band_410() {
    let shard = ShardProcess::start(small_retention()).await.unwrap();
    let http = shard.http();
    let first = http.post_json(CMS, &configmap("c0")).await.unwrap().json().unwrap();
    let old_rv = first["metadata"]["resourceVersion"].as_str().unwrap().to_string();
    for i in 1..20 {
        http.post_json(CMS, &configmap(&format!("c{i}"))).await.unwrap();
    }
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let response = http
        .send_streaming(Method::GET, &format!("{CMS}?watch=true&resourceVersion={old_rv}"), &[], vec![])
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let events = tests::tls_http::watch_events(response, 1).await;
    assert_eq!(events[0]["type"], "ERROR", "{events:?}");
    assert_eq!(events[0]["object"]["code"], 410);
    assert_eq!(events[0]["object"]["reason"], "Expired");
    let list = http.get(&format!("{CMS}?resourceVersion={old_rv}&resourceVersionMatch=Exact")).await.unwrap();
    assert_eq!(list.status, 410, "{}", list.text());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_continue_token_offers_the_inconsistent_rest() {
    let shard = ShardProcess::start(small_retention()).await.unwrap();
    let http = shard.http();
    for i in 0..6 {
        http.post_json(CMS, &configmap(&format!("a{i}"))).await.unwrap();
    }
    let page = http.get(&format!("{CMS}?limit=2")).await.unwrap().json().unwrap();
    // The rest: a2..a5 and the namespace's kube-root-ca.crt.
    assert_eq!(page["metadata"]["remainingItemCount"], 5, "unfiltered pages count the rest: {page}");
    let filtered = http.get(&format!("{CMS}?limit=2&labelSelector=x!=y")).await.unwrap().json().unwrap();
    assert!(filtered["metadata"].get("remainingItemCount").is_none(), "filtered pages do not: {filtered}");
    let token = page["metadata"]["continue"].as_str().unwrap().to_string();
    // Move the change log past the page's revision, then continue.
    for i in 0..20 {
        http.post_json(CMS, &configmap(&format!("b{i:02}"))).await.unwrap();
    }
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let expired = http.get(&format!("{CMS}?limit=3&continue={token}")).await.unwrap();
    assert_eq!(expired.status, 410, "{}", expired.text());
    let status = expired.json().unwrap();
    assert_eq!(status["reason"], "Expired");
    assert!(status["message"].as_str().unwrap().contains("use the continue token in this response"), "{status}");
    let fresh = status["metadata"]["continue"].as_str().expect("a fresh continue token in the Status").to_string();
    let rest = http.get(&format!("{CMS}?limit=100&continue={fresh}")).await.unwrap().json().unwrap();
    let names: Vec<&str> =
        rest["items"].as_array().unwrap().iter().map(|i| i["metadata"]["name"].as_str().unwrap()).collect();
    assert_eq!(names[..4], ["a2", "a3", "a4", "a5"], "the rest from where the client was, at the newest state");
    assert_eq!(names.len(), 25, "objects created since show up, as kube warns: {names:?}");
    assert_eq!(names[24], "kube-root-ca.crt");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streaming_list_ends_with_an_initial_events_end_bookmark() {
    let shard = ShardProcess::start(ShardOptions::default()).await.unwrap();
    let http = shard.http();
    for name in ["a", "b", "c"] {
        http.post_json(CMS, &configmap(name)).await.unwrap();
    }
    let path =
        format!("{CMS}?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true");
    let response = http.send_streaming(Method::GET, &path, &[], vec![]).await.unwrap();
    let writer = http.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        writer.post_json(CMS, &configmap("d")).await.unwrap();
    });
    let events = tests::tls_http::watch_events(response, 6).await;
    let kinds: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    // a, b, c and the namespace's kube-root-ca.crt, then the bookmark, then d.
    assert_eq!(kinds, ["ADDED", "ADDED", "ADDED", "ADDED", "BOOKMARK", "ADDED"], "{events:?}");
    assert_eq!(events[3]["object"]["metadata"]["name"], "kube-root-ca.crt");
    assert_eq!(events[4]["object"]["metadata"]["annotations"]["k8s.io/initial-events-end"], "true");
    assert_eq!(events[5]["object"]["metadata"]["name"], "d");

    // Paged lists are consistent snapshots: writes between pages that sort after the
    // continue key (a new object, a changed one) would show up in the rest if the
    // continue ignored the first page's revision.
    let page = http.get(&format!("{CMS}?limit=2")).await.unwrap().json().unwrap();
    assert_eq!(page["items"].as_array().unwrap().len(), 2);
    let token = page["metadata"]["continue"].as_str().unwrap();
    http.post_json(CMS, &configmap("e-between-pages")).await.unwrap();
    http.merge_patch(&format!("{CMS}/c"), &json!({"data": {"v": "changed"}})).await.unwrap();
    let rest = http.get(&format!("{CMS}?limit=10&continue={token}")).await.unwrap().json().unwrap();
    let names: Vec<&str> =
        rest["items"].as_array().unwrap().iter().map(|i| i["metadata"]["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["c", "d", "kube-root-ca.crt"], "the rest at the first page's revision: {rest}");
    assert_eq!(rest["items"][0]["data"]["v"], "c", "c as it was at the first page: {rest}");
    assert_eq!(rest["metadata"]["resourceVersion"], page["metadata"]["resourceVersion"]);
    let now = http.get(CMS).await.unwrap().json().unwrap();
    assert_eq!(now["items"].as_array().unwrap().len(), 6, "the writes between pages happened: {now}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kube_rs_watcher_relists_after_410() {
    let shard = ShardProcess::start(small_retention()).await.unwrap();
    let client = shard.kube_client("root").await;
    let api: Api<ConfigMap> = Api::namespaced(client, "default");
    // A one-second watch timeout makes the watcher re-watch from its last RV constantly,
    // so once compaction passes that RV the server answers 410 and the watcher re-lists.
    let config = watcher::Config::default().timeout(1);
    let mut events = watcher::watcher(api, config).default_backoff().boxed();
    let http = shard.http();
    http.post_json(CMS, &configmap("before")).await.unwrap();
    let secrets = "/clusters/root/api/v1/namespaces/default/secrets";
    let mut inits = 0;
    let mut seen_after = false;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    let mut churn = 0;
    while tokio::time::Instant::now() < deadline && !(inits >= 2 && seen_after) {
        // Unrelated writes move the compaction floor past the watcher's RV.
        for _ in 0..10 {
            churn += 1;
            let secret = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": format!("s{churn}")}});
            http.post_json(secrets, &secret).await.unwrap();
        }
        if inits >= 2 && !seen_after {
            http.post_json(CMS, &configmap(&format!("after{churn}"))).await.unwrap();
        }
        while let Ok(Some(event)) = tokio::time::timeout(Duration::from_millis(300), events.next()).await {
            match event {
                Ok(Event::Init) => inits += 1,
                Ok(Event::Apply(cm)) | Ok(Event::InitApply(cm))
                    if cm.metadata.name.as_deref().is_some_and(|n| n.starts_with("after")) =>
                {
                    seen_after = true
                }
                _ => {}
            }
        }
    }
    assert!(inits >= 2, "the watcher never re-listed (inits = {inits}): no 410 was served");
    assert!(seen_after, "after re-listing the watcher kept receiving events");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acknowledged_writes_survive_kill_9() {
    let mut shard = ShardProcess::start(ShardOptions::default()).await.unwrap();
    let http = shard.http();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<(String, u64)>();
    let mut writers = Vec::new();
    for worker in 0..8 {
        let (http, tx) = (http.clone(), tx.clone());
        writers.push(tokio::spawn(async move {
            for i in 0.. {
                let name = format!("w{worker}-{i}");
                match http.post_json(CMS, &configmap(&name)).await {
                    Ok(r) if r.status == 201 => {
                        let rv = r.json().unwrap()["metadata"]["resourceVersion"].as_str().unwrap().parse().unwrap();
                        if tx.send((name, rv)).is_err() {
                            return;
                        }
                    }
                    _ => return,
                }
            }
        }));
    }
    drop(tx);
    tokio::time::sleep(Duration::from_secs(3)).await;
    shard.kill9();
    for writer in writers {
        let _ = writer.await;
    }
    let mut acknowledged = BTreeMap::new();
    while let Ok((name, rv)) = rx.try_recv() {
        acknowledged.insert(name, rv);
    }
    assert!(acknowledged.len() > 20, "only {} writes before the kill", acknowledged.len());
    shard.restart().await.unwrap();
    let http = shard.http();
    let list = http.get(CMS).await.unwrap().json().unwrap();
    let stored: BTreeMap<String, u64> = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| {
            (
                o["metadata"]["name"].as_str().unwrap().to_string(),
                o["metadata"]["resourceVersion"].as_str().unwrap().parse().unwrap(),
            )
        })
        .collect();
    for (name, rv) in &acknowledged {
        assert_eq!(stored.get(name), Some(rv), "acknowledged write {name}@{rv} lost");
    }
    let max_acknowledged = acknowledged.values().max().copied().unwrap();
    let next = http.post_json(CMS, &configmap("after-restart")).await.unwrap().json().unwrap();
    let next_rv: u64 = next["metadata"]["resourceVersion"].as_str().unwrap().parse().unwrap();
    assert!(next_rv > max_acknowledged, "resourceVersion went backwards: {next_rv} <= {max_acknowledged}");
}

/// What one watch request delivered: (type, name, rv) per event, and how it ended.
struct Watched {
    events: Vec<(String, String, u64)>,
    /// The server closed the stream (its `timeoutSeconds`), rather than an error, a
    /// broken connection or ten silent seconds ending it.
    ended_cleanly: bool,
}

/// Reads a watch stream until it ends or is silent for ten seconds. A watch that the
/// shard refuses (or cannot be reached for) is an error, not an empty list of events.
async fn collect_events(http: &tests::TlsHttp, path: &str) -> anyhow::Result<Watched> {
    use http_body_util::BodyExt;
    let response = http.send_streaming(Method::GET, path, &[], vec![]).await?;
    anyhow::ensure!(response.status() == 200, "GET {path}: HTTP {}", response.status());
    let mut body = response.into_body();
    let mut buffer = Vec::new();
    let mut events = Vec::new();
    let ended_cleanly = loop {
        let frame = match tokio::time::timeout(Duration::from_secs(10), body.frame()).await {
            Ok(Some(Ok(frame))) => frame,
            Ok(None) => break true,
            Ok(Some(Err(_))) | Err(_) => break false,
        };
        if let Some(data) = frame.data_ref() {
            buffer.extend_from_slice(data);
        }
        while let Some(end) = buffer.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = buffer.drain(..=end).collect();
            let event: Value = serde_json::from_slice(&line).expect("one JSON event per line");
            let object = &event["object"]["metadata"];
            let rv = object["resourceVersion"].as_str().and_then(|rv| rv.parse().ok()).unwrap_or(0);
            events.push((
                event["type"].as_str().unwrap_or_default().to_string(),
                object["name"].as_str().unwrap_or_default().to_string(),
                rv,
            ));
        }
    };
    Ok(Watched { events, ended_cleanly })
}

/// A watcher that resumes from its last resourceVersion after the shard crashed (kill -9)
/// sees every write that was acknowledged, exactly once, in resourceVersion order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watch_resumed_after_kill_9_misses_nothing() {
    let mut shard = ShardProcess::start(ShardOptions::default()).await.unwrap();
    let http = shard.http();
    let start_rv: u64 =
        http.get(CMS).await.unwrap().json().unwrap()["metadata"]["resourceVersion"].as_str().unwrap().parse().unwrap();
    let watch_path = format!("{CMS}?watch=true&resourceVersion={start_rv}&timeoutSeconds=30");
    let before = tokio::spawn({
        let http = http.clone();
        let path = watch_path.clone();
        async move { collect_events(&http, &path).await }
    });
    let (acknowledged_tx, mut acknowledged_rx) = tokio::sync::mpsc::unbounded_channel::<String>();
    let mut writers = Vec::new();
    for worker in 0..4 {
        let (http, acknowledged_tx) = (http.clone(), acknowledged_tx.clone());
        writers.push(tokio::spawn(async move {
            for i in 0.. {
                match http.post_json(CMS, &configmap(&format!("k{worker}-{i}"))).await {
                    Ok(r) if r.status == 201 => {
                        let _ = acknowledged_tx.send(format!("k{worker}-{i}"));
                    }
                    _ => return,
                }
            }
        }));
    }
    drop(acknowledged_tx);
    // Kill only once writes are being acknowledged, so the crash interrupts a stream of them.
    let mut acknowledged = Vec::new();
    while acknowledged.len() < 50 {
        let name = tokio::time::timeout(Duration::from_secs(30), acknowledged_rx.recv())
            .await
            .expect("50 writes acknowledged within 30 s")
            .expect("the writers run until the kill");
        acknowledged.push(name);
    }
    shard.kill9();
    for writer in writers {
        writer.await.unwrap();
    }
    while let Ok(name) = acknowledged_rx.try_recv() {
        acknowledged.push(name);
    }
    let before = before.await.unwrap().expect("the watch before the kill was served");
    assert!(!before.ended_cleanly, "the kill, not the server's timeout, ended the first watch");
    let seen_before = before.events;
    assert!(!seen_before.is_empty(), "the first watch delivered nothing before the kill");
    let last_seen = seen_before.iter().map(|(_, _, rv)| *rv).max().unwrap();

    shard.restart().await.unwrap();
    let http = shard.http();
    // A write after the restart, which the resumed watch must deliver after whatever it
    // missed: so the resumed watch delivers something even if the first saw every write.
    let after_restart = "written-after-restart";
    let created = http.post_json(CMS, &configmap(after_restart)).await.unwrap();
    assert_eq!(created.status, 201, "{}", created.text());
    let resumed_path = format!("{CMS}?watch=true&resourceVersion={last_seen}&timeoutSeconds=3");
    let resumed = collect_events(&http, &resumed_path).await.expect("the resumed watch was served");
    assert!(resumed.ended_cleanly, "the resumed watch ended on an error: {:?}", resumed.events);
    let seen_after = resumed.events;
    assert_eq!(
        seen_after.last().map(|(_, name, _)| name.as_str()),
        Some(after_restart),
        "the resumed watch delivers the write after the restart, last"
    );
    acknowledged.push(after_restart.to_string());
    let missed_by_first: Vec<&String> =
        acknowledged.iter().filter(|name| !seen_before.iter().any(|(_, seen, _)| seen == *name)).collect();
    for name in &missed_by_first {
        assert!(
            seen_after.iter().any(|(_, seen, _)| seen == *name),
            "acknowledged {name}, not seen before the kill, was not delivered by the resumed watch"
        );
    }

    let all: Vec<&(String, String, u64)> = seen_before.iter().chain(seen_after.iter()).collect();
    assert!(all.iter().all(|(kind, _, _)| kind == "ADDED"), "only creates happened: {all:?}");
    assert!(all.windows(2).all(|w| w[0].2 < w[1].2), "events in strictly increasing RV order, no duplicates");
    let watched: std::collections::BTreeSet<&str> = all.iter().map(|(_, name, _)| name.as_str()).collect();
    for name in &acknowledged {
        assert!(watched.contains(name.as_str()), "acknowledged {name} never reached the watcher");
    }
    let stored = http.get(CMS).await.unwrap().json().unwrap();
    // The namespace's kube-root-ca.crt is served but never written, so no watch event.
    let stored: std::collections::BTreeSet<&str> = stored["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| item["metadata"]["name"].as_str().unwrap())
        .filter(|name| *name != "kube-root-ca.crt")
        .collect();
    assert_eq!(stored, watched, "the watch saw exactly what is stored");
}
