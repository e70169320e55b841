//! `atoll-agent` processes for end-to-end tests, and what placement tests wait on.

use crate::kubectl::Kubectl;
use crate::process::OwnedChild;
use anyhow::Context;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// kcp's label prefix of the SyncTargets an object is scheduled to.
pub const STATE: &str = "state.workload.kcp.io/";
/// kcp's annotation prefix marking a SyncTarget's copy for deletion.
pub const DELETION: &str = "deletion.internal.workload.kcp.io/";

/// A running agent; dropping it kills the process.
pub struct AgentProcess {
    child: Option<OwnedChild>,
    log: PathBuf,
    args: Vec<String>,
}

impl AgentProcess {
    /// Starts `atoll-agent --hub-kubeconfig hub --sync-target name --member-kubeconfig
    /// member` plus `extra`, logging to `log`.
    pub fn start(hub: &Path, name: &str, member: &Path, extra: &[&str], log: &Path) -> anyhow::Result<AgentProcess> {
        Self::start_as("--sync-target", hub, name, member, extra, log)
    }

    /// Starts `atoll-agent` as the OCM registration agent of ManagedCluster `name`.
    pub fn start_managed_cluster(hub: &Path, name: &str, member: &Path, log: &Path) -> anyhow::Result<AgentProcess> {
        Self::start_as("--managed-cluster", hub, name, member, &[], log)
    }

    /// Starts `atoll-agent` as the member agent of Fleet MemberCluster `name`, plus `extra`.
    pub fn start_member_cluster(
        hub: &Path,
        name: &str,
        member: &Path,
        extra: &[&str],
        log: &Path,
    ) -> anyhow::Result<AgentProcess> {
        Self::start_as("--member-cluster", hub, name, member, extra, log)
    }

    fn start_as(
        role: &str,
        hub: &Path,
        name: &str,
        member: &Path,
        extra: &[&str],
        log: &Path,
    ) -> anyhow::Result<AgentProcess> {
        let mut args: Vec<String> = vec![
            "--hub-kubeconfig".into(),
            hub.display().to_string(),
            role.into(),
            name.into(),
            "--member-kubeconfig".into(),
            member.display().to_string(),
        ];
        args.extend(extra.iter().map(|a| a.to_string()));
        let mut agent = AgentProcess { child: None, log: log.to_path_buf(), args };
        agent.restart()?;
        Ok(agent)
    }

    /// Starts the process again with the same arguments (after [`Self::kill9`]).
    pub fn restart(&mut self) -> anyhow::Result<()> {
        let log =
            std::fs::OpenOptions::new().create(true).append(true).open(&self.log).context("open the agent log")?;
        let mut command = Command::new(crate::binary("atoll-agent"));
        command
            .args(&self.args)
            .env("RUST_LOG", "info,agent=debug,kube=warn")
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log);
        self.child = Some(OwnedChild::spawn(&mut command, "atoll-agent")?);
        Ok(())
    }

    /// The process id while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(OwnedChild::pid)
    }

    /// Kills the agent (SIGKILL).
    pub fn kill9(&mut self) {
        if let Some(mut child) = self.child.take() {
            child.kill9();
        }
    }

    /// The end of its log.
    pub fn log_tail(&self, lines: usize) -> String {
        crate::process::log_tail(&self.log, lines)
    }
}

/// A kcp Location `name` (labelled `cloud: <cloud>`) over the SyncTargets labelled the same.
pub fn location(name: &str, cloud: &str) -> String {
    format!(
        r#"apiVersion: scheduling.kcp.io/v1alpha1
kind: Location
metadata: {{name: {name}, labels: {{cloud: {cloud}}}}}
spec:
  resource: {{group: workload.kcp.io, version: v1alpha1, resource: synctargets}}
  instanceSelector: {{matchLabels: {{cloud: {cloud}}}}}
"#
    )
}

/// A SyncTarget `name` labelled `cloud: <cloud>`, with `spec` (flow-style YAML).
pub fn sync_target(name: &str, cloud: &str, spec: &str) -> String {
    format!(
        r#"apiVersion: workload.kcp.io/v1alpha1
kind: SyncTarget
metadata: {{name: {name}, labels: {{cloud: {cloud}}}}}
spec: {spec}
"#
    )
}

/// How long placement tests wait for the controllers and agents: a bug bound.
pub const WAIT: Duration = Duration::from_secs(60);

/// Polls `kubectl get <args> -o json` until `check` accepts it; returns it.
pub fn wait_json(kubectl: impl Fn() -> Kubectl, args: &[&str], what: &str, check: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + WAIT;
    loop {
        let output = kubectl().arg("get").args(args).args(["-o", "json"]).run();
        let last = match output.json() {
            Ok(object) if check(&object) => return object,
            Ok(object) => object.to_string(),
            Err(_) => format!("{}{}", output.stdout, output.stderr),
        };
        assert!(Instant::now() < deadline, "{what} not within {WAIT:?}; last: {last}");
        std::thread::sleep(Duration::from_millis(250));
    }
}

/// The SyncTarget keys an object is scheduled to, with the label's value.
pub fn states(object: &Value) -> BTreeMap<String, String> {
    let labels = object.pointer("/metadata/labels").and_then(Value::as_object).cloned().unwrap_or_default();
    labels
        .into_iter()
        .filter_map(|(k, v)| Some((k.strip_prefix(STATE)?.to_string(), v.as_str()?.to_string())))
        .collect()
}

/// The SyncTarget keys an object is marked for deletion from.
pub fn deletions(object: &Value) -> Vec<String> {
    let annotations = object.pointer("/metadata/annotations").and_then(Value::as_object).cloned().unwrap_or_default();
    annotations.keys().filter_map(|k| k.strip_prefix(DELETION).map(str::to_string)).collect()
}
