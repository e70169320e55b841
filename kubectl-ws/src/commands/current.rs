//! `kubectl ws current` (and `kubectl ws .`): print the workspace the kubeconfig points at.

use super::Session;
use crate::output;

/// Runs `kubectl ws current`; `--short` prints only the path.
pub fn run(session: &Session, short: bool) {
    print(session.server_url(), short);
}

/// Prints the workspace of `server_url`, as kcp's plugin words it.
pub fn print(server_url: &str, short: bool) {
    if let Some(line) = output::current_workspace(server_url, None, short) {
        println!("{line}");
    }
}
