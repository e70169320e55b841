//! The Fleet hub controller of one shard: what wakes it and what each pass covers
//! ([`super::hub`] does the pass).
//!
//! One store watch follows every write of the shard and turns it into triggers per hub
//! logical cluster:
//! - a ClusterResourcePlacement written: that placement;
//! - a Work written (its member agent reported): the Work's placement;
//! - a ClusterResourceBinding gone: its placement;
//! - a MemberCluster written: that member, whose hub status is brought up; placements
//!   are decided again only when what the scheduler sees of it changed (a heartbeat
//!   alone changes nothing);
//! - an override written: every placement of the hub;
//! - any other object: the placements that select it (its namespace, or its cluster-scoped
//!   resource), from the index each pass leaves, so a changed ConfigMap makes a new
//!   resource snapshot at once.
//!
//! Besides, a member is looked at again when its eligibility may lapse (heartbeat or
//! health too old), and every hub is passed whole on a slow resync.

use super::hub::Hub;
pub use super::scope::Settings;
use super::scope::Triggers;
use super::scope::{MemberMemo, Rows, Selection};
use super::wake;
use super::*;
use crate::state::Shard;
use crate::store_watch::{StoreConsumer, StoreSource};
use apiserver::objects;
use parking_lot::Mutex;
use protocol::watcher::{drive, Backoff};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Notify;

/// The prefix of a member's reserved namespace (`fleet-member-<name>`).
const MEMBER_NAMESPACE_PREFIX: &str = "fleet-member-";

/// The component the hub's events name (KubeFleet's placement controller).
const EVENT_COMPONENT: &str = "cluster-resource-placement-controller";
/// The component the Events on MemberClusters name as their source (KubeFleet's hub
/// member-cluster controller's).
const MEMBER_EVENT_COMPONENT: &str = "mcv1beta1";

/// A pass that takes this long is logged at info, with how long each half took.
const SLOW_PASS: Duration = Duration::from_secs(1);

/// How often every hub is passed whole without a write.
const RESYNC: Duration = Duration::from_secs(30);

/// Which placements of each hub select what, as the last pass of each found.
#[derive(Default)]
struct SelectionIndex {
    /// (hub, namespace) → placements carrying that namespace's contents.
    namespaces: HashMap<(String, String), BTreeSet<String>>,
    /// (hub, `group/resource/`) → placements picking cluster-scoped objects of it.
    resources: HashMap<(String, String), BTreeSet<String>>,
    /// hub → placement → what it selected. A hub is here only while one of its placements
    /// has a selection recorded: most writes are to hubs with none, and are let through
    /// after one lookup.
    by_placement: HashMap<String, HashMap<String, Selection>>,
}

impl SelectionIndex {
    fn record(&mut self, hub: &str, placement: &str, selection: Option<Selection>) {
        if let Some(placements) = self.by_placement.get_mut(hub) {
            if let Some(old) = placements.remove(placement) {
                for namespace in old.namespaces {
                    remove_entry(&mut self.namespaces, (hub.to_string(), namespace), placement);
                }
                for resource in old.resources {
                    remove_entry(&mut self.resources, (hub.to_string(), resource), placement);
                }
            }
            if placements.is_empty() {
                self.by_placement.remove(hub);
            }
        }
        let Some(selection) = selection else { return };
        for namespace in &selection.namespaces {
            let at = (hub.to_string(), namespace.clone());
            self.namespaces.entry(at).or_default().insert(placement.to_string());
        }
        for resource in &selection.resources {
            let at = (hub.to_string(), resource.clone());
            self.resources.entry(at).or_default().insert(placement.to_string());
        }
        self.by_placement.entry(hub.to_string()).or_default().insert(placement.to_string(), selection);
    }
}

fn remove_entry(map: &mut HashMap<(String, String), BTreeSet<String>>, key: (String, String), placement: &str) {
    if let Some(set) = map.get_mut(&key) {
        set.remove(placement);
        if set.is_empty() {
            map.remove(&key);
        }
    }
}

/// The controller's shared state: triggers per hub, the selection index, the wake-up.
#[derive(Default)]
struct State {
    pending: Mutex<BTreeMap<String, Triggers>>,
    index: Mutex<SelectionIndex>,
    wake: Notify,
}

impl State {
    fn trigger(&self, hub: &str, add: impl FnOnce(&mut Triggers)) {
        add(self.pending.lock().entry(hub.to_string()).or_default());
        self.wake.notify_one();
    }
}

/// Turns every committed write of the shard into triggers.
struct Feed(Arc<State>);

impl StoreConsumer for Feed {
    fn page(&mut self, items: &[(bytes::Bytes, store::Versioned)]) {
        // A fresh list (start-up, or after the watch fell behind): every hub with Fleet
        // objects is passed whole.
        for (key, _) in items {
            if let Some((group, _, hub, _, _)) = parts(key) {
                if group == CLUSTER_GROUP || group == PLACEMENT_GROUP {
                    self.0.trigger(hub, |t| t.all = true);
                }
            }
        }
    }

    fn event(&mut self, event: &store::Event) {
        let Some((group, resource, hub, namespace, name)) = parts(&event.key) else { return };
        match (group, resource) {
            (CLUSTER_GROUP, "memberclusters") => self.0.trigger(hub, |t| {
                t.members.insert(name.to_string());
            }),
            // A status the hub wrote itself tells it nothing new (KubeFleet's placement
            // controller, too, ignores status-only updates).
            (PLACEMENT_GROUP, "clusterresourceplacements") if !status_only(event) => self.0.trigger(hub, |t| {
                t.placements.insert(name.to_string());
            }),
            (PLACEMENT_GROUP, "clusterresourceplacements") => {}
            // A Work wakes its placement when its member reported (status), when it is
            // being deleted or is gone; creates and spec updates are the hub's own writes
            // (KubeFleet's work generator ignores those as well).
            (PLACEMENT_GROUP, "works") => {
                let Some(prev) = &event.prev else { return };
                if let Some(parent) = wake::work_wakes(event.value.as_deref(), &prev.value) {
                    self.0.trigger(hub, |t| {
                        t.placements.insert(parent);
                    });
                }
            }
            // A binding gone (its Works removed from the member): the rollout may use the
            // room it held.
            (PLACEMENT_GROUP, "clusterresourcebindings") if event.value.is_none() => {
                let Some(prev) = &event.prev else { return };
                if let Some(parent) = wake::parent(&prev.value) {
                    self.0.trigger(hub, |t| {
                        t.placements.insert(parent);
                    });
                }
            }
            (PLACEMENT_GROUP, "clusterresourceoverrides" | "resourceoverrides") => {
                self.0.trigger(hub, |t| t.all = true)
            }
            // Envelopes are placed like any object: the placements that select them.
            (PLACEMENT_GROUP, "clusterresourceenvelopes" | "resourceenvelopes") => {
                self.wake_selecting(group, resource, hub, namespace, name)
            }
            // The controller's own writes.
            (PLACEMENT_GROUP, _) => {}
            // A member's reserved namespace: its leave flow waits for it to go.
            ("core", "namespaces") if name.starts_with(MEMBER_NAMESPACE_PREFIX) && event.value.is_none() => {
                self.0.trigger(hub, |t| {
                    t.members.insert(name[MEMBER_NAMESPACE_PREFIX.len()..].to_string());
                })
            }
            _ => self.wake_selecting(group, resource, hub, namespace, name),
        }
    }
}

impl Feed {
    /// Wakes the placements that select a written object: its namespace's, or its
    /// cluster-scoped resource's, from the index the last passes left.
    fn wake_selecting(&self, group: &str, resource: &str, hub: &str, namespace: &str, name: &str) {
        let index = self.0.index.lock();
        if !index.by_placement.contains_key(hub) {
            return;
        }
        let selecting = match namespace.is_empty() {
            true => index.resources.get(&(hub.to_string(), format!("{group}/{resource}/"))),
            false => index.namespaces.get(&(hub.to_string(), namespace.to_string())),
        };
        // A Namespace object is selected by its own name.
        let selecting_namespace = (group == "core" && resource == "namespaces")
            .then(|| index.namespaces.get(&(hub.to_string(), name.to_string())))
            .flatten();
        let placements: BTreeSet<String> =
            selecting.into_iter().chain(selecting_namespace).flatten().cloned().collect();
        drop(index);
        if !placements.is_empty() {
            self.0.trigger(hub, |t| t.placements.extend(placements));
        }
    }
}

/// Whether a write changed an object's status and nothing else the hub reads.
fn status_only(event: &store::Event) -> bool {
    let (Some(value), Some(prev)) = (&event.value, &event.prev) else { return false };
    wake::status_only(value, &prev.value)
}

/// A key's storage group (`core` for the core group), resource, logical cluster,
/// namespace and name.
fn parts(key: &[u8]) -> Option<(&str, &str, &str, &str, &str)> {
    let parts = objects::split_key_in_full(key)?;
    Some((parts.group, parts.resource, parts.cluster, parts.namespace, parts.name))
}

/// Runs the controller until the process ends.
pub async fn run(shard: Arc<Shard>, settings: Settings) {
    let Some(rows) = Rows::of(&shard) else { return };
    let state = Arc::new(State::default());
    let mut source = StoreSource::new(shard.store.clone(), Vec::new(), Feed(state.clone())).paged(500);
    let retry = crate::controllers::REQUEUE_DELAY;
    tokio::spawn(async move { drive::run("fleet", &mut source, Backoff::new(retry, retry)).await });
    let recorder = crate::events::Recorder::new(EVENT_COMPONENT, &shard.name);
    let member_recorder = crate::events::Recorder::new(MEMBER_EVENT_COMPONENT, &shard.name);
    let mut memos: HashMap<String, MemberMemo> = HashMap::new();
    let mut wakes: BTreeMap<(String, String), jiff::Timestamp> = BTreeMap::new();
    let mut resync = tokio::time::interval(RESYNC);
    loop {
        let now = jiff::Timestamp::now();
        let mut next = None;
        for (hub, memo) in &mut memos {
            let (due, at) = memo.due(now);
            if !due.is_empty() {
                state.trigger(hub, |t| t.members.extend(due));
            }
            next = crate::controllers::earliest(next, at);
        }
        let due: Vec<(String, String)> = wakes.iter().filter(|(_, at)| **at <= now).map(|(k, _)| k.clone()).collect();
        for (hub, placement) in due {
            wakes.remove(&(hub.clone(), placement.clone()));
            state.trigger(&hub, |t| {
                t.placements.insert(placement);
            });
        }
        next = crate::controllers::earliest(next, wakes.values().min().copied());
        let wait = next.map_or(RESYNC, |at| Duration::try_from(at.duration_since(now)).unwrap_or(Duration::ZERO));
        tokio::select! {
            _ = state.wake.notified() => {}
            _ = tokio::time::sleep(wait) => {}
            _ = resync.tick() => {
                let mut hubs = BTreeSet::new();
                for rt in [&rows.placements, &rows.members] {
                    let _ = objects::scan(&shard.store, rt, |hub, _| {
                        hubs.insert(hub.to_string());
                    });
                }
                for hub in hubs {
                    state.trigger(&hub, |t| t.all = true);
                }
            }
        }
        let pending = std::mem::take(&mut *state.pending.lock());
        for (cluster, triggers) in pending {
            // A pass may find nothing to wait for; let the shard's other work run between.
            tokio::task::yield_now().await;
            let started = std::time::Instant::now();
            let hub = Hub {
                shard: &shard,
                rows: &rows,
                cluster: &cluster,
                settings,
                recorder: &recorder,
                member_recorder: &member_recorder,
            };
            let memo = memos.entry(cluster.clone()).or_default();
            match hub.pass(&triggers, memo).await {
                Ok(passed) => {
                    crate::metrics::FLEET_PLACEMENT_PASSES.fetch_add(passed.placements as u64, Ordering::Relaxed);
                    let mut index = state.index.lock();
                    for (placement, selection) in &passed.selections {
                        let key = (cluster.clone(), placement.clone());
                        match selection.as_ref().and_then(|s| s.wake_at) {
                            Some(at) => wakes.insert(key, at),
                            None => wakes.remove(&key),
                        };
                        index.record(&cluster, placement, selection.clone());
                    }
                    drop(index);
                    if !passed.again.is_empty() {
                        state.trigger(&cluster, |t| t.placements.extend(passed.again));
                    }
                    let (took, (decided, placed)) = (started.elapsed(), passed.halves);
                    let placements = passed.placements;
                    if took >= SLOW_PASS {
                        tracing::info!(%cluster, placements, ?took, ?decided, ?placed, "slow Fleet hub pass");
                    } else {
                        tracing::debug!(%cluster, placements, ?took, ?decided, ?placed, "Fleet hub pass");
                    }
                }
                Err(error) => {
                    tracing::warn!(error = %format!("{error:#}"), %cluster, "Fleet hub pass failed; retrying");
                    let state = state.clone();
                    tokio::spawn(async move {
                        tokio::time::sleep(crate::controllers::REQUEUE_DELAY).await;
                        state.trigger(&cluster, |t| {
                            t.all |= triggers.all;
                            t.members.extend(triggers.members);
                            t.placements.extend(triggers.placements);
                        });
                    });
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_split_into_group_resource_hub_namespace_and_name() {
        assert_eq!(parts(b"core/configmaps/hub/app/settings"), Some(("core", "configmaps", "hub", "app", "settings")));
        assert_eq!(
            parts(b"placement.kubernetes-fleet.io/works/hub/fleet-member-m1/app-work"),
            Some(("placement.kubernetes-fleet.io", "works", "hub", "fleet-member-m1", "app-work"))
        );
        assert_eq!(parts(b"core/namespaces/hub//app"), Some(("core", "namespaces", "hub", "", "app")));
    }

    #[test]
    fn the_index_follows_each_placements_latest_selection() {
        let mut index = SelectionIndex::default();
        let selection = |ns: &[&str]| Selection {
            namespaces: ns.iter().map(|n| n.to_string()).collect(),
            resources: ["core/namespaces/".to_string()].into(),
            wake_at: None,
        };
        index.record("hub", "a", Some(selection(&["app", "web"])));
        index.record("hub", "b", Some(selection(&["app"])));
        assert_eq!(index.namespaces[&("hub".into(), "app".into())].len(), 2);
        index.record("hub", "a", Some(selection(&["web"])));
        assert_eq!(index.namespaces[&("hub".into(), "app".into())], BTreeSet::from(["b".to_string()]));
        assert_eq!(index.by_placement["hub"].len(), 2, "a and b, once each however often recorded");
        index.record("hub", "b", None);
        assert!(!index.namespaces.contains_key(&("hub".into(), "app".into())));
        assert_eq!(index.resources[&("hub".into(), "core/namespaces/".into())], BTreeSet::from(["a".to_string()]));
        assert_eq!(index.by_placement["hub"].len(), 1);
        index.record("hub", "a", None);
        assert!(index.by_placement.is_empty(), "no placement of the hub selects anything");
        assert!(index.namespaces.is_empty() && index.resources.is_empty());
    }

    #[test]
    fn a_member_memo_reports_changes_and_due_deadlines() {
        let mut memo = MemberMemo::default();
        let t = |s: &str| s.parse::<jiff::Timestamp>().unwrap();
        assert!(memo.observe("m1", "x".into(), Some(t("2026-01-01T00:01:00Z"))));
        assert!(!memo.observe("m1", "x".into(), Some(t("2026-01-01T00:02:00Z"))));
        assert!(memo.observe("m2", "y".into(), Some(t("2026-01-01T00:03:00Z"))));
        let (due, next) = memo.due(t("2026-01-01T00:02:30Z"));
        assert_eq!(due, ["m1"]);
        assert_eq!(next, Some(t("2026-01-01T00:03:00Z")));
        assert!(memo.retain(|m| m == "m1"));
        assert!(!memo.forget("m2"));
    }
}
