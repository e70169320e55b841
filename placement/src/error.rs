//! Why a decision could not be made at all.
//!
//! A candidate that fails a filter is not an error: it is a rejection with a reason in
//! the decision. Errors are reserved for inputs no decision can come from, and each
//! variant maps to one status a controller writes: `Misconfigured` is OCM's
//! PlacementMisconfigured condition (and Fleet's invalid-policy status), the other two
//! are bugs in the caller.

/// A decision could not be made.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// The policy is invalid for a plugin (a malformed selector, an unknown prioritizer,
    /// a weight out of range, a toleration OCM refuses).
    #[error("{plugin}: {message}")]
    Misconfigured {
        /// The plugin (or policy part) that refused it.
        plugin: String,
        /// What is wrong.
        message: String,
    },
    /// Two candidates share a name, so decisions would be ambiguous.
    #[error("candidate {0:?} is listed more than once")]
    DuplicateCandidate(String),
    /// The profile cannot run (a scorer tier out of range, PickFixed without the
    /// FixedNames filter).
    #[error("profile {profile}: {message}")]
    InvalidProfile {
        /// The profile's name.
        profile: String,
        /// What is wrong.
        message: String,
    },
}

impl Error {
    pub(crate) fn misconfigured(plugin: &str, message: impl Into<String>) -> Error {
        Error::Misconfigured { plugin: plugin.to_string(), message: message.into() }
    }
}
