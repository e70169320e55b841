//! The built-in component schemas: generated once with schemars from `k8s-openapi` (and
//! [`crate::types`]), then fixed up where k8s-openapi's rendering differs from what
//! kube-apiserver publishes.

use std::borrow::Cow;
use std::sync::OnceLock;

use k8s_openapi::api::{apps, autoscaling, batch, coordination, core, discovery, events, networking, policy, rbac};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1 as apiextensions;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1 as meta;
use k8s_openapi::apimachinery::pkg::runtime::RawExtension;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use schemars::generate::{SchemaGenerator, SchemaSettings};
use schemars::{JsonSchema, Schema};
use serde_json::{json, Map, Value};

use super::components::{
    gvk_value, list_schema, with_gvk, DELETE_OPTIONS_SCHEMA, PATCH_SCHEMA, PRESERVE_UNKNOWN_FIELDS, STATUS_SCHEMA,
};
use crate::types::{
    ApiBinding, ApiExport, ApiExportEndpointSlice, ApiResourceSchema, Location, LogicalCluster, Placement, Shard,
    SyncTarget, Workspace, WorkspaceType,
};

/// A built-in kind: its identity, its schema's components key and how to generate it.
struct BuiltinKind {
    group: &'static str,
    version: &'static str,
    kind: &'static str,
    schema_name: fn() -> Cow<'static, str>,
    generate: fn(&mut SchemaGenerator) -> Schema,
}

/// Builds a [`BuiltinKind`] from a type implementing both `k8s_openapi::Resource` and
/// `JsonSchema`, so group, version and kind cannot drift from the type.
macro_rules! builtin_kind {
    ($ty:ty) => {
        BuiltinKind {
            group: <$ty as k8s_openapi::Resource>::GROUP,
            version: <$ty as k8s_openapi::Resource>::VERSION,
            kind: <$ty as k8s_openapi::Resource>::KIND,
            schema_name: <$ty as JsonSchema>::schema_name,
            generate: SchemaGenerator::subschema_for::<$ty>,
        }
    };
}

/// The kinds Atoll serves with built-in storage, in discovery order.
const BUILTIN_KINDS: &[BuiltinKind] = &[
    builtin_kind!(core::v1::Namespace),
    builtin_kind!(core::v1::ConfigMap),
    builtin_kind!(core::v1::Secret),
    builtin_kind!(core::v1::ServiceAccount),
    builtin_kind!(core::v1::Event),
    builtin_kind!(events::v1::Event),
    // The workload kinds: stored and validated, run by no controller (a logical cluster is
    // a control plane, as in kcp).
    builtin_kind!(core::v1::Pod),
    builtin_kind!(core::v1::Service),
    builtin_kind!(core::v1::Endpoints),
    builtin_kind!(core::v1::PersistentVolumeClaim),
    builtin_kind!(core::v1::ResourceQuota),
    builtin_kind!(core::v1::LimitRange),
    builtin_kind!(core::v1::PodTemplate),
    builtin_kind!(core::v1::ReplicationController),
    builtin_kind!(apps::v1::Deployment),
    builtin_kind!(apps::v1::StatefulSet),
    builtin_kind!(apps::v1::DaemonSet),
    builtin_kind!(apps::v1::ReplicaSet),
    builtin_kind!(apps::v1::ControllerRevision),
    builtin_kind!(batch::v1::Job),
    builtin_kind!(batch::v1::CronJob),
    builtin_kind!(networking::v1::Ingress),
    builtin_kind!(networking::v1::IngressClass),
    builtin_kind!(networking::v1::NetworkPolicy),
    builtin_kind!(policy::v1::PodDisruptionBudget),
    builtin_kind!(autoscaling::v2::HorizontalPodAutoscaler),
    builtin_kind!(autoscaling::v1::HorizontalPodAutoscaler),
    builtin_kind!(autoscaling::v1::Scale),
    builtin_kind!(discovery::v1::EndpointSlice),
    builtin_kind!(coordination::v1::Lease),
    builtin_kind!(rbac::v1::Role),
    builtin_kind!(rbac::v1::RoleBinding),
    builtin_kind!(rbac::v1::ClusterRole),
    builtin_kind!(rbac::v1::ClusterRoleBinding),
    builtin_kind!(apiextensions::CustomResourceDefinition),
    builtin_kind!(LogicalCluster),
    builtin_kind!(Shard),
    builtin_kind!(Workspace),
    builtin_kind!(WorkspaceType),
    builtin_kind!(ApiExport),
    builtin_kind!(ApiResourceSchema),
    builtin_kind!(ApiExportEndpointSlice),
    builtin_kind!(ApiBinding),
    builtin_kind!(SyncTarget),
    builtin_kind!(Location),
    builtin_kind!(Placement),
];

/// Schemas every document may need besides the kinds: operation bodies and replies, list
/// metadata, and the special forms (Quantity, IntOrString, RawExtension) future kinds and
/// custom resources reference.
const SUPPORT_SCHEMAS: &[fn(&mut SchemaGenerator) -> Schema] = &[
    SchemaGenerator::subschema_for::<meta::ListMeta>,
    SchemaGenerator::subschema_for::<meta::DeleteOptions>,
    SchemaGenerator::subschema_for::<meta::Status>,
    SchemaGenerator::subschema_for::<meta::Patch>,
    SchemaGenerator::subschema_for::<RawExtension>,
    SchemaGenerator::subschema_for::<Quantity>,
    SchemaGenerator::subschema_for::<IntOrString>,
];

/// Meta kinds that carry a GVK in kube's documents; kube lists one per group, the core one
/// is what clients look for.
const META_KINDS: &[(&str, &str)] = &[(DELETE_OPTIONS_SCHEMA, "DeleteOptions"), (STATUS_SCHEMA, "Status")];

/// All built-in component schemas, keyed like kube's (`io.k8s.api.core.v1.ConfigMap`), with
/// OpenAPI 3.0 `$ref`s (`#/components/schemas/…`), generated on first use.
///
/// Covers core/v1 Namespace, ConfigMap, Secret, ServiceAccount, Event; events.k8s.io/v1
/// Event; coordination.k8s.io/v1 Lease; rbac.authorization.k8s.io/v1 Role, RoleBinding,
/// ClusterRole, ClusterRoleBinding; apiextensions.k8s.io/v1 CustomResourceDefinition;
/// core.kcp.io/v1alpha1 LogicalCluster, Shard; tenancy.kcp.io/v1alpha1 Workspace,
/// WorkspaceType; apis.kcp.io/v1alpha1 APIExport, APIResourceSchema,
/// APIExportEndpointSlice, APIBinding — each with its List — plus everything they
/// reference and the schemas operations name (DeleteOptions, Status, Patch).
///
/// Generated from k8s-openapi with schemars' OpenAPI 3 settings, then reshaped where
/// k8s-openapi and kube differ: Quantity and IntOrString use kube's `oneOf` forms, JSON
/// and the JSONSchemaPropsOr* unions are bare descriptions, `metadata` is never required,
/// and the list-merge extensions kubectl's strategic merge patch needs are present.
/// RawExtension, JSON, FieldsV1 and Patch additionally carry
/// `x-kubernetes-preserve-unknown-fields: true` (kube leaves them as bare `type: object`
/// or typeless, meaning "anything"): [`crate::schema`] then keeps their contents instead of
/// pruning them, and clients ignore the extension.
pub fn builtin_components() -> &'static Map<String, Value> {
    static COMPONENTS: OnceLock<Map<String, Value>> = OnceLock::new();
    COMPONENTS.get_or_init(generate_builtin_components)
}

/// The built-in component `name` ([`builtin_components`]). Every write resolves its kind's
/// schema and ObjectMeta's by name, and the components map hashes its ~50-byte names
/// with SipHash (serde_json's map is not configurable); this index of the same schemas
/// hashes them with FxHash.
pub fn builtin_schema(name: &str) -> Option<&'static Value> {
    static INDEX: OnceLock<rustc_hash::FxHashMap<&'static str, &'static Value>> = OnceLock::new();
    INDEX
        .get_or_init(|| builtin_components().iter().map(|(name, schema)| (name.as_str(), schema)).collect())
        .get(name)
        .copied()
}

/// Components key of the schema for a built-in kind or its list, e.g. (`""`, `v1`,
/// `ConfigMapList`) → `io.k8s.api.core.v1.ConfigMapList`.
pub fn schema_name_for(group: &str, version: &str, kind: &str) -> Option<String> {
    BUILTIN_KINDS.iter().filter(|builtin| builtin.group == group && builtin.version == version).find_map(|builtin| {
        let name = (builtin.schema_name)();
        if builtin.kind == kind {
            Some(name.into_owned())
        } else if kind.strip_suffix("List") == Some(builtin.kind) {
            Some(format!("{name}List"))
        } else {
            None
        }
    })
}

fn generate_builtin_components() -> Map<String, Value> {
    let mut generator = SchemaSettings::openapi3().into_generator();
    for builtin in BUILTIN_KINDS {
        (builtin.generate)(&mut generator);
    }
    for generate in SUPPORT_SCHEMAS {
        generate(&mut generator);
    }
    let mut components = generator.take_definitions(true);
    for (name, schema) in components.iter_mut() {
        if name.starts_with(ATOLL_SCHEMA_PREFIX) {
            unwrap_descriptions(schema);
        }
    }
    apply_kube_forms(&mut components);
    for schema in components.values_mut() {
        drop_required_metadata(schema);
    }
    apply_list_semantics(&mut components);
    for builtin in BUILTIN_KINDS {
        let name = (builtin.schema_name)().into_owned();
        let gvk = gvk_value(builtin.group, builtin.version, builtin.kind);
        if let Some(schema) = components.get_mut(&name) {
            drop_type_meta_defaults(schema);
            *schema = with_gvk(schema.take(), gvk);
        }
        let list_gvk = gvk_value(builtin.group, builtin.version, &format!("{}List", builtin.kind));
        let list = list_schema(&name, builtin.kind, list_gvk);
        components.insert(format!("{name}List"), list);
    }
    for (name, kind) in META_KINDS {
        if let Some(schema) = components.get_mut(*name) {
            *schema = with_gvk(schema.take(), gvk_value("", "v1", kind));
        }
    }
    components.sort_keys();
    components
}

/// Schemas derived from Atoll's own types ([`crate::types`]) are named after their
/// reversed API group, as kube names custom resource schemas.
const ATOLL_SCHEMA_PREFIX: &str = "io.kcp.";

/// Joins the hard-wrapped lines doc comments bring into descriptions, keeping paragraph
/// breaks: kube's descriptions are unwrapped and `kubectl explain` re-wraps them to the
/// terminal, so a kept line break would print as a ragged early break.
fn unwrap_descriptions(schema: &mut Value) {
    match schema {
        Value::Object(map) => {
            for (key, value) in map.iter_mut() {
                match value {
                    Value::String(text) if key == "description" => *text = unwrap_lines(text),
                    _ => unwrap_descriptions(value),
                }
            }
        }
        Value::Array(values) => values.iter_mut().for_each(unwrap_descriptions),
        _ => {}
    }
}

fn unwrap_lines(text: &str) -> String {
    let paragraphs: Vec<String> = text.split("\n\n").map(|paragraph| paragraph.replace('\n', " ")).collect();
    paragraphs.join("\n\n")
}

/// Serde defaults on `apiVersion` and `kind` of Atoll's kinds leak into the schema as
/// `default`s; kube's kind schemas have none, and a server defaulting from the schema
/// must not invent type meta.
fn drop_type_meta_defaults(schema: &mut Value) {
    for field in ["apiVersion", "kind"] {
        if let Some(Value::Object(property)) = schema.pointer_mut(&format!("/properties/{field}")) {
            property.remove("default");
        }
    }
}

/// Replaces k8s-openapi's rendering of special types by kube's OpenAPI v3 rendering.
fn apply_kube_forms(components: &mut Map<String, Value>) {
    let forms = [
        (
            "io.k8s.apimachinery.pkg.api.resource.Quantity",
            json!({ "oneOf": [{ "type": "string" }, { "type": "number" }] }),
        ),
        (
            "io.k8s.apimachinery.pkg.util.intstr.IntOrString",
            json!({ "format": "int-or-string", "oneOf": [{ "type": "integer" }, { "type": "string" }] }),
        ),
        ("io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSON", json!({ PRESERVE_UNKNOWN_FIELDS: true })),
        ("io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrArray", json!({})),
        ("io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrBool", json!({})),
        ("io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrStringArray", json!({})),
        ("io.k8s.apimachinery.pkg.runtime.RawExtension", json!({ "type": "object", PRESERVE_UNKNOWN_FIELDS: true })),
        ("io.k8s.apimachinery.pkg.apis.meta.v1.FieldsV1", json!({ "type": "object", PRESERVE_UNKNOWN_FIELDS: true })),
        (PATCH_SCHEMA, json!({ "type": "object", PRESERVE_UNKNOWN_FIELDS: true })),
    ];
    for (name, form) in forms {
        if let Some(schema) = components.get_mut(name) {
            *schema = keep_description(schema, form);
        }
    }
}

/// `form` with the description of `schema`, which k8s-openapi copied from kube.
fn keep_description(schema: &Value, form: Value) -> Value {
    let mut result = Map::new();
    if let Some(description) = schema.get("description") {
        result.insert("description".into(), description.clone());
    }
    if let Value::Object(form) = form {
        result.extend(form);
    }
    Value::Object(result)
}

/// k8s-openapi marks `metadata` required because its Rust field is not optional; kube never
/// requires it (`kubectl create` of a manifest without metadata.name must reach the server
/// to get kube's error, not a client-side schema error).
fn drop_required_metadata(schema: &mut Value) {
    let Some(map) = schema.as_object_mut() else {
        return;
    };
    let Some(Value::Array(required)) = map.get_mut("required") else {
        return;
    };
    required.retain(|field| field != "metadata");
    if required.is_empty() {
        map.remove("required");
    }
}

/// The list and map semantics kube-apiserver publishes in its OpenAPI v3 documents (from
/// its Go types' `patchStrategy`, `patchMergeKey`, `listType`, `listMapKey` and
/// `mapType` tags), which k8s-openapi does not carry: extracted once from Kubernetes
/// 1.33's published documents into `list_semantics.json`, keyed by component and property
/// (`""` for the schema itself). Strategic merge patch and field management read them.
const LIST_SEMANTICS: &str = include_str!("list_semantics.json");

fn apply_list_semantics(components: &mut Map<String, Value>) {
    let Ok(Value::Object(semantics)) = serde_json::from_str::<Value>(LIST_SEMANTICS) else {
        unreachable!("list_semantics.json is a JSON object");
    };
    for (schema_name, properties) in semantics {
        let (Some(schema), Value::Object(properties)) = (components.get_mut(&schema_name), properties) else {
            continue;
        };
        for (property, extensions) in properties {
            let target = if property.is_empty() {
                Some(&mut *schema)
            } else {
                schema.pointer_mut(&format!("/properties/{}", property.replace('~', "~0").replace('/', "~1")))
            };
            if let (Some(Value::Object(target)), Value::Object(extensions)) = (target, extensions) {
                target.extend(extensions);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::openapi::components::{assert_refs_resolve, schema_ref, GVK_EXTENSION, OBJECT_META_SCHEMA};

    #[test]
    fn schema_names_for_builtin_kinds() {
        let cases = [
            ("", "v1", "ConfigMap", Some("io.k8s.api.core.v1.ConfigMap")),
            ("", "v1", "ConfigMapList", Some("io.k8s.api.core.v1.ConfigMapList")),
            ("", "v1", "Event", Some("io.k8s.api.core.v1.Event")),
            ("events.k8s.io", "v1", "Event", Some("io.k8s.api.events.v1.Event")),
            ("coordination.k8s.io", "v1", "Lease", Some("io.k8s.api.coordination.v1.Lease")),
            (
                "rbac.authorization.k8s.io",
                "v1",
                "ClusterRoleBindingList",
                Some("io.k8s.api.rbac.v1.ClusterRoleBindingList"),
            ),
            (
                "apiextensions.k8s.io",
                "v1",
                "CustomResourceDefinition",
                Some("io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinition"),
            ),
            ("core.kcp.io", "v1alpha1", "LogicalCluster", Some("io.kcp.core.v1alpha1.LogicalCluster")),
            ("core.kcp.io", "v1alpha1", "ShardList", Some("io.kcp.core.v1alpha1.ShardList")),
            ("tenancy.kcp.io", "v1alpha1", "Workspace", Some("io.kcp.tenancy.v1alpha1.Workspace")),
            ("tenancy.kcp.io", "v1alpha1", "WorkspaceTypeList", Some("io.kcp.tenancy.v1alpha1.WorkspaceTypeList")),
            ("core.kcp.io", "v1alpha1", "Workspace", None),
            ("", "v1", "Pod", Some("io.k8s.api.core.v1.Pod")),
            ("apps", "v1", "DeploymentList", Some("io.k8s.api.apps.v1.DeploymentList")),
            ("", "v1", "Node", None),
            ("apps", "v1", "ConfigMap", None),
        ];
        for (group, version, kind, expected) in cases {
            assert_eq!(schema_name_for(group, version, kind).as_deref(), expected, "{group}/{version} {kind}");
        }
    }

    #[test]
    fn every_builtin_kind_and_list_carries_its_gvk() {
        let components = builtin_components();
        for builtin in BUILTIN_KINDS {
            for kind in [builtin.kind.to_owned(), format!("{}List", builtin.kind)] {
                let name = schema_name_for(builtin.group, builtin.version, &kind).unwrap();
                let gvks = &components[&name][GVK_EXTENSION];
                assert_eq!(
                    gvks,
                    &json!([{"group": builtin.group, "kind": kind, "version": builtin.version}]),
                    "{name}"
                );
            }
        }
    }

    #[test]
    fn builtin_components_are_openapi_3_0() {
        let components = builtin_components();
        assert_refs_resolve(&Value::Object(components.clone()), components);
        for (name, schema) in components {
            visit_schema(schema, &mut |node| {
                for forbidden in ["$schema", "$defs", "definitions", "const", "examples", "nullable", "prefixItems"] {
                    assert!(node.get(forbidden).is_none(), "{forbidden} in {name}: {node:?}");
                }
                if let Some(kind) = node.get("type") {
                    assert!(kind.is_string(), "type must be one string in {name}");
                }
                if node.contains_key("$ref") {
                    assert_eq!(node.len(), 1, "OpenAPI 3.0 ignores siblings of $ref, in {name}");
                }
            });
        }
    }

    #[test]
    fn special_types_come_out_as_kube_publishes_them() {
        let components = builtin_components();
        let cases = [
            (
                "io.k8s.apimachinery.pkg.apis.meta.v1.Time",
                &["type", "format"][..],
                json!({"type": "string", "format": "date-time"}),
            ),
            (
                "io.k8s.apimachinery.pkg.util.intstr.IntOrString",
                &["format", "oneOf"][..],
                json!({"format": "int-or-string", "oneOf": [{"type": "integer"}, {"type": "string"}]}),
            ),
            (
                "io.k8s.apimachinery.pkg.api.resource.Quantity",
                &["oneOf"][..],
                json!({"oneOf": [{"type": "string"}, {"type": "number"}]}),
            ),
            (
                "io.k8s.apimachinery.pkg.runtime.RawExtension",
                &["type", PRESERVE_UNKNOWN_FIELDS][..],
                json!({"type": "object", PRESERVE_UNKNOWN_FIELDS: true}),
            ),
            (
                "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSON",
                &["type", PRESERVE_UNKNOWN_FIELDS][..],
                json!({PRESERVE_UNKNOWN_FIELDS: true}),
            ),
        ];
        for (name, keys, expected) in cases {
            let schema = &components[name];
            let picked: Map<String, Value> =
                keys.iter().filter_map(|key| Some(((*key).to_owned(), schema.get(*key)?.clone()))).collect();
            assert_eq!(Value::Object(picked), expected, "{name}");
            assert!(schema["description"].is_string(), "{name} keeps kube's description");
        }
        let config_map = &components["io.k8s.api.core.v1.ConfigMap"];
        assert!(config_map.get("required").is_none(), "metadata is not required");
        assert_eq!(config_map["properties"]["metadata"]["allOf"][0], schema_ref(OBJECT_META_SCHEMA));
        let finalizers = &components[OBJECT_META_SCHEMA]["properties"]["finalizers"];
        assert_eq!(finalizers["x-kubernetes-patch-strategy"], "merge");
    }

    #[test]
    fn logical_cluster_schema_uses_kcp_field_names() {
        let components = builtin_components();
        let cluster = &components["io.kcp.core.v1alpha1.LogicalCluster"];
        assert!(cluster["description"].as_str().unwrap().starts_with("LogicalCluster describes"));
        let spec = &components["io.kcp.core.v1alpha1.LogicalClusterSpec"]["properties"];
        for field in ["directlyDeletable", "owner", "initializers"] {
            assert!(spec[field]["description"].is_string(), "spec.{field}");
        }
        let status = &components["io.kcp.core.v1alpha1.LogicalClusterStatus"]["properties"];
        for field in ["URL", "phase", "conditions", "initializers"] {
            assert!(status[field]["description"].is_string(), "status.{field}");
        }
        assert_eq!(status["phase"]["enum"], json!(["Scheduling", "Initializing", "Ready", "Unavailable"]));
        let url_description = status["URL"]["description"].as_str().unwrap();
        assert!(!url_description.contains('\n'), "doc comment wrapping is joined");
        assert!(cluster["properties"]["apiVersion"].get("default").is_none());
        let owner = &components["io.kcp.core.v1alpha1.LogicalClusterOwner"];
        assert_eq!(owner["required"], json!(["apiVersion", "resource", "name", "cluster", "uid"]));
    }

    /// The `properties` of the Atoll component schema `io.kcp.<name>`, asserting that each
    /// of `fields` is there with a description for `kubectl explain`.
    fn kcp_properties<'c>(components: &'c Map<String, Value>, name: &str, fields: &[&str]) -> &'c Value {
        let properties = &components[&format!("io.kcp.{name}")]["properties"];
        for field in fields {
            assert!(properties[field]["description"].is_string(), "{name}.{field}");
        }
        properties
    }

    #[test]
    fn workspace_schema_uses_kcp_field_names() {
        let components = builtin_components();
        let workspace = &components["io.kcp.tenancy.v1alpha1.Workspace"];
        assert!(workspace["description"].as_str().unwrap().starts_with("Workspace is"));
        assert_eq!(
            workspace[GVK_EXTENSION],
            json!([{"group": "tenancy.kcp.io", "kind": "Workspace", "version": "v1alpha1"}])
        );
        assert!(workspace["properties"]["kind"].get("default").is_none());
        assert_eq!(workspace["properties"]["spec"]["allOf"][0], schema_ref("io.kcp.tenancy.v1alpha1.WorkspaceSpec"));
        let spec =
            kcp_properties(components, "tenancy.v1alpha1.WorkspaceSpec", &["type", "location", "cluster", "URL"]);
        assert_eq!(spec["type"]["allOf"][0], schema_ref("io.kcp.tenancy.v1alpha1.WorkspaceTypeReference"));
        assert!(components["io.kcp.tenancy.v1alpha1.WorkspaceSpec"].get("required").is_none(), "all optional");
        let location = kcp_properties(components, "tenancy.v1alpha1.WorkspaceLocation", &["selector"]);
        assert_eq!(location["selector"]["allOf"][0], schema_ref("io.k8s.apimachinery.pkg.apis.meta.v1.LabelSelector"));
        let status =
            kcp_properties(components, "tenancy.v1alpha1.WorkspaceStatus", &["phase", "conditions", "initializers"]);
        assert_eq!(status["phase"]["enum"], json!(["Scheduling", "Initializing", "Ready", "Unavailable"]));
        let reference = &components["io.kcp.tenancy.v1alpha1.WorkspaceTypeReference"];
        kcp_properties(components, "tenancy.v1alpha1.WorkspaceTypeReference", &["name", "path"]);
        assert_eq!(reference["required"], json!(["name"]));
    }

    #[test]
    fn workspace_type_schema_uses_kcp_field_names() {
        let components = builtin_components();
        let workspace_type = &components["io.kcp.tenancy.v1alpha1.WorkspaceType"];
        assert!(workspace_type["description"].as_str().unwrap().starts_with("WorkspaceType describes"));
        let fields = [
            "initializer",
            "extend",
            "additionalWorkspaceLabels",
            "defaultChildWorkspaceType",
            "limitAllowedChildren",
            "limitAllowedParents",
            "defaultAPIBindings",
        ];
        let spec = kcp_properties(components, "tenancy.v1alpha1.WorkspaceTypeSpec", &fields);
        let selector = schema_ref("io.kcp.tenancy.v1alpha1.WorkspaceTypeSelector");
        assert_eq!(spec["limitAllowedChildren"]["allOf"][0], selector);
        assert_eq!(spec["limitAllowedParents"]["allOf"][0], selector);
        assert_eq!(spec["defaultAPIBindings"]["items"], schema_ref("io.kcp.tenancy.v1alpha1.APIExportReference"));
        kcp_properties(components, "tenancy.v1alpha1.WorkspaceTypeExtension", &["with"]);
        kcp_properties(components, "tenancy.v1alpha1.WorkspaceTypeSelector", &["none", "types"]);
        kcp_properties(components, "tenancy.v1alpha1.APIExportReference", &["path", "export"]);
        assert_eq!(components["io.kcp.tenancy.v1alpha1.APIExportReference"]["required"], json!(["export"]));
        kcp_properties(components, "tenancy.v1alpha1.WorkspaceTypeStatus", &["conditions", "virtualWorkspaces"]);
        kcp_properties(components, "tenancy.v1alpha1.VirtualWorkspace", &["url"]);
    }

    #[test]
    fn shard_schema_uses_kcp_field_names() {
        let components = builtin_components();
        let shard = &components["io.kcp.core.v1alpha1.Shard"];
        assert!(shard["description"].as_str().unwrap().starts_with("Shard describes"));
        assert_eq!(shard[GVK_EXTENSION], json!([{"group": "core.kcp.io", "kind": "Shard", "version": "v1alpha1"}]));
        assert_eq!(shard["properties"]["spec"]["default"], json!({}), "no empty baseURL as default");
        kcp_properties(components, "core.v1alpha1.ShardSpec", &["baseURL", "externalURL", "virtualWorkspaceURL"]);
        assert_eq!(components["io.kcp.core.v1alpha1.ShardSpec"]["required"], json!(["baseURL"]));
        let status = kcp_properties(components, "core.v1alpha1.ShardStatus", &["capacity", "conditions"]);
        assert_eq!(
            status["capacity"]["additionalProperties"],
            schema_ref("io.k8s.apimachinery.pkg.api.resource.Quantity")
        );
        let list = &components["io.kcp.core.v1alpha1.ShardList"];
        assert_eq!(list["properties"]["items"]["items"], schema_ref("io.kcp.core.v1alpha1.Shard"));
    }

    #[test]
    fn kcp_kind_schemas_reference_only_existing_schemas() {
        let components = builtin_components();
        let kinds = ["core.v1alpha1.Shard", "tenancy.v1alpha1.Workspace", "tenancy.v1alpha1.WorkspaceType"];
        for kind in kinds {
            for part in ["", "Status", "List"] {
                assert_refs_resolve(&components[&format!("io.kcp.{kind}{part}")], components);
            }
        }
        // ShardSpec holds only strings; the other specs reference their parts.
        for spec in ["tenancy.v1alpha1.WorkspaceSpec", "tenancy.v1alpha1.WorkspaceTypeSpec"] {
            assert_refs_resolve(&components[&format!("io.kcp.{spec}")], components);
        }
    }

    #[test]
    fn apis_schemas_use_kcp_field_names() {
        let components = builtin_components();
        for kind in ["APIExport", "APIResourceSchema", "APIExportEndpointSlice", "APIBinding"] {
            let schema = &components[&format!("io.kcp.apis.v1alpha1.{kind}")];
            assert_eq!(schema[GVK_EXTENSION], json!([{"group": "apis.kcp.io", "kind": kind, "version": "v1alpha1"}]));
            assert_refs_resolve(schema, components);
            assert_refs_resolve(&components[&format!("io.kcp.apis.v1alpha1.{kind}List")], components);
        }
        let spec = &["latestResourceSchemas", "identity", "maximalPermissionPolicy", "permissionClaims"];
        kcp_properties(components, "apis.v1alpha1.APIExportSpec", spec);
        let status = &["identityHash", "conditions", "virtualWorkspaces"];
        kcp_properties(components, "apis.v1alpha1.APIExportStatus", status);
        kcp_properties(components, "apis.v1alpha1.APIResourceSchemaSpec", &["group", "names", "scope", "versions"]);
        let version = kcp_properties(
            components,
            "apis.v1alpha1.APIResourceVersion",
            &["name", "served", "storage", "schema", "subresources", "additionalPrinterColumns"],
        );
        // The schema is kept whole: pruning must never reach into it.
        assert_eq!(version["schema"][PRESERVE_UNKNOWN_FIELDS], json!(true));
        kcp_properties(components, "apis.v1alpha1.BindingReference", &["export"]);
        kcp_properties(components, "apis.v1alpha1.ExportBindingReference", &["path", "name"]);
        assert_eq!(components["io.kcp.apis.v1alpha1.ExportBindingReference"]["required"], json!(["name"]));
        let binding_status = &["phase", "apiExportClusterName", "boundResources", "conditions"];
        kcp_properties(components, "apis.v1alpha1.APIBindingStatus", binding_status);
        kcp_properties(components, "apis.v1alpha1.BoundAPIResourceSchema", &["name", "UID", "identityHash"]);
        kcp_properties(components, "apis.v1alpha1.APIExportEndpointSliceStatus", &["endpoints"]);
    }

    /// Calls `check` on `schema` and every subschema position below it (not on maps of
    /// property names, which may legitimately be named `$schema` or `nullable`).
    fn visit_schema(schema: &Value, check: &mut dyn FnMut(&Map<String, Value>)) {
        let Some(map) = schema.as_object() else {
            return;
        };
        check(map);
        if let Some(Value::Object(properties)) = map.get("properties") {
            properties.values().for_each(|property| visit_schema(property, check));
        }
        for key in ["items", "additionalProperties", "not"] {
            if let Some(subschema) = map.get(key) {
                visit_schema(subschema, check);
            }
        }
        for key in ["allOf", "anyOf", "oneOf"] {
            if let Some(Value::Array(subschemas)) = map.get(key) {
                subschemas.iter().for_each(|subschema| visit_schema(subschema, check));
            }
        }
    }
}
