//! Authorization: may this caller do this in this logical cluster?
//!
//! [`authorize`] runs for every request addressed to one logical cluster, right after
//! the cluster is resolved ([`crate::api`]). The modules, in the order a decision meets
//! them:
//! - [`attributes`]: the request as kube's authorizer sees it (verb, group, resource,
//!   subresource, name, namespace, or a non-resource path).
//! - [`decision`]: `system:masters` may do anything (the fast path: no reads); the
//!   workspace's owner ([`crate::tenancy::owner`]) is its cluster-admin; anyone else needs
//!   workspace access, kcp style, and then an RBAC rule allowing the request.
//! - [`resolver`]: kube's RBAC rule resolution over the cluster's bindings and roles,
//!   with [`bootstrap`]'s in-memory default policy merged in and aggregation followed;
//!   [`subjects`] and [`rules`] are the matching, [`policy`] the objects.
//! - [`store_policy`]: reads those objects and the owner from the store, per request.
//! - [`workspace_rbac`]: one question asked of another (maybe remote) workspace's RBAC.
//! - [`impersonation`]: `Impersonate-*` headers (`kubectl --as`), each part allowed by the
//!   addressed cluster's RBAC before the request runs as the impersonated user.
//! - [`review`]: `authorization.k8s.io/v1` access and rules reviews, which ask the same
//!   questions through the API (`kubectl auth can-i`, whose protobuf bodies
//!   `protocol::protobuf` decodes like any other), and `authentication.k8s.io/v1`
//!   SelfSubjectReview (`kubectl auth whoami`).
//!
//! Denials are 403 `Status`es worded as kube words them. A non-master asking for a
//! logical cluster that does not exist here gets the same 403 as for one it may not
//! access ([`conceal_missing_cluster`]), so that names and paths cannot be probed.

pub mod attributes;
pub mod bootstrap;
pub mod decision;
pub mod impersonation;
pub mod policy;
pub mod resolver;
pub mod review;
pub mod rules;
pub mod store_policy;
pub mod subjects;
pub mod workspace_rbac;

use crate::metrics::AuthorizationLabels;
use crate::state::Shard;
use apiserver::rest::request_info::Target;
use apiserver::rest::status::ApiError;
use attributes::Attributes;
use decision::{Decision, Denial};
use protocol::gvr::GroupResource;
use protocol::path::ClusterRef;
use resolver::PolicyError;
use security::authn::Identity;
use std::collections::HashMap;

/// What a request asks, as the authorizer needs it.
#[derive(Debug, Clone, Copy)]
pub struct Request<'a> {
    /// The logical cluster as the URL named it (a name or a path): denials quote this, and
    /// nothing the caller did not already know.
    pub requested: &'a ClusterRef,
    /// The HTTP method (the verb of non-resource requests).
    pub method: &'a http::Method,
    /// What the path addresses.
    pub target: &'a Target,
    /// Query parameters (a field selector may name the object of a list or watch).
    pub query: &'a HashMap<String, String>,
}

impl From<PolicyError> for ApiError {
    fn from(error: PolicyError) -> Self {
        ApiError::internal(format!("authorization could not read the RBAC policy: {error}"))
    }
}

/// Allows the request or answers 403. `cluster` is the resolved logical-cluster name.
pub fn authorize(shard: &Shard, identity: &Identity, cluster: &str, request: &Request<'_>) -> Result<(), ApiError> {
    if identity.is_master() {
        // The benchmarked path: no span, no reads, one counter.
        count(shard, &Decision::Allowed(decision::Allowance::Masters));
        return Ok(());
    }
    authorize_by_policy(shard, identity, cluster, request)
}

#[tracing::instrument(
    name = "authorize",
    skip_all,
    fields(user = %identity.user, cluster, verb = tracing::field::Empty, decision = tracing::field::Empty)
)]
fn authorize_by_policy(
    shard: &Shard,
    identity: &Identity,
    cluster: &str,
    request: &Request<'_>,
) -> Result<(), ApiError> {
    let attributes = Attributes::of_request(request.method, request.target, request.query);
    let policy = store_policy::StorePolicy::new(shard, cluster);
    let decision = decision::decide(&policy, policy.owner().as_ref(), identity, &attributes)?;
    count(shard, &decision);
    let span = tracing::Span::current();
    span.record("verb", attributes.verb());
    span.record("decision", decision.label().1);
    match decision {
        // A bound resource's export may bound what its consumers' RBAC allows.
        Decision::Allowed(_) => crate::binding::maximal::check(shard, identity, cluster, &attributes),
        Decision::Denied(denial) => Err(forbidden(identity, request.requested, &attributes, denial)),
    }
}

/// A 404 from resolving the logical cluster, as a non-master sees it: the same 403 as a
/// cluster it may not access. Masters keep the 404 and its explanation.
pub fn conceal_missing_cluster(identity: &Identity, request: &Request<'_>, error: ApiError) -> ApiError {
    if !error.is_not_found() || identity.is_master() {
        return error;
    }
    let attributes = Attributes::of_request(request.method, request.target, request.query);
    forbidden(identity, request.requested, &attributes, Denial::NoWorkspaceAccess)
}

/// kube's 403: `<resource> "<name>" is forbidden: <why>`, with the resource in details.
/// Without workspace access the answer names only the workspace as the URL did, worded
/// as the front-proxy words unknown workspaces, so it cannot tell them apart.
fn forbidden(identity: &Identity, requested: &ClusterRef, attributes: &Attributes, denial: Denial) -> ApiError {
    if let Denial::NoWorkspaceAccess = denial {
        return ApiError::forbidden(protocol::path::workspace_access_denied(&identity.user, &requested.to_string()));
    }
    let why = attributes.forbidden_message(&identity.user);
    match attributes {
        Attributes::Resource(r) => {
            ApiError::forbidden_on(&GroupResource::new(r.group.as_str(), r.resource.as_str()), &r.name, &why)
        }
        Attributes::NonResource(_) => ApiError::forbidden(format!("forbidden: {why}")),
    }
}

fn count(shard: &Shard, decision: &Decision) {
    let (decision, reason) = decision.label();
    shard.metrics.authorization_decisions.get_or_create(&AuthorizationLabels { decision, reason }).inc();
}
