//! Shoal's native host: the only part of Shoal that knows files.
//!
//! The core (`shoal-core`) reads and writes segment *bytes*; this crate memory-maps segment
//! files ([`storage::MmapSegment`]), reads vector files (`.npy`, `.fvecs`, raw `f32`;
//! [`input::VectorFile`]), writes segments atomically ([`storage::write_atomic`]) and implements
//! the `shoal` command-line tool ([`commands`]) with its HTTP server ([`server`]).
//!
//! ```no_run
//! use shoal_core::SearchRequest;
//! let col = shoal_host::storage::open_collection("/tmp/glove.shoal".as_ref()).unwrap();
//! let res = col.search(&SearchRequest::nearest(vec![0.0; 50], 10)).unwrap();
//! println!("{}", res.to_json());
//! ```
#![deny(missing_docs)]
#![deny(clippy::undocumented_unsafe_blocks)]

pub mod commands;
pub mod error;
pub mod input;
pub mod npy;
pub mod remote;
pub mod server;
pub mod storage;

pub use error::HostError;
