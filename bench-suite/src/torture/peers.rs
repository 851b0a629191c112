//! The peers under torture: crossbeam-epoch (epochs), and the two
//! hazard-pointer crates, haphazard (folly's design) and seize (hyaline-style
//! reference counting of batches).

use super::object::{self, TortureObject};
use super::{Options, Torture};
use crate::registry::{Implementation, Origin};
use crossbeam_epoch::{self as epoch, Atomic, Owned};
use std::cell::Cell;
use std::ops::Deref;
use std::ptr::NonNull;
use std::sync::Arc;
use std::sync::atomic::AtomicPtr;
use std::sync::atomic::Ordering::{AcqRel, Acquire};

/// `crossbeam-epoch`.
pub(super) const CROSSBEAM_EPOCH: Implementation<dyn Torture, Options> = Implementation {
    name: "crossbeam-epoch",
    summary: "crossbeam_epoch: readers pin, writers swap and defer_destroy-style reclaim",
    origin: Origin::Peer,
    make: |o| Ok(Box::new(CrossbeamEpoch::new(o))),
};

/// `haphazard`.
pub(super) const HAPHAZARD: Implementation<dyn Torture, Options> = Implementation {
    name: "haphazard",
    summary: "haphazard: readers protect with a HazardPointer of the run's own domain, kept per thread; writers swap and retire_in it",
    origin: Origin::Peer,
    make: |o| Ok(Box::new(Haphazard::new(o))),
};

/// `seize`.
pub(super) const SEIZE: Implementation<dyn Torture, Options> = Implementation {
    name: "seize",
    summary: "seize: readers enter the run's Collector and protect; writers swap and retire",
    origin: Origin::Peer,
    make: |o| Ok(Box::new(Seize::new(o))),
};

struct CrossbeamEpoch {
    current: Atomic<TortureObject>,
}

impl CrossbeamEpoch {
    fn new(options: &Options) -> Self {
        CrossbeamEpoch {
            current: Atomic::from(Owned::from(TortureObject::new(&options.ledger, 0))),
        }
    }
}

/// A raw pointer moved into a deferred closure.
struct SendPtr(*mut TortureObject);
// SAFETY: the pointee is an unpublished object whose only remaining owner is
// the deferred function that carries this pointer.
unsafe impl Send for SendPtr {}

impl Torture for CrossbeamEpoch {
    fn read(&self) -> bool {
        let guard = epoch::pin();
        let shared = self.current.load(Acquire, &guard);
        // SAFETY: the pointer is never null (every replace installs an object)
        // and `guard` keeps it from being reclaimed.
        unsafe { shared.deref() }.is_live()
    }

    fn read_with(&self, inside: &mut dyn FnMut(&TortureObject)) {
        let guard = epoch::pin();
        let shared = self.current.load(Acquire, &guard);
        // SAFETY: as in `read`; `guard` stays pinned until `inside` returns
        // or unwinds.
        inside(unsafe { shared.deref() });
    }

    fn replace(&self, fresh: Box<TortureObject>) {
        let guard = epoch::pin();
        let old = self.current.swap(Owned::from(fresh), AcqRel, &guard);
        let old = SendPtr(old.as_raw().cast_mut());
        // SAFETY: `old` is unpublished; crossbeam runs the closure only after
        // every thread pinned now has unpinned, so no reader can reach it then.
        unsafe {
            guard.defer_unchecked(move || {
                let old = old;
                object::reclaim(old.0)
            })
        };
    }

    /// Its objects are deferred to crossbeam's global collector, which runs
    /// them when it gets to them: some outlive the run (about 1 in 60 of a
    /// 300 ms run's here).
    fn reclaims_all_when_dropped(&self) -> bool {
        false
    }
}

impl Drop for CrossbeamEpoch {
    fn drop(&mut self) {
        // SAFETY: `&mut self`: no reader is inside; the last object is ours.
        let last = unsafe { self.current.load(Acquire, epoch::unprotected()) };
        // SAFETY: published objects come from `Owned::from(Box)`, so `as_raw`
        // is a `Box::into_raw` pointer that no one else frees.
        unsafe { object::reclaim(last.as_raw().cast_mut()) };
        // Push this thread's deferred reclamations out so they can run.
        epoch::pin().flush();
    }
}

/// A torture object owned through haphazard's `Pointer` trait: reclaiming
/// it (dropping the reconstructed pointer) is the ledger's reclamation.
struct Reclaimed(NonNull<TortureObject>);

impl Deref for Reclaimed {
    type Target = TortureObject;
    fn deref(&self) -> &TortureObject {
        // SAFETY: owned and live until `drop`, which reclaims it.
        unsafe { self.0.as_ref() }
    }
}

impl Drop for Reclaimed {
    fn drop(&mut self) {
        // SAFETY: a `Box::into_raw` pointer of a `TortureObject::new` box
        // (from `Reclaimed::from(Box)`), dropped once: haphazard reconstructs
        // it with `from_raw` only when no hazard pointer protects it.
        unsafe { object::reclaim(self.0.as_ptr()) };
    }
}

impl From<Box<TortureObject>> for Reclaimed {
    fn from(object: Box<TortureObject>) -> Reclaimed {
        Reclaimed(NonNull::from(Box::leak(object)))
    }
}

// SAFETY: 1. `into_raw` returns the pointer of a live, owned object, valid as
// `&mut`; 2. it stays valid until `from_raw` takes it back (nothing else frees
// it); 3. each `into_raw` pointer is rebuilt by at most one `from_raw`.
unsafe impl haphazard::raw::Pointer<TortureObject> for Reclaimed {
    fn into_raw(self) -> *mut TortureObject {
        let ptr = self.0.as_ptr();
        std::mem::forget(self);
        ptr
    }

    unsafe fn from_raw(ptr: *mut TortureObject) -> Self {
        // SAFETY: per the trait's contract, `ptr` came from `into_raw`.
        Reclaimed(unsafe { NonNull::new_unchecked(ptr) })
    }
}

/// The family of the per-run haphazard domains. Not a singleton: every load
/// is `unsafe` and uses the run's own domain, which the type cannot prove.
struct TortureFamily;

struct Haphazard {
    current: haphazard::AtomicPtr<TortureObject, TortureFamily, Reclaimed>,
    /// The run's own domain, shared with the hazard pointer each reader
    /// thread keeps for it ([`KEPT_HAZARD`]).
    domain: Arc<haphazard::Domain<TortureFamily>>,
}

/// A thread's hazard pointer of one run's domain, kept from one read to
/// the next as a user keeps one per thread (refscale's haphazard reader
/// keeps one of the global domain). A new one for every section is a CAS
/// on the domain's record list, which the readers contend on: a reader
/// that loses it calls `sched_yield`, handing its CPU time to the writers.
struct KeptHazard {
    // Declared before `domain`, so dropped before it: the hazard pointer
    // borrows the domain that the `Arc` keeps alive.
    hazard: haphazard::HazardPointer<'static, TortureFamily>,
    domain: Arc<haphazard::Domain<TortureFamily>>,
}

impl KeptHazard {
    fn new(domain: &Arc<haphazard::Domain<TortureFamily>>) -> Self {
        let domain = Arc::clone(domain);
        // SAFETY: the `'static` is a lie the struct keeps true: the domain
        // is a heap allocation that `domain` keeps alive and in place, and
        // the hazard pointer, dropped first (field order), never outlives it.
        let hazard = unsafe {
            std::mem::transmute::<
                haphazard::HazardPointer<'_, TortureFamily>,
                haphazard::HazardPointer<'static, TortureFamily>,
            >(haphazard::HazardPointer::new_in_domain(&domain))
        };
        KeptHazard { hazard, domain }
    }
}

thread_local! {
    /// This thread's hazard pointer of the domain it read last.
    static KEPT_HAZARD: Cell<Option<KeptHazard>> = const { Cell::new(None) };
}

impl Haphazard {
    fn new(options: &Options) -> Self {
        Haphazard {
            current: haphazard::AtomicPtr::from(Reclaimed::from(TortureObject::new(
                &options.ledger,
                0,
            ))),
            domain: Arc::new(haphazard::Domain::new(&TortureFamily)),
        }
    }

    /// One read section with this thread's kept hazard pointer of the
    /// domain (a new one if the thread last read another run's). The
    /// pointer is out of the thread-local while `f` runs: a nested read
    /// takes one of its own, and if `f` unwinds, the pointer is dropped,
    /// which ends its protection.
    fn protected<R>(&self, f: impl FnOnce(&TortureObject) -> R) -> R {
        let mut kept = match KEPT_HAZARD.take() {
            Some(kept) if Arc::ptr_eq(&kept.domain, &self.domain) => kept,
            _ => KeptHazard::new(&self.domain),
        };
        // SAFETY: every object stored in `current` is retired only through
        // `self.domain`, the domain of `kept.hazard`.
        let object = unsafe { self.current.load(&mut kept.hazard) };
        let result = f(object.expect("never null: every replace installs an object"));
        // The section ends here: a kept pointer must not go on protecting
        // the object until the thread's next read.
        kept.hazard.reset_protection();
        KEPT_HAZARD.set(Some(kept));
        result
    }
}

impl Torture for Haphazard {
    fn read(&self) -> bool {
        self.protected(TortureObject::is_live)
    }

    fn read_with(&self, inside: &mut dyn FnMut(&TortureObject)) {
        self.protected(inside);
    }

    fn replace(&self, fresh: Box<TortureObject>) {
        let old = self
            .current
            .swap(Reclaimed::from(fresh))
            .expect("never null: every replace installs an object");
        // SAFETY: 1. unpublished by the swap, so no later load returns it;
        // 2. retired once (only this swap returned it); 3. every load that
        // could have seen it used a hazard pointer of `self.domain`.
        unsafe { old.retire_in(&*self.domain) };
    }
}

impl Drop for Haphazard {
    fn drop(&mut self) {
        // SAFETY: `&mut self`: no reader is inside, and the last published
        // object is owned by the pointer alone; rebuilding it reclaims it.
        drop(unsafe {
            <Reclaimed as haphazard::raw::Pointer<TortureObject>>::from_raw(*self.current.get_mut())
        });
        // Threads that read keep the domain alive until they exit (a run's
        // readers have exited by now, but the thread dropping this may have
        // read too), so its own drop may come later: free every retired
        // object now. No kept hazard pointer protects one outside a read.
        self.domain.eager_reclaim();
    }
}

struct Seize {
    collector: seize::Collector,
    current: AtomicPtr<TortureObject>,
}

impl Seize {
    fn new(options: &Options) -> Self {
        Seize {
            collector: seize::Collector::new(),
            current: AtomicPtr::new(Box::into_raw(TortureObject::new(&options.ledger, 0))),
        }
    }
}

/// seize's reclaimer for torture objects.
///
/// # Safety
///
/// As [`object::reclaim`]: seize calls it once per retired object, after no
/// guard can still reach it.
unsafe fn reclaim_seized(ptr: *mut TortureObject, _collector: &seize::Collector) {
    // SAFETY: forwarded contract.
    unsafe { object::reclaim(ptr) }
}

impl Torture for Seize {
    fn read(&self) -> bool {
        use seize::Guard;
        let guard = self.collector.enter();
        // Acquire pairs with the writers' AcqRel swap that published it.
        let p = guard.protect(&self.current, Acquire);
        // SAFETY: never null; protected by `guard` until it is dropped.
        unsafe { &*p }.is_live()
    }

    fn read_with(&self, inside: &mut dyn FnMut(&TortureObject)) {
        use seize::Guard;
        let guard = self.collector.enter();
        // Acquire pairs with the writers' AcqRel swap that published it.
        let p = guard.protect(&self.current, Acquire);
        // SAFETY: as in `read`; `guard` lives until `inside` returns or
        // unwinds.
        inside(unsafe { &*p });
    }

    fn replace(&self, fresh: Box<TortureObject>) {
        let old = self.current.swap(Box::into_raw(fresh), AcqRel);
        // SAFETY: `old` is unpublished by the swap and retired once, and was
        // only ever read under guards of `self.collector`.
        unsafe { self.collector.retire(old, reclaim_seized) };
    }
}

impl Drop for Seize {
    fn drop(&mut self) {
        // SAFETY: `&mut self`: no reader is inside; the last published
        // object is owned by `current` alone. The collector (dropped next)
        // reclaims every retired object.
        unsafe { object::reclaim(*self.current.get_mut()) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::torture::object::Ledger;

    fn haphazard_with_a_ledger() -> (Arc<Ledger>, Haphazard) {
        let ledger = Ledger::new();
        let primitive = Haphazard::new(&Options {
            ledger: Arc::clone(&ledger),
            ..Options::default()
        });
        (ledger, primitive)
    }

    /// The hazard pointer a thread keeps between reads protects nothing
    /// once a read ends, and the domain it keeps alive holds nothing back
    /// once the primitive is dropped, on the thread that read, too.
    #[test]
    fn a_kept_hazard_pointer_protects_only_inside_a_read() {
        let (ledger, primitive) = haphazard_with_a_ledger();
        for seq in 1..=100 {
            assert!(primitive.read());
            primitive.replace(TortureObject::new(&ledger, seq));
        }
        // The object the last read reached is retired too: a pass frees
        // all 101 retired, the current one alone staying.
        assert!(primitive.read());
        primitive.replace(TortureObject::new(&ledger, 101));
        primitive.domain.eager_reclaim();
        assert_eq!((ledger.allocated(), ledger.reclaimed()), (102, 101));
        let kept = KEPT_HAZARD.take().expect("this thread keeps one");
        assert!(Arc::ptr_eq(&kept.domain, &primitive.domain));
        KEPT_HAZARD.set(Some(kept));
        // One more retired object, which the drop must free, though this
        // thread keeps the domain alive.
        primitive.replace(TortureObject::new(&ledger, 102));
        drop(primitive);
        assert_eq!(
            (ledger.allocated(), ledger.reclaimed()),
            (103, 103),
            "(allocated, reclaimed)"
        );
        // A later run's primitive gets a hazard pointer of its own domain.
        let (ledger, primitive) = haphazard_with_a_ledger();
        assert!(primitive.read());
        let kept = KEPT_HAZARD.take().expect("this thread keeps one");
        assert!(Arc::ptr_eq(&kept.domain, &primitive.domain));
        drop(kept);
        drop(primitive);
        assert_eq!(ledger.reclaimed(), 1);
    }

    /// A read that unwinds drops the hazard pointer it took (which ends its
    /// protection); the thread's next read takes a new one.
    #[test]
    fn a_read_that_unwinds_protects_nothing_afterwards() {
        let (ledger, primitive) = haphazard_with_a_ledger();
        let unwound = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            primitive.read_with(&mut |_| panic!("inside the section"));
        }));
        assert!(unwound.is_err());
        assert!(KEPT_HAZARD.take().is_none(), "dropped by the unwind");
        primitive.replace(TortureObject::new(&ledger, 1));
        primitive.domain.eager_reclaim();
        assert_eq!(
            ledger.reclaimed(),
            1,
            "the first object, read when the read unwound"
        );
        assert!(primitive.read());
        drop(primitive);
        assert_eq!(ledger.reclaimed(), 2);
    }
}
