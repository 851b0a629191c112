//! How long `rcu_lite::fork::before_fork()` waits while the `call_rcu`
//! worker is busy: what a program that forks pays for callbacks in flight.
//!
//! Producer threads each queue a memb callback, sleep 20 us, and go again;
//! each callback sleeps for the given time (0: returns at once). The main
//! thread calls `before_fork()` then `after_fork_parent()` (no fork: the
//! hooks are what is timed) every 5 ms for 3 s, and prints the median, the
//! 99th percentile and the maximum of the `before_fork()` calls.
//!
//! ```sh
//! cargo run --release -p bench-suite --example fork_wait -- 1 200
//! ```
//! (producer threads, microseconds each callback sleeps; defaults 1 and 0).
//! With callbacks slower than they are queued, the worker never catches up:
//! `before_fork()` waits for the callback running, not for that backlog
//! (see docs/rcu-lite.md, *`fork()` needs the hooks*).

use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::time::{Duration, Instant};

static STOP: AtomicBool = AtomicBool::new(false);

fn arg(n: usize, default: u64) -> u64 {
    std::env::args().nth(n).map_or(default, |s| {
        s.parse().unwrap_or_else(|_| {
            eprintln!("usage: fork_wait [PRODUCERS] [CALLBACK_SLEEP_US]: {s:?} is not a number");
            std::process::exit(2)
        })
    })
}

fn main() {
    let producers = arg(1, 1);
    let callback_us = arg(2, 0);
    let threads: Vec<_> = (0..producers)
        .map(|_| {
            std::thread::spawn(move || {
                while !STOP.load(Relaxed) {
                    rcu_lite::memb::call_rcu(move || {
                        if callback_us > 0 {
                            std::thread::sleep(Duration::from_micros(callback_us));
                        }
                    });
                    std::thread::sleep(Duration::from_micros(20));
                }
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(200));
    let mut waits = Vec::new();
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(3) {
        let t = Instant::now();
        rcu_lite::fork::before_fork();
        waits.push(t.elapsed());
        rcu_lite::fork::after_fork_parent();
        std::thread::sleep(Duration::from_millis(5));
    }
    STOP.store(true, Relaxed);
    for thread in threads {
        thread.join().expect("a producer thread panicked");
    }
    waits.sort();
    let n = waits.len();
    println!(
        "{producers} producer(s), callbacks of {callback_us} us: {n} before_fork() calls, p50 \
         {:?}, p99 {:?}, max {:?}; {} callbacks still pending",
        waits[n / 2],
        waits[n * 99 / 100],
        waits[n - 1],
        rcu_lite::memb::callbacks_pending()
    );
}
