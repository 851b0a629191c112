//! Criterion group `rcu_synchronize`: how long does one writer wait for a
//! grace period, with no reader and with one reader thread running sections
//! back to back?
//!
//! rcu-lite's two flavors against liburcu's and crossbeam-epoch, through the
//! same `GracePeriod` implementations `syncbench rcuscale` runs, each in its
//! default pacing (rcu-lite: adaptive FQS). The qsbr readers announce a
//! quiescent state every 64 sections, as in rcuscale. The reader thread starts before
//! the timed region and runs until the benchmark ends.
//!
//! Quick QS on and off (`rcu-lite`, `rcu-lite-noqs`) are compared at the
//! kernel's fixed 3 ms FQS interval with no reader and one idle registered
//! thread, the seed's idle system (`.../fqs=3ms/readers=0/idle=1`): about
//! one interval a wait against two. (With no other registered thread, the
//! kernel's one-CPU system, quick QS would leave no FQS wait at all.) Under
//! adaptive FQS the driver's wait for holdouts is its quiescent state and
//! begins at once, so the switch changes nothing measurable there
//! (`docs/rcu-lite.md`, *Measuring it*).
//!
//! `readers=0` is not a like-for-like comparison for liburcu: with no
//! registered reader, liburcu's `synchronize_rcu()` skips its fence and its
//! scan, while rcu-lite's memb caller is itself registered and pays the heavy
//! fence (`docs/measuring.md`, *rcuscale: waiting for readers*). Compare the flavors at
//! `readers=1`; `readers=0` shows each one's cost with nobody to wait for.
//!
//! `cargo bench -p bench-suite --bench rcu_synchronize -- --quick`

use bench_suite::rcuscale::{self, GracePeriod, IdleGate, Options};
use bench_suite::registry;
use bench_suite::start_gate::{StartGate, StopOnDrop};
use criterion::measurement::WallTime;
use criterion::{BenchmarkGroup, BenchmarkId, Criterion, criterion_group, criterion_main};
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

/// The contenders in their default pacing, with no reader and with one.
const CONTENDERS: [&str; 5] = [
    "rcu-lite",
    "liburcu-memb",
    "rcu-lite-qsbr",
    "liburcu-qsbr",
    "crossbeam-epoch",
];

/// The quick-QS pair at the kernel's FQS interval, with no reader.
const QUICK_QS_PAIR: [&str; 2] = ["rcu-lite", "rcu-lite-noqs"];

fn rcu_synchronize(c: &mut Criterion) {
    let mut group = c.benchmark_group("rcu_synchronize");
    group.measurement_time(Duration::from_secs(2));
    for name in CONTENDERS {
        bench_waits(&mut group, name, "", &Options::default(), &[0, 1], 0);
    }
    let kernel_pacing = Options {
        fqs_interval: Some(rcu_lite::Fqs::KERNEL_INTERVAL),
    };
    for name in QUICK_QS_PAIR {
        bench_waits(&mut group, name, "fqs=3ms/", &kernel_pacing, &[0], 1);
    }
    group.finish();
}

/// One contender's `update_and_wait` with each count of reader threads
/// running sections back to back, beside `idle` registered idle threads
/// (`GracePeriod::idle_until`); `pacing` prefixes the benchmark's
/// parameter.
fn bench_waits(
    group: &mut BenchmarkGroup<'_, WallTime>,
    name: &str,
    pacing: &str,
    options: &Options,
    reader_counts: &[usize],
    idle: usize,
) {
    let imp = registry::find(rcuscale::implementations(), name).expect("registered");
    if let Err(why) = imp.availability() {
        eprintln!("rcu_synchronize: skipping {name}: {why}");
        return;
    }
    let primitive: Box<dyn GracePeriod> = imp.build(options);
    for &readers in reader_counts {
        let stop = AtomicBool::new(false);
        let ready = StartGate::new(readers + 1);
        let idle_ready = IdleGate::new(idle);
        primitive.prepare_writer();
        std::thread::scope(|s| {
            // Set however the scope ends: a wait that panics inside the
            // benchmark must not leave the readers reading for ever.
            let _stop = StopOnDrop(&stop);
            // A spawn the OS refuses panics here: the guard then cancels the
            // gate, so that the readers already started return.
            let _cancel = ready.cancel_on_panic();
            let _cancel_idle = idle_ready.cancel_on_panic();
            for _ in 0..readers {
                s.spawn(|| {
                    // A reader that panics in its set-up calls the start off.
                    let _cancel = ready.cancel_on_panic();
                    primitive.read_until(&ready, &stop)
                });
            }
            let _end_idle = EndIdle {
                stop: &stop,
                threads: (0..idle)
                    .map(|_| {
                        let idler = s.spawn(|| {
                            let _cancel = idle_ready.cancel_on_panic();
                            primitive.idle_until(&idle_ready, &stop);
                        });
                        idler.thread().clone()
                    })
                    .collect(),
            };
            // Every idle thread registered and parking, and every reader
            // registered and reading, before the first wait.
            assert!(
                idle_ready.wait_until_parking(idle) && ready.wait(),
                "rcu_synchronize: a reader or idle thread of {name} panicked before the start"
            );
            let idle = if idle == 0 {
                String::new()
            } else {
                format!("/idle={idle}")
            };
            let id = BenchmarkId::new(name, format!("{pacing}readers={readers}{idle}"));
            group.bench_function(id, |b| {
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

/// Sets `stop` and unparks the idle threads, which park until both (see
/// `rcuscale::idle_wait`), when dropped: however the scope ends, it can
/// join them.
struct EndIdle<'a> {
    stop: &'a AtomicBool,
    threads: Vec<std::thread::Thread>,
}

impl Drop for EndIdle<'_> {
    fn drop(&mut self) {
        // Relaxed: `stop` publishes nothing; `unpark` orders it before the
        // idle threads' loads.
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        for thread in &self.threads {
            thread.unpark();
        }
    }
}

criterion_group!(benches, rcu_synchronize);
criterion_main!(benches);
