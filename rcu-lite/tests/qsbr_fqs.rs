//! `qsbr::configure` takes effect on the qsbr flavor's grace periods: with a
//! fixed FQS interval they make the FQS waits that `GpCounts::fqs_waits`
//! documents (on an idle system one per grace period with quick QS, two
//! without), as `fqs.rs` checks for memb.
//!
//! Alone in its test binary: the settings are the process's, and the other
//! qsbr tests would run their grace periods under them (and theirs would
//! count here).

mod common;

use common::IdleThread;
use rcu_lite::qsbr;
use rcu_lite::{Fqs, GpConfig};
use std::time::Duration;

/// How long a grace period may take before the test counts it as never
/// ending (a lost wake-up): generous, for a loaded 2-CPU machine.
const LIMIT: Duration = Duration::from_secs(60);

/// FQS waits one qsbr grace period takes on an idle system under a 1 ms
/// fixed interval, with quick QS `quick_qs`. Restores the settings it found.
fn qsbr_fqs_waits_per_grace_period(quick_qs: bool) -> u64 {
    let config = GpConfig {
        quick_qs,
        fqs: Fqs::FixedInterval(Duration::from_millis(1)),
    };
    let old = qsbr::configure(config);
    // A registered thread that is offline, parked until the grace period
    // is over: an idle CPU, which only FQS scan 1 credits. (One that dropped
    // its registration is an offline CPU, waited for by nothing: then, with
    // quick QS, the driver's report is the last one and the grace period
    // makes no FQS wait, as on the kernel's one-CPU system.)
    let idle = IdleThread::qsbr();
    let before = qsbr::grace_periods();
    test_support::within_a_deadline("qsbr::synchronize_rcu", LIMIT, qsbr::synchronize_rcu);
    let after = qsbr::grace_periods();
    drop(idle);
    // What `configure` returns is `qsbr_config.rs`'s to check.
    qsbr::configure(old);
    assert_eq!(
        after.completed - before.completed,
        1,
        "not one grace period: {before:?} {after:?}"
    );
    after.fqs_waits - before.fqs_waits
}

/// A qsbr grace period under `Fqs::FixedInterval` makes one FQS wait on an
/// idle system with quick QS and two without, as `GpCounts::fqs_waits` and
/// `GpConfig::quick_qs` document; under the default (adaptive) settings,
/// restored at the end, it makes none. Settings that qsbr ignored (or read
/// from memb's engine) would show as no FQS wait at all, and a quick-QS
/// switch it ignored as the same count both ways.
#[test]
fn qsbr_configure_sets_how_many_fqs_waits_an_idle_grace_period_makes() {
    assert_eq!(
        qsbr::config(),
        GpConfig::DEFAULT,
        "the settings did not start as the default"
    );
    assert_eq!(
        qsbr_fqs_waits_per_grace_period(false),
        2,
        "FQS waits of an idle qsbr grace period without quick QS"
    );
    assert_eq!(
        qsbr_fqs_waits_per_grace_period(true),
        1,
        "FQS waits of an idle qsbr grace period with quick QS"
    );
    assert_eq!(
        qsbr::config(),
        GpConfig::DEFAULT,
        "the default not restored"
    );
    let before = qsbr::grace_periods().fqs_waits;
    test_support::within_a_deadline("qsbr::synchronize_rcu", LIMIT, qsbr::synchronize_rcu);
    assert_eq!(
        qsbr::grace_periods().fqs_waits - before,
        0,
        "FQS waits of a qsbr grace period under the default (adaptive) settings"
    );
}
