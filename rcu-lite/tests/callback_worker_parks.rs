//! Each flavor's callback worker is one thread, however many `call_rcu()`s
//! find it started, and it sleeps once its queue is empty: a worker started
//! again by each `call_rcu()` would pile up threads, and one that polled an
//! empty queue would burn a CPU for good. Its own process, so that no other
//! test's callbacks keep the workers busy. Reads the workers' scheduler
//! states from `/proc` (Linux).
#![cfg(not(any(miri, loom)))]

use rcu_lite::{memb, qsbr};
use std::thread;
use std::time::{Duration, Instant};

/// How long the callbacks may take to run, and a worker to fall asleep once
/// they have: generous, for a loaded 2-CPU machine.
const LIMIT: Duration = Duration::from_secs(60);

/// Queues many callbacks of a flavor, waits for them, and checks that one
/// worker ran them and then sleeps (asleep in two looks at its state).
fn callbacks_then_sleep(
    flavor: &str,
    call_rcu: fn(Box<dyn FnOnce() + Send>),
    rcu_barrier: fn(),
    round: u32,
) {
    let name = &format!("rcu-lite-{flavor}-callbacks");
    for _ in 0..100 {
        call_rcu(Box::new(|| {}));
    }
    test_support::within_a_deadline("rcu_barrier", LIMIT, rcu_barrier);
    assert_eq!(
        test_support::thread_states(name).len(),
        1,
        "round {round}: {flavor}: not one callback worker thread"
    );
    let deadline = Instant::now() + LIMIT;
    loop {
        let first = test_support::thread_states(name);
        thread::sleep(Duration::from_millis(10));
        let second = test_support::thread_states(name);
        if first == ['S'] && second == ['S'] {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "round {round}: {flavor}: with its queue empty the callback worker does not sleep \
             ({first:?}, then {second:?})"
        );
    }
}

/// Each flavor's callback worker stays one thread across a hundred
/// `call_rcu()`s, and sleeps once their batch has run, round after round.
#[test]
fn each_flavors_callback_worker_is_one_thread_that_sleeps_once_its_queue_is_empty() {
    for round in 1..=2 {
        callbacks_then_sleep("memb", memb::call_rcu, memb::rcu_barrier, round);
        callbacks_then_sleep("qsbr", qsbr::call_rcu, qsbr::rcu_barrier, round);
    }
}
