//! The front-proxy: one HTTPS endpoint for every workspace of an installation.
//!
//! A request meets these modules in this order:
//! - [`workers`] runs one single-threaded runtime per core, each accepting TLS
//!   connections (`security::https`, HTTP/1.1 and HTTP/2) on its own `SO_REUSEPORT`
//!   listener;
//! - [`proxy`] authenticates the caller ([`caller`]: client certificate or bearer token), resolves
//!   `/clusters/<path>` through the [`index`] (or [`home`] for `~`), and forwards to the
//!   hosting shard over mutual TLS ([`upstream`]) with the caller's identity in
//!   `X-Remote-*` headers, streaming both ways; refusals are [`status`] responses.
//!   When the shard does not answer, [`dead_shard`] says so only to callers who may see
//!   the workspace; while some shard's index has not arrived since the start,
//!   [`sync_gate`] decides which unresolved paths are 503 rather than 403.
//! - [`feed`] keeps the index current from every shard's gRPC index feed, and learns the
//!   shard set from root.
//! - [`metrics`] counts what happened.

pub mod caller;
pub mod dead_shard;
pub mod feed;
pub mod feed_lag;
pub mod home;
pub mod index;
pub mod metrics;
pub mod proxy;
pub mod status;
pub mod sync_gate;
pub mod upstream;
pub mod workers;
