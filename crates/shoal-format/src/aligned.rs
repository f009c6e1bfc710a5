use alloc::vec::Vec;

#[repr(C, align(64))]
#[derive(Clone, Copy)]
struct Block([u8; 64]);

/// An owned byte buffer whose start is 64-byte aligned, as the segment reader requires.
///
/// The npm package copies a `Uint8Array` into one of these once; natively a memory map is
/// already page-aligned and needs no copy.
#[derive(Clone, Default)]
pub struct AlignedBytes {
    blocks: Vec<Block>,
    len: usize,
}

impl AlignedBytes {
    /// A zero-filled buffer of `len` bytes.
    pub fn zeroed(len: usize) -> AlignedBytes {
        AlignedBytes { blocks: alloc::vec![Block([0; 64]); len.div_ceil(64)], len }
    }

    /// Copies `bytes` into a new aligned buffer.
    pub fn from_slice(bytes: &[u8]) -> AlignedBytes {
        let mut out = AlignedBytes::zeroed(bytes.len());
        out.as_mut_slice().copy_from_slice(bytes);
        out
    }

    /// The bytes.
    pub fn as_slice(&self) -> &[u8] {
        // SAFETY: `blocks` holds `blocks.len() * 64 >= len` initialised bytes, contiguous
        // because `Block` is `repr(C)` with no padding; u8 has no alignment requirement.
        unsafe { core::slice::from_raw_parts(self.blocks.as_ptr().cast::<u8>(), self.len) }
    }

    /// The bytes, mutable.
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: as in `as_slice`, and `&mut self` guarantees exclusive access.
        unsafe { core::slice::from_raw_parts_mut(self.blocks.as_mut_ptr().cast::<u8>(), self.len) }
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
