//! `shoal publish SRC DEST`: a collection's segment set laid out for reading by ranges
//! (format 2) and written to a folder or a bucket, segments first and the manifest last, so
//! that readers (`shoal search DEST/manifest.json`, `Collection.openRemote`) only ever see a
//! complete set. A publish that fails part way (a segment with payloads or text, which format
//! 2 does not hold yet; a network error) leaves segment files that no manifest names.
//! Publishing again to the same place writes only the segments that are not there yet (a
//! segment's name carries its table's CRC), then the new manifest: readers of the set before
//! keep reading its objects, unchanged. With `--prune`, segment objects that neither the new
//! manifest nor the one it replaced names are deleted after the new manifest is written (the
//! set before stays whole for the readers still on it; the sets before that go).

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
    /// Then delete the segment objects (`seg-*.shoal`) at DEST that neither the new manifest
    /// nor the one it replaced names: what earlier publishes and failed ones left. Readers of
    /// the set just replaced keep reading it; a reader two publishes behind loses its objects
    /// (`shoal serve --remote` follows within its `--remote-poll`).
    #[arg(long)]
    pub prune: bool,
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

    /// The bytes of object `name`, or `None` when there is none.
    fn get(&self, name: &str) -> Result<Option<Vec<u8>>, HostError> {
        match self {
            Dest::Folder(dir) => match std::fs::read(dir.join(name)) {
                Ok(b) => Ok(Some(b)),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
                Err(e) => Err(HostError::io(&dir.join(name), "read", e)),
            },
            Dest::Store(s, prefix) => {
                let key = prefix.clone().join(name);
                let got = store::block_on(async { s.get(&key).await?.bytes().await });
                match got {
                    Ok(b) => Ok(Some(b.to_vec())),
                    Err(object_store::Error::NotFound { .. }) => Ok(None),
                    Err(e) => Err(HostError::Usage(format!("reading {key}: {e}"))),
                }
            }
        }
    }

    /// The names of the segment objects there (`seg-*.shoal`, directly in the folder or prefix).
    fn segments(&self) -> Result<Vec<String>, HostError> {
        let names: Vec<String> = match self {
            Dest::Folder(dir) => std::fs::read_dir(dir)
                .map_err(|e| HostError::io(dir, "list", e))?
                .flatten()
                .filter_map(|e| e.file_name().to_str().map(str::to_string))
                .collect(),
            Dest::Store(s, prefix) => {
                let listed = store::block_on(s.list_with_delimiter(Some(prefix)));
                let listed = listed.map_err(|e| HostError::Usage(format!("listing {prefix}: {e}")))?;
                listed.objects.iter().filter_map(|o| o.location.filename().map(str::to_string)).collect()
            }
        };
        Ok(names.into_iter().filter(|n| shoal_core::set::parse_segment_name(n).is_some()).collect())
    }

    fn delete(&self, name: &str) -> Result<(), HostError> {
        match self {
            Dest::Folder(dir) => {
                std::fs::remove_file(dir.join(name)).map_err(|e| HostError::io(&dir.join(name), "delete", e))
            }
            Dest::Store(s, prefix) => {
                let key = prefix.clone().join(name);
                store::block_on(s.delete(&key)).map_err(|e| HostError::Usage(format!("deleting {key}: {e}")))
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
    // The set being replaced (its segments are kept by --prune). A manifest there that cannot
    // be read stops a prune: what it names is not known.
    let previous: Vec<String> = match (args.prune, dest.get("manifest.json")?) {
        (false, _) | (true, None) => Vec::new(),
        (true, Some(bytes)) => SetManifest::from_json(&bytes)
            .map_err(|e| HostError::Usage(format!("--prune: the manifest at {} cannot be read ({e})", args.dest)))?
            .manifest
            .segments
            .into_iter()
            .map(|s| s.file)
            .collect(),
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
    if args.prune {
        let named: std::collections::BTreeSet<&str> =
            set.manifest.segments.iter().map(|s| s.file.as_str()).chain(previous.iter().map(String::as_str)).collect();
        for name in dest.segments()? {
            if !named.contains(name.as_str()) {
                dest.delete(&name)?;
                eprintln!("{name}: named by neither this manifest nor the one before (deleted)");
            }
        }
    }
    println!(
        "published {} segments ({} rows, {} bytes) and manifest.json to {}",
        set.manifest.segments.len(),
        set.manifest.segments.iter().map(|s| s.rows).sum::<u64>(),
        total,
        args.dest
    );
    Ok(())
}
