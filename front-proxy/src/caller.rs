//! An authenticated caller of the front-proxy, with the identity headers that carry it to
//! shards.

use http::{HeaderName, HeaderValue};
use security::authn::{AuthnError, Identity};
use security::identity_headers;

/// An authenticated caller with the identity headers that carry it to shards, encoded
/// once (per connection, for certificates).
#[derive(Debug)]
pub struct Caller {
    /// Who is calling.
    pub identity: Identity,
    headers: Vec<(HeaderName, HeaderValue)>,
}

impl Caller {
    pub fn new(identity: Identity) -> Result<Caller, AuthnError> {
        let headers = identity_headers::encode(&identity)?;
        Ok(Caller { identity, headers })
    }

    /// The identity headers that carry this caller to shards.
    pub fn headers(&self) -> &[(HeaderName, HeaderValue)] {
        &self.headers
    }
}
