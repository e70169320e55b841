//! The HTTP side: a `kube::Client` with the kubeconfig's credentials, aimed at the base of
//! the server URL, and the few requests the plugin makes, each addressed by workspace path
//! (`/clusters/<path>/…`), so that one client reaches every workspace behind a front-proxy.

use protocol::wellknown::PATH_ANNOTATION;
use std::time::Duration;

use anyhow::Context;
use http::Method;
use protocol::path::ClusterPath;
use protocol::types::{Workspace, WorkspaceList};
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::kubeconfig::overrides::{self, Overrides, FLAGS_CONTEXT};
use crate::kubeconfig::KubeconfigSet;

/// How long connecting to the server may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// How long one response may take; every request here is small.
const READ_TIMEOUT: Duration = Duration::from_secs(30);

/// `~` in a `/clusters/` URL: the caller's home workspace, resolved by the front-proxy.
const HOME_SEGMENT: &str = "~";

/// The Workspace collection, relative to a workspace's URL.
const WORKSPACES: &str = "apis/tenancy.kcp.io/v1alpha1/workspaces";

/// The LogicalCluster every workspace has about itself, relative to its URL.
const THIS_LOGICAL_CLUSTER: &str = "apis/core.kcp.io/v1alpha1/logicalclusters/cluster";

/// A failed request.
#[derive(Debug, thiserror::Error)]
pub enum RequestError {
    /// The server answered with an error status; displays the server's message, as
    /// kubectl and kcp's plugin do.
    #[error("{}", status_text(*.code, .message))]
    Status {
        /// The HTTP status code.
        code: u16,
        /// The machine-readable reason (`NotFound`, `AlreadyExists`, …), if any.
        reason: String,
        /// The server's message.
        message: String,
    },
    /// No answer (connection, TLS, timeout) or an answer that is not what was asked for.
    /// Displays the request; the cause follows in the error chain.
    #[error("{method} {url}")]
    Transport {
        /// The request method.
        method: Method,
        /// The full URL.
        url: String,
        /// What kube reported.
        source: kube::Error,
    },
}

fn status_text(code: u16, message: &str) -> String {
    if message.is_empty() {
        format!("the server responded with HTTP {code}")
    } else {
        message.to_string()
    }
}

impl RequestError {
    /// The HTTP status code, if the server answered.
    pub fn code(&self) -> Option<u16> {
        match self {
            RequestError::Status { code, .. } => Some(*code),
            RequestError::Transport { .. } => None,
        }
    }
}

/// What discovery says about a workspace path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Discovery answered: the workspace exists and the caller may use it.
    Allowed,
    /// 403: the workspace may exist, but the caller may not use it.
    Forbidden,
    /// 404: the server serves no workspace at that path.
    NotFound,
}

/// One server (a front-proxy, or a shard) reached with the kubeconfig's credentials.
#[derive(Clone)]
pub struct Server {
    client: kube::Client,
    base: String,
}

impl Server {
    /// A client with the credentials of kubeconfig context `context` (none: only the
    /// flags give credentials) as the command line's `flags` change them, that sends
    /// every request to `base` (`https://host:port[/prefix]`).
    pub async fn connect(
        set: &KubeconfigSet,
        context: Option<&str>,
        flags: &Overrides,
        base: &str,
    ) -> anyhow::Result<Server> {
        let mut merged = kube::config::Kubeconfig::default();
        for file in set.files.iter().filter(|file| file.exists) {
            let config = kube::config::Kubeconfig::read_from(&file.path)
                .with_context(|| format!("load kubeconfig {}", file.path.display()))?;
            merged = merged.merge(config).context("merge kubeconfig files")?;
        }
        let kubeconfig = overrides::apply(merged, context, flags)?;
        let options =
            kube::config::KubeConfigOptions { context: Some(FLAGS_CONTEXT.to_string()), ..Default::default() };
        let mut config = kube::Config::from_custom_kubeconfig(kubeconfig, &options).await.with_context(|| {
            format!("load the credentials of context {:?}", context.unwrap_or("(none, flags only)"))
        })?;
        config.cluster_url = base.parse().with_context(|| format!("parse server URL {base:?}"))?;
        config.connect_timeout = Some(CONNECT_TIMEOUT);
        config.read_timeout = Some(READ_TIMEOUT);
        // kube retries 429, 503 and 504 up to 15 times with backoff growing to minutes,
        // which made `tree` take about five minutes to fail while one shard was down. A
        // command-line tool answers at once instead, as kubectl does: the server's 503
        // says which shard is down, and the user decides whether to try again.
        config.default_retry = false;
        let client = kube::Client::try_from(config).context("build the HTTP client")?;
        Ok(Server { client, base: base.to_string() })
    }

    /// `scheme://authority[/prefix]` that requests go to.
    pub fn base(&self) -> &str {
        &self.base
    }

    /// Workspace `name` in the workspace at `parent`; `None` if there is none.
    pub async fn workspace(&self, parent: &ClusterPath, name: &str) -> Result<Option<Workspace>, RequestError> {
        let path = format!("/clusters/{parent}/{WORKSPACES}/{name}");
        match self.send(Method::GET, &path, None).await {
            Ok(workspace) => Ok(Some(workspace)),
            Err(error) if error.code() == Some(404) => Ok(None),
            Err(error) => Err(error),
        }
    }

    /// The Workspaces in the workspace at `parent`.
    pub async fn workspaces(&self, parent: &ClusterPath) -> Result<Vec<Workspace>, RequestError> {
        let list: WorkspaceList = self.send(Method::GET, &format!("/clusters/{parent}/{WORKSPACES}"), None).await?;
        Ok(list.items)
    }

    /// Creates `workspace` (a Workspace object as JSON) in the workspace at `parent`.
    pub async fn create_workspace(&self, parent: &ClusterPath, workspace: &Value) -> Result<Workspace, RequestError> {
        let body = serde_json::to_vec(workspace).expect("JSON values serialize");
        self.send(Method::POST, &format!("/clusters/{parent}/{WORKSPACES}"), Some(body)).await
    }

    /// Whether the caller can use the workspace at `path`, from its API discovery.
    pub async fn access(&self, path: &ClusterPath) -> Result<Access, RequestError> {
        match self.send::<Value>(Method::GET, &format!("/clusters/{path}/apis"), None).await {
            Ok(_) => Ok(Access::Allowed),
            Err(error) if error.code() == Some(403) => Ok(Access::Forbidden),
            Err(error) if error.code() == Some(404) => Ok(Access::NotFound),
            Err(error) => Err(error),
        }
    }

    /// The canonical path of the caller's home workspace, which the front-proxy resolves
    /// (and creates on first use) for `/clusters/~`.
    pub async fn home_path(&self) -> anyhow::Result<ClusterPath> {
        let path = format!("/clusters/{HOME_SEGMENT}/{THIS_LOGICAL_CLUSTER}");
        let logical_cluster: Value = match self.send(Method::GET, &path, None).await {
            Ok(logical_cluster) => logical_cluster,
            // A shard has no idea who `~` is; only a front-proxy resolves it.
            Err(error) if error.code() == Some(404) => anyhow::bail!(
                "{} does not resolve the home workspace (~): point the kubeconfig at the front-proxy ({error})",
                self.base
            ),
            Err(error) => {
                return Err(error).with_context(|| format!("look up the home workspace at {}{path}", self.base))
            }
        };
        let annotation = logical_cluster.pointer("/metadata/annotations").and_then(|a| a.get(PATH_ANNOTATION));
        let text = annotation.and_then(Value::as_str).with_context(|| {
            format!("the home workspace's LogicalCluster at {}{path} has no {PATH_ANNOTATION} annotation", self.base)
        })?;
        ClusterPath::parse(text).with_context(|| format!("the home workspace's path {text:?} is not a workspace path"))
    }

    async fn send<T: DeserializeOwned>(
        &self,
        method: Method,
        path: &str,
        body: Option<Vec<u8>>,
    ) -> Result<T, RequestError> {
        let mut request =
            http::Request::builder().method(method.clone()).uri(path).header(http::header::ACCEPT, "application/json");
        if body.is_some() {
            request = request.header(http::header::CONTENT_TYPE, "application/json");
        }
        let request = request.body(body.unwrap_or_default()).expect("method, path and headers are valid");
        match self.client.request::<T>(request).await {
            Ok(value) => Ok(value),
            Err(kube::Error::Api(status)) => {
                Err(RequestError::Status { code: status.code, reason: status.reason, message: status.message })
            }
            Err(source) => Err(RequestError::Transport { method, url: format!("{}{path}", self.base), source }),
        }
    }
}
