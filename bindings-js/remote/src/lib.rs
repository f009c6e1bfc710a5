//! Shoal for JavaScript, reading segments by byte ranges: the wasm-bindgen layer under
//! `Collection.openRemote` in the npm package `shoal` (`js/remote.js`).
//!
//! A module of its own, loaded only when a page opens a remote segment: it links the reader by
//! ranges of `shoal_core::remote`, the IVF search and BM25 over fetched records, and none of
//! the building or sealing code of the main module (whose size budget it would otherwise
//! spend). Like
//! the main module it is built twice, with and without SIMD128, with bit-identical results.
//!
//! The core does no I/O: [`RemoteReader::open`] and [`RemoteReader::search`] return the byte
//! ranges they lack (`[start, end, start, end, …]`, empty when done); JavaScript fetches them
//! (one wave, concurrently), hands each to [`RemoteReader::supply`] and calls again.
//!
//! In wasm the crate is `no_std` with dlmalloc, and a panic traps, as in the main module.

#![cfg_attr(target_arch = "wasm32", no_std)]

extern crate alloc;

#[cfg(target_arch = "wasm32")]
#[global_allocator]
static ALLOC: dlmalloc::GlobalDlmalloc = dlmalloc::GlobalDlmalloc;

/// A panic traps (`unreachable`) without formatting its message.
#[cfg(target_arch = "wasm32")]
#[panic_handler]
fn panic(_: &core::panic::PanicInfo<'_>) -> ! {
    core::arch::wasm32::unreachable()
}

use alloc::string::{String, ToString};
use alloc::vec::Vec;
use core::ops::Range;

use shoal_core::remote::{RangeCache, RemoteSegment, RemoteSet, SetManifest, SetStep, Step};
use shoal_core::{Error, FormatError, Kernels, SearchRequest, SearchResponse};
use wasm_bindgen::prelude::*;

/// A JavaScript `Error` with the core error's message and its `code` (as in the main module),
/// and `checksum: true` when bytes failed their CRC (`js/remote.js` fetches them again once).
fn js_error(e: &Error) -> JsValue {
    let err = js_sys::Error::new(&e.to_string());
    err.set_name("ShoalError");
    // Setting a property on a fresh ordinary object cannot fail.
    let _ = js_sys::Reflect::set(&err, &JsValue::from_str("code"), &JsValue::from_str(e.code()));
    if matches!(e, Error::Format(FormatError::ChecksumMismatch { .. })) {
        let _ = js_sys::Reflect::set(&err, &JsValue::from_str("checksum"), &JsValue::TRUE);
    }
    err.into()
}

/// The search request of `json`, its `vector` replaced by `vector` when given.
fn parse_request(json: &str, vector: Option<Vec<f32>>) -> Result<SearchRequest, JsValue> {
    let mut req = SearchRequest::from_json(json).map_err(|e| js_error(&e))?;
    if vector.is_some() {
        req.vector = vector;
    }
    Ok(req)
}

/// Ranges as `[start, end, …]` (file offsets below 2^53: exact as JavaScript numbers).
fn flat(ranges: &[Range<u64>]) -> Vec<f64> {
    ranges.iter().flat_map(|r| [r.start as f64, r.end as f64]).collect()
}

/// One segment read by byte ranges: what it keeps in memory (its table and the sections every
/// query reads, once open) and the pieces fetched so far, within a byte budget.
#[wasm_bindgen]
pub struct RemoteReader {
    cache: RangeCache,
    prefix: u64,
    segment: Option<RemoteSegment>,
    done: Option<SearchResponse>,
}

#[wasm_bindgen]
impl RemoteReader {
    /// A reader keeping at most `cache_bytes` fetched bytes between searches, whose first
    /// request reads the first `prefix` bytes (a format-2 segment's `bootstrap_len` opens it
    /// with one request).
    #[wasm_bindgen(constructor)]
    pub fn new(cache_bytes: f64, prefix: f64) -> RemoteReader {
        RemoteReader { cache: RangeCache::new(cache_bytes as u64), prefix: prefix as u64, segment: None, done: None }
    }

    /// One step of opening: the ranges to fetch next, or none once the segment is open.
    pub fn open(&mut self) -> Result<Vec<f64>, JsValue> {
        if self.segment.is_some() {
            return Ok(Vec::new());
        }
        match RemoteSegment::open_with(&self.cache, self.prefix).map_err(|e| js_error(&e))? {
            Step::Fetch(ranges) => Ok(flat(&ranges)),
            Step::Done(segment) => {
                self.segment = Some(segment);
                Ok(Vec::new())
            }
        }
    }

    /// Keeps `bytes`, read from the file at `offset` (where a range asked for starts).
    pub fn supply(&mut self, offset: f64, bytes: &[u8]) {
        self.cache.insert(offset as u64, bytes);
    }

    /// One step of a search (the JSON of a `SearchRequest`; `vector`, when given, replaces its
    /// `vector`): the ranges to fetch next, or none once the results are ready
    /// ([`output`](Self::output)). Each call starts over from the fetched pieces.
    pub fn search(&mut self, json: &str, vector: Option<Vec<f32>>) -> Result<Vec<f64>, JsValue> {
        let segment = self.segment.as_ref().ok_or_else(|| js_error(&Error::Unsupported("a search before open")))?;
        let req = parse_request(json, vector)?;
        match segment.search(&req, &self.cache).map_err(|e| js_error(&e))? {
            Step::Fetch(ranges) => Ok(flat(&ranges)),
            Step::Done(res) => {
                self.done = Some(res);
                Ok(Vec::new())
            }
        }
    }

    /// The results of the search that finished last (once).
    pub fn output(&mut self) -> Option<SearchOutput> {
        self.done.take().map(|res| SearchOutput { res })
    }

    /// Drops the least recently read pieces beyond the budget (between searches).
    pub fn trim(&mut self) {
        self.cache.trim();
    }

    /// Drops every fetched piece (after bytes failed their checksum: fetched again, not kept).
    pub fn clear(&mut self) {
        self.cache.clear();
    }

    /// Fetched bytes held.
    pub fn held(&self) -> f64 {
        self.cache.held() as f64
    }

    /// Ranges this close (bytes) are fetched as one request (default 16 KiB).
    pub fn set_merge_gap(&mut self, gap: f64) {
        if let Some(s) = self.segment.as_mut() {
            s.set_merge_gap(gap as u64);
        }
    }

    /// What the open segment is, as JSON: `dim`, `metric`, `rows`, `version`, `fileLen`,
    /// `bootstrapLen`, `codesOnly` (empty before open).
    pub fn info(&self) -> String {
        let Some(s) = &self.segment else { return String::new() };
        serde_json::json!({
            "dim": s.dim(),
            "metric": s.metric().name(),
            "rows": s.rows(),
            "version": s.version(),
            "fileLen": s.file_len(),
            "bootstrapLen": s.bootstrap_len(),
            "codesOnly": s.codes_only(),
        })
        .to_string()
    }
}

/// Ranges of a set's segments as `[segment, start, end, …]`.
fn flat_set(fetch: &[(usize, Vec<Range<u64>>)]) -> Vec<f64> {
    fetch.iter().flat_map(|(i, rs)| rs.iter().flat_map(move |r| [*i as f64, r.start as f64, r.end as f64])).collect()
}

/// A segment set read by byte ranges (`shoal publish`): its manifest, and per segment what it
/// keeps in memory and the pieces fetched so far (the byte budget shared evenly). Steps name
/// every segment's missing ranges at once, as `[segment, start, end, …]`.
#[wasm_bindgen]
pub struct RemoteSetReader {
    manifest: SetManifest,
    caches: Vec<RangeCache>,
    opening: Vec<Option<RemoteSegment>>,
    set: Option<RemoteSet>,
    done: Option<SearchResponse>,
}

#[wasm_bindgen]
impl RemoteSetReader {
    /// The set of the manifest `json` (checked: a set read by ranges), keeping at most
    /// `cache_bytes` fetched bytes between searches.
    #[wasm_bindgen(constructor)]
    pub fn new(json: &str, cache_bytes: f64) -> Result<RemoteSetReader, JsValue> {
        let manifest = SetManifest::from_json(json.as_bytes()).map_err(|e| js_error(&e))?;
        let n = manifest.manifest.segments.len();
        let each = cache_bytes as u64 / n.max(1) as u64;
        Ok(RemoteSetReader {
            caches: (0..n).map(|_| RangeCache::new(each)).collect(),
            opening: (0..n).map(|_| None).collect(),
            manifest,
            set: None,
            done: None,
        })
    }

    /// The segments' file names and lengths, in set order, as JSON `[[name, bytes], …]`
    /// (each read beside the manifest).
    pub fn files(&self) -> String {
        let files: Vec<(&str, u64)> =
            self.manifest.manifest.segments.iter().map(|s| (s.file.as_str(), s.bytes)).collect();
        serde_json::to_string(&files).unwrap_or_default() // cannot fail
    }

    /// One step of opening every segment: the ranges to fetch next, or none once the set is
    /// open (each segment checked against its manifest entry).
    pub fn open(&mut self) -> Result<Vec<f64>, JsValue> {
        if self.set.is_some() {
            return Ok(Vec::new());
        }
        let mut fetch = Vec::new();
        for (i, slot) in self.opening.iter_mut().enumerate() {
            if slot.is_some() {
                continue;
            }
            let prefix = self.manifest.prefix(i);
            match RemoteSegment::open_with(&self.caches[i], prefix).map_err(|e| js_error(&e))? {
                Step::Fetch(ranges) => fetch.push((i, ranges)),
                Step::Done(segment) => *slot = Some(segment),
            }
        }
        if fetch.is_empty() {
            let segments = self.opening.iter_mut().map(|s| s.take().expect("every segment open")).collect();
            self.set = Some(RemoteSet::new(&self.manifest, segments).map_err(|e| js_error(&e))?);
        }
        Ok(flat_set(&fetch))
    }

    /// Keeps `bytes`, read from segment `segment`'s file at `offset`.
    pub fn supply(&mut self, segment: usize, offset: f64, bytes: &[u8]) {
        if let Some(c) = self.caches.get_mut(segment) {
            c.insert(offset as u64, bytes);
        }
    }

    /// One step of a search, as [`RemoteReader::search`], over every segment.
    pub fn search(&mut self, json: &str, vector: Option<Vec<f32>>) -> Result<Vec<f64>, JsValue> {
        let set = self.set.as_ref().ok_or_else(|| js_error(&Error::Unsupported("a search before open")))?;
        let req = parse_request(json, vector)?;
        let caches: Vec<&RangeCache> = self.caches.iter().collect();
        match set.search(&req, &caches).map_err(|e| js_error(&e))? {
            SetStep::Fetch(fetch) => Ok(flat_set(&fetch)),
            SetStep::Done(res) => {
                self.done = Some(res);
                Ok(Vec::new())
            }
        }
    }

    /// The results of the search that finished last (once).
    pub fn output(&mut self) -> Option<SearchOutput> {
        self.done.take().map(|res| SearchOutput { res })
    }

    /// Drops the least recently read pieces beyond the budget (between searches).
    pub fn trim(&mut self) {
        self.caches.iter_mut().for_each(RangeCache::trim);
    }

    /// Drops every fetched piece.
    pub fn clear(&mut self) {
        self.caches.iter_mut().for_each(RangeCache::clear);
    }

    /// Fetched bytes held.
    pub fn held(&self) -> f64 {
        self.caches.iter().map(|c| c.held()).sum::<u64>() as f64
    }

    /// Ranges this close (bytes) are fetched as one request, in every segment.
    pub fn set_merge_gap(&mut self, gap: f64) {
        if let Some(set) = self.set.as_mut() {
            set.segments_mut().iter_mut().for_each(|s| s.set_merge_gap(gap as u64));
        }
    }

    /// What the open set is, as JSON: `dim`, `metric`, `rows`, `segments`, `version` (2),
    /// `fileLen` and `bootstrapLen` (sums over the segments), `codesOnly` (every segment's).
    pub fn info(&self) -> String {
        let Some(set) = &self.set else { return String::new() };
        let segs = set.segments();
        serde_json::json!({
            "dim": set.dim(),
            "metric": set.metric().name(),
            "rows": set.rows(),
            "segments": segs.len(),
            "version": 2,
            "fileLen": segs.iter().map(|s| s.file_len()).sum::<u64>(),
            "bootstrapLen": segs.iter().map(|s| s.bootstrap_len()).sum::<u64>(),
            "codesOnly": !segs.is_empty() && segs.iter().all(|s| s.codes_only()),
        })
        .to_string()
    }
}

/// The results of a search read by ranges, in the shape of the main module's `SearchOutput`
/// (what `js/requests.js` reads).
#[wasm_bindgen]
pub struct SearchOutput {
    res: SearchResponse,
}

#[wasm_bindgen]
impl SearchOutput {
    /// External ids, best first (a `BigUint64Array`).
    pub fn ids(&self) -> Vec<u64> {
        self.res.points.iter().map(|p| p.id.as_num().unwrap_or(0)).collect()
    }

    /// Always empty: a segment read by ranges has integer ids.
    pub fn uuids(&self) -> Vec<u8> {
        Vec::new()
    }

    /// Scores aligned with [`ids`](Self::ids) (a `Float32Array`).
    pub fn scores(&self) -> Vec<f32> {
        self.res.points.iter().map(|p| p.score).collect()
    }

    /// Whether a deadline cut the search short (never, here).
    pub fn partial(&self) -> bool {
        self.res.partial
    }

    /// The search statistics as JSON.
    pub fn stats_json(&self) -> String {
        serde_json::to_string(&self.res.stats).unwrap_or_default() // cannot fail
    }

    /// The payloads aligned with [`ids`](Self::ids) as a JSON array, when the request asked
    /// `with_payload`.
    pub fn payloads_json(&self) -> Option<String> {
        let all: Option<Vec<&serde_json::Value>> = self.res.points.iter().map(|p| p.payload.as_ref()).collect();
        all.filter(|a| !a.is_empty()).map(|a| serde_json::to_string(&a).unwrap_or_default() /* cannot fail */)
    }
}

/// Name of the kernel implementation this build uses: `"simd128"` or `"scalar"`.
#[wasm_bindgen]
pub fn kernels_name() -> String {
    Kernels::best().name().to_string()
}
