//! The admin kubeconfig: one JSON file that hands stock clients the server address, the CA
//! and a client credential.

use std::path::Path;

use anyhow::Context;
use base64::Engine;

use super::files::{write_atomic, KEY_FILE_MODE};

/// Writes a kubeconfig with one cluster, user and context, all named `atoll`, with the
/// CA and client credentials embedded, so the file works from any working directory.
///
/// JSON is valid YAML, and kubectl, kube-rs and the Python client all read it. The file
/// is replaced atomically with mode 0600 (it holds a private key), so a client polling
/// for it never reads a half-written file.
pub fn write_kubeconfig(
    path: &Path,
    server_url: &str,
    ca_pem: &str,
    client_cert_pem: &str,
    client_key_pem: &str,
) -> anyhow::Result<()> {
    let kubeconfig = kubeconfig_document(server_url, ca_pem, client_cert_pem, client_key_pem);
    let mut text = serde_json::to_vec_pretty(&kubeconfig).context("serialize kubeconfig")?;
    text.push(b'\n');
    write_atomic(path, &text, KEY_FILE_MODE)
}

/// The kubeconfig [`write_kubeconfig`] writes, as a JSON value (also what in-process
/// `kube` clients, such as the peer clients, are configured from).
pub fn kubeconfig_document(
    server_url: &str,
    ca_pem: &str,
    client_cert_pem: &str,
    client_key_pem: &str,
) -> serde_json::Value {
    let b64 = |pem: &str| base64::engine::general_purpose::STANDARD.encode(pem);
    serde_json::json!({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{
            "name": "atoll",
            "cluster": {
                "server": server_url,
                "certificate-authority-data": b64(ca_pem),
            },
        }],
        "users": [{
            "name": "atoll",
            "user": {
                "client-certificate-data": b64(client_cert_pem),
                "client-key-data": b64(client_key_pem),
            },
        }],
        "contexts": [{
            "name": "atoll",
            "context": { "cluster": "atoll", "user": "atoll" },
        }],
        "current-context": "atoll",
        "preferences": {},
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pki::test_support::mode;
    use std::fs;

    #[test]
    fn kubeconfig_embeds_credentials_and_is_private() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("admin.kubeconfig");
        write_kubeconfig(&path, "https://127.0.0.1:6443/clusters/root", "CA", "CERT", "KEY").expect("write");
        // Rewriting replaces the file rather than failing on the existing one.
        write_kubeconfig(&path, "https://127.0.0.1:6443/clusters/root", "CA", "CERT", "KEY").expect("rewrite");
        assert_eq!(mode(&path), 0o600);
        let text = fs::read_to_string(&path).expect("read");
        let config: serde_json::Value = serde_json::from_str(&text).expect("json");
        assert_eq!(config["current-context"], "atoll");
        assert_eq!(config["clusters"][0]["cluster"]["server"], "https://127.0.0.1:6443/clusters/root");
        let b64 = base64::engine::general_purpose::STANDARD;
        assert_eq!(config["users"][0]["user"]["client-key-data"], b64.encode("KEY"));
        let leftovers: Vec<_> = fs::read_dir(dir.path())
            .expect("list")
            .filter_map(Result::ok)
            .filter(|entry| entry.file_name().to_string_lossy().contains(".tmp."))
            .collect();
        assert!(leftovers.is_empty());
    }
}
