//! A store-buffering litmus harness shared by the fence tests.
//!
//! Two threads run many rounds of
//!
//! ```text
//! A: x = 1; fence_a(); r1 = y        B: y = 1; fence_b(); r2 = x
//! ```
//!
//! started together by a two-party spin barrier, and count the rounds that end
//! with `r1 == 0 && r2 == 0`: the outcome a correct fence pair forbids.
//!
//! The barrier alone releases the two threads some hundred nanoseconds apart
//! (one sees the other's store a cache-line transfer late), longer than a
//! store waits in the store buffer: on an idle 2-vCPU guest the unfenced
//! harness then saw no reordering in 20,000 rounds. On x86-64 each round
//! therefore also starts both sides at one agreed time-stamp-counter value,
//! set before the barrier, so their stores and loads overlap.

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

struct Shared {
    x: AtomicU32,
    y: AtomicU32,
    r1: AtomicU32,
    r2: AtomicU32,
    /// The time-stamp-counter value at which both sides start this round.
    start_at: AtomicU64,
    /// How many cycles late B started this round.
    b_late: AtomicU64,
    barrier: SpinBarrier,
}

/// Cycles between setting a round's start and the start: room for the
/// barrier's release to reach the other thread (about 5 us at 4 GHz).
const START_LEAD: u64 = 20_000;

/// Whether rounds start at an agreed time-stamp-counter value (x86-64, not
/// under miri, which has no RDTSC); elsewhere at the barrier's release.
const TSC_START: bool = cfg!(all(target_arch = "x86_64", not(miri)));

/// The time-stamp counter where [`TSC_START`], else 0.
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

/// When the next round starts: [`START_LEAD`] cycles from now, or at once
/// where there is no counter to agree on.
fn next_start() -> u64 {
    if TSC_START { now_tsc() + START_LEAD } else { 0 }
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
/// cycles of the agreed value (about 0.5 us at 4 GHz): their stores and
/// loads then ran at once, as the litmus needs.
const OVERLAP_CYCLES: u64 = 2_000;

/// What a run of rounds saw.
#[derive(Clone, Copy, Debug, Default)]
pub struct Litmus {
    /// Rounds that ended with both loads 0.
    pub forbidden: usize,
    /// Rounds in which both sides started together (all of them where there
    /// is no time-stamp counter to tell): on a loaded machine one side is
    /// often descheduled, and such a round cannot show reordering.
    pub overlapped: usize,
}

/// Rounds a litmus test runs: fewer under miri, whose weak-memory emulation
/// explores the reorderings without needing many rounds to stumble on one.
pub const ROUNDS: usize = if cfg!(miri) { 200 } else { 20_000 };

/// Runs `rounds` rounds and returns how many showed the forbidden outcome,
/// and how many overlapped.
pub fn store_buffering(rounds: usize, fence_a: fn(), fence_b: fn()) -> Litmus {
    let shared = Arc::new(Shared {
        x: AtomicU32::new(0),
        y: AtomicU32::new(0),
        r1: AtomicU32::new(0),
        r2: AtomicU32::new(0),
        start_at: AtomicU64::new(0),
        b_late: AtomicU64::new(0),
        barrier: SpinBarrier {
            arrived: AtomicUsize::new(0),
            generation: AtomicUsize::new(0),
        },
    });
    let b = {
        let s = Arc::clone(&shared);
        std::thread::spawn(move || {
            for _ in 0..rounds {
                s.barrier.wait();
                // Relaxed: the barrier's Acquire made A's store visible.
                let late = start_at(s.start_at.load(Relaxed));
                s.y.store(1, Relaxed);
                fence_b();
                s.r2.store(s.x.load(Relaxed), Relaxed);
                // Relaxed: published to A by the barrier, as r2.
                s.b_late.store(late, Relaxed);
                s.barrier.wait();
                s.barrier.wait();
            }
        })
    };
    let s = &shared;
    let mut seen = Litmus::default();
    for _ in 0..rounds {
        // Relaxed: the barrier below publishes it to B.
        s.start_at.store(next_start(), Relaxed);
        s.barrier.wait();
        let late = start_at(s.start_at.load(Relaxed));
        s.x.store(1, Relaxed);
        fence_a();
        s.r1.store(s.y.load(Relaxed), Relaxed);
        s.barrier.wait();
        // The barrier's AcqRel/Acquire pair makes B's r2 visible here.
        if s.r1.load(Relaxed) == 0 && s.r2.load(Relaxed) == 0 {
            seen.forbidden += 1;
        }
        if !TSC_START || late.max(s.b_late.load(Relaxed)) <= OVERLAP_CYCLES {
            seen.overlapped += 1;
        }
        s.x.store(0, Relaxed);
        s.y.store(0, Relaxed);
        s.barrier.wait();
    }
    b.join().unwrap();
    seen
}
