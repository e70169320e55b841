//! The cache server: a store of replicas of the few objects every shard must see
//! (APIExports, APIResourceSchemas, WorkspaceTypes, Shards, the RBAC that authorizes
//! their use), fed by shards over gRPC and read back by shards as wildcard list/watch
//! (cache informers). A cache server may push everything it holds to a parent cache
//! server, forming a hierarchy (regional caches under a global one).
//!
//! A request meets these modules in this order:
//! - [`server`] opens the store and runs the HTTPS listener (`security::https`); the
//!   [`state`] it builds (store, name, stop signal) is all that the modules below take;
//! - [`routes`] sends gRPC calls to the [`service`], answers `/healthz`, and names the
//!   caller from its client certificate; [`authz`] decides what that caller may do;
//! - the service dispatches each RPC to its module: [`replicate`] (a sender's stream of
//!   batches, applied by the rules of [`apply`] and acknowledged once durable), [`list`]
//!   and [`watch`];
//! - [`fence`] decides, per origin, which sender relays its newest replication session
//!   and may change its replicas;
//! - [`replicas`] is the only module that touches the store: replica and position keys,
//!   optimistic writes, and the purge of a deleted shard's replicas.
//!
//! With `--parent`, the [`uplink`] forwards this cache's own changes to a parent cache
//! and follows the parent's Shard deletions.
//!
//! The wire contract is `protocol::cache` (`protocol/proto/cache.proto`); keys
//! come from `protocol::replication`.

pub mod apply;
pub mod authz;
pub mod fence;
pub mod list;
pub mod metrics;
pub mod replicas;
pub mod replicate;
pub mod routes;
pub mod server;
pub mod service;
pub mod state;
pub mod uplink;
pub mod watch;

pub use server::{start, Config, Running};
