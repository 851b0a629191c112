//! A retire inside a retire on one thread: a global allocator whose
//! `dealloc` retires, called by the first retire's batch growth. The batch
//! is mid-push then, and a second push would take a second `&mut` to it;
//! hazptr aborts with a message instead. Runs in a child process (the
//! abort), with an allocator of its own, so this file holds one test.
#![cfg(all(not(loom), not(miri)))]

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

/// Set in the child: run the case instead of starting a child.
const CHILD: &str = "HAZPTR_RETIRE_REENTRY_CHILD";

thread_local! {
    /// Armed by the case just before the retire whose push grows the batch.
    static RETIRE_ON_DEALLOC: Cell<bool> = const { Cell::new(false) };
}

/// `System`, with `realloc` left to the default (alloc, copy, dealloc), so
/// that a growing `Vec` frees its old buffer through `dealloc`; that
/// `dealloc` retires once when the case armed it.
struct RetiringAllocator;

// SAFETY: every method forwards to `System` with the same arguments; the
// retire in `dealloc` happens after the block was freed and touches only a
// static.
unsafe impl GlobalAlloc for RetiringAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded contract.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded contract.
        unsafe { System.dealloc(ptr, layout) };
        // `try_with`: the thread-local may be gone at thread exit.
        if RETIRE_ON_DEALLOC
            .try_with(|armed| armed.replace(false))
            .unwrap_or(false)
        {
            // SAFETY: `TARGET` is a static nobody publishes or frees; the
            // deleter does nothing.
            unsafe { hazptr::retire(std::ptr::addr_of!(TARGET).cast_mut(), ignore) };
        }
    }
}

#[global_allocator]
static GLOBAL: RetiringAllocator = RetiringAllocator;

static TARGET: u64 = 0;

/// A deleter for objects that are not freed.
unsafe fn ignore(_: *mut u64) {}

#[test]
fn a_retire_from_the_allocator_inside_a_retire_aborts_with_a_message() {
    const TEST: &str = "a_retire_from_the_allocator_inside_a_retire_aborts_with_a_message";
    if std::env::var_os(CHILD).is_some() {
        // Registers the thread (a slot block and its empty batch) untimed.
        drop(hazptr::Guard::new());
        // Pushes until the batch's buffer grows: every capacity is a power
        // of two, so within 64 pushes one of them frees the old buffer
        // (a hand-over at 64 empties the batch, and the next push allocates
        // anew without freeing, so the loop stops at the first growth).
        for _ in 0..64 {
            RETIRE_ON_DEALLOC.with(|armed| armed.set(true));
            // SAFETY: as in `dealloc`.
            unsafe { hazptr::retire(std::ptr::addr_of!(TARGET).cast_mut(), ignore) };
            if RETIRE_ON_DEALLOC.with(|armed| armed.get()) {
                // No dealloc in that retire: disarm for what follows.
                RETIRE_ON_DEALLOC.with(|armed| armed.set(false));
            } else {
                panic!("the allocator's retire inside a retire returned");
            }
        }
        panic!("no retire grew its batch");
    }
    let (status, stderr) = test_support::run_in_a_child_process(TEST, CHILD, "1");
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(
        status.signal(),
        Some(libc::SIGABRT),
        "the child was not aborted ({status:?}); stderr:\n{stderr}"
    );
    assert!(
        stderr.contains(
            "hazptr: a retire ran inside another retire on the same thread (from a global \
             allocator"
        ),
        "no message naming the misuse; stderr:\n{stderr}"
    );
}
