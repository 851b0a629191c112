//! The `lock_api` layer: [`RawQRwLock`] as a `lock_api::RawRwLock` (and
//! `RawRwLockDowngrade`), so that [`RwLock`] is `lock_api::RwLock`, and
//! [`ReadRecursive`], the recursive read lock that `lock_api` 0.5 has no trait
//! for.
//!
//! Not built under loom: `lock_api` needs a `const INIT`, and loom's atomics
//! are not `const`. The loom models test the raw methods these call.

use crate::raw::RawQRwLock;
#[cfg(feature = "arc_lock")]
use std::sync::Arc;

/// What a guard of [`RwLock`] carries (`RawRwLock::SharedGuard` and
/// `ExclusiveGuard`): nothing, since the lock word holds all the state. It
/// decides only whether guards are `Send`: not by default
/// (`lock_api::GuardNoSend`), as std's and parking_lot's are not, so that a
/// guard held across an `.await` in a future that must be `Send`
/// (`tokio::spawn`) does not compile; with the `send_guard` feature
/// `lock_api::GuardSend`, as parking_lot's feature of that name makes
/// them. An unlock on another thread is sound either way (no operation
/// depends on the thread that locked). Name this type where `lock_api`
/// asks for the marker (`force_unlock_read`, `make_read_guard_unchecked`),
/// so that code compiles with the feature on or off.
#[cfg(not(feature = "send_guard"))]
pub type GuardMarker = lock_api::GuardNoSend;
/// What a guard of [`RwLock`] carries: see the docs without `send_guard`.
#[cfg(feature = "send_guard")]
pub type GuardMarker = lock_api::GuardSend;

// SAFETY: `lock_shared`/`try_lock_shared` succeed only with the reader count
// raised and no writer holding (`read_lock`'s Acquire add, the queue head's
// acquiring wait after the writer byte cleared, or, for a reader admitted from
// the queue, the Release grant of a front reader that is inside and counted it
// in first, read with Acquire);
// `lock_exclusive`/`try_lock_exclusive` succeed only with an Acquire CAS that
// set the writer byte from a word with no reader and no writer. Unlocks are
// Release RMWs. So either many shared holds or one exclusive hold exist, with
// acquire/release ordering. Guards carry no state (the lock word has all of
// it), may be forgotten (the lock stays held, nothing unsound happens), and
// may be sent to another thread where `GuardMarker` lets them (no operation
// depends on the thread that locked). The lock object has no address-dependent state while unlocked: the
// wait queue's nodes live on waiters' stacks, and a waiter borrows the lock.
// A lock operation only unwinds on reader-count overflow, after taking its
// bias back, or when a stray unlock on another thread took its bias
// (`bias_taken_by_a_stray_unlock`, after restoring the word, before any
// queueing): either way it holds nothing. Unlocks only unwind on misuse
// (nothing was held).
unsafe impl lock_api::RawRwLock for RawQRwLock {
    #[allow(clippy::declare_interior_mutable_const)]
    const INIT: Self = RawQRwLock::new();

    type SharedGuard = GuardMarker;
    type ExclusiveGuard = GuardMarker;

    #[inline]
    fn lock_shared(&self) -> GuardMarker {
        self.read_lock();
        GuardMarker::new()
    }

    #[inline]
    fn try_lock_shared(&self) -> Option<GuardMarker> {
        self.try_read_lock().then(GuardMarker::new)
    }

    #[inline]
    unsafe fn unlock_shared(&self, _guard: GuardMarker) {
        // SAFETY: the caller passes the state of a shared hold it owns, as
        // `read_unlock` requires.
        unsafe { self.read_unlock() }
    }

    #[inline]
    fn lock_exclusive(&self) -> GuardMarker {
        self.write_lock();
        GuardMarker::new()
    }

    #[inline]
    fn try_lock_exclusive(&self) -> Option<GuardMarker> {
        self.try_write_lock().then(GuardMarker::new)
    }

    #[inline]
    unsafe fn unlock_exclusive(&self, _guard: GuardMarker) {
        // SAFETY: the caller passes the state of an exclusive hold it owns,
        // as `write_unlock` requires.
        unsafe { self.write_unlock() }
    }

    #[inline]
    fn is_locked(&self) -> bool {
        RawQRwLock::is_locked(self)
    }

    #[inline]
    fn is_locked_exclusive(&self) -> bool {
        RawQRwLock::is_locked_exclusive(self)
    }
}

// SAFETY: sound because `downgrade` is one Release RMW that clears the writer
// byte and adds a reader in the same step: at no instant is the lock free, so
// no writer can enter between the exclusive and the shared hold (a writer
// needs the count at zero), and the Release orders the exclusive section
// before every reader that enters after it. The waiting bit is untouched, so a
// writer queued at the front keeps new fast-path readers out and enters after
// the downgraded reader leaves. The returned state is the shared hold that
// `unlock_shared` releases.
unsafe impl lock_api::RawRwLockDowngrade for RawQRwLock {
    #[inline]
    unsafe fn downgrade(&self, _guard: GuardMarker) -> GuardMarker {
        // SAFETY: the caller passes the state of an exclusive hold it owns.
        unsafe { RawQRwLock::downgrade(self) };
        GuardMarker::new()
    }
}

/// A fair queued reader-writer lock protecting a `T` (see the crate docs'
/// *Fairness* section).
pub type RwLock<T> = lock_api::RwLock<RawQRwLock, T>;

/// A shared hold of an [`RwLock`]; released on drop.
pub type RwLockReadGuard<'a, T> = lock_api::RwLockReadGuard<'a, RawQRwLock, T>;

/// An exclusive hold of an [`RwLock`]; released on drop, or turned into a
/// shared hold with `RwLockWriteGuard::downgrade`.
pub type RwLockWriteGuard<'a, T> = lock_api::RwLockWriteGuard<'a, RawQRwLock, T>;

/// A shared hold of part of an [`RwLock`]'s value, from
/// `RwLockReadGuard::map` or `try_map`; released on drop.
pub type MappedRwLockReadGuard<'a, T> = lock_api::MappedRwLockReadGuard<'a, RawQRwLock, T>;

/// An exclusive hold of part of an [`RwLock`]'s value, from
/// `RwLockWriteGuard::map` or `try_map`; released on drop.
pub type MappedRwLockWriteGuard<'a, T> = lock_api::MappedRwLockWriteGuard<'a, RawQRwLock, T>;

/// A shared hold of an [`RwLock`] in an `Arc`, which the guard owns
/// (`RwLock::read_arc`, with the `arc_lock` feature); released on drop.
#[cfg(feature = "arc_lock")]
pub type ArcRwLockReadGuard<T> = lock_api::ArcRwLockReadGuard<RawQRwLock, T>;

/// An exclusive hold of an [`RwLock`] in an `Arc`, which the guard owns
/// (`RwLock::write_arc`, with the `arc_lock` feature); released on drop.
#[cfg(feature = "arc_lock")]
pub type ArcRwLockWriteGuard<T> = lock_api::ArcRwLockWriteGuard<RawQRwLock, T>;

/// Recursive read locks on an [`RwLock`]: a shared hold that a writer waiting
/// at the front of the queue does not hold up, so a thread that already reads
/// may read again (see [`RawQRwLock::read_lock_recursive`]). `parking_lot`
/// 0.12's `read_recursive` (0.13 has none: its `RecursiveRwLock` makes every
/// read recursive); `lock_api` 0.5 has no trait for it, hence this one.
///
/// ```
/// use qrwlock::{ReadRecursive, RwLock};
///
/// let table = RwLock::new(vec![1, 2, 3]);
/// let outer = table.read();
/// // Were a writer now queued for the lock, `table.read()` here would wait
/// // behind it, and it for `outer`: a deadlock. This one enters.
/// let inner = table.read_recursive();
/// assert_eq!(outer.len() + inner.len(), 6);
/// assert!(table.try_write().is_none(), "readers exclude writers");
/// drop((outer, inner));
/// let writer = table.write();
/// assert!(table.try_read_recursive().is_none(), "a writer inside keeps it out");
/// drop(writer);
/// ```
///
/// Recursive readers do not yield to a waiting writer, so a thread that takes
/// every hold this way can keep writers out for as long as holds overlap:
/// take the outermost hold with `read` and the nested ones with
/// `read_recursive`.
///
/// The guard is `lock_api`'s ordinary read guard (`ArcRwLockReadGuard` from
/// `read_recursive_arc`, with `arc_lock`), and only the hold it was
/// made with is recursive: `RwLockReadGuard::unlocked` (and
/// `ArcRwLockReadGuard::unlocked`) takes the lock back with a plain `read`.
/// So on a nested guard it can deadlock as a nested `read` does: the outer
/// hold keeps a queued writer waiting, and the re-lock waits behind that
/// writer. Drop the nested guard and call `read_recursive` again instead.
///
/// The trait is sealed: only this crate's [`RwLock`] implements it, so that
/// the `arc_lock` feature can add its two methods without breaking another
/// crate's implementation when some crate in the build turns the feature
/// on (a feature must only add). Until 2026-12-07 it was open.
///
/// ```compile_fail,E0277
/// // A wrapper that hands out plain read locks: refused, the trait is sealed.
/// struct Mine(qrwlock::RwLock<u8>);
/// impl qrwlock::ReadRecursive<u8> for Mine {
///     fn read_recursive(&self) -> qrwlock::RwLockReadGuard<'_, u8> {
///         self.0.read()
///     }
///     fn try_read_recursive(&self) -> Option<qrwlock::RwLockReadGuard<'_, u8>> {
///         self.0.try_read()
///     }
/// }
/// ```
pub trait ReadRecursive<T: ?Sized>: sealed::Sealed {
    /// A shared hold that enters past a writer waiting at the front of the
    /// queue, and queues, in FIFO order, only when a writer holds the lock
    /// ([`RawQRwLock::read_lock_recursive`]).
    ///
    /// # Panics
    ///
    /// If about 2 million read locks are held at once (leaked guards).
    fn read_recursive(&self) -> RwLockReadGuard<'_, T>;

    /// A shared hold if no writer holds the lock, even if one waits
    /// ([`RawQRwLock::try_read_lock_recursive`]). Never waits.
    ///
    /// # Panics
    ///
    /// As [`ReadRecursive::read_recursive`].
    fn try_read_recursive(&self) -> Option<RwLockReadGuard<'_, T>>;

    /// [`ReadRecursive::read_recursive`] for a lock in an `Arc`: the guard
    /// owns a clone of the `Arc` (`RwLock::read_arc`'s recursive form, as
    /// parking_lot 0.12's `read_recursive_arc`). With the `arc_lock`
    /// feature.
    ///
    /// # Panics
    ///
    /// As [`ReadRecursive::read_recursive`].
    #[cfg(feature = "arc_lock")]
    fn read_recursive_arc(self: &Arc<Self>) -> ArcRwLockReadGuard<T>;

    /// [`ReadRecursive::try_read_recursive`] for a lock in an `Arc`, as
    /// [`ReadRecursive::read_recursive_arc`]. Never waits.
    ///
    /// # Panics
    ///
    /// As [`ReadRecursive::read_recursive`].
    #[cfg(feature = "arc_lock")]
    fn try_read_recursive_arc(self: &Arc<Self>) -> Option<ArcRwLockReadGuard<T>>;
}

/// Keeps [`ReadRecursive`] to this crate's lock.
mod sealed {
    pub trait Sealed {}

    impl<T: ?Sized> Sealed for super::RwLock<T> {}
}

impl<T: ?Sized> ReadRecursive<T> for RwLock<T> {
    #[inline]
    fn read_recursive(&self) -> RwLockReadGuard<'_, T> {
        // SAFETY: the only operation on the raw lock is a shared acquisition,
        // which invalidates no live guard or reference.
        unsafe { self.raw() }.read_lock_recursive();
        // SAFETY: we hold the lock shared (taken just above) and hand that
        // hold to the guard, whose drop gives it up with `unlock_shared`;
        // `GuardMarker` carries no state.
        unsafe { self.make_read_guard_unchecked(GuardMarker::new()) }
    }

    #[inline]
    fn try_read_recursive(&self) -> Option<RwLockReadGuard<'_, T>> {
        // SAFETY: as in `read_recursive`.
        let entered = unsafe { self.raw() }.try_read_lock_recursive();
        // SAFETY: as in `read_recursive`, when `entered` says we hold it.
        entered.then(|| unsafe { self.make_read_guard_unchecked(GuardMarker::new()) })
    }

    #[cfg(feature = "arc_lock")]
    #[inline]
    fn read_recursive_arc(self: &Arc<Self>) -> ArcRwLockReadGuard<T> {
        // SAFETY: as in `read_recursive`.
        unsafe { self.raw() }.read_lock_recursive();
        // SAFETY: as in `read_recursive`; the guard keeps a clone of the
        // `Arc`, so the lock outlives the hold it gives up on drop.
        unsafe { self.make_arc_read_guard_unchecked(GuardMarker::new()) }
    }

    #[cfg(feature = "arc_lock")]
    #[inline]
    fn try_read_recursive_arc(self: &Arc<Self>) -> Option<ArcRwLockReadGuard<T>> {
        // SAFETY: as in `read_recursive`.
        let entered = unsafe { self.raw() }.try_read_lock_recursive();
        // SAFETY: as in `read_recursive_arc`, when `entered` says we hold it.
        entered.then(|| unsafe { self.make_arc_read_guard_unchecked(GuardMarker::new()) })
    }
}
