//! Reading the shard's `admin.kubeconfig`, and writing kubeconfigs for other users.
//!
//! Only the fields a shard writes are modelled: one cluster with embedded CA data and
//! one user with an embedded client certificate. The shard may write JSON or YAML;
//! YAML is a superset of JSON, so one YAML parser reads both.

use std::path::Path;

use anyhow::Context;
use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine;
use serde::Deserialize;

use crate::tls_http::ClientIdentity;

/// What a test needs from an admin kubeconfig.
#[derive(Clone, Debug)]
pub struct AdminKubeconfig {
    /// The server URL as written, e.g. `https://127.0.0.1:40123/clusters/root`.
    pub server: String,
    /// The server URL without its path, e.g. `https://127.0.0.1:40123`.
    pub base_url: String,
    /// The CA that signed the serving certificate, PEM.
    pub ca_pem: Vec<u8>,
    /// The admin's client certificate and key.
    pub identity: ClientIdentity,
}

impl AdminKubeconfig {
    /// The port the server listens on, from the server URL.
    pub fn port(&self) -> anyhow::Result<u16> {
        let authority = self.base_url.trim_start_matches("https://");
        let (_, port) = authority.rsplit_once(':').with_context(|| format!("find the port in {:?}", self.base_url))?;
        port.parse().with_context(|| format!("parse the port in {:?}", self.base_url))
    }
}

#[derive(Deserialize)]
struct File {
    #[serde(rename = "current-context", default)]
    current_context: Option<String>,
    #[serde(default)]
    contexts: Vec<Named<ContextRef>>,
    clusters: Vec<Named<Cluster>>,
    users: Vec<Named<User>>,
}

#[derive(Deserialize)]
struct Named<T> {
    name: String,
    #[serde(alias = "cluster", alias = "user", alias = "context")]
    value: T,
}

#[derive(Deserialize)]
struct ContextRef {
    cluster: String,
    user: String,
}

#[derive(Deserialize)]
struct Cluster {
    server: String,
    #[serde(rename = "certificate-authority-data")]
    certificate_authority_data: String,
}

#[derive(Deserialize)]
struct User {
    #[serde(rename = "client-certificate-data")]
    client_certificate_data: String,
    #[serde(rename = "client-key-data")]
    client_key_data: String,
}

/// Reads and parses the kubeconfig at `path`.
pub fn read(path: &Path) -> anyhow::Result<AdminKubeconfig> {
    let text = std::fs::read_to_string(path).with_context(|| format!("read kubeconfig {}", path.display()))?;
    parse(&text).with_context(|| format!("parse kubeconfig {}", path.display()))
}

/// Parses kubeconfig text, following `current-context` when there is one and taking
/// the first cluster and user otherwise.
pub fn parse(text: &str) -> anyhow::Result<AdminKubeconfig> {
    let file: File = serde_yaml_ng::from_str(text).context("decode kubeconfig YAML/JSON")?;
    let context = file.current_context.as_deref().and_then(|name| file.contexts.iter().find(|c| c.name == name));
    let cluster =
        pick(&file.clusters, context.map(|c| c.value.cluster.as_str())).context("find the kubeconfig's cluster")?;
    let user = pick(&file.users, context.map(|c| c.value.user.as_str())).context("find the kubeconfig's user")?;
    let server = cluster.server.clone();
    let base_url = base_url_of(&server)?;
    Ok(AdminKubeconfig {
        base_url,
        server,
        ca_pem: decode(&cluster.certificate_authority_data, "certificate-authority-data")?,
        identity: ClientIdentity {
            cert_pem: decode_text(&user.client_certificate_data, "client-certificate-data")?,
            key_pem: decode_text(&user.client_key_data, "client-key-data")?,
        },
    })
}

/// Writes a kubeconfig for `identity` against `server`, trusting `ca_pem`, so stock
/// tools (`kubectl`, `kube::Client`) can act as users other than the admin.
pub fn write(path: &Path, server: &str, ca_pem: &[u8], identity: &ClientIdentity) -> anyhow::Result<()> {
    let document = serde_json::json!({
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": "default",
        "clusters": [{"name": "default", "cluster": {
            "server": server,
            "certificate-authority-data": BASE64.encode(ca_pem),
        }}],
        "users": [{"name": "default", "user": {
            "client-certificate-data": BASE64.encode(&identity.cert_pem),
            "client-key-data": BASE64.encode(&identity.key_pem),
        }}],
        "contexts": [{"name": "default", "context": {"cluster": "default", "user": "default"}}],
    });
    let text = serde_json::to_string_pretty(&document).context("serialize kubeconfig")?;
    std::fs::write(path, text).with_context(|| format!("write kubeconfig {}", path.display()))
}

fn pick<'a, T>(items: &'a [Named<T>], name: Option<&str>) -> anyhow::Result<&'a T> {
    let found = match name {
        Some(name) => items.iter().find(|item| item.name == name),
        None => items.first(),
    };
    found.map(|item| &item.value).with_context(|| format!("no entry named {name:?}"))
}

/// `https://host:port/some/path` → `https://host:port`.
fn base_url_of(server: &str) -> anyhow::Result<String> {
    let (scheme, rest) = server.split_once("://").with_context(|| format!("split scheme off server URL {server:?}"))?;
    let authority = rest.split('/').next().unwrap_or_default();
    anyhow::ensure!(!authority.is_empty(), "server URL {server:?} has no host");
    Ok(format!("{scheme}://{authority}"))
}

fn decode(data: &str, field: &str) -> anyhow::Result<Vec<u8>> {
    BASE64.decode(data.trim()).with_context(|| format!("decode base64 of {field}"))
}

fn decode_text(data: &str, field: &str) -> anyhow::Result<String> {
    String::from_utf8(decode(data, field)?).with_context(|| format!("decode UTF-8 of {field}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(format_json: bool) -> String {
        let ca = BASE64.encode("CA");
        let cert = BASE64.encode("CERT");
        let key = BASE64.encode("KEY");
        if format_json {
            serde_json::json!({
                "apiVersion": "v1", "kind": "Config", "current-context": "admin",
                "clusters": [
                    {"name": "other", "cluster": {"server": "https://x:1", "certificate-authority-data": ca}},
                    {"name": "root", "cluster": {"server": "https://127.0.0.1:6443/clusters/root", "certificate-authority-data": ca}}
                ],
                "users": [{"name": "admin", "user": {"client-certificate-data": cert, "client-key-data": key}}],
                "contexts": [{"name": "admin", "context": {"cluster": "root", "user": "admin"}}]
            })
            .to_string()
        } else {
            format!(
                "apiVersion: v1\nkind: Config\nclusters:\n- name: root\n  cluster:\n    server: https://127.0.0.1:6443/clusters/root\n    certificate-authority-data: {ca}\nusers:\n- name: admin\n  user:\n    client-certificate-data: {cert}\n    client-key-data: {key}\n"
            )
        }
    }

    #[test]
    fn parses_json_and_yaml() {
        for json in [true, false] {
            let config = parse(&sample(json)).unwrap();
            assert_eq!(config.server, "https://127.0.0.1:6443/clusters/root");
            assert_eq!(config.base_url, "https://127.0.0.1:6443");
            assert_eq!(config.port().unwrap(), 6443);
            assert_eq!(config.ca_pem, b"CA");
            assert_eq!(config.identity.cert_pem, "CERT");
            assert_eq!(config.identity.key_pem, "KEY");
        }
    }

    #[test]
    fn written_kubeconfig_reads_back() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("user.kubeconfig");
        let identity = ClientIdentity { cert_pem: "C".into(), key_pem: "K".into() };
        write(&path, "https://h:2/clusters/a", b"CA", &identity).unwrap();
        let config = read(&path).unwrap();
        assert_eq!(config.server, "https://h:2/clusters/a");
        assert_eq!(config.identity.key_pem, "K");
    }
}
