//! Logging and, when asked for, OpenTelemetry export.

use crate::log_format::WithTraceIds;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry::KeyValue;
use opentelemetry_sdk::resource::{EnvResourceDetector, SdkProvidedResourceDetector, TelemetryResourceDetector};
use opentelemetry_sdk::trace::{BatchConfig, BatchConfigBuilder, BatchSpanProcessor, SdkTracerProvider};
use opentelemetry_sdk::Resource;
use std::sync::atomic::{AtomicBool, Ordering};
use tracing_subscriber::filter::{filter_fn, LevelFilter};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::EnvFilter;
use tracing_subscriber::Layer as _;

static ENABLED: AtomicBool = AtomicBool::new(false);

/// Makes this test process count as exporting, as [`init`] does when it installs an
/// exporter, for unit tests that give their own provider to [`subscriber`].
#[cfg(test)]
pub(crate) fn enable_for_tests() {
    ENABLED.store(true, Ordering::Relaxed);
}

/// Whether this process exports spans. Every helper of this crate is a no-op otherwise,
/// so a process without `OTEL_*` settings does no tracing work beyond its logs.
pub fn enabled() -> bool {
    ENABLED.load(Ordering::Relaxed)
}

/// What [`init`] set up; [`Telemetry::shutdown`] exports what is still buffered.
#[must_use = "call shutdown() before the process exits, or the last spans are lost"]
pub struct Telemetry {
    provider: Option<SdkTracerProvider>,
    /// Keeps the exporter's connection thread running; dropped after the last export.
    connection: Option<ExporterThread>,
}

impl Telemetry {
    /// Whether spans are exported.
    pub fn exporting(&self) -> bool {
        self.provider.is_some()
    }

    /// Exports the spans still buffered and stops the exporter, then its connection's
    /// thread. The export blocks, so it runs off the runtime's worker threads.
    pub async fn shutdown(self) {
        let Some(provider) = self.provider else { return };
        let flushed = tokio::task::spawn_blocking(move || provider.shutdown()).await;
        if let Ok(Err(error)) = flushed {
            eprintln!("OpenTelemetry: exporting the last spans failed: {error}");
        }
        // Only now: the last export above needed the connection.
        drop(self.connection);
    }
}

/// Logs to stderr, filtered by `RUST_LOG` (default `default_filter`), coloured on a terminal; and
/// exports spans over OTLP/gRPC when `OTEL_EXPORTER_OTLP_ENDPOINT` (or
/// `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) is set, unless `OTEL_SDK_DISABLED=true` or
/// `OTEL_TRACES_EXPORTER=none`. The service is named `OTEL_SERVICE_NAME`, else
/// `default_service`; `OTEL_RESOURCE_ATTRIBUTES`, `OTEL_TRACES_SAMPLER`(`_ARG`) and
/// `OTEL_BSP_*` are honoured as the SDK reads them.
///
/// `instance` names this process among others of its service (a shard's or a cache's
/// name): it becomes the Resource's `service.instance.id` and `atoll.<kind>`, so every
/// span the process exports names it once per batch instead of once per span.
///
pub fn init(default_service: &str, default_filter: &str, instance: Option<Instance<'_>>) -> Telemetry {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| default_filter.into());
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let (provider, connection) = if export_requested() {
        match provider(default_service, instance) {
            Ok((provider, connection)) => (Some(provider), Some(connection)),
            Err(error) => {
                eprintln!("OpenTelemetry: not exporting spans: {error}");
                (None, None)
            }
        }
    } else {
        (None, None)
    };
    subscriber(filter, ansi, provider.as_ref()).init();
    if provider.is_some() {
        ENABLED.store(true, Ordering::Relaxed);
    }
    Telemetry { provider, connection }
}

/// The level of the spans that become OpenTelemetry spans, whatever `RUST_LOG` lets the
/// log layer see: the request, reconcile and replication spans are INFO, and the DEBUG
/// spans inside them (a store commit batch, one garbage-collection attempt) would multiply
/// the spans exported per request without adding a process hop or a cause.
pub const EXPORTED_SPANS: LevelFilter = LevelFilter::INFO;

/// Logs through `filter` and, given a provider, exports spans to it.
///
/// Every layer under a per-layer filter states the most verbose level it wants, and the
/// filters are plain levels or depend on metadata only. Otherwise `tracing` loses the
/// global maximum level (a layer without one means "anything"), so every DEBUG and TRACE
/// callsite of every dependency (h2 in the exporter, the `log` records of rustls through
/// the log bridge) asks the subscriber on each call whether it is wanted, where without
/// export a disabled callsite costs one comparison.
pub(crate) fn subscriber(
    filter: EnvFilter,
    ansi: bool,
    provider: Option<&SdkTracerProvider>,
) -> impl tracing::Subscriber + Send + Sync + for<'a> LookupSpan<'a> {
    let logged = filter.max_level_hint().unwrap_or(LevelFilter::TRACE);
    let fmt = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(ansi)
        .event_format(WithTraceIds(tracing_subscriber::fmt::format().with_ansi(ansi)));
    // Exporting, a log line names its trace and span instead of quoting the span's
    // fields: the log layer then never formats the fields of every span (most spans log
    // nothing), which is most of what a span costs it.
    let fmt = if provider.is_some() {
        let events = filter_fn(move |metadata| metadata.is_event() && *metadata.level() <= logged);
        fmt.with_filter(events.with_max_level_hint(logged)).boxed()
    } else {
        fmt.boxed()
    };
    let otel = provider.map(|provider| {
        tracing_opentelemetry::layer()
            .with_tracer(provider.tracer("atoll"))
            .with_location(false)
            .with_threads(false)
            .with_tracked_inactivity(false)
            // `level` and `target` are tracing's, not OpenTelemetry's: two attributes on every
            // span that no convention or dashboard reads.
            .with_level(false)
            .with_target(false)
            // Trace context travels through `tracing` spans, so entering a span need not
            // attach an OpenTelemetry context on every poll. The one context attached is an
            // unsampled request's (`Decision::scope`): a span made in its work without a
            // recorded ancestor takes it as parent, as the layer falls back to
            // OpenTelemetry's current context.
            .with_context_activation(false)
            .with_filter(EXPORTED_SPANS)
    });
    tracing_subscriber::registry().with(filter).with(fmt).with(otel)
}

/// Whether the environment variable `name` holds a value (not only blanks).
fn set(name: &str) -> bool {
    std::env::var(name).is_ok_and(|value| !value.trim().is_empty())
}

fn export_requested() -> bool {
    let is = |name: &str, value: &str| std::env::var(name).is_ok_and(|v| v.trim().eq_ignore_ascii_case(value));
    (set("OTEL_EXPORTER_OTLP_ENDPOINT") || set("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"))
        && !is("OTEL_SDK_DISABLED", "true")
        && !is("OTEL_TRACES_EXPORTER", "none")
}

/// What names one process among the others of its service.
#[derive(Debug, Clone, Copy)]
pub struct Instance<'a> {
    /// The Resource attribute that says what the name is, e.g. `atoll.shard`.
    pub attribute: &'static str,
    /// The name, e.g. `root`.
    pub name: &'a str,
}

fn provider(
    default_service: &str,
    instance: Option<Instance<'_>>,
) -> Result<(SdkTracerProvider, ExporterThread), String> {
    provider_to(exporter_endpoint(|name| std::env::var(name).ok())?, default_service, instance)
}

fn provider_to(
    endpoint: tonic::transport::Endpoint,
    default_service: &str,
    instance: Option<Instance<'_>>,
) -> Result<(SdkTracerProvider, ExporterThread), String> {
    use opentelemetry_otlp::{WithExportConfig as _, WithTonicConfig as _};
    let connection = ExporterThread::start().map_err(|error| format!("the exporter's thread: {error}"))?;
    let channel = endpoint.executor(connection.executor()).connect_lazy();
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_tonic()
        .with_protocol(opentelemetry_otlp::Protocol::Grpc)
        .with_channel(channel)
        .build()
        .map_err(|error| format!("the OTLP exporter: {error}"))?;
    let resource = resource(default_service, instance);
    opentelemetry::global::set_text_map_propagator(opentelemetry_sdk::propagation::TraceContextPropagator::new());
    let processor = BatchSpanProcessor::builder(exporter).with_batch_config(batch_config()).build();
    let provider = SdkTracerProvider::builder()
        .with_resource(resource)
        .with_sampler(crate::sampling::configured())
        .with_id_generator(crate::sampling::DecidedIds::default())
        .with_span_processor(processor)
        .build();
    Ok((provider, connection))
}

/// The gRPC endpoint spans go to: `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` as it is, else
/// `OTEL_EXPORTER_OTLP_ENDPOINT` (gRPC appends no path), else the OTLP default; each
/// call bounded by `OTEL_EXPORTER_OTLP_TRACES_TIMEOUT` / `OTEL_EXPORTER_OTLP_TIMEOUT` in
/// milliseconds (default 10 s). The exporter reads the same variables when it builds its own
/// channel; it is given this one so that the connection runs on [`ExporterThread`].
fn exporter_endpoint(env: impl Fn(&str) -> Option<String>) -> Result<tonic::transport::Endpoint, String> {
    let var = |name: &str| env(name).map(|v| v.trim().to_string()).filter(|v| !v.is_empty());
    let url = var("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
        .or_else(|| var("OTEL_EXPORTER_OTLP_ENDPOINT"))
        .unwrap_or_else(|| DEFAULT_ENDPOINT.to_string());
    if url.starts_with("https:") {
        return Err(format!("{url}: this build exports over plain HTTP/2 only (no TLS for OTLP)"));
    }
    let timeout_ms = match var("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT").or_else(|| var("OTEL_EXPORTER_OTLP_TIMEOUT")) {
        Some(value) => value.parse::<u64>().map_err(|_| format!("OTLP timeout {value:?} is not milliseconds"))?,
        None => DEFAULT_TIMEOUT_MS,
    };
    let endpoint = tonic::transport::Endpoint::from_shared(url.clone()).map_err(|error| format!("{url}: {error}"))?;
    Ok(endpoint.timeout(std::time::Duration::from_millis(timeout_ms)))
}

/// OTLP/gRPC's default collector address.
const DEFAULT_ENDPOINT: &str = "http://localhost:4317";
/// OTLP's default export timeout.
const DEFAULT_TIMEOUT_MS: u64 = 10_000;

/// A thread with a runtime of its own for the exporter's HTTP/2 connection. The batch
/// processor's thread converts a batch and hands it to the connection; on the process's
/// runtime the connection task would then encode thousands of spans into protobuf and
/// write them on a request worker, holding that worker (and what its cache held) for the
/// length of a batch. Here it does so beside the workers, as the batch processor does.
struct ExporterThread {
    handle: tokio::runtime::Handle,
    /// Dropping it ends the thread's runtime and with it the connection.
    _stop: tokio::sync::oneshot::Sender<()>,
}

impl ExporterThread {
    fn start() -> std::io::Result<ExporterThread> {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
        let handle = runtime.handle().clone();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        std::thread::Builder::new().name("otlp-connection".into()).spawn(move || {
            runtime.block_on(async {
                let _ = stopped.await;
            });
        })?;
        Ok(ExporterThread { handle, _stop: stop })
    }

    fn executor(&self) -> OnRuntime {
        OnRuntime(self.handle.clone())
    }
}

/// Spawns what tonic's channel runs (its request buffer, the connection) on one runtime.
#[derive(Clone)]
struct OnRuntime(tokio::runtime::Handle);

impl<F> hyper::rt::Executor<F> for OnRuntime
where
    F: std::future::Future + Send + 'static,
    F::Output: Send + 'static,
{
    fn execute(&self, future: F) {
        drop(self.0.spawn(future));
    }
}

/// The Resource every exported span names: the service (`OTEL_SERVICE_NAME`, else
/// `default_service`) and, given one, the instance.
fn resource(default_service: &str, instance: Option<Instance<'_>>) -> Resource {
    let service = std::env::var("OTEL_SERVICE_NAME")
        .ok()
        .filter(|name| !name.trim().is_empty())
        .unwrap_or_else(|| default_service.to_string());
    // The process's own names first, then the SDK's detectors (as `Resource::builder()`
    // runs them), so that OTEL_RESOURCE_ATTRIBUTES can still rename the instance (the
    // compose file does); the service name last, as it was chosen above.
    let named = instance.into_iter().flat_map(|Instance { attribute, name }| {
        [KeyValue::new(attribute, name.to_string()), KeyValue::new("service.instance.id", name.to_string())]
    });
    Resource::builder_empty()
        .with_attributes(named)
        .with_detectors(&[
            Box::new(SdkProvidedResourceDetector),
            Box::new(TelemetryResourceDetector),
            Box::new(EnvResourceDetector::new()),
        ])
        .with_service_name(service)
        .build()
}

/// Export batches of at most [`MAX_EXPORT_BATCH`] spans from a queue of [`MAX_QUEUE`],
/// unless `OTEL_BSP_MAX_EXPORT_BATCH_SIZE` / `OTEL_BSP_MAX_QUEUE_SIZE` say otherwise. The
/// SDK's defaults (512 from 2,048) suit a process serving hundreds of requests a second;
/// a shard serves tens of thousands, one span each, and at 512 a span pays a good part of
/// an export call's framing and gRPC round trip, while a 2,048-span queue overflows between
/// two exports and drops spans.
fn batch_config() -> BatchConfig {
    let mut config = BatchConfigBuilder::default();
    if !set("OTEL_BSP_MAX_QUEUE_SIZE") {
        config = config.with_max_queue_size(MAX_QUEUE);
    }
    if !set("OTEL_BSP_MAX_EXPORT_BATCH_SIZE") {
        config = config.with_max_export_batch_size(MAX_EXPORT_BATCH);
    }
    config.build()
}

/// Atoll's default export batch, in spans (the SDK's is 512).
pub const MAX_EXPORT_BATCH: usize = 2_048;
/// Atoll's default span queue (the SDK's is 2,048): eight batches.
pub const MAX_QUEUE: usize = 16_384;

#[cfg(test)]
mod tests {
    use super::*;
    use opentelemetry_proto::tonic::collector::trace::v1::trace_service_server::{TraceService, TraceServiceServer};
    use opentelemetry_proto::tonic::collector::trace::v1::{ExportTraceServiceRequest, ExportTraceServiceResponse};

    #[test]
    fn exporting_keeps_the_logs_maximum_level() {
        use tracing::Subscriber as _;
        let provider = SdkTracerProvider::builder().build();
        for (directives, level) in [("info", LevelFilter::INFO), ("warn,atoll=debug", LevelFilter::DEBUG)] {
            let logging = subscriber(EnvFilter::new(directives), false, None).max_level_hint();
            let exporting = subscriber(EnvFilter::new(directives), false, Some(&provider)).max_level_hint();
            assert_eq!(logging, Some(level), "{directives}");
            assert_eq!(exporting, Some(level.max(EXPORTED_SPANS)), "{directives}");
        }
    }

    #[test]
    fn only_info_spans_are_exported_while_debug_ones_are_logged() {
        use opentelemetry::trace::TraceContextExt as _;
        use tracing_opentelemetry::OpenTelemetrySpanExt as _;
        let provider = SdkTracerProvider::builder().build();
        let exported = |span: &tracing::Span| span.context().span().span_context().is_valid();
        tracing::subscriber::with_default(subscriber(EnvFilter::new("debug"), false, Some(&provider)), || {
            let request = tracing::info_span!("request");
            let _entered = request.enter();
            let detail = tracing::debug_span!("detail");
            assert!(exported(&request));
            assert!(!detail.is_disabled(), "RUST_LOG=debug logs it");
            assert!(!exported(&detail), "but only INFO spans are exported");
            // A span under a DEBUG one belongs to the nearest exported ancestor's trace.
            let inner = detail.in_scope(|| tracing::info_span!("inner"));
            let trace = |span: &tracing::Span| span.context().span().span_context().trace_id();
            assert!(exported(&inner));
            assert_eq!(trace(&inner), trace(&request));
        });
    }

    #[test]
    fn the_endpoint_comes_from_the_standard_variables() {
        let endpoint = |vars: &[(&str, &str)]| {
            let vars: Vec<(String, String)> = vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
            exporter_endpoint(move |name| vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone()))
        };
        let uri = |vars: &[(&str, &str)]| endpoint(vars).map(|e| e.uri().to_string());
        assert_eq!(uri(&[]).as_deref(), Ok("http://localhost:4317/"));
        assert_eq!(
            uri(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4317")]).as_deref(),
            Ok("http://collector:4317/")
        );
        let both = [
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4317"),
            ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", " http://traces:4317 "),
        ];
        assert_eq!(uri(&both).as_deref(), Ok("http://traces:4317/"), "the signal's own variable wins");
        assert_eq!(uri(&[("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", " ")]).as_deref(), Ok("http://localhost:4317/"));
        assert!(endpoint(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "https://collector:4317")]).is_err(), "no TLS here");
        assert!(endpoint(&[("OTEL_EXPORTER_OTLP_TIMEOUT", "10s")]).is_err(), "milliseconds only");
        assert!(endpoint(&[("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "2500")]).is_ok());
    }

    /// A real OTLP/gRPC collector on loopback, on a thread and runtime of its own; every
    /// export request it receives is sent to the returned channel.
    fn collector() -> (String, std::sync::mpsc::Receiver<ExportTraceServiceRequest>) {
        struct Sink(std::sync::Mutex<std::sync::mpsc::Sender<ExportTraceServiceRequest>>);
        #[tonic::async_trait]
        impl TraceService for Sink {
            async fn export(
                &self,
                request: tonic::Request<ExportTraceServiceRequest>,
            ) -> Result<tonic::Response<ExportTraceServiceResponse>, tonic::Status> {
                let _ = self.0.lock().expect("not poisoned").send(request.into_inner());
                Ok(tonic::Response::new(ExportTraceServiceResponse::default()))
            }
        }
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind loopback");
        listener.set_nonblocking(true).expect("non-blocking");
        let endpoint = format!("http://{}", listener.local_addr().expect("local address"));
        let (sender, received) = std::sync::mpsc::channel();
        let service = TraceServiceServer::new(Sink(std::sync::Mutex::new(sender)));
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
            runtime.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).expect("listener");
                while let Ok((stream, _)) = listener.accept().await {
                    let service = service.clone();
                    tokio::spawn(async move {
                        let serve = hyper::service::service_fn(move |request: http::Request<hyper::body::Incoming>| {
                            let mut service = service.clone();
                            async move { tonic::codegen::Service::call(&mut service, request).await }
                        });
                        let _ = hyper_util::server::conn::auto::Builder::new(hyper_util::rt::TokioExecutor::new())
                            .http2_only()
                            .serve_connection(hyper_util::rt::TokioIo::new(stream), serve)
                            .await;
                    });
                }
            });
        });
        (endpoint, received)
    }

    /// The exporter's connection runs on its own thread: spans created where no tokio
    /// runtime exists (this test's thread) reach a real collector, with the server span's
    /// name, kind and attributes and the process's Resource.
    #[test]
    fn spans_reach_the_collector_from_outside_any_runtime() {
        use opentelemetry_proto::tonic::common::v1::any_value::Value;
        assert!(tokio::runtime::Handle::try_current().is_err(), "a plain thread");
        let (url, received) = collector();
        let endpoint = tonic::transport::Endpoint::from_shared(url).expect("an endpoint");
        let (provider, connection) =
            provider_to(endpoint, "atoll-test", Some(Instance { attribute: "atoll.shard", name: "root" }))
                .expect("a provider");
        tracing::subscriber::with_default(subscriber(EnvFilter::new("info"), false, Some(&provider)), || {
            let span = tracing::info_span!(
                "request",
                otel.name = %format_args!("get {}", "configmaps"),
                otel.kind = "server",
                http.request.method = "GET",
                http.response.status_code = tracing::field::Empty,
            );
            span.record("http.response.status_code", 200_i64);
        });
        provider.force_flush().expect("flush");
        let request = received.recv_timeout(std::time::Duration::from_secs(60)).expect("an export request");
        provider.shutdown().expect("shut down");
        drop(connection);
        let resource = request.resource_spans[0].resource.as_ref().expect("a resource");
        let value = |attributes: &[opentelemetry_proto::tonic::common::v1::KeyValue], key: &str| {
            attributes.iter().find(|kv| kv.key == key).and_then(|kv| kv.value.clone()).and_then(|v| v.value)
        };
        assert_eq!(value(&resource.attributes, "service.name"), Some(Value::StringValue("atoll-test".into())));
        assert_eq!(value(&resource.attributes, "atoll.shard"), Some(Value::StringValue("root".into())));
        let spans: Vec<_> = request.resource_spans.iter().flat_map(|r| &r.scope_spans).flat_map(|s| &s.spans).collect();
        assert_eq!(spans.len(), 1);
        assert_eq!(spans[0].name, "get configmaps");
        assert_eq!(spans[0].kind, 2, "a server span");
        assert_eq!(value(&spans[0].attributes, "http.request.method"), Some(Value::StringValue("GET".into())));
        assert_eq!(value(&spans[0].attributes, "http.response.status_code"), Some(Value::IntValue(200)));
    }

    #[test]
    fn the_instance_is_named_unless_the_environment_names_it() {
        let value = |resource: &Resource, key: &'static str| resource.get(&key.into()).map(|v| v.to_string());
        let shard = Some(Instance { attribute: "atoll.shard", name: "root" });
        // One test sets the variable, so no other test of this crate sees it changed.
        std::env::remove_var("OTEL_RESOURCE_ATTRIBUTES");
        let plain = resource("atoll-shard", shard);
        assert_eq!(value(&plain, "service.instance.id").as_deref(), Some("root"));
        assert_eq!(value(&plain, "atoll.shard").as_deref(), Some("root"));
        std::env::set_var("OTEL_RESOURCE_ATTRIBUTES", "service.instance.id=root-a,deployment.environment=compose");
        let renamed = resource("atoll-shard", shard);
        std::env::remove_var("OTEL_RESOURCE_ATTRIBUTES");
        assert_eq!(value(&renamed, "service.instance.id").as_deref(), Some("root-a"));
        assert_eq!(value(&renamed, "atoll.shard").as_deref(), Some("root"));
        assert_eq!(value(&renamed, "deployment.environment").as_deref(), Some("compose"));
        assert_eq!(value(&resource("atoll-front-proxy", None), "service.instance.id"), None);
    }
}
