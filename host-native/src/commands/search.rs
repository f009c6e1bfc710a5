//! `shoal search`: nearest neighbours in a segment file.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Instant;

use shoal_core::{Collection, MAX_LIMIT, PointId, SearchRequest, SearchResponse};

use super::{ms, print};
use crate::input::VectorFile;
use crate::storage::open_collection;
use crate::{HostError, npy};

impl SearchArgs {
    /// The segment file, given as the argument or with `--segment`.
    pub fn segment(&self) -> &Path {
        self.segment.as_deref().or(self.segment_flag.as_deref()).expect("clap requires one")
    }
}

/// Arguments of `shoal search`.
#[derive(Debug, clap::Args)]
pub struct SearchArgs {
    /// Segment file to search.
    #[arg(value_name = "SEGMENT", required_unless_present = "segment_flag")]
    pub segment: Option<PathBuf>,
    /// The segment as a flag: the older spelling, still accepted.
    #[arg(long = "segment", value_name = "SEGMENT", hide = true, conflicts_with = "segment")]
    pub segment_flag: Option<PathBuf>,
    /// What to search for (exactly one).
    #[command(flatten)]
    pub query: QueryArgs,
    /// Number of results [default: 10; for --request, the request's own limit].
    #[arg(long, value_name = "K")]
    pub limit: Option<usize>,
    /// Labels file: line N (from 0) is the label of id N; adds a label column.
    #[arg(long, value_name = "FILE")]
    pub labels: Option<PathBuf>,
    /// Print each response as one JSON line (the shape every Shoal host returns).
    #[arg(long)]
    pub json: bool,
    /// Scan every vector exactly even when the segment has an IVF index.
    #[arg(long)]
    pub exact: bool,
    /// IVF partitions to probe [default: the index's].
    #[arg(long, value_name = "N")]
    pub nprobe: Option<u32>,
    /// IVF candidates re-ranked exactly per result [default: the index's].
    #[arg(long, value_name = "N")]
    pub rerank: Option<u32>,
    /// Payload filter in Qdrant's JSON language, e.g.
    /// '{"must": [{"key": "year", "range": {"gte": 2000}}]}'.
    #[arg(long, value_name = "JSON")]
    pub filter: Option<String>,
    /// Print each result's payload.
    #[arg(long)]
    pub with_payload: bool,
    /// With --queries: the exact neighbours' ids, an .npy int32 or int64 matrix with a row per
    /// query and at least K columns (e.g. `gt.npy` of `bench/datasets.py`).
    #[arg(long, value_name = "FILE", requires = "queries")]
    pub truth: Option<PathBuf>,
    /// For a segment read by byte ranges (SEGMENT given as a URL: `http://…`, `https://…`,
    /// `s3://…`, `gs://…`, `az://…`, `file://…`): bytes of fetched ranges kept between searches.
    #[arg(long, value_name = "BYTES", default_value_t = 64 << 20)]
    pub cache_bytes: u64,
    /// For a segment read by byte ranges: bytes read first when opening it [default: 256 KiB];
    /// a format-2 segment's `bootstrap_len` (`shoal inspect` shows it) opens it in one request.
    #[arg(long, value_name = "BYTES")]
    pub bootstrap: Option<u64>,
    /// For a segment read by byte ranges: ranges of one query this close are fetched as one
    /// range (fewer requests, more bytes) [default: 16 KiB; 1 KiB with --multipart-ranges].
    #[arg(long, value_name = "BYTES")]
    pub merge_gap: Option<u64>,
    /// For a segment read over HTTP: each wave's ranges in one request (`Range: bytes=a-b,c-d`,
    /// answered as `multipart/byteranges` by nginx, Apache and most static servers; not S3).
    #[arg(long)]
    pub multipart_ranges: bool,
    /// For a segment read by byte ranges: a folder where fetched bytes are also kept on disk,
    /// for later searches (checked when read; per object version).
    #[arg(long, value_name = "DIR")]
    pub cache_dir: Option<PathBuf>,
    /// The most bytes kept in `--cache-dir`.
    #[arg(long, value_name = "BYTES", default_value_t = 4 << 30, requires = "cache_dir")]
    pub cache_dir_bytes: u64,
}

/// The query of `shoal search`: one of these.
#[derive(Debug, clap::Args)]
#[group(required = true, multiple = false)]
pub struct QueryArgs {
    /// Query vector, comma-separated: "0.1,0.2,...".
    #[arg(long, value_name = "FLOATS", allow_hyphen_values = true)]
    pub vector: Option<String>,
    /// Use the stored vector of point ID as the query; the point itself is left out.
    #[arg(long, value_name = "ID")]
    pub query_id: Option<u64>,
    /// A full JSON search request, e.g. '{"vector": [0.1, 0.2], "limit": 5}'.
    #[arg(long, value_name = "JSON")]
    pub request: Option<String>,
    /// Like --query-id, with the id of WORD's line in --labels (comma-separated for several).
    #[arg(long, value_name = "WORD", requires = "labels", value_delimiter = ',')]
    pub words: Option<Vec<String>>,
    /// A batch of query vectors (.npy, .fvecs, or raw f32 of the segment's dimension): prints
    /// the queries per second (one query at a time, median of 3 timed passes after a warm-up)
    /// and latency percentiles instead of results; with --truth, recall@K too.
    #[arg(long, value_name = "FILE")]
    pub queries: Option<PathBuf>,
}

/// The segment argument when it names a segment to read by byte ranges: a URL (`http://…`,
/// `https://…`, `s3://…`, `gs://…`, `az://…`, `file://…`; another scheme gets its error from
/// `source_of`).
fn remote_location(segment: &Path) -> Option<&str> {
    let s = segment.to_str()?;
    s.split_once("://")
        .is_some_and(|(scheme, _)| !scheme.is_empty() && scheme.bytes().all(|b| b.is_ascii_alphanumeric()))
        .then_some(s)
}

/// Whether the file at `path` is a segment in format 2 (its header says so; anything else,
/// unreadable files included, is left to the format-1 open and its errors).
fn laid_out_for_ranges(path: &Path) -> bool {
    use std::io::Read as _;
    let mut head = [0u8; 12];
    let read = std::fs::File::open(path).and_then(|mut f| f.read_exact(&mut head));
    read.is_ok()
        && head[..8] == shoal_format::MAGIC
        && u32::from_le_bytes([head[8], head[9], head[10], head[11]]) == shoal_format::VERSION_RANGES
}

/// One search to run.
struct Query {
    /// How to name it in a heading ("king", "id 42").
    name: Option<String>,
    request: SearchRequest,
    /// The query point, left out of its own results.
    exclude: Option<u64>,
}

/// Runs `shoal search`.
pub fn run(args: &SearchArgs) -> Result<(), HostError> {
    if args.query.queries.is_some() && (args.json || args.with_payload || args.labels.is_some()) {
        return Err(HostError::Usage("--queries prints a summary: not with --json, --with-payload or --labels".into()));
    }
    // The arguments are checked before any file is read.
    let filter = match &args.filter {
        Some(text) => Some(
            serde_json::from_str::<serde_json::Value>(text)
                .map_err(|e| HostError::Usage(format!("--filter is not valid JSON: {e}")))?,
        ),
        None => None,
    };
    if let Some(text) = &args.query.vector {
        parse_vector(text)?;
    }
    if let Some(json) = &args.query.request {
        SearchRequest::from_json(json)?;
    }
    if let Some(location) = remote_location(args.segment()) {
        return super::search_remote::run(args, location, filter);
    }
    if laid_out_for_ranges(args.segment()) || args.segment().extension().is_some_and(|e| e == "json") {
        // Format 2 is read by ranges, from a local file too; so is a set's manifest.
        let path = args.segment().to_str().ok_or_else(|| HostError::Usage("the segment path is not UTF-8".into()))?;
        return super::search_remote::run(args, path, filter);
    }
    let t = Instant::now();
    let col = open_collection(args.segment())?;
    let open_time = t.elapsed();
    if let Some(path) = &args.query.queries {
        return batch(args, &col, path, filter);
    }
    let labels_text = match &args.labels {
        Some(path) => Some(std::fs::read_to_string(path).map_err(|e| HostError::io(path, "read labels", e))?),
        None => None,
    };
    let labels: Option<Vec<&str>> = labels_text.as_deref().map(|t| t.lines().collect());
    let queries = queries(args, &col, labels.as_deref(), filter)?;
    let mut out = String::new();
    for (i, q) in queries.iter().enumerate() {
        let t = Instant::now();
        let mut res = col.search(&q.request)?;
        let took = t.elapsed();
        if let Some(id) = q.exclude {
            res.points.retain(|p| p.id != id);
            res.points.truncate(args.limit.unwrap_or(10));
        }
        eprintln!(
            "search{}: {:.3} ms ({} points scanned{}; open {:.3} ms)",
            q.name.as_deref().map(|n| format!(" {n}")).unwrap_or_default(),
            ms(took),
            res.stats.scanned,
            if res.stats.exact { ", exact" } else { "" },
            ms(open_time)
        );
        if args.json {
            out.push_str(&res.to_json());
            out.push('\n');
        } else {
            if let (Some(name), true) = (&q.name, queries.len() > 1) {
                if i > 0 {
                    out.push('\n');
                }
                let _ = writeln!(out, "# {name}");
            }
            table(&mut out, &res, labels.as_deref());
        }
    }
    print(&out)
}

/// The searches the arguments ask for, with the index settings of `--exact`, `--nprobe` and
/// `--rerank` applied.
fn queries(
    args: &SearchArgs,
    col: &Collection,
    labels: Option<&[&str]>,
    filter: Option<serde_json::Value>,
) -> Result<Vec<Query>, HostError> {
    let mut out = base_queries(args, col, labels)?;
    for q in &mut out {
        apply_flags(args, &mut q.request, filter.as_ref())?;
    }
    Ok(out)
}

/// Applies `--filter`, `--with-payload`, `--exact`, `--nprobe` and `--rerank` to `request`,
/// then checks it.
pub(super) fn apply_flags(
    args: &SearchArgs,
    request: &mut SearchRequest,
    filter: Option<&serde_json::Value>,
) -> Result<(), HostError> {
    if let Some(f) = filter {
        if request.filter.is_some() {
            return Err(HostError::Usage("--filter and a filter inside --request: give one".into()));
        }
        request.filter = Some(f.clone());
    }
    request.with_payload |= args.with_payload;
    let p = &mut request.params;
    p.exact |= args.exact;
    p.nprobe = args.nprobe.or(p.nprobe);
    p.rerank = args.rerank.or(p.rerank);
    request.check()?;
    Ok(())
}

/// The searches the query arguments ask for.
fn base_queries(args: &SearchArgs, col: &Collection, labels: Option<&[&str]>) -> Result<Vec<Query>, HostError> {
    let q = &args.query;
    let limit = args.limit.unwrap_or(10);
    let by_id = |id: u64, name: String| -> Result<Query, HostError> {
        let vector = col.vector(PointId::Num(id)).ok_or_else(|| {
            let why = if col.codes_only() && col.contains(PointId::Num(id)) {
                "has no stored vector (codes-only segment)"
            } else {
                "is not in"
            };
            HostError::Usage(format!("id {id} {why} {}", args.segment().display()))
        })?;
        let mut request = SearchRequest::nearest(vector.to_vec(), limit);
        request.check()?;
        // Ask for one more: the query point itself comes back (first, for cosine) and is dropped.
        request.limit = (limit + 1).min(MAX_LIMIT);
        Ok(Query { name: Some(name), request, exclude: Some(id) })
    };
    if let Some(text) = &q.vector {
        let request = SearchRequest::nearest(parse_vector(text)?, limit);
        request.check()?;
        Ok(vec![Query { name: None, request, exclude: None }])
    } else if let Some(id) = q.query_id {
        Ok(vec![by_id(id, format!("id {id}"))?])
    } else if let Some(json) = &q.request {
        let mut request = SearchRequest::from_json(json)?;
        if let Some(limit) = args.limit {
            request.limit = limit;
            request.check()?;
        }
        Ok(vec![Query { name: None, request, exclude: None }])
    } else if let Some(words) = &q.words {
        let labels = labels.expect("clap requires --labels with --words");
        let path = args.labels.as_deref().unwrap_or(Path::new("labels"));
        words
            .iter()
            .map(|w| {
                let line = labels
                    .iter()
                    .position(|l| l == w)
                    .ok_or_else(|| HostError::Usage(format!("'{w}' is not a line of {}", path.display())))?;
                by_id(line as u64, w.clone())
            })
            .collect()
    } else {
        unreachable!("clap requires one of --vector, --query-id, --request, --words, --queries")
    }
}

/// `--queries FILE [--truth FILE]`: every query of the file, timed, and recall against the
/// exact neighbours when given.
fn batch(args: &SearchArgs, col: &Collection, path: &Path, filter: Option<serde_json::Value>) -> Result<(), HostError> {
    // Raw f32 has no dimension of its own: the segment's.
    let raw = crate::input::InputFormat::from_path(path) == Some(crate::input::InputFormat::F32);
    let file = VectorFile::open(path, None, raw.then_some(col.dim()))?;
    if file.dim() != col.dim() {
        return Err(HostError::input(path, format!("{}-d queries for a {}-d segment", file.dim(), col.dim())));
    }
    let k = args.limit.unwrap_or(10);
    let truth = match &args.truth {
        Some(t) => Some(read_truth(t, file.rows(), k)?),
        None => None,
    };
    let mut vectors = vec![0f32; file.rows() * file.dim()];
    file.read_rows(0, &mut vectors)?;
    let mut requests = Vec::with_capacity(file.rows());
    for v in vectors.chunks_exact(file.dim()) {
        let mut request = SearchRequest::nearest(v.to_vec(), k);
        apply_flags(args, &mut request, filter.as_ref())?;
        requests.push(request);
    }
    // A warm-up pass (its results give the recall), then three timed passes.
    let mut out = Vec::new();
    let mut hits = 0usize;
    for (i, r) in requests.iter().enumerate() {
        col.search_into(r, &mut out)?;
        if let Some((ids, width)) = &truth {
            let want = &ids[i * width..i * width + k];
            hits += out.iter().filter(|p| p.id.as_num().is_some_and(|id| want.contains(&id))).count();
        }
    }
    let mut passes = Vec::new();
    let mut latencies = Vec::with_capacity(requests.len());
    for pass in 0..3 {
        let t = Instant::now();
        for r in &requests {
            let q = Instant::now();
            col.search_into(r, &mut out)?;
            if pass == 2 {
                latencies.push(q.elapsed().as_secs_f64());
            }
        }
        passes.push(t.elapsed().as_secs_f64());
    }
    passes.sort_by(f64::total_cmp);
    latencies.sort_by(f64::total_cmp);
    let pct = |p: f64| 1e3 * latencies[((latencies.len() - 1) as f64 * p).round() as usize];
    let mut line = format!(
        "{} queries, top {k}: {:.0} QPS (one at a time, median of 3 passes), p50 {:.3} ms, p99 {:.3} ms",
        requests.len(),
        requests.len() as f64 / passes[1],
        pct(0.50),
        pct(0.99)
    );
    if truth.is_some() {
        let _ = write!(line, "; recall@{k} {:.4}", hits as f64 / (k * requests.len()) as f64);
    }
    print(&format!("{line}\n"))
}

/// The exact neighbours of `--truth`: `(ids row-major, ids per row)`, checked to have a row per
/// query and at least `k` columns.
pub(super) fn read_truth(path: &Path, queries: usize, k: usize) -> Result<(Vec<u64>, usize), HostError> {
    let bytes = std::fs::read(path).map_err(|e| HostError::io(path, "read", e))?;
    let (h, dtype) = npy::parse_header_of(&bytes, &["<i4", "<i8"]).map_err(|e| HostError::input(path, e))?;
    if h.rows != queries || h.dim < k {
        return Err(HostError::input(
            path,
            format!("shape ({}, {}): expected a row per query ({queries}) and at least {k} columns", h.rows, h.dim),
        ));
    }
    let width = if dtype == "<i4" { 4 } else { 8 };
    let data = bytes
        .get(h.data_offset..h.data_offset + h.rows * h.dim * width)
        .ok_or_else(|| HostError::input(path, "truncated: shorter than its shape"))?;
    let ids = data
        .chunks_exact(width)
        .map(|c| {
            if width == 4 {
                i32::from_le_bytes(c.try_into().unwrap()) as i64
            } else {
                i64::from_le_bytes(c.try_into().unwrap())
            }
        })
        .map(|id| u64::try_from(id).map_err(|_| HostError::input(path, format!("a negative id ({id})"))))
        .collect::<Result<Vec<u64>, HostError>>()?;
    Ok((ids, h.dim))
}

/// Parses "0.1,0.2,..." (brackets and spaces allowed).
pub(super) fn parse_vector(text: &str) -> Result<Vec<f32>, HostError> {
    let inner = text.trim().trim_start_matches('[').trim_end_matches(']');
    inner
        .split(|c: char| c == ',' || c.is_whitespace())
        .filter(|s| !s.is_empty())
        .enumerate()
        .map(|(i, s)| {
            s.parse::<f32>().map_err(|_| HostError::Usage(format!("--vector: element {i} ('{s}') is not a number")))
        })
        .collect()
}

/// Appends the `rank id score [label]` table of `res`.
pub(super) fn table(out: &mut String, res: &SearchResponse, labels: Option<&[&str]>) {
    let id_width = res.points.iter().map(|p| p.id.to_string().len()).max().unwrap_or(0).max(2);
    let _ = write!(out, "{:>4}  {:>id_width$}  {:>10}", "rank", "id", "score");
    if labels.is_some() {
        out.push_str("  label");
    }
    let payloads = res.points.iter().any(|p| p.payload.is_some());
    if payloads {
        out.push_str("  payload");
    }
    out.push('\n');
    for (rank, p) in res.points.iter().enumerate() {
        let _ = write!(out, "{:>4}  {:>id_width$}  {:>10.6}", rank + 1, p.id, p.score);
        if let Some(labels) = labels {
            let label =
                p.id.as_num().and_then(|i| usize::try_from(i).ok()).and_then(|i| labels.get(i)).copied().unwrap_or("");
            let _ = write!(out, "  {label}");
        }
        if let Some(payload) = p.payload.as_ref().filter(|_| payloads) {
            let _ = write!(out, "  {payload}");
        }
        out.push('\n');
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vectors_parse() {
        assert_eq!(parse_vector("0.5,-1,2e3").unwrap(), [0.5, -1.0, 2000.0]);
        assert_eq!(parse_vector("[0.5, -1, 2]").unwrap(), [0.5, -1.0, 2.0]);
        assert!(parse_vector("0.5,x").unwrap_err().to_string().contains("element 1 ('x')"));
    }
}
