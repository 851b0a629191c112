//! hazptr with the fences forced to their `fence(SeqCst)` fallback (a kernel
//! without membarrier, or `SYNCPRIMS_FENCE=seqcst`).
//!
//! There a guard on a block's first slot would issue a compiler fence where a
//! full fence is needed, so blocks keep that slot back for life (`slot.rs`,
//! "The first slot and the fence mode"): every guard takes another slot and
//! calls `fence::light()`. These tests check that the slot stays kept back
//! through everything that frees slots (a guard's drop, a thread's exit, a
//! fork child's reset), and that protection, `synchronize` and reclamation
//! work as in membarrier mode. Every test forces the mode first; it is decided
//! once per process, so the first one decides it for all.
//!
//! Under loom, miri and ThreadSanitizer the fences are modelled and no slot is
//! kept back, so this file does not apply there.
#![cfg(not(any(miri, loom, syncprims_tsan)))]

use hazptr::{Domain, SLOTS_PER_THREAD, fork, usable_slots_per_thread};
use membarrier_sim::fence::{self, Mode};
use std::sync::atomic::{AtomicPtr, AtomicUsize, Ordering::Relaxed};
use std::sync::mpsc;
use std::thread;
use std::time::Duration;
use test_support::{ForkHooks, assert_child_succeeded, fork_and_wait, within_a_deadline};

/// How long a grace period may take before the test counts it as never
/// ending: generous, for a loaded 2-CPU machine.
const LIMIT: Duration = Duration::from_secs(60);

fn seqcst() {
    assert_eq!(
        fence::force(Mode::SeqCst),
        Ok(()),
        "a fence ran before this test forced the SeqCst mode"
    );
}

fn object(value: u64) -> AtomicPtr<u64> {
    AtomicPtr::new(Box::into_raw(Box::new(value)))
}

/// Frees what `object` made.
fn free(object: AtomicPtr<u64>) {
    // SAFETY: allocated by `Box::new` in `object`; no guard protects it any
    // more (the callers' guards have dropped).
    drop(unsafe { Box::from_raw(object.into_inner()) });
}

/// Takes `SLOTS_PER_THREAD` guards in `domain` on the calling thread, each
/// protecting its own object, and checks that only the last one had to take
/// a backup slot: one block slot is kept back.
fn all_but_one_block_slot_serve_guards(domain: &Domain) {
    let objects: Vec<AtomicPtr<u64>> = (0..SLOTS_PER_THREAD as u64).map(object).collect();
    let guards: Vec<_> = objects
        .iter()
        .enumerate()
        .map(|(i, o)| {
            let (guard, p) = domain.acquire(o);
            // SAFETY: protected by `guard`; freed only after the guards drop.
            assert_eq!(unsafe { *p }, i as u64);
            assert_eq!(
                guard.is_backup(),
                i == SLOTS_PER_THREAD - 1,
                "guard {i} of {SLOTS_PER_THREAD} in SeqCst mode (backup slot?)"
            );
            guard
        })
        .collect();
    drop(guards);
    objects.into_iter().for_each(free);
}

#[test]
#[cfg_attr(
    feature = "force-slow-path",
    ignore = "tests the threads' slot blocks, which the force-slow-path feature leaves unused"
)]
fn guards_leave_the_first_block_slot_to_no_one() {
    seqcst();
    assert_eq!(usable_slots_per_thread(), SLOTS_PER_THREAD - 1);
    thread::spawn(|| {
        all_but_one_block_slot_serve_guards(Domain::global());
        let domain = Domain::new();
        all_but_one_block_slot_serve_guards(&domain);
        // Dropped guards gave their slots back, but not the first one.
        all_but_one_block_slot_serve_guards(&domain);
    })
    .join()
    .expect("the guards were placed as expected");
}

/// A block whose thread exited, its first slot still kept back, counts as
/// free: the next thread takes it over instead of making a new one.
#[test]
#[cfg_attr(
    feature = "force-slow-path",
    ignore = "tests the threads' slot blocks, which the force-slow-path feature leaves unused"
)]
fn a_block_goes_to_the_next_thread_with_its_first_slot_still_kept() {
    seqcst();
    let domain: &'static Domain = Box::leak(Box::new(Domain::new()));
    let shared: &'static AtomicPtr<u64> = Box::leak(Box::new(object(5)));
    for _ in 0..4 {
        // A joined (not scoped) thread: `join` returns after its
        // thread-local destructors, which give its block back, have run.
        thread::spawn(move || {
            let (guard, p) = domain.acquire(shared);
            // SAFETY: protected by `guard`; never freed.
            assert_eq!(unsafe { *p }, 5);
            drop(guard);
            all_but_one_block_slot_serve_guards(domain);
        })
        .join()
        .expect("the guards were placed as expected");
    }
    assert_eq!(
        domain.thread_blocks(),
        1,
        "threads that ran one after another did not take over the block of the one before"
    );
}

/// `synchronize` waits for a reader on a SeqCst-mode block, and retired
/// objects are freed once, when no guard protects them.
#[test]
fn synchronize_and_reclamation_work() {
    seqcst();
    static SHARED: AtomicPtr<u64> = AtomicPtr::new(std::ptr::null_mut());
    SHARED.store(Box::into_raw(Box::new(9)), Relaxed);
    let address = SHARED.load(Relaxed) as usize;
    test_support::assert_waits_for_reader(
        "Domain::synchronize behind a guard (SeqCst fences)",
        Duration::from_millis(30),
        move || {
            let (guard, p) = Domain::global().acquire(&SHARED);
            assert_eq!(p as usize, address);
            guard
        },
        drop,
        || {
            within_a_deadline("synchronize (SeqCst fences)", LIMIT, move || {
                Domain::global().synchronize(address as *const u64);
            });
        },
    );
    // SAFETY: the guard has dropped and `synchronize` returned after it.
    drop(unsafe { Box::from_raw(address as *mut u64) });

    static FREED: AtomicUsize = AtomicUsize::new(0);
    fn count_free(p: *mut u64) {
        FREED.fetch_add(1, Relaxed);
        // SAFETY: allocated by `Box::new` below, retired once.
        drop(unsafe { Box::from_raw(p) });
    }
    let domain = Domain::new();
    let kept = object(1);
    let (guard, p) = domain.acquire(&kept);
    // SAFETY: unpublished (nothing else reads `kept` or `gone`); `count_free`
    // matches their allocation.
    unsafe {
        domain.retire(p, count_free);
        domain.retire(object(2).into_inner(), count_free);
    }
    domain.reclaim();
    assert_eq!(
        FREED.load(Relaxed),
        1,
        "only the unprotected object is freed"
    );
    drop(guard);
    domain.reclaim();
    assert_eq!(
        FREED.load(Relaxed),
        2,
        "the object freed once its guard dropped"
    );
}

const HOOKS: ForkHooks = ForkHooks {
    before: fork::before_fork,
    after_parent: fork::after_fork_parent,
    after_child: fork::after_fork_child,
};

/// A fork child frees the slots of threads that did not come along, and
/// keeps back the first slot of their blocks as it was: a thread of the
/// child that takes such a block still gets one slot fewer.
#[test]
#[cfg_attr(
    feature = "force-slow-path",
    ignore = "tests the threads' slot blocks, which the force-slow-path feature leaves unused"
)]
fn a_fork_child_frees_foreign_slots_but_keeps_the_first_one_back() {
    test_support::forking_test(
        "a_fork_child_frees_foreign_slots_but_keeps_the_first_one_back",
        || {
            seqcst();
            let domain: &'static Domain = Box::leak(Box::new(Domain::new()));
            let shared: &'static AtomicPtr<u64> = Box::leak(Box::new(object(3)));
            let (held_tx, held_rx) = mpsc::channel();
            let (release_tx, release_rx) = mpsc::channel::<()>();
            let holder = thread::spawn(move || {
                let (guard, _) = domain.acquire(shared);
                held_tx.send(()).expect("the test waits");
                release_rx.recv().expect("the test releases the holder");
                drop(guard);
            });
            held_rx.recv().expect("the holder protects");
            assert_eq!(domain.thread_blocks(), 1);
            // SAFETY: the child takes guards of its own; it uses no reference
            // that another thread's guard protected.
            let status = unsafe {
                fork_and_wait(HOOKS, move || {
                    // The holder did not come along: its block is free here, and this
                    // thread takes it over.
                    thread::spawn(move || all_but_one_block_slot_serve_guards(domain))
                        .join()
                        .expect("the child's guards were placed as expected");
                    assert_eq!(
                        domain.thread_blocks(),
                        1,
                        "the child made a block of its own"
                    );
                })
            };
            release_tx.send(()).expect("the holder waits");
            holder.join().expect("the holder exits");
            assert_child_succeeded(status, "its guards on the holder's freed block");
        },
    );
}
