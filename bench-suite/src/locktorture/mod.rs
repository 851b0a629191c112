//! `locktorture`: reader-writer locks under contention, with exclusion checks.
//!
//! Mirrors `kernel/locking/locktorture.c` for its `rw_lock` types: writer and
//! reader threads loop acquire, check exclusion, hold briefly, release; each
//! counts its own acquisitions. The statistics lines are the kernel's
//! (`__torture_print_stats()`):
//!
//! ```text
//! Writes:  Total: 57318  Max/Min: 14400/14210   Fail: 0
//! Reads :  Total: 382979  Max/Min: 24100/23700   Fail: 0
//! ```
//!
//! `???` follows Max/Min when `max / 2 > min` (some thread got less than half of
//! the luckiest one's share: starvation), `!!!` follows Fail when it is non-zero
//! (a writer saw anyone else inside, or a reader saw a writer).
//!
//! Hold times follow the kernel's `torture_rwlock_{write,read}_delay()` short
//! delays (writers 2 us, readers 10 us, busy-waited), without the rare 100 ms
//! delays, which a short user-space run would turn into noise.

mod peers;
mod qrwlock;

use crate::delay::{Padded, spin_for};
use crate::progress::Progress;
use crate::registry::Implementation;
use serde::Serialize;
use std::io::Write;
use std::sync::Barrier;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering::*};
use std::time::{Duration, Instant};

/// A reader-writer lock measured by `locktorture`.
pub trait TortureLock: Send + Sync {
    /// Runs `section` holding the lock exclusively.
    fn write_section(&self, section: &mut dyn FnMut());
    /// Runs `section` holding the lock shared.
    fn read_section(&self, section: &mut dyn FnMut());
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
}

impl Config {
    /// The kernel's short delays: writers hold 2 us, readers 10 us.
    pub const WRITE_HOLD: Duration = Duration::from_micros(2);
    /// See [`Config::WRITE_HOLD`].
    pub const READ_HOLD: Duration = Duration::from_micros(10);
}

/// Acquisition counts of one side (writers or readers).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Counts {
    /// Sum over threads.
    pub total: u64,
    /// The busiest thread's count.
    pub max: u64,
    /// The least busy thread's count.
    pub min: u64,
}

impl Counts {
    fn of(per_thread: &[Padded<AtomicU64>]) -> Counts {
        let values: Vec<u64> = per_thread.iter().map(|c| c.load(Relaxed)).collect();
        Counts {
            total: values.iter().sum(),
            max: values.iter().copied().max().unwrap_or(0),
            min: values.iter().copied().min().unwrap_or(0),
        }
    }

    /// Whether some thread got less than half of the busiest thread's share
    /// (the kernel's `max / 2 > min`).
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

/// The outcome for one lock.
#[derive(Clone, Debug, Serialize)]
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
    /// Exclusion violations seen by writers and readers together.
    pub fail: u64,
    /// Exclusion violations seen by writers.
    pub write_fail: u64,
    /// Exclusion violations seen by readers.
    pub read_fail: u64,
}

impl Outcome {
    /// Writer acquisitions per writer thread over reader acquisitions per reader
    /// thread: 1.0 is perfectly even, near 0 means writers starve.
    pub fn writer_share(&self) -> f64 {
        let r = self.reads.per_thread(self.readers);
        if r == 0.0 {
            f64::INFINITY
        } else {
            self.writes.per_thread(self.writers) / r
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

/// State shared by the torture threads of one lock.
struct Arena {
    /// Writers inside the lock (exclusion check).
    writers_inside: AtomicU32,
    /// Readers inside the lock (exclusion check).
    readers_inside: AtomicU32,
    stop: AtomicBool,
    write_counts: Vec<Padded<AtomicU64>>,
    read_counts: Vec<Padded<AtomicU64>>,
    write_fail: AtomicU64,
    read_fail: AtomicU64,
}

impl Arena {
    // The exclusion checks use SeqCst so that two threads wrongly inside at
    // once cannot both miss each other (store-buffering shape: each increments
    // its own counter, then reads the other's). They are the same for every
    // lock, so they cost every contender the same.
    fn writer(&self, lock: &dyn TortureLock, me: usize, hold: Duration) {
        let mut section = || {
            let others = self.writers_inside.fetch_add(1, SeqCst);
            if others != 0 || self.readers_inside.load(SeqCst) != 0 {
                self.write_fail.fetch_add(1, Relaxed);
            }
            spin_for(hold);
            self.writers_inside.fetch_sub(1, SeqCst);
        };
        while !self.stop.load(Relaxed) {
            lock.write_section(&mut section);
            self.write_counts[me].fetch_add(1, Relaxed);
        }
    }

    fn reader(&self, lock: &dyn TortureLock, me: usize, hold: Duration) {
        let mut section = || {
            self.readers_inside.fetch_add(1, SeqCst);
            if self.writers_inside.load(SeqCst) != 0 {
                self.read_fail.fetch_add(1, Relaxed);
            }
            spin_for(hold);
            self.readers_inside.fetch_sub(1, SeqCst);
        };
        while !self.stop.load(Relaxed) {
            lock.read_section(&mut section);
            self.read_counts[me].fetch_add(1, Relaxed);
        }
    }

    fn snapshot(&self) -> (Counts, u64, Counts, u64) {
        (
            Counts::of(&self.write_counts),
            self.write_fail.load(Relaxed),
            Counts::of(&self.read_counts),
            self.read_fail.load(Relaxed),
        )
    }
}

/// Tortures one lock for `config.duration`. If `interval_out` is given, the
/// statistics lines are written there every `config.stat_interval`, prefixed
/// with the elapsed time and the lock's name.
pub fn torture<'w>(
    imp: &Implementation<dyn TortureLock>,
    config: Config,
    progress: &mut Progress,
    mut interval_out: Option<&mut (dyn Write + 'w)>,
) -> std::io::Result<Outcome> {
    let lock = imp.build(&());
    let lock = &*lock;
    progress.set_label(imp.name);
    let arena = Arena {
        writers_inside: AtomicU32::new(0),
        readers_inside: AtomicU32::new(0),
        stop: AtomicBool::new(false),
        write_counts: (0..config.writers).map(|_| Padded::default()).collect(),
        read_counts: (0..config.readers).map(|_| Padded::default()).collect(),
        write_fail: AtomicU64::new(0),
        read_fail: AtomicU64::new(0),
    };
    let start = Barrier::new(config.writers + config.readers + 1);
    let base = progress.position();
    let elapsed = std::thread::scope(|s| -> std::io::Result<Duration> {
        for w in 0..config.writers {
            let (arena, start) = (&arena, &start);
            s.spawn(move || {
                start.wait();
                arena.writer(lock, w, config.write_hold);
            });
        }
        for r in 0..config.readers {
            let (arena, start) = (&arena, &start);
            s.spawn(move || {
                start.wait();
                arena.reader(lock, r, config.read_hold);
            });
        }
        start.wait();
        let began = Instant::now();
        let tick = Duration::from_millis(100);
        let mut next_stats = config.stat_interval.map(|i| began + i);
        loop {
            let now = Instant::now();
            let done = now.duration_since(began);
            if done >= config.duration {
                break;
            }
            let mut wake = began + config.duration;
            if let Some(at) = next_stats {
                wake = wake.min(at);
            }
            std::thread::sleep(wake.saturating_duration_since(now).min(tick));
            progress.set_position(base + Instant::now().duration_since(began).as_millis() as u64);
            if let (Some(at), Some(out)) = (next_stats, interval_out.as_deref_mut())
                && Instant::now() >= at
            {
                let (w, wf, r, rf) = arena.snapshot();
                let t = began.elapsed().as_secs_f64();
                for line in stats_lines(w, wf, r, rf) {
                    writeln!(out, "[{t:>9.3}] {}: {line}", imp.name)?;
                }
                next_stats = config.stat_interval.map(|i| at + i);
            }
        }
        arena.stop.store(true, Relaxed);
        Ok(began.elapsed())
    })?;
    progress.set_position(base + config.duration.as_millis() as u64);
    let (writes, write_fail, reads, read_fail) = arena.snapshot();
    Ok(Outcome {
        lock: imp.name.to_owned(),
        writers: config.writers,
        readers: config.readers,
        duration_s: elapsed.as_secs_f64(),
        writes,
        reads,
        fail: write_fail + read_fail,
        write_fail,
        read_fail,
    })
}

/// Tortures every lock in `chosen`, one after the other.
pub fn torture_all<'w>(
    chosen: &[&Implementation<dyn TortureLock>],
    config: Config,
    mut interval_out: Option<&mut (dyn Write + 'w)>,
) -> std::io::Result<Vec<Outcome>> {
    let total_ms = chosen.len() as u64 * config.duration.as_millis() as u64;
    let mut progress = Progress::new(total_ms, "locktorture");
    let mut outcomes = Vec::with_capacity(chosen.len());
    for imp in chosen {
        outcomes.push(torture(
            imp,
            config,
            &mut progress,
            interval_out.as_deref_mut(),
        )?);
    }
    Ok(outcomes)
}

/// Writes the final statistics of every lock in text form.
pub fn write_text(out: &mut impl Write, outcomes: &[Outcome]) -> std::io::Result<()> {
    for o in outcomes {
        writeln!(
            out,
            "locktorture: {} writers={} readers={} duration={:.1}s",
            o.lock, o.writers, o.readers, o.duration_s
        )?;
        for line in stats_lines(o.writes, o.write_fail, o.reads, o.read_fail) {
            writeln!(out, "{line}")?;
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

    #[test]
    fn a_lock_without_exclusion_fails() {
        let imp = Implementation::<dyn TortureLock> {
            name: "none",
            summary: "no locking at all",
            origin: crate::registry::Origin::Peer,
            make: |_| Ok(Box::new(NoLock)),
        };
        let config = Config {
            writers: 2,
            readers: 2,
            duration: Duration::from_millis(300),
            stat_interval: None,
            write_hold: Duration::from_micros(50),
            read_hold: Duration::from_micros(50),
        };
        let mut progress = Progress::new(1, "test");
        let outcome = torture(&imp, config, &mut progress, None).unwrap();
        assert!(outcome.fail > 0, "{outcome:?}");
    }

    #[test]
    fn peers_exclude_and_count() {
        let config = Config {
            writers: 2,
            readers: 2,
            duration: Duration::from_millis(200),
            stat_interval: None,
            write_hold: Config::WRITE_HOLD,
            read_hold: Config::READ_HOLD,
        };
        let mut progress = Progress::new(1, "test");
        for imp in implementations() {
            let o = torture(imp, config, &mut progress, None).unwrap();
            assert_eq!(o.fail, 0, "{}: {o:?}", imp.name);
            assert!(o.writes.total + o.reads.total > 0, "{}: {o:?}", imp.name);
        }
    }
}
