//! Whether one RBAC rule allows a request — kube's `RuleAllows` and its helpers, and
//! kcp's workspace-access check. Pure and table-tested.

use super::attributes::{Attributes, NonResourceAttributes, ResourceAttributes, ACCESS_VERB};
use super::policy::PolicyRule;
use protocol::types::TENANCY_KCP_GROUP;

/// RBAC's wildcard for verbs, groups, resources and paths.
const ALL: &str = "*";

const WORKSPACE_CONTENT: &str = "workspaces/content";

/// Whether `rule` allows the request (kube's `RuleAllows`).
pub fn allows(rule: &PolicyRule, attributes: &Attributes) -> bool {
    match attributes {
        Attributes::Resource(r) => allows_resource(rule, r),
        Attributes::NonResource(n) => allows_non_resource(rule, n),
    }
}

fn allows_resource(rule: &PolicyRule, r: &ResourceAttributes) -> bool {
    let combined = match r.subresource.as_str() {
        "" => std::borrow::Cow::Borrowed(r.resource.as_str()),
        sub => std::borrow::Cow::Owned(format!("{}/{sub}", r.resource)),
    };
    verb_matches(rule, &r.verb)
        && api_group_matches(rule, &r.group)
        && resource_matches(rule, &combined, &r.subresource)
        && resource_name_matches(rule, &r.name)
}

fn allows_non_resource(rule: &PolicyRule, n: &NonResourceAttributes) -> bool {
    verb_matches(rule, &n.verb) && non_resource_url_matches(rule, &n.path)
}

/// Whether `rule` grants access to the logical cluster it is bound in, kcp style: verb
/// `access` on the non-resource URL `/` (modern kcp), or on `workspaces/content` in
/// `tenancy.kcp.io` whatever names the rule lists (the form older kcp checked in the
/// parent). cluster-admin's wildcards grant both.
pub fn grants_workspace_access(rule: &PolicyRule) -> bool {
    allows(rule, &Attributes::workspace_access())
        || (verb_matches(rule, ACCESS_VERB)
            && api_group_matches(rule, TENANCY_KCP_GROUP)
            && resource_matches(rule, WORKSPACE_CONTENT, "content"))
}

fn verb_matches(rule: &PolicyRule, verb: &str) -> bool {
    rule.verbs.iter().any(|v| v == ALL || v == verb)
}

fn api_group_matches(rule: &PolicyRule, group: &str) -> bool {
    rule.api_groups.iter().any(|g| g == ALL || g == group)
}

/// `*`, the exact `resource[/subresource]`, or `*/subresource` for a subresource request.
fn resource_matches(rule: &PolicyRule, combined: &str, subresource: &str) -> bool {
    rule.resources.iter().any(|r| {
        r == ALL
            || r == combined
            || (!subresource.is_empty() && r.strip_prefix("*/").is_some_and(|sub| sub == subresource))
    })
}

/// No names means any object; otherwise the request must name one of them (so a list,
/// which names none, is not allowed by a rule with names).
fn resource_name_matches(rule: &PolicyRule, name: &str) -> bool {
    rule.resource_names.is_empty() || rule.resource_names.iter().any(|n| n == name)
}

/// `*`, the exact path, or a prefix ending in `*` (`/apis/*` covers `/apis/apps/v1`).
fn non_resource_url_matches(rule: &PolicyRule, path: &str) -> bool {
    rule.non_resource_urls
        .iter()
        .any(|url| url == ALL || url == path || url.strip_suffix('*').is_some_and(|prefix| path.starts_with(prefix)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    fn rule(verbs: &[&str], groups: &[&str], resources: &[&str], names: &[&str]) -> PolicyRule {
        PolicyRule {
            verbs: strings(verbs),
            api_groups: strings(groups),
            resources: strings(resources),
            resource_names: strings(names),
            non_resource_urls: Vec::new(),
        }
    }

    fn urls(verbs: &[&str], urls: &[&str]) -> PolicyRule {
        PolicyRule { verbs: strings(verbs), non_resource_urls: strings(urls), ..PolicyRule::default() }
    }

    fn request(verb: &str, group: &str, resource: &str, sub: &str, name: &str) -> Attributes {
        Attributes::Resource(ResourceAttributes {
            verb: verb.into(),
            group: group.into(),
            resource: resource.into(),
            subresource: sub.into(),
            name: name.into(),
            namespace: "default".into(),
            ..ResourceAttributes::default()
        })
    }

    fn path(verb: &str, path: &str) -> Attributes {
        Attributes::NonResource(NonResourceAttributes { verb: verb.into(), path: path.into() })
    }

    #[test]
    fn resource_rules_match_like_kube() {
        let cm_reader = rule(&["get", "list"], &[""], &["configmaps"], &[]);
        let everything = rule(&["*"], &["*"], &["*"], &[]);
        let named = rule(&["get", "update"], &[""], &["configmaps"], &["a", "b"]);
        let any_scale = rule(&["get"], &["apps"], &["*/scale"], &[]);
        let deploy_status = rule(&["update"], &["apps"], &["deployments/status"], &[]);
        let cases = [
            (&cm_reader, request("get", "", "configmaps", "", "x"), true),
            (&cm_reader, request("list", "", "configmaps", "", ""), true),
            (&cm_reader, request("create", "", "configmaps", "", ""), false),
            (&cm_reader, request("get", "apps", "configmaps", "", "x"), false),
            (&cm_reader, request("get", "", "secrets", "", "x"), false),
            (&cm_reader, request("get", "", "configmaps", "status", "x"), false),
            (&everything, request("deletecollection", "rbac.authorization.k8s.io", "roles", "", ""), true),
            (&everything, request("update", "apps", "deployments", "scale", "d"), true),
            (&named, request("get", "", "configmaps", "", "a"), true),
            (&named, request("update", "", "configmaps", "", "b"), true),
            (&named, request("get", "", "configmaps", "", "c"), false),
            (&named, request("list", "", "configmaps", "", ""), false),
            (&any_scale, request("get", "apps", "deployments", "scale", "d"), true),
            (&any_scale, request("get", "apps", "deployments", "", "d"), false),
            (&any_scale, request("get", "apps", "deployments", "status", "d"), false),
            (&deploy_status, request("update", "apps", "deployments", "status", "d"), true),
            (&deploy_status, request("update", "apps", "deployments", "", "d"), false),
            (&cm_reader, path("get", "/api"), false),
        ];
        for (rule, attributes, expected) in cases {
            assert_eq!(allows(rule, &attributes), expected, "{rule:?} {attributes:?}");
        }
    }

    #[test]
    fn non_resource_rules_match_exactly_or_by_trailing_star() {
        let discovery = urls(&["get"], &["/api", "/api/*", "/apis", "/apis/*", "/version"]);
        let everything = urls(&["*"], &["*"]);
        let cases = [
            (&discovery, path("get", "/api"), true),
            (&discovery, path("get", "/api/v1"), true),
            (&discovery, path("get", "/apis/apps/v1"), true),
            (&discovery, path("get", "/version"), true),
            (&discovery, path("get", "/versions"), false),
            (&discovery, path("get", "/openapi/v3"), false),
            (&discovery, path("post", "/api"), false),
            (&everything, path("access", "/"), true),
            (&discovery, request("get", "", "configmaps", "", "x"), false),
        ];
        for (rule, attributes, expected) in cases {
            assert_eq!(allows(rule, &attributes), expected, "{rule:?} {attributes:?}");
        }
    }

    #[test]
    fn workspace_access_is_access_on_slash_or_on_workspace_content() {
        let cases = [
            (urls(&["access"], &["/"]), true),
            (urls(&["*"], &["*"]), true),
            (urls(&["get"], &["/"]), false),
            (urls(&["access"], &["/api"]), false),
            (rule(&["access"], &["tenancy.kcp.io"], &["workspaces/content"], &[]), true),
            (rule(&["access"], &["tenancy.kcp.io"], &["workspaces/content"], &["team"]), true),
            (rule(&["access"], &["tenancy.kcp.io"], &["*/content"], &[]), true),
            (rule(&["*"], &["*"], &["*"], &[]), true),
            (rule(&["get"], &["tenancy.kcp.io"], &["workspaces/content"], &[]), false),
            (rule(&["access"], &["tenancy.kcp.io"], &["workspaces"], &[]), false),
            (rule(&["access"], &[""], &["workspaces/content"], &[]), false),
        ];
        for (rule, expected) in cases {
            assert_eq!(grants_workspace_access(&rule), expected, "{rule:?}");
        }
    }
}
