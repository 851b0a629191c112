//! `hazptr_read`: what one protected read costs a reader, hazptr against
//! the hazard-pointer and epoch crates Rust users reach for.
//!
//! Each iteration enters, reads the protected `u64` through `black_box` and
//! exits: hazptr acquires (free slot, protect) and releases in the kernel's
//! fused form, separately as guard + protect + drop (one more store, the
//! slot reservation), and through the safe layer, a guard, `AtomicBox::load`
//! and a drop (the load also checks that the guard is of the box's domain:
//! three dependent loads and a compare); haphazard protects and resets a
//! hazard pointer held across iterations (its cheapest form); seize enters
//! and protects; crossbeam-epoch pins and loads.
use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use std::hint::black_box;
use std::sync::atomic::AtomicPtr;
use std::sync::atomic::Ordering::Acquire;
use std::time::Duration;

fn hazptr_read(c: &mut Criterion) {
    let mut group = c.benchmark_group("hazptr_read");
    group
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));

    let value = AtomicPtr::new(Box::into_raw(Box::new(42u64)));
    group.bench_function(BenchmarkId::new("hazptr", "acquire+release"), |b| {
        b.iter(|| {
            let (guard, p) = hazptr::acquire(&value);
            // SAFETY: protected by `guard`; freed only after the benchmark.
            black_box(unsafe { *p });
            drop(guard);
        })
    });
    group.bench_function(BenchmarkId::new("hazptr", "guard+protect+release"), |b| {
        b.iter(|| {
            let mut guard = hazptr::Guard::new();
            let p = guard.protect_ptr(&value);
            // SAFETY: protected by `guard`; freed only after the benchmark.
            black_box(unsafe { *p });
        })
    });
    let atomic_box = hazptr::AtomicBox::new(42u64);
    group.bench_function(
        BenchmarkId::new("hazptr", "guard+AtomicBox::load+release"),
        |b| {
            b.iter(|| {
                let mut guard = hazptr::Guard::new();
                black_box(atomic_box.load(&mut guard).copied());
            })
        },
    );

    let hap = haphazard::AtomicPtr::from(Box::new(42u64));
    let mut hp = haphazard::HazardPointer::new();
    group.bench_function(BenchmarkId::new("haphazard", "protect+reset"), |b| {
        b.iter(|| {
            black_box(hap.safe_load(&mut hp).copied());
            hp.reset_protection();
        })
    });

    let collector = seize::Collector::new();
    let seize_value = std::sync::atomic::AtomicPtr::new(Box::into_raw(Box::new(42u64)));
    group.bench_function(BenchmarkId::new("seize", "enter+protect"), |b| {
        use seize::Guard;
        b.iter(|| {
            let guard = collector.enter();
            let p = guard.protect(&seize_value, Acquire);
            // SAFETY: valid until freed after the benchmark.
            black_box(unsafe { *p });
        })
    });

    let epoch_value = crossbeam_epoch::Atomic::new(42u64);
    // A handle held by the thread, as in `syncbench refscale`: the pin of
    // `crossbeam_epoch::pin()` without its thread-local lookup, whose
    // inlining varies from build to build.
    let handle = crossbeam_epoch::default_collector().register();
    group.bench_function(BenchmarkId::new("crossbeam-epoch", "pin+load"), |b| {
        b.iter(|| {
            let guard = handle.pin();
            let shared = epoch_value.load(Acquire, &guard);
            // SAFETY: never freed while the benchmark runs; `guard` pins.
            black_box(*unsafe { shared.deref() });
        })
    });
    group.finish();

    // SAFETY: the benchmarks are over; nothing protects these any more.
    unsafe {
        drop(Box::from_raw(value.into_inner()));
        drop(Box::from_raw(hap.into_inner()));
        drop(Box::from_raw(seize_value.into_inner()));
        drop(epoch_value.into_owned());
    }
}

criterion_group!(benches, hazptr_read);
criterion_main!(benches);
