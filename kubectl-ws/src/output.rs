//! What the plugin prints, in kcp's words.

use protocol::types::WorkspaceTypeReference;

use crate::server_url::ServerUrl;

/// The line after a move or for `kubectl ws .`: `Current workspace is "root:org".`, with
/// the workspace type when known; only the path with `short`. A server URL that names no
/// workspace is quoted whole (nothing with `short`).
pub fn current_workspace(server: &str, workspace_type: Option<&WorkspaceTypeReference>, short: bool) -> Option<String> {
    let path = ServerUrl::parse(server).ok().and_then(|url| url.cluster().cloned());
    match (path, short) {
        (None, true) => None,
        (None, false) => Some(format!("Current workspace is the URL {server:?}.")),
        (Some(path), true) => Some(path.to_string()),
        (Some(path), false) => {
            let type_suffix = workspace_type.map(|t| format!(" (type {t})")).unwrap_or_default();
            Some(format!("Current workspace is \"{path}\"{type_suffix}."))
        }
    }
}

/// `Workspace "org" (type root:universal)`, as `create` names the workspace it made.
pub fn workspace_reference(name: &str, workspace_type: Option<&WorkspaceTypeReference>) -> String {
    match workspace_type {
        Some(workspace_type) => format!("Workspace \"{name}\" (type {workspace_type})"),
        None => format!("Workspace \"{name}\""),
    }
}

/// An error and its causes on one line, `outer: inner: innermost`, as kcp's plugin prints
/// wrapped Go errors. A cause whose text the line already holds is skipped: kube's errors
/// print their source themselves and also return it as the source.
pub fn error_line(error: &anyhow::Error) -> String {
    let mut line = String::new();
    for cause in error.chain() {
        let text = cause.to_string();
        if line.contains(&text) {
            continue;
        }
        if !line.is_empty() {
            line.push_str(": ");
        }
        line.push_str(&text);
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    fn type_ref(path: &str, name: &str) -> WorkspaceTypeReference {
        WorkspaceTypeReference { name: name.into(), path: path.into() }
    }

    #[test]
    fn current_workspace_lines() {
        let universal = type_ref("root", "universal");
        let root_type = type_ref("", "root");
        // (server, type, short, line)
        let cases = [
            ("https://h/clusters/root:org", None, false, Some(r#"Current workspace is "root:org"."#)),
            (
                "https://h/clusters/root:org",
                Some(&universal),
                false,
                Some(r#"Current workspace is "root:org" (type root:universal)."#),
            ),
            ("https://h/clusters/root", Some(&root_type), false, Some(r#"Current workspace is "root" (type root)."#)),
            ("https://h/clusters/root:org", Some(&universal), true, Some("root:org")),
            ("https://h:6443", None, false, Some(r#"Current workspace is the URL "https://h:6443"."#)),
            ("https://h:6443", None, true, None),
            ("not a url", None, false, Some(r#"Current workspace is the URL "not a url"."#)),
        ];
        for (server, workspace_type, short, line) in cases {
            assert_eq!(current_workspace(server, workspace_type, short).as_deref(), line, "{server} {short}");
        }
    }

    #[test]
    fn error_lines_skip_repeated_causes() {
        #[derive(Debug, thiserror::Error)]
        #[error("ServiceError: {0}")]
        struct Repeats(#[source] std::io::Error);
        let io = std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "connection refused");
        let error = anyhow::Error::new(Repeats(io)).context("GET https://h/apis").context("discover workspace");
        assert_eq!(error_line(&error), "discover workspace: GET https://h/apis: ServiceError: connection refused");
        assert_eq!(error_line(&anyhow::anyhow!("plain")), "plain");
    }

    #[test]
    fn workspace_references() {
        assert_eq!(
            workspace_reference("org", Some(&type_ref("root", "universal"))),
            r#"Workspace "org" (type root:universal)"#
        );
        assert_eq!(workspace_reference("org", None), r#"Workspace "org""#);
    }
}
