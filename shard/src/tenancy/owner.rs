//! The owner of a workspace, kcp style: Workspace admission records who created it in
//! the annotation [`OWNER_ANNOTATION`], the scheduler copies it onto the LogicalCluster it
//! creates, and the authorizer treats that user as cluster-admin of the logical cluster.
//!
//! Difference from kcp: kcp's initializer turns the annotation into a stored
//! `workspace-admin` ClusterRoleBinding in the new workspace. Atoll keeps it implicit (the
//! annotation is the grant) so that a workspace costs no extra stored object. Because it
//! is a grant, updates keep the annotation as it was on both objects (see
//! `strategy::prepare_update`), and the owner stays owner for the life of the workspace;
//! in kcp an admin could delete the binding instead.
//!
//! Pure: the caller reads and writes the objects.

use protocol::types::Owner;
use protocol::wellknown::OWNER_ANNOTATION;
use security::authn::Identity;
use serde_json::Value;

/// Workspace admission: records the creator as owner. Skipped for system:masters, as in
/// kcp, who may set any owner themselves; this also keeps the objects of administrators'
/// bulk creations small. Anyone else's own value replaces whatever the body said.
pub fn record_creator(identity: &Identity, workspace: &mut Value) {
    if identity.is_master() {
        return;
    }
    let owner = Owner {
        username: identity.user.clone(),
        uid: identity.uid.clone(),
        groups: identity.groups.clone(),
        extra: identity.extra.clone(),
    };
    protocol::meta::set_annotation(workspace, OWNER_ANNOTATION, &owner.to_annotation());
}

/// The owner recorded in an object's annotations, if any.
#[cfg(test)]
fn owner_of(object: &Value) -> Option<Owner> {
    let annotation = object.pointer("/metadata/annotations")?.get(OWNER_ANNOTATION)?.as_str()?;
    Owner::parse(annotation)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn user(name: &str, uid: &str, groups: &[&str]) -> Identity {
        Identity::new(name, uid, groups.iter().map(|g| g.to_string()))
    }

    #[test]
    fn creators_are_recorded_unless_they_are_masters() {
        let mut workspace =
            json!({"metadata": {"name": "team", "annotations": {OWNER_ANNOTATION: "{\"username\":\"mallory\"}"}}});
        record_creator(&user("alice", "", &["dev"]), &mut workspace);
        let owner = owner_of(&workspace).unwrap();
        assert_eq!(owner.username, "alice");
        assert_eq!(owner.groups, vec!["dev", "system:authenticated"]);
        let raw = workspace["metadata"]["annotations"][OWNER_ANNOTATION].as_str().unwrap();
        assert_eq!(raw, r#"{"username":"alice","groups":["dev","system:authenticated"]}"#);

        let mut by_admin = json!({"metadata": {"name": "team"}});
        record_creator(&user("admin", "", &["system:masters"]), &mut by_admin);
        assert_eq!(by_admin, json!({"metadata": {"name": "team"}}));
    }

    #[test]
    fn ownership_follows_name_and_uid() {
        let owner = Owner::parse(r#"{"username":"alice","uid":"u-1","groups":["x"]}"#).unwrap();
        let cases = [
            (user("alice", "u-1", &[]), true),
            (user("alice", "", &[]), true),
            (user("alice", "u-2", &[]), false),
            (user("bob", "u-1", &[]), false),
        ];
        for (identity, expected) in cases {
            assert_eq!(owner.is_user(&identity.user, &identity.uid), expected, "{identity:?}");
        }
        assert_eq!(Owner::parse("not json"), None);
        assert_eq!(Owner::parse(r#"{"uid":"u"}"#), None);
        assert_eq!(owner_of(&json!({"metadata": {}})), None);
    }
}
