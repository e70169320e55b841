//! In-process integration tests of the store over a real RocksDB in a temp dir.

use bytes::Bytes;
use rand::{Rng, SeedableRng};
use std::collections::BTreeMap;
use std::time::Duration;
use store::{EventKind, ListOptions, Precondition, Store, StoreError, StoreOptions};

fn open(dir: &std::path::Path) -> Store {
    let options = StoreOptions { compaction_interval: Duration::from_secs(3600), ..StoreOptions::default() };
    Store::open(dir, options).expect("open store")
}

fn list_all(store: &Store, prefix: &str, at_rv: Option<u64>) -> Result<Vec<(String, String)>, StoreError> {
    let options = ListOptions { prefix: prefix.as_bytes().to_vec(), at_rv, ..ListOptions::default() };
    let page = store.list(&options, |_, _| true)?;
    Ok(page
        .items
        .into_iter()
        .map(|(k, v)| (String::from_utf8(k.to_vec()).unwrap(), String::from_utf8(v.value.to_vec()).unwrap()))
        .collect())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn preconditions_and_rv_ordering() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let a = store.put("r/a", "1", Precondition::MustNotExist).await.unwrap();
    assert_eq!(store.put("r/a", "x", Precondition::MustNotExist).await, Err(StoreError::AlreadyExists));
    let b = store.put("r/a", "2", Precondition::ResourceVersion(a.rv)).await.unwrap();
    assert!(b.rv > a.rv);
    assert_eq!(b.prev.unwrap().value, Bytes::from_static(b"1"));
    assert_eq!(
        store.put("r/a", "3", Precondition::ResourceVersion(a.rv)).await,
        Err(StoreError::Conflict { expected: a.rv, actual: b.rv })
    );
    assert_eq!(store.delete("r/zz", Precondition::MustExist).await, Err(StoreError::NotFound));
    let d = store.delete("r/a", Precondition::ResourceVersion(b.rv)).await.unwrap();
    assert!(d.rv > b.rv);
    assert_eq!(store.get(b"r/a").unwrap(), None);
    assert_eq!(store.current_rv(), d.rv);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_writes_share_batches_and_get_unique_increasing_rvs() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let mut tasks = Vec::new();
    for i in 0..400 {
        let store = store.clone();
        tasks.push(tokio::spawn(async move { store.put(format!("k/{i:04}"), "v", Precondition::MustNotExist).await }));
    }
    let mut rvs = Vec::new();
    for t in tasks {
        rvs.push(t.await.unwrap().unwrap().rv);
    }
    rvs.sort_unstable();
    rvs.dedup();
    assert_eq!(rvs.len(), 400, "every write gets its own rv");
    assert_eq!(*rvs.last().unwrap(), store.current_rv());
    assert_eq!(store.metrics().ops_committed.get(), 400);
    // 400 writes in flight at once, one writer: while it commits one batch the others
    // queue up and go together. One batch per write would mean no group commit at all.
    let batches = store.metrics().batches.get();
    assert!((1..=200).contains(&batches), "400 writes took {batches} batches: fewer than two writes per batch");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reopen_keeps_every_acknowledged_write_and_the_rv_counter() {
    let dir = tempfile::tempdir().unwrap();
    let last = {
        let store = open(dir.path());
        for i in 0..50 {
            store.put(format!("k/{i}"), format!("v{i}"), Precondition::None).await.unwrap();
        }
        store.delete("k/7", Precondition::MustExist).await.unwrap().rv
    };
    // The writer thread holds the DB until its queue closes; give it a moment to drop.
    let store = loop {
        match Store::open(dir.path(), StoreOptions::default()) {
            Ok(store) => break store,
            Err(StoreError::Rocks(e)) if e.contains("lock") => tokio::time::sleep(Duration::from_millis(20)).await,
            Err(e) => panic!("reopen: {e}"),
        }
    };
    assert_eq!(store.current_rv(), last);
    assert_eq!(list_all(&store, "k/", None).unwrap().len(), 49);
    let next = store.put("k/new", "x", Precondition::None).await.unwrap();
    assert_eq!(next.rv, last + 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn paged_lists_filter_and_continue() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    for i in 0..10 {
        store.put(format!("p/{i}"), format!("{}", i % 2), Precondition::None).await.unwrap();
    }
    store.put("q/0", "0", Precondition::None).await.unwrap();
    let mut options = ListOptions { prefix: b"p/".to_vec(), limit: Some(2), ..ListOptions::default() };
    let mut seen = Vec::new();
    let page = store.list(&options, |_, v| v.value == Bytes::from_static(b"0")).unwrap();
    let first_rv = page.rv;
    seen.extend(page.items.iter().map(|(k, _)| k.clone()));
    let mut next = page.next;
    // Writes between pages must not show up in later pages. They sort after the continue
    // key, so a continue that ignored the first page's revision would return them: a new
    // matching key, and a matching key changed to no longer match.
    assert!(next.as_deref().is_some_and(|key| key < b"p/5".as_slice()), "the first page ends before p/5: {next:?}");
    store.put("p/5a", "0", Precondition::None).await.unwrap();
    store.put("p/6", "1", Precondition::None).await.unwrap();
    store.put("p/00", "0", Precondition::None).await.unwrap();
    while let Some(start) = next {
        options.start = Some(start);
        options.at_rv = Some(first_rv);
        let page = store.list(&options, |_, v| v.value == Bytes::from_static(b"0")).unwrap();
        assert_eq!(page.rv, first_rv);
        seen.extend(page.items.iter().map(|(k, _)| k.clone()));
        next = page.next;
    }
    let seen: Vec<_> = seen.iter().map(|k| String::from_utf8(k.to_vec()).unwrap()).collect();
    assert_eq!(seen, vec!["p/0", "p/2", "p/4", "p/6", "p/8"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unfiltered_pages_count_what_remains_at_their_revision() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    for i in 0..7 {
        store.put(format!("p/{i}"), "v", Precondition::None).await.unwrap();
    }
    store.put("q/0", "v", Precondition::None).await.unwrap();
    let mut options =
        ListOptions { prefix: b"p/".to_vec(), limit: Some(3), count_remaining: true, ..ListOptions::default() };
    let first = store.list(&options, |_, _| true).unwrap();
    assert_eq!(first.remaining, Some(4));
    // Writes after the first page do not change what the old revision holds.
    store.put("p/9", "v", Precondition::None).await.unwrap();
    options.start = first.next.clone();
    options.at_rv = Some(first.rv);
    let second = store.list(&options, |_, _| true).unwrap();
    assert_eq!(second.remaining, Some(1));
    options.start = second.next.clone();
    let last = store.list(&options, |_, _| true).unwrap();
    assert_eq!((last.items.len(), last.remaining, last.next), (1, None, None));
}

/// A generator seeded from `ATOLL_SEED` or at random; the seed is printed so a failure
/// can be replayed.
fn seeded_rng() -> (u64, rand::rngs::StdRng) {
    let seed: u64 = std::env::var("ATOLL_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(rand::random);
    println!("seed {seed}");
    (seed, rand::rngs::StdRng::seed_from_u64(seed))
}

/// Random ops against a model: the list at every past resourceVersion equals the model's
/// state at that version. Replay a failure with ATOLL_SEED=<seed>.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lists_at_every_past_rv_match_a_model() {
    let (seed, mut rng) = seeded_rng();
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let mut model: BTreeMap<String, String> = BTreeMap::new();
    let mut history: Vec<(u64, BTreeMap<String, String>)> = vec![(0, BTreeMap::new())];
    for step in 0..300 {
        let key = format!("m/{}", rng.gen_range(0..20));
        let rv = if rng.gen_bool(0.3) && model.contains_key(&key) {
            model.remove(&key);
            store.delete(key, Precondition::MustExist).await.unwrap().rv
        } else {
            let value = format!("v{step}");
            model.insert(key.clone(), value.clone());
            store.put(key, value, Precondition::None).await.unwrap().rv
        };
        if rng.gen_bool(0.1) {
            store.put(format!("other/{step}"), "x", Precondition::None).await.unwrap();
        }
        history.push((rv, model.clone()));
    }
    for (rv, expected) in &history {
        let listed: BTreeMap<_, _> = list_all(&store, "m/", Some(*rv)).unwrap().into_iter().collect();
        assert_eq!(&listed, expected, "seed {seed}, rv {rv}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_resumes_from_log_then_goes_live_and_compaction_gives_gone() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let first = store.put("w/a", "1", Precondition::None).await.unwrap().rv;
    store.put("x/unrelated", "1", Precondition::None).await.unwrap();
    store.put("w/a", "2", Precondition::None).await.unwrap();
    store.delete("w/a", Precondition::MustExist).await.unwrap();

    let mut watch = store.watch("w/", first - 1).unwrap();
    let kinds: Vec<_> = [watch.next().await.unwrap(), watch.next().await.unwrap(), watch.next().await.unwrap()]
        .iter()
        .map(|e| e.kind)
        .collect();
    assert_eq!(kinds, vec![EventKind::Added, EventKind::Modified, EventKind::Deleted]);
    let writer = store.clone();
    let write = tokio::spawn(async move { writer.put("w/live", "1", Precondition::None).await.unwrap() });
    let live = tokio::time::timeout(Duration::from_secs(10), watch.next()).await.unwrap().unwrap();
    assert_eq!(&live.key[..], b"w/live");
    // A watcher may see a change before its writer is answered; wait for the answer.
    write.await.unwrap();
    assert_eq!(watch.progress_rv(), store.current_rv());

    store.compact_keeping(1).unwrap();
    assert!(matches!(store.watch("w/", first), Err(StoreError::Gone { .. })));
    assert!(matches!(list_all(&store, "w/", Some(first)), Err(StoreError::Gone { .. })));
    assert!(matches!(
        list_all(&store, "w/", Some(store.current_rv() + 5)),
        Err(StoreError::TooLargeResourceVersion { .. })
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lagging_watcher_catches_up_from_the_log() {
    let dir = tempfile::tempdir().unwrap();
    let options =
        StoreOptions { event_buffer: 16, compaction_interval: Duration::from_secs(3600), ..StoreOptions::default() };
    let store = Store::open(dir.path(), options).unwrap();
    let mut watch = store.watch("l/", 0).unwrap();
    // Go live first, then overflow the 16-event buffer.
    store.put("l/0", "x", Precondition::None).await.unwrap();
    watch.next().await.unwrap();
    for i in 1..200 {
        store.put(format!("l/{i}"), "x", Precondition::None).await.unwrap();
    }
    let mut last = 0;
    for _ in 1..200 {
        let event = watch.next().await.unwrap();
        assert!(event.rv > last, "events stay ordered");
        last = event.rv;
    }
    assert_eq!(last, store.current_rv());
}

/// Random puts and deletes on a few keys; a watch replayed from the change log returns
/// every change with exactly the value it wrote and the value it replaced (values are
/// stored once and found again through the successor index). Replay with ATOLL_SEED.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replayed_watches_return_the_values_each_change_wrote() {
    let (seed, mut rng) = seeded_rng();
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let mut model: BTreeMap<String, String> = BTreeMap::new();
    let mut expected = Vec::new();
    for step in 0..200 {
        let key = format!("r/{}", rng.gen_range(0..5));
        let prev = model.get(&key).cloned();
        if prev.is_some() && rng.gen_bool(0.3) {
            model.remove(&key);
            store.delete(key.clone(), Precondition::MustExist).await.unwrap();
            expected.push((EventKind::Deleted, key, None, prev));
        } else {
            let value = format!("v{step}");
            model.insert(key.clone(), value.clone());
            store.put(key.clone(), value.clone(), Precondition::None).await.unwrap();
            let kind = if prev.is_some() { EventKind::Modified } else { EventKind::Added };
            expected.push((kind, key, Some(value), prev));
        }
    }
    let mut watch = store.watch("r/", 0).unwrap();
    for (kind, key, value, prev) in expected {
        let event = watch.next().await.unwrap();
        let text = |b: &Bytes| String::from_utf8(b.to_vec()).unwrap();
        assert_eq!(event.kind, kind, "seed {seed}");
        assert_eq!(text(&event.key), key, "seed {seed}");
        assert_eq!(event.value.as_ref().map(text), value, "seed {seed} rv {}", event.rv);
        assert_eq!(event.prev.as_ref().map(|p| text(&p.value)), prev, "seed {seed} rv {}", event.rv);
    }
}

/// A tmpfs of `size_mb` mounted on a fresh temp dir, unmounted (lazily, so an open file
/// cannot keep it) when dropped, also when the test fails.
struct SmallDisk {
    dir: tempfile::TempDir,
}

impl SmallDisk {
    /// `None` (with the reason printed) where this process may not mount, say without
    /// root or CAP_SYS_ADMIN: the test then has nothing to fill.
    fn mount(size_mb: u64) -> Option<SmallDisk> {
        let dir = tempfile::tempdir().unwrap();
        let status = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size_mb}m"), "tmpfs"])
            .arg(dir.path())
            .status();
        match status {
            Ok(status) if status.success() => Some(SmallDisk { dir }),
            other => {
                eprintln!("SKIPPED: cannot mount a tmpfs here ({other:?}); run as root to test a full disk");
                None
            }
        }
    }

    /// Writes a filler file until the disk is full.
    fn fill(&self) -> std::path::PathBuf {
        use std::io::Write;
        let path = self.dir.path().join("filler");
        let mut file = std::fs::File::create(&path).unwrap();
        let chunk = vec![0u8; 64 << 10];
        while file.write_all(&chunk).is_ok() {}
        // What a partial chunk could not take.
        while file.write_all(&chunk[..512]).is_ok() {}
        path
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount").arg("--lazy").arg(self.dir.path()).status();
    }
}

/// A full disk makes writes fail with [`StoreError::NoSpace`] and leaves reads and every
/// acknowledged write intact; once space is freed, reopening the store (a shard restart)
/// takes writes again, with nothing lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_disk_refuses_writes_keeps_reads_and_a_reopen_takes_writes_again() {
    // Smaller than RocksDB's WAL preallocation (70 MB), which on tmpfs would reserve
    // room for writes that the filler cannot take away.
    let Some(disk) = SmallDisk::mount(32) else { return };
    let store = open(&disk.dir.path().join("store"));
    let mut acknowledged = BTreeMap::new();
    for i in 0..20 {
        let committed = store.put(format!("d/{i}"), format!("v{i}"), Precondition::None).await.unwrap();
        acknowledged.insert(format!("d/{i}"), (committed.rv, format!("v{i}")));
    }
    let filler = disk.fill();

    // Writes fail, and say why; a bounded number of attempts, each with a large value
    // that cannot fit what little the filler left.
    let big = "x".repeat(1 << 20);
    let mut refusal = None;
    for attempt in 0..50 {
        match store.put(format!("full/{attempt}"), big.clone(), Precondition::None).await {
            Err(error) => {
                refusal = Some(error);
                break;
            }
            Ok(committed) => {
                acknowledged.insert(format!("full/{attempt}"), (committed.rv, big.clone()));
            }
        }
    }
    let refusal = refusal.expect("a write failed on the full disk");
    assert!(matches!(refusal, StoreError::NoSpace(_)), "{refusal:?}");
    let refused = store.put("full/small", "s", Precondition::None).await;
    assert!(matches!(refused, Err(StoreError::NoSpace(_))), "writes keep failing while full: {refused:?}");

    // Reads work and nothing acknowledged is lost or changed.
    for (key, (rv, value)) in &acknowledged {
        let stored = store.get(key.as_bytes()).unwrap().unwrap_or_else(|| panic!("{key} lost"));
        assert_eq!((stored.rv, stored.value.as_ref()), (*rv, value.as_bytes()), "{key}");
    }

    // Space returns, but RocksDB stays in its background-error state: ENOSPC on the WAL
    // is a hard error that it does not recover from by itself (and the Rust binding has no
    // DB::Resume), so writes keep failing, clearly, until the store is opened again.
    std::fs::remove_file(filler).unwrap();
    let still = store.put("after/space", "early", Precondition::None).await;
    assert!(matches!(still, Err(StoreError::NoSpace(_))), "{still:?}");
    drop(store);
    let store = loop {
        match Store::open(&disk.dir.path().join("store"), StoreOptions::default()) {
            Ok(store) => break store,
            Err(StoreError::Rocks(e)) if e.contains("lock") => tokio::time::sleep(Duration::from_millis(20)).await,
            Err(e) => panic!("reopen after freeing space: {e}"),
        }
    };
    let recovered = store.put("after/space", "back", Precondition::None).await.expect("writes succeed after reopening");
    assert!(recovered.rv > acknowledged.values().map(|(rv, _)| *rv).max().unwrap());
    for (key, (rv, value)) in &acknowledged {
        let stored = store.get(key.as_bytes()).unwrap().unwrap_or_else(|| panic!("{key} lost after reopening"));
        assert_eq!((stored.rv, stored.value.as_ref()), (*rv, value.as_bytes()), "{key} after reopening");
    }
}

/// Hot keys against a real database: every acknowledged write is what the next `get_hot`
/// returns, while other tasks keep loading the same keys (the load/write race the hot
/// keys' lock must close), and a deleted key reads as absent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hot_keys_return_every_acknowledged_write_while_readers_reload_them() {
    let dir = tempfile::tempdir().unwrap();
    let options =
        StoreOptions { compaction_interval: Duration::from_secs(3600), hot_keys: 2, ..StoreOptions::default() };
    let store = Store::open(dir.path(), options).unwrap();
    let keys = ["hot/a", "hot/b", "hot/c"];
    for key in keys {
        store.put(key, "0", Precondition::MustNotExist).await.unwrap();
    }
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let readers: Vec<_> = (0..2)
        .map(|_| {
            let (store, stop) = (store.clone(), stop.clone());
            tokio::task::spawn_blocking(move || {
                let mut reads = 0u64;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    for key in keys {
                        assert!(store.get_hot(key.as_bytes()).unwrap().is_some());
                        reads += 1;
                    }
                }
                reads
            })
        })
        .collect();
    for round in 1..=300u32 {
        for key in keys {
            let written = store.put(key, round.to_string(), Precondition::MustExist).await.unwrap();
            let read = store.get_hot(key.as_bytes()).unwrap().expect("the key exists");
            assert!(
                read.rv >= written.rv,
                "{key}: read rv {} after the write at {} was acknowledged",
                read.rv,
                written.rv
            );
            assert_eq!(read.value, Bytes::from(round.to_string()), "{key} after round {round}");
        }
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for reader in readers {
        assert!(reader.await.unwrap() > 0, "the readers raced the writes");
    }
    store.delete("hot/a", Precondition::MustExist).await.unwrap();
    assert_eq!(store.get_hot(b"hot/a").unwrap(), None);
    store.put("hot/a", "again", Precondition::MustNotExist).await.unwrap();
    assert_eq!(store.get_hot(b"hot/a").unwrap().unwrap().value, Bytes::from_static(b"again"));
}
