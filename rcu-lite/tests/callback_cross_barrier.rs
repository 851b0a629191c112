//! Callbacks of both flavors waiting in each other's `rcu_barrier()`: each
//! worker would wait for the other forever, so the later barrier panics.
//!
//! Its own test binary: the test blocks both callback workers on purpose, and
//! another test's callbacks queued meanwhile could wait for them.
#![cfg(not(loom))]

use rcu_lite::{memb, qsbr};

/// A memb callback waiting in `qsbr::rcu_barrier()` while a qsbr callback
/// calls `memb::rcu_barrier()`: each worker would wait for the other forever.
/// The later barrier is refused with a panic, and both callbacks return.
#[test]
fn callbacks_of_both_flavors_waiting_for_each_other_refuse_instead_of_hanging() {
    use std::sync::mpsc::channel;
    fn panic_message(outcome: std::thread::Result<()>) -> Option<String> {
        outcome.err().map(|payload| {
            payload
                .downcast_ref::<String>()
                .cloned()
                .unwrap_or_default()
        })
    }
    let (running_tx, running) = channel();
    let (entering_tx, entering) = channel();
    let (memb_tx, memb_done) = channel();
    let (qsbr_tx, qsbr_done) = channel();
    memb::call_rcu(move || {
        // Only once the qsbr callback runs: the barrier's callback then
        // queues behind it (queued earlier, it would run first and no worker
        // would wait for the other).
        running.recv().expect("the qsbr callback runs");
        entering_tx.send(()).expect("the qsbr callback waits");
        let outcome = std::panic::catch_unwind(qsbr::rcu_barrier);
        memb_tx
            .send(panic_message(outcome))
            .expect("the test waits");
    });
    qsbr::call_rcu(move || {
        running_tx.send(()).expect("the memb callback waits");
        entering.recv().expect("the memb callback runs");
        // Long enough for the memb callback to be waiting in its barrier.
        std::thread::sleep(std::time::Duration::from_millis(200));
        let outcome = std::panic::catch_unwind(memb::rcu_barrier);
        qsbr_tx
            .send(panic_message(outcome))
            .expect("the test waits");
    });
    let limit = std::time::Duration::from_secs(20);
    let qsbr_outcome = qsbr_done
        .recv_timeout(limit)
        .expect("the qsbr callback neither returned nor panicked: each worker waits for the other");
    let memb_outcome = memb_done
        .recv_timeout(limit)
        .expect("the memb callback's qsbr::rcu_barrier() did not return");
    // The qsbr callback's barrier comes second and is refused. On a slow
    // machine (miri) the memb callback may come second instead: then its
    // barrier is refused. Both may be, when they race; neither may hang.
    let refused: Vec<String> = [memb_outcome, qsbr_outcome].into_iter().flatten().collect();
    assert!(
        !refused.is_empty(),
        "neither barrier was refused, yet both returned"
    );
    for message in refused {
        assert!(
            message
                .contains("rcu_barrier() called from inside an RCU callback of the other flavor")
                && message.contains("each callback worker would wait for the other"),
            "{message}"
        );
    }
}
