//! A cache of remote bytes on local disk, shared by every object a process reads by ranges and
//! kept across restarts: a reader that starts again reads from disk what it fetched before.
//!
//! Bytes are cached per *object version*: an object's name with the identity its source
//! pinned at open ([`RangeSource::version`]: a strong ETag and the length). A replaced object
//! has another version, so its old bytes are never served for it; a source that pins no strong
//! identity (a local file, a server without ETags) is not cached. Each version's folder (named
//! by a hash of its name and version, which a file `object` in it spells out) holds *extents*:
//! files named by their first byte's offset, each holding the bytes then a CRC-32C of the
//! offset and the bytes. An extent that fails its CRC (a torn write, a damaged disk) is deleted
//! and its bytes fetched again: a damaged cache costs requests, never a wrong answer.
//!
//! Writes go to a temporary file renamed into place (readers never see half an extent), and
//! are best effort: a full or read-only disk makes the reader fetch, not fail. When the cache
//! holds more than its budget, the extents least recently read go first (file times).

use std::collections::{BTreeMap, HashMap};
use std::io::Write as _;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use super::{RangeSource, RemoteError};
use crate::HostError;

/// Bytes after an extent's data: the CRC-32C of its offset (u64 LE) and its data.
const TRAILER: u64 = 4;

/// What the cache keeps after it goes over its budget: this share of it (percent), so that
/// eviction runs once per many writes.
const KEEP_PERCENT: u64 = 90;

/// The disk cache: a folder and a budget in bytes.
#[derive(Debug)]
pub struct DiskCache {
    dir: PathBuf,
    budget: u64,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    /// Per object version's folder name: its extents (start → end), or `None` when the folder
    /// belongs to another object (a hash collision: that object is not cached).
    objects: HashMap<String, Option<BTreeMap<u64, u64>>>,
    /// Bytes on disk (extents and trailers), as last counted plus what was written since.
    total: u64,
    /// A counter for temporary file names.
    seq: u64,
}

/// 64-bit FNV-1a: a stable hash of an object version (folder names must not change with the
/// compiler).
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3))
}

fn extent_crc(start: u64, data: &[u8]) -> u32 {
    crc32c::crc32c_append(crc32c::crc32c(&start.to_le_bytes()), data)
}

impl DiskCache {
    /// Opens (creating it) the cache in `dir`, keeping at most `budget` bytes there (what
    /// this process counts: processes sharing the folder each keep to their own count).
    pub fn open(dir: &Path, budget: u64) -> Result<Arc<DiskCache>, HostError> {
        std::fs::create_dir_all(dir).map_err(|e| HostError::io(dir, "create the cache folder", e))?;
        let total = extents_on_disk(dir).iter().map(|(_, len, _)| len).sum();
        let state = State { total, ..State::default() };
        let cache = DiskCache { dir: dir.to_path_buf(), budget, state: Mutex::new(state) };
        // A folder left over its budget (a smaller one given now): trimmed at once.
        if total > budget {
            cache.evict();
        }
        Ok(Arc::new(cache))
    }

    /// The folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Bytes the cache holds on disk (as counted by this process: extents other processes
    /// wrote since it opened are not).
    pub fn bytes(&self) -> u64 {
        self.lock().total
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The folder of `name` at `version`, its extents loaded (`None`: another object's).
    fn folder(&self, state: &mut State, name: &str, version: &str) -> Option<String> {
        let spelled = format!("{name}\n{version}\n");
        let folder = format!("{:016x}", fnv1a(spelled.as_bytes()));
        if !state.objects.contains_key(&folder) {
            let path = self.dir.join(&folder);
            let extents = match std::fs::read(path.join("object")) {
                Ok(bytes) if bytes == spelled.as_bytes() => Some(list_extents(&path)),
                Ok(_) => None,
                Err(_) => {
                    // New (or its `object` file lost): claim it.
                    let _ = std::fs::create_dir_all(&path);
                    let seq = state.seq;
                    state.seq += 1;
                    write_atomic(&path, "object", seq, spelled.as_bytes()).ok().map(|()| list_extents(&path))
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
    fn read_extent(&self, folder: &str, start: u64, end: u64) -> Option<Vec<u8>> {
        let path = self.dir.join(folder).join(start.to_string());
        let mut bytes = std::fs::read(&path).ok();
        let good = bytes.as_ref().is_some_and(|b| {
            b.len() as u64 == end - start + TRAILER && {
                let (data, crc) = b.split_at(b.len() - TRAILER as usize);
                u32::from_le_bytes(crc.try_into().expect("4 bytes")) == extent_crc(start, data)
            }
        });
        if !good {
            let _ = std::fs::remove_file(&path);
            let mut state = self.lock();
            if let Some(Some(extents)) = state.objects.get_mut(folder)
                && extents.remove(&start).is_some()
            {
                state.total = state.total.saturating_sub(end - start + TRAILER);
            }
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

    /// Keeps `data` (the object's bytes at `start`) as an extent of `folder`.
    fn write_extent(&self, folder: &str, start: u64, data: &[u8]) {
        if data.is_empty() || data.len() as u64 + TRAILER > self.budget {
            return;
        }
        let seq = {
            let mut state = self.lock();
            state.seq += 1;
            state.seq
        };
        let mut bytes = Vec::with_capacity(data.len() + TRAILER as usize);
        bytes.extend_from_slice(data);
        bytes.extend_from_slice(&extent_crc(start, data).to_le_bytes());
        if write_atomic(&self.dir.join(folder), &start.to_string(), seq, &bytes).is_err() {
            return;
        }
        let over = {
            let mut state = self.lock();
            if let Some(Some(extents)) = state.objects.get_mut(folder)
                && extents.insert(start, start + data.len() as u64).is_none()
            {
                state.total += bytes.len() as u64;
            }
            state.total > self.budget
        };
        if over {
            self.evict();
        }
    }

    /// Deletes the extents least recently read until the cache holds [`KEEP_PERCENT`] of its
    /// budget (every process's extents: the folder is counted again).
    fn evict(&self) {
        let mut all = extents_on_disk(&self.dir);
        all.sort_by_key(|(_, _, time)| *time);
        let mut total: u64 = all.iter().map(|(_, len, _)| len).sum();
        let keep = self.budget / 100 * KEEP_PERCENT;
        let mut state = self.lock();
        for (path, len, _) in all {
            if total <= keep {
                break;
            }
            if std::fs::remove_file(&path).is_ok() {
                total -= len;
                let folder = path.parent().and_then(Path::file_name).and_then(|f| f.to_str()).unwrap_or("");
                let start = path.file_name().and_then(|f| f.to_str()).and_then(|s| s.parse::<u64>().ok());
                if let (Some(Some(extents)), Some(start)) = (state.objects.get_mut(folder), start) {
                    extents.remove(&start);
                }
            }
        }
        state.total = total;
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

/// Every extent in the cache: its path, its length on disk and when it was last read.
fn extents_on_disk(dir: &Path) -> Vec<(PathBuf, u64, SystemTime)> {
    let mut out = Vec::new();
    let Ok(folders) = std::fs::read_dir(dir) else { return out };
    for folder in folders.flatten() {
        let Ok(entries) = std::fs::read_dir(folder.path()) else { continue };
        for e in entries.flatten() {
            if e.file_name().to_str().is_some_and(|n| n.parse::<u64>().is_ok())
                && let Ok(meta) = e.metadata()
            {
                out.push((e.path(), meta.len(), meta.modified().unwrap_or(SystemTime::UNIX_EPOCH)));
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
    from_disk: std::sync::atomic::AtomicU64,
}

impl DiskCached {
    /// `inner` read through `cache`.
    pub fn new(inner: Box<dyn RangeSource>, cache: Arc<DiskCache>) -> DiskCached {
        DiskCached { inner, cache, from_disk: Default::default() }
    }
}

impl RangeSource for DiskCached {
    fn read(&self, ranges: &[Range<u64>]) -> Result<Vec<Vec<u8>>, RemoteError> {
        // Until the source has pinned its object (its first read, at open), nothing is known
        // about the bytes on disk: read from the source.
        let Some(version) = self.inner.version() else { return self.inner.read(ranges) };
        let folder = {
            let mut state = self.cache.lock();
            self.cache.folder(&mut state, self.inner.name(), &version)
        };
        let Some(folder) = folder else { return self.inner.read(ranges) };
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
            let r = r.start..r.end.min(len).max(r.start);
            let held = Self::overlapping(&self.cache, &folder, &r);
            let mut at = r.start;
            let mut out = Vec::new();
            for (s, e) in held {
                let Some(bytes) = self.cache.read_extent(&folder, s, e) else { continue };
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
                self.cache.write_extent(&folder, g.start, bytes);
            }
        }
        self.from_disk.fetch_add(from_disk, std::sync::atomic::Ordering::Relaxed);
        Ok(pieces
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
            .collect())
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

    fn disk_bytes(&self) -> u64 {
        self.from_disk.load(std::sync::atomic::Ordering::Relaxed)
    }
}

impl DiskCached {
    fn overlapping(cache: &DiskCache, folder: &str, r: &Range<u64>) -> Vec<(u64, u64)> {
        DiskCache::overlapping(&cache.lock(), folder, r)
    }
}
