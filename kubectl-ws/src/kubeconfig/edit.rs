//! kcp's kubeconfig moves, as pure functions from a [`Merged`] view to an [`Edit`].
//!
//! Entering a workspace never touches the user's own contexts and clusters. It copies
//! the active context to `workspace.kcp.io/current`, pointing at a cluster of the same
//! name that copies the active cluster with the new server URL, and makes that the
//! current context. The context that was active becomes `workspace.kcp.io/previous`;
//! when that was the plugin's own `current`, its cluster is saved as
//! `workspace.kcp.io/previous` too, so that the next move cannot overwrite it. `-` swaps
//! the two, renaming clusters the same way.

use serde_yaml_ng::{Mapping, Value};

use super::{Merged, CURRENT_KEY, PREVIOUS_KEY};

/// Why a move cannot be made from this kubeconfig.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EditError {
    /// The active context (current-context or `--context`) is not defined.
    #[error("current {0:?} context not found")]
    ContextNotFound(String),
    /// No current context at all.
    #[error("no current context in kubeconfig; pass --context or set current-context")]
    NoCurrentContext,
    /// A context names a cluster that is not defined.
    #[error("cluster {0:?} not found in kubeconfig")]
    ClusterNotFound(String),
    /// A cluster without a `server`.
    #[error("cluster {0:?} in kubeconfig has no server")]
    NoServer(String),
    /// `kubectl ws -` without an earlier move.
    #[error("no previous workspace found in kubeconfig")]
    NoPrevious,
}

/// What to write: the new current context, and contexts and clusters to create or replace
/// (by name, with their whole body).
#[derive(Debug, Clone, PartialEq)]
pub struct Edit {
    /// The context to make current.
    pub current_context: String,
    /// Contexts to write.
    pub contexts: Vec<(String, Value)>,
    /// Clusters to write.
    pub clusters: Vec<(String, Value)>,
}

/// The name of the active context: `--context`, else current-context.
pub fn active_context<'a>(merged: &'a Merged, flag: Option<&'a str>) -> Result<&'a str, EditError> {
    flag.or(merged.current_context.as_deref()).ok_or(EditError::NoCurrentContext)
}

/// The server URL of context `context`'s cluster.
pub fn server_of<'a>(merged: &'a Merged, context: &str) -> Result<&'a str, EditError> {
    let (cluster_name, cluster) = cluster_of(merged, context)?;
    cluster.get("server").and_then(Value::as_str).ok_or_else(|| EditError::NoServer(cluster_name.to_string()))
}

/// The server URL of cluster `name` (named with `--cluster`).
pub fn server_of_cluster<'a>(merged: &'a Merged, name: &str) -> Result<&'a str, EditError> {
    let cluster = merged.clusters.get(name).ok_or_else(|| EditError::ClusterNotFound(name.to_string()))?;
    cluster.body.get("server").and_then(Value::as_str).ok_or_else(|| EditError::NoServer(name.to_string()))
}

/// Points the plugin's `current` context at `server`, keeping `context` as the previous one.
pub fn enter(merged: &Merged, context: &str, server: &str) -> Result<Edit, EditError> {
    let body = context_body(merged, context)?;
    let (cluster_name, old_cluster) = cluster_of(merged, context)?;

    let new_cluster = with_field(old_cluster, "server", server);
    let new_context = with_field(body, "cluster", CURRENT_KEY);
    let mut clusters = vec![(CURRENT_KEY.to_string(), new_cluster)];
    let mut previous = body.clone();
    if cluster_name == CURRENT_KEY {
        // The old cluster entry is about to be overwritten: keep it under another name.
        previous = with_field(body, "cluster", PREVIOUS_KEY);
        clusters.push((PREVIOUS_KEY.to_string(), old_cluster.clone()));
    }
    let contexts = vec![(CURRENT_KEY.to_string(), new_context), (PREVIOUS_KEY.to_string(), previous)];
    Ok(Edit { current_context: CURRENT_KEY.to_string(), contexts, clusters })
}

/// Swaps the active context with `workspace.kcp.io/previous` (`kubectl ws -`).
pub fn swap_previous(merged: &Merged, context: &str) -> Result<Edit, EditError> {
    let mut current = context_body(merged, context)?.clone();
    let mut previous = merged.contexts.get(PREVIOUS_KEY).ok_or(EditError::NoPrevious)?.body.clone();
    let mut clusters = Vec::new();
    if cluster_name(&current) == Some(CURRENT_KEY) {
        let (_, cluster) = cluster_of(merged, context)?;
        current = with_field(&current, "cluster", PREVIOUS_KEY);
        clusters.push((PREVIOUS_KEY.to_string(), cluster.clone()));
    }
    if cluster_name(&previous) == Some(PREVIOUS_KEY) {
        let (_, cluster) = cluster_of(merged, PREVIOUS_KEY)?;
        previous = with_field(&previous, "cluster", CURRENT_KEY);
        clusters.push((CURRENT_KEY.to_string(), cluster.clone()));
    }
    let contexts = vec![(CURRENT_KEY.to_string(), previous), (PREVIOUS_KEY.to_string(), current)];
    Ok(Edit { current_context: CURRENT_KEY.to_string(), contexts, clusters })
}

/// The server that `context` points at once `edit` is applied.
pub fn server_after(merged: &Merged, edit: &Edit, context: &str) -> Result<String, EditError> {
    let context_body = match edit.contexts.iter().find(|(name, _)| name == context) {
        Some((_, body)) => body,
        None => &merged.contexts.get(context).ok_or_else(|| EditError::ContextNotFound(context.into()))?.body,
    };
    let name = cluster_name(context_body).unwrap_or_default();
    let cluster = match edit.clusters.iter().find(|(cluster, _)| cluster == name) {
        Some((_, body)) => body,
        None => &merged.clusters.get(name).ok_or_else(|| EditError::ClusterNotFound(name.into()))?.body,
    };
    let server = cluster.get("server").and_then(Value::as_str);
    server.map(str::to_string).ok_or_else(|| EditError::NoServer(name.to_string()))
}

fn context_body<'a>(merged: &'a Merged, context: &str) -> Result<&'a Value, EditError> {
    merged.contexts.get(context).map(|entry| &entry.body).ok_or_else(|| EditError::ContextNotFound(context.into()))
}

/// The cluster a context points at: its name and body.
fn cluster_of<'a>(merged: &'a Merged, context: &str) -> Result<(&'a str, &'a Value), EditError> {
    let name = cluster_name(context_body(merged, context)?).unwrap_or_default();
    let cluster = merged.clusters.get(name).ok_or_else(|| EditError::ClusterNotFound(name.to_string()))?;
    Ok((name, &cluster.body))
}

fn cluster_name(context: &Value) -> Option<&str> {
    context.get("cluster").and_then(Value::as_str)
}

/// A copy of mapping `body` with `key` set to `value`, all other fields kept in order.
fn with_field(body: &Value, key: &str, value: &str) -> Value {
    let mut mapping = body.as_mapping().cloned().unwrap_or_else(Mapping::new);
    mapping.insert(key.into(), value.into());
    Value::Mapping(mapping)
}
