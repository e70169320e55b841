//! A real OTLP trace receiver on loopback, for the tracing test and the overhead
//! benchmarks: OTLP/gRPC's `TraceService/Export`, served by hyper on a thread of its own.
//!
//! It works in one of two depths, chosen at [`Receiver::start`]:
//!
//! - **keeping** (the tracing test): the `TraceService` of `opentelemetry-proto` decodes
//!   every export request in full, and every span is kept as a [`ReceivedSpan`];
//! - **counting** (the benchmarks, which export tens of thousands of spans a second):
//!   the same gRPC method decodes each request only down to where its spans begin
//!   ([`skim`]). A span is then one length-delimited field that is stepped over, not
//!   a message whose names, ids and attributes are parsed into strings and vectors.
//!   Decoded in full, spans cost the receiver ~2.8 µs each, ~5% of the benchmark
//!   machine at 34k spans/s: as much as the export cost the benchmarks measure, and
//!   charged to it, because the receiver shares the machine's cores with the processes
//!   under test. A collector in production runs elsewhere.
use opentelemetry_proto::tonic::collector::trace::v1::trace_service_server::{TraceService, TraceServiceServer};
use opentelemetry_proto::tonic::collector::trace::v1::{ExportTraceServiceRequest, ExportTraceServiceResponse};
use opentelemetry_proto::tonic::common::v1::{any_value, AnyValue, KeyValue};
use parking_lot::Mutex;
use std::collections::BTreeMap;
use std::convert::Infallible;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// One span as a receiver saw it; ids are lowercase hex, empty when absent.
#[derive(Debug, Clone, PartialEq)]
pub struct ReceivedSpan {
    /// `service.name` of the exporting process.
    pub service: String,
    /// The exporting process's Resource attributes (`service.name` among them), each
    /// value rendered as a string.
    pub resource: Arc<BTreeMap<String, String>>,
    /// The span's name (`otel.name` when the process set one).
    pub name: String,
    pub trace_id: String,
    pub span_id: String,
    pub parent_span_id: String,
    /// OTLP's SpanKind: 1 internal, 2 server, 3 client, 4 producer, 5 consumer.
    pub kind: i32,
    /// Attributes, each value rendered as a string.
    pub attributes: BTreeMap<String, String>,
    /// Linked spans as (trace id, span id).
    pub links: Vec<(String, String)>,
    /// OTLP's status code: 0 unset, 1 ok, 2 error.
    pub status_code: i32,
}

impl ReceivedSpan {
    /// An attribute's value, if set.
    pub fn attribute(&self, key: &str) -> Option<&str> {
        self.attributes.get(key).map(String::as_str)
    }

    /// An attribute of the exporting process's Resource, if set.
    pub fn resource_attribute(&self, key: &str) -> Option<&str> {
        self.resource.get(key).map(String::as_str)
    }
}

#[derive(Debug, Default)]
struct Received {
    spans: Mutex<Vec<ReceivedSpan>>,
    count: AtomicU64,
}

/// The largest export request either depth accepts: a batch of thousands of spans
/// exceeds gRPC's default of 4 MiB.
const MAX_REQUEST_BYTES: usize = 64 << 20;

/// The keeping service, sharing what it receives with the [`Receiver`].
struct Sink(Arc<Received>);

#[tonic::async_trait]
impl TraceService for Sink {
    async fn export(
        &self,
        request: tonic::Request<ExportTraceServiceRequest>,
    ) -> Result<tonic::Response<ExportTraceServiceResponse>, tonic::Status> {
        let mut kept = Vec::new();
        for resource_spans in request.into_inner().resource_spans {
            let resource: Arc<BTreeMap<String, String>> = Arc::new(
                resource_spans
                    .resource
                    .iter()
                    .flat_map(|resource| resource.attributes.iter())
                    .map(|kv| (kv.key.clone(), value_of(kv)))
                    .collect(),
            );
            let service = resource.get("service.name").cloned().unwrap_or_default();
            for span in resource_spans.scope_spans.into_iter().flat_map(|scope| scope.spans) {
                kept.push(ReceivedSpan {
                    service: service.clone(),
                    resource: resource.clone(),
                    name: span.name,
                    trace_id: hex(&span.trace_id),
                    span_id: hex(&span.span_id),
                    parent_span_id: hex(&span.parent_span_id),
                    kind: span.kind,
                    attributes: span.attributes.iter().map(|kv| (kv.key.clone(), value_of(kv))).collect(),
                    links: span.links.iter().map(|link| (hex(&link.trace_id), hex(&link.span_id))).collect(),
                    status_code: span.status.map(|status| status.code).unwrap_or_default(),
                });
            }
        }
        self.0.count.fetch_add(kept.len() as u64, Ordering::Relaxed);
        self.0.spans.lock().extend(kept);
        Ok(tonic::Response::new(ExportTraceServiceResponse::default()))
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn value_of(kv: &KeyValue) -> String {
    match kv.value.as_ref().and_then(|AnyValue { value }| value.as_ref()) {
        Some(any_value::Value::StringValue(s)) => s.clone(),
        Some(any_value::Value::BoolValue(b)) => b.to_string(),
        Some(any_value::Value::IntValue(i)) => i.to_string(),
        Some(any_value::Value::DoubleValue(d)) => d.to_string(),
        Some(other) => format!("{other:?}"),
        None => String::new(),
    }
}

/// OTLP's trace export request decoded only down to its spans' boundaries.
///
/// Each message has the field numbers of its namesake in `opentelemetry.proto`, and only
/// the fields on the way to the spans: prost steps over the others (a Resource, a scope,
/// schema URLs) as unknown fields. `ScopeSpans.spans` is read as `repeated bytes`, which is
/// wire-compatible with a repeated message: both are length-delimited fields, and a span
/// becomes a slice of the request's buffer (`Bytes`, no copy) that nothing parses.
pub mod skim {
    /// `ExportTraceServiceRequest`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct ExportRequest {
        /// `resource_spans = 1`.
        #[prost(message, repeated, tag = "1")]
        pub resource_spans: Vec<ResourceSpans>,
    }

    /// `ResourceSpans`, without its `resource = 1` and `schema_url = 3`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct ResourceSpans {
        /// `scope_spans = 2`.
        #[prost(message, repeated, tag = "2")]
        pub scope_spans: Vec<ScopeSpans>,
    }

    /// `ScopeSpans`, without its `scope = 1` and `schema_url = 3`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct ScopeSpans {
        /// `spans = 2`, each an encoded `Span`, left undecoded.
        #[prost(bytes = "bytes", repeated, tag = "2")]
        pub spans: Vec<bytes::Bytes>,
    }

    impl ExportRequest {
        /// The spans of the request, over all its resources and scopes.
        pub fn span_count(&self) -> usize {
            self.resource_spans.iter().flat_map(|resource| &resource.scope_spans).map(|scope| scope.spans.len()).sum()
        }
    }
}

/// The gRPC path of OTLP's trace export, as `opentelemetry-proto`'s server routes it.
const EXPORT_PATH: &str = "/opentelemetry.proto.collector.trace.v1.TraceService/Export";

/// The counting service: `TraceService/Export` through tonic's own unary server and
/// prost codec, decoding requests as [`skim::ExportRequest`]; any other method is
/// `Unimplemented`, as the generated server answers.
#[derive(Clone)]
struct Counter(Arc<Received>);

impl<B> tonic::codegen::Service<http::Request<B>> for Counter
where
    B: tonic::codegen::Body + Send + 'static,
    B::Error: Into<tonic::codegen::StdError> + Send + 'static,
{
    type Response = http::Response<tonic::body::Body>;
    type Error = Infallible;
    type Future = tonic::codegen::BoxFuture<Self::Response, Infallible>;

    fn poll_ready(&mut self, _: &mut std::task::Context<'_>) -> std::task::Poll<Result<(), Infallible>> {
        std::task::Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<B>) -> Self::Future {
        let received = self.0.clone();
        Box::pin(async move {
            if request.uri().path() != EXPORT_PATH {
                return Ok(tonic::Status::unimplemented("only TraceService/Export is served").into_http());
            }
            let codec = tonic_prost::ProstCodec::<ExportTraceServiceResponse, skim::ExportRequest>::default();
            let mut grpc = tonic::server::Grpc::new(codec).apply_max_message_size_config(Some(MAX_REQUEST_BYTES), None);
            Ok(grpc.unary(CountSpans(received), request).await)
        })
    }
}

/// One skimmed export request: its spans counted, an empty (complete) success returned.
struct CountSpans(Arc<Received>);

impl tonic::server::UnaryService<skim::ExportRequest> for CountSpans {
    type Response = ExportTraceServiceResponse;
    type Future = std::future::Ready<Result<tonic::Response<ExportTraceServiceResponse>, tonic::Status>>;

    fn call(&mut self, request: tonic::Request<skim::ExportRequest>) -> Self::Future {
        self.0.count.fetch_add(request.get_ref().span_count() as u64, Ordering::Relaxed);
        std::future::ready(Ok(tonic::Response::new(ExportTraceServiceResponse::default())))
    }
}

/// A running receiver; stops when dropped.
pub struct Receiver {
    endpoint: String,
    received: Arc<Received>,
    /// The share of traces the processes sample (1: `always_on`).
    ratio: f64,
    /// Dropped with the receiver, which ends its thread.
    _stop: tokio::sync::oneshot::Sender<()>,
}

impl Receiver {
    /// Listens on a free loopback port; `keep` true decodes and keeps every span, false
    /// only counts them, decoding no span (for benchmarks that export millions).
    ///
    /// It serves from a thread and a runtime of its own, as a collector would from its
    /// own process. On the caller's runtime, decoding a batch of thousands of spans would
    /// hold one of the load generator's few workers for milliseconds, and a benchmark
    /// would charge that stall to the process it measures.
    pub async fn start(keep: bool) -> anyhow::Result<Receiver> {
        let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
        listener.set_nonblocking(true)?;
        let endpoint = format!("http://{}", listener.local_addr()?);
        let received = Arc::new(Received::default());
        let stop = if keep {
            let service = TraceServiceServer::new(Sink(received.clone())).max_decoding_message_size(MAX_REQUEST_BYTES);
            serve_on_thread(listener, service)?
        } else {
            serve_on_thread(listener, Counter(received.clone()))?
        };
        Ok(Receiver { endpoint, received, ratio: 1.0, _stop: stop })
    }

    /// Makes the processes sample `ratio` of the traces they start (OTel's
    /// `parentbased_traceidratio`); 1 (the default) samples every one (`always_on`).
    pub fn sampling(self, ratio: f64) -> Receiver {
        Receiver { ratio: ratio.clamp(0.0, 1.0), ..self }
    }

    /// The sampler, as a heading says it.
    pub fn sampler(&self) -> String {
        match self.sampler_vars() {
            (name, Some(ratio)) => format!("{name} {ratio}"),
            (name, None) => name.to_string(),
        }
    }

    /// `OTEL_TRACES_SAMPLER` and, for a ratio, `OTEL_TRACES_SAMPLER_ARG`.
    fn sampler_vars(&self) -> (&'static str, Option<String>) {
        if self.ratio >= 1.0 {
            ("always_on", None)
        } else {
            ("parentbased_traceidratio", Some(self.ratio.to_string()))
        }
    }

    /// The `OTEL_EXPORTER_OTLP_ENDPOINT` that reaches it.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// The variables that make an Atoll process export its sampled spans here promptly.
    pub fn env(&self) -> Vec<(&'static str, String)> {
        let mut vars = vec![
            ("OTEL_EXPORTER_OTLP_ENDPOINT", self.endpoint.clone()),
            // Export every 100 ms rather than every 5 s, so a test waits less.
            ("OTEL_BSP_SCHEDULE_DELAY", "100".into()),
        ];
        let (sampler, ratio) = self.sampler_vars();
        vars.push(("OTEL_TRACES_SAMPLER", sampler.into()));
        vars.extend(ratio.map(|ratio| ("OTEL_TRACES_SAMPLER_ARG", ratio)));
        vars
    }

    /// Every span kept so far (none when only counting).
    pub fn spans(&self) -> Vec<ReceivedSpan> {
        self.received.spans.lock().clone()
    }

    /// How many spans arrived (kept or not).
    pub fn count(&self) -> u64 {
        self.received.count.load(Ordering::Relaxed)
    }
}

/// Serves `service` on `listener` from a new thread with a current-thread runtime; the
/// returned sender, dropped, stops it.
fn serve_on_thread<S>(listener: std::net::TcpListener, service: S) -> anyhow::Result<tokio::sync::oneshot::Sender<()>>
where
    S: tonic::codegen::Service<
            http::Request<hyper::body::Incoming>,
            Response = http::Response<tonic::body::Body>,
            Error = Infallible,
        > + Clone
        + Send
        + 'static,
    S::Future: Send + 'static,
{
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    std::thread::Builder::new().name("otlp-receiver".into()).spawn(move || {
        runtime.block_on(async move {
            let listener = match tokio::net::TcpListener::from_std(listener) {
                Ok(listener) => listener,
                Err(error) => return eprintln!("OTLP receiver: cannot listen: {error}"),
            };
            // Accept until the listener fails or the sender is dropped; each connection
            // is served as HTTP/2 by `service`.
            let accept = async move {
                while let Ok((stream, _)) = listener.accept().await {
                    let service = service.clone();
                    tokio::spawn(async move {
                        let serve = hyper::service::service_fn(move |request: http::Request<hyper::body::Incoming>| {
                            let mut service = service.clone();
                            async move { service.call(request).await }
                        });
                        let _ = hyper_util::server::conn::auto::Builder::new(hyper_util::rt::TokioExecutor::new())
                            .http2_only()
                            .serve_connection(hyper_util::rt::TokioIo::new(stream), serve)
                            .await;
                    });
                }
            };
            tokio::select! {
                () = accept => {}
                _ = stopped => {}
            }
        });
        // Dropping the runtime here ends the connections' tasks.
    })?;
    Ok(stop)
}

/// Which runs a benchmark makes: with span export off, on (to a [`Receiver`], `always_on`
/// sampling unless [`Receiver::sampling`] says otherwise), or both, off first, in the same
/// session.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum TracingRuns {
    Off,
    On,
    Both,
}

impl TracingRuns {
    /// Whether each run of round `round` (from 0) exports, in order: with both, every
    /// second round exports first, so that over an even number of rounds a machine that
    /// drifts within a round (or a run that leaves work behind for the next) favours
    /// neither.
    pub fn runs_in_round(self, round: u64) -> Vec<bool> {
        match self {
            TracingRuns::Off => vec![false],
            TracingRuns::On => vec![true],
            TracingRuns::Both if round % 2 == 1 => vec![true, false],
            TracingRuns::Both => vec![false, true],
        }
    }
}

/// The receiver's `OTEL_*` variables in this process's environment, so that the
/// processes it starts meanwhile export there; removed again on drop. For benchmark
/// programs, which start their processes from one task.
pub struct ExportEnv(Vec<&'static str>);

impl Receiver {
    /// Sets [`Receiver::env`] until the guard drops.
    pub fn export_env(&self) -> ExportEnv {
        let vars = self.env();
        for (name, value) in &vars {
            std::env::set_var(name, value);
        }
        ExportEnv(vars.into_iter().map(|(name, _)| name).collect())
    }
}

impl Drop for ExportEnv {
    fn drop(&mut self) {
        for name in &self.0 {
            std::env::remove_var(name);
        }
    }
}

/// A benchmark's `--sample-ratio`: a share of traces above 0 and at most 1.
pub fn parse_ratio(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(ratio) if ratio > 0.0 && ratio <= 1.0 => Ok(ratio),
        _ => Err(format!("{text:?} is not a share of traces: give a number above 0 and at most 1, e.g. 0.1")),
    }
}

/// What exporting costs in throughput, in percent of the untraced rate; `None` when the
/// untraced run did nothing to compare with.
pub fn overhead_percent(untraced: f64, traced: f64) -> Option<f64> {
    (untraced > 0.0).then(|| (1.0 - traced / untraced) * 100.0)
}

/// Prints the throughput cost of span export: each traced run (`…+otel`) against the
/// untraced run of the same name, whichever ran first, with the goal (which is stated for
/// `always_on`).
pub fn print_overhead<'a>(runs: impl IntoIterator<Item = (&'a str, f64)>) {
    let runs: Vec<(&str, f64)> = runs.into_iter().collect();
    for &(name, rate) in &runs {
        let Some(plain) = name.strip_suffix("+otel") else { continue };
        let Some(&(_, plain_rate)) = runs.iter().find(|(other, _)| *other == plain) else { continue };
        if let Some(cost) = overhead_percent(plain_rate, rate) {
            println!("tracing overhead ({name} vs {plain}): {cost:.1}% of throughput (goal ≤ 5%)");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Receiver;
    use opentelemetry_proto::tonic::collector::trace::v1::trace_service_client::TraceServiceClient;
    use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
    use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans, Span};

    fn resource_spans(scopes: &[usize]) -> ResourceSpans {
        let span = |n: usize| Span {
            name: format!("span {n}"),
            trace_id: vec![1; 16],
            span_id: vec![2; 8],
            ..Span::default()
        };
        let scope_spans = scopes
            .iter()
            .map(|&spans| ScopeSpans { spans: (0..spans).map(span).collect(), ..ScopeSpans::default() })
            .collect();
        ResourceSpans { scope_spans, ..ResourceSpans::default() }
    }

    /// Exports over real OTLP/gRPC to a receiver that keeps nothing: every span of every
    /// scope and resource is counted, none kept.
    #[tokio::test]
    async fn a_counting_receiver_counts_every_span_it_is_sent() {
        let receiver = Receiver::start(false).await.expect("start the receiver");
        let http = hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
            .http2_only(true)
            .build_http::<tonic::body::Body>();
        let origin: http::Uri = receiver.endpoint().parse().expect("an endpoint is a URI");
        let mut client = TraceServiceClient::with_origin(http, origin);
        let request = ExportTraceServiceRequest { resource_spans: vec![resource_spans(&[2, 1]), resource_spans(&[3])] };
        client.export(request).await.expect("export");
        client.export(ExportTraceServiceRequest::default()).await.expect("export nothing");
        assert_eq!(receiver.count(), 6);
        assert!(receiver.spans().is_empty());
    }

    /// Spans as Atoll's processes export them (OpenTelemetry's SDK, its batch processor
    /// and its OTLP/gRPC exporter), with attributes, events, links and parents, in
    /// several batches: a counting receiver counts every one of them, and so does a
    /// keeping one, which also keeps every one.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn both_depths_count_every_span_an_sdk_exports() {
        const SPANS: usize = 3_000;
        for keep in [false, true] {
            let receiver = Receiver::start(keep).await.expect("start the receiver");
            let provider = sdk_exporting_to(receiver.endpoint(), SPANS);
            let tracer = opentelemetry::trace::TracerProvider::tracer(&provider, "receiver-test");
            export_spans(&tracer, SPANS);
            tokio::task::spawn_blocking(move || {
                provider.force_flush().expect("flush");
                provider.shutdown().expect("shut down");
            })
            .await
            .expect("the exporting thread");
            assert_eq!(receiver.count(), SPANS as u64, "keep: {keep}");
            assert_eq!(receiver.spans().len(), if keep { SPANS } else { 0 }, "keep: {keep}");
        }
    }

    /// A provider whose batch processor exports to `endpoint` in batches of 512 from a
    /// queue that holds all `spans` (a full queue would drop spans).
    fn sdk_exporting_to(endpoint: &str, spans: usize) -> opentelemetry_sdk::trace::SdkTracerProvider {
        use opentelemetry_otlp::WithExportConfig as _;
        use opentelemetry_sdk::trace::{BatchConfigBuilder, BatchSpanProcessor, SdkTracerProvider};
        let exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_tonic()
            .with_endpoint(endpoint)
            .build()
            .expect("an OTLP exporter");
        let batches = BatchConfigBuilder::default().with_max_queue_size(spans).with_max_export_batch_size(512).build();
        let processor = BatchSpanProcessor::builder(exporter).with_batch_config(batches).build();
        let resource = opentelemetry_sdk::Resource::builder_empty().with_service_name("receiver-test").build();
        SdkTracerProvider::builder().with_resource(resource).with_span_processor(processor).build()
    }

    /// `spans` spans in pairs: a server span, and a client span under it that has an event
    /// and a link.
    fn export_spans(tracer: &opentelemetry_sdk::trace::SdkTracer, spans: usize) {
        use opentelemetry::trace::{Span as _, SpanKind, TraceContextExt as _, Tracer as _};
        use opentelemetry::{Context, KeyValue};
        for n in 0..spans / 2 {
            let server = tracer
                .span_builder(format!("get configmaps {n}"))
                .with_kind(SpanKind::Server)
                .with_attributes([KeyValue::new("http.request.method", "GET"), KeyValue::new("n", n as i64)])
                .start(tracer);
            let linked = server.span_context().clone();
            let parent = Context::current_with_span(server);
            let mut client = tracer
                .span_builder("forward")
                .with_kind(SpanKind::Client)
                .with_links(vec![opentelemetry::trace::Link::with_context(linked)])
                .start_with_context(tracer, &parent);
            client.add_event("sent", vec![KeyValue::new("bytes", 512_i64)]);
            client.end();
            parent.span().end();
        }
    }
}
