//! A ClusterSchedulingPolicySnapshot's `spec.policyHash` as KubeFleet writes it, pure.
//!
//! KubeFleet hashes the placement's policy with `numberOfClusters` cleared (scaling
//! updates the latest snapshot's annotation instead of making a new snapshot): the
//! SHA-256 of the policy's JSON as Go encodes its `PlacementPolicy` struct, in lowercase
//! hex, with no policy encoded as `null`. The field is bytes, so its JSON is the base64
//! of that hex text.
//!
//! Go's encoding is what makes two spellings of one policy the same policy: fields come
//! in the struct's order whatever order the manifest used, `omitempty` fields that are
//! empty are left out, fields the struct does not have are dropped, map keys are sorted,
//! and `<`, `>`, `&` are escaped. The tables below give each type's fields in order.

use base64::Engine;
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

/// A type of Fleet's policy, or of its leaves, as Go encodes it.
#[derive(Clone, Copy, Debug)]
enum Go {
    Policy,
    Affinity,
    ClusterAffinity,
    ClusterSelector,
    Preferred,
    Term,
    LabelSelector,
    LabelRequirement,
    PropertySelector,
    PropertyRequirement,
    Sorter,
    Spread,
    Toleration,
    /// A string.
    Text,
    /// An integer.
    Number,
    /// `map[string]string`.
    StringMap,
}

/// A field's value: one (a struct, a pointer or a leaf) or a slice of them.
#[derive(Clone, Copy, Debug)]
enum Item {
    One(Go),
    Many(Go),
}

use Go::*;
use Item::{Many, One};

/// (JSON name, value, `omitempty`), in the struct's order.
type Field = (&'static str, Item, bool);

fn fields(go: Go) -> &'static [Field] {
    match go {
        Policy => &[
            ("placementType", One(Text), true),
            ("clusterNames", Many(Text), true),
            ("numberOfClusters", One(Number), true),
            ("affinity", One(Affinity), true),
            ("topologySpreadConstraints", Many(Spread), true),
            ("tolerations", Many(Toleration), true),
        ],
        Affinity => &[("clusterAffinity", One(ClusterAffinity), true)],
        ClusterAffinity => &[
            ("requiredDuringSchedulingIgnoredDuringExecution", One(ClusterSelector), true),
            ("preferredDuringSchedulingIgnoredDuringExecution", Many(Preferred), true),
        ],
        ClusterSelector => &[("clusterSelectorTerms", Many(Term), false)],
        Preferred => &[("weight", One(Number), false), ("preference", One(Term), false)],
        Term => &[
            ("labelSelector", One(LabelSelector), true),
            ("propertySelector", One(PropertySelector), true),
            ("propertySorter", One(Sorter), true),
        ],
        LabelSelector => &[("matchLabels", One(StringMap), true), ("matchExpressions", Many(LabelRequirement), true)],
        LabelRequirement => &[("key", One(Text), false), ("operator", One(Text), false), ("values", Many(Text), true)],
        PropertySelector => &[("matchExpressions", Many(PropertyRequirement), false)],
        PropertyRequirement => {
            &[("name", One(Text), false), ("operator", One(Text), false), ("values", Many(Text), false)]
        }
        Sorter => &[("name", One(Text), false), ("sortOrder", One(Text), false)],
        Spread => {
            &[("maxSkew", One(Number), true), ("topologyKey", One(Text), false), ("whenUnsatisfiable", One(Text), true)]
        }
        Toleration => &[
            ("key", One(Text), true),
            ("operator", One(Text), true),
            ("value", One(Text), true),
            ("effect", One(Text), true),
        ],
        Text | Number | StringMap => &[],
    }
}

/// `value` (`Null` when absent) as Go encodes a value of `item`.
fn encode(value: &Value, item: Item) -> Value {
    match item {
        // A nil slice is `null`; a present one, its items.
        Many(go) => match value.as_array() {
            Some(items) => Value::Array(items.iter().map(|v| encode(v, One(go))).collect()),
            None => Value::Null,
        },
        One(Text) => Value::String(value.as_str().unwrap_or_default().to_string()),
        One(Number) => value.as_i64().map_or(Value::from(0), Value::from),
        One(StringMap) => match value.as_object() {
            Some(map) => {
                let mut sorted: Vec<(&String, &Value)> = map.iter().collect();
                sorted.sort_by_key(|(key, _)| *key);
                Value::Object(sorted.into_iter().map(|(k, v)| (k.clone(), encode(v, One(Text)))).collect())
            }
            None => Value::Null,
        },
        One(go) => {
            let mut out = Map::new();
            for &(name, item, omit_empty) in fields(go) {
                let field = value.get(name).unwrap_or(&Value::Null);
                if omit_empty && omitted(field, item) {
                    continue;
                }
                out.insert(name.to_string(), encode(field, item));
            }
            Value::Object(out)
        }
    }
}

/// Whether `omitempty` leaves `value` out: a nil pointer (struct or integer), or an empty
/// string, slice or map.
fn omitted(value: &Value, item: Item) -> bool {
    match (value, item) {
        (Value::Null, _) => true,
        (Value::String(text), One(Text)) => text.is_empty(),
        (Value::Array(items), Many(_)) => items.is_empty(),
        (Value::Object(map), One(StringMap)) => map.is_empty(),
        _ => false,
    }
}

/// `spec.policyHash` of a placement with `policy`.
pub fn hash(policy: Option<&Value>) -> String {
    let encoded = match policy {
        Some(policy) if !policy.is_null() => {
            let mut policy = policy.clone();
            if let Some(fields) = policy.as_object_mut() {
                fields.remove("numberOfClusters");
            }
            encode(&policy, One(Policy))
        }
        _ => Value::Null,
    };
    // Go's encoder escapes these; they appear only inside strings.
    let json = serde_json::to_string(&encoded)
        .unwrap_or_default()
        .replace('<', "\\u003c")
        .replace('>', "\\u003e")
        .replace('&', "\\u0026")
        .replace('\u{2028}', "\\u2028")
        .replace('\u{2029}', "\\u2029");
    let hex = super::policy::hex(&Sha256::digest(json.as_bytes()));
    base64::engine::general_purpose::STANDARD.encode(hex)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn decoded(hash: &str) -> String {
        String::from_utf8(base64::engine::general_purpose::STANDARD.decode(hash).expect("base64")).expect("text")
    }

    /// Go's bytes of a policy, before hashing.
    fn go_json(policy: &Value) -> String {
        serde_json::to_string(&encode(policy, One(Policy))).unwrap()
    }

    #[test]
    fn the_hash_is_base64_of_the_hex_sha256_of_gos_json() {
        // No policy: Go encodes a nil pointer as `null`.
        let null_hex = super::super::policy::hex(&Sha256::digest(b"null"));
        assert_eq!(decoded(&hash(None)), null_hex);
        let text = decoded(&hash(Some(&json!({"placementType": "PickAll"}))));
        assert_eq!(text.len(), 64);
        assert!(text.chars().all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase()), "{text}");
        let expected = super::super::policy::hex(&Sha256::digest(br#"{"placementType":"PickAll"}"#));
        assert_eq!(text, expected);
    }

    #[test]
    fn fields_come_in_gos_order_without_empty_or_unknown_ones() {
        let policy = json!({
            "tolerations": [{"operator": "Exists", "key": "k", "value": ""}],
            "affinity": {"clusterAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {"preference": {"labelSelector": {"matchLabels": {"z": "1", "a": "2"}}}, "weight": 5}],
                "requiredDuringSchedulingIgnoredDuringExecution": {"clusterSelectorTerms": [
                    {"propertySelector": {"matchExpressions": [{"values": ["2"], "operator": "Ge", "name": "n"}]}}]},
            }},
            "clusterNames": [],
            "placementType": "PickN",
            "unknown": true,
            "topologySpreadConstraints": [{"whenUnsatisfiable": "DoNotSchedule", "topologyKey": "region", "maxSkew": 1}],
        });
        assert_eq!(
            go_json(&policy),
            concat!(
                r#"{"placementType":"PickN","affinity":{"clusterAffinity":{"#,
                r#""requiredDuringSchedulingIgnoredDuringExecution":{"clusterSelectorTerms":[{"propertySelector":{"matchExpressions":[{"name":"n","operator":"Ge","values":["2"]}]}}]},"#,
                r#""preferredDuringSchedulingIgnoredDuringExecution":[{"weight":5,"preference":{"labelSelector":{"matchLabels":{"a":"2","z":"1"}}}}]}},"#,
                r#""topologySpreadConstraints":[{"maxSkew":1,"topologyKey":"region","whenUnsatisfiable":"DoNotSchedule"}],"#,
                r#""tolerations":[{"key":"k","operator":"Exists"}]}"#,
            )
        );
    }

    /// Golden values: each policy's `policyHash` as Go's encoding/json writes it for a
    /// struct with KubeFleet's fields and tags (computed once with go1.19; a mismatch
    /// means the hub would make snapshots a Fleet hub would not, or miss ones it would).
    #[test]
    fn the_hash_equals_gos() {
        let cases = [
            ("null", "NzQyMzRlOThhZmU3NDk4ZmI1ZGFmMWYzNmFjMmQ3OGFjYzMzOTQ2NGY5NTA3MDNiOGMwMTk4OTJmOTgyYjkwYg=="),
            (
                r#"{"placementType":"PickAll"}"#,
                "OGNjNTdkZWU1OTY4NGZmODg3NjZlMjY5MzZjOGZiMTI1ZjRiZGUyMzRhMmJlYjVjNTRhZGVkNDU2OWRiMGQ1YQ==",
            ),
            (
                r#"{"tolerations":[{"operator":"Exists","key":"k","value":""}],"affinity":{"clusterAffinity":{"preferredDuringSchedulingIgnoredDuringExecution":[{"preference":{"labelSelector":{"matchLabels":{"z":"1","a":"x&y<z>"}}},"weight":5}],"requiredDuringSchedulingIgnoredDuringExecution":{"clusterSelectorTerms":[{"propertySelector":{"matchExpressions":[{"values":["2"],"operator":"Ge","name":"n"}]}}]}}},"clusterNames":[],"placementType":"PickN","numberOfClusters":3,"unknown":true,"topologySpreadConstraints":[{"whenUnsatisfiable":"DoNotSchedule","topologyKey":"region","maxSkew":1}]}"#,
                "M2MyYTM3MjY5Y2FiMDFlZGQwMDU1MTE1N2YzNDA4NjYzNDI2Mjg1ZTljNWEzYmY4ZWNlMDgxMDQwYjAzODQwYQ==",
            ),
            (
                r#"{"placementType":"PickN","numberOfClusters":10,"affinity":{"clusterAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"clusterSelectorTerms":[{"labelSelector":{"matchExpressions":[{"key":"env","operator":"In","values":["prod"]}]}},{}]},"preferredDuringSchedulingIgnoredDuringExecution":[{"weight":-20,"preference":{"propertySorter":{"name":"resources.kubernetes-fleet.io/available-cpu","sortOrder":"Descending"}}}]}},"tolerations":[{"key":"maintenance","operator":"Equal","value":"planned","effect":"NoSchedule"}]}"#,
                "NDc1YzQzYjdjNTU4YzNiN2YzYjYwODZmNzUyMmJmMGM5MjIwYTFlMzcyNzFiMjI2M2FmODE2NTJiNWY3OGMwNQ==",
            ),
            (
                r#"{"placementType":"PickFixed","clusterNames":["m1","m2"]}"#,
                "YmI0MTA3MDRlOGI4NDRmNWMzYWRiOTgyODVlMmZiNzFiNGQ2Y2U5MmQwZmFmNGVlN2E2MDY0ZTQ3MjM1MjVjNQ==",
            ),
        ];
        for (policy, go) in cases {
            let policy: Value = serde_json::from_str(policy).unwrap();
            assert_eq!(hash(Some(&policy).filter(|p| !p.is_null())), go, "{policy}");
        }
    }

    #[test]
    fn the_hash_ignores_the_number_of_clusters_and_the_spelling_only() {
        let three = json!({"placementType": "PickN", "numberOfClusters": 3, "tolerations": [{"key": "k", "operator": "Exists"}]});
        let five = json!({"tolerations": [{"operator": "Exists", "key": "k"}], "numberOfClusters": 5, "placementType": "PickN"});
        let other = json!({"placementType": "PickN", "numberOfClusters": 3});
        assert_eq!(hash(Some(&three)), hash(Some(&five)));
        assert_ne!(hash(Some(&three)), hash(Some(&other)));
    }
}
