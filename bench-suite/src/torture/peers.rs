//! The peers under torture.

use super::object::{self, TortureObject};
use super::{Options, Torture};
use crate::registry::{Implementation, Origin};
use crossbeam_epoch::{self as epoch, Atomic, Owned};
use std::sync::atomic::Ordering::{AcqRel, Acquire};

/// `crossbeam-epoch`.
pub(super) const CROSSBEAM_EPOCH: Implementation<dyn Torture, Options> = Implementation {
    name: "crossbeam-epoch",
    summary: "crossbeam_epoch: readers pin, writers swap and defer_destroy-style reclaim",
    origin: Origin::Peer,
    make: |o| Ok(Box::new(CrossbeamEpoch::new(o))),
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
