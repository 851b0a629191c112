//! liburcu's writer side (peer): swap a pointer, `urcu_memb_synchronize_rcu()`
//! or `urcu_qsbr_synchronize_rcu()`, free; readers run their sections in C
//! (see `crate::liburcu`).

use super::{GracePeriod, Options};
use crate::registry::{Implementation, Origin, Unavailable};

/// `liburcu-memb`.
pub(super) const LIBURCU_MEMB: Implementation<dyn GracePeriod, Options> = Implementation {
    name: "liburcu-memb",
    summary: "liburcu memb: xchg pointer + urcu_memb_synchronize_rcu + free; readers loop in C",
    origin: Origin::Peer,
    make: |_| make(),
};

/// `liburcu-qsbr`.
pub(super) const LIBURCU_QSBR: Implementation<dyn GracePeriod, Options> = Implementation {
    name: "liburcu-qsbr",
    summary: "liburcu qsbr: xchg pointer + urcu_qsbr_synchronize_rcu + free; readers loop in C, announcing a quiescent state every 64 sections",
    origin: Origin::Peer,
    make: |_| make_qsbr(),
};

#[cfg(syncbench_liburcu)]
fn make() -> Result<Box<dyn GracePeriod>, Unavailable> {
    Ok(Box::new(linked::LiburcuMemb::new()))
}

#[cfg(syncbench_liburcu)]
fn make_qsbr() -> Result<Box<dyn GracePeriod>, Unavailable> {
    Ok(Box::new(linked::LiburcuQsbr::new()))
}

#[cfg(not(syncbench_liburcu))]
fn make() -> Result<Box<dyn GracePeriod>, Unavailable> {
    Err(crate::liburcu::unavailable())
}

#[cfg(not(syncbench_liburcu))]
fn make_qsbr() -> Result<Box<dyn GracePeriod>, Unavailable> {
    Err(crate::liburcu::unavailable())
}

#[cfg(syncbench_liburcu)]
mod linked {
    use super::GracePeriod;
    use crate::liburcu::{MembReader, QsbrReader, memb_synchronize_rcu, qsbr_synchronize_rcu};
    use crate::rcuscale::idle_wait;
    use crate::start_gate::StartGate;
    use std::sync::atomic::{AtomicBool, AtomicPtr, Ordering::AcqRel};

    pub(super) struct LiburcuMemb {
        slot: AtomicPtr<u64>,
    }

    impl LiburcuMemb {
        pub(super) fn new() -> LiburcuMemb {
            LiburcuMemb {
                slot: AtomicPtr::new(Box::into_raw(Box::new(0))),
            }
        }
    }

    impl GracePeriod for LiburcuMemb {
        fn update_and_wait(&self, writer: usize) {
            // AcqRel: Release publishes the new value to C's rcu_dereference;
            // Acquire orders our free after the old value's initialization.
            let old = self
                .slot
                .swap(Box::into_raw(Box::new(writer as u64)), AcqRel);
            memb_synchronize_rcu();
            // SAFETY: `old` came from `Box::into_raw`, is unpublished, and a
            // memb grace period has elapsed since, so no C reader holds it.
            drop(unsafe { Box::from_raw(old) });
        }

        fn read_until(&self, ready: &StartGate, stop: &AtomicBool) -> u64 {
            // Registered, with one section run, before the run starts.
            MembReader::with(|reader| {
                // SAFETY: writers free a value only after unpublishing it and
                // waiting for a memb grace period (`update_and_wait`), and
                // the last one lives until `drop`, which `&self` outlives.
                unsafe { reader.read_sections(&self.slot, 1) };
                if !ready.wait() {
                    return 0; // The run was called off.
                }
                // SAFETY: as above.
                unsafe { reader.read_until(&self.slot, stop) }
            })
        }

        fn idle_until(&self, ready: &StartGate, stop: &AtomicBool) {
            // Registered (on liburcu's reader list, which every grace period
            // walks) until `with` returns.
            MembReader::with(|reader| {
                // SAFETY: as in `read_until`.
                unsafe { reader.read_sections(&self.slot, 1) };
                idle_wait(ready, stop);
            });
        }
    }

    impl Drop for LiburcuMemb {
        fn drop(&mut self) {
            // SAFETY: the last published value; `&mut self`: no reader runs.
            drop(unsafe { Box::from_raw(*self.slot.get_mut()) });
        }
    }

    pub(super) struct LiburcuQsbr {
        slot: AtomicPtr<u64>,
    }

    impl LiburcuQsbr {
        pub(super) fn new() -> LiburcuQsbr {
            LiburcuQsbr {
                slot: AtomicPtr::new(Box::into_raw(Box::new(0))),
            }
        }
    }

    impl GracePeriod for LiburcuQsbr {
        fn update_and_wait(&self, writer: usize) {
            // AcqRel: as in `LiburcuMemb::update_and_wait`.
            let old = self
                .slot
                .swap(Box::into_raw(Box::new(writer as u64)), AcqRel);
            // The writer is not registered: it holds up no grace period.
            qsbr_synchronize_rcu();
            // SAFETY: `old` came from `Box::into_raw`, is unpublished, and a
            // qsbr grace period has elapsed since: every reader that was
            // online has announced a quiescent state or gone offline, so
            // none holds it.
            drop(unsafe { Box::from_raw(old) });
        }

        fn read_until(&self, ready: &StartGate, stop: &AtomicBool) -> u64 {
            // Registered, with one section run, before the run starts; offline
            // outside the C loops, so waiting at the gate holds up nothing.
            QsbrReader::with(|reader| {
                // SAFETY: writers free a value only after unpublishing it and
                // waiting for a qsbr grace period (`update_and_wait`), and
                // the last one lives until `drop`, which `&self` outlives.
                unsafe { reader.read_sections(&self.slot, 1) };
                if !ready.wait() {
                    return 0; // The run was called off.
                }
                // SAFETY: as above.
                unsafe { reader.read_until(&self.slot, stop) }
            })
        }

        fn idle_until(&self, ready: &StartGate, stop: &AtomicBool) {
            // Registered (on liburcu's reader list, which every grace period
            // walks) and offline until `with` returns, as a qsbr thread
            // that blocks must be.
            QsbrReader::with(|reader| {
                // SAFETY: as in `read_until`.
                unsafe { reader.read_sections(&self.slot, 1) };
                idle_wait(ready, stop);
            });
        }
    }

    impl Drop for LiburcuQsbr {
        fn drop(&mut self) {
            // SAFETY: the last published value; `&mut self`: no reader runs.
            drop(unsafe { Box::from_raw(*self.slot.get_mut()) });
        }
    }
}
