//! `hazptr_synchronize`: effective time per `synchronize` with 1..16
//! concurrent callers, the shared scan against every caller scanning alone
//! (the shared-scan series' question). One reader protects the current
//! object meanwhile, from before the clock starts. Time per iteration = wall time / total calls.
use bench_suite::start_gate::StopOnDrop;
use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use hazptr::Domain;
use std::hint::black_box;
use std::sync::Barrier;
use std::sync::atomic::Ordering::{AcqRel, Relaxed};
use std::sync::atomic::{AtomicBool, AtomicPtr};
use std::time::{Duration, Instant};

fn run(domain: &Domain, callers: usize, iters: u64) -> Duration {
    let current = AtomicPtr::new(Box::into_raw(Box::new(0u64)));
    let per_caller = iters.div_ceil(callers as u64);
    // The reader passes the start barrier too, so that it is reading before
    // the clock starts, not only some time into the sample.
    let start = Barrier::new(callers + 2);
    let stop = AtomicBool::new(false);
    let elapsed = std::thread::scope(|s| {
        // Set however the scope ends: a caller's panic comes out of its
        // join below, and the reader must stop for the scope to return it.
        let _stop = StopOnDrop(&stop);
        s.spawn(|| {
            let _ = domain.guard();
            start.wait();
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
                    start.wait();
                    let began = Instant::now();
                    for _ in 0..per_caller {
                        let old = current.swap(Box::into_raw(Box::new(c as u64)), AcqRel);
                        domain.synchronize(old);
                        // SAFETY: unpublished and synchronized.
                        drop(unsafe { Box::from_raw(old) });
                    }
                    // The caller's own start and end: the sample runs from
                    // the first start to the last end, as the callers saw
                    // them (this thread may get a CPU well after they began).
                    (began, Instant::now())
                })
            })
            .collect();
        start.wait();
        // Joined, not met at an end barrier: a caller that panics would
        // leave the others waiting there for ever.
        callers
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
            })
            .reduce(|(b0, e0), (b1, e1)| (b0.min(b1), e0.max(e1)))
            .map(|(began, ended)| ended.saturating_duration_since(began))
            .expect("at least one caller")
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
