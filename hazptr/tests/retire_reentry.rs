//! A retire inside another retire's push or hand-over on one thread: a
//! global allocator whose `dealloc` retires, called by the growth of the
//! thread's batch (the push) or of the domain's retired list (the hand-over,
//! under the list's mutex). The first would take a second `&mut` to the
//! batch mid-push, the second would push into the batch being drained or
//! wait for the mutex its own thread holds; hazptr aborts with a message
//! instead. A retire from a `dealloc` anywhere else (a reclamation pass
//! freeing its buffers, after the list's mutex is released) is allowed, and
//! the cases go on through such retires. Each case runs in a child process
//! (the abort), with this file's allocator.
#![cfg(all(not(loom), not(miri)))]

use hazptr::Domain;
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::LazyLock;

/// Set in the child: run the case instead of starting a child.
const CHILD: &str = "HAZPTR_RETIRE_REENTRY_CHILD";

thread_local! {
    /// The domain the next `dealloc` on this thread retires into, once.
    static RETIRE_ON_DEALLOC: Cell<Option<&'static Domain>> = const { Cell::new(None) };
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
        if let Ok(Some(domain)) = RETIRE_ON_DEALLOC.try_with(Cell::take) {
            // SAFETY: `TARGET` is a static nobody publishes or frees; the
            // deleter does nothing.
            unsafe { domain.retire(std::ptr::addr_of!(TARGET).cast_mut(), ignore) };
        }
    }
}

#[global_allocator]
static GLOBAL: RetiringAllocator = RetiringAllocator;

static TARGET: u64 = 0;

/// A deleter for objects that are not freed.
unsafe fn ignore(_: *mut u64) {}

/// Retires `TARGET` to `domain` `unarmed` times, then up to `armed` more
/// times with the allocator armed for each; returns only if no retire
/// aborted.
fn retire_armed(domain: &'static Domain, unarmed: usize, armed: usize) {
    // Registers the thread (a slot block and its empty batch) first.
    drop(domain.guard());
    for _ in 0..unarmed {
        // SAFETY: as in `dealloc`.
        unsafe { domain.retire(std::ptr::addr_of!(TARGET).cast_mut(), ignore) };
    }
    for _ in 0..armed {
        RETIRE_ON_DEALLOC.with(|next| next.set(Some(domain)));
        // SAFETY: as in `dealloc`.
        unsafe { domain.retire(std::ptr::addr_of!(TARGET).cast_mut(), ignore) };
    }
    RETIRE_ON_DEALLOC.with(|next| next.set(None));
}

/// Runs `case` in a child and checks that it aborted with the message.
fn aborts_with_the_message(case: &str) {
    let (status, stderr) = test_support::run_in_a_child_process(case, CHILD, "1");
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(
        status.signal(),
        Some(libc::SIGABRT),
        "the child was not aborted ({status:?}); stderr:\n{stderr}"
    );
    assert!(
        stderr.contains(
            "hazptr: a retire ran inside another retire's push or hand-over on the same thread"
        ),
        "no message naming the misuse; stderr:\n{stderr}"
    );
}

/// The batch's buffer grows at its fifth push (capacities are powers of
/// two from 4), freeing the old one: the retire from that `dealloc` runs
/// mid-push. With a forced slow path the push goes to the domain's list,
/// under its mutex, and grows the same way.
#[test]
fn a_retire_from_the_allocator_inside_a_push_aborts_with_a_message() {
    const TEST: &str = "a_retire_from_the_allocator_inside_a_push_aborts_with_a_message";
    if std::env::var_os(CHILD).is_some() {
        retire_armed(Domain::global(), 0, 10_000);
        panic!("10000 armed retires and none aborted");
    }
    aborts_with_the_message(TEST);
}

/// After a first hand-over the batch keeps its capacity of 64 and no longer
/// grows; the domain's list grows at later hand-overs (while no pass takes
/// it: a threshold out of reach leaves only the 2 ms period's passes), under
/// its mutex, and the retire from that `dealloc` runs mid-hand-over.
#[test]
fn a_retire_from_the_allocator_inside_a_hand_over_aborts_with_a_message() {
    const TEST: &str = "a_retire_from_the_allocator_inside_a_hand_over_aborts_with_a_message";
    static DOMAIN: LazyLock<Domain> =
        LazyLock::new(|| Domain::builder().retire_threshold(usize::MAX / 4).build());
    if std::env::var_os(CHILD).is_some() {
        retire_armed(&DOMAIN, 64, 100_000);
        panic!("100000 armed retires and none aborted");
    }
    aborts_with_the_message(TEST);
}
