//! The agent as a KubeFleet member agent for one MemberCluster. An admin creates the
//! MemberCluster on the hub; the agent heartbeats it every `spec.heartbeatPeriodSeconds`
//! (`status.agentStatus`, `MemberAgent` Joined and Healthy), and applies the Works the
//! hub writes to namespace `fleet-member-<name>` to the member with server-side apply,
//! Namespaces and CustomResourceDefinitions first, each object marked with the Work it
//! came from. It reports each Work's Applied and Available conditions and one condition
//! pair per manifest, holds the Work with its finalizer while its objects may exist,
//! deletes them when the Work goes, and deletes objects no Work wants any more.
//!
//! Leaving (KubeFleet's InternalMemberCluster state Leave; here the agent reads the
//! MemberCluster itself): once the MemberCluster is being deleted the agent applies
//! nothing more, deletes every object it applied from the member's Works, lets go of
//! the Works, and only then reports Joined False, which tells the hub that it may delete
//! the member's namespace and let the MemberCluster go.
//!
//! Works are followed with a watch; every [`FULL_PASS`] every Work is applied again
//! (drift in the member is undone) and the sweep runs, and every [`RETRY`] the Works with
//! something not applied or not available yet are looked at again.

mod manifest;
mod status;

use anyhow::Context;
use futures::StreamExt;
use kube::api::{Api, DeleteParams, DynamicObject, ListParams, Patch, PatchParams};
use kube::core::{ApiResource, GroupVersionKind};
use kube::discovery::Scope;
use kube::runtime::watcher::{self, Event};
use kube::runtime::WatchStreamExt;
use kube::Client;
use serde_json::{json, Value};
use status::{Identifier, Outcome};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::Notify;

/// What the agent is told in KubeFleet mode.
#[derive(Debug, Clone)]
pub struct MemberConfig {
    /// A kubeconfig for the hub workspace.
    pub hub_kubeconfig: PathBuf,
    /// The MemberCluster's name.
    pub member_cluster: String,
    /// A kubeconfig for the member cluster.
    pub member_kubeconfig: PathBuf,
    /// How often the MemberCluster is heartbeated; `None`: its `spec.heartbeatPeriodSeconds`.
    pub heartbeat: Option<Duration>,
    /// The field manager of the agent's server-side applies.
    pub field_manager: String,
}

const CLUSTER_GROUP: &str = "cluster.kubernetes-fleet.io";
const PLACEMENT_GROUP: &str = "placement.kubernetes-fleet.io";
/// KubeFleet's default `spec.heartbeatPeriodSeconds`.
const DEFAULT_HEARTBEAT_SECONDS: u64 = 60;
/// How often Works with something not applied or not available yet are looked at again.
const RETRY: Duration = Duration::from_secs(2);
/// How often every Work is applied again and objects no Work wants are removed.
const FULL_PASS: Duration = Duration::from_secs(10);
/// Attempts at one apply that fails for want of the member (5xx, transport).
const APPLY_ATTEMPTS: u32 = 3;
/// Discovery attempts for a kind right after a CustomResourceDefinition was applied (the
/// member takes a moment to serve it).
const DISCOVERY_ATTEMPTS: u32 = 6;
/// Attempts at changing a Work's finalizers while others change them too.
const FINALIZER_ATTEMPTS: u32 = 5;
/// The kinds the sweep lists from the start (an earlier run may have applied them);
/// others once this run applies them: group, version, kind, plural, namespaced.
const SWEPT_FROM_START: &[(&str, &str, &str, &str, bool)] = &[
    ("", "v1", "ConfigMap", "configmaps", true),
    ("", "v1", "Secret", "secrets", true),
    ("", "v1", "Namespace", "namespaces", false),
    ("", "v1", "Service", "services", true),
    ("", "v1", "ServiceAccount", "serviceaccounts", true),
    ("apps", "v1", "Deployment", "deployments", true),
];

fn resource(group: &str, version: &str, kind: &str, plural: &str) -> ApiResource {
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, version, kind), plural)
}

fn now() -> String {
    jiff::Timestamp::now().strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

fn to_value(object: &DynamicObject) -> Value {
    serde_json::to_value(object).unwrap_or(Value::Null)
}

fn text<'a>(object: &'a Value, pointer: &str) -> &'a str {
    object.pointer(pointer).and_then(Value::as_str).unwrap_or_default()
}

/// Whether the member refuses an object itself (rather than failing to take it).
fn refused(code: u16) -> bool {
    (400..500).contains(&code) && code != 429
}

/// Runs until the process ends.
pub async fn run(config: MemberConfig) -> anyhow::Result<()> {
    let hub = Client::try_from(crate::kube_config(&config.hub_kubeconfig).await?).context("build the hub client")?;
    let member =
        Client::try_from(crate::kube_config(&config.member_kubeconfig).await?).context("build the member client")?;
    let members: Api<DynamicObject> =
        Api::all_with(hub.clone(), &resource(CLUSTER_GROUP, "v1", "MemberCluster", "memberclusters"));
    let namespace = format!("fleet-member-{}", config.member_cluster);
    let works: Api<DynamicObject> =
        Api::namespaced_with(hub, &namespace, &resource(PLACEMENT_GROUP, "v1", "Work", "works"));
    tracing::info!(member_cluster = %config.member_cluster, %namespace, "KubeFleet member agent started");
    let leaving = Arc::new(AtomicBool::new(false));
    let left = Arc::new(AtomicBool::new(false));
    let beat_now = Arc::new(Notify::new());
    let heartbeat = Heartbeat {
        members,
        name: config.member_cluster.clone(),
        every: config.heartbeat,
        leaving: leaving.clone(),
        left: left.clone(),
    };
    // The first heartbeat comes before any Work is applied: a cluster that is leaving applies nothing.
    let mut wait = heartbeat.beat().await;
    let woken = beat_now.clone();
    tokio::spawn(async move {
        loop {
            // The applier wakes the heartbeat once it has left, so the hub hears it at once.
            tokio::select! {
                _ = tokio::time::sleep(wait) => {}
                _ = woken.notified() => {}
            }
            wait = heartbeat.beat().await;
        }
    });
    let applied_types = SWEPT_FROM_START
        .iter()
        .map(|&(group, version, kind, plural, namespaced)| {
            let found = Resolved { resource: resource(group, version, kind, plural), namespaced };
            (key(&found.resource), found)
        })
        .collect();
    let mut applier = Applier {
        member,
        works,
        namespace,
        field_manager: config.field_manager,
        leaving,
        left,
        beat_now,
        resolved: HashMap::new(),
        applied_types,
        crd_applied: false,
        reconciled: HashMap::new(),
        pending: BTreeSet::new(),
        announced: HashMap::new(),
    };
    applier.follow().await
}

/// The MemberCluster's heartbeat.
struct Heartbeat {
    members: Api<DynamicObject>,
    name: String,
    /// The period when the command line sets it.
    every: Option<Duration>,
    /// Set while the MemberCluster is being deleted.
    leaving: Arc<AtomicBool>,
    /// Set by the applier once it removed what it applied, while leaving.
    left: Arc<AtomicBool>,
}

impl Heartbeat {
    /// One heartbeat; returns the wait until the next.
    async fn beat(&self) -> Duration {
        let default = self.every.unwrap_or(Duration::from_secs(DEFAULT_HEARTBEAT_SECONDS));
        match self.report().await {
            Ok(Some(period)) => self.every.unwrap_or(period),
            Ok(None) => {
                tracing::info!(member_cluster = %self.name, "the MemberCluster does not exist; looking again next period");
                default
            }
            Err(error) => {
                tracing::warn!(error = %format!("{error:#}"), "the heartbeat failed; trying again next period");
                default
            }
        }
    }

    /// Reports the agent Joined (or Left) and Healthy; returns the MemberCluster's
    /// heartbeat period, or `None` when there is no MemberCluster.
    async fn report(&self) -> anyhow::Result<Option<Duration>> {
        let Some(cluster) = self.members.get_opt(&self.name).await.context("read the MemberCluster")? else {
            return Ok(None);
        };
        let cluster = to_value(&cluster);
        let leaving = manifest::deleting(&cluster);
        if self.leaving.swap(leaving, Ordering::Relaxed) != leaving && leaving {
            tracing::info!(member_cluster = %self.name, "the MemberCluster is being deleted: leaving, no Work is applied any more");
        }
        if !leaving {
            // A MemberCluster of the same name made again: join it afresh.
            self.left.store(false, Ordering::Relaxed);
        }
        let left = leaving && self.left.load(Ordering::Relaxed);
        let patch = json!({"status": {"agentStatus": status::agent_status(&cluster, left, &now())}});
        self.members
            .patch_status(&self.name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .context("write the heartbeat")?;
        let seconds = cluster.pointer("/spec/heartbeatPeriodSeconds").and_then(Value::as_u64);
        Ok(Some(Duration::from_secs(seconds.filter(|s| *s > 0).unwrap_or(DEFAULT_HEARTBEAT_SECONDS))))
    }
}

/// A resource of the member, as discovery resolved it.
#[derive(Debug, Clone)]
struct Resolved {
    resource: ApiResource,
    namespaced: bool,
}

/// `plural.group`: what names a resource in the agent's books.
fn key(resource: &ApiResource) -> String {
    format!("{}.{}", resource.plural, resource.group)
}

/// Applies the Works to the member; one task owns it.
struct Applier {
    member: Client,
    /// The Works in the MemberCluster's namespace of the hub.
    works: Api<DynamicObject>,
    /// That namespace.
    namespace: String,
    field_manager: String,
    leaving: Arc<AtomicBool>,
    /// Set once, while leaving, everything applied is removed and the Works let go.
    left: Arc<AtomicBool>,
    /// Wakes the heartbeat (to report Left at once).
    beat_now: Arc<Notify>,
    /// Member discovery, per kind asked for.
    resolved: HashMap<GroupVersionKind, Resolved>,
    /// The resources the sweep lists, by [`key`].
    applied_types: BTreeMap<String, Resolved>,
    /// Whether the current Work's pass applied a CustomResourceDefinition.
    crd_applied: bool,
    /// The [`manifest::fingerprint`] of each Work last settled: a watch event that
    /// changes none of it (the status the agent wrote) needs no pass.
    reconciled: HashMap<String, String>,
    /// Works with something not settled, looked at again every [`RETRY`].
    pending: BTreeSet<String>,
    /// The generation of each Work whose manifests were all applied, for the log.
    announced: HashMap<String, i64>,
}

impl Applier {
    /// Follows the Works until the watch ends (it does not: it retries).
    async fn follow(&mut self) -> anyhow::Result<()> {
        let stream = watcher::watcher(self.works.clone(), watcher::Config::default()).default_backoff();
        futures::pin_mut!(stream);
        let mut tick = tokio::time::interval(RETRY);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut last_full_pass: Option<Instant> = None;
        loop {
            tokio::select! {
                event = stream.next() => match event {
                    Some(Ok(Event::Apply(work) | Event::InitApply(work))) => self.changed(&to_value(&work)).await,
                    Some(Ok(Event::Delete(work))) => self.forget(work.metadata.name.as_deref().unwrap_or_default()),
                    Some(Ok(Event::Init | Event::InitDone)) => {}
                    Some(Err(error)) => tracing::warn!(%error, "watching the Works failed; retrying"),
                    None => anyhow::bail!("the watch of the Works ended"),
                },
                _ = tick.tick() => {
                    if self.leaving() {
                        self.leave_once().await;
                    } else if last_full_pass.is_none_or(|at| at.elapsed() >= FULL_PASS) {
                        self.full_pass().await;
                        last_full_pass = Some(Instant::now());
                    } else {
                        self.retry_pending().await;
                    }
                }
            }
        }
    }

    fn leaving(&self) -> bool {
        self.leaving.load(Ordering::Relaxed)
    }

    /// A Work the watch reports.
    async fn changed(&mut self, work: &Value) {
        let name = text(work, "/metadata/name");
        let unchanged = self.reconciled.get(name) == Some(&manifest::fingerprint(work));
        if self.leaving() || (unchanged && !self.pending.contains(name)) {
            return;
        }
        self.handle(work).await;
    }

    fn forget(&mut self, name: &str) {
        self.pending.remove(name);
        self.reconciled.remove(name);
        self.announced.remove(name);
    }

    /// Every Work applied again, then the sweep (only after a full list).
    async fn full_pass(&mut self) {
        if self.leaving() {
            return;
        }
        let works: Vec<Value> = match self.works.list(&ListParams::default()).await {
            Ok(list) => list.items.iter().map(to_value).collect(),
            Err(error) => return tracing::warn!(%error, "listing the Works failed; retrying"),
        };
        self.pending.clear();
        for work in &works {
            self.handle(work).await;
        }
        if let Err(error) = self.sweep(&works).await {
            tracing::warn!(error = %format!("{error:#}"), "removing objects no Work wants failed; retrying");
        }
    }

    /// The Works not settled at their last pass, read again.
    async fn retry_pending(&mut self) {
        if self.leaving() {
            return;
        }
        for name in self.pending.clone() {
            match self.works.get_opt(&name).await {
                Ok(Some(work)) => self.handle(&to_value(&work)).await,
                Ok(None) => self.forget(&name),
                Err(error) => tracing::warn!(%error, work = %name, "reading a Work failed; retrying"),
            }
        }
    }

    /// One pass over a Work, and the books: settled, or pending.
    async fn handle(&mut self, work: &Value) {
        let name = text(work, "/metadata/name").to_string();
        match self.reconcile(&name, work).await {
            Ok(true) => {
                self.pending.remove(&name);
                self.reconciled.insert(name, manifest::fingerprint(work));
            }
            Ok(false) => {
                self.reconciled.remove(&name);
                self.pending.insert(name);
            }
            Err(error) => {
                tracing::warn!(error = %format!("{error:#}"), work = %name, "a pass over a Work failed; retrying");
                self.reconciled.remove(&name);
                self.pending.insert(name);
            }
        }
    }

    /// Cleans up after a Work being deleted, or holds it, applies its manifests and
    /// reports its status. Whether it is settled (nothing left to wait for).
    async fn reconcile(&mut self, name: &str, work: &Value) -> anyhow::Result<bool> {
        if manifest::deleting(work) {
            self.clean_up(name, work).await?;
            return Ok(true);
        }
        if manifest::finalizer_patch(work, true).is_some() {
            self.set_finalizer(name, true).await?;
        }
        let manifests = manifest::manifests(work);
        let mut outcomes: Vec<Option<Outcome>> = vec![None; manifests.len()];
        self.crd_applied = false;
        for index in manifest::apply_order(manifests) {
            outcomes[index] = Some(self.apply(name, index, &manifests[index]).await);
        }
        let outcomes: Vec<Outcome> = outcomes.into_iter().flatten().collect();
        let generation = work.pointer("/metadata/generation").and_then(Value::as_i64).unwrap_or(0);
        let previous = work.get("status").cloned().unwrap_or(Value::Null);
        let reported = status::work_status(&previous, generation, &outcomes, &now());
        if !status::same_status(&previous, &reported) {
            for outcome in &outcomes {
                if let Err(message) = &outcome.result {
                    let Identifier { ordinal, kind, namespace, name: object, .. } = &outcome.identifier;
                    tracing::warn!(work = name, ordinal, %kind, %namespace, %object, %message, "a manifest is not applied");
                }
            }
            let patch = json!({ "status": reported });
            self.works
                .patch_status(name, &PatchParams::default(), &Patch::Merge(&patch))
                .await
                .with_context(|| format!("write the status of Work {name}"))?;
        }
        if outcomes.iter().all(|outcome| outcome.result.is_ok()) && self.announced.get(name) != Some(&generation) {
            tracing::info!(work = name, generation, manifests = outcomes.len(), "applied a Work");
            self.announced.insert(name.to_string(), generation);
        }
        Ok(outcomes.iter().all(Outcome::settled))
    }

    /// Applies the manifest at `ordinal` of Work `work`.
    async fn apply(&mut self, work: &str, ordinal: usize, manifest: &Value) -> Outcome {
        let mut identifier = Identifier { ordinal, ..Identifier::default() };
        let Some((group, version, kind)) = manifest::group_version_kind(manifest) else {
            return Outcome::failed(identifier, "the manifest names no apiVersion or kind");
        };
        identifier.group.clone_from(&group);
        identifier.version.clone_from(&version);
        identifier.kind.clone_from(&kind);
        identifier.name = text(manifest, "/metadata/name").to_string();
        if identifier.name.is_empty() {
            return Outcome::failed(identifier, "the manifest has no metadata.name");
        }
        let gvk = GroupVersionKind::gvk(&group, &version, &kind);
        let found = match self.resolve(&gvk).await {
            Ok(Some(found)) => found,
            Ok(None) => {
                let message = format!("the member serves no {kind} in {}", gvk.api_version());
                return Outcome::failed(identifier, message);
            }
            Err(error) => return Outcome::failed(identifier, format!("{error:#}")),
        };
        identifier.resource.clone_from(&found.resource.plural);
        let namespace = found.namespaced.then(|| match text(manifest, "/metadata/namespace") {
            "" => "default".to_string(),
            namespace => namespace.to_string(),
        });
        identifier.namespace = namespace.clone().unwrap_or_default();
        let object = manifest::prepared(manifest, namespace.as_deref(), work, &self.namespace);
        self.applied_types.entry(key(&found.resource)).or_insert_with(|| found.clone());
        let api: Api<DynamicObject> = match &namespace {
            Some(namespace) => Api::namespaced_with(self.member.clone(), namespace, &found.resource),
            None => Api::all_with(self.member.clone(), &found.resource),
        };
        let params = PatchParams::apply(&self.field_manager).force();
        let mut attempt = 1;
        let result = loop {
            match api.patch(&identifier.name, &params, &Patch::Apply(&object)).await {
                Ok(live) => break Ok(status::availability(&group, &kind, &to_value(&live))),
                Err(kube::Error::Api(refusal)) if refused(refusal.code) => {
                    if refusal.code == 404 {
                        // The resource may have gone from the member: discover it again next time.
                        self.resolved.remove(&gvk);
                    }
                    break Err(refusal.message.clone());
                }
                Err(error) if attempt >= APPLY_ATTEMPTS => break Err(format!("apply to the member: {error}")),
                Err(_) => {
                    tokio::time::sleep(Duration::from_millis(250 * u64::from(attempt))).await;
                    attempt += 1;
                }
            }
        };
        if result.is_ok() && group == "apiextensions.k8s.io" && kind == "CustomResourceDefinition" {
            self.crd_applied = true;
        }
        Outcome { identifier, result }
    }

    /// The member's resource of `gvk`, discovered once and cached; `None` when the member
    /// does not serve it (asked again next time: a definition may come).
    async fn resolve(&mut self, gvk: &GroupVersionKind) -> anyhow::Result<Option<Resolved>> {
        if let Some(found) = self.resolved.get(gvk) {
            return Ok(Some(found.clone()));
        }
        let attempts = if self.crd_applied { DISCOVERY_ATTEMPTS } else { 1 };
        for attempt in 0..attempts {
            if attempt > 0 {
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
            match kube::discovery::pinned_kind(&self.member, gvk).await {
                Ok((resource, capabilities)) => {
                    let found = Resolved { resource, namespaced: capabilities.scope == Scope::Namespaced };
                    self.resolved.insert(gvk.clone(), found.clone());
                    return Ok(Some(found));
                }
                Err(kube::Error::Api(status)) if status.code == 404 => {}
                Err(kube::Error::Discovery(_)) => {}
                Err(error) => {
                    return Err(error)
                        .with_context(|| format!("discover {} {} in the member", gvk.api_version(), gvk.kind))
                }
            }
        }
        Ok(None)
    }

    /// Leaves, unless it has already: removes everything applied and lets go of the
    /// Works, then wakes the heartbeat to report Left. A failure is tried again next tick.
    async fn leave_once(&mut self) {
        if self.left.load(Ordering::Relaxed) {
            return;
        }
        match self.leave().await {
            Ok(removed) => {
                tracing::info!(removed, "left the fleet: every object applied from a Work is removed");
                self.reconciled.clear();
                self.pending.clear();
                self.announced.clear();
                self.left.store(true, Ordering::Relaxed);
                self.beat_now.notify_one();
            }
            Err(error) => tracing::warn!(error = %format!("{error:#}"), "leaving failed; retrying"),
        }
    }

    /// Deletes every object of the member applied from a Work of this member's namespace
    /// (whatever the Works still want: the member is leaving), then takes the agent's
    /// finalizer off every Work. How many objects went.
    async fn leave(&mut self) -> anyhow::Result<usize> {
        let works = self.list_works().await?;
        for work in &works {
            self.learn_types(work).await;
        }
        let selector = ListParams::default().labels(manifest::WORK_LABEL);
        let mut removed = 0;
        for found in self.applied_types.values() {
            let objects = self.applied(found, &selector).await?;
            for object in objects {
                if manifest::applied_from(&object, &self.namespace).is_some() {
                    self.delete(found, &object).await?;
                    removed += 1;
                }
            }
        }
        for work in &works {
            self.set_finalizer(text(work, "/metadata/name"), false).await?;
        }
        Ok(removed)
    }

    /// Adds the member's resources of `work`'s manifests to those the sweep and the
    /// clean-up list: an earlier run may have applied them.
    async fn learn_types(&mut self, work: &Value) {
        for entry in manifest::manifests(work) {
            let Some((group, version, kind)) = manifest::group_version_kind(entry) else { continue };
            if let Ok(Some(found)) = self.resolve(&GroupVersionKind::gvk(&group, &version, &kind)).await {
                self.applied_types.entry(key(&found.resource)).or_insert(found);
            }
        }
    }

    /// Deletes what the agent applied from Work `name`, being deleted, then lets go of it.
    async fn clean_up(&mut self, name: &str, work: &Value) -> anyhow::Result<()> {
        if !manifest::holds_finalizer(work) {
            return Ok(());
        }
        // What this run has not applied yet (applied by an earlier run) is listed too.
        self.learn_types(work).await;
        let selector =
            ListParams::default().labels(&format!("{}={}", manifest::WORK_LABEL, manifest::label_value(name)));
        // Another placement's Work may want the same object: then it stays.
        let mut others = self.list_works().await?;
        others.retain(|w| text(w, "/metadata/name") != name);
        let mut removed = 0;
        for found in self.applied_types.values() {
            let objects = self.applied(found, &selector).await?;
            let (group, kind) = (found.resource.group.as_str(), found.resource.kind.as_str());
            for object in objects {
                if manifest::applied_from(&object, &self.namespace) != Some(name) {
                    continue;
                }
                let (namespace, object_name) = (text(&object, "/metadata/namespace"), text(&object, "/metadata/name"));
                if others.iter().any(|w| manifest::wanted(Some(w), group, kind, namespace, object_name)) {
                    continue;
                }
                self.delete(found, &object).await?;
                removed += 1;
            }
        }
        self.set_finalizer(name, false).await?;
        tracing::info!(work = name, removed, "a deleted Work's objects are removed from the member");
        Ok(())
    }

    /// Deletes the objects of our Works that no Work wants any more: their Work is gone or
    /// no longer names them. `works` is a full list; each Work is read again just before
    /// one of its objects goes.
    async fn sweep(&self, works: &[Value]) -> anyhow::Result<()> {
        let selector = ListParams::default().labels(manifest::WORK_LABEL);
        for found in self.applied_types.values() {
            let objects = self.applied(found, &selector).await?;
            let (group, kind) = (found.resource.group.as_str(), found.resource.kind.as_str());
            for object in objects {
                let Some(work) = manifest::applied_from(&object, &self.namespace) else { continue };
                let (namespace, name) = (text(&object, "/metadata/namespace"), text(&object, "/metadata/name"));
                // Wanted by the Work that applied it last, or by another (two placements
                // may place one object): it stays.
                if works.iter().any(|w| manifest::wanted(Some(w), group, kind, namespace, name)) {
                    continue;
                }
                let current = self.works.get_opt(work).await.with_context(|| format!("read Work {work}"))?;
                if manifest::wanted(current.map(|w| to_value(&w)).as_ref(), group, kind, namespace, name) {
                    continue;
                }
                tracing::info!(work, kind, namespace, name, "removing an object no Work wants any more");
                self.delete(found, &object).await?;
            }
        }
        Ok(())
    }

    /// Every Work of the member's namespace.
    async fn list_works(&self) -> anyhow::Result<Vec<Value>> {
        let list = self.works.list(&ListParams::default()).await.context("list the Works")?;
        Ok(list.items.iter().map(to_value).collect())
    }

    /// The member's objects of one applied resource that `selector` matches; none when
    /// the member no longer serves the resource.
    async fn applied(&self, found: &Resolved, selector: &ListParams) -> anyhow::Result<Vec<Value>> {
        let api: Api<DynamicObject> = Api::all_with(self.member.clone(), &found.resource);
        match api.list(selector).await {
            Ok(list) => Ok(list.items.iter().map(to_value).collect()),
            Err(kube::Error::Api(status)) if status.code == 404 => Ok(Vec::new()),
            Err(error) => Err(error).with_context(|| format!("list the member's {}", found.resource.plural)),
        }
    }

    /// Deletes one object of the member; one already gone is fine.
    async fn delete(&self, found: &Resolved, object: &Value) -> anyhow::Result<()> {
        let name = text(object, "/metadata/name");
        let api: Api<DynamicObject> = match text(object, "/metadata/namespace") {
            "" => Api::all_with(self.member.clone(), &found.resource),
            namespace => Api::namespaced_with(self.member.clone(), namespace, &found.resource),
        };
        match api.delete(name, &DeleteParams::background()).await {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(status)) if status.code == 404 => Ok(()),
            Err(error) => Err(error).with_context(|| format!("delete {} {name} from the member", found.resource.kind)),
        }
    }

    /// Puts the agent's finalizer on Work `name` (`held`) or takes it off, re-reading the
    /// Work when it changed meanwhile (409).
    async fn set_finalizer(&self, name: &str, held: bool) -> anyhow::Result<()> {
        for _ in 0..FINALIZER_ATTEMPTS {
            let Some(work) = self.works.get_opt(name).await.with_context(|| format!("read Work {name}"))? else {
                return Ok(());
            };
            let work = to_value(&work);
            // A Work being deleted takes no new finalizer; the sweep removes its objects.
            if held && manifest::deleting(&work) {
                return Ok(());
            }
            let Some(patch) = manifest::finalizer_patch(&work, held) else { return Ok(()) };
            match self.works.patch(name, &PatchParams::default(), &Patch::Merge(&patch)).await {
                Ok(_) => return Ok(()),
                Err(kube::Error::Api(status)) if status.code == 409 => continue,
                Err(kube::Error::Api(status)) if status.code == 404 => return Ok(()),
                Err(error) => return Err(error).with_context(|| format!("update the finalizers of Work {name}")),
            }
        }
        anyhow::bail!("the finalizers of Work {name} kept changing")
    }
}
