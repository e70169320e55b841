//! `kubectl ws tree [--full]`: the workspaces under the current one, drawn like kcp's
//! plugin draws them (with the `treeprint` layout).
//!
//! Each level is listed through the same server by path (`<parent>:<name>`), so behind a
//! front-proxy the walk crosses shards without knowing about them. Workspaces that are not
//! Ready (or Unavailable) are shown but not descended into: they have no logical cluster
//! to list yet.
//!
//! A workspace whose shard is down (the front-proxy answers 503) is drawn with an
//! `(unavailable)` marker and the walk goes on with the rest; the command then names each
//! unavailable workspace with the server's message and exits non-zero, since the tree it
//! printed is incomplete.

use protocol::path::ClusterPath;
use protocol::types::{PHASE_READY, PHASE_UNAVAILABLE};

use super::Session;
use crate::client::Server;

/// Deeper trees are cut off: a path of this many levels is beyond any real hierarchy and
/// more likely a cycle in a broken installation.
const DEPTH_MAX: usize = 32;
/// At most this many workspaces are listed; a bigger tree is cut off with a warning.
const NODES_MAX: usize = 10_000;

/// One workspace in the drawn tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    /// What is printed: the name, or the full path with `--full`.
    pub label: String,
    /// The workspace's full path.
    pub path: String,
    /// The children, in the order printed.
    pub children: Vec<usize>,
    /// Why its children could not be listed, when its shard is unavailable: the server's
    /// message. Its subtree is unknown.
    pub unavailable: Option<String>,
}

/// A tree of workspaces; node 0 is the workspace the walk started at.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tree {
    /// All nodes; children refer to them by index.
    pub nodes: Vec<Node>,
    /// Whether [`NODES_MAX`] cut the walk short.
    pub truncated: bool,
}

/// Runs `kubectl ws tree`.
pub async fn run(session: &mut Session, full: bool) -> anyhow::Result<()> {
    let url = session.url()?;
    let Some(current) = url.cluster().cloned() else {
        anyhow::bail!("current config context URL {:?} does not point to workspace", session.server_url());
    };
    let server = session.server().await?.clone();
    let tree = walk(&server, &current, full).await?;
    // kcp prints the drawing with Println, so a blank line follows it.
    println!("{}", render(&tree));
    if tree.truncated {
        eprintln!("Warning: the tree has more than {NODES_MAX} workspaces; the rest are not shown.");
    }
    let unavailable = unavailable_lines(&tree);
    anyhow::ensure!(
        unavailable.is_empty(),
        "the subtrees of {} workspace(s) could not be listed: {}",
        unavailable.len(),
        unavailable.join("; ")
    );
    Ok(())
}

/// Whether an answer means that the shard behind the server is down or unreachable (the
/// front-proxy's 503), rather than something about the workspace itself.
fn is_unavailable(code: Option<u16>) -> bool {
    matches!(code, Some(502..=504))
}

/// `workspace "root:org" is unavailable: <server's message>`, one per unavailable node.
fn unavailable_lines(tree: &Tree) -> Vec<String> {
    let with_reason = tree.nodes.iter().filter_map(|node| Some((&node.path, node.unavailable.as_ref()?)));
    with_reason.map(|(path, reason)| format!("workspace \"{path}\" is unavailable: {reason}")).collect()
}

/// Lists workspaces depth-first from `start`. A workspace whose children cannot be listed
/// (gone, or the caller may not look inside) shows as a leaf, one on an unavailable shard
/// as an unavailable leaf; other errors, and any error listing `start` itself, fail the walk.
async fn walk(server: &Server, start: &ClusterPath, full: bool) -> anyhow::Result<Tree> {
    let label = if full { start.to_string() } else { start.base().to_string() };
    let root = Node { label, path: start.to_string(), children: Vec::new(), unavailable: None };
    let mut tree = Tree { nodes: vec![root], truncated: false };
    let mut pending = vec![(0usize, start.clone(), 0usize)];
    while let Some((index, path, depth)) = pending.pop() {
        let mut workspaces = match server.workspaces(&path).await {
            Ok(workspaces) => workspaces,
            Err(error) if matches!(error.code(), Some(403 | 404)) => continue,
            Err(error) if index != 0 && is_unavailable(error.code()) => {
                tree.nodes[index].unavailable = Some(error.to_string());
                continue;
            }
            Err(error) => return Err(anyhow::Error::new(error).context(format!("list the workspaces in \"{path}\""))),
        };
        workspaces.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
        for workspace in workspaces {
            if tree.nodes.len() >= NODES_MAX {
                tree.truncated = true;
                return Ok(tree);
            }
            let Some(name) = workspace.metadata.name.as_deref() else { continue };
            let Ok(child) = path.join(name) else { continue };
            let label = if full { format!("{}:{name}", tree.nodes[index].label) } else { name.to_string() };
            let child_index = tree.nodes.len();
            tree.nodes.push(Node { label, path: child.to_string(), children: Vec::new(), unavailable: None });
            tree.nodes[index].children.push(child_index);
            // An Unavailable workspace is listed too: its shard answers again (the phase
            // follows later), or the 503 marks it with the server's message.
            let phase = workspace.status.phase.as_str();
            if (phase == PHASE_READY || phase == PHASE_UNAVAILABLE) && depth + 1 < DEPTH_MAX {
                pending.push((child_index, child, depth + 1));
            }
        }
    }
    Ok(tree)
}

/// Draws `tree` as `treeprint` does: a `.` line, then one line per workspace with
/// `├──`/`└──` connectors; the result ends with a newline.
pub fn render(tree: &Tree) -> String {
    let mut out = String::from(".\n");
    if !tree.nodes.is_empty() {
        render_children(tree, &[0], "", &mut out);
    }
    out
}

fn render_children(tree: &Tree, children: &[usize], prefix: &str, out: &mut String) {
    for (position, &child) in children.iter().enumerate() {
        let last = position + 1 == children.len();
        let node = &tree.nodes[child];
        out.push_str(prefix);
        out.push_str(if last { "└── " } else { "├── " });
        out.push_str(&node.label);
        if node.unavailable.is_some() {
            out.push_str(" (unavailable)");
        }
        out.push('\n');
        let deeper = format!("{prefix}{}", if last { "    " } else { "│   " });
        render_children(tree, &node.children, &deeper, out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(label: &str, children: &[usize]) -> Node {
        Node { label: label.into(), path: format!("root:{label}"), children: children.to_vec(), unavailable: None }
    }

    #[test]
    fn trees_draw_like_treeprint() {
        let single = Tree { nodes: vec![node("root", &[])], truncated: false };
        assert_eq!(render(&single), ".\n└── root\n");

        let tree = Tree {
            nodes: vec![
                node("root", &[1, 3]),
                node("org", &[2, 4]),
                node("team", &[]),
                node("other", &[]),
                node("team-b", &[5]),
                node("deep", &[]),
            ],
            truncated: false,
        };
        let expected = "\
.
└── root
    ├── org
    │   ├── team
    │   └── team-b
    │       └── deep
    └── other
";
        assert_eq!(render(&tree), expected);
    }

    #[test]
    fn unavailable_subtrees_are_marked_and_named() {
        let mut tree =
            Tree { nodes: vec![node("root", &[1, 2]), node("org", &[]), node("other", &[])], truncated: false };
        tree.nodes[1].unavailable = Some("shard shard-2 hosting this workspace is unavailable".into());
        assert_eq!(render(&tree), ".\n└── root\n    ├── org (unavailable)\n    └── other\n");
        assert_eq!(
            unavailable_lines(&tree),
            ["workspace \"root:org\" is unavailable: shard shard-2 hosting this workspace is unavailable"]
        );
        // (code, unavailable)
        for (code, expected) in
            [(Some(503), true), (Some(502), true), (Some(504), true), (Some(500), false), (None, false)]
        {
            assert_eq!(is_unavailable(code), expected, "{code:?}");
        }
    }
}
