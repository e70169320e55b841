//! `authorization.k8s.io/v1` reviews, answered per logical cluster and never stored:
//! SelfSubjectAccessReview and SelfSubjectRulesReview (what `kubectl auth can-i` and
//! `kubectl auth can-i --list` ask), SubjectAccessReview and LocalSubjectAccessReview
//! (asking about someone else: whoever may create them, by RBAC, which bootstrap policy
//! gives only cluster-admins and, for the local one, namespace admins); and
//! `authentication.k8s.io/v1` SelfSubjectReview (`kubectl auth whoami`): who the server
//! takes the caller for, the impersonated user when impersonating.
//!
//! Each is a create whose response echoes the body with a `status`, as in kube.

use super::attributes::{Attributes, NonResourceAttributes, ResourceAttributes};
use super::decision::{self, Decision, Denial};
use super::policy::{null_as_default, PolicyRule};
use super::store_policy::StorePolicy;
use crate::state::Shard;
use apiserver::rest::request_info::Verb;
use apiserver::rest::status::{ApiError, ApiResult};
use apiserver::rest::Response;
use apiserver::verbs::body::read_object;
use apiserver::verbs::ctx::Ctx;
use security::authn::Identity;
use serde::Deserialize;
use serde_json::{json, Value};
use std::collections::BTreeMap;

const GROUP: &str = "authorization.k8s.io";
const AUTHENTICATION_GROUP: &str = "authentication.k8s.io";

/// Gives the review rows their strategy: create-only, never stored (the verbs answer them
/// through [`handle`]).
pub fn register(registry: &mut apiserver::registry::Registry) {
    for resource in
        ["localsubjectaccessreviews", "selfsubjectaccessreviews", "selfsubjectrulesreviews", "subjectaccessreviews"]
    {
        registry.set_strategy(GROUP, resource, std::sync::Arc::new(Review));
    }
    registry.set_strategy(AUTHENTICATION_GROUP, "selfsubjectreviews", std::sync::Arc::new(Review));
}

/// The reviews' strategy.
#[derive(Debug, Default)]
pub struct Review;

impl apiserver::registry::strategy::Strategy for Review {
    fn verbs(&self) -> &'static [&'static str] {
        &["create"]
    }

    fn stored(&self) -> bool {
        false
    }
}

/// `spec.resourceAttributes` of an access review.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct ResourceSpec {
    namespace: String,
    verb: String,
    group: String,
    version: String,
    resource: String,
    subresource: String,
    name: String,
}

/// `spec.nonResourceAttributes` of an access review.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct NonResourceSpec {
    path: String,
    verb: String,
}

/// The `spec` of any of the four reviews; each reads its own fields.
#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct Spec {
    resource_attributes: Option<ResourceSpec>,
    non_resource_attributes: Option<NonResourceSpec>,
    user: String,
    uid: String,
    #[serde(deserialize_with = "null_as_default")]
    groups: Vec<String>,
    #[serde(deserialize_with = "null_as_default")]
    extra: BTreeMap<String, Vec<String>>,
    /// SelfSubjectRulesReview only.
    namespace: String,
}

/// Answers a review: POST of a review object to its collection.
pub async fn handle(shard: &Shard, ctx: &Ctx, body: hyper::body::Incoming) -> ApiResult<Response> {
    if ctx.req.verb != Verb::Create || ctx.req.name.is_some() {
        return Err(ApiError::method_not_allowed(format!(
            "only create is served on {}: a review is a question answered at once, not a stored object",
            ctx.rt.resource
        )));
    }
    let (mut review, warnings) = read_object(ctx, body).await?;
    if ctx.rt.kind == "SelfSubjectReview" {
        review["status"] = json!({"userInfo": user_info(&ctx.identity)});
        return ctx.respond_object(201, &review, &warnings);
    }
    let spec: Spec = match review.get("spec") {
        Some(spec) => serde_json::from_value(spec.clone())
            .map_err(|e| ApiError::bad_request(format!("{} in body: spec: {e}", ctx.rt.kind)))?,
        None => Spec::default(),
    };
    let kind = ctx.rt.kind.as_str();
    let status = match kind {
        "SelfSubjectRulesReview" => rules_review(shard, ctx, &spec)?,
        "SelfSubjectAccessReview" => access_review(shard, ctx, &ctx.identity, attributes_of(kind, &spec, None)?)?,
        "LocalSubjectAccessReview" => {
            let subject = subject_of(kind, &spec)?;
            access_review(shard, ctx, &subject, attributes_of(kind, &spec, ctx.req.namespace.as_deref())?)?
        }
        _ => access_review(shard, ctx, &subject_of(kind, &spec)?, attributes_of(kind, &spec, None)?)?,
    };
    review["status"] = status;
    ctx.respond_object(201, &review, &warnings)
}

fn invalid(kind: &str, field: &str, message: &str) -> ApiError {
    ApiError::invalid(kind, GROUP, "", &[(field.to_string(), message.to_string())])
}

/// The question an access review asks. A LocalSubjectAccessReview is about the
/// namespace of its URL (`local_namespace`) and resources only, as in kube.
fn attributes_of(kind: &str, spec: &Spec, local_namespace: Option<&str>) -> ApiResult<Attributes> {
    match (&spec.resource_attributes, &spec.non_resource_attributes, local_namespace) {
        (Some(_), Some(_), _) | (None, None, _) => Err(invalid(
            kind,
            "spec.resourceAttributes",
            "exactly one of nonResourceAttributes or resourceAttributes must be specified",
        )),
        (None, Some(_), Some(_)) => {
            Err(invalid(kind, "spec.nonResourceAttributes", "disallowed on this kind of request"))
        }
        (None, Some(n), None) => {
            Ok(Attributes::NonResource(NonResourceAttributes { verb: n.verb.clone(), path: n.path.clone() }))
        }
        (Some(r), None, local) => {
            let namespace = match local {
                Some(url) if !r.namespace.is_empty() && r.namespace != url => {
                    return Err(invalid(
                        kind,
                        "spec.resourceAttributes.namespace",
                        "must match the namespace of the request's URL",
                    ))
                }
                Some(url) => url.to_string(),
                None => r.namespace.clone(),
            };
            Ok(Attributes::Resource(ResourceAttributes {
                verb: r.verb.clone(),
                group: r.group.clone(),
                version: r.version.clone(),
                resource: r.resource.clone(),
                subresource: r.subresource.clone(),
                name: r.name.clone(),
                namespace,
            }))
        }
    }
}

/// The user a (Local)SubjectAccessReview asks about, exactly as given: unlike a login,
/// no `system:authenticated` is added, as in kube.
fn subject_of(kind: &str, spec: &Spec) -> ApiResult<Identity> {
    if spec.user.is_empty() && spec.groups.is_empty() {
        return Err(invalid(kind, "spec.user", "at least one of user or group must be specified"));
    }
    Ok(Identity {
        user: spec.user.clone(),
        uid: spec.uid.clone(),
        groups: spec.groups.clone(),
        extra: spec.extra.clone(),
    })
}

/// kube's `UserInfo`: empty UID and extra left out, as kube's JSON leaves them out.
fn user_info(identity: &Identity) -> Value {
    let mut info = json!({"username": identity.user, "groups": identity.groups});
    if !identity.uid.is_empty() {
        info["uid"] = Value::from(identity.uid.as_str());
    }
    if !identity.extra.is_empty() {
        info["extra"] = json!(identity.extra);
    }
    info
}

/// `status` of an access review: the decision the authorizer would take, including the
/// bound of a bound resource's APIExport (its maximal permission policy), which can refuse
/// what the workspace's own RBAC allows.
fn access_review(shard: &Shard, ctx: &Ctx, subject: &Identity, attributes: Attributes) -> ApiResult<Value> {
    let cluster = ctx.cluster()?;
    let policy = StorePolicy::new(shard, cluster);
    let decision = decision::decide(&policy, policy.owner().as_ref(), subject, &attributes)?;
    let bounded = match decision {
        Decision::Allowed(_) => crate::binding::maximal::check(shard, subject, cluster, &attributes).err(),
        Decision::Denied(_) => None,
    };
    Ok(access_status(&decision, bounded.as_ref()))
}

/// The review's status from the RBAC decision and, when RBAC allowed, the export's
/// refusal: a 403 from the maximal permission policy denies with its message as reason;
/// any other error (the export cannot be read yet) denies with it as evaluationError,
/// as kube reports an authorizer that could not decide.
fn access_status(decision: &Decision, bounded: Option<&ApiError>) -> Value {
    let mut status = json!({"allowed": matches!(decision, Decision::Allowed(_)) && bounded.is_none()});
    let reason = match bounded {
        Some(refusal) if refusal.code == 403 => refusal.message.clone(),
        Some(_) => String::new(),
        None => decision.reason(),
    };
    if !reason.is_empty() {
        status["reason"] = Value::from(reason);
    }
    if let Some(error) = bounded.filter(|error| error.code != 403) {
        status["evaluationError"] = Value::from(error.message.clone());
    }
    if *decision == Decision::Denied(Denial::NoWorkspaceAccess) {
        // kcp denies outright here: no other authorizer could allow it.
        status["denied"] = Value::from(true);
    }
    status
}

/// `status` of a SelfSubjectRulesReview: the caller's rules in `spec.namespace`.
fn rules_review(shard: &Shard, ctx: &Ctx, spec: &Spec) -> ApiResult<Value> {
    if spec.namespace.is_empty() {
        return Err(ApiError::bad_request("no namespace on request: set spec.namespace"));
    }
    let policy = StorePolicy::new(shard, ctx.cluster()?);
    let rules = decision::rules_for(&policy, policy.owner().as_ref(), &ctx.identity, &spec.namespace)?;
    let mut status = rules_status(&rules.rules);
    status["incomplete"] = Value::from(!rules.errors.is_empty());
    if !rules.errors.is_empty() {
        status["evaluationError"] = Value::from(rules.errors.join(", "));
    }
    Ok(status)
}

/// kube's split of rules into resource rules and non-resource rules.
fn rules_status(rules: &[PolicyRule]) -> Value {
    let resource_rules: Vec<Value> = rules
        .iter()
        .filter(|rule| !rule.resources.is_empty())
        .map(|rule| {
            let mut out = json!({"verbs": rule.verbs, "apiGroups": rule.api_groups, "resources": rule.resources});
            if !rule.resource_names.is_empty() {
                out["resourceNames"] = json!(rule.resource_names);
            }
            out
        })
        .collect();
    let non_resource_rules: Vec<Value> = rules
        .iter()
        .filter(|rule| !rule.non_resource_urls.is_empty())
        .map(|rule| json!({"verbs": rule.verbs, "nonResourceURLs": rule.non_resource_urls}))
        .collect();
    json!({"resourceRules": resource_rules, "nonResourceRules": non_resource_rules})
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(value: Value) -> Spec {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn access_review_specs_become_attributes() {
        let resource = spec(json!({"resourceAttributes": {"verb": "get", "resource": "configmaps", "namespace": "a"}}));
        let Attributes::Resource(r) = attributes_of("SelfSubjectAccessReview", &resource, None).unwrap() else {
            panic!("resource attributes expected");
        };
        assert_eq!((r.verb.as_str(), r.resource.as_str(), r.namespace.as_str()), ("get", "configmaps", "a"));
        let local = attributes_of("LocalSubjectAccessReview", &resource, Some("a")).unwrap();
        assert_eq!(local.namespace(), "a");
        let unset = spec(json!({"resourceAttributes": {"verb": "get", "resource": "configmaps"}}));
        assert_eq!(attributes_of("LocalSubjectAccessReview", &unset, Some("b")).unwrap().namespace(), "b");
        let path = spec(json!({"nonResourceAttributes": {"verb": "get", "path": "/api"}}));
        assert_eq!(attributes_of("SubjectAccessReview", &path, None).unwrap().verb(), "get");

        let errors = [
            attributes_of("LocalSubjectAccessReview", &resource, Some("b")),
            attributes_of("LocalSubjectAccessReview", &path, Some("b")),
            attributes_of("SelfSubjectAccessReview", &spec(json!({})), None),
            attributes_of(
                "SelfSubjectAccessReview",
                &spec(json!({"resourceAttributes": {}, "nonResourceAttributes": {}})),
                None,
            ),
        ];
        for error in errors {
            assert_eq!(error.unwrap_err().code, 422);
        }
    }

    /// RBAC's decision stands unless an allowed request meets the export's refusal: a 403
    /// denies with its message, anything else denies as an evaluation error.
    #[test]
    fn the_exports_refusal_turns_an_allowed_review_into_a_denial() {
        let allowed = Decision::Allowed(decision::Allowance::Owner);
        assert_eq!(access_status(&allowed, None)["allowed"], true);
        let refused = ApiError::forbidden("not by the maximal permission policy");
        let status = access_status(&allowed, Some(&refused));
        assert_eq!(status["allowed"], false);
        assert_eq!(status["reason"], "not by the maximal permission policy");
        assert!(status.get("evaluationError").is_none() && status.get("denied").is_none());
        let unreadable = ApiError::unavailable("the APIExport cannot be read here yet");
        let status = access_status(&allowed, Some(&unreadable));
        assert_eq!(status["allowed"], false);
        assert_eq!(status["evaluationError"], "the APIExport cannot be read here yet");
        assert!(status.get("reason").is_none(), "RBAC's allowing reason is not the answer");
        let no_access = access_status(&Decision::Denied(Denial::NoWorkspaceAccess), None);
        assert_eq!((no_access["allowed"].clone(), no_access["denied"].clone()), (json!(false), json!(true)));
    }

    #[test]
    fn subjects_are_taken_as_given() {
        let subject = subject_of("SubjectAccessReview", &spec(json!({"user": "alice", "groups": null}))).unwrap();
        assert_eq!(subject.groups, Vec::<String>::new(), "no system:authenticated added");
        assert_eq!(subject_of("SubjectAccessReview", &spec(json!({}))).unwrap_err().code, 422);
    }

    #[test]
    fn user_info_leaves_out_what_is_empty() {
        let mut alice = Identity::new("alice", "", ["dev".to_string()]);
        assert_eq!(user_info(&alice), json!({"username": "alice", "groups": ["dev", "system:authenticated"]}));
        alice.uid = "u-1".into();
        alice.extra.insert("team".into(), vec!["a".into()]);
        assert_eq!(user_info(&alice)["uid"], "u-1");
        assert_eq!(user_info(&alice)["extra"], json!({"team": ["a"]}));
    }

    #[test]
    fn rules_split_into_resource_and_non_resource_rules() {
        let rules = super::super::bootstrap::cluster_admin_rules();
        let status = rules_status(rules);
        assert_eq!(status["resourceRules"], json!([{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}]));
        assert_eq!(status["nonResourceRules"], json!([{"verbs": ["*"], "nonResourceURLs": ["*"]}]));
    }
}
