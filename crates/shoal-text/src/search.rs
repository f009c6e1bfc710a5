//! Query execution: BM25 scoring in a canonical order, top-k by block-max MaxScore over the
//! `should` clauses (or by intersecting the `must` clauses), phrases with the mask prefilter,
//! an optional candidate filter and a deadline.
//!
//! **Canonical score.** A document's score is an `f32` accumulator starting at `+0.0` to which
//! the term scores are added one by one: the `must` clauses in query order, then the matching
//! `should` clauses in query order, each clause's terms in clause order. A term score is
//!
//! ```text
//! idf   = logf(1 + ((N - df) as f32 + 0.5) / (df as f32 + 0.5))        (libm, f32)
//! avgdl = total_len as f32 / N as f32
//! score = idf * ((tf * (k1 + 1)) / (tf + k1 * ((1 - b) + b * (dl / avgdl))))
//! ```
//!
//! with `tf`, `dl`, `N`, `df` converted to `f32` and every operation rounded separately (Rust
//! never fuses them), so the same bits come out on every target. Pruning compares upper bounds
//! inflated by a relative margin of 2⁻¹² (far above the rounding error of summing at most
//! [`MAX_QUERY_TERMS`](crate::query::MAX_QUERY_TERMS) terms in another order), so it never drops a
//! document that belongs in the top k. Ties rank by ascending document id.
//!
//! **Bounds.** A term's bound on a block is the largest score over the block's impacts (its
//! Pareto-optimal (tf, length) pairs, `docs/format.md`), i.e. the block's exact maximum; its
//! bound on the list is the largest block bound. A one-block list is bounded by its largest tf
//! at length 0.

use alloc::collections::BinaryHeap;
use alloc::vec::Vec;
use core::cmp::Ordering;

use crate::error::corrupt;
use crate::positions::PositionsCursor;
use crate::postings::{PostingsCursor, TERMINATED};
use crate::query::{Clause, Query};
use crate::{TextError, TextIndex};

/// BM25 parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Bm25 {
    /// Term-frequency saturation, `>= 0` (default 1.2).
    pub k1: f32,
    /// Length normalisation, `0..=1` (default 0.75).
    pub b: f32,
}

impl Default for Bm25 {
    fn default() -> Self {
        Bm25 { k1: 1.2, b: 0.75 }
    }
}

impl Bm25 {
    /// Inverse document frequency of a term in `df` of `n` documents (canonical formula).
    pub fn idf(n: u32, df: u32) -> f32 {
        let rest = n.saturating_sub(df) as f32;
        libm::logf(1.0 + (rest + 0.5) / (df as f32 + 0.5))
    }

    /// The score of one term in one document (canonical formula).
    #[inline]
    pub fn term_score(&self, idf: f32, tf: u32, doc_len: u32, avgdl: f32) -> f32 {
        self.score_norm(idf, tf, self.norm(doc_len, avgdl))
    }

    /// The length part of [`Bm25::term_score`], the same for every term of a document.
    #[inline]
    fn norm(&self, doc_len: u32, avgdl: f32) -> f32 {
        self.k1 * ((1.0 - self.b) + self.b * (doc_len as f32 / avgdl))
    }

    /// [`Bm25::term_score`] given [`Bm25::norm`] (the same operations, so the same bits).
    #[inline]
    fn score_norm(&self, idf: f32, tf: u32, norm: f32) -> f32 {
        let tf = tf as f32;
        idf * ((tf * (self.k1 + 1.0)) / (tf + norm))
    }

    /// An upper bound of [`Bm25::term_score`] for any `tf <= max_tf` and `doc_len >= min_len`
    /// (`max_tf == u32::MAX` means unbounded: the limit `idf * (k1 + 1)`).
    pub fn upper_bound(&self, idf: f32, max_tf: u32, min_len: u32, avgdl: f32) -> f32 {
        if max_tf == u32::MAX { idf * (self.k1 + 1.0) } else { self.term_score(idf, max_tf, min_len, avgdl) }
    }

    fn check(&self) -> Result<(), TextError> {
        if self.k1.is_finite() && self.k1 >= 0.0 && (0.0..=1.0).contains(&self.b) {
            Ok(())
        } else {
            Err(TextError::InvalidInput("bm25: k1 must be finite and >= 0, b in 0..=1"))
        }
    }
}

/// A monotonic clock supplied by the host, in microseconds.
pub trait Clock {
    /// Now, in microseconds from any fixed origin.
    fn now_micros(&self) -> u64;
}

impl<F: Fn() -> u64> Clock for F {
    fn now_micros(&self) -> u64 {
        self()
    }
}

/// When a query must stop: the executor reads the clock every [`CHECK_EVERY`] candidate
/// documents (a candidate is roughly one posting of the driving lists, so a check falls at
/// most about one block apart) and returns the best hits found so far with `partial = true`.
#[derive(Clone, Copy)]
pub struct Deadline<'c> {
    /// The host's clock.
    pub clock: &'c dyn Clock,
    /// The instant (in the clock's microseconds) at which to stop.
    pub at_micros: u64,
}

impl<'c> Deadline<'c> {
    /// A deadline `budget_micros` from now.
    pub fn after(clock: &'c dyn Clock, budget_micros: u64) -> Deadline<'c> {
        Deadline { clock, at_micros: clock.now_micros().saturating_add(budget_micros) }
    }
}

impl core::fmt::Debug for Deadline<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Deadline").field("at_micros", &self.at_micros).finish()
    }
}

/// Candidate documents between two clock reads.
pub const CHECK_EVERY: u64 = 64;

/// BM25 statistics of a corpus larger than one index (a collection of several segments):
/// documents, total length and document frequencies summed over every index of the corpus,
/// so that a document scores the same whichever index holds it.
#[derive(Clone, Copy)]
pub struct Corpus<'p> {
    /// Documents of the corpus (`N`).
    pub doc_count: u32,
    /// Sum of the documents' lengths in the searched field.
    pub total_len: u64,
    /// Documents of the corpus containing an (analysed) term of the searched field.
    pub doc_freq: &'p dyn Fn(&str) -> Result<u32, TextError>,
}

impl core::fmt::Debug for Corpus<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Corpus").field("doc_count", &self.doc_count).field("total_len", &self.total_len).finish()
    }
}

/// Parameters of one search.
#[derive(Clone, Copy)]
pub struct SearchParams<'p> {
    /// Hits to return.
    pub k: usize,
    /// BM25 parameters.
    pub bm25: Bm25,
    /// Only documents for which this returns `true` can be hits (payload filters, deletes).
    pub filter: Option<&'p dyn Fn(u32) -> bool>,
    /// Optional deadline.
    pub deadline: Option<Deadline<'p>>,
    /// Statistics of the whole corpus (`None`: this index's own).
    pub corpus: Option<Corpus<'p>>,
}

impl Default for SearchParams<'_> {
    fn default() -> Self {
        SearchParams { k: 10, bm25: Bm25::default(), filter: None, deadline: None, corpus: None }
    }
}

impl core::fmt::Debug for SearchParams<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("SearchParams")
            .field("k", &self.k)
            .field("bm25", &self.bm25)
            .field("filter", &self.filter.is_some())
            .field("deadline", &self.deadline)
            .field("corpus", &self.corpus)
            .finish()
    }
}

/// One result.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Hit {
    /// Document id.
    pub doc: u32,
    /// BM25 score (higher is better).
    pub score: f32,
}

/// Counters of one search.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SearchStats {
    /// Candidate documents considered.
    pub candidates: u64,
    /// Documents fully scored (the filter and `must_not` are checked only for those that would
    /// enter the top k).
    pub scored: u64,
    /// Candidates dropped by score bounds.
    pub pruned: u64,
    /// Phrase candidates checked (all terms present).
    pub phrase_checks: u64,
    /// Phrase candidates rejected by the position mask alone.
    pub mask_rejects: u64,
}

/// The outcome of a search.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SearchResult {
    /// Best hits first (score descending, then id ascending).
    pub hits: Vec<Hit>,
    /// The deadline fired: `hits` are the best found before it.
    pub partial: bool,
    /// Counters.
    pub stats: SearchStats,
}

/// Most block ends an intersection passes without checking its bounds after failed checks.
const MAX_PASS: u32 = 16;

/// Relative margin on upper bounds (see the module documentation).
const MARGIN: f32 = 1.0 + 1.0 / 4096.0;

struct HeapHit(Hit);
impl PartialEq for HeapHit {
    fn eq(&self, o: &Self) -> bool {
        self.cmp(o) == Ordering::Equal
    }
}
impl Eq for HeapHit {}
impl PartialOrd for HeapHit {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for HeapHit {
    /// "Greater" ranks worse: lower score, then higher id.
    fn cmp(&self, o: &Self) -> Ordering {
        o.0.score.total_cmp(&self.0.score).then(self.0.doc.cmp(&o.0.doc))
    }
}

struct Top {
    k: usize,
    heap: BinaryHeap<HeapHit>,
}

impl Top {
    fn full(&self) -> bool {
        self.heap.len() >= self.k
    }
    /// Score a new (higher-id) document must exceed; `-inf` while not full.
    fn threshold(&self) -> f32 {
        if self.full() { self.heap.peek().map_or(f32::NEG_INFINITY, |h| h.0.score) } else { f32::NEG_INFINITY }
    }
    /// Whether a hit with this score and a higher id than every hit so far would enter (it
    /// loses ties).
    fn accepts(&self, score: f32) -> bool {
        !self.full() || score.total_cmp(&self.threshold()).is_gt()
    }
    fn push(&mut self, h: Hit) {
        if self.heap.len() < self.k {
            self.heap.push(HeapHit(h));
        } else if let Some(mut top) = self.heap.peek_mut()
            && HeapHit(h) < *top
        {
            *top = HeapHit(h);
        }
    }
    fn into_sorted(self) -> Vec<Hit> {
        // The heap's own sort (the order is total: one hit per document), rather than a sort
        // routine of its own in the wasm build.
        self.heap.into_sorted_vec().into_iter().map(|h| h.0).collect()
    }
}

struct TermState<'a> {
    cur: PostingsCursor<'a>,
    pos: Option<PositionsCursor<'a>>,
    idf: f32,
    ub: f32,
    /// The last block bound computed: (block, bound).
    cache: (u32, f32),
}

impl TermState<'_> {
    /// The term's bound on the block that would hold `d` (cached per block) and that block's
    /// last id; `None` past the end of the list.
    #[inline]
    fn block_bound(&mut self, d: u32, bm25: &Bm25, avgdl: f32) -> Option<(f32, u32)> {
        let m = self.cur.shallow_seek(d)?;
        let b = self.cur.shallow_block();
        if self.cache.0 != b {
            let idf = self.idf;
            self.cache = (b, self.cur.block_max_score(b, |tf, len| bm25.term_score(idf, tf, len, avgdl)));
        }
        Some((self.cache.1, m.last_doc))
    }
}

/// The block-bound checks of an intersection. Bounds hold up to the first block end they saw;
/// with an unchanged threshold a check would fail again before it, so it is repeated only past
/// it or when the threshold has risen. After `fails` failed checks in a row the next `fails`
/// block ends (at most [`MAX_PASS`]) pass unchecked unless the threshold rises: where blocks
/// cannot be skipped, the bounds cost more than they save. Either way the results are the same.
struct Bounds {
    until: u32,
    thr: f32,
    fails: u32,
    pass: u32,
}

impl Bounds {
    /// With the top k full at threshold `thr` and a candidate `d`: where to resume when no
    /// document from `d` up to the first block end of `terms` and `should` can enter.
    #[allow(clippy::too_many_arguments)]
    fn skip(
        &mut self,
        d: u32,
        thr: f32,
        terms: &mut [TermState],
        should: &mut [ClauseState],
        bm25: &Bm25,
        avgdl: f32,
        stats: &mut SearchStats,
    ) -> Option<u32> {
        if thr == self.thr && d > self.until && self.pass > 0 {
            self.pass -= 1;
            self.until =
                terms.iter_mut().fold(TERMINATED - 1, |u, t| u.min(t.cur.shallow_seek(d).map_or(u, |m| m.last_doc)));
            return None;
        }
        let due = d > self.until || thr > self.thr;
        if !due {
            return None;
        }
        let mut bound = 0.0f32;
        let mut until = TERMINATED - 1;
        for t in terms {
            let (b, u) = t.block_bound(d, bm25, avgdl).unwrap_or((0.0, TERMINATED - 1));
            bound += b;
            until = until.min(u);
        }
        for c in should {
            let (b, u) = c.block_bound(d, bm25, avgdl);
            bound += b;
            until = until.min(u);
        }
        if bound * MARGIN <= thr {
            stats.pruned += 1;
            self.fails = 0;
            return Some(until.saturating_add(1));
        }
        self.fails = (self.fails + 1).min(MAX_PASS);
        self.pass = self.fails;
        (self.until, self.thr) = (until, thr);
        None
    }
}

struct ClauseState<'a> {
    terms: Vec<TermState<'a>>,
    offsets: Vec<u32>,
    phrase: bool,
    ub: f32,
    doc: u32,
}

struct Ctx<'p> {
    deadline: Option<Deadline<'p>>,
    ticks: u64,
    expired: bool,
    stats: SearchStats,
    bufs: Vec<Vec<u32>>,
}

impl Ctx<'_> {
    /// Counts a unit of work; reads the clock every [`CHECK_EVERY`] units. True once expired.
    #[inline]
    fn tick(&mut self) -> bool {
        if let Some(d) = self.deadline
            && self.ticks.is_multiple_of(CHECK_EVERY)
            && d.clock.now_micros() >= d.at_micros
        {
            self.expired = true;
        }
        self.ticks += 1;
        self.expired
    }
}

impl<'a> ClauseState<'a> {
    /// Moves to the first match `>= target` (stays if already there).
    fn seek(&mut self, target: u32, ctx: &mut Ctx) -> Result<u32, TextError> {
        if self.doc >= target {
            return Ok(self.doc);
        }
        self.find(target, ctx)
    }

    fn find(&mut self, mut d: u32, ctx: &mut Ctx) -> Result<u32, TextError> {
        loop {
            loop {
                let mut agree = true;
                for t in &mut self.terms {
                    let x = t.cur.seek(d)?;
                    if x == TERMINATED {
                        self.doc = TERMINATED;
                        return Ok(TERMINATED);
                    }
                    if x > d {
                        d = x;
                        agree = false;
                    }
                }
                if agree {
                    break;
                }
            }
            if !self.phrase || phrase_match(&mut self.terms, &self.offsets, ctx)? {
                self.doc = d;
                return Ok(d);
            }
            if ctx.tick() {
                // Out of time: report the clause as exhausted; the caller stops at once.
                self.doc = TERMINATED;
                return Ok(TERMINATED);
            }
            d += 1;
        }
    }

    /// Adds the clause's term scores (clause order) to `acc`; the cursors are on the document.
    #[inline]
    fn add_score(&self, acc: &mut f32, bm25: &Bm25, dl: u32, avgdl: f32) {
        for t in &self.terms {
            *acc += bm25.term_score(t.idf, t.cur.tf(), dl, avgdl);
        }
    }

    /// Upper bound of the clause's score on documents `d..=until` from block skip data, and
    /// `until` (the first block end among its terms; `TERMINATED - 1` past the end of a list).
    fn block_bound(&mut self, d: u32, bm25: &Bm25, avgdl: f32) -> (f32, u32) {
        let mut s = 0.0f32;
        let mut until = TERMINATED - 1;
        for t in &mut self.terms {
            let Some((b, last)) = t.block_bound(d, bm25, avgdl) else { return (0.0, TERMINATED - 1) };
            s += b;
            until = until.min(last);
        }
        (s, until)
    }
}

impl<'a> TextIndex<'a> {
    /// Runs `query` over text field `field`, returning the top `params.k` documents by BM25.
    ///
    /// Errors on corrupt postings or positions met on the way, on bad BM25 parameters and on
    /// phrase queries over an index without positions. A query without `must` and `should`
    /// clauses matches nothing.
    pub fn search(&self, field: u32, query: &Query, params: &SearchParams) -> Result<SearchResult, TextError> {
        params.bm25.check()?;
        let meta = self.meta();
        let mut ctx = Ctx {
            deadline: params.deadline,
            ticks: 0,
            expired: false,
            stats: SearchStats::default(),
            bufs: Vec::new(),
        };
        let mut top = Top { k: params.k, heap: BinaryHeap::with_capacity(params.k.min(4096) + 1) };
        let n = params.corpus.map_or(meta.doc_count, |c| c.doc_count);
        if params.k == 0 || n == 0 || meta.doc_count == 0 || query.is_empty() || field >= meta.field_count {
            return Ok(SearchResult::default());
        }
        let avgdl = {
            let total = params.corpus.map_or_else(|| meta.total_len[field as usize], |c| c.total_len);
            let a = total as f32 / n as f32;
            if a > 0.0 { a } else { 1.0 }
        };
        let bm25 = params.bm25;
        // Open clauses; `None` when a term is absent (the clause cannot match).
        // `exact_ub`: the clause's bound is the best block impact of each term, O(blocks) to
        // compute, which only MaxScore over several `should` clauses uses to order and skip
        // them; elsewhere the O(1) bound from the whole list's max tf and min length will do.
        let open = |c: &Clause, exact_ub: bool, ctx: &mut Ctx| -> Result<Option<ClauseState<'a>>, TextError> {
            let mut terms = Vec::new();
            let mut offsets = Vec::new();
            for (t, o) in c.terms() {
                let Some(info) = self.term(field, t)? else { return Ok(None) };
                let cur = self.postings(&info)?;
                let pos = if matches!(c, Clause::Phrase(_)) {
                    self.positions(&info)?.map(PositionsCursor::new)
                } else {
                    None
                };
                if matches!(c, Clause::Phrase(_)) && pos.is_none() {
                    return Err(TextError::InvalidInput("phrase query on an index without positions"));
                }
                let df = match params.corpus {
                    // At least this index's own count, whatever the caller sums.
                    Some(c) => (c.doc_freq)(t)?.max(info.doc_freq),
                    None => info.doc_freq,
                };
                let idf = Bm25::idf(n, df);
                let score = |tf, len| bm25.term_score(idf, tf, len, avgdl);
                let ub = if exact_ub {
                    (0..cur.block_count()).map(|b| cur.block_max_score(b, score)).fold(0.0f32, f32::max)
                } else {
                    let m = cur.list_meta();
                    bm25.upper_bound(idf, m.max_tf, m.min_len, avgdl)
                };
                terms.push(TermState { cur, pos, idf, ub, cache: (u32::MAX, 0.0) });
                offsets.push(o);
            }
            let ub = terms.iter().map(|t| t.ub).sum();
            let mut s = ClauseState { terms, offsets, phrase: matches!(c, Clause::Phrase(_)), ub, doc: 0 };
            s.find(0, ctx)?;
            Ok(Some(s))
        };
        // A lone `should` phrase must match: it runs as a `must` clause (same matches, same
        // canonical score order), whose intersection checks bounds before positions.
        let (must_q, should_q) = match (&query.must[..], &query.should[..]) {
            ([], [Clause::Phrase(_)]) => (&query.should[..], &[][..]),
            (m, s) => (m, s),
        };
        let mut must = Vec::with_capacity(must_q.len());
        for c in must_q {
            match open(c, false, &mut ctx)? {
                Some(s) => must.push(s),
                None => return Ok(SearchResult::default()),
            }
        }
        let mut should = Vec::with_capacity(should_q.len());
        for c in should_q {
            if let Some(s) = open(c, should_q.len() > 1, &mut ctx)? {
                should.push(s);
            }
        }
        let mut must_not = Vec::with_capacity(query.must_not.len());
        for c in &query.must_not {
            if let Some(s) = open(c, false, &mut ctx)? {
                must_not.push(s);
            }
        }
        let doc_len = |d: u32| self.doc_len(field, d).ok_or(corrupt("postings", "document id past the doc lengths"));
        let mut matched = alloc::vec![false; should.len()];

        if !must.is_empty() {
            // The must clauses flattened: their terms in canonical order, the phrases as ranges
            // of them, and the order the intersection visits them in (shortest list first).
            let mut terms = Vec::new();
            let mut offsets = Vec::new();
            let mut phrases = Vec::new();
            for c in &mut must {
                if c.phrase {
                    phrases.push(terms.len()..terms.len() + c.terms.len());
                }
                terms.append(&mut c.terms);
                offsets.append(&mut c.offsets);
            }
            let mut lead: Vec<usize> = (0..terms.len()).collect();
            for i in 1..lead.len() {
                // Insertion sort: a few terms, and no sort routine to carry in wasm.
                let mut j = i;
                while j > 0 && terms[lead[j - 1]].cur.doc_count() > terms[lead[j]].cur.doc_count() {
                    lead.swap(j - 1, j);
                    j -= 1;
                }
            }
            let mut bounds = Bounds { until: 0, thr: f32::NEG_INFINITY, fails: 0, pass: 0 };
            let mut target = 0u32;
            // Two terms without phrases or `should` clauses: block against block, a branch-free
            // merge that collects the matches, then scores them; natively only (wasm keeps the
            // smaller leapfrog below, with the same results).
            #[cfg(not(target_family = "wasm"))]
            if let (&[x, y], true, true) = (&lead[..], phrases.is_empty(), should.is_empty()) {
                let mut pairs = [(0u8, 0u8); crate::postings::BLOCK + 1];
                'merge: loop {
                    if ctx.tick() {
                        break;
                    }
                    let d = terms[x].cur.doc().max(terms[y].cur.doc());
                    if d == TERMINATED {
                        break;
                    }
                    if top.full()
                        && let Some(t) =
                            bounds.skip(d, top.threshold(), &mut terms, &mut [], &bm25, avgdl, &mut ctx.stats)
                    {
                        terms[x].cur.seek(t)?;
                        terms[y].cur.seek(t)?;
                        continue;
                    }
                    let (a, b) = (&terms[x].cur, &terms[y].cur);
                    let ((da, ta), (db, tb)) = (a.rest(), b.rest());
                    let (mut i, mut j, mut n) = (0, 0, 0);
                    // The next ids are loaded a step ahead and picked without a branch, so a
                    // step waits on a compare, not on a load.
                    let at = |s: &[u32], k: usize| s.get(k).copied().unwrap_or(TERMINATED);
                    let (mut p, mut q) = (at(da, 0), at(db, 0));
                    while i < da.len() && j < db.len() {
                        let (p1, q1) = (at(da, i + 1), at(db, j + 1));
                        pairs[n] = (i as u8, j as u8);
                        n += usize::from(p == q);
                        let (ai, aj) = (p <= q, q <= p);
                        i += usize::from(ai);
                        j += usize::from(aj);
                        p = if ai { p1 } else { p };
                        q = if aj { q1 } else { q };
                    }
                    for &(pi, pj) in &pairs[..n] {
                        if ctx.tick() {
                            break 'merge;
                        }
                        let (pi, pj) = (usize::from(pi), usize::from(pj));
                        let d = da[pi];
                        ctx.stats.candidates += 1;
                        let dl = doc_len(d)?;
                        let norm = bm25.norm(dl, avgdl);
                        let (s0, s1) =
                            (bm25.score_norm(terms[x].idf, ta[pi], norm), bm25.score_norm(terms[y].idf, tb[pj], norm));
                        let score = if x == 0 { 0.0f32 + s0 + s1 } else { 0.0f32 + s1 + s0 };
                        ctx.stats.scored += 1;
                        if top.accepts(score) && !excluded(d, &mut must_not, params, &mut ctx)? {
                            top.push(Hit { doc: d, score });
                        }
                    }
                    // Past a block's end, seek (skipping blocks undecoded) to the other's next id.
                    let (na, nb) = (da.get(i).copied(), db.get(j).copied());
                    let last = da.last().map_or(0, |&l| l.saturating_add(1));
                    match (na, nb) {
                        (Some(t), _) => {
                            terms[x].cur.skip(i)?;
                            terms[y].cur.seek(t)?;
                        }
                        (None, Some(t)) => {
                            terms[y].cur.skip(j)?;
                            terms[x].cur.seek(t)?;
                        }
                        (None, None) => {
                            terms[x].cur.seek(last)?;
                            terms[y].cur.seek(last)?;
                        }
                    }
                }
                target = TERMINATED;
            }
            'docs: loop {
                if ctx.tick() {
                    break;
                }
                // Leapfrog intersection of the must terms (phrases are checked last): the
                // shortest list leads, and a follower past it sends it on.
                let mut d = target;
                loop {
                    d = terms[lead[0]].cur.seek(d)?;
                    if d == TERMINATED {
                        break 'docs;
                    }
                    let mut agree = true;
                    for &j in &lead[1..] {
                        let x = terms[j].cur.seek(d)?;
                        if x != d {
                            (d, agree) = (x, false);
                            break;
                        }
                    }
                    if agree {
                        break;
                    }
                }
                target = d.saturating_add(1);
                ctx.stats.candidates += 1;
                let thr = top.threshold();
                if top.full()
                    && let Some(t) = bounds.skip(d, thr, &mut terms, &mut should, &bm25, avgdl, &mut ctx.stats)
                {
                    // No document up to the first block end can enter: skip past it.
                    target = t.max(target);
                    continue;
                }
                for (c, m) in should.iter_mut().zip(&mut matched) {
                    *m = c.seek(d, &mut ctx)? == d;
                }
                if ctx.expired {
                    break;
                }
                let dl = doc_len(d)?;
                let norm = bm25.norm(dl, avgdl);
                let mut score = 0.0f32;
                for t in &terms {
                    score += bm25.score_norm(t.idf, t.cur.tf(), norm);
                }
                for (c, _) in should.iter().zip(&matched).filter(|(_, m)| **m) {
                    c.add_score(&mut score, &bm25, dl, avgdl);
                }
                ctx.stats.scored += 1;
                let hit = Hit { doc: d, score };
                // The phrases, the filter and `must_not` only for a document that would enter.
                if !top.accepts(score) {
                    continue;
                }
                for r in &phrases {
                    if !phrase_match(&mut terms[r.clone()], &offsets[r.clone()], &mut ctx)? {
                        continue 'docs;
                    }
                }
                if !excluded(d, &mut must_not, params, &mut ctx)? {
                    top.push(hit);
                }
            }
        } else if should.len() == 1 && !should[0].phrase && should[0].terms.len() == 1 && must_not.is_empty() {
            // One term: document by document in list order, skipping every block whose best
            // impact cannot beat the k-th score (the same bounds and margin as below, without
            // the bookkeeping of several lists).
            let c = &mut should[0];
            let mut d = c.terms[0].cur.doc();
            while d != TERMINATED {
                if ctx.tick() {
                    break;
                }
                ctx.stats.candidates += 1;
                if top.full() {
                    let thr = top.threshold();
                    if c.ub * MARGIN <= thr {
                        break;
                    }
                    let (bound, until) = c.block_bound(d, &bm25, avgdl);
                    if bound * MARGIN <= thr {
                        ctx.stats.pruned += 1;
                        d = c.terms[0].cur.seek(until.saturating_add(1))?;
                        continue;
                    }
                }
                if params.filter.is_none_or(|f| f(d)) {
                    let mut score = 0.0f32;
                    c.add_score(&mut score, &bm25, doc_len(d)?, avgdl);
                    ctx.stats.scored += 1;
                    top.push(Hit { doc: d, score });
                }
                d = c.terms[0].cur.advance()?;
            }
        } else {
            // Block-max MaxScore over the should clauses. Block bounds hold up to the first block
            // end they saw; with an unchanged threshold the check would fail again before it, so
            // it is repeated only past it or when the threshold has risen.
            let mut checked_until = 0u32;
            let mut checked_thr = f32::NEG_INFINITY;
            // Clauses by ascending bound, ties in clause order: an insertion sort (few clauses;
            // one less sort routine in the wasm build).
            let mut order: Vec<usize> = (0..should.len()).collect();
            for i in 1..order.len() {
                let mut j = i;
                while j > 0 && should[order[j - 1]].ub.total_cmp(&should[order[j]].ub).is_gt() {
                    order.swap(j - 1, j);
                    j -= 1;
                }
            }
            let mut prefix = Vec::with_capacity(order.len());
            let mut acc = 0.0f32;
            for &c in &order {
                acc += should[c].ub;
                prefix.push(acc);
            }
            loop {
                if ctx.tick() {
                    break;
                }
                let thr = top.threshold();
                let ne = if top.full() { prefix.iter().take_while(|&&p| p * MARGIN <= thr).count() } else { 0 };
                if ne == order.len() {
                    break;
                }
                let d = order[ne..].iter().map(|&c| should[c].doc).min().unwrap_or(TERMINATED);
                if d == TERMINATED {
                    break;
                }
                ctx.stats.candidates += 1;
                if top.full() && (d > checked_until || thr > checked_thr) {
                    // Block-max skip: if no clause's current block can lift a document up to the
                    // first block end above the threshold, jump the essential lists past it.
                    let mut bound = 0.0f32;
                    let mut until = TERMINATED - 1;
                    for &c in &order {
                        let (b, u) = should[c].block_bound(d, &bm25, avgdl);
                        bound += b;
                        until = until.min(u);
                    }
                    if bound * MARGIN <= thr {
                        ctx.stats.pruned += 1;
                        let next = until.saturating_add(1).max(d + 1);
                        for &c in &order[ne..] {
                            should[c].seek(next, &mut ctx)?;
                        }
                        continue;
                    }
                    (checked_until, checked_thr) = (until, thr);
                }
                let dl = doc_len(d)?;
                let mut partial = 0.0f32;
                matched.iter_mut().for_each(|m| *m = false);
                for &c in &order[ne..] {
                    if should[c].doc == d {
                        matched[c] = true;
                        let mut s = 0.0f32;
                        should[c].add_score(&mut s, &bm25, dl, avgdl);
                        partial += s;
                    }
                }
                let mut keep = true;
                if ne > 0 {
                    if (partial + prefix[ne - 1]) * MARGIN <= thr {
                        keep = false;
                    } else {
                        let mut bm = 0.0f32;
                        for &c in &order[..ne] {
                            bm += should[c].block_bound(d, &bm25, avgdl).0;
                        }
                        keep = (partial + bm) * MARGIN > thr;
                    }
                }
                if keep && excluded(d, &mut must_not, params, &mut ctx)? {
                    keep = false;
                } else if keep {
                    for i in (0..ne).rev() {
                        if (partial + prefix[i]) * MARGIN <= thr {
                            keep = false;
                            break;
                        }
                        let c = order[i];
                        if should[c].seek(d, &mut ctx)? == d {
                            matched[c] = true;
                            let mut s = 0.0f32;
                            should[c].add_score(&mut s, &bm25, dl, avgdl);
                            partial += s;
                        }
                    }
                    if !keep {
                        ctx.stats.pruned += 1;
                    }
                } else {
                    ctx.stats.pruned += 1;
                }
                if ctx.expired {
                    break;
                }
                if keep {
                    // The score in canonical (clause) order; with one clause that is `partial`.
                    let score = if should.len() == 1 {
                        partial
                    } else {
                        let mut score = 0.0f32;
                        for (c, _) in should.iter().zip(&matched).filter(|(_, m)| **m) {
                            c.add_score(&mut score, &bm25, dl, avgdl);
                        }
                        score
                    };
                    ctx.stats.scored += 1;
                    top.push(Hit { doc: d, score });
                }
                for &c in &order[ne..] {
                    if should[c].doc == d {
                        should[c].seek(d + 1, &mut ctx)?;
                    }
                }
            }
        }
        Ok(SearchResult { hits: top.into_sorted(), partial: ctx.expired, stats: ctx.stats })
    }
}

/// Whether `d` is excluded by a `must_not` clause or the filter.
fn excluded(d: u32, must_not: &mut [ClauseState], params: &SearchParams, ctx: &mut Ctx) -> Result<bool, TextError> {
    if params.filter.is_some_and(|f| !f(d)) {
        return Ok(true);
    }
    for c in must_not {
        if c.seek(d, ctx)? == d {
            return Ok(true);
        }
    }
    Ok(false)
}

/// Whether the phrase of `terms` at `offsets` occurs in the document all their cursors are on.
fn phrase_match(terms: &mut [TermState], offsets: &[u32], ctx: &mut Ctx) -> Result<bool, TextError> {
    ctx.stats.phrase_checks += 1;
    let mut acc = u64::MAX;
    for (t, &o) in terms.iter_mut().zip(offsets) {
        let (b, i) = t.cur.block_position();
        let pl = t.pos.as_mut().ok_or(TextError::InvalidInput("phrase query on an index without positions"))?;
        acc &= pl.mask(b, i, t.cur.block_tfs())?.rotate_right(o % 64);
    }
    if acc == 0 {
        ctx.stats.mask_rejects += 1;
        return Ok(false);
    }
    if ctx.bufs.len() < terms.len() {
        ctx.bufs.resize(terms.len(), Vec::new());
    }
    for (t, buf) in terms.iter_mut().zip(&mut ctx.bufs) {
        let (b, i) = t.cur.block_position();
        if let Some(pl) = &mut t.pos {
            pl.positions(b, i, t.cur.block_tfs(), buf)?;
        }
    }
    let o0 = offsets[0];
    Ok(ctx.bufs[0].iter().any(|&p| {
        p >= o0
            && offsets[1..]
                .iter()
                .zip(&ctx.bufs[1..terms.len()])
                .all(|(&o, ps)| ps.binary_search(&(p - o0 + o)).is_ok())
    }))
}
