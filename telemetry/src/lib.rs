//! Observability every Atoll process shares.
//!
//! - [`init`] sets up logging (stderr, `RUST_LOG`) and, when the standard `OTEL_*`
//!   variables ask for it, exports every `tracing` span as an OpenTelemetry span over OTLP
//!   (gRPC). Without them no exporter or OpenTelemetry layer is installed, and the
//!   helpers below do nothing.
//! - [`propagation`] carries a span's context between processes as a W3C `traceparent`:
//!   in HTTP headers, in gRPC metadata, and in a message field where one stream carries
//!   many units of work.
//! - [`Decision`] is the sampling decision a server makes for a request before it builds
//!   the request's span, so that an unsampled request pays for no span.
//! - [`Cause`] is the span context a queued piece of work remembers of the request that
//!   queued it, so the work's own span can continue or link to it.

mod cause;
mod init;
mod log_format;
pub mod propagation;
mod sampling;

pub use cause::Cause;
pub use init::{enabled, init, Instance, Telemetry};
pub use sampling::Decision;
