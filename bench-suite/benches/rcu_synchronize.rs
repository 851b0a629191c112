//! Criterion group `rcu_synchronize`: how long does one writer wait for a
//! grace period, with no reader and with one reader thread running sections
//! back to back?
//!
//! rcu-lite (quick QS on and off) against liburcu's memb flavor and
//! crossbeam-epoch, through the same `GracePeriod` implementations
//! `syncbench rcuscale` runs. The reader thread starts before the timed region
//! and runs until the benchmark ends.
//!
//! `readers=0` is not a like-for-like comparison for `liburcu-memb`: with no
//! registered reader, liburcu's `synchronize_rcu()` skips its fence and its
//! scan, while rcu-lite's caller is itself registered and pays the heavy
//! fence (`docs/measuring.md`, *rcuscale: waiting for readers*). Compare the flavors at
//! `readers=1`; `readers=0` shows each one's cost with nobody to wait for.
//!
//! `cargo bench -p bench-suite --bench rcu_synchronize -- --quick`

use bench_suite::rcuscale::{self, GracePeriod, Options};
use bench_suite::registry;
use bench_suite::start_gate::{StartGate, StopOnDrop};
use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

const CONTENDERS: [&str; 4] = [
    "rcu-lite",
    "rcu-lite-noqs",
    "liburcu-memb",
    "crossbeam-epoch",
];

fn rcu_synchronize(c: &mut Criterion) {
    let mut group = c.benchmark_group("rcu_synchronize");
    group.measurement_time(Duration::from_secs(2));
    for name in CONTENDERS {
        let imp = registry::find(rcuscale::implementations(), name).expect("registered");
        if let Err(why) = imp.availability() {
            eprintln!("rcu_synchronize: skipping {name}: {why}");
            continue;
        }
        let primitive: Box<dyn GracePeriod> = imp.build(&Options::default());
        for readers in [0usize, 1] {
            let stop = AtomicBool::new(false);
            let ready = StartGate::new(readers + 1);
            primitive.prepare_writer();
            std::thread::scope(|s| {
                // Set however the scope ends: a wait that panics inside the
                // benchmark must not leave the readers reading for ever.
                let _stop = StopOnDrop(&stop);
                for _ in 0..readers {
                    s.spawn(|| primitive.read_until(&ready, &stop));
                }
                // Every reader registered and reading before the first wait.
                assert!(ready.wait(), "nothing calls this gate off");
                group.bench_function(BenchmarkId::new(name, format!("readers={readers}")), |b| {
                    b.iter_custom(|iters| {
                        let start = Instant::now();
                        for _ in 0..iters {
                            primitive.update_and_wait(0);
                        }
                        start.elapsed()
                    });
                });
            });
        }
    }
    group.finish();
}

criterion_group!(benches, rcu_synchronize);
criterion_main!(benches);
