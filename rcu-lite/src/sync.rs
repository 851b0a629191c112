//! The one place that chooses between `std` and `loom` types.
//!
//! Everything else in the crate imports atomics, cells and thread helpers from
//! here, so `RUSTFLAGS="--cfg loom"` swaps the whole crate onto loom's model
//! checker. The `std` side wraps `UnsafeCell` to offer loom's `with`/`with_mut`
//! access style, so code reads the same under both.
// The crate's algorithm modules import from here as they land; until they all
// have, some re-exports are unused.
#![allow(unused_imports, dead_code)]

#[cfg(loom)]
pub(crate) use loom::{
    cell::UnsafeCell,
    hint::spin_loop,
    sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Ordering, fence},
    thread::yield_now,
};

#[cfg(not(loom))]
pub(crate) use std::{
    hint::spin_loop,
    sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Ordering, fence},
    thread::yield_now,
};

/// `std`'s `UnsafeCell` with loom's closure-based accessors.
#[cfg(not(loom))]
#[derive(Debug, Default)]
pub(crate) struct UnsafeCell<T>(std::cell::UnsafeCell<T>);

#[cfg(not(loom))]
impl<T> UnsafeCell<T> {
    /// Wraps `value`.
    pub(crate) const fn new(value: T) -> Self {
        UnsafeCell(std::cell::UnsafeCell::new(value))
    }

    /// Calls `f` with a shared raw pointer to the contents.
    #[inline(always)]
    pub(crate) fn with<R>(&self, f: impl FnOnce(*const T) -> R) -> R {
        f(self.0.get())
    }

    /// Calls `f` with a mutable raw pointer to the contents.
    #[inline(always)]
    pub(crate) fn with_mut<R>(&self, f: impl FnOnce(*mut T) -> R) -> R {
        f(self.0.get())
    }
}
