//! Guards: acquire and release of one hazard slot (the kernel's
//! `hazptr_acquire()` / `hazptr_release()`).
//!
//! # Acquire (the fast path)
//!
//! 1. find a free slot of the thread's block: one TLS access reaches the
//!    block, and a block slot is free when it holds `EMPTY` (a load of the
//!    thread's own slot and a predicted branch; no bookkeeping store);
//! 2. store the domain's current wildcard into the slot;
//! 3. `fence::light()` — pairs with `fence::heavy()` in `scan::begin`; on
//!    the block's first slot a compiler fence, issued without reading the
//!    fence mode (a block offers that slot only in membarrier mode: see
//!    `slot.rs`, "The first slot and the fence mode"); on 32-bit targets,
//!    load the wildcard word again and start over if the generation has
//!    moved a quarter of its range past the one stored (a reader stopped
//!    between its load of the generation and its store, in step 2, for 2^29
//!    scans or more: see `protect_in_wildcard_window`);
//! 4. load the pointer once;
//! 5. store the pointer into the slot (`RESERVED` for null, so that the slot
//!    never reads as free while a guard holds it).
//!
//! In membarrier mode no reload-and-validate loop (SeqCst mode has one: see
//! below): while the slot holds the wildcard, a scan
//! treats it as protecting every address, so whatever step 4 returns is
//! protected from the moment it was loaded. No RMW, no SeqCst fence, no
//! syscall and no allocation, in membarrier mode once the mode is decided
//! (in `fence`'s SeqCst mode `light()` is a `fence(SeqCst)`, and the
//! process's first fence decides the mode, with system calls). [`acquire`] /
//! [`Domain::acquire`] do exactly
//! these steps; [`Guard::new`] + [`Guard::protect_ptr`] split them, the
//! guard keeping its slot at `RESERVED` in between.
//!
//! # Acquire in SeqCst fence mode
//!
//! Where `light()` is a `fence(SeqCst)` (no membarrier, or
//! `SYNCPRIMS_FENCE=seqcst`), steps 2-5 are the classic hazard pointer's
//! instead: store the pointer, fence, reload, and again until the reload
//! returns the pointer stored (`protect_validated`). The fence is paid
//! either way, and with it inside the wildcard window a reader preempted in
//! that window (common with more threads than CPUs) held up every scan of
//! the domain until it ran again. Not under loom or ThreadSanitizer, whose
//! models check the wildcard window.
//!
//! Release is a store-release of `EMPTY` (pairs with the scan's Acquire load
//! of the slot), which also frees the slot.
//!
//! Every store into a slot is a Release store, not only the one that ends a
//! protection. A scan's Acquire load synchronizes with the store it reads, and
//! that may be a later store than the `EMPTY`: the next guard's `RESERVED`,
//! wildcard or pointer. A Relaxed store would not continue the release
//! sequence of the `EMPTY` before it, so a scan that read it would not be
//! ordered after the reads done under the protection that just ended, and the
//! caller's free would race with them (miri reports exactly that data race).
//! On x86 a Release store is the same plain `mov`.
//!
//! # The slow path
//!
//! When the thread's slots are all taken, when the domain forces the slow
//! path, or when the thread is exiting, the guard takes a backup slot from an
//! overflow list instead (the first free one, the thread's own list searched
//! first; an RMW on the slot's `in_use` flag); protection works the same way. A guard can also move its protection from its block
//! slot to a backup slot ([`Guard::promote`]), freeing the block slot.

use crate::atomic_box::AtomicBox;
use crate::domain::Domain;
use crate::registration::thread_token;
use crate::slot::{
    BackupSlot, EMPTY, FIRST_SLOT_COMPILER_FENCE, RESERVED, SLOTS_PER_BLOCK, SlotBlock,
};
use crate::sync::{AtomicPtr, AtomicUsize, Ordering};
use membarrier_sim::fence;
use std::fmt;
use std::marker::PhantomData;
use std::ptr::NonNull;
use std::sync::atomic::compiler_fence;

/// Where a guard's slot lives.
#[derive(Clone, Copy)]
enum Home {
    /// A slot of this thread block.
    Block(NonNull<SlotBlock>),
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
/// ```
/// use hazptr::Guard;
/// use std::sync::atomic::AtomicPtr;
///
/// let shared = AtomicPtr::new(Box::into_raw(Box::new(42u64)));
/// let mut guard = Guard::new();
/// let p = guard.protect_ptr(&shared);
/// // SAFETY: protected by `guard` (a global-domain guard: writers must free
/// // only after `hazptr::synchronize` or a retire in that same domain), and
/// // never null here (`protect_ptr` returns null for a null source: check it
/// // where the source may hold one, with `p.as_ref()`).
/// assert_eq!(unsafe { *p }, 42);
/// drop(guard);
/// # // SAFETY: unpublished, unprotected, and from `Box::into_raw`.
/// # drop(unsafe { Box::from_raw(p) });
/// ```
///
/// A guard is tied to its thread (`!Send`): its slot belongs to the thread's
/// slot block. A guard moved to another thread does not compile:
///
/// ```compile_fail,E0277
/// let guard = hazptr::Guard::new();
/// std::thread::spawn(move || drop(guard)); // E0277: `Guard` is not `Send`
/// ```
///
/// A thread that reads takes its own guard:
///
/// ```
/// std::thread::spawn(|| drop(hazptr::Guard::new())).join().expect("the reader returns");
/// ```
#[must_use = "a guard protects only while it lives: dropping it at once releases its slot"]
pub struct Guard<'d> {
    slot: NonNull<AtomicUsize>,
    wildcard: NonNull<AtomicUsize>,
    home: Home,
    /// Whether `fence::light()` is known to be a compiler fence here: set
    /// for a guard on its block's first slot, which blocks offer only in
    /// membarrier mode (`slot.rs`); the fast path then reads no mode.
    light_is_compiler_fence: bool,
    _domain: PhantomData<&'d Domain>,
    /// `!Send` and `!Sync`: the slot belongs to this thread's block.
    _not_send: PhantomData<*mut ()>,
}

impl fmt::Debug for Guard<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Relaxed: only this thread writes its guard's slot. `RESERVED`
        // (null, or nothing yet) and a wildcard protect no address; an
        // address shows as a pointer, with the low bit `protection` clears.
        let value = self.slot_ref().load(Ordering::Relaxed);
        // An address to print, with no provenance: never dereferenced (an
        // integer-to-pointer cast, which strict provenance refuses).
        let protects =
            crate::scan::protects(value).then(|| std::ptr::without_provenance::<()>(value));
        f.debug_struct("Guard")
            .field("backup", &matches!(self.home, Home::Backup(_)))
            .field("protects", &protects)
            .finish()
    }
}

impl Guard<'static> {
    /// A guard in the global domain.
    #[inline]
    pub fn new() -> Guard<'static> {
        // The fast path reaches the thread's block with one TLS access and
        // never touches the (lazily initialized) global domain itself.
        let guard = Guard::take_global();
        // Release: see "every store into a slot is a Release store" above.
        guard.slot_ref().store(RESERVED, Ordering::Release);
        guard
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
        let guard = self.take_slot();
        // Release: see "every store into a slot is a Release store" above.
        guard.slot_ref().store(RESERVED, Ordering::Release);
        guard
    }

    /// Protects the object `src` points to with a new guard (the kernel's
    /// `hazptr_acquire()`): finds a free slot, then the wildcard, light fence,
    /// load, store of [`Guard::protect_ptr`] (in SeqCst fence mode, its
    /// validating loop). Returns the guard and the
    /// protected pointer, which stays protected only while the guard lives:
    /// bind it to a name (`let (guard, p) = ...`, not `let (_, p) = ...`,
    /// which drops the guard at once and leaves `p` unprotected).
    #[inline]
    #[must_use = "the pointer is protected only while the returned guard lives"]
    pub fn acquire<T>(&self, src: &AtomicPtr<T>) -> (Guard<'_>, *mut T) {
        let mut guard = self.take_slot();
        let ptr = guard.protect_ptr(src);
        (guard, ptr)
    }

    /// Protects what `src` points to, in this domain, for the duration of
    /// `f`, which gets the protected pointer: [`scoped_ptr`] for a domain of
    /// your own.
    ///
    /// ```
    /// use hazptr::Domain;
    /// use std::sync::atomic::AtomicPtr;
    ///
    /// let domain = Domain::new();
    /// let shared = AtomicPtr::new(Box::into_raw(Box::new(41u64)));
    /// // SAFETY: protected in `domain` while the closure runs (writers free
    /// // only after a synchronize or retire in `domain`), and never null here.
    /// let v = domain.scoped_ptr(&shared, |p| unsafe { *p } + 1);
    /// assert_eq!(v, 42);
    /// # // SAFETY: unpublished, unprotected, and from `Box::into_raw`.
    /// # drop(unsafe { Box::from_raw(shared.into_inner()) });
    /// ```
    #[inline]
    pub fn scoped_ptr<T, R>(&self, src: &AtomicPtr<T>, f: impl FnOnce(*mut T) -> R) -> R {
        let (_guard, ptr) = self.acquire(src);
        f(ptr)
    }

    /// A free slot of this domain for a new guard (its value still `EMPTY`
    /// for a block slot: the caller stores next).
    #[inline]
    fn take_slot(&self) -> Guard<'_> {
        if let Some(guard) = self.block().and_then(|b| Guard::in_block(b, None)) {
            return guard;
        }
        Guard::in_backup(self.backup_slot())
    }
}

impl<'d> Guard<'d> {
    /// A free slot of the global domain (`Guard::new` and [`acquire`]).
    #[inline(always)]
    fn take_global() -> Guard<'static> {
        let wildcard = crate::domain::global_wildcard();
        if let Some(guard) =
            crate::registration::global_block().and_then(|b| Guard::in_block(b, wildcard))
        {
            return guard;
        }
        Guard::in_backup(crate::registration::global_backup_slot())
    }

    /// Takes a free slot of `block`, if it has one; the global domain's
    /// guards pass its wildcard word, others `None` (read from the block).
    /// The caller stores into the slot before anything else on this thread
    /// looks for a free one, except a signal handler, which may take the
    /// same slot: it must drop its guard before it returns (crate docs,
    /// *Signal handlers*), and the interrupted store then lands on an empty
    /// slot.
    ///
    /// `block` must be the calling thread's block in a domain that outlives
    /// `'d` (callers get it from the thread's registration).
    #[inline(always)]
    fn in_block(block: NonNull<SlotBlock>, wildcard: Option<&'d AtomicUsize>) -> Option<Guard<'d>> {
        // SAFETY: the calling thread's block, alive as long as the domain.
        let b = unsafe { block.as_ref() };
        // Relaxed: only this thread writes its slots. The first slot is free
        // unless guards nest (or the block was made in SeqCst fence mode), so
        // the search past it stays out of line and the common path is
        // straight-line code.
        let (index, light_is_compiler_fence) = if b.hot.slots[0].load(Ordering::Relaxed) == EMPTY {
            (0, FIRST_SLOT_COMPILER_FENCE)
        } else {
            (nested_free_slot(b)?, false)
        };
        let wildcard = match wildcard {
            Some(w) => NonNull::from(w),
            // SAFETY: blocks always point at their domain's wildcard word.
            None => unsafe { NonNull::new_unchecked(b.link.wildcard.cast_mut()) },
        };
        Some(Guard {
            slot: NonNull::from(&b.hot.slots[index]),
            wildcard,
            home: Home::Block(block),
            light_is_compiler_fence,
            _domain: PhantomData,
            _not_send: PhantomData,
        })
    }

    /// A guard on backup slot `node`, which the calling thread just took.
    #[inline(always)]
    fn in_backup(node: NonNull<BackupSlot>) -> Guard<'d> {
        // SAFETY: backup slots live as long as their domain.
        let n = unsafe { node.as_ref() };
        Guard {
            slot: NonNull::from(&n.value),
            // SAFETY: backup slots always point at their domain's wildcard.
            wildcard: unsafe { NonNull::new_unchecked(n.wildcard.cast_mut()) },
            home: Home::Backup(node),
            light_is_compiler_fence: false,
            _domain: PhantomData,
            _not_send: PhantomData,
        }
    }

    #[inline(always)]
    fn slot_ref(&self) -> &AtomicUsize {
        // SAFETY: the slot lives in a block or backup slot of the domain,
        // which outlives `'d` and so this guard.
        unsafe { self.slot.as_ref() }
    }

    /// `fence::light()`, as a compiler fence where this guard's slot says
    /// that is what it is (see `light_is_compiler_fence`).
    #[inline(always)]
    fn light_fence(&self) {
        if self.light_is_compiler_fence {
            compiler_fence(Ordering::SeqCst);
        } else {
            fence::light();
        }
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
    /// The pointer is loaded once, with Acquire ordering (in SeqCst fence
    /// mode, until two loads around the protection agree: see the module
    /// docs, *Acquire in SeqCst fence mode*). Dereferencing
    /// it is safe as long as the writer side follows the protocol: unpublish,
    /// then [`Domain::synchronize`] or [`Domain::retire`] before freeing, in
    /// the domain of this guard (each domain's scans see only its own
    /// slots).
    ///
    /// `T` must be at least 2-aligned (checked at compile time): slot values
    /// with the low bit set are wildcards.
    ///
    /// ```compile_fail,E0080
    /// use std::sync::atomic::AtomicPtr;
    ///
    /// let bytes = AtomicPtr::new(Box::into_raw(Box::new(7u8)));
    /// let mut guard = hazptr::Guard::new();
    /// guard.protect_ptr(&bytes); // E0080: `u8` is 1-aligned
    /// ```
    ///
    /// And `T` must have a size (checked at compile time too): every box of
    /// a zero-sized type has the same address, so a guard on one would hold
    /// back `synchronize` and reclamation of all the others, and a
    /// `synchronize` of another one would refuse as a wait for the caller's
    /// own guard. For a 2-aligned one that address is the slot value that
    /// protects nothing, so its objects would be freed under the guard.
    ///
    /// ```compile_fail,E0080
    /// use std::sync::atomic::AtomicPtr;
    ///
    /// #[repr(align(8))]
    /// struct Token;
    /// let token = AtomicPtr::new(Box::into_raw(Box::new(Token)));
    /// let mut guard = hazptr::Guard::new();
    /// guard.protect_ptr(&token); // E0080: `Token` is zero-sized
    /// ```
    #[inline]
    #[must_use = "only the returned pointer is protected: loading `src` again is not"]
    pub fn protect_ptr<T>(&mut self, src: &AtomicPtr<T>) -> *mut T {
        protectable::<T>();
        let slot = self.slot_ref();
        // SAFETY: the wildcard word is the domain's (boxed in a user domain,
        // a static for the global one), alive for `'d`.
        let wildcard = unsafe { self.wildcard.as_ref() };
        // (The slot and the wildcard go to the helpers by reference, not
        // `self`: a `&mut self` reaching a call that is not inlined would
        // keep the guard in memory, five stores more per acquire.)
        if self.light_is_compiler_fence {
            // The first slot, in membarrier mode: no mode to read.
            protect_in_wildcard_window(slot, wildcard, src, || compiler_fence(Ordering::SeqCst))
        } else {
            protect_after_reading_the_mode(slot, wildcard, src)
        }
    }

    /// Stores `ptr` into the guard's slot; the kernel's form for pointers
    /// read by other means (a link inside an object another guard protects).
    ///
    /// Unlike [`Guard::protect_ptr`], this protects `ptr` only if it was
    /// still published when the protection became visible: there is no
    /// wildcard window, so a writer that unpublished `ptr` (and then
    /// synchronized or reclaimed) before this store can free it under the
    /// guard. A pointer the caller loaded a moment ago may already be
    /// unpublished; the usual way to know is to re-read where `ptr` came from
    /// after this call and check that it still holds `ptr` (the classic
    /// hazard-pointer validation; on a mismatch, protect the new value and
    /// check again):
    ///
    /// ```
    /// use hazptr::Guard;
    /// use std::sync::atomic::{AtomicPtr, Ordering::Acquire};
    ///
    /// let link = AtomicPtr::new(Box::into_raw(Box::new(5u64)));
    /// let mut guard = Guard::new();
    /// let p = loop {
    ///     let p = link.load(Acquire);
    ///     // SAFETY: `p` is not dereferenced before the check below.
    ///     unsafe { guard.protect_raw(p) };
    ///     // Keep the reloaded pointer: `p` may be a freed object's whose
    ///     // address the object now published reuses.
    ///     let again = link.load(Acquire);
    ///     if again == p {
    ///         break again;
    ///     }
    /// };
    /// // SAFETY: protected, and still published after the protection began.
    /// assert_eq!(unsafe { *p }, 5);
    /// drop(guard);
    /// # // SAFETY: unpublished, unprotected, and from `Box::into_raw`.
    /// # drop(unsafe { Box::from_raw(link.into_inner()) });
    /// ```
    ///
    /// # Safety
    ///
    /// Before relying on the protection (dereferencing the object at `ptr`),
    /// the caller must establish, after this call returned, that `ptr` was
    /// not unpublished before it: by re-validating as above (and then
    /// dereferencing the pointer the re-validating load returned), or
    /// because no writer can unpublish it meanwhile. Knowing that `ptr` was
    /// published when the call began is not enough.
    #[inline]
    pub unsafe fn protect_raw<T>(&mut self, ptr: *mut T) {
        protectable::<T>();
        // Release: as in `protect_ptr`.
        self.slot_ref().store(protection(ptr), Ordering::Release);
        // Pairs with `fence::heavy()` in `scan::begin`, as in `protect_ptr`.
        self.light_fence();
    }

    /// Ends the current protection and keeps the slot for later use.
    #[inline]
    pub fn reset(&mut self) {
        // Release pairs with the scan's Acquire load of the slot: the reads of
        // the object done under protection happen before the scan finishes.
        self.slot_ref().store(RESERVED, Ordering::Release);
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
        let Home::Block(block) = self.home else {
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
        // Release: a scan that reads it is ordered after what this thread
        // (and, through `take_backup`'s Acquire, the slot's previous holder)
        // did before (see the module docs).
        n.value.store(value, Ordering::Release);
        // Release: the backup value (and the node's publication) are visible
        // to a scan whose Acquire load sees the block slot empty, before that
        // scan walks the overflow lists (it walks them after every block).
        // The block slot is free again from this store on.
        self.slot_ref().store(EMPTY, Ordering::Release);
        self.slot = NonNull::from(&n.value);
        self.home = Home::Backup(backup);
        // A backup slot's guard calls `fence::light()`, as one taken there.
        self.light_is_compiler_fence = false;
    }
}

/// Tests only: stops an acquire of the calling thread, once, right after
/// its first store into the slot (the wildcard, or the pointer in SeqCst
/// mode), until the test releases it: a reader preempted at the worst point
/// of its acquire, on demand.
#[cfg(all(test, not(loom)))]
pub(crate) mod pause_inside_acquire {
    use std::cell::Cell;
    use std::sync::atomic::{AtomicBool, Ordering::SeqCst};

    std::thread_local! {
        /// Set by the thread whose next acquire stops.
        pub(crate) static ARMED: Cell<bool> = const { Cell::new(false) };
        /// Set by the thread whose next acquire in the wildcard window stops
        /// between its load of the domain's generation and its store of that
        /// wildcard into the slot.
        pub(crate) static ARMED_BEFORE_THE_STORE: Cell<bool> = const { Cell::new(false) };
        /// How many of this thread's acquires found their wildcard stale
        /// after storing it, and began again.
        pub(crate) static STALE_WILDCARD_RETRIES: Cell<u32> = const { Cell::new(0) };
    }
    /// Set by the stopped acquire.
    pub(crate) static INSIDE: AtomicBool = AtomicBool::new(false);
    /// Set by the test to let it go on. (SeqCst on both flags: test
    /// handshakes, where the strongest ordering keeps the reasoning out.)
    pub(crate) static RELEASE: AtomicBool = AtomicBool::new(false);
    /// Held by each test while it uses the flags above: one stopped acquire
    /// at a time in a process. (Two tests run in one process in SeqCst
    /// mode, as `scripts/test.sh` runs them, and each could release or see
    /// the other's reader.)
    pub(crate) static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

    /// [`SERIAL`], poisoned or not, with [`INSIDE`] and [`RELEASE`] cleared
    /// (a test that failed holding it may have left them set).
    pub(crate) fn serial() -> std::sync::MutexGuard<'static, ()> {
        let serial = SERIAL
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        for flag in [&INSIDE, &RELEASE] {
            flag.store(false, SeqCst);
        }
        serial
    }

    pub(super) fn here() {
        if ARMED.with(|armed| armed.replace(false)) {
            stop();
        }
    }

    pub(super) fn before_the_wildcard_store() {
        if ARMED_BEFORE_THE_STORE.with(|armed| armed.replace(false)) {
            stop();
        }
    }

    fn stop() {
        INSIDE.store(true, SeqCst);
        while !RELEASE.load(SeqCst) {
            std::thread::yield_now();
        }
    }
}

/// [`Guard::protect_ptr`] on a slot that does not know the fence mode: in
/// SeqCst mode, [`protect_validated`]. Out of line: the first slot's path
/// then keeps its loop's variables in registers.
#[inline(never)]
fn protect_after_reading_the_mode<T>(
    slot: &AtomicUsize,
    wildcard: &AtomicUsize,
    src: &AtomicPtr<T>,
) -> *mut T {
    #[cfg(not(any(loom, syncprims_tsan)))]
    {
        if fence::light_is_full_fence() {
            return protect_validated(slot, src);
        }
        // Membarrier mode, decided for good: `light()` is a compiler
        // fence, which this need not read the mode again to issue.
        protect_in_wildcard_window(slot, wildcard, src, || compiler_fence(Ordering::SeqCst))
    }
    #[cfg(any(loom, syncprims_tsan))]
    protect_in_wildcard_window(slot, wildcard, src, fence::light)
}

/// The kernel's acquire into `slot`: the domain's `wildcard`,
/// `light_fence`, one load of `src`, the pointer.
#[inline(always)]
fn protect_in_wildcard_window<T>(
    slot: &AtomicUsize,
    wildcard: &AtomicUsize,
    src: &AtomicPtr<T>,
    light_fence: impl FnOnce(),
) -> *mut T {
    // Acquire pairs with the AcqRel flip in `scan::begin`: a reader that
    // sees a scan's generation also sees every unpublish that preceded
    // that flip, so the scan may skip its wildcard.
    let current = wildcard.load(Ordering::Acquire);
    #[cfg(all(test, not(loom)))]
    pause_inside_acquire::before_the_wildcard_store();
    // Release: a scan that reads this value is ordered after this
    // thread's earlier protections (see the module docs).
    slot.store(current, Ordering::Release);
    #[cfg(all(test, not(loom)))]
    pause_inside_acquire::here();
    // Pairs with `fence::heavy()` in `scan::begin`: either the scan sees
    // the wildcard (or what replaces it), or the load below sees the
    // unpublish that preceded the scan.
    light_fence();
    // Where a generation is 32 bits, a reader stopped between the load and
    // the store above for 2^30 scans stores a wildcard that later scans
    // read as newer than theirs, and skip. Loaded again after the store and
    // the light fence, the generation tells. A scan that flips after this
    // load sees the wildcard (or what replaces it), by the same pairing as
    // the pointer load's below, and waits for it if it reads as older; and
    // those scans cannot finish while it stays, so the generation moves at
    // most a couple of flips a thread past this load. A wildcard within a
    // quarter of the range of it is then older than all of theirs. Acquire,
    // pairing with the flips' AcqRel as the first load does: this thread
    // sees the unpublish before every flip up to the one it read, so a scan
    // that flipped before it is served whatever it read in the slot, even
    // where the lag measured here has wrapped the counter. A 64-bit counter
    // would need 2^62 scans: there the check runs in tests only.
    #[cfg(any(target_pointer_width = "32", test))]
    if crate::slot::is_stale_wildcard(current, wildcard.load(Ordering::Acquire)) {
        return protect_after_a_stale_wildcard(slot, wildcard, src);
    }
    // Acquire pairs with the Release store that published the object.
    let ptr = src.load(Ordering::Acquire);
    // Same location as the wildcard, so coherence orders them; a scan
    // seeing either value protects `ptr`. Release: as for the wildcard.
    slot.store(protection(ptr), Ordering::Release);
    ptr
}

/// [`protect_in_wildcard_window`] again, for a reader whose wildcard was
/// stale by the time it stored it (stopped for 2^29 scans or more in
/// between, on a 32-bit target): the fresh generation goes into the slot, then the
/// pointer. The stale wildcard's pointer was never loaded.
#[cfg(any(target_pointer_width = "32", test))]
#[cold]
#[inline(never)]
fn protect_after_a_stale_wildcard<T>(
    slot: &AtomicUsize,
    wildcard: &AtomicUsize,
    src: &AtomicPtr<T>,
) -> *mut T {
    #[cfg(all(test, not(loom)))]
    pause_inside_acquire::STALE_WILDCARD_RETRIES.with(|n| n.set(n.get() + 1));
    // `fence::light()`: the first slot's compiler fence where that slot is
    // offered (membarrier mode), a full fence otherwise.
    protect_in_wildcard_window(slot, wildcard, src, fence::light)
}

/// [`Guard::protect_ptr`] in SeqCst fence mode: the classic hazard
/// pointer's store, fence, reload and compare, until the reload finds the
/// pointer just protected. The fence is `fence(SeqCst)` either way there,
/// and a slot holding the wildcard across it would be waited out by every
/// scan: a reader preempted inside that window (likely, with the fence in
/// it, on a CPU shared by more threads) would hold up every reclamation
/// pass and `synchronize` of the domain until it ran again. A slot that
/// holds a pointer holds up only that pointer's waiters. A reader can retry
/// for as long as writers keep replacing the pointer (lock-free, not
/// wait-free, unlike the wildcard's single load).
#[cfg(not(any(loom, syncprims_tsan)))]
#[inline(always)]
fn protect_validated<T>(slot: &AtomicUsize, src: &AtomicPtr<T>) -> *mut T {
    // Acquire pairs with the Release store that published the object.
    let mut ptr = src.load(Ordering::Acquire);
    loop {
        // Release: see "every store into a slot is a Release store".
        slot.store(protection(ptr), Ordering::Release);
        #[cfg(test)]
        pause_inside_acquire::here();
        // `fence::light()` in this mode. Pairs with `fence::heavy()` (also
        // `fence(SeqCst)` here) in `scan::begin`: either the scan sees this
        // store, or the reload below sees the unpublish that preceded the
        // scan.
        std::sync::atomic::fence(Ordering::SeqCst);
        // Acquire: as above; a pointer published since is protected by the
        // next round, not this one.
        let again = src.load(Ordering::Acquire);
        if again == ptr {
            // The reload's pointer, not the first load's: the two hold one
            // address, but the first may be a freed object's whose address
            // the object published now reuses (unpublished, synchronized
            // and freed before the slot store above), and a reference made
            // from it would dangle (miri: a use-after-free through
            // `AtomicBox::load`). The reload's is the published object's.
            return again;
        }
        ptr = again;
    }
}

/// Refuses, at compile time, a type whose objects a slot cannot tell apart:
/// a 1-aligned one (slot values with the low bit set are wildcards) and a
/// zero-sized one (all its boxes share one address, for 2-alignment the
/// `RESERVED` value that protects nothing). `AtomicBox` checks the same.
#[inline(always)]
pub(crate) const fn protectable<T>() {
    const { assert!(align_of::<T>() >= 2, "hazptr protects only 2-aligned types") };
    const {
        assert!(
            size_of::<T>() != 0,
            "hazptr cannot protect a zero-sized type: its objects all share one address"
        )
    };
}

/// The slot value that protects `ptr`: its address with the low bit
/// cleared, or `RESERVED` where that is null.
///
/// The low bit: an odd value in a slot reads as a wildcard (`slot.rs`), and
/// an `AtomicPtr` may hold one in safe code (a pointer with a mark bit set,
/// a sentinel such as `1 as *mut T`). Stored as it is, a marked pointer
/// would read as a newer generation's wildcard, which scans skip (its object
/// unprotected), and a sentinel as an older one's, which scans wait out for
/// as long as the guard holds it. Cleared, the marked pointer protects the
/// object it marks (`T` is at least 2-aligned), and a sentinel protects
/// nothing.
///
/// A null protects nothing, but the slot must not read as `EMPTY` (free)
/// while the guard holds it: another guard of this thread would take it, and
/// this guard's next store would erase that guard's protection (or, for a
/// backup slot, another thread would claim it).
#[inline(always)]
fn protection<T>(ptr: *mut T) -> usize {
    let addr = protected_address(ptr);
    if addr == EMPTY { RESERVED } else { addr }
}

/// The address of the object `ptr` points at, mark bit cleared: what a
/// guard's slot holds for it (`synchronize` and reclamation compare slots
/// against the same).
#[inline(always)]
pub(crate) fn protected_address<T>(ptr: *const T) -> usize {
    ptr as usize & !1
}

/// The first free slot of `b` after slot 0 (taken: guards nest), if any.
#[cold]
#[inline(never)]
fn nested_free_slot(b: &SlotBlock) -> Option<usize> {
    // Relaxed: only this thread writes its slots.
    (1..SLOTS_PER_BLOCK).find(|&i| b.hot.slots[i].load(Ordering::Relaxed) == EMPTY)
}

impl Drop for Guard<'_> {
    #[inline]
    fn drop(&mut self) {
        // Release pairs with the scan's Acquire load of the slot, as in
        // `reset`; for a block slot this also frees it.
        self.slot_ref().store(EMPTY, Ordering::Release);
        match self.home {
            Home::Block(_) => {}
            Home::Backup(node) => {
                // SAFETY: backup slots live as long as the domain.
                let n = unsafe { node.as_ref() };
                crate::registration::forget_backup(n.domain, node);
                n.owner.clear();
                // Release pairs with the Acquire CAS in `claim_free_backup`: the
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
///
/// The reference is good only inside `f`, whose guard is dropped when it
/// returns: returning it does not compile (what `f` may return is a value
/// of its own, as `len` above, or a clone).
///
/// ```compile_fail
/// let config = hazptr::AtomicBox::new(String::from("v1"));
/// // error: lifetime may not live long enough
/// let escaped: Option<&String> = hazptr::scoped(&config, |v| v);
/// assert_eq!(escaped.map(String::as_str), Some("v1"));
/// ```
#[inline]
pub fn scoped<T: Send + Sync, R>(src: &AtomicBox<'_, T>, f: impl FnOnce(Option<&T>) -> R) -> R {
    let (_guard, ptr) = src.domain().acquire(src.raw());
    // SAFETY: `ptr` is null or an object the box published, protected by
    // `_guard` in the box's domain until after `f` returns.
    f(unsafe { ptr.as_ref() })
}

/// The raw form of [`scoped`]: protects what `src` points to (in the global
/// domain; [`Domain::scoped_ptr`] for another) for the duration of `f`, which
/// gets the protected pointer.
///
/// ```
/// use std::sync::atomic::AtomicPtr;
///
/// let shared = AtomicPtr::new(Box::into_raw(Box::new(41u64)));
/// // SAFETY: protected in the global domain while the closure runs (writers
/// // free only after a synchronize or retire there), and never null here.
/// let v = hazptr::scoped_ptr(&shared, |p| unsafe { *p } + 1);
/// assert_eq!(v, 42);
/// # // SAFETY: unpublished, unprotected, and from `Box::into_raw`.
/// # drop(unsafe { Box::from_raw(shared.into_inner()) });
/// ```
#[inline]
pub fn scoped_ptr<T, R>(src: &AtomicPtr<T>, f: impl FnOnce(*mut T) -> R) -> R {
    let (_guard, ptr) = acquire(src);
    f(ptr)
}

/// [`Domain::acquire`] in the global domain: protects what `src` points to
/// with a new guard and returns both (the kernel's `hazptr_acquire()`).
/// The pointer is protected only while the guard lives: bind the guard to a
/// name (`let (_, p) = ...` drops it at once).
///
/// ```
/// use std::sync::atomic::AtomicPtr;
///
/// let shared = AtomicPtr::new(Box::into_raw(Box::new(7u64)));
/// let (guard, p) = hazptr::acquire(&shared);
/// // SAFETY: protected in the global domain until `guard` is dropped
/// // (writers free only after a synchronize or retire there), and never
/// // null here.
/// assert_eq!(unsafe { *p }, 7);
/// drop(guard); // the kernel's hazptr_release()
/// # // SAFETY: unpublished, unprotected, and from `Box::into_raw`.
/// # drop(unsafe { Box::from_raw(p) });
/// ```
#[inline]
#[must_use = "the pointer is protected only while the returned guard lives"]
pub fn acquire<T>(src: &AtomicPtr<T>) -> (Guard<'static>, *mut T) {
    let mut guard = Guard::take_global();
    let ptr = guard.protect_ptr(src);
    (guard, ptr)
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use membarrier_sim::fence::Mode;

    /// An acquire whose pointer is replaced while it protects, by another
    /// pointer to the same address, returns the pointer published now. In
    /// SeqCst mode (under miri) the validating reload finds the same
    /// address, and the first load's pointer may be a freed object's whose
    /// address the new object reuses: a reference made from it dangles.
    /// Here the two are reborrows of one box, the first made invalid by a
    /// write through the second, so that under miri (`scripts/sanitize.sh
    /// miri`) reading through the first is undefined behaviour, as a freed
    /// object's pointer is (until 2026-12-06 the SeqCst path returned it).
    /// Natively, without provenance to check, it shows only that the
    /// acquire returns the address.
    #[test]
    fn an_acquire_returns_the_pointer_published_when_it_validates() {
        use pause_inside_acquire::{ARMED, INSIDE, RELEASE};
        use std::sync::atomic::Ordering::SeqCst;
        let _serial = pause_inside_acquire::serial();
        let mut boxed = Box::new(7u64);
        let first: *mut u64 = &mut *boxed;
        let src = &AtomicPtr::new(first);
        let domain = &Domain::new();
        std::thread::scope(|s| {
            let reader = s.spawn(move || {
                ARMED.with(|armed| armed.set(true));
                let mut guard = domain.guard();
                let p = guard.protect_ptr(src);
                // SAFETY: protected, and published when the protection
                // began; the box outlives the scope.
                unsafe { *p }
            });
            while !INSIDE.load(SeqCst) {
                std::thread::yield_now();
            }
            let second: *mut u64 = &mut *boxed;
            // SAFETY: the reader is stopped before it reads anything
            // through a pointer (and reads after the Release store below).
            unsafe { *second = 8 };
            // Release: publishes the 8, pairing with the reader's Acquire
            // reload in its acquire.
            src.store(second, Ordering::Release);
            RELEASE.store(true, SeqCst);
            assert_eq!(reader.join().expect("the reader"), 8);
        });
    }

    /// In SeqCst fence mode an acquire leaves no wildcard in its slot across
    /// its fence: a reader stopped right after its first store into the
    /// slot holds up no scan of another address. (Until 2026-12-06 SeqCst
    /// mode held the wildcard across a `fence(SeqCst)`, and every scan
    /// waited for a reader stopped inside that window, for as long as a
    /// preempted one stayed off its CPU; with that path forced here, the
    /// scan waits until the watchdog releases the reader.) Runs in a child
    /// process in SeqCst mode, unless this one is.
    #[test]
    #[cfg_attr(miri, ignore = "runs a child process")]
    fn a_reader_stopped_in_a_seqcst_acquire_holds_no_scan_up() {
        use pause_inside_acquire::{ARMED, INSIDE, RELEASE};
        use std::sync::atomic::Ordering::SeqCst;
        if fence::mode() != Mode::SeqCst {
            return test_support::in_a_child_process(
                "guard::tests::a_reader_stopped_in_a_seqcst_acquire_holds_no_scan_up",
                membarrier_sim::fence::MODE_ENV,
                "seqcst",
            );
        }
        let _serial = pause_inside_acquire::serial();
        let value = Box::into_raw(Box::new(7u64));
        let src = AtomicPtr::new(value);
        // Unshared: the call flips the generation and reads every slot.
        let domain = &Domain::builder().shared_scan(false).build();
        let src = &src;
        let waits_before = crate::scan::OLDER_WILDCARD_WAITS.load(SeqCst);
        std::thread::scope(|s| {
            let expected = value as usize;
            s.spawn(move || {
                ARMED.with(|armed| armed.set(true));
                let (guard, p) = domain.acquire(src);
                assert_eq!(p as usize, expected);
                drop(guard);
            });
            // The watchdog: lets the reader go if the scan waits for it.
            s.spawn(|| {
                let deadline = std::time::Instant::now() + std::time::Duration::from_secs(2);
                while !RELEASE.load(SeqCst) && std::time::Instant::now() < deadline {
                    std::thread::sleep(std::time::Duration::from_millis(5));
                }
                RELEASE.store(true, SeqCst);
            });
            while !INSIDE.load(SeqCst) {
                std::thread::yield_now();
            }
            domain.synchronize(0x1000 as *const u64);
            let waited = crate::scan::OLDER_WILDCARD_WAITS.load(SeqCst) - waits_before;
            let released_early = !RELEASE.swap(true, SeqCst);
            assert!(
                released_early && waited == 0,
                "the scan waited for the stopped reader ({waited} wildcard waits)"
            );
        });
        // SAFETY: from `Box::into_raw`; the reader is gone.
        drop(unsafe { Box::from_raw(value) });
    }

    /// A scan that waits out a reader stopped inside its acquire's wildcard
    /// window (membarrier mode) says so on stderr once the stall timeout
    /// passes: `SYNCPRIMS_STALL_TIMEOUT_S=0.2` in a child process, the reader
    /// held a second. A process in SeqCst mode has no such window (see the test
    /// above) and says so instead.
    #[test]
    #[cfg_attr(miri, ignore = "runs a child process")]
    fn a_scan_waiting_for_a_stopped_reader_says_so() {
        use pause_inside_acquire::{ARMED, INSIDE, RELEASE};
        use std::sync::atomic::Ordering::SeqCst;
        use test_support::stall::{in_the_child, kernel_thread_id, stderr_of};
        const TEST: &str = "guard::tests::a_scan_waiting_for_a_stopped_reader_says_so";
        if !in_the_child() {
            let stderr = stderr_of(TEST, "0.2");
            // The reader's kernel id, which the warning names.
            let reader = stderr.lines().find_map(|line| line.strip_prefix("reader "));
            assert!(
                stderr.contains("no wildcard window in SeqCst mode")
                    || stderr.lines().any(|line| line.starts_with(
                        "hazptr: stall: a scan (a synchronize or reclamation pass) waiting for \
                         a reader inside its acquire"
                    ) && reader.is_some_and(
                        |id| line.contains(&format!(", held by thread {id}: a thread stopped"))
                    )),
                "{stderr}"
            );
            return;
        }
        if fence::mode() == Mode::SeqCst {
            return eprintln!("no wildcard window in SeqCst mode");
        }
        let _serial = pause_inside_acquire::serial();
        let value = Box::into_raw(Box::new(7u64));
        let src = &AtomicPtr::new(value);
        let domain = &Domain::builder().shared_scan(false).build();
        std::thread::scope(|s| {
            s.spawn(move || {
                eprintln!("reader {}", kernel_thread_id());
                ARMED.with(|armed| armed.set(true));
                drop(domain.acquire(src));
            });
            // Lets the reader go a second after it stopped: the scan's
            // warning is due at 0.2 s.
            s.spawn(|| {
                while !INSIDE.load(SeqCst) {
                    std::thread::yield_now();
                }
                std::thread::sleep(std::time::Duration::from_secs(1));
                RELEASE.store(true, SeqCst);
            });
            while !INSIDE.load(SeqCst) {
                std::thread::yield_now();
            }
            domain.synchronize(0x1000 as *const u64);
        });
        // SAFETY: from `Box::into_raw`; the reader is gone.
        drop(unsafe { Box::from_raw(value) });
    }

    /// A reader stopped between its load of the domain's generation and its
    /// store of that wildcard into its slot, while the generation moves half
    /// the range on (2^30 scans on a 32-bit target; here one addition),
    /// would store a wildcard that every later scan reads as newer than its
    /// own, and skips: a pointer it then loaded would be protected from no
    /// one. It finds the wildcard stale when it loads the generation again,
    /// and stores the fresh one before it loads the pointer. (Without that
    /// check, 2026-12-07, it retried nothing and kept the stale wildcard.)
    #[test]
    #[cfg_attr(miri, ignore = "miri runs in SeqCst mode, which stores no wildcard")]
    fn a_reader_stopped_for_half_the_generations_stores_a_fresh_wildcard() {
        use crate::slot::{is_older_wildcard, is_wildcard};
        use pause_inside_acquire::{ARMED_BEFORE_THE_STORE, INSIDE, RELEASE};
        use std::sync::atomic::Ordering::SeqCst;
        if fence::mode() == Mode::SeqCst {
            return eprintln!("no wildcard window in SeqCst mode");
        }
        let _serial = pause_inside_acquire::serial();
        let value = Box::into_raw(Box::new(7u64));
        let src = &AtomicPtr::new(value);
        let domain = &Domain::new();
        let wildcard = domain.shared.wildcard();
        // Relaxed: read before the reader starts, which `spawn` orders.
        let stored = wildcard.load(Ordering::Relaxed);
        std::thread::scope(|s| {
            let reader = s.spawn(move || {
                ARMED_BEFORE_THE_STORE.with(|armed| armed.set(true));
                let mut guard = domain.guard();
                let p = guard.protect_ptr(src);
                let retries =
                    pause_inside_acquire::STALE_WILDCARD_RETRIES.with(std::cell::Cell::get);
                (p.addr(), retries)
            });
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
            while !INSIDE.load(SeqCst) && std::time::Instant::now() < deadline {
                std::thread::yield_now();
            }
            let stopped = INSIDE.load(SeqCst);
            // Half the range of flips (an even number: the word stays a
            // wildcard). AcqRel, as `scan::begin`'s flip.
            let half = usize::MAX / 2 + 1;
            let now = wildcard
                .fetch_add(half, Ordering::AcqRel)
                .wrapping_add(half);
            // Released before any assertion, so that a failure is not a
            // reader stopped for ever.
            RELEASE.store(true, SeqCst);
            assert!(stopped, "the reader did not stop before its wildcard store");
            assert_eq!(now, stored.wrapping_add(half));
            assert!(
                is_wildcard(stored) && !is_older_wildcard(stored, now.wrapping_add(2)),
                "the next scan would wait for the stale wildcard: the test shows nothing"
            );
            let (p, retries) = reader.join().expect("the reader");
            assert_eq!(p, value.addr());
            assert_eq!(retries, 1, "the stale wildcard was not taken for stale");
        });
        // SAFETY: from `Box::into_raw`; the reader is gone.
        drop(unsafe { Box::from_raw(value) });
    }

    /// `Debug` shows what a guard protects as a pointer, and nothing where
    /// its slot holds no address: not the slot's raw word (`RESERVED`, 2,
    /// read as "protects: 2" until 2026-12-06).
    #[test]
    fn debug_shows_the_protected_address_or_none() {
        let value = Box::into_raw(Box::new(7u64));
        let src = AtomicPtr::new(value);
        let mut guard = Guard::new();
        let backup = guard.is_backup();
        assert_eq!(
            format!("{guard:?}"),
            format!("Guard {{ backup: {backup}, protects: None }}")
        );
        let p = guard.protect_ptr(&src);
        assert_eq!(
            format!("{guard:?}"),
            format!(
                "Guard {{ backup: {backup}, protects: Some({:p}) }}",
                p.cast_const().cast::<()>()
            )
        );
        src.store(std::ptr::null_mut(), Ordering::Relaxed);
        assert!(guard.protect_ptr(&src).is_null());
        assert!(format!("{guard:?}").contains("protects: None"), "{guard:?}");
        drop(guard);
        // SAFETY: from `Box::into_raw`, unpublished and no longer protected.
        drop(unsafe { Box::from_raw(value) });
    }

    /// Only a guard on its block's first slot issues the light fence without
    /// reading the fence mode, and only where blocks offer that slot
    /// (membarrier mode, fences not modelled): a nested guard, a guard of a
    /// block made in SeqCst mode (whose first slot is kept back) and a
    /// backup slot's guard all call `fence::light()`. (A nested guard that
    /// skipped it would run without a barrier in SeqCst mode.)
    #[test]
    fn only_a_guard_on_the_first_slot_skips_the_fence_mode() {
        let first_slot_is_offered = FIRST_SLOT_COMPILER_FENCE
            && fence::mode() == Mode::Membarrier
            && !cfg!(feature = "force-slow-path");
        for domain in [&Domain::new(), Domain::global()] {
            let mut first = domain.guard();
            let nested = domain.guard();
            assert_eq!(first.light_is_compiler_fence, first_slot_is_offered);
            assert!(!nested.light_is_compiler_fence);
            // Promoted to a backup slot, it is a backup slot's guard.
            first.promote();
            assert!(!first.light_is_compiler_fence);
        }
        let slow = Domain::builder().force_slow_path(true).build();
        let backup = slow.guard();
        assert!(backup.is_backup());
        assert!(!backup.light_is_compiler_fence);
    }
}
