//! Who may do what on a cache server, decided from the client certificate alone.
//!
//! Pure: the HTTP layer turns the verified certificate into an [`Identity`], this module
//! turns that into a [`Caller`] and answers each question with a value or a message that
//! names what was refused and why.
//!
//! The rules:
//! - a shard (`system:atoll:shard:<X>`) replicates as sender `X`, and only replicas whose
//!   origin is `X`: a shard can never overwrite another shard's objects;
//! - a cache server (`system:atoll:cache:<Y>`) replicates as sender `Y`, for any origin,
//!   because a child cache relays everything it holds;
//! - any other certificate in `system:masters` (the operator's admin) replicates as any
//!   sender and origin, to repair replicas by hand;
//! - shards, caches and masters may list and watch; nobody else may do anything.
//!
//! Shard certificates are in `system:masters` too (shards call each other's APIs with
//! them), so the CN is looked at before the groups: otherwise every shard would pass as
//! an operator and could write any origin.

use security::authn::Identity;
use std::fmt;

/// A caller as the cache server's rules see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Caller {
    /// A shard, by its Shard name.
    Shard(String),
    /// A (child) cache server, by its name.
    Cache(String),
    /// Another `system:masters` user: the operator.
    Operator(String),
    /// Anyone else the client CA vouches for.
    Other(String),
}

impl Caller {
    /// Classifies a verified client certificate's identity.
    pub fn from_identity(identity: &Identity) -> Caller {
        let shard_prefix = security::pki::peer_client_user("");
        let cache_prefix = security::pki::cache_user("");
        let user = identity.user.as_str();
        match (user.strip_prefix(&shard_prefix), user.strip_prefix(&cache_prefix)) {
            (Some(shard), _) if !shard.is_empty() => Caller::Shard(shard.to_owned()),
            (_, Some(cache)) if !cache.is_empty() => Caller::Cache(cache.to_owned()),
            _ if identity.is_master() => Caller::Operator(user.to_owned()),
            _ => Caller::Other(user.to_owned()),
        }
    }
}

impl fmt::Display for Caller {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Caller::Shard(name) => write!(f, "shard {name:?}"),
            Caller::Cache(name) => write!(f, "cache server {name:?}"),
            Caller::Operator(user) => write!(f, "operator {user:?}"),
            Caller::Other(user) => write!(f, "user {user:?}"),
        }
    }
}

/// Which origins a replication stream may write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origins {
    /// Only replicas of this origin (a shard's own).
    Only(String),
    /// Any origin (a relaying cache, or the operator).
    Any,
}

/// Whether `caller` may open a replication stream as `sender`, and for which origins.
pub fn authorize_sender(caller: &Caller, sender: &str) -> Result<Origins, String> {
    check_sender_name(sender)?;
    match caller {
        Caller::Shard(shard) if shard == sender => Ok(Origins::Only(shard.clone())),
        Caller::Shard(shard) => {
            Err(format!("shard {shard:?} may only replicate as sender {shard:?}, not as sender {sender:?}"))
        }
        Caller::Cache(cache) if cache == sender => Ok(Origins::Any),
        Caller::Cache(cache) => {
            Err(format!("cache server {cache:?} may only replicate as sender {cache:?}, not as sender {sender:?}"))
        }
        Caller::Operator(_) => Ok(Origins::Any),
        Caller::Other(user) => Err(format!(
            "user {user:?} may not replicate: only shards, cache servers and system:masters certificates may"
        )),
    }
}

/// Whether a stream allowed `origins` may write a replica of `origin`.
pub fn authorize_origin(origins: &Origins, sender: &str, origin: &str) -> Result<(), String> {
    match origins {
        Origins::Any => Ok(()),
        Origins::Only(own) if own == origin => Ok(()),
        Origins::Only(own) => Err(format!(
            "sender {sender:?} may only replicate objects of its own shard {own:?}, not of origin {origin:?}"
        )),
    }
}

/// Whether `caller` may list and watch replicas.
pub fn authorize_read(caller: &Caller) -> Result<(), String> {
    match caller {
        Caller::Shard(_) | Caller::Cache(_) | Caller::Operator(_) => Ok(()),
        Caller::Other(user) => Err(format!(
            "user {user:?} may not read replicas: only shards, cache servers and system:masters certificates may"
        )),
    }
}

/// A sender name ends up in a store key (`p/<sender>`) and in every replica it writes, so
/// it must be one plain segment.
pub fn check_sender_name(sender: &str) -> Result<(), String> {
    if sender.is_empty() {
        return Err("Hello.sender must name the sender (a shard or cache server name)".to_owned());
    }
    if sender.chars().any(|c| c == '/' || c.is_whitespace() || c.is_control()) {
        return Err(format!("Hello.sender {sender:?} must not contain '/', whitespace or control characters"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn identity(user: &str, groups: &[&str]) -> Identity {
        Identity::new(user, "", groups.iter().map(|g| (*g).to_owned()))
    }

    #[test]
    fn certificates_are_classified_by_name_before_groups() {
        let cases = [
            (identity("system:atoll:shard:s1", &["system:masters"]), Caller::Shard("s1".into())),
            (identity("system:atoll:cache:eu", &[]), Caller::Cache("eu".into())),
            (identity("admin", &["system:masters"]), Caller::Operator("admin".into())),
            (identity("alice", &["dev"]), Caller::Other("alice".into())),
            // A bare prefix names nobody.
            (identity("system:atoll:shard:", &[]), Caller::Other("system:atoll:shard:".into())),
            (identity("system:atoll:cache:", &["system:masters"]), Caller::Operator("system:atoll:cache:".into())),
        ];
        for (identity, expected) in cases {
            assert_eq!(Caller::from_identity(&identity), expected, "{identity:?}");
        }
    }

    #[test]
    fn senders_and_origins() {
        let shard = Caller::Shard("s1".into());
        let cache = Caller::Cache("eu".into());
        let operator = Caller::Operator("admin".into());
        let other = Caller::Other("alice".into());
        let cases: Vec<(&Caller, &str, Result<Origins, &str>)> = vec![
            (&shard, "s1", Ok(Origins::Only("s1".into()))),
            (&shard, "s2", Err(r#"shard "s1" may only replicate as sender "s1", not as sender "s2""#)),
            (&cache, "eu", Ok(Origins::Any)),
            (&cache, "us", Err(r#"cache server "eu" may only replicate as sender "eu", not as sender "us""#)),
            (&operator, "s1", Ok(Origins::Any)),
            (&operator, "anything", Ok(Origins::Any)),
            (&other, "alice", Err("may not replicate")),
            (&operator, "", Err("must name the sender")),
            (&cache, "e/u", Err("must not contain '/'")),
        ];
        for (caller, sender, expected) in cases {
            match (authorize_sender(caller, sender), expected) {
                (Ok(got), Ok(want)) => assert_eq!(got, want, "{caller} as {sender}"),
                (Err(got), Err(want)) => assert!(got.contains(want), "{caller} as {sender}: {got}"),
                (got, want) => panic!("{caller} as {sender}: got {got:?}, want {want:?}"),
            }
        }

        let own = Origins::Only("s1".into());
        assert_eq!(authorize_origin(&own, "s1", "s1"), Ok(()));
        let denied = authorize_origin(&own, "s1", "s2").expect_err("other origin");
        assert!(denied.contains(r#""s1""#) && denied.contains(r#"origin "s2""#), "{denied}");
        assert_eq!(authorize_origin(&Origins::Any, "eu", "s2"), Ok(()));
    }

    #[test]
    fn readers() {
        for caller in [Caller::Shard("s".into()), Caller::Cache("c".into()), Caller::Operator("admin".into())] {
            assert_eq!(authorize_read(&caller), Ok(()), "{caller}");
        }
        assert!(authorize_read(&Caller::Other("alice".into())).is_err());
    }
}
