//! # membarrier-sim
//!
//! The Linux `membarrier(2)` system call, the asymmetric fences built on it, and
//! (as the crate grows) a simulator showing why targeted expedited commands need
//! per-CPU mutexes in `kernel/sched/membarrier.c`.
//!
//! - [`sys`]: the real syscall through `rustix` (`MEMBARRIER_CMD_QUERY`, the
//!   `REGISTER_*` commands, `PRIVATE_EXPEDITED` and `PRIVATE_EXPEDITED_RSEQ` with a
//!   target CPU), with failures mapped to a typed [`sys::Error`].
//! - [`fence`]: [`fence::light`] and [`fence::heavy`], the pair of fences that lets
//!   a reader fast path pay only a compiler fence while the rare writer/scanner side
//!   pays a process-wide barrier. `hazptr` and `rcu-lite` use it.
//!
//! Under `cfg(loom)` and `cfg(miri)` both fences are `fence(SeqCst)`: neither
//! checker models `membarrier`.
#![deny(unsafe_op_in_unsafe_fn)]

pub mod fence;
pub mod sim;
#[cfg(not(loom))]
pub mod stress;
pub mod sys;
#[cfg(not(loom))]
pub mod threaded;

mod sync;
