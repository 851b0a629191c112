//! `rcu-lite`'s read sides: a memb guard and a qsbr guard around one
//! `Rcu<u64>` read.

use super::{ReadSide, time_sections};
use crate::registry::{Implementation, Origin};
use rcu_lite::qsbr::QsbrThread;
use rcu_lite::{Memb, Qsbr, Rcu, memb};
use std::hint::black_box;
use std::time::Duration;

/// `rcu-lite-memb`.
pub(super) const RCU_LITE_MEMB: Implementation<dyn ReadSide> = Implementation {
    name: "rcu-lite-memb",
    summary: "rcu_lite::memb::read_lock + Rcu::read + guard drop (nesting counter, compiler fences)",
    origin: Origin::Workspace,
    make: |_| Ok(Box::new(Rcu::<u64, Memb>::new(42))),
};

/// `rcu-lite-qsbr`.
pub(super) const RCU_LITE_QSBR: Implementation<dyn ReadSide> = Implementation {
    name: "rcu-lite-qsbr",
    summary: "rcu_lite::qsbr QsbrThread::read_lock + Rcu::read (registered outside the timed loop)",
    origin: Origin::Workspace,
    make: |_| Ok(Box::new(Rcu::<u64, Qsbr>::new(42))),
};

impl ReadSide for Rcu<u64, Memb> {
    fn read_sections(&self, iterations: u64) -> Duration {
        time_sections(iterations, || {
            let guard = memb::read_lock();
            black_box(*self.read(&guard));
        })
    }
}

impl ReadSide for Rcu<u64, Qsbr> {
    fn read_sections(&self, iterations: u64) -> Duration {
        let registration = QsbrThread::register();
        let elapsed = time_sections(iterations, || {
            let guard = registration.read_lock();
            black_box(*self.read(&guard));
        });
        drop(registration);
        elapsed
    }
}
