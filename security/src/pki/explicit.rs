//! Explicit mode: certificates an operator issued elsewhere, named file by file. Nothing
//! is generated or written; the files are read, and checked well enough that a wrong
//! path or swapped flags fail at start with the flag's name rather than at the first
//! handshake.

use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};

use anyhow::{bail, ensure, Context};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use x509_parser::prelude::FromDer;
use x509_parser::x509::SubjectPublicKeyInfo;

use super::issue::served_hosts;
use super::x509::{missing_sans, parse_der};
use super::{CertFiles, ServingMaterial};

const TLS_CERT_FLAG: &str = "--tls-cert-file";
const TLS_KEY_FLAG: &str = "--tls-private-key-file";
const CLIENT_CA_FLAG: &str = "--client-ca-file";
const SERVER_CA_FLAG: &str = "--server-ca-file";
const PEER_CERT_FLAG: &str = "--peer-client-cert-file";
const PEER_KEY_FLAG: &str = "--peer-client-key-file";
const FRONT_PROXY_CA_FLAG: &str = "--front-proxy-ca-file";
/// Certificate bundles and keys are a few kilobytes; anything this large is the wrong
/// file, and reading it whole would only waste memory.
const PEM_FILE_BYTES_MAX: u64 = 1024 * 1024;

impl CertFiles {
    /// Every flag with its value, in the order the error messages list them.
    fn flags(&self) -> [(&'static str, Option<&PathBuf>); 7] {
        [
            (TLS_CERT_FLAG, self.tls_cert_file.as_ref()),
            (TLS_KEY_FLAG, self.tls_private_key_file.as_ref()),
            (CLIENT_CA_FLAG, self.client_ca_file.as_ref()),
            (SERVER_CA_FLAG, self.server_ca_file.as_ref()),
            (PEER_CERT_FLAG, self.peer_client_cert_file.as_ref()),
            (PEER_KEY_FLAG, self.peer_client_key_file.as_ref()),
            (FRONT_PROXY_CA_FLAG, self.front_proxy_ca_file.as_ref()),
        ]
    }
}

/// Refuses certificate-file flags without `--tls-cert-file`: mixing a few given files
/// with generated ones would silently ignore them or build trust nobody planned.
pub(super) fn ensure_unset(files: &CertFiles) -> anyhow::Result<()> {
    if let Some((flag, _)) = files.flags().into_iter().find(|(_, path)| path.is_some()) {
        bail!(
            "{flag} is set but {TLS_CERT_FLAG} is not: the certificate-file flags are used together, \
             or not at all to generate everything from --pki-dir"
        );
    }
    Ok(())
}

/// The flags explicit mode cannot do without.
struct RequiredFiles<'a> {
    tls_cert: &'a Path,
    tls_key: &'a Path,
    client_ca: &'a Path,
    server_ca: &'a Path,
    peer_cert: &'a Path,
    peer_key: &'a Path,
}

/// Reads the operator's files. `hosts` is only checked against the serving certificate's
/// SANs, with a warning: a name missing there may be served by a load balancer instead.
pub(super) fn load(files: &CertFiles, hosts: &[String]) -> anyhow::Result<ServingMaterial> {
    let required = required_files(files)?;
    let (serving_cert_pem, serving_der) = read_certificates(required.tls_cert, TLS_CERT_FLAG)?;
    let serving_key_pem = read_private_key(required.tls_key, TLS_KEY_FLAG)?;
    ensure_key_matches(&serving_der, &serving_key_pem, TLS_CERT_FLAG, TLS_KEY_FLAG)?;
    warn_on_missing_sans(&serving_der, hosts)?;

    let (peer_client_cert_pem, peer_der) = read_certificates(required.peer_cert, PEER_CERT_FLAG)?;
    let peer_client_key_pem = read_private_key(required.peer_key, PEER_KEY_FLAG)?;
    ensure_key_matches(&peer_der, &peer_client_key_pem, PEER_CERT_FLAG, PEER_KEY_FLAG)?;

    let front_proxy_ca_cert_pem = match &files.front_proxy_ca_file {
        Some(path) => Some(read_ca_bundle(path, FRONT_PROXY_CA_FLAG)?),
        None => None,
    };
    let material = ServingMaterial {
        ca_cert_pem: read_ca_bundle(required.server_ca, SERVER_CA_FLAG)?,
        serving_cert_pem,
        serving_key_pem,
        client_ca_cert_pem: read_ca_bundle(required.client_ca, CLIENT_CA_FLAG)?,
        // Signing an admin certificate would take the client CA key, which an operator
        // supplying files keeps elsewhere; they hand out admin credentials themselves.
        admin_cert_pem: String::new(),
        admin_key_pem: String::new(),
        peer_client_cert_pem,
        peer_client_key_pem,
        front_proxy_ca_cert_pem,
    };
    tracing::info!("using the certificate files given on the command line; no admin credential is issued");
    Ok(material)
}

/// Names every missing flag at once, so the operator fixes the command line in one go.
fn required_files(files: &CertFiles) -> anyhow::Result<RequiredFiles<'_>> {
    let paths = (
        files.tls_cert_file.as_deref(),
        files.tls_private_key_file.as_deref(),
        files.client_ca_file.as_deref(),
        files.server_ca_file.as_deref(),
        files.peer_client_cert_file.as_deref(),
        files.peer_client_key_file.as_deref(),
    );
    if let (Some(tls_cert), Some(tls_key), Some(client_ca), Some(server_ca), Some(peer_cert), Some(peer_key)) = paths {
        return Ok(RequiredFiles { tls_cert, tls_key, client_ca, server_ca, peer_cert, peer_key });
    }
    let missing: Vec<&str> = files
        .flags()
        .into_iter()
        .filter(|(flag, path)| *flag != FRONT_PROXY_CA_FLAG && path.is_none())
        .map(|(flag, _)| flag)
        .collect();
    bail!(
        "{TLS_CERT_FLAG} is set, so {TLS_KEY_FLAG}, {CLIENT_CA_FLAG}, {SERVER_CA_FLAG}, {PEER_CERT_FLAG} and \
         {PEER_KEY_FLAG} are required too; missing: {}",
        missing.join(", ")
    )
}

fn read_pem_file(path: &Path, flag: &str) -> anyhow::Result<String> {
    let file = fs::File::open(path).with_context(|| format!("open {flag} {}", path.display()))?;
    let mut text = String::new();
    file.take(PEM_FILE_BYTES_MAX + 1)
        .read_to_string(&mut text)
        .with_context(|| format!("read {flag} {}", path.display()))?;
    ensure!(
        text.len() as u64 <= PEM_FILE_BYTES_MAX,
        "{flag} {} is larger than {PEM_FILE_BYTES_MAX} bytes; is it the right file?",
        path.display()
    );
    Ok(text)
}

/// The file's text and the DER of its first certificate, after checking every
/// certificate in it parses.
fn read_certificates(path: &Path, flag: &str) -> anyhow::Result<(String, Vec<u8>)> {
    let pem = read_pem_file(path, flag)?;
    let certs = CertificateDer::pem_slice_iter(pem.as_bytes())
        .collect::<Result<Vec<_>, _>>()
        .with_context(|| format!("parse PEM in {flag} {}", path.display()))?;
    let first = certs.first().with_context(|| format!("find a certificate in {flag} {}", path.display()))?;
    for cert in &certs {
        parse_der(cert).with_context(|| format!("parse a certificate in {flag} {}", path.display()))?;
    }
    let first = first.to_vec();
    Ok((pem, first))
}

/// A CA bundle's text. Certificates without the CA flag draw a warning, not an error:
/// the likely mistake is a leaf passed by accident, but some old CAs lack the flag and
/// rustls accepts them as trust anchors.
fn read_ca_bundle(path: &Path, flag: &str) -> anyhow::Result<String> {
    let (pem, first) = read_certificates(path, flag)?;
    if !parse_der(&first)?.is_ca() {
        tracing::warn!(%flag, path = %path.display(), "the first certificate is not marked as a CA");
    }
    Ok(pem)
}

fn read_private_key(path: &Path, flag: &str) -> anyhow::Result<String> {
    let pem = read_pem_file(path, flag)?;
    PrivateKeyDer::from_pem_slice(pem.as_bytes())
        .with_context(|| format!("find a private key (PKCS#8, PKCS#1 or SEC1 PEM) in {flag} {}", path.display()))?;
    Ok(pem)
}

/// Catches swapped or stale key files, which rustls would otherwise report only as a
/// failed handshake, and for the peer client certificate only on another shard.
fn ensure_key_matches(cert_der: &[u8], key_pem: &str, cert_flag: &str, key_flag: &str) -> anyhow::Result<()> {
    let key = PrivateKeyDer::from_pem_slice(key_pem.as_bytes()).context("parse private key")?;
    let signing_key = rustls::crypto::ring::sign::any_supported_type(&key)
        .map_err(|err| anyhow::anyhow!("load the key in {key_flag}: {err}"))?;
    // Keys rustls cannot derive a public key from go unchecked rather than refused.
    let Some(spki) = signing_key.public_key() else {
        return Ok(());
    };
    let (_, key_public) = SubjectPublicKeyInfo::from_der(spki.as_ref())
        .map_err(|err| anyhow::anyhow!("parse the public key of {key_flag}: {err}"))?;
    let cert = parse_der(cert_der)?;
    ensure!(
        cert.public_key().subject_public_key.data == key_public.subject_public_key.data,
        "the key in {key_flag} does not belong to the certificate in {cert_flag}"
    );
    Ok(())
}

fn warn_on_missing_sans(serving_der: &[u8], hosts: &[String]) -> anyhow::Result<()> {
    let served = served_hosts(hosts)?;
    let missing = missing_sans(&parse_der(serving_der)?, &served);
    if !missing.is_empty() {
        tracing::warn!(missing = %missing.join(", "), "{TLS_CERT_FLAG} does not cover every host");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pki::test_support::{options, read};
    use crate::pki::{load, PkiOptions};

    /// Options naming, as explicit files, what a generated run left in `pki` and `certs`.
    fn explicit_options(pki: &Path, certs: &Path) -> PkiOptions {
        let mut explicit = options(&pki.join("unused"), &certs.join("unused"), "shard-1", &[]);
        explicit.files = CertFiles {
            tls_cert_file: Some(certs.join("serving.crt")),
            tls_private_key_file: Some(certs.join("serving.key")),
            client_ca_file: Some(pki.join("client-ca.crt")),
            server_ca_file: Some(pki.join("ca.crt")),
            peer_client_cert_file: Some(certs.join("peer-client.crt")),
            peer_client_key_file: Some(certs.join("peer-client.key")),
            front_proxy_ca_file: None,
        };
        explicit
    }

    fn generated(dir: &Path) -> (PathBuf, PathBuf) {
        let (pki, certs) = (dir.join("pki"), dir.join("certs"));
        load(&options(&pki, &certs, "shard-1", &[])).expect("generate");
        (pki, certs)
    }

    #[test]
    fn explicit_files_are_used_as_given_and_nothing_is_written() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (pki, certs) = generated(dir.path());
        let mut explicit = explicit_options(&pki, &certs);
        let material = load(&explicit).expect("explicit");
        assert_eq!(material.ca_cert_pem, read(&pki, "ca.crt"));
        assert_eq!(material.client_ca_cert_pem, read(&pki, "client-ca.crt"));
        assert_eq!(material.serving_cert_pem, read(&certs, "serving.crt"));
        assert_eq!(material.serving_key_pem, read(&certs, "serving.key"));
        assert_eq!(material.peer_client_cert_pem, read(&certs, "peer-client.crt"));
        assert_eq!(material.peer_client_key_pem, read(&certs, "peer-client.key"));
        assert_eq!(material.front_proxy_ca_cert_pem, None);
        assert_eq!(material.admin_credential(), None);
        assert!(!explicit.pki_dir.exists() && !explicit.leaf_dir.exists());

        explicit.files.front_proxy_ca_file = Some(pki.join("front-proxy-ca.crt"));
        let material = load(&explicit).expect("explicit with front-proxy CA");
        assert_eq!(material.front_proxy_ca_cert_pem, Some(read(&pki, "front-proxy-ca.crt")));
    }

    #[test]
    fn missing_and_stray_flags_are_named() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (pki, certs) = generated(dir.path());
        let mut explicit = explicit_options(&pki, &certs);
        explicit.files.client_ca_file = None;
        explicit.files.peer_client_key_file = None;
        let err = format!("{:#}", load(&explicit).expect_err("missing flags"));
        assert!(err.ends_with("missing: --client-ca-file, --peer-client-key-file"), "{err}");

        let mut stray = options(&pki, &certs, "shard-1", &[]);
        stray.files.front_proxy_ca_file = Some(pki.join("front-proxy-ca.crt"));
        let err = format!("{:#}", load(&stray).expect_err("stray flag"));
        assert!(err.starts_with("--front-proxy-ca-file is set but --tls-cert-file is not"), "{err}");
    }

    #[test]
    fn unusable_files_fail_with_the_flag_name() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (pki, certs) = generated(dir.path());
        // (what to break, expected text in the error)
        type BreakFiles = fn(&mut CertFiles, &Path, &Path);
        let cases: [(BreakFiles, &str); 4] = [
            (|files, _, certs| files.tls_private_key_file = Some(certs.join("peer-client.key")), "does not belong"),
            (|files, _, certs| files.peer_client_cert_file = Some(certs.join("serving.key")), PEER_CERT_FLAG),
            (|files, pki, _| files.client_ca_file = Some(pki.join("absent.crt")), CLIENT_CA_FLAG),
            (|files, pki, _| files.peer_client_key_file = Some(pki.join("ca.crt")), PEER_KEY_FLAG),
        ];
        for (index, (break_files, expected)) in cases.into_iter().enumerate() {
            let mut explicit = explicit_options(&pki, &certs);
            break_files(&mut explicit.files, &pki, &certs);
            let err = format!("{:#}", load(&explicit).expect_err("unusable file"));
            assert!(err.contains(expected), "case {index}: {err}");
        }
    }
}
