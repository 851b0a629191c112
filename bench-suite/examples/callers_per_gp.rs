//! How many `memb::synchronize_rcu()` callers each grace period serves, and
//! what each call costs, for callers back to back with the adaptive default.
//!
//! For each `WRITERS/READERS` pair: `WRITERS` threads call
//! `memb::synchronize_rcu()` back to back for the duration while `READERS`
//! threads run empty read sections back to back. A row gives the calls, the
//! grace periods completed meanwhile (`memb::grace_periods()`) and those the
//! worker drove, the wall time per call (the writers' span, from the first
//! writer's start to the last one's end, over all calls, as `syncbench
//! rcuscale`'s per-GP time), callers per grace period, and the latency of
//! one call (mean, p50, p99, max). One JSON object per row.
//!
//! As in rcuscale, what happens once is kept out of the timed calls: every
//! thread registers (a read section) before the start line, and before the
//! first row one grace period decides the fence mode (a first
//! `membarrier` registration can take milliseconds) and the grace-period
//! worker starts (until 2026-12-06 all three fell into the first rows'
//! calls, the measurement audit found).
//!
//! `syncbench rcuscale` gives the same per-call time; this adds the grace
//! period count, which shows whether callers share grace periods or wait in
//! turn, and is how `docs/rcu-lite.md` (*Many callers*) compared two builds
//! of the engine's waiting (one run of each, alternated).
//!
//! ```sh
//! cargo run --release -p bench-suite --example callers_per_gp -- 1 1/0,16/0,16/1
//! ```
//! (seconds per row, default 1; rows, default 1/0,8/0,16/0,32/0,1/1,16/1).

use bench_suite::wait_log::WaitLog;
use rcu_lite::memb;
use std::hint::black_box;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

/// One row's measurements.
struct Row {
    writers: usize,
    readers: usize,
    /// Every call's latency, bucketed: memory that does not grow with the
    /// calls (a list of them grew by about 10 MB a second).
    latencies: WaitLog,
    /// From the first writer's start to the last one's end.
    span: Duration,
    grace_periods: u64,
    by_worker: u64,
}

fn main() {
    let mut args = std::env::args().skip(1);
    let seconds: f64 = args.next().map_or(1.0, |s| {
        s.parse()
            .ok()
            .filter(|s: &f64| s.is_finite() && *s > 0.0)
            .unwrap_or_else(|| panic!("seconds per row: a positive number, not {s:?}"))
    });
    let rows = args
        .next()
        .unwrap_or_else(|| "1/0,8/0,16/0,32/0,1/1,16/1".to_owned());
    // Once, untimed: the fence mode (and its membarrier registration) and
    // the grace-period worker that crowded callers hand over to. On a
    // thread that exits, so that this one stays unregistered, as
    // rcuscale's harness thread does.
    std::thread::spawn(|| {
        memb::synchronize_rcu();
        // A refused spawn (false) leaves the worker to start inside the
        // first crowded grace period, which the figures would then include.
        if !memb::start_grace_period_worker() {
            eprintln!("callers_per_gp: the grace-period worker did not start ahead of the run");
        }
    })
    .join()
    .expect("the set-up thread panicked");
    for pair in rows.split(',') {
        let (writers, readers) = pair
            .split_once('/')
            .and_then(|(w, r)| Some((w.parse().ok()?, r.parse().ok()?)))
            .filter(|&(w, _)| w > 0)
            .unwrap_or_else(|| panic!("a row is WRITERS/READERS, WRITERS > 0, not {pair:?}"));
        let row = measure(writers, readers, Duration::from_secs_f64(seconds));
        print_row(&row);
    }
}

fn measure(writers: usize, readers: usize, duration: Duration) -> Row {
    let stop = Arc::new(AtomicBool::new(false));
    // Every reader and writer, registered, and this thread.
    let start_line = Arc::new(Barrier::new(writers + readers + 1));
    let reader_threads: Vec<_> = (0..readers)
        .map(|_| {
            let (stop, start_line) = (Arc::clone(&stop), Arc::clone(&start_line));
            std::thread::spawn(move || {
                drop(memb::read_lock());
                start_line.wait();
                // Relaxed: a stop request, pairing with nothing; it
                // publishes no data.
                while !stop.load(Relaxed) {
                    let section = memb::read_lock();
                    black_box(&section);
                }
            })
        })
        .collect();
    let writer_threads: Vec<_> = (0..writers)
        .map(|_| {
            let start_line = Arc::clone(&start_line);
            std::thread::spawn(move || {
                let mut latencies = WaitLog::new();
                // Registers this thread, as rcuscale's writers do before
                // its gate.
                drop(memb::read_lock());
                start_line.wait();
                let start = Instant::now();
                let end = start + duration;
                loop {
                    let call = Instant::now();
                    if call >= end {
                        break;
                    }
                    memb::synchronize_rcu();
                    latencies.record(call.elapsed());
                }
                ((start, Instant::now()), latencies)
            })
        })
        .collect();
    let before = memb::grace_periods();
    start_line.wait();
    let mut latencies = WaitLog::new();
    let mut spans = Vec::with_capacity(writers);
    for writer in writer_threads {
        let (writer_span, writer_latencies) = writer.join().expect("a writer panicked");
        spans.push(writer_span);
        latencies.merge(&writer_latencies);
    }
    let span = bench_suite::start_gate::first_start_to_last_end(spans);
    let after = memb::grace_periods();
    // Relaxed: see the readers' load; join() orders their ends.
    stop.store(true, Relaxed);
    for reader in reader_threads {
        reader.join().expect("a reader panicked");
    }
    Row {
        writers,
        readers,
        latencies,
        span,
        grace_periods: after.completed - before.completed,
        by_worker: after.by_worker - before.by_worker,
    }
}

fn print_row(row: &Row) {
    let calls = row.latencies.count();
    if calls == 0 {
        println!(
            "{{\"writers\":{},\"readers\":{},\"calls\":0}}",
            row.writers, row.readers
        );
        return;
    }
    let mean = row.latencies.mean_us();
    println!(
        "{{\"writers\":{},\"readers\":{},\"calls\":{calls},\"grace_periods\":{},\"by_worker\":{},\
         \"us_per_call\":{:.3},\"callers_per_gp\":{:.2},\"latency_us\":{{\"mean\":{mean:.2},\
         \"p50\":{:.2},\"p99\":{:.2},\"max\":{:.1}}}}}",
        row.writers,
        row.readers,
        row.grace_periods,
        row.by_worker,
        row.span.as_secs_f64() * 1e6 / calls as f64,
        calls as f64 / row.grace_periods.max(1) as f64,
        row.latencies.percentile_us(50.0),
        row.latencies.percentile_us(99.0),
        row.latencies.max_us(),
    );
}
