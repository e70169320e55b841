//! The shard: Kubernetes REST for many logical clusters over one RocksDB store. The
//! generic API-server core (request parsing, the resource table, storage, verbs,
//! discovery) is the `apiserver` crate; this crate adds kcp's features to it through the
//! core's rows, strategies and hooks, and serves it.
//!
//! [`start`] assembles and starts a shard from its [`start::Config`] (the binary's flags),
//! in-process. A request meets these modules in this order:
//! - [`server`]: TLS (rustls) and HTTP/1.1 + HTTP/2 connections; `security::tls` and `security::pki`
//!   provide the certificates, generated on first start.
//! - [`api`]: parses the path (`apiserver::rest::request_info`), authenticates (`security::authn`),
//!   resolves `/clusters/<name>`, authorizes ([`authz`]: RBAC of the target logical
//!   cluster and workspace access) and routes to discovery, a virtual workspace, an
//!   access review or one of the core's verbs (`apiserver::verbs`); records metrics.
//! - [`assemble`]: the only module that names every feature. It adds each feature's rows
//!   and strategies ([`apiserver::registry::strategy::Strategy`]: kube's create/update
//!   strategies plus after-commit hooks) to the core's table and starts the controllers.
//! - [`controllers`]: namespace and logical-cluster deletion, the garbage collector
//!   (ownerReferences, cascading deletes) and the workspace scheduler,
//!   driven by store watches through the shared watcher ([`store_watch`] adapts the store
//!   to `protocol::watcher`); [`tenancy`] holds workspace admission and types.
//! - [`crd`]: CustomResourceDefinitions — each cluster's custom resources in the registry,
//!   their schemas, versions and cleanup.
//! - [`workloads`]: the kube workload kinds (Pods, Deployments, Services, …) and their
//!   rules; [`tmc`]: kcp's transparent multi-cluster placement (Placements, Locations,
//!   SyncTargets, the sync views the agents read).
//! - [`membership`]: this shard's Shard object in root and the shard set (the ring);
//!   [`peer`] makes the mutual-TLS calls to other shards; [`paths`] resolves canonical
//!   paths of the clusters hosted here.
//! - [`bootstrap`]: the root logical cluster and the admin kubeconfig.
//! - [`apis`]: the `apis.kcp.io` group's admission (schemas, references, export identities).
//! - [`binding`]: APIBindings — resolving exports through the fallback lister, the `bind`
//!   check, and serving bound resources from bound CRDs.
//! - [`views`]: what the virtual workspaces share (view names, the clusters a view request
//!   addresses).
//! - [`export_view`]: the APIExport virtual workspace (a provider's view of every bound
//!   instance of its API on this shard) and the endpoint-slice URLs that publish it.
//! - [`replication`]: pushes the objects every shard must see to cache servers (with the
//!   shared sender of crate `sender`);
//!   [`cache`] reads other shards' back (cache informers, the fallback lister).
//! - [`events`]: core/v1 Events the controllers write (client-go's recorder and
//!   correlator: aggregation of repeats, a per-object spam filter).
//! - [`index_feed`]: the gRPC stream of this shard's logical clusters and workspaces that
//!   front-proxies route by.

mod api;
mod apis;
mod assemble;
mod authz;
mod binding;
mod bootstrap;
pub mod cache;
mod controllers;
mod crd;
mod events;
mod export_view;
mod fleet;
mod index_feed;
mod membership;
mod metrics;
mod ocm;
mod paths;
mod peer;
mod replication;
mod server;
pub mod start;
mod state;
mod store_watch;
mod tenancy;
mod tmc;
mod views;
mod workloads;
