//! `rcu_lite::fork`: a child forked while both workers ran, grace periods were
//! being driven, a memb reader sat inside its section and a qsbr registration
//! was online keeps working, and forks a grandchild that does too; and the
//! hooks' misuse panics. Its own process
//! (the test forks), one test at a time.
#![cfg(not(any(miri, loom)))]

mod common;

use rcu_lite::qsbr::QsbrThread;
use rcu_lite::{Rcu, fork, memb, qsbr};
use std::panic::catch_unwind;
use std::sync::atomic::{AtomicBool, Ordering::*};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};
use test_support::misuse::assert_wrong_fork_hook_refused;
use test_support::{Crowd, ForkHooks, Holders, assert_child_succeeded, fork_and_wait};

/// The tests of this file share the process's rcu-lite state: one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

/// How long a grace period or barrier may take before the test counts it as
/// never ending (a lost wake-up): generous, for a loaded 2-CPU machine.
const LIMIT: Duration = Duration::from_secs(60);
/// The same for the whole of the first test, whose own bounded waits add up
/// to 90 s (the worker to drive, a grace period to start, the child's alarm,
/// the parent's callers).
const WHOLE_TEST_LIMIT: Duration = Duration::from_secs(240);

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// Everything a child does with rcu-lite after the fork; returns normally
/// only if all of it completed.
fn child_work() {
    memb::synchronize_rcu();
    qsbr::synchronize_rcu();
    memb::synchronize_rcu_expedited();
    for (call_rcu, barrier) in [
        (
            memb::call_rcu as fn(Box<dyn FnOnce() + Send>),
            memb::rcu_barrier as fn(),
        ),
        (qsbr::call_rcu, qsbr::rcu_barrier),
    ] {
        let ran = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&ran);
        // Release/Acquire: `rcu_barrier` already orders the callback before
        // its return; the pair states what the assertion relies on.
        call_rcu(Box::new(move || flag.store(true, Release)));
        barrier();
        assert!(
            ran.load(Acquire),
            "a callback queued in the child did not run"
        );
    }
    // A crowd again, until the grace-period worker drives: the parent's did
    // not come along, so this one is started anew.
    let crowd = crowd();
    until_the_worker_drives(
        Duration::from_secs(20),
        "no grace-period worker in the child",
    );
    crowd.stop();
    let cell = Rcu::<u64>::new(0);
    cell.replace(1);
    assert_eq!(cell.replace_and_synchronize(2), 1);
    let registration = QsbrThread::register();
    drop(registration);
    memb::rcu_barrier();
}

/// [`child_work`], then a fork of a grandchild that does it too: a child
/// whose workers started anew forks as its parent did (liburcu's
/// `test_urcu_fork` forks three levels deep).
fn child_work_then_a_grandchild() {
    child_work();
    // The child's alarm starts again for its wait on the grandchild, which
    // has an alarm of its own: both stay below their children's limits.
    // SAFETY: a plain libc call.
    unsafe { libc::alarm(test_support::CHILD_ALARM_S) };
    // SAFETY: as for the child: the grandchild reads only cells of its own.
    let status = unsafe { fork_and_wait(HOOKS, child_work) };
    assert_child_succeeded(status, "the grandchild's rcu-lite work");
    memb::rcu_barrier();
    qsbr::rcu_barrier();
}

/// Enough threads calling `memb::synchronize_rcu()` back to back that more
/// than two per CPU wait while one drives: the grace-period worker takes over.
fn crowd() -> Crowd {
    Crowd::start(memb::synchronize_rcu)
}

/// Waits until the grace-period worker has driven one more grace period;
/// fails with `what` after `limit`.
fn until_the_worker_drives(limit: Duration, what: &str) {
    let before = memb::grace_periods().by_worker;
    let deadline = Instant::now() + limit;
    while memb::grace_periods().by_worker == before {
        assert!(Instant::now() < deadline, "{what}");
        thread::sleep(Duration::from_millis(1));
    }
}

const HOOKS: ForkHooks = ForkHooks {
    before: fork::before_fork,
    after_parent: fork::after_fork_parent,
    after_child: fork::after_fork_child,
};

#[test]
fn a_child_forked_in_the_middle_of_everything_keeps_working() {
    test_support::forking_test(
        "a_child_forked_in_the_middle_of_everything_keeps_working",
        || {
            let _serial = serial();
            // On the deadline's thread, as libtest runs a test on a thread of its
            // own: the hooks wait for a running callback batch, and so for its grace
            // period, which a lost wake-up would leave waiting forever.
            test_support::within_a_deadline(
                "the fork of a child in the middle of everything, and the parent going on",
                WHOLE_TEST_LIMIT,
                || {
                    // Both callback workers run.
                    memb::call_rcu(|| {});
                    test_support::within_a_deadline("memb::rcu_barrier", LIMIT, memb::rcu_barrier);
                    qsbr::call_rcu(|| {});
                    test_support::within_a_deadline("qsbr::rcu_barrier", LIMIT, qsbr::rcu_barrier);
                    // A crowd of callers until the grace-period worker has driven (its thread
                    // runs), then on across the fork.
                    let crowd = crowd();
                    until_the_worker_drives(
                        Duration::from_secs(30),
                        "the grace-period worker never drove",
                    );
                    let mut readers = Holders::new();
                    readers.hold(memb::read_lock);
                    readers.hold(QsbrThread::register);
                    // The callers' grace periods now wait for the memb reader: once one has
                    // started after it entered, it stays in progress across the fork. One
                    // that had started before it completes, and then the next one waits.
                    // So: one started after the hold (read below), or the one in progress
                    // then if it is still in progress 50 ms later (it started after the
                    // reader entered, and so no later one can start).
                    let held_at = memb::grace_periods().started;
                    let deadline = Instant::now() + Duration::from_secs(10);
                    loop {
                        let counts = memb::grace_periods();
                        if counts.started > counts.completed {
                            if counts.started > held_at {
                                break;
                            }
                            thread::sleep(Duration::from_millis(50));
                            if memb::grace_periods().completed < held_at {
                                break;
                            }
                        }
                        assert!(
                            Instant::now() < deadline,
                            "no grace period in progress: {counts:?}"
                        );
                        thread::sleep(Duration::from_millis(1));
                    }
                    // SAFETY: the child reads only cells of its own, in sections of
                    // its own: no reference that another thread's section protected.
                    let status = unsafe { fork_and_wait(HOOKS, child_work_then_a_grandchild) };
                    assert_child_succeeded(status, "its rcu-lite work and its grandchild's");
                    // The parent goes on: release the readers, and the callers complete.
                    readers.release();
                    crowd.until_calls(100, Duration::from_secs(30), "the parent's callers stopped");
                    crowd.stop();
                    test_support::within_a_deadline(
                        "memb::synchronize_rcu",
                        LIMIT,
                        memb::synchronize_rcu,
                    );
                    test_support::within_a_deadline(
                        "qsbr::synchronize_rcu",
                        LIMIT,
                        qsbr::synchronize_rcu,
                    );
                },
            );
        },
    );
}

#[test]
fn before_fork_inside_a_memb_read_section_panics() {
    let _serial = serial();
    let guard = memb::read_lock();
    let err = catch_unwind(fork::before_fork).expect_err("before_fork inside a section");
    drop(guard);
    let msg = err.downcast_ref::<String>().cloned().unwrap_or_default();
    assert!(msg.contains("inside a memb read-side section"), "{msg}");
}

#[test]
fn before_fork_with_an_online_qsbr_registration_panics() {
    let _serial = serial();
    // On the deadline's thread, as libtest runs a test on a thread of its
    // own: the hooks wait for a running callback batch, and so for its grace
    // period, which a lost wake-up would leave waiting forever.
    test_support::within_a_deadline("before_fork with the registration offline", LIMIT, || {
        let mut registration = QsbrThread::register();
        let err = catch_unwind(fork::before_fork).expect_err("before_fork while online");
        let msg = err.downcast_ref::<String>().cloned().unwrap_or_default();
        assert!(msg.contains("online qsbr registration"), "{msg}");
        // Offline, the same call is fine.
        registration.while_offline(|| {
            fork::before_fork();
            fork::after_fork_parent();
        });
    });
}

#[test]
fn after_fork_without_before_fork_panics_and_before_fork_twice_panics() {
    let _serial = serial();
    // On the deadline's thread, as libtest runs a test on a thread of its
    // own: the hooks wait for a running callback batch, and so for its grace
    // period, which a lost wake-up would leave waiting forever.
    test_support::within_a_deadline(
        "the hooks called out of order, then call_rcu and rcu_barrier",
        LIMIT,
        || {
            for hook in [fork::after_fork_parent as fn(), fork::after_fork_child] {
                let err = catch_unwind(hook).expect_err("after_fork_* without before_fork");
                let msg = err.downcast_ref::<String>().cloned().unwrap_or_default();
                assert!(
                    msg.contains("without rcu_lite::fork::before_fork()"),
                    "{msg}"
                );
            }
            fork::before_fork();
            let err = catch_unwind(fork::before_fork).expect_err("before_fork twice");
            fork::after_fork_parent();
            let msg = err.downcast_ref::<String>().cloned().unwrap_or_default();
            assert!(msg.contains("twice"), "{msg}");
            // call_rcu works again once the parent hook ran.
            memb::call_rcu(|| {});
            test_support::within_a_deadline("memb::rcu_barrier", LIMIT, memb::rcu_barrier);
        },
    );
}

/// `after_fork_child` in the process that called `before_fork` panics: it
/// would free the records of that process's live threads, so that grace
/// periods stopped waiting for their readers (a reader's guard then even
/// found its section gone). `after_fork_parent` still works there.
#[test]
fn after_fork_child_in_the_parent_panics_and_leaves_its_readers_covered() {
    let _serial = serial();
    // On the deadline's thread, as libtest runs a test on a thread of its
    // own: the hooks wait for a running callback batch, and so for its grace
    // period, which a lost wake-up would leave waiting forever.
    test_support::within_a_deadline(
        "the hooks and a grace period behind a reader",
        LIMIT,
        || {
            // Callbacks an earlier test left queued (a cell's replaced
            // value, a barrier's) may still wait for their batch. A batch
            // running at `before_fork` below would hold it up until the
            // batch's grace period ends, which waits for the reader, which
            // waits for this thread to get past the hooks: a deadlock
            // (stress runs hung about 3 times in 100). Drained first, no
            // batch runs here.
            memb::rcu_barrier();
            qsbr::rcu_barrier();
            let entered = Arc::new(std::sync::Barrier::new(2));
            let leave = Arc::new(AtomicBool::new(false));
            let reader = {
                let (entered, leave) = (Arc::clone(&entered), Arc::clone(&leave));
                thread::spawn(move || {
                    let guard = memb::read_lock();
                    entered.wait();
                    while !leave.load(Acquire) {
                        thread::sleep(Duration::from_millis(1));
                    }
                    // Panics (unbalanced unlock) if the section was taken away.
                    drop(guard);
                })
            };
            entered.wait();
            fork::before_fork();
            assert_wrong_fork_hook_refused(
                fork::after_fork_child,
                "after_fork_child() called in the process that called before_fork()",
            );
            fork::after_fork_parent();
            // A grace period still waits for the reader: it has not completed while
            // the reader stays inside.
            let synchronized = Arc::new(AtomicBool::new(false));
            let synchronizer = {
                let synchronized = Arc::clone(&synchronized);
                thread::spawn(move || {
                    memb::synchronize_rcu();
                    synchronized.store(true, Release);
                })
            };
            thread::sleep(Duration::from_millis(50));
            let early = synchronized.load(Acquire);
            leave.store(true, Release);
            reader.join().expect("the reader's section was intact");
            test_support::within_a_deadline(
                "memb::synchronize_rcu once the reader left",
                LIMIT,
                move || synchronizer.join().unwrap(),
            );
            assert!(
                !early,
                "a grace period ended while a reader was still inside"
            );
        },
    );
}

/// The hooks of a child that first calls `after_fork_parent`, which panics
/// (the child would keep waiting for threads that did not come along), and
/// then `after_fork_child`, which still works.
fn after_fork_parent_then_child() {
    assert_wrong_fork_hook_refused(
        fork::after_fork_parent,
        "after_fork_parent() called in a child of fork()",
    );
    fork::after_fork_child();
}

#[test]
fn after_fork_parent_in_the_child_panics_and_after_fork_child_still_works() {
    test_support::forking_test(
        "after_fork_parent_in_the_child_panics_and_after_fork_child_still_works",
        || {
            let _serial = serial();
            // On the deadline's thread, as libtest runs a test on a thread of its
            // own: the hooks wait for a running callback batch, and so for its grace
            // period, which a lost wake-up would leave waiting forever.
            test_support::within_a_deadline(
                "a fork whose child calls the wrong hook first",
                LIMIT,
                || {
                    let hooks = ForkHooks {
                        after_child: after_fork_parent_then_child,
                        ..HOOKS
                    };
                    // SAFETY: the child reads nothing under RCU: it holds no
                    // reference that another thread's section protected.
                    let status = unsafe {
                        fork_and_wait(hooks, || {
                            memb::synchronize_rcu();
                            memb::call_rcu(|| {});
                            memb::rcu_barrier();
                        })
                    };
                    assert_child_succeeded(status, "its hooks and a grace period");
                },
            );
        },
    );
}

/// Between `before_fork` and `after_fork_*` the forking thread holds both
/// callback queues' locks: queuing a callback there would wait for itself,
/// and a grace period could wait for a reader blocked in `call_rcu()`.
#[test]
fn queuing_callbacks_or_waiting_for_readers_between_the_fork_hooks_panics() {
    let _serial = serial();
    type Misuse = fn();
    let misuses: [(&str, &str, Misuse); 10] = [
        ("Rcu::update", "rcu_lite::memb::", || {
            Rcu::<u64>::new(1).update(|v| v + 1);
        }),
        (
            "Rcu::replace_and_synchronize",
            "rcu_lite::Rcu::replace_and_synchronize() (on a memb cell)",
            || {
                Rcu::<u64>::new(1).replace_and_synchronize(2);
            },
        ),
        (
            "memb::synchronize_rcu",
            "rcu_lite::memb::synchronize_rcu()",
            memb::synchronize_rcu,
        ),
        (
            "qsbr::synchronize_rcu_expedited",
            "rcu_lite::qsbr::synchronize_rcu_expedited()",
            qsbr::synchronize_rcu_expedited,
        ),
        (
            "QsbrThread::synchronize_rcu",
            "rcu_lite::qsbr::QsbrThread::synchronize_rcu()",
            || QsbrThread::register().synchronize_rcu(),
        ),
        ("memb::call_rcu", "rcu_lite::memb::", || {
            memb::call_rcu(|| {})
        }),
        ("qsbr::call_rcu", "rcu_lite::qsbr::", || {
            qsbr::call_rcu(|| {})
        }),
        ("memb::rcu_barrier", "rcu_lite::memb::", memb::rcu_barrier),
        ("qsbr::rcu_barrier", "rcu_lite::qsbr::", qsbr::rcu_barrier),
        ("Rcu::replace", "rcu_lite::memb::", || {
            Rcu::<u64>::new(1).replace(2);
        }),
    ];
    for (what, flavor, misuse) in misuses {
        test_support::misuse::assert_misuse(
            &format!("{what} between the fork hooks"),
            &[
                flavor,
                "between rcu_lite::fork::before_fork()",
                "(deadlock)",
            ],
            move || {
                fork::before_fork();
                test_support::misuse::refused_then(misuse, || {
                    // Nothing was left held: once the parent hook ran, queuing
                    // and waiting for callbacks works again.
                    fork::after_fork_parent();
                    memb::call_rcu(|| {});
                    memb::rcu_barrier();
                    qsbr::rcu_barrier();
                    memb::synchronize_rcu();
                });
            },
        );
    }
}

/// A `call_rcu` refused between the hooks leaks its callback: what the
/// callback owns may still be reachable by readers until a grace period
/// (`call_rcu(move || drop(old))`), so the refusal's unwind must not drop it.
#[test]
fn a_refused_call_rcu_neither_runs_nor_drops_its_callback() {
    let _serial = serial();
    /// Sets its flag when dropped.
    struct Flagged(Arc<AtomicBool>);
    impl Drop for Flagged {
        fn drop(&mut self) {
            self.0.store(true, SeqCst);
        }
    }
    let dropped = Arc::new(AtomicBool::new(false));
    let ran = Arc::new(AtomicBool::new(false));
    let (owned, flag) = (Flagged(Arc::clone(&dropped)), Arc::clone(&ran));
    test_support::within_a_deadline("a call_rcu between the hooks", LIMIT, move || {
        fork::before_fork();
        let refused = catch_unwind(std::panic::AssertUnwindSafe(move || {
            memb::call_rcu(move || {
                let _owned = owned;
                flag.store(true, SeqCst);
            })
        }));
        fork::after_fork_parent();
        assert!(refused.is_err(), "call_rcu between the hooks is refused");
        memb::rcu_barrier();
    });
    assert!(!ran.load(SeqCst), "the refused callback ran");
    assert!(
        !dropped.load(SeqCst),
        "the refused callback was dropped, and what it owned with it"
    );
}

/// A qsbr callback that waits in `memb::rcu_barrier()` holds the qsbr batch
/// lock until the memb worker runs a batch. `before_fork` must not keep the
/// memb batch lock while it waits for the qsbr one: its wait for the second
/// lock is bounded, and it then lets go of the first and starts again with
/// the other flavor first.
#[test]
fn before_fork_while_a_callback_waits_for_the_other_flavors_callbacks() {
    let _serial = serial();
    let (started_tx, started) = std::sync::mpsc::channel();
    let (finished_tx, finished) = std::sync::mpsc::channel();
    qsbr::call_rcu(move || {
        started_tx.send(()).expect("the test waits");
        // Long enough for the forking thread to block in `before_fork`.
        thread::sleep(Duration::from_millis(300));
        memb::rcu_barrier();
        finished_tx.send(()).expect("the test waits");
    });
    started.recv().expect("the qsbr callback runs");
    let (forked_tx, forked) = std::sync::mpsc::channel();
    thread::spawn(move || {
        fork::before_fork();
        fork::after_fork_parent();
        forked_tx.send(()).expect("the test waits");
    });
    let limit = Duration::from_secs(20);
    assert!(
        forked.recv_timeout(limit).is_ok(),
        "before_fork() still waiting after {limit:?}: it kept one flavor's batch lock while \
         waiting for the other's"
    );
    assert!(
        finished.recv_timeout(limit).is_ok(),
        "the qsbr callback's memb::rcu_barrier() did not return"
    );
}

/// Another thread's `Rcu::update` holds the cell's update lock while its
/// `call_rcu` waits for the queue lock the hooks hold: a `replace` of the
/// same cell on the forking thread must be refused before it waits for that
/// update lock, and must publish nothing. The same for `replace_polled`,
/// whose refusal comes before it publishes anything too (until 2026-12-07
/// no test held it to that).
#[test]
fn a_replace_between_the_hooks_is_refused_before_the_cells_update_lock() {
    refused_before_the_cells_update_lock("Rcu::replace", |cell| cell.replace(3));
}

#[test]
fn a_replace_polled_between_the_hooks_is_refused_before_the_cells_update_lock() {
    refused_before_the_cells_update_lock("Rcu::replace_polled", |cell| {
        let _retired = cell.replace_polled(3);
    });
}

/// A `Retired` dropped between the fork hooks before its grace period has
/// ended (a reader that began before the replace is still inside) leaks its
/// value, as documented: not dropped then, where `call_rcu` is refused,
/// and not later either. Freeing it at once instead would free what the
/// reader holds; no test held the drop to this until 2026-12-07.
///
/// `replace_polled` asks the callback worker for a grace period. Taken as a
/// batch, that request would wait for the reader, which waits for this
/// test, and the fork would wait for the batch: until 2026-12-07 the test
/// hung so whenever the worker took the request before `before_fork` took
/// the batch lock (both runs under `SYNCPRIMS_FENCE=seqcst` on a 2-vCPU
/// AMD guest). So the worker is kept in a callback until the fork waits for
/// it, and the request stays queued behind the fork.
#[test]
fn a_retired_dropped_between_the_hooks_leaks_its_value() {
    static DROPS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    struct Counted;
    impl Drop for Counted {
        fn drop(&mut self) {
            DROPS.fetch_add(1, SeqCst);
        }
    }
    const FORKER: &str = "retired-forker";
    let _serial = serial();
    test_support::within_a_deadline("a Retired dropped between the hooks", LIMIT, || {
        // Callbacks an earlier test left queued: their batch would wait for
        // the reader too.
        memb::rcu_barrier();
        qsbr::rcu_barrier();
        let release_tx = common::hold_the_callback_thread::<rcu_lite::Memb>(LIMIT);
        let cell: &'static Rcu<Counted> = Box::leak(Box::new(Rcu::new(Counted)));
        let (inside_tx, inside) = std::sync::mpsc::channel();
        let (leave_tx, leave) = std::sync::mpsc::channel::<()>();
        let reader = thread::spawn(move || {
            let guard = memb::read_lock();
            let _held: &Counted = cell.read(&guard);
            inside_tx.send(()).expect("the test waits");
            leave.recv().expect("the test says when");
        });
        inside.recv().expect("the reader is inside");
        let (forking_tx, forking) = std::sync::mpsc::channel();
        let forker = thread::Builder::new()
            .name(FORKER.into())
            .spawn(move || {
                let retired = cell.replace_polled(Counted);
                forking_tx.send(()).expect("the test waits");
                fork::before_fork();
                drop(retired);
                fork::after_fork_parent();
            })
            .expect("spawn the forking thread");
        forking.recv().expect("the forking thread forks");
        // Asleep in `before_fork`, counted as a fork waiting: the worker
        // starts no batch once the callback returns.
        test_support::until_asleep(FORKER, 3, LIMIT, "the fork, waiting for the callback");
        release_tx.send(()).expect("the callback waits");
        forker.join().expect("the hooks");
        assert_eq!(DROPS.load(SeqCst), 0, "dropped while a reader held it");
        leave_tx.send(()).expect("the reader waits");
        reader.join().expect("the reader returns");
        memb::synchronize_rcu();
        memb::rcu_barrier();
        assert_eq!(
            DROPS.load(SeqCst),
            0,
            "a Retired dropped between the hooks handed its value on after all"
        );
    });
}

fn refused_before_the_cells_update_lock(what: &str, replace: fn(&'static Rcu<u64>)) {
    let _serial = serial();
    let cell: &'static Rcu<u64> = Box::leak(Box::new(Rcu::new(1)));
    let (forked_tx, forked) = std::sync::mpsc::channel();
    let (refused_tx, refused) = std::sync::mpsc::channel::<()>();
    let (updating_tx, updating) = std::sync::mpsc::channel::<()>();
    let forking = thread::spawn(move || {
        fork::before_fork();
        forked_tx.send(()).expect("the test waits");
        // Until the other thread is inside its update, holding the update
        // lock, and then long enough for it to block in its `call_rcu`.
        updating
            .recv()
            .expect("the updater runs its update function");
        thread::sleep(Duration::from_millis(50));
        let outcome = catch_unwind(|| replace(cell));
        refused_tx.send(()).expect("the test waits");
        fork::after_fork_parent();
        outcome
    });
    forked.recv().expect("before_fork returns");
    // Its update function's call_rcu waits for the hooks, holding the
    // update lock.
    let updater = thread::spawn(move || {
        cell.update(|v| {
            updating_tx.send(()).expect("the forking thread waits");
            memb::call_rcu(|| {});
            v + 1
        })
    });
    assert!(
        refused.recv_timeout(Duration::from_secs(20)).is_ok(),
        "{what} on the forking thread waited for the update lock"
    );
    let err = forking.join().expect("joined").expect_err("refused");
    let msg = err.downcast_ref::<String>().cloned().unwrap_or_default();
    assert!(
        msg.contains("between rcu_lite::fork::before_fork()"),
        "{what}: {msg}"
    );
    updater
        .join()
        .expect("the update completes once the hooks are gone");
    let guard = rcu_lite::memb::read_lock();
    assert_eq!(
        *cell.read(&guard),
        2,
        "the refused {what} published nothing"
    );
}

/// `Rcu::update`'s function must not call `before_fork` (it runs holding the
/// cell's update lock, and `before_fork` waits for a running callback batch,
/// whose callback may be waiting for that lock): refused there, and the
/// update then publishes nothing.
#[test]
fn before_fork_inside_an_update_function_publishes_nothing() {
    let _serial = serial();
    // Under a deadline, as every wait here: `before_fork` waits for a
    // running callback batch.
    test_support::within_a_deadline("before_fork inside an update function", LIMIT, || {
        let cell = Rcu::<u64>::new(1);
        let err = catch_unwind(std::panic::AssertUnwindSafe(|| {
            cell.update(|v| {
                fork::before_fork();
                v + 1
            })
        }))
        .expect_err("refused");
        let msg = err.downcast_ref::<String>().cloned().unwrap_or_default();
        assert!(
            msg.contains("before_fork() called inside an Rcu::update() function"),
            "{msg}"
        );
        let guard = memb::read_lock();
        assert_eq!(
            *cell.read(&guard),
            1,
            "the refused update published its value"
        );
        drop(guard);
        // Nothing is held: the hooks and updates work.
        fork::before_fork();
        fork::after_fork_parent();
        cell.update(|v| v + 1);
        assert_eq!(*cell.read(&memb::read_lock()), 2);
    });
}
