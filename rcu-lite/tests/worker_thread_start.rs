//! The flavors' worker threads (grace periods, callbacks) block the signals
//! sent to the process and have the kernel's default timer slack, whatever
//! the thread that started them had. Until 2026-12-07 they inherited both,
//! so a `SIGINT` could run its handler on a worker, and 100 ms of slack
//! made timer-driven grace periods end up to 100 ms late. One test, alone
//! in its process, so that its own thread, with nothing blocked and 100 ms
//! of slack, is the one that starts the workers.

// Reads /proc and sets signal masks and timer slack: not under miri, and
// loom has no worker threads.
#![cfg(not(any(miri, loom)))]

use rcu_lite::{memb, qsbr};
use std::thread;
use std::time::{Duration, Instant};
use test_support::Crowd;

/// How long the workers may take to start: generous, for a loaded 2-CPU
/// machine.
const LIMIT: Duration = Duration::from_secs(60);

/// The blocked-signal mask of the one thread named `name`, once it has
/// appeared.
fn one_mask(name: &str) -> u64 {
    assert!(
        test_support::thread_appears(name, LIMIT),
        "no thread named {name}"
    );
    let masks = test_support::blocked_signals(name);
    assert_eq!(masks.len(), 1, "not one thread named {name}: {masks:?}");
    masks[0]
}

#[test]
fn the_workers_block_the_signals_sent_to_the_process_and_have_the_default_slack() {
    test_support::unblock_every_signal_on_this_thread();
    test_support::set_this_threads_timer_slack(100_000_000);
    // The callback workers start on the first `call_rcu`, on this thread.
    memb::call_rcu(|| {});
    memb::rcu_barrier();
    qsbr::call_rcu(|| {});
    qsbr::rcu_barrier();
    // The grace-period worker starts when a driver hands over: a crowd of
    // waiters, whose threads inherit this thread's empty mask.
    let before = memb::grace_periods().by_worker;
    let crowd = Crowd::start(memb::synchronize_rcu);
    let deadline = Instant::now() + LIMIT;
    while memb::grace_periods().by_worker == before {
        assert!(Instant::now() < deadline, "the memb worker never drove");
        thread::sleep(Duration::from_millis(1));
    }
    crowd.stop();
    for name in [
        "rcu-lite-memb-callbacks",
        "rcu-lite-qsbr-callbacks",
        "rcu-lite-memb-gp",
    ] {
        test_support::assert_blocks_process_signals(name, one_mask(name));
        test_support::until_default_timer_slack(name, LIMIT);
    }
    assert_eq!(
        test_support::this_threads_blocked_signals(),
        0,
        "the starting thread's mask changed"
    );
}
