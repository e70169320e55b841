//! The bind stage: the change from the current decisions to the desired ones. The
//! controller applies it as one atomic write, so a watcher never sees a kept cluster
//! leave and come back.

use std::collections::BTreeSet;

use crate::decision::Bind;

pub(crate) fn diff(current: &[String], desired: &[String]) -> Bind {
    let current: BTreeSet<&str> = current.iter().map(String::as_str).collect();
    let desired: BTreeSet<&str> = desired.iter().map(String::as_str).collect();
    let owned = |names: Vec<&str>| names.into_iter().map(str::to_string).collect();
    Bind {
        add: owned(desired.difference(&current).copied().collect()),
        keep: owned(desired.intersection(&current).copied().collect()),
        remove: owned(current.difference(&desired).copied().collect()),
    }
}

#[cfg(test)]
mod tests {
    use super::diff;

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|n| n.to_string()).collect()
    }

    #[test]
    fn splits_into_add_keep_remove() {
        let bind = diff(&names(&["a", "b", "c"]), &names(&["d", "b", "a"]));
        assert_eq!(bind.add, names(&["d"]));
        assert_eq!(bind.keep, names(&["a", "b"]));
        assert_eq!(bind.remove, names(&["c"]));
    }
}
