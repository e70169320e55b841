//! GET of a collection: selectors, paging and resourceVersion semantics.

use super::ctx::{Ctx, Scope};
use crate::objects;
use crate::registry::ResourceType;
use crate::rest::status::{ApiError, ApiResult};
use crate::rest::Response;
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
    if let Some(remaining) = listed.remaining {
        list_meta["remainingItemCount"] = Value::from(remaining);
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
    /// How many objects the following pages hold (unfiltered lists only, as in kube).
    pub remaining: Option<u64>,
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

    /// Whether neither selector filters anything.
    pub fn is_empty(&self) -> bool {
        self.labels.is_empty() && self.fields.is_empty()
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

/// kube's message for a continue token older than the retained history.
const EXPIRED_CONTINUE: &str = "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.";

/// The resourceVersion of a continue token that lists the rest at the newest state (kube
/// encodes it as -1; no revision is 0 here).
const LATEST: u64 = 0;

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
    // kube counts what remains only when no selector filters the list.
    let count_remaining = selectors.is_empty() && wildcard_namespace.is_none() && ctx.clusters.is_none();
    let options = ListOptions { prefix: prefix.clone().into_bytes(), start, limit, at_rv, count_remaining };
    let mut decode_error = None;
    let mut items = Vec::new();
    let keep = |key: &[u8], stored: &store::Versioned| {
        if !ctx.sees_cluster_of(key) {
            return false;
        }
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
    let page = tokio::task::block_in_place(|| ctx.core.store.list(&options, keep))?;
    if let Some(e) = decode_error {
        return Err(e);
    }
    let mut remaining = page.remaining;
    if let Scope::Cluster(cluster) = &ctx.scope {
        let range = (options.start.as_deref().unwrap_or(prefix.as_bytes()), page.next.as_deref());
        add_implicit(ctx, cluster, &selectors, range, &mut items, &mut remaining)?;
    }
    let continue_token = page.next.map(|next| encode_token(page.rv, &next));
    Ok(Listed { items, rv: page.rv, continue_token, remaining })
}

/// Adds the implicit objects (a namespace's `default` ServiceAccount) the page's key range
/// `[start, next)` holds and nothing stored shadows, in key order; those after the page
/// count in `remaining`.
fn add_implicit(
    ctx: &Ctx,
    cluster: &str,
    selectors: &Selectors,
    (start, next): (&[u8], Option<&[u8]>),
    items: &mut Vec<Value>,
    remaining: &mut Option<u64>,
) -> ApiResult<()> {
    let implicit = implicit_objects(ctx, cluster)?;
    let key = |object: &Value| {
        objects::key(&ctx.rt, cluster, meta::namespace(object), meta::name(object).unwrap_or_default()).into_bytes()
    };
    let after_page = |object: &Value| next.is_some_and(|next| key(object).as_slice() >= next);
    if let Some(count) = remaining.as_mut() {
        *count += implicit.iter().filter(|o| after_page(o)).count() as u64;
    }
    let added: Vec<Value> = implicit
        .into_iter()
        .filter(|o| key(o).as_slice() >= start && !after_page(o) && selectors.matches(&ctx.rt, o))
        .collect();
    if !added.is_empty() {
        items.extend(added);
        let position = |o: &Value| {
            (meta::namespace(o).unwrap_or_default().to_string(), meta::name(o).unwrap_or_default().to_string())
        };
        items.sort_by_key(position);
    }
    Ok(())
}

/// The implicit objects (a namespace's `default` ServiceAccount) of the request's
/// namespace, or of every namespace of `cluster`, that nothing stored shadows.
pub fn implicit_objects(ctx: &Ctx, cluster: &str) -> ApiResult<Vec<Value>> {
    if ctx.rt.strategy.implicit_names().is_empty() {
        return Ok(Vec::new());
    }
    let namespaces_rt = ctx.core.registry.namespaces();
    let namespaces: Vec<Value> = match ctx.namespace() {
        Some(namespace) => {
            let at = crate::storage::ObjectRef { cluster, namespace: None, name: namespace };
            match crate::storage::get(&ctx.core, &namespaces_rt, &at) {
                Ok((ns, _)) => vec![ns],
                Err(e) if e.is_not_found() => Vec::new(),
                Err(e) => return Err(e),
            }
        }
        None => objects::list_in_cluster(&ctx.core.store, &namespaces_rt, cluster)?,
    };
    crate::storage::implicit_objects(&ctx.core, &ctx.rt, cluster, &namespaces)
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
        if token.rv == LATEST {
            // A token handed out with a 410: the rest of the list as it is now.
            return Ok((None, Some(token.start.into_bytes())));
        }
        if token.rv < ctx.core.store.compacted_rv() {
            // kube's offer: continue inconsistently from where the client was, at the
            // newest state, with the token in the Status's metadata.
            let mut error = ApiError::expired(EXPIRED_CONTINUE);
            error.list_continue = Some(encode_token(LATEST, token.start.as_bytes()));
            return Err(error);
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
            if rv < ctx.core.store.compacted_rv() {
                return Err(ApiError::expired(format!("The resourceVersion for the provided list is too old: {rv} is before the oldest retained version {}", ctx.core.store.compacted_rv())));
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
    while ctx.core.store.current_rv() < rv {
        if tokio::time::Instant::now() >= deadline {
            return Err(ApiError::timeout(format!(
                "Too large resource version: {rv}, current: {}",
                ctx.core.store.current_rv()
            )));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Ok(())
}
