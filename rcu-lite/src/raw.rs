//! The raw layer: guard-less read-side sections and deferred frees of raw
//! pointers, for data-structure authors who manage their own pointers.
//!
//! Kernel counterparts: `rcu_read_lock()`/`rcu_read_unlock()` without a guard
//! object, `rcu_dereference()` and `kfree_rcu()`.
//!
//! The safe layer ([`crate::memb::read_lock`], [`crate::Rcu`]) is built on the
//! same operations; this layer only drops the compile-time pairing. Its
//! obligations are the usual RCU ones, stated per function. Publishing is
//! the caller's own `AtomicPtr` store or swap with Release (or stronger)
//! ordering (`rcu_assign_pointer()`, `rcu_replace_pointer()`), which
//! [`dereference`]'s Acquire load pairs with.

use crate::flavor::{Flavor, ReadGuard};
use crate::memb;
use std::sync::atomic::AtomicPtr;
use std::sync::atomic::Ordering::Acquire;

/// Loads the object `src` points to for the read-side section of `guard`
/// (`rcu_dereference()`): `None` if `src` is null. The reference borrows both
/// `src` and `guard`, so it cannot outlive the section, nor the structure
/// that holds `src` (whose owner may free the current object at once when
/// it is dropped).
///
/// ```
/// use rcu_lite::{Memb, memb, raw};
/// use std::sync::atomic::AtomicPtr;
/// use std::sync::atomic::Ordering::AcqRel;
///
/// let config = AtomicPtr::new(Box::into_raw(Box::new(1u64)));
/// {
///     let guard = memb::read_lock();
///     // SAFETY: `config` only ever holds `Box`es freed through
///     // `defer_drop_box::<_, Memb>` once unpublished (or, below, once no
///     // reader can be left).
///     assert_eq!(unsafe { raw::dereference(&config, &guard) }, Some(&1));
/// }
/// // Publish a new value (Release, `rcu_replace_pointer()`) ...
/// let old = config.swap(Box::into_raw(Box::new(2)), AcqRel);
/// // ... and free the old one after a grace period (`kfree_rcu()`).
/// // SAFETY: from `Box::into_raw`, unpublished by the swap above. `Memb`:
/// // the flavor of the readers' guards (readers under qsbr guards need
/// // `Qsbr` here; a grace period of one flavor does not wait for the other's
/// // readers).
/// unsafe { raw::defer_drop_box::<u64, Memb>(old) };
/// memb::rcu_barrier();
/// # // SAFETY: unpublished, and no section is open.
/// # drop(unsafe { Box::from_raw(config.into_inner()) });
/// ```
///
/// The reference ends with the guard:
///
/// ```compile_fail,E0597
/// use rcu_lite::{memb, raw};
/// use std::sync::atomic::AtomicPtr;
///
/// let config = AtomicPtr::new(Box::into_raw(Box::new(1u64)));
/// let value = {
///     let guard = memb::read_lock();
///     // `guard` does not live long enough
///     unsafe { raw::dereference(&config, &guard) }
/// };
/// println!("{value:?}");
/// ```
///
/// And with the pointer it was loaded from, whose owner frees what it points
/// to:
///
/// ```compile_fail,E0505
/// use rcu_lite::{memb, raw};
/// use std::sync::atomic::AtomicPtr;
///
/// let config = AtomicPtr::new(Box::into_raw(Box::new(1u64)));
/// let guard = memb::read_lock();
/// let value = unsafe { raw::dereference(&config, &guard) };
/// // cannot move out of `config` because it is borrowed
/// drop(unsafe { Box::from_raw(config.into_inner()) });
/// println!("{value:?}");
/// ```
///
/// # Safety
///
/// 1. Every non-null pointer stored in `src` points to a valid `T`, published
///    with a Release (or stronger) store or RMW, after which the `T` is not
///    mutated except through interior mutability while it can be reached.
/// 2. An object stored in `src` is freed (or its memory otherwise reused)
///    only after a grace period of the guard's flavor that began after it
///    was unpublished: through [`defer_drop_box`] with that flavor, after a
///    `synchronize_rcu()` of that flavor, or once no reference that
///    `dereference` returned from `src` can be alive (the owner's `&mut`
///    access to `src`, as in `Drop`: each such reference borrows `src`).
#[inline]
pub unsafe fn dereference<'g, T: Sync, G: ReadGuard>(
    src: &'g AtomicPtr<T>,
    _guard: &'g G,
) -> Option<&'g T> {
    // Acquire pairs with the Release (or stronger) store that published the
    // pointer: the object's initialization happens before our reads of it.
    let ptr = src.load(Acquire);
    // SAFETY: null or a valid `T` (contract 1); the guard's section began
    // before this load, so no grace period that could free it has ended, and
    // `'g` ends the reference with the section (contract 2).
    unsafe { ptr.as_ref() }
}

/// Enters a memb read-side section without a guard (`rcu_read_lock()`). End it
/// with [`memb_read_unlock`] on the same thread.
///
/// A section left open is not detected: like a guard leaked with
/// `mem::forget`, it holds up every later grace period of the flavor (and so
/// every `call_rcu()` callback and `rcu_barrier()`) forever, also after the
/// thread exits, since its record is kept, still inside (at exit it cannot be
/// told from a guard that a later thread-local or thread-specific destructor
/// still holds). On the thread itself, `synchronize_rcu()` and
/// `rcu_barrier()` panic as inside any section.
///
/// # Panics
///
/// As [`memb::read_lock`]: if the thread's sections would nest more than
/// 32767 deep.
#[inline]
pub fn memb_read_lock() {
    memb::lock();
}

/// Ends the innermost memb read-side section of the calling thread
/// (`rcu_read_unlock()`).
///
/// # Safety
///
/// 1. The section being ended was entered with [`memb_read_lock`] on this
///    thread, not by a live [`memb::Guard`]: ending a guard's section early
///    would leave the guard's references unprotected.
/// 2. No reference obtained inside the section is used afterwards.
///
/// # Panics
///
/// If the thread is not inside a read-side section (unbalanced unlock).
#[inline]
pub unsafe fn memb_read_unlock() {
    match memb::registered_record() {
        Some(record) => memb::unlock(record),
        None => memb::unbalanced_unlock(),
    }
}

/// Drops the `Box<T>` behind `ptr` on flavor `F`'s callback thread after a
/// grace period that begins after this call (`kfree_rcu()`). A drop still
/// queued when the process exits never runs (see `call_rcu`).
///
/// # Safety
///
/// 1. `ptr` came from `Box::into_raw` and is freed by nobody else.
/// 2. `ptr` is already unreachable for new readers when this is called: the
///    store that unpublished it happens before the call (made by this thread,
///    or by one this thread synchronized with since, not merely seen through
///    a Relaxed load); readers that reached it earlier are inside read-side
///    sections of flavor `F`.
///
/// # Panics
///
/// As flavor `F`'s `call_rcu()`: between the calling thread's
/// [`fork::before_fork`](crate::fork::before_fork) and `after_fork_*`, and if
/// the callback thread cannot be started (the drop is queued all the same,
/// and runs once a later `call_rcu()` or `rcu_barrier()` of `F` starts it).
pub unsafe fn defer_drop_box<T: Send + 'static, F: Flavor>(ptr: *mut T) {
    struct Owned<T>(*mut T);
    // SAFETY: the pointer is an owned `Box<T>` (contract 1); sending it sends
    // the `T`, which is `Send`.
    unsafe impl<T: Send> Send for Owned<T> {}
    let owned = Owned(ptr);
    F::call_rcu(move || {
        let owned = owned;
        // SAFETY: an owned `Box` (contract 1); the grace period that ran before
        // this callback waited for every reader that could reach it (contract 2).
        drop(unsafe { Box::from_raw(owned.0) });
    });
}
