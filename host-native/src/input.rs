//! Vector input files for `shoal build`: `.npy`, `.fvecs` and raw little-endian `f32`.
//!
//! A [`VectorFile`] memory-maps its input, checks the layout up front (header, dimension,
//! length) and then copies rows straight into the collection's reserved batch: one `memcpy`
//! per batch for `.npy` and raw `f32`, one per row for `.fvecs` (whose rows carry a dimension
//! prefix that is checked on the way).

use std::fs::File;
use std::path::{Path, PathBuf};

use memmap2::Mmap;

use crate::HostError;

/// The layout of a vector file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum InputFormat {
    /// NumPy `.npy`: a 2-D, C-order, little-endian `float32` array.
    Npy,
    /// `.fvecs` (TEXMEX): each row is an `i32` dimension followed by that many `f32`.
    Fvecs,
    /// Raw little-endian `f32`, row-major, no header (needs `--dim`).
    F32,
}

impl InputFormat {
    /// The format a file name's extension implies (`.npy`, `.fvecs`, `.f32`/`.bin`/`.raw`).
    pub fn from_path(path: &Path) -> Option<InputFormat> {
        let ext = path.extension()?.to_str()?.to_ascii_lowercase();
        match ext.as_str() {
            "npy" => Some(InputFormat::Npy),
            "fvecs" => Some(InputFormat::Fvecs),
            "f32" | "bin" | "raw" => Some(InputFormat::F32),
            _ => None,
        }
    }
}

/// A memory-mapped vector file whose layout has been checked.
pub struct VectorFile {
    path: PathBuf,
    map: Mmap,
    format: InputFormat,
    dim: usize,
    rows: usize,
    /// Byte offset of row 0 (including its `.fvecs` prefix).
    data_offset: usize,
}

impl std::fmt::Debug for VectorFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VectorFile")
            .field("path", &self.path)
            .field("format", &self.format)
            .field("dim", &self.dim)
            .field("rows", &self.rows)
            .finish()
    }
}

/// Bytes of one `f32`.
const F32: usize = 4;

impl VectorFile {
    /// Opens and checks `path`. `format` defaults to the one the extension implies; `dim`,
    /// required for raw `f32`, must otherwise agree with the file.
    pub fn open(path: &Path, format: Option<InputFormat>, dim: Option<usize>) -> Result<VectorFile, HostError> {
        let format = format.or_else(|| InputFormat::from_path(path)).ok_or_else(|| {
            HostError::input(path, "cannot tell the input format from the extension: pass --format npy|fvecs|f32")
        })?;
        if dim == Some(0) {
            return Err(HostError::Usage("--dim must be at least 1".into()));
        }
        let file = File::open(path).map_err(|e| HostError::io(path, "open", e))?;
        // SAFETY: the mapping is read-only. `Mmap::map` is unsafe because another process
        // could change or truncate the file while it is mapped; `shoal build` requires its
        // input to stay unchanged for the whole build (documented), which is the caveat of
        // every file mapping: a file rewritten meanwhile could give values the finiteness
        // check (made once, before the build) did not see, and a truncated one a SIGBUS.
        // Nothing here trusts the contents otherwise: the layout is checked before any row
        // is read, and rows are reached through bounds-checked slices.
        let map = unsafe { Mmap::map(&file) }.map_err(|e| HostError::io(path, "memory-map", e))?;
        let bytes: &[u8] = &map;
        let bad = |message: String| HostError::input(path, message);
        let (dim, rows, data_offset) = match format {
            InputFormat::Npy => {
                let h = crate::npy::parse_header(bytes).map_err(bad)?;
                if let Some(d) = dim.filter(|&d| d != h.dim) {
                    return Err(bad(format!("--dim {d} does not match the array's shape ({}, {})", h.rows, h.dim)));
                }
                if h.dim == 0 {
                    return Err(bad("the array has dimension 0".into()));
                }
                let row_bytes = h.dim.checked_mul(F32).ok_or_else(|| bad("dimension too large".into()))?;
                let data = bytes.len() - h.data_offset;
                let expected = h.rows.checked_mul(row_bytes);
                if expected != Some(data) {
                    let complete = data / row_bytes;
                    return Err(bad(match expected {
                        Some(e) if data < e => format!(
                            "truncated: the header declares shape ({}, {}) = {e} bytes of data, the file \
                             holds {data}; row {complete} is incomplete",
                            h.rows, h.dim
                        ),
                        Some(e) => format!(
                            "{} bytes after the declared shape ({}, {}) ({e} bytes of data): not a single \
                             array, or the header is wrong",
                            data - e,
                            h.rows,
                            h.dim
                        ),
                        None => format!("the declared shape ({}, {}) is too large", h.rows, h.dim),
                    }));
                }
                (h.dim, h.rows, h.data_offset)
            }
            InputFormat::Fvecs => {
                if bytes.is_empty() {
                    return Err(bad("the file is empty".into()));
                }
                if bytes.len() < 4 {
                    return Err(bad("truncated: row 0 is incomplete (no dimension prefix)".into()));
                }
                let d = i32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
                let d = usize::try_from(d)
                    .ok()
                    .filter(|&d| d >= 1)
                    .ok_or_else(|| bad(format!("row 0 declares dimension {d}")))?;
                if let Some(want) = dim.filter(|&w| w != d) {
                    return Err(bad(format!("--dim {want} does not match the dimension {d} of row 0")));
                }
                let record = d
                    .checked_mul(F32)
                    .and_then(|b| b.checked_add(4))
                    .ok_or_else(|| bad("dimension too large".into()))?;
                let rows = bytes.len() / record;
                let rest = bytes.len() % record;
                if rest != 0 {
                    return Err(bad(format!(
                        "truncated: row {rows} is incomplete (the file ends {rest} bytes into a \
                         {record}-byte record of dimension {d})"
                    )));
                }
                (d, rows, 0)
            }
            InputFormat::F32 => {
                let Some(d) = dim else {
                    return Err(HostError::Usage(format!(
                        "{}: raw f32 input has no header: pass --dim",
                        path.display()
                    )));
                };
                let row_bytes = d.checked_mul(F32).ok_or_else(|| bad("dimension too large".into()))?;
                let rows = bytes.len() / row_bytes;
                let rest = bytes.len() % row_bytes;
                if rest != 0 {
                    return Err(bad(format!(
                        "the file length {} is not a multiple of the row size {row_bytes} bytes \
                         (--dim {d} x 4): row {rows} is incomplete (wrong --dim, or a truncated file?)",
                        bytes.len()
                    )));
                }
                (d, rows, 0)
            }
        };
        if rows == 0 {
            return Err(bad("the file holds no vectors".into()));
        }
        Ok(VectorFile { path: path.to_path_buf(), map, format, dim, rows, data_offset })
    }

    /// The file's format.
    pub fn format(&self) -> InputFormat {
        self.format
    }

    /// Vector dimension.
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// Number of rows.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// The input path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Every row in place, row-major, when the file holds them contiguously as this machine's
    /// `f32`s (`.npy` and raw `f32` on a little-endian machine, their data 4-byte aligned);
    /// `None` otherwise (`.fvecs`): then [`read_rows`](Self::read_rows) copies them.
    pub fn as_f32(&self) -> Option<&[f32]> {
        if !cfg!(target_endian = "little") || self.format == InputFormat::Fvecs {
            return None;
        }
        let bytes = &self.map[self.data_offset..self.data_offset + self.rows * self.dim * F32];
        bytemuck::try_cast_slice(bytes).ok()
    }

    /// Copies rows `first..first + out.len() / dim` into `out` (row-major).
    ///
    /// Fails for a `.fvecs` row whose dimension prefix differs from row 0's.
    pub fn read_rows(&self, first: usize, out: &mut [f32]) -> Result<(), HostError> {
        let dim = self.dim;
        assert!(out.len().is_multiple_of(dim), "out holds whole rows");
        let n = out.len() / dim;
        assert!(first + n <= self.rows, "rows {first}..{} out of 0..{}", first + n, self.rows);
        let bytes: &[u8] = &self.map;
        let row_bytes = dim * F32;
        match self.format {
            InputFormat::Npy | InputFormat::F32 => {
                let start = self.data_offset + first * row_bytes;
                // One copy of the whole batch; the destination is f32-aligned, the source need
                // not be (copying bytes, not casting the map).
                bytemuck::cast_slice_mut::<f32, u8>(out).copy_from_slice(&bytes[start..start + n * row_bytes]);
            }
            InputFormat::Fvecs => {
                let record = 4 + row_bytes;
                for (i, dst) in out.chunks_exact_mut(dim).enumerate() {
                    let row = first + i;
                    let at = row * record;
                    let d = i32::from_le_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]]);
                    if usize::try_from(d).ok() != Some(dim) {
                        return Err(HostError::input(
                            &self.path,
                            format!("row {row} declares dimension {d}, but row 0 has dimension {dim}"),
                        ));
                    }
                    bytemuck::cast_slice_mut::<f32, u8>(dst).copy_from_slice(&bytes[at + 4..at + record]);
                }
            }
        }
        Ok(())
    }
}
