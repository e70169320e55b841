//! APIExport identities: a random secret per export, and its hash in `status.identityHash`.
//!
//! Objects of a bound resource are stored under the identity hash of the export they
//! were bound through, so two exports of the same group and resource never share objects,
//! and only whoever holds an export's secret can prove to own that identity.
//!
//! The secret (32 random bytes) lives in the shard's store at
//! [`identity_key`]`(cluster, name)` = `internal/apiexport-identities/<cluster>/<name>`,
//! as JSON `{"key": "<base64>"}`. No registry row covers the `internal/` prefix, so no
//! REST request, list, watch or replication ever reads it. It is written before the export
//! itself, and kept when the export (or its whole logical cluster) is deleted: an export
//! re-created under the same name gets its old identity back and with it the objects
//! stored under it, as kcp keeps the identity secret. The cost is one small record per
//! export name ever created.
//!
//! `status.identityHash` is the lowercase hex SHA-256 of the secret. Once set on create it
//! never changes: [`keep_identity_hash`] restores it on every update, patch and status
//! write.

use apiserver::registry::Core;
use apiserver::rest::status::{ApiError, ApiResult};
use base64::Engine;
use protocol::meta;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use store::{Precondition, StoreError};
use tracing::Instrument;

/// Key prefix of the identity secrets in the shard's store.
pub const IDENTITY_KEY_PREFIX: &str = "internal/apiexport-identities/";
/// Length of a generated identity secret.
pub const SECRET_BYTES: usize = 32;

/// An export's identity: the secret and the hash published in its status.
#[derive(Clone, PartialEq, Eq)]
pub struct ExportIdentity {
    /// The secret key; never leaves the shard.
    pub secret: Vec<u8>,
    /// Lowercase hex SHA-256 of `secret`.
    pub hash: String,
}

// The secret stays out of logs and panic messages.
impl std::fmt::Debug for ExportIdentity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExportIdentity").field("hash", &self.hash).finish_non_exhaustive()
    }
}

impl ExportIdentity {
    /// The identity of a secret.
    pub fn from_secret(secret: Vec<u8>) -> Self {
        let hash = identity_hash(&secret);
        ExportIdentity { secret, hash }
    }

    /// A fresh random identity.
    pub fn generate() -> Self {
        Self::from_secret(rand::random::<[u8; SECRET_BYTES]>().to_vec())
    }
}

/// The store key of the identity secret of export `name` in logical cluster `cluster`.
pub fn identity_key(cluster: &str, name: &str) -> String {
    debug_assert!(!cluster.contains('/') && !name.contains('/'), "validated names only");
    format!("{IDENTITY_KEY_PREFIX}{cluster}/{name}")
}

/// Lowercase hex SHA-256 of an identity secret.
pub fn identity_hash(secret: &[u8]) -> String {
    Sha256::digest(secret).iter().map(|byte| format!("{byte:02x}")).collect()
}

/// Whether `hash` looks like an identity hash (64 lowercase hex digits).
#[cfg(test)]
fn is_identity_hash(hash: &str) -> bool {
    hash.len() == 64 && hash.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// The stored form of a secret.
pub fn encode_secret(secret: &[u8]) -> Vec<u8> {
    json!({"key": base64::engine::general_purpose::STANDARD.encode(secret)}).to_string().into_bytes()
}

/// The secret in a stored record.
pub fn decode_secret(bytes: &[u8]) -> Result<Vec<u8>, String> {
    let record: Value = serde_json::from_slice(bytes).map_err(|e| format!("not JSON: {e}"))?;
    let key = record.get("key").and_then(Value::as_str).ok_or("no \"key\" field")?;
    let secret = base64::engine::general_purpose::STANDARD.decode(key).map_err(|e| format!("bad base64: {e}"))?;
    if secret.is_empty() {
        return Err("empty key".into());
    }
    Ok(secret)
}

/// Puts the stored `status.identityHash` back into an update of an export (whatever the
/// update says, also through the status subresource); an export stored without one stays
/// without one.
pub fn keep_identity_hash(old: &Value, new: &mut Value) {
    let kept = old.pointer("/status/identityHash").cloned();
    let Some(map) = new.as_object_mut() else { return };
    let status = map.entry("status").or_insert_with(|| json!({}));
    if !status.is_object() {
        *status = json!({});
    }
    if let Some(status) = status.as_object_mut() {
        match kept {
            Some(hash) => status.insert("identityHash".into(), hash),
            None => status.remove("identityHash"),
        };
    }
}

/// Reads the identity of export `name` in `cluster`, if one was ever created.
pub fn read(shard: &Core, cluster: &str, name: &str) -> ApiResult<Option<ExportIdentity>> {
    let key = identity_key(cluster, name);
    let Some(stored) = shard.store.get(key.as_bytes()).map_err(ApiError::from)? else { return Ok(None) };
    let secret = decode_secret(&stored.value).map_err(|problem| {
        ApiError::internal(format!("the identity of APIExport {name:?} in logical cluster {cluster} is unreadable ({problem}); its record is {key}"))
    })?;
    Ok(Some(ExportIdentity::from_secret(secret)))
}

/// The identity of export `name` in `cluster`: the stored one, else a new one, stored
/// (unless `dry_run`) before it is returned. Concurrent creates of the same export agree
/// on one identity: the loser of the store's must-not-exist race reads the winner's.
pub async fn ensure(shard: &Core, cluster: &str, name: &str, dry_run: bool) -> ApiResult<ExportIdentity> {
    if let Some(identity) = read(shard, cluster, name)? {
        return Ok(identity);
    }
    let identity = ExportIdentity::generate();
    if dry_run {
        return Ok(identity);
    }
    let key = identity_key(cluster, name);
    match shard.store.put(key, encode_secret(&identity.secret), Precondition::MustNotExist).await {
        Ok(_) => {
            tracing::info!(cluster, export = name, identity_hash = %identity.hash, "generated APIExport identity");
            Ok(identity)
        }
        Err(StoreError::AlreadyExists) => read(shard, cluster, name)?
            .ok_or_else(|| ApiError::internal(format!("the identity of APIExport {name:?} vanished while created"))),
        Err(e) => Err(e.into()),
    }
}

/// Admission of a new APIExport in `cluster`: its identity (reused if the name had one)
/// goes into `status.identityHash`. Runs after validation, so the name is valid.
pub async fn admit_export(shard: &Core, cluster: &str, export: &mut Value, dry_run: bool) -> ApiResult<()> {
    let name = meta::name(export).unwrap_or_default().to_string();
    let span = tracing::debug_span!("apis.admit_export", cluster, export = %name, dry_run);
    let identity = ensure(shard, cluster, &name, dry_run).instrument(span).await?;
    let Some(map) = export.as_object_mut() else {
        return Err(ApiError::bad_request("an APIExport must be a JSON object"));
    };
    let status = map.entry("status").or_insert_with(|| json!({}));
    if !status.is_object() {
        *status = json!({});
    }
    status["identityHash"] = Value::from(identity.hash);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hash_is_lowercase_hex_sha256() {
        // SHA-256 of the empty input and of "abc", as published in FIPS 180-2.
        assert_eq!(identity_hash(b""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
        assert_eq!(identity_hash(b"abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
        let identity = ExportIdentity::generate();
        assert_eq!(identity.secret.len(), SECRET_BYTES);
        assert!(is_identity_hash(&identity.hash), "{}", identity.hash);
        assert_ne!(ExportIdentity::generate(), identity, "fresh randomness each time");
        assert!(!format!("{identity:?}").contains("secret"), "the secret stays out of Debug");
    }

    #[test]
    fn secrets_round_trip_through_their_record() {
        let secret = vec![0u8, 1, 2, 250, 255];
        assert_eq!(decode_secret(&encode_secret(&secret)).unwrap(), secret);
        for bad in [&b"nope"[..], br#"{"key": 3}"#, br#"{"key": "%%"}"#, br#"{"key": ""}"#] {
            assert!(decode_secret(bad).is_err(), "{}", String::from_utf8_lossy(bad));
        }
        assert_eq!(identity_key("c1", "widgets"), "internal/apiexport-identities/c1/widgets");
    }

    #[test]
    fn updates_never_change_the_hash() {
        let hash = "a".repeat(64);
        let old = json!({"status": {"identityHash": hash}});
        let cases = [
            json!({"status": {"identityHash": "b".repeat(64)}}),
            json!({"status": {}}),
            json!({}),
            json!({"status": "garbage"}),
        ];
        for mut new in cases {
            keep_identity_hash(&old, &mut new);
            assert_eq!(new["status"]["identityHash"], hash);
        }
        let mut forged = json!({"status": {"identityHash": "c"}});
        keep_identity_hash(&json!({}), &mut forged);
        assert!(forged["status"].get("identityHash").is_none(), "no hash is invented after create");
    }
}
