//! # qrwlock: the kernel's fair queued reader-writer lock
//!
//! A user-space rebuild of `kernel/locking/qrwlock.c` after Will Deacon's
//! series "Switch arm64 over to qrwlock" (`atomic_cond_read_acquire()` for
//! WFE-style waiting, and "Prevent slowpath writers getting held up by
//! fastpath"): one 32-bit lock word (writer-locked byte, writer-waiting bit,
//! reader count above them) and a fair FIFO wait queue.
//!
//! ```
//! let config = qrwlock::RwLock::new(vec![1, 2, 3]);
//! std::thread::scope(|s| {
//!     let a = config.read();
//!     // Readers on two threads share the lock. (A second read on the same
//!     // thread would queue behind a waiting writer, which waits for the
//!     // first: `read_recursive` is the one for nested reads.)
//!     let b = s.spawn(|| config.read().len()).join().unwrap();
//!     assert_eq!(a.len() + b, 6);
//!     assert!(config.try_write().is_none(), "readers exclude writers");
//! });
//! config.write().push(4);
//! let w = config.write();
//! let r = qrwlock::RwLockWriteGuard::downgrade(w);
//! assert_eq!(*r, [1, 2, 3, 4]);
//! ```
//!
//! - [`RwLock`] is `lock_api::RwLock<RawQRwLock, T>`: guards, `try_read`,
//!   `try_write`, `downgrade` (`RawRwLock` and `RawRwLockDowngrade`), plus
//!   [`ReadRecursive`]'s `read_recursive` for nested read holds. Not the
//!   upgradable, timed or fair parts of `lock_api` (`upgradable_read`,
//!   `try_read_for`, `unlock_fair`): see *Not in this crate*. Guards are
//!   not `Send` unless the `send_guard` feature is on, as std's and
//!   parking_lot's are not: see *Guards and async code*.
//! - [`RawQRwLock`] is the raw layer (`read_lock`, `write_unlock`, ...), for
//!   data-structure authors who keep the data elsewhere.
//! - [`cond_load_acquire`] is the user-space `atomic_cond_read_acquire()` the
//!   lock waits with: a bounded spin with the architecture's wait hint (LDXR +
//!   WFE on aarch64, `pause` on x86_64), then a futex sleep, with a sleeper bit
//!   in the word so that wakers make a system call only when someone sleeps.
//!
//! # Fairness
//!
//! What is promised, exactly:
//!
//! - **Writers are not starved by readers.** A writer that reaches the front
//!   of the queue sets the waiting bit; from then on no new plain reader
//!   enters (fast path or `try_read`; recursive readers do, see
//!   [`RawQRwLock::read_lock_recursive`](crate::RawQRwLock::read_lock_recursive)),
//!   and the writer enters as soon as the holders already inside leave:
//!   readers, or a writer that took the lock on its fast path before the bit
//!   was set.
//! - **The queue is FIFO.** Threads that do not get the lock at once (a reader
//!   that finds a writer inside or waiting, a writer that finds the lock held
//!   or contended) join one queue and reach the front in arrival order. A
//!   reader at the front admits every reader queued directly behind it, so
//!   consecutive queued readers enter together.
//! - **The fast paths are not queued.** A reader that finds no writer inside
//!   or waiting enters at once, even if threads are queued (a writer queued
//!   behind the front has not set the waiting bit yet); a writer that finds the
//!   lock completely free (no reader, no writer, no waiting writer) takes it at
//!   once. So the order is FIFO among queued threads, not among all callers: a
//!   queued thread waits for the threads queued before it plus the fast-path
//!   entries that happen while the thread at the front is not yet waiting.
//!   Under contention most callers find a writer inside or waiting and
//!   queue, but the lock is not task-fair: from a front reader's entry until
//!   the writer it hands the queue to has set the waiting bit (a futex
//!   wake-up, if that writer slept on its node), new readers enter on the
//!   fast path ahead of that writer.
//! - **No priority, no timeouts, no fair unlock**: unlocking never hands the
//!   lock to a particular waiter, it wakes the front of the queue.
//! - **Plain read locks are not recursive.** A thread that holds a read lock
//!   and asks for another with `read` can deadlock if a writer queued in
//!   between (the writer waits for the first hold, the second waits behind the
//!   writer). [`ReadRecursive::read_recursive`] (raw:
//!   [`RawQRwLock::read_lock_recursive`]) is the kernel's interrupt-context
//!   reader: it enters past a waiting writer, queueing only when a writer
//!   holds the lock (then behind any writer queued already, where the
//!   kernel's reader waits outside the queue for the holder alone), and a
//!   nested hold taken with it cannot deadlock (but
//!   its guard's `unlocked` takes the lock back with a plain `read`: see
//!   [`ReadRecursive`]). Such
//!   readers do not yield to a waiting writer; take the outermost hold with
//!   `read`. That is recursion within a thread, not an interrupt context: a
//!   signal handler that waits for the lock deadlocks when the thread it
//!   interrupted holds the write lock or waits in the queue (the handler's
//!   node queues behind its own thread's). From a handler use only the try
//!   forms ([`RawQRwLock::try_read_lock`],
//!   [`RawQRwLock::try_read_lock_recursive`], `lock_api`'s `try_read`),
//!   which never wait.
//! - **No upgrade.** A write lock asked for while holding a read lock waits
//!   for that hold forever, and since it has set the waiting bit, every later
//!   reader of any thread queues behind it: the whole lock stops, with no
//!   panic (the lock does not know its holders).
//! - **No re-entry for a writer.** A thread that holds the write lock and
//!   asks for it again, or for a read lock (`read_recursive` included, which
//!   waits for the writer byte as the kernel's interrupt-context reader
//!   does), waits for itself forever, with no panic: recording the holder
//!   would cost the fast paths a store each, which parking_lot and the
//!   kernel do not pay either.
//!
//! # Misuse
//!
//! Giving up a hold that does not exist through the raw layer
//! ([`RawQRwLock::write_unlock`] or [`RawQRwLock::downgrade`] without the
//! writer byte set, [`RawQRwLock::read_unlock`] with no reader counted or with
//! the writer byte set; `lock_api`'s `force_unlock_read`/`force_unlock_write`
//! and the `RawRwLock`/`RawRwLockDowngrade` methods call these) panics with a
//! message naming the misuse, after restoring the word. The check follows the
//! unlock's one read-modify-write, so threads using the lock at that moment
//! can see the bad word before the repair: they may panic in turn or be left
//! waiting. The panic reports a bug; it does not make a racing misuse safe.
//! And an unlock that takes what another thread holds or has counted (a
//! writer's byte, a waiting reader's count) looks like a correct one: it
//! does not panic, and may let a reader and a writer in together.
//!
//! # Guards and async code
//!
//! A guard is a hold of a lock that blocks the thread: holding one across
//! an `.await` parks the task with the lock held, and a task on the same
//! runtime that then waits for the lock blocks its worker thread, which may
//! be the one the holder needs to resume on. With every worker so blocked
//! the runtime hangs, with no message (a helper's tokio program did, on
//! 2026-12-06: 8 tasks writing across a `yield_now().await` on 2 workers,
//! while the guards were `Send`). So guards are not `Send` by default
//! ([`GuardMarker`] is `lock_api::GuardNoSend`): a future that holds one
//! across an `.await` is not `Send`, and `tokio::spawn` rejects it at
//! compile time, as it rejects std's and parking_lot's guards:
//!
#![cfg_attr(not(feature = "send_guard"), doc = "```compile_fail")]
#![cfg_attr(feature = "send_guard", doc = "```")]
//! fn needs_send<T: Send>(_: T) {}
//! let lock = qrwlock::RwLock::new(0);
//! needs_send(lock.write());
//! ```
//!
//! Futures that need not be `Send` (tokio's `LocalSet`, a single-threaded
//! executor) still compile with a guard held across an `.await`, and hang
//! the same way once another task of that thread waits for the lock: drop
//! the guard before awaiting, or use an async lock for a hold that must
//! span one. The `send_guard` feature makes guards `Send`, for code that
//! hands a held lock to another thread (an unlock there is sound); like
//! parking_lot's feature of that name it applies to every user of the crate
//! in the build. Until 2026-12-06 guards were always `Send`.
//!
//! # Not in this crate
//!
//! Upgradable reads, timeouts, fair unlocking (`unlock_fair`, `bump`), and
//! priority inheritance. No poisoning: as with parking_lot and unlike std, a
//! panic while a guard is held releases the lock, and the next holder sees
//! whatever the panicking one left (docs/qrwlock.md, *Coming from std or
//! parking_lot*). No `fork()` hooks either: as with std's locks, a
//! lock that another thread held or waited for at the fork stays so in the
//! child, whose next wait for it never ends (the lock's word and queue are
//! copied, their threads are not). A program that forks and keeps using a
//! lock in the child takes it in a `pthread_atfork()` prepare handler and
//! releases it in the parent and child handlers (the write guard kept from
//! the one to the others: all three run on the forking thread), or forks
//! only to `exec`.
//!
//! # Cargo features
//!
//! `arc_lock`: `RwLock::read_arc`/`write_arc` and their guards
//! (`ArcRwLockReadGuard`, `ArcRwLockWriteGuard`), through `lock_api`'s
//! feature of the same name, as parking_lot's, and
//! `ReadRecursive::read_recursive_arc`/`try_read_recursive_arc`. `send_guard`: guards are
//! `Send` (see *Guards and async code*). The crate re-exports [`lock_api`],
//! so its traits need no dependency of your own; [`GuardMarker`] is the
//! guard marker, whichever the feature picks.
#![deny(unsafe_op_in_unsafe_fn)]

mod futex;
mod raw;
mod sync;
pub mod wait;
mod wait_queue;

/// Under loom: runs a model twice, the second time with the futex model
/// returning spuriously from every other wait of each thread, as a real futex
/// may (see the `futex-word` crate).
#[cfg(loom)]
pub use futex_word::loom_model_with_spurious_wakeups_too;
pub use raw::{
    HEAD_SLEEPING, READER_BIAS, READER_MASK, READER_OVERFLOW, READER_SHIFT, RawQRwLock,
    WRITER_LOCKED, WRITER_MASK, WRITER_WAITING,
};
pub use wait::{cond_load_acquire, cond_load_relaxed, wake_sleepers};

#[cfg(not(loom))]
mod api;
#[cfg(all(feature = "arc_lock", not(loom)))]
pub use api::{ArcRwLockReadGuard, ArcRwLockWriteGuard};
#[cfg(not(loom))]
pub use api::{
    GuardMarker, MappedRwLockReadGuard, MappedRwLockWriteGuard, ReadRecursive, RwLock,
    RwLockReadGuard, RwLockWriteGuard,
};
/// The `lock_api` this crate implements, for its traits without a
/// dependency of your own.
pub use lock_api;
