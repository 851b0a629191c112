//! What the two costs under every concurrent `synchronize` cost on this
//! machine: the heavy fence (`membarrier()`), with the other CPUs idle and
//! with each running a thread of this process, and one futex sleep and
//! wake-up.
//!
//! - `heavy`: `membarrier_sim::fence::heavy()` back to back on one thread,
//!   first with nothing else running, then with 1, 2, ... spinning threads of
//!   this process (up to one per other CPU). `MEMBARRIER_CMD_PRIVATE_EXPEDITED`
//!   interrupts only the CPUs that run a thread of the caller's process, and
//!   waits until each has run the barrier, so its cost is that of an IPI round
//!   trip per busy CPU. One lone `synchronize` caller (hazptr's scan, an
//!   rcu-lite grace period) meets the idle case; two or more callers, or a
//!   caller and a reader thread, meet the busy one.
//! - `hand-off`: tokens passed around a ring of threads; a thread without a
//!   token sleeps in a futex wait (`std::thread::park`) until the previous
//!   one hands it one and wakes it (`unpark`). Each hand-off is one wake-up
//!   and one switch into the woken thread: the least a `synchronize` caller
//!   that sleeps while it waits pays. With one token every wake-up lands on
//!   an idle CPU; with at least as many tokens as CPUs the CPUs stay busy, as
//!   they do with many callers, and woken threads queue behind running ones.
//!   Each row gives the wall time per hand-off and the process's CPU time
//!   per hand-off (`CLOCK_PROCESS_CPUTIME_ID`).
//!
//! ```sh
//! cargo run --release -p bench-suite --example contention_floor -- 20000 16
//! ```
//! (fence samples per row, threads in the ring; defaults 20000 and 16).

use bench_suite::machine::{FenceLatency, heavy_fence_us};
use std::sync::atomic::Ordering::{Acquire, Relaxed, Release};
use std::sync::atomic::{AtomicBool, AtomicUsize};
use std::sync::{Arc, Barrier, OnceLock};
use std::thread;
use std::time::{Duration, Instant};

fn main() {
    let mut arg = bench_suite::cli::example_numbers("contention_floor");
    let samples = arg("samples", 20_000).max(1) as usize;
    let ring = arg("ring-threads", 16).max(2) as usize;
    let cpus = thread::available_parallelism().map_or(1, |n| n.get());

    println!(
        "heavy fence ({}), {samples} calls per row, us:",
        membarrier_sim::fence::mode().name()
    );
    for busy in 0..cpus {
        let FenceLatency { p50, p99, mean } = match heavy_fence_us(busy, samples) {
            Ok(latency) => latency,
            Err(refused) => {
                eprintln!("contention_floor: cannot start {busy} spinning thread(s): {refused}");
                std::process::exit(1);
            }
        };
        println!(
            "  {busy} other CPU(s) running a spinning thread of this process: \
             p50 {p50:.2} p99 {p99:.2} mean {mean:.2}"
        );
    }

    let mut token_counts: Vec<usize> = [1, cpus, 2 * cpus, 4 * cpus, 8 * cpus]
        .iter()
        .map(|&t| t.min(ring / 2))
        .collect();
    token_counts.dedup();
    for tokens in token_counts {
        let (wall, cpu) = ring_hand_off(ring, tokens, Duration::from_secs(1));
        println!(
            "futex hand-off, {tokens} token(s) around a ring of {ring} threads on {cpus} CPU(s): \
             {wall:.2} us per hand-off, {cpu:.2} us of CPU time per hand-off"
        );
    }
}

/// Passes `tokens` tokens around a ring of `threads` threads for `duration`
/// (a thread without a token sleeps until the previous one hands it one);
/// returns the wall and CPU microseconds per hand-off.
fn ring_hand_off(threads: usize, tokens: usize, duration: Duration) -> (f64, f64) {
    // Tokens each member holds; a member sleeps while it holds none.
    let held: Arc<Vec<AtomicUsize>> = Arc::new(
        (0..threads)
            .map(|i| AtomicUsize::new(usize::from(i * tokens % threads < tokens)))
            .collect(),
    );
    let stop = Arc::new(AtomicBool::new(false));
    let hand_offs = Arc::new(AtomicUsize::new(0));
    // Every member's handle, set once all are spawned; the barrier lets the
    // members start only then.
    let ring: Arc<OnceLock<Vec<thread::Thread>>> = Arc::new(OnceLock::new());
    let start_line = Arc::new(Barrier::new(threads + 1));
    let members: Vec<_> = (0..threads)
        .map(|me| {
            let (held, stop, hand_offs) =
                (Arc::clone(&held), Arc::clone(&stop), Arc::clone(&hand_offs));
            let (ring, start_line) = (Arc::clone(&ring), Arc::clone(&start_line));
            thread::spawn(move || {
                start_line.wait();
                let ring = ring.get().expect("set before the barrier");
                let next = (me + 1) % ring.len();
                loop {
                    // Relaxed: a stop flag; the unparks after it wake everyone.
                    if stop.load(Relaxed) {
                        return;
                    }
                    // Acquire pairs with the Release add of the previous
                    // member (only the token itself is passed).
                    if held[me].load(Acquire) == 0 {
                        thread::park();
                        continue;
                    }
                    held[me].fetch_sub(1, Relaxed);
                    // Relaxed: a count read after the run.
                    hand_offs.fetch_add(1, Relaxed);
                    held[next].fetch_add(1, Release);
                    ring[next].unpark();
                }
            })
        })
        .collect();
    let handles = ring.get_or_init(|| members.iter().map(|m| m.thread().clone()).collect());
    start_line.wait();
    let (start, cpu_start) = (Instant::now(), process_cpu_seconds());
    thread::sleep(duration);
    let passed = hand_offs.load(Relaxed).max(1) as f64;
    let (elapsed, cpu) = (start.elapsed(), process_cpu_seconds() - cpu_start);
    stop.store(true, Relaxed);
    handles.iter().for_each(thread::Thread::unpark);
    members
        .into_iter()
        .for_each(|m| m.join().expect("ring member"));
    (elapsed.as_secs_f64() * 1e6 / passed, cpu * 1e6 / passed)
}

/// User plus system CPU time of the whole process so far, in seconds
/// (`CLOCK_PROCESS_CPUTIME_ID`: no /proc needed, and nanoseconds where
/// `/proc/self/stat` gave clock ticks; reading that file panicked where
/// /proc is not mounted, until 2026-12-07).
fn process_cpu_seconds() -> f64 {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `now` is a valid timespec for the call to fill in.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut now) };
    assert_eq!(rc, 0, "clock_gettime(CLOCK_PROCESS_CPUTIME_ID)");
    now.tv_sec as f64 + now.tv_nsec as f64 / 1e9
}
