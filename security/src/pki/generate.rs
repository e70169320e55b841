//! Generated mode: the installation's CAs, created once in the shared PKI directory under
//! its lock, and this process's leaves, issued from them into the process's own directory.

use protocol::wellknown::MASTERS_GROUP;
use std::path::Path;

use anyhow::ensure;

use super::files::{CertDir, LeafRequirement};
use super::issue::{issue_client_cert_with, issue_serving_cert, served_hosts, CertifiedKey};
use super::{
    cache_user, front_proxy_user, peer_client_user, PkiOptions, Role, ServingMaterial, ADMIN_USER, CLIENT_CA_NAME,
    FRONT_PROXY_CA_NAME, SERVING_CA_NAME,
};

const SERVING_LEAF_NAME: &str = "serving";
const ADMIN_LEAF_NAME: &str = "admin";
const PEER_CLIENT_LEAF_NAME: &str = "peer-client";

/// The three CAs of one installation.
struct SharedCas {
    serving: CertifiedKey,
    client: CertifiedKey,
    front_proxy: CertifiedKey,
}

/// Loads or creates the CAs, then reuses or reissues this process's leaves. Inputs are
/// checked before anything touches the disk, so a typo in a host name leaves no trace.
pub(super) fn load(options: &PkiOptions) -> anyhow::Result<ServingMaterial> {
    ensure_process_name(&options.process_name)?;
    let served_hosts = served_hosts(&options.hosts)?;
    let cas = load_or_create_cas(&options.pki_dir)?;
    let leaves = CertDir::create(&options.leaf_dir)?;

    let serving =
        leaves.load_or_issue_leaf(SERVING_LEAF_NAME, &cas.serving, LeafRequirement::Sans(&served_hosts), || {
            issue_serving_cert(&cas.serving, &served_hosts)
        })?;
    let masters = [MASTERS_GROUP.to_owned()];
    let admin = load_or_issue_client(&leaves, ADMIN_LEAF_NAME, &cas.client, ADMIN_USER, &masters)?;
    let peer = match options.role {
        Role::Shard => {
            let user = peer_client_user(&options.process_name);
            load_or_issue_client(&leaves, PEER_CLIENT_LEAF_NAME, &cas.client, &user, &masters)?
        }
        Role::FrontProxy => {
            let user = front_proxy_user(&options.process_name);
            load_or_issue_client(&leaves, PEER_CLIENT_LEAF_NAME, &cas.front_proxy, &user, &[])?
        }
        Role::Cache => {
            let user = cache_user(&options.process_name);
            load_or_issue_client(&leaves, PEER_CLIENT_LEAF_NAME, &cas.client, &user, &[])?
        }
    };

    Ok(ServingMaterial {
        ca_cert_pem: cas.serving.cert_pem,
        serving_cert_pem: serving.cert_pem,
        serving_key_pem: serving.key.serialize_pem(),
        client_ca_cert_pem: cas.client.cert_pem,
        admin_cert_pem: admin.cert_pem,
        admin_key_pem: admin.key.serialize_pem(),
        peer_client_cert_pem: peer.cert_pem,
        peer_client_key_pem: peer.key.serialize_pem(),
        front_proxy_ca_cert_pem: Some(cas.front_proxy.cert_pem),
    })
}

/// The name ends up in a certificate subject and in authorization decisions, where an
/// empty or blank-padded name would be an identity nobody meant to grant.
fn ensure_process_name(name: &str) -> anyhow::Result<()> {
    ensure!(!name.is_empty(), "the process name is empty; it names the peer client certificate");
    ensure!(
        !name.chars().any(|c| c.is_whitespace() || c.is_control()),
        "process name {name:?} contains whitespace or control characters"
    );
    Ok(())
}

/// Loads the CAs in `pki_dir`, creating missing ones, all under the directory's lock:
/// checking and creating must be one step, or two processes starting together could
/// each create a CA and overwrite the other's.
fn load_or_create_cas(pki_dir: &Path) -> anyhow::Result<SharedCas> {
    // A complete directory is only read, without the lock (CAs are written key first, so
    // a present certificate has its key): it may be read-only, a mounted Secret.
    let existing = CertDir::existing(pki_dir);
    if let (Some(serving), Some(client), Some(front_proxy)) =
        (existing.load_ca(SERVING_CA_NAME)?, existing.load_ca(CLIENT_CA_NAME)?, existing.load_ca(FRONT_PROXY_CA_NAME)?)
    {
        return Ok(SharedCas { serving, client, front_proxy });
    }
    let dir = CertDir::create(pki_dir)?;
    let _lock = dir.lock()?;
    Ok(SharedCas {
        serving: dir.load_or_create_ca(SERVING_CA_NAME, "atoll-serving-ca")?,
        client: dir.load_or_create_ca(CLIENT_CA_NAME, "atoll-client-ca")?,
        front_proxy: dir.load_or_create_ca(FRONT_PROXY_CA_NAME, "atoll-front-proxy-ca")?,
    })
}

fn load_or_issue_client(
    leaves: &CertDir,
    name: &str,
    client_ca: &CertifiedKey,
    user: &str,
    groups: &[String],
) -> anyhow::Result<CertifiedKey> {
    leaves.load_or_issue_leaf(name, client_ca, LeafRequirement::Subject { user, groups }, || {
        issue_client_cert_with(client_ca, user, groups)
    })
}

#[cfg(test)]
mod tests {
    use std::fs;
    use std::sync::Barrier;

    use super::*;
    use crate::pki::test_support::{options, read, signed_by};
    use crate::pki::x509::{parse_der, pem_to_der, subject_names};
    use crate::pki::{issue_client_cert, load};

    const PROCESSES: usize = 4;

    #[test]
    fn a_complete_pki_dir_is_only_read() {
        let dir = tempfile::tempdir().expect("tempdir");
        let pki_dir = dir.path().join("pki");
        let first = load(&options(&pki_dir, &dir.path().join("a"), "shard-a", &[])).expect("create the CAs");
        fs::remove_file(pki_dir.join(".lock")).expect("remove the lock file");
        // A mounted Secret holds the CAs and nothing else; loading must not write there.
        let second = load(&options(&pki_dir, &dir.path().join("b"), "shard-b", &[])).expect("load the CAs");
        assert_eq!(first.ca_cert_pem, second.ca_cert_pem, "the same serving CA");
        assert!(!pki_dir.join(".lock").exists(), "nothing was written into the complete PKI dir");
    }

    #[test]
    fn processes_starting_together_share_one_set_of_cas() {
        let dir = tempfile::tempdir().expect("tempdir");
        let pki_dir = dir.path().join("shared-pki");
        // Every thread waits at the barrier so that all of them find the CAs missing.
        let barrier = Barrier::new(PROCESSES);
        let materials: Vec<ServingMaterial> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..PROCESSES)
                .map(|i| {
                    let (barrier, pki_dir) = (&barrier, &pki_dir);
                    let leaf_dir = dir.path().join(format!("shard-{i}")).join("certs");
                    scope.spawn(move || {
                        barrier.wait();
                        load(&options(pki_dir, &leaf_dir, &format!("shard-{i}"), &[])).expect("load")
                    })
                })
                .collect();
            handles.into_iter().map(|handle| handle.join().expect("thread")).collect()
        });

        let on_disk = |name: &str| read(&pki_dir, &format!("{name}.crt"));
        for material in &materials {
            assert_eq!(material.ca_cert_pem, on_disk(SERVING_CA_NAME));
            assert_eq!(material.client_ca_cert_pem, on_disk(CLIENT_CA_NAME));
            assert_eq!(material.front_proxy_ca_cert_pem.as_deref(), Some(on_disk(FRONT_PROXY_CA_NAME).as_str()));
            assert!(signed_by(&material.serving_cert_pem, &material.ca_cert_pem));
            assert!(signed_by(&material.admin_cert_pem, &material.client_ca_cert_pem));
            assert!(signed_by(&material.peer_client_cert_pem, &material.client_ca_cert_pem));
        }
        // Each process issued its own leaves.
        let serving: std::collections::BTreeSet<&str> =
            materials.iter().map(|material| material.serving_cert_pem.as_str()).collect();
        assert_eq!(serving.len(), PROCESSES);
        let leftovers: Vec<_> = fs::read_dir(&pki_dir)
            .expect("list")
            .filter_map(Result::ok)
            .filter(|entry| entry.file_name().to_string_lossy().contains(".tmp."))
            .collect();
        assert!(leftovers.is_empty(), "{leftovers:?}");
    }

    #[test]
    fn peer_client_certificate_names_the_shard_as_a_master() {
        let dir = tempfile::tempdir().expect("tempdir");
        let pki_dir = dir.path().join("pki");
        let material = load(&options(&pki_dir, &dir.path().join("certs"), "shard-7", &[])).expect("load");

        let der = pem_to_der(&material.peer_client_cert_pem).expect("pem");
        let cert = parse_der(&der).expect("parse");
        let (common_names, organizations) = subject_names(&cert);
        assert_eq!(common_names, ["system:atoll:shard:shard-7"]);
        assert_eq!(organizations, ["system:masters"]);
        assert!(signed_by(&material.peer_client_cert_pem, &material.client_ca_cert_pem));
        assert!(!signed_by(&material.peer_client_cert_pem, &material.ca_cert_pem));
        assert!(!format!("{material:?}").contains("PRIVATE KEY"));
    }

    #[test]
    fn cache_peer_certificate_names_the_cache_without_groups() {
        let dir = tempfile::tempdir().expect("tempdir");
        let pki_dir = dir.path().join("pki");
        let mut cache = options(&pki_dir, &dir.path().join("cache-certs"), "regional-1", &[]);
        cache.role = Role::Cache;
        let material = load(&cache).expect("load");

        let der = pem_to_der(&material.peer_client_cert_pem).expect("pem");
        let (common_names, organizations) = subject_names(&parse_der(&der).expect("parse"));
        assert_eq!(common_names, [crate::pki::cache_user("regional-1")]);
        assert!(organizations.is_empty(), "{organizations:?}");
        assert!(signed_by(&material.peer_client_cert_pem, &material.client_ca_cert_pem));
        // The serving certificate comes from the serving CA, as a shard's does.
        assert!(signed_by(&material.serving_cert_pem, &material.ca_cert_pem));

        // A reload keeps the certificate: it already names what a cache's must.
        let again = load(&cache).expect("reload");
        assert_eq!(again.peer_client_cert_pem, material.peer_client_cert_pem);
    }

    #[test]
    fn cas_stay_in_the_shared_directory_and_leaves_in_the_process_directory() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (pki_dir, leaf_dir) = (dir.path().join("pki"), dir.path().join("data").join("certs"));
        load(&options(&pki_dir, &leaf_dir, "shard-1", &[])).expect("load");
        let names = |path: &Path| {
            let mut names: Vec<String> = fs::read_dir(path)
                .expect("list")
                .map(|entry| entry.expect("entry").file_name().to_string_lossy().into_owned())
                .collect();
            names.sort();
            names
        };
        let pki_files = ["ca", "client-ca", "front-proxy-ca"]
            .iter()
            .flat_map(|name| [".crt", ".key"].map(|ext| format!("{name}{ext}")));
        let mut expected_pki: Vec<String> = pki_files.chain([".lock".to_owned()]).collect();
        expected_pki.sort();
        assert_eq!(names(&pki_dir), expected_pki);
        let mut expected_leaves: Vec<String> = ["admin", "peer-client", "serving"]
            .iter()
            .flat_map(|name| [".crt", ".key"].map(|ext| format!("{name}{ext}")))
            .collect();
        expected_leaves.sort();
        assert_eq!(names(&leaf_dir), expected_leaves);

        // Users minted later chain to the same client CA.
        let (cert_pem, _) = issue_client_cert(&pki_dir, "alice", &[]).expect("issue");
        assert!(signed_by(&cert_pem, &read(&pki_dir, "client-ca.crt")));
    }

    #[test]
    fn renamed_process_gets_a_new_peer_client_certificate_only() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (pki_dir, leaf_dir) = (dir.path().join("pki"), dir.path().join("certs"));
        let first = load(&options(&pki_dir, &leaf_dir, "shard-a", &[])).expect("load");
        let second = load(&options(&pki_dir, &leaf_dir, "shard-b", &[])).expect("reload");
        assert_ne!(first.peer_client_cert_pem, second.peer_client_cert_pem);
        assert_eq!(first.admin_cert_pem, second.admin_cert_pem);
        assert_eq!(first.serving_cert_pem, second.serving_cert_pem);
        let der = pem_to_der(&second.peer_client_cert_pem).expect("pem");
        assert_eq!(subject_names(&parse_der(&der).expect("parse")).0, ["system:atoll:shard:shard-b"]);
    }

    #[test]
    fn bad_inputs_are_refused_before_anything_is_written() {
        let dir = tempfile::tempdir().expect("tempdir");
        let pki_dir = dir.path().join("pki");
        for name in ["", "shard 1", "shard\n"] {
            let err = load(&options(&pki_dir, &dir.path().join("certs"), name, &[])).expect_err("bad name");
            assert!(format!("{err:#}").contains("process name"), "{err:#}");
        }
        assert!(load(&options(&pki_dir, &dir.path().join("certs"), "shard-1", &["host:6443"])).is_err());
        assert!(!pki_dir.exists());
    }
}
