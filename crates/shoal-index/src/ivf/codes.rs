//! Coded centroids (`docs/format.md`, "IVF + RaBitQ, v2", `IVF_CENTROID_CODES`): when an
//! index's centroids are too many to read at open, a reader keeps each one as 8-bit codes with
//! the exact distance from the decoded point to the centroid (its *radius*), and fetches a
//! centroid only when a query can probe its partition.
//!
//! A partition's probe key (what a search computes with the f32 kernels) is bounded from the
//! query's distance to the decoded point and the radius, with room for the kernels' rounding;
//! a reader fetches the centroids whose bounds say they may be among those it probes
//! ([`CentroidCodes::reach`], [`CentroidCodes::below`]), and proves it has them all by
//! comparing the exact keys it computed with the bounds of those it left out
//! ([`CentroidCodes::left_out`]).

use alloc::vec::Vec;

use shoal_format::{FormatError, crc32c};

use crate::Metric;
use crate::order::{f32_key, f32_of};

/// `IVF_CENTROID_CODES`: the coded centroids of a format-2 index whose centroids are cold.
pub const KIND_IVF_CENTROID_CODES: u32 = 71;

/// Bytes of a partition's record.
const RECORD: usize = 16;

/// Levels of a code.
const LEVELS: f64 = 255.0;

/// An index's coded centroids, checked.
#[derive(Clone, Debug)]
pub struct CentroidCodes {
    dim: usize,
    /// Per partition: the lowest level and the step between levels.
    scale: Vec<[f32; 2]>,
    radius: Vec<f32>,
    crcs: Vec<u32>,
    codes: Vec<u8>,
}

fn bad(reason: &'static str) -> FormatError {
    FormatError::BadSection { section: "IVF_CENTROID_CODES", reason }
}

/// The relative room left for the f32 kernels' rounding of a `dim`-term key: twice the
/// classic bound `(dim + 2) · 2⁻²³` of a sum of products, and then some.
fn slack(dim: usize) -> f64 {
    (dim as f64 + 8.0) / (1u64 << 22) as f64
}

/// `x` rounded up to an f32.
fn f32_up(x: f64) -> f32 {
    let r = x as f32;
    if f64::from(r) < x { r.next_up() } else { r }
}

/// `x²`.
#[inline]
fn sq(x: f64) -> f64 {
    x * x
}

/// The decoded coordinate of `code` under `[lo, step]`.
#[inline]
fn decode([lo, step]: [f32; 2], code: u8) -> f64 {
    f64::from(lo) + f64::from(step) * f64::from(code)
}

/// The distance from `centroid` to the point `codes` decode to under `scale`, in f64.
fn radius(centroid: impl Iterator<Item = f32>, codes: &[u8], scale: [f32; 2]) -> f64 {
    libm::sqrt(centroid.zip(codes).map(|(x, &q)| sq(f64::from(x) - decode(scale, q))).sum())
}

/// `IVF_CENTROID_CODES` for `centroids` (`nlist x dim`, in the format-2 order).
pub fn lay_out_centroid_codes(centroids: &[f32], dim: usize) -> Vec<u8> {
    let nlist = centroids.len() / dim.max(1);
    let mut records = Vec::with_capacity(8 + nlist * RECORD);
    records.extend_from_slice(&(nlist as u32).to_le_bytes());
    records.extend_from_slice(&0u32.to_le_bytes());
    let mut codes = Vec::with_capacity(nlist * dim);
    for c in centroids.chunks_exact(dim) {
        let lo = c.iter().copied().fold(f32::INFINITY, f32::min);
        let hi = c.iter().copied().fold(f32::NEG_INFINITY, f32::max);
        let step = ((f64::from(hi) - f64::from(lo)) / LEVELS) as f32;
        let scale = [lo, step];
        let start = codes.len();
        codes.extend(c.iter().map(|&x| {
            if step > 0.0 {
                libm::round((f64::from(x) - f64::from(lo)) / f64::from(step)).clamp(0.0, LEVELS) as u8
            } else {
                0
            }
        }));
        let radius = radius(c.iter().copied(), &codes[start..], scale);
        records.extend_from_slice(&lo.to_le_bytes());
        records.extend_from_slice(&step.to_le_bytes());
        records.extend_from_slice(&f32_up(radius).to_le_bytes());
        records.extend_from_slice(&crc32c(bytemuck::cast_slice(c)).to_le_bytes());
    }
    records.extend_from_slice(&codes);
    records
}

impl CentroidCodes {
    /// Opens `IVF_CENTROID_CODES` (checked against its table CRC) of an index of `nlist`
    /// partitions of dimension `dim`: finite scales and radii.
    pub fn open(bytes: &[u8], nlist: usize, dim: usize) -> Result<CentroidCodes, FormatError> {
        let word = |at: usize| bytes.get(at..at + 4).map(|w| u32::from_le_bytes(w.try_into().expect("4 bytes")));
        if word(0) != Some(nlist as u32) || word(4) != Some(0) {
            return Err(bad("not one record per partition"));
        }
        let codes_at = nlist.checked_mul(RECORD).and_then(|n| n.checked_add(8));
        let len = codes_at.and_then(|at| nlist.checked_mul(dim).and_then(|n| n.checked_add(at)));
        let Some(codes_at) = codes_at.filter(|_| len == Some(bytes.len())) else {
            return Err(bad("length does not match nlist x dim"));
        };
        let mut c = CentroidCodes {
            dim,
            scale: Vec::with_capacity(nlist),
            radius: Vec::with_capacity(nlist),
            crcs: Vec::with_capacity(nlist),
            codes: bytes[codes_at..].to_vec(),
        };
        for p in 0..nlist {
            let f = |i: usize| f32::from_bits(word(8 + p * RECORD + 4 * i).expect("in bounds"));
            let (lo, step, radius) = (f(0), f(1), f(2));
            if !(lo.is_finite() && step >= 0.0 && step.is_finite() && radius >= 0.0 && radius.is_finite()) {
                return Err(bad("a scale or radius that is not finite"));
            }
            c.scale.push([lo, step]);
            c.radius.push(radius);
            c.crcs.push(word(8 + p * RECORD + 12).expect("in bounds"));
        }
        Ok(c)
    }

    /// The number of partitions.
    pub fn len(&self) -> usize {
        self.radius.len()
    }

    /// Whether there is no partition.
    pub fn is_empty(&self) -> bool {
        self.radius.is_empty()
    }

    /// Checks partition `p`'s centroid (its `IVF_CENTROIDS` bytes) against its CRC, and its
    /// code's radius against it: the decoded point must lie within the radius of the centroid
    /// (the distance computed as the writer computes it), or the bounds would not hold.
    pub fn check(&self, p: usize, bytes: &[u8]) -> Result<(), FormatError> {
        let actual = crc32c(bytes);
        if bytes.len() != self.dim * 4 || actual != self.crcs[p] {
            return Err(FormatError::ChecksumMismatch {
                what: "IVF_CENTROIDS",
                kind: shoal_format::KIND_IVF_CENTROIDS,
                stored: self.crcs[p],
                actual,
            });
        }
        let (scale, codes) = (self.scale[p], &self.codes[p * self.dim..(p + 1) * self.dim]);
        let centroid = bytes.chunks_exact(4).map(|w| f32::from_le_bytes([w[0], w[1], w[2], w[3]]));
        let distance = radius(centroid, codes, scale);
        if distance.is_nan() || distance > f64::from(self.radius[p]) {
            return Err(bad("a radius smaller than its centroid's distance from its code"));
        }
        Ok(())
    }

    /// Each partition's `[lower, upper]` bound on its probe key for `query` (prepared:
    /// normalized for cosine) under `metric`, as a search computes it with any of the
    /// kernels: squared l2 (cosine too), or minus the inner product.
    pub fn bounds(&self, metric: Metric, query: &[f32]) -> Vec<[f64; 2]> {
        let dim = self.dim;
        let delta = slack(dim);
        let qn = libm::sqrt(query.iter().map(|&x| f64::from(x) * f64::from(x)).sum());
        // Underflow: a square or a product in the subnormals rounds with an absolute error (up
        // to half the least subnormal each); twice that per term.
        let tiny = (dim as f64 + 8.0) * f64::from(f32::from_bits(1));
        let mut out = Vec::with_capacity(self.len());
        for (p, &radius) in self.radius.iter().enumerate() {
            let (scale, codes) = (self.scale[p], &self.codes[p * dim..(p + 1) * dim]);
            let r = f64::from(radius);
            let [lo, hi] = match metric {
                Metric::L2 | Metric::Cosine => {
                    let sq: f64 = query.iter().zip(codes).map(|(&q, &c)| sq(f64::from(q) - decode(scale, c))).sum();
                    let d = libm::sqrt(sq);
                    let near = (d * (1.0 - 1e-12) - r).max(0.0);
                    [near * near * (1.0 - delta) - tiny, (d + r) * (d + r) * (1.0 + delta) + tiny]
                }
                Metric::Dot => {
                    let ip: f64 = query.iter().zip(codes).map(|(&q, &c)| f64::from(q) * decode(scale, c)).sum();
                    let norm = libm::sqrt(codes.iter().map(|&c| sq(decode(scale, c))).sum());
                    // `reach` bounds every partial sum of the products' magnitudes.
                    let reach = qn * (norm + r);
                    let room = qn * r + delta * reach + 1e-12 * (ip.abs() + reach) + tiny;
                    if reach * (1.0 + delta) >= 1e37 {
                        [f64::NEG_INFINITY, f64::INFINITY]
                    } else {
                        [-ip - room, -ip + room]
                    }
                }
            };
            // Keys this large may overflow an f32 sum on the way (l2's terms are at most the
            // key): no bound then.
            let sane = lo.abs() < 1e37 && hi.abs() < 1e37;
            out.push(if sane { [lo, hi] } else { [f64::NEG_INFINITY, f64::INFINITY] });
        }
        out
    }

    /// The upper bound at which, taking partitions by upper bound (rounded up to an f32), `take`
    /// — called with each in turn — first says it has enough (`+inf` if it never does): the key
    /// below which, by their bounds, the partitions it took lie.
    pub fn reach(bounds: &[[f64; 2]], take: &mut dyn FnMut(usize) -> bool) -> f64 {
        // (Sorted as integers, with the partition: the routine the index already has, not one
        // more copy in wasm.)
        let mut upper: Vec<u64> =
            bounds.iter().enumerate().map(|(p, b)| u64::from(f32_key(f32_up(b[1]))) << 32 | p as u64).collect();
        shoal_format::sort_u64(&mut upper);
        for key in upper {
            if take(key as u32 as usize) {
                return f64::from(f32_of((key >> 32) as u32));
            }
        }
        f64::INFINITY
    }

    /// The partitions whose lower bound is at most `key`, ascending.
    pub fn below(bounds: &[[f64; 2]], key: f64) -> Vec<usize> {
        (0..bounds.len()).filter(|&p| bounds[p][0].total_cmp(&key).is_le()).collect()
    }

    /// The smallest lower bound of a partition not among `members` (ascending; `+inf` if every
    /// one is): a partition of a smaller probe key precedes every partition left out.
    pub fn left_out(bounds: &[[f64; 2]], members: &[usize]) -> f64 {
        let mut next = members.iter().peekable();
        let mut least = f64::INFINITY;
        for (p, b) in bounds.iter().enumerate() {
            if next.next_if(|&&m| m == p).is_none() {
                least = least.min(b[0]);
            }
        }
        least
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;
    use alloc::vec;
    use shoal_kernels::Kernels;

    /// Centroids in clusters, at a scale, `nlist x dim`.
    fn centroids(rng: &mut Rng, nlist: usize, dim: usize, scale: f32) -> Vec<f32> {
        let centres: Vec<f32> = (0..8 * dim).map(|_| (rng.next_u64() % 2001) as f32 / 1000.0 - 1.0).collect();
        (0..nlist * dim)
            .map(|i| {
                let c = (i / dim) % 8;
                let noise = ((rng.next_u64() % 2001) as f32 / 1000.0 - 1.0) * 0.3;
                (centres[c * dim + i % dim] + noise) * scale
            })
            .collect()
    }

    /// The probe keys of every centroid, as a search computes them with `k`.
    fn keys(k: &Kernels, metric: Metric, q: &[f32], c: &[f32]) -> Vec<f32> {
        let mut keys = vec![0f32; c.len() / q.len()];
        crate::ivf::probe_keys(k, metric, q, c, &mut keys);
        keys
    }

    #[test]
    fn every_key_lies_within_its_bounds_under_every_kernel() {
        let mut rng = Rng::new(11);
        let kernels = [Kernels::scalar(), Kernels::best()];
        // Scales from subnormal squares (1e-21: products near 1e-42) to sums that overflow an
        // f32 on the way (1e19 at 64 dimensions).
        let cases = [
            (1, 30, 1.0f32),
            (9, 200, 1e-3),
            (64, 150, 1.0),
            (300, 120, 40.0),
            (1536, 40, 1.0),
            (7, 20, 0.0),
            (16, 60, 1e-21),
            (16, 60, 1e-23),
            (64, 40, 1e19),
        ];
        for (dim, nlist, scale) in cases {
            let c = centroids(&mut rng, nlist, dim, scale);
            let codes = CentroidCodes::open(&lay_out_centroid_codes(&c, dim), nlist, dim).unwrap();
            for p in 0..nlist {
                codes.check(p, bytemuck::cast_slice(&c[p * dim..(p + 1) * dim])).unwrap();
            }
            for qi in 0..20 {
                // Queries near the centroids, far from them, at their scale or not.
                let far = if qi % 3 == 0 { 10.0 } else { 1.0 };
                let q: Vec<f32> = (0..dim)
                    .map(|i| {
                        c[(qi * 7 % nlist) * dim + i] * far + ((rng.next_u64() % 101) as f32 - 50.0) / 500.0 * scale
                    })
                    .collect();
                for metric in [Metric::L2, Metric::Cosine, Metric::Dot] {
                    let bounds = codes.bounds(metric, &q);
                    for k in &kernels {
                        for (p, (b, key)) in bounds.iter().zip(keys(k, metric, &q, &c)).enumerate() {
                            // (A NaN key probes as +inf.)
                            let key = if key.is_nan() { f64::INFINITY } else { f64::from(key) };
                            assert!(b[0] <= key && key <= b[1], "dim {dim} {metric:?} partition {p}: {b:?} {key}");
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn dot_bounds_give_up_where_partial_sums_overflow() {
        // Products of 1e38 whose sum is 0: a lane's partial sum overflows to inf (the key is
        // -inf or NaN, probed as +inf), though the inner product is small.
        let dim = 64;
        let c: Vec<f32> = (0..2 * dim).map(|i| if i < dim { 1e19 } else { -1e19 }).collect();
        let q: Vec<f32> = (0..dim).map(|i| if (i / 8) % 2 == 0 { 1e19 } else { -1e19 }).collect();
        let codes = CentroidCodes::open(&lay_out_centroid_codes(&c, dim), 2, dim).unwrap();
        let bounds = codes.bounds(Metric::Dot, &q);
        for k in [Kernels::scalar(), Kernels::best()] {
            for (b, key) in bounds.iter().zip(keys(&k, Metric::Dot, &q, &c)) {
                let key = if key.is_nan() { f64::INFINITY } else { f64::from(key) };
                assert!(b[0] <= key && key <= b[1], "{b:?} {key}");
            }
        }
    }

    #[test]
    fn the_bounds_are_tight_enough_to_fetch_few_centroids() {
        let mut rng = Rng::new(2);
        let (dim, nlist) = (48, 2000);
        let c = centroids(&mut rng, nlist, dim, 1.0);
        let codes = CentroidCodes::open(&lay_out_centroid_codes(&c, dim), nlist, dim).unwrap();
        for qi in 0..10 {
            let q = &c[qi * 31 * dim..(qi * 31 + 1) * dim];
            let bounds = codes.bounds(Metric::L2, q);
            let mut n = 0;
            let members = CentroidCodes::below(
                &bounds,
                CentroidCodes::reach(&bounds, &mut |_| {
                    n += 1;
                    n == 21
                }),
            );
            assert!(members.len() > 20 && members.len() < 60, "query {qi}: {} for 20", members.len());
            // The 20 nearest are among them, and the 20th precedes every one left out.
            let keys = keys(&Kernels::scalar(), Metric::L2, q, &c);
            let mut order: Vec<usize> = (0..nlist).collect();
            order.sort_by(|&a, &b| keys[a].total_cmp(&keys[b]).then(a.cmp(&b)));
            assert!(order[..20].iter().all(|p| members.contains(p)));
            assert!(f64::from(keys[order[19]]) < CentroidCodes::left_out(&bounds, &members));
        }
        let bounds = [[1.0, 2.0], [0.5, 3.0], [4.0, 5.0]];
        assert_eq!(CentroidCodes::left_out(&bounds, &[0, 1, 2]), f64::INFINITY, "none left out");
        assert_eq!(CentroidCodes::left_out(&bounds, &[1]), 1.0);
        let mut taken = Vec::new();
        let mut take = |p: usize| {
            taken.push(p);
            taken.len() == 2
        };
        assert_eq!(CentroidCodes::reach(&bounds, &mut take), 3.0);
        assert_eq!(taken, [0, 1], "by upper bound");
        assert_eq!(CentroidCodes::reach(&bounds, &mut |_| false), f64::INFINITY, "never enough");
        assert_eq!(CentroidCodes::below(&bounds, 1.0), [0, 1]);
    }

    #[test]
    fn malformed_codes_are_refused() {
        let (dim, nlist) = (4, 10);
        let c: Vec<f32> = (0..nlist * dim).map(|i| i as f32).collect();
        let good = lay_out_centroid_codes(&c, dim);
        assert!(CentroidCodes::open(&good, nlist, dim).is_ok());
        assert!(CentroidCodes::open(&good, nlist + 1, dim).is_err(), "another count");
        assert!(CentroidCodes::open(&good[..good.len() - 1], nlist, dim).is_err(), "short");
        assert!(CentroidCodes::open(&good[..3], nlist, dim).is_err(), "no header");
        for (at, v) in [(8 + 4, f32::NAN), (8 + 4, -1.0), (8 + 8, f32::INFINITY), (8, f32::NEG_INFINITY)] {
            let mut b = good.clone();
            b[at..at + 4].copy_from_slice(&v.to_le_bytes());
            assert!(CentroidCodes::open(&b, nlist, dim).is_err(), "{v} at {at}");
        }
        let mut b = good.clone();
        b[4] = 1;
        assert!(CentroidCodes::open(&b, nlist, dim).is_err(), "a reserved word set");
        // A radius smaller than the truth (a writer's bug, CRCs intact) is caught when the
        // centroid is checked: the bounds would not hold.
        let c: Vec<f32> = (0..nlist * dim).map(|i| (i * i % 97) as f32 * 0.013).collect();
        let good = lay_out_centroid_codes(&c, dim);
        let centroid = |p: usize| bytemuck::cast_slice::<f32, u8>(&c[p * dim..(p + 1) * dim]).to_vec();
        let codes = CentroidCodes::open(&good, nlist, dim).unwrap();
        assert!((0..nlist).all(|p| codes.check(p, &centroid(p)).is_ok()));
        let p = 3;
        assert!(codes.radius[p] > 0.0);
        let mut b = good;
        b[8 + p * RECORD + 8..8 + p * RECORD + 12].copy_from_slice(&0f32.to_le_bytes());
        let codes = CentroidCodes::open(&b, nlist, dim).unwrap();
        assert!(matches!(codes.check(p, &centroid(p)), Err(FormatError::BadSection { .. })), "radius 0");
        let mut other = centroid(p);
        other[0] ^= 1;
        assert!(matches!(codes.check(p, &other), Err(FormatError::ChecksumMismatch { .. })), "a flipped byte");
    }
}
