//! Domains: the set of slots that scans walk and the objects retired to them.
//!
//! The kernel API this crate mirrors (`hazptr_acquire()`,
//! `hazptr_synchronize()`) has no domains: one global set of per-CPU slots
//! and overflow lists serves every user. `struct hazptr_domain` existed only
//! in the 2024 RFC (the `hazptr_load_try_protect()` API). Here the global
//! domain plays the kernel's part, and users may create more.
//!
//! A domain owns:
//!
//! - the wildcard word (the current wildcard generation; see `scan`);
//! - the list of per-thread [`SlotBlock`]s, each owned by at most one live
//!   thread and recycled when its thread exits;
//! - [`OVERFLOW_LISTS`] overflow lists of [`BackupSlot`]s;
//! - the scan state (waiter queue, scanner thread; see `scan`);
//! - the retired list (see `retire`).
//!
//! Blocks and backup slots are freed only when the last reference to the
//! domain's shared part goes away, so scans walk them without locks. The
//! global domain ([`Domain::global`]) lives for the whole process; a domain
//! from [`Domain::new`] or [`Domain::builder`] frees every retired object when
//! dropped, while its slot memory lives on until every thread that used it
//! has exited or registered in another domain (a registration first gives
//! back the thread's blocks of dropped domains).
//!
//! A thread's first acquire in a domain registers it there: see
//! `registration`, which finds the thread's block on the fast path.

use crate::registration;
use crate::retire::{self, Retired};
use crate::scan::ScanState;
use crate::slot::{BackupSlot, FIRST_WILDCARD, SLOTS_PER_BLOCK, SlotBlock, push_node};
use crate::sync::{AtomicBool, AtomicPtr, AtomicU32, AtomicUsize, Mutex, Ordering};
use std::fmt;
use std::ptr::{self, NonNull};
use std::sync::Arc;
use std::sync::atomic::AtomicU64;

/// How many overflow lists a domain has (threads pick one by their token).
pub(crate) const OVERFLOW_LISTS: usize = if cfg!(loom) { 1 } else { 4 };

/// Retired objects that trigger a reclamation pass once handed to the domain.
pub(crate) const DEFAULT_RETIRE_THRESHOLD: usize = if cfg!(loom) { 2 } else { 1000 };

/// The id of the global domain; user domains count up from 2. Ids are never
/// reused, so a stale cache entry can never match a newer domain.
pub(crate) const GLOBAL_ID: u64 = 1;
static NEXT_ID: AtomicU64 = AtomicU64::new(GLOBAL_ID + 1);

/// Options of a domain, set through [`DomainBuilder`].
#[derive(Clone, Copy, Debug)]
pub(crate) struct Options {
    /// Concurrent `synchronize` callers share one scan (the default).
    pub(crate) shared_scan: bool,
    /// Every acquire takes the slow path (a backup slot on an overflow list).
    pub(crate) force_slow_path: bool,
    /// Retired objects handed to the domain before a reclamation pass.
    pub(crate) retire_threshold: usize,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            shared_scan: true,
            force_slow_path: cfg!(feature = "force-slow-path"),
            retire_threshold: DEFAULT_RETIRE_THRESHOLD,
        }
    }
}

/// The part of a domain shared with thread registrations and its scanner.
pub(crate) struct Shared {
    pub(crate) id: u64,
    pub(crate) options: Options,
    /// The current wildcard, `(generation << 1) | 1`, at a stable address
    /// blocks can point at: `own_wildcard` for user domains, a static for the
    /// global one (so its fast path needs no load to find it). Written only
    /// by scans (`fetch_add(2, AcqRel)`).
    wildcard: *const AtomicUsize,
    /// User domains: the `Box::into_raw` allocation `wildcard` points into,
    /// freed in `Drop`; null for the global domain. A raw pointer rather than
    /// a `Box`: moving a `Box` (into this struct, into the `Arc`) asserts
    /// unique access to its contents, which would invalidate `wildcard` (miri's
    /// Stacked Borrows check reports exactly that).
    own_wildcard: *mut CacheAligned<AtomicUsize>,
    /// Head of the block list (push-only until the domain is freed).
    pub(crate) blocks: AtomicPtr<SlotBlock>,
    /// Heads of the overflow lists (push-only until the domain is freed).
    pub(crate) overflow: [AtomicPtr<BackupSlot>; OVERFLOW_LISTS],
    /// The synchronize machinery.
    pub(crate) scan: ScanState,
    /// The retired list and the bookkeeping of passes, on lines of their own.
    pub(crate) reclamation: Reclamation,
    /// Set while [`Domain::reclaim`] takes the batches of other threads'
    /// blocks, under the retired-list mutex: an owner that finds it set
    /// does not push onto its batch until it clears (see `retire`,
    /// *Draining other threads' batches*).
    pub(crate) draining: AtomicBool,
    /// Owners waiting for a drain to end (`retire::wait_out_drain`): the
    /// next drainer lets them push first, or drains that follow each other
    /// closely could keep them waiting indefinitely.
    pub(crate) drain_waiters: AtomicU32,
    /// Set when the owning [`Domain`] handle is dropped.
    pub(crate) dropped: AtomicBool,
    /// Set when the [`Domain`] is dropped between the fork hooks, without
    /// shutting down: the retired objects left then are leaked, never
    /// handed to their deleters, which need stay valid only until the
    /// domain's drop (`Domain::retire`'s contract) while this `Shared` may
    /// outlive it (the hooks and threads' registrations hold it).
    pub(crate) leak_retired: AtomicBool,
}

/// `T` on its own cache line(s).
#[repr(align(128))]
pub(crate) struct CacheAligned<T>(pub(crate) T);

/// The domain's retired list and the bookkeeping of its passes: written at
/// every hand-over of a thread's batch (the mutex and `retired_count`) and
/// every pass. On lines of its own (128 bytes: the adjacent-line prefetcher
/// of x86 CPUs pairs 64-byte lines), so that those writes do not take from
/// the readers the line with the domain's `id` and `wildcard`, which a user
/// domain's every acquire and every [`AtomicBox::load`](crate::AtomicBox::load)
/// read, nor from every retire the line with `draining`.
#[repr(align(128))]
pub(crate) struct Reclamation {
    /// The retired list handed over by threads.
    pub(crate) retired: Mutex<Vec<Retired>>,
    /// Objects in `retired` (read without the lock to decide on a pass).
    pub(crate) retired_count: AtomicUsize,
    /// Objects in `retired` plus those a pass took off it, until the pass
    /// has returned them all to the list or to their deleters (it lowers
    /// this once, after the last deleter): [`Domain::retired_len`]. Not
    /// reset when a pass takes the list, so a read during a pass does not
    /// miss what the pass holds.
    pub(crate) unfreed: AtomicUsize,
    /// Of the objects in `retired`, the ones a pass found protected and put back (read without
    /// the lock to decide on a pass; see `retire::maybe_reclaim`).
    pub(crate) kept_count: AtomicUsize,
    /// Tests: turns off the time-based pass trigger, which makes counts
    /// depend on the clock.
    #[cfg(test)]
    pub(crate) period_off: AtomicBool,
    /// When the last reclamation pass ran (`retire::now_ms`): stored as a
    /// pass starts, and again once it has collected its hazards.
    pub(crate) last_reclaim_ms: AtomicU32,
    /// The period after which a hand-over runs a pass whatever the counts:
    /// `retire::RECLAIM_PERIOD_MS`, or twice what the last pass took to
    /// collect its hazards if that is longer, up to 100 ms
    /// (`retire::pass_period_ms`).
    pub(crate) period_ms: AtomicU32,
    /// The slots the last pass read (`retire::enough_for_a_pass`).
    pub(crate) last_pass_slots: AtomicUsize,
}

// The layout `Reclamation` and `ScanState` promise, checked as the crate
// compiles: what readers and every retire read (`id`, `wildcard`, `draining`)
// shares no 128-byte pair of lines with the retired list's bookkeeping or the
// shared scan's queue, which other threads write at every hand-over, pass or
// `synchronize`. (Loom's types are no real layout.)
#[cfg(not(loom))]
const _: () = {
    use std::mem::{offset_of, size_of};
    const fn apart(a: usize, group: usize, group_size: usize) -> bool {
        a / 128 < group / 128 || a / 128 >= (group + group_size).div_ceil(128)
    }
    let reclamation = offset_of!(Shared, reclamation);
    let scan = offset_of!(Shared, scan);
    let read_mostly = [
        offset_of!(Shared, id),
        offset_of!(Shared, wildcard),
        offset_of!(Shared, draining),
    ];
    let mut i = 0;
    while i < read_mostly.len() {
        assert!(apart(read_mostly[i], reclamation, size_of::<Reclamation>()));
        assert!(apart(read_mostly[i], scan, size_of::<ScanState>()));
        i += 1;
    }
};

// SAFETY: the raw pointers in `blocks`/`overflow` lead to nodes the domain
// owns and frees only in `Drop` (as does `own_wildcard`, an atomic word); all
// shared mutation goes through atomics or the mutex, or is exclusive by a
// protocol: the scan's buffers (`UnsafeCell`) belong to whoever holds the
// `driver` flag (`scan::sharing`'s invariants), a block's batch to its owner
// outside a drain (the `pushing`/`draining` handshake, `retire`), and the
// per-node rules are argued in `slot`.
unsafe impl Send for Shared {}
// SAFETY: as above.
unsafe impl Sync for Shared {}

impl Shared {
    fn new(id: u64, options: Options) -> Self {
        // The stall warnings' timeout is read once per process, by the
        // first wait that would sleep unless something read it before; with
        // `SYNCPRIMS_STALL_TIMEOUT_S` set, reading it allocates (the value's
        // copy). Read here, while a domain is made (which allocates anyway),
        // so that no `synchronize` does (`tests/no_alloc.rs`).
        let _ = futex_word::stall::timeout();
        let (wildcard, own_wildcard) = match global_wildcard() {
            Some(global) if id == GLOBAL_ID => (ptr::from_ref(global), ptr::null_mut()),
            _ => {
                let own = Box::into_raw(Box::new(CacheAligned(AtomicUsize::new(FIRST_WILDCARD))));
                // SAFETY: `own` is a live allocation just made; this only
                // computes the field's address.
                (unsafe { &raw const (*own).0 }, own)
            }
        };
        Shared {
            id,
            options,
            wildcard,
            own_wildcard,
            blocks: AtomicPtr::new(ptr::null_mut()),
            overflow: std::array::from_fn(|_| AtomicPtr::new(ptr::null_mut())),
            scan: ScanState::new(),
            reclamation: Reclamation {
                retired: Mutex::new(Vec::new()),
                retired_count: AtomicUsize::new(0),
                unfreed: AtomicUsize::new(0),
                kept_count: AtomicUsize::new(0),
                #[cfg(test)]
                period_off: AtomicBool::new(false),
                last_reclaim_ms: AtomicU32::new(retire::now_ms()),
                period_ms: AtomicU32::new(retire::RECLAIM_PERIOD_MS),
                last_pass_slots: AtomicUsize::new(0),
            },
            draining: AtomicBool::new(false),
            drain_waiters: AtomicU32::new(0),
            dropped: AtomicBool::new(false),
            leak_retired: AtomicBool::new(false),
        }
    }

    /// The wildcard word.
    #[inline]
    pub(crate) fn wildcard(&self) -> &AtomicUsize {
        // SAFETY: points into `own_wildcard` (freed only when `self` is
        // dropped) or at a static.
        unsafe { &*self.wildcard }
    }

    /// Calls `f` on every block, in list order.
    pub(crate) fn for_each_block(&self, mut f: impl FnMut(&SlotBlock)) {
        self.find_block(|b| {
            f(b);
            false
        });
    }

    /// The first block, in list order, for which `claim` returns true; the
    /// walk stops there.
    #[inline]
    fn find_block(&self, mut claim: impl FnMut(&SlotBlock) -> bool) -> Option<NonNull<SlotBlock>> {
        // Acquire pairs with the Release CAS in `push_node`: a published
        // block's fields are visible.
        let mut block = self.blocks.load(Ordering::Acquire);
        while let Some(b) = NonNull::new(block) {
            // SAFETY: blocks are freed only in `Drop for Shared`, which cannot
            // run while `&self` is borrowed.
            let b_ref = unsafe { b.as_ref() };
            if claim(b_ref) {
                return Some(b);
            }
            block = b_ref.link.next;
        }
        None
    }

    /// Calls `f` on every backup slot of every overflow list.
    pub(crate) fn for_each_backup(&self, mut f: impl FnMut(&BackupSlot)) {
        for head in &self.overflow {
            // Acquire pairs with the Release CAS in `push_node`.
            let mut node = head.load(Ordering::Acquire);
            while let Some(n) = NonNull::new(node) {
                // SAFETY: backup slots are freed only in `Drop for Shared`.
                let n = unsafe { n.as_ref() };
                f(n);
                node = n.next;
            }
        }
    }

    /// Takes a free block or allocates one for the calling thread (whose
    /// token is `token`); the caller owns it afterwards.
    pub(crate) fn take_block(&self, token: usize) -> NonNull<SlotBlock> {
        let block = self.find_or_add_block();
        // SAFETY: blocks live as long as `self`.
        unsafe { block.as_ref() }.link.owner.set(token);
        block
    }

    fn find_or_add_block(&self) -> NonNull<SlotBlock> {
        let free = self.find_block(|b| {
            // Relaxed: a hint that skips taken blocks; the CAS re-checks.
            !b.link.in_use.load(Ordering::Relaxed)
                // Acquire pairs with the Release store in `give_back_block`:
                // the previous owner's last writes (empty slots,
                // empty batch) are visible.
                && b.link
                    .in_use
                    .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
                    .is_ok()
        });
        if let Some(block) = free.or_else(|| self.take_orphaned_block()) {
            return block;
        }
        let block = Box::into_raw(Box::new(SlotBlock::new(self)));
        // SAFETY: `block` is freshly allocated and exclusively ours; the
        // closure writes only its link.
        unsafe { push_node(&self.blocks, block, |next| (*block).link.next = next) };
        // SAFETY: just allocated, never null.
        unsafe { NonNull::new_unchecked(block) }
    }

    /// Claims a block whose owner exited while a later-destroyed guard held
    /// one of its slots, once that guard has dropped: no thread can reach the
    /// block any more (the owner's registration is gone, so its guards take
    /// backup slots), and a guard's last access to its slot is the Release
    /// store of `EMPTY` that ends it.
    #[cold]
    fn take_orphaned_block(&self) -> Option<NonNull<SlotBlock>> {
        self.find_block(|b| {
            // Relaxed: a hint that skips blocks in use; the CAS re-checks.
            // Claimed before the slots are read: until the CAS reads the
            // exiting owner's Release store, nothing orders our slot loads
            // after that owner's last guard store, and they could read a
            // slot's value from before the guard that outlived its
            // registration took it (an `EMPTY` older than its `RESERVED`),
            // on CPUs that do not keep loads in order (found in review,
            // 2026-12-05; x86 does).
            b.link.orphaned.load(Ordering::Relaxed)
                // Acquire pairs with the Release store in `give_back_block`
                // (the flushed batch, and every slot store of the owner's
                // guards before it); the CAS makes one taker win.
                && b.link
                    .orphaned
                    .compare_exchange(true, false, Ordering::Acquire, Ordering::Relaxed)
                    .is_ok()
                // Acquire pairs with the guards' Release stores of `EMPTY`:
                // what they did under protection happens before our use. A
                // guard still holds a slot: put the claim back (Release,
                // for the next taker's CAS, as the owner's store was).
                && (b.all_free(Ordering::Acquire) || {
                    b.link.orphaned.store(true, Ordering::Release);
                    false
                })
        })
    }

    /// Gives `block` back at thread exit (or when the domain was dropped).
    ///
    /// # Safety
    ///
    /// `block` is one of `self`'s blocks; the calling thread owns it and
    /// stops using it.
    pub(crate) unsafe fn give_back_block(&self, block: NonNull<SlotBlock>) {
        // SAFETY: blocks live as long as `self`.
        let b = unsafe { block.as_ref() };
        retire::flush_batch(self, b);
        // SAFETY: as this function's.
        unsafe { self.release_block(block) };
    }

    /// [`give_back_block`](Self::give_back_block) unless another thread
    /// holds the domain's retired list, whose lock the batch's flush needs;
    /// returns whether it gave the block back. For a registration that
    /// gives back the blocks of dropped domains on its way (a reader's
    /// first guard in a domain): it must not wait for a pass, or for the
    /// fork hooks of another thread, which hold every live domain's list
    /// for as long as the program's fork takes (until 2026-12-07 such a
    /// reader's first guard waited out a 2 s fork).
    ///
    /// # Safety
    ///
    /// As [`give_back_block`](Self::give_back_block)'s.
    pub(crate) unsafe fn try_give_back_block(&self, block: NonNull<SlotBlock>) -> bool {
        // SAFETY: blocks live as long as `self`.
        let b = unsafe { block.as_ref() };
        if !retire::try_flush_batch(self, b) {
            return false;
        }
        // SAFETY: as this function's.
        unsafe { self.release_block(block) };
        true
    }

    /// The rest of a give-back, once the block's batch is flushed.
    ///
    /// # Safety
    ///
    /// As [`give_back_block`](Self::give_back_block)'s.
    unsafe fn release_block(&self, block: NonNull<SlotBlock>) {
        // SAFETY: blocks live as long as `self`.
        let b = unsafe { block.as_ref() };
        // Relaxed: only this thread writes its block's slots.
        if !b.all_free(Ordering::Relaxed) {
            // A guard of this thread outlives its registration (a guard kept
            // in another thread-local whose destructor runs later). Its slot
            // must stay reserved: the block stays in use, orphaned, until
            // `take_orphaned_block` finds every slot empty again. Release
            // pairs with the Acquire CAS there: the flushed batch is visible.
            // The owner stays recorded: this thread may still fork.
            b.link.orphaned.store(true, Ordering::Release);
            return;
        }
        b.link.owner.clear();
        // Release pairs with the Acquire CAS in `find_or_add_block`.
        b.link.in_use.store(false, Ordering::Release);
    }

    /// Takes a backup slot for the calling thread (whose token is `token`):
    /// a free one from any overflow list, or a new one on the list `token`
    /// hashes to. Records it in the thread's list of held backup slots.
    pub(crate) fn take_backup(&self, token: usize) -> NonNull<BackupSlot> {
        let node = self.find_or_add_backup(token);
        // SAFETY: backup slots live as long as `self`.
        unsafe { node.as_ref() }.owner.set(token);
        registration::remember_backup(self.id, node);
        node
    }

    fn find_or_add_backup(&self, token: usize) -> NonNull<BackupSlot> {
        // The thread's own list first (the one its new slots go onto), then
        // the others in turn; the first free slot found is taken. Threads
        // that hash to different lists then seldom race for the same slot,
        // and a thread that nests past its block again and again mostly
        // takes back a slot of its own list.
        let home = overflow_list_of(token);
        let lists = self.overflow.iter().cycle().skip(home).take(OVERFLOW_LISTS);
        if let Some(node) = lists.filter_map(claim_free_backup).next() {
            return node;
        }
        let node = Box::into_raw(Box::new(BackupSlot::new(self.wildcard(), self.id)));
        // SAFETY: freshly allocated and exclusively ours.
        unsafe { push_node(&self.overflow[home], node, |next| (*node).next = next) };
        // SAFETY: just allocated, never null.
        unsafe { NonNull::new_unchecked(node) }
    }
}

/// Takes the first free backup slot of one overflow list, if any.
fn claim_free_backup(list: &AtomicPtr<BackupSlot>) -> Option<NonNull<BackupSlot>> {
    // Acquire pairs with the Release CAS in `push_node`.
    let mut node = list.load(Ordering::Acquire);
    while let Some(n) = NonNull::new(node) {
        // SAFETY: backup slots are freed only in `Drop for Shared`.
        let slot = unsafe { n.as_ref() };
        // Relaxed: a hint that skips taken slots; the CAS re-checks.
        if !slot.in_use.load(Ordering::Relaxed)
            // Acquire pairs with the Release store in `Guard::drop` (or the
            // fork reset's).
            && slot
                .in_use
                .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
        {
            return Some(n);
        }
        node = slot.next;
    }
    None
}

impl Drop for Shared {
    fn drop(&mut self) {
        // Nobody else references the domain any more: free every retired
        // object (no guard can exist), then the blocks and backup slots.
        let mut leftovers = std::mem::take(&mut *crate::sync::lock(&self.reclamation.retired));
        self.for_each_block(|b| {
            // SAFETY: no thread uses the block any more (the last reference to
            // the domain is going away).
            b.retired
                .batch
                .with_mut(|batch| leftovers.append(unsafe { &mut *batch }));
        });
        // Relaxed: `&mut self`, as below.
        let panicked = if self.leak_retired.load(Ordering::Relaxed) {
            // The `Domain` was dropped without shutting down (between the
            // fork hooks), and its objects' deleters need stay valid only
            // until then, which may be long past.
            std::mem::forget(leftovers);
            None
        } else {
            // SAFETY: retired objects are unreachable and unprotected now (no
            // guard exists: guards borrow the `Domain`, and this is the last
            // reference to its state). The `Domain`'s drop shut it down
            // (`leak_retired` is clear): its `free_all` took every object
            // retired in it, batches and list, and nothing can be retired
            // after (retiring takes a `&Domain`), so this finds none that
            // outlived the `Domain` (`Domain::retire`'s contract, item 3).
            unsafe { retire::reclaim_all(leftovers) }
        };
        // Relaxed: `&mut self`, every other access happened before.
        let mut block = self.blocks.load(Ordering::Relaxed);
        while !block.is_null() {
            // SAFETY: allocated by `Box::new` in `take_block`, freed once here.
            let b = unsafe { Box::from_raw(block) };
            block = b.link.next;
        }
        for head in &self.overflow {
            // Relaxed: as for `blocks` above.
            let mut node = head.load(Ordering::Relaxed);
            while !node.is_null() {
                // SAFETY: allocated by `Box::new` in `take_backup`, freed once.
                let n = unsafe { Box::from_raw(node) };
                node = n.next;
            }
        }
        if !self.own_wildcard.is_null() {
            // SAFETY: allocated by `Box::into_raw` in `Shared::new`, freed once
            // here; the blocks and backup slots that pointed at it are gone.
            drop(unsafe { Box::from_raw(self.own_wildcard) });
        }
        // This domain's registry entry, and those of others dropped before.
        #[cfg(not(loom))]
        note_domain_dropped();
        // Everything is freed: a deleter's panic may go on now.
        if let Some(panic) = panicked {
            retire::pass_on(panic);
        }
    }
}

/// A hazard-pointer domain: slots, overflow lists, retired objects and the
/// shared scan of `synchronize`.
///
/// Most programs use the global domain ([`Domain::global`], what
/// [`Guard::new`](crate::Guard::new), [`synchronize`](crate::synchronize) and
/// [`AtomicBox::new`](crate::AtomicBox::new) use). A separate domain isolates
/// a data structure's scans and retired objects from everyone else's; dropping
/// it frees every object retired to it. Its slots (about 200 bytes for each
/// thread that used it, and its backup slots) stay until each such thread
/// exits or first uses another domain new to it: a long-lived thread pool
/// that used many short-lived domains keeps theirs until then.
///
/// ```
/// use hazptr::Domain;
/// use std::sync::atomic::AtomicPtr;
///
/// // Every caller scans alone (`shared_scan(false)`): the mode to compare
/// // against the default shared scan, which is the one to start from.
/// let domain = Domain::builder().shared_scan(false).build();
/// let shared = AtomicPtr::new(Box::into_raw(Box::new(7u64)));
/// {
///     let mut guard = domain.guard();
///     let p = guard.protect_ptr(&shared);
///     // SAFETY: `p` is protected by `guard`, a guard of `domain`, where the
///     // writer below synchronizes before it frees; never null here.
///     assert_eq!(unsafe { *p }, 7);
/// }
/// let old = shared.swap(std::ptr::null_mut(), std::sync::atomic::Ordering::AcqRel);
/// domain.synchronize(old);
/// // SAFETY: `old` came from `Box::into_raw` and is freed once; the swap
/// // unpublished it and `synchronize` waited out every guard that held it.
/// drop(unsafe { Box::from_raw(old) });
/// ```
pub struct Domain {
    pub(crate) shared: Arc<Shared>,
}

impl fmt::Debug for Domain {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Domain")
            .field("id", &self.shared.id)
            .field("shared_scan", &self.shared.options.shared_scan)
            .field("force_slow_path", &self.shared.options.force_slow_path)
            .finish_non_exhaustive()
    }
}

impl Default for Domain {
    fn default() -> Self {
        Domain::new()
    }
}

/// Configures a [`Domain`].
#[derive(Clone, Debug, Default)]
#[must_use]
pub struct DomainBuilder {
    options: Options,
}

impl DomainBuilder {
    /// Whether concurrent `synchronize` callers share one scan (`true`, the
    /// default: whoever finds the scan free, a caller or the domain's scanner
    /// thread, serves every queued caller, and a caller that finds nothing
    /// queued and no scan running scans for itself at once), or each caller
    /// scans alone (`false`, for comparison).
    pub fn shared_scan(mut self, shared: bool) -> Self {
        self.options.shared_scan = shared;
        self
    }

    /// Forces every acquire onto the slow path (a backup slot on an overflow
    /// list), as the kernel's debug option does; for tests and torture runs.
    /// The cargo feature `force-slow-path` sets it for every domain.
    pub fn force_slow_path(mut self, force: bool) -> Self {
        self.options.force_slow_path = force || cfg!(feature = "force-slow-path");
        self
    }

    /// How many retired objects handed to the domain trigger a reclamation
    /// pass (default 1000; at least 1). Counted since the last pass; a pass
    /// that found more objects than this still protected waits for as many
    /// new ones, and one that read more slots than this (guards held on
    /// that many objects, or backup slots kept after a spike of nested
    /// guards) for as many new ones as slots, so that each pass's walk is
    /// paid for by as many objects. The period's pass comes sooner if it is
    /// due: 2 ms after the last pass collected its hazards, or twice what
    /// that collection took if longer, up to 100 ms.
    pub fn retire_threshold(mut self, objects: usize) -> Self {
        self.options.retire_threshold = objects.max(1);
        self
    }

    /// Builds the domain.
    ///
    /// # Panics
    ///
    /// Between the calling thread's [`before_fork`](crate::fork::before_fork)
    /// and `after_fork_*` (the hooks hold the registry of domains).
    pub fn build(self) -> Domain {
        crate::refuse_between_hooks("creating a Domain");
        Domain {
            shared: registered(Arc::new(Shared::new(
                // Relaxed: the RMW alone makes each id distinct; the id
                // publishes nothing.
                NEXT_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
                self.options,
            ))),
        }
    }
}

/// Every domain's shared part, for the fork hooks (`fork.rs`), which must
/// find every domain's locks and slots.
///
/// An entry of a dropped domain holds its `Arc`'s allocation (a `Weak`
/// does), about 512 bytes, until [`prune_domains`] removes it: once as many
/// domains have dropped as half the registry's length at the last prune, a
/// drop or the next registration prunes. Dead entries therefore never
/// outnumber the live ones for long, and a burst of drops on one thread
/// leaves none behind (drops on several threads at once may leave the few
/// whose prune found the lock taken, until a later drop or creation; before
/// 2026-12-07 every dead entry stayed until the next `Domain::new`: 52 MB
/// after 100,000 domains were dropped), at amortized O(1) a drop or
/// registration rather than a walk of every domain each.
#[cfg(not(loom))]
pub(crate) static DOMAINS: std::sync::Mutex<Vec<std::sync::Weak<Shared>>> =
    std::sync::Mutex::new(Vec::new());

/// Domains dropped since [`DOMAINS`] was last pruned. Relaxed, as
/// [`REGISTRY_LEN`]: a hint of when to prune; the pruning itself is under
/// the registry's lock.
#[cfg(not(loom))]
static DROPPED_SINCE_PRUNE: AtomicUsize = AtomicUsize::new(0);

/// [`DOMAINS`]' length at its last prune or registration.
#[cfg(not(loom))]
static REGISTRY_LEN: AtomicUsize = AtomicUsize::new(0);

/// Whether enough domains have dropped since the last prune to pay for one.
#[cfg(not(loom))]
fn prune_due() -> bool {
    // Relaxed: see `DROPPED_SINCE_PRUNE`.
    2 * DROPPED_SINCE_PRUNE.load(Ordering::Relaxed) >= REGISTRY_LEN.load(Ordering::Relaxed).max(1)
}

/// Removes the entries of dropped domains from the registry, and gives back
/// what its vector no longer needs.
#[cfg(not(loom))]
fn prune_domains(domains: &mut Vec<std::sync::Weak<Shared>>) {
    // Relaxed: see `DROPPED_SINCE_PRUNE`. Only the drops counted before the
    // walk are taken back: one counted during it (whose entry the walk may
    // have missed) still counts toward the next prune.
    let seen = DROPPED_SINCE_PRUNE.load(Ordering::Relaxed);
    domains.retain(|d| d.strong_count() > 0);
    if domains.capacity() > 4 * domains.len().max(8) {
        domains.shrink_to(2 * domains.len());
    }
    DROPPED_SINCE_PRUNE.fetch_sub(seen, Ordering::Relaxed);
    REGISTRY_LEN.store(domains.len(), Ordering::Relaxed);
}

/// A domain's drop: counts it, and prunes the registry when one is due
/// and its lock is free. Never waits for the lock: the fork hooks hold it
/// while they drop what they held (possibly a domain's last reference, on
/// this very thread), and a drop must not wait for a fork either.
#[cfg(not(loom))]
fn note_domain_dropped() {
    // Relaxed: see `DROPPED_SINCE_PRUNE`.
    DROPPED_SINCE_PRUNE.fetch_add(1, Ordering::Relaxed);
    if !prune_due() {
        return;
    }
    let mut domains = match DOMAINS.try_lock() {
        Ok(domains) => domains,
        Err(std::sync::TryLockError::Poisoned(poisoned)) => poisoned.into_inner(),
        Err(std::sync::TryLockError::WouldBlock) => return,
    };
    prune_domains(&mut domains);
}

/// Adds `shared` to [`DOMAINS`].
#[cfg(not(loom))]
fn registered(shared: Arc<Shared>) -> Arc<Shared> {
    let mut domains = DOMAINS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if prune_due() {
        prune_domains(&mut domains);
    }
    domains.push(Arc::downgrade(&shared));
    // Relaxed: see `DROPPED_SINCE_PRUNE`.
    REGISTRY_LEN.store(domains.len(), Ordering::Relaxed);
    shared
}

/// No fork hooks under loom.
#[cfg(loom)]
fn registered(shared: Arc<Shared>) -> Arc<Shared> {
    shared
}

#[cfg(not(loom))]
static GLOBAL: std::sync::LazyLock<Domain> = std::sync::LazyLock::new(|| Domain {
    shared: registered(Arc::new(Shared::new(GLOBAL_ID, Options::default()))),
});

#[cfg(loom)]
loom::lazy_static! {
    static ref GLOBAL: Domain = Domain {
        shared: Arc::new(Shared::new(GLOBAL_ID, Options::default())),
    };
}

impl Domain {
    /// A new domain with default options (shared scan on).
    ///
    /// # Panics
    ///
    /// As [`DomainBuilder::build`].
    pub fn new() -> Domain {
        DomainBuilder::default().build()
    }

    /// Starts configuring a domain.
    pub fn builder() -> DomainBuilder {
        DomainBuilder::default()
    }

    /// The process-wide default domain. It is never dropped.
    pub fn global() -> &'static Domain {
        &GLOBAL
    }

    /// A number no other domain of the process has had: the global domain's
    /// is 1. A shared-scan domain's scanner thread is named
    /// `hazptr-scan-{id}`, which is how to find it in `top -H`, `gdb` or
    /// `/proc/self/task`.
    pub fn id(&self) -> u64 {
        self.shared.id
    }

    /// Whether `synchronize` callers share one scan.
    pub fn shared_scan(&self) -> bool {
        self.shared.options.shared_scan
    }

    /// Whether every acquire takes the slow path.
    pub fn forces_slow_path(&self) -> bool {
        self.shared.options.force_slow_path
    }

    /// How many per-thread slot blocks the domain has allocated (blocks of
    /// exited threads are reused, so this tracks the most threads that used
    /// the domain at once). For tests and statistics.
    pub fn thread_blocks(&self) -> usize {
        let mut n = 0;
        self.shared.for_each_block(|_| n += 1);
        n
    }

    /// Under loom: what `hazptr::fork::before_fork()` and
    /// `after_fork_parent()` do to this domain's shared scan (count the fork
    /// as waiting, take the driver flag, give it back).
    #[cfg(loom)]
    #[doc(hidden)]
    pub fn loom_fork_window(&self) {
        crate::scan::loom_fork_window(&self.shared);
    }

    /// Under loom: the count of the retired list that decides on passes
    /// (`retired_count`), which a pass resets when it takes the list, for
    /// the model of a retire racing a pass (`retired_len` counts what a
    /// pass holds too).
    #[cfg(loom)]
    #[doc(hidden)]
    pub fn loom_retired_count(&self) -> usize {
        // Relaxed: the model reads it once every thread is joined.
        self.shared
            .reclamation
            .retired_count
            .load(crate::sync::Ordering::Relaxed)
    }

    /// How many backup slots the overflow lists hold (in use or free).
    pub fn backup_slots(&self) -> usize {
        let mut n = 0;
        self.shared.for_each_backup(|_| n += 1);
        n
    }

    /// A backup slot of this domain for the calling thread (the acquire slow
    /// path); returned as one pointer so that callers build the guard in
    /// registers.
    #[cold]
    #[inline(never)]
    pub(crate) fn backup_slot(&self) -> NonNull<BackupSlot> {
        self.shared.take_backup(registration::thread_token())
    }

    /// The calling thread's block in this domain, registering on first use.
    /// `None` when the domain forces the slow path or the thread is exiting.
    #[inline]
    pub(crate) fn block(&self) -> Option<NonNull<SlotBlock>> {
        registration::block(&self.shared)
    }
}

impl Drop for Domain {
    fn drop(&mut self) {
        if crate::between_fork_hooks() {
            // Not shut down (see `fork::before_fork`): the `Shared` lives on
            // until the hooks and the threads' registrations let go, past
            // the borrows a retired object's deleter may use (they need
            // only outlive this drop), so its leftovers are leaked then.
            // Relaxed: `Shared::drop` reads it with `&mut self`, after every
            // other reference is gone.
            self.shared.leak_retired.store(true, Ordering::Relaxed);
            if std::thread::panicking() {
                // Unwinding from a refused call: a second panic would abort
                // the process.
                return;
            }
            crate::refuse_between_hooks("dropping a Domain");
        }
        // Relaxed: only a hint for `register`, which then gives the block
        // back; it pairs with nothing. Whether that thread's give-back moves
        // its batch before or after `free_all` below takes the batches, the
        // retired-list mutex orders the two, and either way every object is
        // freed once.
        self.shared.dropped.store(true, Ordering::Relaxed);
        crate::scan::stop_scanner(&self.shared);
        // No guard of this domain can exist (guards borrow it), so every
        // retired object can go, including those in other threads' batches:
        // those threads cannot be retiring into this domain any more, and
        // their exit flush takes the same mutex.
        retire::free_all(&self.shared);
    }
}

/// The global domain's wildcard word: a static, so that the global fast path
/// finds it without a load. `None` under loom (loom atomics are not `const`;
/// the global domain then owns its word like any other).
#[inline(always)]
pub(crate) fn global_wildcard() -> Option<&'static AtomicUsize> {
    #[cfg(not(loom))]
    {
        static GLOBAL_WILDCARD: CacheAligned<AtomicUsize> =
            CacheAligned(AtomicUsize::new(FIRST_WILDCARD));
        Some(&GLOBAL_WILDCARD.0)
    }
    #[cfg(loom)]
    {
        None
    }
}

/// The overflow list a thread whose token is `token` adds backup slots to.
///
/// Tokens are addresses of one thread-local, at the same offset in every
/// thread's TLS block, and those blocks sit a thread stack apart (2 MiB and a
/// guard page with glibc's defaults): they differ only in high bits, so any
/// low bits of them (`token >> 6` once was) put every thread on one list.
/// A multiplicative hash: the top byte of the product depends on every bit
/// of the token (a product's bit `i` depends only on the factors' bits up to
/// `i`, so lower bits of it would ignore how far apart stacks are).
// Under loom there is one overflow list (smaller models): `% 1` is meant.
#[cfg_attr(loom, allow(clippy::modulo_one))]
#[inline]
fn overflow_list_of(token: usize) -> usize {
    let h = (token as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    (h >> 56) as usize % OVERFLOW_LISTS
}

#[cfg(not(loom))]
impl Shared {
    /// In a fork child: records the child thread's kernel id in the slots
    /// that the forking thread (whose thread token is `own`) holds, and
    /// empties and frees every slot it does not hold, told by the slot's
    /// recorded `Owner` (its block, also when orphaned because the thread is
    /// running thread-local destructors, and the backup slots its guards
    /// hold; see `Owner` for why not by thread-locals). Their holders are
    /// threads that did not come along (or exited leaving a guard
    /// forgotten), whose guards will never be dropped. A slot a forgotten
    /// guard of an exited thread holds stays taken if the forking thread
    /// got that thread's token (the address of a thread-local, reused), as
    /// it stays taken in the parent. A freed block's retire
    /// batch is forgotten, not read: its owner may have been in the middle of
    /// pushing to it. For the same reason its `pushing` flag is cleared: an
    /// owner that vanished between its two stores (`retire_local`, or
    /// `wait_out_drain`) would otherwise leave it set for good, and the
    /// child's first drain (`Domain::reclaim`) waiting for it, holding the
    /// retired list.
    ///
    /// The child has one thread and the caller holds this domain's retired
    /// list (the only other way to a block's batch), so plain Relaxed stores
    /// would do; the Release stores of `in_use` keep the pairing with
    /// `take_block`'s and `find_or_add_backup`'s Acquire CAS that every
    /// other give-back has.
    pub(crate) fn free_foreign_slots_after_fork(&self, own: usize) {
        self.for_each_block(|b| {
            // Relaxed, here and below but for the `in_use` stores: the child
            // has one thread (see above).
            if b.link.owner.is(own) {
                // The child's thread holds it now, under an id of its own.
                return b.link.owner.refresh_os_id();
            }
            if !b.link.in_use.load(Ordering::Relaxed) {
                return;
            }
            for (i, slot) in b.hot.slots.iter().enumerate() {
                slot.store(b.free_value(i), Ordering::Relaxed);
            }
            b.retired.batch.with_mut(|batch| {
                // SAFETY: the owner is gone, and the retired-list lock (held by
                // the fork hooks) keeps every other thread off the batch.
                std::mem::forget(std::mem::take(unsafe { &mut *batch }));
            });
            b.retired.since_check.set(0);
            b.retired.pushing.store(false, Ordering::Relaxed);
            // An orphaned block's guard is gone with its thread too.
            b.link.orphaned.store(false, Ordering::Relaxed);
            b.link.owner.clear();
            // Release pairs with the Acquire CAS in `find_or_add_block`
            // (under `take_block`).
            b.link.in_use.store(false, Ordering::Release);
        });
        self.for_each_backup(|n| {
            // Relaxed: as for the blocks above.
            if n.owner.is(own) {
                // As for the blocks above.
                return n.owner.refresh_os_id();
            }
            if !n.in_use.load(Ordering::Relaxed) {
                return;
            }
            n.value.store(crate::slot::EMPTY, Ordering::Relaxed);
            n.owner.clear();
            // Release pairs with the Acquire CAS in `claim_free_backup`
            // (under `find_or_add_backup`), as in `Guard::drop`.
            n.in_use.store(false, Ordering::Release);
        });
    }
}

/// Slots per thread block. Where the fences are in SeqCst mode (a kernel
/// without membarrier, or `SYNCPRIMS_FENCE=seqcst`), blocks keep the first
/// one back, so that the fast path need not read the mode: see
/// [`usable_slots_per_thread`].
pub const SLOTS_PER_THREAD: usize = SLOTS_PER_BLOCK;

/// How many guards a thread can hold in one domain before further ones take
/// backup slots: [`SLOTS_PER_THREAD`], or one fewer where the fences are in
/// SeqCst mode. Decides the fence mode if no fence has run yet.
///
/// ```
/// let n = hazptr::usable_slots_per_thread();
/// assert!(n == hazptr::SLOTS_PER_THREAD || n + 1 == hazptr::SLOTS_PER_THREAD);
/// let domain = hazptr::Domain::new();
/// let guards: Vec<_> = (0..n).map(|_| domain.guard()).collect();
/// // None on a backup slot, unless the domain forces every guard onto one.
/// assert_eq!(guards.iter().any(|g| g.is_backup()), domain.forces_slow_path());
/// assert!(domain.guard().is_backup());
/// ```
pub fn usable_slots_per_thread() -> usize {
    SLOTS_PER_BLOCK - usize::from(crate::slot::first_slot_kept_back())
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::Barrier;
    use std::time::Duration;

    /// How long a test that waits on other threads may run before it counts
    /// as a hang and fails with a message instead of stalling the binary; it
    /// takes milliseconds alone, the margin is for CI's 2 busy cores (and
    /// for miri, whose clock counts 5 µs per interpreted basic block).
    const TEST_DEADLINE: Duration = Duration::from_secs(if cfg!(miri) { 600 } else { 30 });

    /// Threads that each hold a backup slot at once get new ones spread over
    /// more than one overflow list (tokens are addresses of a thread-local,
    /// which sit at the same offset in every thread's TLS block).
    #[test]
    fn backup_slots_of_different_threads_spread_over_the_overflow_lists() {
        test_support::within_a_deadline(
            "threads holding backup slots across barriers",
            TEST_DEADLINE,
            || {
                const THREADS: usize = 12;
                let domain = Domain::builder().force_slow_path(true).build();
                let barrier = Barrier::new(THREADS + 1);
                std::thread::scope(|s| {
                    for _ in 0..THREADS {
                        s.spawn(|| {
                            let guard = domain.guard();
                            assert!(guard.is_backup());
                            // Hold it until the main thread has counted.
                            barrier.wait();
                            barrier.wait();
                            drop(guard);
                        });
                    }
                    barrier.wait();
                    let used = domain
                        .shared
                        .overflow
                        .iter()
                        // Relaxed: the barrier orders the pushes before this load.
                        .filter(|head| !head.load(Ordering::Relaxed).is_null())
                        .count();
                    barrier.wait();
                    assert!(
                        used > 1,
                        "{THREADS} threads' backup slots all went onto {used} of {OVERFLOW_LISTS} lists"
                    );
                });
                assert_eq!(domain.backup_slots(), THREADS);
            },
        );
    }

    /// A thread looks for a free backup slot on its own overflow list first
    /// (the one its new slots go onto), whatever the order of the lists:
    /// with a free slot on two lists, each of two threads hashing to those
    /// lists takes back the one on its own. (Searching the lists in index
    /// order, as before, gave the first search the slot of the
    /// lower-numbered list, here the second token's, and had every thread's
    /// search race for the same first free slots.)
    #[test]
    fn a_thread_takes_a_free_backup_slot_of_its_own_list_first() {
        let domain = Domain::new();
        let shared = &domain.shared;
        // Two tokens (any numbers serve) that hash to different lists.
        let first = 0x1000;
        let second = (first + 8..)
            .step_by(8)
            .find(|&t| overflow_list_of(t) != overflow_list_of(first))
            .expect("tokens spread over the lists");
        let of_first = shared.find_or_add_backup(first);
        let of_second = shared.find_or_add_backup(second);
        for node in [of_first, of_second] {
            // SAFETY: backup slots live as long as the domain. Release, as
            // `Guard::drop` gives one back.
            unsafe { node.as_ref() }
                .in_use
                .store(false, Ordering::Release);
        }
        assert_eq!(shared.find_or_add_backup(first), of_first);
        assert_eq!(shared.find_or_add_backup(second), of_second);
        assert_eq!(domain.backup_slots(), 2, "a slot was free, none added");
    }

    /// A fork child frees the block of a thread that did not come along
    /// even if that thread was in the middle of a retire: its `pushing`
    /// flag, which nobody would clear, is cleared with the rest, and the
    /// child's `reclaim()` does not wait for it. (Before 2026-12-05 it
    /// did, for good, holding the retired list: found in review.)
    #[test]
    #[cfg(not(miri))]
    #[cfg_attr(
        feature = "force-slow-path",
        ignore = "tests the threads' slot blocks, which the force-slow-path feature leaves unused"
    )]
    fn a_fork_child_drains_the_block_of_a_thread_that_vanished_mid_retire() {
        const HOOKS: test_support::ForkHooks = test_support::ForkHooks {
            before: crate::fork::before_fork,
            after_parent: crate::fork::after_fork_parent,
            after_child: crate::fork::after_fork_child,
        };
        test_support::forking_test(
            "domain::tests::a_fork_child_drains_the_block_of_a_thread_that_vanished_mid_retire",
            || {
                let domain: &'static Domain = Box::leak(Box::new(Domain::new()));
                let (held_tx, held_rx) = std::sync::mpsc::channel();
                let (release_tx, release_rx) = std::sync::mpsc::channel::<()>();
                let owner = std::thread::spawn(move || {
                    let guard = domain.guard();
                    held_tx.send(()).expect("the test waits");
                    release_rx.recv().expect("the test releases the owner");
                    drop(guard);
                });
                held_rx.recv().expect("the owner holds a block");
                // The owner as a fork finds it between the two `pushing`
                // stores of a retire. Relaxed: the owner does not retire, so
                // nothing else touches the flag; the fork carries it over.
                let mut owners = 0;
                domain.shared.for_each_block(|b| {
                    if b.link.in_use.load(Ordering::Acquire) {
                        b.retired.pushing.store(true, Ordering::Relaxed);
                        owners += 1;
                    }
                });
                assert_eq!(owners, 1, "the owner's block and no other is in use");
                // SAFETY: the child only reclaims; it uses no reference that another
                // thread's guard protected.
                let status = unsafe {
                    test_support::fork_and_wait(HOOKS, move || {
                        domain.reclaim();
                    })
                };
                // Release: as the owner's own clear at the end of a push.
                domain
                    .shared
                    .for_each_block(|b| b.retired.pushing.store(false, Ordering::Release));
                release_tx.send(()).expect("the owner waits");
                owner.join().expect("the owner exits");
                test_support::assert_child_succeeded(
                    status,
                    "a reclaim over the block of an owner that vanished mid-retire",
                );
            },
        );
    }
}
