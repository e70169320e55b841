//! What the proxy answers while its routing index is still arriving.
//!
//! After a start the index fills shard by shard, as each shard's index feed sends its
//! snapshot. Until every known shard's feed has synced once, a path the index does not
//! resolve may well be a workspace on a shard whose snapshot has not come yet, and
//! answering it "403, does not exist" (as for a path that truly leads nowhere) tells the
//! user something false; kubectl would not retry it. So, while some shard is pending:
//!
//! - a path that resolves is routed as usual: a synced shard's workspaces never wait for
//!   another shard;
//! - a path whose walk ends in a missing workspace of an indexed logical cluster keeps the
//!   403: the shard hosting that cluster has sent its Workspaces, so the answer is known;
//! - a path that leads to a workspace whose logical cluster is not indexed gets a 503 with
//!   `Retry-After` (client-go retries it), but only for callers who may see that
//!   workspace (see [`crate::dead_shard`]); others get the same 403 as for a missing
//!   workspace, so the 503 reveals nothing;
//! - a path nothing indexed leads towards (a cluster name, `home:…`, or `root:…` before
//!   root's feed arrived) gets the 503 whoever asks: it is the same answer for every such
//!   path, so it reveals nothing either.
//!
//! A shard that stays unreachable (dead at the proxy's start, or learnt from root while it
//! is down) keeps only those unknowable paths at 503, for as long as it is unreachable:
//! kcp users expect a workspace on a dead shard to be unavailable, not gone, and expect
//! every other shard's workspaces to keep working. `/readyz` waits for every known shard,
//! but at most [`READY_GRACE`] once some shard has synced: a proxy held out of its load
//! balancer because one shard is dead would take every healthy shard's workspaces down
//! with it.
//!
//! Pure: the routing state goes in, the answer comes out.

use std::collections::BTreeSet;
use std::time::Duration;

use crate::index::Lookup;

/// How long after the start `/readyz` waits for the feeds of every known shard before it
/// settles for those that synced.
pub const READY_GRACE: Duration = Duration::from_secs(30);

/// The seconds a client is told to wait before asking again (`Retry-After`).
pub const RETRY_AFTER_SECONDS: u32 = 1;

/// Which feeds the index still waits for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Pending {
    /// No shard is known yet: root has not answered and no shard set was remembered.
    NoShardKnown,
    /// These known shards' feeds have not synced since the proxy started.
    Shards(Vec<String>),
}

/// The feeds pending among `known` shards, given those that `synced` since the start;
/// `None` once every known shard has synced.
pub fn pending<'a>(known: impl IntoIterator<Item = &'a str>, synced: &BTreeSet<String>) -> Option<Pending> {
    let mut any = false;
    let mut waiting = Vec::new();
    for shard in known {
        any = true;
        if !synced.contains(shard) {
            waiting.push(shard.to_owned());
        }
    }
    match (any, waiting.is_empty()) {
        (false, _) => Some(Pending::NoShardKnown),
        (true, true) => None,
        (true, false) => Some(Pending::Shards(waiting)),
    }
}

/// The answer for a path the index did not resolve.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unresolved {
    /// The 403 for a workspace that does not exist or that the caller may not use.
    NoAccess,
    /// 503 with `Retry-After`, whoever asks.
    Unavailable(String),
    /// 503 with `Retry-After` if the caller may see the workspace leading to logical
    /// cluster `cluster`, otherwise [`Unresolved::NoAccess`].
    UnavailableIfVisible {
        /// The logical cluster the workspace names.
        cluster: String,
        /// The 503's message.
        message: String,
    },
}

/// What to answer for `path`, which the index looked up as `lookup` (anything but
/// `Found`), while `pending` feeds have not synced.
pub fn unresolved(lookup: &Lookup, pending: Option<&Pending>, path: &str) -> Unresolved {
    let Some(pending) = pending else { return Unresolved::NoAccess };
    let message = pending_message(pending, path);
    match lookup {
        Lookup::Found(_) | Lookup::Missing => Unresolved::NoAccess,
        Lookup::Unindexed { cluster } => Unresolved::UnavailableIfVisible { cluster: cluster.clone(), message },
        Lookup::Unknown => Unresolved::Unavailable(message),
    }
}

/// Whether `/readyz` says ready: `Err` with the reason when not. `any_synced`: some
/// shard's feed has synced since the start; `grace_over`: [`READY_GRACE`] has passed.
pub fn readiness(pending: Option<&Pending>, any_synced: bool, grace_over: bool) -> Result<(), String> {
    match pending {
        None => Ok(()),
        Some(_) if any_synced && grace_over => Ok(()),
        Some(Pending::NoShardKnown) => {
            Err("the front-proxy knows no shard yet: the root shard has not answered (is it reachable?)".into())
        }
        Some(Pending::Shards(shards)) => Err(format!(
            "the front-proxy has not yet received the routing index of shard(s) {} (are they reachable?)",
            shards.join(", ")
        )),
    }
}

fn pending_message(pending: &Pending, path: &str) -> String {
    match pending {
        Pending::NoShardKnown => format!(
            "the front-proxy has just started and knows no shard yet, so it cannot tell where {path:?} is; \
             retry in a few seconds (if this persists, the root shard is unreachable from the front-proxy)"
        ),
        Pending::Shards(shards) => format!(
            "the front-proxy has not yet received the routing index of shard(s) {} since it started, and {path:?} \
             may be a workspace there; retry in a few seconds (if this persists, those shards are unreachable \
             from the front-proxy)",
            shards.join(", ")
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::Target;

    fn set(names: &[&str]) -> BTreeSet<String> {
        names.iter().map(|name| (*name).to_owned()).collect()
    }

    #[test]
    fn pending_feeds_are_the_known_shards_not_yet_synced() {
        let cases: [(&[&str], &[&str], Option<Pending>); 5] = [
            (&[], &[], Some(Pending::NoShardKnown)),
            (&[], &["root"], Some(Pending::NoShardKnown)),
            (&["root", "shard-1"], &["root"], Some(Pending::Shards(vec!["shard-1".into()]))),
            (&["root", "shard-1"], &[], Some(Pending::Shards(vec!["root".into(), "shard-1".into()]))),
            // A shard that synced and then left the set does not count.
            (&["root"], &["root", "gone"], None),
        ];
        for (known, synced, want) in cases {
            assert_eq!(pending(known.iter().copied(), &set(synced)), want, "{known:?} {synced:?}");
        }
    }

    #[test]
    fn only_what_a_pending_shard_could_answer_is_unavailable() {
        let waiting = Pending::Shards(vec!["shard-1".into()]);
        let unindexed = Lookup::Unindexed { cluster: "t1".into() };
        let found = Lookup::Found(Target { cluster: "o1".into(), shard: "a".into(), canonical: true });
        let unavailable = |answer: &Unresolved| match answer {
            Unresolved::NoAccess => "403",
            Unresolved::Unavailable(_) => "503",
            Unresolved::UnavailableIfVisible { .. } => "503 if visible",
        };
        let cases = [
            (&unindexed, Some(&waiting), "503 if visible"),
            (&Lookup::Unknown, Some(&waiting), "503"),
            (&Lookup::Unknown, Some(&Pending::NoShardKnown), "503"),
            (&Lookup::Missing, Some(&waiting), "403"),
            (&found, Some(&waiting), "403"),
            // Every feed synced: today's answers.
            (&unindexed, None, "403"),
            (&Lookup::Unknown, None, "403"),
            (&Lookup::Missing, None, "403"),
        ];
        for (lookup, pending, want) in cases {
            assert_eq!(unavailable(&unresolved(lookup, pending, "root:x")), want, "{lookup:?} {pending:?}");
        }
        match unresolved(&unindexed, Some(&waiting), "root:org:team") {
            Unresolved::UnavailableIfVisible { cluster, message } => {
                assert_eq!(cluster, "t1");
                assert!(message.contains("shard-1") && message.contains("\"root:org:team\""), "{message}");
                assert!(message.contains("retry"), "{message}");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn readiness_waits_for_every_shard_but_not_forever() {
        let waiting = Pending::Shards(vec!["shard-1".into()]);
        let cases = [
            (None, true, false, true),
            (Some(&waiting), true, false, false),
            (Some(&waiting), true, true, true),
            (Some(&waiting), false, true, false),
            (Some(&Pending::NoShardKnown), false, true, false),
        ];
        for (pending, any_synced, grace_over, ready) in cases {
            let got = readiness(pending, any_synced, grace_over);
            assert_eq!(got.is_ok(), ready, "{pending:?} {any_synced} {grace_over}: {got:?}");
        }
        let reason = readiness(Some(&waiting), true, false).unwrap_err();
        assert!(reason.contains("shard-1"), "{reason}");
    }
}
