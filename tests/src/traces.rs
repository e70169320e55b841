//! Reading the traces a [`Receiver`] kept: span kinds and status codes as OTLP numbers
//! them, one trace's spans with their parent relations ([`Trace`]), waiting for spans
//! to arrive ([`wait_for`]), and the spans of one replication hop ([`replication_hop`]).

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

/// One replication hop: a batch span of `sender` with a link `links_to` picks, and the
/// receiving cache's apply span, which continues that batch (or links to it).
pub fn replication_hop(
    spans: &[ReceivedSpan],
    sender: &str,
    links_to: impl Fn(&(String, String)) -> bool,
) -> Option<(ReceivedSpan, ReceivedSpan)> {
    let send = spans.iter().find(|s| s.service == sender && s.kind == PRODUCER && s.links.iter().any(&links_to))?;
    let apply = spans.iter().find(|s| {
        s.service == "atoll-cache-server"
            && s.kind == CONSUMER
            && (s.parent_span_id == send.span_id || s.links.iter().any(|(_, span)| *span == send.span_id))
    })?;
    Some((send.clone(), apply.clone()))
}

/// An agent's apply to a member cluster, as one trace shows it.
pub struct AgentApply {
    /// The agent's unit of work that applied.
    pub work: ReceivedSpan,
    /// The client span of its PATCH to the member.
    pub call: ReceivedSpan,
}

/// Waits for the agent's unit of work `work` (`work.reconcile`, `agent.sync`) over
/// `object` whose trace holds the member shard's `patch configmaps` in logical cluster
/// `member`, and checks that the apply is the child of a PATCH client span of the agent
/// within that unit of work.
pub async fn agent_apply(receiver: &Receiver, work: &str, object: &str, member: &str) -> AgentApply {
    let is_member_apply = |s: &ReceivedSpan| {
        s.service == "atoll-shard"
            && s.kind == SERVER
            && s.name == "patch configmaps"
            && s.attribute("atoll.logical_cluster") == Some(member)
    };
    let what = format!("the agent's {work} of {object}, with the member's apply");
    let unit = wait_for(receiver, &what, |spans| {
        spans
            .iter()
            .filter(|s| s.service == "atoll-agent" && s.name == work && s.attribute("atoll.object") == Some(object))
            .find(|s| spans.iter().any(|m| m.trace_id == s.trace_id && is_member_apply(m)))
            .cloned()
    })
    .await;
    let trace = Trace::of(&receiver.spans(), &unit.trace_id);
    let applied = trace.find("the member's apply", is_member_apply);
    let call = trace.spans.get(&applied.parent_span_id).expect("the apply's parent is in the trace").clone();
    assert_eq!((call.service.as_str(), call.kind), ("atoll-agent", CLIENT), "{}", trace.dump());
    assert_eq!(call.attribute("http.request.method"), Some("PATCH"), "{call:?}");
    assert!(trace.descends(&call, &unit), "{}", trace.dump());
    AgentApply { work: unit, call }
}
