//! The value a pointer-publishing contender's writers replace and its
//! readers read: a boxed `u64` behind an `AtomicPtr` (the slot).
//!
//! Invariants: the slot always holds a live box that this value owns; a
//! writer's [`Published::replace`] swaps in a new box and hands back the old
//! one as [`Unpublished`], which the writer frees only after its own wait
//! for readers (a grace period or a scan) has returned; the last box is
//! freed on drop, when no reader can be left. One copy of the swap, the
//! free and their orderings for every writer side that waits this way
//! (rcu-lite's two flavors, liburcu's, hazptr's): the kernel's rcuscale
//! writer, `rcu_scale_writer()`, with a real object to free.

use std::sync::atomic::AtomicPtr;
use std::sync::atomic::Ordering::AcqRel;

/// A boxed `u64` published through an `AtomicPtr`.
pub(super) struct Published {
    slot: AtomicPtr<u64>,
}

/// A box [`Published::replace`] took out of the slot. Readers that loaded it
/// before the swap may still hold it; dropping this without
/// [`Unpublished::free`] leaks it.
#[must_use = "free it once no reader can hold it"]
pub(super) struct Unpublished(*mut u64);

impl Published {
    /// Publishes `value`.
    pub(super) fn new(value: u64) -> Published {
        Published {
            slot: AtomicPtr::new(Box::into_raw(Box::new(value))),
        }
    }

    /// The slot readers load (with Acquire, which pairs with `replace`'s
    /// swap) or hand to a protection scheme. Never null.
    pub(super) fn slot(&self) -> &AtomicPtr<u64> {
        &self.slot
    }

    /// Publishes `value` in a new box and returns the one it replaced.
    pub(super) fn replace(&self, value: u64) -> Unpublished {
        // AcqRel: Release publishes the new box to readers' Acquire loads;
        // Acquire orders the old box's later free after its initialization.
        Unpublished(self.slot.swap(Box::into_raw(Box::new(value)), AcqRel))
    }
}

impl Unpublished {
    /// The box's address: what a hazard-pointer wait waits for.
    pub(super) fn as_ptr(&self) -> *const u64 {
        self.0
    }

    /// Frees the box.
    ///
    /// # Safety
    ///
    /// No reader may still hold it: the caller waited, after the `replace`
    /// that returned it, for every reader that could have loaded it (a grace
    /// period of the readers' flavor, or a scan that found it unprotected).
    pub(super) unsafe fn free(self) {
        // SAFETY: allocated by `Box::new` in `new` or `replace`, unpublished
        // by the swap that returned it, and unread by the caller's contract.
        drop(unsafe { Box::from_raw(self.0) });
    }
}

impl Drop for Published {
    fn drop(&mut self) {
        // SAFETY: the box the slot holds is owned by this value, and
        // `&mut self` excludes readers.
        drop(unsafe { Box::from_raw(*self.slot.get_mut()) });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::Ordering::Acquire;

    /// `replace` hands back the box readers saw before it, and the slot then
    /// holds the new value; every box is freed once (miri checks the frees).
    #[test]
    fn replace_hands_back_the_old_box_and_publishes_the_new_one() {
        let value = Published::new(1);
        let before = value.slot().load(Acquire);
        let old = value.replace(2);
        assert_eq!(old.as_ptr(), before.cast_const());
        // SAFETY: the slot holds a live box; nothing frees it meanwhile.
        assert_eq!(unsafe { *value.slot().load(Acquire) }, 2);
        // SAFETY: no reader exists.
        unsafe { old.free() };
        drop(value);
    }
}
