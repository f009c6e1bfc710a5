//! `shoal publish SRC DEST`: a collection's segment set laid out for reading by ranges
//! (format 2) and written to a folder or a bucket, segments first and the manifest last, so
//! that readers (`shoal search DEST/manifest.json`, `Collection.openRemote`) only ever see a
//! complete set.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use object_store::{ObjectStore, ObjectStoreExt as _};
use shoal_core::remote::SetManifest;
use shoal_core::set::{Manifest, SegmentEntry, parse_segment_name, segment_name};
use shoal_core::{AlignedBytes, SealedSegment};
use shoal_format::SegmentHead;

use crate::HostError;
use crate::remote::store;
use crate::storage::{MmapSegment, write_atomic};

/// The arguments of `shoal publish`.
#[derive(Debug, clap::Args)]
pub struct PublishArgs {
    /// A collection folder: its `manifest.json` and the segments it names (a `shoal serve`
    /// collection, `DATA/collections/NAME`, or a set the npm package wrote). Only its segments
    /// are published: writes still in a server's log are not.
    pub source: PathBuf,
    /// Where the set goes: a folder, or `s3://bucket/prefix`, `gs://…`, `az://…` (credentials
    /// and endpoint from the environment: `AWS_ACCESS_KEY_ID`, `AWS_ENDPOINT`, …).
    pub dest: String,
}

/// Where a published set is written.
enum Dest {
    Folder(PathBuf),
    Store(Arc<dyn ObjectStore>, object_store::path::Path),
}

impl Dest {
    fn put(&self, name: &str, bytes: &[u8]) -> Result<(), HostError> {
        match self {
            Dest::Folder(dir) => write_atomic(&dir.join(name), bytes),
            Dest::Store(s, prefix) => {
                let key = prefix.clone().join(name);
                store::block_on(s.put(&key, bytes.to_vec().into()))
                    .map(|_| ())
                    .map_err(|e| HostError::Usage(format!("writing {key}: {e}")))
            }
        }
    }
}

/// Runs `shoal publish`.
pub fn run(args: &PublishArgs) -> Result<(), HostError> {
    let manifest_path = args.source.join("manifest.json");
    let text = std::fs::read(&manifest_path).map_err(|e| HostError::io(&manifest_path, "read", e))?;
    let manifest = Manifest::from_json(&text).map_err(|e| HostError::segment(&manifest_path, e))?;
    if manifest.features() {
        return Err(HostError::Usage(
            "a set read by ranges holds one dense vector (no named or sparse vectors, no nested payloads)".into(),
        ));
    }
    if let Some(s) = manifest.segments.iter().find(|s| s.live.is_some()) {
        return Err(HostError::Usage(format!(
            "segment {} has deleted rows: a set read by ranges holds only live rows (let the collection merge them away first)",
            s.file
        )));
    }
    let dest = if store::SCHEMES.iter().any(|s| args.dest.starts_with(s)) {
        let (s, prefix) = store::store_for(&args.dest)?;
        Dest::Store(s, prefix)
    } else {
        let dir = PathBuf::from(&args.dest);
        std::fs::create_dir_all(&dir).map_err(|e| HostError::io(&dir, "create", e))?;
        Dest::Folder(dir)
    };
    let mut segments = Vec::with_capacity(manifest.segments.len());
    let mut bootstrap = Vec::with_capacity(manifest.segments.len());
    let mut total = 0u64;
    for entry in &manifest.segments {
        let (e, hint, bytes) = lay_out(&args.source.join(&entry.file), entry)?;
        total += bytes.as_slice().len() as u64;
        dest.put(&e.file, bytes.as_slice())?;
        eprintln!("{} -> {} ({} rows, {} bytes)", entry.file, e.file, e.rows, e.bytes);
        segments.push(e);
        bootstrap.push(Some(hint));
    }
    let set = SetManifest { manifest: Manifest { segments, wal: None, ..manifest }, bootstrap };
    dest.put("manifest.json", &set.to_json())?;
    println!(
        "published {} segments ({} rows, {} bytes) and manifest.json to {}",
        set.manifest.segments.len(),
        set.manifest.segments.iter().map(|s| s.rows).sum::<u64>(),
        total,
        args.dest
    );
    Ok(())
}

/// The segment at `path` (named by `entry`) in format 2: its new manifest entry, its bootstrap
/// hint and its bytes.
fn lay_out(path: &Path, entry: &SegmentEntry) -> Result<(SegmentEntry, u64, AlignedBytes), HostError> {
    let mapped = MmapSegment::open(path)?;
    let seg = SealedSegment::open(Box::new(mapped)).map_err(|e| HostError::segment(path, e))?;
    if seg.rows() as u64 != entry.rows {
        return Err(HostError::input(path, format!("{} rows, the manifest says {}", seg.rows(), entry.rows)));
    }
    let bytes = shoal_core::remote::write_for_ranges(&seg).map_err(|e| HostError::segment(path, e))?;
    let head = SegmentHead::read(bytes.as_slice()).map_err(|e| HostError::segment(path, e.into()))?;
    let (number, _) = parse_segment_name(&entry.file).expect("a manifest's names are checked");
    let crc = head.header.table_crc;
    let e = SegmentEntry {
        file: segment_name(number, crc),
        rows: entry.rows,
        bytes: bytes.as_slice().len() as u64,
        table_crc: format!("{crc:08x}"),
        live: None,
    };
    Ok((e, head.bootstrap_len(), bytes))
}
