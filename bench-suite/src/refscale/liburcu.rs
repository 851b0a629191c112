//! liburcu's read sides (peers), run in C so liburcu's inline fast path is
//! what is measured (see `crate::liburcu`).

use super::ReadSide;
use crate::registry::{Implementation, Origin, Unavailable};

/// `liburcu-memb`.
pub(super) const LIBURCU_MEMB: Implementation<dyn ReadSide> = Implementation {
    name: "liburcu-memb",
    summary: "liburcu urcu_memb_read_lock + rcu_dereference + unlock, loop in C",
    origin: Origin::Peer,
    make: |_| make_memb(),
};

/// `liburcu-qsbr`.
pub(super) const LIBURCU_QSBR: Implementation<dyn ReadSide> = Implementation {
    name: "liburcu-qsbr",
    summary: "liburcu urcu_qsbr_read_lock + rcu_dereference + unlock (online thread), loop in C",
    origin: Origin::Peer,
    make: |_| make_qsbr(),
};

#[cfg(syncbench_liburcu)]
fn make_memb() -> Result<Box<dyn ReadSide>, Unavailable> {
    Ok(Box::new(linked::Liburcu::new(linked::Flavor::Memb)))
}

#[cfg(syncbench_liburcu)]
fn make_qsbr() -> Result<Box<dyn ReadSide>, Unavailable> {
    Ok(Box::new(linked::Liburcu::new(linked::Flavor::Qsbr)))
}

#[cfg(not(syncbench_liburcu))]
fn make_memb() -> Result<Box<dyn ReadSide>, Unavailable> {
    Err(crate::liburcu::unavailable())
}

#[cfg(not(syncbench_liburcu))]
fn make_qsbr() -> Result<Box<dyn ReadSide>, Unavailable> {
    Err(crate::liburcu::unavailable())
}

#[cfg(syncbench_liburcu)]
mod linked {
    use super::ReadSide;
    use crate::liburcu::{MembReader, QsbrReader};
    use std::sync::atomic::{AtomicPtr, Ordering::Relaxed};
    use std::time::{Duration, Instant};

    pub(super) enum Flavor {
        Memb,
        Qsbr,
    }

    pub(super) struct Liburcu {
        flavor: Flavor,
        slot: AtomicPtr<u64>,
    }

    impl Liburcu {
        pub(super) fn new(flavor: Flavor) -> Liburcu {
            Liburcu {
                flavor,
                slot: AtomicPtr::new(Box::into_raw(Box::new(42))),
            }
        }
    }

    impl ReadSide for Liburcu {
        fn read_sections(&self, iterations: u64) -> Duration {
            // Registration happens before the clock starts, as for the others.
            match self.flavor {
                Flavor::Memb => MembReader::with(|reader| {
                    let start = Instant::now();
                    // SAFETY: `slot` points at the value from `new` until
                    // `drop`, which `&self` here outlives, and nothing
                    // replaces it.
                    unsafe { reader.read_sections(&self.slot, iterations) };
                    start.elapsed()
                }),
                Flavor::Qsbr => QsbrReader::with(|reader| {
                    let start = Instant::now();
                    // SAFETY: as for memb.
                    unsafe { reader.read_sections(&self.slot, iterations) };
                    start.elapsed()
                }),
            }
        }
    }

    impl Drop for Liburcu {
        fn drop(&mut self) {
            // SAFETY: from `Box::into_raw` in `new`, never replaced; `&mut
            // self` means no reader is running.
            drop(unsafe { Box::from_raw(self.slot.load(Relaxed)) });
        }
    }
}
