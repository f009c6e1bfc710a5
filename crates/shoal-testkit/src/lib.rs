//! Test support shared by every test suite: a seeded RNG, data generators, a brute-force
//! oracle, the cross-target conformance scenario and the golden-file inputs.
//!
//! Everything here is deterministic: the same seed gives the same data on every target, which
//! is what lets the native, wasmtime and Node runs of the conformance scenario be compared bit
//! for bit.

pub mod counting;
pub mod oracle;
pub mod scenario;
pub mod variants;

/// The index's seeded SplitMix64 (identical on every target), with test-data helpers on top.
#[derive(Clone, Debug)]
pub struct Rng(shoal_index::rng::Rng);

impl Rng {
    /// A generator from a seed.
    pub fn new(seed: u64) -> Rng {
        Rng(shoal_index::rng::Rng::new(seed))
    }

    /// Next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0.next_u64()
    }

    /// Uniform in `0..n` (n > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        ((self.next_u64() as u128 * n as u128) >> 64) as u64
    }

    /// Uniform in `[0, 1)` with 24 random bits (exact in f32).
    pub fn unit_f32(&mut self) -> f32 {
        (self.next_u64() >> 40) as f32 / (1u64 << 24) as f32
    }

    /// Uniform in `[-1, 1)`.
    pub fn signed_f32(&mut self) -> f32 {
        self.unit_f32() * 2.0 - 1.0
    }

    /// Standard normal (Box-Muller in f64, rounded to f32; deterministic: f64 ln/cos/sqrt are
    /// only used for test data, never compared across targets).
    pub fn normal_f32(&mut self) -> f32 {
        let u1 = ((self.next_u64() >> 11) as f64 + 1.0) / (1u64 << 53) as f64;
        let u2 = (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
        ((-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()) as f32
    }
}

/// `n * dim` floats uniform in `[-1, 1)`.
pub fn uniform_vectors(seed: u64, n: usize, dim: usize) -> Vec<f32> {
    let mut rng = Rng::new(seed);
    (0..n * dim).map(|_| rng.signed_f32()).collect()
}

/// `n * dim` floats drawn around `centers` random centres (a Gaussian mixture with a
/// per-dimension scale, so clusters are anisotropic), as real embeddings are.
pub fn clustered_vectors(seed: u64, n: usize, dim: usize, centers: usize) -> Vec<f32> {
    let mut rng = Rng::new(seed);
    let c: Vec<f32> = (0..centers * dim).map(|_| rng.normal_f32()).collect();
    let scale: Vec<f32> = (0..dim).map(|_| 0.05 + 0.3 * rng.unit_f32()).collect();
    let mut out = Vec::with_capacity(n * dim);
    for _ in 0..n {
        let k = rng.below(centers as u64) as usize;
        for d in 0..dim {
            out.push(c[k * dim + d] + scale[d] * rng.normal_f32());
        }
    }
    out
}

/// The input of the v1 golden file `tests/golden/v1-flat.shoal`: 64 points, dim 12, cosine,
/// ids `1000 + 7 * i`.
pub fn golden_v1_input() -> (usize, shoal_core::Metric, Vec<u64>, Vec<f32>) {
    let dim = 12;
    let ids = (0..64u64).map(|i| 1000 + 7 * i).collect();
    (dim, shoal_core::Metric::Cosine, ids, uniform_vectors(0x601d, 64, dim))
}

/// A fresh folder under the system temp dir (`shoal-{suite}-{pid}-{name}-{n}`), removed on
/// drop.
#[derive(Debug)]
pub struct TempDir(pub std::path::PathBuf);

impl TempDir {
    /// Creates it, empty.
    pub fn new(suite: &str, name: &str) -> TempDir {
        static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("shoal-{suite}-{}-{name}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }

    /// A path inside it.
    pub fn path(&self, name: &str) -> std::path::PathBuf {
        self.0.join(name)
    }

    /// The names of the files in it, sorted.
    pub fn files(&self) -> Vec<String> {
        let mut names: Vec<String> =
            std::fs::read_dir(&self.0).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
        names.sort();
        names
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Runs a step function of `shoal_core::remote` (an open or a search) to completion over the
/// segment file `bytes`, inserting every range it names into `cache` as a server would answer
/// it (cut where the file ends). Panics on an error or after 8 waves without an answer.
pub fn read_by_ranges<T>(
    bytes: &[u8],
    cache: &mut shoal_core::remote::RangeCache,
    mut step: impl FnMut(&shoal_core::remote::RangeCache) -> Result<shoal_core::remote::Step<T>, shoal_core::Error>,
) -> T {
    use shoal_core::remote::Step;
    for _ in 0..8 {
        match step(cache).unwrap() {
            Step::Done(t) => return t,
            Step::Fetch(ranges) => {
                for r in ranges {
                    cache.insert(r.start, &bytes[r.start as usize..(r.end as usize).min(bytes.len())]);
                }
            }
        }
    }
    panic!("no answer in 8 waves")
}

/// A collection published for reading by ranges, beside the local set of the same rows.
pub struct Published {
    /// The manifest `shoal publish` would write.
    pub manifest: shoal_core::remote::SetManifest,
    /// Each segment in format 2, in set order.
    pub files: Vec<Vec<u8>>,
    /// The same rows in the same order read whole: each segment's format-1 twin
    /// (`write_reordered_v1`), opened as a set — what a search by ranges must answer, ties
    /// included.
    pub local: shoal_core::Collection,
}

/// Lays out every sealed segment of `col` for reading by ranges, as `shoal publish` does, with
/// the local set that answers as the published one.
pub fn publish_with_twins(col: &shoal_core::Collection) -> Published {
    use shoal_core::set::{Manifest, SegmentEntry, parse_segment_name, segment_name};
    let manifest = col.checkpoint(None).manifest;
    let (mut entries, mut hints, mut files, mut twins) = (vec![], vec![], vec![], vec![]);
    for (i, e) in manifest.segments.iter().enumerate() {
        let seg = col.segment(i).unwrap();
        let (entry, hint, bytes) = shoal_core::remote::lay_out_segment(e, seg).unwrap();
        entries.push(entry);
        hints.push(hint);
        files.push(bytes.as_slice().to_vec());
        let twin = shoal_core::remote::write_reordered_v1(seg).unwrap();
        let crc = shoal_format::SegmentHead::read(twin.as_slice()).unwrap().header.table_crc;
        let (number, _) = parse_segment_name(&e.file).unwrap();
        let entry = SegmentEntry {
            file: segment_name(number, crc),
            rows: e.rows,
            bytes: twin.as_slice().len() as u64,
            table_crc: format!("{crc:08x}"),
            live: None,
        };
        twins.push((entry, twin));
    }
    let local_manifest = Manifest { segments: twins.iter().map(|(e, _)| e.clone()).collect(), ..manifest.clone() };
    let mut open = |e: &SegmentEntry| -> Result<Box<dyn shoal_core::SegmentBytes>, shoal_core::Error> {
        let (_, bytes) = twins.iter().find(|(t, _)| t.file == e.file).unwrap();
        Ok(Box::new(shoal_core::AlignedBytes::from_slice(bytes.as_slice())))
    };
    let local =
        shoal_core::Collection::open_set(&local_manifest, &mut open, &mut |_| unreachable!("no live-rows files"))
            .unwrap();
    Published { manifest: shoal_core::remote::SetManifest::published(&manifest, entries, hints), files, local }
}
