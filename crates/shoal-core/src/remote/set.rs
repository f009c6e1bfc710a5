//! A segment set read by ranges (`docs/format.md`, "Collections as segment sets" and "Reading
//! by ranges"): a manifest naming format-2 segments, each opened with the one request its
//! `bootstrap` hint allows, and searched together — every segment's wave of a step goes out at
//! once, so a query over a set takes the round trips of a query over one segment.
//!
//! A set read by ranges is read-only: no live-rows files (deleted rows), no unsealed part, and
//! ids are not checked for uniqueness across segments at open (the manifest's writer
//! guarantees it). Results merge as a local set's do: each segment's best `offset + limit`, by
//! key, then internal id (`base + row`, bases from the manifest's row counts, in set order).
//! Rows are numbered in format 2's partition order, so equal keys in different partitions of
//! a segment break ties as in that segment laid out in format 2 (`write_reordered_v1` gives
//! the format-1 set that answers the same, ties included); distinct keys answer as the
//! format-1 set the segments were published from.

use alloc::format;
use alloc::string::ToString;
use alloc::vec::Vec;
use core::ops::Range;

use serde_json::Value;
use shoal_index::Metric;

use super::request::Part;
use super::{RangeCache, RemoteSegment, write_for_ranges};
use crate::set::{Manifest, SegmentEntry, parse_segment_name, segment_name};
use crate::{AlignedBytes, Error, SealedSegment, SearchRequest, SearchResponse};

/// The most bytes a `bootstrap` hint makes a reader fetch at once (a hostile manifest cannot
/// make it read a whole large object as its first request).
pub const MAX_BOOTSTRAP_HINT: u64 = 16 << 20;

/// A set's manifest as a reader by ranges takes it: the manifest and each segment's
/// `bootstrap` hint (bytes from offset 0 that open it in one request).
#[derive(Clone, Debug, PartialEq)]
pub struct SetManifest {
    /// The manifest: one unnamed dense vector, no sparse vectors (layout 1, or 2 when payloads
    /// are nested).
    pub manifest: Manifest,
    /// Per segment, in set order: its `bootstrap` hint, when the entry has one.
    pub bootstrap: Vec<Option<u64>>,
}

fn bad(what: alloc::string::String) -> Error {
    Error::BadSet(what)
}

impl SetManifest {
    /// Parses and checks a manifest for reading by ranges: the manifest's own checks, the
    /// entries' `bootstrap` hints (positive multiples of 64), and what such a set may hold
    /// (layout 1, no live-rows files).
    pub fn from_json(bytes: &[u8]) -> Result<SetManifest, Error> {
        let mut v: Value = serde_json::from_slice(bytes).map_err(|e| bad(format!("manifest: {e}")))?;
        let mut bootstrap = Vec::new();
        if let Some(segments) = v.get_mut("segments").and_then(Value::as_array_mut) {
            for (i, s) in segments.iter_mut().enumerate() {
                let hint = match s.as_object_mut().and_then(|o| o.remove("bootstrap")) {
                    None => None,
                    Some(b) => Some(b.as_u64().filter(|&n| n > 0 && n % 64 == 0).ok_or_else(|| {
                        bad(format!("manifest: segment {i}: bootstrap must be a positive multiple of 64"))
                    })?),
                };
                bootstrap.push(hint);
            }
        }
        let text = serde_json::to_vec(&v).map_err(|e| bad(e.to_string()))?;
        let manifest = Manifest::from_json(&text)?;
        check_publishable(&manifest)?;
        if manifest.wal.is_some() {
            return Err(bad(
                "manifest: a live collection's (it names a write-ahead log): a set read by ranges is published (`shoal publish`)"
                    .into(),
            ));
        }
        for (i, (e, hint)) in manifest.segments.iter().zip(&bootstrap).enumerate() {
            if hint.is_some_and(|b| b > e.bytes) {
                return Err(bad(format!("manifest: segment {i}: bootstrap beyond the segment's end")));
            }
        }
        Ok(SetManifest { manifest, bootstrap })
    }

    /// The manifest as JSON: [`Manifest::to_json`] with each entry's `bootstrap` hint added
    /// (keys sorted, compact, a line break at the end).
    pub fn to_json(&self) -> Vec<u8> {
        let mut v: Value = serde_json::from_slice(&self.manifest.to_json()).expect("a manifest's own JSON");
        if let Some(segments) = v.get_mut("segments").and_then(Value::as_array_mut) {
            for (s, hint) in segments.iter_mut().zip(&self.bootstrap) {
                if let (Some(o), Some(b)) = (s.as_object_mut(), hint) {
                    o.insert("bootstrap".into(), Value::from(*b));
                }
            }
        }
        let mut out = serde_json::to_vec(&v).expect("JSON values serialize");
        out.push(b'\n');
        out
    }

    /// The bytes from offset 0 that open segment `i`: its `bootstrap` hint (at most
    /// [`MAX_BOOTSTRAP_HINT`]: a larger bootstrap region takes a second request), else
    /// [`OPEN_PREFIX`](super::OPEN_PREFIX).
    pub fn prefix(&self, i: usize) -> u64 {
        self.bootstrap[i].map_or(super::OPEN_PREFIX, |b| b.min(MAX_BOOTSTRAP_HINT))
    }

    /// Checks the opened segment `i` against its entry: format 2, its length, its section
    /// table's CRC, its rows, and the collection's dimension and metric.
    pub fn check_segment(&self, i: usize, seg: &RemoteSegment) -> Result<(), Error> {
        let e = &self.manifest.segments[i];
        let spec = &self.manifest.vectors[0];
        let crc = format!("{:08x}", seg.table_crc());
        let differs = if seg.version() != shoal_format::VERSION_RANGES {
            Some(format!("format {}: a set read by ranges holds format-2 segments (`shoal publish`)", seg.version()))
        } else if seg.file_len() != e.bytes {
            Some(format!("{} bytes, the manifest says {}", seg.file_len(), e.bytes))
        } else if crc != e.table_crc {
            Some(format!("table CRC {crc}, the manifest says {}", e.table_crc))
        } else if seg.rows() as u64 != e.rows {
            Some(format!("{} rows, the manifest says {}", seg.rows(), e.rows))
        } else if seg.dim() != spec.dim || seg.metric() != spec.metric {
            Some(format!(
                "{}-d {}, the collection is {}-d {}",
                seg.dim(),
                seg.metric().name(),
                spec.dim,
                spec.metric.name()
            ))
        } else {
            None
        };
        match differs {
            Some(what) => Err(bad(format!("manifest: segment {i} ({}): {what}", e.file))),
            None => Ok(()),
        }
    }
}

/// Checks that the set of `manifest` can be laid out for reading by ranges: one unnamed dense
/// vector, no deleted rows.
pub fn check_publishable(manifest: &Manifest) -> Result<(), Error> {
    let one_vector = manifest.sparse.is_empty() && manifest.vectors.len() == 1 && manifest.vectors[0].name.is_empty();
    if !one_vector {
        return Err(Error::Unsupported("named, several or sparse vectors in a set read by ranges"));
    }
    if let Some(s) = manifest.segments.iter().find(|s| s.live.is_some()) {
        return Err(bad(format!(
            "segment {} has deleted rows: a set read by ranges holds only live rows (merge them away first)",
            s.file
        )));
    }
    Ok(())
}

/// The segment `seg` of a set (its manifest entry `entry`) laid out for reading by ranges: its
/// new entry (the same number, its new table CRC in the name), its bootstrap hint, and its
/// bytes in format 2 (the same index: [`write_for_ranges`]).
pub fn lay_out_segment(entry: &SegmentEntry, seg: &SealedSegment) -> Result<(SegmentEntry, u64, AlignedBytes), Error> {
    if seg.rows() as u64 != entry.rows || seg.table_crc() != u32::from_str_radix(&entry.table_crc, 16).unwrap_or(!0) {
        return Err(bad(format!("segment {}: not the segment its entry names", entry.file)));
    }
    let bytes = write_for_ranges(seg)?;
    let head = shoal_format::SegmentHead::read(bytes.as_slice())?;
    let (number, _) = parse_segment_name(&entry.file).ok_or_else(|| bad(format!("{}: bad file name", entry.file)))?;
    let crc = head.header.table_crc;
    let e = SegmentEntry {
        file: segment_name(number, crc),
        rows: entry.rows,
        bytes: bytes.as_slice().len() as u64,
        table_crc: format!("{crc:08x}"),
        live: None,
    };
    Ok((e, head.bootstrap_len(), bytes))
}

impl SetManifest {
    /// The manifest of `manifest`'s set laid out for reading by ranges: its vector, index,
    /// generation and payload schema, the new `entries` with their bootstrap `hints` (in set
    /// order), and no `wal`.
    pub fn published(manifest: &Manifest, entries: Vec<SegmentEntry>, hints: Vec<u64>) -> SetManifest {
        // Its layout as its features say (nested payloads: layout 2), as `to_json` writes it.
        let layout =
            if manifest.features() { crate::set::MANIFEST_VERSION_FEATURES } else { crate::set::MANIFEST_VERSION };
        let manifest = Manifest { shoal_manifest: layout, segments: entries, wal: None, ..manifest.clone() };
        SetManifest { manifest, bootstrap: hints.into_iter().map(Some).collect() }
    }
}

/// What a set read by ranges does next.
#[derive(Debug, PartialEq)]
pub enum SetStep<T> {
    /// Fetch these ranges, each of the segment at its position in the set (every segment's
    /// ranges together: one wave), insert them into that segment's cache, and call again.
    Fetch(Vec<(usize, Vec<Range<u64>>)>),
    /// Finished.
    Done(T),
}

/// A set of format-2 segments read by ranges.
#[derive(Debug)]
pub struct RemoteSet {
    segments: Vec<RemoteSegment>,
    /// The internal id of each segment's row 0.
    bases: Vec<u64>,
    metric: Metric,
    dim: usize,
    /// Whether the collection's schema has text fields.
    text_fields: bool,
    /// The collection's payload schema (filters are checked against it).
    schema: shoal_payload::Schema,
}

impl RemoteSet {
    /// The set of `manifest` from its opened segments (in set order), each checked against
    /// its entry.
    pub fn new(manifest: &SetManifest, segments: Vec<RemoteSegment>) -> Result<RemoteSet, Error> {
        if segments.len() != manifest.manifest.segments.len() {
            return Err(bad(format!(
                "{} segments opened, the manifest names {}",
                segments.len(),
                manifest.manifest.segments.len()
            )));
        }
        let mut bases = Vec::with_capacity(segments.len());
        let mut base = 0u64;
        for (i, seg) in segments.iter().enumerate() {
            manifest.check_segment(i, seg)?;
            bases.push(base);
            base += seg.rows() as u64;
        }
        let spec = &manifest.manifest.vectors[0];
        let m = &manifest.manifest;
        let schema = if m.fields.is_null() {
            shoal_payload::Schema::default()
        } else if m.nested {
            crate::Collection::parse_nested_schema(&m.fields)?
        } else {
            crate::Collection::parse_schema(&m.fields)?
        };
        let text_fields = segments.iter().any(|s| s.text.is_some()) || crate::text::has_text(&schema);
        Ok(RemoteSet { segments, bases, metric: spec.metric, dim: spec.dim, text_fields, schema })
    }

    /// The segments, in set order.
    pub fn segments(&self) -> &[RemoteSegment] {
        &self.segments
    }

    /// Mutable access to the segments (their merge gap, their kernels).
    pub fn segments_mut(&mut self) -> &mut [RemoteSegment] {
        &mut self.segments
    }

    /// Vector dimension.
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// Metric.
    pub fn metric(&self) -> Metric {
        self.metric
    }

    /// Rows in every segment.
    pub fn rows(&self) -> u64 {
        self.segments.iter().map(|s| s.rows() as u64).sum()
    }

    /// Searches every segment over the bytes fetched so far (`caches[i]` holds segment `i`'s):
    /// the merged results, or every segment's missing ranges at once. A request is what
    /// [`RemoteSegment::search`] takes; the answer is the local set's, bit for bit.
    pub fn search(&self, req: &SearchRequest, caches: &[&RangeCache]) -> Result<SetStep<SearchResponse>, Error> {
        assert_eq!(caches.len(), self.segments.len(), "a cache per segment");
        let parts: Vec<Part<'_>> = self
            .segments
            .iter()
            .zip(caches)
            .zip(&self.bases)
            .map(|((seg, cache), &base)| Part { seg, cache, base })
            .collect();
        super::request::search(&parts, req, (self.dim, self.metric), self.text_fields, &self.schema)
    }
}
