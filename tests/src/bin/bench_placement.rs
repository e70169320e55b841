//! `bench-placement`: the scheduling framework alone, one decision at a time.
//!
//! Builds `--clusters` synthetic candidates (labels, claims, properties, allocatable
//! resources, supported APIs; a share tainted, not ready or bound elsewhere), then times
//! `placement::decide` picking `--pick` of them with five filters (Schedulable,
//! RequiredTerms with label, claim and property selectors, OCM TaintToleration,
//! SupportedApis, LocationResource) and three scorers (Balance, ResourceAllocatableCPU,
//! PreferredTerms), `--rounds` times after `--warmup-rounds` untimed ones. A second
//! scenario adds a DoNotSchedule topology spread constraint, which makes the framework
//! pick one cluster per round, re-filtering and re-scoring the pool after every pick.
//!
//! It prints p50/p99/max milliseconds per decision for each scenario, against the goal
//! of < 50 ms for one decision over 10,000 clusters. Everything runs on one thread; the
//! decision is pure, so nothing else is measured.
//!
//! Run: `scripts/bench.sh placement [--clusters 10000] [--rounds 200]`.

use std::collections::BTreeMap;
use std::hint::black_box;
use std::time::{Duration, Instant};

use anyhow::{ensure, Context};
use clap::Parser;
use placement::{
    decide, ApiIdentity, Candidate, FilterEntry, FilterPlugin, LabelOperator, LabelRequirement, LabelSelector, Number,
    Policy, Preference, PreferredTerm, Profile, PropertyOperator, PropertyRequirement, PropertySelector, Quantity,
    ScorerEntry, ScorerPlugin, SelectorTerm, SpreadConstraint, State, TaintEffect, TaintSemantics, TieBreak,
    Toleration, TolerationOperator, WhenUnsatisfiable,
};

/// The goal for one decision over 10,000 clusters.
const GOAL_MS: f64 = 50.0;

/// The resource every candidate is a location for (so LocationResource compares strings).
const LOCATION_RESOURCE: &str = "workload.kcp.io/v1alpha1/synctargets";

/// The identity hash of the one API the policy binds.
const BOUND_IDENTITY: &str = "5f1c7e3a9b2d4c6e8f0a1b3c5d7e9f1a2b4c6d8e0f1a3b5c7d9e1f2a4b6c8d0e";

/// Command-line flags, each bounded so a typo cannot start an hour-long run.
#[derive(Parser, Debug)]
#[command(name = "bench-placement", about = "One placement decision over many candidate clusters")]
struct Args {
    /// Candidate clusters per decision.
    #[arg(long, default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    clusters: u64,
    /// How many clusters each decision picks.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pick: u32,
    /// Timed decisions per scenario.
    #[arg(long, default_value_t = 200, value_parser = clap::value_parser!(u64).range(1..=100_000))]
    rounds: u64,
    /// Untimed decisions per scenario before the timed ones.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u64).range(0..=10_000))]
    warmup_rounds: u64,
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let clusters = usize::try_from(args.clusters).context("cluster count fits in memory")?;
    let candidates: Vec<Candidate> = (0..clusters).map(candidate).collect();
    let state = state(clusters)?;
    let profile = profile();
    println!(
        "{} candidates, pick {}, {} timed decisions per scenario ({} warm-up)",
        clusters, args.pick, args.rounds, args.warmup_rounds
    );
    println!("{:<32} {:>9} {:>9} {:>9} {:>7}", "scenario", "p50 ms", "p99 ms", "max ms", "picked");
    for (label, spread) in [("5 filters, 3 scorers", false), ("+ topology spread (1 per round)", true)] {
        let policy = policy(args.pick, spread);
        let mut profile = profile.clone();
        if spread {
            profile.filters.push(FilterEntry { plugin: FilterPlugin::TopologySpread, skip_for_fixed_names: false });
            profile.scorers.push(ScorerEntry { plugin: ScorerPlugin::TopologySpread, weight: 1, tier: 0 });
        }
        let (mut timings, picked) = measure(&profile, &policy, &candidates, &state, &args)?;
        timings.sort_unstable();
        println!(
            "{label:<32} {:>9.2} {:>9.2} {:>9.2} {picked:>7}",
            quantile_ms(&timings, 0.50),
            quantile_ms(&timings, 0.99),
            quantile_ms(&timings, 1.0)
        );
    }
    println!("goal: p99 < {GOAL_MS} ms per decision over 10,000 clusters (the first scenario)");
    if let Some(load) = load_average() {
        println!("load average (1, 5, 15 min) at the end: {load}; compare only quiet runs");
    }
    Ok(())
}

/// The machine's load averages, so a run on a busy machine can be told apart.
fn load_average() -> Option<String> {
    let text = std::fs::read_to_string("/proc/loadavg").ok()?;
    Some(text.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
}

/// Runs the warm-up and timed decisions; returns the timings and how many were picked.
fn measure(
    profile: &Profile,
    policy: &Policy,
    candidates: &[Candidate],
    state: &State,
    args: &Args,
) -> anyhow::Result<(Vec<Duration>, usize)> {
    let mut picked = 0;
    for _ in 0..args.warmup_rounds {
        picked = decide(profile, policy, candidates, state).context("decide (warm-up)")?.desired.len();
    }
    let mut timings = Vec::with_capacity(usize::try_from(args.rounds).unwrap_or(0));
    for _ in 0..args.rounds {
        let started = Instant::now();
        let decision =
            decide(black_box(profile), black_box(policy), black_box(candidates), black_box(state)).context("decide")?;
        timings.push(started.elapsed());
        picked = black_box(decision).desired.len();
    }
    ensure!(picked > 0, "no cluster was picked; the synthetic fleet or policy is wrong");
    Ok((timings, picked))
}

fn quantile_ms(sorted: &[Duration], quantile: f64) -> f64 {
    let index = ((sorted.len() as f64 * quantile).ceil() as usize).clamp(1, sorted.len()) - 1;
    sorted[index].as_secs_f64() * 1000.0
}

/// The profile under test: five filters and three scorers, summed in one tier.
fn profile() -> Profile {
    let filter = |plugin| FilterEntry { plugin, skip_for_fixed_names: false };
    let scorer = |plugin, weight| ScorerEntry { plugin, weight, tier: 1 };
    Profile {
        name: "bench".to_string(),
        filters: vec![
            filter(FilterPlugin::Schedulable),
            filter(FilterPlugin::RequiredTerms),
            filter(FilterPlugin::TaintToleration(TaintSemantics::Ocm)),
            filter(FilterPlugin::SupportedApis),
            filter(FilterPlugin::LocationResource),
        ],
        scorers: vec![
            scorer(ScorerPlugin::Balance, 1),
            scorer(ScorerPlugin::ResourceAllocatableCpu, 2),
            scorer(ScorerPlugin::PreferredTerms, 1),
        ],
        tie_break: TieBreak::Name,
        trim_tie_break: None,
        keep_current: false,
        prioritizer_tier: None,
    }
}

fn policy(pick: u32, spread: bool) -> Policy {
    let expression = |key: &str, operator, values: &[&str]| LabelRequirement {
        key: key.to_string(),
        operator,
        values: values.iter().map(|v| v.to_string()).collect(),
    };
    let required = SelectorTerm {
        label_selector: Some(LabelSelector {
            match_labels: BTreeMap::from([("env".to_string(), "prod".to_string())]),
            match_expressions: vec![
                expression("cloud", LabelOperator::In, &["aws", "gce", "azure"]),
                expression("decommissioned", LabelOperator::DoesNotExist, &[]),
            ],
        }),
        claim_selector: Some(LabelSelector {
            match_labels: BTreeMap::new(),
            match_expressions: vec![expression("platform.open-cluster-management.io", LabelOperator::NotIn, &["KIND"])],
        }),
        property_selector: Some(PropertySelector {
            match_expressions: vec![PropertyRequirement {
                name: "kubernetes-fleet.io/node-count".to_string(),
                operator: PropertyOperator::Ge,
                values: vec!["3".to_string()],
            }],
        }),
    };
    let preferred = PreferredTerm {
        weight: 20,
        preference: Preference {
            label_selector: Some(LabelSelector {
                match_labels: BTreeMap::from([("tier".to_string(), "gold".to_string())]),
                match_expressions: Vec::new(),
            }),
            property_sorter: None,
        },
    };
    Policy {
        number: Number::N(pick),
        required: Some(vec![required]),
        preferred: vec![preferred],
        tolerations: vec![Toleration {
            key: "cluster.open-cluster-management.io/unreachable".to_string(),
            operator: TolerationOperator::Exists,
            toleration_seconds: Some(300),
            ..Toleration::default()
        }],
        spread: if spread {
            vec![SpreadConstraint {
                max_skew: Some(1),
                topology_key: "zone".to_string(),
                topology_key_type: Default::default(),
                when_unsatisfiable: WhenUnsatisfiable::DoNotSchedule,
            }]
        } else {
            Vec::new()
        },
        bound_apis: vec![bound_api()],
        location_resource: Some(LOCATION_RESOURCE.to_string()),
        ..Policy::default()
    }
}

fn bound_api() -> ApiIdentity {
    ApiIdentity {
        group: "apps".to_string(),
        resource: "deployments".to_string(),
        identity_hash: BOUND_IDENTITY.to_string(),
    }
}

/// Other placements' decisions on a third of the clusters, some current decisions, and
/// a clock.
fn state(clusters: usize) -> anyhow::Result<State> {
    let mut state = State::at("2026-01-01T00:00:00Z".parse().context("parse the benchmark's clock")?);
    state.other_decisions =
        (0..clusters).filter(|i| i.is_multiple_of(3)).map(|i| (name(i), (i % 7) as u64 + 1)).collect();
    state.current = (0..clusters).step_by(97).take(50).map(name).collect();
    Ok(state)
}

fn name(index: usize) -> String {
    format!("cluster-{index:06}")
}

/// A deterministic synthetic cluster: most pass every filter, some fail one.
fn candidate(index: usize) -> Candidate {
    let clouds = ["aws", "gce", "azure", "onprem"];
    let mut candidate = Candidate::new(name(index));
    let labels = [
        ("env", if index.is_multiple_of(10) { "dev" } else { "prod" }.to_string()),
        ("cloud", clouds[index % clouds.len()].to_string()),
        ("zone", format!("zone-{}", (index / 4) % 12)),
        ("region", format!("region-{}", index % 4)),
        ("tier", if index.is_multiple_of(5) { "gold" } else { "silver" }.to_string()),
        ("team", format!("team-{}", index % 40)),
        ("cluster.open-cluster-management.io/clusterset", "default".to_string()),
        ("name", name(index)),
    ];
    candidate.labels = labels.into_iter().map(|(k, v)| (k.to_string(), v)).collect();
    candidate.claims = BTreeMap::from([
        (
            "platform.open-cluster-management.io".to_string(),
            if index.is_multiple_of(50) { "KIND" } else { "EKS" }.to_string(),
        ),
        ("region.open-cluster-management.io".to_string(), format!("region-{}", index % 4)),
        ("kubeversion.open-cluster-management.io".to_string(), "v1.32.0".to_string()),
    ]);
    candidate.properties = BTreeMap::from([
        ("kubernetes-fleet.io/node-count".to_string(), Quantity((index % 20) as f64)),
        ("resources.kubernetes-fleet.io/allocatable-cpu".to_string(), Quantity((index % 64) as f64)),
    ]);
    let cpu = Quantity(((index * 7919) % 128 + 1) as f64);
    candidate.allocatable = BTreeMap::from([("cpu".to_string(), cpu), ("memory".to_string(), Quantity(64.0e9))]);
    candidate.capacity =
        BTreeMap::from([("cpu".to_string(), Quantity(128.0)), ("memory".to_string(), Quantity(128.0e9))]);
    if index.is_multiple_of(25) {
        candidate.taints.push(placement::Taint {
            key: "dedicated".to_string(),
            value: "gpu".to_string(),
            effect: TaintEffect::NoSelect,
            time_added: None,
        });
    }
    candidate.ready = index % 40 != 7;
    candidate.supported_apis = Some(vec![bound_api()]);
    candidate.location_resource = Some(LOCATION_RESOURCE.to_string());
    candidate
}
