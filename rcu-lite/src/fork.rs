//! `fork()` hooks: what lets a process that uses rcu-lite fork and keep using
//! it in the child.
//!
//! liburcu counterparts: `urcu_bp_before_fork()`, `urcu_bp_after_fork_parent()`
//! and `urcu_bp_after_fork_child()` (the "bulletproof" flavor, whose child hook
//! prunes every other thread's registration), and each flavor's
//! `urcu_*_call_rcu_before_fork()` and friends for its `call_rcu` workers, which
//! its users call around `fork()` or register with `pthread_atfork()`. (liburcu
//! 0.13's memb library exports only the `call_rcu` ones, although its
//! headers name `urcu_memb_before_fork()` and the like.)
//!
//! # What goes wrong without them
//!
//! The child gets a copy of the memory but only the thread that forked. The
//! grace-period worker and the `call_rcu` workers are gone, and so are the
//! threads that were driving a grace period, waiting for one, or inside a
//! read-side section. Their state stays: a grace period in progress never
//! completes, a registration of a vanished reader holds up every grace period,
//! a queue mutex held at the fork stays locked. The child then waits forever.
//!
//! # What they do
//!
//! - [`before_fork`] checks that the calling thread is outside every memb
//!   read-side section, has no online qsbr registration and is not running
//!   RCU callbacks or an `Rcu::update` function (each would make the child
//!   wait for a thread frozen in the parent's state, or deadlock here), then
//!   takes both flavors' callback
//!   batch locks and then both queue locks, so that no batch is half taken and
//!   no queue half written when the memory is copied. It waits for the
//!   callback that is running, not for the whole batch: while a fork waits,
//!   the worker carries the rest of its batch over, ahead of the queue (its
//!   next batch, which needs no other grace period), and starts no new
//!   batch. Past the stall timeout it says on stderr what
//!   it waits for.
//! - [`after_fork_parent`] releases them.
//! - [`after_fork_child`], in the child: for each flavor, completes a grace
//!   period a vanished thread was driving (every section it could wait for
//!   belonged to a vanished thread), gives back every record of another thread
//!   (each outside, offline), clears the driver bit and the count of sleeping
//!   callers, and forgets the worker threads, which the next hand-over or
//!   `call_rcu()` starts again. Callbacks still queued stay queued: in the
//!   child they run once its next `call_rcu()` or `rcu_barrier()` of that
//!   flavor starts a worker, after a grace period (and in the parent too: each
//!   process has its copy). Then it releases the locks.
//!
//! Hooks ended while a panic unwinds (an `after_fork_*` in a `Drop`) leave
//! the callback queues usable: the release poisons their locks, and the crate
//! ignores that poison (`sync::lock`).
//!
//! They cover rcu-lite's own state, not an [`Rcu`](crate::Rcu) cell's: a
//! cell whose update lock another thread held at the fork (inside `replace`
//! or an `update` function) stays locked in the child, as any
//! `std::sync::Mutex` would, and the child's updates of that cell wait
//! forever (its reads still work).
//!
//! Grace periods keep running in the parent while the locks are held: only
//! `call_rcu()` and `rcu_barrier()` wait for `after_fork_parent`.
//! hazptr has hooks of its own (`hazptr::fork`); a program that uses both
//! calls both, rcu-lite's `before_fork` first and hazptr's second, and the `after_fork_*`
//! hooks the other way round: an RCU callback or reader may be inside hazptr
//! (a callback worker holding its batch lock while it waits for a hazptr lock
//! that hazptr's hooks hold would leave rcu-lite's `before_fork` waiting
//! forever), while hazptr's hooks never wait for rcu-lite (a hazptr deleter
//! that hands its work to `call_rcu()` holds none of hazptr's locks while
//! it waits). With `pthread_atfork()`,
//! register hazptr's handlers first: prepare handlers run in the reverse order
//! of registration, the others in order.
//!
//! # Your own prepare handlers
//!
//! A prepare handler that takes a lock of the program's, to keep it whole in
//! the child, orders that lock against rcu-lite's `before_fork`, which waits
//! for the running callback and then holds the callback queues:
//!
//! - A lock that a thread may hold while it calls `call_rcu()` or
//!   `rcu_barrier()` (or `Rcu::replace`, or a hazptr retire or update whose
//!   deleter calls `call_rcu()`) must be taken by a handler that runs
//!   before rcu-lite's, that is, one registered after it. Taken after, the
//!   fork waits for that thread, which waits for the queue the fork holds.
//! - A lock that a callback takes must be taken by a handler that runs after
//!   rcu-lite's (registered before it). Taken before, `before_fork` waits
//!   for the callback, which waits for the fork: the stall warning says so.
//!
//! A lock of both kinds has no safe order: keep it out of callbacks, or do
//! not queue callbacks while holding it.
//!
//! The forking thread's own hazptr guards count as locks of the second
//! kind: `before_fork` runs on that thread and waits for the running
//! callback, so a guard it holds on an object that a callback passes to
//! hazptr's `synchronize` leaves the fork waiting for that callback, which
//! waits for the forking thread (the stall warning says so). Drop such
//! guards before forking. (Its memb sections and online qsbr registrations
//! are refused: see [`before_fork`]'s panics.)
//!
//! # What they cannot cover
//!
//! Locks inside std: std takes a process-wide lock while a thread starts and
//! while it exits, so a child forked while another thread of the parent was
//! doing either cannot start a thread (each waits for that lock for ever),
//! and the child's next hand-over or `call_rcu()` starts a worker thread.
//! Fork when no thread is starting or exiting, or keep the child to `exec`
//! (as `std::process::Command` does). rcu-lite starts threads of its own at
//! moments it picks: the callback worker at a flavor's first `call_rcu()`,
//! the grace-period worker at the first hand-over to it (a crowd of waiting
//! callers), and, while the system refuses that thread, again at most once
//! a second as crowds form. So a program that forks from one thread while
//! others call `synchronize_rcu()` cannot rule the hazard out unless the
//! workers already run: `start_grace_period_worker()` of each flavor starts
//! its grace-period worker, returning once it runs, and a first `call_rcu()`
//! followed by `rcu_barrier()` leaves the callback worker running. This
//! workspace's fork tests run in a process of
//! their own for this reason (`test_support::forking_test`).
//!
//! # Registering them once
//!
//! A program that does not call `fork()` itself (a library does, or
//! `std::process::Command` where it cannot use `posix_spawn`) can have every
//! fork run them:
//!
//! ```
//! extern "C" fn prepare() {
//!     rcu_lite::fork::before_fork();
//! }
//! extern "C" fn parent() {
//!     rcu_lite::fork::after_fork_parent();
//! }
//! extern "C" fn child() {
//!     rcu_lite::fork::after_fork_child();
//! }
//! // SAFETY: three plain functions that live as long as the process.
//! // A program that uses hazptr too registers hazptr's handlers right
//! // before these, in the same place (see *What they do*): the other
//! // order, or two registrations in init code that runs in either order,
//! // hangs forks.
//! let rc = unsafe { libc::pthread_atfork(Some(prepare), Some(parent), Some(child)) };
//! assert_eq!(rc, 0);
//! ```
//!
//! Every fork then has to come from outside read-side sections, RCU
//! callbacks and `Rcu::update` functions, with the forking thread's qsbr
//! registration offline: the misuse panic inside a handler aborts the
//! process (it cannot unwind out of an `extern "C"` function).

use crate::callbacks::{self, BatchHeld, QueueHeld};
use crate::{memb, qsbr};
use std::cell::Cell;
use std::ptr;

/// The locks [`before_fork`] took, in the order they are released.
struct Held {
    /// The process that called [`before_fork`]: the hook that runs after
    /// the fork tells the parent from the child by it. (Only a process
    /// that is its PID namespace's init, has unshared a new PID namespace
    /// and then forks gets a child with its own pid, 1: that child's
    /// `after_fork_child` would panic as if in the parent.)
    pid: u32,
    memb_queue: QueueHeld,
    qsbr_queue: QueueHeld,
    _memb_batches: BatchHeld,
    _qsbr_batches: BatchHeld,
    /// [`FORKERS`], released last.
    _forkers: std::sync::MutexGuard<'static, ()>,
}

/// Held from a [`before_fork`] to its `after_fork_*`: one thread at a time
/// between the hooks. Two that waited for the batch locks at once could each
/// hold one and wait for the other; and a thread's count of waiting forks
/// (`CallbackQueue::hold_batches`) is then never copied into a child.
static FORKERS: std::sync::Mutex<()> = std::sync::Mutex::new(());

std::thread_local! {
    /// What this thread's [`before_fork`] holds until `after_fork_*`: a
    /// `Box<Held>` turned into a pointer, or null. A plain pointer with no
    /// destructor, so that the hooks (and the checks of `call_rcu()` and
    /// `synchronize_rcu()`) work in a thread-local destructor that runs
    /// after rcu-lite's other per-thread state is gone: a thread's clean-up
    /// may fork.
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
        if let Some(held) = take_held_if_any() {
            drop(held);
        }
    }
}

/// A POSIX thread-specific key whose destructor releases what [`HELD`]
/// still holds, armed by every [`before_fork`]: for one that runs in a
/// thread-local destructor after [`RELEASE_AT_EXIT`] is gone, or in a key
/// destructor, after every thread-local destructor (glibc runs key
/// destructors after those). `None` if the process ran out of keys.
static RELEASE_KEY: std::sync::OnceLock<Option<libc::pthread_key_t>> = std::sync::OnceLock::new();

/// [`RELEASE_KEY`]'s destructor.
unsafe extern "C" fn release_at_key_exit(_: *mut libc::c_void) {
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
/// [`after_fork_child`] in the child, on the same thread. Waits while a
/// `call_rcu` callback runs, or a batch waits for its grace period (the
/// worker then starts no other batch, and carries the rest of a running one
/// over to the next; past the stall timeout this says so on stderr).
/// Forks of several threads wait for one another: from one thread's
/// `before_fork` to its `after_fork_*`, another's `before_fork` waits (with
/// a stall line past the timeout).
/// Until the `after_fork_*` call, `call_rcu()`
/// and `rcu_barrier()` (and what is built on them: `Rcu::replace`,
/// `Rcu::update`, `raw::defer_drop_box`, `start_poll_synchronize_rcu()`,
/// `Rcu::replace_polled`) block in every other thread; so does dropping an
/// unclaimed `Retired` whose grace period has not ended (on the forking
/// thread it leaks the value instead); in the
/// forking thread they would wait for the lock it holds itself, so they panic
/// instead (a refused `call_rcu()` leaks its callback, and one made while the
/// thread already unwinds returns instead). So does `synchronize_rcu()` there:
/// a reader of another thread may be blocked in `call_rcu()` inside its
/// section.
///
/// # Panics
///
/// If the calling thread is inside a memb read-side section, has an online
/// [`qsbr::QsbrThread`], is running RCU callbacks or an
/// [`Rcu::update`](crate::Rcu::update) function, or already called
/// `before_fork` without an `after_fork_*`.
pub fn before_fork() {
    if memb::read_ongoing() {
        misuse("inside a memb read-side section (the child would keep it open forever)");
    }
    if qsbr::online_count() > 0 {
        misuse("with an online qsbr registration (take it offline around the fork)");
    }
    if callbacks::in_callback() {
        misuse("from inside an RCU callback (the callback worker would wait for itself)");
    }
    if between_the_hooks() {
        misuse("twice without after_fork_parent() or after_fork_child()");
    }
    if crate::cell::runs_an_update() {
        misuse(
            "inside an Rcu::update() function (it waits for a running callback batch holding \
             the cell's update lock, which a callback may be waiting for)",
        );
    }
    // The fence mode is decided once, by the first fence or registration: a
    // thread deciding it at the fork would leave the child a `OnceLock` that
    // blocks its first fence forever.
    let _ = membarrier_sim::fence::mode();
    // And for the stall warnings' timeout, read once by the first driver
    // that sleeps for holdouts (`futex_word::stall`).
    let _ = futex_word::stall::timeout();
    // The same for each flavor's second-chance key (`thread_record.rs`),
    // created by the first registration of the flavor.
    memb::settle_teardown_key();
    qsbr::settle_teardown_key();
    // And the key that releases the hooks' locks at a thread's exit when
    // `RELEASE_AT_EXIT` cannot (below).
    let release_key = crate::thread_record::teardown_key(&RELEASE_KEY, release_at_key_exit);
    // And the callback worker's stack size, read from the environment once
    // by the first worker start (a child starts its workers again).
    let _ = crate::callbacks::worker_stack_size();
    // Every batch lock before any queue lock: a callback may queue callbacks
    // of the other flavor.
    let forkers = hold_forkers();
    let (memb_batches, qsbr_batches) = hold_both_batches();
    let held = Box::new(Held {
        pid: std::process::id(),
        memb_queue: memb::engine().callbacks.hold_queue(),
        qsbr_queue: qsbr::engine().callbacks.hold_queue(),
        _memb_batches: memb_batches,
        _qsbr_batches: qsbr_batches,
        _forkers: forkers,
    });
    HELD.with(|slot| slot.set(Box::into_raw(held)));
    // Registers the release at exit. In a thread-local destructor that runs
    // after `RELEASE_AT_EXIT`'s, that is gone, and in a POSIX key's
    // destructor (another library's exit hook) it would be created too late
    // to run: the key's destructor releases them then (until 2026-12-07
    // nothing did, and the next `before_fork` waited for ever). Armed every
    // time: releasing twice finds nothing the second time.
    let _ = RELEASE_AT_EXIT.try_with(|_| ());
    if let Some(key) = release_key {
        // SAFETY: a key this process created and never deletes; the value
        // is a flag, never dereferenced.
        let _ = unsafe { libc::pthread_setspecific(key, ptr::dangling::<libc::c_void>()) };
    }
}

/// Both flavors' batch locks. No order of the two is safe to wait in without
/// limit: a batch of either flavor may wait for the other flavor's worker (a
/// callback in the other flavor's `rcu_barrier()`, a grace period that waits
/// for a reader blocked in that barrier, a channel fed by the other flavor's
/// callbacks), and that worker cannot run a batch while this thread holds its
/// lock. So this waits for one lock while holding neither (that flavor's
/// worker finishes the callback it runs and starts no batch meanwhile, the
/// other runs on), then for the other for a bounded time, and otherwise lets
/// go and starts again with the other flavor first. The bound starts at 1 ms
/// and doubles each round without a cap: once it exceeds what the longer
/// flavor needs to end its running callback or grace period, a round
/// succeeds (a cap would let two flavors whose callbacks outlast it, out of
/// phase, keep every round failing). A dependency of one flavor's batch on
/// the other's worker is cleared by the next round's first wait, which
/// holds nothing.
fn hold_both_batches() -> (BatchHeld, BatchHeld) {
    use std::time::{Duration, Instant};
    let (memb, qsbr) = (&memb::engine().callbacks, &qsbr::engine().callbacks);
    let mut watch = futex_word::stall::Watch::new();
    let mut bound = Duration::from_millis(1);
    // The first flavor of each round, alternating.
    let mut order = [(memb, "memb"), (qsbr, "qsbr")];
    loop {
        let [(first, first_name), (second, second_name)] = order;
        let Some(first_batches) = first.hold_batches(first_name, &mut watch, || false) else {
            unreachable!("a wait that never gives up returned without the lock")
        };
        let deadline = Instant::now() + bound;
        if let Some(second_batches) =
            second.hold_batches(second_name, &mut watch, || Instant::now() >= deadline)
        {
            return if std::ptr::eq(first, memb) {
                (first_batches, second_batches)
            } else {
                (second_batches, first_batches)
            };
        }
        drop(first_batches);
        bound = bound.saturating_mul(2);
        order.swap(0, 1);
    }
}

/// [`FORKERS`], waited for with a stall warning: a thread that stays
/// between the hooks holds every later fork. (One that exits there gives
/// them back: [`RELEASE_AT_EXIT`]'s destructor does, or [`RELEASE_KEY`]'s
/// where that one has run already or never will.)
fn hold_forkers() -> std::sync::MutexGuard<'static, ()> {
    let mut watch = futex_word::stall::Watch::new();
    let held = callbacks::wait_for_lock(
        &FORKERS,
        &mut watch,
        || false,
        |waited| {
            futex_word::stall::write_line(format_args!(
                "rcu-lite: stall: rcu_lite::fork::before_fork() has waited {:.1} s for another \
             thread's fork hooks: that thread called before_fork() and not yet \
             after_fork_parent() or after_fork_child(); it goes on waiting",
                waited.as_secs_f64()
            ));
        },
    );
    held.unwrap_or_else(|| unreachable!("a wait that never gives up returned without the lock"))
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

/// Call in the child right after `fork()`, before anything else uses rcu-lite.
///
/// Every other thread's record is given back, whether or not that thread was
/// inside a section at the fork (as liburcu's `urcu_bp_after_fork_child()`
/// unregisters them): a section that vanished with its thread ends here. A
/// reference that outlives its section can therefore dangle in the child:
/// one read under a guard or registration that another thread leaked
/// (`Box::leak`, `mem::forget`) and handed, as `&'static T`, to the forking
/// thread. Calling `fork()` is `unsafe`; the caller promises that the child
/// uses no such reference.
///
/// A grace period the parent had in progress counts as complete here: its
/// driver did not come along. So a polled cookie
/// (`get_state_synchronize_rcu()`) that the forking thread took between the
/// hooks, inside a read-side section of its own that began before the
/// cookie (or, for qsbr, while online), can read as elapsed in the child
/// while that section is still open. The safe layer cannot get there
/// (`Rcu::replace_polled` is refused between the hooks); code that frees
/// through the raw layer on such a cookie must end the section first.
///
/// # Panics
///
/// Without a [`before_fork`] on this thread (in the parent, before the fork),
/// or in the process that called [`before_fork`] (told by its process id): it
/// would give back the records of that process's live threads, and grace
/// periods would stop waiting for their readers. [`after_fork_parent`] can
/// still be called there.
pub fn after_fork_child() {
    let mut held = take_held("after_fork_child", true);
    for (engine, queue) in [
        (memb::engine(), &mut held.memb_queue),
        (qsbr::engine(), &mut held.qsbr_queue),
    ] {
        engine.reset_after_fork();
        engine.callbacks.forget_worker_after_fork(queue);
    }
    drop(held);
}

/// What may not run on the forking thread between the hooks.
#[derive(Clone, Copy)]
pub(crate) enum Refused {
    /// Queuing a callback: it would wait for the queue lock the thread holds.
    Queuing,
    /// Waiting for a grace period (the function's name): a reader of another
    /// thread may be waiting for that queue lock inside its section.
    Waiting(&'static str),
}

/// Panics if the calling thread is between its [`before_fork`] and
/// `after_fork_*` (see [`Refused`]).
#[inline]
pub(crate) fn refuse_between_hooks(flavor: &str, refused: Refused) {
    if between_the_hooks() {
        between_hooks(flavor, refused);
    }
}

/// The panic of [`refuse_between_hooks`].
#[cold]
#[inline(never)]
pub(crate) fn between_hooks(flavor: &str, refused: Refused) -> ! {
    let (name, why) = match refused {
        Refused::Queuing => (
            format!(
                "rcu_lite::{flavor}::call_rcu() or rcu_barrier() (or Rcu::replace/update/\
                 replace_polled, raw::defer_drop_box, start_poll_synchronize_rcu)"
            ),
            "it would wait for the callback-queue lock that this thread holds for the fork",
        ),
        Refused::Waiting(name) => (
            crate::api_path(flavor, name),
            "until after_fork_*() every other thread's call_rcu() waits for the callback-queue \
             lock that this thread holds, even inside a read-side section, and the grace \
             period would wait for such a reader",
        ),
    };
    panic!(
        "{name} called between rcu_lite::fork::before_fork() and \
         after_fork_parent()/after_fork_child() on the forking thread: {why} (deadlock)"
    )
}

/// Whether the calling thread is between its [`before_fork`] and
/// `after_fork_*`.
pub(crate) fn between_the_hooks() -> bool {
    !HELD.with(Cell::get).is_null()
}

/// What [`before_fork`] took, for the hook `name`, which runs in the child
/// (`in_child`) or in the parent. Panics, leaving it held for the right hook,
/// if this is the other process.
fn take_held(name: &str, in_child: bool) -> Box<Held> {
    let held = take_held_if_any().unwrap_or_else(|| {
        panic!("rcu_lite::fork::{name}() without rcu_lite::fork::before_fork() on this thread")
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
            "rcu_lite::fork::{name}() called in a child of fork(): the child would keep the \
             state of the threads that did not come along (their open read-side sections, a \
             grace period one of them drove) and wait for them forever; call \
             after_fork_child() in the child"
        )
    }
    panic!(
        "rcu_lite::fork::{name}() called in the process that called before_fork() (no fork \
         happened, or this is the parent): it would give back the records of this process's \
         live threads, and grace periods would stop waiting for their readers; call \
         after_fork_parent() here"
    )
}

#[cold]
#[inline(never)]
fn misuse(what: &str) -> ! {
    panic!("rcu_lite::fork::before_fork() called {what}")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `before_fork` leaves no `OnceLock` of the thread records for a
    /// thread to be caught initialising at the fork: the child would block
    /// forever in it (every thread that later exits with a guard kept in a
    /// later thread-local, or registers during its teardown, needs it).
    #[test]
    fn before_fork_settles_the_second_chance_keys() {
        before_fork();
        after_fork_parent();
        assert!(memb::teardown_key_settled(), "memb's key not created");
        assert!(qsbr::teardown_key_settled(), "qsbr's key not created");
    }
}
