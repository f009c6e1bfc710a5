//! Replays Qdrant PR #8235's micro-benchmark: `check_values_any` on random points of a
//! point → values map of 40M points (i64 values 0..=2; 100k random lookups; predicate
//! `value == 1`), for three distributions: single-value, sparse (10% empty, the rest single)
//! and multi-value (1..=5 values). The same three again with values 0..2^20 show the
//! high-cardinality layouts that the 0..=2 data never reaches (3 distinct values become a
//! value-set column): 32-bit inline codes, and for multi rows the counted direct mode (each
//! multi row's slot names where its codes start and how many there are). Layouts, all built
//! from the same data in this run:
//!
//! - `range+container`: Qdrant before the PR: `(start, count)` per point into a `Vec<i64>`.
//! - `inline-16B`: the PR: a 16-byte enum per point, `Single(i64)` or `Slice { start, count }`.
//! - `shoal`: Shoal's column (`shoal_payload::column`) as the writer builds it: sorted
//!   dictionary, packed slots (value sets, inline codes, or counted direct); the predicate
//!   gets the decoded `i64` (as Qdrant's).
//! - `shoal-codes`: the same column with the predicate compiled to dictionary codes, as the
//!   filter evaluator does (`value == 1` → `code == c`, a range → a code interval).
//!
//! Each cell is the median of several runs, in five ways of looking up:
//!
//! - `same ids`: one set of 100k ids checked again and again, each layout's passes back to
//!   back after a warm-up pass — criterion's loop over a fixed id list (whatever the layout's
//!   touched lines and page-table entries fit in cache stays there);
//! - `warm random`: new random ids every pass, each layout's passes back to back after a
//!   warm-up of a million random lookups — criterion's loop drawing a random id per iteration
//!   (as Qdrant's `numeric_index_check_values` bench does), in its steady state;
//! - `cold`: new ids, one lookup at a time, each pass starting from evicted caches
//!   (`EVICT_BYTES` written first), the layouts taking turns;
//! - `batch+pf`: new unsorted ids, cold, checked as one batch with each layout prefetching
//!   what a later lookup reads — in two stages for the layouts with a container (the entry
//!   `2d` lookups ahead, then the container slice its entry names `d` ahead) — at each
//!   layout's best distance `d` among `AHEAD`, so every layout gets its best batched form;
//! - `sorted+pf`: the same with a sorted batch (the order in which a filtered IVF search
//!   meets its candidates: a partition's rows are stored together, ascending), the sort
//!   excluded and reported on its own.
//!
//! `SHOAL_BENCH_PAGES=huge` puts every layout's arrays in memory advised to use 2 MB pages;
//! `SHOAL_BENCH_DIRECT=uncounted` re-encodes a counted Shoal column as the older uncounted
//! direct mode (2), to compare the two.
//! `SHOAL_BENCH_POINTS` (default 40000000), `SHOAL_BENCH_QUERIES` (100000) and
//! `SHOAL_BENCH_RUNS` (9) override the sizes; `SHOAL_BENCH_ONLY=multi` runs only the
//! distributions whose name contains the string. Run with
//! `cargo bench -p shoal-payload --bench check_values_any`.

use std::hint::black_box;
use std::time::Instant;

use shoal_payload::column::{
    CodeSet, ColumnMeta, ColumnParts, ColumnRef, DIRECT_TAG, MODE_COUNTED, MODE_DIRECT, build_column,
};

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
    ranges: &'static [(u32, u32)],
    container: &'static [i64],
}

impl RangeContainer {
    fn new(d: &Data) -> Self {
        let ranges: Vec<(u32, u32)> = d.offsets.windows(2).map(|w| (w[0], w[1] - w[0])).collect();
        RangeContainer { ranges: pin(&ranges), container: pin(&d.values) }
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
    entries: &'static [Entry],
    container: &'static [i64],
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
        Inline16 { entries: pin(&entries), container: pin(&container) }
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
        std::mem::size_of_val(self.entries) + self.container.len() * 8
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

/// One layout's lookup and what a batched lookup prefetches; [`run`] is monomorphised per
/// layout, so each gets its own tight loop.
trait Layout {
    fn check(&self, p: u32) -> bool;
    /// Prefetch the entry (slot) of `q`.
    fn prefetch_entry(&self, q: u32);
    /// Prefetch the container slice of `q` (whose entry was prefetched earlier), if any.
    fn prefetch_container(&self, _q: u32) {}
    /// Whether the layout has a container slice to prefetch in a second stage.
    fn two_stage(&self) -> bool {
        true
    }
}

impl Layout for RangeContainer {
    #[inline(always)]
    fn check(&self, p: u32) -> bool {
        self.check_values_any(p, |v| *v == CHECK_VALUE)
    }
    #[inline(always)]
    fn prefetch_entry(&self, q: u32) {
        prefetch(self.ranges.as_ptr().wrapping_add(q as usize));
    }
    #[inline(always)]
    fn prefetch_container(&self, q: u32) {
        let start = self.ranges.get(q as usize).map_or(0, |r| r.0);
        prefetch(self.container.as_ptr().wrapping_add(start as usize));
    }
}

impl Layout for Inline16 {
    #[inline(always)]
    fn check(&self, p: u32) -> bool {
        self.check_values_any(p, |v| *v == CHECK_VALUE)
    }
    #[inline(always)]
    fn prefetch_entry(&self, q: u32) {
        prefetch(self.entries.as_ptr().wrapping_add(q as usize));
    }
    #[inline(always)]
    fn prefetch_container(&self, q: u32) {
        if let Some(&Entry::Slice { start, .. }) = self.entries.get(q as usize) {
            prefetch(self.container.as_ptr().wrapping_add(start as usize));
        }
    }
    /// Single-value data has no container: no second stage (as Shoal's value sets).
    fn two_stage(&self) -> bool {
        !self.container.is_empty()
    }
}

/// How a Shoal lookup checks a row's values: decoded to `i64` (the PR's interface) or as codes.
trait ShoalPredicate {
    fn check(&self, col: &ColumnRef<'_>, p: u32) -> bool;
}

/// The predicate on decoded `i64` values, through the dictionary.
struct Decoded<'a>(&'a [i64]);
impl ShoalPredicate for Decoded<'_> {
    #[inline(always)]
    fn check(&self, col: &ColumnRef<'_>, p: u32) -> bool {
        col.any_code(p, |c| self.0.get((c - 2) as usize).is_some_and(|v| *v == CHECK_VALUE))
    }
}

/// The predicate compiled to codes, as the filter evaluator does.
struct Codes<'a>(&'a CodeSet);
impl ShoalPredicate for Codes<'_> {
    #[inline(always)]
    fn check(&self, col: &ColumnRef<'_>, p: u32) -> bool {
        col.any_in(p, self.0)
    }
}

/// Shoal's column with one of the two predicates.
struct ShoalLayout<'a, P> {
    col: ColumnRef<'a>,
    predicate: P,
}

impl<P: ShoalPredicate> Layout for ShoalLayout<'_, P> {
    #[inline(always)]
    fn check(&self, p: u32) -> bool {
        self.predicate.check(&self.col, p)
    }
    #[inline(always)]
    fn prefetch_entry(&self, q: u32) {
        prefetch(self.col.slots.as_ptr().wrapping_add(q as usize * self.col.meta.width as usize / 64));
    }
    /// The start of the codes of a multi row of a direct column.
    #[inline(always)]
    fn prefetch_container(&self, q: u32) {
        let s = self.col.code(q);
        if s & DIRECT_TAG != 0 {
            prefetch(self.col.multi_codes.as_ptr().wrapping_add(self.col.direct_start(s) as usize / 2));
        }
    }
    fn two_stage(&self) -> bool {
        matches!(self.col.meta.mode, MODE_COUNTED | MODE_DIRECT)
    }
}

// (Each layout is its own type, predicates too, not a closure in a shared one: a closure that
// big is called, not inlined, and a call per lookup halves the memory-level parallelism of cold
// lookups.)

/// Checks `ids`, counting hits. `ahead` > 0: prefetch what the lookup `ahead` places later
/// reads — in two stages for the layouts with a container: the entry `2 x ahead` later, then
/// the container slice named by the entry `ahead` later.
#[inline(never)]
fn run<L: Layout>(layout: &L, ids: &[u32], ahead: usize) -> usize {
    let mut h = 0usize;
    if ahead == 0 {
        for &p in ids {
            h += layout.check(black_box(p)) as usize;
        }
        return h;
    }
    let two = layout.two_stage();
    for (i, &p) in ids.iter().enumerate() {
        if two {
            if let Some(&q) = ids.get(i + 2 * ahead) {
                layout.prefetch_entry(q);
            }
            if let Some(&q) = ids.get(i + ahead) {
                layout.prefetch_container(q);
            }
        } else if let Some(&q) = ids.get(i + ahead) {
            layout.prefetch_entry(q);
        }
        h += layout.check(black_box(p)) as usize;
    }
    h
}

/// The meta and slots of a counted column re-encoded as the older uncounted direct mode (slot
/// `2^31 + start`), to compare the two (`SHOAL_BENCH_DIRECT=uncounted`); other columns as
/// they are.
fn uncounted(col: &ColumnParts) -> (ColumnMeta, Vec<u64>) {
    if col.meta.mode != MODE_COUNTED {
        return (col.meta, col.slots.clone());
    }
    let c = col.as_ref();
    let half = |s: u32| if s & DIRECT_TAG != 0 { DIRECT_TAG | c.direct_start(s) as u32 } else { s };
    let slots = col.slots.iter().map(|&w| half(w as u32) as u64 | (half((w >> 32) as u32) as u64) << 32).collect();
    (ColumnMeta { mode: MODE_DIRECT, ..col.meta }, slots)
}

/// A copy of `v` that lives for the rest of the run, in memory advised to use 2 MB pages when
/// `SHOAL_BENCH_PAGES=huge` (every layout alike).
fn pin<T: Copy>(v: &[T]) -> &'static [T] {
    if std::env::var("SHOAL_BENCH_PAGES").as_deref() != Ok("huge") || v.is_empty() {
        return Vec::leak(v.to_vec());
    }
    const HUGE: usize = 2 << 20;
    let bytes = std::mem::size_of_val(v);
    let map = memmap2::MmapMut::map_anon(bytes + 2 * HUGE).expect("anonymous map");
    map.advise(memmap2::Advice::HugePage).expect("madvise");
    let map = Box::leak(Box::new(map));
    let base = map.as_mut_ptr();
    let start = base.wrapping_add(base.align_offset(HUGE));
    // SAFETY: `start` is 2 MB-aligned inside the map (which has 2 MB to spare), so
    // `bytes` bytes from it are in bounds and suitably aligned for any `T`; the map is
    // leaked, so the slice lives for the rest of the program; the source does not overlap.
    unsafe {
        std::ptr::copy_nonoverlapping(v.as_ptr().cast::<u8>(), start, bytes);
        std::slice::from_raw_parts(start.cast::<T>(), v.len())
    }
}

/// Bytes written before each cold pass: three times the 32 MB L3 of the machine the numbers
/// were taken on, so no layout starts with lines (or page-table entries) another left behind.
const EVICT_BYTES: usize = 96 << 20;

fn evict(scratch: &mut [u64]) {
    for (i, w) in scratch.iter_mut().enumerate() {
        *w = w.wrapping_add(i as u64);
    }
    black_box(&scratch[..]);
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

/// Prefetch distances (lookups ahead) the batched modes try for every layout.
const AHEAD: [usize; 5] = [16, 32, 64, 128, 256];
/// Cold batches per distance, layout and batched mode that choose the distance.
const CALIBRATION_RUNS: u64 = 3;

fn main() {
    let n = env("SHOAL_BENCH_POINTS", 40_000_000);
    let queries = env("SHOAL_BENCH_QUERIES", 100_000);
    let runs = env("SHOAL_BENCH_RUNS", 9).max(1);
    println!(
        "check_values_any: {n} points, {queries} random lookups, median of {runs} runs, predicate value == {CHECK_VALUE}"
    );
    println!();
    println!(
        "| distribution | layout | bytes/point | same ids ns/lookup | vs range+container | warm random ns/lookup | vs range+container | cold ns/lookup | vs range+container | batch+pf ns/lookup | vs range+container | sorted+pf ns/lookup | vs range+container |"
    );
    println!("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
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
        let (meta, slots) = match std::env::var("SHOAL_BENCH_DIRECT").as_deref() {
            Ok("uncounted") => uncounted(&sh.col),
            _ => (sh.col.meta, sh.col.slots.clone()),
        };
        let col = ColumnRef {
            meta,
            slots: pin(&slots),
            multi_bits: pin(&sh.col.multi_bits),
            multi_rank: pin(&sh.col.multi_rank),
            multi_offsets: pin(&sh.col.multi_offsets),
            multi_codes: pin(&sh.col.multi_codes),
            ..sh.col.as_ref()
        };
        let dict = &sh.dict[..];
        let code_set = sh.code_set_eq(CHECK_VALUE);
        let mut qrng = Rng(123);
        let same: Vec<u32> = (0..queries).map(|_| qrng.below(n as u64) as u32).collect();

        // [layout][mode] -> samples; modes: same, warm random, cold, batch+pf, sorted+pf.
        let mut samples = vec![[Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new()]; 4];
        let mut hits = [[0usize; 5]; 4];
        let mut sort_ns = Vec::new();
        let draw = move |seed: u64| -> Vec<u32> {
            let mut rng = Rng(seed);
            (0..queries).map(|_| rng.below(n as u64) as u32).collect()
        };
        let decoded = ShoalLayout { col, predicate: Decoded(dict) };
        let codes = ShoalLayout { col, predicate: Codes(&code_set) };
        let check = |layout: usize, ids: &[u32], ahead: usize| -> usize {
            match layout {
                0 => run(&rc, ids, ahead),
                1 => run(&il, ids, ahead),
                2 => run(&decoded, ids, ahead),
                _ => run(&codes, ids, ahead),
            }
        };
        // `same ids` and `warm random`: per layout, a warm-up pass and then the timed passes
        // back to back — one set of ids again and again, or new ids every pass.
        for (l, layout_samples) in samples.iter_mut().enumerate() {
            black_box(check(l, &same, 0));
            for _ in 0..runs {
                let (t, h) = time(|| check(l, &same, 0));
                layout_samples[0].push(t / queries as f64);
                hits[l][0] = h;
            }
            // Warm-up as long as criterion's: ten passes' worth of random lookups.
            let mut warm = Rng(500);
            let warm: Vec<u32> = (0..10 * queries).map(|_| warm.below(n as u64) as u32).collect();
            black_box(check(l, &warm, 0));
            for run in 0..runs {
                let ids = draw(600 + run as u64);
                let (t, h) = time(|| check(l, &ids, 0));
                layout_samples[1].push(t / queries as f64);
                hits[l][1] += h;
            }
        }
        // The cold modes: new ids every run, the layouts taking turns, each pass starting from
        // caches holding none of the layouts' lines. The batched modes first try every prefetch
        // distance of `AHEAD` for every layout on `CALIBRATION_RUNS` batches of their own;
        // then the timed runs use each layout's best (chosen on other samples than those
        // reported, so picking a minimum does not flatter the noisier layouts).
        let mut scratch = vec![0u64; EVICT_BYTES / 8];
        let mut best_ahead = [[0usize; 2]; 4];
        for (l, best) in best_ahead.iter_mut().enumerate() {
            for (m, best) in best.iter_mut().enumerate() {
                let meds: Vec<f64> = AHEAD
                    .iter()
                    .map(|&ahead| {
                        median(
                            (0..CALIBRATION_RUNS)
                                .map(|run| {
                                    let mut ids = draw(900 + run);
                                    if m == 1 {
                                        ids.sort_unstable();
                                    }
                                    evict(&mut scratch);
                                    time(|| check(l, &ids, ahead)).0
                                })
                                .collect(),
                        )
                    })
                    .collect();
                *best = AHEAD[(0..AHEAD.len()).min_by(|&a, &b| meds[a].total_cmp(&meds[b])).unwrap_or(0)];
            }
        }
        for run in 0..runs {
            let fresh = draw(1000 + 3 * run as u64);
            let batch = draw(1001 + 3 * run as u64);
            let mut sorted = draw(1002 + 3 * run as u64);
            let t = Instant::now();
            sorted.sort_unstable();
            sort_ns.push(t.elapsed().as_nanos() as f64);
            for l in 0..4 {
                for (mode, ids, ahead) in
                    [(2, &fresh, 0), (3, &batch, best_ahead[l][0]), (4, &sorted, best_ahead[l][1])]
                {
                    evict(&mut scratch);
                    let (t, h) = time(|| check(l, ids, ahead));
                    samples[l][mode].push(t / queries as f64);
                    hits[l][mode] = h;
                }
            }
        }
        for l in 1..4 {
            assert_eq!(hits[l], hits[0], "layouts disagree on {name}");
        }
        let med: Vec<[f64; 5]> = samples.iter().map(|s| s.clone().map(median)).collect();
        let bytes = [rc.bytes(), il.bytes(), sh.col.bytes(), sh.col.bytes()];
        let names = ["range+container", "inline-16B (PR #8235)", "shoal (decoded i64)", "shoal (codes)"];
        for l in 0..4 {
            let mut row = format!("| {name} | {} | {:.2} |", names[l], bytes[l] as f64 / n as f64);
            for (m, (base, mine)) in med[0].iter().zip(&med[l]).enumerate() {
                let d = if m >= 3 { format!(" (d={})", best_ahead[l][m - 3]) } else { String::new() };
                row += &format!(" {mine:.1}{d} | {:.2}x |", base / mine);
            }
            println!("{row}");
        }
        println!(
            "| {name} | (sorting a batch of {queries} ids) | | | | | | | | | | {:.1} | |",
            median(sort_ns.clone()) / queries as f64
        );
    }
}
