//! `~`: the caller's home workspace, path `home:<user>`, created on first use with the
//! caller as its owner (owners may do anything in their logical cluster).
//!
//! The logical-cluster name is a fixed function of the exact user name and its shard a
//! fixed function of the cluster name (the ring), so concurrent first requests, even
//! through different proxies, create the same cluster: one wins, the others see it exists
//! and use it. `~` is resolved by that name and the recorded owner must be the caller:
//! a user whose name happens to equal another's home path segment gets a home of their
//! own, never the other's.

use http::StatusCode;
use protocol::path::is_valid_cluster_name;
use protocol::ring::{name_for_key, ShardRing};
use security::authn::{Identity, ANONYMOUS_USER};
use serde_json::{json, Value};

use crate::index::Target;
use crate::proxy::Proxy;
use crate::status;
use crate::upstream::Body;

/// Annotation holding a logical cluster's canonical path.
const PATH_ANNOTATION: &str = "kcp.io/path";
/// Annotation naming the owner of a logical cluster (kcp's), read by shard authorization.
const OWNER_ANNOTATION: &str = "experimental.tenancy.kcp.io/owner";

/// The home path of `user`: `home:<user>` when the user name is a DNS label, otherwise
/// `home:<name derived from the user name>` (names like `system:serviceaccount:…` or
/// `alice@example.com` cannot be path segments).
pub fn home_path(user: &str) -> String {
    if is_valid_cluster_name(user) {
        format!("home:{user}")
    } else {
        format!("home:{}", name_for_key(&format!("user:{user}")))
    }
}

/// The logical-cluster name of `user`'s home: keyed by the exact user name, so no two
/// users share it even where their home paths collide.
pub fn home_cluster(user: &str) -> String {
    name_for_key(&format!("home-of:{user}"))
}

/// Where `~` leads for `identity`, creating the home workspace when it does not exist.
pub async fn resolve(proxy: &Proxy, identity: &Identity) -> Result<Target, http::Response<Body>> {
    if identity.user == ANONYMOUS_USER {
        return Err(status::forbidden("anonymous users have no home workspace"));
    }
    let path = home_path(&identity.user);
    let cluster = home_cluster(&identity.user);
    let known = proxy.routing.index.read().cluster(&cluster).map(|(target, owner)| (target, owner.to_owned()));
    match known {
        Some((target, owner)) if owner == identity.user => return Ok(target),
        Some(_) => return Err(status::forbidden("the home workspace's logical cluster belongs to someone else")),
        None => {}
    }
    let ring = ShardRing::new(proxy.routing.shard_names());
    let Some(shard) = ring.shard_for(&cluster).map(str::to_owned) else {
        return Err(status::unavailable("no shard is known yet to create the home workspace on"));
    };
    let Some(base) = proxy.routing.shard_url(&shard) else {
        return Err(status::unavailable(&format!("shard {shard} is not known to the front-proxy yet")));
    };
    tracing::info!(user = %identity.user, %path, %cluster, %shard, "creating home workspace");
    create(proxy, &base, &cluster, &path, identity).await.map_err(|error| {
        tracing::warn!(error = format!("{error:#}"), "home workspace creation failed");
        status::internal(&format!("creating the home workspace {path} failed: {error:#}"))
    })?;
    Ok(Target { cluster, shard, canonical: false })
}

async fn create(proxy: &Proxy, base: &str, cluster: &str, path: &str, identity: &Identity) -> anyhow::Result<()> {
    let owner = json!({"username": identity.user, "uid": identity.uid, "groups": identity.groups}).to_string();
    let body = json!({
        "apiVersion": "core.kcp.io/v1alpha1",
        "kind": "LogicalCluster",
        "metadata": {"name": "cluster", "annotations": {PATH_ANNOTATION: path, OWNER_ANNOTATION: owner}},
        "spec": {},
    });
    let collection = format!("{base}/clusters/{cluster}/apis/core.kcp.io/v1alpha1/logicalclusters");
    let (code, bytes) = proxy.upstream.call(http::Method::POST, &collection, Some(&body)).await?;
    match code {
        StatusCode::CREATED | StatusCode::OK => Ok(()),
        StatusCode::CONFLICT => {
            // Someone created it first: fine if it is this home workspace.
            let (code, bytes) = proxy.upstream.call(http::Method::GET, &format!("{collection}/cluster"), None).await?;
            let existing: Value = serde_json::from_slice(&bytes).unwrap_or_default();
            let annotations = existing.pointer("/metadata/annotations");
            let owner = annotations
                .and_then(|a| a.get(OWNER_ANNOTATION))
                .and_then(Value::as_str)
                .and_then(|text| serde_json::from_str::<Value>(text).ok())
                .and_then(|owner| owner.get("username").and_then(Value::as_str).map(str::to_owned));
            anyhow::ensure!(
                code.is_success() && owner.as_deref() == Some(identity.user.as_str()),
                "logical cluster {cluster} exists but is not the home of {}",
                identity.user
            );
            Ok(())
        }
        other => anyhow::bail!("{collection} answered {other}: {}", String::from_utf8_lossy(&bytes)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn home_paths() {
        assert_eq!(home_path("alice"), "home:alice");
        let hashed = home_path("system:serviceaccount:default:builder");
        assert!(hashed.starts_with("home:") && hashed.len() == "home:".len() + 11, "{hashed}");
        assert_eq!(hashed, home_path("system:serviceaccount:default:builder"), "stable");
        assert_ne!(home_path("Alice"), "home:Alice");
        // The squatter whose literal name is the victim's hashed segment shares the path,
        // not the cluster.
        let victim = "victim@example.com";
        let squatter = home_path(victim).trim_start_matches("home:").to_owned();
        assert_eq!(home_path(&squatter), home_path(victim));
        assert_ne!(home_cluster(&squatter), home_cluster(victim));
    }
}
