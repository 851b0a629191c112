//! `call_rcu()`: callbacks that run after a grace period, batched per grace
//! period by one worker thread per flavor, and `rcu_barrier()`.
//!
//! Kernel counterparts: `call_rcu()`, `rcu_do_batch()` and `rcu_barrier()`
//! (liburcu: the `call_rcu` worker thread and `rcu_barrier()`).
//!
//! # Invariants
//!
//! - A callback runs only after a grace period that began after `call_rcu()`
//!   queued it: the worker takes a batch, then calls `synchronize_rcu()`, then
//!   runs the batch. Callbacks queued while that grace period runs wait for the
//!   next batch, so one grace period serves everything queued before it.
//! - Batches run one at a time, in queue order (`batch_lock`); within a batch,
//!   callbacks run in the order they were queued. While a fork waits for
//!   `batch_lock` (`fork_waiting`), the worker starts no batch, and ends the
//!   one it runs after the current callback, the rest carried over
//!   (`Pending::carried`): they run, in order, as the next batch, ahead of
//!   everything queued since and without another grace period (theirs has
//!   ended). A grace period asked for without a callback
//!   (`request_grace_period`) therefore needs a queued callback of its own
//!   whenever the queue proper is empty, carried callbacks or not.
//!   `rcu_barrier()` queues a
//!   callback and waits for it, so every callback queued before the barrier has
//!   run when it returns; when nothing is queued and no batch is in flight
//!   (taking `batch_lock` without waiting), that is already so, and it
//!   returns at once.
//! - [`CallbackQueue::pending`] counts callbacks queued and not yet started,
//!   from two totals that each have a single writer at a time and so need no
//!   read-modify-write: callbacks ever queued (written under the queue lock)
//!   and callbacks started (written under `batch_lock`). It is a
//!   snapshot for a writer that wants to bound the queue (`call_rcu()` never
//!   waits for a grace period: it may be called inside a read-side section or
//!   with a lock held that readers take; it waits only for another thread's
//!   start of the worker, and between the fork hooks), not a synchronization
//!   point.
//! - The worker starts on the first `call_rcu()` (or `rcu_barrier()`) and
//!   lives as long as the process. A callback is queued before the worker is
//!   started: a `call_rcu()` whose start fails panics with its callback
//!   queued, and the next start runs it (while its thread already unwinds,
//!   it reports the failure on standard error instead of a second panic;
//!   a barrier then left without a worker panics, and so aborts). The worker sleeps on a futex while
//!   the queue is empty and is woken by the `call_rcu()` that finds it asleep. A panicking callback is reported on
//!   standard error and does not stop the worker. A callback that returns
//!   with a memb read-side section open or a qsbr registration online on the
//!   worker thread aborts the process with a message naming it: every later
//!   grace period of that flavor would wait for the worker forever, and the
//!   worker's own next `synchronize_rcu()` would end it with its batch
//!   unrun, so that every later callback and `rcu_barrier()` hung.
//!
//! Under loom there is no worker thread: `rcu_barrier()` runs the batches
//! itself while it waits, which is how most models exercise this module, and
//! one model runs the worker's own loop (`worker_rounds`) on a loom thread
//! against a racing `call_rcu()`.

use crate::futex;
use crate::sync::{Arc, AtomicU32, AtomicU64, Mutex, spin_loop};
use std::cell::Cell;
use std::mem;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::Ordering::{Acquire, Relaxed, Release, SeqCst};

/// A queued callback.
pub(crate) type Callback = Box<dyn FnOnce() + Send + 'static>;

/// Spins of a `rcu_barrier()` caller before it sleeps.
const BARRIER_SPINS: u32 = if cfg!(loom) { 1 } else { 100 };

#[cfg(not(loom))]
std::thread_local! {
    /// The queue whose batch of callbacks this thread is running, if any.
    static IN_CALLBACK: Cell<*const CallbackQueue> = const { Cell::new(std::ptr::null()) };
}
#[cfg(loom)]
loom::thread_local! {
    /// The queue whose batch of callbacks this thread is running, if any.
    static IN_CALLBACK: Cell<*const CallbackQueue> = Cell::new(std::ptr::null());
}

/// Whether the calling thread is running a batch of callbacks (of either
/// flavor).
#[cfg(not(loom))]
pub(crate) fn in_callback() -> bool {
    !IN_CALLBACK.with(Cell::get).is_null()
}

/// The callbacks queued and the worker's sleep state, under one lock.
pub(crate) struct Pending {
    callbacks: Vec<Callback>,
    /// The rest of a batch that a fork cut short (`requeue_for_a_fork`):
    /// their grace period has ended, and they run before `callbacks`, as
    /// the next batch.
    carried: Option<std::vec::IntoIter<Callback>>,
    /// The worker sleeps (or is about to) on `wake_seq`.
    worker_asleep: bool,
}

impl Pending {
    /// Whether no callback waits here, queued or carried.
    fn is_empty(&self) -> bool {
        self.callbacks.is_empty() && self.carried.is_none()
    }

    /// Callbacks waiting here, queued or carried.
    #[cfg(loom)]
    fn len(&self) -> usize {
        self.callbacks.len() + self.carried.as_ref().map_or(0, ExactSizeIterator::len)
    }
}

/// One flavor's callback queue, in two halves on lines of their own (128
/// bytes each: the adjacent-line prefetcher of x86 CPUs pairs 64-byte
/// lines): what every `call_rcu()` writes (the queue, its count, the wake-up
/// word) and reads (`worker_state`), and, in [`Batches`], what the worker
/// writes at every callback it runs. Side by side, they shared a line or
/// two, which a worker running a batch while callers queue would pull back
/// and forth about once per callback on each side (not measurable on 2
/// vCPUs, where glibc's cross-thread frees dominate `call_rcu`).
#[repr(align(128))]
pub(crate) struct CallbackQueue {
    pending: Mutex<Pending>,
    /// Futex word the worker sleeps on; bumped to wake it.
    wake_seq: AtomicU32,
    /// Callbacks ever queued; written only under the queue lock, read by
    /// [`Self::pending`] without it. 64 bits on every target: a `usize`
    /// total wraps on a 32-bit one after 2^32 callbacks (about an hour at a
    /// million a second), which made `pending` read 0 (release) or panicked
    /// in `call_rcu` and killed the worker mid-batch (debug).
    queued_total: AtomicU64,
    /// Barrier callbacks that this flavor's callbacks queued on the other
    /// flavor's queue and that have not run yet ([`enter_cross_barrier`]).
    cross_barriers: AtomicU32,
    /// Whether the worker thread runs, or is being started
    /// (`WORKER_NOT_STARTED`, `WORKER_STARTING`, `WORKER_RUNNING`; in this
    /// process: a fork child has none).
    #[cfg(not(loom))]
    worker_state: std::sync::atomic::AtomicU8,
    /// The worker thread's kernel id (`gettid()`), 0 before it runs: a
    /// barrier's stall warning checks that the thread is still there (a
    /// seccomp filter that kills the thread, inherited from the thread that
    /// started it, can end it; nothing in the process notices).
    #[cfg(not(loom))]
    worker_tid: std::sync::atomic::AtomicI32,
    /// Tests: makes every spawn of the worker fail.
    #[cfg(all(test, not(loom)))]
    fail_spawn: std::sync::atomic::AtomicBool,
    /// The batch lock and the counts the worker keeps as it runs callbacks.
    batches: Batches,
}

// The layout stated above, checked as the crate compiles: each half fills
// one 128-byte pair of lines. (Loom's types are no real layout.)
#[cfg(not(loom))]
const _: () = {
    assert!(align_of::<CallbackQueue>() == 128 && align_of::<Batches>() == 128);
    assert!(size_of::<Batches>() == 128 && size_of::<CallbackQueue>() == 256);
};

/// [`CallbackQueue`]'s worker half: written at every callback the worker
/// runs, read there and by barriers and forks.
#[repr(align(128))]
struct Batches {
    /// Held while a batch is taken, waited for and run.
    batch_lock: Mutex<()>,
    /// Callbacks that have started running; written only under `batch_lock`.
    started_total: AtomicU64,
    /// Callbacks that have returned (or panicked); written only under
    /// `batch_lock`. With `started_total`, it tells a barrier's stall
    /// warning whether a callback is running and whether any finished.
    returned_total: AtomicU64,
    /// Forking threads waiting for `batch_lock` ([`CallbackQueue::hold_batches`]):
    /// while nonzero the worker starts no new batch. Without it the worker
    /// took the lock back the moment it let go, and a fork waited until
    /// the queue ran dry: seconds under a steady stream of callbacks.
    fork_waiting: AtomicU32,
}

/// [`CallbackQueue::worker_state`]: no worker, and nobody starting one.
#[cfg(not(loom))]
const WORKER_NOT_STARTED: u8 = 0;
/// A caller is spawning the worker; the others wait for the outcome.
#[cfg(not(loom))]
const WORKER_STARTING: u8 = 1;
/// The worker thread was spawned.
#[cfg(not(loom))]
const WORKER_RUNNING: u8 = 2;

/// The locks of a flavor's callback queue, held across `fork()` (`fork.rs`).
#[cfg(not(loom))]
pub(crate) type BatchHeld = std::sync::MutexGuard<'static, ()>;
/// See [`BatchHeld`].
#[cfg(not(loom))]
pub(crate) type QueueHeld = std::sync::MutexGuard<'static, Pending>;

impl CallbackQueue {
    crate::const_unless_loom! {
        /// An empty queue with no worker yet.
        pub(crate) fn new() -> CallbackQueue {
            CallbackQueue {
                pending: Mutex::new(Pending {
                    callbacks: Vec::new(),
                    carried: None,
                    worker_asleep: false,
                }),
                wake_seq: AtomicU32::new(0),
                queued_total: AtomicU64::new(0),
                cross_barriers: AtomicU32::new(0),
                #[cfg(not(loom))]
                worker_state: std::sync::atomic::AtomicU8::new(WORKER_NOT_STARTED),
                #[cfg(not(loom))]
                worker_tid: std::sync::atomic::AtomicI32::new(0),
                #[cfg(all(test, not(loom)))]
                fail_spawn: std::sync::atomic::AtomicBool::new(false),
                batches: Batches {
                    batch_lock: Mutex::new(()),
                    started_total: AtomicU64::new(0),
                    returned_total: AtomicU64::new(0),
                    fork_waiting: AtomicU32::new(0),
                },
            }
        }
    }

    /// Queues `callback` to run after a grace period of the flavor whose
    /// `synchronize_rcu` is `synchronize`, starting the worker if needed.
    ///
    /// Queued before the worker is started: if the start fails, this panics
    /// with the callback queued (or, while the thread already unwinds,
    /// reports it on standard error), and the next `call_rcu()` or
    /// `rcu_barrier()` that starts a worker runs it. Between the fork hooks
    /// the callback is leaked and this panics (returns, while unwinding). (Started first, a failed start dropped
    /// the callback unrun: `Rcu::replace` had already published its new
    /// value, and the old one was never dropped.)
    pub(crate) fn enqueue(&'static self, callback: Callback, synchronize: fn(), flavor: &str) {
        self.queue(Some(callback), synchronize, flavor);
    }

    /// `start_poll_synchronize_rcu()`'s request: makes sure that the worker
    /// will drive a grace period that begins after this call, queuing a
    /// callback that does nothing only when the queue is empty. A queued
    /// callback is enough: its batch is taken under the queue lock after
    /// this call's look at the queue, and the batch's grace period begins
    /// after it is taken. So a stream of polls while a grace period is held
    /// up queues one callback, not one each (the kernel's
    /// `start_poll_synchronize_rcu()` likewise only asks for a grace period
    /// when none it could use is pending). Panics as [`Self::enqueue`].
    pub(crate) fn request_grace_period(&'static self, synchronize: fn(), flavor: &str) {
        self.queue(None, synchronize, flavor);
    }

    /// [`Self::enqueue`] of `callback`, or with `None`
    /// [`Self::request_grace_period`].
    fn queue(&'static self, callback: Option<Callback>, synchronize: fn(), flavor: &str) {
        #[cfg(not(loom))]
        if crate::fork::between_the_hooks() {
            // Refused: leaked, never run and never dropped. What it owns
            // (an object readers may still reach, to be freed after a grace
            // period) must not be dropped now, as the unwind would.
            mem::forget(callback);
            if std::thread::panicking() {
                // A drop run by the unwind of a refused call (`Rcu::replace`'s
                // new value, say) queues a callback: refusing it would be a
                // second panic, which aborts the process. As hazptr leaks a
                // retire there.
                return;
            }
            crate::fork::between_hooks(flavor, crate::fork::Refused::Queuing);
        }
        #[cfg(loom)]
        let _ = (synchronize, flavor);
        let wake = {
            let mut pending = crate::sync::lock(&self.pending);
            let callback = match callback {
                Some(callback) => Some(callback),
                // A closure that captures nothing: boxing it allocates nothing.
                // Carried callbacks do not count: their batch runs without a
                // grace period, so it would not drive the one asked for
                // (until 2026-12-07 a fork child's poll then never elapsed).
                None if pending.callbacks.is_empty() => Some(Box::new(|| {}) as Callback),
                None => None,
            };
            if let Some(callback) = callback {
                pending.callbacks.push(callback);
                // A load and a store, not an RMW: the queue lock makes this
                // thread the only writer. Relaxed: a snapshot for `pending`.
                let queued = self.queued_total.load(Relaxed);
                self.queued_total.store(queued + 1, Relaxed);
            }
            // With nothing queued here the queue was not empty, so whoever
            // queued last found the worker asleep (and woke it) or awake;
            // either way this is false then.
            mem::take(&mut pending.worker_asleep)
        };
        if wake {
            // Release: not needed for the callbacks (the mutex orders them);
            // the bump only has to differ from the value the worker sleeps on.
            self.wake_seq.fetch_add(1, Release);
            futex::wake_one(&self.wake_seq);
        }
        // After queuing: a worker that starts now finds the callback (it
        // takes the queue lock before it sleeps), and one that cannot start
        // leaves it queued for the next start. Also when nothing was queued:
        // in a fork child the callbacks queued before the fork wait for a
        // worker that this starts.
        #[cfg(not(loom))]
        self.start_worker(synchronize, flavor);
    }

    /// Takes every queued callback, waits for a grace period, and runs them
    /// (those left when a fork waits are carried over to the next batch:
    /// see `requeue_for_a_fork`); or, if a fork cut the last batch short,
    /// runs the rest of it, whose grace period has ended. Returns how many
    /// it took.
    pub(crate) fn run_batch(&self, synchronize: fn()) -> usize {
        let _one_batch_at_a_time = crate::sync::lock(&self.batches.batch_lock);
        let (mut batch, carried) = {
            let mut pending = crate::sync::lock(&self.pending);
            match pending.carried.take() {
                Some(rest) => (rest, true),
                None => (mem::take(&mut pending.callbacks).into_iter(), false),
            }
        };
        if batch.len() == 0 {
            return 0;
        }
        if !carried {
            synchronize();
        }
        let ran = batch.len();
        IN_CALLBACK.with(|c| c.set(self));
        while let Some(callback) = batch.next() {
            // Counted before it runs, so that once `rcu_barrier()`'s own
            // callback has signalled, `pending` no longer counts it. A load
            // and a store, not an RMW: `batch_lock` makes this thread the only
            // writer. Relaxed: a snapshot for `pending`.
            let started = self.batches.started_total.load(Relaxed);
            self.batches.started_total.store(started + 1, Relaxed);
            if cfg!(loom) {
                // Loom reports its findings by panicking: let them through.
                callback();
            } else {
                if let Err(payload) = catch_unwind(AssertUnwindSafe(callback)) {
                    report_panicked_callback(payload);
                }
                #[cfg(not(loom))]
                check_left_clean();
            }
            // As `started_total` (Relaxed: a count for the stall warning).
            let returned = self.batches.returned_total.load(Relaxed);
            self.batches.returned_total.store(returned + 1, Relaxed);
            // Relaxed: a hint (see `hold_batches`).
            if batch.len() > 0 && self.batches.fork_waiting.load(Relaxed) != 0 {
                self.requeue_for_a_fork(batch);
                break;
            }
        }
        IN_CALLBACK.with(|c| c.set(std::ptr::null()));
        ran
    }

    /// A fork waits for the batch lock: the rest of the batch is carried
    /// over, ahead of everything queued since, and the batch ends, so that
    /// the fork waits for one callback rather than a whole backlog. Those
    /// callbacks' grace period has ended: they are the next batch, run
    /// without waiting for another, in the parent and in the child alike
    /// (each has a copy of the queue). Kept as they are, the iterator moved
    /// whole: until 2026-12-07 they were spliced into the front of the
    /// queue, a copy of the whole backlog under the queue lock at each fork
    /// (a fork's hooks took 2.7 ms behind a backlog of 10^6 callbacks, 155
    /// ms behind 10^7), and waited for one more grace period.
    #[cold]
    fn requeue_for_a_fork(&self, rest: std::vec::IntoIter<Callback>) {
        let mut pending = crate::sync::lock(&self.pending);
        // The batch that ends here took `carried` or found it empty, and
        // the batch lock kept any other batch out since.
        debug_assert!(pending.carried.is_none(), "a carried batch left behind");
        pending.carried = Some(rest);
    }

    /// Callbacks queued and not yet started: a snapshot, exact when nothing
    /// is being queued or run. Once `rcu_barrier()` returns it counts only
    /// callbacks queued after the barrier's own.
    pub(crate) fn pending(&self) -> usize {
        // Relaxed: no ordering is promised. The started total never exceeds
        // the queued total, but two Relaxed loads may see them at different
        // moments, hence the saturating subtraction.
        let started = self.batches.started_total.load(Relaxed);
        let pending = self.queued_total.load(Relaxed).saturating_sub(started);
        // At most the callbacks in memory at once, which a usize counts.
        usize::try_from(pending).unwrap_or(usize::MAX)
    }

    /// `rcu_barrier()`: returns once every callback queued before the call has
    /// run. `name` is the function the caller called (`rcu_barrier`,
    /// `QsbrThread::rcu_barrier`), for the misuse panics.
    pub(crate) fn barrier(&'static self, synchronize: fn(), flavor: &str, name: &str) {
        let running = IN_CALLBACK.with(Cell::get);
        if std::ptr::eq(running, self) {
            panic!(
                "{path} called from inside an RCU callback of the same \
                 flavor: the callback worker would wait for its own batch forever (deadlock)",
                path = crate::api_path(flavor, name)
            );
        }
        #[cfg(not(loom))]
        crate::fork::refuse_between_hooks(flavor, crate::fork::Refused::Queuing);
        crate::cell::refuse_to_wait_in_an_update(flavor, name);
        if self.settled() {
            return;
        }
        // SAFETY: `IN_CALLBACK` holds null or a queue whose `run_batch` is
        // running on this thread; every queue is a `'static` engine field.
        let cross = unsafe { running.as_ref() }
            .map(|running| enter_cross_barrier(running, self, flavor, name));
        let done = Arc::new(AtomicU32::new(0));
        let signal = Arc::clone(&done);
        self.enqueue(
            Box::new(move || {
                // Before the signal: from here on the waiting worker is free
                // again. (Dropped unrun, the closure takes it back too.)
                drop(cross);
                // Release pairs with the Acquire load in the wait below: the
                // callbacks of earlier batches ran before this store.
                signal.store(1, Release);
                futex::wake_one(&signal);
            }),
            synchronize,
            flavor,
        );
        let mut spins = 0;
        let mut watch = futex_word::stall::Watch::new();
        // Callbacks returned when the stall watch last looked (Relaxed: a
        // count for the warning's wording).
        let mut returned_seen = self.batches.returned_total.load(Relaxed);
        // Acquire pairs with the callback's Release store above.
        while done.load(Acquire) == 0 {
            if cfg!(loom) {
                // No worker under loom: do its work here.
                self.run_batch(synchronize);
                crate::sync::yield_now();
            } else if spins < BARRIER_SPINS {
                spins += 1;
                spin_loop();
            } else if !self.worker_runs() {
                // Our enqueue returned without a worker: its start failed
                // while this thread unwinds (`start_worker_with` reports
                // that instead of panicking). Another caller's start may be
                // under way: wait for it, or try again. If there is still no
                // worker, nobody may ever take our callback: a panic here
                // aborts the process, with this message, rather than
                // hanging it.
                #[cfg(not(loom))]
                self.start_worker(synchronize, flavor);
                if !self.worker_runs() {
                    barrier_without_a_worker(flavor, name);
                }
            } else {
                // Our enqueue returned with a worker running
                // (`start_worker_with`), which takes our callback and never
                // exits: no limit but the stall warning's.
                futex::wait(&done, 0, watch.sleep_limit());
                if done.load(Acquire) == 0 {
                    self.warn_if_stalled(&mut watch, &mut returned_seen, flavor, name);
                }
            }
        }
    }

    /// A barrier that has waited the stall timeout (`futex_word::stall`) for
    /// the callbacks queued before it says so on stderr, as a grace period
    /// does: a callback that never returns (one that blocks on a lock the
    /// caller holds, or on a task of a runtime the caller is blocking) is
    /// otherwise a silent hang, since its grace period has ended. Written,
    /// not `eprintln!`ed, as the grace periods' warnings are (`engine/stall.rs`).
    /// Callbacks that returned since the barrier began or the last warning
    /// (`returned_seen`) mean a long backlog, still being worked through.
    /// None, with one started and not returned, a callback that does not
    /// return; with none running, a grace period held up. (Counting starts
    /// instead told a lone callback that started after the barrier's first
    /// look, and then blocked, from a backlog only at the third warning.)
    #[cold]
    fn warn_if_stalled(
        &self,
        watch: &mut futex_word::stall::Watch,
        returned_seen: &mut u64,
        flavor: &str,
        name: &str,
    ) {
        let Some(waited) = watch.due() else {
            return;
        };
        let why = self.stall_reason(returned_seen, flavor);
        futex_word::stall::write_line(format_args!(
            "rcu-lite: stall: {path} has waited {:.1} s for the callbacks queued before it ({} \
             callbacks of the flavor not started yet; {why}); it goes on waiting",
            waited.as_secs_f64(),
            self.pending(),
            path = crate::api_path(flavor, name)
        ));
    }

    /// What a barrier's stall warning says of the worker (see
    /// `warn_if_stalled`), and `returned_seen` brought up to date.
    #[cold]
    fn stall_reason(&self, returned_seen: &mut u64, flavor: &str) -> String {
        // Relaxed: as `pending`. Two loads of two counters, each perhaps a
        // little stale: the wording is a best guess at a state that has
        // lasted the whole stall timeout, and `saturating_sub` keeps a
        // stale pair from wrapping.
        let returned = self.batches.returned_total.load(Relaxed);
        let started = self.batches.started_total.load(Relaxed);
        let running = started.saturating_sub(returned);
        let since = returned.wrapping_sub(std::mem::replace(returned_seen, returned));
        // Relaxed: as above.
        #[cfg(not(loom))]
        let tid = self.worker_tid.load(Relaxed);
        #[cfg(not(loom))]
        if self.worker_runs() && futex_word::stall::thread_exited(tid) {
            return format!(
                "the thread rcu-lite-{flavor}-callbacks (tid {tid}) has exited: something outside \
                 rcu-lite ended it (a seccomp filter that kills the thread, inherited from the \
                 thread that started it, say), and no callback of the flavor runs again in this \
                 process"
            );
        }
        if since > 0 {
            format!(
                "{since} callbacks returned since the last look, so the thread \
                 rcu-lite-{flavor}-callbacks is still working through a backlog"
            )
        } else if running > 0 {
            format!(
                "no callback returned since the last look: the thread \
                 rcu-lite-{flavor}-callbacks is running one that does not return (it blocks on a \
                 lock this caller holds, or on work of a runtime this caller is blocking)"
            )
        } else {
            format!(
                "no callback is running: the thread rcu-lite-{flavor}-callbacks waits for a \
                 grace period that is held up (see any other stall line)"
            )
        }
    }

    /// Whether the worker thread was spawned (Acquire: pairs with the
    /// Release store of `WORKER_RUNNING` in `start_worker_with`). Under loom
    /// no worker thread runs: the barrier does its work.
    fn worker_runs(&self) -> bool {
        #[cfg(not(loom))]
        return self.worker_state.load(Acquire) == WORKER_RUNNING;
        #[cfg(loom)]
        true
    }

    /// Whether every callback queued so far has run: none is queued and no
    /// batch is being taken, waited for or run (the kernel's `rcu_barrier()`
    /// likewise returns at once when no CPU has callbacks). Batches are taken
    /// from the queue only under `batch_lock`, so with the lock free and the
    /// queue empty every earlier callback belongs to a batch that has
    /// finished; acquiring the lock orders its callbacks' effects before our
    /// return. Never blocks: with a batch in flight the barrier queues its
    /// own callback as usual.
    #[inline]
    fn settled(&self) -> bool {
        let Some(_no_batch) = crate::sync::try_lock(&self.batches.batch_lock) else {
            return false;
        };
        crate::sync::lock(&self.pending).is_empty()
    }

    /// Starts the worker thread once (see [`Self::start_worker_with`]).
    #[cfg(not(loom))]
    #[inline]
    fn start_worker(&'static self, synchronize: fn(), flavor: &str) {
        // Acquire: pairs with the Release store of `WORKER_RUNNING` in
        // `start_worker_with`, so that a caller that returns finds the spawn
        // done. (The worker needs nothing from the caller but the queue,
        // whose mutex orders the callbacks.)
        if self.worker_state.load(Acquire) != WORKER_RUNNING {
            self.start_worker_with(|| {
                // Relaxed: a test's switch, set before its calls.
                #[cfg(test)]
                if self.fail_spawn.load(Relaxed) {
                    return Err(std::io::Error::other("refused for the test"));
                }
                let builder = std::thread::Builder::new()
                    .name(format!("rcu-lite-{flavor}-callbacks"))
                    .stack_size(worker_stack_size());
                // With the process's signals blocked (see `futex_word::thread_start`):
                // callbacks run with them blocked, as liburcu's do.
                futex_word::thread_start::with_signals_blocked(|| {
                    builder.spawn(move || {
                        futex_word::thread_start::default_timer_slack();
                        // Relaxed: read only by stall warnings, a best
                        // guess (see `stall_reason`).
                        self.worker_tid.store(crate::record::os_tid(), Relaxed);
                        self.worker_loop(synchronize);
                    })
                })
                .map(drop)
            });
        }
    }

    /// Spawns the worker with `spawn` unless it runs. A caller that finds
    /// another one spawning it waits for the outcome, and tries itself if
    /// that failed: a caller returns only once a worker runs, to take the
    /// callback it queued, or panics. (Returning at once, it could
    /// leave its callback queued with no worker and no caller to try again,
    /// the spawning caller having panicked.) The one exception: a caller
    /// that is already unwinding, whose failed spawn is reported on stderr
    /// (a second panic would abort the process); it returns with no worker
    /// running, and `barrier` checks for that.
    ///
    /// # Panics
    ///
    /// If `spawn` fails or panics, unless the thread already unwinds (see
    /// above); the callbacks stay queued, and the next `call_rcu()` or
    /// `rcu_barrier()` tries again.
    #[cfg(not(loom))]
    #[cold]
    fn start_worker_with(&self, spawn: impl FnOnce() -> std::io::Result<()>) {
        /// Puts the state back to `WORKER_NOT_STARTED` unless defused: a
        /// `spawn` that panics must not leave the others waiting for ever.
        struct NotStartedUnlessDefused<'a>(&'a std::sync::atomic::AtomicU8);
        impl Drop for NotStartedUnlessDefused<'_> {
            fn drop(&mut self) {
                // Relaxed: publishes nothing; the next caller's CAS only
                // needs the value.
                self.0.store(WORKER_NOT_STARTED, Relaxed);
            }
        }
        let mut rounds = 0;
        loop {
            // The CAS decides who spawns (Relaxed: it publishes nothing);
            // Acquire on failure, as in `start_worker`, for a caller that
            // returns on `WORKER_RUNNING`.
            match self.worker_state.compare_exchange(
                WORKER_NOT_STARTED,
                WORKER_STARTING,
                Relaxed,
                Acquire,
            ) {
                Ok(_) => break,
                Err(WORKER_RUNNING) => return,
                Err(_starting) => crate::sync::wait_for_a_start(&mut rounds),
            }
        }
        let not_started = NotStartedUnlessDefused(&self.worker_state);
        if let Err(err) = spawn() {
            // The callbacks stay queued; the next call_rcu() or
            // rcu_barrier() tries again (and panics again if it fails), as
            // does a caller waiting in the loop above: `not_started` puts
            // the state back.
            if std::thread::panicking() {
                // A drop run by an unwind queued the callback (a `Retired`
                // dropped unclaimed, a value's `Drop` that calls `replace`):
                // a second panic would abort the process. Reported instead;
                // the callback waits for the next start like the others.
                futex_word::stall::write_line(format_args!(
                    "rcu-lite: cannot start the call_rcu() worker thread: {err}; not raised, \
                     since this thread is already unwinding: the callback stays queued for \
                     the next call_rcu() or rcu_barrier() that starts the worker"
                ));
                return;
            }
            panic!("rcu-lite: cannot start the call_rcu() worker thread: {err}");
        }
        std::mem::forget(not_started);
        // Release: pairs with the Acquire loads in `start_worker` and above.
        self.worker_state.store(WORKER_RUNNING, Release);
    }

    /// For `fork()`: waits until no batch is being taken, waited for or run,
    /// and keeps it so. While this waits (`fork_waiting`), the worker ends
    /// the batch it runs after the current callback (or its grace period)
    /// and starts no other. Take every flavor's batch lock before any queue
    /// lock: a callback may queue callbacks of another flavor. Gives up,
    /// returning `None`, once `give_up` says so (a time bound: see
    /// `fork::hold_both_batches`). Past the stall timeout, says on stderr
    /// what it waits for (`watch`).
    #[cfg(not(loom))]
    pub(crate) fn hold_batches(
        &'static self,
        flavor: &str,
        watch: &mut futex_word::stall::Watch,
        give_up: impl Fn() -> bool,
    ) -> Option<BatchHeld> {
        if let Some(held) = crate::sync::try_lock(&self.batches.batch_lock) {
            return Some(held);
        }
        let _waiting = ForkWaiting::count(&self.batches.fork_waiting);
        wait_for_lock(&self.batches.batch_lock, watch, give_up, |waited| {
            self.warn_fork_stalled(waited, flavor);
        })
    }

    /// [`Self::hold_batches`]' stall warning: a fork that waits past the
    /// stall timeout for a running batch says which, and why it may not end.
    #[cold]
    #[cfg(not(loom))]
    fn warn_fork_stalled(&self, waited: std::time::Duration, flavor: &str) {
        // Relaxed: counts for the wording, as in `warn_if_stalled`.
        let returned = self.batches.returned_total.load(Relaxed);
        let running = self
            .batches
            .started_total
            .load(Relaxed)
            .saturating_sub(returned);
        let why = if running > 0 {
            "a callback that does not return: it blocks on something this thread holds (a lock \
             a pthread_atfork() prepare handler took before rcu-lite's ran), or that waits for it"
        } else {
            "the batch waits for a grace period that is held up (see any other stall line)"
        };
        futex_word::stall::write_line(format_args!(
            "rcu-lite: stall: rcu_lite::fork::before_fork() has waited {:.1} s for the {flavor} \
             call_rcu() batch that the thread rcu-lite-{flavor}-callbacks runs: {why}; it goes on \
             waiting",
            waited.as_secs_f64()
        ));
    }

    /// Under loom: what a fork's `before_fork` does to this queue, with a
    /// plain wait for the batch lock (the polling of `wait_for_lock` aside):
    /// counts itself in `fork_waiting`, takes the batch lock and then the
    /// queue lock, and calls `inspect` with the callbacks ever queued and
    /// those in the queue now, before letting go of both (`after_fork_parent`).
    #[cfg(loom)]
    pub(crate) fn loom_fork_window(&self, inspect: impl FnOnce(u64, usize)) {
        let batches = {
            let _waiting = ForkWaiting::count(&self.batches.fork_waiting);
            crate::sync::lock(&self.batches.batch_lock)
        };
        let queue = crate::sync::lock(&self.pending);
        // Relaxed: written under the queue lock, which this thread holds.
        inspect(self.queued_total.load(Relaxed), queue.len());
        drop(queue);
        drop(batches);
    }

    /// The worker, before each batch: waits while a fork waits for the
    /// batch lock ([`Self::hold_batches`]), which would otherwise find it
    /// taken again at once.
    fn let_a_fork_in(&self) {
        loop {
            // Relaxed: a hint (see `hold_batches`).
            let waiting = self.batches.fork_waiting.load(Relaxed);
            if waiting == 0 {
                return;
            }
            // Bounded: a wake-up lost to a racing count is made up.
            futex::wait(
                &self.batches.fork_waiting,
                waiting,
                Some(std::time::Duration::from_millis(1)),
            );
        }
    }

    /// For `fork()`, after [`Self::hold_batches`]: locks the queue, so that
    /// the child copies it whole.
    #[cfg(not(loom))]
    pub(crate) fn hold_queue(&'static self) -> QueueHeld {
        crate::sync::lock(&self.pending)
    }

    /// In a child of `fork()`, with the queue held: the worker thread did not
    /// come along, so the next `call_rcu()` or `rcu_barrier()` starts one.
    /// Callbacks still queued stay queued until then, and run after a grace
    /// period (the parent runs its copies too).
    #[cfg(not(loom))]
    pub(crate) fn forget_worker_after_fork(&self, queue: &mut QueueHeld) {
        queue.worker_asleep = false;
        // Relaxed: the child's only thread is the caller. A thread that
        // was starting the worker did not come along either.
        self.worker_state.store(WORKER_NOT_STARTED, Relaxed);
        self.worker_tid.store(0, Relaxed);
        // `fork_waiting` is 0 at every fork: forks wait for one another
        // before they count (`fork::FORKERS`), and the forking thread's
        // own count ended when it took the lock.
    }

    /// The worker: run batches; sleep while the queue is empty.
    #[cfg(not(loom))]
    fn worker_loop(&'static self, synchronize: fn()) {
        self.worker_rounds(synchronize, || true);
    }

    /// The worker's loop, for as long as `keep_going` says (always, for the
    /// worker thread; until a model's callback has run, under loom): run
    /// batches; when one finds the queue empty, sleep until a `call_rcu()`
    /// wakes it.
    pub(crate) fn worker_rounds(&self, synchronize: fn(), keep_going: impl Fn() -> bool) {
        while keep_going() {
            self.let_a_fork_in();
            if self.run_batch(synchronize) > 0 {
                continue;
            }
            if let Some(seq) = self.prepare_to_sleep() {
                futex::wait(&self.wake_seq, seq, None);
            }
        }
    }

    /// Marks the worker asleep and returns the `wake_seq` value to sleep on,
    /// or `None` if a callback was queued since the last batch was taken
    /// (the worker then runs another batch instead of sleeping: the
    /// `call_rcu()` that queued it found the worker awake and woke nobody).
    fn prepare_to_sleep(&self) -> Option<u32> {
        let mut pending = crate::sync::lock(&self.pending);
        if !pending.is_empty() {
            return None;
        }
        pending.worker_asleep = true;
        // Read under the lock: an enqueue that finds `worker_asleep` bumps
        // the word after we release the lock, so the wait on it either sees
        // the bump or is woken by it.
        Some(self.wake_seq.load(Relaxed))
    }
}

/// The callback worker's stack, at least: what a main thread usually has
/// (`ulimit -s`, 8 MiB), and what liburcu's call_rcu threads get (glibc's
/// default thread stack is that limit), not std's 2 MiB for spawned
/// threads. Callbacks run the drops of what readers no longer see, and a
/// drop recurses through a linked structure one frame per link: until
/// 2026-12-07 an `Rcu::replace` of a 100,000-node `Box` list overflowed the
/// worker's stack and aborted the process, where dropping it on the main
/// thread did not (from a review of data at scale). Address space, not
/// memory: the kernel commits the pages a thread touches.
#[cfg(not(loom))]
const WORKER_STACK: usize = 8 << 20;

/// [`WORKER_STACK`], or `RUST_MIN_STACK` (which std's spawns follow, and an
/// explicit stack size overrides) where it asks for more. Read once per
/// process, as std reads it, and settled by `fork::before_fork`: a worker
/// restarted in a fork child must not read the environment, whose lock a
/// thread of the parent may have held at the fork.
#[cfg(not(loom))]
pub(crate) fn worker_stack_size() -> usize {
    static SIZE: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *SIZE.get_or_init(|| {
        std::env::var("RUST_MIN_STACK")
            .ok()
            .and_then(|bytes| bytes.trim().parse::<usize>().ok())
            .map_or(WORKER_STACK, |bytes| bytes.max(WORKER_STACK))
    })
}

/// One forking thread's count of [`Batches::fork_waiting`], taken
/// back on drop (a panic included: a count left behind would stop the
/// worker for good), which wakes a worker waiting in `let_a_fork_in`.
struct ForkWaiting<'a>(&'a AtomicU32);

impl<'a> ForkWaiting<'a> {
    fn count(fork_waiting: &'a AtomicU32) -> ForkWaiting<'a> {
        // Relaxed: a hint for the worker's liveness, ordering nothing (the
        // batch lock orders what the batches touch). A worker whose look
        // misses it took the lock already, and lets go at the batch's end.
        fork_waiting.fetch_add(1, Relaxed);
        ForkWaiting(fork_waiting)
    }
}

impl Drop for ForkWaiting<'_> {
    fn drop(&mut self) {
        // Relaxed: as the increment.
        self.0.fetch_sub(1, Relaxed);
        futex::wake_all(self.0);
    }
}

/// Polls `mutex` until it is free (64 yields, then naps growing to 1 ms),
/// or until `give_up` says so (`None`); past each stall timeout of `watch`,
/// calls `warn` with the time waited. The fork hooks' waits: a blocking
/// lock could neither give up nor warn.
#[cfg(not(loom))]
pub(crate) fn wait_for_lock<'a, T>(
    mutex: &'a Mutex<T>,
    watch: &mut futex_word::stall::Watch,
    give_up: impl Fn() -> bool,
    warn: impl Fn(std::time::Duration),
) -> Option<std::sync::MutexGuard<'a, T>> {
    /// Looks that yield before the first nap: a batch's end is often a few
    /// microseconds off, and the shortest nap takes tens.
    const YIELDS: u32 = 64;
    /// The longest sleep between two looks at the lock.
    const MAX_NAP: std::time::Duration = std::time::Duration::from_millis(1);
    let (mut yields, mut nap) = (0, std::time::Duration::from_micros(10));
    loop {
        if let Some(held) = crate::sync::try_lock(mutex) {
            return Some(held);
        }
        if give_up() {
            return None;
        }
        if yields < YIELDS {
            yields += 1;
            std::thread::yield_now();
            continue;
        }
        std::thread::sleep(watch.sleep_limit().map_or(nap, |limit| nap.min(limit)));
        nap = (nap * 2).min(MAX_NAP);
        if let Some(waited) = watch.due() {
            warn(waited);
        }
    }
}

/// A callback of one flavor (`running`) is about to wait in the other
/// flavor's `rcu_barrier()` (`target`), holding up its own worker until
/// `target`'s worker runs the barrier's callback, which drops the returned
/// count. A callback of the other flavor may do the same, and if both wait at
/// once each worker waits for the other forever: this panics instead.
///
/// `target.cross_barriers > 0` means that a callback on `target`'s worker
/// waits in a barrier whose callback is (or is about to be) queued on
/// `running`'s queue, which only this thread's worker runs, and has not run:
/// each worker would wait for the other. (A count whose barrier panicked
/// because `target`'s worker could not start stays until a later start runs
/// the queued barrier callback, and can meanwhile refuse a barrier that would
/// have returned.) The load cannot see a count this
/// worker already dropped: it dropped it on this thread, earlier.
fn enter_cross_barrier(
    running: &'static CallbackQueue,
    target: &CallbackQueue,
    flavor: &str,
    name: &str,
) -> CrossBarrier {
    // SeqCst RMW, then SeqCst load of the other queue's count: two callbacks
    // entering at once are a store-buffering pair, and SeqCst makes at least
    // one of them see the other's count (both may, and then both refuse).
    running.cross_barriers.fetch_add(1, SeqCst);
    let counted = CrossBarrier { running };
    if target.cross_barriers.load(SeqCst) > 0 {
        // Unwinding drops `counted`: no barrier callback was queued.
        cross_barriers_both_ways(flavor, name);
    }
    counted
}

/// One count of [`CallbackQueue::cross_barriers`], taken back on drop.
struct CrossBarrier {
    running: &'static CallbackQueue,
}

impl Drop for CrossBarrier {
    fn drop(&mut self) {
        // SeqCst: see `enter_cross_barrier`.
        self.running.cross_barriers.fetch_sub(1, SeqCst);
    }
}

#[cold]
#[inline(never)]
fn cross_barriers_both_ways(flavor: &str, name: &str) -> ! {
    panic!(
        "{path} called from inside an RCU callback of the other \
         flavor while a {flavor} callback waits in that flavor's rcu_barrier(): each callback \
         worker would wait for the other forever (deadlock)",
        path = crate::api_path(flavor, name)
    )
}

/// After a callback: aborts the process, with a message, if the callback
/// left the worker thread inside a memb read-side section or with a qsbr
/// registration online (a guard or registration forgotten, or kept in a
/// thread-local). See the module docs for why nothing less will do.
#[cfg(not(loom))]
fn check_left_clean() {
    let left = if crate::memb::read_ongoing() {
        "inside a memb read-side section"
    } else if crate::qsbr::online_count() != 0 {
        "with a qsbr registration online"
    } else {
        return;
    };
    callback_left_the_worker(left);
}

#[cold]
#[inline(never)]
#[cfg(not(loom))]
fn callback_left_the_worker(left: &str) -> ! {
    futex_word::stall::write_line(format_args!(
        "rcu-lite: an RCU callback returned leaving the callback worker thread {left}: every \
         later grace period would wait for that thread forever (deadlock); aborting"
    ));
    std::process::abort()
}

/// The panic of a barrier left without a worker (see `barrier`).
#[cold]
#[inline(never)]
fn barrier_without_a_worker(flavor: &str, name: &str) -> ! {
    panic!(
        "{path} called while this thread unwinds, and the call_rcu() \
         worker thread cannot be started: no thread would run the callbacks it waits for",
        path = crate::api_path(flavor, name)
    )
}

/// Reports a callback's panic on standard error. Nothing here may unwind into
/// the batch: `eprintln!` panics when standard error is gone (a closed pipe),
/// and a panic payload's own `Drop` may panic; either would end the worker
/// with its batch half run, and no worker would start again. Written without
/// std's stderr lock (`write_line`): the batch lock is held, and a thread
/// holding `std::io::stderr().lock()` may be waiting in `rcu_barrier` for
/// this batch.
#[cold]
fn report_panicked_callback(payload: Box<dyn std::any::Any + Send>) {
    report_panic(
        "rcu-lite: an RCU callback panicked; the callback worker goes on",
        payload,
    );
}

/// Writes `message` on standard error, with the panic's own message where
/// it is a string, and drops `payload`, unwinding from neither (see
/// `report_panicked_callback`; a dropped `Retired` uses it too, so that a
/// value's panicking drop is reported there as on the worker). The panic
/// hook's own report goes where that thread's output goes, which in a test
/// run is the capture of whichever test started the worker (libtest passes
/// its capture on to the threads a test spawns): this line names the panic
/// for the test whose callback it was (it did not until 2026-12-07).
#[cold]
pub(crate) fn report_panic(message: &str, payload: Box<dyn std::any::Any + Send>) {
    let text = payload
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str));
    match text {
        Some(text) => futex_word::stall::write_line(format_args!("{message}: {text:?}")),
        None => futex_word::stall::write_line(format_args!("{message}")),
    }
    if let Err(inner) = catch_unwind(AssertUnwindSafe(move || drop(payload))) {
        // Its payload's drop panicked in turn: leak this one.
        mem::forget(inner);
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::time::Duration;

    /// A barrier's stall warning says so when the worker thread is gone
    /// (killed by an inherited seccomp filter, say): until 2026-12-07 it
    /// said the worker waited for a held-up grace period, and pointed at
    /// stall lines that never came. A live worker is not called gone.
    #[test]
    #[cfg_attr(miri, ignore = "reads /proc, which miri does not offer")]
    fn a_stall_reason_names_a_worker_that_has_exited() {
        let queue = CallbackQueue::new();
        queue.worker_state.store(WORKER_RUNNING, Relaxed);
        let gone = std::thread::spawn(crate::record::os_tid).join().unwrap();
        queue.worker_tid.store(gone, Relaxed);
        let mut seen = 0;
        let why = queue.stall_reason(&mut seen, "memb");
        assert!(
            why.starts_with(&format!(
                "the thread rcu-lite-memb-callbacks (tid {gone}) has exited"
            )),
            "{why}"
        );
        queue.worker_tid.store(crate::record::os_tid(), Relaxed);
        let why = queue.stall_reason(&mut seen, "memb");
        assert!(why.starts_with("no callback is running"), "{why}");
    }

    /// A caller that finds the worker being started waits for the outcome,
    /// and spawns it itself when that start fails. With a plain started flag
    /// it returned at once, and its callback stayed queued with no worker
    /// and nobody to try again once the starting caller panicked. A caller
    /// that finds the worker running spawns nothing.
    #[test]
    fn a_caller_that_meets_a_failing_start_spawns_the_worker_itself() {
        let queue = CallbackQueue::new();
        let (spawning_tx, spawning) = std::sync::mpsc::channel();
        std::thread::scope(|s| {
            let failing = s.spawn(|| {
                catch_unwind(AssertUnwindSafe(|| {
                    queue.start_worker_with(|| {
                        spawning_tx.send(()).expect("the test waits");
                        // Long enough for the other caller to find the
                        // worker starting.
                        std::thread::sleep(Duration::from_millis(100));
                        Err(std::io::Error::other("refused for the test"))
                    });
                }))
            });
            spawning.recv().expect("the first caller spawns");
            let spawned = Cell::new(false);
            queue.start_worker_with(|| {
                spawned.set(true);
                Ok(())
            });
            assert!(
                spawned.get(),
                "the second caller returned while the first one's start failed"
            );
            let failed = failing
                .join()
                .expect("caught")
                .expect_err("its spawn failed");
            let message = failed
                .downcast_ref::<String>()
                .expect("a formatted message");
            assert!(
                message.contains("cannot start the call_rcu() worker thread: refused for the test"),
                "{message}"
            );
        });
        assert_eq!(queue.worker_state.load(Relaxed), WORKER_RUNNING);
        queue.start_worker_with(|| panic!("a second worker spawned"));
    }

    /// A caller that finds the worker being started, by a start that then
    /// succeeds, spawns none itself, and returns only once that start is
    /// done.
    #[test]
    fn a_caller_that_meets_a_succeeding_start_waits_for_it_and_spawns_nothing() {
        let queue = CallbackQueue::new();
        let spawned = std::sync::atomic::AtomicBool::new(false);
        let (spawning_tx, spawning) = std::sync::mpsc::channel();
        std::thread::scope(|s| {
            s.spawn(|| {
                queue.start_worker_with(|| {
                    spawning_tx.send(()).expect("the test waits");
                    std::thread::sleep(Duration::from_millis(100));
                    // Relaxed: the Release store of `WORKER_RUNNING` after
                    // the spawn orders it before the other caller's return.
                    spawned.store(true, Relaxed);
                    Ok(())
                });
            });
            spawning.recv().expect("the first caller spawns");
            queue.start_worker_with(|| panic!("a second worker spawned"));
            assert!(
                spawned.load(Relaxed),
                "the second caller returned before the first one's start was done"
            );
        });
    }

    /// A caller that finds another thread's start under way waits for it
    /// asleep once the start takes long: a 200 ms spawn costs it a few
    /// milliseconds of CPU, where yielding back to back cost it most of the
    /// 200 ms (and at SCHED_FIFO, above the starter on its CPU, the start
    /// would never have finished).
    #[test]
    #[cfg_attr(miri, ignore = "reads a thread CPU clock, and sleeps 200 ms")]
    fn a_caller_waits_for_a_slow_start_asleep() {
        const SPAWN: Duration = Duration::from_millis(200);
        let queue = CallbackQueue::new();
        let (spawning_tx, spawning) = std::sync::mpsc::channel();
        std::thread::scope(|s| {
            s.spawn(|| {
                queue.start_worker_with(|| {
                    spawning_tx.send(()).expect("the test waits");
                    std::thread::sleep(SPAWN);
                    Ok(())
                });
            });
            spawning.recv().expect("the first caller spawns");
            let (cpu, wall) = (test_support::thread_cpu_time(), std::time::Instant::now());
            queue.start_worker_with(|| panic!("a second worker spawned"));
            let (cpu, wall) = (test_support::thread_cpu_time() - cpu, wall.elapsed());
            assert!(
                cpu < SPAWN / 4,
                "waiting {wall:?} for another thread's start used {cpu:?} of CPU"
            );
        });
    }

    /// The state is back to no worker, and the next caller spawns one.
    fn assert_the_next_start_spawns(queue: &CallbackQueue) {
        assert_eq!(queue.worker_state.load(Relaxed), WORKER_NOT_STARTED);
        let spawned = Cell::new(false);
        queue.start_worker_with(|| {
            spawned.set(true);
            Ok(())
        });
        assert!(spawned.get());
    }

    /// A start that fails while the caller is already unwinding (a drop run
    /// by a panic queued a callback) reports the failure instead of a second
    /// panic, which would abort the process; the next caller starts it.
    #[test]
    fn a_start_that_fails_during_an_unwind_is_reported_not_raised() {
        let queue = CallbackQueue::new();
        /// Starts the worker, with a spawn that fails, when dropped.
        struct StartWhenDropped<'a>(&'a CallbackQueue);
        impl Drop for StartWhenDropped<'_> {
            fn drop(&mut self) {
                self.0
                    .start_worker_with(|| Err(std::io::Error::other("refused for the test")));
            }
        }
        let unwound = catch_unwind(AssertUnwindSafe(|| {
            let _start = StartWhenDropped(&queue);
            panic!("the first panic");
        }));
        let payload = unwound.expect_err("the first panic reaches catch_unwind");
        assert_eq!(payload.downcast_ref::<&str>(), Some(&"the first panic"));
        assert_the_next_start_spawns(&queue);
    }

    /// A barrier made while its thread unwinds, whose worker cannot start,
    /// would wait for ever for callbacks nobody runs: it panics, which there
    /// aborts the process, with a message that says why.
    #[test]
    #[cfg_attr(miri, ignore = "starts a child process, which miri cannot")]
    fn a_barrier_while_unwinding_with_no_worker_aborts_with_a_message() {
        const CHILD: &str = "RCU_LITE_BARRIER_WITHOUT_A_WORKER_CHILD";
        if std::env::var_os(CHILD).is_some() {
            let queue: &'static CallbackQueue = Box::leak(Box::new(CallbackQueue::new()));
            queue.fail_spawn.store(true, Relaxed);
            // Queued, and its start refused with a panic.
            let refused = catch_unwind(AssertUnwindSafe(|| {
                queue.enqueue(Box::new(|| {}), || {}, "memb");
            }));
            assert!(refused.is_err());
            /// Waits for the queue's callbacks when dropped.
            struct BarrierWhenDropped(&'static CallbackQueue);
            impl Drop for BarrierWhenDropped {
                fn drop(&mut self) {
                    self.0.barrier(|| {}, "memb", "rcu_barrier");
                }
            }
            let _ = catch_unwind(AssertUnwindSafe(|| {
                let _barrier = BarrierWhenDropped(queue);
                panic!("the first panic");
            }));
            return;
        }
        let stderr = test_support::stderr_of_an_aborted_child_process(
            "callbacks::tests::a_barrier_while_unwinding_with_no_worker_aborts_with_a_message",
            CHILD,
            "a barrier without a worker",
        );
        assert!(
            stderr.contains("rcu_lite::memb::rcu_barrier() called while this thread unwinds"),
            "{stderr}"
        );
    }

    /// A `spawn` that panics puts the state back, so that the next caller
    /// tries again instead of waiting for ever.
    #[test]
    fn a_spawn_that_panics_leaves_the_worker_to_be_started_again() {
        let queue = CallbackQueue::new();
        let panicked = catch_unwind(AssertUnwindSafe(|| {
            queue.start_worker_with(|| panic!("a spawn that panics"));
        }));
        assert!(panicked.is_err());
        assert_the_next_start_spawns(&queue);
    }
}
