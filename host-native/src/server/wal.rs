//! The write-ahead log (`docs/format.md`, "Write-ahead log"): one file per generation, records
//! of `[length, CRC-32C, kind]` + body, appended and synced before a write is acknowledged.

use std::fs::{File, OpenOptions};
use std::io::{self, BufReader, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use shoal_core::PointId;

/// File header: magic, version, reserved.
const FILE_MAGIC: &[u8; 8] = b"SHOALWAL";
const VERSION: u32 = 1;
/// The unit of every write: the file header block and each record (padded) are whole blocks,
/// so the log can be written with `O_DIRECT` (no copy through the page cache).
pub const BLOCK: u64 = 4096;
/// Bytes of the file header (one block).
pub const FILE_HEADER: u64 = BLOCK;
/// Bytes of a record header.
const RECORD_HEADER: usize = 12;
/// Largest record body (a binary batch of the largest request body fits easily).
const MAX_BODY: usize = 1 << 31;

/// `n` rounded up to a whole number of blocks.
fn padded(n: u64) -> u64 {
    n.div_ceil(BLOCK) * BLOCK
}

/// What a record holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Kind {
    /// A binary batch of points to insert or replace.
    Upsert = 1,
    /// `count` (u32) then the ids (u64) to delete.
    Delete = 2,
    /// The new payload schema as JSON.
    Schema = 3,
}

impl Kind {
    fn from_u8(b: u8) -> Option<Kind> {
        Some(match b {
            1 => Kind::Upsert,
            2 => Kind::Delete,
            3 => Kind::Schema,
            _ => return None,
        })
    }
}

/// CRC-32C (the segment format's checksum) of the kind bytes then the body. The `crc32c` crate
/// uses the CPU's CRC instructions: a 5 MB batch costs well under a millisecond.
fn record_crc(kind_bytes: &[u8], body: &[u8]) -> u32 {
    crc32c::crc32c_append(crc32c::crc32c(kind_bytes), body)
}

/// The log file of generation `gen` in `dir`.
pub fn path(dir: &Path, generation: u64) -> PathBuf {
    dir.join(format!("wal-{generation:010}.log"))
}

/// The generation of a log file name, if it is one.
pub fn generation_of(name: &str) -> Option<u64> {
    name.strip_prefix("wal-")?.strip_suffix(".log")?.parse().ok()
}

/// Appends records to the current generation's file.
#[derive(Debug)]
pub struct WalWriter {
    file: File,
    path: PathBuf,
    generation: u64,
    len: u64,
    sync: bool,
    /// Staging memory for a record; writes come from a block-aligned window of it.
    buf: Vec<u8>,
    /// A failed append could not be cut back: the file may end in garbage, so this writer
    /// refuses further appends (the host answers 500 until restarted, when replay cuts it).
    broken: bool,
}

/// Opens a log file for writing, with `O_DIRECT` where the file system takes it (Linux; not
/// tmpfs): then a record goes from memory to the device without a page-cache copy, which
/// measured 4x faster for 5 MB batches here. Elsewhere the same blocks go through the cache.
fn open_for_writing(path: &Path, create: bool) -> io::Result<File> {
    let mut o = OpenOptions::new();
    o.write(true).create_new(create);
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::fs::OpenOptionsExt;
        let mut direct = o.clone();
        direct.custom_flags(libc::O_DIRECT);
        match direct.open(path) {
            Ok(f) => return Ok(f),
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
                // The file system refuses O_DIRECT; a created file exists now.
                o.create_new(false);
            }
            Err(e) => return Err(e),
        }
    }
    o.open(path)
}

/// Writes all of `data` at byte `at` of `file`.
fn write_at(file: &mut File, data: &[u8], at: u64) -> io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileExt;
        file.write_all_at(data, at)
    }
    #[cfg(not(unix))]
    {
        file.seek(SeekFrom::Start(at))?;
        file.write_all(data)
    }
}

/// A block-aligned window of `len` bytes in `buf` (grown as needed).
fn aligned(buf: &mut Vec<u8>, len: usize) -> &mut [u8] {
    if buf.len() < len + BLOCK as usize {
        buf.resize(len + BLOCK as usize, 0);
    }
    let at = buf.as_ptr().align_offset(BLOCK as usize);
    &mut buf[at..at + len]
}

impl WalWriter {
    /// Creates the (empty) log of `generation` in `dir` and makes it durable.
    pub fn create(dir: &Path, generation: u64, sync: bool) -> io::Result<WalWriter> {
        let path = path(dir, generation);
        let mut file = open_for_writing(&path, true)?;
        let mut buf = Vec::new();
        let header = aligned(&mut buf, FILE_HEADER as usize);
        header.fill(0);
        header[..8].copy_from_slice(FILE_MAGIC);
        header[8..12].copy_from_slice(&VERSION.to_le_bytes());
        let written = file.write_all(header).and_then(|()| file.sync_all()).and_then(|()| File::open(dir)?.sync_all());
        if let Err(e) = written {
            // Leave no half-made log behind: a later attempt creates it again.
            let _ = std::fs::remove_file(&path);
            return Err(e);
        }
        Ok(WalWriter { file, path, generation, len: FILE_HEADER, sync, buf, broken: false })
    }

    /// Syncs everything appended so far (relaxed logs do not sync per record).
    pub fn sync(&mut self) -> io::Result<()> {
        self.file.sync_data()
    }

    /// Continues the log at `path` after its last whole record (`len` bytes, as [`replay`]
    /// found), cutting a torn tail.
    pub fn reopen(dir: &Path, generation: u64, len: u64, sync: bool) -> io::Result<WalWriter> {
        let path = path(dir, generation);
        let mut file = open_for_writing(&path, false)?;
        if file.metadata()?.len() != len {
            file.set_len(len)?;
            file.sync_all()?;
        }
        file.seek(SeekFrom::Start(len))?;
        Ok(WalWriter { file, path, generation, len, sync, buf: Vec::new(), broken: false })
    }

    /// The generation this writer appends to.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// Bytes in the file (header and whole records).
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether the log holds no record.
    pub fn is_empty(&self) -> bool {
        self.len == FILE_HEADER
    }

    /// Appends one record and, unless the log is relaxed, syncs it to disk. On error the file
    /// is cut back to its previous length, so a failed append leaves no partial record.
    pub fn append(&mut self, kind: Kind, body: &[u8]) -> io::Result<()> {
        if body.len() > MAX_BODY {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "write-ahead log record too large"));
        }
        if self.broken {
            return Err(io::Error::other("an earlier failed write could not be cut back; restart the server"));
        }
        let total = padded((RECORD_HEADER + body.len()) as u64) as usize;
        let rec = aligned(&mut self.buf, total);
        rec[8] = kind as u8;
        rec[9..12].fill(0);
        let crc = record_crc(&rec[8..12], body);
        rec[..4].copy_from_slice(&(body.len() as u32).to_le_bytes());
        rec[4..8].copy_from_slice(&crc.to_le_bytes());
        rec[RECORD_HEADER..RECORD_HEADER + body.len()].copy_from_slice(body);
        rec[RECORD_HEADER + body.len()..].fill(0);
        let result = write_at(&mut self.file, rec, self.len)
            .and_then(|()| if self.sync { self.file.sync_data() } else { Ok(()) });
        match result {
            Ok(()) => {
                self.len += total as u64;
                Ok(())
            }
            Err(e) => {
                // Writes are positional, so the next append overwrites whatever this one left
                // once the file is cut back; if even that fails, stop appending.
                self.broken = self.file.set_len(self.len).is_err();
                Err(e)
            }
        }
    }

    /// The file this writer appends to.
    pub fn file_path(&self) -> &Path {
        &self.path
    }
}

/// Where a replay stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReplayEnd {
    /// Bytes up to the end of the last whole record.
    pub len: u64,
    /// Whether bytes followed that were not a whole, valid record (a write torn by a crash).
    pub torn: bool,
}

/// Reads the records of the log at `path` from byte `from` (at least [`FILE_HEADER`]) to byte
/// `to` (or the end), calling `apply` with each; stops at the first torn or corrupt record.
pub fn replay(
    path: &Path,
    from: u64,
    to: Option<u64>,
    mut apply: impl FnMut(Kind, &[u8]) -> Result<(), String>,
) -> Result<ReplayEnd, String> {
    let what = |e: io::Error| format!("{}: {e}", path.display());
    let file = File::open(path).map_err(what)?;
    let file_len = file.metadata().map_err(what)?.len().min(to.unwrap_or(u64::MAX));
    let mut r = BufReader::with_capacity(1 << 20, file);
    let mut header = [0u8; 16];
    if file_len < FILE_HEADER {
        // A crash while the file was created: nothing in it was ever acknowledged.
        return Ok(ReplayEnd { len: 0, torn: true });
    }
    r.read_exact(&mut header).map_err(what)?;
    if &header[..8] != FILE_MAGIC || u32::from_le_bytes(header[8..12].try_into().unwrap()) != VERSION {
        return Err(format!("{}: not a Shoal write-ahead log (version 1)", path.display()));
    }
    let mut pos = from.max(FILE_HEADER);
    r.seek(SeekFrom::Start(pos)).map_err(what)?;
    let mut body = Vec::new();
    loop {
        let mut h = [0u8; RECORD_HEADER];
        if file_len - pos < RECORD_HEADER as u64 {
            return Ok(ReplayEnd { len: pos, torn: pos != file_len });
        }
        r.read_exact(&mut h).map_err(what)?;
        let len = u32::from_le_bytes(h[..4].try_into().unwrap()) as u64;
        let crc = u32::from_le_bytes(h[4..8].try_into().unwrap());
        let total = padded(RECORD_HEADER as u64 + len);
        let kind = Kind::from_u8(h[8]).filter(|_| h[9..12] == [0, 0, 0]);
        let Some(kind) = kind.filter(|_| file_len - pos >= total) else {
            return Ok(ReplayEnd { len: pos, torn: true });
        };
        body.resize(len as usize, 0);
        r.read_exact(&mut body).map_err(what)?;
        if record_crc(&h[8..12], &body) != crc {
            return Ok(ReplayEnd { len: pos, torn: true });
        }
        apply(kind, &body)?;
        // Skip the padding within the buffer (a plain seek would discard it).
        r.seek_relative((total - RECORD_HEADER as u64 - len) as i64).map_err(what)?;
        pos += total;
    }
}

/// Bit 31 of a delete record's count: the ids are an id block (some are UUIDs).
const DELETE_UUIDS: u32 = 1 << 31;

/// The body of a delete record: `count` (u32) then `count` `u64` ids; when some id is a UUID,
/// `count | 1 << 31` then the batch's id block (`batch::encode_ids`), which a host without
/// UUIDs refuses as a malformed record (never skips).
pub fn delete_body(ids: &[PointId]) -> Vec<u8> {
    let uuids = ids.iter().any(|id| id.as_num().is_none());
    let mut out = Vec::with_capacity(4 + crate::server::batch::id_block_len(ids.len()));
    let count = ids.len() as u32 | if uuids { DELETE_UUIDS } else { 0 };
    out.extend_from_slice(&count.to_le_bytes());
    if uuids {
        crate::server::batch::encode_ids(ids, &mut out);
    } else {
        ids.iter().for_each(|id| out.extend_from_slice(&id.as_num().unwrap_or(0).to_le_bytes()));
    }
    out
}

/// Parses the body of a delete record.
pub fn parse_delete(body: &[u8]) -> Result<Vec<PointId>, String> {
    let malformed = || "write-ahead log: malformed delete record".to_string();
    let count = body.get(..4).map(|b| u32::from_le_bytes(b.try_into().unwrap())).ok_or_else(malformed)?;
    let n = (count & !DELETE_UUIDS) as usize;
    if count & DELETE_UUIDS != 0 {
        return crate::server::batch::parse_ids(&body[4..], n)
            .map_err(|e| format!("write-ahead log: delete record: {e}"));
    }
    if body.len() != 4 + 8 * n {
        return Err(malformed());
    }
    Ok(body[4..].chunks_exact(8).map(|c| PointId::Num(u64::from_le_bytes(c.try_into().unwrap()))).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn collect(path: &Path) -> (Vec<(Kind, Vec<u8>)>, ReplayEnd) {
        let mut got = Vec::new();
        let end = replay(path, FILE_HEADER, None, |k, b| {
            got.push((k, b.to_vec()));
            Ok(())
        })
        .unwrap();
        (got, end)
    }

    #[test]
    fn records_replay_and_a_torn_tail_is_cut() {
        torn_tail_in(&std::env::temp_dir());
        // tmpfs refuses O_DIRECT: the same blocks go through the page cache.
        let shm = Path::new("/dev/shm");
        if shm.is_dir() {
            torn_tail_in(shm);
        }
    }

    fn torn_tail_in(root: &Path) {
        let dir = root.join(format!("shoal-wal-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let mut w = WalWriter::create(&dir, 3, true).unwrap();
        w.append(Kind::Upsert, b"first").unwrap();
        w.append(Kind::Delete, &delete_body(&[PointId::Num(1), PointId::Num(2)])).unwrap();
        w.append(Kind::Schema, b"{}").unwrap();
        let full = w.len();
        drop(w);
        let p = path(&dir, 3);
        let (got, end) = collect(&p);
        assert_eq!(got.len(), 3);
        assert_eq!(got[0], (Kind::Upsert, b"first".to_vec()));
        assert_eq!(parse_delete(&got[1].1).unwrap(), vec![1, 2]);
        assert_eq!(end, ReplayEnd { len: full, torn: false });

        // Every cut inside the last record replays the first two and reports a torn tail.
        let bytes = std::fs::read(&p).unwrap();
        let two = full - BLOCK;
        for cut in two + 1..full {
            std::fs::write(&p, &bytes[..cut as usize]).unwrap();
            let (got, end) = collect(&p);
            assert_eq!((got.len(), end), (2, ReplayEnd { len: two, torn: true }), "cut at {cut}");
        }
        // A flipped bit in the last body fails its CRC.
        let mut flipped = bytes.clone();
        flipped[two as usize + RECORD_HEADER + 1] ^= 1;
        std::fs::write(&p, &flipped).unwrap();
        assert_eq!(collect(&p).1, ReplayEnd { len: two, torn: true });
        // Reopening cuts the torn tail; appends continue after the last whole record.
        let mut w = WalWriter::reopen(&dir, 3, two, true).unwrap();
        w.append(Kind::Schema, b"{\"a\":1}").unwrap();
        let (got, end) = collect(&p);
        assert_eq!(got.len(), 3);
        assert_eq!(got[2].1, b"{\"a\":1}".to_vec());
        assert!(!end.torn);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn delete_records_round_trip_and_keep_one_encoding() {
        let nums = [PointId::Num(1), PointId::Num(u64::MAX)];
        assert_eq!(delete_body(&nums).len(), 4 + 16);
        assert_eq!(parse_delete(&delete_body(&nums)).unwrap(), nums);
        let mixed = [PointId::Num(3), PointId::Uuid([9; 16])];
        assert_eq!(parse_delete(&delete_body(&mixed)).unwrap(), mixed);
        // The UUID form of integer-only ids, and an empty one, are refused.
        let mut flagged = (2u32 | DELETE_UUIDS).to_le_bytes().to_vec();
        crate::server::batch::encode_ids(&nums, &mut flagged);
        assert!(parse_delete(&flagged).is_err());
        assert!(parse_delete(&DELETE_UUIDS.to_le_bytes()).is_err());
        assert!(parse_delete(&[1, 0, 0]).is_err());
    }
}
