//! Segments searched where they lie — a static web server, a CDN, a local file — by fetching
//! byte ranges: the host's side of `shoal_core::remote`, which plans what to read.
//!
//! A [`RemoteCollection`] opens a segment with one or two reads (the first 256 KiB, then the
//! sections every query needs) and answers each search in waves: the core names the ranges it
//! lacks, [`RangeSource::read`] fetches one wave's ranges concurrently, and the core runs again
//! over what the cache holds. Nothing the server answers becomes a result unless it is what
//! was asked: a status other than 206 (or a whole-object 200 within [`WHOLE_BODY_CAP`]), a
//! `Content-Range` that is not the range asked, a short body, or another object (its ETag,
//! pinned at open and sent as `If-Match`, or its length) is a [`RemoteError`].

use std::fmt;
use std::io::Read as _;
use std::ops::Range;
use std::sync::Mutex;
use std::time::Duration;

use shoal_core::remote::{RangeCache, RemoteSegment, Step};
use shoal_core::{FormatError, SearchRequest, SearchResponse};

use crate::HostError;

/// The most bytes accepted when a server ignores `Range` and sends the whole object (a 200):
/// a small segment is then read from that body; a larger one is refused.
pub const WHOLE_BODY_CAP: u64 = 16 << 20;

/// Times a request that failed with a 5xx status or a broken connection is tried again.
pub const RETRIES: u32 = 2;

/// Waves after which a search that still names ranges to fetch is abandoned (it converges in
/// two or three; more means the server's bytes keep changing under it).
const MAX_WAVES: u32 = 12;

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
}

/// What reading cost: waves (dependent round trips), requests and bytes received.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Trip {
    /// Waves of requests, each waiting for the one before.
    pub waves: u32,
    /// Requests (ranges) sent.
    pub requests: u32,
    /// Bytes received.
    pub bytes: u64,
    /// Searches started again after bytes failed their checksum.
    pub retries: u32,
}

impl std::ops::AddAssign for Trip {
    fn add_assign(&mut self, o: Trip) {
        self.waves += o.waves;
        self.requests += o.requests;
        self.bytes += o.bytes;
        self.retries += o.retries;
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

/// [`drive`], once more from an empty cache when bytes fail their checksum (a fault in transit
/// then costs a retry; bytes wrong at the source stay an error).
fn drive_checked<T>(
    source: &dyn RangeSource,
    cache: &mut RangeCache,
    mut step: impl FnMut(&RangeCache) -> Result<Step<T>, shoal_core::Error>,
) -> Result<(T, Trip), HostError> {
    let mut trip = Trip::default();
    match drive(source, cache, &mut step, &mut trip) {
        Err(HostError::Segment { source: shoal_core::Error::Format(FormatError::ChecksumMismatch { .. }), .. }) => {
            cache.clear();
            trip.retries += 1;
            Ok((drive(source, cache, step, &mut trip)?, trip))
        }
        other => Ok((other?, trip)),
    }
}

/// The host error of a remote failure.
fn remote(source: &dyn RangeSource, error: RemoteError) -> HostError {
    HostError::Remote { object: source.name().to_string(), error }
}

/// Runs one step function of the core to completion, fetching what it names; adds what it
/// fetched to `trip`.
fn drive<T>(
    source: &dyn RangeSource,
    cache: &mut RangeCache,
    mut step: impl FnMut(&RangeCache) -> Result<Step<T>, shoal_core::Error>,
    trip: &mut Trip,
) -> Result<T, HostError> {
    let mut waves = 0;
    loop {
        let ranges = match step(cache).map_err(|e| HostError::Segment { path: source.name().into(), source: e })? {
            Step::Done(t) => return Ok(t),
            Step::Fetch(ranges) => ranges,
        };
        if waves >= MAX_WAVES {
            return Err(remote(source, RemoteError::NoProgress));
        }
        let answers = source.read(&ranges).map_err(|e| remote(source, e))?;
        waves += 1;
        trip.waves += 1;
        for (r, bytes) in ranges.iter().zip(&answers) {
            let asked = r.end - r.start;
            let got = bytes.len() as u64;
            // Fewer bytes only where the object ends (the first read asks past a small file's end).
            let ends = source.object_len().is_some_and(|n| r.start + got == n && n < r.end);
            if got != asked && !ends {
                let message = format!("{got} bytes for a range of {asked} at {}", r.start);
                return Err(remote(source, RemoteError::BadResponse(message)));
            }
            trip.requests += 1;
            trip.bytes += got;
            cache.insert(r.start, bytes);
        }
    }
}

/// A local file read by ranges (`pread`): what a reader by ranges does to a file, without a
/// server — and the reference the HTTP reader is compared with.
#[derive(Debug)]
pub struct FileRanges {
    file: std::fs::File,
    path: String,
    len: u64,
}

impl FileRanges {
    /// Opens `path`.
    pub fn open(path: &std::path::Path) -> Result<FileRanges, HostError> {
        let file = std::fs::File::open(path).map_err(|e| HostError::io(path, "open", e))?;
        let len = file.metadata().map_err(|e| HostError::io(path, "stat", e))?.len();
        Ok(FileRanges { file, path: path.display().to_string(), len })
    }
}

impl RangeSource for FileRanges {
    fn read(&self, ranges: &[Range<u64>]) -> Result<Vec<Vec<u8>>, RemoteError> {
        use std::os::unix::fs::FileExt as _;
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
}

/// An object on an HTTP server, read with `Range` requests (ranges of one wave on parallel
/// connections). The first response's ETag is pinned: every later request carries it as
/// `If-Match`, and a response with another ETag is [`RemoteError::Changed`].
pub struct HttpRanges {
    agent: ureq::Agent,
    url: String,
    /// The object's ETag and length, as the first response gave them.
    pinned: Mutex<(Option<String>, Option<u64>)>,
    /// Connections used at once.
    concurrency: usize,
    /// The largest whole object taken when the server ignores `Range`.
    whole_body_cap: u64,
    /// The whole object, once a server that ignores `Range` has sent it.
    whole: Mutex<Option<std::sync::Arc<Vec<u8>>>>,
}

impl fmt::Debug for HttpRanges {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpRanges").field("url", &self.url).finish()
    }
}

impl HttpRanges {
    /// Reads `url` (`http://`), up to 16 requests at once.
    pub fn new(url: &str) -> HttpRanges {
        let agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(Duration::from_secs(60)))
            .max_idle_connections_per_host(16)
            .build()
            .into();
        let pinned = Mutex::new((None, None));
        let whole = Mutex::new(None);
        HttpRanges { agent, url: url.to_string(), pinned, concurrency: 16, whole_body_cap: WHOLE_BODY_CAP, whole }
    }

    /// The largest whole object taken from a server that ignores `Range` (default
    /// [`WHOLE_BODY_CAP`]).
    pub fn with_whole_body_cap(mut self, cap: u64) -> HttpRanges {
        self.whole_body_cap = cap;
        self
    }

    /// One range, retried on 5xx and broken connections.
    fn read_one(&self, r: &Range<u64>) -> Result<Vec<u8>, RemoteError> {
        if let Some(whole) = self.whole.lock().unwrap_or_else(|e| e.into_inner()).clone() {
            return slice_of(&whole, r);
        }
        let mut tries = 0;
        loop {
            match self.try_read(r) {
                Err(RemoteError::Status(s)) if s >= 500 && tries < RETRIES => {}
                Err(RemoteError::Transport(_)) if tries < RETRIES => {}
                other => return other,
            }
            tries += 1;
            std::thread::sleep(Duration::from_millis(50 << tries));
        }
    }

    fn try_read(&self, r: &Range<u64>) -> Result<Vec<u8>, RemoteError> {
        let (etag, known_len) = self.pinned.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let mut req = self.agent.get(&self.url).header("Range", format!("bytes={}-{}", r.start, r.end - 1));
        // A weak ETag never matches `If-Match` (RFC 9110): it is compared, not sent.
        if let Some(tag) = etag.as_ref().filter(|t| !t.starts_with("W/")) {
            req = req.header("If-Match", tag);
        }
        let mut resp = req.call().map_err(|e| RemoteError::Transport(e.to_string()))?;
        let status = resp.status().as_u16();
        let header = |name: &str| resp.headers().get(name).and_then(|v| v.to_str().ok()).map(str::to_string);
        let tag = header("etag");
        let content_range = header("content-range");
        let length: Option<u64> = header("content-length").and_then(|v| v.parse().ok());
        match status {
            206 | 200 => {}
            412 => return Err(RemoteError::Changed("If-Match failed: 412".into())),
            s => return Err(RemoteError::Status(s)),
        }
        if let (Some(pinned), Some(tag)) = (&etag, &tag)
            && pinned != tag
        {
            return Err(RemoteError::Changed(format!("ETag {tag}, opened as {pinned}")));
        }
        let (start, total) = if status == 206 {
            let (first, last, total) = content_range
                .as_deref()
                .and_then(parse_content_range)
                .ok_or_else(|| RemoteError::BadResponse(format!("206 with Content-Range {content_range:?}")))?;
            let end = r.end.min(total.unwrap_or(u64::MAX));
            if end == 0 || first != r.start || last != end - 1 {
                return Err(RemoteError::BadResponse(format!(
                    "asked bytes {}-{}, got {first}-{last}",
                    r.start,
                    r.end - 1
                )));
            }
            (first, total)
        } else {
            // Range ignored: the whole object, if it is small enough to take.
            if length.is_none_or(|n| n > self.whole_body_cap) {
                return Err(RemoteError::RangeIgnored { length });
            }
            (0, length)
        };
        let cap = if status == 206 { r.end - r.start } else { self.whole_body_cap };
        let mut body = Vec::new();
        resp.body_mut()
            .as_reader()
            .take(cap + 1)
            .read_to_end(&mut body)
            .map_err(|e| RemoteError::Transport(format!("reading the body: {e}")))?;
        if let Some(n) = length.filter(|&n| n != body.len() as u64) {
            return Err(RemoteError::BadResponse(format!("a body of {} bytes, Content-Length {n}", body.len())));
        }
        let total = if status == 200 { Some(body.len() as u64) } else { total };
        {
            let mut pinned = self.pinned.lock().unwrap_or_else(|e| e.into_inner());
            if let (Some(known), Some(now)) = (known_len.or(pinned.1), total)
                && known != now
            {
                return Err(RemoteError::Changed(format!("{now} bytes, opened with {known}")));
            }
            if pinned.0.is_none() {
                pinned.0 = tag;
            }
            if pinned.1.is_none() {
                pinned.1 = total;
            }
        }
        if status == 200 {
            // Kept: the next ranges are cut from it, not downloaded whole again.
            let body = std::sync::Arc::new(body);
            *self.whole.lock().unwrap_or_else(|e| e.into_inner()) = Some(body.clone());
            return slice_of(&body, r);
        }
        let expected = r.end.min(total.unwrap_or(u64::MAX)) - start;
        if body.len() as u64 != expected {
            return Err(RemoteError::BadResponse(format!("{} bytes for a range of {expected}", body.len())));
        }
        Ok(body)
    }
}

impl RangeSource for HttpRanges {
    fn read(&self, ranges: &[Range<u64>]) -> Result<Vec<Vec<u8>>, RemoteError> {
        if ranges.len() <= 1 {
            return ranges.iter().map(|r| self.read_one(r)).collect();
        }
        // Workers take ranges in turn; each keeps its answers with their places.
        let next = std::sync::atomic::AtomicUsize::new(0);
        let mut answers: Vec<(usize, Result<Vec<u8>, RemoteError>)> = std::thread::scope(|s| {
            let workers: Vec<_> = (0..self.concurrency.min(ranges.len()))
                .map(|_| {
                    s.spawn(|| {
                        let mut mine = Vec::new();
                        loop {
                            let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                            let Some(r) = ranges.get(i) else { break mine };
                            mine.push((i, self.read_one(r)));
                        }
                    })
                })
                .collect();
            workers.into_iter().flat_map(|w| w.join().expect("a reader thread panicked")).collect()
        });
        answers.sort_by_key(|(i, _)| *i);
        answers.into_iter().map(|(_, a)| a).collect()
    }

    fn object_len(&self) -> Option<u64> {
        self.pinned.lock().unwrap_or_else(|e| e.into_inner()).1
    }

    fn name(&self) -> &str {
        &self.url
    }
}

/// Range `r` of a whole object (shorter where the object ends).
fn slice_of(whole: &[u8], r: &Range<u64>) -> Result<Vec<u8>, RemoteError> {
    let end = r.end.min(whole.len() as u64);
    if r.start > end {
        return Err(RemoteError::BadResponse(format!("range at {} past the object's end", r.start)));
    }
    Ok(whole[r.start as usize..end as usize].to_vec())
}

/// `bytes FIRST-LAST/TOTAL` (TOTAL may be `*`).
fn parse_content_range(v: &str) -> Option<(u64, u64, Option<u64>)> {
    let rest = v.trim().strip_prefix("bytes ")?;
    let (span, total) = rest.split_once('/')?;
    let (first, last) = span.split_once('-')?;
    let total = if total == "*" { None } else { Some(total.parse().ok()?) };
    let (first, last): (u64, u64) = (first.parse().ok()?, last.parse().ok()?);
    (first <= last).then_some((first, last, total))
}

/// The source of a segment named by `location`: `http://…` (`https://` is not built in yet),
/// else a local path read by ranges.
pub fn source_of(location: &str) -> Result<Box<dyn RangeSource>, HostError> {
    if location.starts_with("http://") {
        return Ok(Box::new(HttpRanges::new(location)));
    }
    if location.starts_with("https://") {
        return Err(HostError::Usage(
            "https:// segments are not supported yet (serve the file over http://, or read it locally)".into(),
        ));
    }
    Ok(Box::new(FileRanges::open(std::path::Path::new(location.strip_prefix("file://").unwrap_or(location)))?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_ranges_parse() {
        assert_eq!(parse_content_range("bytes 0-99/1000"), Some((0, 99, Some(1000))));
        assert_eq!(parse_content_range("bytes 5-5/*"), Some((5, 5, None)));
        assert_eq!(parse_content_range("bytes 9-3/10"), None);
        assert_eq!(parse_content_range("items 0-1/2"), None);
    }
}
