//! Cascading deletion on the API side: which garbage-collector finalizers a delete sets.
//!
//! A delete request says what should happen to the object's dependents through
//! `DeleteOptions.propagationPolicy` (or the legacy `orphanDependents`). The API server
//! never touches dependents itself: it records the choice as a finalizer on the object
//! (`orphan` or `foregroundDeletion`) and the garbage collector
//! (a controller of the serving binary) acts on it. Background, the default of every resource
//! served here, sets neither and the object goes at once. Pure functions only.

/// The finalizer that holds an object until the garbage collector has removed the
/// ownerReferences pointing at it from every dependent (kube's `orphan`).
pub const ORPHAN_FINALIZER: &str = "orphan";
/// The finalizer that holds an object until the garbage collector has deleted every
/// dependent that blocks it (kube's `foregroundDeletion`).
pub const FOREGROUND_FINALIZER: &str = "foregroundDeletion";

/// `DeleteOptions.propagationPolicy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Propagation {
    /// Keep the dependents; strip their ownerReferences to the deleted object.
    Orphan,
    /// Delete the object now; the garbage collector deletes the dependents afterwards.
    Background,
    /// Keep the object (deleting) until its blocking dependents are gone.
    Foreground,
}

impl Propagation {
    /// The wire values, in the order kube lists them in its validation message.
    pub const VALUES: [&'static str; 3] = ["Foreground", "Background", "Orphan"];

    /// Parses the wire value; `None` for anything kube does not accept.
    pub fn parse(value: &str) -> Option<Propagation> {
        match value {
            "Orphan" => Some(Propagation::Orphan),
            "Background" => Some(Propagation::Background),
            "Foreground" => Some(Propagation::Foreground),
            _ => None,
        }
    }

    /// The wire value.
    pub fn as_str(self) -> &'static str {
        match self {
            Propagation::Orphan => "Orphan",
            Propagation::Background => "Background",
            Propagation::Foreground => "Foreground",
        }
    }
}

/// What a delete request says about dependents. Both fields unset means "as the object's
/// finalizers already say, else background" (kube's order of precedence: request, existing
/// finalizers, the resource's default policy).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Cascade {
    /// `propagationPolicy`.
    pub policy: Option<Propagation>,
    /// The deprecated `orphanDependents`; a request may not set both (validated by the verb).
    pub orphan_dependents: Option<bool>,
}

impl Cascade {
    /// A request for one policy (what the garbage collector sends).
    pub fn with(policy: Propagation) -> Cascade {
        Cascade { policy: Some(policy), orphan_dependents: None }
    }

    fn orphans(&self, existing: &[String]) -> bool {
        if let Some(orphan) = self.orphan_dependents {
            return orphan;
        }
        match self.policy {
            Some(policy) => policy == Propagation::Orphan,
            None => first_gc_finalizer(existing) == Some(ORPHAN_FINALIZER),
        }
    }

    fn deletes_in_foreground(&self, existing: &[String]) -> bool {
        if self.orphan_dependents.is_some() {
            return false;
        }
        match self.policy {
            Some(policy) => policy == Propagation::Foreground,
            None => first_gc_finalizer(existing) == Some(FOREGROUND_FINALIZER),
        }
    }

    /// The finalizers an object with `existing` finalizers has after this delete, or `None`
    /// when the delete leaves them as they are (compared as sets, as kube does). Other
    /// finalizers keep their order; a garbage-collector finalizer goes last.
    pub fn finalizers(&self, existing: &[String]) -> Option<Vec<String>> {
        let gc_finalizer = |f: &String| f == ORPHAN_FINALIZER || f == FOREGROUND_FINALIZER;
        let mut wanted: Vec<String> = existing.iter().filter(|f| !gc_finalizer(f)).cloned().collect();
        if self.orphans(existing) {
            wanted.push(ORPHAN_FINALIZER.to_string());
        }
        if self.deletes_in_foreground(existing) {
            wanted.push(FOREGROUND_FINALIZER.to_string());
        }
        let as_set = |list: &[String]| list.iter().cloned().collect::<std::collections::BTreeSet<_>>();
        (as_set(&wanted) != as_set(existing)).then_some(wanted)
    }
}

/// The first garbage-collector finalizer of a list (validation keeps both from being set).
fn first_gc_finalizer(finalizers: &[String]) -> Option<&str> {
    finalizers.iter().map(String::as_str).find(|f| *f == ORPHAN_FINALIZER || *f == FOREGROUND_FINALIZER)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn policies_parse_only_kubes_values() {
        for value in Propagation::VALUES {
            assert_eq!(Propagation::parse(value).map(Propagation::as_str), Some(value));
        }
        assert_eq!(Propagation::parse("background"), None);
        assert_eq!(Propagation::parse(""), None);
    }

    #[test]
    fn finalizers_follow_request_then_existing_finalizers_then_background() {
        let orphan = Cascade::with(Propagation::Orphan);
        let foreground = Cascade::with(Propagation::Foreground);
        let background = Cascade::with(Propagation::Background);
        let unset = Cascade::default();
        let legacy_orphan = Cascade { policy: None, orphan_dependents: Some(true) };
        let legacy_cascade = Cascade { policy: None, orphan_dependents: Some(false) };
        #[rustfmt::skip]
        let cases: Vec<(Cascade, Vec<String>, Option<Vec<String>>)> = vec![
            (unset, list(&[]), None),
            (unset, list(&["a/b"]), None),
            (unset, list(&["orphan"]), None),
            (unset, list(&["foregroundDeletion"]), None),
            (background, list(&[]), None),
            (background, list(&["a/b", "orphan"]), Some(list(&["a/b"]))),
            (background, list(&["foregroundDeletion"]), Some(list(&[]))),
            (orphan, list(&[]), Some(list(&["orphan"]))),
            (orphan, list(&["a/b"]), Some(list(&["a/b", "orphan"]))),
            (orphan, list(&["orphan", "a/b"]), None),
            (orphan, list(&["foregroundDeletion"]), Some(list(&["orphan"]))),
            (foreground, list(&[]), Some(list(&["foregroundDeletion"]))),
            (foreground, list(&["orphan", "a/b"]), Some(list(&["a/b", "foregroundDeletion"]))),
            (foreground, list(&["foregroundDeletion"]), None),
            (legacy_orphan, list(&[]), Some(list(&["orphan"]))),
            (legacy_orphan, list(&["foregroundDeletion"]), Some(list(&["orphan"]))),
            (legacy_cascade, list(&["orphan"]), Some(list(&[]))),
            (legacy_cascade, list(&["foregroundDeletion"]), Some(list(&[]))),
            (legacy_cascade, list(&[]), None),
        ];
        for (cascade, existing, expected) in cases {
            assert_eq!(cascade.finalizers(&existing), expected, "{cascade:?} on {existing:?}");
        }
    }
}
