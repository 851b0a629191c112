//! Model-based randomized tests of [`RawQRwLock`] through the `lock_api`
//! traits it implements (`RawRwLock` and `RawRwLockDowngrade`, the only two:
//! no upgradable, timed or fair variants), plus its own recursive reads,
//! and of [`RwLock`] on real threads.
//!
//! The example-based tests in `rwlock.rs` check one scenario each; these
//! check that any sequence of the raw operations keeps the lock's state
//! right, and that any mix of sections on several threads keeps exclusion.
//!
//! - `single_thread_matches_the_model`: one thread; the model is (readers
//!   held, writer held). Every `try_*` must succeed exactly when the model
//!   says it can (a try-read exactly when no writer holds it, a try-write
//!   exactly when nobody does), the blocking locks are called only where the
//!   model says they cannot wait, unlocks and `downgrade` only for holds the
//!   model has, and `is_locked`/`is_locked_exclusive` (through the trait and
//!   the inherent methods) agree with the model after every step; with one
//!   thread no writer is ever waiting.
//! - `concurrent_sections_exclude`: 2-4 threads doing random read and write
//!   sections on an `RwLock<[u64; 8]>` (plain, `try_*`, recursive reads
//!   nested in a read, writes downgraded to reads, `unlocked` windows).
//!   Writers set all eight words to one new value, the previous plus one;
//!   readers check that all eight are equal and that the value a thread
//!   sees never goes backwards; at the end the value is the number of write
//!   sections performed.
//!
//! A failure prints the seed and the operations up to it; `MODEL_SEED=N`
//! runs that seed alone. The generator is a xorshift64* written here (no
//! property-testing crate is used).
#![cfg(not(loom))]

use lock_api::{RawRwLock, RawRwLockDowngrade};
use qrwlock::GuardMarker;
use qrwlock::{RawQRwLock, ReadRecursive, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering::SeqCst;
use test_support::model::{Rng, Trace, seeds};

/// Seeds of the single-thread model, and operations per seed.
/// (Few under miri, which interprets every step: `scripts/sanitize.sh`
/// runs these files there.)
const SEEDS: u64 = if cfg!(miri) { 2 } else { 200 };
const OPS: usize = if cfg!(miri) { 50 } else { 200 };
/// Seeds of the concurrent test, and sections per thread.
const CONCURRENT_SEEDS: u64 = if cfg!(miri) { 1 } else { 24 };
const CONCURRENT_OPS: usize = if cfg!(miri) { 40 } else { 1500 };
/// The most shared holds the model takes at once.
const MAX_READERS: usize = 40;

/// The lock's state as the model has it, with the guard tokens of the holds.
#[derive(Default)]
struct Model {
    shared: Vec<GuardMarker>,
    exclusive: Option<GuardMarker>,
}

impl Model {
    fn readers(&self) -> usize {
        self.shared.len()
    }

    fn writer(&self) -> bool {
        self.exclusive.is_some()
    }

    fn can_read(&self) -> bool {
        !self.writer()
    }

    fn can_write(&self) -> bool {
        !self.writer() && self.readers() == 0
    }

    fn describe(&self) -> String {
        format!("(readers {}, writer {})", self.readers(), self.writer())
    }

    /// The checks that hold after every step.
    fn check(&self, lock: &RawQRwLock) {
        let held = self.readers() > 0 || self.writer();
        assert_eq!(
            RawRwLock::is_locked(lock),
            held,
            "is_locked() with the model at {}",
            self.describe()
        );
        assert_eq!(
            RawRwLock::is_locked_exclusive(lock),
            self.writer(),
            "is_locked_exclusive() with the model at {}",
            self.describe()
        );
        assert_eq!(RawQRwLock::is_locked(lock), held, "inherent is_locked()");
        assert_eq!(
            RawQRwLock::is_locked_exclusive(lock),
            self.writer(),
            "inherent is_locked_exclusive()"
        );
        assert!(
            !lock.is_writer_waiting(),
            "a writer waiting, with one thread"
        );
        let debug = format!("{lock:?}");
        assert!(
            debug.contains(&format!("reader_count: {}", self.readers()))
                && debug.contains(&format!("writer_locked: {}", self.writer())),
            "Debug shows the model's state {}: {debug}",
            self.describe()
        );
    }
}

fn one_seed(seed: u64) {
    let mut rng = Rng::new(seed);
    let mut trace = Trace::new(
        "-p qrwlock --test model_raw",
        "single_thread_matches_the_model",
        seed,
    );
    let lock = <RawQRwLock as RawRwLock>::INIT;
    let mut m = Model::default();
    m.check(&lock);
    for _ in 0..OPS {
        step(&lock, &mut m, &mut rng, &mut trace);
        m.check(&lock);
    }
    // Give every hold back: the lock ends free.
    trace.op(format!("end: unlock everything {}", m.describe()));
    if let Some(g) = m.exclusive.take() {
        // SAFETY: the model holds the lock exclusively; `g` is that hold.
        unsafe { lock.unlock_exclusive(g) };
    }
    for g in m.shared.drain(..) {
        // SAFETY: the model holds the lock shared; `g` is one of its holds.
        unsafe { lock.unlock_shared(g) };
    }
    m.check(&lock);
    assert!(
        lock.try_lock_exclusive().is_some(),
        "a free lock can be write-locked"
    );
    drop(trace);
}

fn step(lock: &RawQRwLock, m: &mut Model, rng: &mut Rng, trace: &mut Trace) {
    let before = m.describe();
    match rng.below(12) {
        0 | 1 if m.readers() < MAX_READERS => {
            let got = lock.try_lock_shared();
            trace.op(format!("try_lock_shared() {before} -> {}", got.is_some()));
            assert_eq!(
                got.is_some(),
                m.can_read(),
                "try_lock_shared() with the model at {before}"
            );
            m.shared.extend(got);
        }
        2 => {
            let got = lock.try_lock_exclusive();
            trace.op(format!(
                "try_lock_exclusive() {before} -> {}",
                got.is_some()
            ));
            assert_eq!(
                got.is_some(),
                m.can_write(),
                "try_lock_exclusive() with the model at {before}"
            );
            if let Some(g) = got {
                m.exclusive = Some(g);
            }
        }
        // The blocking forms, only where they cannot wait.
        3 if m.can_read() && m.readers() < MAX_READERS => {
            trace.op(format!("lock_shared() {before}"));
            m.shared.push(lock.lock_shared());
        }
        4 if m.can_write() => {
            trace.op(format!("lock_exclusive() {before}"));
            m.exclusive = Some(lock.lock_exclusive());
        }
        // The inherent recursive reads (also where `can_read`: a writer
        // holding is what keeps them out).
        5 if m.readers() < MAX_READERS => {
            if rng.percent(50) {
                let got = lock.try_read_lock_recursive();
                trace.op(format!("try_read_lock_recursive() {before} -> {got}"));
                assert_eq!(
                    got,
                    m.can_read(),
                    "try_read_lock_recursive() with the model at {before}"
                );
                if got {
                    m.shared.push(GuardMarker::new());
                }
            } else if m.can_read() {
                trace.op(format!("read_lock_recursive() {before}"));
                lock.read_lock_recursive();
                m.shared.push(GuardMarker::new());
            }
        }
        6..=8 if m.readers() > 0 => {
            trace.op(format!("unlock_shared() {before}"));
            let g = m.shared.pop().expect("a shared hold");
            // SAFETY: the model holds the lock shared; `g` is one of its
            // holds, given up here.
            unsafe { lock.unlock_shared(g) };
        }
        9 | 10 if m.writer() => {
            let g = m.exclusive.take().expect("the exclusive hold");
            if rng.percent(50) {
                trace.op(format!("unlock_exclusive() {before}"));
                // SAFETY: the model holds the lock exclusively; `g` is that
                // hold, given up here.
                unsafe { lock.unlock_exclusive(g) };
            } else {
                trace.op(format!("downgrade() {before}"));
                // SAFETY: as above; the shared hold it returns is kept.
                m.shared
                    .push(unsafe { RawRwLockDowngrade::downgrade(lock, g) });
            }
        }
        _ => {
            // The inherent try forms against whatever the state is, the
            // write first, undone at once when they succeed.
            let write = lock.try_write_lock();
            let read = lock.try_read_lock();
            trace.op(format!(
                "try_write_lock() -> {write}, then try_read_lock() -> {read} {before}, undone"
            ));
            assert_eq!(write, m.can_write(), "try_write_lock() at {before}");
            // With the write just taken, a read can never enter.
            assert_eq!(
                read,
                !write && m.can_read(),
                "try_read_lock() after try_write_lock() -> {write} at {before}"
            );
            if read {
                // SAFETY: the shared hold just taken.
                unsafe { lock.read_unlock() };
            }
            if write {
                // SAFETY: the exclusive hold just taken.
                unsafe { lock.write_unlock() };
            }
        }
    }
}

#[test]
fn single_thread_matches_the_model() {
    test_support::within_a_deadline(
        "single_thread_matches_the_model (a lock the model said could not wait, waited)",
        test_support::model::DEADLINE,
        || {
            for seed in seeds(SEEDS) {
                one_seed(seed);
            }
        },
    );
}

#[test]
fn concurrent_sections_exclude() {
    test_support::model::each_seed(
        "concurrent_sections_exclude (a lock never given back, or a lost wake-up)",
        CONCURRENT_SEEDS,
        concurrent_seed,
    );
}

fn concurrent_seed(seed: u64) {
    let mut rng = Rng::new(seed ^ 0xc0ff_ee00_c0ff_ee00);
    let threads = 2 + rng.below(3);
    let config = format!(" ({threads} threads)");
    let lock = RwLock::new([0u64; 8]);
    let writes = AtomicU64::new(0);
    std::thread::scope(|s| {
        for t in 0..threads {
            let thread_seed = rng.next();
            let (lock, writes, config) = (&lock, &writes, &config);
            s.spawn(move || worker(seed, t, thread_seed, lock, writes, config));
        }
    });
    assert!(!lock.is_locked(), "seed {seed}{config}: the lock ends free");
    let n = writes.load(SeqCst);
    assert_eq!(
        lock.into_inner(),
        [n; 8],
        "seed {seed}{config}: every word counts the {n} write sections"
    );
}

/// All eight words equal, and not behind what this thread saw last.
fn check_words(words: &[u64; 8], last: &mut u64, what: &str) {
    assert!(
        words.iter().all(|&w| w == words[0]),
        "{what}: torn words {words:?}"
    );
    assert!(
        words[0] >= *last,
        "{what}: went back from {last} to {}",
        words[0]
    );
    *last = words[0];
}

/// One write section: every word becomes the previous value plus one.
fn write_section(words: &mut [u64; 8], last: &mut u64, writes: &AtomicU64, what: &str) {
    check_words(words, last, what);
    let next = words[0] + 1;
    for (i, w) in words.iter_mut().enumerate() {
        *w = next;
        if i == 3 {
            // Half written: a reader let in now would see torn words.
            std::hint::spin_loop();
        }
    }
    *last = next;
    writes.fetch_add(1, SeqCst);
}

fn worker(
    seed: u64,
    t: usize,
    thread_seed: u64,
    lock: &RwLock<[u64; 8]>,
    writes: &AtomicU64,
    config: &str,
) {
    let mut rng = Rng::new(thread_seed);
    let mut trace = Trace::new(
        "-p qrwlock --test model_raw",
        "concurrent_sections_exclude",
        seed,
    );
    trace.config = format!("{config}, thread {t}");
    let mut last = 0;
    for _ in 0..CONCURRENT_OPS {
        match rng.below(10) {
            0..=2 => {
                trace.op("read".into());
                let r = lock.read();
                check_words(&r, &mut last, "read");
                if rng.percent(30) {
                    std::thread::yield_now();
                    check_words(&r, &mut last, "read, after a yield");
                }
                if rng.percent(30) {
                    // Nested: only a recursive read may enter past a
                    // writer that waits for the outer hold.
                    trace.op("  read_recursive inside".into());
                    let inner = lock.read_recursive();
                    check_words(&inner, &mut last, "read_recursive");
                    assert_eq!(*inner, *r, "two holds of one thread see one value");
                }
            }
            3 => {
                let r = lock.try_read();
                trace.op(format!("try_read -> {}", r.is_some()));
                if let Some(r) = r {
                    check_words(&r, &mut last, "try_read");
                }
            }
            4..=6 => {
                trace.op("write".into());
                let mut w = lock.write();
                write_section(&mut w, &mut last, writes, "write");
                if rng.percent(20) {
                    trace.op("  unlocked window".into());
                    RwLockWriteGuard::unlocked(&mut w, std::thread::yield_now);
                    write_section(&mut w, &mut last, writes, "write after unlocked");
                }
            }
            7 => {
                let w = lock.try_write();
                trace.op(format!("try_write -> {}", w.is_some()));
                if let Some(mut w) = w {
                    write_section(&mut w, &mut last, writes, "try_write");
                }
            }
            8 => {
                trace.op("write, downgraded".into());
                let mut w = lock.write();
                write_section(&mut w, &mut last, writes, "write before downgrade");
                let mine = w[0];
                let r: RwLockReadGuard<'_, [u64; 8]> = RwLockWriteGuard::downgrade(w);
                // No writer can have entered in between.
                assert_eq!(r[0], mine, "downgrade let a writer in");
                check_words(&r, &mut last, "downgraded");
                std::thread::yield_now();
                check_words(&r, &mut last, "downgraded, after a yield");
            }
            _ => {
                let r = lock.try_read_recursive();
                trace.op(format!("try_read_recursive -> {}", r.is_some()));
                if let Some(r) = r {
                    check_words(&r, &mut last, "try_read_recursive");
                }
            }
        }
    }
    drop(trace);
}
