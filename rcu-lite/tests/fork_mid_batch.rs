//! A fork during a long callback batch (`rcu_lite::fork`, "What they do"):
//! `before_fork` waits for the callback running, not for the whole batch.
//! The worker carries the rest of its batch over to the next, ahead of the
//! queue, and starts no new batch while a fork waits, and those callbacks
//! then run exactly once in each process, in order, without waiting for
//! another grace period. Before 2026-12-06 the worker took
//! the batch lock back the moment it let go, and a fork waited until the
//! queue ran dry: 47 s under a steady stream of 200 us callbacks.
//!
//! Also: a child forked while a second thread of the parent waits to fork
//! keeps running callbacks and can fork in turn; and a fork whose second
//! flavor's batch waits, through a grace period, on the first flavor's
//! worker does not hold that worker up for good.
//!
//! The forking tests run in a process of their own
//! (`test_support::forking_test`).
#![cfg(not(any(miri, loom)))]

mod common;

use rcu_lite::qsbr::QsbrThread;
use rcu_lite::{fork, memb, qsbr};
use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::sync::{Arc, Mutex, mpsc};
use std::thread;
use std::time::Duration;
use test_support::{ForkHooks, Holders, assert_child_succeeded, fork_and_wait};

/// How long a barrier may take before the test counts it as never ending.
const LIMIT: Duration = Duration::from_secs(60);

const HOOKS: ForkHooks = ForkHooks {
    before: fork::before_fork,
    after_parent: fork::after_fork_parent,
    after_child: fork::after_fork_child,
};

/// Callbacks in the long batch, each sleeping [`NAP`]: 2.4 s in all, so
/// that the fork, asked for once the first has started, lands well inside.
const CALLBACKS: usize = 40;
const NAP: Duration = Duration::from_millis(60);

/// A fork made while the worker runs the first of 40 callbacks of one batch
/// finds fewer than 40 run (the worker let the fork in between two), and
/// every one of them then runs exactly once and in order, in the child and
/// in the parent.
#[test]
fn a_fork_waits_for_the_running_callback_not_the_whole_batch() {
    test_support::forking_test(
        "a_fork_waits_for_the_running_callback_not_the_whole_batch",
        || {
            test_support::within_a_deadline("a fork in a long batch", LIMIT * 3, || {
                // The worker running, then a first batch that a reader holds
                // up in its grace period while the long batch is queued
                // behind it, so that the 40 make one batch of their own.
                memb::call_rcu(|| {});
                memb::rcu_barrier();
                let mut reader = Holders::new();
                reader.hold(memb::read_lock);
                memb::call_rcu(|| {});
                // Time for the worker to wake and take that batch (were it
                // to take some of the 40 with it, the test would check less,
                // never fail wrongly).
                thread::sleep(Duration::from_millis(50));
                let ran = Arc::new(Mutex::new(Vec::new()));
                let (first_started, started) = mpsc::channel();
                for i in 0..CALLBACKS {
                    let (ran, first_started) = (Arc::clone(&ran), first_started.clone());
                    memb::call_rcu(move || {
                        ran.lock().unwrap().push(i);
                        if i == 0 {
                            first_started.send(()).unwrap();
                        }
                        thread::sleep(NAP);
                    });
                }
                reader.release();
                started.recv().unwrap();
                // SAFETY: the child touches only its copy of `ran`.
                let status = unsafe {
                    fork_and_wait(HOOKS, || {
                        let at_the_fork = ran.lock().unwrap().len();
                        assert!(
                            at_the_fork < CALLBACKS,
                            "the fork waited for the whole batch ({at_the_fork} callbacks run)"
                        );
                        memb::rcu_barrier();
                        assert_eq!(
                            *ran.lock().unwrap(),
                            (0..CALLBACKS).collect::<Vec<_>>(),
                            "in the child, each callback runs once, in order"
                        );
                    })
                };
                assert_child_succeeded(status, "running the rest of the batch");
                memb::rcu_barrier();
                assert_eq!(
                    *ran.lock().unwrap(),
                    (0..CALLBACKS).collect::<Vec<_>>(),
                    "in the parent, each callback runs once, in order"
                );
            });
        },
    );
}

/// Set by the forking thread's `before` hook once it holds the locks.
static HOLDING: AtomicBool = AtomicBool::new(false);

/// `before_fork`, then a pause in which the second thread starts its own
/// `before_fork` and waits for the locks this one holds.
fn before_fork_with_a_second_forker_waiting() {
    fork::before_fork();
    HOLDING.store(true, SeqCst);
    thread::sleep(Duration::from_millis(100));
}

/// A child forked while another thread of the parent waits in
/// `before_fork` runs callbacks, and can call the hooks itself: forks wait
/// for one another before they count as waiting for the batch lock (which
/// keeps the worker from starting a batch), and the child's hook releases
/// what the forking thread held, that wait included.
#[test]
fn a_child_forked_while_another_thread_waits_to_fork_runs_callbacks() {
    test_support::forking_test(
        "a_child_forked_while_another_thread_waits_to_fork_runs_callbacks",
        || {
            test_support::within_a_deadline("a fork with a second forker", LIMIT * 3, || {
                // The worker running before the fork, and the second
                // forker's thread started (the child must not start threads
                // that another thread's start or exit left locked).
                memb::call_rcu(|| {});
                memb::rcu_barrier();
                let second = thread::spawn(|| {
                    while !HOLDING.load(SeqCst) {
                        thread::sleep(Duration::from_millis(1));
                    }
                    fork::before_fork();
                    fork::after_fork_parent();
                });
                let hooks = ForkHooks {
                    before: before_fork_with_a_second_forker_waiting,
                    ..HOOKS
                };
                // SAFETY: the child touches only its own callback's flag.
                let status = unsafe {
                    fork_and_wait(hooks, || {
                        let ran = Arc::new(AtomicBool::new(false));
                        let flag = Arc::clone(&ran);
                        memb::call_rcu(move || flag.store(true, SeqCst));
                        memb::rcu_barrier();
                        assert!(ran.load(SeqCst), "the child's callback did not run");
                        fork::before_fork();
                        fork::after_fork_parent();
                    })
                };
                assert_child_succeeded(status, "a callback and a barrier");
                second.join().unwrap();
            });
        },
    );
}

/// Queues `callbacks` as one batch: while the worker is held in a callback
/// of its own, so that none of them is taken before the last is queued;
/// returns once the first of them has started.
fn one_batch_started(callbacks: Vec<Box<dyn FnOnce() + Send>>) {
    let release_tx = common::hold_the_callback_thread::<rcu_lite::Memb>(LIMIT);
    let (first_started, started) = mpsc::channel();
    for (i, callback) in callbacks.into_iter().enumerate() {
        let first_started = first_started.clone();
        memb::call_rcu(move || {
            if i == 0 {
                let _ = first_started.send(());
            }
            callback();
        });
    }
    release_tx.send(()).unwrap();
    started.recv().unwrap();
}

/// The rest of a batch that a fork cut short runs once the fork is over,
/// in order, without waiting for another grace period: theirs has ended.
/// Here a reader enters a section between the hooks and stays inside until
/// the last of them has run (10 s at most). Until 2026-12-07 the rest went
/// back to the front of the queue and waited for one more grace period,
/// which that reader held up: they ran only when it gave up.
#[test]
fn the_rest_of_a_batch_cut_short_by_a_fork_runs_without_another_grace_period() {
    test_support::within_a_deadline("the rest of a batch after a fork", LIMIT, || {
        const REST: usize = 20;
        let order = Arc::new(Mutex::new(Vec::new()));
        let (last_ran, all_ran) = mpsc::channel();
        one_batch_started(
            (0..=REST)
                .map(|i| {
                    let order = Arc::clone(&order);
                    let last_ran = last_ran.clone();
                    Box::new(move || {
                        thread::sleep(Duration::from_millis(10));
                        order.lock().unwrap().push(i);
                        if i == REST {
                            let _ = last_ran.send(());
                        }
                    }) as Box<dyn FnOnce() + Send>
                })
                .collect(),
        );
        // Waits for the running callback; the worker carries the rest over.
        fork::before_fork();
        let (inside_tx, inside) = mpsc::channel();
        let reader = thread::spawn(move || {
            let _guard = memb::read_lock();
            inside_tx.send(()).unwrap();
            all_ran.recv_timeout(Duration::from_secs(10)).is_ok()
        });
        inside.recv().unwrap();
        fork::after_fork_parent();
        assert!(
            reader.join().unwrap(),
            "the rest of the batch waited for a grace period that a reader inside a section \
             held up"
        );
        let order = order.lock().unwrap();
        assert_eq!(
            *order,
            (0..=REST).collect::<Vec<_>>(),
            "each once, in order"
        );
    });
}

/// A grace period polled for in a fork child whose queue holds only the
/// carried rest of a batch (which runs without a grace period) is still
/// driven: `start_poll_synchronize_rcu()` queues a callback of its own.
/// Until 2026-12-07, finding the queue not empty, it queued nothing, and the
/// child's poll never elapsed (from a review of that day's changes).
#[test]
fn a_poll_behind_a_carried_batch_is_driven() {
    test_support::forking_test("a_poll_behind_a_carried_batch_is_driven", || {
        test_support::within_a_deadline("a poll behind a carried batch", LIMIT, || {
            let (at_fork_tx, at_fork) = mpsc::channel::<()>();
            one_batch_started(vec![
                // Returns once the fork is under way: the fork waits for it,
                // and the worker then carries the second callback over.
                Box::new(move || {
                    let _ = at_fork.recv();
                    thread::sleep(Duration::from_millis(200));
                }),
                Box::new(|| {}),
            ]);
            at_fork_tx.send(()).unwrap();
            // SAFETY: the child touches nothing another thread owns.
            let status = unsafe {
                fork_and_wait(HOOKS, || {
                    let state = memb::start_poll_synchronize_rcu();
                    let deadline = std::time::Instant::now() + Duration::from_secs(20);
                    while !memb::poll_state_synchronize_rcu(state) {
                        assert!(
                            std::time::Instant::now() < deadline,
                            "the child's polled grace period was never driven"
                        );
                        thread::sleep(Duration::from_millis(5));
                    }
                })
            };
            assert_child_succeeded(status, "a poll behind a carried batch");
            memb::rcu_barrier();
        });
    });
}

/// A fork whose first flavor's batch lock is free but whose second
/// flavor's batch waits for a grace period held up by a reader, which is
/// itself waiting in the first flavor's `rcu_barrier()`: the fork must not
/// keep the first lock while it waits for the second. Here a qsbr
/// callback's grace period waits for an online `QsbrThread`, whose thread
/// calls `memb::rcu_barrier()` 50 ms into the fork's wait and reports a
/// quiescent state once that returns. (Until 2026-12-06 the fork held the
/// memb batch lock while it waited for the qsbr one: the barrier, the grace
/// period and the fork each waited for the next, for good.)
#[test]
fn a_fork_does_not_hold_one_flavor_while_the_other_waits_on_it() {
    test_support::within_a_deadline("a fork against a cross-flavor wait", LIMIT, || {
        let (online, registered) = mpsc::channel();
        let (barrier_now, go) = mpsc::channel::<()>();
        let reader = thread::spawn(move || {
            let mut registration = QsbrThread::register();
            online.send(()).unwrap();
            go.recv().unwrap();
            memb::rcu_barrier();
            registration.quiescent_state();
        });
        registered.recv().unwrap();
        // A qsbr batch whose grace period waits for the reader.
        qsbr::call_rcu(|| {});
        thread::sleep(Duration::from_millis(20));
        let forker = thread::spawn(|| {
            fork::before_fork();
            fork::after_fork_parent();
        });
        thread::sleep(Duration::from_millis(50));
        barrier_now.send(()).unwrap();
        forker.join().expect("the fork hooks");
        reader.join().expect("the reader");
        qsbr::rcu_barrier();
    });
}
