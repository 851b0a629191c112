//! `fork()` hooks: what lets a process that uses hazard pointers fork and
//! keep using them in the child.
//!
//! Counterpart: liburcu's `urcu_*_before_fork()`, `urcu_*_after_fork_parent()`
//! and `urcu_*_after_fork_child()` (this workspace's `rcu_lite::fork`); the
//! kernel needs none. Call them around `fork()` or from `pthread_atfork()`.
//! A program that also uses rcu-lite calls rcu-lite's `before_fork` first and hazptr's second, and the `after_fork_*`
//! hooks the other way round: an RCU callback or reader may be inside hazptr
//! (a callback worker holding its batch lock while it waits for a hazptr lock
//! that hazptr's hooks hold would leave rcu-lite's `before_fork` waiting
//! forever), while hazptr's hooks never wait for rcu-lite (a deleter that
//! hands its work to `call_rcu()` holds none of hazptr's locks while it
//! waits). With `pthread_atfork()`,
//! register hazptr's handlers first: prepare handlers run in the reverse order
//! of registration, the others in order. A program's own prepare handlers
//! that take locks order those against rcu-lite's as `rcu_lite::fork`
//! explains (*Your own prepare handlers*): a lock held while retiring into
//! a domain whose deleters call `call_rcu()` is one held around
//! `call_rcu()`.
//!
//! # What goes wrong without them
//!
//! The child gets a copy of the memory but only the thread that forked. A
//! domain's scanner thread is gone while its `started` flag says it runs, so a
//! shared-scan `synchronize` that sleeps waits for it forever. The slots of
//! threads that did not come along keep their protections, so a
//! `synchronize` of an address one of them held never returns and a
//! reclamation pass never frees it. A lock or the driver flag held at the
//! fork stays held.
//!
//! # What they do
//!
//! - [`before_fork`] makes sure the global domain exists, then takes the
//!   domain registry's lock and, for every live domain, the scanner-thread
//!   lock, the retired-list lock and the driver flag (waiting for a scan pass
//!   in progress to finish). Nothing is then half written when the memory is
//!   copied: no pass, no hand-over of retired objects, no scanner start, no
//!   new domain.
//! - [`after_fork_parent`] gives them back.
//! - [`after_fork_child`], in the child, for every domain: empties and frees
//!   every block and backup slot that the forking thread does not hold (its
//!   own guards keep protecting; each slot records its holder's thread token,
//!   so this works from a thread-local destructor too), forgets every queued or pending waiter (all
//!   of them belong to vanished threads: the forking thread was in the hooks)
//!   and the scanner thread, which the next `synchronize` that queues a
//!   waiter starts anew. Then it gives the locks back.
//!
//! A thread that exits between the hooks (a misuse) gives the locks back at
//! its exit, before its own batch of retired objects is handed over. Hooks
//! ended while a panic unwinds (an `after_fork_*` in a `Drop`) leave the
//! domains usable: the release poisons the locks, and the crate ignores that
//! poison (`sync::lock`).
//!
//! Retired objects the vanished threads had not yet handed to their domain
//! (at most 64 per thread) are never freed in the child, nor are objects a
//! reclamation pass of theirs had taken off the retired list; the parent
//! frees its copies as usual. Everything already on a retired list is freed
//! in the child by its next reclamation pass, with two exceptions that
//! leak in the child and never hang it: a domain whose drop another thread
//! had begun (its drop waited for the hooks' locks, and never resumes in the
//! child), and a block whose reuse another thread was claiming from an
//! exited owner whose thread token the forking thread now has (the child
//! takes the block for the forking thread's and never reuses it). A domain
//! that had a scanner thread or other threads' registrations keeps its
//! slot blocks for the child's life even once dropped there: the `Arc`s
//! those threads held are never let go (its retired objects are freed).
//!
//! # What they cannot cover
//!
//! Locks inside std: std takes a process-wide lock while a thread starts and
//! while it exits, so a child forked while another thread of the parent was
//! doing either cannot start a thread (each waits for that lock for ever),
//! and the child's next `synchronize` that queues a waiter starts its
//! domain's scanner thread anew. Fork when no thread is starting or
//! exiting, or keep the child to `exec` (as `std::process::Command` does).
//! This workspace's fork tests run in a process of their own for this
//! reason (`test_support::forking_test`).
//!
//! # Registering them once
//!
//! A program that does not call `fork()` itself (a library does, or
//! `std::process::Command` where it cannot use `posix_spawn`) can have every
//! fork run them:
//!
//! ```
//! extern "C" fn prepare() {
//!     hazptr::fork::before_fork();
//! }
//! extern "C" fn parent() {
//!     hazptr::fork::after_fork_parent();
//! }
//! extern "C" fn child() {
//!     hazptr::fork::after_fork_child();
//! }
//! // SAFETY: three plain functions that live as long as the process.
//! // A program that uses rcu-lite too registers rcu-lite's handlers right
//! // after these, in the same place (see above): the other order, or two
//! // registrations in init code that runs in either order, hangs forks.
//! let rc = unsafe { libc::pthread_atfork(Some(prepare), Some(parent), Some(child)) };
//! assert_eq!(rc, 0);
//! ```
//!
//! A misuse panic inside a handler aborts the process (it cannot unwind out
//! of an `extern "C"` function).
#![cfg(not(loom))]

use crate::domain::{DOMAINS, Domain, Shared};
use crate::registration::thread_token;
use crate::retire::Retired;
use crate::scan::{hold_driver, release_driver, reset_after_fork};
use crate::sync::{JoinHandle, Ordering};
use std::cell::Cell;
use std::ptr;
use std::sync::{Arc, MutexGuard, PoisonError, Weak};

/// One domain's locks, held from [`before_fork`] to `after_fork_*`.
struct DomainHeld {
    // Fields drop in declaration order: both guards before the `Arc` that
    // keeps what they lock alive.
    thread: MutexGuard<'static, Option<JoinHandle<()>>>,
    retired: MutexGuard<'static, Vec<Retired>>,
    shared: Arc<Shared>,
}

impl DomainHeld {
    /// Takes `shared`'s scanner-thread lock, retired-list lock and driver
    /// flag, in that order. Only this waits for the flag while holding the
    /// locks, and no holder of the flag takes either lock (a scan pass takes
    /// none; `Domain::drop` holds the scanner-thread lock only to take the
    /// thread's handle, and joins the thread, which may be spinning for the
    /// flag, after letting go), so this order cannot deadlock with them.
    fn hold(shared: Arc<Shared>) -> DomainHeld {
        // SAFETY: the guards borrow from the `Arc`'s pointee, which the `Arc`
        // stored next to them keeps alive (and in place) until after they
        // drop (field order above).
        let domain: &'static Shared = unsafe { &*Arc::as_ptr(&shared) };
        let thread = crate::sync::lock(&domain.scan.thread);
        let retired = crate::sync::lock(&domain.reclamation.retired);
        hold_driver(domain);
        DomainHeld {
            thread,
            retired,
            shared,
        }
    }

    /// The length of the retired list, whose lock this holds.
    fn retired_len(&self) -> usize {
        self.retired.len()
    }
}

impl Drop for DomainHeld {
    fn drop(&mut self) {
        release_driver(&self.shared);
    }
}

/// What [`before_fork`] holds.
struct Held {
    /// The process that called [`before_fork`]: the hook that runs after the
    /// fork tells the parent from the child by it. (Only a process that is
    /// its PID namespace's init, has unshared a new PID namespace and then
    /// forks gets a child with its own pid, 1: that child's
    /// `after_fork_child` would panic as if in the parent.)
    pid: u32,
    // Domains first: their locks go before the registry's.
    domains: Vec<DomainHeld>,
    _registry: MutexGuard<'static, Vec<Weak<Shared>>>,
}

std::thread_local! {
    /// What this thread's [`before_fork`] holds until `after_fork_*`: a
    /// `Box<Held>` turned into a pointer, or null. A plain pointer with no
    /// destructor, so that the hooks (and the between-the-hooks checks of
    /// `synchronize`, `retire`, registration) work in a thread-local
    /// destructor that runs after hazptr's other per-thread state is gone: a
    /// thread's clean-up may fork.
    static HELD: Cell<*mut Held> = const { Cell::new(ptr::null_mut()) };
    /// Releases what [`HELD`] still holds when the thread exits between the
    /// hooks (a misuse), as the locks' guards would be dropped with the
    /// thread's other thread-locals.
    static RELEASE_AT_EXIT: ReleaseAtExit = const { ReleaseAtExit };
}

/// See [`RELEASE_AT_EXIT`].
struct ReleaseAtExit;

impl Drop for ReleaseAtExit {
    fn drop(&mut self) {
        release_at_thread_exit();
    }
}

/// Releases what this thread still holds between the hooks, at its exit.
/// [`RELEASE_AT_EXIT`]'s destructor calls it, so does the exit key's
/// (`registration::arm_exit_key`), and so does the thread's
/// registrations' destructor before it hands its retired batch over (which
/// takes a retired-list lock `before_fork` holds): thread-local destructors
/// run in the reverse order of their first use, so a thread whose first
/// guard or retire came after its `before_fork` has its registrations
/// destroyed first, and without this would wait for its own lock for ever.
pub(crate) fn release_at_thread_exit() {
    drop(take_held_if_any());
}

/// What this thread holds between the hooks, taken out of [`HELD`].
fn take_held_if_any() -> Option<Box<Held>> {
    let held = HELD.with(|slot| slot.replace(ptr::null_mut()));
    // SAFETY: `HELD` is null or holds a pointer from `Box::into_raw` in this
    // thread's `before_fork`, and whoever takes it out (just now) owns it:
    // it is turned back into a box once.
    (!held.is_null()).then(|| unsafe { Box::from_raw(held) })
}

/// Call right before `fork()`; then [`after_fork_parent`] in the parent and
/// [`after_fork_child`] in the child, on the same thread.
///
/// Waits for scan passes in progress to finish; while it waits, no other
/// pass starts (callers queue as behind a pass). Until the `after_fork_*`
/// call, shared-scan `synchronize` callers wait (an unshared domain's scan
/// alone goes on), as do hand-overs of retired objects, reclamation passes,
/// and the creation and drop of domains. In the forking thread those would
/// wait for the locks it holds itself, so they panic instead (see below),
/// except a `retire` (or [`AtomicBox`](crate::AtomicBox) update) that has a
/// batch to go to, whose objects stay in the thread's own batch until its
/// first retire after the hooks. Its guards may stay alive across the fork: they keep protecting in
/// both processes, and taking new ones works.
///
/// # Panics
///
/// If the calling thread already called `before_fork` without an
/// `after_fork_*`. Between the two, in the calling thread: `synchronize`
/// (shared or not: another thread's guard may be held by a thread that waits
/// for these locks), `reclaim`, a `retire` (an `AtomicBox` update included)
/// with no batch to keep its object in (on a domain with a forced slow path,
/// or in a thread-local destructor that runs after hazptr's per-thread state
/// is gone), `Domain::start_scanner`, and creating or dropping a domain.
pub fn before_fork() {
    if between_hooks() {
        panic!(
            "hazptr::fork::before_fork() called twice without after_fork_parent() or \
             after_fork_child()"
        );
    }
    // Before the registry lock: the global domain registers on first use, and
    // a thread that is creating it at the fork would leave the child a
    // `LazyLock` that never completes.
    let _ = Domain::global();
    // The same for the fence mode: the first guard or scan decides it once,
    // and a `OnceLock` caught mid-decision would block the child's first
    // fence forever.
    let _ = membarrier_sim::fence::mode();
    // And the stall warnings' timeout, read once by the first wait that
    // sleeps (`futex_word::stall`).
    let _ = futex_word::stall::timeout();
    // And the key that gives a thread's blocks back when its thread-locals
    // cannot. (Retirement's clock, `retire::now_ms`, has no state to settle.)
    let _ = crate::registration::settle_exit_key();
    let registry = DOMAINS.lock().unwrap_or_else(PoisonError::into_inner);
    let domains = registry
        .iter()
        .filter_map(Weak::upgrade)
        .map(DomainHeld::hold)
        .collect();
    let held = Box::new(Held {
        pid: std::process::id(),
        domains,
        _registry: registry,
    });
    HELD.with(|slot| slot.set(Box::into_raw(held)));
    // Registers the release at exit. In a thread-local destructor that runs
    // after it, `RELEASE_AT_EXIT` is gone, and in a POSIX key's destructor
    // (another library's exit hook) it would be created too late to run:
    // the exit key's destructor, which glibc runs after every thread-local
    // destructor, releases them then (until 2026-12-07 nothing did, and the
    // next `Domain::new` hung). Armed every time: releasing twice finds
    // nothing the second time.
    let _ = RELEASE_AT_EXIT.try_with(|_| ());
    crate::registration::arm_exit_key();
}

/// Call in the parent right after `fork()` (whether it succeeded or not).
///
/// # Panics
///
/// Without a [`before_fork`] on this thread, or in a child of `fork()` (told
/// from the parent by its process id): the child must call
/// [`after_fork_child`] instead, which it still can.
pub fn after_fork_parent() {
    drop(take_held("after_fork_parent", false));
}

/// Call in the child right after `fork()`, before anything else uses hazptr.
///
/// The slots of every other thread are emptied, whatever they protect: their
/// protections vanished with their threads. A reference that outlives its
/// guard's thread can therefore dangle in the child: one loaded under a guard
/// that another thread leaked (`Box::leak`, `mem::forget`) and handed, as
/// `&'static T`, to the forking thread. Calling `fork()` is `unsafe`; the
/// caller promises that the child uses no such reference.
///
/// # Panics
///
/// Without a [`before_fork`] on this thread (in the parent, before the fork),
/// or in the process that called [`before_fork`] (told by its process id): it
/// would empty and free the slots of that process's live threads, and their
/// protected objects could be freed under them. [`after_fork_parent`] can
/// still be called there.
pub fn after_fork_child() {
    let mut held = take_held("after_fork_child", true);
    // The forking thread's slots are told by its token, not by thread-locals
    // that a thread-local destructor calling this may have outlived.
    let own = thread_token();
    // The child's thread has a kernel id of its own: what the parent's
    // thread cached is forgotten, and the slots it holds record the new one
    // (below), for the stall warnings.
    crate::registration::forget_thread_os_id();
    for domain in &mut held.domains {
        let shared = &*domain.shared;
        shared.free_foreign_slots_after_fork(own);
        // Owners that waited out a drain at the fork vanished with their
        // threads (the forking thread was in the hooks, not waiting): a count
        // of them left would keep the child's every drain waiting for them.
        // (Their blocks' `pushing` flags went with the blocks, above.)
        // Relaxed: the child's only thread.
        shared.drain_waiters.store(0, Ordering::Relaxed);
        // What a vanished thread's pass had taken off the list is never
        // freed here: `retired_len` counts the list again, and what this
        // thread's own deleters are handed, when it forks from one of them
        // (its pass goes on in the child and subtracts them). Relaxed: the
        // child's only thread, which holds the list's lock.
        shared.reclamation.unfreed.store(
            domain.retired_len() + crate::retire::held_by_this_threads_deleters(shared),
            Ordering::Relaxed,
        );
        reset_after_fork(shared, &mut domain.thread);
    }
    drop(held);
}

/// Panics if the calling thread is between its [`before_fork`] and
/// `after_fork_*`: `what` would wait for a lock the thread holds itself.
/// Called before anything that takes a lock `before_fork` holds.
#[inline]
pub(crate) fn refuse_between_hooks(what: &str) {
    if between_hooks() {
        refused_between_hooks(what);
    }
}

/// Whether the calling thread is between its [`before_fork`] and
/// `after_fork_*`, holding every domain's locks.
pub(crate) fn between_hooks() -> bool {
    // `HELD` has no destructor: readable in any thread-local destructor.
    !HELD.with(Cell::get).is_null()
}

#[cold]
#[inline(never)]
fn refused_between_hooks(what: &str) -> ! {
    panic!(
        "hazptr: {what} called between hazptr::fork::before_fork() and \
         after_fork_parent()/after_fork_child() on the forking thread: it would wait for the \
         locks that this thread holds for the fork (deadlock)"
    )
}

/// What [`before_fork`] took, for the hook `name`, which runs in the child
/// (`in_child`) or in the parent. Panics, leaving it held for the right hook,
/// if this is the other process.
fn take_held(name: &str, in_child: bool) -> Box<Held> {
    let held = take_held_if_any().unwrap_or_else(|| {
        panic!("hazptr::fork::{name}() without hazptr::fork::before_fork() on this thread")
    });
    let is_child = held.pid != std::process::id();
    if is_child != in_child {
        HELD.with(|slot| slot.set(Box::into_raw(held)));
        wrong_process(name, is_child);
    }
    held
}

#[cold]
#[inline(never)]
fn wrong_process(name: &str, is_child: bool) -> ! {
    if is_child {
        panic!(
            "hazptr::fork::{name}() called in a child of fork(): the child would keep the \
             slots, waiters and scanner state of the threads that did not come along (a \
             synchronize would wait for them forever); call after_fork_child() in the child"
        )
    }
    panic!(
        "hazptr::fork::{name}() called in the process that called before_fork() (no fork \
         happened, or this is the parent): it would empty and free the slots of this \
         process's live threads, and objects their guards protect could be freed under them; \
         call after_fork_parent() here"
    )
}
