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
//! never a zero-calls "result".

use crate::sim::Histogram;
use crate::sync::{AtomicBool, Ordering};
use crate::sys::{self, Command, OnlineCpu};
use std::fmt;
use std::sync::Mutex;
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
    /// The time the threads ran.
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
    /// The kernel refused the command or a target CPU.
    Sys(sys::Error),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::NoThreads => f.write_str("at least one hammer thread is needed (got 0)"),
            Error::NoTargets => f.write_str("at least one target CPU is needed"),
            Error::Sys(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Sys(e) => Some(e),
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
/// `CONFIG_RSEQ`), [`sys::Error::BadCpu`] for a target that is not online,
/// or the first error a call returned.
pub fn run(config: &Config) -> Result<Report, Error> {
    if config.threads == 0 {
        return Err(Error::NoThreads);
    }
    if config.targets.is_empty() {
        return Err(Error::NoTargets);
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
    let started = Instant::now();
    let tallies: Vec<(u64, Histogram, u64)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..config.threads as usize)
            .map(|i| {
                let target = targets[i % targets.len()];
                let (stop, first_error) = (&stop, &first_error);
                s.spawn(move || {
                    let mut calls = 0u64;
                    let mut stalls = 0u64;
                    let mut latency = Histogram::new();
                    // Relaxed: the flag only ends the loop; the join orders the rest.
                    while !stop.load(Ordering::Relaxed) {
                        let t0 = Instant::now();
                        if let Err(e) = sys::private_expedited_rseq_on(target) {
                            first_error
                                .lock()
                                .unwrap_or_else(std::sync::PoisonError::into_inner)
                                .get_or_insert(e);
                            break;
                        }
                        let ns = u64::try_from(t0.elapsed().as_nanos()).unwrap_or(u64::MAX);
                        latency.record(ns);
                        calls += 1;
                        stalls += u64::from(ns > watchdog);
                    }
                    (calls, latency, stalls)
                })
            })
            .collect();
        std::thread::sleep(config.duration);
        stop.store(true, Ordering::Relaxed);
        handles
            .into_iter()
            .map(|h| h.join().expect("hammer threads do not panic"))
            .collect()
    });
    let elapsed = started.elapsed();
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
    for (calls, latency, stalls) in &tallies {
        report.calls += calls;
        report.latency.merge(latency);
        report.stalls += stalls;
    }
    Ok(report)
}
