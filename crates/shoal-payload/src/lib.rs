//! Payload fields for Shoal: a [`Schema`], ingestion of JSON payloads, point → values columns
//! that keep single values **inline**, value → rows indexes, stored documents for
//! `with_payload`, and Qdrant's filter language ([`Filter`]) evaluated against all of it.
//!
//! The byte layout of the five payload sections (kinds 32–36) is specified in
//! `docs/format.md`; [`PayloadBuilder::finish`] writes them and [`PayloadView::open`] reads
//! them in place from `&[u8]`.
//!
//! ```
//! use shoal_payload::{Filter, PayloadBuilder, Schema};
//! let schema = Schema::from_json(r#"{"brand": "keyword", "price": "float", "stock": "bool"}"#).unwrap();
//! let mut b = PayloadBuilder::new(schema);
//! b.push_str(r#"{"brand": "acme", "price": 12.5, "stock": true}"#).unwrap();
//! b.push_str(r#"{"brand": "x", "price": 30, "stock": true}"#).unwrap();
//! b.push_str(r#"{"brand": "acme", "price": 99, "stock": false}"#).unwrap();
//! let sections = b.finish();
//! let aligned = sections.to_aligned();
//! let view = aligned.view().unwrap();
//! let f = Filter::from_json(r#"{
//!     "must": [{"key": "stock", "match": {"value": true}}, {"key": "price", "range": {"gte": 10, "lte": 50}}],
//!     "must_not": [{"key": "brand", "match": {"value": "x"}}]
//! }"#).unwrap();
//! let q = view.compile(&f, &|_| None).unwrap();
//! assert_eq!(q.matching_points().to_rows(), vec![0]);
//! ```
#![no_std]
#![deny(missing_docs)]

extern crate alloc;

pub mod column;
mod error;
mod eval;
mod filter;
pub mod path;
pub mod reference;
mod schema;
mod store;
mod table;
mod values;

pub use error::{FilterError, FilterErrorKind, LayoutError, PayloadError, PayloadErrorKind};
pub use eval::{BitIter, Bitset, Cardinality, CompiledFilter};
pub use filter::{Condition, FieldCheck, Filter, Literal, MAX_FILTER_DEPTH, MinShould, Range, point_id_from_json};
pub use schema::{FieldType, MAX_FIELD_NAME, MAX_FIELDS, Schema, valid_field_name};
pub use shoal_format::PointId;
pub use store::{
    AlignedPayload, Dict, FieldView, KIND_PAYLOAD_COLUMNS, KIND_PAYLOAD_DICTS, KIND_PAYLOAD_DOCS, KIND_PAYLOAD_FIELDS,
    KIND_PAYLOAD_POSTINGS, PayloadBuilder, PayloadSectionBytes, PayloadSections, PayloadView, schema_of_fields,
};
pub use table::PAYLOAD_LAYOUT_VERSION;
pub use values::{
    FieldValues, ScalarValue, canonicalize, f64_of_key, i64_of_key, json_integer, key_of_f64, key_of_i64,
    parse_payload, parse_payload_str,
};

#[cfg(target_endian = "big")]
compile_error!("the Shoal payload layout is little-endian and is cast in place");
