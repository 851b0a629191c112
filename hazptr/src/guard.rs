//! Guards: acquire and release of one hazard slot (the kernel's
//! `hazptr_acquire()` / `hazptr_release()`).
//!
//! # Acquire (the fast path)
//!
//! 1. take a free slot of the thread's block (one TLS access reaches the
//!    block; its free mask says which slots guards have reserved);
//! 2. store the domain's current wildcard into the slot;
//! 3. `fence::light()` — pairs with `fence::heavy()` in `scan::begin`;
//! 4. load the pointer once;
//! 5. store the pointer into the slot.
//!
//! No reload-and-validate loop: while the slot holds the wildcard, a scan
//! treats it as protecting every address, so whatever step 4 returns is
//! protected from the moment it was loaded. No RMW, no SeqCst fence, no
//! syscall and no allocation.
//!
//! Release is a store-release of the empty value (pairs with the scan's
//! Acquire load of the slot), then the slot goes back to the free mask.
//!
//! # The slow path
//!
//! When the thread's slots are all reserved, when the domain forces the slow
//! path, or when the thread is exiting, the guard takes a backup slot from an
//! overflow list instead; protection works the same way. A guard can also
//! move its protection from its block slot to a backup slot
//! ([`Guard::promote`]), freeing the block slot for others.

use crate::atomic_box::AtomicBox;
use crate::domain::{Domain, thread_token};
use crate::slot::{BackupSlot, EMPTY, SlotBlock};
use crate::sync::{AtomicPtr, AtomicUsize, Ordering};
use membarrier_sim::fence;
use std::fmt;
use std::marker::PhantomData;
use std::ptr::NonNull;

/// Where a guard's slot lives.
#[derive(Clone, Copy)]
enum Home {
    /// Slot `bit.trailing_zeros()` of a thread block.
    Block { block: NonNull<SlotBlock>, bit: u32 },
    /// A backup slot on an overflow list.
    Backup(NonNull<BackupSlot>),
}

/// A hazard pointer: one reserved slot that protects at most one object.
///
/// Created with [`Guard::new`] (global domain) or [`Domain::guard`];
/// [`Guard::protect_ptr`] (or [`AtomicBox::load`](crate::AtomicBox::load))
/// protects the object a pointer currently refers to until the guard
/// protects something else, is [reset](Guard::reset), or is dropped.
///
/// A guard is tied to its thread (`!Send`): its slot belongs to the thread's
/// slot block.
///
/// ```
/// use hazptr::Guard;
/// use std::sync::atomic::AtomicPtr;
///
/// let shared = AtomicPtr::new(Box::into_raw(Box::new(42u64)));
/// let mut guard = Guard::new();
/// let p = guard.protect_ptr(&shared);
/// // SAFETY: protected by `guard`; the pointer came from `Box::into_raw`.
/// assert_eq!(unsafe { *p }, 42);
/// drop(guard);
/// # drop(unsafe { Box::from_raw(p) });
/// ```
pub struct Guard<'d> {
    slot: NonNull<AtomicUsize>,
    wildcard: NonNull<AtomicUsize>,
    home: Home,
    _domain: PhantomData<&'d Domain>,
    /// `!Send` and `!Sync`: the slot belongs to this thread's block.
    _not_send: PhantomData<*mut ()>,
}

impl fmt::Debug for Guard<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Guard")
            .field("backup", &matches!(self.home, Home::Backup(_)))
            .field("protects", &self.slot_ref().load(Ordering::Relaxed))
            .finish()
    }
}

impl Guard<'static> {
    /// A guard in the global domain.
    #[inline]
    pub fn new() -> Guard<'static> {
        Domain::global().guard()
    }
}

impl Default for Guard<'static> {
    fn default() -> Self {
        Guard::new()
    }
}

impl Domain {
    /// A guard in this domain: reserves one of the calling thread's slots (or
    /// a backup slot when they are all reserved).
    #[inline]
    pub fn guard(&self) -> Guard<'_> {
        if let Some(block) = self.block() {
            // SAFETY: `block` is this thread's block, alive as long as the
            // domain; only this thread touches its free mask.
            let b = unsafe { block.as_ref() };
            let mask = b.hot.free_mask.get();
            if mask != 0 {
                let bit = mask & mask.wrapping_neg();
                b.hot.free_mask.set(mask & !bit);
                return Guard {
                    slot: NonNull::from(&b.hot.slots[bit.trailing_zeros() as usize]),
                    wildcard: NonNull::new(b.link.wildcard.cast_mut())
                        .expect("blocks point at their domain's wildcard"),
                    home: Home::Block { block, bit },
                    _domain: PhantomData,
                    _not_send: PhantomData,
                };
            }
        }
        self.guard_slow()
    }

    /// The slow path: a backup slot on an overflow list.
    #[cold]
    #[inline(never)]
    fn guard_slow(&self) -> Guard<'_> {
        let node = self.shared.take_backup(thread_token());
        // SAFETY: backup slots live as long as the domain.
        let n = unsafe { node.as_ref() };
        Guard {
            slot: NonNull::from(&n.value),
            wildcard: NonNull::from(self.shared.wildcard()),
            home: Home::Backup(node),
            _domain: PhantomData,
            _not_send: PhantomData,
        }
    }
}

impl<'d> Guard<'d> {
    #[inline(always)]
    fn slot_ref(&self) -> &AtomicUsize {
        // SAFETY: the slot lives in a block or backup slot of the domain,
        // which outlives `'d` and so this guard.
        unsafe { self.slot.as_ref() }
    }

    #[inline(always)]
    pub(crate) fn wildcard_word(&self) -> *const AtomicUsize {
        self.wildcard.as_ptr()
    }

    /// Protects the object `src` points to and returns the pointer (the
    /// kernel's `hazptr_acquire()`): until this guard protects something
    /// else, is reset or dropped, `synchronize` of that address waits and
    /// reclamation keeps it.
    ///
    /// The pointer is loaded exactly once, with Acquire ordering. Dereferencing
    /// it is safe as long as the writer side follows the protocol: unpublish,
    /// then [`Domain::synchronize`] or [`Domain::retire`] before freeing.
    ///
    /// `T` must be at least 2-aligned (checked at compile time): slot values
    /// with the low bit set are wildcards.
    #[inline]
    pub fn protect_ptr<T>(&mut self, src: &AtomicPtr<T>) -> *mut T {
        const { assert!(align_of::<T>() >= 2, "hazptr protects only 2-aligned types") };
        let slot = self.slot_ref();
        // SAFETY: the wildcard word is boxed in the domain, alive for `'d`.
        let wildcard = unsafe { self.wildcard.as_ref() };
        // Acquire pairs with the AcqRel flip in `scan::begin`: a reader that
        // sees a scan's generation also sees every unpublish that preceded
        // that flip, so the scan may skip its wildcard.
        let current = wildcard.load(Ordering::Acquire);
        slot.store(current, Ordering::Relaxed);
        // Pairs with `fence::heavy()` in `scan::begin`: either the scan sees
        // the wildcard (or what replaces it), or the load below sees the
        // unpublish that preceded the scan.
        fence::light();
        // Acquire pairs with the Release store that published the object.
        let ptr = src.load(Ordering::Acquire);
        // Relaxed: same location as the wildcard, so coherence orders them;
        // a scan seeing either value protects `ptr`.
        slot.store(ptr as usize, Ordering::Relaxed);
        ptr
    }

    /// Protects `ptr`, which the caller knows is still published; the
    /// kernel's form for pointers read by other means. Equivalent to
    /// [`Guard::protect_ptr`] on an `AtomicPtr` holding `ptr`.
    ///
    /// # Safety
    ///
    /// `ptr` must still be reachable by readers when this is called (not yet
    /// unpublished), or the protection may come too late; usually the caller
    /// re-validates after this call.
    #[inline]
    pub unsafe fn protect_raw<T>(&mut self, ptr: *mut T) {
        const { assert!(align_of::<T>() >= 2, "hazptr protects only 2-aligned types") };
        self.slot_ref().store(ptr as usize, Ordering::Relaxed);
        // Pairs with `fence::heavy()` in `scan::begin`, as in `protect_ptr`.
        fence::light();
    }

    /// Ends the current protection and keeps the slot for later use.
    #[inline]
    pub fn reset(&mut self) {
        // Release pairs with the scan's Acquire load of the slot: the reads of
        // the object done under protection happen before the scan finishes.
        self.slot_ref().store(EMPTY, Ordering::Release);
    }

    /// Whether the guard uses a backup slot (the slow path).
    pub fn is_backup(&self) -> bool {
        matches!(self.home, Home::Backup(_))
    }

    /// Moves the protection from this thread's block slot to a backup slot on
    /// an overflow list, freeing the block slot (the kernel promotes a
    /// per-CPU slot this way before a task is preempted). Does nothing if the
    /// guard already uses a backup slot.
    ///
    /// The backup slot is written before the block slot is cleared, and scans
    /// read every block slot before any overflow list, so a scan cannot miss
    /// the protection in between.
    pub fn promote(&mut self) {
        let Home::Block { block, bit } = self.home else {
            return;
        };
        // SAFETY: the block is this thread's, alive as long as the domain,
        // and its `shared` pointer leads to that domain.
        let shared = unsafe { &*block.as_ref().link.shared };
        let backup = shared.take_backup(thread_token());
        // SAFETY: backup slots live as long as the domain.
        let n = unsafe { backup.as_ref() };
        // Relaxed: only this thread writes its slots.
        let value = self.slot_ref().load(Ordering::Relaxed);
        n.value.store(value, Ordering::Relaxed);
        // Release: the backup value (and the node's publication) are visible
        // to a scan whose Acquire load sees the block slot empty, before that
        // scan walks the overflow lists (it walks them after every block).
        self.slot_ref().store(EMPTY, Ordering::Release);
        // SAFETY: the block is this thread's; only this thread touches its mask.
        let b = unsafe { block.as_ref() };
        b.hot.free_mask.set(b.hot.free_mask.get() | bit);
        self.slot = NonNull::from(&n.value);
        self.home = Home::Backup(backup);
    }
}

impl Drop for Guard<'_> {
    #[inline]
    fn drop(&mut self) {
        self.reset();
        match self.home {
            Home::Block { block, bit } => {
                // SAFETY: this thread's block; only this thread touches its mask.
                let b = unsafe { block.as_ref() };
                b.hot.free_mask.set(b.hot.free_mask.get() | bit);
            }
            Home::Backup(node) => {
                crate::domain::forget_backup(node);
                // SAFETY: backup slots live as long as the domain.
                let n = unsafe { node.as_ref() };
                // Release pairs with the Acquire CAS in `take_backup`: the
                // next holder sees the slot empty.
                n.in_use.store(false, Ordering::Release);
            }
        }
    }
}

/// Protects the value of `src` for the duration of `f` (the kernel's
/// `scoped_guard(hazptr, ...)`): a guard of the box's domain is taken, the
/// value loaded under it, `f` called, and the guard dropped.
///
/// ```
/// use hazptr::AtomicBox;
///
/// let config = AtomicBox::new(String::from("v1"));
/// let len = hazptr::scoped(&config, |v| v.map_or(0, |s| s.len()));
/// assert_eq!(len, 2);
/// ```
#[inline]
pub fn scoped<T: Send + Sync, R>(src: &AtomicBox<'_, T>, f: impl FnOnce(Option<&T>) -> R) -> R {
    let mut guard = src.domain().guard();
    f(src.load(&mut guard))
}

/// The raw form of [`scoped`]: protects what `src` points to (in the global
/// domain) for the duration of `f`, which gets the protected pointer.
///
/// ```
/// use std::sync::atomic::AtomicPtr;
///
/// let shared = AtomicPtr::new(Box::into_raw(Box::new(41u64)));
/// // SAFETY: the pointer is protected while the closure runs.
/// let v = hazptr::scoped_ptr(&shared, |p| unsafe { *p } + 1);
/// assert_eq!(v, 42);
/// # drop(unsafe { Box::from_raw(shared.into_inner()) });
/// ```
#[inline]
pub fn scoped_ptr<T, R>(src: &AtomicPtr<T>, f: impl FnOnce(*mut T) -> R) -> R {
    let mut guard = Guard::new();
    f(guard.protect_ptr(src))
}
