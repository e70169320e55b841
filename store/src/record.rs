//! The change-log record, encoded with prost so the format is versionable.

use crate::{Event, EventKind, StoreError, Versioned};
use bytes::Bytes;
use prost::Message;

/// One committed op in the change log, stored under its resourceVersion.
#[derive(Clone, PartialEq, Message)]
pub struct LogRecord {
    /// The key the op changed.
    #[prost(bytes = "bytes", tag = "1")]
    pub key: Bytes,
    /// 1 = added, 2 = modified, 3 = deleted.
    #[prost(uint32, tag = "2")]
    pub kind: u32,
    /// The new value (absent for a delete).
    #[prost(bytes = "bytes", optional, tag = "3")]
    pub value: Option<Bytes>,
    /// The resourceVersion of the value this op replaced (0 when the key was new).
    #[prost(uint64, tag = "4")]
    pub prev_rv: u64,
    /// The value this op replaced, kept so that exact-RV lists can roll back and deleted
    /// objects can be shown to watchers.
    #[prost(bytes = "bytes", optional, tag = "5")]
    pub prev_value: Option<Bytes>,
}

impl LogRecord {
    /// Builds the record of an event. The new value is left out: it is stored once, in
    /// the objects column family while current and as the `prev_value` of the change that
    /// replaces it afterwards (see [`crate::keys::CF_SUCCESSORS`]).
    pub fn from_event(event: &Event) -> Self {
        let kind = match event.kind {
            EventKind::Added => 1,
            EventKind::Modified => 2,
            EventKind::Deleted => 3,
        };
        LogRecord {
            key: event.key.clone(),
            kind,
            value: None,
            prev_rv: event.prev.as_ref().map_or(0, |p| p.rv),
            prev_value: event.prev.as_ref().map(|p| p.value.clone()),
        }
    }

    /// Whether the change wrote a value (an add or a modify), which replay must look up.
    pub fn writes_value(&self) -> bool {
        self.kind == 1 || self.kind == 2
    }

    /// Turns a stored record back into the event committed at `rv`; `value` is the value it
    /// wrote, looked up by the caller.
    pub fn into_event(self, rv: u64, value: Option<Bytes>) -> Result<Event, StoreError> {
        let kind = match self.kind {
            1 => EventKind::Added,
            2 => EventKind::Modified,
            3 => EventKind::Deleted,
            other => return Err(StoreError::Corrupt(format!("log record kind {other} at rv {rv}"))),
        };
        let prev = self.prev_value.map(|value| Versioned { rv: self.prev_rv, value });
        Ok(Event { rv, key: self.key, kind, value: value.or(self.value), prev, cause: None })
    }

    /// Decodes a stored record.
    pub fn decode_bytes(bytes: &[u8]) -> Result<Self, StoreError> {
        LogRecord::decode(bytes).map_err(|e| StoreError::Corrupt(format!("log record: {e}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_round_trip_through_records() {
        let prev = Some(Versioned { rv: 3, value: Bytes::from_static(b"old") });
        for (kind, value, prev) in [
            (EventKind::Added, Some(Bytes::from_static(b"new")), None),
            (EventKind::Modified, Some(Bytes::from_static(b"new")), prev.clone()),
            (EventKind::Deleted, None, prev),
        ] {
            let event = Event { rv: 9, key: Bytes::from_static(b"k"), kind, value, prev, cause: None };
            let bytes = LogRecord::from_event(&event).encode_to_vec();
            let record = LogRecord::decode_bytes(&bytes).unwrap();
            assert_eq!(record.value, None, "values are not duplicated into the log");
            assert_eq!(record.writes_value(), event.value.is_some());
            assert_eq!(record.into_event(9, event.value.clone()).unwrap(), event);
        }
    }
}
