//! Every rejection is a Kubernetes `Status`: one error type, one constructor per reason.

use protocol::gvr::GroupResource;
use serde_json::{json, Value};

/// An API error that becomes a `Status` response.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiError {
    /// HTTP status code.
    pub code: u16,
    /// Machine-readable reason (`NotFound`, `AlreadyExists`, …).
    pub reason: &'static str,
    /// What went wrong and, where it helps, what to do about it.
    pub message: String,
    /// `details` of the Status, when there is an object to name.
    pub details: Option<Box<Value>>,
    /// `metadata.continue` of the Status: a token to go on with (a 410 on an expired
    /// continue token offers the inconsistent rest of the list).
    pub list_continue: Option<String>,
}

/// A shorthand for handler results.
pub type ApiResult<T> = Result<T, ApiError>;

impl ApiError {
    fn new(code: u16, reason: &'static str, message: impl Into<String>) -> Self {
        ApiError { code, reason, message: message.into(), details: None, list_continue: None }
    }

    /// Whether this is a 404 NotFound: the object, or the logical cluster, does not exist.
    pub fn is_not_found(&self) -> bool {
        self.code == 404
    }

    /// Whether this is a 409 AlreadyExists: a create found the name taken.
    pub fn is_already_exists(&self) -> bool {
        self.code == 409 && self.reason == "AlreadyExists"
    }

    /// Whether this is a 409 Conflict: a write lost against a concurrent change (stale
    /// resourceVersion), a failed precondition, or fields other appliers own.
    pub fn is_conflict(&self) -> bool {
        self.code == 409 && self.reason == "Conflict"
    }

    fn with_details(mut self, details: Value) -> Self {
        self.details = Some(Box::new(details));
        self
    }

    /// 400: the request is malformed.
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(400, "BadRequest", message)
    }

    /// 401: no or invalid credentials.
    pub fn unauthorized(message: impl Into<String>) -> Self {
        Self::new(401, "Unauthorized", message)
    }

    /// 403: authenticated but not allowed.
    pub fn forbidden(message: impl Into<String>) -> Self {
        Self::new(403, "Forbidden", message)
    }

    /// 403 for a request about a resource, worded as kube's `NewForbidden`:
    /// `configmaps "x" is forbidden: <why>` (without a name for collections).
    pub fn forbidden_on(resource: &GroupResource, name: &str, why: &str) -> Self {
        let message = match name {
            "" => format!("{resource} is forbidden: {why}"),
            name => format!("{resource} \"{name}\" is forbidden: {why}"),
        };
        Self::new(403, "Forbidden", message)
            .with_details(json!({"name": name, "group": resource.group, "kind": resource.resource}))
    }

    /// 404 for a named object of a resource.
    pub fn not_found(resource: &GroupResource, name: &str) -> Self {
        Self::new(404, "NotFound", format!("{resource} \"{name}\" not found"))
            .with_details(json!({"name": name, "group": resource.group, "kind": resource.resource}))
    }

    /// 404 for a path that names nothing this server serves.
    pub fn not_found_message(message: impl Into<String>) -> Self {
        Self::new(404, "NotFound", message)
    }

    /// 405: the resource does not support the method.
    pub fn method_not_allowed(message: impl Into<String>) -> Self {
        Self::new(405, "MethodNotAllowed", message)
    }

    /// 406: no representation the client accepts.
    pub fn not_acceptable(message: impl Into<String>) -> Self {
        Self::new(406, "NotAcceptable", message)
    }

    /// 409 on create of an existing object.
    pub fn already_exists(resource: &GroupResource, name: &str) -> Self {
        Self::new(409, "AlreadyExists", format!("{resource} \"{name}\" already exists"))
            .with_details(json!({"name": name, "group": resource.group, "kind": resource.resource}))
    }

    /// 409 on a stale resourceVersion or a failed precondition.
    pub fn conflict(resource: &GroupResource, name: &str, why: &str) -> Self {
        Self::new(409, "Conflict", format!("Operation cannot be fulfilled on {resource} \"{name}\": {why}"))
            .with_details(json!({"name": name, "group": resource.group, "kind": resource.resource}))
    }

    /// 409 for a server-side apply whose fields other managers own; `causes` name them.
    pub fn conflict_with_causes(message: impl Into<String>, causes: Vec<Value>) -> Self {
        Self::new(409, "Conflict", message).with_details(json!({"causes": causes}))
    }

    /// 410: the requested resourceVersion is no longer retained.
    pub fn expired(message: impl Into<String>) -> Self {
        Self::new(410, "Expired", message)
    }

    /// 413: the body is larger than allowed.
    pub fn too_large(limit: usize) -> Self {
        Self::new(413, "RequestEntityTooLarge", format!("Request entity too large: limit is {limit}"))
    }

    /// 413: the resulting object would exceed the storage limit.
    pub fn too_large_object(size: usize, limit: usize) -> Self {
        Self::new(
            413,
            "RequestEntityTooLarge",
            format!("the object would be {size} bytes, larger than the {limit}-byte limit of one stored object"),
        )
    }

    /// 415: the body's media type is not one this endpoint reads.
    pub fn unsupported_media_type(content_type: &str, supported: &[&str]) -> Self {
        Self::new(
            415,
            "UnsupportedMediaType",
            format!("the body of the request was in an unknown format - accepted media types include: {}; got {content_type:?}", supported.join(", ")),
        )
    }

    /// 415 with a specific reason (a media type accepted in general, but not for this body).
    pub fn unsupported_media_type_because(message: impl Into<String>) -> Self {
        Self::new(415, "UnsupportedMediaType", message)
    }

    /// 422: the object fails validation; `causes` are (field, message) pairs.
    pub fn invalid(kind: &str, group: &str, name: &str, causes: &[(String, String)]) -> Self {
        let summary: Vec<String> = causes.iter().map(|(field, message)| format!("{field}: {message}")).collect();
        let causes: Vec<Value> = causes
            .iter()
            .map(|(field, message)| json!({"reason": "FieldValueInvalid", "message": message, "field": field}))
            .collect();
        Self::new(422, "Invalid", format!("{kind} \"{name}\" is invalid: {}", bracket(&summary)))
            .with_details(json!({"name": name, "group": group, "kind": kind, "causes": causes}))
    }

    /// 429: too many requests; retry later.
    pub fn too_many_requests(message: impl Into<String>) -> Self {
        Self::new(429, "TooManyRequests", message)
    }

    /// 500: a fault of this server.
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(500, "InternalError", format!("Internal error occurred: {}", message.into()))
    }

    /// 507: the server cannot store the write (its disk is full). Not retried by clients
    /// as 503 would be: freeing space takes an operator, and the message says so.
    pub fn insufficient_storage(message: impl Into<String>) -> Self {
        Self::new(507, "InsufficientStorage", message)
    }

    /// 503: temporarily unable to serve.
    pub fn unavailable(message: impl Into<String>) -> Self {
        Self::new(503, "ServiceUnavailable", message)
    }

    /// 504: the server gave up waiting (e.g. for a resourceVersion it has not reached).
    pub fn timeout(message: impl Into<String>) -> Self {
        Self::new(504, "Timeout", message)
    }

    /// The `Status` object.
    pub fn to_status(&self) -> Value {
        let mut status = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        });
        if let Some(details) = &self.details {
            status["details"] = Value::clone(details);
        }
        if let Some(token) = &self.list_continue {
            status["metadata"]["continue"] = Value::from(token.clone());
        }
        status
    }
}

/// kube joins several causes as `[a, b]` and shows one bare.
fn bracket(items: &[String]) -> String {
    match items {
        [one] => one.clone(),
        many => format!("[{}]", many.join(", ")),
    }
}

/// A `Status` with `status: Success`, returned by deletes that leave nothing to show.
pub fn success_status(resource: &GroupResource, name: &str, uid: Option<&str>) -> Value {
    json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "details": {"name": name, "group": resource.group, "kind": resource.resource, "uid": uid},
    })
}

impl From<store::StoreError> for ApiError {
    /// Store errors that reach here without a resource to name (lists, watches, faults).
    fn from(e: store::StoreError) -> Self {
        use store::StoreError::*;
        match e {
            Gone { requested, oldest } => {
                ApiError::expired(format!("too old resource version: {requested} ({oldest})"))
            }
            TooLargeResourceVersion { requested, current } => {
                ApiError::timeout(format!("Too large resource version: {requested}, current: {current}"))
            }
            Closed => ApiError::unavailable("storage is shutting down; retry against a running shard"),
            NoSpace(detail) => ApiError::insufficient_storage(format!(
                "the shard's disk is full, so it cannot store writes; reads still work. Free space \
                 on the disk of its data dir, then restart the shard to take writes again ({detail})"
            )),
            other => ApiError::internal(other.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn callers_branch_on_kinds_of_error() {
        let cm = GroupResource::new("", "configmaps");
        // (error, not found, already exists, conflict)
        let cases = [
            (ApiError::not_found(&cm, "a"), true, false, false),
            (ApiError::not_found_message("no such path"), true, false, false),
            (ApiError::already_exists(&cm, "a"), false, true, false),
            (ApiError::conflict(&cm, "a", "stale"), false, false, true),
            (ApiError::conflict_with_causes("owned by kubectl", vec![]), false, false, true),
            (ApiError::forbidden("no"), false, false, false),
            (ApiError::expired("too old"), false, false, false),
        ];
        for (error, not_found, already_exists, conflict) in cases {
            assert_eq!(error.is_not_found(), not_found, "{error:?}");
            assert_eq!(error.is_already_exists(), already_exists, "{error:?}");
            assert_eq!(error.is_conflict(), conflict, "{error:?}");
        }
    }

    #[test]
    fn statuses_carry_code_reason_and_details() {
        let cm = GroupResource::new("", "configmaps");
        let cases = [
            (ApiError::not_found(&cm, "a"), 404, "NotFound", "configmaps \"a\" not found"),
            (ApiError::already_exists(&cm, "a"), 409, "AlreadyExists", "configmaps \"a\" already exists"),
            (ApiError::too_large(3 << 20), 413, "RequestEntityTooLarge", "Request entity too large: limit is 3145728"),
        ];
        for (error, code, reason, message) in cases {
            let status = error.to_status();
            assert_eq!(status["code"], code);
            assert_eq!(status["reason"], reason);
            assert_eq!(status["message"], message);
            assert_eq!(status["status"], "Failure");
        }
        let forbidden = ApiError::forbidden_on(&cm, "a", "User \"u\" cannot get it").to_status();
        assert_eq!(forbidden["message"], "configmaps \"a\" is forbidden: User \"u\" cannot get it");
        assert_eq!(forbidden["details"], json!({"name": "a", "group": "", "kind": "configmaps"}));
        let collection = ApiError::forbidden_on(&GroupResource::new("apps", "deployments"), "", "no");
        assert_eq!(collection.message, "deployments.apps is forbidden: no");
        let invalid = ApiError::invalid("ConfigMap", "", "A", &[("metadata.name".into(), "bad".into())]);
        assert_eq!(invalid.to_status()["message"], "ConfigMap \"A\" is invalid: metadata.name: bad");
        assert_eq!(invalid.to_status()["details"]["causes"][0]["field"], "metadata.name");
    }
}
