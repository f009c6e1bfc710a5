//! The cross-target conformance scenario: one deterministic sequence of inserts, upserts,
//! deletes, seals, byte round trips and searches, run natively (scalar and SIMD kernels), in
//! wasm under wasmtime (SIMD128 and scalar builds) and through the npm package in Node. Every
//! run must produce the same ids, the same f32 score bits and the same segment bytes.

use shoal_core::{Collection, CollectionConfig, IndexKind, Kernels, Metric, SearchRequest};

use crate::Rng;

/// Points as `(external id, stored vector)`, in internal-id order.
pub type Points = Vec<(u64, Vec<f32>)>;

/// One configuration of the scenario.
#[derive(Clone, Copy, Debug)]
pub struct Config {
    /// Name, used for fixture files.
    pub name: &'static str,
    /// Metric.
    pub metric: Metric,
    /// Dimension.
    pub dim: usize,
    /// Number of queries.
    pub queries: usize,
    /// Results per query.
    pub k: usize,
    /// Data seed.
    pub seed: u64,
    /// IVF partitions of the first seal (`None`: flat). With an index, searches after that seal
    /// are approximate: still identical on every target, but not comparable to the oracle.
    pub ivf_partitions: Option<u32>,
    /// Bits per coordinate of the IVF codes (1..=8).
    pub ivf_bits: u32,
}

/// The configurations every target runs: each metric, GloVe's 50-d, an odd dimension whose
/// tail splits a SIMD register, and a common embedding size.
pub const CONFIGS: [Config; 7] = [
    Config {
        name: "l2-50",
        metric: Metric::L2,
        dim: 50,
        queries: 1000,
        k: 10,
        seed: 1,
        ivf_partitions: None,
        ivf_bits: 1,
    },
    Config {
        name: "dot-131",
        metric: Metric::Dot,
        dim: 131,
        queries: 1000,
        k: 10,
        seed: 2,
        ivf_partitions: None,
        ivf_bits: 1,
    },
    Config {
        name: "cosine-384",
        metric: Metric::Cosine,
        dim: 384,
        queries: 1000,
        k: 10,
        seed: 3,
        ivf_partitions: None,
        ivf_bits: 1,
    },
    Config {
        name: "cosine-50",
        metric: Metric::Cosine,
        dim: 50,
        queries: 1000,
        k: 10,
        seed: 4,
        ivf_partitions: None,
        ivf_bits: 1,
    },
    Config {
        name: "ivf-l2-64",
        metric: Metric::L2,
        dim: 64,
        queries: 1000,
        k: 10,
        seed: 5,
        ivf_partitions: Some(16),
        ivf_bits: 3,
    },
    Config {
        name: "ivf-cosine-50",
        metric: Metric::Cosine,
        dim: 50,
        queries: 1000,
        k: 10,
        seed: 6,
        ivf_partitions: Some(24),
        ivf_bits: 1,
    },
    Config {
        name: "ivf-dot-200",
        metric: Metric::Dot,
        dim: 200,
        queries: 1000,
        k: 10,
        seed: 7,
        ivf_partitions: Some(12),
        ivf_bits: 8,
    },
];

/// The IVF seal options of a config's first seal, as the JSON every host parses.
pub fn seal_options(c: &Config) -> Option<String> {
    c.ivf_partitions
        .map(|p| format!(r#"{{"index": "ivf-rabitq", "partitions": {p}, "seed": {}, "bits": {}}}"#, c.seed, c.ivf_bits))
}

/// One step of the scenario.
#[derive(Clone, Debug)]
pub enum Op {
    /// `Collection::insert` (upsert).
    Insert {
        /// Ids.
        ids: Vec<u64>,
        /// Row-major vectors.
        vectors: Vec<f32>,
    },
    /// `Collection::delete`.
    Delete {
        /// Ids.
        ids: Vec<u64>,
    },
    /// `Collection::seal`, or `seal_with` the given JSON seal options.
    Seal(Option<String>),
    /// `to_bytes` then `from_bytes` into a new collection.
    RoundTrip,
    /// Run every query and record the results.
    Search,
}

/// A scenario: its config, its steps and its queries.
#[derive(Clone, Debug)]
pub struct Scenario {
    /// Configuration.
    pub config: Config,
    /// Steps, in order.
    pub ops: Vec<Op>,
    /// `config.queries * config.dim` floats.
    pub queries: Vec<f32>,
}

/// What a run produced.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Output {
    /// External ids of every result of every search step, in order.
    pub ids: Vec<u64>,
    /// `f32::to_bits` of every score, aligned with `ids`.
    pub score_bits: Vec<u32>,
    /// Number of results of each query of each search step.
    pub counts: Vec<u32>,
    /// The final collection's segment bytes.
    pub segment: Vec<u8>,
}

fn row(rng: &mut Rng, dim: usize, i: u64) -> Vec<f32> {
    // Mostly uniform values; some rows scaled up or down by powers of two (exact) so sums see
    // very different magnitudes, and a zero row.
    let scale = match i % 50 {
        0 => 0.0,
        7 => 1024.0,
        13 => 1.0 / 4096.0,
        _ => 1.0,
    };
    (0..dim).map(|_| rng.signed_f32() * scale).collect()
}

fn insert_op(rng: &mut Rng, dim: usize, ids: impl Iterator<Item = u64>, existing: &mut Vec<Vec<f32>>) -> Op {
    let mut all_ids = Vec::new();
    let mut vectors = Vec::new();
    for id in ids {
        // Every 9th point copies an earlier vector exactly: equal scores whose order only the
        // tie-break rule decides.
        let v = if id % 9 == 4 && !existing.is_empty() {
            existing[rng.below(existing.len() as u64) as usize].clone()
        } else {
            row(rng, dim, id)
        };
        existing.push(v.clone());
        all_ids.push(id);
        vectors.extend_from_slice(&v);
    }
    Op::Insert { ids: all_ids, vectors }
}

/// Builds the scenario of `config`.
pub fn scenario(config: Config) -> Scenario {
    let mut rng = Rng::new(config.seed);
    let dim = config.dim;
    let mut existing = Vec::new();
    let big = [1u64 << 53, (1u64 << 53) + 7, u64::MAX - 3, u64::MAX];
    // Evaluated in order: the inserts draw from `rng` one after the other.
    let ops = vec![
        insert_op(&mut rng, dim, 0..800, &mut existing),
        insert_op(&mut rng, dim, 700..1300, &mut existing), // 700..800 are upserts
        Op::Delete { ids: (0..1300).step_by(13).chain([5000, 5001]).collect() },
        Op::Search,
        Op::Seal(seal_options(&config)),
        Op::Search,
        // Upserts into the sealed segment, and ids at the edges of the u64 and f64 ranges.
        insert_op(&mut rng, dim, (1200..1600).chain(big), &mut existing),
        Op::Delete { ids: (3..1600).step_by(17).collect() },
        Op::Search,
        Op::RoundTrip,
        Op::Search,
    ];
    let mut queries = Vec::with_capacity(config.queries * dim);
    for q in 0..config.queries {
        match q % 4 {
            // A stored vector itself: its point (and its exact copies) tie at the top.
            0 => queries.extend_from_slice(&existing[rng.below(existing.len() as u64) as usize]),
            // A stored vector scaled by two (exact).
            1 => queries.extend(existing[rng.below(existing.len() as u64) as usize].iter().map(|x| x * 2.0)),
            _ => queries.extend(row(&mut rng, dim, 1 + q as u64 % 49)),
        }
    }
    Scenario { config, ops, queries }
}

/// Runs a scenario with the given kernels.
pub fn run(s: &Scenario, kernels: Kernels) -> Output {
    let c = s.config;
    let mut col = Collection::new(CollectionConfig { dim: c.dim, metric: c.metric }).expect("valid config");
    col.set_kernels(kernels);
    let mut out = Output { ids: Vec::new(), score_bits: Vec::new(), counts: Vec::new(), segment: Vec::new() };
    for op in &s.ops {
        match op {
            Op::Insert { ids, vectors } => col.insert(ids, vectors).expect("valid insert"),
            Op::Delete { ids } => {
                col.delete(ids);
            }
            Op::Seal(None) => col.seal(),
            Op::Seal(Some(json)) => col.seal_with(IndexKind::from_json(json).expect("valid seal options")),
            Op::RoundTrip => {
                let bytes = col.to_bytes().to_vec();
                col = Collection::from_bytes(&bytes).expect("round trip");
                col.set_kernels(kernels);
            }
            Op::Search => {
                for q in s.queries.chunks_exact(c.dim) {
                    let res = col.search(&SearchRequest::nearest(q.to_vec(), c.k)).expect("valid search");
                    out.counts.push(res.points.len() as u32);
                    for p in res.points {
                        out.ids.push(p.id);
                        out.score_bits.push(p.score.to_bits());
                    }
                }
            }
        }
    }
    out.segment = col.to_bytes().to_vec();
    out
}

/// The live points of a scenario after its steps, as `(id, stored vector)` in internal-id order,
/// for checking results against the oracle. Returns the points at each search step, or `None`
/// for a search that runs over an approximate index.
pub fn live_points_at_searches(s: &Scenario) -> Vec<Option<Points>> {
    let c = s.config;
    let prep = |v: &[f32]| {
        if c.metric == Metric::Cosine { crate::oracle::normalized(v) } else { v.to_vec() }
    };
    // (sealed rows, mutable rows) with deletion flags, mirroring the collection's model.
    let mut sealed: Vec<(u64, Vec<f32>)> = Vec::new();
    let mut mutable: Vec<(u64, Vec<f32>, bool)> = Vec::new();
    let mut sealed_live: Vec<bool> = Vec::new();
    let mut snapshots = Vec::new();
    let mut approximate = false;
    for op in &s.ops {
        match op {
            Op::Insert { ids, vectors } => {
                for (id, v) in ids.iter().zip(vectors.chunks_exact(c.dim)) {
                    for m in mutable.iter_mut().filter(|m| m.0 == *id) {
                        m.2 = false;
                    }
                    for (i, p) in sealed.iter().enumerate() {
                        if p.0 == *id {
                            sealed_live[i] = false;
                        }
                    }
                    mutable.push((*id, prep(v), true));
                }
            }
            Op::Delete { ids } => {
                for id in ids {
                    for m in mutable.iter_mut().filter(|m| m.0 == *id) {
                        m.2 = false;
                    }
                    for (i, p) in sealed.iter().enumerate() {
                        if p.0 == *id {
                            sealed_live[i] = false;
                        }
                    }
                }
            }
            Op::Seal(_) | Op::RoundTrip => {
                approximate |= c.ivf_partitions.is_some();
                let mut next: Vec<(u64, Vec<f32>)> =
                    sealed.iter().zip(&sealed_live).filter(|(_, l)| **l).map(|(p, _)| p.clone()).collect();
                next.extend(mutable.drain(..).filter(|m| m.2).map(|m| (m.0, m.1)));
                sealed_live = vec![true; next.len()];
                sealed = next;
            }
            Op::Search => {
                let mut live: Vec<(u64, Vec<f32>)> =
                    sealed.iter().zip(&sealed_live).filter(|(_, l)| **l).map(|(p, _)| p.clone()).collect();
                live.extend(mutable.iter().filter(|m| m.2).map(|m| (m.0, m.1.clone())));
                snapshots.push((!approximate).then_some(live));
            }
        }
    }
    snapshots
}
