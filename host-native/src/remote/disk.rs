//! A cache of remote bytes on local disk, shared by every object a process reads by ranges and
//! kept across restarts: a reader that starts again reads from disk what it fetched before.
//!
//! Bytes are cached per *object version*: an object's name with the identity its source
//! pinned at open ([`RangeSource::version`]: a strong ETag and the length). A replaced object
//! has another version, so its old bytes are never served for it; a source that pins no strong
//! identity (a local file, a server without ETags) is not cached, and neither is an object's
//! first read (the one that pins its version: the open's bootstrap request, sent at every
//! open). Each version's folder (named by a hash of its name and version, which a file
//! `object` in it spells out) holds *extents*: files named by their first byte's offset, each
//! holding the bytes then a CRC-32C of the name, version, offset and bytes. An extent that
//! fails its CRC (a torn write, a damaged disk, another object's) is deleted and its bytes
//! fetched again: a damaged cache costs requests, never a wrong answer. Bytes that pass their
//! CRC here but fail the segment's own (a fault in transit, kept) are replaced: a search whose
//! bytes fail its checksums runs again reading past the cache ([`RangeSource::read_counted`]).
//!
//! Writes go to a temporary file renamed into place (readers never see half an extent), and
//! are best effort: a full or read-only disk makes the reader fetch, not fail. When the cache
//! holds more than its budget (or a write fails), the extents least recently read go first
//! (file times), with temporary files left by a process that died.

use std::collections::{BTreeMap, HashMap};
use std::io::Write as _;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use super::{RangeSource, RemoteError};
use crate::HostError;

/// Bytes after an extent's data: the CRC-32C of its offset (u64 LE) and its data.
const TRAILER: u64 = 4;

/// What the cache keeps after it goes over its budget: this share of it (percent), so that
/// eviction runs once per many writes.
const KEEP_PERCENT: u64 = 90;

/// Temporary files older than this are a dead writer's, deleted when the cache is trimmed.
const STALE_TMP: std::time::Duration = std::time::Duration::from_secs(3600);

/// The disk cache: a folder and a budget in bytes.
#[derive(Debug)]
pub struct DiskCache {
    dir: PathBuf,
    budget: u64,
    /// The extents known and the count, locked while a trim counts and deletes: a write that
    /// lands meanwhile is added to the count the trim leaves, never lost from it.
    state: Mutex<State>,
    /// A counter for temporary file names.
    seq: AtomicU64,
}

#[derive(Debug, Default)]
struct State {
    /// Per object version's folder name: its extents (start → end), or `None` when the folder
    /// belongs to another object (a hash collision: that object is not cached).
    objects: HashMap<String, Option<BTreeMap<u64, u64>>>,
    /// Bytes on disk (extents and trailers), as last counted plus what was written since.
    total: u64,
}

/// 64-bit FNV-1a: a stable hash of an object version (folder names must not change with the
/// compiler).
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3))
}

/// An extent's CRC: of its object version (`spelled`: name and version), offset and bytes.
fn extent_crc(spelled: &str, start: u64, data: &[u8]) -> u32 {
    let head = crc32c::crc32c_append(crc32c::crc32c(spelled.as_bytes()), &start.to_le_bytes());
    crc32c::crc32c_append(head, data)
}

/// An object version as its folder's `object` file spells it.
fn spelled(name: &str, version: &str) -> String {
    format!("{name}\n{version}\n")
}

impl DiskCache {
    /// Opens (creating it) the cache in `dir`, keeping at most `budget` bytes there (what
    /// this process counts: processes sharing the folder each keep to their own count).
    pub fn open(dir: &Path, budget: u64) -> Result<Arc<DiskCache>, HostError> {
        std::fs::create_dir_all(dir).map_err(|e| HostError::io(dir, "create the cache folder", e))?;
        let total = extents_on_disk(dir).iter().map(|x| x.len).sum();
        let state = State { total, ..State::default() };
        let cache = DiskCache { dir: dir.to_path_buf(), budget, state: Mutex::new(state), seq: AtomicU64::new(0) };
        // A folder left over its budget (a smaller one given now): trimmed at once.
        if total > budget {
            cache.evict(true);
        }
        Ok(Arc::new(cache))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A number for a temporary file name, new in this cache.
    fn next_seq(&self) -> u64 {
        self.seq.fetch_add(1, Ordering::Relaxed)
    }

    /// The folder of `name` at `version`, its extents loaded (`None`: another object's).
    fn folder(&self, state: &mut State, spelled: &str) -> Option<String> {
        let folder = format!("{:016x}", fnv1a(spelled.as_bytes()));
        if !state.objects.contains_key(&folder) {
            let path = self.dir.join(&folder);
            let extents = match std::fs::read(path.join("object")) {
                Ok(bytes) if bytes == spelled.as_bytes() => Some(list_extents(&path)),
                Ok(_) => None,
                Err(_) => {
                    // New (or its `object` file lost): claim it.
                    let _ = std::fs::create_dir_all(&path);
                    let written = write_atomic(&path, "object", self.next_seq(), spelled.as_bytes());
                    written.ok().map(|()| list_extents(&path))
                }
            };
            state.objects.insert(folder.clone(), extents);
        }
        state.objects[&folder].is_some().then_some(folder)
    }

    /// The parts of `range` the cache holds for `folder`: `(start, end)` of each extent
    /// overlapping it, in order.
    fn overlapping(state: &State, folder: &str, range: &Range<u64>) -> Vec<(u64, u64)> {
        let Some(Some(extents)) = state.objects.get(folder) else { return Vec::new() };
        // The extent that starts at or before `range.start`, then those that start inside it.
        let before = extents.range(..=range.start).next_back().map(|(&s, &e)| (s, e));
        before
            .into_iter()
            .chain(extents.range(range.start + 1..range.end).map(|(&s, &e)| (s, e)))
            .filter(|&(s, e)| s < range.end && e > range.start)
            .collect()
    }

    /// Reads the extent of `folder` starting at `start` (ending at `end`), checked; a missing
    /// or damaged one is forgotten (and deleted).
    fn read_extent(&self, folder: &str, spelled: &str, start: u64, end: u64) -> Option<Vec<u8>> {
        let path = self.dir.join(folder).join(start.to_string());
        let mut bytes = std::fs::read(&path).ok();
        let good = bytes.as_ref().is_some_and(|b| {
            b.len() as u64 == end - start + TRAILER && {
                let (data, crc) = b.split_at(b.len() - TRAILER as usize);
                u32::from_le_bytes(crc.try_into().expect("4 bytes")) == extent_crc(spelled, start, data)
            }
        });
        if !good {
            self.remove_extent(folder, start);
            return None;
        }
        // Recently read: evicted last.
        if let Ok(f) = std::fs::File::options().append(true).open(&path) {
            let _ = f.set_modified(SystemTime::now());
        }
        let mut data = bytes.take().expect("checked");
        data.truncate((end - start) as usize);
        Some(data)
    }

    /// Deletes the extent of `folder` at `start` (its file and its entry; under the lock, so
    /// that a trim never counts a file this has taken out of the count).
    fn remove_extent(&self, folder: &str, start: u64) {
        let mut state = self.lock();
        let path = self.dir.join(folder).join(start.to_string());
        let len = std::fs::metadata(&path).map_or(0, |m| m.len());
        let _ = std::fs::remove_file(&path);
        if let Some(Some(extents)) = state.objects.get_mut(folder) {
            extents.remove(&start);
        }
        state.total = state.total.saturating_sub(len);
    }

    /// Keeps `data` (the object's bytes at `start`) as an extent of `folder`.
    fn write_extent(&self, folder: &str, spelled: &str, start: u64, data: &[u8]) {
        if data.is_empty() || data.len() as u64 + TRAILER > self.budget {
            return;
        }
        // (Two gaps of one wave may start at one offset: the longer one stays.)
        let end = start + data.len() as u64;
        if let Some(Some(extents)) = self.lock().objects.get(folder)
            && extents.get(&start).is_some_and(|&e| e >= end)
        {
            return;
        }
        let mut bytes = Vec::with_capacity(data.len() + TRAILER as usize);
        bytes.extend_from_slice(data);
        bytes.extend_from_slice(&extent_crc(spelled, start, data).to_le_bytes());
        if let Err(e) = write_atomic(&self.dir.join(folder), &start.to_string(), self.next_seq(), &bytes) {
            if e.kind() == std::io::ErrorKind::NotFound {
                // The folder went (another process's trim found it empty): claimed again at
                // the next read.
                self.lock().objects.remove(folder);
            } else {
                // A full disk: room made for the next one.
                self.evict(true);
            }
            return;
        }
        let over = {
            let mut state = self.lock();
            if let Some(Some(extents)) = state.objects.get_mut(folder) {
                // (An extent replaced at the same offset: its old length out.)
                let old = extents.insert(start, end).map_or(0, |e| e - start + TRAILER);
                state.total = (state.total + bytes.len() as u64).saturating_sub(old);
            }
            state.total > self.budget
        };
        if over {
            self.evict(false);
        }
    }

    /// Deletes the extents least recently read until the cache holds [`KEEP_PERCENT`] of its
    /// budget (every process's extents: the folder is counted again). Unless `force`d, only
    /// while the count is still over the budget (another write's trim may have run first).
    ///
    /// The count and the deletions happen under the state lock: a write whose file lands
    /// after the count adds its bytes after the trim has set the total (a file that lands
    /// before and is counted twice makes the next trim come early, never late).
    fn evict(&self, force: bool) {
        let mut state = self.lock();
        if !force && state.total <= self.budget {
            return;
        }
        remove_stale(&self.dir, &state);
        let mut all = extents_on_disk(&self.dir);
        all.sort_by_key(|x| x.read);
        let mut total: u64 = all.iter().map(|x| x.len).sum();
        let keep = self.budget / 100 * KEEP_PERCENT;
        for x in all {
            if total <= keep {
                break;
            }
            // (Gone already — another process's trim: removed all the same.)
            let removed = match std::fs::remove_file(self.dir.join(&x.folder).join(x.start.to_string())) {
                Ok(()) => true,
                Err(e) => e.kind() == std::io::ErrorKind::NotFound,
            };
            if removed {
                total -= x.len;
                if let Some(Some(extents)) = state.objects.get_mut(&x.folder) {
                    extents.remove(&x.start);
                }
            }
        }
        state.total = total;
    }
}

/// Deletes temporary files older than [`STALE_TMP`] (a writer that died) and the folders of
/// object versions with no extent left that this process does not read (`state`: a folder it
/// claimed may be empty only until its first write).
fn remove_stale(dir: &Path, state: &State) {
    let Ok(folders) = std::fs::read_dir(dir) else { return };
    for folder in folders.flatten() {
        let ours = folder.file_name().to_str().is_some_and(|name| state.objects.contains_key(name));
        let Ok(entries) = std::fs::read_dir(folder.path()) else { continue };
        let mut extents = 0;
        for e in entries.flatten() {
            let name = e.file_name();
            let name = name.to_str().unwrap_or("");
            if name.starts_with(".tmp-") {
                let old = e.metadata().and_then(|m| m.modified()).ok().and_then(|t| t.elapsed().ok());
                if old.is_some_and(|age| age > STALE_TMP) {
                    let _ = std::fs::remove_file(e.path());
                }
            } else if name != "object" {
                extents += 1;
            }
        }
        if extents == 0 && !ours {
            let _ = std::fs::remove_file(folder.path().join("object"));
            // (Fails, harmlessly, while another process writes there.)
            let _ = std::fs::remove_dir(folder.path());
        }
    }
}

/// Writes `bytes` to `dir/name` through a temporary file renamed into place.
fn write_atomic(dir: &Path, name: &str, seq: u64, bytes: &[u8]) -> std::io::Result<()> {
    let tmp = dir.join(format!(".tmp-{}-{seq}", std::process::id()));
    let mut f = std::fs::File::create(&tmp)?;
    let written = f.write_all(bytes).and_then(|()| std::fs::rename(&tmp, dir.join(name)));
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

/// The extents in the folder of one object version: start → end (by file length; checked
/// when read).
fn list_extents(folder: &Path) -> BTreeMap<u64, u64> {
    let Ok(entries) = std::fs::read_dir(folder) else { return BTreeMap::new() };
    entries
        .flatten()
        .filter_map(|e| {
            let start = e.file_name().to_str()?.parse::<u64>().ok()?;
            let len = e.metadata().ok()?.len();
            (len > TRAILER).then(|| (start, start + len - TRAILER))
        })
        .collect()
}

/// An extent found on disk.
struct OnDisk {
    /// Its object version's folder.
    folder: String,
    /// Its first byte's offset (its file name).
    start: u64,
    /// Its length on disk (with its trailer).
    len: u64,
    /// When it was last read (its file time).
    read: SystemTime,
}

/// Every extent in the cache.
fn extents_on_disk(dir: &Path) -> Vec<OnDisk> {
    let mut out = Vec::new();
    let Ok(folders) = std::fs::read_dir(dir) else { return out };
    for folder in folders.flatten() {
        let (Some(name), Ok(entries)) =
            (folder.file_name().to_str().map(str::to_string), std::fs::read_dir(folder.path()))
        else {
            continue;
        };
        for e in entries.flatten() {
            if let Some(start) = e.file_name().to_str().and_then(|n| n.parse::<u64>().ok())
                && let Ok(meta) = e.metadata()
            {
                let read = meta.modified().unwrap_or(SystemTime::UNIX_EPOCH);
                out.push(OnDisk { folder: name.clone(), start, len: meta.len(), read });
            }
        }
    }
    out
}

/// A source whose reads go through a [`DiskCache`]: what the cache holds for the object's
/// pinned version is read from disk, the rest from the source (one read for the whole wave)
/// and kept.
pub struct DiskCached {
    inner: Box<dyn RangeSource>,
    cache: Arc<DiskCache>,
}

impl DiskCached {
    /// `inner` read through `cache`.
    pub fn new(inner: Box<dyn RangeSource>, cache: Arc<DiskCache>) -> DiskCached {
        DiskCached { inner, cache }
    }

    /// The object's version as spelled, and its folder, once the source has pinned it (its
    /// first read, at open) and when no other object holds that folder.
    fn folder(&self) -> Option<(String, String)> {
        let spelled = spelled(self.inner.name(), &self.inner.version()?);
        let mut state = self.cache.lock();
        let folder = self.cache.folder(&mut state, &spelled)?;
        Some((spelled, folder))
    }

    /// Reads `ranges` from the source, replacing what the cache held of them.
    fn refresh(&self, ranges: &[Range<u64>], spelled: &str, folder: &str) -> Result<Vec<Vec<u8>>, RemoteError> {
        let fetched = self.inner.read(ranges)?;
        for (r, bytes) in ranges.iter().zip(&fetched) {
            let r = r.start..r.start + bytes.len() as u64;
            let old = DiskCache::overlapping(&self.cache.lock(), folder, &r);
            for (s, _) in old {
                self.cache.remove_extent(folder, s);
            }
            self.cache.write_extent(folder, spelled, r.start, bytes);
        }
        Ok(fetched)
    }
}

impl RangeSource for DiskCached {
    fn read(&self, ranges: &[Range<u64>]) -> Result<Vec<Vec<u8>>, RemoteError> {
        self.read_counted(ranges, false).map(|(answers, _)| answers)
    }

    fn read_counted(&self, ranges: &[Range<u64>], past_cache: bool) -> Result<(Vec<Vec<u8>>, u64), RemoteError> {
        let Some((spelled, folder)) = self.folder() else { return Ok((self.inner.read(ranges)?, 0)) };
        if past_cache {
            return Ok((self.refresh(ranges, &spelled, &folder)?, 0));
        }
        let len = self.inner.object_len().unwrap_or(u64::MAX);
        // Each range's pieces: bytes from disk, or a gap to fetch (its index in `gaps`).
        enum Piece {
            Disk(Vec<u8>),
            Gap(usize),
        }
        let mut gaps: Vec<Range<u64>> = Vec::new();
        let mut pieces: Vec<Vec<Piece>> = Vec::with_capacity(ranges.len());
        let mut from_disk = 0u64;
        for r in ranges {
            // (Clipped at the object's end; what lies past it is an empty answer.)
            let r = r.start..r.end.min(len).max(r.start);
            let mut out = Vec::new();
            let mut at = r.start;
            let held = if r.is_empty() { Vec::new() } else { DiskCache::overlapping(&self.cache.lock(), &folder, &r) };
            for (s, e) in held {
                let Some(bytes) = self.cache.read_extent(&folder, &spelled, s, e) else { continue };
                let (from, to) = (s.max(at), e.min(r.end));
                if from >= to {
                    continue;
                }
                if at < from {
                    out.push(Piece::Gap(gaps.len()));
                    gaps.push(at..from);
                }
                out.push(Piece::Disk(bytes[(from - s) as usize..(to - s) as usize].to_vec()));
                from_disk += to - from;
                at = to;
            }
            if at < r.end {
                out.push(Piece::Gap(gaps.len()));
                gaps.push(at..r.end);
            }
            pieces.push(out);
        }
        let fetched = if gaps.is_empty() { Vec::new() } else { self.inner.read(&gaps)? };
        for (g, bytes) in gaps.iter().zip(&fetched) {
            // Only whole gaps are kept (a short answer is the object's end, checked by the
            // caller against what it asked).
            if bytes.len() as u64 == g.end - g.start {
                self.cache.write_extent(&folder, &spelled, g.start, bytes);
            }
        }
        let answers = pieces
            .into_iter()
            .map(|ps| {
                let mut out = Vec::new();
                for p in ps {
                    match p {
                        Piece::Disk(b) => out.extend_from_slice(&b),
                        Piece::Gap(i) => out.extend_from_slice(fetched.get(i).map_or(&[][..], |b| &b[..])),
                    }
                }
                out
            })
            .collect();
        Ok((answers, from_disk))
    }

    fn object_len(&self) -> Option<u64> {
        self.inner.object_len()
    }

    fn name(&self) -> &str {
        self.inner.name()
    }

    fn requests(&self) -> u64 {
        self.inner.requests()
    }

    fn version(&self) -> Option<String> {
        self.inner.version()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An object in memory with a pinned version: the source behind the cache.
    struct Bytes {
        bytes: Vec<u8>,
        version: String,
        reads: AtomicU64,
    }

    impl RangeSource for Bytes {
        fn read(&self, ranges: &[Range<u64>]) -> Result<Vec<Vec<u8>>, RemoteError> {
            self.reads.fetch_add(1, Ordering::Relaxed);
            let n = self.bytes.len() as u64;
            Ok(ranges.iter().map(|r| self.bytes[r.start.min(n) as usize..r.end.min(n) as usize].to_vec()).collect())
        }
        fn object_len(&self) -> Option<u64> {
            Some(self.bytes.len() as u64)
        }
        fn name(&self) -> &str {
            "mem://object"
        }
        fn requests(&self) -> u64 {
            self.reads.load(Ordering::Relaxed)
        }
        fn version(&self) -> Option<String> {
            Some(self.version.clone())
        }
    }

    fn object(len: usize, version: &str) -> Box<Bytes> {
        let bytes = (0..len).map(|i| (i * 31 % 251) as u8).collect();
        Box::new(Bytes { bytes, version: version.into(), reads: AtomicU64::new(0) })
    }

    proptest::proptest! {
        /// Any waves of ranges (empty ones, ones past the end, overlapping what is kept) answer
        /// the object's bytes; asked again, from disk without a read.
        #[test]
        fn answers_are_the_objects_bytes(waves in proptest::collection::vec(
            proptest::collection::vec((0u64..5000, 0u64..1500), 1..6), 1..6)) {
            let dir = shoal_testkit::TempDir::new("disk", "prop");
            let cache = DiskCache::open(&dir.path("c"), 1 << 30).unwrap();
            let src = DiskCached::new(object(4000, "v1"), cache);
            for wave in &waves {
                let ranges: Vec<Range<u64>> = wave.iter().map(|&(s, l)| s..s + l).collect();
                let want = Bytes { bytes: object(4000, "v1").bytes, version: String::new(), reads: AtomicU64::new(0) }
                    .read(&ranges).unwrap();
                let (got, _) = src.read_counted(&ranges, false).unwrap();
                proptest::prop_assert_eq!(&got, &want);
                let before = src.requests();
                let (again, _) = src.read_counted(&ranges, false).unwrap();
                proptest::prop_assert_eq!(&again, &want);
                proptest::prop_assert_eq!(src.requests(), before, "all from disk");
            }
        }
    }

    /// Objects read through one small cache from many threads at once (as a set's segments
    /// are): once the reads are done, the extents on disk stay within the budget — a trim
    /// running beside a write must not lose the write from the count.
    #[test]
    fn concurrent_writes_keep_the_cache_within_its_budget() {
        let dir = shoal_testkit::TempDir::new("disk", "concurrent");
        let budget = 60_000;
        for round in 0..300 {
            let cache = DiskCache::open(&dir.path("c"), budget).unwrap();
            std::thread::scope(|s| {
                for t in 0..8 {
                    let cache = cache.clone();
                    s.spawn(move || {
                        let src = DiskCached::new(object(200_000, &format!("v{round}-{t}")), cache);
                        for i in 0..10u64 {
                            let start = (i * 6_007 + t * 131) % 190_000;
                            src.read_counted(std::slice::from_ref(&(start..start + 5_000)), false).unwrap();
                        }
                    });
                }
            });
            let total: u64 = extents_on_disk(&dir.path("c")).iter().map(|x| x.len).sum();
            assert!(total <= budget, "round {round}: {total} bytes on disk, budget {budget}");
        }
    }

    /// An object whose extents were all trimmed (its folder empty, which a trim deletes when
    /// no reader holds it) is still kept on disk when read again.
    #[test]
    fn an_object_trimmed_to_nothing_is_kept_again() {
        let dir = shoal_testkit::TempDir::new("disk", "emptied");
        let cache = DiskCache::open(&dir.path("c"), 10_000).unwrap();
        let a = DiskCached::new(object(3000, "a"), cache.clone());
        let b = DiskCached::new(object(20_000, "b"), cache);
        a.read_counted(&[0..1000, 2000..2500], false).unwrap();
        // `b`'s reads trim `a`'s extents (least recently read), then its emptied folder.
        for start in (0..16_000).step_by(4000) {
            b.read_counted(&[start..start + 2000, start + 2000..start + 4000], false).unwrap();
        }
        let (want, disk) = a.read_counted(&[0..1000, 2000..2500], false).unwrap();
        assert_eq!(disk, 0, "trimmed: fetched again");
        let reads = a.requests();
        assert_eq!(a.read_counted(&[0..1000, 2000..2500], false).unwrap(), (want, 1500));
        assert_eq!(a.requests(), reads, "kept on disk again");
    }

    #[test]
    fn other_versions_and_damaged_extents_are_never_answered() {
        let dir = shoal_testkit::TempDir::new("disk", "versions");
        let cache = DiskCache::open(&dir.path("c"), 1 << 30).unwrap();
        let v1 = DiskCached::new(object(3000, "v1"), cache.clone());
        let r = [100..900, 1200..2000];
        let (a, disk) = v1.read_counted(&r, false).unwrap();
        assert_eq!(disk, 0);
        assert_eq!(v1.read_counted(&r, false).unwrap(), (a.clone(), 1600));
        // Another version of the same object: its own extents.
        let mut other = object(3000, "v2");
        other.bytes.iter_mut().for_each(|b| *b ^= 0xff);
        let want = other.read(&r).unwrap();
        let v2 = DiskCached::new(other, cache.clone());
        assert_eq!(v2.read_counted(&r, false).unwrap(), (want, 0));
        // A flipped byte in every extent: deleted, fetched again.
        for x in extents_on_disk(&dir.path("c")) {
            let path = dir.path("c").join(&x.folder).join(x.start.to_string());
            let mut b = std::fs::read(&path).unwrap();
            b[3] ^= 1;
            std::fs::write(&path, b).unwrap();
        }
        let reads = v1.requests();
        assert_eq!(v1.read_counted(&r, false).unwrap(), (a.clone(), 0));
        assert_eq!(v1.requests(), reads + 1);
        // Read past the cache: the same bytes kept again, then from disk.
        assert_eq!(v1.read_counted(&r, true).unwrap(), (a.clone(), 0));
        assert_eq!(v1.read_counted(&r, false).unwrap(), (a, 1600));
    }
}
