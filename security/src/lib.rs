//! Security primitives shared by every Atoll process (shard, front-proxy, cache server):
//! the installation's PKI ([`pki`]), the rustls configurations built from it ([`tls`]),
//! and request authentication ([`authn`]): client certificates, bearer tokens and the
//! identity headers the front-proxy forwards ([`identity_headers`]); and the HTTPS
//! listener they all run ([`https`]), with their log set-up and stop signal
//! ([`process`]); and the mutual-TLS gRPC client they call each other with ([`grpc`]).
//!
//! Pure apart from reading and writing certificate and token files, and [`https`].

pub mod authn;
pub mod grpc;
pub mod https;
pub mod identity_headers;
pub mod pki;
pub mod process;
pub mod tls;
