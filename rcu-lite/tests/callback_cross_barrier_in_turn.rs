//! Callbacks of the two flavors that wait in each other's `rcu_barrier()`
//! one after the other, not at once: neither is refused. A callback's
//! waiting in the other flavor's barrier is counted only until that
//! barrier's callback has run.
//!
//! Its own test binary: the test holds up both callback workers, and another
//! test's barriers meanwhile could be the ones refused.
#![cfg(not(any(miri, loom)))]

use rcu_lite::{memb, qsbr};
use std::panic::catch_unwind;
use std::sync::mpsc::channel;
use std::time::Duration;

/// How long a callback may take to report: generous, for a loaded 2-CPU
/// machine.
const LIMIT: Duration = Duration::from_secs(60);

/// A callback of one flavor (queued with `call_rcu`) that queues a callback
/// of the other flavor and then waits in its `barrier`: whether the barrier
/// returned (`false`: it was refused). Panics if the callback does not report
/// within [`LIMIT`].
fn callback_waits_in_the_others_barrier(
    call_rcu: fn(Box<dyn FnOnce() + Send>),
    others_call_rcu: fn(Box<dyn FnOnce() + Send>),
    others_barrier: fn(),
) -> bool {
    let (tx, done) = channel();
    call_rcu(Box::new(move || {
        // Something queued, so that the barrier waits for the other worker.
        others_call_rcu(Box::new(|| {}));
        tx.send(catch_unwind(others_barrier).is_ok())
            .expect("the test waits");
    }));
    done.recv_timeout(LIMIT)
        .expect("the callback's barrier of the other flavor did not return")
}

/// A memb callback waits in `qsbr::rcu_barrier()` and returns; afterwards a
/// qsbr callback's `memb::rcu_barrier()` returns too, instead of being
/// refused as if the memb callback still waited (and the other way round).
#[test]
fn callbacks_waiting_in_each_others_barrier_in_turn_are_not_refused() {
    assert!(
        callback_waits_in_the_others_barrier(memb::call_rcu, qsbr::call_rcu, qsbr::rcu_barrier),
        "a memb callback's qsbr::rcu_barrier() was refused with no qsbr callback waiting"
    );
    assert!(
        callback_waits_in_the_others_barrier(qsbr::call_rcu, memb::call_rcu, memb::rcu_barrier),
        "a qsbr callback's memb::rcu_barrier() was refused after the memb callback's \
         qsbr::rcu_barrier() had returned"
    );
    // And back: the qsbr callback's count is gone too.
    assert!(
        callback_waits_in_the_others_barrier(memb::call_rcu, qsbr::call_rcu, qsbr::rcu_barrier),
        "a memb callback's qsbr::rcu_barrier() was refused after the qsbr callback's \
         memb::rcu_barrier() had returned"
    );
}
