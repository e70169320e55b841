//! The answer for a request into a workspace whose shard does not answer.
//!
//! Only the workspace's shard can authorize a request into it, and it is down. Saying
//! "503, the shard hosting this workspace is unavailable" to anyone would tell a caller
//! who may not enter the workspace that it exists, which the answer for a missing
//! workspace ([`status::no_access`]) is worded to hide. So the 503 goes only to callers
//! who may see the workspace anyway:
//! - `system:masters`;
//! - the owner of its logical cluster (home workspaces and the workspace's creator, who
//!   are cluster-admin of it);
//! - whoever may `get` its Workspace object in the parent workspace, asked of the
//!   parent's shard as the caller (that is where `kubectl get workspaces` would show it,
//!   with phase `Unavailable` once the parent's shard declares it so).
//!
//! Everyone else gets exactly the answer for a workspace that does not exist.

use std::time::Duration;

use http::{Method, Request, StatusCode};

use crate::caller::Caller;
use crate::feed::Routing;
use crate::index::Target;
use crate::status;
use crate::upstream::{Body, Upstream};

/// How long the parent's shard may take to say whether the caller may see the workspace.
const PARENT_CHECK_TIMEOUT: Duration = Duration::from_secs(3);

/// 503 to a caller who may see the workspace at `target` (asked for as `requested`), the
/// no-access 403 to anyone else.
pub async fn answer(
    routing: &Routing,
    upstream: &Upstream,
    caller: &Caller,
    target: &Target,
    requested: &str,
) -> http::Response<Body> {
    if may_see(routing, upstream, caller, &target.cluster).await {
        return status::unavailable(&format!(
            "shard {} hosting this workspace is unavailable; other workspaces are not affected",
            target.shard
        ));
    }
    status::no_access(&caller.identity.user, requested)
}

/// Whether `caller` may see the workspace of logical cluster `cluster`: the rules above.
/// Also used for a workspace whose cluster is not indexed yet ([`crate::sync_gate`]).
pub async fn may_see(routing: &Routing, upstream: &Upstream, caller: &Caller, cluster: &str) -> bool {
    if caller.identity.is_master() {
        return true;
    }
    let (owner, parent) = {
        let index = routing.index.read();
        let owner = index.cluster(cluster).map(|(_, owner)| owner.to_owned());
        let parent = index.workspace_of(cluster).map(|(parent, name)| (parent, name.to_owned()));
        (owner, parent)
    };
    if owner.is_some_and(|owner| !owner.is_empty() && owner == caller.identity.user) {
        return true;
    }
    let Some((parent, name)) = parent else { return false };
    may_get_workspace(routing, upstream, caller, &parent, &name).await
}

/// Whether the parent's shard lets the caller GET the Workspace `name` (200).
async fn may_get_workspace(
    routing: &Routing,
    upstream: &Upstream,
    caller: &Caller,
    parent: &Target,
    name: &str,
) -> bool {
    let Some(base) = routing.shard_url(&parent.shard) else { return false };
    let url = format!("{base}/clusters/{}/apis/tenancy.kcp.io/v1alpha1/workspaces/{name}", parent.cluster);
    let mut request = match Request::builder().method(Method::GET).uri(url).body(crate::upstream::full(Vec::new())) {
        Ok(request) => request,
        Err(_) => return false,
    };
    for (header, value) in caller.headers() {
        request.headers_mut().append(header.clone(), value.clone());
    }
    telemetry::propagation::inject_http(&tracing::Span::current(), request.headers_mut());
    let answered = tokio::time::timeout(PARENT_CHECK_TIMEOUT, upstream.rest.request(request)).await;
    matches!(answered, Ok(Ok(response)) if response.status() == StatusCode::OK)
}
