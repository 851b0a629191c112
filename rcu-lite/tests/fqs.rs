//! Quick quiescent-state reporting and FQS pacing: the seed's claim as a
//! count of FQS waits, and expedited grace periods cutting FQS waits short.
//!
//! These tests change the memb flavor's configuration, so they run one at a
//! time (`SERIAL`) in this test binary of their own.

mod common;

use common::{IdleThread, memb_fqs_waits_of_one_grace_period};
use rcu_lite::{Fqs, GpConfig, memb};
use std::sync::{Barrier, Mutex, mpsc};
use std::thread;
use std::time::{Duration, Instant};

static SERIAL: Mutex<()> = Mutex::new(());

/// How long a grace period or barrier may take before the test counts it as
/// never ending (a lost wake-up): generous, for a loaded 2-CPU machine.
const LIMIT: Duration = Duration::from_secs(60);

fn with_config<R>(config: GpConfig, f: impl FnOnce() -> R) -> R {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let old = memb::configure(config);
    let out = f();
    memb::configure(old);
    out
}

/// FQS waits one idle-system grace period takes.
fn fqs_waits_per_grace_period(quick_qs: bool) -> u64 {
    with_config(
        GpConfig {
            quick_qs,
            fqs: Fqs::FixedInterval(Duration::from_millis(1)),
        },
        || {
            // An idle CPU: without one, the kernel's one-CPU system, quick
            // QS leaves nothing to wait for (`tests/fqs_lone.rs`).
            let _idle = IdleThread::memb();
            memb_fqs_waits_of_one_grace_period()
        },
    )
}

#[test]
fn quick_qs_turns_two_fqs_waits_into_one_on_an_idle_system() {
    assert_eq!(fqs_waits_per_grace_period(true), 1, "with quick QS");
    assert_eq!(fqs_waits_per_grace_period(false), 2, "without quick QS");
}

/// Without quick QS a grace period on an idle system lasts two full FQS
/// intervals (the seed's baseline): the driver's first wait never ends early,
/// and neither does its second, since the driver is not credited before the
/// scan that follows it. A second wait ended as soon as no holdout was left
/// counted as two waits but lasted one interval.
#[test]
fn without_quick_qs_an_idle_grace_period_lasts_two_full_intervals() {
    const INTERVAL: Duration = Duration::from_millis(50);
    let config = GpConfig {
        quick_qs: false,
        fqs: Fqs::FixedInterval(INTERVAL),
    };
    let elapsed = with_config(config, || {
        // An idle CPU (a registered thread outside its section), though
        // with quick QS off the driver makes both waits anyway.
        let _idle = IdleThread::memb();
        let start = Instant::now();
        test_support::within_a_deadline("memb::synchronize_rcu", LIMIT, memb::synchronize_rcu);
        start.elapsed()
    });
    assert!(
        elapsed >= 2 * INTERVAL,
        "an idle grace period without quick QS took {elapsed:?}, under two {INTERVAL:?} FQS \
         intervals"
    );
}

/// "Grace periods already running keep theirs" (`memb::configure`): a
/// grace period begun under a fixed interval without quick QS still lasts
/// its two full intervals when the default (adaptive, quick QS) is set
/// during its first wait. One that read the settings again would end its
/// second wait at once and last about one interval.
#[test]
fn a_grace_period_already_running_keeps_its_settings() {
    const INTERVAL: Duration = Duration::from_millis(300);
    let config = GpConfig {
        quick_qs: false,
        fqs: Fqs::FixedInterval(INTERVAL),
    };
    let elapsed = with_config(config, || {
        // An idle CPU (a registered thread outside its section), though
        // with quick QS off the driver makes both waits anyway.
        let _idle = IdleThread::memb();
        let before = memb::grace_periods();
        let start = Instant::now();
        let caller = thread::spawn(move || {
            test_support::within_a_deadline("memb::synchronize_rcu", LIMIT, memb::synchronize_rcu);
            start.elapsed()
        });
        // Once the grace period is under way (in its first wait), back to
        // the default.
        let deadline = Instant::now() + LIMIT;
        while memb::grace_periods().started == before.started {
            assert!(Instant::now() < deadline, "the grace period never started");
            thread::yield_now();
        }
        memb::configure(GpConfig::DEFAULT);
        caller.join().unwrap()
    });
    assert!(
        elapsed >= 2 * INTERVAL,
        "a grace period begun under a {INTERVAL:?} interval without quick QS took {elapsed:?} \
         once the default was set during it: it took the new settings up"
    );
}

#[test]
fn adaptive_mode_makes_no_fqs_waits() {
    let waits = with_config(GpConfig::DEFAULT, || {
        let before = memb::grace_periods().fqs_waits;
        test_support::within_a_deadline("memb::synchronize_rcu", LIMIT, memb::synchronize_rcu);
        memb::grace_periods().fqs_waits - before
    });
    assert_eq!(waits, 0);
}

#[test]
fn expedited_callers_cut_an_hour_long_fqs_wait_short() {
    let config = GpConfig {
        quick_qs: false,
        fqs: Fqs::FixedInterval(Duration::from_secs(3600)),
    };
    with_config(config, || {
        // Alone: the expedited grace period never waits for the timer.
        let (tx, rx) = mpsc::channel();
        thread::spawn(move || {
            memb::synchronize_rcu_expedited();
            tx.send(()).unwrap();
        });
        rx.recv_timeout(Duration::from_secs(20))
            .expect("expedited grace period waited for the FQS timer");

        // Behind a normal caller asleep in its first FQS wait: the expedited
        // request wakes that driver, and both return.
        let (tx, rx) = mpsc::channel();
        let normal_tx = tx.clone();
        thread::spawn(move || {
            memb::synchronize_rcu();
            normal_tx.send("normal").unwrap();
        });
        // Bounded: a grace period that skipped its hour-long first FQS wait
        // would be over before this loop saw it in progress.
        let deadline = Instant::now() + Duration::from_secs(20);
        while memb::grace_periods().started == memb::grace_periods().completed {
            assert!(
                Instant::now() < deadline,
                "the normal caller's grace period was never seen in progress: it ended without \
                 its hour-long first FQS wait"
            );
            thread::yield_now();
        }
        thread::spawn(move || {
            memb::synchronize_rcu_expedited();
            tx.send("expedited").unwrap();
        });
        for _ in 0..2 {
            rx.recv_timeout(Duration::from_secs(20))
                .expect("a grace period waited for the hour-long FQS timer");
        }
    });
}

/// The qsbr flavor's expedited grace periods ignore its FQS pacing too, for
/// the free function and a registration's method, alone and behind a normal
/// caller asleep in an hour-long first FQS wait (the memb test above, for
/// the other engine; nothing checked qsbr's until 2026-12-07). qsbr's
/// configuration is its own, so this needs no `SERIAL`, only its restore.
#[test]
fn qsbr_expedited_callers_cut_an_hour_long_fqs_wait_short() {
    use rcu_lite::qsbr;
    let old = qsbr::configure(GpConfig {
        quick_qs: false,
        fqs: Fqs::FixedInterval(Duration::from_secs(3600)),
    });
    let (tx, rx) = mpsc::channel();
    let alone = tx.clone();
    thread::spawn(move || {
        qsbr::synchronize_rcu_expedited();
        qsbr::QsbrThread::register().synchronize_rcu_expedited();
        alone.send("alone").unwrap();
    });
    assert_eq!(
        rx.recv_timeout(Duration::from_secs(20))
            .expect("an expedited qsbr grace period waited for the FQS timer"),
        "alone"
    );
    let normal = tx.clone();
    thread::spawn(move || {
        qsbr::synchronize_rcu();
        normal.send("normal").unwrap();
    });
    // Bounded: a grace period that skipped its hour-long first FQS wait
    // would be over before this loop saw it in progress.
    let deadline = Instant::now() + Duration::from_secs(20);
    while qsbr::grace_periods().started == qsbr::grace_periods().completed {
        assert!(
            Instant::now() < deadline,
            "the normal qsbr caller's grace period was never seen in progress"
        );
        thread::yield_now();
    }
    thread::spawn(move || {
        let mut registration = qsbr::QsbrThread::register();
        registration.synchronize_rcu_expedited();
        tx.send("expedited").unwrap();
    });
    for _ in 0..2 {
        rx.recv_timeout(Duration::from_secs(20))
            .expect("a qsbr grace period waited for the hour-long FQS timer");
    }
    qsbr::configure(old);
}

/// With a fixed interval shorter than the driver's way to its sleep (1 ns
/// here), every FQS wait still sleeps, as the kernel's grace-period kthread
/// sleeps at least a jiffy: a grace period held up by a reader uses part of
/// a CPU while it waits (a fifth, on a 2-vCPU VM whose heavy fence, a
/// membarrier IPI, costs tens of microseconds). Before, a wait whose deadline had passed
/// when it was reached returned without sleeping, and the driver rescanned
/// its holdout back to back for the whole of the reader's section (a CPU's
/// worth, and at SCHED_FIFO a reader sharing its CPU would never have run).
#[test]
#[cfg_attr(
    miri,
    ignore = "holds a reader for 300 ms and reads a thread CPU clock"
)]
fn every_fqs_wait_sleeps_however_short_the_interval() {
    const HOLD: Duration = Duration::from_millis(300);
    let config = GpConfig {
        quick_qs: true,
        fqs: Fqs::FixedInterval(Duration::from_nanos(1)),
    };
    let (cpu, wall, waits) = with_config(config, || {
        let (entered_tx, entered_rx) = mpsc::channel();
        let reader = thread::spawn(move || {
            let guard = memb::read_lock();
            entered_tx.send(()).unwrap();
            thread::sleep(HOLD);
            drop(guard);
        });
        entered_rx.recv().unwrap();
        let (result_tx, result_rx) = mpsc::channel();
        test_support::within_a_deadline("memb::synchronize_rcu", LIMIT, move || {
            let waits = memb::grace_periods().fqs_waits;
            let (cpu, wall) = (test_support::thread_cpu_time(), Instant::now());
            memb::synchronize_rcu();
            result_tx
                .send((
                    test_support::thread_cpu_time() - cpu,
                    wall.elapsed(),
                    memb::grace_periods().fqs_waits - waits,
                ))
                .unwrap();
        });
        reader.join().unwrap();
        result_rx.recv().unwrap()
    });
    assert!(
        waits >= 2,
        "a grace period held up by a reader for {HOLD:?} made {waits} FQS waits over {wall:?}"
    );
    assert!(
        cpu < wall * 3 / 4,
        "a grace period with a 1 ns FQS interval used {cpu:?} of CPU over {wall:?} \
         ({waits} FQS waits): its driver rescanned its holdout without sleeping"
    );
}

#[test]
fn configure_returns_the_previous_settings() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let kernel = GpConfig {
        quick_qs: false,
        fqs: Fqs::kernel(),
    };
    let old = memb::configure(kernel);
    assert_eq!(memb::config(), kernel);
    assert_eq!(memb::configure(old), kernel);
    assert_eq!(Fqs::kernel(), Fqs::FixedInterval(Duration::from_millis(3)));
}

/// `configure` replaces the settings whole: callers racing each other each get
/// back the settings they replaced, so every value set comes back exactly once
/// (as some call's "previous", or as the final settings). A torn or repeated
/// "previous" needs two calls to interleave, so the race runs several rounds.
#[test]
fn racing_configure_calls_each_return_what_they_replaced() {
    // Miri interleaves at every step, so a few hundred calls race there.
    const PER_THREAD: u64 = if cfg!(miri) { 200 } else { 100_000 };
    const ROUNDS: u64 = if cfg!(miri) { 2 } else { 8 };
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    // Every setting of the test distinct, its quick_qs tied to its interval.
    let setting = |racer: u64, i: u64| GpConfig {
        quick_qs: i.is_multiple_of(2),
        fqs: Fqs::FixedInterval(Duration::from_nanos(1 + racer * PER_THREAD + i)),
    };
    let key = |c: &GpConfig| match c.fqs {
        Fqs::FixedInterval(d) => (d, c.quick_qs),
        Fqs::Adaptive => (Duration::ZERO, c.quick_qs),
    };
    let initial = memb::config();
    for round in 0..ROUNDS {
        let start = Barrier::new(2);
        let mut returned: Vec<GpConfig> = thread::scope(|s| {
            let racers: Vec<_> = [2 * round, 2 * round + 1]
                .into_iter()
                .map(|racer| {
                    let start = &start;
                    s.spawn(move || {
                        start.wait();
                        (0..PER_THREAD)
                            .map(|i| memb::configure(setting(racer, i)))
                            .collect::<Vec<_>>()
                    })
                })
                .collect();
            racers.into_iter().flat_map(|r| r.join().unwrap()).collect()
        });
        let last = memb::configure(initial);
        returned.push(last);
        let mut expected: Vec<GpConfig> = [2 * round, 2 * round + 1]
            .into_iter()
            .flat_map(|racer| (0..PER_THREAD).map(move |i| setting(racer, i)))
            .collect();
        expected.push(initial);
        returned.sort_by_key(key);
        expected.sort_by_key(key);
        let mismatched = returned
            .iter()
            .zip(&expected)
            .filter(|(a, b)| a != b)
            .count();
        assert_eq!(
            mismatched,
            0,
            "round {round}: settings returned twice, torn or lost ({mismatched} of {})",
            expected.len()
        );
    }
}

/// The settings keep a 1 ns interval and clamp an interval too long for the
/// engine's word to about 292 years.
#[test]
fn extreme_fqs_intervals_come_back() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let shortest = GpConfig {
        quick_qs: false,
        fqs: Fqs::FixedInterval(Duration::from_nanos(1)),
    };
    let old = memb::configure(shortest);
    assert_eq!(memb::config(), shortest);
    memb::configure(GpConfig {
        quick_qs: true,
        fqs: Fqs::FixedInterval(Duration::MAX),
    });
    assert_eq!(
        memb::configure(old),
        GpConfig {
            quick_qs: true,
            fqs: Fqs::FixedInterval(Duration::from_nanos((1 << 63) - 1)),
        }
    );
}
