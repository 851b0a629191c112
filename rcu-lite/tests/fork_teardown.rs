//! The fork hooks and thread teardown. A thread-local destructor may run
//! the hooks (a thread's clean-up may fork: a library that runs a helper
//! process, or any fork once the hooks are registered with
//! `pthread_atfork`) after rcu-lite's own per-thread state is gone; and a
//! thread that exits between the hooks gives back the locks they hold.
//! Each case runs in a child process (this test binary run again with
//! `CHILD_ENV` naming it): a panic inside a thread-local destructor aborts
//! the whole process, and a lock never given back hangs it.
#![cfg(not(any(miri, loom)))]

use rcu_lite::{fork, memb};
use std::process::Command;
use std::thread;
use std::time::{Duration, Instant};

const CHILD_ENV: &str = "RCU_LITE_FORK_TEARDOWN_CHILD";

/// Runs the hooks, as around a `fork()`, when the thread ends.
struct HooksWhenDropped;

impl Drop for HooksWhenDropped {
    fn drop(&mut self) {
        fork::before_fork();
        fork::after_fork_parent();
    }
}

thread_local! {
    static HOOKS_WHEN_DROPPED: HooksWhenDropped = const { HooksWhenDropped };
}

/// Runs this test binary again as a child doing `case`, and fails unless
/// it succeeds within a minute.
fn run_child(test: &str, case: &str) {
    let mut child = Command::new(std::env::current_exe().expect("the test binary"))
        .args([test, "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, case)
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("run the child");
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for the child") {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{case}: the child still ran after a minute (hung)");
        }
        thread::sleep(Duration::from_millis(10));
    };
    assert!(status.success(), "{case}: the child failed ({status:?})");
}

#[test]
fn fork_hooks_from_a_thread_local_destructor() {
    if std::env::var_os(CHILD_ENV).is_some() {
        thread::spawn(|| {
            // Touched before rcu-lite's per-thread state, which the hooks
            // and `call_rcu` set up, so destroyed after it.
            HOOKS_WHEN_DROPPED.with(|_| ());
            fork::before_fork();
            fork::after_fork_parent();
            memb::call_rcu(|| {});
        })
        .join()
        .expect("the thread ends cleanly");
        memb::rcu_barrier();
        return;
    }
    run_child("fork_hooks_from_a_thread_local_destructor", "teardown");
}

#[test]
fn a_thread_that_exits_between_the_hooks_gives_their_locks_back() {
    if std::env::var_os(CHILD_ENV).is_some() {
        thread::spawn(fork::before_fork)
            .join()
            .expect("the thread ends cleanly");
        // Waits for the queue lock the hooks took.
        memb::call_rcu(|| {});
        memb::rcu_barrier();
        return;
    }
    run_child(
        "a_thread_that_exits_between_the_hooks_gives_their_locks_back",
        "exit",
    );
}
