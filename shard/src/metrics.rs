//! Prometheus metrics, served as text at `/metrics`.

use apiserver::metrics::CoreMetrics;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;
use std::sync::atomic::Ordering;
use store::Store;

/// ClusterResourcePlacements the Fleet hub controller passed (decided, wrote and
/// reported) since the shard started; the controller counts, `/metrics` shows.
pub static FLEET_PLACEMENT_PASSES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Labels of a served request.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RequestLabels {
    /// Kubernetes verb, or the endpoint for non-resource requests.
    pub verb: String,
    /// Resource, empty for non-resource requests.
    pub resource: String,
    /// HTTP status code.
    pub code: String,
}

/// Labels of a workspace scheduling retry.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RetryLabels {
    /// `redraw` (the drawn shard left, or the name was taken), `unreachable` (the target
    /// shard did not answer), `refused` (it answered with an error) or `failed` (a step
    /// on this shard failed).
    pub reason: &'static str,
}

/// Labels of a garbage-collector write.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct GcLabels {
    /// `delete`, `orphan` (a reference stripped from a dependent), `remove_owner_references`,
    /// `remove_finalizer` or `unblock`.
    pub action: String,
}

/// Labels of an authorization decision.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct AuthorizationLabels {
    /// `allowed` or `denied`.
    pub decision: &'static str,
    /// `masters`, `owner`, `rbac`, `workspace_access` or `no_rule`.
    pub reason: &'static str,
}

/// The shard's metrics.
pub struct Metrics {
    /// Requests served.
    pub requests: Family<RequestLabels, Counter>,
    /// Request latency (watches excluded: they last as long as the client wants).
    pub request_seconds: Family<RequestLabels, Histogram>,
    /// Shards this shard knows (its ring's size).
    pub ring_shards: Gauge,
    /// Writes of the garbage collector, by action.
    pub gc_actions: Family<GcLabels, Counter>,
    /// Authorization decisions on requests, by decision and reason.
    pub authorization_decisions: Family<AuthorizationLabels, Counter>,
    /// Workspace scheduling: from a Workspace's creation until its scheduler sees it Ready.
    pub workspace_scheduling_seconds: Histogram,
    /// Scheduling steps that had to be tried again, by why.
    pub workspace_scheduling_retries: Family<RetryLabels, Counter>,
    /// Replication lag to each cache: a change's commit here until the cache acknowledged it.
    pub replication_lag: sender::LagMetrics,
    fleet_placement_passes: Counter,
    registry: Registry,
}

impl Metrics {
    /// Registers every metric, the API-server core's among them.
    pub fn new(core: &CoreMetrics, store: &Store) -> Self {
        let mut registry = Registry::default();
        let requests = Family::<RequestLabels, Counter>::default();
        let request_seconds = Family::<RequestLabels, Histogram>::new_with_constructor(|| {
            Histogram::new(exponential_buckets(0.0005, 2.0, 16))
        });
        let ring_shards = Gauge::default();
        let gc_actions = Family::<GcLabels, Counter>::default();
        let authorization_decisions = Family::<AuthorizationLabels, Counter>::default();
        let fleet_placement_passes = Counter::default();
        let workspace_scheduling_seconds = Histogram::new(exponential_buckets(0.001, 2.0, 18));
        let workspace_scheduling_retries = Family::<RetryLabels, Counter>::default();
        let replication_lag = sender::LagMetrics::default();
        // Kubernetes' own names for the request metrics, so dashboards made for
        // kube-apiserver read them; Atoll's own metrics are `atoll_*`.
        registry.register("apiserver_request", "Requests served, by verb, resource and code", requests.clone());
        registry.register(
            "apiserver_request_duration_seconds",
            "Request latency by verb, resource and code (watches excluded)",
            request_seconds.clone(),
        );
        registry.register("atoll_watches_started", "Watches started", core.watches_started.clone());
        registry.register("atoll_watches_active", "Watches streaming now", core.watches_active.clone());
        registry.register("atoll_ring_shards", "Shards in this shard's consistent-hash ring", ring_shards.clone());
        registry.register("atoll_gc_actions", "Writes of the garbage collector, by action", gc_actions.clone());
        registry.register(
            "atoll_authorization_decisions",
            "Authorization decisions on requests, by decision and reason",
            authorization_decisions.clone(),
        );
        store.metrics().register(&mut registry);
        registry.register(
            "atoll_workspace_scheduling_seconds",
            "Time from a Workspace's creation until its scheduler saw it Ready",
            workspace_scheduling_seconds.clone(),
        );
        registry.register(
            "atoll_workspace_scheduling_retries",
            "Workspace scheduling steps tried again, by reason",
            workspace_scheduling_retries.clone(),
        );
        replication_lag.register(&mut registry);
        registry.register(
            "atoll_fleet_placement_passes",
            "ClusterResourcePlacements the Fleet hub controller decided, wrote and reported",
            fleet_placement_passes.clone(),
        );
        Metrics {
            requests,
            request_seconds,
            ring_shards,
            gc_actions,
            authorization_decisions,
            workspace_scheduling_seconds,
            workspace_scheduling_retries,
            replication_lag,
            fleet_placement_passes,
            registry,
        }
    }

    /// Renders the text exposition format, bringing the Fleet counter up to date first.
    pub fn render(&self) -> String {
        let passes = FLEET_PLACEMENT_PASSES.load(Ordering::Relaxed);
        catch_up(&self.fleet_placement_passes, passes);
        let mut out = String::new();
        if prometheus_client::encoding::text::encode(&mut out, &self.registry).is_err() {
            out.push_str("# encoding metrics failed\n");
        }
        out
    }
}

/// Moves a counter up to a monotonically growing source value.
fn catch_up(counter: &Counter, source: u64) {
    let behind = source.saturating_sub(counter.get());
    if behind > 0 {
        counter.inc_by(behind);
    }
}
