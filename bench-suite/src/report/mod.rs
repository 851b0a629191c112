//! `syncbench report`: run a profile of every measurement and write
//! `report.md`, `report.html`, `plots/*.svg` and `results.json`.
//!
//! Every figure in the markdown comes from the same [`Results`] value that is
//! written to `results.json`, and every table compares contenders measured in
//! the same run, so ratios are honest even on a noisy machine.

pub mod choosing;
pub mod document;
mod files;
pub mod plots;
mod sections;

pub use sections::document;

use crate::machine::{Build, Machine};
use crate::progress::Progress;
use crate::{locktorture, membarrier, rcuscale, refscale, torture};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// How much to measure.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Profile {
    /// Under 3 minutes on 2 cores.
    Quick,
    /// More threads, runs and time.
    Full,
}

impl Profile {
    /// The profile's name, as on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Profile::Quick => "quick",
            Profile::Full => "full",
        }
    }

    fn refscale_threads(self) -> &'static [usize] {
        match self {
            Profile::Quick => &[1, 2],
            Profile::Full => &[1, 2, 8],
        }
    }

    fn refscale_config(self, threads: usize) -> refscale::Config {
        match self {
            // A run of 1M sections lasts 1-2 ms for the fast read sides:
            // short enough that a thread's start-up transient or one host
            // hiccup moved single runs by up to 5x on the 2-vCPU VM. With 5M
            // about one run in five is still off by 1.5x (a slow stretch of
            // the host), so the median is of seven, and the implementations
            // take turns run by run so that such a stretch is not all one
            // implementation's runs.
            Profile::Quick => refscale::Config {
                threads,
                iterations: 5_000_000,
                runs: 7,
            },
            Profile::Full => refscale::Config {
                threads,
                iterations: 20_000_000,
                runs: 7,
            },
        }
    }

    /// (writers, readers) pairs: one not oversubscribed, one write-heavy, and
    /// read-mostly ones with many more threads than cores.
    fn locktorture_mixes(self) -> &'static [(usize, usize)] {
        match self {
            Profile::Quick => &[(1, 1), (4, 1), (4, 16)],
            Profile::Full => &[(1, 1), (4, 1), (4, 16), (8, 32)],
        }
    }

    /// Simulated seconds per membarrier sweep run.
    fn membarrier_sim_seconds(self) -> f64 {
        match self {
            Profile::Quick => 5.0,
            Profile::Full => 20.0,
        }
    }

    /// Runs of [`QUICK_QS_WAITS`] waits each side of the quick-QS comparison
    /// gets, alternating (the seed's table: 10 runs).
    fn quick_qs_runs(self) -> usize {
        match self {
            Profile::Quick => 5,
            Profile::Full => 10,
        }
    }

    /// (writers, readers, idle threads) for rcuscale: one writer alone, then
    /// many concurrent writers whose waits can share work; and both again
    /// with 256 registered idle threads, which make every scan expensive as
    /// the seed's many-CPU machines do.
    fn rcuscale_mixes(self) -> &'static [(usize, usize, usize)] {
        match self {
            Profile::Quick => &[(1, 1, 0), (4, 1, 0), (16, 1, 0), (1, 1, 256), (16, 1, 256)],
            Profile::Full => &[
                (1, 0, 0),
                (1, 1, 0),
                (2, 1, 0),
                (4, 1, 0),
                (8, 1, 0),
                (16, 1, 0),
                (16, 4, 0),
                (1, 1, 256),
                (4, 1, 256),
                (16, 1, 256),
            ],
        }
    }

    /// How long each rcuscale run lasts; every implementation runs once per
    /// round ([`Profile::rcuscale_rounds`]).
    fn rcuscale_duration(self) -> Duration {
        match self {
            Profile::Quick => Duration::from_millis(400),
            Profile::Full => Duration::from_secs(1),
        }
    }

    /// Rounds of every rcuscale mix: the implementations take turns within
    /// a round, and the table gives the median round, so one slow stretch of
    /// the machine cannot decide a comparison.
    fn rcuscale_rounds(self) -> usize {
        match self {
            Profile::Quick => 3,
            Profile::Full => 5,
        }
    }

    /// Rounds of every locktorture mix and of the deferred-only torture
    /// pass: each round runs every contender once for the run's duration
    /// over the rounds, in an order rotated from round to round, so the
    /// report takes about as long as one run each did, and the *Choosing*
    /// rows they decide rank on the median round and pair rounds turn by
    /// turn.
    fn torture_rounds(self) -> usize {
        match self {
            Profile::Quick => 3,
            Profile::Full => 5,
        }
    }

    fn torture_config(self) -> torture::Config {
        match self {
            Profile::Quick => torture::Config {
                readers: 4,
                writers: 2,
                duration: Duration::from_secs(2),
                slow_path: false,
                faults: false,
                deferred_only: false,
                stall_limit: torture::Config::STALL_LIMIT,
            },
            Profile::Full => torture::Config {
                readers: 8,
                writers: 2,
                duration: Duration::from_secs(10),
                slow_path: false,
                faults: false,
                deferred_only: false,
                stall_limit: torture::Config::STALL_LIMIT,
            },
        }
    }

    /// The bulk-freeing pass: the torture mix again, with writers that
    /// only hand objects to deferred reclamation (never wait for readers),
    /// in [`Profile::torture_rounds`] rounds that together last one torture
    /// run.
    fn deferred_free_config(self) -> (torture::Config, torture::Options) {
        let config = self.torture_config();
        let deferred = torture::Config {
            deferred_only: true,
            duration: config.duration / self.torture_rounds() as u32,
            ..config
        };
        let options = torture::Options {
            deferred_only: true,
            ..Default::default()
        };
        (deferred, options)
    }

    fn locktorture_duration(self) -> Duration {
        match self {
            Profile::Quick => Duration::from_secs(2),
            Profile::Full => Duration::from_secs(5),
        }
    }
}

/// Everything a report run measured.
#[derive(Debug, Serialize, Deserialize)]
pub struct Results {
    /// The profile that ran.
    pub profile: Profile,
    /// Where it ran.
    pub machine: Machine,
    /// What measured it. `None` in a `results.json` from before it was
    /// recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub build: Option<Build>,
    /// Wall time of the whole run, seconds.
    pub wall_s: f64,
    /// Read-side cost per thread count.
    pub refscale: Vec<refscale::Outcome>,
    /// Lock contention per mix.
    pub locktorture: Vec<locktorture::Outcome>,
    /// Waiting for readers per mix.
    pub rcuscale: Vec<rcuscale::Outcome>,
    /// Use-after-free torture smoke runs.
    pub torture: Vec<torture::Outcome>,
    /// The same harness with writers that only hand objects to deferred
    /// reclamation: bulk freeing from a background thread.
    pub deferred_free: Vec<torture::Outcome>,
    /// Synchronize latency with the driver's quick quiescent state on and off,
    /// fixed-interval FQS ([`QUICK_QS_FQS`]), one writer, no readers: runs of
    /// [`QUICK_QS_WAITS`] waits, alternating between the two.
    pub quick_qs: Vec<rcuscale::Outcome>,
    /// Simulated targeted membarrier: per-CPU vs global mutex across CPU counts.
    pub membarrier_sweep: Vec<membarrier::SweepRow>,
    /// How often a cgroup CPU quota stopped the process during the run
    /// ([`crate::throttle`]); `None` where no `cpu.stat` could be read, and
    /// in a `results.json` from before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub throttled: Option<crate::throttle::Throttled>,
    /// Contenders the run could not measure, and why (a peer missing from
    /// the build that ran). Runs from before it was recorded read as none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unavailable: Vec<NotMeasured>,
    /// Read back from an earlier run's `results.json` ([`read_back`]), not
    /// measured by this build: the report says so. Not written to the JSON.
    #[serde(skip)]
    pub read_back: bool,
}

/// A contender that a report run could not measure.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NotMeasured {
    /// The kind of measurement (`refscale`, `locktorture`, `rcuscale`,
    /// `torture`), as the command is named.
    pub kind: String,
    /// The implementation.
    pub name: String,
    /// Why it could not run, and how to make it available.
    pub why: String,
}

/// Every implementation of the report's kinds that cannot run here, and why.
pub fn not_measured() -> Vec<NotMeasured> {
    fn of<T: ?Sized, O: Default>(
        kind: &str,
        list: &[crate::registry::Implementation<T, O>],
    ) -> Vec<NotMeasured> {
        list.iter()
            .filter_map(|i| {
                i.availability().err().map(|why| NotMeasured {
                    kind: kind.to_owned(),
                    name: i.name.to_owned(),
                    why: why.to_string(),
                })
            })
            .collect()
    }
    let mut out = of("refscale", refscale::implementations());
    out.extend(of("locktorture", locktorture::implementations()));
    out.extend(of("rcuscale", rcuscale::implementations()));
    out.extend(of("torture", torture::implementations()));
    out
}

/// A torture or locktorture run that failed its checks.
#[derive(Clone, Debug, PartialEq)]
pub struct FailedRun {
    /// Which run: `torture`, `torture --deferred-only` or `locktorture 4w/16r`.
    pub run: String,
    /// The implementation.
    pub name: String,
    /// What failed: errors, exclusion failures, a hang or a panic.
    pub why: String,
}

impl std::fmt::Display for FailedRun {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}: {}", self.run, self.name, self.why)
    }
}

/// A table cell for a count of failed checks and a run's failure: `!!!`
/// marks either, and the failure (a hang, a panic) is spelled out, since
/// it leaves the count at 0 or 1.
fn checks_cell(count: u64, failure: Option<&str>) -> String {
    match failure {
        Some(why) => format!("{count} !!! ({why})"),
        None if count > 0 => format!("{count} !!!"),
        None => count.to_string(),
    }
}

/// The FQS interval of the quick-QS comparison: the kernel's default at
/// HZ=1000 (the seed's setting).
pub const QUICK_QS_FQS: Duration = Duration::from_millis(3);

/// The implementations the quick-QS comparison runs: switch on, switch off.
pub const QUICK_QS_PAIR: [&str; 2] = ["rcu-lite", "rcu-lite-noqs"];

/// `synchronize_rcu()` calls per quick-QS run, as in the seed's table.
pub const QUICK_QS_WAITS: u64 = 100;

impl Results {
    /// Every torture and locktorture run that failed its checks: errors,
    /// exclusion failures, a hang or a panic.
    pub fn failed_runs(&self) -> Vec<FailedRun> {
        let mut out = Vec::new();
        for (run, outcomes) in [
            ("torture", &self.torture),
            ("torture --deferred-only", &self.deferred_free),
        ] {
            out.extend(outcomes.iter().filter_map(|o| {
                Some(FailedRun {
                    run: run.to_owned(),
                    name: o.name.clone(),
                    why: o.why_failed()?,
                })
            }));
        }
        out.extend(self.locktorture.iter().filter_map(|o| {
            Some(FailedRun {
                run: format!("locktorture {}w/{}r", o.writers, o.readers),
                name: o.lock.clone(),
                why: o.why_failed()?,
            })
        }));
        out
    }

    /// Whether any torture or locktorture run failed its checks.
    pub fn any_failure(&self) -> bool {
        !self.failed_runs().is_empty()
    }
}

/// What [`generate`] wrote.
pub struct Written {
    /// The measured figures.
    pub results: Results,
    /// Path of `report.md`.
    pub markdown: PathBuf,
    /// Path of `report.html`.
    pub html: PathBuf,
    /// Path of `results.json`.
    pub json: PathBuf,
}

/// Runs `profile` and writes `report.md`, `report.html`, `plots/*.svg` and
/// `results.json` into `out`. An `out` that cannot hold them is refused
/// before the minutes of measuring.
///
/// If the report cannot be written after all (a disk that filled up
/// meanwhile), the measurements are not lost: they go to
/// `syncbench-results-PID.json` in the temporary folder, and the error
/// names it, for `report --from`.
pub fn generate(profile: Profile, out: &Path) -> std::io::Result<Written> {
    create_folders(out)?;
    // Held until the files are renamed: another report into `out` is
    // refused meanwhile (see `files::FolderLock`).
    let _lock = files::lock_folder(out)?;
    if let Some(free) = free_bytes(out).filter(|&free| free < REPORT_ROOM) {
        crate::console::note(format_args!(
            "warning: the filesystem of {} has {} KiB free, and a report's files take about \
             {} KiB, twice that while they replace an earlier report's: free some space or \
             choose another --out before the measuring ends (if the files cannot be written \
             then, the measurements are saved in {})",
            out.display(),
            free / 1024,
            REPORT_SIZE / 1024,
            std::env::temp_dir().display()
        ));
    }
    let results = measure(profile)?;
    write_keeping_the_measurements(results, out)
}

/// [`write()`], and where it fails, the measurements saved to
/// `syncbench-results-PID.json` in the temporary folder, named in the error.
fn write_keeping_the_measurements(results: Results, out: &Path) -> std::io::Result<Written> {
    let saved = serde_json::to_vec_pretty(&results).map_err(std::io::Error::other)?;
    // The folders again: one removed while the report was measured is made
    // anew.
    create_folders(out)
        .and_then(|()| write_locked(results, out))
        .map_err(|e| {
            let rescue = match save_in_the_temporary_folder(&saved) {
                Ok(kept) => format!(
                    "the measurements were saved to {kept}: `syncbench report --from {kept} --out \
                 FOLDER` writes the report from them",
                    kept = kept.display()
                ),
                Err(also) => format!(
                    "and saving the measurements in {} failed too ({also}): they are lost",
                    std::env::temp_dir().display()
                ),
            };
            std::io::Error::new(e.kind(), format!("{e}; {rescue}"))
        })
}

/// Writes `bytes` to a new file `syncbench-results-PID[-N].json` in the
/// temporary folder, never over an existing file (nor through a link
/// someone planted there), and returns its path.
fn save_in_the_temporary_folder(bytes: &[u8]) -> std::io::Result<PathBuf> {
    use std::io::Write as _;
    let pid = std::process::id();
    let mut last = None;
    for n in 0..10 {
        let name = match n {
            0 => format!("syncbench-results-{pid}.json"),
            n => format!("syncbench-results-{pid}-{n}.json"),
        };
        let path = std::env::temp_dir().join(name);
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
        {
            Ok(mut file) => {
                return match file.write_all(bytes) {
                    Ok(()) => Ok(path),
                    Err(e) => {
                        // A write that failed part-way (the temporary
                        // folder's disk is full too) would leave truncated
                        // JSON under the name a rescue goes by.
                        drop(file);
                        let _ = std::fs::remove_file(&path);
                        Err(e)
                    }
                };
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => last = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(last.expect("ten names tried"))
}

/// About what a report's files take (docs/reference-report's, a full
/// profile's, take 360 KiB).
const REPORT_SIZE: u64 = 400 * 1024;

/// Room to leave for a report's files: twice their size, since each is
/// staged beside the earlier report's file it replaces.
const REPORT_ROOM: u64 = 2 * REPORT_SIZE;

/// The bytes an unprivileged writer may still use on the filesystem of
/// `folder` (`statvfs`'s `f_bavail` blocks of `f_frsize`), or `None` where
/// it cannot tell.
fn free_bytes(folder: &Path) -> Option<u64> {
    use std::os::unix::ffi::OsStrExt as _;
    let path = std::ffi::CString::new(folder.as_os_str().as_bytes()).ok()?;
    // SAFETY: a zeroed `statvfs` is a valid value of the plain C struct,
    // which the call fills in.
    let mut stats: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: a NUL-terminated path and a writable `statvfs`.
    if unsafe { libc::statvfs(path.as_ptr(), &mut stats) } != 0 {
        return None;
    }
    #[allow(clippy::useless_conversion)] // u32 or u64, by target
    Some(u64::from(stats.f_bavail).saturating_mul(u64::from(stats.f_frsize)))
}

/// Creates `out` and `out/plots`, and checks that files can be created in
/// both (a folder that exists is not enough: it may be read-only); the
/// error names the folder.
fn create_folders(out: &Path) -> std::io::Result<()> {
    let plots = out.join("plots");
    std::fs::create_dir_all(&plots).map_err(|e| {
        std::io::Error::new(
            e.kind(),
            format!("cannot create the folder {}: {e}", plots.display()),
        )
    })?;
    for folder in [out, plots.as_path()] {
        files::probe(folder).map_err(|e| {
            std::io::Error::new(
                e.kind(),
                format!("cannot write into the folder {}: {e}", folder.display()),
            )
        })?;
    }
    Ok(())
}

/// The report's markdown, in `out`.
const MARKDOWN: &str = "report.md";
/// The report's page, in `out`.
const HTML: &str = "report.html";
/// The measured figures, in `out`: what `report --from` reads back.
const JSON: &str = "results.json";

/// Writes the files of a report of `results` into `out`, all or nothing.
/// Every error names the path it is about.
///
/// Every file is first written to a temporary file beside it
/// (`temporary_path`), and only once all of them are written are they
/// renamed onto the report's files. So a write that fails (a full disk, a
/// directory in the way) leaves the previous report as it was, and no
/// temporary file behind. A termination signal (Ctrl-C, `kill`, a closed
/// terminal) that arrives meanwhile ends the process only once every file
/// is renamed, or every temporary removed (see `files`). (A process killed
/// with `SIGKILL` while staging leaves the previous report as it was but
/// may leave hidden temporaries named after its process id; killed so
/// during the renames, which take microseconds, it leaves the files
/// renamed so far new and the rest old.)
///
/// A rename can still fail part-way, though rarely: every temporary was
/// just written into its destination's own folder, and a destination that
/// is a directory is refused before anything is renamed. The files renamed
/// before the failure are then new and the rest old, and the remaining
/// temporaries are removed. `results.json` is renamed first, so it is then
/// always the new one, and `syncbench report --from out/results.json --out
/// out` rewrites the rest from it.
///
/// Another report being written into `out` at the time (a `report` still
/// measuring, or another `write`) is refused with an error that says so
/// (see `files::FolderLock`).
pub fn write(results: Results, out: &Path) -> std::io::Result<Written> {
    write_with(out, || results)
}

/// [`write()`] of the results that `results` gives once the lock on `out`
/// is held: `report --from` reads its results.json there, so that a report
/// that finished into `out` meanwhile is not overwritten by the older
/// results read before it (`report --from out/results.json --out out`).
pub fn write_with(out: &Path, results: impl FnOnce() -> Results) -> std::io::Result<Written> {
    create_folders(out)?;
    let _lock = files::lock_folder(out)?;
    write_locked(results(), out)
}

/// [`write()`] into folders just made, under a lock on `out` that the
/// caller holds.
fn write_locked(results: Results, out: &Path) -> std::io::Result<Written> {
    let files = rendered(&results, out)?;
    files::write_all(&files)?;
    Ok(Written {
        results,
        markdown: out.join(MARKDOWN),
        html: out.join(HTML),
        json: out.join(JSON),
    })
}

/// Every file of the report of `results` in `out`, with its contents, in
/// the order they are renamed into place.
///
/// `results.json` comes first: it holds the measurements (minutes of them),
/// and every other file is rendered from it, so a rename failing part-way
/// loses nothing that `report --from` cannot rewrite. Renamed last, it
/// would stay the old one next to new renderings, and `report --from` of
/// it would bring back the old report and drop the new measurements. The
/// plots come before the pages that show them.
fn rendered(results: &Results, out: &Path) -> std::io::Result<Vec<(PathBuf, Vec<u8>)>> {
    let doc = document(results);
    let json = serde_json::to_string_pretty(results).map_err(std::io::Error::other)?;
    let mut files = vec![(out.join(JSON), json.into_bytes())];
    files.extend(
        doc.plots()
            .map(|(file, svg)| (out.join(file), svg.as_bytes().to_vec())),
    );
    files.push((out.join(MARKDOWN), doc.to_markdown().into_bytes()));
    files.push((out.join(HTML), doc.to_html().into_bytes()));
    Ok(files)
}

/// Runs every measurement of `profile`. A thread the OS refuses ends it
/// with an error naming the thread, except in the torture runs, whose
/// outcome records it as the run's failure.
pub fn measure(profile: Profile) -> std::io::Result<Results> {
    let began = Instant::now();
    let throttled_before = crate::throttle::read();
    let machine = Machine::current();
    let readers: Vec<_> = refscale::implementations()
        .iter()
        .filter(|i| i.availability().is_ok())
        .collect();
    let locks: Vec<_> = locktorture::implementations()
        .iter()
        .filter(|i| i.availability().is_ok())
        .collect();
    let waiters: Vec<_> = rcuscale::implementations()
        .iter()
        .filter(|i| i.availability().is_ok())
        .collect();
    let tortured: Vec<_> = torture::implementations()
        .iter()
        .filter(|i| i.origin != crate::registry::Origin::SelfCheck && i.availability().is_ok())
        .collect();
    let mixes = profile.locktorture_mixes();
    let quick_qs: Vec<_> = QUICK_QS_PAIR
        .iter()
        .filter_map(|name| crate::registry::find(rcuscale::implementations(), name))
        .filter(|i| i.availability().is_ok())
        .collect();
    let sweep_units = membarrier::SWEEP_CPUS.len() * membarrier_sim::sim::Policy::ALL.len();
    let refscale_runs: usize = profile
        .refscale_threads()
        .iter()
        .map(|&threads| profile.refscale_config(threads).runs)
        .sum();
    let rounds = profile.torture_rounds();
    let units = refscale_runs * readers.len()
        + mixes.len() * locks.len() * rounds
        + profile.rcuscale_mixes().len() * waiters.len() * profile.rcuscale_rounds()
        + profile.quick_qs_runs() * quick_qs.len()
        + sweep_units
        + tortured.len() * (1 + rounds);
    let mut progress = Progress::new(units as u64, "report");

    let mut refscale_out = Vec::new();
    for &threads in profile.refscale_threads() {
        let config = profile.refscale_config(threads);
        refscale_out.extend(refscale::measure_in_turns(&readers, config, &mut progress)?);
    }

    let mut torture_out = Vec::new();
    for &(writers, readers) in mixes {
        let config = locktorture::Config {
            writers,
            readers,
            duration: profile.locktorture_duration() / rounds as u32,
            stat_interval: None,
            write_hold: locktorture::Config::WRITE_HOLD,
            read_hold: locktorture::Config::READ_HOLD,
            faults: false,
            stall_limit: locktorture::Config::STALL_LIMIT,
        };
        // No output is written during the run: only a refused thread fails it.
        let runs = crate::turns::try_in_turns(locks.len(), rounds, |i| {
            let imp = locks[i];
            let mut quiet = Progress::new(config.duration.as_millis() as u64, imp.name);
            let outcome = locktorture::torture(imp, config, &mut quiet, None)?;
            progress.set_label(imp.name);
            progress.inc(1);
            Ok::<_, std::io::Error>(outcome)
        })?;
        torture_out.extend(runs.into_iter().map(locktorture::merge_rounds));
    }

    let mut rcuscale_out = Vec::new();
    for &(writers, readers, idle_threads) in profile.rcuscale_mixes() {
        let config = rcuscale::Config {
            writers,
            readers,
            idle_threads,
            duration: profile.rcuscale_duration(),
            waits_per_writer: None,
        };
        let rounds = profile.rcuscale_rounds();
        let mut quiet = Progress::new(
            (waiters.len() * rounds) as u64 * config.duration.as_millis() as u64,
            "rcuscale",
        );
        progress.set_label(&format!("rcuscale {writers}w/{readers}r/{idle_threads}i"));
        rcuscale_out.extend(
            rcuscale::measure_rounds(
                &waiters,
                config,
                &rcuscale::Options::default(),
                rounds,
                &mut quiet,
            )
            .map_err(refused_only)?,
        );
        progress.inc((waiters.len() * rounds) as u64);
    }

    let mut quick_qs_out = Vec::new();
    let qs_config = rcuscale::Config {
        writers: 1,
        readers: 0,
        // The seed's idle system has idle CPUs: one idle registered thread
        // stands for them. Alone, the writer is the kernel's one-CPU
        // system, where quick QS leaves no FQS wait at all.
        idle_threads: 1,
        // Only sizes the (hidden) progress bar: the runs count waits.
        duration: QUICK_QS_FQS * QUICK_QS_WAITS as u32,
        waits_per_writer: Some(QUICK_QS_WAITS),
    };
    let qs_options = rcuscale::Options {
        fqs_interval: Some(QUICK_QS_FQS),
    };
    // Alternating on, off, on, ...: a slow stretch of the machine falls on
    // both sides rather than on one.
    for _ in 0..profile.quick_qs_runs() {
        for imp in &quick_qs {
            let mut quiet = Progress::new(qs_config.duration.as_millis() as u64, imp.name);
            quick_qs_out.push(
                rcuscale::measure_with(imp, qs_config, &qs_options, &mut quiet)
                    .map_err(refused_only)?,
            );
            progress.set_label(imp.name);
            progress.inc(1);
        }
    }

    let sweep_args = membarrier::MembarrierArgs::for_sweep(profile.membarrier_sim_seconds());
    let membarrier_sweep = membarrier::sweep_rows(&sweep_args, &mut progress)
        .expect("the default sweep configuration is valid");

    let mut uaf_out = Vec::new();
    let config = profile.torture_config();
    for imp in &tortured {
        let mut quiet = Progress::new(config.duration.as_millis() as u64, imp.name);
        uaf_out.push(torture::torture(imp, config, &mut quiet));
        progress.set_label(imp.name);
        progress.inc(1);
    }

    let (deferred, deferred_options) = profile.deferred_free_config();
    let deferring: Vec<_> = tortured
        .iter()
        .filter(|imp| (imp.make)(&deferred_options).is_ok())
        .collect();
    // Those that cannot only defer count as done.
    progress.inc(((tortured.len() - deferring.len()) * rounds) as u64);
    let deferred_runs = crate::turns::in_turns(deferring.len(), rounds, |i| {
        let imp = deferring[i];
        let mut quiet = Progress::new(deferred.duration.as_millis() as u64, imp.name);
        let outcome = torture::torture(imp, deferred, &mut quiet);
        progress.set_label(imp.name);
        progress.inc(1);
        outcome
    });
    let deferred_out: Vec<_> = deferred_runs
        .into_iter()
        .map(torture::merge_rounds)
        .collect();

    Ok(Results {
        profile,
        machine,
        build: Some(Build::current()),
        wall_s: began.elapsed().as_secs_f64(),
        refscale: refscale_out,
        locktorture: torture_out,
        rcuscale: rcuscale_out,
        torture: uaf_out,
        deferred_free: deferred_out,
        quick_qs: quick_qs_out,
        membarrier_sweep,
        throttled: throttled_before
            .zip(crate::throttle::read())
            .map(|(before, after)| after.since(before).into()),
        unavailable: not_measured(),
        read_back: false,
    })
}

/// The error of one of the report's rcuscale runs: every mix has writers,
/// each of which completes a wait, so only a thread the OS refused.
fn refused_only(failure: rcuscale::Failure) -> std::io::Error {
    match failure {
        rcuscale::Failure::ThreadRefused(refused) => refused.into(),
        rcuscale::Failure::NoWaits(e) => panic!("every writer completes a wait: {e}"),
    }
}

/// Reads an earlier run's `results.json` back, to write its report again
/// with this build's tables and *Choosing* picks (`syncbench report
/// --from`). Fields added since that run was made read as absent (the
/// machine's CPU family and SeqCst fence cost).
pub fn read_back(json: &str) -> serde_json::Result<Results> {
    let mut results: Results = serde_json::from_str(json)?;
    results.read_back = true;
    Ok(results)
}

/// Why `text` (the file `name`) cannot be read back, in words. A null where
/// a figure belongs gets its own message, naming the line: JSON has no NaN,
/// so a run that measured NaN wrote null there (runs of this build refuse
/// to, see `rcuscale::NoWaits`; older ones did not).
pub fn read_back_error(name: &str, text: &str, error: &serde_json::Error) -> String {
    let line = text
        .lines()
        .nth(error.line().saturating_sub(1))
        .unwrap_or("")
        .trim();
    if error.to_string().starts_with("invalid type: null") {
        format!(
            "{name} cannot be written again: line {} (`{line}`) holds null where a figure \
             belongs: the run that wrote it measured NaN there (a measurement that completed \
             nothing)",
            error.line()
        )
    } else {
        format!("{name} is not a syncbench report's results.json: {error}")
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::files::temporary_path;
    use super::sections::{paired_ratio, stalls_cell};
    use super::*;
    use crate::stats;

    #[test]
    fn vs_best_pairs_runs_of_the_same_turn() {
        let outcome = |name: &str, runs_ns: Vec<f64>| refscale::Outcome {
            name: name.into(),
            threads: 1,
            ns_per_op: stats::median(&runs_ns),
            iterations: 1,
            runs_ns,
        };
        // Turn 3 was slow for both; turn 2 for the slower one alone.
        let best = outcome("fast", vec![1.0, 1.0, 2.0]);
        let slow = outcome("slow", vec![2.0, 4.0, 4.0]);
        assert_eq!(slow.ns_per_op / best.ns_per_op, 4.0);
        assert_eq!(paired_ratio(&slow, &best), 2.0);
        assert_eq!(paired_ratio(&best, &best), 1.0);
    }

    #[test]
    fn the_tables_show_the_median_round_and_every_round() {
        let mut results = sample();
        let lock = |writes: u64, fail: u64| locktorture::Outcome {
            writes: counts(writes, writes / 4, writes / 4),
            fail,
            write_fail: fail,
            ..results.locktorture[0].clone()
        };
        // Rounds of 800, 400 and 1200 writes in 2 s; the second failed once,
        // and starved a reader, where the median round (the first) did not.
        let starving = locktorture::Outcome {
            reads: counts(1600, 110, 40),
            ..lock(400, 1)
        };
        results.locktorture = vec![
            locktorture::merge_rounds(vec![lock(800, 0), starving, lock(1200, 0)]),
            locktorture::Outcome {
                lock: "lock-b".into(),
                ..lock(1200, 0)
            },
        ];
        // Each round's writers use 0.6 s of CPU of the 2.5 s the threads
        // used, and the other threads 0.3 s.
        let deferred = |replaced: u64, unreclaimed_max: u64| torture::Outcome {
            replaced,
            unreclaimed_max,
            cpu: Some(torture::CpuSplit {
                readers_s: 1.6,
                writers_s: 0.6,
                others_s: Some(0.3),
            }),
            ..results.torture[0].clone()
        };
        results.deferred_free = vec![torture::merge_rounds(vec![
            deferred(3_000_000, 90),
            deferred(2_000_000, 700),
            deferred(5_000_000, 60),
        ])];
        let md = document(&results).to_markdown();
        assert!(
            md.contains(
                "| lock-a | 4 | 16 | 800 | 1600 | 400, 200, 600 | 0.67x | 1.00x | 2.000 | readers 1/3 \
                 | writers 3/3 | 1 !!! |"
            ),
            "{md}"
        );
        // A single run names the sides it flagged, with no count.
        assert!(
            md.contains(
                "| lock-b | 4 | 16 | 1200 | 1600 | 600 | 1.00x | 1.00x | 3.000 | no | writers |"
            ),
            "{md}"
        );
        assert!(md.contains("Each mix ran in 3 rounds"), "{md}");
        assert!(
            md.contains(
                "| tortured | 4 | 2 | 1500000 | 1.50M, 1.00M, 2.50M | 1.00x | 24% | 200 | 100 | 700 \
                 | 100 | 0 |"
            ),
            "{md}"
        );
        assert!(md.contains("Each implementation ran in 3 rounds"), "{md}");
    }

    pub(crate) fn counts(total: u64, max: u64, min: u64) -> locktorture::Counts {
        locktorture::Counts { total, max, min }
    }

    /// A small, fixed set of results the rendering tests check against.
    pub(crate) fn sample() -> Results {
        Results {
            profile: Profile::Quick,
            machine: Machine {
                cpu: "Test CPU".into(),
                cpu_id: Some("family 26 model 2 stepping 1".into()),
                cores: 2,
                online_cpus: Some(2),
                kernel: "6.0".into(),
                rustc: "rustc 1.95.0".into(),
                fence_mode: "membarrier".into(),
                liburcu_memb_fences: None,
                heavy_fence: crate::machine::HeavyFenceCost {
                    idle_us: 0.36,
                    busy_us: Some(8.4),
                },
                full_fence_ns: Some(5.0),
            },
            build: Some(Build {
                version: "0.1.0".into(),
                commit: Some("0123456789ab".into()),
                opt_level: "3".into(),
                debug_assertions: false,
                target: "x86_64-unknown-linux-gnu".into(),
                peers: vec!["crossbeam-epoch 0.9.18".into(), "parking_lot 0.13.0".into()],
                liburcu: Some("0.13.2".into()),
            }),
            wall_s: 12.0,
            refscale: vec![
                refscale::Outcome {
                    name: "fast".into(),
                    threads: 1,
                    ns_per_op: 2.0,
                    iterations: 10,
                    runs_ns: vec![2.0],
                },
                refscale::Outcome {
                    name: "slow".into(),
                    threads: 1,
                    ns_per_op: 5.0,
                    iterations: 10,
                    runs_ns: vec![5.0],
                },
            ],
            locktorture: vec![locktorture::Outcome {
                lock: "lock-a".into(),
                writers: 4,
                readers: 16,
                duration_s: 2.0,
                writes: counts(400, 110, 90),
                reads: counts(1600, 110, 90),
                writes_served_per_ms: Some(locktorture::ServedRate {
                    max: 10.0,
                    min: 4.0,
                }),
                reads_served_per_ms: None,
                fail: 0,
                write_fail: 0,
                read_fail: 0,
                faults: None,
                failure: None,
                writes_per_s_rounds: Vec::new(),
                starved_rounds: Vec::new(),
            }],
            rcuscale: vec![rcuscale::Outcome {
                name: "waiter".into(),
                writers: 16,
                readers: 1,
                idle_threads: 0,
                gps: 1000,
                per_gp_us: 12.5,
                latency_us: rcuscale::Latency {
                    mean: 200.0,
                    p50: 150.0,
                    p99: 900.0,
                    max: 1500.0,
                    time_weighted_p50: Some(1200.0),
                },
                reads: 10,
                duration_s: 1.0,
                per_gp_rounds_us: vec![12.0, 12.5, 14.25],
                fqs_interval_ms: None,
                fqs: None,
                cpu: Some(rcuscale::CpuPerWait {
                    writers_us: 3.25,
                    others_us: 0.5,
                    others_timed_window: true,
                }),
                timed_with_every_reader_in: true,
            }],
            torture: vec![torture::Outcome {
                name: "tortured".into(),
                readers: 4,
                writers: 2,
                slow_path: false,
                deferred_only: false,
                duration_s: 2.0,
                reads: 100,
                replaced: 50,
                errors: 0,
                unreclaimed_max: 7,
                unreclaimed_halves: [7, 7],
                write_max_ms: 0.5,
                rss_max_kib: None,
                faults: None,
                failure: None,
                replaced_per_s_rounds: Vec::new(),
                cpu: None,
            }],
            deferred_free: Vec::new(),
            // Two runs a side, alternating as the report runs them, with the
            // engine's FQS counts (one wait per grace period, and two).
            quick_qs: [
                quick_qs_run("rcu-lite", 3100.0, 3200.0, 3300.0),
                quick_qs_run("rcu-lite-noqs", 6200.0, 6400.0, 6600.0),
                quick_qs_run("rcu-lite", 3120.0, 3250.0, 4000.0),
                quick_qs_run("rcu-lite-noqs", 6240.0, 6500.0, 10000.0),
            ]
            .into_iter()
            .map(|mut run| {
                let per_gp = if run.name == "rcu-lite" { 1 } else { 2 };
                run.fqs = Some(rcuscale::FqsCounts {
                    grace_periods: run.gps,
                    fqs_waits: per_gp * run.gps,
                });
                run
            })
            .collect(),
            membarrier_sweep: membarrier::sweep_rows(
                &membarrier::MembarrierArgs::for_sweep(0.02),
                &mut Progress::new(1, "test"),
            )
            .unwrap(),
            throttled: None,
            unavailable: Vec::new(),
            read_back: false,
        }
    }

    /// One quick-QS run of 100 waits.
    pub(crate) fn quick_qs_run(name: &str, mean: f64, p99: f64, max: f64) -> rcuscale::Outcome {
        rcuscale::Outcome {
            name: name.into(),
            writers: 1,
            readers: 0,
            idle_threads: 0,
            gps: 100,
            per_gp_us: mean,
            latency_us: rcuscale::Latency {
                mean,
                p50: mean,
                p99,
                max,
                time_weighted_p50: Some(max),
            },
            reads: 0,
            duration_s: mean * 100.0 / 1e6,
            per_gp_rounds_us: vec![mean],
            fqs_interval_ms: None,
            fqs: None,
            cpu: None,
            timed_with_every_reader_in: true,
        }
    }

    #[test]
    fn results_read_back_give_the_same_report_said_to_be_read_back() {
        let results = sample();
        let json = serde_json::to_string(&results).unwrap();
        let again = read_back(&json).unwrap();
        assert!(again.read_back && !results.read_back);
        assert_eq!(serde_json::to_string(&again).unwrap(), json);
        let (before, after) = (document(&results), document(&again));
        assert_eq!(after.intro[..before.intro.len()], before.intro[..]);
        assert!(
            after
                .intro
                .last()
                .unwrap()
                .contains("syncbench report --from")
        );
        assert_eq!(
            before.to_markdown().replace("\n\n## ", "\n\n"),
            after
                .to_markdown()
                .replace(&format!("{}\n\n", after.intro.last().unwrap()), "")
                .replace("\n\n## ", "\n\n")
        );
        // A run from before the CPU family and the SeqCst fence were recorded.
        let mut older: serde_json::Value = serde_json::from_str(&json).unwrap();
        let machine = older["machine"].as_object_mut().unwrap();
        machine.remove("cpu_id");
        machine.remove("full_fence_ns");
        let older = read_back(&older.to_string()).unwrap();
        assert!(older.machine.cpu_id.is_none() && older.machine.full_fence_ns.is_none());
        assert!(read_back(r#"{"refscale": []}"#).is_err());
    }

    #[test]
    fn a_hang_or_panic_shows_in_the_tables_and_sets_no_baseline() {
        let mut results = sample();
        // lock-b hung with more acquisitions than lock-a: no exclusion
        // failure counted, but no figure to compare with either.
        let hung = locktorture::Outcome {
            lock: "lock-b".into(),
            writes: counts(800, 220, 180),
            reads: counts(3200, 220, 180),
            failure: Some("hang: a writer made no progress for 20.0 s".into()),
            ..results.locktorture[0].clone()
        };
        results.locktorture.push(hung);
        results.torture[0].errors = 1;
        results.torture[0].failure = Some("panic: index out of bounds".into());
        let deferred = |name: &str, replaced: u64, failure: Option<&str>| torture::Outcome {
            name: name.into(),
            replaced,
            failure: failure.map(Into::into),
            ..results.torture[0].clone()
        };
        results.deferred_free = vec![
            deferred("steady", 100, None),
            deferred(
                "stuck",
                400,
                Some("hang: dropping the primitive took more than 20.0 s"),
            ),
        ];
        results.deferred_free[0].errors = 0;
        let md = document(&results).to_markdown();
        assert!(
            md.contains(
                "| lock-a | 4 | 16 | 400 | 1600 | 200 | 1.00x | 1.00x | 1.000 | no | writers | 0 |"
            ),
            "{md}"
        );
        assert!(
            md.contains(
                "| lock-b | 4 | 16 | 800 | 3200 | 400 | 2.00x | 2.00x | 1.000 | no | writers | 0 !!! (hang: a \
                 writer made no progress for 20.0 s) |"
            ),
            "{md}"
        );
        assert!(
            md.contains("| tortured | 4 | 2 | 100 | 50 | 7 | 1 !!! (panic: index out of bounds) |"),
            "{md}"
        );
        assert!(
            md.contains("| steady | 4 | 2 | 50 | 50.0 | 1.00x | - | - | - | 7 | 100 | 0 |"),
            "{md}"
        );
        assert!(
            md.contains(
                "| stuck | 4 | 2 | 200 | 200 | 4.00x | - | - | - | 7 | 100 | 1 !!! (hang: dropping the \
                 primitive \
                 took more than 20.0 s) |"
            ),
            "{md}"
        );
        let failed: Vec<String> = results
            .failed_runs()
            .iter()
            .map(|f| f.to_string())
            .collect();
        assert_eq!(
            failed,
            [
                "torture tortured: panic: index out of bounds",
                "torture --deferred-only stuck: hang: dropping the primitive took more than 20.0 s",
                "locktorture 4w/16r lock-b: hang: a writer made no progress for 20.0 s",
            ]
        );
        assert!(results.any_failure());
    }

    /// The read side's *vs best* leaves out a contender whose torture run
    /// failed, as the Choosing rows do, and says so; its own row still shows
    /// its figures.
    #[test]
    fn a_read_side_with_a_failed_torture_run_sets_no_baseline() {
        let mut results = sample();
        results.torture[0].name = "fast".into();
        results.torture[0].errors = 3;
        let md = document(&results).to_markdown();
        assert!(md.contains("| fast | 2.00 | 0.40x |"), "{md}");
        assert!(md.contains("| slow | 5.00 | 1.00x |"), "{md}");
        assert!(md.contains("checks (see below): fast."), "{md}");
        // Without the failure, `fast` is the baseline again.
        results.torture[0].errors = 0;
        let md = document(&results).to_markdown();
        assert!(md.contains("| slow | 5.00 | 2.50x |"), "{md}");
        assert!(!md.contains("checks (see below)"), "{md}");
    }

    /// What a report run records as not measured: the liburcu peers, with
    /// the reason, exactly where the build has no liburcu (run it with
    /// `SYNCBENCH_NO_LIBURCU=1` too).
    #[test]
    fn not_measured_names_the_liburcu_peers_of_a_build_without_them() {
        let liburcu: Vec<(String, String)> = not_measured()
            .into_iter()
            .filter(|u| u.name.starts_with("liburcu-"))
            .map(|u| {
                assert_eq!(u.why, crate::liburcu::unavailable().to_string());
                (u.kind, u.name)
            })
            .collect();
        if crate::liburcu::LINKED {
            assert!(liburcu.is_empty(), "{liburcu:?}");
        } else {
            let expected = [
                ("refscale", "liburcu-memb"),
                ("refscale", "liburcu-qsbr"),
                ("rcuscale", "liburcu-memb"),
                ("rcuscale", "liburcu-qsbr"),
            ];
            assert_eq!(liburcu, expected.map(|(k, n)| (k.to_owned(), n.to_owned())));
        }
    }

    #[test]
    fn markdown_carries_the_figures_of_the_results() {
        let results = sample();
        let md = document(&results).to_markdown();
        assert!(
            md.contains("Test CPU (family 26 model 2 stepping 1, 2 CPUs)"),
            "{md}"
        );
        assert!(md.contains("seize pay, 5.00 ns)"), "{md}");
        assert!(md.contains("| fast | 2.00 | 1.00x |"), "{md}");
        assert!(md.contains("| slow | 5.00 | 2.50x |"), "{md}");
        assert!(
            md.contains(
                "| lock-a | 4 | 16 | 400 | 1600 | 200 | 1.00x | 1.00x | 1.000 | no | writers | 0 |"
            ),
            "{md}"
        );
        assert!(
            md.contains(
                "| waiter | 16 | 1 | 0 | 1000 | 12.50 | 12.00-14.25 | 200.00 | 150.00 | 900.00 | 1500.0 | 1200.0 \
                 | 3.25 | 0.50 |"
            ),
            "{md}"
        );
        assert!(
            md.contains("| tortured | 4 | 2 | 100 | 50 | 7 | 0 |"),
            "{md}"
        );
        // Mean of the run means, median of the run p99s and maxima, largest
        // of all.
        assert!(
            md.contains("| rcu-lite | 2 | 200 | 3110 | 3225 | 3650 | 4000 |"),
            "{md}"
        );
        assert!(
            md.contains("| rcu-lite-noqs | 2 | 200 | 6220 | 6450 | 8300 | 10000 |"),
            "{md}"
        );
        assert!(
            md.contains("On/off: mean 0.50x, max 0.40x, run max 0.44x."),
            "{md}"
        );
        let sweep_rows =
            md.matches("\n| 8 | 200 |").count() + md.matches("\n| 384 | 9600 |").count();
        assert_eq!(sweep_rows, 2, "{md}");
        assert!(!results.any_failure());
    }

    /// The rcuscale paragraph says what the others' CPU time covered: the
    /// timed window, or, in results saved before it did (read back with no
    /// `others_timed_window`), the threads' start as well.
    #[test]
    fn the_others_cpu_time_is_described_as_the_run_measured_it() {
        let window = "over the run's timed window, which leaves out starting";
        let start = "which in this run's version of syncbench also paid for starting the threads";
        let mut results = sample();
        let md = document(&results).to_markdown();
        assert!(md.contains(window) && !md.contains(start), "{md}");
        let mut json = serde_json::to_value(&results).unwrap();
        let cpu = json["rcuscale"][0]["cpu"].as_object_mut().unwrap();
        assert_eq!(cpu.remove("others_timed_window"), Some(true.into()));
        results = serde_json::from_value(json).unwrap();
        let md = document(&results).to_markdown();
        assert!(md.contains(start) && !md.contains(window), "{md}");
    }

    /// Single runs (a report read back from before rounds) are not said
    /// to have run in rounds; merged rounds are.
    #[test]
    fn the_bulk_freeing_table_mentions_rounds_only_where_there_were_several() {
        let mut results = sample();
        let run = |replaced: u64| torture::Outcome {
            replaced,
            ..results.torture[0].clone()
        };
        results.deferred_free = vec![run(100)];
        let md = document(&results).to_markdown();
        assert!(!md.contains("Each implementation ran in"), "{md}");
        results.deferred_free = vec![torture::merge_rounds(vec![run(100), run(300), run(200)])];
        let md = document(&results).to_markdown();
        assert!(md.contains("Each implementation ran in 3 rounds"), "{md}");
    }

    /// A `results.json` with null where a figure belongs is refused naming
    /// the line; any other unreadable file is said not to be a report's.
    #[test]
    fn read_back_error_names_the_line_of_a_null_figure() {
        let json = serde_json::to_string_pretty(&sample())
            .unwrap()
            .replace("\"wall_s\": 12.0", "\"wall_s\": null");
        let line = 1 + json.lines().position(|l| l.contains("\"wall_s\"")).unwrap();
        let error = read_back(&json).expect_err("null wall_s");
        let message = read_back_error("results.json", &json, &error);
        assert!(
            message.starts_with(&format!(
                "results.json cannot be written again: line {line} (`\"wall_s\": null,`) holds \
                 null where a figure belongs"
            )),
            "{message}"
        );
        let error = read_back("[]").expect_err("not an object");
        let message = read_back_error("old.json", "[]", &error);
        assert!(
            message.starts_with("old.json is not a syncbench report's results.json: "),
            "{message}"
        );
    }

    /// The report opens with the *Choosing* table: one row per
    /// [`choosing::table`] pick, giving its winners, figure, runner-up,
    /// costs elsewhere and measurement, in that order.
    #[test]
    fn the_choosing_section_gives_one_row_per_pick() {
        let results = sample();
        let expected: Vec<Vec<String>> = choosing::table(&results)
            .into_iter()
            .map(|c| {
                let winners = c.winners();
                let cells = [c.figure, c.runner_up, c.costs_elsewhere, c.measured_by];
                [vec![c.use_case.to_owned(), winners], cells.to_vec()].concat()
            })
            .collect();
        assert!(!expected.is_empty());
        let doc = document(&results);
        let section = &doc.sections[0];
        assert_eq!(section.title, "Choosing a primitive on this machine");
        let rows: Vec<&Vec<String>> = section
            .blocks
            .iter()
            .filter_map(|b| match b {
                document::Block::Table(t) => Some(&t.rows),
                _ => None,
            })
            .flatten()
            .collect();
        assert_eq!(rows, expected.iter().collect::<Vec<_>>());
    }

    /// A membarrier stalls cell counts the stalled calls and, where the run
    /// counted them, the callers that stalled; no stall is a plain 0.
    #[test]
    fn stalls_cell_names_the_stalled_callers_only_where_calls_stalled() {
        let mut outcome = sample().membarrier_sweep[0].global.clone();
        (outcome.stalls, outcome.stalled_callers) = (7, Some(3));
        assert_eq!(stalls_cell(&outcome), "7 (3 callers)");
        (outcome.stalls, outcome.stalled_callers) = (0, Some(0));
        assert_eq!(stalls_cell(&outcome), "0");
        (outcome.stalls, outcome.stalled_callers) = (7, None);
        assert_eq!(stalls_cell(&outcome), "7");
    }

    /// The membarrier ratio is plotted against CPU count from two sweep
    /// points with a ratio, and not from one.
    #[test]
    fn the_membarrier_ratio_is_plotted_from_two_points_not_one() {
        let mut results = sample();
        let plotted = |r: &Results| {
            document(r)
                .plots()
                .any(|(file, _)| file == "plots/membarrier-ratio.svg")
        };
        assert!(plotted(&results));
        results.membarrier_sweep.truncate(1);
        assert!(!plotted(&results));
    }

    /// The read-side table has a column pair per thread count, in the order
    /// measured, and each *vs best* compares with the fastest of its own
    /// thread count.
    #[test]
    fn the_read_side_table_ranks_each_thread_count_on_its_own() {
        let mut results = sample();
        let at_four = |name: &str, ns: f64| refscale::Outcome {
            name: name.into(),
            threads: 4,
            ns_per_op: ns,
            runs_ns: vec![ns],
            ..results.refscale[0].clone()
        };
        let four = [at_four("fast", 30.0), at_four("slow", 10.0)];
        results.refscale.extend(four);
        let md = document(&results).to_markdown();
        assert!(
            md.contains(
                "| implementation | 1 thread (median ns) | vs best (paired) | 4 threads (median ns) \
                 | vs best (paired) |"
            ),
            "{md}"
        );
        assert!(
            md.contains("| fast | 2.00 | 1.00x | 30.00 | 3.00x |"),
            "{md}"
        );
        assert!(
            md.contains("| slow | 5.00 | 2.50x | 10.00 | 1.00x |"),
            "{md}"
        );
    }

    /// A per-GP plot shows one reader count, the one measured at the most
    /// writer counts, and says which: the full profile's idle-0 mixes also
    /// run 1 writer with no reader and 16 with 4, whose points the plot
    /// joined with the 1-reader ones until 2026-12-05.
    #[test]
    fn an_rcuscale_plot_shows_one_reader_count() {
        let mut results = sample();
        let mix = |writers: usize, readers: usize, per_gp_us: f64| rcuscale::Outcome {
            name: "waiter".into(),
            writers,
            readers,
            idle_threads: 0,
            per_gp_us,
            ..results.rcuscale[0].clone()
        };
        results.rcuscale = vec![
            mix(1, 0, 111.0),
            mix(1, 1, 10.0),
            mix(4, 1, 11.0),
            mix(16, 1, 12.5),
            mix(16, 4, 444.0),
        ];
        let doc = document(&results);
        let (_, svg) = doc
            .plots()
            .find(|(f, _)| *f == "plots/rcuscale-per-gp.svg")
            .expect("the idle-0 plot");
        assert!(svg.contains("1 reader"), "{svg}");
        // Three points and the legend's marker.
        assert_eq!(svg.matches("<circle").count(), 4, "{svg}");
        // The y axis spans the 1-reader figures only (10-12.5 us).
        assert!(!svg.contains("100.0"), "{svg}");
    }

    /// The per-GP plots: one per idle-thread count, named for it (no suffix
    /// for none), each with the contenders measured there at two or more
    /// writer counts with a positive per-GP time.
    #[test]
    fn rcuscale_plots_one_idle_count_each_with_contenders_of_two_points() {
        let mut results = sample();
        let mix =
            |name: &str, writers: usize, idle_threads: usize, per_gp_us: f64| rcuscale::Outcome {
                name: name.into(),
                writers,
                idle_threads,
                per_gp_us,
                ..results.rcuscale[0].clone()
            };
        results.rcuscale = vec![
            mix("waiter", 1, 0, 10.0),
            mix("waiter", 16, 0, 12.5),
            mix("zeroed", 1, 0, 5.0),
            mix("zeroed", 16, 0, 0.0),
            mix("idler", 1, 64, 20.0),
            mix("idler", 16, 64, 30.0),
        ];
        let doc = document(&results);
        let plots: Vec<(&str, &str)> = doc
            .plots()
            .filter(|(f, _)| f.contains("rcuscale"))
            .collect();
        let files: Vec<&str> = plots.iter().map(|(f, _)| *f).collect();
        assert_eq!(
            files,
            [
                "plots/rcuscale-per-gp.svg",
                "plots/rcuscale-per-gp-idle64.svg"
            ]
        );
        let names = |svg: &str| ["waiter", "zeroed", "idler"].map(|n| svg.contains(n));
        assert_eq!(names(plots[0].1), [true, false, false]);
        assert_eq!(names(plots[1].1), [false, false, true]);
    }

    /// The locktorture plot shows the mix with the most threads in all, and
    /// the locks of that mix only.
    #[test]
    fn the_locktorture_plot_shows_the_mix_with_the_most_threads() {
        let mut results = sample();
        let crowded = locktorture::Outcome {
            lock: "lock-b".into(),
            writers: 1,
            readers: 30,
            ..results.locktorture[0].clone()
        };
        results.locktorture.push(crowded);
        let doc = document(&results);
        let (_, svg) = doc
            .plots()
            .find(|(f, _)| *f == "plots/locktorture.svg")
            .expect("a locktorture plot");
        assert!(svg.contains("locktorture, 1 writers / 30 readers"), "{svg}");
        assert!(svg.contains("lock-b") && !svg.contains("lock-a"), "{svg}");
    }

    /// A folder that exists but takes no new file is refused before any
    /// measuring: `create_dir_all` alone accepted it, and the minutes of
    /// measurements were then lost at the write. (A read-only folder would
    /// not do as the case: the tests may run as root. A directory in the way
    /// of the probe file fails its write for anyone.)
    #[test]
    fn a_folder_that_takes_no_file_is_refused_up_front() {
        let out = empty_folder("no-file");
        for folder in [out.clone(), out.join("plots")] {
            std::fs::create_dir_all(&folder).unwrap();
            let probe = files::temporary_path(&folder.join("write-probe"));
            std::fs::create_dir(&probe).unwrap();
            let err = create_folders(&out).expect_err("a folder that takes no file");
            assert!(
                err.to_string().contains(&format!(
                    "cannot write into the folder {}",
                    folder.display()
                )),
                "{err}"
            );
            std::fs::remove_dir(&probe).unwrap();
        }
        create_folders(&out).expect("the folders take files again");
        assert!(temporaries(&out).is_empty(), "{:?}", temporaries(&out));
        std::fs::remove_dir_all(&out).unwrap();
    }

    /// A report that cannot be written after the measuring keeps the
    /// measurements in a file the error names, which `report --from` reads
    /// back.
    #[test]
    fn a_report_that_cannot_be_written_keeps_its_measurements() {
        let out = empty_folder("keeps");
        std::fs::create_dir_all(out.join(JSON)).unwrap();
        let Err(err) = write_keeping_the_measurements(sample(), &out) else {
            panic!("a folder in the way of results.json, and the report was written");
        };
        let message = err.to_string();
        let kept = message
            .split_once("the measurements were saved to ")
            .and_then(|(_, rest)| rest.split_once(": `syncbench report --from"))
            .map(|(path, _)| PathBuf::from(path))
            .unwrap_or_else(|| panic!("no saved file named: {message}"));
        assert!(kept.starts_with(std::env::temp_dir()), "{message}");
        let text = std::fs::read_to_string(&kept).unwrap();
        let back = read_back(&text).expect("the saved measurements read back");
        assert_eq!(
            serde_json::to_string(&back).unwrap(),
            serde_json::to_string(&sample()).unwrap()
        );
        std::fs::remove_file(&kept).unwrap();
        std::fs::remove_dir_all(&out).unwrap();
    }

    /// A rescue whose write fails part-way (here a file-size limit, as a
    /// full disk would) leaves no truncated file under a rescue's name. In a
    /// child process, whose `RLIMIT_FSIZE` and temporary folder are its own.
    #[test]
    #[cfg_attr(miri, ignore = "sets a resource limit and spawns a process")]
    fn a_rescue_that_fails_part_way_leaves_no_file() {
        const CASE: &str = "SYNCBENCH_TEST_RESCUE_FAILS";
        let Ok(folder) = std::env::var(CASE) else {
            let folder = empty_folder("rescue-fails");
            std::fs::create_dir_all(&folder).unwrap();
            let name = folder.to_str().expect("a UTF-8 temporary path");
            test_support::stderr_of_a_passing_child_process(
                "report::tests::a_rescue_that_fails_part_way_leaves_no_file",
                CASE,
                name,
                &[("TMPDIR", name)],
            );
            let left: Vec<_> = std::fs::read_dir(&folder).unwrap().collect();
            assert!(left.is_empty(), "left in the temporary folder: {left:?}");
            std::fs::remove_dir(&folder).unwrap();
            return;
        };
        assert_eq!(std::env::temp_dir(), PathBuf::from(&folder));
        let mut limit = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: SIGXFSZ ignored, so that a write past the limit fails with
        // EFBIG rather than ending the process; then the limit read into a
        // writable `rlimit` and lowered (the hard limit kept: an
        // unprivileged process cannot raise it) for this child process.
        unsafe {
            libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
            assert_eq!(libc::getrlimit(libc::RLIMIT_FSIZE, &mut limit), 0);
            limit.rlim_cur = limit.rlim_max.min(4096);
            assert_eq!(libc::setrlimit(libc::RLIMIT_FSIZE, &limit), 0);
        }
        let err = save_in_the_temporary_folder(&[b' '; 64 * 1024])
            .expect_err("a rescue past the file-size limit was written");
        assert_eq!(err.raw_os_error(), Some(libc::EFBIG), "{err}");
    }

    /// `free_bytes` reads a real filesystem's room, and says it cannot
    /// tell for a folder that does not exist.
    #[test]
    #[cfg_attr(miri, ignore = "statvfs, a call miri does not implement")]
    fn free_bytes_tells_a_filesystems_room_or_nothing() {
        let free = free_bytes(&std::env::temp_dir()).expect("the temporary folder's room");
        assert!(free > 0, "a temporary folder with no room left");
        assert_eq!(free_bytes(Path::new("/nonexistent/syncbench")), None);
    }

    /// A folder for one test's reports, empty and not yet created.
    fn empty_folder(test: &str) -> PathBuf {
        let out = std::env::temp_dir().join(format!("syncbench-{test}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&out);
        out
    }

    /// The temporary files left in `out` and `out/plots`.
    fn temporaries(out: &Path) -> Vec<PathBuf> {
        [out.to_owned(), out.join("plots")]
            .iter()
            .flat_map(|folder| std::fs::read_dir(folder).unwrap())
            .map(|entry| entry.unwrap().path())
            .filter(|path| path.to_string_lossy().contains(".tmp-"))
            .collect()
    }

    /// Results whose `report.md` and `results.json` differ from [`sample`]'s.
    fn another_sample() -> Results {
        let mut results = sample();
        results.machine.cpu = "Another CPU".into();
        results.wall_s = 34.0;
        results
    }

    /// The bytes of `report.md` and `results.json` in `out`.
    fn markdown_and_json(out: &Path) -> (Vec<u8>, Vec<u8>) {
        let read = |file: &str| std::fs::read(out.join(file)).unwrap();
        (read(MARKDOWN), read(JSON))
    }

    /// A report file that cannot be written (a directory in its place)
    /// fails the write naming it before any file of the previous report is
    /// replaced, and leaves no temporaries.
    #[test]
    fn a_write_that_fails_leaves_the_previous_report_and_no_temporaries() {
        let out = empty_folder("failed-write");
        write(sample(), &out).unwrap();
        let before = markdown_and_json(&out);
        let html = out.join(HTML);
        std::fs::remove_file(&html).unwrap();
        std::fs::create_dir(&html).unwrap();
        let error = write(another_sample(), &out)
            .err()
            .expect("report.html is a directory");
        let message = error.to_string();
        assert!(
            message.starts_with(&format!("cannot write {}:", html.display())),
            "{message}"
        );
        assert!(
            markdown_and_json(&out) == before,
            "the previous report was changed"
        );
        assert_eq!(temporaries(&out), Vec::<PathBuf>::new());
        std::fs::remove_dir_all(&out).unwrap();
    }

    /// A temporary that cannot be written (a directory in its place) fails
    /// the write naming its report file; the temporaries written before it
    /// are removed and the previous report is left as it was.
    #[test]
    fn a_temporary_that_cannot_be_written_removes_the_others() {
        let out = empty_folder("failed-temporary");
        write(sample(), &out).unwrap();
        let before = markdown_and_json(&out);
        let html = out.join(HTML);
        // report.html is staged last, so every other temporary was written.
        let blocked = temporary_path(&html);
        std::fs::create_dir(&blocked).unwrap();
        let error = write(another_sample(), &out)
            .err()
            .expect("the temporary of report.html is a directory");
        let message = error.to_string();
        assert!(
            message.starts_with(&format!("cannot write {} (", html.display())),
            "{message}"
        );
        std::fs::remove_dir(&blocked).unwrap();
        assert!(
            markdown_and_json(&out) == before,
            "the previous report was changed"
        );
        assert_eq!(temporaries(&out), Vec::<PathBuf>::new());
        std::fs::remove_dir_all(&out).unwrap();
    }

    /// While one report holds its folder (a `report` measuring, or a
    /// write), another write into it is refused, naming the conflict, and
    /// leaves the first's files as they were; once the first lets go, the
    /// folder takes a report again. (Until 2026-12-08 two at once could
    /// leave one's results.json beside the other's pages.)
    #[test]
    fn a_report_into_a_folder_another_is_writing_is_refused() {
        let out = empty_folder("locked-folder");
        write(sample(), &out).unwrap();
        let before = markdown_and_json(&out);
        let lock = files::lock_folder(&out)
            .unwrap()
            .expect("this filesystem takes flock");
        let error = write(another_sample(), &out)
            .err()
            .expect("the folder is held");
        assert_eq!(error.kind(), std::io::ErrorKind::ResourceBusy);
        assert!(
            error.to_string().starts_with(&format!(
                "another syncbench report is writing into {}",
                out.display()
            )),
            "{error}"
        );
        assert!(
            markdown_and_json(&out) == before,
            "the held report was changed"
        );
        drop(lock);
        write(another_sample(), &out).expect("the folder is free again");
        assert!(markdown_and_json(&out) != before);
        assert_eq!(temporaries(&out), Vec::<PathBuf>::new());
        std::fs::remove_dir_all(&out).unwrap();
    }

    /// A write over a previous report replaces each file whole rather than
    /// rewriting it in place: a reader that opened the previous report.md
    /// still reads all of it. No temporaries are left.
    #[test]
    fn a_write_replaces_each_file_whole_and_leaves_no_temporaries() {
        use std::io::Read;
        let out = empty_folder("replacing-write");
        write(sample(), &out).unwrap();
        let (markdown, _) = markdown_and_json(&out);
        let mut reader = std::fs::File::open(out.join(MARKDOWN)).unwrap();
        let written = write(another_sample(), &out).unwrap();
        let mut read = Vec::new();
        reader.read_to_end(&mut read).unwrap();
        assert!(read == markdown, "report.md was rewritten in place");
        let (markdown, json) = markdown_and_json(&out);
        assert_eq!(
            String::from_utf8(markdown).unwrap(),
            document(&written.results).to_markdown()
        );
        assert_eq!(
            String::from_utf8(json).unwrap(),
            serde_json::to_string_pretty(&written.results).unwrap()
        );
        assert_eq!(temporaries(&out), Vec::<PathBuf>::new());
        std::fs::remove_dir_all(&out).unwrap();
    }

    const PROFILES: [Profile; 2] = [Profile::Quick, Profile::Full];

    /// The bulk-freeing pass reruns the torture mix with writers that only
    /// defer, in rounds that together last one torture run: without
    /// `deferred_only` in the configuration its writers would wait for
    /// readers, and without it in the options every implementation would
    /// pass the filter, the locks included.
    #[test]
    fn the_bulk_freeing_pass_only_defers_for_one_torture_run_in_rounds() {
        for profile in PROFILES {
            let torture = profile.torture_config();
            let (deferred, options) = profile.deferred_free_config();
            assert!(
                deferred.deferred_only && options.deferred_only,
                "{profile:?}"
            );
            assert!(
                !torture.deferred_only,
                "{profile:?}: the torture runs wait too"
            );
            assert!(!options.slow_path, "{profile:?}");
            assert!(
                profile.torture_rounds() >= 3,
                "{profile:?}: a median of rounds"
            );
            // Within the nanoseconds the division drops.
            let rounds = profile.torture_rounds() as u32;
            let together = deferred.duration * rounds;
            assert!(
                together <= torture.duration
                    && torture.duration - together < Duration::from_nanos(rounds.into()),
                "{profile:?}: {together:?} in {rounds} rounds, {:?} a torture run",
                torture.duration
            );
            assert_eq!(
                (
                    deferred.readers,
                    deferred.writers,
                    deferred.slow_path,
                    deferred.faults
                ),
                (torture.readers, torture.writers, false, false),
                "{profile:?}"
            );
            assert_eq!(deferred.stall_limit, torture.stall_limit, "{profile:?}");
            // The locks cannot only defer, so the pass leaves them out.
            let qrwlock = crate::registry::find(torture::implementations(), "qrwlock").unwrap();
            let hazptr = crate::registry::find(torture::implementations(), "hazptr").unwrap();
            assert!((qrwlock.make)(&options).is_err(), "{profile:?}");
            assert!((hazptr.make)(&options).is_ok(), "{profile:?}");
        }
    }

    /// Each profile measures what the sections and the *Choosing* rows look
    /// for: read sides at 1 and 2 threads; a lock mix that fits 2 cores, a
    /// write-heavy one and one of at least 8 threads; a lone writer with a
    /// reader and 16 concurrent writers, with and without 256 idle threads;
    /// both sides of the quick-QS comparison; and more than one round of
    /// everything that is ranked by its median round.
    #[test]
    fn each_profile_measures_what_the_report_reads() {
        for profile in PROFILES {
            let threads = profile.refscale_threads();
            assert!(
                threads.contains(&1) && threads.contains(&2),
                "{profile:?}: {threads:?}"
            );
            for &t in threads {
                let config = profile.refscale_config(t);
                assert_eq!(config.threads, t, "{profile:?}");
                assert!(
                    config.runs >= 5 && config.iterations >= 1_000_000,
                    "{profile:?}"
                );
            }
            let mixes = profile.locktorture_mixes();
            assert!(
                mixes.iter().any(|&(w, r)| w + r <= 2),
                "{profile:?}: {mixes:?}"
            );
            assert!(mixes.iter().any(|&(w, r)| w > r), "{profile:?}: {mixes:?}");
            assert!(
                mixes.iter().any(|&(w, r)| w + r >= 8 && r > w),
                "{profile:?}: {mixes:?}"
            );
            let rcu = profile.rcuscale_mixes();
            for idle in [0, 256] {
                assert!(rcu.contains(&(1, 1, idle)), "{profile:?}: {rcu:?}");
                assert!(rcu.contains(&(16, 1, idle)), "{profile:?}: {rcu:?}");
            }
            assert!(profile.rcuscale_rounds() >= 3, "{profile:?}");
            assert!(profile.torture_rounds() >= 3, "{profile:?}");
            assert!(profile.quick_qs_runs() >= 5, "{profile:?}");
            assert!(
                profile.rcuscale_duration() >= Duration::from_millis(100),
                "{profile:?}"
            );
            assert!(
                profile.locktorture_duration() >= Duration::from_secs(1),
                "{profile:?}"
            );
            assert!(profile.membarrier_sim_seconds() >= 1.0, "{profile:?}");
            let torture = profile.torture_config();
            assert!(torture.readers >= 2 && torture.writers >= 2, "{profile:?}");
            assert!(!torture.slow_path && !torture.faults, "{profile:?}");
            assert!(torture.duration >= Duration::from_secs(1), "{profile:?}");
        }
    }

    /// The full profile measures every mix of the quick one, each at least
    /// as long and as often, and more of something in every kind.
    #[test]
    fn the_full_profile_measures_what_the_quick_one_does_and_more() {
        let (q, f) = (Profile::Quick, Profile::Full);
        let covers = |quick: &[usize], full: &[usize]| quick.iter().all(|t| full.contains(t));
        assert!(covers(q.refscale_threads(), f.refscale_threads()));
        assert!(f.refscale_threads().len() > q.refscale_threads().len());
        assert!(
            f.refscale_threads().iter().any(|&t| t >= 8),
            "an oversubscribed read side"
        );
        assert!(f.refscale_config(1).iterations > q.refscale_config(1).iterations);
        assert!(f.refscale_config(1).runs >= q.refscale_config(1).runs);
        assert!(
            q.locktorture_mixes()
                .iter()
                .all(|m| f.locktorture_mixes().contains(m))
        );
        assert!(f.locktorture_mixes().len() > q.locktorture_mixes().len());
        assert!(f.locktorture_duration() > q.locktorture_duration());
        assert!(
            q.rcuscale_mixes()
                .iter()
                .all(|m| f.rcuscale_mixes().contains(m))
        );
        assert!(f.rcuscale_mixes().len() > q.rcuscale_mixes().len());
        assert!(f.rcuscale_duration() > q.rcuscale_duration());
        assert!(f.rcuscale_rounds() > q.rcuscale_rounds());
        assert!(f.quick_qs_runs() > q.quick_qs_runs());
        assert!(f.membarrier_sim_seconds() > q.membarrier_sim_seconds());
        assert!(f.torture_rounds() > q.torture_rounds());
        assert!(f.torture_config().duration > q.torture_config().duration);
        assert!(f.torture_config().readers >= q.torture_config().readers);
        assert_eq!((q.name(), f.name()), ("quick", "full"));
    }

    /// The quick profile promises under 3 minutes on 2 cores. Its timed
    /// runs alone (every available contender's locktorture, rcuscale,
    /// quick-QS and torture time) must leave a minute of that for the
    /// read-side runs, thread starts and the membarrier simulation: the
    /// reference run (docs/reference-report) took 113 s in all, of which
    /// this sum, with every contender available, is about 105 s.
    #[test]
    fn the_quick_profile_times_its_runs_within_two_minutes() {
        let q = Profile::Quick;
        // Seconds of `runs` runs of `each`.
        let timed = |runs: usize, each: Duration| runs as f64 * each.as_secs_f64();
        let locks = locktorture::implementations()
            .iter()
            .filter(|i| i.availability().is_ok())
            .count();
        let waiters = rcuscale::implementations()
            .iter()
            .filter(|i| i.availability().is_ok())
            .count();
        let tortured = torture::implementations()
            .iter()
            .filter(|i| i.origin != crate::registry::Origin::SelfCheck && i.availability().is_ok())
            .count();
        let seconds = timed(q.locktorture_mixes().len() * locks, q.locktorture_duration())
            + timed(
                q.rcuscale_mixes().len() * waiters * q.rcuscale_rounds(),
                q.rcuscale_duration(),
            )
            // On, one FQS interval a wait; off, two.
            + timed(q.quick_qs_runs() * QUICK_QS_WAITS as usize * 3, QUICK_QS_FQS)
            // Each torture run, then the bulk-freeing rounds of as long.
            + timed(2 * tortured, q.torture_config().duration);
        assert!(seconds > 30.0, "{seconds} s: every kind of run is timed");
        assert!(
            seconds <= 120.0,
            "{seconds} s of timed runs leave too little of 3 minutes"
        );
    }
}
