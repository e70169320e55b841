//! Content negotiation: which representation a client accepts and which body it sent.

use super::status::{ApiError, ApiResult};
use serde_json::Value;

/// A representation the server can produce.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Representation {
    /// Plain JSON.
    Json,
    /// YAML.
    Yaml,
    /// A `meta.k8s.io/v1` Table (kubectl get).
    Table,
    /// Aggregated discovery (`apidiscovery.k8s.io/v2` or `v2beta1`).
    AggregatedDiscovery(&'static str),
}

/// One parsed media range of an `Accept` header.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
struct MediaRange {
    essence: String,
    as_kind: Option<String>,
    group: Option<String>,
    version: Option<String>,
}

fn parse_media_range(text: &str) -> MediaRange {
    let mut parts = text.split(';').map(str::trim);
    let mut range = MediaRange { essence: parts.next().unwrap_or_default().to_ascii_lowercase(), ..Default::default() };
    for param in parts {
        let Some((key, value)) = param.split_once('=') else { continue };
        let value = value.trim().trim_matches('"').to_string();
        match key.trim() {
            "as" => range.as_kind = Some(value),
            "g" => range.group = Some(value),
            "v" => range.version = Some(value),
            _ => {}
        }
    }
    range
}

/// Picks the first representation in the `Accept` header that the endpoint can serve.
/// `allow` says whether tables or aggregated discovery make sense for this endpoint.
pub fn choose(accept: Option<&str>, allow_table: bool, allow_discovery: bool) -> ApiResult<Representation> {
    let accept = match accept.map(str::trim) {
        None | Some("") => return Ok(Representation::Json),
        Some(a) => a,
    };
    for range in accept.split(',').map(parse_media_range) {
        match (range.essence.as_str(), range.as_kind.as_deref()) {
            ("application/json", Some("Table")) if allow_table && range.group.as_deref() == Some("meta.k8s.io") => {
                return Ok(Representation::Table);
            }
            ("application/json", Some("APIGroupDiscoveryList"))
                if allow_discovery && range.group.as_deref() == Some("apidiscovery.k8s.io") =>
            {
                match range.version.as_deref() {
                    Some("v2") => return Ok(Representation::AggregatedDiscovery("v2")),
                    Some("v2beta1") => return Ok(Representation::AggregatedDiscovery("v2beta1")),
                    _ => continue,
                }
            }
            ("application/json" | "application/*" | "*/*", None) => return Ok(Representation::Json),
            ("application/yaml", None) => return Ok(Representation::Yaml),
            _ => continue,
        }
    }
    Err(ApiError::not_acceptable(format!(
        "only the following media types are accepted: application/json, application/yaml, application/json;as=Table;v=v1;g=meta.k8s.io (asked for {accept:?})"
    )))
}

/// Kubernetes' protobuf media type.
pub const PROTOBUF: &str = "application/vnd.kubernetes.protobuf";

/// Media types accepted for object bodies (create, update).
pub const OBJECT_BODY_TYPES: &[&str] = &["application/json", "application/yaml", PROTOBUF];

/// The essence of a `Content-Type` header (`application/json` from `application/json; charset=utf-8`).
pub fn essence(content_type: Option<&str>) -> String {
    content_type.unwrap_or("application/json").split(';').next().unwrap_or_default().trim().to_ascii_lowercase()
}

/// Decodes an object body of a supported media type into JSON; malformed bodies are 400.
pub fn decode_object(content_type: Option<&str>, body: &[u8]) -> ApiResult<Value> {
    let essence = essence(content_type);
    let value = match essence.as_str() {
        "application/json" => serde_json::from_slice::<Value>(body)
            .map_err(|e| ApiError::bad_request(format!("the request body is not valid JSON: {e}")))?,
        "application/yaml" => serde_yaml_ng::from_slice::<Value>(body)
            .map_err(|e| ApiError::bad_request(format!("the request body is not valid YAML: {e}")))?,
        // kubectl's typed commands (`kubectl create configmap …`) send protobuf.
        PROTOBUF => protocol::protobuf::decode_object(body).map_err(|e| match e {
            protocol::protobuf::ProtobufError::UnsupportedKind { .. } => ApiError::unsupported_media_type_because(
                format!("{e}; send this object as application/json or application/yaml"),
            ),
            other => ApiError::bad_request(format!("the protobuf request body does not decode: {other}")),
        })?,
        other => return Err(ApiError::unsupported_media_type(other, OBJECT_BODY_TYPES)),
    };
    if !value.is_object() {
        return Err(ApiError::bad_request("the request body must be a JSON or YAML object"));
    }
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chooses_like_kube_apiserver() {
        let kubectl_get = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";
        let discovery = "application/vnd.kubernetes.protobuf;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json";
        let cases = [
            (None, true, true, Ok(Representation::Json)),
            (Some(kubectl_get), true, false, Ok(Representation::Table)),
            (Some(kubectl_get), false, false, Ok(Representation::Json)),
            (Some(discovery), false, true, Ok(Representation::AggregatedDiscovery("v2"))),
            (Some(discovery), false, false, Ok(Representation::Json)),
            (Some("application/yaml"), true, true, Ok(Representation::Yaml)),
            (Some("*/*"), true, true, Ok(Representation::Json)),
        ];
        for (accept, table, disc, expected) in cases {
            assert_eq!(choose(accept, table, disc), expected, "{accept:?}");
        }
        assert_eq!(choose(Some("application/vnd.kubernetes.protobuf"), true, true).unwrap_err().code, 406);
    }

    #[test]
    fn decodes_bodies_by_media_type() {
        assert_eq!(decode_object(Some("application/yaml"), b"a: 1").unwrap()["a"], 1);
        assert_eq!(decode_object(Some("application/json; charset=utf-8"), b"{\"a\":1}").unwrap()["a"], 1);
        assert_eq!(decode_object(None, b"{bad").unwrap_err().code, 400);
        assert_eq!(decode_object(Some("application/json"), b"[1]").unwrap_err().code, 400);
        assert_eq!(decode_object(Some("text/plain"), b"x").unwrap_err().code, 415);
    }
}
