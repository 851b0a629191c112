//! Model-based randomized tests of qrwlock's `lock_api` surface:
//! guards, try forms, recursive reads, downgrade, `unlocked`, `map`,
//! forgotten guards released with `force_unlock_*`, checked against a
//! model of the holds after every step; and a multi-threaded version that
//! checks exclusion with counters of the threads inside.
//!
//! Every atomic access here is SeqCst: the tests check the library's
//! orderings, not their own bookkeeping's.
//!
//! `MODEL_SEED=N` runs one seed; `MODEL_SCALE=K` multiplies the seeds.
#![cfg(not(loom))]

use qrwlock::{ReadRecursive, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::sync::atomic::AtomicI64;
use std::sync::atomic::Ordering::SeqCst;
use test_support::model::{Rng, Trace, scale, seeds};

const OPS: usize = 2000;

/// The holds: live read guards, a live write guard, and forgotten holds.
struct Holds<'a> {
    reads: Vec<RwLockReadGuard<'a, u64>>,
    mapped: Vec<lock_api::MappedRwLockReadGuard<'a, qrwlock::RawQRwLock, u64>>,
    write: Option<RwLockWriteGuard<'a, u64>>,
    forgotten_reads: usize,
    forgotten_write: bool,
}

impl Holds<'_> {
    fn readers(&self) -> usize {
        self.reads.len() + self.mapped.len() + self.forgotten_reads
    }
    fn writer(&self) -> bool {
        self.write.is_some() || self.forgotten_write
    }
}

fn single_seed(seed: u64) -> u64 {
    let mut trace = Trace::new(
        "-p qrwlock --test model_api",
        "single_thread_api_model",
        seed,
    );
    let mut rng = Rng::new(seed);
    let lock = RwLock::new(0u64);
    let mut value = 0u64; // the model's value of the data
    let mut h = Holds {
        reads: vec![],
        mapped: vec![],
        write: None,
        forgotten_reads: 0,
        forgotten_write: false,
    };
    let mut ops = 0;
    for _ in 0..OPS {
        let op = rng.below(17);
        trace.op(format!(
            "op {op} (readers {}, writer {})",
            h.readers(),
            h.writer()
        ));
        ops += 1;
        match op {
            0 => {
                let g = lock.try_read();
                assert_eq!(g.is_some(), !h.writer(), "try_read");
                if let Some(g) = g {
                    assert_eq!(*g, value);
                    h.reads.push(g);
                }
            }
            1 if !h.writer() && h.readers() < 40 => {
                // With one thread, no writer waits, so a plain read enters.
                let g = lock.read();
                assert_eq!(*g, value);
                h.reads.push(g);
            }
            2 if !h.writer() && h.readers() < 40 => {
                let g = lock.read_recursive();
                assert_eq!(*g, value);
                h.reads.push(g);
            }
            3 => {
                let g = lock.try_read_recursive();
                assert_eq!(g.is_some(), !h.writer(), "try_read_recursive");
                if let Some(g) = g {
                    h.reads.push(g);
                }
            }
            4 => {
                let g = lock.try_write();
                assert_eq!(g.is_some(), h.readers() == 0 && !h.writer(), "try_write");
                if let Some(mut g) = g {
                    *g += 1;
                    value += 1;
                    h.write = Some(g);
                }
            }
            5 if h.readers() == 0 && !h.writer() => {
                let mut g = lock.write();
                *g += 1;
                value += 1;
                h.write = Some(g);
            }
            6 if !h.reads.is_empty() => {
                let i = rng.below(h.reads.len());
                drop(h.reads.swap_remove(i));
            }
            7 if h.write.is_some() => {
                drop(h.write.take());
            }
            8 if h.write.is_some() => {
                let g = RwLockWriteGuard::downgrade(h.write.take().unwrap());
                assert_eq!(*g, value);
                h.reads.push(g);
            }
            9 if !h.reads.is_empty() => {
                let i = rng.below(h.reads.len());
                std::mem::forget(h.reads.swap_remove(i));
                h.forgotten_reads += 1;
            }
            10 if h.write.is_some() => {
                std::mem::forget(h.write.take());
                h.forgotten_write = true;
            }
            11 if h.forgotten_reads > 0 => {
                // SAFETY: a forgotten read guard's hold.
                unsafe { lock.force_unlock_read(qrwlock::GuardMarker::new()) };
                h.forgotten_reads -= 1;
            }
            12 if h.forgotten_write => {
                // SAFETY: the forgotten write guard's hold.
                unsafe { lock.force_unlock_write(qrwlock::GuardMarker::new()) };
                h.forgotten_write = false;
            }
            13 if !h.reads.is_empty() => {
                // Inside `unlocked` this hold is given up; others remain.
                let i = rng.below(h.reads.len());
                let others = h.readers() - 1;
                let fw = h.forgotten_write;
                let mut g = h.reads.swap_remove(i);
                RwLockReadGuard::unlocked(&mut g, || {
                    assert_eq!(lock.is_locked(), others > 0 || fw);
                    let w = lock.try_write();
                    assert_eq!(
                        w.is_some(),
                        others == 0 && !fw,
                        "try_write inside read unlocked"
                    );
                });
                assert_eq!(*g, value);
                h.reads.push(g);
            }
            14 if h.write.is_some() => {
                let mut g = h.write.take().unwrap();
                let readers = h.readers();
                RwLockWriteGuard::unlocked(&mut g, || {
                    assert!(!lock.is_locked_exclusive());
                    let r = lock.try_read();
                    assert!(r.is_some(), "try_read inside write unlocked");
                    drop(r);
                    let w = lock.try_write();
                    assert_eq!(w.is_some(), readers == 0);
                });
                *g += 1;
                value += 1;
                h.write = Some(g);
            }
            15 if !h.reads.is_empty() => {
                let i = rng.below(h.reads.len());
                let g = h.reads.swap_remove(i);
                h.mapped.push(RwLockReadGuard::map(g, |v| v));
            }
            16 if !h.mapped.is_empty() => {
                let i = rng.below(h.mapped.len());
                assert_eq!(*h.mapped[i], value);
                drop(h.mapped.swap_remove(i));
            }
            _ => {}
        }
        assert_eq!(lock.is_locked(), h.readers() > 0 || h.writer(), "is_locked");
        assert_eq!(
            lock.is_locked_exclusive(),
            h.writer(),
            "is_locked_exclusive"
        );
        // SAFETY: the raw lock is only read (a snapshot of its state),
        // never locked or unlocked behind the guards' backs.
        let raw = unsafe { lock.raw() };
        assert!(!raw.is_writer_waiting(), "no writer waits with one thread");
    }
    // Tear down.
    h.reads.clear();
    h.mapped.clear();
    h.write = None;
    for _ in 0..h.forgotten_reads {
        // SAFETY: forgotten holds.
        unsafe { lock.force_unlock_read(qrwlock::GuardMarker::new()) };
    }
    if h.forgotten_write {
        // SAFETY: forgotten hold.
        unsafe { lock.force_unlock_write(qrwlock::GuardMarker::new()) };
    }
    assert!(!lock.is_locked());
    assert!(lock.try_write().is_some());
    drop(h);
    assert_eq!(lock.into_inner(), value);
    drop(trace);
    ops
}

#[test]
fn single_thread_api_model() {
    let n = 2000 * scale();
    let mut total = 0;
    for seed in seeds(n) {
        total += single_seed(seed);
    }
    eprintln!("single_thread_api_model: {total} operations");
}

/// Threads inside, as counted by the threads themselves.
struct Inside {
    readers: AtomicI64,
    writers: AtomicI64,
}

impl Inside {
    fn enter_read(&self) {
        self.readers.fetch_add(1, SeqCst);
        assert_eq!(
            self.writers.load(SeqCst),
            0,
            "a reader with a writer inside"
        );
    }
    fn leave_read(&self) {
        assert!(self.readers.fetch_sub(1, SeqCst) > 0);
    }
    fn enter_write(&self) {
        assert_eq!(self.writers.fetch_add(1, SeqCst), 0, "two writers inside");
        assert_eq!(self.readers.load(SeqCst), 0, "a writer with readers inside");
    }
    fn leave_write(&self) {
        assert_eq!(self.writers.fetch_sub(1, SeqCst), 1);
    }
}

fn concurrent_seed(seed: u64, threads: usize, ops: usize) -> (u64, u64) {
    let lock = RwLock::new(0u64);
    let inside = Inside {
        readers: AtomicI64::new(0),
        writers: AtomicI64::new(0),
    };
    let writes = AtomicI64::new(0);
    let total_ops = AtomicI64::new(0);
    std::thread::scope(|s| {
        for t in 0..threads {
            let (lock, inside, writes, total_ops) = (&lock, &inside, &writes, &total_ops);
            s.spawn(move || {
                let mut rng = Rng::new(seed * 64 + t as u64);
                let mut last = 0;
                for _ in 0..ops {
                    match rng.below(9) {
                        0 | 1 => {
                            let g = lock.read();
                            inside.enter_read();
                            assert!(*g >= last);
                            last = *g;
                            if rng.percent(30) {
                                let g2 = lock.read_recursive();
                                inside.enter_read();
                                assert_eq!(*g2, *g);
                                inside.leave_read();
                                drop(g2);
                            }
                            inside.leave_read();
                            drop(g);
                        }
                        2 => {
                            if let Some(g) = lock.try_read() {
                                inside.enter_read();
                                assert!(*g >= last);
                                last = *g;
                                inside.leave_read();
                                drop(g);
                            }
                        }
                        3 => {
                            if let Some(g) = lock.try_read_recursive() {
                                inside.enter_read();
                                inside.leave_read();
                                drop(g);
                            }
                        }
                        4 | 5 => {
                            let mut g = lock.write();
                            inside.enter_write();
                            *g += 1;
                            writes.fetch_add(1, SeqCst);
                            last = *g;
                            inside.leave_write();
                            drop(g);
                        }
                        6 => {
                            if let Some(mut g) = lock.try_write() {
                                inside.enter_write();
                                *g += 1;
                                writes.fetch_add(1, SeqCst);
                                last = *g;
                                inside.leave_write();
                                drop(g);
                            }
                        }
                        7 => {
                            let mut g = lock.write();
                            inside.enter_write();
                            *g += 1;
                            writes.fetch_add(1, SeqCst);
                            let v = *g;
                            // Turn our count into a reader's before the lock does.
                            inside.leave_write();
                            inside.enter_read();
                            let r = RwLockWriteGuard::downgrade(g);
                            assert_eq!(*r, v, "a writer got in during downgrade");
                            last = v;
                            inside.leave_read();
                            drop(r);
                        }
                        _ => {
                            let mut g = lock.write();
                            inside.enter_write();
                            inside.leave_write();
                            RwLockWriteGuard::unlocked(&mut g, std::thread::yield_now);
                            inside.enter_write();
                            *g += 1;
                            writes.fetch_add(1, SeqCst);
                            inside.leave_write();
                            drop(g);
                        }
                    }
                    total_ops.fetch_add(1, SeqCst);
                }
            });
        }
    });
    assert!(!lock.is_locked());
    assert_eq!(
        lock.into_inner() as i64,
        writes.load(SeqCst),
        "seed {seed}: writes lost"
    );
    (total_ops.load(SeqCst) as u64, writes.load(SeqCst) as u64)
}

#[test]
fn concurrent_api_invariants() {
    let n = 40 * scale();
    let mut total = 0;
    for seed in seeds(n) {
        let threads = std::env::var("MODEL_THREADS")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(2 + (seed % 4) as usize);
        let t = Trace::new(
            "-p qrwlock --test model_api",
            "concurrent_api_invariants",
            seed,
        );
        total += concurrent_seed(seed, threads, 20_000).0;
        drop(t);
    }
    eprintln!("concurrent_api_invariants: {total} operations");
}
