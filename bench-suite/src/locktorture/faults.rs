//! The locktorture fault driver (`syncbench locktorture --faults`).
//!
//! One driver thread per run injects faults in a fixed cycle, each on threads
//! of its own, every section going through the same exclusion checks as the
//! regular writers and readers (left during the unwind when it panics):
//!
//! 1. **panic in write** / 2. **panic in read**: a thread panics inside a
//!    section and catches it; the unwind must release the lock (std's
//!    `RwLock` is poisoned by the write side: the harness recovers it), and
//!    the thread takes the lock again;
//! 3. **death in write** / 4. **death in read**: a thread panics inside a
//!    section and dies of it;
//! 5. **churn**: [`CHURN_THREADS`] short-lived threads, [`CHURN_WAVE`] at a
//!    time, each taking the lock once (half of them for writing) and exiting;
//! 6. **write stall** / 7. **read stall**: a holder stays inside for
//!    100-300 ms ([`fault::stall_length`]), the kernel's long
//!    `torture_rwlock_*_delay()`; everyone else must get in afterwards.
//!
//! After each fault both sides must make progress again within the run's
//! stall limit: a lock that the fault left held would stop them. The counters
//! are statistics (`Relaxed`); the exclusion checks are `SeqCst` (see
//! `Arena`).

use super::Arena;
use crate::fault;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering::Relaxed;
use std::thread::Scope;
use std::time::{Duration, Instant};

/// Short-lived threads per churn fault.
pub const CHURN_THREADS: u64 = 256;
/// Churn threads alive at once.
pub const CHURN_WAVE: u64 = 64;
/// The pause between two faults.
const GAP: Duration = Duration::from_millis(5);

/// The faults injected into one lock's run, by kind.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct FaultCounts {
    /// Panics inside a write section, caught on a thread that then locked again.
    pub panic_in_write: u64,
    /// Panics inside a read section, caught likewise.
    pub panic_in_read: u64,
    /// Threads ended by a panic inside a write section.
    pub death_in_write: u64,
    /// Threads ended by a panic inside a read section.
    pub death_in_read: u64,
    /// Short-lived threads of the churn waves, one acquisition each.
    pub churn_threads: u64,
    /// Writers that held the lock for 100-300 ms.
    pub write_stalls: u64,
    /// Readers that held the lock for 100-300 ms.
    pub read_stalls: u64,
    /// The longest stall, in milliseconds.
    pub stall_max_ms: f64,
    /// Acquisitions that found the lock poisoned and recovered it (std only).
    pub poison_recoveries: u64,
}

/// The kernel-style line for `f`: writer/reader pairs.
pub fn stats_line(f: &FaultCounts) -> String {
    format!(
        "Faults:  Panics: {}/{}  Deaths: {}/{}  Churn: {}  Stalls: {}/{}  Max stall: {:.0} ms  Poisoned: {}",
        f.panic_in_write,
        f.panic_in_read,
        f.death_in_write,
        f.death_in_read,
        f.churn_threads,
        f.write_stalls,
        f.read_stalls,
        f.stall_max_ms,
        f.poison_recoveries
    )
}

/// The atomic counterpart of [`FaultCounts`], updated by fault threads.
#[derive(Debug, Default)]
pub(super) struct Counters {
    panic_in_write: AtomicU64,
    panic_in_read: AtomicU64,
    death_in_write: AtomicU64,
    death_in_read: AtomicU64,
    churn_threads: AtomicU64,
    write_stalls: AtomicU64,
    read_stalls: AtomicU64,
    stall_max_us: AtomicU64,
    /// Fault work done (actions, churn threads): the driver's progress
    /// counter.
    pub(super) heartbeat: AtomicU64,
}

impl Counters {
    /// The counts so far (`poison_recoveries` is the lock's to say).
    pub(super) fn snapshot(&self) -> FaultCounts {
        FaultCounts {
            panic_in_write: self.panic_in_write.load(Relaxed),
            panic_in_read: self.panic_in_read.load(Relaxed),
            death_in_write: self.death_in_write.load(Relaxed),
            death_in_read: self.death_in_read.load(Relaxed),
            churn_threads: self.churn_threads.load(Relaxed),
            write_stalls: self.write_stalls.load(Relaxed),
            read_stalls: self.read_stalls.load(Relaxed),
            stall_max_ms: self.stall_max_us.load(Relaxed) as f64 / 1000.0,
            poison_recoveries: 0,
        }
    }
}

/// A kind of fault.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    PanicInWrite,
    PanicInRead,
    DeathInWrite,
    DeathInRead,
    Churn,
    WriteStall,
    ReadStall,
}

/// The order faults are injected in, over and over.
const CYCLE: [Kind; 7] = [
    Kind::PanicInWrite,
    Kind::PanicInRead,
    Kind::DeathInWrite,
    Kind::DeathInRead,
    Kind::Churn,
    Kind::WriteStall,
    Kind::ReadStall,
];

/// Faults in one cycle (one of each kind).
pub(super) const KINDS: u64 = CYCLE.len() as u64;

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Kind::PanicInWrite => "panic in write",
            Kind::PanicInRead => "panic in read",
            Kind::DeathInWrite => "death in write",
            Kind::DeathInRead => "death in read",
            Kind::Churn => "churn",
            Kind::WriteStall => "write stall",
            Kind::ReadStall => "read stall",
        })
    }
}

/// The driver: injects faults until the run stops.
pub(super) fn drive(arena: &Arena) {
    let mut n = 0u64;
    while !arena.stop.load(Relaxed) && step(arena, n) {
        n += 1;
        std::thread::sleep(GAP);
    }
}

/// Injects the `n`-th fault of the cycle and waits for both sides to make
/// progress after it. Returns false if the run stopped or failed meanwhile.
pub(super) fn step(arena: &Arena, n: u64) -> bool {
    let kind = CYCLE[(n % KINDS) as usize];
    std::thread::scope(|scope| inject(scope, arena, kind, n));
    arena.faults.heartbeat.fetch_add(1, Relaxed);
    both_sides_progress(arena, kind)
}

fn totals(arena: &Arena) -> (u64, u64) {
    let (w, _, r, _) = arena.snapshot();
    (w.total, r.total)
}

/// Waits until every side that has threads acquired the lock again, or the
/// run stopped; fails the run after the stall limit.
fn both_sides_progress(arena: &Arena, after: Kind) -> bool {
    let (w0, r0) = totals(arena);
    let began = Instant::now();
    loop {
        let (w, r) = totals(arena);
        let writers_done = arena.config.writers == 0 || w > w0;
        let readers_done = arena.config.readers == 0 || r > r0;
        if writers_done && readers_done {
            return true;
        }
        if arena.stop.load(Relaxed) {
            return false;
        }
        if began.elapsed() >= arena.config.stall_limit {
            let side = if writers_done { "readers" } else { "writers" };
            arena.fail(format!(
                "hang: {side} did not get the lock in {:.1} s after a {after} fault",
                began.elapsed().as_secs_f64()
            ));
            return false;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// One section on `write`'s side with the exclusion check, running `inside`.
fn section(arena: &Arena, write: bool, inside: &mut dyn FnMut()) {
    if write {
        arena.lock.write_section(&mut || {
            let _inside = arena.enter_write();
            inside();
        });
    } else {
        arena.lock.read_section(&mut || {
            let _inside = arena.enter_read();
            inside();
        });
    }
}

fn inject<'scope>(scope: &'scope Scope<'scope, '_>, arena: &'scope Arena, kind: Kind, n: u64) {
    let faults = &arena.faults;
    match kind {
        Kind::PanicInWrite | Kind::PanicInRead => {
            let write = kind == Kind::PanicInWrite;
            let Ok(thread) = fault::spawn_fault_thread(scope, kind, move || {
                let outcome = catch_unwind(AssertUnwindSafe(|| {
                    section(arena, write, &mut || {
                        fault::inject("panic while holding the lock")
                    })
                }));
                match outcome {
                    Err(payload) if fault::is_injected(&*payload) => {}
                    Err(payload) => resume_unwind(payload),
                    Ok(()) => arena.fail("a section that panicked returned normally".into()),
                }
                // The unwind released the lock: this thread takes it again.
                section(arena, write, &mut || {});
            })
            .map_err(|refused| arena.fail(refused.to_string())) else {
                return;
            };
            if fault::join_normal(kind, thread, |why| arena.fail(why)) {
                let counter = if write {
                    &faults.panic_in_write
                } else {
                    &faults.panic_in_read
                };
                counter.fetch_add(1, Relaxed);
            }
        }
        Kind::DeathInWrite | Kind::DeathInRead => {
            let write = kind == Kind::DeathInWrite;
            let Ok(thread) = fault::spawn_fault_thread(scope, kind, move || {
                section(arena, write, &mut || {
                    fault::inject("thread dies holding the lock")
                });
            })
            .map_err(|refused| arena.fail(refused.to_string())) else {
                return;
            };
            match thread.join() {
                Err(payload) if fault::is_injected(&*payload) => {
                    let counter = if write {
                        &faults.death_in_write
                    } else {
                        &faults.death_in_read
                    };
                    counter.fetch_add(1, Relaxed);
                }
                Err(payload) => arena.fail(format!(
                    "a {kind} fault thread panicked: {}",
                    fault::describe(&*payload)
                )),
                Ok(()) => arena.fail("a section that panicked returned normally".into()),
            }
        }
        Kind::Churn => {
            for wave in 0..CHURN_THREADS / CHURN_WAVE {
                if arena.stop.load(Relaxed) {
                    break;
                }
                // The first refusal ends the wave, and the driver: the
                // threads already started are joined by the scope.
                let threads: Result<Vec<_>, _> = (0..CHURN_WAVE)
                    .map(|i| {
                        let write = (wave + i) % 2 == 1;
                        fault::spawn_fault_thread(scope, kind, move || {
                            section(arena, write, &mut || {})
                        })
                    })
                    .collect();
                let Ok(threads) = threads.map_err(|refused| arena.fail(refused.to_string())) else {
                    return;
                };
                for thread in threads {
                    if fault::join_normal(kind, thread, |why| arena.fail(why)) {
                        faults.churn_threads.fetch_add(1, Relaxed);
                        faults.heartbeat.fetch_add(1, Relaxed);
                    }
                }
            }
        }
        Kind::WriteStall | Kind::ReadStall => {
            let write = kind == Kind::WriteStall;
            let length = fault::stall_length(n);
            let Ok(thread) = fault::spawn_fault_thread(scope, kind, move || {
                section(arena, write, &mut || {
                    let began = Instant::now();
                    std::thread::sleep(length);
                    faults
                        .stall_max_us
                        .fetch_max(began.elapsed().as_micros() as u64, Relaxed);
                });
            })
            .map_err(|refused| arena.fail(refused.to_string())) else {
                return;
            };
            if fault::join_normal(kind, thread, |why| arena.fail(why)) {
                let counter = if write {
                    &faults.write_stalls
                } else {
                    &faults.read_stalls
                };
                counter.fetch_add(1, Relaxed);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{fault_config, start_sides};
    use super::super::{Config, TortureLock};
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::AtomicBool;

    /// The fault line pairs each kind's writer and reader counts and gives
    /// the longest stall, counted in microseconds, in milliseconds.
    #[test]
    fn the_fault_line_pairs_writer_and_reader_counts_and_the_longest_stall_is_in_ms() {
        let c = Counters::default();
        for (counter, n) in [
            (&c.panic_in_write, 1),
            (&c.panic_in_read, 2),
            (&c.death_in_write, 3),
            (&c.death_in_read, 4),
            (&c.churn_threads, 256),
            (&c.write_stalls, 5),
            (&c.read_stalls, 6),
            (&c.stall_max_us, 291_400),
        ] {
            counter.store(n, Relaxed);
        }
        let mut f = c.snapshot();
        assert_eq!(f.stall_max_ms, 291.4, "{f:?}");
        f.poison_recoveries = 7;
        assert_eq!(
            stats_line(&f),
            "Faults:  Panics: 1/2  Deaths: 3/4  Churn: 256  Stalls: 5/6  Max stall: 291 ms  Poisoned: 7"
        );
    }

    /// After a fault, the driver waits for every side that has threads to
    /// get in again: it goes on once both did, and otherwise fails the run
    /// after the stall limit with a hang naming the side and the fault.
    #[test]
    fn after_a_fault_each_side_must_get_in_again_within_the_stall_limit() {
        test_support::within_a_deadline("after a fault", Duration::from_secs(60), || {
            let lock = || Box::new(parking_lot::RwLock::new(()));
            let short = Config {
                stall_limit: Duration::from_millis(100),
                ..fault_config(Duration::ZERO)
            };
            let failure = |arena: &Arena| arena.failure.lock().unwrap().clone().unwrap_or_default();
            // Nobody gets in: the writers are named.
            let arena = Arena::new(lock(), short);
            assert!(!both_sides_progress(&arena, Kind::Churn));
            let f = failure(&arena);
            assert!(
                f.starts_with("hang: writers did not get the lock in ")
                    && f.ends_with(" s after a churn fault"),
                "{f}"
            );
            // The writers get in, the readers do not.
            let arena = Arc::new(Arena::new(lock(), short));
            let threads = start_sides(&arena, &[true]);
            assert!(!both_sides_progress(&arena, Kind::ReadStall));
            let f = failure(&arena);
            arena.stop.store(true, Relaxed);
            threads.into_iter().for_each(|t| t.join().unwrap());
            assert!(
                f.starts_with("hang: readers did not get the lock in ")
                    && f.ends_with(" s after a read stall fault"),
                "{f}"
            );
            // Both get in, well within the default stall limit.
            let arena = Arc::new(Arena::new(lock(), fault_config(Duration::ZERO)));
            let threads = start_sides(&arena, &[true, false]);
            let went_on = both_sides_progress(&arena, Kind::WriteStall);
            arena.stop.store(true, Relaxed);
            threads.into_iter().for_each(|t| t.join().unwrap());
            assert!(went_on, "{:?}", arena.failure.lock().unwrap());
        });
    }

    /// The driver injects the cycle's faults in turn, every kind, until the
    /// run stops, and then returns.
    #[test]
    fn the_driver_injects_every_kind_of_fault_in_turn_until_the_run_stops() {
        test_support::within_a_deadline("the fault driver", Duration::from_secs(60), || {
            fault::quiet_injected_panics();
            let lock = Box::new(parking_lot::RwLock::new(()));
            let arena = Arc::new(Arena::new(lock, fault_config(Duration::ZERO)));
            let threads = start_sides(&arena, &[true, false]);
            let driver = {
                let arena = Arc::clone(&arena);
                std::thread::spawn(move || drive(&arena))
            };
            // A read stall ends the cycle: once one is counted, every kind
            // had its turn (a second panic in write means the cycle began
            // again without it).
            while !driver.is_finished() {
                let c = arena.faults.snapshot();
                if c.read_stalls > 0 || c.panic_in_write > 1 {
                    break;
                }
                std::thread::sleep(Duration::from_millis(1));
            }
            arena.stop.store(true, Relaxed);
            let driven = driver.join();
            threads.into_iter().for_each(|t| t.join().unwrap());
            driven.expect("the driver panicked");
            let c = arena.faults.snapshot();
            let kinds = [
                c.panic_in_write,
                c.panic_in_read,
                c.death_in_write,
                c.death_in_read,
                c.churn_threads,
                c.write_stalls,
                c.read_stalls,
            ];
            assert!(kinds.iter().all(|&k| k > 0), "{c:?}");
            assert_eq!(*arena.failure.lock().unwrap(), None);
        });
    }

    /// The sections run on each side (`[write, read]`) and those of them
    /// left by an unwind. Relaxed counters: the test reads them after
    /// `step` returns, which joins the fault's threads (the join orders it).
    #[derive(Default)]
    struct Sides {
        sections: [AtomicU64; 2],
        unwound: [AtomicU64; 2],
    }

    /// parking_lot's lock, counting its sections in [`Sides`].
    #[derive(Default)]
    struct Recording {
        lock: parking_lot::RwLock<()>,
        sides: Arc<Sides>,
    }

    /// Counts an unwind through the section it leaves.
    struct Left<'a>(&'a AtomicU64);

    impl Drop for Left<'_> {
        fn drop(&mut self) {
            if std::thread::panicking() {
                self.0.fetch_add(1, Relaxed);
            }
        }
    }

    impl Recording {
        fn section(&self, write: bool, section: &mut dyn FnMut()) {
            let side = usize::from(!write);
            self.sides.sections[side].fetch_add(1, Relaxed);
            let _left = Left(&self.sides.unwound[side]);
            section();
        }
    }

    impl TortureLock for Recording {
        fn write_section(&self, section: &mut dyn FnMut()) {
            let _guard = self.lock.write();
            self.section(true, section)
        }
        fn read_section(&self, section: &mut dyn FnMut()) {
            let _guard = self.lock.read();
            self.section(false, section)
        }
    }

    /// Each fault of the cycle goes through the side it names: a write
    /// fault's sections are write sections, a read fault's read sections,
    /// a panic unwinds through one section of its side (and the panic fault
    /// takes that side once more), and half the churn threads write.
    #[test]
    fn each_fault_takes_the_lock_on_the_side_it_names() {
        fault::quiet_injected_panics();
        let recording = Recording::default();
        let sides = Arc::clone(&recording.sides);
        let config = Config {
            writers: 0,
            readers: 0,
            ..fault_config(Duration::ZERO)
        };
        let arena = Arena::new(Box::new(recording), config);
        let now = || {
            let [ws, rs] = &sides.sections;
            let [wu, ru] = &sides.unwound;
            [ws, rs, wu, ru].map(|c| c.load(Relaxed))
        };
        let half = CHURN_THREADS / 2;
        // Write sections, read sections, write unwinds, read unwinds.
        let expected = [
            (Kind::PanicInWrite, [2, 0, 1, 0]),
            (Kind::PanicInRead, [0, 2, 0, 1]),
            (Kind::DeathInWrite, [1, 0, 1, 0]),
            (Kind::DeathInRead, [0, 1, 0, 1]),
            (Kind::Churn, [half, half, 0, 0]),
            (Kind::WriteStall, [1, 0, 0, 0]),
            (Kind::ReadStall, [0, 1, 0, 0]),
        ];
        for (n, (kind, sections)) in (0..).zip(expected) {
            let before = now();
            assert!(
                step(&arena, n),
                "{kind}: {:?}",
                arena.failure.lock().unwrap()
            );
            let after = now();
            let done: Vec<u64> = after.iter().zip(before).map(|(a, b)| a - b).collect();
            assert_eq!(done, sections, "{kind}");
        }
        assert_eq!(*arena.failure.lock().unwrap(), None);
    }

    /// Neither an exclusion check nor a lock: panics (not as an injected
    /// fault) the first time it is entered. Relaxed: the flag orders
    /// nothing else, and one thread enters at a time here.
    #[derive(Default)]
    struct PanicsFirst(AtomicBool);

    impl TortureLock for PanicsFirst {
        fn write_section(&self, section: &mut dyn FnMut()) {
            self.read_section(section)
        }
        fn read_section(&self, section: &mut dyn FnMut()) {
            assert!(self.0.swap(true, Relaxed), "the lock's own bug");
            section();
        }
    }

    /// A panic of the lock's own in a panic or death fault's section is no
    /// injected fault: it fails the run, naming the fault and the panic,
    /// and is not counted.
    #[test]
    fn a_panic_of_the_locks_own_in_a_fault_fails_the_run_and_is_not_counted() {
        fault::quiet_injected_panics();
        let config = Config {
            writers: 0,
            readers: 0,
            ..fault_config(Duration::ZERO)
        };
        for (n, kind) in [(0, Kind::PanicInWrite), (2, Kind::DeathInWrite)] {
            let arena = Arena::new(Box::<PanicsFirst>::default(), config);
            step(&arena, n);
            let counts = arena.faults.snapshot();
            assert_eq!(
                (counts.panic_in_write, counts.death_in_write),
                (0, 0),
                "{kind}"
            );
            assert_eq!(
                arena.failure.lock().unwrap().as_deref(),
                Some(format!("a {kind} fault thread panicked: the lock's own bug").as_str())
            );
        }
    }
}
