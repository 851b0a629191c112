//! A panicking `call_rcu` callback is reported and the callback worker goes
//! on: the rest of its batch runs, and later callbacks and barriers work.
//!
//! A test binary of its own: if the worker died, every later callback of the
//! flavor would wait forever, and `within_a_deadline` ends the process.

use rcu_lite::{memb, qsbr};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::time::Duration;
use test_support::within_a_deadline;

/// Time a barrier may take before the worker counts as gone.
const LIMIT: Duration = Duration::from_secs(20);

/// A panic payload whose own drop panics: dropping it where a panic cannot
/// be caught would unwind out of the worker's loop.
struct PanicsOnDrop;

impl Drop for PanicsOnDrop {
    fn drop(&mut self) {
        panic!("the panic payload's drop panics too");
    }
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
        LIMIT,
        move || {
            b();
            assert_eq!(r.load(SeqCst), 3, "the callbacks around the panics ran");
        },
    );
    call_rcu(count(&ran));
    let (r, b) = (Arc::clone(&ran), rcu_barrier);
    within_a_deadline(
        &format!("{flavor}: a later rcu_barrier"),
        LIMIT,
        move || {
            b();
            assert_eq!(r.load(SeqCst), 4, "a callback queued afterwards ran");
        },
    );
}

#[test]
fn a_panicking_callback_does_not_stop_the_memb_worker() {
    the_worker_survives("memb", memb::call_rcu, memb::rcu_barrier);
}

#[test]
fn a_panicking_callback_does_not_stop_the_qsbr_worker() {
    the_worker_survives("qsbr", qsbr::call_rcu, qsbr::rcu_barrier);
}

/// The worker's report of a panicking callback cannot itself panic: with
/// stderr a pipe nobody reads (every write fails with `EPIPE`), the report
/// and the panic hook's message go nowhere and the worker goes on. In a
/// child process, whose stderr is the one replaced. The normal run also
/// checks that the report is printed. (`eprintln!` in the report would
/// panic on the closed pipe outside the worker's `catch_unwind`, killing
/// the worker: from the guarantee-mapping review.)
#[test]
#[cfg_attr(miri, ignore = "a child process, which miri does not start")]
fn a_callbacks_panic_report_on_a_closed_stderr_leaves_the_worker_running() {
    const CHILD: &str = "RCU_LITE_CALLBACK_PANIC_CHILD";
    let test = "a_callbacks_panic_report_on_a_closed_stderr_leaves_the_worker_running";
    match std::env::var(CHILD).as_deref() {
        Ok("closed") => {
            test_support::stderr_to_a_pipe_nobody_reads();
            the_worker_survives("memb", memb::call_rcu, memb::rcu_barrier);
            the_worker_survives("qsbr", qsbr::call_rcu, qsbr::rcu_barrier);
        }
        Ok(_) => the_worker_survives("memb", memb::call_rcu, memb::rcu_barrier),
        Err(_) => {
            test_support::in_a_child_process(test, CHILD, "closed");
            let stderr = test_support::stderr_of_a_passing_child_process(test, CHILD, "open", &[]);
            assert!(
                stderr.contains(
                    "rcu-lite: an RCU callback panicked; the callback worker goes on: \
                     \"an RCU callback panics\""
                ),
                "{stderr}"
            );
        }
    }
}

/// The report of a callback's panic is written without std's stderr lock:
/// a thread that holds `std::io::stderr().lock()` while it waits in
/// `rcu_barrier` for the batch would otherwise wait for itself (the worker
/// writes the report with the batch lock held). Until 2026-12-07 it did.
#[test]
fn a_panic_report_does_not_wait_for_a_barrier_holding_stderrs_lock() {
    within_a_deadline(
        "a barrier behind a panicking callback, with std's stderr lock held",
        LIMIT,
        || {
            let stderr = std::io::stderr().lock();
            memb::call_rcu(|| panic!("an RCU callback panics while stderr's lock is held"));
            memb::rcu_barrier();
            drop(stderr);
        },
    );
}
