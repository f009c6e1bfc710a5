use core::fmt;

/// Why a byte buffer is not a valid segment container.
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum FormatError {
    /// The buffer is shorter than a structure it must hold.
    Truncated {
        /// What was being read.
        what: &'static str,
        /// Bytes needed.
        needed: u64,
        /// Bytes available.
        available: u64,
    },
    /// The first eight bytes are not `SHOALSEG`.
    BadMagic,
    /// A format version this reader does not know.
    UnsupportedVersion {
        /// Version found in the header.
        found: u32,
        /// Newest version this build reads.
        newest: u32,
    },
    /// Header flag bits this reader does not know.
    UnsupportedFlags(u32),
    /// A stored checksum does not match the bytes.
    ChecksumMismatch {
        /// `"header"`, `"section table"` or the section kind's name.
        what: &'static str,
        /// Section kind, or 0 for the header and table.
        kind: u32,
        /// Checksum stored in the file.
        stored: u32,
        /// Checksum of the bytes.
        actual: u32,
    },
    /// The buffer does not start at a 64-byte-aligned address, or a record array is misaligned.
    Misaligned,
    /// A structural rule of the container is broken (bounds, order, overlap, reserved bits).
    Malformed(&'static str),
    /// A section kind this reader does not know, without the optional flag.
    UnknownSection(u32),
    /// A required section is absent.
    MissingSection(&'static str),
    /// A section's contents are inconsistent.
    BadSection {
        /// Section name.
        section: &'static str,
        /// What is wrong.
        reason: &'static str,
    },
}

impl fmt::Display for FormatError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FormatError::Truncated { what, needed, available } => {
                write!(f, "truncated segment: {what} needs {needed} bytes, {available} available")
            }
            FormatError::BadMagic => f.write_str("not a Shoal segment (bad magic)"),
            FormatError::UnsupportedVersion { found, newest } => {
                write!(f, "unsupported segment format version {found} (this build reads 1..={newest})")
            }
            FormatError::UnsupportedFlags(x) => write!(f, "unsupported segment flags {x:#x}"),
            FormatError::ChecksumMismatch { what, kind, stored, actual } => {
                write!(f, "checksum mismatch in {what} (kind {kind}): stored {stored:#010x}, computed {actual:#010x}")
            }
            FormatError::Misaligned => f.write_str("segment bytes are not 64-byte aligned"),
            FormatError::Malformed(why) => write!(f, "malformed segment: {why}"),
            FormatError::UnknownSection(k) => write!(f, "unknown required section kind {k}"),
            FormatError::MissingSection(s) => write!(f, "missing required section {s}"),
            FormatError::BadSection { section, reason } => {
                write!(f, "bad {section} section: {reason}")
            }
        }
    }
}

impl core::error::Error for FormatError {}

/// The message, as [`Display`](fmt::Display) writes it (no derived `Debug`: the wasm package
/// carries no string escaping for it).
impl fmt::Debug for FormatError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}
