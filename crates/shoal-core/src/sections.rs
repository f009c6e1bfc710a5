//! Helpers of the section readers (`sealed`, `ivf_sections`, `text`): the error of a
//! malformed section, and where a cast section lies in its segment.

use core::ops::Range;

use shoal_format::FormatError;

use crate::Error;

pub(crate) fn bad(section: &'static str, reason: &'static str) -> Error {
    Error::Format(FormatError::BadSection { section, reason })
}

/// The byte range of `part` inside `base` (a sub-slice of it).
pub(crate) fn range_of(base: &[u8], part: &[u8]) -> Range<usize> {
    let start = part.as_ptr() as usize - base.as_ptr() as usize;
    start..start + part.len()
}
