//! A collection as a set of segments (`docs/format.md`, "Collections as segment sets"): the
//! manifest that names them, the live-rows files that record their deleted rows, segment file
//! names, and the size-tiered merge policy. Everything here is bytes and JSON; hosts do the
//! file (or object) input and output.

use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;

use serde_json::{Map, Value};

use crate::Error;
use crate::bitset::Bitset;

/// The manifest layout of a collection that uses no feature (`shoal_manifest`).
pub const MANIFEST_VERSION: u32 = 1;
/// The manifest layout of a collection with features (`docs/format.md`, "Named vectors",
/// "Configuration"): named or several dense vectors, sparse vectors or nested payloads.
pub const MANIFEST_VERSION_FEATURES: u32 = 2;

/// The manifest of a segment set: the collection's configuration and its segments, in set
/// order. Written as compact JSON with sorted keys, so the same set gives the same bytes on
/// every host. (Read and written through `serde_json::Value`, not derived code: the npm
/// package's size budget.)
#[derive(Clone, Debug, PartialEq)]
pub struct Manifest {
    /// [`MANIFEST_VERSION`].
    pub shoal_manifest: u32,
    /// +1 on every replacement.
    pub generation: u64,
    /// The dense vectors, by name ascending (layout 1: one named `""`, from `dim` and `metric`).
    pub vectors: Vec<crate::DenseSpec>,
    /// The payload schema (`{}`: none).
    pub fields: Value,
    /// The seal options every seal and merge builds with (`{}`: flat).
    pub index: Value,
    /// The segments, in set order.
    pub segments: Vec<SegmentEntry>,
    /// Native host only: the first log generation whose writes are not in the segments.
    pub wal: Option<u64>,
    /// Whether payloads are nested (`"payload": "nested"`, layout 2).
    pub nested: bool,
    /// The sparse vectors, by name ascending (`"sparse_vectors"`, layout 2).
    pub sparse: Vec<crate::SparseSpec>,
}

/// One segment of a [`Manifest`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SegmentEntry {
    /// File name, [`segment_name`].
    pub file: String,
    /// Rows, deleted ones included.
    pub rows: u64,
    /// File length in bytes.
    pub bytes: u64,
    /// The CRC-32C of the segment's section table, 8 lowercase hex digits.
    pub table_crc: String,
    /// The live-rows file, when some rows are deleted.
    pub live: Option<LiveEntry>,
}

/// The live-rows file of a [`SegmentEntry`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LiveEntry {
    /// File name, [`live_name`].
    pub file: String,
    /// Live rows.
    pub rows: u64,
}

fn bad(what: String) -> Error {
    Error::BadSet(what)
}

/// The object `v` with exactly the keys `required` and at most the keys `optional` besides.
fn object<'v>(v: &'v Value, what: &str, required: &[&str], optional: &[&str]) -> Result<&'v Map<String, Value>, Error> {
    let o = v.as_object().ok_or_else(|| bad(format!("{what}: expected an object")))?;
    if let Some(k) = o.keys().find(|k| !required.contains(&k.as_str()) && !optional.contains(&k.as_str())) {
        return Err(bad(format!("{what}: unknown key \"{k}\"")));
    }
    if let Some(k) = required.iter().find(|k| !o.contains_key(**k)) {
        return Err(bad(format!("{what}: missing key \"{k}\"")));
    }
    Ok(o)
}

fn uint(o: &Map<String, Value>, what: &str, key: &str) -> Result<u64, Error> {
    o[key].as_u64().ok_or_else(|| bad(format!("{what}: {key} must be an unsigned integer")))
}

fn string(o: &Map<String, Value>, what: &str, key: &str) -> Result<String, Error> {
    Ok(o[key].as_str().ok_or_else(|| bad(format!("{what}: {key} must be a string")))?.to_string())
}

fn parse_segment(v: &Value, what: &str) -> Result<SegmentEntry, Error> {
    let o = object(v, what, &["file", "rows", "bytes", "table_crc", "live"], &[])?;
    let live = match &o["live"] {
        Value::Null => None,
        l => {
            let lo = object(l, what, &["file", "rows"], &[])?;
            Some(LiveEntry { file: string(lo, what, "file")?, rows: uint(lo, what, "rows")? })
        }
    };
    Ok(SegmentEntry {
        file: string(o, what, "file")?,
        rows: uint(o, what, "rows")?,
        bytes: uint(o, what, "bytes")?,
        table_crc: string(o, what, "table_crc")?,
        live,
    })
}

impl Manifest {
    /// Parses and checks a manifest (structure, version, names and counts; not the files).
    pub fn from_json(bytes: &[u8]) -> Result<Manifest, Error> {
        let v: Value = serde_json::from_slice(bytes).map_err(|e| bad(format!("manifest: {e}")))?;
        let layout = v.get("shoal_manifest").and_then(Value::as_u64);
        let mut specs = Vec::new();
        let metric_of = |v: &Map<String, Value>, what: &str| match v["metric"].as_str() {
            Some("l2") => Ok(shoal_index::Metric::L2),
            Some("dot") => Ok(shoal_index::Metric::Dot),
            Some("cosine") => Ok(shoal_index::Metric::Cosine),
            _ => Err(bad(format!("{what}: unknown metric"))),
        };
        let dim_of =
            |v: &Map<String, Value>, what: &str| uint(v, what, "dim").map(|d| usize::try_from(d).unwrap_or(usize::MAX));
        // Layout 2 keeps each dense vector's settings under `vectors`, by name.
        let (o, index, vectors) = if layout == Some(u64::from(MANIFEST_VERSION_FEATURES)) {
            let keys = ["shoal_manifest", "generation", "fields", "payload", "segments", "sparse_vectors", "vectors"];
            let o = object(&v, "manifest", &keys, &["wal"])?;
            let all = o["vectors"].as_object().ok_or_else(|| bad("manifest: vectors: expected an object".into()))?;
            let mut vectors = Vec::with_capacity(all.len());
            let mut index = None;
            for (name, spec) in all {
                let what = format!("manifest: vector \"{name}\"");
                let spec = object(spec, &what, &["dim", "metric", "index"], &[])?;
                // (Compared as text: `Value`'s `PartialEq` is more code in the package.)
                let text = spec["index"].to_string();
                if index.as_ref().is_some_and(|(i, _)| *i != text) {
                    return Err(bad("manifest: every dense vector has the collection's index".into()));
                }
                index = Some((text, &spec["index"]));
                let (dim, metric) = (dim_of(spec, &what)?, metric_of(spec, &what)?);
                vectors.push(crate::DenseSpec { name: name.clone(), dim, metric });
            }
            crate::dense::sort_specs(&mut vectors);
            crate::dense::check_specs(&vectors).map_err(|e| bad(format!("manifest: {e}")))?;
            specs = crate::SparseSpec::list_from_value(&o["sparse_vectors"], true)
                .map_err(|e| bad(format!("manifest: {e}")))?;
            if o["payload"] != "nested" && o["payload"] != "flat" {
                return Err(bad("manifest: payload must be \"flat\" or \"nested\"".into()));
            }
            (o, index.map_or(Value::Null, |(_, i)| i.clone()), vectors)
        } else {
            let keys = ["shoal_manifest", "generation", "dim", "metric", "fields", "index", "segments"];
            let o = object(&v, "manifest", &keys, &["wal"])?;
            let first = crate::DenseSpec {
                name: String::new(),
                dim: dim_of(o, "manifest")?,
                metric: metric_of(o, "manifest")?,
            };
            (o, o["index"].clone(), alloc::vec![first])
        };
        let segments = o["segments"].as_array().ok_or_else(|| bad("manifest: segments must be an array".into()))?;
        let m = Manifest {
            shoal_manifest: u32::try_from(uint(o, "manifest", "shoal_manifest")?).unwrap_or(u32::MAX),
            generation: uint(o, "manifest", "generation")?,
            vectors,
            fields: o["fields"].clone(),
            index,
            nested: o.get("payload").is_some_and(|p| p == "nested"),
            segments: segments
                .iter()
                .enumerate()
                .map(|(i, s)| parse_segment(s, &format!("manifest: segment {i}")))
                .collect::<Result<_, _>>()?,
            wal: o.get("wal").map(|_| uint(o, "manifest", "wal")).transpose()?,
            sparse: specs,
        };
        if m.shoal_manifest != MANIFEST_VERSION && m.shoal_manifest != MANIFEST_VERSION_FEATURES {
            return Err(bad(format!(
                "manifest: layout {} (this reader knows {MANIFEST_VERSION} and {MANIFEST_VERSION_FEATURES})",
                m.shoal_manifest
            )));
        }
        if (m.shoal_manifest == MANIFEST_VERSION_FEATURES) != m.features() {
            return Err(bad(
                "manifest: layout 2 is for collections with named dense vectors, sparse vectors or nested payloads"
                    .into(),
            ));
        }
        if !m.fields.is_object() || !m.index.is_object() {
            return Err(bad("manifest: `fields` and `index` must be objects".into()));
        }
        let mut numbers = Vec::with_capacity(m.segments.len());
        for (i, s) in m.segments.iter().enumerate() {
            let (number, crc) =
                parse_segment_name(&s.file).ok_or_else(|| bad(format!("manifest: segment {i}: bad file name")))?;
            if format!("{crc:08x}") != s.table_crc {
                return Err(bad(format!("manifest: segment {i}: table_crc differs from its file name")));
            }
            if numbers.contains(&number) {
                return Err(bad(format!("manifest: segment {i}: number {number} appears twice")));
            }
            numbers.push(number);
            if let Some(l) = &s.live {
                if l.rows > s.rows {
                    return Err(bad(format!("manifest: segment {i}: more live rows than rows")));
                }
                if parse_live_name(&l.file).is_none_or(|(seg, _)| seg != s.file) {
                    return Err(bad(format!("manifest: segment {i}: bad live-rows file name")));
                }
            }
        }
        Ok(m)
    }

    /// Whether the collection uses a feature of layout 2 (named or several dense vectors,
    /// sparse vectors, nested payloads).
    pub fn features(&self) -> bool {
        self.nested || !self.sparse.is_empty() || self.vectors.len() != 1 || !self.vectors[0].name.is_empty()
    }

    /// The manifest as compact JSON (keys sorted), then a line break: layout 1, or layout 2
    /// with its features. Written by hand (names escaped by `serde_json`, `metric` one of three
    /// words): less code in the package.
    pub fn to_json(&self) -> Vec<u8> {
        use core::fmt::Write;
        let mut out = String::new();
        let (dim, metric) = (self.vectors[0].dim, self.vectors[0].metric.name());
        if self.features() {
            let payload = if self.nested { "nested" } else { "flat" };
            let _ = write!(
                out,
                "{{\"fields\":{},\"generation\":{},\"payload\":\"{payload}\",\"segments\":[",
                self.fields, self.generation
            );
        } else {
            let _ = write!(
                out,
                "{{\"dim\":{dim},\"fields\":{},\"generation\":{},\"index\":{},\"metric\":\"{metric}\",\"segments\":[",
                self.fields, self.generation, self.index
            );
        }
        for (i, seg) in self.segments.iter().enumerate() {
            let live = match &seg.live {
                Some(l) => format!("{{\"file\":{},\"rows\":{}}}", Value::from(l.file.as_str()), l.rows),
                None => "null".into(),
            };
            let _ = write!(
                out,
                "{}{{\"bytes\":{},\"file\":{},\"live\":{live},\"rows\":{},\"table_crc\":{}}}",
                if i == 0 { "" } else { "," },
                seg.bytes,
                Value::from(seg.file.as_str()),
                seg.rows,
                Value::from(seg.table_crc.as_str())
            );
        }
        if self.features() {
            let _ = write!(out, "],\"shoal_manifest\":{MANIFEST_VERSION_FEATURES},\"sparse_vectors\":{{");
            for (i, s) in self.sparse.iter().enumerate() {
                let modifier = if s.idf { "idf" } else { "none" };
                let name = Value::from(s.name.as_str());
                let _ = write!(out, "{}{name}:{{\"modifier\":\"{modifier}\"}}", if i == 0 { "" } else { "," });
            }
            out.push_str("},\"vectors\":{");
            for (i, v) in self.vectors.iter().enumerate() {
                let _ = write!(
                    out,
                    "{}{}:{{\"dim\":{},\"index\":{},\"metric\":\"{}\"}}",
                    if i == 0 { "" } else { "," },
                    Value::from(v.name.as_str()),
                    v.dim,
                    self.index,
                    v.metric.name()
                );
            }
            out.push('}');
        } else {
            let _ = write!(out, "],\"shoal_manifest\":{}", self.shoal_manifest);
        }
        if let Some(w) = self.wal {
            let _ = write!(out, ",\"wal\":{w}");
        }
        out.push_str("}\n");
        out.into_bytes()
    }
}

/// The file name of segment `number` whose section table has CRC-32C `table_crc`:
/// `seg-NNNNNNNNNN-hhhhhhhh.shoal`.
pub fn segment_name(number: u64, table_crc: u32) -> String {
    format!("seg-{number:010}-{table_crc:08x}.shoal")
}

/// The number and table CRC of a segment file name.
pub fn parse_segment_name(name: &str) -> Option<(u64, u32)> {
    let rest = name.strip_prefix("seg-")?.strip_suffix(".shoal")?;
    let (number, crc) = rest.split_once('-')?;
    if number.len() != 10 || crc.len() != 8 || !crc.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)) {
        return None;
    }
    Some((number.parse().ok()?, u32::from_str_radix(crc, 16).ok()?))
}

/// The name of the live-rows file of `segment` written by manifest generation `generation`.
pub fn live_name(segment: &str, generation: u64) -> String {
    format!("{segment}.live-{generation:010}")
}

/// The segment file name and generation of a live-rows file name.
pub fn parse_live_name(name: &str) -> Option<(String, u64)> {
    let (segment, generation) = name.rsplit_once(".live-")?;
    parse_segment_name(segment)?;
    if generation.len() != 10 {
        return None;
    }
    Some((segment.to_string(), generation.parse().ok()?))
}

const LIVE_MAGIC: &[u8; 8] = b"SHOALLIV";
const LIVE_VERSION: u32 = 1;
const LIVE_HEADER: usize = 32;

fn crc_of_live(bytes: &[u8]) -> u32 {
    let mut all = Vec::with_capacity(bytes.len() - 4);
    all.extend_from_slice(&bytes[..12]);
    all.extend_from_slice(&bytes[16..]);
    shoal_format::crc32c(&all)
}

/// The live-rows file of a segment of `rows` rows whose deleted rows are `deleted`.
pub(crate) fn encode_live(rows: usize, deleted: &Bitset) -> Vec<u8> {
    let words = rows.div_ceil(64);
    let mut out = Vec::with_capacity(LIVE_HEADER + 8 * words);
    out.extend_from_slice(LIVE_MAGIC);
    out.extend_from_slice(&LIVE_VERSION.to_le_bytes());
    out.extend_from_slice(&[0; 4]);
    out.extend_from_slice(&(rows as u64).to_le_bytes());
    out.extend_from_slice(&((rows - deleted.count()) as u64).to_le_bytes());
    for w in 0..words {
        let mut word = 0u64;
        for bit in 0..64 {
            let r = w * 64 + bit;
            if r < rows && !deleted.contains(r) {
                word |= 1 << bit;
            }
        }
        out.extend_from_slice(&word.to_le_bytes());
    }
    let crc = crc_of_live(&out);
    out[12..16].copy_from_slice(&crc.to_le_bytes());
    out
}

/// The deleted rows recorded by a live-rows file for a segment of `rows` rows whose manifest
/// entry says `live` rows are live.
pub(crate) fn decode_live(bytes: &[u8], rows: usize, live: u64) -> Result<Bitset, Error> {
    let words = rows.div_ceil(64);
    if bytes.len() != LIVE_HEADER + 8 * words {
        return Err(bad(format!("live-rows file: {} bytes, expected {}", bytes.len(), LIVE_HEADER + 8 * words)));
    }
    if &bytes[..8] != LIVE_MAGIC {
        return Err(bad("live-rows file: bad magic".into()));
    }
    let u32_at = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().expect("4 bytes"));
    let u64_at = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8 bytes"));
    if u32_at(8) != LIVE_VERSION {
        return Err(bad(format!("live-rows file: version {}", u32_at(8))));
    }
    if u32_at(12) != crc_of_live(bytes) {
        return Err(bad("live-rows file: checksum mismatch".into()));
    }
    if u64_at(16) != rows as u64 {
        return Err(bad("live-rows file: row count differs from the segment's".into()));
    }
    let mut deleted = Bitset::default();
    let mut set = 0u64;
    for w in 0..words {
        let word = u64_at(LIVE_HEADER + 8 * w);
        for bit in 0..64 {
            let r = w * 64 + bit;
            let is_live = word & (1 << bit) != 0;
            if r >= rows {
                if is_live {
                    return Err(bad("live-rows file: a bit past the last row is set".into()));
                }
            } else if is_live {
                set += 1;
            } else {
                deleted.insert(r);
            }
        }
    }
    if set != u64_at(24) || set != live {
        return Err(bad("live-rows file: live count disagrees with its bits or the manifest".into()));
    }
    Ok(deleted)
}

/// Settings of the size-tiered merge policy (`docs/format.md`, "Set operations").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MergePolicy {
    /// Segments per tier before they merge (`F`), at least 2.
    pub merge_factor: usize,
    /// Live rows below which segments share the lowest tier.
    pub min_merge_rows: u64,
    /// A merge whose output would exceed this many rows is not made.
    pub max_merge_rows: u64,
    /// A segment of at least `min_merge_rows` rows with more than this share of its rows
    /// deleted (in percent) is rewritten on its own.
    pub max_deleted_percent: u64,
}

impl Default for MergePolicy {
    fn default() -> Self {
        MergePolicy { merge_factor: 8, min_merge_rows: 10_000, max_merge_rows: 16_000_000, max_deleted_percent: 30 }
    }
}

impl MergePolicy {
    /// The tier of a segment with `live` live rows.
    fn tier(&self, live: u64) -> u32 {
        let f = self.merge_factor.max(2) as u64;
        let mut size = live.max(self.min_merge_rows) / self.min_merge_rows.max(1);
        let mut tier = 0;
        while size >= f {
            size /= f;
            tier += 1;
        }
        tier
    }

    /// The next merge for segments of `(rows, live rows)`, in set order: the indices of the
    /// segments to merge, ascending, or `None`. A pure function of its input, so every host
    /// makes the same merges.
    pub fn next_merge(&self, segments: &[(u64, u64)]) -> Option<Vec<usize>> {
        let f = self.merge_factor.max(2);
        let tiers: Vec<u32> = segments.iter().map(|&(_, live)| self.tier(live)).collect();
        let top = tiers.iter().copied().max().unwrap_or(0);
        for tier in 0..=top {
            let pick: Vec<usize> = (0..segments.len()).filter(|&i| tiers[i] == tier).take(f).collect();
            let total: u64 = pick.iter().map(|&i| segments[i].1).sum();
            if pick.len() == f && total <= self.max_merge_rows {
                return Some(pick);
            }
        }
        segments
            .iter()
            .position(|&(rows, live)| {
                rows >= self.min_merge_rows && (rows - live) * 100 > rows * self.max_deleted_percent
            })
            .map(|i| alloc::vec![i])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_reject_lookalikes() {
        let n = segment_name(42, 0xdead_beef);
        assert_eq!(n, "seg-0000000042-deadbeef.shoal");
        assert_eq!(parse_segment_name(&n), Some((42, 0xdead_beef)));
        for bad in ["seg-42-deadbeef.shoal", "seg-0000000042-DEADBEEF.shoal", "seg-0000000042-deadbeef", "x.shoal"] {
            assert_eq!(parse_segment_name(bad), None, "{bad}");
        }
        let l = live_name(&n, 7);
        assert_eq!(parse_live_name(&l), Some((n, 7)));
        assert_eq!(parse_live_name("seg-0000000042-deadbeef.shoal.live-7"), None);
    }

    #[test]
    fn live_files_round_trip_and_reject_damage() {
        for rows in [0usize, 1, 63, 64, 65, 1000] {
            let mut deleted = Bitset::default();
            for r in (0..rows).filter(|r| r % 7 == 3) {
                deleted.insert(r);
            }
            let bytes = encode_live(rows, &deleted);
            let live = (rows - deleted.count()) as u64;
            let back = decode_live(&bytes, rows, live).unwrap();
            assert_eq!(back.iter().collect::<Vec<_>>(), deleted.iter().collect::<Vec<_>>());
            assert!(decode_live(&bytes, rows + 1, live).is_err());
            assert!(decode_live(&bytes, rows, live + 1).is_err());
            for at in [0, 9, 13, 17, 25, bytes.len() - 1] {
                if at < bytes.len() {
                    let mut b = bytes.clone();
                    b[at] ^= 0x10;
                    assert!(decode_live(&b, rows, live).is_err(), "rows {rows}, flipped byte {at}");
                }
            }
            assert!(decode_live(&bytes[..bytes.len() - 1], rows, live).is_err());
        }
    }

    #[test]
    fn policy_merges_full_tiers_then_deleted_heavy_segments() {
        let p =
            MergePolicy { merge_factor: 3, min_merge_rows: 100, max_merge_rows: 1_000_000, max_deleted_percent: 30 };
        assert_eq!(p.next_merge(&[(50, 50), (80, 80)]), None);
        assert_eq!(p.next_merge(&[(50, 50), (5000, 5000), (80, 80), (10, 10)]), Some(alloc::vec![0, 2, 3]));
        // Tier 1 (300..900 rows) fills up before tier 0.
        assert_eq!(p.next_merge(&[(400, 400), (10, 10), (500, 500), (600, 600)]), Some(alloc::vec![0, 2, 3]));
        // A capped merge is skipped.
        let capped = MergePolicy { max_merge_rows: 1000, ..p };
        assert_eq!(capped.next_merge(&[(400, 400), (500, 500), (600, 600)]), None);
        // 40% deleted.
        assert_eq!(p.next_merge(&[(1000, 600), (50, 50)]), Some(alloc::vec![0]));
        assert_eq!(p.next_merge(&[(1000, 800)]), None);
    }

    #[test]
    fn manifests_round_trip_and_reject_inconsistent_entries() {
        let file = segment_name(3, 0x0102_0304);
        let m = Manifest {
            shoal_manifest: MANIFEST_VERSION,
            generation: 9,
            vectors: alloc::vec![crate::DenseSpec { name: String::new(), dim: 4, metric: shoal_index::Metric::L2 }],
            fields: serde_json::json!({"tag": "keyword"}),
            index: serde_json::json!({}),
            segments: alloc::vec![SegmentEntry {
                file: file.clone(),
                rows: 10,
                bytes: 4096,
                table_crc: "01020304".into(),
                live: Some(LiveEntry { file: live_name(&file, 9), rows: 8 }),
            }],
            wal: Some(4),
            nested: false,
            sparse: Vec::new(),
        };
        let json = m.to_json();
        assert_eq!(Manifest::from_json(&json).unwrap(), m);
        // Nested payloads: layout 2, the vector's settings under `vectors`.
        let nested = Manifest { shoal_manifest: MANIFEST_VERSION_FEATURES, nested: true, ..m.clone() };
        let text = String::from_utf8(nested.to_json()).unwrap();
        assert!(
            text.starts_with(r#"{"fields":{"tag":"keyword"},"generation":9,"payload":"nested","segments":["#),
            "{text}"
        );
        assert!(
            text.ends_with(concat!(
                r#""shoal_manifest":2,"sparse_vectors":{},"vectors":{"":{"dim":4,"index":{},"metric":"l2"}},"wal":4}"#,
                "\n"
            )),
            "{text}"
        );
        assert_eq!(Manifest::from_json(text.as_bytes()).unwrap(), nested);
        // Sparse vectors (flat payloads): layout 2 too, names in byte order.
        let specs = alloc::vec![
            crate::SparseSpec { name: "a b".into(), idf: false },
            crate::SparseSpec { name: "text-sparse".into(), idf: true },
        ];
        let sparse = Manifest { shoal_manifest: MANIFEST_VERSION_FEATURES, sparse: specs, ..m.clone() };
        let sparse_text = String::from_utf8(sparse.to_json()).unwrap();
        assert!(sparse_text.contains(r#""payload":"flat""#), "{sparse_text}");
        assert!(
            sparse_text
                .contains(r#""sparse_vectors":{"a b":{"modifier":"none"},"text-sparse":{"modifier":"idf"}},"vectors""#),
            "{sparse_text}"
        );
        assert_eq!(Manifest::from_json(sparse_text.as_bytes()).unwrap(), sparse);
        for bad_text in [
            sparse_text.replace(r#""modifier":"idf""#, r#""modifier":"bm25""#),
            sparse_text.replace(r#""a b":"#, r#""":"#),
            sparse_text.replace(r#"{"modifier":"none"}"#, "{}"),
            sparse_text.replace(r#""shoal_manifest":2"#, r#""shoal_manifest":1"#),
        ] {
            assert!(Manifest::from_json(bad_text.as_bytes()).is_err(), "{bad_text}");
        }
        for bad_text in [
            text.replace(r#""payload":"nested""#, r#""payload":"flat""#),
            text.replace(r#""sparse_vectors":{}"#, r#""sparse_vectors":{"s":{}}"#),
            text.replace(r#""vectors":{"":{"dim":4,"index":{},"metric":"l2"}}"#, r#""vectors":{}"#),
            text.replace(r#""metric":"l2"}}"#, r#""metric":"euclid"}}"#),
            text.replace(r#""dim":4"#, r#""dim":0"#),
            text.replace(r#"{"":{"dim""#, r#"{"":{"size":4,"dim""#),
        ] {
            assert!(matches!(Manifest::from_json(bad_text.as_bytes()), Err(Error::BadSet(_))), "{bad_text}");
        }
        // Named and several dense vectors: layout 2, each under its name, in byte order.
        let vectors = alloc::vec![
            crate::DenseSpec { name: "image".into(), dim: 3, metric: shoal_index::Metric::Cosine },
            crate::DenseSpec { name: "text".into(), dim: 4, metric: shoal_index::Metric::Dot },
        ];
        let named = Manifest { shoal_manifest: MANIFEST_VERSION_FEATURES, vectors, ..m.clone() };
        let named_text = String::from_utf8(named.to_json()).unwrap();
        assert!(
            named_text.contains(concat!(
                r#""vectors":{"image":{"dim":3,"index":{},"metric":"cosine"},"#,
                r#""text":{"dim":4,"index":{},"metric":"dot"}}"#
            )),
            "{named_text}"
        );
        assert_eq!(Manifest::from_json(named_text.as_bytes()).unwrap(), named);
        let one = Manifest { vectors: alloc::vec![named.vectors[1].clone()], ..named.clone() };
        assert_eq!(Manifest::from_json(&one.to_json()).unwrap(), one);
        for bad_text in [
            named_text.replace(r#""dim":3,"index":{}"#, r#""dim":3,"index":{"index":"ivf-rabitq"}"#),
            named_text.replace(r#""image""#, r#""im\u0007age""#),
            named_text.replace(r#""shoal_manifest":2"#, r#""shoal_manifest":1"#),
        ] {
            assert!(matches!(Manifest::from_json(bad_text.as_bytes()), Err(Error::BadSet(_))), "{bad_text}");
        }
        let text = core::str::from_utf8(&json).unwrap();
        for (from, to) in [
            ("\"01020304\"", "\"01020305\""),
            ("\"rows\":8", "\"rows\":11"),
            ("\"generation\"", "\"generations\""),
            ("\"shoal_manifest\":1", "\"shoal_manifest\":2"),
            ("\"wal\":4", "\"wal\":-4"),
            ("\"bytes\":4096,", ""),
            (".live-0000000009", ".live-9"),
        ] {
            assert!(Manifest::from_json(text.replace(from, to).as_bytes()).is_err(), "{from} -> {to}");
        }
    }
}
