//! Comparing what a cache holds with what the shards hold: the invariant every replication
//! test ends with.
//!
//! Pure: sources (objects listed from shards) and replicas (listed from a cache) go in, a
//! list of differences comes out, each naming the replica and what is wrong with it. An
//! empty list means the cache equals the sources, deletions included: a replica whose
//! source is gone is a difference too.

use protocol::wellknown::{CLUSTER_ANNOTATION, ORIGIN_ANNOTATION, PATH_ANNOTATION, SOURCE_RV_ANNOTATION};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use protocol::cache::{Replica, ReplicaKey};
use serde_json::Value;

/// Annotations that say where an object is served or replicated from rather than what it
/// is; they differ between a source and its replica by design, and are checked on their
/// own instead of as content.
const PLACEMENT_ANNOTATIONS: [&str; 4] = [CLUSTER_ANNOTATION, PATH_ANNOTATION, SOURCE_RV_ANNOTATION, ORIGIN_ANNOTATION];

/// Which replica: the six parts of a [`ReplicaKey`], orderable so that differences are
/// reported in a stable order.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ReplicaId {
    /// The origin shard.
    pub origin: String,
    /// The logical cluster on the origin.
    pub cluster: String,
    /// API group ("" for core).
    pub group: String,
    /// Plural resource.
    pub resource: String,
    /// Namespace ("" for cluster-scoped objects).
    pub namespace: String,
    /// Object name.
    pub name: String,
}

impl From<&ReplicaKey> for ReplicaId {
    fn from(key: &ReplicaKey) -> ReplicaId {
        ReplicaId {
            origin: key.origin.clone(),
            cluster: key.cluster.clone(),
            group: key.group.clone(),
            resource: key.resource.clone(),
            namespace: key.namespace.clone(),
            name: key.name.clone(),
        }
    }
}

impl ReplicaId {
    /// The wire form of this id.
    pub fn to_key(&self) -> ReplicaKey {
        ReplicaKey {
            origin: self.origin.clone(),
            cluster: self.cluster.clone(),
            group: self.group.clone(),
            resource: self.resource.clone(),
            namespace: self.namespace.clone(),
            name: self.name.clone(),
        }
    }
}

impl fmt::Display for ReplicaId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let group = if self.group.is_empty() { "core" } else { &self.group };
        write!(f, "{}/{}/{group}/{}/", self.origin, self.cluster, self.resource)?;
        if !self.namespace.is_empty() {
            write!(f, "{}/", self.namespace)?;
        }
        f.write_str(&self.name)
    }
}

/// One object on its origin shard, as a shard's wildcard list shows it.
#[derive(Clone, Debug, PartialEq)]
pub struct SourceObject {
    /// Where it lives.
    pub id: ReplicaId,
    /// The object (with the `kcp.io/cluster` annotation wildcard lists add).
    pub object: Value,
}

/// What [`diff`] looks at: replicas of these origins and resources must match the sources
/// exactly; replicas of other origins or resources are somebody else's business.
#[derive(Clone, Debug, Default)]
pub struct Scope {
    /// Origin shard names.
    pub origins: BTreeSet<String>,
    /// `(group, resource)` pairs; empty means every resource.
    pub resources: BTreeSet<(String, String)>,
}

impl Scope {
    /// Every resource of these origins.
    pub fn origins<'a>(origins: impl IntoIterator<Item = &'a str>) -> Scope {
        Scope { origins: origins.into_iter().map(str::to_string).collect(), resources: BTreeSet::new() }
    }

    /// Whether a replica of `id` is judged.
    pub fn covers(&self, id: &ReplicaId) -> bool {
        self.origins.contains(&id.origin)
            && (self.resources.is_empty() || self.resources.contains(&(id.group.clone(), id.resource.clone())))
    }
}

/// How many differences [`diff`] describes in full; the rest are counted, so that a cache
/// that missed everything does not produce a megabyte of assertion message.
pub const DIFFERENCES_MAX: usize = 20;

/// The differences between `replicas` and `sources` within `scope`; `paths` maps a logical
/// cluster name to its canonical path (clusters missing there are not checked for the
/// `kcp.io/path` annotation). Empty when the cache equals the sources.
pub fn diff(
    sources: &[SourceObject],
    replicas: &[Replica],
    paths: &BTreeMap<String, String>,
    scope: &Scope,
) -> Vec<String> {
    let mut by_id: BTreeMap<ReplicaId, &Replica> = BTreeMap::new();
    let mut differences = Vec::new();
    for replica in replicas {
        let Some(key) = &replica.key else {
            differences.push(format!("a replica without a key (uid {:?})", replica.uid));
            continue;
        };
        let id = ReplicaId::from(key);
        if !scope.covers(&id) {
            continue;
        }
        if by_id.insert(id.clone(), replica).is_some() {
            differences.push(format!("{id}: listed twice"));
        }
    }
    for source in sources.iter().filter(|source| scope.covers(&source.id)) {
        match by_id.remove(&source.id) {
            None => differences.push(format!("{}: missing in the cache", source.id)),
            Some(replica) => differences.extend(replica_differences(source, replica, paths)),
        }
    }
    for (id, replica) in by_id {
        differences.push(format!("{id}: in the cache (source rv {}) but not on its shard", replica.source_rv));
    }
    summarize(differences)
}

/// Keeps the first [`DIFFERENCES_MAX`] differences and says how many more there were.
fn summarize(mut differences: Vec<String>) -> Vec<String> {
    if differences.len() > DIFFERENCES_MAX {
        let more = differences.len() - DIFFERENCES_MAX;
        differences.truncate(DIFFERENCES_MAX);
        differences.push(format!("… and {more} more differences"));
    }
    differences
}

/// What is wrong with one replica of `source`: identity, versions, placement annotations
/// and content.
fn replica_differences(source: &SourceObject, replica: &Replica, paths: &BTreeMap<String, String>) -> Vec<String> {
    let id = &source.id;
    let mut out = Vec::new();
    let source_uid = source.object.pointer("/metadata/uid").and_then(Value::as_str).unwrap_or_default();
    if replica.uid != source_uid {
        out.push(format!("{id}: uid {:?} in the cache, {source_uid:?} on the shard", replica.uid));
    }
    let source_rv = source.object.pointer("/metadata/resourceVersion").and_then(Value::as_str).unwrap_or_default();
    if source_rv.parse::<u64>().ok() != Some(replica.source_rv) {
        out.push(format!("{id}: source rv {} in the cache, {source_rv:?} on the shard", replica.source_rv));
    }
    let Some(object) = replica.object_json() else {
        out.push(format!("{id}: the replica's object is not JSON"));
        return out;
    };
    let annotation = |name: &str| annotations(&object).and_then(|a| a.get(name)).and_then(Value::as_str);
    if annotation(SOURCE_RV_ANNOTATION) != Some(source_rv) {
        out.push(format!(
            "{id}: {SOURCE_RV_ANNOTATION} is {:?}, the shard has {source_rv:?}",
            annotation(SOURCE_RV_ANNOTATION)
        ));
    }
    if annotation(ORIGIN_ANNOTATION) != Some(id.origin.as_str()) {
        out.push(format!("{id}: {ORIGIN_ANNOTATION} is {:?}", annotation(ORIGIN_ANNOTATION)));
    }
    if let Some(path) = paths.get(&id.cluster) {
        if annotation(PATH_ANNOTATION) != Some(path.as_str()) {
            out.push(format!(
                "{id}: {PATH_ANNOTATION} is {:?}, the cluster's path is {path:?}",
                annotation(PATH_ANNOTATION)
            ));
        }
    }
    let (cached, original) = (comparable(&object), comparable(&source.object));
    if cached != original {
        out.push(format!("{id}: content differs\n  cache: {cached}\n  shard: {original}"));
    }
    out
}

fn annotations(object: &Value) -> Option<&serde_json::Map<String, Value>> {
    object.pointer("/metadata/annotations").and_then(Value::as_object)
}

/// An object reduced to what a replica must carry unchanged.
///
/// Dropped: `apiVersion`/`kind` (built-in list items omit them, replicas may not),
/// `metadata.resourceVersion` (a replica's may be the cache's; the source's is checked
/// through `source_rv` and its annotation), `metadata.managedFields` (server-side apply
/// bookkeeping, rendered per endpoint), and the placement annotations, which are checked
/// on their own. An annotation map left empty is dropped too.
pub fn comparable(object: &Value) -> Value {
    let mut object = object.clone();
    if let Some(map) = object.as_object_mut() {
        map.remove("apiVersion");
        map.remove("kind");
    }
    if let Some(metadata) = object.get_mut("metadata").and_then(Value::as_object_mut) {
        metadata.remove("resourceVersion");
        metadata.remove("managedFields");
        let empty = match metadata.get_mut("annotations").and_then(Value::as_object_mut) {
            Some(annotations) => {
                for name in PLACEMENT_ANNOTATIONS {
                    annotations.remove(name);
                }
                annotations.is_empty()
            }
            None => false,
        };
        if empty {
            metadata.remove("annotations");
        }
    }
    object
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn id(origin: &str, name: &str) -> ReplicaId {
        ReplicaId {
            origin: origin.into(),
            cluster: "c1".into(),
            group: "rbac.authorization.k8s.io".into(),
            resource: "clusterroles".into(),
            namespace: String::new(),
            name: name.into(),
        }
    }

    fn source(origin: &str, name: &str, rv: &str) -> SourceObject {
        let object = json!({
            "metadata": {"name": name, "uid": format!("uid-{name}"), "resourceVersion": rv,
                         "annotations": {"kcp.io/cluster": "c1", "internal.kcp.io/replicate": "true"}},
            "rules": [{"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}],
        });
        SourceObject { id: id(origin, name), object }
    }

    /// The replica a correct cache holds for `source`.
    fn replica_of(source: &SourceObject) -> Replica {
        let mut object = source.object.clone();
        let rv = object["metadata"]["resourceVersion"].as_str().unwrap().to_string();
        object["apiVersion"] = json!("rbac.authorization.k8s.io/v1");
        object["kind"] = json!("ClusterRole");
        object["metadata"]["resourceVersion"] = json!("999");
        let annotations = object["metadata"]["annotations"].as_object_mut().unwrap();
        annotations.remove("kcp.io/cluster");
        annotations.insert("kcp.io/path".into(), json!("root:team"));
        annotations.insert(SOURCE_RV_ANNOTATION.into(), json!(rv));
        annotations.insert(ORIGIN_ANNOTATION.into(), json!(source.id.origin));
        Replica {
            key: Some(source.id.to_key()),
            uid: object["metadata"]["uid"].as_str().unwrap().into(),
            source_rv: rv.parse().unwrap(),
            object: serde_json::to_vec(&object).unwrap(),
            sender: source.id.origin.clone(),
        }
    }

    fn paths() -> BTreeMap<String, String> {
        BTreeMap::from([("c1".to_string(), "root:team".to_string())])
    }

    /// Replaces the replica's object with what `change` makes of it.
    fn edit(replica: &mut Replica, change: impl FnOnce(&mut Value)) {
        let mut object = replica.object_json().unwrap();
        change(&mut object);
        replica.object = serde_json::to_vec(&object).unwrap();
    }

    #[test]
    fn a_faithful_cache_has_no_differences() {
        let sources = [source("shard-1", "a", "5"), source("shard-1", "b", "7")];
        let replicas: Vec<Replica> = sources.iter().map(replica_of).collect();
        assert_eq!(diff(&sources, &replicas, &paths(), &Scope::origins(["shard-1"])), Vec::<String>::new());
    }

    #[test]
    fn every_kind_of_drift_is_named() {
        let sources = [source("shard-1", "a", "5"), source("shard-1", "b", "7"), source("shard-1", "c", "9")];
        let good: Vec<Replica> = sources.iter().map(replica_of).collect();
        type Break = fn(&mut Vec<Replica>);
        let cases: [(&str, Break, &str); 9] = [
            (
                "missing",
                |r| {
                    r.remove(1);
                },
                "b: missing in the cache",
            ),
            ("extra", |r| r.push(replica_of(&source("shard-1", "gone", "3"))), "gone: in the cache"),
            ("uid", |r| r[0].uid = "other".into(), "a: uid"),
            ("stale rv", |r| r[2].source_rv = 8, "c: source rv 8"),
            (
                "rv annotation",
                |r| edit(&mut r[0], |o| o["metadata"]["annotations"][SOURCE_RV_ANNOTATION] = json!("4")),
                "a: atoll.io/source-resource-version",
            ),
            (
                "origin annotation",
                |r| edit(&mut r[0], |o| o["metadata"]["annotations"][ORIGIN_ANNOTATION] = json!("x")),
                "a: atoll.io/origin-shard",
            ),
            (
                "path",
                |r| edit(&mut r[1], |o| o["metadata"]["annotations"]["kcp.io/path"] = json!("root:other")),
                "b: kcp.io/path",
            ),
            ("content", |r| edit(&mut r[2], |o| o["rules"] = json!([])), "c: content differs"),
            ("not JSON", |r| r[0].object = b"{".to_vec(), "a: the replica's object is not JSON"),
        ];
        for (what, break_it, expected) in cases {
            let mut replicas = good.clone();
            break_it(&mut replicas);
            let differences = diff(&sources, &replicas, &paths(), &Scope::origins(["shard-1"]));
            assert_eq!(differences.len(), 1, "{what}: {differences:#?}");
            assert!(differences[0].contains(expected), "{what}: {differences:#?}");
        }
    }

    #[test]
    fn the_scope_decides_what_is_judged() {
        let sources = [source("shard-1", "a", "5"), source("shard-2", "b", "7")];
        let mut replicas = vec![replica_of(&sources[0])];
        replicas.push(replica_of(&source("shard-3", "stray", "1")));
        // shard-2's source and shard-3's replica are outside the scope.
        assert!(diff(&sources, &replicas, &paths(), &Scope::origins(["shard-1"])).is_empty());
        let both = diff(&sources, &replicas, &paths(), &Scope::origins(["shard-1", "shard-2"]));
        assert_eq!(both.len(), 1, "{both:#?}");
        let mut only_roles = Scope::origins(["shard-3"]);
        only_roles.resources.insert(("apis.kcp.io".into(), "apiexports".into()));
        assert!(diff(&sources, &replicas, &paths(), &only_roles).is_empty());
    }

    #[test]
    fn many_differences_are_summarized() {
        let sources: Vec<SourceObject> = (0..50).map(|i| source("shard-1", &format!("n{i}"), "1")).collect();
        let differences = diff(&sources, &[], &paths(), &Scope::origins(["shard-1"]));
        assert_eq!(differences.len(), DIFFERENCES_MAX + 1);
        assert!(differences[DIFFERENCES_MAX].contains("30 more"), "{differences:#?}");
    }

    #[test]
    fn comparable_drops_only_what_may_differ() {
        let object = json!({"apiVersion": "v1", "kind": "X", "metadata": {"name": "n", "resourceVersion": "3",
            "annotations": {"kcp.io/cluster": "c", "keep": "me"}}, "spec": {"a": 1}});
        assert_eq!(
            comparable(&object),
            json!({"metadata": {"name": "n", "annotations": {"keep": "me"}}, "spec": {"a": 1}})
        );
        let only_placement = json!({"metadata": {"name": "n", "annotations": {"kcp.io/path": "root"}}});
        assert_eq!(comparable(&only_placement), json!({"metadata": {"name": "n"}}));
    }

    #[test]
    fn ids_print_like_paths() {
        assert_eq!(id("root", "x").to_string(), "root/c1/rbac.authorization.k8s.io/clusterroles/x");
        let namespaced = ReplicaId { group: String::new(), namespace: "ns".into(), ..id("root", "x") };
        assert_eq!(namespaced.to_string(), "root/c1/core/clusterroles/ns/x");
    }
}
