//! `call_rcu()` callbacks queued together share a grace period: the callback
//! thread takes every queued callback as one batch and waits for one grace
//! period for all of them, not one each. A test binary of its own: no other
//! test's `synchronize_rcu()` or callbacks move the flavors' grace-period
//! counts.

mod common;

use rcu_lite::{Flavor, GpCounts, Memb, Qsbr, memb, qsbr};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::time::Duration;
use test_support::DropCounted as Counted;

/// How long a grace period or barrier may take before the test counts it as
/// never ending (a lost wake-up): generous, for a loaded 2-CPU machine.
const LIMIT: Duration = Duration::from_secs(60);

/// Callbacks each round queues.
const CALLBACKS: usize = 1000;

/// Queues [`CALLBACKS`] callbacks back to back, calls `queued`, and waits in
/// `rcu_barrier()`; checks that each callback ran exactly once and its
/// closure, with what it owned, was dropped exactly once. Returns how many grace periods of the flavor
/// completed from just before the first callback was queued until the
/// barrier returned.
fn queue_and_barrier<F: Flavor>(grace_periods: fn() -> GpCounts, queued: impl FnOnce()) -> u64 {
    let ran: Arc<Vec<AtomicUsize>> =
        Arc::new((0..CALLBACKS).map(|_| AtomicUsize::new(0)).collect());
    let drops = Arc::new(AtomicUsize::new(0));
    let before = grace_periods().completed;
    for i in 0..CALLBACKS {
        let ran = Arc::clone(&ran);
        let owned = Counted::new(i as u64, &drops);
        F::call_rcu(move || {
            ran[owned.value as usize].fetch_add(1, SeqCst);
        });
    }
    queued();
    test_support::within_a_deadline(
        &format!("{}::rcu_barrier after {CALLBACKS} call_rcu()s", F::NAME),
        LIMIT,
        F::rcu_barrier,
    );
    let grace_periods = grace_periods().completed - before;
    let wrong: Vec<(usize, usize)> = ran
        .iter()
        .map(|count| count.load(SeqCst))
        .enumerate()
        .filter(|&(_, count)| count != 1)
        .collect();
    assert!(
        wrong.is_empty(),
        "{}: callbacks (index, times run) that did not run exactly once by the barrier: {wrong:?}",
        F::NAME
    );
    assert_eq!(
        drops.load(SeqCst),
        CALLBACKS,
        "{}: callbacks not dropped exactly once each",
        F::NAME
    );
    grace_periods
}

/// The check for one flavor, in two rounds:
///
/// - the callbacks queued back to back from this thread while the callback
///   thread runs freely (it wakes at the first, and takes whatever is queued
///   each time it finishes a grace period): at most one grace period per
///   callback, and the barrier's. How many fewer depends on the producer's
///   speed against a grace period's, not on the worker: with glibc a few
///   dozen, but a static musl build, whose allocator is slower, once took
///   754 for qsbr (whose grace periods, with no thread online, take
///   microseconds), and a producer slower still would find the worker idle
///   at every callback. So this round checks no batching (until 2026-12-07
///   it required fewer than half, and failed there);
/// - the callbacks queued while the callback thread is held inside a
///   callback, so that all of them wait in the queue for its next batch: that
///   batch and the barrier's own callback take two grace periods at most
///   (one, when the barrier's callback is queued before the batch is taken).
///
/// Fails in the second round where the callback thread waits for a grace
/// period per callback instead of per batch ([`CALLBACKS`] grace periods),
/// and in the first where it waits for more than one per callback.
fn callbacks_share_grace_periods<F: Flavor>(grace_periods: fn() -> GpCounts) {
    let free_running = queue_and_barrier::<F>(grace_periods, || {});
    assert!(
        free_running <= CALLBACKS as u64 + 1,
        "{}: {CALLBACKS} callbacks queued back to back took {free_running} grace periods, \
         more than one each and the barrier's",
        F::NAME
    );

    let release = common::hold_the_callback_thread::<F>(LIMIT);
    let behind_a_busy_worker = queue_and_barrier::<F>(grace_periods, move || {
        release.send(()).unwrap();
    });
    assert!(
        behind_a_busy_worker <= 2,
        "{}: {CALLBACKS} callbacks queued while the callback thread was busy took \
         {behind_a_busy_worker} grace periods, not one for the batch (and one for the barrier's \
         callback)",
        F::NAME
    );
}

/// Memb's callbacks share grace periods, as `callbacks_share_grace_periods`
/// says. Fails where the callback worker (`CallbackQueue::run_batch`) runs a
/// grace period per callback instead of per batch.
#[test]
fn memb_callbacks_queued_together_share_a_grace_period() {
    callbacks_share_grace_periods::<Memb>(memb::grace_periods);
}

/// The same for qsbr, whose `call_rcu()` and `rcu_barrier()` need no
/// registration (the test thread has none online, which the barrier
/// requires). Fails under the same mutant as the memb test.
#[test]
fn qsbr_callbacks_queued_together_share_a_grace_period() {
    callbacks_share_grace_periods::<Qsbr>(qsbr::grace_periods);
}
