//! The index builder (documents → the text sections of a segment) and the reader over them.

use alloc::vec;
use alloc::vec::Vec;
use hashbrown::HashMap;
use rustc_hash::FxBuildHasher;

use crate::dict::{DictWriter, MAX_KEY, TermDict, TermInfo, TermStream};
use crate::error::corrupt;
use crate::positions::{self, PositionsList};
use crate::postings::{self, Codec, PostingsCursor, TERMINATED};
use crate::varint::{read_u32, read_u64};
use crate::{Analyzer, AnalyzerOptions, TextError};

/// Section kinds of the text index (kinds 48–63 are reserved for text; see `docs/format.md`).
pub mod kinds {
    /// `TextMeta` + one `TextField` per field.
    pub const TEXT_META: u32 = 48;
    /// The front-coded term dictionary.
    pub const TEXT_DICT: u32 = 49;
    /// The postings lists.
    pub const TEXT_POSTINGS: u32 = 50;
    /// The position lists (empty without positions).
    pub const TEXT_POSITIONS: u32 = 51;
    /// `u32` document lengths, field-major.
    pub const TEXT_DOC_LENGTHS: u32 = 52;
}

/// The version written in `TextMeta.text_version`.
pub const TEXT_VERSION: u32 = 1;
const META_BYTES: usize = 64;
const FIELD_BYTES: usize = 16;

/// The decoded `TEXT_META` section.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TextMeta {
    /// Number of text fields (1..=255).
    pub field_count: u32,
    /// Largest document id + 1.
    pub doc_slots: u32,
    /// Documents added (`N` of BM25).
    pub doc_count: u32,
    /// Codec of every postings list.
    pub codec: Codec,
    /// Whether position lists are stored.
    pub positions: bool,
    /// The analyser the index was built with (queries must use it too).
    pub analyzer: AnalyzerOptions,
    /// Per field: the sum of its document lengths.
    pub total_len: Vec<u64>,
}

impl TextMeta {
    /// The section bytes.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = vec![0u8; META_BYTES];
        let words = [
            TEXT_VERSION,
            self.field_count,
            self.doc_slots,
            self.doc_count,
            self.codec as u32,
            u32::from(self.positions),
            self.analyzer.flags(),
            self.analyzer.max_token_bytes,
        ];
        for (i, w) in words.iter().enumerate() {
            out[4 * i..4 * i + 4].copy_from_slice(&w.to_le_bytes());
        }
        for t in &self.total_len {
            out.extend_from_slice(&t.to_le_bytes());
            out.extend_from_slice(&[0u8; 8]);
        }
        out
    }

    /// Parses and checks the section bytes.
    pub fn from_bytes(bytes: &[u8]) -> Result<TextMeta, TextError> {
        const W: &str = "text meta";
        let version = read_u32(bytes, 0, W)?;
        if version != TEXT_VERSION {
            return Err(TextError::UnsupportedVersion(version));
        }
        let field_count = read_u32(bytes, 4, W)?;
        if !(1..=255).contains(&field_count) {
            return Err(corrupt(W, "field count not in 1..=255"));
        }
        if bytes.len() != META_BYTES + FIELD_BYTES * field_count as usize {
            return Err(corrupt(W, "length does not match field count"));
        }
        let doc_slots = read_u32(bytes, 8, W)?;
        let doc_count = read_u32(bytes, 12, W)?;
        let codec = Codec::from_u32(read_u32(bytes, 16, W)?).ok_or(corrupt(W, "unknown codec"))?;
        let flags = read_u32(bytes, 20, W)?;
        let analyzer = AnalyzerOptions::from_flags(read_u32(bytes, 24, W)?, read_u32(bytes, 28, W)?)
            .ok_or(corrupt(W, "unknown analyser flags or token length"))?;
        if doc_count > doc_slots || flags > 1 || bytes[32..META_BYTES].iter().any(|&b| b != 0) {
            return Err(corrupt(W, "doc count above slots, unknown flags or non-zero reserved bytes"));
        }
        let mut total_len = Vec::with_capacity(field_count as usize);
        for f in 0..field_count as usize {
            let at = META_BYTES + FIELD_BYTES * f;
            total_len.push(read_u64(bytes, at, W)?);
            if read_u64(bytes, at + 8, W)? != 0 {
                return Err(corrupt(W, "non-zero reserved field bytes"));
            }
        }
        Ok(TextMeta { field_count, doc_slots, doc_count, codec, positions: flags & 1 != 0, analyzer, total_len })
    }
}

/// The five text sections, ready to be added to a segment (kinds in [`kinds`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Sections {
    /// `TEXT_META` (48).
    pub meta: Vec<u8>,
    /// `TEXT_DICT` (49).
    pub dict: Vec<u8>,
    /// `TEXT_POSTINGS` (50).
    pub postings: Vec<u8>,
    /// `TEXT_POSITIONS` (51).
    pub positions: Vec<u8>,
    /// `TEXT_DOC_LENGTHS` (52).
    pub doc_lengths: Vec<u8>,
}

#[derive(Default)]
struct TermAcc {
    docs: Vec<u32>,
    tfs: Vec<u32>,
    positions: Vec<u32>,
}

/// Options of an [`IndexBuilder`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BuildOptions {
    /// The analyser.
    pub analyzer: AnalyzerOptions,
    /// The postings codec (default bit-packed).
    pub codec: Codec,
    /// Store positions for phrase queries (default `true`).
    pub positions: bool,
    /// Number of text fields (default 1, at most 255).
    pub fields: u32,
}

impl Default for BuildOptions {
    fn default() -> Self {
        BuildOptions { analyzer: AnalyzerOptions::default(), codec: Codec::BitPacked, positions: true, fields: 1 }
    }
}

/// Builds the text sections from documents added in ascending id order. The output is a pure
/// function of the documents and options (terms are sorted; no hash order leaks out).
pub struct IndexBuilder {
    opts: BuildOptions,
    analyzer: Analyzer,
    terms: HashMap<Vec<u8>, TermAcc, FxBuildHasher>,
    /// Per field, the length of every document slot so far.
    lens: Vec<Vec<u32>>,
    doc_count: u32,
    next_doc: u32,
    /// The key (field byte + term) being looked up.
    scratch: Vec<u8>,
}

impl core::fmt::Debug for IndexBuilder {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("IndexBuilder").field("terms", &self.terms.len()).field("doc_count", &self.doc_count).finish()
    }
}

impl IndexBuilder {
    /// An empty builder (`fields` is clamped to 1..=255).
    pub fn new(mut opts: BuildOptions) -> IndexBuilder {
        opts.fields = opts.fields.clamp(1, 255);
        let analyzer = Analyzer::new(opts.analyzer);
        opts.analyzer = analyzer.options();
        IndexBuilder {
            opts,
            analyzer,
            terms: HashMap::default(),
            lens: vec![Vec::new(); opts.fields as usize],
            doc_count: 0,
            next_doc: 0,
            scratch: Vec::new(),
        }
    }

    /// Adds document `doc` with the text of its fields in field order (missing trailing fields
    /// are empty). Ids must be strictly ascending and below `u32::MAX`; nothing changes on error.
    pub fn add(&mut self, doc: u32, fields: &[&str]) -> Result<(), TextError> {
        if doc < self.next_doc || doc == TERMINATED {
            return Err(TextError::InvalidInput("document ids must be strictly ascending, below u32::MAX"));
        }
        if fields.len() > self.opts.fields as usize {
            return Err(TextError::InvalidInput("more fields than the builder was made for"));
        }
        let positions = self.opts.positions;
        let mut key = core::mem::take(&mut self.scratch);
        for (f, text) in fields.iter().enumerate() {
            // Tokens come in position order, so each term's positions in this document are
            // appended in ascending order; its document entry is made by its first token.
            let mut len = 0u32;
            self.analyzer.analyze(text, |t, p| {
                len += 1;
                key.clear();
                key.push(f as u8);
                key.extend_from_slice(t.as_bytes());
                let acc = match self.terms.get_mut(&key[..]) {
                    Some(a) => a,
                    None => self.terms.entry(key.clone()).or_default(),
                };
                if acc.docs.last() == Some(&doc) {
                    *acc.tfs.last_mut().expect("a tf per document") += 1;
                } else {
                    acc.docs.push(doc);
                    acc.tfs.push(1);
                }
                if positions {
                    acc.positions.push(p);
                }
            });
            let lens = &mut self.lens[f];
            lens.resize(doc as usize, 0);
            lens.push(len);
        }
        self.scratch = key;
        self.doc_count += 1;
        self.next_doc = doc + 1;
        Ok(())
    }

    /// Number of documents added.
    pub fn doc_count(&self) -> u32 {
        self.doc_count
    }

    /// Writes the sections.
    pub fn finish(self) -> Result<Sections, TextError> {
        let doc_slots = self.next_doc;
        let mut lens = self.lens;
        for l in &mut lens {
            l.resize(doc_slots as usize, 0);
        }
        let keys: Vec<(Vec<u8>, TermAcc)> = self.terms.into_iter().collect();
        let mut order: Vec<u32> = (0..keys.len() as u32).collect();
        crate::sort_by_bytes(&mut order, &|i| &keys[i as usize].0);
        let mut dict = DictWriter::new();
        let mut post = Vec::new();
        let mut pos = Vec::new();
        let mut dl = Vec::new();
        for (key, acc) in order.iter().map(|&i| &keys[i as usize]) {
            if key.len() > MAX_KEY {
                continue; // unreachable: tokens are at most 255 bytes
            }
            let field_lens = &lens[key[0] as usize];
            dl.clear();
            dl.extend(acc.docs.iter().map(|&d| field_lens[d as usize]));
            let (p0, q0) = (post.len(), pos.len());
            postings::encode(self.opts.codec, &acc.docs, &acc.tfs, Some(&dl), &mut post)?;
            if self.opts.positions {
                positions::encode(&acc.tfs, &acc.positions, &mut pos)?;
            }
            let too_big = |n: usize| u32::try_from(n).map_err(|_| TextError::InvalidInput("text section above 4 GiB"));
            dict.push(
                key,
                TermInfo {
                    doc_freq: acc.docs.len() as u32,
                    postings_offset: too_big(p0)?,
                    postings_len: too_big(post.len() - p0)?,
                    positions_offset: too_big(q0)?,
                    positions_len: too_big(pos.len() - q0)?,
                },
            )?;
        }
        too_big_total(post.len())?;
        too_big_total(pos.len())?;
        let meta = TextMeta {
            field_count: self.opts.fields,
            doc_slots,
            doc_count: self.doc_count,
            codec: self.opts.codec,
            positions: self.opts.positions,
            analyzer: self.opts.analyzer,
            total_len: lens.iter().map(|l| l.iter().map(|&x| u64::from(x)).sum()).collect(),
        };
        let mut doc_lengths = Vec::with_capacity(4 * lens.len() * doc_slots as usize);
        for l in &lens {
            for x in l {
                doc_lengths.extend_from_slice(&x.to_le_bytes());
            }
        }
        Ok(Sections { meta: meta.to_bytes(), dict: dict.finish(), postings: post, positions: pos, doc_lengths })
    }
}

fn too_big_total(n: usize) -> Result<(), TextError> {
    if n > u32::MAX as usize { Err(TextError::InvalidInput("text section above 4 GiB")) } else { Ok(()) }
}

/// A text index read in place from its sections.
#[derive(Clone, Debug)]
pub struct TextIndex<'a> {
    meta: TextMeta,
    dict: TermDict<'a>,
    postings: &'a [u8],
    positions: &'a [u8],
    doc_lengths: DocLengths<'a>,
}

/// Where a [`TextIndex`] finds its documents' lengths.
#[derive(Clone, Copy, Debug)]
enum DocLengths<'a> {
    /// `TEXT_DOC_LENGTHS`: every document's, by field.
    Dense(&'a [u8]),
    /// The documents of some lists only: `(field, doc, length)`, ascending by `(field, doc)`.
    #[cfg(feature = "lists")]
    Sparse(&'a [(u32, u32, u32)]),
}

impl<'a> TextIndex<'a> {
    /// Opens the index over the five sections. Checks what is cheap: the meta record, the
    /// dictionary header and block table, the doc-length section length. Postings and
    /// positions are checked when a query reads them.
    pub fn open(
        meta: &[u8],
        dict: &'a [u8],
        postings: &'a [u8],
        positions: &'a [u8],
        doc_lengths: &'a [u8],
    ) -> Result<TextIndex<'a>, TextError> {
        TextIndex::open_with(meta, dict, postings, positions, doc_lengths, TermDict::open)
    }

    fn open_with(
        meta: &[u8],
        dict: &'a [u8],
        postings: &'a [u8],
        positions: &'a [u8],
        doc_lengths: &'a [u8],
        open_dict: fn(&'a [u8]) -> Result<TermDict<'a>, TextError>,
    ) -> Result<TextIndex<'a>, TextError> {
        let meta = TextMeta::from_bytes(meta)?;
        let dict = open_dict(dict)?;
        let want = 4 * u64::from(meta.field_count) * u64::from(meta.doc_slots);
        if doc_lengths.len() as u64 != want {
            return Err(corrupt("doc lengths", "length does not match field count x doc slots"));
        }
        if !meta.positions && !positions.is_empty() {
            return Err(corrupt("positions", "present although the meta says no positions"));
        }
        Ok(TextIndex { meta, dict, postings, positions, doc_lengths: DocLengths::Dense(doc_lengths) })
    }

    /// An index of some terms only — a dictionary of them, their postings and positions lists
    /// laid out as in the full index's sections (in key order), and the lengths of the documents
    /// their postings name: `(field, doc, length)` ascending by `(field, doc)` — for a reader
    /// that fetched just the lists a query reads (a segment read by byte ranges). A query of
    /// those terms searches it as it searches the whole index: the same lists, the same lengths,
    /// the same results. A document of a list without a length is an error when read.
    #[cfg(feature = "lists")]
    pub fn of_lists(
        meta: &[u8],
        dict: &'a [u8],
        postings: &'a [u8],
        positions: &'a [u8],
        lengths: &'a [(u32, u32, u32)],
    ) -> Result<TextIndex<'a>, TextError> {
        let meta = TextMeta::from_bytes(meta)?;
        let dict = TermDict::open(dict)?;
        if !meta.positions && !positions.is_empty() {
            return Err(corrupt("positions", "present although the meta says no positions"));
        }
        if lengths.windows(2).any(|w| (w[0].0, w[0].1) >= (w[1].0, w[1].1)) {
            return Err(TextError::InvalidInput("document lengths not ascending by (field, doc)"));
        }
        Ok(TextIndex { meta, dict, postings, positions, doc_lengths: DocLengths::Sparse(lengths) })
    }

    /// [`open`](Self::open) for sections that passed `open` before: the same checks but the
    /// O(blocks) walk of the dictionary's block table, so a reader that keeps only the byte
    /// ranges can reopen the index per query in O(1).
    pub fn reopen(
        meta: &[u8],
        dict: &'a [u8],
        postings: &'a [u8],
        positions: &'a [u8],
        doc_lengths: &'a [u8],
    ) -> Result<TextIndex<'a>, TextError> {
        TextIndex::open_with(meta, dict, postings, positions, doc_lengths, TermDict::reopen)
    }

    /// The meta record.
    pub fn meta(&self) -> &TextMeta {
        &self.meta
    }

    /// The analyser the index was built with.
    pub fn analyzer(&self) -> Analyzer {
        Analyzer::new(self.meta.analyzer)
    }

    /// The dictionary.
    pub fn dict(&self) -> &TermDict<'a> {
        &self.dict
    }

    /// The dictionary entry of an analysed term in `field`.
    pub fn term(&self, field: u32, term: &str) -> Result<Option<TermInfo>, TextError> {
        if field >= self.meta.field_count || term.len() >= MAX_KEY {
            return Ok(None);
        }
        let mut key = Vec::with_capacity(term.len() + 1);
        key.push(field as u8);
        key.extend_from_slice(term.as_bytes());
        self.dict.get(&key)
    }

    /// The terms of `field` that start with `prefix` (keys include the leading field byte).
    pub fn prefix(&self, field: u32, prefix: &str) -> Result<TermStream<'a>, TextError> {
        let mut key = Vec::with_capacity(prefix.len() + 1);
        key.push(field.min(255) as u8);
        key.extend_from_slice(prefix.as_bytes());
        self.dict.prefix(&key)
    }

    /// A cursor over a term's postings.
    pub fn postings(&self, info: &TermInfo) -> Result<PostingsCursor<'a>, TextError> {
        let bytes = slice(self.postings, info.postings_offset, info.postings_len, "postings")?;
        let c = PostingsCursor::open(bytes)?;
        if c.doc_count() != info.doc_freq || info.doc_freq > self.meta.doc_count {
            return Err(corrupt("postings", "document count differs from the dictionary"));
        }
        Ok(c)
    }

    /// A term's position lists (`None` when the index has no positions).
    pub fn positions(&self, info: &TermInfo) -> Result<Option<PositionsList<'a>>, TextError> {
        if !self.meta.positions {
            return Ok(None);
        }
        let bytes = slice(self.positions, info.positions_offset, info.positions_len, "positions")?;
        PositionsList::open(bytes, info.doc_freq).map(Some)
    }

    /// The length of document `doc` in `field`, `None` out of range.
    #[inline]
    pub fn doc_len(&self, field: u32, doc: u32) -> Option<u32> {
        if field >= self.meta.field_count || doc >= self.meta.doc_slots {
            return None;
        }
        match self.doc_lengths {
            DocLengths::Dense(bytes) => {
                let i = field as usize * self.meta.doc_slots as usize + doc as usize;
                read_u32(bytes, 4 * i, "doc lengths").ok()
            }
            #[cfg(feature = "lists")]
            DocLengths::Sparse(lengths) => {
                lengths.binary_search_by_key(&(field, doc), |&(f, d, _)| (f, d)).ok().map(|i| lengths[i].2)
            }
        }
    }
}

fn slice<'a>(bytes: &'a [u8], off: u32, len: u32, what: &'static str) -> Result<&'a [u8], TextError> {
    let (o, l) = (off as usize, len as usize);
    bytes.get(o..o.saturating_add(l)).ok_or(TextError::Truncated { what })
}
