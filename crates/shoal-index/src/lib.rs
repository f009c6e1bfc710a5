//! Vector indexes over row-major `f32` data: the exact (flat) scan, IVF partitions with RaBitQ
//! codes, the [`Metric`] rules and [`TopK`] selection shared by every index.
//!
//! Every index ranks by a *key* where lower is better (`l2` distance, or the negated
//! similarity for `dot` and `cosine`) and breaks ties by ascending internal id, so a result
//! never depends on scan order, threads or target.
#![cfg_attr(not(feature = "parallel"), no_std)]
#![deny(missing_docs)]

extern crate alloc;

pub mod calibrate;
mod flat;
pub mod ivf;
pub mod kmeans;
mod metric;
pub mod order;
pub mod par;
pub mod progress;
pub mod rabitq;
pub mod rng;
pub mod rotation;
mod rows;
mod topk;

pub use flat::{FlatScan, FlatScratch};
pub use metric::{Metric, normalize};
pub use rows::{Flat, Rows};
pub use topk::{Candidate, TopK};
