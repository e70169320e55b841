//! Kubernetes Events written by the shard's controllers, the way client-go's
//! EventRecorder and its correlator write them, so that `kubectl describe` of a
//! Placement (or any object a controller acts on) and `kubectl get events` show what
//! the controller did.
//!
//! A controller holds one [`Recorder`] named after its component (`placement-scheduler`,
//! `fleet-hub`…) and calls [`Recorder::record`] with the object, the type, a reason and a
//! message. The [`correlator`] (pure) decides whether the event is dropped by the
//! per-object spam filter, folded into an Event written before (count and
//! `lastTimestamp` bumped) or written as a new core/v1 Event named
//! `<object name>.<nanoseconds in hex>`. The Event is written through the storage layer
//! into the object's logical cluster, in the object's namespace, or in `default` for a
//! cluster-scoped object, as kube does.
//!
//! Events are a courtesy: a failed write is logged and forgotten, never returned, so a
//! controller's pass never fails because of one.

pub mod correlator;

use apiserver::registry::{Core, ResourceType};
use apiserver::storage::{self, ObjectRef, WriteOptions};
use correlator::{Action, Correlator, EventKey, ObjectKey};
use parking_lot::Mutex;
use protocol::meta;
use serde_json::{json, Value};

/// Namespace of the Events about cluster-scoped objects.
const CLUSTER_SCOPED_NAMESPACE: &str = "default";

/// An Event's type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventType {
    /// Something expected happened.
    Normal,
    /// Something may need a person's attention.
    Warning,
}

impl EventType {
    fn as_str(self) -> &'static str {
        match self {
            EventType::Normal => "Normal",
            EventType::Warning => "Warning",
        }
    }
}

/// Writes the Events of one controller component of this shard.
pub struct Recorder {
    /// `source.component` and `reportingComponent`.
    component: String,
    /// `source.host` and `reportingInstance`: the shard's name.
    instance: String,
    correlator: Mutex<Correlator>,
}

impl Recorder {
    /// A recorder for `component` running on the shard named `instance`.
    pub fn new(component: &str, instance: &str) -> Recorder {
        Recorder { component: component.into(), instance: instance.into(), correlator: Mutex::default() }
    }

    /// Records an event about `object` (as stored, with apiVersion, kind and metadata)
    /// of logical cluster `cluster`. Errors are logged, never returned.
    pub async fn record(
        &self,
        core: &Core,
        cluster: &str,
        object: &Value,
        kind: EventType,
        reason: &str,
        message: &str,
    ) {
        let Some(events) = core.registry.get("", "v1", "events") else { return };
        let key = EventKey {
            object: object_key(cluster, object),
            kind: kind.as_str().into(),
            reason: reason.into(),
            message: message.into(),
        };
        let now = jiff::Timestamp::now();
        let action = self.correlator.lock().observe(&key, now);
        let written = match &action {
            Action::Drop => {
                tracing::debug!(%cluster, object = %key.object.name, reason, "event dropped by the spam filter");
                return;
            }
            Action::Create { name } => self.create(core, &events, cluster, object, &key, name).await,
            Action::Bump { name, count } => match self.bump(core, &events, cluster, &key, name, *count).await {
                // The Event went (deleted, or never written): start a new one.
                Err(e) if e.is_not_found() => {
                    let name = correlator::event_name(&key.object.name, now);
                    self.create(core, &events, cluster, object, &key, &name).await
                }
                other => other,
            },
        };
        if let Err(error) = written {
            self.correlator.lock().forget(&key);
            tracing::warn!(%cluster, object = %key.object.name, reason, error = %error.message, "event not written");
        }
    }

    async fn create(
        &self,
        core: &Core,
        events: &ResourceType,
        cluster: &str,
        object: &Value,
        key: &EventKey,
        name: &str,
    ) -> apiserver::rest::status::ApiResult<()> {
        let now = storage::now();
        let namespace = event_namespace(&key.object);
        let event = json!({
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": name, "namespace": namespace},
            "involvedObject": involved_object(object),
            "reason": key.reason,
            "message": key.message,
            "type": key.kind,
            "source": {"component": self.component, "host": self.instance},
            "firstTimestamp": now,
            "lastTimestamp": now,
            "count": 1,
            "eventTime": null,
            "reportingComponent": self.component,
            "reportingInstance": self.instance,
        });
        storage::create(core, events, cluster, event, WriteOptions::default()).await.map(|_| ())
    }

    async fn bump(
        &self,
        core: &Core,
        events: &ResourceType,
        cluster: &str,
        key: &EventKey,
        name: &str,
        count: u64,
    ) -> apiserver::rest::status::ApiResult<()> {
        let namespace = event_namespace(&key.object);
        let at = ObjectRef { cluster, namespace: Some(namespace), name };
        let now = storage::now();
        storage::guaranteed_update(core, events, &at, None, WriteOptions::default(), |old| {
            let mut new = old.clone();
            // Another writer (a restart that lost the count) may have counted further.
            let stored = old.get("count").and_then(Value::as_u64).unwrap_or(0);
            new["count"] = json!(count.max(stored + 1));
            new["lastTimestamp"] = json!(now);
            Ok(new)
        })
        .await
        .map(|_| ())
    }
}

fn event_namespace(object: &ObjectKey) -> &str {
    if object.namespace.is_empty() {
        CLUSTER_SCOPED_NAMESPACE
    } else {
        &object.namespace
    }
}

fn object_key(cluster: &str, object: &Value) -> ObjectKey {
    let field = |name: &str| object.get(name).and_then(Value::as_str).unwrap_or_default().to_string();
    ObjectKey {
        cluster: cluster.into(),
        api_version: field("apiVersion"),
        kind: field("kind"),
        namespace: meta::namespace(object).unwrap_or_default().into(),
        name: meta::name(object).unwrap_or_default().into(),
        uid: meta::meta_str(object, "uid").unwrap_or_default().into(),
    }
}

/// `involvedObject` as client-go's `GetReference` fills it.
fn involved_object(object: &Value) -> Value {
    let mut reference = json!({
        "apiVersion": object.get("apiVersion"),
        "kind": object.get("kind"),
        "name": meta::name(object),
        "uid": meta::meta_str(object, "uid"),
        "resourceVersion": meta::meta_str(object, "resourceVersion"),
    });
    if let Some(namespace) = meta::namespace(object) {
        reference["namespace"] = json!(namespace);
    }
    reference
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_of_cluster_scoped_objects_go_to_default() {
        let managed = json!({"apiVersion": "cluster.open-cluster-management.io/v1", "kind": "ManagedCluster",
            "metadata": {"name": "c1", "uid": "u1", "resourceVersion": "7"}});
        let key = object_key("lc", &managed);
        assert_eq!(event_namespace(&key), "default");
        let reference = involved_object(&managed);
        assert_eq!(reference.get("namespace"), None);
        assert_eq!(reference["resourceVersion"], "7");
        let placement = json!({"apiVersion": "cluster.open-cluster-management.io/v1beta1", "kind": "Placement",
            "metadata": {"name": "p", "namespace": "apps", "uid": "u2"}});
        assert_eq!(event_namespace(&object_key("lc", &placement)), "apps");
        assert_eq!(involved_object(&placement)["namespace"], "apps");
    }
}
