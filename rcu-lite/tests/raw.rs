//! The raw layer with real threads: `dereference` under both flavors'
//! guards, and `defer_drop_box`, which frees only after the readers that
//! could reach the object have left, and exactly once.

use rcu_lite::qsbr::QsbrThread;
use rcu_lite::{Flavor, Memb, Qsbr, memb, raw};
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

/// `defer_drop_box` of flavor `F` frees the object only after a reader that
/// reached it before the call has left (the barrier that waits for the drop
/// must not return earlier), and frees it once. The reader thread calls
/// `enter`, which reads the object in a section and returns what keeps the
/// thread a reader (a memb guard, an online qsbr registration); dropping it
/// is the reader's leaving.
fn assert_deferred_drop_waits_for_the_reader<F: Flavor, R: 'static>(
    what: &str,
    enter: fn(&AtomicPtr<Counted>) -> R,
) {
    // The process's first grace period registers it for membarrier, which
    // can outlast the reader's hold: pay for it before the check.
    F::synchronize_rcu();
    let drops = Arc::new(AtomicUsize::new(0));
    let slot = Arc::new(AtomicPtr::new(published(1, &drops)));
    let reader_slot = Arc::clone(&slot);
    let waiter_slot = Arc::clone(&slot);
    let drops_at_leave = Arc::new(AtomicUsize::new(usize::MAX));
    let at_leave = Arc::clone(&drops_at_leave);
    let reader_drops = Arc::clone(&drops);
    test_support::assert_waits_for_reader(
        &format!("{what}: rcu_barrier after raw::defer_drop_box"),
        Duration::from_millis(50),
        move || enter(&reader_slot),
        move |reader| {
            // Still a reader: the object it reached must not be dropped yet.
            at_leave.store(reader_drops.load(SeqCst), SeqCst);
            drop(reader);
        },
        || {
            test_support::within_a_deadline("raw::defer_drop_box, then rcu_barrier", LIMIT, {
                let drops = Arc::clone(&drops);
                move || {
                    let old = waiter_slot.swap(published(2, &drops), AcqRel);
                    // SAFETY: from `Box::into_raw`, unpublished by the swap.
                    unsafe { raw::defer_drop_box::<Counted, F>(old) };
                    F::rcu_barrier();
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
        "{what}: the object was dropped while the reader that reached it was still one"
    );
    // Another barrier runs nothing more: dropped once.
    F::rcu_barrier();
    assert_eq!(drops.load(SeqCst), 1);
    let last = slot.swap(std::ptr::null_mut(), AcqRel);
    // SAFETY: unpublished by the swap, and no reader is left.
    drop(unsafe { Box::from_raw(last) });
    assert_eq!(drops.load(SeqCst), 2);
}

#[test]
fn defer_drop_box_waits_for_a_memb_reader_that_reached_the_object() {
    assert_deferred_drop_waits_for_the_reader::<Memb, _>("memb", |slot| {
        let guard = memb::read_lock();
        // SAFETY: objects leave the slot through `defer_drop_box::<_, Memb>`
        // or once no section is open.
        let seen = unsafe { raw::dereference(slot, &guard) };
        assert_eq!(seen.map(|c| c.value), Some(1));
        guard
    });
}

/// For qsbr the reader is an online registration, whatever sections it
/// ended: the drop waits for its quiescent state (here, going offline).
#[test]
fn defer_drop_box_waits_for_a_qsbr_registration_that_reached_the_object() {
    assert_deferred_drop_waits_for_the_reader::<Qsbr, _>("qsbr", |slot| {
        let registration = QsbrThread::register();
        {
            let guard = registration.read_lock();
            // SAFETY: objects leave the slot through
            // `defer_drop_box::<_, Qsbr>` or once no registration is online.
            let seen = unsafe { raw::dereference(slot, &guard) };
            assert_eq!(seen.map(|c| c.value), Some(1));
        }
        registration
    });
}
