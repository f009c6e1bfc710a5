//! `shoal inspect`: a segment's header, section table and `META`, without reading the file.
//!
//! Only the header, the table and `META` are read (the rest of the mapping is never touched),
//! so inspecting a segment of any size is instant. The container must be readable; a segment
//! whose container is fine but whose sections are inconsistent is still shown, then reported.

use std::fmt::Write as _;
use std::path::PathBuf;

use serde_json::{Value, json};
use shoal_core::{Collection, Error, Metric};
use shoal_format::{
    KIND_IVF_BLOCKS, KIND_IVF_DIR, KIND_META, SECTION_HOT, SECTION_OPTIONAL, SectionEntry, SegmentHead, SegmentMeta,
    VERSION_RANGES, cast_records, kind_name,
};
use shoal_payload as payload;
use shoal_text::kinds as text;

use super::print;
use crate::HostError;
use crate::remote::{FileRanges, RemoteCollection};
use crate::storage::MmapSegment;

/// Arguments of `shoal inspect`.
#[derive(Debug, clap::Args)]
pub struct InspectArgs {
    /// Segment file.
    pub segment: PathBuf,
    /// Print one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
}

/// Runs `shoal inspect`.
pub fn run(args: &InspectArgs) -> Result<(), HostError> {
    let path = &args.segment;
    let seg = MmapSegment::open(path)?;
    let bytes = seg.as_bytes();
    // The header and table alone (either format), as a reader by ranges reads them.
    let head = SegmentHead::read(bytes).map_err(|e| HostError::segment(path, Error::Format(e)))?;
    if head.header.file_len != bytes.len() as u64 {
        let e = shoal_format::FormatError::Truncated {
            what: "file",
            needed: head.header.file_len,
            available: bytes.len() as u64,
        };
        return Err(HostError::segment(path, Error::Format(e)));
    }
    let h = head.header;
    let meta: Option<SegmentMeta> = head
        .entry(KIND_META)
        .map(|e| &bytes[e.offset as usize..(e.offset + e.length) as usize])
        .and_then(|b| cast_records::<SegmentMeta>("META", b).ok())
        .and_then(|m| m.first().copied());
    let metric_name =
        |code: u32| Metric::from_code(code).map_or_else(|| format!("unknown ({code})"), |m| m.name().into());
    let entries: Vec<SectionEntry> = head.table.clone();
    let bootstrap = (h.version == VERSION_RANGES).then(|| head.bootstrap_len());
    let sections: Vec<Value> = entries
        .iter()
        .map(|e| {
            json!({
                "kind": e.kind,
                "name": section_name(e.kind),
                "optional": e.flags & SECTION_OPTIONAL != 0,
                "hot": e.flags & SECTION_HOT != 0,
                "offset": e.offset,
                "length": e.length,
                "crc32c": format!("{:#010x}", e.crc),
            })
        })
        .collect();
    let meta_json = meta.map(
        |m| json!({ "dim": m.dim, "metric": metric_name(m.metric), "rows": m.rows, "vector_type": m.vector_type }),
    );
    // The core's cheap open: required sections, META ranges, section lengths (format 2: the
    // open of a reader by ranges, reading the file).
    let problem = if h.version == VERSION_RANGES {
        RemoteCollection::open(Box::new(FileRanges::open(path)?), 0).err()
    } else {
        Collection::open(Box::new(seg)).err().map(|e| HostError::segment(path, e))
    };

    if args.json {
        let doc = json!({
            "path": path.display().to_string(),
            "magic": String::from_utf8_lossy(&h.magic),
            "version": h.version,
            "flags": h.flags,
            "file_len": h.file_len,
            "bootstrap_len": bootstrap,
            "section_count": h.section_count,
            "sections": sections,
            "meta": meta_json,
            "error": problem.as_ref().map(|e| match e {
                HostError::Segment { source, .. } => source.to_string(),
                other => other.to_string(),
            }),
        });
        print(&format!("{doc}\n"))?;
    } else {
        let mut out = String::new();
        let _ = writeln!(out, "segment   {}", path.display());
        let _ = writeln!(out, "magic     {}", String::from_utf8_lossy(&h.magic));
        let _ = writeln!(out, "version   {}", h.version);
        let _ = writeln!(out, "flags     {:#010x}", h.flags);
        let _ = writeln!(out, "file_len  {}", h.file_len);
        if let Some(b) = bootstrap {
            let _ = writeln!(
                out,
                "bootstrap {b}  (format 2: the hot sections end here; `shoal search --bootstrap {b}` opens it in one request)"
            );
        }
        let _ = writeln!(out, "sections  {}", h.section_count);
        let _ = writeln!(out, "  {:>4}  {:<20} {:>12} {:>12}  crc32c", "kind", "name", "offset", "length");
        for e in &entries {
            let _ = writeln!(
                out,
                "  {:>4}  {:<20} {:>12} {:>12}  {:#010x}{}",
                e.kind,
                section_name(e.kind),
                e.offset,
                e.length,
                e.crc,
                match (e.flags & SECTION_HOT != 0, e.flags & SECTION_OPTIONAL != 0) {
                    (true, true) => "  (hot, optional)",
                    (true, false) => "  (hot)",
                    (false, true) => "  (optional)",
                    (false, false) => "",
                }
            );
        }
        match meta {
            Some(m) => {
                let _ = writeln!(
                    out,
                    "meta      dim {}  metric {}  rows {}  vector_type {}",
                    m.dim,
                    metric_name(m.metric),
                    m.rows,
                    if m.vector_type == 0 { "f32".to_string() } else { format!("unknown ({})", m.vector_type) }
                );
            }
            None => out.push_str("meta      (missing or malformed)\n"),
        }
        print(&out)?;
    }
    problem.map_or(Ok(()), Err)
}

/// The name of a section kind: the container's and the index's (`kind_name`), the payload and
/// text sections the format reserves kinds 32–63 for, and format 2's.
fn section_name(kind: u32) -> &'static str {
    use shoal_core::remote::{docs, text as remote_text};
    match kind {
        payload::KIND_PAYLOAD_FIELDS => "PAYLOAD_FIELDS",
        payload::KIND_PAYLOAD_COLUMNS => "PAYLOAD_COLUMNS",
        payload::KIND_PAYLOAD_DICTS => "PAYLOAD_DICTS",
        payload::KIND_PAYLOAD_POSTINGS => "PAYLOAD_POSTINGS",
        payload::KIND_PAYLOAD_DOCS => "PAYLOAD_DOCS",
        text::TEXT_META => "TEXT_META",
        text::TEXT_DICT => "TEXT_DICT",
        text::TEXT_POSTINGS => "TEXT_POSTINGS",
        text::TEXT_POSITIONS => "TEXT_POSITIONS",
        text::TEXT_DOC_LENGTHS => "TEXT_DOC_LENGTHS",
        KIND_IVF_DIR => "IVF_DIR",
        KIND_IVF_BLOCKS => "IVF_BLOCKS",
        docs::KIND_PAYLOAD_DOC_DIR => "PAYLOAD_DOC_DIR",
        docs::KIND_PAYLOAD_DOC_BLOCKS => "PAYLOAD_DOC_BLOCKS",
        remote_text::KIND_TEXT_DICT_INDEX => "TEXT_DICT_INDEX",
        remote_text::KIND_TEXT_TERM_DICT => "TEXT_TERM_DICT",
        remote_text::KIND_TEXT_TERMS => "TEXT_TERMS",
        docs::KIND_ROW_IDS_DIR => "ROW_IDS_DIR",
        docs::KIND_ROW_IDS => "ROW_IDS",
        docs::KIND_ROW_IDS_PACKED => "ROW_IDS_PACKED",
        shoal_core::remote::KIND_PAYLOAD_FILTER_DIR => "PAYLOAD_FILTER_DIR",
        shoal_core::remote::KIND_VECTOR_CRCS => "VECTOR_CRCS",
        shoal_core::remote::KIND_VECTOR_CRC_DIR => "VECTOR_CRC_DIR",
        shoal_core::remote::KIND_IVF_CENTROID_CODES => "IVF_CENTROID_CODES",
        other => kind_name(other),
    }
}
