//! The grace-period worker: a thread that drives grace periods back to back
//! while callers keep asking for them, so that no caller has to.
//!
//! Kernel counterpart: the grace-period kthread (`rcu_gp_kthread()`), which
//! runs every grace period. Here callers drive their own grace periods while
//! they come alone (a lone `synchronize_rcu()` on an idle machine costs no
//! wake-up at all); the worker only takes over when a driver finishes its own
//! grace period, finds another one needed (`NEED_GP`), and finds more than
//! two waiters per CPU asleep (for memb with `membarrier()` fences on fewer
//! than 4 CPUs: two waiters while readers have held grace periods up of
//! late, else more than one per CPU; `Engine::crowded`); with fewer, the
//! driver hands `DRIVER` to one of the waiters instead (`Engine::hand_off`).
//! Its thread starts on the first hand-over, or before it when a program calls
//! `start_grace_period_worker()` (`GpWorker::start`).
//!
//! # Invariants
//!
//! - The worker drives only while it holds the `DRIVER` bit of the engine's
//!   `gp_state`. It gets the bit by a hand-over: the caller that holds it
//!   stores [`HANDED_OVER`] into [`GpWorker::handover`] (Release) instead of
//!   clearing the bit, and wakes the worker, which consumes the hand-over with
//!   an Acquire swap back to [`IDLE`]; everything the driver did happens before
//!   the worker drives. The only other way is its own exit path: having
//!   cleared the bit, it takes it back with an RMW if a caller asked meanwhile
//!   and nobody else took it (`Engine::drive_for_others`).
//! - One worker thread per engine: a start claims `thread` from
//!   `NOT_STARTED` to `STARTING` before it spawns, and a hand-over that
//!   finds another thread's start under way goes without the worker, as
//!   after a refusal.
//! - At most one hand-over is pending: only a `DRIVER` holder hands over, and
//!   the worker consumes the hand-over before it drives and releases the bit
//!   only after it stops driving.
//! - The worker is not a caller: no caller waits for more grace periods than
//!   its own (plus the one in progress when it arrived), however long the worker
//!   keeps driving.
//! - The worker never enters a read-side section, so it holds no record in any
//!   registry: there is nothing of it for a scan to wait for. Its quiescent
//!   state as a driver follows the same rule as a calling driver's (quick QS,
//!   or its first wait after a scan), so the seed's comparison is unchanged.
//!
//! Under loom there is no worker thread: a driver that finds `NEED_GP` either
//! wakes a waiter to take `DRIVER` over (`Engine::hand_off`, as when no thread
//! can be started) or runs the worker's part itself, as a model chooses
//! (`rcu_lite::loom_worker_inline`); the models cover both.

use crate::engine::Engine;
use crate::futex;
use std::sync::atomic::Ordering::{Acquire, Relaxed, Release};
use std::sync::atomic::{AtomicU8, AtomicU32};

/// `handover`: the worker is not driving and no hand-over is pending.
pub(crate) const IDLE: u32 = 0;
/// `handover`: a driver handed its `DRIVER` bit to the worker.
pub(crate) const HANDED_OVER: u32 = 1;

/// One engine's worker: its hand-over word and whether it started.
pub(crate) struct GpWorker {
    /// [`IDLE`] or [`HANDED_OVER`]: the futex word the worker parks on.
    handover: AtomicU32,
    /// [`NOT_STARTED`], [`STARTING`] or [`RUNNING`]. A start claims it
    /// from `NOT_STARTED` with a CAS, so that one thread at a time spawns:
    /// a `DRIVER` holder in [`hand_over`](GpWorker::hand_over), or any
    /// thread in [`start`](GpWorker::start). The spawner puts it back to
    /// `NOT_STARTED` if the system refused the thread; the worker itself
    /// stores `RUNNING` once it runs, past std's thread start-up. Relaxed
    /// but for that store and [`start`](GpWorker::start)'s load: it
    /// publishes nothing the worker reads (the hand-over word does that).
    thread: AtomicU8,
    /// When (milliseconds of [`clock_ms`], at least 1) the system last
    /// refused to start the thread; 0 if it never did. Drivers then hand over
    /// to waiters, as under loom, and try again [`RETRY_MS`] later rather
    /// than on every hand-over (or never again: a refusal is often for
    /// the moment, the process short of threads or memory). Only a `DRIVER`
    /// holder touches it.
    refused_ms: AtomicU32,
    /// Tests: makes every start of the thread fail, and counts the tries.
    #[cfg(test)]
    fail_spawn: std::sync::atomic::AtomicBool,
    #[cfg(test)]
    spawn_tries: AtomicU32,
}

/// `GpWorker::thread`: no worker thread yet (or none in this fork child).
const NOT_STARTED: u8 = 0;
/// `GpWorker::thread`: a thread is spawning the worker thread, or spawned
/// it and it has not run yet.
const STARTING: u8 = 1;
/// `GpWorker::thread`: the worker thread runs.
const RUNNING: u8 = 2;

/// What [`GpWorker::try_spawn`] did.
enum Spawn {
    /// Spawned the worker thread.
    Spawned,
    /// Another thread holds the start: `thread` was `STARTING` or `RUNNING`.
    Busy,
    /// The system refused the thread: `thread` is back to `NOT_STARTED`.
    Refused,
}

/// How long drivers go without a worker after the system refused to start
/// its thread, before one tries again.
const RETRY_MS: u32 = 1000;

/// The monotonic clock (`CLOCK_MONOTONIC`) in milliseconds, modulo 2^32 (the
/// wrapping comparison in `hand_over` allows for that; it takes 0 as 1 on
/// both sides, as 0 stands for no refusal). Not `Instant` against a start
/// time kept in a `OnceLock`: a fork while another thread initialises one
/// leaves the child a lock that blocks (see `engine/crowding.rs`,
/// `available_cpus`); `clock_gettime` takes no lock. Not the wall clock
/// either, which can be set back (before 1970 it would read as one
/// constant and keep a refusal in force until it passed 1970 again).
fn clock_ms() -> u32 {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `now` is a valid, writable timespec for the call's duration.
    // The call cannot fail: it errs only for an unknown clock or a bad
    // pointer, and Linux always has CLOCK_MONOTONIC.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut now) };
    (now.tv_sec as u64)
        .wrapping_mul(1000)
        .wrapping_add(now.tv_nsec as u64 / 1_000_000) as u32
}

impl GpWorker {
    /// A worker that has not started.
    pub(crate) const fn new() -> GpWorker {
        GpWorker {
            handover: AtomicU32::new(IDLE),
            thread: AtomicU8::new(NOT_STARTED),
            refused_ms: AtomicU32::new(0),
            #[cfg(test)]
            fail_spawn: std::sync::atomic::AtomicBool::new(false),
            #[cfg(test)]
            spawn_tries: AtomicU32::new(0),
        }
    }

    /// In a child of `fork()`, which has no worker thread: the next hand-over
    /// starts one, even if the parent's last start was refused less than
    /// [`RETRY_MS`] before the fork.
    pub(crate) fn forget_thread_after_fork(&self) {
        // Relaxed: the child's only thread is the caller.
        self.thread.store(NOT_STARTED, Relaxed);
        self.handover.store(IDLE, Relaxed);
        self.refused_ms.store(0, Relaxed);
    }

    /// Hands the caller's `DRIVER` bit of `engine` (whose worker this is) to
    /// the worker, starting it on first use. Returns `false`, with the bit
    /// still the caller's, if no worker thread could be started, or another
    /// thread's start of it is under way.
    #[cold]
    pub(crate) fn hand_over(&'static self, engine: &'static Engine) -> bool {
        // Relaxed, for `thread` see its field; for `refused_ms`: only the
        // DRIVER holder (us) touches it, and the RMWs on `gp_state` that
        // pass the bit on order its accesses.
        if self.thread.load(Relaxed) != RUNNING {
            let refused = self.refused_ms.load(Relaxed);
            if refused != 0 && clock_ms().max(1).wrapping_sub(refused) < RETRY_MS {
                return false;
            }
            match self.try_spawn(engine) {
                // Handed over below: the worker takes it once it runs.
                Spawn::Spawned => {}
                // Another start under way: without a worker this time, as
                // after a refusal, unless it finished meanwhile.
                Spawn::Busy => {
                    if self.thread.load(Relaxed) != RUNNING {
                        return false;
                    }
                }
                Spawn::Refused => {
                    self.refused_ms.store(clock_ms().max(1), Relaxed);
                    return false;
                }
            }
        }
        // Release pairs with the Acquire swap in `park_and_drive`: the grace
        // periods this driver completed happen before the worker's.
        self.handover.store(HANDED_OVER, Release);
        futex::wake_one(&self.handover);
        true
    }

    /// Starts the worker thread now, if it does not run yet, rather than on
    /// the first crowded grace period (`start_grace_period_worker`). Returns
    /// whether it runs: false if the system refused the thread. Returns only
    /// once the worker runs (so that a `fork()` right after cannot copy
    /// std's start-up of it half done), waiting for another thread's start
    /// under way, which may yet be refused.
    pub(crate) fn start(&'static self, engine: &'static Engine) -> bool {
        let mut rounds = 0;
        loop {
            // Acquire pairs with the worker's Release store of RUNNING: its
            // start-up happens before our return.
            match self.thread.load(Acquire) {
                RUNNING => return true,
                STARTING => crate::sync::wait_for_a_start(&mut rounds),
                _ => {
                    if let Spawn::Refused = self.try_spawn(engine) {
                        return false;
                    }
                }
            }
        }
    }

    /// Claims the start (`NOT_STARTED` to `STARTING`) and spawns the worker
    /// thread, which stores `RUNNING` once it runs.
    fn try_spawn(&'static self, engine: &'static Engine) -> Spawn {
        // Relaxed, both: see `thread`.
        if self
            .thread
            .compare_exchange(NOT_STARTED, STARTING, Relaxed, Relaxed)
            .is_err()
        {
            return Spawn::Busy;
        }
        if self.spawn(engine) {
            Spawn::Spawned
        } else {
            self.thread.store(NOT_STARTED, Relaxed);
            Spawn::Refused
        }
    }

    /// Starts the worker thread; false if the system refused.
    fn spawn(&'static self, engine: &'static Engine) -> bool {
        #[cfg(test)]
        {
            // Relaxed, both: a test's counter and switch, which the test
            // thread itself reads and sets between its calls.
            self.spawn_tries.fetch_add(1, Relaxed);
            if self.fail_spawn.load(Relaxed) {
                return false;
            }
        }
        let name = format!("rcu-lite-{}-gp", engine.reader_fence.flavor_name());
        // With the process's signals blocked (see `futex_word::thread_start`).
        futex_word::thread_start::with_signals_blocked(|| {
            std::thread::Builder::new()
                .name(name)
                .spawn(move || self.park_and_drive(engine))
        })
        .is_ok()
    }

    /// The worker thread: park until a driver hands over, then drive until no
    /// grace period is needed.
    fn park_and_drive(&self, engine: &'static Engine) -> ! {
        futex_word::thread_start::default_timer_slack();
        // Release pairs with the Acquire load in `start`.
        self.thread.store(RUNNING, Release);
        loop {
            // Acquire pairs with the Release store in `hand_over`.
            if self.handover.swap(IDLE, Acquire) == HANDED_OVER {
                engine.drive_for_others(engine.worker_record());
            } else {
                futex::wait(&self.handover, IDLE, None);
            }
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::{NOT_STARTED, RETRY_MS, RUNNING, clock_ms};
    use crate::engine::{Engine, ReaderFence};
    use std::sync::atomic::Ordering::Relaxed;

    /// When the system refuses the worker thread, drivers go without it
    /// (hand-over returns false) and try again only once per `RETRY_MS`,
    /// neither on every hand-over nor never again. (Catches a refusal kept
    /// for good, as before 2026-12-05: the try after the period never comes;
    /// and one forgotten at once: every hand-over tries.)
    #[test]
    fn a_refused_worker_thread_is_tried_again_only_after_a_while() {
        let engine: &'static Engine = Box::leak(Box::new(Engine::new(ReaderFence::Light)));
        let worker = &engine.gp_worker;
        // Relaxed, here and below: the hand-overs that read these fields
        // run on this thread, and no worker thread ever starts.
        worker.fail_spawn.store(true, Relaxed);
        let began = std::time::Instant::now();
        for _ in 0..100 {
            assert!(
                !worker.hand_over(engine),
                "a hand-over to a refused worker succeeded"
            );
        }
        let elapsed_ms = began.elapsed().as_millis();
        let tries = worker.spawn_tries.load(Relaxed);
        // A period measured in whole milliseconds may be up to 1 ms short.
        let allowed = 1 + elapsed_ms / u128::from(RETRY_MS - 1);
        assert!(
            tries >= 1 && u128::from(tries) <= allowed,
            "100 hand-overs in {elapsed_ms} ms tried to start the refused worker {tries} times \
             (at most {allowed} expected)"
        );
        // As if `RETRY_MS` had passed: the next hand-over tries again.
        worker
            .refused_ms
            .store(clock_ms().wrapping_sub(RETRY_MS).max(1), Relaxed);
        assert!(!worker.hand_over(engine));
        assert_eq!(
            worker.spawn_tries.load(Relaxed),
            tries + 1,
            "no new try to start the worker once the retry period had passed"
        );
        // A fork child has its own thread limits: it does not keep the
        // parent's refusal, and its next hand-over tries at once.
        worker.forget_thread_after_fork();
        assert!(!worker.hand_over(engine));
        assert_eq!(
            worker.spawn_tries.load(Relaxed),
            tries + 2,
            "a fork child kept the parent's refusal of the worker thread"
        );
    }

    /// `start` spawns the worker thread once, however many threads ask at
    /// the same time, and every one of them returns once it runs. (Catches a
    /// start without the claim: two threads both spawn.)
    #[test]
    fn concurrent_starts_spawn_one_worker_thread() {
        let engine: &'static Engine = Box::leak(Box::new(Engine::new(ReaderFence::Light)));
        let worker = &engine.gp_worker;
        let barrier = std::sync::Barrier::new(4);
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    barrier.wait();
                    assert!(worker.start(engine), "a start of the worker failed");
                    // Relaxed: `start` itself read RUNNING on this thread.
                    assert_eq!(worker.thread.load(Relaxed), RUNNING);
                });
            }
        });
        assert!(worker.start(engine));
        // Relaxed: the counter of the starts above, all joined.
        assert_eq!(
            worker.spawn_tries.load(Relaxed),
            1,
            "the worker thread was spawned more than once"
        );
    }

    /// A start the system refuses returns false and leaves the worker not
    /// started, for the next start or hand-over to try again; it does not
    /// count as a driver's refusal, which would keep drivers from trying for
    /// `RETRY_MS`.
    #[test]
    fn a_refused_start_leaves_the_worker_to_the_next_try() {
        let engine: &'static Engine = Box::leak(Box::new(Engine::new(ReaderFence::Light)));
        let worker = &engine.gp_worker;
        // Relaxed, here and below: the test thread alone uses this engine.
        worker.fail_spawn.store(true, Relaxed);
        assert!(!worker.start(engine), "a refused start reported a worker");
        assert_eq!(worker.thread.load(Relaxed), NOT_STARTED);
        assert_eq!(worker.refused_ms.load(Relaxed), 0);
        worker.fail_spawn.store(false, Relaxed);
        assert!(worker.start(engine), "the start after a refusal failed");
        assert_eq!(worker.spawn_tries.load(Relaxed), 2);
    }
}
