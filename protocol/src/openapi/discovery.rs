//! `GET /openapi/v3`: the discovery root that points at each group-version document, and
//! the content hash that makes its URLs cache-busting.

use std::collections::BTreeMap;

use serde_json::{json, Value};

/// The `/openapi/v3` discovery document: `{"paths": {"api/v1": {"serverRelativeURL":
/// "/openapi/v3/api/v1?hash=…"}, …}}`.
///
/// `paths` yields `(path, hash)` pairs such as `("apis/coordination.k8s.io/v1", hash)`;
/// leading and trailing slashes are ignored. The hash must be URL-safe (e.g. from
/// [`document_hash`]); clients use the whole URL as a cache key, so it has to change
/// whenever the document does.
///
/// The URL deliberately lacks the logical cluster's `/clusters/<name>` prefix. client-go
/// (`openapi/client.go` since kubernetes#117495, in kubectl v1.32) fetches a URL that
/// starts with `/openapi/v3` through `AbsPath`, which prepends the path of the kubeconfig
/// server URL
/// (`https://host/clusters/root` → `/clusters/root/openapi/v3/api/v1?hash=…`). Any other
/// URL is used verbatim as a server-absolute request URI, which would bake the shard's own
/// view of the path into the document and break behind the front-proxy, where the user's
/// path (`/clusters/root:org:team`) differs from the shard's.
pub fn discovery_root(paths: impl IntoIterator<Item = (String, String)>) -> Value {
    let entries: BTreeMap<String, Value> = paths
        .into_iter()
        .map(|(path, hash)| {
            let path = path.trim_matches('/').to_owned();
            let url = format!("/openapi/v3/{path}?hash={hash}");
            (path, json!({ "serverRelativeURL": url }))
        })
        .collect();
    json!({ "paths": entries })
}

/// A stable content hash of a serialized document, as 16 upper-case hex digits.
///
/// FNV-1a (64 bit) over the bytes the server will send: deterministic across processes and
/// builds, which is all a cache-busting `?hash=` needs. It is not collision resistant and
/// must not be used where an adversary picks the input.
pub fn document_hash(document_bytes: &[u8]) -> String {
    const OFFSET_BASIS: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    let hash = document_bytes.iter().fold(OFFSET_BASIS, |hash, byte| (hash ^ u64::from(*byte)).wrapping_mul(PRIME));
    format!("{hash:016X}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn discovery_root_urls_are_rooted_at_openapi_v3() {
        let root = discovery_root([
            ("api/v1".to_owned(), "ABC".to_owned()),
            ("/apis/coordination.k8s.io/v1".to_owned(), "DEF".to_owned()),
        ]);
        assert_eq!(
            root,
            json!({"paths": {
                "api/v1": {"serverRelativeURL": "/openapi/v3/api/v1?hash=ABC"},
                "apis/coordination.k8s.io/v1": {"serverRelativeURL": "/openapi/v3/apis/coordination.k8s.io/v1?hash=DEF"}
            }})
        );
    }

    #[test]
    fn document_hash_is_stable_and_content_sensitive() {
        assert_eq!(document_hash(b""), "CBF29CE484222325");
        assert_eq!(document_hash(b"a"), document_hash(b"a"));
        assert_ne!(document_hash(b"{\"a\":1}"), document_hash(b"{\"a\":2}"));
    }
}
