//! The host's error type: every failure of a command, with the file it concerns.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

/// Everything a `shoal` command can fail with. The binary prints it and exits with status 1.
#[derive(Debug)]
#[non_exhaustive]
pub enum HostError {
    /// A file could not be opened, mapped, read, written, synced or renamed.
    Io {
        /// The file (or `-` for standard output).
        path: PathBuf,
        /// What was being done, e.g. `"open"`.
        action: &'static str,
        /// The operating system's error.
        source: io::Error,
    },
    /// An input vector file is malformed: bad header, wrong dimension, truncated, NaN, ...
    Input {
        /// The input file.
        path: PathBuf,
        /// What is wrong, naming the row where there is one.
        message: String,
    },
    /// A segment file is rejected by the reader (on open or by `verify`).
    Segment {
        /// The segment file.
        path: PathBuf,
        /// The core's typed error.
        source: shoal_core::Error,
    },
    /// The core rejected an operation (an invalid search request, a bad configuration, ...).
    Core(shoal_core::Error),
    /// The command line is inconsistent in a way the argument parser cannot see.
    Usage(String),
    /// A segment read by byte ranges: its server (or file) answered what the reader cannot
    /// use.
    Remote {
        /// The URL or path.
        object: String,
        /// What went wrong.
        error: crate::remote::RemoteError,
    },
}

impl HostError {
    /// An I/O error on `path`.
    pub fn io(path: &Path, action: &'static str, source: io::Error) -> HostError {
        HostError::Io { path: path.to_path_buf(), action, source }
    }

    /// A malformed input file.
    pub fn input(path: &Path, message: impl Into<String>) -> HostError {
        HostError::Input { path: path.to_path_buf(), message: message.into() }
    }

    /// A rejected segment file.
    pub fn segment(path: &Path, source: shoal_core::Error) -> HostError {
        HostError::Segment { path: path.to_path_buf(), source }
    }

    /// Whether this is a broken pipe on standard output (`shoal ... | head`), which is not a
    /// failure worth reporting.
    pub fn is_broken_pipe(&self) -> bool {
        matches!(self, HostError::Io { source, .. } if source.kind() == io::ErrorKind::BrokenPipe)
    }
}

impl fmt::Display for HostError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HostError::Io { path, action, source } => {
                write!(f, "cannot {action} {}: {source}", path.display())
            }
            HostError::Input { path, message } => write!(f, "{}: {message}", path.display()),
            HostError::Segment { path, source } => {
                write!(f, "{}: {source} [{}]", path.display(), source.code())
            }
            HostError::Core(e) => write!(f, "{e} [{}]", e.code()),
            HostError::Usage(msg) => f.write_str(msg),
            HostError::Remote { object, error } => write!(f, "{object}: {error} [{}]", error.code()),
        }
    }
}

impl std::error::Error for HostError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            HostError::Io { source, .. } => Some(source),
            HostError::Segment { source, .. } | HostError::Core(source) => Some(source),
            HostError::Input { .. } | HostError::Usage(_) | HostError::Remote { .. } => None,
        }
    }
}

impl From<shoal_core::Error> for HostError {
    fn from(e: shoal_core::Error) -> Self {
        HostError::Core(e)
    }
}
