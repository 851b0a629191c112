//! `hazptr::retire` and `hazptr::reclaim`, the global domain's free
//! functions. A binary of its own: no other test retires to the global
//! domain meanwhile, so no other thread's pass can take the object off the
//! list (`Domain::reclaim` leaves those out of its count).
#![cfg(not(loom))]

use hazptr::Guard;
use std::sync::Arc;
use std::sync::atomic::Ordering::{AcqRel, SeqCst};
use std::sync::atomic::{AtomicPtr, AtomicUsize};
use std::time::Duration;
use test_support::DropCounted as Tracked;

/// How many times [`free_tracked`] ran.
static DELETER_CALLS: AtomicUsize = AtomicUsize::new(0);

/// The deleter passed to `hazptr::retire`: frees the `Box<Tracked>`.
///
/// # Safety
///
/// `ptr` came from `Box::into_raw` and is freed only here, once.
unsafe fn free_tracked(ptr: *mut Tracked) {
    DELETER_CALLS.fetch_add(1, SeqCst);
    // SAFETY: per the contract.
    drop(unsafe { Box::from_raw(ptr) });
}

/// `hazptr::retire` hands the object to the global domain: a guard of the
/// global domain (`Guard::new`) keeps it through `hazptr::reclaim()`, and
/// once the guard is gone the next `hazptr::reclaim()` runs the deleter on
/// it, once; a second object, never protected, goes in the first pass.
#[test]
fn retire_frees_in_the_global_domain_after_reclaim() {
    test_support::within_a_deadline(
        "hazptr::retire and hazptr::reclaim (a pass that waited)",
        Duration::from_secs(30),
        || {
            let drops = Arc::new(AtomicUsize::new(0));
            let shared = AtomicPtr::new(Box::into_raw(Box::new(Tracked::new(7, &drops))));
            let mut guard = Guard::new();
            let protected = guard.protect_ptr(&shared);
            let unlinked = shared.swap(std::ptr::null_mut(), AcqRel);
            assert_eq!(unlinked, protected);
            // SAFETY: unpublished by the swap, retired once; the deleter
            // frees a `Box` on any thread (`Tracked: Send + 'static`).
            unsafe { hazptr::retire(unlinked, free_tracked) };
            let unprotected = Box::into_raw(Box::new(Tracked::new(8, &drops)));
            // SAFETY: never published; retired once.
            unsafe { hazptr::retire(unprotected, free_tracked) };
            // (With a forced slow path a retire may run a pass itself, so
            // the count this pass returns is not checked.)
            hazptr::reclaim();
            assert_eq!(
                drops.load(SeqCst),
                1,
                "the unprotected object alone: the other is protected"
            );
            // SAFETY: still protected by `guard`.
            assert_eq!(unsafe { (*protected).value }, 7);
            drop(guard);
            assert_eq!(hazptr::reclaim(), 1, "the object the guard protected");
            assert_eq!(drops.load(SeqCst), 2);
            assert_eq!(hazptr::reclaim(), 0, "an object freed twice, or left over");
            assert_eq!(
                DELETER_CALLS.load(SeqCst),
                2,
                "the deleter runs once per object"
            );
        },
    );
}
