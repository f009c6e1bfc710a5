//! The bytes a reader by ranges has fetched: pieces of the file by offset, within a budget.

use alloc::collections::BTreeMap;
use alloc::vec::Vec;
use core::cell::Cell;
use core::ops::Range;

use shoal_format::{ALIGN, AlignedBytes};

/// Fetched pieces of one segment file, by their offset in it.
///
/// A search reads everything it needs from here and names what is missing; the host fetches
/// that and [`insert`](Self::insert)s it. Pieces are dropped, least recently read first, only
/// by [`trim`](Self::trim) — which a host calls between searches, so that one search's pieces
/// stay while it runs even when they exceed the budget.
#[derive(Clone, Debug)]
pub struct RangeCache {
    /// Pieces by offset (a multiple of 64), each 64-byte aligned in memory, with when it was
    /// last read.
    pieces: BTreeMap<u64, (AlignedBytes, Cell<u64>)>,
    budget: u64,
    held: u64,
    clock: Cell<u64>,
    /// The longest piece held (how far back a lookup looks for one covering a range).
    longest: u64,
}

impl RangeCache {
    /// An empty cache that [`trim`](Self::trim) keeps within `budget` bytes.
    pub fn new(budget: u64) -> RangeCache {
        RangeCache { pieces: BTreeMap::new(), budget, held: 0, clock: Cell::new(0), longest: 0 }
    }

    /// The bytes of the file at `range`, if one piece holds them all.
    pub fn get(&self, range: Range<u64>) -> Option<&[u8]> {
        let start = self.find(&range)?;
        self.clock.set(self.clock.get() + 1);
        let (bytes, used) = &self.pieces[&start];
        used.set(self.clock.get());
        let at = (range.start - start) as usize;
        Some(&bytes.as_slice()[at..at + (range.end - range.start) as usize])
    }

    /// Whether one piece holds all of `range`.
    pub fn contains(&self, range: &Range<u64>) -> bool {
        self.find(range).is_some()
    }

    /// The offset of a piece holding all of `range`.
    fn find(&self, range: &Range<u64>) -> Option<u64> {
        let low = range.start.saturating_sub(self.longest);
        self.pieces
            .range(low..=range.start)
            .rev()
            .find(|(start, (bytes, _))| **start + bytes.len() as u64 >= range.end)
            .map(|(start, _)| *start)
    }

    /// Keeps `bytes`, read from the file at `offset` (a multiple of 64); pieces it covers
    /// are dropped.
    pub fn insert(&mut self, offset: u64, bytes: &[u8]) {
        assert!(offset.is_multiple_of(ALIGN as u64), "pieces start 64-byte aligned");
        let end = offset + bytes.len() as u64;
        let covered: Vec<u64> = self
            .pieces
            .range(offset..end.max(offset + 1))
            .filter(|(s, (b, _))| **s + b.len() as u64 <= end)
            .map(|(s, _)| *s)
            .collect();
        for s in covered {
            let (b, _) = self.pieces.remove(&s).expect("listed");
            self.held -= b.len() as u64;
        }
        self.clock.set(self.clock.get() + 1);
        self.held += bytes.len() as u64;
        self.longest = self.longest.max(bytes.len() as u64);
        if let Some((old, _)) =
            self.pieces.insert(offset, (AlignedBytes::from_slice(bytes), Cell::new(self.clock.get())))
        {
            self.held -= old.len() as u64;
        }
    }

    /// Drops the least recently read pieces until at most the budget is held.
    pub fn trim(&mut self) {
        while self.held > self.budget {
            let Some((&start, _)) = self.pieces.iter().min_by_key(|(_, (_, used))| used.get()) else { break };
            let (b, _) = self.pieces.remove(&start).expect("found");
            self.held -= b.len() as u64;
        }
    }

    /// The pieces that overlap `range`, as `(offset, bytes)`, by offset.
    pub fn pieces_in(&self, range: Range<u64>) -> impl Iterator<Item = (u64, &[u8])> {
        let low = range.start.saturating_sub(self.longest);
        self.pieces
            .range(low..range.end)
            .filter(move |(s, (b, _))| **s + b.len() as u64 > range.start)
            .map(|(s, (b, _))| (*s, b.as_slice()))
    }

    /// Drops every piece (after bytes failed their checksum: a transient fault is then
    /// fetched again, not kept).
    pub fn clear(&mut self) {
        self.pieces.clear();
        self.held = 0;
        self.longest = 0;
    }

    /// Bytes held.
    pub fn held(&self) -> u64 {
        self.held
    }
}

/// The ranges to fetch for `needed`: each widened to whole 64-byte lines (segment files are
/// a whole number of them), sorted, and merged with the next when the gap between them is at
/// most `gap` bytes — one request instead of two, for a few bytes more.
pub fn coalesce(needed: &[Range<u64>], gap: u64) -> Vec<Range<u64>> {
    let line = ALIGN as u64;
    let mut ranges: Vec<Range<u64>> =
        needed.iter().filter(|r| r.start < r.end).map(|r| r.start / line * line..r.end.div_ceil(line) * line).collect();
    ranges.sort_unstable_by_key(|r| (r.start, r.end));
    let mut out: Vec<Range<u64>> = Vec::new();
    for r in ranges {
        match out.last_mut() {
            Some(last) if r.start <= last.end.saturating_add(gap) => last.end = last.end.max(r.end),
            _ => out.push(r),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;

    #[test]
    fn coalesce_widens_sorts_and_merges_small_gaps() {
        let got = coalesce(&[1000..1010, 10..20, 70..130, 5000..5001, 0..0], 100);
        assert_eq!(got, [0..192, 960..1024, 4992..5056]);
        assert_eq!(coalesce(&[0..64, 128..192], 64), vec![0..192]);
        assert_eq!(coalesce(&[0..64, 192..256], 64), [0..64, 192..256]);
    }

    #[test]
    fn cache_finds_ranges_inside_pieces_and_trims_least_recent() {
        let mut c = RangeCache::new(200);
        let a: Vec<u8> = (0..128).map(|i| i as u8).collect();
        c.insert(0, &a);
        c.insert(256, &[7; 100]);
        assert_eq!(c.get(10..20), Some(&a[10..20]));
        assert_eq!(c.get(300..356), Some(&[7u8; 56][..]));
        assert!(!c.contains(&(120..130)), "crosses a piece's end");
        assert!(!c.contains(&(200..260)));
        assert_eq!(c.held(), 228);
        c.get(0..1);
        c.trim();
        assert!(c.contains(&(0..128)) && !c.contains(&(256..260)), "the least recently read went");
        // A piece covering others replaces them.
        c.insert(0, &[1; 512]);
        assert_eq!(c.held(), 512);
        assert_eq!(c.get(100..101), Some(&[1u8][..]));
    }
}
