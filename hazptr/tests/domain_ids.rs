//! The first user domains of a process, which the global domain's id must
//! not be handed to.
//!
//! This file holds one test so that its domains are the first the process
//! creates.
#![cfg(not(loom))]

use hazptr::{Domain, Guard};
use std::sync::Arc;
use std::sync::atomic::Ordering::{AcqRel, SeqCst};
use std::sync::atomic::{AtomicPtr, AtomicUsize};

/// An object whose drop is counted.
struct Tracked(Arc<AtomicUsize>);

impl Drop for Tracked {
    fn drop(&mut self) {
        self.0.fetch_add(1, SeqCst);
    }
}

/// The process's first user domains protect apart from the global domain:
/// a guard of each, taken on a thread that also uses the global domain,
/// keeps its object through that domain's reclamation pass.
/// (Catches user domain ids starting at the global domain's or below,
/// `GLOBAL_ID + 1` as `GLOBAL_ID * 1` or `GLOBAL_ID - 1`: the user domain
/// with the global domain's id finds the thread's global block in its
/// cache, so its guards sit in a block its passes never scan, and it frees
/// a protected object. The same for the thread's cache handing out its
/// global block for a user domain's id, `id == GLOBAL_ID` as `!=` in
/// `FastCache::block_of`.)
#[test]
fn the_first_user_domains_protect_apart_from_the_global_domain() {
    let domains = [Domain::new(), Domain::new()];
    assert_eq!(Domain::global().id(), 1);
    let ids = domains.each_ref().map(Domain::id);
    assert!(
        ids[0] > 1 && ids[1] > 1 && ids[0] != ids[1],
        "user domain ids {ids:?}"
    );
    // This thread's global block, which a user domain with the global
    // domain's id would take for its own.
    drop(Guard::new());
    for domain in &domains {
        let drops = Arc::new(AtomicUsize::new(0));
        let shared = AtomicPtr::new(Box::into_raw(Box::new(Tracked(Arc::clone(&drops)))));
        let mut guard = domain.guard();
        let protected = guard.protect_ptr(&shared);
        let old = shared.swap(std::ptr::null_mut(), AcqRel);
        assert_eq!(old, protected);
        // SAFETY: unpublished by the swap, retired once, Box-allocated.
        unsafe { domain.retire_box(old) };
        domain.reclaim();
        assert_eq!(
            drops.load(SeqCst),
            0,
            "a reclamation pass freed an object a guard of its domain protects ({domain:?})"
        );
        drop(guard);
        assert_eq!(domain.reclaim(), 1);
        assert_eq!(drops.load(SeqCst), 1);
    }
}
