//! The placement's status written with KubeFleet's events about it: each condition that
//! changed gives its event ([`placement_events`]), written through
//! the shard's event recorder, so a pass that writes nothing new records nothing. The
//! events about MemberClusters ([`crate::fleet::member_events`]) go out here too.

use super::*;
use crate::events::EventType;
use crate::fleet::member_events::MemberEvent;
use crate::fleet::placement_events::placement_events;

impl Hub<'_> {
    /// Writes `wanted` as the placement's status when it says something new, and records
    /// the events the change deserves; returns the placement as stored, if written.
    pub(super) async fn write_placement_status(&self, crp: &Value, wanted: Value) -> anyhow::Result<Option<Value>> {
        let before = crp.get("status").cloned().unwrap_or(Value::Null);
        let Some(written) = self.write_status(&self.rows.placements, crp, wanted).await? else {
            return Ok(None);
        };
        let after = written.get("status").cloned().unwrap_or(Value::Null);
        for event in placement_events(&before, &after) {
            let kind = if event.warning { EventType::Warning } else { EventType::Normal };
            self.recorder.record(self.shard, self.cluster, &written, kind, event.reason, &event.message).await;
        }
        Ok(Some(written))
    }

    /// Records an event about a MemberCluster (as stored: with its uid).
    pub(super) async fn record_member_event(&self, member: &Value, event: MemberEvent) {
        let kind = if event.warning { EventType::Warning } else { EventType::Normal };
        self.member_recorder.record(self.shard, self.cluster, member, kind, event.reason, &event.message).await;
    }
}
