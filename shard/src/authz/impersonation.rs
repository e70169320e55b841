//! Impersonation: `kubectl --as alice --as-group dev`, as kube-apiserver's
//! `WithImpersonation` filter does it, judged by the RBAC of the logical cluster the
//! request addresses.
//!
//! The caller (a user certificate, a token, or the user a front-proxy names in
//! `X-Remote-*` headers) asks to act as someone else with kube's headers:
//! `Impersonate-User` (a user, or a service account `system:serviceaccount:<ns>:<name>`),
//! `Impersonate-Group` (repeatable), `Impersonate-Uid` and `Impersonate-Extra-<key>`. Each
//! thing asked for is checked on its own, as kube checks it: verb `impersonate` on
//! `users`, `groups` or `serviceaccounts` (in the account's namespace) in the core group,
//! and on `uids` and `userextras/<key>` in `authentication.k8s.io`. The first refusal
//! answers 403 in kube's words; once every check passes, the request runs as the
//! impersonated user (authorization, ownership, `kubectl auth can-i`, `auth whoami`).
//!
//! Where: the front-proxy passes these headers through untouched and names the real
//! caller in `X-Remote-*`, so the shard decides, against the addressed logical cluster's
//! RBAC (with workspace access and ownership, as every request there). `system:masters`
//! may impersonate anyone, anywhere. Anyone else:
//! - only on a request to one logical cluster on this shard (not `/clusters/*`, not a
//!   virtual workspace, which span many clusters and have no single RBAC to ask);
//! - never into a privileged group they are not in themselves (`system:masters`), nor
//!   with a kcp-reserved extra key (`*kcp.io*`), as kcp's impersonation gatekeeper refuses;
//! - and the impersonated user is scoped to that cluster (extra
//!   `authentication.kcp.io/scopes: cluster:<name>`, as kcp scopes it), so that rights
//!   lent in one workspace cannot answer a question asked of another one's RBAC
//!   ([`in_scope`], asked by [`super::workspace_rbac`]).
//!
//! [`Impersonation::from_headers`], [`Impersonation::checks`],
//! [`Impersonation::identity`] and [`gatekeeper`] are pure; [`effective`] reads the policy.

use super::attributes::{Attributes, ResourceAttributes};
use super::decision::{self, Decision, Denial};
use super::store_policy::StorePolicy;
use crate::state::Shard;
use apiserver::rest::status::{ApiError, ApiResult};
use http::HeaderMap;
use protocol::gvr::GroupResource;
use protocol::path::ClusterRef;
use protocol::wellknown::MASTERS_GROUP;
use security::authn::{Identity, ANONYMOUS_USER, AUTHENTICATED_GROUP, UNAUTHENTICATED_GROUP};
use std::collections::BTreeMap;

/// The user to act as (kube's `Impersonate-User`).
pub const USER_HEADER: &str = "impersonate-user";
/// A group to act in; repeated for several (`Impersonate-Group`).
pub const GROUP_HEADER: &str = "impersonate-group";
/// The UID to act with (`Impersonate-Uid`).
pub const UID_HEADER: &str = "impersonate-uid";
/// Prefix of extra attributes; the rest of the name is the percent-encoded key.
pub const EXTRA_HEADER_PREFIX: &str = "impersonate-extra-";
/// The extra key kcp scopes identities with: `cluster:<name>` values.
pub const SCOPES_EXTRA_KEY: &str = "authentication.kcp.io/scopes";
/// Impersonation headers one request may carry: a bound on the checks it costs (each
/// reads RBAC); kubectl sends one per `--as-group`.
pub const IMPERSONATION_HEADERS_MAX: usize = 64;

const SERVICE_ACCOUNT_PREFIX: &str = "system:serviceaccount:";
const AUTHENTICATION_GROUP: &str = "authentication.k8s.io";
const IMPERSONATE_VERB: &str = "impersonate";
/// Groups only their members may impersonate (kcp's `specialGroups`).
const PRIVILEGED_GROUPS: &[&str] = &[MASTERS_GROUP];

/// Who a request asks to act as, from its headers.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Impersonation {
    /// The user name asked for (a service account's full user name included).
    pub user: String,
    /// `Impersonate-Group` values, in order.
    pub groups: Vec<String>,
    /// `Impersonate-Uid`, if sent.
    pub uid: Option<String>,
    /// `Impersonate-Extra-*`, keys decoded and lower-cased as kube does.
    pub extra: BTreeMap<String, Vec<String>>,
}

impl Impersonation {
    /// The impersonation `headers` ask for; `Ok(None)` when they ask for none. Groups,
    /// a UID or extras without a user are refused (kube refuses them too, with a 500;
    /// this is the caller's mistake, so 400).
    pub fn from_headers(headers: &HeaderMap) -> Result<Option<Impersonation>, String> {
        let mut count = 0;
        let mut asked = Impersonation::default();
        let mut any = false;
        for (name, value) in headers {
            let name = name.as_str();
            let key = name.strip_prefix(EXTRA_HEADER_PREFIX);
            if name != USER_HEADER && name != GROUP_HEADER && name != UID_HEADER && key.is_none() {
                continue;
            }
            count += 1;
            if count > IMPERSONATION_HEADERS_MAX {
                return Err(format!("more than {IMPERSONATION_HEADERS_MAX} impersonation headers"));
            }
            let value = value.to_str().map_err(|_| format!("header {name} must be visible ASCII"))?.to_string();
            any = true;
            match (name, key) {
                // kube takes the first of repeated user and UID headers.
                (USER_HEADER, _) if asked.user.is_empty() => asked.user = value,
                (UID_HEADER, _) if asked.uid.is_none() => asked.uid = Some(value),
                (GROUP_HEADER, _) => asked.groups.push(value),
                (_, Some(key)) => {
                    asked.extra.entry(protocol::path::percent_decode(key).into_owned()).or_default().push(value)
                }
                _ => {}
            }
        }
        if !any {
            return Ok(None);
        }
        if asked.user.is_empty() {
            return Err(
                "impersonating groups, a UID or extra attributes needs a user to impersonate: set Impersonate-User \
                 (kubectl --as)"
                    .into(),
            );
        }
        Ok(Some(asked))
    }

    /// The namespace and name of the service account asked for, if the user is one.
    pub fn service_account(&self) -> Option<(&str, &str)> {
        let (namespace, name) = self.user.strip_prefix(SERVICE_ACCOUNT_PREFIX)?.split_once(':')?;
        let valid = !name.contains(':')
            && protocol::names::dns1123_label(namespace).is_empty()
            && protocol::names::dns1123_subdomain(name).is_empty();
        valid.then_some((namespace, name))
    }

    /// What the caller must be allowed, one question per thing asked for, in kube's order:
    /// the user (or service account), each group, each extra value, the UID.
    pub fn checks(&self) -> Vec<Attributes> {
        let check = |group: &str, resource: &str, subresource: &str, name: &str, namespace: &str| {
            Attributes::Resource(ResourceAttributes {
                verb: IMPERSONATE_VERB.into(),
                group: group.into(),
                version: "v1".into(),
                resource: resource.into(),
                subresource: subresource.into(),
                name: name.into(),
                namespace: namespace.into(),
            })
        };
        let mut checks = vec![match self.service_account() {
            Some((namespace, name)) => check("", "serviceaccounts", "", name, namespace),
            None => check("", "users", "", &self.user, ""),
        }];
        checks.extend(self.groups.iter().map(|group| check("", "groups", "", group, "")));
        for (key, values) in &self.extra {
            checks.extend(values.iter().map(|value| check(AUTHENTICATION_GROUP, "userextras", key, value, "")));
        }
        if let Some(uid) = &self.uid {
            checks.push(check(AUTHENTICATION_GROUP, "uids", "", uid, ""));
        }
        checks
    }

    /// The identity the request runs as, as kube builds it: the groups asked for (a
    /// service account's own groups when none are), plus `system:authenticated` unless
    /// `system:authenticated` or `system:unauthenticated` is among them (anonymous gets
    /// `system:unauthenticated` instead). `scope` names the cluster a non-master's
    /// impersonation is confined to.
    pub fn identity(&self, scope: Option<&str>) -> Identity {
        let mut groups = self.groups.clone();
        if groups.is_empty() {
            if let Some((namespace, _)) = self.service_account() {
                groups = vec!["system:serviceaccounts".into(), format!("system:serviceaccounts:{namespace}")];
            }
        }
        let has = |group: &str| groups.iter().any(|g| g == group);
        if self.user != ANONYMOUS_USER {
            if !has(AUTHENTICATED_GROUP) && !has(UNAUTHENTICATED_GROUP) {
                groups.push(AUTHENTICATED_GROUP.into());
            }
        } else if !has(UNAUTHENTICATED_GROUP) {
            groups.push(UNAUTHENTICATED_GROUP.into());
        }
        let mut extra = self.extra.clone();
        if let Some(cluster) = scope {
            extra.insert(SCOPES_EXTRA_KEY.into(), vec![format!("cluster:{cluster}")]);
        }
        Identity { user: self.user.clone(), uid: self.uid.clone().unwrap_or_default(), groups, extra }
    }
}

/// kcp's impersonation gatekeeper, for callers outside `system:masters`: no privileged
/// group the caller is not in, and no kcp-reserved extra key (those carry authority only
/// trusted authenticators may grant, such as the scope of this very impersonation).
pub fn gatekeeper(caller: &Identity, asked: &Impersonation) -> Result<(), String> {
    if let Some(group) =
        asked.groups.iter().find(|group| PRIVILEGED_GROUPS.contains(&group.as_str()) && !caller.groups.contains(group))
    {
        return Err(format!(
            "forbidden: User {:?} cannot impersonate group {group:?}: only its members may (impersonation is not \
             allowed for the requestor)",
            caller.user
        ));
    }
    if let Some(key) = asked.extra.keys().find(|key| key.to_ascii_lowercase().contains("kcp.io")) {
        return Err(format!(
            "forbidden: User {:?} cannot impersonate the extra key {key:?}: keys of kcp.io are set by the server only",
            caller.user
        ));
    }
    Ok(())
}

/// Whether `identity` may be judged in logical cluster `cluster`: unscoped identities
/// everywhere, scoped ones (impersonated by a non-master) only where every scope names
/// that cluster.
pub fn in_scope(identity: &Identity, cluster: &str) -> bool {
    identity
        .extra
        .get(SCOPES_EXTRA_KEY)
        .is_none_or(|scopes| scopes.iter().all(|scope| scope.strip_prefix("cluster:") == Some(cluster)))
}

/// The identity a request runs as: `caller`, or whom it impersonates once the RBAC of the
/// logical cluster it addresses (`requested`; `in_virtual_workspace` when a virtual
/// workspace serves it) allows each part. 400 for malformed headers, 403 when refused.
pub fn effective(
    shard: &Shard,
    caller: Identity,
    requested: &ClusterRef,
    in_virtual_workspace: bool,
    headers: &HeaderMap,
) -> ApiResult<Identity> {
    let asked = match Impersonation::from_headers(headers) {
        Ok(None) => return Ok(caller),
        Ok(Some(asked)) => asked,
        Err(message) => return Err(ApiError::bad_request(message)),
    };
    if caller.is_master() {
        return Ok(asked.identity(None));
    }
    gatekeeper(&caller, &asked).map_err(ApiError::forbidden)?;
    let checks = asked.checks();
    // kube's refusal of the first check, with the reason appended as kube appends one.
    let reserved = |why: &str| match &checks[0] {
        Attributes::Resource(r) => ApiError::forbidden_on(
            &GroupResource::new(r.group.as_str(), r.resource.as_str()),
            &r.name,
            &format!("{}: {why}", checks[0].forbidden_message(&caller.user)),
        ),
        Attributes::NonResource(_) => ApiError::forbidden(why.to_string()),
    };
    if in_virtual_workspace {
        return Err(reserved("impersonation in a virtual workspace is reserved to system:masters"));
    }
    let cluster = match requested {
        ClusterRef::Wildcard => {
            return Err(reserved("impersonation across all logical clusters is reserved to system:masters"))
        }
        ClusterRef::Name(name) => Some(name.clone()),
        ClusterRef::Path(path) => shard.paths.resolve(path.as_str()),
    };
    // A cluster that is not here gets the answer of one the caller may not access, so
    // that impersonating cannot probe names and paths.
    let Some(cluster) = cluster.filter(|name| shard.logical_cluster_record(name).is_some()) else {
        return Err(super::forbidden(&caller, requested, &checks[0], Denial::NoWorkspaceAccess));
    };
    authorize_checks(shard, &caller, requested, &cluster, &checks)?;
    Ok(asked.identity(Some(&cluster)))
}

/// Asks the cluster's RBAC each question; the first refusal answers.
#[tracing::instrument(name = "impersonate", skip_all, fields(user = %caller.user, cluster))]
fn authorize_checks(
    shard: &Shard,
    caller: &Identity,
    requested: &ClusterRef,
    cluster: &str,
    checks: &[Attributes],
) -> ApiResult<()> {
    let policy = StorePolicy::new(shard, cluster);
    let owner = policy.owner();
    for attributes in checks {
        let decision = decision::decide(&policy, owner.as_ref(), caller, attributes)?;
        super::count(shard, &decision);
        if let Decision::Denied(denial) = decision {
            return Err(super::forbidden(caller, requested, attributes, denial));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::{HeaderName, HeaderValue};

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.append(HeaderName::from_bytes(name.as_bytes()).unwrap(), HeaderValue::from_str(value).unwrap());
        }
        map
    }

    fn parse(pairs: &[(&str, &str)]) -> Result<Option<Impersonation>, String> {
        Impersonation::from_headers(&headers(pairs))
    }

    fn strings(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn headers_become_what_is_asked() {
        assert_eq!(parse(&[("accept", "*/*"), ("x-remote-user", "bob")]), Ok(None));
        let asked = parse(&[
            ("Impersonate-User", "alice"),
            ("Impersonate-User", "ignored"),
            ("Impersonate-Group", "dev"),
            ("Impersonate-Group", "ops"),
            ("Impersonate-Uid", "u-1"),
            ("Impersonate-Extra-Scopes.Example.com%2fTeam", "a"),
            ("Impersonate-Extra-scopes.example.com%2Fteam", "b"),
        ])
        .unwrap()
        .unwrap();
        assert_eq!(asked.user, "alice");
        assert_eq!(asked.groups, strings(&["dev", "ops"]));
        assert_eq!(asked.uid.as_deref(), Some("u-1"));
        assert_eq!(asked.extra, BTreeMap::from([("scopes.example.com/team".to_string(), strings(&["a", "b"]))]));

        for without_user in [
            &[("impersonate-group", "dev")][..],
            &[("impersonate-uid", "u")],
            &[("impersonate-extra-k", "v")],
            &[("impersonate-user", ""), ("impersonate-group", "dev")],
        ] {
            let error = parse(without_user).unwrap_err();
            assert!(error.contains("needs a user"), "{without_user:?}: {error}");
        }
        let many: Vec<(&str, &str)> = vec![("impersonate-group", "g"); IMPERSONATION_HEADERS_MAX + 1];
        assert!(parse(&[&[("impersonate-user", "a")][..], &many].concat()).unwrap_err().contains("more than"));
    }

    /// (user header, groups, extra, uid) → the checks as (group, resource/subresource,
    /// name, namespace).
    #[test]
    fn each_part_is_checked_as_kube_checks_it() {
        let mut asked = Impersonation {
            user: "alice".into(),
            groups: strings(&["dev"]),
            uid: Some("u-1".into()),
            extra: BTreeMap::from([("team".to_string(), strings(&["a", "b"]))]),
        };
        let seen = |asked: &Impersonation| -> Vec<String> {
            asked
                .checks()
                .iter()
                .map(|check| {
                    let Attributes::Resource(r) = check else { panic!("resource check expected") };
                    assert_eq!(r.verb, "impersonate");
                    format!("{}|{}/{}|{}|{}", r.group, r.resource, r.subresource, r.name, r.namespace)
                })
                .collect()
        };
        assert_eq!(
            seen(&asked),
            [
                "|users/|alice|",
                "|groups/|dev|",
                "authentication.k8s.io|userextras/team|a|",
                "authentication.k8s.io|userextras/team|b|",
                "authentication.k8s.io|uids/|u-1|",
            ]
        );
        asked = Impersonation { user: "system:serviceaccount:ns-1:robot".into(), ..Impersonation::default() };
        assert_eq!(seen(&asked), ["|serviceaccounts/|robot|ns-1"]);
        // Not a valid service-account user name: checked as a plain user, as kube does.
        for user in ["system:serviceaccount:ns-1", "system:serviceaccount:NS:robot", "system:serviceaccount:a:b:c"] {
            asked.user = user.into();
            assert_eq!(seen(&asked), [format!("|users/|{user}|")], "{user}");
        }
    }

    #[test]
    fn impersonated_identities_get_kubes_groups() {
        let ask = |user: &str, groups: &[&str]| Impersonation {
            user: user.into(),
            groups: strings(groups),
            ..Impersonation::default()
        };
        let cases: [(Impersonation, &[&str]); 7] = [
            (ask("alice", &[]), &["system:authenticated"]),
            (ask("alice", &["dev"]), &["dev", "system:authenticated"]),
            (ask("alice", &["system:authenticated", "dev"]), &["system:authenticated", "dev"]),
            (ask("alice", &["system:unauthenticated"]), &["system:unauthenticated"]),
            (ask("system:anonymous", &[]), &["system:unauthenticated"]),
            (
                ask("system:serviceaccount:ns-1:robot", &[]),
                &["system:serviceaccounts", "system:serviceaccounts:ns-1", "system:authenticated"],
            ),
            (ask("system:serviceaccount:ns-1:robot", &["dev"]), &["dev", "system:authenticated"]),
        ];
        for (asked, want) in cases {
            let identity = asked.identity(None);
            assert_eq!(identity.groups, strings(want), "{asked:?}");
            assert!(identity.extra.is_empty());
        }
        let scoped = ask("alice", &[]).identity(Some("c1"));
        assert_eq!(scoped.extra[SCOPES_EXTRA_KEY], strings(&["cluster:c1"]));
        assert!(in_scope(&scoped, "c1"));
        assert!(!in_scope(&scoped, "c2"));
        assert!(in_scope(&ask("alice", &[]).identity(None), "c2"));
        let mut twice = scoped.clone();
        twice.extra.get_mut(SCOPES_EXTRA_KEY).unwrap().push("cluster:c2".into());
        assert!(!in_scope(&twice, "c2"), "every scope must name the cluster");
    }

    #[test]
    fn the_gatekeeper_keeps_privileged_groups_and_kcp_extras_out_of_reach() {
        let bob = Identity::new("bob", "", strings(&["dev"]));
        let ask = |groups: &[&str], extra: &[&str]| Impersonation {
            user: "alice".into(),
            groups: strings(groups),
            extra: extra.iter().map(|key| (key.to_string(), strings(&["x"]))).collect(),
            ..Impersonation::default()
        };
        assert_eq!(gatekeeper(&bob, &ask(&["dev", "ops", "system:authenticated"], &["team"])), Ok(()));
        let refused = gatekeeper(&bob, &ask(&["system:masters"], &[])).unwrap_err();
        assert!(refused.contains("system:masters"), "{refused}");
        let refused = gatekeeper(&bob, &ask(&[], &["authentication.kcp.io/scopes"])).unwrap_err();
        assert!(refused.contains("authentication.kcp.io/scopes"), "{refused}");
        assert!(gatekeeper(&bob, &ask(&[], &["authorization.KCP.io/warrant"])).is_err());
        let master = Identity::new("root", "", strings(&["system:masters"]));
        assert_eq!(gatekeeper(&master, &ask(&["system:masters"], &[])), Ok(()));
    }
}
