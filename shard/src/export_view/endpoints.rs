//! APIExportEndpointSlice status, kept by every shard for itself (kcp's per-shard
//! endpoint-slice URLs controller): a slice lists the URL of the export's view on each
//! shard where some workspace binds the export, and on no other.
//!
//! Every [`RESYNC`], each shard looks at every slice it knows (its own, and the replicas
//! of other shards' from the cache) and, where its own URL should be added or removed,
//! writes the slice's status: in its store when it hosts the slice, else on the hosting
//! shard with an update that carries the read resourceVersion (a conflict with another
//! shard's write is retried at the next pass). The hosting shard also drops the URLs of
//! shards that have left the installation, which can no longer remove their own.
//!
//! A URL is `<shard's external URL>/shards/<shard>/services/apiexport/<cluster>/<export>`:
//! the front-proxy routes `/shards/<shard>/` to that shard, and a shard addressed directly
//! accepts its own prefix, so the URL works either way.

use super::view_path;
use crate::binding::bound::BoundResources;
use crate::cache::lister;
use crate::state::Shard;
use apiserver::objects;
use apiserver::rest::status::ApiError;
use apiserver::storage::{self, ObjectRef, WriteOptions};
use protocol::meta;
use protocol::types::{APIS_KCP_GROUP, API_EXPORT_ENDPOINT_SLICE_RESOURCE};
use serde_json::{json, Value};
use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

/// How often every slice is looked at again (exports, bindings and the shard set change
/// on other shards, which no local write announces).
const RESYNC: Duration = Duration::from_secs(2);

/// The URL of the view of export `export` (in logical cluster `cluster`) on shard
/// `shard`, whose external URL is `external_url`. Pure.
pub fn url_of(external_url: &str, shard: &str, cluster: &str, export: &str) -> String {
    format!("{}/shards/{shard}{}", external_url.trim_end_matches('/'), view_path(cluster, export))
}

/// The shard a view URL names (`…/shards/<shard>/services/…`). Pure.
pub fn shard_of(url: &str) -> Option<&str> {
    let after = &url[url.find("/shards/")? + "/shards/".len()..];
    let (shard, rest) = after.split_once('/')?;
    (!shard.is_empty() && rest.starts_with("services/")).then_some(shard)
}

/// The endpoints a slice lists after this shard's look, in their order: `mine` present
/// exactly when this shard `serves` the export (and no other URL naming this shard, as
/// after a change of its external URL), and, when `members` is given (the shard hosting
/// the slice), no URL of a shard outside it. Pure.
pub fn plan(current: &[String], mine: &str, serves: bool, members: Option<&HashSet<String>>) -> Vec<String> {
    let mut seen = HashSet::new();
    let own = shard_of(mine);
    let mut wanted: Vec<String> = current
        .iter()
        .filter(|url| if url.as_str() == mine { serves } else { own.is_none() || shard_of(url) != own })
        .filter(|url| match (members, shard_of(url)) {
            (Some(members), Some(shard)) => members.contains(shard),
            _ => true,
        })
        .filter(|url| seen.insert(url.as_str()))
        .cloned()
        .collect();
    if serves && !wanted.iter().any(|url| url == mine) {
        wanted.push(mine.to_string());
    }
    wanted
}

/// The URLs a slice lists now.
fn urls(slice: &Value) -> Vec<String> {
    let endpoints = slice.pointer("/status/endpoints").and_then(Value::as_array).into_iter().flatten();
    endpoints.filter_map(|e| e.get("url").and_then(Value::as_str)).map(str::to_string).collect()
}

/// `slice` with `endpoints` as its status's.
fn with_urls(slice: &Value, endpoints: &[String]) -> Value {
    let mut new = slice.clone();
    let list: Vec<Value> = endpoints.iter().map(|url| json!({"url": url})).collect();
    match new.get_mut("status").and_then(Value::as_object_mut) {
        Some(status) => {
            status.insert("endpoints".into(), Value::Array(list));
        }
        None => new["status"] = json!({"endpoints": list}),
    }
    new
}

/// Keeps this shard's URL in every slice, forever.
pub async fn run(shard: Arc<Shard>, bound: Arc<BoundResources>) {
    let mut tick = tokio::time::interval(RESYNC);
    loop {
        tick.tick().await;
        pass(&shard, &bound).await;
    }
}

/// One slice as this shard knows it.
struct Slice {
    cluster: String,
    object: Value,
    local: bool,
}

async fn pass(shard: &Arc<Shard>, bound: &BoundResources) {
    let Some(rt) = shard.registry.get(APIS_KCP_GROUP, "v1alpha1", API_EXPORT_ENDPOINT_SLICE_RESOURCE) else { return };
    let mut slices = Vec::new();
    let scanned = objects::scan(&shard.store, &rt, |cluster, object| {
        slices.push(Slice { cluster: cluster.to_string(), object: object.clone(), local: true })
    });
    if let Err(error) = scanned {
        tracing::warn!(%error, "cannot read APIExportEndpointSlices");
        return;
    }
    for replica in shard.cache.list_all(APIS_KCP_GROUP, API_EXPORT_ENDPOINT_SLICE_RESOURCE) {
        let Some(cluster) = meta::annotations(&replica).get(protocol::wellknown::CLUSTER_ANNOTATION).cloned() else {
            continue;
        };
        if !shard.cluster_exists(&cluster) {
            slices.push(Slice { cluster, object: (*replica).clone(), local: false });
        }
    }
    let members: HashSet<String> = shard.membership.current().iter().map(|info| info.name.clone()).collect();
    for slice in slices {
        if let Err(error) = reconcile(shard, bound, &rt, &slice, &members).await {
            let name = meta::name(&slice.object).unwrap_or_default();
            tracing::debug!(cluster = slice.cluster, name, %error, "endpoint slice not updated; retrying");
        }
    }
}

async fn reconcile(
    shard: &Shard,
    bound: &BoundResources,
    rt: &apiserver::registry::ResourceType,
    slice: &Slice,
    members: &HashSet<String>,
) -> anyhow::Result<()> {
    let text = |pointer: &str| slice.object.pointer(pointer).and_then(Value::as_str).filter(|s| !s.is_empty());
    let (Some(name), Some(export_name)) = (meta::name(&slice.object), text("/spec/export/name")) else {
        return Ok(());
    };
    let export_path = text("/spec/export/path").unwrap_or(&slice.cluster);
    let Some(export) = lister::get(shard, APIS_KCP_GROUP, "apiexports", export_path, "", export_name) else {
        return Ok(());
    };
    let identity = export.object.pointer("/status/identityHash").and_then(Value::as_str).unwrap_or_default();
    // Some workspace here binds the export (also one that binds no resource, only claims).
    let serves = !identity.is_empty() && bound.binds_export(&export.cluster, export_name);
    let mine = url_of(&shard.external_url, &shard.name, &export.cluster, export_name);
    // Only the hosting shard prunes departed shards, and only once it knows its shard set.
    let members = (slice.local && !members.is_empty()).then_some(members);
    let current = urls(&slice.object);
    if plan(&current, &mine, serves, members) == current {
        return Ok(());
    }
    if slice.local {
        let at = ObjectRef { cluster: &slice.cluster, namespace: None, name };
        storage::guaranteed_update(shard, rt, &at, Some("status"), WriteOptions::default(), |old| {
            Ok(with_urls(old, &plan(&urls(old), &mine, serves, members)))
        })
        .await
        .map_err(|e: ApiError| anyhow::anyhow!(e.message))?;
        return Ok(());
    }
    // Another shard hosts the slice: read it there, and write back what this shard adds or
    // removes with the resourceVersion read, so a concurrent writer is never overwritten.
    let origin = shard.cache.origin_of(&slice.cluster).ok_or_else(|| anyhow::anyhow!("hosting shard unknown"))?;
    let base = shard.membership.current().shard(&origin).map(|info| info.base_url.clone());
    let base = base.ok_or_else(|| anyhow::anyhow!("shard {origin} is not in the shard set"))?;
    let path = format!(
        "/clusters/{}/apis/{APIS_KCP_GROUP}/v1alpha1/{API_EXPORT_ENDPOINT_SLICE_RESOURCE}/{name}",
        slice.cluster
    );
    let fresh = shard.peers.get(&base, &path).await?;
    let wanted = plan(&urls(&fresh), &mine, serves, None);
    if wanted != urls(&fresh) {
        shard.peers.replace(&base, &format!("{path}/status"), &with_urls(&fresh, &wanted)).await?;
        tracing::info!(cluster = slice.cluster, name, serves, "endpoint slice updated on shard {origin}");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn urls_name_their_shard() {
        let url = url_of("https://proxy:6443/", "shard-1", "c1", "widgets");
        assert_eq!(url, "https://proxy:6443/shards/shard-1/services/apiexport/c1/widgets");
        assert_eq!(shard_of(&url), Some("shard-1"));
        assert_eq!(shard_of("https://x/services/apiexport/c/w"), None);
        assert_eq!(shard_of("https://x/shards//services/a"), None);
    }

    #[test]
    fn a_shard_adds_and_removes_only_its_own_url() {
        let mine = "https://p/shards/b/services/apiexport/c/w";
        let other = "https://p/shards/a/services/apiexport/c/w";
        assert_eq!(plan(&[], mine, true, None), strings(&[mine]));
        assert_eq!(plan(&strings(&[other]), mine, true, None), strings(&[other, mine]));
        assert_eq!(plan(&strings(&[other, mine]), mine, false, None), strings(&[other]));
        assert_eq!(plan(&strings(&[other, mine, mine]), mine, true, None), strings(&[other, mine]));
        assert_eq!(plan(&strings(&[other]), mine, false, None), strings(&[other]));
        let moved = "https://old-proxy/shards/b/services/apiexport/c/w";
        assert_eq!(plan(&strings(&[moved, other]), mine, true, None), strings(&[other, mine]), "a stale own URL goes");
    }

    #[test]
    fn the_hosting_shard_drops_shards_that_left() {
        let mine = "https://p/shards/b/services/apiexport/c/w";
        let gone = "https://p/shards/a/services/apiexport/c/w";
        let foreign = "https://elsewhere/view";
        let members: HashSet<String> = ["b".to_string()].into();
        assert_eq!(plan(&strings(&[gone, foreign]), mine, true, Some(&members)), strings(&[foreign, mine]));
    }
}
