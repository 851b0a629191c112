//! Criterion group `rcu_read`: what does one RCU read-side section cost?
//!
//! rcu-lite's memb and qsbr read sides against liburcu's (run in C, see
//! `bench_suite::liburcu`) and crossbeam-epoch's pin, one thread each, through
//! the same `ReadSide` loops `syncbench refscale` times.
//!
//! `cargo bench -p bench-suite --bench rcu_read -- --quick`

use bench_suite::refscale::{self, ReadSide};
use bench_suite::registry;
use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};

const CONTENDERS: [&str; 5] = [
    "rcu-lite-memb",
    "rcu-lite-qsbr",
    "liburcu-memb",
    "liburcu-qsbr",
    "crossbeam-epoch",
];

fn rcu_read(c: &mut Criterion) {
    let mut group = c.benchmark_group("rcu_read");
    for name in CONTENDERS {
        let imp = registry::find(refscale::implementations(), name).expect("registered");
        if let Err(why) = imp.availability() {
            eprintln!("rcu_read: skipping {name}: {why}");
            continue;
        }
        let reader: Box<dyn ReadSide> = imp.build(&());
        // Per-thread set-up (registration) before any timing.
        reader.read_sections(1);
        group.bench_function(BenchmarkId::new(name, "1-thread"), |b| {
            b.iter_custom(|iters| reader.read_sections(iters));
        });
    }
    group.finish();
}

criterion_group!(benches, rcu_read);
criterion_main!(benches);
