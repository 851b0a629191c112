//! Real syscall stress on this machine's kernel.
//! Not built under `cfg(loom)`: real threads against real time.
#![cfg(not(loom))]

use membarrier_sim::stress::{self, Config, Error};
use membarrier_sim::sys::{self, Command};
use std::time::Duration;

fn config(threads: u32, targets: Vec<u32>) -> Config {
    Config {
        threads,
        targets,
        duration: Duration::from_millis(200),
        watchdog: Duration::from_secs(1),
    }
}

#[test]
#[cfg_attr(miri, ignore = "membarrier(2), a syscall miri does not implement")]
fn stress_hammers_the_kernel_or_says_why_not() {
    let online: Vec<u32> = sys::online_cpus().iter().take(2).collect();
    match stress::run(&config(3, online.clone())) {
        Ok(r) => {
            assert!(r.calls > 0, "{r:?}");
            assert!(r.calls_per_s() > 0.0);
            assert_eq!(r.targets, online);
            let l = (
                r.latency.percentile(50.0),
                r.latency.percentile(99.0),
                r.latency.max(),
            );
            assert!(l.0 <= l.1 && l.1 <= l.2, "{l:?}");
        }
        Err(Error::Sys(sys::Error::Unsupported { command } | sys::Error::Blocked { command })) => {
            // Kernels before 5.10 or without CONFIG_RSEQ, or a sandbox.
            assert_eq!(command, Command::PrivateExpeditedRseq);
            assert!(!sys::query().contains(Command::PrivateExpeditedRseq));
        }
        Err(e) => panic!("{e}"),
    }
}

#[test]
#[cfg_attr(miri, ignore = "membarrier(2), a syscall miri does not implement")]
fn stress_refuses_what_cannot_run() {
    let err = stress::run(&config(1, vec![100_000])).unwrap_err();
    match err {
        Error::Sys(sys::Error::BadCpu { cpu, .. }) => assert_eq!(cpu, 100_000),
        Error::Sys(e) if e.is_unavailable() => {}
        other => panic!("{other}"),
    }
    assert!(matches!(
        stress::run(&config(0, vec![0])).unwrap_err(),
        Error::NoThreads
    ));
    assert!(matches!(
        stress::run(&config(1, vec![])).unwrap_err(),
        Error::NoTargets
    ));
    assert!(Error::NoThreads.to_string().contains("at least one"));
    // A duration whose end the clock cannot hold is refused before anything
    // runs (it panicked on the deadline's overflow, with every thread
    // started, until 2026-12-07).
    let endless = Config {
        duration: Duration::MAX,
        ..config(1, vec![0])
    };
    let err = stress::run(&endless).unwrap_err();
    assert!(
        matches!(err, Error::DurationTooLong { duration } if duration == Duration::MAX),
        "{err}"
    );
    assert!(err.to_string().contains("shorter duration"), "{err}");
}

/// Every successful call is one latency sample, and a call counts as a
/// stall exactly when it took longer than the watchdog: with a watchdog of
/// zero every call is one, with an hour none is.
#[test]
#[cfg_attr(miri, ignore = "membarrier(2), a syscall miri does not implement")]
fn stress_counts_each_call_once_and_stalls_against_the_watchdog() {
    let target: Vec<u32> = sys::online_cpus().iter().take(1).collect();
    for (watchdog, all_stall) in [(Duration::ZERO, true), (Duration::from_secs(3600), false)] {
        let mut c = config(2, target.clone());
        c.duration = Duration::from_millis(50);
        c.watchdog = watchdog;
        let r = match stress::run(&c) {
            Ok(r) => r,
            Err(Error::Sys(e)) if e.is_unavailable() => return,
            Err(e) => panic!("{e}"),
        };
        assert!(r.calls > 0, "no calls in {:?}", r.elapsed);
        assert_eq!(r.latency.count(), r.calls, "one latency sample per call");
        let expected = if all_stall { r.calls } else { 0 };
        assert_eq!(
            r.stalls, expected,
            "watchdog {watchdog:?}: {} stalls in {} calls",
            r.stalls, r.calls
        );
    }
}
