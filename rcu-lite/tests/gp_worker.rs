//! The grace-period worker: with more waiting callers than the machine has
//! CPUs (twice over), drivers hand grace periods to the worker, and every
//! caller is still covered. Its own process, so that `by_worker` counts only
//! this test's grace periods.

use rcu_lite::{memb, qsbr};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::*};
use std::sync::{Arc, Barrier};
use std::thread;
use std::time::{Duration, Instant};

const LIVE: u64 = 0x11fe;
/// Checks of the object per read-side section. Under miri, too, sections must
/// outlast a waiter's spin, or no waiter ever sleeps and the worker (which
/// counts sleepers) never takes over.
const SECTION_CHECKS: u32 = if cfg!(miri) { 30 } else { 100 };
/// Grace periods the worker must drive in each test.
const WORKER_GPS: u64 = if cfg!(miri) { 3 } else { 1000 };
const POISON: u64 = 0xdead;
/// How long the writers keep calling at most (see [`run`]).
const RUN_LIMIT: Duration = Duration::from_secs(180);

struct Object(AtomicU64);

/// Enough callers that more than two per CPU wait while one drives.
fn crowd() -> usize {
    let cpus = thread::available_parallelism().map_or(1, |n| n.get());
    4 * cpus + 2
}

/// Writers replace the current object, wait with `synchronize`, and poison the
/// old one, until the worker has driven `worker_gps` grace periods or three
/// minutes pass (an idle 2-vCPU guest needs 0.7-2 s, one with five busy loops
/// beside the test 8-13 s); readers check every object they reach is live.
/// Returns the grace periods the worker drove and the poisoned objects readers
/// reached.
fn run(
    synchronize: fn(),
    by_worker: fn() -> u64,
    reader: fn(&AtomicBool, &dyn Fn()),
    worker_gps: u64,
) -> (u64, usize) {
    let current = Arc::new(std::sync::atomic::AtomicPtr::new(Box::into_raw(Box::new(
        Object(AtomicU64::new(LIVE)),
    ))));
    let stop = Arc::new(AtomicBool::new(false));
    let bad = Arc::new(AtomicUsize::new(0));
    let before = by_worker();
    let writers = crowd();
    let start = Arc::new(Barrier::new(writers + 2));
    let readers: Vec<_> = (0..2)
        .map(|_| {
            let (current, stop, bad, start) = (
                Arc::clone(&current),
                Arc::clone(&stop),
                Arc::clone(&bad),
                Arc::clone(&start),
            );
            thread::spawn(move || {
                start.wait();
                reader(&stop, &|| {
                    // SAFETY: objects are poisoned only after a grace period
                    // and freed only after the run.
                    let object = unsafe { &*current.load(Acquire) };
                    // A section long enough for writers to replace the object
                    // meanwhile: it must stay live until the section ends.
                    for _ in 0..SECTION_CHECKS {
                        if object.0.load(Relaxed) != LIVE {
                            bad.fetch_add(1, Relaxed);
                        }
                        std::hint::spin_loop();
                    }
                });
            })
        })
        .collect();
    let deadline = Instant::now() + RUN_LIMIT;
    let writers: Vec<_> = (0..writers)
        .map(|_| {
            let (current, start) = (Arc::clone(&current), Arc::clone(&start));
            thread::spawn(move || {
                start.wait();
                let mut retired = Vec::new();
                while by_worker() - before < worker_gps && Instant::now() < deadline {
                    let fresh = Box::into_raw(Box::new(Object(AtomicU64::new(LIVE))));
                    let old = current.swap(fresh, AcqRel);
                    synchronize();
                    // SAFETY: unpublished, and a grace period has elapsed: no
                    // reader holds it, so the box is ours. Kept (poisoned)
                    // until the run ends, so a reader that wrongly still
                    // reaches it reads the poison, not freed memory.
                    let old = unsafe { Box::from_raw(old) };
                    old.0.store(POISON, Relaxed);
                    retired.push(old);
                }
                retired
            })
        })
        .collect();
    let retired = Arc::new(std::sync::Mutex::new(Vec::<Box<Object>>::new()));
    // The writers stop by RUN_LIMIT; then only a grace period that never
    // ends (a lost wake-up) can keep one from returning.
    test_support::within_a_deadline(
        "the writers' synchronize calls",
        RUN_LIMIT + Duration::from_secs(60),
        {
            let retired = Arc::clone(&retired);
            move || {
                for w in writers {
                    retired.lock().unwrap().extend(w.join().unwrap());
                }
            }
        },
    );
    let retired = std::mem::take(&mut *retired.lock().unwrap());
    stop.store(true, Relaxed);
    for r in readers {
        r.join().unwrap();
    }
    drop(retired);
    // SAFETY: the last published object; all threads are joined.
    drop(unsafe { Box::from_raw(current.load(Acquire)) });
    (by_worker() - before, bad.load(Relaxed))
}

#[test]
fn a_crowd_of_memb_callers_is_served_by_the_worker_and_each_caller_is_covered() {
    let (worker_gps, bad) = run(
        memb::synchronize_rcu,
        || memb::grace_periods().by_worker,
        |stop, section| {
            while !stop.load(Relaxed) {
                let _guard = memb::read_lock();
                section();
            }
        },
        WORKER_GPS,
    );
    assert!(
        worker_gps >= WORKER_GPS,
        "the worker drove only {worker_gps} grace periods"
    );
    assert_eq!(bad, 0, "readers reached poisoned objects");
}

#[test]
fn a_crowd_of_qsbr_callers_is_served_by_the_worker_and_each_caller_is_covered() {
    let (worker_gps, bad) = run(
        qsbr::synchronize_rcu,
        || qsbr::grace_periods().by_worker,
        |stop, section| {
            let mut thread = qsbr::QsbrThread::register();
            while !stop.load(Relaxed) {
                let guard = thread.read_lock();
                section();
                drop(guard);
                thread.quiescent_state();
            }
        },
        WORKER_GPS,
    );
    assert!(
        worker_gps >= WORKER_GPS,
        "the worker drove only {worker_gps} grace periods"
    );
    assert_eq!(bad, 0, "readers reached poisoned objects");
}
