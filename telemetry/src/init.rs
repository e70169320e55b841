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

/// Whether this process exports spans. Every helper of this crate is a no-op otherwise,
/// so a process without `OTEL_*` settings does no tracing work beyond its logs.
pub fn enabled() -> bool {
    ENABLED.load(Ordering::Relaxed)
}

/// What [`init`] set up; [`Telemetry::shutdown`] exports what is still buffered.
#[must_use = "call shutdown() before the process exits, or the last spans are lost"]
pub struct Telemetry {
    provider: Option<SdkTracerProvider>,
}

impl Telemetry {
    /// Whether spans are exported.
    pub fn exporting(&self) -> bool {
        self.provider.is_some()
    }

    /// Exports the spans still buffered and stops the exporter. The export blocks, so it
    /// runs off the runtime's worker threads (the exporter's channel needs them).
    pub async fn shutdown(self) {
        let Some(provider) = self.provider else { return };
        let flushed = tokio::task::spawn_blocking(move || provider.shutdown()).await;
        if let Ok(Err(error)) = flushed {
            eprintln!("OpenTelemetry: exporting the last spans failed: {error}");
        }
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
/// Must run inside a tokio runtime: the gRPC exporter's channel lives on it.
pub fn init(default_service: &str, default_filter: &str, instance: Option<Instance<'_>>) -> Telemetry {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| default_filter.into());
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let provider = if export_requested() {
        match provider(default_service, instance) {
            Ok(provider) => Some(provider),
            Err(error) => {
                eprintln!("OpenTelemetry: not exporting spans: {error}");
                None
            }
        }
    } else {
        None
    };
    subscriber(filter, ansi, provider.as_ref()).init();
    if provider.is_some() {
        ENABLED.store(true, Ordering::Relaxed);
    }
    Telemetry { provider }
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
fn subscriber(
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
            // Nothing here reads OpenTelemetry's current context (trace context travels
            // through `tracing` spans), so entering a span need not attach one on every poll.
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

fn provider(default_service: &str, instance: Option<Instance<'_>>) -> Result<SdkTracerProvider, String> {
    use opentelemetry_otlp::WithExportConfig as _;
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_tonic()
        .with_protocol(opentelemetry_otlp::Protocol::Grpc)
        .build()
        .map_err(|error| format!("the OTLP exporter: {error}"))?;
    let resource = resource(default_service, instance);
    opentelemetry::global::set_text_map_propagator(opentelemetry_sdk::propagation::TraceContextPropagator::new());
    let processor = BatchSpanProcessor::builder(exporter).with_batch_config(batch_config()).build();
    Ok(SdkTracerProvider::builder().with_resource(resource).with_span_processor(processor).build())
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
