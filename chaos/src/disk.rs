//! Disk faults: a shard's store on a small filesystem of the run's own (a tmpfs with
//! `size=`), filled by a filler file and freed again.
//!
//! The store dir (`<data dir>/store`, RocksDB) is what fills in practice; the rest of the
//! data dir (log, kubeconfig, certificates) stays on the ordinary disk, so the shard's
//! log still tells what happened. Mounting needs root or CAP_SYS_ADMIN; without it
//! [`SmallDisk::under_store`] says so and the scenario cannot run.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::Context;
use tests::ShardProcess;

/// The size of each shard's store filesystem: room for a short run's writes and
/// RocksDB's files, and smaller than the WAL preallocation RocksDB asks for (1.1 × the
/// 64 MB write buffer): on a larger tmpfs that fallocate succeeds, and writes go on
/// filling the reserved WAL space long after the filler took the rest.
pub const STORE_DISK_MB: u64 = 32;

/// A tmpfs mounted on a shard's store dir. Dropping it unmounts lazily (the shard may
/// still hold files open), also when the run fails.
#[derive(Debug)]
pub struct SmallDisk {
    mount_point: PathBuf,
    filler: PathBuf,
}

impl SmallDisk {
    /// Stops `shard`, moves its store onto a fresh tmpfs of `size_mb` mounted on the same
    /// path, and restarts it on the same data dir.
    pub async fn under_store(shard: &mut ShardProcess, size_mb: u64) -> anyhow::Result<SmallDisk> {
        let name = shard.name().to_string();
        shard.stop().await.with_context(|| format!("stop shard {name} to move its store"))?;
        let store = shard.data_dir().join("store");
        let aside = shard.data_dir().join("store.before-tmpfs");
        std::fs::rename(&store, &aside).with_context(|| format!("move {} aside", store.display()))?;
        std::fs::create_dir(&store).with_context(|| format!("create {}", store.display()))?;
        mount_tmpfs(&store, size_mb)?;
        let disk = SmallDisk { filler: store.join("filler"), mount_point: store };
        copy_dir(&aside, &disk.mount_point).context("copy the store onto the tmpfs")?;
        std::fs::remove_dir_all(&aside).with_context(|| format!("remove {}", aside.display()))?;
        shard.restart().await.with_context(|| format!("restart shard {name} with its store on a tmpfs"))?;
        Ok(disk)
    }

    /// Writes the filler file until the filesystem is full; returns the bytes it took.
    pub fn fill(&self) -> anyhow::Result<u64> {
        let mut file = std::fs::File::create(&self.filler)
            .with_context(|| format!("create the filler {}", self.filler.display()))?;
        let chunk = vec![0u8; 64 << 10];
        let mut written = 0u64;
        // Whole chunks, then small ones for what a partial chunk could not take. Bounded
        // by the filesystem's size: each successful write takes space that never returns.
        for size in [chunk.len(), 512] {
            while file.write_all(&chunk[..size]).is_ok() {
                written += size as u64;
            }
        }
        Ok(written)
    }

    /// Removes the filler: the space is free again.
    pub fn free(&self) -> anyhow::Result<()> {
        std::fs::remove_file(&self.filler).with_context(|| format!("remove the filler {}", self.filler.display()))
    }
}

/// Whether this process may mount a tmpfs (root or CAP_SYS_ADMIN): mounts and unmounts
/// a tiny one, and says why not when it cannot.
pub fn can_mount() -> anyhow::Result<()> {
    let dir = std::env::temp_dir().join(format!("atoll-chaos-mount-probe-{}", std::process::id()));
    std::fs::create_dir_all(&dir).with_context(|| format!("create {}", dir.display()))?;
    let mounted = mount_tmpfs(&dir, 1);
    if mounted.is_ok() {
        let _ = Command::new("umount").arg(&dir).status();
    }
    let _ = std::fs::remove_dir(&dir);
    mounted
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("--lazy").arg(&self.mount_point).status();
    }
}

fn mount_tmpfs(at: &Path, size_mb: u64) -> anyhow::Result<()> {
    let output = Command::new("mount")
        .args(["-t", "tmpfs", "-o", &format!("size={size_mb}m"), "tmpfs"])
        .arg(at)
        .output()
        .context("run mount")?;
    anyhow::ensure!(
        output.status.success(),
        "mount a {size_mb} MB tmpfs on {} (the disk-full scenario needs root or CAP_SYS_ADMIN): {}",
        at.display(),
        String::from_utf8_lossy(&output.stderr).trim()
    );
    Ok(())
}

/// Copies the files of `from` (RocksDB's dir: files only, no subdirectories) into `to`.
fn copy_dir(from: &Path, to: &Path) -> anyhow::Result<()> {
    for entry in std::fs::read_dir(from).with_context(|| format!("read {}", from.display()))? {
        let entry = entry?;
        let target = to.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            std::fs::create_dir(&target)?;
            copy_dir(&entry.path(), &target)?;
        } else {
            std::fs::copy(entry.path(), &target).with_context(|| format!("copy {}", entry.path().display()))?;
        }
    }
    Ok(())
}
