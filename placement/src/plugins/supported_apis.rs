//! SupportedApis: a kcp SyncTarget must support every API the workspace binds.
//!
//! Each bound API is identified by group, resource and the identity hash of the
//! APIExport behind it, so two exports of a same-named resource are told apart, as kcp
//! does when it compares a binding's bound resources to a target's accepted resources.
//! Built-in resources (ConfigMaps, Secrets, …) need no binding, so a workspace that binds
//! nothing fits every target, and a target without supportedAPIExports takes exactly
//! those workspaces.

use super::{Context, Filter, Subject, Verdict};
use crate::candidate::ApiIdentity;

pub(super) struct SupportedApis<'a> {
    bound: &'a [ApiIdentity],
}

pub(super) fn prepare<'a>(context: &Context<'a>) -> SupportedApis<'a> {
    SupportedApis { bound: &context.policy.bound_apis }
}

impl Filter for SupportedApis<'_> {
    fn check(&self, subject: Subject<'_>) -> Verdict {
        if self.bound.is_empty() {
            return Verdict::Pass;
        }
        let Some(supported) = &subject.candidate.supported_apis else {
            return Verdict::reject(format!(
                "has no supportedAPIExports, so it takes only built-in resources, and the workspace binds {} API(s)",
                self.bound.len()
            ));
        };
        match self.bound.iter().find(|api| !supported.contains(api)) {
            None => Verdict::Pass,
            Some(api) => Verdict::reject(format!(
                "does not support {} with identity {}",
                group_resource(api),
                short_hash(&api.identity_hash)
            )),
        }
    }
}

fn group_resource(api: &ApiIdentity) -> String {
    if api.group.is_empty() {
        api.resource.clone()
    } else {
        format!("{}.{}", api.resource, api.group)
    }
}

/// Identity hashes are 64 hex digits; a prefix is enough to tell them apart in a reason.
fn short_hash(hash: &str) -> &str {
    hash.get(..12).unwrap_or(hash)
}
