//! Minting certificates with rcgen: the CAs, the serving certificate with the SANs it
//! must carry, and client certificates whose subject names a user and its groups; also the
//! lifetimes they are minted with.

use std::collections::BTreeSet;
use std::net::IpAddr;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{ensure, Context};
use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};

use super::der;
use super::x509::{der_to_pem, parse_der, pem_to_der};

const DAY_SECS: u64 = 24 * 60 * 60;
const CA_VALIDITY: Duration = Duration::from_secs(10 * 365 * DAY_SECS);
const LEAF_VALIDITY: Duration = Duration::from_secs(365 * DAY_SECS);
/// Leaves this close to expiry are reissued on start, so a shard restarted now and then
/// never serves an expired certificate.
pub(super) const LEAF_RENEW_BEFORE: Duration = Duration::from_secs(30 * DAY_SECS);
/// Certificates start an hour in the past: a client whose clock runs slightly behind
/// would otherwise reject a certificate minted a moment ago as "not yet valid".
const CLOCK_SKEW_ALLOWANCE: Duration = Duration::from_secs(60 * 60);

/// Names every serving certificate covers, so local tools work whatever `hosts` says.
const ALWAYS_SERVED_HOSTS: [&str; 3] = ["localhost", "127.0.0.1", "::1"];
const SERVING_COMMON_NAME: &str = "atoll-shard";

/// A certificate with its private key; for a CA, the key that signs leaves.
pub(super) struct CertifiedKey {
    pub(super) cert_pem: String,
    pub(super) key: KeyPair,
}

impl CertifiedKey {
    pub(super) fn cert_der(&self) -> anyhow::Result<Vec<u8>> {
        pem_to_der(&self.cert_pem)
    }

    fn issuer(&self) -> anyhow::Result<Issuer<'static, &KeyPair>> {
        Issuer::from_ca_cert_pem(&self.cert_pem, &self.key).context("parse CA certificate")
    }
}

/// Normalises `hosts` into the SAN strings the serving certificate must carry: IP
/// addresses in canonical form (brackets stripped, so `[::1]` works), names lowercased,
/// duplicates dropped, and the always-served local names added.
pub(super) fn served_hosts(hosts: &[String]) -> anyhow::Result<Vec<String>> {
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

pub(super) fn create_ca(common_name_prefix: &str) -> anyhow::Result<CertifiedKey> {
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

pub(super) fn issue_serving_cert(ca: &CertifiedKey, sans: &[String]) -> anyhow::Result<CertifiedKey> {
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
pub(super) fn issue_client_cert_with(ca: &CertifiedKey, user: &str, groups: &[String]) -> anyhow::Result<CertifiedKey> {
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

pub(super) fn unix_now() -> i64 {
    let since_epoch = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
    secs_i64(since_epoch)
}

pub(super) fn secs_i64(duration: Duration) -> i64 {
    i64::try_from(duration.as_secs()).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pki::test_support::{hosts, options};
    use crate::pki::x509::key_matches;
    use crate::pki::{issue_client_cert, load};

    #[test]
    fn served_hosts_normalises_and_adds_local_names() {
        let served = served_hosts(&hosts(&["Shard-1.Example", "[fe80::1]", "10.0.0.1", "::1"])).expect("valid hosts");
        assert_eq!(served, hosts(&["10.0.0.1", "127.0.0.1", "::1", "fe80::1", "localhost", "shard-1.example"]));
        assert!(served_hosts(&hosts(&["host:6443"])).is_err());
        assert!(served_hosts(&hosts(&[""])).is_err());
    }

    #[test]
    fn client_certificates_carry_every_group_and_chain_to_the_client_ca() {
        let dir = tempfile::tempdir().expect("tempdir");
        let pki_dir = dir.path().join("pki");
        let material = load(&options(&pki_dir, &dir.path().join("certs"), "shard-1", &[])).expect("create");
        let groups = hosts(&["dev", "ops", "system:nodes"]);
        let (cert_pem, key_pem) = issue_client_cert(&pki_dir, "alice", &groups).expect("issue");
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

        assert!(issue_client_cert(&pki_dir, "", &[]).is_err());
        let empty = tempfile::tempdir().expect("tempdir");
        assert!(issue_client_cert(empty.path(), "bob", &[]).is_err());
    }
}
