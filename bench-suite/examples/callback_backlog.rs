//! How far writers that replace through `Rcu::replace` (each old value freed
//! by a `call_rcu` callback) outrun rcu-lite's one callback thread, and what
//! bounding the queue with `callbacks_pending()` costs them.
//!
//! Two writers replace a 64-byte value back to back while four readers read
//! it (memb sections), as `syncbench torture --deferred-only` runs them. A
//! run is either *unbounded* (`replace` alone, the default way) or *bounded
//! at N*: a writer that sees `memb::callbacks_pending() > N` after a replace
//! calls `memb::rcu_barrier()`, which returns once everything queued before
//! it has been freed. Each run prints replacements per second and the most
//! callbacks pending that the writers saw (one queued callback holds one old
//! value).
//!
//! A fourth setting, *polled*, frees without callbacks: each writer replaces
//! through `Rcu::replace_polled`, keeps the `Retired` old values in order,
//! and drops those whose cookie has elapsed after each replace. Its queue
//! holds only what `start_poll_synchronize_rcu()` queues to get grace
//! periods driven; it also prints the most old values one writer held.
//!
//! ```sh
//! cargo run --release -p bench-suite --example callback_backlog -- 2000 3
//! ```
//! (milliseconds per run, runs per setting; defaults 2000 and 3). The
//! settings take turns run by run: unbounded, bounded at 10,000, at 1,000,
//! polled.
//!
//! Waiting until the queue is half drained instead (`synchronize_rcu()` or
//! `yield_now()` in a loop on `callbacks_pending()`) did no better on the
//! 2-vCPU VM: on oversubscribed CPUs the cost is the callback thread's share
//! of them and the scheduling delay of each wake-up, not the barrier.

use bench_suite::stats::median;
use rcu_lite::{Memb, Rcu, Retired, memb};
use std::collections::VecDeque;
use std::hint::black_box;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::thread;
use std::time::{Duration, Instant};

const READERS: usize = 4;
const WRITERS: usize = 2;

/// How the writers free what they replace.
#[derive(Clone, Copy)]
enum Setting {
    /// `replace`: a callback per old value.
    Unbounded,
    /// `replace`, and `rcu_barrier()` once more than this many callbacks
    /// are pending.
    Bounded(usize),
    /// `replace_polled`, each writer dropping its old values once their
    /// cookies elapse.
    Polled,
}

/// One run: replacements per second, the most callbacks pending seen, and
/// the most old values one writer held (polled only).
fn run(setting: Setting, duration: Duration) -> (f64, usize, usize) {
    let cell = Arc::new(Rcu::<[u64; 8]>::new([0; 8]));
    let stop = Arc::new(AtomicBool::new(false));
    let readers: Vec<_> = (0..READERS)
        .map(|_| {
            let (cell, stop) = (Arc::clone(&cell), Arc::clone(&stop));
            thread::spawn(move || {
                // Relaxed: a stop flag only; `join` orders everything else.
                while !stop.load(Relaxed) {
                    for _ in 0..1024 {
                        let guard = memb::read_lock();
                        black_box(cell.read(&guard)[0]);
                    }
                }
            })
        })
        .collect();
    let start = Instant::now();
    let writers: Vec<_> = (0..WRITERS)
        .map(|w| {
            let cell = Arc::clone(&cell);
            thread::spawn(move || {
                let (mut replaced, mut most) = (0u64, 0usize);
                let mut held: VecDeque<Retired<[u64; 8], Memb>> = VecDeque::new();
                let mut most_held = 0;
                while start.elapsed() < duration {
                    for _ in 0..64 {
                        replaced += 1;
                        let new = [replaced ^ w as u64; 8];
                        if let Setting::Polled = setting {
                            held.push_back(cell.replace_polled(new));
                            most_held = most_held.max(held.len());
                            // Cookies elapse in order: the oldest first.
                            while held.front().is_some_and(Retired::is_ready) {
                                drop(held.pop_front());
                            }
                        } else {
                            cell.replace(new);
                        }
                        let pending = memb::callbacks_pending();
                        most = most.max(pending);
                        if let Setting::Bounded(bound) = setting
                            && pending > bound
                        {
                            memb::rcu_barrier();
                        }
                    }
                }
                // The rate's span ends here, before the polled setting's
                // wait for its last cookies, which the others do not pay.
                let end = Instant::now();
                // Waits for the last cookies, and frees.
                for old in held {
                    black_box(old.into_inner());
                }
                (replaced, most, most_held, end)
            })
        })
        .collect();
    let (mut replaced, mut most, mut most_held, mut last_end) = (0, 0, 0, start);
    for w in writers {
        let (r, m, h, end) = w.join().expect("writer");
        replaced += r;
        most = most.max(m);
        most_held = most_held.max(h);
        last_end = last_end.max(end);
    }
    let elapsed = (last_end - start).as_secs_f64();
    // Relaxed: pairs with nothing; the readers only need to see it soon.
    stop.store(true, Relaxed);
    for r in readers {
        r.join().expect("reader");
    }
    // The next run starts with an empty queue.
    memb::rcu_barrier();
    (replaced as f64 / elapsed, most, most_held)
}

fn main() {
    let mut arg = bench_suite::cli::example_numbers("callback_backlog");
    let duration = Duration::from_millis(arg("run-ms", 2000).max(1));
    let runs = arg("runs", 3).max(1);
    let settings = [
        Setting::Unbounded,
        Setting::Bounded(10_000),
        Setting::Bounded(1_000),
        Setting::Polled,
    ];
    let mut results: Vec<Vec<(f64, usize, usize)>> = vec![Vec::new(); settings.len()];
    for _ in 0..runs {
        for (setting, out) in settings.iter().zip(&mut results) {
            out.push(run(*setting, duration));
        }
    }
    println!(
        "{WRITERS} writers, {READERS} memb readers, {runs} runs of {} ms per setting, medians [range]:",
        duration.as_millis()
    );
    for (setting, out) in settings.iter().zip(&results) {
        let rate: Vec<f64> = out.iter().map(|r| r.0 / 1e6).collect();
        let most: Vec<f64> = out.iter().map(|r| r.1 as f64).collect();
        let name = match setting {
            Setting::Unbounded => "unbounded".to_owned(),
            Setting::Bounded(bound) => format!("bounded at {bound}"),
            Setting::Polled => "polled".to_owned(),
        };
        let (rate_lo, rate_hi) = range(&rate);
        let (most_lo, most_hi) = range(&most);
        let held = match setting {
            Setting::Polled => {
                let held: Vec<f64> = out.iter().map(|r| r.2 as f64).collect();
                let (lo, hi) = range(&held);
                format!(
                    ", most held by a writer {:.0} [{lo:.0}-{hi:.0}]",
                    median(&held)
                )
            }
            _ => String::new(),
        };
        println!(
            "  {name:<18} {:.2} M replacements/s [{rate_lo:.2}-{rate_hi:.2}], most pending {:.0} [{most_lo:.0}-{most_hi:.0}]{held}",
            median(&rate),
            median(&most),
        );
    }
}

fn range(values: &[f64]) -> (f64, f64) {
    let lo = values.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    (lo, hi)
}
