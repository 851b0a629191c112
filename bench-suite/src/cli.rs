//! The `syncbench` command line: argument parsing (clap) and dispatch.
//!
//! Bad input (an unknown implementation, zero threads, a zero duration, an
//! unknown flag, a file that is not what the command reads) is refused with a
//! message naming the valid choices, the file or the key, and exit status 2:
//! nothing was measured. A run that fails exits with 1: a torture run that
//! sees an exclusion failure, a use-after-free or a hang, a measurement
//! that measured nothing (an rcuscale implementation that completed no wait,
//! a torture run with nothing checked), whose message says so, an `advise`
//! in which no contender ran without a torn read (nothing to recommend), a
//! `report` with a failed torture or locktorture run, and a `compare
//! --fail-on-regression` whose gate fails. A reader that closes standard
//! output early (`| head`) leaves the status to the run, and a standard error
//! that cannot be written is passed over ([`crate::console`]).

use crate::console::{ResultsOut, note};
use crate::machine::Build;
use crate::registry::{self, Implementation, Origin};
use crate::{
    advise, compare, locktorture, membarrier, rcuscale, refscale, report, throttle, torture,
};
use clap::builder::PossibleValuesParser;
use clap::{Args, CommandFactory, FromArgMatches, Parser, Subcommand};
use serde::Serialize;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

/// Measure syncprims' primitives side by side with their peers.
#[derive(Debug, Parser)]
#[command(name = "syncbench", version, about, long_about = None)]
pub struct Cli {
    /// What to run.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// List every implementation, grouped by kind of measurement.
    List {
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Read-side critical-section cost in ns/op (kernel refscale).
    Refscale(RefscaleArgs),
    /// Reader-writer locks under contention, with exclusion checks (kernel locktorture).
    Locktorture(LocktortureArgs),
    /// Writer-side cost of waiting for readers: per-grace-period time and latency (kernel rcuscale).
    Rcuscale(RcuscaleArgs),
    /// Use-after-free detection for deferred reclamation (kernel rcutorture).
    Torture(TortureArgs),
    /// Run a profile of every measurement and write a report (markdown, HTML, SVG plots, JSON).
    Report(ReportArgs),
    /// Compare two results.json files and flag regressions beyond a threshold (counts of work in
    /// timed runs are compared per second of run).
    Compare(CompareArgs),
    /// Benchmark one read/write workload on this machine and recommend a primitive.
    Advise(AdviseArgs),
    /// Why targeted membarrier needs per-CPU mutexes: simulator, threaded cross-check, real syscall.
    Membarrier(membarrier::MembarrierArgs),
}

fn refscale_names() -> PossibleValuesParser {
    PossibleValuesParser::new(registry::names_with_all(refscale::implementations()))
}

fn lock_names() -> PossibleValuesParser {
    PossibleValuesParser::new(registry::names_with_all(locktorture::implementations()))
}

fn grace_period_names() -> PossibleValuesParser {
    PossibleValuesParser::new(registry::names_with_all(rcuscale::implementations()))
}

fn torture_names() -> PossibleValuesParser {
    PossibleValuesParser::new(registry::names_with_all(torture::implementations()))
}

/// Arguments of `syncbench refscale`.
#[derive(Debug, Args)]
pub struct RefscaleArgs {
    /// Implementations to measure, comma-separated (`all`: every available one).
    #[arg(long = "impl", value_delimiter = ',', default_value = "all", value_parser = refscale_names())]
    pub implementations: Vec<String>,
    /// Reader threads.
    #[arg(long, allow_negative_numbers = true, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub threads: u32,
    /// Read-side sections per reader per run (at most 10^10: 80 s a run at
    /// a peer's 8 ns).
    #[arg(long, allow_negative_numbers = true, default_value_t = 5_000_000, value_parser = clap::value_parser!(u64).range(1..=10_000_000_000))]
    pub iterations: u64,
    /// Timed runs; the median is reported.
    #[arg(long, allow_negative_numbers = true, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub runs: u32,
    /// Print a JSON array of {"impl","threads","ns_per_op",...} instead of text.
    #[arg(long)]
    pub json: bool,
}

/// Arguments of `syncbench locktorture`.
#[derive(Debug, Args)]
pub struct LocktortureArgs {
    /// Locks to torture, comma-separated, one after the other (`all`: every available one).
    #[arg(long = "lock", value_delimiter = ',', default_value = "all", value_parser = lock_names())]
    pub locks: Vec<String>,
    /// Writer threads.
    #[arg(long, allow_negative_numbers = true, default_value_t = 4, value_parser = clap::value_parser!(u32).range(0..=4096))]
    pub writers: u32,
    /// Reader threads.
    #[arg(long, allow_negative_numbers = true, default_value_t = 16, value_parser = clap::value_parser!(u32).range(0..=4096))]
    pub readers: u32,
    /// Seconds each lock is tortured.
    #[arg(long, allow_negative_numbers = true, default_value_t = 5.0, value_parser = positive_seconds)]
    pub duration_s: f64,
    /// Seconds between statistics lines during the run (text output only,
    /// so not with `--json`); at least 0.01.
    #[arg(long, allow_negative_numbers = true, conflicts_with = "json", value_parser = stat_interval_seconds)]
    pub stat_interval_s: Option<f64>,
    /// Inject faults: panics inside write and read sections, some caught
    /// (the thread then takes the lock again) and some fatal to their
    /// thread, churn of short-lived threads, holders that stall 100-300 ms.
    /// Each is counted; exclusion must still hold.
    #[arg(long)]
    pub faults: bool,
    /// Seconds the writers (all together), the readers (all together) or
    /// the fault driver may make no progress before the run counts a hang
    /// and fails; at least 1 (injected stalls last up to 0.3 s). One thread
    /// the lock starves while the others of its side get in is no hang. A
    /// pause of the whole process (Ctrl-Z, a debugger) counts as 1 s.
    #[arg(long, allow_negative_numbers = true, default_value_t = locktorture::Config::STALL_LIMIT.as_secs_f64(), value_parser = stall_limit_seconds)]
    pub stall_limit_s: f64,
    /// Print a JSON array of {"lock","writers","readers","duration_s","writes","reads",
    /// "writes_served_per_ms","reads_served_per_ms","fail","write_fail","read_fail",
    /// "faults":{...},"failure"}; the rates off the runqueue, "faults" and "failure"
    /// appear only where measured, injected or failed.
    #[arg(long)]
    pub json: bool,
}

/// Arguments of `syncbench rcuscale`.
#[derive(Debug, Args)]
pub struct RcuscaleArgs {
    /// Implementations to measure, comma-separated (`all`: every available one).
    #[arg(long = "impl", value_delimiter = ',', default_value = "all", value_parser = grace_period_names())]
    pub implementations: Vec<String>,
    /// Writer threads, each waiting for readers back to back. A
    /// comma-separated list (`1,16`) measures every count in the same run:
    /// each implementation at each count takes turns with the others, round
    /// by round, so their figures share the machine's slow stretches.
    #[arg(long, allow_negative_numbers = true, value_delimiter = ',', default_value = "1", value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub writers: Vec<u32>,
    /// Reader threads running read-side sections meanwhile.
    #[arg(long, allow_negative_numbers = true, default_value_t = 0, value_parser = clap::value_parser!(u32).range(0..=4096))]
    pub readers: u32,
    /// Extra reader threads that register, read once and then stay idle: the
    /// waiting side must still account for them on every scan (like idle CPUs
    /// in the kernel), so they model a process with many registered threads.
    #[arg(long, allow_negative_numbers = true, default_value_t = 0, value_parser = clap::value_parser!(u32).range(0..=4096))]
    pub idle_threads: u32,
    /// Seconds each implementation runs.
    #[arg(long, allow_negative_numbers = true, default_value_t = 2.0, value_parser = positive_seconds)]
    pub duration_s: f64,
    /// Instead of running for --duration-s, each writer waits this many times
    /// (the seed's quick-QS table: 100 synchronize_rcu() calls a run). Compare
    /// latency maxima only over equal counts.
    #[arg(long, allow_negative_numbers = true, conflicts_with = "duration_s", value_parser = clap::value_parser!(u64).range(1..=100_000_000))]
    pub waits: Option<u64>,
    /// Runs of the whole set: each round runs every implementation once, in
    /// turn, so a slow stretch of the machine falls on all of them. Per-GP
    /// time is then the median of the rounds (each round's is in the JSON's
    /// "per_gp_rounds_us"); latency figures cover every wait of every round.
    #[arg(long, allow_negative_numbers = true, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub rounds: u32,
    /// Kernel-like fixed force-quiescent-state interval in milliseconds; given
    /// without a value, the kernel's 3. Affects rcu-lite, rcu-lite-noqs and
    /// rcu-lite-qsbr only; without the option they scan adaptively. Other
    /// implementations run as without it (named on stderr; refused when
    /// none of those chosen uses it). The paced ones' output then gives the
    /// interval and the FQS waits per grace period, from the engine's own
    /// count (on an idle system, with `--idle-threads 1` or more, one with
    /// quick QS and two without; with no other registered thread, none with
    /// quick QS).
    #[arg(
        long,
        allow_negative_numbers = true,
        num_args = 0..=1,
        default_missing_value = "3",
        value_parser = positive_milliseconds
    )]
    pub fqs_interval_ms: Option<f64>,
    /// Print a JSON array of {"impl","writers","readers","idle_threads","gps","per_gp_us",
    /// "latency_us":{...},"reads","duration_s","per_gp_rounds_us":[...]}, with
    /// "fqs":{"grace_periods","fqs_waits"} for the rcu-lite implementations
    /// (the engine's counts over the run), "fqs_interval_ms" for those that
    /// --fqs-interval-ms paced, and
    /// "cpu":{"writers_us","others_us","others_timed_window"} (CPU time per
    /// wait: the writers', and the process's other threads' over the timed
    /// window).
    #[arg(long)]
    pub json: bool,
}

/// Arguments of `syncbench torture`.
#[derive(Debug, Args)]
pub struct TortureArgs {
    /// Implementations to torture, comma-separated (`all`: every available one).
    #[arg(long = "impl", value_delimiter = ',', default_value = "all", value_parser = torture_names())]
    pub implementations: Vec<String>,
    /// Reader threads checking every object they reach.
    #[arg(long, allow_negative_numbers = true, default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub readers: u32,
    /// Writer threads replacing and reclaiming objects.
    #[arg(long, allow_negative_numbers = true, default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub writers: u32,
    /// Seconds the whole run lasts. The chosen implementations are tortured
    /// all at the same time, each for all of it, competing for the CPUs (the
    /// soak: `--impl all --duration-s 600 --faults`); with --sequential, one
    /// after the other, each for an equal share. With far more threads than
    /// CPUs a window can end late, each by its own delay (a note says so):
    /// every figure is over its run's own window.
    #[arg(long, allow_negative_numbers = true, default_value_t = 5.0, value_parser = positive_seconds)]
    pub duration_s: f64,
    /// Torture the implementations one after the other, each for
    /// duration/N seconds, instead of all at the same time.
    #[arg(long)]
    pub sequential: bool,
    /// Inject faults: panics inside read sections, some caught (the thread
    /// then reads again) and some fatal to their thread, threads that exit
    /// while registered, churn of short-lived threads, readers that stall
    /// 100-300 ms inside a section, retire storms.
    /// Each is counted; the run must still end with 0 errors.
    #[arg(long)]
    pub faults: bool,
    /// Force the acquire slow path (backup slots); only hazptr has one.
    #[arg(long)]
    pub slow_path: bool,
    /// Writers hand every replaced object to deferred reclamation (retire,
    /// call_rcu, defer) and never wait for readers: bulk freeing by a
    /// background thread. Locks, which free under the write lock, cannot run.
    #[arg(long)]
    pub deferred_only: bool,
    /// Seconds a thread may make no progress before the run counts a hang
    /// and fails; at least 1 (injected stalls last up to 0.3 s). Raise it for
    /// long soaks on a loaded machine. A pause of the whole process (Ctrl-Z,
    /// a debugger) counts as 1 s.
    #[arg(long, allow_negative_numbers = true, default_value_t = torture::Config::STALL_LIMIT.as_secs_f64(), value_parser = stall_limit_seconds)]
    pub stall_limit_s: f64,
    /// Print a JSON array of {"impl","reads","replaced","errors","unreclaimed_max",
    /// "faults":{...},"failure",...}; "slow_path" and "deferred_only" appear
    /// (true) when the run had them; "cpu":{"readers_s","writers_s","others_s"}
    /// gives the CPU seconds each role used (others only for a run alone;
    /// no "cpu" with --faults).
    #[arg(long)]
    pub json: bool,
}

/// Arguments of `syncbench report`.
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// The quick profile (the default): under 3 minutes on 2 cores.
    #[arg(long, conflicts_with_all = ["full", "from"])]
    pub quick: bool,
    /// The full profile: more threads, runs and time.
    #[arg(long, conflicts_with = "from")]
    pub full: bool,
    /// Measure nothing: write the report of an earlier run's results.json
    /// again, with this build's tables and Choosing picks.
    #[arg(long, value_name = "RESULTS_JSON")]
    pub from: Option<PathBuf>,
    /// Directory for report.md, report.html, plots/*.svg and results.json.
    /// One report at a time: while a report is measuring or writing into
    /// it, another into the same directory is refused.
    #[arg(long, default_value = "target/syncbench-report")]
    pub out: PathBuf,
    /// Also print results.json to standard output.
    #[arg(long)]
    pub json: bool,
}

/// Arguments of `syncbench advise`.
#[derive(Debug, Args)]
pub struct AdviseArgs {
    /// Read-side sections per update, per thread.
    #[arg(long, allow_negative_numbers = true, value_parser = clap::value_parser!(u32).range(1..=10_000_000))]
    pub reads_per_write: u32,
    /// Threads sharing the payload.
    #[arg(long, allow_negative_numbers = true, value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub threads: u32,
    /// Size of the shared payload in bytes, rounded up to whole 8-byte
    /// words (the size measured and reported).
    #[arg(long, allow_negative_numbers = true, default_value_t = 64, value_parser = clap::value_parser!(u64).range(1..=(1 << 24)))]
    pub payload_bytes: u64,
    /// Seconds each run of a contender lasts; at least 0.01 (an untimed
    /// warm-up run of a tenth of it comes first).
    #[arg(long, allow_negative_numbers = true, default_value_t = 0.5, value_parser = advise_seconds)]
    pub duration_s: f64,
    /// Runs of each contender, taken in turns with the others' (the median
    /// run is shown).
    #[arg(long, allow_negative_numbers = true, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub rounds: u32,
    /// Print the matrix and the recommendation as JSON.
    #[arg(long)]
    pub json: bool,
}

/// Arguments of `syncbench compare`.
#[derive(Debug, Args)]
pub struct CompareArgs {
    /// The earlier run's results.json.
    pub old: PathBuf,
    /// The later run's results.json.
    pub new: PathBuf,
    /// A figure changing for the worse by more than this percentage is a regression.
    #[arg(long, allow_negative_numbers = true, default_value_t = 10.0, value_parser = positive_percent)]
    pub threshold_pct: f64,
    /// List every figure, not only regressions and improvements.
    #[arg(long)]
    pub all: bool,
    /// Exit with status 1 when any figure regressed, when a measurement or
    /// figure of the old run is missing from the new one (a figure that went
    /// NaN is written as null, so it is missing), or when no figure was
    /// compared.
    #[arg(long)]
    pub fail_on_regression: bool,
    /// Print the comparison as JSON.
    #[arg(long)]
    pub json: bool,
}

/// Parses `text` as a finite number, `what` naming what it should be in
/// the refusal of one that is not a number. NaN and the infinities parse as
/// `f64` but bound nothing, so they get a refusal of their own.
fn finite_number(text: &str, what: &str) -> Result<f64, String> {
    let v: f64 = text
        .parse()
        .map_err(|_| format!("'{text}' is not {what}"))?;
    if !v.is_finite() {
        return Err(format!("must be a finite number (got {text})"));
    }
    Ok(v)
}

fn positive_percent(text: &str) -> Result<f64, String> {
    let v = finite_number(text, "a percentage")?;
    if v < 0.0 {
        return Err(format!("must be 0 or more (got {text})"));
    }
    Ok(v)
}

fn positive_seconds(text: &str) -> Result<f64, String> {
    let v = finite_number(text, "a number of seconds")?;
    if v <= 0.0 {
        return Err(format!("must be more than 0 seconds (got {text})"));
    }
    // A run lasts whole nanoseconds (`Duration::from_secs_f64` rounds to
    // them): under half of one it would be no run at all, failed for
    // measuring nothing (status 1) rather than refused as the bad argument
    // it is. One nanosecond is the floor.
    if v < 1e-9 {
        return Err(format!(
            "at least 1e-9 seconds, one nanosecond (got {text})"
        ));
    }
    if v > 86_400.0 {
        return Err(format!("at most 86400 seconds (got {text})"));
    }
    Ok(v)
}

/// `--stat-interval-s`: [`positive_seconds`], and at least
/// [`locktorture::Config::MIN_STAT_INTERVAL`]: the lines are for a person to
/// read, and shorter intervals only keep the main thread printing.
fn stat_interval_seconds(text: &str) -> Result<f64, String> {
    let v = positive_seconds(text)?;
    let least = locktorture::Config::MIN_STAT_INTERVAL.as_secs_f64();
    if v < least {
        return Err(format!("at least {least} seconds (got {text})"));
    }
    Ok(v)
}

/// `advise --duration-s`: [`positive_seconds`], and at least 10 ms: a
/// shorter run times a handful of operations and one clock reading's error
/// and ranks the contenders on that.
fn advise_seconds(text: &str) -> Result<f64, String> {
    let v = positive_seconds(text)?;
    if v < 0.01 {
        return Err(format!("at least 0.01 seconds (got {text})"));
    }
    Ok(v)
}

/// `--stall-limit-s`: [`positive_seconds`], and at least a second, well
/// above the longest injected stall, so that a run with `--faults` does not
/// call its own stalls hangs.
fn stall_limit_seconds(text: &str) -> Result<f64, String> {
    let v = positive_seconds(text)?;
    if v < 1.0 {
        return Err(format!("at least 1 second (got {text})"));
    }
    Ok(v)
}

fn positive_milliseconds(text: &str) -> Result<f64, String> {
    let v = finite_number(text, "a number of milliseconds")?;
    if v < 0.001 {
        return Err(format!(
            "must be at least 0.001 milliseconds, 1 us (got {text}); without the option the \
             scans are adaptive"
        ));
    }
    if v > 60_000.0 {
        return Err(format!("at most 60000 milliseconds (got {text})"));
    }
    Ok(v)
}

/// Parses the process arguments and runs the command. `--version` names
/// the build as reports do ([`Build::summary`]).
pub fn main() -> ExitCode {
    // clap puts the name before it. clap keeps a `&'static str`: held by a
    // static rather than leaked, so that valgrind counts it as reachable
    // (`scripts/sanitize.sh` fails on a definite leak, as it did on every
    // syncbench run from 2026-12-06 until this static).
    static LONG_VERSION: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    let long_version = LONG_VERSION.get_or_init(|| {
        let summary = Build::current().summary();
        summary
            .strip_prefix("syncbench ")
            .unwrap_or(&summary)
            .to_owned()
    });
    let matches = Cli::command()
        .long_version(long_version.as_str())
        .get_matches();
    let cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    match run(cli) {
        Ok(code) => code,
        Err(err) => {
            note(format_args!("syncbench: {err}"));
            ExitCode::FAILURE
        }
    }
}

/// The implementations `names` chooses from `list`; a name that is unknown
/// or cannot run here is a usage error. What `all` leaves out because it
/// cannot run here is named on stderr, so that a run without a peer says
/// so.
fn choose<'a, T: ?Sized, O: Default>(
    list: &'a [Implementation<T, O>],
    names: &[String],
) -> Vec<&'a Implementation<T, O>> {
    let (chosen, left_out) =
        registry::select_noting(list, names).unwrap_or_else(|e| usage_error(e));
    for left_out in left_out {
        note(format_args!("note: `all` leaves out {left_out}"));
    }
    chosen
}

/// Refuses `--faults` in a build that aborts on panic: its faults are
/// panics that the harness catches, and the first would end the process.
fn refuse_faults_without_unwinding(faults: bool) {
    if faults && cfg!(panic = "abort") {
        usage_error(
            "--faults injects panics and catches them, which this build of syncbench cannot: it \
             was built with panic = \"abort\" (build it with the default, panic = \"unwind\")",
        );
    }
}

/// Exits with clap's usage-error status (2) and `message`, under the usage
/// line of the subcommand that was run.
fn usage_error(message: impl std::fmt::Display) -> ! {
    let mut root = Cli::command();
    root.build();
    let subcommand = std::env::args().nth(1);
    match subcommand
        .as_deref()
        .and_then(|name| root.find_subcommand_mut(name))
    {
        Some(sub) => sub
            .error(clap::error::ErrorKind::ValueValidation, message)
            .exit(),
        None => root
            .error(clap::error::ErrorKind::ValueValidation, message)
            .exit(),
    }
}

/// Whether `command` times anything, so that an unoptimized build warns:
/// not `list`, `compare`, a report rendered `--from` a file, or the
/// membarrier simulator, whose times are simulated.
fn measures_time(command: &Command) -> bool {
    match command {
        Command::List { .. } | Command::Compare(_) => false,
        Command::Report(args) => args.from.is_none(),
        Command::Membarrier(args) => args.mode != membarrier::Mode::Sim,
        Command::Refscale(_)
        | Command::Locktorture(_)
        | Command::Rcuscale(_)
        | Command::Torture(_)
        | Command::Advise(_) => true,
    }
}

/// Runs a parsed command line. A command that measures time and was
/// throttled by a cgroup CPU quota meanwhile says so on stderr at its end
/// ([`throttle`]).
pub fn run(cli: Cli) -> Result<ExitCode, Box<dyn std::error::Error>> {
    let before = measures_time(&cli.command).then(throttle::read).flatten();
    let result = run_command(cli);
    if let Some(before) = before
        && let Some(throttled) = throttle::read().and_then(|after| after.since(before).note())
    {
        note(format_args!("{throttled}"));
    }
    result
}

/// [`run`]'s command.
fn run_command(cli: Cli) -> Result<ExitCode, Box<dyn std::error::Error>> {
    // Not locked for the whole command: locktorture's live lines come from
    // another thread.
    let mut out = ResultsOut::new();
    if measures_time(&cli.command)
        && let Some(warning) = Build::current().unoptimized_warning()
    {
        note(format_args!("syncbench: warning: {warning}"));
    }
    match cli.command {
        Command::List { json } => {
            let kinds = list();
            if json {
                serde_json::to_writer_pretty(&mut out, &kinds)?;
                writeln!(out)?;
            } else {
                write_list(&mut out, &kinds)?;
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Refscale(args) => {
            let chosen = choose(refscale::implementations(), &args.implementations);
            let config = refscale::Config {
                threads: args.threads as usize,
                iterations: args.iterations,
                runs: args.runs as usize,
            };
            let outcomes = refscale::measure_all(&chosen, config)?;
            if args.json {
                serde_json::to_writer_pretty(&mut out, &outcomes)?;
                writeln!(out)?;
            } else {
                refscale::write_text(&mut out, &outcomes)?;
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Locktorture(args) => {
            if args.writers == 0 && args.readers == 0 {
                usage_error("--writers and --readers are both 0: at least one thread is needed");
            }
            refuse_faults_without_unwinding(args.faults);
            let chosen = choose(locktorture::implementations(), &args.locks);
            let config = locktorture::Config {
                writers: args.writers as usize,
                readers: args.readers as usize,
                duration: Duration::from_secs_f64(args.duration_s),
                stat_interval: args.stat_interval_s.map(Duration::from_secs_f64),
                write_hold: locktorture::Config::WRITE_HOLD,
                read_hold: locktorture::Config::READ_HOLD,
                faults: args.faults,
                stall_limit: Duration::from_secs_f64(args.stall_limit_s),
            };
            let outcomes = if args.json {
                locktorture::torture_all(&chosen, config, None)?
            } else {
                locktorture::torture_all(&chosen, config, Some(Box::new(ResultsOut::new())))?
            };
            if args.json {
                serde_json::to_writer_pretty(&mut out, &outcomes)?;
                writeln!(out)?;
                // The text output says what failed; with --json, stderr does.
                for o in &outcomes {
                    if let Some(why) = o.why_failed() {
                        note(format_args!(
                            "syncbench: FAILURE: locktorture {}: {why}",
                            o.lock
                        ));
                    }
                }
            } else {
                locktorture::write_text(&mut out, &outcomes)?;
            }
            let failed = outcomes.iter().any(|o| o.why_failed().is_some());
            Ok(if failed {
                ExitCode::FAILURE
            } else {
                ExitCode::SUCCESS
            })
        }
        Command::Rcuscale(args) => {
            let chosen = choose(rcuscale::implementations(), &args.implementations);
            let mut writer_counts: Vec<usize> = Vec::with_capacity(args.writers.len());
            for &w in &args.writers {
                if writer_counts.contains(&(w as usize)) {
                    usage_error(format!("--writers names {w} twice"));
                }
                writer_counts.push(w as usize);
            }
            let config = rcuscale::Config {
                writers: writer_counts[0],
                readers: args.readers as usize,
                idle_threads: args.idle_threads as usize,
                duration: Duration::from_secs_f64(args.duration_s),
                waits_per_writer: args.waits,
            };
            if args.fqs_interval_ms.is_some() {
                let ignoring: Vec<&str> = chosen
                    .iter()
                    .map(|imp| imp.name)
                    .filter(|name| !rcuscale::FQS_PACED.contains(name))
                    .collect();
                if ignoring.len() == chosen.len() {
                    usage_error(format!(
                        "--fqs-interval-ms paces {} only, and none of them was chosen",
                        rcuscale::FQS_PACED.join(", ")
                    ));
                }
                // Every writer completes at least one wait, and a paced
                // wait lasts an interval where anything is registered
                // beside the writers (or quick QS is off): the run then
                // outlasts --duration-s.
                if let Some(ms) = args.fqs_interval_ms
                    && args.waits.is_none()
                    && ms / 1000.0 > args.duration_s
                {
                    note(format_args!(
                        "note: --fqs-interval-ms {ms} is longer than --duration-s {}: each paced \
                         writer still completes one wait, so a run whose grace periods wait an \
                         interval lasts an interval or more",
                        args.duration_s
                    ));
                }
                // A lone writer with nothing else registered is the
                // kernel's one-CPU system: quick QS leaves no FQS wait.
                if args.fqs_interval_ms.is_some()
                    && args.readers == 0
                    && args.idle_threads == 0
                    && args.writers.contains(&1)
                    && chosen.iter().any(|imp| {
                        imp.name != "rcu-lite-noqs" && rcuscale::FQS_PACED.contains(&imp.name)
                    })
                {
                    note(format_args!(
                        "note: with one writer and nothing else registered (no --readers, no \
                         --idle-threads), quick QS leaves a grace period no FQS wait, as on the \
                         kernel's one-CPU system; the seed's idle system is --idle-threads 1"
                    ));
                }
                if !ignoring.is_empty() {
                    note(format_args!(
                        "note: --fqs-interval-ms paces {} only; {} run as without it",
                        rcuscale::FQS_PACED.join(", "),
                        ignoring.join(", ")
                    ));
                }
            }
            let options = rcuscale::Options {
                fqs_interval: args
                    .fqs_interval_ms
                    .map(|ms| Duration::from_secs_f64(ms / 1000.0)),
            };
            // A run that completed no wait measured nothing: a failed run
            // (status 1, through `main`), as the module docs say.
            let outcomes = rcuscale::measure_all(
                &chosen,
                config,
                &writer_counts,
                &options,
                args.rounds as usize,
            )?;
            if args.json {
                serde_json::to_writer_pretty(&mut out, &outcomes)?;
                writeln!(out)?;
            } else {
                rcuscale::write_text(&mut out, &outcomes)?;
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Torture(args) => {
            let mut chosen = choose(torture::implementations(), &args.implementations);
            if args.deferred_only {
                // `all` means every implementation that can run this way; a
                // name given explicitly that cannot is an error.
                let options = torture::Options {
                    deferred_only: true,
                    ..Default::default()
                };
                chosen.retain(|imp| match (imp.make)(&options) {
                    Ok(_) => true,
                    Err(why) if args.implementations.iter().any(|n| n == imp.name) => usage_error(
                        format!("'{}' cannot run with --deferred-only: {why}", imp.name),
                    ),
                    Err(_) => false,
                });
            }
            if args.slow_path {
                let without: Vec<&str> = chosen
                    .iter()
                    .map(|imp| imp.name)
                    .filter(|name| !torture::SLOW_PATH_IMPLEMENTATIONS.contains(name))
                    .collect();
                if !without.is_empty() {
                    usage_error(format!(
                        "--slow-path forces the acquire slow path, which only {} have; {} do not (choose e.g. --impl hazptr)",
                        torture::SLOW_PATH_IMPLEMENTATIONS.join(", "),
                        without.join(", ")
                    ));
                }
            }
            refuse_faults_without_unwinding(args.faults);
            let total = Duration::from_secs_f64(args.duration_s);
            let config = torture::Config {
                readers: args.readers as usize,
                writers: args.writers as usize,
                duration: total,
                slow_path: args.slow_path,
                faults: args.faults,
                deferred_only: args.deferred_only,
                stall_limit: Duration::from_secs_f64(args.stall_limit_s),
            };
            let schedule = if args.sequential {
                torture::Schedule::Sequential
            } else {
                torture::Schedule::Concurrent
            };
            let outcomes = torture::torture_all(&chosen, config, total, schedule);
            if args.json {
                serde_json::to_writer_pretty(&mut out, &outcomes)?;
                writeln!(out)?;
                // The text output says what failed; with --json, stderr does.
                for o in &outcomes {
                    if let Some(why) = o.why_failed() {
                        note(format_args!(
                            "syncbench: FAILURE: torture {}: {why}",
                            o.name
                        ));
                    }
                }
            } else {
                torture::write_text(&mut out, &outcomes)?;
            }
            let failed = outcomes.iter().any(torture::Outcome::failed);
            Ok(if failed {
                ExitCode::FAILURE
            } else {
                ExitCode::SUCCESS
            })
        }
        Command::Advise(args) => {
            let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
            if args.threads as usize > cpus {
                note(format_args!(
                    "syncbench: note: --threads {} is more than the {cpus} CPU(s) this process \
                     may use (its CPU affinity, or its cgroup's CPU quota rounded down: under a \
                     quota the threads may run at once, and all stop once it is spent): the \
                     threads take turns, and one preempted in the middle of a \
                     write or holding a lock holds the others up, which can change the winner; \
                     advice for a program on another machine is best measured there, at its \
                     thread count",
                    args.threads
                ));
            }
            let config = advise::Config::new(
                args.reads_per_write,
                args.threads as usize,
                args.payload_bytes as usize,
                Duration::from_secs_f64(args.duration_s),
                args.rounds as usize,
            );
            let mut progress = crate::progress::Progress::new(
                advise::implementations().len() as u64 * u64::from(args.rounds),
                "advise",
            );
            let advice = advise::advise(config, &mut progress);
            // The bar is gone before the advice, or the error, is printed.
            drop(progress);
            let advice = advice?;
            if args.json {
                serde_json::to_writer_pretty(&mut out, &advice)?;
                writeln!(out)?;
                // The text output says these; with --json, stderr does.
                if let Some(warning) = &advice.warning {
                    note(format_args!("syncbench: warning: {warning}"));
                }
                if advice.recommended.is_none() {
                    note(format_args!(
                        "syncbench: no recommendation: {}",
                        advice.reason
                    ));
                }
            } else {
                advise::write_text(&mut out, &advice)?;
            }
            Ok(if advice.recommended.is_some() {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            })
        }
        Command::Membarrier(args) => match membarrier::run(&args, &mut out) {
            Ok(()) => Ok(ExitCode::SUCCESS),
            Err(membarrier::Failure::Usage(message)) => usage_error(message),
            Err(membarrier::Failure::Run(message)) => Err(message.into()),
        },
        Command::Compare(args) => {
            let load = |path: &PathBuf| -> serde_json::Value {
                let text = std::fs::read_to_string(path).unwrap_or_else(|e| {
                    usage_error(format!("cannot read {}: {e}", path.display()))
                });
                let value: serde_json::Value = serde_json::from_str(&text).unwrap_or_else(|e| {
                    usage_error(format!("{} is not JSON: {e}", path.display()))
                });
                compare::check_results(&path.display().to_string(), &value)
                    .unwrap_or_else(|e| usage_error(e));
                value
            };
            let (old, new) = (load(&args.old), load(&args.new));
            let comparison = compare::compare(&old, &new, args.threshold_pct);
            if args.json {
                serde_json::to_writer_pretty(&mut out, &comparison)?;
                writeln!(out)?;
            } else {
                compare::write_text(&mut out, &comparison, args.all)?;
            }
            let gate = if args.fail_on_regression {
                comparison.gate_failures()
            } else {
                Vec::new()
            };
            for why in &gate {
                note(format_args!("syncbench: --fail-on-regression: {why}"));
            }
            Ok(if !gate.is_empty() {
                ExitCode::FAILURE
            } else {
                ExitCode::SUCCESS
            })
        }
        Command::Report(args) => {
            let profile = if args.full {
                report::Profile::Full
            } else {
                report::Profile::Quick
            };
            let read_from = |path: &std::path::Path| {
                let text = std::fs::read_to_string(path).unwrap_or_else(|e| {
                    usage_error(format!("cannot read {}: {e}", path.display()))
                });
                report::read_back(&text).unwrap_or_else(|e| {
                    usage_error(report::read_back_error(
                        &path.display().to_string(),
                        &text,
                        &e,
                    ))
                })
            };
            let written = match &args.from {
                Some(path) => {
                    // Refused before --out is made or locked; then read
                    // again under the lock on --out (see
                    // `report::write_with`), where a report that finished
                    // into it meanwhile may have replaced the file.
                    read_from(path);
                    report::write_with(&args.out, || read_from(path))?
                }
                None => report::generate(profile, &args.out)?,
            };
            if args.json {
                serde_json::to_writer_pretty(&mut out, &written.results)?;
                writeln!(out)?;
            }
            note(format_args!(
                "syncbench: report written to {}",
                written.markdown.display()
            ));
            if !args.json {
                writeln!(out, "{}", written.markdown.display())?;
            }
            let failed = written.results.failed_runs();
            for run in &failed {
                note(format_args!("syncbench: FAILURE: {run}"));
            }
            Ok(if failed.is_empty() {
                ExitCode::SUCCESS
            } else {
                note(format_args!(
                    "syncbench: {} run(s) failed their checks (marked !!! in the report, left out \
                     of its Choosing rows)",
                    failed.len()
                ));
                ExitCode::FAILURE
            })
        }
    }
}

/// One kind of measurement and its implementations, as `syncbench list` shows them.
#[derive(Debug, Serialize)]
pub struct KindListing {
    /// The kind, in words.
    pub kind: &'static str,
    /// The subcommand that measures it.
    pub command: &'static str,
    /// Its implementations.
    pub implementations: Vec<ImplListing>,
}

/// One implementation in `syncbench list`.
#[derive(Debug, Serialize)]
pub struct ImplListing {
    /// Name on the command line.
    pub name: &'static str,
    /// Ours or a peer.
    pub origin: Origin,
    /// What is measured.
    pub summary: &'static str,
    /// Whether it can run here.
    pub available: bool,
    /// Why not, and how to fix it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unavailable: Option<String>,
}

fn listing<T: ?Sized, O: Default>(list: &[Implementation<T, O>]) -> Vec<ImplListing> {
    list.iter()
        .map(|imp| {
            let availability = imp.availability();
            ImplListing {
                name: imp.name,
                origin: imp.origin,
                summary: imp.summary,
                available: availability.is_ok(),
                unavailable: availability.err().map(|u| u.to_string()),
            }
        })
        .collect()
}

/// Every kind with its implementations.
pub fn list() -> Vec<KindListing> {
    vec![
        KindListing {
            kind: "read-side critical sections",
            command: "refscale",
            implementations: listing(refscale::implementations()),
        },
        KindListing {
            kind: "reader-writer locks",
            command: "locktorture",
            implementations: listing(locktorture::implementations()),
        },
        KindListing {
            kind: "waiting for readers (grace periods)",
            command: "rcuscale",
            implementations: listing(rcuscale::implementations()),
        },
        KindListing {
            kind: "deferred reclamation under torture",
            command: "torture",
            implementations: listing(torture::implementations()),
        },
        KindListing {
            kind: "membarrier serialization under CFS throttling",
            command: "membarrier",
            implementations: membarrier::listing(),
        },
    ]
}

fn write_list(out: &mut impl Write, kinds: &[KindListing]) -> std::io::Result<()> {
    for kind in kinds {
        writeln!(out, "{} (syncbench {}):", kind.kind, kind.command)?;
        let width = kind
            .implementations
            .iter()
            .map(|i| i.name.len())
            .max()
            .unwrap_or(0);
        for imp in &kind.implementations {
            let origin = match imp.origin {
                Origin::Workspace => "ours",
                Origin::Peer => "peer",
                Origin::SelfCheck => "self-check",
            };
            write!(out, "  {:width$}  {origin}  {}", imp.name, imp.summary)?;
            if let Some(why) = &imp.unavailable {
                write!(out, "  [unavailable: {why}]")?;
            }
            writeln!(out)?;
        }
    }
    Ok(())
}

/// The whole-number positional arguments of an example (`cargo run --example
/// NAME -- A B`): each call returns the next one, or `default` once they run
/// out. A malformed one ends the process with status 2 and a message naming
/// the example and the argument.
pub fn example_numbers(example: &'static str) -> impl FnMut(&str, u64) -> u64 {
    let mut args = std::env::args().skip(1);
    move |name, default| match args.next() {
        None => default,
        Some(text) => text.parse().unwrap_or_else(|_| {
            note(format_args!(
                "{example}: {name} must be a whole number, not {text:?}"
            ));
            std::process::exit(2);
        }),
    }
}
