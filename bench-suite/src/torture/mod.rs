//! `torture`: use-after-free detection for deferred-reclamation primitives.
//!
//! The counterpart of the kernel's `rcutorture`/`hazptrtorture`: reader threads
//! repeatedly enter a read-side section, reach the currently published
//! [`object::TortureObject`] and check that it is live; writer threads keep
//! replacing it and hand the old one to the primitive's reclamation (retire,
//! defer, or synchronize then free). Reclamation poisons an object before a
//! delayed free ([`object::reclaim`]), so a primitive that frees too early shows
//! up as counted errors, not as silent corruption. Any error exits with 1.

mod hazptr;
pub mod object;
mod peers;
mod rcu_lite;

use crate::progress::Progress;
use crate::registry::Implementation;
use object::{Ledger, TortureObject};
use serde::Serialize;
use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::*};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

/// A deferred-reclamation primitive under torture.
pub trait Torture: Send + Sync {
    /// One read-side section: enter, reach the current object, check it with
    /// [`TortureObject::is_live`] while still inside, exit. Returns the check.
    fn read(&self) -> bool;
    /// Publishes `fresh` in place of the current object and hands the old one
    /// to the primitive's reclamation, which must end in [`object::reclaim`].
    fn replace(&self, fresh: Box<TortureObject>);
}

/// What every torture implementation is built with.
#[derive(Debug, Default)]
pub struct Options {
    /// The ledger of this run's objects (the first object too).
    pub ledger: Arc<Ledger>,
    /// Force the acquire slow path (only implementations listed in
    /// [`SLOW_PATH_IMPLEMENTATIONS`] have one).
    pub slow_path: bool,
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
    peers::CROSSBEAM_EPOCH,
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
}

/// The outcome for one implementation.
#[derive(Clone, Debug, Serialize)]
pub struct Outcome {
    /// Implementation name.
    #[serde(rename = "impl")]
    pub name: String,
    /// Reader threads.
    pub readers: usize,
    /// Writer threads.
    pub writers: usize,
    /// Seconds tortured.
    pub duration_s: f64,
    /// Read-side sections that reached and checked an object.
    pub reads: u64,
    /// Objects replaced (and handed to reclamation) by writers.
    pub replaced: u64,
    /// Reads that found a poisoned or corrupt object: premature reclamation.
    pub errors: u64,
    /// Most objects allocated and not yet reclaimed at once.
    pub unreclaimed_max: u64,
}

/// Tortures one implementation.
pub fn torture(
    imp: &Implementation<dyn Torture, Options>,
    config: Config,
    progress: &mut Progress,
) -> Outcome {
    let ledger = Ledger::new();
    let boxed = imp.build(&Options {
        ledger: Arc::clone(&ledger),
        slow_path: config.slow_path,
    });
    let primitive = &*boxed;
    progress.set_label(imp.name);
    let stop = AtomicBool::new(false);
    let reads = AtomicU64::new(0);
    let errors = AtomicU64::new(0);
    let replaced = AtomicU64::new(0);
    let start = Barrier::new(config.readers + config.writers + 1);
    let base = progress.position();
    let elapsed = std::thread::scope(|s| {
        for _ in 0..config.readers {
            s.spawn(|| {
                start.wait();
                let (mut n, mut bad) = (0u64, 0u64);
                while !stop.load(Relaxed) {
                    for _ in 0..64 {
                        bad += u64::from(!primitive.read());
                    }
                    n += 64;
                }
                reads.fetch_add(n, Relaxed);
                errors.fetch_add(bad, Relaxed);
            });
        }
        for w in 0..config.writers {
            let (ledger, start, stop, replaced) = (&ledger, &start, &stop, &replaced);
            s.spawn(move || {
                start.wait();
                let mut seq = (w as u64) << 48;
                let mut n = 0;
                while !stop.load(Relaxed) {
                    seq += 1;
                    primitive.replace(TortureObject::new(ledger, seq));
                    n += 1;
                }
                replaced.fetch_add(n, Relaxed);
            });
        }
        start.wait();
        let began = Instant::now();
        while began.elapsed() < config.duration {
            let left = config.duration.saturating_sub(began.elapsed());
            std::thread::sleep(left.min(Duration::from_millis(100)));
            progress.set_position(base + began.elapsed().as_millis() as u64);
        }
        stop.store(true, Relaxed);
        began.elapsed()
    });
    // Dropping the primitive reclaims the published object (and, for most,
    // everything still retired); then the quarantine is freed.
    drop(boxed);
    ledger.close();
    Outcome {
        name: imp.name.to_owned(),
        readers: config.readers,
        writers: config.writers,
        duration_s: elapsed.as_secs_f64(),
        reads: reads.into_inner(),
        replaced: replaced.into_inner(),
        errors: errors.into_inner(),
        unreclaimed_max: ledger.unreclaimed_max(),
    }
}

/// Tortures every implementation in `chosen`, one after the other.
pub fn torture_all(
    chosen: &[&Implementation<dyn Torture, Options>],
    config: Config,
) -> Vec<Outcome> {
    let total_ms = chosen.len() as u64 * config.duration.as_millis() as u64;
    let mut progress = Progress::new(total_ms, "torture");
    chosen
        .iter()
        .map(|imp| torture(imp, config, &mut progress))
        .collect()
}

/// Writes one summary line per implementation, `!!!` marking errors.
pub fn write_text(out: &mut impl Write, outcomes: &[Outcome]) -> std::io::Result<()> {
    for o in outcomes {
        writeln!(
            out,
            "torture: {} readers={} writers={} duration={:.1}s reads: {} replaced: {} unreclaimed max: {} errors: {}{}",
            o.name,
            o.readers,
            o.writers,
            o.duration_s,
            o.reads,
            o.replaced,
            o.unreclaimed_max,
            o.errors,
            if o.errors > 0 { " !!!" } else { "" }
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicPtr;

    /// Frees the old object at once, while readers may hold it: torture must
    /// count errors (the quarantine keeps the memory valid for the check).
    struct FreesTooEarly {
        current: AtomicPtr<TortureObject>,
    }

    impl Torture for FreesTooEarly {
        fn read(&self) -> bool {
            let p = self.current.load(Acquire);
            // Widen the window between reaching and checking the object.
            for _ in 0..200 {
                std::hint::spin_loop();
            }
            // SAFETY: objects are only freed from the quarantine, which holds
            // 16384 of them: far more than a writer replaces in this window.
            unsafe { &*p }.is_live()
        }
        fn replace(&self, fresh: Box<TortureObject>) {
            let old = self.current.swap(Box::into_raw(fresh), AcqRel);
            // SAFETY: `old` came from `Box::into_raw`; freeing it while readers
            // may hold it is the bug this test plants (the quarantine keeps it
            // allocated).
            unsafe { object::reclaim(old) };
        }
    }

    impl Drop for FreesTooEarly {
        fn drop(&mut self) {
            // SAFETY: the last published object, owned by `self`.
            unsafe { object::reclaim(*self.current.get_mut()) };
        }
    }

    #[test]
    fn premature_reclamation_is_detected() {
        let imp = Implementation::<dyn Torture, Options> {
            name: "frees-too-early",
            summary: "planted bug",
            origin: crate::registry::Origin::Peer,
            make: |o| {
                Ok(Box::new(FreesTooEarly {
                    current: AtomicPtr::new(Box::into_raw(TortureObject::new(&o.ledger, 0))),
                }))
            },
        };
        let config = Config {
            readers: 2,
            writers: 1,
            duration: Duration::from_millis(300),
            slow_path: false,
        };
        let out = torture(&imp, config, &mut Progress::new(1, "test"));
        assert!(out.errors > 0, "{out:?}");
    }

    #[test]
    fn peers_survive_a_short_torture() {
        let config = Config {
            readers: 2,
            writers: 1,
            duration: Duration::from_millis(300),
            slow_path: false,
        };
        for imp in implementations() {
            let out = torture(imp, config, &mut Progress::new(1, "test"));
            assert_eq!(out.errors, 0, "{out:?}");
            assert!(out.reads > 0 && out.replaced > 0, "{out:?}");
        }
    }
}
