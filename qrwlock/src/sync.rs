//! The one place that chooses between `std` and `loom` types.
//!
//! Everything else in the crate imports atomics and thread helpers from here,
//! so `RUSTFLAGS="--cfg loom"` swaps the whole crate onto loom's model checker.
//! The futex itself is not here: [`crate::futex`] takes a real one and, under
//! loom, a model built from loom's `Mutex` and `Condvar`, from the
//! `futex-word` crate.

#[cfg(loom)]
pub(crate) use loom::{
    sync::atomic::{AtomicPtr, AtomicU32, Ordering, fence},
    thread::yield_now,
};

#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{AtomicPtr, AtomicU32, Ordering, fence};
