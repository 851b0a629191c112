//! `callbacks_pending()` counts callbacks until they start, for both flavors,
//! and `start_poll_synchronize_rcu()` queues a callback only when none is
//! queued: polls while the callback thread is busy queue one callback in
//! all, a callback the caller queued serves a poll as well, and every cookie
//! still elapses through the batch that is queued. A test binary of its
//! own, one test per flavor: no other test's callbacks move the counts or
//! drive grace periods.

mod common;

use rcu_lite::{Flavor, GpState, Memb, Qsbr, memb, qsbr};
use std::time::Duration;

/// How long a grace period or barrier may take before the test counts it as
/// never ending (a lost wake-up): generous, for a loaded 2-CPU machine.
const LIMIT: Duration = Duration::from_secs(60);

/// Through the `Flavor` trait; `module_pending` is the flavor module's own
/// `callbacks_pending`, which must agree.
fn counts_until_they_start<F: Flavor + 'static>(module_pending: fn() -> usize) {
    assert_eq!(F::callbacks_pending(), 0, "nothing queued yet");
    let release = common::hold_the_callback_thread::<F>(LIMIT);
    assert_eq!(
        F::callbacks_pending(),
        0,
        "a running callback is no longer pending"
    );
    for _ in 0..100 {
        F::call_rcu(|| {});
    }
    assert_eq!(
        F::callbacks_pending(),
        100,
        "queued behind a running callback"
    );
    assert_eq!(module_pending(), 100, "the module's reading differs");
    release.send(()).unwrap();
    test_support::within_a_deadline("rcu_barrier", LIMIT, F::rcu_barrier);
    assert_eq!(
        F::callbacks_pending(),
        0,
        "rcu_barrier ran everything queued before it"
    );
}

/// Waits until `state` elapses, which only the callback thread can make
/// happen here; panics after `LIMIT`.
fn until_elapsed<F: Flavor>(state: GpState<F>) {
    test_support::within_a_deadline("a started poll's cookie", LIMIT, move || {
        while !F::poll_state_synchronize_rcu(state) {
            std::thread::sleep(Duration::from_millis(1));
        }
    });
}

/// Polls behind a queued callback queue none of their own, and their
/// cookies elapse through the batch that is queued. (Fails where every poll
/// queues a callback: 101 pending after the first loop.)
fn polls_share_one_queued_callback<F: Flavor + 'static>() {
    assert_eq!(F::callbacks_pending(), 0, "nothing queued yet");
    let release = common::hold_the_callback_thread::<F>(LIMIT);
    let first = F::start_poll_synchronize_rcu();
    assert_eq!(F::callbacks_pending(), 1, "a poll queues a callback");
    let later: Vec<GpState<F>> = (0..100).map(|_| F::start_poll_synchronize_rcu()).collect();
    assert_eq!(
        F::callbacks_pending(),
        1,
        "polls behind a queued callback queued more (one each, before they shared it)"
    );
    // Nobody drives a grace period while the callback thread is held.
    assert!(
        !F::poll_state_synchronize_rcu(first),
        "a cookie elapsed with no grace period driven after it"
    );
    release.send(()).unwrap();
    until_elapsed(first);
    for state in later {
        until_elapsed(state);
    }

    // A callback the caller queued serves a poll too: its batch is taken
    // after the poll, and waits for a grace period that begins after that.
    let release = common::hold_the_callback_thread::<F>(LIMIT);
    F::call_rcu(|| {});
    let state = F::start_poll_synchronize_rcu();
    assert_eq!(
        F::callbacks_pending(),
        1,
        "a poll behind the caller's own callback queued another"
    );
    release.send(()).unwrap();
    until_elapsed(state);
    test_support::within_a_deadline("rcu_barrier", LIMIT, F::rcu_barrier);
    assert_eq!(F::callbacks_pending(), 0, "rcu_barrier ran everything");
}

#[test]
fn memb_callbacks_pending_and_polls() {
    counts_until_they_start::<Memb>(memb::callbacks_pending);
    polls_share_one_queued_callback::<Memb>();
}

#[test]
fn qsbr_callbacks_pending_and_polls() {
    counts_until_they_start::<Qsbr>(qsbr::callbacks_pending);
    polls_share_one_queued_callback::<Qsbr>();
}
