//! Log lines that lead to their trace.

use opentelemetry::trace::TraceContextExt;
use std::fmt;
use tracing::{Event, Subscriber};
use tracing_opentelemetry::OpenTelemetrySpanExt;
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::registry::LookupSpan;

/// Formats an event as `F` does and, when spans are exported and the event happens in a
/// recorded span, ends the line with `trace_id=… span_id=…`.
pub struct WithTraceIds<F>(pub F);

impl<S, N, F> FormatEvent<S, N> for WithTraceIds<F>
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
    F: FormatEvent<S, N>,
{
    fn format_event(&self, ctx: &FmtContext<'_, S, N>, mut writer: Writer<'_>, event: &Event<'_>) -> fmt::Result {
        if !crate::enabled() {
            return self.0.format_event(ctx, writer, event);
        }
        let current = tracing::Span::current();
        let ids = (!current.is_disabled())
            .then(|| current.context().span().span_context().clone())
            .filter(|context| context.is_valid());
        let Some(context) = ids else { return self.0.format_event(ctx, writer, event) };
        let mut line = String::new();
        self.0.format_event(ctx, Writer::new(&mut line), event)?;
        let line = line.strip_suffix('\n').unwrap_or(&line);
        writeln!(writer, "{line} trace_id={} span_id={}", context.trace_id(), context.span_id())
    }
}
