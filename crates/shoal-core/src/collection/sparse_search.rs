//! Sparse vector requests (`docs/format.md`, "Sparse vectors"): each sealed segment walked by
//! MaxScore over the query's posting lists — rows in order, each scored from the lists holding
//! it as the reference [`dot`] sums, the lists of smallest bounds left out (and rows skipped)
//! once nothing only they hold can reach the `k` best, and whole blocks of 64 postings passed
//! while their block-max bounds cannot, by bounds with a margin over `f32` rounding, so the top
//! `k` is the exhaustive one, bit for bit (`params.exact`, and the npm
//! package, score every posting term at a time instead); then the unsealed rows through [`dot`]
//! itself; weights from the set's statistics when the vector has the `idf` modifier; merged by
//! score, ties by internal id.

use alloc::format;
use alloc::vec::Vec;

use shoal_format::SparseEntry;
use shoal_index::order::f32_key;
use shoal_index::{Candidate, TopK};
use shoal_payload::Filter;

use super::Collection;
use super::search::sealed_passes;
use crate::sparse::{SparseVector, dot, idf_weight};
use crate::{Error, SearchRequest, SearchStats};

impl Collection {
    /// Up to `k` `(internal id, score)` pairs of the sparse query `query` in the sparse vector
    /// `req.using`, best first (ties by internal id), among the live points that hold it, pass
    /// `filter` and share an index with the query.
    pub(super) fn sparse_ranking(
        &self,
        req: &SearchRequest,
        query: &SparseVector,
        filter: Option<&Filter>,
        k: usize,
    ) -> Result<(Vec<(usize, f32)>, SearchStats), Error> {
        let name = req.using.as_deref().unwrap_or("");
        let t = self
            .sparse_position(name)
            .ok_or_else(|| Error::InvalidRequest(format!("`using`: the collection has no sparse vector \"{name}\"")))?;
        let views: Vec<_> = self.parts.iter().map(|p| p.seg.sparse(t)).collect();
        let unsealed = self.mutable.sparse.get(t);
        let mut w: Vec<SparseEntry> = query.entries().to_vec();
        if self.sparse[t].idf {
            // The set's statistics: rows holding the vector and rows holding each index, over
            // every segment and the unsealed rows (deleted ones until a seal or merge drops them).
            let n = views.iter().flatten().map(|v| v.meta.present).sum::<u64>() + unsealed.map_or(0, |u| u.present());
            for e in &mut w {
                let df =
                    views.iter().flatten().map(|v| v.df(e.index)).sum::<u64>() + unsealed.map_or(0, |u| u.df(e.index));
                e.value = idf_weight(e.value, n, df);
            }
        }
        let mut stats = SearchStats { exact: true, ..SearchStats::default() };
        let mut hits: Vec<(usize, f32)> = Vec::new();
        // With pruning, the `k` best so far besides: key the negated score (lower ranks first,
        // ties by internal id).
        let mut best = (PRUNES && !req.params.exact).then(|| TopK::new(k));
        let mut push = |best: &mut Option<TopK>, id: usize, score: f32| {
            hits.push((id, score));
            if PRUNES && let Some(best) = best {
                best.push(Candidate { key: -score, id: id as u64 });
            }
        };
        // The `k`-th best score once there are `k` (a row scoring below it cannot be a result);
        // none with `params.exact`, or in a build without pruning.
        // A NaN k-th score bounds nothing.
        let threshold = |best: &Option<TopK>| {
            best.as_ref().filter(|b| b.len() == k).map(|b| -b.threshold()).filter(|t| !t.is_nan())
        };
        for (part, view) in self.parts.iter().zip(&views) {
            let Some(view) = view else { continue };
            let (seg, deleted) = (&*part.seg, &part.deleted);
            let payload = seg.payload();
            let compiled = match (filter, &payload) {
                (Some(f), Some(v)) => Some(self.compile_filter(seg, v, f)?),
                _ => None,
            };
            stats.segments += 1;
            if !PRUNES || req.params.exact {
                // Term at a time: one key per posting of the query's indices (its row, then its
                // place in query order, indices ascending) with the product beside it, sorted,
                // so each row's products come together in the order `dot` sums them.
                let (mut keys, mut products): (Vec<u64>, Vec<f32>) = (Vec::new(), Vec::new());
                for e in &w {
                    if let Some((rows, values)) = view.postings(e.index)? {
                        for (&r, &x) in rows.iter().zip(values) {
                            keys.push(u64::from(r) << 32 | products.len() as u64);
                            products.push(e.value * x);
                        }
                    }
                }
                shoal_format::sort_u64(&mut keys);
                let mut at = 0;
                while at < keys.len() {
                    let row = (keys[at] >> 32) as u32;
                    let mut score = 0.0f32;
                    while at < keys.len() && (keys[at] >> 32) as u32 == row {
                        score += products[keys[at] as u32 as usize];
                        at += 1;
                    }
                    stats.scanned += 1;
                    if !deleted.contains(row as usize) && sealed_passes(seg, compiled.as_ref(), filter, row) {
                        push(&mut best, part.base + row as usize, score);
                    }
                }
                continue;
            }
            let mut lists = Lists::of(view, &w)?;
            // Document at a time: the next row is the smallest one an essential list holds.
            while let Some(r) = lists.next_row(threshold(&best)) {
                // Deletes and the filter only for a row whose bound can reach the threshold.
                let live = || !deleted.contains(r) && sealed_passes(seg, compiled.as_ref(), filter, r as u32);
                if let Some(score) = lists.score(r as u32, live, threshold(&best)) {
                    stats.scanned += 1;
                    push(&mut best, part.base + r, score);
                }
            }
        }
        // The unsealed rows through the reference itself.
        if let Some(u) = unsealed {
            let (m, first) = (&self.mutable, self.sealed_rows());
            stats.segments += 1;
            for row in 0..m.rows() {
                let Some(x) = u.row(row) else { continue };
                stats.scanned += 1;
                if let Some(score) = dot(&w, x).filter(|_| m.passes(row, filter, self.nested())) {
                    push(&mut best, first + row, score);
                }
            }
        }
        super::text_search::best_first(&mut hits, k);
        Ok((hits, stats))
    }
}

/// Whether this build walks the lists by MaxScore, skipping rows that cannot be results
/// (feature `sparse-pruning`: every build but the npm package's, whose size budget leaves it
/// out). Without it, and with `params.exact`, each segment is scored term at a time over every
/// posting of the query's indices; the results are the same bits.
const PRUNES: bool = cfg!(feature = "sparse-pruning");

/// A segment's posting lists of a query, in query order, walked document at a time by
/// MaxScore (`docs/format.md`, "Pruning that cannot change results"): the lists whose bounds
/// sum (with the margin over `f32` rounding) below the threshold are not essential — a row
/// only they hold cannot be a result, so rows come from the essential lists alone and are
/// looked up in the others — and by block-max: while the essential lists' current blocks
/// bound every row up to the first block's end below the threshold, those rows are passed.
struct Lists<'a> {
    lists: Vec<List<'a>>,
    /// The lists by bound ascending.
    by_bound: Vec<usize>,
    /// `below[i]`: the margin plus the bounds of `by_bound[..=i]`.
    below: Vec<f64>,
    /// `by_bound[..inessential]` are not essential.
    inessential: usize,
    margin: f64,
    /// The block-max window: rows up to `.0` score at most `.1` (with `.2` lists inessential).
    window: Option<(u32, f64, usize)>,
}

/// One query index's postings in a segment and where its walk stands.
struct List<'a> {
    w: f32,
    rows: &'a [u32],
    values: &'a [f32],
    /// The largest product of `w` and a value, never below 0 (a row without the index gets 0).
    bound: f64,
    /// The same bound per block of [`BLOCK`] postings (empty for a list of one block).
    blocks: Vec<f64>,
    at: usize,
    essential: bool,
}

/// Postings per block of the block-max bounds.
const BLOCK: usize = 64;

/// `max(0, w · x)` over the values `x` from `lo` to `hi`, in `f64`.
fn product_bound(q: f64, (lo, hi): (f32, f32)) -> f64 {
    (q * f64::from(if q >= 0.0 { hi } else { lo })).max(0.0)
}

/// The smallest and largest of `values`.
fn extent(values: &[f32]) -> (f32, f32) {
    values.iter().fold((f32::MAX, f32::MIN), |(lo, hi), &x| (lo.min(x), hi.max(x)))
}

impl List<'_> {
    /// The bound of the current block's postings (the walk is not over).
    fn block_bound(&self) -> f64 {
        self.blocks.get(self.at / BLOCK).copied().unwrap_or(self.bound)
    }

    /// The last row of the current block.
    fn block_last_row(&self) -> u32 {
        self.rows[((self.at / BLOCK + 1) * BLOCK).min(self.rows.len()) - 1]
    }
}

impl<'a> Lists<'a> {
    fn of(view: &crate::sparse::SparseView<'a>, w: &[SparseEntry]) -> Result<Lists<'a>, Error> {
        let mut lists: Vec<List<'a>> = Vec::new();
        let mut magnitude = 0.0f64;
        for e in w {
            let Some((rows, values)) = view.postings(e.index)? else { continue };
            let q = f64::from(e.value);
            let (mut lo, mut hi) = (f32::MAX, f32::MIN);
            let mut blocks = Vec::new();
            for block in values.chunks(BLOCK) {
                let (l, h) = extent(block);
                (lo, hi) = (lo.min(l), hi.max(h));
                if values.len() > BLOCK {
                    blocks.push(product_bound(q, (l, h)));
                }
            }
            magnitude += q.abs() * f64::from(lo.abs().max(hi.abs()));
            let bound = product_bound(q, (lo, hi));
            lists.push(List { w: e.value, rows, values, bound, blocks, at: 0, essential: true });
        }
        // Smallest bound first (by its `f32` rounding: the order only decides how much is
        // skipped), through the package's one integer sort.
        let mut order: Vec<u64> =
            lists.iter().enumerate().map(|(j, l)| u64::from(f32_key(l.bound as f32)) << 32 | j as u64).collect();
        shoal_format::sort_u64(&mut order);
        let by_bound: Vec<usize> = order.iter().map(|&o| o as u32 as usize).collect();
        // The margin exceeds the rounding error of any `f32` score of the query's `m` pairs:
        // (m + 2) 2^-23 sum |w_i| max |x_i|, plus m 2^-140 for subnormals.
        let m = w.len() as f64;
        let (ulp, tiny) = (1.0 / (1u64 << 23) as f64, f64::from_bits((1023 - 140) << 52));
        let margin = (m + 2.0) * ulp * magnitude + m * tiny;
        let mut below = Vec::with_capacity(lists.len());
        let mut sum = margin;
        for &j in &by_bound {
            sum += lists[j].bound;
            below.push(sum);
        }
        Ok(Lists { lists, by_bound, below, inessential: 0, margin, window: None })
    }

    /// The next row an essential list holds (`None`: the walk is over), after making the lists
    /// whose bounds sum below `threshold` inessential and passing the rows the essential
    /// lists' current blocks bound below it.
    fn next_row(&mut self, threshold: Option<f32>) -> Option<usize> {
        let Some(t) = threshold else { return self.next_essential().map(|r| r as usize) };
        while self.inessential < self.lists.len() && below(self.below[self.inessential], t) {
            self.lists[self.by_bound[self.inessential]].essential = false;
            self.inessential += 1;
        }
        loop {
            let next = self.next_essential()?;
            let (end, bound) = match self.window {
                Some((end, bound, inessential)) if next <= end && inessential == self.inessential => (end, bound),
                _ => {
                    // A row up to `end` (the first current block's last row) scores at most the
                    // current blocks' bounds of the essential lists holding it plus the others'
                    // bounds (all non-negative, so the sum bounds the positive parts too). Kept
                    // while the walk stays in these blocks.
                    let (mut end, mut bound) = (u32::MAX, self.rest());
                    for l in self.lists.iter().filter(|l| l.essential && l.at < l.rows.len()) {
                        end = end.min(l.block_last_row());
                        bound += l.block_bound();
                    }
                    self.window = Some((end, bound, self.inessential));
                    (end, bound)
                }
            };
            if !below(bound, t) {
                return Some(next as usize);
            }
            for l in self.lists.iter_mut().filter(|l| l.essential) {
                l.at += l.rows[l.at..].partition_point(|&x| x <= end);
            }
        }
    }

    /// The smallest row an essential list holds at its position (`None`: they are all over).
    fn next_essential(&self) -> Option<u32> {
        self.lists.iter().filter(|l| l.essential).filter_map(|l| l.rows.get(l.at)).min().copied()
    }

    /// The margin plus the bounds of the lists that are not essential.
    fn rest(&self) -> f64 {
        match self.inessential {
            0 => self.margin,
            i => self.below[i - 1],
        }
    }

    /// Moves past row `r` (the current row of [`next_row`](Self::next_row)) and scores it when
    /// it can reach `threshold` and is `live` (asked only then): the reference's sum, the
    /// products of the lists holding `r` in query order (indices ascending).
    fn score(&mut self, r: u32, live: impl FnOnce() -> bool, threshold: Option<f32>) -> Option<f32> {
        // Above the score: the essential lists' products and the others' bounds.
        let rest = self.rest();
        // `bound` sums the products; `positive` their positive parts: a left-to-right `f32` sum
        // can overflow on the way though the whole cancels, so nothing is skipped whose positive
        // parts could reach `f32::MAX`.
        let (mut bound, mut positive) = (rest, rest);
        for l in self.lists.iter().filter(|l| l.essential && l.rows.get(l.at) == Some(&r)) {
            let p = f64::from(l.w) * f64::from(l.values[l.at]);
            bound += p;
            positive += p.max(0.0);
        }
        let skip = threshold.is_some_and(|t| below(bound, t) && below(positive, f32::MAX)) || !live();
        let mut score = 0.0f32;
        for l in &mut self.lists {
            if !l.essential {
                if skip {
                    continue;
                }
                l.at += l.rows[l.at..].partition_point(|&x| x < r);
            }
            if l.rows.get(l.at) == Some(&r) {
                score += l.w * l.values[l.at];
                l.at += usize::from(l.essential);
            }
        }
        (!skip).then_some(score)
    }
}

/// Whether a score bounded by `bound` (with the margin) computes below `threshold`: below it and
/// below `f32::MAX` (a sum past that rounds to infinity, which the margin does not bound).
fn below(bound: f64, threshold: f32) -> bool {
    bound < f64::from(threshold).min(f64::from(f32::MAX))
}
