//! `rcu_barrier()` with nothing queued and no batch in flight returns at once,
//! as the kernel's does when no CPU has callbacks: no grace period, and no
//! callback worker started. A test binary of its own: no other test's
//! callbacks or grace periods move the counts.

use rcu_lite::{Flavor, GpCounts, Memb, Qsbr, memb, qsbr};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::time::Duration;

/// How long a grace period or barrier may take before the test counts it as
/// never ending (a lost wake-up): generous, for a loaded 2-CPU machine.
const LIMIT: Duration = Duration::from_secs(60);

fn a_barrier_with_nothing_queued_waits_for_no_grace_period<F: Flavor + 'static>(
    grace_periods: fn() -> GpCounts,
) {
    test_support::within_a_deadline(F::NAME, LIMIT, move || {
        let before = grace_periods().started;
        F::rcu_barrier();
        assert_eq!(
            grace_periods().started,
            before,
            "{}::rcu_barrier() with nothing ever queued started a grace period",
            F::NAME
        );
        // Nor a callback worker (miri offers no /proc to look).
        if !cfg!(miri) {
            assert_eq!(
                test_support::thread_states(&format!("rcu-lite-{}-callbacks", F::NAME)),
                [],
                "{}::rcu_barrier() with nothing ever queued started a callback worker",
                F::NAME
            );
        }
        // With a callback queued it waits for the callback, and so for its
        // grace period.
        let ran = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&ran);
        F::call_rcu(move || flag.store(true, SeqCst));
        F::rcu_barrier();
        assert!(
            ran.load(SeqCst),
            "{}::rcu_barrier() returned before the callback queued before it ran",
            F::NAME
        );
        assert!(grace_periods().started > before);
        // The worker that ran it stays (so the look above can see one).
        if !cfg!(miri) {
            assert_eq!(
                test_support::thread_states(&format!("rcu-lite-{}-callbacks", F::NAME)).len(),
                1,
                "one {} callback worker once a callback ran",
                F::NAME
            );
        }
    });
}

#[test]
fn memb_barrier_with_nothing_queued() {
    a_barrier_with_nothing_queued_waits_for_no_grace_period::<Memb>(memb::grace_periods);
}

#[test]
fn qsbr_barrier_with_nothing_queued() {
    a_barrier_with_nothing_queued_waits_for_no_grace_period::<Qsbr>(qsbr::grace_periods);
}
