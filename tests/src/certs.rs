//! Client certificates for users other than the admin.
//!
//! Authentication and RBAC tests need requests from ordinary users. Kubernetes takes a
//! client certificate's common name as the user name and its organizations as groups, so
//! a certificate signed by the shard's client CA (`DIR/pki/client-ca.{crt,key}`) is a
//! complete identity.

use anyhow::Context;
use rcgen::{CertificateParams, DnType, ExtendedKeyUsagePurpose, Issuer, KeyPair};

use crate::tls_http::ClientIdentity;

/// Signs a fresh client certificate for `user` in `groups` with the given CA.
///
/// At most one group is supported: rcgen keeps one value per subject attribute, so a
/// second organization would silently replace the first, which would make a test pass
/// for the wrong reason.
pub fn mint_client_identity(
    ca_cert_pem: &str,
    ca_key_pem: &str,
    user: &str,
    groups: &[&str],
) -> anyhow::Result<ClientIdentity> {
    anyhow::ensure!(groups.len() <= 1, "mint a certificate for {user}: at most one group is supported, got {groups:?}");
    let ca_key = KeyPair::from_pem(ca_key_pem).context("parse client CA key")?;
    let issuer = Issuer::from_ca_cert_pem(ca_cert_pem, ca_key).context("parse client CA")?;
    let mut params = CertificateParams::new(Vec::<String>::new()).context("start params")?;
    params.distinguished_name.push(DnType::CommonName, user);
    if let Some(group) = groups.first() {
        params.distinguished_name.push(DnType::OrganizationName, *group);
    }
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
    let key = KeyPair::generate().context("generate client key")?;
    let cert = params.signed_by(&key, &issuer).with_context(|| format!("sign client certificate for {user}"))?;
    Ok(ClientIdentity { cert_pem: cert.pem(), key_pem: key.serialize_pem() })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rcgen::{BasicConstraints, IsCa};

    #[test]
    fn minted_certificate_names_user_and_group() {
        let ca_key = KeyPair::generate().unwrap();
        let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca_params.distinguished_name.push(DnType::CommonName, "test-ca");
        let ca = ca_params.self_signed(&ca_key).unwrap();

        let identity = mint_client_identity(&ca.pem(), &ca_key.serialize_pem(), "alice", &["dev"]).unwrap();
        assert!(identity.cert_pem.starts_with("-----BEGIN CERTIFICATE-----"));
        assert!(identity.key_pem.contains("PRIVATE KEY"));
        assert!(mint_client_identity(&ca.pem(), &ca_key.serialize_pem(), "bob", &["a", "b"]).is_err());
    }
}
