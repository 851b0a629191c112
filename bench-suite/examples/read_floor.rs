//! What a memb read-side section can cost on this CPU, against
//! crossbeam-epoch's pin: the floor under the goal "memb read lock +
//! unlock at most 0.4x crossbeam-epoch's pin".
//!
//! One run times, round after round in turn:
//!
//! - crossbeam-epoch's pin + one load, through a `LocalHandle` the reader
//!   holds, and rcu-lite's real memb section (`memb::read_lock` +
//!   `Rcu::read` + drop), as `syncbench refscale` times them (until
//!   2026-12-06 this example pinned through `crossbeam_epoch::pin()`, whose
//!   thread-local lookup refscale avoids: 2.2 ns inlined, 3.4-3.7 out of
//!   line, so the two could judge the goal differently);
//! - models of the memb fast path, the same memory operations written out
//!   with plain statics, each with one piece removed: the load of the
//!   record's `wake_driver` flag that lets an unlock wake a grace-period
//!   driver sleeping for this reader (the issue asks for that wake-up; until
//!   2026-12-05 it was a load of the engine's `driver_wait` word), the load
//!   of the thread's record pointer (a record inside the thread-local block,
//!   as liburcu lays out its readers, needs no such load), both, and the
//!   nesting check on unlock
//!   (without it, dropping an outer guard before an inner one would end the
//!   section early: unsound);
//! - rcu-lite's qsbr section, which is the loop around one pointer load.
//!
//! ```sh
//! cargo run --release -p bench-suite --example read_floor -- 5 20000000
//! ```
//! (rounds, iterations per round; defaults 5 and 20,000,000).

use bench_suite::stats::median;
use rcu_lite::qsbr::QsbrThread;
use rcu_lite::{Memb, Qsbr, Rcu, memb};
use std::cell::Cell;
use std::hint::black_box;
use std::sync::atomic::Ordering::{Acquire, Relaxed, Release, SeqCst};
use std::sync::atomic::{AtomicPtr, AtomicU32, AtomicU64, compiler_fence};
use std::time::Instant;

/// A record as rcu-lite's: the word (nesting in the low 16 bits) and the
/// flag a driver sets when it sleeps waiting for the record.
#[repr(align(128))]
struct Record {
    word: AtomicU64,
    wake_driver: AtomicU32,
}

/// The newest grace period, nesting 1 (what an outermost lock stores).
static GP_WORD: AtomicU64 = AtomicU64::new(0);
/// The protected value.
static VALUE: AtomicPtr<u64> = AtomicPtr::new(std::ptr::null_mut());
/// A record outside the thread-local block, reached through `RECORD_PTR`.
static RECORD: Record = Record {
    word: AtomicU64::new(0),
    wake_driver: AtomicU32::new(0),
};

std::thread_local! {
    /// The pointer rcu-lite's fast path loads to find the thread's record.
    static RECORD_PTR: Cell<*const Record> = const { Cell::new(std::ptr::null()) };
    /// A record in the thread-local block itself.
    static TLS_RECORD: Record = const {
        Record {
            word: AtomicU64::new(0),
            wake_driver: AtomicU32::new(0),
        }
    };
}

#[cold]
#[inline(never)]
fn off_the_fast_path(what: &str) -> ! {
    panic!("read_floor: {what} (the models only take the fast path)")
}

/// One modelled section on `record`: lock, one protected load, unlock.
/// `WAKE_CHECK`: load the record's wake-up flag after the unlock store. `NEST_CHECK`:
/// load the word on unlock to see that this is the outermost guard.
#[inline(always)]
fn section<const WAKE_CHECK: bool, const NEST_CHECK: bool>(record: &Record) {
    // Lock: Relaxed as in rcu-lite (only this thread writes its word).
    if record.word.load(Relaxed) & 0xffff != 0 {
        off_the_fast_path("nested");
    }
    // Acquire and Release, as rcu-lite's snapshot of `gp_word` and its
    // store (the same code as Relaxed on x86, not on aarch64).
    record.word.store(GP_WORD.load(Acquire), Release);
    compiler_fence(SeqCst);
    // SAFETY: `VALUE` points at a leaked `Box` set in `main`, never freed.
    black_box(unsafe { *VALUE.load(Acquire) });
    // Unlock.
    if NEST_CHECK && record.word.load(Relaxed) & 0xffff != 1 {
        off_the_fast_path("unbalanced");
    }
    record.word.store(0, Release);
    compiler_fence(SeqCst);
    if WAKE_CHECK && record.wake_driver.load(Relaxed) != 0 {
        off_the_fast_path("a driver sleeps");
    }
}

/// Times `iterations` sections of a loop body; ns per section.
fn ns_per(iterations: u64, mut body: impl FnMut()) -> f64 {
    let start = Instant::now();
    for _ in 0..iterations {
        body();
    }
    start.elapsed().as_secs_f64() * 1e9 / iterations as f64
}

#[inline(never)]
fn via_pointer<const WAKE_CHECK: bool, const NEST_CHECK: bool>(n: u64) -> f64 {
    ns_per(n, || {
        // SAFETY: set to `&RECORD` in `main` before any timing.
        let record = unsafe { &*RECORD_PTR.with(Cell::get) };
        section::<WAKE_CHECK, NEST_CHECK>(record);
    })
}

#[inline(never)]
fn in_tls_block<const WAKE_CHECK: bool>(n: u64) -> f64 {
    ns_per(n, || {
        // The address only (no load): a `const` thread-local without a
        // destructor is at a fixed offset from the thread pointer.
        let record = TLS_RECORD.with(std::ptr::from_ref);
        // SAFETY: this thread's own thread-local, alive while it runs.
        section::<WAKE_CHECK, true>(unsafe { &*record });
    })
}

#[inline(never)]
fn crossbeam(
    n: u64,
    value: &crossbeam_epoch::Atomic<u64>,
    handle: &crossbeam_epoch::LocalHandle,
) -> f64 {
    ns_per(n, || {
        let guard = handle.pin();
        // SAFETY: `value` is never freed while the run lasts.
        black_box(*unsafe { value.load(Acquire, &guard).deref() });
    })
}

#[inline(never)]
fn rcu_lite_memb(n: u64, cell: &Rcu<u64, Memb>) -> f64 {
    ns_per(n, || {
        let guard = memb::read_lock();
        black_box(*cell.read(&guard));
    })
}

#[inline(never)]
fn rcu_lite_qsbr(n: u64, cell: &Rcu<u64, Qsbr>, thread: &QsbrThread) -> f64 {
    ns_per(n, || {
        let guard = thread.read_lock();
        black_box(*cell.read(&guard));
    })
}

fn main() {
    let mut arg = bench_suite::cli::example_numbers("read_floor");
    let rounds = arg("rounds", 5).max(1) as usize;
    let iterations = arg("iterations", 20_000_000).max(1);

    // Values the compiler cannot fold: an outermost lock stores nesting 1;
    // no driver sleeps.
    GP_WORD.store(black_box((7 << 16) | 1), Relaxed);
    RECORD.wake_driver.store(black_box(0), Relaxed);
    VALUE.store(Box::into_raw(Box::new(42)), Release);
    RECORD_PTR.with(|p| p.set(&RECORD));
    let crossbeam_value = crossbeam_epoch::Atomic::new(42u64);
    // Registered outside the timed loops, as refscale's reader does.
    let crossbeam_handle = crossbeam_epoch::default_collector().register();
    let memb_cell = Rcu::<u64, Memb>::new(42);
    let qsbr_cell = Rcu::<u64, Qsbr>::new(42);
    // Online for the whole run and never reporting a quiescent state: fine
    // here, with no qsbr writer; in a program with writers this would hold
    // every qsbr grace period up.
    let qsbr_thread = QsbrThread::register();

    type Run<'a> = Box<dyn Fn(u64) -> f64 + 'a>;
    let contenders: Vec<(&str, Run<'_>)> = vec![
        (
            "crossbeam-epoch pin + load through a held handle (the peer)",
            Box::new(|n| crossbeam(n, &crossbeam_value, &crossbeam_handle)),
        ),
        (
            "rcu-lite memb read_lock + read + drop",
            Box::new(|n| rcu_lite_memb(n, &memb_cell)),
        ),
        (
            "model: as rcu-lite memb",
            Box::new(via_pointer::<true, true>),
        ),
        (
            "model: no wake-up flag load (no wake-up)",
            Box::new(via_pointer::<false, true>),
        ),
        (
            "model: record in the TLS block",
            Box::new(in_tls_block::<true>),
        ),
        (
            "model: TLS block, no wake-up flag load",
            Box::new(in_tls_block::<false>),
        ),
        (
            "model: no nesting check on unlock (unsound)",
            Box::new(via_pointer::<true, false>),
        ),
        (
            "rcu-lite qsbr read_lock + read (the loop)",
            Box::new(|n| rcu_lite_qsbr(n, &qsbr_cell, &qsbr_thread)),
        ),
    ];
    let mut samples = vec![Vec::with_capacity(rounds); contenders.len()];
    for _ in 0..rounds {
        for ((_, run), s) in contenders.iter().zip(&mut samples) {
            s.push(run(iterations));
        }
    }
    let medians: Vec<f64> = samples.iter().map(|s| median(s)).collect();
    let peer = medians[0];
    println!(
        "{rounds} rounds of {iterations} sections, median ns per section; \
         ratio to crossbeam-epoch (goal for rcu-lite memb: <= 0.40x)"
    );
    for ((name, _), m) in contenders.iter().zip(&medians) {
        println!("{name:<46} {m:>7.3} ns  {:>5.2}x", m / peer);
    }
}
