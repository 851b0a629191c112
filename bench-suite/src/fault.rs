//! Fault injection shared by `torture` and `locktorture` (`--faults`).
//!
//! The kernel's torture tests inject faults from inside the code under test
//! (`rcutorture`'s long read-side delays, CPU hotplug, `stutter`); user space
//! has its own: threads that panic inside a critical section, threads that
//! die or exit while registered, floods of short-lived threads, readers that
//! stall for a scheduler-visible time. This module holds what both harnesses
//! need for them:
//!
//! - [`inject`]: a panic whose payload is an [`InjectedFault`], so a harness
//!   can tell its own panics from real ones (which it counts as errors);
//! - [`quiet_injected_panics`]: a panic hook that prints nothing for injected
//!   faults (thousands of them would bury real output) and defers to the
//!   previous hook for everything else;
//! - [`stall_length`]: the 100-300 ms a stalled section lasts;
//! - [`ProgressWatch`]: how a harness bounds a run: a counter that stops
//!   moving for longer than the run's stall limit is a hang, reported as a
//!   failure instead of a run that never ends;
//! - [`wind_down`]: the end of a run: bounded waits for its threads, panics
//!   and hangs reported;
//! - [`spawn_fault_thread`] and [`join_normal`]: the short-lived threads that
//!   carry one fault each.

use crate::start_gate::{ThreadRefused, spawn_scoped};
use std::any::Any;
use std::fmt::Display;
use std::sync::Once;
use std::thread::{JoinHandle, Scope, ScopedJoinHandle};
use std::time::{Duration, Instant};

/// The payload of every injected panic: what was injected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InjectedFault(pub &'static str);

/// Panics with an [`InjectedFault`] payload.
#[cold]
pub fn inject(what: &'static str) -> ! {
    std::panic::panic_any(InjectedFault(what))
}

/// Whether `payload` (from `catch_unwind` or `JoinHandle::join`) is an
/// injected fault.
pub fn is_injected(payload: &(dyn Any + Send)) -> bool {
    payload.is::<InjectedFault>()
}

/// A panic payload in words (the message of a real panic).
pub fn describe(payload: &(dyn Any + Send)) -> String {
    if let Some(InjectedFault(what)) = payload.downcast_ref::<InjectedFault>() {
        format!("injected fault: {what}")
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else {
        "<non-string panic payload>".to_owned()
    }
}

/// Installs, once per process, a panic hook that stays silent for
/// [`InjectedFault`] panics and calls the previous hook for all others.
pub fn quiet_injected_panics() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !info.payload().is::<InjectedFault>() {
                previous(info);
            }
        }));
    });
}

/// The shortest stall of a section ([`stall_length`]).
pub const STALL_MIN: Duration = Duration::from_millis(100);
/// The longest stall of a section ([`stall_length`]).
pub const STALL_MAX: Duration = Duration::from_millis(300);

/// How long the `n`-th stall lasts: spread over [`STALL_MIN`]..=[`STALL_MAX`]
/// by a fixed sequence, so runs are repeatable.
pub fn stall_length(n: u64) -> Duration {
    let span = (STALL_MAX - STALL_MIN).as_millis() as u64 + 1;
    // A multiplicative hash spreads consecutive n over the span.
    let step = n.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 40;
    STALL_MIN + Duration::from_millis(step % span)
}

/// Watches one progress counter: how long it has not moved while watched.
///
/// The time counted between two observations is at most
/// [`ProgressWatch::LONGEST_GAP`]. The harnesses observe every 100 ms; a
/// longer gap means the watching thread itself did not run: the whole
/// process was stopped (Ctrl-Z, a debugger, a frozen cgroup, a paused VM) or
/// starved. The watched threads did not run either, so that time says
/// nothing of them. Counted whole, a pause of 20 s made the first check after
/// it report a hang of every thread that had not yet counted again.
#[derive(Debug)]
pub struct ProgressWatch {
    last: u64,
    observed_at: Instant,
    still: Duration,
}

impl ProgressWatch {
    /// The most of one gap between observations counted as time the counter
    /// stood still.
    pub const LONGEST_GAP: Duration = Duration::from_secs(1);

    /// A watch that starts now at `value`.
    pub fn new(value: u64) -> ProgressWatch {
        ProgressWatch::new_at(value, Instant::now())
    }

    fn new_at(value: u64, now: Instant) -> ProgressWatch {
        ProgressWatch {
            last: value,
            observed_at: now,
            still: Duration::ZERO,
        }
    }

    /// Records the counter's current `value`; returns how long it has not
    /// moved (gaps longer than [`Self::LONGEST_GAP`] counted as that).
    pub fn observe(&mut self, value: u64) -> Duration {
        self.observe_at(value, Instant::now())
    }

    fn observe_at(&mut self, value: u64, now: Instant) -> Duration {
        let gap = now.saturating_duration_since(self.observed_at);
        self.observed_at = now;
        if value == self.last {
            self.still += gap.min(Self::LONGEST_GAP);
        } else {
            self.last = value;
            self.still = Duration::ZERO;
        }
        self.still
    }
}

/// Ends a run's threads once its stop flag is set: waits up to `limit` for
/// them (some may be queued behind a stalled fault), reports through `fail`
/// every one that panicked and then, as one hang, those still running, and
/// returns the handles of the latter (the caller must keep what they use
/// alive). Panics come first: a run keeps its first failure, and a thread's
/// real panic says more than a slow wind-down, which a loaded machine can
/// cause by itself.
pub fn wind_down(
    threads: Vec<(String, JoinHandle<()>)>,
    limit: Duration,
    mut fail: impl FnMut(String),
) -> Vec<JoinHandle<()>> {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline && threads.iter().any(|(_, h)| !h.is_finished()) {
        std::thread::sleep(Duration::from_millis(5));
    }
    let mut stuck = Vec::new();
    let mut unfinished = Vec::new();
    for (label, handle) in threads {
        if !handle.is_finished() {
            stuck.push(label);
            unfinished.push(handle);
        } else if let Err(payload) = handle.join() {
            fail(format!("{label} panicked: {}", describe(&*payload)));
        }
    }
    if !stuck.is_empty() {
        fail(format!(
            "hang: {} still running {:.1} s after the run stopped",
            stuck.join(", "),
            limit.as_secs_f64()
        ));
    }
    unfinished
}

/// Spawns the thread that carries one fault of kind `kind`, named after it.
/// A thread the OS refuses is returned as [`ThreadRefused`] (naming it "a
/// `kind` fault thread"), for the driver to fail its run with and stop,
/// where `Scope::spawn` would panic in the driver.
pub fn spawn_fault_thread<'scope, 'env, T: Send + 'scope>(
    scope: &'scope Scope<'scope, 'env>,
    kind: impl Display,
    body: impl FnOnce() -> T + Send + 'scope,
) -> Result<ScopedJoinHandle<'scope, T>, ThreadRefused> {
    spawn_scoped(
        scope,
        &format!("fault: {kind}"),
        || format!("a {kind} fault thread"),
        body,
    )
}

/// Joins a fault thread that must end normally: a panic is reported through
/// `fail` and returns false.
pub fn join_normal(
    kind: impl Display,
    handle: ScopedJoinHandle<'_, ()>,
    fail: impl FnOnce(String),
) -> bool {
    match handle.join() {
        Ok(()) => true,
        Err(payload) => {
            fail(format!(
                "a {kind} fault thread panicked: {}",
                describe(&*payload)
            ));
            false
        }
    }
}

/// The resident memory of this process in KiB (`VmRSS` in
/// `/proc/self/status`), where the system reports it.
pub fn rss_kib() -> Option<u64> {
    if cfg!(miri) {
        // No file system under miri's isolation.
        return None;
    }
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A counter that stands still while watched every 100 ms for the stall
    /// limit is a hang; one watched across a 30 s pause of the whole process
    /// is not, until it has stood still for the limit after the pause too.
    #[test]
    fn a_watch_counts_a_pause_of_the_process_as_one_gap() {
        let limit = Duration::from_secs(20);
        let t0 = Instant::now();
        let at = |ms: u64| t0 + Duration::from_millis(ms);

        let mut watched = ProgressWatch::new_at(0, t0);
        let mut still = Duration::ZERO;
        for tick in 1..=200 {
            still = watched.observe_at(0, at(tick * 100));
        }
        assert_eq!(still, limit, "20 s of 100 ms observations");

        let mut paused = ProgressWatch::new_at(0, t0);
        assert_eq!(paused.observe_at(0, at(100)), Duration::from_millis(100));
        // The process stopped for 30 s: one gap, counted as the longest.
        let after = paused.observe_at(0, at(30_100));
        assert_eq!(
            after,
            Duration::from_millis(100) + ProgressWatch::LONGEST_GAP
        );
        assert!(after < limit, "a 30 s pause alone counted as a hang");
        // Moving resets it; standing still again counts from there.
        assert_eq!(paused.observe_at(1, at(30_200)), Duration::ZERO);
        assert_eq!(paused.observe_at(1, at(30_300)), Duration::from_millis(100));
    }

    #[test]
    fn wind_down_reports_a_panic_before_a_thread_still_running() {
        let release = std::sync::Arc::new(std::sync::Barrier::new(2));
        let held = std::sync::Arc::clone(&release);
        let panicky = std::thread::spawn(|| std::panic::panic_any("a real bug".to_owned()));
        while !panicky.is_finished() {
            std::thread::sleep(Duration::from_millis(1));
        }
        let threads = vec![
            (
                "stuck".to_owned(),
                std::thread::spawn(move || {
                    held.wait();
                }),
            ),
            ("panicky".to_owned(), panicky),
        ];
        let mut failures = Vec::new();
        let unfinished = wind_down(threads, Duration::from_millis(50), |why| failures.push(why));
        assert_eq!(failures.len(), 2, "{failures:?}");
        assert_eq!(failures[0], "panicky panicked: a real bug");
        assert!(
            failures[1].starts_with("hang: stuck still running"),
            "{failures:?}"
        );
        release.wait();
        for handle in unfinished {
            handle.join().unwrap();
        }
    }

    /// A process that holds 8 MiB it has written has at least that much
    /// resident, and `rss_kib` says so (in KiB, from `VmRSS`). Catches
    /// 'replace rss_kib -> Option<u64> with None', '... with Some(0)' and
    /// '... with Some(1)', which every test let live.
    #[cfg(all(target_os = "linux", not(miri)))]
    #[test]
    fn rss_counts_memory_this_process_has_written() {
        let held = vec![1u8; 8 << 20];
        let rss = rss_kib().expect("VmRSS in /proc/self/status");
        assert!(rss >= 8 << 10, "{rss} KiB resident while holding 8 MiB");
        std::hint::black_box(&held);
    }

    #[test]
    fn stalls_stay_in_range_and_vary() {
        let lengths: Vec<Duration> = (0..200).map(stall_length).collect();
        assert!(lengths.iter().all(|d| (STALL_MIN..=STALL_MAX).contains(d)));
        let short = lengths
            .iter()
            .filter(|d| **d < Duration::from_millis(150))
            .count();
        let long = lengths
            .iter()
            .filter(|d| **d > Duration::from_millis(250))
            .count();
        assert!(short > 20 && long > 20, "{short} short, {long} long");
    }

    /// The sequence is fixed (runs are repeatable across builds) and reaches
    /// both ends of its range: 100 ms at n = 0 and 300 ms at n = 143, so the
    /// span counts both ends. Catches 'replace + with - in stall_length' and
    /// 'replace + with * in stall_length' in the span (300 ms never comes)
    /// and 'replace >> with << in stall_length' (another sequence, as spread
    /// and in range, which the test above let live).
    #[test]
    fn the_stall_sequence_is_fixed_and_reaches_both_ends() {
        let first: Vec<u128> = (0..8).map(|n| stall_length(n).as_millis()).collect();
        assert_eq!(first, [100, 203, 159, 263, 218, 174, 278, 234]);
        let lengths: Vec<Duration> = (0..1000).map(stall_length).collect();
        assert_eq!(lengths.iter().position(|d| *d == STALL_MIN), Some(0));
        assert_eq!(lengths.iter().position(|d| *d == STALL_MAX), Some(143));
    }

    #[test]
    fn injected_panics_are_told_apart() {
        quiet_injected_panics();
        let injected = std::panic::catch_unwind(|| inject("test")).unwrap_err();
        assert!(is_injected(&*injected));
        assert_eq!(describe(&*injected), "injected fault: test");
        let real = std::panic::catch_unwind(|| panic!("real {}", 1)).unwrap_err();
        assert!(!is_injected(&*real));
        assert_eq!(describe(&*real), "real 1");
    }

    /// Set in the child process of
    /// [`the_quiet_hook_passes_on_real_panics_only`].
    const QUIET_HOOK_CHILD: &str = "SYNCBENCH_FAULT_QUIET_HOOK_CHILD";

    /// The hook of [`quiet_injected_panics`] hands every real panic, and no
    /// injected one, to the hook that was there before it. It runs in a child
    /// process of its own: the hook is installed once per process, and other
    /// tests of this binary install it too. Catches 'replace
    /// quiet_injected_panics with ()' (the injected panic reaches the
    /// previous hook) and 'delete ! in quiet_injected_panics' (the real one
    /// does not), which every test let live.
    #[test]
    fn the_quiet_hook_passes_on_real_panics_only() {
        if std::env::var_os(QUIET_HOOK_CHILD).is_none() {
            return test_support::in_a_child_process(
                "fault::tests::the_quiet_hook_passes_on_real_panics_only",
                QUIET_HOOK_CHILD,
                "1",
            );
        }
        static SEEN: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());
        std::panic::set_hook(Box::new(|info| {
            SEEN.lock().unwrap().push(describe(info.payload()));
        }));
        quiet_injected_panics();
        assert!(std::panic::catch_unwind(|| inject("quiet")).is_err());
        assert!(std::panic::catch_unwind(|| panic!("loud")).is_err());
        let _ = std::panic::take_hook();
        assert_eq!(*SEEN.lock().unwrap(), ["loud"]);
    }

    #[test]
    fn a_watch_measures_time_since_the_last_move() {
        let mut watch = ProgressWatch::new(0);
        std::thread::sleep(Duration::from_millis(20));
        assert!(watch.observe(0) >= Duration::from_millis(20));
        assert!(watch.observe(1) < Duration::from_millis(20));
    }
}
