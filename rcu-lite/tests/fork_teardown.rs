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
use std::thread;

const CHILD_ENV: &str = "RCU_LITE_FORK_TEARDOWN_CHILD";

/// How long a grace period or barrier may take before the test counts it as
/// never ending (a lost wake-up): generous, for a loaded 2-CPU machine.
const LIMIT: std::time::Duration = std::time::Duration::from_secs(60);

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
        test_support::within_a_deadline("memb::rcu_barrier", LIMIT, memb::rcu_barrier);
        return;
    }
    test_support::in_a_child_process(
        "fork_hooks_from_a_thread_local_destructor",
        CHILD_ENV,
        "teardown",
    );
}

#[test]
fn a_thread_that_exits_between_the_hooks_gives_their_locks_back() {
    if std::env::var_os(CHILD_ENV).is_some() {
        thread::spawn(fork::before_fork)
            .join()
            .expect("the thread ends cleanly");
        // Waits for the queue lock the hooks took.
        memb::call_rcu(|| {});
        test_support::within_a_deadline("memb::rcu_barrier", LIMIT, memb::rcu_barrier);
        return;
    }
    test_support::in_a_child_process(
        "a_thread_that_exits_between_the_hooks_gives_their_locks_back",
        CHILD_ENV,
        "exit",
    );
}

/// Calls `before_fork` when dropped, and never `after_fork_*`.
struct BeforeForkWhenDropped;

impl Drop for BeforeForkWhenDropped {
    fn drop(&mut self) {
        fork::before_fork();
    }
}

thread_local! {
    static BEFORE_FORK_WHEN_DROPPED: BeforeForkWhenDropped = const { BeforeForkWhenDropped };
}

/// Calls `before_fork` from a POSIX key's destructor, after every
/// thread-local destructor of its thread ran, and never `after_fork_*`.
extern "C" fn before_fork_at_key_exit(_: *mut libc::c_void) {
    fork::before_fork();
}

/// A thread-local destructor that calls `before_fork` after the hooks' own
/// release at exit is gone, and then lets its thread exit between the hooks,
/// still gives the locks back (through a POSIX key's destructor; until
/// 2026-12-07 the next `before_fork` waited for ever); and so does a POSIX
/// key's destructor that does the same on a thread that never ran the hooks
/// before (where the release at exit, created then, never runs).
#[test]
fn a_thread_local_destructor_that_exits_between_the_hooks_gives_their_locks_back() {
    if std::env::var_os(CHILD_ENV).is_some() {
        let the_locks_are_free = || {
            test_support::within_a_deadline("the hooks again", LIMIT, || {
                fork::before_fork();
                fork::after_fork_parent();
            });
            memb::call_rcu(|| {});
            test_support::within_a_deadline("memb::rcu_barrier", LIMIT, memb::rcu_barrier);
        };
        thread::spawn(|| {
            // Touched before the hooks' release at exit, which the hooks
            // below set up, so destroyed after it.
            BEFORE_FORK_WHEN_DROPPED.with(|_| ());
            fork::before_fork();
            fork::after_fork_parent();
        })
        .join()
        .expect("the thread ends cleanly");
        the_locks_are_free();
        test_support::threads_exiting_through_a_key(1, before_fork_at_key_exit);
        the_locks_are_free();
        return;
    }
    test_support::in_a_child_process(
        "a_thread_local_destructor_that_exits_between_the_hooks_gives_their_locks_back",
        CHILD_ENV,
        "exit from a late destructor",
    );
}

/// Calls `after_fork_parent` when dropped.
struct AfterForkParentWhenDropped;

impl Drop for AfterForkParentWhenDropped {
    fn drop(&mut self) {
        fork::after_fork_parent();
    }
}

#[test]
fn the_hooks_released_during_an_unwind_leave_the_callbacks_usable() {
    if std::env::var_os(CHILD_ENV).is_some() {
        use rcu_lite::qsbr;
        use std::sync::Arc;
        use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
        // `after_fork_parent` runs while the refused `synchronize_rcu`
        // unwinds: the locks the hooks held are released by a panicking
        // thread.
        let refused = std::panic::catch_unwind(|| {
            fork::before_fork();
            let _after = AfterForkParentWhenDropped;
            memb::synchronize_rcu();
        });
        assert!(
            refused.is_err(),
            "synchronize_rcu between the hooks is refused"
        );
        // Both flavors' queues and batch locks were held.
        let ran = Arc::new(AtomicUsize::new(0));
        for _ in 0..3 {
            let memb_ran = Arc::clone(&ran);
            memb::call_rcu(move || {
                memb_ran.fetch_add(1, SeqCst);
            });
            let qsbr_ran = Arc::clone(&ran);
            qsbr::call_rcu(move || {
                qsbr_ran.fetch_add(1, SeqCst);
            });
        }
        test_support::within_a_deadline("memb::rcu_barrier", LIMIT, memb::rcu_barrier);
        test_support::within_a_deadline("qsbr::rcu_barrier", LIMIT, qsbr::rcu_barrier);
        assert_eq!(ran.load(SeqCst), 6);
        // `replace` frees the old value through `call_rcu`.
        let cell = rcu_lite::Rcu::<u64, rcu_lite::Memb>::new(1);
        cell.replace(2);
        test_support::within_a_deadline("memb::rcu_barrier", LIMIT, memb::rcu_barrier);
        // And the hooks themselves work again.
        fork::before_fork();
        fork::after_fork_parent();
        return;
    }
    test_support::in_a_child_process(
        "the_hooks_released_during_an_unwind_leave_the_callbacks_usable",
        CHILD_ENV,
        "released while unwinding",
    );
}

/// Queues a callback when dropped.
struct QueuesWhenDropped;

impl Drop for QueuesWhenDropped {
    fn drop(&mut self) {
        memb::call_rcu(|| {});
    }
}

#[test]
fn a_drop_that_queues_a_callback_while_a_refused_call_unwinds_between_the_hooks() {
    if std::env::var_os(CHILD_ENV).is_some() {
        let cell = rcu_lite::Rcu::<Option<QueuesWhenDropped>, rcu_lite::Memb>::new(None);
        fork::before_fork();
        // Refused between the hooks; its new value is dropped by the unwind,
        // and that drop's `call_rcu` must not panic a second time (an abort).
        let refused = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            cell.replace(Some(QueuesWhenDropped));
        }));
        assert!(
            refused.is_err(),
            "Rcu::replace between the hooks is refused"
        );
        fork::after_fork_parent();
        memb::call_rcu(|| {});
        test_support::within_a_deadline("memb::rcu_barrier", LIMIT, memb::rcu_barrier);
        return;
    }
    test_support::in_a_child_process(
        "a_drop_that_queues_a_callback_while_a_refused_call_unwinds_between_the_hooks",
        CHILD_ENV,
        "a callback queued by an unwind",
    );
}
