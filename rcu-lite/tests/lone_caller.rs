//! A caller alone drives its own grace periods: the worker (see
//! `gp_worker.rs`) never starts. Its own process, so that no other test's
//! callers crowd it.

use rcu_lite::{memb, qsbr};

/// Calls per flavor.
const CALLS: u64 = if cfg!(miri) { 20 } else { 10_000 };

/// How long a grace period or barrier may take before the test counts it as
/// never ending (a lost wake-up): generous, for a loaded 2-CPU machine.
const LIMIT: std::time::Duration = std::time::Duration::from_secs(60);

#[test]
fn a_lone_caller_never_involves_the_worker() {
    for (synchronize, counts) in [
        (
            memb::synchronize_rcu as fn(),
            memb::grace_periods as fn() -> rcu_lite::GpCounts,
        ),
        (qsbr::synchronize_rcu, qsbr::grace_periods),
    ] {
        let before = counts();
        test_support::within_a_deadline(
            "a lone caller's synchronize_rcu calls",
            LIMIT,
            move || {
                for _ in 0..CALLS {
                    synchronize();
                }
            },
        );
        let after = counts();
        assert_eq!(after.completed - before.completed, CALLS);
        assert_eq!(
            after.by_worker, before.by_worker,
            "the worker drove grace periods"
        );
    }
}
