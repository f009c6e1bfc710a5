//! The executor against a naive exhaustive scorer: same ids, same score bits.

use proptest::prelude::*;
use shoal_text::postings::Codec;
use shoal_text::{
    Analyzer, Bm25, BuildOptions, Clause, Deadline, IndexBuilder, Query, SearchParams, Sections, TextIndex,
};
use std::cell::Cell;

const VOCAB: [&str; 14] = ["a", "b", "c", "d", "e", "f", "g", "h", "x", "y", "z", "Éa", "東京都", "w"];

/// Documents: (id, text), ids ascending with gaps.
fn corpus() -> impl Strategy<Value = Vec<(u32, String)>> {
    (proptest::collection::vec((0u32..4, proptest::collection::vec(0usize..VOCAB.len(), 0..24)), 1..400), 0usize..3)
        .prop_map(|(docs, skew)| {
            let mut id = 0u32;
            docs.into_iter()
                .map(|(gap, words)| {
                    id += gap;
                    let text: Vec<&str> =
                        words.iter().map(|&w| VOCAB[if skew > 0 && w > 7 { w % (3 + skew) } else { w }]).collect();
                    let d = (id, text.join(" "));
                    id += 1;
                    d
                })
                .collect()
        })
}

fn clause() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => (0usize..VOCAB.len()).prop_map(|w| VOCAB[w].to_string()),
        1 => proptest::collection::vec(0usize..8, 2..4).prop_map(|ws| format!("\"{}\"", ws.iter().map(|&w| VOCAB[w]).collect::<Vec<_>>().join(" "))),
    ]
}

fn query() -> impl Strategy<Value = String> {
    proptest::collection::vec((0u8..6, clause()), 1..6).prop_map(|cs| {
        cs.into_iter()
            .map(|(k, c)| match k {
                0 => format!("+{c}"),
                1 => format!("-{c}"),
                _ => c,
            })
            .collect::<Vec<_>>()
            .join(" ")
    })
}

fn build(docs: &[(u32, String)], codec: Codec) -> Sections {
    let mut b = IndexBuilder::new(BuildOptions { codec, ..Default::default() });
    for (id, text) in docs {
        b.add(*id, &[text]).unwrap();
    }
    b.finish().unwrap()
}

fn open(s: &Sections) -> TextIndex<'_> {
    TextIndex::open(&s.meta, &s.dict, &s.postings, &s.positions, &s.doc_lengths).unwrap()
}

/// Naive scorer over token lists: every document, every clause, same canonical order.
struct Naive {
    docs: Vec<(u32, Vec<Option<String>>)>, // tokens by position
    n: u32,
    avgdl: f32,
}

impl Naive {
    fn new(docs: &[(u32, String)], a: &Analyzer) -> Naive {
        let mut out = Vec::new();
        let mut total = 0u64;
        for (id, text) in docs {
            let toks = a.tokens(text);
            total += toks.len() as u64;
            let mut by_pos = vec![None; toks.iter().map(|t| t.position as usize + 1).max().unwrap_or(0)];
            for t in toks {
                by_pos[t.position as usize] = Some(t.text);
            }
            out.push((*id, by_pos));
        }
        let n = docs.len() as u32;
        let avgdl = total as f32 / n as f32;
        Naive { docs: out, n, avgdl: if avgdl > 0.0 { avgdl } else { 1.0 } }
    }

    fn tf(toks: &[Option<String>], t: &str) -> u32 {
        toks.iter().filter(|x| x.as_deref() == Some(t)).count() as u32
    }

    fn matches(toks: &[Option<String>], c: &Clause) -> bool {
        match c {
            Clause::Term(t) => Self::tf(toks, t) > 0,
            Clause::Phrase(p) => (0..toks.len()).any(|s| {
                p.iter().all(|(t, o)| toks.get(s + *o as usize).and_then(|x| x.as_deref()) == Some(t.as_str()))
            }),
        }
    }

    fn search(&self, q: &Query, bm25: &Bm25, k: usize, filter: &dyn Fn(u32) -> bool) -> Vec<(u32, u32)> {
        let mut dfs = std::collections::HashMap::new();
        for c in q.must.iter().chain(&q.should) {
            for (t, _) in c.terms() {
                dfs.entry(t.to_string())
                    .or_insert_with(|| self.docs.iter().filter(|(_, d)| Self::tf(d, t) > 0).count() as u32);
            }
        }
        let df = |t: &str| dfs[t];
        let mut hits = Vec::new();
        for (id, toks) in &self.docs {
            let ok = q.must.iter().all(|c| Self::matches(toks, c))
                && !q.must_not.iter().any(|c| Self::matches(toks, c))
                && (!q.must.is_empty() || q.should.iter().any(|c| Self::matches(toks, c)))
                && filter(*id);
            if !ok || q.is_empty() {
                continue;
            }
            let dl = toks.iter().filter(|t| t.is_some()).count() as u32;
            let mut score = 0.0f32;
            for c in q.must.iter().chain(q.should.iter().filter(|c| Self::matches(toks, c))) {
                for (t, _) in c.terms() {
                    score += bm25.term_score(Bm25::idf(self.n, df(t)), Self::tf(toks, t), dl, self.avgdl);
                }
            }
            hits.push((*id, score));
        }
        hits.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        hits.truncate(k);
        hits.into_iter().map(|(d, s)| (d, s.to_bits())).collect()
    }
}

fn codec() -> impl Strategy<Value = Codec> {
    prop_oneof![Just(Codec::Varint), Just(Codec::BitPacked)]
}

proptest! {
    #[test]
    fn top_k_equals_naive(docs in corpus(), queries in proptest::collection::vec(query(), 1..6), k in 0usize..25, codec in codec(),
                          k1 in prop_oneof![Just(1.2f32), 0.0f32..3.0], b in prop_oneof![Just(0.75f32), 0.0f32..=1.0], filter_mod in 0u32..4) {
        let s = build(&docs, codec);
        let idx = open(&s);
        let a = idx.analyzer();
        let naive = Naive::new(&docs, &a);
        let bm25 = Bm25 { k1, b };
        let filter = move |d: u32| filter_mod == 0 || !d.is_multiple_of(filter_mod + 1);
        for qs in &queries {
            let q = Query::parse(&a, qs);
            let want = naive.search(&q, &bm25, k, &filter);
            let params = SearchParams {
                k,
                bm25,
                filter: if filter_mod == 0 { None } else { Some(&filter) },
                deadline: None,
                corpus: None,
            };
            let got = idx.search(0, &q, &params).unwrap();
            prop_assert!(!got.partial);
            let got: Vec<(u32, u32)> = got.hits.iter().map(|h| (h.doc, h.score.to_bits())).collect();
            prop_assert_eq!(got, want, "query {:?}", qs);
        }
    }

    #[test]
    fn phrase_results_equal_token_substring_check(docs in corpus(), words in proptest::collection::vec(0usize..8, 2..4)) {
        let s = build(&docs, Codec::BitPacked);
        let idx = open(&s);
        let a = idx.analyzer();
        let phrase: Vec<&str> = words.iter().map(|&w| VOCAB[w]).collect();
        let q = Query::parse(&a, &format!("\"{}\"", phrase.join(" ")));
        let got = idx.search(0, &q, &SearchParams { k: usize::MAX >> 8, ..Default::default() }).unwrap();
        let mut got: Vec<u32> = got.hits.iter().map(|h| h.doc).collect();
        got.sort_unstable();
        // Substring of the token sequence (the analyser adds no gaps for this vocabulary).
        let want: Vec<u32> = docs.iter().filter(|(_, t)| {
            let toks: Vec<String> = a.tokens(t).into_iter().map(|t| t.text).collect();
            let p: Vec<String> = phrase.iter().flat_map(|w| a.tokens(w)).map(|t| t.text).collect();
            toks.windows(p.len()).any(|w| w == &p[..])
        }).map(|d| d.0).collect();
        prop_assert_eq!(got, want);
    }

    #[test]
    fn deadline_returns_valid_partial_results(docs in corpus(), qs in query(), budget in 0u64..40) {
        let s = build(&docs, Codec::BitPacked);
        let idx = open(&s);
        let a = idx.analyzer();
        let q = Query::parse(&a, &qs);
        let ticks = Cell::new(0u64);
        let clock = || { ticks.set(ticks.get() + 10); ticks.get() };
        let deadline = Deadline::after(&clock, budget);
        let got = idx.search(0, &q, &SearchParams { k: 5, deadline: Some(deadline), ..Default::default() }).unwrap();
        let full = idx.search(0, &q, &SearchParams { k: usize::MAX >> 8, ..Default::default() }).unwrap();
        // Every partial hit carries its true score, and hits are ordered.
        for h in &got.hits {
            let f = full.hits.iter().find(|x| x.doc == h.doc);
            prop_assert_eq!(f.map(|x| x.score.to_bits()), Some(h.score.to_bits()));
        }
        prop_assert!(got.hits.windows(2).all(|w| w[0].score > w[1].score || (w[0].score == w[1].score && w[0].doc < w[1].doc)));
        if !got.partial {
            prop_assert_eq!(&got.hits[..], &full.hits[..full.hits.len().min(5)]);
        }
    }

    #[test]
    fn corrupt_sections_give_errors_not_panics(docs in corpus(), which in 0usize..5, flips in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..4), cut in any::<usize>(), qs in query()) {
        let mut s = build(&docs, Codec::BitPacked);
        let sec = match which { 0 => &mut s.meta, 1 => &mut s.dict, 2 => &mut s.postings, 3 => &mut s.positions, _ => &mut s.doc_lengths };
        if !sec.is_empty() {
            for (at, x) in flips { let n = sec.len(); sec[at % n] ^= x; }
            let c = cut % (sec.len() * 4 + 1);
            if c < sec.len() { sec.truncate(c); }
        }
        if let Ok(idx) = TextIndex::open(&s.meta, &s.dict, &s.postings, &s.positions, &s.doc_lengths) {
            let q = Query::parse(&Analyzer::default(), &qs);
            let _ = idx.search(0, &q, &SearchParams::default());
            let _ = idx.search(0, &q, &SearchParams { k: 1000, ..Default::default() });
        }
    }
}

#[test]
fn multiple_fields_and_prefix_lookup() {
    let mut b = IndexBuilder::new(BuildOptions { fields: 2, ..Default::default() });
    b.add(3, &["apple pie", "fruit dessert"]).unwrap();
    b.add(7, &["apply now"]).unwrap();
    assert!(b.add(7, &["again"]).is_err());
    assert!(b.add(8, &["a", "b", "c"]).is_err());
    let s = b.finish().unwrap();
    let idx = open(&s);
    assert_eq!(idx.meta().doc_slots, 8);
    assert_eq!(idx.meta().doc_count, 2);
    assert_eq!(idx.doc_len(0, 3), Some(2));
    assert_eq!(idx.doc_len(1, 7), Some(0));
    assert_eq!(idx.doc_len(0, 5), Some(0));
    let mut p = idx.prefix(0, "app").unwrap();
    let mut keys = Vec::new();
    while p.advance().unwrap() {
        keys.push(String::from_utf8(p.key()[1..].to_vec()).unwrap());
    }
    assert_eq!(keys, ["apple", "apply"]);
    let q = Query::parse(&idx.analyzer(), "fruit");
    assert!(idx.search(0, &q, &SearchParams::default()).unwrap().hits.is_empty());
    assert_eq!(idx.search(1, &q, &SearchParams::default()).unwrap().hits.len(), 1);
    assert!(idx.search(0, &q, &SearchParams { bm25: Bm25 { k1: -1.0, b: 0.5 }, ..Default::default() }).is_err());
}

#[test]
fn phrase_without_positions_is_an_error() {
    let mut b = IndexBuilder::new(BuildOptions { positions: false, ..Default::default() });
    b.add(0, &["new york city"]).unwrap();
    let s = b.finish().unwrap();
    assert!(s.positions.is_empty());
    let idx = open(&s);
    let a = idx.analyzer();
    assert!(idx.search(0, &Query::parse(&a, "\"new york\""), &SearchParams::default()).is_err());
    assert_eq!(idx.search(0, &Query::parse(&a, "york"), &SearchParams::default()).unwrap().hits.len(), 1);
}

#[test]
fn build_is_deterministic() {
    let docs: Vec<(u32, String)> = (0..500).map(|i| (i * 2, format!("w{} w{} common {}", i % 17, i % 5, i))).collect();
    assert_eq!(build(&docs, Codec::BitPacked), build(&docs, Codec::BitPacked));
}

fn zipf_corpus() -> Vec<(u32, String)> {
    let mut docs = Vec::new();
    let mut x = 12345u64;
    for i in 0..20_000u32 {
        let mut words = Vec::new();
        for _ in 0..(5 + (i % 30)) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            // Zipf-like: low ranks frequent.
            let r = (x % 1000) as f64 / 1000.0;
            words.push(format!("t{}", (r * r * r * 300.0) as u32));
        }
        docs.push((i, words.join(" ")));
    }
    docs
}

struct Big {
    docs: Vec<(u32, String)>,
    sections: Sections,
    naive: Naive,
}

fn big() -> &'static Big {
    static BIG: std::sync::OnceLock<Big> = std::sync::OnceLock::new();
    BIG.get_or_init(|| {
        let docs = zipf_corpus();
        let sections = build(&docs, Codec::BitPacked);
        let naive = Naive::new(&docs, &Analyzer::default());
        Big { docs, sections, naive }
    })
}

fn zipf_query() -> impl Strategy<Value = String> {
    let term = prop_oneof![0u32..12, 0u32..300].prop_map(|t| format!("t{t}"));
    let clause = prop_oneof![
        4 => term.clone(),
        1 => proptest::collection::vec(0u32..6, 2..4).prop_map(|ts| format!("\"{}\"", ts.iter().map(|t| format!("t{t}")).collect::<Vec<_>>().join(" "))),
    ];
    proptest::collection::vec((0u8..8, clause), 1..6).prop_map(|cs| {
        cs.into_iter()
            .map(|(k, c)| match k {
                0 => format!("+{c}"),
                1 => format!("-{c}"),
                _ => c,
            })
            .collect::<Vec<_>>()
            .join(" ")
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// Heavy pruning (20,000 documents, multi-block lists) stays exact.
    #[test]
    fn top_k_equals_naive_on_a_large_corpus(qs in zipf_query(), k in 1usize..30, k1 in 0.0f32..3.0, b in 0.0f32..=1.0) {
        let big = big();
        let idx = open(&big.sections);
        let q = Query::parse(&idx.analyzer(), &qs);
        let bm25 = Bm25 { k1, b };
        let got = idx.search(0, &q, &SearchParams { k, bm25, ..Default::default() }).unwrap();
        let got: Vec<(u32, u32)> = got.hits.iter().map(|h| (h.doc, h.score.to_bits())).collect();
        prop_assert_eq!(got, big.naive.search(&q, &bm25, k, &|_| true), "{}", qs);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// Two-term conjunctions (the block-merge intersection), with and without `must_not` and a
    /// filter, on the large corpus.
    #[test]
    fn two_term_conjunctions_equal_naive(a in prop_oneof![0u32..12, 0u32..300], b in prop_oneof![0u32..12, 0u32..300], not in proptest::option::of(0u32..40), k in 1usize..30, m in 0u32..4) {
        let big = big();
        let idx = open(&big.sections);
        let qs = match not { Some(n) => format!("+t{a} +t{b} -t{n}"), None => format!("+t{a} +t{b}") };
        let q = Query::parse(&idx.analyzer(), &qs);
        let filter = move |d: u32| m == 0 || !d.is_multiple_of(m + 1);
        let got = idx.search(0, &q, &SearchParams { k, filter: Some(&filter), ..Default::default() }).unwrap();
        let got: Vec<(u32, u32)> = got.hits.iter().map(|h| (h.doc, h.score.to_bits())).collect();
        prop_assert_eq!(got, big.naive.search(&q, &Bm25::default(), k, &filter), "{}", qs);
    }
}

/// Pruning, skipping and the mask prefilter must all do work on the large corpus.
#[test]
fn pruning_and_prefilter_do_work_and_stay_exact() {
    let big = big();
    let idx = open(&big.sections);
    let a = idx.analyzer();
    let naive = &big.naive;
    assert_eq!(big.docs.len(), 20_000);
    let bm25 = Bm25::default();
    let mut pruned = 0;
    let mut mask_rejects = 0;
    for qs in ["t0 t1 t2 t250", "t3 t200 t7 t299 t1", "+t0 t5 t100", "\"t0 t1\" t9", "+\"t2 t3\" -t4", "t150 t151 t152"]
    {
        let q = Query::parse(&a, qs);
        let got = idx.search(0, &q, &SearchParams { k: 10, ..Default::default() }).unwrap();
        pruned += got.stats.pruned;
        mask_rejects += got.stats.mask_rejects;
        let got: Vec<(u32, u32)> = got.hits.iter().map(|h| (h.doc, h.score.to_bits())).collect();
        assert_eq!(got, naive.search(&q, &bm25, 10, &|_| true), "{qs}");
    }
    assert!(pruned > 1000, "pruned {pruned}");
    assert!(mask_rejects > 100, "mask rejects {mask_rejects}");
    // A deadline that has already passed gives a partial, empty result.
    let clock = || 100u64;
    let q = Query::parse(&a, "t0 t1");
    let res = idx
        .search(
            0,
            &q,
            &SearchParams { deadline: Some(Deadline { clock: &clock, at_micros: 50 }), ..Default::default() },
        )
        .unwrap();
    assert!(res.partial && res.hits.is_empty());
    // A clock that runs out midway: partial, with correct scores for what it found.
    let t = Cell::new(0u64);
    let clock = || {
        t.set(t.get() + 1);
        t.get()
    };
    let res =
        idx.search(0, &q, &SearchParams { deadline: Some(Deadline::after(&clock, 20)), ..Default::default() }).unwrap();
    assert!(res.partial && !res.hits.is_empty(), "{:?}", res.stats);
}
