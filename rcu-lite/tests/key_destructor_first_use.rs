//! A thread whose first memb read comes from a POSIX thread-specific key
//! destructor (another library's "at thread exit" hook that calls into
//! Rust), after the thread-local destructors ran.
//!
//! glibc runs the thread-local destructors (`__call_tls_dtors`) once, then
//! the key destructors: `OWNER`, first touched in a key destructor, registers
//! a destructor that never runs. The record must still go back (the second
//! chance, `thread_record.rs`), or every such thread leaks one that every
//! scan walks. `tests/teardown_read_second_chance.rs` covers a read from a
//! key destructor of a thread that had registered before.
//!
//! Its own binary: it counts the records of the process.
#![cfg(not(loom))]

use rcu_lite::{memb, qsbr};
use std::sync::atomic::AtomicUsize;
use std::sync::atomic::Ordering::SeqCst;

static RAN: AtomicUsize = AtomicUsize::new(0);

/// The key destructor: the thread's first memb section, and its first
/// grace period as a qsbr caller (which registers it as a driver).
extern "C" fn first_use_at_key_destruction(_: *mut libc::c_void) {
    drop(memb::read_lock());
    qsbr::synchronize_rcu();
    RAN.fetch_add(1, SeqCst);
}

#[test]
fn a_record_registered_in_a_key_destructor_goes_back() {
    const THREADS: usize = 20;
    // This thread's own records, and the grace-period worker's.
    drop(memb::read_lock());
    memb::synchronize_rcu();
    qsbr::synchronize_rcu();
    let (memb_before, qsbr_before) = (memb::grace_periods().records, qsbr::grace_periods().records);
    test_support::threads_exiting_through_a_key(THREADS, first_use_at_key_destruction);
    assert_eq!(RAN.load(SeqCst), THREADS, "every key destructor ran");
    // One after another, the threads can all reuse one record per flavor.
    let (memb_after, qsbr_after) = (memb::grace_periods().records, qsbr::grace_periods().records);
    assert!(
        memb_after <= memb_before + 1,
        "memb: {memb_before} records before, {memb_after} after {THREADS} threads run one \
         after another: the records registered in key destructors were kept"
    );
    assert!(
        qsbr_after <= qsbr_before + 1,
        "qsbr: {qsbr_before} records before, {qsbr_after} after {THREADS} threads run one \
         after another: the records registered in key destructors were kept"
    );
}
