//! Every documented misuse of rcu-lite panics with a message that names it,
//! and none hangs.
//!
//! Each misuse runs on a fresh thread (read-side state and qsbr registrations
//! are per thread) under a watchdog: a misuse that returns normally fails the
//! test, and one that is still running after [`HANG_LIMIT`] (a deadlock, which
//! is what most of these misuses would be without their check) ends the whole
//! test process with a message, so a hang can neither pass nor stall the run.

use rcu_lite::qsbr::{self, QsbrThread};
use rcu_lite::{Memb, Qsbr, Rcu, memb, raw};
use std::panic::catch_unwind;
use std::sync::mpsc;

use test_support::misuse::*;

const IN_SECTION: &str = "called inside a read-side critical section";
const ONLINE: &str = "has an online QsbrThread";
/// The same refusal of a `QsbrThread` method, which waits offline itself:
/// only another registration can be in the way, and the advice says so.
const ANOTHER_ONLINE: &str = "has another online QsbrThread";
const TAKE_THE_OTHER_OFFLINE: &str = "take the other registration offline first";
const IN_CALLBACK: &str = "called from inside an RCU callback";

/// How long a grace period or barrier may take before the test counts it as
/// never ending (a lost wake-up): generous, for a loaded 2-CPU machine.
const LIMIT: std::time::Duration = std::time::Duration::from_secs(60);

#[test]
fn memb_synchronize_inside_a_section() {
    assert_misuse(
        "memb::synchronize_rcu in a section",
        &["synchronize_rcu()", IN_SECTION],
        || {
            let _guard = memb::read_lock();
            memb::synchronize_rcu();
        },
    );
    assert_misuse(
        "memb::synchronize_rcu_expedited in a section",
        &["synchronize_rcu_expedited()", IN_SECTION],
        || {
            let _guard = memb::read_lock();
            memb::synchronize_rcu_expedited();
        },
    );
    // Whether or not it would have to wait: here the cookie has elapsed.
    assert_misuse(
        "memb::cond_synchronize_rcu in a section",
        &["cond_synchronize_rcu()", IN_SECTION],
        || {
            let state = memb::get_state_synchronize_rcu();
            memb::synchronize_rcu();
            let _guard = memb::read_lock();
            memb::cond_synchronize_rcu(state);
        },
    );
    assert_misuse(
        "Retired::into_inner in a section",
        &["Retired::into_inner()", IN_SECTION],
        || {
            let cell = Rcu::<u64>::new(1);
            let retired = cell.replace_polled(2);
            let _guard = memb::read_lock();
            retired.into_inner();
        },
    );
    assert_misuse(
        "memb::synchronize_rcu in a nested section",
        &[IN_SECTION],
        || {
            let _outer = memb::read_lock();
            drop(memb::read_lock());
            memb::synchronize_rcu();
        },
    );
    assert_misuse(
        "memb::synchronize_rcu in a raw section",
        &[IN_SECTION],
        || {
            raw::memb_read_lock();
            let refused = catch_unwind(memb::synchronize_rcu);
            // SAFETY: ends the raw section entered above (a raw section has
            // no guard to end it during the unwind, and a thread that exits
            // inside one would hold up every later grace period).
            unsafe { raw::memb_read_unlock() };
            if let Err(payload) = refused {
                std::panic::resume_unwind(payload);
            }
        },
    );
}

#[test]
fn memb_rcu_barrier_inside_a_section() {
    assert_misuse(
        "memb::rcu_barrier in a section",
        &["rcu_barrier()", IN_SECTION],
        || {
            let _guard = memb::read_lock();
            memb::rcu_barrier();
        },
    );
}

#[test]
fn memb_cell_replace_and_synchronize_inside_a_section() {
    let cell = std::sync::Arc::new(Rcu::<u64, Memb>::new(1));
    let inner = std::sync::Arc::clone(&cell);
    assert_misuse(
        "Rcu<_, Memb>::replace_and_synchronize in a section",
        &[IN_SECTION],
        move || {
            let _guard = memb::read_lock();
            inner.replace_and_synchronize(2);
        },
    );
    // Refused before publishing anything: the old value is still there (not
    // leaked), and the cell still works.
    test_support::within_a_deadline("Rcu<_, Memb>::replace_and_synchronize", LIMIT, move || {
        assert_eq!(cell.replace_and_synchronize(3), 1);
    });
}

#[test]
fn memb_unbalanced_raw_unlock() {
    assert_misuse(
        "raw::memb_read_unlock on a thread that never locked",
        &["unbalanced unlock"],
        || {
            // SAFETY: deliberately unbalanced: this thread never entered a
            // section, so the check must panic before anything is touched.
            unsafe { raw::memb_read_unlock() };
        },
    );
    assert_misuse(
        "raw::memb_read_unlock after the section ended",
        &["unbalanced unlock"],
        || {
            raw::memb_read_lock();
            // SAFETY: ends the section the line above entered.
            unsafe { raw::memb_read_unlock() };
            // SAFETY: deliberately unbalanced: no section is open.
            unsafe { raw::memb_read_unlock() };
        },
    );
    // A grace period still completes: the refused unlock changed nothing.
    test_support::within_a_deadline("memb::synchronize_rcu", LIMIT, memb::synchronize_rcu);
}

#[test]
fn memb_nesting_overflow() {
    // How deep the sections went before the panic: 32767 is allowed, the
    // 32768th lock is the one refused (not one earlier).
    let reached = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let depth = std::sync::Arc::clone(&reached);
    assert_misuse(
        "memb::read_lock nested 32768 deep",
        &["nested more than 32767 deep"],
        move || {
            let mut guards = Vec::with_capacity(1 << 15);
            for _ in 0..(1 << 15) {
                guards.push(memb::read_lock());
                // Relaxed: read after the misuse thread is joined.
                depth.store(guards.len(), std::sync::atomic::Ordering::Relaxed);
            }
        },
    );
    assert_eq!(
        reached.load(std::sync::atomic::Ordering::Relaxed),
        32767,
        "read sections nested 32767 deep are allowed; only the 32768th read_lock panics"
    );
    // The guards were dropped by the unwind: grace periods go on.
    test_support::within_a_deadline("memb::synchronize_rcu", LIMIT, memb::synchronize_rcu);
}

/// Runs `call` inside a callback of `flavor` and returns the message of the
/// panic it raised there (the test fails if it returned, or if the callback
/// did not report in time: a hang).
fn panic_message_inside_a_callback(
    flavor: &str,
    what: &str,
    call: impl FnOnce() + std::panic::UnwindSafe + Send + 'static,
) -> String {
    let (tx, rx) = mpsc::channel();
    let callback = move || {
        let message = catch_unwind(call).err().map(|e| message_of(&*e));
        let _ = tx.send(message);
    };
    if flavor == "memb" {
        memb::call_rcu(callback);
    } else {
        qsbr::call_rcu(callback);
    }
    panic_message_of(what, move || match rx.recv_timeout(HANG_LIMIT / 2) {
        Ok(Some(message)) => panic!("{message}"),
        Ok(None) => {}
        Err(_) => panic!("the callback did not report within {:?}", HANG_LIMIT / 2),
    })
}

#[test]
fn rcu_barrier_inside_a_callback() {
    for flavor in ["memb", "qsbr"] {
        let barrier: fn() = if flavor == "memb" {
            memb::rcu_barrier
        } else {
            qsbr::rcu_barrier
        };
        let what = format!("{flavor}::rcu_barrier inside a callback");
        let message = panic_message_inside_a_callback(flavor, &what, barrier);
        assert!(
            message.contains(&format!("{flavor}::rcu_barrier()")) && message.contains(IN_CALLBACK),
            "{what}: {message}"
        );
    }
    // The callback workers survived the refused barriers.
    test_support::within_a_deadline("memb::rcu_barrier", LIMIT, memb::rcu_barrier);
    test_support::within_a_deadline("qsbr::rcu_barrier", LIMIT, qsbr::rcu_barrier);
}

/// `QsbrThread::rcu_barrier()` inside a qsbr callback: the panic names the
/// function the caller called, not the free `qsbr::rcu_barrier()` it runs.
#[test]
fn qsbr_thread_rcu_barrier_inside_a_callback() {
    let what = "QsbrThread::rcu_barrier inside a qsbr callback";
    let message = panic_message_inside_a_callback("qsbr", what, || {
        QsbrThread::register().rcu_barrier();
    });
    assert!(
        message.contains("qsbr::QsbrThread::rcu_barrier()") && message.contains(IN_CALLBACK),
        "{what}: {message}"
    );
    test_support::within_a_deadline("qsbr::rcu_barrier", LIMIT, qsbr::rcu_barrier);
}

/// `fork::before_fork()` from inside a callback of either flavor: it would
/// wait for the batch lock that the worker running it holds. (No fork hooks
/// under loom.)
#[cfg(not(loom))]
#[test]
fn before_fork_inside_a_callback() {
    for flavor in ["memb", "qsbr"] {
        let what = format!("fork::before_fork inside a {flavor} callback");
        let message = panic_message_inside_a_callback(flavor, &what, || {
            rcu_lite::fork::before_fork();
            // Not reached unless the check is gone: give the locks back.
            rcu_lite::fork::after_fork_parent();
        });
        assert!(
            message.contains("rcu_lite::fork::before_fork()") && message.contains(IN_CALLBACK),
            "{what}: {message}"
        );
    }
    // The workers survived, and nothing was left held.
    test_support::within_a_deadline("memb::rcu_barrier", LIMIT, memb::rcu_barrier);
    test_support::within_a_deadline("qsbr::rcu_barrier", LIMIT, qsbr::rcu_barrier);
}

#[test]
fn qsbr_synchronize_with_an_online_registration() {
    assert_misuse(
        "qsbr::synchronize_rcu while online",
        &[
            "synchronize_rcu()",
            ONLINE,
            "call QsbrThread::synchronize_rcu() on the registration",
        ],
        || {
            let _me = QsbrThread::register();
            qsbr::synchronize_rcu();
        },
    );
    assert_misuse(
        "qsbr::cond_synchronize_rcu while online",
        &["cond_synchronize_rcu()", ONLINE],
        || {
            let state = qsbr::get_state_synchronize_rcu();
            qsbr::synchronize_rcu();
            let _me = QsbrThread::register();
            qsbr::cond_synchronize_rcu(state);
        },
    );
    assert_misuse(
        "qsbr::synchronize_rcu_expedited while online",
        &["synchronize_rcu_expedited()", ONLINE],
        || {
            let _me = QsbrThread::register();
            qsbr::synchronize_rcu_expedited();
        },
    );
    assert_misuse(
        "QsbrThread::synchronize_rcu while another registration is online",
        &[
            "QsbrThread::synchronize_rcu()",
            ANOTHER_ONLINE,
            TAKE_THE_OTHER_OFFLINE,
        ],
        || {
            let _other = QsbrThread::register();
            let mut me = QsbrThread::register();
            me.synchronize_rcu();
        },
    );
    assert_misuse(
        "QsbrThread::synchronize_rcu_expedited while another registration is online",
        &[
            "QsbrThread::synchronize_rcu_expedited()",
            ANOTHER_ONLINE,
            TAKE_THE_OTHER_OFFLINE,
        ],
        || {
            let _other = QsbrThread::register();
            let mut me = QsbrThread::register();
            me.synchronize_rcu_expedited();
        },
    );
    let cell = std::sync::Arc::new(Rcu::<u64, Qsbr>::new(1));
    let inner = std::sync::Arc::clone(&cell);
    assert_misuse(
        "Rcu<_, Qsbr>::replace_and_synchronize while online",
        &[
            "rcu_lite::Rcu::replace_and_synchronize() (on a qsbr cell)",
            ONLINE,
            "call it inside registration.while_offline",
        ],
        move || {
            let _me = QsbrThread::register();
            inner.replace_and_synchronize(2);
        },
    );
    // The registrations were dropped by the unwinds: grace periods go on.
    // Refused before publishing: the old value is still there.
    test_support::within_a_deadline("qsbr::synchronize_rcu", LIMIT, qsbr::synchronize_rcu);
    test_support::within_a_deadline("Rcu<_, Qsbr>::replace_and_synchronize", LIMIT, move || {
        assert_eq!(cell.replace_and_synchronize(3), 1);
    });
}

/// The thread's count of online registrations, which the misuse panics
/// test, follows `QsbrThread::while_offline`: down inside its closure, up again
/// after it, also when the closure unwinds, and down once when the
/// registration is dropped.
#[test]
fn qsbr_while_offline_is_counted_in_and_out() {
    // Set once the offline wait returned, so that the panic checked below is
    // the second call's: a `while_offline` that left the count up would panic
    // inside its closure with the same message.
    let waited_offline = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let waited = std::sync::Arc::clone(&waited_offline);
    assert_misuse(
        "qsbr::synchronize_rcu after QsbrThread::while_offline returned",
        &["synchronize_rcu()", ONLINE],
        move || {
            let mut me = QsbrThread::register();
            // Offline, the thread may wait for a grace period.
            me.while_offline(|| {
                qsbr::synchronize_rcu();
                waited.store(true, std::sync::atomic::Ordering::SeqCst);
            });
            qsbr::synchronize_rcu();
        },
    );
    assert!(
        waited_offline.load(std::sync::atomic::Ordering::SeqCst),
        "qsbr::synchronize_rcu panicked inside QsbrThread::while_offline: the registration \
         was left counted online"
    );
    assert_misuse(
        "qsbr::synchronize_rcu after QsbrThread::while_offline's closure unwound",
        &["synchronize_rcu()", ONLINE],
        || {
            let mut me = QsbrThread::register();
            let unwound = catch_unwind(std::panic::AssertUnwindSafe(|| {
                me.while_offline(|| panic!("a panic inside QsbrThread::while_offline"))
            }));
            assert!(unwound.is_err());
            qsbr::synchronize_rcu();
        },
    );
    // Another registration stays online while one goes offline and back and
    // is dropped: counted once offline, not twice.
    assert_misuse(
        "qsbr::synchronize_rcu, one registration online, another gone offline and dropped",
        &["synchronize_rcu()", ONLINE],
        || {
            let _online = QsbrThread::register();
            let mut gone = QsbrThread::register();
            gone.while_offline(|| ());
            drop(gone);
            qsbr::synchronize_rcu();
        },
    );
    test_support::within_a_deadline("qsbr::synchronize_rcu", LIMIT, qsbr::synchronize_rcu);
}

/// The count of online registrations follows `offline` and
/// `OfflineQsbrThread::online`: down while the registration is an
/// `OfflineQsbrThread`, up again once it is back, and not down a second time
/// when an `OfflineQsbrThread` is dropped.
#[test]
fn qsbr_offline_and_online_are_counted_in_and_out() {
    // Set once the offline wait returned, so that the panic checked below is
    // the second call's: an `offline` that left the count up would panic in
    // the first with the same message.
    let waited_offline = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let waited = std::sync::Arc::clone(&waited_offline);
    assert_misuse(
        "qsbr::synchronize_rcu after OfflineQsbrThread::online",
        &["synchronize_rcu()", ONLINE],
        move || {
            let offline = QsbrThread::register().offline();
            // Offline, the thread may wait for a grace period.
            qsbr::synchronize_rcu();
            waited.store(true, std::sync::atomic::Ordering::SeqCst);
            let _me = offline.online();
            qsbr::synchronize_rcu();
        },
    );
    assert!(
        waited_offline.load(std::sync::atomic::Ordering::SeqCst),
        "qsbr::synchronize_rcu panicked with the registration offline: offline() left it \
         counted online"
    );
    assert_misuse(
        "qsbr::synchronize_rcu, one registration online, another dropped offline",
        &["synchronize_rcu()", ONLINE],
        || {
            let _online = QsbrThread::register();
            drop(QsbrThread::register().offline());
            qsbr::synchronize_rcu();
        },
    );
    // Dropped offline, and the thread's count is back at 0: it may wait.
    test_support::within_a_deadline("qsbr::synchronize_rcu after offline", LIMIT, || {
        let offline = QsbrThread::register().offline();
        qsbr::synchronize_rcu();
        drop(offline);
        qsbr::synchronize_rcu();
    });
}

#[test]
fn qsbr_rcu_barrier_with_an_online_registration() {
    assert_misuse(
        "qsbr::rcu_barrier while online",
        &[
            "rcu_barrier()",
            ONLINE,
            "call QsbrThread::rcu_barrier() on the registration",
        ],
        || {
            let _me = QsbrThread::register();
            qsbr::rcu_barrier();
        },
    );
    assert_misuse(
        "QsbrThread::rcu_barrier while another registration is online",
        &[
            "QsbrThread::rcu_barrier()",
            ANOTHER_ONLINE,
            TAKE_THE_OTHER_OFFLINE,
        ],
        || {
            let _other = QsbrThread::register();
            let mut me = QsbrThread::register();
            me.rcu_barrier();
        },
    );
    test_support::within_a_deadline("qsbr::rcu_barrier", LIMIT, qsbr::rcu_barrier);
}

/// An update function holds its cell's update lock: every wait for a grace
/// period or a callback batch there is refused, of either flavor, and the
/// update publishes nothing. (A reader that calls `replace` on the cell
/// inside its section, or a callback that does, would otherwise wait for
/// the lock while the grace period waits for it.) `fork::before_fork` there:
/// `tests/fork.rs`.
#[test]
fn waiting_inside_an_update_function_panics() {
    type Wait = fn();
    let waits: [(&str, &str, Wait); 12] = [
        (
            "memb::synchronize_rcu",
            "rcu_lite::memb::synchronize_rcu()",
            memb::synchronize_rcu,
        ),
        (
            "memb::synchronize_rcu_expedited",
            "rcu_lite::memb::synchronize_rcu_expedited()",
            memb::synchronize_rcu_expedited,
        ),
        (
            "memb::cond_synchronize_rcu",
            "rcu_lite::memb::cond_synchronize_rcu()",
            || memb::cond_synchronize_rcu(memb::get_state_synchronize_rcu()),
        ),
        ("memb::rcu_barrier", "rcu_lite::memb::rcu_barrier()", || {
            memb::call_rcu(|| {});
            memb::rcu_barrier();
        }),
        (
            "qsbr::synchronize_rcu",
            "rcu_lite::qsbr::synchronize_rcu()",
            qsbr::synchronize_rcu,
        ),
        (
            "qsbr::synchronize_rcu_expedited",
            "rcu_lite::qsbr::synchronize_rcu_expedited()",
            qsbr::synchronize_rcu_expedited,
        ),
        (
            "qsbr::cond_synchronize_rcu",
            "rcu_lite::qsbr::cond_synchronize_rcu()",
            || qsbr::cond_synchronize_rcu(qsbr::get_state_synchronize_rcu()),
        ),
        ("qsbr::rcu_barrier", "rcu_lite::qsbr::rcu_barrier()", || {
            qsbr::call_rcu(|| {});
            qsbr::rcu_barrier();
        }),
        (
            "QsbrThread::synchronize_rcu",
            "rcu_lite::qsbr::QsbrThread::synchronize_rcu()",
            || QsbrThread::register().synchronize_rcu(),
        ),
        (
            "QsbrThread::rcu_barrier",
            "rcu_lite::qsbr::QsbrThread::rcu_barrier()",
            || QsbrThread::register().rcu_barrier(),
        ),
        (
            "Rcu::replace_and_synchronize of another cell",
            "rcu_lite::Rcu::replace_and_synchronize() (on a memb cell) called inside",
            || {
                Rcu::<u64, Memb>::new(0).replace_and_synchronize(1);
            },
        ),
        (
            "Retired::into_inner",
            "rcu_lite::Retired::into_inner() (on a memb cell) called inside",
            || {
                Rcu::<u64, Memb>::new(0).replace_polled(1).into_inner();
            },
        ),
    ];
    let cell = std::sync::Arc::new(Rcu::<u64, Memb>::new(1));
    for (what, name, wait) in waits {
        let outer = std::sync::Arc::clone(&cell);
        assert_misuse(
            &format!("{what} inside an Rcu::update function"),
            &[name, "inside an Rcu::update() function"],
            move || {
                outer.update(|v| {
                    wait();
                    v + 1
                })
            },
        );
    }
    assert_eq!(
        cell.replace_and_synchronize(0),
        1,
        "a refused update published its value"
    );
    // Outside the update function the same waits work.
    test_support::within_a_deadline("memb::rcu_barrier", LIMIT, memb::rcu_barrier);
    test_support::within_a_deadline("qsbr::rcu_barrier", LIMIT, qsbr::rcu_barrier);
}

#[test]
fn a_cell_updated_from_its_own_update_function() {
    let cell = std::sync::Arc::new(Rcu::<u64, Memb>::new(1));
    type Inner = fn(&Rcu<u64, Memb>);
    let inner_calls: [(&str, Inner); 4] = [
        ("replace", |c| c.replace(10)),
        ("replace_polled", |c| {
            let _ = c.replace_polled(10);
        }),
        ("update", |c| c.update(|v| v + 10)),
        ("replace_and_synchronize", |c| {
            c.replace_and_synchronize(10);
        }),
    ];
    for (name, inner) in inner_calls {
        let outer = std::sync::Arc::clone(&cell);
        assert_misuse(
            &format!("Rcu::{name} from inside an update of the same cell"),
            &[
                &format!("rcu_lite::Rcu::{name}()"),
                "inside an Rcu::update() function of the same cell",
            ],
            move || {
                outer.update(|v| {
                    inner(&outer);
                    v + 1
                })
            },
        );
    }
    // Also from inside an update of another cell that the first one's
    // update function runs.
    let outer = std::sync::Arc::clone(&cell);
    assert_misuse(
        "Rcu::replace from inside an update of another cell, inside an update of the same cell",
        &[
            "rcu_lite::Rcu::replace()",
            "inside an Rcu::update() function of the same cell",
        ],
        move || {
            let between = Rcu::<u64, Memb>::new(0);
            outer.update(|v| {
                between.update(|w| {
                    outer.replace(10);
                    w + 1
                });
                v + 1
            })
        },
    );
    // Nothing was published, and other cells may be updated from inside.
    let other = Rcu::<u64, Memb>::new(5);
    cell.update(|v| {
        other.replace(6);
        v + 1
    });
    assert_eq!(cell.replace_and_synchronize(0), 2);
    assert_eq!(other.replace_and_synchronize(0), 6);
}

#[test]
fn a_zero_fixed_fqs_interval() {
    let before = memb::config();
    assert_misuse(
        "configure with Fqs::FixedInterval(0)",
        &["Fqs::FixedInterval(0)", "without waiting between them"],
        || {
            memb::configure(rcu_lite::GpConfig {
                quick_qs: true,
                fqs: rcu_lite::Fqs::FixedInterval(std::time::Duration::ZERO),
            });
        },
    );
    assert_eq!(
        memb::config(),
        before,
        "the refused settings were not stored"
    );
}
