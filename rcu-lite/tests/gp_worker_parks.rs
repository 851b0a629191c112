//! The grace-period worker parks once the crowd of callers that made it drive
//! has left: it neither keeps driving grace periods nobody asked for nor
//! spins holding `DRIVER`, either of which would burn a CPU for good; and the
//! next crowd hands over to the same worker thread, not a new one. Its own
//! process, so that no other test's callers keep the worker busy. Reads the
//! worker thread's scheduler state from `/proc` (Linux).
#![cfg(not(any(miri, loom)))]

use rcu_lite::memb;
use std::thread;
use std::time::{Duration, Instant};
use test_support::Crowd;

/// How long the crowd may take to make the worker drive, and the worker to
/// park once the crowd has left: generous, for a loaded 2-CPU machine.
const LIMIT: Duration = Duration::from_secs(60);

/// Runs a crowd of memb callers until the worker has driven, stops it, and
/// waits until the worker parks: asleep in two looks at its state, with no
/// grace period started between them, and the only thread of its name.
fn crowd_then_park(round: u32) {
    let before = memb::grace_periods().by_worker;
    let crowd = Crowd::start(memb::synchronize_rcu);
    let deadline = Instant::now() + LIMIT;
    while memb::grace_periods().by_worker == before {
        assert!(
            Instant::now() < deadline,
            "round {round}: the worker never drove"
        );
        thread::sleep(Duration::from_millis(1));
    }
    crowd.stop();
    let deadline = Instant::now() + LIMIT;
    loop {
        let started = memb::grace_periods().started;
        let first = test_support::thread_states("rcu-lite-memb-gp");
        thread::sleep(Duration::from_millis(10));
        let second = test_support::thread_states("rcu-lite-memb-gp");
        if first == ['S'] && second == ['S'] && memb::grace_periods().started == started {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "round {round}: with no caller left the memb worker is not one parked thread \
             ({first:?}, then {second:?}) or grace periods still start"
        );
    }
}

#[test]
fn the_worker_parks_once_the_crowd_of_callers_leaves_and_the_next_crowd_reuses_it() {
    crowd_then_park(1);
    crowd_then_park(2);
}
