//! A segment set read by ranges: its manifest (`manifest.json`), then every segment it names
//! beside it (the same folder, bucket prefix or URL path), all opened at once and searched
//! together (`shoal_core::remote::RemoteSet`): each wave holds every segment's ranges, read
//! from their objects concurrently.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard, TryLockError};

use shoal_core::remote::{RangeCache, RemoteSegment, RemoteSet, SetManifest, SetStep, Step};
use shoal_core::{SearchRequest, SearchResponse};

use super::{DiskCache, DiskCached, RangeSource, RemoteError, Trip, drive_set, fetch_into, remote, source_of};
use crate::HostError;

/// Gives the source of an object by its location (a URL or a path).
pub type SourceOf<'a> = dyn Fn(&str) -> Result<Box<dyn RangeSource>, HostError> + 'a;

/// The largest manifest read (bytes).
pub const MANIFEST_CAP: u64 = 4 << 20;

/// How a set is read.
#[derive(Clone, Debug, Default)]
pub struct ReadOptions {
    /// Fetched bytes kept in memory between searches, shared evenly by the segments.
    pub cache_bytes: u64,
    /// Each wave's ranges of an object in one multipart request (HTTP servers only).
    pub multipart: bool,
    /// A cache on local disk the segments' bytes go through (kept across restarts).
    pub disk: Option<std::sync::Arc<DiskCache>>,
}

/// A segment set read by ranges, with a cache of fetched bytes per segment.
///
/// Searches run in *lanes*: each lane has its own caches (one per segment) and runs one search
/// at a time, so as many searches as there are lanes wait on the network together (see
/// [`set_lanes`](Self::set_lanes); one lane by default). What every query needs (the bootstrap
/// regions) is held once, by the set.
pub struct RemoteSetReader {
    location: String,
    manifest: SetManifest,
    set: RemoteSet,
    sources: Vec<Box<dyn RangeSource>>,
    lanes: Vec<Mutex<Vec<RangeCache>>>,
    next_lane: AtomicUsize,
    cache_bytes: u64,
    opened: Trip,
}

impl std::fmt::Debug for RemoteSetReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteSetReader").field("segments", &self.sources.len()).field("set", &self.set).finish()
    }
}

/// The location of `file` beside the manifest at `manifest` (its last path part replaced).
fn beside(manifest: &str, file: &str) -> Result<String, HostError> {
    if manifest.contains('?') {
        return Err(HostError::Usage(format!(
            "{}: a set is read from a manifest location without a query (a presigned URL names one object; \
             read the bucket as s3://, gs:// or az://, or make the objects readable)",
            manifest.split('?').next().unwrap_or(manifest)
        )));
    }
    let dir = manifest.rfind('/').map_or("", |i| &manifest[..=i]);
    Ok(format!("{dir}{file}"))
}

/// The source of each object of the set whose manifest is at `location`: one client for a
/// bucket (its connections, its credentials), shared by every object; else [`source_of`].
fn sources_for(location: &str, multipart: bool) -> Result<Box<SourceOf<'static>>, HostError> {
    if super::store::SCHEMES.iter().any(|s| location.starts_with(s)) {
        let (store, _) = super::store::store_for(location)?;
        let bucket = super::store::split(location).map(|(b, _)| b.to_string()).unwrap_or_default();
        return Ok(Box::new(move |at: &str| {
            let key = at.strip_prefix(bucket.as_str()).and_then(|k| k.strip_prefix('/')).unwrap_or(at);
            let path = object_store::path::Path::parse(key).map_err(|e| HostError::Usage(format!("{at}: {e}")))?;
            Ok(Box::new(super::StoreRanges::new(store.clone(), path, at)) as Box<dyn RangeSource>)
        }));
    }
    Ok(Box::new(move |at: &str| source_of(at, multipart)))
}

/// Reads and parses the manifest at `location` from `source` (one request, counted in `trip`).
fn manifest_from(location: &str, source: &dyn RangeSource, trip: &mut Trip) -> Result<SetManifest, HostError> {
    let mut cache = RangeCache::new(MANIFEST_CAP);
    let whole = 0..MANIFEST_CAP;
    fetch_into(source, std::slice::from_ref(&whole), &mut cache, trip, false)?;
    trip.waves += 1;
    let len = source.object_len().unwrap_or(0);
    if len > MANIFEST_CAP {
        let message = format!("a manifest of {len} bytes (at most {MANIFEST_CAP} are read)");
        return Err(remote(source, RemoteError::BadResponse(message)));
    }
    let text = cache.get(0..len).unwrap_or(&[]);
    SetManifest::from_json(text).map_err(|e| HostError::Segment { path: location.into(), source: e })
}

impl RemoteSetReader {
    /// Opens the set whose manifest is at `location` (a URL or path, as
    /// [`source_of`] takes it; its segments lie beside it), as `options` say. Reads the
    /// manifest (one request), then every segment's bootstrap region at once (one request
    /// each with the manifest's `bootstrap` hints).
    pub fn open(location: &str, options: &ReadOptions) -> Result<RemoteSetReader, HostError> {
        let sources = sources_for(location, options.multipart)?;
        match &options.disk {
            None => Self::open_with(location, options.cache_bytes, &*sources),
            Some(disk) => {
                // The segments' bytes through the disk cache; the manifest (which changes when
                // the set is published again) always from its source.
                let cached = |at: &str| -> Result<Box<dyn RangeSource>, HostError> {
                    let source = sources(at)?;
                    Ok(if at == location { source } else { Box::new(DiskCached::new(source, disk.clone())) })
                };
                Self::open_with(location, options.cache_bytes, &cached)
            }
        }
    }

    /// The manifest at `location` as it is now (one request; `location` as [`open`](Self::open)
    /// takes it): whether a set opened earlier is still the one published there.
    pub fn read_manifest(location: &str, multipart: bool) -> Result<SetManifest, HostError> {
        let source = sources_for(location, multipart)?(location)?;
        manifest_from(location, &*source, &mut Trip::default())
    }

    /// [`open`](Self::open), with `source_of` giving the source of each location (the
    /// manifest's, then each segment's).
    pub fn open_with(location: &str, cache_bytes: u64, source_of: &SourceOf<'_>) -> Result<RemoteSetReader, HostError> {
        let mut opened = Trip::default();
        let manifest = manifest_from(location, &*source_of(location)?, &mut opened)?;
        let n = manifest.manifest.segments.len();
        let sources = manifest
            .manifest
            .segments
            .iter()
            .map(|e| source_of(&beside(location, &e.file)?))
            .collect::<Result<Vec<_>, _>>()?;
        let each = cache_bytes / n.max(1) as u64;
        let mut caches: Vec<RangeCache> = (0..n).map(|_| RangeCache::new(each)).collect();
        let refs: Vec<&dyn RangeSource> = sources.iter().map(|s| &**s).collect();
        let (segments, trip) = drive_set(location, &refs, &mut caches, |caches| {
            let mut fetch = Vec::new();
            let mut segments = Vec::with_capacity(n);
            for (i, cache) in caches.iter().enumerate() {
                match RemoteSegment::open_with(cache, manifest.prefix(i))? {
                    Step::Fetch(ranges) => fetch.push((i, ranges)),
                    Step::Done(seg) => segments.push(seg),
                }
            }
            Ok(if fetch.is_empty() { SetStep::Done(segments) } else { SetStep::Fetch(fetch) })
        })?;
        opened += trip;
        for (source, seg) in sources.iter().zip(&segments) {
            if let Some(len) = source.object_len().filter(|&len| len != seg.file_len()) {
                let message = format!("the object holds {len} bytes, its header says {}", seg.file_len());
                return Err(remote(&**source, RemoteError::Changed(message)));
            }
        }
        let set =
            RemoteSet::new(&manifest, segments).map_err(|e| HostError::Segment { path: location.into(), source: e })?;
        Ok(RemoteSetReader {
            location: location.to_string(),
            manifest,
            set,
            sources,
            lanes: vec![Mutex::new(caches)],
            next_lane: AtomicUsize::new(0),
            cache_bytes,
            opened,
        })
    }

    /// Sets the gap below which a search's ranges are fetched as one, in every segment.
    pub fn set_merge_gap(&mut self, gap: u64) {
        for seg in self.set.segments_mut() {
            seg.set_merge_gap(gap);
        }
    }

    /// What opening read (the manifest, then the segments' bootstrap regions).
    pub fn opened(&self) -> Trip {
        self.opened
    }

    /// The set (its segments, dimension, metric).
    pub fn set(&self) -> &RemoteSet {
        &self.set
    }

    /// The manifest.
    pub fn manifest(&self) -> &SetManifest {
        &self.manifest
    }

    /// Lets `lanes` searches read at once (at least 1), the cache budget given at open shared
    /// evenly by them. The bytes cached so far are dropped.
    pub fn set_lanes(&mut self, lanes: usize) {
        let lanes = lanes.max(1);
        let each = self.cache_bytes / (lanes * self.sources.len().max(1)) as u64;
        self.lanes =
            (0..lanes).map(|_| Mutex::new(self.sources.iter().map(|_| RangeCache::new(each)).collect())).collect();
    }

    /// A free lane's caches (the lanes tried in turn from a rotating start), or, when every
    /// lane is busy, the first one tried once it is free.
    fn lane(&self) -> MutexGuard<'_, Vec<RangeCache>> {
        let n = self.lanes.len();
        let start = self.next_lane.fetch_add(1, Ordering::Relaxed) % n;
        for k in 0..n {
            match self.lanes[(start + k) % n].try_lock() {
                Ok(guard) => return guard,
                // A search that panicked leaves fetched bytes that every later use checks
                // against their CRCs (as every cached range is): the lane stays usable.
                Err(TryLockError::Poisoned(e)) => return e.into_inner(),
                Err(TryLockError::WouldBlock) => {}
            }
        }
        self.lanes[start].lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Searches every segment, fetching what the search needs; what it cost.
    pub fn search(&self, req: &SearchRequest) -> Result<(SearchResponse, Trip), HostError> {
        let mut caches = self.lane();
        caches.iter_mut().for_each(RangeCache::trim);
        let sources: Vec<&dyn RangeSource> = self.sources.iter().map(|s| &**s).collect();
        drive_set(&self.location, &sources, &mut caches, |c| self.set.search(req, c))
    }
}

#[cfg(test)]
mod tests {
    use super::beside;

    #[test]
    fn segments_lie_beside_their_manifest() {
        assert_eq!(beside("s3://b/c/manifest.json", "seg-1.shoal").unwrap(), "s3://b/c/seg-1.shoal");
        assert_eq!(beside("http://h:1/manifest.json", "seg-1.shoal").unwrap(), "http://h:1/seg-1.shoal");
        assert_eq!(beside("manifest.json", "seg-1.shoal").unwrap(), "seg-1.shoal");
        assert_eq!(beside("/data/set/manifest.json", "s").unwrap(), "/data/set/s");
        assert!(beside("http://h/manifest.json?X-Amz-Signature=1", "s").is_err());
    }
}
