//! `Rcu::update` from a thread-local destructor: a thread's own clean-up
//! (a per-thread cache folding its counts into a shared cell) may update a
//! cell while its thread-locals are being destroyed, as `Rcu::replace` and
//! read-side sections may (`tests/thread_churn.rs`).
//!
//! The case runs in a child process (this test binary run again with
//! `CHILD_ENV` set): a panic inside a thread-local destructor aborts the
//! whole process, and the parent reports that with the child's stderr.
#![cfg(not(loom))]

use rcu_lite::{Rcu, memb};
use std::sync::LazyLock;
use std::thread;

const CHILD_ENV: &str = "RCU_LITE_CELL_TEARDOWN_CHILD";

/// How long a grace period or barrier may take before the test counts it as
/// never ending (a lost wake-up): generous, for a loaded 2-CPU machine.
const LIMIT: std::time::Duration = std::time::Duration::from_secs(60);

static TOTAL: LazyLock<Rcu<u64>> = LazyLock::new(|| Rcu::new(0));

/// Adds one to `TOTAL` with `Rcu::update` when the thread ends.
struct UpdatesWhenDropped;

impl Drop for UpdatesWhenDropped {
    fn drop(&mut self) {
        TOTAL.update(|total| total + 1);
    }
}

thread_local! {
    static UPDATES_WHEN_DROPPED: UpdatesWhenDropped = const { UpdatesWhenDropped };
}

#[test]
#[cfg_attr(
    miri,
    ignore = "runs this test binary again as a child process, which miri cannot"
)]
fn update_from_a_thread_local_destructor() {
    if std::env::var_os(CHILD_ENV).is_some() {
        thread::spawn(|| {
            // Touched before the cell's own per-thread state, so destroyed
            // after it.
            UPDATES_WHEN_DROPPED.with(|_| ());
            TOTAL.update(|total| total + 1);
        })
        .join()
        .expect("the thread ends cleanly");
        let guard = memb::read_lock();
        assert_eq!(*TOTAL.read(&guard), 2, "both updates were made");
        drop(guard);
        test_support::within_a_deadline("memb::rcu_barrier", LIMIT, memb::rcu_barrier);
        return;
    }
    test_support::in_a_child_process("update_from_a_thread_local_destructor", CHILD_ENV, "1");
}
