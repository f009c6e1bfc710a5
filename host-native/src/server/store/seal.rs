//! A collection's background work: seals (and the wait that holds writes back while too many
//! points are unsealed), merges on their own lower-priority threads, and the swap that makes
//! each durable (`docs/format.md`, "The native host's collection folder").

use std::fs;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use shoal_core::{Collection, Kernels, SealedSegment};

use super::{MANIFEST, Store, io_err, segment_storage};
use crate::server::ApiError;
use crate::server::wal::WalWriter;
use crate::storage::{BuildError, FileAlloc, SegmentFile, build_file, write_atomic};

impl Store {
    /// Holds a write back while [`UNSEALED_SEALS`] seals' worth of points wait to be sealed,
    /// so writes faster than seals cannot fill memory with unsealed points: the write rate
    /// settles at what the seals sustain. A write held back for [`SEAL_WAIT`] (seals failing,
    /// or slower than that) is refused with a 503; one of a deleted collection with a 404.
    pub(super) fn wait_for_seal(self: &Arc<Self>) -> Result<(), ApiError> {
        let limit = self.opts.seal_rows.saturating_mul(UNSEALED_SEALS);
        let unsealed = self.unsealed.load(Ordering::Relaxed);
        if unsealed < limit {
            return Ok(());
        }
        self.maybe_seal(unsealed);
        let deadline = Instant::now() + SEAL_WAIT;
        let (lock, cv) = &self.seal_started;
        let mut guard = lock.lock().expect("seal wait lock poisoned");
        while self.unsealed.load(Ordering::Relaxed) >= limit {
            if self.dropped.load(Ordering::Acquire) {
                return Err(ApiError::not_found(&self.name));
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(ApiError::unavailable(format!(
                    "collection {}: {} points wait to be sealed and no seal has taken them for {} s; retry later",
                    self.name,
                    self.unsealed.load(Ordering::Relaxed),
                    SEAL_WAIT.as_secs()
                )));
            }
            // A short timeout too: a seal that starts between the check and the wait is seen,
            // and one that failed or stopped is started again.
            guard = cv.wait_timeout(guard, left.min(Duration::from_millis(200))).expect("seal wait lock poisoned").0;
            drop(guard);
            self.maybe_seal(self.unsealed.load(Ordering::Relaxed));
            guard = lock.lock().expect("seal wait lock poisoned");
        }
        Ok(())
    }

    /// Wakes the writers [`wait_for_seal`](Self::wait_for_seal) holds back, to look again.
    pub(super) fn wake_writers(&self) {
        let _wake = self.seal_started.0.lock().expect("seal wait lock poisoned");
        self.seal_started.1.notify_all();
    }

    pub(super) fn maybe_seal(self: &Arc<Self>, unsealed: u64) {
        // A seal writes only the unsealed points (merges combine segments later), so a fixed
        // threshold keeps the exact-scanned unsealed part small.
        if unsealed >= self.opts.seal_rows && !self.sealing.swap(true, Ordering::AcqRel) {
            let me = Arc::clone(self);
            std::thread::spawn(move || {
                // Writes that came in while sealing may have filled another seal already.
                loop {
                    if let Err(e) = me.seal() {
                        eprintln!("shoal: collection {}: background seal failed: {}", me.name, e.message);
                        break;
                    }
                    me.maybe_merge();
                    if me.unsealed.load(Ordering::Relaxed) < me.opts.seal_rows || me.dropped.load(Ordering::Acquire) {
                        break;
                    }
                }
                me.sealing.store(false, Ordering::Release);
                // A write that found `sealing` still set just before it was cleared started
                // nothing; writers held back retry too (`wait_for_seal`).
                if !me.dropped.load(Ordering::Acquire) {
                    me.maybe_seal(me.unsealed.load(Ordering::Relaxed));
                }
            });
        }
    }

    /// Starts a background merge when the merge policy asks for one and none is running; it
    /// merges until the policy asks for nothing more (or a merge fails: logged, retried after
    /// the next seal).
    pub fn maybe_merge(self: &Arc<Self>) {
        if self.read().next_merge().is_none() || self.merging.swap(true, Ordering::AcqRel) {
            return;
        }
        let me = Arc::clone(self);
        std::thread::spawn(move || {
            let mut failed = false;
            loop {
                // Not `while let`: the read guard would live through the merge's swap.
                let next = me.read().next_merge();
                let Some(positions) = next else { break };
                if me.dropped.load(Ordering::Acquire) {
                    break;
                }
                if let Err(e) = me.merge(&positions) {
                    eprintln!("shoal: collection {}: background merge failed: {}", me.name, e.message);
                    failed = true;
                    break;
                }
            }
            me.merging.store(false, Ordering::Release);
            // A seal that finished while this thread was stopping found `merging` set. (Not
            // after a failure: the same merge would fail again at once, forever; the next
            // seal retries it.)
            if !failed && !me.dropped.load(Ordering::Acquire) {
                me.maybe_merge();
            }
        });
    }

    /// Seals everything logged so far into a new segment at the end of the set and writes the
    /// manifest; searches and writes continue meanwhile. Returns whether there was anything
    /// to seal.
    pub fn seal(&self) -> Result<bool, ApiError> {
        let _one = self.seal_lock.lock().expect("seal lock poisoned");
        // 1. Close the current log generation (new writes go to the next) and take the unsealed
        //    rows: writers apply under the log lock, so they are exactly what the closed logs hold.
        let snap_next = {
            let mut wal = self.lock_wal()?;
            // Nothing logged since the manifest: its `wal` is this (empty) log.
            if wal.is_empty() && wal.generation() <= self.manifest_wal.load(Ordering::Acquire) {
                return Ok(false);
            }
            // Relaxed logs are not synced per write: the closed log must be whole on disk
            // before a later log exists (recovery refuses a torn log that is not the last).
            wal.sync().map_err(|e| io_err(wal.file_path(), "fsync", e))?;
            let g = wal.generation();
            *wal = WalWriter::create(&self.dir, g + 1, self.opts.sync)
                .map_err(|e| io_err(&self.dir, "create log in", e))?;
            let taken = self.unsealed.swap(0, Ordering::Relaxed);
            self.wake_writers();
            (self.read().seal_snapshot(), g + 1, taken)
        };
        let (snap, next, taken) = snap_next;
        let sealed = (|| {
            // 2. Build and write the segment, without any lock.
            let built = match &snap {
                Some(s) if !s.is_empty() => {
                    Some(seal_pool().install(|| self.write_segment(|k, alloc| s.build_into(k, alloc)))?)
                }
                _ => None,
            };
            if self.dropped.load(Ordering::Acquire) {
                return Ok(());
            }
            // 3. Swap it in (deletes made meanwhile carried over) and write the manifest.
            let (seg, tmp) = built.map_or((None, None), |(s, t)| {
                let crc = s.table_crc();
                (Some(s), Some((t, crc)))
            });
            self.swap(Some(next), tmp, |col| {
                if let Some(snap) = snap {
                    col.attach_sealed(snap, seg);
                }
                Ok(())
            })
        })();
        if sealed.is_err() {
            // The rows stay unsealed (the next seal takes them again): count them again, so
            // writes keep waiting for a seal rather than filling memory.
            self.unsealed.fetch_add(taken, Ordering::Relaxed);
        }
        sealed.map(|()| true)
    }

    /// Merges the segments at `positions` into one (in the background: searches and writes
    /// continue) and writes the manifest. A damaged input is a typed error and changes nothing.
    pub fn merge(&self, positions: &[usize]) -> Result<(), ApiError> {
        let _one = self.merge_lock.lock().expect("merge lock poisoned");
        let snap = self.read().merge_snapshot(positions).map_err(ApiError::core)?;
        let (seg, tmp) = merge_pool().install(|| self.write_segment(|k, alloc| snap.build_into(k, alloc)))?;
        let crc = seg.table_crc();
        self.swap(None, Some((tmp, crc)), |col| col.attach_merged(snap, seg).map(|_| ()).map_err(ApiError::core))
    }

    /// Builds a segment into a new temporary file in the folder (written in place through a
    /// writable mapping: the segment is never held in memory as a whole), syncs it, and
    /// returns it opened (mapped, or read into RAM) and the file's path.
    fn write_segment(
        &self,
        build: impl FnOnce(&Kernels, &mut FileAlloc<'_>) -> Result<SegmentFile, shoal_core::Error>,
    ) -> Result<(Arc<SealedSegment>, PathBuf), ApiError> {
        let kernels = self.read().kernels();
        let tmp = self.dir.join(format!("new-{}.tmp", self.temp.fetch_add(1, Ordering::Relaxed)));
        build_file(&tmp, |alloc| build(&kernels, alloc)).map_err(|e| match e {
            BuildError::Core(e) => ApiError::core(e),
            BuildError::Host(e) => ApiError::internal(e.to_string()),
        })?;
        let opened = segment_storage(&tmp, self.meta.on_disk).and_then(SealedSegment::open).map_err(ApiError::core);
        match opened {
            Ok(seg) => Ok((Arc::new(seg), tmp)),
            Err(e) => {
                let _ = fs::remove_file(&tmp);
                Err(e)
            }
        }
    }

    /// Changes the set under the collection's write lock, then makes it durable: the new
    /// segment's file (`tmp`, the segment that `change` adds, which gets the collection's next
    /// number) renamed to its set name first, then the new live-rows files, the manifest (with
    /// `wal`, or the current one), and only then removes the files no manifest names any more.
    /// The log is synced first, so the manifest never holds the effect of a write the log could
    /// still lose (relaxed durability).
    fn swap(
        &self,
        wal: Option<u64>,
        tmp: Option<(PathBuf, u32)>,
        change: impl FnOnce(&mut Collection) -> Result<(), ApiError>,
    ) -> Result<(), ApiError> {
        let _set = self.set_lock.lock().expect("set lock poisoned");
        if self.dropped.load(Ordering::Acquire) {
            return Ok(());
        }
        let wal = wal.unwrap_or_else(|| self.manifest_wal.load(Ordering::Acquire));
        // Manifests are written only under `set_lock`, so the number read here is the one
        // the change gives the new segment: its file gets its name before memory changes.
        if let Some((tmp, crc)) = &tmp {
            let number = self.read().next_segment_number();
            let path = self.dir.join(shoal_core::set::segment_name(number, *crc));
            fs::rename(tmp, &path).map_err(|e| io_err(tmp, "rename", e))?;
            fs::File::open(&self.dir).and_then(|d| d.sync_all()).map_err(|e| io_err(&self.dir, "fsync", e))?;
        }
        let cp = {
            let mut log = self.wal.lock().expect("log lock poisoned");
            log.sync().map_err(|e| io_err(log.file_path(), "fsync", e))?;
            let mut col = self.col.write().expect("collection lock poisoned");
            change(&mut col)?;
            col.checkpoint(Some(wal))
        };
        for (name, bytes) in &cp.live_files {
            write_atomic(&self.dir.join(name), bytes).map_err(|e| ApiError::internal(e.to_string()))?;
        }
        write_atomic(&self.dir.join(MANIFEST), &cp.manifest.to_json())
            .map_err(|e| ApiError::internal(e.to_string()))?;
        self.col.write().expect("collection lock poisoned").checkpoint_written(&cp);
        self.manifest_wal.store(wal, Ordering::Release);
        self.collect_garbage(Some(&cp.manifest), wal, false);
        Ok(())
    }
}

/// The threads seals build on (`--threads`, or every core), in a pool of their own at normal
/// priority: a query's segments are searched in parallel on rayon's global pool, and on a
/// shared pool a query's tasks would queue behind a seal's (k-means runs for seconds).
fn seal_pool() -> &'static rayon::ThreadPool {
    static POOL: std::sync::OnceLock<rayon::ThreadPool> = std::sync::OnceLock::new();
    POOL.get_or_init(|| background_pool("shoal-seal", false))
}

/// The threads merges build on, as many as the seals', in a pool of their own and at a lower
/// scheduling priority (the merge throttle): seals — which writes wait for — and searches take
/// the cores first, merges use what they leave. On one shared pool a seal's tasks queued
/// behind a large merge's for minutes; at equal priority a merge halved the ingest rate.
fn merge_pool() -> &'static rayon::ThreadPool {
    static POOL: std::sync::OnceLock<rayon::ThreadPool> = std::sync::OnceLock::new();
    POOL.get_or_init(|| background_pool("shoal-merge", true))
}

/// A pool of `--threads` threads (or one per core) named `name-i`, at nice 10 if `lower`.
fn background_pool(name: &'static str, lower: bool) -> rayon::ThreadPool {
    let cores = crate::commands::threads()
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get));
    let mut builder =
        rayon::ThreadPoolBuilder::new().num_threads(cores.max(1)).thread_name(move |i| format!("{name}-{i}"));
    if lower {
        builder = builder.start_handler(|_| lower_priority());
    }
    builder.build().expect("the background threads start")
}

/// Lowers the calling thread's scheduling priority (nice 10). Advice only: without it merges
/// share the cores equally.
fn lower_priority() {
    #[cfg(target_os = "linux")]
    // SAFETY: `setpriority` reads no memory of ours; on Linux `PRIO_PROCESS` with the
    // thread's own id changes that one thread.
    unsafe {
        let _ = libc::setpriority(libc::PRIO_PROCESS, libc::gettid() as libc::id_t, 10);
    }
}

/// Seals' worth of unsealed points (`--seal-rows` each) at which writes wait for a seal.
const UNSEALED_SEALS: u64 = 2;
/// How long a write waits for a seal before it is refused.
const SEAL_WAIT: Duration = Duration::from_secs(120);
