//! The centroids a vector search of a segment read by ranges probes with: all of them when
//! they are hot, else those it fetched, chosen by their codes (`docs/format.md`, "IVF +
//! RaBitQ, v2", `IVF_CENTROID_CODES`) until the partitions it probes are proven to be the ones
//! the local search probes, in the same order.
//!
//! Over coded centroids the search runs on an index of the fetched partitions alone (its
//! *members*), renumbered in the segment's order: partitions tie by number, so the members keep
//! the order the local search gives them, and a partition left out is one the local search
//! does not reach before them.

use alloc::borrow::Cow;
use alloc::vec::Vec;
use core::ops::Range;

use shoal_index::ivf::codes::CentroidCodes;
use shoal_index::ivf::{IvfIndex, IvfScratch, IvfSearch, probe_keys, widening};

use super::{Parts, RangeCache, RemoteSegment, Step, coalesce, le_f32s};
use crate::Error;

/// The centroids a search runs over: the index's, or those of some of its partitions (its members).
pub(super) struct Probes<'s> {
    /// The index searched: the segment's, or one over `members` alone.
    pub(super) index: Cow<'s, IvfIndex>,
    /// The segment's partitions it holds, ascending (`None`: every one).
    pub(super) members: Option<Vec<u32>>,
    /// Their centroids and rotated centroids.
    pub(super) centroids: Cow<'s, [f32]>,
    pub(super) rot_centroids: Cow<'s, [f32]>,
}

/// A search's probes: the centroids, and the segment's partitions in probe order, of which it
/// probes `nprobe` and, it is predicted, `probed`.
pub(super) struct ProbePlan<'s> {
    pub(super) probes: Probes<'s>,
    pub(super) order: Vec<u32>,
    pub(super) probed: usize,
}

impl Probes<'_> {
    /// The members, every partition of the segment if `None`: the partitions a subset of the
    /// index is made over.
    pub(super) fn members(&self) -> Cow<'_, [u32]> {
        match &self.members {
            Some(m) => Cow::Borrowed(&m[..]),
            None => Cow::Owned((0..self.index.nlist as u32).collect()),
        }
    }
}

impl RemoteSegment {
    /// Partition `p`'s centroid in the file.
    fn centroid_range(&self, p: usize) -> Range<u64> {
        let Parts::V2 { centroids, .. } = self.parts else { unreachable!("coded centroids are format 2") };
        let row = self.dim as u64 * 4;
        centroids + p as u64 * row..centroids + (p as u64 + 1) * row
    }

    /// The ranges of the centroids of `partitions` (ascending) not in `cache`, merged.
    fn centroid_fetch(&self, partitions: &[usize], cache: &RangeCache) -> Vec<Range<u64>> {
        let missing: Vec<Range<u64>> =
            partitions.iter().map(|&p| self.centroid_range(p)).filter(|r| !cache.contains(r)).collect();
        coalesce(&missing, self.merge_gap)
    }

    /// The probes over every partition when the centroids are hot, else over `partitions`
    /// (ascending): `Err` with the ranges of their centroids to fetch first.
    pub(super) fn probes_for(
        &self,
        partitions: &[u32],
        cache: &RangeCache,
    ) -> Result<Result<Probes<'_>, Vec<Range<u64>>>, Error> {
        let Some(codes) = &self.ivf.codes else { return Ok(Ok(self.all_probes())) };
        let wanted: Vec<usize> = partitions.iter().map(|&p| p as usize).collect();
        let missing = self.centroid_fetch(&wanted, cache);
        if !missing.is_empty() {
            return Ok(Err(missing));
        }
        self.probes_over(codes, &wanted, cache).map(Ok)
    }

    /// The probes over every centroid (hot).
    fn all_probes(&self) -> Probes<'_> {
        Probes {
            index: Cow::Borrowed(&self.ivf.index),
            members: None,
            centroids: Cow::Borrowed(&self.ivf.centroids),
            rot_centroids: Cow::Borrowed(&self.ivf.rot_centroids),
        }
    }

    /// The probes over the partitions `wanted` (ascending, their centroids fetched): the
    /// centroids checked against their CRCs, and rotated as the build rotates them.
    fn probes_over(&self, codes: &CentroidCodes, wanted: &[usize], cache: &RangeCache) -> Result<Probes<'_>, Error> {
        let mut centroids: Vec<f32> = Vec::with_capacity(wanted.len() * self.dim);
        for &p in wanted {
            let bytes = cache.get(self.centroid_range(p)).expect("fetched");
            codes.check(p, bytes)?;
            centroids.extend(le_f32s(bytes));
        }
        let index = &self.ivf.index;
        let rot_centroids = index.rotation.apply_rows(&centroids, self.dim);
        Ok(Probes {
            index: Cow::Owned(IvfIndex { nlist: wanted.len(), padded: index.padded, rotation: index.rotation.clone() }),
            members: Some(wanted.iter().map(|&p| p as u32).collect()),
            centroids: Cow::Owned(centroids),
            rot_centroids: Cow::Owned(rot_centroids),
        })
    }

    /// The probes of `search` for the top `k` (`passes(p)`: the rows of partition `p` it may
    /// take), which probes at least `at_least` partitions when there are that many: over hot
    /// centroids at once; over coded ones, over the centroids whose bounds say they may be among
    /// those it probes, once fetched and proven to hold every one it probes and every one it
    /// compares them with (`docs/format.md`) — else the ranges of those it lacks.
    pub(super) fn probe_plan(
        &self,
        search: &IvfSearch<'_>,
        (passes, k): (&dyn Fn(u32) -> u64, usize),
        at_least: usize,
        cache: &RangeCache,
    ) -> Result<Step<ProbePlan<'_>>, Error> {
        // The search probes past `nprobe` only while it has fewer than `k` candidates (every
        // row that passes is one until the first cut, at twice the re-ranking depth): how far
        // it goes in `order`, and whether it finds `k` there.
        let count = |order: &[u32], nprobe: usize| {
            let mut probed = nprobe;
            let mut rows: u64 = order[..nprobe].iter().map(|&p| passes(p)).sum();
            while rows < k as u64 && probed < order.len() {
                rows += passes(order[probed]);
                probed += 1;
            }
            (probed.max(at_least).min(order.len()), rows >= k as u64)
        };
        let mut scratch = IvfScratch::default();
        let mut order = Vec::new();
        let Some(codes) = &self.ivf.codes else {
            let probes = self.all_probes();
            let nprobe = probes.index.probe_order(search, &probes.centroids, &mut scratch, &mut order);
            let probed = count(&order, nprobe).0;
            return Ok(Step::Done(ProbePlan { probes, order, probed }));
        };
        let q = &search.params;
        let nlist = codes.len();
        let bounds = codes.bounds(self.metric, search.query);
        // The members: the partitions that, by their bounds, may come before `n` partitions
        // holding `k` rows that pass — at first `n` a guess of how many it probes and one more
        // (the proof below needs a partition past them).
        let reach_for = |n: usize| {
            let (mut taken, mut rows) = (0, 0u64);
            CentroidCodes::reach(&bounds, &mut |p| {
                taken += 1;
                rows += passes(p as u32);
                taken >= n && rows >= k as u64
            })
        };
        let guess = (q.nprobe.max(1) as f32 * widening(q.passing)) as usize;
        let mut reach = reach_for(guess.max(at_least).saturating_add(1));
        loop {
            let members = CentroidCodes::below(&bounds, reach);
            let missing = self.centroid_fetch(&members, cache);
            if !missing.is_empty() {
                return Ok(Step::Fetch(missing));
            }
            let probes = self.probes_over(codes, &members, cache)?;
            let nprobe = probes.index.probe_order(search, &probes.centroids, &mut scratch, &mut order);
            for p in order.iter_mut() {
                *p = members[*p as usize] as u32;
            }
            let (probed, enough) = count(&order, nprobe);
            if members.len() == nlist {
                return Ok(Step::Done(ProbePlan { probes, order, probed }));
            }
            // The partitions it compares or probes are the local search's first `need` when
            // the `need`-th one's key is below every partition left out's lower bound; and
            // when it probes fewer than the members (else the local search, with more, might
            // probe more).
            let need = probed.max(q.nprobe.max(1));
            let key = (enough && at_least <= order.len() && need < order.len()).then(|| {
                let p = members.partition_point(|&m| m < order[need - 1] as usize);
                self.probe_key(search.query, &probes.centroids[p * self.dim..(p + 1) * self.dim])
            });
            let least = CentroidCodes::left_out(&bounds, &members);
            if key.is_some_and(|key| f64::from(key) < least) {
                return Ok(Step::Done(ProbePlan { probes, order, probed }));
            }
            // More members: those that may precede the `need`-th, or enough for twice as many
            // partitions holding `k` rows; at least the nearest left out (members only grow:
            // this ends).
            let wider = match key {
                Some(key) if key.is_finite() => f64::from(key),
                _ => reach_for(2 * need.max(at_least).max(order.len())),
            };
            reach = wider.max(least);
        }
    }

    /// A centroid's probe key, as the search computes it.
    fn probe_key(&self, query: &[f32], centroid: &[f32]) -> f32 {
        let mut key = [0f32];
        probe_keys(&self.kernels, self.metric, query, centroid, &mut key);
        key[0]
    }
}
