//! Segments and segment sets read by ranges from a bucket: MinIO (a real S3 API) through the
//! `object_store` crate (`s3://`), and through presigned URLs over plain HTTP; sets published
//! with `shoal publish` and searched with `shoal search …/manifest.json`. Every answer is the
//! local answer, bit for bit; every fault a typed error.

use std::path::Path;
use std::process::{Command, Output};
use std::sync::Arc;

use serde_json::json;
use shoal_core::remote::write_for_ranges;
use shoal_core::set::segment_name;
use shoal_core::{Collection, CollectionConfig, IndexKind, IvfParams, Metric};
use shoal_host::HostError;
use shoal_host::remote::{FileRanges, HttpRanges, RemoteCollection, RemoteSetReader, StoreRanges};
use shoal_testkit::{TempDir, clustered_vectors};

#[path = "support/answers.rs"]
mod answers;
#[path = "support/servers.rs"]
mod servers;
use answers::{bits, request};
use servers::{Minio, Proxy};

fn remote_code(e: &HostError) -> String {
    match e {
        HostError::Remote { error, .. } => error.code().to_string(),
        HostError::Segment { source, .. } => source.code().to_string(),
        other => panic!("expected a remote or segment error, got {other}"),
    }
}

fn ivf(partitions: usize, seed: u64) -> IndexKind {
    IndexKind::IvfRabitq(IvfParams { partitions: Some(partitions), seed, bits: Some(1), codes_only: false })
}

/// A collection of three sealed IVF segments (`n` clustered points each, ids `5i + 2`).
fn set_collection(dim: usize, n: usize) -> Collection {
    let mut col = Collection::new(CollectionConfig { dim, metric: Metric::Cosine }).unwrap();
    col.set_index_kind(ivf(24, 9)).unwrap();
    for s in 0..3u64 {
        let data = clustered_vectors(100 + s, n, dim, 30);
        let ids: Vec<u64> = (0..n as u64).map(|i| (s * n as u64 + i) * 5 + 2).collect();
        col.insert(&ids, &data).unwrap();
        col.seal();
    }
    assert_eq!(col.segment_count(), 3);
    col
}

/// Writes `col`'s set as a collection folder (its segments and `manifest.json`).
fn write_set(col: &Collection, dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    let cp = col.checkpoint(None);
    for (i, e) in cp.manifest.segments.iter().enumerate() {
        std::fs::write(dir.join(&e.file), col.segment(i).unwrap().bytes()).unwrap();
    }
    std::fs::write(dir.join("manifest.json"), cp.manifest.to_json()).unwrap();
}

fn shoal(args: &[&str], env: &[(&'static str, String)]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_shoal")).args(args).envs(env.iter().map(|(k, v)| (k, v))).output().unwrap()
}

fn ok(out: Output) -> String {
    assert!(out.status.success(), "shoal failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn a_segment_in_a_bucket_answers_as_the_local_file() {
    let minio = Minio::start();
    let dir = TempDir::new("object_store", "segment");
    let data = clustered_vectors(7, 6_000, 40, 25);
    let ids: Vec<u64> = (0..6_000u64).map(|i| i * 3 + 1).collect();
    let mut col = Collection::new(CollectionConfig { dim: 40, metric: Metric::L2 }).unwrap();
    col.insert(&ids, &data).unwrap();
    col.seal_with(ivf(40, 3)).unwrap();
    let v2 = write_for_ranges(col.segment(0).unwrap()).unwrap().as_slice().to_vec();
    let path = dir.path("seg.shoal");
    std::fs::write(&path, &v2).unwrap();
    let url = minio.put("one/seg.shoal", &v2);
    let presigned = minio.presign("one/seg.shoal");

    let file = RemoteCollection::open(Box::new(FileRanges::open(&path).unwrap()), 1 << 20).unwrap();
    let store = StoreRanges::new(Arc::new(minio.client()), "one/seg.shoal".into(), &url);
    let s3 = RemoteCollection::open(Box::new(store), 1 << 20).unwrap();
    let signed = RemoteCollection::open(Box::new(HttpRanges::new(&presigned)), 1 << 20).unwrap();
    assert_eq!(s3.opened().requests, file.opened().requests, "the reads of the file, one request each");
    assert_eq!(s3.opened().waves, 1, "a bootstrap region within the first 256 KiB");
    for (i, q) in data.chunks_exact(40).step_by(397).enumerate() {
        let req = request(q, json!({"limit": 7 + i % 5, "offset": i % 3, "params": {"nprobe": 3 + i % 6}}));
        let want = bits(&file.search(&req).unwrap().0);
        assert!(!want.is_empty());
        let (got, trip) = s3.search(&req).unwrap();
        assert_eq!(bits(&got), want, "s3:// query {i}");
        assert!(trip.requests >= 1 || i > 0);
        assert_eq!(bits(&signed.search(&req).unwrap().0), want, "presigned query {i}");
    }

    // The CLI reads s3:// with the credentials of the environment, and refuses multipart there.
    let q: Vec<String> = data[..40].iter().map(|x| x.to_string()).collect();
    let args = ["search", url.as_str(), "--vector", &q.join(","), "--json"];
    let out = ok(shoal(&args, &minio.env()));
    let local: serde_json::Value =
        serde_json::from_str(&file.search(&request(&data[..40], json!({}))).unwrap().0.to_json()).unwrap();
    let remote: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(remote["points"], local["points"]);
    let out = shoal(&[&args[..], &["--multipart-ranges"]].concat(), &minio.env());
    assert!(!out.status.success() && String::from_utf8_lossy(&out.stderr).contains("one range per request"));

    // Faults: a missing object, wrong credentials, the object replaced while open.
    let missing = StoreRanges::new(Arc::new(minio.client()), "one/none.shoal".into(), "s3://shoal/one/none.shoal");
    let e = RemoteCollection::open(Box::new(missing), 1 << 20).unwrap_err();
    assert_eq!(remote_code(&e), "remote_status", "{e}");
    let mut env = minio.env();
    env[1].1 = "wrong".into();
    let out = shoal(&args, &env);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("403") || err.contains("remote_status"), "{err}");
    let store = StoreRanges::new(Arc::new(minio.client()), "one/seg.shoal".into(), &url);
    let held = RemoteCollection::open(Box::new(store), 0).unwrap();
    let mut other = v2.clone();
    let at = other.len() - 8;
    other[at] ^= 1;
    minio.put("one/seg.shoal", &other);
    let e = held.search(&request(&data[..40], json!({}))).unwrap_err();
    assert_eq!(remote_code(&e), "object_changed", "{e}");
}

#[test]
fn faults_between_the_reader_and_the_bucket_never_give_wrong_results() {
    let minio = Minio::start();
    let proxy = Proxy::start_keeping_host(&minio.endpoint);
    let data = clustered_vectors(8, 4_000, 24, 20);
    let ids: Vec<u64> = (0..4_000u64).collect();
    let mut col = Collection::new(CollectionConfig { dim: 24, metric: Metric::Dot }).unwrap();
    col.insert(&ids, &data).unwrap();
    col.seal_with(ivf(30, 5)).unwrap();
    let local = col;
    let v2 = write_for_ranges(local.segment(0).unwrap()).unwrap().as_slice().to_vec();
    let url = minio.put("f/seg.shoal", &v2);
    let open = || {
        let store = StoreRanges::new(Arc::new(minio.client_at(&proxy.base)), "f/seg.shoal".into(), &url);
        RemoteCollection::open(Box::new(store), 0).unwrap()
    };
    let col = open();
    // One probe: the first wave is one request, one partition block, whose middle byte the
    // proxy flips — under the block's CRC (with more probes it could land in a merged gap).
    let req = request(&data[24 * 11..24 * 12], json!({"limit": 10, "params": {"nprobe": 1}}));
    let want = bits(&local.search(&req).unwrap());
    // A flipped byte fails its block's CRC: the search starts over and gets the right answer.
    proxy.fault("flip", Some(1));
    let (got, trip) = col.search(&req).unwrap();
    assert_eq!((bits(&got), trip.retries), (want.clone(), 1));
    // A 503 is retried by the store's client; a 404 is an error.
    proxy.fault("status-503", Some(1));
    assert_eq!(bits(&open().search(&req).unwrap().0), want);
    proxy.fault("status-404", None);
    let e = open_err(&minio, &proxy, &url);
    assert_eq!(remote_code(&e), "remote_status", "{e}");
    proxy.clear();
    // A body cut short is refused or fetched again, never used.
    proxy.fault("truncate", Some(1));
    match open().search(&req) {
        Ok((got, _)) => assert_eq!(bits(&got), want),
        Err(e) => assert!(["transport", "bad_response"].contains(&remote_code(&e).as_str()), "{e}"),
    }
    // Another ETag than the one pinned at open.
    proxy.fault("etag", None);
    let e = col.search(&request(&data[24 * 900..24 * 901], json!({}))).unwrap_err();
    assert_eq!(remote_code(&e), "object_changed", "{e}");
}

fn open_err(minio: &Minio, proxy: &Proxy, url: &str) -> HostError {
    let store = StoreRanges::new(Arc::new(minio.client_at(&proxy.base)), "f/seg.shoal".into(), url);
    RemoteCollection::open(Box::new(store), 0).unwrap_err()
}

#[test]
fn a_published_set_answers_as_the_local_set() {
    let minio = Minio::start();
    let dir = TempDir::new("object_store", "set");
    let col = set_collection(32, 3_000);
    let src = dir.path("collection");
    write_set(&col, &src);
    let folder = dir.path("published");
    let env = minio.env();
    ok(shoal(&["publish", src.to_str().unwrap(), folder.to_str().unwrap()], &env));
    ok(shoal(&["publish", src.to_str().unwrap(), "s3://shoal/sets/a"], &env));

    // The published manifest names format-2 segments with their bootstrap hints.
    let text = std::fs::read(folder.join("manifest.json")).unwrap();
    let m = shoal_core::remote::SetManifest::from_json(&text).unwrap();
    assert_eq!(m.manifest.segments.len(), 3);
    assert!(m.bootstrap.iter().all(|b| b.is_some()));

    let (data, n) = (clustered_vectors(101, 3_000, 32, 30), 3_000);
    let options = shoal_host::remote::ReadOptions { cache_bytes: 8 << 20, ..Default::default() };
    let from_folder = RemoteSetReader::open(folder.join("manifest.json").to_str().unwrap(), &options).unwrap();
    // Reading s3:// from this process: the environment the CLI gets, given to the store here.
    let s3 = open_s3_set(&minio, "sets/a/manifest.json");
    assert_eq!(s3.opened().waves, 2, "the manifest, then every segment at once");
    assert_eq!(s3.opened().requests, 4, "one request per segment with the bootstrap hints");
    for (i, q) in data.chunks_exact(32).step_by(211).take(n / 211).enumerate() {
        let req = request(q, json!({"limit": 5 + i % 7, "offset": i % 2, "params": {"nprobe": 2 + i % 5}}));
        let want = bits(&col.search(&req).unwrap());
        assert!(!want.is_empty());
        assert_eq!(bits(&from_folder.search(&req).unwrap().0), want, "folder, query {i}");
        let (got, trip) = s3.search(&req).unwrap();
        assert_eq!(bits(&got), want, "s3, query {i}");
        assert!(trip.waves <= 3, "query {i}: {trip:?}");
    }

    // The CLI: the same answer from the bucket as from the local set.
    let q: Vec<String> = data[..32].iter().map(|x| x.to_string()).collect();
    let out = ok(shoal(&["search", "s3://shoal/sets/a/manifest.json", "--vector", &q.join(","), "--json"], &env));
    let remote: serde_json::Value = serde_json::from_str(&out).unwrap();
    let local: serde_json::Value =
        serde_json::from_str(&col.search(&request(&data[..32], json!({}))).unwrap().to_json()).unwrap();
    assert_eq!(remote["points"], local["points"]);

    // A path to a published manifest is read by ranges too; the collection's own manifest (its
    // segments in format 1) is refused, typed.
    let path = folder.join("manifest.json");
    let out = ok(shoal(&["search", path.to_str().unwrap(), "--vector", &q.join(","), "--json"], &env));
    assert_eq!(serde_json::from_str::<serde_json::Value>(&out).unwrap()["points"], local["points"]);
    let own = src.join("manifest.json");
    let out = shoal(&["search", own.to_str().unwrap(), "--vector", &q.join(",")], &env);
    assert!(!out.status.success() && String::from_utf8_lossy(&out.stderr).contains("format-2"), "{out:?}");
    let out = shoal(&["publish", src.to_str().unwrap(), src.to_str().unwrap()], &env);
    assert!(!out.status.success(), "publishing a collection over itself");
    assert!(
        Collection::open_set(
            &shoal_core::set::Manifest::from_json(&std::fs::read(&own).unwrap()).unwrap(),
            &mut |e| Ok(Box::new(shoal_core::AlignedBytes::from_slice(&std::fs::read(src.join(&e.file)).unwrap()))),
            &mut |_| unreachable!("no live-rows files"),
        )
        .is_ok()
    );

    // A segment object replaced by another segment: the manifest's table CRC tells.
    let m = &m.manifest;
    let other = std::fs::read(folder.join(&m.segments[0].file)).unwrap();
    minio.put(&format!("sets/a/{}", m.segments[1].file), &other);
    let e = match open_s3_set_result(&minio, "sets/a/manifest.json") {
        Err(e) => e,
        Ok(_) => panic!("a set with a replaced segment opened"),
    };
    assert!(["bad_set", "object_changed"].contains(&remote_code(&e).as_str()), "{e}");
    // A manifest naming an object that is not there.
    let missing = String::from_utf8(text).unwrap().replace(&m.segments[2].file, &segment_name(99, 0xdead_beef));
    let missing = missing.replace(&m.segments[2].table_crc, "deadbeef");
    minio.put("sets/b/manifest.json", missing.as_bytes());
    let e = open_s3_set_result(&minio, "sets/b/manifest.json").unwrap_err();
    assert_eq!(remote_code(&e), "remote_status", "{e}");
    // Deleted rows are not published.
    let mut deleting = set_collection(32, 500);
    deleting.delete(&[shoal_core::PointId::Num(2)]).unwrap();
    let src2 = dir.path("with-deletes");
    write_set_with_live(&deleting, &src2);
    let out = shoal(&["publish", src2.to_str().unwrap(), dir.path("nowhere").to_str().unwrap()], &env);
    assert!(!out.status.success() && String::from_utf8_lossy(&out.stderr).contains("deleted rows"));
}

/// Like [`write_set`], with the live-rows files.
fn write_set_with_live(col: &Collection, dir: &Path) {
    write_set(col, dir);
    for (name, bytes) in col.checkpoint(None).live_files {
        std::fs::write(dir.join(name), bytes).unwrap();
    }
}

fn open_s3_set_result(minio: &Minio, key: &str) -> Result<RemoteSetReader, HostError> {
    // What `shoal search s3://…` does with the environment's credentials, with this MinIO's
    // client given directly (the test process's environment is shared by its threads).
    let client: Arc<dyn object_store::ObjectStore> = Arc::new(minio.client());
    let prefix = format!("s3://{}/", minio.bucket);
    RemoteSetReader::open_with(&format!("{prefix}{key}"), 8 << 20, &|location: &str| {
        let key = location.strip_prefix(&prefix).expect("beside the manifest");
        let source = StoreRanges::new(client.clone(), object_store::path::Path::parse(key).unwrap(), location);
        Ok(Box::new(source) as Box<dyn shoal_host::remote::RangeSource>)
    })
}

fn open_s3_set(minio: &Minio, key: &str) -> RemoteSetReader {
    open_s3_set_result(minio, key).unwrap()
}

#[test]
fn prune_deletes_what_neither_the_new_set_nor_the_one_before_names() {
    use object_store::{ObjectStore as _, ObjectStoreExt as _};
    let minio = Minio::start();
    let dir = TempDir::new("object_store", "prune");
    let env = minio.env();
    // Three sets of other points (other segments), published in turn to each destination.
    let sets: Vec<(Collection, std::path::PathBuf)> = [400, 500, 600]
        .iter()
        .map(|&n| {
            let col = set_collection(16, n);
            let src = dir.path(&format!("collection-{n}"));
            write_set(&col, &src);
            (col, src)
        })
        .collect();
    let client = minio.client();
    let folder = dir.path("published");
    for dest in [folder.to_str().unwrap().to_string(), "s3://shoal/pruned".to_string()] {
        let names = || -> std::collections::BTreeSet<String> {
            let all: Vec<String> = if dest.starts_with("s3://") {
                let listed = shoal_host::remote::store::block_on(
                    client.list_with_delimiter(Some(&object_store::path::Path::from("pruned"))),
                )
                .unwrap();
                listed.objects.iter().filter_map(|o| o.location.filename().map(str::to_string)).collect()
            } else {
                std::fs::read_dir(&folder)
                    .unwrap()
                    .flatten()
                    .map(|e| e.file_name().to_str().unwrap().to_string())
                    .collect()
            };
            all.into_iter().filter(|n| n.starts_with("seg-")).collect()
        };
        let files_of = || -> std::collections::BTreeSet<String> {
            let bytes = if dest.starts_with("s3://") {
                shoal_host::remote::store::block_on(async {
                    client.get(&object_store::path::Path::from("pruned/manifest.json")).await?.bytes().await
                })
                .unwrap()
                .to_vec()
            } else {
                std::fs::read(folder.join("manifest.json")).unwrap()
            };
            shoal_core::remote::SetManifest::from_json(&bytes)
                .unwrap()
                .manifest
                .segments
                .into_iter()
                .map(|s| s.file)
                .collect()
        };
        let publish = |src: &Path, prune: bool| {
            let mut args = vec!["publish", src.to_str().unwrap(), dest.as_str()];
            if prune {
                args.push("--prune");
            }
            ok(shoal(&args, &env))
        };
        publish(&sets[0].1, false);
        let a = files_of();
        publish(&sets[1].1, false);
        let b = files_of();
        // A failed publish's leftover.
        let orphan = segment_name(77, 0x0bad_cafe);
        if dest.starts_with("s3://") {
            minio.put(&format!("pruned/{orphan}"), b"not a segment");
        } else {
            std::fs::write(folder.join(&orphan), b"not a segment").unwrap();
        }
        assert_eq!(
            names(),
            a.union(&b).cloned().chain([orphan.clone()]).collect(),
            "{dest}: nothing deleted without --prune"
        );
        // A reader of set B, opened before C is published with --prune.
        let manifest_at = if dest.starts_with("s3://") {
            format!("{dest}/manifest.json")
        } else {
            folder.join("manifest.json").display().to_string()
        };
        let reader_b = if dest.starts_with("s3://") {
            open_s3_set(&minio, "pruned/manifest.json")
        } else {
            RemoteSetReader::open(&manifest_at, &shoal_host::remote::ReadOptions::default()).unwrap()
        };
        publish(&sets[2].1, true);
        let c = files_of();
        assert_eq!(names(), b.union(&c).cloned().collect(), "{dest}: set A and the leftover deleted, B kept");
        let q = clustered_vectors(3, 1, 16, 30);
        let req = request(&q, json!({"limit": 10}));
        assert_eq!(
            bits(&reader_b.search(&req).unwrap().0),
            bits(&sets[1].0.search(&req).unwrap()),
            "{dest}: B's reader"
        );
        // Published again with --prune: the set before is C itself, and B goes.
        publish(&sets[2].1, true);
        assert_eq!(names(), c, "{dest}");
        let reader_c = if dest.starts_with("s3://") {
            open_s3_set(&minio, "pruned/manifest.json")
        } else {
            RemoteSetReader::open(&manifest_at, &shoal_host::remote::ReadOptions::default()).unwrap()
        };
        assert_eq!(bits(&reader_c.search(&req).unwrap().0), bits(&sets[2].0.search(&req).unwrap()), "{dest}: C");
    }
}
