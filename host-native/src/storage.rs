//! Segment files on disk: memory-mapped for reading, written atomically.

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use memmap2::{Mmap, MmapMut};
use shoal_core::{Collection, SegmentBytes};

use crate::HostError;

/// A new segment file written in place: created at its full length (zeros) and mapped
/// writable, so the core's build writes every section straight into the page cache and the
/// kernel writes it back as memory runs short: the file never needs a second copy in RAM.
pub struct SegmentFile {
    file: File,
    map: MmapMut,
}

impl SegmentFile {
    /// Creates `path` (which must not exist) with `len` zero bytes, mapped writable.
    pub fn create(path: &Path, len: usize) -> std::io::Result<SegmentFile> {
        let file = OpenOptions::new().read(true).write(true).create_new(true).open(path)?;
        file.set_len(len as u64)?;
        // The blocks are reserved now: a full disk is an error here, not a SIGBUS when a
        // mapped page is first written.
        reserve(&file, len as u64)?;
        // SAFETY: `MmapMut::map_mut` is unsafe because another process could modify or
        // truncate the file while it is mapped. The file was created just now under a name
        // only this writer uses (`create_new` fails otherwise) and nothing else opens it until
        // `finish` has synced it and the mapping is gone.
        let map = unsafe { MmapMut::map_mut(&file) }?;
        Ok(SegmentFile { file, map })
    }

    /// Writes the mapped pages back and syncs the file (its data and length) to disk.
    pub fn finish(self) -> std::io::Result<()> {
        self.map.flush()?;
        drop(self.map);
        self.file.sync_all()
    }
}

/// Allocates the disk blocks of `file`'s first `len` bytes (which read as zeros).
#[cfg(target_os = "linux")]
fn reserve(file: &File, len: u64) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    let len = libc::off_t::try_from(len).map_err(|_| std::io::Error::from(std::io::ErrorKind::FileTooLarge))?;
    // SAFETY: `posix_fallocate` reads no memory of ours; the descriptor is open for writing
    // for the whole call (`file` is borrowed).
    match unsafe { libc::posix_fallocate(file.as_raw_fd(), 0, len) } {
        0 => Ok(()),
        // A file system without it: write the zeros (the blocks exist afterwards all the same).
        libc::EOPNOTSUPP | libc::EINVAL => write_zeros(file, len as u64),
        e => Err(std::io::Error::from_raw_os_error(e)),
    }
}

/// Allocates the disk blocks of `file`'s first `len` bytes (which read as zeros).
#[cfg(not(target_os = "linux"))]
fn reserve(file: &File, len: u64) -> std::io::Result<()> {
    write_zeros(file, len)
}

/// Writes `len` zero bytes at the start of `file`.
fn write_zeros(mut file: &File, len: u64) -> std::io::Result<()> {
    use std::io::{Seek, SeekFrom};
    let zeros = vec![0u8; 1 << 20];
    file.seek(SeekFrom::Start(0))?;
    let mut at = 0;
    while at < len {
        let n = (len - at).min(zeros.len() as u64) as usize;
        file.write_all(&zeros[..n])?;
        at += n as u64;
    }
    file.flush()
}

impl AsMut<[u8]> for SegmentFile {
    fn as_mut(&mut self) -> &mut [u8] {
        &mut self.map
    }
}

/// A sealed segment file mapped into memory, handed to the core as [`SegmentBytes`].
///
/// The mapping is page-aligned, which satisfies the reader's 64-byte alignment requirement
/// without a copy. Opening a segment touches only the header and section table; other pages
/// are read from disk when a search or `verify` reaches them.
pub struct MmapSegment {
    map: Mmap,
}

impl std::fmt::Debug for MmapSegment {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "MmapSegment({} bytes)", self.map.len())
    }
}

impl MmapSegment {
    /// Maps the segment file at `path` (read-only).
    pub fn open(path: &Path) -> Result<MmapSegment, HostError> {
        let file = File::open(path).map_err(|e| HostError::io(path, "open", e))?;
        // SAFETY: `Mmap::map` is unsafe because another process could modify or truncate the
        // file while it is mapped. Sealed segments are immutable by contract: Shoal writes a
        // segment only before it is opened — a new file, through `write_atomic` (renamed over
        // the old one, so an existing mapping keeps the old inode) or a `SegmentFile` whose
        // writable mapping is gone before the file is mapped here. And the reader never
        // trusts the contents: every offset and length is bounds-checked on open, and corrupt
        // bytes give a typed error, never undefined behaviour.
        let map = unsafe { Mmap::map(&file) }.map_err(|e| HostError::io(path, "memory-map", e))?;
        Ok(MmapSegment { map })
    }

    /// Tells the kernel that reads will be scattered (no read-ahead): re-ranking reads single
    /// vectors, and under a small memory budget read-ahead would evict pages that are used.
    pub fn advise_random(&self) {
        // Advice only: a kernel that ignores it loses nothing.
        let _ = self.map.advise(memmap2::Advice::Random);
    }

    /// The mapped bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.map
    }
}

impl SegmentBytes for MmapSegment {
    fn bytes(&self) -> &[u8] {
        &self.map
    }

    fn prefetches(&self) -> bool {
        true
    }

    /// `madvise(WILLNEED)` on the pages of `range`: the kernel starts reading them now, so the
    /// vectors one query re-ranks are read several at a time.
    fn prefetch(&self, range: &[u8]) {
        let offset = (range.as_ptr() as usize).wrapping_sub(self.map.as_ptr() as usize);
        if offset <= self.map.len() && range.len() <= self.map.len() - offset {
            // Advice only: a kernel that ignores it loses nothing.
            let _ = self.map.advise_range(memmap2::Advice::WillNeed, offset, range.len());
        }
    }
}

/// Maps the segment at `path` and opens it as a collection (cheap checks only: header, table,
/// bounds, `META`; see [`Collection::verify`] for the full check).
pub fn open_collection(path: &Path) -> Result<Collection, HostError> {
    let seg = MmapSegment::open(path)?;
    let mut col = Collection::open(Box::new(seg)).map_err(|e| HostError::segment(path, e))?;
    col.set_clock(Box::new(monotonic_micros));
    Ok(col)
}

/// Microseconds on a monotonic clock (from the first call): the clock of `timeout_ms`.
pub fn monotonic_micros() -> u64 {
    static START: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
    START.get_or_init(std::time::Instant::now).elapsed().as_micros() as u64
}

/// The temporary file `write_atomic` writes first: `path` with `.tmp` appended.
pub fn tmp_path(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".tmp");
    PathBuf::from(name)
}

/// Writes `bytes` to `path` so that `path` holds either its old contents or all of `bytes`,
/// even across a crash: write `path.tmp`, fsync it, rename it to `path`, fsync the directory.
///
/// On failure the temporary file is removed and `path` is untouched.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), HostError> {
    let tmp = tmp_path(path);
    let result = write_and_rename(&tmp, path, bytes);
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

fn write_and_rename(tmp: &Path, path: &Path, bytes: &[u8]) -> Result<(), HostError> {
    let file = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .open(tmp)
        .map_err(|e| HostError::io(tmp, "create", e))?;
    write_all_parallel(&file, bytes).map_err(|e| HostError::io(tmp, "write", e))?;
    file.sync_all().map_err(|e| HostError::io(tmp, "fsync", e))?;
    drop(file);
    fs::rename(tmp, path).map_err(|e| HostError::io(path, "rename the temporary file to", e))?;
    sync_parent_dir(path)
}

/// Why [`build_file`] or [`write_in_place`] failed: the build itself, or the file.
#[derive(Debug)]
pub enum BuildError {
    /// The build refused its input.
    Core(shoal_core::Error),
    /// The file could not be created, written or renamed.
    Host(HostError),
}

/// What a build writes its file through: given the file's length, a new file of that length
/// (zeros), mapped writable.
pub type FileAlloc<'a> = dyn FnMut(usize) -> Result<SegmentFile, shoal_core::Error> + 'a;

/// Builds the new file `tmp` in place: `build` gets an allocator that creates it (it must not
/// exist) at the length asked for, mapped writable; the finished file is written back and
/// synced. Returns its length; the caller then owns the file. On failure — an error or a
/// panic — the file is removed if this call created it.
pub fn build_file(
    tmp: &Path,
    build: impl FnOnce(&mut FileAlloc<'_>) -> Result<SegmentFile, shoal_core::Error>,
) -> Result<usize, BuildError> {
    /// Removes the file when dropped armed (created, not yet handed over).
    struct Cleanup<'a> {
        tmp: &'a Path,
        armed: bool,
    }
    impl Drop for Cleanup<'_> {
        fn drop(&mut self) {
            if self.armed {
                let _ = fs::remove_file(self.tmp);
            }
        }
    }
    let mut cleanup = Cleanup { tmp, armed: false };
    let mut failed = None;
    let mut len = 0;
    let built = build(&mut |n| {
        len = n;
        let file = SegmentFile::create(tmp, n).map_err(|e| {
            let message = format!("{}: create: {e}", tmp.display());
            failed = Some(HostError::io(tmp, "create", e));
            shoal_core::Error::BadSet(message)
        })?;
        cleanup.armed = true;
        Ok(file)
    });
    let file = match (built, failed) {
        (Ok(file), _) => file,
        (Err(_), Some(io)) => return Err(BuildError::Host(io)),
        (Err(e), None) => return Err(BuildError::Core(e)),
    };
    file.finish().map_err(|e| BuildError::Host(HostError::io(tmp, "write", e)))?;
    cleanup.armed = false;
    Ok(len)
}

/// Builds a file in place, atomically: [`build_file`] into `path.tmp` (a stale one from an
/// interrupted run is replaced), then renamed to `path` and the rename made durable. Returns
/// the file's length. On failure the temporary file this call created is removed and `path`
/// is untouched.
pub fn write_in_place(
    path: &Path,
    build: impl FnOnce(&mut FileAlloc<'_>) -> Result<SegmentFile, shoal_core::Error>,
) -> Result<usize, BuildError> {
    let tmp = tmp_path(path);
    match fs::remove_file(&tmp) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            return Err(BuildError::Host(HostError::io(&tmp, "remove the stale", e)));
        }
        _ => {}
    }
    let len = build_file(&tmp, build)?;
    if let Err(e) = fs::rename(&tmp, path) {
        let _ = fs::remove_file(&tmp);
        return Err(BuildError::Host(HostError::io(path, "rename the temporary file to", e)));
    }
    sync_parent_dir(path).map_err(BuildError::Host)?;
    Ok(len)
}

/// Writes `bytes` at the start of `file`: large files in 16 MiB pieces from the build threads
/// (the kernel's copy into the page cache is most of a large write's time, and it splits).
pub fn write_all_parallel(file: &File, bytes: &[u8]) -> std::io::Result<()> {
    const PIECE: usize = 16 << 20;
    #[cfg(unix)]
    {
        use rayon::prelude::*;
        use std::os::unix::fs::FileExt;
        if bytes.len() > 4 * PIECE {
            return bytes
                .par_chunks(PIECE)
                .enumerate()
                .try_for_each(|(i, piece)| file.write_all_at(piece, (i * PIECE) as u64));
        }
    }
    let mut f = file;
    f.write_all(bytes)
}

/// Makes a rename in `path`'s directory durable.
fn sync_parent_dir(path: &Path) -> Result<(), HostError> {
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    #[cfg(unix)]
    {
        let d = File::open(dir).map_err(|e| HostError::io(dir, "open directory", e))?;
        d.sync_all().map_err(|e| HostError::io(dir, "fsync directory", e))?;
    }
    #[cfg(not(unix))]
    let _ = dir; // Directories cannot be opened for syncing on Windows; rename is durable there.
    Ok(())
}
