//! What the garbage collector does about one object, given its owners and dependents as
//! the index shows them: kube-controller-manager's `attemptToDeleteItem` and
//! `attemptToOrphan`, as pure functions.
//!
//! An object being deleted is an owner whose dependents may need handling:
//! - with `orphan`: strip the ownerReferences to it from every dependent, then drop the
//!   finalizer;
//! - with `foregroundDeletion`: get every dependent deleted, and drop the finalizer once
//!   no dependent that blocks it (`blockOwnerDeletion: true`) is left;
//! - otherwise there is nothing to do until it is gone ("being deleted" is a one-way trip).
//!
//! A live object with ownerReferences is a dependent, judged by its owners ([`classify`]):
//! - some owner is *solid* (present and not waiting for its dependents): it lives, and
//!   references to absent owners and to owners deleting in foreground are removed;
//! - otherwise, if some owner waits in foreground and the object has dependents of its
//!   own, it is deleted in foreground too, so that the wait reaches down the chain;
//! - otherwise it is deleted with the policy its own finalizers ask for, else background.

use super::graph::{identity_hash, namespace_hash, ItemView, Node, OwnerFacts, OwnerRef, Uid};
use apiserver::storage::Propagation;
use std::sync::Arc;

/// How one ownerReference of a dependent resolves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OwnerState {
    /// The owner exists and is not waiting for its dependents: the dependent stays.
    Solid,
    /// No such owner: absent, or the reference's kind, name or namespace do not match the
    /// object with that UID (kube resolves a reference by kind and name in the
    /// dependent's namespace, then compares UIDs).
    Dangling,
    /// The owner is deleting in foreground: it waits for this dependent to go.
    Waiting,
    /// A cluster-scoped dependent names a namespaced owner: the reference can never
    /// resolve, and kube leaves such a dependent alone.
    Unresolvable,
}

/// Resolves one ownerReference of a dependent in `dependent_namespace` against the object
/// that has the referenced UID, if any.
pub fn classify(dependent_namespace: Option<&str>, reference: &OwnerRef, owner: Option<&OwnerFacts>) -> OwnerState {
    let Some(owner) = owner else { return OwnerState::Dangling };
    if owner.identity != identity_hash(&reference.group, &reference.kind, &reference.name) {
        return OwnerState::Dangling;
    }
    match (owner.namespace, dependent_namespace) {
        (Some(_), None) => return OwnerState::Unresolvable,
        (Some(owner_namespace), Some(namespace)) if owner_namespace != namespace_hash(namespace) => {
            return OwnerState::Dangling
        }
        _ => {}
    }
    if owner.deleting_dependents {
        OwnerState::Waiting
    } else {
        OwnerState::Solid
    }
}

/// What to do about an item.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Nothing, now.
    Nothing,
    /// A deleting owner with the `orphan` finalizer: strip the references to it from these
    /// dependents (UID and key), then drop the finalizer.
    Orphan {
        /// Its dependents.
        dependents: Vec<(Uid, Arc<str>)>,
    },
    /// A deleting owner with `foregroundDeletion`: look at these dependents (they must be
    /// deleted), and drop the finalizer when `finish` (no blocking dependent is left).
    Foreground {
        /// Dependents not yet deleting.
        dependents: Vec<Uid>,
        /// No dependent blocks the owner any more.
        finish: bool,
    },
    /// A dependent with a solid owner: remove its references to these owners, which are
    /// absent or deleting in foreground (the latter would otherwise wait for it forever).
    RemoveOwnerReferences {
        /// UIDs of the references to remove.
        owners: Vec<Uid>,
    },
    /// A dependent without a solid owner: delete it.
    Delete {
        /// How its own dependents are treated.
        propagation: Propagation,
        /// First set `blockOwnerDeletion: false` on its references: one of its dependents
        /// waits in foreground as well, and a cycle of foreground waits would never end.
        unblock_first: bool,
    },
    /// A reference that can never resolve: leave the item alone (kube reports it).
    Unresolvable {
        /// The UID of the offending reference.
        owner: Uid,
    },
}

impl Decision {
    /// A short name for logs and spans (the full decision may list many dependents).
    pub fn name(&self) -> &'static str {
        match self {
            Decision::Nothing => "nothing",
            Decision::Orphan { .. } => "orphan",
            Decision::Foreground { .. } => "foreground",
            Decision::RemoveOwnerReferences { .. } => "remove_owner_references",
            Decision::Delete { .. } => "delete",
            Decision::Unresolvable { .. } => "unresolvable",
        }
    }
}

/// Decides what to do about one item.
pub fn decide(view: &ItemView) -> Decision {
    if view.item.deleting {
        return decide_deleting_owner(view);
    }
    if view.item.owners.is_empty() {
        return Decision::Nothing;
    }
    let namespace = view.item.namespace.as_deref();
    let mut solid = false;
    let mut waiting = false;
    let mut stale: Vec<Uid> = Vec::new();
    for (reference, owner) in &view.owners {
        match classify(namespace, reference, owner.as_ref()) {
            OwnerState::Unresolvable => return Decision::Unresolvable { owner: reference.uid.clone() },
            OwnerState::Solid => solid = true,
            OwnerState::Dangling => stale.push(reference.uid.clone()),
            OwnerState::Waiting => {
                waiting = true;
                stale.push(reference.uid.clone());
            }
        }
    }
    if solid {
        stale.sort_unstable();
        stale.dedup();
        return if stale.is_empty() { Decision::Nothing } else { Decision::RemoveOwnerReferences { owners: stale } };
    }
    if waiting && !view.dependents.is_empty() {
        let unblock_first = view.dependents.iter().any(|d| d.deleting_dependents);
        return Decision::Delete { propagation: Propagation::Foreground, unblock_first };
    }
    Decision::Delete { propagation: own_policy(&view.item), unblock_first: false }
}

/// An owner being deleted: only the garbage-collector finalizers give work.
fn decide_deleting_owner(view: &ItemView) -> Decision {
    if view.item.orphan_finalizer {
        let dependents = view.dependents.iter().map(|d| (d.uid.clone(), d.key.clone())).collect();
        return Decision::Orphan { dependents };
    }
    if view.item.foreground_finalizer {
        let dependents = view.dependents.iter().filter(|d| !d.deleting).map(|d| d.uid.clone()).collect();
        let finish = !view.dependents.iter().any(|d| d.blocking);
        return Decision::Foreground { dependents, finish };
    }
    Decision::Nothing
}

/// The policy an object's own finalizers already ask for (kube honours them when it
/// collects an object), else background.
fn own_policy(item: &Node) -> Propagation {
    if item.orphan_finalizer {
        Propagation::Orphan
    } else if item.foreground_finalizer {
        Propagation::Foreground
    } else {
        Propagation::Background
    }
}

#[cfg(test)]
mod tests {
    use super::super::graph::tests::node;
    use super::super::graph::DependentView;
    use super::*;

    /// An owner named as the test helper's references name it.
    fn owner(namespace: Option<&str>, uid: &str) -> Node {
        node(namespace, &format!("owner-{uid}"), uid, &[])
    }

    fn deleting(mut node: Node, orphan: bool, foreground: bool) -> Node {
        (node.deleting, node.orphan_finalizer, node.foreground_finalizer) = (true, orphan, foreground);
        node
    }

    fn dependent(uid: &str, blocking: bool, deleting: bool, deleting_dependents: bool) -> DependentView {
        DependentView { uid: uid.into(), key: format!("k/{uid}").into(), blocking, deleting, deleting_dependents }
    }

    fn view(item: Node, owners: Vec<Option<Node>>, dependents: Vec<DependentView>) -> ItemView {
        let owners = item.owners.iter().cloned().zip(owners.iter().map(|o| o.as_ref().map(Node::facts))).collect();
        ItemView { item, owners, dependents }
    }

    #[test]
    fn references_resolve_by_uid_kind_name_and_namespace() {
        let reference = node(Some("ns"), "d", "d", &[("o", true)]).owners[0].clone();
        let mut other_kind = owner(Some("ns"), "o");
        other_kind.kind = "Secret".into();
        let mut renamed = owner(Some("ns"), "o");
        renamed.name = "someone-else".into();
        #[rustfmt::skip]
        let cases = [
            (Some("ns"), None, OwnerState::Dangling),
            (Some("ns"), Some(owner(Some("ns"), "o")), OwnerState::Solid),
            (Some("ns"), Some(owner(None, "o")), OwnerState::Solid),
            (None, Some(owner(None, "o")), OwnerState::Solid),
            (Some("ns"), Some(owner(Some("other"), "o")), OwnerState::Dangling),
            (None, Some(owner(Some("ns"), "o")), OwnerState::Unresolvable),
            (Some("ns"), Some(other_kind), OwnerState::Dangling),
            (Some("ns"), Some(renamed), OwnerState::Dangling),
            (Some("ns"), Some(deleting(owner(Some("ns"), "o"), false, true)), OwnerState::Waiting),
            (Some("ns"), Some(deleting(owner(Some("ns"), "o"), true, false)), OwnerState::Solid),
            (Some("ns"), Some(deleting(owner(Some("ns"), "o"), false, false)), OwnerState::Solid),
        ];
        for (namespace, candidate, expected) in cases {
            let facts = candidate.as_ref().map(Node::facts);
            assert_eq!(classify(namespace, &reference, facts.as_ref()), expected, "{namespace:?} {candidate:?}");
        }
    }

    #[test]
    fn dependents_are_judged_by_their_owners() {
        let solid = || Some(owner(Some("ns"), "a"));
        let waiting = || Some(deleting(owner(Some("ns"), "b"), false, true));
        let two = || node(Some("ns"), "d", "d", &[("a", true), ("b", true)]);
        let background = Decision::Delete { propagation: Propagation::Background, unblock_first: false };
        let foreground = Decision::Delete { propagation: Propagation::Foreground, unblock_first: false };
        let remove =
            |uids: &[&str]| Decision::RemoveOwnerReferences { owners: uids.iter().map(|u| (*u).into()).collect() };
        let mut with_orphan_finalizer = node(Some("ns"), "d", "d", &[("a", true)]);
        with_orphan_finalizer.orphan_finalizer = true;
        #[rustfmt::skip]
        let cases = [
            ("no owners", view(node(Some("ns"), "d", "d", &[]), vec![], vec![]), Decision::Nothing),
            ("both owners solid", view(two(), vec![solid(), Some(owner(Some("ns"), "b"))], vec![]), Decision::Nothing),
            ("solid and absent", view(two(), vec![solid(), None], vec![]), remove(&["b"])),
            ("solid and waiting", view(two(), vec![solid(), waiting()], vec![]), remove(&["b"])),
            ("all absent", view(two(), vec![None, None], vec![]), background.clone()),
            ("absent and waiting, no dependents", view(two(), vec![None, waiting()], vec![]), background),
            ("waiting, with dependents", view(two(), vec![None, waiting()], vec![dependent("x", true, false, false)]), foreground),
            ("waiting, dependent waits too",
                view(two(), vec![None, waiting()], vec![dependent("x", true, true, true)]),
                Decision::Delete { propagation: Propagation::Foreground, unblock_first: true }),
            ("own orphan finalizer", view(with_orphan_finalizer, vec![None], vec![]),
                Decision::Delete { propagation: Propagation::Orphan, unblock_first: false }),
            ("cluster-scoped dependent, namespaced owner",
                view(node(None, "d", "d", &[("a", true)]), vec![solid()], vec![]),
                Decision::Unresolvable { owner: "a".into() }),
        ];
        for (name, view, expected) in cases {
            assert_eq!(decide(&view), expected, "{name}");
        }
    }

    #[test]
    fn deleting_owners_orphan_or_wait_for_blocking_dependents() {
        let item = |orphan, foreground| deleting(owner(Some("ns"), "o"), orphan, foreground);
        let both = vec![dependent("x", true, false, false), dependent("y", false, true, false)];
        #[rustfmt::skip]
        let cases = [
            ("orphan", view(item(true, false), vec![], both.clone()),
                Decision::Orphan { dependents: vec![("x".into(), "k/x".into()), ("y".into(), "k/y".into())] }),
            ("orphan, no dependents", view(item(true, false), vec![], vec![]), Decision::Orphan { dependents: vec![] }),
            ("foreground, blocked", view(item(false, true), vec![], both),
                Decision::Foreground { dependents: vec!["x".into()], finish: false }),
            ("foreground, only non-blocking left", view(item(false, true), vec![], vec![dependent("y", false, false, false)]),
                Decision::Foreground { dependents: vec!["y".into()], finish: true }),
            ("foreground, blocking one deleting", view(item(false, true), vec![], vec![dependent("x", true, true, false)]),
                Decision::Foreground { dependents: vec![], finish: false }),
            ("foreground, none left", view(item(false, true), vec![], vec![]),
                Decision::Foreground { dependents: vec![], finish: true }),
            ("other finalizers only", view(item(false, false), vec![], vec![dependent("x", true, false, false)]),
                Decision::Nothing),
        ];
        for (name, view, expected) in cases {
            assert_eq!(decide(&view), expected, "{name}");
        }
    }
}
