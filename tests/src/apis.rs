//! What the APIExport/APIBinding tests share: the `widgets.example.io` export they bind,
//! its manifests, and polling an object until it is as wanted.

use crate::TlsHttp;
use http::StatusCode;
use kube::core::ApiResource;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

/// The APIResourceSchema of `widgets.example.io/v1` (a namespaced Widget with
/// `spec.size`) and the APIExport `widgets` of it.
pub const WIDGETS_SCHEMA_AND_EXPORT: &str = r#"
apiVersion: apis.kcp.io/v1alpha1
kind: APIResourceSchema
metadata: {name: v1.widgets.example.io}
spec:
  group: example.io
  names: {kind: Widget, listKind: WidgetList, plural: widgets, singular: widget}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      type: object
      properties:
        spec:
          type: object
          properties:
            size: {type: integer}
---
apiVersion: apis.kcp.io/v1alpha1
kind: APIExport
metadata: {name: widgets}
spec:
  latestResourceSchemas: [v1.widgets.example.io]
"#;

/// An APIBinding `name` of export `export` in the workspace `provider_path`.
pub fn binding_manifest(name: &str, provider_path: &str, export: &str) -> String {
    json!({
        "apiVersion": "apis.kcp.io/v1alpha1",
        "kind": "APIBinding",
        "metadata": {"name": name},
        "spec": {"reference": {"export": {"path": provider_path, "name": export}}},
    })
    .to_string()
}

/// A Widget in namespace `default`.
pub fn widget_manifest(name: &str, size: u64) -> String {
    json!({
        "apiVersion": "example.io/v1",
        "kind": "Widget",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"size": size},
    })
    .to_string()
}

/// Widgets for kube-rs's dynamic API.
pub fn widget_resource() -> ApiResource {
    ApiResource {
        group: "example.io".into(),
        version: "v1".into(),
        api_version: "example.io/v1".into(),
        kind: "Widget".into(),
        plural: "widgets".into(),
    }
}

/// Polls `GET path` through `http` every 200 ms until `check` accepts the answer, and
/// returns it; panics after `within` with the last answer.
pub async fn wait_object(
    http: &TlsHttp,
    path: &str,
    what: &str,
    within: Duration,
    check: impl Fn(&Value) -> bool,
) -> Value {
    let deadline = Instant::now() + within;
    loop {
        let last = match http.get(path).await {
            Ok(response) if response.status == StatusCode::OK => {
                let object = response.json().expect("a JSON answer");
                if check(&object) {
                    return object;
                }
                object.to_string()
            }
            Ok(response) => format!("HTTP {}: {}", response.status, response.text()),
            Err(error) => format!("{error:#}"),
        };
        assert!(Instant::now() < deadline, "{what} not within {within:?}; last GET {path}: {last}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}
