//! Shard (`core.kcp.io/v1alpha1`): one server process that logical clusters are placed
//! on, with the addresses under which it and its logical clusters are reached.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, ListMeta, ObjectMeta};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{api_version, impl_cluster_scoped_kind, kind, list_kind, CORE_KCP_GROUP, CORE_KCP_VERSION};

/// `apiVersion` carried by [`Shard`] objects.
pub const SHARD_API_VERSION: &str = "core.kcp.io/v1alpha1";
/// Kind of [`Shard`].
pub const SHARD_KIND: &str = "Shard";
/// Kind of [`ShardList`].
pub const SHARD_LIST_KIND: &str = "ShardList";
/// Plural resource name of [`Shard`]; it is cluster-scoped.
pub const SHARD_RESOURCE: &str = "shards";

/// Shard describes one server that logical clusters are scheduled onto, and the addresses
/// under which it is reached directly, by users and by virtual workspace clients.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "io.kcp.core.v1alpha1.Shard")]
pub struct Shard {
    /// APIVersion defines the versioned schema of this representation of an object. Servers
    /// should convert recognized schemas to the latest internal value, and may reject
    /// unrecognized values. More info:
    /// https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources
    #[serde(default = "api_version::<Shard>")]
    pub api_version: String,
    /// Kind is a string value representing the REST resource this object represents. Servers
    /// may infer this from the endpoint the client submits requests to. Cannot be updated. In
    /// CamelCase. More info:
    /// https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds
    #[serde(default = "kind::<Shard>")]
    pub kind: String,
    /// Standard object's metadata. More info:
    /// https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// spec holds the addresses of the shard.
    // The schema's default is `{}` like the other kinds' specs, not the derived
    // `{"baseURL": ""}`: a client applying it would send an empty, invalid address.
    #[serde(default)]
    #[schemars(extend("default" = {}))]
    pub spec: ShardSpec,
    /// status holds the observed state of the shard: its capacity and conditions.
    #[serde(default)]
    pub status: ShardStatus,
}

/// ShardSpec is the desired state of a Shard.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[schemars(rename = "io.kcp.core.v1alpha1.ShardSpec")]
pub struct ShardSpec {
    /// baseURL is the address at which the shard is reached directly, e.g. by a front-proxy
    /// that forwards each request to the shard holding the logical cluster.
    #[serde(rename = "baseURL")]
    pub base_url: String,
    /// externalURL is the address users see in the URLs of workspaces on this shard; behind
    /// a front-proxy it is the front-proxy's address, shared by all shards. Changing it
    /// invalidates the kubeconfigs of existing clients unless the old address keeps
    /// working. Defaults to baseURL.
    #[serde(rename = "externalURL", default, skip_serializing_if = "String::is_empty")]
    pub external_url: String,
    /// virtualWorkspaceURL is the address of the virtual workspace server belonging to this
    /// shard: directly, or through a front-proxy or load balancer. APIExports are given this
    /// address. Defaults to baseURL.
    #[serde(rename = "virtualWorkspaceURL", default, skip_serializing_if = "String::is_empty")]
    pub virtual_workspace_url: String,
}

/// ShardStatus is the observed state of a Shard.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "io.kcp.core.v1alpha1.ShardStatus")]
pub struct ShardStatus {
    /// capacity is the amount of each countable resource logical clusters can be scheduled
    /// into on this shard.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub capacity: BTreeMap<String, Quantity>,
    /// conditions describe the current processing state of the Shard.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
}

/// ShardList is a list of Shards, as returned by list requests.
// No JsonSchema derive: see LogicalClusterList.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ShardList {
    /// APIVersion defines the versioned schema of this representation of an object.
    #[serde(default = "api_version::<Shard>")]
    pub api_version: String,
    /// Kind is a string value representing the REST resource this object represents.
    #[serde(default = "list_kind::<Shard>")]
    pub kind: String,
    /// Standard list metadata.
    #[serde(default)]
    pub metadata: ListMeta,
    /// items is the list of Shards.
    pub items: Vec<Shard>,
}

impl_cluster_scoped_kind!(
    Shard,
    ShardList {
        group: CORE_KCP_GROUP,
        version: CORE_KCP_VERSION,
        api_version: SHARD_API_VERSION,
        kind: SHARD_KIND,
        list_kind: SHARD_LIST_KIND,
        resource: SHARD_RESOURCE,
    }
);

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn wire_names_match_kcp() {
        let mut shard = Shard::new(ObjectMeta { name: Some("root".into()), ..ObjectMeta::default() });
        shard.spec = ShardSpec {
            base_url: "https://shard-1:6443".into(),
            external_url: "https://proxy:6443".into(),
            virtual_workspace_url: "https://shard-1:6444".into(),
        };
        shard.status.capacity = [("logicalclusters".to_owned(), Quantity("1k".into()))].into();
        let wire = serde_json::to_value(&shard).unwrap();
        assert_eq!(
            wire,
            json!({
                "apiVersion": "core.kcp.io/v1alpha1",
                "kind": "Shard",
                "metadata": {"name": "root"},
                "spec": {
                    "baseURL": "https://shard-1:6443",
                    "externalURL": "https://proxy:6443",
                    "virtualWorkspaceURL": "https://shard-1:6444"
                },
                "status": {"capacity": {"logicalclusters": "1k"}}
            })
        );
        let back: Shard = serde_json::from_value(wire).unwrap();
        assert_eq!(back, shard);
    }

    #[test]
    fn base_url_is_required_and_the_others_optional() {
        let shard: Shard = serde_json::from_value(json!({"spec": {"baseURL": "https://shard-1"}})).unwrap();
        assert_eq!(shard.spec.base_url, "https://shard-1");
        assert_eq!(shard.spec.external_url, "");
        assert_eq!(shard.kind, SHARD_KIND);
        let missing = serde_json::from_value::<Shard>(json!({"spec": {"externalURL": "https://proxy"}}));
        assert!(missing.unwrap_err().to_string().contains("baseURL"));
        let empty: Shard = serde_json::from_value(json!({"metadata": {"name": "root"}})).unwrap();
        assert_eq!(empty.spec, ShardSpec::default(), "a missing spec is the empty spec");
    }
}
