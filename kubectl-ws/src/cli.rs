//! The command line, as kcp's plugin spells it, and the dispatch to the verbs.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::commands::create::CreateOptions;
use crate::commands::{self, ConfigFlags, Session};
use crate::kubeconfig::overrides::Overrides;

/// Manages kcp workspaces.
///
/// `kubectl ws <workspace>` is short for `kubectl ws use <workspace>`: `..` is the parent,
/// `-` the previous workspace, `~` home, `.` the current one, `:root:org` an absolute
/// path and `org:team` a path below the current workspace. Without an argument it goes home.
#[derive(Debug, Parser)]
#[command(name = "kubectl-ws", bin_name = "kubectl ws")]
pub struct Cli {
    #[command(flatten)]
    config: ConfigArgs,
    #[command(subcommand)]
    command: Option<Command>,
    /// The workspace to use (shorthand for `use <workspace>`).
    #[arg(value_name = "WORKSPACE")]
    workspace: Option<String>,
    /// Print only the workspace path, e.g. for a shell prompt.
    #[arg(long)]
    short: bool,
}

/// The kubectl flags the plugin honours: kubectl's kubeconfig flags, as kcp's plugin takes
/// them (genericclioptions `ConfigFlags`). The connection flags change where this run's
/// requests go and with which credentials; the kubeconfig it edits stays as written.
#[derive(Debug, Args)]
struct ConfigArgs {
    /// Path to the kubeconfig file to use (instead of KUBECONFIG or ~/.kube/config).
    #[arg(long, global = true, value_name = "PATH")]
    kubeconfig: Option<PathBuf>,
    /// The kubeconfig context to use.
    #[arg(long, global = true, value_name = "NAME")]
    context: Option<String>,
    /// The kubeconfig cluster to use.
    #[arg(long, global = true, value_name = "NAME")]
    cluster: Option<String>,
    /// The kubeconfig user to use.
    #[arg(long, global = true, value_name = "NAME")]
    user: Option<String>,
    /// The address and port of the server, with `/clusters/<path>` for a workspace.
    #[arg(long, short = 's', global = true, value_name = "URL")]
    server: Option<String>,
    /// Bearer token for authentication to the server.
    #[arg(long, global = true, value_name = "TOKEN")]
    token: Option<String>,
    /// Do not check the server's certificate (insecure).
    #[arg(long, global = true, value_name = "BOOL", num_args = 0..=1, require_equals = true, default_missing_value = "true")]
    insecure_skip_tls_verify: Option<bool>,
    /// Path to a CA certificate file to trust.
    #[arg(long, global = true, value_name = "PATH")]
    certificate_authority: Option<PathBuf>,
    /// Path to a client certificate file for TLS.
    #[arg(long, global = true, value_name = "PATH")]
    client_certificate: Option<PathBuf>,
    /// Path to a client key file for TLS.
    #[arg(long, global = true, value_name = "PATH")]
    client_key: Option<PathBuf>,
    /// kubectl's log level; accepted so that kubectl habits do not fail, and ignored.
    #[arg(short = 'v', long = "v", global = true, value_name = "LEVEL", hide = true)]
    verbosity: Option<String>,
}

impl ConfigArgs {
    fn into_flags(self) -> ConfigFlags {
        let overrides = Overrides {
            cluster: self.cluster,
            user: self.user,
            server: self.server,
            token: self.token,
            insecure_skip_tls_verify: self.insecure_skip_tls_verify,
            certificate_authority: self.certificate_authority,
            client_certificate: self.client_certificate,
            client_key: self.client_key,
        };
        ConfigFlags { kubeconfig: self.kubeconfig, context: self.context, overrides }
    }
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Use the given workspace: `..` parent, `-` previous, `~` home, `.` current,
    /// `:root:absolute:path`, or `relative:path`.
    #[command(visible_alias = "cd")]
    Use {
        /// The workspace to switch to.
        #[arg(value_name = "WORKSPACE")]
        workspace: String,
        /// Print only the workspace path.
        #[arg(long)]
        short: bool,
    },
    /// Print the current workspace. Same as `kubectl ws .`.
    Current {
        /// Print only the workspace path.
        #[arg(long)]
        short: bool,
    },
    /// Create a workspace in the current one and wait until it is ready.
    Create {
        /// The name of the new workspace.
        name: String,
        /// A workspace type (`name` or `path:name`); the default depends on the parent.
        #[arg(long = "type", value_name = "TYPE")]
        workspace_type: Option<String>,
        /// Enter the workspace once it is ready.
        #[arg(long)]
        enter: bool,
        /// Succeed if the workspace already exists (requires no type or an absolute one).
        #[arg(long)]
        ignore_existing: bool,
    },
    /// Print the tree of workspaces under the current one.
    Tree {
        /// Show full workspace paths.
        #[arg(long, short = 'f')]
        full: bool,
    },
}

impl Cli {
    /// Runs the command line.
    pub async fn run(self) -> anyhow::Result<()> {
        let flags = self.config.into_flags();
        let mut session = Session::load(&flags)?;
        match self.command {
            None => {
                let workspace = self.workspace.unwrap_or_default();
                commands::use_workspace::run(&mut session, &workspace, self.short).await
            }
            Some(Command::Use { workspace, short }) => {
                commands::use_workspace::run(&mut session, &workspace, short || self.short).await
            }
            Some(Command::Current { short }) => {
                commands::current::run(&session, short || self.short);
                Ok(())
            }
            Some(Command::Create { name, workspace_type, enter, ignore_existing }) => {
                let options = CreateOptions { name, workspace_type, enter, ignore_existing };
                commands::create::run(&mut session, &options).await
            }
            Some(Command::Tree { full }) => commands::tree::run(&mut session, full).await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Cli {
        let argv = std::iter::once("kubectl-ws").chain(args.iter().copied());
        Cli::try_parse_from(argv).unwrap_or_else(|e| panic!("{args:?}: {e}"))
    }

    #[test]
    fn shorthand_and_subcommands_parse() {
        for target in ["-", "..", ".", "~", ":root:org", "org:team", "../.."] {
            let cli = parse(&[target]);
            assert!(cli.command.is_none(), "{target}");
            assert_eq!(cli.workspace.as_deref(), Some(target));
        }
        assert!(matches!(parse(&["use", "-"]).command, Some(Command::Use { workspace, .. }) if workspace == "-"));
        assert!(matches!(parse(&["cd", ".."]).command, Some(Command::Use { workspace, .. }) if workspace == ".."));
        assert!(matches!(parse(&["tree"]).command, Some(Command::Tree { full: false })));
        assert!(matches!(parse(&["current", "--short"]).command, Some(Command::Current { short: true })));
        let create = parse(&["create", "org", "--type", "root:universal", "--enter", "--context", "c"]);
        assert!(matches!(
            create.command,
            Some(Command::Create { ref name, workspace_type: Some(ref t), enter: true, ignore_existing: false })
                if name == "org" && t == "root:universal"
        ));
        assert_eq!(create.config.context.as_deref(), Some("c"));
        let global = parse(&["--kubeconfig", "/k", "tree"]);
        assert_eq!(global.config.kubeconfig, Some(PathBuf::from("/k")));
        assert!(matches!(global.command, Some(Command::Tree { .. })), "flags before the verb");
        let context_first = parse(&["--context=c", "current"]);
        assert!(matches!(context_first.command, Some(Command::Current { .. })), "{context_first:?}");
        assert_eq!(context_first.config.context.as_deref(), Some("c"));
        let shorthand_flags = parse(&["--context", "c", "--short", ".."]);
        assert!(shorthand_flags.command.is_none() && shorthand_flags.short);
        assert_eq!(shorthand_flags.workspace.as_deref(), Some(".."));
        assert!(parse(&[]).workspace.is_none());
    }

    #[test]
    fn kubectl_connection_flags_parse_anywhere() {
        let cli = parse(&[
            "--server=https://h:6440/clusters/root",
            "--token",
            "t",
            "tree",
            "--cluster",
            "c",
            "--user=u",
            "--insecure-skip-tls-verify",
            "--certificate-authority",
            "/ca.crt",
            "--client-certificate=/u.crt",
            "--client-key",
            "/u.key",
            "-v",
            "6",
        ]);
        assert!(matches!(cli.command, Some(Command::Tree { .. })));
        let flags = cli.config.into_flags();
        let expected = Overrides {
            cluster: Some("c".into()),
            user: Some("u".into()),
            server: Some("https://h:6440/clusters/root".into()),
            token: Some("t".into()),
            insecure_skip_tls_verify: Some(true),
            certificate_authority: Some("/ca.crt".into()),
            client_certificate: Some("/u.crt".into()),
            client_key: Some("/u.key".into()),
        };
        assert_eq!(flags.overrides, expected);
        // kubectl's spellings of a false flag and of the level, and `-s` for --server.
        let cli = parse(&["--insecure-skip-tls-verify=false", "--v=4", "-s", "https://h", ".."]);
        assert_eq!(cli.workspace.as_deref(), Some(".."));
        let flags = cli.config.into_flags();
        assert_eq!(flags.overrides.insecure_skip_tls_verify, Some(false));
        assert_eq!(flags.overrides.server.as_deref(), Some("https://h"));
    }
}
