//! The shard's own small PKI: a serving CA, a client CA, the serving certificate and
//! the admin client certificate, kept as PEM files under `DIR/pki/`.
//!
//! Stock clients (kubectl, kube-rs, the Python client) must accept what we mint, so the
//! certificates follow what they check: SANs rather than the CN name the server, CA
//! certificates carry critical basic constraints, a key usage and a subject key
//! identifier, and leaves carry an authority key identifier (OpenSSL's strict mode,
//! on by default for Python 3.13, rejects certificates without them).
//!
//! Two CAs instead of one keep the trust domains apart, as in Kubernetes: whoever is
//! later handed the client CA key to mint user identities cannot mint a serving
//! certificate that clients would trust, and the reverse.

mod der;
mod files;
mod issue;
mod kubeconfig;
mod x509;

pub use kubeconfig::write_kubeconfig;

use std::path::Path;

use anyhow::Context;

use files::PkiDir;
use issue::{issue_client_cert_with, issue_serving_cert, served_hosts};

const ADMIN_USER: &str = "admin";
const ADMIN_GROUP: &str = "system:masters";

/// Everything the TLS listener and the admin kubeconfig need, as PEM text.
///
/// Kept as PEM rather than parsed types so the same value feeds rustls, kubeconfig
/// files and tests without a second encoding step.
#[derive(Clone)]
pub struct ServingMaterial {
    /// The CA clients trust to verify the serving certificate (kubeconfig
    /// `certificate-authority-data`).
    pub ca_cert_pem: String,
    /// The serving certificate alone; clients already hold the CA, so no chain is sent.
    pub serving_cert_pem: String,
    /// PKCS#8 private key of the serving certificate.
    pub serving_key_pem: String,
    /// The CA whose signature makes a client certificate an identity.
    pub client_ca_cert_pem: String,
    /// Client certificate for user `admin` in group `system:masters`.
    pub admin_cert_pem: String,
    /// PKCS#8 private key of the admin client certificate.
    pub admin_key_pem: String,
}

/// Private keys are left out so that logging the material cannot leak them.
impl std::fmt::Debug for ServingMaterial {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServingMaterial")
            .field("ca_cert_pem", &self.ca_cert_pem)
            .field("serving_cert_pem", &self.serving_cert_pem)
            .field("serving_key_pem", &"<redacted>")
            .field("client_ca_cert_pem", &self.client_ca_cert_pem)
            .field("admin_cert_pem", &self.admin_cert_pem)
            .field("admin_key_pem", &"<redacted>")
            .finish()
    }
}

/// Loads the PKI under `dir/pki/`, creating whatever is missing.
///
/// CAs are created only when their certificate file is absent; an existing CA is never
/// replaced, because that would silently invalidate every kubeconfig handed out. Leaves
/// are reissued (with a fresh key) when missing, unreadable, not matching their key, not
/// signed by the current CA, close to expiry, or, for the serving certificate, when
/// their SANs do not cover `hosts` plus `localhost`, `127.0.0.1` and `::1`.
///
/// Not safe against two processes initialising the same directory at once; a data
/// directory belongs to one shard process.
pub fn load_or_create(dir: &Path, hosts: &[String]) -> anyhow::Result<ServingMaterial> {
    let pki = PkiDir::create(dir)?;
    let serving_ca = pki.load_or_create_ca("ca", "atoll-serving-ca")?;
    let client_ca = pki.load_or_create_ca("client-ca", "atoll-client-ca")?;

    let served_hosts = served_hosts(hosts)?;
    let serving = pki.load_or_issue_leaf("serving", &serving_ca, Some(&served_hosts), || {
        issue_serving_cert(&serving_ca, &served_hosts)
    })?;
    let admin_groups = [ADMIN_GROUP.to_owned()];
    let admin = pki.load_or_issue_leaf("admin", &client_ca, None, || {
        issue_client_cert_with(&client_ca, ADMIN_USER, &admin_groups)
    })?;

    Ok(ServingMaterial {
        ca_cert_pem: serving_ca.cert_pem,
        serving_cert_pem: serving.cert_pem,
        serving_key_pem: serving.key.serialize_pem(),
        client_ca_cert_pem: client_ca.cert_pem,
        admin_cert_pem: admin.cert_pem,
        admin_key_pem: admin.key.serialize_pem(),
    })
}

/// Mints a client certificate (CN = `user`, one O per group) signed by the client CA
/// under `dir/pki/`, returning `(certificate PEM, private key PEM)`.
///
/// Nothing is written to disk: the caller owns the credential. Fails if
/// [`load_or_create`] has not created the client CA yet.
pub fn issue_client_cert(dir: &Path, user: &str, groups: &[String]) -> anyhow::Result<(String, String)> {
    let pki = PkiDir::existing(dir);
    let client_ca =
        pki.load_ca("client-ca")?.with_context(|| format!("find the client CA under {}", pki.root.display()))?;
    let leaf = issue_client_cert_with(&client_ca, user, groups)?;
    Ok((leaf.cert_pem, leaf.key.serialize_pem()))
}

/// Helpers the PKI tests in the submodules share.
#[cfg(test)]
mod test_support {
    use std::fs;
    use std::os::unix::fs::PermissionsExt;
    use std::path::Path;

    pub(super) fn hosts(names: &[&str]) -> Vec<String> {
        names.iter().map(|name| (*name).to_owned()).collect()
    }

    pub(super) fn read(dir: &Path, name: &str) -> String {
        fs::read_to_string(dir.join("pki").join(name)).expect("read pki file")
    }

    pub(super) fn mode(path: &Path) -> u32 {
        fs::metadata(path).expect("stat").permissions().mode() & 0o777
    }
}
