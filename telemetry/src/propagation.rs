//! W3C trace context (`traceparent`, `tracestate`) between processes.
//!
//! Every function does nothing unless spans are exported ([`crate::enabled`]): without an
//! exporter a process neither reads nor writes trace headers, so a client's `traceparent`
//! passes a front-proxy unchanged. Exporting, the context written out is a span's, or,
//! for work of a request the sampler did not record ([`crate::Decision`]), that request's
//! unsampled context.

use crate::enabled;
use crate::sampling::context_of;
use http::header::{HeaderName, HeaderValue};
use opentelemetry::propagation::{Extractor, Injector, TextMapPropagator};
use opentelemetry::trace::TraceContextExt;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use std::collections::HashMap;
use tonic::metadata::{MetadataKey, MetadataMap, MetadataValue};
use tracing_opentelemetry::OpenTelemetrySpanExt;

/// The W3C header that carries the parent span.
pub const TRACEPARENT: &str = "traceparent";
/// The W3C header that carries vendor state along with it.
pub const TRACESTATE: &str = "tracestate";

/// Writes `span`'s context (or that of the unsampled request it belongs to) into outgoing
/// HTTP headers, replacing any the caller sent.
pub fn inject_http(span: &tracing::Span, headers: &mut http::HeaderMap) {
    let Some(context) = context_of(span) else { return };
    headers.remove(TRACEPARENT_HEADER);
    headers.remove(TRACESTATE_HEADER);
    TraceContextPropagator::new().inject_context(&context, &mut HttpInjector(headers));
}

const TRACEPARENT_HEADER: HeaderName = HeaderName::from_static(TRACEPARENT);
const TRACESTATE_HEADER: HeaderName = HeaderName::from_static(TRACESTATE);

/// Writes the propagator's fields into HTTP headers, as `opentelemetry-http`'s
/// `HeaderInjector` does, without its per-request allocations on the front-proxy's path:
/// the two W3C names are constants rather than parsed and copied from the key on each call,
/// a value keeps the propagator's `String` as its buffer rather than a copy, and an empty
/// `tracestate` (the propagator always writes one) is left out, as W3C allows.
struct HttpInjector<'a>(&'a mut http::HeaderMap);

impl Injector for HttpInjector<'_> {
    fn set(&mut self, key: &str, value: String) {
        let name = match key {
            TRACEPARENT => TRACEPARENT_HEADER,
            TRACESTATE if value.is_empty() => return,
            TRACESTATE => TRACESTATE_HEADER,
            other => match HeaderName::from_bytes(other.as_bytes()) {
                Ok(name) => name,
                Err(_) => return,
            },
        };
        if let Ok(value) = HeaderValue::try_from(value) {
            self.0.insert(name, value);
        }
    }
}

/// Makes `span` continue the trace an incoming gRPC call carries in its metadata.
pub fn continue_grpc(span: &tracing::Span, metadata: &MetadataMap) {
    continue_from(span, &MetadataCarrier(metadata));
}

/// Writes `span`'s context (or its unsampled request's) into an outgoing gRPC call's
/// metadata.
pub fn inject_grpc(span: &tracing::Span, metadata: &mut MetadataMap) {
    let Some(context) = context_of(span) else { return };
    TraceContextPropagator::new().inject_context(&context, &mut MetadataCarrierMut(metadata));
}

/// `span`'s context (or its unsampled request's) as one `traceparent` value, for a
/// message field: one stream carries many units of work (replication batches), each with
/// its own parent.
pub fn traceparent(span: &tracing::Span) -> Option<String> {
    let context = context_of(span)?;
    let mut fields = HashMap::new();
    TraceContextPropagator::new().inject_context(&context, &mut fields);
    fields.remove(TRACEPARENT)
}

/// The span a `traceparent` value taken from a message field names, to continue
/// ([`crate::Cause::adopt`]) or link to.
pub fn cause_of(traceparent: &str) -> Option<crate::Cause> {
    if !enabled() || traceparent.is_empty() {
        return None;
    }
    let fields = HashMap::from([(TRACEPARENT.to_string(), traceparent.to_string())]);
    let context = TraceContextPropagator::new().extract(&fields);
    crate::Cause::from_span_context(context.span().span_context())
}

fn continue_from(span: &tracing::Span, carrier: &dyn Extractor) {
    if !enabled() || span.is_disabled() {
        return;
    }
    let parent = TraceContextPropagator::new().extract(carrier);
    if parent.span().span_context().is_valid() {
        // Fails only for a span already started; it then stays a root of its own.
        let _ = span.set_parent(parent);
    }
}

struct MetadataCarrier<'a>(&'a MetadataMap);

impl Extractor for MetadataCarrier<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(|value| value.to_str().ok())
    }

    fn keys(&self) -> Vec<&str> {
        self.0
            .keys()
            .filter_map(|key| match key {
                tonic::metadata::KeyRef::Ascii(key) => Some(key.as_str()),
                tonic::metadata::KeyRef::Binary(_) => None,
            })
            .collect()
    }
}

struct MetadataCarrierMut<'a>(&'a mut MetadataMap);

impl Injector for MetadataCarrierMut<'_> {
    fn set(&mut self, key: &str, value: String) {
        if let (Ok(key), Ok(value)) = (MetadataKey::from_bytes(key.as_bytes()), MetadataValue::try_from(value)) {
            self.0.insert(key, value);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_round_trip() {
        let mut metadata = MetadataMap::new();
        MetadataCarrierMut(&mut metadata)
            .set(TRACEPARENT, "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01".into());
        let parent = TraceContextPropagator::new().extract(&MetadataCarrier(&metadata));
        let context = parent.span().span_context().clone();
        assert!(context.is_valid());
        assert_eq!(context.trace_id().to_string(), "4bf92f3577b34da6a3ce929d0e0e4736");
        assert_eq!(context.span_id().to_string(), "00f067aa0ba902b7");
        assert!(context.is_sampled());
    }

    #[test]
    fn nothing_is_read_or_written_without_an_exporter() {
        let span = tracing::Span::none();
        let mut headers = http::HeaderMap::new();
        headers.insert(TRACEPARENT, "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01".parse().unwrap());
        inject_http(&span, &mut headers);
        assert!(headers.contains_key(TRACEPARENT), "a client's header passes unchanged");
        assert_eq!(traceparent(&span), None);
    }

    /// The injector writes what the propagator gives it, replacing earlier values, and
    /// leaves out an empty `tracestate`.
    #[test]
    fn http_injection_writes_the_w3c_headers() {
        let parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        let extracted = |state: &str| {
            let fields = HashMap::from([
                (TRACEPARENT.to_string(), parent.to_string()),
                (TRACESTATE.to_string(), state.to_string()),
            ]);
            TraceContextPropagator::new().extract(&fields)
        };
        let mut headers = http::HeaderMap::new();
        headers.insert(TRACEPARENT_HEADER, HeaderValue::from_static("00-stale"));
        TraceContextPropagator::new().inject_context(&extracted(""), &mut HttpInjector(&mut headers));
        assert_eq!(headers.get(TRACEPARENT).and_then(|v| v.to_str().ok()), Some(parent));
        assert!(!headers.contains_key(TRACESTATE), "{headers:?}");
        TraceContextPropagator::new().inject_context(&extracted("vendor=a"), &mut HttpInjector(&mut headers));
        assert_eq!(headers.get(TRACEPARENT).and_then(|v| v.to_str().ok()), Some(parent));
        assert_eq!(headers.get(TRACESTATE).and_then(|v| v.to_str().ok()), Some("vendor=a"));
        assert_eq!(headers.len(), 2);
    }
}
