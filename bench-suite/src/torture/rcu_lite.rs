//! `rcu-lite` under torture: readers reach the object in an `Rcu` cell inside
//! memb or qsbr read-side sections; writers rotate through the three ways the
//! cell retires a value (`replace`: `call_rcu`; `update`: `call_rcu`;
//! `replace_and_synchronize`: `synchronize_rcu` then reclaim at once).

use super::object::{self, POISON, TortureObject};
use super::{Options, Torture};
use crate::registry::{Implementation, Origin};
use rcu_lite::qsbr::QsbrThread;
use rcu_lite::{Flavor, Memb, Qsbr, Rcu, memb};
use std::cell::RefCell;
use std::sync::atomic::Ordering::{Acquire, Relaxed, Release};
use std::sync::atomic::{AtomicPtr, AtomicU64};

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
///
/// The cell keeps each value in a box of its own and frees that box right
/// after dropping the value, with no quarantine. A reader that reaches a box
/// freed too early reads whatever the allocator wrote there (glibc's tcache
/// stores its list link and a key in the first two words): following a plain
/// pointer from it would crash the run instead of counting the error. So the
/// pointer sits between two magic words that `drop` poisons before it clears
/// the pointer, and a reader follows it only when both words read
/// [`TRACKED_LIVE`]; otherwise it gets [`object::RECLAIMED`], a poisoned
/// object, and counts a premature reclamation. A box the allocator has
/// already handed to a writer's next value reads as that value: a miss, not
/// a crash.
// repr(C): the words stay in this order, the pointer between them.
#[repr(C)]
struct Tracked {
    magic: AtomicU64,
    object: AtomicPtr<TortureObject>,
    magic_after: AtomicU64,
}

/// The magic words of a [`Tracked`] no drop has reached.
const TRACKED_LIVE: u64 = 0x7ac4_ed0b_1ec7_11fe;

// SAFETY: `Tracked` owns its object (a `TortureObject` is `Send + Sync`: atomics
// and an `Arc`); it is only reclaimed once, by `drop`.
unsafe impl Send for Tracked {}
// SAFETY: shared access only reads the object through `&TortureObject`.
unsafe impl Sync for Tracked {}

impl Tracked {
    fn new(object: Box<TortureObject>) -> Tracked {
        Tracked {
            magic: AtomicU64::new(TRACKED_LIVE),
            object: AtomicPtr::new(Box::into_raw(object)),
            magic_after: AtomicU64::new(TRACKED_LIVE),
        }
    }

    /// The tracked object, or [`object::RECLAIMED`] when this `Tracked` was
    /// dropped (or its box freed and reused) under the reader.
    #[inline]
    fn object(&self) -> &TortureObject {
        // Acquire, all three: each load stays after the one before it. The
        // drop poisons `magic_after` before it clears `object` (Release), so
        // a reader whose `object` load sees the clearing, or a later write,
        // sees the poison in `magic_after`.
        let before = self.magic.load(Acquire);
        let object = self.object.load(Acquire);
        let after = self.magic_after.load(Acquire);
        if before != TRACKED_LIVE || after != TRACKED_LIVE || !object.is_aligned() {
            return &object::RECLAIMED;
        }
        // SAFETY: both magic words were live around the pointer's load, so
        // it is this value's object, which `drop` hands to the ledger's
        // quarantine: it stays allocated (poisoned once reclaimed) for as
        // long as any reader can still be inside.
        match unsafe { object.as_ref() } {
            Some(object) => object,
            None => &object::RECLAIMED,
        }
    }

    fn seq(&self) -> u64 {
        self.object().seq()
    }
}

impl Drop for Tracked {
    fn drop(&mut self) {
        // Relaxed for the words, Release for the clearing: see `object`.
        self.magic.store(POISON, Relaxed);
        self.magic_after.store(POISON, Relaxed);
        let object = self.object.swap(std::ptr::null_mut(), Release);
        // SAFETY: the pointer came from `Box::into_raw` of a
        // `TortureObject::new` box in `new`, and this drop runs once; the
        // cell drops a value only when no reader can reach it (unless the
        // primitive is broken, which the poison lets readers count).
        unsafe { object::reclaim(object) };
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
        match fresh.seq() % 3 {
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

    /// A reader that reaches a `Tracked` after its drop (the cell freed its
    /// box too early) gets the poisoned stand-in, which counts as an error.
    #[test]
    fn a_dropped_tracked_reads_as_reclaimed() {
        let ledger = Ledger::new();
        let mut tracked = std::mem::ManuallyDrop::new(Tracked::new(TortureObject::new(&ledger, 1)));
        assert!(tracked.object().is_live());
        assert_eq!(tracked.seq(), 1);
        // SAFETY: dropped once; the memory stays owned by the ManuallyDrop,
        // which is never dropped again, so reading it afterwards is sound.
        unsafe { std::mem::ManuallyDrop::drop(&mut tracked) };
        assert!(std::ptr::eq(tracked.object(), &object::RECLAIMED));
        assert!(!tracked.object().is_live());
        assert_eq!(ledger.reclaimed(), 1);
    }

    /// What an allocator writes into a freed box (glibc's tcache: a list link
    /// and a key over the first two words) is never followed as a pointer:
    /// each word that is not live turns the read into the poisoned stand-in.
    /// A reader that followed the garbage pointer here would crash the test.
    #[test]
    fn garbage_in_a_freed_box_is_never_followed() {
        let ledger = Ledger::new();
        let tracked = Tracked::new(TortureObject::new(&ledger, 2));
        let real = tracked.object.load(Relaxed);
        // An aligned address that is mapped by nothing.
        let garbage = std::ptr::without_provenance_mut::<TortureObject>(0x10);
        let cases: [(&str, &AtomicU64, u64); 4] = [
            (
                "link over the first word",
                &tracked.magic,
                0x5555_0000_1234_5678,
            ),
            ("poison in the first word", &tracked.magic, POISON),
            ("poison in the last word", &tracked.magic_after, POISON),
            ("a live word's neighbour", &tracked.magic_after, 0),
        ];
        for (what, word, value) in cases {
            tracked.object.store(garbage, Relaxed);
            word.store(value, Relaxed);
            assert!(
                std::ptr::eq(tracked.object(), &object::RECLAIMED),
                "{what}: not read as reclaimed"
            );
            word.store(TRACKED_LIVE, Relaxed);
        }
        // Live words around a null or misaligned pointer: not followed either.
        for bad in [std::ptr::null_mut(), real.wrapping_byte_add(1)] {
            tracked.object.store(bad, Relaxed);
            assert!(std::ptr::eq(tracked.object(), &object::RECLAIMED));
        }
        tracked.object.store(real, Relaxed);
        assert!(tracked.object().is_live());
    }

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
