//! One collection on disk (`docs/format.md`, "Collection folder"): its configuration, the
//! current sealed segment (memory-mapped or read into RAM), the write-ahead log, recovery, and
//! the background seal that turns logged writes into a new segment.
//!
//! Locks: writers take `wal` first (that serialises them and orders the log), check the write
//! under a read lock of `col`, log it, then apply it under a write lock of `col`. Searches take
//! only a read lock of `col`, so they run in parallel and never wait for a log sync.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use serde_json::{Value, json};
use shoal_core::{Collection, CollectionConfig, IndexKind, Metric, Schema};
use shoal_format::AlignedBytes;

use super::batch::{self, Batch};
use super::wal::{self, Kind, ReplayEnd, WalWriter};
use super::{ApiError, Options};
use crate::storage::{MmapSegment, monotonic_micros, write_atomic};

/// How a collection was configured at creation (`collection.json`).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Meta {
    /// Vector dimension.
    pub dim: usize,
    /// `cosine`, `dot` or `l2`.
    pub metric: String,
    /// Payload fields declared at creation (`{"tag": "keyword", ...}`).
    #[serde(default = "empty_object")]
    pub fields: Value,
    /// Seal options (`{"index": "ivf-rabitq", "bits": 1}`); `{}` is flat.
    #[serde(default = "empty_object")]
    pub index: Value,
    /// Full vectors memory-mapped (true) or read into RAM (false).
    #[serde(default = "yes")]
    pub on_disk: bool,
    /// Unknown payload fields add themselves to the schema (as Qdrant collections do) instead
    /// of being refused.
    #[serde(default)]
    pub dynamic: bool,
}

fn empty_object() -> Value {
    json!({})
}

fn yes() -> bool {
    true
}

impl Meta {
    /// Checks the configuration and returns what it means.
    pub fn parse(&self) -> Result<(CollectionConfig, Schema, IndexKind), ApiError> {
        let metric = match self.metric.as_str() {
            "cosine" => Metric::Cosine,
            "dot" => Metric::Dot,
            "l2" => Metric::L2,
            m => return Err(ApiError::bad_request(format!("metric {m:?}: expected cosine, dot or l2"))),
        };
        if self.dim == 0 || self.dim > 65_536 {
            return Err(ApiError::bad_request(format!("dim {} is not in 1..=65536", self.dim)));
        }
        let schema = Collection::parse_schema(&self.fields).map_err(ApiError::core)?;
        let index = IndexKind::from_json(&self.index.to_string()).map_err(ApiError::core)?;
        if matches!(index, IndexKind::IvfRabitq(p) if p.codes_only) {
            // A served collection takes writes and reseals; a codes-only segment cannot be
            // rebuilt. Codes-only segments are served read-only through `shoal import`.
            return Err(ApiError::bad_request(
                "index.codes_only: a served collection keeps its vectors (import a codes-only segment instead)",
            ));
        }
        Ok((CollectionConfig { dim: self.dim, metric }, schema, index))
    }
}

/// A collection being served.
pub struct Store {
    /// The collection's name.
    pub name: String,
    dir: PathBuf,
    /// Its configuration.
    pub meta: Meta,
    index: IndexKind,
    col: RwLock<Collection>,
    wal: Mutex<WalWriter>,
    /// The generation of the current segment file (0: none).
    segment: AtomicU64,
    /// Bytes of the current segment file.
    segment_bytes: AtomicU64,
    /// Points logged since the last seal started.
    unsealed: AtomicU64,
    /// One seal at a time.
    seal_lock: Mutex<()>,
    sealing: AtomicBool,
    /// Set when the collection is deleted: a running seal stops touching its files.
    dropped: AtomicBool,
    opts: Arc<Options>,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store").field("name", &self.name).field("dir", &self.dir).finish()
    }
}

fn segment_path(dir: &Path, generation: u64) -> PathBuf {
    dir.join(format!("segment-{generation:010}.shoal"))
}

/// Bytes of segment generation `generation` (0 when unreadable: a gauge only).
fn segment_size(dir: &Path, generation: u64) -> u64 {
    fs::metadata(segment_path(dir, generation)).map_or(0, |m| m.len())
}

/// Appends a record to the log, as an [`ApiError`] naming the file on failure.
fn append(wal: &mut WalWriter, kind: Kind, body: &[u8]) -> Result<(), ApiError> {
    wal.append(kind, body).map_err(|e| io_err(wal.file_path(), "append to", e))
}

fn segment_generation(name: &str) -> Option<u64> {
    name.strip_prefix("segment-")?.strip_suffix(".shoal")?.parse().ok()
}

fn io_err(path: &Path, what: &str, e: std::io::Error) -> ApiError {
    ApiError::internal(format!("{what} {}: {e}", path.display()))
}

/// The files of a collection folder: the newest segment generation and the log generations.
struct Files {
    segment: Option<u64>,
    wals: Vec<u64>,
}

fn list(dir: &Path) -> Result<Files, ApiError> {
    let mut files = Files { segment: None, wals: Vec::new() };
    for entry in fs::read_dir(dir).map_err(|e| io_err(dir, "list", e))? {
        let entry = entry.map_err(|e| io_err(dir, "list", e))?;
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if let Some(g) = segment_generation(&name) {
            files.segment = files.segment.max(Some(g));
        } else if let Some(g) = wal::generation_of(&name) {
            files.wals.push(g);
        }
    }
    files.wals.sort_unstable();
    Ok(files)
}

/// Applies one logged record to a collection.
fn apply(col: &mut Collection, kind: Kind, body: &[u8]) -> Result<u64, String> {
    match kind {
        Kind::Upsert => {
            let b = batch::parse(body)?;
            col.insert_with_payloads(&b.ids, &b.vectors, &b.payloads).map_err(|e| e.to_string())?;
            Ok(b.ids.len() as u64)
        }
        Kind::Delete => {
            col.delete(&wal::parse_delete(body)?).map_err(|e| e.to_string())?;
            Ok(0)
        }
        Kind::Schema => {
            let text = std::str::from_utf8(body).map_err(|e| e.to_string())?;
            let schema = Schema::from_json(text).map_err(|e| e.to_string())?;
            col.extend_schema(schema).map_err(|e| e.to_string())?;
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
        let mut col = Collection::with_schema(config, schema).map_err(ApiError::core)?;
        col.set_clock(Box::new(monotonic_micros));
        Ok(Store::new(name, dir, meta, index, col, wal, 0, 0, opts))
    }

    #[allow(clippy::too_many_arguments)]
    fn new(
        name: &str,
        dir: PathBuf,
        meta: Meta,
        index: IndexKind,
        col: Collection,
        wal: WalWriter,
        segment: u64,
        unsealed: u64,
        opts: Arc<Options>,
    ) -> Store {
        let segment_bytes = if segment == 0 { 0 } else { segment_size(&dir, segment) };
        Store {
            name: name.to_string(),
            dir,
            meta,
            index,
            col: RwLock::new(col),
            wal: Mutex::new(wal),
            segment: AtomicU64::new(segment),
            segment_bytes: AtomicU64::new(segment_bytes),
            unsealed: AtomicU64::new(unsealed),
            seal_lock: Mutex::new(()),
            sealing: AtomicBool::new(false),
            dropped: AtomicBool::new(false),
            opts,
        }
    }

    /// Opens an existing collection folder: maps the newest segment, replays the logs, cuts a
    /// torn tail off the last log, removes files a finished seal left behind.
    pub fn open(dir: PathBuf, name: &str, opts: Arc<Options>) -> Result<Store, ApiError> {
        let meta_path = dir.join("collection.json");
        let text = fs::read(&meta_path).map_err(|e| io_err(&meta_path, "read", e))?;
        let meta: Meta =
            serde_json::from_slice(&text).map_err(|e| ApiError::internal(format!("{}: {e}", meta_path.display())))?;
        let (_, _, index) = meta.parse()?;
        let files = list(&dir)?;
        let (mut col, segment) = open_base(&dir, &meta, files.segment)?;
        let live: Vec<u64> = files.wals.iter().copied().filter(|&g| g >= segment).collect();
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
            None => WalWriter::create(&dir, segment.max(1), opts.sync),
        }
        .map_err(|e| io_err(&dir, "open log in", e))?;
        let store = Store::new(name, dir, meta, index, col, wal, segment, unsealed, opts);
        store.remove_stale(segment, segment);
        Ok(store)
    }

    /// Deletes segments older than `segment`, logs older than `wal`, and temporary files.
    fn remove_stale(&self, segment: u64, wal: u64) {
        let Ok(entries) = fs::read_dir(&self.dir) else { return };
        for entry in entries.flatten() {
            let name = entry.file_name();
            let name = name.to_string_lossy();
            let stale = segment_generation(&name).is_some_and(|g| g < segment)
                || wal::generation_of(&name).is_some_and(|g| g < wal)
                || name.ends_with(".tmp");
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
        let mut wal = self.lock_wal()?;
        let extended = {
            let col = self.read();
            if b.dim != col.dim() {
                return Err(ApiError::core(shoal_core::Error::DimensionMismatch { expected: col.dim(), found: b.dim }));
            }
            let extended = if self.meta.dynamic { infer_schema(col.schema(), &b.payloads) } else { None };
            col.check_insert(&b.ids, &b.vectors, &b.payloads, extended.as_ref()).map_err(ApiError::core)?;
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
                encoded = batch::encode(b.dim, &b.ids, &b.vectors, &b.payloads);
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
        col.insert_with_payloads(&b.ids, &b.vectors, &b.payloads).map_err(ApiError::core)?;
        drop(col);
        drop(wal);
        let unsealed = self.unsealed.fetch_add(b.ids.len() as u64, Ordering::Relaxed) + b.ids.len() as u64;
        self.maybe_seal(unsealed);
        Ok(())
    }

    /// Deletes points by id, or every point passing `filter`; returns how many existed.
    pub fn delete(&self, ids: Option<&[u64]>, filter: Option<&Value>) -> Result<usize, ApiError> {
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

    /// Adds payload fields (`PUT /collections/{name}/index`).
    pub fn add_fields(&self, fields: &[(String, shoal_core::FieldType)]) -> Result<(), ApiError> {
        let mut wal = self.lock_wal()?;
        self.writable("schema change")?;
        let schema = {
            let col = self.read();
            let mut all = field_list(col.schema());
            for (name, ty) in fields {
                match all.iter().find(|(n, _)| n == name) {
                    Some((_, t)) if t == ty => {}
                    Some((_, t)) => {
                        return Err(ApiError::bad_request(format!("field `{name}` is already a {} field", t.name())));
                    }
                    None => all.push((name.clone(), *ty)),
                }
            }
            if col.schema().map_or(0, |s| s.len()) == all.len() {
                return Ok(());
            }
            Schema::new(&all).map_err(|e| ApiError::core(shoal_core::Error::InvalidSchema(e)))?
        };
        append(&mut wal, Kind::Schema, schema_json(&schema).to_string().as_bytes())?;
        self.col.write().expect("collection lock poisoned").extend_schema(schema).map_err(ApiError::core)
    }

    fn maybe_seal(self: &Arc<Self>, unsealed: u64) {
        let sealed = self.read().sealed_len() as u64;
        // A seal rewrites the whole segment, so the threshold grows with it (total seal work
        // stays linear in the points written: each seal adds at least 1/8 of its size); an
        // eighth keeps the exact-scanned unsealed part small next to the indexed part.
        let threshold = self.opts.seal_rows.max(sealed / 8);
        if unsealed >= threshold && !self.sealing.swap(true, Ordering::AcqRel) {
            let me = Arc::clone(self);
            std::thread::spawn(move || {
                if let Err(e) = me.seal() {
                    eprintln!("shoal: collection {}: background seal failed: {}", me.name, e.message);
                }
                me.sealing.store(false, Ordering::Release);
            });
        }
    }

    /// Seals everything logged so far into a new segment file and swaps it in; searches and
    /// writes continue meanwhile. Returns whether there was anything to seal.
    pub fn seal(&self) -> Result<bool, ApiError> {
        let _one = self.seal_lock.lock().expect("seal lock poisoned");
        let base = self.segment.load(Ordering::Acquire);
        // 1. Close the current log generation; new writes go to the next one.
        let closed = {
            let mut wal = self.lock_wal()?;
            if wal.is_empty() {
                return Ok(false);
            }
            // Relaxed logs are not synced per write: the closed log must be whole on disk
            // before a later log exists (recovery refuses a torn log that is not the last).
            wal.sync().map_err(|e| io_err(wal.file_path(), "fsync", e))?;
            let g = wal.generation();
            *wal = WalWriter::create(&self.dir, g + 1, self.opts.sync)
                .map_err(|e| io_err(&self.dir, "create log in", e))?;
            self.unsealed.store(0, Ordering::Relaxed);
            g
        };
        // 2. The new segment: the current one plus the closed logs, in a private collection.
        let next = closed + 1;
        {
            let (mut private, _) = open_base(&self.dir, &self.meta, (base > 0).then_some(base))?;
            for g in list(&self.dir)?.wals.into_iter().filter(|&g| g >= base && g <= closed) {
                let path = wal::path(&self.dir, g);
                let (end, _) = replay_into(&mut private, &path, wal::FILE_HEADER, None)?;
                if end.torn {
                    // A closed log is whole; anything else is damage, never to be sealed over.
                    return Err(ApiError::internal(format!("{}: corrupt record at byte {}", path.display(), end.len)));
                }
            }
            private.seal_with(self.index).map_err(ApiError::core)?;
            let path = segment_path(&self.dir, next);
            write_atomic(&path, private.to_bytes()).map_err(|e| ApiError::internal(e.to_string()))?;
        }
        if self.dropped.load(Ordering::Acquire) {
            return Ok(true);
        }
        // 3. Catch a fresh collection on the new segment up with the open log, then swap.
        let (mut fresh, _) = open_base(&self.dir, &self.meta, Some(next))?;
        let open_log = wal::path(&self.dir, next);
        let first = self.wal.lock().expect("log lock poisoned").len();
        let (end, _) = replay_into(&mut fresh, &open_log, wal::FILE_HEADER, Some(first))?;
        let wal = self.wal.lock().expect("log lock poisoned");
        let (end2, _) = replay_into(&mut fresh, &open_log, end.len, Some(wal.len()))?;
        if end.torn || end2.torn {
            return Err(ApiError::internal(format!("{}: a record changed while it was read", open_log.display())));
        }
        *self.col.write().expect("collection lock poisoned") = fresh;
        self.segment.store(next, Ordering::Release);
        self.segment_bytes.store(segment_size(&self.dir, next), Ordering::Relaxed);
        drop(wal);
        // 4. Only now are the closed logs and the old segment garbage.
        self.remove_stale(next, next);
        Ok(true)
    }

    /// Marks the collection deleted (a running seal leaves its files alone) and removes its
    /// folder.
    pub fn destroy(&self) -> Result<(), ApiError> {
        self.dropped.store(true, Ordering::Release);
        // The seal's lock order: seal lock, then log lock.
        let _one = self.seal_lock.lock().expect("seal lock poisoned");
        let _wal = self.wal.lock().expect("log lock poisoned");
        let trash = self.dir.with_file_name(format!(".{}.deleting", self.name));
        fs::rename(&self.dir, &trash).map_err(|e| io_err(&self.dir, "rename", e))?;
        fs::remove_dir_all(&trash).map_err(|e| io_err(&trash, "remove", e))
    }

    /// Gauges for `/metrics`: points, unsealed points, segment generation, segment bytes.
    pub fn gauges(&self) -> Gauges {
        Gauges {
            points: self.read().len() as u64,
            unsealed: self.unsealed.load(Ordering::Relaxed),
            segment: self.segment.load(Ordering::Relaxed),
            segment_bytes: self.segment_bytes.load(Ordering::Relaxed),
            mapped: self.meta.on_disk,
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
    /// Generation of the current segment file (0: none).
    pub segment: u64,
    /// Its size.
    pub segment_bytes: u64,
    /// Whether it is memory-mapped.
    pub mapped: bool,
}

/// Writes a new collection folder `dir` — `collection.json`, an empty log of generation 1 and,
/// when given, a copy of `segment` as generation 1's segment — in a temporary folder renamed
/// into place, so a crash leaves no half collection.
pub fn create_folder(dir: &Path, name: &str, meta: &Meta, segment: Option<&Path>) -> Result<(), ApiError> {
    let parent = dir.parent().expect("collections live in a folder");
    let tmp = parent.join(format!(".{name}.creating"));
    let _ = fs::remove_dir_all(&tmp);
    fs::create_dir_all(&tmp).map_err(|e| io_err(&tmp, "create", e))?;
    let text = serde_json::to_vec_pretty(meta).expect("meta serialises");
    write_atomic(&tmp.join("collection.json"), &text).map_err(|e| ApiError::internal(e.to_string()))?;
    if let Some(src) = segment {
        let dst = segment_path(&tmp, 1);
        fs::copy(src, &dst).map_err(|e| io_err(src, "copy", e))?;
        fs::File::open(&dst).and_then(|f| f.sync_all()).map_err(|e| io_err(&dst, "fsync", e))?;
    }
    drop(WalWriter::create(&tmp, 1, true).map_err(|e| io_err(&tmp, "create log in", e))?);
    fs::rename(&tmp, dir).map_err(|e| io_err(dir, "rename into place", e))?;
    fs::File::open(parent).and_then(|d| d.sync_all()).map_err(|e| io_err(parent, "fsync", e))
}

/// A collection on segment generation `segment` (mapped or read into RAM), or an empty one.
fn open_base(dir: &Path, meta: &Meta, segment: Option<u64>) -> Result<(Collection, u64), ApiError> {
    let (config, schema, _) = meta.parse()?;
    let mut col = match segment {
        None => Collection::with_schema(config, schema).map_err(ApiError::core)?,
        Some(g) => {
            let path = segment_path(dir, g);
            let bytes: Box<dyn shoal_core::SegmentBytes> = if meta.on_disk {
                let seg = MmapSegment::open(&path).map_err(|e| ApiError::internal(e.to_string()))?;
                // Re-ranking reads scattered vectors: read-ahead would only evict useful pages.
                seg.advise_random();
                Box::new(seg)
            } else {
                let data = fs::read(&path).map_err(|e| io_err(&path, "read", e))?;
                Box::new(AlignedBytes::from_slice(&data))
            };
            let col = Collection::open(bytes).map_err(|e| ApiError::internal(format!("{}: {e}", path.display())))?;
            if col.dim() != config.dim {
                return Err(ApiError::internal(format!("{}: dimension differs from collection.json", path.display())));
            }
            col
        }
    };
    col.set_clock(Box::new(monotonic_micros));
    Ok((col, segment.unwrap_or(0)))
}

/// The schema as JSON (`{"name": "type", ...}`).
pub fn schema_json(schema: &Schema) -> Value {
    Value::Object(schema.fields().map(|(n, t)| (n.to_string(), Value::String(t.name().into()))).collect())
}

/// The fields of a schema (none without one), to extend.
fn field_list(schema: Option<&Schema>) -> Vec<(String, shoal_core::FieldType)> {
    schema.map(|s| s.fields().map(|(n, t)| (n.to_string(), t)).collect()).unwrap_or_default()
}

/// The schema extended with the fields of `payloads` it lacks, typed from their first value
/// (string: keyword, integer: integer, other number: float, bool: bool; arrays by their
/// elements); `None` when nothing is new.
fn infer_schema(current: Option<&Schema>, payloads: &[Value]) -> Option<Schema> {
    use shoal_core::FieldType;
    let mut fields = field_list(current);
    let known = fields.len();
    let type_of = |v: &Value| -> Option<FieldType> {
        match v {
            Value::String(_) => Some(FieldType::Keyword),
            Value::Bool(_) => Some(FieldType::Bool),
            Value::Number(n) if n.is_i64() || n.is_u64() => Some(FieldType::Integer),
            Value::Number(_) => Some(FieldType::Float),
            _ => None,
        }
    };
    for doc in payloads {
        let Some(obj) = doc.as_object() else { continue };
        for (key, value) in obj {
            if fields.iter().any(|(n, _)| n == key) {
                continue;
            }
            let ty = match value {
                Value::Array(items) => items.iter().find_map(type_of),
                v => type_of(v),
            };
            if let Some(ty) = ty {
                fields.push((key.clone(), ty));
            }
        }
    }
    (fields.len() > known).then(|| Schema::new(&fields)).and_then(Result::ok)
}
