//! The OCM hub controller of one shard, per logical cluster with OCM objects, run when an
//! OCM object of that cluster is written, at the next deadline it knows of (a lease or a
//! toleration running out) and on a slow resync:
//! - cluster health ([`super::health`]): each accepted ManagedCluster gets its namespace
//!   and lease; a lease not renewed in time makes it Unknown, and the taints follow its
//!   Available condition;
//! - every Placement decided again.
//!
//! A Placement's decisions are written ([`decisions`]) as PlacementDecision pages of at
//! most 100 clusters per decision group, labelled with the Placement's name and group
//! and owned by it (the garbage collector removes them with it). The pages are laid out
//! and written in the order `placement::plan_groups` gives, so a consumer that watches
//! them never sees a cluster that stays decided vanish while they are rewritten, also
//! when it changes group. A decision that does not change the pages writes no page and
//! no Event; a status that says the same writes nothing.

use super::decide::{self, Inputs};
use super::health;
use super::{CLUSTER_GROUP, PLACEMENT_LABEL};
use crate::controllers::{earliest, pacing, watch_clusters, DirtyClusters};
use crate::state::Shard;
use apiserver::objects;
use apiserver::registry::ResourceType;
use apiserver::storage::{self, ObjectRef, WriteOptions};
use decisions::{page, write_pages, write_status, Account};
use parking_lot::Mutex;
use placement::GroupPage;
use protocol::meta;
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

mod decisions;

/// How often every logical cluster with Placements is decided again without a write.
const RESYNC: Duration = Duration::from_secs(5);
/// The component the Events on Placements name as their source.
const SCHEDULER_COMPONENT: &str = "placement-scheduler";

/// The resources one hub reads, by plural.
struct Rows {
    placements: Arc<ResourceType>,
    decisions: Arc<ResourceType>,
    clusters: Arc<ResourceType>,
    sets: Arc<ResourceType>,
    bindings: Arc<ResourceType>,
    scores: Arc<ResourceType>,
    leases: Arc<ResourceType>,
    namespaces: Arc<ResourceType>,
    /// The Events on Placements.
    events: crate::events::Recorder,
}

impl Rows {
    fn of(shard: &Shard) -> Option<Rows> {
        let row = |version: &str, resource: &str| shard.registry.get(CLUSTER_GROUP, version, resource);
        Some(Rows {
            placements: row("v1beta1", "placements")?,
            decisions: row("v1beta1", "placementdecisions")?,
            clusters: row("v1", "managedclusters")?,
            sets: row("v1beta2", "managedclustersets")?,
            bindings: row("v1beta2", "managedclustersetbindings")?,
            scores: row("v1alpha1", "addonplacementscores")?,
            leases: shard.registry.get("coordination.k8s.io", "v1", "leases")?,
            namespaces: shard.registry.namespaces(),
            events: crate::events::Recorder::new(SCHEDULER_COMPONENT, &shard.name),
        })
    }

    fn ocm(&self) -> [&Arc<ResourceType>; 6] {
        [&self.placements, &self.decisions, &self.clusters, &self.sets, &self.bindings, &self.scores]
    }
}

/// Logical clusters whose OCM objects were written since their last pass, and when each
/// must be looked at again without a write.
#[derive(Default)]
struct Dirty {
    marked: Arc<DirtyClusters>,
    deadlines: Mutex<BTreeMap<String, jiff::Timestamp>>,
}

/// When each cluster's lease runs out, as last read, by (logical cluster, cluster): a
/// lease is read again only once that time has come, so a pass over many healthy
/// clusters reads no lease.
type Leases = Mutex<std::collections::HashMap<(String, String), jiff::Timestamp>>;

/// How the OCM hub paces decisions.
#[derive(Debug, Clone, Copy)]
pub struct Settings {
    /// Score-only changes move a placement's decisions at most once per this interval,
    /// unless the placement names its own (see [`placement::pace`]).
    pub damping: Duration,
}

/// Runs the controller until the process ends.
pub async fn run(shard: Arc<Shard>, settings: Settings) {
    let Some(rows) = Rows::of(&shard) else { return };
    let dirty = Dirty::default();
    // PlacementDecision writes are the controller's own and wake nothing.
    let watched: Vec<&Arc<ResourceType>> =
        rows.ocm().into_iter().filter(|rt| !Arc::ptr_eq(rt, &rows.decisions)).collect();
    watch_clusters(&shard, &watched, &dirty.marked);
    let leases = Leases::default();
    let mut resync = tokio::time::interval(RESYNC);
    loop {
        let next = dirty.deadlines.lock().values().min().copied();
        let wait = next.map_or(RESYNC, |at| {
            Duration::try_from(at.duration_since(jiff::Timestamp::now())).unwrap_or(Duration::ZERO)
        });
        tokio::select! {
            _ = dirty.marked.wake.notified() => {}
            _ = tokio::time::sleep(wait) => {
                let now = jiff::Timestamp::now();
                let mut deadlines = dirty.deadlines.lock();
                let due: Vec<String> = deadlines.iter().filter(|(_, at)| **at <= now).map(|(c, _)| c.clone()).collect();
                for cluster in due {
                    deadlines.remove(&cluster);
                    dirty.marked.mark(&cluster);
                }
            }
            _ = resync.tick() => {
                let mut hubs = BTreeSet::new();
                for rt in [&rows.placements, &rows.clusters] {
                    let _ = objects::scan(&shard.store, rt, |cluster, _| {
                        hubs.insert(cluster.to_string());
                    });
                }
                dirty.marked.extend(hubs);
            }
        }
        let clusters = dirty.marked.take();
        for cluster in clusters {
            let started = std::time::Instant::now();
            let done = hub(&shard, &rows, &leases, &cluster, settings).await;
            tracing::debug!(%cluster, took = ?started.elapsed(), "OCM hub pass");
            match done {
                Ok(Some(at)) => {
                    dirty.deadlines.lock().insert(cluster, at);
                }
                Ok(None) => {}
                Err(error) => {
                    tracing::warn!(%error, %cluster, "OCM hub pass failed; retrying");
                    dirty.deadlines.lock().insert(cluster, jiff::Timestamp::now() + Duration::from_millis(500));
                }
            }
        }
    }
}

/// Judges every ManagedCluster's health and decides every Placement of one logical
/// cluster; returns when it must be looked at again without a write.
async fn hub(
    shard: &Shard,
    rows: &Rows,
    leases: &Leases,
    cluster: &str,
    settings: Settings,
) -> anyhow::Result<Option<jiff::Timestamp>> {
    let list = |rt: &ResourceType| {
        objects::list_in_cluster(&shard.store, rt, cluster)
            .map_err(|e| anyhow::anyhow!("list {}: {}", rt.resource, e.message))
    };
    let mut next = None;
    for mut managed in list(&rows.clusters)? {
        if let Some(at) = judge(shard, rows, leases, cluster, &mut managed).await? {
            next = earliest(next, Some(at));
        }
    }
    let placements = list(&rows.placements)?;
    if placements.is_empty() {
        return Ok(next);
    }
    // Listed again after judging, which takes a while with many clusters: the decisions
    // read the clusters as they are now, not as they were when the pass began.
    let clusters = list(&rows.clusters)?;
    let sets = list(&rows.sets)?;
    let all_bindings = list(&rows.bindings)?;
    let scores = list(&rows.scores)?;
    let decisions = list(&rows.decisions)?;
    let pages_of = |namespace: &str, placement: &str| -> Vec<GroupPage> {
        decisions
            .iter()
            .filter(|d| {
                meta::namespace(d) == Some(namespace)
                    && meta::labels(d).get(PLACEMENT_LABEL).map(String::as_str) == Some(placement)
            })
            .filter_map(|d| page(placement, d))
            .collect()
    };
    // Balance counts each cluster's decisions of every placement but the one decided.
    let mut decided: BTreeMap<String, u64> = BTreeMap::new();
    for page in decisions.iter().filter_map(|d| page(meta::labels(d).get(PLACEMENT_LABEL)?, d)) {
        for cluster in page.clusters {
            *decided.entry(cluster).or_default() += 1;
        }
    }
    let now = jiff::Timestamp::now();
    let mut failed = None;
    for placement in &placements {
        if meta::is_deleting(placement) {
            continue;
        }
        let namespace = meta::namespace(placement).unwrap_or_default();
        let name = meta::name(placement).unwrap_or_default();
        let pages = pages_of(namespace, name);
        let current: Vec<String> = pages.iter().flat_map(|p| p.clusters.iter().cloned()).collect();
        let mut others = decided.clone();
        for cluster in &current {
            if let Some(count) = others.get_mut(cluster) {
                *count = count.saturating_sub(1);
            }
        }
        let bindings: Vec<Value> =
            all_bindings.iter().filter(|b| meta::namespace(b) == Some(namespace)).cloned().collect();
        let (pacing, moves) = pacing::read(placement, settings.damping);
        let inputs = Inputs {
            placement,
            clusters: &clusters,
            sets: &sets,
            bindings: &bindings,
            scores: &scores,
            current: &current,
            other_decisions: &others,
            pacing: &pacing,
            moves: &moves,
            now,
        };
        let verdict = decide::decide(inputs);
        let moves = verdict.pacing.as_ref().and_then(|p| p.moves.as_ref());
        if let Err(error) = pacing::write(shard, &rows.placements, placement, cluster, moves, None).await {
            tracing::warn!(%error, %cluster, namespace, name, "placement not written");
            failed = Some(error);
            continue;
        }
        next = earliest(next, verdict.decision.as_ref().and_then(|d| d.requeue_at));
        // Each decision says why its cluster was picked, with the scores, as the
        // framework reports it; the scores go into the ScoreUpdate event too.
        let reasons = Account::of(verdict.decision.as_ref(), &clusters);
        let written = write_pages(shard, rows, cluster, placement, &pages, &verdict.chosen, &reasons).await;
        let status = match written {
            Ok(names) => {
                let mut conditions = verdict.conditions.to_vec();
                conditions.extend(verdict.pacing.as_ref().and_then(|p| p.held_condition()));
                write_status(shard, rows, cluster, placement, &conditions, verdict.chosen.len(), &names).await
            }
            Err(error) => Err(error),
        };
        let rebalanced = verdict.pacing.as_ref().and_then(|p| p.rebalanced.as_deref());
        let status = match status {
            Ok(()) => pacing::write(shard, &rows.placements, placement, cluster, None, rebalanced).await,
            Err(error) => Err(error),
        };
        if let Err(error) = status {
            tracing::warn!(%error, %cluster, namespace, name, "placement not written");
            failed = Some(error);
        }
    }
    failed.map_or(Ok(next), Err)
}

/// One ManagedCluster's health: its namespace and lease exist once it is accepted; a
/// lease not renewed in time makes it Unknown; its taints follow its Available
/// condition. Returns when the lease runs out.
async fn judge(
    shard: &Shard,
    rows: &Rows,
    leases: &Leases,
    cluster: &str,
    managed: &mut Value,
) -> anyhow::Result<Option<jiff::Timestamp>> {
    if !health::accepted(managed) {
        return Ok(None);
    }
    let name = meta::name(managed).unwrap_or_default().to_string();
    let now = jiff::Timestamp::now();
    let key = (cluster.to_string(), name.clone());
    let known = leases.lock().get(&key).copied().filter(|expiry| *expiry > now);
    if let Some(expiry) = known {
        // The lease is known to be current: only the taints may need to follow a
        // condition the agent wrote.
        if let Some(taints) = health::wanted_taints(managed, now) {
            write_taints(shard, rows, cluster, &name, taints).await?;
        }
        return Ok(Some(expiry));
    }
    let lease_at = ObjectRef { cluster, namespace: Some(&name), name: health::LEASE_NAME };
    let lease = match storage::get(shard, &rows.leases, &lease_at) {
        Ok((lease, _)) => lease,
        Err(e) if e.is_not_found() => {
            // A lease lives in the cluster's namespace: only a cluster without one may lack it.
            let namespace_at = ObjectRef { cluster, namespace: None, name: &name };
            if storage::get(shard, &rows.namespaces, &namespace_at).is_err() {
                let namespace = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}});
                match storage::create(shard, &rows.namespaces, cluster, namespace, WriteOptions::default()).await {
                    Ok(_) => {}
                    Err(e) if e.is_already_exists() => {}
                    Err(e) => anyhow::bail!("create the namespace of cluster {name}: {}", e.message),
                }
            }
            let lease = health::new_lease(&name, now);
            match storage::create(shard, &rows.leases, cluster, lease.clone(), WriteOptions::default()).await {
                Ok(created) => created,
                Err(e) if e.is_already_exists() => lease,
                Err(e) => anyhow::bail!("create the lease of cluster {name}: {}", e.message),
            }
        }
        Err(e) => anyhow::bail!("read the lease of cluster {name}: {}", e.message),
    };
    let at = ObjectRef { cluster, namespace: None, name: &name };
    if let Some(condition) = health::stopped_condition(managed, &lease, now) {
        *managed =
            storage::guaranteed_update(shard, &rows.clusters, &at, Some("status"), WriteOptions::default(), |old| {
                let mut new = old.clone();
                let mut conditions: Vec<Value> =
                    old.pointer("/status/conditions").and_then(Value::as_array).cloned().unwrap_or_default();
                conditions.retain(|c| c.get("type").and_then(Value::as_str) != Some(health::AVAILABLE_CONDITION));
                conditions.push(condition.clone());
                let status = json!({"conditions": conditions});
                let merged = apiserver::conditions::with_transition_times(old.get("status"), &status);
                new["status"]["conditions"] = merged["conditions"].clone();
                Ok(new)
            })
            .await
            .map_err(|e| anyhow::anyhow!("mark cluster {name} Unknown: {}", e.message))?;
    }
    if let Some(taints) = health::wanted_taints(managed, now) {
        write_taints(shard, rows, cluster, &name, taints).await?;
    }
    let expiry = health::expires_at(managed, &lease).filter(|at| *at > now);
    match expiry {
        Some(at) => leases.lock().insert(key, at),
        None => leases.lock().remove(&key),
    };
    Ok(expiry)
}

async fn write_taints(shard: &Shard, rows: &Rows, cluster: &str, name: &str, taints: Vec<Value>) -> anyhow::Result<()> {
    let at = ObjectRef { cluster, namespace: None, name };
    storage::guaranteed_update(shard, &rows.clusters, &at, None, WriteOptions::default(), |old| {
        let mut new = old.clone();
        new["spec"]["taints"] = Value::Array(taints.clone());
        Ok(new)
    })
    .await
    .map(|_| ())
    .map_err(|e| anyhow::anyhow!("taint cluster {name}: {}", e.message))
}
