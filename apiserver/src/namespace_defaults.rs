//! What kube's controllers put in every namespace: a `default` ServiceAccount (the
//! service-account controller) and the `kube-root-ca.crt` ConfigMap holding the CA that
//! verifies the API server (the root-CA publisher). An empty workspace must not cost more
//! for them, so they are not stored: the ServiceAccount and ConfigMap strategies serve
//! them as present in every namespace until they are first written, when the write
//! stores them ([`crate::storage`] handles objects at [`IMPLICIT_RV`]). Deleting one stores
//! a fresh one with a new uid, as kube's controllers recreate it at once.
//! Pure: objects built from the namespace they live in.

use protocol::meta;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

/// The resourceVersion of an object served but not stored.
pub const IMPLICIT_RV: u64 = 0;
/// The ServiceAccount every namespace has.
pub const DEFAULT_SERVICE_ACCOUNT: &str = "default";
/// The ConfigMap every namespace has, holding the installation's CA.
pub const ROOT_CA_CONFIG_MAP: &str = "kube-root-ca.crt";
/// kube's description of the root CA ConfigMap.
const ROOT_CA_DESCRIPTION: &str = "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes clusters.";

/// A stable uid for an implicit object: the same on every read, on every shard, until the
/// object is written (which keeps it).
fn uid(cluster: &str, namespace: &str, kind: &str, name: &str) -> String {
    let digest = Sha256::digest(format!("{cluster}/{namespace}/{kind}/{name}"));
    let mut bytes = [0u8; 16];
    bytes.copy_from_slice(&digest[..16]);
    uuid::Builder::from_sha1_bytes(bytes).into_uuid().to_string()
}

/// Metadata of an implicit object in `namespace`: born with it, at its resourceVersion.
fn metadata(cluster: &str, namespace: &Value, kind: &str, name: &str) -> Value {
    let ns = meta::name(namespace).unwrap_or_default();
    json!({
        "name": name,
        "namespace": ns,
        "uid": uid(cluster, ns, kind, name),
        "resourceVersion": meta::meta_str(namespace, "resourceVersion").unwrap_or("1"),
        "creationTimestamp": meta::meta_str(namespace, "creationTimestamp"),
        "annotations": {protocol::wellknown::CLUSTER_ANNOTATION: cluster},
    })
}

/// The `default` ServiceAccount of `namespace` in `cluster`.
pub fn default_service_account(cluster: &str, namespace: &Value) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": metadata(cluster, namespace, "ServiceAccount", DEFAULT_SERVICE_ACCOUNT),
    })
}

/// The `kube-root-ca.crt` ConfigMap of `namespace` in `cluster`, holding `ca_pem`.
pub fn root_ca_config_map(cluster: &str, namespace: &Value, ca_pem: &str) -> Value {
    let mut metadata = metadata(cluster, namespace, "ConfigMap", ROOT_CA_CONFIG_MAP);
    metadata["annotations"]["kubernetes.io/description"] = Value::from(ROOT_CA_DESCRIPTION);
    json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": metadata,
        "data": {"ca.crt": ca_pem},
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn implicit_objects_are_stable_and_belong_to_their_namespace() {
        let namespace =
            json!({"metadata": {"name": "team", "resourceVersion": "42", "creationTimestamp": "2026-01-01T00:00:00Z"}});
        let account = default_service_account("c1", &namespace);
        assert_eq!(account, default_service_account("c1", &namespace), "the same on every read");
        assert_eq!(account["metadata"]["namespace"], "team");
        assert_eq!(account["metadata"]["resourceVersion"], "42");
        assert_ne!(account["metadata"]["uid"], default_service_account("c2", &namespace)["metadata"]["uid"]);
        let ca = root_ca_config_map("c1", &namespace, "-----BEGIN CERTIFICATE-----\n");
        assert_eq!(ca["data"]["ca.crt"], "-----BEGIN CERTIFICATE-----\n");
        assert!(ca["metadata"]["annotations"]["kubernetes.io/description"].is_string());
        assert_ne!(ca["metadata"]["uid"], account["metadata"]["uid"]);
    }
}
