//! Kubeconfig files as kubectl reads and writes them, kept as YAML documents so that
//! whatever this plugin does not touch (other contexts, users, extensions, preferences)
//! is written back as it was read.
//!
//! - [`Sources`] decides which files count, in kubectl's precedence order: `--kubeconfig`,
//!   else every file in `KUBECONFIG`, else `~/.kube/config`.
//! - [`KubeconfigSet::merged`] merges them the way kubectl does: the first file to name a
//!   context or cluster wins, and so does the first non-empty `current-context`. Each
//!   entry remembers the file it came from.
//! - [`edit`] computes kcp's context changes (enter a workspace, swap with the previous
//!   one) as an [`edit::Edit`]; [`KubeconfigSet::apply`] writes it into the documents: an
//!   entry back into the file it came from, a new one into kubectl's default file.
//! - [`overrides`] applies kubectl's connection flags (`--server`, `--token`, …) to the
//!   credentials of one run, without writing them anywhere.
//! - [`files`] reads and writes the documents; nothing else here does I/O.

pub mod edit;
pub mod files;
pub mod overrides;

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use serde_yaml_ng::{Mapping, Value};

/// The context and cluster kcp's plugin points at the current workspace.
pub const CURRENT_KEY: &str = "workspace.kcp.io/current";
/// The context and cluster kcp's plugin keeps for `kubectl ws -`.
pub const PREVIOUS_KEY: &str = "workspace.kcp.io/previous";

/// A kubeconfig document that this plugin cannot read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("kubeconfig {path}: {problem}")]
pub struct MalformedError {
    /// The file.
    pub path: String,
    /// What is wrong with it.
    pub problem: String,
}

/// The two named lists that the plugin edits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `contexts: [{name, context: {cluster, user, namespace}}]`.
    Context,
    /// `clusters: [{name, cluster: {server, certificate-authority-data, …}}]`.
    Cluster,
}

impl Kind {
    /// The top-level key of the list.
    fn list_key(self) -> &'static str {
        match self {
            Kind::Context => "contexts",
            Kind::Cluster => "clusters",
        }
    }

    /// The key of an item's body.
    fn body_key(self) -> &'static str {
        match self {
            Kind::Context => "context",
            Kind::Cluster => "cluster",
        }
    }
}

/// Which files kubectl reads, in precedence order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sources {
    /// The files, highest precedence first; later ones may not exist.
    pub paths: Vec<PathBuf>,
    /// Whether the one path came from `--kubeconfig` (it must exist, and takes all writes).
    pub explicit: bool,
}

impl Sources {
    /// kubectl's rule: `--kubeconfig`, else the non-empty, de-duplicated entries of
    /// `KUBECONFIG`, else `<home>/.kube/config`. `None` without any of them.
    pub fn new(explicit: Option<&Path>, env: Option<&OsStr>, home: Option<&Path>) -> Option<Sources> {
        if let Some(path) = explicit {
            return Some(Sources { paths: vec![path.to_path_buf()], explicit: true });
        }
        let mut paths: Vec<PathBuf> = Vec::new();
        for path in env.map(std::env::split_paths).into_iter().flatten() {
            if !path.as_os_str().is_empty() && !paths.contains(&path) {
                paths.push(path);
            }
        }
        if paths.is_empty() {
            paths.push(home?.join(".kube").join("config"));
        }
        Some(Sources { paths, explicit: false })
    }
}

/// One kubeconfig file: where it lives and its document (`Null` if it does not exist).
#[derive(Debug, Clone, PartialEq)]
pub struct KubeconfigFile {
    /// The file's path.
    pub path: PathBuf,
    /// Whether the file existed when read.
    pub exists: bool,
    /// The parsed YAML (or JSON) document.
    pub document: Value,
}

/// Every file kubectl would read, highest precedence first.
#[derive(Debug, Clone, PartialEq)]
pub struct KubeconfigSet {
    /// The files, in precedence order.
    pub files: Vec<KubeconfigFile>,
    /// Whether they came from `--kubeconfig`.
    pub explicit: bool,
}

/// A named context or cluster in the merged view.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// The body (`context:` or `cluster:` mapping) as written.
    pub body: Value,
    /// The index of the file that defines it (the first one that does).
    pub file: usize,
}

/// The merged view of a [`KubeconfigSet`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Merged {
    /// The first non-empty `current-context`.
    pub current_context: Option<String>,
    /// Contexts by name.
    pub contexts: BTreeMap<String, Entry>,
    /// Clusters by name.
    pub clusters: BTreeMap<String, Entry>,
}

impl Merged {
    /// The entries of `kind`.
    pub fn entries(&self, kind: Kind) -> &BTreeMap<String, Entry> {
        match kind {
            Kind::Context => &self.contexts,
            Kind::Cluster => &self.clusters,
        }
    }
}

impl KubeconfigSet {
    /// Merges the files as kubectl does (first definition of a name wins).
    pub fn merged(&self) -> Result<Merged, MalformedError> {
        let mut merged = Merged::default();
        for (index, file) in self.files.iter().enumerate() {
            let malformed = |problem: String| MalformedError { path: file.path.display().to_string(), problem };
            let document = match &file.document {
                Value::Null => continue,
                Value::Mapping(mapping) => mapping,
                _ => return Err(malformed("the document is not a mapping".into())),
            };
            if merged.current_context.is_none() {
                merged.current_context = current_context_of(document);
            }
            for kind in [Kind::Context, Kind::Cluster] {
                let entries = match kind {
                    Kind::Context => &mut merged.contexts,
                    Kind::Cluster => &mut merged.clusters,
                };
                for (name, body) in named_items(document, kind).map_err(malformed)? {
                    entries.entry(name).or_insert(Entry { body, file: index });
                }
            }
        }
        Ok(merged)
    }

    /// The file kubectl writes new entries to: the `--kubeconfig` file, else the first of
    /// `KUBECONFIG` that exists, else its last one.
    pub fn default_file(&self) -> usize {
        if self.explicit || self.files.len() <= 1 {
            return 0;
        }
        self.files.iter().position(|file| file.exists).unwrap_or(self.files.len() - 1)
    }

    /// The file kubectl writes `current-context` to: the `--kubeconfig` file, else the
    /// first one that has a current context, else the default file.
    pub fn current_context_file(&self) -> usize {
        if self.explicit {
            return 0;
        }
        let has_current = |file: &KubeconfigFile| file.document.as_mapping().and_then(current_context_of).is_some();
        self.files.iter().position(has_current).unwrap_or_else(|| self.default_file())
    }

    /// Writes `edit` into the documents (see the module docs for which file gets what)
    /// and returns the indices of the files that changed. `merged` must be this set's
    /// merged view from before the edit.
    pub fn apply(&mut self, merged: &Merged, edit: &edit::Edit) -> BTreeSet<usize> {
        let mut changed = BTreeSet::new();
        let context_file = self.current_context_file();
        if merged.current_context.as_deref() != Some(edit.current_context.as_str()) {
            let document = document_mut(&mut self.files[context_file].document);
            document.insert("current-context".into(), Value::from(edit.current_context.as_str()));
            changed.insert(context_file);
        }
        let default_file = self.default_file();
        for (kind, updates) in [(Kind::Context, &edit.contexts), (Kind::Cluster, &edit.clusters)] {
            for (name, body) in updates {
                let existing = merged.entries(kind).get(name);
                if existing.is_some_and(|entry| entry.body == *body) {
                    continue;
                }
                let file = existing.map_or(default_file, |entry| entry.file);
                upsert(document_mut(&mut self.files[file].document), kind, name, body.clone());
                changed.insert(file);
            }
        }
        changed
    }
}

/// `current-context` if set and non-empty.
fn current_context_of(document: &Mapping) -> Option<String> {
    document.get("current-context").and_then(Value::as_str).filter(|name| !name.is_empty()).map(str::to_string)
}

/// The `(name, body)` pairs of a document's list of `kind`; an item without a body gets
/// an empty mapping, as kubectl reads it.
fn named_items(document: &Mapping, kind: Kind) -> Result<Vec<(String, Value)>, String> {
    let items = match document.get(kind.list_key()) {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Sequence(items)) => items,
        Some(_) => return Err(format!("{} is not a list", kind.list_key())),
    };
    items
        .iter()
        .map(|item| {
            let name = item.get("name").and_then(Value::as_str);
            let name = name.ok_or_else(|| format!("an item of {} has no name", kind.list_key()))?;
            let body = item.get(kind.body_key()).cloned().unwrap_or_else(|| Value::Mapping(Mapping::new()));
            Ok((name.to_string(), body))
        })
        .collect()
}

/// The document as a mapping, turning an absent (`Null`) document into a new kubeconfig.
fn document_mut(document: &mut Value) -> &mut Mapping {
    if !document.is_mapping() {
        let mut fresh = Mapping::new();
        fresh.insert("apiVersion".into(), "v1".into());
        fresh.insert("kind".into(), "Config".into());
        *document = Value::Mapping(fresh);
    }
    document.as_mapping_mut().expect("just made a mapping")
}

/// Replaces the body of item `name` in the list of `kind`, or appends the item.
fn upsert(document: &mut Mapping, kind: Kind, name: &str, body: Value) {
    let list = document.entry(kind.list_key().into()).or_insert(Value::Sequence(Vec::new()));
    if !list.is_sequence() {
        *list = Value::Sequence(Vec::new());
    }
    let items = list.as_sequence_mut().expect("just made a sequence");
    let existing = items.iter_mut().find(|item| item.get("name").and_then(Value::as_str) == Some(name));
    match existing.and_then(Value::as_mapping_mut) {
        Some(item) => {
            item.insert(kind.body_key().into(), body);
        }
        None => {
            let mut item = Mapping::new();
            item.insert("name".into(), name.into());
            item.insert(kind.body_key().into(), body);
            items.push(Value::Mapping(item));
        }
    }
}

#[cfg(test)]
mod tests;
