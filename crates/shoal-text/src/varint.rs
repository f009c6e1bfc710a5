//! LEB128 varints and bounds-checked little-endian reads.

use alloc::vec::Vec;

use crate::TextError;

/// Appends `v` as a LEB128 varint (1..=5 bytes).
#[inline]
pub fn put_u32(out: &mut Vec<u8>, mut v: u32) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Reads a LEB128 `u32` at `*pos` and advances `*pos`; errors when the bytes end or the value
/// does not fit in 32 bits.
#[inline]
pub fn get_u32(bytes: &[u8], pos: &mut usize, what: &'static str) -> Result<u32, TextError> {
    let mut v: u32 = 0;
    let mut shift = 0u32;
    loop {
        let Some(&b) = bytes.get(*pos) else {
            return Err(TextError::Truncated { what });
        };
        *pos += 1;
        if shift == 28 && b > 0x0f {
            return Err(crate::error::corrupt(what, "varint overflows u32"));
        }
        v |= u32::from(b & 0x7f) << shift;
        if b < 0x80 {
            return Ok(v);
        }
        shift += 7;
    }
}

/// Appends `v` as a LEB128 varint (1..=10 bytes).
#[inline]
pub fn put_u64(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Reads a LEB128 `u64` at `*pos` and advances `*pos`; errors when the bytes end or the value
/// does not fit in 64 bits.
#[inline]
pub fn get_u64(bytes: &[u8], pos: &mut usize, what: &'static str) -> Result<u64, TextError> {
    let mut v: u64 = 0;
    let mut shift = 0u32;
    loop {
        let Some(&b) = bytes.get(*pos) else {
            return Err(TextError::Truncated { what });
        };
        *pos += 1;
        if shift == 63 && b > 1 {
            return Err(crate::error::corrupt(what, "varint overflows u64"));
        }
        v |= u64::from(b & 0x7f) << shift;
        if b < 0x80 {
            return Ok(v);
        }
        shift += 7;
    }
}

/// Skips `n` varints starting at `*pos` (checks only that the bytes do not end early). Eight
/// bytes at a time: a varint ends at each byte below `0x80`.
#[inline]
pub fn skip_n(bytes: &[u8], pos: &mut usize, mut n: u32, what: &'static str) -> Result<(), TextError> {
    while n > 0 {
        let Some(chunk) = pos.checked_add(8).and_then(|end| bytes.get(*pos..end)) else {
            // The last few bytes, one at a time.
            let Some(&b) = bytes.get(*pos) else {
                return Err(TextError::Truncated { what });
            };
            *pos += 1;
            n -= u32::from(b < 0x80);
            continue;
        };
        let mut w = [0u8; 8];
        w.copy_from_slice(chunk);
        let mut ends = !u64::from_le_bytes(w) & 0x8080_8080_8080_8080;
        let c = ends.count_ones();
        if c < n {
            n -= c;
            *pos += 8;
        } else {
            // The n-th end in this word: drop the n - 1 lowest.
            for _ in 1..n {
                ends &= ends - 1;
            }
            *pos += ends.trailing_zeros() as usize / 8 + 1;
            return Ok(());
        }
    }
    Ok(())
}

/// The little-endian `u32` at `at`, or an error when it does not fit.
#[inline]
pub fn read_u32(bytes: &[u8], at: usize, what: &'static str) -> Result<u32, TextError> {
    match at.checked_add(4).and_then(|end| bytes.get(at..end)) {
        Some(b) => Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]])),
        _ => Err(TextError::Truncated { what }),
    }
}

/// The little-endian `u64` at `at`, or an error when it does not fit.
#[inline]
pub fn read_u64(bytes: &[u8], at: usize, what: &'static str) -> Result<u64, TextError> {
    match at.checked_add(8).and_then(|end| bytes.get(at..end)) {
        Some(b) => {
            let mut a = [0u8; 8];
            a.copy_from_slice(b);
            Ok(u64::from_le_bytes(a))
        }
        None => Err(TextError::Truncated { what }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn round_trip(vals in proptest::collection::vec(any::<u32>(), 0..100)) {
            let mut out = Vec::new();
            for &v in &vals { put_u32(&mut out, v); }
            let mut pos = 0;
            for &v in &vals { prop_assert_eq!(get_u32(&out, &mut pos, "t").unwrap(), v); }
            prop_assert_eq!(pos, out.len());
        }

        #[test]
        fn round_trip_u64(vals in proptest::collection::vec(any::<u64>(), 0..100)) {
            let mut out = Vec::new();
            for &v in &vals { put_u64(&mut out, v); }
            let mut pos = 0;
            for &v in &vals { prop_assert_eq!(get_u64(&out, &mut pos, "t").unwrap(), v); }
            prop_assert_eq!(pos, out.len());
        }
    }

    proptest! {
        #[test]
        fn skip_n_skips_whole_varints(vals in proptest::collection::vec(any::<u32>().prop_map(|v| v >> (v % 32)), 0..60), from in 0usize..60, n in 0usize..70) {
            let mut out = Vec::new();
            let mut ends = alloc::vec![0];
            for &v in &vals { put_u32(&mut out, v); ends.push(out.len()); }
            let from = from.min(vals.len());
            let mut pos = ends[from];
            let r = skip_n(&out, &mut pos, n as u32, "t");
            if from + n <= vals.len() { prop_assert!(r.is_ok()); prop_assert_eq!(pos, ends[from + n]); }
            else { prop_assert!(r.is_err()); }
        }
    }

    #[test]
    fn rejects_overflow_and_truncation() {
        let mut pos = 0;
        assert!(get_u32(&[0xff, 0xff, 0xff, 0xff, 0x10], &mut pos, "t").is_err());
        let mut pos = 0;
        assert_eq!(get_u32(&[0xff, 0xff, 0xff, 0xff, 0x0f], &mut pos, "t").unwrap(), u32::MAX);
        let mut pos = 0;
        assert!(get_u32(&[0x80], &mut pos, "t").is_err());
        let mut pos = 0;
        assert!(get_u64(&[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02], &mut pos, "t").is_err());
        let mut pos = 0;
        assert_eq!(
            get_u64(&[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01], &mut pos, "t").unwrap(),
            u64::MAX
        );
        assert!(read_u32(&[1, 2, 3], 0, "t").is_err());
        assert!(read_u32(&[1, 2, 3, 4], usize::MAX - 1, "t").is_err());
        assert!(read_u64(&[0; 8], usize::MAX, "t").is_err());
    }
}
