//! The grace-period worker: a thread that drives grace periods back to back
//! while callers keep asking for them, so that no caller has to.
//!
//! Kernel counterpart: the grace-period kthread (`rcu_gp_kthread()`), which
//! runs every grace period. Here callers drive their own grace periods while
//! they come alone (a lone `synchronize_rcu()` on an idle machine costs no
//! wake-up at all); the worker only takes over when a driver finishes its own
//! grace period, finds another one needed (`NEED_GP`), and finds more than
//! two waiters per CPU asleep (for memb on fewer than 4 CPUs, two waiters:
//! `Engine::crowded`); with fewer, the driver
//! hands `DRIVER` to one of the waiters instead (`Engine::hand_off`).
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
    /// [`NOT_STARTED`], [`RUNNING`], or [`REFUSED`] (the system refused a
    /// thread: drivers then hand over to waiters, as under loom). Only a
    /// `DRIVER` holder reads or writes it, so starting needs no lock.
    thread: AtomicU8,
}

/// `GpWorker::thread`: no worker thread yet (or none in this fork child).
const NOT_STARTED: u8 = 0;
/// `GpWorker::thread`: the worker thread runs.
const RUNNING: u8 = 1;
/// `GpWorker::thread`: the system refused to start it.
const REFUSED: u8 = 2;

impl GpWorker {
    /// A worker that has not started.
    pub(crate) const fn new() -> GpWorker {
        GpWorker {
            handover: AtomicU32::new(IDLE),
            thread: AtomicU8::new(NOT_STARTED),
        }
    }

    /// In a child of `fork()`, which has no worker thread: the next hand-over
    /// starts one.
    pub(crate) fn forget_thread_after_fork(&self) {
        // Relaxed: the child's only thread is the caller.
        self.thread.store(NOT_STARTED, Relaxed);
        self.handover.store(IDLE, Relaxed);
    }

    /// Hands the caller's `DRIVER` bit of `engine` (whose worker this is) to
    /// the worker, starting it on first use. Returns `false`, with the bit
    /// still the caller's, if no worker thread could be started.
    #[cold]
    pub(crate) fn hand_over(&'static self, engine: &'static Engine) -> bool {
        // Relaxed: only the DRIVER holder (us) touches `thread`, and the RMWs
        // on `gp_state` that pass the bit on order its accesses.
        match self.thread.load(Relaxed) {
            RUNNING => {}
            REFUSED => return false,
            _ => {
                let spawned = std::thread::Builder::new()
                    .name("rcu-lite-gp".to_owned())
                    .spawn(move || self.park_and_drive(engine))
                    .is_ok();
                self.thread
                    .store(if spawned { RUNNING } else { REFUSED }, Relaxed);
                if !spawned {
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

    /// The worker thread: park until a driver hands over, then drive until no
    /// grace period is needed.
    fn park_and_drive(&self, engine: &'static Engine) -> ! {
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
