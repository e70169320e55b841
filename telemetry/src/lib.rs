//! Observability every Atoll process shares.
//!
//! - [`init`] sets up logging (stderr, `RUST_LOG`) and, when the standard `OTEL_*`
//!   variables ask for it, exports every `tracing` span as an OpenTelemetry span over OTLP
//!   (gRPC). Without them no exporter or OpenTelemetry layer is installed, and the
//!   helpers below do nothing.
//! - [`propagation`] carries a span's context between processes as a W3C `traceparent`:
//!   in HTTP headers, in gRPC metadata, and in a message field where one stream carries
//!   many units of work.
//! - [`Cause`] is the span context a queued piece of work remembers of the request that
//!   queued it, so the work's own span can continue or link to it.

mod cause;
mod init;
mod log_format;
pub mod propagation;

pub use cause::Cause;
pub use init::{enabled, init, Instance, Telemetry};
