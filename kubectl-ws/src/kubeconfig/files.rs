//! Reading and writing kubeconfig files: the only I/O of the kubeconfig module.

use std::collections::BTreeSet;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Context;
use serde_yaml_ng::Value;

use super::{KubeconfigFile, KubeconfigSet, Sources};

/// Kubeconfigs are a few kilobytes; anything this big is not one, and reading it whole
/// would only waste memory before the parser rejects it.
const KUBECONFIG_BYTES_MAX: u64 = 16 * 1024 * 1024;

/// Reads every file of `sources`. A missing `--kubeconfig` file is an error, as in
/// kubectl; missing `KUBECONFIG` entries are empty.
pub fn load(sources: &Sources) -> anyhow::Result<KubeconfigSet> {
    let mut files = Vec::with_capacity(sources.paths.len());
    for path in &sources.paths {
        let file = read(path)?;
        if sources.explicit && !file.exists {
            anyhow::bail!("stat {}: no such file or directory", path.display());
        }
        files.push(file);
    }
    Ok(KubeconfigSet { files, explicit: sources.explicit })
}

fn read(path: &Path) -> anyhow::Result<KubeconfigFile> {
    let metadata = match fs::metadata(path) {
        Ok(metadata) => metadata,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            return Ok(KubeconfigFile { path: path.to_path_buf(), exists: false, document: Value::Null });
        }
        Err(error) => return Err(error).with_context(|| format!("stat kubeconfig {}", path.display())),
    };
    anyhow::ensure!(
        metadata.len() <= KUBECONFIG_BYTES_MAX,
        "kubeconfig {} is {} bytes, more than the {KUBECONFIG_BYTES_MAX} a kubeconfig may have",
        path.display(),
        metadata.len()
    );
    let text = fs::read_to_string(path).with_context(|| format!("read kubeconfig {}", path.display()))?;
    // YAML is a superset of JSON, so one parser reads both kinds of kubeconfig.
    let document: Value =
        serde_yaml_ng::from_str(&text).with_context(|| format!("parse kubeconfig {}", path.display()))?;
    Ok(KubeconfigFile { path: path.to_path_buf(), exists: true, document })
}

/// Writes the files at `changed` (indices into `set.files`) as YAML.
pub fn save(set: &KubeconfigSet, changed: &BTreeSet<usize>) -> anyhow::Result<()> {
    for &index in changed {
        let file = &set.files[index];
        let text = serde_yaml_ng::to_string(&file.document)
            .with_context(|| format!("serialize kubeconfig {}", file.path.display()))?;
        write_replacing(&file.path, text.as_bytes())
            .with_context(|| format!("write kubeconfig {}", file.path.display()))?;
    }
    Ok(())
}

/// Replaces the file at `path` (following a symlink to its target) with `bytes` through a
/// rename, so that kubectl running at the same time reads the old file or the new one,
/// never half of one. The file keeps its permissions; a new one is private (0600), since
/// kubeconfigs hold credentials.
fn write_replacing(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    let target = fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    let dir = target.parent().map(Path::to_path_buf).unwrap_or_else(|| PathBuf::from("."));
    fs::create_dir_all(&dir).with_context(|| format!("create directory {}", dir.display()))?;
    let file_name = target.file_name().map(|name| name.to_string_lossy().into_owned()).unwrap_or_default();
    let temporary = dir.join(format!(".{file_name}.kubectl-ws-{}.tmp", std::process::id()));
    let permissions = fs::metadata(&target).map(|metadata| metadata.permissions()).ok();
    let result = (|| {
        let mut file = create_private(&temporary)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        if let Some(permissions) = permissions {
            fs::set_permissions(&temporary, permissions)?;
        }
        fs::rename(&temporary, &target)
    })();
    if result.is_err() {
        let _ = fs::remove_file(&temporary);
    }
    result.with_context(|| format!("replace {} through {}", target.display(), temporary.display()))
}

#[cfg(unix)]
fn create_private(path: &Path) -> std::io::Result<fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    fs::OpenOptions::new().write(true).create(true).truncate(true).mode(0o600).open(path)
}

#[cfg(not(unix))]
fn create_private(path: &Path) -> std::io::Result<fs::File> {
    fs::File::create(path)
}
