//! Log lines that lead to their trace.

use opentelemetry::trace::TraceContextExt;
use std::fmt;
use tracing::{Event, Subscriber};
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::registry::LookupSpan;

/// Formats an event as `F` does and, when spans are exported and the event happens in a
/// span OpenTelemetry knows (or in an unsampled request's work), ends the line with
/// `trace_id=… span_id=…`.
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
        let ids = crate::sampling::context_of(&tracing::Span::current()).map(|c| c.span().span_context().clone());
        let Some(context) = ids else { return self.0.format_event(ctx, writer, event) };
        let mut line = String::new();
        self.0.format_event(ctx, Writer::new(&mut line), event)?;
        let line = line.strip_suffix('\n').unwrap_or(&line);
        writeln!(writer, "{line} trace_id={} span_id={}", context.trace_id(), context.span_id())
    }
}
