//! What becomes of queued callbacks when the process exits: the ones still
//! queued never run and are not dropped, and exit does not wait for them;
//! an `rcu_barrier()` in an `atexit` handler runs every one first, as the
//! `call_rcu` docs say.

use rcu_lite::{memb, qsbr};
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::mpsc;
use std::time::Duration;

/// Set in the child processes of this file's tests, to the case to run.
const CHILD_ENV: &str = "RCU_LITE_PROCESS_EXIT_CHILD";

/// Callbacks of the child's flavors that ran.
static RAN: AtomicUsize = AtomicUsize::new(0);

/// Queued per flavor.
const CALLBACKS: usize = 200;

/// Owned by each queued callback: says so on stderr if it is dropped.
struct SaysWhenDropped;

impl Drop for SaysWhenDropped {
    fn drop(&mut self) {
        eprintln!("a queued callback was dropped");
    }
}

fn queue_counting_callbacks() {
    for _ in 0..CALLBACKS {
        memb::call_rcu(|| {
            RAN.fetch_add(1, SeqCst);
        });
        qsbr::call_rcu(|| {
            RAN.fetch_add(1, SeqCst);
        });
    }
}

extern "C" fn barriers_then_count() {
    memb::rcu_barrier();
    qsbr::rcu_barrier();
    eprintln!("at exit: {} callbacks ran", RAN.load(SeqCst));
}

#[test]
#[cfg_attr(
    miri,
    ignore = "runs this test binary again as a child process, which miri cannot"
)]
fn a_barrier_in_an_atexit_handler_runs_every_queued_callback() {
    if std::env::var_os(CHILD_ENV).is_some() {
        // SAFETY: registers a handler that takes no arguments and does not
        // unwind (the barriers panic only on misuse this thread makes none
        // of: no read section, no online qsbr registration, no callback).
        let rc = unsafe { libc::atexit(barriers_then_count) };
        assert_eq!(rc, 0, "atexit");
        queue_counting_callbacks();
        std::process::exit(0);
    }
    let stderr = test_support::stderr_of_a_passing_child_process(
        "a_barrier_in_an_atexit_handler_runs_every_queued_callback",
        CHILD_ENV,
        "barrier",
        &[],
    );
    let expected = format!("at exit: {} callbacks ran", 2 * CALLBACKS);
    assert!(stderr.contains(&expected), "stderr:\n{stderr}");
}

#[test]
#[cfg_attr(
    miri,
    ignore = "runs this test binary again as a child process, which miri cannot"
)]
fn callbacks_still_queued_at_exit_neither_run_nor_hold_the_exit_up() {
    if std::env::var_os(CHILD_ENV).is_some() {
        // The worker is held in a first callback until the process ends, so
        // that the ones behind it are certainly still queued at exit.
        let (started, entered) = mpsc::channel();
        memb::call_rcu(move || {
            started.send(()).unwrap();
            std::thread::sleep(Duration::from_secs(3600));
        });
        entered
            .recv_timeout(Duration::from_secs(20))
            .expect("the first callback started");
        for _ in 0..CALLBACKS {
            let owned = SaysWhenDropped;
            memb::call_rcu(move || {
                let _owned = owned;
                RAN.fetch_add(1, SeqCst);
            });
        }
        assert_eq!(memb::callbacks_pending(), CALLBACKS);
        eprintln!("exiting");
        std::process::exit(0);
    }
    // Within the child-process limit: exit does not wait for the hour-long
    // callback, nor for the ones queued behind it.
    let stderr = test_support::stderr_of_a_passing_child_process(
        "callbacks_still_queued_at_exit_neither_run_nor_hold_the_exit_up",
        CHILD_ENV,
        "lost",
        &[],
    );
    assert!(stderr.contains("exiting"), "stderr:\n{stderr}");
    assert!(!stderr.contains("dropped"), "stderr:\n{stderr}");
}
