//! Following one shard's sync view (upstream to member), the member's copies (status back
//! up), and removing downstream copies whose upstream object is gone.

use crate::names::{Locator, LOCATOR_ANNOTATION, OWNER_LABEL, UPSTREAM_CLUSTER_ANNOTATION};
use crate::{traced, transform};
use crate::{Agent, Synced, UpstreamId};
use futures::StreamExt;
use kube::api::{Api, DeleteParams, DynamicObject, ListParams, Patch, PatchParams};
use kube::core::{ApiResource, GroupVersionKind};
use kube::runtime::watcher::{self, Event};
use kube::runtime::WatchStreamExt;
use serde_json::{json, Value};
use std::collections::HashSet;
use std::sync::Arc;
use tracing::Instrument;

/// Follows `synced` in the sync view at `url`, for as long as the task runs.
pub async fn follow(agent: Arc<Agent>, url: String, synced: Synced) {
    let client = match agent.client(&url, "*") {
        Ok(client) => client,
        Err(error) => return tracing::error!(error = %format!("{error:#}"), %url, "cannot follow a sync view"),
    };
    let api: Api<DynamicObject> = Api::all_with(client, &synced.upstream);
    let stream = watcher::watcher(api, watcher::Config::default()).default_backoff();
    futures::pin_mut!(stream);
    let slot = (url.clone(), resource_key(&synced.resource));
    let mut listing = HashSet::new();
    while let Some(event) = stream.next().await {
        match event {
            Ok(Event::Init) => listing.clear(),
            Ok(Event::InitApply(object)) => {
                let object = to_value(&object);
                listing.extend(upstream_id(&synced.resource, &object));
                agent.reconcile(&url, &synced, &object).await;
            }
            Ok(Event::InitDone) => drop(agent.live.lock().insert(slot.clone(), std::mem::take(&mut listing))),
            Ok(Event::Apply(object)) => {
                let object = to_value(&object);
                if let Some(id) = upstream_id(&synced.resource, &object) {
                    agent.live.lock().entry(slot.clone()).or_default().insert(id);
                }
                agent.reconcile(&url, &synced, &object).await;
            }
            Ok(Event::Delete(object)) => {
                // Deleted upstream, or no longer placed here: the copy goes.
                let object = to_value(&object);
                if let Some(id) = upstream_id(&synced.resource, &object) {
                    agent.live.lock().entry(slot.clone()).or_default().remove(&id);
                    agent.applied.lock().remove(&id);
                    agent.failed.lock().remove(&id);
                }
                if let Err(error) = agent.delete_downstream(&synced.resource, &object).await {
                    tracing::warn!(error = %format!("{error:#}"), "deleting a downstream copy failed");
                }
            }
            // A shard that serves no such resource (no workspace there binds it) holds none.
            Err(watcher::Error::InitialListFailed(kube::Error::Api(status))) if status.code == 404 => {
                agent.live.lock().entry(slot.clone()).or_default();
                tracing::debug!(%url, resource = %synced.resource.plural, "not served by this shard yet");
            }
            Err(error) => {
                tracing::warn!(%error, %url, resource = %synced.resource.plural, "sync view watch failed; retrying")
            }
        }
    }
}

/// Brings the status of the member's copies of `synced` up to their upstream objects.
pub async fn follow_member(agent: Arc<Agent>, synced: Synced) {
    let api: Api<DynamicObject> = Api::all_with(agent.member.clone(), &synced.resource);
    let config = watcher::Config::default().labels(&format!("{OWNER_LABEL}={}", agent.key));
    let stream = watcher::watcher(api, config).default_backoff();
    futures::pin_mut!(stream);
    while let Some(event) = stream.next().await {
        let object = match event {
            Ok(Event::Apply(object) | Event::InitApply(object)) => to_value(&object),
            Ok(_) => continue,
            Err(error) => {
                tracing::warn!(%error, resource = %synced.resource.plural, "member watch failed; retrying");
                continue;
            }
        };
        if let Err(error) = agent.status_up(&synced, &object).await {
            tracing::warn!(error = %format!("{error:#}"), "bringing status up failed; the next change retries");
        }
    }
}

/// Deletes the member's copies whose upstream object no sync view holds any more (the
/// agent was away while they were unplaced or deleted). Only once every resource of every
/// view in `urls` has been listed; each copy is checked again just before it goes, so one
/// applied meanwhile stays.
pub async fn remove_orphans(agent: &Agent, urls: &[String]) -> anyhow::Result<()> {
    {
        let live = agent.live.lock();
        let listed = urls
            .iter()
            .all(|url| agent.resources.iter().all(|s| live.contains_key(&(url.clone(), resource_key(&s.resource)))));
        if !listed {
            return Ok(());
        }
    }
    let owned = ListParams::default().labels(&format!("{OWNER_LABEL}={}", agent.key));
    let namespaces: Api<DynamicObject> = Api::all_with(agent.member.clone(), &namespace_resource());
    let locators: std::collections::HashMap<String, Locator> = namespaces
        .list(&owned)
        .await?
        .items
        .into_iter()
        .filter_map(|ns| {
            let text = ns.metadata.annotations.as_ref()?.get(LOCATOR_ANNOTATION)?.clone();
            Some((ns.metadata.name?, serde_json::from_str(&text).ok()?))
        })
        .collect();
    for synced in &agent.resources {
        let api: Api<DynamicObject> = Api::all_with(agent.member.clone(), &synced.resource);
        for copy in api.list(&owned).await?.items {
            let (Some(namespace), Some(name)) = (copy.metadata.namespace.clone(), copy.metadata.name.clone()) else {
                continue;
            };
            let Some(locator) = locators.get(&namespace) else { continue };
            let id = (resource_key(&synced.resource), locator.cluster.clone(), locator.namespace.clone(), name.clone());
            if agent.live.lock().values().any(|listed| listed.contains(&id)) {
                continue;
            }
            tracing::info!(namespace, name, resource = %synced.resource.plural, "removing an orphaned downstream copy");
            agent.applied.lock().remove(&id);
            let namespaced: Api<DynamicObject> =
                Api::namespaced_with(agent.member.clone(), &namespace, &synced.resource);
            match namespaced.delete(&name, &DeleteParams::background()).await {
                Ok(_) => {}
                Err(kube::Error::Api(status)) if status.code == 404 => {}
                Err(error) => return Err(error.into()),
            }
        }
    }
    Ok(())
}

impl Agent {
    /// One upstream object: apply it downstream and hold it, or delete the copy and let go.
    pub(crate) async fn reconcile(&self, url: &str, synced: &Synced, upstream: &Value) {
        let cluster = transform::upstream_cluster(upstream);
        let namespace = upstream.pointer("/metadata/namespace").and_then(Value::as_str);
        let name = upstream.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default();
        let span = traced::work_span("agent.sync", &synced.resource.plural, cluster, namespace, name);
        self.sync(url, synced, upstream, cluster, name).instrument(span).await
    }

    /// [`Self::reconcile`] in its span, for the object `name` of logical cluster `cluster`.
    async fn sync(&self, url: &str, synced: &Synced, upstream: &Value, cluster: Option<&str>, name: &str) {
        if let Some(cluster) = cluster {
            self.cluster_views.lock().insert(cluster.to_string(), url.to_string());
        }
        tracing::debug!(resource = %synced.resource.plural, name, "reconciling");
        let done = if transform::release_requested(upstream, &self.key) {
            self.let_go(url, synced, upstream).await
        } else {
            self.apply(url, synced, upstream).await
        };
        let Some(id) = upstream_id(&synced.resource, upstream) else { return };
        match done {
            Ok(()) => drop(self.failed.lock().remove(&id)),
            Err(error) => {
                traced::failed();
                tracing::warn!(error = %format!("{error:#}"), name, "syncing an object failed; retrying at the next resync");
                self.failed.lock().insert(id, (url.to_string(), synced.clone(), upstream.clone()));
            }
        }
    }

    /// The member's copy is deleted, then the upstream object released.
    async fn let_go(&self, url: &str, synced: &Synced, upstream: &Value) -> anyhow::Result<()> {
        self.delete_downstream(&synced.resource, upstream).await?;
        if let Some(id) = upstream_id(&synced.resource, upstream) {
            self.applied.lock().remove(&id);
        }
        if let Some(patch) = transform::release(upstream, &self.key) {
            self.patch_upstream(url, &synced.resource, upstream, &patch).await?;
        }
        Ok(())
    }

    /// Holds the upstream object and applies it to the member.
    async fn apply(&self, url: &str, synced: &Synced, upstream: &Value) -> anyhow::Result<()> {
        if let Some(patch) = transform::hold(upstream, &self.key) {
            // The write comes back as a watch event, which applies.
            return self.patch_upstream(url, &synced.resource, upstream, &patch).await;
        }
        let locator = self.locator(upstream)?;
        let namespace = locator.downstream_namespace();
        self.ensure_namespace(&namespace, &locator).await?;
        let mut copy = transform::downstream(upstream, &namespace, &self.key);
        // List items need not carry their type.
        copy["apiVersion"] = json!(synced.resource.api_version);
        copy["kind"] = json!(synced.resource.kind);
        let Some(id) = upstream_id(&synced.resource, upstream) else { return Ok(()) };
        if self.applied.lock().get(&id) == Some(&copy) {
            return Ok(());
        }
        let api: Api<DynamicObject> = Api::namespaced_with(self.member.clone(), &namespace, &synced.resource);
        let params = PatchParams::apply(&self.config.field_manager).force();
        let name = id.3.clone();
        let outcome = api.patch(&name, &params, &Patch::Apply(&copy)).await;
        let error = match &outcome {
            Ok(_) => None,
            // The member refuses the object itself: that is the upstream object's to show.
            Err(kube::Error::Api(status)) if matches!(status.code, 400 | 403 | 422) => Some(status.message.clone()),
            Err(kube::Error::Api(status)) if status.code == 404 => {
                // The downstream namespace went: make it again on the retry.
                self.namespaces.lock().remove(&namespace);
                return Err(anyhow::anyhow!("apply {name} to the member: {}", status.message));
            }
            Err(error) => return Err(anyhow::anyhow!("apply {name} to the member: {error}")),
        };
        if error.is_none() {
            self.applied.lock().insert(id, copy);
        }
        // A refusal is the upstream object's to show; the agent goes on with the rest.
        if let Some(patch) = transform::record_state(upstream, &self.key, error.as_deref()) {
            self.patch_upstream(url, &synced.resource, upstream, &patch).await?;
        }
        if let Ok(applied) = outcome {
            if synced.has_status {
                self.status_up(synced, &to_value(&applied)).await?;
            }
        }
        Ok(())
    }

    /// Brings a member copy's status up to its upstream object.
    async fn status_up(&self, synced: &Synced, copy: &Value) -> anyhow::Result<()> {
        let text = |pointer: &str| copy.pointer(pointer).and_then(Value::as_str).map(str::to_string);
        let upstream_cluster = format!("/metadata/annotations/{}", UPSTREAM_CLUSTER_ANNOTATION.replace('/', "~1"));
        let (Some(cluster), Some(namespace), Some(name)) =
            (text(&upstream_cluster), text("/metadata/namespace"), text("/metadata/name"))
        else {
            tracing::debug!("a member copy without its upstream coordinates");
            return Ok(());
        };
        let Some(url) = self.cluster_views.lock().get(&cluster).cloned() else {
            tracing::debug!(cluster, "no sync view seen for this logical cluster yet");
            return Ok(());
        };
        let namespaces: Api<DynamicObject> = Api::all_with(self.member.clone(), &namespace_resource());
        let downstream_ns = namespaces.get(&namespace).await?;
        let locator: Locator = serde_json::from_str(
            downstream_ns.metadata.annotations.as_ref().and_then(|a| a.get(LOCATOR_ANNOTATION)).map_or("", |s| s),
        )?;
        let client = self.client(&url, &cluster)?;
        let api: Api<DynamicObject> = Api::namespaced_with(client, &locator.namespace, &synced.resource);
        let upstream = to_value(&api.get(&name).await?);
        tracing::debug!(cluster, name, "bringing status up");
        if let Some(patch) = transform::status_up(&upstream, copy) {
            api.patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch)).await?;
        }
        Ok(())
    }

    /// Deletes the member's copy of `upstream`, if there is one.
    async fn delete_downstream(&self, resource: &ApiResource, upstream: &Value) -> anyhow::Result<()> {
        let Ok(locator) = self.locator(upstream) else { return Ok(()) };
        let Some(name) = upstream.pointer("/metadata/name").and_then(Value::as_str) else { return Ok(()) };
        let api: Api<DynamicObject> =
            Api::namespaced_with(self.member.clone(), &locator.downstream_namespace(), resource);
        match api.delete(name, &DeleteParams::background()).await {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(status)) if status.code == 404 => Ok(()),
            Err(error) => Err(anyhow::anyhow!("delete {name} from the member: {error}")),
        }
    }

    /// Patches the upstream object through the view of its cluster.
    async fn patch_upstream(
        &self,
        url: &str,
        resource: &ApiResource,
        upstream: &Value,
        patch: &Value,
    ) -> anyhow::Result<()> {
        let text = |pointer: &str| upstream.pointer(pointer).and_then(Value::as_str).unwrap_or_default();
        let cluster = transform::upstream_cluster(upstream).unwrap_or_default();
        let client = self.client(url, cluster)?;
        let api: Api<DynamicObject> = Api::namespaced_with(client, text("/metadata/namespace"), resource);
        let name = text("/metadata/name");
        match api.patch(name, &PatchParams::default(), &Patch::Merge(patch)).await {
            Ok(_) => Ok(()),
            // Changed or gone meanwhile: the watch brings the news, and another attempt.
            Err(kube::Error::Api(status)) if status.code == 409 || status.code == 404 => Ok(()),
            Err(error) => Err(anyhow::anyhow!("patch {name} upstream: {error}")),
        }
    }

    fn locator(&self, upstream: &Value) -> anyhow::Result<Locator> {
        let cluster =
            transform::upstream_cluster(upstream).ok_or_else(|| anyhow::anyhow!("no kcp.io/cluster annotation"))?;
        let namespace = upstream
            .pointer("/metadata/namespace")
            .and_then(Value::as_str)
            .ok_or_else(|| anyhow::anyhow!("a cluster-scoped object in a sync view"))?;
        Ok(Locator { sync_target: self.target.clone(), cluster: cluster.to_string(), namespace: namespace.to_string() })
    }

    /// Creates (applies) the downstream namespace of `locator`, once per run.
    async fn ensure_namespace(&self, name: &str, locator: &Locator) -> anyhow::Result<()> {
        if self.namespaces.lock().contains(name) {
            return Ok(());
        }
        let namespace = json!({
            "apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": name, "labels": {OWNER_LABEL: self.key},
                "annotations": {LOCATOR_ANNOTATION: locator.annotation(), UPSTREAM_CLUSTER_ANNOTATION: locator.cluster}},
        });
        let api: Api<DynamicObject> = Api::all_with(self.member.clone(), &namespace_resource());
        let params = PatchParams::apply(&self.config.field_manager).force();
        api.patch(name, &params, &Patch::Apply(&namespace))
            .await
            .map_err(|e| anyhow::anyhow!("create namespace {name}: {e}"))?;
        self.namespaces.lock().insert(name.to_string());
        Ok(())
    }
}

fn namespace_resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk("", "v1", "Namespace"), "namespaces")
}

fn to_value(object: &DynamicObject) -> Value {
    serde_json::to_value(object).unwrap_or(Value::Null)
}

/// `plural.group`: what names a resource in the agent's books.
pub fn resource_key(resource: &ApiResource) -> String {
    format!("{}.{}", resource.plural, resource.group)
}

fn upstream_id(resource: &ApiResource, object: &Value) -> Option<UpstreamId> {
    let text = |pointer: &str| object.pointer(pointer).and_then(Value::as_str).map(str::to_string);
    Some((
        resource_key(resource),
        text("/metadata/annotations/kcp.io~1cluster")?,
        text("/metadata/namespace")?,
        text("/metadata/name")?,
    ))
}
