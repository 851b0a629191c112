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
//! `gp_state` holds the number of grace periods started (bits 2 and up), a
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
//! # Where the rest is
//!
//! - `grace_period.rs`: one grace period, from init to the last holdout
//!   (`rcu_gp_init()`, the seed's quick QS report, `rcu_gp_fqs_loop()`).
//! - `crowding.rs`: how crowded `synchronize_rcu()` is and what follows from
//!   it: how long a waiting caller spins, and when the worker takes over.

mod crowding;
mod grace_period;
mod stall;

use crowding::CallerSpin;
#[cfg(not(loom))]
use crowding::HOLDOUT_MEMORY_GPS;

use crate::callbacks::CallbackQueue;
use crate::config::{Fqs, GpConfig, decode_config, encode_config, zero_fqs_interval};
use crate::futex;
#[cfg(not(loom))]
use crate::gp_worker::GpWorker;
use crate::record::{Record, Registry, Roster, SNAPSHOT_MASK, reader_word, snapshot};
use crate::sync::{AtomicU32, AtomicU64, spin_loop};
use membarrier_sim::fence;
#[cfg(loom)]
use std::sync::atomic::AtomicBool as ConfigBool;
use std::sync::atomic::Ordering::{AcqRel, Acquire, Relaxed, Release, SeqCst};
use std::sync::atomic::{AtomicU32 as ConfigU32, AtomicU64 as ConfigU64};
use std::time::Duration;

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
const WAITS_FOR_TIMER: u32 = 2;

/// Checks for a caller needing a grace period before the worker parks.
const WORKER_SPINS: u32 = if cfg!(loom) { 1 } else { 200 };

/// The longest a caller sleeps on a `gp_done` eventcount before it looks at
/// `completed` again. A completion always bumps the word and wakes, so this
/// only matters where the 32-bit eventcount came back round to the value the
/// caller read (2^31 events, about 40 minutes of back-to-back grace periods,
/// between its load and its futex call, its own completion among them):
/// without a bound it would sleep until the next grace period of that
/// parity, which an idle process never asks for. Unbounded under loom, whose
/// model of a timed wait yields instead of sleeping and would hide a lost
/// wake-up.
const EVENTCOUNT_RECHECK: Option<Duration> = if cfg!(loom) {
    None
} else {
    Some(Duration::from_secs(1))
};

/// How many grace periods an engine has started and completed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GpCounts {
    /// Grace periods whose init has begun (their sequence number published to
    /// readers).
    pub started: u64,
    /// Grace periods completed (`started` or `started - 1`).
    pub completed: u64,
    /// Fixed-interval FQS waits the drivers have made ([`Fqs::FixedInterval`]
    /// only): on an idle system (other registered threads outside their
    /// sections), one per grace period with quick QS, two without; with
    /// quick QS, none where the driver's thread is the only one holding a
    /// record. A wait counts once begun, also when it ends early without
    /// sleeping (its holdouts already quiescent once flagged, or an
    /// expedited request).
    pub fqs_waits: u64,
    /// Grace periods the grace-period worker drove (the others were driven by
    /// a caller of `synchronize_rcu()`): the worker takes over while callers
    /// keep asking for grace periods.
    pub by_worker: u64,
    /// Thread records the registry holds, in use or free for the next thread
    /// to register: the most records in use at once (a memb thread holds
    /// one; a qsbr thread one per registration, plus one once it drives a
    /// grace period), plus records kept by forgotten guards. A scan reads
    /// only those in use, from an array gathered again after a thread
    /// registers or exits.
    pub records: usize,
}

/// What the read side touches: one read-mostly cache line, written once per
/// grace period.
#[repr(align(128))]
pub(crate) struct ReaderShared {
    /// `reader_word(newest grace period started)`: what a memb reader stores
    /// when it enters its outermost section and a qsbr thread when it reports a
    /// quiescent state or comes online. Written by the driver only.
    pub(crate) gp_word: AtomicU64,
}

/// The futex word the driver sleeps on, alone on its cache lines: the driver
/// writes it around every sleep and FQS wait, a flagged holdout and an
/// expedited caller exchange it, and readers' fast paths never read it. (It
/// shared `gp_word`'s line until 2026-12-06, so each of those writes took the
/// line from every reader.)
#[repr(align(128))]
pub(crate) struct DriverWait {
    /// `DRIVER_RUNNING`, `WAITS_FOR_HOLDOUTS` or `WAITS_FOR_TIMER`.
    pub(crate) word: AtomicU32,
}

// The layout the comments above state.
const _: () = {
    assert!(size_of::<ReaderShared>() == 128 && align_of::<ReaderShared>() == 128);
    assert!(size_of::<DriverWait>() == 128 && align_of::<DriverWait>() == 128);
    assert!(size_of::<CallerShared>() == 128 && align_of::<CallerShared>() == 128);
};

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
/// their next loads (of shared data, or of their `wake_driver` flag), and so
/// which one the engine issues between its stores (`gp_word`, `driver_wait`
/// and the holdouts' flags) and its
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

    /// The flavor whose readers issue this fence (memb: `Light`, qsbr:
    /// `Full`), which names its grace-period worker (none under loom).
    #[cfg(not(loom))]
    pub(crate) fn flavor_name(self) -> &'static str {
        match self {
            ReaderFence::Light => "memb",
            ReaderFence::Full => "qsbr",
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
    pub(crate) driver_wait: DriverWait,
    /// The fence pair this flavor's readers and this engine use.
    pub(crate) reader_fence: ReaderFence,
    callers: CallerShared,
    registry: Registry,
    /// The records in use, for the `DRIVER` holder's scans
    /// ([`Registry::refresh`]). Only the driver locks it, so the lock is
    /// always free, except in a fork child whose parent's driver held it at
    /// the fork: the child's scans then walk the registry instead. A `std`
    /// mutex even under loom: `DRIVER` is the synchronization, which the
    /// models check, and a loom mutex would only add branch points to them.
    roster: std::sync::Mutex<Roster>,
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
    pub(crate) gp_worker: GpWorker,
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
    /// Under loom: the fixed-interval waits that have no timer, a bit per
    /// `grace_period::FqsWait` (see [`loom_fqs_timer_never_fires`]). In the
    /// engine for the same reason as `loom_worker_inline`.
    #[cfg(loom)]
    loom_timerless_waits: ConfigU32,
}

impl Engine {
    crate::const_unless_loom! {
        /// An engine with no grace period started yet, whose readers fence
        /// with `reader_fence`.
        pub(crate) fn new(reader_fence: ReaderFence) -> Engine {
            Engine {
                reader: ReaderShared {
                    gp_word: AtomicU64::new(reader_word(0)),
                },
                driver_wait: DriverWait {
                    word: AtomicU32::new(DRIVER_RUNNING),
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
                roster: std::sync::Mutex::new(Roster::new()),
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
                #[cfg(loom)]
                loom_timerless_waits: ConfigU32::new(0),
            }
        }
    }

    /// The registry of this engine's records.
    pub(crate) fn registry(&self) -> &Registry {
        &self.registry
    }

    /// The settings the next grace period will use.
    pub(crate) fn config(&self) -> GpConfig {
        // Relaxed: a setting, read whole; no data is published through it.
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
    /// registration, so every section that began before it belonged to a
    /// vanished thread and is over. The caller may have entered a section
    /// since, between the hooks (`read_lock` is not refused there): it may
    /// read nothing that a completed grace period lets the child free, as
    /// every value whose callback the child holds was unpublished before
    /// `before_fork` took the queue locks (an unpublisher still queueing
    /// waited for them, and its value stays with its vanished thread), and
    /// the grace periods that other threads waited for return in vanished
    /// threads only.
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
        self.driver_wait.word.store(DRIVER_RUNNING, Relaxed);
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
            // Acquire pairs with the Release store of `completed` in
            // `run_grace_period`, as in `poll_done`.
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
            // Relaxed: statistics.
            fqs_waits: self.fqs_waits.load(Relaxed),
            by_worker: self.worker_gps.load(Relaxed),
            records: self.registry.iter().count(),
        }
    }

    /// Wakes the driver if it sleeps, or is about to, waiting for `record`,
    /// the caller's own: the read side's only contact with the writer side.
    /// Call after storing the record word and the reader's fence
    /// (`fence::light()` for memb, `fence::full()` for qsbr).
    #[inline(always)]
    pub(crate) fn wake_driver_if_flagged(&self, record: &Record) {
        // Relaxed: the caller's fence (light() or full()) orders this load
        // after its word store;
        // it pairs with the engine's fence (`ReaderFence::engine_side`:
        // heavy() for memb, full() for qsbr) between the driver's stores of
        // WAITS_FOR_HOLDOUTS and of this flag and its recheck
        // (`sleep_for_holdouts`, `fqs_wait`): either the recheck sees the
        // word, or this load sees the flag and the CAS below the waiting
        // state (or a later one). A record's own line: readers that the
        // driver does not wait for read no shared line here.
        if record.wake_driver.load(Relaxed) != 0 {
            self.wake_driver(record);
        }
    }

    #[cold]
    #[inline(never)]
    fn wake_driver(&self, record: &Record) {
        // The clear may land on a later grace period's flag for this
        // record: a qsbr thread that reported for grace period N, found its
        // flag and was preempted here may be a holdout of N + 1 by the time
        // it clears, its report of N too old, and the driver of N + 1 asleep
        // counting on this flag, which the clear erases. The fences above do
        // not cover that: this thread's fence preceded the driver's. So the
        // clear is a swap, Acquire, paired with the Release store of the flag
        // (`flag_holdouts`): a swap that erases a later flag reads it, so
        // the driver's `WAITS_FOR_HOLDOUTS` store, before that flag store,
        // happens before the CAS below, which then finds the driver waiting
        // (or awake again: it stores the flag afresh at each sleep, which
        // this swap either erases, and reads, or leaves for this thread's
        // next report) and wakes it. (memb needs none of this: an unlock is
        // outside every section, and a grace period that starts later never
        // counts the thread a holdout.)
        record.wake_driver.swap(0, Acquire);
        // Only one holdout needs to wake it; the CAS keeps the others from
        // making the system call too. Relaxed: the swap above and the fences
        // order it.
        if self
            .driver_wait
            .word
            .compare_exchange(WAITS_FOR_HOLDOUTS, DRIVER_RUNNING, Relaxed, Relaxed)
            .is_ok()
        {
            futex::wake_one(&self.driver_wait.word);
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

    /// `get_state_synchronize_rcu()`: the grace period whose completion
    /// means a full grace period has elapsed since this call, the one a
    /// `synchronize` caller would wait for now. Starts nothing.
    pub(crate) fn poll_target(&self) -> u64 {
        // An RMW that changes nothing, AcqRel as `synchronize`'s `fetch_or`:
        // every write of `gp_state` is an RMW, so the CAS that starts the
        // target reads this RMW's release sequence, and the caller's earlier
        // updates happen before that grace period's init publishes it, as
        // for a `synchronize` caller (see the module docs).
        let old = self.callers.gp_state.fetch_or(0, AcqRel);
        (old >> STARTED_SHIFT) + 1
    }

    /// `poll_state_synchronize_rcu()`: whether grace period `target` has
    /// completed.
    #[inline]
    pub(crate) fn poll_done(&self, target: u64) -> bool {
        // Acquire pairs with the Release store of `completed` in
        // `run_grace_period`: the sections that grace period waited for
        // happen before the caller acts on a `true`.
        self.callers.completed.load(Acquire) >= target
    }

    /// Asks for grace period `target` to run adaptively with quick QS, waking a
    /// driver that sleeps in a fixed-interval wait.
    fn request_expedited(&self, target: u64) {
        // A store-buffering pair with `fqs_wait`, which stores `driver_wait`,
        // issues `fence::full()` and loads `expedite`: with our fence between
        // this RMW and the load of `driver_wait` below, either the driver
        // sees the request or we see it waiting and wake it. The accesses
        // are SeqCst as well, which in C++ would be enough on its own, but
        // loom checks SeqCst accesses only as Acquire/Release and reported
        // a lost wake-up without the fences (a false one). Under loom the
        // fences are `membarrier-sim`'s SeqCst RMW of one word, stronger than
        // C++ fences but a sound model of this pair, which its model
        // (`an_expedited_caller_wakes_a_driver_waiting_for_the_fqs_timer`)
        // checks. Both sides are slow paths: a caller that waits anyway, a
        // driver about to sleep.
        self.callers.expedite.fetch_max(target, SeqCst);
        fence::full();
        if self.driver_wait.word.load(SeqCst) != DRIVER_RUNNING
            && self.driver_wait.word.swap(DRIVER_RUNNING, SeqCst) != DRIVER_RUNNING
        {
            futex::wake_one(&self.driver_wait.word);
        }
    }

    /// Runs grace periods until `target` has completed, then gives up the
    /// `DRIVER` bit: to the worker if a grace period is needed and callers
    /// crowd the engine (`crowded`), else clears it (waking a waiter to take
    /// it if a grace period is needed).
    fn drive(&'static self, target: u64, own: &'static Record) {
        loop {
            // Acquire pairs with the callers' AcqRel `fetch_or` in
            // `synchronize` (its Release half); the CAS in `start_and_run`
            // then confirms `state`.
            let state = self.callers.gp_state.load(Acquire);
            // Relaxed: only the driver (us) stores `completed`.
            let completed = self.callers.completed.load(Relaxed);
            if completed >= target {
                if state & NEED_GP != 0 && self.crowded() && self.hand_over_to_worker(own) {
                    return;
                }
                // AcqRel, its Release half pairing with the Acquire half of
                // the RMW that next takes `DRIVER` (a caller's `fetch_or` in
                // `synchronize` or `wait_or_take_over`): the grace periods we
                // completed happen before the ones it drives.
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
        // Relaxed: only the `DRIVER` holder stores `completed`, and taking
        // the bit ordered the previous holder's stores before this load.
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
        // `wait_or_take_over` (`wait_for_gp`'s): the readers' sections this grace period waited for
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
        // `wait_or_take_over`.
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
        // `wait_or_take_over`: the woken waiter sees `DRIVER` clear.
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
            // Relaxed: only a cheap look before the RMW below, which decides.
            if self.callers.gp_state.load(Relaxed) & DRIVER == 0 {
                // AcqRel, as every RMW that takes `DRIVER`: Acquire pairs with
                // the AcqRel `fetch_and(!DRIVER)` by which `drive` or
                // `drive_for_others` gave the bit up, so the grace periods
                // that holder completed happen before the ones we drive.
                if self.callers.gp_state.fetch_or(DRIVER, AcqRel) & DRIVER == 0 {
                    return true;
                }
                continue;
            }
            if spin.again() {
                spin_loop();
                continue;
            }
            // Relaxed/Relaxed: nothing is published through `SLEEPERS`. RMWs
            // on the eventcount are totally ordered: a completion or hand-off
            // after this CAS sees the bit and wakes us, one before it fails
            // the CAS (or the futex wait's own compare); what we read once
            // woken is ordered by the Acquire load at the top of the loop.
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
            futex::wait(self.gp_done(target), events | SLEEPERS, EVENTCOUNT_RECHECK);
            self.callers.sleeping.fetch_sub(1, Relaxed);
        }
    }
}

/// Under loom: makes every driver of either flavor that finds a grace period
/// needed run the worker's part itself (`on`), or wake a waiter to take over
/// as without a worker thread (`off`, the default), so that models can cover
/// both. Call it inside the model: the setting lasts one execution.
#[cfg(loom)]
pub fn loom_worker_inline(on: bool) {
    // Relaxed: a plain `std` setting, made before the model's threads
    // start, which read it after their spawn.
    crate::memb::engine().loom_worker_inline.store(on, Relaxed);
    crate::qsbr::engine().loom_worker_inline.store(on, Relaxed);
}

/// Under loom: makes fixed-interval FQS waits that only a timer ends, the
/// one before scan 1 (`before_scan_1`) and, with quick QS off, the one that
/// gives the driver its own quiescent state (`drivers_own`), end only when an
/// expedited caller asks for their grace period, instead of after a yield
/// (both `false`, the default). A model that turns one on checks the
/// handshake of `request_expedited` with `fqs_wait` there: a lost wake-up is
/// a deadlock that loom reports, where with a real timer it would cost the
/// rest of the interval. Every grace period such a model runs must therefore
/// be one an expedited caller asks for. The two are separate switches
/// because an expedite that ends the first wait also runs the rest of the
/// grace period adaptively, so with both on the driver's own wait is never
/// reached. Call it inside the model: the setting lasts one execution.
#[cfg(loom)]
pub fn loom_fqs_timer_never_fires(before_scan_1: bool, drivers_own: bool) {
    use grace_period::FqsWait;
    let waits = (u32::from(before_scan_1) * FqsWait::BeforeScan1 as u32)
        | (u32::from(drivers_own) * FqsWait::AfterScan as u32);
    // Relaxed: as in `loom_worker_inline`.
    crate::memb::engine()
        .loom_timerless_waits
        .store(waits, Relaxed);
    crate::qsbr::engine()
        .loom_timerless_waits
        .store(waits, Relaxed);
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
}
