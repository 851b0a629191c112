//! Dropping a domain gives back all of its memory: a counting global
//! allocator shows that creating and dropping domains, over and over, leaves
//! no more bytes allocated than before.
//!
//! This file holds one test so that no other test's allocations run while it
//! counts.
#![cfg(not(loom))]

use hazptr::Domain;
use test_support::CountingAllocator;

#[global_allocator]
static GLOBAL: CountingAllocator = CountingAllocator::under_the_test_harness();

/// Creating and dropping a domain 100 times leaves no more bytes allocated
/// than before (after a warm-up: the domain registry keeps the last dropped
/// domain's `Arc` allocation, through a `Weak`, until the next domain
/// registers). Deterministic: this thread alone allocates meanwhile (the
/// harness's main thread, which books this test as it starts, is left out).
/// (Catches `Drop for Shared` not freeing a user domain's wildcard word,
/// `!self.own_wildcard.is_null()` as `self.own_wildcard.is_null()`: each
/// dropped domain then leaks its 128-byte word.)
#[test]
fn dropping_a_domain_gives_back_all_its_memory() {
    for _ in 0..3 {
        drop(Domain::new());
    }
    let before = GLOBAL.live_bytes();
    for _ in 0..100 {
        drop(Domain::new());
    }
    let after = GLOBAL.live_bytes();
    assert!(
        after <= before,
        "{} bytes still allocated after creating and dropping 100 domains",
        after - before
    );
}
