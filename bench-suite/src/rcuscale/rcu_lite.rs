//! `rcu-lite`'s writer side: replace an `Rcu<u64>` and wait for a memb grace
//! period, with quick quiescent-state reporting on (`rcu-lite`) and off
//! (`rcu-lite-noqs`).

use super::{GracePeriod, Options};
use crate::registry::{Implementation, Origin};
use rcu_lite::{Fqs, GpConfig, Memb, Rcu, memb};
use std::hint::black_box;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};

/// `rcu-lite`.
pub(super) const RCU_LITE: Implementation<dyn GracePeriod, Options> = Implementation {
    name: "rcu-lite",
    summary: "rcu_lite memb: Rcu::replace_and_synchronize (quick QS on; --fqs-interval-ms paces FQS)",
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

/// A memb cell, with the memb flavor configured for this run; the previous
/// configuration comes back when it is dropped (runs are one at a time).
struct RcuLite {
    current: Rcu<u64, Memb>,
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
            current: Rcu::new(0),
            previous,
        }
    }
}

impl GracePeriod for RcuLite {
    fn update_and_wait(&self, writer: usize) {
        black_box(self.current.replace_and_synchronize(writer as u64));
    }

    fn read_until(&self, stop: &AtomicBool) -> u64 {
        let mut n = 0;
        while !stop.load(Relaxed) {
            for _ in 0..64 {
                let guard = memb::read_lock();
                black_box(*self.current.read(&guard));
            }
            n += 64;
        }
        n
    }
}

impl Drop for RcuLite {
    fn drop(&mut self) {
        memb::configure(self.previous);
    }
}
