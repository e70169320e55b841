//! Injects [`HostFault`]s into the containers of a compose project and heals them: Docker
//! for disconnects and pauses, `nsenter -t PID -n` into the container's network
//! namespace for iptables rules and the `tbf` qdisc. Each injection returns what it put in
//! place ([`Injected`]), and its heal removes exactly that: the same rules deleted by
//! their full specification, the qdisc it added, the network it took away under the
//! service's own alias.
//!
//! The commands block (Docker answers in tenths of a second); callers run them on a
//! blocking thread. Needs root (nsenter) and the host's `iptables`, `tc` and `ip`.

use std::collections::BTreeMap;
use std::process::Command;
use std::time::Duration;

use anyhow::Context;
use tests::compose::{run, succeeds, Compose};

use super::fault::HostFault;

/// How long one docker, nsenter or tc command may take.
const COMMAND_TIMEOUT: Duration = Duration::from_secs(60);

/// Why host faults cannot be injected here, if they cannot: no Docker (see
/// [`tests::compose::docker_missing`]), not root, or a tool missing.
pub fn unavailable() -> Option<String> {
    if let Some(why) = tests::compose::docker_missing() {
        return Some(why);
    }
    let uid = std::fs::read_to_string("/proc/self/status").ok().and_then(|status| {
        status.lines().find_map(|line| line.strip_prefix("Uid:")?.split_whitespace().nth(1).map(str::to_string))
    });
    if uid.as_deref() != Some("0") {
        return Some("entering a container's network namespace (nsenter) needs root".to_string());
    }
    for (tool, args) in [("nsenter", "--version"), ("iptables", "--version"), ("tc", "-V"), ("ip", "-V")] {
        if !succeeds(Command::new(tool).arg(args)) {
            return Some(format!("`{tool}` is not installed"));
        }
    }
    None
}

/// A container the injector may fault.
#[derive(Clone, Debug)]
struct Container {
    id: String,
    pid: u32,
}

/// The containers of one compose project, by service, and its network.
#[derive(Clone, Debug)]
pub struct HostInjector {
    network: String,
    containers: BTreeMap<String, Container>,
}

/// What one injection put in place, for its heal.
#[derive(Clone, Debug)]
pub struct Injected {
    service: String,
    fault: HostFault,
    /// The iptables rules added, as given to `-A`.
    rules: Vec<Vec<String>>,
    /// The devices a `tbf` qdisc was added to.
    qdisc_devices: Vec<String>,
    /// Every command run, in words.
    pub commands: Vec<String>,
}

impl HostInjector {
    /// The containers of `services` in `compose`'s project (their ids and host pids, which
    /// neither a pause nor a disconnect changes).
    pub fn new(compose: &Compose, services: &[&str]) -> anyhow::Result<HostInjector> {
        let mut containers = BTreeMap::new();
        for service in services {
            let container = Container { id: compose.container(service)?, pid: compose.pid(service)? };
            containers.insert(service.to_string(), container);
        }
        Ok(HostInjector { network: compose.network(), containers })
    }

    fn container(&self, service: &str) -> anyhow::Result<&Container> {
        self.containers.get(service).with_context(|| format!("no container of service {service} to fault"))
    }

    /// Puts `fault` in place on `service`'s container.
    pub fn inject(&self, service: &str, fault: HostFault) -> anyhow::Result<Injected> {
        let container = self.container(service)?;
        let mut injected = Injected {
            service: service.to_string(),
            fault,
            rules: Vec::new(),
            qdisc_devices: Vec::new(),
            commands: Vec::new(),
        };
        match fault {
            HostFault::Disconnect => {
                injected.command(docker(&["network", "disconnect", &self.network, &container.id]))?;
            }
            HostFault::Pause => injected.command(docker(&["pause", &container.id]))?,
            HostFault::Throttle { .. } => {
                let qdisc = fault.qdisc().context("a throttle has a qdisc")?;
                for device in devices(container.pid)? {
                    let mut args = vec!["qdisc".to_string(), "add".to_string(), "dev".to_string(), device.clone()];
                    args.extend(qdisc.iter().cloned());
                    injected.command(in_namespace(container.pid, "tc", &args))?;
                    injected.qdisc_devices.push(device);
                }
            }
            HostFault::Loss { .. } | HostFault::Blackhole(_) | HostFault::Cut(_) => {
                for rule in fault.rules() {
                    let added = injected.command(iptables(container.pid, "-A", &rule));
                    if let Err(error) = added {
                        // Leave nothing half-injected behind.
                        let _ = self.heal(injected);
                        return Err(error);
                    }
                    injected.rules.push(rule);
                }
            }
        }
        Ok(injected)
    }

    /// Lifts what `injected` put in place, and only that.
    pub fn heal(&self, injected: Injected) -> anyhow::Result<Vec<String>> {
        let container = self.container(&injected.service)?;
        let mut healed = injected.clone();
        match injected.fault {
            HostFault::Disconnect => healed.command(docker(&[
                "network",
                "connect",
                "--alias",
                &injected.service,
                &self.network,
                &container.id,
            ]))?,
            HostFault::Pause => healed.command(docker(&["unpause", &container.id]))?,
            _ => {
                let mut first_error = None;
                for rule in &injected.rules {
                    if let Err(error) = healed.command(iptables(container.pid, "-D", rule)) {
                        first_error.get_or_insert(error);
                    }
                }
                for device in &injected.qdisc_devices {
                    let args = ["qdisc", "del", "dev", device, "root"].map(String::from);
                    if let Err(error) = healed.command(in_namespace(container.pid, "tc", &args)) {
                        first_error.get_or_insert(error);
                    }
                }
                if let Some(error) = first_error {
                    return Err(error);
                }
            }
        }
        Ok(healed.commands.split_off(injected.commands.len()))
    }
}

impl Injected {
    /// Runs `command`, noting it.
    fn command(&mut self, mut command: Command) -> anyhow::Result<()> {
        let line = describe(&command);
        run(&mut command, COMMAND_TIMEOUT)
            .with_context(|| format!("fault {} on {}: {line}", self.fault.describe(), self.service))?;
        self.commands.push(line);
        Ok(())
    }
}

fn docker(args: &[&str]) -> Command {
    let mut command = Command::new("docker");
    command.args(args);
    command
}

/// `nsenter -t PID -n PROGRAM ARGS`: PROGRAM from this host, in the container's network
/// namespace only (its filesystem stays the host's, so the image needs no tools).
fn in_namespace(pid: u32, program: &str, args: &[String]) -> Command {
    let mut command = Command::new("nsenter");
    command.arg("-t").arg(pid.to_string()).arg("-n").arg(program).args(args);
    command
}

/// `iptables -w OP RULE` in the container's namespace (`-w`: wait for the xtables lock
/// rather than fail while Docker holds it).
fn iptables(pid: u32, op: &str, rule: &[String]) -> Command {
    let mut args = vec!["-w".to_string(), op.to_string()];
    args.extend(rule.iter().cloned());
    in_namespace(pid, "iptables", &args)
}

/// The container's network devices other than loopback.
fn devices(pid: u32) -> anyhow::Result<Vec<String>> {
    let listing = run(
        &mut in_namespace(pid, "ip", &["-o".to_string(), "link".to_string(), "show".to_string()]),
        COMMAND_TIMEOUT,
    )?;
    let devices: Vec<String> = listing
        .lines()
        .filter_map(|line| line.split(": ").nth(1))
        .map(|name| name.split('@').next().unwrap_or(name).to_string())
        .filter(|name| name != "lo")
        .collect();
    anyhow::ensure!(!devices.is_empty(), "the container has no network device but loopback:\n{listing}");
    Ok(devices)
}

/// A command in words, as a shell would take it.
fn describe(command: &Command) -> String {
    let mut words = vec![command.get_program().to_string_lossy().into_owned()];
    words.extend(command.get_args().map(|arg| arg.to_string_lossy().into_owned()));
    words.join(" ")
}
