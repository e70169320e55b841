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
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use protocol::path::is_valid_cluster_name;
use protocol::ring::{name_for_key, ShardRing};
use protocol::types::{LogicalCluster, Owner, LOGICAL_CLUSTER_NAME};
use protocol::wellknown::{OWNER_ANNOTATION, PATH_ANNOTATION};
use security::authn::{Identity, ANONYMOUS_USER};

use crate::feed::Routing;
use crate::index::Target;
use crate::status;
use crate::upstream::{Body, Upstream};

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
pub async fn resolve(
    routing: &Routing,
    upstream: &Upstream,
    identity: &Identity,
) -> Result<Target, http::Response<Body>> {
    if identity.user == ANONYMOUS_USER {
        return Err(status::forbidden("anonymous users have no home workspace"));
    }
    let path = home_path(&identity.user);
    let cluster = home_cluster(&identity.user);
    let known = routing.index.read().cluster(&cluster).map(|(target, owner)| (target, owner.to_owned()));
    match known {
        Some((target, owner)) if owner == identity.user => return Ok(target),
        Some(_) => return Err(status::forbidden("the home workspace's logical cluster belongs to someone else")),
        None => {}
    }
    let ring = ShardRing::new(routing.shard_names());
    let Some(shard) = ring.shard_for(&cluster).map(str::to_owned) else {
        return Err(status::unavailable("no shard is known yet to create the home workspace on"));
    };
    let Some(base) = routing.shard_url(&shard) else {
        return Err(status::unavailable(&format!("shard {shard} is not known to the front-proxy yet")));
    };
    tracing::info!(user = %identity.user, %path, %cluster, %shard, "creating home workspace");
    create(upstream, &base, &cluster, &path, identity).await.map_err(|error| {
        tracing::warn!(error = format!("{error:#}"), "home workspace creation failed");
        status::internal(&format!("creating the home workspace {path} failed: {error:#}"))
    })?;
    Ok(Target { cluster, shard, canonical: false })
}

async fn create(upstream: &Upstream, base: &str, cluster: &str, path: &str, identity: &Identity) -> anyhow::Result<()> {
    let body = serde_json::to_value(home_logical_cluster(path, identity))?;
    let collection = format!("{base}/clusters/{cluster}/apis/core.kcp.io/v1alpha1/logicalclusters");
    let (code, bytes) = upstream.call(http::Method::POST, &collection, Some(&body)).await?;
    match code {
        StatusCode::CREATED | StatusCode::OK => Ok(()),
        StatusCode::CONFLICT => {
            // Someone created it first: fine if it is this home workspace.
            let url = format!("{collection}/{LOGICAL_CLUSTER_NAME}");
            let (code, bytes) = upstream.call(http::Method::GET, &url, None).await?;
            let owner = serde_json::from_slice::<LogicalCluster>(&bytes).ok().and_then(|existing| owner_of(&existing));
            anyhow::ensure!(
                code.is_success() && owner.is_some_and(|owner| owner.username == identity.user),
                "logical cluster {cluster} exists but is not the home of {}",
                identity.user
            );
            Ok(())
        }
        other => anyhow::bail!("{collection} answered {other}: {}", String::from_utf8_lossy(&bytes)),
    }
}

/// The LogicalCluster of a new home workspace at `path`, owned by `identity`. The owner
/// record leaves out the caller's extra attributes: authorization follows the user name.
fn home_logical_cluster(path: &str, identity: &Identity) -> LogicalCluster {
    let owner = Owner {
        username: identity.user.clone(),
        uid: identity.uid.clone(),
        groups: identity.groups.clone(),
        extra: Default::default(),
    };
    let annotations =
        [(PATH_ANNOTATION.to_owned(), path.to_owned()), (OWNER_ANNOTATION.to_owned(), owner.to_annotation())];
    LogicalCluster::new(ObjectMeta {
        name: Some(LOGICAL_CLUSTER_NAME.to_owned()),
        annotations: Some(annotations.into_iter().collect()),
        ..ObjectMeta::default()
    })
}

/// The owner a LogicalCluster's annotation records, if any.
fn owner_of(logical_cluster: &LogicalCluster) -> Option<Owner> {
    Owner::parse(logical_cluster.metadata.annotations.as_ref()?.get(OWNER_ANNOTATION)?)
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

    #[test]
    fn home_logical_clusters_carry_path_and_owner() {
        let identity = Identity::new("alice", "u-1", ["dev".to_owned()]);
        let wire = serde_json::to_value(home_logical_cluster("home:alice", &identity)).unwrap();
        let owner = r#"{"username":"alice","uid":"u-1","groups":["dev","system:authenticated"]}"#;
        assert_eq!(
            wire,
            serde_json::json!({
                "apiVersion": "core.kcp.io/v1alpha1",
                "kind": "LogicalCluster",
                "metadata": {"name": "cluster", "annotations": {"kcp.io/path": "home:alice", OWNER_ANNOTATION: owner}},
                "spec": {},
                "status": {},
            })
        );
        let back: LogicalCluster = serde_json::from_value(wire).unwrap();
        assert_eq!(owner_of(&back).map(|owner| owner.username), Some("alice".to_owned()));
        assert_eq!(owner_of(&LogicalCluster::new(ObjectMeta::default())), None);
    }
}
