//! A store-buffering litmus harness shared by the fence tests.
//!
//! Two threads run many rounds of
//!
//! ```text
//! A: x = 1; fence_a(); r1 = y        B: y = 1; fence_b(); r2 = x
//! ```
//!
//! and count the rounds that end with `r1 == 0 && r2 == 0`: the outcome a
//! correct fence pair forbids, and one that x86-64's store buffers allow
//! without fences. A round shows it only when each side's load runs while the
//! other side's store still waits to leave its store buffer. Four things put
//! rounds in that window:
//!
//! - **A store ahead that misses.** Just before its litmus store each side
//!   stores to a line it flushed from every cache (CLFLUSH) before the round.
//!   Stores leave the buffer in order, so the litmus store waits there for a
//!   memory access, a window of some hundred nanoseconds.
//! - **Where the litmus lines are.** `x` and `y` sit on lines of their own,
//!   and each round ends with A writing `y` and B writing `x`: each side's
//!   load hits a line its CPU holds, while its store must take its line from
//!   the other CPU.
//! - **One start time.** A two-party spin barrier alone releases the threads
//!   some hundred nanoseconds apart. On x86-64 each round also starts both
//!   sides at a time-stamp-counter value agreed before the barrier.
//! - **The counters' skew, measured, and a sweep around it.** The two CPUs'
//!   counters need not agree, and a skew wider than the window puts every
//!   round outside it while each side still starts "on time" by its own
//!   counter. Before the rounds, the threads exchange counter readings
//!   [`PINGS`] times; the exchange with the shortest round trip gives the
//!   skew (B's reading less the midpoint of A's two), to within half that
//!   trip, and B's start is corrected by it. Every other round also starts B
//!   up to ±2,048 cycles from A, stepping across that range, for what the
//!   estimate misses.
//!
//! Unfenced, on a 2-vCPU AMD guest (2026-12-01), 20,000 rounds saw: 12-425
//! reorderings with only the agreed start (the layout before this one; 0 of
//! 200,000 on the CI machine); 19,739-19,880 with the missing store ahead
//! added; 2,290-3,012 with the sweep on every round, which is what a skew
//! leaves; the measured skew was -28 to -2 cycles. Where there is no
//! time-stamp counter (other architectures, miri) rounds start at the
//! barrier's release, without the store ahead or the skew.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering::*};

/// A reusable two-thread barrier that spins, yielding now and then so that it
/// also makes progress when the test runner oversubscribes the cores.
struct SpinBarrier {
    arrived: AtomicUsize,
    generation: AtomicUsize,
}

impl SpinBarrier {
    fn wait(&self) {
        let generation = self.generation.load(Acquire);
        if self.arrived.fetch_add(1, AcqRel) == 1 {
            self.arrived.store(0, Relaxed);
            self.generation.fetch_add(1, Release);
            return;
        }
        let mut spins = 0u32;
        while self.generation.load(Acquire) == generation {
            spins += 1;
            if spins.is_multiple_of(128) {
                std::thread::yield_now();
            } else {
                std::hint::spin_loop();
            }
        }
    }
}

/// A value on a cache line of its own (128 bytes: adjacent-line prefetchers
/// fetch lines in pairs).
#[repr(align(128))]
struct Line<T>(T);

struct Shared {
    /// A's litmus variable; B writes it at the end of each round.
    x: Line<AtomicU32>,
    /// B's litmus variable; A writes it at the end of each round.
    y: Line<AtomicU32>,
    /// The line A stores to just before `x`, flushed before each round.
    ahead_of_x: Line<AtomicU32>,
    /// The line B stores to just before `y`, flushed before each round.
    ahead_of_y: Line<AtomicU32>,
    /// What B's load read, and how many cycles late B started.
    b_result: Line<(AtomicU32, AtomicU64)>,
    /// The counter value at which B starts this round.
    b_start: Line<AtomicU64>,
    /// The skew exchange: A's ping number, and B's reply (its counter, then
    /// the ping number it answers).
    ping: Line<AtomicU64>,
    pong: Line<(AtomicU64, AtomicU64)>,
    barrier: Line<SpinBarrier>,
}

/// Whether rounds start at an agreed time-stamp-counter value and store ahead
/// to a flushed line (x86-64, not under miri, which has neither RDTSC nor
/// CLFLUSH); elsewhere they start at the barrier's release.
const X86: bool = cfg!(all(target_arch = "x86_64", not(miri)));

/// The time-stamp counter where [`X86`], else 0.
fn now_tsc() -> u64 {
    #[cfg(all(target_arch = "x86_64", not(miri)))]
    {
        // SAFETY: RDTSC has no preconditions on x86-64.
        unsafe { std::arch::x86_64::_rdtsc() }
    }
    #[cfg(not(all(target_arch = "x86_64", not(miri))))]
    {
        0
    }
}

/// Evicts `line` from every cache where [`X86`], so that the next store to
/// it waits on memory; elsewhere does nothing.
fn flush(line: &Line<AtomicU32>) {
    #[cfg(all(target_arch = "x86_64", not(miri)))]
    // SAFETY: CLFLUSH (SSE2, part of x86-64) takes any mapped address, and
    // `line` is a live reference. It changes no value, only where it is cached.
    unsafe {
        std::arch::x86_64::_mm_clflush(std::ptr::from_ref(line).cast());
    }
    #[cfg(not(all(target_arch = "x86_64", not(miri))))]
    let _ = line;
}

/// Cycles between setting a round's start and the start: room for the
/// barrier's release to reach the other thread (about 5 us at 4 GHz).
const START_LEAD: u64 = 20_000;

/// Cycles between neighbouring start offsets of the sweep.
const SWEEP_STEP: u64 = 16;

/// Offsets each side of zero in the sweep: ±2,048 cycles in all.
const SWEEP_STEPS: u64 = 128;

/// When round `round` starts on each side, as (A's start by A's counter, B's
/// start by B's): [`START_LEAD`] cycles from now, together on even rounds; on
/// odd rounds with B's start swept across ±[`SWEEP_STEPS`] × [`SWEEP_STEP`]
/// cycles of A's. `skew` is B's counter less A's. Where there is no counter,
/// both start at once.
fn next_start(round: usize, skew: i64) -> (u64, u64) {
    if !X86 {
        return (0, 0);
    }
    let base = now_tsc() + START_LEAD;
    let (a, b) = if round.is_multiple_of(2) {
        (base, base)
    } else {
        // 37 is odd, so successive odd rounds visit all 2 × SWEEP_STEPS
        // offsets, far apart, before any repeats.
        let k = (round as u64 / 2).wrapping_mul(37) % (2 * SWEEP_STEPS);
        if k >= SWEEP_STEPS {
            (base, base + (k - SWEEP_STEPS) * SWEEP_STEP)
        } else {
            (base + (SWEEP_STEPS - k) * SWEEP_STEP, base)
        }
    };
    (a, b.wrapping_add_signed(skew))
}

/// Counter exchanges that estimate the skew.
const PINGS: u64 = 2_000;

/// Spins until `ready` holds, yielding now and then (the two threads may
/// share a CPU).
fn spin_until(ready: impl Fn() -> bool) {
    let mut spins = 0u32;
    while !ready() {
        spins += 1;
        if spins.is_multiple_of(128) {
            std::thread::yield_now();
        } else {
            std::hint::spin_loop();
        }
    }
}

/// A's side of the skew exchange: B's counter less A's, from the exchange
/// with the shortest round trip. 0 where there is no counter.
fn measure_skew(s: &Shared) -> i64 {
    if !X86 {
        return 0;
    }
    let (mut best_trip, mut skew) = (u64::MAX, 0);
    for ping in 1..=PINGS {
        let sent = now_tsc();
        // Release/Acquire: pairs with B's loads and stores in `answer_pings`.
        s.ping.0.store(ping, Release);
        spin_until(|| s.pong.0.1.load(Acquire) == ping);
        let back = now_tsc();
        let theirs = s.pong.0.0.load(Relaxed);
        if back - sent < best_trip {
            best_trip = back - sent;
            skew = theirs as i64 - (sent + (back - sent) / 2) as i64;
        }
    }
    skew
}

/// B's side of the skew exchange.
fn answer_pings(s: &Shared) {
    if !X86 {
        return;
    }
    for ping in 1..=PINGS {
        spin_until(|| s.ping.0.load(Acquire) == ping);
        s.pong.0.0.store(now_tsc(), Relaxed);
        // Release: A reads the counter after its Acquire load of this.
        s.pong.0.1.store(ping, Release);
    }
}

/// Spins until the time-stamp counter reaches `at`; returns how many cycles
/// late it got there (a thread descheduled meanwhile arrives late).
fn start_at(at: u64) -> u64 {
    loop {
        let now = now_tsc();
        if now >= at {
            return now - at;
        }
        std::hint::spin_loop();
    }
}

/// A round counts as overlapped when both sides started within this many
/// cycles of their own start times (about 0.5 us at 4 GHz): neither was
/// descheduled. That alone does not put a round in the reordering window
/// (see the sweep above).
const OVERLAP_CYCLES: u64 = 2_000;

/// What a run of rounds saw.
#[derive(Clone, Copy, Debug, Default)]
pub struct Litmus {
    /// Rounds that ended with both loads 0.
    pub forbidden: usize,
    /// Rounds in which both sides started on time (all of them where there is
    /// no time-stamp counter to tell): on a loaded machine one side is often
    /// descheduled, and such a round cannot show reordering.
    pub overlapped: usize,
    /// The measured skew: B's counter less A's, in cycles.
    pub skew: i64,
}

/// Rounds a litmus test runs: fewer under miri, whose weak-memory emulation
/// explores the reorderings without needing many rounds to stumble on one.
pub const ROUNDS: usize = if cfg!(miri) { 200 } else { 20_000 };

/// Runs `rounds` rounds and returns how many showed the forbidden outcome,
/// and how many overlapped.
pub fn store_buffering(rounds: usize, fence_a: fn(), fence_b: fn()) -> Litmus {
    let shared = Arc::new(Shared {
        x: Line(AtomicU32::new(0)),
        y: Line(AtomicU32::new(0)),
        ahead_of_x: Line(AtomicU32::new(0)),
        ahead_of_y: Line(AtomicU32::new(0)),
        b_result: Line((AtomicU32::new(0), AtomicU64::new(0))),
        b_start: Line(AtomicU64::new(0)),
        ping: Line(AtomicU64::new(0)),
        pong: Line((AtomicU64::new(0), AtomicU64::new(0))),
        barrier: Line(SpinBarrier {
            arrived: AtomicUsize::new(0),
            generation: AtomicUsize::new(0),
        }),
    });
    let b = {
        let s = Arc::clone(&shared);
        std::thread::spawn(move || {
            answer_pings(&s);
            for _ in 0..rounds {
                flush(&s.ahead_of_y);
                s.barrier.0.wait();
                // Relaxed: the barrier's Acquire made A's store visible.
                let late = start_at(s.b_start.0.load(Relaxed));
                s.ahead_of_y.0.store(1, Relaxed);
                s.y.0.store(1, Relaxed);
                fence_b();
                let r2 = s.x.0.load(Relaxed);
                // Relaxed: published to A by the barrier.
                s.b_result.0.0.store(r2, Relaxed);
                s.b_result.0.1.store(late, Relaxed);
                s.barrier.0.wait();
                // A's line, which A's next store must take back from here.
                s.x.0.store(0, Relaxed);
                s.barrier.0.wait();
            }
        })
    };
    let s = &shared;
    let mut seen = Litmus {
        skew: measure_skew(s),
        ..Litmus::default()
    };
    for round in 0..rounds {
        flush(&s.ahead_of_x);
        let (a_start, b_start) = next_start(round, seen.skew);
        // Relaxed: the barrier below publishes it to B.
        s.b_start.0.store(b_start, Relaxed);
        s.barrier.0.wait();
        let late = start_at(a_start);
        s.ahead_of_x.0.store(1, Relaxed);
        s.x.0.store(1, Relaxed);
        fence_a();
        let r1 = s.y.0.load(Relaxed);
        s.barrier.0.wait();
        // The barrier's AcqRel/Acquire pair makes B's result visible here.
        if r1 == 0 && s.b_result.0.0.load(Relaxed) == 0 {
            seen.forbidden += 1;
        }
        if !X86 || late.max(s.b_result.0.1.load(Relaxed)) <= OVERLAP_CYCLES {
            seen.overlapped += 1;
        }
        // B's line, which B's next store must take back from here.
        s.y.0.store(0, Relaxed);
        s.barrier.0.wait();
    }
    b.join().unwrap();
    seen
}
