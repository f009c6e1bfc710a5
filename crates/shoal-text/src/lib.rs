//! Shoal's full-text index: the [`Analyzer`], block [`postings`] with skip data and BM25 bound
//! inputs, [`positions`] with an approximate position mask for phrase prefiltering, a
//! front-coded term [`dict`]ionary, the [`IndexBuilder`] that writes the text sections of a
//! segment and the [`TextIndex`] that reads them in place, and query execution (BM25, boolean
//! clauses, phrases, block-max MaxScore top-k, filters, deadlines).
//!
//! Byte layouts are specified in `docs/format.md` (section kinds 48–63). Every reader works on
//! `&[u8]` and returns a [`TextError`] on truncated or corrupt bytes; none panics.
//!
//! ```
//! use shoal_text::{IndexBuilder, Query, SearchParams, TextIndex};
//! let mut b = IndexBuilder::new(Default::default());
//! b.add(0, &["the quick brown fox"]).unwrap();
//! b.add(1, &["a lazy brown dog"]).unwrap();
//! b.add(2, &["quick quick fox jumps"]).unwrap();
//! let sections = b.finish().unwrap();
//! let index = TextIndex::open(&sections.meta, &sections.dict, &sections.postings, &sections.positions, &sections.doc_lengths).unwrap();
//! let q = Query::parse(&index.analyzer(), "quick \"brown fox\"");
//! let res = index.search(0, &q, &SearchParams { k: 10, ..Default::default() }).unwrap();
//! assert_eq!(res.hits.iter().map(|h| h.doc).collect::<Vec<_>>(), [0, 2]);
//! assert!(!res.partial);
//! ```
#![no_std]
#![deny(missing_docs)]

extern crate alloc;

pub mod analyzer;
mod case;
mod case_table;
pub mod dict;
mod error;
mod index;
pub mod positions;
pub mod postings;
pub mod query;
mod search;
pub mod varint;

pub use analyzer::{Analyzer, AnalyzerOptions, Token};
pub use error::TextError;
pub use index::{BuildOptions, IndexBuilder, Sections, TEXT_VERSION, TextIndex, TextMeta, kinds};
pub use query::{Clause, Query};
pub use search::{Bm25, CHECK_EVERY, Clock, Corpus, Deadline, Hit, SearchParams, SearchResult, SearchStats};

/// Sorts `order` (indexes) by the bytes `key` gives for each, ascending — the one byte-order
/// sort of the crates (text terms, keyword dictionaries), through a `dyn` key so that the wasm
/// package holds one copy of the sort routine for all of them. Callers' keys are distinct, so
/// the order is the same whichever sort runs: natively the standard library's quicksort, in
/// wasm [`merge_sort_by_bytes`] (a few hundred bytes where a comparator instance of the
/// quicksort costs 6 KB; about twice its time natively on 300,000 random words).
pub fn sort_by_bytes<'a>(order: &mut [u32], key: &dyn Fn(u32) -> &'a [u8]) {
    #[cfg(target_family = "wasm")]
    merge_sort_by_bytes(order, key);
    #[cfg(not(target_family = "wasm"))]
    order.sort_unstable_by(|&a, &b| key(a).cmp(key(b)));
}

/// [`sort_by_bytes`]' sort in wasm: a bottom-up merge sort; stable, O(n log n) comparisons.
pub fn merge_sort_by_bytes<'a>(order: &mut [u32], key: &dyn Fn(u32) -> &'a [u8]) {
    let n = order.len();
    let (mut from, mut to) = (order.to_vec(), alloc::vec![0u32; n]);
    let mut width = 1;
    while width < n {
        let mut start = 0;
        while start < n {
            let (mid, end) = ((start + width).min(n), (start + 2 * width).min(n));
            let (mut i, mut j) = (start, mid);
            for slot in &mut to[start..end] {
                // The left run first on equal keys: stable.
                let left = i < mid && (j == end || key(from[i]) <= key(from[j]));
                *slot = if left { from[i] } else { from[j] };
                if left { i += 1 } else { j += 1 }
            }
            start = end;
        }
        core::mem::swap(&mut from, &mut to);
        width *= 2;
    }
    order.copy_from_slice(&from);
}
