//! The installation's PKI: three CAs that every process of one installation shares, and
//! the leaf certificates each process issues for itself from them.
//!
//! The CAs live in one shared directory (`--pki-dir`, by default `DATA_DIR/pki`):
//! `ca` signs serving certificates, `client-ca` signs client identities (users, and the
//! shards themselves for shard-to-shard calls), and `front-proxy-ca` signs the
//! front-proxy's client certificate, the only one whose identity headers a shard trusts.
//! The first process to start creates them under the directory's lock (module `generate`);
//! the others load them. Each process then keeps its own leaves (serving, admin and peer
//! client certificates) in its own directory, so processes never write each other's files.
//! In production an operator names every file instead and nothing is generated
//! (module `explicit`).
//!
//! Stock clients (kubectl, kube-rs, the Python client) must accept what we mint, so the
//! certificates follow what they check: SANs rather than the CN name the server, CA
//! certificates carry critical basic constraints, a key usage and a subject key
//! identifier, and leaves carry an authority key identifier (OpenSSL's strict mode,
//! on by default for Python 3.13, rejects certificates without them).
//!
//! Separate CAs keep the trust domains apart, as in Kubernetes: whoever is later handed
//! the client CA key to mint user identities cannot mint a serving certificate that
//! clients would trust, nor a front-proxy certificate that shards would take identity
//! headers from, and the reverse.

mod der;
mod explicit;
mod files;
mod generate;
mod issue;
mod kubeconfig;
mod x509;

pub use kubeconfig::{kubeconfig_document, write_kubeconfig};

use std::path::{Path, PathBuf};

use anyhow::Context;

use files::CertDir;
use issue::issue_client_cert_with;

const ADMIN_USER: &str = "admin";
const PEER_CLIENT_USER_PREFIX: &str = "system:atoll:shard:";
const FRONT_PROXY_USER_PREFIX: &str = "system:atoll:front-proxy:";
const CACHE_USER_PREFIX: &str = "system:atoll:cache:";
/// File stems of the shared CAs in the PKI directory.
const SERVING_CA_NAME: &str = "ca";
const CLIENT_CA_NAME: &str = "client-ca";
const FRONT_PROXY_CA_NAME: &str = "front-proxy-ca";

/// Where the PKI comes from.
#[derive(Clone, Debug)]
pub struct PkiOptions {
    /// Shared directory of the installation's CAs: `ca.{crt,key}`, `client-ca.{crt,key}`,
    /// `front-proxy-ca.{crt,key}`, and the `.lock` file that serialises their creation.
    pub pki_dir: PathBuf,
    /// This process's own directory for the leaves it issues (e.g. `DATA_DIR/certs`):
    /// `serving.{crt,key}`, `admin.{crt,key}`, `peer-client.{crt,key}`. Must not be
    /// shared with another process.
    pub leaf_dir: PathBuf,
    /// The process's name; the peer client certificate gets CN
    /// `system:atoll:shard:<name>` and O `system:masters` for a shard (see [`Role`] for
    /// the other kinds of process).
    pub process_name: String,
    /// Host names and IPs the serving certificate must cover, besides `localhost`,
    /// `127.0.0.1` and `::1`, which it always covers.
    pub hosts: Vec<String>,
    /// Explicit files; when `tls_cert_file` is set nothing is generated and the files are
    /// used as given.
    pub files: CertFiles,
    /// Which kind of process this is; decides who signs the peer client certificate.
    pub role: Role,
}

/// The kind of process the PKI is loaded for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Role {
    /// A shard: its peer client certificate comes from the client CA, as user
    /// `system:atoll:shard:<name>` in group `system:masters`.
    #[default]
    Shard,
    /// A front-proxy: its peer client certificate comes from the front-proxy CA, as user
    /// `system:atoll:front-proxy:<name>` without groups. Shards take identity headers
    /// from that certificate and nothing else from it.
    FrontProxy,
    /// A cache server: its peer client certificate comes from the client CA, as user
    /// `system:atoll:cache:<name>` without groups. A parent cache server lets it relay
    /// replicas of any origin under its own sender name, and nothing more: unlike a
    /// shard's, it is no `system:masters` identity, so it cannot call shards' APIs.
    Cache,
}

/// The serving and trust flags every server process takes (`#[command(flatten)]` them):
/// with `--tls-cert-file`, nothing is generated.
#[derive(Clone, Debug, Default, clap::Args)]
pub struct ServingFlags {
    /// Serving certificate (PEM); with it, no certificate is generated and the other file flags are required.
    #[arg(long)]
    pub tls_cert_file: Option<PathBuf>,
    /// Private key of --tls-cert-file (PEM).
    #[arg(long)]
    pub tls_private_key_file: Option<PathBuf>,
    /// CA that verifies users' client certificates (PEM).
    #[arg(long)]
    pub client_ca_file: Option<PathBuf>,
    /// CA this process trusts when it calls shards (PEM).
    #[arg(long)]
    pub server_ca_file: Option<PathBuf>,
}

impl ServingFlags {
    /// The explicit files, with this process's client certificate towards shards and the
    /// front-proxy CA it trusts (if any).
    pub fn files(
        &self,
        peer_cert: Option<PathBuf>,
        peer_key: Option<PathBuf>,
        front_proxy_ca: Option<PathBuf>,
    ) -> CertFiles {
        CertFiles {
            tls_cert_file: self.tls_cert_file.clone(),
            tls_private_key_file: self.tls_private_key_file.clone(),
            client_ca_file: self.client_ca_file.clone(),
            server_ca_file: self.server_ca_file.clone(),
            peer_client_cert_file: peer_cert,
            peer_client_key_file: peer_key,
            front_proxy_ca_file: front_proxy_ca,
        }
    }
}

/// Certificate files an operator issued elsewhere. Either `tls_cert_file` is set, and
/// then every field but `front_proxy_ca_file` is required, or none is set and
/// everything is generated from [`PkiOptions::pki_dir`].
#[derive(Clone, Debug, Default)]
pub struct CertFiles {
    /// Serving certificate, optionally followed by intermediates (`--tls-cert-file`).
    pub tls_cert_file: Option<PathBuf>,
    /// Private key of the serving certificate (`--tls-private-key-file`).
    pub tls_private_key_file: Option<PathBuf>,
    /// CA bundle that verifies client certificates (`--client-ca-file`).
    pub client_ca_file: Option<PathBuf>,
    /// CA bundle this process trusts when calling other shards, also put in
    /// `admin.kubeconfig` (`--server-ca-file`).
    pub server_ca_file: Option<PathBuf>,
    /// Client certificate this process presents on shard-to-shard calls
    /// (`--peer-client-cert-file`).
    pub peer_client_cert_file: Option<PathBuf>,
    /// Private key of the peer client certificate (`--peer-client-key-file`).
    pub peer_client_key_file: Option<PathBuf>,
    /// CA of the front-proxy's client certificate (`--front-proxy-ca-file`); without it
    /// no connection is trusted to carry identity headers.
    pub front_proxy_ca_file: Option<PathBuf>,
}

/// Everything the TLS listener, shard-to-shard clients and the admin kubeconfig need, as
/// PEM text.
///
/// Kept as PEM rather than parsed types so the same value feeds rustls, kubeconfig
/// files and tests without a second encoding step.
#[derive(Clone)]
pub struct ServingMaterial {
    /// The CA that verifies serving certificates: what clients trust (kubeconfig
    /// `certificate-authority-data`) and what this process trusts when calling other
    /// shards.
    pub ca_cert_pem: String,
    /// The serving certificate; generated ones come alone since clients already hold the
    /// CA, explicit ones may be followed by intermediates.
    pub serving_cert_pem: String,
    /// Private key of the serving certificate (PKCS#8 when generated).
    pub serving_key_pem: String,
    /// The CA whose signature makes a client certificate an identity.
    pub client_ca_cert_pem: String,
    /// Client certificate for user `admin` in group `system:masters`. Empty in explicit
    /// mode, where the client CA key is not at hand to sign one; see
    /// [`ServingMaterial::admin_credential`].
    pub admin_cert_pem: String,
    /// Private key of the admin client certificate; empty when `admin_cert_pem` is.
    pub admin_key_pem: String,
    /// Client certificate this process presents when calling shards; generated ones name
    /// user `system:atoll:shard:<name>` in group `system:masters` for a shard,
    /// `system:atoll:front-proxy:<name>` (signed by the front-proxy CA) for a front-proxy,
    /// and `system:atoll:cache:<name>` without groups for a cache server.
    pub peer_client_cert_pem: String,
    /// Private key of the peer client certificate.
    pub peer_client_key_pem: String,
    /// The CA of the front-proxy's client certificate; `None` when explicit mode was not
    /// given one, and then no connection may carry identity headers.
    pub front_proxy_ca_cert_pem: Option<String>,
}

impl ServingMaterial {
    /// The admin client certificate and key, or `None` in explicit mode, where none is
    /// issued (so there is no admin kubeconfig to write).
    pub fn admin_credential(&self) -> Option<(&str, &str)> {
        let present = !self.admin_cert_pem.is_empty() && !self.admin_key_pem.is_empty();
        present.then_some((self.admin_cert_pem.as_str(), self.admin_key_pem.as_str()))
    }
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
            .field("peer_client_cert_pem", &self.peer_client_cert_pem)
            .field("peer_client_key_pem", &"<redacted>")
            .field("front_proxy_ca_cert_pem", &self.front_proxy_ca_cert_pem)
            .finish()
    }
}

/// Loads this process's PKI as `options` describe it.
///
/// With [`CertFiles::tls_cert_file`] set, the named files are read and checked (each key
/// must match its certificate) and nothing is written; the admin credential is then
/// empty. Otherwise the CAs in `pki_dir` are loaded, created first if missing, and the
/// leaves in `leaf_dir` are reused or reissued:
///
/// * A CA is created only when its certificate file is absent, under an exclusive lock
///   on `pki_dir/.lock`, so processes starting together end up with the same CAs. An
///   existing CA is never replaced, because that would silently invalidate every
///   kubeconfig handed out.
/// * A leaf is reissued (with a fresh key) when missing, unreadable, not matching its
///   key, not signed by the current CA, close to expiry, or not naming what it must:
///   the serving certificate's SANs must cover `hosts` plus `localhost`, `127.0.0.1` and
///   `::1`; the client certificates must carry exactly their user and groups.
pub fn load(options: &PkiOptions) -> anyhow::Result<ServingMaterial> {
    if options.files.tls_cert_file.is_some() {
        return explicit::load(&options.files, &options.hosts);
    }
    explicit::ensure_unset(&options.files)?;
    generate::load(options)
}

/// Legacy single-process layout: CAs and leaves together under `dir/pki/`, process name
/// `root`. Equivalent to [`load`] with `pki_dir` and `leaf_dir` both `dir/pki`.
pub fn load_or_create(dir: &Path, hosts: &[String]) -> anyhow::Result<ServingMaterial> {
    let pki_dir = dir.join("pki");
    load(&PkiOptions {
        leaf_dir: pki_dir.clone(),
        pki_dir,
        process_name: "root".to_owned(),
        hosts: hosts.to_vec(),
        files: CertFiles::default(),
        role: Role::Shard,
    })
}

/// The user name a shard's peer client certificate carries.
pub fn peer_client_user(process_name: &str) -> String {
    format!("{PEER_CLIENT_USER_PREFIX}{process_name}")
}

/// The user name a front-proxy's client certificate carries.
pub fn front_proxy_user(process_name: &str) -> String {
    format!("{FRONT_PROXY_USER_PREFIX}{process_name}")
}

/// The user name a cache server's peer client certificate carries.
pub fn cache_user(process_name: &str) -> String {
    format!("{CACHE_USER_PREFIX}{process_name}")
}

/// Mints a client certificate (CN = `user`, one O per group) signed by the client CA in
/// `pki_dir`, returning `(certificate PEM, private key PEM)`.
///
/// Nothing is written to disk: the caller owns the credential. Fails if [`load`] has not
/// created the client CA yet. Takes no lock: CAs are written key first and never
/// replaced, so a client CA certificate that is visible has its key beside it.
pub fn issue_client_cert(pki_dir: &Path, user: &str, groups: &[String]) -> anyhow::Result<(String, String)> {
    let pki = CertDir::existing(pki_dir);
    let client_ca =
        pki.load_ca(CLIENT_CA_NAME)?.with_context(|| format!("find the client CA under {}", pki.root.display()))?;
    let leaf = issue_client_cert_with(&client_ca, user, groups)?;
    Ok((leaf.cert_pem, leaf.key.serialize_pem()))
}

/// Helpers the PKI tests in the submodules share.
#[cfg(test)]
mod test_support {
    use std::fs;
    use std::os::unix::fs::PermissionsExt;
    use std::path::Path;

    use super::x509::{parse_der, pem_to_der};
    use super::{CertFiles, PkiOptions};

    pub(super) fn hosts(names: &[&str]) -> Vec<String> {
        names.iter().map(|name| (*name).to_owned()).collect()
    }

    /// Generated-mode options for process `name`.
    pub(super) fn options(pki_dir: &Path, leaf_dir: &Path, name: &str, host_names: &[&str]) -> PkiOptions {
        PkiOptions {
            pki_dir: pki_dir.to_path_buf(),
            leaf_dir: leaf_dir.to_path_buf(),
            process_name: name.to_owned(),
            hosts: hosts(host_names),
            files: CertFiles::default(),
            role: super::Role::Shard,
        }
    }

    pub(super) fn read(dir: &Path, name: &str) -> String {
        fs::read_to_string(dir.join(name)).expect("read pki file")
    }

    pub(super) fn mode(path: &Path) -> u32 {
        fs::metadata(path).expect("stat").permissions().mode() & 0o777
    }

    /// Whether the first certificate in `cert_pem` carries a valid signature by the
    /// first certificate in `ca_pem`, with the issuer name matching byte for byte.
    pub(super) fn signed_by(cert_pem: &str, ca_pem: &str) -> bool {
        let (cert_der, ca_der) = (pem_to_der(cert_pem).expect("pem"), pem_to_der(ca_pem).expect("pem"));
        let (cert, ca) = (parse_der(&cert_der).expect("parse"), parse_der(&ca_der).expect("parse"));
        cert.issuer().as_raw() == ca.subject().as_raw() && cert.verify_signature(Some(ca.public_key())).is_ok()
    }
}
