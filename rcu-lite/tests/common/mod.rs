//! Helpers shared by the integration tests (`mod common;` in each binary
//! that uses them).

use rcu_lite::Flavor;
use std::sync::mpsc;
use std::time::Duration;

/// Holds the flavor's callback thread inside a callback until the returned
/// sender sends: that callback's batch has been taken and its grace period
/// has completed, so the queue is empty and what the caller queues
/// meanwhile stays queued. Fails if the callback does not start within
/// `limit`.
pub fn hold_the_callback_thread<F: Flavor>(limit: Duration) -> mpsc::Sender<()> {
    let (inside_tx, inside_rx) = mpsc::channel();
    let (release_tx, release_rx) = mpsc::channel::<()>();
    F::call_rcu(move || {
        inside_tx.send(()).unwrap();
        release_rx.recv().unwrap();
    });
    inside_rx
        .recv_timeout(limit)
        .expect("the holding callback did not start: its grace period never ended");
    release_tx
}
