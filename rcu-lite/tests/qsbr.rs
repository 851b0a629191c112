//! The qsbr flavor's behaviour, with real threads.

use rcu_lite::qsbr::{self, QsbrThread};
use rcu_lite::{Qsbr, Rcu};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::sync::{Arc, Barrier, mpsc};
use std::thread;
use std::time::{Duration, Instant};

/// How long a grace period or barrier may take before the test counts it as
/// never ending (a lost wake-up): generous, for a loaded 2-CPU machine.
const LIMIT: Duration = Duration::from_secs(60);

/// Held by every test here for its whole run. The tests keep qsbr
/// registrations online, and a grace period waits for all of them: run side
/// by side, one test's online reader would hold up another test's grace
/// period, and a registration that wrongly stayed offline could go unseen
/// (as `qsbr_register.rs` says of its own test).
fn alone() -> std::sync::MutexGuard<'static, ()> {
    static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());
    SERIAL
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[test]
fn synchronize_waits_for_an_online_thread_until_its_quiescent_state() {
    let _alone = alone();
    let synchronized = Arc::new(AtomicBool::new(false));
    let (online_tx, online_at_return) = mpsc::channel();
    let seen = Arc::clone(&synchronized);
    let set = Arc::clone(&synchronized);
    test_support::assert_waits_for_reader(
        "qsbr::synchronize_rcu",
        Duration::from_millis(50),
        QsbrThread::register,
        move |mut me| {
            // Stay online until the grace period has ended (bounded): it must
            // not need more than a quiescent state. Announced again and again,
            // since the grace period may not have started by the first (the
            // process's first one registers it for membarrier, which can
            // outlast the hold; another test's may be the one in progress).
            let deadline = Instant::now() + LIMIT / 2;
            while !seen.load(SeqCst) && Instant::now() < deadline {
                me.quiescent_state();
                thread::sleep(Duration::from_millis(1));
            }
            online_tx.send(seen.load(SeqCst)).unwrap();
            drop(me);
        },
        || {
            test_support::within_a_deadline(
                "qsbr::synchronize_rcu behind an online thread",
                LIMIT,
                move || {
                    qsbr::synchronize_rcu();
                    set.store(true, SeqCst);
                },
            )
        },
    );
    assert!(
        online_at_return.recv().unwrap(),
        "qsbr::synchronize_rcu did not end at the online thread's quiescent state: it waited \
         until the thread went offline"
    );
}

/// A registration comes back online, with a fresh snapshot, whenever a wait
/// that took it offline ends: `while_offline`'s closure returning or
/// unwinding, its own `synchronize_rcu`, `synchronize_rcu_expedited` and
/// `rcu_barrier`, and `OfflineQsbrThread::online`. A grace period that starts
/// afterwards waits for it, as for any online registration.
#[test]
fn synchronize_waits_for_a_registration_back_online() {
    let _alone = alone();
    type OfflineWait = fn(QsbrThread) -> QsbrThread;
    let waits: [(&str, OfflineWait); 6] = [
        ("QsbrThread::while_offline", |mut me| {
            assert_eq!(me.while_offline(|| 7), 7);
            me
        }),
        (
            "QsbrThread::while_offline, its closure unwinding",
            |mut me| {
                let unwound = catch_unwind(AssertUnwindSafe(|| {
                    me.while_offline(|| panic!("a panic inside QsbrThread::while_offline"))
                }));
                assert!(
                    unwound.is_err(),
                    "the closure's panic did not reach the caller"
                );
                me
            },
        ),
        ("QsbrThread::synchronize_rcu", |mut me| {
            me.synchronize_rcu();
            me
        }),
        ("QsbrThread::synchronize_rcu_expedited", |mut me| {
            me.synchronize_rcu_expedited();
            me
        }),
        ("QsbrThread::rcu_barrier", |mut me| {
            me.rcu_barrier();
            me
        }),
        ("OfflineQsbrThread::online", |me| {
            let offline = me.offline();
            // Offline, this thread may wait for a grace period itself.
            qsbr::synchronize_rcu();
            offline.online()
        }),
    ];
    // The process's first grace period registers it for membarrier, which
    // can take longer than the reader's hold: a grace period that wrongly
    // skipped the registration would then still return after the reader
    // left. Pay for that first, outside the checks.
    qsbr::synchronize_rcu();
    for (name, offline_wait) in waits {
        test_support::assert_waits_for_reader(
            &format!("qsbr::synchronize_rcu after {name}"),
            Duration::from_millis(50),
            move || offline_wait(QsbrThread::register()),
            drop,
            || {
                test_support::within_a_deadline(
                    "qsbr::synchronize_rcu behind a registration back online",
                    LIMIT,
                    qsbr::synchronize_rcu,
                )
            },
        );
    }
}

/// `QsbrThread::synchronize_rcu` and `QsbrThread::synchronize_rcu_expedited`
/// take only the caller's own registration offline: the grace period they
/// wait for still waits for every other online registration, here another
/// thread's that announces no quiescent state until it is dropped. (A
/// method that only went offline and back, without waiting, would return
/// at once and hand its caller a grace period that never happened.)
#[test]
fn a_registrations_own_synchronize_waits_for_another_online_registration() {
    let _alone = alone();
    type OwnWait = fn(&mut QsbrThread);
    let waits: [(&str, OwnWait); 2] = [
        ("QsbrThread::synchronize_rcu", QsbrThread::synchronize_rcu),
        (
            "QsbrThread::synchronize_rcu_expedited",
            QsbrThread::synchronize_rcu_expedited,
        ),
    ];
    // Pay for the process's first grace period outside the checks (see
    // `synchronize_waits_for_a_registration_back_online`).
    qsbr::synchronize_rcu();
    for (name, own_wait) in waits {
        test_support::assert_waits_for_reader(
            name,
            Duration::from_millis(50),
            QsbrThread::register,
            // Dropping the registration takes it offline.
            drop,
            || {
                test_support::within_a_deadline(
                    &format!("{name} behind another thread's online registration"),
                    LIMIT,
                    // The caller's registration, on the deadline's thread: a
                    // registration cannot move to another thread.
                    move || own_wait(&mut QsbrThread::register()),
                )
            },
        );
    }
}

/// `qsbr::synchronize_rcu_expedited` runs its grace period at once, but it
/// is still a grace period: it waits for an online registration that began
/// before it until that registration goes offline.
#[test]
fn synchronize_expedited_waits_for_an_online_registration() {
    let _alone = alone();
    // Pay for the process's first grace period outside the check.
    qsbr::synchronize_rcu();
    test_support::assert_waits_for_reader(
        "qsbr::synchronize_rcu_expedited",
        Duration::from_millis(50),
        QsbrThread::register,
        // Dropping the registration takes it offline.
        drop,
        || {
            test_support::within_a_deadline(
                "qsbr::synchronize_rcu_expedited behind an online registration",
                LIMIT,
                qsbr::synchronize_rcu_expedited,
            )
        },
    );
}

/// Dropping an `OfflineQsbrThread` unregisters: the next registration takes
/// its record over instead of the registry growing a new one each time.
/// (Other tests of this binary register in parallel and may add a few
/// records meanwhile; a leak would add one per round.)
#[test]
fn dropping_an_offline_qsbr_thread_gives_its_record_back() {
    let _alone = alone();
    const ROUNDS: usize = 1_000;
    let before = qsbr::grace_periods().records;
    for _ in 0..ROUNDS {
        let offline = QsbrThread::register().offline();
        drop(offline);
    }
    // And the round trip: online, offline, online, dropped.
    for _ in 0..ROUNDS {
        drop(QsbrThread::register().offline().online());
    }
    let after = qsbr::grace_periods().records;
    assert!(
        after - before < ROUNDS / 10,
        "{before} records before {ROUNDS} registrations dropped offline (and {ROUNDS} dropped \
         after going online again), {after} after: their records were not given back"
    );
}

/// A thread that stays online and keeps announcing quiescent states lets
/// grace periods end: each announcement credits it.
#[test]
fn quiescent_states_end_grace_periods_while_the_thread_stays_online() {
    let _alone = alone();
    let stop = Arc::new(AtomicBool::new(false));
    let reader = {
        let stop = Arc::clone(&stop);
        thread::spawn(move || {
            let mut me = QsbrThread::register();
            while !stop.load(SeqCst) {
                me.quiescent_state();
                thread::sleep(Duration::from_millis(1));
            }
        })
    };
    let (ended_tx, ended) = mpsc::channel();
    thread::spawn(move || {
        qsbr::synchronize_rcu();
        let _ = ended_tx.send(());
    });
    let ended = ended.recv_timeout(LIMIT).is_ok();
    stop.store(true, SeqCst);
    reader.join().unwrap();
    assert!(
        ended,
        "qsbr::synchronize_rcu still waiting after {LIMIT:?} for an online thread that \
         announced a quiescent state every millisecond"
    );
}

/// An offline registration holds up no grace period, whichever way it went
/// offline: inside `while_offline`'s closure, or as the `OfflineQsbrThread`
/// that `offline` returns.
#[test]
fn an_offline_thread_holds_up_no_grace_period() {
    let _alone = alone();
    type Offline = fn(QsbrThread, &Barrier, &Barrier) -> QsbrThread;
    let ways: [(&str, Offline); 2] = [
        (
            "inside QsbrThread::while_offline",
            |mut me, ready, release| {
                me.while_offline(|| {
                    ready.wait();
                    release.wait();
                });
                me
            },
        ),
        ("an OfflineQsbrThread", |me, ready, release| {
            let offline = me.offline();
            ready.wait();
            release.wait();
            offline.online()
        }),
    ];
    for (way, offline_wait) in ways {
        let ready = Arc::new(Barrier::new(2));
        let release = Arc::new(Barrier::new(2));
        let reader = {
            let (ready, release) = (Arc::clone(&ready), Arc::clone(&release));
            thread::spawn(move || {
                let mut me = offline_wait(QsbrThread::register(), &ready, &release);
                me.quiescent_state();
            })
        };
        ready.wait();
        // If offline registrations held up grace periods, this would never
        // return.
        test_support::within_a_deadline(
            &format!("qsbr::synchronize_rcu with the only registration offline, {way}"),
            Duration::from_secs(20),
            qsbr::synchronize_rcu,
        );
        release.wait();
        reader.join().unwrap();
    }
}

#[test]
fn a_registration_can_synchronize_and_read_afterwards() {
    let _alone = alone();
    // All of it on the deadline's thread, since a registration cannot move
    // to another thread.
    test_support::within_a_deadline(
        "QsbrThread::synchronize_rcu, _expedited and qsbr::rcu_barrier",
        LIMIT,
        || {
            let cell = Rcu::<u64, Qsbr>::new(1);
            let mut me = QsbrThread::register();
            {
                let guard = me.read_lock();
                assert_eq!(*cell.read(&guard), 1);
            }
            cell.replace(2);
            me.synchronize_rcu();
            me.synchronize_rcu_expedited();
            let guard = me.read_lock();
            assert_eq!(*cell.read(&guard), 2);
            drop(guard);
            me.while_offline(qsbr::rcu_barrier);
        },
    );
}

/// `QsbrThread::rcu_barrier` waits for the callbacks queued before it while
/// the registration is offline, and leaves it online.
#[test]
fn a_registration_can_wait_for_callbacks_and_read_afterwards() {
    let _alone = alone();
    test_support::within_a_deadline("QsbrThread::rcu_barrier", LIMIT, || {
        let cell = Rcu::<u64, Qsbr>::new(1);
        let mut me = QsbrThread::register();
        let ran = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&ran);
        qsbr::call_rcu(move || flag.store(true, SeqCst));
        cell.replace(2);
        me.rcu_barrier();
        assert!(
            ran.load(SeqCst),
            "QsbrThread::rcu_barrier returned before the callback ran"
        );
        // Online again (`synchronize_waits_for_a_registration_back_online`
        // checks that grace periods wait for it).
        let guard = me.read_lock();
        assert_eq!(*cell.read(&guard), 2);
    });
}

/// A registration's `Debug` output names its type and nothing else.
#[test]
fn a_registrations_debug_output_names_it() {
    let _alone = alone();
    let me = QsbrThread::register();
    assert_eq!(format!("{me:?}"), "QsbrThread { .. }");
}
