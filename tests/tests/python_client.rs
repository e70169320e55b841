//! The official Python `kubernetes` client against a real `atoll-shard`.
//!
//! The scenarios themselves live in `tests/python/client_scenarios.py` (CoreV1Api CRUD,
//! custom resources through ApiextensionsV1Api and CustomObjectsApi, watch resumption,
//! `utils.create_from_yaml`); this test gives them a shard, a logical cluster and a
//! kubeconfig for it, and fails with the script's whole output when any scenario fails.
//! `scripts/deps.sh` installs the client.

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

use tests::{ShardOptions, ShardProcess};

/// The logical cluster the scenarios run in.
const CLUSTER: &str = "py";

/// A bound on the whole script, so a hung request fails the test instead of the CI run.
/// Far above a normal run: every wait inside the script has its own smaller deadline.
const SCRIPT_TIMEOUT: Duration = Duration::from_secs(600);

fn script_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("python").join("client_scenarios.py")
}

/// Writes a kubeconfig for the admin whose server is the logical cluster's URL: the one
/// the shard writes points at `/clusters/root`.
fn cluster_kubeconfig(shard: &ShardProcess, cluster: &str) -> PathBuf {
    let path = shard.data_dir().join(format!("{cluster}-python.kubeconfig"));
    let admin = shard.admin();
    tests::kubeconfig::write(&path, &shard.cluster_url(cluster), &admin.ca_pem, &admin.identity)
        .expect("write the logical cluster's kubeconfig");
    path
}

async fn run_python(args: &[&Path]) -> Output {
    let mut command = tokio::process::Command::new("python3");
    command.args(args).kill_on_drop(true);
    match tokio::time::timeout(SCRIPT_TIMEOUT, command.output()).await {
        Ok(output) => output.expect("run python3 (scripts/deps.sh installs it)"),
        Err(_) => panic!("{} did not finish within {SCRIPT_TIMEOUT:?}", args[0].display()),
    }
}

fn describe(output: &Output) -> String {
    format!(
        "exit status {}\n--- stdout ---\n{}\n--- stderr ---\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn official_python_client_scenarios() {
    let probe = run_python(&[Path::new("-c"), Path::new("import kubernetes")]).await;
    assert!(
        probe.status.success(),
        "the Python kubernetes client is missing; run scripts/deps.sh\n{}",
        describe(&probe)
    );

    let shard = ShardProcess::start(ShardOptions::default()).await.expect("start shard");
    shard.create_logical_cluster(CLUSTER).await.expect("create logical cluster");
    let kubeconfig = cluster_kubeconfig(&shard, CLUSTER);

    let output = run_python(&[&script_path(), &kubeconfig]).await;
    assert!(
        output.status.success(),
        "{} failed against {}\n{}\n--- tail of {} ---\n{}",
        script_path().display(),
        shard.cluster_url(CLUSTER),
        describe(&output),
        shard.log_path().display(),
        shard.log_tail(60)
    );
    // Every scenario reports itself; a script that ran none must not pass.
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains(" 0 failed") && stdout.contains("ok     scenario_"), "{}", describe(&output));
}
