//! The OpenAPI v3 documents a kube-apiserver serves, built per logical cluster.
//!
//! A client meets them in this order:
//! 1. [`discovery_root`] is `GET /openapi/v3`: one entry per group-version, each pointing at
//!    that group-version's document with a content hash (so clients can cache it).
//! 2. [`group_version_document`] is `GET /openapi/v3/apis/<group>/<version>`: the REST
//!    operations of each resource plus every schema they reference.
//! 3. [`builtin_components`] are the schemas of the built-in kinds Atoll serves, generated
//!    once from `k8s-openapi` (and [`crate::types`]) and reshaped to what kube publishes.
//!
//! What stock kubectl v1.32 reads from these documents, and therefore must hold:
//! - `serverRelativeURL` starts with `/openapi/v3/` and does *not* carry the
//!   `/clusters/<name>` prefix: client-go sees the `/openapi/v3` root and re-adds the path
//!   of its kubeconfig server URL itself (`AbsPath`), see [`discovery_root`].
//! - Every PATCH operation of a kind carries `x-kubernetes-group-version-kind` (an object)
//!   and a `fieldValidation` parameter `in: query` directly in its own `parameters` (path
//!   level parameters are not looked at). kubectl's `queryParamVerifierV3` takes the first
//!   PATCH operation it finds for the kind, in Go's random map order, to decide whether the
//!   server validates fields; a single PATCH operation without the parameter (say on
//!   `/status`) makes kubectl fall back to client-side validation at random.
//! - Kind schemas carry `x-kubernetes-group-version-kind` (an array): `kubectl explain` and
//!   kubectl's OpenAPI-v3 strategic-merge patching find a kind's schema by it.
//! - The PATCH request body lists `application/strategic-merge-patch+json` only for kinds
//!   compiled into kube: kubectl then computes strategic merge patches from the schema's
//!   `x-kubernetes-patch-*` extensions; for other kinds it falls back to JSON merge patch.
//!
//! Files: `discovery` builds the root document and its hash, `document` the group-version
//! documents, `builtin` the built-in component schemas, and `components` holds the
//! components keys, `$ref` helpers and schema shaping the other three share.

mod builtin;
mod components;
mod discovery;
mod document;

pub use builtin::{builtin_components, builtin_schema, schema_name_for};
pub use components::{
    composition, ref_name, schema_ref, DELETE_OPTIONS_SCHEMA, GVK_EXTENSION, LIST_META_SCHEMA, OBJECT_META_SCHEMA,
    PATCH_SCHEMA, PRESERVE_UNKNOWN_FIELDS, SCHEMA_REF_PREFIX, STATUS_SCHEMA,
};
pub use discovery::{discovery_root, document_hash};
pub use document::{group_version_document, lookup_schema, OpenApiResource};
