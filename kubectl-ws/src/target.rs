//! Path arithmetic: what `kubectl ws <arg>` asks for, and which workspace path that is.
//!
//! [`parse_argument`] reads the argument the way kcp's plugin does: `.` is the current
//! workspace, `-` the previous one, `~` (or nothing) home, `:` the top of the current
//! path, a leading `:` an absolute path, anything else a path relative to the current
//! workspace; `/` may stand for `:`, and `..`/`.` segments work anywhere in a path.
//! [`resolve`] then turns a path-like [`Target`] into a canonical [`ClusterPath`] given the
//! current workspace (and the home path, which only the server knows).

use protocol::path::{ClusterPath, ROOT, SEPARATOR};

/// What the user asked to switch to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// `.`: stay, and say where we are.
    Current,
    /// `-`: the workspace before the last switch.
    Previous,
    /// `~` or `~:rest`: the home workspace, then `rest` relative to it (empty for home).
    Home {
        /// The part after `~:`, still with any `..`/`.` segments.
        rest: String,
    },
    /// `:`: the top of the current path (`root` for `root:org:team`).
    TopOfCurrent,
    /// `:root:org`: an absolute path, still with any `..`/`.` segments.
    Absolute(String),
    /// `org:team`, `..`: a path relative to the current workspace.
    Relative(String),
}

/// Something to tell the user on stderr, as kcp's plugin does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Note {
    /// `root:…` was taken as the absolute `:root:…`.
    LegacyRootPrefix,
    /// No argument meant home, which surprises users of older plugins.
    NoArgumentMeansHome,
}

impl Note {
    /// The text kcp's plugin prints.
    pub fn message(self) -> &'static str {
        match self {
            Note::LegacyRootPrefix => {
                "Note: Using 'root:' to define an absolute path is no longer supported. \
                 Instead, use ':root' to specify an absolute path."
            }
            Note::NoArgumentMeansHome => {
                "Note: 'kubectl ws' now matches 'cd' semantics: go to home workspace. \
                 'kubectl ws -' to go back. 'kubectl ws .' to print current workspace."
            }
        }
    }
}

/// A parsed argument: the target, and notes to print (before acting for
/// [`Note::LegacyRootPrefix`], after succeeding for [`Note::NoArgumentMeansHome`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Parsed {
    /// What to switch to.
    pub target: Target,
    /// What to tell the user.
    pub notes: Vec<Note>,
}

/// Why a target has no workspace path.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TargetError {
    /// A segment is not a workspace name, or the path is empty.
    #[error("invalid workspace path: {0}")]
    InvalidPath(String),
    /// `..` went above the top of a path.
    #[error("workspace {0:?} has no parent")]
    NoParent(String),
    /// A relative move from a server URL that names no workspace.
    #[error("current URL {0:?} does not point to a workspace")]
    NoCurrentWorkspace(String),
}

/// Reads the argument of `kubectl ws [use]`. `user_home_dir` undoes the shell's expansion
/// of an unquoted `~` (`kubectl ws ~` arrives as `/home/alice`).
pub fn parse_argument(argument: &str, user_home_dir: Option<&str>) -> Parsed {
    let mut notes = Vec::new();
    let mut name = unexpand_home(argument, user_home_dir).replace('/', ":");
    if name == ROOT || name.starts_with("root:") {
        name.insert(0, SEPARATOR);
        notes.push(Note::LegacyRootPrefix);
    }
    if name.is_empty() {
        notes.push(Note::NoArgumentMeansHome);
        name.push('~');
    }
    let target = match name.as_str() {
        "." => Target::Current,
        "-" => Target::Previous,
        ":" => Target::TopOfCurrent,
        "~" => Target::Home { rest: String::new() },
        _ => match (name.strip_prefix("~:"), name.strip_prefix(SEPARATOR)) {
            (Some(rest), _) => Target::Home { rest: rest.to_string() },
            (None, Some(absolute)) => Target::Absolute(absolute.to_string()),
            (None, None) => Target::Relative(name),
        },
    };
    Parsed { target, notes }
}

/// `/home/alice` → `~`, `/home/alice/x` → `~/x`; anything else unchanged.
fn unexpand_home(argument: &str, user_home_dir: Option<&str>) -> String {
    let home = user_home_dir.map(|home| home.trim_end_matches('/')).filter(|home| !home.is_empty());
    if let Some(rest) = home.and_then(|home| argument.strip_prefix(home)) {
        if rest.is_empty() || rest.starts_with('/') {
            return format!("~{rest}");
        }
    }
    argument.to_string()
}

/// The canonical path a path-like target names. `current` is the workspace the server URL
/// points at (`None` when it points at none), `home` the caller's home path (needed only
/// for [`Target::Home`]); `server` is quoted in errors.
///
/// # Panics
/// For [`Target::Current`] and [`Target::Previous`], which name no path: callers handle
/// them before resolving.
pub fn resolve(
    target: &Target,
    current: Option<&ClusterPath>,
    home: Option<&ClusterPath>,
    server: &str,
) -> Result<ClusterPath, TargetError> {
    let current_or_error = || current.ok_or_else(|| TargetError::NoCurrentWorkspace(server.to_string()));
    match target {
        Target::Current | Target::Previous => panic!("{target:?} names no path"),
        Target::TopOfCurrent => {
            let top = current_or_error()?.segments().next().unwrap_or(ROOT);
            resolve_dots(top, top)
        }
        Target::Absolute(path) => resolve_dots(path, &format!(":{path}")),
        Target::Relative(path) => resolve_dots(&format!("{}:{path}", current_or_error()?), path),
        Target::Home { rest } => {
            let home = home.expect("the home path is looked up before resolving ~");
            if rest.is_empty() {
                return Ok(home.clone());
            }
            resolve_dots(&format!("{home}:{rest}"), &format!("~:{rest}"))
        }
    }
}

/// Removes `.` and `..` segments from an absolute `path` and validates the rest;
/// `as_given` is what the user typed, for the error message.
pub fn resolve_dots(path: &str, as_given: &str) -> Result<ClusterPath, TargetError> {
    let mut segments: Vec<&str> = Vec::new();
    for segment in path.split(SEPARATOR) {
        match segment {
            "." => {}
            ".." => {
                if segments.len() <= 1 {
                    let top = segments.first().copied().unwrap_or(as_given);
                    return Err(TargetError::NoParent(top.to_string()));
                }
                segments.pop();
            }
            _ => segments.push(segment),
        }
    }
    ClusterPath::parse(&segments.join(":")).map_err(|_| TargetError::InvalidPath(as_given.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path(text: &str) -> ClusterPath {
        ClusterPath::parse(text).unwrap()
    }

    #[test]
    fn arguments_parse_like_kcp() {
        let home_dir = Some("/home/alice");
        let relative = |p: &str| Target::Relative(p.to_string());
        let absolute = |p: &str| Target::Absolute(p.to_string());
        let home = |rest: &str| Target::Home { rest: rest.to_string() };
        // (argument, target, notes)
        let cases = [
            (".", Target::Current, vec![]),
            ("-", Target::Previous, vec![]),
            (":", Target::TopOfCurrent, vec![]),
            ("~", home(""), vec![]),
            ("", home(""), vec![Note::NoArgumentMeansHome]),
            ("~:team", home("team"), vec![]),
            ("/home/alice", home(""), vec![]),
            ("/home/alice/", home(""), vec![]),
            ("/home/alice/team", home("team"), vec![]),
            ("/home/alice2", absolute("home:alice2"), vec![]),
            ("org", relative("org"), vec![]),
            ("org:team", relative("org:team"), vec![]),
            ("org/team", relative("org:team"), vec![]),
            ("..", relative(".."), vec![]),
            ("../..", relative("..:.."), vec![]),
            (":root:org", absolute("root:org"), vec![]),
            (":home:bob", absolute("home:bob"), vec![]),
            ("root", absolute("root"), vec![Note::LegacyRootPrefix]),
            ("root:org", absolute("root:org"), vec![Note::LegacyRootPrefix]),
            ("rooted", relative("rooted"), vec![]),
        ];
        for (argument, target, notes) in cases {
            let parsed = parse_argument(argument, home_dir);
            assert_eq!(parsed, Parsed { target, notes }, "{argument:?}");
        }
        assert_eq!(parse_argument("/root", Some("/root")).target, home(""), "root's own home dir");
        assert_eq!(parse_argument("/x", Some("/")).target, absolute("x"), "HOME=/ unexpands nothing");
    }

    #[test]
    fn targets_resolve_to_paths() {
        let current = path("root:org");
        let home = path("home:alice");
        let server = "https://h/clusters/root:org";
        let ok = |target: Target, expected: &str| {
            let resolved = resolve(&target, Some(&current), Some(&home), server);
            assert_eq!(resolved, Ok(path(expected)), "{target:?}");
        };
        ok(Target::Relative("team".into()), "root:org:team");
        ok(Target::Relative("team:sub".into()), "root:org:team:sub");
        ok(Target::Relative("..".into()), "root");
        ok(Target::Relative("..:other".into()), "root:other");
        ok(Target::Relative(".:team:.".into()), "root:org:team");
        ok(Target::Relative("team:..:..".into()), "root");
        ok(Target::Absolute("root".into()), "root");
        ok(Target::Absolute("root:a:b".into()), "root:a:b");
        ok(Target::Absolute("root:a:..:b".into()), "root:b");
        ok(Target::Absolute("home:bob".into()), "home:bob");
        ok(Target::TopOfCurrent, "root");
        ok(Target::Home { rest: String::new() }, "home:alice");
        ok(Target::Home { rest: "project".into() }, "home:alice:project");
        ok(Target::Home { rest: "..".into() }, "home");
    }

    #[test]
    fn impossible_targets_are_errors() {
        let root = path("root");
        let server = "https://h/clusters/root";
        let error = |target: Target, current: Option<&ClusterPath>| {
            resolve(&target, current, None, server).expect_err(&format!("{target:?}")).to_string()
        };
        assert_eq!(error(Target::Relative("..".into()), Some(&root)), r#"workspace "root" has no parent"#);
        assert_eq!(
            error(Target::Relative("..:..".into()), Some(&path("root:org"))),
            r#"workspace "root" has no parent"#
        );
        assert_eq!(error(Target::Absolute("..".into()), Some(&root)), r#"workspace ":.." has no parent"#);
        assert_eq!(error(Target::Relative("Bad".into()), Some(&root)), "invalid workspace path: Bad");
        assert_eq!(error(Target::Relative("a::b".into()), Some(&root)), "invalid workspace path: a::b");
        assert_eq!(error(Target::Absolute("ju:nk§".into()), Some(&root)), "invalid workspace path: :ju:nk§");
        assert_eq!(error(Target::Absolute(String::new()), Some(&root)), "invalid workspace path: :");
        let no_workspace = r#"current URL "https://h/clusters/root" does not point to a workspace"#;
        assert_eq!(error(Target::Relative("org".into()), None), no_workspace);
        assert_eq!(error(Target::TopOfCurrent, None), no_workspace);
        // Absolute paths need no current workspace.
        assert_eq!(resolve(&Target::Absolute("root:a".into()), None, None, server), Ok(path("root:a")));
    }
}
