//! `rcu-lite` under torture: readers reach the object in an `Rcu` cell inside
//! memb or qsbr read-side sections; writers rotate through the three ways the
//! cell retires a value (`replace`: `call_rcu`; `update`: `call_rcu`;
//! `replace_and_synchronize`: `synchronize_rcu` then reclaim at once).

use super::object::{self, TortureObject};
use super::{Options, Torture};
use crate::registry::{Implementation, Origin};
use rcu_lite::qsbr::QsbrThread;
use rcu_lite::{Flavor, Memb, Qsbr, Rcu, memb};
use std::cell::RefCell;
use std::ptr::NonNull;

/// `rcu-lite-memb`.
pub(super) const RCU_LITE_MEMB: Implementation<dyn Torture, Options> = Implementation {
    name: "rcu-lite-memb",
    summary: "rcu_lite memb: readers read_lock + Rcu::read; writers replace / update / replace_and_synchronize",
    origin: Origin::Workspace,
    make: |o| Ok(Box::new(RcuLite::<Memb>::new(o))),
};

/// `rcu-lite-qsbr`.
pub(super) const RCU_LITE_QSBR: Implementation<dyn Torture, Options> = Implementation {
    name: "rcu-lite-qsbr",
    summary: "rcu_lite qsbr: registered readers, a quiescent state every 16 reads; writers as for memb",
    origin: Origin::Workspace,
    make: |o| Ok(Box::new(RcuLite::<Qsbr>::new(o))),
};

/// An owned torture object whose drop is the ledger's reclamation.
struct Tracked(NonNull<TortureObject>);

// SAFETY: `Tracked` owns its object (a `TortureObject` is `Send + Sync`: atomics
// and an `Arc`); it is only reclaimed once, by `drop`.
unsafe impl Send for Tracked {}
// SAFETY: shared access only reads the object through `&TortureObject`.
unsafe impl Sync for Tracked {}

impl Tracked {
    fn new(object: Box<TortureObject>) -> Tracked {
        Tracked(NonNull::from(Box::leak(object)))
    }

    fn object(&self) -> &TortureObject {
        // SAFETY: owned and live until `drop` (which reclaims it).
        unsafe { self.0.as_ref() }
    }
}

impl Drop for Tracked {
    fn drop(&mut self) {
        // SAFETY: the pointer came from `Box::leak` of a `TortureObject::new`
        // box, and the cell drops a value only when no reader can reach it.
        unsafe { object::reclaim(self.0.as_ptr()) };
    }
}

struct RcuLite<F: Flavor> {
    cell: Rcu<Tracked, F>,
    /// Every replacement goes through `call_rcu` (see [`Options::deferred_only`]).
    deferred_only: bool,
}

impl<F: Flavor> RcuLite<F> {
    fn new(options: &Options) -> Self {
        RcuLite {
            cell: Rcu::new(Tracked::new(TortureObject::new(&options.ledger, 0))),
            deferred_only: options.deferred_only,
        }
    }

    fn replace_with(&self, fresh: Box<TortureObject>) {
        let fresh = Tracked::new(fresh);
        if self.deferred_only {
            return self.cell.replace(fresh);
        }
        match fresh.object().seq() % 3 {
            0 => self.cell.replace(fresh),
            1 => self.cell.update(move |_| fresh),
            _ => drop(self.cell.replace_and_synchronize(fresh)),
        }
    }
}

impl Torture for RcuLite<Memb> {
    fn read(&self) -> bool {
        let guard = memb::read_lock();
        self.cell.read(&guard).object().is_live()
    }

    fn read_with(&self, inside: &mut dyn FnMut(&TortureObject)) {
        let guard = memb::read_lock();
        inside(self.cell.read(&guard).object());
    }

    fn replace(&self, fresh: Box<TortureObject>) {
        self.replace_with(fresh);
    }
}

std::thread_local! {
    /// This reader thread's qsbr registration and its reads since the last
    /// quiescent state.
    static QSBR_READER: RefCell<Option<(QsbrThread, u32)>> = const { RefCell::new(None) };
}

/// Reads between two quiescent states of a qsbr torture reader.
const READS_PER_QS: u32 = 16;

impl Torture for RcuLite<Qsbr> {
    fn read(&self) -> bool {
        QSBR_READER.with(|slot| {
            let mut slot = slot.borrow_mut();
            let (registration, reads) = slot.get_or_insert_with(|| (QsbrThread::register(), 0));
            *reads += 1;
            if *reads == READS_PER_QS {
                *reads = 0;
                registration.quiescent_state();
            }
            let guard = registration.read_lock();
            self.cell.read(&guard).object().is_live()
        })
    }

    fn read_with(&self, inside: &mut dyn FnMut(&TortureObject)) {
        QSBR_READER.with(|slot| {
            let mut slot = slot.borrow_mut();
            // A thread that only ever reads through `read_with` (a fault
            // thread) stays online from here until it exits: exiting while
            // registered is one of the faults.
            let (registration, _) = slot.get_or_insert_with(|| (QsbrThread::register(), 0));
            let guard = registration.read_lock();
            inside(self.cell.read(&guard).object());
        })
    }

    fn replace(&self, fresh: Box<TortureObject>) {
        self.replace_with(fresh);
    }
}

impl<F: Flavor> Drop for RcuLite<F> {
    fn drop(&mut self) {
        // Let every deferred reclamation run before the ledger closes.
        F::rcu_barrier();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::torture::object::Ledger;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
    use std::time::Duration;

    /// Dropping the torture cell waits for its pending `call_rcu`
    /// reclamations (`rcu_barrier`): the run's ledger must see every object
    /// reclaimed before it closes, or a leak is reported.
    #[test]
    fn dropping_waits_for_pending_reclamations() {
        let ledger = Ledger::new();
        let cell = RcuLite::<Memb>::new(&Options {
            ledger: Arc::clone(&ledger),
            ..Options::default()
        });
        let (inside, release) = (AtomicBool::new(false), AtomicBool::new(false));
        std::thread::scope(|s| {
            // A reader whose section holds up every grace period.
            s.spawn(|| {
                let _section = memb::read_lock();
                inside.store(true, SeqCst);
                while !release.load(SeqCst) {
                    std::thread::sleep(Duration::from_millis(1));
                }
            });
            while !inside.load(SeqCst) {
                std::thread::yield_now();
            }
            // Sequence number 3: `Rcu::replace`, a `call_rcu`.
            cell.replace(TortureObject::new(&ledger, 3));
            let dropper = s.spawn(move || drop(cell));
            // A drop that does not wait returns meanwhile.
            std::thread::sleep(Duration::from_millis(100));
            let (returned, pending) = (dropper.is_finished(), ledger.unreclaimed());
            release.store(true, SeqCst);
            dropper.join().unwrap();
            assert!(
                !returned || pending == 0,
                "the cell's drop returned with {pending} reclamations pending"
            );
        });
        assert_eq!(ledger.unreclaimed(), 0);
    }
}
