//! The wire and object model of Atoll, shared by every process and free of I/O beyond the
//! generated gRPC clients (which [`watcher`]'s driver and cache adapter call).
//!
//! A request meets these modules roughly in this order:
//! - [`path`]: `/clusters/<name-or-path>/…` — logical-cluster names and canonical paths
//!   (`root:org:team`).
//! - [`ring`]: which shard serves a logical cluster (a consistent hash ring), and random
//!   logical-cluster names.
//! - [`gvr`]: group, version, resource and kind identifiers.
//! - [`protobuf`]: Kubernetes protobuf request bodies (what kubectl's typed commands send)
//!   decoded into the JSON the rest of the request path works on.
//! - [`names`]: object-name, label and annotation validation with kube-apiserver's messages.
//! - [`meta`]: read and write `metadata` of an object held as JSON.
//! - [`events`]: core/v1 ⇄ events.k8s.io/v1 Events (one stored object, two APIs).
//! - [`jsonpath`]: the JSONPath subset of CRD printer columns and scale paths.
//! - [`selector`]: label and field selectors, parsed from query strings and matched.
//! - [`crd`]: CustomResourceDefinitions — validation, structural schemas, defaulting and
//!   validating custom resources against their schema, with kube-apiserver's messages.
//! - [`schema`]: walking an OpenAPI v3 schema over an object to find and prune unknown fields.
//! - [`managed`]: server-side apply and `metadata.managedFields` tracking (merge, prune,
//!   conflicts, field ownership of updates).
//! - [`openapi`]: the OpenAPI v3 documents served per group-version (what `kubectl apply`
//!   and `kubectl explain` read).
//! - [`types`]: typed structs of Atoll's own API groups (LogicalCluster, …).
//! - [`wellknown`]: annotation, finalizer and system names that are wire contracts.
//! - [`index`]: the gRPC index feed from shards to front-proxies.
//! - [`cache`]: the gRPC replication and list/watch services of the cache server.
//! - [`replication`]: which objects shards replicate to cache servers, and how replicas
//!   are keyed there.
//! - [`watcher`]: the one list → watch → relist-on-410 state machine, with failover and
//!   back-off, that every loop following a store or a cache server runs.
//!
//! Cargo features (all on by default) gate what only servers need: `grpc` (`cache`,
//! `index`, `replication` and the protoc build), `crd` and `protobuf`. The `kubectl ws`
//! plugin turns them off, so building it alone compiles neither tonic nor the CRD
//! validator.

#[cfg(feature = "grpc")]
pub mod cache;
#[cfg(feature = "crd")]
pub mod crd;
pub mod events;
pub mod gvr;
#[cfg(feature = "grpc")]
pub mod index;
pub mod jsonpath;
pub mod managed;
pub mod meta;
pub mod names;
pub mod openapi;
pub mod path;
#[cfg(feature = "protobuf")]
pub mod protobuf;
#[cfg(feature = "grpc")]
pub mod replication;
pub mod ring;
pub mod schema;
pub mod selector;
pub mod types;
pub mod watcher;
pub mod wellknown;
