//! The one replication sender. A shard pushes its replicated objects to its cache servers,
//! and a cache server pushes everything it holds to its parents, with the same code:
//!
//! - [`run`] fails over between the targets (the shared policy of
//!   [`protocol::watcher::Failover`]) and runs one session at a time;
//! - a session says Hello, and from the position the target answers either resumes the
//!   local store's change stream or first makes the target equal to the local store (a
//!   full sync, [`protocol::watcher::start`] decides); then it forwards every change,
//!   moves the position forward when idle, and repairs drift on a timer;
//! - up to [`IN_FLIGHT_MAX`] batches travel unacknowledged; the target acknowledges a
//!   batch only once it is durable (fsync), and resumes from the last durable position;
//! - [`plan`] is the pure part: batching with one limit, how positions ride on batches,
//!   and the window of unacknowledged batches.
//!
//! What differs between a shard and a cache server (which store keys, what a store event
//! becomes, how the two sides are compared) is the [`Outbox`] each implements.

mod link;
mod metrics;
pub mod plan;
mod session;

pub use metrics::LagMetrics;
pub use plan::IN_FLIGHT_MAX;
pub use session::{run, Outbox, Target};
