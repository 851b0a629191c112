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

/// A registered thread outside every section, parked until this drops: an
/// idle CPU of the kernel's idle system, which only FQS scan 1 credits (a
/// thread that has exited is an offline CPU instead, waited for by
/// nothing).
pub struct IdleThread {
    done: Option<mpsc::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl IdleThread {
    /// A memb reader that has run one section; returns once it has.
    pub fn memb() -> IdleThread {
        IdleThread::start(|| drop(rcu_lite::memb::read_lock()))
    }

    /// A qsbr registration taken offline; returns once it is.
    pub fn qsbr() -> IdleThread {
        IdleThread::start(|| rcu_lite::qsbr::QsbrThread::register().offline())
    }

    /// Starts a thread that runs `register`, keeps what it returns until
    /// this drops, and returns once `register` has returned.
    fn start<R: 'static>(register: fn() -> R) -> IdleThread {
        let (registered_tx, registered_rx) = mpsc::channel();
        let (done_tx, done_rx) = mpsc::channel::<()>();
        let thread = std::thread::spawn(move || {
            let held = register();
            registered_tx.send(()).unwrap();
            // Until the sender drops.
            let _ = done_rx.recv();
            drop(held);
        });
        registered_rx
            .recv()
            .expect("the idle thread ended before it registered");
        IdleThread {
            done: Some(done_tx),
            thread: Some(thread),
        }
    }
}

impl Drop for IdleThread {
    fn drop(&mut self) {
        drop(self.done.take());
        if let Some(thread) = self.thread.take() {
            // A panic of its own would have shown on stderr; the test's
            // outcome is its assertions'.
            let _ = thread.join();
        }
    }
}

/// A memb reader inside its section until [`HeldSection::end`]: the holdout
/// a grace period begun meanwhile waits for.
pub struct HeldSection {
    leave: mpsc::Sender<()>,
    reader: std::thread::JoinHandle<()>,
}

impl HeldSection {
    /// Starts the reader; returns once it is inside its section.
    pub fn start() -> HeldSection {
        let (entered, wait_entered) = mpsc::channel();
        let (leave, wait_leave) = mpsc::channel::<()>();
        let reader = std::thread::spawn(move || {
            let guard = rcu_lite::memb::read_lock();
            entered.send(()).unwrap();
            wait_leave.recv().unwrap();
            drop(guard);
        });
        wait_entered
            .recv()
            .expect("the reader ended before it entered its section");
        HeldSection { leave, reader }
    }

    /// Lets the reader leave its section (it then exits), without waiting.
    pub fn end(self) -> std::thread::JoinHandle<()> {
        self.leave.send(()).unwrap();
        self.reader
    }
}

/// FQS waits of one memb grace period, driven by the thread that
/// `within_a_deadline` starts for it (which registers there, and gives its
/// record back as it exits), under the settings in force.
pub fn memb_fqs_waits_of_one_grace_period() -> u64 {
    let before = rcu_lite::memb::grace_periods();
    test_support::within_a_deadline(
        "memb::synchronize_rcu",
        Duration::from_secs(60),
        rcu_lite::memb::synchronize_rcu,
    );
    let after = rcu_lite::memb::grace_periods();
    assert_eq!(
        after.completed - before.completed,
        1,
        "not one grace period: {before:?} {after:?}"
    );
    after.fqs_waits - before.fqs_waits
}
