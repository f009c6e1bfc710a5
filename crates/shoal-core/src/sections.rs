//! The error of a malformed section, shared by the section readers (`sealed`, `text`).

use shoal_format::FormatError;

use crate::Error;

pub(crate) fn bad(section: &'static str, reason: &'static str) -> Error {
    Error::Format(FormatError::BadSection { section, reason })
}
