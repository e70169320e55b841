//! `atoll-agent`: one per member cluster. It follows its SyncTarget's sync view on every
//! shard (the URLs in `status.virtualWorkspaces`, re-read so that shards joining or
//! leaving are followed), applies each placed object to the member with server-side apply
//! under its own field manager, holds the upstream object with its finalizer while a
//! downstream copy exists, brings downstream status back up, deletes downstream when the
//! placement ends, and heartbeats the SyncTarget (`status.lastSyncerHeartbeatTime`).
//!
//! The member is any Kubernetes API a kubeconfig names: the agent only uses the API.
//!
//! The same binary serves one OCM ManagedCluster ([`ocm`]) or one KubeFleet MemberCluster
//! ([`fleet`]) instead; both report the member's size summed from its Nodes
//! (`node_resources`).

#![forbid(unsafe_code)]

pub mod fleet;
pub mod names;
mod node_resources;
pub mod ocm;
mod traced;
pub mod transform;
mod view;

use anyhow::Context;
use kube::api::{Api, DynamicObject, Patch, PatchParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::core::{ApiResource, GroupVersionKind};
use kube::Client;
use parking_lot::Mutex;
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tokio::task::JoinHandle;
use tracing::Instrument;

/// What the agent is told.
#[derive(Debug, Clone)]
pub struct Config {
    /// A kubeconfig for the workspace that holds the SyncTarget.
    pub hub_kubeconfig: PathBuf,
    /// The SyncTarget's name.
    pub sync_target: String,
    /// A kubeconfig for the member cluster.
    pub member_kubeconfig: PathBuf,
    /// The resources to sync, as `resource` (core) or `resource.group`.
    pub resources: Vec<String>,
    /// How often the SyncTarget is heartbeated.
    pub heartbeat_interval: Duration,
    /// How often the sync views are re-read and orphaned downstream objects removed.
    pub resync: Duration,
    /// The field manager of the agent's server-side applies.
    pub field_manager: String,
}

/// kcp's syncer syncs these by default.
pub const DEFAULT_RESOURCES: &[&str] = &["configmaps", "secrets", "services", "deployments.apps"];

/// The label kcp puts on a SyncTarget: its key.
const KEY_LABEL: &str = "internal.workload.kcp.io/key";

/// One resource the agent syncs.
#[derive(Debug, Clone)]
pub struct Synced {
    /// How a sync view lists it across logical clusters (a bound resource by its
    /// export's identity, `<resource>:<identityHash>`).
    pub upstream: ApiResource,
    /// How it is addressed in one logical cluster and in the member.
    pub resource: ApiResource,
    /// Whether it has a status subresource, to bring status up through.
    pub has_status: bool,
}

/// An upstream object: resource, logical cluster, namespace, name.
pub type UpstreamId = (String, String, String, String);

/// The agent's state, shared by its tasks.
pub struct Agent {
    config: Config,
    hub_config: kube::Config,
    /// The SyncTarget.
    target: names::Target,
    /// Its key.
    key: String,
    member: Client,
    resources: Vec<Synced>,
    /// Clients per (view URL, logical cluster `*` or a name).
    clients: Mutex<HashMap<(String, String), Client>>,
    /// The view a logical cluster was seen through.
    cluster_views: Mutex<HashMap<String, String>>,
    /// Upstream objects present, per (view URL, resource), once listed.
    live: Mutex<HashMap<(String, String), HashSet<UpstreamId>>>,
    /// What was last applied downstream per object (skips no-op applies).
    applied: Mutex<HashMap<UpstreamId, Value>>,
    /// Downstream namespaces ensured.
    namespaces: Mutex<HashSet<String>>,
    /// Objects whose last sync failed, retried at every resync: (view URL, resource, object).
    failed: Mutex<HashMap<UpstreamId, (String, Synced, Value)>>,
}

/// A kube client configuration from a kubeconfig file.
pub async fn kube_config(path: &std::path::Path) -> anyhow::Result<kube::Config> {
    let kubeconfig = Kubeconfig::read_from(path).with_context(|| format!("read kubeconfig {}", path.display()))?;
    kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .with_context(|| format!("use kubeconfig {}", path.display()))
}

fn sync_target_resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("workload.kcp.io", "v1alpha1", "SyncTarget"),
        "synctargets",
    )
}

/// Runs the agent until the process ends.
pub async fn run(config: Config) -> anyhow::Result<()> {
    let hub_config = kube_config(&config.hub_kubeconfig).await?;
    let hub = traced::client(hub_config.clone()).context("build the hub client")?;
    let member = traced::client(kube_config(&config.member_kubeconfig).await?).context("build the member client")?;
    let targets: Api<DynamicObject> = Api::all_with(hub.clone(), &sync_target_resource());
    // The SyncTarget, once it exists and carries its key.
    let object = loop {
        match targets.get(&config.sync_target).await {
            Ok(object) if object.metadata.labels.as_ref().is_some_and(|l| l.contains_key(KEY_LABEL)) => break object,
            Ok(_) => tracing::info!("SyncTarget {} has no key label yet", config.sync_target),
            Err(error) => tracing::warn!(%error, "reading SyncTarget {} failed; retrying", config.sync_target),
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    };
    let key = object.metadata.labels.as_ref().and_then(|l| l.get(KEY_LABEL)).cloned().unwrap_or_default();
    let cluster =
        object.metadata.annotations.as_ref().and_then(|a| a.get("kcp.io/cluster")).cloned().unwrap_or_default();
    let target = names::Target {
        cluster,
        name: config.sync_target.clone(),
        uid: object.metadata.uid.clone().unwrap_or_default(),
    };
    let resources = resolve(&hub, &hub_config, &object.data, &config.resources).await?;
    for synced in &resources {
        let (upstream, has_status) = (&synced.upstream.plural, synced.has_status);
        tracing::info!(resource = %synced.resource.plural, group = %synced.resource.group, %upstream, has_status, "syncing");
    }
    tracing::info!(sync_target = %target.name, %key, "agent started");
    tokio::spawn(heartbeat(targets.clone(), config.sync_target.clone(), config.heartbeat_interval));
    let agent = Arc::new(Agent {
        config,
        hub_config,
        target,
        key,
        member,
        resources,
        clients: Mutex::default(),
        cluster_views: Mutex::default(),
        live: Mutex::default(),
        applied: Mutex::default(),
        namespaces: Mutex::default(),
        failed: Mutex::default(),
    });
    for synced in agent.resources.iter().filter(|s| s.has_status) {
        tokio::spawn(view::follow_member(agent.clone(), synced.clone()));
    }
    let mut followed: HashMap<String, Vec<JoinHandle<()>>> = HashMap::new();
    loop {
        match targets.get(&agent.config.sync_target).await {
            Ok(object) => {
                let urls = view_urls(&object.data);
                followed.retain(|url, tasks| {
                    let keep = urls.contains(url);
                    if !keep {
                        tracing::info!(%url, "a shard left: its sync view is no longer followed");
                        tasks.iter().for_each(JoinHandle::abort);
                        agent.live.lock().retain(|(u, _), _| u != url);
                    }
                    keep
                });
                for url in urls {
                    if followed.contains_key(&url) {
                        continue;
                    }
                    tracing::info!(%url, "following a sync view");
                    let tasks = agent
                        .resources
                        .iter()
                        .map(|synced| tokio::spawn(view::follow(agent.clone(), url.clone(), synced.clone())))
                        .collect();
                    followed.insert(url, tasks);
                }
                let failed: Vec<_> = agent.failed.lock().drain().map(|(_, retry)| retry).collect();
                for (url, synced, upstream) in failed {
                    agent.reconcile(&url, &synced, &upstream).await;
                }
                if !followed.is_empty() {
                    let urls: Vec<String> = followed.keys().cloned().collect();
                    if let Err(error) = view::remove_orphans(&agent, &urls).await {
                        tracing::warn!(error = %format!("{error:#}"), "removing orphaned downstream objects failed");
                    }
                }
            }
            Err(error) => tracing::warn!(%error, "reading the SyncTarget failed; keeping the views followed"),
        }
        tokio::time::sleep(agent.config.resync).await;
    }
}

/// The sync view URLs a SyncTarget's status lists.
fn view_urls(data: &Value) -> Vec<String> {
    let views = data.pointer("/status/virtualWorkspaces").and_then(Value::as_array);
    let urls = views.into_iter().flatten().filter_map(|v| v.get("syncerURL").and_then(Value::as_str));
    urls.map(|u| u.trim_end_matches('/').to_string()).collect()
}

/// Writes `status.lastSyncerHeartbeatTime` every `interval`, forever.
async fn heartbeat(targets: Api<DynamicObject>, name: String, interval: Duration) {
    loop {
        let now = jiff::Timestamp::now().strftime("%Y-%m-%dT%H:%M:%SZ").to_string();
        let patch = json!({"status": {"lastSyncerHeartbeatTime": now}});
        let span = traced::work_span("synctarget.heartbeat", "synctargets", None, None, &name);
        let (params, patch) = (PatchParams::default(), Patch::Merge(&patch));
        if let Err(error) = targets.patch_status(&name, &params, &patch).instrument(span.clone()).await {
            span.in_scope(|| {
                traced::failed();
                tracing::warn!(%error, "heartbeat failed")
            });
        }
        tokio::time::sleep(interval).await;
    }
}

/// The resources named `resource` or `resource.group`: built-in ones (and whatever the
/// hub workspace serves) through the hub's discovery; the rest from the APIExports the
/// SyncTarget's `supportedAPIExports` name, whose identity a sync view needs to list them
/// across logical clusters (kcp's `<resource>:<identityHash>`). Retries while something
/// is missing (an export may not have reached the hub's shard yet).
async fn resolve(
    hub: &Client,
    hub_config: &kube::Config,
    target: &Value,
    wanted: &[String],
) -> anyhow::Result<Vec<Synced>> {
    loop {
        match resolve_once(hub, hub_config, target, wanted).await {
            Ok(resolved) => return Ok(resolved),
            Err(error) => tracing::warn!(error = %format!("{error:#}"), "resolving the resources to sync; retrying"),
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

async fn resolve_once(
    hub: &Client,
    hub_config: &kube::Config,
    target: &Value,
    wanted: &[String],
) -> anyhow::Result<Vec<Synced>> {
    let mut by_group: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for name in wanted {
        let (resource, group) = name.split_once('.').unwrap_or((name.as_str(), ""));
        by_group.entry(group.to_string()).or_default().push(resource.to_string());
    }
    let exported = exported_resources(hub_config, target).await?;
    let mut resolved = Vec::new();
    for (group, resources) in by_group {
        let served = match kube::discovery::group(hub, &group).await {
            Ok(found) => found.recommended_resources(),
            Err(_) => Vec::new(),
        };
        for resource in resources {
            if let Some((api, capabilities)) = served.iter().find(|(api, _)| api.plural == resource) {
                let has_status = capabilities.subresources.iter().any(|(sub, _)| sub.plural == "status");
                resolved.push(Synced { upstream: api.clone(), resource: api.clone(), has_status });
                continue;
            }
            let found = exported.iter().find(|s| s.resource.group == group && s.resource.plural == resource);
            resolved.push(found.cloned().with_context(|| {
                format!(
                    "neither the hub nor the SyncTarget's supportedAPIExports serve {resource:?} in group {group:?}"
                )
            })?);
        }
    }
    Ok(resolved)
}

/// The resources of the APIExports a SyncTarget's `supportedAPIExports` name.
async fn exported_resources(hub_config: &kube::Config, target: &Value) -> anyhow::Result<Vec<Synced>> {
    let hub_url = hub_config.cluster_url.to_string();
    let (base, own_path) =
        hub_url.split_once("/clusters/").context("the hub kubeconfig's server names no /clusters/<workspace>")?;
    let own_path = own_path.trim_end_matches('/');
    let references = target.pointer("/spec/supportedAPIExports").and_then(Value::as_array).cloned().unwrap_or_default();
    let mut found = Vec::new();
    for reference in references {
        let text =
            |field: &str| reference.get(field).and_then(Value::as_str).filter(|t| !t.is_empty()).map(str::to_string);
        let Some(export) = text("export") else { continue };
        let path = text("path").unwrap_or_else(|| own_path.to_string());
        let mut config = hub_config.clone();
        config.cluster_url = format!("{base}/clusters/{path}").parse().context("an export's workspace URL")?;
        let client = traced::client(config)?;
        let apis = |kind: &str, plural: &str| {
            let gvk = GroupVersionKind::gvk("apis.kcp.io", "v1alpha1", kind);
            Api::<DynamicObject>::all_with(client.clone(), &ApiResource::from_gvk_with_plural(&gvk, plural))
        };
        let object = match apis("APIExport", "apiexports").get(&export).await {
            Ok(object) => object,
            // The default kubernetes export of kcp's compute workspace serves built-ins only.
            Err(kube::Error::Api(status)) if status.code == 404 && export == "kubernetes" => continue,
            Err(error) => anyhow::bail!("read APIExport {path}:{export}: {error}"),
        };
        let identity =
            object.data.pointer("/status/identityHash").and_then(Value::as_str).unwrap_or_default().to_string();
        anyhow::ensure!(!identity.is_empty(), "APIExport {path}:{export} has no identity yet");
        let schemas =
            object.data.pointer("/spec/latestResourceSchemas").and_then(Value::as_array).cloned().unwrap_or_default();
        for schema in schemas.iter().filter_map(Value::as_str) {
            let schema = apis("APIResourceSchema", "apiresourceschemas").get(schema).await?;
            let spec = schema.data.get("spec").cloned().unwrap_or_default();
            let text = |pointer: &str| spec.pointer(pointer).and_then(Value::as_str).unwrap_or_default().to_string();
            let versions = spec.get("versions").and_then(Value::as_array).cloned().unwrap_or_default();
            let Some(version) = versions.iter().find(|v| v.get("storage").and_then(Value::as_bool) == Some(true))
            else {
                continue;
            };
            let gvk = GroupVersionKind::gvk(
                &text("/group"),
                version.get("name").and_then(Value::as_str).unwrap_or("v1"),
                &text("/names/kind"),
            );
            let plural = text("/names/plural");
            let has_status = version.pointer("/subresources/status").is_some();
            found.push(Synced {
                upstream: ApiResource::from_gvk_with_plural(&gvk, &format!("{plural}:{identity}")),
                resource: ApiResource::from_gvk_with_plural(&gvk, &plural),
                has_status,
            });
        }
    }
    Ok(found)
}

impl Agent {
    /// A client for `cluster` (`*`: every cluster) of the sync view at `url`.
    fn client(&self, url: &str, cluster: &str) -> anyhow::Result<Client> {
        if let Some(client) = self.clients.lock().get(&(url.to_string(), cluster.to_string())).cloned() {
            return Ok(client);
        }
        let mut config = self.hub_config.clone();
        config.cluster_url = format!("{url}/clusters/{cluster}").parse().context("a sync view URL")?;
        let client = traced::client(config).context("build a sync view client")?;
        self.clients.lock().insert((url.to_string(), cluster.to_string()), client.clone());
        Ok(client)
    }
}
