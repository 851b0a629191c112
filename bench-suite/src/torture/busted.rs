//! `busted`: a deliberately broken implementation that frees every replaced
//! object at once, without waiting for readers, so that a torture run of it
//! must fail.
//!
//! The counterpart of the kernel's `rcutorture.torture_type=busted`
//! (`rcu_busted_ops`, whose grace periods end without waiting): a check of
//! the checker. `syncbench torture --impl busted` on a machine shows that the
//! harness finds a premature free there, and exits with 1. It is a
//! [`Origin::SelfCheck`]: never part of `--impl all`, the report or its
//! comparisons.
//!
//! Invariant: every object it unpublishes is handed to [`object::reclaim`]
//! exactly once, right after the unpublish (`after` later, in the harness's
//! own tests), and the last published object when it is dropped; so the
//! harness's leak and double-reclamation checks pass, and only readers can
//! find the bug.

use super::object::{self, TortureObject};
use super::{Options, Torture};
use crate::registry::{Implementation, Origin};
use std::sync::Arc;
use std::sync::atomic::AtomicPtr;
use std::sync::atomic::Ordering::{AcqRel, Acquire};
use std::time::Duration;

/// `busted`.
pub(super) const BUSTED: Implementation<dyn Torture, Options> = Implementation {
    name: "busted",
    summary: "broken on purpose: writers swap and free the old object at once, without waiting for readers; its run must fail",
    origin: Origin::SelfCheck,
    make: |o| Ok(Box::new(Busted::new(&o.ledger, Duration::ZERO))),
};

/// Publishes through one pointer and frees the old object `after` its
/// unpublish, without waiting for readers that may hold it: a grace period
/// that ends early.
pub(super) struct Busted {
    pub(super) current: AtomicPtr<TortureObject>,
    after: Duration,
}

impl Busted {
    /// Publishes object 0 of `ledger`; replaced objects are freed `after`
    /// their unpublish.
    pub(super) fn new(ledger: &Arc<object::Ledger>, after: Duration) -> Busted {
        Busted {
            current: AtomicPtr::new(Box::into_raw(TortureObject::new(ledger, 0))),
            after,
        }
    }

    fn reach(&self) -> &TortureObject {
        // Acquire pairs with the AcqRel swap in `replace`: the object's
        // contents are initialized before a reader reaches it.
        let current = self.current.load(Acquire);
        // SAFETY: every pointer stored in `current` came from
        // `Box::into_raw`, and `object::reclaim` only poisons an object and
        // parks it in the quarantine, which keeps it allocated for 600 ms and
        // at least 16384 objects: far longer than any section of a torture
        // reader. So the reference stays valid, and a premature reclamation
        // shows up as a poisoned object, counted, instead of a crash.
        unsafe { &*current }
    }
}

impl Torture for Busted {
    fn read(&self) -> bool {
        self.reach().is_live()
    }

    fn read_with(&self, inside: &mut dyn FnMut(&TortureObject)) {
        inside(self.reach())
    }

    fn replace(&self, fresh: Box<TortureObject>) {
        // AcqRel: Release publishes `fresh` to readers (pairs with `reach`),
        // Acquire takes the old object from the writer that published it.
        let old = self.current.swap(Box::into_raw(fresh), AcqRel);
        if !self.after.is_zero() {
            crate::delay::spin_for(self.after);
        }
        // SAFETY: `old` came from `Box::into_raw` and was unpublished by the
        // swap above, which only this call saw, so it is reclaimed once.
        // Readers may still hold it: that is the bug this implementation
        // plants, and the quarantine keeps the memory valid for their check.
        unsafe { object::reclaim(old) };
    }
}

impl Drop for Busted {
    fn drop(&mut self) {
        // SAFETY: the last published object, owned by `self`; no reader is
        // left once the primitive is dropped.
        unsafe { object::reclaim(*self.current.get_mut()) };
    }
}
