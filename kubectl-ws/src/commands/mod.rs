//! The verbs, one file each, and the [`Session`] they share: the kubeconfig as loaded,
//! the active context and its server, and (once needed) a client for that server.

pub mod create;
pub mod current;
pub mod tree;
pub mod use_workspace;

use std::path::PathBuf;

use anyhow::Context;

use crate::client::Server;
use crate::kubeconfig::edit::{self, Edit, EditError};
use crate::kubeconfig::overrides::Overrides;
use crate::kubeconfig::{files, KubeconfigSet, Merged, Sources};
use crate::server_url::ServerUrl;

/// Where the kubeconfig comes from and which context to use, from the command line.
#[derive(Debug, Clone, Default)]
pub struct ConfigFlags {
    /// `--kubeconfig`.
    pub kubeconfig: Option<PathBuf>,
    /// `--context`.
    pub context: Option<String>,
    /// `--server`, `--token`, `--cluster`, `--user` and the TLS flags.
    pub overrides: Overrides,
}

/// The kubeconfig and the server of the active context.
pub struct Session {
    set: KubeconfigSet,
    merged: Merged,
    /// The active context's name: `--context`, else current-context; none in a
    /// kubeconfig without contexts (where only `--server` says where to go).
    context: Option<String>,
    /// The server URL: `--server`, else that of `--cluster` or the active context's cluster.
    server_url: String,
    overrides: Overrides,
    server: Option<Server>,
}

impl Session {
    /// Reads the kubeconfig as kubectl would for `flags` and finds the active context's server.
    pub fn load(flags: &ConfigFlags) -> anyhow::Result<Session> {
        let env = std::env::var_os("KUBECONFIG");
        let home = std::env::var_os("HOME").map(PathBuf::from);
        let sources = Sources::new(flags.kubeconfig.as_deref(), env.as_deref(), home.as_deref())
            .context("find the kubeconfig: set KUBECONFIG, pass --kubeconfig, or set HOME")?;
        let set = files::load(&sources)?;
        let merged = set.merged()?;
        let context = flags.context.clone().or_else(|| merged.current_context.clone());
        let overrides = flags.overrides.clone();
        let server_url = match (&overrides.server, &overrides.cluster) {
            (Some(server), _) => server.clone(),
            (None, Some(cluster)) => edit::server_of_cluster(&merged, cluster)?.to_string(),
            (None, None) => edit::server_of(&merged, edit::active_context(&merged, context.as_deref())?)?.to_string(),
        };
        Ok(Session { set, merged, context, server_url, overrides, server: None })
    }

    /// The active context, which every kubeconfig edit starts from.
    pub fn context(&self) -> Result<&str, EditError> {
        self.context.as_deref().ok_or(EditError::NoCurrentContext)
    }

    /// The active context's server URL, as written in the kubeconfig.
    pub fn server_url(&self) -> &str {
        &self.server_url
    }

    /// The active server URL, split into base and workspace.
    pub fn url(&self) -> anyhow::Result<ServerUrl> {
        Ok(ServerUrl::parse(&self.server_url)?)
    }

    /// A client for the base of the active server URL, connected on first use.
    pub async fn server(&mut self) -> anyhow::Result<&Server> {
        if self.server.is_none() {
            let url = self.url()?;
            let context = self.context.as_deref();
            self.server = Some(Server::connect(&self.set, context, &self.overrides, url.base()).await?);
        }
        Ok(self.server.as_ref().expect("just connected"))
    }

    /// Writes `edit` to the kubeconfig files and makes it the session's view, returning
    /// the server URL of the new current context.
    pub fn commit(&mut self, edit: &Edit) -> anyhow::Result<String> {
        let server = edit::server_after(&self.merged, edit, &edit.current_context)?;
        let changed = self.set.apply(&self.merged, edit);
        files::save(&self.set, &changed)?;
        self.merged = self.set.merged()?;
        self.context = Some(edit.current_context.clone());
        self.server_url = server.clone();
        Ok(server)
    }
}
