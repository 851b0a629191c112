//! The `std` fences and atomics the fences and the threaded and stress
//! modes use. Nothing here comes from `loom`: under `cfg(loom)` the fences
//! are a loom RMW that `fence.rs` builds itself (see `fence.rs`, *Loom*),
//! and everything else in this crate (the fence-mode word in `fence.rs`, the
//! syscall wrappers' registration bits and call counts in `sys.rs`) is
//! process-global state that loom never observes, on `std` atomics those
//! files import directly.

#[cfg(all(not(loom), not(syncprims_tsan)))]
pub(crate) use std::sync::atomic::{compiler_fence, fence};

/// Atomics for the threaded and stress modes (not built under loom: they
/// run real threads against real time, which loom cannot model).
#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
