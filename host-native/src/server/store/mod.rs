//! One collection on disk (`docs/format.md`, "The native host's collection folder"): its
//! configuration, its segment set (a manifest naming segment files — memory-mapped or read
//! into RAM — and live-rows files), the write-ahead log, recovery, the background seal that
//! turns logged writes into a new segment, and background merges.
//!
//! Locks: writers take `wal` first (that serialises them and orders the log), check the write
//! under a read lock of `col`, log it, then apply it under a write lock of `col` — still
//! holding `wal`, so the collection always holds exactly the writes logged so far. Searches
//! take only a read lock of `col`, so they run in parallel and never wait for a log sync. Seals
//! and merges build their segment without any lock and swap it in under `set` (one manifest
//! writer at a time) and a short write lock of `col`.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, RwLock};

use serde_json::Value;
use shoal_core::set::{Manifest, parse_live_name, parse_segment_name};
use shoal_core::{Collection, CollectionConfig, IndexKind, PointId, Schema, SealedSegment, SparseVector};
use shoal_format::AlignedBytes;

use super::batch::{self, Batch};
use super::wal::{self, Kind, ReplayEnd, WalWriter};
use super::{ApiError, Options};
use crate::storage::{MmapSegment, monotonic_micros, write_atomic};

mod meta;
mod schema;
mod seal;

pub use meta::Meta;
use schema::infer_schema;
pub use schema::schema_json;

/// A collection being served.
pub struct Store {
    /// The collection's name.
    pub name: String,
    dir: PathBuf,
    /// Its configuration.
    pub meta: Meta,
    col: RwLock<Collection>,
    wal: Mutex<WalWriter>,
    /// The `wal` of the last manifest written: logs below it are in the segments.
    manifest_wal: AtomicU64,
    /// Points logged since the last seal started.
    unsealed: AtomicU64,
    /// One seal at a time.
    seal_lock: Mutex<()>,
    sealing: AtomicBool,
    /// Signalled when a seal takes the unsealed points: writers held back by
    /// [`wait_for_seal`](Self::wait_for_seal) look again.
    seal_started: (Mutex<()>, Condvar),
    /// One merge at a time.
    merge_lock: Mutex<()>,
    merging: AtomicBool,
    /// One writer of the manifest (and of the files it names) at a time.
    set_lock: Mutex<()>,
    /// Numbers the temporary files of segments being built.
    temp: AtomicU64,
    /// Set when the collection is deleted: a running seal stops touching its files.
    dropped: AtomicBool,
    opts: Arc<Options>,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store").field("name", &self.name).field("dir", &self.dir).finish()
    }
}

/// The manifest's file name in a collection folder.
const MANIFEST: &str = "manifest.json";

/// The most a payload change may rewrite at once (ids and vectors of its points).
const MAX_PAYLOAD_EDIT_BYTES: usize = 256 << 20;

/// A segment file of the single-segment layout of earlier versions (`segment-G.shoal`).
fn legacy_segment_generation(name: &str) -> Option<u64> {
    name.strip_prefix("segment-")?.strip_suffix(".shoal")?.parse().ok()
}

/// Appends a record to the log, as an [`ApiError`] naming the file on failure.
fn append(wal: &mut WalWriter, kind: Kind, body: &[u8]) -> Result<(), ApiError> {
    wal.append(kind, body).map_err(|e| io_err(wal.file_path(), "append to", e))
}

fn io_err(path: &Path, what: &str, e: std::io::Error) -> ApiError {
    ApiError::internal(format!("{what} {}: {e}", path.display()))
}

/// The log generations in a collection folder, ascending.
fn wal_generations(dir: &Path) -> Result<Vec<u64>, ApiError> {
    let mut wals = Vec::new();
    for entry in fs::read_dir(dir).map_err(|e| io_err(dir, "list", e))? {
        let entry = entry.map_err(|e| io_err(dir, "list", e))?;
        if let Some(g) = wal::generation_of(&entry.file_name().to_string_lossy()) {
            wals.push(g);
        }
    }
    wals.sort_unstable();
    Ok(wals)
}

/// The manifest of a collection folder (`None`: no segments yet).
fn read_manifest(dir: &Path) -> Result<Option<Manifest>, ApiError> {
    let path = dir.join(MANIFEST);
    match fs::read(&path) {
        Ok(bytes) => {
            Manifest::from_json(&bytes).map(Some).map_err(|e| ApiError::internal(format!("{}: {e}", path.display())))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(io_err(&path, "read", e)),
    }
}

/// A segment file's bytes for the core: memory-mapped, or read into RAM.
fn segment_storage(path: &Path, on_disk: bool) -> Result<Box<dyn shoal_core::SegmentBytes>, shoal_core::Error> {
    let fail = |e: String| shoal_core::Error::BadSet(format!("{}: {e}", path.display()));
    if on_disk {
        let seg = MmapSegment::open(path).map_err(|e| fail(e.to_string()))?;
        // Re-ranking reads scattered vectors: read-ahead would only evict useful pages.
        seg.advise_random();
        Ok(Box::new(seg))
    } else {
        // Read straight into the aligned buffer the reader needs (one copy, not two).
        use std::io::Read;
        let mut file = fs::File::open(path).map_err(|e| fail(e.to_string()))?;
        let len = file.metadata().map_err(|e| fail(e.to_string()))?.len();
        let len = usize::try_from(len).map_err(|_| fail("larger than memory".into()))?;
        let mut bytes = AlignedBytes::zeroed(len);
        file.read_exact(bytes.as_mut_slice()).map_err(|e| fail(e.to_string()))?;
        Ok(Box::new(bytes))
    }
}

/// A new collection of `meta`'s configuration (`config`, `schema`: what [`Meta::parse`] gave).
fn empty_collection(meta: &Meta, config: CollectionConfig, schema: Schema) -> Result<Collection, ApiError> {
    let mut col = Collection::with_schema(config, schema).map_err(ApiError::core)?;
    if !meta.dense_vectors.is_empty() {
        col.set_dense_vectors(meta.dense_specs()?).map_err(ApiError::core)?;
    }
    col.set_sparse_vectors(meta.sparse_specs()?).map_err(ApiError::core)?;
    Ok(col)
}

/// Opens the segment set of a collection folder (or an empty collection) with `meta`'s
/// configuration; returns it and the manifest's `wal` (1 without a manifest).
fn open_set(dir: &Path, meta: &Meta) -> Result<(Collection, u64), ApiError> {
    let (config, schema, index) = meta.parse()?;
    let specs = meta.sparse_specs()?;
    let col = match read_manifest(dir)? {
        None => empty_collection(meta, config, schema)?,
        Some(m) => {
            let col = Collection::open_set(&m, &mut |e| segment_storage(&dir.join(&e.file), meta.on_disk), &mut |l| {
                let path = dir.join(&l.file);
                fs::read(&path).map_err(|e| shoal_core::Error::BadSet(format!("{}: {e}", path.display())))
            })
            .map_err(|e| ApiError::internal(format!("{}: {e}", dir.join(MANIFEST).display())))?;
            if col.dense_vectors() != meta.dense_specs()? || col.sparse_vectors() != specs {
                return Err(ApiError::internal(format!(
                    "{}: differs from collection.json",
                    dir.join(MANIFEST).display()
                )));
            }
            return Ok((with_host_settings(col, index)?, m.wal.unwrap_or(1)));
        }
    };
    Ok((with_host_settings(col, index)?, 1))
}

/// The host's settings on an opened collection: its clock and the configured index.
fn with_host_settings(mut col: Collection, index: IndexKind) -> Result<Collection, ApiError> {
    col.set_clock(Box::new(monotonic_micros));
    col.set_index_kind(index).map_err(|e| ApiError::bad_request(format!("{e}")))?;
    Ok(col)
}

/// Moves a folder of the single-segment layout (`segment-G.shoal` + logs from G) to a segment
/// set: the segment becomes the set's first file and the manifest says the logs from G follow.
fn migrate_legacy(dir: &Path, meta: &Meta) -> Result<(), ApiError> {
    if dir.join(MANIFEST).exists() {
        return Ok(());
    }
    let mut newest = None;
    for entry in fs::read_dir(dir).map_err(|e| io_err(dir, "list", e))?.flatten() {
        if let Some(g) = legacy_segment_generation(&entry.file_name().to_string_lossy()) {
            newest = newest.max(Some(g));
        }
    }
    let Some(g) = newest else { return Ok(()) };
    let path = dir.join(format!("segment-{g:010}.shoal"));
    write_first_segment(dir, meta, &path, g, true)?;
    eprintln!("shoal: {}: moved to a segment set (manifest.json)", path.display());
    Ok(())
}

/// Makes `src` (a segment file) the only segment of the set in `dir` with `wal` as the first
/// log to replay: hard-linked (or copied) under its set name, then the manifest.
fn write_first_segment(dir: &Path, meta: &Meta, src: &Path, wal_from: u64, link: bool) -> Result<(), ApiError> {
    let (config, schema, index) = meta.parse()?;
    let storage = segment_storage(src, true).map_err(ApiError::core)?;
    let seg = SealedSegment::open(storage).map_err(|e| ApiError::internal(format!("{}: {e}", src.display())))?;
    if seg.dim() != config.dim {
        return Err(ApiError::internal(format!("{}: dimension differs from collection.json", src.display())));
    }
    drop((config, schema));
    let name = shoal_core::set::segment_name(1, seg.table_crc());
    let dst = dir.join(&name);
    drop(seg);
    let _ = fs::remove_file(&dst);
    if !link || fs::hard_link(src, &dst).is_err() {
        fs::copy(src, &dst).map_err(|e| io_err(src, "copy", e))?;
    }
    fs::File::open(&dst).and_then(|f| f.sync_all()).map_err(|e| io_err(&dst, "fsync", e))?;
    let opened = Collection::open(segment_storage(&dst, true).map_err(ApiError::core)?).map_err(ApiError::core)?;
    // The schema the segment carries (collection.json holds only the fields given at
    // creation; later ones are in the segment, or in the logs that follow it).
    let mut cp = opened.checkpoint(Some(wal_from));
    cp.manifest.index = index.to_json();
    write_atomic(&dir.join(MANIFEST), &cp.manifest.to_json()).map_err(|e| ApiError::internal(e.to_string()))
}

/// A batch's dense vectors as the core takes them: the first, then the others in name order.
fn dense_lists<'b>(b: &'b Batch<'_>) -> Vec<&'b [f32]> {
    std::iter::once(&b.vectors[..]).chain(b.dense.iter().map(|(_, v)| &v[..])).collect()
}

/// Checks a batch's dense vectors against the collection: the first's dimension here, the
/// others' count, lengths and values by the core.
fn check_dense(col: &Collection, b: &Batch<'_>) -> Result<(), ApiError> {
    if b.dim != col.dim() {
        return Err(ApiError::core(shoal_core::Error::DimensionMismatch { expected: col.dim(), found: b.dim }));
    }
    if let Some((i, (dim, _))) = b
        .dense
        .iter()
        .enumerate()
        .find(|(i, (dim, _))| col.dense_vectors().get(i + 1).is_some_and(|spec| spec.dim != *dim))
    {
        let expected = col.dense_vectors()[i + 1].dim;
        return Err(ApiError::core(shoal_core::Error::DimensionMismatch { expected, found: *dim }));
    }
    col.check_dense(b.ids.len(), &dense_lists(b)[1..]).map_err(ApiError::core)
}

/// Applies one logged record to a collection.
/// A batch's sparse vectors as the collection's columns (one per sparse vector, in its order,
/// empty where the batch has none): a name the collection does not have, or a column of
/// another length, is an error.
fn sparse_columns(col: &Collection, b: &Batch<'_>) -> Result<Vec<Vec<Option<SparseVector>>>, String> {
    let mut out = vec![Vec::new(); col.sparse_vectors().len()];
    for (name, column) in &b.sparse {
        let t = col.sparse_position(name).ok_or_else(|| format!("the collection has no sparse vector {name:?}"))?;
        if column.len() != b.ids.len() {
            return Err(format!("sparse vector {name:?}: {} vectors for {} points", column.len(), b.ids.len()));
        }
        out[t] = column.clone();
    }
    Ok(out)
}

fn apply(col: &mut Collection, kind: Kind, body: &[u8]) -> Result<u64, String> {
    match kind {
        Kind::Upsert => {
            let b = batch::parse(body)?;
            let sparse = sparse_columns(col, &b)?;
            col.upsert_vectors(&b.ids, &dense_lists(&b), &b.payloads, &sparse).map_err(|e| e.to_string())?;
            Ok(b.ids.len() as u64)
        }
        Kind::Delete => {
            col.delete(&wal::parse_delete(body)?).map_err(|e| e.to_string())?;
            Ok(0)
        }
        Kind::Schema => {
            let text = std::str::from_utf8(body).map_err(|e| e.to_string())?;
            let schema = Schema::from_json(text).map_err(|e| e.to_string())?;
            if col.nested() {
                // Declared paths, each record the whole list then (paths are removed too): the
                // last record replayed is the list when the log ended.
                return col.set_declared_paths(schema).map(|()| 0).map_err(|e| e.to_string());
            }
            // Flat fields only grow. A manifest written after this record may already hold a
            // larger schema (its `fields` are the schema at the swap): a logged schema it
            // contains is applied.
            let contained =
                col.schema().is_some_and(|now| schema.fields().all(|(n, t)| now.field(n).map(|f| f.1) == Some(t)));
            if !contained {
                col.extend_schema(schema).map_err(|e| e.to_string())?;
            }
            Ok(0)
        }
    }
}

/// Replays a log into `col` from byte `from` up to `to` (or its end); returns where it
/// stopped and the points it upserted.
fn replay_into(col: &mut Collection, path: &Path, from: u64, to: Option<u64>) -> Result<(ReplayEnd, u64), ApiError> {
    let mut points = 0;
    let end = wal::replay(path, from, to, |kind, body| {
        points +=
            apply(col, kind, body).map_err(|e| format!("{}: a logged write does not apply: {e}", path.display()))?;
        Ok(())
    })
    .map_err(ApiError::internal)?;
    Ok((end, points))
}

impl Store {
    /// Creates a new collection folder `dir` (which must not exist).
    pub fn create(dir: PathBuf, name: &str, meta: Meta, opts: Arc<Options>) -> Result<Store, ApiError> {
        let (config, schema, index) = meta.parse()?;
        create_folder(&dir, name, &meta, None)?;
        let wal =
            WalWriter::reopen(&dir, 1, wal::FILE_HEADER, opts.sync).map_err(|e| io_err(&dir, "open log in", e))?;
        let col = empty_collection(&meta, config, schema)?;
        Ok(Store::new(name, dir, meta, with_host_settings(col, index)?, wal, 1, 0, opts))
    }

    #[allow(clippy::too_many_arguments)]
    fn new(
        name: &str,
        dir: PathBuf,
        meta: Meta,
        mut col: Collection,
        wal: WalWriter,
        manifest_wal: u64,
        unsealed: u64,
        opts: Arc<Options>,
    ) -> Store {
        col.set_merge_policy(opts.merge_policy);
        Store {
            name: name.to_string(),
            dir,
            meta,
            col: RwLock::new(col),
            wal: Mutex::new(wal),
            manifest_wal: AtomicU64::new(manifest_wal),
            unsealed: AtomicU64::new(unsealed),
            seal_started: (Mutex::new(()), Condvar::new()),
            seal_lock: Mutex::new(()),
            sealing: AtomicBool::new(false),
            merge_lock: Mutex::new(()),
            merging: AtomicBool::new(false),
            set_lock: Mutex::new(()),
            temp: AtomicU64::new(0),
            dropped: AtomicBool::new(false),
            opts,
        }
    }

    /// Opens an existing collection folder: opens the segment set its manifest names, replays
    /// the logs from the manifest's `wal` on, cuts a torn tail off the last log, removes every
    /// file the manifest does not name (what an interrupted seal or merge left behind).
    pub fn open(dir: PathBuf, name: &str, opts: Arc<Options>) -> Result<Store, ApiError> {
        let meta_path = dir.join("collection.json");
        let text = fs::read(&meta_path).map_err(|e| io_err(&meta_path, "read", e))?;
        let meta: Meta =
            serde_json::from_slice(&text).map_err(|e| ApiError::internal(format!("{}: {e}", meta_path.display())))?;
        migrate_legacy(&dir, &meta)?;
        let (mut col, wal_from) = open_set(&dir, &meta)?;
        let live: Vec<u64> = wal_generations(&dir)?.into_iter().filter(|&g| g >= wal_from).collect();
        let mut unsealed = 0;
        let mut last = None;
        for (i, &g) in live.iter().enumerate() {
            let path = wal::path(&dir, g);
            let (end, points) = replay_into(&mut col, &path, wal::FILE_HEADER, None)?;
            unsealed += points;
            if end.torn && i + 1 != live.len() {
                return Err(ApiError::internal(format!(
                    "{}: corrupt record at byte {} in a log that is not the last",
                    path.display(),
                    end.len
                )));
            }
            if end.torn {
                eprintln!("shoal: {}: cut a torn write at byte {} (never acknowledged)", path.display(), end.len);
            }
            last = Some((g, end.len));
        }
        let wal = match last {
            Some((g, len)) if len >= wal::FILE_HEADER => WalWriter::reopen(&dir, g, len, opts.sync),
            Some((g, _)) => fs::remove_file(wal::path(&dir, g)).and_then(|()| WalWriter::create(&dir, g, opts.sync)),
            None => WalWriter::create(&dir, wal_from, opts.sync),
        }
        .map_err(|e| io_err(&dir, "open log in", e))?;
        let store = Store::new(name, dir, meta, col, wal, wal_from, unsealed, opts);
        let manifest = read_manifest(&store.dir)?;
        store.collect_garbage(manifest.as_ref(), wal_from, true);
        Ok(store)
    }

    /// Deletes the files `manifest` does not name: segment and live-rows files, logs below
    /// `wal_from`, files of the single-segment layout, and with `temporary` the `*.tmp` files
    /// (only when no seal or merge can be writing one: at open).
    fn collect_garbage(&self, manifest: Option<&Manifest>, wal_from: u64, temporary: bool) {
        let Ok(entries) = fs::read_dir(&self.dir) else { return };
        let named = |name: &str| {
            manifest.is_some_and(|m| {
                m.segments.iter().any(|s| s.file == name || s.live.as_ref().is_some_and(|l| l.file == name))
            })
        };
        for entry in entries.flatten() {
            let name = entry.file_name();
            let name = name.to_string_lossy();
            let set_file = parse_segment_name(&name).is_some() || parse_live_name(&name).is_some();
            let stale = (set_file && !named(&name))
                || wal::generation_of(&name).is_some_and(|g| g < wal_from)
                || legacy_segment_generation(&name).is_some()
                || (temporary && name.ends_with(".tmp"));
            if stale {
                let _ = fs::remove_file(entry.path());
            }
        }
    }

    /// The log, locked for a write; 404 once the collection is deleted (a request that found
    /// it before the delete must not write into its removed folder).
    fn lock_wal(&self) -> Result<std::sync::MutexGuard<'_, WalWriter>, ApiError> {
        let wal = self.wal.lock().expect("log lock poisoned");
        if self.dropped.load(Ordering::Acquire) {
            return Err(ApiError::not_found(&self.name));
        }
        Ok(wal)
    }

    /// A read lock on the collection, for searches.
    pub fn read(&self) -> std::sync::RwLockReadGuard<'_, Collection> {
        self.col.read().expect("collection lock poisoned")
    }

    /// Inserts or replaces points; returns once the write is logged (and synced).
    pub fn upsert(self: &Arc<Self>, b: &Batch<'_>, raw: Option<&[u8]>) -> Result<(), ApiError> {
        if b.ids.len() > batch::MAX_POINTS {
            // A logged batch must parse on replay, which takes at most this many points.
            return Err(ApiError::bad_request(format!(
                "{} points in one request; the limit is {}",
                b.ids.len(),
                batch::MAX_POINTS
            )));
        }
        self.wait_for_seal()?;
        let wal = self.lock_wal()?;
        self.upsert_locked(wal, b, raw)
    }

    /// [`upsert`](Self::upsert) with the log's lock held (nothing else writes meanwhile).
    fn upsert_locked(
        self: &Arc<Self>,
        mut wal: std::sync::MutexGuard<'_, WalWriter>,
        b: &Batch<'_>,
        raw: Option<&[u8]>,
    ) -> Result<(), ApiError> {
        let extended = {
            let col = self.read();
            check_dense(&col, b)?;
            let extended = if self.meta.dynamic { infer_schema(col.schema(), &b.payloads) } else { None };
            col.check_insert(b.ids.len(), &b.vectors, &b.payloads, extended.as_ref()).map_err(ApiError::core)?;
            sparse_columns(&col, b).map_err(ApiError::bad_request)?;
            extended
        };
        if let Some(schema) = &extended {
            let text = schema_json(schema).to_string();
            append(&mut wal, Kind::Schema, text.as_bytes())?;
        }
        let encoded;
        let body = match raw {
            Some(r) => r,
            None => {
                encoded = batch::encode_with_sparse(b.dim, &b.ids, &b.vectors, (&b.dense, &b.sparse), &b.payloads);
                &encoded
            }
        };
        let logged = append(&mut wal, Kind::Upsert, body);
        let mut col = self.col.write().expect("collection lock poisoned");
        if let Some(schema) = extended {
            // Logged: apply it even if the batch's record failed.
            col.extend_schema(schema).map_err(ApiError::core)?;
        }
        logged?;
        let sparse = sparse_columns(&col, b).map_err(ApiError::bad_request)?;
        col.upsert_vectors(&b.ids, &dense_lists(b), &b.payloads, &sparse).map_err(ApiError::core)?;
        drop(col);
        drop(wal);
        let unsealed = self.unsealed.fetch_add(b.ids.len() as u64, Ordering::Relaxed) + b.ids.len() as u64;
        self.maybe_seal(unsealed);
        Ok(())
    }

    /// Rewrites the payloads of points — those of `ids` (each must exist), or every point
    /// passing `filter` — to `edit(old payload)`, keeping their vectors: an upsert of the same
    /// points, logged and applied under the log's lock, so no other write comes between the
    /// read and the write. An error of `edit`, or new payloads of more than
    /// [`MAX_PAYLOAD_EDIT_BYTES`] in all (as JSON), changes nothing. Returns how many points
    /// changed.
    pub fn edit_payloads(
        self: &Arc<Self>,
        ids: Option<&[PointId]>,
        filter: Option<&Value>,
        edit: impl Fn(Value) -> Result<Value, ApiError>,
    ) -> Result<usize, ApiError> {
        self.wait_for_seal()?;
        let wal = self.lock_wal()?;
        self.writable("payload change")?;
        let batch = {
            let col = self.read();
            let ids = match (ids, filter) {
                (Some(ids), _) => {
                    if let Some(&missing) = ids.iter().find(|&&id| !col.contains(id)) {
                        return Err(ApiError {
                            status: axum::http::StatusCode::NOT_FOUND,
                            code: "not_found",
                            message: format!("Not found: No point with id {missing} found"),
                        });
                    }
                    ids.to_vec()
                }
                (None, f) => col.matching_ids(f).map_err(ApiError::core)?,
            };
            // Logged as one batch of the points with their vectors: as many as replay takes,
            // and a bounded copy of vectors built under the log's lock.
            let floats: usize = col.dense_vectors().iter().map(|s| s.dim).sum();
            let bytes = ids.len().saturating_mul(32 + 4 * floats);
            if ids.len() > batch::MAX_POINTS || bytes > MAX_PAYLOAD_EDIT_BYTES {
                return Err(ApiError::bad_request(format!(
                    "{} points to change in one request: a payload change rewrites each point with its \
                     vector, at most {} points or {} MiB of them here; narrow the filter or change fewer ids",
                    ids.len(),
                    batch::MAX_POINTS,
                    MAX_PAYLOAD_EDIT_BYTES >> 20
                )));
            }
            let mut vectors = Vec::with_capacity(ids.len() * col.dim());
            // Each point keeps its other dense vectors (counted in the bound below as well).
            let mut dense: batch::DenseColumns = col.dense_vectors()[1..].iter().map(|s| (s.dim, Vec::new())).collect();
            let mut payloads = Vec::with_capacity(ids.len());
            // Each point keeps its sparse vectors too.
            let mut sparse_pairs = 0usize;
            let mut sparse: batch::SparseColumns =
                col.sparse_vectors().iter().map(|s| (s.name.clone(), Vec::with_capacity(ids.len()))).collect();
            let mut payload_bytes = 0usize;
            for &id in &ids {
                vectors.extend_from_slice(col.vector(id).expect("a live point of a full collection has its vector"));
                for (d, (_, column)) in dense.iter_mut().enumerate() {
                    column
                        .extend_from_slice(col.dense_vector(id, d + 1).expect("a live point holds every dense vector"));
                }
                for (name, column) in &mut sparse {
                    let v = col.sparse_vector(id, name).map_err(ApiError::core)?;
                    sparse_pairs += v.as_ref().map_or(0, |v| v.entries().len());
                    if sparse_pairs.saturating_mul(8) > MAX_PAYLOAD_EDIT_BYTES {
                        return Err(ApiError::bad_request(format!(
                            "the points' sparse vectors come to more than {} MiB in one payload change; change fewer points",
                            MAX_PAYLOAD_EDIT_BYTES >> 20
                        )));
                    }
                    column.push(v);
                }
                let new = edit(col.payload(id).unwrap_or(Value::Null))?;
                payload_bytes += serde_json::to_vec(&new).map_or(0, |b| b.len());
                if payload_bytes > MAX_PAYLOAD_EDIT_BYTES {
                    return Err(ApiError::bad_request(format!(
                        "the changed payloads come to more than {} MiB in one request; change fewer points",
                        MAX_PAYLOAD_EDIT_BYTES >> 20
                    )));
                }
                payloads.push(if new.as_object().is_some_and(serde_json::Map::is_empty) { Value::Null } else { new });
            }
            if payloads.iter().all(Value::is_null) {
                payloads.clear();
            }
            sparse.retain(|(_, column)| column.iter().any(Option::is_some));
            Batch { dim: col.dim(), ids, vectors: vectors.into(), payloads, sparse, dense }
        };
        if batch.ids.is_empty() {
            return Ok(0);
        }
        let n = batch.ids.len();
        self.upsert_locked(wal, &batch, None)?;
        Ok(n)
    }

    /// Deletes points by id, or every point passing `filter`; returns how many existed.
    pub fn delete(&self, ids: Option<&[PointId]>, filter: Option<&Value>) -> Result<usize, ApiError> {
        let mut wal = self.lock_wal()?;
        self.writable("delete")?;
        let ids = match (ids, filter) {
            (Some(ids), _) => ids.to_vec(),
            (None, f) => self.read().matching_ids(f).map_err(ApiError::core)?,
        };
        if ids.is_empty() {
            return Ok(0);
        }
        append(&mut wal, Kind::Delete, &wal::delete_body(&ids))?;
        self.col.write().expect("collection lock poisoned").delete(&ids).map_err(ApiError::core)
    }

    /// Refuses a change to a codes-only collection before anything is logged.
    fn writable(&self, what: &'static str) -> Result<(), ApiError> {
        if self.read().codes_only() { Err(ApiError::core(shoal_core::Error::CodesOnly(what))) } else { Ok(()) }
    }

    /// Marks the collection deleted (a running seal leaves its files alone) and removes its
    /// folder.
    pub fn destroy(&self) -> Result<(), ApiError> {
        self.dropped.store(true, Ordering::Release);
        self.wake_writers();
        // The lock order of seals and swaps: seal lock, set lock, then log lock. A merge
        // reaching its swap after this finds `dropped` set under the set lock.
        let _one = self.seal_lock.lock().expect("seal lock poisoned");
        let _set = self.set_lock.lock().expect("set lock poisoned");
        let _wal = self.wal.lock().expect("log lock poisoned");
        let trash = self.dir.with_file_name(format!(".{}.deleting", self.name));
        fs::rename(&self.dir, &trash).map_err(|e| io_err(&self.dir, "rename", e))?;
        fs::remove_dir_all(&trash).map_err(|e| io_err(&trash, "remove", e))
    }

    /// Gauges for `/metrics`: points, unsealed points, segments, segment bytes.
    pub fn gauges(&self) -> Gauges {
        let col = self.read();
        let segments = col.segments();
        Gauges {
            points: col.len() as u64,
            unsealed: self.unsealed.load(Ordering::Relaxed),
            segments: segments.len() as u64,
            segment_bytes: segments.iter().map(|s| s.bytes as u64).sum(),
            mapped: self.meta.on_disk,
            background: self.sealing.load(Ordering::Relaxed) as u64 + self.merging.load(Ordering::Relaxed) as u64,
        }
    }
}

/// What `/metrics` reports per collection.
#[derive(Debug, Clone, Copy)]
pub struct Gauges {
    /// Live points.
    pub points: u64,
    /// Points logged since the last seal began.
    pub unsealed: u64,
    /// Segment files of the set.
    pub segments: u64,
    /// Their total size.
    pub segment_bytes: u64,
    /// Whether it is memory-mapped.
    pub mapped: bool,
    /// Background seals and merges running (0, 1 or 2).
    pub background: u64,
}

/// Writes a new collection folder `dir` — `collection.json`, an empty log of generation 1 and,
/// when given, a copy of `segment` as the set's only segment (with its manifest) — in a
/// temporary folder renamed into place, so a crash leaves no half collection.
pub fn create_folder(dir: &Path, name: &str, meta: &Meta, segment: Option<&Path>) -> Result<(), ApiError> {
    let parent = dir.parent().expect("collections live in a folder");
    let tmp = parent.join(format!(".{name}.creating"));
    let _ = fs::remove_dir_all(&tmp);
    fs::create_dir_all(&tmp).map_err(|e| io_err(&tmp, "create", e))?;
    let text = serde_json::to_vec_pretty(meta).expect("meta serialises");
    write_atomic(&tmp.join("collection.json"), &text).map_err(|e| ApiError::internal(e.to_string()))?;
    if let Some(src) = segment {
        write_first_segment(&tmp, meta, src, 1, false)?;
    }
    drop(WalWriter::create(&tmp, 1, true).map_err(|e| io_err(&tmp, "create log in", e))?);
    fs::rename(&tmp, dir).map_err(|e| io_err(dir, "rename into place", e))?;
    fs::File::open(parent).and_then(|d| d.sync_all()).map_err(|e| io_err(parent, "fsync", e))
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use shoal_core::Metric;

    use super::*;

    fn opts() -> Arc<Options> {
        Arc::new(Options { sync: true, seal_rows: 1_000_000, merge_policy: shoal_core::set::MergePolicy::default() })
    }

    /// A manifest written by a merge holds the schema at the swap, which can be larger than a
    /// schema record of a log it does not cover yet: replaying that record changes nothing.
    #[test]
    fn replaying_a_schema_the_collection_already_holds_is_a_no_op() {
        let config = CollectionConfig { dim: 2, metric: Metric::L2 };
        let mut col =
            Collection::with_schema(config, Schema::from_json(r#"{"a": "keyword", "b": "integer"}"#).unwrap()).unwrap();
        apply(&mut col, Kind::Schema, br#"{"a": "keyword"}"#).unwrap();
        apply(&mut col, Kind::Schema, br#"{"a": "keyword", "b": "integer"}"#).unwrap();
        assert_eq!(col.schema().unwrap().len(), 2);
        // A logged field with another type is still an error.
        assert!(apply(&mut col, Kind::Schema, br#"{"a": "integer"}"#).is_err());
    }

    /// A collection with nested payloads: each schema record is the list of declared paths
    /// then, so replay ends at the last one, whatever was removed or retyped between.
    #[test]
    fn replaying_declared_paths_ends_at_the_last_record() {
        let config = CollectionConfig { dim: 2, metric: Metric::L2 };
        let paths = Collection::parse_nested_schema(&serde_json::json!({"m.a": "keyword", "b": "integer"})).unwrap();
        let mut col = Collection::with_schema(config, paths).unwrap();
        apply(&mut col, Kind::Schema, br#"{"m.a": "keyword"}"#).unwrap();
        apply(&mut col, Kind::Schema, br#"{"b": "float"}"#).unwrap();
        let fields: Vec<_> = col.schema().unwrap().fields().map(|(n, t)| (n.to_string(), t.name())).collect();
        assert_eq!(fields, [("b".to_string(), "float")]);
        assert!(col.nested());
        apply(&mut col, Kind::Schema, b"{}").unwrap();
        assert!(col.schema().unwrap().fields().next().is_none() && col.nested());
        // A flat collection's fields stay.
        let mut flat = Collection::with_schema(config, Schema::from_json(r#"{"a": "keyword"}"#).unwrap()).unwrap();
        assert!(flat.set_declared_paths(Schema::from_json("{}").unwrap()).is_err());
        assert_eq!(flat.schema().unwrap().len(), 1);
    }

    /// A folder of the single-segment layout (a dynamic collection: `collection.json` has no
    /// fields, the segment and the log have them) moves to a set keeping the segment's schema.
    #[test]
    fn an_old_single_segment_folder_moves_to_a_set_with_its_schema_and_payloads() {
        let dir = shoal_testkit::TempDir::new("store", "legacy");
        let meta = Meta {
            dim: 2,
            metric: "l2".into(),
            fields: json!({}),
            index: json!({}),
            on_disk: true,
            dynamic: true,
            payload: None,
            sparse_vectors: serde_json::Map::new(),
            vector_name: None,
            dense_vectors: serde_json::Map::new(),
        };
        std::fs::write(dir.path("collection.json"), serde_json::to_vec(&meta).unwrap()).unwrap();
        let schema = Schema::from_json(r#"{"w": "integer"}"#).unwrap();
        let mut old = Collection::with_schema(CollectionConfig { dim: 2, metric: Metric::L2 }, schema).unwrap();
        old.insert_with_payloads(&[1, 2], &[0.0, 0.0, 1.0, 1.0], &[json!({"w": 5}), json!({"w": 6})]).unwrap();
        std::fs::write(dir.path("segment-0000000003.shoal"), old.to_bytes().unwrap()).unwrap();
        let mut wal = WalWriter::create(&dir.0, 3, true).unwrap();
        wal.append(Kind::Upsert, &batch::encode(2, &[PointId::Num(3)], &[2.0, 2.0], &[json!({"w": 9})])).unwrap();
        drop(wal);
        let store = Arc::new(Store::open(dir.0.clone(), "legacy", opts()).unwrap());
        assert!(dir.path("manifest.json").exists() && !dir.path("segment-0000000003.shoal").exists());
        let col = store.read();
        assert_eq!(col.len(), 3);
        assert_eq!(
            (col.payload(PointId::Num(1)), col.payload(PointId::Num(3))),
            (Some(json!({"w": 5})), Some(json!({"w": 9})))
        );
        drop(col);
        // Sealed and merged into one segment, the payloads stay.
        store.seal().unwrap();
        store.merge(&[0, 1]).unwrap();
        let col = store.read();
        assert_eq!(col.segment_count(), 1);
        assert_eq!(
            (col.payload(PointId::Num(2)), col.payload(PointId::Num(3))),
            (Some(json!({"w": 6})), Some(json!({"w": 9})))
        );
        drop(col);
        drop(store);
        let again = Store::open(dir.0.clone(), "legacy", opts()).unwrap();
        assert_eq!(again.read().payload(PointId::Num(1)), Some(json!({"w": 5})));
    }
}
