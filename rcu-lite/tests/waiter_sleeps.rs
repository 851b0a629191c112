//! A caller that waits for a grace period someone else drives sleeps, and
//! so does the driver that waits for a holdout (adaptive FQS): while a
//! reader holds the grace period up, neither uses more than a little CPU
//! time. Its own process, so that no other test's callers or readers share
//! the engine; its two tests take turns (`SERIAL`).
#![cfg(not(miri))]

mod common;

use common::HeldSection;
use rcu_lite::memb;
use std::sync::{Mutex, mpsc};
use std::thread;
use std::time::Duration;

/// How long the reader holds the grace period up.
const HOLD: Duration = Duration::from_millis(500);
/// CPU time the waiter may use meanwhile: its spin before it sleeps and a
/// few system calls take microseconds; a waiter that never really sleeps
/// (its futex wait returning at once, over and over) takes a share of a
/// CPU for the whole hold, tens of milliseconds even on a loaded machine.
const WAITER_CPU: Duration = Duration::from_millis(50);
/// How long a grace period may take before the test counts it as never
/// ending (a lost wake-up): generous, for a loaded 2-CPU machine.
const LIMIT: Duration = Duration::from_secs(60);

/// The two tests each hold a grace period up; one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

#[test]
fn a_caller_waiting_for_anothers_grace_period_sleeps() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let before = memb::grace_periods();
    let section = HeldSection::start();
    // The driver: its grace period waits for the reader.
    let driver = thread::spawn(memb::synchronize_rcu);
    while memb::grace_periods().started == before.started {
        thread::yield_now();
    }
    // The waiter finds DRIVER set and waits for the next grace period.
    let waiter = thread::spawn(|| {
        let start = test_support::thread_cpu_time();
        memb::synchronize_rcu();
        test_support::thread_cpu_time() - start
    });
    thread::sleep(HOLD);
    let reader = section.end();
    let (cpu_tx, cpu_rx) = mpsc::channel();
    test_support::within_a_deadline(
        "the driver's and the waiter's memb::synchronize_rcu",
        LIMIT,
        move || {
            driver.join().unwrap();
            cpu_tx.send(waiter.join().unwrap()).unwrap();
        },
    );
    reader.join().unwrap();
    let cpu = cpu_rx.recv().unwrap();
    assert!(
        cpu < WAITER_CPU,
        "a caller waiting {HOLD:?} for a grace period used {cpu:?} of CPU time: it did not sleep"
    );
}

/// The driver of an adaptive grace period rechecks its holdout a few
/// hundred times, then sleeps until the holdout's unlock wakes it: over a
/// reader's 500 ms section it uses next to no CPU time. A driver that kept
/// rechecking (or whose futex wait returned at once) would use a CPU's
/// share for the whole section.
#[test]
fn a_driver_waiting_for_a_holdout_sleeps() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let section = HeldSection::start();
    let before = memb::grace_periods();
    let driver = thread::spawn(|| {
        let start = test_support::thread_cpu_time();
        memb::synchronize_rcu();
        test_support::thread_cpu_time() - start
    });
    while memb::grace_periods().started == before.started {
        thread::yield_now();
    }
    thread::sleep(HOLD);
    let reader = section.end();
    let (cpu_tx, cpu_rx) = mpsc::channel();
    test_support::within_a_deadline("the driver's memb::synchronize_rcu", LIMIT, move || {
        cpu_tx.send(driver.join().unwrap()).unwrap();
    });
    reader.join().unwrap();
    let cpu = cpu_rx.recv().unwrap();
    assert!(
        cpu < WAITER_CPU,
        "a driver waiting {HOLD:?} for a holdout used {cpu:?} of CPU time: it did not sleep"
    );
}
