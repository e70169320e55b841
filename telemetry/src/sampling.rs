//! The sampling decision a server makes for a request as it arrives, before it builds the
//! request's span.
//!
//! `tracing-opentelemetry` asks the SDK's sampler only when it starts the OpenTelemetry
//! span, after the `tracing` span has been built with every attribute: a request that is
//! then dropped has paid for a span nobody receives (about 15,000 instructions of a
//! shard's create). So the shard and the front-proxy ask the configured sampler first
//! ([`Decision::of_http`]), with the caller's context and the trace id the span will have,
//! and build the full span only for a request that is recorded. An unsampled request's
//! own span is not built at all; its work carries the context the SDK would have given a
//! dropped span instead (same trace id, flags `00`), so that what it queues and the calls
//! it makes downstream are not sampled either. (Spans its work makes on the way, a peer
//! call's say, are still built, and the SDK drops them under that parent.)
//!
//! The decision is the SDK's own: the sampler is the one the SDK reads from
//! `OTEL_TRACES_SAMPLER`/`_ARG`, shared with the provider, and a request's root span takes
//! the trace id the decision was made on ([`DecidedIds`]), so a ratio sampler downstream
//! that decides on the trace id agrees with it.

use crate::enabled;
use futures::future::Either;
use opentelemetry::context::{FutureExt as _, WithContext};
use opentelemetry::propagation::TextMapPropagator;
use opentelemetry::trace::{Link, SpanContext, SpanId, SpanKind, TraceContextExt, TraceFlags, TraceId, TraceState};
use opentelemetry::{Context, KeyValue};
use opentelemetry_http::HeaderExtractor;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::{IdGenerator, RandomIdGenerator, SamplingDecision, SamplingResult, ShouldSample};
use std::cell::Cell;
use std::future::Future;
use std::sync::OnceLock;
use tracing_opentelemetry::OpenTelemetrySpanExt;

/// The sampler the exporting provider was given, for deciding before a span exists.
static SAMPLER: OnceLock<Box<dyn ShouldSample>> = OnceLock::new();

/// The sampler `OTEL_TRACES_SAMPLER`/`_ARG` configure, read as the SDK reads them (its
/// default configuration does), kept for [`Decision::of_http`] and returned for the
/// provider: one sampler, so both decide alike. A parent-based one also follows links
/// ([`FollowingLinks`]).
pub(crate) fn configured() -> Box<dyn ShouldSample> {
    let follow = parent_based(std::env::var("OTEL_TRACES_SAMPLER").ok().as_deref());
    let sampler: Box<dyn ShouldSample> =
        Box::new(FollowingLinks { sampler: opentelemetry_sdk::trace::Config::default().sampler, follow });
    let _ = SAMPLER.set(sampler.clone());
    sampler
}

/// Whether `OTEL_TRACES_SAMPLER` names a parent-based sampler, as the SDK reads it: only
/// `always_on`, `always_off` and `traceidratio` are not (unset, unknown and unsupported
/// names fall back to `parentbased_always_on`).
fn parent_based(name: Option<&str>) -> bool {
    !matches!(name, Some("always_on" | "always_off" | "traceidratio"))
}

/// The configured sampler, made to follow a span's causes where it follows parents.
///
/// A span of work that serves many requests at once (a replication batch, a cache's round
/// of batches) has no one parent: it is a root, and each request it carries is a link
/// ([`crate::Cause::follow_all`]). A parent-based sampler would decide such a root at its
/// root ratio, on its own trace id, and so drop most batches of sampled writes at
/// `parentbased_traceidratio` 0.1: the write's trace would end where it leaves the shard.
/// Here a root that links to a sampled span is sampled, as a child of a sampled parent is;
/// other spans, and every span under a sampler that is not parent-based, are decided by the
/// configured sampler alone. (OpenTelemetry gives samplers a span's links for this; the
/// Java and .NET projects offer links-based samplers of the same kind.)
#[derive(Debug, Clone)]
pub(crate) struct FollowingLinks {
    pub(crate) sampler: Box<dyn ShouldSample>,
    /// Whether the configured sampler is parent-based.
    pub(crate) follow: bool,
}

impl ShouldSample for FollowingLinks {
    fn should_sample(
        &self,
        parent: Option<&Context>,
        trace_id: TraceId,
        name: &str,
        kind: &SpanKind,
        attributes: &[KeyValue],
        links: &[Link],
    ) -> SamplingResult {
        let root = parent.is_none_or(|context| !context.span().span_context().is_valid());
        if self.follow && root && links.iter().any(|link| link.span_context.is_sampled()) {
            return SamplingResult {
                decision: SamplingDecision::RecordAndSample,
                attributes: Vec::new(),
                trace_state: TraceState::default(),
            };
        }
        self.sampler.should_sample(parent, trace_id, name, kind, attributes, links)
    }
}

thread_local! {
    /// The trace id a root span being started on this thread must take.
    static ROOT_TRACE: Cell<Option<TraceId>> = const { Cell::new(None) };
}

/// The SDK's random ids, except that the root span [`Decision::start`] starts takes the
/// trace id its sampling decision was made on.
#[derive(Debug, Default)]
pub(crate) struct DecidedIds(RandomIdGenerator);

impl IdGenerator for DecidedIds {
    fn new_trace_id(&self) -> TraceId {
        ROOT_TRACE.with(Cell::take).unwrap_or_else(|| self.0.new_trace_id())
    }

    fn new_span_id(&self) -> SpanId {
        self.0.new_span_id()
    }
}

/// What the sampler decided for one incoming request.
#[derive(Debug)]
pub struct Decision(State);

#[derive(Debug)]
enum State {
    /// Nothing is exported.
    Off,
    /// The request's span is recorded: it continues `parent`, or is a root on `trace_id`.
    Recorded { parent: Option<Context>, trace_id: TraceId },
    /// Not recorded: the context its work carries instead of a span.
    Unsampled(Context),
}

impl Decision {
    /// Decides for a request with these headers (a W3C `traceparent` is the caller's
    /// context), as the SDK would decide for its server span.
    pub fn of_http(headers: &http::HeaderMap) -> Decision {
        let Some(sampler) = SAMPLER.get().filter(|_| enabled()) else { return Decision(State::Off) };
        let parent = TraceContextPropagator::new().extract(&HeaderExtractor(headers));
        Decision(decide(sampler.as_ref(), parent, &RandomIdGenerator::default()))
    }

    /// Whether the request's span is exported: only then is it worth building with its
    /// attributes. Without export, or unsampled, a log-only span (or none) will do.
    pub fn recorded(&self) -> bool {
        matches!(self.0, State::Recorded { .. })
    }

    /// Makes `span`, the recorded request's span, continue the caller's trace, or start
    /// one on the trace id the decision was made on. Call before the span is entered.
    pub fn start(&self, span: &tracing::Span) {
        let State::Recorded { parent, trace_id } = &self.0 else { return };
        match parent {
            // Fails only for a span already started; it then stays a root of its own.
            Some(parent) => drop(span.set_parent(parent.clone())),
            None => {
                ROOT_TRACE.with(|next| next.set(Some(*trace_id)));
                // Starting the OpenTelemetry span now draws its trace id on this thread.
                drop(span.context());
                ROOT_TRACE.with(|next| next.set(None));
            }
        }
    }

    /// Runs the request's work: an unsampled request's work carries its context (for
    /// [`crate::Cause::current`], injected headers and log lines) while it is polled.
    pub fn scope<F: Future>(self, work: F) -> Either<WithContext<F>, F> {
        match self.0 {
            State::Unsampled(context) => Either::Left(work.with_context(context)),
            State::Off | State::Recorded { .. } => Either::Right(work),
        }
    }
}

/// The decision for a server span under `parent` (empty for none), as the SDK's tracer
/// makes it: the parent's trace id, else a new one; a dropped span's context has a new
/// span id and no flags set.
fn decide(sampler: &dyn ShouldSample, parent: Context, ids: &dyn IdGenerator) -> State {
    let remote = parent.span().span_context().clone();
    let trace_id = if remote.is_valid() { remote.trace_id() } else { ids.new_trace_id() };
    let result = sampler.should_sample(Some(&parent), trace_id, "request", &SpanKind::Server, &[], &[]);
    match result.decision {
        SamplingDecision::Drop => {
            let dropped =
                SpanContext::new(trace_id, ids.new_span_id(), TraceFlags::default(), false, result.trace_state);
            State::Unsampled(Context::new().with_remote_span_context(dropped))
        }
        SamplingDecision::RecordAndSample | SamplingDecision::RecordOnly => {
            State::Recorded { parent: remote.is_valid().then_some(parent), trace_id }
        }
    }
}

/// The trace context of work in `span`: the span's own when OpenTelemetry knows it (also
/// when the SDK did not sample it), else that of the unsampled request the work belongs
/// to, if any.
pub(crate) fn context_of(span: &tracing::Span) -> Option<Context> {
    if !enabled() {
        return None;
    }
    if !span.is_disabled() {
        let context = span.context();
        if context.span().span_context().is_valid() {
            return Some(context);
        }
    }
    let current = Context::current();
    current.span().span_context().is_valid().then_some(current)
}

#[cfg(test)]
mod tests {
    use super::*;
    use opentelemetry_sdk::trace::Sampler;

    fn parent(flags: &str) -> Context {
        let value = format!("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-{flags}");
        let mut headers = http::HeaderMap::new();
        headers.insert("traceparent", value.parse().expect("a header value"));
        TraceContextPropagator::new().extract(&HeaderExtractor(&headers))
    }

    fn ratio(r: f64) -> Sampler {
        Sampler::ParentBased(Box::new(Sampler::TraceIdRatioBased(r)))
    }

    #[test]
    fn a_caller_that_sampled_decides_under_parent_based_sampling() {
        let ids = RandomIdGenerator::default();
        for sampler in [ratio(0.0), Sampler::ParentBased(Box::new(Sampler::AlwaysOff))] {
            match decide(&sampler, parent("01"), &ids) {
                State::Recorded { parent: Some(p), trace_id } => {
                    assert_eq!(trace_id.to_string(), "4bf92f3577b34da6a3ce929d0e0e4736");
                    assert_eq!(p.span().span_context().span_id().to_string(), "00f067aa0ba902b7");
                }
                other => panic!("{sampler:?}: {other:?}"),
            }
            match decide(&sampler, parent("00"), &ids) {
                State::Unsampled(context) => {
                    let dropped = context.span().span_context().clone();
                    assert_eq!(dropped.trace_id().to_string(), "4bf92f3577b34da6a3ce929d0e0e4736", "the trace goes on");
                    assert_ne!(dropped.span_id().to_string(), "00f067aa0ba902b7", "a span id of its own");
                    assert!(!dropped.is_sampled());
                }
                other => panic!("{sampler:?}: {other:?}"),
            }
        }
    }

    /// A root's decision is the ratio sampler's on the trace id it is made on, and the
    /// sampler sees the same id again when the SDK starts the span.
    #[test]
    fn a_root_is_decided_on_its_own_trace_id() {
        let ids = RandomIdGenerator::default();
        let sampler = ratio(0.5);
        let mut recorded = 0;
        for _ in 0..400 {
            let state = decide(&sampler, Context::new(), &ids);
            let trace_id = match &state {
                State::Recorded { parent: None, trace_id } => {
                    recorded += 1;
                    *trace_id
                }
                State::Unsampled(context) => context.span().span_context().trace_id(),
                other => panic!("{other:?}"),
            };
            let again = Sampler::TraceIdRatioBased(0.5).should_sample(None, trace_id, "", &SpanKind::Server, &[], &[]);
            assert_eq!(again.decision == SamplingDecision::RecordAndSample, matches!(state, State::Recorded { .. }));
        }
        assert!((100..300).contains(&recorded), "about half of 400 roots are recorded, not {recorded}");
        assert!(matches!(decide(&Sampler::AlwaysOn, parent("00"), &ids), State::Recorded { .. }), "always_on");
    }

    /// The id generator hands the decided trace id to the one root started after it was
    /// set, and random ids otherwise.
    #[test]
    fn the_decided_trace_id_goes_to_one_root() {
        let ids = DecidedIds::default();
        let decided = TraceId::from_hex("0af7651916cd43dd8448eb211c80319c").expect("hex");
        ROOT_TRACE.with(|next| next.set(Some(decided)));
        assert_eq!(ids.new_trace_id(), decided);
        assert_ne!(ids.new_trace_id(), decided);
    }

    /// A root that links to a sampled span is sampled under a parent-based sampler, at any
    /// ratio; a child follows its parent, whatever its links; other samplers ignore links.
    #[test]
    fn a_parent_based_sampler_follows_links_of_roots() {
        let link = |flags: &str| Link::with_context(parent(flags).span().span_context().clone());
        let sampled = |sampler: &FollowingLinks, parent: Option<&Context>, links: &[Link]| {
            let trace_id = TraceId::from(1_u128);
            let result = sampler.should_sample(parent, trace_id, "batch", &SpanKind::Producer, &[], links);
            result.decision == SamplingDecision::RecordAndSample
        };
        let follows = FollowingLinks { sampler: Box::new(ratio(0.0)), follow: true };
        let root = Context::new();
        assert!(sampled(&follows, Some(&root), &[link("00"), link("01")]), "one sampled link");
        assert!(sampled(&follows, None, &[link("01")]), "no parent context at all");
        assert!(!sampled(&follows, Some(&root), &[link("00")]), "only unsampled links: the ratio decides");
        assert!(!sampled(&follows, Some(&root), &[]), "no links: the ratio decides");
        assert!(!sampled(&follows, Some(&parent("00")), &[link("01")]), "a child follows its parent");
        assert!(sampled(&follows, Some(&parent("01")), &[]));
        let off = FollowingLinks { sampler: Box::new(Sampler::AlwaysOff), follow: false };
        assert!(!sampled(&off, Some(&root), &[link("01")]), "always_off samples nothing");
    }

    #[test]
    fn only_the_three_plain_samplers_are_not_parent_based() {
        for name in ["always_on", "always_off", "traceidratio"] {
            assert!(!parent_based(Some(name)), "{name}");
        }
        // The SDK matches names exactly: any other spelling is its parent-based fallback.
        let others =
            ["parentbased_traceidratio", "parentbased_always_off", "jaeger_remote", "ALWAYS_ON", " always_on", ""];
        for name in others.into_iter().map(Some).chain([None]) {
            assert!(parent_based(name), "{name:?}: the SDK's fallback is parentbased_always_on");
        }
    }

    #[test]
    fn nothing_is_decided_without_export() {
        let decision = Decision::of_http(&http::HeaderMap::new());
        assert!(!decision.recorded());
        assert!(matches!(decision.0, State::Off));
        assert!(context_of(&tracing::Span::none()).is_none());
    }
}
