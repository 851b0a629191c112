//! The kernel's one-CPU system: where the driver's thread is the only one
//! holding a record, quick QS leaves the first FQS wait nothing to wait for
//! (the kernel's `rcu_gp_fqs_check_wake()` ends even that wait once every
//! CPU online at init has reported), so a fixed-interval grace period makes
//! no FQS wait; without quick QS it still makes two. One idle registered
//! thread (an idle CPU) brings the seed's single wait back. A thread that
//! has exited is an offline CPU, waited for by nothing.
//!
//! A binary of its own: no other test's thread may hold a record of the
//! flavor it counts (one test per flavor; the two flavors' registries and
//! settings are apart).

mod common;

use common::{IdleThread, memb_fqs_waits_of_one_grace_period};
use rcu_lite::qsbr::{self, QsbrThread};
use rcu_lite::{Fqs, GpConfig, memb};
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

/// FQS waits of one memb grace period under a 1 ms fixed interval.
fn fqs_waits(quick_qs: bool) -> u64 {
    memb::configure(GpConfig {
        quick_qs,
        fqs: Fqs::FixedInterval(Duration::from_millis(1)),
    });
    memb_fqs_waits_of_one_grace_period()
}

#[test]
fn a_lone_registered_thread_makes_no_fqs_wait_with_quick_qs() {
    // A thread that registered and exited: an offline CPU.
    thread::spawn(|| drop(memb::read_lock())).join().unwrap();
    assert_eq!(fqs_waits(true), 0, "alone, with quick QS");
    assert_eq!(fqs_waits(false), 2, "alone, without quick QS");
    let idle = IdleThread::memb();
    assert_eq!(fqs_waits(true), 1, "beside an idle thread, with quick QS");
    assert_eq!(
        fqs_waits(false),
        2,
        "beside an idle thread, without quick QS"
    );
    drop(idle);
    assert_eq!(fqs_waits(true), 0, "alone again, with quick QS");
}

/// FQS waits of one qsbr grace period that a thread whose registration
/// `QsbrThread::synchronize_rcu` takes offline drives: its registration and
/// the record it drives with are both its own CPU's.
fn qsbr_fqs_waits(quick_qs: bool) -> u64 {
    qsbr::configure(GpConfig {
        quick_qs,
        fqs: Fqs::FixedInterval(Duration::from_millis(1)),
    });
    let (waits_tx, waits_rx) = mpsc::channel();
    test_support::within_a_deadline(
        "QsbrThread::synchronize_rcu",
        Duration::from_secs(60),
        move || {
            let mut me = QsbrThread::register();
            let before = qsbr::grace_periods();
            me.synchronize_rcu();
            let after = qsbr::grace_periods();
            assert_eq!(
                after.completed - before.completed,
                1,
                "{before:?} {after:?}"
            );
            waits_tx.send(after.fqs_waits - before.fqs_waits).unwrap();
        },
    );
    waits_rx.recv().unwrap()
}

#[test]
fn a_lone_qsbr_thread_waiting_offline_makes_no_fqs_wait_with_quick_qs() {
    assert_eq!(qsbr_fqs_waits(true), 0, "alone, with quick QS");
    assert_eq!(qsbr_fqs_waits(false), 2, "alone, without quick QS");
    // An offline registration of another thread: an idle CPU.
    let idle = IdleThread::qsbr();
    assert_eq!(
        qsbr_fqs_waits(true),
        1,
        "beside an idle thread, with quick QS"
    );
    drop(idle);
}
