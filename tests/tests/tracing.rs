//! OpenTelemetry traces across the installation's processes, received by a real OTLP
//! gRPC receiver ([`tests::otlp::Receiver`]): one `kubectl` call is one trace, from the
//! front-proxy through the shard that serves it to the work it queues on other shards and
//! in the cache; and an agent's pass over a Fleet Work is one trace, from the agent
//! through the member it applies to and the hub it reports to.
//!
//! Every process of this test binary's installation inherits the `OTEL_*` variables, so
//! this file holds one test: the variables are set once, before anything starts.

use std::time::Duration;

use serde_json::json;
use tests::agent::wait_json;
use tests::cache::CacheTopology;
use tests::fleet_members::FleetMembers;
use tests::installation::{wait_workspace_ready, workspace_url, Installation, InstallationOptions};
use tests::otlp::{ReceivedSpan, Receiver};
use tests::traces::{agent_apply, replication_hop, wait_for, AgentApply, Trace, CLIENT, ERROR, INTERNAL, SERVER};

fn is_shard_server(span: &ReceivedSpan, shard: &str) -> bool {
    span.service == "atoll-shard" && span.kind == SERVER && span.resource_attribute("atoll.shard") == Some(shard)
}

/// No credential or body may travel in an attribute.
fn assert_no_secrets(trace: &Trace) {
    for span in trace.spans.values() {
        for (key, value) in &span.attributes {
            let lowered = value.to_ascii_lowercase();
            assert!(
                !lowered.contains("bearer") && !lowered.contains("-----begin") && !value.contains("\"spec\""),
                "attribute {key} of {} carries a credential or a body: {value}",
                span.name
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_kubectl_call_is_one_trace_across_processes() {
    let receiver = Receiver::start(true).await.expect("start the OTLP receiver");
    for (name, value) in receiver.env() {
        // One test in this binary: nothing else reads the environment concurrently.
        std::env::set_var(name, value);
    }
    let options = InstallationOptions {
        extra_shards: 1,
        front_proxy: true,
        // Root and shard-1 write to cache-a, which pushes everything up to cache-p.
        caches: Some(CacheTopology::regional()),
        ..InstallationOptions::default()
    };
    let mut installation = Installation::start_with(options).await.expect("start the installation");
    let proxy = installation.proxy();
    let kubectl = || proxy.kubectl().cluster("root");

    // A kubectl GET: the proxy's server span is the parent of the shard's.
    kubectl().args(["get", "namespace", "default", "-o", "name"]).ok();
    let (proxy_span, shard_span) = wait_for(&receiver, "the GET's proxy and shard spans", |spans| {
        let proxy_span = spans.iter().find(|s| {
            s.service == "atoll-front-proxy"
                && s.attribute("http.request.method") == Some("GET")
                && s.attribute("url.path").is_some_and(|p| p.ends_with("/api/v1/namespaces/default"))
        })?;
        let shard_span = spans.iter().find(|s| s.parent_span_id == proxy_span.span_id)?;
        Some((proxy_span.clone(), shard_span.clone()))
    })
    .await;
    assert_eq!(proxy_span.kind, SERVER);
    assert_eq!(proxy_span.parent_span_id, "", "kubectl sends no traceparent: the proxy starts the trace");
    assert_eq!(proxy_span.attribute("http.response.status_code"), Some("200"), "{proxy_span:?}");
    assert!(proxy_span.attribute("enduser.id").is_some(), "{proxy_span:?}");
    assert_eq!(shard_span.trace_id, proxy_span.trace_id);
    assert!(is_shard_server(&shard_span, "root"), "{shard_span:?}");
    assert_eq!(shard_span.name, "get namespaces");
    assert_eq!(shard_span.attribute("k8s.request.verb"), Some("get"));
    assert_eq!(shard_span.attribute("k8s.request.resource"), Some("namespaces"));
    // The shard is named once per export, by its Resource, not on every span; nor do
    // tracing's own `level` and `target` ride along.
    assert_eq!(shard_span.resource_attribute("service.instance.id"), Some("root"), "{shard_span:?}");
    for not_per_span in ["atoll.shard", "level", "target"] {
        assert_eq!(shard_span.attribute(not_per_span), None, "{shard_span:?}");
    }
    assert_eq!(shard_span.attribute("atoll.logical_cluster"), Some("root"));
    assert!(shard_span.attribute("server.address").is_some(), "{shard_span:?}");

    // `kubectl create` of a Workspace until one lands on the other shard: its trace shows
    // the request, the scheduler's reconcile on root's shard (a child of the request that
    // queued it), its peer call and the LogicalCluster's creation on the target shard.
    let mut placed = None;
    for index in 0..16 {
        let name = format!("traced-{index}");
        let manifest = format!("apiVersion: tenancy.kcp.io/v1alpha1\nkind: Workspace\nmetadata:\n  name: {name}\n");
        kubectl().args(["create", "-f", "-"]).stdin(manifest).ok();
        let ready = wait_workspace_ready(&installation.root, "root", &name, Duration::from_secs(60))
            .await
            .expect("workspace Ready");
        let url = workspace_url(&ready).expect("a Ready workspace has a URL").to_string();
        let shard = installation.shard_for_url(&url).expect("a shard serves the URL").name().to_string();
        if shard != "root" {
            placed = Some((name, shard));
            break;
        }
    }
    let (name, target) = placed.expect("one of 16 workspaces landed on shard-1");
    let trace_id = wait_for(&receiver, "the workspace's reconcile span", |spans| {
        spans
            .iter()
            .find(|s| s.name == "workspace.reconcile" && s.attribute("atoll.object") == Some(name.as_str()))
            .map(|s| s.trace_id.clone())
    })
    .await;
    // The target shard's span arrives on its own schedule.
    wait_for(&receiver, "the target shard's LogicalCluster create", |spans| {
        spans.iter().any(|s| s.trace_id == trace_id && is_shard_server(s, &target)).then_some(())
    })
    .await;
    let trace = Trace::of(&receiver.spans(), &trace_id);
    let proxy_span = trace.find("the proxy's POST", |s| s.service == "atoll-front-proxy" && s.kind == SERVER);
    assert_eq!(proxy_span.attribute("http.request.method"), Some("POST"));
    assert_eq!(proxy_span.parent_span_id, "", "{}", trace.dump());
    let request =
        trace.find("root's create workspaces", |s| is_shard_server(s, "root") && s.name == "create workspaces");
    assert_eq!(request.parent_span_id, proxy_span.span_id, "{}", trace.dump());
    assert_eq!(request.attribute("http.response.status_code"), Some("201"));
    assert_eq!(request.attribute("k8s.request.verb"), Some("create"));
    let reconcile = trace.find("the reconcile", |s| s.name == "workspace.reconcile");
    assert!(trace.descends(reconcile, request), "the reconcile continues the request's trace:\n{}", trace.dump());
    let call = trace.find("the peer call", |s| {
        s.service == "atoll-shard" && s.kind == CLIENT && s.attribute("http.request.method") == Some("POST")
    });
    assert!(trace.descends(call, reconcile), "{}", trace.dump());
    let created = trace.find("the target's create logicalclusters", |s| {
        is_shard_server(s, &target) && s.name == "create logicalclusters"
    });
    assert_eq!(created.parent_span_id, call.span_id, "{}", trace.dump());
    assert_no_secrets(&trace);
    // The scheduler's log line leads to the trace.
    let log = std::fs::read_to_string(installation.root.log_path()).expect("read root's log");
    assert!(
        log.lines()
            .any(|line| line.contains("scheduled the workspace") && line.contains(&format!("trace_id={trace_id}"))),
        "no log line of the scheduling names trace {trace_id}"
    );

    // An APIExport is replicated to the cache: the shard's batch span links to the create,
    // and the cache's apply span continues the batch.
    let export = "apiVersion: apis.kcp.io/v1alpha1\nkind: APIExport\nmetadata:\n  name: traced-export\nspec: {}\n";
    kubectl().args(["create", "-f", "-"]).stdin(export).ok();
    let create = wait_for(&receiver, "the APIExport create", |spans| {
        spans.iter().find(|s| is_shard_server(s, "root") && s.name == "create apiexports").cloned()
    })
    .await;
    let (send, apply) = wait_for(&receiver, "the replication of the APIExport", |spans| {
        replication_hop(spans, "atoll-shard", |(trace, _)| *trace == create.trace_id)
    })
    .await;
    assert_eq!(send.name, "replication.send");
    assert_eq!(send.parent_span_id, "", "a batch serves many writes: a root that links to each");
    assert_eq!(apply.name, "replication.apply");
    // The regional cache's batch up to its parent links to that apply, and the parent's
    // apply continues it.
    let (up, parent_apply) = wait_for(&receiver, "the uplink of the APIExport to the parent cache", |spans| {
        replication_hop(spans, "atoll-cache-server", |(_, span)| *span == apply.span_id)
    })
    .await;
    assert_eq!(up.name, "replication.send");
    assert_eq!(parent_apply.attribute("atoll.replication.sender"), Some("cache-a"), "{parent_apply:?}");

    // Binding the export: the binding controller's pass is part of the create's trace.
    let binding = "apiVersion: apis.kcp.io/v1alpha1\nkind: APIBinding\nmetadata:\n  name: traced-binding\nspec:\n  reference:\n    export:\n      name: traced-export\n";
    kubectl().args(["create", "-f", "-"]).stdin(binding).ok();
    let bind = wait_for(&receiver, "the binding controller's span", |spans| {
        spans
            .iter()
            .find(|s| s.name == "apibinding.bind" && s.attribute("atoll.object") == Some("traced-binding"))
            .cloned()
    })
    .await;
    let trace = Trace::of(&receiver.spans(), &bind.trace_id);
    let request =
        trace.find("root's create apibindings", |s| is_shard_server(s, "root") && s.name == "create apibindings");
    assert!(trace.descends(&bind, request), "the binding's pass continues its create:\n{}", trace.dump());

    // A caller's `traceparent` is continued: the proxy's span is its child. And deleting an
    // owner through the proxy puts the garbage collector's delete of its dependent into
    // that DELETE's trace.
    let client = installation.proxy().http();
    let owner = serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "owner"}});
    let owner = client.post_json("/clusters/root/api/v1/namespaces/default/configmaps", &owner).await.expect("POST");
    assert_eq!(owner.status, http::StatusCode::CREATED, "{}", owner.text());
    let uid = owner.json().expect("JSON")["metadata"]["uid"].as_str().expect("a uid").to_string();
    let dependent = serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {
        "name": "dependent",
        "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": uid}],
    }});
    let created = client.post_json("/clusters/root/api/v1/namespaces/default/configmaps", &dependent).await;
    assert_eq!(created.expect("POST").status, http::StatusCode::CREATED);
    let caller_trace = "4bf92f3577b34da6a3ce929d0e0e4736";
    let caller_span = "00f067aa0ba902b7";
    let traceparent = format!("00-{caller_trace}-{caller_span}-01");
    let path = "/clusters/root/api/v1/namespaces/default/configmaps/owner";
    let deleted = client.send(http::Method::DELETE, path, &[("traceparent", traceparent.as_str())], Vec::new()).await;
    assert_eq!(deleted.expect("DELETE").status, http::StatusCode::OK);
    wait_for(&receiver, "the garbage collector's delete in the caller's trace", |spans| {
        spans.iter().any(|s| s.trace_id == caller_trace && s.name == "gc.collect").then_some(())
    })
    .await;
    let trace = Trace::of(&receiver.spans(), caller_trace);
    let proxy_span = trace.find("the proxy's DELETE", |s| s.service == "atoll-front-proxy" && s.kind == SERVER);
    assert_eq!(proxy_span.parent_span_id, caller_span, "the caller's span is the proxy span's parent");
    let request =
        trace.find("root's delete configmaps", |s| is_shard_server(s, "root") && s.name == "delete configmaps");
    let collect = trace.find("the collector's span", |s| s.name == "gc.collect");
    assert!(trace.descends(collect, request), "the collector's work continues the DELETE:\n{}", trace.dump());

    // A Fleet member agent's pass over a Work is a trace of its own, and its HTTP calls carry
    // it on: to the member (another shard, standing in for a cluster) for the apply, and
    // through the proxy to the hub's shard for the Work's finalizer and status.
    let placed = installation.place_workspaces("fleet-hub", 8, |p| p.values().any(|n| !n.is_empty())).await;
    let hub = format!("root:{}", placed.expect("a hub workspace").values().flatten().next().expect("one"));
    installation.proxy().wait_resolves(&hub).await.expect("the proxy resolves the hub");
    let members = FleetMembers::join(&installation, &hub, &[("traced-member", json!({}))]).await;
    let hub_kubectl = || installation.proxy().kubectl().cluster(&hub);
    wait_json(hub_kubectl, &["namespace", "fleet-member-traced-member"], "the member's namespace", |_| true);
    let work = json!({
        "apiVersion": "placement.kubernetes-fleet.io/v1", "kind": "Work",
        "metadata": {"name": "traced-work", "namespace": "fleet-member-traced-member"},
        "spec": {"workload": {"manifests": [{
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "traced-cm", "namespace": "default"}, "data": {"placed": "yes"},
        }]}},
    });
    hub_kubectl().args(["create", "-f", "-"]).stdin(work.to_string()).ok();
    let AgentApply { work: pass, call } =
        agent_apply(&receiver, "work.reconcile", "traced-work", "traced-member").await;
    assert_eq!(pass.kind, INTERNAL, "{pass:?}");
    assert_eq!(pass.parent_span_id, "", "the pass starts a trace: {pass:?}");
    assert_eq!(pass.attribute("k8s.namespace.name"), Some("fleet-member-traced-member"));
    assert_eq!(pass.resource_attribute("service.name"), Some("atoll-agent"));
    // The apply created the ConfigMap.
    assert_eq!(call.attribute("http.response.status_code"), Some("201"), "{call:?}");
    assert!(call.attribute("url.full").is_some_and(|u| u.contains("/configmaps/traced-cm")), "{call:?}");
    assert!(call.attribute("server.address").is_some(), "{call:?}");
    let hub_write = |spans: &[ReceivedSpan]| {
        spans.iter().any(|s| s.trace_id == pass.trace_id && s.kind == SERVER && s.name == "patch works").then_some(())
    };
    wait_for(&receiver, "the hub's write of the Work in the same trace", hub_write).await;
    let trace = Trace::of(&receiver.spans(), &pass.trace_id);
    let status = trace.find("the hub's patch of the Work", |s| s.name == "patch works" && s.kind == SERVER);
    assert_eq!(status.service, "atoll-shard", "{status:?}");
    assert_ne!(status.attribute("atoll.logical_cluster"), Some("traced-member"), "{status:?}");
    let via = trace.find("the proxy's span of that write", |s| {
        s.service == "atoll-front-proxy" && trace.descends(status, s) && trace.descends(s, &pass)
    });
    assert_eq!(via.kind, SERVER, "{}", trace.dump());
    assert_no_secrets(&trace);
    // A manifest the member refuses (no uppercase in a name): the agent's call is an
    // error span with the member's code, and the pass goes on to report it.
    let mut refused = work.clone();
    refused["metadata"]["name"] = json!("refused-work");
    refused["spec"]["workload"]["manifests"][0]["metadata"]["name"] = json!("Not_A_Name");
    hub_kubectl().args(["create", "-f", "-"]).stdin(refused.to_string()).ok();
    let call = wait_for(&receiver, "the agent's refused call", |spans| {
        spans
            .iter()
            .filter(|s| s.service == "atoll-agent" && s.kind == CLIENT)
            .find(|s| s.attribute("url.full").is_some_and(|u| u.contains("/configmaps/Not_A_Name")))
            .cloned()
    })
    .await;
    assert!(call.attribute("http.response.status_code").is_some_and(|c| c.starts_with('4')), "{call:?}");
    assert_eq!(call.status_code, ERROR, "a refused call is an error span: {call:?}");
    drop(members);

    installation.stop().await.expect("stop the installation");
}
