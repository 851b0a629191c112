//! Callbacks queued before a `fork()` stay queued across it (`rcu_lite::fork`,
//! "What they do"): in the child they run once its next `rcu_barrier()` of
//! the flavor starts a worker, after a grace period, and the parent runs its
//! own copies. Each runs exactly once in each process.
//!
//! `before_fork` waits until no callback batch is being taken, waited for or
//! run, so a callback that a worker has taken is never copied half done: to
//! be still queued at the fork, a callback must be one that no worker took,
//! or one a worker put back at the fork's request (`fork_mid_batch.rs`).
//! Here no worker can take it: it is queued while the process's
//! address-space limit leaves no room for a thread's stack, so the flavor's
//! first `call_rcu()` queues it and then panics, unable to start the worker
//! (as `callback_worker_start.rs` does it). Readers of both flavors hold
//! their grace periods up meanwhile and across the fork, so the parent's
//! copies cannot run before they leave.
//!
//! Its own process (the test forks and its child starts threads), and the
//! test runs in a process of its own too (`test_support::forking_test`).
#![cfg(not(any(miri, loom)))]

use rcu_lite::qsbr::QsbrThread;
use rcu_lite::{fork, memb, qsbr};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::time::Duration;
use test_support::{ForkHooks, Holders, assert_child_succeeded, fork_and_wait};

/// How long a barrier may take before the test counts it as never ending (a
/// lost wake-up): generous, for a loaded 2-CPU machine.
const LIMIT: Duration = Duration::from_secs(60);
/// The same for the whole test: the child's alarm and the parent's barriers.
const WHOLE_TEST_LIMIT: Duration = Duration::from_secs(240);

const HOOKS: ForkHooks = ForkHooks {
    before: fork::before_fork,
    after_parent: fork::after_fork_parent,
    after_child: fork::after_fork_child,
};

/// A flavor's callback functions, and the count of runs of the callback the
/// test queues on it.
struct Flavor {
    name: &'static str,
    call_rcu: fn(Box<dyn FnOnce() + Send>),
    rcu_barrier: fn(),
    callbacks_pending: fn() -> usize,
    ran: Arc<AtomicUsize>,
}

fn flavors() -> [Flavor; 2] {
    [
        Flavor {
            name: "memb",
            call_rcu: memb::call_rcu,
            rcu_barrier: memb::rcu_barrier,
            callbacks_pending: memb::callbacks_pending,
            ran: Arc::new(AtomicUsize::new(0)),
        },
        Flavor {
            name: "qsbr",
            call_rcu: qsbr::call_rcu,
            rcu_barrier: qsbr::rcu_barrier,
            callbacks_pending: qsbr::callbacks_pending,
            ran: Arc::new(AtomicUsize::new(0)),
        },
    ]
}

/// In the child: each flavor's `rcu_barrier()` starts a worker, which runs
/// the callback queued before the fork, once.
fn child_runs_the_queued_callbacks(flavors: &[Flavor]) {
    for flavor in flavors {
        (flavor.rcu_barrier)();
        assert_eq!(
            flavor.ran.load(SeqCst),
            1,
            "{}: the callback queued before the fork did not run exactly once in the child's \
             rcu_barrier()",
            flavor.name
        );
    }
}

/// A callback of each flavor queued before the fork, with no worker to take
/// it and a reader holding its grace period up, runs exactly once in the
/// child, at the child's `rcu_barrier()`, and exactly once in the parent,
/// once the readers have left. A child hook that dropped the queue (or a
/// fork that lost it) leaves the child's barrier nothing to wait for.
#[test]
fn callbacks_queued_before_a_fork_run_once_in_the_child_and_once_in_the_parent() {
    test_support::forking_test(
        "callbacks_queued_before_a_fork_run_once_in_the_child_and_once_in_the_parent",
        || {
            // On the deadline's thread, as libtest runs a test on a thread
            // of its own: the barriers wait for grace periods, which a lost
            // wake-up would leave waiting forever.
            test_support::within_a_deadline(
                "callbacks queued before a fork, then the fork and the barriers",
                WHOLE_TEST_LIMIT,
                || {
                    let mut readers = Holders::new();
                    readers.hold(memb::read_lock);
                    readers.hold(QsbrThread::register);
                    let flavors = flavors();
                    let refusals: Vec<_> = test_support::with_no_room_for_a_thread(|| {
                        flavors
                            .iter()
                            .map(|flavor| {
                                let ran = Arc::clone(&flavor.ran);
                                catch_unwind(AssertUnwindSafe(|| {
                                    (flavor.call_rcu)(Box::new(move || {
                                        ran.fetch_add(1, SeqCst);
                                    }));
                                }))
                            })
                            .collect()
                    });
                    for (flavor, refusal) in flavors.iter().zip(refusals) {
                        let message = test_support::misuse::message_of(&*refusal.expect_err(
                            "the callback worker started anyway: the test checks nothing",
                        ));
                        assert!(
                            message.contains("cannot start the call_rcu() worker thread"),
                            "{}: {message}",
                            flavor.name
                        );
                        assert_eq!(
                            (flavor.callbacks_pending)(),
                            1,
                            "{}: the callback is not queued before the fork",
                            flavor.name
                        );
                    }
                    // SAFETY: the child only counts callback runs through
                    // its own copy of `flavors`: no reference that another
                    // thread's section or registration protected.
                    let status = unsafe {
                        fork_and_wait(HOOKS, || child_runs_the_queued_callbacks(&flavors))
                    };
                    assert_child_succeeded(status, "running the callbacks queued before the fork");
                    for flavor in &flavors {
                        assert_eq!(
                            (flavor.ran.load(SeqCst), (flavor.callbacks_pending)()),
                            (0, 1),
                            "{}: the parent's copy of the callback is not still queued \
                             (runs, pending) after the fork",
                            flavor.name
                        );
                    }
                    readers.release();
                    for flavor in &flavors {
                        test_support::within_a_deadline(
                            &format!("{}::rcu_barrier in the parent", flavor.name),
                            LIMIT,
                            flavor.rcu_barrier,
                        );
                        assert_eq!(
                            flavor.ran.load(SeqCst),
                            1,
                            "{}: the callback queued before the fork did not run exactly once \
                             in the parent",
                            flavor.name
                        );
                    }
                },
            );
        },
    );
}
