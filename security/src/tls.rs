//! The rustls server configuration of the shard's HTTPS listener.
//!
//! Client certificates are optional at the TLS layer: bearer-token users and
//! unauthenticated probes must still complete the handshake so that they get a
//! Kubernetes `Status` 401 rather than a TLS alert no client explains well. A
//! certificate that *is* presented must chain to the client CA, or the handshake fails.
//! Authentication proper happens per request in [`crate::authn`].

use std::sync::Arc;

use anyhow::Context;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::WebPkiClientVerifier;
use rustls::{ClientConfig, RootCertStore, ServerConfig, ServerConnection};

use crate::pki::ServingMaterial;

/// Builds the listener's TLS configuration from `material`.
///
/// The ring provider is named explicitly rather than taken from the process-wide
/// default, which rustls panics over when it cannot tell which provider to use (none
/// installed and both or neither of ring and aws-lc-rs compiled in).
pub fn server_config(material: &ServingMaterial) -> anyhow::Result<Arc<ServerConfig>> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());

    // The front-proxy CA is trusted at the TLS layer too; the authenticator then tells the
    // two apart, taking identity headers only from front-proxy certificates.
    let mut client_roots = RootCertStore::empty();
    for cert in parse_certificates(&material.client_ca_cert_pem).context("read client CA")? {
        client_roots.add(cert).context("add client CA to the trust store")?;
    }
    if let Some(front_proxy_ca) = &material.front_proxy_ca_cert_pem {
        for cert in parse_certificates(front_proxy_ca).context("read front-proxy CA")? {
            client_roots.add(cert).context("add front-proxy CA to the trust store")?;
        }
    }
    let client_verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(client_roots), provider.clone())
        .allow_unauthenticated()
        .build()
        .context("build client certificate verifier")?;

    let chain = parse_certificates(&material.serving_cert_pem).context("read serving cert")?;
    let key = PrivateKeyDer::from_pem_slice(material.serving_key_pem.as_bytes()).context("parse serving key")?;

    let mut config = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .context("select TLS protocol versions")?
        .with_client_cert_verifier(client_verifier)
        .with_single_cert(chain, key)
        .context("load serving certificate and key")?;
    // h2 first: kubectl and kube-rs multiplex watches over one connection when offered.
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// A client configuration that trusts `ca_pem` and, when given, presents
/// `client_cert` = (certificate PEM, key PEM); `alpn` lists the protocols to offer
/// (`h2` for gRPC, `http/1.1` for pooled REST connections).
pub fn client_config(
    ca_pem: &str,
    client_cert: Option<(&str, &str)>,
    alpn: &[&[u8]],
) -> anyhow::Result<Arc<ClientConfig>> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut roots = RootCertStore::empty();
    for cert in parse_certificates(ca_pem).context("read the server CA")? {
        roots.add(cert).context("add the server CA to the trust store")?;
    }
    let builder = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .context("select TLS protocol versions")?
        .with_root_certificates(roots);
    let mut config = match client_cert {
        None => builder.with_no_client_auth(),
        Some((cert_pem, key_pem)) => builder
            .with_client_auth_cert(
                parse_certificates(cert_pem).context("read the client certificate")?,
                PrivateKeyDer::from_pem_slice(key_pem.as_bytes()).context("parse the client key")?,
            )
            .context("load the client certificate and key")?,
    };
    config.alpn_protocols = alpn.iter().map(|protocol| protocol.to_vec()).collect();
    Ok(Arc::new(config))
}

/// The DER of the client's leaf certificate, if it presented one. rustls has already
/// verified it against the client CA by the time the handshake completes, so this is
/// what [`crate::authn::Authenticator::authenticate`] expects.
pub fn client_certificate_der(connection: &ServerConnection) -> Option<&[u8]> {
    connection.peer_certificates().and_then(|chain| chain.first()).map(|cert| cert.as_ref())
}

/// Every certificate in `pem`, in order; an error when there is none.
pub fn parse_certificates(pem: &str) -> anyhow::Result<Vec<CertificateDer<'static>>> {
    let certs = CertificateDer::pem_slice_iter(pem.as_bytes())
        .collect::<Result<Vec<_>, _>>()
        .context("parse PEM certificates")?;
    anyhow::ensure!(!certs.is_empty(), "no certificate in PEM text");
    Ok(certs)
}

#[cfg(test)]
mod tests {
    use std::io::{Read, Write};

    use rustls::pki_types::ServerName;
    use rustls::ClientConnection;

    use super::*;
    use crate::authn::identity_from_certificate;
    use crate::pki;

    /// Runs a whole handshake in memory and exchanges one message each way, so a
    /// rejected client certificate surfaces as an error here.
    fn handshake(
        server: Arc<ServerConfig>,
        client: Arc<ClientConfig>,
        server_name: &str,
    ) -> anyhow::Result<ServerConnection> {
        let name = ServerName::try_from(server_name.to_owned())?;
        let mut client = ClientConnection::new(client, name)?;
        let mut server = ServerConnection::new(server)?;
        client.writer().write_all(b"ping")?;
        for _ in 0..20 {
            let mut buffer = Vec::new();
            client.write_tls(&mut buffer)?;
            server.read_tls(&mut buffer.as_slice())?;
            server.process_new_packets()?;
            let mut buffer = Vec::new();
            server.write_tls(&mut buffer)?;
            client.read_tls(&mut buffer.as_slice())?;
            client.process_new_packets()?;
            if !client.is_handshaking() && !server.is_handshaking() {
                let mut received = [0u8; 4];
                if server.reader().read_exact(&mut received).is_ok() {
                    anyhow::ensure!(&received == b"ping");
                    return Ok(server);
                }
            }
        }
        anyhow::bail!("handshake did not finish")
    }

    #[test]
    fn admin_certificate_is_verified_and_yields_the_admin_identity() {
        let dir = tempfile::tempdir().expect("tempdir");
        let material = pki::load_or_create(dir.path(), &[]).expect("pki");
        let server = server_config(&material).expect("server config");
        let client =
            client_config(&material.ca_cert_pem, Some((&material.admin_cert_pem, &material.admin_key_pem)), &[b"h2"])
                .expect("client config");
        for server_name in ["localhost", "127.0.0.1", "::1"] {
            let connection = handshake(server.clone(), client.clone(), server_name).expect("handshake");
            assert_eq!(connection.alpn_protocol(), Some(&b"h2"[..]));
            let der = client_certificate_der(&connection).expect("client cert");
            let identity = identity_from_certificate(der).expect("identity");
            assert_eq!(identity.user, "admin");
            assert!(identity.is_master());
        }
    }

    #[test]
    fn clients_without_certificates_are_let_through_to_authn() {
        let dir = tempfile::tempdir().expect("tempdir");
        let material = pki::load_or_create(dir.path(), &[]).expect("pki");
        let server = server_config(&material).expect("server config");
        let client = client_config(&material.ca_cert_pem, None, &[b"h2"]).expect("client config");
        let connection = handshake(server, client, "localhost").expect("handshake");
        assert_eq!(client_certificate_der(&connection), None);
    }

    #[test]
    fn foreign_client_certificates_and_unlisted_names_fail_the_handshake() {
        let ours = tempfile::tempdir().expect("tempdir");
        let theirs = tempfile::tempdir().expect("tempdir");
        let material = pki::load_or_create(ours.path(), &[]).expect("pki");
        let foreign = pki::load_or_create(theirs.path(), &[]).expect("pki");
        let server = server_config(&material).expect("server config");

        let impostor =
            client_config(&material.ca_cert_pem, Some((&foreign.admin_cert_pem, &foreign.admin_key_pem)), &[b"h2"])
                .expect("client config");
        assert!(handshake(server.clone(), impostor, "localhost").is_err());

        let anonymous = client_config(&material.ca_cert_pem, None, &[b"h2"]).expect("client config");
        assert!(handshake(server, anonymous, "elsewhere.example").is_err());
    }
}
