//! `torture`: use-after-free detection for deferred-reclamation primitives.
//!
//! The counterpart of the kernel's `rcutorture`/`hazptrtorture`: reader threads
//! repeatedly enter a read-side section, reach the currently published
//! [`object::TortureObject`] and check that it is live; writer threads keep
//! replacing it and hand the old one to the primitive's reclamation (retire,
//! defer, or synchronize then free). Reclamation poisons an object before a
//! delayed free ([`object::reclaim`]), so a primitive that frees too early shows
//! up as counted errors, not as silent corruption.
//!
//! With [`Config::faults`] a fault driver runs beside them (see `faults.rs`):
//! panics inside read sections, threads that die or exit while registered,
//! waves of short-lived threads, readers that stall 100-300 ms inside a section,
//! and retire storms. Each fault is counted ([`FaultCounts`]); after each one
//! the writers must make progress again.
//!
//! # Bounded runs
//!
//! Every thread reports progress; a reader, writer or fault driver whose
//! counter does not move for [`Config::stall_limit`] is a hang. The run then
//! stops and reports it ([`Outcome::failure`], one more error) instead of
//! waiting forever; threads that cannot be stopped are left behind with the
//! primitive they use (never freed under them). A panic that was not injected
//! is a failure too, and so is an object left unreclaimed once the primitive
//! has been dropped ([`Torture::reclaims_all_when_dropped`]): a leak, and a
//! writer that never hands what it replaces to reclamation checks nothing.
//! Any error or failure exits with 1.
//!
//! # The timed window
//!
//! The run's threads wait at a start gate until all of them are spawned
//! (`Run::spawn`, `Run::open`). Reads and replacements are counted from the
//! gate's opening (`Run::open` notes the counters) to its stop, the window
//! `duration_s` measures: threads that run before the start or finish a
//! batch after the stop do not inflate `reads_per_s`. Errors count whenever
//! they are seen. A run whose window holds no read or no replacement checked
//! nothing (a reclamation nobody read after, or reads of an object never
//! reclaimed) and fails: see `Run::finish`.
//!
//! The same window bounds the CPU time [`Outcome::cpu`] reports: the
//! controlling thread reads every reader's and writer's CPU clock, and the
//! process's, at the opening and at the stop ([`crate::cpu_time`]). With
//! more threads than CPUs, a rate says how the scheduler shared the CPUs as
//! much as what an operation cost: readers that yield hand their time to
//! the writers. The CPU time per object separates the two.
//!
//! Every counter and flag the harness shares is `Relaxed`: they are
//! statistics and a stop request, and nothing is published through them (the
//! objects are published by the primitive under test).
//!
//! # Several implementations
//!
//! [`torture_all`] tortures the chosen implementations either all at the same
//! time, each for the whole duration ([`Schedule::Concurrent`]: the soak, where
//! every primitive competes for the CPUs with all the others), or one after the
//! other ([`Schedule::Sequential`]).

mod busted;
mod faults;
mod hazptr;
pub mod object;
mod peers;
mod qrwlock;
mod rcu_lite;

use crate::cpu_time::{self, ThreadCpuClock};
use crate::delay::Padded;
use crate::fault::{self, ProgressWatch};
use crate::progress::Progress;
use crate::registry::Implementation;
use crate::start_gate::{StartGate, ThreadRefused};
use object::{Ledger, TortureObject};
use serde::{Deserialize, Serialize};
use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::*};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// A reader holds one section in this many batches of 64 for 1-20 us
/// ([`held_read`]): about 1 in 1,024 sections. That halves a
/// reader's sections per second (one reader on 2 vCPUs), and is what catches
/// an object freed microseconds too early.
const HELD_READ_EVERY_BATCHES: u64 = 16;

/// Sections a reader runs between two updates of its count: few enough that
/// the count follows the clock (the timed window counts only whole batches),
/// many enough that counting costs the loop nothing. Under miri, whose
/// threads run thousands of times slower, a batch of 64 can outlast a short
/// test's whole window.
const READS_PER_BATCH: u64 = if cfg!(miri) { 4 } else { 64 };

/// A deferred-reclamation primitive under torture.
pub trait Torture: Send + Sync {
    /// One read-side section: enter, reach the current object, check it with
    /// [`TortureObject::is_live`] while still inside, exit. Returns the check.
    fn read(&self) -> bool;
    /// One read-side section that runs `inside` on the object it reached,
    /// while still inside. `inside` may panic (the section must end during
    /// the unwind) or take long (reclamation must wait for it).
    fn read_with(&self, inside: &mut dyn FnMut(&TortureObject));
    /// Publishes `fresh` in place of the current object and hands the old one
    /// to the primitive's reclamation, which must end in [`object::reclaim`].
    fn replace(&self, fresh: Box<TortureObject>);
    /// Whether dropping the primitive reclaims every object it was handed
    /// (what it retired and the one it publishes): then any object left
    /// unreclaimed once a run's primitive is dropped is a leak, and the run
    /// fails (`Run::finish`). False for a primitive whose deferred
    /// reclamations may outlive it (a global collector's).
    fn reclaims_all_when_dropped(&self) -> bool {
        true
    }
}

/// What every torture implementation is built with.
#[derive(Debug, Default)]
pub struct Options {
    /// The ledger of this run's objects (the first object too).
    pub ledger: Arc<Ledger>,
    /// Force the acquire slow path (only implementations listed in
    /// [`SLOW_PATH_IMPLEMENTATIONS`] have one).
    pub slow_path: bool,
    /// Writers hand every replaced object to deferred reclamation (retire,
    /// `call_rcu`, defer) and never wait for readers themselves: the
    /// "freeing in bulk from a background thread" use. Implementations
    /// without deferred reclamation are unavailable in this mode.
    pub deferred_only: bool,
}

/// Every torture contender, ours and peers.
pub fn implementations() -> &'static [Implementation<dyn Torture, Options>] {
    IMPLEMENTATIONS
}

/// The registry: this workspace's implementations first, then the peers.
static IMPLEMENTATIONS: &[Implementation<dyn Torture, Options>] = &[
    hazptr::HAZPTR,
    rcu_lite::RCU_LITE_MEMB,
    rcu_lite::RCU_LITE_QSBR,
    qrwlock::QRWLOCK,
    peers::CROSSBEAM_EPOCH,
    peers::HAPHAZARD,
    peers::SEIZE,
    busted::BUSTED,
];

/// The implementations that have an acquire slow path `--slow-path` can force.
pub const SLOW_PATH_IMPLEMENTATIONS: &[&str] = &["hazptr"];

/// How to run a torture test.
#[derive(Clone, Copy, Debug)]
pub struct Config {
    /// Reader threads.
    pub readers: usize,
    /// Writer threads.
    pub writers: usize,
    /// How long each implementation is tortured.
    pub duration: Duration,
    /// Force the acquire slow path (see [`Options::slow_path`]).
    pub slow_path: bool,
    /// Inject faults (see the module docs).
    pub faults: bool,
    /// Writers only hand objects to deferred reclamation (see
    /// [`Options::deferred_only`]).
    pub deferred_only: bool,
    /// How long a thread's progress may stall before the run counts a hang.
    pub stall_limit: Duration,
}

impl Config {
    /// The default [`Config::stall_limit`]: far above the longest injected
    /// stall and any scheduling delay on a loaded machine (and ten minutes
    /// under miri, which interprets every instruction: a 300 ms stall plus
    /// the writers catching up takes minutes there).
    pub const STALL_LIMIT: Duration = Duration::from_secs(if cfg!(miri) { 600 } else { 20 });
}

/// How [`torture_all`] shares the run among several implementations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Schedule {
    /// All at the same time, each for the whole duration.
    Concurrent,
    /// One after the other, each for an equal share of the duration.
    Sequential,
}

/// The faults injected into one implementation's run, by kind.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct FaultCounts {
    /// Panics inside a read section, caught on a thread that then read again.
    pub panic_in_read: u64,
    /// Threads ended by a panic inside a read section.
    pub death_in_read: u64,
    /// Threads that registered (one read section) and exited.
    pub exit_registered: u64,
    /// Short-lived threads of the churn waves, one read section each.
    pub churn_threads: u64,
    /// Readers that stalled inside a read section.
    pub stalls: u64,
    /// Stalls during which writers unpublished the stalled reader's object.
    pub stalls_unpublished: u64,
    /// The longest stall, in milliseconds.
    pub stall_max_ms: f64,
    /// Retire storms (bursts of replacements from an extra thread).
    pub retire_storms: u64,
    /// Objects replaced by retire storms.
    pub storm_objects: u64,
}

/// The outcome for one implementation.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Outcome {
    /// Implementation name.
    #[serde(rename = "impl")]
    pub name: String,
    /// Reader threads.
    pub readers: usize,
    /// Writer threads.
    pub writers: usize,
    /// Whether every acquire took the slow path (`--slow-path`); in the JSON
    /// only when it did.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub slow_path: bool,
    /// Whether every replacement went to deferred reclamation
    /// (`--deferred-only`); in the JSON only when it did.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub deferred_only: bool,
    /// Seconds tortured.
    pub duration_s: f64,
    /// Read-side sections that reached and checked an object.
    pub reads: u64,
    /// Objects replaced (and handed to reclamation) by writers.
    pub replaced: u64,
    /// Reads that found a poisoned or corrupt object (premature reclamation),
    /// plus reclamations of an already reclaimed object
    /// ([`Ledger::reclaimed_twice`]), plus one for a [`Outcome::failure`].
    pub errors: u64,
    /// Most objects allocated and not yet reclaimed at once.
    pub unreclaimed_max: u64,
    /// The most objects unreclaimed at any check (every 100 ms) in the first
    /// and in the second half of the run: a backlog that keeps growing shows
    /// as a second half far above the first.
    pub unreclaimed_halves: [u64; 2],
    /// The longest single replacement by a writer, in milliseconds (a
    /// synchronize that waited for a stalled reader shows here).
    pub write_max_ms: f64,
    /// The most resident memory the process had while this implementation
    /// ran, in KiB (process-wide: shared by implementations run at once).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rss_max_kib: Option<u64>,
    /// Faults injected, by kind (with `--faults`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub faults: Option<FaultCounts>,
    /// A hang (no progress for the stall limit) or a panic that was not
    /// injected.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failure: Option<String>,
    /// Objects replaced per second in each round, in the order the rounds
    /// ran, for an outcome merged from rounds taken in turns with other
    /// implementations ([`merge_rounds`], as the report's deferred-only
    /// pass runs them). Empty for a single run, which is then its own one
    /// round (see [`Outcome::replaced_per_s_by_round`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub replaced_per_s_rounds: Vec<f64>,
    /// CPU time the run's threads used in its timed window; `None` for a run
    /// with faults (their threads come and go) or one whose threads could
    /// not all be timed, and in results written before it was measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu: Option<CpuSplit>,
}

/// CPU seconds a run's threads used in its timed window, by role: on a
/// machine with fewer CPUs than threads, what each role got of the CPUs
/// (readers that yield hand their time to the writers), and with the counts,
/// what each operation cost (see [`crate::cpu_time`]).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct CpuSplit {
    /// All reader threads together.
    pub readers_s: f64,
    /// All writer threads together.
    pub writers_s: f64,
    /// The rest of the process: the primitive's own threads (rcu-lite's
    /// callback worker, hazptr's scanner) and the harness's, which sleeps
    /// between its checks. Only for a run that had the process to itself
    /// (not one of several tortured at once).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub others_s: Option<f64>,
}

impl Outcome {
    /// Whether the run failed: errors or a failure.
    pub fn failed(&self) -> bool {
        self.errors > 0 || self.failure.is_some()
    }

    /// What the run's failure was, in words; `None` if it passed.
    pub fn why_failed(&self) -> Option<String> {
        // A failure (hang, panic) counts one error of its own.
        let errors = self
            .errors
            .saturating_sub(u64::from(self.failure.is_some()));
        let mut why = Vec::new();
        if errors > 0 {
            why.push(format!(
                "{errors} error{} (an object read after reclamation)",
                if errors == 1 { "" } else { "s" }
            ));
        }
        why.extend(self.failure.clone());
        (!why.is_empty()).then(|| why.join(", "))
    }

    /// The writers' CPU time per object replaced, in nanoseconds.
    pub fn writer_cpu_ns_per_replaced(&self) -> Option<f64> {
        let cpu = self.cpu?;
        (self.replaced > 0).then(|| cpu.writers_s * 1e9 / self.replaced as f64)
    }

    /// The other threads' CPU time (see [`CpuSplit::others_s`]) per object
    /// replaced, in nanoseconds: for a scheme that frees on a thread of its
    /// own, the freeing.
    pub fn others_cpu_ns_per_replaced(&self) -> Option<f64> {
        let others = self.cpu?.others_s?;
        (self.replaced > 0).then(|| others * 1e9 / self.replaced as f64)
    }

    /// The writers' part of the CPU time the run's threads used (the others
    /// counted where known).
    pub fn writers_cpu_share(&self) -> Option<f64> {
        let cpu = self.cpu?;
        let total = cpu.readers_s + cpu.writers_s + cpu.others_s.unwrap_or(0.0);
        (total > 0.0).then(|| cpu.writers_s / total)
    }

    /// Objects replaced per second, round by round: a single run's rate is
    /// its one round.
    pub fn replaced_per_s_by_round(&self) -> Vec<f64> {
        if self.replaced_per_s_rounds.is_empty() {
            vec![self.replaced as f64 / self.duration_s.max(1e-9)]
        } else {
            self.replaced_per_s_rounds.clone()
        }
    }
}

/// Merges one implementation's runs, one per round in the order they ran,
/// into one outcome: the median round by objects replaced per second (the
/// lower middle one for an even count), with every round's rate in
/// [`Outcome::replaced_per_s_rounds`]. The checks and the memory held back
/// cover every round: `errors` is summed (a failure still counting one),
/// `failure` names every round that had one and what it was, and
/// `unreclaimed_max`, `write_max_ms` and `rss_max_kib` are the largest of
/// any round. A single run comes back as it is.
///
/// # Panics
///
/// If `runs` is empty.
pub fn merge_rounds(mut runs: Vec<Outcome>) -> Outcome {
    assert!(
        !runs.is_empty(),
        "an implementation needs at least one round"
    );
    if runs.len() == 1 {
        return runs.pop().expect("one run");
    }
    let rates: Vec<f64> = runs
        .iter()
        .map(|o| o.replaced as f64 / o.duration_s.max(1e-9))
        .collect();
    let failure = crate::stats::rounds_failure(runs.iter().map(|o| o.failure.as_deref()));
    // A failure counts one error of its own, in a round and merged.
    let errors = runs
        .iter()
        .map(|o| o.errors.saturating_sub(u64::from(o.failure.is_some())))
        .sum::<u64>()
        + u64::from(failure.is_some());
    let unreclaimed_max = runs.iter().map(|o| o.unreclaimed_max).max().unwrap_or(0);
    let write_max_ms = runs.iter().map(|o| o.write_max_ms).fold(0.0, f64::max);
    let rss_max_kib = runs.iter().filter_map(|o| o.rss_max_kib).max();
    let median = crate::stats::median_index(&rates);
    Outcome {
        errors,
        failure,
        unreclaimed_max,
        write_max_ms,
        rss_max_kib,
        replaced_per_s_rounds: rates,
        ..runs.swap_remove(median)
    }
}

/// The atomic counterpart of [`FaultCounts`], updated by fault threads.
#[derive(Debug, Default)]
struct FaultCounters {
    panic_in_read: AtomicU64,
    death_in_read: AtomicU64,
    exit_registered: AtomicU64,
    churn_threads: AtomicU64,
    stalls: AtomicU64,
    stalls_unpublished: AtomicU64,
    stall_max_us: AtomicU64,
    retire_storms: AtomicU64,
    storm_objects: AtomicU64,
    /// Fault work done (actions, churn threads, storm replacements): the
    /// fault driver's progress counter.
    heartbeat: AtomicU64,
}

impl FaultCounters {
    fn snapshot(&self) -> FaultCounts {
        FaultCounts {
            panic_in_read: self.panic_in_read.load(Relaxed),
            death_in_read: self.death_in_read.load(Relaxed),
            exit_registered: self.exit_registered.load(Relaxed),
            churn_threads: self.churn_threads.load(Relaxed),
            stalls: self.stalls.load(Relaxed),
            stalls_unpublished: self.stalls_unpublished.load(Relaxed),
            stall_max_ms: self.stall_max_us.load(Relaxed) as f64 / 1000.0,
            retire_storms: self.retire_storms.load(Relaxed),
            storm_objects: self.storm_objects.load(Relaxed),
        }
    }
}

/// What the threads of one implementation's run share.
struct Shared {
    primitive: Box<dyn Torture>,
    ledger: Arc<Ledger>,
    config: Config,
    /// Where the run's threads wait until all are spawned (see `Run::spawn`).
    start: StartGate,
    stop: AtomicBool,
    /// Per reader: sections checked.
    reads: Vec<Padded<AtomicU64>>,
    /// Per writer: objects replaced.
    replaced: Vec<Padded<AtomicU64>>,
    errors: AtomicU64,
    write_max_ns: AtomicU64,
    faults: FaultCounters,
    /// The first failure (hang or foreign panic).
    failure: Mutex<Option<String>>,
}

impl Shared {
    fn replaced_total(&self) -> u64 {
        self.replaced.iter().map(|c| c.load(Relaxed)).sum()
    }

    /// Reads and replacements so far, all threads together.
    fn counts(&self) -> Window {
        Window {
            reads: self.reads.iter().map(|c| c.load(Relaxed)).sum(),
            replaced: self.replaced_total(),
        }
    }

    fn error(&self) {
        self.errors.fetch_add(1, Relaxed);
    }

    /// Records `what` as the run's failure (the first one wins) and stops it.
    fn fail(&self, what: String) {
        let mut failure = self.failure.lock().unwrap_or_else(|e| e.into_inner());
        failure.get_or_insert(what);
        self.stop.store(true, Relaxed);
    }

    fn reader(&self, me: usize) {
        let mut batches: u64 = 0;
        while !self.stop.load(Relaxed) {
            let mut bad = 0;
            for _ in 0..READS_PER_BATCH {
                bad += u64::from(!self.primitive.read());
            }
            let mut sections = READS_PER_BATCH;
            batches += 1;
            if batches.is_multiple_of(HELD_READ_EVERY_BATCHES) {
                let k = batches / HELD_READ_EVERY_BATCHES;
                let hold = Duration::from_micros(1 + (7 * k) % 20);
                bad += u64::from(!held_read(&*self.primitive, || {
                    crate::delay::spin_for(hold)
                }));
                sections += 1;
            }
            self.reads[me].fetch_add(sections, Relaxed);
            if bad > 0 {
                self.errors.fetch_add(bad, Relaxed);
            }
        }
    }

    fn writer(&self, me: usize) {
        let mut seq = (me as u64) << 48;
        // This writer's longest replacement: the shared maximum is written
        // only when it grows (a few times a run), not on every replacement,
        // where the shared line's RMW cost the faster contenders more (the
        // measurement audit, 2026-12-06).
        let mut my_max = 0;
        while !self.stop.load(Relaxed) {
            seq += 1;
            let fresh = TortureObject::new(&self.ledger, seq);
            let began = Instant::now();
            self.primitive.replace(fresh);
            let took = began.elapsed().as_nanos() as u64;
            if took > my_max {
                my_max = took;
                self.write_max_ns.fetch_max(took, Relaxed);
            }
            self.replaced[me].fetch_add(1, Relaxed);
        }
    }
}

/// rcutorture's `rcu_read_delay()`: one section that stays inside while
/// `hold` runs (a reader's `k`-th held section spins `1 + 7k mod 20` us) and
/// checks the object when it reaches it and again before it leaves. A plain
/// section checks within nanoseconds of reaching the object, so an object
/// freed a few microseconds too early, as by a grace period that ends early,
/// is still live when it is checked; a held one is not.
fn held_read(primitive: &dyn Torture, hold: impl FnOnce()) -> bool {
    let mut live = true;
    let mut hold = Some(hold);
    primitive.read_with(&mut |object| {
        live &= object.is_live();
        let seq = object.seq();
        if let Some(hold) = hold.take() {
            hold();
        }
        live &= object.is_still(seq);
    });
    live
}

/// Reads and replacements: totals at a point of a run, or their growth over
/// its timed window.
#[derive(Clone, Copy, Debug, Default)]
struct Window {
    reads: u64,
    replaced: u64,
}

/// One implementation's run in progress.
struct Run {
    name: &'static str,
    shared: Arc<Shared>,
    threads: Vec<(String, JoinHandle<()>)>,
    /// Progress watches: readers, writers, then the fault driver.
    watches: Vec<(String, ProgressWatch)>,
    began: Instant,
    /// Time from `began` to the stop, once stopped: the run's duration,
    /// which must not take in the wind-down of runs finished before it.
    stopped_after: Option<Duration>,
    /// The counts when `began` was read, and their growth from then to the
    /// stop once stopped: what the timed window covers.
    counted_at_start: Window,
    counted_in_window: Option<Window>,
    rss_max_kib: Option<u64>,
    unreclaimed_halves: [u64; 2],
    /// The readers' and writers' CPU clocks; `None` with faults (their
    /// threads come and go) or when a thread was refused.
    clocks: Option<RunClocks>,
    /// Whether this run has the process to itself, so that the process's
    /// CPU time less its readers' and writers' is its own other threads'.
    alone: bool,
    cpu_at_start: Option<CpuReading>,
    cpu_in_window: Option<CpuSplit>,
}

/// The CPU clocks of a run's readers and writers.
struct RunClocks {
    readers: Vec<ThreadCpuClock>,
    writers: Vec<ThreadCpuClock>,
}

impl RunClocks {
    /// `None` if a thread cannot be read (it exited: a panic that was not
    /// injected, which fails the run anyway).
    fn read(&self) -> Option<CpuReading> {
        Some(CpuReading {
            readers: cpu_time::sum(&self.readers)?,
            writers: cpu_time::sum(&self.writers)?,
            process: cpu_time::process(),
        })
    }
}

/// The readings of a run's CPU clocks at one moment.
#[derive(Clone, Copy, Debug)]
struct CpuReading {
    readers: Duration,
    writers: Duration,
    process: Option<Duration>,
}

impl CpuReading {
    /// The CPU time used from `start` to `self`; the other threads' only for
    /// a run `alone` in the process.
    fn since(self, start: CpuReading, alone: bool) -> CpuSplit {
        let readers = self.readers.saturating_sub(start.readers);
        let writers = self.writers.saturating_sub(start.writers);
        let others = match (self.process, start.process) {
            (Some(now), Some(then)) if alone => Some(
                now.saturating_sub(then)
                    .saturating_sub(readers + writers)
                    .as_secs_f64(),
            ),
            _ => None,
        };
        CpuSplit {
            readers_s: readers.as_secs_f64(),
            writers_s: writers.as_secs_f64(),
            others_s: others,
        }
    }
}

impl Run {
    /// [`spawn`](Self::spawn)s the run's threads and [`open`](Self::open)s
    /// their start gate: the run is under way.
    fn start(imp: &Implementation<dyn Torture, Options>, config: Config) -> Run {
        let mut run = Self::spawn(imp, config);
        run.open();
        run
    }

    /// Builds the primitive and spawns the run's threads, which wait at its
    /// start gate, blocked, until [`open`](Self::open). Threads that began
    /// their work as soon as they were spawned would compete for the CPUs
    /// with the thread spawning the rest: with 2,000 threads on 2 CPUs,
    /// spawning them took 28 s.
    fn spawn(imp: &Implementation<dyn Torture, Options>, config: Config) -> Run {
        if config.faults {
            fault::quiet_injected_panics();
        }
        let ledger = Ledger::new();
        let primitive = imp.build(&Options {
            ledger: Arc::clone(&ledger),
            slow_path: config.slow_path,
            deferred_only: config.deferred_only,
        });
        let shared = Arc::new(Shared {
            primitive,
            ledger,
            config,
            // The run's threads, and `open`.
            start: StartGate::new(config.readers + config.writers + usize::from(config.faults) + 1),
            stop: AtomicBool::new(false),
            reads: (0..config.readers).map(|_| Padded::default()).collect(),
            replaced: (0..config.writers).map(|_| Padded::default()).collect(),
            errors: AtomicU64::new(0),
            write_max_ns: AtomicU64::new(0),
            faults: FaultCounters::default(),
            failure: Mutex::new(None),
        });
        let mut threads = Vec::new();
        // A thread the OS refuses fails the run, naming it, and stops it:
        // no later thread is started, the start gate is called off, and the
        // threads started return from it without doing anything (the run
        // then ends as any failed one does, wound down in `finish`).
        let mut spawn = |label: String, body: Box<dyn FnOnce(&Shared) + Send>| {
            if shared.stop.load(Relaxed) {
                return;
            }
            let s = Arc::clone(&shared);
            let spawned = std::thread::Builder::new()
                .name(format!("torture {}", imp.name))
                .spawn(move || {
                    if s.start.wait() {
                        body(&s);
                    }
                });
            match spawned {
                Ok(handle) => threads.push((label, handle)),
                Err(source) => {
                    let of = config.readers + config.writers + usize::from(config.faults);
                    let refused =
                        ThreadRefused::labelled(&label, threads.len() + 1, of, imp.name, source);
                    shared.fail(refused.to_string());
                    shared.start.cancel();
                }
            }
        };
        for r in 0..config.readers {
            spawn(format!("reader {r}"), Box::new(move |s| s.reader(r)));
        }
        for w in 0..config.writers {
            spawn(format!("writer {w}"), Box::new(move |s| s.writer(w)));
        }
        if config.faults {
            spawn("fault driver".into(), Box::new(faults::drive));
        }
        let (readers, writers) = (config.readers, config.writers);
        let clock_of = |(_, handle): &(String, JoinHandle<()>)| ThreadCpuClock::of(handle);
        let clocks = (!config.faults && threads.len() == readers + writers)
            .then(|| {
                Some(RunClocks {
                    readers: threads[..readers]
                        .iter()
                        .map(clock_of)
                        .collect::<Option<_>>()?,
                    writers: threads[readers..]
                        .iter()
                        .map(clock_of)
                        .collect::<Option<_>>()?,
                })
            })
            .flatten();
        let mut watches: Vec<(String, ProgressWatch)> = (0..config.readers)
            .map(|r| (format!("reader {r}"), ProgressWatch::new(0)))
            .chain((0..config.writers).map(|w| (format!("writer {w}"), ProgressWatch::new(0))))
            .collect();
        if config.faults {
            watches.push(("fault driver".into(), ProgressWatch::new(0)));
        }
        Run {
            name: imp.name,
            shared,
            threads,
            watches,
            began: Instant::now(),
            stopped_after: None,
            counted_at_start: Window::default(),
            counted_in_window: None,
            rss_max_kib: fault::rss_kib(),
            unreclaimed_halves: [0; 2],
            clocks,
            alone: true,
            cpu_at_start: None,
            cpu_in_window: None,
        }
    }

    /// Lets the spawned threads go (once each has reached the gate) and
    /// starts the timed window. A gate called off by a refused thread
    /// starts nothing: the window is empty, and the run already failed.
    fn open(&mut self) {
        // The threads may start before the clock and the counts are read:
        // what they count meanwhile stays out of the window.
        let _ = self.shared.start.wait();
        self.began = Instant::now();
        self.counted_at_start = self.shared.counts();
        self.cpu_at_start = self.clocks.as_ref().and_then(RunClocks::read);
        // A thread's stall is timed from here: with `--impl all`, other
        // runs' threads were spawned after these watches were made.
        for (_, watch) in &mut self.watches {
            *watch = ProgressWatch::new(0);
        }
    }

    /// Tells the run's threads to stop, and notes when and what they had
    /// counted since the start (the first time).
    fn stop(&mut self) {
        if self.stopped_after.is_none() {
            self.stopped_after = Some(self.began.elapsed());
            let (now, start) = (self.shared.counts(), self.counted_at_start);
            self.counted_in_window = Some(Window {
                reads: now.reads - start.reads,
                replaced: now.replaced - start.replaced,
            });
            // Before the threads are told to stop: they are all alive.
            let cpu_now = self.clocks.as_ref().and_then(RunClocks::read);
            if let (Some(now), Some(start)) = (cpu_now, self.cpu_at_start) {
                self.cpu_in_window = Some(now.since(start, self.alone));
            }
        }
        self.shared.stop.store(true, Relaxed);
    }

    /// Checks every progress counter and samples memory; a counter stalled
    /// past the limit fails the run (which stops it).
    fn check(&mut self) {
        let s = &self.shared;
        let values = s
            .reads
            .iter()
            .chain(s.replaced.iter())
            .map(|c| c.load(Relaxed))
            .chain(std::iter::once(s.faults.heartbeat.load(Relaxed)));
        for ((label, watch), value) in self.watches.iter_mut().zip(values) {
            let idle = watch.observe(value);
            if idle >= s.config.stall_limit && !s.stop.load(Relaxed) {
                s.fail(format!(
                    "hang: {label} made no progress for {:.1} s",
                    idle.as_secs_f64()
                ));
            }
        }
        if let Some(now) = fault::rss_kib() {
            self.rss_max_kib = Some(self.rss_max_kib.map_or(now, |m| m.max(now)));
        }
        let half = usize::from(self.began.elapsed() >= s.config.duration / 2);
        let unreclaimed = &mut self.unreclaimed_halves[half];
        *unreclaimed = (*unreclaimed).max(s.ledger.unreclaimed());
    }

    fn done(&self, duration: Duration) -> bool {
        self.shared.stop.load(Relaxed) || self.began.elapsed() >= duration
    }

    /// Stops the run, waits (bounded) for its threads and tears the primitive
    /// down; returns the outcome. A window with no read or no replacement
    /// is a failure: the run checked nothing.
    fn finish(mut self) -> Outcome {
        self.stop();
        let Run {
            name,
            shared,
            threads,
            stopped_after,
            counted_in_window,
            mut rss_max_kib,
            unreclaimed_halves,
            cpu_in_window,
            ..
        } = self;
        let elapsed = stopped_after.expect("stopped above");
        let counted = counted_in_window.expect("stopped above");
        let limit = shared.config.stall_limit;
        let unfinished = fault::wind_down(threads, limit, |why| shared.fail(why));
        let mut failure = shared
            .failure
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        let ledger = Arc::clone(&shared.ledger);
        let config = shared.config;
        let reclaims_all = shared.primitive.reclaims_all_when_dropped();
        let mut outcome = Outcome {
            name: name.to_owned(),
            readers: config.readers,
            writers: config.writers,
            slow_path: config.slow_path,
            deferred_only: config.deferred_only,
            duration_s: elapsed.as_secs_f64(),
            reads: counted.reads,
            replaced: counted.replaced,
            errors: shared.errors.load(Relaxed),
            unreclaimed_max: 0,
            unreclaimed_halves,
            write_max_ms: shared.write_max_ns.load(Relaxed) as f64 / 1e6,
            rss_max_kib: None,
            faults: config.faults.then(|| shared.faults.snapshot()),
            failure: None,
            replaced_per_s_rounds: Vec::new(),
            cpu: cpu_in_window,
        };
        if unfinished.is_empty() {
            match tear_down(shared, limit) {
                TearDown::Finished => {
                    if reclaims_all && ledger.unreclaimed() > 0 {
                        failure.get_or_insert(format!(
                            "leaked: {} of {} objects were never reclaimed, even once the \
                             primitive was dropped (a replaced object never handed to \
                             reclamation checks nothing)",
                            ledger.unreclaimed(),
                            ledger.allocated()
                        ));
                    }
                }
                TearDown::Hung => {
                    failure.get_or_insert(format!(
                        "hang: dropping the primitive took more than {:.1} s",
                        limit.as_secs_f64()
                    ));
                }
                TearDown::Refused(source) => {
                    let refused = ThreadRefused {
                        thread: format!("the teardown thread for {name}"),
                        source,
                    };
                    failure.get_or_insert(format!(
                        "{refused} (the primitive was left undropped: what its drop \
                         reclaims was not checked)"
                    ));
                }
            }
        } else {
            // Threads still use the primitive: leave it (and them) alive.
            std::mem::forget(unfinished);
            std::mem::forget(shared);
        }
        if let Some(now) = fault::rss_kib() {
            rss_max_kib = Some(rss_max_kib.map_or(now, |m| m.max(now)));
        }
        if counted.reads == 0 || counted.replaced == 0 {
            failure.get_or_insert(format!(
                "checked nothing: {} reads and {} replacements in the {:.6} s timed window \
                 (a use-after-free needs both to be seen); run longer",
                counted.reads,
                counted.replaced,
                elapsed.as_secs_f64()
            ));
        }
        outcome.unreclaimed_max = ledger.unreclaimed_max();
        // After the teardown, which reclaims what the primitive still held.
        outcome.errors += ledger.reclaimed_twice();
        outcome.rss_max_kib = rss_max_kib;
        outcome.errors += u64::from(failure.is_some());
        outcome.failure = failure;
        outcome
    }
}

/// How a run's teardown went.
#[derive(Debug)]
enum TearDown {
    /// Within the time limit.
    Finished,
    /// Still running at the time limit.
    Hung,
    /// The OS refused the teardown thread; nothing was torn down.
    Refused(std::io::Error),
}

/// Drops the last reference to the run's shared state (so the primitive,
/// which reclaims what it still holds) and closes the ledger, on a helper
/// thread, so that a teardown that blocks forever is reported rather than
/// waited for.
fn tear_down(shared: Arc<Shared>, limit: Duration) -> TearDown {
    off_thread(
        shared,
        |shared| {
            let ledger = Arc::clone(&shared.ledger);
            drop(shared);
            ledger.close();
        },
        limit,
        |body| {
            std::thread::Builder::new()
                .name("torture teardown".into())
                .spawn(body)
        },
    )
}

/// Runs `finish(value)` on a thread that `spawn` starts and waits at most
/// `limit` for it. `value` reaches the thread once it runs: if the OS
/// refuses the thread, `value` is leaked, not finished here, since finishing
/// may block for ever (which is what the thread is for).
fn off_thread<T: Send + 'static>(
    value: T,
    finish: impl FnOnce(T) + Send + 'static,
    limit: Duration,
    spawn: impl FnOnce(Box<dyn FnOnce() + Send>) -> std::io::Result<JoinHandle<()>>,
) -> TearDown {
    let (hand_over, receive) = std::sync::mpsc::channel::<T>();
    let helper = match spawn(Box::new(move || {
        if let Ok(value) = receive.recv() {
            finish(value);
        }
    })) {
        Ok(helper) => helper,
        Err(source) => {
            std::mem::forget(value);
            return TearDown::Refused(source);
        }
    };
    if let Err(returned) = hand_over.send(value) {
        // The helper receives before it does anything else, so it cannot
        // be gone; were it gone, dropping here could block for ever.
        std::mem::forget(returned.0);
        return TearDown::Hung;
    }
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline && !helper.is_finished() {
        std::thread::sleep(Duration::from_millis(2));
    }
    if helper.is_finished() {
        TearDown::Finished
    } else {
        TearDown::Hung
    }
}

/// Tortures one implementation for `config.duration`.
pub fn torture(
    imp: &Implementation<dyn Torture, Options>,
    config: Config,
    progress: &mut Progress,
) -> Outcome {
    progress.set_label(imp.name);
    let base = progress.position();
    let mut run = Run::start(imp, config);
    while !run.done(config.duration) {
        let left = config.duration.saturating_sub(run.began.elapsed());
        std::thread::sleep(left.min(Duration::from_millis(100)));
        run.check();
        progress.set_position(base + run.began.elapsed().as_millis() as u64);
    }
    run.finish()
}

/// Tortures every implementation in `chosen` for `total`, as `schedule` says
/// (`config.duration` is ignored).
pub fn torture_all(
    chosen: &[&Implementation<dyn Torture, Options>],
    config: Config,
    total: Duration,
    schedule: Schedule,
) -> Vec<Outcome> {
    let mut progress = Progress::new(total.as_millis() as u64, "torture");
    match schedule {
        Schedule::Sequential => {
            let share = total / chosen.len().max(1) as u32;
            let config = Config {
                duration: share,
                ..config
            };
            chosen
                .iter()
                .map(|imp| torture(imp, config, &mut progress))
                .collect()
        }
        Schedule::Concurrent => {
            progress.set_label(&format!("{} at once", chosen.len()));
            let config = Config {
                duration: total,
                ..config
            };
            // Every run's threads are spawned, and have arrived at their
            // gates, before any run opens, so that no run's window takes in
            // another's spawning or set-up: opening the first while the
            // last still set up its threads started the first's clock
            // seconds early with a thousand readers a run.
            let alone = chosen.len() == 1;
            let mut runs: Vec<Run> = chosen
                .iter()
                .map(|imp| Run {
                    alone,
                    ..Run::spawn(imp, config)
                })
                .collect();
            while !runs.iter().all(|run| run.shared.start.others_arrived()) {
                std::thread::sleep(Duration::from_micros(200));
            }
            for run in &mut runs {
                run.open();
            }
            let began = Instant::now();
            while !runs.iter().all(|r| r.done(total)) {
                let left = total.saturating_sub(began.elapsed());
                std::thread::sleep(left.min(Duration::from_millis(100)));
                for run in &mut runs {
                    if run.done(total) {
                        run.stop();
                    } else {
                        run.check();
                    }
                }
                progress.set_position(began.elapsed().as_millis() as u64);
            }
            let outcomes: Vec<Outcome> = runs.into_iter().map(Run::finish).collect();
            note_late_windows(&outcomes, total);
            outcomes
        }
    }
}

/// Says so where a concurrent run's window ran well past the time asked
/// (a quarter more, and half a second): the run is stopped by this
/// process's coordinating thread, which with many more runnable threads
/// than CPUs (a thousand readers a run on 2 CPUs) gets a CPU seconds late,
/// and by a different delay for each run. Each outcome's figures are over
/// its own window (`duration_s`), so each stays right, but the runs did
/// not share one window.
fn note_late_windows(outcomes: &[Outcome], total: Duration) {
    for line in late_window_notes(outcomes, total) {
        crate::console::note(format_args!("{line}"));
    }
}

/// The lines [`note_late_windows`] writes.
fn late_window_notes(outcomes: &[Outcome], total: Duration) -> Vec<String> {
    let asked = total.as_secs_f64();
    let consequence = if outcomes.len() > 1 {
        "so the implementations' windows differ; each one's figures are over its own window \
         (--sequential, or fewer threads, gives each the time asked)"
    } else {
        "its figures are over the window it had (fewer threads keep it near the time asked)"
    };
    outcomes
        .iter()
        .filter(|o| o.duration_s > asked * 1.25 + 0.5)
        .map(|o| {
            format!(
                "torture: note: {}'s window lasted {} s of the {} s asked: with more runnable \
                 threads than CPUs the thread that stops the runs got a CPU late, {consequence}",
                o.name,
                crate::stats::seconds(o.duration_s),
                crate::stats::seconds(asked)
            )
        })
        .collect()
}

/// Writes one summary line per implementation, `!!!` marking errors, then
/// (with faults) a line of fault counts and (on failure) a line saying what
/// failed.
pub fn write_text(out: &mut impl Write, outcomes: &[Outcome]) -> std::io::Result<()> {
    for o in outcomes {
        writeln!(
            out,
            "torture: {} readers={} writers={} duration={}s reads: {} replaced: {} unreclaimed max: {} (sampled by half: {}/{}) errors: {}{}",
            o.name,
            o.readers,
            o.writers,
            crate::stats::seconds(o.duration_s),
            o.reads,
            o.replaced,
            o.unreclaimed_max,
            o.unreclaimed_halves[0],
            o.unreclaimed_halves[1],
            o.errors,
            if o.errors > 0 { " !!!" } else { "" }
        )?;
        if let Some(cpu) = &o.cpu {
            writeln!(
                out,
                "torture: {} cpu: readers {:.2} s, writers {:.2} s ({} of the run's), others {}; writers {}{}",
                o.name,
                cpu.readers_s,
                cpu.writers_s,
                // No CPU time counted: no share (it printed 0% or 50%).
                o.writers_cpu_share()
                    .map_or("-".to_owned(), |share| format!("{:.0}%", share * 100.0)),
                cpu.others_s
                    .map_or("not counted (runs at once)".into(), |s| format!("{s:.2} s")),
                // Not NaN where nothing was replaced.
                o.writer_cpu_ns_per_replaced().map_or_else(
                    || "- ns per object replaced (none was)".to_owned(),
                    |ns| format!("{ns:.0} ns per object replaced")
                ),
                o.others_cpu_ns_per_replaced()
                    .map_or(String::new(), |ns| format!(", others {ns:.0} ns")),
            )?;
        }
        if let Some(f) = &o.faults {
            writeln!(
                out,
                "torture: {} faults: panic-in-read: {} death-in-read: {} exit-registered: {} churn-threads: {} stalls: {} (unpublished during {}, max {:.0} ms) retire-storms: {} ({} objects) write max: {:.1} ms rss max: {}",
                o.name,
                f.panic_in_read,
                f.death_in_read,
                f.exit_registered,
                f.churn_threads,
                f.stalls,
                f.stalls_unpublished,
                f.stall_max_ms,
                f.retire_storms,
                f.storm_objects,
                o.write_max_ms,
                o.rss_max_kib
                    .map_or("unknown".into(), |k| format!("{k} KiB")),
            )?;
        }
        if let Some(failure) = &o.failure {
            writeln!(out, "torture: {} FAILURE: {failure} !!!", o.name)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::busted::Busted;
    use super::*;
    use crate::registry::Origin;
    use std::sync::atomic::{AtomicPtr, AtomicUsize};

    /// Says when it is dropped.
    struct DropFlag(Arc<AtomicBool>);

    impl Drop for DropFlag {
        fn drop(&mut self) {
            self.0.store(true, SeqCst);
        }
    }

    fn spawn_helper(body: Box<dyn FnOnce() + Send>) -> std::io::Result<JoinHandle<()>> {
        std::thread::Builder::new().spawn(body)
    }

    #[test]
    fn a_refused_teardown_thread_leaves_the_state_undropped() {
        let dropped = Arc::new(AtomicBool::new(false));
        let outcome = off_thread(
            DropFlag(Arc::clone(&dropped)),
            drop,
            Duration::from_secs(5),
            |_body| Err(std::io::Error::other("refused by the test")),
        );
        assert!(
            matches!(&outcome, TearDown::Refused(e) if e.to_string() == "refused by the test"),
            "{outcome:?}"
        );
        // Dropped here, a teardown that blocks would hang the command.
        assert!(!dropped.load(SeqCst), "the caller's thread tore down");
    }

    #[test]
    fn a_teardown_within_the_limit_finishes_on_its_thread() {
        let dropped = Arc::new(AtomicBool::new(false));
        let caller = std::thread::current().id();
        let outcome = off_thread(
            DropFlag(Arc::clone(&dropped)),
            move |flag| {
                assert_ne!(std::thread::current().id(), caller);
                drop(flag);
            },
            Duration::from_secs(60),
            spawn_helper,
        );
        assert!(matches!(outcome, TearDown::Finished), "{outcome:?}");
        assert!(dropped.load(SeqCst));
    }

    #[test]
    fn a_teardown_still_running_at_the_limit_is_a_hang() {
        let (release, blocked) = std::sync::mpsc::channel::<()>();
        let outcome = off_thread(
            blocked,
            |blocked| {
                // Blocks until the test lets it go.
                let _ = blocked.recv();
            },
            Duration::from_millis(20),
            spawn_helper,
        );
        assert!(matches!(outcome, TearDown::Hung), "{outcome:?}");
        drop(release);
    }

    fn config(duration_ms: u64, faults: bool) -> Config {
        Config {
            readers: 2,
            writers: 1,
            duration: Duration::from_millis(duration_ms),
            slow_path: false,
            faults,
            deferred_only: false,
            stall_limit: Config::STALL_LIMIT,
        }
    }

    /// Tortures a planted bug with faults and a short stall limit: long
    /// enough for a real panic's backtrace to print, short enough for a test.
    fn planted(imp: Implementation<dyn Torture, Options>) -> Outcome {
        let short = Config {
            stall_limit: Duration::from_secs(2),
            ..config(300, true)
        };
        torture(&imp, short, &mut Progress::new(1, "test"))
    }

    fn bug(
        name: &'static str,
        make: fn(&Options) -> Result<Box<dyn Torture>, crate::registry::Unavailable>,
    ) -> Implementation<dyn Torture, Options> {
        Implementation {
            name,
            summary: "planted bug",
            origin: Origin::Peer,
            make,
        }
    }

    /// Through the readers' own path, with nothing widening the window.
    fn frees_too_early(after_us: u64) -> Outcome {
        let imp = bug("frees-too-early", |o| {
            Ok(Box::new(Busted::new(
                &o.ledger,
                Duration::from_micros(FREE_AFTER_US.load(Relaxed)),
            )))
        });
        // Relaxed: `torture` calls `make` on this thread, after this store.
        FREE_AFTER_US.store(after_us, Relaxed);
        // One reader and one writer: no more threads than this machine's
        // CPUs, so a reader is seldom preempted inside a section (which
        // would widen the window by itself).
        let one_each = Config {
            readers: 1,
            ..config(300, false)
        };
        torture(&imp, one_each, &mut Progress::new(1, "test"))
    }

    /// A held section sees its object reclaimed while it holds it, which the
    /// check on reaching it cannot.
    #[test]
    fn a_held_section_checks_its_object_again_before_it_ends() {
        /// One object, reached by every section.
        struct One(*mut TortureObject);
        // SAFETY: the object is reached read-only and reclaimed once, by the
        // test, on this thread.
        unsafe impl Send for One {}
        // SAFETY: as above.
        unsafe impl Sync for One {}
        impl Torture for One {
            fn read(&self) -> bool {
                unreachable!("the test takes only held sections")
            }
            fn read_with(&self, inside: &mut dyn FnMut(&TortureObject)) {
                // SAFETY: a reclaimed object stays allocated in the
                // quarantine until the ledger closes, after this section.
                inside(unsafe { &*self.0 })
            }
            fn replace(&self, _fresh: Box<TortureObject>) {
                unreachable!("the test replaces nothing")
            }
        }
        let ledger = Ledger::new();
        let one = One(Box::into_raw(TortureObject::new(&ledger, 1)));
        // Reclaimed while the section holds it, after its first check.
        let live = held_read(&one, || {
            // SAFETY: a `TortureObject::new` box, reclaimed once; the
            // quarantine keeps it allocated for the second check.
            unsafe { object::reclaim(one.0) }
        });
        assert!(!live, "the object was reclaimed inside the held section");
    }

    /// `frees_too_early`'s delay (a `make` function cannot capture it).
    static FREE_AFTER_US: AtomicU64 = AtomicU64::new(0);

    #[test]
    fn premature_reclamation_is_detected() {
        // At once, and a few microseconds after the unpublish. A plain
        // section checks within nanoseconds of reaching the object, so it
        // sees the second only when it is interrupted in between; held
        // sections see it. In 300 ms runs here, 5 us: 18-309 errors with
        // held sections, 7-10 without; pinned to one CPU, 20-25. Up to five
        // runs, so that a machine that interleaves less still gets there.
        for after_us in [0, 5] {
            let mut errors = Vec::new();
            for _ in 0..5 {
                let out = frees_too_early(after_us);
                assert!(out.failure.is_none(), "{out:?}");
                errors.push(out.errors);
                if out.errors > 0 {
                    break;
                }
            }
            assert!(
                errors.iter().any(|&e| e > 0),
                "freed {after_us} us after the unpublish: no errors in {} runs",
                errors.len()
            );
        }
    }

    /// Reclaims every replaced object twice (a retire list walked twice, a
    /// callback queued twice): each second reclamation is an error, counted
    /// rather than a double free that kills the run without a report.
    #[test]
    fn a_double_reclamation_is_counted() {
        struct ReclaimsTwice(Busted);
        impl Torture for ReclaimsTwice {
            fn read(&self) -> bool {
                self.0.read()
            }
            fn read_with(&self, inside: &mut dyn FnMut(&TortureObject)) {
                self.0.read_with(inside)
            }
            fn replace(&self, fresh: Box<TortureObject>) {
                let old = self.0.current.swap(Box::into_raw(fresh), AcqRel);
                // SAFETY: `old` came from `Box::into_raw`; reclaiming it twice
                // is the bug this test plants (the first reclamation parks it
                // in the quarantine, which the second must leave alone).
                unsafe {
                    object::reclaim(old);
                    object::reclaim(old);
                }
            }
        }
        let imp = bug("reclaims-twice", |o| {
            Ok(Box::new(ReclaimsTwice(Busted::new(
                &o.ledger,
                Duration::ZERO,
            ))))
        });
        let out = torture(&imp, config(200, false), &mut Progress::new(1, "test"));
        assert!(out.failure.is_none(), "{out:?}");
        assert!(out.replaced > 0, "{out:?}");
        // Every replacement in the window reclaimed twice (readers may add
        // a few errors of their own: the first reclamation is at once).
        assert!(out.errors >= out.replaced, "{out:?}");
        // Errors alone, with no failure, fail the run (and exit with 1).
        assert!(
            out.failed(),
            "errors without a failure did not fail the run: {out:?}"
        );
        let mut text = Vec::new();
        write_text(&mut text, std::slice::from_ref(&out)).unwrap();
        let text = String::from_utf8(text).unwrap();
        assert!(
            text.contains(&format!(" errors: {} !!!\n", out.errors)),
            "the text does not mark the errors: {text}"
        );
    }

    /// Plain sections that always pass, and held sections that always reach
    /// an object already reclaimed: the readers' loop must hold a section
    /// now and then (what catches an object freed microseconds too early)
    /// and count what it finds.
    #[test]
    fn readers_hold_some_sections_and_count_their_errors() {
        /// A plain read that passes; `read_with` reaches an object reclaimed
        /// in a ledger of its own, whose quarantine holds it until `self`
        /// drops.
        struct HeldSectionsFail {
            reclaimed: *mut TortureObject,
            _ledger: Arc<Ledger>,
        }
        // SAFETY: the object is only read, through `&TortureObject`.
        unsafe impl Send for HeldSectionsFail {}
        // SAFETY: as above.
        unsafe impl Sync for HeldSectionsFail {}
        impl Torture for HeldSectionsFail {
            fn read(&self) -> bool {
                true
            }
            fn read_with(&self, inside: &mut dyn FnMut(&TortureObject)) {
                // SAFETY: reclaimed in `make`, and nothing else is ever
                // reclaimed in its ledger, whose quarantine keeps it until
                // `self` drops.
                inside(unsafe { &*self.reclaimed })
            }
            fn replace(&self, fresh: Box<TortureObject>) {
                // SAFETY: never published, so no reader holds it.
                unsafe { object::reclaim(Box::into_raw(fresh)) };
            }
        }
        let imp = bug("held-sections-fail", |_| {
            let own = Ledger::new();
            let reclaimed = Box::into_raw(TortureObject::new(&own, 0));
            // SAFETY: a `TortureObject::new` box, reclaimed once.
            unsafe { object::reclaim(reclaimed) };
            Ok(Box::new(HeldSectionsFail {
                reclaimed,
                _ledger: own,
            }))
        });
        let out = torture(&imp, config(200, false), &mut Progress::new(1, "test"));
        assert!(out.failure.is_none(), "{out:?}");
        // One held section per HELD_READ_EVERY_BATCHES batches.
        let batch = READS_PER_BATCH * HELD_READ_EVERY_BATCHES + 1;
        assert!(
            out.reads >= 2 * batch && out.errors > 0,
            "the readers held no section, or did not count what it found: {out:?}"
        );
    }

    /// Plain sections that always fail and held sections that pass, the
    /// mirror of `readers_hold_some_sections_and_count_their_errors`: once
    /// the reader has stopped, each plain section is one error and every
    /// section, plain or held, one read (a held one per
    /// HELD_READ_EVERY_BATCHES batches).
    #[test]
    fn a_reader_counts_every_section_and_every_failed_one() {
        /// `Busted`'s first object, never replaced, so held sections pass;
        /// plain ones fail without reaching it.
        struct PlainReadsFail(Busted);
        impl Torture for PlainReadsFail {
            fn read(&self) -> bool {
                false
            }
            fn read_with(&self, inside: &mut dyn FnMut(&TortureObject)) {
                self.0.read_with(inside)
            }
            fn replace(&self, _fresh: Box<TortureObject>) {
                unreachable!("the run has no writers")
            }
        }
        test_support::within_a_deadline("a reader's counts", Duration::from_secs(60), || {
            let imp = bug("plain-reads-fail", |o| {
                Ok(Box::new(PlainReadsFail(Busted::new(
                    &o.ledger,
                    Duration::ZERO,
                ))))
            });
            let one_reader = Config {
                readers: 1,
                writers: 0,
                ..config(0, false)
            };
            let mut run = Run::start(&imp, one_reader);
            // Two held sections at least.
            let batch = READS_PER_BATCH * HELD_READ_EVERY_BATCHES + 1;
            while run.shared.counts().reads < 2 * batch {
                std::thread::sleep(Duration::from_millis(1));
            }
            // Relaxed: a stop request; it publishes nothing.
            run.shared.stop.store(true, Relaxed);
            for (_, reader) in std::mem::take(&mut run.threads) {
                reader
                    .join()
                    .expect("the reader returns once the run stops");
            }
            // Relaxed: the join above orders every count the reader made
            // before these loads.
            let (reads, errors) = (run.shared.counts().reads, run.shared.errors.load(Relaxed));
            run.finish();
            let batches = errors / READS_PER_BATCH;
            assert_eq!(
                (errors % READS_PER_BATCH, reads),
                (0, errors + batches / HELD_READ_EVERY_BATCHES),
                "(errors past whole batches, reads) of {errors} errors"
            );
        });
    }

    /// A concurrent run's window that ended well past the time asked is
    /// named, with both lengths; one within a quarter (and half a second)
    /// of it is not.
    #[test]
    fn a_window_that_ran_well_past_the_time_asked_is_noted() {
        let lasted = |name: &str, duration_s: f64| Outcome {
            name: name.into(),
            duration_s,
            ..a_clean_round(1)
        };
        let outcomes = [lasted("on-time", 4.9), lasted("late", 42.7)];
        let notes = late_window_notes(&outcomes, Duration::from_secs(4));
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert!(
            notes[0].starts_with("torture: note: late's window lasted 42.7 s of the 4.0 s asked")
                && notes[0].contains("windows differ"),
            "{notes:?}"
        );
        let alone = late_window_notes(&outcomes[1..], Duration::from_secs(4));
        assert!(
            alone.len() == 1 && alone[0].contains("over the window it had"),
            "{alone:?}"
        );
    }

    /// One 1 s round of `merged`, one reader and one writer, that replaced
    /// `replaced` objects, without errors or failure.
    fn a_clean_round(replaced: u64) -> Outcome {
        Outcome {
            name: "merged".into(),
            readers: 1,
            writers: 1,
            slow_path: false,
            deferred_only: false,
            duration_s: 1.0,
            reads: 10,
            replaced,
            errors: 0,
            unreclaimed_max: 1,
            unreclaimed_halves: [1, 1],
            write_max_ms: 1.0,
            rss_max_kib: None,
            faults: None,
            failure: None,
            replaced_per_s_rounds: Vec::new(),
            cpu: None,
        }
    }

    /// Merged rounds fail if any round did: its errors are summed, not the
    /// median round's taken.
    #[test]
    fn merged_rounds_keep_every_rounds_errors() {
        let round = |replaced: u64, errors: u64, failure: Option<&str>| Outcome {
            errors,
            failure: failure.map(String::from),
            ..a_clean_round(replaced)
        };
        // The median round (200 per second) is clean; the others are not.
        let merged = merge_rounds(vec![
            round(100, 3, None),
            round(200, 0, None),
            round(300, 1, Some("hang: writer 0 made no progress for 20.0 s")),
        ]);
        assert_eq!(merged.replaced, 200, "{merged:?}");
        assert_eq!(merged.errors, 3 + 1, "{merged:?}");
        assert!(merged.failed(), "{merged:?}");
        assert!(
            merged
                .failure
                .as_deref()
                .unwrap_or_default()
                .contains("hang: writer 0"),
            "{merged:?}"
        );
    }

    /// Merged rounds report the most memory any round held back and its
    /// longest write, not the median round's, and every round's rate in
    /// the order the rounds ran.
    #[test]
    fn merged_rounds_keep_the_largest_figures_and_every_rate() {
        let round = |replaced: u64, unreclaimed_max: u64, write_max_ms: f64, rss: u64| Outcome {
            unreclaimed_max,
            write_max_ms,
            rss_max_kib: Some(rss),
            ..a_clean_round(replaced)
        };
        // The median round (200 per second) has the smallest figures.
        let merged = merge_rounds(vec![
            round(300, 7, 2.0, 900),
            round(200, 1, 1.0, 100),
            round(100, 5, 9.0, 500),
        ]);
        assert_eq!(merged.replaced, 200, "{merged:?}");
        assert_eq!(
            (
                merged.unreclaimed_max,
                merged.write_max_ms,
                merged.rss_max_kib
            ),
            (7, 9.0, Some(900)),
            "{merged:?}"
        );
        assert_eq!(merged.replaced_per_s_by_round(), [300.0, 200.0, 100.0]);
    }

    /// Each round's rate is its replacements over its own duration, and the
    /// median is taken by that rate: of a long round with the most
    /// replacements and two 1 s rounds, the median is the slower 1 s one,
    /// not the round with the median count.
    #[test]
    fn merged_rounds_rate_each_round_by_its_own_duration() {
        let round = |replaced: u64, duration_s: f64| Outcome {
            duration_s,
            ..a_clean_round(replaced)
        };
        let merged = merge_rounds(vec![round(1000, 10.0), round(300, 1.0), round(200, 1.0)]);
        assert_eq!(merged.replaced_per_s_by_round(), [100.0, 300.0, 200.0]);
        assert_eq!(merged.replaced, 200, "{merged:?}");
    }

    /// A run fails (`syncbench torture` exits 1) on any error or failure,
    /// and only then, and says why: the errors that are reads of a
    /// reclaimed object, counted without the one a failure adds, then the
    /// failure.
    #[test]
    fn a_run_fails_on_any_error_or_failure_and_only_then() {
        const HANG: &str = "hang: writer 0 made no progress for 20.0 s";
        let verdict = |errors: u64, failure: Option<&str>| {
            let out = Outcome {
                errors,
                failure: failure.map(String::from),
                ..a_clean_round(100)
            };
            (out.failed(), out.why_failed())
        };
        let why = |text: &str| (true, Some(text.to_owned()));
        assert_eq!(verdict(0, None), (false, None));
        assert_eq!(
            verdict(1, None),
            why("1 error (an object read after reclamation)")
        );
        assert_eq!(
            verdict(2, None),
            why("2 errors (an object read after reclamation)")
        );
        assert_eq!(verdict(1, Some(HANG)), why(HANG));
        assert_eq!(
            verdict(4, Some(HANG)),
            why(&format!(
                "3 errors (an object read after reclamation), {HANG}"
            ))
        );
    }

    /// A writer that drops what it replaces instead of handing it to
    /// reclamation: nothing is ever reclaimed, so no read can find a
    /// premature reclamation, and the run must fail rather than pass.
    #[test]
    fn a_primitive_that_never_reclaims_fails() {
        struct NeverReclaims(Busted);
        impl Torture for NeverReclaims {
            fn read(&self) -> bool {
                self.0.read()
            }
            fn read_with(&self, inside: &mut dyn FnMut(&TortureObject)) {
                self.0.read_with(inside)
            }
            fn replace(&self, fresh: Box<TortureObject>) {
                let old = self.0.current.swap(Box::into_raw(fresh), AcqRel);
                // The planted bug: leaked, never reclaimed.
                let _ = old;
            }
        }
        let imp = bug("never-reclaims", |o| {
            Ok(Box::new(NeverReclaims(Busted::new(
                &o.ledger,
                Duration::ZERO,
            ))))
        });
        let out = torture(&imp, config(100, false), &mut Progress::new(1, "test"));
        assert!(out.reads > 0 && out.replaced > 0, "{out:?}");
        assert!(
            out.failure
                .as_deref()
                .unwrap_or_default()
                .starts_with("leaked: ")
                && out.errors == 1,
            "{out:?}"
        );
    }

    /// A "read section" that is a plain counter, ended by code after `inside`
    /// rather than by a guard: a panic inside leaves it entered. Writers wait
    /// for the count to drain, as synchronize would.
    struct LeaksOnUnwind {
        current: AtomicPtr<TortureObject>,
        inside: AtomicUsize,
    }

    impl Torture for LeaksOnUnwind {
        fn read(&self) -> bool {
            let mut live = false;
            self.read_with(&mut |o| live = o.is_live());
            live
        }
        fn read_with(&self, inside: &mut dyn FnMut(&TortureObject)) {
            self.inside.fetch_add(1, SeqCst);
            // SAFETY: reclaimed only after `inside` drained (below), and this
            // reader is counted in it.
            inside(unsafe { &*self.current.load(SeqCst) });
            self.inside.fetch_sub(1, SeqCst);
        }
        fn replace(&self, fresh: Box<TortureObject>) {
            let old = self.current.swap(Box::into_raw(fresh), SeqCst);
            while self.inside.load(SeqCst) != 0 {
                std::thread::sleep(Duration::from_micros(50));
            }
            // SAFETY: unpublished, and no reader is inside.
            unsafe { object::reclaim(old) };
        }
    }

    /// Readers that always reach the first object, and writers whose every
    /// replacement takes 50 ms (and publishes nothing).
    struct SlowReplace(AtomicPtr<TortureObject>);

    impl Torture for SlowReplace {
        fn read(&self) -> bool {
            // SAFETY: the first object, reclaimed only when `self` drops.
            unsafe { &*self.0.load(Acquire) }.is_live()
        }
        fn read_with(&self, inside: &mut dyn FnMut(&TortureObject)) {
            // SAFETY: as in `read`.
            inside(unsafe { &*self.0.load(Acquire) })
        }
        fn replace(&self, fresh: Box<TortureObject>) {
            // Far longer than the 1 ms run, and than any delay between the
            // stop's clock read and its count: under miri, whose clock
            // advances with the spinning readers' steps, a 50 ms sleep
            // ended between the two, and one replacement was counted.
            std::thread::sleep(Duration::from_secs(1));
            // SAFETY: never published, so no reader can hold it.
            unsafe { object::reclaim(Box::into_raw(fresh)) };
        }
    }

    impl Drop for SlowReplace {
        fn drop(&mut self) {
            // SAFETY: the first object, owned by `self`.
            unsafe { object::reclaim(*self.0.get_mut()) };
        }
    }

    /// A run over before any replacement ends checked nothing: it fails,
    /// and the replacement finished after the stop is not counted.
    #[test]
    fn a_window_without_a_replacement_checked_nothing() {
        let imp = bug("slow-replace", |o| {
            Ok(Box::new(SlowReplace(AtomicPtr::new(Box::into_raw(
                TortureObject::new(&o.ledger, 0),
            )))))
        });
        let out = torture(&imp, config(1, false), &mut Progress::new(1, "test"));
        assert_eq!(out.replaced, 0, "{out:?}");
        assert!(out.failed(), "{out:?}");
        let failure = out.failure.as_deref().unwrap_or_default();
        assert!(
            failure.starts_with("checked nothing: ") && failure.contains(" 0 replacements"),
            "{out:?}"
        );
    }

    /// A run's threads wait at its start gate until `Run::open`: spawned,
    /// they neither read nor replace. (Threads that began at once kept the
    /// thread spawning the rest from a CPU: 2,000 of them on 2 CPUs took 28 s
    /// to spawn.) Once it opens, both counts grow and the run checks
    /// something.
    #[test]
    fn the_threads_do_nothing_until_the_gate_opens() {
        let limit = 3 * Config::STALL_LIMIT;
        test_support::within_a_deadline("a gated start", limit, || {
            let contender = contenders().next().expect("a contender");
            let mut run = Run::spawn(contender, config(0, false));
            // Time for the threads to reach the gate, or, with none, to work.
            std::thread::sleep(Duration::from_millis(50));
            let before = run.shared.counts();
            assert_eq!((before.reads, before.replaced), (0, 0), "{before:?}");
            run.open();
            // Past the counts `open` noted (the threads may have started
            // counting before it did), so that the window holds both.
            let start = run.counted_at_start;
            loop {
                let now = run.shared.counts();
                if now.reads > start.reads && now.replaced > start.replaced {
                    break;
                }
                std::thread::sleep(Duration::from_millis(1));
            }
            let out = run.finish();
            assert!(!out.failed(), "{out:?}");
        });
    }

    /// The timed window counts what the threads did from the start to the
    /// stop, not what they did before the start: a run whose replacements
    /// all came before it would otherwise pass as having checked something.
    /// The start is moved into the run here (to counts past zero), and the
    /// threads are stopped before the run is, so the counts are exact.
    #[test]
    fn the_window_counts_only_what_the_threads_did_after_the_start() {
        // Three stall limits: minutes under miri, whose replacements are slow.
        let limit = 3 * Config::STALL_LIMIT;
        test_support::within_a_deadline("a window's counts", limit, || {
            let mut run = Run::start(contenders().next().expect("a contender"), config(0, false));
            // Both counts more than double past `past` (and past zero).
            let wait_past = |run: &Run, past: Window| loop {
                let now = run.shared.counts();
                if now.reads > 2 * past.reads + 2 && now.replaced > 2 * past.replaced + 2 {
                    return now;
                }
                std::thread::sleep(Duration::from_millis(1));
            };
            let start = wait_past(&run, Window::default());
            run.counted_at_start = start;
            wait_past(&run, start);
            // Relaxed: a stop request; it publishes nothing.
            run.shared.stop.store(true, Relaxed);
            for (label, thread) in std::mem::take(&mut run.threads) {
                thread.join().unwrap_or_else(|_| panic!("{label} panicked"));
            }
            let end = run.shared.counts();
            let out = run.finish();
            assert_eq!(
                (out.reads, out.replaced),
                (end.reads - start.reads, end.replaced - start.replaced),
                "(reads, replaced) in the window, from {start:?} to {end:?}"
            );
        });
    }

    /// An object reclaimed twice is one error, added to those the run
    /// counted otherwise: here none but the one of its failure (a run
    /// without reads or replacements checked nothing).
    #[test]
    fn a_double_reclamation_adds_an_error_to_the_runs_others() {
        let no_threads = Config {
            readers: 0,
            writers: 0,
            ..config(0, false)
        };
        let run = Run::start(contenders().next().expect("a contender"), no_threads);
        let extra = Box::into_raw(TortureObject::new(&run.shared.ledger, 1));
        // SAFETY: a `TortureObject::new` box, never published. The first
        // reclamation parks it in the quarantine; the second is the error,
        // counted by the ledger and otherwise left alone.
        unsafe {
            object::reclaim(extra);
            object::reclaim(extra);
        }
        let out = run.finish();
        assert!(
            (out.failure.as_deref().unwrap_or_default()).starts_with("checked nothing: "),
            "{out:?}"
        );
        assert_eq!(out.errors, 1 + 1, "{out:?}");
    }

    /// A check samples the objects left unreclaimed into the half of the run
    /// it falls in: early in a 100 s run the first half; in a run made as
    /// long as it has lasted so far (100 ms at least), the second, not past
    /// its end. (No thread shares the run, so its duration can be changed.)
    #[test]
    fn a_check_samples_the_backlog_into_the_half_of_the_run_it_falls_in() {
        let hundred_s = Config {
            readers: 0,
            writers: 0,
            ..config(100_000, false)
        };
        let mut run = Run::start(contenders().next().expect("a contender"), hundred_s);
        // The first object alone.
        run.check();
        let early = run.unreclaimed_halves;
        std::thread::sleep(Duration::from_millis(100));
        let so_far = run.began.elapsed();
        Arc::get_mut(&mut run.shared)
            .expect("no thread shares the run")
            .config
            .duration = so_far;
        // The first object and this one.
        let extra = TortureObject::new(&run.shared.ledger, 1);
        run.check();
        let late = run.unreclaimed_halves;
        // SAFETY: a `TortureObject::new` box, never published.
        unsafe { object::reclaim(Box::into_raw(extra)) };
        run.finish();
        assert_eq!((early, late), ([1, 0], [1, 2]), "(early, late) halves");
    }

    #[test]
    fn a_section_left_open_by_a_panic_is_a_reported_hang() {
        let out = planted(bug("leaks-on-unwind", |o| {
            Ok(Box::new(LeaksOnUnwind {
                current: AtomicPtr::new(Box::into_raw(TortureObject::new(&o.ledger, 0))),
                inside: AtomicUsize::new(0),
            }))
        }));
        let failure = out.failure.as_deref().unwrap_or_default();
        assert!(failure.starts_with("hang:"), "{out:?}");
        assert!(out.errors >= 1, "{out:?}");
    }

    /// A writer that never returns.
    struct NeverReturns(AtomicPtr<TortureObject>);

    impl Torture for NeverReturns {
        fn read(&self) -> bool {
            true
        }
        fn read_with(&self, inside: &mut dyn FnMut(&TortureObject)) {
            // SAFETY: never reclaimed while the primitive lives (it is leaked
            // with its stuck writer).
            inside(unsafe { &*self.0.load(SeqCst) })
        }
        fn replace(&self, fresh: Box<TortureObject>) {
            drop(fresh);
            loop {
                std::thread::park();
            }
        }
    }

    #[test]
    fn a_writer_that_never_returns_ends_the_run_with_a_hang() {
        let began = Instant::now();
        let out = planted(bug("never-returns", |o| {
            Ok(Box::new(NeverReturns(AtomicPtr::new(Box::into_raw(
                TortureObject::new(&o.ledger, 0),
            )))))
        }));
        assert!(
            out.failure
                .as_deref()
                .unwrap_or_default()
                .contains("writer 0"),
            "{out:?}"
        );
        assert!(began.elapsed() < Duration::from_secs(10), "{out:?}");
    }

    /// A hang is reported when a counter stalls for the stall limit, not only
    /// when the run ends: a soak of ten minutes must not run on for all of
    /// them behind a writer that stopped in its first second. The run here
    /// would last 20 s; its writer hangs at once.
    #[test]
    fn a_stalled_counter_stops_the_run_before_its_end() {
        let imp = bug("never-returns", |o| {
            Ok(Box::new(NeverReturns(AtomicPtr::new(Box::into_raw(
                TortureObject::new(&o.ledger, 0),
            )))))
        });
        let long = Config {
            stall_limit: Duration::from_secs(1),
            ..config(20_000, false)
        };
        let out = torture(&imp, long, &mut Progress::new(1, "test"));
        // Not "hang: writer 0 still running 1.0 s after the run stopped",
        // which the wind-down at the end of the run would report.
        assert!(
            out.failure
                .as_deref()
                .unwrap_or_default()
                .starts_with("hang: writer 0 made no progress for "),
            "{out:?}"
        );
    }

    /// A read section that panics with a real (not injected) panic.
    struct PanicsForReal(AtomicPtr<TortureObject>);

    impl Torture for PanicsForReal {
        fn read(&self) -> bool {
            true
        }
        fn read_with(&self, _inside: &mut dyn FnMut(&TortureObject)) {
            panic!("a real bug in read_with");
        }
        fn replace(&self, fresh: Box<TortureObject>) {
            let old = self.0.swap(Box::into_raw(fresh), SeqCst);
            // SAFETY: no reader ever dereferences anything.
            unsafe { object::reclaim(old) };
        }
    }

    impl Drop for PanicsForReal {
        fn drop(&mut self) {
            // SAFETY: the last published object, owned by `self`.
            unsafe { object::reclaim(*self.0.get_mut()) };
        }
    }

    fn panics_for_real() -> Implementation<dyn Torture, Options> {
        bug("panics-for-real", |o| {
            Ok(Box::new(PanicsForReal(AtomicPtr::new(Box::into_raw(
                TortureObject::new(&o.ledger, 0),
            )))))
        })
    }

    #[test]
    fn a_real_panic_is_a_failure() {
        let imp = panics_for_real();
        // The default stall limit, not `planted`'s 2 s: nothing hangs here,
        // but the panicking threads print backtraces (with RUST_BACKTRACE=1),
        // which on a loaded machine took more than 2 s in 3 of about 40 runs,
        // and the wind-down then reported them as a hang first.
        let out = torture(&imp, config(300, true), &mut Progress::new(1, "test"));
        assert!(
            out.failure
                .as_deref()
                .unwrap_or_default()
                .contains("a real bug in read_with"),
            "{out:?}"
        );
    }

    /// Every implementation goes through one full cycle of faults, each kind
    /// once, with no error, and keeps working.
    #[test]
    fn every_implementation_survives_one_cycle_of_every_fault() {
        fault::quiet_injected_panics();
        for imp in contenders() {
            let mut run = Run::start(imp, config(0, false));
            for n in 0..faults::KINDS {
                assert!(
                    faults::step(&run.shared, n),
                    "{}: fault {n}: {:?}",
                    imp.name,
                    run.shared.failure.lock().unwrap()
                );
            }
            run.check();
            let counts = run.shared.faults.snapshot();
            let out = run.finish();
            assert_eq!(out.errors, 0, "{out:?}");
            assert!(out.failure.is_none(), "{out:?}");
            assert_eq!(
                (
                    counts.panic_in_read,
                    counts.death_in_read,
                    counts.exit_registered,
                    counts.churn_threads,
                    counts.stalls,
                    counts.retire_storms,
                ),
                (1, 1, 1, faults::CHURN_THREADS, 1, 1),
                "{}",
                imp.name
            );
            assert!(counts.stall_max_ms >= 100.0, "{counts:?}");
            // A storm may be cut short by its time limit, never to nothing.
            assert!(
                (1..=faults::STORM_OBJECTS).contains(&counts.storm_objects),
                "{counts:?}"
            );
            assert!(out.reads > 0 && out.replaced > 0, "{out:?}");
        }
    }

    /// What fault threads did with a [`Recorder`]: (thread, operation).
    static RECORDED: Mutex<Vec<(std::thread::ThreadId, &'static str)>> = Mutex::new(Vec::new());

    /// Reaches one object that is never replaced, and records every read,
    /// held read and replacement that a fault thread (named `fault: ...`)
    /// makes; the writers' replacements are not recorded.
    struct Recorder(AtomicPtr<TortureObject>);

    impl Recorder {
        fn record(op: &'static str) {
            let me = std::thread::current();
            if me.name().is_some_and(|n| n.starts_with("fault: ")) {
                RECORDED.lock().unwrap().push((me.id(), op));
            }
        }
    }

    impl Torture for Recorder {
        fn read(&self) -> bool {
            Recorder::record("read");
            // SAFETY: reclaimed only when `self` drops.
            unsafe { &*self.0.load(Acquire) }.is_live()
        }
        fn read_with(&self, inside: &mut dyn FnMut(&TortureObject)) {
            Recorder::record("read_with");
            // SAFETY: as in `read`.
            inside(unsafe { &*self.0.load(Acquire) })
        }
        fn replace(&self, fresh: Box<TortureObject>) {
            Recorder::record("replace");
            // SAFETY: never published, so no reader holds it.
            unsafe { object::reclaim(Box::into_raw(fresh)) };
        }
    }

    impl Drop for Recorder {
        fn drop(&mut self) {
            // SAFETY: the one object, owned by `self`.
            unsafe { object::reclaim(*self.0.get_mut()) };
        }
    }

    /// Each fault really reaches the primitive, on threads of its own: a
    /// fault thread that counted its fault without entering a section would
    /// leave the thread-exit and unwind paths it exists for untested.
    #[test]
    fn every_fault_reaches_the_primitive_on_threads_of_its_own() {
        fault::quiet_injected_panics();
        let imp = bug("recorder", |o| {
            Ok(Box::new(Recorder(AtomicPtr::new(Box::into_raw(
                TortureObject::new(&o.ledger, 0),
            )))))
        });
        let no_readers = Config {
            readers: 0,
            ..config(0, false)
        };
        let run = Run::start(&imp, no_readers);
        // Per fault: (threads, reads, held reads, replacements).
        let mut seen = Vec::new();
        for n in 0..faults::KINDS {
            assert!(faults::step(&run.shared, n), "fault {n}");
            let recorded = std::mem::take(&mut *RECORDED.lock().unwrap());
            let threads: std::collections::HashSet<_> = recorded.iter().map(|r| r.0).collect();
            let count = |op| recorded.iter().filter(|r| r.1 == op).count() as u64;
            seen.push((
                threads.len() as u64,
                count("read"),
                count("read_with"),
                count("replace"),
            ));
        }
        let storm = run.shared.faults.snapshot().storm_objects;
        run.finish();
        assert!(storm >= 1, "{seen:?}");
        let churn = faults::CHURN_THREADS;
        assert_eq!(
            seen,
            [
                (1, 1, 1, 0),         // panic in read, caught; then a read
                (1, 0, 1, 0),         // death in read
                (1, 1, 0, 0),         // exit registered
                (churn, churn, 0, 0), // churn: one read per thread
                (1, 0, 1, 0),         // stall
                (1, 0, 0, storm),     // retire storm
            ],
            "(threads, reads, held reads, replacements) of each fault's threads"
        );
    }

    /// A reader stalled inside a section, whose object the writers unpublish
    /// and (wrongly) reclaim during the stall, finds it poisoned when it
    /// resumes: the stall checks its object again, not only on reaching it.
    #[test]
    fn a_stalled_reader_checks_its_object_again_when_it_resumes() {
        // An object stays published for a millisecond and is reclaimed a
        // millisecond after its unpublish: a section that is not descheduled
        // for that long finds it live when it reaches it, so only the check
        // after the stall sees the reclamation.
        let imp = bug("frees-too-early", |o| {
            Ok(Box::new(Busted::new(&o.ledger, Duration::from_millis(1))))
        });
        let no_readers = Config {
            readers: 0,
            ..config(0, false)
        };
        let run = Run::start(&imp, no_readers);
        // The fifth fault of the cycle is the stall. Its object counts as
        // unpublished when the writers replaced it meanwhile, as they almost
        // always do; a stall during which they did not says nothing, and is
        // taken again (up to five times). So is one whose object was
        // unpublished too late for its reclamation, a millisecond later, to
        // come before the stall ended: under miri, whose scheduler runs the
        // writer in slices, a stall ended first (`(true, 0)`, 2026-12-02).
        let mut stalls = Vec::new();
        for _ in 0..5 {
            let (before, errors) = (
                run.shared.faults.snapshot(),
                run.shared.errors.load(Relaxed),
            );
            assert!(faults::step(&run.shared, 4));
            let after = run.shared.faults.snapshot();
            assert_eq!(
                after.stalls,
                before.stalls + 1,
                "the fifth fault is a stall"
            );
            let unpublished = after.stalls_unpublished > before.stalls_unpublished;
            let found = run.shared.errors.load(Relaxed) - errors;
            stalls.push((unpublished, found));
            if unpublished && found > 0 {
                break;
            }
        }
        run.finish();
        assert!(
            stalls
                .iter()
                .any(|&(unpublished, errors)| unpublished && errors > 0),
            "a stalled reader's object, reclaimed during the stall, was not found \
             poisoned: (unpublished, errors) of each stall {stalls:?}"
        );
    }

    /// Replacements a [`Rationed`] primitive allows before any read.
    const RATION: u64 = 12;

    /// Reaches one object that is never replaced, and lets its writers make
    /// [`RATION`] replacements, then one more per held read (`read_with`),
    /// begun while that section is inside; past its ration a replacement
    /// waits, for ever.
    /// Orderings: `current` is set once, before the run's threads start
    /// (the spawn publishes it), so its Acquire loads pair with nothing
    /// later; `allowed` is SeqCst only for simplicity, a count that orders
    /// no other memory.
    struct Rationed {
        current: AtomicPtr<TortureObject>,
        allowed: AtomicU64,
    }

    impl Torture for Rationed {
        fn read(&self) -> bool {
            // SAFETY: reclaimed only when `self` drops.
            unsafe { &*self.current.load(Acquire) }.is_live()
        }
        fn read_with(&self, inside: &mut dyn FnMut(&TortureObject)) {
            self.allowed.fetch_add(1, SeqCst);
            // SAFETY: as in `read`.
            inside(unsafe { &*self.current.load(Acquire) })
        }
        fn replace(&self, fresh: Box<TortureObject>) {
            while (self.allowed)
                .fetch_update(SeqCst, SeqCst, |a| a.checked_sub(1))
                .is_err()
            {
                std::thread::sleep(Duration::from_millis(1));
            }
            // Returns well after the section read its count of replacements.
            std::thread::sleep(Duration::from_millis(20));
            // SAFETY: never published, so no reader holds it.
            unsafe { object::reclaim(Box::into_raw(fresh)) };
        }
    }

    /// Injects fault `n` of the cycle into a run of a [`Rationed`]
    /// primitive (`writers` writers, no readers, `stall_limit`) once its
    /// writers used up the ration, then ends the run: whether the step
    /// passed, the failure the run recorded, the fault counts and the
    /// replacements made.
    fn fault_after_the_ration(
        writers: usize,
        stall_limit: Duration,
        n: u64,
    ) -> (bool, Option<String>, FaultCounts, u64) {
        let imp = bug("rationed", |o| {
            Ok(Box::new(Rationed {
                current: AtomicPtr::new(Box::into_raw(TortureObject::new(&o.ledger, 0))),
                allowed: AtomicU64::new(RATION),
            }))
        });
        let config = Config {
            readers: 0,
            writers,
            stall_limit,
            ..config(0, false)
        };
        let run = Run::start(&imp, config);
        while writers > 0 && run.shared.replaced_total() < RATION {
            std::thread::sleep(Duration::from_millis(1));
        }
        let passed = faults::step(&run.shared, n);
        let failure = run.shared.failure.lock().unwrap().clone();
        let (counts, replaced) = (run.shared.faults.snapshot(), run.shared.replaced_total());
        run.finish();
        (passed, failure, counts, replaced)
    }

    /// A stall's object counts as unpublished only with more replacements
    /// during the stall than writers: one writer's one replacement may have
    /// begun before the section reached its object, and proves nothing.
    #[test]
    fn a_stall_with_one_replacement_per_writer_is_not_counted_unpublished() {
        test_support::within_a_deadline(
            "a stall with one replacement",
            Duration::from_secs(60),
            || {
                // The fifth fault of the cycle is the stall; the writer then
                // waits for ever, and the step fails as a hang.
                let (_, _, counts, replaced) =
                    fault_after_the_ration(1, Duration::from_millis(200), 4);
                assert_eq!(
                    (counts.stalls, counts.stalls_unpublished, replaced),
                    (1, 0, RATION + 1),
                    "(stalls, of them unpublished, replacements)"
                );
            },
        );
    }

    /// After a fault the driver waits for the writers' progress: writers
    /// that make none fail the step once the stall limit passes, the failure
    /// naming the replacements needed (four per writer and four more) and the
    /// fault. The writers' own watches would catch the hang too, but later
    /// and without naming the fault that caused it.
    #[test]
    fn writers_without_progress_after_a_fault_fail_its_step() {
        test_support::within_a_deadline(
            "a fault's step behind hung writers",
            Duration::from_secs(60),
            || {
                // The third fault of the cycle: a thread exits registered.
                // Progress counts from the fault, not from the run's start.
                let (passed, failure, _, _) =
                    fault_after_the_ration(2, Duration::from_millis(200), 2);
                let failure = failure.unwrap_or_default();
                assert!(!passed, "{failure}");
                assert!(
                    failure.starts_with("hang: writers completed 0 of 12 replacements in ")
                        && failure.ends_with(" s after a exit registered fault"),
                    "{failure}"
                );
            },
        );
    }

    /// With no writers there is no progress to wait for: a fault's step
    /// passes at once instead of failing as a hang.
    #[test]
    fn without_writers_a_fault_waits_for_no_replacements() {
        test_support::within_a_deadline(
            "a fault's step without writers",
            Duration::from_secs(60),
            || {
                let (passed, failure, _, _) = fault_after_the_ration(0, Duration::from_secs(1), 2);
                assert_eq!((passed, failure), (true, None));
            },
        );
    }

    /// A real (not injected) panic inside the read section of a panic-in-read
    /// or death-in-read fault fails the run with its message, and the fault
    /// does not count as injected: only the fault's own panic is expected.
    #[test]
    fn a_real_panic_inside_a_faults_section_is_a_failure_not_a_fault() {
        for n in [0, 1] {
            let run = Run::start(
                &panics_for_real(),
                Config {
                    readers: 0,
                    ..config(0, false)
                },
            );
            faults::step(&run.shared, n);
            let failure = run.shared.failure.lock().unwrap().clone();
            let counts = run.shared.faults.snapshot();
            run.finish();
            assert!(
                failure
                    .as_deref()
                    .unwrap_or_default()
                    .contains("a real bug in read_with"),
                "fault {n}: {failure:?}"
            );
            assert_eq!(
                (counts.panic_in_read, counts.death_in_read),
                (0, 0),
                "fault {n}"
            );
        }
    }

    /// The driver injects the cycle's faults in order, one after another,
    /// until the run stops: once the second (a death in read) is counted,
    /// the first (a panic in read) was counted as often or once more (a
    /// poll descheduled for a whole cycle may see the next cycle's panic);
    /// once the run stops, the driver returns.
    #[test]
    fn the_driver_injects_the_cycle_in_order_until_the_run_stops() {
        test_support::within_a_deadline("the fault driver", Duration::from_secs(30), || {
            fault::quiet_injected_panics();
            let imp = contenders().next().expect("a contender");
            let run = Run::start(
                imp,
                Config {
                    readers: 0,
                    ..config(0, false)
                },
            );
            let counts = std::thread::scope(|s| {
                let driver = s.spawn(|| faults::drive(&run.shared));
                let mut counts = run.shared.faults.snapshot();
                while counts.death_in_read == 0 && !run.shared.stop.load(Relaxed) {
                    std::thread::sleep(Duration::from_millis(1));
                    counts = run.shared.faults.snapshot();
                }
                run.shared.stop.store(true, Relaxed);
                driver
                    .join()
                    .expect("the driver returns once the run stops");
                counts
            });
            let out = run.finish();
            let (panics, deaths) = (counts.panic_in_read, counts.death_in_read);
            assert!(
                deaths >= 1 && (deaths..=deaths + 1).contains(&panics),
                "{counts:?} {out:?}"
            );
        });
    }

    /// A fault injected once the run stopped starts nothing more: a churn
    /// starts no thread and a retire storm replaces nothing, neither
    /// counted, and the step reports the stop.
    #[test]
    fn faults_after_the_stop_start_nothing() {
        let run = Run::start(
            contenders().next().expect("a contender"),
            Config {
                readers: 0,
                ..config(0, false)
            },
        );
        run.shared.stop.store(true, Relaxed);
        // The fourth and sixth faults of the cycle: churn, retire storm.
        let passed = [3, 5].map(|n| faults::step(&run.shared, n));
        let counts = run.shared.faults.snapshot();
        run.finish();
        assert_eq!(
            (
                passed,
                counts.churn_threads,
                counts.retire_storms,
                counts.storm_objects
            ),
            ([false, false], 0, 0, 0)
        );
    }

    /// Whether six replacements, made on another thread while a reader
    /// holds a section on the object the first of them unpublishes, all
    /// returned within `patience`. Six take every path of each
    /// implementation's rotation (rcu-lite's by sequence number, hazptr's by
    /// a hash of the count, whose first is a synchronize). The section then
    /// ends, and the reader's thread exits (a qsbr reader goes offline), so a
    /// replacement that waits for it is let go.
    fn replacements_return_during_a_section(
        primitive: &dyn Torture,
        ledger: &Arc<Ledger>,
        patience: Duration,
    ) -> bool {
        std::thread::scope(|s| {
            let reader = s.spawn(|| {
                let mut returned = false;
                primitive.read_with(&mut |_| {
                    let writer = s.spawn(|| {
                        for seq in 1..=6 {
                            primitive.replace(TortureObject::new(ledger, seq));
                        }
                    });
                    let deadline = Instant::now() + patience;
                    while !writer.is_finished() && Instant::now() < deadline {
                        std::thread::sleep(Duration::from_millis(1));
                    }
                    returned = writer.is_finished();
                });
                returned
            });
            reader.join().unwrap()
        })
    }

    /// Builds each implementation with `deferred_only` and hands it to
    /// `check` with its ledger; returns the names it could build.
    fn each_implementation(
        deferred_only: bool,
        mut check: impl FnMut(&str, &dyn Torture, &Arc<Ledger>),
    ) -> Vec<&'static str> {
        let mut built = Vec::new();
        for imp in contenders() {
            let ledger = Ledger::new();
            let options = Options {
                ledger: Arc::clone(&ledger),
                slow_path: false,
                deferred_only,
            };
            // Locks, which free under the write lock, cannot run deferred-only.
            let Ok(primitive) = (imp.make)(&options) else {
                continue;
            };
            check(imp.name, &*primitive, &ledger);
            built.push(imp.name);
        }
        built
    }

    /// With `deferred_only`, no replacement waits for a reader. The bound is
    /// far above what they take (microseconds).
    #[test]
    fn deferred_only_replacements_never_wait_for_a_reader() {
        let built = each_implementation(true, |name, primitive, ledger| {
            assert!(
                replacements_return_during_a_section(primitive, ledger, Duration::from_secs(10)),
                "{name}: a deferred-only replacement waited for a reader inside its section"
            );
        });
        assert!(
            built.contains(&"hazptr") && built.contains(&"rcu-lite-memb"),
            "{built:?}"
        );
    }

    /// Without `deferred_only`, the implementations that synchronize (or
    /// take a write lock) wait for a reader inside its section in one of
    /// six replacements: their writers do not only defer. A replacement
    /// that returned while the section was still held did not wait.
    #[test]
    fn synchronizing_implementations_wait_for_a_reader() {
        const SYNCHRONIZING: [&str; 4] = ["hazptr", "rcu-lite-memb", "rcu-lite-qsbr", "qrwlock"];
        each_implementation(false, |name, primitive, ledger| {
            if SYNCHRONIZING.contains(&name) {
                assert!(
                    !replacements_return_during_a_section(
                        primitive,
                        ledger,
                        Duration::from_millis(100)
                    ),
                    "{name}: six replacements returned while a reader held a section on the first one's object: none synchronized"
                );
            }
        });
    }

    /// Every implementation's reads check the object they reach: with its
    /// published object reclaimed under it (as a premature reclamation
    /// would), a plain read returns false and a held read finds it not
    /// live. A read that checked nothing would pass every use-after-free.
    #[test]
    fn every_implementations_reads_find_an_object_reclaimed_under_them() {
        test_support::within_a_deadline(
            "reads of a reclaimed object",
            Duration::from_secs(60),
            || {
                let built = each_implementation(false, |name, primitive, _ledger| {
                    // On a thread of its own, which exits (a qsbr reader goes
                    // offline) before the primitive is dropped.
                    std::thread::scope(|s| {
                        s.spawn(|| {
                            assert!(
                                primitive.read(),
                                "{name}: its first object read as not live"
                            );
                            let mut reached = false;
                            // The published object stays allocated until the
                            // primitive's drop reclaims it again, through the
                            // pointer that may free it.
                            primitive.read_with(&mut |object| {
                                object::reclaim_in_place(object);
                                reached = true;
                            });
                            assert!(reached, "{name}: read_with reached no object");
                            assert!(
                                !primitive.read(),
                                "{name}: a read passed an object reclaimed under it"
                            );
                            assert!(
                                !held_read(primitive, || {}),
                                "{name}: a held read passed an object reclaimed under it"
                            );
                        })
                        .join()
                        .unwrap();
                    });
                });
                assert_eq!(built.len(), contenders().count(), "{built:?}");
            },
        );
    }

    /// Every implementation's replacement publishes the object it is given:
    /// the next section reaches it. A writer that dropped it instead would
    /// leave the readers checking the first object for ever, which
    /// crossbeam-epoch, exempt from the leak check, would pass.
    #[test]
    fn every_implementations_replacement_publishes_its_object() {
        test_support::within_a_deadline(
            "replacements of every implementation",
            Duration::from_secs(60),
            || {
                let built = each_implementation(false, |name, primitive, ledger| {
                    // Each read on a thread of its own, which exits (a qsbr
                    // reader goes offline) before the next replacement.
                    let reached = || {
                        std::thread::scope(|s| {
                            s.spawn(|| {
                                let mut seq = None;
                                primitive.read_with(&mut |object| seq = Some(object.seq()));
                                seq
                            })
                            .join()
                            .unwrap()
                        })
                    };
                    assert_eq!(reached(), Some(0), "{name}: the first object");
                    // Three: each way of rcu-lite's rotation.
                    for seq in 1..=3 {
                        primitive.replace(TortureObject::new(ledger, seq));
                        assert_eq!(
                            reached(),
                            Some(seq),
                            "{name}: a section after replacement {seq} did not reach its object"
                        );
                    }
                });
                assert_eq!(built.len(), contenders().count(), "{built:?}");
            },
        );
    }

    /// `imp` built on the fast path, not deferred-only, with a ledger of
    /// its own.
    fn built_with_a_ledger(
        imp: &Implementation<dyn Torture, Options>,
    ) -> (Arc<Ledger>, Box<dyn Torture>) {
        let ledger = Ledger::new();
        let primitive = (imp.make)(&Options {
            ledger: Arc::clone(&ledger),
            slow_path: false,
            deferred_only: false,
        })
        .expect("every contender builds without deferred_only");
        (ledger, primitive)
    }

    /// Dropping any implementation reclaims the object it publishes, even
    /// crossbeam-epoch, which the run's leak check exempts (its retired
    /// objects may outlive it).
    #[test]
    fn dropping_any_implementation_reclaims_its_published_object() {
        for imp in contenders() {
            let (ledger, primitive) = built_with_a_ledger(imp);
            drop(primitive);
            assert_eq!(
                (ledger.allocated(), ledger.reclaimed()),
                (1, 1),
                "{}: (allocated, reclaimed) once dropped",
                imp.name
            );
        }
    }

    /// Every implementation hands each object it replaces to reclamation:
    /// once it is dropped, and (for crossbeam-epoch, whose global collector
    /// may keep deferred objects past the drop, which exempts it from the
    /// run's leak check) once that collector has caught up, every object
    /// it was given is reclaimed. A writer that publishes without retiring
    /// the old object would leak; torture's reads would never notice.
    #[test]
    fn every_implementation_reclaims_what_it_replaced() {
        test_support::within_a_deadline(
            "every implementation reclaims what it replaced",
            Duration::from_secs(60),
            || {
                // Under miri 500 replacements of every contender outlast
                // the deadline on its clock.
                let replacements: u64 = if cfg!(miri) { 50 } else { 500 };
                for imp in contenders() {
                    let (ledger, primitive) = built_with_a_ledger(imp);
                    let reclaims_all = primitive.reclaims_all_when_dropped();
                    for seq in 1..=replacements {
                        primitive.replace(TortureObject::new(&ledger, seq));
                    }
                    drop(primitive);
                    if !reclaims_all {
                        // Pinning and flushing advances crossbeam's global
                        // epoch and runs what it deferred; other tests' pins
                        // only delay it, so give it a while.
                        let until = Instant::now() + Duration::from_secs(20);
                        while ledger.unreclaimed() > 0 && Instant::now() < until {
                            crossbeam_epoch::pin().flush();
                        }
                    }
                    assert_eq!(
                        (ledger.allocated(), ledger.reclaimed()),
                        (replacements + 1, replacements + 1),
                        "{}: (allocated, reclaimed) after {replacements} replacements and the drop",
                        imp.name
                    );
                }
            },
        );
    }

    #[test]
    fn implementations_run_at_once_or_in_turn() {
        let chosen: Vec<_> = implementations().iter().take(2).collect();
        let total = Duration::from_millis(600);
        let at_once = torture_all(&chosen, config(0, true), total, Schedule::Concurrent);
        let in_turn = torture_all(&chosen, config(0, false), total, Schedule::Sequential);
        // One outcome per implementation, in order, either way: with none,
        // the checks below would pass vacuously (and the command exit 0).
        let names = |outcomes: &[Outcome]| -> Vec<String> {
            outcomes.iter().map(|o| o.name.clone()).collect()
        };
        let chosen_names: Vec<String> = chosen.iter().map(|imp| imp.name.to_owned()).collect();
        assert_eq!(names(&at_once), chosen_names);
        assert_eq!(names(&in_turn), chosen_names);
        for out in at_once.iter().chain(&in_turn) {
            assert_checked_without_error(out);
        }
        assert!(
            at_once
                .iter()
                .all(|o| o.duration_s >= 0.59 && o.faults.is_some())
        );
        // Run at once, each run's halves are those of `total`, whatever
        // `config.duration` says (0 here): the checks at about 100 and 200
        // ms fall in the first, which holds at least the published object.
        // (Under miri the first check may come later than 300 ms.)
        if !cfg!(miri) {
            assert!(
                at_once.iter().all(|o| o.unreclaimed_halves[0] > 0),
                "{at_once:?}"
            );
        }
        assert!(
            in_turn
                .iter()
                .all(|o| o.duration_s < 0.59 && o.faults.is_none())
        );
    }

    /// A run times its readers' and writers' CPU in the window, and the
    /// process's other threads only when it runs alone; with faults, whose
    /// threads come and go, nothing.
    #[test]
    #[cfg_attr(miri, ignore = "miri has no CPU-time clocks")]
    fn a_run_splits_its_cpu_time_by_role_and_counts_the_others_only_alone() {
        let chosen: Vec<_> = contenders().take(2).collect();
        let at_once = torture_all(
            &chosen,
            config(0, false),
            Duration::from_millis(300),
            Schedule::Concurrent,
        );
        let alone = torture(chosen[0], config(300, false), &mut Progress::new(1, "test"));
        let with_faults = torture(chosen[0], config(300, true), &mut Progress::new(1, "test"));
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
        for o in at_once.iter().chain([&alone]) {
            assert_checked_without_error(o);
            let cpu = o.cpu.unwrap_or_else(|| panic!("no CPU time: {o:?}"));
            // Two readers and a writer that never block: each ran some of
            // the window, and together no more than the machine had.
            assert!(cpu.readers_s > 0.0 && cpu.writers_s > 0.0, "{o:?}");
            let used = cpu.readers_s + cpu.writers_s + cpu.others_s.unwrap_or(0.0);
            assert!(used <= o.duration_s * cpus * 1.05 + 0.01, "{o:?}");
            let share = o.writers_cpu_share().expect("timed");
            assert!((cpu.writers_s / used - share).abs() < 1e-9, "{o:?}");
            let ns = o.writer_cpu_ns_per_replaced().expect("timed");
            assert!(
                (ns - cpu.writers_s * 1e9 / o.replaced as f64).abs() < 1e-6,
                "{o:?}"
            );
        }
        assert!(at_once.iter().all(|o| o.cpu.unwrap().others_s.is_none()));
        assert!(
            alone.cpu.unwrap().others_s.is_some() && alone.others_cpu_ns_per_replaced().is_some(),
            "{alone:?}"
        );
        assert_eq!(with_faults.cpu, None, "{with_faults:?}");
        assert_eq!(with_faults.writer_cpu_ns_per_replaced(), None);
    }

    /// The others' time is the process's less the readers' and writers',
    /// never below 0 (the clocks are read one after the other).
    #[test]
    fn the_others_cpu_time_is_what_the_readers_and_writers_leave_of_the_process() {
        let reading = |readers, writers, process: Option<u64>| CpuReading {
            readers: Duration::from_millis(readers),
            writers: Duration::from_millis(writers),
            process: process.map(Duration::from_millis),
        };
        let start = reading(100, 50, Some(1_000));
        let split = reading(900, 450, Some(2_500)).since(start, true);
        assert_eq!(
            split,
            CpuSplit {
                readers_s: 0.8,
                writers_s: 0.4,
                others_s: Some(0.3)
            }
        );
        assert_eq!(
            reading(900, 450, Some(2_100)).since(start, true).others_s,
            Some(0.0)
        );
        assert_eq!(
            reading(900, 450, Some(2_500)).since(start, false).others_s,
            None
        );
        assert_eq!(reading(900, 450, None).since(start, true).others_s, None);
    }

    /// CPU time per object divides by the objects replaced: a run that
    /// replaced none has no such figure (not an infinite one), and neither
    /// has a run without the others' time for theirs. The writers' share
    /// divides by the CPU time used, and a run that used none has none.
    #[test]
    fn cpu_time_per_object_needs_an_object() {
        let with_cpu = |replaced, others_s| Outcome {
            cpu: Some(CpuSplit {
                readers_s: 0.8,
                writers_s: 0.4,
                others_s,
            }),
            ..a_clean_round(replaced)
        };
        let run = with_cpu(2_000_000, Some(0.002));
        assert_eq!(run.writer_cpu_ns_per_replaced(), Some(200.0));
        assert_eq!(run.others_cpu_ns_per_replaced(), Some(1.0));
        let none_replaced = with_cpu(0, Some(0.002));
        assert_eq!(none_replaced.writer_cpu_ns_per_replaced(), None);
        assert_eq!(none_replaced.others_cpu_ns_per_replaced(), None);
        // The text says so, rather than printing NaN.
        let mut text = Vec::new();
        write_text(&mut text, std::slice::from_ref(&none_replaced)).unwrap();
        let text = String::from_utf8(text).unwrap();
        assert!(!text.contains("NaN"), "{text}");
        assert!(
            text.contains("writers - ns per object replaced (none was)"),
            "{text}"
        );
        // The share needs no object: 0.4 of 1.202 s.
        let share = none_replaced.writers_cpu_share().unwrap();
        assert!((share - 0.4 / 1.202).abs() < 1e-12, "{share}");
        let not_alone = with_cpu(2_000_000, None);
        assert_eq!(not_alone.writer_cpu_ns_per_replaced(), Some(200.0));
        assert_eq!(not_alone.others_cpu_ns_per_replaced(), None);
        let share = not_alone.writers_cpu_share().unwrap();
        assert!((share - 0.4 / 1.2).abs() < 1e-12, "{share}");
        assert_eq!(a_clean_round(10).writer_cpu_ns_per_replaced(), None);
        // No CPU time at all (clocks too coarse for a short run): no share.
        let idle = Outcome {
            cpu: Some(CpuSplit {
                readers_s: 0.0,
                writers_s: 0.0,
                others_s: Some(0.0),
            }),
            ..a_clean_round(10)
        };
        assert_eq!(idle.writers_cpu_share(), None);
    }

    /// Every implementation but the self-check `busted`.
    fn contenders() -> impl Iterator<Item = &'static Implementation<dyn Torture, Options>> {
        implementations()
            .iter()
            .filter(|imp| imp.origin != Origin::SelfCheck)
    }

    /// `busted` is chosen by its name only, never by `all`. (That its run
    /// fails is `premature_reclamation_is_detected`'s first case, and the
    /// CLI test `torture_of_busted_counts_errors_and_exits_1`.)
    #[test]
    fn busted_is_chosen_only_by_name() {
        let all = crate::registry::select(implementations(), &["all".to_owned()]).unwrap();
        assert!(all.iter().all(|imp| imp.name != "busted"));
        assert_eq!(all.len(), contenders().count());
        let chosen = crate::registry::select(implementations(), &["busted".to_owned()]).unwrap();
        assert_eq!(chosen.len(), 1);
        assert_eq!(chosen[0].origin, Origin::SelfCheck);
    }

    #[test]
    fn peers_survive_a_short_torture() {
        for imp in contenders() {
            let out = torture(imp, config(300, false), &mut Progress::new(1, "test"));
            assert_checked_without_error(&out);
        }
    }

    /// A short run read, replaced, and found no error. Under miri, whose
    /// threads run thousands of times slower (one replacement took 372 ms of
    /// its clock), a window may close before a writer's first replacement:
    /// that run checked nothing, its one error, which says nothing about the
    /// primitive, and miri has still checked every access the run made. Any
    /// other error fails there too.
    fn assert_checked_without_error(out: &Outcome) {
        let window_too_short_under_miri = cfg!(miri)
            && out.errors == 1
            && out
                .failure
                .as_deref()
                .is_some_and(|f| f.starts_with("checked nothing: "));
        if !window_too_short_under_miri {
            assert_eq!(out.errors, 0, "{out:?}");
            assert!(out.reads > 0 && out.replaced > 0, "{out:?}");
        }
    }
}
