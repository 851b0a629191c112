//! `syncbench membarrier`: why targeted `MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ`
//! needs per-CPU mutexes, measured three ways.
//!
//! The counterpart of the kernel selftest `membarrier_rseq_stress` (seed
//! `membarrier-per-cpu-mutex-v3.txt`):
//!
//! - `--mode sim`: [`membarrier_sim::sim`], the deterministic simulator of
//!   `membarrier_private_expedited()` under CFS bandwidth throttling, with the
//!   serialization policy as a parameter (`global`: the kernel today,
//!   `per-cpu`: the series, `none`: before the CVE-2024-26602 fix). Same
//!   parameters and seed, same output byte for byte.
//! - `--mode threaded`: [`membarrier_sim::threaded`], the same scenario with
//!   real threads as CPUs, for cross-checking the simulator at small scale.
//! - `--mode real`: [`membarrier_sim::stress`], threads hammering this
//!   kernel's targeted command (the kernel's own policy), or a clear error
//!   where the kernel lacks it.
//! - `--sweep`: the simulator at 8, 16, 64, 128, 256 and 384 CPUs under every
//!   policy, with the per-cpu/global throughput ratio.
//!
//! Invariants: bad parameters are refused before anything runs ([`Failure::Usage`],
//! exit status 2); a run that cannot happen on this machine is a
//! [`Failure::Run`] (exit status 1); stdout carries only the result.

use crate::cli::ImplListing;
use crate::progress::Progress;
use crate::registry::Origin;
use clap::{Args, ValueEnum};
use membarrier_sim::sim::{self, Config, NS_PER_S, Policy, Report};
use membarrier_sim::{stress, sys, threaded};
use serde::{Deserialize, Serialize};
use std::borrow::Cow;
use std::io::Write;
use std::time::Duration;

/// CPU counts of `--sweep`.
pub const SWEEP_CPUS: [u32; 6] = [8, 16, 64, 128, 256, 384];

/// Most threads a run starts: `--mode threaded` one per CPU and per caller,
/// `--mode real` one per caller. The selftest's scenario fits (384 CPUs and
/// 25 callers each: 9984). Far more, and the OS runs out of mappings for
/// their stacks (`vm.max_map_count`, 65530 by default, about 4 a thread)
/// partway through the start, which std reports as a panic inside the new
/// thread, where the run cannot stop the others: `--mode real` aborted and
/// `--mode threaded` hung.
pub const MAX_THREADS: u32 = 10_000;

/// The longest `--mode real` run, in seconds: a day, as for every other
/// subcommand that runs real threads.
pub const REAL_RUN_MAX_SECONDS: f64 = 86_400.0;

/// Where the measurement comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Mode {
    /// The deterministic simulator.
    Sim,
    /// Real threads as CPUs, sleeps as interrupts-off windows.
    Threaded,
    /// This kernel's targeted MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ.
    Real,
}

impl Mode {
    fn name(self) -> &'static str {
        match self {
            Mode::Sim => "sim",
            Mode::Threaded => "threaded",
            Mode::Real => "real",
        }
    }
}

/// The serialization policy, as the command line spells it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum PolicyArg {
    /// One mutex for every expedited command (the kernel today).
    Global,
    /// The target CPU's mutex for targeted commands (the per-CPU series).
    PerCpu,
    /// No serialization (before the CVE-2024-26602 fix).
    None,
}

impl From<PolicyArg> for Policy {
    fn from(p: PolicyArg) -> Policy {
        match p {
            PolicyArg::Global => Policy::Global,
            PolicyArg::PerCpu => Policy::PerCpu,
            PolicyArg::None => Policy::None,
        }
    }
}

/// Arguments of `syncbench membarrier`.
#[derive(Debug, Args)]
pub struct MembarrierArgs {
    /// sim: the deterministic simulator; threaded: real threads as CPUs; real: this kernel's syscall.
    #[arg(long, value_enum, default_value_t = Mode::Sim)]
    pub mode: Mode,
    /// CPUs: simulated (sim default 384, threaded default 8) or targeted (real default: all online; real refuses it with --targets).
    #[arg(long, allow_negative_numbers = true)]
    pub cpus: Option<u32>,
    /// Caller threads (default 25 per CPU, as the selftest's hammers; real: 25 per target CPU by default, and a given count is the total).
    #[arg(long, allow_negative_numbers = true)]
    pub callers: Option<u32>,
    /// Serialization of expedited commands (sim and threaded; default global, the kernel today).
    #[arg(long, value_enum)]
    pub policy: Option<PolicyArg>,
    /// Simulated seconds (sim; default 10).
    #[arg(long, allow_negative_numbers = true, value_parser = seconds)]
    pub sim_seconds: Option<f64>,
    /// Wall-clock seconds (threaded default 2, real default 2).
    #[arg(long, allow_negative_numbers = true, value_parser = seconds)]
    pub duration_s: Option<f64>,
    /// Seed of every random choice (sim and threaded; default 1; real refuses it).
    #[arg(long, allow_negative_numbers = true)]
    pub seed: Option<u64>,
    /// CPUs the callers aim at, comma-separated (default: every CPU in turn).
    #[arg(long, allow_negative_numbers = true, value_delimiter = ',')]
    pub targets: Option<Vec<u32>>,
    /// Simulate without CFS throttling: no interrupts-off windows.
    #[arg(long)]
    pub no_throttle: bool,
    /// CFS period in microseconds, 1000 to 1000000 as the kernel allows (default 5000, the selftest's).
    #[arg(long, allow_negative_numbers = true)]
    pub period_us: Option<u64>,
    /// CFS quota of the throttled group in microseconds per period, at least 1000 as the kernel allows (default 1000).
    #[arg(long, allow_negative_numbers = true)]
    pub quota_us: Option<u64>,
    /// Sibling cgroups under the throttled group (default 2000).
    #[arg(long, allow_negative_numbers = true)]
    pub siblings: Option<u64>,
    /// Nested cgroups below each sibling (default 5).
    #[arg(long, allow_negative_numbers = true)]
    pub depth: Option<u64>,
    /// Interrupts-off nanoseconds per task group a throttle walk visits (default 200).
    #[arg(long, allow_negative_numbers = true)]
    pub tg_visit_ns: Option<u64>,
    /// Microseconds each caller spends between calls (default 0: a tight loop).
    #[arg(long, allow_negative_numbers = true)]
    pub think_us: Option<u64>,
    /// Make every Nth call of each caller a broadcast (default 0: never).
    #[arg(long, allow_negative_numbers = true, default_value_t = 0)]
    pub broadcast_every: u32,
    /// A call that waits longer than this many milliseconds is a stall (default 1000).
    #[arg(long, allow_negative_numbers = true, default_value_t = 1000, value_parser = clap::value_parser!(u64).range(1..))]
    pub watchdog_ms: u64,
    /// Print the per-cpu/global ratio (and every policy's stalls) for 8, 16, 64, 128, 256 and 384 simulated CPUs.
    #[arg(long, conflicts_with_all = ["cpus", "callers", "policy", "targets", "duration_s"])]
    pub sweep: bool,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

fn seconds(text: &str) -> Result<f64, String> {
    let v: f64 = text
        .parse()
        .map_err(|_| format!("'{text}' is not a number of seconds"))?;
    if !(v.is_finite() && v > 0.0) {
        return Err(format!("must be more than 0 seconds (got {text})"));
    }
    // Whole nanoseconds (rounded): under half of one would run no time at
    // all. One nanosecond is the floor.
    if v < 1e-9 {
        return Err(format!(
            "at least 1e-9 seconds, one nanosecond (got {text})"
        ));
    }
    // Past u64 nanoseconds the conversion saturates, and a later message
    // would name the saturated figure rather than the one given.
    if v * NS_PER_S as f64 >= u64::MAX as f64 {
        return Err(format!(
            "too long: more nanoseconds than a u64 holds (got {text})"
        ));
    }
    Ok(v)
}

/// Why `syncbench membarrier` did not produce a result.
#[derive(Debug)]
pub enum Failure {
    /// The arguments cannot work: exit status 2.
    Usage(String),
    /// The run could not happen here: exit status 1.
    Run(String),
}

impl From<std::io::Error> for Failure {
    fn from(e: std::io::Error) -> Failure {
        Failure::Run(e.to_string())
    }
}

impl From<serde_json::Error> for Failure {
    fn from(e: serde_json::Error) -> Failure {
        Failure::Run(e.to_string())
    }
}

/// Latency figures in microseconds.
#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
pub struct LatencyUs {
    /// Mean.
    pub mean: f64,
    /// Median.
    pub p50: f64,
    /// 99th percentile.
    pub p99: f64,
    /// Maximum.
    pub max: f64,
}

/// One run's outcome, as `--json` prints it.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Outcome {
    /// `sim`, `threaded` or `real` (owned when read back from JSON).
    pub mode: Cow<'static, str>,
    /// CPUs simulated (sim, threaded) or targeted (real).
    pub cpus: u32,
    /// Caller threads.
    pub callers: u32,
    /// `global`, `per-cpu`, `none`, or `kernel` for real runs.
    pub policy: Cow<'static, str>,
    /// Seconds covered (simulated for sim, wall-clock otherwise).
    pub seconds: f64,
    /// Calls that completed within them.
    pub calls: u64,
    /// Successful calls per second.
    pub calls_per_s: f64,
    /// Call latency; absent when no call completed (a histogram without
    /// samples reads 0, which `compare` would take for a latency gone to
    /// nothing).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_us: Option<LatencyUs>,
    /// Calls that waited longer than the watchdog threshold.
    pub stalls: u64,
    /// The watchdog threshold in seconds.
    pub watchdog_s: f64,
    /// The seed (sim and threaded).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// The longest wait for the policy's mutex (sim and threaded).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mutex_wait_max_us: Option<f64>,
    /// Callers with at least one stall (sim and threaded).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stalled_callers: Option<u32>,
    /// Share of CPU time in interrupts-off windows (sim and threaded).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub irq_off_fraction: Option<f64>,
    /// The longest interrupts-off window (sim and threaded).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub irq_off_longest_ms: Option<f64>,
    /// Passes of the CFS period timer, back-to-back ones, and period doublings.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timer: Option<TimerCounts>,
    /// Events the simulator processed (sim).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub events: Option<u64>,
}

/// What the CFS period timer did.
#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
pub struct TimerCounts {
    /// Passes (`do_sched_cfs_period_timer()`).
    pub passes: u64,
    /// Passes run back to back because the previous one overran.
    pub chained: u64,
    /// Times period and quota were doubled ("period too short, scaling up").
    pub period_scalings: u32,
}

fn us(ns: f64) -> f64 {
    ns / 1_000.0
}

impl Outcome {
    fn of_report(mode: Mode, r: &Report) -> Outcome {
        let l = r.latency();
        Outcome {
            mode: mode.name().into(),
            cpus: r.cpus,
            callers: r.callers,
            policy: r.policy.name().into(),
            seconds: r.time_ns as f64 / NS_PER_S as f64,
            calls: r.calls,
            calls_per_s: r.calls_per_s(),
            latency_us: (r.calls > 0).then(|| LatencyUs {
                mean: us(l.mean_ns),
                p50: us(l.p50_ns as f64),
                p99: us(l.p99_ns as f64),
                max: us(l.max_ns as f64),
            }),
            stalls: r.stalls,
            watchdog_s: r.watchdog_ns as f64 / NS_PER_S as f64,
            seed: Some(r.seed),
            mutex_wait_max_us: Some(us(r.mutex_wait_max_ns as f64)),
            stalled_callers: Some(r.stalled_callers),
            irq_off_fraction: Some(r.irq_off_fraction),
            irq_off_longest_ms: Some(r.irq_off_longest_ns as f64 / 1e6),
            timer: Some(TimerCounts {
                passes: r.timer_passes,
                chained: r.chained_passes,
                period_scalings: r.period_scalings,
            }),
            events: (mode == Mode::Sim).then_some(r.events),
        }
    }

    fn of_stress(r: &stress::Report, watchdog: Duration) -> Outcome {
        let h = &r.latency;
        Outcome {
            mode: Mode::Real.name().into(),
            cpus: r.targets.len() as u32,
            callers: r.threads,
            policy: "kernel".into(),
            seconds: r.elapsed.as_secs_f64(),
            calls: r.calls,
            calls_per_s: r.calls_per_s(),
            latency_us: (r.calls > 0).then(|| LatencyUs {
                mean: us(h.mean()),
                p50: us(h.percentile(50.0) as f64),
                p99: us(h.percentile(99.0) as f64),
                max: us(h.max() as f64),
            }),
            stalls: r.stalls,
            watchdog_s: watchdog.as_secs_f64(),
            seed: None,
            mutex_wait_max_us: None,
            stalled_callers: None,
            irq_off_fraction: None,
            irq_off_longest_ms: None,
            timer: None,
            events: None,
        }
    }

    fn write_text(&self, out: &mut impl Write) -> std::io::Result<()> {
        write!(
            out,
            "membarrier {}: cpus {} callers {} policy {}",
            self.mode, self.cpus, self.callers, self.policy
        )?;
        if let Some(seed) = self.seed {
            write!(out, " seed {seed}")?;
        }
        if self.seconds >= 1e-3 || self.seconds == 0.0 {
            writeln!(out, " seconds {:.3}", self.seconds)?;
        } else {
            // A threaded run of microseconds printed "seconds 0.000".
            writeln!(out, " seconds {:.2e}", self.seconds)?;
        }
        writeln!(out, "calls {} ({:.1}/s)", self.calls, self.calls_per_s)?;
        match &self.latency_us {
            Some(l) => writeln!(
                out,
                "latency_us mean {:.3} p50 {:.3} p99 {:.3} max {:.3}",
                l.mean, l.p50, l.p99, l.max
            )?,
            None => writeln!(out, "latency_us - (no call completed)")?,
        }
        if let Some(wait) = self.mutex_wait_max_us {
            writeln!(out, "mutex_wait_max_us {wait:.3}")?;
        }
        write!(out, "stalls {}", self.stalls)?;
        if let Some(stalled) = self.stalled_callers {
            write!(out, " (callers stalled {stalled} of {})", self.callers)?;
        }
        writeln!(out, " watchdog {:.3} s", self.watchdog_s)?;
        if let (Some(f), Some(longest)) = (self.irq_off_fraction, self.irq_off_longest_ms) {
            writeln!(
                out,
                "irq_off {:.2}% of CPU time, longest window {longest:.3} ms",
                100.0 * f
            )?;
        }
        if let Some(t) = self.timer {
            writeln!(
                out,
                "cfs_period_timer passes {} chained {} period_scalings {}",
                t.passes, t.chained, t.period_scalings
            )?;
        }
        Ok(())
    }
}

impl MembarrierArgs {
    /// The arguments of `syncbench membarrier --sweep --sim-seconds S`, every
    /// other setting at its default (what the report runs).
    pub fn for_sweep(sim_seconds: f64) -> MembarrierArgs {
        #[derive(clap::Parser)]
        struct Wrapper {
            #[command(flatten)]
            args: MembarrierArgs,
        }
        <Wrapper as clap::Parser>::parse_from([
            "membarrier",
            "--sweep",
            "--sim-seconds",
            &sim_seconds.to_string(),
        ])
        .args
    }
}

/// One line of `--sweep`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SweepRow {
    /// Simulated CPUs.
    pub cpus: u32,
    /// Callers (25 per CPU).
    pub callers: u32,
    /// per-cpu calls/s over global calls/s (`null` if global completed none).
    pub ratio: Option<f64>,
    /// The global mutex.
    pub global: Outcome,
    /// Per-CPU mutexes.
    pub per_cpu: Outcome,
    /// No serialization.
    pub none: Outcome,
}

/// Runs `syncbench membarrier` with `args`, writing the result to `out`.
///
/// # Errors
///
/// [`Failure::Usage`] for arguments that cannot work, [`Failure::Run`] for a
/// run that cannot happen here (a kernel without the command).
pub fn run(args: &MembarrierArgs, out: &mut impl Write) -> Result<(), Failure> {
    if args.sweep {
        if args.mode != Mode::Sim {
            return Err(Failure::Usage(
                "--sweep runs the simulator: it cannot be combined with --mode threaded or real"
                    .into(),
            ));
        }
        return sweep(args, out);
    }
    if let Some(cpu) = repeated_target(args.targets.as_deref().unwrap_or_default()) {
        return Err(Failure::Usage(format!(
            "--targets names CPU {cpu} twice: each CPU is one target (the callers aim at \
             the targets in turn; with --mode real, their number sets the default \
             --callers)"
        )));
    }
    let outcome = match args.mode {
        Mode::Sim | Mode::Threaded => {
            let config = config(args, args.mode, args.cpus)?;
            if args.mode == Mode::Threaded && config.cpus + config.callers > MAX_THREADS {
                return Err(Failure::Usage(format!(
                    "--mode threaded starts a thread per CPU and per caller: at most \
                     {MAX_THREADS} in all (got {} CPUs + {} callers); lower --cpus or --callers",
                    config.cpus, config.callers
                )));
            }
            let report = if args.mode == Mode::Sim {
                sim::run(&config).map_err(|e| Failure::Usage(e.to_string()))?
            } else {
                threaded::run(&config).map_err(|e| match e {
                    threaded::Error::Config(e) => Failure::Usage(e.to_string()),
                    // This machine could not start the threads.
                    e => Failure::Run(format!("membarrier --mode threaded: {e}")),
                })?
            };
            Outcome::of_report(args.mode, &report)
        }
        Mode::Real => real(args)?,
    };
    if args.json {
        serde_json::to_writer_pretty(&mut *out, &outcome)?;
        writeln!(out)?;
    } else {
        outcome.write_text(out)?;
    }
    Ok(())
}

/// The first CPU that `targets` names twice, if any.
fn repeated_target(targets: &[u32]) -> Option<u32> {
    let mut seen = std::collections::BTreeSet::new();
    targets.iter().copied().find(|&cpu| !seen.insert(cpu))
}

/// The simulator's (or threaded mode's) configuration for `args`.
fn config(args: &MembarrierArgs, mode: Mode, cpus: Option<u32>) -> Result<Config, Failure> {
    let cpus = cpus.unwrap_or(if mode == Mode::Sim { 384 } else { 8 });
    let mut c = Config::selftest(cpus);
    c.callers = args
        .callers
        .unwrap_or(cpus.saturating_mul(Config::SELFTEST_CALLERS_PER_CPU));
    c.policy = args.policy.unwrap_or(PolicyArg::Global).into();
    c.seed = args.seed.unwrap_or(1);
    c.targets = args.targets.clone();
    let seconds = match mode {
        Mode::Sim => {
            if args.duration_s.is_some() {
                return Err(Failure::Usage(
                    "--duration-s is wall-clock time for --mode threaded and real; the \
                     simulator takes --sim-seconds"
                        .into(),
                ));
            }
            args.sim_seconds.unwrap_or(10.0)
        }
        _ => {
            if args.sim_seconds.is_some() {
                return Err(Failure::Usage(
                    "--sim-seconds applies to --mode sim; use --duration-s for wall-clock time"
                        .into(),
                ));
            }
            args.duration_s.unwrap_or(2.0)
        }
    };
    c.sim_time_ns = (seconds * NS_PER_S as f64).round() as u64;
    c.think_ns = args.think_us.unwrap_or(0).saturating_mul(1_000);
    c.broadcast_every = args.broadcast_every;
    c.watchdog_ns = args.watchdog_ms.saturating_mul(1_000_000);
    let overrides = [
        ("--period-us", args.period_us.is_some()),
        ("--quota-us", args.quota_us.is_some()),
        ("--siblings", args.siblings.is_some()),
        ("--depth", args.depth.is_some()),
        ("--tg-visit-ns", args.tg_visit_ns.is_some()),
    ];
    if args.no_throttle {
        if let Some((flag, _)) = overrides.iter().find(|(_, given)| *given) {
            return Err(Failure::Usage(format!(
                "{flag} describes the throttling that --no-throttle turns off"
            )));
        }
        c.throttle = None;
    } else if let Some(t) = c.throttle.as_mut() {
        if let Some(v) = args.period_us {
            t.period_ns = v.saturating_mul(1_000);
        }
        if let Some(v) = args.quota_us {
            t.quota_ns = v.saturating_mul(1_000);
        }
        if let Some(v) = args.siblings {
            t.siblings = v;
        }
        if let Some(v) = args.depth {
            t.depth = v;
        }
        if let Some(v) = args.tg_visit_ns {
            t.tg_visit_ns = v;
        }
    }
    c.validate().map_err(|e| Failure::Usage(e.to_string()))?;
    Ok(c)
}

/// `--mode real`: the kernel's own command.
fn real(args: &MembarrierArgs) -> Result<Outcome, Failure> {
    let refuse = |flag: &str, why: &str| Failure::Usage(format!("{flag} {why}"));
    if args.policy.is_some() {
        return Err(refuse(
            "--policy",
            "applies to --mode sim and threaded: the real kernel serializes as it was built to",
        ));
    }
    if args.sim_seconds.is_some() {
        return Err(refuse(
            "--sim-seconds",
            "applies to --mode sim; use --duration-s for wall-clock time",
        ));
    }
    if args.seed.is_some() {
        return Err(refuse(
            "--seed",
            "applies to --mode sim and threaded: --mode real draws nothing at random",
        ));
    }
    if args.cpus.is_some() && args.targets.is_some() {
        return Err(refuse(
            "--cpus",
            "cannot be combined with --targets in --mode real: the targets are the CPUs hammered",
        ));
    }
    let model_flags = [
        ("--no-throttle", args.no_throttle),
        ("--period-us", args.period_us.is_some()),
        ("--quota-us", args.quota_us.is_some()),
        ("--siblings", args.siblings.is_some()),
        ("--depth", args.depth.is_some()),
        ("--tg-visit-ns", args.tg_visit_ns.is_some()),
        ("--think-us", args.think_us.is_some()),
        ("--broadcast-every", args.broadcast_every != 0),
    ];
    if let Some((flag, _)) = model_flags.iter().find(|(_, given)| *given) {
        return Err(refuse(
            flag,
            "shapes the simulated scenario; --mode real only hammers this kernel \
             (the throttled cgroup hierarchy needs the kernel selftest, as root)",
        ));
    }
    let online = sys::online_cpus();
    let cpus = args.cpus.unwrap_or(online.len() as u32);
    if cpus == 0 {
        return Err(Failure::Usage("at least 1 CPU is needed (got 0)".into()));
    }
    if cpus as usize > online.len() {
        return Err(Failure::Usage(format!(
            "--cpus {cpus}, but only {} CPUs are online ({online})",
            online.len()
        )));
    }
    let targets = match &args.targets {
        Some(t) => {
            if let Some(&bad) = t.iter().find(|&&c| !online.contains(c)) {
                return Err(Failure::Usage(format!(
                    "callers target CPU {bad}, which is not online (online CPUs: {online})"
                )));
            }
            t.clone()
        }
        None => online.iter().take(cpus as usize).collect(),
    };
    // 25 callers per CPU hammered, as the selftest: per target when given.
    let threads = args
        .callers
        .unwrap_or((targets.len() as u32).saturating_mul(Config::SELFTEST_CALLERS_PER_CPU));
    if threads == 0 {
        return Err(Failure::Usage("at least 1 caller is needed (got 0)".into()));
    }
    if threads > MAX_THREADS {
        return Err(Failure::Usage(format!(
            "--mode real starts a thread per caller: at most {MAX_THREADS} (got {threads}); \
             lower --callers, --cpus or --targets"
        )));
    }
    let watchdog = Duration::from_millis(args.watchdog_ms);
    let seconds = args.duration_s.unwrap_or(2.0);
    // The other subcommands' bound on a run of real threads (a day).
    if seconds > REAL_RUN_MAX_SECONDS {
        return Err(Failure::Usage(format!(
            "--duration-s: at most {REAL_RUN_MAX_SECONDS} seconds for --mode real (got {seconds})"
        )));
    }
    let duration = Duration::from_secs_f64(seconds);
    let config = stress::Config {
        threads,
        targets,
        duration,
        watchdog,
    };
    let report = stress::run(&config).map_err(|e| Failure::Run(format!("membarrier: {e}")))?;
    Ok(Outcome::of_stress(&report, watchdog))
}

/// `--sweep`: every policy at every CPU count of [`SWEEP_CPUS`].
/// The `--sweep` rows: every policy at every CPU count of [`SWEEP_CPUS`], in
/// the simulator, with the other settings from `args`.
///
/// # Errors
///
/// [`Failure::Usage`] when `args` cannot make a simulator configuration.
pub fn sweep_rows(
    args: &MembarrierArgs,
    progress: &mut Progress,
) -> Result<Vec<SweepRow>, Failure> {
    let mut rows = Vec::new();
    for cpus in SWEEP_CPUS {
        let mut base = config(args, Mode::Sim, Some(cpus))?;
        let mut outcomes = Vec::new();
        for policy in Policy::ALL {
            progress.set_label(&format!("{cpus} cpus {policy}"));
            base.policy = policy;
            let report = sim::run(&base).map_err(|e| Failure::Usage(e.to_string()))?;
            outcomes.push(Outcome::of_report(Mode::Sim, &report));
            progress.inc(1);
        }
        let [global, per_cpu, none]: [Outcome; 3] = outcomes
            .try_into()
            .expect("one outcome per policy in Policy::ALL");
        rows.push(SweepRow {
            cpus,
            callers: base.callers,
            ratio: (global.calls > 0).then(|| per_cpu.calls_per_s / global.calls_per_s),
            global,
            per_cpu,
            none,
        });
    }
    Ok(rows)
}

fn sweep(args: &MembarrierArgs, out: &mut impl Write) -> Result<(), Failure> {
    let mut progress = Progress::new((SWEEP_CPUS.len() * Policy::ALL.len()) as u64, "sweep");
    let rows = sweep_rows(args, &mut progress)?;
    drop(progress);
    if args.json {
        serde_json::to_writer_pretty(&mut *out, &rows)?;
        writeln!(out)?;
        return Ok(());
    }
    let sample = config(args, Mode::Sim, Some(SWEEP_CPUS[0]))?;
    write!(
        out,
        "membarrier sweep: {:.3} simulated s per run, seed {}, ",
        sample.sim_time_ns as f64 / NS_PER_S as f64,
        sample.seed
    )?;
    match &sample.throttle {
        Some(t) => writeln!(
            out,
            "CFS period {} us quota {} us over {} task groups ({} siblings x depth {}, {} ns each)",
            t.period_ns / 1_000,
            t.quota_ns / 1_000,
            t.task_groups(),
            t.siblings,
            t.depth,
            t.tg_visit_ns
        )?,
        None => writeln!(out, "no throttling")?,
    }
    writeln!(
        out,
        "{:>5} {:>8} {:>13} {:>13} {:>13} {:>15} {:>24} {:>8}",
        "cpus",
        "callers",
        "global/s",
        "per-cpu/s",
        "none/s",
        "per-cpu/global",
        "stalls global/per-cpu/none",
        "irq-off"
    )?;
    for r in &rows {
        let ratio = r.ratio.map_or("-".to_string(), |x| format!("{x:.1}x"));
        let stalls = format!("{}/{}/{}", r.global.stalls, r.per_cpu.stalls, r.none.stalls);
        writeln!(
            out,
            "{:>5} {:>8} {:>13.1} {:>13.1} {:>13.1} {:>15} {:>24} {:>7.1}%",
            r.cpus,
            r.callers,
            r.global.calls_per_s,
            r.per_cpu.calls_per_s,
            r.none.calls_per_s,
            ratio,
            stalls,
            100.0 * r.global.irq_off_fraction.unwrap_or(0.0)
        )?;
    }
    Ok(())
}

/// The membarrier kind in `syncbench list`: its modes.
pub fn listing() -> Vec<ImplListing> {
    let rseq = sys::query().contains(sys::Command::PrivateExpeditedRseq);
    vec![
        ImplListing {
            name: "sim",
            origin: Origin::Workspace,
            summary: "deterministic simulator; --policy global|per-cpu|none; --sweep for 8..384 CPUs",
            available: true,
            unavailable: None,
        },
        ImplListing {
            name: "threaded",
            origin: Origin::Workspace,
            summary: "the simulated scenario with real threads as CPUs (cross-check)",
            available: true,
            unavailable: None,
        },
        ImplListing {
            name: "real",
            origin: Origin::Workspace,
            summary: "this kernel's targeted MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ, calls/s",
            available: rseq,
            unavailable: (!rseq).then(|| {
                "the running kernel lacks MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ (needs Linux \
                 5.10+ with CONFIG_RSEQ)"
                    .to_string()
            }),
        },
    ]
}
