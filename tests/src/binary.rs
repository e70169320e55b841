//! Finding the workspace binaries that end-to-end tests run.

use std::path::{Path, PathBuf};

/// Overrides where [`binary`] looks, for running the tests against binaries built
/// elsewhere (for example an installed release).
pub const BIN_DIR_ENV: &str = "ATOLL_BIN_DIR";

/// Returns the path of the workspace binary `name` (for example `atoll-shard`).
///
/// Test executables live in `target/<profile>/deps/`, benchmark programs and examples
/// in `target/<profile>/` and `target/<profile>/examples/`; the workspace binaries sit
/// in `target/<profile>/`. Cargo does not build a package's sibling binaries before
/// running its tests, so a missing binary panics with the command that builds it
/// instead of failing later with a confusing spawn error.
pub fn binary(name: &str) -> PathBuf {
    let dir = match std::env::var_os(BIN_DIR_ENV) {
        Some(dir) => PathBuf::from(dir),
        None => profile_dir(),
    };
    let path = dir.join(name);
    if !path.is_file() {
        panic!(
            "binary `{name}` not found at {}: run `cargo build --bins` first \
             (with the same CARGO_TARGET_DIR and profile as the tests), or set {BIN_DIR_ENV}",
            path.display()
        );
    }
    path
}

/// The `target/<profile>/` directory the running executable was built into.
fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("find the path of the running executable");
    let mut dir = exe.parent().map(Path::to_path_buf).expect("the running executable has a parent directory");
    if dir.ends_with("deps") || dir.ends_with("examples") {
        dir.pop();
    }
    dir
}
