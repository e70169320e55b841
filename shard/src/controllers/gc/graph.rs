//! The garbage collector's index of every object on the shard, fed by the store's change
//! stream.
//!
//! Per logical cluster: every object by UID, and the reverse edges, owner UID →
//! dependents. An owner UID may have dependents without being present itself: that is
//! exactly a dangling reference. Owners are matched by UID within one logical cluster only.
//!
//! Only objects with ownerReferences or a garbage-collector finalizer are indexed
//! ([`Node`]); most objects have neither, and an empty workspace (a LogicalCluster, its
//! `default` namespace, the Workspace) costs the index nothing. [`Graph::wants`] tells the
//! feed from the raw bytes whether a change concerns the index at all, so most changes
//! are not even decoded. An owner that is not indexed is looked up by the collector in the
//! store, by the kind and name its reference gives ([`OwnerFacts`] is what it learns).
//!
//! Pure: [`Graph::upsert`] and [`Graph::remove`] take changes in resourceVersion order and
//! return the work items whose decision may have changed; [`Graph::view`] hands
//! the decide module everything it needs about one item. Because changes are applied in
//! resourceVersion order, the index is always a consistent snapshot of the store at some
//! resourceVersion, and the collector's writes carry the indexed resourceVersion of the
//! object they are about as a precondition.

use serde::Deserialize;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

/// An object UID, shared between the node and the reverse edges.
pub type Uid = Arc<str>;

/// One unit of work: look at the object with this UID in this logical cluster.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Item {
    /// The logical cluster.
    pub cluster: Arc<str>,
    /// The object's UID.
    pub uid: Uid,
}

/// One ownerReference, as the collector needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OwnerRef {
    /// The owner's UID.
    pub uid: Uid,
    /// The API group of `apiVersion`: the version does not matter, every served version
    /// names the same object (kube resolves the kind through its REST mapper).
    pub group: Box<str>,
    /// `kind`.
    pub kind: Box<str>,
    /// `name`.
    pub name: Box<str>,
    /// `blockOwnerDeletion`: whether a foreground deletion of the owner waits for this
    /// dependent.
    pub block: bool,
}

/// What the collector knows of one stored object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    /// The store key.
    pub key: Arc<str>,
    /// The resourceVersion of the indexed state.
    pub rv: u64,
    /// `metadata.uid`.
    pub uid: Uid,
    /// The API group of its `apiVersion`.
    pub group: Box<str>,
    /// Its `kind`.
    pub kind: Box<str>,
    /// Its namespace; `None` for cluster-scoped objects.
    pub namespace: Option<Box<str>>,
    /// Its name.
    pub name: Box<str>,
    /// Its ownerReferences.
    pub owners: Vec<OwnerRef>,
    /// It has a deletionTimestamp.
    pub deleting: bool,
    /// It carries the `orphan` finalizer.
    pub orphan_finalizer: bool,
    /// It carries the `foregroundDeletion` finalizer.
    pub foreground_finalizer: bool,
}

/// What a reference needs to know about the object with its UID: whether it is the
/// object the reference names, and whether it waits for its dependents.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OwnerFacts {
    /// [`identity_hash`] of its group, kind and name.
    pub identity: u64,
    /// [`namespace_hash`] of its namespace; `None` when cluster-scoped.
    pub namespace: Option<u64>,
    /// Deleting with `foregroundDeletion`.
    pub deleting_dependents: bool,
}

/// Hash of the group, kind and name an object has or a reference names. Only compared
/// after the UIDs matched, so a collision could at worst accept a reference whose UID is
/// right but whose kind or name is wrong.
pub fn identity_hash(group: &str, kind: &str, name: &str) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::hash::DefaultHasher::new();
    (group, kind, name).hash(&mut hasher);
    hasher.finish()
}

/// Hash of a namespace name (see [`identity_hash`]).
pub fn namespace_hash(namespace: &str) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::hash::DefaultHasher::new();
    namespace.hash(&mut hasher);
    hasher.finish()
}

impl Node {
    /// What references to this object need to know.
    pub fn facts(&self) -> OwnerFacts {
        OwnerFacts {
            identity: identity_hash(&self.group, &self.kind, &self.name),
            namespace: self.namespace.as_deref().map(namespace_hash),
            deleting_dependents: self.deleting_dependents(),
        }
    }

    /// Deleting with `foregroundDeletion`: waiting for its dependents (kube's
    /// "deletingDependents").
    pub fn deleting_dependents(&self) -> bool {
        self.deleting && self.foreground_finalizer
    }

    /// Whether the collector has anything to decide about this object at all.
    fn needs_attention(&self) -> bool {
        !self.owners.is_empty() || (self.deleting && (self.orphan_finalizer || self.foreground_finalizer))
    }

    /// Whether a change from `old` to `self` can change the decision about this object.
    fn changed_from(&self, old: &Node) -> bool {
        self.owners != old.owners
            || self.deleting != old.deleting
            || self.orphan_finalizer != old.orphan_finalizer
            || self.foreground_finalizer != old.foreground_finalizer
    }
}

/// The fields of a stored object the collector reads; everything else is skipped unparsed.
#[derive(Deserialize)]
struct Stored {
    #[serde(rename = "apiVersion", default)]
    api_version: String,
    #[serde(default)]
    kind: String,
    #[serde(default)]
    metadata: StoredMeta,
}

#[derive(Deserialize, Default)]
struct StoredMeta {
    #[serde(default)]
    uid: Option<String>,
    #[serde(rename = "ownerReferences", default)]
    owner_references: Option<Vec<StoredOwnerRef>>,
    #[serde(rename = "deletionTimestamp", default)]
    deletion_timestamp: Option<serde::de::IgnoredAny>,
    #[serde(default)]
    finalizers: Option<Vec<String>>,
}

#[derive(Deserialize)]
struct StoredOwnerRef {
    #[serde(rename = "apiVersion", default)]
    api_version: String,
    #[serde(default)]
    kind: String,
    #[serde(default)]
    name: String,
    #[serde(default)]
    uid: String,
    #[serde(rename = "blockOwnerDeletion", default)]
    block_owner_deletion: Option<bool>,
}

/// The group of an `apiVersion` (`apps/v1` → `apps`, `v1` → core).
fn group_of(api_version: &str) -> &str {
    api_version.rsplit_once('/').map_or("", |(group, _)| group)
}

/// Reads a stored object: its logical cluster and node. `None` for keys outside the object
/// layout and values that are not objects with a UID (nothing can own or be owned then).
pub fn decode(key: &[u8], rv: u64, value: &[u8]) -> Option<(Arc<str>, Node)> {
    let (cluster, namespace, name) = apiserver::objects::split_key(key)?;
    let key = std::str::from_utf8(key).ok()?;
    let stored: Stored = serde_json::from_slice(value).ok()?;
    let uid = stored.metadata.uid.filter(|uid| !uid.is_empty())?;
    let finalizers = stored.metadata.finalizers.unwrap_or_default();
    let has = |wanted: &str| finalizers.iter().any(|f| f == wanted);
    let owners = stored.metadata.owner_references.unwrap_or_default();
    let node = Node {
        key: key.into(),
        rv,
        uid: uid.into(),
        group: group_of(&stored.api_version).into(),
        kind: stored.kind.into(),
        namespace: (!namespace.is_empty()).then(|| namespace.into()),
        name: name.into(),
        owners: owners
            .into_iter()
            .map(|r| OwnerRef {
                uid: r.uid.into(),
                group: group_of(&r.api_version).into(),
                kind: r.kind.into(),
                name: r.name.into(),
                block: r.block_owner_deletion.unwrap_or(false),
            })
            .collect(),
        deleting: stored.metadata.deletion_timestamp.is_some(),
        orphan_finalizer: has(apiserver::storage::propagation::ORPHAN_FINALIZER),
        foreground_finalizer: has(apiserver::storage::propagation::FOREGROUND_FINALIZER),
    };
    Some((cluster.into(), node))
}

/// The objects of one logical cluster that have something to decide, and the ownership
/// edges of its dependents.
#[derive(Debug, Default)]
struct ClusterGraph {
    /// Objects with something to decide (ownerReferences, a collector finalizer).
    nodes: HashMap<Uid, Node>,
    /// Owner UID → UIDs of the present objects that reference it.
    dependents: HashMap<Uid, HashSet<Uid>>,
}

impl ClusterGraph {
    fn unlink(&mut self, owner: &Uid, dependent: &Uid) {
        if let Some(set) = self.dependents.get_mut(owner) {
            set.remove(dependent);
            if set.is_empty() {
                self.dependents.remove(owner);
            }
        }
    }

    /// The owner, when it is present and waits for its dependents in foreground.
    fn waiting_owner(&self, cluster: &Arc<str>, owner: &Uid) -> Option<Item> {
        let node = self.nodes.get(owner)?;
        node.deleting_dependents().then(|| Item { cluster: cluster.clone(), uid: owner.clone() })
    }

    fn is_empty(&self) -> bool {
        self.nodes.is_empty() && self.dependents.is_empty()
    }
}

/// Whether stored bytes may hold ownerReferences or a collector finalizer (false
/// positives only cost a decode).
fn may_interest(value: &[u8]) -> bool {
    // Every committed write of the shard passes here, so the needles are searched with
    // memchr's SIMD substring finders, built once: a byte-window scan per needle was the
    // shard's most expensive function of its own in a profile of the create path.
    // The collector's finalizers can only stand in `finalizers`, which most objects lack,
    // so the two finalizer names are looked for only where that key is.
    static FINDERS: std::sync::LazyLock<[memchr::memmem::Finder<'static>; 4]> = std::sync::LazyLock::new(|| {
        [b"\"ownerReferences\"".as_slice(), b"\"finalizers\"", b"foregroundDeletion", b"orphan"]
            .map(memchr::memmem::Finder::new)
    });
    let [owners, finalizers, foreground, orphan] = &*FINDERS;
    let has = |finder: &memchr::memmem::Finder<'_>| finder.find(value).is_some();
    has(owners) || (has(finalizers) && (has(foreground) || has(orphan)))
}

/// The index of the objects of every logical cluster on this shard that own or are
/// owned, or are being deleted by the collector's finalizers.
#[derive(Debug, Default)]
pub struct Graph {
    clusters: HashMap<Arc<str>, ClusterGraph>,
    /// Store key → logical cluster and UID of each indexed object.
    keys: HashMap<Arc<str>, (Arc<str>, Uid)>,
}

impl Graph {
    /// Objects indexed.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// Whether a write of `value` at `key` concerns the index: the value may own or be
    /// owned, or the key holds an indexed object that may have stopped being so.
    pub fn wants(&self, key: &[u8], value: &[u8]) -> bool {
        may_interest(value) || std::str::from_utf8(key).is_ok_and(|key| self.keys.contains_key(key))
    }

    /// Whether the delete of `key` concerns the index: an indexed object, or any object
    /// of a logical cluster where something has owners (it may be one of them).
    pub fn wants_removal(&self, key: &[u8]) -> bool {
        let Ok(text) = std::str::from_utf8(key) else { return false };
        self.keys.contains_key(text)
            || apiserver::objects::split_key(key)
                .is_some_and(|(cluster, _, _)| self.clusters.get(cluster).is_some_and(|g| !g.dependents.is_empty()))
    }

    /// Records the current state of an object; returns the items to look at again.
    pub fn upsert(&mut self, cluster: &str, node: Node) -> Vec<Item> {
        let mut work = Vec::new();
        let cluster: Arc<str> = match self.clusters.get_key_value(cluster) {
            Some((name, _)) => name.clone(),
            None => cluster.into(),
        };
        let graph = self.clusters.entry(cluster.clone()).or_default();
        let old = graph.nodes.remove(&node.uid);
        let old_owners = old.as_ref().map(|o| o.owners.as_slice()).unwrap_or_default();
        for reference in old_owners {
            if !node.owners.iter().any(|r| r.uid == reference.uid) {
                graph.unlink(&reference.uid, &node.uid);
            }
            // A reference that went away or stopped blocking may unblock its owner.
            if !node.owners.iter().any(|r| r.uid == reference.uid && r.block) && reference.block {
                work.extend(graph.waiting_owner(&cluster, &reference.uid));
            }
        }
        for reference in &node.owners {
            graph.dependents.entry(reference.uid.clone()).or_default().insert(node.uid.clone());
        }
        if !node.needs_attention() {
            self.keys.remove(&node.key);
            if graph.is_empty() {
                self.clusters.remove(&cluster);
            }
            return work;
        }
        if old.as_ref().is_none_or(|old| node.changed_from(old)) {
            work.push(Item { cluster: cluster.clone(), uid: node.uid.clone() });
        }
        self.keys.insert(node.key.clone(), (cluster, node.uid.clone()));
        graph.nodes.insert(node.uid.clone(), node);
        work
    }

    /// Forgets the object `uid` of `cluster` (its key was deleted); returns the items to
    /// look at again: its dependents (their owner is gone) and its owners that wait for
    /// their dependents.
    pub fn remove(&mut self, cluster: &str, uid: &str) -> Vec<Item> {
        let Some(cluster) = self.clusters.get_key_value(cluster).map(|(name, _)| name.clone()) else {
            return Vec::new();
        };
        let graph = self.clusters.get_mut(&cluster).expect("looked up above");
        let mut work = Vec::new();
        if let Some(node) = graph.nodes.remove(uid) {
            self.keys.remove(&node.key);
            for reference in &node.owners {
                graph.unlink(&reference.uid, &node.uid);
                work.extend(graph.waiting_owner(&cluster, &reference.uid));
            }
        }
        if let Some(dependents) = graph.dependents.get(uid) {
            work.extend(dependents.iter().map(|d| Item { cluster: cluster.clone(), uid: d.clone() }));
        }
        if graph.is_empty() {
            self.clusters.remove(&cluster);
        }
        work
    }

    /// Every item with something to decide: what a (re)started collector looks at first.
    pub fn pending(&self) -> Vec<Item> {
        self.clusters
            .iter()
            .flat_map(|(cluster, graph)| {
                graph.nodes.values().map(|node| Item { cluster: cluster.clone(), uid: node.uid.clone() })
            })
            .collect()
    }

    /// The item and what its decision depends on; `None` when it is gone or has nothing
    /// to decide. Owners that are not indexed have no facts yet: the collector looks them
    /// up before deciding.
    pub fn view(&self, item: &Item) -> Option<ItemView> {
        let graph = self.clusters.get(&item.cluster)?;
        let node = graph.nodes.get(&item.uid)?;
        let owners = node.owners.iter().map(|r| (r.clone(), graph.nodes.get(&r.uid).map(Node::facts))).collect();
        let dependents = graph
            .dependents
            .get(&item.uid)
            .into_iter()
            .flatten()
            .filter_map(|uid| graph.nodes.get(uid))
            .map(|dependent| DependentView {
                uid: dependent.uid.clone(),
                key: dependent.key.clone(),
                blocking: dependent.owners.iter().any(|r| r.uid == item.uid && r.block),
                deleting: dependent.deleting,
                deleting_dependents: dependent.deleting_dependents(),
            })
            .collect();
        Some(ItemView { item: node.clone(), owners, dependents })
    }
}

/// A dependent of the item, as far as the item's decision needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DependentView {
    /// Its UID.
    pub uid: Uid,
    /// Its store key.
    pub key: Arc<str>,
    /// Its reference to the item has `blockOwnerDeletion: true`.
    pub blocking: bool,
    /// It has a deletionTimestamp.
    pub deleting: bool,
    /// It is deleting in foreground itself.
    pub deleting_dependents: bool,
}

/// Everything a decision about one item depends on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ItemView {
    /// The item.
    pub item: Node,
    /// Each of its ownerReferences with the object of that UID in the same logical
    /// cluster, if there is one.
    pub owners: Vec<(OwnerRef, Option<OwnerFacts>)>,
    /// The present objects of its logical cluster that reference it.
    pub dependents: Vec<DependentView>,
}

#[cfg(test)]
pub(crate) mod tests {
    #[test]
    fn only_writes_that_may_own_or_be_owned_interest_the_collector() {
        let cases: [(&[u8], bool); 7] = [
            (br#"{"metadata":{"name":"a"},"data":{"k":"v"}}"#, false),
            (br#"{"metadata":{"name":"orphan"},"data":{"k":"foregroundDeletion"}}"#, false),
            (br#"{"metadata":{"finalizers":["example.com/keep"]}}"#, false),
            (br#"{"metadata":{"ownerReferences":[{"uid":"u"}]}}"#, true),
            (br#"{"metadata":{"finalizers":["foregroundDeletion"]}}"#, true),
            (br#"{"metadata":{"finalizers":["orphan"]}}"#, true),
            (br#"{"data":{"ownerReference":"no quotes close it"}}"#, false),
        ];
        for (value, wanted) in cases {
            assert_eq!(may_interest(value), wanted, "{}", String::from_utf8_lossy(value));
        }
    }

    use super::*;
    use serde_json::json;

    /// A stored object with these ownerReferences (`(uid, block)`), for tests here and in
    /// `decide`.
    pub fn node(namespace: Option<&str>, name: &str, uid: &str, owners: &[(&str, bool)]) -> Node {
        let ns = namespace.unwrap_or("");
        let key = format!("core/configmaps/c1/{ns}/{name}");
        let object = json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": name,
                "uid": uid,
                "ownerReferences": owners.iter().map(|(uid, block)| json!({
                    "apiVersion": "v1", "kind": "ConfigMap", "name": format!("owner-{uid}"), "uid": uid,
                    "blockOwnerDeletion": block,
                })).collect::<Vec<_>>(),
            },
        });
        decode(key.as_bytes(), 1, &serde_json::to_vec(&object).unwrap()).unwrap().1
    }

    fn uids(items: &[Item]) -> Vec<&str> {
        let mut uids: Vec<&str> = items.iter().map(|i| &*i.uid).collect();
        uids.sort_unstable();
        uids
    }

    #[test]
    fn decode_reads_identity_references_and_deletion_state() {
        let object = json!({
            "apiVersion": "example.com/v1", "kind": "Widget",
            "metadata": {"name": "w", "namespace": "ns", "uid": "u1", "deletionTimestamp": "2024-01-01T00:00:00Z",
                "finalizers": ["foregroundDeletion", "x/y"],
                "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "o", "uid": "u0", "blockOwnerDeletion": true}]},
            "spec": {"anything": [1, 2, 3]},
        });
        let key = b"example.com/widgets/c1/ns/w";
        let (cluster, node) = decode(key, 9, &serde_json::to_vec(&object).unwrap()).unwrap();
        assert_eq!(&*cluster, "c1");
        assert_eq!(
            (&*node.group, &*node.kind, node.namespace.as_deref(), &*node.name),
            ("example.com", "Widget", Some("ns"), "w")
        );
        assert_eq!((node.rv, &*node.uid, node.deleting), (9, "u1", true));
        assert!(node.foreground_finalizer && !node.orphan_finalizer && node.deleting_dependents());
        assert_eq!(node.owners.len(), 1);
        assert_eq!((&*node.owners[0].group, &*node.owners[0].kind, node.owners[0].block), ("", "ConfigMap", true));
        assert!(decode(b"core/configmaps/c1/ns/nouid", 1, br#"{"metadata":{}}"#).is_none());
        assert!(decode(b"not-a-key", 1, br#"{"metadata":{"uid":"u"}}"#).is_none());
    }

    #[test]
    fn changes_queue_what_they_may_affect() {
        let mut graph = Graph::default();
        assert!(graph.upsert("c1", node(Some("ns"), "owner", "o", &[])).is_empty(), "nothing to decide");
        assert_eq!(uids(&graph.upsert("c1", node(Some("ns"), "dep", "d", &[("o", true)]))), ["d"]);
        assert!(graph.upsert("c1", node(Some("ns"), "dep", "d", &[("o", true)])).is_empty(), "unchanged references");
        // The owner starts waiting for its dependents.
        let mut waiting = node(Some("ns"), "owner", "o", &[]);
        (waiting.deleting, waiting.foreground_finalizer) = (true, true);
        assert_eq!(uids(&graph.upsert("c1", waiting)), ["o"]);
        // The blocking dependent drops its reference: the waiting owner is looked at again.
        assert_eq!(uids(&graph.upsert("c1", node(Some("ns"), "dep", "d", &[]))), ["o"]);
        assert_eq!(uids(&graph.upsert("c1", node(Some("ns"), "dep", "d", &[("o", true)]))), ["d"]);
        // Removing the dependent wakes the owner; removing the owner wakes the dependents.
        assert_eq!(uids(&graph.remove("c1", "d")), ["o"]);
        assert_eq!(uids(&graph.upsert("c1", node(Some("ns"), "dep", "d", &[("o", false)]))), ["d"]);
        assert_eq!(uids(&graph.remove("c1", "o")), ["d"]);
        assert_eq!(graph.len(), 1);
        assert_eq!(uids(&graph.pending()), ["d"]);
    }

    #[test]
    fn views_show_owner_presence_and_dependents() {
        let mut graph = Graph::default();
        graph.upsert("c1", node(Some("ns"), "owner", "o", &[]));
        graph.upsert("c1", node(Some("ns"), "a", "a", &[("o", true), ("gone", false)]));
        graph.upsert("c1", node(Some("ns"), "b", "b", &[("o", false)]));
        graph.upsert("c2", node(Some("ns"), "c", "c", &[("o", true)]));
        let dependent = graph.view(&Item { cluster: "c1".into(), uid: "a".into() }).unwrap();
        let known: Vec<bool> = dependent.owners.iter().map(|(_, owner)| owner.is_some()).collect();
        assert_eq!(known, [false, false], "plain owners are not indexed: the collector looks them up");
        let mut waiting = node(Some("ns"), "owner", "o", &[]);
        (waiting.deleting, waiting.foreground_finalizer) = (true, true);
        graph.upsert("c1", waiting);
        let dependent = graph.view(&Item { cluster: "c1".into(), uid: "a".into() }).unwrap();
        assert_eq!(dependent.owners[0].1.map(|facts| facts.deleting_dependents), Some(true));
        let owner = graph.view(&Item { cluster: "c1".into(), uid: "o".into() }).unwrap();
        let mut dependents: Vec<(&str, bool)> = owner.dependents.iter().map(|d| (&*d.uid, d.blocking)).collect();
        dependents.sort_unstable();
        assert_eq!(dependents, [("a", true), ("b", false)], "owners match within one logical cluster only");
        let other_cluster = graph.view(&Item { cluster: "c2".into(), uid: "c".into() }).unwrap();
        assert!(other_cluster.owners[0].1.is_none());
        assert!(graph.view(&Item { cluster: "c1".into(), uid: "c".into() }).is_none());
    }

    #[test]
    fn only_owning_and_owned_objects_are_indexed() {
        let mut graph = Graph::default();
        graph.upsert("c1", node(Some("ns"), "owner", "o", &[]));
        assert_eq!(graph.len(), 0, "nothing owns or is owned yet");
        graph.upsert("c1", node(Some("ns"), "dep", "d", &[("o", false)]));
        assert_eq!(graph.len(), 1);
        assert!(
            graph.wants(b"core/configmaps/c1/ns/dep", br#"{"metadata":{}}"#),
            "an indexed key losing its references"
        );
        assert!(!graph.wants(b"core/configmaps/c1/ns/other", br#"{"metadata":{}}"#));
        assert!(graph.wants(b"core/configmaps/c1/ns/other", br#"{"metadata":{"ownerReferences":[]}}"#));
        assert!(graph.wants_removal(b"core/configmaps/c1/ns/owner"), "it may be the owner of someone here");
        assert!(!graph.wants_removal(b"core/configmaps/c2/ns/owner"), "nothing is owned in c2");
        assert_eq!(uids(&graph.remove("c1", "o")), ["d"], "the dependent of a removed owner");
        graph.upsert("c1", node(Some("ns"), "dep", "d", &[]));
        assert_eq!(graph.len(), 0);
        assert!(graph.clusters.is_empty());
    }
}
