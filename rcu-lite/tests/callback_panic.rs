//! A panicking `call_rcu` callback is reported and the callback worker goes
//! on: the rest of its batch runs, and later callbacks and barriers work.
//!
//! A test binary of its own: if the worker died, every later callback of the
//! flavor would wait forever, and the watchdog below ends the process.

use rcu_lite::{memb, qsbr};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::mpsc;
use std::time::Duration;

/// A panic payload whose own drop panics: dropping it where a panic cannot
/// be caught would unwind out of the worker's loop.
struct PanicsOnDrop;

impl Drop for PanicsOnDrop {
    fn drop(&mut self) {
        panic!("the panic payload's drop panics too");
    }
}

/// Runs `body` on another thread; ends the process if it has not returned
/// within 20 s (a barrier waiting for a worker that died).
fn within_a_deadline(what: &str, body: impl FnOnce() + Send + 'static) {
    let (done, finished) = mpsc::channel();
    let worker = std::thread::spawn(move || {
        body();
        let _ = done.send(());
    });
    if finished.recv_timeout(Duration::from_secs(20)).is_err() {
        eprintln!("{what}: still waiting after 20 s: the callback worker is gone");
        std::process::exit(101);
    }
    worker.join().unwrap();
}

fn the_worker_survives(flavor: &str, call_rcu: fn(Box<dyn FnOnce() + Send>), rcu_barrier: fn()) {
    let ran = Arc::new(AtomicUsize::new(0));
    let count = |ran: &Arc<AtomicUsize>| {
        let ran = Arc::clone(ran);
        Box::new(move || {
            ran.fetch_add(1, SeqCst);
        }) as Box<dyn FnOnce() + Send>
    };
    call_rcu(count(&ran));
    call_rcu(Box::new(|| panic!("an RCU callback panics")));
    call_rcu(count(&ran));
    call_rcu(Box::new(|| std::panic::panic_any(PanicsOnDrop)));
    call_rcu(count(&ran));
    let (r, b) = (Arc::clone(&ran), rcu_barrier);
    within_a_deadline(
        &format!("{flavor}: rcu_barrier after panicking callbacks"),
        move || {
            b();
            assert_eq!(r.load(SeqCst), 3, "the callbacks around the panics ran");
        },
    );
    call_rcu(count(&ran));
    let (r, b) = (Arc::clone(&ran), rcu_barrier);
    within_a_deadline(&format!("{flavor}: a later rcu_barrier"), move || {
        b();
        assert_eq!(r.load(SeqCst), 4, "a callback queued afterwards ran");
    });
}

#[test]
fn a_panicking_callback_does_not_stop_the_memb_worker() {
    the_worker_survives("memb", memb::call_rcu, memb::rcu_barrier);
}

#[test]
fn a_panicking_callback_does_not_stop_the_qsbr_worker() {
    the_worker_survives("qsbr", qsbr::call_rcu, qsbr::rcu_barrier);
}
