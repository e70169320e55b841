//! The span that caused a piece of work, remembered until the work runs.

use crate::enabled;
use opentelemetry::trace::{SpanContext, SpanId, TraceContextExt, TraceFlags, TraceId, TraceState};
use tracing_opentelemetry::OpenTelemetrySpanExt;

/// Longest list of causes one span links to (a batch of many writes links to the first
/// ones); OpenTelemetry's default span link limit is 128.
pub const MAX_LINKS: usize = 32;

/// A span's identity, small and `Copy` so that a store event or a queue entry can carry it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Cause {
    trace_id: TraceId,
    span_id: SpanId,
    flags: TraceFlags,
}

impl Cause {
    /// The span the caller is in, when spans are exported: a recorded span, or the
    /// context of the unsampled request the caller works for (flags `00`, so that what
    /// it queues is not sampled either).
    pub fn current() -> Option<Cause> {
        // Checked before `Span::current()`, which is not free: this runs on every write.
        enabled().then(|| Cause::of(&tracing::Span::current())).flatten()
    }

    /// The identity of `span`, or of the unsampled request it belongs to, when spans are
    /// exported.
    pub fn of(span: &tracing::Span) -> Option<Cause> {
        crate::sampling::context_of(span).and_then(|context| Cause::from_span_context(context.span().span_context()))
    }

    pub(crate) fn from_span_context(context: &SpanContext) -> Option<Cause> {
        context.is_valid().then(|| Cause {
            trace_id: context.trace_id(),
            span_id: context.span_id(),
            flags: context.trace_flags(),
        })
    }

    pub(crate) fn span_context(&self) -> SpanContext {
        SpanContext::new(self.trace_id, self.span_id, self.flags, true, TraceState::default())
    }

    /// Whether the span was sampled: only then does a backend have it, and work it
    /// caused is worth a span of its own.
    pub fn is_sampled(&self) -> bool {
        self.flags.is_sampled()
    }

    /// Of the cause kept so far and a new one, the one to keep: the first, unless only the
    /// new one was sampled (an unsampled request must not hide a traced one).
    pub fn keep(kept: Option<Cause>, new: Option<Cause>) -> Option<Cause> {
        match (kept, new) {
            (Some(kept), Some(new)) if !kept.is_sampled() && new.is_sampled() => Some(new),
            (kept, new) => kept.or(new),
        }
    }

    /// The trace this cause belongs to, as 32 lowercase hex digits.
    pub fn trace_id(&self) -> String {
        self.trace_id.to_string()
    }

    /// Makes `span` a child of this cause: for work that exists because of one request
    /// (a Workspace's first scheduling), so the request's trace shows it. Call before the
    /// span is entered.
    pub fn adopt(self, span: &tracing::Span) {
        let parent = opentelemetry::Context::new().with_remote_span_context(self.span_context());
        // Fails only when the span was already started or is disabled: then it keeps its
        // own parent, which is still a correct (if less connected) trace.
        let _ = span.set_parent(parent);
    }
}

impl Cause {
    /// Makes `span` a root that follows from each distinct sampled cause (an OpenTelemetry
    /// link to each, at most [`MAX_LINKS`] of them): for work that serves many requests at
    /// once (a replication batch, a cache's round of batches), which has no one parent. A
    /// parent-based sampler then records it when a cause was sampled, whatever its own
    /// trace id (see the crate's sampler), so each sampled write's trace reaches it. An
    /// unsampled cause names a span no backend has and is left out; with no sampled cause,
    /// the span keeps its parent. Call before the span is entered.
    pub fn follow_all(span: &tracing::Span, causes: impl IntoIterator<Item = Cause>) {
        if !enabled() || span.is_disabled() {
            return;
        }
        let mut linked: Vec<Cause> = Vec::new();
        for cause in causes.into_iter().filter(Cause::is_sampled) {
            if linked.len() == MAX_LINKS {
                break;
            }
            if !linked.contains(&cause) {
                span.add_link(cause.span_context());
                linked.push(cause);
            }
        }
        if !linked.is_empty() {
            // Fails only for a span already started, which then keeps its parent.
            let _ = span.set_parent(opentelemetry::Context::new());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cause(flags: u8) -> Cause {
        Cause { trace_id: TraceId::from(7_u128), span_id: SpanId::from(9_u64), flags: TraceFlags::new(flags) }
    }

    #[test]
    fn a_sampled_cause_is_kept_over_an_unsampled_one() {
        let (sampled, unsampled) = (cause(1), cause(0));
        assert_eq!(Cause::keep(None, Some(unsampled)), Some(unsampled));
        assert_eq!(Cause::keep(Some(unsampled), Some(sampled)), Some(sampled));
        assert_eq!(Cause::keep(Some(sampled), Some(unsampled)), Some(sampled));
        let other = Cause { span_id: SpanId::from(10_u64), ..sampled };
        assert_eq!(Cause::keep(Some(sampled), Some(other)), Some(sampled), "the first of two sampled ones");
        assert_eq!(Cause::keep(Some(unsampled), None), Some(unsampled));
    }

    /// What `Cause::follow_all` makes of a span, exported through the production
    /// subscriber at a ratio of 0: a batch that follows a sampled cause is a sampled root
    /// linked to it, though the span it was made in (a session's) was dropped; one that
    /// follows only unsampled causes keeps that parent, and is dropped with it.
    #[test]
    fn a_span_that_follows_a_sampled_cause_is_a_sampled_root() {
        use opentelemetry_sdk::error::OTelSdkResult;
        use opentelemetry_sdk::trace::{Sampler, SdkTracerProvider, SpanData, SpanExporter};
        use std::sync::{Arc, Mutex};

        #[derive(Debug, Clone, Default)]
        struct Kept(Arc<Mutex<Vec<SpanData>>>);
        impl SpanExporter for Kept {
            async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
                self.0.lock().expect("not poisoned").extend(batch);
                Ok(())
            }
        }

        crate::init::enable_for_tests();
        let kept = Kept::default();
        let ratio = Sampler::ParentBased(Box::new(Sampler::TraceIdRatioBased(0.0)));
        let sampler = crate::sampling::FollowingLinks { sampler: Box::new(ratio), follow: true };
        let provider = SdkTracerProvider::builder().with_sampler(sampler).with_simple_exporter(kept.clone()).build();
        let (sampled, unsampled) = (cause(1), cause(0));
        let subscriber = crate::init::subscriber(tracing_subscriber::EnvFilter::new("info"), false, Some(&provider));
        tracing::subscriber::with_default(subscriber, || {
            let session = tracing::info_span!("session");
            let _in_session = session.enter();
            let batch = tracing::info_span!("batch");
            Cause::follow_all(&batch, [unsampled, sampled, sampled]);
            let lone = tracing::info_span!("lone");
            Cause::follow_all(&lone, [unsampled]);
        });
        let spans = kept.0.lock().expect("not poisoned").clone();
        let names: Vec<&str> = spans.iter().map(|span| span.name.as_ref()).collect();
        assert_eq!(names, ["batch"], "the session and the lone span are dropped at ratio 0");
        assert_eq!(spans[0].parent_span_id, SpanId::INVALID, "a root");
        assert!(spans[0].span_context.is_sampled());
        let links: Vec<SpanContext> = spans[0].links.links.iter().map(|link| link.span_context.clone()).collect();
        assert_eq!(links, [sampled.span_context()], "one link, to the sampled cause");
    }
}
