//! `locktorture`: reader-writer locks under contention, with exclusion checks.
//!
//! Mirrors `kernel/locking/locktorture.c` for its `rw_lock` types: writer and
//! reader threads loop acquire, check exclusion, hold briefly, release; each
//! counts its own acquisitions. The statistics lines are the kernel's
//! (`__torture_print_stats()`); from a 5 s run of `qrwlock` at 4 writers and
//! 16 readers on 2 vCPUs:
//!
//! ```text
//! Writes:  Total: 407583  Max/Min: 118538/82887   Fail: 0
//! Reads :  Total: 724044  Max/Min: 53187/38185   Fail: 0
//! ```
//!
//! `???` follows Max/Min when `max / 2 > min` in whole acquisitions, as the
//! kernel tests it (some thread got less than half of the luckiest one's
//! share, the half rounded down: 3 against 1 is not flagged; starvation), `!!!` follows Fail when it is non-zero
//! (a writer saw anyone else inside, or a reader saw a writer).
//!
//! Hold times follow the kernel's `torture_rwlock_{write,read}_delay()` short
//! delays (writers 2 us, readers 10 us, busy-waited), without the rare 100 ms
//! delays, which a short user-space run would turn into noise.
//!
//! With [`Config::faults`] a fault driver adds them back as faults, with
//! panics inside sections and threads that die holding the lock (see
//! `faults.rs`), and a third line counts them:
//!
//! ```text
//! Faults:  Panics: 4/4  Deaths: 4/4  Churn: 1024  Stalls: 3/3  Max stall: 291 ms  Poisoned: 8
//! ```
//!
//! (writer/reader side each). Runs are bounded: a side that makes no progress
//! for [`Config::stall_limit`] ends the run with `FAILURE: hang: ...`.
//!
//! Acquisitions are counted over the timed window, from the clock's start to
//! the stop (each thread's count at both ends): threads released by the
//! start barrier before the clock starts, or finishing a section after the
//! stop, do not add to `duration_s`'s counts. Exclusion failures count
//! whenever they happen. A window with no acquisition at all checked
//! nothing, and the run fails with `FAILURE: checked nothing: ...`.

pub mod faults;
pub mod live;
mod peers;
mod qrwlock;

use crate::delay::{Padded, spin_for, thread_runqueue_wait};
use crate::fault::{self, ProgressWatch};
use crate::locktorture::live::LiveLines;
use crate::progress::Progress;
use crate::registry::Implementation;
use crate::start_gate::{StartGate, ThreadRefused};
use serde::{Deserialize, Serialize};
use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering::*};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// A reader-writer lock measured by `locktorture`.
pub trait TortureLock: Send + Sync {
    /// Runs `section` holding the lock exclusively.
    fn write_section(&self, section: &mut dyn FnMut());
    /// Runs `section` holding the lock shared.
    fn read_section(&self, section: &mut dyn FnMut());
    /// How many acquisitions found the lock poisoned by a section that
    /// panicked and recovered it (std's `RwLock` poisons; the others do not).
    fn poison_recoveries(&self) -> u64 {
        0
    }
}

/// Every `lock_api` reader-writer lock (qrwlock's and parking_lot's): a section
/// runs under the guard, which unlocks on unwind too.
impl<R: lock_api::RawRwLock + Send + Sync> TortureLock for lock_api::RwLock<R, ()> {
    fn write_section(&self, section: &mut dyn FnMut()) {
        let _guard = self.write();
        section();
    }
    fn read_section(&self, section: &mut dyn FnMut()) {
        let _guard = self.read();
        section();
    }
}

/// Every lock contender, ours and peers.
pub fn implementations() -> &'static [Implementation<dyn TortureLock>] {
    IMPLEMENTATIONS
}

/// The registry: this workspace's implementations first, then the peers.
static IMPLEMENTATIONS: &[Implementation<dyn TortureLock>] = &[
    qrwlock::QRWLOCK,
    peers::PARKING_LOT,
    peers::STD,
    peers::SPIN,
];

/// How to run locktorture.
#[derive(Clone, Copy, Debug)]
pub struct Config {
    /// Writer threads.
    pub writers: usize,
    /// Reader threads.
    pub readers: usize,
    /// How long each lock is tortured.
    pub duration: Duration,
    /// How often to print the statistics lines during the run (text mode).
    pub stat_interval: Option<Duration>,
    /// How long a writer holds the lock.
    pub write_hold: Duration,
    /// How long a reader holds the lock.
    pub read_hold: Duration,
    /// Inject faults (see `faults.rs`): panics inside sections, threads that
    /// die holding the lock, thread churn, long holds.
    pub faults: bool,
    /// How long the writers' or readers' progress may stall before the run
    /// counts a hang.
    pub stall_limit: Duration,
}

impl Config {
    /// The kernel's short delays: writers hold 2 us, readers 10 us.
    pub const WRITE_HOLD: Duration = Duration::from_micros(2);
    /// See [`Config::WRITE_HOLD`].
    pub const READ_HOLD: Duration = Duration::from_micros(10);
    /// The shortest `stat_interval` the command line accepts.
    pub const MIN_STAT_INTERVAL: Duration = Duration::from_millis(10);
    /// The default [`Config::stall_limit`] (ten minutes under miri, as for
    /// torture).
    pub const STALL_LIMIT: Duration = Duration::from_secs(if cfg!(miri) { 600 } else { 20 });
}

/// Acquisition counts of one side (writers or readers).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counts {
    /// Sum over threads.
    pub total: u64,
    /// The busiest thread's count.
    pub max: u64,
    /// The least busy thread's count.
    pub min: u64,
}

/// Each thread's count now.
fn loads(per_thread: &[Padded<AtomicU64>]) -> Vec<u64> {
    per_thread.iter().map(|c| c.load(Relaxed)).collect()
}

/// Each thread's time off the runqueue, in ns (`None` where 0: no
/// schedstat).
fn served_ns(per_thread: &[Padded<AtomicU64>]) -> Vec<Option<u64>> {
    per_thread
        .iter()
        .map(|ns| Some(ns.load(Relaxed)).filter(|&ns| ns > 0))
        .collect()
}

impl Counts {
    fn of(per_thread: &[Padded<AtomicU64>]) -> Counts {
        Counts::between(&vec![0; per_thread.len()], &loads(per_thread))
    }

    /// What each thread counted from `before` to `after` (per thread, same
    /// order).
    fn between(before: &[u64], after: &[u64]) -> Counts {
        let values: Vec<u64> = after.iter().zip(before).map(|(a, b)| a - b).collect();
        Counts {
            total: values.iter().sum(),
            max: values.iter().copied().max().unwrap_or(0),
            min: values.iter().copied().min().unwrap_or(0),
        }
    }

    /// Whether some thread got less than half of the busiest thread's share,
    /// the half rounded down: the kernel's `max / 2 > min` on whole counts
    /// (3 against 1 is not flagged, 4 against 1 is). A side on which no
    /// thread got in at all is not flagged either: its count of 0 says so,
    /// and [`Outcome::exclusion_unchecked_side`] names it.
    pub fn starved(&self) -> bool {
        self.max / 2 > self.min
    }

    /// Acquisitions per thread.
    pub fn per_thread(&self, threads: usize) -> f64 {
        if threads == 0 {
            0.0
        } else {
            self.total as f64 / threads as f64
        }
    }
}

/// Acquisitions per millisecond that a thread was not waiting for a CPU, over
/// the threads of one side: the highest and the lowest rate, each over the
/// thread's own loop, from the start gate until it saw the stop
/// (`ServedClock`). An acquisition that completes after the stop is not
/// counted: a thread kept out for the whole timed window and let in once
/// the others stopped (spin's writers among 16 readers) would otherwise
/// show a rate, and a starvation verdict, for it (it did until 2026-12-07;
/// the window's [`Counts`] showed 0). The loop begins up to a scheduling
/// round before the timed window does.
///
/// On a machine with more threads than CPUs the kernel's Max/Min mixes two
/// things: how evenly the lock serves the threads, and how evenly the
/// scheduler lets them run (a thread that sits on a runqueue asks for the
/// lock less often). This rate divides each thread's count by its run time
/// minus its runqueue wait (`/proc/thread-self/schedstat`), which takes out
/// the second and nothing else: time a thread spends asleep or spinning in
/// the lock still counts against the lock.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ServedRate {
    /// The highest per-thread rate.
    pub max: f64,
    /// The lowest per-thread rate.
    pub min: f64,
}

impl ServedRate {
    /// The rates of threads that made `counts` acquisitions in `served_ns`
    /// off the runqueue each (same order); `None` if any thread has no time
    /// (no schedstat), rather than a rate over some of the threads.
    fn of(counts: &[u64], served_ns: &[Option<u64>]) -> Option<ServedRate> {
        let rates: Vec<f64> = counts
            .iter()
            .zip(served_ns)
            .filter_map(|(&n, &ns)| ns.filter(|&ns| ns > 0).map(|ns| (n, ns)))
            .map(|(n, ns)| n as f64 / (ns as f64 / 1e6))
            .collect();
        if rates.len() < counts.len() || rates.is_empty() {
            return None;
        }
        Some(ServedRate {
            max: rates.iter().copied().fold(f64::MIN, f64::max),
            min: rates.iter().copied().fold(f64::MAX, f64::min),
        })
    }

    /// The kernel's starvation test (`max / 2 > min`) on the rates.
    pub fn starved(&self) -> bool {
        self.max / 2.0 > self.min
    }
}

/// The outcome for one lock.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Outcome {
    /// Lock name.
    pub lock: String,
    /// Writer threads.
    pub writers: usize,
    /// Reader threads.
    pub readers: usize,
    /// Seconds the lock was tortured.
    pub duration_s: f64,
    /// Writer acquisitions.
    pub writes: Counts,
    /// Reader acquisitions.
    pub reads: Counts,
    /// Writer acquisitions per millisecond off the runqueue (see
    /// [`ServedRate`]); absent without writers or without schedstat.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub writes_served_per_ms: Option<ServedRate>,
    /// The same for readers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reads_served_per_ms: Option<ServedRate>,
    /// Exclusion violations seen by writers and readers together.
    pub fail: u64,
    /// Exclusion violations seen by writers.
    pub write_fail: u64,
    /// Exclusion violations seen by readers.
    pub read_fail: u64,
    /// Faults injected, by kind (with `--faults`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub faults: Option<faults::FaultCounts>,
    /// A hang (no progress for the stall limit) or a panic that was not
    /// injected.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failure: Option<String>,
    /// Writer acquisitions per second in each round, in the order the
    /// rounds ran, for an outcome merged from rounds taken in turns with
    /// other locks ([`merge_rounds`], as the report runs them). Empty for a
    /// single run, which is then its own one round (see
    /// [`Outcome::writes_per_s_by_round`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub writes_per_s_rounds: Vec<f64>,
    /// The starvation verdicts of each round, in the order the rounds ran,
    /// for an outcome merged from rounds ([`merge_rounds`]); empty for a
    /// single run (see [`Outcome::starved_by_round`]). The other fields
    /// hold the median round's counts only, and one round of a quick
    /// profile is short enough (under a second, 20 threads on 2 CPUs) that
    /// whether it flags a side moves from round to round.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub starved_rounds: Vec<Starved>,
}

/// Which sides of one run failed the kernel's starvation test (`max / 2 >
/// min`), on the raw counts ([`Counts::starved`]) and on the rates off the
/// runqueue ([`ServedRate::starved`], `None` where not measured).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Starved {
    /// Some writer got less than half the busiest writer's count (rounded
    /// down, [`Counts::starved`]).
    pub writers: bool,
    /// Some reader got less than half the busiest reader's count (rounded
    /// down).
    pub readers: bool,
    /// The writers' test on acquisitions per millisecond off the runqueue.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub writers_off_runqueue: Option<bool>,
    /// The readers' test on acquisitions per millisecond off the runqueue.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub readers_off_runqueue: Option<bool>,
}

impl Starved {
    /// Whether either side starved on the raw counts.
    pub fn any(&self) -> bool {
        self.writers || self.readers
    }
}

impl Outcome {
    /// What the run's failure was, in words; `None` if it passed.
    pub fn why_failed(&self) -> Option<String> {
        let mut why = Vec::new();
        if self.fail > 0 {
            why.push(format!(
                "{} exclusion failure{}",
                self.fail,
                if self.fail == 1 { "" } else { "s" }
            ));
        }
        why.extend(self.failure.clone());
        (!why.is_empty()).then(|| why.join(", "))
    }

    /// This run's own starvation verdicts (for a merged outcome, the median
    /// round's).
    pub fn starved(&self) -> Starved {
        Starved {
            writers: self.writes.starved(),
            readers: self.reads.starved(),
            writers_off_runqueue: self.writes_served_per_ms.map(|r| r.starved()),
            readers_off_runqueue: self.reads_served_per_ms.map(|r| r.starved()),
        }
    }

    /// The starvation verdicts round by round: a single run's are its one
    /// round.
    pub fn starved_by_round(&self) -> Vec<Starved> {
        if self.starved_rounds.is_empty() {
            vec![self.starved()]
        } else {
            self.starved_rounds.clone()
        }
    }

    /// Writer acquisitions per second, round by round: a single run's rate
    /// is its one round.
    pub fn writes_per_s_by_round(&self) -> Vec<f64> {
        if self.writes_per_s_rounds.is_empty() {
            vec![self.writes.total as f64 / self.duration_s.max(1e-9)]
        } else {
            self.writes_per_s_rounds.clone()
        }
    }

    /// Writer acquisitions per writer thread over reader acquisitions per reader
    /// thread: 1.0 is perfectly even, near 0 means writers starve. `None`
    /// where the readers got none (or the mix has none): no share to give
    /// (it printed `inf` until 2026-12-07).
    pub fn writer_share(&self) -> Option<f64> {
        let r = self.reads.per_thread(self.readers);
        (r > 0.0).then(|| self.writes.per_thread(self.writers) / r)
    }
}

impl Outcome {
    /// The side (`"write"` or `"read"`) that never got in during the timed
    /// window while the other did, where the run had both: the lock was
    /// then never held by a reader and a writer in turn, so reader-writer
    /// exclusion went unchecked. Starvation (a read lock that ignores
    /// waiting writers, or a reader-preferring lock under a stream of
    /// readers) looks so; it is not a failure by itself, since a lock that
    /// starves a side still excludes, but such a run proves nothing about
    /// exclusion between the two sides.
    pub fn exclusion_unchecked_side(&self) -> Option<&'static str> {
        if self.writers == 0 || self.readers == 0 {
            return None;
        }
        match (self.writes.total, self.reads.total) {
            (0, r) if r > 0 => Some("write"),
            (w, 0) if w > 0 => Some("read"),
            _ => None,
        }
    }
}

/// The kernel's two statistics lines.
pub fn stats_lines(writes: Counts, write_fail: u64, reads: Counts, read_fail: u64) -> [String; 2] {
    let line = |label: &str, c: Counts, fail: u64| {
        format!(
            "{label}:  Total: {}  Max/Min: {}/{} {}  Fail: {} {}",
            c.total,
            c.max,
            c.min,
            if c.starved() { "???" } else { "" },
            fail,
            if fail > 0 { "!!!" } else { "" },
        )
        .trim_end()
        .to_owned()
    };
    [
        line("Writes", writes, write_fail),
        line("Reads ", reads, read_fail),
    ]
}

/// The rates off the runqueue (see [`ServedRate`]), one line per side that
/// ran, flagged `???` like the kernel's lines.
pub fn served_rate_lines(o: &Outcome) -> Vec<String> {
    [
        ("Writes", o.writes_served_per_ms),
        ("Reads ", o.reads_served_per_ms),
    ]
    .into_iter()
    .filter_map(|(label, rate)| {
        rate.map(|r| {
            format!(
                "{label} per ms off runqueue:  Max/Min: {:.2}/{:.2} {}",
                r.max,
                r.min,
                if r.starved() { "???" } else { "" }
            )
            .trim_end()
            .to_owned()
        })
    })
    .collect()
}

/// A thread's wall clock and runqueue wait when its loop began. Each thread
/// reads its own `/proc/thread-self/schedstat`, at the start of its loop and
/// when it sees the stop: the kernel adds a runqueue wait to that count only
/// when the thread gets a CPU back, so another thread's reading, taken while
/// this one sits on a runqueue, would miss the wait in progress. (On
/// 2026-12-07, for one commit, the timing thread read every thread's file at
/// the window's edges: a run of 20 readers that never block then put the
/// threads' time off the runqueue 51 ms under to 75 ms over their CPU time,
/// and flagged "613.03/37.16 ???" where the counts were even.)
struct ServedClock {
    wall: Instant,
    runqueue_wait: Option<Duration>,
}

impl ServedClock {
    fn start() -> ServedClock {
        ServedClock {
            wall: Instant::now(),
            runqueue_wait: thread_runqueue_wait(),
        }
    }

    /// Wall time since the start minus the runqueue wait since then, in ns;
    /// 0 where the kernel keeps no schedstat.
    fn served_ns(&self) -> u64 {
        let wall = self.wall.elapsed();
        match (self.runqueue_wait, thread_runqueue_wait()) {
            (Some(before), Some(now)) => {
                let served = wall.saturating_sub(now.saturating_sub(before));
                u64::try_from(served.as_nanos()).unwrap_or(u64::MAX)
            }
            _ => 0,
        }
    }
}

/// State shared by the torture threads of one lock.
struct Arena {
    lock: Box<dyn TortureLock>,
    config: Config,
    /// Writers inside the lock (exclusion check). Each counter on cache
    /// lines of its own: every acquisition writes one, and on a shared line
    /// each write took from every thread the line with `stop` and the lock
    /// pointer, which each iteration reads, adding a contended miss per
    /// iteration to every lock measured.
    writers_inside: Padded<AtomicU32>,
    /// Readers inside the lock (exclusion check).
    readers_inside: Padded<AtomicU32>,
    stop: AtomicBool,
    write_counts: Vec<Padded<AtomicU64>>,
    read_counts: Vec<Padded<AtomicU64>>,
    /// Each writer thread's loop time minus its runqueue wait, in ns (set at
    /// its end; 0 without schedstat).
    write_served_ns: Vec<Padded<AtomicU64>>,
    /// The same for readers.
    read_served_ns: Vec<Padded<AtomicU64>>,
    write_fail: AtomicU64,
    read_fail: AtomicU64,
    faults: faults::Counters,
    /// The first failure (hang or foreign panic).
    failure: Mutex<Option<String>>,
}

/// Leaves an exclusion counter when dropped, also during an unwind.
struct Leave<'a>(&'a AtomicU32);

impl Drop for Leave<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, SeqCst);
    }
}

impl Arena {
    fn new(lock: Box<dyn TortureLock>, config: Config) -> Arena {
        Arena {
            lock,
            config,
            writers_inside: Padded(AtomicU32::new(0)),
            readers_inside: Padded(AtomicU32::new(0)),
            stop: AtomicBool::new(false),
            write_counts: (0..config.writers).map(|_| Padded::default()).collect(),
            read_counts: (0..config.readers).map(|_| Padded::default()).collect(),
            write_served_ns: (0..config.writers).map(|_| Padded::default()).collect(),
            read_served_ns: (0..config.readers).map(|_| Padded::default()).collect(),
            write_fail: AtomicU64::new(0),
            read_fail: AtomicU64::new(0),
            faults: faults::Counters::default(),
            failure: Mutex::new(None),
        }
    }

    // The exclusion checks use SeqCst so that two threads wrongly inside at
    // once cannot both miss each other (store-buffering shape: each increments
    // its own counter, then reads the other's). They are the same for every
    // lock, so they cost every contender the same.

    /// Enters the exclusive side's check; the returned value leaves it.
    fn enter_write(&self) -> Leave<'_> {
        let others = self.writers_inside.fetch_add(1, SeqCst);
        if others != 0 || self.readers_inside.load(SeqCst) != 0 {
            self.write_fail.fetch_add(1, Relaxed);
        }
        Leave(&self.writers_inside.0)
    }

    /// Enters the shared side's check; the returned value leaves it.
    fn enter_read(&self) -> Leave<'_> {
        self.readers_inside.fetch_add(1, SeqCst);
        if self.writers_inside.load(SeqCst) != 0 {
            self.read_fail.fetch_add(1, Relaxed);
        }
        Leave(&self.readers_inside.0)
    }

    fn writer(&self, me: usize) {
        let hold = self.config.write_hold;
        let mut section = || {
            let _inside = self.enter_write();
            spin_for(hold);
        };
        self.until_stop(&self.write_counts[me], &self.write_served_ns[me], || {
            self.lock.write_section(&mut section)
        });
    }

    fn reader(&self, me: usize) {
        let hold = self.config.read_hold;
        let mut section = || {
            let _inside = self.enter_read();
            spin_for(hold);
        };
        self.until_stop(&self.read_counts[me], &self.read_served_ns[me], || {
            self.lock.read_section(&mut section)
        });
    }

    /// A torture thread's loop: `acquire` until the run stops, each one
    /// counted in `count` but one that completes after the stop (see
    /// [`ServedRate`]); then the loop's time off the runqueue goes to
    /// `served_ns`.
    fn until_stop(&self, count: &AtomicU64, served_ns: &AtomicU64, mut acquire: impl FnMut()) {
        let began = ServedClock::start();
        // Relaxed, every load of `stop`: a request that publishes nothing;
        // the counts are read by the timing thread as they come (Relaxed
        // too: statistics) and in full after the join.
        if !self.stop.load(Relaxed) {
            loop {
                acquire();
                if self.stop.load(Relaxed) {
                    break;
                }
                count.fetch_add(1, Relaxed);
            }
        }
        // Relaxed: read after this thread is joined (the join orders it).
        served_ns.store(began.served_ns(), Relaxed);
    }

    fn snapshot(&self) -> (Counts, u64, Counts, u64) {
        (
            Counts::of(&self.write_counts),
            self.write_fail.load(Relaxed),
            Counts::of(&self.read_counts),
            self.read_fail.load(Relaxed),
        )
    }

    /// Records `what` as the run's failure (the first one wins) and stops it.
    fn fail(&self, what: String) {
        let mut failure = self.failure.lock().unwrap_or_else(|e| e.into_inner());
        failure.get_or_insert(what);
        self.stop.store(true, Relaxed);
    }
}

/// Tortures one lock for `config.duration`. If `live` is given, the
/// statistics lines are queued there every `config.stat_interval`, prefixed
/// with the elapsed time and the lock's name.
///
/// The run is bounded: if the writers' or the readers' total (or the fault
/// driver) makes no progress for `config.stall_limit`, the run stops and
/// reports a hang in [`Outcome::failure`]; threads that cannot be stopped are
/// left behind with the lock they wait on.
pub fn torture(
    imp: &Implementation<dyn TortureLock>,
    config: Config,
    progress: &mut Progress,
    live: Option<&LiveLines>,
) -> std::io::Result<Outcome> {
    if config.faults {
        fault::quiet_injected_panics();
    }
    progress.set_label(imp.name);
    let arena = Arc::new(Arena::new(imp.build(&()), config));
    let start = Arc::new(StartGate::new(config.writers + config.readers + 1));
    let mut threads: Vec<(String, JoinHandle<()>)> = Vec::new();
    let mut spawn = |label: String, body: Box<dyn FnOnce(&Arena) + Send>, wait: bool| {
        let (arena, start) = (Arc::clone(&arena), Arc::clone(&start));
        let handle = std::thread::Builder::new()
            .name(format!("locktorture {}", imp.name))
            .spawn(move || {
                let _cancel = start.cancel_on_panic();
                // A thread that finds the run called off leaves untouched.
                if !wait || start.wait() {
                    body(&arena)
                }
            })
            .map_err(|source| {
                let of = config.writers + config.readers + usize::from(config.faults);
                ThreadRefused::labelled(&label, threads.len() + 1, of, imp.name, source)
            })?;
        threads.push((label, handle));
        Ok(())
    };
    let mut spawn_all = || -> Result<(), ThreadRefused> {
        for w in 0..config.writers {
            spawn(format!("writer {w}"), Box::new(move |a| a.writer(w)), true)?;
        }
        for r in 0..config.readers {
            spawn(format!("reader {r}"), Box::new(move |a| a.reader(r)), true)?;
        }
        // Cancelled with no refusal of ours: a thread panicked before the
        // start (its message is above); the others return.
        assert!(
            start.wait(),
            "locktorture: a thread of {} panicked before the run started",
            imp.name
        );
        if config.faults {
            spawn("fault driver".into(), Box::new(faults::drive), false)?;
        }
        Ok(())
    };
    if let Err(refused) = spawn_all() {
        // Called off: the threads at the gate leave, and any past it (the
        // fault driver came last) see `stop`. None holds the lock for long.
        arena.stop.store(true, Relaxed);
        start.cancel();
        fault::wind_down(threads, config.stall_limit, |why| arena.fail(why));
        return Err(refused.into());
    }
    let base = progress.position();
    let began = Instant::now();
    let (writes_before, reads_before) = (loads(&arena.write_counts), loads(&arena.read_counts));
    let tick = Duration::from_millis(100);
    let mut next_stats = config.stat_interval.map(|i| began + i);
    let mut watches = [
        ("writers", config.writers > 0, ProgressWatch::new(0)),
        ("readers", config.readers > 0, ProgressWatch::new(0)),
        ("fault driver", config.faults, ProgressWatch::new(0)),
    ];
    loop {
        let now = Instant::now();
        let done = now.duration_since(began);
        if done >= config.duration || arena.stop.load(Relaxed) {
            break;
        }
        let mut wake = began + config.duration;
        if let Some(at) = next_stats {
            wake = wake.min(at);
        }
        std::thread::sleep(wake.saturating_duration_since(now).min(tick));
        progress.set_position(base + Instant::now().duration_since(began).as_millis() as u64);
        let (w, wf, r, rf) = arena.snapshot();
        let values = [w.total, r.total, arena.faults.heartbeat.load(Relaxed)];
        for ((label, watched, watch), value) in watches.iter_mut().zip(values) {
            let idle = watch.observe(value);
            if *watched && idle >= config.stall_limit {
                arena.fail(format!(
                    "hang: {label} made no progress for {:.1} s (hung or starved)",
                    idle.as_secs_f64()
                ));
            }
        }
        if let (Some(at), Some(live)) = (next_stats, live)
            && Instant::now() >= at
        {
            let t = began.elapsed().as_secs_f64();
            // Over the window so far, as the final summary counts.
            let w = Counts::between(&writes_before, &loads(&arena.write_counts));
            let r = Counts::between(&reads_before, &loads(&arena.read_counts));
            for line in stats_lines(w, wf, r, rf) {
                live.send(format!("[{t:>9.3}] {}: {line}", imp.name));
            }
            next_stats = config
                .stat_interval
                .map(|i| next_stats_line(at, Instant::now(), i));
        }
    }
    let elapsed = began.elapsed();
    let writes = Counts::between(&writes_before, &loads(&arena.write_counts));
    let reads = Counts::between(&reads_before, &loads(&arena.read_counts));
    arena.stop.store(true, Relaxed);
    // Writers and readers may be queued behind a stalled fault section: give
    // them the stall limit to finish.
    let unfinished = fault::wind_down(threads, config.stall_limit, |why| arena.fail(why));
    // After the wind-down, so that a hang found there (a lock left held
    // before the window began) is the failure reported, not its symptom.
    if writes.total + reads.total == 0 {
        arena.fail(format!(
            "checked nothing: no acquisition in the {:.6} s timed window; run longer",
            elapsed.as_secs_f64()
        ));
    }
    progress.set_position(base + config.duration.as_millis() as u64);
    let (_, write_fail, _, read_fail) = arena.snapshot();
    // Over each thread's own loop (see `ServedClock`), joined by now.
    let writes_served_per_ms = ServedRate::of(
        &loads(&arena.write_counts),
        &served_ns(&arena.write_served_ns),
    );
    let reads_served_per_ms = ServedRate::of(
        &loads(&arena.read_counts),
        &served_ns(&arena.read_served_ns),
    );
    let mut fault_counts = config.faults.then(|| arena.faults.snapshot());
    if let Some(counts) = &mut fault_counts {
        counts.poison_recoveries = arena.lock.poison_recoveries();
    }
    let failure = arena
        .failure
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clone();
    if !unfinished.is_empty() {
        // Threads still wait on the lock: leave it (and them) alive.
        std::mem::forget(unfinished);
        std::mem::forget(arena);
    }
    Ok(Outcome {
        lock: imp.name.to_owned(),
        writers: config.writers,
        readers: config.readers,
        duration_s: elapsed.as_secs_f64(),
        writes,
        reads,
        writes_served_per_ms,
        reads_served_per_ms,
        fail: write_fail + read_fail,
        write_fail,
        read_fail,
        faults: fault_counts,
        failure,
        writes_per_s_rounds: Vec::new(),
        starved_rounds: Vec::new(),
    })
}

/// Merges one lock's runs of one mix, one per round in the order they ran,
/// into one outcome: the median round by writer acquisitions per second
/// (the lower middle one for an even count), with every round's rate in
/// [`Outcome::writes_per_s_rounds`]. The checks cover every round: `fail`,
/// `write_fail` and `read_fail` are summed, and `failure` names every
/// round that had one and what it was. A single run comes back as it
/// is.
///
/// # Panics
///
/// If `runs` is empty.
pub fn merge_rounds(mut runs: Vec<Outcome>) -> Outcome {
    assert!(!runs.is_empty(), "a lock needs at least one round");
    if runs.len() == 1 {
        return runs.pop().expect("one run");
    }
    let rates: Vec<f64> = runs
        .iter()
        .map(|o| o.writes.total as f64 / o.duration_s.max(1e-9))
        .collect();
    let failure = crate::stats::rounds_failure(runs.iter().map(|o| o.failure.as_deref()));
    let (fail, write_fail, read_fail) = runs.iter().fold((0, 0, 0), |(f, w, r), o| {
        (f + o.fail, w + o.write_fail, r + o.read_fail)
    });
    let starved_rounds = runs.iter().map(Outcome::starved).collect();
    let median = crate::stats::median_index(&rates);
    Outcome {
        fail,
        write_fail,
        read_fail,
        failure,
        writes_per_s_rounds: rates,
        starved_rounds,
        ..runs.swap_remove(median)
    }
}

/// When the statistics line after the one due `at` is due: an `interval`
/// later, or an `interval` after `now` if that time has already passed
/// (an interval shorter than a print would otherwise leave every later line
/// due at once, and the main thread printing without a pause).
fn next_stats_line(at: Instant, now: Instant, interval: Duration) -> Instant {
    let next = at + interval;
    if next > now { next } else { now + interval }
}

/// Tortures every lock in `chosen`, one after the other. With
/// `interval_out`, the statistics lines go there as the runs go, from a
/// thread of their own ([`live`]): a reader that stops reading holds up the
/// lines, not the runs. Returns once every line is written.
pub fn torture_all(
    chosen: &[&Implementation<dyn TortureLock>],
    config: Config,
    interval_out: Option<Box<dyn Write + Send>>,
) -> std::io::Result<Vec<Outcome>> {
    let total_ms = chosen.len() as u64 * config.duration.as_millis() as u64;
    let mut progress = Progress::new(total_ms, "locktorture");
    let live = interval_out
        .filter(|_| config.stat_interval.is_some())
        .map(|out| LiveLines::start(out, live::QUEUED_LINES))
        .transpose()?;
    let mut outcomes = Vec::with_capacity(chosen.len());
    for imp in chosen {
        match torture(imp, config, &mut progress, live.as_ref()) {
            Ok(outcome) => outcomes.push(outcome),
            Err(e) => {
                // The lines queued so far still go out before the error.
                if let Some(live) = live {
                    let _ = live.finish();
                }
                return Err(e);
            }
        }
    }
    if let Some(live) = live {
        live.finish()?;
    }
    Ok(outcomes)
}

/// Writes the final statistics of every lock in text form.
pub fn write_text(out: &mut impl Write, outcomes: &[Outcome]) -> std::io::Result<()> {
    for o in outcomes {
        writeln!(
            out,
            "locktorture: {} writers={} readers={} duration={}s",
            o.lock,
            o.writers,
            o.readers,
            crate::stats::seconds(o.duration_s)
        )?;
        for line in stats_lines(o.writes, o.write_fail, o.reads, o.read_fail) {
            writeln!(out, "{line}")?;
        }
        for line in served_rate_lines(o) {
            writeln!(out, "{line}")?;
        }
        if let Some(f) = &o.faults {
            writeln!(out, "{}", faults::stats_line(f))?;
        }
        if let Some(side) = o.exclusion_unchecked_side() {
            writeln!(
                out,
                "UNCHECKED: no {side} acquisition in the timed window, so exclusion between \
                 readers and writers was not checked (a starved side, or run longer) ???"
            )?;
        }
        if let Some(failure) = &o.failure {
            writeln!(out, "FAILURE: {failure} !!!")?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stats_lines_flag_starvation_and_failures() {
        let even = Counts {
            total: 20,
            max: 10,
            min: 10,
        };
        let starved = Counts {
            total: 11,
            max: 10,
            min: 1,
        };
        let [w, r] = stats_lines(even, 0, starved, 3);
        assert_eq!(w, "Writes:  Total: 20  Max/Min: 10/10   Fail: 0");
        assert_eq!(r, "Reads :  Total: 11  Max/Min: 10/1 ???  Fail: 3 !!!");
    }

    #[test]
    fn served_rates_divide_by_time_off_the_runqueue_and_flag_starvation() {
        let counts = [100, 30];
        let mut ns = [Some(10_000_000), Some(10_000_000)];
        let rate = ServedRate::of(&counts, &ns).expect("every thread has a time");
        assert_eq!(
            rate,
            ServedRate {
                max: 10.0,
                min: 3.0
            }
        );
        assert!(rate.starved());
        // A thread without a time (no schedstat): no rate at all rather than
        // a rate over some of the threads.
        ns[1] = None;
        assert_eq!(ServedRate::of(&counts, &ns), None);
        ns[1] = Some(0);
        assert_eq!(ServedRate::of(&counts, &ns), None);
    }

    /// A 200 ms run with the kernel's hold times and no faults.
    fn kernel_delays(writers: usize, readers: usize) -> Config {
        Config {
            writers,
            readers,
            duration: Duration::from_millis(200),
            stat_interval: None,
            write_hold: Config::WRITE_HOLD,
            read_hold: Config::READ_HOLD,
            faults: false,
            stall_limit: Config::STALL_LIMIT,
        }
    }

    #[test]
    fn locktorture_reports_served_rates_where_schedstat_exists() {
        let imp = implementations()
            .iter()
            .find(|i| i.name == "parking_lot")
            .expect("the parking_lot peer");
        let config = kernel_delays(1, 2);
        let outcome = torture(imp, config, &mut Progress::new(1, "test"), None).expect("no I/O");
        if crate::delay::thread_runqueue_wait().is_none() {
            assert_eq!(outcome.writes_served_per_ms, None);
            return;
        }
        let w = outcome.writes_served_per_ms.expect("a writer ran");
        let r = outcome.reads_served_per_ms.expect("readers ran");
        assert!(w.min > 0.0 && w.min <= w.max, "{w:?}");
        assert!(r.min > 0.0 && r.min <= r.max, "{r:?}");
        let lines = served_rate_lines(&outcome);
        assert_eq!(lines.len(), 2);
        assert!(
            lines[0].starts_with("Writes per ms off runqueue:  Max/Min: "),
            "{}",
            lines[0]
        );
    }

    /// A lock that does not exclude anything: torture must notice.
    struct NoLock;
    impl TortureLock for NoLock {
        fn write_section(&self, section: &mut dyn FnMut()) {
            section()
        }
        fn read_section(&self, section: &mut dyn FnMut()) {
            section()
        }
    }

    /// The exclusion check itself, entered by hand on one thread: a writer
    /// beside a writer, a writer beside readers and a reader beside a writer
    /// each count one failure, on the side that entered last; a writer
    /// alone, readers beside readers, and a writer after everyone left
    /// count none.
    #[test]
    fn the_exclusion_check_counts_every_overlap_with_a_writer_on_the_side_that_entered() {
        let arena = Arena::new(Box::new(NoLock), kernel_delays(2, 2));
        let fails = || {
            (
                arena.write_fail.load(Relaxed),
                arena.read_fail.load(Relaxed),
            )
        };
        {
            let _w = arena.enter_write();
            assert_eq!(fails(), (0, 0), "a writer alone");
            let _w2 = arena.enter_write();
            assert_eq!(fails(), (1, 0), "a writer beside a writer");
        }
        {
            let _r = arena.enter_read();
            let _r2 = arena.enter_read();
            assert_eq!(fails(), (1, 0), "readers beside readers");
            let _w = arena.enter_write();
            assert_eq!(fails(), (2, 0), "a writer beside readers");
        }
        {
            let _w = arena.enter_write();
            let _r = arena.enter_read();
            assert_eq!(fails(), (2, 1), "a reader beside a writer");
        }
        let _w = arena.enter_write();
        assert_eq!(fails(), (2, 1), "a writer after everyone left");
    }

    /// A run fails (`syncbench locktorture` exits 1) on any exclusion
    /// failure or any other failure, and names each; a clean run passes.
    #[test]
    fn a_run_fails_on_any_exclusion_failure_or_failure_and_only_then() {
        assert_eq!(round(100, 0, 0).why_failed(), None);
        assert_eq!(
            round(100, 1, 0).why_failed().as_deref(),
            Some("1 exclusion failure")
        );
        assert_eq!(
            round(100, 0, 2).why_failed().as_deref(),
            Some("2 exclusion failures")
        );
        let hang = || Some("hang: writers made no progress".to_owned());
        let hung = Outcome {
            failure: hang(),
            ..round(100, 0, 0)
        };
        assert_eq!(
            hung.why_failed().as_deref(),
            Some("hang: writers made no progress")
        );
        let both = Outcome {
            failure: hang(),
            ..round(100, 1, 2)
        };
        assert_eq!(
            both.why_failed().as_deref(),
            Some("3 exclusion failures, hang: writers made no progress")
        );
    }

    /// A lock without exclusion fails on each side that saw a writer beside
    /// it, and the outcome's `fail` is the sides' sum: writers alone fail as
    /// writers only; writers with readers fail on both sides.
    #[test]
    fn a_lock_without_exclusion_fails_on_each_side_that_saw_it_and_fail_is_their_sum() {
        test_support::within_a_deadline("torturing NoLock", Duration::from_secs(60), || {
            let imp = Implementation::<dyn TortureLock> {
                name: "none",
                summary: "no locking at all",
                origin: crate::registry::Origin::Peer,
                make: |_| Ok(Box::new(NoLock)),
            };
            let config = |readers| Config {
                writers: 2,
                readers,
                duration: Duration::from_millis(300),
                stat_interval: None,
                write_hold: Duration::from_micros(50),
                read_hold: Duration::from_micros(50),
                faults: false,
                stall_limit: Config::STALL_LIMIT,
            };
            let mut progress = Progress::new(1, "test");
            let writers_only = torture(&imp, config(0), &mut progress, None).unwrap();
            let o = &writers_only;
            assert!(o.write_fail > 0, "{o:?}");
            assert_eq!((o.read_fail, o.fail), (0, o.write_fail), "{o:?}");
            let both = torture(&imp, config(2), &mut progress, None).unwrap();
            let o = &both;
            assert!(o.write_fail > 0 && o.read_fail > 0, "{o:?}");
            assert_eq!(o.fail, o.write_fail + o.read_fail, "{o:?}");
            assert!(o.fail > 0, "{o:?}");
        });
    }

    #[test]
    fn a_statistics_line_late_past_its_interval_sets_the_next_from_now() {
        let at = Instant::now();
        let i = Duration::from_millis(10);
        assert_eq!(next_stats_line(at, at + i / 2, i), at + i);
        // Printing took three intervals: the next line is one interval on,
        // not already due.
        let now = at + 3 * i;
        assert_eq!(next_stats_line(at, now, i), now + i);
    }

    /// No exclusion, and every acquisition takes 50 ms.
    struct SlowToAcquire;

    impl TortureLock for SlowToAcquire {
        fn write_section(&self, section: &mut dyn FnMut()) {
            std::thread::sleep(Duration::from_millis(50));
            section();
        }
        fn read_section(&self, section: &mut dyn FnMut()) {
            std::thread::sleep(Duration::from_millis(50));
            section();
        }
    }

    /// Tortures `imp` with one writer and one reader for `duration`, no
    /// holds, no faults.
    fn one_writer_one_reader(imp: &Implementation<dyn TortureLock>, duration: Duration) -> Outcome {
        let config = Config {
            writers: 1,
            readers: 1,
            duration,
            stat_interval: None,
            write_hold: Duration::ZERO,
            read_hold: Duration::ZERO,
            faults: false,
            stall_limit: Config::STALL_LIMIT,
        };
        torture(imp, config, &mut Progress::new(1, "test"), None).unwrap()
    }

    /// A run over before any acquisition ends checked nothing: it fails, and
    /// the acquisitions finished after the stop are not counted.
    #[test]
    fn a_window_without_an_acquisition_checked_nothing() {
        let imp = Implementation::<dyn TortureLock> {
            name: "slow",
            summary: "50 ms an acquisition",
            origin: crate::registry::Origin::Peer,
            make: |_| Ok(Box::new(SlowToAcquire)),
        };
        let outcome = one_writer_one_reader(&imp, Duration::from_millis(1));
        assert_eq!(outcome.writes.total + outcome.reads.total, 0, "{outcome:?}");
        let failure = outcome.failure.as_deref().unwrap_or_default();
        assert!(
            failure.starts_with("checked nothing: no acquisition in the "),
            "{outcome:?}"
        );
    }

    /// Readers get in at once; a writer waits 300 ms first, as a writer
    /// starved by a stream of readers (a read lock that ignores a waiting
    /// writer) would.
    struct StarvesWriters;

    impl TortureLock for StarvesWriters {
        fn write_section(&self, section: &mut dyn FnMut()) {
            std::thread::sleep(Duration::from_millis(300));
            section();
        }
        fn read_section(&self, section: &mut dyn FnMut()) {
            section();
        }
    }

    /// A window in which the writers never got in checked no reader-writer
    /// exclusion (the readers only ever overlapped each other): the outcome
    /// and its text say so, though nothing failed.
    #[test]
    fn a_window_without_a_write_acquisition_left_exclusion_unchecked() {
        let imp = Implementation::<dyn TortureLock> {
            name: "starves-writers",
            summary: "writers wait 300 ms",
            origin: crate::registry::Origin::Peer,
            make: |_| Ok(Box::new(StarvesWriters)),
        };
        let outcome = one_writer_one_reader(&imp, Duration::from_millis(50));
        assert_eq!(outcome.writes.total, 0, "{outcome:?}");
        assert!(outcome.reads.total > 0, "{outcome:?}");
        assert_eq!(outcome.exclusion_unchecked_side(), Some("write"));
        assert!(outcome.failure.is_none(), "{outcome:?}");
        // The rate off the runqueue counts no write either: the one that
        // completes after the stop is past the run (it counted there until
        // 2026-12-07, a rate for a writer kept out of the whole window).
        if crate::delay::thread_runqueue_wait().is_some() {
            let rate = outcome
                .writes_served_per_ms
                .expect("schedstat is kept here");
            assert_eq!((rate.max, rate.min), (0.0, 0.0), "{outcome:?}");
        }
        let mut text = Vec::new();
        write_text(&mut text, std::slice::from_ref(&outcome)).unwrap();
        let text = String::from_utf8(text).unwrap();
        assert!(
            text.contains("UNCHECKED: no write acquisition in the timed window"),
            "{text}"
        );
        // Both sides in, or a run with one side only: nothing unchecked.
        let both = Outcome {
            writes: outcome.reads,
            ..outcome.clone()
        };
        assert_eq!(both.exclusion_unchecked_side(), None);
        let readers_only = Outcome {
            writers: 0,
            ..outcome
        };
        assert_eq!(readers_only.exclusion_unchecked_side(), None);
    }

    /// A spin lock whose sections are ended by code after them rather than
    /// by a guard: a panic inside leaves it held.
    #[derive(Default)]
    struct LeaksOnUnwind(AtomicBool);

    impl LeaksOnUnwind {
        fn section(&self, section: &mut dyn FnMut()) {
            while self
                .0
                .compare_exchange(false, true, Acquire, Relaxed)
                .is_err()
            {
                std::thread::sleep(Duration::from_micros(20));
            }
            section();
            self.0.store(false, Release);
        }
    }

    impl TortureLock for LeaksOnUnwind {
        fn write_section(&self, section: &mut dyn FnMut()) {
            self.section(section)
        }
        fn read_section(&self, section: &mut dyn FnMut()) {
            self.section(section)
        }
    }

    pub(super) fn fault_config(duration: Duration) -> Config {
        Config {
            writers: 1,
            readers: 1,
            duration,
            stat_interval: None,
            write_hold: Config::WRITE_HOLD,
            read_hold: Config::READ_HOLD,
            faults: true,
            stall_limit: Config::STALL_LIMIT,
        }
    }

    #[test]
    fn a_lock_left_held_by_a_panic_is_a_reported_hang() {
        let imp = Implementation::<dyn TortureLock> {
            name: "leaks-on-unwind",
            summary: "planted bug",
            origin: crate::registry::Origin::Peer,
            make: |_| Ok(Box::new(LeaksOnUnwind::default())),
        };
        let config = Config {
            stall_limit: Duration::from_secs(1),
            ..fault_config(Duration::from_millis(300))
        };
        let began = Instant::now();
        let outcome = torture(&imp, config, &mut Progress::new(1, "test"), None).unwrap();
        let failure = outcome.failure.as_deref().unwrap_or_default();
        assert!(failure.starts_with("hang:"), "{outcome:?}");
        assert!(began.elapsed() < Duration::from_secs(10), "{outcome:?}");
    }

    /// No exclusion; the first acquisition on the `writes` side waits a
    /// second, as a side starved for that long would.
    struct OneSideLate {
        writes: bool,
        waited: AtomicBool,
    }

    impl OneSideLate {
        fn section(&self, write: bool, section: &mut dyn FnMut()) {
            if write == self.writes && !self.waited.swap(true, Relaxed) {
                std::thread::sleep(Duration::from_secs(1));
            }
            section();
        }
    }

    impl TortureLock for OneSideLate {
        fn write_section(&self, section: &mut dyn FnMut()) {
            self.section(true, section)
        }
        fn read_section(&self, section: &mut dyn FnMut()) {
            self.section(false, section)
        }
    }

    /// Either side stalled past the stall limit while the other progresses
    /// is a reported hang, named for that side.
    #[test]
    fn a_side_stalled_while_the_other_progresses_is_a_reported_hang() {
        test_support::within_a_deadline("one side late", Duration::from_secs(60), || {
            for (writes, label) in [(true, "writers"), (false, "readers")] {
                let imp = Implementation::<dyn TortureLock> {
                    name: "one-side-late",
                    summary: "one side's first acquisition waits 1 s",
                    origin: crate::registry::Origin::Peer,
                    make: if writes {
                        |_| {
                            Ok(Box::new(OneSideLate {
                                writes: true,
                                waited: AtomicBool::new(false),
                            }))
                        }
                    } else {
                        |_| {
                            Ok(Box::new(OneSideLate {
                                writes: false,
                                waited: AtomicBool::new(false),
                            }))
                        }
                    },
                };
                let config = Config {
                    stall_limit: Duration::from_millis(200),
                    duration: Duration::from_secs(2),
                    ..kernel_delays(1, 1)
                };
                let outcome = torture(&imp, config, &mut Progress::new(1, "test"), None).unwrap();
                let failure = outcome.failure.as_deref().unwrap_or_default();
                assert!(
                    failure.starts_with(&format!("hang: {label} made no progress")),
                    "{outcome:?}"
                );
            }
        });
    }

    /// A run without readers, or without writers, watches no progress of
    /// the missing side (nor of a fault driver it does not run): a run
    /// longer than the stall limit passes.
    #[test]
    #[cfg_attr(
        miri,
        ignore = "a 500 ms stall limit on miri's clock, which threads left hung by earlier tests also run"
    )]
    fn a_missing_side_is_no_hang() {
        test_support::within_a_deadline("one side only", Duration::from_secs(60), || {
            let imp = implementations()
                .iter()
                .find(|i| i.name == "parking_lot")
                .expect("the parking_lot peer");
            for (writers, readers) in [(2, 0), (0, 2)] {
                let config = Config {
                    stall_limit: Duration::from_millis(500),
                    duration: Duration::from_millis(1500),
                    ..kernel_delays(writers, readers)
                };
                let o = torture(imp, config, &mut Progress::new(1, "test"), None).unwrap();
                assert_eq!(o.why_failed(), None, "{writers}w/{readers}r: {o:?}");
            }
        });
    }

    /// Starts writer 0 of `arena` for each `true` in `sides` and reader 0 for
    /// each `false`; they run until its stop flag is set.
    pub(super) fn start_sides(arena: &Arc<Arena>, sides: &[bool]) -> Vec<JoinHandle<()>> {
        sides
            .iter()
            .map(|&write| {
                let arena = Arc::clone(arena);
                std::thread::spawn(move || {
                    if write {
                        arena.writer(0)
                    } else {
                        arena.reader(0)
                    }
                })
            })
            .collect()
    }

    /// Every lock goes through one full cycle of faults, each kind once,
    /// with exclusion intact; std's poisoned lock is recovered.
    #[test]
    fn every_lock_survives_one_cycle_of_every_fault() {
        fault::quiet_injected_panics();
        for imp in implementations() {
            let arena = Arc::new(Arena::new(imp.build(&()), fault_config(Duration::ZERO)));
            let threads = start_sides(&arena, &[true, false]);
            for n in 0..faults::KINDS {
                assert!(
                    faults::step(&arena, n),
                    "{}: fault {n}: {:?}",
                    imp.name,
                    arena.failure.lock().unwrap()
                );
            }
            arena.stop.store(true, Relaxed);
            for t in threads {
                t.join().unwrap();
            }
            let counts = arena.faults.snapshot();
            let (_, write_fail, _, read_fail) = arena.snapshot();
            assert_eq!((write_fail, read_fail), (0, 0), "{}", imp.name);
            assert_eq!(
                (
                    counts.panic_in_write,
                    counts.panic_in_read,
                    counts.death_in_write,
                    counts.death_in_read,
                    counts.churn_threads,
                    counts.write_stalls,
                    counts.read_stalls,
                ),
                (1, 1, 1, 1, faults::CHURN_THREADS, 1, 1),
                "{}",
                imp.name
            );
            // Two write sections panicked; std recovered each poisoning once.
            let poisoned = arena.lock.poison_recoveries();
            if imp.name == "std" {
                assert_eq!(poisoned, 2, "std");
            } else {
                assert_eq!(poisoned, 0, "{}", imp.name);
            }
        }
    }

    #[test]
    fn peers_exclude_and_count() {
        let config = kernel_delays(2, 2);
        let mut progress = Progress::new(1, "test");
        for imp in implementations() {
            let o = torture(imp, config, &mut progress, None).unwrap();
            assert_eq!(o.fail, 0, "{}: {o:?}", imp.name);
            assert!(o.writes.total + o.reads.total > 0, "{}: {o:?}", imp.name);
        }
    }

    /// The kernel's starvation test, `max / 2 > min`, is strict: exactly
    /// half the busiest thread's share is no starvation, for counts and
    /// for rates alike; and a count's Max/Min are each thread's count over
    /// the window.
    #[test]
    fn starvation_is_under_half_the_busiest_share_and_counts_are_per_thread() {
        let c = |max, min| Counts { total: 0, max, min };
        assert!(!c(10, 5).starved());
        assert!(c(10, 4).starved());
        let r = |max, min| ServedRate { max, min };
        assert!(!r(10.0, 6.0).starved());
        assert!(!r(10.0, 5.0).starved());
        assert!(r(10.0, 4.9).starved());
        let window = Counts::between(&[5, 0, 10], &[25, 7, 40]);
        assert_eq!((window.total, window.max, window.min), (20 + 7 + 30, 30, 7));
    }

    fn round(writes: u64, write_fail: u64, read_fail: u64) -> Outcome {
        Outcome {
            lock: "l".into(),
            writers: 1,
            readers: 1,
            duration_s: 2.0,
            writes: Counts {
                total: writes,
                max: writes,
                min: writes,
            },
            reads: Counts {
                total: 1,
                max: 1,
                min: 1,
            },
            writes_served_per_ms: None,
            reads_served_per_ms: None,
            fail: write_fail + read_fail,
            write_fail,
            read_fail,
            faults: None,
            failure: None,
            writes_per_s_rounds: Vec::new(),
            starved_rounds: Vec::new(),
        }
    }

    /// Exclusion between the sides went unchecked on the side that never got
    /// in while the other did, either side; not where both got in, where
    /// neither did (that run checked nothing at all), or where the run had
    /// one side only.
    #[test]
    fn exclusion_is_unchecked_on_the_side_that_never_got_in_while_the_other_did() {
        let none = Counts::default();
        let readers_out = Outcome {
            reads: none,
            ..round(100, 0, 0)
        };
        assert_eq!(readers_out.exclusion_unchecked_side(), Some("read"));
        let writers_out = Outcome {
            writes: none,
            ..round(100, 0, 0)
        };
        assert_eq!(writers_out.exclusion_unchecked_side(), Some("write"));
        assert_eq!(round(100, 0, 0).exclusion_unchecked_side(), None);
        let neither = Outcome {
            writes: none,
            ..readers_out.clone()
        };
        assert_eq!(neither.exclusion_unchecked_side(), None);
        let writers_only = Outcome {
            readers: 0,
            ..readers_out
        };
        assert_eq!(writers_only.exclusion_unchecked_side(), None);
    }

    /// Merged rounds are the median round by writer rate (whichever round
    /// ran it), with every round's rate and every round's failures.
    #[test]
    fn merged_rounds_are_the_median_round_with_every_rounds_failures() {
        let merged = merge_rounds(vec![round(2400, 1, 0), round(800, 2, 0), round(1600, 0, 4)]);
        assert_eq!(merged.writes.total, 1600, "{merged:?}");
        assert_eq!(merged.writes_per_s_rounds, [1200.0, 400.0, 800.0]);
        assert_eq!(
            (merged.fail, merged.write_fail, merged.read_fail),
            (7, 3, 4)
        );
    }

    /// Each side's exclusion failures are summed over the rounds too: a
    /// reader's failure in a round other than the median one stays a
    /// reader's.
    #[test]
    fn merged_rounds_sum_each_sides_failures_over_every_round() {
        let merged = merge_rounds(vec![round(2400, 0, 2), round(800, 0, 0), round(1600, 0, 0)]);
        assert_eq!(merged.writes.total, 1600, "{merged:?}");
        assert_eq!(
            (merged.fail, merged.write_fail, merged.read_fail),
            (2, 0, 2)
        );
    }

    /// A failure (a hang, a foreign panic) in a round other than the median
    /// one still fails the merged outcome, named by its round, and every
    /// round's starvation verdicts stay.
    #[test]
    fn merged_rounds_keep_a_failure_and_the_starvation_of_rounds_other_than_the_median() {
        let hung = Outcome {
            failure: Some("hang: readers made no progress".into()),
            reads: Counts {
                total: 11,
                max: 10,
                min: 1,
            },
            ..round(2400, 0, 0)
        };
        let merged = merge_rounds(vec![hung, round(800, 0, 0), round(1600, 0, 0)]);
        assert_eq!(merged.writes.total, 1600, "{merged:?}");
        assert_eq!(
            merged.failure.as_deref(),
            Some("round 1 of 3: hang: readers made no progress")
        );
        assert_eq!(
            merged.why_failed().as_deref(),
            Some("round 1 of 3: hang: readers made no progress")
        );
        let readers_starved: Vec<bool> = merged
            .starved_by_round()
            .iter()
            .map(|s| s.readers)
            .collect();
        assert_eq!(readers_starved, [true, false, false], "{merged:?}");
    }
}
