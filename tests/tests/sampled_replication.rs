//! Replication under sampling. With `parentbased_traceidratio` at a ratio that samples
//! (nearly) no trace of its own, a write whose caller sampled it is still traced on its
//! way to the caches: the shard's batch, the regional cache's apply, its batch up to the
//! parent cache and that cache's apply. A write whose caller did not sample it is not.
//!
//! A replication batch carries many writes and has no one parent: it is a root linked to
//! each sampled write it carries, and every process's sampler follows such links as it
//! follows a parent. Were the batch a child of its long-lived replication session's span,
//! or a root the ratio decides on its own trace id, it would be dropped here.
//!
//! The processes read the `OTEL_*` variables set once at the start, so this file holds
//! one test.

use serde_json::json;
use tests::cache::CacheTopology;
use tests::installation::{Installation, InstallationOptions};
use tests::otlp::Receiver;
use tests::traces::{replication_hop, wait_for, SERVER};

/// Samples one root trace in a million: almost certainly no replication session's span.
const RATIO: f64 = 0.000_001;
const SAMPLED: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const UNSAMPLED: &str = "0af7651916cd43dd8448eb211c80319c";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sampled_write_is_traced_through_the_cache_hierarchy() {
    let receiver = Receiver::start(true).await.expect("start the OTLP receiver").sampling(RATIO);
    for (name, value) in receiver.env() {
        // One test in this binary: nothing else reads the environment concurrently.
        std::env::set_var(name, value);
    }
    // Root writes to cache-r, which pushes everything up to cache-p.
    let options = InstallationOptions { caches: Some(CacheTopology::chain()), ..InstallationOptions::default() };
    let mut installation = Installation::start_with(options).await.expect("start the installation");
    let shard = installation.root.http();
    let path = "/clusters/root/apis/apis.kcp.io/v1alpha1/apiexports";

    // A write both sessions (root to cache-r, cache-r to cache-p) carry live: a write the
    // first full sync (or its catch-up from the change log) carries names no cause.
    let warm_up =
        json!({"apiVersion": "apis.kcp.io/v1alpha1", "kind": "APIExport", "metadata": {"name": "warm-up"}, "spec": {}});
    shard.create(path, &warm_up).await.expect("create the warm-up export");
    let parent = installation.cache("cache-p").expect("cache-p");
    tests::cache::wait_replicas(
        parent,
        "the warm-up export at cache-p",
        std::time::Duration::from_secs(60),
        |replicas| replicas.iter().filter_map(|r| r.key.as_ref()).any(|key| key.name == "warm-up"),
    )
    .await
    .expect("the warm-up export replicated");

    // The unsampled write first: by the time the sampled one's batch has arrived, so has
    // any span the unsampled one caused.
    for (name, trace, flags) in [("unsampled", UNSAMPLED, "00"), ("sampled", SAMPLED, "01")] {
        let export =
            json!({"apiVersion": "apis.kcp.io/v1alpha1", "kind": "APIExport", "metadata": {"name": name}, "spec": {}});
        let traceparent = format!("00-{trace}-00f067aa0ba902b7-{flags}");
        let headers = [("traceparent", traceparent.as_str()), ("content-type", "application/json")];
        let response = shard
            .send(http::Method::POST, path, &headers, serde_json::to_vec(&export).expect("JSON"))
            .await
            .expect("POST");
        assert_eq!(response.status, http::StatusCode::CREATED, "{name}: {}", response.text());
    }

    let create = wait_for(&receiver, "the sampled create", |spans| {
        spans.iter().find(|s| s.trace_id == SAMPLED && s.kind == SERVER && s.name == "create apiexports").cloned()
    })
    .await;
    let (send, apply) = wait_for(&receiver, "the shard's batch to cache-r and its apply", |spans| {
        replication_hop(spans, "atoll-shard", |(trace, span)| trace == SAMPLED && *span == create.span_id)
    })
    .await;
    assert_eq!(send.parent_span_id, "", "a root, not the unsampled session's child: {send:?}");
    assert_eq!(apply.attribute("atoll.replication.sender"), Some("root"), "{apply:?}");
    let (up, parent_apply) = wait_for(&receiver, "cache-r's batch to cache-p and its apply", |spans| {
        replication_hop(spans, "atoll-cache-server", |(_, span)| *span == apply.span_id)
    })
    .await;
    assert_eq!(up.parent_span_id, "", "{up:?}");
    assert_eq!(up.resource_attribute("atoll.cache"), Some("cache-r"), "{up:?}");
    assert_eq!(parent_apply.resource_attribute("atoll.cache"), Some("cache-p"), "{parent_apply:?}");

    // Nothing of the unsampled write's trace was exported, nor links to it.
    let spans = receiver.spans();
    let leaked: Vec<_> = spans
        .iter()
        .filter(|s| s.trace_id == UNSAMPLED || s.links.iter().any(|(trace, _)| trace == UNSAMPLED))
        .collect();
    assert!(leaked.is_empty(), "the unsampled write was traced: {leaked:?}");

    installation.stop().await.expect("stop the installation");
}
