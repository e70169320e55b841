//! kcp's TMC kinds, served in every logical cluster with kcp's groups, names and printer
//! columns so kcp manifests apply unchanged: `workload.kcp.io/v1alpha1` SyncTargets (a
//! member cluster an agent syncs to) and `scheduling.kcp.io/v1alpha1` Locations (a set of
//! SyncTargets in an inventory workspace) and Placements (which Location a workspace's
//! namespaces go to). Both inventory kinds are replicated to the cache servers
//! (`protocol::replication`), so placement on any shard can read them. The feature adds
//! its own rows; their schemas are Atoll's kcp types (`protocol::types`).

pub mod controller;
pub mod guard;
pub mod heartbeat;
pub mod location;
pub mod namespaces;
pub mod placement;
pub mod schedule;
pub mod view;

use apiserver::registry::strategy::{Causes, Strategy};
use apiserver::registry::Core;
use apiserver::registry::{age_column, builtin, col, strings, wide, Cell, Column, Registry, ResourceType};
use apiserver::rest::status::ApiResult;
use protocol::meta;
use protocol::selector::LabelSelector;
use protocol::types::{
    INTERNAL_SYNC_TARGET_KEY_LABEL, LOCATION_KIND, LOCATION_RESOURCE, PLACEMENT_KIND, PLACEMENT_PHASES,
    PLACEMENT_RESOURCE, SCHEDULING_KCP_GROUP, SCHEDULING_KCP_VERSION, SYNC_TARGET_KIND, SYNC_TARGET_RESOURCE,
    WORKLOAD_KCP_GROUP, WORKLOAD_KCP_VERSION,
};
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;

/// Timing of the TMC controllers (`--placement-removal-grace-seconds`,
/// `--sync-target-heartbeat-threshold-seconds`).
#[derive(Debug, Clone, Copy)]
pub struct Settings {
    /// How long a SyncTarget that is no longer chosen keeps a namespace's label after its
    /// deletion annotation is written (kcp: 5 s).
    pub removal_grace: Duration,
    /// How old a SyncTarget's last heartbeat may be before it is not Ready (kcp: 1 min).
    pub heartbeat_threshold: Duration,
}

impl Default for Settings {
    fn default() -> Self {
        Settings { removal_grace: Duration::from_secs(5), heartbeat_threshold: Duration::from_secs(60) }
    }
}

/// Adds the SyncTarget, Location and Placement rows, and the sync views of `shard`.
pub fn register(registry: &mut Registry, shard: std::sync::Weak<crate::state::Shard>) {
    registry.add_rows(rows());
    registry.add_virtual_workspace(Arc::new(view::SyncView { shard }));
    registry.add_write_admission(Arc::new(guard::Reserved));
}

fn row(group: &str, resource: &str, kind: &str, columns: Vec<apiserver::registry::Column>) -> ResourceType {
    let schema = format!("io.kcp.{}.v1alpha1.{kind}", group.split('.').next().unwrap_or_default());
    ResourceType {
        categories: strings(&["kcp"]),
        subresources: strings(&["status"]),
        strategy: Arc::new(Tmc { kind: kind.to_string() }),
        columns,
        ..builtin(group, "v1alpha1", resource, &kind.to_lowercase(), kind, false, &schema)
    }
}

/// A column shown from `kubectl get -o wide` on, at kcp's `priority`.
fn shown_at(priority: i32, name: &str, description: &str, cell: Cell) -> Column {
    Column { priority, ..wide(name, description, cell) }
}

fn rows() -> Vec<ResourceType> {
    debug_assert_eq!((WORKLOAD_KCP_VERSION, SCHEDULING_KCP_VERSION), ("v1alpha1", "v1alpha1"));
    let ready = ".status.conditions[?(@.type==\"Ready\")].status".to_string();
    vec![
        row(
            WORKLOAD_KCP_GROUP,
            SYNC_TARGET_RESOURCE,
            SYNC_TARGET_KIND,
            vec![
                wide("Location", "The name of the sync target.", Cell::Name),
                shown_at(2, "Ready", "Whether the sync target is ready.", Cell::JsonPath(ready)),
                shown_at(
                    3,
                    "Synced API resources",
                    "The resources the agent syncs.",
                    Cell::Pointer("/status/syncedResources"),
                ),
                shown_at(
                    4,
                    "Key",
                    "The sync target's key.",
                    Cell::Pointer("/metadata/labels/internal.workload.kcp.io~1key"),
                ),
                age_column(),
            ],
        ),
        row(
            SCHEDULING_KCP_GROUP,
            LOCATION_RESOURCE,
            LOCATION_KIND,
            vec![
                col("Resource", "string", "Type of the instances.", Cell::Pointer("/spec/resource/resource")),
                col(
                    "Available",
                    "string",
                    "Available instances in this location.",
                    Cell::Pointer("/status/availableInstances"),
                ),
                col("Instances", "string", "Instances in this location.", Cell::Pointer("/status/instances")),
                col(
                    "Labels",
                    "string",
                    "The common labels of this location.",
                    Cell::Pointer("/metadata/annotations/scheduling.kcp.io~1labels"),
                ),
                age_column(),
            ],
        ),
        row(SCHEDULING_KCP_GROUP, PLACEMENT_RESOURCE, PLACEMENT_KIND, vec![age_column()]),
    ]
}

/// The kinds' validation: the label selectors must parse, the phase must be kcp's.
#[derive(Debug)]
struct Tmc {
    kind: String,
}

impl Strategy for Tmc {
    fn tracks_generation(&self) -> bool {
        true
    }

    /// A SyncTarget is labelled with its key (`internal.workload.kcp.io/key`), as kcp's
    /// admission does, so tools find a target from the key its namespaces carry.
    fn admit(&self, _core: &Core, _rt: &ResourceType, cluster: &str, object: &mut Value) -> ApiResult<()> {
        if self.kind == SYNC_TARGET_KIND {
            let key = ::placement::sync_target_key(cluster, meta::name(object).unwrap_or_default());
            meta::set_map_entry(object, "labels", INTERNAL_SYNC_TARGET_KEY_LABEL, Some(&key));
        }
        Ok(())
    }

    /// The key label stays what admission wrote.
    fn prepare_update(&self, _rt: &ResourceType, old: &Value, new: &mut Value, _sub: Option<&str>) -> ApiResult<()> {
        if self.kind == SYNC_TARGET_KIND {
            let key = meta::labels(old).get(INTERNAL_SYNC_TARGET_KEY_LABEL).cloned();
            meta::set_map_entry(new, "labels", INTERNAL_SYNC_TARGET_KEY_LABEL, key.as_deref());
        }
        Ok(())
    }

    fn validate(&self, _rt: &ResourceType, _old: Option<&Value>, object: &Value) -> Causes {
        let mut causes = Vec::new();
        let mut selector = |field: String, value: Option<&Value>| {
            if let Some(value) = value.filter(|v| !v.is_null()) {
                if let Err(e) = LabelSelector::from_label_selector_json(value) {
                    causes.push((field, format!("Invalid value: {e}")));
                }
            }
        };
        match self.kind.as_str() {
            LOCATION_KIND => selector("spec.instanceSelector".into(), object.pointer("/spec/instanceSelector")),
            PLACEMENT_KIND => {
                let selectors = object.pointer("/spec/locationSelectors").and_then(Value::as_array);
                for (i, value) in selectors.into_iter().flatten().enumerate() {
                    selector(format!("spec.locationSelectors[{i}]"), Some(value));
                }
                selector("spec.namespaceSelector".into(), object.pointer("/spec/namespaceSelector"));
                let phase = object.pointer("/status/phase").and_then(Value::as_str).unwrap_or_default();
                if !phase.is_empty() && !PLACEMENT_PHASES.contains(&phase) {
                    let supported: Vec<String> = PLACEMENT_PHASES.iter().map(|p| format!("{p:?}")).collect();
                    causes.push((
                        "status.phase".into(),
                        format!("Unsupported value: {phase:?}: supported values: {}", supported.join(", ")),
                    ));
                }
            }
            _ => {}
        }
        causes
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn rows_name_kcp_schemas_and_selectors_are_checked() {
        for row in rows() {
            assert!(protocol::openapi::builtin_components().contains_key(&row.schema_name), "{}", row.schema_name);
        }
        let placement = &rows()[2];
        let bad = json!({"spec": {"locationSelectors": [{"matchLabels": {"cloud": "aws"}}, {"matchExpressions": [{"key": "x", "operator": "Sometimes"}]}]},
            "status": {"phase": "Lost"}});
        let causes = placement.strategy.validate(placement, None, &bad);
        let fields: Vec<&str> = causes.iter().map(|(f, _)| f.as_str()).collect();
        assert_eq!(fields, ["spec.locationSelectors[1]", "status.phase"], "{causes:?}");
    }
}
