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

use std::collections::BTreeSet;
use std::fs;
use std::io::{ErrorKind, Write};
use std::net::IpAddr;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{bail, ensure, Context};
use base64::Engine;
use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};
use x509_parser::certificate::X509Certificate;
use x509_parser::extensions::GeneralName;

const DAY_SECS: u64 = 24 * 60 * 60;
const CA_VALIDITY: Duration = Duration::from_secs(10 * 365 * DAY_SECS);
const LEAF_VALIDITY: Duration = Duration::from_secs(365 * DAY_SECS);
/// Leaves this close to expiry are reissued on start, so a shard restarted now and then
/// never serves an expired certificate.
const LEAF_RENEW_BEFORE: Duration = Duration::from_secs(30 * DAY_SECS);
/// Certificates start an hour in the past: a client whose clock runs slightly behind
/// would otherwise reject a certificate minted a moment ago as "not yet valid".
const CLOCK_SKEW_ALLOWANCE: Duration = Duration::from_secs(60 * 60);

/// Names every serving certificate covers, so local tools work whatever `hosts` says.
const ALWAYS_SERVED_HOSTS: [&str; 3] = ["localhost", "127.0.0.1", "::1"];
const SERVING_COMMON_NAME: &str = "atoll-shard";
const ADMIN_USER: &str = "admin";
const ADMIN_GROUP: &str = "system:masters";

const CERT_FILE_MODE: u32 = 0o644;
const KEY_FILE_MODE: u32 = 0o600;
const PKI_DIR_MODE: u32 = 0o700;

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
    let b64 = |pem: &str| base64::engine::general_purpose::STANDARD.encode(pem);
    let kubeconfig = serde_json::json!({
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
    });
    let mut text = serde_json::to_vec_pretty(&kubeconfig).context("serialize kubeconfig")?;
    text.push(b'\n');
    write_atomic(path, &text, KEY_FILE_MODE)
}

/// A certificate with its private key; for a CA, the key that signs leaves.
struct CertifiedKey {
    cert_pem: String,
    key: KeyPair,
}

impl CertifiedKey {
    fn cert_der(&self) -> anyhow::Result<Vec<u8>> {
        pem_to_der(&self.cert_pem)
    }

    fn issuer(&self) -> anyhow::Result<Issuer<'static, &KeyPair>> {
        Issuer::from_ca_cert_pem(&self.cert_pem, &self.key).context("parse CA certificate")
    }
}

/// The `pki/` directory and the naming of the files in it (`NAME.crt`, `NAME.key`).
struct PkiDir {
    root: PathBuf,
}

impl PkiDir {
    fn create(dir: &Path) -> anyhow::Result<Self> {
        let root = dir.join("pki");
        fs::DirBuilder::new()
            .recursive(true)
            .mode(PKI_DIR_MODE)
            .create(&root)
            .with_context(|| format!("create PKI directory {}", root.display()))?;
        Ok(Self { root })
    }

    fn existing(dir: &Path) -> Self {
        Self { root: dir.join("pki") }
    }

    fn cert_path(&self, name: &str) -> PathBuf {
        self.root.join(format!("{name}.crt"))
    }

    fn key_path(&self, name: &str) -> PathBuf {
        self.root.join(format!("{name}.key"))
    }

    /// Reads `NAME.crt` and `NAME.key`; `None` when the certificate is absent.
    fn read_pair(&self, name: &str) -> anyhow::Result<Option<(String, Option<String>)>> {
        let Some(cert_pem) = read_optional(&self.cert_path(name))? else {
            return Ok(None);
        };
        Ok(Some((cert_pem, read_optional(&self.key_path(name))?)))
    }

    /// Writes the key before the certificate: a crash in between leaves a certificate
    /// that does not match its key (a leaf is then reissued) or, on first creation, a
    /// key without a certificate (which counts as missing), never a certificate whose
    /// key is lost.
    fn write_pair(&self, name: &str, pair: &CertifiedKey) -> anyhow::Result<()> {
        write_atomic(&self.key_path(name), pair.key.serialize_pem().as_bytes(), KEY_FILE_MODE)?;
        write_atomic(&self.cert_path(name), pair.cert_pem.as_bytes(), CERT_FILE_MODE)
    }

    /// Loads a CA, refusing to guess when its files are inconsistent: replacing a CA
    /// behind the operator's back would lock out every existing client.
    fn load_ca(&self, name: &str) -> anyhow::Result<Option<CertifiedKey>> {
        let Some((cert_pem, key_pem)) = self.read_pair(name)? else {
            return Ok(None);
        };
        let key_path = self.key_path(name);
        let key_pem = key_pem.with_context(|| {
            format!(
                "find {} (its certificate exists; restore the key or delete {} to start over)",
                key_path.display(),
                self.root.display()
            )
        })?;
        let key = KeyPair::from_pem(&key_pem).with_context(|| format!("parse private key {}", key_path.display()))?;
        let der =
            pem_to_der(&cert_pem).with_context(|| format!("read certificate {}", self.cert_path(name).display()))?;
        let problem = ca_problem(&der, &key, unix_now())
            .with_context(|| format!("parse certificate {}", self.cert_path(name).display()))?;
        if let Some(problem) = problem {
            bail!(
                "CA {} is unusable: {problem}; delete {} to start over",
                self.cert_path(name).display(),
                self.root.display()
            );
        }
        Ok(Some(CertifiedKey { cert_pem, key }))
    }

    fn load_or_create_ca(&self, name: &str, common_name: &str) -> anyhow::Result<CertifiedKey> {
        if let Some(ca) = self.load_ca(name)? {
            return Ok(ca);
        }
        let ca = create_ca(common_name)?;
        self.write_pair(name, &ca)?;
        tracing::info!(path = %self.cert_path(name).display(), "created CA");
        Ok(ca)
    }

    /// Reuses leaf `name` when it is still good for `required_sans` (if given), otherwise
    /// issues a new one with `issue` and stores it.
    fn load_or_issue_leaf(
        &self,
        name: &str,
        ca: &CertifiedKey,
        required_sans: Option<&[String]>,
        issue: impl FnOnce() -> anyhow::Result<CertifiedKey>,
    ) -> anyhow::Result<CertifiedKey> {
        let reason = match self.read_pair(name)? {
            None => "missing".to_owned(),
            Some((_, None)) => "private key missing".to_owned(),
            Some((cert_pem, Some(key_pem))) => {
                let ca_der = ca.cert_der()?;
                match leaf_problem(&cert_pem, &key_pem, &ca_der, required_sans, unix_now()) {
                    None => {
                        let key = KeyPair::from_pem(&key_pem).context("parse leaf key")?;
                        return Ok(CertifiedKey { cert_pem, key });
                    }
                    Some(reason) => reason,
                }
            }
        };
        let leaf = issue()?;
        self.write_pair(name, &leaf)?;
        tracing::info!(path = %self.cert_path(name).display(), %reason, "issued certificate");
        Ok(leaf)
    }
}

/// Why a stored CA cannot be used, or `None` when it can.
fn ca_problem(der: &[u8], key: &KeyPair, now_secs: i64) -> anyhow::Result<Option<String>> {
    let cert = parse_der(der)?;
    if !key_matches(&cert, key) {
        return Ok(Some("its private key does not match the certificate".to_owned()));
    }
    if !cert.is_ca() {
        return Ok(Some("the certificate is not a CA".to_owned()));
    }
    if cert.validity().not_after.timestamp() <= now_secs {
        return Ok(Some("the certificate has expired".to_owned()));
    }
    Ok(None)
}

/// Why a stored leaf must be reissued, or `None` when it can be reused. Any parse
/// failure is a reason to reissue: the shard owns these files and can recreate them.
fn leaf_problem(
    cert_pem: &str,
    key_pem: &str,
    ca_der: &[u8],
    required_sans: Option<&[String]>,
    now_secs: i64,
) -> Option<String> {
    let Ok(key) = KeyPair::from_pem(key_pem) else {
        return Some("private key unreadable".to_owned());
    };
    let Ok(der) = pem_to_der(cert_pem) else {
        return Some("certificate unreadable".to_owned());
    };
    let (Ok(cert), Ok(ca)) = (parse_der(&der), parse_der(ca_der)) else {
        return Some("certificate unparsable".to_owned());
    };
    if !key_matches(&cert, &key) {
        return Some("private key does not match certificate".to_owned());
    }
    if cert.verify_signature(Some(ca.public_key())).is_err() {
        return Some("not signed by the current CA".to_owned());
    }
    let renew_at = cert.validity().not_after.timestamp() - secs_i64(LEAF_RENEW_BEFORE);
    if renew_at <= now_secs {
        return Some("expires within 30 days".to_owned());
    }
    let missing = required_sans.map(|required| missing_sans(&cert, required)).unwrap_or_default();
    if !missing.is_empty() {
        return Some(format!("SANs do not cover {}", missing.join(", ")));
    }
    None
}

/// The hosts in `required` that the certificate's SANs do not name.
fn missing_sans(cert: &X509Certificate<'_>, required: &[String]) -> Vec<String> {
    let present: BTreeSet<String> = match cert.subject_alternative_name() {
        Ok(Some(san)) => san
            .value
            .general_names
            .iter()
            .filter_map(|name| match name {
                GeneralName::DNSName(dns) => Some(dns.to_ascii_lowercase()),
                GeneralName::IPAddress(octets) => ip_from_octets(octets).map(|ip| ip.to_string()),
                _ => None,
            })
            .collect(),
        _ => BTreeSet::new(),
    };
    required.iter().filter(|host| !present.contains(host.as_str())).cloned().collect()
}

fn ip_from_octets(octets: &[u8]) -> Option<IpAddr> {
    match octets.len() {
        4 => <[u8; 4]>::try_from(octets).ok().map(IpAddr::from),
        16 => <[u8; 16]>::try_from(octets).ok().map(IpAddr::from),
        _ => None,
    }
}

/// Normalises `hosts` into the SAN strings the serving certificate must carry: IP
/// addresses in canonical form (brackets stripped, so `[::1]` works), names lowercased,
/// duplicates dropped, and the always-served local names added.
fn served_hosts(hosts: &[String]) -> anyhow::Result<Vec<String>> {
    let mut served = BTreeSet::new();
    let all = ALWAYS_SERVED_HOSTS.iter().copied().chain(hosts.iter().map(String::as_str));
    for host in all {
        let host = host.trim();
        let unbracketed = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')).unwrap_or(host);
        if let Ok(ip) = unbracketed.parse::<IpAddr>() {
            served.insert(ip.to_string());
            continue;
        }
        ensure!(is_dns_name(host), "host {host:?} is neither an IP address nor a DNS name");
        served.insert(host.to_ascii_lowercase());
    }
    Ok(served.into_iter().collect())
}

/// Deliberately loose (wildcards and underscores pass): the goal is to reject typos such
/// as `host:port` early, not to re-implement RFC 1123.
fn is_dns_name(host: &str) -> bool {
    !host.is_empty()
        && host.len() <= 253
        && host.split('.').all(|label| !label.is_empty() && label.len() <= 63)
        && host.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'*'))
}

fn create_ca(common_name_prefix: &str) -> anyhow::Result<CertifiedKey> {
    let key = KeyPair::generate().context("generate CA key")?;
    let mut params = CertificateParams::default();
    // A timestamp in the name keeps CAs of different installations apart: OpenSSL finds
    // issuers by subject name, so two CAs with one name confuse clients that trust both.
    params.distinguished_name = common_name_only(&format!("{common_name_prefix}@{}", unix_now()));
    // Path length 0: this CA signs leaves only, never further CAs.
    params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign, KeyUsagePurpose::DigitalSignature];
    set_validity(&mut params, CA_VALIDITY);
    let cert = params.self_signed(&key).context("self-sign CA certificate")?;
    Ok(CertifiedKey { cert_pem: cert.pem(), key })
}

fn issue_serving_cert(ca: &CertifiedKey, sans: &[String]) -> anyhow::Result<CertifiedKey> {
    let key = KeyPair::generate().context("generate serving key")?;
    let mut params = CertificateParams::new(sans.to_vec()).context("build serving certificate SANs")?;
    params.distinguished_name = common_name_only(SERVING_COMMON_NAME);
    set_leaf_usages(&mut params, ExtendedKeyUsagePurpose::ServerAuth);
    let cert = params.signed_by(&key, &ca.issuer()?).context("sign serving certificate")?;
    Ok(CertifiedKey { cert_pem: cert.pem(), key })
}

/// Kubernetes reads a client certificate's groups from its O attributes, one group per
/// attribute. rcgen keeps at most one attribute per type, so the certificate is signed
/// with a CN-only subject and then re-signed with the full subject spliced in.
fn issue_client_cert_with(ca: &CertifiedKey, user: &str, groups: &[String]) -> anyhow::Result<CertifiedKey> {
    ensure!(!user.is_empty(), "client certificate user name is empty");
    ensure!(groups.iter().all(|group| !group.is_empty()), "client certificate group names must not be empty");
    let key = KeyPair::generate().context("generate client key")?;
    let mut params = CertificateParams::default();
    params.distinguished_name = common_name_only(user);
    set_leaf_usages(&mut params, ExtendedKeyUsagePurpose::ClientAuth);
    let draft = params.signed_by(&key, &ca.issuer()?).context("sign client certificate")?;
    let subject = der::encode_subject(user, groups);
    let der =
        der::replace_subject(draft.der(), &subject, &ca.key).context("re-sign client certificate with its groups")?;

    // The DER was assembled by hand, so check it parses and verifies before anyone
    // trusts it.
    let ca_der = ca.cert_der()?;
    let (cert, ca_cert) = (parse_der(&der)?, parse_der(&ca_der)?);
    cert.verify_signature(Some(ca_cert.public_key()))
        .map_err(|err| anyhow::anyhow!("verify re-signed client certificate: {err}"))?;
    ensure!(
        cert.issuer().as_raw() == ca_cert.subject().as_raw(),
        "client certificate issuer does not match the client CA subject"
    );
    Ok(CertifiedKey { cert_pem: der_to_pem("CERTIFICATE", &der), key })
}

fn set_leaf_usages(params: &mut CertificateParams, purpose: ExtendedKeyUsagePurpose) {
    params.is_ca = IsCa::ExplicitNoCa;
    // ECDSA keys only sign; keyEncipherment would be meaningless (and is RSA-only).
    params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    params.extended_key_usages = vec![purpose];
    params.use_authority_key_identifier_extension = true;
    set_validity(params, LEAF_VALIDITY);
}

fn common_name_only(common_name: &str) -> DistinguishedName {
    let mut name = DistinguishedName::new();
    name.push(DnType::CommonName, common_name);
    name
}

fn set_validity(params: &mut CertificateParams, lifetime: Duration) {
    // rcgen takes `time::OffsetDateTime`; building it from the epoch keeps the `time`
    // crate out of our direct dependencies.
    let since_epoch = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
    let now = rcgen::date_time_ymd(1970, 1, 1) + since_epoch;
    params.not_before = now - CLOCK_SKEW_ALLOWANCE;
    params.not_after = now + lifetime;
}

fn unix_now() -> i64 {
    let since_epoch = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
    secs_i64(since_epoch)
}

fn secs_i64(duration: Duration) -> i64 {
    i64::try_from(duration.as_secs()).unwrap_or(i64::MAX)
}

fn key_matches(cert: &X509Certificate<'_>, key: &KeyPair) -> bool {
    cert.public_key().subject_public_key.data.as_ref() == key.public_key_raw()
}

fn parse_der(der: &[u8]) -> anyhow::Result<X509Certificate<'_>> {
    let (_, cert) =
        x509_parser::parse_x509_certificate(der).map_err(|err| anyhow::anyhow!("parse X.509 certificate: {err}"))?;
    Ok(cert)
}

/// The DER of the first `CERTIFICATE` block in `pem`.
fn pem_to_der(pem: &str) -> anyhow::Result<Vec<u8>> {
    let (_, block) =
        x509_parser::pem::parse_x509_pem(pem.as_bytes()).map_err(|err| anyhow::anyhow!("parse PEM: {err}"))?;
    ensure!(block.label == "CERTIFICATE", "expected a CERTIFICATE PEM block, found {}", block.label);
    Ok(block.contents)
}

fn der_to_pem(label: &str, der: &[u8]) -> String {
    let body = base64::engine::general_purpose::STANDARD.encode(der);
    let mut pem = format!("-----BEGIN {label}-----\n");
    // RFC 7468 wraps at 64 characters; base64 output is ASCII, so byte chunks are safe.
    for line in body.as_bytes().chunks(64) {
        pem.push_str(&String::from_utf8_lossy(line));
        pem.push('\n');
    }
    pem.push_str(&format!("-----END {label}-----\n"));
    pem
}

fn read_optional(path: &Path) -> anyhow::Result<Option<String>> {
    match fs::read_to_string(path) {
        Ok(text) => Ok(Some(text)),
        Err(err) if err.kind() == ErrorKind::NotFound => Ok(None),
        Err(err) => Err(err).with_context(|| format!("read {}", path.display())),
    }
}

/// Replaces `path` with `contents` so that readers see the old file or the new one,
/// never a torn one, and the new one survives a power cut once this returns.
fn write_atomic(path: &Path, contents: &[u8], mode: u32) -> anyhow::Result<()> {
    let dir = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    let file_name = path.file_name().with_context(|| format!("find the file name in {}", path.display()))?;
    let tmp = dir.join(format!(".{}.tmp.{}", file_name.to_string_lossy(), std::process::id()));
    // A leftover from a crashed run might carry other permissions; `mode` below only
    // applies to newly created files.
    match fs::remove_file(&tmp) {
        Err(err) if err.kind() != ErrorKind::NotFound => {
            return Err(err).with_context(|| format!("remove stale {}", tmp.display()));
        }
        _ => {}
    }
    let mut file = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .open(&tmp)
        .with_context(|| format!("create {}", tmp.display()))?;
    file.set_permissions(fs::Permissions::from_mode(mode))
        .with_context(|| format!("set permissions of {}", tmp.display()))?;
    file.write_all(contents).with_context(|| format!("write {}", tmp.display()))?;
    file.sync_all().with_context(|| format!("sync {}", tmp.display()))?;
    drop(file);
    fs::rename(&tmp, path).with_context(|| format!("rename {} to {}", tmp.display(), path.display()))?;
    fs::File::open(dir)
        .and_then(|dir_handle| dir_handle.sync_all())
        .with_context(|| format!("sync directory {}", dir.display()))?;
    Ok(())
}

/// Just enough DER to swap a certificate's subject and re-sign it. Only definite
/// lengths and single-byte tags occur in certificates rcgen writes, so those are all
/// this handles; anything else is an error, never a panic.
mod der {
    use anyhow::{ensure, Context};
    use rcgen::{KeyPair, SigningKey};

    const SEQUENCE: u8 = 0x30;
    const SET: u8 = 0x31;
    const OBJECT_IDENTIFIER: u8 = 0x06;
    const UTF8_STRING: u8 = 0x0c;
    const BIT_STRING: u8 = 0x03;
    const VERSION_TAG: u8 = 0xa0;
    const OID_COMMON_NAME: [u8; 3] = [0x55, 0x04, 0x03];
    const OID_ORGANIZATION: [u8; 3] = [0x55, 0x04, 0x0a];

    /// An X.501 Name with one O per group followed by the CN, the order Go's
    /// `pkix.Name` (and so kubeadm) writes them in.
    pub(super) fn encode_subject(common_name: &str, organizations: &[String]) -> Vec<u8> {
        let mut rdns = Vec::new();
        for organization in organizations {
            rdns.extend(encode_rdn(&OID_ORGANIZATION, organization));
        }
        rdns.extend(encode_rdn(&OID_COMMON_NAME, common_name));
        encode(SEQUENCE, &rdns)
    }

    fn encode_rdn(oid: &[u8], value: &str) -> Vec<u8> {
        let mut attribute = encode(OBJECT_IDENTIFIER, oid);
        attribute.extend(encode(UTF8_STRING, value.as_bytes()));
        encode(SET, &encode(SEQUENCE, &attribute))
    }

    /// Rebuilds `cert` with `subject` in place of its subject, signed by `issuer_key`
    /// (which must be the key that signed `cert`, so the algorithm identifiers stay
    /// right).
    pub(super) fn replace_subject(cert: &[u8], subject: &[u8], issuer_key: &KeyPair) -> anyhow::Result<Vec<u8>> {
        let (certificate, _) = split(cert)?;
        let certificate = content(certificate, SEQUENCE)?;
        let (tbs, rest) = split(certificate)?;
        let (signature_algorithm, _) = split(rest)?;
        let tbs_fields = content(tbs, SEQUENCE)?;

        // version?, serialNumber, signature, issuer, validity, then subject.
        let fields_before_subject = if tbs_fields.first() == Some(&VERSION_TAG) { 5 } else { 4 };
        let mut remaining = tbs_fields;
        for _ in 0..fields_before_subject {
            remaining = split(remaining)?.1;
        }
        let prefix_len = tbs_fields.len() - remaining.len();
        let (_, after_subject) = split(remaining)?;

        let mut new_fields = tbs_fields[..prefix_len].to_vec();
        new_fields.extend_from_slice(subject);
        new_fields.extend_from_slice(after_subject);
        let new_tbs = encode(SEQUENCE, &new_fields);

        let signature = issuer_key.sign(&new_tbs).context("sign certificate")?;
        let mut signature_bits = vec![0u8]; // no unused bits
        signature_bits.extend(signature);

        let mut body = new_tbs;
        body.extend_from_slice(signature_algorithm);
        body.extend(encode(BIT_STRING, &signature_bits));
        Ok(encode(SEQUENCE, &body))
    }

    /// Splits the first element off `input`: `(whole element, rest)`.
    fn split(input: &[u8]) -> anyhow::Result<(&[u8], &[u8])> {
        let (header_len, content_len) = header(input)?;
        let end = header_len
            .checked_add(content_len)
            .filter(|end| *end <= input.len())
            .context("DER element runs past the end of its input")?;
        Ok(input.split_at(end))
    }

    /// The content of `element`, which must carry `tag`.
    fn content(element: &[u8], tag: u8) -> anyhow::Result<&[u8]> {
        ensure!(element.first() == Some(&tag), "expected DER tag {tag:#04x}, found {:?}", element.first());
        let (header_len, content_len) = header(element)?;
        element.get(header_len..header_len + content_len).context("DER element truncated")
    }

    /// `(header length, content length)` of the element starting `input`.
    fn header(input: &[u8]) -> anyhow::Result<(usize, usize)> {
        let (&tag, rest) = input.split_first().context("DER element missing")?;
        ensure!(tag & 0x1f != 0x1f, "multi-byte DER tags are not supported");
        let (&first, rest) = rest.split_first().context("DER length missing")?;
        if first < 0x80 {
            return Ok((2, usize::from(first)));
        }
        let count = usize::from(first & 0x7f);
        ensure!((1..=4).contains(&count), "unsupported DER length of {count} bytes");
        let bytes = rest.get(..count).context("DER length truncated")?;
        let length = bytes.iter().fold(0usize, |acc, byte| (acc << 8) | usize::from(*byte));
        Ok((2 + count, length))
    }

    fn encode(tag: u8, content: &[u8]) -> Vec<u8> {
        let mut out = vec![tag];
        let len = content.len();
        if len < 0x80 {
            out.push(len as u8);
        } else {
            let bytes = len.to_be_bytes();
            let skip = bytes.iter().take_while(|byte| **byte == 0).count();
            let significant = &bytes[skip..];
            out.push(0x80 | significant.len() as u8);
            out.extend_from_slice(significant);
        }
        out.extend_from_slice(content);
        out
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn encode_then_split_round_trips_every_length_form() {
            for len in [0usize, 1, 127, 128, 255, 256, 70_000] {
                let element = encode(0x04, &vec![7u8; len]);
                let (whole, rest) = split(&element).expect("split");
                assert_eq!(whole.len(), element.len());
                assert!(rest.is_empty());
                assert_eq!(content(whole, 0x04).expect("content").len(), len);
            }
        }

        #[test]
        fn malformed_input_is_an_error() {
            for input in [&[][..], &[0x30], &[0x30, 0x05, 0x00], &[0x30, 0x85, 1, 1, 1, 1, 1]] {
                assert!(split(input).is_err(), "{input:?}");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hosts(names: &[&str]) -> Vec<String> {
        names.iter().map(|name| (*name).to_owned()).collect()
    }

    fn read(dir: &Path, name: &str) -> String {
        fs::read_to_string(dir.join("pki").join(name)).expect("read pki file")
    }

    fn mode(path: &Path) -> u32 {
        fs::metadata(path).expect("stat").permissions().mode() & 0o777
    }

    #[test]
    fn served_hosts_normalises_and_adds_local_names() {
        let served = served_hosts(&hosts(&["Shard-1.Example", "[fe80::1]", "10.0.0.1", "::1"])).expect("valid hosts");
        assert_eq!(served, hosts(&["10.0.0.1", "127.0.0.1", "::1", "fe80::1", "localhost", "shard-1.example"]));
        assert!(served_hosts(&hosts(&["host:6443"])).is_err());
        assert!(served_hosts(&hosts(&[""])).is_err());
    }

    #[test]
    fn first_start_creates_everything_with_private_keys_0600() {
        let dir = tempfile::tempdir().expect("tempdir");
        let material = load_or_create(dir.path(), &hosts(&["shard.example"])).expect("create");
        for name in ["ca", "client-ca", "serving", "admin"] {
            let pki = dir.path().join("pki");
            assert_eq!(mode(&pki.join(format!("{name}.key"))), 0o600, "{name}.key");
            assert_eq!(mode(&pki.join(format!("{name}.crt"))), 0o644, "{name}.crt");
        }
        assert_eq!(mode(&dir.path().join("pki")), 0o700);
        assert_eq!(material.ca_cert_pem, read(dir.path(), "ca.crt"));
        assert_eq!(material.admin_key_pem, read(dir.path(), "admin.key"));

        let der = pem_to_der(&material.serving_cert_pem).expect("pem");
        let cert = parse_der(&der).expect("parse");
        let required = served_hosts(&hosts(&["shard.example"])).expect("hosts");
        assert!(missing_sans(&cert, &required).is_empty());
        assert!(!format!("{material:?}").contains("PRIVATE KEY"));
    }

    #[test]
    fn restart_reuses_everything() {
        let dir = tempfile::tempdir().expect("tempdir");
        let first = load_or_create(dir.path(), &hosts(&["10.1.2.3"])).expect("create");
        let second = load_or_create(dir.path(), &hosts(&["10.1.2.3"])).expect("reload");
        assert_eq!(first.ca_cert_pem, second.ca_cert_pem);
        assert_eq!(first.client_ca_cert_pem, second.client_ca_cert_pem);
        assert_eq!(first.serving_cert_pem, second.serving_cert_pem);
        assert_eq!(first.serving_key_pem, second.serving_key_pem);
        assert_eq!(first.admin_cert_pem, second.admin_cert_pem);
        assert_eq!(first.admin_key_pem, second.admin_key_pem);
    }

    #[test]
    fn new_host_reissues_only_the_serving_certificate() {
        let dir = tempfile::tempdir().expect("tempdir");
        let first = load_or_create(dir.path(), &hosts(&["a.example"])).expect("create");
        let second = load_or_create(dir.path(), &hosts(&["b.example"])).expect("reload");
        assert_eq!(first.ca_cert_pem, second.ca_cert_pem);
        assert_eq!(first.admin_cert_pem, second.admin_cert_pem);
        assert_ne!(first.serving_cert_pem, second.serving_cert_pem);
        let der = pem_to_der(&second.serving_cert_pem).expect("pem");
        let cert = parse_der(&der).expect("parse");
        assert!(missing_sans(&cert, &hosts(&["b.example"])).is_empty());
        // A subset of the covered hosts is still covered: no churn.
        let third = load_or_create(dir.path(), &[]).expect("reload");
        assert_eq!(second.serving_cert_pem, third.serving_cert_pem);
    }

    #[test]
    fn damaged_leaf_is_reissued_but_damaged_ca_is_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        let first = load_or_create(dir.path(), &[]).expect("create");
        let pki = dir.path().join("pki");

        // Key from another certificate: reissue the leaf.
        fs::copy(pki.join("serving.key"), pki.join("admin.key")).expect("copy");
        let second = load_or_create(dir.path(), &[]).expect("reissue admin");
        assert_ne!(first.admin_cert_pem, second.admin_cert_pem);

        fs::remove_file(pki.join("serving.crt")).expect("remove");
        let third = load_or_create(dir.path(), &[]).expect("reissue serving");
        assert_ne!(second.serving_cert_pem, third.serving_cert_pem);

        fs::remove_file(pki.join("ca.key")).expect("remove");
        let err = load_or_create(dir.path(), &[]).expect_err("CA key gone");
        assert!(format!("{err:#}").contains("ca.key"), "{err:#}");
    }

    #[test]
    fn leaf_signed_by_another_ca_is_reissued() {
        let dir = tempfile::tempdir().expect("tempdir");
        let first = load_or_create(dir.path(), &[]).expect("create");
        let pki = dir.path().join("pki");
        // A CA whose certificate is missing counts as never created.
        fs::remove_file(pki.join("client-ca.crt")).expect("remove");
        let second = load_or_create(dir.path(), &[]).expect("recreate client CA");
        assert_ne!(first.client_ca_cert_pem, second.client_ca_cert_pem);
        assert_ne!(first.admin_cert_pem, second.admin_cert_pem);
        assert_eq!(first.serving_cert_pem, second.serving_cert_pem);
    }

    #[test]
    fn client_certificates_carry_every_group_and_chain_to_the_client_ca() {
        let dir = tempfile::tempdir().expect("tempdir");
        let material = load_or_create(dir.path(), &[]).expect("create");
        let groups = hosts(&["dev", "ops", "system:nodes"]);
        let (cert_pem, key_pem) = issue_client_cert(dir.path(), "alice", &groups).expect("issue");
        let key = KeyPair::from_pem(&key_pem).expect("key");

        let der = pem_to_der(&cert_pem).expect("pem");
        let cert = parse_der(&der).expect("parse");
        let organizations: Vec<&str> = cert.subject().iter_organization().map(|o| o.as_str().expect("utf8")).collect();
        assert_eq!(organizations, ["dev", "ops", "system:nodes"]);
        assert!(key_matches(&cert, &key));

        let ca_der = pem_to_der(&material.client_ca_cert_pem).expect("pem");
        let ca = parse_der(&ca_der).expect("parse");
        // Go clients only present a certificate whose issuer bytes equal a CA name the
        // server advertises, so byte equality matters, not just equivalence.
        assert_eq!(cert.issuer().as_raw(), ca.subject().as_raw());
        assert!(cert.verify_signature(Some(ca.public_key())).is_ok());
        let serving_ca_der = pem_to_der(&material.ca_cert_pem).expect("pem");
        let serving_ca = parse_der(&serving_ca_der).expect("parse");
        assert!(cert.verify_signature(Some(serving_ca.public_key())).is_err());

        assert!(issue_client_cert(dir.path(), "", &[]).is_err());
        let empty = tempfile::tempdir().expect("tempdir");
        assert!(issue_client_cert(empty.path(), "bob", &[]).is_err());
    }

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
