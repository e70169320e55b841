//! The owner record of a workspace, as stored in [`crate::wellknown::OWNER_ANNOTATION`]
//! on the Workspace and its LogicalCluster. Shards write and read it; the front-proxy
//! writes it on the home workspaces it creates.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Who created a workspace (kcp's JSON form of `authentication.k8s.io/v1` UserInfo).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Owner {
    /// The user name.
    #[serde(default)]
    pub username: String,
    /// The user's UID; empty for certificate users, which carry none.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub uid: String,
    /// The user's groups at creation time (informational: ownership follows the user).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<String>,
    /// The user's extra attributes at creation time.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub extra: BTreeMap<String, Vec<String>>,
}

impl Owner {
    /// Parses an annotation value; a malformed one names no owner.
    pub fn parse(annotation: &str) -> Option<Owner> {
        serde_json::from_str::<Owner>(annotation).ok().filter(|owner| !owner.username.is_empty())
    }

    /// The annotation value of this record.
    pub fn to_annotation(&self) -> String {
        serde_json::to_string(self).expect("owner records serialize")
    }

    /// Whether the user `user` with UID `uid` is this owner: the same user name and, when
    /// both carry one, the same UID (a re-created user of the same name with another UID
    /// is someone else).
    pub fn is_user(&self, user: &str, uid: &str) -> bool {
        self.username == user && (self.uid.is_empty() || uid.is_empty() || self.uid == uid)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ownership_follows_name_and_uid() {
        let owner = Owner::parse(r#"{"username":"alice","uid":"u-1","groups":["x"]}"#).unwrap();
        let cases =
            [(("alice", "u-1"), true), (("alice", ""), true), (("alice", "u-2"), false), (("bob", "u-1"), false)];
        for ((user, uid), expected) in cases {
            assert_eq!(owner.is_user(user, uid), expected, "{user} {uid}");
        }
        assert_eq!(Owner::parse("not json"), None);
        assert_eq!(Owner::parse(r#"{"uid":"u"}"#), None);
    }

    #[test]
    fn annotation_round_trips_and_leaves_out_empty_parts() {
        let owner = Owner { username: "alice".into(), groups: vec!["dev".into()], ..Owner::default() };
        assert_eq!(owner.to_annotation(), r#"{"username":"alice","groups":["dev"]}"#);
        assert_eq!(Owner::parse(&owner.to_annotation()), Some(owner));
    }
}
