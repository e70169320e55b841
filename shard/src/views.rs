//! What this shard's virtual workspaces (the sync view, the APIExport view) share: views
//! named `<workspace>/<name>`, and which of this shard's logical clusters a request
//! under `/clusters/<name, path or *>/` in a view addresses.

use crate::state::Shard;
use apiserver::rest::status::{ApiError, ApiResult};
use protocol::path::ClusterRef;

/// `<workspace>/<name>`: the workspace (a logical-cluster name or a canonical path) and
/// the object a view is for. Pure.
pub fn workspace_and_name(view: &str) -> Option<(&str, &str)> {
    let (workspace, name) = view.split_once('/')?;
    (!workspace.is_empty() && !name.is_empty() && !name.contains('/')).then_some((workspace, name))
}

/// The logical cluster `cluster` names on this shard, `None` for `*` (every cluster);
/// 404 when it is not here.
pub fn scope(shard: &Shard, cluster: &ClusterRef) -> ApiResult<Option<String>> {
    match cluster {
        ClusterRef::Wildcard => Ok(None),
        ClusterRef::Name(name) if shard.cluster_exists(name) => Ok(Some(name.clone())),
        ClusterRef::Path(path) => match shard.paths.resolve(path.as_str()) {
            Some(name) => Ok(Some(name)),
            None => Err(ApiError::not_found_message(format!("logical cluster {path} is not on this shard"))),
        },
        ClusterRef::Name(name) => {
            Err(ApiError::not_found_message(format!("logical cluster {name:?} is not on this shard")))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn views_name_a_workspace_and_an_object() {
        assert_eq!(workspace_and_name("root:inv/aws-1"), Some(("root:inv", "aws-1")));
        assert_eq!(workspace_and_name("root"), None);
        assert_eq!(workspace_and_name("/t"), None);
        assert_eq!(workspace_and_name("root/a/b"), None);
    }
}
