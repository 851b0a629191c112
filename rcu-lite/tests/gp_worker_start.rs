//! `start_grace_period_worker()` of each flavor returns once the worker
//! thread runs: a `fork()` right after it must not copy the thread's
//! start-up half done (see `rcu_lite::fork`). Its own process, so that no
//! other test's crowd of callers starts a worker first. Reads the threads'
//! names from `/proc` (Linux).
#![cfg(not(any(miri, loom)))]

use rcu_lite::{memb, qsbr};

/// The name each flavor's grace-period worker thread runs under, as
/// `/proc` shows it (cut to 15 bytes by the kernel; `thread_states` cuts
/// its argument the same way).
fn worker(flavor: &str) -> String {
    format!("rcu-lite-{flavor}-gp")
}

/// Right after `start_grace_period_worker()` returns true, the flavor's
/// worker thread is there under its name, with no wait for it to appear:
/// the thread sets its name as it begins to run, so a start that returned
/// before the thread ran (or without starting one) finds one thread too
/// few. A second call finds it running and starts no other, and each
/// flavor's worker has a name of its own.
#[test]
fn start_grace_period_worker_returns_once_the_worker_thread_runs() {
    type Start = fn() -> bool;
    let flavors: [(&str, Start); 2] = [
        ("memb", memb::start_grace_period_worker),
        ("qsbr", qsbr::start_grace_period_worker),
    ];
    for (flavor, _) in flavors {
        assert!(
            test_support::thread_states(&worker(flavor)).is_empty(),
            "a {flavor} grace-period worker ran before any start: the check would prove nothing"
        );
    }
    for (flavor, start) in flavors {
        let name = &worker(flavor);
        assert!(
            start(),
            "{flavor}::start_grace_period_worker() returned false"
        );
        assert_eq!(
            test_support::thread_states(name).len(),
            1,
            "{flavor}::start_grace_period_worker() returned true before its worker thread {name} ran"
        );
        assert!(start(), "{flavor}: the second start returned false");
        assert_eq!(
            test_support::thread_states(name).len(),
            1,
            "{flavor}: a second start_grace_period_worker() started another worker thread"
        );
    }
    assert_eq!(
        test_support::thread_states(&worker("memb")).len(),
        1,
        "the qsbr worker took the memb worker's name"
    );
}
