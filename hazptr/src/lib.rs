//! # hazptr: hazard pointers with a shared scan
//!
//! A user-space rebuild of Mathieu Desnoyers's kernel hazard pointers
//! (`hazptr_acquire()`, `hazptr_release()`, `hazptr_synchronize()`, the
//! wildcard, per-CPU slots with backup slots on overflow lists) and of the
//! shared-scan series (`hazptr-shared-scan-rfc-v3`), in which concurrent
//! `synchronize()` callers share one scan. A lone caller walks the slots
//! itself; callers that find a scan under way, or whose walk finds their
//! address protected, queue a waiter on their stack, and whoever drives the
//! next pass serves every queued waiter: a waiting caller, or the domain's
//! scanner thread, which callers wake before they sleep.
//!
//! Threads stand in for CPUs: each thread gets a block of
//! [`SLOTS_PER_THREAD`] slots per domain on first use, recycled when it
//! exits.
//!
//! - **Readers** protect with a [`Guard`]: store the current wildcard into a
//!   free slot, `membarrier_sim::fence::light()` (a compiler fence), load the
//!   pointer once, store it into the slot. Release is a store-release of
//!   null. The safe form is [`AtomicBox::load`] or [`scoped`].
//! - **Writers** unpublish, then either wait with [`synchronize`] (no
//!   allocation per call; concurrent callers share one scan, screened by a
//!   Bloom filter of their addresses, and a flipped wildcard generation keeps
//!   new readers from starving them) and free directly, or [`Domain::retire`]
//!   and let batched reclamation free later. The scan side pays
//!   `membarrier(2)` (`membarrier_sim::fence::heavy`).
//!
//! ```
//! use hazptr::AtomicBox;
//!
//! let shared = AtomicBox::new(1u64);
//! std::thread::scope(|s| {
//!     s.spawn(|| {
//!         let v = hazptr::scoped(&shared, |v| v.copied());
//!         assert!(matches!(v, Some(1 | 2)));
//!     });
//!     shared.store(Some(Box::new(2)));
//! });
//! ```
//!
//! # Stall warnings
//!
//! A `synchronize` held up for 21 s by a guard of another thread (one leaked
//! with `mem::forget`, or held across a wait that never ends), or a scan
//! held up as long by a reader stopped inside its acquire, says so on
//! stderr, then again every 63 s, and goes on waiting, as rcu-lite's grace
//! periods do. `SYNCPRIMS_STALL_TIMEOUT_S` sets the timeout in seconds
//! (`0`: off).
//!
//! # Async runtimes and thread pools
//!
//! A guard is `!Send`, so a future that holds one across an `.await` cannot
//! go to `tokio::spawn`; on a single-threaded executor (a `LocalSet`) it
//! holds a slot of its executor thread while the task is parked. Slots are
//! per thread: past the thread's 7 (6 in SeqCst fence mode), every guard of
//! every task on that thread takes a backup slot, which the domain keeps
//! until it drops and every later scan walks (16,384 tasks each holding a
//! guard across a sleep left `synchronize` of the global domain about 100
//! times slower for the rest of the process). Drop guards before awaiting,
//! or give each burst of such tasks a domain of its own. A `synchronize`
//! called from a task blocks its executor thread like any blocking call,
//! and panics if a guard of another task on that thread protects the
//! address (it would wait for itself).
//!
//! # Raw layer
//!
//! [`Guard::protect_ptr`] on a plain `AtomicPtr`, [`Domain::synchronize`],
//! [`Domain::retire`] (unsafe: the caller states the object is unpublished)
//! and [`Guard::promote`] are what data-structure authors build on.
//! `examples/treiber.rs`, a stack with lock-free links (its retires may
//! block: see [`Domain::retire`]), stays one level up: it loads
//! through [`AtomicBox::load`] and unlinks with
//! [`AtomicBox::compare_exchange_ptr`], then retires the unlinked node with
//! [`AtomicBox::retire_ptr`].
//!
//! # `fork()`
//!
//! A child process gets only the thread that forked: a domain's scanner
//! thread is gone, and slots of threads that did not come along keep their
//! protections. Call [`fork::before_fork`] right before `fork()` and
//! [`fork::after_fork_parent`] / [`fork::after_fork_child`] right after it
//! (see [`fork`]); a child that `exec`s at once needs neither.
//!
//! # Signal handlers
//!
//! A signal handler may take guards, protect and load through them, if its
//! thread has already registered in the domain (a guard taken there before
//! the handler can run; the first guard of the process also chooses the
//! fence mode), the handler drops its guards before it returns, and the
//! thread never holds more than [`usable_slots_per_thread`] guards in all,
//! the handler's included. That fast path is thread-local reads and atomic
//! stores. Nothing else is async-signal-safe: a first registration and a
//! backup slot (more guards, a domain that forces the slow path) allocate
//! and borrow thread-local state that the interrupted code may hold;
//! `retire`, `reclaim`, `synchronize` and the [`AtomicBox`] updates can wait
//! for the interrupted code's own protection, or push into the retire batch
//! it is pushing into (a retire inside a retire's push or hand-over aborts
//! with a message).
//! For the same reasons a global allocator must not use this crate.
//!
//! # Cargo features
//!
//! `force-slow-path`: every acquire in every domain takes the slow path (a
//! backup slot), as the kernel's debug option does; per domain, use
//! [`DomainBuilder::force_slow_path`]. It is for tests and torture runs:
//! Cargo unifies features across a build, so a library that enabled it
//! would slow every hazptr user in the program.
#![deny(unsafe_op_in_unsafe_fn)]

// 64-bit atomics hold the domain ids; 32-bit targets with them (i686, armv7)
// build, those without (armv5te, mips, powerpc, riscv32) are not supported.
#[cfg(not(target_has_atomic = "64"))]
compile_error!("hazptr needs 64-bit atomics (the domain ids), which this target lacks");

mod atomic_box;
mod bloom;
mod domain;
pub mod fork;
mod guard;
mod registration;
mod retire;
mod scan;
mod slot;
mod sync;

pub use atomic_box::{AtomicBox, CompareExchangeError, Replaced};
pub use domain::{Domain, DomainBuilder, SLOTS_PER_THREAD, usable_slots_per_thread};

#[cfg(not(loom))]
use fork::{between_hooks as between_fork_hooks, refuse_between_hooks};
/// No fork hooks under loom, so no thread is ever between them.
#[cfg(loom)]
#[inline]
fn refuse_between_hooks(_what: &str) {}
/// See [`refuse_between_hooks`].
#[cfg(loom)]
fn between_fork_hooks() -> bool {
    false
}

/// Under loom: runs a model twice, the second time with the futex model
/// returning spuriously from every other wait of each thread, as a real futex
/// may (see the `futex-word` crate).
#[cfg(loom)]
#[doc(hidden)]
pub use futex_word::loom_model_with_spurious_wakeups_too;
pub use guard::{Guard, acquire, scoped, scoped_ptr};

/// [`Domain::synchronize`] in the global domain.
///
/// # Panics
///
/// If the calling thread holds a guard protecting `addr` (with the
/// exceptions that [`Domain::synchronize`] lists), or is between its
/// [`fork::before_fork`] and `after_fork_*` (as [`Domain::synchronize`]; the
/// message names that function).
pub fn synchronize<T>(addr: *const T) {
    Domain::global().synchronize(addr)
}

/// [`Domain::retire`] in the global domain.
///
/// # Panics and aborts
///
/// As [`Domain::retire`]: a deleter's panic, the refusal between the fork
/// hooks, and the abort of a retire inside a retire.
///
/// # Safety
///
/// As [`Domain::retire`].
pub unsafe fn retire<T>(ptr: *mut T, deleter: unsafe fn(*mut T)) {
    // SAFETY: forwarded contract.
    unsafe { Domain::global().retire(ptr, deleter) }
}

/// [`Domain::reclaim`] in the global domain.
///
/// # Panics
///
/// As [`Domain::reclaim`]: between the calling thread's
/// [`fork::before_fork`] and `after_fork_*`, or with the panic of a deleter
/// that the pass ran.
pub fn reclaim() -> usize {
    Domain::global().reclaim()
}
