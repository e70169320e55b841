//! Reading certificates back: PEM and DER conversion, parsing with x509-parser, and the
//! checks made on a parsed certificate (does a key match it, which SANs does it lack, whom
//! does its subject name).

use std::collections::BTreeSet;
use std::net::IpAddr;

use anyhow::ensure;
use base64::Engine;
use rcgen::KeyPair;
use x509_parser::certificate::X509Certificate;
use x509_parser::extensions::GeneralName;

/// The hosts in `required` that the certificate's SANs do not name.
pub(super) fn missing_sans(cert: &X509Certificate<'_>, required: &[String]) -> Vec<String> {
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

/// The subject's common names and organizations, in the order they appear. Attributes
/// that are not UTF-8 or printable strings are skipped; such a subject matches no
/// identity we issue, which is what callers comparing against one want.
pub(super) fn subject_names(cert: &X509Certificate<'_>) -> (Vec<String>, Vec<String>) {
    let text = |attribute: &x509_parser::x509::AttributeTypeAndValue<'_>| attribute.as_str().ok().map(str::to_owned);
    let subject = cert.subject();
    (subject.iter_common_name().filter_map(text).collect(), subject.iter_organization().filter_map(text).collect())
}

pub(super) fn key_matches(cert: &X509Certificate<'_>, key: &KeyPair) -> bool {
    cert.public_key().subject_public_key.data.as_ref() == key.public_key_raw()
}

pub(super) fn parse_der(der: &[u8]) -> anyhow::Result<X509Certificate<'_>> {
    let (_, cert) =
        x509_parser::parse_x509_certificate(der).map_err(|err| anyhow::anyhow!("parse X.509 certificate: {err}"))?;
    Ok(cert)
}

/// The DER of the first `CERTIFICATE` block in `pem`.
pub(super) fn pem_to_der(pem: &str) -> anyhow::Result<Vec<u8>> {
    let (_, block) =
        x509_parser::pem::parse_x509_pem(pem.as_bytes()).map_err(|err| anyhow::anyhow!("parse PEM: {err}"))?;
    ensure!(block.label == "CERTIFICATE", "expected a CERTIFICATE PEM block, found {}", block.label);
    Ok(block.contents)
}

pub(super) fn der_to_pem(label: &str, der: &[u8]) -> String {
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
