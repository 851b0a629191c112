//! A thread whose first use of a domain comes from a pthread key destructor
//! (another library's "at thread exit" hook that calls into Rust), after the
//! thread-local destructors ran.
//!
//! glibc runs the thread-local destructors (`__call_tls_dtors`) once, then
//! the key destructors: a thread-local first touched in a key destructor
//! registers a destructor that never runs. The registration must still give
//! its slot block back at thread exit, or every such thread leaks a block
//! that every scan walks, with its unreclaimed batch.
#![cfg(not(loom))]

use hazptr::Domain;
use std::sync::OnceLock;
use std::sync::atomic::AtomicUsize;
use std::sync::atomic::Ordering::SeqCst;

static DOMAIN: OnceLock<Domain> = OnceLock::new();
static DROPPED: AtomicUsize = AtomicUsize::new(0);
static RAN: AtomicUsize = AtomicUsize::new(0);

struct Counted;

impl Drop for Counted {
    fn drop(&mut self) {
        DROPPED.fetch_add(1, SeqCst);
    }
}

/// The key destructor: the thread's first guard and first retire in the
/// domain.
extern "C" fn at_key_destruction(_: *mut libc::c_void) {
    let domain = DOMAIN.get().expect("set before the threads start");
    let guard = domain.guard();
    drop(guard);
    // SAFETY: a fresh box, never published.
    unsafe { domain.retire_box(Box::into_raw(Box::new(Counted))) };
    RAN.fetch_add(1, SeqCst);
}

#[test]
fn a_registration_made_in_a_key_destructor_gives_its_block_back() {
    const THREADS: usize = 20;
    DOMAIN.get_or_init(Domain::new);
    test_support::threads_exiting_through_a_key(THREADS, at_key_destruction);
    assert_eq!(RAN.load(SeqCst), THREADS, "every key destructor ran");
    let domain = DOMAIN.get().expect("set");
    // One after another, the threads can all use one block: one block per
    // thread means none was given back.
    assert!(
        domain.thread_blocks() <= 2,
        "{} slot blocks for {THREADS} threads run one after another: the registrations \
         made in key destructors kept theirs",
        domain.thread_blocks()
    );
    // Each batch was handed over to the domain (or freed by a pass of a
    // later retire): a reclamation pass with no guard left frees the rest.
    domain.reclaim();
    assert_eq!(
        DROPPED.load(SeqCst),
        THREADS,
        "a retired object was not freed"
    );
}
