//! The `shoal` subcommands. Each has an `Args` struct (parsed by clap) and a `run` function;
//! results go to standard output, progress, timings and errors to standard error.

use std::io::{self, IsTerminal, Write};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::path::Path;

use crate::HostError;

pub mod build;
pub mod import;
pub mod inspect;
pub mod publish;
pub mod search;
mod search_remote;
pub mod verify;

/// The `shoal` command line.
#[derive(Debug, clap::Parser)]
#[command(name = "shoal", version, about = "Shoal vector search: build, search, inspect and verify segment files")]
pub struct Cli {
    /// Threads for index builds (k-means, encoding, calibration; the output is the same bytes
    /// whatever the number) and, for `serve`, for requests: all cores by default.
    #[arg(long, global = true, env = "SHOAL_THREADS")]
    pub threads: Option<usize>,
    /// The subcommand.
    #[command(subcommand)]
    pub command: Command,
}

static THREADS: std::sync::OnceLock<usize> = std::sync::OnceLock::new();

/// The `--threads` given (`None`: all cores).
pub fn threads() -> Option<usize> {
    THREADS.get().copied()
}

/// Sizes the pool of index-build threads (`--threads`); the first call wins.
pub fn set_threads(threads: Option<usize>) -> Result<(), HostError> {
    if let Some(n) = threads {
        if n == 0 {
            return Err(HostError::Usage("--threads must be at least 1".into()));
        }
        let _ = THREADS.set(n);
        rayon::ThreadPoolBuilder::new()
            .num_threads(n)
            .build_global()
            .map_err(|e| HostError::Usage(format!("--threads: {e}")))?;
    }
    Ok(())
}

/// A subcommand.
#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Build a sealed segment file from a vector file (.npy, .fvecs or raw f32).
    Build(build::BuildArgs),
    /// Search a segment file: vectors (exact or IVF), text, filters, hybrid, batches of queries.
    Search(search::SearchArgs),
    /// Print a segment's header, section table and META without reading the whole file.
    Inspect(inspect::InspectArgs),
    /// Read every byte of a segment and check it (checksums, id index, finite vectors).
    Verify(verify::VerifyArgs),
    /// Publish a collection's segments for reading by ranges (format 2) to a folder or a
    /// bucket (s3://, gs://, az://): the manifest last.
    Publish(publish::PublishArgs),
    /// Serve collections over HTTP (Shoal's routes and Qdrant's REST API), with a write-ahead
    /// log and memory-mapped segments.
    Serve(crate::server::ServeArgs),
    /// Make a segment file a collection of a `shoal serve` data folder.
    Import(import::ImportArgs),
}

/// Runs a subcommand.
pub fn run(command: Command) -> Result<(), HostError> {
    match command {
        Command::Build(args) => build::run(&args),
        Command::Search(args) => search::run(&args),
        Command::Inspect(args) => inspect::run(&args),
        Command::Verify(args) => verify::run(&args),
        Command::Publish(args) => publish::run(&args),
        Command::Serve(args) => crate::server::run(&args),
        Command::Import(args) => import::run(&args),
    }
}

/// Writes `text` to standard output (errors, e.g. a closed pipe, become a [`HostError`]).
pub(crate) fn print(text: &str) -> Result<(), HostError> {
    let mut out = io::stdout().lock();
    out.write_all(text.as_bytes()).and_then(|()| out.flush()).map_err(|e| HostError::io(Path::new("-"), "write to", e))
}

/// Milliseconds in a duration, for timing lines.
pub(crate) fn ms(d: std::time::Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// A spinner on standard error naming the phase, hidden when it is not a terminal or with
/// `--quiet`.
pub(crate) fn progress_bar(quiet: bool) -> ProgressBar {
    let target = if quiet || !std::io::stderr().is_terminal() {
        ProgressDrawTarget::hidden()
    } else {
        ProgressDrawTarget::stderr()
    };
    let bar = ProgressBar::with_draw_target(None, target);
    bar.set_style(spinner_style());
    bar.enable_steady_tick(std::time::Duration::from_millis(200));
    bar
}

pub(crate) fn spinner_style() -> ProgressStyle {
    ProgressStyle::with_template("{spinner} {msg} {elapsed}").expect("a valid template")
}
