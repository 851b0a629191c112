//! Callers of `synchronize_rcu()` that arrive while grace period N is in
//! progress share the next one: all of them wait for N + 1, and N + 1 serves
//! them all (see "Callers share grace periods" in `engine.rs`). `loom.rs`
//! checks only that two callers need at most two grace periods; this counts
//! them exactly, with more callers. Its own process, so that no other test
//! starts grace periods meanwhile; the two tests use different flavors, whose
//! engines are separate.

use rcu_lite::{GpConfig, GpCounts, memb, qsbr};
use std::thread;
use std::time::{Duration, Instant};

/// Callers that arrive while grace period N is held open.
const LATE_CALLERS: usize = 6;

/// How long a grace period may take, or a caller may take to fall asleep
/// waiting, before the test counts it as never happening: generous, for a
/// loaded 2-CPU machine.
const LIMIT: Duration = Duration::from_secs(60);

/// Holds grace period N open with a reader (`hold`, which enters a section
/// or comes online on this thread and returns what ends it when dropped),
/// starts one caller, which begins N and waits for the reader, then
/// [`LATE_CALLERS`] more, and waits until each of those sleeps waiting for
/// a grace period. Lets the reader go, joins every caller, and checks that
/// exactly two grace periods ran: N and the one the late callers shared.
fn late_callers_share_one_grace_period<H>(
    flavor: &str,
    synchronize: fn(),
    counts: fn() -> GpCounts,
    config: fn() -> GpConfig,
    hold: impl FnOnce() -> H,
) {
    // Adaptive FQS with quick QS: nothing but the reader holds N up, and no
    // timer paces the grace periods.
    assert_eq!(
        config(),
        GpConfig::DEFAULT,
        "{flavor}: not the default settings"
    );
    let before = counts();
    assert_eq!(
        before.started, before.completed,
        "{flavor}: a grace period is in progress before the test: {before:?}"
    );
    // The reader's section (or online registration) begins before N, so N
    // waits for it.
    let reader = hold();
    let first = thread::spawn(synchronize);
    let deadline = Instant::now() + LIMIT;
    while counts().started == before.started {
        assert!(
            Instant::now() < deadline,
            "{flavor}: the first caller did not start a grace period within {LIMIT:?}"
        );
        thread::yield_now();
    }
    let late: Vec<_> = (0..LATE_CALLERS)
        .map(|i| {
            thread::Builder::new()
                .name(format!("{flavor}-late-{i}"))
                .spawn(synchronize)
                .expect("a late caller's thread starts")
        })
        .collect();
    // A late caller sleeps only in its wait for a grace period (the futex
    // wait of `wait_or_take_over`), which it reaches after the RMW that
    // fixed its target: N + 1, as N had started. Asleep 10 looks in a row,
    // 2 ms apart: not a short wait for an allocator lock, nor a thread's
    // start held up on a loaded machine.
    for i in 0..LATE_CALLERS {
        test_support::until_asleep(
            &format!("{flavor}-late-{i}"),
            10,
            LIMIT,
            "a late caller waiting for a grace period",
        );
    }
    let during = counts();
    assert_eq!(
        (during.started, during.completed),
        (before.started + 1, before.completed),
        "{flavor}: grace period N is not the only one started, or it completed, while the \
         reader held it: {before:?} then {during:?}"
    );
    drop(reader);
    test_support::within_a_deadline(
        "the first caller's and the late callers' synchronize_rcu",
        LIMIT,
        move || {
            first.join().expect("the first caller panicked");
            for caller in late {
                caller.join().expect("a late caller panicked");
            }
        },
    );
    let after = counts();
    assert_eq!(
        (
            after.started - before.started,
            after.completed - before.completed
        ),
        (2, 2),
        "{flavor}: 1 + {LATE_CALLERS} callers, {LATE_CALLERS} of them arriving during grace \
         period N, ran other than two grace periods (N and a shared N + 1): {before:?} then \
         {after:?}"
    );
}

#[test]
#[cfg_attr(
    miri,
    ignore = "reads the callers' thread states in /proc, which miri cannot"
)]
fn memb_callers_arriving_during_a_grace_period_share_the_next_one() {
    late_callers_share_one_grace_period(
        "memb",
        memb::synchronize_rcu,
        memb::grace_periods,
        memb::config,
        memb::read_lock,
    );
}

#[test]
#[cfg_attr(
    miri,
    ignore = "reads the callers' thread states in /proc, which miri cannot"
)]
fn qsbr_callers_arriving_during_a_grace_period_share_the_next_one() {
    late_callers_share_one_grace_period(
        "qsbr",
        qsbr::synchronize_rcu,
        qsbr::grace_periods,
        qsbr::config,
        qsbr::QsbrThread::register,
    );
}
