//! Criterion group `rwlock`: qrwlock against parking_lot, std and spin.
//!
//! Five questions, one benchmark id each (`rwlock/<impl>/<question>`):
//!
//! - `uncontended-read`: one thread, read lock + load + unlock.
//! - `uncontended-write`: one thread, write lock + increment + unlock.
//! - `read-mostly-2t`: two threads on one lock, each doing 1 write per 100
//!   reads; the time is per operation pair (one operation on each thread), so
//!   throughput is 2 / time. Threads are spawned and released by a start gate
//!   outside the timed region; the time runs from the first thread's start
//!   to the last one's end.
//! - `nested-read` and `nested-read-mostly-2t`: the same with every read a
//!   nested pair, a read lock and a second one inside it that a waiting
//!   writer does not hold up (a plain second `read` could deadlock behind
//!   it), for the locks that have one: qrwlock's `read_recursive`,
//!   parking_lot's `RecursiveRwLock` (every read recursive; its own contender,
//!   `parking_lot-recursive`) and spin (reader-preferring: every read is).
//!
//! `cargo bench -p bench-suite --bench rwlock` (add `-- --quick` for a
//! minute-long run). Run under `flock /work/bench.lock` on a shared machine.

use bench_suite::start_gate::{StartGate, first_start_to_last_end};
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use std::hint::black_box;
use std::time::{Duration, Instant};

/// One contender: a reader-writer lock around a `u64`.
trait BenchLock: Send + Sync + 'static {
    const NAME: &'static str;
    fn new() -> Self;
    /// Read lock, load, unlock.
    fn read(&self) -> u64;
    /// Write lock, increment, unlock.
    fn write(&self);
}

impl BenchLock for qrwlock::RwLock<u64> {
    const NAME: &'static str = "qrwlock";
    fn new() -> Self {
        qrwlock::RwLock::new(0)
    }
    #[inline]
    fn read(&self) -> u64 {
        *qrwlock::RwLock::read(self)
    }
    #[inline]
    fn write(&self) {
        *qrwlock::RwLock::write(self) += 1;
    }
}

impl BenchLock for parking_lot::RwLock<u64> {
    const NAME: &'static str = "parking_lot";
    fn new() -> Self {
        parking_lot::RwLock::new(0)
    }
    #[inline]
    fn read(&self) -> u64 {
        *parking_lot::RwLock::read(self)
    }
    #[inline]
    fn write(&self) {
        *parking_lot::RwLock::write(self) += 1;
    }
}

impl BenchLock for std::sync::RwLock<u64> {
    const NAME: &'static str = "std";
    fn new() -> Self {
        std::sync::RwLock::new(0)
    }
    #[inline]
    fn read(&self) -> u64 {
        *std::sync::RwLock::read(self).expect("never poisoned")
    }
    #[inline]
    fn write(&self) {
        *std::sync::RwLock::write(self).expect("never poisoned") += 1;
    }
}

impl BenchLock for spin::RwLock<u64> {
    const NAME: &'static str = "spin";
    fn new() -> Self {
        spin::RwLock::new(0)
    }
    #[inline]
    fn read(&self) -> u64 {
        *spin::RwLock::read(self)
    }
    #[inline]
    fn write(&self) {
        *spin::RwLock::write(self) += 1;
    }
}

/// A contender whose read locks nest with a writer waiting.
trait NestedRead: BenchLock {
    /// Read lock, a second read lock inside it that a waiting writer does
    /// not hold up, load, unlock both.
    fn nested_read(&self) -> u64;
}

impl NestedRead for qrwlock::RwLock<u64> {
    #[inline]
    fn nested_read(&self) -> u64 {
        use qrwlock::ReadRecursive;
        let outer = qrwlock::RwLock::read(self);
        let inner = self.read_recursive();
        black_box(&outer);
        *inner
    }
}

impl BenchLock for parking_lot::RecursiveRwLock<u64> {
    const NAME: &'static str = "parking_lot-recursive";
    fn new() -> Self {
        parking_lot::RecursiveRwLock::new(0)
    }
    #[inline]
    fn read(&self) -> u64 {
        *parking_lot::RecursiveRwLock::read(self)
    }
    #[inline]
    fn write(&self) {
        *parking_lot::RecursiveRwLock::write(self) += 1;
    }
}

impl NestedRead for parking_lot::RecursiveRwLock<u64> {
    #[inline]
    fn nested_read(&self) -> u64 {
        let outer = parking_lot::RecursiveRwLock::read(self);
        let inner = parking_lot::RecursiveRwLock::read(self);
        black_box(&outer);
        *inner
    }
}

impl NestedRead for spin::RwLock<u64> {
    #[inline]
    fn nested_read(&self) -> u64 {
        let outer = spin::RwLock::read(self);
        let inner = spin::RwLock::read(self);
        black_box(&outer);
        *inner
    }
}

/// The lock on its own cache lines, so nothing else shares them.
#[repr(align(128))]
struct Padded<L>(L);

/// Reads per write in `read-mostly-2t`.
const READS_PER_WRITE: u64 = 100;

fn uncontended<L: BenchLock>(c: &mut Criterion) {
    let mut group = c.benchmark_group("rwlock");
    group.throughput(Throughput::Elements(1));
    let lock = Padded(L::new());
    group.bench_function(BenchmarkId::new(L::NAME, "uncontended-read"), |b| {
        b.iter(|| black_box(black_box(&lock.0).read()))
    });
    group.bench_function(BenchmarkId::new(L::NAME, "uncontended-write"), |b| {
        b.iter(|| black_box(&lock.0).write())
    });
    group.finish();
}

/// `iters` operations on each of two threads, 1 write per
/// `READS_PER_WRITE` reads (each a `read`), the threads' writes staggered by
/// half a period. The time runs from the first thread's start to the last
/// one's end: the stretches where one thread runs alone (the other not yet
/// past the barrier, or done) are part of the sample, as they are of its
/// wall time. `read` is a generic closure, not a function pointer, so that it
/// inlines into the loop as `write` does.
fn read_mostly_pair<L: BenchLock>(
    lock: &Padded<L>,
    iters: u64,
    read: impl Fn(&L) -> u64 + Sync,
) -> Duration {
    let start = StartGate::new(2);
    std::thread::scope(|s| {
        // A spawn the OS refuses panics here: the guard then cancels the
        // gate, so that the thread already started returns and the scope can
        // join it (at a `Barrier` it would wait for ever).
        let _cancel = start.cancel_on_panic();
        let threads: Vec<_> = (0..2u64)
            .map(|t| {
                let (lock, start, read) = (&lock.0, &start, &read);
                s.spawn(move || {
                    let offset = t * (READS_PER_WRITE / 2);
                    if !start.wait() {
                        return None;
                    }
                    let began = Instant::now();
                    for i in 0..iters {
                        if (i + offset) % (READS_PER_WRITE + 1) == READS_PER_WRITE {
                            lock.write();
                        } else {
                            black_box(read(lock));
                        }
                    }
                    Some((began, Instant::now()))
                })
            })
            .collect();
        first_start_to_last_end(threads.into_iter().map(|t| {
            t.join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
                .expect("the gate opened for both threads")
        }))
    })
}

fn read_mostly<L: BenchLock>(c: &mut Criterion) {
    let mut group = c.benchmark_group("rwlock");
    group.throughput(Throughput::Elements(2));
    let lock = Padded(L::new());
    group.bench_function(BenchmarkId::new(L::NAME, "read-mostly-2t"), |b| {
        b.iter_custom(|iters| read_mostly_pair(&lock, iters, L::read))
    });
    group.finish();
}

fn nested<L: NestedRead>(c: &mut Criterion) {
    let mut group = c.benchmark_group("rwlock");
    group.throughput(Throughput::Elements(1));
    let lock = Padded(L::new());
    group.bench_function(BenchmarkId::new(L::NAME, "nested-read"), |b| {
        b.iter(|| black_box(black_box(&lock.0).nested_read()))
    });
    group.throughput(Throughput::Elements(2));
    let lock = Padded(L::new());
    group.bench_function(BenchmarkId::new(L::NAME, "nested-read-mostly-2t"), |b| {
        b.iter_custom(|iters| read_mostly_pair(&lock, iters, L::nested_read))
    });
    group.finish();
}

fn rwlock(c: &mut Criterion) {
    uncontended::<qrwlock::RwLock<u64>>(c);
    uncontended::<parking_lot::RwLock<u64>>(c);
    uncontended::<std::sync::RwLock<u64>>(c);
    uncontended::<spin::RwLock<u64>>(c);
    read_mostly::<qrwlock::RwLock<u64>>(c);
    read_mostly::<parking_lot::RwLock<u64>>(c);
    read_mostly::<std::sync::RwLock<u64>>(c);
    read_mostly::<spin::RwLock<u64>>(c);
    nested::<qrwlock::RwLock<u64>>(c);
    nested::<parking_lot::RecursiveRwLock<u64>>(c);
    nested::<spin::RwLock<u64>>(c);
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    targets = rwlock
}
criterion_main!(benches);
