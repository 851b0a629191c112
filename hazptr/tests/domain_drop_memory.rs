//! Dropping a domain gives back all of its memory: a counting global
//! allocator shows that creating and dropping domains, over and over, leaves
//! no more bytes allocated than before.
//!
//! This file holds one test so that no other test's allocations run while it
//! counts.
#![cfg(not(loom))]

use hazptr::Domain;
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::AtomicUsize;
use std::sync::atomic::Ordering::Relaxed;

struct Counting;

/// Bytes allocated and freed so far.
static ALLOCATED: AtomicUsize = AtomicUsize::new(0);
static FREED: AtomicUsize = AtomicUsize::new(0);

// SAFETY: forwards to the system allocator and only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATED.fetch_add(layout.size(), Relaxed);
        // SAFETY: forwarded contract.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        FREED.fetch_add(layout.size(), Relaxed);
        // SAFETY: forwarded contract.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        FREED.fetch_add(layout.size(), Relaxed);
        ALLOCATED.fetch_add(new_size, Relaxed);
        // SAFETY: forwarded contract.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Bytes allocated and not yet freed.
fn live_bytes() -> usize {
    ALLOCATED.load(Relaxed) - FREED.load(Relaxed)
}

/// Creating and dropping a domain 100 times leaves no more bytes allocated
/// than before (after a warm-up: the domain registry keeps the last dropped
/// domain's `Arc` allocation, through a `Weak`, until the next domain
/// registers). Deterministic: this thread alone allocates meanwhile.
/// (Catches `Drop for Shared` not freeing a user domain's wildcard word,
/// `!self.own_wildcard.is_null()` as `self.own_wildcard.is_null()`: each
/// dropped domain then leaks its 128-byte word.)
#[test]
fn dropping_a_domain_gives_back_all_its_memory() {
    for _ in 0..3 {
        drop(Domain::new());
    }
    let before = live_bytes();
    for _ in 0..100 {
        drop(Domain::new());
    }
    let after = live_bytes();
    assert!(
        after <= before,
        "{} bytes still allocated after creating and dropping 100 domains",
        after - before
    );
}
