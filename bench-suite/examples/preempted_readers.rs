//! hazptr's writers beside more reader threads than CPUs, in whichever fence
//! mode the process chose: what a reader preempted inside its acquire costs
//! the writers.
//!
//! Readers loop over four `AtomicBox`es, loading two at a time through two
//! guards (the second guard is on a nested slot, which reads the fence
//! mode); two writers store new values into them, and every 50th update of
//! each writer swaps one out and waits for its readers
//! (`Replaced::synchronize`). With more readers than CPUs, readers are
//! preempted at arbitrary points. In membarrier mode an acquire's wildcard
//! window is a few instructions long, so few are preempted inside it; in
//! SeqCst mode the window held a `fence(SeqCst)`, and every scan of the
//! domain waited for a reader preempted there until it ran again. Until
//! 2026-12-06 that cost writers 100x and more with four readers on two
//! vCPUs; SeqCst mode now validates the pointer instead of opening the
//! window (see `docs/hazptr.md`, *Acquire in SeqCst mode*).
//!
//! ```sh
//! cargo run --release -p bench-suite --example preempted_readers -- 4 2
//! SYNCPRIMS_FENCE=seqcst cargo run --release -p bench-suite --example preempted_readers -- 4 2
//! ```
//! (reader threads, seconds; defaults 4 and 2).

use hazptr::{AtomicBox, Domain};
use std::hint::black_box;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::thread;
use std::time::{Duration, Instant};

/// Each writer's updates per `synchronize`.
const SYNCHRONIZE_EVERY: u64 = 50;

fn main() {
    let mut arg = bench_suite::cli::example_numbers("preempted_readers");
    let readers = arg("readers", 4).max(1) as usize;
    let seconds = arg("seconds", 2).max(1);
    let domain = Domain::builder().build();
    let boxes: Vec<AtomicBox<'_, [u64; 4]>> =
        (0..4).map(|i| AtomicBox::new_in([i; 4], &domain)).collect();
    // Relaxed throughout: the flag only ends the loops, and the counts are
    // read once the scope has joined the threads that added to them.
    let stop = AtomicBool::new(false);
    let (reads, stores, syncs, sync_ns) = (
        AtomicU64::new(0),
        AtomicU64::new(0),
        AtomicU64::new(0),
        AtomicU64::new(0),
    );
    let began = Instant::now();
    thread::scope(|s| {
        for t in 0..readers {
            let (boxes, stop, domain, reads) = (&boxes, &stop, &domain, &reads);
            s.spawn(move || {
                let (mut first, mut second) = (domain.guard(), domain.guard());
                let mut n = 0u64;
                while !stop.load(Relaxed) {
                    let i = t + n as usize;
                    let a = boxes[i % 4].load(&mut first);
                    let b = boxes[(i + 1) % 4].load(&mut second);
                    black_box((a, b));
                    n += 1;
                }
                reads.fetch_add(n, Relaxed);
            });
        }
        for w in 0..2u64 {
            let (boxes, stop) = (&boxes, &stop);
            let (stores, syncs, sync_ns) = (&stores, &syncs, &sync_ns);
            s.spawn(move || {
                let mut n = 0u64;
                while !stop.load(Relaxed) {
                    n += 1;
                    let target = &boxes[((n + w) % 4) as usize];
                    if n.is_multiple_of(SYNCHRONIZE_EVERY) {
                        let began = Instant::now();
                        if let Some(old) = target.swap(Some(Box::new([n; 4]))) {
                            drop(old.synchronize());
                        }
                        sync_ns.fetch_add(began.elapsed().as_nanos() as u64, Relaxed);
                        syncs.fetch_add(1, Relaxed);
                    } else {
                        target.store(Some(Box::new([n; 4])));
                        stores.fetch_add(1, Relaxed);
                    }
                }
            });
        }
        thread::sleep(Duration::from_secs(seconds));
        stop.store(true, Relaxed);
    });
    // Rates over the run as measured: the threads stop after the sleep.
    let elapsed = began.elapsed().as_secs_f64();
    let per_s = |n: &AtomicU64| n.load(Relaxed) as f64 / elapsed;
    let syncs_done = syncs.load(Relaxed);
    println!(
        "fence mode {}, {readers} readers, 2 writers, {elapsed:.2} s on {} CPUs: {:.0} updates/s, \
         swap + synchronize mean {:.1} us over {syncs_done}, {:.3e} reads/s",
        membarrier_sim::fence::mode(),
        thread::available_parallelism().map_or(1, |n| n.get()),
        per_s(&stores) + per_s(&syncs),
        sync_ns.load(Relaxed) as f64 / syncs_done.max(1) as f64 / 1000.0,
        per_s(&reads),
    );
}
