//! Objects whose stored shape differs from what a request addresses: custom resources
//! (stored in their CRD's storage version) and events.k8s.io/v1 Events (stored as the
//! core/v1 Events they are). Writes are moved into the stored shape by the strategy;
//! everything a client reads passes [`to_version`].

use crate::registry::{ResourceType, Strategy};
use serde_json::Value;

/// Moves a written object into the shape it is stored in.
pub fn to_storage(rt: &ResourceType, object: &mut Value) {
    if rt.custom.is_some() {
        crate::crd::objects::prepare_write(rt, object);
    } else if rt.strategy == Strategy::EventsV1 && object.get("apiVersion").and_then(Value::as_str) != Some("v1") {
        *object = protocol::events::core_from_v1(object);
    }
}

/// Shows a stored object as the request's version has it. Objects of other kinds
/// (Status answers) pass unchanged.
pub fn to_version(rt: &ResourceType, object: &mut Value) {
    if rt.custom.is_some() {
        crate::crd::objects::present(rt, object);
    } else if rt.strategy == Strategy::EventsV1
        && object.get("kind").and_then(Value::as_str) == Some("Event")
        && object.get("apiVersion").and_then(Value::as_str) == Some("v1")
    {
        *object = protocol::events::v1_from_core(object);
    }
}
