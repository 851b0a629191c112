//! Keeping a run's measured threads alive once their work is done, until
//! the coordinator has read their CPU clocks.
//!
//! A thread's CPU clock can be read only while the thread lives
//! ([`crate::cpu_time::ThreadCpuClock`]). To split the CPU time the process
//! used over a timed window by role, the coordinator reads the process's
//! clock and every measured thread's at the window's start and at its end:
//! the process's time less the measured threads' is everyone else's (a
//! scanner or grace-period thread, idle threads, the coordinator). Threads
//! that end on their own (rcuscale's writers with `--waits`, or at their
//! deadline) would be gone by the end, so each *arrives* at an end gate
//! when done and stays there until the coordinator has taken its readings
//! and *releases* them. Thread creation and exit then fall outside the
//! window: they are the harness's cost, not the primitive's.
//!
//! Invariants:
//! - [`EndGate::arrive`] returns only once the gate is released; a released
//!   gate stays released.
//! - [`EndGate::wait_for`]`(n)` returns only once `n` arrivals have begun.
//!   What an arriving thread did before it arrived happens before that
//!   return (the arrivals' `Release` increments, read by its `Acquire`
//!   load).
//! - Every party arrives, also when it unwinds ([`Arrival`] arrives on
//!   drop), and the coordinator's [`ReleaseOnDrop`] releases the gate when
//!   its scope ends, also when it unwinds or returns early (a refused
//!   thread): no party waits for ever, and so the scope's joins end. A
//!   party that also holds a start gate's
//!   [`CancelOnPanic`](crate::start_gate::CancelOnPanic) takes its
//!   [`Arrival`] first, so that it drops last: a panic before the start
//!   cancels the start gate before the party holds here, or the
//!   coordinator, still at the start gate, would never release it.
//!
//! The parties sleep on one futex word, as at [`crate::start_gate`]'s
//! gate, and the coordinator on the count of arrivals.

use futex_word::AtomicU32;
use std::sync::atomic::Ordering::{Acquire, Release};

/// [`EndGate::released`]: parties stay.
const HOLDING: u32 = 0;
/// The coordinator has read the clocks: parties go.
const RELEASED: u32 = 1;

/// An end barrier: parties arrive and stay until the coordinator releases
/// them all at once.
#[derive(Debug, Default)]
pub struct EndGate {
    arrived: AtomicU32,
    /// `HOLDING`, then `RELEASED` for good.
    released: AtomicU32,
}

impl EndGate {
    /// A gate holding whoever arrives.
    pub fn new() -> Self {
        Self::default()
    }

    /// Arrives, and returns once the gate is released (at once if it
    /// already is).
    pub fn arrive(&self) {
        // Release: pairs with the Acquire load in `wait_for`, so that the
        // coordinator reads clocks after what this party did.
        self.arrived.fetch_add(1, Release);
        futex_word::wake_all(&self.arrived);
        // Acquire: pairs with the Release store in `release`; nothing is
        // published through it, but it costs nothing here.
        while self.released.load(Acquire) == HOLDING {
            // Returns once the word changed (or spuriously).
            futex_word::wait(&self.released, HOLDING, None);
        }
    }

    /// A guard for a party's thread to hold from its first line: dropped
    /// at the end of the thread's body, after its last reading, or while
    /// it unwinds, it arrives (and stays until released).
    pub fn arrival_on_drop(&self) -> Arrival<'_> {
        Arrival(self)
    }

    /// Returns once at least `n` parties have arrived.
    pub fn wait_for(&self, n: u32) {
        loop {
            // Acquire: pairs with the arrivals' Release increments.
            let arrived = self.arrived.load(Acquire);
            if arrived >= n {
                return;
            }
            futex_word::wait(&self.arrived, arrived, None);
        }
    }

    /// Lets every party go, those that arrived and those still to come.
    pub fn release(&self) {
        // Release: pairs with the Acquire loads in `arrive`.
        self.released.store(RELEASED, Release);
        futex_word::wake_all(&self.released);
    }

    /// A guard for the coordinator to hold in the scope that joins the
    /// parties: it releases the gate when that scope ends, however it ends.
    pub fn release_on_drop(&self) -> ReleaseOnDrop<'_> {
        ReleaseOnDrop(self)
    }
}

/// Arrives at its gate when dropped: see [`EndGate::arrival_on_drop`].
#[derive(Debug)]
#[must_use = "the guard arrives when it is dropped: bind it to a variable"]
pub struct Arrival<'a>(&'a EndGate);

impl Drop for Arrival<'_> {
    fn drop(&mut self) {
        self.0.arrive();
    }
}

/// Releases its gate when dropped: see [`EndGate::release_on_drop`].
#[derive(Debug)]
#[must_use = "the guard releases the gate when it is dropped: bind it to a variable"]
pub struct ReleaseOnDrop<'a>(&'a EndGate);

impl Drop for ReleaseOnDrop<'_> {
    fn drop(&mut self) {
        self.0.release();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
    use std::time::Duration;

    #[test]
    fn parties_stay_until_released_and_the_coordinator_sees_them_arrive() {
        let gate = EndGate::new();
        let gone = AtomicUsize::new(0);
        std::thread::scope(|s| {
            let _release = gate.release_on_drop();
            for _ in 0..3 {
                s.spawn(|| {
                    let _arrival = gate.arrival_on_drop();
                });
                s.spawn(|| {
                    gate.arrive();
                    gone.fetch_add(1, Relaxed);
                });
            }
            gate.wait_for(6);
            // Every party has arrived, and none has left.
            std::thread::sleep(Duration::from_millis(20));
            assert_eq!(gone.load(Relaxed), 0);
            gate.release();
        });
        assert_eq!(gone.load(Relaxed), 3);
        // A released gate lets a late party through at once.
        gate.arrive();
        gate.wait_for(7);
    }

    #[test]
    fn a_party_that_panics_arrives_and_the_coordinators_guard_releases() {
        let gate = EndGate::new();
        std::thread::scope(|s| {
            let release = gate.release_on_drop();
            let panicking = s.spawn(|| {
                let _arrival = gate.arrival_on_drop();
                panic!("a party's own failure");
            });
            // Arrived while unwinding, and held there.
            gate.wait_for(1);
            std::thread::sleep(Duration::from_millis(20));
            assert!(!panicking.is_finished());
            // The coordinator gives up without releasing: its guard does.
            drop(release);
            assert!(panicking.join().is_err());
        });
    }
}
