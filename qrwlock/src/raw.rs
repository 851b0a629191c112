//! `RawQRwLock`: the lock word, the fast paths and the slow paths.
//!
//! Mirrors `include/asm-generic/qrwlock.h` (fast paths) and
//! `kernel/locking/qrwlock.c` (`queued_read_lock_slowpath()`,
//! `queued_write_lock_slowpath()`) after Will Deacon's series, including
//! "Prevent slowpath writers getting held up by fastpath".
//!
//! # The lock word (`cnts`)
//!
//! ```text
//!  31                    10   9         8        7          0
//! +------------------------+---------+---------+------------+
//! |     reader count       | SLEEPER | WAITING |   LOCKED   |
//! +------------------------+---------+---------+------------+
//! ```
//!
//! See the constants for each field's invariant. Every change of the word is a
//! read-modify-write, so each writer of the word learns from the returned value
//! whether the queue head sleeps, and wakes it only then.
//!
//! # Protocol
//!
//! - Reader fast path: add [`READER_BIAS`]; if no writer bit was set, done.
//!   Otherwise (slow path) take the bias back, join the wait queue, add it
//!   again at the front, wait until [`WRITER_LOCKED`] clears, then count in
//!   and admit every reader queued directly behind, and hand the queue to the
//!   first writer after them. (The kernel hands the queue from reader to
//!   reader, each adding its own bias; see `wait_queue` for why not here.)
//! - Recursive reader (the kernel's interrupt-context reader): the same add,
//!   but only [`WRITER_LOCKED`] sends it to the slow path, so it enters past
//!   a waiting writer. A writer inside means the thread holds no read lock
//!   here, so it then queues as above.
//! - Writer fast path: CAS 0 -> [`WRITER_LOCKED`]. Slow path: join the queue;
//!   at the front, set [`WRITER_WAITING`], so that new fast-path readers fail
//!   and queue behind this writer; wait for the word to be exactly
//!   [`WRITER_WAITING`] (no readers, no writer) with a relaxed wait, and take
//!   it with an acquire CAS to [`WRITER_LOCKED`]; hand the queue on.
//! - Write unlock: a release RMW clearing [`WRITER_LOCKED`]. The kernel stores
//!   zero to the locked byte; Rust has no mixed-size atomics (a byte store
//!   racing with 32-bit RMWs on the same word is undefined), so here it is a
//!   `fetch_sub` of the byte's value, which also returns the sleeper bit.
//! - The front of the queue is the only thread that waits on the word, with
//!   [`crate::cond_load_acquire`]'s protocol; [`HEAD_SLEEPING`] is its sleeper
//!   bit.

use crate::sync::{AtomicU32, Ordering};
use crate::wait;
use crate::wait_queue::{Entry, QNode, WaitQueue};

/// The writer-locked byte (`_QW_LOCKED`). Invariant: either all its bits are
/// set (one writer holds the lock and no reader does) or none is. A whole
/// byte, as in the kernel, which on some architectures clears it with a byte
/// store.
pub const WRITER_LOCKED: u32 = 0xff;

/// The writer-waiting bit (`_QW_WAITING`). Invariant: set only by the writer
/// at the front of the wait queue, and cleared only by that writer's CAS to
/// [`WRITER_LOCKED`]; while set, reader fast paths fail, so new readers queue
/// behind that writer (recursive readers excepted: they wait only for
/// [`WRITER_LOCKED`]).
pub const WRITER_WAITING: u32 = 0x100;

/// Both writer fields (`_QW_WMASK`): a reader may enter on the fast path only
/// when none of these bits is set (a recursive reader: when the writer byte
/// is clear).
pub const WRITER_MASK: u32 = WRITER_LOCKED | WRITER_WAITING;

/// The queue head's sleeper bit. Invariant: set only by the thread at the
/// front of the wait queue (the only thread that waits on the word), with a
/// CAS from a value that does not satisfy its wait, just before it sleeps on
/// the futex (or, transiently, by a misuse's borrow or carry: see the crate's
/// *Misuse*); cleared by the first RMW-er that sees it and leaves a word on
/// which the head may go on (`wake_head`, which then wakes it: a read unlock
/// that leaves other readers inside while a writer waits leaves the bit set),
/// by a misuse repair that sees it (which wakes it too), or by the head
/// itself: a writer's acquiring CAS, a reader's `fetch_and` once inside.
/// Waits and wake-ups ignore it; the free-lock tests (a writer's CAS from 0)
/// do not, so a leftover bit can fail a `try_write` (see docs/qrwlock.md).
pub const HEAD_SLEEPING: u32 = 0x200;

/// Where the reader count starts (`_QR_SHIFT`).
pub const READER_SHIFT: u32 = 10;

/// One reader (`_QR_BIAS`). Invariant: the count is the number of readers
/// holding the lock (a reader admitted from the queue is counted in by the
/// front just before its grant), plus the reader at the front of the queue
/// that has counted itself in and waits for the writer byte to clear, plus
/// those transiently counted between a fast-path or `try_read_lock` add and
/// its undo.
pub const READER_BIAS: u32 = 1 << READER_SHIFT;

/// The reader count field.
pub const READER_MASK: u32 = !(READER_BIAS - 1);

/// The count's top bit: a reader that finds it set panics instead of
/// entering, long before the count could wrap to zero and let a writer in
/// (about 2 million readers at once: only leaked guards get there).
pub const READER_OVERFLOW: u32 = 1 << 31;

/// Spin budgets before sleeping, in nanoseconds (see `wait::budget`).
mod spin_ns {
    /// The queue head on the lock word: it is next, so it spins longer.
    pub(super) const HEAD: u32 = 40_000;
}

/// A raw fair queued reader-writer lock: the kernel's qrwlock.
///
/// Use it through [`crate::RwLock`] (`lock_api`), or directly as below. The
/// raw methods hold no data; the caller pairs every lock with one unlock.
///
/// ```
/// use qrwlock::RawQRwLock;
///
/// let lock = RawQRwLock::new();
/// lock.read_lock();
/// assert!(lock.try_read_lock(), "readers share");
/// assert!(!lock.try_write_lock(), "readers exclude writers");
/// // SAFETY: the two shared holds taken above, each released once.
/// unsafe {
///     lock.read_unlock();
///     lock.read_unlock();
/// }
/// lock.write_lock();
/// assert!(lock.is_locked_exclusive());
/// // SAFETY: write-locked just above; afterwards the hold is shared.
/// unsafe { lock.downgrade() };
/// assert!(lock.is_locked() && !lock.is_locked_exclusive());
/// // SAFETY: the shared hold `downgrade` turned the write lock into.
/// unsafe { lock.read_unlock() };
/// assert!(!lock.is_locked());
/// ```
///
/// # Fairness
///
/// See the crate documentation's *Fairness* section: a writer that reaches the
/// front of the FIFO queue is blocked only by the holders already inside
/// (readers, or a writer that took the lock on its fast path), and
/// queued threads are served in arrival order; the fast paths let a thread
/// that finds the lock free (readers: free of writers) enter without queueing.
pub struct RawQRwLock {
    /// The lock word (see the module docs).
    cnts: AtomicU32,
    /// The FIFO queue of slow-path lockers (`lock->wait_lock`).
    wait_queue: WaitQueue,
}

impl Default for RawQRwLock {
    fn default() -> Self {
        RawQRwLock::new()
    }
}

/// Shows the lock word: `reader_count` is the word's reader count, the
/// readers inside and those that have counted themselves in and wait (the
/// queue's front reader, waiting for a writer to leave, and fast-path
/// readers that met a writer bit and are taking their count back), so it
/// may be above 0 while `writer_locked` is true. Until 2026-12-07 the
/// field was called `readers`, which read as readers holding the lock.
impl core::fmt::Debug for RawQRwLock {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        // Relaxed: a snapshot to print; nothing is read on its strength.
        let cnts = self.cnts.load(Ordering::Relaxed);
        f.debug_struct("RawQRwLock")
            .field("reader_count", &(cnts >> READER_SHIFT))
            .field("writer_locked", &(cnts & WRITER_LOCKED != 0))
            .field("writer_waiting", &(cnts & WRITER_WAITING != 0))
            .finish_non_exhaustive()
    }
}

impl RawQRwLock {
    /// An unlocked lock.
    #[cfg(not(loom))]
    pub const fn new() -> Self {
        RawQRwLock {
            cnts: AtomicU32::new(0),
            wait_queue: WaitQueue::new(),
        }
    }

    /// An unlocked lock.
    #[cfg(loom)]
    pub fn new() -> Self {
        RawQRwLock {
            cnts: AtomicU32::new(0),
            wait_queue: WaitQueue::new(),
        }
    }

    /// Acquires the lock shared, waiting as long as a writer holds it or waits
    /// at the front of the queue: `queued_read_lock()`.
    ///
    /// # Panics
    ///
    /// If about 2 million read locks are held at once (leaked guards). And
    /// on another thread's misuse: a stray `read_unlock` that took this
    /// reader's count as it backed off from a writer, or whose wrapped count
    /// it met (see [`RawQRwLock::read_unlock`]).
    #[inline]
    pub fn read_lock(&self) {
        self.read_lock_unless(WRITER_MASK);
    }

    /// Acquires the lock shared if no writer holds it or waits for it:
    /// `queued_read_trylock()`. Never waits.
    ///
    /// # Panics
    ///
    /// As [`RawQRwLock::read_lock`].
    #[inline]
    #[must_use = "if it returns true the lock is held, and must be unlocked"]
    pub fn try_read_lock(&self) -> bool {
        self.try_read_lock_unless(WRITER_MASK)
    }

    /// Acquires the lock shared, entering at once unless a writer holds it:
    /// a writer waiting at the front of the queue does not stop it. If a
    /// writer holds it, this queues as [`RawQRwLock::read_lock`] does, in
    /// FIFO order, so it then also waits for the writers queued ahead of it
    /// (until 2026-12-07 this said it waited only while a writer held the
    /// lock; see docs/qrwlock.md on the kernel's reader, which waits
    /// outside the queue). The kernel's reader in interrupt context (`queued_read_lock_slowpath()`
    /// under `in_interrupt()`), which is what makes its recursive read locks
    /// work; `parking_lot` 0.12's `read_recursive`.
    ///
    /// A thread that already holds the lock shared may take it again this way
    /// while a writer waits for that first hold: the writer cannot be inside
    /// (it enters only with no reader counted), so this returns at once,
    /// where [`RawQRwLock::read_lock`] would queue behind the writer for good.
    /// It finds a writer inside only when the calling thread holds no read
    /// lock here; then it queues like `read_lock`, in FIFO order. If that
    /// writer is the calling thread itself (it holds the write lock), this
    /// never returns, as `read_lock` and `write_lock` would not: no lock of
    /// this crate is reentrant for a writer.
    ///
    /// Recursive readers do not yield to a waiting writer: while they keep
    /// overlapping, the writer waits. Take the outermost hold with `read_lock`
    /// and only the nested ones with this.
    ///
    /// # Panics
    ///
    /// As [`RawQRwLock::read_lock`].
    #[inline]
    pub fn read_lock_recursive(&self) {
        // Only a writer inside sends us to the queue, and then this thread
        // holds no read lock here (a writer takes the byte only from a word
        // with no reader, and a hold is counted until its unlock): queueing
        // cannot deadlock.
        self.read_lock_unless(WRITER_LOCKED);
    }

    /// The readers' fast path: enters unless one of `writer_bits` is set in
    /// the word its add returns, and otherwise queues.
    #[inline]
    fn read_lock_unless(&self, writer_bits: u32) {
        // Acquire: pairs with the Release unlock or `downgrade` of the last
        // writer, through the RMWs on the word after it, which continue its
        // release sequence (for a recursive reader, a later writer's WAITING
        // `fetch_or` among them), when no bit of `writer_bits` is set and we
        // are in.
        let cnts = self.cnts.fetch_add(READER_BIAS, Ordering::Acquire);
        if cnts & (writer_bits | READER_OVERFLOW) != 0 {
            self.read_lock_slow(cnts);
        }
    }

    /// Acquires the lock shared if no writer holds it, even if one waits at
    /// the front of the queue: the try form of
    /// [`RawQRwLock::read_lock_recursive`]. Never waits.
    ///
    /// # Panics
    ///
    /// As [`RawQRwLock::read_lock`].
    #[inline]
    #[must_use = "if it returns true the lock is held, and must be unlocked"]
    pub fn try_read_lock_recursive(&self) -> bool {
        self.try_read_lock_unless(WRITER_LOCKED)
    }

    /// The try-readers: enters unless one of `writer_bits` is set in the word
    /// its add returns.
    #[inline]
    fn try_read_lock_unless(&self, writer_bits: u32) -> bool {
        let cnts = self.cnts.load(Ordering::Relaxed);
        if cnts & (writer_bits | READER_OVERFLOW) != 0 {
            if cnts & READER_OVERFLOW != 0 {
                reader_overflow();
            }
            return false;
        }
        // Acquire: as in `read_lock_unless`. The Relaxed look above may miss a bit
        // set just before; the add reads the latest word, so its value decides.
        let cnts = self.cnts.fetch_add(READER_BIAS, Ordering::Acquire);
        if cnts & (writer_bits | READER_OVERFLOW) == 0 {
            return true;
        }
        self.undo_reader_bias(cnts);
        if cnts & READER_OVERFLOW != 0 {
            reader_overflow();
        }
        false
    }

    /// Releases a shared hold: `queued_read_unlock()`.
    ///
    /// # Safety
    ///
    /// The caller holds the lock shared (a [`RawQRwLock::read_lock`],
    /// [`RawQRwLock::read_lock_recursive`], successful
    /// [`RawQRwLock::try_read_lock`] or
    /// [`RawQRwLock::try_read_lock_recursive`], or [`RawQRwLock::downgrade`]
    /// not yet released), and gives that hold up. The lock stays alive until this call returns, even once
    /// another thread has taken it (this call may still write the word after
    /// the release, to wake a sleeper).
    ///
    /// # Panics
    ///
    /// If the lock has no reader at all, or is write-locked (an unlock without
    /// a lock; a reader waiting at the front of the queue is counted but does
    /// not hold it), after restoring the count. Where the count has other
    /// readers in it, such a misuse cannot be told apart from a correct
    /// unlock: readers inside, a reader waiting at the front (which then
    /// enters uncounted), or a reader's momentary add as it backs off (that
    /// reader panics instead).
    #[inline]
    pub unsafe fn read_unlock(&self) {
        // Release: pairs with the Acquire CAS of the writer that takes the
        // lock once the count is zero, ordering our reads before its writes.
        let cnts = self.cnts.fetch_sub(READER_BIAS, Ordering::Release);
        // One test for the rare cases: the queue head sleeps, the count was
        // zero (the subtraction wrapped into the overflow bit; the slow path
        // tells this misuse apart from a count really that high), or a writer
        // holds the lock, which no correct read unlock can see (a writer sets
        // the byte only from a word with no reader; a count there is a reader
        // at the front of the queue, waiting, not holding).
        if cnts.wrapping_sub(READER_BIAS) & (HEAD_SLEEPING | READER_OVERFLOW | WRITER_LOCKED) != 0 {
            self.read_unlock_slow(cnts);
        }
    }

    /// Acquires the lock exclusively, waiting for the readers inside and every
    /// thread queued earlier: `queued_write_lock()`.
    #[inline]
    pub fn write_lock(&self) {
        // Acquire: pairs with the Release unlocks of the previous holders.
        if self
            .cnts
            .compare_exchange(0, WRITER_LOCKED, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            self.write_lock_slow();
        }
    }

    /// Acquires the lock exclusively if nobody holds it or waits for it:
    /// `queued_write_trylock()`. Never waits.
    #[inline]
    #[must_use = "if it returns true the lock is held, and must be unlocked"]
    pub fn try_write_lock(&self) -> bool {
        // Relaxed: only a filter that spares a held lock's line the CAS; the
        // CAS below is what acquires.
        self.cnts.load(Ordering::Relaxed) == 0
            && self
                .cnts
                // Acquire: as in `write_lock`.
                .compare_exchange(0, WRITER_LOCKED, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
    }

    /// Releases an exclusive hold: `queued_write_unlock()`.
    ///
    /// # Safety
    ///
    /// The caller holds the lock exclusively (a [`RawQRwLock::write_lock`] or
    /// successful [`RawQRwLock::try_write_lock`] not yet released), and gives
    /// that hold up. The lock stays alive until this call returns, as for
    /// [`RawQRwLock::read_unlock`].
    ///
    /// # Panics
    ///
    /// If the lock is not write-locked (an unlock without a lock), after
    /// restoring the word.
    #[inline]
    pub unsafe fn write_unlock(&self) {
        // Release: pairs with the Acquire of the next reader (the fast-path
        // add, or the queue head's `fence(Acquire)` after the load that
        // `cond_load_then_acquire` waited for) or writer (its Acquire CAS,
        // in `write_lock` or, at the queue head, in `write_lock_slow`; the
        // head's wait before it is Relaxed).
        let cnts = self.cnts.fetch_sub(WRITER_LOCKED, Ordering::Release);
        if cnts & (WRITER_LOCKED | HEAD_SLEEPING) != WRITER_LOCKED {
            self.write_unlock_slow(cnts);
        }
    }

    /// Turns an exclusive hold into a shared one in one step: no writer can
    /// enter in between. Readers waiting at the front of the queue may enter
    /// together with the caller.
    ///
    /// # Safety
    ///
    /// As [`RawQRwLock::write_unlock`]; afterwards the caller holds the lock
    /// shared and must release it with [`RawQRwLock::read_unlock`].
    ///
    /// # Panics
    ///
    /// As [`RawQRwLock::write_unlock`].
    #[inline]
    pub unsafe fn downgrade(&self) {
        // One RMW: the byte goes 0xff -> 0 and the count goes up by one (the
        // carry out of the byte plus the rest of the bias). Release: as in
        // `write_unlock`, for the readers that now enter.
        let cnts = self
            .cnts
            .fetch_add(READER_BIAS.wrapping_sub(WRITER_LOCKED), Ordering::Release);
        if cnts & (WRITER_LOCKED | HEAD_SLEEPING) != WRITER_LOCKED {
            self.downgrade_slow(cnts);
        }
    }

    /// Whether anyone holds the lock, shared or exclusive (a snapshot; a
    /// reader on its way into the queue may be counted for an instant).
    #[inline]
    pub fn is_locked(&self) -> bool {
        self.cnts.load(Ordering::Relaxed) & (READER_MASK | WRITER_LOCKED) != 0
    }

    /// Whether a writer holds the lock (a snapshot).
    #[inline]
    pub fn is_locked_exclusive(&self) -> bool {
        self.cnts.load(Ordering::Relaxed) & WRITER_LOCKED != 0
    }

    /// Whether a writer waits at the front of the queue, so that new plain
    /// readers queue instead of entering (recursive ones still enter; a
    /// snapshot).
    #[inline]
    pub fn is_writer_waiting(&self) -> bool {
        self.cnts.load(Ordering::Relaxed) & WRITER_WAITING != 0
    }

    /// Under loom, for the models' final checks: the lock word and whether
    /// the wait queue is empty (a snapshot). Not part of the API.
    #[cfg(loom)]
    #[doc(hidden)]
    pub fn loom_word_and_queue_empty(&self) -> (u32, bool) {
        (
            self.cnts.load(Ordering::Relaxed),
            self.wait_queue.is_empty(),
        )
    }

    /// `queued_read_lock_slowpath()`: `cnts` is what our fast-path add
    /// returned (our bias is in the word).
    #[cold]
    #[inline(never)]
    fn read_lock_slow(&self, cnts: u32) {
        // Take our bias back: we may not enter now, and a writer at the front
        // may be waiting for the count to drain.
        self.undo_reader_bias(cnts);
        if cnts & READER_OVERFLOW != 0 {
            reader_overflow();
        }
        let node = QNode::new(false);
        let queued = AbortIfUnwound::while_queued();
        if self.wait_queue.lock(&node) == Entry::Admitted {
            // The reader ahead of us counted us in while inside itself (so no
            // writer holds the lock) and granted us with a Release swap
            // (`wait_queue::grant`) that our wait in `WaitQueue::lock` read
            // with Acquire: the last writer's section happens before ours.
            std::mem::forget(queued);
            return;
        }
        // At the front: count ourselves again. No writer can set WAITING now
        // (only the front does), and a writer's fast-path CAS from zero fails
        // from here on. Relaxed: the acquire is the wait's.
        self.cnts.fetch_add(READER_BIAS, Ordering::Relaxed);
        // Acquire: pairs with the Release RMW (`write_unlock`, `downgrade`)
        // that cleared the byte, so the writer's section happens before ours.
        let cnts = wait::cond_load_then_acquire(&self.cnts, HEAD_SLEEPING, spin_ns::HEAD, |c| {
            c & WRITER_LOCKED == 0
        });
        if cnts & HEAD_SLEEPING != 0 {
            // Our bit, left by a wake that came before the waker cleared it:
            // clear it so later unlocks do not issue a pointless wake.
            // (Relaxed: the wait above already acquired; an RMW keeps the
            // word's release sequences whole.)
            self.cnts.fetch_and(!HEAD_SLEEPING, Ordering::Relaxed);
        }
        // Admit the readers queued right behind us (we are inside, so no
        // writer can be), and hand the queue to the first writer after them.
        self.wait_queue.unlock_admitting_readers(&node, || {
            // Relaxed: the admitted reader's acquire is its grant's (see the
            // admitted branch above). No overflow check: admitted readers are
            // threads waiting in the queue, far fewer than the count allows.
            self.cnts.fetch_add(READER_BIAS, Ordering::Relaxed);
        });
        std::mem::forget(queued);
    }

    /// `queued_write_lock_slowpath()`.
    #[cold]
    #[inline(never)]
    fn write_lock_slow(&self) {
        let node = QNode::new(true);
        let queued = AbortIfUnwound::while_queued();
        let entry = self.wait_queue.lock(&node);
        debug_assert_eq!(entry, Entry::Front, "writers are never admitted");
        // At the front. Take the lock directly if it is free. (Relaxed: a
        // filter for the CAS, which acquires.)
        if self.cnts.load(Ordering::Relaxed) == 0
            && self
                .cnts
                // Acquire: pairs with the previous holders' Release unlocks.
                .compare_exchange(0, WRITER_LOCKED, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
        {
            self.wait_queue.unlock(&node);
            std::mem::forget(queued);
            return;
        }
        // Stop new fast-path readers: they see WAITING and queue behind us.
        // Relaxed: it orders nothing; the readers that see it back off.
        self.cnts.fetch_or(WRITER_WAITING, Ordering::Relaxed);
        loop {
            // Wait for the readers inside (and a writer that took the lock on
            // its fast path before WAITING) to leave. Relaxed: the acquire is
            // the CAS's, as in kernels since the 2021 fix "locking/qrwlock:
            // Fix ordering in queued_write_lock_slowpath()". Will Deacon's
            // series had an acquire spin read and a relaxed cmpxchg, which
            // left the CAS that takes the lock without acquire ordering.
            let cnts = wait::cond_load(&self.cnts, HEAD_SLEEPING, spin_ns::HEAD, |c| {
                c == WRITER_WAITING
            });
            // Acquire: pairs with the Release unlocks of the readers and
            // writer that were inside. Clears WAITING and our sleeper bit.
            if self
                .cnts
                .compare_exchange(cnts, WRITER_LOCKED, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
            {
                break;
            }
        }
        self.wait_queue.unlock(&node);
        std::mem::forget(queued);
    }

    /// Takes back a bias added on a fast path that then found a writer bit
    /// (`added_to` is what the add returned), waking a writer at the front if
    /// this leaves it free to go.
    ///
    /// # Panics
    ///
    /// If the count had no reader left to take back: a `read_unlock` by a
    /// thread that held nothing took this reader's bias in between (it
    /// looked like a correct unlock to that thread). After restoring the
    /// word, so that the count does not wrap into the overflow bit and stop
    /// every reader and writer for good. Not where the add itself landed on
    /// a wrapped count (`added_to` has the overflow bit): that was a stray
    /// unlock's own subtraction, whose repair is still to come and would
    /// count a reader twice after ours; the caller panics with the overflow
    /// message then.
    fn undo_reader_bias(&self, added_to: u32) {
        // Relaxed: this reader accessed nothing the lock protects.
        let cnts = self.cnts.fetch_sub(READER_BIAS, Ordering::Relaxed);
        if cnts < READER_BIAS && added_to & READER_OVERFLOW == 0 {
            self.bias_taken_by_a_stray_unlock();
        }
        if cnts & HEAD_SLEEPING != 0 {
            // Wrapping: below the bias when the add landed on a stray
            // unlock's wrap (left to its repair above); the word is then
            // wrapped as well, and `wake_head` finds no one free to go.
            self.wake_head(cnts.wrapping_sub(READER_BIAS));
        }
    }

    /// [`Self::undo_reader_bias`] found its bias gone: restores the word
    /// its subtraction wrapped, and reports the misuse.
    #[cold]
    #[inline(never)]
    fn bias_taken_by_a_stray_unlock(&self) -> ! {
        let before = self.cnts.fetch_add(READER_BIAS, Ordering::Relaxed);
        self.wake_after_repair(before);
        panic!(
            "qrwlock: a read_unlock by a thread that held no read lock took the count of a \
             reader backing off from a writer (an unlock without a matching read lock, on \
             another thread)"
        );
    }

    #[cold]
    #[inline(never)]
    fn read_unlock_slow(&self, cnts: u32) {
        if cnts < READER_BIAS {
            // Restore the count: the fetch_sub wrapped it.
            let before = self.cnts.fetch_add(READER_BIAS, Ordering::Relaxed);
            self.wake_after_repair(before);
            panic!(
                "qrwlock: read_unlock of a RawQRwLock that no reader holds \
                 (an unlock without a matching read lock)"
            );
        }
        if cnts & WRITER_LOCKED != 0 {
            // Restore the count: the bias we took was a waiting reader's.
            let before = self.cnts.fetch_add(READER_BIAS, Ordering::Relaxed);
            self.wake_after_repair(before);
            panic!(
                "qrwlock: read_unlock of a RawQRwLock that is write-locked, so no reader holds \
                 it (an unlock without a matching read lock; the count is a queued reader's)"
            );
        }
        if cnts & HEAD_SLEEPING != 0 {
            self.wake_head(cnts - READER_BIAS);
        }
    }

    #[cold]
    #[inline(never)]
    fn write_unlock_slow(&self, cnts: u32) {
        if cnts & WRITER_LOCKED != WRITER_LOCKED {
            // Restore the word: the fetch_sub borrowed from the bits above.
            let before = self.cnts.fetch_add(WRITER_LOCKED, Ordering::Relaxed);
            self.wake_after_repair(before);
            panic!(
                "qrwlock: write_unlock of a RawQRwLock that is not write-locked \
                 (an unlock without a matching write lock)"
            );
        }
        self.wake_head(cnts - WRITER_LOCKED);
    }

    #[cold]
    #[inline(never)]
    fn downgrade_slow(&self, cnts: u32) {
        if cnts & WRITER_LOCKED != WRITER_LOCKED {
            // Restore the word: take back the count and the byte's carry.
            let before = self
                .cnts
                .fetch_sub(READER_BIAS.wrapping_sub(WRITER_LOCKED), Ordering::Relaxed);
            self.wake_after_repair(before);
            panic!(
                "qrwlock: downgrade of a RawQRwLock that is not write-locked \
                 (a downgrade without a matching write lock)"
            );
        }
        self.wake_head(cnts.wrapping_add(READER_BIAS.wrapping_sub(WRITER_LOCKED)));
    }

    /// After a misuse's repair: `before` is what the repairing RMW returned.
    /// Between the misuse's RMW and the repair, other threads saw the bad
    /// word: the queue head may have gone to sleep on it (on a sleeper bit of
    /// its own, or on one that the misuse's borrow or carry set and the
    /// repair clears again), or an unlock may have skipped its wake because of
    /// it (a writer head waits for no readers, and the bad word may show
    /// some). So if the bit is set, wake the head whatever the word now says:
    /// it rechecks and, if it must wait on, sets its bit again and sleeps. A
    /// cold path only misuse reaches. The Relaxed repairs suffice: an RMW
    /// continues the release sequence of the unlock the head's acquire reads.
    #[cold]
    #[inline(never)]
    fn wake_after_repair(&self, before: u32) {
        if before & HEAD_SLEEPING != 0 {
            wait::wake_all_sleepers(&self.cnts, HEAD_SLEEPING);
        }
    }

    /// The queue head sleeps (its bit was in the value our RMW returned) and
    /// the word is now `cnts`: wake it if its wait may be over. A reader head
    /// waits for the byte to clear; a writer head (WAITING set) also for the
    /// count to drain.
    #[inline]
    fn wake_head(&self, cnts: u32) {
        let may_proceed =
            cnts & WRITER_LOCKED == 0 && (cnts & WRITER_WAITING == 0 || cnts & READER_MASK == 0);
        if may_proceed {
            wait::wake_all_sleepers(&self.cnts, HEAD_SLEEPING);
        }
    }
}

#[cold]
#[inline(never)]
fn reader_overflow() -> ! {
    panic!(
        "qrwlock: reader count overflow (about 2 million read locks held at once: leaked \
         guards?), or a read unlock without a matching read lock on another thread wrapped \
         the count"
    )
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::time::Duration;

    /// Polls until `word` satisfies `cond` (the other thread got there).
    fn until(lock: &RawQRwLock, cond: impl Fn(u32) -> bool) {
        while !cond(lock.cnts.load(Ordering::Relaxed)) {
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    #[test]
    fn constants_partition_the_word() {
        assert_eq!(WRITER_LOCKED & WRITER_WAITING, 0);
        assert_eq!(WRITER_MASK & HEAD_SLEEPING, 0);
        assert_eq!(READER_MASK & (WRITER_MASK | HEAD_SLEEPING), 0);
        assert_eq!(READER_MASK | WRITER_MASK | HEAD_SLEEPING, u32::MAX);
        assert_eq!(READER_OVERFLOW & READER_MASK, READER_OVERFLOW);
    }

    /// The word's values for readers, a writer and a downgrade (the
    /// kernel's layout, but for the count, which starts at bit 10).
    #[test]
    fn word_counts_readers_and_the_writer_as_laid_out() {
        let lock = RawQRwLock::new();
        lock.read_lock();
        lock.read_lock();
        assert_eq!(lock.cnts.load(Ordering::Relaxed), 2 * READER_BIAS);
        // SAFETY: two shared holds taken above.
        unsafe {
            lock.read_unlock();
            lock.read_unlock();
        }
        lock.write_lock();
        assert_eq!(lock.cnts.load(Ordering::Relaxed), WRITER_LOCKED);
        // SAFETY: write-locked above.
        unsafe { lock.downgrade() };
        assert_eq!(lock.cnts.load(Ordering::Relaxed), READER_BIAS);
        // SAFETY: the downgraded hold.
        unsafe { lock.read_unlock() };
        assert_eq!(lock.cnts.load(Ordering::Relaxed), 0);
    }

    /// The recursive readers test only the writer byte: with a writer waiting
    /// (its bit set by hand, no thread behind it) they enter and the plain
    /// try-reader does not; with the byte set neither enters, and the failed
    /// try leaves the word as it found it.
    #[test]
    fn recursive_readers_test_only_the_writer_byte() {
        let lock = RawQRwLock::new();
        lock.cnts.store(WRITER_WAITING, Ordering::Relaxed);
        assert!(!lock.try_read_lock());
        assert!(lock.try_read_lock_recursive());
        lock.read_lock_recursive();
        assert_eq!(
            lock.cnts.load(Ordering::Relaxed),
            WRITER_WAITING + 2 * READER_BIAS
        );
        // SAFETY: the two shared holds taken above.
        unsafe {
            lock.read_unlock();
            lock.read_unlock();
        }
        lock.cnts.store(WRITER_LOCKED, Ordering::Relaxed);
        assert!(!lock.try_read_lock_recursive());
        assert_eq!(lock.cnts.load(Ordering::Relaxed), WRITER_LOCKED);
    }

    /// `Debug` shows the reader count and each writer field of the word,
    /// the count including a reader that waits for a writer to leave.
    #[test]
    fn debug_shows_readers_and_writer_fields() {
        let lock = RawQRwLock::new();
        lock.read_lock();
        lock.read_lock();
        assert_eq!(
            format!("{lock:?}"),
            "RawQRwLock { reader_count: 2, writer_locked: false, writer_waiting: false, .. }"
        );
        // SAFETY: two shared holds taken above.
        unsafe {
            lock.read_unlock();
            lock.read_unlock();
        }
        lock.write_lock();
        assert_eq!(
            format!("{lock:?}"),
            "RawQRwLock { reader_count: 0, writer_locked: true, writer_waiting: false, .. }"
        );
        // SAFETY: write-locked above.
        unsafe { lock.write_unlock() };
        // One reader inside and a writer waiting at the front, asleep.
        lock.cnts.store(
            READER_BIAS | WRITER_WAITING | HEAD_SLEEPING,
            Ordering::Relaxed,
        );
        assert_eq!(
            format!("{lock:?}"),
            "RawQRwLock { reader_count: 1, writer_locked: false, writer_waiting: true, .. }"
        );
        // A writer inside and the queue's front reader counted in, waiting
        // for it to leave: counted, while the writer holds the lock.
        lock.cnts
            .store(READER_BIAS | WRITER_LOCKED, Ordering::Relaxed);
        assert_eq!(
            format!("{lock:?}"),
            "RawQRwLock { reader_count: 1, writer_locked: true, writer_waiting: false, .. }"
        );
    }

    /// A reader that finds no writer bit enters on the fast path, without
    /// queueing (the crate's *Fairness*), even while someone holds the wait
    /// queue: here the test holds it, as a writer at the front does just
    /// before it looks at the free word.
    #[test]
    fn a_reader_that_finds_no_writer_bit_enters_without_queueing() {
        test_support::within_a_deadline(
            "a_reader_that_finds_no_writer_bit_enters_without_queueing (the reader queued behind the queue's holder)",
            Duration::from_secs(10),
            || {
                let lock = RawQRwLock::new();
                let node = QNode::new(true);
                assert_eq!(lock.wait_queue.lock(&node), Entry::Front);
                lock.read_lock();
                assert_eq!(lock.cnts.load(Ordering::Relaxed), READER_BIAS);
                // SAFETY: taken just above.
                unsafe { lock.read_unlock() };
                lock.wait_queue.unlock(&node);
            },
        );
    }

    /// A write-locked lock, and a reader thread at the front of its queue,
    /// asleep on the word (the head's sleeper bit set); the reader unlocks
    /// and ends once it gets in.
    fn reader_asleep_behind_a_writer() -> (Arc<RawQRwLock>, std::thread::JoinHandle<()>) {
        let lock = Arc::new(RawQRwLock::new());
        lock.write_lock();
        let reader = {
            let lock = lock.clone();
            std::thread::spawn(move || {
                lock.read_lock();
                // SAFETY: taken just above.
                unsafe { lock.read_unlock() };
            })
        };
        until(&lock, |c| c & HEAD_SLEEPING != 0);
        (lock, reader)
    }

    /// A thread that takes the write lock, releases it and ends: it queues
    /// behind whoever holds the lock now.
    fn writer_in_and_out(lock: &Arc<RawQRwLock>) -> std::thread::JoinHandle<()> {
        let lock = Arc::clone(lock);
        std::thread::spawn(move || {
            lock.write_lock();
            // SAFETY: taken just above.
            unsafe { lock.write_unlock() };
        })
    }

    /// A reader that waits behind a writer for long sleeps with the head's
    /// sleeper bit set, and the write unlock clears it and wakes it.
    #[test]
    fn queue_head_sleeps_and_write_unlock_wakes_it() {
        test_support::within_a_deadline(
            "queue_head_sleeps_and_write_unlock_wakes_it (a reader asleep at the front, never woken)",
            Duration::from_secs(10),
            || {
                let (lock, reader) = reader_asleep_behind_a_writer();
                // SAFETY: write-locked by the helper.
                unsafe { lock.write_unlock() };
                reader.join().unwrap();
                assert_eq!(
                    lock.cnts.load(Ordering::Relaxed),
                    0,
                    "bit cleared, count back"
                );
            },
        );
    }

    /// A reader asleep at the front behind a writer is woken by `downgrade`
    /// and enters beside the downgraded hold. (The loom model of downgrade
    /// reaches this only with schedule points before the downgrade; this
    /// test reaches it every run.)
    #[test]
    fn downgrade_wakes_a_sleeping_reader_head() {
        test_support::within_a_deadline(
            "downgrade_wakes_a_sleeping_reader_head (a reader asleep at the front, never woken)",
            Duration::from_secs(10),
            || {
                let (lock, reader) = reader_asleep_behind_a_writer();
                // SAFETY: write-locked by the helper.
                unsafe { lock.downgrade() };
                reader.join().unwrap();
                assert_eq!(
                    lock.cnts.load(Ordering::Relaxed),
                    READER_BIAS,
                    "the reader came and went while the downgraded hold was held"
                );
                // SAFETY: the shared hold downgrade gave us.
                unsafe { lock.read_unlock() };
                assert_eq!(lock.cnts.load(Ordering::Relaxed), 0);
            },
        );
    }

    /// A stray `read_unlock` races a correct `write_unlock` while a writer
    /// sleeps at the front: the misuse's RMW wraps the count, the correct
    /// unlock then sees readers in the word and does not wake the waiting
    /// writer, and only the misuse's repair leaves the word where the writer
    /// may go, with its sleeper bit set. The repair must wake it. Real threads
    /// cannot hit the window between the misuse's two RMWs on demand, so the
    /// test replays `read_unlock` in its two halves (its RMW, then the slow
    /// path it takes for that value) with the correct unlock in between.
    #[test]
    fn a_misuse_repair_wakes_the_head_an_unlock_skipped() {
        test_support::within_a_deadline(
            "a_misuse_repair_wakes_the_head_an_unlock_skipped (the writer at the front, never woken)",
            Duration::from_secs(10),
            || {
                let lock = Arc::new(RawQRwLock::new());
                lock.write_lock();
                let writer = writer_in_and_out(&lock);
                until(&lock, |c| {
                    c == WRITER_LOCKED | WRITER_WAITING | HEAD_SLEEPING
                });
                // The misuse's RMW, exactly as `read_unlock` does it.
                let cnts = lock.cnts.fetch_sub(READER_BIAS, Ordering::Release);
                assert_ne!(
                    cnts.wrapping_sub(READER_BIAS)
                        & (HEAD_SLEEPING | READER_OVERFLOW | WRITER_LOCKED),
                    0,
                    "read_unlock takes its slow path for this value"
                );
                // SAFETY: write-locked above: a correct unlock. It sees the
                // wrapped count, so the writer may not go yet: no wake.
                unsafe { lock.write_unlock() };
                assert_ne!(
                    lock.cnts.load(Ordering::Relaxed) & HEAD_SLEEPING,
                    0,
                    "the writer still sleeps"
                );
                // The rest of the misuse: repair, then panic.
                let caught = std::panic::catch_unwind(|| lock.read_unlock_slow(cnts));
                let message = *caught.unwrap_err().downcast::<&str>().unwrap();
                assert!(message.contains("no reader holds"), "{message}");
                writer.join().unwrap();
                assert_eq!(lock.cnts.load(Ordering::Relaxed), 0);
            },
        );
    }

    /// A writer's stray `read_unlock` while a reader at the front of the
    /// queue has counted itself in and is still spinning for the byte (so
    /// the head's sleeper bit is clear): only the writer byte in the value
    /// the RMW returned tells this misuse from a correct unlock, so the fast
    /// check must send it to the slow path for the byte alone. (The
    /// real-thread test in `tests/misuse.rs` waits until the reader has
    /// slept, and its sleeper bit takes the unlock to the slow path anyway.)
    #[test]
    fn read_unlock_of_a_write_locked_lock_with_a_spinning_front_reader() {
        let lock = RawQRwLock::new();
        lock.write_lock();
        // What a reader at the front does before it waits for the byte.
        lock.cnts.fetch_add(READER_BIAS, Ordering::Relaxed);
        // SAFETY: deliberately violated: held exclusive, not shared; the
        // check must panic after restoring the front reader's count.
        let caught = std::panic::catch_unwind(|| unsafe { lock.read_unlock() });
        let message = *caught
            .expect_err("a read_unlock of a write-locked lock returned normally")
            .downcast::<&str>()
            .unwrap();
        assert!(message.contains("write-locked"), "{message}");
        assert_eq!(
            lock.cnts.load(Ordering::Relaxed),
            WRITER_LOCKED | READER_BIAS,
            "the writer still holds it and the front reader is still counted"
        );
    }

    /// A stray `write_unlock` (`downgrade`) on a read-locked lock borrows
    /// from the count (carries into it), which sets the byte, WAITING and the
    /// sleeper bit. A reader that comes to the front meanwhile waits for the
    /// byte to clear and sleeps on the sleeper bit already there. The repair
    /// clears the byte and the bit: it must wake that reader. As in the test
    /// above, the misuse is replayed in its two halves; the pause lets the
    /// reader fall asleep (if it has not, the test only checks less).
    fn repair_wakes_a_head_asleep_on_the_misuse_bit(
        what: &'static str,
        misuse_rmw: fn(&RawQRwLock) -> u32,
        rest_of_misuse: fn(&RawQRwLock, u32),
        message: &'static str,
    ) {
        test_support::within_a_deadline(what, Duration::from_secs(10), move || {
            let lock = Arc::new(RawQRwLock::new());
            lock.read_lock();
            let cnts = misuse_rmw(&lock);
            let bad = lock.cnts.load(Ordering::Relaxed);
            assert_eq!(
                bad & (HEAD_SLEEPING | WRITER_LOCKED),
                HEAD_SLEEPING | 1,
                "the misuse sets the sleeper bit and one bit of the byte"
            );
            let reader = {
                let lock = lock.clone();
                std::thread::spawn(move || {
                    lock.read_lock();
                    // SAFETY: taken just above.
                    unsafe { lock.read_unlock() };
                })
            };
            until(&lock, |c| c == bad + READER_BIAS);
            std::thread::sleep(Duration::from_millis(50));
            let caught = std::panic::catch_unwind(|| rest_of_misuse(&lock, cnts));
            let panic = *caught.unwrap_err().downcast::<&str>().unwrap();
            assert!(panic.contains(message), "{panic}");
            reader.join().unwrap();
            // SAFETY: the shared hold taken above.
            unsafe { lock.read_unlock() };
            assert_eq!(lock.cnts.load(Ordering::Relaxed), 0);
        });
    }

    #[test]
    fn a_write_unlock_repair_wakes_a_head_asleep_on_the_borrowed_bit() {
        repair_wakes_a_head_asleep_on_the_misuse_bit(
            "a_write_unlock_repair_wakes_a_head_asleep_on_the_borrowed_bit (the reader at the front, never woken)",
            // The misuse's RMW, exactly as `write_unlock` does it.
            |lock| lock.cnts.fetch_sub(WRITER_LOCKED, Ordering::Release),
            RawQRwLock::write_unlock_slow,
            "write_unlock of a RawQRwLock that is not write-locked",
        );
    }

    #[test]
    fn a_downgrade_repair_wakes_a_head_asleep_on_the_carried_bit() {
        repair_wakes_a_head_asleep_on_the_misuse_bit(
            "a_downgrade_repair_wakes_a_head_asleep_on_the_carried_bit (the reader at the front, never woken)",
            // The misuse's RMW, exactly as `downgrade` does it.
            |lock| {
                lock.cnts
                    .fetch_add(READER_BIAS.wrapping_sub(WRITER_LOCKED), Ordering::Release)
            },
            RawQRwLock::downgrade_slow,
            "downgrade of a RawQRwLock that is not write-locked",
        );
    }

    /// A fast-path reader that found WAITING holds a writer up with its bias
    /// until it takes it back: when the last real reader leaves first, its
    /// unlock sees that bias and does not wake the sleeping writer, so the
    /// undo must. Real threads cannot hit the window between the add and the
    /// undo on demand, so the test replays the fast path's add, the unlock,
    /// then the undo. (The loom model
    /// `a_failed_try_read_wakes_the_writer_its_bias_held_up` checks the same
    /// wake through `try_read_lock`.)
    #[test]
    fn a_fast_path_readers_undo_wakes_the_writer_its_bias_held_up() {
        test_support::within_a_deadline(
            "a_fast_path_readers_undo_wakes_the_writer_its_bias_held_up (the writer at the front, never woken)",
            Duration::from_secs(10),
            || {
                let lock = Arc::new(RawQRwLock::new());
                lock.read_lock();
                let writer = writer_in_and_out(&lock);
                until(&lock, |c| c == READER_BIAS | WRITER_WAITING | HEAD_SLEEPING);
                // A reader's fast-path add, exactly as `read_lock` does it.
                let cnts = lock.cnts.fetch_add(READER_BIAS, Ordering::Acquire);
                assert_ne!(cnts & WRITER_WAITING, 0, "read_lock backs off for this");
                // SAFETY: the shared hold taken above. It sees the bias, so
                // the writer may not go yet: no wake.
                unsafe { lock.read_unlock() };
                assert_ne!(
                    lock.cnts.load(Ordering::Relaxed) & HEAD_SLEEPING,
                    0,
                    "the writer still sleeps"
                );
                lock.undo_reader_bias(cnts);
                writer.join().unwrap();
                assert_eq!(lock.cnts.load(Ordering::Relaxed), 0);
            },
        );
    }

    /// A stray `read_unlock` that takes the bias of a reader backing off
    /// from a waiting writer passes for a correct unlock (the count it sees
    /// is that reader's); the reader's undo then finds nothing to take back,
    /// restores the word and panics naming the misuse. Before, its
    /// subtraction wrapped the count into the overflow bit: every later
    /// reader panicked with the overflow message and writers waited for
    /// ever.
    #[test]
    fn a_readers_undo_after_a_stray_unlock_took_its_bias_panics_and_restores_the_word() {
        let lock = RawQRwLock::new();
        // A writer waiting at the front, as it leaves the word.
        lock.cnts.fetch_or(WRITER_WAITING, Ordering::Relaxed);
        // A reader's fast-path add, exactly as `read_lock` does it.
        let cnts = lock.cnts.fetch_add(READER_BIAS, Ordering::Acquire);
        assert_ne!(cnts & WRITER_WAITING, 0, "read_lock backs off for this");
        // SAFETY: deliberately wrong (no hold): the misuse under test; the
        // count it takes is the reader's.
        unsafe { lock.read_unlock() };
        assert_eq!(lock.cnts.load(Ordering::Relaxed), WRITER_WAITING);
        // The writer takes the lock from the word with no reader.
        lock.cnts
            .compare_exchange(
                WRITER_WAITING,
                WRITER_LOCKED,
                Ordering::Acquire,
                Ordering::Relaxed,
            )
            .unwrap();
        let panic = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            lock.undo_reader_bias(cnts);
        }))
        .unwrap_err();
        let message = panic.downcast_ref::<&str>().copied().unwrap_or("");
        assert!(
            message.contains("took the count of a reader backing off"),
            "{message}"
        );
        // The writer's hold, and nothing else.
        assert_eq!(lock.cnts.load(Ordering::Relaxed), WRITER_LOCKED);
        // SAFETY: the writer's hold, taken above.
        unsafe { lock.write_unlock() };
        lock.read_lock();
        // SAFETY: taken on the line above.
        unsafe { lock.read_unlock() };
    }

    /// Replays, on `lock` with the word `held`, a stray `read_unlock`'s
    /// subtraction (as `read_unlock` makes it), a reader's fast-path add on
    /// the wrapped word and its undo, which must return, then the stray
    /// unlock's repair and its panic, naming the misuse.
    fn a_reader_lands_on_a_stray_unlocks_wrap(lock: &RawQRwLock, held: u32) {
        lock.cnts.store(held, Ordering::Relaxed);
        let stray = lock.cnts.fetch_sub(READER_BIAS, Ordering::Release);
        assert_eq!(stray, held);
        let added_to = lock.cnts.fetch_add(READER_BIAS, Ordering::Acquire);
        assert_ne!(
            added_to & READER_OVERFLOW,
            0,
            "read_lock backs off for this"
        );
        lock.undo_reader_bias(added_to);
        let panic = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            lock.read_unlock_slow(stray);
        }))
        .unwrap_err();
        let message = panic.downcast_ref::<&str>().copied().unwrap_or("");
        assert!(message.contains("that no reader holds"), "{message}");
    }

    /// A reader whose fast-path add lands on a count that a stray
    /// `read_unlock` wrapped (its repair not yet made) backs off without
    /// repairing anything itself: the stray unlock's repair is still to
    /// come, and a second one would leave a reader counted that does not
    /// exist, so that writers wait for ever. The word ends as it began.
    #[test]
    fn a_reader_that_lands_on_a_stray_unlocks_wrap_leaves_the_repair_to_it() {
        let lock = RawQRwLock::new();
        a_reader_lands_on_a_stray_unlocks_wrap(&lock, 0);
        assert_eq!(
            lock.cnts.load(Ordering::Relaxed),
            0,
            "a reader counted twice or lost"
        );
        lock.write_lock();
        // SAFETY: taken on the line above.
        unsafe { lock.write_unlock() };
    }

    /// The same with a writer holding the lock and another asleep at the
    /// front when the stray unlock wraps the word: the reader's undo finds
    /// the sleeper bit under a count below its bias and leaves the wake to
    /// the repair, which wakes the front writer to recheck. (Until
    /// 2026-12-05 the undo's subtraction overflowed: "attempt to subtract
    /// with overflow" in builds with overflow checks, instead of the
    /// misuse's message.)
    #[test]
    fn a_reader_that_lands_on_a_stray_unlocks_wrap_over_a_sleeping_head() {
        let lock = RawQRwLock::new();
        a_reader_lands_on_a_stray_unlocks_wrap(
            &lock,
            WRITER_LOCKED | WRITER_WAITING | HEAD_SLEEPING,
        );
        assert_eq!(
            lock.cnts.load(Ordering::Relaxed) & !HEAD_SLEEPING,
            WRITER_LOCKED | WRITER_WAITING,
            "a reader counted twice or lost"
        );
    }

    /// A reader at the front asleep behind a writer that wakes and finds the
    /// byte clear while its own sleeper bit is still set (here: woken by a
    /// write unlock replayed as its RMW, then a futex wake before the bit is
    /// cleared) clears only that bit and keeps its count.
    #[test]
    fn a_woken_reader_head_clears_only_its_sleeper_bit() {
        test_support::within_a_deadline(
            "a_woken_reader_head_clears_only_its_sleeper_bit (the reader at the front, never woken)",
            Duration::from_secs(10),
            || {
                let (lock, reader) = reader_asleep_behind_a_writer();
                // `write_unlock`'s RMW, then the wake without the bit's clear.
                let cnts = lock.cnts.fetch_sub(WRITER_LOCKED, Ordering::Release);
                assert_eq!(cnts, WRITER_LOCKED | HEAD_SLEEPING | READER_BIAS);
                crate::futex::wake_all(&lock.cnts);
                reader
                    .join()
                    .expect("the reader read-unlocked what it held");
                assert_eq!(lock.cnts.load(Ordering::Relaxed), 0);
            },
        );
    }

    /// A writer at the front sets WAITING, sleeps until the last reader
    /// leaves, and is woken by that read unlock.
    #[test]
    fn waiting_writer_sleeps_until_the_last_reader_leaves() {
        test_support::within_a_deadline(
            "waiting_writer_sleeps_until_the_last_reader_leaves (the writer at the front, never woken)",
            Duration::from_secs(10),
            || {
                let lock = Arc::new(RawQRwLock::new());
                lock.read_lock();
                lock.read_lock();
                let writer = writer_in_and_out(&lock);
                until(&lock, |c| {
                    c & (WRITER_WAITING | HEAD_SLEEPING) == WRITER_WAITING | HEAD_SLEEPING
                });
                assert!(
                    !lock.try_read_lock(),
                    "a waiting writer keeps new readers out"
                );
                // SAFETY: two shared holds taken above.
                unsafe { lock.read_unlock() };
                assert!(lock.is_writer_waiting(), "one reader is still inside");
                // SAFETY: as above.
                unsafe { lock.read_unlock() };
                writer.join().unwrap();
                assert_eq!(lock.cnts.load(Ordering::Relaxed), 0);
            },
        );
    }

    #[test]
    fn reader_overflow_panics_before_the_count_wraps() {
        let lock = RawQRwLock::new();
        let below = READER_OVERFLOW >> READER_SHIFT;
        // Two million read locks take minutes under miri: there the count
        // starts just below the top and only the last few are taken for real.
        let prefilled = if cfg!(miri) { below - 16 } else { 0 };
        lock.cnts
            .store(prefilled << READER_SHIFT, Ordering::Relaxed);
        for _ in prefilled..below {
            lock.read_lock();
        }
        let before = lock.cnts.load(Ordering::Relaxed);
        // Every form panics there, the recursive ones (the interrupt-context
        // reader) too, and takes its bias back; try_read_lock whether its
        // first look sees the full count (here) or its add does.
        let forms: [(&str, &dyn Fn()); 4] = [
            ("read_lock", &|| lock.read_lock()),
            ("try_read_lock", &|| {
                let _ = lock.try_read_lock();
            }),
            ("read_lock_recursive", &|| lock.read_lock_recursive()),
            ("try_read_lock_recursive", &|| {
                let _ = lock.try_read_lock_recursive();
            }),
        ];
        for (form, take) in forms {
            let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(take));
            let message = *caught.unwrap_err().downcast::<&str>().unwrap();
            assert!(
                message.contains("reader count overflow"),
                "{form}: {message}"
            );
            assert_eq!(
                lock.cnts.load(Ordering::Relaxed),
                before,
                "{form}: the bias was taken back"
            );
        }
        // A transient bias on top of a count with the top bit set: the unlock
        // below leaves the top bit set, which must not read as an underflow.
        lock.cnts.fetch_add(READER_BIAS, Ordering::Relaxed);
        // SAFETY: one of the shared holds taken above.
        unsafe { lock.read_unlock() };
        assert_eq!(lock.cnts.load(Ordering::Relaxed), before);
    }
}

/// Aborts the process if dropped, which only an unwind does: held from a
/// slow path's `WaitQueue::lock` to its `unlock`, while other waiters may
/// still write the queue node on this thread's stack. Nothing in between
/// unwinds today (the debug assertion cannot fire); this keeps it so.
struct AbortIfUnwound;

impl AbortIfUnwound {
    #[inline]
    fn while_queued() -> AbortIfUnwound {
        AbortIfUnwound
    }
}

impl Drop for AbortIfUnwound {
    #[cold]
    fn drop(&mut self) {
        // Under loom a model reports what it found (a deadlock, a failed
        // assertion) by panicking on a blocked thread, often in here: let
        // it fail that model, not the whole test binary.
        if cfg!(loom) {
            return;
        }
        futex_word::stall::write_line(format_args!(
            "qrwlock: a panic while this thread's node was in the wait queue: aborting, \
             as other waiters may still write the node on its stack"
        ));
        std::process::abort();
    }
}
