//! What the model-based randomized tests share (`hazptr/tests/model_atomic_box.rs`,
//! `rcu-lite/tests/model_cell.rs`, `qrwlock/tests/model_raw.rs`, and the
//! three files of 2026-12-08, `model_raw.rs`, `model_api.rs` and
//! `model_gp.rs`): a small deterministic generator, the seeds to run and
//! the scale of the work, the trace of operations that
//! a failing seed prints, the harness that checks the seeds reach every
//! case, and values whose drops are counted. No property-testing crate is
//! used.

use std::sync::Arc;
use std::sync::atomic::Ordering::SeqCst;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize};

/// xorshift64* (Vigna), seeded through a multiplication so that nearby
/// seeds start far apart.
pub struct Rng(u64);

impl Rng {
    /// The generator for `seed`.
    pub fn new(seed: u64) -> Rng {
        Rng((seed ^ 0x2545_f491_4f6c_dd1d).wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1)
    }

    /// The next 64 bits.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// Uniform in `0..n` (n > 0; the modulo bias is irrelevant here).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    /// True with a chance of `p` in 100.
    pub fn percent(&mut self, p: u64) -> bool {
        self.next() % 100 < p
    }
}

/// How many times the default work a test does: `MODEL_SCALE` if set to a
/// number, else 1 (a longer hunt for a rare interleaving).
pub fn scale() -> u64 {
    std::env::var("MODEL_SCALE")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1)
}

/// The seeds to run: `MODEL_SEED` alone if set, else `0..count`.
pub fn seeds(count: u64) -> Vec<u64> {
    match std::env::var("MODEL_SEED") {
        Ok(s) => vec![s.parse().expect("MODEL_SEED is a number")],
        Err(_) => (0..count).collect(),
    }
}

/// The operations run so far, printed with the seed and the command that
/// reruns it if the thread panics before the trace is dropped.
pub struct Trace {
    /// The `cargo test` arguments that select the test binary
    /// (`-p hazptr --test model_atomic_box`).
    command: &'static str,
    test: &'static str,
    seed: u64,
    /// What the seed chose besides the operations (printed after the seed,
    /// as is: start it with a space).
    pub config: String,
    ops: Vec<String>,
}

impl Trace {
    /// An empty trace of `test` in the binary `command` selects, for `seed`.
    pub fn new(command: &'static str, test: &'static str, seed: u64) -> Trace {
        Trace {
            command,
            test,
            seed,
            config: String::new(),
            ops: Vec::new(),
        }
    }

    /// Records the next operation.
    pub fn op(&mut self, op: String) {
        self.ops.push(op);
    }
}

impl Drop for Trace {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!(
                "{} FAILED with seed {}{}; rerun it alone with MODEL_SEED={} \
                 cargo test {} {}\noperations ({}):",
                self.test,
                self.seed,
                self.config,
                self.seed,
                self.command,
                self.test,
                self.ops.len()
            );
            for (i, op) in self.ops.iter().enumerate() {
                eprintln!("  {i:4}: {op}");
            }
        }
    }
}

/// How long a model test's seeds may take before it counts as hung: two
/// minutes, an hour under miri (whose clock runs with the interpreter).
pub const DEADLINE: std::time::Duration =
    std::time::Duration::from_secs(if cfg!(miri) { 3600 } else { 120 });

/// Runs `each` for every seed of [`seeds`]`(count)` on a thread of its own,
/// failing with `what` if the seeds are not done within [`DEADLINE`] (a
/// wait that never returned).
pub fn each_seed(what: &str, count: u64, each: impl Fn(u64) + Send + 'static) {
    crate::within_a_deadline(what, DEADLINE, move || {
        for seed in seeds(count) {
            each(seed);
        }
    });
}

/// What a model test's single-thread seeds reached, summed over the seeds,
/// so that a change that stops them reaching a case fails the test instead
/// of leaving the case untested.
pub trait Coverage: Default + std::fmt::Debug + 'static {
    /// Adds what one seed reached.
    fn add(&mut self, seed: &Self);
    /// Panics, naming the case, unless every case was reached.
    fn assert_all_met(&self);
}

/// Runs `one_seed` for every seed of [`seeds`]`(count)` within [`DEADLINE`]
/// (failing with `what` if they are not done by then), and checks that the
/// seeds together reached every case of `C`: not for one `MODEL_SEED`, and
/// not under miri, whose few seeds reach only some.
pub fn each_seed_meeting_every_case<C: Coverage>(what: &str, count: u64, one_seed: fn(u64) -> C) {
    crate::within_a_deadline(what, DEADLINE, move || {
        let mut met = C::default();
        for seed in seeds(count) {
            met.add(&one_seed(seed));
        }
        println!("cases met: {met:?}");
        if std::env::var_os("MODEL_SEED").is_none() && !cfg!(miri) {
            met.assert_all_met();
        }
    });
}

/// The word every live [`Tracked`] holds; its drop clears it, so a read of
/// a freed value that the allocator has not reused yet shows 0.
pub const CANARY: u64 = 0x5afe_c0de_0bad_f00d;

/// Counts the drops of the values it made, each by its id, and which were
/// ever offered to the structure under test.
pub struct Tracker {
    next_id: AtomicUsize,
    /// Set before the value is offered to the structure (the concurrent
    /// tests' "was once stored").
    stored: Box<[AtomicBool]>,
    /// How many times each value was dropped.
    drops: Box<[AtomicU32]>,
}

impl Tracker {
    /// A tracker for at most `capacity` values.
    pub fn new(capacity: usize) -> Arc<Tracker> {
        Arc::new(Tracker {
            next_id: AtomicUsize::new(0),
            stored: (0..capacity).map(|_| AtomicBool::new(false)).collect(),
            drops: (0..capacity).map(|_| AtomicU32::new(0)).collect(),
        })
    }

    /// A new value with the next id.
    pub fn make(self: &Arc<Self>, payload: u64) -> Tracked {
        // SeqCst on every tracker access: the checks run across threads
        // (a reclaiming or callback thread drops the values) and the
        // strongest ordering keeps that reasoning out of them.
        let id = self.next_id.fetch_add(1, SeqCst);
        assert!(id < self.drops.len(), "tracker capacity exceeded");
        Tracked {
            id,
            payload,
            canary: CANARY,
            tracker: Arc::clone(self),
        }
    }

    /// A new value, marked as stored (for a test that offers every value
    /// it makes at once).
    pub fn make_stored(self: &Arc<Self>, payload: u64) -> Tracked {
        let value = self.make(payload);
        self.mark_stored(&value);
        value
    }

    /// How many values it has made.
    pub fn made(&self) -> usize {
        self.next_id.load(SeqCst)
    }

    /// How many times value `id` was dropped.
    pub fn drops(&self, id: usize) -> u32 {
        self.drops[id].load(SeqCst)
    }

    /// Marks `value` as offered to the structure.
    pub fn mark_stored(&self, value: &Tracked) {
        self.stored[value.id].store(true, SeqCst);
    }

    /// Whether value `id` was ever offered to the structure.
    pub fn was_stored(&self, id: usize) -> bool {
        self.stored[id].load(SeqCst)
    }
}

/// A value with an id whose drops its [`Tracker`] counts.
pub struct Tracked {
    /// Its id, in the order made.
    pub id: usize,
    /// What the test stores in it.
    pub payload: u64,
    /// [`CANARY`] until dropped.
    pub canary: u64,
    tracker: Arc<Tracker>,
}

impl Drop for Tracked {
    fn drop(&mut self) {
        self.tracker.drops[self.id].fetch_add(1, SeqCst);
        self.canary = 0;
    }
}
