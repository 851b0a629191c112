//! `callbacks_pending()` counts callbacks until they start, for both flavors.
//! A test binary of its own: no other test's callbacks move the counts.

use rcu_lite::{memb, qsbr};
use std::sync::mpsc;

type CallRcu = fn(Box<dyn FnOnce() + Send>);

fn counts_until_they_start(call_rcu: CallRcu, pending: fn() -> usize, barrier: fn()) {
    assert_eq!(pending(), 0, "nothing queued yet");
    // Hold the callback thread inside a first callback.
    let (inside_tx, inside_rx) = mpsc::channel();
    let (release_tx, release_rx) = mpsc::channel::<()>();
    call_rcu(Box::new(move || {
        inside_tx.send(()).unwrap();
        release_rx.recv().unwrap();
    }));
    inside_rx.recv().unwrap();
    assert_eq!(pending(), 0, "a running callback is no longer pending");
    for _ in 0..100 {
        call_rcu(Box::new(|| {}));
    }
    assert_eq!(pending(), 100, "queued behind a running callback");
    release_tx.send(()).unwrap();
    barrier();
    assert_eq!(pending(), 0, "rcu_barrier ran everything queued before it");
}

#[test]
fn memb_callbacks_pending_counts_until_they_start() {
    counts_until_they_start(memb::call_rcu, memb::callbacks_pending, memb::rcu_barrier);
}

#[test]
fn qsbr_callbacks_pending_counts_until_they_start() {
    counts_until_they_start(qsbr::call_rcu, qsbr::callbacks_pending, qsbr::rcu_barrier);
}
