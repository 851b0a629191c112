//! This workspace's `hazptr` writer side: swap, `synchronize(old)`, free.

use super::published::Published;
use super::{GracePeriod, IdleGate, Options, idle_wait};
use crate::registry::{Implementation, Origin};
use crate::start_gate::StartGate;
use hazptr::Domain;
use std::hint::black_box;
use std::sync::atomic::AtomicBool;
use std::sync::atomic::Ordering::Relaxed;

/// `hazptr`: concurrent `synchronize` callers share one scan.
pub(super) const HAZPTR: Implementation<dyn GracePeriod, Options> = Implementation {
    name: "hazptr",
    summary: "hazptr: swap, synchronize(old) through the shared scan (callers combine, Bloom filter), free",
    origin: Origin::Workspace,
    make: |_| Ok(Box::new(Hazptr::new(true))),
};

/// `hazptr-unshared`: every caller scans alone (the comparison point).
pub(super) const HAZPTR_UNSHARED: Implementation<dyn GracePeriod, Options> = Implementation {
    name: "hazptr-unshared",
    summary: "hazptr with shared_scan(false): every synchronize caller flips, fences and scans alone",
    origin: Origin::Workspace,
    make: |_| Ok(Box::new(Hazptr::new(false))),
};

struct Hazptr {
    domain: Domain,
    current: Published,
}

impl Hazptr {
    fn new(shared_scan: bool) -> Self {
        Hazptr {
            domain: Domain::builder().shared_scan(shared_scan).build(),
            current: Published::new(0),
        }
    }
}

impl GracePeriod for Hazptr {
    fn update_and_wait(&self, writer: usize) {
        // `replace`'s swap pairs with the Acquire load in `protect_ptr`.
        let old = self.current.replace(writer as u64);
        self.domain.synchronize(old.as_ptr());
        // SAFETY: unpublished by `replace`; after `synchronize` no guard
        // protects it.
        unsafe { old.free() };
    }

    fn prepare_writer(&self) {
        // The shared scan starts its scanner thread when the first caller
        // has to queue, and every run builds a new domain: start it here,
        // untimed, rather than inside the run's first contended wait.
        // (Unshared, there is none: false.)
        self.domain.start_scanner();
    }

    fn read_until(&self, ready: &StartGate, stop: &AtomicBool) -> u64 {
        // The first guard gives the thread its slot block, before the run.
        let mut guard = self.domain.guard();
        let p = guard.protect_ptr(self.current.slot());
        // SAFETY: protected by `guard`; never null.
        black_box(unsafe { *p });
        drop(guard);
        if !ready.wait() {
            return 0; // The run was called off.
        }
        let mut n = 0;
        // Relaxed: a stop request; it publishes nothing.
        while !stop.load(Relaxed) {
            for _ in 0..64 {
                let mut guard = self.domain.guard();
                let p = guard.protect_ptr(self.current.slot());
                // SAFETY: protected by `guard`; never null.
                black_box(unsafe { *p });
            }
            n += 64;
        }
        n
    }

    fn idle_until(&self, ready: &IdleGate, stop: &AtomicBool) {
        // The first guard gives the thread a slot block, which every scan
        // walks until the thread exits.
        let mut guard = self.domain.guard();
        let p = guard.protect_ptr(self.current.slot());
        // SAFETY: protected by `guard`; never null.
        black_box(unsafe { *p });
        drop(guard);
        idle_wait(ready, stop);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// Each update publishes the writer's new object in place of the old
    /// one (which it frees once the wait is over).
    #[test]
    fn an_update_publishes_the_writer_s_object() {
        let hazptr = Hazptr::new(true);
        hazptr.update_and_wait(7);
        // SAFETY: never null; no writer runs beside this load.
        assert_eq!(unsafe { *hazptr.current.slot().load(Relaxed) }, 7);
    }

    /// The shared scan's scanner thread starts when a domain's first caller
    /// has to queue: `prepare_writer` starts it, untimed, so that no run's
    /// first contended wait (its latency maximum, with `--waits` above all)
    /// includes spawning a thread. Each run builds a new domain.
    #[test]
    #[cfg_attr(miri, ignore = "reads /proc, which miri's isolation hides")]
    fn the_scanner_thread_starts_before_the_timed_waits() {
        let hazptr = Hazptr::new(true);
        let id = hazptr.domain.id();
        hazptr.prepare_writer();
        assert!(
            test_support::thread_appears(&format!("hazptr-scan-{id}"), Duration::from_secs(20)),
            "no scanner thread for {:?} after prepare_writer",
            hazptr.domain
        );
    }
}
