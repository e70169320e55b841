//! Apply conflicts ([`Conflicts`]) with kube-apiserver's message and status causes.

use std::fmt;

/// `StatusCause.reason` kube gives each conflicting field.
pub const FIELD_MANAGER_CONFLICT: &str = "FieldManagerConflict";

/// One field an apply would change that another manager owns.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Conflict {
    /// The owner as kube prints it: `"kubectl"` (an applier) or
    /// `"kubectl-client-side-apply" using v1` (an updater).
    pub manager: String,
    /// The field in kube's path notation: `.data.a`,
    /// `.spec.containers[name="nginx"].image`.
    pub field: String,
    /// The owner's identity; conflicts are grouped and ordered by it, as kube does.
    pub(super) manager_identifier: String,
}

/// One `status.details.causes[]` item of kube's 409 reply to a conflicting apply.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConflictCause {
    /// Always [`FIELD_MANAGER_CONFLICT`].
    pub reason: &'static str,
    /// `conflict with "kubectl" using v1`.
    pub message: String,
    /// `.data.a`.
    pub field: String,
}

/// Every conflict of one apply, ordered by owner identity, then by field as kube iterates
/// field sets. Displays as kube's Status message; answer with 409 Conflict, reason
/// `Conflict`, and [`Conflicts::causes`] as the details' causes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Conflicts {
    conflicts: Vec<Conflict>,
}

impl Conflicts {
    /// Collects conflicts; they are sorted by owner identity (stably, so each owner's
    /// fields keep their order).
    pub(super) fn new(mut conflicts: Vec<Conflict>) -> Self {
        debug_assert!(!conflicts.is_empty(), "a conflict error needs conflicts");
        conflicts.sort_by(|a, b| a.manager_identifier.cmp(&b.manager_identifier));
        Conflicts { conflicts }
    }

    /// The conflicts, in message order.
    pub fn conflicts(&self) -> &[Conflict] {
        &self.conflicts
    }

    /// The Status causes, one per conflicting field.
    pub fn causes(&self) -> Vec<ConflictCause> {
        self.conflicts
            .iter()
            .map(|conflict| ConflictCause {
                reason: FIELD_MANAGER_CONFLICT,
                message: format!("conflict with {}", conflict.manager),
                field: conflict.field.clone(),
            })
            .collect()
    }
}

/// kube's message: `Apply failed with 1 conflict: conflict with "m" using v1: .data.a`, or
/// for several, `Apply failed with 2 conflicts: conflicts with "m" using v1:` followed by
/// one `- .field` line per field, grouped under each owner.
impl fmt::Display for Conflicts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let [only] = self.conflicts.as_slice() {
            return write!(f, "Apply failed with 1 conflict: conflict with {}: {}", only.manager, only.field);
        }
        write!(f, "Apply failed with {} conflicts: ", self.conflicts.len())?;
        let mut lines = Vec::with_capacity(self.conflicts.len() * 2);
        let mut previous: Option<&str> = None;
        for conflict in &self.conflicts {
            if previous != Some(conflict.manager_identifier.as_str()) {
                lines.push(format!("conflicts with {}:", conflict.manager));
                previous = Some(&conflict.manager_identifier);
            }
            lines.push(format!("- {}", conflict.field));
        }
        f.write_str(&lines.join("\n"))
    }
}

impl std::error::Error for Conflicts {}

#[cfg(test)]
mod tests {
    use super::*;

    fn conflict(manager: &str, identifier: &str, field: &str) -> Conflict {
        Conflict { manager: manager.into(), field: field.into(), manager_identifier: identifier.into() }
    }

    #[test]
    fn messages_match_kube() {
        let csa = r#""kubectl-client-side-apply" using v1"#;
        let csa_id = r#"{"manager":"kubectl-client-side-apply","operation":"Update","apiVersion":"v1"}"#;
        let one = Conflicts::new(vec![conflict(csa, csa_id, ".data.a")]);
        assert_eq!(
            one.to_string(),
            r#"Apply failed with 1 conflict: conflict with "kubectl-client-side-apply" using v1: .data.a"#
        );
        let two = Conflicts::new(vec![conflict(csa, csa_id, ".data.a"), conflict(csa, csa_id, ".data.b")]);
        assert_eq!(
            two.to_string(),
            "Apply failed with 2 conflicts: conflicts with \"kubectl-client-side-apply\" using v1:\n- .data.a\n- .data.b"
        );
        let mixed = Conflicts::new(vec![
            conflict(csa, csa_id, ".data.a"),
            conflict(r#""argocd""#, r#"{"manager":"argocd","operation":"Apply"}"#, ".data.c"),
        ]);
        assert_eq!(
            mixed.to_string(),
            "Apply failed with 2 conflicts: conflicts with \"argocd\":\n- .data.c\nconflicts with \"kubectl-client-side-apply\" using v1:\n- .data.a"
        );
        assert_eq!(
            two.causes()[1],
            ConflictCause {
                reason: "FieldManagerConflict",
                message: r#"conflict with "kubectl-client-side-apply" using v1"#.into(),
                field: ".data.b".into()
            }
        );
    }
}
