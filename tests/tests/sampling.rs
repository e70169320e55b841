//! Sampled tracing: with `parentbased_traceidratio` 0.5, the front-proxy and the shard
//! decide before they build a request's span ([`telemetry::Decision`]), and the decision
//! holds for the whole request, across processes and into the work it queues:
//!
//! - a request is recorded by both the proxy and the shard, or by neither: an unsampled
//!   request's call to the shard carries a `traceparent` with flags `00`;
//! - a recorded root's trace id is one the ratio samples, and, in this test's own process,
//!   the one its decision was made on (a trace-id ratio sampler downstream agrees);
//! - a caller's sampled flag is followed;
//! - in a process, the work of an unsampled request carries its context: what it writes
//!   names it as the cause (flags `00`), and what it calls out to is told not to sample.
//!
//! The processes, and this test's own process, read the `OTEL_*` variables set once at
//! the start, so this file holds one test.

use std::collections::HashMap;

use tests::installation::{Installation, InstallationOptions};
use tests::otlp::{ReceivedSpan, Receiver};
use tests::traces::{wait_for, SERVER};
use tracing::Instrument as _;

/// The sampling ratio under test.
const RATIO: f64 = 0.5;
/// Root requests of each kind: both outcomes occur unless a coin comes up the same
/// way this many times running (odds 2 in 2^40).
const PROBES: usize = 40;

/// Whether OTel's trace-id ratio sampler samples `trace_id` (hex) at [`RATIO`]: its lower
/// 64 bits, shifted right once, under the ratio's share of 2^63.
fn ratio_samples(trace_id: &str) -> bool {
    let low = u64::from_str_radix(&trace_id[16..], 16).expect("a hex trace id");
    (low >> 1) < (RATIO * (1u64 << 63) as f64) as u64
}

fn probe_path(kind: &str, index: usize) -> String {
    format!("/clusters/root/api/v1/namespaces/default/configmaps/{kind}-{index}")
}

/// The server span of `service` for the request to `path`, if it was exported (matched
/// on the path's end: a process may see it under a prefix).
fn server_span<'a>(spans: &'a [ReceivedSpan], service: &str, path: &str) -> Option<&'a ReceivedSpan> {
    let probe = &path[path.rfind("/configmaps/").expect("a probe path")..];
    spans.iter().find(|s| {
        s.service == service && s.kind == SERVER && s.attribute("url.path").is_some_and(|p| p.ends_with(probe))
    })
}

/// Sends a GET with `traceparent` (if any) for one last path through `http`, and waits
/// until the proxy's and the shard's spans of it arrive: each process exports its spans
/// in the order they ended, so everything before it has arrived too.
async fn fence(receiver: &Receiver, http: &tests::tls_http::TlsHttp, via_proxy: bool) {
    let path = probe_path("fence", if via_proxy { 0 } else { 1 });
    let traceparent = "00-5b8efff798038103d269b633813fc60c-eee19b7ec3c1b174-01";
    http.send(http::Method::GET, &path, &[("traceparent", traceparent)], Vec::new()).await.expect("GET");
    wait_for(receiver, "the fence's spans", |spans| {
        let proxied = !via_proxy || server_span(spans, "atoll-front-proxy", &path).is_some();
        (proxied && server_span(spans, "atoll-shard", &path).is_some()).then_some(())
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sampling_decision_holds_for_the_whole_request() {
    let receiver = Receiver::start(true).await.expect("start the OTLP receiver").sampling(RATIO);
    for (name, value) in receiver.env() {
        // One test in this binary: nothing else reads the environment concurrently.
        std::env::set_var(name, value);
    }
    let telemetry = telemetry::init("atoll-sampling-test", "info", None);
    assert!(telemetry.exporting(), "this process exports to the receiver too");
    in_process_work_carries_the_decision().await;

    let options = InstallationOptions { front_proxy: true, ..InstallationOptions::default() };
    let mut installation = Installation::start_with(options).await.expect("start the installation");
    let proxy = installation.proxy().http();
    let shard = installation.root.http();

    // Roots through the proxy: recorded by both processes or by neither.
    for index in 0..PROBES {
        proxy.get(&probe_path("proxied", index)).await.expect("GET through the proxy");
    }
    // A caller's flags are followed: sampled ones recorded, unsampled ones not.
    for (index, flags) in ["01", "00", "01", "00"].into_iter().enumerate() {
        let traceparent = format!("00-4bf92f3577b34da6a3ce929d0e0e473{index}-00f067aa0ba902b7-{flags}");
        let path = probe_path("caller", index);
        proxy.send(http::Method::GET, &path, &[("traceparent", traceparent.as_str())], Vec::new()).await.expect("GET");
    }
    // Roots straight to the shard.
    for index in 0..PROBES {
        shard.get(&probe_path("direct", index)).await.expect("GET from the shard");
    }
    fence(&receiver, &proxy, true).await;
    fence(&receiver, &shard, false).await;
    let spans = receiver.spans();

    let mut recorded = 0;
    for index in 0..PROBES {
        let path = probe_path("proxied", index);
        let by_proxy = server_span(&spans, "atoll-front-proxy", &path);
        let by_shard = server_span(&spans, "atoll-shard", &path);
        match (by_proxy, by_shard) {
            (None, None) => {}
            (Some(proxy_span), Some(shard_span)) => {
                recorded += 1;
                assert_eq!(proxy_span.parent_span_id, "", "{proxy_span:?}");
                assert_eq!(shard_span.parent_span_id, proxy_span.span_id, "{shard_span:?}");
                assert!(ratio_samples(&proxy_span.trace_id), "{proxy_span:?}");
            }
            (proxy_span, shard_span) => {
                panic!("{path}: recorded by one process only:\nproxy {proxy_span:?}\nshard {shard_span:?}")
            }
        }
    }
    assert!(0 < recorded && recorded < PROBES, "{recorded} of {PROBES} roots were recorded at ratio {RATIO}");

    for (index, sampled) in [true, false, true, false].into_iter().enumerate() {
        let path = probe_path("caller", index);
        for service in ["atoll-front-proxy", "atoll-shard"] {
            let span = server_span(&spans, service, &path);
            assert_eq!(span.is_some(), sampled, "{service} {path}: {span:?}");
            if let Some(span) = span.filter(|_| service == "atoll-front-proxy") {
                assert_eq!(span.trace_id, format!("4bf92f3577b34da6a3ce929d0e0e473{index}"));
                assert_eq!(span.parent_span_id, "00f067aa0ba902b7");
            }
        }
    }

    let direct: Vec<&ReceivedSpan> =
        (0..PROBES).filter_map(|index| server_span(&spans, "atoll-shard", &probe_path("direct", index))).collect();
    assert!(!direct.is_empty() && direct.len() < PROBES, "{} of {PROBES} roots were recorded", direct.len());
    for span in &direct {
        assert_eq!(span.parent_span_id, "", "{span:?}");
        assert!(ratio_samples(&span.trace_id), "{span:?}");
    }
    // No shard span of a probe is left over, unaccounted for by the checks above.
    let by_trace: HashMap<&str, usize> = spans
        .iter()
        .filter(|s| s.attribute("url.path").is_some_and(|p| p.contains("/configmaps/proxied-")))
        .fold(HashMap::new(), |mut counts, s| {
            *counts.entry(s.trace_id.as_str()).or_default() += 1;
            counts
        });
    assert!(by_trace.values().all(|&n| n == 2), "every recorded proxied probe is one trace of two spans: {by_trace:?}");

    installation.stop().await.expect("stop the installation");
    telemetry.shutdown().await;
}

/// In this process: an unsampled request's work names its context as a write's cause
/// and in what it calls, with flags `00`, and a span made in it is unsampled; outside the
/// request, nothing is carried. And a recorded root's span has the trace id it was
/// decided on: the one check here that the old way (the SDK deciding once, on an id of its
/// own, after the span was built) would fail, at even odds per root.
async fn in_process_work_carries_the_decision() {
    let caller = "0af7651916cd43dd8448eb211c80319c";
    let mut headers = http::HeaderMap::new();
    headers.insert("traceparent", format!("00-{caller}-b7ad6b7169203331-00").parse().expect("a header value"));
    let decision = telemetry::Decision::of_http(&headers);
    assert!(!decision.recorded(), "the caller did not sample");
    let work = async {
        let cause = telemetry::Cause::current().expect("the request's context is the cause of its writes");
        assert_eq!(cause.trace_id(), caller);
        let mut outgoing = http::HeaderMap::new();
        telemetry::propagation::inject_http(&tracing::Span::current(), &mut outgoing);
        let traceparent = outgoing.get("traceparent").and_then(|v| v.to_str().ok()).expect("a traceparent");
        assert!(traceparent.starts_with(&format!("00-{caller}-")), "{traceparent}");
        assert!(traceparent.ends_with("-00"), "not sampled downstream: {traceparent}");
        assert!(!traceparent.contains("b7ad6b7169203331"), "a span id of its own, as the SDK gives: {traceparent}");
        // A span made inside the request belongs to it, unsampled.
        let inner = tracing::info_span!("inner");
        let inner_traceparent = telemetry::propagation::traceparent(&inner).expect("a context");
        assert!(inner_traceparent.starts_with(&format!("00-{caller}-")), "{inner_traceparent}");
        assert!(inner_traceparent.ends_with("-00"), "{inner_traceparent}");
        async {}.instrument(inner).await;
    };
    decision.scope(work).await;
    assert_eq!(telemetry::Cause::current(), None, "nothing is carried outside the request");
    let mut outgoing = http::HeaderMap::new();
    telemetry::propagation::inject_http(&tracing::Span::current(), &mut outgoing);
    assert!(outgoing.is_empty(), "{outgoing:?}");

    // Recorded roots: each span's trace id is the decided one, so the SDK's sampler, asked
    // again when the span starts, records it too, and the ratio samples its id. (Were the
    // id drawn anew, each would be dropped at even odds.)
    let recorded: Vec<telemetry::Decision> = (0..256)
        .map(|_| telemetry::Decision::of_http(&http::HeaderMap::new()))
        .filter(telemetry::Decision::recorded)
        .take(16)
        .collect();
    assert_eq!(recorded.len(), 16, "16 of 256 roots are recorded at ratio {RATIO}");
    for decision in recorded {
        let span = tracing::info_span!("request", otel.kind = "server");
        decision.start(&span);
        let traceparent = telemetry::propagation::traceparent(&span).expect("a recorded span's context");
        let trace_id = traceparent.split('-').nth(1).expect("a trace id");
        assert!(traceparent.ends_with("-01"), "the SDK sampled the span too: {traceparent}");
        assert!(ratio_samples(trace_id), "{traceparent}");
    }
}
