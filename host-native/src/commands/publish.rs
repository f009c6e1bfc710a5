//! `shoal publish SRC DEST`: a collection's segment set laid out for reading by ranges
//! (format 2) and written to a folder or a bucket, segments first and the manifest last, so
//! that readers (`shoal search DEST/manifest.json`, `Collection.openRemote`) only ever see a
//! complete set. A publish that fails part way (a segment with payloads or text, which format
//! 2 does not hold yet; a network error) leaves segment files that no manifest names.
//! Publishing again to the same place writes only the segments that are not there yet (a
//! segment's name carries its table's CRC), then the new manifest: readers of the set before
//! keep reading its objects, unchanged.

use std::path::PathBuf;
use std::sync::Arc;

use object_store::{ObjectStore, ObjectStoreExt as _};
use shoal_core::SealedSegment;
use shoal_core::remote::{SetManifest, lay_out_segment};
use shoal_core::set::Manifest;

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

/// Objects up to this size go in one PUT; larger ones in parts of [`PART`] bytes.
const SINGLE_PUT: usize = 64 << 20;
/// The part size of a multipart upload.
const PART: usize = 16 << 20;

/// Where a published set is written.
enum Dest {
    Folder(PathBuf),
    Store(Arc<dyn ObjectStore>, object_store::path::Path),
}

impl Dest {
    /// Whether an object `name` of `len` bytes is there already. A segment's name carries its
    /// number and its table's CRC, so one there of the same length is this segment, written by
    /// an earlier publish: writing it again would change nothing but its ETag (nginx's and
    /// Azure's follow the write), and readers that opened the set would see `object_changed`.
    fn has(&self, name: &str, len: u64) -> Result<bool, HostError> {
        match self {
            Dest::Folder(dir) => Ok(std::fs::metadata(dir.join(name)).is_ok_and(|m| m.is_file() && m.len() == len)),
            Dest::Store(s, prefix) => {
                let key = prefix.clone().join(name);
                match store::block_on(s.head(&key)) {
                    Ok(meta) => Ok(meta.size == len),
                    Err(object_store::Error::NotFound { .. }) => Ok(false),
                    Err(e) => Err(HostError::Usage(format!("looking for {key}: {e}"))),
                }
            }
        }
    }

    fn put(&self, name: &str, bytes: &[u8]) -> Result<(), HostError> {
        match self {
            Dest::Folder(dir) => write_atomic(&dir.join(name), bytes),
            Dest::Store(s, prefix) => {
                let key = prefix.clone().join(name);
                let put = async {
                    if bytes.len() <= SINGLE_PUT {
                        return s.put(&key, bytes.to_vec().into()).await.map(|_| ());
                    }
                    // Larger objects in parts (S3 takes at most 5 GiB in one PUT), a part at a
                    // time in memory.
                    let mut upload = object_store::WriteMultipart::new(s.put_multipart(&key).await?);
                    for chunk in bytes.chunks(PART) {
                        upload.wait_for_capacity(4).await?;
                        upload.write(chunk);
                    }
                    upload.finish().await.map(|_| ())
                };
                store::block_on(put).map_err(|e| HostError::Usage(format!("writing {key}: {e}")))
            }
        }
    }
}

/// Runs `shoal publish`.
pub fn run(args: &PublishArgs) -> Result<(), HostError> {
    let manifest_path = args.source.join("manifest.json");
    let text = std::fs::read(&manifest_path).map_err(|e| HostError::io(&manifest_path, "read", e))?;
    let manifest = Manifest::from_json(&text).map_err(|e| HostError::segment(&manifest_path, e))?;
    shoal_core::remote::check_publishable(&manifest).map_err(|e| HostError::segment(&manifest_path, e))?;
    let dest = if store::SCHEMES.iter().any(|s| args.dest.starts_with(s)) {
        let (s, prefix) = store::store_for(&args.dest)?;
        Dest::Store(s, prefix)
    } else {
        let dir = PathBuf::from(&args.dest);
        std::fs::create_dir_all(&dir).map_err(|e| HostError::io(&dir, "create", e))?;
        let same = |p: &std::path::Path| std::fs::canonicalize(p).ok();
        if same(&dir).is_some() && same(&dir) == same(&args.source) {
            return Err(HostError::Usage("DEST is the collection's own folder: publish to another one".into()));
        }
        Dest::Folder(dir)
    };
    let (mut entries, mut hints, mut total) = (Vec::new(), Vec::new(), 0u64);
    for entry in &manifest.segments {
        let path = args.source.join(&entry.file);
        let seg = SealedSegment::open(Box::new(MmapSegment::open(&path)?)).map_err(|e| HostError::segment(&path, e))?;
        let (e, hint, bytes) = lay_out_segment(entry, &seg).map_err(|e| HostError::segment(&path, e))?;
        total += bytes.as_slice().len() as u64;
        if dest.has(&e.file, e.bytes)? {
            eprintln!("{} -> {} (there already: kept)", entry.file, e.file);
        } else {
            dest.put(&e.file, bytes.as_slice())?;
            eprintln!("{} -> {} ({} rows, {} bytes)", entry.file, e.file, e.rows, e.bytes);
        }
        entries.push(e);
        hints.push(hint);
    }
    let set = SetManifest::published(&manifest, entries, hints);
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
