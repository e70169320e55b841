//! The faults the `hosts` scenario injects into the containers of the docker-compose
//! installation, and the exact iptables rules each network fault installs. Pure: no
//! I/O; [`super::docker`] runs the commands.
//!
//! This machine's kernel has no `sch_netem`, so there is no `tc netem` delay or loss.
//! Loss is an iptables `statistic` match dropping a share of packets (the share drawn from
//! the seed; which packets is the kernel's draw), a blackhole drops every packet, a cut
//! answers TCP with a reset, and delay is replaced by a `tbf` rate limit on the
//! container's outgoing traffic ([`HostFault::Throttle`]): packets wait in the token
//! bucket's queue, so answers come late, and the ones past its latency bound are dropped.
//! Rules go into the container's own network namespace (entered with `nsenter`), so
//! neither the image nor the container's capabilities change.

use serde::{Deserialize, Serialize};

/// Which packets a network fault takes, seen from inside the container.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Way {
    /// Packets arriving (the `INPUT` chain): requests to the container's servers and the
    /// answers to its own calls.
    Inbound,
    /// Packets leaving (the `OUTPUT` chain).
    Outbound,
    /// Both.
    Both,
}

impl Way {
    /// The chains of the filter table the fault's rules go into.
    fn chains(self) -> &'static [&'static str] {
        match self {
            Way::Inbound => &["INPUT"],
            Way::Outbound => &["OUTPUT"],
            Way::Both => &["INPUT", "OUTPUT"],
        }
    }
}

/// One fault on one container, lifted by its heal.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum HostFault {
    /// `docker network disconnect` from the project network; healed by connecting it
    /// again under its service name (a plain connect would drop the alias the others
    /// resolve it by).
    Disconnect,
    /// `docker pause` (the cgroup freezer: every process stops, sockets stay open);
    /// healed by `docker unpause`.
    Pause,
    /// Drop `per_mille` of every thousand packets, at random, in `way`.
    Loss {
        /// Which packets.
        way: Way,
        /// How many of a thousand are dropped.
        per_mille: u16,
    },
    /// Drop every packet in `way`: a host that vanished, connections hang.
    Blackhole(Way),
    /// Answer every TCP packet in `way` with a reset: connections break at once.
    Cut(Way),
    /// Limit the container's outgoing traffic to `kbit` kbit/s with `tbf` (what stands in
    /// for netem's delay here).
    Throttle {
        /// The rate.
        kbit: u32,
    },
}

impl HostFault {
    /// The iptables rules the fault adds to the filter table, each as the arguments after
    /// `-A` (and, to remove exactly it again, after `-D`). Loopback is left alone: the
    /// container's health check and Docker's DNS resolver (127.0.0.11) go over it, and
    /// the fault is between hosts. Empty for faults that are not iptables rules.
    pub fn rules(&self) -> Vec<Vec<String>> {
        let (way, target): (Way, &[&str]) = match *self {
            HostFault::Disconnect | HostFault::Pause | HostFault::Throttle { .. } => return Vec::new(),
            HostFault::Loss { way, .. } | HostFault::Blackhole(way) => (way, &["-j", "DROP"]),
            HostFault::Cut(way) => (way, &["-p", "tcp", "-j", "REJECT", "--reject-with", "tcp-reset"]),
        };
        way.chains()
            .iter()
            .map(|chain| {
                let interface = if *chain == "INPUT" { "-i" } else { "-o" };
                let mut rule: Vec<String> = [chain, "!", interface, "lo"].iter().map(|s| s.to_string()).collect();
                if let HostFault::Loss { per_mille, .. } = self {
                    let probability = format!("{:.3}", f64::from(*per_mille) / 1000.0);
                    rule.extend(["-m", "statistic", "--mode", "random", "--probability"].map(String::from));
                    rule.push(probability);
                }
                rule.extend(target.iter().map(|s| s.to_string()));
                rule
            })
            .collect()
    }

    /// The `tc qdisc add dev IFACE` arguments after the device, for a throttle.
    pub fn qdisc(&self) -> Option<Vec<String>> {
        let HostFault::Throttle { kbit } = self else { return None };
        // A burst of 32 kbit lets one small answer through at once; the 400 ms latency
        // bounds the queue, so a throttled host also loses what waits longer.
        let args = ["root", "tbf", "rate", &format!("{kbit}kbit"), "burst", "32kbit", "latency", "400ms"];
        Some(args.iter().map(|s| s.to_string()).collect())
    }

    /// Whether no TCP exchange with the container can complete while the fault holds (so
    /// requests to it cannot succeed then): a disconnect, a pause, and a blackhole or cut
    /// either way (a TCP exchange needs packets both ways).
    pub fn isolates(&self) -> bool {
        matches!(self, HostFault::Disconnect | HostFault::Pause | HostFault::Blackhole(_) | HostFault::Cut(_))
    }

    /// The fault in words, for the log and the history.
    pub fn describe(&self) -> String {
        match self {
            HostFault::Disconnect => "docker network disconnect".to_string(),
            HostFault::Pause => "docker pause".to_string(),
            HostFault::Loss { way, per_mille } => format!("iptables loss {:.1}% {way:?}", f64::from(*per_mille) / 10.0),
            HostFault::Blackhole(way) => format!("iptables blackhole {way:?}"),
            HostFault::Cut(way) => format!("iptables cut (tcp-reset) {way:?}"),
            HostFault::Throttle { kbit } => format!("tbf rate limit {kbit} kbit/s outbound"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(fault: HostFault) -> Vec<String> {
        fault.rules().iter().map(|rule| rule.join(" ")).collect()
    }

    #[test]
    fn network_faults_are_rules_in_the_chains_of_their_way_and_spare_loopback() {
        assert_eq!(lines(HostFault::Blackhole(Way::Inbound)), ["INPUT ! -i lo -j DROP"]);
        assert_eq!(lines(HostFault::Blackhole(Way::Both)), ["INPUT ! -i lo -j DROP", "OUTPUT ! -o lo -j DROP"]);
        assert_eq!(lines(HostFault::Cut(Way::Outbound)), ["OUTPUT ! -o lo -p tcp -j REJECT --reject-with tcp-reset"]);
        assert_eq!(
            lines(HostFault::Loss { way: Way::Inbound, per_mille: 250 }),
            ["INPUT ! -i lo -m statistic --mode random --probability 0.250 -j DROP"]
        );
    }

    #[test]
    fn docker_faults_and_throttles_add_no_rules() {
        for fault in [HostFault::Disconnect, HostFault::Pause, HostFault::Throttle { kbit: 256 }] {
            assert!(fault.rules().is_empty(), "{fault:?}");
        }
        assert_eq!(
            HostFault::Throttle { kbit: 256 }.qdisc().map(|q| q.join(" ")).as_deref(),
            Some("root tbf rate 256kbit burst 32kbit latency 400ms")
        );
        assert_eq!(HostFault::Pause.qdisc(), None);
    }

    #[test]
    fn isolating_faults_are_those_that_leave_no_way_through() {
        assert!(HostFault::Disconnect.isolates() && HostFault::Pause.isolates());
        assert!(HostFault::Blackhole(Way::Both).isolates() && HostFault::Cut(Way::Both).isolates());
        assert!(HostFault::Blackhole(Way::Inbound).isolates() && HostFault::Cut(Way::Outbound).isolates());
        assert!(!HostFault::Loss { way: Way::Both, per_mille: 500 }.isolates());
        assert!(!HostFault::Throttle { kbit: 64 }.isolates());
    }
}
