//! What a short-lived thread's first guard costs while many other threads
//! hold registrations in the same hazptr domain: the thread churn of a
//! server that spawns a thread per task.
//!
//! `live` threads take a guard (which gives each a slot block of its own)
//! and stay, parked on a barrier. Then `churn` threads, one after the other,
//! are spawned, take one guard and exit: each registers, walking the
//! domain's block list for a free block (the one the previous short thread
//! gave back), and deregisters. As many bare threads (spawn and join, no
//! guard), alternated with them, give the cost of the thread itself. The
//! line gives the mean wall time per thread of each kind; their difference
//! is what registering and deregistering cost (within the noise of thread
//! creation, some microseconds here).
//!
//! Until 2026-12-05 the walk went on to the end of the list after claiming
//! a free block; it now stops there.
//!
//! ```sh
//! cargo run --release -p bench-suite --example registration_churn -- 8000 3000
//! ```
//! (live threads, short-lived threads; defaults 1000 and 2000).

use std::sync::{Arc, Barrier};
use std::thread;
use std::time::{Duration, Instant};

fn main() {
    let mut arg = bench_suite::cli::example_numbers("registration_churn");
    let live = arg("live", 1000) as usize;
    let churn = arg("churn", 2000).max(1) as u32;
    // Leaked: the parked threads borrow it for the whole run.
    let domain: &'static hazptr::Domain = Box::leak(Box::new(hazptr::Domain::new()));
    let registered = Arc::new(Barrier::new(live + 1));
    let release = Arc::new(Barrier::new(live + 1));
    let parked: Vec<_> = (0..live)
        .map(|_| {
            let (registered, release) = (Arc::clone(&registered), Arc::clone(&release));
            thread::spawn(move || {
                drop(domain.guard());
                registered.wait();
                release.wait();
            })
        })
        .collect();
    registered.wait();
    // Alternated, so that the machine's drift falls on both alike.
    let (mut with_guard, mut bare) = (Duration::ZERO, Duration::ZERO);
    for _ in 0..churn {
        with_guard += spawn_and_join(move || drop(domain.guard()));
        bare += spawn_and_join(|| ());
    }
    let (with_guard, bare) = (with_guard / churn, bare / churn);
    println!(
        "{live} live registered threads: a short-lived thread with one guard {:.1} us, a bare one \
         {:.1} us (registering and deregistering: {:.1} us)",
        with_guard.as_secs_f64() * 1e6,
        bare.as_secs_f64() * 1e6,
        (with_guard.as_secs_f64() - bare.as_secs_f64()) * 1e6
    );
    release.wait();
    for thread in parked {
        thread.join().expect("a parked thread panicked");
    }
}

/// Wall time to spawn a thread that runs `body` and to join it.
fn spawn_and_join(body: impl FnOnce() + Send + 'static) -> Duration {
    let began = Instant::now();
    thread::spawn(body)
        .join()
        .expect("a short-lived thread panicked");
    began.elapsed()
}
