//! The multi-host installation of `deploy/docker-compose.yaml`, end to end: the images
//! built from this checkout's binaries, the installation brought up by
//! `scripts/compose.sh` under a compose project of this test's own (every container,
//! network and volume carries its name), and driven with stock kubectl through the
//! front-proxy's published port:
//!
//! - workspaces on every shard, and an APIExport on one shard bound on another (through
//!   the regional caches and the global one);
//! - `docker kill` of a shard container: its workspaces answer 503, the others keep
//!   working, and a new workspace lands elsewhere; `docker start` brings it back with
//!   its data (the RocksDB volume);
//! - `docker network disconnect` of a regional cache: an export made behind it cannot be
//!   bound; reconnected, the cache catches up and the binding becomes Bound;
//! - the compose's own Prometheus has every target up and answers a query on the
//!   request-latency histogram;
//! - teardown leaves no container, network or volume of the project.
//!
//! Without a Docker engine (or docker-compose) the test says so and passes. Nothing is
//! asserted about time: every wait polls up to a generous deadline.

use std::time::{Duration, Instant};

use http::StatusCode;
use serde_json::{json, Value};
use tests::compose::{docker_missing, Compose};
use tests::TlsHttp;

/// Bounds on each wait; they catch hangs, not slowness.
const READY: Duration = Duration::from_secs(120);
/// Replication after a partition heals waits for the sender's reconnect back-off and the
/// cache's resync; generous, because a slow heal is not what this test is about.
const CONVERGE: Duration = Duration::from_secs(300);
/// How many workspaces may be created before every shard has one.
const PLACEMENT_MAX: usize = 40;
const SHARDS: [&str; 3] = ["root", "shard-1", "shard-2"];
/// The annotation the scheduler records the chosen shard in.
const SHARD_ANNOTATION: &str = "internal.tenancy.kcp.io/shard";

/// An APIResourceSchema and the APIExport of it, for resource `plural` in `example.io`, as
/// two YAML documents (kubectl reads a stream of several JSON documents as one).
fn export_manifest(plural: &str, kind: &str) -> String {
    let schema = format!("v1.{plural}.example.io");
    let documents = [
        json!({
            "apiVersion": "apis.kcp.io/v1alpha1",
            "kind": "APIResourceSchema",
            "metadata": {"name": schema},
            "spec": {
                "group": "example.io",
                "names": {"kind": kind, "listKind": format!("{kind}List"), "plural": plural,
                          "singular": kind.to_lowercase()},
                "scope": "Namespaced",
                "versions": [{"name": "v1", "served": true, "storage": true, "schema": {
                    "type": "object",
                    "properties": {"spec": {"type": "object", "properties": {"size": {"type": "integer"}}}},
                }}],
            },
        }),
        json!({
            "apiVersion": "apis.kcp.io/v1alpha1",
            "kind": "APIExport",
            "metadata": {"name": plural},
            "spec": {"latestResourceSchemas": [schema]},
        }),
    ];
    documents.iter().map(|document| serde_yaml_ng::to_string(document).unwrap()).collect::<Vec<_>>().join("---\n")
}

fn binding_manifest(export: &str, provider_path: &str) -> String {
    json!({
        "apiVersion": "apis.kcp.io/v1alpha1",
        "kind": "APIBinding",
        "metadata": {"name": export},
        "spec": {"reference": {"export": {"path": provider_path, "name": export}}},
    })
    .to_string()
}

fn object_manifest(kind: &str, name: &str) -> String {
    json!({
        "apiVersion": "example.io/v1",
        "kind": kind,
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"size": 3},
    })
    .to_string()
}

/// The id of `service`'s container.
fn container(compose: &Compose, service: &str) -> String {
    compose.container(service).unwrap_or_else(|e| panic!("{e:#}"))
}

/// Percent-encodes a query parameter value.
fn encode(value: &str) -> String {
    value
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// Polls `probe` until it returns `Ok(value)`, or panics with its last complaint after
/// `timeout`.
async fn eventually<T, F, Fut>(what: &str, timeout: Duration, probe: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, String>>,
{
    tests::compose::eventually(what, timeout, probe).await.unwrap_or_else(|e| panic!("{e:#}"))
}

/// `GET path` through the proxy: its status and JSON body (or the transport error).
async fn get(http: &TlsHttp, path: &str) -> Result<(StatusCode, Value), String> {
    let response = http.get(path).await.map_err(|e| format!("{e:#}"))?;
    let body = response.json().unwrap_or_else(|_| Value::String(response.text()));
    Ok((response.status, body))
}

/// Creates workspace `name` in root with kubectl, waits until it is Ready, and returns the
/// shard the scheduler put it on.
async fn workspace(compose: &Compose, http: &TlsHttp, name: &str) -> String {
    let body = json!({"apiVersion": "tenancy.kcp.io/v1alpha1", "kind": "Workspace", "metadata": {"name": name}});
    compose.kubectl("root").args(["create", "-f", "-"]).stdin(body.to_string()).ok();
    let path = format!("/clusters/root/apis/tenancy.kcp.io/v1alpha1/workspaces/{name}");
    let shard = eventually(&format!("workspace {name} Ready"), READY, || async {
        let (status, workspace) = get(http, &path).await?;
        let shard = workspace["metadata"]["annotations"][SHARD_ANNOTATION].as_str();
        match (status, workspace["status"]["phase"].as_str(), shard) {
            (StatusCode::OK, Some("Ready"), Some(shard)) => Ok(shard.to_string()),
            _ => Err(format!("HTTP {status}: {workspace}")),
        }
    })
    .await;
    // Ready in root does not yet mean the proxy's index has the new logical cluster.
    let configmaps = format!("/clusters/root:{name}/api/v1/namespaces/default/configmaps");
    eventually(&format!("root:{name} routed by the front-proxy"), READY, || async {
        match get(http, &configmaps).await? {
            (StatusCode::OK, _) => Ok(()),
            (status, body) => Err(format!("HTTP {status}: {body}")),
        }
    })
    .await;
    shard
}

/// Waits until APIBinding `name` in `consumer` satisfies `check`; returns it.
async fn wait_binding(
    http: &TlsHttp,
    consumer: &str,
    name: &str,
    timeout: Duration,
    check: fn(&Value) -> bool,
) -> Value {
    let path = format!("/clusters/{consumer}/apis/apis.kcp.io/v1alpha1/apibindings/{name}");
    eventually(&format!("binding {name} in {consumer}"), timeout, || async {
        match get(http, &path).await? {
            (StatusCode::OK, binding) if check(&binding) => Ok(binding),
            (status, body) => Err(format!("HTTP {status}: {body}")),
        }
    })
    .await
}

fn bound(binding: &Value) -> bool {
    binding["status"]["phase"] == "Bound"
}

fn export_not_found(binding: &Value) -> bool {
    let conditions = binding["status"]["conditions"].as_array().cloned().unwrap_or_default();
    conditions
        .iter()
        .any(|c| c["type"] == "APIExportValid" && c["status"] == "False" && c["reason"] == "APIExportNotFound")
}

/// Every scrape target of the compose's Prometheus is up; returns their job/instance.
async fn all_targets_up(compose: &Compose) -> Result<Vec<String>, String> {
    let targets = compose.prometheus("/api/v1/targets?state=active").await.map_err(|e| format!("{e:#}"))?;
    let active = targets["data"]["activeTargets"].as_array().cloned().unwrap_or_default();
    let field = |t: &Value, pointer: &str| t.pointer(pointer).and_then(Value::as_str).unwrap_or("?").to_string();
    let describe =
        |t: &Value| format!("{}/{}={}", field(t, "/labels/job"), field(t, "/labels/instance"), field(t, "/health"));
    let names: Vec<String> = active.iter().map(describe).collect();
    // Whatever deploy/prometheus/prometheus.yml lists must be up, and it must list every
    // Atoll server: three shards, three caches and the front-proxy.
    let jobs = |job: &str| active.iter().filter(|t| t["labels"]["job"] == job).count();
    let every_server = jobs("shards") == 3 && jobs("caches") == 3 && jobs("front-proxy") == 1;
    if every_server && active.iter().all(|t| t["health"] == "up") {
        Ok(names)
    } else {
        Err(format!("targets: {names:?} {}", targets["data"]["activeTargets"]))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn multi_host_installation_in_docker_compose() {
    if let Some(why) = docker_missing() {
        eprintln!("SKIPPED compose test: {why}; it needs Docker and docker-compose to run");
        return;
    }
    let started = Instant::now();
    // Unique per run, so parallel runs and a user's own `atoll` project never meet.
    let project = format!("atoll-compose-test-{}", std::process::id());
    let mut compose = Compose::new(&project).expect("prepare the compose project");
    eprintln!(
        "compose project {} (proxy on 127.0.0.1:{}, Prometheus on 127.0.0.1:{})",
        compose.project(),
        compose.proxy_port(),
        compose.prometheus_port()
    );
    compose.build_images().unwrap_or_else(|e| panic!("{e:#}"));
    eprintln!("images built in {:.0?}", started.elapsed());
    let up = Instant::now();
    compose.start().unwrap_or_else(|e| panic!("{e:#}"));
    eprintln!("installation ready {:.0?} after `up`", up.elapsed());
    let http = compose.http().expect("a client through the front-proxy");

    // Workspaces until every shard hosts one; the first on each gets a ConfigMap.
    let mut on: std::collections::BTreeMap<String, String> = Default::default();
    for index in 0..PLACEMENT_MAX {
        if SHARDS.iter().all(|shard| on.contains_key(*shard)) {
            break;
        }
        let name = format!("ws-{index}");
        let shard = workspace(&compose, &http, &name).await;
        on.entry(shard).or_insert(name);
    }
    assert!(
        SHARDS.iter().all(|shard| on.contains_key(*shard)),
        "{PLACEMENT_MAX} workspaces left a shard empty: {on:?}"
    );
    let path = |shard: &str| format!("root:{}", on[shard]);
    for shard in SHARDS {
        compose
            .kubectl(&path(shard))
            .args(["create", "configmap", "hello", "--from-literal", &format!("shard={shard}")])
            .ok();
    }
    eprintln!("workspaces on every shard: {on:?}");

    // An export on shard-1 bound on shard-2: the binding controller on shard-2 sees the
    // export only through cache-a → cache-global.
    compose.kubectl(&path("shard-1")).args(["apply", "-f", "-"]).stdin(export_manifest("widgets", "Widget")).ok();
    compose
        .kubectl(&path("shard-2"))
        .args(["apply", "-f", "-"])
        .stdin(binding_manifest("widgets", &path("shard-1")))
        .ok();
    wait_binding(&http, &path("shard-2"), "widgets", READY, bound).await;
    let widgets = format!("/clusters/{}/apis/example.io/v1/namespaces/default/widgets", path("shard-2"));
    eventually("widgets served on shard-2", READY, || async {
        match get(&http, &widgets).await? {
            (StatusCode::OK, _) => Ok(()),
            (status, body) => Err(format!("HTTP {status}: {body}")),
        }
    })
    .await;
    compose.kubectl(&path("shard-2")).args(["create", "-f", "-"]).stdin(object_manifest("Widget", "first")).ok();
    let listed = compose.kubectl(&path("shard-2")).args(["get", "widgets", "-o", "name"]).ok().stdout;
    assert!(listed.contains("widget.example.io/first"), "{listed}");
    eprintln!("export on shard-1 bound on shard-2");

    // Prometheus: every target up, and the latency histogram answers a quantile query.
    let targets = eventually("every Prometheus target up", READY, || all_targets_up(&compose)).await;
    eprintln!("Prometheus targets: {targets:?}");
    let query = "histogram_quantile(0.9, sum by (le, verb) (rate(apiserver_request_duration_seconds_bucket[1m])))";
    let url = format!("/api/v1/query?query={}", encode(query));
    let samples = eventually("a request-latency quantile from Prometheus", READY, || async {
        // Some traffic in every window, so the rate is never empty for lack of requests.
        let _ = get(&http, "/clusters/root/api/v1/namespaces/default/configmaps").await;
        let answer = compose.prometheus(&url).await.map_err(|e| format!("{e:#}"))?;
        let result = answer["data"]["result"].as_array().cloned().unwrap_or_default();
        let finite: Vec<Value> = result
            .into_iter()
            .filter(|s| s["value"][1].as_str().and_then(|v| v.parse::<f64>().ok()).is_some_and(f64::is_finite))
            .collect();
        if finite.is_empty() {
            Err(answer.to_string())
        } else {
            Ok(finite)
        }
    })
    .await;
    eprintln!("p90 latency by verb: {}", Value::from(samples));

    // A shard container killed: its workspaces get 503, everyone else's keep working, and
    // a new workspace is scheduled onto a live shard.
    compose.docker(&["kill", &container(&compose, "shard-2")]).unwrap();
    let dead = format!("/clusters/{}/api/v1/namespaces/default/configmaps", path("shard-2"));
    let refusal = eventually("503 for shard-2's workspace", READY, || async {
        match get(&http, &dead).await? {
            (StatusCode::SERVICE_UNAVAILABLE, body) => Ok(body),
            (status, body) => Err(format!("HTTP {status}: {body}")),
        }
    })
    .await;
    assert_eq!(refusal["kind"], "Status", "{refusal}");
    for shard in ["root", "shard-1"] {
        let out =
            compose.kubectl(&path(shard)).args(["get", "configmap", "hello", "-o", "jsonpath={.data.shard}"]).ok();
        assert_eq!(out.stdout, shard);
    }
    let elsewhere = workspace(&compose, &http, "during-outage").await;
    assert_ne!(elsewhere, "shard-2", "a workspace was scheduled onto the dead shard");
    eprintln!("shard-2 killed: its workspace answers 503, the others 200; a new workspace went to {elsewhere}");

    // Started again (same volume): its workspaces answer, with what they held.
    compose.docker(&["start", &container(&compose, "shard-2")]).unwrap();
    let kept = compose.kubectl(&path("shard-2"));
    eventually("shard-2's workspace back", READY, || async {
        match get(&http, &widgets).await? {
            (StatusCode::OK, list) if list["items"].as_array().is_some_and(|items| items.len() == 1) => Ok(()),
            (status, body) => Err(format!("HTTP {status}: {body}")),
        }
    })
    .await;
    let out = kept.args(["get", "configmap", "hello", "-o", "jsonpath={.data.shard}"]).ok();
    assert_eq!(out.stdout, "shard-2");
    eprintln!("shard-2 restarted with its data");

    // cache-b (shard-2's region) cut off: an export made on shard-2 cannot reach the global
    // cache, so a binding to it on shard-1 finds no export. Reconnected under its service
    // name (a plain `docker network connect` would drop the compose alias), the cache
    // catches up and the binding is Bound.
    let cache_b = container(&compose, "cache-b");
    compose.docker(&["network", "disconnect", &compose.network(), &cache_b]).unwrap();
    compose.kubectl(&path("shard-2")).args(["apply", "-f", "-"]).stdin(export_manifest("gadgets", "Gadget")).ok();
    compose
        .kubectl(&path("shard-1"))
        .args(["apply", "-f", "-"])
        .stdin(binding_manifest("gadgets", &path("shard-2")))
        .ok();
    let waiting = wait_binding(&http, &path("shard-1"), "gadgets", READY, export_not_found).await;
    assert!(!bound(&waiting), "bound while its export's cache was cut off: {waiting}");
    compose.docker(&["network", "connect", "--alias", "cache-b", &compose.network(), &cache_b]).unwrap();
    let healed = Instant::now();
    wait_binding(&http, &path("shard-1"), "gadgets", CONVERGE, bound).await;
    eprintln!("cache-b reconnected; the export behind it was bound on shard-1 {:.0?} later", healed.elapsed());
    let gadgets = format!("/clusters/{}/apis/example.io/v1/namespaces/default/gadgets", path("shard-1"));
    eventually("gadgets served on shard-1", READY, || async {
        match get(&http, &gadgets).await? {
            (StatusCode::OK, _) => Ok(()),
            (status, body) => Err(format!("HTTP {status}: {body}")),
        }
    })
    .await;
    compose.kubectl(&path("shard-1")).args(["create", "-f", "-"]).stdin(object_manifest("Gadget", "g1")).ok();

    // After all that, Prometheus again sees every process (shard-2 at its new address).
    eventually("every Prometheus target up again", READY, || all_targets_up(&compose)).await;

    compose.teardown().expect("docker-compose down");
    let left = compose.leftovers().expect("list what is left of the project");
    assert!(left.is_empty(), "left behind by `down -v`: {left}");
    eprintln!("compose test done in {:.0?}", started.elapsed());
}
