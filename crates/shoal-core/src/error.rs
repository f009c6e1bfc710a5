use alloc::string::String;
use core::fmt;
use shoal_format::FormatError;
use shoal_payload::{LayoutError, PayloadError};

/// Everything that can go wrong in the core. Every variant leaves the collection unchanged.
#[derive(Clone, PartialEq)]
#[non_exhaustive]
pub enum Error {
    /// The segment bytes are not a valid container, or a section is inconsistent.
    Format(FormatError),
    /// A vector's length is not the collection's dimension.
    DimensionMismatch {
        /// The collection's dimension.
        expected: usize,
        /// The length given.
        found: usize,
    },
    /// A vector holds NaN or an infinity.
    NonFinite {
        /// Index of the point in its batch (0 for a query).
        point: usize,
        /// Index of the element in the vector.
        element: usize,
    },
    /// The flat vector buffer does not hold `ids.len() * dim` floats.
    LengthMismatch {
        /// Number of ids.
        ids: usize,
        /// Number of floats.
        floats: usize,
        /// The collection's dimension.
        dim: usize,
    },
    /// An id given as a JavaScript number is not an integer in `0..=2^53`.
    InvalidId {
        /// Index of the id in its batch.
        point: usize,
    },
    /// The collection configuration is invalid.
    InvalidConfig(&'static str),
    /// A request the collection cannot take: a search request that is not valid JSON of the
    /// expected shape or breaks a limit, or an operation (a write, a schema change, seal
    /// options, a merge) that does not apply.
    InvalidRequest(String),
    /// The request uses a capability this build does not have yet.
    Unsupported(&'static str),
    /// `commit` was called without a reserved batch.
    NoPendingBatch,
    /// The collection would exceed 2^32 - 1 points, or more memory than its host can give.
    CapacityExceeded,
    /// A point's payload does not fit the collection's schema (unknown field, wrong type, not
    /// an object); `error.path` names the place, e.g. `payload.year` or `payload.tags[2]`.
    InvalidPayload {
        /// Index of the point in its batch.
        point: usize,
        /// What is wrong, and where.
        error: PayloadError,
    },
    /// The number of payloads given is neither zero nor the number of points.
    PayloadCount {
        /// Points in the batch.
        points: usize,
        /// Payloads given.
        payloads: usize,
    },
    /// The collection's schema (`fields`) is invalid.
    InvalidSchema(PayloadError),
    /// The payload sections of a segment are inconsistent.
    PayloadLayout(LayoutError),
    /// The text sections of a segment are inconsistent (found on open or by a query).
    Text(shoal_text::TextError),
    /// The collection keeps only its index codes (a codes-only segment): it has no full
    /// vectors to change, rebuild, return or search exactly; names what was asked.
    CodesOnly(&'static str),
    /// A segment set's manifest or live-rows file is malformed or disagrees with the segments
    /// it names (`docs/format.md`, "Collections as segment sets").
    BadSet(String),
}

impl Error {
    /// A stable machine-readable code, used in JSON error bodies.
    pub fn code(&self) -> &'static str {
        match self {
            Error::Format(_) => "bad_segment",
            Error::DimensionMismatch { .. } => "dimension_mismatch",
            Error::NonFinite { .. } => "non_finite",
            Error::LengthMismatch { .. } => "length_mismatch",
            Error::InvalidId { .. } => "invalid_id",
            Error::InvalidConfig(_) => "invalid_config",
            Error::InvalidRequest(_) => "invalid_request",
            Error::Unsupported(_) => "unsupported",
            Error::NoPendingBatch => "no_pending_batch",
            Error::CapacityExceeded => "capacity_exceeded",
            Error::InvalidPayload { .. } => "invalid_payload",
            Error::PayloadCount { .. } => "length_mismatch",
            Error::InvalidSchema(_) => "invalid_config",
            Error::PayloadLayout(_) => "bad_segment",
            Error::Text(_) => "bad_segment",
            Error::CodesOnly(_) => "codes_only",
            Error::BadSet(_) => "bad_set",
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Format(e) => write!(f, "{e}"),
            Error::DimensionMismatch { expected, found } => {
                write!(f, "wrong vector dimension: expected {expected}, got {found}")
            }
            Error::NonFinite { point, element } => {
                write!(f, "vector of point {point} has a non-finite value (NaN or infinity) at element {element}")
            }
            Error::LengthMismatch { ids, floats, dim } => {
                write!(f, "{ids} ids need {} floats at dimension {dim}, got {floats}", ids.saturating_mul(*dim))
            }
            Error::InvalidId { point } => {
                write!(
                    f,
                    "id of point {point} is neither an integer in 0..=2^53 (use BigInt ids beyond) nor a UUID string"
                )
            }
            Error::InvalidConfig(why) => write!(f, "invalid collection config: {why}"),
            Error::InvalidRequest(why) => write!(f, "invalid request: {why}"),
            Error::Unsupported(what) => write!(f, "not supported yet: {what}"),
            Error::NoPendingBatch => f.write_str("commit without a reserved batch (call reserve first)"),
            Error::CapacityExceeded => f.write_str(
                "capacity exceeded: a collection holds at most 2^32 - 1 points, in the memory its host can give",
            ),
            Error::InvalidPayload { point, error } => write!(f, "payload of point {point}: {error}"),
            Error::PayloadCount { points, payloads } => {
                write!(f, "{payloads} payloads for {points} points (give none or one per point)")
            }
            Error::InvalidSchema(e) => write!(f, "invalid collection config: {e}"),
            Error::PayloadLayout(e) => write!(f, "{e}"),
            Error::Text(e) => write!(f, "text index: {e}"),
            Error::CodesOnly(what) => {
                write!(f, "{what}: the collection keeps index codes only (no full vectors), so it is read-only")
            }
            Error::BadSet(why) => write!(f, "segment set: {why}"),
        }
    }
}

impl core::error::Error for Error {}

impl From<FormatError> for Error {
    fn from(e: FormatError) -> Self {
        Error::Format(e)
    }
}

impl From<LayoutError> for Error {
    fn from(e: LayoutError) -> Self {
        Error::PayloadLayout(e)
    }
}

/// The message, as [`Display`](fmt::Display) writes it (no derived `Debug`: the wasm package
/// carries no string escaping for it).
impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}
