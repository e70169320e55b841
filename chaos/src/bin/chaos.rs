//! `atoll-chaos`: runs a chaos scenario against real Atoll processes and judges what the
//! clients saw.
//!
//! - `atoll-chaos list` names the scenarios, one a line.
//! - `atoll-chaos run --scenario NAME --seed S --seconds D [--history FILE]` runs one,
//!   prints the seed, the faults with their times, the operations per kind and every
//!   violation, keeps the history for replay, and exits 1 on any violation.
//! - `atoll-chaos replay FILE` judges a saved history again.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use chaos::scenario::{RunOptions, SCENARIOS};
use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(name = "atoll-chaos", about = "Seeded fault injection against Atoll, judged by history checkers")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Names the scenarios.
    List,
    /// Runs one scenario.
    Run {
        /// The scenario (see `list`).
        #[arg(long, default_value = "mixed")]
        scenario: String,
        /// The seed; the same seed injects the same faults at the same offsets.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// How long faults are injected.
        #[arg(long, alias = "duration", default_value_t = 20)]
        seconds: u64,
        /// Writers per shard.
        #[arg(long, default_value_t = 3)]
        writers: u32,
        /// Watchers per shard.
        #[arg(long, default_value_t = 2)]
        watchers: u32,
        /// Where to keep the history (default: atoll-chaos-<scenario>-<seed>.json in the
        /// temporary directory).
        #[arg(long)]
        history: Option<PathBuf>,
    },
    /// Runs the checkers again over a saved history.
    Replay {
        /// The history file a run wrote.
        file: PathBuf,
    },
}

fn main() -> ExitCode {
    match run(Cli::parse()) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(error) => {
            eprintln!("atoll-chaos: {error:#}");
            ExitCode::from(2)
        }
    }
}

/// Returns whether the verdict is clean.
fn run(cli: Cli) -> anyhow::Result<bool> {
    match cli.command {
        Command::List => {
            for (name, what) in SCENARIOS {
                println!("{name}\t{what}");
            }
            Ok(true)
        }
        Command::Run { scenario, seed, seconds, writers, watchers, history } => {
            let history_file =
                history.unwrap_or_else(|| std::env::temp_dir().join(format!("atoll-chaos-{scenario}-{seed}.json")));
            let options = RunOptions {
                scenario,
                seed,
                fault_seconds: seconds,
                writers_per_shard: writers,
                watchers_per_shard: watchers,
                history_file: Some(history_file.clone()),
            };
            let report = tests::load_generator_runtime()?.block_on(chaos::run(&options))?;
            print!("{}", report.summary());
            println!("history kept in {} (replay: atoll-chaos replay FILE)", history_file.display());
            println!(
                "replay the run: atoll-chaos run --scenario {} --seed {seed} --seconds {seconds}",
                options.scenario
            );
            Ok(report.violations.is_empty())
        }
        Command::Replay { file } => {
            let text = std::fs::read(&file).with_context(|| format!("read {}", file.display()))?;
            let history: chaos::history::History =
                serde_json::from_slice(&text).with_context(|| format!("parse history {}", file.display()))?;
            let violations = chaos::check::check_all(&history);
            print!("{}", chaos::summary::summarize(&history, &violations, None));
            Ok(violations.is_empty())
        }
    }
}
