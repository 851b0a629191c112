//! The memb flavor's behaviour, with real threads (see `loom.rs` for the
//! exhaustive models).

use rcu_lite::{memb, raw};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::*};
use std::thread;
use std::time::{Duration, Instant};
use test_support::within_a_deadline;

/// How long a grace period or barrier may take before the test counts it as
/// never ending (a lost wake-up): generous, for a loaded 2-CPU machine.
const LIMIT: Duration = Duration::from_secs(60);

/// Checks of the object per read-side section in the concurrent-callers
/// test: sections long enough that a grace period which did not wait for them
/// would let the writers poison the object while they still read it.
const SECTION_CHECKS: u32 = if cfg!(miri) { 2 } else { 100 };

#[test]
fn guards_nest_and_read_ongoing_follows_them() {
    assert!(!memb::read_ongoing());
    let outer = memb::read_lock();
    let inner = memb::read_lock();
    assert!(memb::read_ongoing());
    drop(inner);
    assert!(memb::read_ongoing());
    drop(outer);
    assert!(!memb::read_ongoing());
}

#[test]
fn synchronize_waits_for_a_section_that_began_before_it() {
    test_support::assert_waits_for_reader(
        "memb::synchronize_rcu",
        Duration::from_millis(50),
        memb::read_lock,
        drop,
        || {
            within_a_deadline(
                "memb::synchronize_rcu behind a reader",
                LIMIT,
                memb::synchronize_rcu,
            )
        },
    );
}

#[test]
fn synchronize_does_not_wait_for_a_section_that_began_after_it() {
    // The reader waits for some grace period N to start, enters, and stays
    // inside until N has completed (bounded, so a bug fails instead of
    // hanging). N must complete without it. Later grace periods do wait for
    // it, and other tests of this process may start grace periods too, so
    // the reader watches N itself rather than this thread's calls (one of
    // which may need N + 1 and so rightly wait for the reader).
    let before = memb::grace_periods().started;
    let reader = thread::spawn(move || {
        let n = loop {
            let started = memb::grace_periods().started;
            if started > before {
                break started;
            }
            thread::yield_now();
        };
        let guard = memb::read_lock();
        let deadline = Instant::now() + Duration::from_secs(20);
        while memb::grace_periods().completed < n {
            if Instant::now() > deadline {
                return false;
            }
            thread::sleep(Duration::from_micros(100));
        }
        drop(guard);
        true
    });
    // Keep grace periods coming until the reader is done.
    within_a_deadline(
        "memb::synchronize_rcu calls while a newer reader waits",
        LIMIT,
        move || {
            while !reader.is_finished() {
                memb::synchronize_rcu();
            }
            assert!(
                reader.join().unwrap(),
                "a grace period waited for a newer reader"
            );
        },
    );
}

#[test]
fn raw_sections_pair_with_guards() {
    raw::memb_read_lock();
    let guard = memb::read_lock();
    drop(guard);
    assert!(memb::read_ongoing());
    // SAFETY: ends the raw section entered above; no guard is alive.
    unsafe { raw::memb_read_unlock() };
    assert!(!memb::read_ongoing());
}

/// Writers replace pointers and free the old objects after synchronize; readers
/// check that whatever they reach is live.
#[test]
fn concurrent_callers_and_readers_never_see_freed_objects() {
    const LIVE: u64 = 0x11fe;
    struct Object(AtomicU64);
    let current = Arc::new(std::sync::atomic::AtomicPtr::new(Box::into_raw(Box::new(
        Object(AtomicU64::new(LIVE)),
    ))));
    let stop = Arc::new(AtomicBool::new(false));
    let bad = Arc::new(AtomicUsize::new(0));
    let readers: Vec<_> = (0..2)
        .map(|_| {
            let (current, stop, bad) = (Arc::clone(&current), Arc::clone(&stop), Arc::clone(&bad));
            thread::spawn(move || {
                while !stop.load(Relaxed) {
                    let guard = memb::read_lock();
                    // SAFETY: objects are poisoned only after a grace period
                    // and freed only after the run (the quarantine below).
                    let object = unsafe { &*current.load(Acquire) };
                    // A section long enough for writers to replace and poison
                    // the object meanwhile, were it not waited for.
                    for _ in 0..SECTION_CHECKS {
                        if object.0.load(Relaxed) != LIVE {
                            bad.fetch_add(1, Relaxed);
                        }
                        std::hint::spin_loop();
                    }
                    drop(guard);
                }
            })
        })
        .collect();
    let writers: Vec<_> = (0..4)
        .map(|_| {
            let current = Arc::clone(&current);
            thread::spawn(move || {
                let mut retired = Vec::new();
                // Fewer under miri, whose clock counts every thread's
                // interpreted blocks against the deadline.
                for _ in 0..if cfg!(miri) { 40 } else { 300 } {
                    let fresh = Box::into_raw(Box::new(Object(AtomicU64::new(LIVE))));
                    let old = current.swap(fresh, AcqRel);
                    memb::synchronize_rcu();
                    // SAFETY: unpublished, and a grace period has elapsed.
                    unsafe { &*old }.0.store(0xdead, Relaxed);
                    retired.push(old as usize);
                }
                retired
            })
        })
        .collect();
    let retired = Arc::new(std::sync::Mutex::new(Vec::<usize>::new()));
    within_a_deadline("memb writers' synchronize_rcu calls", LIMIT, {
        let retired = Arc::clone(&retired);
        move || {
            for w in writers {
                retired.lock().unwrap().extend(w.join().unwrap());
            }
        }
    });
    let retired = std::mem::take(&mut *retired.lock().unwrap());
    stop.store(true, Relaxed);
    for r in readers {
        r.join().unwrap();
    }
    assert_eq!(bad.load(Relaxed), 0, "readers reached poisoned objects");
    for old in retired {
        // SAFETY: every retired object came from Box::into_raw and is unreachable.
        drop(unsafe { Box::from_raw(old as *mut Object) });
    }
    // SAFETY: the last published object; all threads are joined.
    drop(unsafe { Box::from_raw(current.load(Acquire)) });
}

/// Writers free each old object as soon as `synchronize_rcu` returns, while
/// readers keep entering sections and reading whatever is current. Under miri
/// this checks the memory model, not only the poison: every read a reader did
/// in an earlier section must happen before the free, or miri reports a data
/// race (the quarantine above would hide one).
#[test]
fn readers_and_immediate_frees_never_race() {
    const LIVE: usize = 0x1172_0b1e;
    struct Object(AtomicUsize);
    impl Drop for Object {
        fn drop(&mut self) {
            self.0.store(0xdead, Relaxed);
        }
    }
    let replacements = if cfg!(miri) { 40 } else { 2_000 };
    let current =
        std::sync::atomic::AtomicPtr::new(Box::into_raw(Box::new(Object(AtomicUsize::new(LIVE)))));
    let stop = AtomicBool::new(false);
    let bad = AtomicUsize::new(0);
    thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| {
                while !stop.load(Relaxed) {
                    let guard = memb::read_lock();
                    // SAFETY: an object is freed only after a grace period
                    // that began after it was unpublished.
                    let object = unsafe { &*current.load(Acquire) };
                    // Read again over a section long enough for the writer to
                    // replace and free the object meanwhile, were it not
                    // waited for: a single read right after the load almost
                    // never overlapped a free. Each object holds a value of
                    // its own, so memory freed and handed straight to the
                    // next object does not read as still live either.
                    let value = object.0.load(Relaxed);
                    if !(LIVE..=LIVE + replacements).contains(&value) {
                        bad.fetch_add(1, Relaxed);
                    }
                    for _ in 0..SECTION_CHECKS {
                        std::hint::spin_loop();
                        if object.0.load(Relaxed) != value {
                            bad.fetch_add(1, Relaxed);
                        }
                    }
                    drop(guard);
                }
            });
        }
        s.spawn(|| {
            for i in 1..=replacements {
                let fresh = Box::into_raw(Box::new(Object(AtomicUsize::new(LIVE + i))));
                let old = current.swap(fresh, AcqRel);
                within_a_deadline(
                    "memb::synchronize_rcu before a free",
                    LIMIT,
                    memb::synchronize_rcu,
                );
                // SAFETY: unpublished, and a grace period has elapsed.
                drop(unsafe { Box::from_raw(old) });
            }
            stop.store(true, Relaxed);
        });
    });
    assert_eq!(bad.load(Relaxed), 0, "readers reached freed objects");
    // SAFETY: the last published object; every thread has finished.
    drop(unsafe { Box::from_raw(current.into_inner()) });
}

#[test]
fn callbacks_run_after_a_grace_period_and_rcu_barrier_waits_for_them() {
    let ran = Arc::new(AtomicUsize::new(0));
    let guard = memb::read_lock();
    for _ in 0..100 {
        let ran = Arc::clone(&ran);
        memb::call_rcu(move || {
            ran.fetch_add(1, SeqCst);
        });
    }
    // Our own section is open: no grace period can end, so nothing has run.
    thread::sleep(Duration::from_millis(20));
    assert_eq!(
        ran.load(SeqCst),
        0,
        "a callback ran during a read-side section"
    );
    drop(guard);
    within_a_deadline("memb::rcu_barrier", LIMIT, memb::rcu_barrier);
    assert_eq!(ran.load(SeqCst), 100);
}

#[test]
fn callbacks_run_in_the_order_they_were_queued() {
    let order = Arc::new(std::sync::Mutex::new(Vec::new()));
    for i in 0..50 {
        let order = Arc::clone(&order);
        memb::call_rcu(move || order.lock().unwrap().push(i));
    }
    within_a_deadline("memb::rcu_barrier", LIMIT, memb::rcu_barrier);
    assert_eq!(*order.lock().unwrap(), (0..50).collect::<Vec<_>>());
}

// Threads that exit outside a section: `thread_churn.rs`, whose binary no
// other test registers threads in, so that it can count the records.

#[test]
fn a_section_kept_in_a_later_thread_local_stays_visible_during_thread_exit() {
    // Thread-local destructors run in the reverse order of their first use:
    // `KEPT` is used before the thread's first read lock, so its destructor
    // runs after the one that gives the thread's record back, with the guard
    // it keeps still alive.
    struct Kept {
        guard: Option<memb::Guard>,
        seen: std::sync::mpsc::Sender<(bool, bool)>,
    }
    impl Drop for Kept {
        fn drop(&mut self) {
            // The section is still open: a misuse check or `rcu_barrier`
            // must see it, and a raw section must nest in it.
            let inside = memb::read_ongoing();
            raw::memb_read_lock();
            // SAFETY: the raw section opened just above.
            unsafe { raw::memb_read_unlock() };
            drop(self.guard.take());
            let _ = self.seen.send((inside, memb::read_ongoing()));
        }
    }
    thread_local! {
        static KEPT: std::cell::RefCell<Option<Kept>> = const { std::cell::RefCell::new(None) };
    }
    let (seen, observed) = std::sync::mpsc::channel();
    thread::spawn(move || {
        KEPT.with(|kept| *kept.borrow_mut() = Some(Kept { guard: None, seen }));
        let guard = memb::read_lock();
        KEPT.with(|kept| kept.borrow_mut().as_mut().unwrap().guard = Some(guard));
    })
    .join()
    .unwrap();
    assert_eq!(
        observed.recv().unwrap(),
        (true, false),
        "read_ongoing() in a destructor that runs after the record's owner: with the guard alive, then after its drop"
    );
    // The section ended: grace periods go on.
    within_a_deadline(
        "memb::synchronize_rcu after the kept section ended",
        LIMIT,
        memb::synchronize_rcu,
    );
}
