//! `rcuscale`: the writer side of deferred reclamation, the cost of waiting
//! for readers.
//!
//! The counterpart of the kernel's `kernel/rcu/rcuscale.c`: W writer threads
//! loop "unpublish something, wait until no reader still holds it" while M
//! reader threads run read-side sections. Reported, as in the hazptr
//! shared-scan series:
//!
//! - **effective per-grace-period time**: run duration / total waits across
//!   all writers. With W concurrent writers whose waits share work, this falls
//!   well below one wait's latency;
//! - **wait latency** (mean, p50, p99, max) of each individual wait, and the
//!   time-weighted median: the wait length that at least half of the
//!   writers' waiting time went to, which shows a few long waits that take
//!   most of the time where p99 does not.
//!
//! With several rounds ([`measure_rounds`]) every implementation runs once per
//! round, in turn, so that a slow stretch of a shared machine falls on all of
//! them rather than on one: the per-grace-period time is then the median of
//! the rounds, and the latency figures cover every wait of every round.
//!
//! Every writer completes at least one wait, however short the run: a run
//! with no wait has no per-GP time and no latency (they would be NaN, which
//! JSON writes as null). A set of runs with none at all, possible only
//! without writers, is refused with [`NoWaits`]. A run the OS refuses a
//! thread is called off before it measures anything: the threads already
//! started leave the start gate, and the set of runs ends with
//! [`Failure::ThreadRefused`] naming the thread (see [`crate::start_gate`]).

mod hazptr;
mod liburcu;
mod peers;
mod published;
mod rcu_lite;

use crate::cpu_time::{self, ThreadCpuClock};
use crate::end_gate::EndGate;
use crate::progress::Progress;
use crate::registry::Implementation;
use crate::start_gate::{StartGate, ThreadRefused, spawn_scoped};
use crate::stats;
use crate::wait_log::WaitLog;
use serde::{Deserialize, Serialize};
use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::Relaxed};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

/// A primitive whose writers wait for readers.
pub trait GracePeriod: Send + Sync {
    /// One update by writer `writer`: unpublish an object readers may hold and
    /// wait until no reader that could have reached it still holds it
    /// (`synchronize_rcu()`, `hazptr_synchronize()`, or the peer's equivalent).
    fn update_and_wait(&self, writer: usize);
    /// Runs on each writer thread before the run's start gate: whatever
    /// the first wait would otherwise do once, untimed (rcu-lite registers
    /// the thread, crossbeam-epoch gives it a handle, hazptr starts its
    /// domain's scanner thread). Nothing by default.
    fn prepare_writer(&self) {}
    /// Registers the calling thread as a reader (where the flavor registers)
    /// and runs one read-side section, then waits at `ready` (the run's start
    /// gate), so every reader is in before any writer waits; then runs
    /// read-side sections until `stop` is set. Returns how many it ran after
    /// `ready`: 0 at once if the gate was cancelled (the run is off).
    fn read_until(&self, ready: &StartGate, stop: &AtomicBool) -> u64;
    /// Registers the calling thread as a reader and runs one read-side
    /// section, then calls [`idle_wait`]`(ready, stop)` while still registered:
    /// a thread the waiting side must account for on every scan although it
    /// never reads again, as the kernel accounts for idle CPUs.
    fn idle_until(&self, ready: &IdleGate, stop: &AtomicBool);
    /// The implementation's own counts of the grace periods it completed
    /// and the fixed-interval FQS waits its drivers made, where it keeps
    /// them (rcu-lite's `grace_periods()`); read by each writer before the
    /// start gate and after its last wait. `None` by default.
    fn fqs_counts(&self) -> Option<FqsCounts> {
        None
    }
}

/// What an implementation that paces grace periods with force-quiescent-state
/// scans counts of them (rcu-lite's `GpCounts`): over a run, how many FQS
/// intervals a grace period waited. With quick QS on an idle system (with
/// `--idle-threads 1` or more: its idle CPUs) each grace period takes one,
/// without it two (the seed's claim), so a wait longer than that many
/// intervals was a late wake-up, not an extra scan; with quick QS and
/// nothing registered beside a lone writer, none.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FqsCounts {
    /// Grace periods completed.
    pub grace_periods: u64,
    /// Fixed-interval FQS waits the drivers made (none in the adaptive mode).
    pub fqs_waits: u64,
}

impl FqsCounts {
    /// FQS waits per grace period; `None` without a grace period.
    pub fn waits_per_grace_period(&self) -> Option<f64> {
        (self.grace_periods > 0).then(|| self.fqs_waits as f64 / self.grace_periods as f64)
    }

    /// The counts over a run from each writer's readings before the start
    /// gate and after its last wait, taking the latest of each, field by
    /// field (the counters only grow). Every reading before the gate follows
    /// its writer's set-up (which may run a grace period: qsbr's) and
    /// precedes every writer's first wait, which the gate holds back until
    /// all have read; every grace period a wait asked for ended before that
    /// writer's reading after. Nothing else in a run starts grace periods.
    /// `None` unless every writer read both.
    fn over_writers(readings: &[Option<(FqsCounts, FqsCounts)>]) -> Option<FqsCounts> {
        let readings: Vec<(FqsCounts, FqsCounts)> =
            readings.iter().copied().collect::<Option<_>>()?;
        let (&first, rest) = readings.split_first()?;
        let (before, after) = rest.iter().fold(first, |(b, a), &(b2, a2)| {
            (b.with(b2, u64::max), a.with(a2, u64::max))
        });
        Some(after.with(before, |after, before| after - before))
    }

    /// Each field of `self` combined with that of `other` by `f`.
    #[must_use]
    fn with(self, other: FqsCounts, f: impl Fn(u64, u64) -> u64) -> FqsCounts {
        FqsCounts {
            grace_periods: f(self.grace_periods, other.grace_periods),
            fqs_waits: f(self.fqs_waits, other.fqs_waits),
        }
    }
}

/// Counts of runs added up: of several rounds, or of several runs of one
/// side.
impl std::iter::Sum for FqsCounts {
    fn sum<I: Iterator<Item = FqsCounts>>(iter: I) -> FqsCounts {
        iter.fold(FqsCounts::default(), |a, b| a.with(b, |x, y| x + y))
    }
}

/// The gate the idle threads pass, all registered, before the readers and
/// writers are started, and their count of those past it and about to
/// park: the run starts the others only once every idle thread is, so that
/// their wake-ups from the gate stay out of the timed window (until
/// 2026-12-06 the run went on as the gate opened, and some of 256 idle
/// threads could still be on their way back to park when the window
/// opened, charged to the others' CPU time; the measurement audit).
pub struct IdleGate {
    gate: StartGate,
    parking: AtomicUsize,
}

impl IdleGate {
    /// A gate for `idle_threads` idle threads and the run's thread.
    pub fn new(idle_threads: usize) -> IdleGate {
        IdleGate {
            gate: StartGate::new(idle_threads + 1),
            parking: AtomicUsize::new(0),
        }
    }

    /// The run's side: waits until every one of the `idle_threads` has
    /// passed the gate and is about to park. False if the gate was
    /// cancelled (a thread panicked or was refused).
    ///
    /// # Panics
    ///
    /// If they have not all come back a minute after the gate opened (an
    /// `idle_until` that does not go through [`idle_wait`]): a failure with
    /// a message, not a hang.
    pub fn wait_until_parking(&self, idle_threads: usize) -> bool {
        if !self.gate.wait() {
            return false;
        }
        let opened = Instant::now();
        // Relaxed: a count, which orders nothing else; the idle threads
        // need a CPU to get there, hence the yield.
        while self.parking.load(Relaxed) < idle_threads {
            assert!(
                opened.elapsed() < Duration::from_secs(60),
                "rcuscale: {} of {idle_threads} idle threads came back from their gate to park \
                 within a minute",
                self.parking.load(Relaxed)
            );
            std::thread::yield_now();
        }
        true
    }

    /// Cancels the gate if dropped while the thread panics (see
    /// [`StartGate::cancel_on_panic`]).
    pub fn cancel_on_panic(&self) -> crate::start_gate::CancelOnPanic<'_> {
        self.gate.cancel_on_panic()
    }
}

/// The idle part of [`GracePeriod::idle_until`]: waits at `ready` (see
/// [`IdleGate`]), then stays parked until the run sets `stop` and unparks
/// it (`EndOfRun`). Returns at once if the gate was cancelled.
pub fn idle_wait(ready: &IdleGate, stop: &AtomicBool) {
    if !ready.gate.wait() {
        return; // The run was called off.
    }
    // Relaxed: see `wait_until_parking`.
    ready.parking.fetch_add(1, Relaxed);
    // Parked, as an idle CPU does not wake in the kernel's runs. (Naps of
    // 50 ms woke 256 idle threads 5,000 times a second, about 4% of a CPU
    // taken from the writers.) Relaxed: `EndOfRun` sets `stop` before its
    // `unpark`, which happens before the `park` it ends returns; a wake-up
    // without it loops back.
    while !stop.load(Relaxed) {
        std::thread::park();
    }
}

/// Ends a run for the threads that wait for `stop`: sets it and unparks the
/// idle threads, when dropped. Dropped at the end of the run, or while the
/// run's scope unwinds from a writer's panic, so that the scope, which joins
/// every thread, does not wait forever for readers and idle threads that
/// wait for `stop`.
struct EndOfRun<'a> {
    stop: &'a AtomicBool,
    idle: Vec<std::thread::Thread>,
}

impl Drop for EndOfRun<'_> {
    fn drop(&mut self) {
        // Relaxed: `stop` publishes nothing; `unpark` orders it before the
        // idle threads' loads (see `idle_wait`), and the readers only poll it.
        self.stop.store(true, Relaxed);
        for thread in &self.idle {
            thread.unpark();
        }
    }
}

/// What every rcuscale implementation is built with.
#[derive(Clone, Copy, Debug, Default)]
pub struct Options {
    /// Fixed-interval force-quiescent-state pacing for the implementations
    /// that have it (`rcu-lite`, `rcu-lite-noqs`, `rcu-lite-qsbr`:
    /// `rcu_lite::Fqs::FixedInterval`);
    /// `None`: each implementation's default. Others ignore it.
    pub fqs_interval: Option<Duration>,
}

/// The implementations that [`Options::fqs_interval`] paces.
pub const FQS_PACED: [&str; 3] = [
    rcu_lite::RCU_LITE.name,
    rcu_lite::RCU_LITE_NOQS.name,
    rcu_lite::RCU_LITE_QSBR.name,
];

/// How many read-side sections the qsbr flavors' readers (`rcu-lite-qsbr`,
/// `liburcu-qsbr`) run between two quiescent states: a qsbr writer waits for
/// each online reader's next one.
pub const QSBR_SECTIONS_PER_QS: usize = 64;

/// Every writer-side contender, ours and peers.
pub fn implementations() -> &'static [Implementation<dyn GracePeriod, Options>] {
    IMPLEMENTATIONS
}

/// The registry: this workspace's implementations first, then the peers.
static IMPLEMENTATIONS: &[Implementation<dyn GracePeriod, Options>] = &[
    hazptr::HAZPTR,
    hazptr::HAZPTR_UNSHARED,
    rcu_lite::RCU_LITE,
    rcu_lite::RCU_LITE_NOQS,
    rcu_lite::RCU_LITE_QSBR,
    peers::CROSSBEAM_EPOCH,
    liburcu::LIBURCU_MEMB,
    liburcu::LIBURCU_QSBR,
];

/// How to run rcuscale.
#[derive(Clone, Copy, Debug)]
pub struct Config {
    /// Writer threads, each waiting back to back.
    pub writers: usize,
    /// Reader threads.
    pub readers: usize,
    /// Registered, idle reader threads (see [`GracePeriod::idle_until`]).
    pub idle_threads: usize,
    /// How long each implementation runs (unless `waits_per_writer` is set).
    pub duration: Duration,
    /// Each writer stops after this many waits, and the run lasts as long as
    /// they take. Latency maxima of two implementations compare fairly only
    /// over equal sample counts: in a fixed duration the faster one collects
    /// more samples, and with them more chances to meet a scheduling hiccup.
    pub waits_per_writer: Option<u64>,
}

/// Latency figures in microseconds.
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize)]
pub struct Latency {
    /// Mean.
    pub mean: f64,
    /// Median.
    pub p50: f64,
    /// 99th percentile.
    pub p99: f64,
    /// Maximum.
    pub max: f64,
    /// The time-weighted median ([`stats::time_weighted_median`]): at
    /// least half of the writers' waiting time went to waits this long or
    /// longer. Far above `p99` when a few long waits take most of the time
    /// (a writer that sleeps for milliseconds now and then, as liburcu's do
    /// with 16 writers on 2 CPUs: see docs/measuring.md). `None` in results
    /// saved before it was measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_weighted_p50: Option<f64>,
}

impl Latency {
    /// Summarizes the waits of `log` (see [`WaitLog`] for how close each
    /// figure is).
    pub fn of(log: &WaitLog) -> Latency {
        Latency {
            mean: log.mean_us(),
            p50: log.percentile_us(50.0),
            p99: log.percentile_us(99.0),
            max: log.max_us(),
            time_weighted_p50: Some(log.time_weighted_median_us()),
        }
    }
}

/// The outcome for one implementation.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Outcome {
    /// Implementation name.
    #[serde(rename = "impl")]
    pub name: String,
    /// Writer threads.
    pub writers: usize,
    /// Reader threads.
    pub readers: usize,
    /// Registered, idle reader threads.
    #[serde(default)]
    pub idle_threads: usize,
    /// Waits completed by all writers together.
    pub gps: u64,
    /// Run duration / waits completed, microseconds: with several rounds,
    /// the median round's (see `per_gp_rounds_us`), while `gps` and
    /// `duration_s` cover them all.
    pub per_gp_us: f64,
    /// Latency of individual waits, microseconds.
    pub latency_us: Latency,
    /// Read-side sections completed meanwhile: from the start gate until the
    /// last writer's last return (the end of `duration_s`'s span). The
    /// writers start their clocks once every reader has left the gate, a
    /// scheduling round or so after it opened (a few ms with more threads
    /// than CPUs, while the readers read), so the count's window begins
    /// before `duration_s`'s: negligible in a run of a second, most of the
    /// count in a `--waits` run of a millisecond. (Until 2026-12-07 the
    /// readers also went on past the span, until this run's thread woke to
    /// stop them.)
    pub reads: u64,
    /// Seconds the run took (all rounds together).
    pub duration_s: f64,
    /// Each round's per-GP time, microseconds, in the order they ran;
    /// `per_gp_us` is their median.
    pub per_gp_rounds_us: Vec<f64>,
    /// The fixed FQS interval the run was paced at, milliseconds
    /// ([`Options::fqs_interval`]); `None` for the implementations it does
    /// not pace ([`FQS_PACED`]), for runs without it, and in results saved
    /// before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fqs_interval_ms: Option<f64>,
    /// The implementation's own grace-period and FQS-wait counts over every
    /// round ([`GracePeriod::fqs_counts`]); `None` for implementations that
    /// keep none, and in results saved before they were counted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fqs: Option<FqsCounts>,
    /// CPU time per wait, over every round; `None` where the clocks cannot
    /// be read (under miri) and in results saved before it was measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu: Option<CpuPerWait>,
    /// Whether the writers' clocks started once every reader had left the
    /// start gate, and the readers stopped with the last writer (since
    /// 2026-12-07, 06:21 UTC): `false` in results saved before, whose quick
    /// waits could end before a woken reader ran (0.3-0.6 us per wait
    /// against 12 us and up with the readers in) and whose reads ran on
    /// past the writers' span. `syncbench compare` judges no figure of a
    /// run timed one way against one timed the other. The flag itself came
    /// later the same day: results saved by a build between the two (none
    /// published) were timed the new way but read as the old.
    #[serde(default)]
    pub timed_with_every_reader_in: bool,
}

/// CPU time per completed wait, in microseconds: what waiting costs the
/// machine, where per-GP time and latency say what it costs the writer in
/// wall time. A writer that spins while it waits uses CPU time the whole
/// wait; one that sleeps uses it only to scan and to be woken, and on a
/// machine with more threads than CPUs leaves the rest to the readers.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct CpuPerWait {
    /// The writer threads' own CPU time (their clocks, from each writer's
    /// first wait to its last return), over all waits.
    pub writers_us: f64,
    /// The CPU time of the process's threads other than the writers and
    /// readers (a grace-period or scanner thread that does the waiting work
    /// for them, idle threads, the harness's) over the timed window, which
    /// leaves out creating, registering and ending the threads; over all
    /// waits.
    pub others_us: f64,
    /// Whether `others_us` covers the timed window only: `false` in results
    /// saved before 2026-12-05, whose figure was the process's CPU time
    /// while the run's threads lived, less the writers' and readers' over
    /// their whole lives, and so also counted starting the threads.
    #[serde(default)]
    pub others_timed_window: bool,
}

impl Outcome {
    /// Records the FQS interval `options` paced this implementation at
    /// (none for those it does not pace: [`FQS_PACED`]).
    fn paced_by(mut self, options: &Options) -> Outcome {
        if FQS_PACED.contains(&self.name.as_str()) {
            self.fqs_interval_ms = options.fqs_interval.map(|i| i.as_secs_f64() * 1e3);
        }
        self
    }

    /// The lowest and highest per-round per-GP time.
    pub fn per_gp_range(&self) -> (f64, f64) {
        let lo = self
            .per_gp_rounds_us
            .iter()
            .copied()
            .fold(f64::NAN, f64::min);
        let hi = self
            .per_gp_rounds_us
            .iter()
            .copied()
            .fold(f64::NAN, f64::max);
        (lo, hi)
    }
}

/// An implementation whose runs completed no wait: it has no per-GP time
/// and no latency to report.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NoWaits {
    /// The implementation.
    pub name: String,
}

impl std::fmt::Display for NoWaits {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "rcuscale: {} completed no wait: the run was too short to measure (give it \
             writers and a longer --duration-s, or --waits)",
            self.name
        )
    }
}

impl std::error::Error for NoWaits {}

/// Why a set of rcuscale runs has no outcome.
#[derive(Debug)]
pub enum Failure {
    /// An implementation completed no wait.
    NoWaits(NoWaits),
    /// The OS refused a thread; no run of the set measured past it.
    ThreadRefused(ThreadRefused),
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::NoWaits(e) => e.fmt(f),
            Self::ThreadRefused(e) => write!(f, "rcuscale: {e}"),
        }
    }
}

impl std::error::Error for Failure {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::NoWaits(_) => None,
            Self::ThreadRefused(e) => Some(e),
        }
    }
}

impl From<NoWaits> for Failure {
    fn from(e: NoWaits) -> Self {
        Self::NoWaits(e)
    }
}

impl From<ThreadRefused> for Failure {
    fn from(e: ThreadRefused) -> Self {
        Self::ThreadRefused(e)
    }
}

/// Runs one implementation with default [`Options`].
pub fn measure(
    imp: &Implementation<dyn GracePeriod, Options>,
    config: Config,
    progress: &mut Progress,
) -> Result<Outcome, Failure> {
    measure_with(imp, config, &Options::default(), progress)
}

/// Runs one implementation built with `options`.
pub fn measure_with(
    imp: &Implementation<dyn GracePeriod, Options>,
    config: Config,
    options: &Options,
    progress: &mut Progress,
) -> Result<Outcome, Failure> {
    let outcome = run_once(imp, config, options, progress)?.summary()?;
    Ok(outcome.paced_by(options))
}

/// One run of one implementation: its totals and its waits' latencies.
struct Run {
    name: &'static str,
    config: Config,
    elapsed: Duration,
    waits: WaitLog,
    reads: u64,
    /// The run's grace periods and FQS waits ([`FqsCounts::over_writers`]).
    fqs: Option<FqsCounts>,
    /// The CPU time the run used, by role; `None` if a clock could not be
    /// read.
    cpu: Option<RunCpu>,
}

/// CPU time one run used.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct RunCpu {
    /// The writers', each over its own waits.
    writers: Duration,
    /// Everyone else's: the process's over the timed window, less what the
    /// writers and readers used in it (see [`WindowReading`]).
    others: Duration,
}

impl std::iter::Sum for RunCpu {
    fn sum<I: Iterator<Item = RunCpu>>(iter: I) -> RunCpu {
        iter.fold(RunCpu::default(), |a, b| RunCpu {
            writers: a.writers + b.writers,
            others: a.others + b.others,
        })
    }
}

/// The process's CPU clock and the sum of the writers' and readers', read
/// by the run's own thread at one moment: at the window's start, as it
/// opens the start gate ([`StartGate::wait_last`]), and at its end, with
/// every writer and reader done and held at the end gate
/// ([`crate::end_gate`]). The process's time over the window less theirs
/// is the other threads' (a scanner or grace-period thread, the idle
/// threads, the run's own thread); creating the threads, registering them
/// and their exit fall outside it.
#[derive(Clone, Copy, Debug)]
struct WindowReading {
    process: Duration,
    measured: Duration,
}

impl WindowReading {
    /// `None` if a clock cannot be read.
    fn take(clocks: &[ThreadCpuClock]) -> Option<WindowReading> {
        Some(WindowReading {
            process: cpu_time::process()?,
            measured: cpu_time::sum(clocks)?,
        })
    }

    /// The other threads' CPU time from `start` to `self`.
    fn others_since(self, start: WindowReading) -> Option<Duration> {
        let process = self.process.checked_sub(start.process)?;
        let measured = self.measured.checked_sub(start.measured)?;
        Some(process.saturating_sub(measured))
    }
}

/// Counts the writers still working; the last one done sets `stop`, which
/// ends the readers' sections at the end of the writers' span.
struct LastOut(AtomicUsize);

impl LastOut {
    fn new(writers: usize) -> LastOut {
        LastOut(AtomicUsize::new(writers))
    }

    /// This writer is done: sets `stop` if it was the last.
    fn done(&self, stop: &AtomicBool) {
        // Relaxed, both: `stop` publishes nothing (the readers' counts come
        // back through their joins).
        if self.0.fetch_sub(1, Relaxed) == 1 {
            stop.store(true, Relaxed);
        }
    }
}

impl Run {
    /// `None` for a run without waits (see [`NoWaits`]).
    fn per_gp_us(&self) -> Option<f64> {
        let waits = self.waits.count();
        (waits > 0).then(|| self.elapsed.as_nanos() as f64 / 1000.0 / waits as f64)
    }

    fn summary(self) -> Result<Outcome, NoWaits> {
        summarize(self.name, self.config, &[self])
    }
}

/// Merges the runs of one implementation (one per round) into one outcome:
/// per-GP time is the median run's, the rest covers every run. Every run
/// must have completed a wait.
fn summarize(name: &str, config: Config, runs: &[Run]) -> Result<Outcome, NoWaits> {
    let no_waits = || NoWaits {
        name: name.to_owned(),
    };
    let per_gp_rounds: Vec<f64> = runs
        .iter()
        .map(Run::per_gp_us)
        .collect::<Option<_>>()
        .ok_or_else(no_waits)?;
    let mut waits = WaitLog::new();
    for r in runs {
        waits.merge(&r.waits);
    }
    let count = waits.count();
    if count == 0 {
        return Err(no_waits());
    }
    Ok(Outcome {
        name: name.to_owned(),
        writers: config.writers,
        readers: config.readers,
        idle_threads: config.idle_threads,
        gps: count,
        per_gp_us: stats::median(&per_gp_rounds),
        latency_us: Latency::of(&waits),
        reads: runs.iter().map(|r| r.reads).sum(),
        duration_s: runs.iter().map(|r| r.elapsed.as_secs_f64()).sum(),
        per_gp_rounds_us: per_gp_rounds,
        // Set by the caller, which knows the options.
        fqs_interval_ms: None,
        // `None` if a run has none.
        fqs: runs.iter().map(|r| r.fqs).sum(),
        cpu: runs
            .iter()
            .map(|r| r.cpu)
            .sum::<Option<RunCpu>>()
            .map(|cpu| CpuPerWait {
                writers_us: cpu.writers.as_secs_f64() * 1e6 / count as f64,
                others_us: cpu.others.as_secs_f64() * 1e6 / count as f64,
                others_timed_window: true,
            }),
        timed_with_every_reader_in: true,
    })
}

fn run_once(
    imp: &Implementation<dyn GracePeriod, Options>,
    config: Config,
    options: &Options,
    progress: &mut Progress,
) -> Result<Run, ThreadRefused> {
    let boxed = imp.build(options);
    let primitive = &*boxed;
    progress.set_label(imp.name);
    let stop = AtomicBool::new(false);
    let idle_ready = IdleGate::new(config.idle_threads);
    let start = StartGate::new(config.writers + config.readers + 1);
    // Without --waits: when the writers stop, set by the first one out of
    // the gate (see the writer's loop).
    let deadline = OnceLock::new();
    // The last writer done stops the readers.
    let writers_left = LastOut::new(config.writers);
    let base = progress.position();
    // A thread the OS refused, in words.
    let thread = |role: &'static str, i: usize, of: usize| {
        move || format!("{role} thread {} of {of} for {}", i + 1, imp.name)
    };
    // After a refusal the run is off: the threads already waiting at the
    // gate return without measuring (and `EndOfRun`'s drop sets `stop`).
    let call_off = |refused| {
        idle_ready.gate.cancel();
        start.cancel();
        refused
    };
    // The writers' and readers' clocks, each put here by its thread before
    // the gate (complete once it opens), and the gate they wait at, once
    // done, until the window's last readings are taken.
    let measured_clocks = Mutex::new(Vec::with_capacity(config.writers + config.readers));
    let end_gate = EndGate::new();
    let (elapsed, waits, reads, fqs, cpu) = std::thread::scope(|s| {
        // However the scope ends: no writer or reader waits for ever.
        let _release = end_gate.release_on_drop();
        let (measured_clocks, end_gate) = (&measured_clocks, &end_gate);
        // A thread whose clock cannot be read puts `None`: no CPU figures.
        let publish_clock = move || {
            measured_clocks
                .lock()
                .expect("no thread panics holding it")
                .push(ThreadCpuClock::current());
        };
        let mut end_of_run = EndOfRun {
            stop: &stop,
            idle: Vec::with_capacity(config.idle_threads),
        };
        // Registered before the clock starts; idle throughout.
        for i in 0..config.idle_threads {
            let idle = spawn_scoped(
                s,
                "rcuscale idle",
                thread("idle", i, config.idle_threads),
                || {
                    let _cancel = idle_ready.cancel_on_panic();
                    primitive.idle_until(&idle_ready, &stop)
                },
            )
            .map_err(call_off)?;
            end_of_run.idle.push(idle.thread().clone());
        }
        // Every idle thread registered and on its way to park before the
        // readers and writers start, or one panicked.
        assert!(
            idle_ready.wait_until_parking(config.idle_threads),
            "rcuscale: a thread of {} panicked before the run started",
            imp.name
        );
        // Each reader is registered and has run a section before the
        // gate lets the writers go: a short run must not measure waits
        // with no reader running (see `GracePeriod::read_until`).
        let mut readers = Vec::with_capacity(config.readers);
        for i in 0..config.readers {
            let (start, stop) = (&start, &stop);
            readers.push(
                spawn_scoped(
                    s,
                    "rcuscale reader",
                    thread("reader", i, config.readers),
                    move || {
                        // Dropped last: a panic cancels the start gate
                        // before the thread holds at the end gate.
                        let _arrival = end_gate.arrival_on_drop();
                        let _cancel = start.cancel_on_panic();
                        publish_clock();
                        primitive.read_until(start, stop)
                    },
                )
                .map_err(call_off)?,
            );
        }
        let mut writers = Vec::with_capacity(config.writers);
        for w in 0..config.writers {
            let (start, stop, deadline, writers_left) = (&start, &stop, &deadline, &writers_left);
            let body = move || {
                // Dropped last, as the reader's.
                let _arrival = end_gate.arrival_on_drop();
                let _cancel = start.cancel_on_panic();
                publish_clock();
                let limit = config.waits_per_writer.unwrap_or(u64::MAX);
                // Fixed size, whatever the number of waits: see `WaitLog`.
                let mut waits = WaitLog::new();
                primitive.prepare_writer();
                // Before the gate: after this writer's own set-up, before
                // any writer's first wait (see `FqsCounts::over_writers`).
                let fqs_before = primitive.fqs_counts();
                let first = Instant::now();
                if !start.wait() {
                    return (waits, first, first, None, None); // Called off.
                }
                // Every reader is reading before the clock starts: a short
                // run (`--waits`) could otherwise end before a woken reader
                // got a CPU, its waits measured with no reader running (as
                // it did until 2026-12-07: 0.3-0.6 us per wait against
                // 12-8000 with the readers in, whichever contender the
                // scheduler favoured).
                start.until_every_party_left();
                let cpu_before = cpu_time::this_thread();
                let first = Instant::now();
                let end = Until {
                    waits: limit,
                    deadline: config
                        .waits_per_writer
                        .is_none()
                        .then(|| *deadline.get_or_init(|| first + config.duration)),
                    stop,
                };
                let last = wait_until(primitive, w, first, &end, &mut waits);
                let waiting = cpu_before.zip(cpu_time::this_thread()).map(|(a, b)| b - a);
                // The last writer done stops the readers: their sections
                // count up to the end of the writers' span (`Outcome::reads`),
                // not on until this run's thread wakes to stop them.
                writers_left.done(stop);
                let fqs = fqs_before.zip(primitive.fqs_counts());
                (waits, first, last, fqs, waiting)
            };
            writers.push(
                spawn_scoped(
                    s,
                    "rcuscale writer",
                    thread("writer", w, config.writers),
                    body,
                )
                .map_err(call_off)?,
            );
        }
        // The window starts as the gate opens: every thread has done its
        // set-up and none has begun its work.
        let mut clocks: Option<Vec<ThreadCpuClock>> = None;
        let mut window_start = None;
        // Cancelled with no refusal of ours: a thread panicked in its set-up
        // (its message is above); the others return, and the scope joins them.
        assert!(
            start.wait_last(|| {
                // Every writer and reader put its clock before it arrived.
                clocks = measured_clocks
                    .lock()
                    .expect("no thread panics holding it")
                    .iter()
                    .copied()
                    .collect();
                window_start = clocks.as_deref().and_then(WindowReading::take);
            }),
            "rcuscale: a thread of {} panicked before the run started",
            imp.name
        );
        let began = Instant::now();
        if config.waits_per_writer.is_none() {
            // For the bar only: the writers end at their deadline, and the
            // last one stops the readers.
            while began.elapsed() < config.duration {
                let left = config.duration.saturating_sub(began.elapsed());
                std::thread::sleep(left.min(Duration::from_millis(100)));
                progress.set_position(base + began.elapsed().as_millis() as u64);
            }
        }
        // The window ends once every writer and reader is done and held at
        // the end gate, alive: with --waits the readers run until the
        // writers are done.
        end_gate.wait_for(config.writers as u32);
        stop.store(true, Relaxed);
        end_gate.wait_for((config.writers + config.readers) as u32);
        let window_end = clocks.as_deref().and_then(WindowReading::take);
        end_gate.release();
        let others = window_start
            .zip(window_end)
            .and_then(|(start, end)| end.others_since(start));
        // The clock runs from the first writer's first wait to the last
        // writer's last return, as the writers saw them: this thread may get
        // a CPU only well after they started (and with --waits, after they
        // finished).
        let mut waits = WaitLog::new();
        let mut span: Option<(Instant, Instant)> = None;
        let mut readings = Vec::with_capacity(config.writers);
        // Over the writers' waits; `None` once any writer's clock could not
        // be read.
        let mut writers_waiting = Some(Duration::ZERO);
        for h in writers {
            let (mine, first, last, counts, waiting) = h.join().expect("writer panicked");
            waits.merge(&mine);
            span = Some(span.map_or((first, last), |(a, b)| (a.min(first), b.max(last))));
            readings.push(counts);
            writers_waiting = writers_waiting.zip(waiting).map(|(sum, c)| sum + c);
        }
        let fqs = FqsCounts::over_writers(&readings);
        let elapsed = span.map_or(Duration::ZERO, |(a, b)| b - a);
        drop(end_of_run);
        if config.waits_per_writer.is_some() {
            // The bar counts each implementation as `duration` either way.
            progress.set_position(base + config.duration.as_millis() as u64);
        }
        let mut reads = 0;
        for h in readers {
            reads += h.join().expect("reader panicked");
        }
        let cpu = writers_waiting
            .zip(others)
            .map(|(writers, others)| RunCpu { writers, others });
        Ok((elapsed, waits, reads, fqs, cpu))
    })?;
    Ok(Run {
        name: imp.name,
        config,
        elapsed,
        waits,
        reads,
        fqs,
        cpu,
    })
}

/// When a writer stops waiting: after its `waits`-th wait, after the first
/// wait that returns at or past `deadline`, or once `stop` is set, whichever
/// comes first; and never before one wait.
struct Until<'a> {
    waits: u64,
    deadline: Option<Instant>,
    stop: &'a AtomicBool,
}

/// A writer's waits from `first` until `end`, each one's latency recorded
/// in `waits`; returns the clock's reading at the last one's return.
///
/// One clock read per wait: each return's reading starts the next wait, so
/// the loop's own work (the record and the checks, a few ns) is not added to
/// per-GP time twice, and per-GP time and mean latency stay close. The
/// checks follow the wait, so every writer completes one even if the run is
/// over before it starts. Each writer stops at the deadline by its own
/// clock, and the last one done sets `stop` for the readers ([`LastOut`]).
/// Until 2026-12-07 the run's thread set `stop` once it had slept for the
/// duration, and could wait long for a CPU among hundreds of threads (500
/// writers and 500 readers on 2 CPUs: 0.8 s late for a 0.05 s run); `stop`
/// still ends a writer in a run cut short (a panic, a refused thread).
fn wait_until(
    primitive: &dyn GracePeriod,
    writer: usize,
    first: Instant,
    end: &Until<'_>,
    waits: &mut WaitLog,
) -> Instant {
    let mut last = first;
    loop {
        primitive.update_and_wait(writer);
        let now = Instant::now();
        waits.record(now - last);
        last = now;
        // Relaxed: `stop` publishes nothing; it pairs with no other access
        // (the join orders the rest).
        if waits.count() >= end.waits
            || end.deadline.is_some_and(|d| now >= d)
            || end.stop.load(Relaxed)
        {
            return last;
        }
    }
}

/// Runs every implementation in `chosen` once per round, taking turns within
/// each round in an order rotated from round to round
/// ([`crate::turns::in_turns`]), each built with `options`; one outcome per implementation, in
/// `chosen`'s order. `progress` advances by `config.duration` per run.
/// [`Failure::NoWaits`] names the first implementation with a run of no wait (only
/// possible with no writers); [`Failure::ThreadRefused`] the first thread
/// the OS refused, which ends the rounds.
///
/// # Panics
///
/// If `rounds` is 0.
pub fn measure_rounds(
    chosen: &[&Implementation<dyn GracePeriod, Options>],
    config: Config,
    options: &Options,
    rounds: usize,
    progress: &mut Progress,
) -> Result<Vec<Outcome>, Failure> {
    let entries: Vec<_> = chosen.iter().map(|imp| (*imp, config)).collect();
    measure_entries(&entries, options, rounds, progress)
}

/// Runs each (implementation, configuration) entry once per round, in turns
/// rotated from round to round; one outcome per entry, in `entries`' order.
fn measure_entries(
    entries: &[(&Implementation<dyn GracePeriod, Options>, Config)],
    options: &Options,
    rounds: usize,
    progress: &mut Progress,
) -> Result<Vec<Outcome>, Failure> {
    assert!(rounds > 0, "rcuscale needs at least one round");
    // In turns, the order rotated from round to round.
    let runs = crate::turns::try_in_turns(entries.len(), rounds, |i| {
        run_once(entries[i].0, entries[i].1, options, progress)
    })?;
    let outcomes = entries
        .iter()
        .zip(runs)
        .map(|((imp, config), runs)| Ok(summarize(imp.name, *config, &runs)?.paced_by(options)))
        .collect::<Result<_, NoWaits>>()?;
    Ok(outcomes)
}

/// [`measure_rounds`] over several writer counts in the same run, with a
/// progress bar of its own: every implementation at every count in
/// `writer_counts` (`config.writers` is ignored) is one contender taking
/// turns with the others, so that a 16-writer figure and a 1-writer one
/// share the machine's slow stretches and pair round by round, as two
/// implementations do. Outcomes are grouped by writer count, in the order
/// given, then by implementation, in `chosen`'s order.
///
/// # Panics
///
/// If `rounds` is 0.
pub fn measure_all(
    chosen: &[&Implementation<dyn GracePeriod, Options>],
    config: Config,
    writer_counts: &[usize],
    options: &Options,
    rounds: usize,
) -> Result<Vec<Outcome>, Failure> {
    let entries: Vec<_> = writer_counts
        .iter()
        .flat_map(|&writers| {
            chosen
                .iter()
                .map(move |imp| (*imp, Config { writers, ..config }))
        })
        .collect();
    let total_ms = (entries.len() * rounds) as u64 * config.duration.as_millis() as u64;
    let mut progress = Progress::new(total_ms, "rcuscale");
    measure_entries(&entries, options, rounds, &mut progress)
}

/// Writes one line per implementation.
pub fn write_text(out: &mut impl Write, outcomes: &[Outcome]) -> std::io::Result<()> {
    for o in outcomes {
        let rounds = if o.per_gp_rounds_us.len() > 1 {
            let (lo, hi) = o.per_gp_range();
            format!(
                " (median of {} rounds, {lo:.2}-{hi:.2})",
                o.per_gp_rounds_us.len()
            )
        } else {
            String::new()
        };
        let paced = o
            .fqs_interval_ms
            .map_or(String::new(), |ms| format!(" fqs-interval-ms={ms}"));
        writeln!(
            out,
            "rcuscale: {}{paced} writers={} readers={} gps={} per-GP {:.2} us{rounds}; latency us: mean {:.2} p50 {:.2} p99 {:.2} max {:.2} time-weighted p50 {}; reads {}",
            o.name,
            o.writers,
            o.readers,
            o.gps,
            o.per_gp_us,
            o.latency_us.mean,
            o.latency_us.p50,
            o.latency_us.p99,
            o.latency_us.max,
            o.latency_us
                .time_weighted_p50
                .map_or("-".to_owned(), |t| format!("{t:.2}")),
            o.reads
        )?;
        if let Some(cpu) = o.cpu {
            writeln!(
                out,
                "rcuscale: {} CPU time per wait: writers {:.2} us, other threads {:.2} us",
                o.name, cpu.writers_us, cpu.others_us
            )?;
        }
        // Only where the run paced FQS waits (a fixed interval), however
        // many it made (none for a lone quick-QS writer).
        if let Some(fqs) = o.fqs.filter(|_| o.fqs_interval_ms.is_some()) {
            writeln!(
                out,
                "rcuscale: {} FQS waits per grace period {:.2} ({} waits, {} grace periods)",
                o.name,
                fqs.waits_per_grace_period().unwrap_or(f64::NAN),
                fqs.fqs_waits,
                fqs.grace_periods
            )?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;
    use std::sync::atomic::AtomicUsize;

    fn config(writers: usize, duration: Duration) -> Config {
        Config {
            writers,
            readers: 1,
            idle_threads: 0,
            duration,
            waits_per_writer: None,
        }
    }

    #[test]
    fn every_writer_completes_a_wait_however_short_the_run() {
        let hazptr = &IMPLEMENTATIONS[0];
        let mut progress = Progress::new(1, "test");
        let out = measure(hazptr, config(2, Duration::from_nanos(1)), &mut progress).unwrap();
        assert!(out.gps >= 2, "{out:?}");
        let figures = [
            out.per_gp_us,
            out.latency_us.mean,
            out.latency_us.p50,
            out.latency_us.p99,
            out.latency_us.max,
        ];
        assert!(figures.iter().all(|f| f.is_finite()), "{out:?}");
    }

    /// Every available writer side completes its waits with a reader
    /// running and an idle thread registered, and its idle thread lets the
    /// run start and end (one that never reached the start gate would hold
    /// the run there for ever: hence the deadline). Under miri too, where
    /// it checks the peers' wait code (the crossbeam-epoch peer's flag
    /// lives on the waiting writer's stack).
    #[test]
    fn every_implementation_completes_its_waits() {
        let limit = Duration::from_secs(if cfg!(miri) { 3600 } else { 60 });
        test_support::within_a_deadline("every implementation's waits", limit, || {
            let mut checked = Vec::new();
            for imp in implementations()
                .iter()
                .filter(|i| i.availability().is_ok())
            {
                checked.push(imp.name);
                let mut progress = Progress::new(1, "test");
                let config = Config {
                    idle_threads: 1,
                    waits_per_writer: Some(3),
                    ..config(2, Duration::from_secs(1))
                };
                let out = measure(imp, config, &mut progress).unwrap();
                assert_eq!(out.gps, 6, "{}: {out:?}", imp.name);
            }
            // The workspace's own need nothing from the machine: a registry
            // that lost them (or every member) must not pass unchecked.
            for ours in [
                "hazptr",
                "hazptr-unshared",
                "rcu-lite",
                "rcu-lite-noqs",
                "rcu-lite-qsbr",
            ] {
                assert!(checked.contains(&ours), "{ours} unchecked: {checked:?}");
            }
        });
    }

    #[test]
    fn runs_without_waits_are_refused_naming_the_implementation() {
        let hazptr = &IMPLEMENTATIONS[0];
        let mut progress = Progress::new(1, "test");
        let err = measure_rounds(
            &[hazptr],
            config(0, Duration::from_millis(1)),
            &Options::default(),
            2,
            &mut progress,
        )
        .unwrap_err();
        let Failure::NoWaits(ref no_waits) = err else {
            panic!("{err}")
        };
        assert_eq!(no_waits.name, "hazptr");
        assert!(
            err.to_string()
                .contains("hazptr completed no wait: the run was too short")
        );
        // One round without waits among rounds with them is refused too.
        let run = |waits_us: Vec<f64>| Run {
            name: "x",
            config: config(1, Duration::ZERO),
            elapsed: Duration::from_micros(4),
            waits: WaitLog::of_us(&waits_us),
            reads: 0,
            fqs: None,
            cpu: None,
        };
        let runs = [run(vec![4.0]), run(Vec::new())];
        assert_eq!(summarize("x", runs[0].config, &runs).unwrap_err().name, "x");
        assert_eq!(summarize("x", runs[0].config, &runs[..1]).unwrap().gps, 1);
    }

    /// A refused thread's failure reads as the refusal and keeps it as its
    /// source, for a reporter that walks the chain; a run without waits is
    /// the end of its chain.
    #[test]
    fn a_refused_thread_is_the_failure_s_source() {
        let refused = ThreadRefused::labelled(
            "writer",
            2,
            4,
            "hazptr",
            std::io::Error::other("no more threads"),
        );
        let failure = Failure::from(refused);
        assert!(
            failure
                .to_string()
                .starts_with("rcuscale: the OS refused to start writer")
        );
        let source = std::error::Error::source(&failure).expect("the refusal as the source");
        assert_eq!(
            source
                .downcast_ref::<ThreadRefused>()
                .map(|r| r.thread.as_str()),
            Some("writer (thread 2 of 4) for hazptr")
        );
        let no_waits = Failure::from(NoWaits { name: "x".into() });
        assert!(std::error::Error::source(&no_waits).is_none());
    }

    // Only `readers_are_in_before_the_writers_start` uses these. Relaxed:
    // a reader's increment comes before its wait at the start barrier, and
    // the writers' loads after theirs; the barrier orders the two, so they
    // pair with no other access.
    static READERS_IN: AtomicUsize = AtomicUsize::new(0);
    static FEWEST_AT_A_WAIT: AtomicUsize = AtomicUsize::new(usize::MAX);

    thread_local! {
        static PREPARED: Cell<bool> = const { Cell::new(false) };
    }

    /// Readers that take 20 ms to register, and writers that note how many
    /// readers were in at each wait.
    struct SlowReaders;

    impl GracePeriod for SlowReaders {
        fn update_and_wait(&self, _writer: usize) {
            assert!(PREPARED.with(Cell::get), "a wait before prepare_writer");
            FEWEST_AT_A_WAIT.fetch_min(READERS_IN.load(Relaxed), Relaxed);
        }
        fn prepare_writer(&self) {
            PREPARED.with(|p| p.set(true));
        }
        fn read_until(&self, ready: &StartGate, stop: &AtomicBool) -> u64 {
            // A reader slow to register: the writers must wait for it.
            std::thread::sleep(Duration::from_millis(20));
            READERS_IN.fetch_add(1, Relaxed);
            if !ready.wait() {
                return 0;
            }
            while !stop.load(Relaxed) {
                std::hint::spin_loop();
            }
            1
        }
        fn idle_until(&self, ready: &IdleGate, stop: &AtomicBool) {
            idle_wait(ready, stop)
        }
    }

    #[test]
    fn readers_are_in_before_the_writers_start() {
        const SLOW: Implementation<dyn GracePeriod, Options> = Implementation {
            name: "slow-readers",
            summary: "",
            origin: crate::registry::Origin::Workspace,
            make: |_| Ok(Box::new(SlowReaders)),
        };
        let mut progress = Progress::new(1, "test");
        let config = Config {
            readers: 2,
            ..config(2, Duration::from_millis(1))
        };
        let out = measure(&SLOW, config, &mut progress).unwrap();
        assert_eq!(FEWEST_AT_A_WAIT.load(Relaxed), 2, "{out:?}");
    }

    // Only `readers_are_reading_before_the_writers_clock_starts` uses
    // these. Relaxed: counts read back by the writers and the test; the
    // race they check is one of scheduling, not of memory order.
    static READERS_READING: AtomicUsize = AtomicUsize::new(0);
    static FEWEST_READING_AT_A_WAIT: AtomicUsize = AtomicUsize::new(usize::MAX);

    /// Readers that count themselves in once past the gate, and instant
    /// waits that note how many were in at each.
    struct CountedReaders;

    impl GracePeriod for CountedReaders {
        fn update_and_wait(&self, _writer: usize) {
            FEWEST_READING_AT_A_WAIT.fetch_min(READERS_READING.load(Relaxed), Relaxed);
        }
        fn read_until(&self, ready: &StartGate, stop: &AtomicBool) -> u64 {
            if !ready.wait() {
                return 0;
            }
            READERS_READING.fetch_add(1, Relaxed);
            while !stop.load(Relaxed) {
                std::hint::spin_loop();
            }
            1
        }
        fn idle_until(&self, ready: &IdleGate, stop: &AtomicBool) {
            idle_wait(ready, stop)
        }
    }

    /// With `--waits`, the writers' waits all happen with every reader past
    /// the gate: 100 instant waits used to be over before a woken reader
    /// got a CPU (4 readers on 2 CPUs here), measured with none reading.
    /// (The gate counts a reader as gone inside its `wait`, a few
    /// instructions before the double's count: a reader preempted right
    /// between the two would fail this test, a window of nanoseconds
    /// against a timer tick's milliseconds.)
    #[test]
    fn readers_are_reading_before_the_writers_clock_starts() {
        const COUNTED: Implementation<dyn GracePeriod, Options> = Implementation {
            name: "counted-readers",
            summary: "",
            origin: crate::registry::Origin::Workspace,
            make: |_| Ok(Box::new(CountedReaders)),
        };
        let mut progress = Progress::new(1, "test");
        let config = Config {
            readers: 4,
            waits_per_writer: Some(100),
            ..config(1, Duration::from_secs(1))
        };
        let out = measure(&COUNTED, config, &mut progress).unwrap();
        assert_eq!(out.gps, 100, "{out:?}");
        assert_eq!(FEWEST_READING_AT_A_WAIT.load(Relaxed), 4, "{out:?}");
    }

    /// The last writer done, and only it, stops the readers.
    #[test]
    fn the_last_writer_done_stops_the_readers() {
        let (left, stop) = (LastOut::new(3), AtomicBool::new(false));
        left.done(&stop);
        left.done(&stop);
        assert!(!stop.load(Relaxed), "stopped with a writer still working");
        left.done(&stop);
        assert!(stop.load(Relaxed));
    }

    /// A test double's reader: one "section" in all, then yields until the
    /// run sets `stop`.
    fn one_read_until_stop(ready: &StartGate, stop: &AtomicBool) -> u64 {
        if !ready.wait() {
            return 0;
        }
        while !stop.load(Relaxed) {
            std::thread::yield_now();
        }
        1
    }

    /// Waits of 1 ms, counted, and when each one ended.
    #[derive(Default)]
    struct MillisecondWaits(AtomicUsize, Mutex<Vec<Instant>>);

    impl GracePeriod for MillisecondWaits {
        fn update_and_wait(&self, _writer: usize) {
            // Relaxed: counted and read back on the test's own thread.
            self.0.fetch_add(1, Relaxed);
            std::thread::sleep(Duration::from_millis(1));
            self.1.lock().unwrap().push(Instant::now());
        }
        fn read_until(&self, ready: &StartGate, stop: &AtomicBool) -> u64 {
            one_read_until_stop(ready, stop)
        }
        fn idle_until(&self, ready: &IdleGate, stop: &AtomicBool) {
            idle_wait(ready, stop)
        }
    }

    /// A writer stops at its deadline with nobody setting `stop`, and starts
    /// no wait after it: nothing else ends a run without `--waits` (the
    /// last writer done sets `stop`). (Removing the deadline check makes the
    /// writer wait for ever: the test's own deadline then fails it.)
    #[test]
    fn a_writer_stops_at_its_deadline_by_its_own_clock() {
        test_support::within_a_deadline("a writer's deadline", Duration::from_secs(60), || {
            let primitive = MillisecondWaits::default();
            let never = AtomicBool::new(false);
            let first = Instant::now();
            // Long enough that two 1 ms sleeps fit in it on a loaded
            // machine too: at 20 ms, one sleep of the CI run on a 2-vCPU
            // guest (other tests beside it) overshot it (2026-12-06).
            let deadline = first + Duration::from_millis(200);
            let end = Until {
                waits: u64::MAX,
                deadline: Some(deadline),
                stop: &never,
            };
            let mut waits = WaitLog::new();
            let last = wait_until(&primitive, 0, first, &end, &mut waits);
            assert!(last >= deadline);
            // Every wait is recorded, and only the last one returned past
            // the deadline: the one before it ended before it (the writer's
            // clock read after that end was, or it would have stopped
            // there).
            assert_eq!(waits.count(), primitive.0.load(Relaxed) as u64);
            let ends = primitive.1.lock().unwrap();
            assert!(
                ends.len() >= 2,
                "{} waits in 200 ms of 1 ms waits",
                ends.len()
            );
            assert!(ends[ends.len() - 2] < deadline);
        });
    }

    /// The other ends of a writer's waits: its count, and `stop`, each
    /// after at least one wait.
    #[test]
    fn a_writer_stops_after_its_waits_or_at_stop() {
        let primitive = MillisecondWaits::default();
        let (never, stopped) = (AtomicBool::new(false), AtomicBool::new(true));
        let mut waits = WaitLog::new();
        let three = Until {
            waits: 3,
            deadline: None,
            stop: &never,
        };
        wait_until(&primitive, 0, Instant::now(), &three, &mut waits);
        assert_eq!(waits.count(), 3);
        let at_stop = Until {
            waits: u64::MAX,
            deadline: Some(Instant::now() + Duration::from_secs(3600)),
            stop: &stopped,
        };
        let mut waits = WaitLog::new();
        wait_until(&primitive, 0, Instant::now(), &at_stop, &mut waits);
        assert_eq!((waits.count(), primitive.0.load(Relaxed)), (1, 4));
    }

    /// A writer that panics at its first wait, beside readers and idle
    /// threads that wait for the end of the run.
    struct PanickingWriter;

    impl GracePeriod for PanickingWriter {
        fn update_and_wait(&self, _writer: usize) {
            panic!("a planted writer panic");
        }
        fn read_until(&self, ready: &StartGate, stop: &AtomicBool) -> u64 {
            one_read_until_stop(ready, stop)
        }
        fn idle_until(&self, ready: &IdleGate, stop: &AtomicBool) {
            idle_wait(ready, stop)
        }
    }

    /// A reader that panics while it registers, before the start gate.
    struct PanickingReaderSetUp;

    impl GracePeriod for PanickingReaderSetUp {
        fn update_and_wait(&self, _writer: usize) {}
        fn read_until(&self, _ready: &StartGate, _stop: &AtomicBool) -> u64 {
            panic!("a planted panic in a reader's registration");
        }
        fn idle_until(&self, ready: &IdleGate, stop: &AtomicBool) {
            idle_wait(ready, stop)
        }
    }

    /// A reader's panic before the start gate comes out of the run: the
    /// writers, the idle threads and the run itself waited at the gate for
    /// that reader for ever.
    #[test]
    fn a_panic_before_the_start_ends_the_run_with_the_panic() {
        const PANICKING: Implementation<dyn GracePeriod, Options> = Implementation {
            name: "panicking-reader-set-up",
            summary: "",
            origin: crate::registry::Origin::Workspace,
            make: |_| Ok(Box::new(PanickingReaderSetUp)),
        };
        let config = Config {
            readers: 1,
            idle_threads: 3,
            ..config(2, Duration::from_millis(1))
        };
        run_must_panic(
            "a run whose reader panicked before the start",
            &PANICKING,
            config,
            |message| {
                assert!(
                    message.contains("panicked before the run started"),
                    "{message}"
                )
            },
        );
    }

    /// A writer's panic comes out of the run: the readers and the parked
    /// idle threads are told the run is over, so the scope that joins them
    /// ends. (With `--waits` nothing else sets `stop`: the run waited
    /// forever for its readers.)
    #[test]
    fn a_writer_panic_ends_the_run_with_the_panic() {
        const PANICKING: Implementation<dyn GracePeriod, Options> = Implementation {
            name: "panicking-writer",
            summary: "",
            origin: crate::registry::Origin::Workspace,
            make: |_| Ok(Box::new(PanickingWriter)),
        };
        let config = Config {
            idle_threads: 3,
            waits_per_writer: Some(10),
            ..config(1, Duration::from_millis(1))
        };
        run_must_panic(
            "a run whose writer panicked",
            &PANICKING,
            config,
            |message| assert!(message.contains("writer panicked"), "{message}"),
        );
    }

    /// Runs `imp` once with `config`, which must panic within 20 s (a run
    /// that waits for ever fails the test there), and hands the panic's
    /// message to `check`.
    fn run_must_panic(
        what: &'static str,
        imp: &'static Implementation<dyn GracePeriod, Options>,
        config: Config,
        check: impl FnOnce(&str) + Send + 'static,
    ) {
        test_support::within_a_deadline(what, Duration::from_secs(20), move || {
            let ran = std::panic::catch_unwind(|| {
                run_once(
                    imp,
                    config,
                    &Options::default(),
                    &mut Progress::new(1, "test"),
                )
            });
            let Err(panic) = ran else {
                panic!("{what}: the panic did not come out of the run")
            };
            let message = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|m| m.to_string()))
                .unwrap_or_default();
            check(&message);
        });
    }

    /// The CPU time per wait pools every round (all their CPU time over all
    /// their waits), and is unknown if any round's is.
    #[test]
    fn cpu_time_per_wait_pools_the_rounds() {
        let run = |waits: usize, cpu: Option<(u64, u64)>| Run {
            name: "x",
            config: config(1, Duration::ZERO),
            elapsed: Duration::from_micros(100),
            waits: WaitLog::of_us(&vec![1.0; waits]),
            reads: 0,
            fqs: None,
            cpu: cpu.map(|(writers, others)| RunCpu {
                writers: Duration::from_micros(writers),
                others: Duration::from_micros(others),
            }),
        };
        let rounds = [run(10, Some((30, 10))), run(30, Some((50, 10)))];
        let o = summarize("x", rounds[0].config, &rounds).unwrap();
        assert_eq!(
            o.cpu,
            Some(CpuPerWait {
                writers_us: 2.0,
                others_us: 0.5,
                others_timed_window: true,
            })
        );
        let rounds = [run(10, Some((30, 10))), run(30, None)];
        assert_eq!(summarize("x", rounds[0].config, &rounds).unwrap().cpu, None);
    }

    /// A run reads its threads' CPU clocks: a writer uses CPU time in its
    /// waits, and no more than it had wall time for them.
    #[test]
    #[cfg_attr(miri, ignore = "miri has no CPU-time clocks")]
    fn a_run_measures_the_cpu_time_of_its_waits() {
        for name in ["hazptr", "rcu-lite"] {
            let imp = IMPLEMENTATIONS
                .iter()
                .find(|i| i.name == name)
                .expect("registered");
            let writers = 2;
            let out = measure(
                imp,
                config(writers, Duration::from_millis(200)),
                &mut Progress::new(1, "test"),
            )
            .unwrap();
            let cpu = out
                .cpu
                .unwrap_or_else(|| panic!("{name}: no CPU time: {out:?}"));
            assert!(cpu.writers_us > 0.0 && cpu.others_us >= 0.0, "{out:?}");
            // Each writer's CPU time is at most its wall time, and the
            // writers' wall time is about `writers` times the run's.
            let wall_us_per_wait = out.per_gp_us * writers as f64;
            assert!(cpu.writers_us <= wall_us_per_wait * 1.05 + 0.1, "{out:?}");
        }
    }

    /// Rounds merge as the module says: per-GP time is the median round's
    /// (each round's run time over all its waits), the latency figures and
    /// the counts cover every wait and read of every round.
    #[test]
    fn rounds_merge_into_the_median_per_gp_and_latency_over_every_wait() {
        let run = |elapsed_us: u64, waits_us: Vec<f64>, reads: u64| Run {
            name: "x",
            config: config(2, Duration::ZERO),
            elapsed: Duration::from_micros(elapsed_us),
            waits: WaitLog::of_us(&waits_us),
            reads,
            fqs: None,
            cpu: None,
        };
        let runs = [
            run(30, vec![10.0, 10.0, 10.0], 1),
            run(40, vec![20.0, 20.0], 2),
            run(90, vec![90.0], 4),
        ];
        let o = summarize("x", runs[0].config, &runs).unwrap();
        assert_eq!(o.per_gp_rounds_us, [10.0, 20.0, 90.0]);
        assert_eq!(o.per_gp_us, 20.0);
        assert_eq!(o.per_gp_range(), (10.0, 90.0));
        assert_eq!(o.gps, 6);
        assert_eq!(o.reads, 7);
        assert!((o.duration_s - 160e-6).abs() < 1e-12, "{o:?}");
        let l = o.latency_us;
        assert!((l.mean - 160.0 / 6.0).abs() < 1e-9, "{l:?}");
        // Sorted 10 10 10 20 20 90: p50 at rank 2.5, p99 at rank 4.95.
        assert!((l.p50 - 15.0).abs() < 1e-9, "{l:?}");
        assert!((l.p99 - 86.5).abs() < 1e-9, "{l:?}");
        assert_eq!(l.max, 90.0);
        // The one 90 us wait holds 90 of the 160 us spent waiting.
        assert_eq!(l.time_weighted_p50, Some(90.0));
        let mut text = Vec::new();
        write_text(&mut text, &[o]).unwrap();
        assert_eq!(
            String::from_utf8(text).unwrap(),
            "rcuscale: x writers=2 readers=1 gps=6 per-GP 20.00 us (median of 3 rounds, \
             10.00-90.00); latency us: mean 26.67 p50 15.00 p99 86.50 max 90.00 \
             time-weighted p50 90.00; reads 7\n"
        );
        // One round has no median of rounds to give.
        let one = summarize("x", runs[0].config, &runs[..1]).unwrap();
        let mut text = Vec::new();
        write_text(&mut text, &[one]).unwrap();
        assert_eq!(
            String::from_utf8(text).unwrap(),
            "rcuscale: x writers=2 readers=1 gps=3 per-GP 10.00 us; latency us: mean 10.00 \
             p50 10.00 p99 10.00 max 10.00 time-weighted p50 10.00; reads 1\n"
        );
    }

    /// The FQS counts of a run go from the latest writer's reading before
    /// the gate to the latest one's after the waits, field by field; a
    /// writer without readings leaves the run without counts. Rounds add up, and
    /// one round without counts leaves the outcome without them; the text
    /// output gives FQS waits per grace period where a fixed interval paced
    /// the run, none made included.
    #[test]
    fn fqs_counts_span_every_writer_and_add_up_over_rounds() {
        let counts = |grace_periods, fqs_waits| FqsCounts {
            grace_periods,
            fqs_waits,
        };
        // Writer 1's set-up ran a grace period (and an FQS wait) after
        // writer 0 read: the latest readings before, (12, 21); after, 17
        // and 30, each the latest.
        let readings = [
            Some((counts(10, 20), counts(16, 30))),
            Some((counts(12, 21), counts(17, 29))),
        ];
        assert_eq!(FqsCounts::over_writers(&readings), Some(counts(5, 9)));
        assert_eq!(FqsCounts::over_writers(&[readings[0], None]), None);
        assert_eq!(FqsCounts::over_writers(&[]), None);
        assert_eq!(counts(4, 8).waits_per_grace_period(), Some(2.0));
        assert_eq!(counts(0, 0).waits_per_grace_period(), None);

        let run = |fqs: Option<FqsCounts>| Run {
            name: "x",
            config: config(1, Duration::ZERO),
            elapsed: Duration::from_micros(30),
            waits: WaitLog::of_us(&[10.0, 10.0, 10.0]),
            reads: 0,
            fqs,
            cpu: None,
        };
        let runs = [run(Some(counts(3, 3))), run(Some(counts(3, 4)))];
        let mut o = summarize("x", runs[0].config, &runs).unwrap();
        assert_eq!(o.fqs, Some(counts(6, 7)));
        o.fqs_interval_ms = Some(1.0);
        let mut text = Vec::new();
        write_text(&mut text, &[o]).unwrap();
        let text = String::from_utf8(text).unwrap();
        assert!(
            text.ends_with(
                "rcuscale: x FQS waits per grace period 1.17 (7 waits, 6 grace periods)\n"
            ),
            "{text}"
        );
        let runs = [run(Some(counts(3, 3))), run(None)];
        assert_eq!(summarize("x", runs[0].config, &runs).unwrap().fqs, None);
        // Not paced (the adaptive mode): no line for it.
        let runs = [run(Some(counts(3, 0)))];
        let mut o = summarize("x", runs[0].config, &runs).unwrap();
        let mut text = Vec::new();
        write_text(&mut text, std::slice::from_ref(&o)).unwrap();
        assert!(!String::from_utf8(text).unwrap().contains("FQS"));
        // Paced, and no wait made (a lone quick-QS writer): the 0 is said.
        o.fqs_interval_ms = Some(1.0);
        let mut text = Vec::new();
        write_text(&mut text, &[o]).unwrap();
        assert!(
            String::from_utf8(text).unwrap().ends_with(
                "rcuscale: x FQS waits per grace period 0.00 (0 waits, 3 grace periods)\n"
            )
        );
    }

    /// A writer side that waits for nothing.
    struct NoWait;

    impl GracePeriod for NoWait {
        fn update_and_wait(&self, _writer: usize) {}
        fn read_until(&self, ready: &StartGate, stop: &AtomicBool) -> u64 {
            one_read_until_stop(ready, stop)
        }
        fn idle_until(&self, ready: &IdleGate, stop: &AtomicBool) {
            idle_wait(ready, stop)
        }
    }

    /// How long [`Napping`]'s waits nap: long enough that a wait's latency
    /// is many microseconds.
    const NAP: Duration = Duration::from_micros(100);

    /// Idle threads of [`Napping`] that left [`idle_wait`] before the run
    /// set `stop`. Relaxed: the run's scope joins the idle threads before
    /// a test reads it.
    static IDLE_LEFT_EARLY: AtomicUsize = AtomicUsize::new(0);

    /// A writer side whose waits nap for [`NAP`], whose readers count, as
    /// their reads, the microseconds from their arrival at the start gate
    /// to their seeing `stop`, and whose idle threads note whether they
    /// stayed idle until the run was over.
    struct Napping;

    impl GracePeriod for Napping {
        fn update_and_wait(&self, _writer: usize) {
            std::thread::sleep(NAP);
        }
        fn read_until(&self, ready: &StartGate, stop: &AtomicBool) -> u64 {
            let arrived = Instant::now();
            one_read_until_stop(ready, stop);
            arrived.elapsed().as_micros() as u64
        }
        fn idle_until(&self, ready: &IdleGate, stop: &AtomicBool) {
            idle_wait(ready, stop);
            if !stop.load(Relaxed) {
                IDLE_LEFT_EARLY.fetch_add(1, Relaxed);
            }
        }
    }

    const NAPPING: Implementation<dyn GracePeriod, Options> = Implementation {
        name: "napping",
        summary: "",
        origin: crate::registry::Origin::Workspace,
        make: |_| Ok(Box::new(Napping)),
    };

    /// A writer's waits follow one another on one clock, each return's
    /// reading starting the next wait, so one writer's latencies add up to
    /// its run's span: its mean latency is its per-GP time (in the same
    /// unit, microseconds), whatever the waits took.
    #[test]
    fn one_writer_s_mean_latency_is_its_per_gp_time() {
        let config = Config {
            waits_per_writer: Some(5),
            ..config(1, Duration::from_millis(1))
        };
        let out = measure(&NAPPING, config, &mut Progress::new(1, "test")).unwrap();
        assert_eq!(out.gps, 5, "{out:?}");
        let (mean, per_gp) = (out.latency_us.mean, out.per_gp_us);
        assert!((mean - per_gp).abs() <= 1e-9 * per_gp, "{out:?}");
    }

    /// The run's thread goes on only once every idle thread has come back
    /// from the gate and counted itself as parking: what an idle thread
    /// does between the two (here a flag it sets after a nap) is done by
    /// then, not left to fall into the timed window.
    #[test]
    fn the_run_waits_for_the_idle_threads_to_come_back_from_the_gate() {
        const IDLE: usize = 3;
        let (gate, stop) = (IdleGate::new(IDLE), AtomicBool::new(false));
        let back = AtomicUsize::new(0);
        std::thread::scope(|s| {
            // Sets `stop` and unparks them however the scope ends, so that
            // a failed assertion fails the test instead of hanging it.
            let _end = EndOfRun {
                stop: &stop,
                idle: (0..IDLE)
                    .map(|_| {
                        s.spawn(|| {
                            if gate.gate.wait() {
                                std::thread::sleep(Duration::from_millis(20));
                                back.fetch_add(1, Relaxed);
                                gate.parking.fetch_add(1, Relaxed);
                                while !stop.load(Relaxed) {
                                    std::thread::park();
                                }
                            }
                        })
                        .thread()
                        .clone()
                    })
                    .collect(),
            };
            assert!(gate.wait_until_parking(IDLE));
            assert_eq!(back.load(Relaxed), IDLE);
        });
    }

    /// Threads in the real `idle_wait` count themselves, so that the run's
    /// wait for them ends (without the count it would panic after its
    /// minute).
    #[test]
    fn idle_wait_counts_its_thread_as_parking() {
        const IDLE: usize = 3;
        let (gate, stop) = (IdleGate::new(IDLE), AtomicBool::new(false));
        std::thread::scope(|s| {
            let _end = EndOfRun {
                stop: &stop,
                idle: (0..IDLE)
                    .map(|_| s.spawn(|| idle_wait(&gate, &stop)).thread().clone())
                    .collect(),
            };
            assert!(gate.wait_until_parking(IDLE));
        });
    }

    /// Idle threads stay registered and parked until the run is over: none
    /// leaves `idle_wait` before `stop` is set.
    #[test]
    fn idle_threads_stay_idle_until_the_run_is_over() {
        let config = Config {
            idle_threads: 3,
            waits_per_writer: Some(2),
            ..config(1, Duration::from_millis(1))
        };
        let out = measure(&NAPPING, config, &mut Progress::new(1, "test")).unwrap();
        assert_eq!(out.gps, 2, "{out:?}");
        assert_eq!(IDLE_LEFT_EARLY.load(Relaxed), 0);
    }

    /// A run without `--waits` lasts its duration: the gate opens only once
    /// every reader has arrived, and `stop` comes from the last writer done,
    /// past the deadline of `duration` after the first writer's start, which
    /// follows the gate's opening, so each reader spans at least that
    /// however slow the machine.
    #[test]
    fn a_run_without_waits_lasts_its_duration() {
        let duration = Duration::from_millis(50);
        let out = measure(&NAPPING, config(1, duration), &mut Progress::new(1, "test")).unwrap();
        let reader_span_us = out.reads;
        assert!(reader_span_us >= duration.as_micros() as u64, "{out:?}");
    }

    /// With `--waits`, each run advances the progress bar by exactly its
    /// `duration`, as a run without does: two contenders' two rounds of
    /// 5 ms each come to 20.
    #[test]
    fn each_run_with_waits_advances_the_progress_by_its_duration() {
        let config = Config {
            waits_per_writer: Some(1),
            ..config(1, Duration::from_millis(5))
        };
        let mut progress = Progress::new(20, "test");
        measure_rounds(
            &[&NAPPING, &NAPPING],
            config,
            &Options::default(),
            2,
            &mut progress,
        )
        .unwrap();
        assert_eq!(progress.position(), 20);
    }

    /// Every writer count is a contender of its own, run with its own
    /// writer count every round: outcomes grouped by count, then by
    /// implementation.
    #[test]
    fn measure_all_runs_each_writer_count_with_its_own_writers() {
        const NO_WAIT: Implementation<dyn GracePeriod, Options> = Implementation {
            name: "no-wait",
            summary: "",
            origin: crate::registry::Origin::Workspace,
            make: |_| Ok(Box::new(NoWait)),
        };
        let config = Config {
            waits_per_writer: Some(2),
            ..config(7, Duration::from_millis(1))
        };
        let out = measure_all(&[&NO_WAIT], config, &[1, 3], &Options::default(), 2).unwrap();
        let got: Vec<_> = out
            .iter()
            .map(|o| (o.writers, o.gps, o.per_gp_rounds_us.len()))
            .collect();
        // 2 waits per writer, 2 rounds.
        assert_eq!(got, [(1, 4, 2), (3, 12, 2)]);
    }
}
