//! A global allocator that counts allocations, for the zero-allocation tests (native and wasm).
//! Each thread counts its own: what a test measures is what its thread allocated, not what the
//! test harness's other threads did meanwhile (libtest's main thread allocates while the first
//! test runs, which made a count over every thread fail now and then).
//!
//! ```text
//! #[global_allocator]
//! static GLOBAL: shoal_testkit::counting::Counting = shoal_testkit::counting::Counting;
//! let before = shoal_testkit::counting::allocations();
//! ```

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

std::thread_local! {
    /// This thread's allocations and reallocations (const-initialised, no destructor: usable
    /// from the allocator at any point of a thread's life).
    static ALLOCATIONS: Cell<usize> = const { Cell::new(0) };
}

/// Allocations and reallocations counted so far by the calling thread.
pub fn allocations() -> usize {
    ALLOCATIONS.with(Cell::get)
}

fn count() {
    let _ = ALLOCATIONS.try_with(|c| c.set(c.get() + 1));
}

/// Forwards to the system allocator and counts `alloc` and `realloc` calls.
pub struct Counting;

// SAFETY: forwards every call to the system allocator unchanged; only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count();
        // SAFETY: the caller upholds `GlobalAlloc::alloc`'s contract, passed on as is.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `System.alloc` with this layout (via `alloc` above).
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count();
        // SAFETY: as in `alloc` and `dealloc`.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}
