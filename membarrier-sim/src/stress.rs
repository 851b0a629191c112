//! Real syscall stress: threads hammering targeted
//! `MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ` with `MEMBARRIER_CMD_FLAG_CPU`,
//! as the `membarrier_rseq_stress` selftest's hammer threads do (without its
//! throttled cgroup hierarchy, which needs root).
//!
//! Mirrors the selftest's `hammer_thread_fn()`: register the process once
//! (`MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_RSEQ`), then each thread calls
//! the command on its fixed target CPU in a loop, counting successes. What
//! the kernel does with them (one global `membarrier_ipi_mutex` today, a
//! per-CPU mutex with the seed's series) is the kernel's own: this measures
//! the running kernel, not a model.
//!
//! Invariants: targets are checked online once, before the threads start
//! ([`sys::OnlineCpu`]); a failing call stops its thread and the run reports
//! the first error, so a kernel without the command yields a clear error,
//! never a zero-calls "result". The threads wait at a gate until all exist
//! (so that starting thousands is not slowed by those already hammering),
//! and the run is timed from its opening. Each thread stops at the run's
//! deadline by its own clock: it starts no call at or after it. (A flag set
//! by the spawning thread once it wakes from its sleep is not enough: with
//! thousands of hammer threads on a few CPUs, that thread waited seconds for
//! a CPU while the others kept calling, so a 0.01 s run of 5,000 threads took
//! 7 s.) The report's elapsed time ends with the last call. If a thread
//! cannot be started, or the spawning thread panics, the gate aborts and the
//! stop flag is set before the scope joins the threads (see `crate::spawn`):
//! [`Error::Spawn`] or the panic, never a hang.

use crate::sim::Histogram;
use crate::spawn::{self, Gate, OnDrop};
use crate::sync::{AtomicBool, Ordering};
use crate::sys::{self, Command, OnlineCpu};
use std::fmt;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

/// One stress run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    /// Hammer threads; thread `i` targets `targets[i % targets.len()]`.
    pub threads: u32,
    /// The CPUs aimed at.
    pub targets: Vec<u32>,
    /// How long to hammer.
    pub duration: Duration,
    /// A call slower than this counts as a stall.
    pub watchdog: Duration,
}

/// What a stress run measured.
#[derive(Clone, Debug)]
pub struct Report {
    /// Hammer threads.
    pub threads: u32,
    /// The CPUs aimed at.
    pub targets: Vec<u32>,
    /// The time the threads ran: from the gate's opening to the end of the
    /// last call (at least the duration asked for, and more by as much as a
    /// call in flight at the deadline took).
    pub elapsed: Duration,
    /// Calls that succeeded.
    pub calls: u64,
    /// Latency of each call, in ns.
    pub latency: Histogram,
    /// Calls slower than the watchdog.
    pub stalls: u64,
}

impl Report {
    /// Successful calls per second.
    pub fn calls_per_s(&self) -> f64 {
        self.calls as f64 / self.elapsed.as_secs_f64()
    }
}

/// Why a stress run could not run or stopped.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// No threads were asked for.
    NoThreads,
    /// No target CPUs were given.
    NoTargets,
    /// The kernel refused the command or a target CPU. Transparent: it
    /// displays as the [`sys::Error`] it holds, and its `source()` is that
    /// error's, so that an error chain does not print the message twice.
    Sys(sys::Error),
    /// The duration ran out before any hammer thread completed a call (a
    /// duration of microseconds, with threads still being woken from the
    /// gate): a rate of zero would say nothing about the kernel.
    NoCalls {
        /// The duration asked for.
        duration: Duration,
    },
    /// The duration's end is past what the machine's clock can represent
    /// (`Instant` plus the duration overflows), checked before any thread
    /// starts.
    DurationTooLong {
        /// The duration asked for.
        duration: Duration,
    },
    /// The OS refused a hammer thread; the threads already started were
    /// stopped.
    Spawn {
        /// Threads asked for.
        threads: u32,
        /// Threads started before the one refused.
        started: u32,
        /// The OS's answer.
        source: std::io::Error,
    },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::NoThreads => f.write_str("at least one hammer thread is needed (got 0)"),
            Error::NoTargets => f.write_str("at least one target CPU is needed"),
            Error::Sys(e) => e.fmt(f),
            Error::NoCalls { duration } => write!(
                f,
                "no hammer call completed within the run's {duration:?}: give it a longer \
                 duration"
            ),
            Error::DurationTooLong { duration } => write!(
                f,
                "a run of {duration:?} ends past what this machine's clock can represent: \
                 give it a shorter duration"
            ),
            Error::Spawn {
                threads,
                started,
                source,
            } => write!(
                f,
                "could not start hammer thread {} of {threads}: {source}; {}",
                started + 1,
                spawn::LIMITS
            ),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            // Transparent: `Display` already printed `e` (until 2026-12-07
            // this returned `e`, and a chain walker such as anyhow's `{:#}`
            // printed its message twice).
            Error::Sys(e) => e.source(),
            Error::Spawn { source, .. } => Some(source),
            _ => None,
        }
    }
}

impl From<sys::Error> for Error {
    fn from(e: sys::Error) -> Error {
        Error::Sys(e)
    }
}

/// Hammers the targets for `config.duration`.
///
/// # Errors
///
/// [`Error::Sys`] with [`sys::Error::Unsupported`] where the kernel lacks
/// `MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ` (before Linux 5.10, or without
/// `CONFIG_RSEQ`) or [`sys::Error::Blocked`] where a sandbox blocks
/// membarrier(2) (both [`sys::Error::is_unavailable`]), [`sys::Error::BadCpu`] for a target that is not online,
/// or the first error a call returned; [`Error::Spawn`] if this machine
/// refused a thread; [`Error::NoCalls`] if the duration ran out before any
/// call completed; [`Error::DurationTooLong`], before anything runs, if the
/// run's end, with a day to spare for starting the threads, cannot be
/// represented as an [`Instant`].
///
/// # Panics
///
/// If a hammer thread panicked (a bug), with its panic, once every other
/// thread has stopped.
pub fn run(config: &Config) -> Result<Report, Error> {
    if config.threads == 0 {
        return Err(Error::NoThreads);
    }
    if config.targets.is_empty() {
        return Err(Error::NoTargets);
    }
    // Checked with a margin of a day for the time the threads take to
    // start, so that the deadline's addition below cannot overflow.
    if Instant::now()
        .checked_add(config.duration)
        .and_then(|end| end.checked_add(Duration::from_secs(86_400)))
        .is_none()
    {
        return Err(Error::DurationTooLong {
            duration: config.duration,
        });
    }
    sys::register(Command::PrivateExpeditedRseq)?;
    let targets = config
        .targets
        .iter()
        .map(|&cpu| OnlineCpu::new(cpu))
        .collect::<Result<Vec<_>, _>>()?;
    // One call up front turns "the kernel refuses" into an error before any
    // thread starts.
    sys::private_expedited_rseq_on(targets[0])?;

    let stop = AtomicBool::new(false);
    let first_error: Mutex<Option<sys::Error>> = Mutex::new(None);
    let watchdog = u64::try_from(config.watchdog.as_nanos()).unwrap_or(u64::MAX);
    let gate = Gate::new();
    // Set before the gate opens; the threads read it once through.
    let deadline = OnceLock::new();
    let mut started = None;
    let tallies: Vec<Tally> = std::thread::scope(|s| {
        // However this closure ends (a spawn refused, a panic), the threads
        // started here must stop before the scope can join them.
        let gate = &gate;
        // Relaxed: see the loop below.
        let _stop = OnDrop(|| {
            gate.abort();
            stop.store(true, Ordering::Relaxed);
        });
        // Not reserved by the count asked for: a count far past what the OS
        // gives ends in `Error::Spawn`, not in a failed allocation's abort.
        let mut handles = Vec::with_capacity(config.threads.min(1024) as usize);
        for i in 0..config.threads {
            let target = targets[i as usize % targets.len()];
            let (stop, first_error, deadline) = (&stop, &first_error, &deadline);
            handles.push(spawn::scoped(s, i, move || {
                if !gate.arrive_and_wait() {
                    return Tally::default();
                }
                // The gate's Acquire pairs with its Release opening, which
                // follows the `set` below.
                let deadline = *deadline.get().expect("set before the gate opened");
                let (tally, error) = hammer_until(deadline, stop, watchdog, || hammer(target));
                if let Some(e) = error {
                    first_error
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner)
                        .get_or_insert(e);
                }
                tally
            })?);
        }
        gate.wait_for(config.threads);
        let opening = Instant::now();
        started = Some(opening);
        deadline
            .set(opening + config.duration)
            .expect("only this thread sets the deadline");
        gate.open();
        // The threads stop at the deadline by themselves. Every thread is
        // joined before a panic is passed on.
        let joined: Vec<_> = handles.into_iter().map(|h| h.join()).collect();
        Ok(joined
            .into_iter()
            .map(|r| r.unwrap_or_else(|panicked| std::panic::resume_unwind(panicked)))
            .collect())
    })
    .map_err(|e: spawn::Failure| Error::Spawn {
        threads: config.threads,
        started: e.started,
        source: e.source,
    })?;
    let started = started.expect("set before the gate opened");
    // The duration, or longer to the end of a call still in flight at the
    // deadline. A run whose calls failed ends with the first error below.
    let last_end = tallies.iter().filter_map(|t| t.last_end).max();
    let elapsed = last_end.map_or(config.duration, |end| {
        end.duration_since(started).max(config.duration)
    });
    if let Some(e) = first_error
        .into_inner()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
    {
        return Err(Error::Sys(e));
    }
    let mut report = Report {
        threads: config.threads,
        targets: config.targets.clone(),
        elapsed,
        calls: 0,
        latency: Histogram::new(),
        stalls: 0,
    };
    for tally in &tallies {
        report.calls += tally.calls;
        report.latency.merge(&tally.latency);
        report.stalls += tally.stalls;
    }
    if report.calls == 0 {
        return Err(Error::NoCalls {
            duration: config.duration,
        });
    }
    Ok(report)
}

/// What one hammer thread counted.
#[derive(Default)]
struct Tally {
    calls: u64,
    latency: Histogram,
    stalls: u64,
    /// When its last call returned; `None` if it made none.
    last_end: Option<Instant>,
}

/// One hammer thread's loop (the selftest's `hammer_thread_fn()`): `call`
/// until `deadline`, starting none at or after it, or until `stop` is set
/// (a run aborted before its end) or a call fails, whose error it returns
/// with the tally of the calls before it. Calls slower than `watchdog_ns`
/// count as stalls.
fn hammer_until(
    deadline: Instant,
    stop: &AtomicBool,
    watchdog_ns: u64,
    mut call: impl FnMut() -> Result<(), sys::Error>,
) -> (Tally, Option<sys::Error>) {
    let mut tally = Tally::default();
    // Relaxed: the flag only ends the loop; the join orders the rest.
    while !stop.load(Ordering::Relaxed) {
        let t0 = Instant::now();
        if t0 >= deadline {
            break;
        }
        if let Err(e) = call() {
            return (tally, Some(e));
        }
        let end = Instant::now();
        let ns = u64::try_from(end.duration_since(t0).as_nanos()).unwrap_or(u64::MAX);
        tally.latency.record(ns);
        tally.calls += 1;
        tally.stalls += u64::from(ns > watchdog_ns);
        tally.last_end = Some(end);
    }
    (tally, None)
}

/// One hammer call: `MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ` on `target`.
/// Unit tests can make every hammer call fail (`tests::FAIL_HAMMER_CALLS`),
/// as a seccomp filter installed mid-run would; the up-front call in `run`
/// does not go through here.
#[inline]
fn hammer(target: OnlineCpu) -> Result<(), sys::Error> {
    #[cfg(test)]
    // Relaxed: the test sets the flag before `run` starts the threads.
    if tests::FAIL_HAMMER_CALLS.load(Ordering::Relaxed) {
        return Err(sys::Error::Os {
            command: Command::PrivateExpeditedRseq,
            source: std::io::Error::other("injected: hammer call refused"),
        });
    }
    sys::private_expedited_rseq_on(target)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spawn::{self, Injected};

    /// Makes every hammer call fail (see `hammer`). Only
    /// `a_failing_hammer_call_is_reported_not_a_short_report` sets it; the
    /// other test here starts no hammer call (its gate never opens).
    pub(super) static FAIL_HAMMER_CALLS: AtomicBool = AtomicBool::new(false);

    /// Throughput is the calls divided by the time they took; the tests
    /// that run the kernel only check that it is positive, which a constant
    /// or a product would pass.
    #[test]
    fn calls_per_s_divides_the_calls_by_the_elapsed_time() {
        let report = Report {
            threads: 1,
            targets: vec![0],
            elapsed: Duration::from_secs(2),
            calls: 500,
            latency: Histogram::new(),
            stalls: 0,
        };
        assert_eq!(report.calls_per_s(), 250.0);
    }

    /// A hammer thread stops at its deadline by its own clock, with nobody
    /// setting the stop flag: no call starts at or after the deadline, and
    /// the tally counts every call and ends with the last one's return. (The
    /// fake call gives up after 1,000 calls, 100 ms and more, so a loop that
    /// ran on fails the test instead of hanging it.)
    #[test]
    fn a_hammer_thread_stops_at_its_deadline_without_the_stop_flag() {
        let stop = AtomicBool::new(false);
        let deadline = Instant::now() + Duration::from_millis(20);
        let mut starts = Vec::new();
        let mut returns = Vec::new();
        let (tally, error) = hammer_until(deadline, &stop, u64::MAX, || {
            starts.push(Instant::now());
            if starts.len() > 1_000 {
                return Err(sys::Error::Unsupported {
                    command: Command::PrivateExpeditedRseq,
                });
            }
            std::thread::sleep(Duration::from_micros(100));
            returns.push(Instant::now());
            Ok(())
        });
        assert!(
            error.is_none(),
            "calls went on past the deadline: {error:?}"
        );
        assert!(!starts.is_empty(), "no call before the deadline");
        assert!(
            starts.iter().all(|&t| t < deadline),
            "a call started after the deadline"
        );
        assert_eq!(tally.calls, starts.len() as u64);
        assert_eq!(tally.latency.count(), tally.calls);
        assert_eq!(tally.stalls, 0);
        assert!(tally.last_end >= returns.last().copied());
    }

    /// The stop flag (an aborted run) ends the loop before any call; a call
    /// that fails ends it with that error and the tally of the calls before
    /// it; calls slower than the watchdog count as stalls.
    #[test]
    fn a_hammer_thread_stops_on_the_flag_or_an_error_and_counts_stalls() {
        let far = Instant::now() + Duration::from_secs(3600);
        let stop = AtomicBool::new(true);
        let (tally, error) = hammer_until(far, &stop, u64::MAX, || panic!("called after stop"));
        assert!(error.is_none());
        assert_eq!((tally.calls, tally.last_end), (0, None));

        stop.store(false, Ordering::Relaxed);
        let mut made = 0;
        let (tally, error) = hammer_until(far, &stop, 1_000_000, || {
            made += 1;
            if made == 4 {
                return Err(sys::Error::Unsupported {
                    command: Command::PrivateExpeditedRseq,
                });
            }
            // The first call outlasts the 1 ms watchdog; the others return at once.
            if made == 1 {
                std::thread::sleep(Duration::from_millis(2));
            }
            Ok(())
        });
        assert!(
            matches!(error, Some(sys::Error::Unsupported { .. })),
            "{error:?}"
        );
        assert_eq!((tally.calls, tally.stalls), (3, 1));
        assert!(tally.last_end.is_some());
    }

    /// A run whose duration runs out before any thread completes a call is
    /// an error that says so, not a report of 0 calls/s: with a duration of
    /// zero, every thread finds the deadline passed before its first call.
    #[test]
    #[cfg_attr(miri, ignore = "membarrier(2), a syscall miri does not implement")]
    fn a_run_in_which_no_call_completes_is_an_error() {
        let config = Config {
            threads: 3,
            targets: vec![sys::online_cpus().iter().next().unwrap()],
            duration: Duration::ZERO,
            watchdog: Duration::from_secs(1),
        };
        match run(&config) {
            Err(e @ Error::NoCalls { .. }) => {
                assert!(e.to_string().contains("no hammer call completed"), "{e}");
            }
            other => panic!("expected Error::NoCalls, got {other:?}"),
        }
    }

    /// A run that stopped on a refused thread keeps the OS's answer as its
    /// `source()`, so an error chain shows it; one that stopped on the
    /// kernel's answer is that answer, transparently: its chain is the
    /// `sys::Error`'s own, and says its message once.
    #[test]
    fn errors_keep_the_kernels_or_the_oss_answer_as_their_source() {
        use std::error::Error as _;
        let inner = sys::Error::Os {
            command: sys::Command::Global,
            source: std::io::Error::from_raw_os_error(libc::EINVAL),
        };
        let inner_text = inner.to_string();
        let e = Error::Sys(inner);
        assert_eq!(e.to_string(), inner_text);
        let source = e.source().expect("the sys::Error's own source");
        assert_eq!(
            source
                .downcast_ref::<std::io::Error>()
                .and_then(std::io::Error::raw_os_error),
            Some(libc::EINVAL)
        );
        let e = Error::Sys(sys::Error::BadCpu {
            cpu: 9,
            online: "0-1".into(),
        });
        assert!(e.source().is_none(), "BadCpu has no source of its own");
        let e = Error::Spawn {
            threads: 4,
            started: 2,
            source: std::io::Error::from(std::io::ErrorKind::WouldBlock),
        };
        let source = e.source().expect("Error::Spawn has a source");
        assert_eq!(
            source.downcast_ref::<std::io::Error>().map(|e| e.kind()),
            Some(std::io::ErrorKind::WouldBlock)
        );
        assert!(Error::NoThreads.source().is_none());
    }

    /// A call that fails once the threads hammer stops its thread, and the
    /// run reports that error rather than a report of the calls before it
    /// (the module's promise: never a zero-calls "result").
    #[test]
    #[cfg_attr(miri, ignore = "membarrier(2), a syscall miri does not implement")]
    fn a_failing_hammer_call_is_reported_not_a_short_report() {
        let config = Config {
            threads: 2,
            targets: vec![sys::online_cpus().iter().next().unwrap()],
            duration: Duration::from_millis(50),
            watchdog: Duration::from_secs(1),
        };
        FAIL_HAMMER_CALLS.store(true, Ordering::Relaxed);
        let result = run(&config);
        FAIL_HAMMER_CALLS.store(false, Ordering::Relaxed);
        match result {
            Err(Error::Sys(sys::Error::Os { source, .. })) => {
                assert!(source.to_string().contains("injected"), "{source}");
            }
            // A kernel without the command (or a sandbox blocking
            // membarrier) refuses before any thread starts.
            Err(Error::Sys(e)) if e.is_unavailable() => {}
            other => panic!("a failing hammer call gave {other:?}"),
        }
    }

    /// A hammer thread the OS refuses ends the run with `Error::Spawn` (a
    /// panic in the spawning thread, with that panic) at once, the threads
    /// already hammering stopped. Before the stop guard the scope waited
    /// for them, and they for a stop flag set only after the spawning loop:
    /// for ever; the deadline turns that into a failure.
    #[test]
    #[cfg_attr(miri, ignore = "membarrier(2), a syscall miri does not implement")]
    fn a_refused_thread_ends_the_run_instead_of_hanging() {
        for how in [Injected::Error, Injected::Panic] {
            test_support::within_a_deadline(
                "stress::run with a refused thread",
                Duration::from_secs(20),
                move || {
                    let config = Config {
                        threads: 4,
                        targets: vec![sys::online_cpus().iter().next().unwrap()],
                        // Far past the deadline: only stopping early passes.
                        duration: Duration::from_secs(60),
                        watchdog: Duration::from_secs(1),
                    };
                    spawn::fail_after(2, how);
                    match how {
                        Injected::Error => match run(&config) {
                            Err(Error::Spawn {
                                threads: 4,
                                started: 2,
                                source,
                            }) => {
                                assert_eq!(source.kind(), std::io::ErrorKind::WouldBlock);
                            }
                            // A kernel without the command (or a sandbox
                            // blocking membarrier) refuses before any
                            // thread starts.
                            Err(Error::Sys(e)) if e.is_unavailable() => {}
                            other => panic!("{other:?}"),
                        },
                        Injected::Panic => {
                            if let Ok(result) = std::panic::catch_unwind(|| run(&config)) {
                                assert!(
                                    matches!(&result, Err(Error::Sys(e)) if e.is_unavailable()),
                                    "{result:?}"
                                );
                            }
                        }
                    }
                },
            );
        }
    }
}
