//! The one place that chooses between `std` and `loom` atomics.
//!
//! Under `cfg(loom)` the fences are a loom RMW (see `fence.rs`, *Loom*);
//! everything else in this crate (the fence-mode word, the
//! syscall wrappers) is process-global state that loom never observes.

#[cfg(all(not(loom), not(syncprims_tsan)))]
pub(crate) use std::sync::atomic::{compiler_fence, fence};

/// Atomics for the threaded and stress modes (not built under loom: they
/// run real threads against real time, which loom cannot model).
#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
