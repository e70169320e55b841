//! Logical-cluster names and workspace paths, with kcp's semantics.
//!
//! A logical cluster has one *name* (random like `2x5kq9zt7pl`, or the fixed `root`) and
//! one canonical *path* (`root:org:team`). URLs address either: `/clusters/<name>/…`,
//! `/clusters/<path>/…`, or `/clusters/*/…` for wildcard reads. [`ClusterRef::parse`]
//! makes that three-way decision once, so handlers never re-inspect the raw segment.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::names::{is_dns1123_label_shape, DNS1123_LABEL_MAX_LENGTH};

/// The name and the path of the one logical cluster every installation starts with.
pub const ROOT: &str = "root";
/// Separates workspace names in a path.
pub const SEPARATOR: char = ':';
/// The URL segment that addresses all logical clusters at once.
pub const WILDCARD: &str = "*";

/// Why a logical-cluster name or path was rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PathError {
    /// The path or name was the empty string.
    #[error("logical cluster path must not be empty")]
    Empty,
    /// One colon-separated segment is not a DNS-1123 label; empty segments (`a::b`, a
    /// trailing `:`) land here too.
    #[error(
        "invalid logical cluster path {path:?}: segment {segment:?} must be a lowercase RFC 1123 label of at most 63 characters"
    )]
    InvalidSegment {
        /// The whole path as given.
        path: String,
        /// The offending segment.
        segment: String,
    },
    /// A single-segment reference that is not a valid logical-cluster name.
    #[error("invalid logical cluster name {0:?}: must be a lowercase RFC 1123 label of at most 63 characters")]
    InvalidName(String),
}

/// The 403 message for a workspace a user may not enter, or that does not exist: one
/// wording for both, used by shards and the front-proxy alike, so that the answer does not
/// tell whether `requested` exists.
pub fn workspace_access_denied(user: &str, requested: &str) -> String {
    format!(
        "forbidden: User {user:?} cannot access workspace {requested:?}: it does not exist, or access needs verb \"access\" on \"/\" bound in the workspace, or ownership of it"
    )
}

/// Percent-decodes URL text (a path segment, a query component, a header-name key), as
/// kube-apiserver does: kubectl sends `/clusters/%2A/…` for the wildcard. Malformed
/// escapes stay as they are; `+` is left alone (query strings replace it first).
pub fn percent_decode(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.contains('%') {
        return std::borrow::Cow::Borrowed(text);
    }
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let escaped = (bytes[i] == b'%' && i + 2 < bytes.len())
            .then(|| std::str::from_utf8(&bytes[i + 1..i + 3]).ok().and_then(|h| u8::from_str_radix(h, 16).ok()))
            .flatten();
        match escaped {
            Some(byte) => {
                out.push(byte);
                i += 3;
            }
            None => {
                out.push(bytes[i]);
                i += 1;
            }
        }
    }
    std::borrow::Cow::Owned(String::from_utf8_lossy(&out).into_owned())
}

/// Reports whether `name` can name a logical cluster: a DNS-1123 label of at most 63
/// characters (`root` is one too).
pub fn is_valid_cluster_name(name: &str) -> bool {
    name.len() <= DNS1123_LABEL_MAX_LENGTH && is_dns1123_label_shape(name)
}

/// A validated workspace path such as `root:org:team` or `home:alice`.
///
/// The invariant (non-empty, every segment a DNS-1123 label) is checked once at
/// construction, so the accessors can slice without re-validating.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct ClusterPath(String);

impl ClusterPath {
    /// Parses and validates a colon-separated path.
    pub fn parse(path: &str) -> Result<ClusterPath, PathError> {
        if path.is_empty() {
            return Err(PathError::Empty);
        }
        if let Some(segment) = path.split(SEPARATOR).find(|segment| !is_valid_cluster_name(segment)) {
            return Err(PathError::InvalidSegment { path: path.to_string(), segment: segment.to_string() });
        }
        Ok(ClusterPath(path.to_string()))
    }

    /// The path of the `root` workspace.
    pub fn root() -> ClusterPath {
        ClusterPath(ROOT.to_string())
    }

    /// The path as text, e.g. for the `kcp.io/path` annotation.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The workspace names from the top down (`root`, `org`, `team`).
    pub fn segments(&self) -> impl Iterator<Item = &str> + '_ {
        self.0.split(SEPARATOR)
    }

    /// The path one level up, or `None` at a top (`root`, or `home` of `home:alice`).
    /// Having a parent path says nothing about whether that workspace exists.
    pub fn parent(&self) -> Option<ClusterPath> {
        self.0.rsplit_once(SEPARATOR).map(|(parent, _)| ClusterPath(parent.to_string()))
    }

    /// The last segment: the workspace's name inside its parent.
    pub fn base(&self) -> &str {
        self.0.rsplit(SEPARATOR).next().unwrap_or(&self.0)
    }

    /// The path of child workspace `child` beneath this one.
    pub fn join(&self, child: &str) -> Result<ClusterPath, PathError> {
        if !is_valid_cluster_name(child) {
            let path = format!("{}{SEPARATOR}{child}", self.0);
            return Err(PathError::InvalidSegment { path, segment: child.to_string() });
        }
        Ok(ClusterPath(format!("{}{SEPARATOR}{child}", self.0)))
    }

    /// Reports whether this is exactly `root`, the one path served without a parent.
    pub fn is_root(&self) -> bool {
        self.0 == ROOT
    }
}

impl fmt::Display for ClusterPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl FromStr for ClusterPath {
    type Err = PathError;

    fn from_str(path: &str) -> Result<Self, Self::Err> {
        ClusterPath::parse(path)
    }
}

impl TryFrom<String> for ClusterPath {
    type Error = PathError;

    fn try_from(path: String) -> Result<Self, Self::Error> {
        ClusterPath::parse(&path)
    }
}

impl From<ClusterPath> for String {
    fn from(path: ClusterPath) -> String {
        path.0
    }
}

impl AsRef<str> for ClusterPath {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

/// What the `<…>` in `/clusters/<…>/` refers to.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ClusterRef {
    /// `*`: every logical cluster (wildcard list and watch).
    Wildcard,
    /// A logical-cluster name, resolved without the path index (`root`, `2x5kq9zt7pl`).
    Name(String),
    /// A workspace path that the path index resolves to a name and a shard.
    Path(ClusterPath),
}

impl ClusterRef {
    /// Classifies a URL segment: `*` is the wildcard, anything with a `:` is a path, and a
    /// single segment is a name. Reading single segments as names lets `/clusters/root/…`
    /// and `/clusters/<random name>/…` skip the path index, as in kcp.
    pub fn parse(segment: &str) -> Result<ClusterRef, PathError> {
        if segment == WILDCARD {
            return Ok(ClusterRef::Wildcard);
        }
        if segment.contains(SEPARATOR) {
            return ClusterPath::parse(segment).map(ClusterRef::Path);
        }
        if segment.is_empty() {
            return Err(PathError::Empty);
        }
        if !is_valid_cluster_name(segment) {
            return Err(PathError::InvalidName(segment.to_string()));
        }
        Ok(ClusterRef::Name(segment.to_string()))
    }
}

impl fmt::Display for ClusterRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ClusterRef::Wildcard => f.write_str(WILDCARD),
            ClusterRef::Name(name) => f.write_str(name),
            ClusterRef::Path(path) => fmt::Display::fmt(path, f),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cluster_name_table() {
        let sixty_three = "a".repeat(63);
        let sixty_four = "a".repeat(64);
        for (input, expected) in [
            ("root", true),
            ("2x5kq9zt7pl", true),
            ("a", true),
            ("a-b", true),
            (sixty_three.as_str(), true),
            (sixty_four.as_str(), false),
            ("", false),
            ("-a", false),
            ("a-", false),
            ("Root", false),
            ("a.b", false),
            ("a:b", false),
            ("*", false),
        ] {
            assert_eq!(is_valid_cluster_name(input), expected, "input {input:?}");
        }
    }

    #[test]
    fn percent_decoding_table() {
        for (input, want) in
            [("%2A", "*"), ("root%3Aorg", "root:org"), ("bad%zz%4", "bad%zz%4"), ("a+b", "a+b"), ("%7e", "~")]
        {
            assert_eq!(percent_decode(input), want, "{input}");
        }
    }

    #[test]
    fn parse_table() {
        let invalid = |path: &str, segment: &str| {
            Err(PathError::InvalidSegment { path: path.to_string(), segment: segment.to_string() })
        };
        for (input, expected) in [
            ("root", Ok(ClusterPath("root".to_string()))),
            ("root:org:team", Ok(ClusterPath("root:org:team".to_string()))),
            ("home:alice", Ok(ClusterPath("home:alice".to_string()))),
            ("", Err(PathError::Empty)),
            ("root:", invalid("root:", "")),
            (":root", invalid(":root", "")),
            ("root::org", invalid("root::org", "")),
            ("root:Org", invalid("root:Org", "Org")),
            ("root:o.rg", invalid("root:o.rg", "o.rg")),
            ("root:*", invalid("root:*", "*")),
        ] {
            assert_eq!(ClusterPath::parse(input), expected, "input {input:?}");
        }
    }

    #[test]
    fn accessors_table() {
        // (path, segments, parent, base, is_root)
        for (input, segments, parent, base, is_root) in [
            ("root", vec!["root"], None, "root", true),
            ("root:org", vec!["root", "org"], Some("root"), "org", false),
            ("root:org:team", vec!["root", "org", "team"], Some("root:org"), "team", false),
            ("home:alice", vec!["home", "alice"], Some("home"), "alice", false),
            ("home", vec!["home"], None, "home", false),
        ] {
            let path = ClusterPath::parse(input).unwrap();
            assert_eq!(path.segments().collect::<Vec<_>>(), segments, "input {input:?}");
            assert_eq!(path.parent().as_ref().map(ClusterPath::as_str), parent, "input {input:?}");
            assert_eq!(path.base(), base, "input {input:?}");
            assert_eq!(path.is_root(), is_root, "input {input:?}");
            assert_eq!(path.to_string(), input);
        }
    }

    #[test]
    fn join_table() {
        let root = ClusterPath::root();
        for (child, expected) in [
            ("org", Ok("root:org".to_string())),
            ("a-1", Ok("root:a-1".to_string())),
            ("", Err(PathError::InvalidSegment { path: "root:".to_string(), segment: String::new() })),
            ("a:b", Err(PathError::InvalidSegment { path: "root:a:b".to_string(), segment: "a:b".to_string() })),
        ] {
            assert_eq!(root.join(child).map(|path| path.to_string()), expected, "child {child:?}");
        }
    }

    #[test]
    fn cluster_ref_table() {
        let path = |p: &str| ClusterRef::Path(ClusterPath::parse(p).unwrap());
        for (input, expected) in [
            ("*", Ok(ClusterRef::Wildcard)),
            ("root", Ok(ClusterRef::Name("root".to_string()))),
            ("2x5kq9zt7pl", Ok(ClusterRef::Name("2x5kq9zt7pl".to_string()))),
            ("root:org", Ok(path("root:org"))),
            ("home:alice", Ok(path("home:alice"))),
            ("", Err(PathError::Empty)),
            ("Root", Err(PathError::InvalidName("Root".to_string()))),
            ("**", Err(PathError::InvalidName("**".to_string()))),
            ("root:*", Err(PathError::InvalidSegment { path: "root:*".to_string(), segment: "*".to_string() })),
        ] {
            assert_eq!(ClusterRef::parse(input), expected, "input {input:?}");
            if let Ok(parsed) = ClusterRef::parse(input) {
                assert_eq!(parsed.to_string(), input);
            }
        }
    }

    #[test]
    fn serde_round_trip_validates() {
        for (json, ok) in [("\"root:org\"", true), ("\"root:\"", false), ("\"\"", false)] {
            let parsed: Result<ClusterPath, _> = serde_json::from_str(json);
            assert_eq!(parsed.is_ok(), ok, "json {json}");
            if let Ok(path) = parsed {
                assert_eq!(serde_json::to_string(&path).unwrap(), json);
            }
        }
    }
}
