use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use super::edit::{self, EditError};
use super::*;

const ADMIN: &str = "\
apiVersion: v1
kind: Config
current-context: admin
preferences:
  colors: true
clusters:
- name: root
  cluster:
    server: https://h:6443/clusters/root
    certificate-authority-data: Q0E=
    tls-server-name: atoll
- name: elsewhere
  cluster:
    server: https://other:443
users:
- name: admin
  user:
    client-certificate-data: Q0VSVA==
    client-key-data: S0VZ
- name: bob
  user:
    token: secret
contexts:
- name: admin
  context:
    cluster: root
    user: admin
    namespace: team
- name: other
  context:
    cluster: elsewhere
    user: bob
";

fn file(path: &str, yaml: &str) -> KubeconfigFile {
    let document = if yaml.is_empty() { Value::Null } else { serde_yaml_ng::from_str(yaml).unwrap() };
    KubeconfigFile { path: PathBuf::from(path), exists: !yaml.is_empty(), document }
}

fn single(yaml: &str) -> KubeconfigSet {
    KubeconfigSet { files: vec![file("/k/config", yaml)], explicit: false }
}

fn yaml(text: &str) -> Value {
    serde_yaml_ng::from_str(text).unwrap()
}

/// Applies `edit` to `set` and returns the changed files' indices.
fn apply(set: &mut KubeconfigSet, edit: &edit::Edit) -> Vec<usize> {
    let merged = set.merged().unwrap();
    set.apply(&merged, edit).into_iter().collect()
}

/// The server of the current context after a move, and the workspace it names.
fn current_server(set: &KubeconfigSet) -> String {
    let merged = set.merged().unwrap();
    let context = edit::active_context(&merged, None).unwrap();
    edit::server_of(&merged, context).unwrap().to_string()
}

/// `kubectl ws <somewhere>` as the use command does it: enter from the active context.
fn enter(set: &mut KubeconfigSet, server: &str) {
    let merged = set.merged().unwrap();
    let context = edit::active_context(&merged, None).unwrap().to_string();
    let edit = edit::enter(&merged, &context, server).unwrap();
    apply(set, &edit);
}

fn swap(set: &mut KubeconfigSet) -> Result<(), EditError> {
    let merged = set.merged().unwrap();
    let context = edit::active_context(&merged, None).unwrap().to_string();
    let edit = edit::swap_previous(&merged, &context)?;
    apply(set, &edit);
    Ok(())
}

#[test]
fn sources_follow_kubectl_precedence() {
    let home = Some(Path::new("/home/a"));
    let paths = |sources: Option<Sources>| sources.map(|s| (s.paths, s.explicit));
    let p = |text: &str| PathBuf::from(text);
    // (--kubeconfig, KUBECONFIG, expected paths, explicit)
    let cases = [
        (Some("/x"), Some("/a:/b"), vec![p("/x")], true),
        (None, Some("/a:/b"), vec![p("/a"), p("/b")], false),
        (None, Some("/a::/b:/a"), vec![p("/a"), p("/b")], false),
        (None, Some(""), vec![p("/home/a/.kube/config")], false),
        (None, None, vec![p("/home/a/.kube/config")], false),
        (None, Some("/only"), vec![p("/only")], false),
    ];
    for (flag, env, expected, explicit) in cases {
        let sources = Sources::new(flag.map(Path::new), env.map(OsStr::new), home);
        assert_eq!(paths(sources), Some((expected, explicit)), "{flag:?} {env:?}");
    }
    assert_eq!(Sources::new(None, None, None), None);
}

#[test]
fn first_definition_wins_when_merging() {
    let first = "current-context: ''\ncontexts:\n- name: a\n  context: {cluster: one}\n";
    let second = "current-context: b\ncontexts:\n- name: a\n  context: {cluster: two}\n- name: b\n  context: {cluster: two}\nclusters:\n- name: two\n  cluster: {server: 'https://two'}\n";
    let set = KubeconfigSet { files: vec![file("/1", first), file("/2", second)], explicit: false };
    let merged = set.merged().unwrap();
    assert_eq!(merged.current_context.as_deref(), Some("b"));
    assert_eq!(merged.contexts["a"], Entry { body: yaml("{cluster: one}"), file: 0 });
    assert_eq!(merged.contexts["b"].file, 1);
    assert_eq!(merged.clusters["two"].file, 1);
}

#[test]
fn malformed_documents_are_errors() {
    let cases = [
        ("- a\n- b\n", "not a mapping"),
        ("contexts: {}\n", "contexts is not a list"),
        ("clusters:\n- cluster: {}\n", "has no name"),
    ];
    for (text, problem) in cases {
        let error = single(text).merged().unwrap_err().to_string();
        assert!(error.contains(problem) && error.contains("/k/config"), "{text}: {error}");
    }
}

#[test]
fn entering_copies_the_context_and_leaves_everything_else_alone() {
    let mut set = single(ADMIN);
    let before = set.files[0].document.clone();
    enter(&mut set, "https://h:6443/clusters/root:org");

    let document = &set.files[0].document;
    assert_eq!(document["current-context"], "workspace.kcp.io/current");
    let merged = set.merged().unwrap();
    assert_eq!(
        merged.contexts[CURRENT_KEY].body,
        yaml("{cluster: workspace.kcp.io/current, user: admin, namespace: team}")
    );
    // The old context is the previous one, still pointing at the user's own cluster.
    assert_eq!(merged.contexts[PREVIOUS_KEY].body, yaml("{cluster: root, user: admin, namespace: team}"));
    assert_eq!(
        merged.clusters[CURRENT_KEY].body,
        yaml("{server: 'https://h:6443/clusters/root:org', certificate-authority-data: Q0E=, tls-server-name: atoll}")
    );
    assert!(!merged.clusters.contains_key(PREVIOUS_KEY));

    // Round trip through text: everything the plugin does not own is as it was.
    let text = serde_yaml_ng::to_string(document).unwrap();
    let reread: Value = serde_yaml_ng::from_str(&text).unwrap();
    for key in ["users", "preferences", "apiVersion", "kind"] {
        assert_eq!(reread[key], before[key], "{key}");
    }
    let untouched = |list: &str| -> Vec<Value> {
        let items = reread[list].as_sequence().unwrap().iter();
        items.filter(|item| !item["name"].as_str().unwrap().starts_with("workspace.kcp.io/")).cloned().collect()
    };
    assert_eq!(untouched("contexts"), before["contexts"].as_sequence().unwrap().clone());
    assert_eq!(untouched("clusters"), before["clusters"].as_sequence().unwrap().clone());
}

#[test]
fn moves_and_previous_walk_like_kcp() {
    let mut set = single(ADMIN);
    assert_eq!(swap(&mut set), Err(EditError::NoPrevious), "no previous workspace before the first move");

    enter(&mut set, "https://h:6443/clusters/root:org");
    enter(&mut set, "https://h:6443/clusters/root:org:team");
    let merged = set.merged().unwrap();
    // The second move saved the first move's cluster as the previous one.
    assert_eq!(merged.contexts[PREVIOUS_KEY].body["cluster"], PREVIOUS_KEY);
    assert_eq!(merged.clusters[PREVIOUS_KEY].body["server"], "https://h:6443/clusters/root:org");
    assert_eq!(merged.clusters[PREVIOUS_KEY].body["tls-server-name"], "atoll");
    assert_eq!(current_server(&set), "https://h:6443/clusters/root:org:team");

    // `-` goes back and forth.
    let servers: Vec<String> = (0..3)
        .map(|_| {
            swap(&mut set).unwrap();
            current_server(&set)
        })
        .collect();
    assert_eq!(
        servers,
        [
            "https://h:6443/clusters/root:org",
            "https://h:6443/clusters/root:org:team",
            "https://h:6443/clusters/root:org"
        ]
    );

    // The user's own context and cluster never changed.
    let merged = set.merged().unwrap();
    assert_eq!(merged.contexts["admin"].body, yaml("{cluster: root, user: admin, namespace: team}"));
    assert_eq!(merged.clusters["root"].body["server"], "https://h:6443/clusters/root");
}

#[test]
fn previous_may_be_a_context_of_the_user() {
    // After one move, `-` returns to the user's own context, which points at its own cluster.
    let mut set = single(ADMIN);
    enter(&mut set, "https://h:6443/clusters/root:org");
    swap(&mut set).unwrap();
    let merged = set.merged().unwrap();
    assert_eq!(merged.contexts[CURRENT_KEY].body["cluster"], "root");
    assert_eq!(current_server(&set), "https://h:6443/clusters/root");
    // The workspace left behind is kept under previous, with its own cluster copy.
    assert_eq!(merged.contexts[PREVIOUS_KEY].body["cluster"], PREVIOUS_KEY);
    assert_eq!(merged.clusters[PREVIOUS_KEY].body["server"], "https://h:6443/clusters/root:org");
    swap(&mut set).unwrap();
    assert_eq!(current_server(&set), "https://h:6443/clusters/root:org");
}

#[test]
fn the_context_flag_picks_the_context_to_move_from() {
    let mut set = single(ADMIN);
    let merged = set.merged().unwrap();
    let context = edit::active_context(&merged, Some("other")).unwrap();
    let edit = edit::enter(&merged, context, "https://other:443/clusters/root").unwrap();
    apply(&mut set, &edit);
    let merged = set.merged().unwrap();
    assert_eq!(merged.contexts[CURRENT_KEY].body["user"], "bob");
    assert_eq!(merged.contexts[PREVIOUS_KEY].body, yaml("{cluster: elsewhere, user: bob}"));
}

#[test]
fn broken_contexts_are_reported() {
    let merged = single(ADMIN).merged().unwrap();
    assert_eq!(edit::enter(&merged, "nope", "https://x").unwrap_err(), EditError::ContextNotFound("nope".into()));
    let dangling = single("contexts:\n- name: a\n  context: {cluster: gone}\n").merged().unwrap();
    assert_eq!(edit::server_of(&dangling, "a").unwrap_err(), EditError::ClusterNotFound("gone".into()));
    assert_eq!(edit::active_context(&Merged::default(), None).unwrap_err(), EditError::NoCurrentContext);
    assert_eq!(
        EditError::ContextNotFound("nope".into()).to_string(),
        r#"current "nope" context not found"#,
        "kcp's wording"
    );
}

#[test]
fn entries_are_written_where_they_came_from() {
    // File 0 has no current context and only a user; file 1 holds the admin context and
    // the current context; file 2 does not exist.
    let users_only = "users:\n- name: admin\n  user: {token: t}\n";
    let mut set =
        KubeconfigSet { files: vec![file("/0", users_only), file("/1", ADMIN), file("/2", "")], explicit: false };
    assert_eq!(set.default_file(), 0, "the first existing file takes new entries");
    assert_eq!(set.current_context_file(), 1, "the file that has a current context keeps it");

    let merged = set.merged().unwrap();
    let first = edit::enter(&merged, "admin", "https://h:6443/clusters/root:org").unwrap();
    assert_eq!(apply(&mut set, &first), [0, 1]);
    assert_eq!(set.files[1].document["current-context"], CURRENT_KEY);
    assert!(set.files[0].document.get("current-context").is_none());
    assert_eq!(set.files[0].document["contexts"].as_sequence().unwrap().len(), 2, "current and previous are new");
    assert_eq!(set.files[0].document["users"], yaml(users_only)["users"]);

    // A context that already exists in a later file is updated there, not shadowed.
    let mut later = KubeconfigSet {
        files: vec![
            file("/0", users_only),
            file("/1", &format!("{ADMIN}- name: {PREVIOUS_KEY}\n  context: {{cluster: x}}\n")),
        ],
        explicit: false,
    };
    let merged = later.merged().unwrap();
    let edit = edit::enter(&merged, "admin", "https://h:6443/clusters/root:org").unwrap();
    apply(&mut later, &edit);
    let merged = later.merged().unwrap();
    assert_eq!(
        merged.contexts[PREVIOUS_KEY],
        Entry { body: yaml("{cluster: root, user: admin, namespace: team}"), file: 1 }
    );
    assert_eq!(merged.contexts[CURRENT_KEY].file, 0);
}

#[test]
fn a_missing_file_becomes_a_new_kubeconfig() {
    let mut set = KubeconfigSet { files: vec![file("/new", "")], explicit: true };
    let edit = edit::Edit {
        current_context: "c".into(),
        contexts: vec![("c".into(), yaml("{cluster: k}"))],
        clusters: vec![("k".into(), yaml("{server: 'https://k'}"))],
    };
    assert_eq!(apply(&mut set, &edit), [0]);
    assert_eq!(
        set.files[0].document,
        yaml("{apiVersion: v1, kind: Config, current-context: c, contexts: [{name: c, context: {cluster: k}}], clusters: [{name: k, cluster: {server: 'https://k'}}]}")
    );
}

#[test]
fn files_round_trip_through_disk() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("config");
    std::fs::write(&path, ADMIN).unwrap();
    let sources = Sources { paths: vec![path.clone()], explicit: true };
    let mut set = files::load(&sources).unwrap();
    let merged = set.merged().unwrap();
    let edit = edit::enter(&merged, "admin", "https://h:6443/clusters/root:org").unwrap();
    let changed = set.apply(&merged, &edit);
    files::save(&set, &changed).unwrap();

    let reread = files::load(&sources).unwrap();
    assert_eq!(reread.files[0].document, set.files[0].document);
    assert_eq!(current_server(&reread), "https://h:6443/clusters/root:org");
    // kube reads what was written, credentials included.
    let kube_view = kube::config::Kubeconfig::read_from(&path).unwrap();
    assert_eq!(kube_view.current_context.as_deref(), Some(CURRENT_KEY));
    assert_eq!(kube_view.auth_infos.len(), 2);

    let missing = Sources { paths: vec![dir.path().join("absent")], explicit: true };
    assert!(files::load(&missing).unwrap_err().to_string().contains("no such file"));
    let optional = Sources { paths: vec![dir.path().join("absent")], explicit: false };
    assert!(!files::load(&optional).unwrap().files[0].exists);
}
