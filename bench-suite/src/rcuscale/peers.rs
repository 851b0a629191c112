//! The peers' writer side.

use super::{GracePeriod, IdleGate, Options, idle_wait};
use crate::registry::{Implementation, Origin};
use crate::start_gate::StartGate;
use crossbeam_epoch::{self as epoch, Atomic, Owned};
use std::hint::black_box;
use std::sync::atomic::AtomicBool;
use std::sync::atomic::Ordering::{AcqRel, Acquire, Relaxed, Release};

/// `crossbeam-epoch`.
pub(super) const CROSSBEAM_EPOCH: Implementation<dyn GracePeriod, Options> = Implementation {
    name: "crossbeam-epoch",
    summary: "crossbeam_epoch: swap, defer the free, flush until it has run (no synchronize() exists)",
    origin: Origin::Peer,
    make: |_| Ok(Box::new(CrossbeamEpoch::new())),
};

struct CrossbeamEpoch {
    current: Atomic<u64>,
}

/// The address of an update's "freed" flag, for the deferred closure that
/// sets it (on whichever thread runs the bag).
struct FreedFlag(*const AtomicBool);

// SAFETY: it only reaches an `AtomicBool`, which is `Sync`; the flag's
// lifetime is the caller's to keep (see `update_and_wait`).
unsafe impl Send for FreedFlag {}

impl FreedFlag {
    /// Sets the flag. Release: pairs with the waiting writer's Acquire load.
    fn set(self) {
        // SAFETY: the waiting writer keeps the flag alive until it has seen
        // this store (see `update_and_wait`).
        unsafe { &*self.0 }.store(true, Release);
    }
}

impl CrossbeamEpoch {
    fn new() -> Self {
        CrossbeamEpoch {
            current: Atomic::new(0),
        }
    }
}

impl GracePeriod for CrossbeamEpoch {
    fn update_and_wait(&self, writer: usize) {
        // A flag on this stack, not an `Arc`: the other contenders allocate
        // nothing per update beyond the new value, and this one waits for
        // the flag below, so it outlives the deferred store.
        let freed = AtomicBool::new(false);
        {
            let guard = epoch::pin();
            // AcqRel: Release publishes the new value to readers' Acquire
            // loads; Acquire orders the deferred free after `old`'s writes.
            let old = self.current.swap(Owned::new(writer as u64), AcqRel, &guard);
            // SAFETY: `old` is unpublished; crossbeam destroys it only once
            // every thread pinned now has unpinned.
            unsafe { guard.defer_destroy(old) };
            // Same bag, same epoch: runs right after the free above.
            let signal = FreedFlag(&freed);
            // SAFETY: the closure only stores to `freed`, which lives until
            // this function returns, and it returns only after the loop
            // below has seen that store; `FreedFlag` is sent to whichever
            // thread runs the deferred bag.
            unsafe { guard.defer_unchecked(move || signal.set()) };
            guard.flush();
        }
        // The wait: keep nudging the global epoch until our deferred free ran.
        // Acquire pairs with the Release store of the deferred signal.
        let mut spins = 0u32;
        while !freed.load(Acquire) {
            epoch::pin().flush();
            spins += 1;
            if spins > 64 {
                std::thread::yield_now();
            }
        }
    }

    fn prepare_writer(&self) {
        // The first pin registers the thread with the default collector.
        drop(epoch::pin());
    }

    fn read_until(&self, ready: &StartGate, stop: &AtomicBool) -> u64 {
        // The first pin registers the thread, before the run.
        let guard = epoch::pin();
        // SAFETY: never null; `guard` keeps it alive.
        black_box(*unsafe { self.current.load(Acquire, &guard).deref() });
        drop(guard);
        if !ready.wait() {
            return 0; // The run was called off.
        }
        let mut n = 0;
        // Relaxed: a stop request; it publishes nothing.
        while !stop.load(Relaxed) {
            for _ in 0..64 {
                let guard = epoch::pin();
                // Acquire pairs with the writer's AcqRel swap.
                let node = self.current.load(Acquire, &guard);
                // SAFETY: never null; `guard` keeps it alive.
                black_box(*unsafe { node.deref() });
            }
            n += 64;
        }
        n
    }

    fn idle_until(&self, ready: &IdleGate, stop: &AtomicBool) {
        // Pinning once registers the thread with the default collector, whose
        // epoch advance walks every registered participant.
        let guard = epoch::pin();
        // SAFETY: never null; `guard` keeps it alive.
        black_box(*unsafe { self.current.load(Acquire, &guard).deref() });
        drop(guard);
        idle_wait(ready, stop);
    }
}

impl Drop for CrossbeamEpoch {
    fn drop(&mut self) {
        // SAFETY: `&mut self`: no reader is inside; the last node is ours.
        let last = unsafe { self.current.load(Acquire, epoch::unprotected()) };
        if !last.is_null() {
            // SAFETY: allocated by `Owned::new`, unreachable by anyone else now.
            drop(unsafe { last.into_owned() });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each update publishes the writer's new value in place of the old
    /// one (whose free it defers, then waits for).
    #[test]
    fn an_update_publishes_the_writer_s_value() {
        let crossbeam = CrossbeamEpoch::new();
        crossbeam.update_and_wait(7);
        let guard = epoch::pin();
        // SAFETY: never null; `guard` keeps it alive.
        let published = *unsafe { crossbeam.current.load(Acquire, &guard).deref() };
        assert_eq!(published, 7);
    }
}
