use alloc::collections::BinaryHeap;
use alloc::vec::Vec;
use core::cmp::Ordering;

/// A scored point inside an index: a ranking key (lower is better) and an internal id.
#[derive(Clone, Copy, Debug)]
pub struct Candidate {
    /// Ranking key; lower is better.
    pub key: f32,
    /// Internal id; breaks ties, lower first.
    pub id: u64,
}

impl PartialEq for Candidate {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for Candidate {}
impl PartialOrd for Candidate {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Candidate {
    /// Total order: key by IEEE total order, then id. "Less" means "ranks first".
    fn cmp(&self, other: &Self) -> Ordering {
        self.key.total_cmp(&other.key).then(self.id.cmp(&other.id))
    }
}

/// Keeps the `k` best candidates seen so far (lowest key, ties by lowest id).
#[derive(Clone, Debug, Default)]
pub struct TopK {
    k: usize,
    heap: BinaryHeap<Candidate>,
}

impl TopK {
    /// An empty selection of `k` candidates.
    pub fn new(k: usize) -> TopK {
        TopK { k, heap: BinaryHeap::with_capacity(k + 1) }
    }

    /// Empties the selection and sets a new `k`, keeping the allocation.
    pub fn reset(&mut self, k: usize) {
        self.heap.clear();
        self.k = k;
        if self.heap.capacity() < k + 1 {
            self.heap.reserve(k + 1);
        }
    }

    /// The key a new candidate must beat (or tie with a lower id) to enter; `+inf` when not full.
    #[inline]
    pub fn threshold(&self) -> f32 {
        if self.heap.len() < self.k { f32::INFINITY } else { self.heap.peek().map_or(f32::INFINITY, |c| c.key) }
    }

    /// Offers a candidate.
    #[inline]
    pub fn push(&mut self, c: Candidate) {
        if self.k == 0 {
            return;
        }
        if self.heap.len() < self.k {
            self.heap.push(c);
        } else if let Some(mut top) = self.heap.peek_mut()
            && c < *top
        {
            *top = c;
        }
    }

    /// The `k` this selection keeps.
    pub fn capacity_k(&self) -> usize {
        self.k
    }

    /// Number of candidates held.
    pub fn len(&self) -> usize {
        self.heap.len()
    }

    /// Whether no candidate is held.
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }

    /// Offers every candidate held to `into` and empties this selection (no allocation).
    pub fn drain_into(&mut self, into: &mut TopK) {
        for c in self.heap.drain() {
            into.push(c);
        }
    }

    /// Moves the candidates, best first, into `out` (cleared first) and empties the selection.
    pub fn drain_sorted(&mut self, out: &mut Vec<Candidate>) {
        // Popped worst first, then reversed: the order a sort would give (the order is total,
        // and equal candidates are identical), without a sort routine of its own in the wasm
        // build.
        out.clear();
        while let Some(c) = self.heap.pop() {
            out.push(c);
        }
        out.reverse();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn equals_full_sort(keys in proptest::collection::vec(-4i8..4, 0..200), k in 0usize..20) {
            let cands: Vec<Candidate> = keys.iter().enumerate().map(|(i, &x)| Candidate { key: x as f32, id: i as u64 }).collect();
            let mut t = TopK::new(k);
            for c in cands.iter().rev() { t.push(*c); }
            let mut got = Vec::new();
            t.drain_sorted(&mut got);
            let mut want = cands.clone();
            want.sort();
            want.truncate(k);
            prop_assert_eq!(got.iter().map(|c| c.id).collect::<Vec<_>>(), want.iter().map(|c| c.id).collect::<Vec<_>>());
        }
    }
}
