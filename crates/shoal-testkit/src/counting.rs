//! A global allocator that counts allocations, for the zero-allocation tests (native and wasm).
//!
//! ```text
//! #[global_allocator]
//! static GLOBAL: shoal_testkit::counting::Counting = shoal_testkit::counting::Counting;
//! let before = shoal_testkit::counting::allocations();
//! ```

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

static ALLOCATIONS: AtomicUsize = AtomicUsize::new(0);

/// Allocations and reallocations counted so far (by every thread).
pub fn allocations() -> usize {
    ALLOCATIONS.load(Ordering::Relaxed)
}

/// Forwards to the system allocator and counts `alloc` and `realloc` calls.
pub struct Counting;

// SAFETY: forwards every call to the system allocator unchanged; only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: the caller upholds `GlobalAlloc::alloc`'s contract, passed on as is.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `System.alloc` with this layout (via `alloc` above).
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: as in `alloc` and `dealloc`.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}
