//! kubectl's connection flags (`--server`, `--token`, `--cluster`, `--user`,
//! `--certificate-authority`, …) applied to the credentials of one run, as client-go's
//! `ConfigOverrides` apply them for kubectl and for kcp's plugin (genericclioptions
//! `ConfigFlags`).
//!
//! The flags change whom and where requests go to, never the kubeconfig files: they are
//! folded into a context of their own, [`FLAGS_CONTEXT`], added to the in-memory
//! kubeconfig that the client is built from. Like client-go, a flag replaces the one field
//! it names and keeps the rest of the selected cluster and user (so `--token` on a
//! kubeconfig with a client certificate sends both, and the server picks the certificate).
//! One difference: a `--client-certificate`/`--client-key`/`--certificate-authority`
//! file replaces embedded `…-data` too, where client-go would keep using the embedded data.

use std::path::PathBuf;

use kube::config::{AuthInfo, Cluster, Context, Kubeconfig, NamedAuthInfo, NamedCluster, NamedContext};

/// The name of the context, cluster and user that carry the flags' result.
pub const FLAGS_CONTEXT: &str = "kubectl-ws/flags";

/// The kubectl flags that override the kubeconfig for this run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Overrides {
    /// `--cluster`: the kubeconfig cluster to use instead of the context's.
    pub cluster: Option<String>,
    /// `--user`: the kubeconfig user to use instead of the context's.
    pub user: Option<String>,
    /// `--server`: the server URL.
    pub server: Option<String>,
    /// `--token`: a bearer token.
    pub token: Option<String>,
    /// `--insecure-skip-tls-verify`.
    pub insecure_skip_tls_verify: Option<bool>,
    /// `--certificate-authority`: a PEM file of CAs to trust.
    pub certificate_authority: Option<PathBuf>,
    /// `--client-certificate`: a PEM client certificate file.
    pub client_certificate: Option<PathBuf>,
    /// `--client-key`: the PEM key file of the client certificate.
    pub client_key: Option<PathBuf>,
}

/// A flag names something the kubeconfig does not define.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OverrideError {
    /// `--context` (or current-context) names no context.
    #[error("context {0:?} does not exist")]
    ContextNotFound(String),
    /// `--cluster` names no cluster.
    #[error("cluster {0:?} does not exist")]
    ClusterNotFound(String),
    /// `--user` names no user.
    #[error("auth info {0:?} does not exist")]
    UserNotFound(String),
}

/// Adds [`FLAGS_CONTEXT`] to `kubeconfig`: context `context` (none when the kubeconfig has
/// no context, e.g. with `--server` alone) with `overrides` applied. A cluster or user the
/// context names but the kubeconfig lacks counts as empty, as client-go treats it; one
/// named by a flag must exist.
pub fn apply(
    mut kubeconfig: Kubeconfig,
    context: Option<&str>,
    overrides: &Overrides,
) -> Result<Kubeconfig, OverrideError> {
    let base = match context {
        Some(name) => {
            let named = kubeconfig.contexts.iter().find(|c| c.name == name);
            named.ok_or_else(|| OverrideError::ContextNotFound(name.to_string()))?.context.clone().unwrap_or_default()
        }
        None => Context::default(),
    };
    let cluster = match &overrides.cluster {
        Some(name) => find_cluster(&kubeconfig, name).ok_or_else(|| OverrideError::ClusterNotFound(name.clone()))?,
        None => find_cluster(&kubeconfig, &base.cluster).unwrap_or_default(),
    };
    let user = match (&overrides.user, &base.user) {
        (Some(name), _) => find_user(&kubeconfig, name).ok_or_else(|| OverrideError::UserNotFound(name.clone()))?,
        (None, Some(name)) => find_user(&kubeconfig, name).unwrap_or_default(),
        (None, None) => AuthInfo::default(),
    };
    kubeconfig.clusters.retain(|c| c.name != FLAGS_CONTEXT);
    kubeconfig.auth_infos.retain(|u| u.name != FLAGS_CONTEXT);
    kubeconfig.contexts.retain(|c| c.name != FLAGS_CONTEXT);
    kubeconfig.clusters.push(NamedCluster {
        name: FLAGS_CONTEXT.into(),
        cluster: Some(override_cluster(cluster, overrides)),
        ..NamedCluster::default()
    });
    kubeconfig.auth_infos.push(NamedAuthInfo {
        name: FLAGS_CONTEXT.into(),
        auth_info: Some(override_user(user, overrides)),
        ..NamedAuthInfo::default()
    });
    let context = Context { cluster: FLAGS_CONTEXT.into(), user: Some(FLAGS_CONTEXT.into()), ..base };
    kubeconfig.contexts.push(NamedContext {
        name: FLAGS_CONTEXT.into(),
        context: Some(context),
        ..NamedContext::default()
    });
    Ok(kubeconfig)
}

fn find_cluster(kubeconfig: &Kubeconfig, name: &str) -> Option<Cluster> {
    kubeconfig.clusters.iter().find(|c| c.name == name).map(|c| c.cluster.clone().unwrap_or_default())
}

fn find_user(kubeconfig: &Kubeconfig, name: &str) -> Option<AuthInfo> {
    kubeconfig.auth_infos.iter().find(|u| u.name == name).map(|u| u.auth_info.clone().unwrap_or_default())
}

fn override_cluster(mut cluster: Cluster, overrides: &Overrides) -> Cluster {
    if let Some(server) = &overrides.server {
        cluster.server = Some(server.clone());
    }
    // client-go: either TLS flag replaces the whole trust setting, so that
    // `--insecure-skip-tls-verify` does not clash with a CA in the file, and a CA flag
    // is not shadowed by embedded CA data.
    if overrides.insecure_skip_tls_verify.is_some() || overrides.certificate_authority.is_some() {
        cluster.insecure_skip_tls_verify = overrides.insecure_skip_tls_verify;
        cluster.certificate_authority = overrides.certificate_authority.as_ref().map(|p| p.display().to_string());
        cluster.certificate_authority_data = None;
    }
    cluster
}

fn override_user(mut user: AuthInfo, overrides: &Overrides) -> AuthInfo {
    if let Some(token) = &overrides.token {
        user.token = Some(token.clone().into());
        user.token_file = None;
    }
    if let Some(path) = &overrides.client_certificate {
        user.client_certificate = Some(path.display().to_string());
        user.client_certificate_data = None;
    }
    if let Some(path) = &overrides.client_key {
        user.client_key = Some(path.display().to_string());
        user.client_key_data = None;
    }
    user
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The user's token, read through serde: kube keeps it in a `secrecy` type, a crate
    /// this one does not depend on.
    fn expose(user: &AuthInfo) -> Option<String> {
        let value = serde_json::to_value(user).expect("AuthInfo serializes");
        value.get("token").and_then(|t| t.as_str()).map(str::to_string)
    }

    const KUBECONFIG: &str = r#"
apiVersion: v1
kind: Config
current-context: admin
clusters:
- name: atoll
  cluster:
    server: https://127.0.0.1:6440/clusters/root
    certificate-authority-data: Q0E=
- name: other
  cluster:
    server: https://other:6443
users:
- name: admin
  user:
    client-certificate-data: Q0VSVA==
    client-key-data: S0VZ
- name: alice
  user:
    token: alice-token
contexts:
- name: admin
  context: {cluster: atoll, user: admin, namespace: team}
- name: dangling
  context: {cluster: gone, user: nobody}
"#;

    fn kubeconfig() -> Kubeconfig {
        serde_yaml_ng::from_str(KUBECONFIG).expect("the fixture parses")
    }

    /// The flags' context, cluster and user after `apply`.
    fn applied(context: Option<&str>, overrides: &Overrides) -> (Context, Cluster, AuthInfo) {
        let config = apply(kubeconfig(), context, overrides).expect("apply");
        let context = config.contexts.iter().find(|c| c.name == FLAGS_CONTEXT).unwrap().context.clone().unwrap();
        assert_eq!((context.cluster.as_str(), context.user.as_deref()), (FLAGS_CONTEXT, Some(FLAGS_CONTEXT)));
        (context, find_cluster(&config, FLAGS_CONTEXT).unwrap(), find_user(&config, FLAGS_CONTEXT).unwrap())
    }

    #[test]
    fn without_flags_the_context_is_copied() {
        let (context, cluster, user) = applied(Some("admin"), &Overrides::default());
        assert_eq!(context.namespace.as_deref(), Some("team"));
        assert_eq!(cluster.server.as_deref(), Some("https://127.0.0.1:6440/clusters/root"));
        assert_eq!(cluster.certificate_authority_data.as_deref(), Some("Q0E="));
        assert_eq!(user.client_certificate_data.as_deref(), Some("Q0VSVA=="));
        assert_eq!(expose(&user), None);
    }

    #[test]
    fn each_flag_replaces_its_field() {
        type Check = fn(&Cluster, &AuthInfo);
        // (flags, what they change)
        let cases: [(Overrides, Check); 7] = [
            (Overrides { server: Some("https://s:1/clusters/root:org".into()), ..Overrides::default() }, |c, _| {
                assert_eq!(c.server.as_deref(), Some("https://s:1/clusters/root:org"));
                assert_eq!(c.certificate_authority_data.as_deref(), Some("Q0E="), "the CA stays");
            }),
            (Overrides { token: Some("t".into()), ..Overrides::default() }, |_, u| {
                assert_eq!(expose(u).as_deref(), Some("t"));
                assert_eq!(u.client_certificate_data.as_deref(), Some("Q0VSVA=="), "as in client-go, the cert stays");
            }),
            (Overrides { cluster: Some("other".into()), ..Overrides::default() }, |c, _| {
                assert_eq!(c.server.as_deref(), Some("https://other:6443"));
                assert_eq!(c.certificate_authority_data, None);
            }),
            (Overrides { user: Some("alice".into()), ..Overrides::default() }, |_, u| {
                assert_eq!(expose(u).as_deref(), Some("alice-token"));
                assert_eq!(u.client_certificate_data, None);
            }),
            (Overrides { insecure_skip_tls_verify: Some(true), ..Overrides::default() }, |c, _| {
                assert_eq!(c.insecure_skip_tls_verify, Some(true));
                assert_eq!(c.certificate_authority_data, None, "no CA clashes with insecure");
            }),
            (Overrides { certificate_authority: Some("/pki/ca.crt".into()), ..Overrides::default() }, |c, _| {
                assert_eq!(c.certificate_authority.as_deref(), Some("/pki/ca.crt"));
                assert_eq!(c.certificate_authority_data, None, "the file is not shadowed by embedded data");
            }),
            (
                Overrides {
                    client_certificate: Some("/u.crt".into()),
                    client_key: Some("/u.key".into()),
                    ..Overrides::default()
                },
                |_, u| {
                    assert_eq!(
                        (u.client_certificate.as_deref(), u.client_key.as_deref()),
                        (Some("/u.crt"), Some("/u.key"))
                    );
                    assert!(u.client_certificate_data.is_none() && u.client_key_data.is_none(), "the files win");
                },
            ),
        ];
        for (overrides, check) in cases {
            let (_, cluster, user) = applied(Some("admin"), &overrides);
            check(&cluster, &user);
        }
    }

    #[test]
    fn server_and_token_need_no_context() {
        let overrides = Overrides { server: Some("https://s".into()), token: Some("t".into()), ..Overrides::default() };
        let (_, cluster, user) = applied(None, &overrides);
        assert_eq!(cluster.server.as_deref(), Some("https://s"));
        assert_eq!(expose(&user).as_deref(), Some("t"));
        // A context whose cluster and user are missing is empty, as in client-go.
        let (_, cluster, _) = applied(Some("dangling"), &overrides);
        assert_eq!(cluster.server.as_deref(), Some("https://s"));
    }

    #[test]
    fn names_given_by_flags_must_exist() {
        let missing =
            |context: Option<&str>, overrides: Overrides| apply(kubeconfig(), context, &overrides).unwrap_err();
        assert_eq!(missing(Some("nope"), Overrides::default()), OverrideError::ContextNotFound("nope".into()));
        let cluster = Overrides { cluster: Some("nope".into()), ..Overrides::default() };
        assert_eq!(missing(Some("admin"), cluster), OverrideError::ClusterNotFound("nope".into()));
        let user = Overrides { user: Some("nope".into()), ..Overrides::default() };
        assert_eq!(missing(Some("admin"), user), OverrideError::UserNotFound("nope".into()));
    }

    #[test]
    fn applying_twice_keeps_one_flags_context() {
        let once = apply(kubeconfig(), Some("admin"), &Overrides::default()).unwrap();
        let twice = apply(once, Some("admin"), &Overrides::default()).unwrap();
        assert_eq!(twice.contexts.iter().filter(|c| c.name == FLAGS_CONTEXT).count(), 1);
        assert_eq!(twice.clusters.iter().filter(|c| c.name == FLAGS_CONTEXT).count(), 1);
    }
}
