//! Deterministic k-means: seeded sample, seeded initial centres, Lloyd iterations in a fixed
//! order with f64 sums, empty clusters refilled by splitting the largest one. The same input
//! and seed give the same centroids, bit for bit, on every target.

use alloc::vec;
use alloc::vec::Vec;
use shoal_kernels::Kernels;

use crate::progress::Progress;
use crate::rng::Rng;
use crate::{Flat, Rows};

/// k-means settings.
#[derive(Clone, Copy, Debug)]
pub struct KMeans {
    /// Number of centroids.
    pub k: usize,
    /// Lloyd iterations.
    pub iterations: usize,
    /// Training points per centroid (the sample is `k * per_centroid` points at most).
    pub per_centroid: usize,
    /// Points per centroid that the k-means++ seeding draws from (a random part of the
    /// sample): `k` passes over at most `k * seed_per_centroid` points, small enough to stay
    /// in cache where the whole sample would stream from memory `k` times.
    pub seed_per_centroid: usize,
    /// Seed of the sample and the initial centres.
    pub seed: u64,
}

impl KMeans {
    /// Default settings for `k` centroids.
    pub fn new(k: usize, seed: u64) -> KMeans {
        KMeans { k, iterations: 10, per_centroid: 64, seed_per_centroid: 16, seed }
    }

    /// Trains on `data` (`dim` floats per row); returns `k * dim` centroid floats. `k` is
    /// capped at the number of rows. Only the sample is read from `data` (once, in row order).
    /// Reports the phase "k-means", one unit per iteration.
    pub fn train(&self, kernels: &Kernels, data: &dyn Rows, dim: usize, progress: &dyn Progress) -> Vec<f32> {
        let n = data.len();
        let k = self.k.clamp(1, n.max(1));
        if n == 0 {
            return vec![0.0; dim];
        }
        let mut rng = Rng::new(self.seed);
        // Seeded sample without replacement (partial Fisher-Yates), kept in ascending order
        // so the sums below run in row order.
        let m = n.min(k.saturating_mul(self.per_centroid));
        let mut idx: Vec<u32> = (0..n as u32).collect();
        for i in 0..m {
            let j = i + rng.below(n - i);
            idx.swap(i, j);
        }
        let mut sample_rows: Vec<u32> = idx[..m].to_vec();
        // The seeding's points: the first draws (a uniform random part of the sample).
        let mut seed_rows: Vec<u32> = idx[..m.min(k.saturating_mul(self.seed_per_centroid))].to_vec();
        drop(idx);
        shoal_format::sort_u32(&mut sample_rows);
        shoal_format::sort_u32(&mut seed_rows);
        // The sample, contiguous: every pass below streams it in row order.
        let sample: Vec<f32> = sample_rows.iter().flat_map(|&r| data.row(r as usize)).copied().collect();
        let seeds: Vec<f32> = seed_rows.iter().flat_map(|&r| data.row(r as usize)).copied().collect();
        drop((sample_rows, seed_rows));
        let data = &sample[..];
        progress.phase("k-means", self.iterations as u64);
        let mut centroids = plus_plus(kernels, &seeds, dim, k, &mut rng);
        drop(seeds);
        let mut assign = vec![0u32; m];
        let mut sums = vec![0f64; k * dim];
        let mut counts = vec![0usize; k];
        for _ in 0..self.iterations {
            crate::kmeans::assign(
                kernels,
                &Flat::new(data, dim),
                dim,
                &centroids,
                &mut assign,
                &crate::progress::Quiet,
            );
            // Each centroid's sum adds its rows in row order; one task per range of centroids.
            let per_task = k.div_ceil(64).max(1);
            let task_counts = crate::par::chunks_mut_map(&mut sums, per_task * dim, |t, sums| {
                sums.fill(0.0);
                let first = t * per_task;
                let mut counts = vec![0usize; sums.len() / dim];
                for (r, &a) in assign.iter().enumerate() {
                    let Some(c) = (a as usize).checked_sub(first).filter(|&c| c < counts.len()) else { continue };
                    counts[c] += 1;
                    for (s, &x) in sums[c * dim..(c + 1) * dim].iter_mut().zip(row(data, dim, r)) {
                        *s += x as f64;
                    }
                }
                counts
            });
            for (c, n) in counts.iter_mut().zip(task_counts.into_iter().flatten()) {
                *c = n;
            }
            for c in 0..k {
                if counts[c] > 0 {
                    let inv = 1.0 / counts[c] as f64;
                    for (o, s) in centroids[c * dim..(c + 1) * dim].iter_mut().zip(&sums[c * dim..]) {
                        *o = (*s * inv) as f32;
                    }
                }
            }
            split_empty(&mut centroids, &mut counts, dim);
            progress.add(1);
        }
        centroids
    }
}

/// k-means++ seeding over the sample: each next centre is a sample point drawn with probability
/// proportional to its squared distance to the nearest centre so far. The sample is cut into
/// chunks of [`SEED_CHUNK`] rows: each chunk's distances, minima and f64 sum (in row order) are
/// one task, the chunk sums add up in chunk order, and the draw walks the chunks then the rows
/// of one — the same arithmetic on every target and with any number of threads.
fn plus_plus(kernels: &Kernels, sample: &[f32], dim: usize, k: usize, rng: &mut Rng) -> Vec<f32> {
    let m = sample.len() / dim;
    let mut centroids = Vec::with_capacity(k * dim);
    centroids.extend_from_slice(row(sample, dim, rng.below(m)));
    let mut best = vec![f32::INFINITY; m];
    for c in 1..k {
        let last = &centroids[(c - 1) * dim..c * dim];
        let sums: Vec<f64> = crate::par::chunks_mut_map(&mut best, SEED_CHUNK, |i, best| {
            let mut d = [0f32; SEED_CHUNK];
            let d = &mut d[..best.len()];
            kernels.l2_sq_batch(last, &sample[i * SEED_CHUNK * dim..][..best.len() * dim], d);
            let mut sum = 0f64;
            for (b, &x) in best.iter_mut().zip(d.iter()) {
                *b = b.min(x);
                sum += *b as f64;
            }
            sum
        });
        let total: f64 = sums.iter().sum();
        let pick = if total > 0.0 {
            let target = (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64 * total;
            let mut acc = 0f64;
            let mut pick = m - 1;
            'chunks: for (i, &s) in sums.iter().enumerate() {
                if acc + s <= target {
                    acc += s;
                    continue;
                }
                for (j, &b) in best[i * SEED_CHUNK..(i * SEED_CHUNK + SEED_CHUNK).min(m)].iter().enumerate() {
                    acc += b as f64;
                    if acc > target {
                        pick = i * SEED_CHUNK + j;
                        break 'chunks;
                    }
                }
            }
            pick
        } else {
            rng.below(m)
        };
        let next = row(sample, dim, pick).to_vec();
        centroids.extend_from_slice(&next);
    }
    centroids
}

/// Sample rows per task of the k-means++ seeding.
const SEED_CHUNK: usize = 2048;

fn row(data: &[f32], dim: usize, r: usize) -> &[f32] {
    &data[r * dim..(r + 1) * dim]
}

/// Rows per block and centroids per tile of [`assign`]: a tile (at most 256 x `dim` floats)
/// stays in cache while a block of rows is compared with it.
const ROW_BLOCK: usize = 64;
const CENTROID_TILE: usize = 256;

/// `out[i]` = index of the centroid nearest to row `i` of `data`, exactly as [`nearest`] would
/// give it (the same kernel per pair, the first minimum in index order), but tiled so the
/// centroids are read from cache rather than memory. Adds each row to `progress` as done.
pub fn assign(
    kernels: &Kernels,
    data: &dyn Rows,
    dim: usize,
    centroids: &[f32],
    out: &mut [u32],
    progress: &dyn Progress,
) {
    debug_assert_eq!(data.len(), out.len());
    // Each task assigns its own rows: the same answers with any number of threads.
    crate::par::chunks_mut(out, ASSIGN_CHUNK, |i, out| {
        assign_rows(kernels, data, dim, i * ASSIGN_CHUNK, centroids, out);
        progress.add(out.len() as u64);
    });
}

/// Rows per parallel task of [`assign`].
const ASSIGN_CHUNK: usize = 4096;

fn assign_rows(kernels: &Kernels, data: &dyn Rows, dim: usize, first: usize, centroids: &[f32], out: &mut [u32]) {
    let k = centroids.len() / dim.max(1);
    let mut best = [(0f32, 0u32); ROW_BLOCK];
    let mut dists = [0f32; CENTROID_TILE];
    for (b0, out) in out.chunks_mut(ROW_BLOCK).enumerate() {
        let block = first + b0 * ROW_BLOCK..first + b0 * ROW_BLOCK + out.len();
        for t0 in (0..k).step_by(CENTROID_TILE) {
            let t1 = (t0 + CENTROID_TILE).min(k);
            let tile = &centroids[t0 * dim..t1 * dim];
            for (b, r) in best.iter_mut().zip(block.clone()) {
                let d = &mut dists[..t1 - t0];
                kernels.l2_sq_batch(data.row(r), tile, d);
                let start = if t0 == 0 {
                    *b = (d[0], 0);
                    1
                } else {
                    0
                };
                for (i, &x) in d.iter().enumerate().skip(start) {
                    if x.total_cmp(&b.0).is_lt() {
                        *b = (x, (t0 + i) as u32);
                    }
                }
            }
        }
        for (o, b) in out.iter_mut().zip(&best) {
            *o = b.1;
        }
    }
}

/// Index of the centroid nearest to `x` (squared L2, ties to the lower index).
pub fn nearest(kernels: &Kernels, x: &[f32], centroids: &[f32], dists: &mut [f32]) -> usize {
    kernels.l2_sq_batch(x, centroids, dists);
    let mut best = 0;
    for (i, &d) in dists.iter().enumerate() {
        if d.total_cmp(&dists[best]).is_lt() {
            best = i;
        }
    }
    best
}

/// Gives every empty cluster half of the largest cluster: both centres move apart by a relative
/// 1/1024 (FAISS's rule), so the next assignment splits the large cluster's points.
fn split_empty(centroids: &mut [f32], counts: &mut [usize], dim: usize) {
    const EPS: f32 = 1.0 / 1024.0;
    for empty in 0..counts.len() {
        if counts[empty] > 0 {
            continue;
        }
        let big = (0..counts.len()).fold(0, |b, i| if counts[i] > counts[b] { i } else { b });
        if counts[big] < 2 {
            return;
        }
        for d in 0..dim {
            let sign = if d % 2 == 0 { 1.0 } else { -1.0 };
            let c = centroids[big * dim + d];
            centroids[empty * dim + d] = c * (1.0 + sign * EPS);
            centroids[big * dim + d] = c * (1.0 - sign * EPS);
        }
        let half = counts[big] / 2;
        counts[empty] = half;
        counts[big] -= half;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::progress::Quiet;

    fn blobs(n: usize, dim: usize, centers: usize, seed: u64) -> Vec<f32> {
        let mut rng = Rng::new(seed);
        let c: Vec<f32> = (0..centers * dim).map(|_| rng.below(2000) as f32 / 100.0).collect();
        (0..n * dim).map(|i| c[(i / dim) % centers * dim + i % dim] + rng.below(100) as f32 / 1000.0).collect()
    }

    #[test]
    fn deterministic_and_finds_separated_blobs() {
        let k = Kernels::best();
        let data = blobs(2000, 8, 10, 5);
        let a = KMeans::new(10, 9).train(&k, &Flat::new(&data, 8), 8, &Quiet);
        let b = KMeans::new(10, 9).train(&Kernels::scalar(), &Flat::new(&data, 8), 8, &Quiet);
        assert_eq!(
            a.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
            b.iter().map(|x| x.to_bits()).collect::<Vec<_>>()
        );
        // Every point is close to its centre: the blobs were found.
        let mut dists = vec![0.0; 10];
        for x in data.chunks_exact(8) {
            let c = nearest(&k, x, &a, &mut dists);
            assert!(dists[c] < 0.1, "distance {}", dists[c]);
        }
    }

    #[test]
    fn tiled_assignment_equals_nearest() {
        let k = Kernels::best();
        for (n, dim, c) in [(1000usize, 8usize, 300usize), (130, 33, 257), (5, 4, 1), (70, 16, 512)] {
            let data = blobs(n, dim, 10, n as u64);
            let centroids = blobs(c, dim, 7, c as u64);
            let mut out = vec![0u32; n];
            assign(&k, &Flat::new(&data, dim), dim, &centroids, &mut out, &Quiet);
            let mut dists = vec![0f32; c];
            for (r, &o) in out.iter().enumerate() {
                assert_eq!(o as usize, nearest(&k, row(&data, dim, r), &centroids, &mut dists));
            }
        }
    }

    #[test]
    fn small_inputs() {
        let k = Kernels::scalar();
        assert_eq!(KMeans::new(5, 1).train(&k, &Flat::new(&[1.0, 2.0], 2), 2, &Quiet), [1.0, 2.0]);
        assert_eq!(KMeans::new(5, 1).train(&k, &Flat::new(&[], 2), 2, &Quiet), [0.0, 0.0]);
    }
}
