use core::fmt;

/// Why text-index bytes or builder input were rejected.
#[derive(Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum TextError {
    /// The bytes end before a structure they must hold.
    Truncated {
        /// What was being read.
        what: &'static str,
    },
    /// The bytes are long enough but inconsistent.
    Corrupt {
        /// What was being read.
        what: &'static str,
        /// What is wrong.
        reason: &'static str,
    },
    /// A text-section version this build does not read.
    UnsupportedVersion(u32),
    /// Input handed to a builder or encoder breaks its contract.
    InvalidInput(&'static str),
}

impl fmt::Display for TextError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TextError::Truncated { what } => write!(f, "truncated text index: {what}"),
            TextError::Corrupt { what, reason } => write!(f, "corrupt text index: {what}: {reason}"),
            TextError::UnsupportedVersion(v) => write!(f, "unsupported text index version {v}"),
            TextError::InvalidInput(why) => write!(f, "invalid input: {why}"),
        }
    }
}

impl core::error::Error for TextError {}

/// The message, as [`Display`](fmt::Display) writes it (no derived `Debug`: the wasm package
/// carries no string escaping for it).
impl fmt::Debug for TextError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

pub(crate) const fn corrupt(what: &'static str, reason: &'static str) -> TextError {
    TextError::Corrupt { what, reason }
}
