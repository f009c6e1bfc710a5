use alloc::vec::Vec;

/// A growable set of row numbers.
#[derive(Clone, Debug, Default)]
pub(crate) struct Bitset {
    words: Vec<u64>,
    count: usize,
}

impl Bitset {
    #[inline(always)]
    pub(crate) fn contains(&self, i: usize) -> bool {
        self.words.get(i / 64).is_some_and(|w| w & (1 << (i % 64)) != 0)
    }

    /// Inserts `i`; returns whether it was new.
    #[inline(always)]
    pub(crate) fn insert(&mut self, i: usize) -> bool {
        if self.words.len() <= i / 64 {
            self.words.resize(i / 64 + 1, 0);
        }
        let w = &mut self.words[i / 64];
        let bit = 1 << (i % 64);
        let new = *w & bit == 0;
        *w |= bit;
        self.count += new as usize;
        new
    }

    pub(crate) fn count(&self) -> usize {
        self.count
    }

    /// The members, ascending.
    pub(crate) fn iter(&self) -> impl Iterator<Item = usize> + '_ {
        shoal_payload::BitIter::new(&self.words).map(|r| r as usize)
    }
}
