//! `shoal verify`: the full O(file) check of a segment.

use std::path::PathBuf;
use std::time::Instant;

use super::{ms, print};
use crate::HostError;
use crate::storage::open_collection;

/// Arguments of `shoal verify`.
#[derive(Debug, clap::Args)]
pub struct VerifyArgs {
    /// Segment file.
    pub segment: PathBuf,
}

/// Runs `shoal verify`: prints `ok`, or fails with the reader's typed error.
pub fn run(args: &VerifyArgs) -> Result<(), HostError> {
    let t = Instant::now();
    let col = open_collection(&args.segment)?;
    let bar = super::progress_bar(false);
    bar.set_message("verifying every checksum");
    let verified = col.verify().map_err(|e| HostError::segment(&args.segment, e));
    bar.finish_and_clear();
    verified?;
    eprintln!("verified {} rows x {} in {:.3} ms", col.len(), col.dim(), ms(t.elapsed()));
    print("ok\n")
}
