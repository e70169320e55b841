//! `kubectl ws create NAME [--type T] [--enter] [--ignore-existing]`: create a child of the
//! current workspace, wait until it is Ready, and optionally enter it.

use std::time::{Duration, Instant};

use anyhow::Context;
use protocol::path::{is_valid_cluster_name, ClusterPath, ROOT};
use protocol::types::{Workspace, WorkspaceTypeReference, PHASE_READY, WORKSPACE_API_VERSION, WORKSPACE_KIND};
use serde_json::{json, Value};

use super::Session;
use crate::client::Server;
use crate::output;
use crate::target::Target;

/// How long a new workspace may take to become Ready (kcp's plugin waits a minute too).
const READY_TIMEOUT: Duration = Duration::from_secs(60);
/// How long a just-created workspace may be missing from reads (a lagging replica).
const APPEAR_TIMEOUT: Duration = Duration::from_secs(5);
/// How often the phase is polled.
const POLL_INTERVAL: Duration = Duration::from_millis(500);

/// What to create.
#[derive(Debug, Clone, Default)]
pub struct CreateOptions {
    /// The new workspace's name.
    pub name: String,
    /// `--type`: `name` or `path:name`.
    pub workspace_type: Option<String>,
    /// `--enter`: switch to the workspace once Ready.
    pub enter: bool,
    /// `--ignore-existing`: an existing workspace of that name (and type) is fine.
    pub ignore_existing: bool,
}

/// Runs `kubectl ws create`.
pub async fn run(session: &mut Session, options: &CreateOptions) -> anyhow::Result<()> {
    let name = options.name.as_str();
    anyhow::ensure!(
        is_valid_cluster_name(name),
        "invalid workspace name {name:?}: must be a lowercase RFC 1123 label of at most 63 characters"
    );
    let wanted_type = options.workspace_type.as_deref().map(parse_type);
    if options.ignore_existing {
        check_absolute_type(wanted_type.as_ref())?;
    }
    let url = session.url()?;
    let parent = url
        .cluster()
        .cloned()
        .with_context(|| format!("current URL {:?} does not point to a workspace", session.server_url()))?;
    let server = session.server().await?.clone();

    let (workspace, existed) = create_or_get(&server, &parent, name, wanted_type.as_ref(), options).await?;
    let reference = output::workspace_reference(name, workspace.spec.type_.as_ref());
    if existed {
        check_same_type(name, wanted_type.as_ref(), workspace.spec.type_.as_ref())?;
    }
    match (existed, workspace.status.phase == PHASE_READY) {
        (true, true) => println!("{reference} already exists."),
        (true, false) => println!("{reference} already exists. Waiting for it to be ready..."),
        (false, false) => println!("{reference} created. Waiting for it to be ready..."),
        (false, true) => {}
    }
    wait_ready(&server, &parent, name, &reference).await?;
    println!("{reference} is ready to use.");

    if options.enter {
        super::use_workspace::enter(session, &Target::Relative(name.to_string()), false).await?;
    }
    Ok(())
}

/// Creates the workspace; with `--ignore-existing`, an AlreadyExists answer fetches the
/// existing one instead. Returns the object and whether it already existed.
async fn create_or_get(
    server: &Server,
    parent: &ClusterPath,
    name: &str,
    workspace_type: Option<&WorkspaceTypeReference>,
    options: &CreateOptions,
) -> anyhow::Result<(Workspace, bool)> {
    match server.create_workspace(parent, &workspace_body(name, workspace_type)).await {
        Ok(workspace) => Ok((workspace, false)),
        Err(error) if error.code() == Some(409) && options.ignore_existing => {
            let existing = server.workspace(parent, name).await.with_context(|| format!("get workspace {name:?}"))?;
            let existing = existing.with_context(|| format!("workspace {name:?} exists, yet cannot be read"))?;
            Ok((existing, true))
        }
        Err(error) => Err(error).with_context(|| format!("create workspace {name:?} in \"{parent}\"")),
    }
}

/// Polls until the workspace is Ready, at most [`READY_TIMEOUT`]. A 404 is tolerated for
/// [`APPEAR_TIMEOUT`], as kcp's plugin does, in case a read lags the create.
async fn wait_ready(server: &Server, parent: &ClusterPath, name: &str, reference: &str) -> anyhow::Result<()> {
    let start = Instant::now();
    loop {
        let phase = match server.workspace(parent, name).await.with_context(|| format!("get workspace {name:?}"))? {
            Some(workspace) if workspace.status.phase == PHASE_READY => return Ok(()),
            Some(workspace) => workspace.status.phase,
            None if start.elapsed() < APPEAR_TIMEOUT => String::from("not visible yet"),
            None => anyhow::bail!("{reference} disappeared while waiting for it to be ready"),
        };
        if start.elapsed() >= READY_TIMEOUT {
            let phase = if phase.is_empty() { "none" } else { phase.as_str() };
            anyhow::bail!("{reference} is not ready after {READY_TIMEOUT:?} (phase {phase})");
        }
        tokio::time::sleep(POLL_INTERVAL).await;
    }
}

/// `--type` as kcp reads it: `name`, or `path:name` split at the last colon; names are
/// lowercased (`Universal` is `universal`).
pub fn parse_type(text: &str) -> WorkspaceTypeReference {
    match text.rsplit_once(':') {
        Some((path, name)) => WorkspaceTypeReference { name: name.to_lowercase(), path: path.to_string() },
        None => WorkspaceTypeReference { name: text.to_lowercase(), path: String::new() },
    }
}

/// `--ignore-existing` compares types, which only works for absolute ones: a relative type
/// path would be defaulted by the server and never match what was asked.
pub fn check_absolute_type(workspace_type: Option<&WorkspaceTypeReference>) -> anyhow::Result<()> {
    let absolute = |t: &WorkspaceTypeReference| t.path == ROOT || t.path.starts_with("root:");
    match workspace_type {
        Some(t) if !absolute(t) => anyhow::bail!("--ignore-existing must not be used with non-absolute type path"),
        _ => Ok(()),
    }
}

/// An existing workspace must have the type that was asked for (none asked: any type).
pub fn check_same_type(
    name: &str,
    wanted: Option<&WorkspaceTypeReference>,
    existing: Option<&WorkspaceTypeReference>,
) -> anyhow::Result<()> {
    let (Some(wanted), Some(existing)) = (wanted, existing) else { return Ok(()) };
    let differs = (!existing.name.is_empty() && existing.name != wanted.name) || existing.path != wanted.path;
    anyhow::ensure!(
        !differs,
        "workspace {name:?} cannot be created with type {wanted}, it already exists with different type {existing}"
    );
    Ok(())
}

/// The Workspace to POST.
fn workspace_body(name: &str, workspace_type: Option<&WorkspaceTypeReference>) -> Value {
    let mut body = json!({
        "apiVersion": WORKSPACE_API_VERSION,
        "kind": WORKSPACE_KIND,
        "metadata": {"name": name},
    });
    if let Some(workspace_type) = workspace_type {
        body["spec"] = json!({"type": workspace_type});
    }
    body
}

#[cfg(test)]
mod tests {
    use super::*;

    fn type_ref(path: &str, name: &str) -> WorkspaceTypeReference {
        WorkspaceTypeReference { name: name.into(), path: path.into() }
    }

    #[test]
    fn types_parse_like_kcp() {
        let cases = [
            ("universal", type_ref("", "universal")),
            ("Universal", type_ref("", "universal")),
            ("root:universal", type_ref("root", "universal")),
            ("root:org:Team", type_ref("root:org", "team")),
        ];
        for (text, expected) in cases {
            assert_eq!(parse_type(text), expected, "{text}");
        }
    }

    #[test]
    fn ignore_existing_needs_an_absolute_type() {
        assert!(check_absolute_type(None).is_ok());
        assert!(check_absolute_type(Some(&type_ref("root", "universal"))).is_ok());
        assert!(check_absolute_type(Some(&type_ref("root:org", "team"))).is_ok());
        assert!(check_absolute_type(Some(&type_ref("", "universal"))).is_err());
        assert!(check_absolute_type(Some(&type_ref("rooted", "x"))).is_err());
    }

    #[test]
    fn existing_workspaces_must_match_the_type() {
        let universal = type_ref("root", "universal");
        assert!(check_same_type("a", None, Some(&universal)).is_ok());
        assert!(check_same_type("a", Some(&universal), None).is_ok());
        assert!(check_same_type("a", Some(&universal), Some(&universal)).is_ok());
        let error = check_same_type("a", Some(&type_ref("root", "team")), Some(&universal)).unwrap_err();
        assert_eq!(
            error.to_string(),
            r#"workspace "a" cannot be created with type root:team, it already exists with different type root:universal"#
        );
    }

    #[test]
    fn bodies_carry_the_type_only_when_given() {
        let plain = workspace_body("a", None);
        assert_eq!(
            plain,
            json!({"apiVersion": "tenancy.kcp.io/v1alpha1", "kind": "Workspace", "metadata": {"name": "a"}})
        );
        let typed = workspace_body("a", Some(&type_ref("root", "universal")));
        assert_eq!(typed["spec"], json!({"type": {"name": "universal", "path": "root"}}));
        let unpathed = workspace_body("a", Some(&type_ref("", "universal")));
        assert_eq!(unpathed["spec"], json!({"type": {"name": "universal"}}));
    }
}
