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
    Ok(Box::new(
        linked::Liburcu::<crate::liburcu::MembReader>::new(),
    ))
}

#[cfg(syncbench_liburcu)]
fn make_qsbr() -> Result<Box<dyn GracePeriod>, Unavailable> {
    Ok(Box::new(
        linked::Liburcu::<crate::liburcu::QsbrReader>::new(),
    ))
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
    use crate::rcuscale::published::Published;
    use crate::rcuscale::{IdleGate, idle_wait};
    use crate::start_gate::StartGate;
    use std::marker::PhantomData;
    use std::sync::atomic::{AtomicBool, AtomicPtr};

    /// A liburcu flavor's registration, as rcuscale drives it: memb, or
    /// qsbr (offline outside its C loops, which announce a quiescent state
    /// every 64 sections).
    pub(super) trait Flavor {
        /// Runs `body` with the calling thread registered.
        fn registered<R>(body: impl FnOnce(&Self) -> R) -> R;
        /// The flavor's `synchronize_rcu()`, from an unregistered writer.
        fn synchronize_rcu();
        /// `iterations` read-side sections over `slot`, in C.
        ///
        /// # Safety
        ///
        /// As `MembReader::read_sections`, for this flavor's grace periods.
        unsafe fn read_sections(&self, slot: &AtomicPtr<u64>, iterations: u64);
        /// Read-side sections over `slot` until `stop`, in C; how many.
        ///
        /// # Safety
        ///
        /// As [`Flavor::read_sections`].
        unsafe fn read_until(&self, slot: &AtomicPtr<u64>, stop: &AtomicBool) -> u64;
    }

    impl Flavor for MembReader {
        fn registered<R>(body: impl FnOnce(&Self) -> R) -> R {
            MembReader::with(body)
        }
        fn synchronize_rcu() {
            memb_synchronize_rcu();
        }
        unsafe fn read_sections(&self, slot: &AtomicPtr<u64>, iterations: u64) {
            // SAFETY: the caller's contract is this method's.
            unsafe { MembReader::read_sections(self, slot, iterations) }
        }
        unsafe fn read_until(&self, slot: &AtomicPtr<u64>, stop: &AtomicBool) -> u64 {
            // SAFETY: the caller's contract is this method's.
            unsafe { MembReader::read_until(self, slot, stop) }
        }
    }

    impl Flavor for QsbrReader {
        fn registered<R>(body: impl FnOnce(&Self) -> R) -> R {
            QsbrReader::with(body)
        }
        fn synchronize_rcu() {
            qsbr_synchronize_rcu();
        }
        unsafe fn read_sections(&self, slot: &AtomicPtr<u64>, iterations: u64) {
            // SAFETY: the caller's contract is this method's.
            unsafe { QsbrReader::read_sections(self, slot, iterations) }
        }
        unsafe fn read_until(&self, slot: &AtomicPtr<u64>, stop: &AtomicBool) -> u64 {
            // SAFETY: the caller's contract is this method's.
            unsafe { QsbrReader::read_until(self, slot, stop) }
        }
    }

    /// A pointer that liburcu flavor `F` protects. `PhantomData<fn() -> F>`:
    /// `Send` and `Sync` whatever `F` is (the readers are `!Send`; none is
    /// stored here).
    pub(super) struct Liburcu<F> {
        value: Published,
        _flavor: PhantomData<fn() -> F>,
    }

    impl<F> Liburcu<F> {
        pub(super) fn new() -> Liburcu<F> {
            Liburcu {
                value: Published::new(0),
                _flavor: PhantomData,
            }
        }
    }

    impl<F: Flavor> GracePeriod for Liburcu<F> {
        fn update_and_wait(&self, writer: usize) {
            // `replace`'s swap pairs with C's rcu_dereference.
            let old = self.value.replace(writer as u64);
            // The writer is not registered: it holds up no grace period.
            F::synchronize_rcu();
            // SAFETY: unpublished by `replace`, and a grace period of the
            // flavor has elapsed since, so no C reader holds it (a qsbr
            // reader online before it has announced a quiescent state or
            // gone offline).
            unsafe { old.free() };
        }

        fn read_until(&self, ready: &StartGate, stop: &AtomicBool) -> u64 {
            // Registered, with one section run, before the run starts (a
            // qsbr reader waits at the gate offline, holding nothing up).
            F::registered(|reader| {
                // SAFETY: writers free a value only after unpublishing it and
                // waiting for a grace period of the flavor
                // (`update_and_wait`), and the last one lives until `drop`,
                // which `&self` outlives.
                unsafe { reader.read_sections(self.value.slot(), 1) };
                if !ready.wait() {
                    return 0; // The run was called off.
                }
                // SAFETY: as above.
                unsafe { reader.read_until(self.value.slot(), stop) }
            })
        }

        fn idle_until(&self, ready: &IdleGate, stop: &AtomicBool) {
            // Registered (on liburcu's reader list, which every grace period
            // walks) until `registered` returns; a qsbr reader is offline
            // meanwhile, as a qsbr thread that blocks must be.
            F::registered(|reader| {
                // SAFETY: as in `read_until`.
                unsafe { reader.read_sections(self.value.slot(), 1) };
                idle_wait(ready, stop);
            });
        }
    }
}
