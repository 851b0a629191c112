//! `rcu-lite`'s writer side: swap a pointer, `memb::synchronize_rcu()`, free
//! the old value (as the liburcu peer does), with quick quiescent-state
//! reporting on (`rcu-lite`) and off (`rcu-lite-noqs`); and the same with
//! `qsbr::synchronize_rcu()` and qsbr readers (`rcu-lite-qsbr`), which
//! announce a quiescent state every 64 sections, as liburcu-qsbr's do.
//!
//! Each flavor's grace-period configuration is process-wide, so a run sets
//! it for its lifetime and restores the previous one when dropped.
//! Invariant: at most one run per flavor exists at a time
//! ([`ConfigurationLease`] makes a second wait for the first to go), so every
//! run measures with the configuration it asked for, and the one in place
//! before the first run is the one left after the last, however runs on
//! several threads interleave.

use super::published::Published;
use super::{FqsCounts, GracePeriod, IdleGate, Options, QSBR_SECTIONS_PER_QS, idle_wait};
use crate::registry::{Implementation, Origin};
use crate::start_gate::StartGate;
use rcu_lite::qsbr::{self, QsbrThread};
use rcu_lite::{Fqs, GpConfig, GpCounts, memb};
use std::hint::black_box;
use std::sync::atomic::{AtomicBool, Ordering::*};
use std::sync::{Condvar, Mutex, PoisonError};

/// `rcu-lite`.
pub(super) const RCU_LITE: Implementation<dyn GracePeriod, Options> = Implementation {
    name: "rcu-lite",
    summary: "rcu_lite memb: swap pointer + memb::synchronize_rcu + free (quick QS on; --fqs-interval-ms paces FQS)",
    origin: Origin::Workspace,
    make: |o| Ok(Box::new(RcuLite::new(true, o))),
};

/// `rcu-lite-noqs`.
pub(super) const RCU_LITE_NOQS: Implementation<dyn GracePeriod, Options> = Implementation {
    name: "rcu-lite-noqs",
    summary: "rcu-lite with quick QS off: the driver is credited only after it waits (the kernel before the seed's patch); compare with rcu-lite at --fqs-interval-ms 3 --idle-threads 1 (the seed's idle system; alone, quick QS makes no FQS wait), since under adaptive FQS its wait begins at once",
    origin: Origin::Workspace,
    make: |o| Ok(Box::new(RcuLite::new(false, o))),
};

/// `rcu-lite-qsbr`.
pub(super) const RCU_LITE_QSBR: Implementation<dyn GracePeriod, Options> = Implementation {
    name: "rcu-lite-qsbr",
    summary: "rcu_lite qsbr: swap pointer + qsbr::synchronize_rcu + free; readers announce a quiescent state every 64 sections (quick QS on; --fqs-interval-ms paces FQS)",
    origin: Origin::Workspace,
    make: |o| Ok(Box::new(RcuLiteQsbr::new(o))),
};

/// One flavor's process-wide configuration: how to set it, whether a run
/// holds it, and the condition variable on which a run that wants it waits.
struct Configuration {
    configure: fn(GpConfig) -> GpConfig,
    held: (Mutex<bool>, Condvar),
}

static MEMB_CONFIGURATION: Configuration = Configuration {
    configure: memb::configure,
    held: (Mutex::new(false), Condvar::new()),
};

static QSBR_CONFIGURATION: Configuration = Configuration {
    configure: qsbr::configure,
    held: (Mutex::new(false), Condvar::new()),
};

/// The right to set one flavor's configuration, held by one run at a time;
/// dropping it restores the configuration that was in place before.
/// Unlike a `MutexGuard` it is `Send`, as a [`GracePeriod`] must be.
struct ConfigurationLease {
    flavor: &'static Configuration,
    previous: GpConfig,
}

impl ConfigurationLease {
    /// Waits until no other run holds `flavor`'s configuration, then sets
    /// the one `options` and `quick_qs` ask for.
    fn take(
        flavor: &'static Configuration,
        quick_qs: bool,
        options: &Options,
    ) -> ConfigurationLease {
        let (held, released) = &flavor.held;
        // A test that panicked while taking or returning a lease left the
        // flag itself consistent (it is set and cleared under the lock), so
        // poisoning carries no information here.
        let mut held = held.lock().unwrap_or_else(PoisonError::into_inner);
        while *held {
            held = released.wait(held).unwrap_or_else(PoisonError::into_inner);
        }
        *held = true;
        ConfigurationLease {
            flavor,
            previous: (flavor.configure)(GpConfig {
                quick_qs,
                fqs: options
                    .fqs_interval
                    .map_or(Fqs::Adaptive, Fqs::FixedInterval),
            }),
        }
    }
}

impl Drop for ConfigurationLease {
    fn drop(&mut self) {
        let (held, released) = &self.flavor.held;
        let mut held = held.lock().unwrap_or_else(PoisonError::into_inner);
        // Restored before the flag clears: the next run's `take` sees and
        // saves the configuration from before this one.
        (self.flavor.configure)(self.previous);
        *held = false;
        released.notify_one();
    }
}

/// A memb-protected pointer, with the memb flavor configured for this run
/// for as long as it lives.
struct RcuLite {
    /// Dropped first: fields drop in order, and `_configuration` restores
    /// the flavor's configuration after the last value is freed.
    current: Published,
    _configuration: ConfigurationLease,
}

impl RcuLite {
    fn new(quick_qs: bool, options: &Options) -> RcuLite {
        let configuration = ConfigurationLease::take(&MEMB_CONFIGURATION, quick_qs, options);
        RcuLite {
            current: Published::new(0),
            _configuration: configuration,
        }
    }
}

impl GracePeriod for RcuLite {
    fn update_and_wait(&self, writer: usize) {
        let old = self.current.replace(writer as u64);
        memb::synchronize_rcu();
        // SAFETY: unpublished by `replace`, and a memb grace period has
        // elapsed since, so no reader holds it.
        unsafe { old.free() };
    }

    fn prepare_writer(&self) {
        // `synchronize_rcu` registers a thread on its first call; a read
        // lock does the same, untimed.
        drop(memb::read_lock());
        // The grace-period worker's thread would otherwise start inside the
        // first crowded wait of the process (as hazptr's scanner would in
        // each run's first contended wait): start it here, untimed. Without
        // it (refused), drivers hand over to waiters, timed as such.
        memb::start_grace_period_worker();
    }

    fn read_until(&self, ready: &StartGate, stop: &AtomicBool) -> u64 {
        // The first read lock registers the thread, before the run.
        let guard = memb::read_lock();
        // SAFETY: never null; the guard keeps the pointee alive.
        black_box(unsafe { *self.current.slot().load(Acquire) });
        drop(guard);
        if !ready.wait() {
            return 0; // The run was called off.
        }
        let mut n = 0;
        // Relaxed: a stop request; it publishes nothing.
        while !stop.load(Relaxed) {
            for _ in 0..64 {
                let guard = memb::read_lock();
                // SAFETY: never null; the guard keeps the pointee alive.
                black_box(unsafe { *self.current.slot().load(Acquire) });
                drop(guard);
            }
            n += 64;
        }
        n
    }

    fn idle_until(&self, ready: &IdleGate, stop: &AtomicBool) {
        // The first read lock registers the thread; it stays registered (and
        // scanned) until it exits.
        let guard = memb::read_lock();
        // SAFETY: never null; the guard keeps the pointee alive.
        black_box(unsafe { *self.current.slot().load(Acquire) });
        drop(guard);
        idle_wait(ready, stop);
    }

    fn fqs_counts(&self) -> Option<FqsCounts> {
        Some(fqs_counts(memb::grace_periods()))
    }
}

/// The part of an engine's counts that [`FqsCounts`] reports.
fn fqs_counts(counts: GpCounts) -> FqsCounts {
    FqsCounts {
        grace_periods: counts.completed,
        fqs_waits: counts.fqs_waits,
    }
}

/// A qsbr-protected pointer, with the qsbr flavor configured for this run
/// for as long as it lives.
struct RcuLiteQsbr {
    /// Dropped first: fields drop in order, and `_configuration` restores
    /// the flavor's configuration after the last value is freed.
    current: Published,
    _configuration: ConfigurationLease,
}

impl RcuLiteQsbr {
    fn new(options: &Options) -> RcuLiteQsbr {
        RcuLiteQsbr {
            current: Published::new(0),
            _configuration: ConfigurationLease::take(&QSBR_CONFIGURATION, true, options),
        }
    }

    /// Registers the calling thread and runs one section: the registration
    /// is online on return.
    fn register_and_read(&self) -> QsbrThread {
        let thread = QsbrThread::register();
        let guard = thread.read_lock();
        // SAFETY: never null; the registration is online while `guard`
        // borrows it, so no grace period that could free the pointee ends.
        // Acquire pairs with the writers' AcqRel swap: the value is
        // initialized before we read it.
        black_box(unsafe { *self.current.slot().load(Acquire) });
        drop(guard);
        thread
    }
}

impl GracePeriod for RcuLiteQsbr {
    fn update_and_wait(&self, writer: usize) {
        let old = self.current.replace(writer as u64);
        // Writers hold no registration, so nothing refuses the wait.
        qsbr::synchronize_rcu();
        // SAFETY: unpublished by `replace`, and a qsbr grace period has
        // elapsed since: every registration online before it has announced
        // a quiescent state or gone offline, so no reader holds it.
        unsafe { old.free() };
    }

    fn prepare_writer(&self) {
        // The first `synchronize_rcu` claims the thread's own record, which
        // a driver needs; the readers wait at the start gate offline.
        qsbr::synchronize_rcu();
        // As for memb.
        qsbr::start_grace_period_worker();
    }

    fn read_until(&self, ready: &StartGate, stop: &AtomicBool) -> u64 {
        let mut thread = self.register_and_read();
        // Offline at the gate: a writer's `prepare_writer` waits for a
        // grace period meanwhile.
        if !thread.while_offline(|| ready.wait()) {
            return 0; // The run was called off.
        }
        let mut n = 0;
        // Relaxed: a stop request; it publishes nothing.
        while !stop.load(Relaxed) {
            for _ in 0..QSBR_SECTIONS_PER_QS {
                let guard = thread.read_lock();
                // SAFETY: never null; the guard keeps the registration online
                // and so the pointee alive. Acquire: as in `register_and_read`.
                black_box(unsafe { *self.current.slot().load(Acquire) });
                drop(guard);
            }
            n += QSBR_SECTIONS_PER_QS as u64;
            thread.quiescent_state();
        }
        n
    }

    fn idle_until(&self, ready: &IdleGate, stop: &AtomicBool) {
        // Registered (and scanned) until it exits; offline while idle, as a
        // qsbr thread that blocks must be.
        let mut thread = self.register_and_read();
        thread.while_offline(|| idle_wait(ready, stop));
    }

    fn fqs_counts(&self) -> Option<FqsCounts> {
        Some(fqs_counts(qsbr::grace_periods()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each update publishes the writer's new value in place of the old
    /// one (which it frees after the grace period).
    #[test]
    fn an_update_publishes_the_writer_s_value() {
        let rcu_lite = RcuLite::new(true, &Options::default());
        rcu_lite.update_and_wait(7);
        // SAFETY: never null; no writer runs beside this load.
        assert_eq!(unsafe { *rcu_lite.current.slot().load(Acquire) }, 7);
    }

    /// The grace-period worker's thread starts when many callers first wait
    /// at once: `prepare_writer` starts it, untimed, so that no crowded
    /// run's first waits include spawning a thread (one per process and
    /// flavor). In a child process, where no other test started it before.
    #[test]
    #[cfg_attr(miri, ignore = "reads /proc and spawns a process")]
    fn the_grace_period_worker_starts_before_the_timed_waits() {
        use std::time::Duration;
        const CASE: &str = "SYNCBENCH_TEST_GP_WORKER_FLAVOR";
        let Ok(flavor) = std::env::var(CASE) else {
            for flavor in ["memb", "qsbr"] {
                test_support::in_a_child_process(
                    "rcuscale::rcu_lite::tests::the_grace_period_worker_starts_before_the_timed_waits",
                    CASE,
                    flavor,
                );
            }
            return;
        };
        assert!(
            test_support::thread_states(&format!("rcu-lite-{flavor}-gp")).is_empty(),
            "a grace-period worker ran before the test"
        );
        let implementation: Box<dyn GracePeriod> = match flavor.as_str() {
            "memb" => Box::new(RcuLite::new(true, &Options::default())),
            _ => Box::new(RcuLiteQsbr::new(&Options::default())),
        };
        implementation.prepare_writer();
        assert!(
            test_support::thread_appears(&format!("rcu-lite-{flavor}-gp"), Duration::from_secs(1)),
            "{flavor}: no grace-period worker thread after prepare_writer"
        );
    }

    /// An `rcu-lite-qsbr` run sets the qsbr flavor's configuration, not
    /// memb's, and restores it when dropped.
    #[test]
    fn a_qsbr_run_configures_the_qsbr_flavor_for_its_lifetime() {
        use std::time::Duration;
        let fixed = Options {
            fqs_interval: Some(Duration::from_millis(3)),
        };
        // Under a memb lease: no memb run changes memb's configuration meanwhile.
        let memb_run = RcuLite::new(true, &Options::default());
        let memb_before = memb::config();
        let run = RcuLiteQsbr::new(&fixed);
        let before = run._configuration.previous;
        assert_eq!(
            qsbr::config(),
            GpConfig {
                quick_qs: true,
                fqs: Fqs::FixedInterval(Duration::from_millis(3)),
            }
        );
        assert_eq!(memb::config(), memb_before, "a qsbr run configured memb");
        run.update_and_wait(3);
        // SAFETY: never null; no writer runs beside this load.
        assert_eq!(unsafe { *run.current.slot().load(Acquire) }, 3);
        drop(run);
        // Under a qsbr lease of our own again, so no other test's run is in place.
        let after = RcuLiteQsbr::new(&Options::default());
        assert_eq!(
            after._configuration.previous, before,
            "the qsbr configuration was left behind"
        );
        drop(memb_run);
    }

    /// Two runs on two threads, the second built while the first lives: the
    /// second waits, so the first measures with its own configuration to the
    /// end, and the configuration from before both is the one left after.
    /// (Without the lease the second run's `configure` replaced the first's
    /// mid-run, and the first's drop restored the default under the second,
    /// whose drop then left the first's 3 ms fixed-interval FQS behind.)
    #[test]
    fn runs_on_two_threads_keep_their_own_configuration() {
        use std::sync::mpsc;
        use std::time::Duration;
        let fixed = Options {
            fqs_interval: Some(Duration::from_millis(3)),
        };
        let first = RcuLite::new(true, &fixed);
        // Read under the lease: no other run can change it meanwhile.
        let before = first._configuration.previous;
        let (built_tx, built_rx) = mpsc::channel();
        let (drop_tx, drop_rx) = mpsc::channel::<()>();
        let second = std::thread::spawn(move || {
            let second = RcuLite::new(false, &Options::default());
            let during = memb::config();
            built_tx.send(()).unwrap();
            drop_rx.recv().unwrap();
            drop(second);
            during
        });
        // Long enough for an unguarded second run to be built by now.
        let overlapped = built_rx.recv_timeout(Duration::from_millis(300)).is_ok();
        let during_first = memb::config();
        drop(first);
        drop_tx.send(()).unwrap();
        let during_second = second.join().unwrap();
        assert!(
            !overlapped,
            "the second run was built while the first lived"
        );
        assert_eq!(
            during_first,
            GpConfig {
                quick_qs: true,
                fqs: Fqs::FixedInterval(Duration::from_millis(3)),
            },
            "the first run's configuration was replaced mid-run"
        );
        assert_eq!(
            during_second,
            GpConfig {
                quick_qs: false,
                fqs: Fqs::Adaptive,
            }
        );
        // Under a lease of our own again, so no other test's run is in place.
        let after = RcuLite::new(true, &Options::default());
        assert_eq!(
            after._configuration.previous, before,
            "a run's configuration was left behind"
        );
    }
}
