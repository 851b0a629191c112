//! A driver that finishes its grace period while a second caller waits for
//! the next one hands `DRIVER` to that waiter, not to the worker, when
//! callers do not crowd the engine (`engine.rs`, `gp_worker.rs` module docs).
//! Its own process, so that `by_worker` counts only this test's grace
//! periods.

mod common;

use common::HeldSection;
use rcu_lite::memb;
use std::thread;
use std::time::Duration;

/// How long a grace period or barrier may take before the test counts it as
/// never ending (a lost wake-up): generous, for a loaded 2-CPU machine.
const LIMIT: Duration = Duration::from_secs(60);

#[test]
fn a_waiter_for_the_next_grace_period_takes_over_without_the_worker() {
    let before = memb::grace_periods();
    let section = HeldSection::start();
    // The first caller drives a grace period the reader holds up.
    let first = thread::spawn(memb::synchronize_rcu);
    while memb::grace_periods().started == before.started {
        thread::yield_now();
    }
    // The second caller arrives during it, sets NEED_GP and waits for the
    // next one.
    let second = thread::spawn(memb::synchronize_rcu);
    thread::sleep(Duration::from_millis(50));
    let reader = section.end();
    test_support::within_a_deadline(
        "the driver's and the waiter's memb::synchronize_rcu",
        LIMIT,
        move || {
            first.join().unwrap();
            second.join().unwrap();
        },
    );
    reader.join().unwrap();
    let after = memb::grace_periods();
    assert_eq!(after.completed - before.completed, 2, "{after:?}");
    assert_eq!(
        after.by_worker, before.by_worker,
        "two callers are no crowd: the worker drove a grace period"
    );
}
