//! Guards taken in a POSIX key destructor (another library's "at thread
//! exit" hook calling into Rust), past the thread's block slots, leave no
//! memory behind. A thread-local with a destructor first touched there
//! registers a destructor that never runs: until 2026-12-07 the record of
//! the thread's backup slots was one, and every such thread leaked its
//! buffer. A counting global allocator measures it.
//!
//! This file holds one test so that no other test's allocations run while it
//! counts.
#![cfg(not(any(loom, miri)))]

use hazptr::Guard;
use test_support::CountingAllocator;

#[global_allocator]
static GLOBAL: CountingAllocator = CountingAllocator::under_the_test_harness();

/// The key destructor: more guards than the thread's block has slots, so
/// that the last ones take backup slots.
extern "C" fn guards_at_key_exit(_: *mut libc::c_void) {
    let guards: Vec<Guard<'static>> = (0..hazptr::usable_slots_per_thread() + 2)
        .map(|_| Guard::new())
        .collect();
    assert!(guards.iter().any(Guard::is_backup), "no backup slot taken");
}

#[test]
fn backup_slots_taken_in_key_destructors_leave_no_memory_behind() {
    const THREADS: usize = 200;
    // Settles what stays for good: the global domain, its blocks and backup
    // slots, the key.
    test_support::threads_exiting_through_a_key(4, guards_at_key_exit);
    let before = GLOBAL.live_bytes();
    test_support::threads_exiting_through_a_key(THREADS, guards_at_key_exit);
    let grown = GLOBAL.live_bytes() - before;
    // A leak of one small buffer a thread (64 bytes, as before 2026-12-07)
    // would be 12,800 bytes.
    assert!(
        grown < 2_048,
        "{grown} bytes more after {THREADS} threads took backup slots in key destructors"
    );
}
