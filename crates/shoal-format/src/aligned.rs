use alloc::vec::Vec;

/// An owned byte buffer whose start is 64-byte aligned, as the segment reader requires.
///
/// The npm package copies a `Uint8Array` into one of these once; natively a memory map is
/// already page-aligned and needs no copy.
pub struct AlignedBytes {
    /// `len + 63` zeroed bytes: the aligned bytes start at `start`. The vector never grows, so
    /// its bytes never move.
    buf: Vec<u8>,
    start: usize,
    len: usize,
}

impl AlignedBytes {
    /// A zero-filled buffer of `len` bytes. A zeroed byte vector comes from the allocator's
    /// `alloc_zeroed` with byte alignment, which skips the fill for memory fresh from the
    /// system (a 64-byte-aligned allocation would be filled explicitly): in wasm, a large
    /// segment's buffer costs no pass over its bytes before they are copied in.
    pub fn zeroed(len: usize) -> AlignedBytes {
        AlignedBytes::try_zeroed(len).unwrap_or_else(|| panic!("no memory for a buffer of {len} bytes"))
    }

    /// [`zeroed`](Self::zeroed), or `None` when the memory cannot be had (more than the
    /// address space allows, or more than the allocator can get: in wasm, memory that cannot
    /// grow) — for hosts that report that as an error rather than abort.
    pub fn try_zeroed(len: usize) -> Option<AlignedBytes> {
        let cap = len.checked_add(63)?;
        // Refuses more than `isize::MAX` bytes (2 GiB in wasm32).
        let layout = core::alloc::Layout::array::<u8>(cap).ok()?;
        // SAFETY: `layout` has a non-zero size (`cap` is at least 63).
        let ptr = unsafe { alloc::alloc::alloc_zeroed(layout) };
        if ptr.is_null() {
            return None;
        }
        // SAFETY: `ptr` was allocated by the global allocator with `layout` — alignment 1 and
        // size `cap`, exactly how a `Vec<u8>` of capacity `cap` allocates — and all `cap` bytes
        // are initialised (zeroed), so the vector may own it with length `cap`.
        let buf = unsafe { Vec::from_raw_parts(ptr, cap, cap) };
        let start = (64 - buf.as_ptr() as usize % 64) % 64;
        Some(AlignedBytes { buf, start, len })
    }

    /// Copies `bytes` into a new aligned buffer.
    pub fn from_slice(bytes: &[u8]) -> AlignedBytes {
        let mut out = AlignedBytes::zeroed(bytes.len());
        out.as_mut_slice().copy_from_slice(bytes);
        out
    }

    /// The bytes.
    pub fn as_slice(&self) -> &[u8] {
        &self.buf[self.start..self.start + self.len]
    }

    /// The bytes, mutable.
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        &mut self.buf[self.start..self.start + self.len]
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the buffer is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl AsMut<[u8]> for AlignedBytes {
    fn as_mut(&mut self) -> &mut [u8] {
        self.as_mut_slice()
    }
}

impl Default for AlignedBytes {
    /// Empty, and aligned like every other.
    fn default() -> Self {
        AlignedBytes::zeroed(0)
    }
}

impl Clone for AlignedBytes {
    fn clone(&self) -> Self {
        // A copy lands at another address: align it again.
        AlignedBytes::from_slice(self.as_slice())
    }
}

impl AsRef<[u8]> for AlignedBytes {
    fn as_ref(&self) -> &[u8] {
        self.as_slice()
    }
}

impl core::fmt::Debug for AlignedBytes {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "AlignedBytes({} bytes)", self.len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_start_aligned_and_zeroed_and_clones_too() {
        for len in [0usize, 1, 63, 64, 65, 1000, 1 << 20] {
            let a = AlignedBytes::zeroed(len);
            assert_eq!(a.len(), len);
            assert!(a.as_slice().iter().all(|&b| b == 0));
            let bytes: Vec<u8> = (0..len).map(|i| i as u8).collect();
            let b = AlignedBytes::from_slice(&bytes);
            let c = b.clone();
            for x in [&a, &b, &c, &AlignedBytes::default()] {
                assert_eq!(x.as_slice().as_ptr() as usize % 64, 0, "len {len}");
            }
            assert_eq!(c.as_slice(), &bytes[..]);
        }
    }
}
