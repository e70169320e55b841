//! Kubernetes `Status` responses for what the proxy refuses itself.

use http::header::{self, HeaderValue};
use serde_json::json;

use crate::upstream::{full, Body};

/// A `Status` failure with kube's reason for `code`.
pub fn failure(code: u16, reason: &str, message: &str) -> http::Response<Body> {
    let body = json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    });
    let mut response = http::Response::new(full(serde_json::to_vec(&body).unwrap_or_default()));
    *response.status_mut() = http::StatusCode::from_u16(code).unwrap_or(http::StatusCode::INTERNAL_SERVER_ERROR);
    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

/// 401: no or bad credentials.
pub fn unauthorized(message: &str) -> http::Response<Body> {
    failure(401, "Unauthorized", message)
}

/// 403 with `message`.
pub fn forbidden(message: &str) -> http::Response<Body> {
    failure(403, "Forbidden", message)
}

/// 403 for a path the caller may not use: the same answer whether or not the workspace
/// exists, so it reveals nothing.
pub fn no_access(user: &str, path: &str) -> http::Response<Body> {
    forbidden(&protocol::path::workspace_access_denied(user, path))
}

/// 400 with `message`.
pub fn bad_request(message: &str) -> http::Response<Body> {
    failure(400, "BadRequest", message)
}

/// 503: the shard that would answer is down.
pub fn unavailable(message: &str) -> http::Response<Body> {
    failure(503, "ServiceUnavailable", message)
}

/// 500 with `message`.
pub fn internal(message: &str) -> http::Response<Body> {
    failure(500, "InternalError", message)
}
