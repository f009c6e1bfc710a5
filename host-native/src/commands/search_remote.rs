//! `shoal search http://…/segment.shoal` (or `s3://…/manifest.json`, a set): a segment or a
//! segment set searched by byte ranges, without downloading it (`crate::remote`).

use std::fmt::Write as _;
use std::path::Path;
use std::time::Instant;

use shoal_core::SearchRequest;

use super::search::{SearchArgs, apply_flags, parse_vector, read_truth, table};
use super::{ms, print};
use crate::remote::{DiskCache, DiskCached, ReadOptions, RemoteCollection, RemoteSetReader, Trip, source_of};
use crate::{HostError, input::VectorFile};
use shoal_core::SearchResponse;

/// Runs `shoal search` on the segment at `location`.
pub fn run(args: &SearchArgs, location: &str, filter: Option<serde_json::Value>) -> Result<(), HostError> {
    let q = &args.query;
    if q.query_id.is_some() || q.words.is_some() {
        return Err(HostError::Usage(
            "--query-id and --words read a point's stored vector: not from a segment read by ranges".into(),
        ));
    }
    if args.labels.is_some() {
        return Err(HostError::Usage("--labels: not with a segment read by ranges".into()));
    }
    let t = Instant::now();
    let mut col = Reader::open(args, location)?;
    match args.merge_gap {
        Some(gap) => col.set_merge_gap(gap),
        None if args.multipart_ranges => col.set_merge_gap(crate::remote::MULTIPART_MERGE_GAP),
        None => {}
    }
    let open_time = t.elapsed();
    eprintln!("open: {:.3} ms, {}", ms(open_time), cost(col.opened()));
    if let Some(path) = &q.queries {
        return batch(args, &col, path, filter);
    }
    let limit = args.limit.unwrap_or(10);
    let mut request = match (&q.vector, &q.request) {
        (Some(text), _) => SearchRequest::nearest(parse_vector(text)?, limit),
        (_, Some(json)) => {
            let mut r = SearchRequest::from_json(json)?;
            if let Some(limit) = args.limit {
                r.limit = limit;
            }
            r
        }
        _ => unreachable!("clap requires one query argument"),
    };
    apply_flags(args, &mut request, filter.as_ref())?;
    let t = Instant::now();
    let (res, trip) = col.search(&request)?;
    eprintln!("search: {:.3} ms, {}", ms(t.elapsed()), cost(trip));
    let mut out = String::new();
    if args.json {
        out.push_str(&res.to_json());
        out.push('\n');
    } else {
        table(&mut out, &res, None);
    }
    print(&out)
}

/// A segment or a set (a location ending in `.json` names a set's manifest). One per command:
/// its size does not matter.
#[allow(clippy::large_enum_variant)]
enum Reader {
    One(RemoteCollection),
    Set(RemoteSetReader),
}

impl Reader {
    fn open(args: &SearchArgs, location: &str) -> Result<Reader, HostError> {
        let path = location.split('?').next().unwrap_or(location);
        let disk = match &args.cache_dir {
            Some(dir) => Some(DiskCache::open(dir, args.cache_dir_bytes)?),
            None => None,
        };
        if path.ends_with(".json") {
            if args.bootstrap.is_some() {
                return Err(HostError::Usage("--bootstrap: a set's segments open with their manifest's hints".into()));
            }
            let options = ReadOptions { cache_bytes: args.cache_bytes, multipart: args.multipart_ranges, disk };
            return Ok(Reader::Set(RemoteSetReader::open(location, &options)?));
        }
        let prefix = args.bootstrap.unwrap_or(shoal_core::remote::OPEN_PREFIX);
        let mut source = source_of(location, args.multipart_ranges)?;
        if let Some(disk) = disk {
            source = Box::new(DiskCached::new(source, disk));
        }
        Ok(Reader::One(RemoteCollection::open_with(source, args.cache_bytes, prefix)?))
    }

    fn set_merge_gap(&mut self, gap: u64) {
        match self {
            Reader::One(c) => c.set_merge_gap(gap),
            Reader::Set(s) => s.set_merge_gap(gap),
        }
    }

    fn opened(&self) -> Trip {
        match self {
            Reader::One(c) => c.opened(),
            Reader::Set(s) => s.opened(),
        }
    }

    fn dim(&self) -> usize {
        match self {
            Reader::One(c) => c.segment().dim(),
            Reader::Set(s) => s.set().dim(),
        }
    }

    fn search(&self, req: &SearchRequest) -> Result<(SearchResponse, Trip), HostError> {
        match self {
            Reader::One(c) => c.search(req),
            Reader::Set(s) => s.search(req),
        }
    }
}

/// A trip as `W waves, R requests, B KB`.
fn cost(t: Trip) -> String {
    let disk =
        if t.disk_bytes > 0 { format!(" (+ {:.1} KB from disk)", t.disk_bytes as f64 / 1e3) } else { String::new() };
    format!("{} waves, {} requests, {:.1} KB{disk}", t.waves, t.requests, t.bytes as f64 / 1e3)
}

/// `--queries FILE [--truth FILE]`: every query in turn, twice — first with the cache filling
/// as it goes (the first query just after open), then again over the filled cache — with the
/// reads per query of each pass, the time per query, and recall against the exact neighbours.
fn batch(args: &SearchArgs, col: &Reader, path: &Path, filter: Option<serde_json::Value>) -> Result<(), HostError> {
    let dim = col.dim();
    let raw = crate::input::InputFormat::from_path(path) == Some(crate::input::InputFormat::F32);
    let file = VectorFile::open(path, None, raw.then_some(dim))?;
    if file.dim() != dim {
        return Err(HostError::input(path, format!("{}-d queries for a {dim}-d segment", file.dim())));
    }
    let k = args.limit.unwrap_or(10);
    let truth = match &args.truth {
        Some(t) => Some(read_truth(t, file.rows(), k)?),
        None => None,
    };
    let mut vectors = vec![0f32; file.rows() * dim];
    file.read_rows(0, &mut vectors)?;
    let mut out = String::new();
    for pass in ["first pass (cache filling)", "second pass (warm)"] {
        let (mut total, mut hits, mut worst) = (Trip::default(), 0usize, Trip::default());
        let mut times = Vec::with_capacity(file.rows());
        for (i, v) in vectors.chunks_exact(dim).enumerate() {
            let mut request = SearchRequest::nearest(v.to_vec(), k);
            apply_flags(args, &mut request, filter.as_ref())?;
            let t = Instant::now();
            let (res, trip) = col.search(&request)?;
            times.push(t.elapsed().as_secs_f64());
            total += trip;
            worst.waves = worst.waves.max(trip.waves);
            worst.requests = worst.requests.max(trip.requests);
            worst.bytes = worst.bytes.max(trip.bytes);
            if let Some((ids, width)) = &truth {
                let want = &ids[i * width..i * width + k];
                hits += res.points.iter().filter(|p| p.id.as_num().is_some_and(|id| want.contains(&id))).count();
            }
        }
        times.sort_by(f64::total_cmp);
        let n = file.rows().max(1) as f64;
        let _ = write!(
            out,
            "{pass}: {} queries, top {k}: per query {:.2} waves, {:.1} requests, {:.1} KB (at most {} waves, {} requests, {:.1} KB); p50 {:.3} ms",
            file.rows(),
            f64::from(total.waves) / n,
            f64::from(total.requests) / n,
            total.bytes as f64 / n / 1e3,
            worst.waves,
            worst.requests,
            worst.bytes as f64 / 1e3,
            1e3 * times.get(times.len() / 2).copied().unwrap_or(0.0),
        );
        if truth.is_some() {
            let _ = write!(out, "; recall@{k} {:.4}", hits as f64 / (k as f64 * n));
        }
        out.push('\n');
    }
    print(&out)
}
