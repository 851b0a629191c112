//! Helpers shared by the integration tests (`mod common;` in each binary
//! that uses them).

// Each binary uses some of these helpers, none all of them.
#![allow(dead_code)]

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

/// A memb-registered thread outside its section, parked until this drops:
/// an idle CPU of the kernel's idle system, which only FQS scan 1 credits
/// (a thread that has exited is an offline CPU instead, waited for by
/// nothing).
pub struct IdleMembThread {
    done: Option<mpsc::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl IdleMembThread {
    /// Starts the thread and returns once it has registered.
    pub fn start() -> IdleMembThread {
        let (registered_tx, registered_rx) = mpsc::channel();
        let (done_tx, done_rx) = mpsc::channel::<()>();
        let thread = std::thread::spawn(move || {
            drop(rcu_lite::memb::read_lock());
            registered_tx.send(()).unwrap();
            // Until the sender drops.
            let _ = done_rx.recv();
        });
        registered_rx
            .recv()
            .expect("the idle thread ended before it registered");
        IdleMembThread {
            done: Some(done_tx),
            thread: Some(thread),
        }
    }
}

impl Drop for IdleMembThread {
    fn drop(&mut self) {
        drop(self.done.take());
        if let Some(thread) = self.thread.take() {
            // A panic of its own would have shown on stderr; the test's
            // outcome is its assertions'.
            let _ = thread.join();
        }
    }
}
