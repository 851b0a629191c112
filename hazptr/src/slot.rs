//! Hazard slots: per-thread slot blocks and the backup slots of the overflow
//! lists (the kernel's per-CPU `hazptr_slot`s and `hazptr_backup_slot`s).
//!
//! # What a slot holds
//!
//! One `usize`:
//!
//! - `0`: empty (a block slot holding it is free);
//! - `2`: reserved by a guard that protects nothing (or, for life, the first
//!   slot of a block made in SeqCst fence mode: see below);
//! - an odd value: a **wildcard**, `(generation << 1) | 1`, stored by
//!   `acquire` before it loads the pointer. While a slot holds a wildcard a
//!   scan must treat it as protecting every address, unless its generation is
//!   at least the scan's own (see `scan`);
//! - any other value: the address of the protected object. Protected types
//!   are at least 2-aligned (checked at compile time), so an address is never
//!   odd and never mistaken for a wildcard.
//!
//! Only the slot's owner (the thread that acquired it) writes it; scans only
//! read it. (The one exception: in a fork child, `after_fork_child` empties
//! the slots of threads that did not come along.)
//!
//! # Blocks
//!
//! A [`SlotBlock`] is one thread's set of slots in one domain: the first cache
//! line holds the slots, and a slot is free when it holds [`EMPTY`] (the
//! reader touches one line; the first slot is the one exception, below),
//! the second the list link and ownership flag (read by scans and by
//! threads looking for a block to recycle), the third the owner's batch of
//! retired objects; 128-aligned, so that the first two and the third each
//! make one of the 128-byte pairs that x86 CPUs' adjacent-line prefetcher
//! fetches together. Blocks are never freed while their domain lives: a
//! block whose thread exits goes back to the domain, and the next thread
//! that registers takes it over, so scans can walk the list without locks.
//!
//! # The first slot and the fence mode
//!
//! A guard that takes its block's first slot (the fast path: no guard of
//! the thread is live in that domain) issues the light fence as a compiler
//! fence without reading the fence mode, because a block offers that slot
//! only where `fence::light()` is a compiler fence. A block made while the
//! fences are in SeqCst mode (a kernel without membarrier, or
//! `SYNCPRIMS_FENCE=seqcst`) keeps its first slot at [`RESERVED`] for life
//! ([`SlotBlock::free_value`]), so every guard there takes one of the other
//! slots, out of line, and validates its pointer around a `fence(SeqCst)`
//! (`guard.rs`, *Acquire in SeqCst fence mode*). The mode is decided before
//! the first block is made and never changes, so every block of the process
//! agrees with it. Under loom, miri and ThreadSanitizer, whose fences are
//! modelled, no slot is kept back and the first slot's guards read the mode
//! too: under loom and ThreadSanitizer they take the wildcard window with
//! `fence::light()`, and under miri, whose mode is always SeqCst, they
//! validate. This mirrors `rcu-lite`'s
//! `SLOW_PATH` bit: the mode costs the fast path no load.
//!
//! # Backup slots
//!
//! A [`BackupSlot`] is used when a thread's block is full, when the domain
//! forces the slow path, or when a guard is promoted out of its block slot.
//! Backup slots hang off the domain's overflow lists; like blocks they are
//! recycled, never freed before the domain. The kernel's backup slot is a
//! field of the caller's `hazptr_ctx`, chained onto a per-CPU overflow list
//! under a spinlock for one use and unchained after it, so it never
//! allocates. Here one is allocated when no free one is found: the acquire
//! slow path can allocate, and a domain keeps the most backup slots it ever
//! had in use at once until it drops.

use crate::domain::Shared;
use crate::retire::Retired;
use crate::sync::{AtomicBool, AtomicPtr, AtomicUsize, Ordering, UnsafeCell};
use membarrier_sim::fence;
use std::cell::Cell;
use std::ptr;

/// Slots per thread block: seven 8-byte slots in one cache line.
pub(crate) const SLOTS_PER_BLOCK: usize = if cfg!(loom) { 2 } else { 7 };

/// Whether a guard on a block's first slot issues the light fence as a
/// compiler fence (see "The first slot and the fence mode" above): false
/// where the fences are modelled (loom, miri, ThreadSanitizer), and there
/// blocks keep no slot back.
pub(crate) const FIRST_SLOT_COMPILER_FENCE: bool = cfg!(not(any(loom, miri, syncprims_tsan)));

/// Whether blocks keep their first slot back (see "The first slot and the
/// fence mode" above): where the fences are in SeqCst mode and not
/// modelled. Decides the mode if no fence has run yet, so that every block
/// agrees with the mode its guards will find: it never changes.
pub(crate) fn first_slot_kept_back() -> bool {
    FIRST_SLOT_COMPILER_FENCE && fence::mode() == fence::Mode::SeqCst
}

/// The value of an empty (free) slot.
pub(crate) const EMPTY: usize = 0;

/// The value of a slot a guard holds while protecting nothing. Even, and
/// below any address an allocation can have, so it is neither a wildcard
/// nor an object.
pub(crate) const RESERVED: usize = 2;

/// Whether a slot value is a wildcard (odd).
#[inline(always)]
pub(crate) const fn is_wildcard(value: usize) -> bool {
    value & 1 == 1
}

/// Whether wildcard `value` belongs to a generation older than `current`
/// (both wildcards). Generations advance by 2 per flip; the wrapping
/// difference keeps the comparison right across overflow of the counter.
#[inline(always)]
pub(crate) const fn is_older_wildcard(value: usize, current: usize) -> bool {
    (value.wrapping_sub(current) as isize) < 0
}

/// How far the domain's generation may have moved past a wildcard its
/// reader has just stored before the reader takes it for stale: a quarter
/// of the counter's range (2^29 scans on a 32-bit target). Any bound well
/// above the number of threads and below half the range would do: every
/// scan that flips after the reader's second load of the generation sees
/// the wildcard and waits for it, so the generation moves at most a couple
/// of flips a thread past that load while the wildcard stays there.
#[cfg(any(target_pointer_width = "32", test))]
pub(crate) const STALE_WILDCARD_LAG: usize = usize::MAX / 4 + 1;

/// Whether the wildcard a reader `stored` is stale, the domain's generation
/// being `now`, read after the store (so `now` is `stored` or a later
/// generation, and the wrapping difference is how far it moved on, modulo
/// the range). See `protect_in_wildcard_window` in `guard.rs`.
#[cfg(any(target_pointer_width = "32", test))]
#[inline(always)]
pub(crate) const fn is_stale_wildcard(stored: usize, now: usize) -> bool {
    now.wrapping_sub(stored) >= STALE_WILDCARD_LAG
}

/// The first wildcard a domain publishes (generation 0).
pub(crate) const FIRST_WILDCARD: usize = 1;

/// The hot line of a block: its slots. A block slot is free (a guard may
/// take it) exactly when it holds [`EMPTY`]; a guard that protects nothing
/// keeps its slot at [`RESERVED`], as a block made in SeqCst fence mode
/// keeps its first slot, which no guard takes. Finding a free slot is a load
/// of the thread's own slot and a predicted branch, with no bookkeeping
/// store.
#[repr(C, align(64))]
pub(crate) struct HotLine {
    pub(crate) slots: [AtomicUsize; SLOTS_PER_BLOCK],
}

/// The link line: read by scans and by registration, written rarely.
#[repr(C, align(64))]
pub(crate) struct LinkLine {
    /// Next block of the domain; set before the block is published and never
    /// changed afterwards.
    pub(crate) next: *mut SlotBlock,
    /// Whether a thread owns the block. Set with an Acquire CAS when a thread
    /// takes the block, cleared with a Release store when it gives it back.
    pub(crate) in_use: AtomicBool,
    /// Set (Release) when the owner exited while a guard of its, kept in a
    /// thread-local destroyed later, still held a slot: `in_use` stays set,
    /// and `take_block` claims the block (Acquire CAS back to false) once that
    /// guard has dropped and every slot is empty again.
    pub(crate) orphaned: AtomicBool,
    /// The domain's wildcard word, copied here so that the fast path reaches
    /// it from the block without going through the domain.
    pub(crate) wildcard: *const AtomicUsize,
    /// What the first slot holds when no guard has it: [`EMPTY`], or
    /// [`RESERVED`] for life in a block made in SeqCst fence mode (see the
    /// module docs). Set when the block is made, never changed.
    pub(crate) first_free: usize,
    /// The domain the block belongs to (for promotion to a backup slot).
    pub(crate) shared: *const Shared,
    /// The thread that owns the block (also while it is orphaned).
    pub(crate) owner: Owner,
}

/// One thread's slots in one domain. 128-aligned: the adjacent-line
/// prefetcher of x86 CPUs pairs 64-byte lines, so the hot line pairs with
/// the block's own read-mostly link line, and the owner's line with
/// padding, never with another allocation's memory (a 64-aligned block
/// may start 64 bytes into a pair, wherever the allocator puts it, its
/// slots then paired with whatever lies before it: another thread's block,
/// once blocks change owners).
#[repr(C, align(128))]
pub(crate) struct SlotBlock {
    pub(crate) hot: HotLine,
    pub(crate) link: LinkLine,
    /// Objects this thread retired and has not yet handed to the domain.
    /// Only the owner touches it, except under the domain's retired-list
    /// mutex: when the owner exits, when the domain is dropped, and when
    /// `Domain::reclaim` drains the batch while the owner is not pushing
    /// (see `retire`).
    pub(crate) retired: OwnerLine,
}

// The layout the module docs promise, checked as the crate compiles: a
// block's slots fill one cache line of their own, its link and its owner's
// batch each start another, the slots and the link make one 128-byte pair
// and the batch another, and every backup slot has a pair to itself, so
// that no reader's slot shares a line, or a pair the prefetcher fetches
// together, with another thread's stores. (Loom's atomics are larger and
// its types are no real layout.)
#[cfg(not(loom))]
const _: () = {
    use std::mem::{align_of, offset_of, size_of};
    assert!(size_of::<HotLine>() == 64 && align_of::<SlotBlock>() == 128);
    assert!(size_of::<SlotBlock>() == 256);
    assert!(offset_of!(SlotBlock, hot) == 0);
    assert!(offset_of!(SlotBlock, link) == 64);
    assert!(offset_of!(SlotBlock, retired) % 64 == 0);
    assert!(align_of::<BackupSlot>() == 128);
};

/// The owner's retire batch, on its own line.
#[repr(C, align(64))]
pub(crate) struct OwnerLine {
    pub(crate) batch: UnsafeCell<Vec<Retired>>,
    /// Set by the owner while it pushes onto `batch` outside the
    /// retired-list mutex; a drainer takes the batch only once it is clear
    /// (see `retire`, *Draining other threads' batches*).
    pub(crate) pushing: AtomicBool,
    /// Retires into this block so far, by all its owners in turn (a cheap
    /// clock for the time-based check, which reads the real clock every few
    /// retires). Not reset when a thread exits and the next one takes the
    /// block over: short-lived threads that each retire fewer objects than
    /// the check's period still reach a check together, which hands their
    /// objects to a pass.
    pub(crate) since_check: Cell<u32>,
}

// SAFETY: the `Cell` (`since_check`) is only touched by the owning thread;
// the batch by the owning thread, or under the domain's retired-list mutex
// after the owner has stopped using the domain or while a drainer has
// excluded its pushes (the `pushing`/`draining` handshake; see `retire`);
// everything else is atomic or immutable after publication.
unsafe impl Sync for SlotBlock {}
// SAFETY: as above; a block moves between threads only through the domain's
// list (Release CAS on publication, Acquire CAS on takeover).
unsafe impl Send for SlotBlock {}

impl SlotBlock {
    /// A new block owned by the caller, for the domain `shared` (whose
    /// wildcard word it points at).
    pub(crate) fn new(shared: &Shared) -> Self {
        let first_free = if first_slot_kept_back() {
            RESERVED
        } else {
            EMPTY
        };
        SlotBlock {
            hot: HotLine {
                slots: std::array::from_fn(|i| {
                    AtomicUsize::new(if i == 0 { first_free } else { EMPTY })
                }),
            },
            link: LinkLine {
                next: ptr::null_mut(),
                in_use: AtomicBool::new(true),
                orphaned: AtomicBool::new(false),
                wildcard: shared.wildcard(),
                first_free,
                shared,
                owner: Owner::none(),
            },
            retired: OwnerLine {
                batch: UnsafeCell::new(Vec::new()),
                pushing: AtomicBool::new(false),
                since_check: Cell::new(0),
            },
        }
    }

    /// What slot `index` holds when no guard has it: [`EMPTY`], but
    /// [`RESERVED`] for the first slot of a block made in SeqCst fence mode.
    #[inline]
    pub(crate) fn free_value(&self, index: usize) -> usize {
        if index == 0 {
            self.link.first_free
        } else {
            EMPTY
        }
    }

    /// Whether no guard holds any slot, each load with `order`: Relaxed for
    /// the owner (only it writes its slots), Acquire for a thread about to
    /// take the block over (pairs with the guards' Release stores that
    /// freed the slots).
    pub(crate) fn all_free(&self, order: Ordering) -> bool {
        self.hot
            .slots
            .iter()
            .enumerate()
            .all(|(i, s)| s.load(order) == self.free_value(i))
    }
}

/// A slot on an overflow list, on a 128-byte pair of lines of its own (see
/// [`SlotBlock`]).
#[repr(C, align(128))]
pub(crate) struct BackupSlot {
    pub(crate) value: AtomicUsize,
    /// Whether a guard holds this slot (Acquire CAS to take, Release store to
    /// give back).
    pub(crate) in_use: AtomicBool,
    /// Next backup slot of the same overflow list; set before publication.
    pub(crate) next: *mut BackupSlot,
    /// The domain's wildcard word (as in a block's link line).
    pub(crate) wildcard: *const AtomicUsize,
    /// The domain's id (`Shared::id`, never reused), which keys the holding
    /// thread's record of it.
    pub(crate) domain: u64,
    /// The thread whose guard holds the slot.
    pub(crate) owner: Owner,
}

/// The thread token ([`thread_token`](crate::registration::thread_token)) of the
/// thread that holds a block or backup slot, or 0, and that thread's kernel
/// id ([`thread_os_id`](crate::registration::thread_os_id)), which only the
/// stall warnings read. The token is how
/// `after_fork_child` tells the forking thread's slots from those of threads
/// that did not come along without reading thread-locals, which may be gone:
/// a thread-local destructor may fork while a guard of its thread sits in
/// its orphaned block, or in a backup slot taken after its record of held
/// backup slots was destroyed. Tokens are unique among live threads only; a
/// slot a dead thread never gave back (a forgotten guard) may carry the
/// forking thread's token, and the child then keeps it, as the parent does.
///
/// Relaxed throughout: the holder sets it after the Acquire CAS of `in_use`
/// that takes the slot and clears it before the Release store that gives
/// it back, so the next holder's set comes after the clear; and only the
/// fork child's one thread reads it, which sees its own latest store. No
/// other thread stores this thread's token, so a stale value in the child
/// is never it. The kernel id is Relaxed too, and may be read by any
/// thread: a stall warning prints what it finds, which can be a moment
/// stale. Neither is kept under loom, which has no fork hooks and no stall
/// warnings.
pub(crate) struct Owner {
    #[cfg(not(loom))]
    token: std::sync::atomic::AtomicUsize,
    #[cfg(not(loom))]
    os_id: std::sync::atomic::AtomicI32,
}

impl Owner {
    pub(crate) const fn none() -> Owner {
        Owner {
            #[cfg(not(loom))]
            token: std::sync::atomic::AtomicUsize::new(0),
            #[cfg(not(loom))]
            os_id: std::sync::atomic::AtomicI32::new(0),
        }
    }

    /// Records the calling thread, whose token is `token`, as the holder;
    /// see [`Owner`] for the ordering.
    #[inline]
    pub(crate) fn set(&self, token: usize) {
        #[cfg(not(loom))]
        {
            self.token.store(token, Ordering::Relaxed);
            self.refresh_os_id();
        }
        #[cfg(loom)]
        let _ = token;
    }

    /// Records the calling thread's kernel id again: the holder's, in a
    /// fork child whose thread took its slots over (`after_fork_child`).
    #[cfg(not(loom))]
    #[inline]
    pub(crate) fn refresh_os_id(&self) {
        self.os_id
            .store(crate::registration::thread_os_id(), Ordering::Relaxed);
    }

    /// Forgets the holder, before the slot is given back.
    #[inline]
    pub(crate) fn clear(&self) {
        #[cfg(not(loom))]
        {
            self.token.store(0, Ordering::Relaxed);
            self.os_id.store(0, Ordering::Relaxed);
        }
    }

    /// The holder's kernel id, for a stall warning: 0 if the slot is free
    /// (or under loom). A holder that has exited keeps its id here.
    pub(crate) fn os_id(&self) -> i32 {
        #[cfg(not(loom))]
        return self.os_id.load(Ordering::Relaxed);
        #[cfg(loom)]
        0
    }

    /// Whether the thread with `token` (not 0) holds the slot.
    #[cfg(not(loom))]
    pub(crate) fn is(&self, token: usize) -> bool {
        token != 0 && self.token.load(Ordering::Relaxed) == token
    }
}

impl BackupSlot {
    pub(crate) fn new(wildcard: *const AtomicUsize, domain: u64) -> Self {
        BackupSlot {
            value: AtomicUsize::new(EMPTY),
            in_use: AtomicBool::new(true),
            next: ptr::null_mut(),
            wildcard,
            domain,
            owner: Owner::none(),
        }
    }
}

/// Pushes `node` (exclusively owned, `next` unset) onto the lock-free list at
/// `head`. The Release CAS publishes the node's initialized fields to list
/// walkers, whose Acquire load of `head` pairs with it.
///
/// # Safety
///
/// `node` is valid, exclusively owned, and `set_next` writes its link field.
pub(crate) unsafe fn push_node<N>(head: &AtomicPtr<N>, node: *mut N, set_next: impl Fn(*mut N)) {
    // Relaxed: a first guess at the head; the CAS re-checks it.
    let mut current = head.load(Ordering::Relaxed);
    loop {
        set_next(current);
        match head.compare_exchange_weak(current, node, Ordering::Release, Ordering::Relaxed) {
            Ok(_) => return,
            Err(actual) => current = actual,
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::{
        FIRST_WILDCARD, STALE_WILDCARD_LAG, is_older_wildcard, is_stale_wildcard, is_wildcard,
    };

    /// Generations advance by 2 per flip and the counter may wrap: a
    /// wildcard is older than a scan's exactly when it lies less than half
    /// the counter's range behind it, across the wrap too.
    #[test]
    fn older_wildcards_across_the_counter_wrap() {
        let max = usize::MAX; // the last odd value: a wildcard
        for (current, older) in [
            (FIRST_WILDCARD + 2, FIRST_WILDCARD),
            (FIRST_WILDCARD + 200, FIRST_WILDCARD + 198),
            // The flip from `usize::MAX` wraps to 1.
            (FIRST_WILDCARD, max),
            (FIRST_WILDCARD + 2, max - 2),
        ] {
            assert!(is_wildcard(current) && is_wildcard(older));
            assert!(
                is_older_wildcard(older, current),
                "{older:#x} is older than {current:#x}"
            );
            assert!(
                !is_older_wildcard(current, older),
                "{current:#x} is not older than {older:#x}"
            );
            assert!(!is_older_wildcard(current, current));
        }
    }

    /// A wildcard is stale once the generation has moved a quarter of the
    /// range past it, across the wrap too; a lag of a few scans (or none) is
    /// not. Half the range on, the counter has moved past it far enough
    /// that a scan would read it as newer than its own: what the check is for.
    #[test]
    fn stale_wildcards_across_the_counter_wrap() {
        let scans = |n: usize| n.wrapping_mul(2);
        for stored in [FIRST_WILDCARD, usize::MAX, usize::MAX - 2 * 5] {
            for fresh in [0, 1, 64, STALE_WILDCARD_LAG / 2 - 1] {
                let now = stored.wrapping_add(scans(fresh));
                assert!(!is_stale_wildcard(stored, now), "{stored:#x} at {now:#x}");
            }
            for stale in [STALE_WILDCARD_LAG / 2, usize::MAX / 2 - 7] {
                let now = stored.wrapping_add(scans(stale));
                assert!(is_stale_wildcard(stored, now), "{stored:#x} at {now:#x}");
            }
            // Half the range on (2^30 scans on a 32-bit target): the scan
            // that flips next would skip `stored` as newer than its own.
            let half = stored.wrapping_add(usize::MAX / 2 + 1);
            assert!(is_stale_wildcard(stored, half));
            assert!(!is_older_wildcard(stored, half.wrapping_add(2)));
        }
    }
}
