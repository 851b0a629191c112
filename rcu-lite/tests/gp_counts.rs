//! `grace_periods()` returns a consistent pair: `completed` is `started` or
//! `started - 1` (as `GpCounts` documents), however many grace periods
//! complete while it reads them.

use rcu_lite::{GpCounts, memb, qsbr};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::thread;
use std::time::{Duration, Instant};

/// How long the grace periods may take, before the test counts one as never
/// ending (a caller's lost wake-up, which stops them all): generous, for a
/// loaded 2-CPU machine.
const LIMIT: Duration = Duration::from_secs(60);

/// Grace periods the callers run while the sampler reads the counts.
const GRACE_PERIODS: u64 = if cfg!(miri) { 50 } else { 300_000 };

/// How long the sampler goes on once it has seen [`FEWEST_GRACE_PERIODS`]
/// complete, if [`GRACE_PERIODS`] take longer: a loaded machine (the stress
/// script runs several test binaries at once) may not run 300,000 within
/// [`LIMIT`], and the claim under test needs no fixed count.
const SAMPLE_FOR: Duration = Duration::from_secs(10);

/// Grace periods the sampler must see complete in any case.
const FEWEST_GRACE_PERIODS: u64 = if cfg!(miri) { 50 } else { 10_000 };

fn check(synchronize: fn(), counts: fn() -> GpCounts) {
    // More callers than CPUs, so that the sampler is preempted between its
    // loads while grace periods go on.
    let callers = 2 * thread::available_parallelism().map_or(1, |n| n.get()) + 1;
    let stop = Arc::new(AtomicBool::new(false));
    let threads: Vec<_> = (0..callers)
        .map(|_| {
            let stop = Arc::clone(&stop);
            thread::spawn(move || {
                while !stop.load(Relaxed) {
                    synchronize();
                }
            })
        })
        .collect();
    test_support::within_a_deadline(
        "grace periods completing while the counts are sampled, then the callers stopping",
        LIMIT,
        move || {
            let first = counts();
            let sampling = Instant::now();
            let mut worst = 0;
            loop {
                let now = counts();
                assert!(now.completed <= now.started, "{now:?}");
                worst = worst.max(now.started - now.completed);
                let seen = now.completed - first.completed;
                if seen >= GRACE_PERIODS
                    || (seen >= FEWEST_GRACE_PERIODS && sampling.elapsed() >= SAMPLE_FOR)
                {
                    break;
                }
            }
            stop.store(true, Relaxed);
            for thread in threads {
                thread.join().unwrap();
            }
            assert!(
                worst <= 1,
                "grace_periods() returned `started` {worst} ahead of `completed`"
            );
        },
    );
}

#[test]
fn memb_counts_are_consistent_while_grace_periods_run() {
    check(memb::synchronize_rcu, memb::grace_periods);
}

#[test]
fn qsbr_counts_are_consistent_while_grace_periods_run() {
    check(qsbr::synchronize_rcu, qsbr::grace_periods);
}
