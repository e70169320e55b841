//! Kubernetes `Status` responses for what the proxy refuses itself.

use http::header::{self, HeaderValue};
use serde_json::{json, Value};

use crate::upstream::{full, Body};

/// A `Status` failure with kube's reason for `code`.
pub fn failure(code: u16, reason: &str, message: &str) -> http::Response<Body> {
    failure_with_details(code, reason, message, None)
}

fn failure_with_details(code: u16, reason: &str, message: &str, details: Option<Value>) -> http::Response<Body> {
    let mut body = json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    });
    if let Some(details) = details {
        body["details"] = details;
    }
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

/// 503 that the client should retry after `seconds`: kube's `Retry-After` header and
/// `details.retryAfterSeconds`, which client-go (kubectl) honours by retrying.
pub fn unavailable_retry(message: &str, seconds: u32) -> http::Response<Body> {
    let details = json!({"retryAfterSeconds": seconds});
    let mut response = failure_with_details(503, "ServiceUnavailable", message, Some(details));
    response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(seconds));
    response
}

/// 500 with `message`.
pub fn internal(message: &str) -> http::Response<Body> {
    failure(500, "InternalError", message)
}
