//! The files in a PKI directory: their names and modes, atomic replacement, the lock that
//! serialises processes sharing a directory, and loading what is already there, deciding
//! whether each stored CA and leaf can still be used.

use std::fs;
use std::io::{ErrorKind, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use anyhow::{bail, Context};
use rcgen::KeyPair;
use x509_parser::certificate::X509Certificate;

use super::issue::{create_ca, secs_i64, unix_now, CertifiedKey, LEAF_RENEW_BEFORE};
use super::x509::{key_matches, missing_sans, parse_der, pem_to_der, subject_names};

const CERT_FILE_MODE: u32 = 0o644;
pub(super) const KEY_FILE_MODE: u32 = 0o600;
const DIR_MODE: u32 = 0o700;
const LOCK_FILE_NAME: &str = ".lock";

/// A directory of `NAME.crt` / `NAME.key` pairs: the shared CA directory or a process's
/// leaf directory.
pub(super) struct CertDir {
    pub(super) root: PathBuf,
}

/// What a stored leaf must still say to be reused.
pub(super) enum LeafRequirement<'a> {
    /// A serving certificate whose SANs cover these normalised hosts.
    Sans(&'a [String]),
    /// A client certificate naming exactly this user (CN) and these groups (O, in order).
    Subject { user: &'a str, groups: &'a [String] },
}

/// Holds the directory's lock file exclusively; dropping it closes the file, which
/// releases the lock.
pub(super) struct DirLock {
    _file: fs::File,
}

impl CertDir {
    /// Creates `root` (mode 0700, parents included) if it does not exist yet.
    pub(super) fn create(root: &Path) -> anyhow::Result<Self> {
        fs::DirBuilder::new()
            .recursive(true)
            .mode(DIR_MODE)
            .create(root)
            .with_context(|| format!("create PKI directory {}", root.display()))?;
        Ok(Self { root: root.to_path_buf() })
    }

    pub(super) fn existing(root: &Path) -> Self {
        Self { root: root.to_path_buf() }
    }

    /// Takes an exclusive lock on `ROOT/.lock`, waiting for whoever holds it.
    ///
    /// Processes of one installation start together and share the CA directory; without
    /// the lock two of them could each find a CA missing, create one, and end up trusting
    /// different CAs, the loser's leaves signed by a CA nobody else knows. `flock` locks
    /// belong to the open file, so threads of one process exclude each other too, and the
    /// kernel drops the lock when its holder dies, so the wait cannot outlive a crash; the
    /// holder only generates keys and writes a few small files.
    pub(super) fn lock(&self) -> anyhow::Result<DirLock> {
        let path = self.root.join(LOCK_FILE_NAME);
        let file = fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(KEY_FILE_MODE)
            .open(&path)
            .with_context(|| format!("open lock file {}", path.display()))?;
        file.lock().with_context(|| format!("lock {}", path.display()))?;
        Ok(DirLock { _file: file })
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
    /// key is lost. Readers that take no lock rely on the same order: once a CA
    /// certificate is visible, its key is too.
    fn write_pair(&self, name: &str, pair: &CertifiedKey) -> anyhow::Result<()> {
        write_atomic(&self.key_path(name), pair.key.serialize_pem().as_bytes(), KEY_FILE_MODE)?;
        write_atomic(&self.cert_path(name), pair.cert_pem.as_bytes(), CERT_FILE_MODE)
    }

    /// Loads a CA, refusing to guess when its files are inconsistent: replacing a CA
    /// behind the operator's back would lock out every existing client.
    pub(super) fn load_ca(&self, name: &str) -> anyhow::Result<Option<CertifiedKey>> {
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

    /// Loads CA `name`, creating it when its certificate is absent. Callers sharing the
    /// directory with other processes must hold [`CertDir::lock`].
    pub(super) fn load_or_create_ca(&self, name: &str, common_name: &str) -> anyhow::Result<CertifiedKey> {
        if let Some(ca) = self.load_ca(name)? {
            return Ok(ca);
        }
        let ca = create_ca(common_name)?;
        self.write_pair(name, &ca)?;
        tracing::info!(path = %self.cert_path(name).display(), "created CA");
        Ok(ca)
    }

    /// Reuses leaf `name` when it is still good for `requirement`, otherwise issues a new
    /// one with `issue` and stores it.
    pub(super) fn load_or_issue_leaf(
        &self,
        name: &str,
        ca: &CertifiedKey,
        requirement: LeafRequirement<'_>,
        issue: impl FnOnce() -> anyhow::Result<CertifiedKey>,
    ) -> anyhow::Result<CertifiedKey> {
        let reason = match self.read_pair(name)? {
            None => "missing".to_owned(),
            Some((_, None)) => "private key missing".to_owned(),
            Some((cert_pem, Some(key_pem))) => {
                let ca_der = ca.cert_der()?;
                match leaf_problem(&cert_pem, &key_pem, &ca_der, &requirement, unix_now()) {
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
/// failure is a reason to reissue: the process owns these files and can recreate them.
fn leaf_problem(
    cert_pem: &str,
    key_pem: &str,
    ca_der: &[u8],
    requirement: &LeafRequirement<'_>,
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
    requirement_problem(&cert, requirement)
}

fn requirement_problem(cert: &X509Certificate<'_>, requirement: &LeafRequirement<'_>) -> Option<String> {
    match requirement {
        LeafRequirement::Sans(required) => {
            let missing = missing_sans(cert, required);
            (!missing.is_empty()).then(|| format!("SANs do not cover {}", missing.join(", ")))
        }
        LeafRequirement::Subject { user, groups } => {
            let (common_names, organizations) = subject_names(cert);
            let matches = common_names == [*user] && organizations == *groups;
            (!matches).then(|| format!("subject is not CN={user} with groups {groups:?}"))
        }
    }
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
pub(super) fn write_atomic(path: &Path, contents: &[u8], mode: u32) -> anyhow::Result<()> {
    let dir = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    let file_name = path.file_name().with_context(|| format!("find the file name in {}", path.display()))?;
    // Unique per call, not only per process: threads of one process may write into the
    // same directory (different files, but a shared name would still collide).
    static NEXT_TMP_ID: AtomicU64 = AtomicU64::new(0);
    let tmp_id = NEXT_TMP_ID.fetch_add(1, Ordering::Relaxed);
    let tmp = dir.join(format!(".{}.tmp.{}.{tmp_id}", file_name.to_string_lossy(), std::process::id()));
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pki::issue::{issue_client_cert_with, served_hosts};
    use crate::pki::test_support::{hosts, mode, options, read};
    use crate::pki::{load, load_or_create, PkiOptions, ServingMaterial};

    /// Generated-mode options with the CAs in `DIR/pki` and the leaves in `DIR/certs`.
    fn split_options(dir: &Path, host_names: &[&str]) -> PkiOptions {
        options(&dir.join("pki"), &dir.join("certs"), "shard-1", host_names)
    }

    fn load_split(dir: &Path, host_names: &[&str]) -> anyhow::Result<ServingMaterial> {
        load(&split_options(dir, host_names))
    }

    #[test]
    fn first_start_creates_everything_with_private_keys_0600() {
        let dir = tempfile::tempdir().expect("tempdir");
        let material = load_split(dir.path(), &["shard.example"]).expect("create");
        let (pki, certs) = (dir.path().join("pki"), dir.path().join("certs"));
        let files = [(&pki, "ca"), (&pki, "client-ca"), (&pki, "front-proxy-ca")].into_iter().chain([
            (&certs, "serving"),
            (&certs, "admin"),
            (&certs, "peer-client"),
        ]);
        for (dir, name) in files {
            assert_eq!(mode(&dir.join(format!("{name}.key"))), 0o600, "{name}.key");
            assert_eq!(mode(&dir.join(format!("{name}.crt"))), 0o644, "{name}.crt");
        }
        assert_eq!(mode(&pki), 0o700);
        assert_eq!(mode(&certs), 0o700);
        assert_eq!(mode(&pki.join(LOCK_FILE_NAME)), 0o600);
        assert_eq!(material.ca_cert_pem, read(&pki, "ca.crt"));
        assert_eq!(material.admin_key_pem, read(&certs, "admin.key"));
        assert_eq!(material.peer_client_key_pem, read(&certs, "peer-client.key"));

        let der = pem_to_der(&material.serving_cert_pem).expect("pem");
        let cert = parse_der(&der).expect("parse");
        let required = served_hosts(&hosts(&["shard.example"])).expect("hosts");
        assert!(missing_sans(&cert, &required).is_empty());
        assert!(!format!("{material:?}").contains("PRIVATE KEY"));
    }

    #[test]
    fn legacy_layout_keeps_everything_under_dir_pki() {
        let dir = tempfile::tempdir().expect("tempdir");
        let material = load_or_create(dir.path(), &[]).expect("create");
        let pki = dir.path().join("pki");
        for name in ["ca", "client-ca", "front-proxy-ca", "serving", "admin", "peer-client"] {
            assert_eq!(mode(&pki.join(format!("{name}.key"))), 0o600, "{name}.key");
        }
        assert_eq!(material.client_ca_cert_pem, read(&pki, "client-ca.crt"));
        assert_eq!(material.serving_cert_pem, read(&pki, "serving.crt"));
    }

    #[test]
    fn restart_reuses_everything() {
        let dir = tempfile::tempdir().expect("tempdir");
        let first = load_split(dir.path(), &["10.1.2.3"]).expect("create");
        let second = load_split(dir.path(), &["10.1.2.3"]).expect("reload");
        assert_eq!(first.ca_cert_pem, second.ca_cert_pem);
        assert_eq!(first.client_ca_cert_pem, second.client_ca_cert_pem);
        assert_eq!(first.front_proxy_ca_cert_pem, second.front_proxy_ca_cert_pem);
        assert_eq!(first.serving_cert_pem, second.serving_cert_pem);
        assert_eq!(first.serving_key_pem, second.serving_key_pem);
        assert_eq!(first.admin_cert_pem, second.admin_cert_pem);
        assert_eq!(first.admin_key_pem, second.admin_key_pem);
        assert_eq!(first.peer_client_cert_pem, second.peer_client_cert_pem);
        assert_eq!(first.peer_client_key_pem, second.peer_client_key_pem);
    }

    #[test]
    fn new_host_reissues_only_the_serving_certificate() {
        let dir = tempfile::tempdir().expect("tempdir");
        let first = load_split(dir.path(), &["a.example"]).expect("create");
        let second = load_split(dir.path(), &["b.example"]).expect("reload");
        assert_eq!(first.ca_cert_pem, second.ca_cert_pem);
        assert_eq!(first.admin_cert_pem, second.admin_cert_pem);
        assert_eq!(first.peer_client_cert_pem, second.peer_client_cert_pem);
        assert_ne!(first.serving_cert_pem, second.serving_cert_pem);
        let der = pem_to_der(&second.serving_cert_pem).expect("pem");
        let cert = parse_der(&der).expect("parse");
        assert!(missing_sans(&cert, &hosts(&["b.example"])).is_empty());
        // A subset of the covered hosts is still covered: no churn.
        let third = load_split(dir.path(), &[]).expect("reload");
        assert_eq!(second.serving_cert_pem, third.serving_cert_pem);
    }

    #[test]
    fn damaged_leaf_is_reissued_but_damaged_ca_is_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        let first = load_split(dir.path(), &[]).expect("create");
        let (pki, certs) = (dir.path().join("pki"), dir.path().join("certs"));

        // Key from another certificate: reissue the leaf.
        fs::copy(certs.join("serving.key"), certs.join("admin.key")).expect("copy");
        let second = load_split(dir.path(), &[]).expect("reissue admin");
        assert_ne!(first.admin_cert_pem, second.admin_cert_pem);

        fs::remove_file(certs.join("serving.crt")).expect("remove");
        let third = load_split(dir.path(), &[]).expect("reissue serving");
        assert_ne!(second.serving_cert_pem, third.serving_cert_pem);

        fs::write(certs.join("peer-client.crt"), "garbage").expect("write");
        let fourth = load_split(dir.path(), &[]).expect("reissue peer client");
        assert_ne!(third.peer_client_cert_pem, fourth.peer_client_cert_pem);

        fs::remove_file(pki.join("ca.key")).expect("remove");
        let err = load_split(dir.path(), &[]).expect_err("CA key gone");
        assert!(format!("{err:#}").contains("ca.key"), "{err:#}");
        // A CA with a foreign key is refused too, never replaced.
        fs::copy(pki.join("front-proxy-ca.key"), pki.join("ca.key")).expect("copy");
        let err = load_split(dir.path(), &[]).expect_err("CA key foreign");
        assert!(format!("{err:#}").contains("does not match"), "{err:#}");
        assert_eq!(read(&pki, "ca.crt"), first.ca_cert_pem);
    }

    #[test]
    fn leaf_signed_by_another_ca_is_reissued() {
        let dir = tempfile::tempdir().expect("tempdir");
        let first = load_split(dir.path(), &[]).expect("create");
        let pki = dir.path().join("pki");
        // A CA whose certificate is missing counts as never created.
        fs::remove_file(pki.join("client-ca.crt")).expect("remove");
        let second = load_split(dir.path(), &[]).expect("recreate client CA");
        assert_ne!(first.client_ca_cert_pem, second.client_ca_cert_pem);
        assert_ne!(first.admin_cert_pem, second.admin_cert_pem);
        assert_ne!(first.peer_client_cert_pem, second.peer_client_cert_pem);
        assert_eq!(first.serving_cert_pem, second.serving_cert_pem);
    }

    #[test]
    fn client_leaf_with_another_subject_is_reissued() {
        let cases: [(&str, &[&str], Option<&str>); 4] = [
            ("admin", &["system:masters"], None),
            ("alice", &["system:masters"], Some("subject is not CN=admin")),
            ("admin", &[], Some("subject is not CN=admin")),
            ("admin", &["system:masters", "dev"], Some("subject is not CN=admin")),
        ];
        let ca = create_ca("test-ca").expect("ca");
        let ca_der = ca.cert_der().expect("der");
        let masters = hosts(&["system:masters"]);
        let requirement = LeafRequirement::Subject { user: "admin", groups: &masters };
        for (user, groups, expected) in cases {
            let leaf = issue_client_cert_with(&ca, user, &hosts(groups)).expect("issue");
            let problem = leaf_problem(&leaf.cert_pem, &leaf.key.serialize_pem(), &ca_der, &requirement, unix_now());
            let problem = problem.as_deref().map(|problem| problem.split(" with").next().unwrap_or(problem));
            assert_eq!(problem, expected, "{user} {groups:?}");
        }
    }
}
