//! What a seal spends training its own centroids: k-means (`KMeans::train`, the partition
//! count and seed a seal uses) against the whole segment build (`NewSegment`, IVF-RaBitQ
//! defaults, into memory), for seals of 200,000 points (`shoal serve`'s default `--seal-rows`)
//! and 1,000,000, from synthetic-1m-128 (`python3 bench/datasets.py --only synthetic-1m-128`),
//! on one thread, median of 3. It answers whether a small segment should reuse its
//! neighbours' centroids instead of training its own: reuse could save at most the k-means
//! share (the rows must still be assigned, encoded and calibrated).
//!
//! Then that reuse, measured: a 200,000-point seal beside an 800,000-point segment, built with
//! its own centroids and with the big segment's (`NewSegment::build_reusing_into`), each
//! searched alone at its calibrated defaults — build time, recall@10 against its exact top 10,
//! QPS. Twice: the seal drawn from the same distribution as the big segment (a random split),
//! and drifted (the split by a random direction: the seal's points lie where the big segment
//! has few).
//!
//! `cargo bench -p shoal-host --bench seal_phases`

use std::time::Instant;

use shoal_core::{
    AlignedBytes, Collection, CollectionConfig, IndexKind, IvfParams, Kernels, Metric, NewSegment, SearchRequest,
};
use shoal_index::ivf::default_partitions;
use shoal_index::kmeans::KMeans;
use shoal_index::{Flat, Rows};

mod common;
use common::{cache, load_gt, load_vectors, median, pass_seconds};

fn main() {
    rayon::ThreadPoolBuilder::new().num_threads(1).build_global().expect("the first use of rayon's pool");
    let (dim, base) = load_vectors(&cache().join("datasets/synthetic-1m-128/base.npy"));
    let kernels = Kernels::best();
    let params = IvfParams { bits: Some(1), ..IvfParams::default() };
    println!("{:>9} {:>7} {:>10} {:>10} {:>8}", "points", "nlist", "k-means", "build", "share");
    for n in [200_000usize, 1_000_000] {
        let rows = &base[..n * dim];
        let nlist = default_partitions(n);
        let (mut train, mut build) = (Vec::new(), Vec::new());
        for _ in 0..3 {
            let t = Instant::now();
            let c = KMeans::new(nlist, params.seed).train(
                &kernels,
                &Flat::new(rows, dim) as &dyn Rows,
                dim,
                &shoal_core::Quiet,
            );
            train.push(t.elapsed().as_secs_f64());
            assert_eq!(c.len(), nlist * dim);
            let seg = NewSegment {
                config: CollectionConfig { dim, metric: Metric::L2 },
                schema: None,
                index: IndexKind::IvfRabitq(params),
                first_id: 0,
                vectors: rows,
                payloads: None,
            };
            let t = Instant::now();
            let bytes = seg.build_into(&kernels, |len| Ok(AlignedBytes::zeroed(len))).unwrap();
            build.push(t.elapsed().as_secs_f64());
            assert!(bytes.as_slice().len() > n * dim * 4);
        }
        let (t, b) = (median(train), median(build));
        println!("{n:>9} {nlist:>7} {t:>9.2}s {b:>9.2}s {:>7.0}%", 100.0 * t / b);
    }
    let (qdim, queries) = load_vectors(&cache().join("datasets/synthetic-1m-128/queries.npy"));
    assert_eq!(qdim, dim);
    let n = base.len() / dim;
    let nq = queries.len() / dim;
    // A fixed pseudo-random direction (xorshift), and each row's projection on it.
    let mut x = 0x2545_f491_4f6c_dd1du64;
    let dir: Vec<f32> = (0..dim)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 40) as f32 / (1u64 << 24) as f32 - 0.5
        })
        .collect();
    let proj = |r: usize| base[r * dim..(r + 1) * dim].iter().zip(&dir).map(|(a, b)| a * b).sum::<f32>();
    let mut by_proj: Vec<usize> = (0..n).collect();
    by_proj.sort_by(|&a, &b| proj(a).total_cmp(&proj(b)).then(a.cmp(&b)));
    println!();
    println!("a 200,000-point seal beside an 800,000-point segment, searched alone at its defaults:");
    println!(
        "{:>8} {:>16} {:>7} {:>8} {:>16} {:>12}",
        "split", "centroids", "nlist", "build", "set recall@10", "seal's QPS"
    );
    for (split, order) in [("random", (0..n).collect::<Vec<_>>()), ("drifted", by_proj)] {
        let gather =
            |rows: &[usize]| rows.iter().flat_map(|&r| &base[r * dim..(r + 1) * dim]).copied().collect::<Vec<f32>>();
        let (big, small): (&'static [f32], &'static [f32]) =
            (gather(&order[..800_000]).leak(), gather(&order[800_000..]).leak());
        let seg = |v: &'static [f32]| NewSegment {
            config: CollectionConfig { dim, metric: Metric::L2 },
            schema: None,
            index: IndexKind::IvfRabitq(params),
            first_id: 0,
            vectors: v,
            payloads: None,
        };
        let big =
            Collection::from_bytes(seg(big).build_into(&kernels, |l| Ok(AlignedBytes::zeroed(l))).unwrap().as_slice())
                .unwrap();
        let centroids = big.segment(0).unwrap().ivf().unwrap().1.centroids.to_vec();
        let big_ids = |id: u64| order[id as usize];
        let gt = load_gt(&cache().join("datasets/synthetic-1m-128/gt.npy"), nq, 100);
        let big_results: Vec<Vec<(f32, usize)>> = queries
            .chunks_exact(dim)
            .map(|q| {
                let r = big.search(&SearchRequest::nearest(q.to_vec(), 10)).unwrap();
                r.points.iter().map(|p| (p.score, big_ids(p.id.as_num().expect("integer ids")))).collect()
            })
            .collect();
        let big_nlist = centroids.len() / dim;
        for variant in ["own", "own, big's nlist", "reused"] {
            let mut times = Vec::new();
            let mut bytes = None;
            for _ in 0..3 {
                let t = Instant::now();
                let alloc = |l| Ok(AlignedBytes::zeroed(l));
                let b = match variant {
                    "reused" => seg(small).build_reusing_into(&kernels, &centroids, alloc),
                    "own" => seg(small).build_into(&kernels, alloc),
                    _ => {
                        let p = IvfParams { partitions: Some(big_nlist), ..params };
                        NewSegment { index: IndexKind::IvfRabitq(p), ..seg(small) }.build_into(&kernels, alloc)
                    }
                }
                .unwrap();
                times.push(t.elapsed().as_secs_f64());
                bytes = Some(b);
            }
            let col = Collection::from_bytes(bytes.unwrap().as_slice()).unwrap();
            let nlist = col.segment(0).unwrap().ivf().unwrap().0.nlist;
            let reqs: Vec<SearchRequest> =
                queries.chunks_exact(dim).map(|q| SearchRequest::nearest(q.to_vec(), 10)).collect();
            let mut out = Vec::new();
            let mut hits = 0;
            // The two segments' top 10s merged (as a set's search merges them), against the
            // exact top 10 of all 1M points.
            for (q, r) in reqs.iter().enumerate() {
                col.search_into(r, &mut out).unwrap();
                let mut both = big_results[q].clone();
                both.extend(
                    out.iter().map(|p| (p.score, order[800_000 + p.id.as_num().expect("integer ids") as usize])),
                );
                both.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
                let truth = &gt[q * 100..q * 100 + 10];
                hits += both.iter().take(10).filter(|(_, row)| truth.contains(&(*row as u32))).count();
            }
            let recall = hits as f64 / (10 * reqs.len()) as f64;
            let qps = reqs.len() as f64 / median(pass_seconds(&col, &reqs, &mut out, 3));
            println!("{split:>8} {variant:>16} {nlist:>7} {:>7.2}s {recall:>16.4} {qps:>12.0}", median(times));
        }
    }
}
