//! How long the fork hooks' `before_fork()` waits while the primitives are
//! busy: what a program that forks pays for work in flight.
//!
//! - `rcu-lite PRODUCERS CALLBACK_US`: producer threads each queue a memb
//!   callback, sleep 20 us, and go again; each callback sleeps
//!   `CALLBACK_US` (0: returns at once). Times `rcu_lite::fork::before_fork()`.
//! - `liburcu-memb PRODUCERS CALLBACK_US`: the same load on liburcu's memb
//!   `call_rcu()` (producers registered), timing its
//!   `urcu_memb_call_rcu_before_fork()`, which waits for liburcu's call_rcu
//!   thread to pause between batches: the peer of the first. Needs liburcu
//!   (`apt-get install -y liburcu-dev`).
//! - `hazptr CALLERS [reader]`: caller threads call `hazptr::synchronize` on
//!   one address back to back (the global domain, shared scan), beside a
//!   thread that protects and releases that address in a loop if `reader` is
//!   given. Times `hazptr::fork::before_fork()`.
//!
//! The main thread calls `before_fork()` then `after_fork_parent()` (no fork:
//! the hooks are what is timed) every 5 ms for 3 s, and prints the median,
//! the 99th percentile and the maximum of the `before_fork()` calls.
//!
//! ```sh
//! cargo run --release -p bench-suite --example fork_wait -- rcu-lite 1 200
//! cargo run --release -p bench-suite --example fork_wait -- liburcu-memb 1 200
//! cargo run --release -p bench-suite --example fork_wait -- hazptr 16
//! ```
//! (see docs/rcu-lite.md, *`fork()` needs the hooks*, and docs/hazptr.md,
//! *Limits*: before 2026-12-06 both waited for the workers to run dry,
//! seconds in these runs).

use std::sync::atomic::{AtomicBool, AtomicPtr, Ordering::Relaxed};
use std::time::{Duration, Instant};

static STOP: AtomicBool = AtomicBool::new(false);

fn usage(why: &str) -> ! {
    eprintln!(
        "usage: fork_wait rcu-lite|liburcu-memb [PRODUCERS] [CALLBACK_US] | fork_wait hazptr \
         [CALLERS] [reader]: {why}"
    );
    std::process::exit(2)
}

fn number(arg: Option<String>, default: u64) -> u64 {
    arg.map_or(default, |s| {
        s.parse()
            .unwrap_or_else(|_| usage(&format!("{s:?} is not a number")))
    })
}

/// Times the hooks every 5 ms for 3 s while `threads` run; stops them.
fn time_the_hooks(
    before: fn(),
    after: fn(),
    threads: Vec<std::thread::JoinHandle<()>>,
) -> Vec<Duration> {
    std::thread::sleep(Duration::from_millis(200));
    let mut waits = Vec::new();
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(3) {
        let t = Instant::now();
        before();
        waits.push(t.elapsed());
        after();
        std::thread::sleep(Duration::from_millis(5));
    }
    STOP.store(true, Relaxed);
    for thread in threads {
        thread.join().expect("a load thread panicked");
    }
    waits.sort();
    waits
}

fn main() {
    let mut args = std::env::args().skip(1);
    let (what, waits) = match args.next().as_deref() {
        Some("rcu-lite") => {
            let producers = number(args.next(), 1);
            let callback_us = number(args.next(), 0);
            let threads = (0..producers)
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
            let waits = time_the_hooks(
                rcu_lite::fork::before_fork,
                rcu_lite::fork::after_fork_parent,
                threads,
            );
            let what = format!(
                "rcu-lite, {producers} producer(s), callbacks of {callback_us} us ({} still \
                 pending)",
                rcu_lite::memb::callbacks_pending()
            );
            (what, waits)
        }
        Some("liburcu-memb") => liburcu_memb(args),
        Some("hazptr") => {
            let callers = number(args.next(), 16);
            let reader = match args.next().as_deref() {
                None => false,
                Some("reader") => true,
                Some(other) => usage(&format!("{other:?} is not `reader`")),
            };
            let object: &'static AtomicPtr<u64> =
                Box::leak(Box::new(AtomicPtr::new(Box::into_raw(Box::new(7)))));
            let addr = object.load(Relaxed) as usize;
            let mut threads: Vec<_> = (0..callers)
                .map(|_| {
                    std::thread::spawn(move || {
                        while !STOP.load(Relaxed) {
                            // Bench only: a synchronize of an address never
                            // unpublished, to keep scans running; a program
                            // synchronizes after it unpublishes.
                            hazptr::synchronize(addr as *const u64);
                        }
                    })
                })
                .collect();
            if reader {
                threads.push(std::thread::spawn(move || {
                    let mut guard = hazptr::Guard::new();
                    while !STOP.load(Relaxed) {
                        std::hint::black_box(guard.protect_ptr(object));
                        guard.reset();
                    }
                }));
            }
            let waits = time_the_hooks(
                hazptr::fork::before_fork,
                hazptr::fork::after_fork_parent,
                threads,
            );
            let what = format!(
                "hazptr, {callers} synchronize caller(s){}",
                if reader { " and a reader" } else { "" }
            );
            (what, waits)
        }
        _ => usage("name rcu-lite, liburcu-memb or hazptr"),
    };
    let n = waits.len();
    println!(
        "{what}: {n} before_fork() calls, p50 {:?}, p99 {:?}, max {:?}",
        waits[n / 2],
        waits[n * 99 / 100],
        waits[n - 1]
    );
}

/// The `liburcu-memb` load and hook (see the module docs).
#[cfg(syncbench_liburcu)]
fn liburcu_memb(mut args: impl Iterator<Item = String>) -> (String, Vec<Duration>) {
    use bench_suite::liburcu::{MembReader, memb_call_rcu_before_fork};
    let producers = number(args.next(), 1);
    let callback_us = number(args.next(), 0);
    let threads = (0..producers)
        .map(|_| {
            std::thread::spawn(move || {
                MembReader::with(|reader| {
                    while !STOP.load(Relaxed) {
                        reader.call_rcu_sleeping(callback_us);
                        std::thread::sleep(Duration::from_micros(20));
                    }
                });
            })
        })
        .collect();
    thread_local! {
        static HELD: std::cell::RefCell<Option<bench_suite::liburcu::MembCallRcuForkHeld>> =
            const { std::cell::RefCell::new(None) };
    }
    let waits = time_the_hooks(
        || HELD.with(|held| *held.borrow_mut() = Some(memb_call_rcu_before_fork())),
        || HELD.with(|held| drop(held.borrow_mut().take())),
        threads,
    );
    (
        format!("liburcu-memb, {producers} producer(s), callbacks of {callback_us} us"),
        waits,
    )
}

/// Without liburcu linked: says so.
#[cfg(not(syncbench_liburcu))]
fn liburcu_memb(_: impl Iterator<Item = String>) -> (String, Vec<Duration>) {
    usage(&format!(
        "liburcu is not linked: {}",
        bench_suite::liburcu::unavailable()
    ))
}
