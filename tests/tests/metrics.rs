//! Every process serves Prometheus text with the figures operators watch: request latency
//! by verb, resource and code, the store's group commit, workspace scheduling, the
//! replication lag to each cache, the cache's own view, and the front-proxy's index lag.

use std::time::Duration;

use http::StatusCode;
use tests::cache::CacheTopology;
use tests::installation::{create_workspace, wait_workspace_ready, Installation, InstallationOptions};
use tests::TlsHttp;

const TIMEOUT: Duration = Duration::from_secs(30);

/// The value of the sample `name` whose labels include every one of `labels`, summed
/// over the series that match.
fn sample(text: &str, name: &str, labels: &[&str]) -> Option<f64> {
    let mut found = None;
    for line in text.lines().filter(|line| !line.starts_with('#')) {
        let Some((series, value)) = line.rsplit_once(' ') else { continue };
        let (metric, rest) = series.split_once('{').unwrap_or((series, ""));
        if metric != name || !labels.iter().all(|label| rest.contains(label)) {
            continue;
        }
        if let Ok(value) = value.parse::<f64>() {
            found = Some(found.unwrap_or(0.0) + value);
        }
    }
    found
}

/// Waits until `/metrics` at `http` has `name` with `labels` at a value of at least one.
async fn wait_counted(http: &TlsHttp, what: &str, name: &str, labels: &[&str]) -> String {
    let deadline = tokio::time::Instant::now() + TIMEOUT;
    loop {
        let response = http.get("/metrics").await.expect("GET /metrics");
        assert_eq!(response.status, StatusCode::OK, "{what}: {}", response.text());
        let text = response.text();
        if sample(&text, name, labels).is_some_and(|value| value >= 1.0) {
            return text;
        }
        assert!(tokio::time::Instant::now() < deadline, "{what}: no {name}{labels:?} ≥ 1 within {TIMEOUT:?}:\n{text}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_process_serves_the_figures_operators_watch() {
    let options = InstallationOptions {
        extra_shards: 1,
        front_proxy: true,
        caches: Some(CacheTopology::single()),
        ..InstallationOptions::default()
    };
    let mut installation = Installation::start_with(options).await.expect("start the installation");
    create_workspace(&installation.root, "root", "measured").await.expect("create a workspace");
    wait_workspace_ready(&installation.root, "root", "measured", TIMEOUT).await.expect("the workspace goes Ready");
    let export = serde_json::json!({
        "apiVersion": "apis.kcp.io/v1alpha1", "kind": "APIExport", "metadata": {"name": "measured"}, "spec": {},
    });
    let created =
        installation.root.http().post_json("/clusters/root/apis/apis.kcp.io/v1alpha1/apiexports", &export).await;
    assert_eq!(created.expect("POST the APIExport").status, StatusCode::CREATED);

    // The root shard: requests by verb, resource and code with their latency, the store's
    // group commit, the workspace's scheduling and the replication lag to the cache.
    let root = installation.root.http();
    let text = wait_counted(&root, "root shard", "atoll_replication_lag_seconds_count", &["to=\""]).await;
    let created = ["verb=\"create\"", "resource=\"workspaces\"", "code=\"201\""];
    assert!(sample(&text, "apiserver_request_total", &created).is_some_and(|v| v >= 1.0), "{text}");
    assert!(sample(&text, "apiserver_request_duration_seconds_count", &created).is_some_and(|v| v >= 1.0), "{text}");
    assert!(sample(&text, "atoll_workspace_scheduling_seconds_count", &[]).is_some_and(|v| v >= 1.0), "{text}");
    assert!(sample(&text, "atoll_store_batch_ops_count", &[]).is_some_and(|v| v >= 1.0), "{text}");
    assert!(sample(&text, "atoll_store_write_seconds_count", &[]).is_some_and(|v| v >= 1.0), "{text}");
    assert!(sample(&text, "atoll_watches_active", &[]).is_some(), "{text}");

    // A scraper in kube's monitoring group reads them too; any other user gets a 403 that
    // says who may.
    let as_user = |user: &str, groups: &[&str]| {
        let identity = installation.user_identity(user, groups).expect("a client certificate");
        installation.root.http_as(Some(&identity)).expect("a client")
    };
    let scraped = as_user("prometheus", &["system:monitoring"]).get("/metrics").await.expect("GET /metrics");
    assert_eq!(scraped.status, StatusCode::OK, "{}", scraped.text());
    assert!(sample(&scraped.text(), "atoll_store_batch_ops_count", &[]).is_some(), "{}", scraped.text());
    let refused = as_user("bob", &["dev"]).get("/metrics").await.expect("GET /metrics as bob");
    assert_eq!(refused.status, StatusCode::FORBIDDEN, "{}", refused.text());
    assert!(refused.text().contains("system:monitoring"), "{}", refused.text());

    // The cache: only for callers with a certificate; what each sender replicated, and its
    // own store.
    let cache = installation.cache(tests::cache::topology::SINGLE).expect("the cache");
    let anonymous = TlsHttp::new(&cache.url(), cache.ca_pem().as_bytes(), None).expect("an anonymous client");
    let refused = anonymous.get("/metrics").await.expect("GET /metrics without a certificate");
    assert_eq!(refused.status, StatusCode::UNAUTHORIZED, "{}", refused.text());
    let admin = TlsHttp::new(&cache.url(), cache.ca_pem().as_bytes(), Some(cache.admin_identity())).expect("a client");
    let text = wait_counted(&admin, "cache", "atoll_cache_batches_applied_total", &["sender=\"root\""]).await;
    assert!(
        sample(&text, "atoll_cache_changes_applied_total", &["sender=\"root\""]).is_some_and(|v| v >= 1.0),
        "{text}"
    );
    assert!(sample(&text, "atoll_store_batch_ops_count", &[]).is_some_and(|v| v >= 1.0), "{text}");

    // The front-proxy: how far its routing index trails each shard.
    let proxy = installation.proxy().http();
    wait_counted(&proxy, "front-proxy", "atoll_front_proxy_index_feed_lag_seconds_count", &["shard=\"root\""]).await;

    installation.stop().await.expect("stop the installation");
}
