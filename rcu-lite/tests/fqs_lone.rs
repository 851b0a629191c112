//! The kernel's one-CPU system: where the driver's thread is the only one
//! holding a record, quick QS leaves the first FQS wait nothing to wait for
//! (the kernel's `rcu_gp_fqs_check_wake()` ends even that wait once every
//! CPU online at init has reported), so a fixed-interval grace period makes
//! no FQS wait; without quick QS it still makes two. One idle registered
//! thread (an idle CPU) brings the seed's single wait back. A thread that
//! has exited is an offline CPU, waited for by nothing.
//!
//! A binary of its own, with one test: no other test's thread may hold a
//! record while it counts.

mod common;

use common::IdleMembThread;
use rcu_lite::{Fqs, GpConfig, memb};
use std::thread;
use std::time::Duration;

/// FQS waits of one grace period, driven by the thread that
/// `within_a_deadline` starts for it (which registers there, and gives its
/// record back as it exits).
fn fqs_waits(quick_qs: bool) -> u64 {
    memb::configure(GpConfig {
        quick_qs,
        fqs: Fqs::FixedInterval(Duration::from_millis(1)),
    });
    let before = memb::grace_periods();
    test_support::within_a_deadline(
        "memb::synchronize_rcu",
        Duration::from_secs(60),
        memb::synchronize_rcu,
    );
    let after = memb::grace_periods();
    assert_eq!(
        after.completed - before.completed,
        1,
        "{before:?} {after:?}"
    );
    after.fqs_waits - before.fqs_waits
}

#[test]
fn a_lone_registered_thread_makes_no_fqs_wait_with_quick_qs() {
    // A thread that registered and exited: an offline CPU.
    thread::spawn(|| drop(memb::read_lock())).join().unwrap();
    assert_eq!(fqs_waits(true), 0, "alone, with quick QS");
    assert_eq!(fqs_waits(false), 2, "alone, without quick QS");
    let idle = IdleMembThread::start();
    assert_eq!(fqs_waits(true), 1, "beside an idle thread, with quick QS");
    assert_eq!(
        fqs_waits(false),
        2,
        "beside an idle thread, without quick QS"
    );
    drop(idle);
    assert_eq!(fqs_waits(true), 0, "alone again, with quick QS");
}
