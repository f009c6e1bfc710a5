//! Segments searched where they lie — a static web server, a CDN, a local file — by fetching
//! byte ranges: the host's side of `shoal_core::remote`, which plans what to read.
//!
//! A [`RemoteCollection`] opens a segment with one or two reads (the first 256 KiB, then the
//! sections every query needs) and answers each search in waves: the core names the ranges it
//! lacks, [`RangeSource::read`] fetches one wave's ranges concurrently, and the core runs again
//! over what the cache holds. Nothing the server answers becomes a result unless it is what
//! was asked: a status other than 206 (or a whole-object 200 within [`WHOLE_BODY_CAP`]), a
//! `Content-Range` that does not hold the range asked, a short body, or another object (its ETag,
//! pinned at open and sent as `If-Match`, or its length) is a [`RemoteError`].

use std::fmt;
use std::ops::Range;
use std::sync::Mutex;

use shoal_core::remote::{RangeCache, RemoteSegment, SetStep, Step};
use shoal_core::{FormatError, SearchRequest, SearchResponse};

use crate::HostError;

pub mod disk;
mod http;
mod set;
pub mod store;
pub use disk::{DiskCache, DiskCached};
pub use http::HttpRanges;
pub use set::{ReadOptions, RemoteSetReader};
pub use store::StoreRanges;

/// The most bytes accepted when a server ignores `Range` and sends the whole object (a 200):
/// a small segment is then read from that body; a larger one is refused.
pub const WHOLE_BODY_CAP: u64 = 16 << 20;

/// Times a request that failed with a 5xx status or a broken connection is tried again.
pub const RETRIES: u32 = 2;

/// Waves after which a search that still names ranges to fetch is abandoned (it converges in
/// two or three; more means the server's bytes keep changing under it).
const MAX_WAVES: u32 = 12;

/// Ranges this close (bytes) are fetched as one when a wave goes in multipart requests (instead
/// of `shoal_core::remote::MERGE_GAP`): more ranges cost no requests there, only a part header
/// each (~100 bytes), so only small gaps are worth reading through.
pub const MULTIPART_MERGE_GAP: u64 = 1024;

/// Where a server or a file answered what a reader by ranges cannot use.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum RemoteError {
    /// An HTTP status other than 200/206 (after retries for 5xx): 404, 403, 416, 500, ...
    Status(u16),
    /// The object is not the one opened: its ETag (`If-Match` failed: 412) or its length
    /// changed.
    Changed(String),
    /// The server ignored `Range` and sent a whole object larger than [`WHOLE_BODY_CAP`].
    RangeIgnored {
        /// The object's length, as the response gave it.
        length: Option<u64>,
    },
    /// A response that is not the range asked: wrong `Content-Range`, or a body shorter or
    /// longer than it says.
    BadResponse(String),
    /// The connection failed (after retries).
    Transport(String),
    /// A search kept asking for more after [`MAX_WAVES`] waves.
    NoProgress,
}

impl fmt::Display for RemoteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RemoteError::Status(s) => write!(f, "the server answered HTTP {s}"),
            RemoteError::Changed(what) => write!(f, "the object changed while open ({what})"),
            RemoteError::RangeIgnored { length } => match length {
                Some(n) => {
                    write!(f, "the server ignores Range requests and the object ({n} bytes) is too large to read whole")
                }
                None => f.write_str("the server ignores Range requests (and sent no length)"),
            },
            RemoteError::BadResponse(what) => write!(f, "unexpected response: {what}"),
            RemoteError::Transport(e) => write!(f, "connection failed: {e}"),
            RemoteError::NoProgress => f.write_str("the search did not settle on the bytes it read"),
        }
    }
}

impl RemoteError {
    /// A short stable code for scripts, like the core's error codes.
    pub fn code(&self) -> &'static str {
        match self {
            RemoteError::Status(_) => "remote_status",
            RemoteError::Changed(_) => "object_changed",
            RemoteError::RangeIgnored { .. } => "range_unsupported",
            RemoteError::BadResponse(_) => "bad_response",
            RemoteError::Transport(_) => "transport",
            RemoteError::NoProgress => "no_progress",
        }
    }
}

/// Something a segment is read from by byte ranges.
pub trait RangeSource: Send + Sync {
    /// Reads each of `ranges` (one wave: concurrently where the source can). Each answer holds
    /// the bytes at `range.start`: `range.end - range.start` of them, or fewer only where the
    /// object ends.
    fn read(&self, ranges: &[Range<u64>]) -> Result<Vec<Vec<u8>>, RemoteError>;
    /// The object's length, once a read has told it.
    fn object_len(&self) -> Option<u64>;
    /// The object, for messages (a URL or a path).
    fn name(&self) -> &str;
    /// Requests sent so far (reads of a file; HTTP requests, retries included, several ranges
    /// in one where the source asks for them together).
    fn requests(&self) -> u64;
    /// The object's version as pinned at open — a strong ETag and the length — once a read
    /// has told it (`None`: not read yet, or no identity strong enough to cache its bytes by).
    fn version(&self) -> Option<String> {
        None
    }
    /// [`read`](Self::read), with how many of the bytes came from a local cache rather than
    /// the source; `past_cache`: none (read from the source, replacing what a cache held — a
    /// search run again after bytes failed their checksum).
    fn read_counted(&self, ranges: &[Range<u64>], past_cache: bool) -> Result<(Vec<Vec<u8>>, u64), RemoteError> {
        let _ = past_cache;
        Ok((self.read(ranges)?, 0))
    }
}

/// The version of an object whose ETag and length were pinned: a strong ETag only (a weak
/// one, `W/…`, promises equivalent content, not the same bytes).
fn pinned_version(pinned: &(Option<String>, Option<u64>)) -> Option<String> {
    match pinned {
        (Some(tag), Some(len)) if !tag.starts_with("W/") => Some(format!("ETag {tag}, {len} bytes")),
        _ => None,
    }
}

/// What reading cost: waves (dependent round trips), requests and bytes received.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Trip {
    /// Waves of requests, each waiting for the one before.
    pub waves: u32,
    /// Requests sent (a multipart request counts once, a retried one each time).
    pub requests: u32,
    /// Bytes of the ranges read (without multipart headers, or the rest of a whole object a
    /// server sent instead of a range).
    pub bytes: u64,
    /// Searches started again after bytes failed their checksum.
    pub retries: u32,
    /// Bytes read from the local disk cache instead (`--remote-cache-dir`), not in `bytes`.
    pub disk_bytes: u64,
}

impl std::ops::AddAssign for Trip {
    fn add_assign(&mut self, o: Trip) {
        self.waves += o.waves;
        self.requests += o.requests;
        self.bytes += o.bytes;
        self.retries += o.retries;
        self.disk_bytes += o.disk_bytes;
    }
}

/// A segment read by ranges, with its cache of fetched bytes.
pub struct RemoteCollection {
    source: Box<dyn RangeSource>,
    segment: RemoteSegment,
    cache: Mutex<RangeCache>,
    opened: Trip,
}

impl fmt::Debug for RemoteCollection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RemoteCollection").field("source", &self.source.name()).field("segment", &self.segment).finish()
    }
}

impl RemoteCollection {
    /// Opens the segment `source` holds, keeping at most `cache_bytes` of fetched bytes
    /// between searches (a search's own reads stay while it runs).
    pub fn open(source: Box<dyn RangeSource>, cache_bytes: u64) -> Result<RemoteCollection, HostError> {
        Self::open_with(source, cache_bytes, shoal_core::remote::OPEN_PREFIX)
    }

    /// [`open`](Self::open), reading the first `prefix` bytes first: a format-2 segment's
    /// `bootstrap_len` (what a set manifest's `bootstrap` hint gives) opens it in one request.
    pub fn open_with(
        source: Box<dyn RangeSource>,
        cache_bytes: u64,
        prefix: u64,
    ) -> Result<RemoteCollection, HostError> {
        let mut cache = RangeCache::new(cache_bytes);
        let (segment, opened) = drive_checked(&*source, &mut cache, |c| RemoteSegment::open_with(c, prefix))?;
        if let Some(len) = source.object_len().filter(|&n| n != segment.file_len()) {
            let message = format!("the object holds {len} bytes, its header says {}", segment.file_len());
            return Err(remote(&*source, RemoteError::Changed(message)));
        }
        Ok(RemoteCollection { source, segment, cache: Mutex::new(cache), opened })
    }

    /// Sets the gap below which a search's ranges are fetched as one
    /// (`RemoteSegment::set_merge_gap`).
    pub fn set_merge_gap(&mut self, gap: u64) {
        self.segment.set_merge_gap(gap);
    }

    /// What opening read.
    pub fn opened(&self) -> Trip {
        self.opened
    }

    /// The segment's parts held in memory (dimension, metric, rows).
    pub fn segment(&self) -> &RemoteSegment {
        &self.segment
    }

    /// Searches, fetching what the search needs; what it cost.
    pub fn search(&self, req: &SearchRequest) -> Result<(SearchResponse, Trip), HostError> {
        let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        cache.trim();
        drive_checked(&*self.source, &mut cache, |c| self.segment.search(req, c))
    }
}

/// One segment's step function run by [`drive_set`], the one driver of every reader: its
/// ranges are segment 0's.
fn drive_checked<T>(
    source: &dyn RangeSource,
    cache: &mut RangeCache,
    mut step: impl FnMut(&RangeCache) -> Result<Step<T>, shoal_core::Error>,
) -> Result<(T, Trip), HostError> {
    drive_set(source.name(), &[source], std::slice::from_mut(cache), |c| {
        Ok(match step(c[0])? {
            Step::Done(t) => SetStep::Done(t),
            Step::Fetch(ranges) => SetStep::Fetch(vec![(0, ranges)]),
        })
    })
}

/// The host error of a remote failure.
fn remote(source: &dyn RangeSource, error: RemoteError) -> HostError {
    HostError::Remote { object: source.name().to_string(), error }
}

/// Runs a step function of the core to completion (`name`: the segment or set, in messages):
/// each wave reads every segment's ranges from its source at once (a thread per source when
/// there are several). Once more from empty caches when bytes fail their checksum (a fault in
/// transit then costs a retry; bytes wrong at the source stay an error).
fn drive_set<T>(
    name: &str,
    sources: &[&dyn RangeSource],
    caches: &mut [RangeCache],
    mut step: impl FnMut(&[&RangeCache]) -> Result<SetStep<T>, shoal_core::Error>,
) -> Result<(T, Trip), HostError> {
    let mut trip = Trip::default();
    for attempt in 0..2 {
        // The second attempt reads past any disk cache (which may have kept the bad bytes).
        match drive_waves(name, sources, caches, &mut step, &mut trip, attempt > 0) {
            Err(HostError::Segment {
                source: shoal_core::Error::Format(FormatError::ChecksumMismatch { .. }), ..
            }) if attempt == 0 => {
                caches.iter_mut().for_each(RangeCache::clear);
                trip.retries += 1;
            }
            other => return Ok((other?, trip)),
        }
    }
    unreachable!("the second attempt returns")
}

/// Reads at most this many segments' ranges at once (a thread each; each source reads its own
/// ranges concurrently).
const SEGMENTS_AT_ONCE: usize = 16;

/// One segment's reads of a wave: its source, the ranges, its cache.
type Job<'s, 'c> = (&'s dyn RangeSource, &'c [Range<u64>], &'c mut RangeCache);

fn run_job((source, ranges, cache): Job<'_, '_>, past_cache: bool) -> Result<Trip, HostError> {
    let mut t = Trip::default();
    fetch_into(source, ranges, cache, &mut t, past_cache).map(|()| t)
}

fn drive_waves<T>(
    name: &str,
    sources: &[&dyn RangeSource],
    caches: &mut [RangeCache],
    step: &mut impl FnMut(&[&RangeCache]) -> Result<SetStep<T>, shoal_core::Error>,
    trip: &mut Trip,
    past_cache: bool,
) -> Result<T, HostError> {
    let mut waves = 0;
    loop {
        let view: Vec<&RangeCache> = caches.iter().collect();
        let mut wanted = match step(&view) {
            Ok(SetStep::Done(t)) => return Ok(t),
            Ok(SetStep::Fetch(fetch)) => fetch,
            Err(e) => return Err(HostError::Segment { path: name.into(), source: e }),
        };
        if waves >= MAX_WAVES {
            return Err(remote(sources[wanted[0].0], RemoteError::NoProgress));
        }
        waves += 1;
        trip.waves += 1;
        wanted.sort_by_key(|(i, _)| *i);
        let mut slots: Vec<Option<&mut RangeCache>> = caches.iter_mut().map(Some).collect();
        for batch in wanted.chunks(SEGMENTS_AT_ONCE) {
            let jobs: Vec<Job<'_, '_>> = batch
                .iter()
                .map(|(i, ranges)| {
                    (sources[*i], &ranges[..], slots[*i].take().expect("a segment appears once in a wave"))
                })
                .collect();
            let results: Vec<Result<Trip, HostError>> = if jobs.len() == 1 {
                jobs.into_iter().map(|job| run_job(job, past_cache)).collect()
            } else {
                // A thread per segment with ranges to read.
                std::thread::scope(|scope| {
                    let handles: Vec<_> =
                        jobs.into_iter().map(|job| scope.spawn(move || run_job(job, past_cache))).collect();
                    handles.into_iter().map(|h| h.join().expect("a reading thread panicked")).collect()
                })
            };
            for r in results {
                let t = r?;
                trip.requests += t.requests;
                trip.bytes += t.bytes;
                trip.disk_bytes += t.disk_bytes;
            }
        }
    }
}

/// Reads `ranges` from `source` into `cache`, each answer checked for its length; adds the
/// requests and bytes to `trip`.
fn fetch_into(
    source: &dyn RangeSource,
    ranges: &[Range<u64>],
    cache: &mut RangeCache,
    trip: &mut Trip,
    past_cache: bool,
) -> Result<(), HostError> {
    let sent = source.requests();
    let (answers, from_disk) = source.read_counted(ranges, past_cache).map_err(|e| remote(source, e))?;
    trip.requests += (source.requests() - sent) as u32;
    trip.disk_bytes += from_disk;
    let mut received = 0;
    for (r, bytes) in ranges.iter().zip(&answers) {
        let asked = r.end - r.start;
        let got = bytes.len() as u64;
        // Fewer bytes only where the object ends (the first read asks past a small file's end).
        let ends = source.object_len().is_some_and(|n| r.start + got == n && n < r.end);
        if got != asked && !ends {
            let message = format!("{got} bytes for a range of {asked} at {}", r.start);
            return Err(remote(source, RemoteError::BadResponse(message)));
        }
        received += got;
        cache.insert(r.start, bytes);
    }
    trip.bytes += received - from_disk.min(received);
    Ok(())
}

/// A local file read by ranges (`pread`): what a reader by ranges does to a file, without a
/// server — and the reference the HTTP reader is compared with.
#[derive(Debug)]
pub struct FileRanges {
    file: std::fs::File,
    path: String,
    len: u64,
    reads: std::sync::atomic::AtomicU64,
}

impl FileRanges {
    /// Opens `path`.
    pub fn open(path: &std::path::Path) -> Result<FileRanges, HostError> {
        let file = std::fs::File::open(path).map_err(|e| HostError::io(path, "open", e))?;
        let len = file.metadata().map_err(|e| HostError::io(path, "stat", e))?.len();
        Ok(FileRanges { file, path: path.display().to_string(), len, reads: Default::default() })
    }
}

impl RangeSource for FileRanges {
    fn read(&self, ranges: &[Range<u64>]) -> Result<Vec<Vec<u8>>, RemoteError> {
        use std::os::unix::fs::FileExt as _;
        self.reads.fetch_add(ranges.len() as u64, std::sync::atomic::Ordering::Relaxed);
        ranges
            .iter()
            .map(|r| {
                let end = r.end.min(self.len);
                let mut buf = vec![0; end.saturating_sub(r.start) as usize];
                self.file.read_exact_at(&mut buf, r.start).map_err(|e| RemoteError::Transport(e.to_string()))?;
                Ok(buf)
            })
            .collect()
    }

    fn object_len(&self) -> Option<u64> {
        Some(self.len)
    }

    fn name(&self) -> &str {
        &self.path
    }

    fn requests(&self) -> u64 {
        self.reads.load(std::sync::atomic::Ordering::Relaxed)
    }
}

/// The source of a segment named by `location`: `http://…` or `https://…` (`multipart`: a
/// wave's ranges in one request; TLS checked against the system's roots), `s3://`, `gs://`,
/// `az://` or `abfs://` (`object_store`, credentials from the environment), else a local path
/// read by ranges.
pub fn source_of(location: &str, multipart: bool) -> Result<Box<dyn RangeSource>, HostError> {
    if location.starts_with("http://") || location.starts_with("https://") {
        return Ok(Box::new(HttpRanges::new(location).with_multipart(multipart)));
    }
    if store::SCHEMES.iter().any(|s| location.starts_with(s)) {
        if multipart {
            return Err(HostError::Usage(format!(
                "{location}: object stores answer one range per request (no multipart ranges)"
            )));
        }
        return Ok(Box::new(StoreRanges::open(location)?));
    }
    if let Some(path) = location.strip_prefix("file://") {
        return Ok(Box::new(FileRanges::open(std::path::Path::new(path))?));
    }
    if let Some((scheme, _)) = location.split_once("://") {
        return Err(HostError::Usage(format!("{scheme}:// is not a location segments are read from")));
    }
    Ok(Box::new(FileRanges::open(std::path::Path::new(location))?))
}
