//! HTTP plumbing shared by every endpoint: request parsing, content negotiation, bodies,
//! and `Status` errors.

pub mod negotiate;
pub mod request_info;
pub mod status;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use serde_json::Value;
use status::{ApiError, ApiResult};

/// The response body type of every endpoint: whole bodies or streams (watches).
pub type Body = http_body_util::combinators::UnsyncBoxBody<Bytes, std::io::Error>;

/// A response.
pub type Response = http::Response<Body>;

/// Request bodies are limited like kube-apiserver's (3 MiB).
pub const MAX_REQUEST_BODY_BYTES: usize = 3 * 1024 * 1024;

/// A complete body from bytes.
pub fn full(bytes: impl Into<Bytes>) -> Body {
    Full::new(bytes.into()).map_err(|never| match never {}).boxed_unsync()
}

/// A JSON response with the given code and extra headers (e.g. `Warning`).
pub fn json_response(code: u16, value: &Value, warnings: &[String]) -> Response {
    let bytes = serde_json::to_vec(value).unwrap_or_else(|_| b"{}".to_vec());
    bytes_response(code, "application/json", bytes, warnings)
}

/// A response with a body of the given media type.
pub fn bytes_response(code: u16, content_type: &str, body: impl Into<Bytes>, warnings: &[String]) -> Response {
    let mut builder = http::Response::builder().status(code).header(http::header::CONTENT_TYPE, content_type);
    for warning in warnings {
        // RFC 7234 warning: code 299, agent "-", quoted text — what kubectl prints.
        let escaped = warning.replace('\\', "\\\\").replace('"', "\\\"");
        builder = builder.header("Warning", format!("299 - \"{escaped}\""));
    }
    builder.body(full(body)).unwrap_or_else(|_| http::Response::new(full(Bytes::new())))
}

/// The `Status` response of an error.
pub fn error_response(error: &ApiError) -> Response {
    let mut response = json_response(error.code, &error.to_status(), &[]);
    if error.code == 429 || error.code == 503 {
        response.headers_mut().insert(http::header::RETRY_AFTER, http::HeaderValue::from_static("1"));
    }
    response
}

/// How much of an oversized body is read and thrown away before answering 413, so that
/// a client still sending it receives the Status instead of a reset connection.
const OVERSIZED_BODY_DRAIN_BYTES_MAX: usize = 64 * 1024 * 1024;

/// Reads a request body up to [`MAX_REQUEST_BODY_BYTES`]; larger bodies are 413.
pub async fn read_body(mut body: Incoming, declared_length: Option<u64>) -> ApiResult<Bytes> {
    let mut collected = bytes::BytesMut::new();
    let mut seen = 0usize;
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| ApiError::bad_request(format!("reading the request body failed: {e}")))?;
        let Ok(data) = frame.into_data() else { continue };
        seen += data.len();
        if seen <= MAX_REQUEST_BODY_BYTES {
            collected.extend_from_slice(&data);
        } else if seen > OVERSIZED_BODY_DRAIN_BYTES_MAX {
            break;
        }
    }
    let declared_too_large = declared_length.is_some_and(|len| len > MAX_REQUEST_BODY_BYTES as u64);
    if seen > MAX_REQUEST_BODY_BYTES || declared_too_large {
        return Err(ApiError::too_large(MAX_REQUEST_BODY_BYTES));
    }
    Ok(collected.freeze())
}
