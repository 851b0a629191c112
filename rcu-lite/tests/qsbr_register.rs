//! A qsbr registration starts online: a grace period waits for it.
//!
//! Alone in its test binary: the tests in `qsbr.rs` run in parallel and keep
//! registrations of their own online, which slows every grace period of the
//! process down, so there a registration that wrongly started offline went
//! unnoticed (a grace period that should have waited for it took longer than
//! the reader's hold anyway).

use rcu_lite::qsbr::{self, QsbrThread};
use std::time::Duration;

/// How long a grace period may take before the test counts it as never
/// ending (a lost wake-up): generous, for a loaded 2-CPU machine.
const LIMIT: Duration = Duration::from_secs(60);

#[test]
fn synchronize_waits_for_a_thread_registered_before_it() {
    // The process's first grace period registers it for membarrier, which
    // can outlast the reader's hold: pay for it before the check.
    qsbr::synchronize_rcu();
    test_support::assert_waits_for_reader(
        "qsbr::synchronize_rcu",
        Duration::from_millis(50),
        QsbrThread::register,
        // Dropping the registration takes it offline.
        drop,
        || {
            test_support::within_a_deadline(
                "qsbr::synchronize_rcu behind a fresh registration",
                LIMIT,
                qsbr::synchronize_rcu,
            )
        },
    );
}
