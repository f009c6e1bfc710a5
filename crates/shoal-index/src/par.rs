//! Work spread over the machine's cores natively (feature `parallel`: rayon's pool, sized by
//! the host's `--threads`), in turn elsewhere (wasm, and builds without the feature). Every
//! caller gives each task its own output and reduces in a fixed order, so results — and the
//! bytes of a segment — do not depend on the number of threads.

use alloc::vec::Vec;

/// Runs `f(i, chunk)` for every `chunk`-element chunk of `out` (the last may be shorter).
pub fn chunks_mut<T: Send>(out: &mut [T], chunk: usize, f: impl Fn(usize, &mut [T]) + Sync + Send) {
    #[cfg(feature = "parallel")]
    {
        use rayon::prelude::*;
        out.par_chunks_mut(chunk.max(1)).enumerate().for_each(|(i, c)| f(i, c));
    }
    #[cfg(not(feature = "parallel"))]
    out.chunks_mut(chunk.max(1)).enumerate().for_each(|(i, c)| f(i, c));
}

/// `f(i, chunk)` for every `chunk`-element chunk of `out`, its results in chunk order.
pub fn chunks_mut_map<T: Send, R: Send>(
    out: &mut [T],
    chunk: usize,
    f: impl Fn(usize, &mut [T]) -> R + Sync + Send,
) -> Vec<R> {
    #[cfg(feature = "parallel")]
    {
        use rayon::prelude::*;
        out.par_chunks_mut(chunk.max(1)).enumerate().map(|(i, c)| f(i, c)).collect()
    }
    #[cfg(not(feature = "parallel"))]
    out.chunks_mut(chunk.max(1)).enumerate().map(|(i, c)| f(i, c)).collect()
}

/// `f(0), f(1), ..., f(n - 1)`, in that order.
pub fn map<T: Send>(n: usize, f: impl Fn(usize) -> T + Sync + Send) -> Vec<T> {
    #[cfg(feature = "parallel")]
    {
        use rayon::prelude::*;
        (0..n).into_par_iter().map(f).collect()
    }
    #[cfg(not(feature = "parallel"))]
    (0..n).map(f).collect()
}

/// Runs `f` on every item (each item its own output).
pub fn for_each<T: Send>(items: Vec<T>, f: impl Fn(T) + Sync + Send) {
    #[cfg(feature = "parallel")]
    {
        use rayon::prelude::*;
        items.into_par_iter().for_each(f);
    }
    #[cfg(not(feature = "parallel"))]
    items.into_iter().for_each(f);
}
