//! The order of the two crates' fork hooks that docs/rcu-lite.md and both
//! `fork` modules give: rcu-lite's `before_fork` first, then hazptr's, and
//! the `after_fork_*` hooks the other way round. An RCU callback may be
//! inside hazptr; taken the other way, hazptr's hooks would stop that
//! callback while its worker holds the batch lock rcu-lite's `before_fork`
//! waits for. Here a memb callback keeps calling hazptr while another thread
//! runs the hooks in that order.
#![cfg(not(any(miri, loom)))]

use hazptr::Domain;
use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

#[test]
fn rcu_lite_hooks_first_then_hazptrs_while_a_callback_uses_hazptr() {
    test_support::within_a_deadline(
        "the fork hooks of both crates, in the documented order",
        Duration::from_secs(20),
        || {
            static STOP: AtomicBool = AtomicBool::new(false);
            let domain: &'static Domain = Box::leak(Box::new(Domain::new()));
            let (started_tx, started) = mpsc::channel();
            rcu_lite::memb::call_rcu(move || {
                started_tx.send(()).expect("the test waits");
                while !STOP.load(SeqCst) {
                    // Takes the retired-list lock that hazptr's hooks hold.
                    domain.reclaim();
                }
            });
            started.recv().expect("the callback runs");
            let forking = thread::spawn(|| {
                rcu_lite::fork::before_fork();
                hazptr::fork::before_fork();
                hazptr::fork::after_fork_parent();
                rcu_lite::fork::after_fork_parent();
            });
            // rcu-lite's `before_fork` waits for the callback's batch, and
            // hazptr's locks are not yet taken while it does.
            thread::sleep(Duration::from_millis(50));
            STOP.store(true, SeqCst);
            forking.join().expect("the hooks return");
            rcu_lite::memb::rcu_barrier();
        },
    );
}
