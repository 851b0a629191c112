//! How crowded `synchronize_rcu()` is, and what follows from it: how long a
//! waiting caller spins before it sleeps (`CallerSpin`), and when a driver
//! hands `DRIVER` to the grace-period worker (`Engine::crowded`).
//!
//! Kernel counterparts: none exactly; the spin is that of liburcu's
//! `urcu_adaptative_busy_wait()` and the kernel's optimistic spinning, and
//! the worker plays the grace-period kthread, which the kernel always uses.
//!
//! Invariants: everything here is a heuristic. `CallerShared::sleeping`,
//! `waiting` and `gps_since_holdout` are plain counters that steer spinning
//! and the hand-over; no data depends on them, so every access is Relaxed,
//! and any value they hold leaves every grace period correct (only slower).

use super::Engine;
#[cfg(not(loom))]
use std::sync::atomic::AtomicU32 as ConfigU32;
use std::sync::atomic::Ordering::Relaxed;
#[cfg(not(loom))]
use std::time::{Duration, Instant};

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

impl Engine {
    /// Whether more callers sleep waiting than `WORKER_CALLERS_PER_CPU` per
    /// CPU (for memb's `membarrier()` grace periods on fewer than
    /// `LONG_SPIN_MIN_CPUS` CPUs, fewer: see `worker_threshold_of`). Then the
    /// machine is oversubscribed with callers: a driver that returns is soon
    /// preempted by the waiters it woke, and a worker that keeps driving
    /// serves them with fewer wake-ups. With fewer callers a hand-over would
    /// add a wake-up of the worker to every grace period (the calling driver
    /// comes back at once and drives the next one itself).
    pub(super) fn crowded(&self) -> bool {
        // Relaxed: a model's switch, set before its threads start.
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
    pub(super) fn note_holdouts(&self, any_holdout: bool) {
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
pub(super) const HOLDOUT_MEMORY_GPS: u32 = 1024;

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
pub(super) struct CallerSpin<'e> {
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
    pub(super) fn new(engine: &'e Engine) -> CallerSpin<'e> {
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
    pub(super) fn again(&mut self) -> bool {
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
/// here each compute the count for their own affinity, and the last store
/// stays (docs/rcu-lite.md: the count is read once, with a caller's
/// affinity).
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

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::engine::ReaderFence;
    use membarrier_sim::fence;

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
        // The reader leaves once a scan has noted it (or after a while, for
        // the assertion below to fail), not after a fixed time that a
        // preempted synchronize_rcu could outlast.
        let release = std::thread::spawn(move || {
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
            // Relaxed: a heuristic counter; the release publishes nothing
            // the test reads through it.
            while engine.callers.gps_since_holdout.load(Relaxed) >= HOLDOUT_MEMORY_GPS
                && std::time::Instant::now() < deadline
            {
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
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
