//! The REST verbs, one module each, and the thin dispatcher that routes to them.

mod create;
mod delete;
mod get;
mod list;
mod patch;
mod scale;
mod update;
mod watch;

use crate::http::negotiate::{self, Representation};
use crate::http::request_info::{ResourceRequest, Verb};
use crate::http::status::{ApiError, ApiResult};
use crate::http::{self, Response};
use crate::registry::ResourceType;
use crate::state::Shard;
use crate::storage::{ObjectRef, WriteOptions};
use hyper::body::Incoming;
use security::authn::Identity;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Arc;

/// Which logical clusters a request addresses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scope {
    /// One logical cluster, by name.
    Cluster(String),
    /// Every logical cluster on this shard (`/clusters/*`), list and watch only.
    Wildcard,
}

/// Everything a verb needs about its request.
pub struct Ctx {
    /// Shared shard state.
    pub shard: Arc<Shard>,
    /// The caller.
    pub identity: Identity,
    /// The addressed cluster(s).
    pub scope: Scope,
    /// The parsed path.
    pub req: ResourceRequest,
    /// The resource's registry row.
    pub rt: Arc<ResourceType>,
    /// Query parameters.
    pub query: HashMap<String, String>,
    /// Request headers.
    pub headers: ::http::HeaderMap,
}

impl Ctx {
    /// The cluster of a single-cluster request.
    pub fn cluster(&self) -> ApiResult<&str> {
        match &self.scope {
            Scope::Cluster(name) => Ok(name),
            Scope::Wildcard => Err(ApiError::method_not_allowed(
                "only list and watch are served across all logical clusters (/clusters/*)",
            )),
        }
    }

    /// The object the path names.
    pub fn object_ref(&self) -> ApiResult<ObjectRef<'_>> {
        let name = self.req.name.as_deref().ok_or_else(|| ApiError::bad_request("the request names no object"))?;
        Ok(ObjectRef { cluster: self.cluster()?, namespace: self.namespace(), name })
    }

    /// The namespace of the request, for namespaced resources.
    pub fn namespace(&self) -> Option<&str> {
        if self.rt.namespaced {
            self.req.namespace.as_deref()
        } else {
            None
        }
    }

    /// A query parameter.
    pub fn param(&self, name: &str) -> Option<&str> {
        self.query.get(name).map(String::as_str)
    }

    /// A header as text.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// `dryRun=All` → no write; any other value is 400, as in kube.
    pub fn write_options(&self) -> ApiResult<WriteOptions> {
        match self.param("dryRun") {
            None | Some("") => Ok(WriteOptions::default()),
            Some("All") => Ok(WriteOptions { dry_run: true }),
            Some(other) => Err(ApiError::bad_request(format!(
                "unsupported dryRun value {other:?}: the only supported value is \"All\""
            ))),
        }
    }

    /// The representation to answer in.
    pub fn representation(&self) -> ApiResult<Representation> {
        negotiate::choose(self.header("accept"), true, false)
    }

    /// Answers with one object in the negotiated representation.
    pub fn respond_object(&self, code: u16, object: &Value, warnings: &[String]) -> ApiResult<Response> {
        self.respond(code, object, warnings, |o| vec![o.clone()])
    }

    /// Answers with a list in the negotiated representation (a table has a row per item).
    pub fn respond_list(&self, code: u16, list: &Value, warnings: &[String]) -> ApiResult<Response> {
        self.respond(code, list, warnings, |l| l.get("items").and_then(Value::as_array).cloned().unwrap_or_default())
    }

    fn respond(
        &self,
        code: u16,
        value: &Value,
        warnings: &[String],
        rows: impl Fn(&Value) -> Vec<Value>,
    ) -> ApiResult<Response> {
        let deprecation = self.rt.custom.as_ref().and_then(|c| c.deprecation.clone());
        let with_deprecation: Vec<String>;
        let warnings = match deprecation {
            Some(warning) => {
                with_deprecation = warnings.iter().cloned().chain([warning]).collect();
                &with_deprecation
            }
            None => warnings,
        };
        let converted;
        let value = match self.rt.converts() {
            true => {
                converted = self.present_all(value);
                &converted
            }
            false => value,
        };
        match self.representation()? {
            Representation::Table if value.get("kind").and_then(Value::as_str) != Some("Status") => {
                let include = crate::table::IncludeObject::parse(self.param("includeObject"));
                let list_meta = serde_json::json!({"resourceVersion": value.pointer("/metadata/resourceVersion").cloned().unwrap_or_default()});
                let table = crate::table::table(&self.rt, &rows(value), include, list_meta, true);
                Ok(http::json_response(code, &table, warnings))
            }
            Representation::Yaml => {
                let yaml = serde_yaml_ng::to_string(value).map_err(|e| ApiError::internal(e.to_string()))?;
                Ok(http::bytes_response(code, "application/yaml", yaml, warnings))
            }
            _ => Ok(http::json_response(code, value, warnings)),
        }
    }
}

impl Ctx {
    /// A custom resource (or a list of them) in the version the request addressed.
    fn present_all(&self, value: &Value) -> Value {
        let mut value = value.clone();
        match value.get_mut("items").and_then(Value::as_array_mut) {
            Some(items) => items.iter_mut().for_each(|item| crate::conversion::to_version(&self.rt, item)),
            None => crate::conversion::to_version(&self.rt, &mut value),
        }
        value
    }

    /// One object as the client should see it (custom resources in the addressed version,
    /// with its defaults); other objects are borrowed as they are.
    pub fn present<'v>(&self, object: &'v Value) -> std::borrow::Cow<'v, Value> {
        if !self.rt.converts() {
            return std::borrow::Cow::Borrowed(object);
        }
        let mut object = object.clone();
        crate::conversion::to_version(&self.rt, &mut object);
        std::borrow::Cow::Owned(object)
    }
}

/// Routes a resource request to its verb.
pub async fn dispatch(ctx: Ctx, body: Incoming) -> ApiResult<Response> {
    let sub = ctx.req.subresource.clone();
    if let Some(sub) = sub.as_deref() {
        if !ctx.rt.has_subresource(sub) {
            return Err(ApiError::not_found_message(format!(
                "the server could not find the requested resource ({} {}/{})",
                ctx.req.verb.as_str(),
                ctx.rt.resource,
                sub
            )));
        }
    }
    if matches!(ctx.scope, Scope::Wildcard) && !matches!(ctx.req.verb, Verb::List | Verb::Watch) {
        ctx.cluster()?;
    }
    if ctx.rt.strategy == crate::registry::Strategy::AccessReview {
        return crate::authz::review::handle(&ctx, body).await;
    }
    match (ctx.req.verb, sub.as_deref()) {
        (Verb::Get, Some("scale")) => scale::get(&ctx),
        (Verb::Update | Verb::Patch, Some("scale")) => scale::write(&ctx, body).await,
        (Verb::Get, _) => get::handle(&ctx),
        (Verb::List, None) => list::handle(&ctx).await,
        (Verb::Watch, None) => watch::handle(ctx),
        (Verb::Create, None) => create::handle(&ctx, body).await,
        (Verb::Update, _) => update::handle(&ctx, body).await,
        (Verb::Patch, _) => patch::handle(&ctx, body).await,
        (Verb::Delete, None) => delete::handle(&ctx, body).await,
        (Verb::DeleteCollection, None) if !ctx.rt.verbs().contains(&"deletecollection") => {
            Err(ApiError::method_not_allowed(format!(
                "the server does not allow this method on the requested resource ({} cannot be deleted as a collection)",
                ctx.rt.resource
            )))
        }
        (Verb::DeleteCollection, None) => delete::handle_collection(&ctx, body).await,
        (Verb::Unsupported, _) => Err(ApiError::method_not_allowed(format!(
            "the server does not allow this method on the requested resource ({})",
            ctx.rt.resource
        ))),
        (verb, Some(sub)) => Err(ApiError::method_not_allowed(format!(
            "{} is not supported on {}/{sub}",
            verb.as_str(),
            ctx.rt.resource
        ))),
    }
}

/// Admission that needs the caller, for an object about to be created (storage's own
/// admission does not know who asks): a Workspace records its creator as owner, and an
/// APIBinding needs `bind` permission on its export.
pub(crate) fn admit_caller(ctx: &Ctx, object: &mut Value) -> ApiResult<()> {
    if ctx.rt.strategy == crate::registry::Strategy::Workspace {
        crate::tenancy::owner::record_creator(&ctx.identity, object);
    }
    if is_api_binding(ctx) {
        crate::binding::admission::check_bind(&ctx.shard, &ctx.identity, ctx.cluster()?, object)?;
    }
    Ok(())
}

/// Admission that needs the caller, for an update of `old` to `new`: an APIBinding that
/// points at another export needs `bind` permission on it.
pub(crate) fn admit_caller_update(ctx: &Ctx, old: &Value, new: &Value) -> ApiResult<()> {
    let reference = |object: &Value| object.pointer("/spec/reference").cloned();
    if is_api_binding(ctx) && ctx.req.subresource.is_none() && reference(old) != reference(new) {
        crate::binding::admission::check_bind(&ctx.shard, &ctx.identity, ctx.cluster()?, new)?;
    }
    Ok(())
}

fn is_api_binding(ctx: &Ctx) -> bool {
    ctx.rt.group == protocol::types::APIS_KCP_GROUP && ctx.rt.resource == "apibindings"
}

/// Reads and decodes an object body, checks its kind and apiVersion, and prunes unknown
/// fields per `fieldValidation` (Strict → 400, Warn → warnings, Ignore → silent).
pub async fn read_object(ctx: &Ctx, body: Incoming) -> ApiResult<(Value, Vec<String>)> {
    let length = ctx.header("content-length").and_then(|l| l.parse().ok());
    let bytes = http::read_body(body, length).await?;
    let mut object = negotiate::decode_object(ctx.header("content-type"), &bytes)?;
    default_type_meta(&ctx.rt, &mut object);
    check_type_meta(&ctx.rt, &object)?;
    let warnings = crate::validation::prune_unknown(ctx, &mut object)?;
    crate::validation::check_types(ctx, &object)?;
    Ok((object, warnings))
}

/// A create or update body of a built-in kind may leave out `kind` and `apiVersion`: kube
/// decodes it into the type the URL names (clients such as the Python one rely on that).
/// Custom resources are decoded as unstructured objects, which must say what they are.
fn default_type_meta(rt: &ResourceType, object: &mut Value) {
    if rt.custom.is_some() {
        return;
    }
    let Some(map) = object.as_object_mut() else { return };
    for (field, value) in [("kind", rt.kind.clone()), ("apiVersion", rt.api_version())] {
        if map.get(field).is_none_or(|v| v.as_str().is_some_and(str::is_empty) || v.is_null()) {
            map.insert(field.into(), Value::from(value));
        }
    }
}

/// The body's kind and apiVersion must be the URL's resource.
pub fn check_type_meta(rt: &ResourceType, object: &Value) -> ApiResult<()> {
    let kind = object.get("kind").and_then(Value::as_str).unwrap_or_default();
    let api_version = object.get("apiVersion").and_then(Value::as_str).unwrap_or_default();
    if kind.is_empty() {
        return Err(ApiError::bad_request("Object 'Kind' is missing in the request body"));
    }
    if api_version.is_empty() {
        return Err(ApiError::bad_request("Object 'apiVersion' is missing in the request body"));
    }
    if kind != rt.kind || api_version != rt.api_version() {
        return Err(ApiError::bad_request(format!(
            "the body's {api_version}, Kind={kind} does not match the URL's resource {} ({}, Kind={})",
            rt.resource,
            rt.api_version(),
            rt.kind
        )));
    }
    Ok(())
}

/// Checks that the body's namespace and name agree with the URL's, filling them when absent.
pub fn reconcile_name_and_namespace(ctx: &Ctx, object: &mut Value) -> ApiResult<()> {
    use protocol::meta;
    match (ctx.namespace(), meta::namespace(object).map(str::to_string)) {
        (Some(url), Some(body)) if url != body => {
            return Err(ApiError::bad_request(format!(
                "the namespace of the provided object ({body}) does not match the namespace sent on the request ({url})"
            )))
        }
        (Some(url), None) => meta::set_meta_str(object, "namespace", Some(url)),
        (None, Some(_)) if !ctx.rt.namespaced => meta::set_meta_str(object, "namespace", None),
        (None, _) if ctx.rt.namespaced => {
            return Err(ApiError::bad_request(format!(
                "{} is namespaced: use /namespaces/<namespace>/{} in the path",
                ctx.rt.resource, ctx.rt.resource
            )))
        }
        _ => {}
    }
    if let Some(url_name) = ctx.req.name.as_deref() {
        match meta::name(object) {
            Some(body) if body != url_name => {
                return Err(ApiError::bad_request(format!(
                    "the name of the object ({body}) does not match the name on the URL ({url_name})"
                )))
            }
            None => meta::set_meta_str(object, "name", Some(url_name)),
            _ => {}
        }
    }
    Ok(())
}
