//! Dropped domains give back all their memory: the registry the fork hooks
//! walk keeps no dropped domain's allocation once a burst of drops is over.
//! A counting global allocator measures it.
//!
//! This file holds one test so that no other test's allocations run while it
//! counts.
#![cfg(not(loom))]

use hazptr::Domain;
use test_support::CountingAllocator;

#[global_allocator]
static GLOBAL: CountingAllocator = CountingAllocator::under_the_test_harness();

const DOMAINS: usize = 10_000;

/// The deleter of the retired objects.
///
/// # Safety
///
/// `p` came from `Box::into_raw` and is freed by nobody else.
unsafe fn free_box(p: *mut u64) {
    // SAFETY: the caller's contract.
    drop(unsafe { Box::from_raw(p) });
}

#[test]
fn dropped_domains_leave_no_memory_behind() {
    // Settles what the first domain allocates for good (its id counter,
    // the fence mode, the registry's first vector).
    drop(Domain::new());
    let before = GLOBAL.live_bytes();
    for round in 0..3 {
        let mut domains: Vec<Domain> = (0..DOMAINS).map(|_| Domain::new()).collect();
        // Used, so that each has a slot block and a retired object to free;
        // by a thread that exits before the drops (a thread keeps what it
        // registered in until it exits or registers again, as documented).
        // (Joined explicitly: a scope's own join may return before the
        // thread's thread-local destructors have run.)
        std::thread::scope(|s| {
            let user = s.spawn(|| {
                for domain in &domains {
                    drop(domain.guard());
                    let object = Box::into_raw(Box::new(round as u64));
                    // SAFETY: `object` is a fresh `Box`, unpublished, freed by
                    // this deleter once, with the domain at the latest.
                    unsafe { domain.retire(object, free_box) };
                }
            });
            user.join().unwrap();
        });
        // Dropped in a different order each round.
        match round {
            0 => domains.clear(),
            1 => domains.drain(..).rev().for_each(drop),
            _ => {
                while domains.len() > 1 {
                    domains.swap_remove(domains.len() / 2);
                }
                domains.clear();
            }
        }
        drop(domains);
        let kept = GLOBAL.live_bytes() - before;
        // Each dropped domain's registry entry held about 512 bytes (5 MB
        // here) until the next domain was created.
        assert!(
            kept < 64 << 10,
            "round {round}: {kept} bytes still allocated after {DOMAINS} domains were dropped"
        );
    }
}
