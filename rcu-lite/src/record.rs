//! Per-thread reader records and the registry a grace period scans.
//!
//! Kernel counterpart: the per-CPU `struct rcu_data` (its `cpu_no_qs` and
//! dyntick state) and the leaf `rcu_node` masks `rcu_gp_init()` fills. Here a
//! thread stands in for a CPU: it gets a [`Record`] the first time it needs one
//! and gives it back for reuse when it exits.
//!
//! # The record word
//!
//! One `u64` per record, written only by the owning thread and read by the
//! grace-period driver:
//!
//! ```text
//!   63                              16   15   14           0
//!  +----------------------------------+------+--------------+
//!  |  snapshot: GP number it last saw | SLOW |   nesting    |
//!  +----------------------------------+------+--------------+
//! ```
//!
//! - `nesting == 0`: the thread is outside every read-side section (memb) or
//!   offline (qsbr). It holds no reference, whatever the snapshot says.
//! - `nesting > 0`: memb: the read-side nesting depth; qsbr: 1, online. The
//!   snapshot is the engine's [`reader_word`] the thread loaded when it entered
//!   its outermost section (memb), last announced a quiescent state, or came
//!   online (qsbr).
//! - [`SLOW_PATH`]: memb only, set for a thread's whole life when its read side
//!   must not take the inline fast path (the fences fell back to
//!   `fence(SeqCst)`, or the record is the "not registered yet" placeholder).
//!   The fast path tests the low 16 bits at once, so this costs it nothing.
//!   Scans ignore it.
//!
//! [`is_quiescent_for`] is the one rule every scan applies: a record does not
//! hold up grace period `gp` if it is outside (`nesting == 0`) or its snapshot
//! is `gp`. The second half is safe because a thread that loaded the
//! engine's word for `gp` with Acquire ordering sees every update published
//! before that grace period began (see `engine/grace_period.rs`). Snapshots are 48 bits
//! (about five years of back-to-back 0.6 us grace periods), and compared
//! modulo 2^48, so their wrap changes nothing.
//!
//! # The registry
//!
//! A push-only linked list of records, each on its own cache lines. Records are
//! never freed while the engine lives (the engines are statics); a thread that
//! exits marks its record free (`in_use = false`) and the next thread to
//! register takes it over. A scan may read a record while it changes owner: the
//! word is then either the old owner's final `nesting == 0` or the new owner's
//! own state, and both are judged correctly by the same rule.
//!
//! # The roster
//!
//! The driver's scans read a [`Roster`], the records in use gathered into an
//! array, rebuilt only when the registry's `changes` count (bumped after
//! every claim and release) has moved since it was built. So a scan skips
//! the records of threads that have exited (a burst of 2,000 short-lived
//! readers left every later grace period walking 2,000 free records, 18-26
//! us, for the rest of the process), and its loads of the record words do not
//! wait for one another, as the list walk's `next` loads did. A thread that
//! claims a record after the driver loaded `changes` is missing from that
//! grace period's roster, as a record pushed after a list walk's load of
//! `head` was missing from the walk: its first section (or quiescent state)
//! stores its word and then fences, after the claim, so either the driver's
//! load, after init's fence, sees the claim, or that section sees every
//! update published before the grace period (the store-buffering pair of
//! `engine/grace_period.rs`).

use crate::sync::{AtomicBool, AtomicPtr, AtomicU32, AtomicU64};
use std::ptr;
use std::sync::atomic::Ordering::{Acquire, Relaxed, Release};

/// Bits of the record word below the snapshot: nesting and [`SLOW_PATH`].
pub(crate) const NEST_BITS: u32 = 16;
/// The low 16 bits: the memb fast path tests them all at once.
pub(crate) const LOW_BITS: u64 = (1 << NEST_BITS) - 1;
/// Set for a memb thread whose read side takes the out-of-line path.
pub(crate) const SLOW_PATH: u64 = 1 << (NEST_BITS - 1);
/// Mask of the nesting depth in a record word.
pub(crate) const NEST_MASK: u64 = SLOW_PATH - 1;
/// One level of nesting (or "online" for qsbr).
pub(crate) const NEST_ONE: u64 = 1;

/// The word a thread stores when it enters its outermost section (memb), or
/// announces a quiescent state (qsbr), while grace period `gp` is the newest
/// started: the snapshot `gp` with a nesting of one.
#[inline]
pub(crate) const fn reader_word(gp: u64) -> u64 {
    (gp << NEST_BITS) | NEST_ONE
}

/// The nesting depth in a record word.
#[inline]
pub(crate) const fn nesting(word: u64) -> u64 {
    word & NEST_MASK
}

/// The grace-period snapshot in a record word (or in the engine's `gp_word`):
/// the grace period's number modulo 2^48.
#[inline]
pub(crate) const fn snapshot(word: u64) -> u64 {
    word >> NEST_BITS
}

/// The bits of a grace-period number that a snapshot keeps.
pub(crate) const SNAPSHOT_MASK: u64 = u64::MAX >> NEST_BITS;

/// Whether a record whose word is `word` does not hold up grace period `gp`,
/// the newest started.
///
/// No reader can have seen a grace period newer than `gp`, so a snapshot
/// that is not `gp` is older, and the record holds `gp` up. A section's
/// snapshot is usually `gp - 1` or `gp - 2` (its load raced an init), but
/// can be any number of grace periods old: a reader stopped between its
/// load of the grace-period word and its store of the snapshot reads as
/// outside every section meanwhile, and grace periods complete without it.
/// Testing equality keeps such a reader held up however old its snapshot
/// is, unless a whole multiple of 2^48 grace periods passed in that window
/// (years of back-to-back grace periods: see the design note's *Limits*).
#[inline]
pub(crate) const fn is_quiescent_for(word: u64, gp: u64) -> bool {
    nesting(word) == 0 || snapshot(word) == gp & SNAPSHOT_MASK
}

/// One thread's reader state, alone on its cache lines (128 bytes: the
/// adjacent-line prefetcher pairs lines on x86).
#[repr(align(128))]
pub(crate) struct Record {
    /// The record word (see the module docs). Written by the owner only.
    pub(crate) word: AtomicU64,
    /// Whether a driver about to sleep for holdouts counts on this record
    /// to wake it (1) or not (0): set by the driver on each holdout before
    /// it sleeps, cleared by the owner when it wakes the driver (leaving its
    /// section, announcing a quiescent state, going offline), or by the
    /// driver once the record has passed a quiescent state. Only flagged
    /// readers wake the driver (`Engine::wake_driver_if_flagged`), as the
    /// kernel's `rcu_read_unlock_special()` runs only for a task it
    /// flagged: the other readers leave their sections without a system
    /// call.
    pub(crate) wake_driver: AtomicU32,
    /// Whether a thread owns this record.
    in_use: AtomicBool,
    /// The next record of the registry; set before the record is published and
    /// never changed afterwards.
    next: AtomicPtr<Record>,
    /// The thread that holds the record ([`thread_id`]; 0 while it is free):
    /// after `fork()`, the child keeps the records of the thread that forked
    /// and frees the others (`fork.rs`).
    #[cfg(not(loom))]
    owner: std::sync::atomic::AtomicU64,
    /// The kernel's id of that thread (`gettid()`), for stall warnings
    /// (`engine/stall.rs`): what `ps -L`, `/proc` and debuggers show.
    #[cfg(not(loom))]
    os_tid: std::sync::atomic::AtomicI32,
}

impl Record {
    fn new() -> Record {
        Record {
            word: AtomicU64::new(0),
            wake_driver: AtomicU32::new(0),
            in_use: AtomicBool::new(true),
            next: AtomicPtr::new(ptr::null_mut()),
            #[cfg(not(loom))]
            owner: std::sync::atomic::AtomicU64::new(thread_id()),
            #[cfg(not(loom))]
            os_tid: std::sync::atomic::AtomicI32::new(os_tid()),
        }
    }

    /// The kernel's id of the thread that took this record last.
    #[cfg(not(loom))]
    pub(crate) fn os_tid(&self) -> i32 {
        // Relaxed: a name for a message; the owner stored it before it
        // could make any grace period wait.
        self.os_tid.load(Relaxed)
    }

    /// A record that is never registered, whose word is [`SLOW_PATH`]: what
    /// a thread's memb fast path reads before the thread has registered.
    #[cfg(not(loom))]
    pub(crate) const fn placeholder() -> Record {
        Record {
            word: AtomicU64::new(SLOW_PATH),
            wake_driver: AtomicU32::new(0),
            in_use: AtomicBool::new(true),
            next: AtomicPtr::new(ptr::null_mut()),
            owner: std::sync::atomic::AtomicU64::new(0),
            os_tid: std::sync::atomic::AtomicI32::new(0),
        }
    }
}

/// The list of every record an engine has handed out.
pub(crate) struct Registry {
    head: AtomicPtr<Record>,
    /// Claims and releases of records so far (see *The roster*).
    changes: AtomicU64,
}

/// The records in use when [`Registry::refresh`] last rebuilt it. Only the
/// grace-period driver reads it (under `Engine::roster`).
pub(crate) struct Roster {
    /// The registry's `changes` count when `records` was gathered;
    /// `u64::MAX`, which the count never reaches, before the first time.
    changes: u64,
    records: Vec<&'static Record>,
}

impl Roster {
    /// A roster that the first [`Registry::refresh`] rebuilds.
    pub(crate) const fn new() -> Roster {
        Roster {
            changes: u64::MAX,
            records: Vec::new(),
        }
    }
}

impl Registry {
    crate::const_unless_loom! {
        /// An empty registry.
        pub(crate) fn new() -> Registry {
            Registry {
                head: AtomicPtr::new(ptr::null_mut()),
                changes: AtomicU64::new(0),
            }
        }
    }

    /// Hands the calling thread a record: a free one if there is one, else a new
    /// one pushed on the list. Its word has `nesting == 0`.
    #[cold]
    pub(crate) fn acquire(&self) -> &'static Record {
        for record in self.iter() {
            // Acquire pairs with the Release store in `release`: the previous
            // owner's last word store is visible before we write ours.
            if !record.in_use.load(Relaxed)
                && record
                    .in_use
                    .compare_exchange(false, true, Acquire, Relaxed)
                    .is_ok()
            {
                // Relaxed: the previous owner's last store, ordered before
                // this load by the Acquire CAS above.
                debug_assert_eq!(nesting(record.word.load(Relaxed)), 0);
                // Relaxed: read only by this thread, or by its fork child.
                #[cfg(not(loom))]
                {
                    record.owner.store(thread_id(), Relaxed);
                    // Relaxed: see `os_tid()`.
                    record.os_tid.store(os_tid(), Relaxed);
                }
                self.note_change();
                return record;
            }
        }
        let record: &'static Record = Box::leak(Box::new(Record::new()));
        let new = ptr::from_ref(record).cast_mut();
        // Relaxed, both: the Release CAS below publishes `next` and rechecks
        // `head`; the record is unreachable until it succeeds.
        let mut head = self.head.load(Relaxed);
        loop {
            record.next.store(head, Relaxed);
            // Release pairs with the Acquire load of `head` in `iter`: a scan
            // that finds the record sees its initialized fields.
            match self.head.compare_exchange_weak(head, new, Release, Relaxed) {
                Ok(_) => {
                    self.note_change();
                    return record;
                }
                Err(current) => head = current,
            }
        }
    }

    /// Gives `record` back for reuse. Its owner must have left it outside every
    /// section (`nesting == 0`) and must not touch it again.
    pub(crate) fn release(&self, record: &'static Record) {
        // Relaxed: the owner (the caller) reads its own word.
        debug_assert_eq!(nesting(record.word.load(Relaxed)), 0);
        // No owner (0 is no thread's id) until `acquire` stores the next one:
        // a fork child then frees a record that a vanished thread had claimed
        // but not yet marked its own, instead of crediting it to whichever
        // thread owned it last. Relaxed: read only by an owner or a fork child.
        #[cfg(not(loom))]
        record.owner.store(0, Relaxed);
        // Release pairs with the Acquire CAS in `acquire`.
        record.in_use.store(false, Release);
        self.note_change();
    }

    /// Counts a claim or release, after its `in_use` store (and a new
    /// record's push). Release pairs with the Acquire load in `refresh`: a
    /// driver that reads this count, or a later one, finds the record on the
    /// list with that `in_use` (later RMWs of the count continue the release
    /// sequence).
    fn note_change(&self) {
        self.changes.fetch_add(1, Release);
    }

    /// The records in use, from `roster` if no record has been claimed or
    /// released since it was built, else from a walk of the list that
    /// rebuilds it. Call after the grace period's init and fence: see *The
    /// roster* for why a claim this misses is one the grace period need not
    /// wait for. A record released after the load stays in the roster until
    /// the next rebuild, and reads as outside every section (or as its next
    /// owner's state), as on the list.
    ///
    /// The count is read with an RMW, which reads the newest value, where a
    /// load could read any count not yet overwritten for this thread: one
    /// more choice for loom at every grace period, which took four models
    /// from 13-47 s to past two minutes, one of them to 21 GB of memory
    /// (with the RMW, about twice their old times). A grace period pays
    /// for it with one locked instruction on a line written only by
    /// threads that register or exit.
    pub(crate) fn refresh<'r>(&self, roster: &'r mut Roster) -> &'r [&'static Record] {
        // Acquire pairs with the Release RMW in `note_change`. An RMW
        // rather than a load, so that it reads the newest count (see
        // below).
        let changes = self.changes.fetch_add(0, Acquire);
        if changes != roster.changes {
            roster.records.clear();
            // Every claim counted in `changes` stored `true` before its
            // count (see `note_change`). Acquire pairs with the Release
            // store in `release`: a record left out as free had an owner
            // whose sections all happen before this load, and so before
            // whatever the grace period lets its caller free (a scan of the
            // record would have given that through its Acquire load of the
            // owner's last word; with Relaxed here, loom's
            // `a_memb_readers_second_section_does_not_cover_its_first` finds
            // the free racing the exited reader's read).
            roster
                .records
                .extend(self.iter().filter(|record| record.in_use.load(Acquire)));
            roster.changes = changes;
        }
        &roster.records
    }

    /// In a child of `fork()`: gives back every record held by a thread other
    /// than the caller, which are all gone, marking each outside every
    /// section (memb) or offline (qsbr) first. Clears every record's
    /// wake-up flag, the caller's too: the driver that set one vanished
    /// before its recheck cleared it, and a flag left would only cost the
    /// record's next owner a needless wake-up call. The child's only thread
    /// is the caller, so nothing races with these stores.
    #[cfg(not(loom))]
    pub(crate) fn release_vanished_owners(&self) {
        let me = thread_id();
        for record in self.iter() {
            // Relaxed: single-threaded here (see above).
            record.wake_driver.store(0, Relaxed);
            // Relaxed: single-threaded here (see above).
            if record.in_use.load(Relaxed) && record.owner.load(Relaxed) != me {
                record.word.store(0, Relaxed);
                // Release, as in `release`: pairs with the Acquire CAS in
                // `acquire` of the record's next owner.
                record.in_use.store(false, Release);
                self.note_change();
            } else if record.owner.load(Relaxed) == me {
                // The child's thread has an id of its own. Relaxed: as above.
                record.os_tid.store(os_tid(), Relaxed);
            }
        }
    }

    /// Whether a thread other than the caller, the owner of `own`, holds a
    /// record: the kernel's "a CPU other than the grace-period kthread's is
    /// online". The caller's other records (a qsbr registration it took
    /// offline to wait) are its own CPU too. Relaxed, all: a hint for pacing
    /// only (`Engine::grace_period`); a thread that takes a record after
    /// these loads begins its sections after the grace period's init, which
    /// scan 1 credits.
    pub(crate) fn others_hold_records(&self, own: &Record) -> bool {
        #[cfg(not(loom))]
        let me = thread_id();
        self.iter().any(|record| {
            if ptr::eq(record, own) || !record.in_use.load(Relaxed) {
                return false;
            }
            // Under loom no record knows its owner: every other one counts.
            #[cfg(not(loom))]
            if record.owner.load(Relaxed) == me {
                return false;
            }
            true
        })
    }

    /// Every record ever handed out, newest first.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &'static Record> {
        // Acquire pairs with the Release CAS in `acquire`.
        let mut next = self.head.load(Acquire);
        std::iter::from_fn(move || {
            // SAFETY: every pointer on the list came from `Box::leak` in
            // `acquire` and records are never freed, so it is valid for
            // 'static; `next` fields were written before publication.
            let record: &'static Record = unsafe { next.as_ref() }?;
            // Relaxed: each `next` was stored before the Release CAS that
            // published its record, which the Acquire load of `head` above
            // read or preceded (the CASes on `head` are one release sequence).
            next = record.next.load(Relaxed);
            Some(record)
        })
    }
}

/// The kernel's id of the calling thread (`gettid()`).
#[cfg(not(loom))]
pub(crate) fn os_tid() -> i32 {
    // SAFETY: gettid() takes nothing and cannot fail.
    unsafe { libc::gettid() }
}

/// A number unique to the calling thread for the life of the process (0 is
/// never one), kept across `fork()` by the thread that forks.
#[cfg(not(loom))]
pub(crate) fn thread_id() -> u64 {
    use std::cell::Cell;
    use std::sync::atomic::AtomicU64 as Counter;
    static NEXT: Counter = Counter::new(1);
    std::thread_local! {
        static ID: Cell<u64> = const { Cell::new(0) };
    }
    ID.with(|id| {
        if id.get() == 0 {
            // Relaxed: only uniqueness matters.
            id.set(NEXT.fetch_add(1, Relaxed));
        }
        id.get()
    })
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    /// Across the 48-bit wrap of the snapshots, a section that began in the
    /// grace period is credited and one that began before it is not.
    #[test]
    fn snapshots_compare_across_their_wrap() {
        for gp in [
            5,
            SNAPSHOT_MASK,
            SNAPSHOT_MASK + 1,
            SNAPSHOT_MASK + 2,
            3 << 48,
        ] {
            assert!(
                is_quiescent_for(reader_word(gp), gp),
                "gp {gp}: began in it"
            );
            for older in [gp - 1, gp - 2] {
                assert!(
                    !is_quiescent_for(reader_word(older), gp),
                    "gp {gp}: a section from {older} was credited"
                );
            }
            assert!(
                is_quiescent_for(reader_word(gp - 1) & !NEST_MASK, gp),
                "outside"
            );
        }
    }

    /// A fork child frees a record that a vanished thread had claimed (its
    /// CAS done) but not yet marked as its own, even when the forking thread
    /// held that record before.
    #[test]
    fn a_claim_cut_short_by_fork_is_not_credited_to_the_last_owner() {
        let registry: &'static Registry = Box::leak(Box::new(Registry::new()));
        let record = registry.acquire();
        registry.release(record);
        // A vanished thread's `acquire`, stopped between its CAS and its
        // owner store.
        assert!(
            record
                .in_use
                .compare_exchange(false, true, Acquire, Relaxed)
                .is_ok()
        );
        registry.release_vanished_owners();
        assert!(
            !record.in_use.load(Relaxed),
            "the half-claimed record stayed in use"
        );
        // The caller's own records stay.
        let mine = registry.acquire();
        registry.release_vanished_owners();
        assert!(mine.in_use.load(Relaxed), "the caller's record was freed");
    }

    /// The roster holds exactly the records in use: rebuilt after each claim
    /// and release, and kept (the same array, not gathered again) while
    /// none happens. A burst of threads that exited leaves no record in it.
    #[test]
    fn the_roster_follows_claims_and_releases() {
        let registry: &'static Registry = Box::leak(Box::new(Registry::new()));
        let mut roster = Roster::new();
        let addresses = |records: &[&'static Record]| {
            let mut addresses: Vec<usize> = records
                .iter()
                .map(|&record| ptr::from_ref(record).addr())
                .collect();
            addresses.sort_unstable();
            addresses
        };
        assert!(registry.refresh(&mut roster).is_empty());

        let burst: Vec<_> = (0..100).map(|_| registry.acquire()).collect();
        assert_eq!(addresses(registry.refresh(&mut roster)), addresses(&burst));
        let kept = registry.refresh(&mut roster).as_ptr();
        assert_eq!(
            registry.refresh(&mut roster).as_ptr(),
            kept,
            "no claim or release: the roster is reused as it is"
        );

        let (stay, exit) = burst.split_at(2);
        for &record in exit {
            registry.release(record);
        }
        assert_eq!(
            addresses(registry.refresh(&mut roster)),
            addresses(stay),
            "released records left the roster"
        );
        let again = registry.acquire();
        assert!(
            exit.iter().any(|&record| ptr::eq(record, again)),
            "a free record is reused"
        );
        let mut expected = stay.to_vec();
        expected.push(again);
        assert_eq!(
            addresses(registry.refresh(&mut roster)),
            addresses(&expected)
        );
        assert_eq!(
            registry.iter().count(),
            100,
            "no record was pushed for the claim"
        );
    }
}
