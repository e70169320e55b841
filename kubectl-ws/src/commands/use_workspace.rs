//! `kubectl ws use <target>` (and the shorthand `kubectl ws <target>`): switch the
//! kubeconfig to another workspace.
//!
//! A path-like target is resolved against the current workspace (and the home path, which
//! the server resolves), then checked like kcp does: the Workspace object in the parent
//! tells whether it exists (and here also whether it is Ready), discovery on the path
//! itself whether the caller may use it. Only then is the kubeconfig rewritten.

use std::time::{Duration, Instant};

use anyhow::Context;
use protocol::path::ClusterPath;
use protocol::types::{WorkspaceTypeReference, PHASE_READY, PHASE_UNAVAILABLE};

use super::Session;
use crate::client::{Access, Server};
use crate::kubeconfig::edit;
use crate::output;
use crate::target::{self, Note, Target};

/// How long a Ready workspace may stay unserved at its path before `use` gives up.
const SERVED_TIMEOUT: Duration = Duration::from_secs(10);
/// How often discovery is retried meanwhile.
const SERVED_POLL_INTERVAL: Duration = Duration::from_millis(200);

/// Runs `kubectl ws use <argument>`; `--short` prints only the path.
pub async fn run(session: &mut Session, argument: &str, short: bool) -> anyhow::Result<()> {
    let user_home_dir = std::env::var("HOME").ok();
    let parsed = target::parse_argument(argument, user_home_dir.as_deref());
    if parsed.notes.contains(&Note::LegacyRootPrefix) {
        eprintln!("{}", Note::LegacyRootPrefix.message());
    }
    match &parsed.target {
        Target::Current => super::current::print(session.server_url(), short),
        Target::Previous => previous(session, short)?,
        target => enter(session, target, short).await?,
    }
    if parsed.notes.contains(&Note::NoArgumentMeansHome) {
        eprintln!("{}", Note::NoArgumentMeansHome.message());
    }
    Ok(())
}

/// Switches to the workspace `target` names (not [`Target::Current`] or
/// [`Target::Previous`]) and prints where we are now.
pub async fn enter(session: &mut Session, target: &Target, short: bool) -> anyhow::Result<()> {
    let url = session.url()?;
    let server_url = session.server_url().to_string();
    let server = session.server().await?.clone();
    let home = match target {
        Target::Home { .. } => Some(server.home_path().await?),
        _ => None,
    };
    let path = target::resolve(target, url.cluster(), home.as_ref(), &server_url)?;
    let workspace_type = check(&server, &path).await?;
    let edit = edit::enter(&session.merged, session.context()?, &url.with_cluster(&path))?;
    let new_server = session.commit(&edit)?;
    if let Some(line) = output::current_workspace(&new_server, workspace_type.as_ref(), short) {
        println!("{line}");
    }
    Ok(())
}

/// `kubectl ws -`: swaps the current and the previous workspace.
fn previous(session: &mut Session, short: bool) -> anyhow::Result<()> {
    let edit = edit::swap_previous(&session.merged, session.context()?)?;
    let new_server = session.commit(&edit)?;
    if let Some(line) = output::current_workspace(&new_server, None, short) {
        println!("{line}");
    }
    Ok(())
}

/// Checks that `path` is a Ready workspace the caller may use, and returns its type when
/// the parent tells it. A parent that forbids reading its Workspaces is no obstacle (the
/// caller may have access to the child only), and neither is a missing parent (`home:…`
/// has none); discovery on the path decides then.
async fn check(server: &Server, path: &ClusterPath) -> anyhow::Result<Option<WorkspaceTypeReference>> {
    let mut workspace_type = None;
    let mut missing_in_parent = false;
    let mut ready_in_parent = false;
    if path.is_root() {
        workspace_type = Some(WorkspaceTypeReference { name: "root".into(), path: String::new() });
    } else if let Some(parent) = path.parent() {
        match server.workspace(&parent, path.base()).await {
            Ok(Some(workspace)) => {
                let phase = workspace.status.phase.as_str();
                // An Unavailable workspace goes on to discovery: it answers if its shard is
                // back, and otherwise the server's 503 says which shard is down.
                anyhow::ensure!(
                    phase == PHASE_READY || phase == PHASE_UNAVAILABLE,
                    "workspace \"{path}\" is not ready yet (phase {})",
                    if phase.is_empty() { "unknown" } else { phase }
                );
                workspace_type = workspace.spec.type_;
                ready_in_parent = true;
            }
            Ok(None) => missing_in_parent = true,
            Err(error) if error.code() == Some(403) => {}
            Err(error) => return Err(error).with_context(|| format!("get workspace \"{path}\"")),
        }
    }
    let access = access(server, path, ready_in_parent).await?;
    match (access, missing_in_parent) {
        (Access::Allowed, _) => Ok(workspace_type),
        (_, true) => anyhow::bail!("workspace \"{path}\" not found"),
        (Access::Forbidden, false) => anyhow::bail!("access to workspace \"{path}\" denied"),
        (Access::NotFound, false) => anyhow::bail!(
            "workspace \"{path}\" is not served at {}: point the kubeconfig at the front-proxy, \
             which serves every workspace",
            server.base()
        ),
    }
}

/// Discovery on `path`. A workspace that its parent reports Ready may still be unknown to
/// a front-proxy for a moment (its index follows the shards' streams), so a 404 for it is
/// retried for up to [`SERVED_TIMEOUT`] before it counts.
async fn access(server: &Server, path: &ClusterPath, ready_in_parent: bool) -> anyhow::Result<Access> {
    let deadline = Instant::now() + SERVED_TIMEOUT;
    loop {
        let access = server.access(path).await.with_context(|| format!("discover the APIs of workspace \"{path}\""))?;
        if access != Access::NotFound || !ready_in_parent || Instant::now() >= deadline {
            return Ok(access);
        }
        tokio::time::sleep(SERVED_POLL_INTERVAL).await;
    }
}
