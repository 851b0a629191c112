//! A `call_rcu` callback that returns with a memb read-side section open, or
//! a qsbr registration online, on the callback worker thread aborts the
//! process with a message naming it; left alone, the worker's next
//! `synchronize_rcu()` ended it with its batch unrun, and every later
//! callback and `rcu_barrier()` of the flavor hung.
//!
//! Each misuse runs in a child process (this test binary run again with
//! `CHILD_ENV` naming the case), since it ends the process.
#![cfg(not(loom))]

use rcu_lite::qsbr::QsbrThread;
use rcu_lite::{memb, qsbr};

/// Names the misuse a child process runs.
const CHILD_ENV: &str = "RCU_LITE_CALLBACK_MISUSE_CHILD";

/// How long a grace period or barrier may take before the test counts it as
/// never ending (a lost wake-up): generous, for a loaded 2-CPU machine.
const LIMIT: std::time::Duration = std::time::Duration::from_secs(60);

fn child_case() -> Option<String> {
    std::env::var(CHILD_ENV).ok()
}

/// Runs this test binary again as a child doing `case`; returns its stderr
/// after checking that it was killed by SIGABRT.
fn run_child(test: &str, case: &str) -> String {
    test_support::stderr_of_an_aborted_child_process(test, CHILD_ENV, case)
}

#[test]
#[cfg_attr(
    miri,
    ignore = "runs this test binary again as a child process, which miri cannot"
)]
fn a_memb_callback_that_leaves_a_section_open_aborts_with_a_message() {
    if child_case().as_deref() == Some("memb") {
        memb::call_rcu(|| std::mem::forget(memb::read_lock()));
        test_support::within_a_deadline("memb::rcu_barrier", LIMIT, memb::rcu_barrier);
        unreachable!("the worker aborts the process first");
    }
    let stderr = run_child(
        "a_memb_callback_that_leaves_a_section_open_aborts_with_a_message",
        "memb",
    );
    assert!(
        stderr.contains("RCU callback returned leaving the callback worker thread inside a memb read-side section"),
        "{stderr}"
    );
}

#[test]
#[cfg_attr(
    miri,
    ignore = "runs this test binary again as a child process, which miri cannot"
)]
fn a_qsbr_callback_that_leaves_a_registration_online_aborts_with_a_message() {
    if child_case().as_deref() == Some("qsbr") {
        qsbr::call_rcu(|| std::mem::forget(QsbrThread::register()));
        test_support::within_a_deadline("qsbr::rcu_barrier", LIMIT, qsbr::rcu_barrier);
        unreachable!("the worker aborts the process first");
    }
    let stderr = run_child(
        "a_qsbr_callback_that_leaves_a_registration_online_aborts_with_a_message",
        "qsbr",
    );
    assert!(
        stderr.contains("leaving the callback worker thread with a qsbr registration online"),
        "{stderr}"
    );
}

/// `rcu_barrier()` of the other flavor from inside a callback waits for the
/// other flavor's worker, not for its own batch: allowed.
#[test]
fn a_callback_may_wait_for_the_other_flavors_callbacks() {
    if child_case().is_some() {
        return;
    }
    let (tx, rx) = std::sync::mpsc::channel();
    memb::call_rcu(move || {
        qsbr::call_rcu(|| {});
        qsbr::rcu_barrier();
        tx.send(()).expect("the test waits");
    });
    test_support::within_a_deadline("memb::rcu_barrier", LIMIT, memb::rcu_barrier);
    rx.recv_timeout(LIMIT)
        .expect("the memb callback ran its qsbr barrier");
}
