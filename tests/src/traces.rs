//! Reading the traces a [`Receiver`] kept: span kinds and status codes as OTLP numbers
//! them, one trace's spans with their parent relations ([`Trace`]), and waiting for spans
//! to arrive ([`wait_for`]).

use crate::otlp::{ReceivedSpan, Receiver};
use std::collections::HashMap;
use std::time::Duration;

/// How long spans may take to arrive (the test processes export every 100 ms).
pub const ARRIVAL_TIMEOUT: Duration = Duration::from_secs(30);
/// OTLP span kinds.
pub const INTERNAL: i32 = 1;
pub const SERVER: i32 = 2;
pub const CLIENT: i32 = 3;
pub const PRODUCER: i32 = 4;
pub const CONSUMER: i32 = 5;
/// The OTLP span status code of an error.
pub const ERROR: i32 = 2;

/// The spans of one trace, by span id.
pub struct Trace {
    pub spans: HashMap<String, ReceivedSpan>,
}

impl Trace {
    /// The spans of `all` in trace `trace_id`.
    pub fn of(all: &[ReceivedSpan], trace_id: &str) -> Trace {
        Trace { spans: all.iter().filter(|s| s.trace_id == trace_id).map(|s| (s.span_id.clone(), s.clone())).collect() }
    }

    /// The span `wanted` picks; panics, showing the trace, when there is none.
    pub fn find(&self, what: &str, wanted: impl Fn(&ReceivedSpan) -> bool) -> &ReceivedSpan {
        self.spans
            .values()
            .find(|span| wanted(span))
            .unwrap_or_else(|| panic!("no {what} in the trace:\n{}", self.dump()))
    }

    /// Whether `ancestor` is `span`'s parent, grandparent, ….
    pub fn descends(&self, span: &ReceivedSpan, ancestor: &ReceivedSpan) -> bool {
        let mut parent = span.parent_span_id.clone();
        while !parent.is_empty() {
            if parent == ancestor.span_id {
                return true;
            }
            parent = self.spans.get(&parent).map(|p| p.parent_span_id.clone()).unwrap_or_default();
        }
        false
    }

    /// One line per span, sorted, for a failure's message.
    pub fn dump(&self) -> String {
        let mut lines: Vec<String> = self
            .spans
            .values()
            .map(|s| {
                format!(
                    "  {} {} [{}] parent={} kind={} {:?}",
                    s.service, s.name, s.span_id, s.parent_span_id, s.kind, s.attributes
                )
            })
            .collect();
        lines.sort();
        lines.join("\n")
    }
}

/// Waits until `found` picks something from the spans received so far.
pub async fn wait_for<T>(receiver: &Receiver, what: &str, found: impl Fn(&[ReceivedSpan]) -> Option<T>) -> T {
    let deadline = tokio::time::Instant::now() + ARRIVAL_TIMEOUT;
    loop {
        let spans = receiver.spans();
        if let Some(value) = found(&spans) {
            return value;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{what} did not arrive within {ARRIVAL_TIMEOUT:?}; {} spans arrived",
            spans.len()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
