//! A kube-rs controller against a real `atoll-shard`: the CRD comes from the
//! `CustomResource` derive, is created through `Api<CustomResourceDefinition>` and awaited
//! until Established, and a `kube::runtime::Controller` reconciles `Counter`s by writing
//! their status subresource. This is the loop every operator runs, so it exercises list,
//! watch (with bookmarks and resumption), field-selected watches, merge patches and the
//! `/status` subresource of custom resources the way real clients use them.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::reflector::Store;
use kube::runtime::wait::{await_condition, conditions};
use kube::runtime::watcher;
use kube::{CustomResource, CustomResourceExt, ResourceExt};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tests::{ShardOptions, ShardProcess};

/// The logical cluster the controller runs against.
const CLUSTER: &str = "operators";

/// Where the counters live.
const NAMESPACE: &str = "default";

/// How long anything asynchronous (establishment, reconciliation, watch delivery) may
/// take before the test fails. Generous: CI machines are slow, and no assertion here is
/// about speed.
const DEADLINE: Duration = Duration::from_secs(60);

/// How often the waits look again.
const POLL_INTERVAL: Duration = Duration::from_millis(200);

/// How many reconcile or watch errors the context keeps for failure messages; older
/// ones are dropped, since the newest say what is wrong now.
const ERRORS_KEPT: usize = 20;

/// A counter whose controller reports the target it saw.
#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "atoll.example.com",
    version = "v1",
    kind = "Counter",
    namespaced,
    status = "CounterStatus",
    shortname = "ctr"
)]
pub struct CounterSpec {
    /// The value the controller should observe.
    pub target: i32,
}

/// What the controller last observed.
#[derive(Deserialize, Serialize, Clone, Debug, PartialEq, JsonSchema)]
pub struct CounterStatus {
    /// The `spec.target` the controller reconciled.
    pub observed: i32,
    /// Set once `observed` matches the spec.
    pub ready: bool,
}

/// Shared with every reconcile: the client and the errors seen so far.
struct Context {
    client: kube::Client,
    errors: Mutex<Vec<String>>,
}

impl Context {
    fn record(&self, error: String) {
        let mut errors = self.errors.lock().unwrap();
        if errors.len() == ERRORS_KEPT {
            errors.remove(0);
        }
        errors.push(error);
    }

    fn errors(&self) -> String {
        self.errors.lock().unwrap().join("\n")
    }
}

/// The status a counter should end up with.
fn desired_status(counter: &Counter) -> CounterStatus {
    CounterStatus { observed: counter.spec.target, ready: true }
}

async fn reconcile(counter: Arc<Counter>, context: Arc<Context>) -> Result<Action, kube::Error> {
    let desired = desired_status(&counter);
    // Without this check every status write would trigger another reconcile of itself.
    if counter.status.as_ref() == Some(&desired) {
        return Ok(Action::await_change());
    }
    let namespace = counter.namespace().unwrap_or_default();
    let api: Api<Counter> = Api::namespaced(context.client.clone(), &namespace);
    let patch = serde_json::json!({ "status": desired });
    api.patch_status(&counter.name_any(), &PatchParams::default(), &Patch::Merge(&patch)).await?;
    Ok(Action::await_change())
}

fn error_policy(counter: Arc<Counter>, error: &kube::Error, context: Arc<Context>) -> Action {
    context.record(format!("reconcile {}: {error}", counter.name_any()));
    Action::requeue(Duration::from_millis(500))
}

/// Polls `check` until it returns `Some`, failing after [`DEADLINE`] with `what`, the
/// last state `describe` gives and the errors the controller recorded.
async fn wait_for<T, F, Fut>(what: &str, context: &Context, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, String>>,
{
    let deadline = tokio::time::Instant::now() + DEADLINE;
    loop {
        let last = match check().await {
            Ok(value) => return value,
            Err(last) => last,
        };
        if tokio::time::Instant::now() >= deadline {
            panic!("{what}: not within {DEADLINE:?}\nlast state: {last}\ncontroller errors:\n{}", context.errors());
        }
        tokio::time::sleep(POLL_INTERVAL).await;
    }
}

/// `name → (spec.target, status)` of every counter, from the API server.
async fn counters_by_name(api: &Api<Counter>) -> Result<BTreeMap<String, (i32, Option<CounterStatus>)>, String> {
    let list = api.list(&ListParams::default()).await.map_err(|e| format!("list counters: {e}"))?;
    Ok(list.items.into_iter().map(|c| (c.name_any(), (c.spec.target, c.status))).collect())
}

/// Succeeds once the server holds exactly `expected` (name → target) and every status
/// says `observed == target, ready`.
async fn all_reconciled(api: &Api<Counter>, expected: &BTreeMap<&str, i32>) -> Result<(), String> {
    let counters = counters_by_name(api).await?;
    let names: Vec<&str> = counters.keys().map(String::as_str).collect();
    let expected_names: Vec<&str> = expected.keys().copied().collect();
    let reconciled = names == expected_names
        && counters.iter().all(|(name, (target, status))| {
            expected.get(name.as_str()) == Some(target)
                && status.as_ref() == Some(&CounterStatus { observed: *target, ready: true })
        });
    if reconciled {
        Ok(())
    } else {
        Err(format!("{counters:?}"))
    }
}

/// Succeeds once the controller's reflector cache agrees with `expected`, statuses
/// included: the cache only learns of status writes through watch events.
fn store_agrees(store: &Store<Counter>, expected: &BTreeMap<&str, i32>) -> Result<(), String> {
    let cached: BTreeMap<String, (i32, Option<CounterStatus>)> =
        store.state().iter().map(|c| (c.name_any(), (c.spec.target, c.status.clone()))).collect();
    let agrees = cached.len() == expected.len()
        && cached.iter().all(|(name, (target, status))| {
            expected.get(name.as_str()) == Some(target)
                && status.as_ref() == Some(&CounterStatus { observed: *target, ready: true })
        });
    if agrees {
        Ok(())
    } else {
        Err(format!("reflector store: {cached:?}"))
    }
}

async fn create_crd(client: &kube::Client) {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let crd = Counter::crd();
    let name = crd.name_any();
    crds.create(&PostParams::default(), &crd).await.unwrap_or_else(|e| panic!("create CRD {name}: {e}"));
    // await_condition watches the CRD with a metadata.name field selector.
    let established = tokio::time::timeout(DEADLINE, await_condition(crds, &name, conditions::is_crd_established()));
    match established.await {
        Ok(Ok(Some(_))) => {}
        Ok(Ok(None)) => panic!("CRD {name} was deleted while awaiting Established"),
        Ok(Err(e)) => panic!("await CRD {name} Established: {e}"),
        Err(_) => panic!("CRD {name} not Established within {DEADLINE:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn controller_reconciles_counter_status() {
    let shard = ShardProcess::start(ShardOptions::default()).await.expect("start shard");
    shard.create_logical_cluster(CLUSTER).await.expect("create logical cluster");
    let client = shard.kube_client(CLUSTER).await;
    create_crd(&client).await;

    let counters: Api<Counter> = Api::namespaced(client.clone(), NAMESPACE);
    let context = Arc::new(Context { client: client.clone(), errors: Mutex::new(Vec::new()) });
    let controller = Controller::new(counters.clone(), watcher::Config::default());
    let store = controller.store();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let run_context = context.clone();
    let running = tokio::spawn(
        controller
            .graceful_shutdown_on(async move {
                let _ = stopped.await;
            })
            .run(reconcile, error_policy, context.clone())
            .for_each(move |result| {
                // Reconcile errors are recorded by error_policy; these are the watcher's
                // and the queue's, which error_policy never sees.
                if let Err(error) = result {
                    run_context.record(format!("controller: {error}"));
                }
                futures::future::ready(())
            }),
    );

    let mut expected = BTreeMap::from([("alpha", 1), ("beta", 2), ("gamma", 3)]);
    for (name, target) in &expected {
        let counter = Counter::new(name, CounterSpec { target: *target });
        counters
            .create(&PostParams::default(), &counter)
            .await
            .unwrap_or_else(|e| panic!("create counter {name}: {e}"));
    }
    wait_for("every counter reconciled", &context, || all_reconciled(&counters, &expected)).await;

    // A spec change is a new generation, and the controller catches up with it; the
    // status writes before it were no spec change.
    let spec_patch = serde_json::json!({ "spec": { "target": 20 } });
    let patched = counters
        .patch("beta", &PatchParams::default(), &Patch::Merge(&spec_patch))
        .await
        .unwrap_or_else(|e| panic!("patch counter beta's spec: {e}"));
    assert_eq!(patched.spec.target, 20);
    assert_eq!(patched.status, Some(CounterStatus { observed: 2, ready: true }), "a spec patch keeps status");
    expected.insert("beta", 20);
    wait_for("beta reconciled after its spec changed", &context, || all_reconciled(&counters, &expected)).await;
    wait_for("the reflector store caught up", &context, || std::future::ready(store_agrees(&store, &expected))).await;
    let generations: BTreeMap<String, Option<i64>> = counters
        .list(&ListParams::default())
        .await
        .expect("list counters")
        .items
        .iter()
        .map(|c| (c.name_any(), c.metadata.generation))
        .collect();
    let want: BTreeMap<String, Option<i64>> =
        [("alpha", 1), ("beta", 2), ("gamma", 1)].into_iter().map(|(n, g)| (n.to_string(), Some(g))).collect();
    assert_eq!(generations, want, "metadata.generation counts spec changes only");

    for name in expected.keys() {
        counters.delete(name, &DeleteParams::default()).await.unwrap_or_else(|e| panic!("delete counter {name}: {e}"));
    }
    let none = BTreeMap::new();
    wait_for("every counter deleted", &context, || all_reconciled(&counters, &none)).await;
    wait_for("the reflector store emptied", &context, || std::future::ready(store_agrees(&store, &none))).await;

    stop.send(()).expect("the controller is still running");
    match tokio::time::timeout(DEADLINE, running).await {
        Ok(joined) => joined.expect("the controller task panicked"),
        Err(_) => panic!("the controller did not shut down within {DEADLINE:?}"),
    }
}
