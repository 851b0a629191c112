//! One grace period, driven by the `DRIVER` holder: init, the quick QS
//! report, FQS scans and the wait for holdouts.
//!
//! Kernel counterparts: `rcu_gp_init()`, the seed's patch (`rcu_qs()` and
//! `rcu_report_qs_rdp()` for the grace-period kthread at the end of init),
//! `rcu_gp_fqs_loop()` and `rcu_gp_fqs_check_wake()`.
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
//! 2. **quick QS** (the seed's patch, [`GpConfig::quick_qs`](crate::config::GpConfig::quick_qs)): the driver
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
//! futex word: the driver stores `WAITS_FOR_HOLDOUTS`, sets the `wake_driver`
//! flag of each holdout's record, issues its fence (`fence::heavy()` or
//! `fence::full()`, as at init), rechecks, and sleeps. A reader that leaves
//! its section (or reports a quiescent state, or goes offline) stores its
//! word, issues its own fence, and loads its own record's flag; the two
//! fences form a store-buffering pair, so either the driver's recheck sees
//! the reader's word or the reader sees its flag (and its CAS the driver
//! waiting) and wakes it. The reader's check is one load of its own line
//! and a predictable branch. Only holdouts are flagged (the kernel's
//! `rcu_read_unlock_special()` runs only for a flagged task): when
//! `driver_wait` itself was the flag, every busy reader's next unlock woke
//! the driver, which rechecked, found the preempted holdout still inside,
//! and slept again behind another heavy fence, 19-30 times per grace
//! period with 16 writers and 4 busy readers on 2 vCPUs.
//!
//! [`Fqs::FixedInterval`]: the kernel's pacing: a timed wait before scan 1 and
//! between scans. A wait ends early only when every holdout has passed a
//! quiescent state and the driver has already been credited (the kernel's
//! `rcu_gp_fqs_check_wake()`). On an idle system with quick QS off, scan 1 finds
//! only the driver holding out and scan 2 credits it: two interval waits. With
//! quick QS on, scan 1 finds nobody: one wait. That is the seed's result. An
//! idle system has idle CPUs, here other registered threads outside their
//! sections; where the driver's thread is the only one holding a record (the
//! kernel's one-CPU system), quick QS leaves nothing to wait for, and the
//! grace period makes no FQS wait.
//!
//! An expedited caller ([`Engine::synchronize`] with `expedited`) records the
//! grace period it needs in `expedite` and wakes a driver sleeping in a fixed
//! interval wait; that grace period then runs adaptively with quick QS.

use super::stall::StallWatch;
use super::{DRIVER_RUNNING, Engine, ReaderFence, WAITS_FOR_HOLDOUTS, WAITS_FOR_TIMER};
use crate::config::Fqs;
use crate::futex;
use crate::record::{Record, Roster, is_quiescent_for, reader_word};
use crate::sync::spin_loop;
use membarrier_sim::fence;
use std::ptr;
use std::sync::atomic::Ordering::{Acquire, Relaxed, Release, SeqCst};
use std::time::Duration;
#[cfg(not(loom))]
use std::time::Instant;

/// Which fixed-interval FQS wait of a grace period `fqs_wait` runs (under
/// loom, a bit of `Engine::loom_timerless_waits`).
#[derive(Clone, Copy)]
pub(super) enum FqsWait {
    /// The wait between init and FQS scan 1 (`jiffies_till_first_fqs`).
    BeforeScan1 = 1,
    /// A wait after a scan: for holdouts, or, with quick QS off, the one
    /// that gives the driver its own quiescent state.
    AfterScan = 2,
}

/// Rechecks of the holdouts before the driver sleeps.
const HOLDOUT_SPINS: u32 = if cfg!(loom) { 1 } else { 200 };

/// The shortest first sleep of a fixed-interval FQS wait, however little of
/// its interval is left when it gets there (see `fqs_wait`): the kernel's
/// default timer slack, which
/// lengthens any shorter timed wait of a normal thread to about this anyway;
/// a real-time thread, which has no slack, sleeps as long, so that a reader
/// sharing its CPU runs for most of each round.
#[cfg(not(loom))]
const SHORTEST_FQS_SLEEP: Duration = Duration::from_micros(50);

impl Engine {
    /// Grace period `gp`, driven by the thread owning `own`.
    pub(super) fn grace_period(&self, gp: u64, own: &Record) {
        let config = self.config();
        // Relaxed: a hint that picks this grace period's pacing and publishes
        // no data. A request it misses is caught by `fqs_wait`'s fence
        // handshake with `request_expedited`; under adaptive FQS it would
        // only have credited the driver at init, which its first wait does.
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
        let mut watch = StallWatch::new();
        // jiffies_till_first_fqs. The driver sleeps, but no scan has sampled
        // it yet, so this sleep cannot count as its quiescent state. The
        // kernel's first wait ends early too once every CPU online at init
        // has reported (`rcu_gp_fqs_check_wake()`): here that can happen
        // only when the driver is credited and no other thread holds a
        // record (an exited thread is an offline CPU), the kernel's
        // one-CPU system, where the seed's patch leaves no FQS wait at all.
        // Any other registered thread is an idle CPU that only scan 1 credits.
        if let Fqs::FixedInterval(interval) = fqs
            && (driver_holdout || self.registry.others_hold_records(own))
            && self.fqs_wait(
                &mut holdouts,
                gp,
                interval,
                false,
                FqsWait::BeforeScan1,
                &mut watch,
            )
        {
            fqs = Fqs::Adaptive;
            driver_holdout = false;
        }

        // FQS scan 1, over the records in use (`Registry::refresh`, whose
        // load of the registry's change count, after init's fence, stands
        // where a walk's load of the list head stood).
        let mut scan = |record: &'static Record| {
            if ptr::eq(record, own) {
                return;
            }
            // Acquire pairs with the Release stores that end a section, report a
            // quiescent state or go offline: what the thread did before happens
            // before our return.
            if !is_quiescent_for(record.word.load(Acquire), gp) {
                holdouts.push(record);
            }
        };
        match self.roster.try_lock() {
            Ok(mut roster) => {
                self.registry
                    .refresh(&mut roster)
                    .iter()
                    .copied()
                    .for_each(&mut scan);
            }
            // Poisoned: a panic inside `refresh` (none is expected there)
            // may have left it half built. Walk the list, and rebuild next
            // time.
            Err(std::sync::TryLockError::Poisoned(poisoned)) => {
                *poisoned.into_inner() = Roster::new();
                self.roster.clear_poison();
                self.registry.iter().for_each(&mut scan);
            }
            // A fork child whose parent's driver held the roster.
            Err(std::sync::TryLockError::WouldBlock) => self.registry.iter().for_each(&mut scan),
        }

        #[cfg(not(loom))]
        self.note_holdouts(!holdouts.is_empty());

        while driver_holdout || !holdouts.is_empty() {
            match fqs {
                Fqs::Adaptive => {
                    // The driver waits from here on: a quiescent state.
                    driver_holdout = false;
                    self.wait_adaptive(&mut holdouts, gp, &mut watch);
                }
                Fqs::FixedInterval(interval) => {
                    // Early wake only if the driver is already credited: its own
                    // sleep is seen by the next scan, not by a holdout's wake-up.
                    let expedited = self.fqs_wait(
                        &mut holdouts,
                        gp,
                        interval,
                        !driver_holdout,
                        FqsWait::AfterScan,
                        &mut watch,
                    );
                    // The next FQS scan: the driver slept since the last one.
                    driver_holdout = false;
                    recheck(&mut holdouts, gp);
                    watch.check(&holdouts, gp, self.flavor_name());
                    if expedited {
                        fqs = Fqs::Adaptive;
                    }
                }
            }
        }
    }

    /// The flavor this engine serves, for messages.
    fn flavor_name(&self) -> &'static str {
        match self.reader_fence {
            ReaderFence::Light => "memb",
            ReaderFence::Full => "qsbr",
        }
    }

    /// Rechecks `holdouts` until each has passed a quiescent state: spins, then
    /// sleeps until one of them wakes the driver.
    fn wait_adaptive(&self, holdouts: &mut Vec<&'static Record>, gp: u64, watch: &mut StallWatch) {
        let mut spins = 0;
        let mut slept = false;
        loop {
            recheck(holdouts, gp);
            if holdouts.is_empty() {
                return;
            }
            if slept {
                // The stall watch looks again once the driver wakes with
                // holdouts left.
                slept = false;
                watch.check(holdouts, gp, self.flavor_name());
            }
            if spins < HOLDOUT_SPINS {
                spins += 1;
                spin_loop();
                continue;
            }
            spins = 0;
            // The stall watch is armed here, where the driver would sleep: a
            // grace period whose holdouts leave while it spins never reads
            // the clock for it.
            self.sleep_for_holdouts(holdouts, gp, watch.sleep_limit());
            slept = true;
        }
    }

    /// Publishes `WAITS_FOR_HOLDOUTS`, rechecks, and sleeps until a holdout
    /// wakes the driver, unless the recheck emptied `holdouts`.
    fn sleep_for_holdouts(
        &self,
        holdouts: &mut Vec<&'static Record>,
        gp: u64,
        limit: Option<Duration>,
    ) {
        // The pairing with the readers is the engine's fence below
        // (`ReaderFence::engine_side`: `heavy()` for memb, `full()` for
        // qsbr). SeqCst pairs with
        // nothing here: unlike `fqs_wait`, this sleep loads no `expedite`
        // (its grace period already runs adaptively), so it takes no part in
        // `request_expedited`'s handshake; a request that finds this state
        // only wakes the driver, which rechecks and sleeps again.
        self.driver_wait.word.store(WAITS_FOR_HOLDOUTS, SeqCst);
        flag_holdouts(holdouts);
        // Pairs with the readers' fence between a word store and their load
        // of their flag (`wake_driver_if_flagged`).
        self.reader_fence.engine_side();
        recheck(holdouts, gp);
        if !holdouts.is_empty() {
            // `limit`: until the stall watch's next warning is due.
            futex::wait(&self.driver_wait.word, WAITS_FOR_HOLDOUTS, limit);
        }
        // Relaxed: publishes nothing. A holdout's CAS or an expedited
        // caller's swap that reads it only skips a wake-up we no longer
        // need; the next sleep stores `WAITS_FOR_HOLDOUTS` (SeqCst) before
        // its fence and recheck.
        self.driver_wait.word.store(DRIVER_RUNNING, Relaxed);
    }

    /// One fixed-interval FQS wait of `interval`. Ends early if an expedited
    /// caller needs `gp` (returns `true`), or, when `early_wake`, once every
    /// holdout has passed a quiescent state. `which` tells a loom model's
    /// switch (`loom_fqs_timer_never_fires`) which wait this is.
    ///
    /// `watch` is armed at the grace period's first wait, and a wait with
    /// holdouts to watch (`early_wake`) wakes when its next warning is due
    /// and warns: an interval longer than the stall timeout (up to the 292
    /// years `configure` takes) would otherwise hold the warnings back to
    /// one per interval, or for good.
    #[allow(clippy::too_many_arguments)]
    fn fqs_wait(
        &self,
        holdouts: &mut Vec<&'static Record>,
        gp: u64,
        interval: Duration,
        early_wake: bool,
        which: FqsWait,
        watch: &mut StallWatch,
    ) -> bool {
        // Relaxed: statistics.
        self.fqs_waits.fetch_add(1, Relaxed);
        #[cfg(not(loom))]
        let _ = which;
        // Arms the watch (a clock read) at the first wait: the stall counts
        // from the grace period's start, not from its first scan.
        #[cfg(not(loom))]
        let _ = watch.sleep_limit();
        #[cfg(loom)]
        let _ = &watch;
        // Under loom the timer is a yield: time must not steer the model.
        // For the waits `loom_fqs_timer_never_fires` names there is no timer
        // at all: the loop below waits untimed, and only an expedited
        // caller's wake-up ends the wait. (Relaxed: a model's switch, set
        // before its threads start.)
        #[cfg(loom)]
        if !early_wake && self.loom_timerless_waits.load(Relaxed) & which as u32 == 0 {
            let _ = interval;
            crate::sync::yield_now();
            // SeqCst, besides the `fence::full()` pair: see `request_expedited`.
            return self.callers.expedite.load(SeqCst) >= gp;
        }
        #[cfg(not(loom))]
        let deadline = Instant::now() + interval;
        // Whether this wait has slept yet. It sleeps at least once, as the
        // kernel's grace-period kthread sleeps at least one jiffy between
        // FQS scans: an interval shorter than the way here (the scan, the
        // heavy fence below) would otherwise make the driver rescan a
        // holdout back to back, burning a CPU for as long as the reader's
        // section and, at SCHED_FIFO, keeping a reader that shares its CPU
        // from ever ending it.
        #[cfg(not(loom))]
        let mut slept = false;
        loop {
            if early_wake && holdouts.is_empty() {
                return false;
            }
            // Under loom no timer ends an early-wake wait, only the
            // holdouts' wake-ups: the handshake the models check, where a
            // lost wake-up is a deadlock (here it would cost the rest of
            // the interval).
            #[cfg(loom)]
            let left = {
                let _ = interval;
                None
            };
            #[cfg(not(loom))]
            let left = {
                let left = deadline.saturating_duration_since(Instant::now());
                if !slept {
                    // The first sleep is at least the shortest, whatever is
                    // left: nothing or a few nanoseconds left would make it
                    // no sleep for a real-time thread, which has no timer
                    // slack.
                    Some(left.max(SHORTEST_FQS_SLEEP))
                } else if left.is_zero() {
                    return false;
                } else {
                    Some(left)
                }
            };
            // After a scan, with its holdouts known (quick QS off, the
            // first such wait is not an early-wake one, but its holdouts are
            // there all the same): wake in time for the watch's next warning.
            // Before scan 1 no holdout is known, and nothing is capped: the
            // first warning comes no sooner than scan 1.
            #[cfg(not(loom))]
            let left = match (
                matches!(which, FqsWait::AfterScan),
                left,
                watch.sleep_limit(),
            ) {
                (true, Some(left), Some(limit)) => Some(left.min(limit)),
                (_, left, _) => left,
            };
            if early_wake {
                // Arms the holdouts' wake-ups; the expedite check follows
                // the SeqCst store inside.
                self.driver_wait.word.store(WAITS_FOR_HOLDOUTS, SeqCst);
                flag_holdouts(holdouts);
                // As in `sleep_for_holdouts`.
                self.reader_fence.engine_side();
                recheck(holdouts, gp);
                if holdouts.is_empty() {
                    // Relaxed: as in `sleep_for_holdouts`.
                    self.driver_wait.word.store(DRIVER_RUNNING, Relaxed);
                    return false;
                }
            } else {
                // SeqCst, besides the `fence::full()` pair: see
                // `request_expedited`.
                self.driver_wait.word.store(WAITS_FOR_TIMER, SeqCst);
            }
            // Pairs with the fence in `request_expedited`, between our
            // store of `driver_wait` above and this load (in the early-wake
            // case the engine-side fence sits there too, but this one keeps
            // the pair the same for both kinds of wait).
            fence::full();
            // SeqCst, besides the `fence::full()` pair: see `request_expedited`.
            if self.callers.expedite.load(SeqCst) >= gp {
                // Relaxed: as in `sleep_for_holdouts`.
                self.driver_wait.word.store(DRIVER_RUNNING, Relaxed);
                return true;
            }
            let state = if early_wake {
                WAITS_FOR_HOLDOUTS
            } else {
                WAITS_FOR_TIMER
            };
            futex::wait(&self.driver_wait.word, state, left);
            #[cfg(not(loom))]
            {
                slept = true;
            }
            // Relaxed: as in `sleep_for_holdouts`; the next round stores
            // its waiting state with SeqCst again.
            self.driver_wait.word.store(DRIVER_RUNNING, Relaxed);
            if early_wake {
                recheck(holdouts, gp);
            }
            if matches!(which, FqsWait::AfterScan) {
                // Names only holdouts still holding out: without an early
                // wake (quick QS off, the driver's own wait) the list is
                // rechecked here first, as `grace_period` does after the
                // wait anyway.
                if !early_wake {
                    recheck(holdouts, gp);
                }
                watch.check(holdouts, gp, self.flavor_name());
            }
        }
    }
}

/// Drops from `holdouts` every record that has passed a quiescent state,
/// clearing its wake-up flag if it is set: the driver no longer counts on it.
fn recheck(holdouts: &mut Vec<&'static Record>, gp: u64) {
    holdouts.retain(|record| {
        // Acquire pairs with the Release stores that end a section, report a
        // quiescent state or go offline.
        let holds = !is_quiescent_for(record.word.load(Acquire), gp);
        // Relaxed: only drivers store 1, and this driver no longer counts on
        // a record that passed a quiescent state for `gp` (an owner's racing
        // swap stores 0 too). The load spares the reader's line a write when
        // the flag was never set.
        if !holds && record.wake_driver.load(Relaxed) != 0 {
            record.wake_driver.store(0, Relaxed);
        }
        holds
    });
}

/// Asks each holdout to wake the driver when it passes a quiescent state.
/// Call after storing `WAITS_FOR_HOLDOUTS` and before the engine's fence.
fn flag_holdouts(holdouts: &[&'static Record]) {
    for record in holdouts {
        // Ordered before the recheck by the engine's fence that follows; see
        // `Engine::wake_driver_if_flagged`. Release pairs with the Acquire
        // swap in `Engine::wake_driver`: a holdout whose clear, left over
        // from an earlier grace period or an earlier sleep, erases this flag
        // read it, so it sees this sleep's `WAITS_FOR_HOLDOUTS` store (or a
        // later state) and wakes us. Stored at every sleep, even where a
        // load would find a flag still set: that 1 may be one a holdout's
        // swap has already erased unseen (nothing orders our load after the
        // swap), and skipping the store then leaves no flag for its next
        // report and no `WAITS_FOR_HOLDOUTS` its failed CAS had to see: a
        // qsbr holdout that reported too old a grace period while flagged,
        // whose CAS read the `DRIVER_RUNNING` of a wake by another holdout,
        // and the driver asleep for good (found in review, 2026-12-05; x86
        // and loom cannot show it). One store to the holdout's line per
        // sleep, beside a futex wait and the engine's fence.
        record.wake_driver.store(1, Release);
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::super::ReaderFence;
    use super::*;

    /// Only a record the driver flagged wakes it: a reader it does not wait
    /// for finds its own flag clear and leaves `driver_wait` alone (until
    /// 2026-12-05 every reader's unlock woke a sleeping driver); a flagged
    /// one clears its flag and hands the driver `DRIVER_RUNNING`.
    #[test]
    fn only_a_flagged_holdout_wakes_the_sleeping_driver() {
        let engine = Engine::new(ReaderFence::Light);
        let (holdout, bystander) = (engine.registry.acquire(), engine.registry.acquire());
        engine.driver_wait.word.store(WAITS_FOR_HOLDOUTS, Relaxed);
        flag_holdouts(&[holdout]);
        assert_eq!(holdout.wake_driver.load(Relaxed), 1);
        assert_eq!(bystander.wake_driver.load(Relaxed), 0);
        engine.wake_driver_if_flagged(bystander);
        assert_eq!(engine.driver_wait.word.load(Relaxed), WAITS_FOR_HOLDOUTS);
        engine.wake_driver_if_flagged(holdout);
        assert_eq!(engine.driver_wait.word.load(Relaxed), DRIVER_RUNNING);
        assert_eq!(holdout.wake_driver.load(Relaxed), 0);
    }

    /// A recheck drops the records that passed a quiescent state and clears
    /// their flags, so that their next unlock takes no slow path; a record
    /// still inside keeps its flag.
    #[test]
    fn a_recheck_clears_the_flags_of_the_holdouts_it_drops() {
        let engine = Engine::new(ReaderFence::Light);
        let (left, inside) = (engine.registry.acquire(), engine.registry.acquire());
        let gp = 4;
        // Both inside sections that began before grace period 4.
        left.word.store(reader_word(gp - 1), Relaxed);
        inside.word.store(reader_word(gp - 1), Relaxed);
        let mut holdouts = vec![left, inside];
        flag_holdouts(&holdouts);
        left.word.store(0, Relaxed);
        recheck(&mut holdouts, gp);
        assert_eq!(holdouts.len(), 1);
        assert!(ptr::eq(holdouts[0], inside));
        assert_eq!(left.wake_driver.load(Relaxed), 0);
        assert_eq!(inside.wake_driver.load(Relaxed), 1);
    }
}
