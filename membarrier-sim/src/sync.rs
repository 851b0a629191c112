//! The one place that chooses between `std` and `loom` atomics.
//!
//! Under `cfg(loom)` the fences must be loom's, or loom would not see them as
//! ordering points; everything else in this crate (the fence-mode word, the
//! syscall wrappers) is process-global state that loom never observes.

#[cfg(loom)]
pub(crate) use loom::sync::atomic::fence;
#[cfg(all(not(loom), not(syncprims_tsan)))]
pub(crate) use std::sync::atomic::{compiler_fence, fence};

/// Atomics for the threaded and stress modes (not built under loom: they
/// run real threads against real time, which loom cannot model).
#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
