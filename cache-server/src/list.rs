//! `List`: the replicas a cache holds, and its origins' replication sessions, as of one
//! cache resourceVersion.

use crate::authz::{self, Caller};
use crate::replicas;
use crate::replicate::store_unavailable;
use crate::state::State;
use protocol::cache::{ListRequest, ListResponse};
use tonic::Status;

/// Serves one List call.
pub fn list(state: &State, caller: &Caller, request: &ListRequest) -> Result<ListResponse, Status> {
    authz::authorize_read(caller).map_err(Status::permission_denied)?;
    let mut prefix = key_prefix(&request.group, &request.resource)?;
    if !request.resource.is_empty() && !request.origin.is_empty() {
        // Keys put the origin right after the resource: one origin is one key range.
        prefix.push_str(&request.origin);
        prefix.push('/');
    }
    let keep = |replica: &protocol::cache::Replica| {
        let origin_matches =
            request.origin.is_empty() || replica.key.as_ref().is_some_and(|key| key.origin == request.origin);
        origin_matches && (request.sender.is_empty() || replica.sender == request.sender)
    };
    let (items, rv) = replicas::list(&state.store, &prefix, None, keep).map_err(|e| store_unavailable(&e))?;
    let epochs = replicas::list_epochs(&state.store, &request.origin, Some(rv)).map_err(|e| store_unavailable(&e))?;
    tracing::debug!(%caller, prefix, items = items.len(), epochs = epochs.len(), rv, "list");
    Ok(ListResponse { items, rv, epochs })
}

/// The key prefix a List or Watch of `group/resource` covers.
pub fn key_prefix(group: &str, resource: &str) -> Result<String, Status> {
    if resource.is_empty() && !group.is_empty() {
        return Err(Status::invalid_argument(format!(
            "group {group:?} given without a resource: name the resource too, or neither for every replica"
        )));
    }
    if resource.contains('/') || group.contains('/') {
        return Err(Status::invalid_argument(format!(
            "group {group:?} and resource {resource:?} must not contain '/'"
        )));
    }
    Ok(replicas::prefix(group, resource))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes() {
        assert_eq!(key_prefix("", "").expect("all"), "r/");
        assert_eq!(key_prefix("", "configmaps").expect("core"), "r/core/configmaps/");
        assert_eq!(key_prefix("apis.kcp.io", "apiexports").expect("group"), "r/apis.kcp.io/apiexports/");
        assert!(key_prefix("apis.kcp.io", "").is_err());
        assert!(key_prefix("", "a/b").is_err());
    }
}
