//! Helpers shared by the integration tests (`mod common;` in each binary
//! that uses them).

use hazptr::Domain;
use std::time::{Duration, Instant};

/// Starts `domain`'s scanner thread (`Domain::start_scanner`) and waits
/// until a thread named `hazptr-scan-{id}` runs: the thread names itself
/// once it runs, which may be after the call returned. Fails if none does
/// within `limit`.
pub fn start_scanner_thread(domain: &Domain, limit: Duration) {
    assert!(domain.start_scanner(), "no scanner thread for {domain:?}");
    let name = format!("hazptr-scan-{}", domain.id());
    let deadline = Instant::now() + limit;
    while test_support::thread_states(&name).len() != 1 {
        assert!(
            Instant::now() < deadline,
            "no one thread named {name:?} ({domain:?})"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
}
