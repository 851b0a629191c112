//! `hazptr_synchronize`: effective time per `synchronize` with 1..16
//! concurrent callers, the shared scan against every caller scanning alone
//! (the shared-scan series' question). One reader protects the current
//! object meanwhile, from before the clock starts. Time per iteration = wall time / total calls.
use bench_suite::start_gate::{StartGate, StopOnDrop, first_start_to_last_end};
use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use hazptr::Domain;
use std::hint::black_box;
use std::sync::atomic::Ordering::{AcqRel, Relaxed};
use std::sync::atomic::{AtomicBool, AtomicPtr};
use std::time::{Duration, Instant};

fn run(domain: &Domain, callers: usize, iters: u64) -> Duration {
    let current = AtomicPtr::new(Box::into_raw(Box::new(0u64)));
    let per_caller = iters.div_ceil(callers as u64);
    // The reader passes the start gate too, so that it is reading before
    // the clock starts, not only some time into the sample.
    let start = StartGate::new(callers + 2);
    let stop = AtomicBool::new(false);
    let elapsed = std::thread::scope(|s| {
        // Set however the scope ends: a caller's panic comes out of its
        // join below, and the reader must stop for the scope to return it.
        let _stop = StopOnDrop(&stop);
        // A spawn the OS refuses panics here: the guard then cancels the
        // gate, so that the threads already started return and the scope
        // can join them (at a `Barrier` they would wait for ever).
        let _cancel = start.cancel_on_panic();
        s.spawn(|| {
            let _cancel = start.cancel_on_panic();
            let _ = domain.guard();
            if !start.wait() {
                return;
            }
            while !stop.load(Relaxed) {
                let mut guard = domain.guard();
                // SAFETY: protected; never null.
                black_box(unsafe { *guard.protect_ptr(&current) });
            }
        });
        let callers: Vec<_> = (0..callers)
            .map(|c| {
                let (start, current) = (&start, &current);
                s.spawn(move || {
                    if !start.wait() {
                        return None;
                    }
                    let began = Instant::now();
                    for _ in 0..per_caller {
                        let old = current.swap(Box::into_raw(Box::new(c as u64)), AcqRel);
                        domain.synchronize(old);
                        // SAFETY: unpublished and synchronized.
                        drop(unsafe { Box::from_raw(old) });
                    }
                    // Its own start and end (see `first_start_to_last_end`).
                    Some((began, Instant::now()))
                })
            })
            .collect();
        // False only if the reader panicked before the start (its own
        // message is printed above the assertion's below).
        let started = start.wait();
        // Joined, not met at an end barrier: a caller that panics would
        // leave the others waiting there for ever.
        let spans: Vec<_> = callers
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
            })
            .collect();
        assert!(started, "the reader thread panicked before the start");
        first_start_to_last_end(
            spans
                .into_iter()
                .map(|span| span.expect("the gate opened for every caller")),
        )
    });
    // SAFETY: every thread is done.
    drop(unsafe { Box::from_raw(current.into_inner()) });
    elapsed.mul_f64(iters as f64 / (per_caller * callers as u64) as f64)
}

fn hazptr_synchronize(c: &mut Criterion) {
    let mut group = c.benchmark_group("hazptr_synchronize");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(2));
    for (name, shared) in [("shared", true), ("unshared", false)] {
        let domain = Domain::builder().shared_scan(shared).build();
        // The scanner thread starts here, untimed, as rcuscale's
        // `prepare_writer` starts it, rather than inside the first contended
        // call (false, starting nothing, for the unshared domain).
        assert_eq!(domain.start_scanner(), shared);
        for callers in [1, 2, 4, 8, 16] {
            group.bench_function(BenchmarkId::new(name, callers), |b| {
                b.iter_custom(|iters| run(&domain, callers, iters))
            });
        }
    }
    group.finish();
}

criterion_group!(benches, hazptr_synchronize);
criterion_main!(benches);
