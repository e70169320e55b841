//! Server URLs of the form `https://host:port[/prefix]/clusters/<path>`: which workspace a
//! kubeconfig points at, and the URL of another one on the same server.
//!
//! kcp's plugin finds the first `/clusters/` in the URL's path; everything before it is the
//! *base* (a front-proxy may sit under a prefix) and the next segment is the workspace. A
//! server without `/clusters/` points at no workspace: it still has a base, so absolute
//! paths and `~` work from there, but relative moves have nothing to be relative to.

use protocol::path::ClusterPath;

/// The path segment that introduces a logical cluster in a server URL.
const CLUSTERS_SEGMENT: &str = "/clusters/";

/// Why a server URL could not be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UrlError {
    /// No `scheme://` or no host.
    #[error("server URL {0:?} is not an absolute URL with a host")]
    NotAbsolute(String),
    /// `/clusters/` is followed by something that is not a workspace path.
    #[error("invalid cluster name in server URL {url:?}: {segment:?}")]
    InvalidCluster {
        /// The URL as written in the kubeconfig.
        url: String,
        /// What followed `/clusters/`.
        segment: String,
    },
}

/// A server URL split into its base and the workspace it points at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerUrl {
    /// `scheme://authority[/prefix]`, without a trailing slash and without `/clusters/…`.
    base: String,
    /// The workspace after `/clusters/`, if the URL names one.
    cluster: Option<ClusterPath>,
}

impl ServerUrl {
    /// Splits `server` (a kubeconfig cluster's `server`). Query and fragment are dropped:
    /// API servers have no use for them and kcp's plugin rebuilds URLs without them too.
    pub fn parse(server: &str) -> Result<ServerUrl, UrlError> {
        let not_absolute = || UrlError::NotAbsolute(server.to_string());
        let without_query = server.split(['?', '#']).next().unwrap_or_default();
        let (scheme, rest) = without_query.split_once("://").ok_or_else(not_absolute)?;
        let (authority, path) = match rest.find('/') {
            Some(slash) => rest.split_at(slash),
            None => (rest, ""),
        };
        if scheme.is_empty() || authority.is_empty() {
            return Err(not_absolute());
        }
        let origin = format!("{scheme}://{authority}");
        let Some(index) = path.find(CLUSTERS_SEGMENT) else {
            let base = format!("{origin}{}", path.trim_end_matches('/'));
            return Ok(ServerUrl { base, cluster: None });
        };
        let segment = path[index + CLUSTERS_SEGMENT.len()..].split('/').next().unwrap_or_default();
        let cluster = ClusterPath::parse(segment)
            .map_err(|_| UrlError::InvalidCluster { url: server.to_string(), segment: segment.to_string() })?;
        Ok(ServerUrl { base: format!("{origin}{}", &path[..index]), cluster: Some(cluster) })
    }

    /// `scheme://authority[/prefix]`: where `/clusters/<path>/…` requests go.
    pub fn base(&self) -> &str {
        &self.base
    }

    /// The workspace the URL points at, if any.
    pub fn cluster(&self) -> Option<&ClusterPath> {
        self.cluster.as_ref()
    }

    /// The URL of workspace `path` on the same server.
    pub fn with_cluster(&self, path: &ClusterPath) -> String {
        cluster_url(&self.base, path)
    }
}

/// `base/clusters/<path>`.
pub fn cluster_url(base: &str, path: &ClusterPath) -> String {
    format!("{base}{CLUSTERS_SEGMENT}{path}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn servers_split_into_base_and_workspace() {
        // (server, base, workspace)
        let cases = [
            ("https://h:6443/clusters/root", "https://h:6443", Some("root")),
            ("https://h:6443/clusters/root:org:team", "https://h:6443", Some("root:org:team")),
            ("https://h:6443/clusters/root:org/", "https://h:6443", Some("root:org")),
            ("https://h:6443/clusters/root/api/v1", "https://h:6443", Some("root")),
            ("https://h:6443/proxy/clusters/home:alice", "https://h:6443/proxy", Some("home:alice")),
            ("https://h:6443/clusters/2x5kq9zt7pl", "https://h:6443", Some("2x5kq9zt7pl")),
            ("https://h:6443/clusters/root?timeout=5s", "https://h:6443", Some("root")),
            ("https://h:6443", "https://h:6443", None),
            ("https://h:6443/", "https://h:6443", None),
            ("https://h:6443/prefix/", "https://h:6443/prefix", None),
            ("https://h:6443/clusters", "https://h:6443/clusters", None),
        ];
        for (server, base, workspace) in cases {
            let url = ServerUrl::parse(server).unwrap_or_else(|e| panic!("{server}: {e}"));
            assert_eq!(url.base(), base, "{server}");
            assert_eq!(url.cluster().map(ClusterPath::as_str), workspace, "{server}");
        }
    }

    #[test]
    fn unusable_servers_are_errors() {
        let cases = [
            ("h:6443/clusters/root", "not an absolute URL"),
            ("https:///clusters/root", "not an absolute URL"),
            ("https://h/clusters/", "invalid cluster name"),
            ("https://h/clusters/Root", "invalid cluster name"),
            ("https://h/clusters/root::org", "invalid cluster name"),
            ("https://h/clusters/~", "invalid cluster name"),
        ];
        for (server, message) in cases {
            let error = ServerUrl::parse(server).expect_err(server).to_string();
            assert!(error.contains(message), "{server}: {error}");
        }
    }

    #[test]
    fn other_workspaces_keep_the_base() {
        let path = |p: &str| ClusterPath::parse(p).unwrap();
        // (server, target, rewritten)
        let cases = [
            ("https://h:6443/clusters/root", "root:org", "https://h:6443/clusters/root:org"),
            ("https://h:6443/clusters/root:org:team", "root:org", "https://h:6443/clusters/root:org"),
            ("https://h:6443/proxy/clusters/root/", "home:alice", "https://h:6443/proxy/clusters/home:alice"),
            ("https://h:6443", "root", "https://h:6443/clusters/root"),
            ("https://h:6443/prefix/", "root:a", "https://h:6443/prefix/clusters/root:a"),
        ];
        for (server, target, rewritten) in cases {
            assert_eq!(ServerUrl::parse(server).unwrap().with_cluster(&path(target)), rewritten, "{server}");
        }
    }
}
