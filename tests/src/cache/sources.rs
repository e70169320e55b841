//! The sources of replicas: what each shard holds of every replicated resource, read
//! through the shard's wildcard endpoint (`/clusters/*/apis/...`) with the admin
//! certificate, straight from the shard (a process here, or any shard a [`TlsHttp`]
//! reaches as admin).

use protocol::wellknown::{CLUSTER_ANNOTATION, PATH_ANNOTATION};
use std::collections::BTreeMap;

use super::compare::{ReplicaId, SourceObject};
use crate::shard::ShardProcess;
use crate::TlsHttp;
use anyhow::Context;
use http::StatusCode;
use protocol::replication::{is_replicated, Replicated, REPLICATED};
use serde_json::Value;

/// The version a shard serves each replicated group at.
///
/// The replication table names resources, not versions; these are the versions kcp
/// serves them at, and an unknown group is an error rather than a guess.
pub fn served_version(group: &str) -> anyhow::Result<&'static str> {
    match group {
        "apis.kcp.io" | "tenancy.kcp.io" | "core.kcp.io" | "scheduling.kcp.io" | "workload.kcp.io" => Ok("v1alpha1"),
        "rbac.authorization.k8s.io" => Ok("v1"),
        other => anyhow::bail!("no known served version for replicated group {other:?}; add it to served_version"),
    }
}

/// The wildcard list path of `group/resource` across every logical cluster of a shard.
pub fn wildcard_path(group: &str, resource: &str) -> anyhow::Result<String> {
    let version = served_version(group)?;
    Ok(if group.is_empty() {
        format!("/clusters/*/api/{version}/{resource}")
    } else {
        format!("/clusters/*/apis/{group}/{version}/{resource}")
    })
}

/// Every object of `shard` that the replication table says leaves it, of every
/// replicated resource.
pub async fn replicated_sources(shard: &ShardProcess) -> anyhow::Result<Vec<SourceObject>> {
    replicated_sources_via(shard.name(), &shard.http()).await
}

/// Every replicated object of the shard named `origin` that `http` reaches as an admin
/// (a shard that is not a process here: a container of the compose installation).
pub async fn replicated_sources_via(origin: &str, http: &TlsHttp) -> anyhow::Result<Vec<SourceObject>> {
    let mut sources = Vec::new();
    for row in REPLICATED {
        sources.extend(sources_via(origin, http, row).await?);
    }
    Ok(sources)
}

/// The replicated objects of one resource on `shard`.
pub async fn sources_of(shard: &ShardProcess, row: &Replicated) -> anyhow::Result<Vec<SourceObject>> {
    sources_via(shard.name(), &shard.http(), row).await
}

async fn sources_via(origin: &str, http: &TlsHttp, row: &Replicated) -> anyhow::Result<Vec<SourceObject>> {
    let path = wildcard_path(row.group, row.resource)?;
    let list = get_list(origin, http, &path).await?;
    let items = list.get("items").and_then(Value::as_array).with_context(|| format!("{path}: no items array"))?;
    let mut sources = Vec::new();
    for item in items.iter().filter(|item| is_replicated(row.group, row.resource, item)) {
        let id = source_id(origin, row, item).with_context(|| format!("read an item of {path} on {origin}"))?;
        sources.push(SourceObject { id, object: item.clone() });
    }
    Ok(sources)
}

/// The canonical path of every logical cluster `shard` hosts, by cluster name (from the
/// `kcp.io/path` annotation of its LogicalCluster; `root` is `root`).
pub async fn cluster_paths(shard: &ShardProcess) -> anyhow::Result<BTreeMap<String, String>> {
    let path = "/clusters/*/apis/core.kcp.io/v1alpha1/logicalclusters";
    let list = get_list(shard.name(), &shard.http(), path).await?;
    let items = list.get("items").and_then(Value::as_array).with_context(|| format!("{path}: no items array"))?;
    let mut paths = BTreeMap::new();
    for item in items {
        let annotation =
            |name: &str| item.pointer("/metadata/annotations").and_then(|a| a.get(name)).and_then(Value::as_str);
        let Some(cluster) = annotation(CLUSTER_ANNOTATION) else {
            anyhow::bail!("{path} on {}: an item without {CLUSTER_ANNOTATION}: {item}", shard.name());
        };
        let canonical = annotation(PATH_ANNOTATION).unwrap_or(if cluster == "root" { "root" } else { "" });
        if !canonical.is_empty() {
            paths.insert(cluster.to_string(), canonical.to_string());
        }
    }
    Ok(paths)
}

async fn get_list(origin: &str, http: &TlsHttp, path: &str) -> anyhow::Result<Value> {
    let response = http.get(path).await.with_context(|| format!("GET {path} on shard {origin}"))?;
    anyhow::ensure!(
        response.status == StatusCode::OK,
        "GET {path} on shard {origin}: HTTP {}: {}",
        response.status,
        response.text()
    );
    response.json()
}

/// Where a wildcard-list item lives, as a replica id of `origin`.
fn source_id(origin: &str, row: &Replicated, item: &Value) -> anyhow::Result<ReplicaId> {
    let metadata = item.get("metadata").context("an item without metadata")?;
    let text = |field: &str| metadata.get(field).and_then(Value::as_str).unwrap_or_default().to_string();
    let cluster = metadata
        .pointer(&format!("/annotations/{}", CLUSTER_ANNOTATION.replace('/', "~1")))
        .and_then(Value::as_str)
        .with_context(|| format!("an item without the {CLUSTER_ANNOTATION} annotation: {item}"))?;
    let name = text("name");
    anyhow::ensure!(!name.is_empty(), "an item without a name: {item}");
    Ok(ReplicaId {
        origin: origin.to_string(),
        cluster: cluster.to_string(),
        group: row.group.to_string(),
        resource: row.resource.to_string(),
        namespace: text("namespace"),
        name,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use protocol::replication::replicated;
    use serde_json::json;

    #[test]
    fn every_replicated_group_has_a_version_and_path() {
        for row in REPLICATED {
            let path = wildcard_path(row.group, row.resource).unwrap();
            assert!(path.starts_with("/clusters/*/apis/"), "{path}");
            assert!(path.ends_with(row.resource), "{path}");
        }
        assert!(served_version("example.io").is_err());
    }

    #[test]
    fn items_are_keyed_by_their_cluster_annotation() {
        let row = replicated("rbac.authorization.k8s.io", "clusterroles").unwrap();
        let item = json!({"metadata": {"name": "r", "annotations": {"kcp.io/cluster": "abc"}}});
        let id = source_id("shard-1", row, &item).unwrap();
        assert_eq!(id.to_string(), "shard-1/abc/rbac.authorization.k8s.io/clusterroles/r");
        assert!(source_id("shard-1", row, &json!({"metadata": {"name": "r"}})).is_err());
        assert!(source_id("shard-1", row, &json!({"metadata": {"annotations": {"kcp.io/cluster": "a"}}})).is_err());
    }
}
