//! The `kubectl ws` plugin: move between workspaces, create them and print their tree,
//! behaving like kcp's plugin so that kcp users' habits and scripts carry over.
//!
//! kubectl runs `kubectl-ws` from `PATH` for `kubectl ws …`. A command meets the modules
//! in this order:
//!
//! - [`cli`] parses the command line (`use`, `current`, `create`, `tree`, the shorthand
//!   `kubectl ws <workspace>`, and kubectl's kubeconfig flags) and dispatches to one file per verb in
//!   [`commands`], which share a [`commands::Session`].
//! - [`kubeconfig`] loads the kubeconfig files kubectl would (`--kubeconfig`,
//!   `KUBECONFIG`, `~/.kube/config`), merges them, computes kcp's context edits
//!   (`workspace.kcp.io/current` and `…/previous`) and writes each entry back where it came
//!   from.
//! - [`server_url`] splits the active server URL into its base and the workspace path
//!   after `/clusters/`, and builds the URL of another workspace.
//! - [`target`] is the path arithmetic: what an argument (`..`, `-`, `~`, `:root:org`,
//!   `org:team`) asks for and which canonical path that is.
//! - [`client`] is the only network code: a `kube::Client` with the kubeconfig's
//!   credentials, sending every request to `<base>/clusters/<path>/…`.
//! - [`output`] words the messages like kcp's plugin.
//!
//! Everything except [`client`], [`kubeconfig::files`] and the verbs is free of I/O and
//! tested from tables.

pub mod cli;
pub mod client;
pub mod commands;
pub mod kubeconfig;
pub mod output;
pub mod server_url;
pub mod target;
