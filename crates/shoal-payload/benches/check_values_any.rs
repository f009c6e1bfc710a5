//! Replays Qdrant PR #8235's micro-benchmark: `check_values_any` on random points of a
//! point → values map of 40M points (i64 values 0..=2; 100k random lookups; predicate
//! `value == 1`), for three distributions: single-value, sparse (10% empty, the rest single)
//! and multi-value (1..=5 values). The same three again with values 0..2^20 show the
//! high-cardinality layout (inline codes + rank + multi container) that the 0..=2 data never
//! reaches (3 distinct values become a value-set column). Layouts, all built from the same data
//! in this run:
//!
//! - `range+container`: Qdrant before the PR: `(start, count)` per point into a `Vec<i64>`.
//! - `inline-16B`: the PR: a 16-byte enum per point, `Single(i64)` or `Slice { start, count }`.
//! - `shoal`: Shoal's column (`shoal_payload::column`): sorted dictionary, packed inline codes,
//!   multi rows through a rank over a bitmap; the predicate gets the decoded `i64` (as Qdrant's).
//! - `shoal-codes`: the same column with the predicate compiled to dictionary codes, as the
//!   filter evaluator does (`value == 1` → `code == c`, a range → a code interval).
//!
//! Each row of the table is the median of several runs. `same ids` repeats one set of 100k ids
//! in consecutive runs of one layout after a warm-up run, as criterion's loop does in the PR
//! (so whatever the layout's touched lines and page-table entries fit in cache stays there);
//! `fresh ids` draws new ids each run; `batch+pf` checks fresh ids (unsorted) as one batch,
//! each layout prefetching what it reads `PREFETCH_AHEAD` lookups ahead — in two stages for the
//! layouts with a container (the entry `2 x PREFETCH_AHEAD` ahead, then the container slice
//! its entry names), so every layout gets its best batched form; `sorted+pf` checks a sorted
//! batch of fresh ids (the order in which a filtered IVF search meets its candidates: rows of
//! a partition are stored together, ascending), sort time excluded and reported on its own.
//!
//! `SHOAL_BENCH_POINTS` (default 40000000), `SHOAL_BENCH_QUERIES` (100000) and
//! `SHOAL_BENCH_RUNS` (9) override the sizes; `SHOAL_BENCH_ONLY=multi` runs only the
//! distributions whose name contains the string. Run with
//! `cargo bench -p shoal-payload --bench check_values_any`.

use std::hint::black_box;
use std::time::Instant;

use shoal_payload::column::{CodeSet, ColumnParts, ColumnRef, build_column};

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        ((self.next() as u128 * n as u128) >> 64) as u64
    }
}

const CHECK_VALUE: i64 = 1;

#[derive(Clone, Copy)]
enum Dist {
    Single,
    Sparse,
    Multi,
}

/// Points in CSR form: point `p` has `values[offsets[p]..offsets[p+1]]`.
struct Data {
    offsets: Vec<u32>,
    values: Vec<i64>,
}

fn generate(n: usize, dist: Dist, max_value: i64, seed: u64) -> Data {
    let mut rng = Rng(seed);
    let mut offsets = Vec::with_capacity(n + 1);
    let mut values = Vec::with_capacity(match dist {
        Dist::Multi => n * 3,
        _ => n,
    });
    offsets.push(0u32);
    for _ in 0..n {
        let count = match dist {
            Dist::Single => 1,
            Dist::Sparse => usize::from(rng.below(10) != 0),
            Dist::Multi => 1 + rng.below(5) as usize,
        };
        for _ in 0..count {
            values.push(rng.below(max_value as u64 + 1) as i64);
        }
        offsets.push(values.len() as u32);
    }
    Data { offsets, values }
}

/// Qdrant before PR #8235.
struct RangeContainer {
    ranges: Vec<(u32, u32)>,
    container: Vec<i64>,
}

impl RangeContainer {
    fn new(d: &Data) -> Self {
        let ranges = d.offsets.windows(2).map(|w| (w[0], w[1] - w[0])).collect();
        RangeContainer { ranges, container: d.values.clone() }
    }
    #[inline(always)]
    fn check_values_any(&self, p: u32, f: impl Fn(&i64) -> bool) -> bool {
        let Some(&(start, count)) = self.ranges.get(p as usize) else { return false };
        self.container[start as usize..(start + count) as usize].iter().any(f)
    }
    fn bytes(&self) -> usize {
        self.ranges.len() * 8 + self.container.len() * 8
    }
}

/// Qdrant after PR #8235: one value inline in a 16-byte entry.
#[derive(Clone, Copy)]
enum Entry {
    Single(i64),
    Slice { start: u32, count: u32 },
}

struct Inline16 {
    entries: Vec<Entry>,
    container: Vec<i64>,
}

impl Inline16 {
    fn new(d: &Data) -> Self {
        let mut entries = Vec::with_capacity(d.offsets.len() - 1);
        let mut container = Vec::new();
        for w in d.offsets.windows(2) {
            let vals = &d.values[w[0] as usize..w[1] as usize];
            if vals.len() == 1 {
                entries.push(Entry::Single(vals[0]));
            } else {
                entries.push(Entry::Slice { start: container.len() as u32, count: vals.len() as u32 });
                container.extend_from_slice(vals);
            }
        }
        Inline16 { entries, container }
    }
    #[inline(always)]
    fn check_values_any(&self, p: u32, f: impl Fn(&i64) -> bool) -> bool {
        match self.entries.get(p as usize) {
            Some(Entry::Single(v)) => f(v),
            Some(&Entry::Slice { start, count }) => {
                self.container[start as usize..(start + count) as usize].iter().any(f)
            }
            None => false,
        }
    }
    fn bytes(&self) -> usize {
        self.entries.len() * std::mem::size_of::<Entry>() + self.container.len() * 8
    }
}

/// Shoal's column with its decoded dictionary.
struct Shoal {
    col: ColumnParts,
    dict: Vec<i64>,
}

impl Shoal {
    fn new(d: &Data) -> Self {
        let mut dict = d.values.clone();
        dict.sort_unstable();
        dict.dedup();
        let idx: Vec<u32> = d.values.iter().map(|v| dict.binary_search(v).unwrap() as u32).collect();
        let (col, _postings) = build_column(dict.len() as u32, &d.offsets, &idx, &[], &[]);
        Shoal { col, dict }
    }
    /// The compiled predicate `value == v`.
    fn code_set_eq(&self, v: i64) -> CodeSet {
        let c = self.dict.binary_search(&v).map_or(0, |i| i as u32 + 2);
        self.col.as_ref().code_range(c, c + 1)
    }
}

#[inline(always)]
fn shoal_check_values_any(col: &ColumnRef<'_>, dict: &[i64], p: u32, f: impl Fn(&i64) -> bool) -> bool {
    col.any_code(p, |c| dict.get((c - 2) as usize).is_some_and(&f))
}

fn time<F: FnMut() -> usize>(mut f: F) -> (f64, usize) {
    let t = Instant::now();
    let hits = f();
    (t.elapsed().as_nanos() as f64, hits)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn env(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|s| s.parse().ok()).unwrap_or(default)
}

#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn prefetch<T>(p: *const T) {
    // SAFETY: prefetch is a hint; it never faults, whatever the address. SSE is part of the
    // x86_64 baseline.
    unsafe { core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(p.cast()) }
}
#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
fn prefetch<T>(_: *const T) {}

const PREFETCH_AHEAD: usize = 16;

fn main() {
    let n = env("SHOAL_BENCH_POINTS", 40_000_000);
    let queries = env("SHOAL_BENCH_QUERIES", 100_000);
    let runs = env("SHOAL_BENCH_RUNS", 9).max(1);
    println!(
        "check_values_any: {n} points, {queries} random lookups, median of {runs} runs, predicate value == {CHECK_VALUE}"
    );
    println!();
    println!(
        "| distribution | layout | bytes/point | same ids ns/lookup | vs range+container | fresh ids ns/lookup | vs range+container | batch+pf ns/lookup | vs range+container | sorted+pf ns/lookup | vs range+container |"
    );
    println!("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    let only = std::env::var("SHOAL_BENCH_ONLY").unwrap_or_default();
    for (name, dist, max_value) in [
        ("single, values 0..=2", Dist::Single, 2),
        ("sparse 10% empty, values 0..=2", Dist::Sparse, 2),
        ("multi 1-5, values 0..=2", Dist::Multi, 2),
        ("single, values 0..2^20", Dist::Single, (1 << 20) - 1),
        ("sparse 10% empty, values 0..2^20", Dist::Sparse, (1 << 20) - 1),
        ("multi 1-5, values 0..2^20", Dist::Multi, (1 << 20) - 1),
    ] {
        if !only.is_empty() && !name.contains(only.as_str()) {
            continue;
        }
        let data = generate(n, dist, max_value, 42);
        let rc = RangeContainer::new(&data);
        let il = Inline16::new(&data);
        let sh = Shoal::new(&data);
        drop(data);
        let col = sh.col.as_ref();
        let dict = &sh.dict[..];
        let code_set = sh.code_set_eq(CHECK_VALUE);
        let mut qrng = Rng(123);
        let same: Vec<u32> = (0..queries).map(|_| qrng.below(n as u64) as u32).collect();
        let eq = |v: &i64| *v == CHECK_VALUE;

        // [layout][mode] -> samples
        let mut samples = vec![[Vec::new(), Vec::new(), Vec::new(), Vec::new()]; 4];
        let mut hits = [[0usize; 4]; 4];
        let mut sort_ns = Vec::new();
        // `prefetched`: prefetch ahead; `two_stage`: also the container slice of the entry
        // `PREFETCH_AHEAD` ahead, whose own entry was prefetched `2 x PREFETCH_AHEAD` ahead.
        let check = |layout: usize, ids: &[u32], prefetched: bool, two_stage: bool| -> usize {
            let mut h = 0usize;
            let entry_ahead = if two_stage { 2 * PREFETCH_AHEAD } else { PREFETCH_AHEAD };
            match layout {
                0 => {
                    for (i, &p) in ids.iter().enumerate() {
                        if prefetched && let Some(&q) = ids.get(i + entry_ahead) {
                            prefetch(rc.ranges.as_ptr().wrapping_add(q as usize));
                        }
                        if two_stage && let Some(&q) = ids.get(i + PREFETCH_AHEAD) {
                            let start = rc.ranges.get(q as usize).map_or(0, |r| r.0);
                            prefetch(rc.container.as_ptr().wrapping_add(start as usize));
                        }
                        h += rc.check_values_any(black_box(p), eq) as usize;
                    }
                }
                1 => {
                    for (i, &p) in ids.iter().enumerate() {
                        if prefetched && let Some(&q) = ids.get(i + entry_ahead) {
                            prefetch(il.entries.as_ptr().wrapping_add(q as usize));
                        }
                        if two_stage
                            && let Some(&q) = ids.get(i + PREFETCH_AHEAD)
                            && let Some(&Entry::Slice { start, .. }) = il.entries.get(q as usize)
                        {
                            prefetch(il.container.as_ptr().wrapping_add(start as usize));
                        }
                        h += il.check_values_any(black_box(p), eq) as usize;
                    }
                }
                2 => {
                    for (i, &p) in ids.iter().enumerate() {
                        if prefetched && let Some(&q) = ids.get(i + PREFETCH_AHEAD) {
                            prefetch(col.slots.as_ptr().wrapping_add(q as usize * col.meta.width as usize / 64));
                        }
                        h += shoal_check_values_any(&col, dict, black_box(p), eq) as usize;
                    }
                }
                _ => {
                    for (i, &p) in ids.iter().enumerate() {
                        if prefetched && let Some(&q) = ids.get(i + PREFETCH_AHEAD) {
                            prefetch(col.slots.as_ptr().wrapping_add(q as usize * col.meta.width as usize / 64));
                        }
                        h += col.any_in(black_box(p), &code_set) as usize;
                    }
                }
            }
            h
        };
        // `same ids`: per layout, a warm-up pass and then the timed passes back to back.
        for (l, layout_samples) in samples.iter_mut().enumerate() {
            black_box(check(l, &same, false, false));
            for _ in 0..runs {
                let (t0, h0) = time(|| check(l, &same, false, false));
                layout_samples[0].push(t0 / queries as f64);
                hits[l][0] = h0;
            }
        }
        // The other modes: fresh ids every run, the layouts taking turns.
        for run in 0..runs {
            let mut frng = Rng(1000 + run as u64);
            let fresh: Vec<u32> = (0..queries).map(|_| frng.below(n as u64) as u32).collect();
            let batch: Vec<u32> = (0..queries).map(|_| frng.below(n as u64) as u32).collect();
            let mut sorted: Vec<u32> = (0..queries).map(|_| frng.below(n as u64) as u32).collect();
            let t = Instant::now();
            sorted.sort_unstable();
            sort_ns.push(t.elapsed().as_nanos() as f64);
            for l in 0..4 {
                let (t1, h1) = time(|| check(l, &fresh, false, false));
                let (t2, h2) = time(|| check(l, &batch, true, true));
                let (t3, h3) = time(|| check(l, &sorted, true, false));
                samples[l][1].push(t1 / queries as f64);
                samples[l][2].push(t2 / queries as f64);
                samples[l][3].push(t3 / queries as f64);
                hits[l][1..].copy_from_slice(&[h1, h2, h3]);
            }
        }
        for l in 1..4 {
            assert_eq!(hits[l], hits[0], "layouts disagree on {name}");
        }
        let med: Vec<[f64; 4]> = samples.iter().map(|s| s.clone().map(median)).collect();
        let bytes = [rc.bytes(), il.bytes(), sh.col.bytes(), sh.col.bytes()];
        let names = ["range+container", "inline-16B (PR #8235)", "shoal (decoded i64)", "shoal (codes)"];
        for l in 0..4 {
            let mut row = format!("| {name} | {} | {:.2} |", names[l], bytes[l] as f64 / n as f64);
            for (base, mine) in med[0].iter().zip(&med[l]) {
                row += &format!(" {mine:.1} | {:.2}x |", base / mine);
            }
            println!("{row}");
        }
        println!(
            "| {name} | (sorting a batch of {queries} ids) | | | | | | | | {:.1} | |",
            median(sort_ns.clone()) / queries as f64
        );
    }
}
