//! A real OTLP trace receiver on loopback, for the tracing test and the overhead
//! benchmarks: the gRPC `TraceService` of `opentelemetry-proto`, served by hyper, keeping
//! the spans it is sent (or only counting them).

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
                self.0.count.fetch_add(1, Ordering::Relaxed);
                if !self.0.keep {
                    continue;
                }
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

/// The receiver of benchmarks, which only count spans: it walks an export request's
/// protobuf encoding down to the spans and counts them without decoding one. The receiver
/// shares the machine's cores with the processes a benchmark measures; decoding millions
/// of spans (every attribute a `String`) would be charged to them, where a real collector
/// runs on its own host.
mod counting {
    use super::Received;
    use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceResponse;
    use prost::encoding::{decode_key, decode_varint, skip_field, DecodeContext, WireType};
    use prost::Message as _;
    use std::sync::atomic::Ordering;
    use std::sync::Arc;
    use tonic::codec::{DecodeBuf, Decoder, EncodeBuf, Encoder};
    use tonic::Status;

    /// The one method of OTLP's `TraceService`.
    pub const EXPORT_PATH: &str = "/opentelemetry.proto.collector.trace.v1.TraceService/Export";

    /// Decodes an `ExportTraceServiceRequest` into its number of spans; encodes the response.
    #[derive(Clone, Copy)]
    pub struct Codec;

    impl tonic::codec::Codec for Codec {
        type Encode = ExportTraceServiceResponse;
        type Decode = u64;
        type Encoder = Codec;
        type Decoder = Codec;

        fn encoder(&mut self) -> Codec {
            Codec
        }

        fn decoder(&mut self) -> Codec {
            Codec
        }
    }

    impl Encoder for Codec {
        type Item = ExportTraceServiceResponse;
        type Error = Status;

        fn encode(&mut self, item: Self::Item, dst: &mut EncodeBuf<'_>) -> Result<(), Status> {
            item.encode(dst).map_err(|error| Status::internal(error.to_string()))
        }
    }

    impl Decoder for Codec {
        type Item = u64;
        type Error = Status;

        fn decode(&mut self, src: &mut DecodeBuf<'_>) -> Result<Option<u64>, Status> {
            let message = bytes::Buf::copy_to_bytes(src, bytes::Buf::remaining(src));
            spans_in(&message).map(Some).map_err(Status::invalid_argument)
        }
    }

    /// Adds each request's spans to the receiver's count.
    pub struct Count(pub Arc<Received>);

    impl tonic::server::UnaryService<u64> for Count {
        type Response = ExportTraceServiceResponse;
        type Future = std::future::Ready<Result<tonic::Response<ExportTraceServiceResponse>, Status>>;

        fn call(&mut self, request: tonic::Request<u64>) -> Self::Future {
            self.0.count.fetch_add(*request.get_ref(), Ordering::Relaxed);
            std::future::ready(Ok(tonic::Response::new(ExportTraceServiceResponse::default())))
        }
    }

    /// The spans of an encoded `ExportTraceServiceRequest`: field 1 holds ResourceSpans,
    /// whose field 2 holds ScopeSpans, whose field 2 holds each Span.
    pub fn spans_in(request: &[u8]) -> Result<u64, String> {
        each_field(request, 1, &mut |resource_spans| {
            each_field(resource_spans, 2, &mut |scope_spans| each_field(scope_spans, 2, &mut |_span| Ok(1)))
        })
    }

    /// Sums `count` over every length-delimited occurrence of field `tag` in `message`,
    /// skipping the other fields.
    fn each_field(
        mut message: &[u8],
        tag: u32,
        count: &mut dyn FnMut(&[u8]) -> Result<u64, String>,
    ) -> Result<u64, String> {
        let mut total = 0;
        while !message.is_empty() {
            let (field, wire_type) = decode_key(&mut message).map_err(|error| error.to_string())?;
            if field != tag || wire_type != WireType::LengthDelimited {
                skip_field(wire_type, field, &mut message, DecodeContext::default())
                    .map_err(|error| error.to_string())?;
                continue;
            }
            let length = decode_varint(&mut message).map_err(|error| error.to_string())?;
            let length = usize::try_from(length).ok().filter(|length| *length <= message.len());
            let Some(length) = length else { return Err(format!("field {tag} runs past the end of its message")) };
            let (inner, rest) = message.split_at(length);
            total += count(inner)?;
            message = rest;
        }
        Ok(total)
    }

    #[cfg(test)]
    mod tests {
        use super::spans_in;
        use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
        use opentelemetry_proto::tonic::common::v1::{any_value, AnyValue, KeyValue};
        use opentelemetry_proto::tonic::resource::v1::Resource;
        use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans, Span};
        use prost::Message as _;

        fn span(name: &str) -> Span {
            let value = AnyValue { value: Some(any_value::Value::StringValue("GET".into())) };
            Span {
                name: name.into(),
                trace_id: vec![1; 16],
                span_id: vec![2; 8],
                attributes: vec![KeyValue {
                    key: "http.request.method".into(),
                    value: Some(value),
                    ..KeyValue::default()
                }],
                ..Span::default()
            }
        }

        #[test]
        fn counts_every_span_of_every_scope_and_resource_and_nothing_else() {
            let resource = Resource { attributes: vec![], ..Resource::default() };
            let request = ExportTraceServiceRequest {
                resource_spans: vec![
                    ResourceSpans {
                        resource: Some(resource.clone()),
                        scope_spans: vec![
                            ScopeSpans { spans: vec![span("a"), span("b")], ..ScopeSpans::default() },
                            ScopeSpans { spans: vec![span("c")], ..ScopeSpans::default() },
                        ],
                        ..ResourceSpans::default()
                    },
                    ResourceSpans {
                        resource: Some(resource),
                        scope_spans: vec![ScopeSpans {
                            spans: vec![span("d"), span("e"), span("f")],
                            ..ScopeSpans::default()
                        }],
                        ..ResourceSpans::default()
                    },
                ],
            };
            assert_eq!(spans_in(&request.encode_to_vec()), Ok(6));
            assert_eq!(spans_in(&ExportTraceServiceRequest::default().encode_to_vec()), Ok(0));
        }

        #[test]
        fn a_truncated_request_is_refused() {
            let request = ExportTraceServiceRequest {
                resource_spans: vec![ResourceSpans {
                    scope_spans: vec![ScopeSpans { spans: vec![span("a")], ..ScopeSpans::default() }],
                    ..ResourceSpans::default()
                }],
            };
            let bytes = request.encode_to_vec();
            assert!(spans_in(&bytes[..bytes.len() - 3]).is_err());
        }
    }
}

/// A running receiver; stops when dropped.
pub struct Receiver {
    endpoint: String,
    received: Arc<Received>,
    task: tokio::task::JoinHandle<()>,
}

impl Receiver {
    /// Listens on a free loopback port; `keep` false only counts spans, without decoding
    /// them (for benchmarks that export millions).
    pub async fn start(keep: bool) -> anyhow::Result<Receiver> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let endpoint = format!("http://{}", listener.local_addr()?);
        let received = Arc::new(Received { keep, ..Received::default() });
        let service = TraceServiceServer::new(Sink(received.clone())).max_decoding_message_size(64 << 20);
        let shared = received.clone();
        let task = tokio::spawn(async move {
            let received = shared;
            while let Ok((stream, _)) = listener.accept().await {
                let service = service.clone();
                let received = received.clone();
                tokio::spawn(async move {
                    let serve = hyper::service::service_fn(move |request: http::Request<hyper::body::Incoming>| {
                        let mut service = service.clone();
                        let received = received.clone();
                        async move {
                            if received.keep || request.uri().path() != counting::EXPORT_PATH {
                                return service.call(request).await;
                            }
                            let counter = counting::Count(received);
                            let mut grpc =
                                tonic::server::Grpc::new(counting::Codec).max_decoding_message_size(64 << 20);
                            Ok(grpc.unary(counter, request).await)
                        }
                    });
                    let _ = hyper_util::server::conn::auto::Builder::new(hyper_util::rt::TokioExecutor::new())
                        .http2_only()
                        .serve_connection(hyper_util::rt::TokioIo::new(stream), serve)
                        .await;
                });
            }
        });
        Ok(Receiver { endpoint, received, task })
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

impl Drop for Receiver {
    fn drop(&mut self) {
        self.task.abort();
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
