//! A caller alone drives its own grace periods: the worker (see
//! `gp_worker.rs`) never starts. Its own process, so that no other test's
//! callers crowd it.

use rcu_lite::{memb, qsbr};

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
        for _ in 0..10_000 {
            synchronize();
        }
        let after = counts();
        assert_eq!(after.completed - before.completed, 10_000);
        assert_eq!(
            after.by_worker, before.by_worker,
            "the worker drove grace periods"
        );
    }
}
