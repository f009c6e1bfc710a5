//! Shoal's collection: the one place where points are added, deleted, sealed and searched.
//!
//! A [`Collection`] is a set of sealed segments (immutable, in the format of `docs/format.md`,
//! over any [`SegmentBytes`]: a memory map natively, wasm memory in JS) plus a mutable segment
//! that takes new points. [`Collection::seal`] turns the new points into a new segment and
//! merges segments by a size-tiered policy; the set persists as a manifest and live-rows files
//! ([`set`]). Searches go through the JSON [`SearchRequest`] shared by every host.
//!
//! ```
//! use shoal_core::{Collection, CollectionConfig, Metric, SearchRequest};
//! let mut col = Collection::new(CollectionConfig { dim: 2, metric: Metric::L2 }).unwrap();
//! col.insert(&[10, 11, 12], &[0.0, 0.0, 1.0, 0.0, 5.0, 5.0]).unwrap();
//! let req = SearchRequest::from_json(r#"{"vector": [0.9, 0.1], "limit": 2}"#).unwrap();
//! let res = col.search(&req).unwrap();
//! assert_eq!(res.points.iter().map(|p| p.id).collect::<Vec<_>>(), [11, 10]);
//! let bytes = col.to_bytes().unwrap().to_vec();
//! let again = Collection::from_bytes(&bytes).unwrap();
//! assert_eq!(again.search(&req).unwrap(), res);
//! ```
#![no_std]
#![deny(missing_docs)]

extern crate alloc;

mod bitset;
mod build;
mod collection;
mod dense;
mod error;
mod fusion;
mod ids;
mod mutable;
mod pool;
#[cfg(feature = "remote")]
pub mod remote;
mod request;
mod sealed;
mod sections;
pub mod set;
mod source;
mod sparse;
mod text;
mod write;

pub use build::NewSegment;
pub use collection::{
    Checkpoint, Collection, CollectionConfig, FILTER_EXACT_DIVISOR, FILTER_EXACT_PER_RESULT, IdEncoding, MergeSnapshot,
    SealSnapshot, SegmentInfo,
};
pub use dense::DenseSpec;
pub use error::Error;
pub use fusion::{DEFAULT_RRF_K, FUSION_DEPTH, RRF_K};
pub use request::{
    MAX_BM25_K1, MAX_LIMIT, MAX_OFFSET, MAX_PREFETCH, MAX_PREFETCH_DEPTH, MAX_PREFETCH_TOTAL, ScoredPoint,
    SearchParams, SearchRequest, SearchResponse, SearchStats,
};
pub use sealed::{IndexKind, PayloadInput, SealedSegment, SegmentBytes};
pub use shoal_format::{AlignedBytes, FormatError, MAX_DENSE_VECTORS, MAX_SPARSE_VECTORS, PointId, SparseEntry};
pub use shoal_index::Metric;
pub use shoal_index::ivf::{IvfParams, default_bits};
pub use shoal_index::progress::{Progress, Quiet};
pub use shoal_kernels::Kernels;
pub use shoal_payload::{FieldType, Filter, FilterError, LayoutError, PayloadError, Schema, point_id_from_json};
pub use shoal_text::Clock;
pub use sparse::{MAX_SPARSE_NAME, MAX_SPARSE_PAIRS, SparseSpec, SparseVector, dot as sparse_dot};
