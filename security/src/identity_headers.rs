//! The identity headers a front-proxy sends with each request it forwards, as in
//! kube-apiserver's request-header authenticator: `X-Remote-User`, `X-Remote-Uid`,
//! `X-Remote-Group` (repeated) and `X-Remote-Extra-<key>` (key percent-encoded).
//!
//! A shard reads them only on connections whose client certificate the front-proxy CA
//! signed ([`crate::authn::CertificateCaller::FrontProxy`]) and whose name is allowed
//! (`--requestheader-allowed-names`); the front-proxy removes every such header a client
//! sent ([`is_identity_header`]) before adding its own.
//!
//! kube's impersonation headers (`Impersonate-User`, …) are not identity headers: they
//! ask to act as someone else and are not believed, but authorized. The front-proxy
//! passes them through unchanged, and the shard checks them against the real caller these
//! headers name (`shard::authz::impersonation`).

use std::collections::BTreeMap;

use http::{HeaderMap, HeaderName, HeaderValue};

use crate::authn::{AuthnError, Identity, ANONYMOUS_USER, AUTHENTICATED_GROUP};

/// The user name.
pub const REMOTE_USER: &str = "x-remote-user";
/// The user's UID, when it has one.
pub const REMOTE_UID: &str = "x-remote-uid";
/// One header per group.
pub const REMOTE_GROUP: &str = "x-remote-group";
/// Prefix of the extra attributes; the rest of the name is the percent-encoded key.
pub const REMOTE_EXTRA_PREFIX: &str = "x-remote-extra-";

/// Whether a client-sent header claims an identity: the `X-Remote-*` family, which a
/// shard believes from the front-proxy. The front-proxy never forwards these from a
/// client. Impersonation headers are not among them: they are a request the shard
/// authorizes (as kube-apiserver's front-proxy passes them on to it).
pub fn is_identity_header(name: &HeaderName) -> bool {
    name.as_str().starts_with("x-remote-")
}

/// The headers that carry `identity` to a shard. `system:authenticated` is left out: the
/// shard adds it to every identity.
pub fn encode(identity: &Identity) -> Result<Vec<(HeaderName, HeaderValue)>, AuthnError> {
    let value = |text: &str| {
        HeaderValue::from_str(text).map_err(|_| AuthnError::InvalidIdentityHeaders {
            reason: format!("{text:?} cannot be sent in an HTTP header"),
        })
    };
    let mut headers = vec![(HeaderName::from_static(REMOTE_USER), value(&identity.user)?)];
    if !identity.uid.is_empty() {
        headers.push((HeaderName::from_static(REMOTE_UID), value(&identity.uid)?));
    }
    for group in identity.groups.iter().filter(|group| *group != AUTHENTICATED_GROUP) {
        headers.push((HeaderName::from_static(REMOTE_GROUP), value(group)?));
    }
    for (key, values) in &identity.extra {
        let name = HeaderName::from_bytes(format!("{REMOTE_EXTRA_PREFIX}{}", encode_key(key)).as_bytes())
            .map_err(|_| AuthnError::InvalidIdentityHeaders { reason: format!("extra key {key:?}") })?;
        for text in values {
            headers.push((name.clone(), value(text)?));
        }
    }
    Ok(headers)
}

/// The identity a front-proxy named in `headers`; `Ok(None)` when `X-Remote-User` is
/// absent.
pub fn decode(headers: &HeaderMap) -> Result<Option<Identity>, AuthnError> {
    let text = |value: &HeaderValue| {
        value
            .to_str()
            .map(str::to_owned)
            .map_err(|_| AuthnError::InvalidIdentityHeaders { reason: "identity headers must be visible ASCII".into() })
    };
    let users = headers.get_all(REMOTE_USER).iter().map(text).collect::<Result<Vec<_>, _>>()?;
    let user = match users.as_slice() {
        [] => return Ok(None),
        [user] if !user.is_empty() => user.clone(),
        [_] => return Err(AuthnError::InvalidIdentityHeaders { reason: "X-Remote-User is empty".into() }),
        _ => return Err(AuthnError::InvalidIdentityHeaders { reason: "X-Remote-User is repeated".into() }),
    };
    if user == ANONYMOUS_USER {
        return Ok(Some(Identity::anonymous()));
    }
    let uid = headers.get(REMOTE_UID).map(text).transpose()?.unwrap_or_default();
    let groups = headers.get_all(REMOTE_GROUP).iter().map(text).collect::<Result<Vec<_>, _>>()?;
    let mut extra: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (name, value) in headers {
        if let Some(key) = name.as_str().strip_prefix(REMOTE_EXTRA_PREFIX) {
            extra.entry(decode_key(key)).or_default().push(text(value)?);
        }
    }
    let mut identity = Identity::new(user, uid, groups);
    identity.extra = extra;
    Ok(Some(identity))
}

/// Extra keys travel in header names, which allow fewer characters than keys: kube
/// lower-cases them and percent-encodes everything but unreserved URL characters.
fn encode_key(key: &str) -> String {
    let mut out = String::with_capacity(key.len());
    for byte in key.to_lowercase().bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~') {
            out.push(byte as char);
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

fn decode_key(encoded: &str) -> String {
    protocol::path::percent_decode(encoded).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header_map(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.append(
                HeaderName::from_bytes(name.as_bytes()).expect("name"),
                HeaderValue::from_str(value).expect("v"),
            );
        }
        map
    }

    #[test]
    fn identities_round_trip_through_headers() {
        let mut identity = Identity::new("alice", "u-1", ["dev".to_owned(), "ops".to_owned()]);
        identity.extra.insert("scopes.example.com/Team Name".into(), vec!["a".into(), "b".into()]);
        let mut map = HeaderMap::new();
        for (name, value) in encode(&identity).expect("encode") {
            map.append(name, value);
        }
        assert_eq!(map.get_all(REMOTE_GROUP).iter().count(), 2, "system:authenticated is not sent");
        assert!(map.contains_key("x-remote-extra-scopes.example.com%2Fteam%20name"));
        let mut want = identity.clone();
        want.extra = BTreeMap::from([("scopes.example.com/team name".to_owned(), vec!["a".into(), "b".into()])]);
        assert_eq!(decode(&map).expect("decode"), Some(want));
    }

    #[test]
    fn decoding_table() {
        type Want = Result<Option<(&'static str, &'static [&'static str])>, ()>;
        let cases: [(&[(&str, &str)], Want); 5] = [
            (&[], Ok(None)),
            (&[("x-remote-group", "dev")], Ok(None)),
            (&[("x-remote-user", "bob")], Ok(Some(("bob", &["system:authenticated"])))),
            (&[("x-remote-user", "")], Err(())),
            (&[("x-remote-user", "a"), ("x-remote-user", "b")], Err(())),
        ];
        for (pairs, want) in cases {
            let got = decode(&header_map(pairs)).map(|identity| identity.map(|i| (i.user, i.groups))).map_err(|_| ());
            let want = want.map(|o| o.map(|(u, g)| (u.to_owned(), g.iter().map(|s| (*s).to_owned()).collect())));
            assert_eq!(got, want, "{pairs:?}");
        }
    }

    #[test]
    fn identity_headers_are_recognised_in_any_case() {
        for name in ["X-Remote-User", "x-remote-group", "X-Remote-Extra-Foo"] {
            assert!(is_identity_header(&HeaderName::from_bytes(name.as_bytes()).expect("name")), "{name}");
        }
        // Impersonation is authorized by the shard, so the proxy passes it on.
        for name in ["authorization", "x-remote", "remote-user", "accept", "Impersonate-User", "impersonate-extra-a"] {
            assert!(!is_identity_header(&HeaderName::from_bytes(name.as_bytes()).expect("name")), "{name}");
        }
    }
}
