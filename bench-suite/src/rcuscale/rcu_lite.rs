//! `rcu-lite`'s writer side: swap a pointer, `memb::synchronize_rcu()`, free
//! the old value (as the liburcu peer does), with quick quiescent-state
//! reporting on (`rcu-lite`) and off (`rcu-lite-noqs`).

use super::{GracePeriod, Options, idle_wait};
use crate::registry::{Implementation, Origin};
use crate::start_gate::StartGate;
use rcu_lite::{Fqs, GpConfig, memb};
use std::hint::black_box;
use std::sync::atomic::{AtomicBool, AtomicPtr, Ordering::*};

/// `rcu-lite`.
pub(super) const RCU_LITE: Implementation<dyn GracePeriod, Options> = Implementation {
    name: "rcu-lite",
    summary: "rcu_lite memb: swap pointer + memb::synchronize_rcu + free (quick QS on; --fqs-interval-ms paces FQS)",
    origin: Origin::Workspace,
    make: |o| Ok(Box::new(RcuLite::new(true, o))),
};

/// `rcu-lite-noqs`.
pub(super) const RCU_LITE_NOQS: Implementation<dyn GracePeriod, Options> = Implementation {
    name: "rcu-lite-noqs",
    summary: "rcu-lite with quick QS off: the driver is credited only after it waits (the kernel before the seed's patch)",
    origin: Origin::Workspace,
    make: |o| Ok(Box::new(RcuLite::new(false, o))),
};

/// A memb-protected pointer, with the memb flavor configured for this run;
/// the previous configuration comes back when it is dropped (runs are one at a
/// time).
struct RcuLite {
    current: AtomicPtr<u64>,
    previous: GpConfig,
}

impl RcuLite {
    fn new(quick_qs: bool, options: &Options) -> RcuLite {
        let previous = memb::configure(GpConfig {
            quick_qs,
            fqs: options
                .fqs_interval
                .map_or(Fqs::Adaptive, Fqs::FixedInterval),
        });
        RcuLite {
            current: AtomicPtr::new(Box::into_raw(Box::new(0))),
            previous,
        }
    }
}

impl GracePeriod for RcuLite {
    fn update_and_wait(&self, writer: usize) {
        // AcqRel: Release publishes the new value to readers' Acquire loads;
        // Acquire orders our free after the old value's initialization.
        let old = self
            .current
            .swap(Box::into_raw(Box::new(writer as u64)), AcqRel);
        memb::synchronize_rcu();
        // SAFETY: `old` came from `Box::into_raw`, is unpublished, and a memb
        // grace period has elapsed since, so no reader holds it.
        drop(unsafe { Box::from_raw(old) });
    }

    fn prepare_writer(&self) {
        // `synchronize_rcu` registers a thread on its first call; a read
        // lock does the same, untimed.
        drop(memb::read_lock());
    }

    fn read_until(&self, ready: &StartGate, stop: &AtomicBool) -> u64 {
        // The first read lock registers the thread, before the run.
        let guard = memb::read_lock();
        // SAFETY: never null; the guard keeps the pointee alive.
        black_box(unsafe { *self.current.load(Acquire) });
        drop(guard);
        if !ready.wait() {
            return 0; // The run was called off.
        }
        let mut n = 0;
        // Relaxed: a stop request; it publishes nothing.
        while !stop.load(Relaxed) {
            for _ in 0..64 {
                let guard = memb::read_lock();
                // SAFETY: never null; the guard keeps the pointee alive.
                black_box(unsafe { *self.current.load(Acquire) });
                drop(guard);
            }
            n += 64;
        }
        n
    }

    fn idle_until(&self, ready: &StartGate, stop: &AtomicBool) {
        // The first read lock registers the thread; it stays registered (and
        // scanned) until it exits.
        let guard = memb::read_lock();
        // SAFETY: never null; the guard keeps the pointee alive.
        black_box(unsafe { *self.current.load(Acquire) });
        drop(guard);
        idle_wait(ready, stop);
    }
}

impl Drop for RcuLite {
    fn drop(&mut self) {
        memb::configure(self.previous);
        // SAFETY: the last published value; `&mut self`: no reader runs.
        drop(unsafe { Box::from_raw(*self.current.get_mut()) });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each update publishes the writer's new value in place of the old
    /// one (which it frees after the grace period).
    #[test]
    fn an_update_publishes_the_writer_s_value() {
        let rcu_lite = RcuLite::new(true, &Options::default());
        rcu_lite.update_and_wait(7);
        // SAFETY: never null; no writer runs beside this load.
        assert_eq!(unsafe { *rcu_lite.current.load(Acquire) }, 7);
    }
}
