//! GET of a collection: selectors, paging and resourceVersion semantics.

use super::ctx::{Ctx, Scope};
use crate::http::status::{ApiError, ApiResult};
use crate::http::Response;
use crate::objects;
use crate::registry::ResourceType;
use base64::Engine;
use protocol::meta;
use protocol::selector::{FieldSelector, LabelSelector};
use serde_json::{json, Value};
use std::time::Duration;
use store::ListOptions;

/// How long a list waits for a resourceVersion the shard has not reached (kube: 3 s).
const WAIT_FOR_RV_MAX: Duration = Duration::from_secs(3);

/// Answers the list.
pub async fn handle(ctx: &Ctx) -> ApiResult<Response> {
    let listed = collect(ctx, None).await?;
    let mut list_meta = json!({"resourceVersion": listed.rv.to_string()});
    if let Some(token) = &listed.continue_token {
        list_meta["continue"] = Value::from(token.clone());
    }
    let list = json!({
        "kind": ctx.rt.list_kind(),
        "apiVersion": ctx.rt.api_version(),
        "metadata": list_meta,
        "items": listed.items,
    });
    ctx.respond_list(200, &list, &[])
}

/// A listed page.
pub struct Listed {
    /// Matching objects in key order.
    pub items: Vec<Value>,
    /// The resourceVersion the page reflects.
    pub rv: u64,
    /// Token for the next page.
    pub continue_token: Option<String>,
}

/// The label and field selectors of a request.
pub struct Selectors {
    labels: LabelSelector,
    fields: FieldSelector,
}

impl Selectors {
    /// Parses `labelSelector` and `fieldSelector`; bad ones and unsupported fields are 400.
    pub fn parse(ctx: &Ctx) -> ApiResult<Self> {
        let labels = LabelSelector::parse(ctx.param("labelSelector").unwrap_or_default())
            .map_err(|e| ApiError::bad_request(format!("unable to parse labelSelector: {e}")))?;
        let fields = FieldSelector::parse(ctx.param("fieldSelector").unwrap_or_default())
            .map_err(|e| ApiError::bad_request(format!("unable to parse fieldSelector: {e}")))?;
        for field in fields.fields() {
            if field_value(&ctx.rt, &json!({}), field).is_none() {
                return Err(ApiError::bad_request(format!("field label not supported: {field}")));
            }
        }
        Ok(Selectors { labels, fields })
    }

    /// Whether an object matches both selectors.
    pub fn matches(&self, rt: &ResourceType, object: &Value) -> bool {
        self.labels.matches(&meta::labels(object)) && self.fields.matches(|f| field_value(rt, object, f).flatten())
    }
}

/// The value of a selectable field; `None` when the field is not selectable for `rt`.
fn field_value(rt: &ResourceType, object: &Value, field: &str) -> Option<Option<String>> {
    let text = |pointer: &str| Some(object.pointer(pointer).and_then(Value::as_str).map(str::to_string));
    match (rt.kind.as_str(), field) {
        (_, "metadata.name") => text("/metadata/name"),
        (_, "metadata.namespace") if rt.namespaced => text("/metadata/namespace"),
        ("Secret", "type") => text("/type"),
        ("Namespace", "status.phase") => text("/status/phase"),
        // kube's core/v1 Event field set (what `kubectl events --for kind/name` selects on).
        (
            "Event",
            "involvedObject.kind"
            | "involvedObject.name"
            | "involvedObject.namespace"
            | "involvedObject.uid"
            | "involvedObject.apiVersion"
            | "involvedObject.resourceVersion"
            | "involvedObject.fieldPath"
            | "reason"
            | "reportingComponent"
            | "type",
        ) => text(&format!("/{}", field.replace('.', "/"))),
        ("Event", "source") => text("/source/component"),
        _ if rt.custom.is_some() => custom_field_value(rt, object, field),
        _ => None,
    }
}

/// A CRD's `selectableFields`: the value at the field's path, as text.
fn custom_field_value(rt: &ResourceType, object: &Value, field: &str) -> Option<Option<String>> {
    let custom = rt.custom.as_ref()?;
    let (_, steps) = custom.selectable_fields.iter().find(|(name, _)| name == field)?;
    let value = protocol::jsonpath::evaluate(steps, object).into_iter().next();
    Some(value.map(|v| match v {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }))
}

#[derive(serde::Serialize, serde::Deserialize)]
struct ContinueToken {
    rv: u64,
    start: String,
}

/// Lists per the request's selectors, paging and resourceVersion parameters.
pub async fn collect(ctx: &Ctx, limit_override: Option<usize>) -> ApiResult<Listed> {
    let selectors = Selectors::parse(ctx)?;
    let prefix = collection_prefix(ctx);
    let (at_rv, start) = list_position(ctx, &prefix).await?;
    let limit = match limit_override {
        Some(limit) => Some(limit),
        None => parse_limit(ctx.param("limit"))?,
    };
    let wildcard_namespace = match ctx.scope {
        Scope::Wildcard => ctx.namespace().map(str::to_string),
        Scope::Cluster(_) => None,
    };
    let options = ListOptions { prefix: prefix.clone().into_bytes(), start, limit, at_rv };
    let mut decode_error = None;
    let mut items = Vec::new();
    let keep = |key: &[u8], stored: &store::Versioned| {
        if let Some(ns) = &wildcard_namespace {
            if objects::split_key(key).is_none_or(|(_, key_ns, _)| key_ns != ns) {
                return false;
            }
        }
        match objects::decode(stored) {
            Ok(object) if selectors.matches(&ctx.rt, &object) => {
                items.push(object);
                true
            }
            Ok(_) => false,
            Err(e) => {
                decode_error = Some(e);
                false
            }
        }
    };
    // A page at an old resourceVersion replays the change log since then: run it where
    // it cannot stall the other requests of this worker thread.
    let page = tokio::task::block_in_place(|| ctx.shard.store.list(&options, keep))?;
    if let Some(e) = decode_error {
        return Err(e);
    }
    let continue_token = page.next.map(|next| encode_token(page.rv, &next));
    Ok(Listed { items, rv: page.rv, continue_token })
}

fn collection_prefix(ctx: &Ctx) -> String {
    match &ctx.scope {
        Scope::Cluster(cluster) => objects::collection_prefix(&ctx.rt, Some(cluster), ctx.namespace()),
        Scope::Wildcard => objects::collection_prefix(&ctx.rt, None, None),
    }
}

fn parse_limit(limit: Option<&str>) -> ApiResult<Option<usize>> {
    match limit {
        None | Some("") | Some("0") => Ok(None),
        Some(text) => match text.parse::<i64>() {
            Ok(n) if n > 0 => Ok(Some(n as usize)),
            Ok(_) => Ok(None),
            Err(_) => Err(ApiError::bad_request(format!("limit must be a number, not {text:?}"))),
        },
    }
}

fn encode_token(rv: u64, next: &[u8]) -> String {
    let token = ContinueToken { rv, start: String::from_utf8_lossy(next).into_owned() };
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(serde_json::to_vec(&token).unwrap_or_default())
}

fn decode_token(token: &str, prefix: &str) -> ApiResult<ContinueToken> {
    let bad = || ApiError::bad_request("continue key is not valid: it was not produced by this server for this list");
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(token).map_err(|_| bad())?;
    let token: ContinueToken = serde_json::from_slice(&bytes).map_err(|_| bad())?;
    if !token.start.starts_with(prefix) {
        return Err(bad());
    }
    Ok(token)
}

/// Decides the resourceVersion to list at and where to start, per kube's rules for
/// `resourceVersion`, `resourceVersionMatch` and `continue`.
async fn list_position(ctx: &Ctx, prefix: &str) -> ApiResult<(Option<u64>, Option<Vec<u8>>)> {
    let rv = ctx.param("resourceVersion").filter(|rv| !rv.is_empty());
    let rv_match = ctx.param("resourceVersionMatch").filter(|m| !m.is_empty());
    if let Some(token) = ctx.param("continue").filter(|c| !c.is_empty()) {
        if rv.is_some_and(|rv| rv != "0") || rv_match.is_some() {
            return Err(ApiError::bad_request("specifying resource version is not allowed when using continue"));
        }
        let token = decode_token(token, prefix)?;
        if token.rv < ctx.shard.store.compacted_rv() {
            return Err(ApiError::expired("The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter."));
        }
        return Ok((Some(token.rv), Some(token.start.into_bytes())));
    }
    match (rv, rv_match) {
        (None, Some(_)) => {
            Err(ApiError::bad_request("resourceVersionMatch is forbidden unless resourceVersion is provided"))
        }
        (None, None) | (Some("0"), None | Some("NotOlderThan")) => Ok((None, None)),
        (Some("0"), Some("Exact")) => {
            Err(ApiError::bad_request("resourceVersionMatch \"Exact\" is forbidden for resourceVersion \"0\""))
        }
        (Some(rv), Some("Exact")) => {
            let rv = objects::parse_rv(rv)?;
            if rv < ctx.shard.store.compacted_rv() {
                return Err(ApiError::expired(format!("The resourceVersion for the provided list is too old: {rv} is before the oldest retained version {}", ctx.shard.store.compacted_rv())));
            }
            Ok((Some(rv), None))
        }
        (Some(rv), None | Some("NotOlderThan")) => {
            wait_for_rv(ctx, objects::parse_rv(rv)?).await?;
            Ok((None, None))
        }
        (_, Some(other)) => {
            Err(ApiError::bad_request(format!("resourceVersionMatch must be Exact or NotOlderThan, not {other:?}")))
        }
    }
}

/// Waits (bounded) until the shard has reached `rv`.
pub async fn wait_for_rv(ctx: &Ctx, rv: u64) -> ApiResult<()> {
    let deadline = tokio::time::Instant::now() + WAIT_FOR_RV_MAX;
    while ctx.shard.store.current_rv() < rv {
        if tokio::time::Instant::now() >= deadline {
            return Err(ApiError::timeout(format!(
                "Too large resource version: {rv}, current: {}",
                ctx.shard.store.current_rv()
            )));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Ok(())
}
