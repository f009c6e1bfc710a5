//! Sparse-vector search on GCIDE, natively: the BM25 sparse vectors a LangChain or LlamaIndex
//! hybrid store writes (FastEmbed's `Qdrant/bm25`: per word its BM25 term-frequency weight,
//! `k1` 1.2, `b` 0.75; the collection's `idf` modifier supplies the IDF), queried with the
//! words of `bench/text.py prepare`'s queries (weight 1 each), top 10, single-threaded.
//! Latency per query kind with pruning (the default) and with `params.exact` (every row the
//! query's lists hold scored), the same collection, the results checked equal; the median of
//! 5 passes each, alternating. Writes `~/.cache/shoal/results/sparse-shoal.json`.
//!
//! `python3 bench/text.py prepare && cargo bench -p shoal-host --bench sparse`

use std::collections::HashMap;
use std::io::BufRead;
use std::time::Instant;

use serde_json::{Value, json};
use shoal_core::{Collection, CollectionConfig, Metric, PointId, SearchRequest, SparseSpec, SparseVector};

mod common;
use common::{cache, median, write_result};

/// Lower-case ASCII words of `text` (letters only), as the bench's queries were cut.
fn words(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !c.is_ascii_alphabetic()).filter(|w| !w.is_empty()).map(|w| w.to_ascii_lowercase())
}

/// The word ids of `text` and their counts, by id.
fn counts(text: &str, vocab: &mut HashMap<String, u32>) -> Vec<(u32, u32)> {
    let mut c: HashMap<u32, u32> = HashMap::new();
    for w in words(text) {
        let next = vocab.len() as u32;
        *c.entry(*vocab.entry(w).or_insert(next)).or_default() += 1;
    }
    let mut v: Vec<(u32, u32)> = c.into_iter().collect();
    v.sort_unstable();
    v
}

fn main() {
    let dir = cache().join("datasets/gcide-text");
    let file = std::fs::File::open(dir.join("docs.jsonl")).expect("run `python3 bench/text.py prepare` first");
    let docs: Vec<String> = std::io::BufReader::new(file)
        .lines()
        .map(|l| serde_json::from_str::<Value>(&l.unwrap()).unwrap()["text"].as_str().unwrap().to_string())
        .collect();
    let mut vocab = HashMap::new();
    let tf: Vec<Vec<(u32, u32)>> = docs.iter().map(|d| counts(d, &mut vocab)).collect();
    let avg_len = tf.iter().map(|t| t.iter().map(|x| x.1).sum::<u32>() as f64).sum::<f64>() / tf.len() as f64;
    let (k1, b) = (1.2f64, 0.75f64);
    let mut col = Collection::new(CollectionConfig { dim: 1, metric: Metric::Dot }).unwrap();
    col.set_sparse_vectors(vec![SparseSpec { name: "bm25".into(), idf: true }]).unwrap();
    let t = Instant::now();
    // Four segments of about 32k rows, as a server sealing every 32k points holds them.
    for chunk in (0..docs.len()).collect::<Vec<_>>().chunks(32_768) {
        let ids: Vec<PointId> = chunk.iter().map(|&i| PointId::Num(i as u64)).collect();
        let column: Vec<Option<SparseVector>> = chunk
            .iter()
            .map(|&i| {
                let len = tf[i].iter().map(|x| x.1).sum::<u32>() as f64;
                let (idx, val): (Vec<u32>, Vec<f32>) = tf[i]
                    .iter()
                    .map(|&(w, n)| {
                        let n = f64::from(n);
                        (w, (n * (k1 + 1.0) / (n + k1 * (1.0 - b + b * len / avg_len))) as f32)
                    })
                    .unzip();
                Some(SparseVector::new(&idx, &val).unwrap())
            })
            .collect();
        col.upsert_sparse(&ids, &vec![0.0; ids.len()], &[], &[column]).unwrap();
        col.seal();
    }
    eprintln!("sparse: {} documents, {} words, built in {:.1} s", docs.len(), vocab.len(), t.elapsed().as_secs_f64());

    let queries: Vec<Value> = serde_json::from_slice(&std::fs::read(dir.join("queries.json")).unwrap()).unwrap();
    let relevance: Vec<Value> = serde_json::from_slice(&std::fs::read(dir.join("relevance.json")).unwrap()).unwrap();
    // Kinds: one word, two words (the "and" queries' words), 4 to 8 words (the relevance
    // queries: words of a definition, repeats and unknown words dropped).
    let mut kinds: Vec<(&str, Vec<String>)> = Vec::new();
    for q in &queries {
        match q["kind"].as_str().unwrap() {
            "term" => kinds.push(("1 word", vec![q["q"].as_str().unwrap().into()])),
            "and" => kinds.push(("2 words", words(q["q"].as_str().unwrap()).collect())),
            _ => {}
        }
    }
    kinds.extend(relevance.iter().map(|r| ("4-8 words", words(r["q"].as_str().unwrap()).collect())));
    let request = |ws: &[String], exact: bool| {
        let mut ids: Vec<u32> = ws.iter().filter_map(|w| vocab.get(w).copied()).collect();
        ids.sort_unstable();
        ids.dedup();
        let q = json!({"sparse": {"indices": ids, "values": vec![1.0; ids.len()]}, "using": "bm25", "limit": 10,
                       "params": {"exact": exact}});
        SearchRequest::from_json(&q.to_string()).unwrap()
    };

    let mut rows = Vec::new();
    for kind in ["1 word", "2 words", "4-8 words"] {
        let lists: Vec<&Vec<String>> = kinds.iter().filter(|k| k.0 == kind).map(|k| &k.1).collect();
        let pruned: Vec<SearchRequest> = lists.iter().map(|ws| request(ws, false)).collect();
        let exact: Vec<SearchRequest> = lists.iter().map(|ws| request(ws, true)).collect();
        let terms = pruned.iter().map(|r| r.sparse.as_ref().map_or(0, |s| s.entries().len())).sum::<usize>();
        let terms = terms as f64 / lists.len() as f64;
        let (mut scanned, mut scanned_exact) = (0u64, 0u64);
        for (p, e) in pruned.iter().zip(&exact) {
            let (a, b) = (col.search(p).unwrap(), col.search(e).unwrap());
            assert_eq!(a.points, b.points, "pruning changed a result");
            scanned += a.stats.scanned;
            scanned_exact += b.stats.scanned;
        }
        let pass = |reqs: &[SearchRequest]| {
            let t = Instant::now();
            for r in reqs {
                std::hint::black_box(col.search(std::hint::black_box(r)).unwrap());
            }
            t.elapsed().as_secs_f64() * 1e6 / reqs.len() as f64
        };
        let (mut a, mut b) = (Vec::new(), Vec::new());
        for _ in 0..5 {
            a.push(pass(&pruned));
            b.push(pass(&exact));
        }
        let (a, b) = (median(a), median(b));
        println!(
            "sparse {kind:9}: {} queries ({terms:.1} words), pruned {a:8.1} µs/query, every row {b:8.1} µs/query: {:.2}x; rows summed {:.0} vs {:.0}",
            lists.len(),
            b / a,
            scanned as f64 / lists.len() as f64,
            scanned_exact as f64 / lists.len() as f64
        );
        rows.push(json!({"kind": kind, "queries": lists.len(), "words_mean": terms, "pruned_us": a, "exact_us": b, "speedup": b / a,
                         "scored_pruned": scanned as f64 / lists.len() as f64,
                         "scored_exact": scanned_exact as f64 / lists.len() as f64}));
    }
    write_result("sparse-shoal.json", &json!({"documents": docs.len(), "words": vocab.len(), "kinds": rows}));
}
