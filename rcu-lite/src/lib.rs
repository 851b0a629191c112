//! # rcu-lite: user-space RCU with quick quiescent-state reporting
//!
//! A user-space rebuild of Tree RCU's grace-period engine and of the patch that
//! reports the grace-period driver's own quiescent state at the end of
//! `rcu_gp_init()` (the patch "Reduce synchronize_rcu() latency by reporting GP
//! kthread's CPU QS early", v2, on the kernel's RCU list): with it,
//! on an idle system one force-quiescent-state (FQS) scan suffices instead of
//! two. [`GpConfig::quick_qs`] switches it off for comparison and
//! [`Fqs::FixedInterval`] paces scans as the kernel does.
//!
//! Two flavors share one engine:
//!
//! - [`memb`]: nestable read-side sections for any thread, paid with two stores
//!   and two compiler fences ([`membarrier_sim::fence::light`]); grace periods
//!   pay [`membarrier_sim::fence::heavy`] (like liburcu's memb flavor);
//! - [`qsbr`]: read-side sections that cost nothing; registered threads
//!   ([`qsbr::QsbrThread`]) announce quiescent states or go offline (around a
//!   closure, or until [`qsbr::OfflineQsbrThread::online`]), with a
//!   [`membarrier_sim::fence::full`] where that changes their state, so grace
//!   periods pair with a `fence::full()` too and make no system call (like
//!   liburcu's qsbr flavor).
//!
//! Each flavor has `synchronize_rcu()` (concurrent callers share grace
//! periods; a lone caller drives its own, and a grace-period thread takes over
//! while callers crowd it), `synchronize_rcu_expedited()`,
//! `call_rcu()` (one callback thread per flavor, batching callbacks per grace
//! period), `rcu_barrier()`, and the polled grace periods of
//! `get_state_synchronize_rcu()`, `start_poll_synchronize_rcu()`,
//! `poll_state_synchronize_rcu()` and `cond_synchronize_rcu()` (a
//! [`GpState`] cookie now, a check later, without blocking).
//! [`Rcu<T, F>`] is the safe cell on top; [`raw`] is the layer underneath.
//!
//! ```
//! use rcu_lite::{memb, Rcu};
//!
//! let config = Rcu::<String>::new("v1".to_owned());
//! {
//!     let guard = memb::read_lock();
//!     assert_eq!(config.read(&guard), "v1");
//! }
//! config.replace("v2".to_owned()); // "v1" is dropped after a grace period
//! let old = config.replace_and_synchronize("v3".to_owned());
//! assert_eq!(old, "v2");
//! memb::rcu_barrier(); // every deferred drop has run
//! ```
//!
//! Deferred drops and callbacks still queued when the process exits never
//! run: a program whose old values' `Drop` does work that
//! matters calls `rcu_barrier()` of each flavor it used before it exits.
//!
//! Threads register on first use and give their registration back when they
//! exit; a thread that exits outside every read-side section never holds up a
//! grace period. Calling `synchronize_rcu()` inside a read-side section would
//! deadlock: it panics with a message saying so, as does an unbalanced unlock.
//! A process that forks once rcu-lite is in use calls the hooks in [`fork`]
//! around `fork()`, as liburcu's users do.
//!
//! A grace period held up for 21 s says so on stderr, naming the kernel's
//! ids of the threads it waits for, and again every 63 s while it waits, as
//! the kernel's RCU CPU stall warnings do: a leaked guard or an online qsbr
//! registration that never reports is otherwise a silent hang. An
//! `rcu_barrier()` held up as long by a callback that does not return says
//! so too.
//! `SYNCPRIMS_STALL_TIMEOUT_S` sets the timeout (seconds, decimals
//! allowed; `0` turns the warnings off).
//!
//! In a signal handler, `memb::read_lock()`, its guard's drop and
//! [`Rcu::read`] are safe once the thread has registered (a read lock taken
//! on it before the handler can run): the handler's sections are balanced,
//! so it leaves the nesting word as it found it, as in liburcu. A first
//! registration in a handler allocates, and the interrupted code may
//! overwrite it (the record is then never given back). A qsbr handler must
//! register its own `QsbrThread` (allocating if no record is free).
//! `synchronize_rcu`, `call_rcu`, `rcu_barrier` and the cell's updates are
//! not for handlers: they wait for the interrupted code, or for a lock it
//! holds.
//!
//! # Async runtimes and thread pools
//!
//! A read-side section belongs to a thread, not to a task. A memb guard
//! held across an `.await` keeps its executor thread inside a section while
//! the task is parked, and the guards of all the tasks on one thread nest
//! into one section that ends only when none of them holds a guard: with
//! tasks arriving steadily, no grace period ends (a LocalSet that started a
//! task holding a guard for 20 ms every 10 ms held a `synchronize_rcu` up
//! for 5.8 s, until it stopped starting them). Read, copy out what the task
//! needs, and drop the guard before the next `.await`. Guards of different
//! tasks also count towards one thread's nesting limit (32,767).
//!
//! A qsbr registration on a pool or runtime worker holds up every grace
//! period while the worker idles or runs tasks that never call
//! `quiescent_state()`: take it offline while the worker parks (tokio's
//! `on_thread_park` and `on_thread_unpark` hooks, with the
//! [`qsbr::QsbrThread`] or [`qsbr::OfflineQsbrThread`] kept in a
//! thread-local), and report quiescent states between tasks' reads; memb
//! asks none of that. `call_rcu` callbacks run on the flavor's callback
//! thread, not on a runtime: one that blocks on work of a runtime that
//! `rcu_barrier()` is blocking (a bounded channel whose receiver is a task
//! of that thread) hangs both; the barrier says so after the stall timeout.
#![deny(unsafe_op_in_unsafe_fn)]

// 64-bit atomics hold the read-side record word and the grace-period
// sequence; 32-bit targets with them (i686, armv7) build, those without
// (armv5te, mips, powerpc, riscv32) are not supported.
#[cfg(not(target_has_atomic = "64"))]
compile_error!(
    "rcu-lite needs 64-bit atomics (the read-side record word and the grace-period \
     sequence), which this target lacks"
);

/// Defines a function as `const fn` except under loom, whose atomics and
/// mutexes have no `const` constructors.
macro_rules! const_unless_loom {
    ($(#[$attr:meta])* $vis:vis fn $name:ident($($arg:ident: $ty:ty),* $(,)?) -> $ret:ty $body:block) => {
        #[cfg(not(loom))]
        $(#[$attr])*
        $vis const fn $name($($arg: $ty),*) -> $ret $body
        #[cfg(loom)]
        $(#[$attr])*
        $vis fn $name($($arg: $ty),*) -> $ret $body
    };
}
pub(crate) use const_unless_loom;

mod callbacks;
mod cell;
mod config;
mod engine;
mod flavor;
#[cfg(not(loom))]
pub mod fork;
mod futex;
#[cfg(not(loom))]
mod gp_worker;
pub mod memb;
mod poll;
pub mod qsbr;
pub mod raw;
mod record;
mod sync;
mod thread_record;

pub use cell::{Rcu, Retired};
pub use config::{Fqs, GpConfig};
pub use engine::GpCounts;
#[cfg(loom)]
#[doc(hidden)]
pub use engine::{loom_fqs_timer_never_fires, loom_worker_inline};
pub use flavor::{Flavor, Memb, Qsbr, ReadGuard};
/// Under loom: runs a model twice, the second time with the futex model
/// returning spuriously from every other wait of each thread, as a real futex
/// may (see the `futex-word` crate).
#[cfg(loom)]
#[doc(hidden)]
pub use futex_word::loom_model_with_spurious_wakeups_too;
pub use poll::GpState;

/// How a misuse message names the public function `name` of `flavor` that
/// the user called, with its parentheses: `rcu_lite::memb::synchronize_rcu()`,
/// or for the cell's methods, which live at the crate root,
/// `rcu_lite::Rcu::replace_and_synchronize() (on a memb cell)`.
pub(crate) fn api_path(flavor: &str, name: &str) -> String {
    if name.starts_with("Rcu::") || name.starts_with("Retired::") {
        format!("rcu_lite::{name}() (on a {flavor} cell)")
    } else {
        format!("rcu_lite::{flavor}::{name}()")
    }
}
