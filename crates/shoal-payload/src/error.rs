//! Typed errors of the three layers: schema and payload input, filters, and section bytes.

use alloc::string::String;
use core::fmt;

use crate::schema::FieldType;

/// Why a schema or a payload document was rejected. `path` names the offending place, e.g.
/// `schema.year` or `payload.tags[2]`.
#[derive(Clone, PartialEq, Eq)]
pub struct PayloadError {
    /// Where in the input the problem is.
    pub path: String,
    /// What is wrong.
    pub kind: PayloadErrorKind,
}

/// The kinds of [`PayloadError`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum PayloadErrorKind {
    /// The text is not valid JSON (serde_json's message).
    InvalidJson(String),
    /// A JSON object was expected.
    NotAnObject,
    /// A field name is empty, too long (> 255 bytes) or contains control characters.
    BadFieldName,
    /// A schema type other than `keyword`, `integer`, `float`, `bool`, `text`, `text_en`.
    UnknownType(String),
    /// A payload field that the schema does not declare.
    UnknownField,
    /// A value whose JSON type does not fit the field's type.
    WrongType {
        /// The field's declared type.
        expected: FieldType,
        /// The JSON type found (`"string"`, `"number"`, `"bool"`, `"array"`, `"object"`).
        found: &'static str,
    },
    /// An integer field got a number with a fraction, or one outside `i64`.
    NotAnInteger,
    /// A schema with more fields than [`crate::MAX_FIELDS`].
    TooManyFields,
    /// A schema with both `text` and `text_en` fields (they share one text index).
    MixedText,
    /// More points than a segment holds (`u32` rows), or payload bytes beyond `u64`.
    TooManyPoints,
}

impl PayloadError {
    pub(crate) fn new(path: impl Into<String>, kind: PayloadErrorKind) -> PayloadError {
        PayloadError { path: path.into(), kind }
    }
}

impl fmt::Display for PayloadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let p = &self.path;
        match &self.kind {
            PayloadErrorKind::InvalidJson(m) => write!(f, "{p}: invalid JSON: {m}"),
            PayloadErrorKind::NotAnObject => write!(f, "{p}: expected a JSON object"),
            PayloadErrorKind::BadFieldName => {
                write!(f, "{p}: a field name must be 1..=255 bytes without control characters")
            }
            PayloadErrorKind::UnknownType(t) => {
                write!(f, "{p}: unknown field type \"{t}\" (keyword, integer, float, bool, text, text_en)")
            }
            PayloadErrorKind::UnknownField => write!(f, "{p}: field is not declared in the schema"),
            PayloadErrorKind::WrongType { expected, found } => {
                write!(f, "{p}: expected a {} value, found {found}", expected.name())
            }
            PayloadErrorKind::NotAnInteger => write!(f, "{p}: expected an integer in the i64 range"),
            PayloadErrorKind::TooManyFields => write!(f, "{p}: too many fields (max {})", crate::MAX_FIELDS),
            PayloadErrorKind::MixedText => {
                write!(f, "{p}: text fields share one index: declare them all text or all text_en")
            }
            PayloadErrorKind::TooManyPoints => write!(f, "{p}: too many points for one segment"),
        }
    }
}

impl core::error::Error for PayloadError {}

/// Why a filter was rejected. `path` names the offending place, e.g. `filter.must[1].range`.
#[derive(Clone, PartialEq, Eq)]
pub struct FilterError {
    /// Where in the filter the problem is.
    pub path: String,
    /// What is wrong.
    pub kind: FilterErrorKind,
}

/// The kinds of [`FilterError`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum FilterErrorKind {
    /// The text is not valid JSON (serde_json's message).
    InvalidJson(String),
    /// Wrong JSON shape (e.g. a number where an object or an array was expected).
    Expected(&'static str),
    /// A key this filter language does not have (e.g. `"must_nt"`, `"match": {"prefix": ..}`).
    UnknownOperator(String),
    /// A condition that is none of the known ones, or two at once.
    AmbiguousCondition,
    /// A `key` naming no field of the schema.
    UnknownField(String),
    /// An operator that the field's type does not support (e.g. `range` on a keyword).
    TypeMismatch {
        /// The field's type.
        field_type: FieldType,
        /// The operator (`"range"`, `"match.value"`, ...).
        operator: &'static str,
    },
    /// A value of the wrong JSON type for the field (e.g. a string in an integer `match`).
    WrongValue {
        /// The field's type.
        field_type: FieldType,
        /// The JSON type found.
        found: &'static str,
    },
    /// `min_should.min_count` larger than its conditions (never satisfiable is allowed; this
    /// is only for a negative or non-integer count).
    BadMinCount,
    /// Nesting deeper than [`crate::MAX_FILTER_DEPTH`].
    TooDeep,
    /// A `nested` condition in a collection with flat payloads.
    NestedOnly,
    /// A key that is not a JSON path (nested payloads), or `has_id` inside `nested`.
    BadPath(String),
}

impl FilterError {
    pub(crate) fn new(path: impl Into<String>, kind: FilterErrorKind) -> FilterError {
        FilterError { path: path.into(), kind }
    }
}

impl fmt::Display for FilterError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let p = &self.path;
        match &self.kind {
            FilterErrorKind::InvalidJson(m) => write!(f, "{p}: invalid JSON: {m}"),
            FilterErrorKind::Expected(what) => write!(f, "{p}: expected {what}"),
            FilterErrorKind::UnknownOperator(k) => write!(f, "{p}: unknown key \"{k}\""),
            FilterErrorKind::AmbiguousCondition => write!(
                f,
                "{p}: a condition is exactly one of: a nested filter, {{key, match}}, {{key, range}}, is_empty, is_null, has_id"
            ),
            FilterErrorKind::UnknownField(k) => write!(f, "{p}: unknown field \"{k}\""),
            FilterErrorKind::TypeMismatch { field_type, operator } => {
                write!(f, "{p}: {operator} is not supported on a {} field", field_type.name())
            }
            FilterErrorKind::WrongValue { field_type, found } => {
                write!(f, "{p}: expected a {} value, found {found}", field_type.name())
            }
            FilterErrorKind::BadMinCount => write!(f, "{p}: min_count must be a non-negative integer"),
            FilterErrorKind::TooDeep => write!(f, "{p}: filter nested too deeply (max {})", crate::MAX_FILTER_DEPTH),
            FilterErrorKind::NestedOnly => {
                write!(f, "{p}: `nested` conditions need a collection with nested payloads")
            }
            FilterErrorKind::BadPath(why) => write!(f, "{p}: {why}"),
        }
    }
}

impl core::error::Error for FilterError {}

/// Why payload section bytes could not be read.
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum LayoutError {
    /// The bytes end before a structure they must hold.
    Truncated {
        /// Section name.
        section: &'static str,
        /// Bytes needed.
        needed: u64,
        /// Bytes available.
        available: u64,
    },
    /// The magic of a section is not the expected one.
    BadMagic {
        /// Section name.
        section: &'static str,
    },
    /// A payload layout version this reader does not know.
    UnsupportedVersion {
        /// Section name.
        section: &'static str,
        /// Version found.
        found: u32,
    },
    /// The section does not start 8-byte aligned, or an array offset is not a multiple of 64.
    Misaligned {
        /// Section name.
        section: &'static str,
    },
    /// The section's contents are inconsistent.
    Malformed {
        /// Section name.
        section: &'static str,
        /// What is wrong.
        reason: &'static str,
    },
}

impl fmt::Display for LayoutError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LayoutError::Truncated { section, needed, available } => {
                write!(f, "truncated {section} section: needs {needed} bytes, {available} available")
            }
            LayoutError::BadMagic { section } => write!(f, "bad magic in {section} section"),
            LayoutError::UnsupportedVersion { section, found } => {
                write!(f, "unsupported {section} section version {found}")
            }
            LayoutError::Misaligned { section } => write!(f, "misaligned {section} section"),
            LayoutError::Malformed { section, reason } => write!(f, "bad {section} section: {reason}"),
        }
    }
}

impl core::error::Error for LayoutError {}

/// The message, as [`Display`](fmt::Display) writes it (no derived `Debug`: the wasm package
/// carries no string escaping for it).
impl fmt::Debug for PayloadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// The message, as [`Display`](fmt::Display) writes it (no derived `Debug`: the wasm package
/// carries no string escaping for it).
impl fmt::Debug for FilterError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// The message, as [`Display`](fmt::Display) writes it (no derived `Debug`: the wasm package
/// carries no string escaping for it).
impl fmt::Debug for LayoutError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}
