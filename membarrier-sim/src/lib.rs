//! # membarrier-sim
//!
//! The Linux `membarrier(2)` system call, the asymmetric fences built on it,
//! and a simulator showing why targeted expedited commands need per-CPU
//! mutexes in `kernel/sched/membarrier.c` (see `docs/membarrier.md`).
//!
//! - [`sys`]: the real syscall through `rustix` (`MEMBARRIER_CMD_QUERY`, the
//!   `REGISTER_*` commands, `PRIVATE_EXPEDITED` and `PRIVATE_EXPEDITED_RSEQ` with a
//!   target CPU), with failures mapped to a typed [`sys::Error`].
//! - [`fence`]: [`fence::light`] and [`fence::heavy`], the pair of fences that lets
//!   a reader fast path pay only a compiler fence while the rare writer/scanner side
//!   pays a process-wide barrier. `hazptr` and `rcu-lite` use it. And
//!   [`fence::full`], a plain SeqCst fence for pairs whose two sides are both
//!   rare (rcu-lite's qsbr flavor).
//! - [`sim`]: a deterministic discrete-event simulator of targeted
//!   `PRIVATE_EXPEDITED_RSEQ` callers on N CPUs whose interrupts CFS bandwidth
//!   throttling of a deep cgroup hierarchy turns off for milliseconds, under
//!   a global mutex, per-CPU mutexes, or none.
//! - `threaded`: the same scenario with real threads as CPUs, to cross-check
//!   the simulator at small scale; `stress`: threads hammering the running
//!   kernel's targeted command. Neither is built under `cfg(loom)`.
//!
//! Neither loom nor miri models `membarrier`. Under `cfg(miri)` both fences
//! are `fence(SeqCst)`; under `cfg(loom)` (and `cfg(syncprims_tsan)`) both are
//! a `SeqCst` read-modify-write of one word, which keeps exactly the
//! light/heavy pairing (see [`fence`], *Loom*).
#![deny(unsafe_op_in_unsafe_fn)]

pub mod fence;
pub mod sim;
#[cfg(not(loom))]
mod spawn;
#[cfg(not(loom))]
pub mod stress;
pub mod sys;
#[cfg(not(loom))]
pub mod threaded;

mod sync;
