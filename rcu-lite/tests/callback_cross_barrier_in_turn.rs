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

/// A memb callback waits in `qsbr::rcu_barrier()` and returns; afterwards a
/// qsbr callback's `memb::rcu_barrier()` returns too, instead of being
/// refused as if the memb callback still waited (and the other way round).
#[test]
fn callbacks_waiting_in_each_others_barrier_in_turn_are_not_refused() {
    let (memb_tx, memb_done) = channel();
    memb::call_rcu(move || {
        // Something queued, so that the barrier waits for the qsbr worker.
        qsbr::call_rcu(|| {});
        memb_tx
            .send(catch_unwind(qsbr::rcu_barrier).is_ok())
            .expect("the test waits");
    });
    assert!(
        memb_done
            .recv_timeout(LIMIT)
            .expect("the memb callback's qsbr::rcu_barrier() did not return"),
        "a memb callback's qsbr::rcu_barrier() was refused with no qsbr callback waiting"
    );
    let (qsbr_tx, qsbr_done) = channel();
    qsbr::call_rcu(move || {
        memb::call_rcu(|| {});
        qsbr_tx
            .send(catch_unwind(memb::rcu_barrier).is_ok())
            .expect("the test waits");
    });
    assert!(
        qsbr_done
            .recv_timeout(LIMIT)
            .expect("the qsbr callback's memb::rcu_barrier() did not return"),
        "a qsbr callback's memb::rcu_barrier() was refused after the memb callback's \
         qsbr::rcu_barrier() had returned"
    );
    // And back: the qsbr callback's count is gone too.
    let (again_tx, again_done) = channel();
    memb::call_rcu(move || {
        qsbr::call_rcu(|| {});
        again_tx
            .send(catch_unwind(qsbr::rcu_barrier).is_ok())
            .expect("the test waits");
    });
    assert!(
        again_done
            .recv_timeout(LIMIT)
            .expect("the memb callback's second qsbr::rcu_barrier() did not return"),
        "a memb callback's qsbr::rcu_barrier() was refused after the qsbr callback's \
         memb::rcu_barrier() had returned"
    );
}
