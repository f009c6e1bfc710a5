//! Progress of long builds, for hosts that show it (`shoal build`'s bar): a build names each
//! phase as it starts, with its amount of work when known, and adds to it as it goes. Reports
//! come from any thread; they never change what is built.

/// Receives a build's progress. Both methods default to doing nothing.
pub trait Progress: Sync {
    /// A phase starts: `name` (e.g. "k-means"), `total` units of work (0: unknown).
    fn phase(&self, name: &'static str, total: u64) {
        let _ = (name, total);
    }

    /// `units` more of the current phase are done.
    fn add(&self, units: u64) {
        let _ = units;
    }
}

/// No progress shown: what seals, merges and every caller without a display use.
#[derive(Clone, Copy, Debug, Default)]
pub struct Quiet;

impl Progress for Quiet {}
