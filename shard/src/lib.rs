//! The shard: Kubernetes REST for many logical clusters over one RocksDB store.
//!
//! [`start`] assembles and starts a shard from its [`start::Config`] (the binary's flags),
//! in-process. A request meets these modules in this order:
//! - [`server`]: TLS (rustls) and HTTP/1.1 + HTTP/2 connections; `security::tls` and `security::pki`
//!   provide the certificates, generated on first start.
//! - [`api`]: parses the path ([`http::request_info`]), authenticates (`security::authn`),
//!   resolves `/clusters/<name>`, authorizes ([`authz`]: RBAC of the target logical
//!   cluster and workspace access) and routes to discovery or a verb; records metrics.
//! - [`discovery`]: `/api`, `/apis`, aggregated discovery, `/version`, OpenAPI v3.
//! - [`verbs`]: one module per REST verb; they decode bodies, negotiate formats
//!   ([`http::negotiate`], [`table`]) and call [`storage`].
//! - [`storage`]: create / guaranteed update / delete-with-finalizers over the store,
//!   with per-resource behaviour from [`registry`] and [`strategy`] (kind rules in
//!   [`kinds`]), keys and codec from
//!   [`objects`], patches from [`patch`], unknown-field pruning from [`validation`],
//!   field ownership and server-side apply from [`managed_fields`].
//! - [`controllers`]: namespace and logical-cluster deletion, the garbage collector
//!   (ownerReferences, cascading deletes) and the workspace scheduler,
//!   driven by store watches through the shared watcher ([`store_watch`] adapts the store
//!   to `protocol::watcher`); [`tenancy`] holds workspace admission and types.
//! - [`strategy`]: the generic steps of every write around the row's
//!   [`registry::strategy::Strategy`] (kube's create/update strategies plus after-commit
//!   hooks), and the plain Kubernetes kinds' strategies; each feature implements the trait
//!   in its own module and [`assemble`] registers them at start-up.
//! - [`crd`]: CustomResourceDefinitions — each cluster's custom resources in the registry,
//!   their schemas, versions, published OpenAPI and cleanup.
//! - [`membership`]: this shard's Shard object in root and the shard set (the ring);
//!   [`peer`] makes the mutual-TLS calls to other shards; [`paths`] resolves canonical
//!   paths of the clusters hosted here.
//! - [`bootstrap`]: the root logical cluster and the admin kubeconfig.
//! - [`apis`]: the `apis.kcp.io` group's admission (schemas, references, export identities).
//! - [`binding`]: APIBindings — resolving exports through the fallback lister, the `bind`
//!   check, and serving bound resources from bound CRDs.
//! - [`replication`]: pushes the objects every shard must see to cache servers (with the
//!   shared sender of crate `sender`);
//!   [`cache`] reads other shards' back (cache informers, the fallback lister).
//! - [`index_feed`]: the gRPC stream of this shard's logical clusters and workspaces that
//!   front-proxies route by.

pub mod api;
pub mod apis;
pub mod assemble;
pub mod authz;
pub mod binding;
pub mod bootstrap;
pub mod cache;
pub mod conditions;
pub mod controllers;
pub mod crd;
pub mod discovery;
pub mod http;
pub mod index_feed;
pub mod kinds;
pub mod managed_fields;
pub mod membership;
pub mod metrics;
pub mod namespace_defaults;
pub mod objects;
pub mod patch;
pub mod paths;
pub mod peer;
pub mod registry;
pub mod replication;
pub mod server;
pub mod start;
pub mod state;
pub mod storage;
pub mod store_watch;
pub mod strategy;
pub mod table;
pub mod tenancy;
pub mod tmc;
pub mod validation;
pub mod verbs;
pub mod workloads;
