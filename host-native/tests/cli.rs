//! End-to-end tests of the `shoal` binary on files written to a temporary directory.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use shoal_core::{Collection, CollectionConfig, Metric, PointId, SearchRequest};
use shoal_testkit::TempDir;

/// Runs `shoal` with `args`.
fn shoal<S: AsRef<std::ffi::OsStr>>(args: &[S]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_shoal")).args(args).output().expect("run shoal")
}

fn stdout(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8(o.stderr.clone()).unwrap()
}

/// Asserts success and returns stdout.
fn ok(o: Output) -> String {
    assert!(o.status.success(), "shoal failed: {}\n{}", o.status, stderr(&o));
    assert!(!stderr(&o).contains("panicked"));
    stdout(&o)
}

/// Asserts exit code 1 with `needle` in the error message, and no panic; returns stderr.
fn fails(o: Output, needle: &str) -> String {
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "expected exit code 1, stderr: {err}");
    assert!(!err.contains("panicked"), "panic: {err}");
    assert!(err.starts_with("error: "), "error message: {err}");
    assert!(err.contains(needle), "expected {needle:?} in: {err}");
    err
}

/// Deterministic vectors with some structure (a few clusters), plus exact duplicates' worth of
/// ties: values in [-1, 1).
fn vectors(rows: usize, dim: usize, seed: u64) -> Vec<f32> {
    let mut s = seed;
    let mut next = move || {
        // SplitMix64.
        s = s.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = s;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    };
    let mut unit = move || (next() >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0;
    let centres: Vec<f32> = (0..8 * dim).map(|_| unit()).collect();
    (0..rows)
        .flat_map(|r| {
            let c = (r * 7) % 8;
            (0..dim).map(|j| centres[c * dim + j] + 0.25 * unit()).collect::<Vec<_>>()
        })
        .collect()
}

fn f32_bytes(data: &[f32]) -> Vec<u8> {
    data.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// An .npy file of the given version with header `dict` (padded to a multiple of 64).
fn npy_with_dict(version: u8, dict: &str, data: &[f32]) -> Vec<u8> {
    let len_size = if version == 1 { 2 } else { 4 };
    let mut header = dict.to_string();
    while !(8 + len_size + header.len() + 1).is_multiple_of(64) {
        header.push(' ');
    }
    header.push('\n');
    let mut out = b"\x93NUMPY".to_vec();
    out.extend_from_slice(&[version, 0]);
    if version == 1 {
        out.extend_from_slice(&(header.len() as u16).to_le_bytes());
    } else {
        out.extend_from_slice(&(header.len() as u32).to_le_bytes());
    }
    out.extend_from_slice(header.as_bytes());
    out.extend_from_slice(&f32_bytes(data));
    out
}

fn npy(version: u8, rows: usize, dim: usize, data: &[f32]) -> Vec<u8> {
    npy_with_dict(version, &format!("{{'descr': '<f4', 'fortran_order': False, 'shape': ({rows}, {dim}), }}"), data)
}

fn fvecs(dim: usize, data: &[f32]) -> Vec<u8> {
    data.chunks(dim)
        .flat_map(|row| {
            let mut rec = (dim as i32).to_le_bytes().to_vec();
            rec.extend_from_slice(&f32_bytes(row));
            rec
        })
        .collect()
}

fn write(path: &Path, bytes: &[u8]) {
    std::fs::write(path, bytes).unwrap();
}

fn metric_of(name: &str) -> Metric {
    Metric::parse(name).unwrap()
}

/// The segment the core writes in-process for the same data.
fn in_process(rows: usize, dim: usize, metric: &str, ids_from: u64, data: &[f32]) -> Collection {
    let mut col = Collection::new(CollectionConfig { dim, metric: metric_of(metric) }).unwrap();
    let ids: Vec<u64> = (0..rows as u64).map(|r| r + ids_from).collect();
    col.insert(&ids, data).unwrap();
    col.seal();
    col
}

const ROWS: usize = 300;
const DIM: usize = 17;

/// Builds a segment of `vectors(ROWS, DIM, 1)` with `metric`; returns its path.
fn build_npy(dir: &TempDir, metric: &str) -> (PathBuf, Vec<f32>) {
    let data = vectors(ROWS, DIM, 1);
    let input = dir.path(&format!("in-{metric}.npy"));
    write(&input, &npy(1, ROWS, DIM, &data));
    let out = dir.path(&format!("{metric}.shoal"));
    ok(shoal(&[
        "build".as_ref(),
        input.as_os_str(),
        "--metric".as_ref(),
        metric.as_ref(),
        "--out".as_ref(),
        out.as_os_str(),
    ]));
    (out, data)
}

#[test]
fn every_input_format_gives_the_same_segment() {
    let dir = TempDir::new("cli", "formats");
    let data = vectors(ROWS, DIM, 7);
    let inputs = [
        ("v1.npy", npy(1, ROWS, DIM, &data)),
        ("v2.npy", npy(2, ROWS, DIM, &data)),
        ("v3.npy", npy(3, ROWS, DIM, &data)),
        ("a.fvecs", fvecs(DIM, &data)),
        ("a.f32", f32_bytes(&data)),
        // Explicit --format overrides the (unknown) extension.
        ("a.vectors", f32_bytes(&data)),
    ];
    for metric in ["cosine", "dot", "l2"] {
        let expected = in_process(ROWS, DIM, metric, 5, &data).to_bytes().unwrap().to_vec();
        for (name, bytes) in &inputs {
            let input = dir.path(name);
            write(&input, bytes);
            let out = dir.path(&format!("{name}.{metric}.shoal"));
            let dim = DIM.to_string();
            let mut args = vec!["build", input.to_str().unwrap(), "--metric", metric];
            args.extend(["--ids-from", "5", "--out", out.to_str().unwrap(), "--quiet"]);
            if name.ends_with(".f32") || name.ends_with(".vectors") {
                args.extend(["--dim", &dim]);
            }
            if name.ends_with(".vectors") {
                args.extend(["--format", "f32"]);
            }
            let o = shoal(&args);
            assert!(stderr(&o).is_empty(), "--quiet prints nothing: {}", stderr(&o));
            ok(o);
            let got = std::fs::read(&out).unwrap();
            assert!(got == expected, "{name} ({metric}) differs from the in-process segment");
        }
    }
    // No temporary files left behind.
    assert!(dir.files().iter().all(|f| !f.ends_with(".tmp")), "{:?}", dir.files());
}

#[test]
fn search_matches_the_core_in_process() {
    let dir = TempDir::new("cli", "search");
    for metric in ["cosine", "dot", "l2"] {
        let (seg, data) = build_npy(&dir, metric);
        let col = in_process(ROWS, DIM, metric, 0, &data);
        let seg = seg.to_str().unwrap();
        let query = vectors(1, DIM, 99);
        let text: Vec<String> = query.iter().map(|x| format!("{x:?}")).collect();
        let text = text.join(",");

        // --vector, --json: exactly the core's response.
        let req = SearchRequest::nearest(query.clone(), 7);
        let expected = col.search(&req).unwrap().to_json();
        let out = ok(shoal(&["search", seg, "--vector", &text, "--limit", "7", "--json"]));
        assert_eq!(out.trim_end(), expected, "{metric}");

        // --request: the JSON shape of every host; --limit overrides the request's.
        let json = format!(r#"{{"vector": [{text}], "limit": 3, "offset": 2}}"#);
        let expected = col.search(&SearchRequest::from_json(&json).unwrap()).unwrap().to_json();
        assert_eq!(ok(shoal(&["search", seg, "--request", &json, "--json"])).trim_end(), expected);
        let mut req = SearchRequest::from_json(&json).unwrap();
        req.limit = 5;
        let expected = col.search(&req).unwrap().to_json();
        let out = ok(shoal(&["search", seg, "--request", &json, "--limit", "5", "--json"]));
        assert_eq!(out.trim_end(), expected);

        // --query-id: the stored vector as the query, the point itself left out.
        let id = 42u64;
        let mut res = col.search(&SearchRequest::nearest(col.vector(PointId::Num(id)).unwrap().to_vec(), 11)).unwrap();
        res.points.retain(|p| p.id != id);
        res.points.truncate(10);
        let out = ok(shoal(&["search", seg, "--query-id", "42", "--json"]));
        assert_eq!(out.trim_end(), res.to_json(), "{metric}");

        // The table: one line per result, ids in the core's order.
        let out = ok(shoal(&["search", seg, "--vector", &text, "--limit", "4"]));
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), 5, "{out}");
        assert!(lines[0].split_whitespace().eq(["rank", "id", "score"]));
        let res = col.search(&SearchRequest::nearest(query.clone(), 4)).unwrap();
        for (i, (line, p)) in lines[1..].iter().zip(&res.points).enumerate() {
            let cols: Vec<&str> = line.split_whitespace().collect();
            assert_eq!(cols[0], (i + 1).to_string());
            assert_eq!(cols[1], p.id.to_string());
            assert_eq!(cols[2], format!("{:.6}", p.score));
        }
    }
}

#[test]
fn search_with_labels_and_words() {
    let dir = TempDir::new("cli", "labels");
    let (seg, data) = build_npy(&dir, "cosine");
    let labels = dir.path("labels.txt");
    let words: Vec<String> = (0..ROWS).map(|i| format!("w{i}")).collect();
    std::fs::write(&labels, words.join("\n") + "\n").unwrap();
    let (seg, labels) = (seg.to_str().unwrap(), labels.to_str().unwrap());
    let col = in_process(ROWS, DIM, "cosine", 0, &data);

    let by_word = ok(shoal(&["search", seg, "--labels", labels, "--words", "w42", "--limit", "5"]));
    let by_id = ok(shoal(&["search", seg, "--labels", labels, "--query-id", "42", "--limit", "5"]));
    assert_eq!(by_word, by_id);
    let lines: Vec<&str> = by_word.lines().collect();
    assert!(lines[0].split_whitespace().eq(["rank", "id", "score", "label"]), "{by_word}");
    let mut res = col.search(&SearchRequest::nearest(col.vector(PointId::Num(42)).unwrap().to_vec(), 6)).unwrap();
    res.points.retain(|p| p.id != 42);
    for (line, p) in lines[1..].iter().zip(&res.points) {
        let cols: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(cols[1], p.id.to_string());
        assert_eq!(cols[3], format!("w{}", p.id), "label = line of the id");
    }
    assert_eq!(lines.len(), 6);

    // Several words: one table each, under a heading.
    let both = ok(shoal(&["search", seg, "--labels", labels, "--words", "w1,w2", "--limit", "2"]));
    assert!(both.starts_with("# w1\n") && both.contains("\n# w2\n"), "{both}");

    fails(shoal(&["search", seg, "--labels", labels, "--words", "nope"]), "'nope' is not a line of");
    fails(shoal(&["search", seg, "--query-id", "100000"]), "id 100000 is not in");
    // --words needs --labels; exactly one query kind (usage errors: clap's exit code 2).
    assert_eq!(shoal(&["search", seg, "--words", "w1"]).status.code(), Some(2));
    assert_eq!(shoal(&["search", seg, "--query-id", "1", "--vector", "1"]).status.code(), Some(2));
    assert_eq!(shoal(&["search", seg]).status.code(), Some(2));
}

#[test]
fn bad_search_requests_are_clear_errors() {
    let dir = TempDir::new("cli", "badreq");
    let (seg, _) = build_npy(&dir, "l2");
    let seg = seg.to_str().unwrap();
    fails(shoal(&["search", seg, "--vector", "1,2,3"]), "wrong vector dimension: expected 17, got 3");
    fails(shoal(&["search", seg, "--vector", "1,x"]), "element 1 ('x') is not a number");
    let nan = vec!["NaN"; DIM].join(",");
    fails(shoal(&["search", seg, "--vector", &nan]), "non-finite");
    fails(shoal(&["search", seg, "--query-id", "1", "--limit", "0"]), "limit must be in");
    fails(shoal(&["search", seg, "--request", r#"{"vector": [1], "limt": 3}"#]), "limt");
    fails(shoal(&["search", seg, "--request", "{"]), "invalid request: EOF while parsing");
    fails(shoal(&["search", &format!("{seg}.missing"), "--query-id", "1"]), "cannot open");
}

#[test]
fn inspect_shows_header_sections_and_meta() {
    let dir = TempDir::new("cli", "inspect");
    let (seg, _) = build_npy(&dir, "cosine");
    let text = ok(shoal(&["inspect".as_ref(), seg.as_os_str()]));
    for needle in
        ["SHOALSEG", "version   1", "META", "IDS", "VECTORS", "ID_INDEX", "dim 17", "metric cosine", "rows 300"]
    {
        assert!(text.contains(needle), "{needle:?} missing from:\n{text}");
    }
    let json: serde_json::Value =
        serde_json::from_str(&ok(shoal(&["inspect".as_ref(), seg.as_os_str(), "--json".as_ref()]))).unwrap();
    let file_len = std::fs::metadata(&seg).unwrap().len();
    assert_eq!(json["magic"], "SHOALSEG");
    assert_eq!(json["version"], 1);
    assert_eq!(json["flags"], 0);
    assert_eq!(json["file_len"], file_len);
    assert_eq!(json["meta"], serde_json::json!({"dim": 17, "metric": "cosine", "rows": 300, "vector_type": 0}));
    assert_eq!(json["error"], serde_json::Value::Null);
    let sections = json["sections"].as_array().unwrap();
    let names: Vec<&str> = sections.iter().map(|s| s["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["META", "IDS", "VECTORS", "ID_INDEX"]);
    let bytes = std::fs::read(&seg).unwrap();
    for s in sections {
        let (offset, length) = (s["offset"].as_u64().unwrap(), s["length"].as_u64().unwrap());
        assert_eq!(offset % 64, 0);
        let crc = shoal_format::crc32c(&bytes[offset as usize..(offset + length) as usize]);
        assert_eq!(s["crc32c"], format!("{crc:#010x}"));
    }
    assert_eq!(sections[2]["length"], ROWS * DIM * 4);
}

/// Offset of the VECTORS section, from `shoal inspect --json`.
fn vectors_offset(seg: &Path) -> usize {
    let json: serde_json::Value =
        serde_json::from_str(&ok(shoal(&["inspect".as_ref(), seg.as_os_str(), "--json".as_ref()]))).unwrap();
    let s = json["sections"].as_array().unwrap().iter().find(|s| s["name"] == "VECTORS").unwrap();
    s["offset"].as_u64().unwrap() as usize
}

#[test]
fn verify_passes_then_catches_a_flipped_byte() {
    let dir = TempDir::new("cli", "verify");
    let (seg, _) = build_npy(&dir, "l2");
    assert_eq!(ok(shoal(&["verify".as_ref(), seg.as_os_str()])), "ok\n");
    let mut bytes = std::fs::read(&seg).unwrap();
    let at = vectors_offset(&seg) + 1000;
    bytes[at] ^= 0x10;
    let bad = dir.path("flipped.shoal");
    write(&bad, &bytes);
    // Opening is cheap and does not read VECTORS: inspect and search still work...
    ok(shoal(&["inspect".as_ref(), bad.as_os_str()]));
    ok(shoal(&["search", bad.to_str().unwrap(), "--query-id", "3"]));
    // ...verify reads every byte.
    let o = shoal(&["verify".as_ref(), bad.as_os_str()]);
    assert!(stdout(&o).is_empty());
    fails(o, "checksum mismatch in VECTORS");
}

#[test]
fn bad_input_is_rejected_and_leaves_no_file() {
    let dir = TempDir::new("cli", "badinput");
    let data = vectors(ROWS, DIM, 3);
    let good = npy(1, ROWS, DIM, &data);
    let dim = DIM.to_string();
    let cases: Vec<(&str, Vec<u8>, Vec<&str>, &str)> = vec![
        // Truncated .npy: the last row is incomplete.
        ("trunc.npy", good[..good.len() - 10].to_vec(), vec![], "truncated"),
        ("trunc.npy", good[..good.len() - 10].to_vec(), vec![], "row 299 is incomplete"),
        ("header.npy", good[..40].to_vec(), vec![], "truncated .npy header"),
        ("extra.npy", [&good[..], &[0u8; 8]].concat(), vec![], "8 bytes after the declared shape"),
        ("empty.npy", vec![], vec![], "not an .npy file"),
        (
            "fortran.npy",
            npy_with_dict(1, &format!("{{'descr': '<f4', 'fortran_order': True, 'shape': ({ROWS}, {DIM}), }}"), &data),
            vec![],
            "Fortran-order",
        ),
        (
            "f8.npy",
            npy_with_dict(
                1,
                &format!("{{'descr': '<f8', 'fortran_order': False, 'shape': ({}, {DIM}), }}", ROWS / 2),
                &data,
            ),
            vec![],
            "unsupported dtype '<f8'",
        ),
        (
            "1d.npy",
            npy_with_dict(
                1,
                &format!("{{'descr': '<f4', 'fortran_order': False, 'shape': ({}, ), }}", ROWS * DIM),
                &data,
            ),
            vec![],
            "expected a 2-D array",
        ),
        (
            "v9.npy",
            {
                let mut b = good.clone();
                b[6] = 9;
                b
            },
            vec![],
            "unsupported .npy format version 9",
        ),
        ("wrongdim.npy", good.clone(), vec!["--dim", "16"], "--dim 16 does not match the array's shape (300, 17)"),
        // NaN and infinity name the row.
        (
            "nan.npy",
            {
                let mut d = data.clone();
                d[123 * DIM + 4] = f32::NAN;
                npy(1, ROWS, DIM, &d)
            },
            vec![],
            "row 123: element 4 is not finite",
        ),
        (
            "inf.f32",
            {
                let mut d = data.clone();
                d[299 * DIM] = f32::INFINITY;
                f32_bytes(&d)
            },
            vec!["--dim", &dim],
            "row 299: element 0 is not finite",
        ),
        // Raw f32 whose length is not a multiple of the row size.
        ("wrongdim.f32", f32_bytes(&data), vec!["--dim", "16"], "row 318 is incomplete (wrong --dim"),
        ("nodim.f32", f32_bytes(&data), vec![], "pass --dim"),
        // .fvecs: truncated, a row of another dimension, a --dim that disagrees.
        (
            "trunc.fvecs",
            {
                let f = fvecs(DIM, &data);
                f[..f.len() - 3].to_vec()
            },
            vec![],
            "row 299 is incomplete",
        ),
        (
            "mixed.fvecs",
            {
                let mut f = fvecs(DIM, &data);
                let at = 77 * (4 + 4 * DIM);
                f[at..at + 4].copy_from_slice(&16i32.to_le_bytes());
                f
            },
            vec![],
            "row 77 declares dimension 16, but row 0 has dimension 17",
        ),
        (
            "neg.fvecs",
            {
                let mut f = fvecs(DIM, &data);
                f[..4].copy_from_slice(&(-1i32).to_le_bytes());
                f
            },
            vec![],
            "row 0 declares dimension -1",
        ),
        ("wrongdim.fvecs", fvecs(DIM, &data), vec!["--dim", "3"], "--dim 3 does not match the dimension 17 of row 0"),
        ("noext.xyz", f32_bytes(&data), vec![], "pass --format"),
        ("empty.f32", vec![], vec!["--dim", "4"], "holds no vectors"),
        // One row of a dimension beyond the format's limit.
        ("hugedim.f32", f32_bytes(&vec![0.5; 65537]), vec!["--dim", "65537"], "dim must be in 1..=65536"),
    ];
    for (name, bytes, extra, needle) in cases {
        let input = dir.path(name);
        write(&input, &bytes);
        let out = dir.path("out.shoal");
        let mut args = vec!["build", input.to_str().unwrap(), "--out", out.to_str().unwrap()];
        args.extend(extra);
        let err = fails(shoal(&args), needle);
        assert!(err.contains(name), "the message names the input file: {err}");
        assert!(!out.exists(), "{name}: output written");
        assert!(!dir.path("out.shoal.tmp").exists(), "{name}: temporary file left behind");
    }

    // A failed build leaves an existing segment untouched.
    let out = dir.path("keep.shoal");
    let input = dir.path("good.npy");
    write(&input, &good);
    ok(shoal(&["build", input.to_str().unwrap(), "--out", out.to_str().unwrap()]));
    let before = std::fs::read(&out).unwrap();
    fails(shoal(&["build", dir.path("nan.npy").to_str().unwrap(), "--out", out.to_str().unwrap()]), "not finite");
    assert_eq!(std::fs::read(&out).unwrap(), before);
    fails(shoal(&["build", dir.path("missing.npy").to_str().unwrap(), "--out", out.to_str().unwrap()]), "cannot open");
}

#[test]
fn damaged_segments_are_typed_errors_never_panics() {
    let dir = TempDir::new("cli", "damaged");
    let (seg, _) = build_npy(&dir, "dot");
    let good = std::fs::read(&seg).unwrap();
    let check = |name: &str, bytes: &[u8], needle: &str| {
        let path = dir.path(name);
        write(&path, bytes);
        let p = path.to_str().unwrap();
        for args in [vec!["verify", p], vec!["inspect", p], vec!["search", p, "--query-id", "1"]] {
            fails(shoal(&args), needle);
        }
    };
    // Truncated anywhere: in the header, in the table, in a section.
    for cut in [0, 10, 63, 64, 100, 191, 192, 1000, good.len() - 64, good.len() - 1] {
        check("cut.shoal", &good[..cut], "truncated segment");
    }
    // A version this build does not read (checked before the header checksum, whose rule a
    // newer version may change)...
    let mut v3 = good.clone();
    v3[8..12].copy_from_slice(&3u32.to_le_bytes());
    check("v3.shoal", &v3, "unsupported segment format version 3");
    // ...a header whose checksum no longer matches...
    let mut crc = good.clone();
    crc[24] ^= 0x40;
    check("crc.shoal", &crc, "checksum mismatch in header");
    // ...and version 2 with version 1's header checksum (bytes 36..64 not covered).
    let mut v2 = good.clone();
    v2[8..12].copy_from_slice(&2u32.to_le_bytes());
    let crc = shoal_format::crc32c(&v2[..32]);
    v2[32..36].copy_from_slice(&crc.to_le_bytes());
    let path = dir.path("v2.shoal");
    write(&path, &v2);
    let p = path.to_str().unwrap();
    fails(shoal(&["verify", p]), "unsupported segment format version 2 (this build reads 1..=1)");
    let q = vec!["0.5"; DIM].join(",");
    for args in [vec!["inspect", p], vec!["search", p, "--vector", &q]] {
        // (`inspect` and `search` read version 2, with its header checksum.)
        fails(shoal(&args), "checksum mismatch in header");
    }
    let mut magic = good.clone();
    magic[0] = b'X';
    check("magic.shoal", &magic, "bad magic");
    check(
        "text.shoal",
        &b"hello, this is not a segment at all, just some text that is long enough to read".repeat(4),
        "bad magic",
    );
    let mut longer = good.clone();
    longer.extend_from_slice(&[0; 64]);
    check("longer.shoal", &longer, "longer than the header's file_len");
    // Single-byte flips in the header, the table (which ends where META starts, at 192: no
    // padding), META and the start of IDS: every one is a typed error from verify.
    for i in (0..512).step_by(3) {
        let mut b = good.clone();
        b[i] ^= 0x41;
        let path = dir.path("flip.shoal");
        write(&path, &b);
        let o = shoal(&["verify".as_ref(), path.as_os_str()]);
        let err = stderr(&o);
        assert!(!err.contains("panicked"), "flip at {i}: {err}");
        assert_eq!(o.status.code(), Some(1), "flip at {i} not detected");
    }
}

/// The payload line of row `r` in the payload tests.
fn payload_line(r: usize) -> String {
    match r % 7 {
        0 => "null".into(),
        1 => format!(r#"{{"tag": ["a", "t{}"], "year": {}}}"#, r % 3, 1990 + r % 40),
        _ => format!(r#"{{"tag": "t{}", "year": {}}}"#, r % 3, 1990 + r % 40),
    }
}

#[test]
fn payloads_and_filters_from_the_command_line() {
    let dir = TempDir::new("cli", "payloads");
    let data = vectors(ROWS, DIM, 3);
    let input = dir.path("in.npy");
    write(&input, &npy(1, ROWS, DIM, &data));
    let lines: Vec<String> = (0..ROWS).map(payload_line).collect();
    let payload_file = dir.path("payloads.jsonl");
    std::fs::write(&payload_file, lines.join("\n") + "\n").unwrap();
    let fields = r#"{"tag": "keyword", "year": "integer"}"#;
    let out = dir.path("p.shoal");
    let (input_s, payloads_s, out_s) = (input.to_str().unwrap(), payload_file.to_str().unwrap(), out.to_str().unwrap());
    let build = |payloads: &str, out: &str| {
        shoal(&["build", input_s, "--fields", fields, "--payloads", payloads, "--out", out])
    };
    ok(build(payloads_s, out_s));

    // The same collection built in process.
    let schema = Collection::parse_schema(&serde_json::from_str(fields).unwrap()).unwrap();
    let mut col = Collection::with_schema(CollectionConfig { dim: DIM, metric: Metric::L2 }, schema).unwrap();
    let docs: Vec<serde_json::Value> = lines.iter().map(|l| serde_json::from_str(l).unwrap()).collect();
    col.insert_with_payloads(&(0..ROWS as u64).collect::<Vec<_>>(), &data, &docs).unwrap();
    col.seal();
    assert!(
        std::fs::read(&out).unwrap() == col.to_bytes().unwrap(),
        "the CLI's segment differs from the in-process one"
    );

    // --filter and --with-payload: exactly the core's response, every result passing.
    let filter =
        r#"{"must": [{"key": "year", "range": {"gte": 2000}}], "must_not": [{"key": "tag", "match": {"value": "a"}}]}"#;
    let query = vectors(1, DIM, 99);
    let text: Vec<String> = query.iter().map(|x| format!("{x:?}")).collect();
    let text = text.join(",");
    let mut req = SearchRequest::nearest(query, 8);
    req.filter = Some(serde_json::from_str(filter).unwrap());
    req.with_payload = true;
    let expected = col.search(&req).unwrap();
    assert_eq!(expected.points.len(), 8);
    for p in &expected.points {
        let doc = &docs[p.id.as_num().unwrap() as usize];
        assert!(doc["year"].as_i64().unwrap() >= 2000 && doc["tag"] != serde_json::json!(["a", "t0"]));
        assert_eq!(p.payload.as_ref(), Some(doc));
    }
    let args = ["search", out_s, "--vector", &text, "--limit", "8", "--filter", filter, "--with-payload"];
    let got = ok(shoal(&[&args[..], &["--json"]].concat()));
    assert_eq!(got.trim_end(), expected.to_json());
    // The table has a payload column.
    let table = ok(shoal(&args));
    assert!(table.lines().next().unwrap().ends_with("payload"), "{table}");
    assert!(table.lines().nth(1).unwrap().contains(r#""year":"#), "{table}");

    // Bad input: clear errors, no segment written.
    let bad_filter = |filter: &str, needle: &str| {
        fails(shoal(&["search", out_s, "--vector", &text, "--filter", filter]), needle);
    };
    bad_filter("{\"must\": [", "--filter is not valid JSON");
    bad_filter(r#"{"must": [{"key": "year", "range": {"gte": "x"}}]}"#, "filter.must[0].range.gte");
    bad_filter(r#"{"must": [{"key": "nope", "match": {"value": 1}}]}"#, "nope");
    let bad = dir.path("bad.shoal");
    let bad_s = bad.to_str().unwrap();
    let mut wrong = lines.clone();
    wrong[150] = r#"{"year": "nineteen"}"#.into();
    std::fs::write(&payload_file, wrong.join("\n")).unwrap();
    fails(build(payloads_s, bad_s), "line 151");
    wrong[150] = "{not json".into();
    std::fs::write(&payload_file, wrong.join("\n")).unwrap();
    fails(build(payloads_s, bad_s), "line 151: not JSON");
    std::fs::write(&payload_file, lines[..ROWS - 1].join("\n")).unwrap();
    fails(build(payloads_s, bad_s), "one payload line per row");
    std::fs::write(&payload_file, lines.join("\n") + "\n{}\n").unwrap();
    fails(build(payloads_s, bad_s), "more lines than the 300 rows");
    fails(
        shoal(&["build", input_s, "--fields", "{\"x\": \"colour\"}", "--payloads", payloads_s, "--out", bad_s]),
        "--fields",
    );
    assert!(!bad.exists(), "a failed build leaves no segment");
}

#[test]
fn text_and_hybrid_requests_from_the_command_line() {
    let dir = TempDir::new("cli", "text");
    let data = vectors(ROWS, DIM, 5);
    let input = dir.path("in.npy");
    write(&input, &npy(1, ROWS, DIM, &data));
    let words = ["whale", "ocean", "salt", "reef", "storm", "blue"];
    let lines: Vec<String> = (0..ROWS)
        .map(|r| format!(r#"{{"title": "{} {}", "n": {}}}"#, words[r % 6], words[(r / 6) % 6], r % 10))
        .collect();
    let payloads = dir.path("p.jsonl");
    std::fs::write(&payloads, lines.join("\n")).unwrap();
    let out = dir.path("t.shoal");
    let (input_s, payloads_s, out_s) = (input.to_str().unwrap(), payloads.to_str().unwrap(), out.to_str().unwrap());
    let fields = r#"{"title": "text", "n": "integer"}"#;
    ok(shoal(&["build", input_s, "--fields", fields, "--payloads", payloads_s, "--out", out_s]));
    // inspect names the payload and text sections too.
    let json: serde_json::Value = serde_json::from_str(&ok(shoal(&["inspect", out_s, "--json"]))).unwrap();
    let names: Vec<&str> = json["sections"].as_array().unwrap().iter().map(|s| s["name"].as_str().unwrap()).collect();
    assert_eq!(
        names[4..],
        [
            "PAYLOAD_FIELDS",
            "PAYLOAD_COLUMNS",
            "PAYLOAD_DICTS",
            "PAYLOAD_POSTINGS",
            "PAYLOAD_DOCS",
            "TEXT_META",
            "TEXT_DICT",
            "TEXT_POSTINGS",
            "TEXT_POSITIONS",
            "TEXT_DOC_LENGTHS"
        ]
    );
    let schema = Collection::parse_schema(&serde_json::from_str(fields).unwrap()).unwrap();
    let mut col = Collection::with_schema(CollectionConfig { dim: DIM, metric: Metric::L2 }, schema).unwrap();
    let docs: Vec<serde_json::Value> = lines.iter().map(|l| serde_json::from_str(l).unwrap()).collect();
    col.insert_with_payloads(&(0..ROWS as u64).collect::<Vec<_>>(), &data, &docs).unwrap();
    col.seal();
    col.set_clock(Box::new(shoal_host::storage::monotonic_micros));
    let vector: Vec<String> = data[..DIM].iter().map(|x| format!("{x:?}")).collect();
    for json in [
        r#"{"text": "whale ocean", "limit": 5}"#.to_string(),
        r#"{"text": "\"salt reef\"", "limit": 5, "filter": {"must": [{"key": "n", "range": {"lt": 5}}]}}"#.to_string(),
        format!(r#"{{"text": "+storm", "vector": [{}], "limit": 5, "fusion": "rrf"}}"#, vector.join(",")),
        // The host supplies a clock: timeout_ms is accepted (and generous here).
        r#"{"text": "blue", "limit": 5, "timeout_ms": 10000}"#.to_string(),
    ] {
        let expected = col.search(&SearchRequest::from_json(&json).unwrap()).unwrap();
        assert!(!expected.points.is_empty(), "{json}");
        let got = ok(shoal(&["search", out_s, "--request", &json, "--json"]));
        let got: serde_json::Value = serde_json::from_str(got.trim_end()).unwrap();
        let want: serde_json::Value = serde_json::from_str(&expected.to_json()).unwrap();
        assert_eq!(got["points"], want["points"], "{json}");
        assert_eq!(got["partial"], false);
    }
}

#[test]
fn codes_only_builds_with_and_without_a_vectors_file() {
    let dir = TempDir::new("cli", "codes-only");
    let (rows, dim) = (2000, 24);
    let data = vectors(rows, dim, 5);
    let input = dir.path("in.npy");
    write(&input, &npy(1, rows, dim, &data));
    let input = input.to_str().unwrap();
    let (codes, lazy, vecs) = (dir.path("codes.shoal"), dir.path("lazy.shoal"), dir.path("lazy.f32"));
    let (codes, lazy, vecs) = (codes.to_str().unwrap(), lazy.to_str().unwrap(), vecs.to_str().unwrap());
    let base = ["build", input, "--metric", "l2", "--index", "ivf-rabitq", "--partitions", "20"];
    ok(shoal(&[&base[..], &["--bits", "4", "--codes-only", "--out", codes]].concat()));
    ok(shoal(&[&base[..], &["--bits", "4", "--codes-only", "--vectors-out", vecs, "--out", lazy]].concat()));
    // The lazy segment is the full one minus its vectors, and the vectors file holds them in its
    // row order: together they give back every point's vector.
    ok(shoal(&["verify", codes]));
    ok(shoal(&["verify", lazy]));
    let bytes = std::fs::read(vecs).unwrap();
    assert_eq!(bytes.len(), rows * dim * 4);
    let seg = Collection::from_bytes(&std::fs::read(lazy).unwrap()).unwrap();
    assert!(seg.codes_only());
    let stored: Vec<f32> = bytes.chunks_exact(4).map(|b| f32::from_le_bytes(b.try_into().unwrap())).collect();
    let seg0 = seg.segment(0).unwrap();
    for row in 0..seg0.rows() {
        let id = seg0.id(row).as_num().unwrap();
        assert_eq!(&stored[row * dim..(row + 1) * dim], &data[id as usize * dim..(id as usize + 1) * dim]);
    }
    let inspect = ok(shoal(&["inspect", codes]));
    assert!(!inspect.contains("VECTORS"), "{inspect}");
    // Searches rank by estimates; ids still resolve; no vector to query by.
    let q: Vec<String> = data[..dim].iter().map(|x| format!("{x:?}")).collect();
    let out = ok(shoal(&["search", codes, "--vector", &q.join(","), "--limit", "3", "--json"]));
    assert!(out.contains("\"id\":0"), "the point itself comes first: {out}");
    fails(shoal(&["search", codes, "--query-id", "7"]), "has no stored vector (codes-only segment)");
    fails(
        shoal(&["search", codes, "--request", r#"{"vector": [0], "limit": 1, "params": {"exact": true}}"#]),
        "dimension",
    );
    let exact = format!(r#"{{"vector": [{}], "limit": 1, "params": {{"exact": true}}}}"#, q.join(","));
    fails(shoal(&["search", codes, "--request", &exact]), "codes only");
    // Codes only needs the extra bits, and an index.
    let bad = dir.path("bad.shoal");
    let bad = bad.to_str().unwrap();
    fails(shoal(&[&base[..], &["--codes-only", "--out", bad]].concat()), "--codes-only ranks by the extra bits");
    fails(shoal(&["build", input, "--codes-only", "--bits", "4", "--out", bad]), "need --index ivf-rabitq");
    let o = shoal(&[&base[..], &["--bits", "4", "--vectors-out", vecs, "--out", bad]].concat());
    assert_eq!(o.status.code(), Some(2), "clap: --vectors-out requires --codes-only");
    assert!(!Path::new(bad).exists());
}

/// An .npy int64 or int32 matrix of ids (the exact neighbours file of `--truth`).
fn npy_ids(rows: usize, cols: usize, ids: &[u64], wide: bool) -> Vec<u8> {
    let descr = if wide { "<i8" } else { "<i4" };
    let mut out =
        npy_with_dict(1, &format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': ({rows}, {cols}), }}"), &[]);
    for &id in ids {
        if wide {
            out.extend_from_slice(&(id as i64).to_le_bytes());
        } else {
            out.extend_from_slice(&(id as i32).to_le_bytes());
        }
    }
    out
}

/// `shoal search --queries FILE --truth FILE`: a summary line with QPS and latency, and recall
/// against the given neighbours — 1.0 for the core's own exact answers, lower when they are
/// wrong; bad truth files are typed errors.
#[test]
fn batch_queries_report_qps_and_recall() {
    let dir = TempDir::new("cli", "batch");
    let (seg, data) = build_npy(&dir, "l2");
    let col = in_process(ROWS, DIM, "l2", 0, &data);
    let nq = 20;
    let queries = vectors(nq, DIM, 77);
    let qfile = dir.path("q.npy");
    write(&qfile, &npy(1, nq, DIM, &queries));
    let mut truth = Vec::new();
    for q in queries.chunks_exact(DIM) {
        let mut r = SearchRequest::nearest(q.to_vec(), 12);
        r.params.exact = true;
        truth.extend(col.search(&r).unwrap().points.iter().map(|p| p.id.as_num().unwrap()));
    }
    let (seg, qs) = (seg.to_str().unwrap(), qfile.to_str().unwrap());
    for wide in [false, true] {
        let t = dir.path(&format!("gt-{wide}.npy"));
        write(&t, &npy_ids(nq, 12, &truth, wide));
        let line = ok(shoal(&["search", seg, "--queries", qs, "--truth", t.to_str().unwrap(), "--exact"]));
        assert!(line.starts_with("20 queries, top 10: ") && line.contains(" QPS ") && line.contains("p99"), "{line}");
        assert!(line.trim_end().ends_with("recall@10 1.0000"), "{line}");
    }
    // Wrong neighbours: recall drops (each row's answers shifted to the next query's).
    let mut shifted = truth[12..].to_vec();
    shifted.extend_from_slice(&truth[..12]);
    let t = dir.path("gt-wrong.npy");
    write(&t, &npy_ids(nq, 12, &shifted, true));
    let line = ok(shoal(&["search", seg, "--queries", qs, "--truth", t.to_str().unwrap(), "--exact"]));
    assert!(!line.trim_end().ends_with("recall@10 1.0000"), "{line}");
    // Bad truth files and flags.
    let short = dir.path("gt-short.npy");
    write(&short, &npy_ids(nq - 1, 12, &truth[..(nq - 1) * 12], true));
    fails(shoal(&["search", seg, "--queries", qs, "--truth", short.to_str().unwrap()]), "a row per query");
    let narrow = dir.path("gt-narrow.npy");
    write(&narrow, &npy_ids(nq, 5, &truth[..nq * 5], true));
    fails(shoal(&["search", seg, "--queries", qs, "--truth", narrow.to_str().unwrap()]), "at least 10");
    let floats = dir.path("gt-f4.npy");
    write(&floats, &npy(1, nq, DIM, &queries));
    fails(shoal(&["search", seg, "--queries", qs, "--truth", floats.to_str().unwrap()]), "'<f4'");
    fails(shoal(&["search", seg, "--queries", qs, "--json"]), "summary");
    let wrong_dim = dir.path("q5.npy");
    write(&wrong_dim, &npy(1, 3, 5, &vectors(3, 5, 1)));
    fails(shoal(&["search", seg, "--queries", wrong_dim.to_str().unwrap()]), "5-d queries for a 17-d segment");
}

/// `shoal search` checks its arguments before it reads any file: a bad --filter, --vector or
/// --request is reported even when the segment does not exist.
#[test]
fn search_checks_arguments_before_reading_files() {
    let dir = TempDir::new("cli", "args-first");
    let missing = dir.path("missing.shoal");
    let seg = missing.to_str().unwrap();
    fails(shoal(&["search", seg, "--vector", "1,2", "--filter", "{bad"]), "--filter is not valid JSON");
    fails(shoal(&["search", seg, "--vector", "1,x"]), "element 1 ('x')");
    fails(shoal(&["search", seg, "--request", r#"{"vector": [1], "limt": 3}"#]), "limt");
    // With good arguments the missing file is what is reported.
    fails(shoal(&["search", seg, "--vector", "1,2"]), "missing.shoal");
}

#[test]
fn the_file_a_command_reads_is_its_argument_and_the_older_flags_still_work() {
    let dir = TempDir::new("cli", "positional");
    let data = vectors(ROWS, DIM, 3);
    let input = dir.path("in.npy");
    write(&input, &npy(1, ROWS, DIM, &data));
    let (a, b) = (dir.path("a.shoal"), dir.path("b.shoal"));
    let (input, a, b) = (input.to_str().unwrap(), a.to_str().unwrap(), b.to_str().unwrap());
    ok(shoal(&["build", input, "--out", a]));
    ok(shoal(&["build", "--input", input, "--out", b]));
    assert_eq!(std::fs::read(a).unwrap(), std::fs::read(b).unwrap());
    let positional = ok(shoal(&["search", a, "--query-id", "3", "--json"]));
    assert!(positional.contains("\"id\""), "{positional}");
    assert_eq!(positional, ok(shoal(&["search", "--segment", a, "--query-id", "3", "--json"])));
    // Both spellings at once, or neither, is a usage error (exit 2) naming the argument.
    for (args, needle) in [
        (vec!["search", a, "--segment", b, "--query-id", "3"], "cannot be used with"),
        (vec!["search", "--query-id", "3"], "<SEGMENT>"),
        (vec!["build", input, "--input", input, "--out", b], "cannot be used with"),
        (vec!["build", "--out", b], "<INPUT>"),
    ] {
        let out = shoal(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(stderr(&out).contains(needle), "{args:?}: {}", stderr(&out));
    }
}
