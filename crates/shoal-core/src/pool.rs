//! A small pool of per-query scratch buffers: a query takes a free slot, uses its buffers and
//! gives it back; when every slot is busy it uses a temporary one rather than wait. After the
//! first queries have sized the buffers, searching allocates nothing (but for the per-segment
//! results of a set searched in parallel).

use alloc::boxed::Box;
use core::cell::UnsafeCell;
use core::sync::atomic::{AtomicBool, Ordering};

struct Slot<T> {
    busy: AtomicBool,
    value: UnsafeCell<T>,
}

/// A fixed set of `T`s handed out one caller at a time.
pub(crate) struct Pool<T> {
    slots: Box<[Slot<T>]>,
}

// SAFETY: a slot's value is only reached by the caller that flipped its `busy` flag from false
// to true (Acquire) until it flips it back (Release), so no two threads ever share a `&mut T`;
// moving that access between threads needs `T: Send`.
unsafe impl<T: Send> Sync for Pool<T> {}

/// Frees a slot when the borrow ends, also when the closure panics.
struct Release<'a>(&'a AtomicBool);

impl Drop for Release<'_> {
    fn drop(&mut self) {
        self.0.store(false, Ordering::Release);
    }
}

impl<T: Default> Pool<T> {
    /// A pool of `n` slots.
    pub(crate) fn new(n: usize) -> Pool<T> {
        Pool {
            slots: (0..n)
                .map(|_| Slot { busy: AtomicBool::new(false), value: UnsafeCell::new(T::default()) })
                .collect(),
        }
    }

    /// Runs `f` with a free slot's value, or with a temporary value when all are busy.
    pub(crate) fn with<R>(&self, f: impl FnOnce(&mut T) -> R) -> R {
        for slot in self.slots.iter() {
            if slot.busy.compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed).is_ok() {
                let _release = Release(&slot.busy);
                // SAFETY: this caller set `busy`; until `_release` clears it no one else can
                // reach `value` (see the `Sync` impl), so the `&mut` is unique.
                return f(unsafe { &mut *slot.value.get() });
            }
        }
        f(&mut T::default())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec::Vec;

    #[test]
    fn reuses_slots_and_falls_back_when_busy() {
        let pool: Pool<Vec<u32>> = Pool::new(1);
        pool.with(|v| v.push(1));
        pool.with(|v| assert_eq!(v, &[1], "the slot is reused"));
        pool.with(|outer| {
            outer.push(2);
            pool.with(|inner| assert!(inner.is_empty(), "a busy pool lends a temporary"));
        });
        pool.with(|v| assert_eq!(v, &[1, 2]));
    }
}
