//! Acquiring and releasing a guard allocates nothing once the thread is
//! registered: a counting global allocator shows it, for the global domain's
//! fast path (`Guard::new`, `hazptr::acquire`) and a user domain's.
//!
//! This file holds one test so that no other test's allocations run while it
//! counts.
#![cfg(not(loom))]

use hazptr::{Domain, Guard};
use std::sync::atomic::AtomicPtr;
use std::sync::atomic::Ordering::Relaxed;
use test_support::CountingAllocator;

#[global_allocator]
static GLOBAL: CountingAllocator = CountingAllocator::under_the_test_harness();

/// 1,000 acquires and releases of each kind, after one of each (which
/// registers the thread), allocate nothing. Deterministic: this thread alone
/// runs meanwhile, but for the harness's main thread, which the allocator
/// leaves out (it books this test as the test starts: on a loaded machine 2
/// runs in 30 counted its 4 allocations so). (Catches `global_wildcard` handing out a new leaked word
/// per call, `Some(Box::leak(..))` for the static's: every `Guard::new`
/// then allocates, and readers take their generation from a word no scan
/// flips.)
#[test]
fn acquiring_a_guard_allocates_nothing() {
    let domain = Domain::new();
    let shared = AtomicPtr::new(Box::into_raw(Box::new(5u64)));
    let round = || {
        let mut guard = Guard::new();
        assert_eq!(guard.protect_ptr(&shared), shared.load(Relaxed));
        drop(guard);
        let (guard, _) = hazptr::acquire(&shared);
        drop(guard);
        let (guard, _) = domain.acquire(&shared);
        drop(guard);
    };
    round();
    let before = GLOBAL.allocations();
    for _ in 0..1_000 {
        round();
    }
    let allocations = GLOBAL.allocations() - before;
    assert_eq!(allocations, 0, "allocations in 1,000 rounds of acquires");
    // SAFETY: never shared with another thread; no guard remains.
    drop(unsafe { Box::from_raw(shared.into_inner()) });
}
