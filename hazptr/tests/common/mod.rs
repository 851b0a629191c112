//! Helpers shared by the integration tests (`mod common;` in each binary
//! that uses them).

use hazptr::Domain;
use std::sync::atomic::AtomicPtr;
use std::time::{Duration, Instant};

/// Starts `domain`'s scanner thread, `hazptr-scan-{id}`, as a caller that
/// has to queue does (a lone caller whose walk finds nothing protected starts
/// none): this thread protects an object, another thread synchronizes it,
/// and the guard goes once a thread of that name runs. Fails if none does
/// within `limit`.
pub fn start_scanner_thread(domain: &Domain, limit: Duration) {
    let object = Box::into_raw(Box::new(0u64));
    let published = AtomicPtr::new(object);
    let mut guard = domain.guard();
    assert_eq!(guard.protect_ptr(&published), object);
    let addr = object as usize;
    let name = format!("hazptr-scan-{}", domain.id());
    std::thread::scope(|s| {
        let caller = s.spawn(|| domain.synchronize(addr as *const u64));
        // The thread names itself once it runs, which may be after its
        // caller started it.
        let deadline = Instant::now() + limit;
        while test_support::thread_states(&name).len() != 1 {
            assert!(
                Instant::now() < deadline,
                "no one thread named {name:?} ({domain:?}) while a caller waited for a guard"
            );
            std::thread::sleep(Duration::from_millis(1));
        }
        drop(guard);
        caller
            .join()
            .expect("synchronize returns once the guard is gone");
    });
    // SAFETY: from `Box::into_raw` above; the guard that read it is gone and
    // `published`, the only other copy, is never read again.
    drop(unsafe { Box::from_raw(object) });
}
