//! `synchronize` allocates nothing per call: its waiter lives on the caller's
//! stack and the scanner reuses its buffers. A counting global allocator
//! proves it, with concurrent callers sharing scans and a reader whose guards
//! the scans find.
//!
//! This file holds one test so that no other test's allocations run while it
//! counts.
#![cfg(not(loom))]

mod common;

use hazptr::Domain;
use std::sync::Barrier;
use std::sync::atomic::Ordering::{AcqRel, Relaxed, SeqCst};
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicUsize};
use test_support::CountingAllocator;

#[global_allocator]
static GLOBAL: CountingAllocator = CountingAllocator::under_the_test_harness();

/// How long the test may run before it counts as a hang: a caller of the
/// shared scan or the scanner thread asleep on a futex nobody wakes, or a
/// domain's drop waiting for a scanner thread that never stops. It then fails
/// with a message instead of stalling the binary. Alone it takes well under a
/// second; the margin is for CI's 2 busy cores.
const TEST_DEADLINE: std::time::Duration = std::time::Duration::from_secs(30);

const CALLERS: usize = 4;
const CALLS: usize = 2_000;

#[test]
// Under miri the scanner thread's wait reads /proc/self/task, which miri
// refuses; `domain.rs` runs the shared scan under miri instead.
#[cfg_attr(miri, ignore = "reads /proc, which miri does not offer")]
fn synchronize_allocates_nothing_per_call() {
    if std::env::var_os(FIRST_SLEEP_CHILD).is_some() {
        return a_first_wait_that_sleeps_counted();
    }
    // Counted: the callers, the reader and the scanner thread. Not counted:
    // the deadline's watcher (this thread), which allocates as it first
    // blocks on the body's channel, and the harness's main thread, which
    // books this test as it starts (on a loaded machine either can happen
    // inside the count).
    test_support::within_a_deadline(
        "concurrent synchronize callers, counted",
        TEST_DEADLINE,
        || {
            for domain in [Domain::new(), Domain::builder().shared_scan(false).build()] {
                // Its start-up allocates (std keeps a copy of its name), and
                // the warm-up's callers might not queue, so might not start it.
                if domain.shared_scan() {
                    common::start_scanner_thread(&domain, TEST_DEADLINE / 2);
                }
                // Objects the callers "unpublish": fixed addresses, allocated up front.
                let objects: Vec<AtomicPtr<u64>> = (0..CALLERS as u64)
                    .map(|i| AtomicPtr::new(Box::into_raw(Box::new(i))))
                    .collect();
                let stop = AtomicBool::new(false);
                let ready = Barrier::new(CALLERS + 2);
                let start = Barrier::new(CALLERS + 2);
                let counted = Barrier::new(CALLERS + 2);
                let finished = Barrier::new(CALLERS + 2);
                let before = AtomicUsize::new(0);
                let done = AtomicUsize::new(0);
                std::thread::scope(|s| {
                    // A reader protecting the objects in turn, so scans find hits.
                    s.spawn(|| {
                        let mut guard = domain.guard();
                        ready.wait();
                        start.wait();
                        let mut i = 0;
                        while !stop.load(Relaxed) {
                            std::hint::black_box(guard.protect_ptr(&objects[i % CALLERS]));
                            guard.reset();
                            i += 1;
                        }
                        drop(guard);
                        counted.wait();
                        finished.wait();
                    });
                    for c in 0..CALLERS {
                        let (domain, objects, ready, start, counted, finished, done) = (
                            &domain, &objects, &ready, &start, &counted, &finished, &done,
                        );
                        s.spawn(move || {
                            let addr = objects[c].load(Relaxed).cast_const();
                            // Warm-up: registration, the scanner thread, buffers.
                            for _ in 0..200 {
                                domain.synchronize(addr);
                            }
                            ready.wait();
                            start.wait();
                            for _ in 0..CALLS {
                                domain.synchronize(addr);
                            }
                            done.fetch_add(1, SeqCst);
                            counted.wait();
                            finished.wait();
                        });
                    }
                    // Counting starts once every thread is warmed up and waiting,
                    ready.wait();
                    // and the scanner thread has started: on a loaded machine it
                    // may not have run yet (its callers drive the scans
                    // meanwhile), and its start-up allocates (std keeps a copy of
                    // its name): 1 allocation counted in 7 of 48 runs under
                    // SYNCPRIMS_FENCE=seqcst and load. Started means seen asleep
                    // three times in a row (it sleeps once no caller queues
                    // work, as none does now, and its start-up does not block);
                    // its name, which it sets first, says nothing of the
                    // allocation after it.
                    if domain.shared_scan() {
                        test_support::until_asleep(
                            &format!("hazptr-scan-{}", domain.id()),
                            3,
                            TEST_DEADLINE / 2,
                            "the scanner thread, once the warm-up was over",
                        );
                    }
                    before.store(GLOBAL.allocations(), SeqCst);
                    start.wait();
                    // The reader stops after the callers are done (sleeping does not
                    // allocate).
                    while done.load(SeqCst) < CALLERS {
                        std::thread::sleep(std::time::Duration::from_millis(1));
                    }
                    stop.store(true, SeqCst);
                    counted.wait();
                    let during = GLOBAL.allocations() - before.load(SeqCst);
                    finished.wait();
                    assert_eq!(
                        during,
                        0,
                        "{during} allocations during {} synchronize calls ({domain:?})",
                        CALLERS * CALLS
                    );
                });
                for o in objects {
                    let p = o.swap(std::ptr::null_mut(), AcqRel);
                    // SAFETY: every thread is gone; allocated by `Box::new` above.
                    drop(unsafe { Box::from_raw(p) });
                }
            }
        },
    );
    // Then, in a child process (whose spawn allocates here only once the
    // counting above is over), the first wait of the process that sleeps,
    // with the stall warnings' timeout set: reading that variable
    // allocates, and until 2026-12-07 the first wait to sleep read it (one
    // allocation in a `synchronize`; the warm-up above absorbed it).
    test_support::stderr_of_a_passing_child_process(
        "synchronize_allocates_nothing_per_call",
        FIRST_SLEEP_CHILD,
        "1",
        &[(test_support::stall::TIMEOUT_ENV, "100")],
    );
}

/// Set in the child process that counts a first wait that sleeps.
const FIRST_SLEEP_CHILD: &str = "HAZPTR_NO_ALLOC_FIRST_SLEEP_CHILD";

/// The child's case: in a domain of each scan mode, made before counting
/// starts, a reader protects an object until this thread, synchronizing on
/// it, has been seen asleep (the first wait of the process that sleeps),
/// and the `synchronize` allocates nothing. (The shared mode's scanner
/// thread, started by the call, allocates as it starts: it is started
/// beforehand.)
fn a_first_wait_that_sleeps_counted() {
    for domain in [Domain::builder().shared_scan(false).build(), Domain::new()] {
        if domain.shared_scan() {
            common::start_scanner_thread(&domain, TEST_DEADLINE / 2);
        }
        let object = AtomicPtr::new(Box::into_raw(Box::new(7_u64)));
        let addr = object.load(Relaxed).cast_const();
        // Registration and buffers, with nothing to wait for.
        domain.synchronize(addr);
        let protected = Barrier::new(2);
        let counting = Barrier::new(2);
        let counted = Barrier::new(2);
        std::thread::scope(|s| {
            // Named, so that this thread is the only one with the test's
            // name, which the reader looks for.
            std::thread::Builder::new()
                .name("no-alloc-reader".into())
                .spawn_scoped(s, || {
                    let mut guard = domain.guard();
                    std::hint::black_box(guard.protect_ptr(&object));
                    protected.wait();
                    counting.wait();
                    // Until the synchronize sleeps (its backoff's sleeps, or
                    // the shared scan's futex): a check that ran no sleep
                    // would check nothing. Reading /proc allocates: not
                    // counted.
                    test_support::uncounted(|| {
                        test_support::until_asleep(
                            "synchronize_allocates_nothing_per_call",
                            3,
                            TEST_DEADLINE / 2,
                            "the synchronize, waiting for the reader",
                        );
                    });
                    drop(guard);
                    // The reader's exit stays out of the count.
                    counted.wait();
                })
                .expect("spawn the reader");
            protected.wait();
            let before = GLOBAL.allocations();
            counting.wait();
            domain.synchronize(addr);
            let during = GLOBAL.allocations() - before;
            counted.wait();
            assert_eq!(
                during, 0,
                "{during} allocations in a synchronize that slept for a reader, with \
                 SYNCPRIMS_STALL_TIMEOUT_S set ({domain:?})"
            );
        });
        // SAFETY: the reader is gone; allocated by `Box::new` above.
        drop(unsafe { Box::from_raw(object.swap(std::ptr::null_mut(), AcqRel)) });
    }
}
