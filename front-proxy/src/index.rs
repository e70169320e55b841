//! The routing index: which shard hosts each logical cluster, the canonical paths, and
//! the workspaces that lead from a logical cluster to its children. Pure: the feeds
//! ([`crate::feed`]) apply the shards' events, [`Index::resolve`] answers lookups.
//!
//! Each shard's entries are kept apart, so a shard's fresh snapshot replaces exactly what
//! it said before, and a shard that leaves the installation takes its entries along.

use std::collections::HashMap;

use protocol::index::index_event::{Entry, Kind};
use protocol::index::{IndexEvent, LogicalClusterEntry, WorkspaceEntry};

/// Where a path leads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// The logical cluster's name.
    pub cluster: String,
    /// The shard hosting it.
    pub shard: String,
    /// Whether the path asked for is the cluster's canonical path (or its name).
    pub canonical: bool,
}

/// What the index says about a path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Lookup {
    /// The path leads to this logical cluster.
    Found(Target),
    /// The walk reached an indexed logical cluster that has no scheduled workspace of the
    /// next name: as far as the shard hosting it said, there is no such workspace.
    Missing,
    /// A workspace leads to logical cluster `cluster`, which no shard's feed has named:
    /// it is being created or deleted, or its shard's feed has not been received.
    Unindexed {
        /// The logical cluster the workspace names.
        cluster: String,
    },
    /// No prefix of the path is an indexed canonical path or logical-cluster name.
    Unknown,
}

/// What one shard has said so far.
#[derive(Debug, Default, Clone)]
struct ShardEntries {
    clusters: HashMap<String, LogicalClusterEntry>,
    /// (parent cluster, workspace name) → workspace.
    workspaces: HashMap<(String, String), WorkspaceEntry>,
}

/// The index of every shard's logical clusters and workspaces.
#[derive(Debug, Default)]
pub struct Index {
    shards: HashMap<String, ShardEntries>,
    /// A snapshot being received, per shard; it replaces the shard's entries on SYNCED.
    staged: HashMap<String, ShardEntries>,
    /// Logical-cluster name → shard.
    by_name: HashMap<String, String>,
    /// Canonical path → logical-cluster name.
    by_path: HashMap<String, String>,
    /// (parent cluster, workspace name) → child cluster, for scheduled workspaces.
    children: HashMap<(String, String), String>,
    /// Child cluster → (parent cluster, workspace name): the reverse of `children`, to
    /// find the Workspace of a cluster whose shard does not answer.
    parents: HashMap<String, (String, String)>,
}

impl Index {
    /// Starts receiving a stream from `shard`: until its SYNCED event, UPSERTs are staged
    /// as a snapshot.
    pub fn begin_stream(&mut self, shard: &str) {
        self.staged.insert(shard.to_owned(), ShardEntries::default());
    }

    /// Applies one event of `shard`'s stream.
    pub fn apply(&mut self, shard: &str, event: IndexEvent) {
        let kind = Kind::try_from(event.kind).unwrap_or(Kind::Upsert);
        if kind == Kind::Synced {
            let snapshot = self.staged.remove(shard).unwrap_or_default();
            if !event.resumed {
                self.replace(shard, snapshot);
            }
            return;
        }
        let Some(entry) = event.entry else { return };
        if let Some(staged) = self.staged.get_mut(shard) {
            // Before SYNCED only a snapshot's UPSERTs arrive.
            match entry {
                Entry::LogicalCluster(lc) => {
                    staged.clusters.insert(lc.name.clone(), lc);
                }
                Entry::Workspace(ws) => {
                    staged.workspaces.insert((ws.parent.clone(), ws.name.clone()), ws);
                }
            }
            return;
        }
        match (kind, entry) {
            (Kind::Delete, Entry::LogicalCluster(lc)) => self.remove_cluster(shard, &lc.name),
            (Kind::Delete, Entry::Workspace(ws)) => self.remove_workspace(shard, &ws.parent, &ws.name),
            (_, Entry::LogicalCluster(lc)) => self.insert_cluster(shard, lc),
            (_, Entry::Workspace(ws)) => self.insert_workspace(shard, ws),
        }
    }

    /// Forgets everything `shard` said (it left the installation).
    pub fn remove_shard(&mut self, shard: &str) {
        self.staged.remove(shard);
        self.replace(shard, ShardEntries::default());
        self.shards.remove(shard);
    }

    /// Where `path` leads: a canonical path, a logical-cluster name, or a path that starts
    /// at either and continues through workspace names (`<name>:team`).
    pub fn resolve(&self, path: &str) -> Option<Target> {
        match self.lookup(path) {
            Lookup::Found(target) => Some(target),
            _ => None,
        }
    }

    /// Where `path` leads, and when it leads nowhere, why: the index holds no such
    /// workspace, the walk stopped at a logical cluster that is not indexed, or nothing
    /// indexed leads towards the path at all.
    pub fn lookup(&self, path: &str) -> Lookup {
        // The common case first, without allocating: a canonical path or a name.
        if let Some(cluster) = self.by_path.get(path) {
            return match self.by_name.get(cluster) {
                Some(shard) => {
                    Lookup::Found(Target { cluster: cluster.clone(), shard: shard.clone(), canonical: true })
                }
                None => Lookup::Unindexed { cluster: cluster.clone() },
            };
        }
        if let Some(shard) = self.by_name.get(path) {
            return Lookup::Found(Target { cluster: path.to_owned(), shard: shard.clone(), canonical: true });
        }
        let segments: Vec<&str> = path.split(':').collect();
        // The longest prefix that is a canonical path or a name, then workspace by workspace.
        for split in (1..=segments.len()).rev() {
            let prefix = segments[..split].join(":");
            let Some(mut cluster) = self
                .by_path
                .get(&prefix)
                .or_else(|| (split == 1).then(|| self.by_name.get_key_value(&prefix).map(|(name, _)| name)).flatten())
            else {
                continue;
            };
            for segment in &segments[split..] {
                // A cluster's Workspaces come from the feed of the shard that hosts it: an
                // indexed cluster without the child has no such (scheduled) workspace.
                match self.children.get(&(cluster.clone(), (*segment).to_owned())) {
                    Some(child) => cluster = child,
                    None if self.by_name.contains_key(cluster) => return Lookup::Missing,
                    None => return Lookup::Unindexed { cluster: cluster.clone() },
                }
            }
            return match self.by_name.get(cluster) {
                Some(shard) => {
                    Lookup::Found(Target { cluster: cluster.clone(), shard: shard.clone(), canonical: false })
                }
                None => Lookup::Unindexed { cluster: cluster.clone() },
            };
        }
        Lookup::Unknown
    }

    /// Logical cluster `name`, where it lives and who owns it (empty without an owner).
    pub fn cluster(&self, name: &str) -> Option<(Target, &str)> {
        let shard = self.by_name.get(name)?;
        let entry = self.shards.get(shard)?.clusters.get(name)?;
        let target = Target { cluster: name.to_owned(), shard: shard.clone(), canonical: false };
        Some((target, entry.owner.as_str()))
    }

    /// The Workspace that leads to logical cluster `cluster`: its parent's logical
    /// cluster and shard, and its name; `None` for clusters no Workspace leads to (root,
    /// home workspaces) or whose parent is not indexed.
    pub fn workspace_of(&self, cluster: &str) -> Option<(Target, &str)> {
        let (parent, name) = self.parents.get(cluster)?;
        let shard = self.by_name.get(parent)?;
        Some((Target { cluster: parent.clone(), shard: shard.clone(), canonical: false }, name.as_str()))
    }

    /// How many logical clusters are indexed.
    pub fn cluster_count(&self) -> usize {
        self.by_name.len()
    }

    fn replace(&mut self, shard: &str, snapshot: ShardEntries) {
        let old = self.shards.remove(shard).unwrap_or_default();
        for name in old.clusters.keys() {
            self.remove_cluster_maps(shard, name, &old);
        }
        for (key, ws) in &old.workspaces {
            self.unlink_workspace(key, ws);
        }
        self.shards.insert(shard.to_owned(), ShardEntries::default());
        for (_, lc) in snapshot.clusters {
            self.insert_cluster(shard, lc);
        }
        for (_, ws) in snapshot.workspaces {
            self.insert_workspace(shard, ws);
        }
    }

    fn insert_cluster(&mut self, shard: &str, lc: LogicalClusterEntry) {
        let entries = self.shards.entry(shard.to_owned()).or_default();
        if let Some(previous) = entries.clusters.get(&lc.name) {
            if previous.path != lc.path && self.by_path.get(&previous.path) == Some(&lc.name) {
                self.by_path.remove(&previous.path);
            }
        }
        self.by_name.insert(lc.name.clone(), shard.to_owned());
        if !lc.path.is_empty() {
            self.by_path.insert(lc.path.clone(), lc.name.clone());
        }
        entries.clusters.insert(lc.name.clone(), lc);
    }

    fn remove_cluster(&mut self, shard: &str, name: &str) {
        let Some(entries) = self.shards.get_mut(shard) else { return };
        let Some(lc) = entries.clusters.remove(name) else { return };
        if self.by_name.get(name).is_some_and(|owner| owner == shard) {
            self.by_name.remove(name);
        }
        if self.by_path.get(&lc.path).is_some_and(|cluster| cluster == name) {
            self.by_path.remove(&lc.path);
        }
    }

    /// Removes `name`'s global entries when they still point at `shard` (another shard
    /// may have taken the name or path over since).
    fn remove_cluster_maps(&mut self, shard: &str, name: &str, old: &ShardEntries) {
        if self.by_name.get(name).is_some_and(|owner| owner == shard) {
            self.by_name.remove(name);
        }
        if let Some(lc) = old.clusters.get(name) {
            if self.by_path.get(&lc.path).is_some_and(|cluster| cluster == name) {
                self.by_path.remove(&lc.path);
            }
        }
    }

    fn insert_workspace(&mut self, shard: &str, ws: WorkspaceEntry) {
        let key = (ws.parent.clone(), ws.name.clone());
        let previous = self.shards.get(shard).and_then(|entries| entries.workspaces.get(&key)).cloned();
        if let Some(previous) = previous {
            self.unlink_workspace(&key, &previous);
        }
        if ws.cluster.is_empty() {
            self.children.remove(&key);
        } else {
            self.children.insert(key.clone(), ws.cluster.clone());
            self.parents.insert(ws.cluster.clone(), key.clone());
        }
        self.shards.entry(shard.to_owned()).or_default().workspaces.insert(key, ws);
    }

    fn remove_workspace(&mut self, shard: &str, parent: &str, name: &str) {
        let key = (parent.to_owned(), name.to_owned());
        let removed = self.shards.get_mut(shard).and_then(|entries| entries.workspaces.remove(&key));
        match removed {
            Some(ws) => self.unlink_workspace(&key, &ws),
            None => {
                self.children.remove(&key);
            }
        }
    }

    /// Removes the routing entries of workspace `key` as `ws` described it, where they
    /// still say so.
    fn unlink_workspace(&mut self, key: &(String, String), ws: &WorkspaceEntry) {
        self.children.remove(key);
        if self.parents.get(&ws.cluster) == Some(key) {
            self.parents.remove(&ws.cluster);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cluster(name: &str, path: &str) -> Entry {
        Entry::LogicalCluster(LogicalClusterEntry {
            name: name.into(),
            path: path.into(),
            phase: "Ready".into(),
            owner: String::new(),
        })
    }

    fn workspace(parent: &str, name: &str, cluster: &str) -> Entry {
        Entry::Workspace(WorkspaceEntry {
            parent: parent.into(),
            name: name.into(),
            cluster: cluster.into(),
            phase: "Ready".into(),
        })
    }

    fn event(kind: Kind, entry: Option<Entry>) -> IndexEvent {
        IndexEvent { kind: kind as i32, rv: 1, entry, ..IndexEvent::default() }
    }

    fn snapshot(index: &mut Index, shard: &str, entries: Vec<Entry>) {
        index.begin_stream(shard);
        for entry in entries {
            index.apply(shard, event(Kind::Upsert, Some(entry)));
        }
        index.apply(shard, event(Kind::Synced, None));
    }

    fn target(cluster: &str, shard: &str) -> Option<Target> {
        Some(Target { cluster: cluster.into(), shard: shard.into(), canonical: true })
    }

    fn walked(cluster: &str, shard: &str) -> Option<Target> {
        Some(Target { cluster: cluster.into(), shard: shard.into(), canonical: false })
    }

    /// root on shard r hosts workspace org → cluster o1 on shard a; org hosts team → t1
    /// on shard b; home:alice is h1 on shard b.
    fn installation() -> Index {
        let mut index = Index::default();
        snapshot(&mut index, "r", vec![cluster("root", "root"), workspace("root", "org", "o1")]);
        snapshot(&mut index, "a", vec![cluster("o1", "root:org"), workspace("o1", "team", "t1")]);
        snapshot(&mut index, "b", vec![cluster("t1", "root:org:team"), cluster("h1", "home:alice")]);
        index
    }

    #[test]
    fn resolution_table() {
        let index = installation();
        let cases = [
            ("root", target("root", "r")),
            ("root:org", target("o1", "a")),
            ("root:org:team", target("t1", "b")),
            ("o1", target("o1", "a")),
            ("o1:team", walked("t1", "b")),
            ("t1", target("t1", "b")),
            ("home:alice", target("h1", "b")),
            ("root:nope", None),
            ("root:org:team:deeper", None),
            ("nope", None),
            ("home", None),
            ("", None),
        ];
        for (path, want) in cases {
            assert_eq!(index.resolve(path), want, "{path}");
        }
        assert_eq!(index.cluster_count(), 4);
    }

    #[test]
    fn deletions_stop_resolving_and_unscheduled_workspaces_do_not_route() {
        let mut index = installation();
        index.apply("b", event(Kind::Delete, Some(cluster("t1", "root:org:team"))));
        assert_eq!(index.resolve("root:org:team"), None);
        assert_eq!(index.resolve("t1"), None);
        index.apply("a", event(Kind::Upsert, Some(workspace("o1", "new", ""))));
        assert_eq!(index.resolve("root:org:new"), None);
        index.apply("a", event(Kind::Delete, Some(workspace("o1", "team", "t1"))));
        assert_eq!(index.resolve("o1:team"), None);
    }

    #[test]
    fn a_new_snapshot_replaces_what_the_shard_said_but_a_resume_keeps_it() {
        let mut index = installation();
        // Shard b restarted and lost h1 meanwhile (snapshot without it).
        snapshot(&mut index, "b", vec![cluster("t1", "root:org:team")]);
        assert_eq!(index.resolve("home:alice"), None);
        assert_eq!(index.resolve("root:org:team"), target("t1", "b"));
        // A resumed stream keeps the entries.
        index.begin_stream("b");
        index.apply("b", IndexEvent { kind: Kind::Synced as i32, rv: 9, resumed: true, ..IndexEvent::default() });
        assert_eq!(index.resolve("root:org:team"), target("t1", "b"));
        // Other shards are untouched; a shard leaving takes its entries along.
        index.remove_shard("a");
        assert_eq!(index.resolve("root:org"), None);
        assert_eq!(index.resolve("root"), target("root", "r"));
    }

    #[test]
    fn a_cluster_leads_back_to_its_workspace_while_it_is_indexed() {
        let mut index = installation();
        let parent = |index: &Index, cluster: &str| {
            index.workspace_of(cluster).map(|(target, name)| (target.cluster, target.shard, name.to_owned()))
        };
        assert_eq!(parent(&index, "t1"), Some(("o1".into(), "a".into(), "team".into())));
        assert_eq!(parent(&index, "o1"), Some(("root".into(), "r".into(), "org".into())));
        assert_eq!(parent(&index, "root"), None, "no workspace leads to root");
        assert_eq!(parent(&index, "h1"), None, "nor to a home workspace");
        // Rescheduled elsewhere, then deleted; and a shard's new snapshot without it.
        index.apply("a", event(Kind::Upsert, Some(workspace("o1", "team", "t2"))));
        assert_eq!(parent(&index, "t1"), None);
        assert_eq!(parent(&index, "t2").map(|p| p.2), Some("team".into()));
        index.apply("a", event(Kind::Delete, Some(workspace("o1", "team", "t2"))));
        assert_eq!(parent(&index, "t2"), None);
        snapshot(&mut index, "r", vec![cluster("root", "root")]);
        assert_eq!(parent(&index, "o1"), None);
    }

    #[test]
    fn a_lookup_says_why_a_path_leads_nowhere() {
        // Shard b has not synced: t1 and h1 are not indexed, but a's Workspace team names t1.
        let mut index = Index::default();
        snapshot(&mut index, "r", vec![cluster("root", "root"), workspace("root", "org", "o1")]);
        snapshot(&mut index, "a", vec![cluster("o1", "root:org"), workspace("o1", "team", "t1")]);
        let unindexed = |cluster: &str| Lookup::Unindexed { cluster: cluster.into() };
        let cases = [
            ("root:org", Lookup::Found(Target { cluster: "o1".into(), shard: "a".into(), canonical: true })),
            ("root:org:team", unindexed("t1")),
            ("o1:team", unindexed("t1")),
            ("root:org:team:deeper", unindexed("t1")),
            ("root:org:nope", Lookup::Missing),
            ("root:nope", Lookup::Missing),
            ("root:nope:deeper", Lookup::Missing),
            ("home:alice", Lookup::Unknown),
            ("t1", Lookup::Unknown),
            ("", Lookup::Unknown),
        ];
        for (path, want) in cases {
            assert_eq!(index.lookup(path), want, "{path}");
        }
        snapshot(&mut index, "b", vec![cluster("t1", "root:org:team")]);
        assert_eq!(index.lookup("root:org:team:deeper"), Lookup::Missing);
        assert_eq!(index.resolve("root:org:team"), target("t1", "b"));
    }

    #[test]
    fn a_path_moving_to_a_new_cluster_follows_it() {
        let mut index = installation();
        // root:org deleted on a and created again (new cluster o2) on b, events interleaved.
        index.apply("b", event(Kind::Upsert, Some(cluster("o2", "root:org"))));
        index.apply("a", event(Kind::Delete, Some(cluster("o1", "root:org"))));
        assert_eq!(index.resolve("root:org"), target("o2", "b"));
    }
}
