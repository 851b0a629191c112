//! The grace-period engine both flavors share.
//!
//! Kernel counterparts: `synchronize_rcu()` sharing grace periods through
//! `rcu_seq_snap()`, `rcu_gp_init()` (advance the sequence, full barrier), the
//! seed's patch (report the grace-period kthread's own quiescent state at the end
//! of `rcu_gp_init()`), and `rcu_gp_fqs_loop()` (force-quiescent-state scans that
//! credit idle CPUs, repeated until every CPU has reported).
//!
//! # Callers share grace periods
//!
//! `gp_state` holds the number of grace periods started (above bit 2), a
//! `DRIVER` bit (some caller is driving) and a `NEED_GP` bit (a caller wants a
//! grace period that has not started yet). A caller announces itself with one
//! AcqRel `fetch_or(NEED_GP | DRIVER)`: its target is "started + 1" as that RMW
//! saw it, the first grace period to start after its call. Every grace period
//! starts with a CAS on the same word that clears `NEED_GP`; since RMWs on one
//! word are totally ordered, a caller's RMW either precedes the start (and the
//! start's Acquire makes the caller's earlier updates visible to the driver,
//! which publishes them to readers with the Release store of `gp_word`) or
//! follows it (and the caller saw the new count, so it targets the next one).
//! All callers that arrive during grace period N wait for N + 1, which serves
//! them all.
//!
//! The caller whose RMW found `DRIVER` clear drives: it runs grace periods until
//! its own target has completed. If no grace period is needed then, it clears
//! `DRIVER`. If `NEED_GP` is set and callers crowd the engine (more than
//! `WORKER_CALLERS_PER_CPU` sleeping waiters per CPU; for memb on fewer than
//! 4 CPUs, where every waiter sleeps through a grace period's `membarrier()`,
//! two sleeping waiters while readers hold grace periods up, else more than
//! one per CPU), it hands `DRIVER` to
//! the grace-period worker (`gp_worker.rs`), which drives grace periods back
//! to back for as long as callers keep asking, then clears `DRIVER` and parks.
//! Otherwise (fewer waiters, no worker thread could be started, or under loom
//! unless a model runs the worker's part inline) the driver clears `DRIVER`
//! and wakes one waiter of the next grace period, which takes the bit over. No caller
//! drives more than the grace period it needs plus the one in progress, so no
//! caller's latency is held hostage by a steady stream of others. A lone
//! caller never involves the worker. Waiters spin (`CallerSpin`: for up to
//! 20 us while the waiters fit the CPUs but the driver's, on 4 or more CPUs;
//! briefly otherwise; not at all in a crowd, where a grace period outlasts
//! any spin), then sleep on one of two `gp_done` eventcounts, chosen by the
//! parity of the grace period they wait for: a waiter's target is at most
//! two past the last completed grace period, so the completion of grace
//! period N wakes exactly the callers that waited for N and none of those
//! that need N + 1. A hand-off wakes one waiter of the next grace period, to
//! take `DRIVER` over.
//!
//! # One grace period
//!
//! 1. **init**: store `reader_word(gp)` into `gp_word` (Release), then the
//!    engine's half of the flavor's fence pair ([`ReaderFence`]):
//!    `fence::heavy()` for memb, whose readers issue `fence::light()`, and
//!    `fence::full()` for qsbr, whose readers issue `fence::full()` too. A
//!    reader that enters its outermost section (or announces a quiescent
//!    state, or comes online) later loads that word with Acquire and sees
//!    every update its callers published; a reader whose word store is not
//!    yet visible to the scan is ordered by this fence against its own, so
//!    its section's loads see those updates too.
//! 2. **quick QS** (the seed's patch, [`GpConfig::quick_qs`]): the driver
//!    credits its own record at once. It can do so because it is not in a
//!    read-side section (memb checks that before it may call; qsbr's
//!    `synchronize_rcu()` refuses an online caller).
//! 3. **FQS scan 1**: read every registered record's word and credit those
//!    outside a section or offline, or whose section began after init (the
//!    rule in `record.rs`). The driver's own record is never judged by its word:
//!    like the kernel's grace-period kthread, whose CPU is running the scan and
//!    so is never seen idle by it, the driver is credited only by the quick QS
//!    report, or once it has waited after a scan (its wait is a quiescent state:
//!    it holds no reference; the next check sees it, as the kernel's second FQS
//!    sees the kthread's CPU idle since the first).
//! 4. **holdouts** are rechecked until each has passed a quiescent state.
//!
//! # Waiting for holdouts
//!
//! [`Fqs::Adaptive`]: recheck while spinning, then sleep on the `driver_wait`
//! futex word: the driver stores `WAITS_FOR_HOLDOUTS`, issues its fence
//! (`fence::heavy()` or `fence::full()`, as at init), rechecks, and sleeps. A
//! reader that leaves its section (or reports a quiescent state, or goes
//! offline) stores its word, issues its own fence, and loads
//! `driver_wait`; the two fences form a store-buffering pair, so either the
//! driver's recheck sees the reader's word or the reader sees the driver waiting
//! and wakes it. The reader's check is one load of a read-mostly line and a
//! predictable branch.
//!
//! [`Fqs::FixedInterval`]: the kernel's pacing: a timed wait before scan 1 and
//! between scans. A wait ends early only when every holdout has passed a
//! quiescent state and the driver has already been credited (the kernel's
//! `rcu_gp_fqs_check_wake()`). On an idle system with quick QS off, scan 1 finds
//! only the driver holding out and scan 2 credits it: two interval waits. With
//! quick QS on, scan 1 finds nobody: one wait. That is the seed's result.
//!
//! An expedited caller ([`Engine::synchronize`] with `expedited`) records the
//! grace period it needs in `expedite` and wakes a driver sleeping in a fixed
//! interval wait; that grace period then runs adaptively with quick QS.

use crate::callbacks::CallbackQueue;
use crate::config::{Fqs, GpConfig};
use crate::futex;
#[cfg(not(loom))]
use crate::gp_worker::GpWorker;
use crate::record::{Record, Registry, SNAPSHOT_MASK, is_quiescent_for, reader_word, snapshot};
use crate::sync::{AtomicU32, AtomicU64, spin_loop};
use membarrier_sim::fence;
use std::ptr;
#[cfg(loom)]
use std::sync::atomic::AtomicBool as ConfigBool;
use std::sync::atomic::Ordering::{AcqRel, Acquire, Relaxed, Release, SeqCst};
use std::sync::atomic::{AtomicU32 as ConfigU32, AtomicU64 as ConfigU64};
use std::time::Duration;
#[cfg(not(loom))]
use std::time::Instant;

/// `gp_state`: a caller wants a grace period that has not started yet.
const NEED_GP: u64 = 1 << 0;
/// `gp_state`: a caller is driving grace periods.
const DRIVER: u64 = 1 << 1;
/// `gp_state`: the number of grace periods started sits above this shift.
const STARTED_SHIFT: u32 = 2;

/// `gp_done`: some waiter sleeps on the word (set by a waiter, cleared by the
/// completion that wakes them all).
const SLEEPERS: u32 = 1;
/// `gp_done`: one event (a completion or a hand-off).
const EVENT: u32 = 2;

/// `driver_wait`: the driver is not sleeping.
const DRIVER_RUNNING: u32 = 0;
/// `driver_wait`: the driver sleeps until a holdout passes a quiescent state.
const WAITS_FOR_HOLDOUTS: u32 = 1;
/// `driver_wait`: the driver sleeps until its FQS timer (or an expedited caller).
#[cfg_attr(loom, allow(dead_code))]
const WAITS_FOR_TIMER: u32 = 2;

/// Rechecks of the holdouts before the driver sleeps.
const HOLDOUT_SPINS: u32 = if cfg!(loom) { 1 } else { 200 };
/// Checks for completion before a waiting caller sleeps when the waiters do
/// not fit the CPUs (see `CallerSpin`).
const CALLER_SPINS: u32 = if cfg!(loom) { 1 } else { 50 };
/// How long a waiting caller checks for completion before it sleeps while
/// the waiters fit the CPUs (`CallerSpin`): about one grace period whose
/// `membarrier()` interrupts 15 busy CPUs (one every 10-12 us on a 16-CPU
/// Xeon guest with 16 callers).
#[cfg(not(loom))]
const SPIN_WAIT: Duration = Duration::from_micros(20);
/// Spins between two looks at the clock (and the waiter count) while a
/// caller spins for `SPIN_WAIT`.
#[cfg(not(loom))]
const SPINS_PER_CLOCK_READ: u32 = 16;
/// Checks for a caller needing a grace period before the worker parks.
const WORKER_SPINS: u32 = if cfg!(loom) { 1 } else { 200 };

/// How many grace periods an engine has started and completed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GpCounts {
    /// Grace periods whose init has begun (their sequence number published to
    /// readers).
    pub started: u64,
    /// Grace periods completed (`started` or `started - 1`).
    pub completed: u64,
    /// Fixed-interval FQS waits the drivers have made ([`Fqs::FixedInterval`]
    /// only): on an idle system, one per grace period with quick QS, two
    /// without.
    pub fqs_waits: u64,
    /// Grace periods the grace-period worker drove (the others were driven by
    /// a caller of `synchronize_rcu()`): the worker takes over while callers
    /// keep asking for grace periods.
    pub by_worker: u64,
    /// Thread records the registry holds, in use or free for the next thread
    /// to register: the most threads ever registered at once (plus records
    /// kept by forgotten guards), which every scan walks.
    pub records: usize,
}

/// What the read side touches: one read-mostly cache line.
#[repr(align(128))]
pub(crate) struct ReaderShared {
    /// `reader_word(newest grace period started)`: what a memb reader stores
    /// when it enters its outermost section and a qsbr thread when it reports a
    /// quiescent state or comes online. Written by the driver only.
    pub(crate) gp_word: AtomicU64,
    /// `DRIVER_RUNNING`, `WAITS_FOR_HOLDOUTS` or `WAITS_FOR_TIMER`: the futex
    /// word the driver sleeps on.
    pub(crate) driver_wait: AtomicU32,
}

/// What `synchronize` callers touch, away from the readers' line.
#[repr(align(128))]
struct CallerShared {
    /// Started count, `DRIVER`, `NEED_GP` (see the module docs).
    gp_state: AtomicU64,
    /// Grace periods completed. Written by the driver only.
    completed: AtomicU64,
    /// Eventcounts waiting callers sleep on, indexed by the parity of the grace
    /// period they wait for: `EVENT` per bump, plus `SLEEPERS`.
    gp_done: [AtomicU32; 2],
    /// The highest grace period an expedited caller needs.
    expedite: AtomicU64,
    /// Callers asleep waiting for a grace period someone else drives: how
    /// crowded `synchronize_rcu()` is, which decides whether the worker takes
    /// over. A heuristic, not a synchronization variable: a plain `std` atomic
    /// even under loom.
    sleeping: ConfigU32,
    /// Callers in `wait_or_take_over` (uncounted while the engine is
    /// crowded): whether they fit the CPUs, which decides how long they spin
    /// (`CallerSpin`). A heuristic, as `sleeping`. Not under loom, where
    /// nothing counts.
    #[cfg(not(loom))]
    waiting: ConfigU32,
    /// Grace periods since the last one whose first scan found a holdout,
    /// up to `HOLDOUT_MEMORY_GPS` (also its value before any such scan):
    /// whether readers held grace periods up of late, which decides memb's
    /// worker threshold on few CPUs (`worker_threshold_of`). Written by the
    /// `DRIVER` holder only, and only when it changes; a heuristic, as
    /// `sleeping`. Not under loom, where the models choose the worker.
    #[cfg(not(loom))]
    gps_since_holdout: ConfigU32,
}

/// Which fence a flavor's readers issue between storing their record word and
/// their next loads (of shared data, or of `driver_wait`), and so which one
/// the engine issues between its stores (`gp_word`, `driver_wait`) and its
/// loads of record words: the two halves of each store-buffering pair.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ReaderFence {
    /// memb: `fence::light()`, a compiler fence in membarrier mode, since a
    /// reader issues one at every outermost lock and unlock; the engine
    /// issues `fence::heavy()`.
    Light,
    /// qsbr: `fence::full()`. A reader issues one only when it announces a
    /// quiescent state that moved its word (at most once per grace period)
    /// or goes online or offline, as liburcu's qsbr issues `smp_mb()`
    /// there; the engine issues `fence::full()` too, and no grace period
    /// makes a system call that interrupts the CPUs running readers.
    Full,
}

impl ReaderFence {
    /// The readers' half of the pair.
    #[inline(always)]
    pub(crate) fn reader_side(self) {
        match self {
            ReaderFence::Light => fence::light(),
            ReaderFence::Full => fence::full(),
        }
    }

    /// The engine's half of the pair.
    #[inline]
    fn engine_side(self) {
        match self {
            ReaderFence::Light => fence::heavy(),
            ReaderFence::Full => fence::full(),
        }
    }

    /// Whether the engine's half is a `membarrier()`, which interrupts the
    /// CPUs running readers: memb in membarrier mode. Not qsbr, nor memb
    /// under the fallback fences, whose `heavy()` is `fence(SeqCst)`.
    #[cfg(not(loom))]
    fn engine_side_is_membarrier(self) -> bool {
        self == ReaderFence::Light && fence::mode() == fence::Mode::Membarrier
    }
}

/// One flavor's grace-period engine, its registry and its callback queue.
pub(crate) struct Engine {
    pub(crate) reader: ReaderShared,
    /// The fence pair this flavor's readers and this engine use.
    reader_fence: ReaderFence,
    callers: CallerShared,
    registry: Registry,
    /// The [`GpConfig`] in one word (`encode_config`), so that `configure`
    /// swaps the whole of it and returns exactly the settings it replaced. A
    /// setting, not a synchronization variable: a plain `std` atomic even
    /// under loom.
    config: ConfigU64,
    /// Fixed-interval FQS waits so far (statistics).
    fqs_waits: ConfigU64,
    /// Grace periods the worker drove (statistics).
    worker_gps: ConfigU64,
    /// The thread that takes `DRIVER` over from callers under contention.
    #[cfg(not(loom))]
    gp_worker: GpWorker,
    /// What the worker passes as its own record when it drives: registered
    /// nowhere, so no scan skips or waits for anything on its account.
    #[cfg(not(loom))]
    worker_record: Record,
    /// `call_rcu()` callbacks waiting for a grace period.
    pub(crate) callbacks: CallbackQueue,
    /// Under loom: see [`loom_worker_inline`]. In the engine, which each
    /// model execution builds anew, so that models running in parallel test
    /// threads do not see each other's setting.
    #[cfg(loom)]
    loom_worker_inline: ConfigBool,
}

impl Engine {
    crate::const_unless_loom! {
        /// An engine with no grace period started yet, whose readers fence
        /// with `reader_fence`.
        pub(crate) fn new(reader_fence: ReaderFence) -> Engine {
            Engine {
                reader: ReaderShared {
                    gp_word: AtomicU64::new(reader_word(0)),
                    driver_wait: AtomicU32::new(DRIVER_RUNNING),
                },
                reader_fence,
                callers: CallerShared {
                    gp_state: AtomicU64::new(0),
                    completed: AtomicU64::new(0),
                    gp_done: [AtomicU32::new(0), AtomicU32::new(0)],
                    expedite: AtomicU64::new(0),
                    sleeping: ConfigU32::new(0),
                    #[cfg(not(loom))]
                    waiting: ConfigU32::new(0),
                    #[cfg(not(loom))]
                    gps_since_holdout: ConfigU32::new(HOLDOUT_MEMORY_GPS),
                },
                registry: Registry::new(),
                config: ConfigU64::new(encode_config(GpConfig::DEFAULT)),
                fqs_waits: ConfigU64::new(0),
                worker_gps: ConfigU64::new(0),
                #[cfg(not(loom))]
                gp_worker: GpWorker::new(),
                #[cfg(not(loom))]
                worker_record: Record::placeholder(),
                callbacks: CallbackQueue::new(),
                #[cfg(loom)]
                loom_worker_inline: ConfigBool::new(false),
            }
        }
    }

    /// The registry of this engine's records.
    pub(crate) fn registry(&self) -> &Registry {
        &self.registry
    }

    /// The settings the next grace period will use.
    pub(crate) fn config(&self) -> GpConfig {
        decode_config(self.config.load(Relaxed))
    }

    /// Replaces the settings, returning the previous ones. Grace periods that
    /// already began keep theirs.
    pub(crate) fn configure(&self, config: GpConfig) -> GpConfig {
        if config.fqs == Fqs::FixedInterval(Duration::ZERO) {
            zero_fqs_interval();
        }
        // Relaxed: a setting, read whole by the next grace period's driver.
        decode_config(self.config.swap(encode_config(config), Relaxed))
    }

    /// In a child of `fork()` (`fork.rs`), whose only thread is the caller:
    /// completes a grace period that a thread that did not come along was
    /// driving, frees the records of every other thread, and forgets the
    /// worker thread and the sleeping callers. `before_fork` checked that the
    /// caller was outside every read-side section and had no online qsbr
    /// registration, so every section a grace period could wait for belonged
    /// to a vanished thread and is over.
    #[cfg(not(loom))]
    pub(crate) fn reset_after_fork(&self) {
        // Relaxed loads and stores: nothing runs concurrently in the child.
        let state = self.callers.gp_state.load(Relaxed);
        let started = state >> STARTED_SHIFT;
        if snapshot(self.reader.gp_word.load(Relaxed)) != started & SNAPSHOT_MASK {
            // Its driver vanished between the start and init's store.
            // Release, as init's store: pairs with the readers' Acquire load
            // of `gp_word` (memb `lock`, qsbr quiescent states).
            self.reader.gp_word.store(reader_word(started), Release);
        }
        if self.callers.completed.load(Relaxed) < started {
            // Release, as in `run_grace_period`.
            self.callers.completed.store(started, Release);
            self.announce_completion(started);
        }
        self.reader.driver_wait.store(DRIVER_RUNNING, Relaxed);
        self.callers.sleeping.store(0, Relaxed);
        self.callers.waiting.store(0, Relaxed);
        self.gp_worker.forget_thread_after_fork();
        self.registry.release_vanished_owners();
        // A vanished driver (or worker) may have held it. AcqRel as every
        // release of the bit.
        self.callers.gp_state.fetch_and(!DRIVER, AcqRel);
    }

    /// Grace periods started and completed so far.
    pub(crate) fn counts(&self) -> GpCounts {
        let (completed, newest) = loop {
            let completed = self.callers.completed.load(Acquire);
            // A grace period counts as started once its init published
            // `gp_word`: a reader that sees `started >= n` and then enters a
            // section is one that grace period `n` need not wait for. Loaded
            // after `completed`, so it is at or ahead of it.
            let newest = snapshot(self.reader.gp_word.load(Acquire));
            // Grace periods may have completed between the two loads (a
            // preempted caller saw thousands), leaving `newest` any distance
            // ahead. If `completed` has not moved, it was `completed` while
            // we read `newest`, so `newest` is `completed` or the next one:
            // init of `completed + 2` follows the Release store of
            // `completed + 1` (same driver, or passed on with `DRIVER`), and
            // our Acquire load of that init's `gp_word` would make this
            // load see it. Relaxed: that happens-before is all it needs.
            if self.callers.completed.load(Relaxed) == completed {
                break (completed, newest);
            }
        };
        // The snapshot keeps 48 bits, so the full count is `completed` plus
        // how far ahead it is, modulo 2^48.
        let ahead = newest.wrapping_sub(completed) & SNAPSHOT_MASK;
        GpCounts {
            started: completed + ahead,
            completed,
            fqs_waits: self.fqs_waits.load(Relaxed),
            by_worker: self.worker_gps.load(Relaxed),
            records: self.registry.iter().count(),
        }
    }

    /// Wakes the driver if it sleeps waiting for holdouts: the read side's only
    /// contact with the writer side. Call after storing the record word and
    /// `fence::light()`.
    #[inline(always)]
    pub(crate) fn wake_driver_if_waiting(&self) {
        // Relaxed: the caller's light() orders this load after its word store;
        // it pairs with heavy() between the driver's WAITS_FOR_HOLDOUTS store
        // and its recheck (`sleep_for_holdouts`, `fqs_wait`).
        if self.reader.driver_wait.load(Relaxed) == WAITS_FOR_HOLDOUTS {
            self.wake_driver();
        }
    }

    #[cold]
    #[inline(never)]
    fn wake_driver(&self) {
        // Only one holdout needs to wake it; the CAS keeps the others from
        // making the system call too.
        if self
            .reader
            .driver_wait
            .compare_exchange(WAITS_FOR_HOLDOUTS, DRIVER_RUNNING, Relaxed, Relaxed)
            .is_ok()
        {
            futex::wake_one(&self.reader.driver_wait);
        }
    }

    /// `synchronize_rcu()`: returns once a full grace period has elapsed since
    /// the call. `own` is the calling thread's record, outside every section
    /// (the flavor checked). Its updates before the call are covered.
    pub(crate) fn synchronize(&'static self, own: &'static Record, expedited: bool) {
        // AcqRel: the Release half publishes this caller's earlier updates to
        // the driver that starts our grace period (its CAS in `drive` reads this
        // RMW or a later one); see the module docs.
        let old = self.callers.gp_state.fetch_or(NEED_GP | DRIVER, AcqRel);
        let target = (old >> STARTED_SHIFT) + 1;
        if expedited {
            self.request_expedited(target);
        }
        if old & DRIVER == 0 {
            self.drive(target, own);
        } else {
            self.wait_for_gp(target, own);
        }
    }

    /// Asks for grace period `target` to run adaptively with quick QS, waking a
    /// driver that sleeps in a fixed-interval wait.
    fn request_expedited(&self, target: u64) {
        // SeqCst, with the SeqCst load of `driver_wait` below, against the
        // driver's SeqCst store of `driver_wait` and load of `expedite` in
        // `fqs_wait`: either it sees the request or we see it asleep.
        self.callers.expedite.fetch_max(target, SeqCst);
        if self.reader.driver_wait.load(SeqCst) != DRIVER_RUNNING
            && self.reader.driver_wait.swap(DRIVER_RUNNING, SeqCst) != DRIVER_RUNNING
        {
            futex::wake_one(&self.reader.driver_wait);
        }
    }

    /// Runs grace periods until `target` has completed, then gives up the
    /// `DRIVER` bit: to the worker if a grace period is needed and callers
    /// crowd the engine (`crowded`), else clears it (waking a waiter to take
    /// it if a grace period is needed).
    fn drive(&'static self, target: u64, own: &'static Record) {
        loop {
            let state = self.callers.gp_state.load(Acquire);
            // Relaxed: only the driver (us) stores `completed`.
            let completed = self.callers.completed.load(Relaxed);
            if completed >= target {
                if state & NEED_GP != 0 && self.crowded() && self.hand_over_to_worker(own) {
                    return;
                }
                let old = self.callers.gp_state.fetch_and(!DRIVER, AcqRel);
                if old & NEED_GP != 0 {
                    // Someone needs a grace period that has not started (the
                    // next one, `completed + 1`): wake one of its waiters to
                    // take `DRIVER` over.
                    self.hand_off(completed + 1);
                }
                return;
            }
            // On a lost race (a caller came in) the loop reloads `state`.
            self.start_and_run(state, own);
        }
    }

    /// Starts the next grace period with a CAS from `state`, which the
    /// `DRIVER` holder (the thread owning `own`, or the worker) just loaded,
    /// and runs it. Returns `false`, having done nothing, if `state` changed
    /// meanwhile (a caller's `fetch_or` came in): the holder reloads.
    fn start_and_run(&self, state: u64, own: &Record) -> bool {
        let gp = (state >> STARTED_SHIFT) + 1;
        debug_assert_eq!(
            gp,
            self.callers.completed.load(Relaxed) + 1,
            "the DRIVER holder starts grace periods in order"
        );
        // AcqRel: Acquire pairs with every caller's Release `fetch_or`
        // before this point in the word's modification order.
        if self
            .callers
            .gp_state
            .compare_exchange(state, (gp << STARTED_SHIFT) | DRIVER, AcqRel, Relaxed)
            .is_err()
        {
            return false;
        }
        self.run_grace_period(gp, own);
        true
    }

    /// The record the worker drives with (registered nowhere).
    #[cfg(not(loom))]
    pub(crate) fn worker_record(&self) -> &Record {
        &self.worker_record
    }

    /// Whether more callers sleep waiting than `WORKER_CALLERS_PER_CPU` per
    /// CPU (for memb's `membarrier()` grace periods on fewer than
    /// `LONG_SPIN_MIN_CPUS` CPUs, fewer: see `worker_threshold_of`). Then the
    /// machine is oversubscribed with callers: a driver that returns is soon
    /// preempted by the waiters it woke, and a worker that keeps driving
    /// serves them with fewer wake-ups. With fewer callers a hand-over would
    /// add a wake-up of the worker to every grace period (the calling driver
    /// comes back at once and drives the next one itself).
    fn crowded(&self) -> bool {
        #[cfg(loom)]
        return self.loom_worker_inline.load(Relaxed);
        // Relaxed: a heuristic; no data depends on it.
        #[cfg(not(loom))]
        return self.callers.sleeping.load(Relaxed) > self.worker_threshold();
    }

    /// How many callers may sleep waiting before a driver hands `DRIVER` to
    /// the worker and new waiters skip their spin (`crowded`), on the CPUs
    /// this process may run on.
    #[cfg(not(loom))]
    fn worker_threshold(&self) -> u32 {
        worker_threshold_of(
            available_cpus(),
            self.reader_fence.engine_side_is_membarrier(),
            // Relaxed: a heuristic, as `sleeping`.
            self.callers.gps_since_holdout.load(Relaxed) < HOLDOUT_MEMORY_GPS,
        )
    }

    /// Counts grace periods since the last one whose first scan found a
    /// holdout (`any_holdout`), for `worker_threshold`. By the `DRIVER`
    /// holder; a store only when the count changes, so that grace periods
    /// that keep finding holdouts (or that have not found one for long)
    /// leave the line alone.
    #[cfg(not(loom))]
    #[inline]
    fn note_holdouts(&self, any_holdout: bool) {
        // Relaxed: a heuristic; the DRIVER bit's AcqRel hand-offs order the
        // holders' accesses anyway.
        let since = self.callers.gps_since_holdout.load(Relaxed);
        let next = if any_holdout {
            0
        } else {
            (since + 1).min(HOLDOUT_MEMORY_GPS)
        };
        if next != since {
            self.callers.gps_since_holdout.store(next, Relaxed);
        }
    }

    /// Hands this driver's `DRIVER` bit to the worker; `false` if its thread
    /// could not start. Under loom there is no worker thread: the driver (the
    /// thread owning `own`) runs the worker's part itself, so that the models
    /// cover it (see `loom_worker_inline`, which exists under loom only).
    fn hand_over_to_worker(&'static self, own: &'static Record) -> bool {
        #[cfg(not(loom))]
        {
            let _ = own;
            self.gp_worker.hand_over(self)
        }
        #[cfg(loom)]
        {
            self.drive_for_others(own);
            true
        }
    }

    /// The worker's part, once a driver handed `DRIVER` over: runs grace
    /// periods while callers ask for them, then clears `DRIVER`. `own` is the
    /// worker's record (registered nowhere; under loom, the driver's own).
    pub(crate) fn drive_for_others(&'static self, own: &Record) {
        let mut idle_spins = 0;
        loop {
            // Acquire, as in `drive`: pairs with the callers' Release
            // `fetch_or`; the CAS in `start_and_run` then confirms `state`.
            let state = self.callers.gp_state.load(Acquire);
            if state & NEED_GP == 0 {
                if idle_spins < WORKER_SPINS {
                    idle_spins += 1;
                    spin_loop();
                    continue;
                }
                // AcqRel, as a calling driver's release of `DRIVER` in
                // `drive`: the next `DRIVER` holder's RMW reads this one, so
                // the grace periods we completed happen before its own.
                let old = self.callers.gp_state.fetch_and(!DRIVER, AcqRel);
                if old & NEED_GP == 0 {
                    return;
                }
                // A caller asked between our load and our RMW, found `DRIVER`
                // set and waits for a driver: take the bit back, unless a
                // waiter (or a newer caller) took it first. AcqRel: Acquire
                // pairs with that caller's Release `fetch_or`.
                if self.callers.gp_state.fetch_or(DRIVER, AcqRel) & DRIVER != 0 {
                    return;
                }
                continue;
            }
            idle_spins = 0;
            if self.start_and_run(state, own) {
                // Relaxed: statistics only.
                self.worker_gps.fetch_add(1, Relaxed);
            }
        }
    }

    /// Runs grace period `gp`, already started by the `DRIVER` holder (the
    /// thread owning `own`), and announces its completion.
    fn run_grace_period(&self, gp: u64, own: &Record) {
        self.grace_period(gp, own);
        // Release pairs with the Acquire load of `completed` in
        // `wait_for_gp`: the readers' sections this grace period waited for
        // (ordered before our Acquire loads of their words) happen before
        // the waiters return.
        self.callers.completed.store(gp, Release);
        self.announce_completion(gp);
    }

    /// The eventcount the waiters for grace period `gp` sleep on.
    fn gp_done(&self, gp: u64) -> &AtomicU32 {
        &self.callers.gp_done[(gp & 1) as usize]
    }

    /// Bumps grace period `gp`'s eventcount after its completion, waking its
    /// sleepers if there are any.
    fn announce_completion(&self, gp: u64) {
        let word = self.gp_done(gp);
        // Release pairs with the Acquire load of the eventcount in
        // `wait_for_gp`.
        let old = word
            .fetch_update(Release, Relaxed, |e| {
                Some(e.wrapping_add(EVENT) & !SLEEPERS)
            })
            .unwrap_or_else(|e| e);
        if old & SLEEPERS != 0 {
            futex::wake_all(word);
        }
    }

    /// Wakes one waiter for grace period `gp`, which no driver is running, so
    /// that it takes `DRIVER` over. `SLEEPERS` stays set: the others sleep on.
    fn hand_off(&self, gp: u64) {
        let word = self.gp_done(gp);
        // Release pairs with the Acquire load of the eventcount in
        // `wait_for_gp`: the woken waiter sees `DRIVER` clear.
        let old = word.fetch_add(EVENT, Release);
        if old & SLEEPERS != 0 {
            futex::wake_one(word);
        }
    }

    /// Waits until grace period `target` has completed, taking over as driver
    /// if the previous one left.
    fn wait_for_gp(&'static self, target: u64, own: &'static Record) {
        if self.wait_or_take_over(target) {
            self.drive(target, own);
        }
    }

    /// Waits until grace period `target` has completed (returns `false`) or
    /// the caller took `DRIVER` over from a driver that left (`true`).
    fn wait_or_take_over(&self, target: u64) -> bool {
        let mut spin = CallerSpin::new(self);
        loop {
            // Acquire pairs with the Release bumps in `announce_completion`
            // and `hand_off`.
            let events = self.gp_done(target).load(Acquire);
            // Acquire pairs with the Release store of `completed` in
            // `run_grace_period`.
            if self.callers.completed.load(Acquire) >= target {
                return false;
            }
            if self.callers.gp_state.load(Relaxed) & DRIVER == 0 {
                if self.callers.gp_state.fetch_or(DRIVER, AcqRel) & DRIVER == 0 {
                    return true;
                }
                continue;
            }
            if spin.again() {
                spin_loop();
                continue;
            }
            if events & SLEEPERS == 0
                && self
                    .gp_done(target)
                    .compare_exchange(events, events | SLEEPERS, Relaxed, Relaxed)
                    .is_err()
            {
                continue;
            }
            // Relaxed: a count for `crowded` only. Counted around the sleep,
            // where an RMW costs nothing next to the system call, so that
            // waiters served while they spin never touch it.
            self.callers.sleeping.fetch_add(1, Relaxed);
            futex::wait(self.gp_done(target), events | SLEEPERS, None);
            self.callers.sleeping.fetch_sub(1, Relaxed);
        }
    }

    /// Grace period `gp`, driven by the thread owning `own`.
    fn grace_period(&self, gp: u64, own: &Record) {
        let config = self.config();
        let expedited = self.callers.expedite.load(Relaxed) >= gp;

        // rcu_gp_init(). Release pairs with the Acquire loads of `gp_word` in
        // memb's read lock and qsbr's quiescent_state()/online: a thread whose
        // snapshot is `gp` sees every update published before this store.
        self.reader.gp_word.store(reader_word(gp), Release);
        // Pairs with the readers' fence after every record-word store
        // (`ReaderFence`): a reader whose word the scan below does not see yet
        // sees, in its section, every update made before this fence.
        self.reader_fence.engine_side();
        // The seed's patch: rcu_qs() + rcu_report_qs_rdp() for the driver.
        let mut driver_holdout = !(config.quick_qs || expedited);
        let mut fqs = if expedited { Fqs::Adaptive } else { config.fqs };

        let mut holdouts: Vec<&'static Record> = Vec::new();
        if let Fqs::FixedInterval(interval) = fqs {
            // jiffies_till_first_fqs. The driver sleeps, but no scan has
            // sampled it yet, so this sleep cannot count as its quiescent state.
            if self.fqs_wait(&mut holdouts, gp, interval, false) {
                fqs = Fqs::Adaptive;
                driver_holdout = false;
            }
        }

        // FQS scan 1.
        for record in self.registry.iter() {
            if ptr::eq(record, own) {
                continue;
            }
            // Acquire pairs with the Release stores that end a section, report a
            // quiescent state or go offline: what the thread did before happens
            // before our return.
            if !is_quiescent_for(record.word.load(Acquire), gp) {
                holdouts.push(record);
            }
        }

        #[cfg(not(loom))]
        self.note_holdouts(!holdouts.is_empty());

        while driver_holdout || !holdouts.is_empty() {
            match fqs {
                Fqs::Adaptive => {
                    // The driver waits from here on: a quiescent state.
                    driver_holdout = false;
                    self.wait_adaptive(&mut holdouts, gp);
                }
                Fqs::FixedInterval(interval) => {
                    // Early wake only if the driver is already credited: its own
                    // sleep is seen by the next scan, not by a holdout's wake-up.
                    let expedited = self.fqs_wait(&mut holdouts, gp, interval, !driver_holdout);
                    // The next FQS scan: the driver slept since the last one.
                    driver_holdout = false;
                    recheck(&mut holdouts, gp);
                    if expedited {
                        fqs = Fqs::Adaptive;
                    }
                }
            }
        }
    }

    /// Rechecks `holdouts` until each has passed a quiescent state: spins, then
    /// sleeps until one of them wakes the driver.
    fn wait_adaptive(&self, holdouts: &mut Vec<&'static Record>, gp: u64) {
        let mut spins = 0;
        loop {
            recheck(holdouts, gp);
            if holdouts.is_empty() {
                return;
            }
            if spins < HOLDOUT_SPINS {
                spins += 1;
                spin_loop();
                continue;
            }
            spins = 0;
            self.sleep_for_holdouts(holdouts, gp);
        }
    }

    /// Publishes `WAITS_FOR_HOLDOUTS`, rechecks, and sleeps until a holdout
    /// wakes the driver, unless the recheck emptied `holdouts`.
    fn sleep_for_holdouts(&self, holdouts: &mut Vec<&'static Record>, gp: u64) {
        // The pairing with the readers is the heavy fence. SeqCst pairs with
        // nothing here: unlike `fqs_wait`, this sleep loads no `expedite`
        // (its grace period already runs adaptively), so it takes no part in
        // `request_expedited`'s handshake; a request that finds this state
        // only wakes the driver, which rechecks and sleeps again.
        self.reader.driver_wait.store(WAITS_FOR_HOLDOUTS, SeqCst);
        // Pairs with the readers' fence between a word store and their load
        // of `driver_wait` (`wake_driver_if_waiting`).
        self.reader_fence.engine_side();
        recheck(holdouts, gp);
        if !holdouts.is_empty() {
            futex::wait(&self.reader.driver_wait, WAITS_FOR_HOLDOUTS, None);
        }
        self.reader.driver_wait.store(DRIVER_RUNNING, Relaxed);
    }

    /// One fixed-interval FQS wait of `interval`. Ends early if an expedited
    /// caller needs `gp` (returns `true`), or, when `early_wake`, once every
    /// holdout has passed a quiescent state.
    fn fqs_wait(
        &self,
        holdouts: &mut Vec<&'static Record>,
        gp: u64,
        interval: Duration,
        early_wake: bool,
    ) -> bool {
        #[cfg(loom)]
        {
            // Under loom the timer is a yield: time must not steer the model.
            let _ = (holdouts, interval, early_wake);
            self.fqs_waits.fetch_add(1, Relaxed);
            crate::sync::yield_now();
            self.callers.expedite.load(SeqCst) >= gp
        }
        #[cfg(not(loom))]
        {
            self.fqs_waits.fetch_add(1, Relaxed);
            let deadline = Instant::now() + interval;
            loop {
                if early_wake && holdouts.is_empty() {
                    return false;
                }
                let Some(left) = deadline.checked_duration_since(Instant::now()) else {
                    return false;
                };
                if left.is_zero() {
                    return false;
                }
                if early_wake {
                    // Arms the holdouts' wake-ups; the expedite check follows
                    // the SeqCst store inside.
                    self.reader.driver_wait.store(WAITS_FOR_HOLDOUTS, SeqCst);
                    // As in `sleep_for_holdouts`.
                    self.reader_fence.engine_side();
                    recheck(holdouts, gp);
                    if holdouts.is_empty() {
                        self.reader.driver_wait.store(DRIVER_RUNNING, Relaxed);
                        return false;
                    }
                } else {
                    // SeqCst: see `request_expedited`.
                    self.reader.driver_wait.store(WAITS_FOR_TIMER, SeqCst);
                }
                // SeqCst: see `request_expedited`.
                if self.callers.expedite.load(SeqCst) >= gp {
                    self.reader.driver_wait.store(DRIVER_RUNNING, Relaxed);
                    return true;
                }
                let state = if early_wake {
                    WAITS_FOR_HOLDOUTS
                } else {
                    WAITS_FOR_TIMER
                };
                futex::wait(&self.reader.driver_wait, state, Some(left));
                self.reader.driver_wait.store(DRIVER_RUNNING, Relaxed);
                if early_wake {
                    recheck(holdouts, gp);
                }
            }
        }
    }
}

/// Under loom: makes every driver of either flavor that finds a grace period
/// needed run the worker's part itself (`on`), or wake a waiter to take over
/// as without a worker thread (`off`, the default), so that models can cover
/// both. Call it inside the model: the setting lasts one execution.
#[cfg(loom)]
pub fn loom_worker_inline(on: bool) {
    crate::memb::engine().loom_worker_inline.store(on, Relaxed);
    crate::qsbr::engine().loom_worker_inline.store(on, Relaxed);
}

/// Sleeping waiters per CPU above which a driver hands over to the worker and
/// new waiters skip their spin.
#[cfg(not(loom))]
const WORKER_CALLERS_PER_CPU: u32 = 2;

/// Sleeping waiters above which a memb driver hands over to the worker on
/// fewer than `LONG_SPIN_MIN_CPUS` CPUs, while readers hold grace periods up
/// (a first scan found a holdout in the last `HOLDOUT_MEMORY_GPS` grace
/// periods). There a waiter spins only
/// `CALLER_SPINS` times (about 1.3 us on the 2-vCPU AMD EPYC guest), which
/// no memb grace period fits (its `membarrier()` takes 8-16 us while the
/// other CPU is busy), so waiters sleep; a driver that then handed `DRIVER`
/// to a sleeping waiter, who had to be woken and scheduled beside the
/// reader before the next grace period could start, left 3 to 5 writers
/// with a busy reader spending half their waiting time in waits of
/// 0.06-4 ms, which the worker avoids (docs/rcu-lite.md, *A few callers on
/// 2 CPUs*). Not for qsbr, nor memb
/// under the fallback fences, whose grace periods (0.1-0.3 us with a
/// reader running) mostly serve waiters while they spin: handing those to
/// the worker took up to 11x the time per grace period for 3 to 6 qsbr
/// writers, and 5-14x for 4 and 5 memb writers under `SeqCst` fences.
#[cfg(not(loom))]
const MEMB_SLEEPERS_ON_FEW_CPUS: u32 = 1;

/// How many grace periods whose first scan found no holdout make memb's
/// worker threshold on few CPUs go back from `MEMB_SLEEPERS_ON_FEW_CPUS` to
/// one sleeper per CPU. Without readers to share the CPUs with, a woken
/// waiter soon runs, and callers that drive one grace period after another
/// themselves beat a worker that wakes each of them: 3 memb writers without
/// readers on 2 vCPUs took 0.50x the time per grace period with one
/// sleeper per CPU as the threshold, against one sleeper (median of 24
/// paired rounds). The cost is 4 writers without readers, 1.14x, whose
/// callers do better handing over early; the other counts, with or without
/// a busy reader, paired at 0.90-1.13x, within the 0.79-1.10x of 2 writers,
/// whom the threshold never concerns. 1,024 grace periods last 2-12 ms
/// there: a reader that comes back is seen by the next scan that finds it
/// inside its section; one that stops is forgotten within milliseconds.
#[cfg(not(loom))]
const HOLDOUT_MEMORY_GPS: u32 = 1024;

/// [`Engine::config`]'s word: bit 63 is [`GpConfig::quick_qs`], the rest the
/// [`Fqs::FixedInterval`] in nanoseconds (at least 1, at most 2^63 - 1: about
/// 292 years), or 0 for [`Fqs::Adaptive`].
const QUICK_QS_BIT: u64 = 1 << 63;

const fn encode_config(config: GpConfig) -> u64 {
    let interval_ns = match config.fqs {
        Fqs::Adaptive => 0,
        Fqs::FixedInterval(d) => {
            let ns = d.as_nanos();
            if ns == 0 {
                1
            } else if ns >= QUICK_QS_BIT as u128 {
                QUICK_QS_BIT - 1
            } else {
                // In range: checked just above.
                ns as u64
            }
        }
    };
    interval_ns | if config.quick_qs { QUICK_QS_BIT } else { 0 }
}

fn decode_config(word: u64) -> GpConfig {
    let interval_ns = word & !QUICK_QS_BIT;
    GpConfig {
        quick_qs: word & QUICK_QS_BIT != 0,
        fqs: if interval_ns == 0 {
            Fqs::Adaptive
        } else {
            Fqs::FixedInterval(Duration::from_nanos(interval_ns))
        },
    }
}

#[cold]
#[inline(never)]
fn zero_fqs_interval() -> ! {
    panic!(
        "rcu_lite: configure() with Fqs::FixedInterval(0): the driver would rescan its holdouts \
         without ever waiting, using a CPU for as long as a reader holds out; Fqs::Adaptive \
         gives the fastest grace periods"
    )
}

/// How long a caller of `wait_or_take_over` spins before it sleeps (the
/// spin phase of liburcu's `urcu_adaptative_busy_wait()` and of the kernel's
/// optimistic spinning, bounded by the CPUs there are to spin on).
///
/// - In a crowd (`Engine::crowded`) a grace period outlasts any spin, and
///   spinning only takes the CPU from the callers and the driver: no spin.
/// - While the waiting callers, this one included, fit the CPUs but the
///   driver's (`waiting` at most `available_cpus() - 1`), a caller spins for
///   up to `SPIN_WAIT`, long enough for a grace period that interrupts every
///   CPU: served while it spins, it costs the driver no futex wake-up and
///   itself no sleep. It stops early once more callers wait than that.
/// - Otherwise it spins `CALLER_SPINS` times: the waiters would spin on CPUs
///   the driver and the woken callers need (on 2 CPUs, any second waiter).
///
/// Under loom nothing is counted: `CALLER_SPINS` (1) spin, as before the
/// count existed, keeps the models' state space small.
struct CallerSpin<'e> {
    /// The engine's `waiting` count, if this caller is counted in it (from
    /// `new` until drop).
    #[cfg(not(loom))]
    waiting: Option<&'e ConfigU32>,
    /// Whether this caller still spins for `SPIN_WAIT`.
    #[cfg(not(loom))]
    long: bool,
    /// How many waiters may spin for `SPIN_WAIT` (`spinning_cpus`).
    #[cfg(not(loom))]
    spinning_cpus: u32,
    /// When the long spin ends; set on its first look at the clock.
    #[cfg(not(loom))]
    until: Option<Instant>,
    #[cfg(loom)]
    _engine: std::marker::PhantomData<&'e Engine>,
    spins: u32,
    limit: u32,
}

impl<'e> CallerSpin<'e> {
    /// Decides how `engine`'s waiting caller spins, counting it among the
    /// waiters unless the engine is crowded.
    fn new(engine: &'e Engine) -> CallerSpin<'e> {
        #[cfg(not(loom))]
        return CallerSpin::with_spinning_cpus(engine, spinning_cpus());
        #[cfg(loom)]
        return CallerSpin::with_spinning_cpus(engine, 0);
    }

    /// `new`, as if `spinning_cpus()` were `spinning_cpus`.
    fn with_spinning_cpus(engine: &'e Engine, spinning_cpus: u32) -> CallerSpin<'e> {
        let crowded = engine.crowded();
        #[cfg_attr(loom, allow(unused_mut))]
        let mut spin = CallerSpin {
            #[cfg(not(loom))]
            waiting: None,
            #[cfg(not(loom))]
            long: false,
            #[cfg(not(loom))]
            spinning_cpus,
            #[cfg(not(loom))]
            until: None,
            #[cfg(loom)]
            _engine: std::marker::PhantomData,
            spins: 0,
            limit: if crowded { 0 } else { CALLER_SPINS },
        };
        #[cfg(not(loom))]
        if !crowded && spinning_cpus > 0 {
            let waiting = &engine.callers.waiting;
            // Relaxed: a heuristic count; no data depends on it.
            spin.long = waiting.fetch_add(1, Relaxed) < spinning_cpus;
            spin.waiting = Some(waiting);
        }
        #[cfg(loom)]
        let _ = spinning_cpus;
        spin
    }

    /// Whether to spin once more. Once it says no, it says no from then on.
    #[inline]
    fn again(&mut self) -> bool {
        #[cfg(not(loom))]
        if self.long {
            if self.spins.is_multiple_of(SPINS_PER_CLOCK_READ) && !self.long_spin_goes_on() {
                self.long = false;
                self.limit = 0;
                return false;
            }
            self.spins = self.spins.wrapping_add(1);
            return true;
        }
        if self.spins < self.limit {
            self.spins += 1;
            return true;
        }
        false
    }

    /// Whether the long spin goes on: before its deadline (set on the first
    /// call), while the waiters fit the CPUs.
    #[cfg(not(loom))]
    #[cold]
    fn long_spin_goes_on(&mut self) -> bool {
        let now = Instant::now();
        let until = *self.until.get_or_insert(now + SPIN_WAIT);
        // Relaxed: a heuristic count, as in `new`.
        now < until
            && self
                .waiting
                .is_some_and(|w| w.load(Relaxed) <= self.spinning_cpus)
    }
}

impl Drop for CallerSpin<'_> {
    fn drop(&mut self) {
        #[cfg(not(loom))]
        if let Some(waiting) = self.waiting {
            // Relaxed: as in `new`.
            waiting.fetch_sub(1, Relaxed);
        }
    }
}

/// How many waiting callers may spin for `SPIN_WAIT`: one per CPU this
/// process may run on, but the driver's; none below `LONG_SPIN_MIN_CPUS`.
#[cfg(not(loom))]
fn spinning_cpus() -> u32 {
    spinning_cpus_of(available_cpus())
}

/// `spinning_cpus` on `cpus` CPUs.
#[cfg(not(loom))]
fn spinning_cpus_of(cpus: u32) -> u32 {
    if cpus < LONG_SPIN_MIN_CPUS {
        0
    } else {
        cpus - 1
    }
}

/// The fewest CPUs on which waiting callers spin for `SPIN_WAIT`. On the
/// 2-vCPU AMD EPYC guest a second caller that spun for it while the first
/// drove (holding the only other CPU, which the driver's `membarrier()` then
/// had to interrupt) made 2 writers' calls 17% slower, and 22% with a busy
/// reader (`docs/rcu-lite.md`, *Many callers*).
#[cfg(not(loom))]
const LONG_SPIN_MIN_CPUS: u32 = 4;

/// `Engine::worker_threshold` on `cpus` CPUs, for grace periods that make a
/// `membarrier()` or not, with readers that held grace periods up of late
/// or not. For those that do below `LONG_SPIN_MIN_CPUS`:
/// `MEMB_SLEEPERS_ON_FEW_CPUS` while readers held them up, else one per CPU
/// (`HOLDOUT_MEMORY_GPS`). Otherwise `WORKER_CALLERS_PER_CPU` per CPU.
#[cfg(not(loom))]
fn worker_threshold_of(cpus: u32, membarrier_grace_periods: bool, readers_held_up: bool) -> u32 {
    if cpus < LONG_SPIN_MIN_CPUS && membarrier_grace_periods {
        if readers_held_up {
            MEMB_SLEEPERS_ON_FEW_CPUS
        } else {
            cpus
        }
    } else {
        cpus.saturating_mul(WORKER_CALLERS_PER_CPU)
    }
}

/// The CPUs this process may run on, computed on first use. Not a
/// `OnceLock`: a fork while another thread is inside its initialisation
/// (`available_parallelism` makes system calls and reads cgroup files) would
/// leave the child one that blocks every caller for good. Threads that race
/// here each compute the same value.
#[cfg(not(loom))]
fn available_cpus() -> u32 {
    static CPUS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    // Relaxed: the value is all there is; 0 means not computed yet (the
    // count is at least 1).
    match CPUS.load(Relaxed) {
        0 => {
            let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
            let cpus = u32::try_from(cpus).unwrap_or(u32::MAX);
            CPUS.store(cpus, Relaxed);
            cpus
        }
        cpus => cpus,
    }
}

/// Drops from `holdouts` every record that has passed a quiescent state.
fn recheck(holdouts: &mut Vec<&'static Record>, gp: u64) {
    // Acquire pairs with the Release stores that end a section, report a
    // quiescent state or go offline.
    holdouts.retain(|record| !is_quiescent_for(record.word.load(Acquire), gp));
}

/// Declares the engine of the flavor module that invokes it, and
/// `engine() -> &'static Engine`, which the read-side fast path inlines (a
/// static's address, no load, outside loom).
///
/// Under loom the engine is a leaked lazy static, so that thread-local
/// destructors that run after loom drops its lazy statics (the main
/// thread's) still find it.
macro_rules! flavor_engine {
    ($reader_fence:expr) => {
        #[cfg(not(loom))]
        static ENGINE: $crate::engine::Engine = $crate::engine::Engine::new($reader_fence);

        #[cfg(loom)]
        loom::lazy_static! {
            static ref ENGINE: &'static $crate::engine::Engine =
                Box::leak(Box::new($crate::engine::Engine::new($reader_fence)));
        }

        /// This flavor's engine.
        #[inline(always)]
        pub(crate) fn engine() -> &'static $crate::engine::Engine {
            #[cfg(not(loom))]
            return &ENGINE;
            #[cfg(loom)]
            return *ENGINE;
        }
    };
}

pub(crate) use flavor_engine;

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    /// `counts` rebuilds the number of grace periods started from the 48-bit
    /// snapshot in `gp_word`, also once that snapshot has wrapped.
    #[test]
    fn counts_rebuild_the_started_grace_periods_across_the_snapshot_wrap() {
        let engine = Engine::new(ReaderFence::Light);
        for (completed, newest) in [
            (7, 7),
            (7, 8),
            (SNAPSHOT_MASK, SNAPSHOT_MASK + 1),
            (SNAPSHOT_MASK + 1, SNAPSHOT_MASK + 1),
            (SNAPSHOT_MASK + 1, SNAPSHOT_MASK + 3),
        ] {
            engine.callers.completed.store(completed, Relaxed);
            engine.reader.gp_word.store(reader_word(newest), Relaxed);
            let counts = engine.counts();
            assert_eq!(
                (counts.started, counts.completed),
                (newest, completed),
                "completed {completed}, newest started {newest}"
            );
        }
    }

    /// A child forked after a driver started grace period 5 (its CAS) but
    /// before init published it in `gp_word` publishes it and completes it:
    /// the child's counts then agree.
    #[test]
    fn after_a_fork_a_started_but_unpublished_grace_period_is_published_and_completed() {
        let engine = Engine::new(ReaderFence::Light);
        engine
            .callers
            .gp_state
            .store((5 << STARTED_SHIFT) | DRIVER, Relaxed);
        engine.callers.completed.store(4, Relaxed);
        engine.reader.gp_word.store(reader_word(4), Relaxed);
        engine.reset_after_fork();
        assert_eq!(snapshot(engine.reader.gp_word.load(Relaxed)), 5);
        let counts = engine.counts();
        assert_eq!((counts.started, counts.completed), (5, 5));
    }

    /// A completion changes its eventcount, so that a waiter that loaded the
    /// word before it does not go to sleep on it, and clears `SLEEPERS`, so
    /// that the next completion wakes only waiters that sleep by then.
    #[test]
    fn a_completion_changes_its_eventcount_and_clears_the_sleepers_bit() {
        let engine = Engine::new(ReaderFence::Light);
        for before in [0, SLEEPERS, EVENT | SLEEPERS, u32::MAX] {
            engine.callers.gp_done[1].store(before, Relaxed);
            engine.announce_completion(1);
            let after = engine.callers.gp_done[1].load(Relaxed);
            assert_eq!(after & SLEEPERS, 0, "{before:#x} became {after:#x}");
            assert_ne!(after, before & !SLEEPERS, "{before:#x} became {after:#x}");
        }
    }

    /// Long spins need 4 CPUs, and leave one to the driver.
    #[test]
    fn waiters_spin_long_on_all_cpus_but_the_drivers_from_four_cpus() {
        for (cpus, spinning) in [
            (1, 0),
            (2, 0),
            (3, 0),
            (4, 3),
            (16, 15),
            (u32::MAX, u32::MAX - 1),
        ] {
            assert_eq!(spinning_cpus_of(cpus), spinning, "{cpus} CPUs");
        }
    }

    /// On fewer than 4 CPUs a driver whose grace periods make a
    /// `membarrier()` (memb's) hands over to the worker once two callers
    /// sleep while readers hold grace periods up, and once more than one per
    /// CPU do otherwise; other drivers, and every driver from 4 CPUs, once
    /// more than two per CPU do, readers or not.
    #[test]
    fn membarrier_drivers_hand_over_to_the_worker_at_two_sleepers_below_four_cpus() {
        for (cpus, membarrier_held_up, membarrier_free, fence) in [
            (1, 1, 1, 2),
            (2, 1, 2, 4),
            (3, 1, 3, 6),
            (4, 8, 8, 8),
            (16, 32, 32, 32),
            (u32::MAX, u32::MAX, u32::MAX, u32::MAX),
        ] {
            assert_eq!(
                worker_threshold_of(cpus, true, true),
                membarrier_held_up,
                "{cpus} CPUs"
            );
            assert_eq!(
                worker_threshold_of(cpus, true, false),
                membarrier_free,
                "{cpus} CPUs"
            );
            for held_up in [true, false] {
                assert_eq!(
                    worker_threshold_of(cpus, false, held_up),
                    fence,
                    "{cpus} CPUs"
                );
            }
        }
        // Which of the two each flavor's engine is.
        let membarrier_mode = fence::mode() == fence::Mode::Membarrier;
        assert_eq!(
            ReaderFence::Light.engine_side_is_membarrier(),
            membarrier_mode
        );
        assert!(!ReaderFence::Full.engine_side_is_membarrier());
    }

    /// Readers count as holding grace periods up from the first grace period
    /// whose first scan finds a holdout until `HOLDOUT_MEMORY_GPS` grace
    /// periods in a row find none; a new engine has seen none.
    #[test]
    fn readers_hold_grace_periods_up_until_many_find_no_holdout() {
        let engine = Engine::new(ReaderFence::Light);
        let since = || engine.callers.gps_since_holdout.load(Relaxed);
        assert_eq!(since(), HOLDOUT_MEMORY_GPS, "a new engine");
        engine.note_holdouts(false);
        assert_eq!(since(), HOLDOUT_MEMORY_GPS, "the count saturates");
        engine.note_holdouts(true);
        assert_eq!(since(), 0);
        for _ in 1..HOLDOUT_MEMORY_GPS {
            engine.note_holdouts(false);
        }
        assert_eq!(since(), HOLDOUT_MEMORY_GPS - 1, "still held up");
        engine.note_holdouts(true);
        assert_eq!(since(), 0, "a holdout starts the count again");
        for _ in 0..HOLDOUT_MEMORY_GPS {
            engine.note_holdouts(false);
        }
        assert_eq!(since(), HOLDOUT_MEMORY_GPS);
        let cpus = available_cpus();
        let membarrier = ReaderFence::Light.engine_side_is_membarrier();
        assert_eq!(
            engine.worker_threshold(),
            worker_threshold_of(cpus, membarrier, false)
        );
        engine.note_holdouts(true);
        assert_eq!(
            engine.worker_threshold(),
            worker_threshold_of(cpus, membarrier, true)
        );
    }

    /// A grace period whose first scan finds a reader inside its section
    /// notes it: the count of grace periods since starts again.
    #[test]
    fn a_reader_inside_its_section_at_the_first_scan_is_noted() {
        let engine = crate::memb::engine();
        let (entered, inside) = std::sync::mpsc::channel();
        let (leave, left) = std::sync::mpsc::channel::<()>();
        let reader = std::thread::spawn(move || {
            let guard = crate::memb::read_lock();
            entered.send(()).unwrap();
            // Held until the grace period has scanned (and waits).
            left.recv().unwrap();
            drop(guard);
        });
        inside.recv().unwrap();
        let release = std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(20));
            leave.send(()).unwrap();
        });
        crate::memb::synchronize_rcu();
        // Other tests' grace periods may count on from 0, but not 1,024 times
        // in this short window.
        assert!(engine.callers.gps_since_holdout.load(Relaxed) < HOLDOUT_MEMORY_GPS);
        reader.join().unwrap();
        release.join().unwrap();
    }

    /// More spins than a 20 us long spin makes at 1 ns a spin: only a spin
    /// without an end reaches it.
    const SPIN_CAP: u64 = 1 << 26;

    /// The count `CallerSpin::new` uses is the one for the CPUs this
    /// process may run on.
    #[test]
    fn the_spinning_cpus_are_those_of_this_process() {
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        assert_eq!(
            spinning_cpus(),
            spinning_cpus_of(u32::try_from(cpus).unwrap())
        );
    }

    /// Spins `spin` allows, up to `cap`.
    fn spins_allowed(spin: &mut CallerSpin<'_>, cap: u64) -> u64 {
        let mut spins = 0;
        while spins < cap && spin.again() {
            spins += 1;
        }
        spins
    }

    /// While the waiters fit `spinning_cpus`, each spins long; the next one
    /// spins `CALLER_SPINS` times. Every waiter counts until it is dropped.
    #[test]
    fn the_waiters_beyond_the_spinning_cpus_spin_briefly() {
        let engine = Engine::new(ReaderFence::Light);
        let mut fitting: Vec<_> = (0..3)
            .map(|_| CallerSpin::with_spinning_cpus(&engine, 3))
            .collect();
        let mut beyond = CallerSpin::with_spinning_cpus(&engine, 3);
        assert!(fitting.iter().all(|spin| spin.long));
        assert!(!beyond.long);
        assert_eq!(engine.callers.waiting.load(Relaxed), 4);
        assert_eq!(
            spins_allowed(&mut beyond, SPIN_CAP),
            u64::from(CALLER_SPINS)
        );
        assert!(!beyond.again(), "it says no from then on");
        drop(beyond);
        // Three waiters fit again: the first spins until its deadline, at
        // least `SPIN_WAIT` after its first look at the clock (however often
        // it was preempted meanwhile).
        let started = Instant::now();
        let spins = spins_allowed(&mut fitting[0], SPIN_CAP);
        assert!(spins < SPIN_CAP, "{spins} spins");
        assert!(started.elapsed() >= SPIN_WAIT, "{:?}", started.elapsed());
        assert!(!fitting[0].again(), "it says no from then on");
        drop(fitting);
        assert_eq!(engine.callers.waiting.load(Relaxed), 0);
    }

    /// A long spin stops at its next look at the clock once more waiters
    /// wait than `spinning_cpus`.
    #[test]
    fn a_long_spin_stops_when_more_callers_wait_than_fit() {
        let engine = Engine::new(ReaderFence::Light);
        let mut first = CallerSpin::with_spinning_cpus(&engine, 1);
        assert!(
            first.again(),
            "the first look at the clock sets the deadline"
        );
        let second = CallerSpin::with_spinning_cpus(&engine, 1);
        assert!(!second.long);
        let spins = spins_allowed(&mut first, SPIN_CAP);
        assert!(
            spins < u64::from(SPINS_PER_CLOCK_READ),
            "{spins} more spins with 2 waiters for 1 spinning CPU"
        );
        drop(second);
        assert!(!first.again(), "it says no from then on");
    }

    /// In a crowd nobody spins or is counted; without spinning CPUs waiters
    /// spin `CALLER_SPINS` times and are not counted either.
    #[test]
    fn crowded_waiters_do_not_spin_and_are_not_counted() {
        let engine = Engine::new(ReaderFence::Light);
        engine
            .callers
            .sleeping
            .store(engine.worker_threshold() + 1, Relaxed);
        let mut crowded = CallerSpin::with_spinning_cpus(&engine, 15);
        assert!(!crowded.again());
        assert_eq!(engine.callers.waiting.load(Relaxed), 0);
        engine.callers.sleeping.store(0, Relaxed);
        let mut few_cpus = CallerSpin::with_spinning_cpus(&engine, 0);
        assert_eq!(
            spins_allowed(&mut few_cpus, SPIN_CAP),
            u64::from(CALLER_SPINS)
        );
        assert_eq!(engine.callers.waiting.load(Relaxed), 0);
    }
}
