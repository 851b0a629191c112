//! Retire and reclaim: deferred freeing of unpublished objects (what folly
//! and haphazard call `retire`/`cleanup`; the kernel's hazptr users call
//! `hazptr_synchronize()` and free directly instead).
//!
//! # Batching
//!
//! [`Domain::retire`] pushes onto the calling thread's batch in its slot
//! block: no atomic operation, no lock. The batch is handed to the domain's
//! retired list (one mutex acquisition) when it reaches [`LOCAL_BATCH`]
//! objects, or when a time check (every [`TIME_CHECK_EVERY`] retires into the
//! block, counted across the threads that own it in turn) finds the last
//! reclamation pass [`RECLAIM_PERIOD_MS`] ago, and when the thread exits.
//! After a hand-over, a pass runs if the domain holds at least its threshold
//! of objects (default 1000) retired since the last pass, at least as many
//! as that pass put back protected, and at least as many as the slots it
//! read (`enough_for_a_pass`), or if the period has passed: counted from
//! the end of the last pass's walk, and twice that walk's time if longer
//! than [`RECLAIM_PERIOD_MS`], up to [`MAX_RECLAIM_PERIOD_MS`]
//! (`pass_period_ms`). A thread's exit runs
//! no pass (it holds no `&Domain`: the domain could be dropping meanwhile);
//! the block's next owner, whose retires continue the count, does.
//!
//! # A pass
//!
//! Take the whole list, begin a scan (wildcard flip, then **`fence::heavy()`
//! before collecting hazards**: pairs with the readers' light fence, so a
//! reader either is seen in its slot or sees the unpublish), collect every
//! protected address, free every taken object not among them, put the rest
//! back. Each object is moved out of the list exactly once, so its deleter
//! runs exactly once.
//!
//! [`Domain::reclaim`] moves every thread's batch to the list (its own and,
//! by draining, those of other live threads) and runs a pass now, and
//! another while the deleters it ran retired on its thread (a chain of
//! objects whose drops retire the next is freed whole, as folly's
//! `hazptr_cleanup()` frees it). Dropping a domain frees everything, batches
//! included.
//!
//! # Draining other threads' batches
//!
//! An owner pushes onto its batch without the mutex, so a drainer must not
//! touch the batch during a push. The two sides use the asymmetric fences
//! the way a reader and a scan do (Dekker's handshake, as
//! `synchronize_rcu()` against `rcu_read_lock()`):
//!
//! - the owner stores `pushing = true`, issues `fence::light()` (a compiler
//!   fence in membarrier mode), loads the domain's `draining` flag (Acquire:
//!   a drain it finds over happens before the push), and only if it is
//!   clear pushes; then it stores `pushing = false` (Release). If
//!   the flag is set, it clears `pushing` and waits until the flag clears
//!   before it tries again;
//! - the drainer, holding the retired-list mutex (which also keeps out the
//!   owners' own hand-overs and other drainers), stores `draining = true`,
//!   issues `fence::heavy()`, and then for each block waits until its
//!   `pushing` reads false (Acquire: the last push happens before the take)
//!   and moves the batch to the list. It clears `draining` (Release) last.
//!
//! After the heavy fence, an owner that has not yet stored `pushing = true`
//! sees `draining` set and does not push; one that had is seen pushing and
//! waited for. So no push overlaps a take, and the owner's fast path gains
//! two plain stores, a compiler fence and a load of a line that only
//! drains, registrations and the domain's drop write (the domain's
//! read-mostly head, apart from the retired list's bookkeeping:
//! `domain::Reclamation`).
//!
//! An owner that waits counts itself in `drain_waiters` until it gets
//! through, and a drainer lets the counted owners through before it sets
//! `draining` (for about 10 ms at most). Drains that follow each other
//! closely, `reclaim()` in a loop, would otherwise leave `draining` clear
//! only for moments that a waiting owner, backing off, keeps missing.

use crate::domain::{Domain, Shared};
use crate::registration;
use crate::scan::{begin, for_each_slot, protects, read_slot};
use crate::slot::SlotBlock;
use crate::sync::{Backoff, Ordering};
use membarrier_sim::fence;
use std::ptr::NonNull;

/// Objects a thread batches before handing them to the domain. Two under
/// loom, so that a model's first retire leaves its object waiting in the
/// batch (to be handed over at the second, taken by a drain or the
/// domain's `free_all`, or flushed at the thread's exit) and its second
/// hands the batch over: until 2026-12-08 it was one there, every retire
/// handed over at once, and no model reached a batch at rest.
pub(crate) const LOCAL_BATCH: usize = if cfg!(loom) { 2 } else { 64 };
/// Retires between two looks at the clock.
pub(crate) const TIME_CHECK_EVERY: u32 = 8;
/// A thread hands its batch over early (before [`LOCAL_BATCH`] objects) if
/// this long has passed since the domain's last reclamation pass. The clock
/// is read only at every [`TIME_CHECK_EVERY`]th retire of a thread, so a
/// thread that retires rarely hands over that much later (one retire a
/// second: about every 8 s); the period bounds how long a busy retirer's
/// objects wait, not a rare one's, which the domain's drop or
/// [`Domain::reclaim`] frees. Measured by [`now_ms`], whose resolution is a
/// timer tick: 2 ms with 1 ms ticks, one tick (4 or 10 ms) with longer ones.
pub(crate) const RECLAIM_PERIOD_MS: u32 = 2;

/// Backoff steps a drainer gives owners waiting out the last drain before it
/// starts anyway (`drain_batches`): 6 spins, 4 yields, then sleeps of 1 µs
/// doubling up to 1 ms, about 10 ms in all.
const DRAIN_WAITER_STEPS: u32 = 30;

/// A retired object and the function that frees it.
pub(crate) struct Retired {
    ptr: *mut (),
    deleter: unsafe fn(*mut ()),
}

// SAFETY: `Domain::retire` requires that the object may be freed from any
// thread.
unsafe impl Send for Retired {}

impl Retired {
    /// The object's address, as slots hold it (a marked pointer's mark
    /// cleared).
    fn addr(&self) -> usize {
        crate::guard::protected_address(self.ptr)
    }

    /// Frees the object.
    ///
    /// # Safety
    ///
    /// No guard protects it, and no reader can reach it any more.
    pub(crate) unsafe fn reclaim(self) {
        // SAFETY: the deleter was given with this pointer to `retire`, whose
        // contract makes this call valid once the object is unprotected.
        unsafe { (self.deleter)(self.ptr) }
    }
}

/// A millisecond clock that wraps (compare with `wrapping_sub`): the
/// monotonic clock's coarse variant, `CLOCK_MONOTONIC_COARSE`, which the vDSO
/// reads from the last timer tick without reading the hardware counter
/// (a tick's resolution, 1-10 ms: enough for the reclamation period and the
/// scanner's 1 s spawn retry). Under loom always 0: time-based triggers
/// would make executions nondeterministic.
#[inline]
pub(crate) fn now_ms() -> u32 {
    #[cfg(loom)]
    {
        0
    }
    #[cfg(not(loom))]
    {
        let mut now = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `now` is a valid timespec for the call to fill in.
        let failed = unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC_COARSE, &mut now) } != 0;
        // The clock cannot fail for a valid clock id and pointer (Linux has
        // had it since 2.6.32); were it to, time would stand still: only the
        // count triggers would hand batches over, and a failed scanner spawn
        // would not be retried.
        debug_assert!(!failed, "CLOCK_MONOTONIC_COARSE failed");
        (now.tv_sec as u32)
            .wrapping_mul(1000)
            .wrapping_add((now.tv_nsec / 1_000_000) as u32)
    }
}

fn period_passed(shared: &Shared) -> bool {
    // Relaxed: a test's switch, set before the retires it affects.
    #[cfg(test)]
    if shared.reclamation.period_off.load(Ordering::Relaxed) {
        return false;
    }
    if cfg!(loom) {
        return false;
    }
    // Trigger hints, both: a stale time or period only runs a pass earlier
    // or later, and the pass takes the list under the mutex. Acquire pairs
    // with nothing (the stamp is stored Relaxed): it keeps the clock read
    // below after this load.
    let last = shared.reclamation.last_reclaim_ms.load(Ordering::Acquire);
    // The clock after the stamp, as the scanner's spawn retry and
    // rcu-lite's worker read theirs: a pass stamping a time after this
    // clock read would make the difference wrap to 49 days, a period
    // passed. Read the other way round (until 2026-12-07), a retire racing
    // another thread's pass could run a full pass right after it (with a
    // thread stamping in a loop, 93 of 37.5 million checks saw the period
    // passed).
    let now = now_ms();
    now.wrapping_sub(last) >= shared.reclamation.period_ms.load(Ordering::Relaxed)
}

/// The longest period [`pass_period_ms`] gives: a walk that took longer
/// than half of it was held up (a reader stopped in its wildcard window,
/// the walker preempted or stopped) more than it was long, and a rare
/// retirer's objects should not wait on that.
pub(crate) const MAX_RECLAIM_PERIOD_MS: u32 = 100;

/// The period after a pass whose hazard collection (the slot walk, the
/// sort, the sifting of the list) took `took_ms` (by the precise clock):
/// [`RECLAIM_PERIOD_MS`], or twice `took_ms` if that is longer, up to
/// [`MAX_RECLAIM_PERIOD_MS`], so that period-triggered passes keep the
/// domain's threads walking slots at most a third of the time. With tens of
/// thousands of slots (guards held, or backup slots kept after a spike of
/// nested guards) a pass takes milliseconds, and until 2026-12-07, counted
/// from the pass's start, a 2 ms period ran one at nearly every hand-over:
/// 60,000 slots took a retire from 79 ns to 6-736 us (203-360 ns since).
#[inline]
pub(crate) fn pass_period_ms(took_ms: u32) -> u32 {
    took_ms
        .saturating_mul(2)
        .clamp(RECLAIM_PERIOD_MS, MAX_RECLAIM_PERIOD_MS)
}

impl Domain {
    /// Hands `ptr` to the domain: `deleter(ptr)` runs once no guard protects
    /// it, on whichever thread runs the reclamation pass (or when the domain
    /// is dropped).
    ///
    /// Most calls push onto the thread's own batch: no atomic read-modify-
    /// write, no lock. Every 64th (or one that finds the period over) hands
    /// the batch to the domain under its retired-list mutex and may run a
    /// pass, which waits out readers caught in the scan's wildcard window:
    /// those calls block, if briefly, on other threads.
    ///
    /// # Safety
    ///
    /// 1. `ptr` is unpublished: no reader can newly reach it.
    /// 2. `ptr` is not retired again, nor freed otherwise, before `deleter`
    ///    runs.
    /// 3. `deleter(ptr)` is sound to call from any thread once `ptr` is
    ///    unprotected (for a `Box<T>`, `T: Send`), at any time until the
    ///    domain is dropped (the global domain: until the process exits):
    ///    whatever it uses stays valid that long (for a `Box<T>`, `T`'s
    ///    borrows outlive the domain; `T: 'static` is the simple way).
    /// 4. `T` is at least 2-aligned (as for every protected type).
    /// 5. Every guard that may protect `ptr` is a guard of this domain: a
    ///    scan walks its own domain's slots only, so a guard of another
    ///    domain (the global one included) does not keep `ptr` from its
    ///    deleter. ([`AtomicBox::load`](crate::AtomicBox::load) checks this
    ///    at run time; the raw layer cannot.)
    ///
    /// `ptr` may carry a mark in its low bit: guards and scans compare the
    /// object's address with the mark cleared, and `deleter` gets `ptr` as
    /// passed.
    ///
    /// `deleter` runs inside whichever call runs the reclamation pass (a later
    /// `retire`, an [`AtomicBox`](crate::AtomicBox) update or a
    /// [`Replaced`](crate::Replaced) drop, [`Domain::reclaim`], the domain's
    /// drop), on that thread, while it holds whatever that caller holds. So
    /// a deleter must not take a lock that threads hold while they retire or
    /// update (it would wait for its own thread), nor wait for a grace
    /// period or a [`Domain::synchronize`] (the caller may be inside a read
    /// section or hold a guard); hand such work elsewhere (a channel, or
    /// rcu-lite's `call_rcu`, which waits only while another thread is
    /// between rcu-lite's fork hooks: see `rcu_lite::fork`). It runs on that
    /// thread's stack too, which may be a spawned thread's 2 MiB or less: a
    /// deep recursive drop (a `Box`-linked list retired as one object) that
    /// fits the main thread's 8 MiB may not fit there. Retire such a list
    /// link by link, each deleter retiring the next: passes run them one
    /// after another, not one inside another. If
    /// it panics, the rest of the pass is still freed and the panic then
    /// comes out of that call; unless that thread is already unwinding, or
    /// exiting with its hazptr registrations gone (a thread-local destructor
    /// that runs after them), where a panic would abort the process: then
    /// it is reported on stderr and dropped. (Other thread-local destructors
    /// look like ordinary code: there it still aborts.) All of this is with
    /// `panic = "unwind"`; with `panic = "abort"` a deleter's panic aborts the
    /// process, from whichever thread ran the pass.
    ///
    /// # Panics
    ///
    /// If this retire runs a pass and one of the pass's deleters panics (see
    /// above). And between the calling thread's
    /// [`before_fork`](crate::fork::before_fork) and `after_fork_*` when the
    /// object has no batch to wait in (a domain with a forced slow path, or a
    /// thread-local destructor that runs after hazptr's per-thread state is
    /// gone): it would wait for the retired-list lock the thread holds. While
    /// the thread is already unwinding, such a retire leaks the object
    /// instead of panicking again.
    ///
    /// # Aborts
    ///
    /// If it runs inside another retire's push or hand-over on the same
    /// thread (or a reclamation pass's work on the domain's list): from a
    /// global allocator's `dealloc` that the growth of the batch or the list
    /// called, or from a signal handler. Retiring from either is not
    /// supported (the batch or the list is mid-change); the process prints
    /// why and aborts. Deleters may retire: they run after all that.
    pub unsafe fn retire<T>(&self, ptr: *mut T, deleter: unsafe fn(*mut T)) {
        // SAFETY: function pointers whose argument types are `*mut T` and
        // `*mut ()` (thin pointers, `T: Sized`) are ABI-compatible, so calling
        // the transmuted pointer with the original `ptr` is calling `deleter`.
        let deleter =
            unsafe { std::mem::transmute::<unsafe fn(*mut T), unsafe fn(*mut ())>(deleter) };
        let retired = Retired {
            ptr: ptr.cast(),
            deleter,
        };
        match self.block() {
            Some(block) => retire_local(&self.shared, block, retired),
            None => retire_shared(&self.shared, retired),
        }
    }

    /// [`Domain::retire`] with the deleter `drop(Box::from_raw(ptr))`.
    ///
    /// # Panics and aborts
    ///
    /// As [`Domain::retire`].
    ///
    /// # Safety
    ///
    /// As [`Domain::retire`], and `ptr` came from `Box::into_raw`.
    pub unsafe fn retire_box<T: Send>(&self, ptr: *mut T) {
        unsafe fn drop_box<T>(ptr: *mut T) {
            // SAFETY: `retire_box`'s contract: a `Box::into_raw` pointer,
            // freed once, now unprotected.
            drop(unsafe { Box::from_raw(ptr) });
        }
        // SAFETY: forwarded contract; `drop_box` is valid on any thread for
        // `T: Send`.
        unsafe { self.retire(ptr, drop_box::<T>) }
    }

    /// Runs a reclamation pass now over everything retired to the domain:
    /// frees every retired object that no guard protects, including those
    /// still in other live threads' batches. Returns how many objects it
    /// freed.
    ///
    /// What the deleters it runs retire on this thread is freed too: while
    /// they retire, it runs another pass (so a chain of objects whose drops
    /// retire the next one is freed whole, one pass per link, as folly's
    /// `hazptr_cleanup()` frees it). It returns once a pass's deleters
    /// retire nothing; deleters that retire a new object every time keep it
    /// going, and so do other threads that keep handing over objects whose
    /// deleters retire (each pass takes what they handed over too, and runs
    /// those deleters here).
    ///
    /// Taking another thread's batch costs one heavy fence (a `membarrier()`
    /// that interrupts the CPUs running the process), and a retire racing it
    /// waits until the batches are moved. A retire that found the last
    /// drain under way goes first: this call may wait up to about 10 ms for
    /// such retires, holding the domain's retired list (which hand-overs of
    /// full batches, other passes and exiting threads then wait for). Not
    /// among the objects: those a concurrent pass has taken off the list (it
    /// frees or keeps them itself).
    ///
    /// # Panics
    ///
    /// Between the calling thread's
    /// [`before_fork`](crate::fork::before_fork) and `after_fork_*` (it would
    /// wait for itself). And if a deleter the pass runs panics: the pass
    /// still frees the rest of what it took, then the first such panic comes
    /// out of this call (reported on stderr and dropped instead where it
    /// would abort the process: see [`Domain::retire`]).
    pub fn reclaim(&self) -> usize {
        crate::refuse_between_hooks("Domain::reclaim");
        let shared = &self.shared;
        {
            let _held = ListHeld::new();
            let mut list = crate::sync::lock(&shared.reclamation.retired);
            let moved = drain_batches(shared, &mut list);
            // Under the mutex, with the move, as in `flush_batch`.
            shared
                .reclamation
                .retired_count
                .fetch_add(moved, Ordering::Relaxed);
            shared
                .reclamation
                .unfreed
                .fetch_add(moved, Ordering::Relaxed);
        }
        let mut freed = 0;
        loop {
            let before = self.retires_on_this_thread();
            freed += reclaim_pass(shared);
            if self.retires_on_this_thread() == before {
                return freed;
            }
            // The deleters retired (into this domain, or into another one
            // through the shared path): what they put in this thread's batch
            // goes to the list, with no other thread's batch to take, so
            // without `drain_batches`' heavy fence. A retire into another
            // domain only costs this call one more pass.
            if let Some(block) = registration::registered_block(shared) {
                // SAFETY: the calling thread owns its block, alive as long
                // as the domain.
                flush_batch(shared, unsafe { block.as_ref() });
            }
        }
    }

    /// A value that changes with every retire this thread makes into this
    /// domain (its block's count, or its first registration there) and with
    /// every retire it makes without a batch (into any domain): `reclaim`
    /// goes round again while the deleters it runs retire. It does not
    /// register the thread.
    fn retires_on_this_thread(&self) -> (Option<u32>, u64) {
        let batched = registration::registered_block(&self.shared).map(|block| {
            // SAFETY: the calling thread owns its block, alive as long as
            // the domain.
            unsafe { block.as_ref() }.retired.since_check.get()
        });
        (batched, retires_without_a_batch())
    }

    /// Objects retired to this domain and not yet freed, batches of live
    /// threads excluded (for tests and statistics). Those a running pass
    /// took off the list count until the pass has put them back or its
    /// deleters have all returned, so a pass never makes it read low; until
    /// 2026-12-07 it read 0 from a pass's start until it put back what it
    /// kept.
    pub fn retired_len(&self) -> usize {
        // Relaxed: a statistic, read by nobody for synchronization.
        self.shared.reclamation.unfreed.load(Ordering::Relaxed)
    }
}

/// The common case: onto the thread's own batch.
#[inline]
fn retire_local(shared: &Shared, block: NonNull<SlotBlock>, retired: Retired) {
    // SAFETY: the calling thread owns `block`, alive as long as the domain.
    let b = unsafe { block.as_ref() };
    // Only this thread sets `pushing` (a drainer only reads it; the fork
    // child's reset is single-threaded), and it clears it before returning:
    // seen set here, this retire runs inside another one's push, from a
    // global allocator that the batch's growth called, or from a signal
    // handler. A second `&mut` to the batch mid-push would corrupt it. The
    // same callers inside a hand-over (`flush_batch`, which drains the batch
    // under the retired-list mutex) would push into the batch it drains, or
    // wait for the mutex this thread holds. Relaxed: this thread's own store.
    #[cfg(not(loom))]
    if b.retired.pushing.load(Ordering::Relaxed) || holding_a_retired_list() {
        retire_reentered();
    }
    // Relaxed: `fence::light()` orders it before the `draining` load, and
    // pairs with the heavy fence in `drain_batches` (see the module docs):
    // either that drainer sees this store or this thread sees its flag.
    b.retired.pushing.store(true, Ordering::Relaxed);
    fence::light();
    // Ordered after the `pushing` store by the fence pair above. Acquire:
    // pairs with the Release store that ends a drain, so that a drain this
    // load finds over (its takes done) happens before the push.
    if shared.draining.load(Ordering::Acquire) {
        wait_out_drain(shared, b);
    }
    let len = b.retired.batch.with_mut(|batch| {
        // SAFETY: only the owner touches its batch outside the retired-list
        // mutex, and the owner is this thread; a drainer that holds the mutex
        // (`drain_batches`) waits for `pushing` to clear, `flush_batch` is
        // the owner's own, and `free_all` runs only once the domain is being
        // dropped, when no retire into it can be in progress but those of
        // the deleters it runs itself, between its takes.
        let batch = unsafe { &mut *batch };
        batch.push(retired);
        batch.len()
    });
    // Release: pairs with the Acquire load in `drain_batches`, so that this
    // push happens before a drainer takes the batch.
    b.retired.pushing.store(false, Ordering::Release);
    let since = b.retired.since_check.get().wrapping_add(1);
    b.retired.since_check.set(since);
    if len >= LOCAL_BATCH || (since % TIME_CHECK_EVERY == 0 && period_passed(shared)) {
        hand_over(shared, b);
    }
}

/// A retire inside a retire's push or hand-over on one thread (see
/// `retire_local`): abort, since neither call can go on (the batch or the
/// list is mid-change, the list's mutex held) and a panic could not
/// leave a global allocator or a signal handler soundly. One raw write: the
/// allocator may be what called us, so nothing here may allocate.
#[cfg(not(loom))]
#[cold]
#[inline(never)]
fn retire_reentered() -> ! {
    const MESSAGE: &str = concat!(
        "hazptr: a retire ran inside another retire's push or hand-over on the same thread ",
        "(from a global allocator that the list's growth called, or a signal handler): ",
        "aborting\n",
    );
    // SAFETY: a valid buffer of that length; fd 2 is at worst closed, and
    // then the write fails harmlessly.
    let _ = unsafe { libc::write(2, MESSAGE.as_ptr().cast(), MESSAGE.len()) };
    std::process::abort()
}

/// The owner found a drain in progress: it steps out of its push until the
/// drain ends, then announces the push again (the same handshake).
#[cold]
#[inline(never)]
fn wait_out_drain(shared: &Shared, block: &SlotBlock) {
    // Counted until this owner gets through, so that the next drainer waits
    // for it before it sets `draining` again (`drain_batches`). Without it a
    // drain that starts as soon as the last one ended finds the owner still
    // waiting, pass after pass: a thread calling `reclaim()` in a loop kept
    // three retiring threads waiting for 30 s on a 2-vCPU Xeon guest, one
    // run in four. Relaxed: a liveness hint; the `pushing`/`draining`
    // handshake below is what keeps pushes and takes apart.
    shared.drain_waiters.fetch_add(1, Ordering::Relaxed);
    loop {
        // Release: the drainer may be waiting for it; nothing of the batch
        // was touched since the last clear, but the pairing is the same.
        block.retired.pushing.store(false, Ordering::Release);
        let mut backoff = Backoff::new();
        // Acquire: pairs with the Release store that ends the drain, so the
        // drainer's take of this batch happens before the push.
        while shared.draining.load(Ordering::Acquire) {
            backoff.snooze();
        }
        // As in `retire_local`.
        block.retired.pushing.store(true, Ordering::Relaxed);
        fence::light();
        // As in `retire_local`: ordered by the fence pair, Acquire for a
        // drain that ended meanwhile.
        if !shared.draining.load(Ordering::Acquire) {
            // Through: a drain that starts now waits for our `pushing`.
            shared.drain_waiters.fetch_sub(1, Ordering::Relaxed);
            return;
        }
    }
}

/// Moves every block's batch to `list`, the retired list whose mutex the
/// caller holds (see the module docs, *Draining other threads' batches*).
/// Returns how many objects it moved.
fn drain_batches(shared: &Shared, list: &mut Vec<Retired>) -> usize {
    // Owners that found the last drain in progress get through first: they
    // wait for `draining` to read false, which it does until we store it
    // below (only mutex holders set it, and we hold the mutex), so this
    // ends once each has stored `pushing` and seen the flag clear. New
    // waiters cannot keep coming meanwhile: an owner waits only when it
    // finds a drain running. Bounded all the same (about 10 ms of backoff,
    // most of it asleep), as a count is only a hint: an owner preempted for
    // longer gets through behind this drain instead. Relaxed: a liveness
    // hint (see `wait_out_drain`).
    let mut backoff = Backoff::new();
    for _ in 0..DRAIN_WAITER_STEPS {
        if shared.drain_waiters.load(Ordering::Relaxed) == 0 {
            break;
        }
        backoff.snooze();
    }
    // Relaxed: `fence::heavy()` orders it before the `pushing` loads below
    // and pairs with each owner's `fence::light()`. Only mutex holders
    // write it, so no other drainer races this store.
    shared.draining.store(true, Ordering::Relaxed);
    fence::heavy();
    let mut moved = 0;
    shared.for_each_block(|block| {
        let mut backoff = Backoff::new();
        // Acquire: pairs with the owner's Release store that ends its push,
        // so the batch as that push left it is what we take.
        while block.retired.pushing.load(Ordering::Acquire) {
            backoff.snooze();
        }
        block.retired.batch.with_mut(|batch| {
            // SAFETY: the owner is not pushing and will not until `draining`
            // clears (it saw the flag, or it stored `pushing` before the
            // heavy fence and we waited it out); its hand-overs need the
            // mutex we hold.
            let batch = unsafe { &mut *batch };
            moved += batch.len();
            list.append(batch);
        });
    });
    // Release: pairs with the Acquire load in `wait_out_drain`, so the takes
    // above happen before a waiting owner's next push.
    shared.draining.store(false, Ordering::Release);
    moved
}

#[cold]
#[inline(never)]
fn hand_over(shared: &Shared, block: &SlotBlock) {
    if crate::between_fork_hooks() {
        // The hooks hold the retired-list lock: the batch stays with this
        // thread (only it touches it) and goes at its first retire after them.
        return;
    }
    flush_batch(shared, block);
    maybe_reclaim(shared);
}

/// The slow path (no block: forced slow path or thread exit).
#[cold]
#[inline(never)]
fn retire_shared(shared: &Shared, retired: Retired) {
    // No batch to keep it in (a forced slow path, or a thread-local
    // destructor that runs after the thread's registrations are gone):
    // refused, or leaked while unwinding (a `Replaced` dropped by a refused
    // call's unwind: a second panic would abort the process).
    if crate::between_fork_hooks() && std::thread::panicking() {
        return;
    }
    crate::refuse_between_hooks(if shared.options.force_slow_path {
        "Domain::retire on a domain with a forced slow path"
    } else {
        "Domain::retire after this thread's hazptr state was destroyed (thread exit)"
    });
    // A retire from inside the push below (a global allocator's `dealloc`,
    // a signal handler) would wait for the mutex this thread holds: refused
    // as in `retire_local`.
    #[cfg(not(loom))]
    if holding_a_retired_list() {
        retire_reentered();
    }
    count_a_retire_without_a_batch();
    let held = ListHeld::new();
    let mut list = crate::sync::lock(&shared.reclamation.retired);
    list.push(retired);
    // Under the mutex, with the push, as in `flush_batch`: a pass that took
    // the list between the two would reset the count and free the object,
    // and the late add would leave it counted.
    shared
        .reclamation
        .retired_count
        .fetch_add(1, Ordering::Relaxed);
    shared.reclamation.unfreed.fetch_add(1, Ordering::Relaxed);
    drop(list);
    // Before the pass: its deleters may retire.
    drop(held);
    maybe_reclaim(shared);
}

#[cfg(not(loom))]
std::thread_local! {
    /// How many retired-list mutexes this thread holds, by way of
    /// [`ListHeld`]: a retire that finds it above 0 runs inside a hand-over,
    /// push or pass of its own thread (see `retire_local`).
    static RETIRED_LISTS_HELD: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

#[cfg(not(loom))]
std::thread_local! {
    /// How many retires this thread made with no batch to keep them in
    /// (`retire_shared`), for `Domain::reclaim` to see whether the deleters
    /// it ran retired (those made with a batch move the block's
    /// `since_check`, which costs the fast path nothing more).
    static RETIRES_WITHOUT_A_BATCH: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

#[cfg(loom)]
loom::thread_local! {
    static RETIRES_WITHOUT_A_BATCH: std::cell::Cell<u64> = std::cell::Cell::new(0);
}

fn count_a_retire_without_a_batch() {
    // `try_with`: at thread exit the count may be gone; no `reclaim` of
    // this thread can be waiting on it then.
    let _ = RETIRES_WITHOUT_A_BATCH.try_with(|count| count.set(count.get().wrapping_add(1)));
}

fn retires_without_a_batch() -> u64 {
    RETIRES_WITHOUT_A_BATCH
        .try_with(std::cell::Cell::get)
        .unwrap_or(0)
}

/// Whether this thread holds a retired-list mutex (see `RETIRED_LISTS_HELD`).
/// `try_with`: at thread exit the count may be gone, and then a retire
/// goes ahead unchecked.
#[cfg(not(loom))]
#[inline]
fn holding_a_retired_list() -> bool {
    RETIRED_LISTS_HELD.try_with(|held| held.get() != 0) == Ok(true)
}

/// Marks, while it lives, that this thread holds (or is about to take) a
/// retired-list mutex; declared before the lock, so that it outlives the
/// guard. Deleters must run after it is dropped: they may retire.
struct ListHeld;

impl ListHeld {
    #[inline]
    fn new() -> ListHeld {
        #[cfg(not(loom))]
        let _ = RETIRED_LISTS_HELD.try_with(|held| held.set(held.get() + 1));
        ListHeld
    }
}

impl Drop for ListHeld {
    #[inline]
    fn drop(&mut self) {
        #[cfg(not(loom))]
        let _ = RETIRED_LISTS_HELD.try_with(|held| held.set(held.get() - 1));
    }
}

/// Moves `block`'s batch to the domain's list. Called by the block's owner
/// (batch boundary, time check, thread exit); `Domain::reclaim` drains every
/// block instead (`drain_batches`).
pub(crate) fn flush_batch(shared: &Shared, block: &SlotBlock) {
    let _held = ListHeld::new();
    let list = crate::sync::lock(&shared.reclamation.retired);
    flush_batch_into(shared, block, list);
}

/// [`flush_batch`] unless another thread holds the domain's retired list
/// (a pass taking it, a hand-over, or the fork hooks, which hold it for as
/// long as the program's fork takes): returns whether it flushed.
pub(crate) fn try_flush_batch(shared: &Shared, block: &SlotBlock) -> bool {
    let _held = ListHeld::new();
    let Some(list) = crate::sync::try_lock(&shared.reclamation.retired) else {
        return false;
    };
    flush_batch_into(shared, block, list);
    true
}

/// [`flush_batch`]'s move, under the retired list's mutex held as `list`.
fn flush_batch_into(
    shared: &Shared,
    block: &SlotBlock,
    mut list: crate::sync::MutexGuard<'_, Vec<Retired>>,
) {
    let moved = block.retired.batch.with_mut(|batch| {
        // SAFETY: the owner calls this, holding the retired-list mutex that
        // `free_all` and `drain_batches` also take.
        let batch = unsafe { &mut *batch };
        let n = batch.len();
        list.extend(batch.drain(..));
        n
    });
    // Under the mutex, with the move: a pass that takes the list between
    // the two would reset the count and then see these objects counted again.
    shared
        .reclamation
        .retired_count
        .fetch_add(moved, Ordering::Relaxed);
    shared
        .reclamation
        .unfreed
        .fetch_add(moved, Ordering::Relaxed);
    drop(list);
}

fn maybe_reclaim(shared: &Shared) {
    // Relaxed, all three (the counts and the last pass's slots): trigger
    // hints, paired with nothing; the pass takes the list under the mutex.
    let count = shared.reclamation.retired_count.load(Ordering::Relaxed);
    let kept = shared
        .reclamation
        .kept_count
        .load(Ordering::Relaxed)
        .min(count);
    let walked = shared.reclamation.last_pass_slots.load(Ordering::Relaxed);
    if (enough_for_a_pass(count - kept, kept, walked, shared.options.retire_threshold)
        || period_passed(shared))
        && !RunningDeleters::defer_the_pass(shared)
    {
        reclaim_pass(shared);
    }
}

/// How many domains' deleters one thread can be running, one inside
/// another, and still have their passes deferred: passes nest at most once
/// per domain, so beyond this many domains (never seen in practice) a
/// deeper one nests its passes as before.
#[cfg(not(loom))]
const DELETER_NESTING: usize = 16;

/// The domains (their `Shared`'s address) whose deleters this thread is
/// running, in a pass or a domain's drop, innermost last, each with whether
/// a retire from those deleters asked for a pass of that domain meanwhile
/// (see [`RunningDeleters`]). Plain cells in a fixed array: the type needs
/// no drop, so std registers no destructor for it and it is never torn
/// down. Until 2026-12-07 it was a `RefCell<Vec<_>>`, which std destroys at
/// thread exit: a thread-local destroyed after it whose drop retired a
/// chain (each link's drop retiring the next) found it gone, and its passes
/// nested one per link again until the stack overflowed (on a 2 MiB stack,
/// about 3,600 links in a release build, 970 in a debug one).
#[cfg(not(loom))]
struct DeletersRunning {
    len: std::cell::Cell<usize>,
    entries: [std::cell::Cell<DeletersEntry>; DELETER_NESTING],
}

/// One domain whose deleters this thread runs.
#[cfg(not(loom))]
#[derive(Clone, Copy)]
struct DeletersEntry {
    /// The domain's `Shared`, by address.
    domain: usize,
    /// Whether a retire from the deleters asked for a pass meanwhile.
    wanted: bool,
    /// The objects these deleters are handed, still counted in the domain's
    /// `unfreed` (a fork from inside one of them leaves the child a pass
    /// that goes on to subtract them: `after_fork_child` counts them in).
    held: usize,
}

#[cfg(not(loom))]
const NO_DELETERS: DeletersEntry = DeletersEntry {
    domain: 0,
    wanted: false,
    held: 0,
};

#[cfg(not(loom))]
std::thread_local! {
    static DELETERS_RUNNING: DeletersRunning = const {
        DeletersRunning {
            len: std::cell::Cell::new(0),
            entries: [const { std::cell::Cell::new(NO_DELETERS) }; DELETER_NESTING],
        }
    };
}

#[cfg(not(loom))]
const _: () = assert!(!std::mem::needs_drop::<DeletersRunning>());

/// Marks, while it lives, that this thread runs deleters of one domain's
/// objects. A retire from one of them into the same domain that calls for
/// a pass does not run it there, inside the deleter: the pass that runs the
/// deleters runs another once they return ([`reclaim_pass`]; a domain's
/// drop takes everything again anyway). Nested, a chain of objects whose
/// drops retire the next one (a list, a hash table's segments) ran a pass
/// inside a pass per link, 17 stack frames each, until the stack
/// overflowed: 4,200 links on a 2 MiB thread stack, until 2026-12-07. A
/// deleter of one domain that retires into another may still run that
/// domain's pass, so passes nest at most once per domain.
///
/// Values live in the frames of the passes, so they are dropped in the
/// reverse order of their creation: each is the innermost entry while it
/// is dropped.
struct RunningDeleters {
    /// Its entry in `DELETERS_RUNNING` (None: that was full).
    #[cfg(not(loom))]
    entry: Option<usize>,
}

impl RunningDeleters {
    /// For the deleters of `held` objects of `shared`, still counted in its
    /// `unfreed`.
    fn new(shared: &Shared, held: usize) -> RunningDeleters {
        #[cfg(not(loom))]
        {
            let domain = std::ptr::from_ref(shared).addr();
            // `with`: the cells need no drop, so they are never destroyed,
            // not even while other thread-locals' destructors run.
            let entry = DELETERS_RUNNING.with(|running| {
                let len = running.len.get();
                let entry = running.entries.get(len)?;
                entry.set(DeletersEntry {
                    domain,
                    wanted: false,
                    held,
                });
                running.len.set(len + 1);
                Some(len)
            });
            RunningDeleters { entry }
        }
        #[cfg(loom)]
        {
            let _ = (shared, held);
            RunningDeleters {}
        }
    }

    /// Whether this thread runs `shared`'s deleters, in which case the pass a
    /// retire asks for is noted, for the pass running them to run it after.
    fn defer_the_pass(shared: &Shared) -> bool {
        #[cfg(not(loom))]
        {
            let domain = std::ptr::from_ref(shared).addr();
            DELETERS_RUNNING.with(|running| {
                let entries = &running.entries[..running.len.get()];
                let entry = entries.iter().rev().find(|e| e.get().domain == domain);
                entry
                    .map(|e| {
                        e.set(DeletersEntry {
                            wanted: true,
                            ..e.get()
                        });
                    })
                    .is_some()
            })
        }
        #[cfg(loom)]
        {
            let _ = shared;
            false
        }
    }

    /// Whether a retire asked for a pass while these deleters ran.
    fn pass_wanted(&self) -> bool {
        #[cfg(not(loom))]
        {
            self.entry
                .is_some_and(|at| DELETERS_RUNNING.with(|running| running.entries[at].get().wanted))
        }
        #[cfg(loom)]
        false
    }
}

impl Drop for RunningDeleters {
    fn drop(&mut self) {
        #[cfg(not(loom))]
        if let Some(at) = self.entry {
            DELETERS_RUNNING.with(|running| {
                debug_assert_eq!(
                    running.len.get(),
                    at + 1,
                    "deleter marks dropped out of order"
                );
                running.len.set(at);
            });
        }
    }
}

/// The objects of `shared` that this thread's running deleters are handed
/// and its `unfreed` still counts: what `after_fork_child`, called from one
/// of those deleters, adds to the list's length (the child's pass goes on
/// and subtracts them).
#[cfg(not(loom))]
pub(crate) fn held_by_this_threads_deleters(shared: &Shared) -> usize {
    let domain = std::ptr::from_ref(shared).addr();
    DELETERS_RUNNING.with(|running| {
        running.entries[..running.len.get()]
            .iter()
            .map(std::cell::Cell::get)
            .filter(|e| e.domain == domain)
            .map(|e| e.held)
            .sum()
    })
}

/// Whether `new` objects retired since the last pass, beside `kept` that it
/// found protected and put back, call for another pass, when that pass read
/// `walked` slots: at least the threshold, at least as many as were kept,
/// and at least as many as the slots walked. A pass walks the whole list
/// and every slot, so with readers holding more retired objects than the
/// threshold, a count of the whole list would run a pass on every hand-over,
/// each freeing a handful; and with more slots than the threshold (guards
/// on thousands of objects, or backup slots kept after a spike of nested
/// guards), every threshold's worth of retires paid for a walk of them all
/// (until 2026-12-07: 30,000 idle backup slots took a retire from 79 ns to
/// 344-4,378; 201-483 since). This way a pass has at least as many new objects to free as
/// old ones and slots to look at again, as folly's `max(threshold, 2 *
/// hazard pointers)`. Objects waiting for a pass stay under `2 * kept +
/// max(threshold, slots)`, or the period's pass frees them.
#[inline]
fn enough_for_a_pass(new: usize, kept: usize, walked: usize, threshold: usize) -> bool {
    new >= threshold.max(kept).max(walked)
}

/// One reclamation pass over the domain's list, and another each time the
/// deleters it ran retired enough for one ([`RunningDeleters`]); returns how
/// many they freed.
pub(crate) fn reclaim_pass(shared: &Shared) -> usize {
    let mut freed = 0;
    loop {
        let (n, pass_wanted) = one_pass(shared);
        freed += n;
        if !pass_wanted {
            return freed;
        }
    }
}

/// [`reclaim_pass`]'s pass: how many it freed, and whether its deleters'
/// retires asked for another.
fn one_pass(shared: &Shared) -> (usize, bool) {
    let taken = {
        let _held = ListHeld::new();
        let mut list = crate::sync::lock(&shared.reclamation.retired);
        // Relaxed: under the mutex, as every write of them is; reads outside
        // it are hints and statistics.
        shared.reclamation.retired_count.store(0, Ordering::Relaxed);
        shared.reclamation.kept_count.store(0, Ordering::Relaxed);
        shared
            .reclamation
            .last_reclaim_ms
            .store(now_ms(), Ordering::Relaxed);
        std::mem::take(&mut *list)
    };
    if taken.is_empty() {
        return (0, false);
    }
    // The objects were unpublished before they were retired, and the mutex
    // orders those retires before this point; `begin` flips and issues the
    // heavy fence before any hazard is collected.
    // The walk's length by the precise clock: the coarse one's tick (up to
    // 10 ms) would make a walk of microseconds that crosses one look long.
    #[cfg(not(loom))]
    let started = std::time::Instant::now();
    let mine = begin(shared);
    let mut hazards = Vec::new();
    let mut walked = 0usize;
    for_each_slot(shared, |slot| {
        walked += 1;
        let value = read_slot(shared, slot, mine);
        if protects(value) {
            hazards.push(value);
        }
    });
    hazards.sort_unstable();
    let (kept, free): (Vec<Retired>, Vec<Retired>) = taken
        .into_iter()
        .partition(|r| hazards.binary_search(&r.addr()).is_ok());
    // Relaxed, all three: trigger hints (`maybe_reclaim`, `period_passed`).
    // The period counts from here, the end of the walk, and lasts twice
    // what the walk took if that is more than `RECLAIM_PERIOD_MS`.
    #[cfg(not(loom))]
    let took_ms = u32::try_from(started.elapsed().as_millis()).unwrap_or(u32::MAX);
    #[cfg(loom)]
    let took_ms = 0;
    let r = &shared.reclamation;
    r.last_pass_slots.store(walked, Ordering::Relaxed);
    r.period_ms
        .store(pass_period_ms(took_ms), Ordering::Relaxed);
    r.last_reclaim_ms.store(now_ms(), Ordering::Relaxed);
    if !kept.is_empty() {
        let n = kept.len();
        let _held = ListHeld::new();
        let mut list = crate::sync::lock(&shared.reclamation.retired);
        list.extend(kept);
        // Under the mutex, as in `flush_batch`.
        shared
            .reclamation
            .retired_count
            .fetch_add(n, Ordering::Relaxed);
        shared
            .reclamation
            .kept_count
            .fetch_add(n, Ordering::Relaxed);
    }
    let freed = free.len();
    let running = RunningDeleters::new(shared, freed);
    // SAFETY: unpublished before retire, and no slot held their addresses
    // after the heavy fence (a reader that stores one later loaded its
    // pointer after the unpublish, so it cannot hold that object).
    let panic = unsafe { reclaim_all(free) };
    // Relaxed: a statistic (`Domain::retired_len`). Once, after the
    // deleters: a per-object count would cost every free an atomic add.
    shared
        .reclamation
        .unfreed
        .fetch_sub(freed, Ordering::Relaxed);
    let pass_wanted = running.pass_wanted();
    drop(running);
    if let Some(panic) = panic {
        pass_on(panic);
    }
    (freed, pass_wanted)
}

/// Hands every object of `retired` to its deleter, once each. A deleter that
/// panics does not stop the others: an unwinding loop would drop the rest
/// unfreed and out of every list (so a domain's drop would no longer free
/// everything retired to it). Returns the first panic, for the caller to pass
/// on once it is done ([`pass_on`]); later ones are dropped
/// ([`drop_payload`]).
///
/// # Safety
///
/// As [`Retired::reclaim`], for every element.
pub(crate) unsafe fn reclaim_all(
    retired: impl IntoIterator<Item = Retired>,
) -> Option<Box<dyn std::any::Any + Send>> {
    let mut first_panic = None;
    for r in retired {
        if cfg!(loom) {
            // Loom reports its findings by panicking: let them through.
            // SAFETY: per the contract.
            unsafe { r.reclaim() };
            continue;
        }
        // SAFETY: per the contract.
        let freed =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| unsafe { r.reclaim() }));
        if let Err(panic) = freed {
            match first_panic {
                None => first_panic = Some(panic),
                // Not `get_or_insert`, whose drop of the later payload
                // could unwind out of this loop.
                Some(_) => drop_payload(panic),
            }
        }
    }
    first_panic
}

/// Passes a deleter's panic on to the caller, once its pass has freed
/// everything it took; or, where passing it on would abort the process,
/// reports it on stderr and drops it. That is while the thread is already
/// unwinding (a `Replaced` or `Domain` dropped by an unwind can run a pass),
/// and at the exit of a thread that registered with a domain, once its
/// registrations are gone (a pass run by a thread-local destructor that
/// runs after theirs, or a domain's drop when they held its last
/// reference): a panic out of a thread-local destructor aborts. Other
/// thread-local destructors cannot be told apart from ordinary code (std
/// has no way to ask), so a deleter's panic in a pass they run, on a thread
/// that never registered or before its registrations are dropped, is
/// passed on and aborts.
#[cold]
pub(crate) fn pass_on(panic: Box<dyn std::any::Any + Send>) {
    let while_ = if std::thread::panicking() {
        "the thread was already unwinding"
    } else if crate::registration::thread_state_gone() {
        "the thread was exiting"
    } else {
        std::panic::resume_unwind(panic)
    };
    let message = panic
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| panic.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("a payload that is not a string");
    // Not `eprintln!`, which panics if it cannot write (see `write_line`).
    futex_word::stall::write_line(format_args!(
        "hazptr: a deleter panicked while {while_}, and passing the panic on would abort \
         the process; it is dropped (every other object of the pass was freed): {message}"
    ));
    drop_payload(panic);
}

/// Drops a panic's payload, whose own drop may panic too: that second
/// panic's payload is leaked rather than let out.
pub(crate) fn drop_payload(panic: Box<dyn std::any::Any + Send>) {
    if let Err(inner) = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| drop(panic))) {
        std::mem::forget(inner);
    }
}

/// Frees every object retired to `shared`, without looking at slots
/// (domain drop: no guard of the domain exists).
///
/// The deleters it runs may retire into the same domain (a node whose drop
/// retires the next one): those land in this thread's batch or on the list,
/// so it takes both again until a round finds nothing. Stopping after one
/// round would leave them to `Shared`'s drop, which runs when the last
/// registration goes (at thread exit, say), after the domain's drop has
/// returned: their deleters would run past the end the contract gives them
/// (see [`Domain::retire`], item 3), and one that retires again would use
/// the dropped handle.
pub(crate) fn free_all(shared: &Shared) {
    let mut first_panic = None;
    loop {
        let (all, listed) = {
            let _held = ListHeld::new();
            let mut list = crate::sync::lock(&shared.reclamation.retired);
            let mut all = std::mem::take(&mut *list);
            // What `unfreed` counts: the list, not the batches.
            let listed = all.len();
            shared.for_each_block(|b| {
                b.retired.batch.with_mut(|batch| {
                    // SAFETY: the domain handle is being dropped, so no other
                    // thread is inside `retire` for it; this thread retires
                    // into it only from the deleters below, which have
                    // returned; a thread that exits concurrently flushes its
                    // batch under the mutex we hold.
                    all.append(unsafe { &mut *batch });
                });
            });
            // Relaxed: under the mutex, as in `reclaim_pass`.
            shared.reclamation.retired_count.store(0, Ordering::Relaxed);
            shared.reclamation.kept_count.store(0, Ordering::Relaxed);
            (all, listed)
        };
        if all.is_empty() {
            break;
        }
        // A pass the deleters' retires ask for is this loop's next round.
        let _running = RunningDeleters::new(shared, listed);
        // SAFETY: no guard of the domain exists and the objects are
        // unpublished.
        let panic = unsafe { reclaim_all(all) };
        // Relaxed: a statistic, as in `one_pass`.
        shared
            .reclamation
            .unfreed
            .fetch_sub(listed, Ordering::Relaxed);
        if let Some(panic) = panic {
            match first_panic {
                None => first_panic = Some(panic),
                Some(_) => drop_payload(panic),
            }
        }
    }
    if let Some(panic) = first_panic {
        pass_on(panic);
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::Domain;
    use std::sync::Arc;
    use std::sync::atomic::AtomicUsize;

    /// Counts its drops.
    struct Counted(Arc<AtomicUsize>);

    impl Drop for Counted {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// A pass that stamps its time while a retire checks the period does
    /// not make the period look passed: the check reads the stamp before
    /// the clock. Another thread stamps the current time in a loop, so the
    /// period (24 days) never passes; read the other way round (until
    /// 2026-12-07), a stamp taken after the check's clock read wrapped the
    /// difference (13 to 59 checks in this test's second, on the 2-vCPU
    /// guest, at the coarse clock's ticks).
    #[test]
    #[cfg_attr(miri, ignore = "a second of clock reads")]
    fn a_pass_stamping_its_time_during_the_check_does_not_pass_the_period() {
        let domain = Domain::new();
        let r = &domain.shared.reclamation;
        // A period no stamp falls behind by, however long the stamping
        // thread waits for a CPU (a wrap comes out near `u32::MAX`).
        r.period_ms.store(u32::MAX / 2, Ordering::Relaxed);
        let stop = std::sync::atomic::AtomicBool::new(false);
        // Relaxed, all: the stamps are the trigger's hints, as in a pass,
        // and `stop` only ends the loop (the scope's join orders the rest).
        let (checks, passed) = std::thread::scope(|s| {
            s.spawn(|| {
                while !stop.load(Ordering::Relaxed) {
                    r.last_reclaim_ms.store(now_ms(), Ordering::Relaxed);
                }
            });
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(1);
            let (mut checks, mut passed) = (0u64, 0u64);
            while checks % 1024 != 0 || std::time::Instant::now() < deadline {
                checks += 1;
                passed += u64::from(period_passed(&domain.shared));
            }
            stop.store(true, Ordering::Relaxed);
            (checks, passed)
        });
        assert_eq!(
            passed, 0,
            "{passed} of {checks} checks saw the period passed"
        );
    }

    /// With more retired objects protected than the threshold, a pass runs
    /// once as many new objects have come as it kept, not at every retire
    /// (each would look at every protected one again to free one object).
    #[test]
    fn a_pass_waits_for_as_many_new_objects_as_it_kept() {
        let domain = Domain::builder()
            .retire_threshold(10)
            .force_slow_path(true)
            .build();
        domain
            .shared
            .reclamation
            .period_off
            .store(true, Ordering::Relaxed);
        let drops = Arc::new(AtomicUsize::new(0));
        let mut guards = Vec::new();
        for _ in 0..100 {
            let object = Box::into_raw(Box::new(Counted(Arc::clone(&drops))));
            let mut guard = domain.guard();
            // SAFETY: never published, so never unpublished either.
            unsafe { guard.protect_raw(object) };
            guards.push(guard);
            // SAFETY: never published; retired once.
            unsafe { domain.retire_box(object) };
        }
        assert_eq!(drops.load(Ordering::SeqCst), 0, "a protected object freed");
        // Passes at 10, 20, 40 and 80 objects kept them all: 80 kept, 20
        // of them not looked at yet, but counted as new since the last pass.
        // Each guard holds a backup slot (forced slow path), one per kept
        // object, so the slots a pass read ask for no more.
        let r = &domain.shared.reclamation;
        let kept = r.kept_count.load(Ordering::Relaxed);
        let walked = r.last_pass_slots.load(Ordering::Relaxed);
        assert_eq!(kept, 80);
        assert_eq!(walked, kept, "slots read");
        let new_needed = kept.max(10).max(walked) - (100 - kept);
        for i in 0..new_needed - 1 {
            let object = Box::into_raw(Box::new(Counted(Arc::clone(&drops))));
            // SAFETY: never published; retired once.
            unsafe { domain.retire_box(object) };
            assert_eq!(
                drops.load(Ordering::SeqCst),
                0,
                "a pass ran after {} new objects, with {kept} kept",
                100 - kept + i + 1
            );
        }
        let object = Box::into_raw(Box::new(Counted(Arc::clone(&drops))));
        // SAFETY: never published; retired once.
        unsafe { domain.retire_box(object) };
        assert_eq!(
            drops.load(Ordering::SeqCst),
            new_needed,
            "the pass at {} new objects freed every unprotected one",
            kept.max(10).max(walked)
        );
        drop(guards);
        assert_eq!(domain.reclaim(), 100);
    }

    /// With more slots than the threshold (here backup slots kept after a
    /// spike of 200 guards, all dropped), a pass waits for as many new
    /// objects as the last pass read slots: each walk of them is paid for
    /// by as many objects, as folly's `max(threshold, 2 * hazard
    /// pointers)`. Until 2026-12-07 a pass came every `threshold` retires
    /// whatever the slots.
    #[test]
    fn a_pass_waits_for_as_many_new_objects_as_slots_it_read() {
        let domain = Domain::builder()
            .retire_threshold(10)
            .force_slow_path(true)
            .build();
        let r = &domain.shared.reclamation;
        r.period_off.store(true, Ordering::Relaxed);
        let spike: Vec<_> = (0..200).map(|_| domain.guard()).collect();
        drop(spike);
        let drops = Arc::new(AtomicUsize::new(0));
        let retire_one = || {
            let object = Box::into_raw(Box::new(Counted(Arc::clone(&drops))));
            // SAFETY: never published; retired once.
            unsafe { domain.retire_box(object) };
        };
        // The first pass: at the threshold (no pass has read slots yet).
        for _ in 0..10 {
            retire_one();
        }
        assert_eq!(drops.load(Ordering::SeqCst), 10, "no pass at the threshold");
        let walked = r.last_pass_slots.load(Ordering::Relaxed);
        assert!(walked >= 200, "the pass read {walked} slots");
        for i in 0..walked - 1 {
            retire_one();
            assert_eq!(
                drops.load(Ordering::SeqCst),
                10,
                "a pass ran after {} new objects, with {walked} slots",
                i + 1
            );
        }
        retire_one();
        assert_eq!(drops.load(Ordering::SeqCst), 10 + walked);
    }

    /// The period after a pass is 2 ms, or twice the pass's hazard
    /// collection when that took longer (a walk of tens of thousands of
    /// slots), up to 100 ms (a walk held up), without wrapping.
    #[test]
    fn the_period_grows_with_a_long_walk() {
        assert_eq!(pass_period_ms(0), RECLAIM_PERIOD_MS);
        assert_eq!(pass_period_ms(1), RECLAIM_PERIOD_MS);
        assert_eq!(pass_period_ms(5), 10);
        assert_eq!(pass_period_ms(49), 98);
        assert_eq!(pass_period_ms(500), MAX_RECLAIM_PERIOD_MS);
        assert_eq!(pass_period_ms(u32::MAX), MAX_RECLAIM_PERIOD_MS);
    }
}
