//! `callbacks_pending()` counts callbacks until they start, for both flavors.
//! A test binary of its own: no other test's callbacks move the counts.

use rcu_lite::{Flavor, Memb, Qsbr, memb, qsbr};
use std::sync::mpsc;

/// How long a grace period or barrier may take before the test counts it as
/// never ending (a lost wake-up): generous, for a loaded 2-CPU machine.
const LIMIT: std::time::Duration = std::time::Duration::from_secs(60);

/// Through the `Flavor` trait; `module_pending` is the flavor module's own
/// `callbacks_pending`, which must agree.
fn counts_until_they_start<F: Flavor + 'static>(module_pending: fn() -> usize) {
    assert_eq!(F::callbacks_pending(), 0, "nothing queued yet");
    // Hold the callback thread inside a first callback.
    let (inside_tx, inside_rx) = mpsc::channel();
    let (release_tx, release_rx) = mpsc::channel::<()>();
    F::call_rcu(move || {
        inside_tx.send(()).unwrap();
        release_rx.recv().unwrap();
    });
    inside_rx
        .recv_timeout(LIMIT)
        .expect("the first callback did not start: its grace period never ended");
    assert_eq!(
        F::callbacks_pending(),
        0,
        "a running callback is no longer pending"
    );
    for _ in 0..100 {
        F::call_rcu(|| {});
    }
    assert_eq!(
        F::callbacks_pending(),
        100,
        "queued behind a running callback"
    );
    assert_eq!(module_pending(), 100, "the module's reading differs");
    release_tx.send(()).unwrap();
    test_support::within_a_deadline("rcu_barrier", LIMIT, F::rcu_barrier);
    assert_eq!(
        F::callbacks_pending(),
        0,
        "rcu_barrier ran everything queued before it"
    );
}

#[test]
fn memb_callbacks_pending_counts_until_they_start() {
    counts_until_they_start::<Memb>(memb::callbacks_pending);
}

#[test]
fn qsbr_callbacks_pending_counts_until_they_start() {
    counts_until_they_start::<Qsbr>(qsbr::callbacks_pending);
}
