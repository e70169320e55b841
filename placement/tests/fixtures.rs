//! Table tests from text fixtures: every `tests/fixtures/*.yaml` document is one
//! decision (profile, policy, state, candidates) and what it must come to.
//!
//! Each document is also decided a second time with its candidates in reverse order,
//! and must come out the same: decisions may not depend on the order candidates arrive.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use placement::{decide, Candidate, Decision, Outcome, Policy, Profile, State};
use serde::Deserialize;

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Fixture {
    name: String,
    #[serde(default)]
    description: String,
    /// A built-in profile's name, or a profile spelled out. Read as a YAML value first,
    /// because an untagged enum would refuse the YAML tags (`!TaintToleration fleet`)
    /// that plugins with parameters are written with.
    profile: serde_yaml_ng::Value,
    #[serde(default)]
    policy: Policy,
    state: State,
    #[serde(default)]
    candidates: Vec<Candidate>,
    expect: Expect,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Expect {
    /// The desired names, in rank order.
    desired: Option<Vec<String>>,
    add: Option<Vec<String>>,
    keep: Option<Vec<String>>,
    remove: Option<Vec<String>>,
    /// Exactly the rejected names, each with a substring of its reason.
    rejected: Option<BTreeMap<String, String>>,
    /// Exactly the names that passed every filter but were not picked.
    not_picked: Option<Vec<String>>,
    /// Substrings of any cluster's reason.
    #[serde(default)]
    reasons: BTreeMap<String, String>,
    /// Normalised scores per cluster and scorer.
    #[serde(default)]
    scores: BTreeMap<String, BTreeMap<String, i64>>,
    /// Raw scores per cluster and scorer (`null` for no data).
    #[serde(default)]
    raw: BTreeMap<String, BTreeMap<String, Option<f64>>>,
    /// Weighted totals per tier in use.
    #[serde(default)]
    totals: BTreeMap<String, Vec<i64>>,
    /// Exactly the scorers that ran, as `name×weight`.
    scorers: Option<Vec<String>>,
    unsatisfied: Option<usize>,
    missing: Option<Vec<String>>,
    /// `requeueAt`, or `none` for no requeue.
    requeue_at: Option<String>,
    /// Substrings, one per expected warning.
    warnings: Option<Vec<String>>,
    /// The decision must fail with an error containing this.
    error: Option<String>,
}

fn fixture_files() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("read {}: {e}", dir.display()))
        .map(|entry| entry.expect("directory entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "yaml"))
        .collect();
    files.sort();
    files
}

fn load(path: &Path) -> Vec<Fixture> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    serde_yaml_ng::Deserializer::from_str(&text)
        .map(|document| {
            Fixture::deserialize(document).unwrap_or_else(|e| panic!("{}: invalid fixture: {e}", path.display()))
        })
        .collect()
}

fn profile_of(fixture: &Fixture) -> Profile {
    match &fixture.profile {
        serde_yaml_ng::Value::String(name) => {
            Profile::named(name).unwrap_or_else(|| panic!("{}: no profile {name}", fixture.name))
        }
        inline => Profile::deserialize(inline.clone())
            .unwrap_or_else(|e| panic!("{}: invalid inline profile: {e}", fixture.name)),
    }
}

#[test]
fn fixtures() {
    let mut failures = Vec::new();
    let mut count = 0;
    for path in fixture_files() {
        let file = path.file_name().map(|f| f.to_string_lossy().to_string()).unwrap_or_default();
        for fixture in load(&path) {
            count += 1;
            if let Err(message) = run(&fixture) {
                failures.push(format!("{file} / {}: {message}", fixture.name));
            }
        }
    }
    assert!(count > 0, "no fixtures found");
    assert!(failures.is_empty(), "{} of {count} fixtures failed:\n{}", failures.len(), failures.join("\n\n"));
    eprintln!("{count} fixtures passed");
}

fn run(fixture: &Fixture) -> Result<(), String> {
    let _ = &fixture.description;
    let profile = profile_of(fixture);
    let result = decide(&profile, &fixture.policy, &fixture.candidates, &fixture.state);
    let mut reversed = fixture.candidates.clone();
    reversed.reverse();
    let again = decide(&profile, &fixture.policy, &reversed, &fixture.state);
    if result != again {
        return Err(format!("the decision depends on candidate order:\n{result:#?}\nreversed:\n{again:#?}"));
    }
    match (&fixture.expect.error, result) {
        (Some(wanted), Err(error)) if error.to_string().contains(wanted.as_str()) => Ok(()),
        (Some(wanted), Err(error)) => Err(format!("error {error:?} does not contain {wanted:?}")),
        (Some(wanted), Ok(decision)) => Err(format!("expected error {wanted:?}, got {}", summary(&decision))),
        (None, Err(error)) => Err(format!("unexpected error: {error}")),
        (None, Ok(decision)) => check(&fixture.expect, &decision).map_err(|m| format!("{m}\n{}", summary(&decision))),
    }
}

fn check(expect: &Expect, decision: &Decision) -> Result<(), String> {
    equal("desired", &expect.desired, &decision.desired)?;
    equal("add", &expect.add, &decision.bind.add)?;
    equal("keep", &expect.keep, &decision.bind.keep)?;
    equal("remove", &expect.remove, &decision.bind.remove)?;
    equal("unsatisfied", &expect.unsatisfied, &decision.unsatisfied)?;
    equal("missing", &expect.missing, &decision.missing)?;
    check_outcomes(expect, decision)?;
    check_scores(expect, decision)?;
    if let Some(wanted) = &expect.requeue_at {
        let got = decision.requeue_at.map_or_else(|| "none".to_string(), |t| t.to_string());
        if &got != wanted {
            return Err(format!("requeueAt: want {wanted}, got {got}"));
        }
    }
    if let Some(wanted) = &expect.warnings {
        let matched = wanted.len() == decision.warnings.len()
            && wanted.iter().zip(&decision.warnings).all(|(w, got)| got.contains(w.as_str()));
        if !matched {
            return Err(format!("warnings: want {wanted:?}, got {:?}", decision.warnings));
        }
    }
    Ok(())
}

fn check_outcomes(expect: &Expect, decision: &Decision) -> Result<(), String> {
    if let Some(rejected) = &expect.rejected {
        let got: Vec<&str> =
            decision.clusters.iter().filter(|r| r.outcome == Outcome::Rejected).map(|r| r.name.as_str()).collect();
        let want: Vec<&str> = rejected.keys().map(String::as_str).collect();
        if got != want {
            return Err(format!("rejected: want {want:?}, got {got:?}"));
        }
        for (name, substring) in rejected {
            reason_contains(decision, name, substring)?;
        }
    }
    if let Some(not_picked) = &expect.not_picked {
        let mut want: Vec<&str> = not_picked.iter().map(String::as_str).collect();
        want.sort_unstable();
        let got: Vec<&str> =
            decision.clusters.iter().filter(|r| r.outcome == Outcome::NotPicked).map(|r| r.name.as_str()).collect();
        if got != want {
            return Err(format!("notPicked: want {want:?}, got {got:?}"));
        }
    }
    for (name, substring) in &expect.reasons {
        reason_contains(decision, name, substring)?;
    }
    Ok(())
}

fn check_scores(expect: &Expect, decision: &Decision) -> Result<(), String> {
    if let Some(want) = &expect.scorers {
        let got: Vec<String> = decision.scorers.iter().map(|s| format!("{}×{}", s.plugin, s.weight)).collect();
        if &got != want {
            return Err(format!("scorers: want {want:?}, got {got:?}"));
        }
    }
    for (cluster, scores) in &expect.scores {
        for (scorer, want) in scores {
            let got = decision.score(cluster, scorer).map(|s| s.normalised);
            if got != Some(*want) {
                return Err(format!("score of {cluster} by {scorer}: want {want}, got {got:?}"));
            }
        }
    }
    for (cluster, scores) in &expect.raw {
        for (scorer, want) in scores {
            let got = decision.score(cluster, scorer).map(|s| s.raw);
            if got != Some(*want) {
                return Err(format!("raw score of {cluster} by {scorer}: want {want:?}, got {got:?}"));
            }
        }
    }
    for (cluster, want) in &expect.totals {
        let got = decision.report(cluster).map(|r| r.total.clone());
        if got.as_ref() != Some(want) {
            return Err(format!("total of {cluster}: want {want:?}, got {got:?}"));
        }
    }
    Ok(())
}

fn reason_contains(decision: &Decision, name: &str, substring: &str) -> Result<(), String> {
    let report = decision.report(name).ok_or_else(|| format!("no report for {name}"))?;
    if report.reason.contains(substring) {
        Ok(())
    } else {
        Err(format!("reason of {name}: {:?} does not contain {substring:?}", report.reason))
    }
}

fn equal<T: PartialEq + std::fmt::Debug>(what: &str, want: &Option<T>, got: &T) -> Result<(), String> {
    match want {
        Some(want) if want != got => Err(format!("{what}: want {want:?}, got {got:?}")),
        _ => Ok(()),
    }
}

fn summary(decision: &Decision) -> String {
    let mut lines = vec![format!(
        "desired {:?}, bind {:?}, unsatisfied {}, missing {:?}, requeueAt {:?}, warnings {:?}",
        decision.desired, decision.bind, decision.unsatisfied, decision.missing, decision.requeue_at, decision.warnings
    )];
    for report in &decision.clusters {
        lines.push(format!("  {}: {:?} total {:?} — {}", report.name, report.outcome, report.total, report.reason));
    }
    lines.join("\n")
}
