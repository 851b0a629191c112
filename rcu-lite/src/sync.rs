//! The one place that chooses between `std` and `loom` types.
//!
//! Everything else in the crate imports atomics, the mutex and the thread
//! helpers from here, so `RUSTFLAGS="--cfg loom"` swaps the whole crate onto
//! loom's model checker. Thread-locals and statics cannot be swapped by a
//! re-export (loom needs its own macros); the flavor modules (`memb`, `qsbr`)
//! declare them under `cfg` themselves.

#[cfg(loom)]
pub(crate) use loom::{
    hint::spin_loop,
    sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, AtomicU64, AtomicUsize},
    sync::{Arc, Mutex},
    thread::yield_now,
};

#[cfg(not(loom))]
pub(crate) use std::{
    hint::spin_loop,
    sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, AtomicU64, AtomicUsize},
    sync::{Arc, Mutex},
    thread::yield_now,
};
