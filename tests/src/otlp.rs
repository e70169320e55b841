//! A real OTLP trace receiver on loopback, for the tracing test and the overhead
//! benchmarks: the gRPC `TraceService` of `opentelemetry-proto`, served by hyper on a
//! thread of its own, decoding every export request in full and keeping the spans it is
//! sent (or only counting them).
use opentelemetry_proto::tonic::collector::trace::v1::trace_service_server::{TraceService, TraceServiceServer};
use opentelemetry_proto::tonic::collector::trace::v1::{ExportTraceServiceRequest, ExportTraceServiceResponse};
use opentelemetry_proto::tonic::common::v1::{any_value, AnyValue, KeyValue};
use parking_lot::Mutex;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use tonic::codegen::Service as _;

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
    keep: bool,
    spans: Mutex<Vec<ReceivedSpan>>,
    count: AtomicU64,
}

/// The service half, sharing what it receives with the [`Receiver`].
struct Sink(Arc<Received>);

#[tonic::async_trait]
impl TraceService for Sink {
    async fn export(
        &self,
        request: tonic::Request<ExportTraceServiceRequest>,
    ) -> Result<tonic::Response<ExportTraceServiceResponse>, tonic::Status> {
        let request = request.into_inner();
        self.0.count.fetch_add(span_count(&request), Ordering::Relaxed);
        if !self.0.keep {
            return Ok(tonic::Response::new(ExportTraceServiceResponse::default()));
        }
        let mut kept = Vec::new();
        for resource_spans in request.resource_spans {
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
        self.0.spans.lock().extend(kept);
        Ok(tonic::Response::new(ExportTraceServiceResponse::default()))
    }
}

/// The spans of a decoded export request, over all its resources and scopes.
fn span_count(request: &ExportTraceServiceRequest) -> u64 {
    let spans = request.resource_spans.iter().flat_map(|resource| &resource.scope_spans).map(|scope| scope.spans.len());
    spans.sum::<usize>() as u64
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

/// A running receiver; stops when dropped.
pub struct Receiver {
    endpoint: String,
    received: Arc<Received>,
    /// Dropped with the receiver, which ends its thread.
    _stop: tokio::sync::oneshot::Sender<()>,
}

impl Receiver {
    /// Listens on a free loopback port; `keep` false only counts the spans it decodes
    /// (for benchmarks that export millions).
    ///
    /// It serves from a thread and a runtime of its own, as a collector would from its
    /// own process. On the caller's runtime, decoding a batch of thousands of spans would
    /// hold one of the load generator's few workers for milliseconds, and a benchmark
    /// would charge that stall to the process it measures.
    pub async fn start(keep: bool) -> anyhow::Result<Receiver> {
        let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
        listener.set_nonblocking(true)?;
        let endpoint = format!("http://{}", listener.local_addr()?);
        let received = Arc::new(Received { keep, ..Received::default() });
        let service = TraceServiceServer::new(Sink(received.clone())).max_decoding_message_size(64 << 20);
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
        std::thread::Builder::new().name("otlp-receiver".into()).spawn(move || {
            runtime.block_on(async move {
                let listener = match tokio::net::TcpListener::from_std(listener) {
                    Ok(listener) => listener,
                    Err(error) => return eprintln!("OTLP receiver: cannot listen: {error}"),
                };
                tokio::select! {
                    () = serve(listener, service) => {}
                    _ = stopped => {}
                }
            });
            // Dropping the runtime here ends the connections' tasks.
        })?;
        Ok(Receiver { endpoint, received, _stop: stop })
    }

    /// The `OTEL_EXPORTER_OTLP_ENDPOINT` that reaches it.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// The variables that make an Atoll process export every span here promptly.
    pub fn env(&self) -> Vec<(&'static str, String)> {
        vec![
            ("OTEL_EXPORTER_OTLP_ENDPOINT", self.endpoint.clone()),
            ("OTEL_TRACES_SAMPLER", "always_on".into()),
            // Export every 100 ms rather than every 5 s, so a test waits less.
            ("OTEL_BSP_SCHEDULE_DELAY", "100".into()),
        ]
    }

    /// Every span kept so far.
    pub fn spans(&self) -> Vec<ReceivedSpan> {
        self.received.spans.lock().clone()
    }

    /// How many spans arrived (kept or not).
    pub fn count(&self) -> u64 {
        self.received.count.load(Ordering::Relaxed)
    }
}

/// Accepts connections until the listener fails, each served as HTTP/2 by `service`.
async fn serve(listener: tokio::net::TcpListener, service: TraceServiceServer<Sink>) {
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
}

/// Which runs a benchmark makes: with span export off, on (every span to a [`Receiver`]
/// with `always_on` sampling), or both, off first, in the same session.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum TracingRuns {
    Off,
    On,
    Both,
}

impl TracingRuns {
    /// Whether each run exports, in order.
    pub fn runs(self) -> Vec<bool> {
        match self {
            TracingRuns::Off => vec![false],
            TracingRuns::On => vec![true],
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

/// Prints the throughput cost of span export: each traced run (`…+otel`) against the
/// untraced run before it, with the goal.
pub fn print_overhead<'a>(runs: impl IntoIterator<Item = (&'a str, f64)>) {
    let mut untraced: Option<(&str, f64)> = None;
    for (name, rate) in runs {
        match (name.strip_suffix("+otel"), untraced) {
            (Some(base), Some((plain, plain_rate))) if base == plain && plain_rate > 0.0 => {
                let cost = (1.0 - rate / plain_rate) * 100.0;
                println!("tracing overhead ({name} vs {plain}): {cost:.1}% of throughput (goal ≤ 5%)");
            }
            (Some(_), _) => {}
            (None, _) => untraced = Some((name, rate)),
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
}
