//! The raw layer with real threads: `dereference` under both flavors'
//! guards, and `defer_drop_box`, which frees only after the readers that
//! could reach the object have left, and exactly once.

use rcu_lite::qsbr::{self, QsbrThread};
use rcu_lite::{Memb, Qsbr, memb, raw};
use std::sync::Arc;
use std::sync::atomic::Ordering::{AcqRel, SeqCst};
use std::sync::atomic::{AtomicPtr, AtomicUsize};
use std::time::Duration;
use test_support::DropCounted as Counted;

/// How long a grace period or barrier may take before the test counts it as
/// never ending (a lost wake-up): generous, for a loaded 2-CPU machine.
const LIMIT: Duration = Duration::from_secs(60);

fn published(value: u64, drops: &Arc<AtomicUsize>) -> *mut Counted {
    Box::into_raw(Box::new(Counted::new(value, drops)))
}

#[test]
fn dereference_reads_what_was_published_under_either_flavor() {
    let drops = Arc::new(AtomicUsize::new(0));
    let slot = AtomicPtr::new(std::ptr::null_mut());
    {
        let guard = memb::read_lock();
        // SAFETY: null so far; every object stored below is freed only after
        // the sections end (the final `Box::from_raw`).
        assert!(unsafe { raw::dereference(&slot, &guard) }.is_none());
    }
    slot.store(published(7, &drops), SeqCst);
    {
        let guard = memb::read_lock();
        // SAFETY: as above.
        let seen = unsafe { raw::dereference(&slot, &guard) };
        assert_eq!(seen.map(|c| c.value), Some(7));
    }
    {
        let registration = QsbrThread::register();
        let guard = registration.read_lock();
        // SAFETY: as above.
        let seen = unsafe { raw::dereference(&slot, &guard) };
        assert_eq!(seen.map(|c| c.value), Some(7));
    }
    // SAFETY: no section is open; from `Box::into_raw`.
    drop(unsafe { Box::from_raw(slot.into_inner()) });
    assert_eq!(drops.load(SeqCst), 1);
}

/// `defer_drop_box` frees the object only after a reader that reached it
/// before the call has left (the barrier that waits for the drop must not
/// return earlier), and frees it once.
#[test]
fn defer_drop_box_waits_for_a_reader_that_reached_the_object() {
    // The process's first grace period registers it for membarrier, which
    // can outlast the reader's hold: pay for it before the check.
    memb::synchronize_rcu();
    let drops = Arc::new(AtomicUsize::new(0));
    let slot = Arc::new(AtomicPtr::new(published(1, &drops)));
    let reader_slot = Arc::clone(&slot);
    let drops_at_leave = Arc::new(AtomicUsize::new(usize::MAX));
    let at_leave = Arc::clone(&drops_at_leave);
    let waiter_slot = Arc::clone(&slot);
    let waiter_drops = Arc::clone(&drops);
    test_support::assert_waits_for_reader(
        "memb::rcu_barrier after raw::defer_drop_box",
        Duration::from_millis(50),
        move || {
            let guard = memb::read_lock();
            // SAFETY: objects leave `slot` through `defer_drop_box::<_, Memb>`
            // or once no section is open.
            let seen = unsafe { raw::dereference(&reader_slot, &guard) };
            assert_eq!(seen.map(|c| c.value), Some(1));
            guard
        },
        move |guard| {
            // Still inside: the object it reached has not been dropped.
            at_leave.store(waiter_drops.load(SeqCst), SeqCst);
            drop(guard);
        },
        || {
            test_support::within_a_deadline("raw::defer_drop_box, then rcu_barrier", LIMIT, {
                let drops = Arc::clone(&drops);
                move || {
                    let old = waiter_slot.swap(published(2, &drops), AcqRel);
                    // SAFETY: from `Box::into_raw`, unpublished by the swap.
                    unsafe { raw::defer_drop_box::<Counted, Memb>(old) };
                    memb::rcu_barrier();
                    assert_eq!(
                        drops.load(SeqCst),
                        1,
                        "rcu_barrier returned before the deferred drop ran"
                    );
                }
            })
        },
    );
    assert_eq!(
        drops_at_leave.load(SeqCst),
        0,
        "the object was dropped while the reader that reached it was inside"
    );
    // Another barrier runs nothing more: dropped once.
    memb::rcu_barrier();
    assert_eq!(drops.load(SeqCst), 1);
    let last = slot.swap(std::ptr::null_mut(), AcqRel);
    // SAFETY: unpublished by the swap, and no section is open.
    drop(unsafe { Box::from_raw(last) });
    assert_eq!(drops.load(SeqCst), 2);
}

/// The same for the qsbr flavor: the drop waits for an online registration's
/// quiescent state.
#[test]
fn defer_drop_box_on_qsbr_waits_for_an_online_reader() {
    qsbr::synchronize_rcu();
    let drops = Arc::new(AtomicUsize::new(0));
    let slot = Arc::new(AtomicPtr::new(published(1, &drops)));
    let reader_slot = Arc::clone(&slot);
    let waiter_slot = Arc::clone(&slot);
    let waiter_drops = Arc::clone(&drops);
    let drops_at_leave = Arc::new(AtomicUsize::new(usize::MAX));
    let at_leave = Arc::clone(&drops_at_leave);
    test_support::assert_waits_for_reader(
        "qsbr::rcu_barrier after raw::defer_drop_box",
        Duration::from_millis(50),
        move || {
            let registration = QsbrThread::register();
            {
                let guard = registration.read_lock();
                // SAFETY: as in the memb test.
                let seen = unsafe { raw::dereference(&reader_slot, &guard) };
                assert_eq!(seen.map(|c| c.value), Some(1));
            }
            registration
        },
        move |registration| {
            at_leave.store(waiter_drops.load(SeqCst), SeqCst);
            // Dropping the registration takes it offline.
            drop(registration);
        },
        || {
            test_support::within_a_deadline("raw::defer_drop_box (qsbr)", LIMIT, {
                let drops = Arc::clone(&drops);
                move || {
                    let old = waiter_slot.swap(published(2, &drops), AcqRel);
                    // SAFETY: from `Box::into_raw`, unpublished by the swap.
                    unsafe { raw::defer_drop_box::<Counted, Qsbr>(old) };
                    qsbr::rcu_barrier();
                    assert_eq!(drops.load(SeqCst), 1);
                }
            })
        },
    );
    assert_eq!(
        drops_at_leave.load(SeqCst),
        0,
        "the object was dropped while the registration that reached it was online"
    );
    let last = slot.swap(std::ptr::null_mut(), AcqRel);
    // SAFETY: unpublished by the swap, and no registration is online.
    drop(unsafe { Box::from_raw(last) });
}
