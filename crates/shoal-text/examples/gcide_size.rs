//! Postings size versus raw (u32 doc + u32 tf = 8 bytes per posting) on the GCIDE dictionary,
//! per codec, plus build time, the other sections and a decode pass.
//!
//! ```text
//! apt-get install -y dict-gcide
//! cargo run --release -p shoal-text --example gcide_size -- /usr/share/dictd/gcide.index /usr/share/dictd/gcide.dict.dz
//! ```
//!
//! One document per index entry: the headword line and definition text that the index points
//! at (dictd entries, `00-database-*` entries skipped). Many entries (alternate headwords) point
//! at the same text, so the run is repeated with each distinct text range once. The `.dz` file is gzip-readable and is
//! decompressed with `gzip -dc`.

use std::io::Read;
use std::process::{Command, ExitCode};
use std::time::Instant;

use shoal_text::postings::{Codec, TERMINATED};
use shoal_text::{BuildOptions, IndexBuilder, Query, SearchParams, TextIndex};

fn b64(s: &str) -> Option<usize> {
    const A: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    s.bytes().try_fold(0usize, |acc, c| A.iter().position(|&x| x == c).map(|d| acc * 64 + d))
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let index_path = args.get(1).map_or("/usr/share/dictd/gcide.index", |s| s.as_str());
    let dict_path = args.get(2).map_or("/usr/share/dictd/gcide.dict.dz", |s| s.as_str());
    let Ok(index) = std::fs::read_to_string(index_path) else {
        eprintln!("cannot read {index_path} (apt-get install dict-gcide)");
        return ExitCode::FAILURE;
    };
    let dict = if dict_path.ends_with(".dz") || dict_path.ends_with(".gz") {
        match Command::new("gzip").arg("-dc").arg(dict_path).output() {
            Ok(o) if o.status.success() => o.stdout,
            _ => {
                eprintln!("cannot decompress {dict_path}");
                return ExitCode::FAILURE;
            }
        }
    } else {
        let mut v = Vec::new();
        if std::fs::File::open(dict_path).and_then(|mut f| f.read_to_end(&mut v)).is_err() {
            eprintln!("cannot read {dict_path}");
            return ExitCode::FAILURE;
        }
        v
    };
    let mut docs: Vec<String> = Vec::new();
    let mut ranges = Vec::new();
    for line in index.lines() {
        let mut parts = line.split('\t');
        let (Some(head), Some(off), Some(len)) = (parts.next(), parts.next(), parts.next()) else { continue };
        if head.starts_with("00-database") || head.starts_with("00-gcide") || head.starts_with("00-web1913") {
            continue;
        }
        let (Some(off), Some(len)) = (b64(off), b64(len)) else { continue };
        let Some(bytes) = dict.get(off..off + len) else { continue };
        docs.push(String::from_utf8_lossy(bytes).into_owned());
        ranges.push((off, len));
    }
    // Alternate headwords point at the same text: the second corpus keeps each range once.
    let mut seen = std::collections::HashSet::new();
    let distinct: Vec<String> =
        docs.iter().zip(&ranges).filter(|(_, r)| seen.insert(**r)).map(|(d, _)| d.clone()).collect();
    for (name, docs) in [("every index entry", &docs), ("distinct text ranges", &distinct)] {
        let text_bytes: usize = docs.iter().map(|d| d.len()).sum();
        println!("GCIDE, {name}: {} documents, {:.1} MB of text", docs.len(), text_bytes as f64 / 1e6);
        report(docs);
    }
    ExitCode::SUCCESS
}

fn report(docs: &[String]) {
    for codec in [Codec::Varint, Codec::BitPacked] {
        let t = Instant::now();
        let mut b = IndexBuilder::new(BuildOptions { codec, ..Default::default() });
        for (i, d) in docs.iter().enumerate() {
            b.add(i as u32, &[d]).expect("ascending ids");
        }
        let s = b.finish().expect("build");
        let build = t.elapsed();
        let idx = TextIndex::open(&s.meta, &s.dict, &s.postings, &s.positions, &s.doc_lengths).expect("open");
        let (mut terms, mut postings) = (0u64, 0u64);
        let mut it = idx.dict().iter();
        let mut infos = Vec::new();
        while it.advance().expect("dict") {
            terms += 1;
            postings += u64::from(it.info().doc_freq);
            infos.push(it.info());
        }
        let raw = postings * 8;
        // Decode every list once.
        let t = Instant::now();
        let mut sum = 0u64;
        for info in &infos {
            let mut c = idx.postings(info).expect("postings");
            while c.doc() != TERMINATED {
                sum = sum.wrapping_add(u64::from(c.doc()) + u64::from(c.tf()));
                c.advance().expect("decode");
            }
        }
        let dec = t.elapsed().as_secs_f64();
        std::hint::black_box(sum);
        println!(
            "{codec:?}: {terms} terms, {postings} postings; postings {:.2} MB = {:.1}% of raw {:.2} MB ({:.2} bytes/posting); \
             dict {:.2} MB, positions {:.2} MB, doc lengths {:.2} MB; build {:.1} s; full decode {:.0} M postings/s",
            s.postings.len() as f64 / 1e6,
            100.0 * s.postings.len() as f64 / raw as f64,
            raw as f64 / 1e6,
            s.postings.len() as f64 / postings as f64,
            s.dict.len() as f64 / 1e6,
            s.positions.len() as f64 / 1e6,
            s.doc_lengths.len() as f64 / 1e6,
            build.as_secs_f64(),
            postings as f64 / dec / 1e6,
        );
        if codec == Codec::BitPacked {
            latency(&idx, docs);
        }
        let q = Query::parse(&idx.analyzer(), "\"domestic animal\" +milk");
        let r = idx.search(0, &q, &SearchParams::default()).expect("search");
        if let Some(h) = r.hits.first() {
            let head: String = docs[h.doc as usize].lines().next().unwrap_or("").chars().take(60).collect();
            println!("  sanity: phrase query top hit doc {} ({head}), {} hits", h.doc, r.hits.len());
        }
    }
}

/// Top-10 latency over 1,000 queries of each kind, words taken from random entries (seeded).
fn latency(idx: &TextIndex, docs: &[String]) {
    let a = idx.analyzer();
    let mut x = 0x9e3779b97f4a7c15u64;
    let mut rnd = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut sets: [(&str, Vec<String>); 4] =
        [("4-word OR", Vec::new()), ("2-word AND", Vec::new()), ("2-word phrase", Vec::new()), ("1 word", Vec::new())];
    while sets.iter().any(|s| s.1.len() < 1000) {
        let d = &docs[(rnd() % docs.len() as u64) as usize];
        let words: Vec<String> = a.tokens(d).into_iter().map(|t| t.text).skip(3).take(4).collect();
        if words.len() < 4 {
            continue;
        }
        let q = [
            words.join(" "),
            format!("+{} +{}", words[0], words[2]),
            format!("\"{} {}\"", words[1], words[2]),
            words[3].clone(),
        ];
        for (s, q) in sets.iter_mut().zip(q) {
            if s.1.len() < 1000 {
                s.1.push(q);
            }
        }
    }
    for (name, qs) in &sets {
        let mut times = Vec::with_capacity(qs.len());
        let mut hits = 0usize;
        let (mut cand, mut scored) = (0u64, 0u64);
        for q in qs {
            let t = Instant::now();
            let q = Query::parse(&a, q);
            let r = idx.search(0, &q, &SearchParams::default()).expect("search");
            times.push(t.elapsed().as_secs_f64() * 1e6);
            hits += r.hits.len();
            cand += r.stats.candidates;
            scored += r.stats.scored;
        }
        times.sort_by(f64::total_cmp);
        let mean = times.iter().sum::<f64>() / times.len() as f64;
        println!(
            "  {name:<14} top-10: mean {mean:>7.1} us, p50 {:>7.1} us, p99 {:>7.1} us ({:.1} hits, {:.0} candidates, {:.0} scored per query)",
            times[times.len() / 2],
            times[times.len() * 99 / 100],
            hits as f64 / qs.len() as f64,
            cand as f64 / qs.len() as f64,
            scored as f64 / qs.len() as f64,
        );
    }
}
