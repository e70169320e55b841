//! The end-to-end harness: real Atoll processes driven the way users drive them.
//!
//! Every end-to-end test and benchmark starts real binaries and talks to them over
//! HTTPS, so what is tested is what ships. The modules, in the order a test meets them:
//!
//! - [`binary`] finds a workspace binary (`atoll-shard`, …) next to the running test
//!   executable, so tests never build anything themselves.
//! - [`shard`] starts an `atoll-shard` in a temporary data dir ([`ShardProcess`]), waits
//!   until it is ready, and stops, kills or restarts it. Every wait is bounded and every
//!   failure carries the tail of `shard.log`.
//! - [`front_proxy`] starts an `atoll-front-proxy` in front of an installation.
//! - [`installation`] starts a root shard, further shards and optionally a front-proxy
//!   and a hierarchy of cache servers.
//! - [`cache`] starts `atoll-cache-server` processes ([`CacheServerProcess`]), reads and
//!   tampers with their replicas over gRPC, and compares a cache with the shards' sources.
//! - [`kubeconfig`] reads the `admin.kubeconfig` the shard writes, and writes kubeconfigs
//!   for other users.
//! - [`certs`] mints client certificates for other users from the shard's client CA.
//! - [`kubectl`] wraps stock `kubectl` ([`Kubectl`]) with the shard's kubeconfig.
//! - [`tls_http`] is a raw HTTPS client ([`TlsHttp`]) for requests no well-behaved
//!   client would send, and for benchmarks that need one connection per worker.
//! - [`etcd`] starts Debian's etcd for comparison benchmarks.
//! - [`nginx`] starts Debian's nginx as a TLS reverse proxy in front of a shard, the
//!   baseline of the front-proxy benchmark.
//! - [`otlp`] receives the OpenTelemetry spans processes export ([`otlp::Receiver`]), for
//!   the tracing test and the benchmarks' tracing-on runs; [`traces`] reads what it kept
//!   (one trace's spans and their parents, waiting for spans to arrive).
//! - [`fleet_hub`] loads a Fleet hub as the Fleet benchmarks do: MemberClusters joined
//!   and heartbeated as their agents would, waits that watch, what placements wrote.
//! - [`fleet_members`] sets up what the Fleet end-to-end tests share: a hub workspace
//!   behind the front-proxy and member clusters with real agents joined to it.
//! - [`placement`] is what the Fleet, OCM and pacing tests read and write alike
//!   (conditions, MemberClusters, the clusters bindings or decisions hold).
//! - [`process`] owns child processes so that nothing outlives the test that started it.
//! - [`compose`] brings the docker-compose installation up under a project of the
//!   caller's own and takes it down again, for the compose test and the chaos `hosts`
//!   scenario.

pub mod agent;
pub mod apis;
pub mod binary;
pub mod cache;
pub mod certs;
pub mod compose;
pub mod etcd;
pub mod fleet_hub;
pub mod fleet_members;
pub mod front_proxy;
pub mod installation;
pub mod kubeconfig;
pub mod kubectl;
pub mod nginx;
pub mod otlp;
pub mod placement;
pub mod ports;
pub mod process;
pub mod shard;
pub mod tls_http;
pub mod traces;

pub use binary::binary;
pub use cache::{CacheClient, CacheServerOptions, CacheServerProcess, CacheTopology};
pub use certs::mint_client_identity;
pub use etcd::EtcdProcess;
pub use kubeconfig::AdminKubeconfig;
pub use kubectl::{Kubectl, Output};
pub use shard::{ShardOptions, ShardProcess};
pub use tls_http::{ClientIdentity, HttpResponse, TlsConnection, TlsHttp};

/// The runtime of a benchmark's load generator: two workers and few blocking threads,
/// because the machine has two cores and the servers under test need them more.
pub fn load_generator_runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    use anyhow::Context;
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .max_blocking_threads(4)
        .enable_all()
        .build()
        .context("start the tokio runtime")
}
