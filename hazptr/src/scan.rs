//! `synchronize(addr)` and the shared scan (the kernel's
//! `hazptr_synchronize()` and the shared-scan kthread of the RFC series).
//!
//! # One scan
//!
//! [`begin`] flips the wildcard generation (`fetch_add(2, AcqRel)` on the
//! domain's wildcard word; the scan's own wildcard is the new value) and then
//! issues `fence::heavy()`. [`for_each_slot`] then reads every per-thread
//! slot, and only afterwards every backup slot of the overflow lists (a
//! promotion writes the backup slot before clearing the block slot, so this
//! order cannot miss it). For each slot value:
//!
//! - empty, or a wildcard of the scan's generation or newer: no protection
//!   that matters. A reader that loaded a generation at least the scan's
//!   (Acquire, pairing with the flip's Release) also sees the unpublish that
//!   preceded the scan, so it cannot obtain the address;
//! - a wildcard of an older generation: a reader is between storing it and
//!   storing its pointer. The scan waits for that slot to change ("drain the
//!   old generation") and classifies the new value. New readers write the new
//!   generation, so a stream of them cannot keep the scan waiting;
//! - an address: protected.
//!
//! A slot the scan does not see written by a reader (it reads an older value)
//! is harmless: by the light/heavy fence pairing, that reader's pointer load
//! comes after the heavy fence and sees the unpublish.
//!
//! A protection found is waited out by watching that slot until its value
//! changes: once it does, that reader's protection ended, and a new one
//! cannot obtain the unpublished address.
//!
//! # Sharing the scan
//!
//! In shared mode (the default) a caller queues a [`Waiter`] that lives on its
//! own stack (no allocation) and then tries to drive the scan itself: whoever
//! takes the domain's `driver` flag ([`drive_once`]) takes every queued waiter
//! at once, builds a [`Bloom`] filter of their addresses, runs one scan,
//! checks each protected address against the filter and then exactly against
//! the batch, and releases at once every waiter whose address no slot holds.
//! A caller that finds the scan busy waits for its release: it spins
//! briefly, drives the next batch itself if the scan has become free by
//! then, and otherwise sleeps on the domain's `release_seq` futex. Before it
//! sleeps it wakes the domain's scanner thread (started lazily, one per
//! domain), which from then on drives for it, so no sleeping caller is left
//! without a driver. Callers that arrive during a scan share the next one.
//!
//! A lone caller (nothing queued, no scan running) skips the queue: it takes
//! the `driver` flag and walks for its own address alone
//! (`lone_scan_protected`), so it pays what an unshared scan costs, without
//! a hand-off to another thread or the queue's atomics. Callers arriving
//! meanwhile find the flag taken and queue as behind any driver. If its walk
//! meets a protection of its address it stops there and queues like the
//! others: it then sleeps while the scanner watches the slot.
//!
//! Waiters with hits stay on the pending list, which every driver re-checks
//! (watching only the hit slots) before serving a new batch; the scanner
//! thread polls it with backoff while it is not empty. When a hit on a
//! per-thread slot changes, the protection may have moved to a backup slot
//! ([`Guard::promote`](crate::Guard::promote)) after the batch's walk of the
//! overflow lists, so the driver walks the overflow lists again for that
//! address before it releases the waiter. Releasing is a SeqCst store
//! to the waiter's state and then one futex wake for all sleepers.
//!
//! With sharing off, each caller runs [`begin`] and the walk itself.
//!
//! Two sleep/wake handshakes are store-buffering (Dekker) pairs: a caller's
//! `sleepers` count against the release of its waiter, and the domain's
//! `shutdown` against the scanner's sleep. Each side puts an
//! `atomic_fence(SeqCst)` (the atomic fence; `fence::heavy()` is the scan's
//! membarrier) between its store and its load. The accesses are SeqCst too, but
//! loom checks SeqCst accesses only as Acquire/Release, and SeqCst fences
//! exactly: with the fences, the models run the real scanner thread and a
//! blocking model of the futex (the `futex-word` crate's, which `sync.rs`
//! re-exports), so they cover the wake-up
//! handshakes as well as the scan. (The scanner's own wake-up needs no fence:
//! the queue's RMWs order it, see `wake_scanner`.)

use crate::bloom::Bloom;
use crate::domain::{Domain, Shared};
use crate::registration::thread_holds;
use crate::slot::{EMPTY, RESERVED, is_older_wildcard, is_wildcard};
use crate::sync::{
    AtomicBool, AtomicPtr, AtomicU32, AtomicUsize, Backoff, JoinHandle, Mutex, Ordering, Pause,
    ThreadBuilder, UnsafeCell, fence as atomic_fence, futex_wait, futex_wake_all, spin_loop,
};
use membarrier_sim::fence;
use std::cell::Cell;
use std::ptr;
use std::sync::Arc;

/// Spins a waiter does before sleeping (a scan takes microseconds; on an
/// oversubscribed machine a spinning waiter only delays the driver).
const WAITER_SPINS: u32 = if cfg!(loom) { 0 } else { 8 };

// No yield phase: on a machine with more threads than CPUs, a yield hands
// the CPU to whatever else runs there, and a busy reader thread then keeps it
// for a whole time slice (rcuscale, 16 writers and 1 reader on 2 CPUs: per-GP
// time 3-4x worse with 32 yields before sleeping), while a woken sleeper is
// scheduled at once.

/// Waiter states.
const WAITING: u32 = 0;
const DONE: u32 = 1;

/// Scanner states (the futex word callers wake it through).
const AWAKE: u32 = 0;
const SLEEPING: u32 = 1;

/// A synchronize caller queued for the shared scan. Lives on the caller's
/// stack from the push until the scanner sets `state` to `DONE`; the scanner
/// never touches it after that store.
pub(crate) struct Waiter {
    addr: usize,
    /// `WAITING` until released; the release is the scanner's last access.
    state: AtomicU32,
    /// Next waiter of the same batch: written by the caller before the push
    /// (published by the Release CAS), read by the scanner after its Acquire
    /// swap.
    next: Cell<*const Waiter>,
    /// Slots found holding `addr` and not yet seen to change. Scanner-only.
    hits: Cell<u32>,
}

/// A slot found holding a waiter's address.
struct PendingHit {
    slot: *const AtomicUsize,
    value: usize,
    waiter: *const Waiter,
    /// A per-thread block slot (its protection can move to a backup slot
    /// through [`Guard::promote`](crate::Guard::promote)), not a backup slot.
    in_block: bool,
}

/// The scanner's working memory, reused across passes (no allocation per
/// synchronize call once it has grown to the workload).
struct Buffers {
    pending: Vec<PendingHit>,
    /// Hits seen to change in this pass: (waiter, whether it was a block slot).
    cleared: Vec<(*const Waiter, bool)>,
}

/// The shared-scan part of a domain.
pub(crate) struct ScanState {
    /// Queued waiters (a Treiber stack of stack-allocated nodes).
    queue: AtomicPtr<Waiter>,
    /// `AWAKE` or `SLEEPING`: the futex word the scanner sleeps on.
    scanner_state: AtomicU32,
    /// Bumped after each release of waiters: the futex word waiters sleep on.
    release_seq: AtomicU32,
    /// Waiters that are (about to be) asleep on `release_seq`.
    sleepers: AtomicU32,
    /// Whoever drives the scan (a caller that finds it free, or the scanner
    /// thread; see [`drive_once`]) holds this.
    driver: AtomicBool,
    /// Owned by whoever holds `driver`.
    buffers: UnsafeCell<Buffers>,
    /// Whether the scanner thread runs.
    started: AtomicBool,
    /// Set when the domain is dropped: the scanner exits.
    shutdown: AtomicBool,
    pub(crate) thread: Mutex<Option<JoinHandle<()>>>,
}

impl ScanState {
    pub(crate) fn new() -> Self {
        ScanState {
            queue: AtomicPtr::new(ptr::null_mut()),
            scanner_state: AtomicU32::new(AWAKE),
            release_seq: AtomicU32::new(0),
            sleepers: AtomicU32::new(0),
            driver: AtomicBool::new(false),
            buffers: UnsafeCell::new(Buffers {
                pending: Vec::with_capacity(64),
                cleared: Vec::with_capacity(64),
            }),
            started: AtomicBool::new(false),
            shutdown: AtomicBool::new(false),
            thread: Mutex::new(None),
        }
    }
}

/// Starts a scan: flips the wildcard generation, then the heavy fence.
/// Returns the scan's wildcard (the new generation).
pub(crate) fn begin(shared: &Shared) -> usize {
    // Release: a reader whose Acquire load returns this generation (or a
    // later one: later flips continue this RMW's release sequence) sees every
    // write before the flip, in particular the unpublish of the addresses this
    // scan serves. Acquire: orders after earlier scans' flips.
    let mine = shared
        .wildcard()
        .fetch_add(2, Ordering::AcqRel)
        .wrapping_add(2);
    // Pairs with `fence::light()` in `Guard::protect_ptr`.
    fence::heavy();
    mine
}

/// Reads `slot` for a scan that began with wildcard `mine`, waiting out
/// wildcards of older generations. Returns the value: empty, a newer
/// wildcard, or an address.
#[inline]
pub(crate) fn read_slot(slot: &AtomicUsize, mine: usize) -> usize {
    // Acquire pairs with the Release store that ended the protection
    // (`Drop for Guard`, `Guard::reset`, `promote`), or a later one into the
    // slot (see `guard.rs`): what the reader did under protection happens
    // before what the scan's caller does next (free the object).
    let mut value = slot.load(Ordering::Acquire);
    if is_wildcard(value) && is_older_wildcard(value, mine) {
        let mut backoff = Backoff::new();
        while is_wildcard(value) && is_older_wildcard(value, mine) {
            backoff.snooze();
            value = slot.load(Ordering::Acquire);
        }
    }
    value
}

/// Whether a value returned by [`read_slot`] protects an address.
#[inline]
pub(crate) fn protects(value: usize) -> bool {
    value != EMPTY && value != RESERVED && !is_wildcard(value)
}

/// Calls `f` on every slot: all per-thread slots first, then every backup
/// slot of the overflow lists.
pub(crate) fn for_each_slot(shared: &Shared, mut f: impl FnMut(&AtomicUsize)) {
    shared.for_each_block(|b| b.hot.slots.iter().for_each(&mut f));
    shared.for_each_backup(|n| f(&n.value));
}

impl Domain {
    /// Waits until no protection of `addr` that began before this call is
    /// still held (the kernel's `hazptr_synchronize()`).
    ///
    /// The caller must already have unpublished `addr` (made it unreachable
    /// for new readers); afterwards it may free the object. Concurrent callers
    /// share one scan unless the domain was built with
    /// [`shared_scan(false)`](crate::DomainBuilder::shared_scan). A marked
    /// `addr` (low bit set) stands for the object it marks, as in a guard. A
    /// call allocates nothing (the scanner thread is started on first use,
    /// and the driver's lists of slot hits, with room for 64 to start, grow
    /// only when more hits are pending at once than ever before, and keep
    /// that room).
    ///
    /// # Panics
    ///
    /// If the calling thread itself holds a guard protecting `addr`: the call
    /// would wait for itself forever. Also between the calling thread's
    /// [`before_fork`](crate::fork::before_fork) and `after_fork_*`: a guard
    /// of another thread may then be waiting for a lock the hooks hold.
    ///
    /// One self-wait is not caught and hangs: a call from a thread-local
    /// destructor that runs after hazptr's own per-thread state is gone, for
    /// an address that a guard kept in another thread-local of the same
    /// thread still protects (the check finds the thread's slots through
    /// that state; see `docs/hazptr.md`, *Misuse that panics*).
    pub fn synchronize<T>(&self, addr: *const T) {
        // As a guard stores it: a marked pointer's object is what its guards
        // protect, and a null or a sentinel (`RESERVED` included) is no
        // object, which no guard protects.
        let addr = crate::guard::protected_address(addr);
        if addr == EMPTY || addr == RESERVED {
            return;
        }
        if thread_holds(self, addr) {
            synchronize_while_holding(addr);
        }
        // An unshared scan takes no lock either, but it waits for other
        // threads' guards, and a guard's thread may itself be waiting for a
        // lock the fork hooks hold (a hand-over, `Domain::new`).
        crate::refuse_between_hooks("Domain::synchronize");
        let shared = &self.shared;
        if shared.options.shared_scan && ensure_scanner(shared) {
            synchronize_shared(shared, addr);
        } else {
            synchronize_alone(shared, addr);
        }
    }
}

#[cold]
#[inline(never)]
fn synchronize_while_holding(addr: usize) -> ! {
    panic!(
        "hazptr: synchronize({addr:#x}) called while this thread holds a guard protecting \
         that address; it would wait for itself forever (drop or reset the guard first)"
    )
}

/// One caller, one scan.
fn synchronize_alone(shared: &Shared, addr: usize) {
    let mine = begin(shared);
    for_each_slot(shared, |slot| {
        let mut value = read_slot(slot, mine);
        if value == addr {
            let mut backoff = Backoff::new();
            while value == addr {
                backoff.snooze();
                // Acquire: as in `read_slot`.
                value = slot.load(Ordering::Acquire);
            }
        }
    });
}

/// Queues a waiter for the scanner and waits for its release; a lone
/// caller scans alone first (see [`lone_scan_protected`]).
fn synchronize_shared(shared: &Shared, addr: usize) {
    let scan = &shared.scan;
    // Relaxed: hints only. Whatever they read, the caller's own scan below
    // (unshared mode's algorithm) or its queued waiter covers `addr`.
    if scan.queue.load(Ordering::Relaxed).is_null()
        && !scan.driver.load(Ordering::Relaxed)
        && !lone_scan_protected(shared, addr)
    {
        return;
    }
    let waiter = Waiter {
        addr,
        state: AtomicU32::new(WAITING),
        next: Cell::new(ptr::null()),
        hits: Cell::new(0),
    };
    let me = ptr::from_ref(&waiter).cast_mut();
    let mut head = scan.queue.load(Ordering::Relaxed);
    loop {
        waiter.next.set(head);
        // SeqCst: Release publishes `waiter` (and, through program order, the
        // caller's unpublish of `addr`) to the scanner's Acquire swap; SeqCst
        // against the scanner's SLEEPING store + queue re-check, so one of
        // us sees the other (no lost wake-up).
        match scan
            .queue
            .compare_exchange_weak(head, me, Ordering::SeqCst, Ordering::Relaxed)
        {
            Ok(_) => break,
            Err(actual) => head = actual,
        }
    }
    // Serve the queue ourselves if nobody is scanning: alone, this runs the
    // scan at once, as an unshared caller would.
    drive_once(shared);
    wait_for_release(shared, &waiter);
}

/// A lone caller's scan: with nothing queued and no pass running, the caller
/// takes the driver flag and scans for its own address alone, as an unshared
/// caller does, without the queue's hand-offs (its push, the batch's swap and
/// Bloom filter, the release and the wake-up check: about 60 ns of a 170 ns
/// call on a 2-vCPU Xeon, 2026-12-02). Callers that arrive meanwhile find the
/// flag taken and queue, as behind any driver. Returns true, without
/// waiting, if a slot protects `addr`: the caller then queues, so that it
/// sleeps while the scanner watches the slot, and its scan starts again.
/// Returns true also if the flag was taken first (a pass started since the
/// hint): the caller queues behind it. The flag is held for one walk that
/// never waits for a protection, only for readers in their wildcard window,
/// as in every pass ([`hold_driver`]).
#[inline]
fn lone_scan_protected(shared: &Shared, addr: usize) -> bool {
    let scan = &shared.scan;
    // Acquire pairs with the Release store of the previous driver (as in
    // `drive_once`). This walk touches no buffers, but it hands the flag on
    // with its Release store below: the next driver's buffer accesses are
    // ordered after the previous driver's only through this Acquire and that
    // Release (loom's shared-scan models fail with either made Relaxed). A
    // fork hook's holder also expects every pass to run under the flag.
    if scan
        .driver
        .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
        .is_err()
    {
        return true;
    }
    let mine = begin(shared);
    let mut protected = false;
    for_each_slot(shared, |slot| {
        protected = protected || read_slot(slot, mine) == addr;
    });
    // Release pairs with the Acquire CAS of the next driver.
    scan.driver.store(false, Ordering::Release);
    protected
}

/// Makes sure the scanner thread is awake (it then drives until there is no
/// queued or pending waiter left).
fn wake_scanner(scan: &ScanState) {
    // The other half of the handshake in `scanner_sleep`, which stores
    // SLEEPING and then takes the queue with an RMW (`swap`). Our push was an
    // RMW on the same queue: if it came first, the scanner's swap takes our
    // waiter; if the swap came first, our push read from it (SeqCst: Release
    // there, Acquire here), so this load sees SLEEPING. No fence needed: the
    // queue's modification order decides it, which loom checks exactly.
    if scan.scanner_state.load(Ordering::SeqCst) == SLEEPING
        && scan
            .scanner_state
            .compare_exchange(SLEEPING, AWAKE, Ordering::SeqCst, Ordering::Relaxed)
            .is_ok()
    {
        futex_wake_all(&scan.scanner_state);
    }
}

/// Spins, drives the scan once if it is free, then sleeps on `release_seq`
/// with the scanner thread awake, until `waiter` is released.
// Under loom `WAITER_SPINS` is 0 (smaller models): the spin branch is meant
// to be dead there.
#[cfg_attr(loom, allow(clippy::absurd_extreme_comparisons))]
fn wait_for_release(shared: &Shared, waiter: &Waiter) {
    let scan = &shared.scan;
    let mut spins = 0;
    let mut tried_driving = false;
    loop {
        // Acquire pairs with the SeqCst (Release) store in `release`: the
        // scan's slot reads happen before the caller frees the object.
        if waiter.state.load(Ordering::Acquire) == DONE {
            return;
        }
        if spins < WAITER_SPINS {
            spins += 1;
            spin_loop();
            continue;
        }
        // Before sleeping, serve the queue if the scan has become free (our
        // waiter may still be queued behind a driver that just finished).
        // Relaxed: only a hint; `drive_once` takes the flag with Acquire.
        if !tried_driving && !scan.driver.load(Ordering::Relaxed) {
            tried_driving = true;
            if drive_once(shared) == Progress::Worked {
                continue;
            }
        }
        wake_scanner(scan);
        let seq = scan.release_seq.load(Ordering::SeqCst);
        // SeqCst (Dekker with `wake_released`): either this re-check sees DONE,
        // or the scanner's `sleepers` load sees us and wakes; and if its bump
        // of `release_seq` came first, the futex wait returns at once.
        scan.sleepers.fetch_add(1, Ordering::SeqCst);
        // Pairs with the fence in `wake_released`.
        atomic_fence(Ordering::SeqCst);
        if waiter.state.load(Ordering::SeqCst) != DONE {
            futex_wait(&scan.release_seq, seq, None);
        }
        scan.sleepers.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Marks `waiter` released. The waiter may return (and its stack frame
/// vanish) right after this store, so nothing touches it afterwards.
///
/// # Safety
///
/// `waiter` is queued and not yet released.
unsafe fn release(waiter: *const Waiter) {
    // SAFETY: still queued, so still alive (per the contract).
    let w = unsafe { &*waiter };
    // SeqCst: Release pairs with the waiter's Acquire load; SeqCst for the
    // Dekker pattern in `wait_for_release`.
    w.state.store(DONE, Ordering::SeqCst);
}

/// After releasing waiters: bump `release_seq` and wake the sleepers.
fn wake_released(scan: &ScanState) {
    // SeqCst: see `wait_for_release`.
    scan.release_seq.fetch_add(1, Ordering::SeqCst);
    // Pairs with the fence in `wait_for_release`, between its `sleepers`
    // increment and its re-check of the state this pass stored.
    atomic_fence(Ordering::SeqCst);
    if scan.sleepers.load(Ordering::SeqCst) > 0 {
        futex_wake_all(&scan.release_seq);
    }
}

/// What one [`drive_once`] found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Progress {
    /// Someone else is driving.
    Busy,
    /// Nothing queued and nothing pending.
    Idle,
    /// Only waiters with hits, none of which cleared.
    Pending,
    /// Released waiters or scanned a batch.
    Worked,
}

/// One step of the scanner: re-check pending hits, then serve every queued
/// waiter with one scan.
pub(crate) fn drive_once(shared: &Shared) -> Progress {
    let scan = &shared.scan;
    // Acquire pairs with the Release store at the end: the previous driver's
    // buffer writes are visible.
    if scan
        .driver
        .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
        .is_err()
    {
        return Progress::Busy;
    }
    let progress = scan.buffers.with_mut(|buffers| {
        // SAFETY: the driver flag makes this the only access.
        let buffers = unsafe { &mut *buffers };
        drive_locked(shared, buffers)
    });
    // Release pairs with the Acquire CAS above.
    scan.driver.store(false, Ordering::Release);
    progress
}

fn drive_locked(shared: &Shared, buffers: &mut Buffers) -> Progress {
    let scan = &shared.scan;
    let mut released = false;
    // 1. Pending hits: a slot whose value changed no longer protects its
    //    waiter's address there.
    let mut cleared = std::mem::take(&mut buffers.cleared);
    buffers.pending.retain(|hit| {
        // SAFETY: slots live as long as the domain.
        let slot = unsafe { &*hit.slot };
        // Acquire: as in `read_slot`; for a block slot it also pairs with the
        // Release store of `EMPTY` in `Guard::promote`.
        if slot.load(Ordering::Acquire) == hit.value {
            return true;
        }
        cleared.push((hit.waiter, hit.in_block));
        false
    });
    for (waiter, in_block) in cleared.drain(..) {
        // SAFETY: a waiter with hits is not released, so it is alive.
        let w = unsafe { &*waiter };
        if in_block {
            // The protection may have moved to a backup slot (`promote` writes
            // the backup slot, then empties the block slot with Release, which
            // the Acquire load above saw), after this waiter's walk of the
            // overflow lists: look there again before releasing.
            shared.for_each_backup(|n| {
                // Acquire: as in `read_slot`.
                if n.value.load(Ordering::Acquire) == w.addr {
                    w.hits.set(w.hits.get() + 1);
                    buffers.pending.push(PendingHit {
                        slot: &n.value,
                        value: w.addr,
                        waiter: w,
                        in_block: false,
                    });
                }
            });
        }
        w.hits.set(w.hits.get() - 1);
        if w.hits.get() == 0 {
            // SAFETY: queued, not yet released; no pending entry refers to it
            // any more (its hit count reached 0).
            unsafe { release(w) };
            released = true;
        }
    }
    buffers.cleared = cleared;
    // 2. Every queued waiter, one scan. Acquire pairs with the callers'
    //    SeqCst push: their waiters and unpublishes are visible. The Release
    //    half (SeqCst includes it) is the scanner's side of the wake-up
    //    handshake in `wake_scanner`: a caller's push that reads from this
    //    swap synchronizes with it, so that caller's load of
    //    `scanner_state` sees the SLEEPING store `scanner_sleep` made before
    //    this pass, and it wakes the scanner that this swap left with
    //    nothing to do.
    let batch = scan.queue.swap(ptr::null_mut(), Ordering::SeqCst);
    let had_batch = !batch.is_null();
    if had_batch {
        let mut bloom = Bloom::new();
        for_each_waiter(batch, |w| bloom.insert(w.addr));
        let mine = begin(shared);
        let mut check = |slot: &AtomicUsize, in_block: bool| {
            let value = read_slot(slot, mine);
            if protects(value) && bloom.may_contain(value) {
                for_each_waiter(batch, |w| {
                    if w.addr == value {
                        w.hits.set(w.hits.get() + 1);
                        buffers.pending.push(PendingHit {
                            slot,
                            value,
                            waiter: w,
                            in_block,
                        });
                    }
                });
            }
        };
        // Every per-thread slot before any backup slot (see the module docs).
        shared.for_each_block(|b| b.hot.slots.iter().for_each(|slot| check(slot, true)));
        shared.for_each_backup(|n| check(&n.value, false));
        let mut w = batch.cast_const();
        while !w.is_null() {
            // SAFETY: queued and not yet released, so alive; `next` is read
            // before the release below.
            let (next, hits) = unsafe { ((*w).next.get(), (*w).hits.get()) };
            if hits == 0 {
                // SAFETY: queued, not yet released, and not pending.
                unsafe { release(w) };
                released = true;
            }
            w = next;
        }
    }
    if released {
        wake_released(scan);
    }
    if released || had_batch {
        Progress::Worked
    } else if buffers.pending.is_empty() {
        Progress::Idle
    } else {
        Progress::Pending
    }
}

/// Calls `f` on every waiter of a batch.
fn for_each_waiter(batch: *mut Waiter, mut f: impl FnMut(&Waiter)) {
    let mut w = batch.cast_const();
    while !w.is_null() {
        // SAFETY: batch waiters are alive until released, which happens only
        // after the walks that use this function.
        let waiter = unsafe { &*w };
        f(waiter);
        w = waiter.next.get();
    }
}

/// Makes sure the scanner thread runs; false if it cannot be started (the
/// caller then scans alone).
#[inline]
fn ensure_scanner(shared: &Arc<Shared>) -> bool {
    // Acquire pairs with the Release store in `start_scanner`.
    shared.scan.started.load(Ordering::Acquire) || start_scanner(shared)
}

#[cold]
#[inline(never)]
fn start_scanner(shared: &Arc<Shared>) -> bool {
    let scan = &shared.scan;
    let mut handle = scan.thread.lock().expect("not poisoned");
    if scan.started.load(Ordering::Relaxed) {
        return true;
    }
    if scan.shutdown.load(Ordering::Relaxed) {
        return false;
    }
    let for_thread = Arc::clone(shared);
    let spawned = ThreadBuilder::new()
        .name(format!("hazptr-scan-{}", shared.id))
        .spawn(move || scanner_main(&for_thread));
    match spawned {
        Ok(h) => {
            *handle = Some(h);
            // Release pairs with the Acquire load in `ensure_scanner`.
            scan.started.store(true, Ordering::Release);
            true
        }
        Err(_) => false,
    }
}

/// The scanner thread: drive the scan while there is work, sleep otherwise.
fn scanner_main(shared: &Shared) {
    let scan = &shared.scan;
    let mut backoff = Backoff::new();
    loop {
        match drive_once(shared) {
            Progress::Worked => backoff = Backoff::new(),
            Progress::Busy => crate::sync::yield_now(),
            Progress::Pending => match backoff.next_pause() {
                Pause::Spin(n) => (0..n).for_each(|_| spin_loop()),
                Pause::Yield => crate::sync::yield_now(),
                Pause::Sleep(timeout) => scanner_sleep(shared, Some(timeout)),
            },
            Progress::Idle => {
                // SeqCst pairs with the SeqCst store in `stop_scanner`.
                if scan.shutdown.load(Ordering::SeqCst) {
                    return;
                }
                scanner_sleep(shared, None);
                backoff = Backoff::new();
            }
        }
    }
}

/// Sleeps until a waiting caller wakes it (or `timeout` passes).
///
/// Without a timeout it sleeps only if, after announcing `SLEEPING`, a pass
/// under the driver flag finds no queued and no pending waiter: a caller that
/// saw the scanner awake before that store (and so did not wake it) has its
/// waiter queued, or taken by a driver whose section precedes this pass (the
/// driver flag orders them), so the pass sees it.
fn scanner_sleep(shared: &Shared, timeout: Option<std::time::Duration>) {
    let scan = &shared.scan;
    // SeqCst: with `wake_scanner`, a caller that misses SLEEPING has its
    // waiter taken by the pass below (see there). The fence: Dekker with
    // `stop_scanner`, whose fence follows its `shutdown` store; if the
    // `shutdown` load below misses that store, the AWAKE store of
    // `stop_scanner` comes after our SLEEPING one, and its wake after our
    // futex check or while we wait.
    scan.scanner_state.store(SLEEPING, Ordering::SeqCst);
    atomic_fence(Ordering::SeqCst);
    let sleep = match timeout {
        Some(_) => true,
        None => drive_once(shared) == Progress::Idle,
    };
    if sleep && !scan.shutdown.load(Ordering::SeqCst) {
        futex_wait(&scan.scanner_state, SLEEPING, timeout);
    }
    scan.scanner_state.store(AWAKE, Ordering::SeqCst);
}

/// Takes the driver flag, waiting for a pass in progress to finish (the fork
/// hooks: no pass is half done when the memory is copied). A pass never waits
/// for long with the flag held (only for readers in their wildcard window).
#[cfg(not(loom))]
pub(crate) fn hold_driver(shared: &Shared) {
    // Acquire: as in `drive_once`; the previous driver's buffer writes are
    // visible to `reset_after_fork`.
    while shared
        .scan
        .driver
        .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
        .is_err()
    {
        crate::sync::yield_now();
    }
}

/// Gives back the flag [`hold_driver`] took.
#[cfg(not(loom))]
pub(crate) fn release_driver(shared: &Shared) {
    // Release pairs with the Acquire CAS in `drive_once`.
    shared.scan.driver.store(false, Ordering::Release);
}

/// In a fork child, with the driver flag held ([`hold_driver`]) and the
/// scanner-thread handle locked (`thread`): forgets every queued and pending
/// waiter and the scanner thread. The forking thread waits for nothing (it is
/// in the fork hooks), so every waiter belongs to a thread that did not come
/// along; the child never touches them again, since their stacks may be
/// handed to the child's new threads. The next shared `synchronize` starts a
/// new scanner thread.
#[cfg(not(loom))]
pub(crate) fn reset_after_fork(shared: &Shared, thread: &mut Option<JoinHandle<()>>) {
    let scan = &shared.scan;
    // The child has one thread: Relaxed stores; the driver flag's Release
    // store (`release_driver`) publishes them to the next driver.
    scan.queue.store(ptr::null_mut(), Ordering::Relaxed);
    scan.buffers.with_mut(|buffers| {
        // SAFETY: the caller holds the driver flag, which owns the buffers.
        let buffers = unsafe { &mut *buffers };
        buffers.pending.clear();
        buffers.cleared.clear();
    });
    scan.sleepers.store(0, Ordering::Relaxed);
    scan.scanner_state.store(AWAKE, Ordering::Relaxed);
    // Not joined or detached: the thread does not exist in the child, and
    // glibc has reclaimed its stack and descriptor.
    std::mem::forget(thread.take());
    // Relaxed: `ensure_scanner` reads it with Acquire, pairing with a later
    // `start_scanner`'s Release store; false here only sends it there.
    scan.started.store(false, Ordering::Relaxed);
}

/// Stops and joins the scanner thread (domain drop).
pub(crate) fn stop_scanner(shared: &Shared) {
    let scan = &shared.scan;
    scan.shutdown.store(true, Ordering::SeqCst);
    // Pairs with the fence in `scanner_sleep`.
    atomic_fence(Ordering::SeqCst);
    let handle = scan.thread.lock().expect("not poisoned").take();
    if let Some(handle) = handle {
        scan.scanner_state.store(AWAKE, Ordering::SeqCst);
        futex_wake_all(&scan.scanner_state);
        // A scanner panic would already have been reported; the domain is
        // going away either way.
        let _ = handle.join();
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::{SLEEPING, begin, drive_once, read_slot, scanner_sleep};
    use crate::Domain;
    use crate::slot::is_older_wildcard;
    use crate::sync::{AtomicBool, AtomicPtr, AtomicUsize, Ordering};
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    /// How long a test that waits on another thread (the scanner's) may run
    /// before it counts as a hang and fails with a message instead of
    /// stalling the binary; it takes milliseconds alone, the margin is for
    /// CI's 2 busy cores (and for miri, whose clock counts 5 µs per
    /// interpreted basic block).
    const TEST_DEADLINE: Duration = Duration::from_secs(if cfg!(miri) { 600 } else { 30 });

    /// A scan flips the domain's wildcard generation before it reads a slot:
    /// a reader that loads the wildcard after the scan began stores one of
    /// the scan's own generation, which the scan skips instead of waiting
    /// for it to change (so that a stream of new readers cannot starve it).
    #[test]
    fn a_scan_skips_wildcards_stored_after_it_began() {
        let domain = Domain::new();
        // What a reader that arrived before the scan began stores: the scan
        // must wait that one out, so it must be older than the scan's own.
        let earlier = domain.shared.wildcard().load(Ordering::Acquire);
        let mine = begin(&domain.shared);
        assert!(
            is_older_wildcard(earlier, mine),
            "a reader that arrived before the scan began stores a wildcard ({earlier:#x}) not \
             older than the scan's ({mine:#x}): the scan did not flip the generation"
        );
        // What a reader arriving now stores (its Acquire load, as in
        // `Guard::protect_ptr`).
        let arriving = domain.shared.wildcard().load(Ordering::Acquire);
        assert!(
            !is_older_wildcard(arriving, mine),
            "a reader arriving after the scan began stores a wildcard ({arriving:#x}) older \
             than the scan's ({mine:#x}): the scan did not flip the generation"
        );
        // And the scan takes it as no protection, without waiting (were it
        // waited out, nothing would ever change this slot).
        let slot = AtomicUsize::new(arriving);
        assert_eq!(read_slot(&slot, mine), arriving);
    }

    /// Dropping a domain stops and joins its scanner thread, also one asleep
    /// (which only a wake gets out of its futex wait), and the thread then
    /// lets go of the domain's shared part: nothing of the domain is left
    /// behind, neither the thread nor its memory.
    #[test]
    fn dropping_a_domain_stops_its_scanner_thread() {
        // Under a deadline: a drop whose scanner thread never wakes to stop
        // would wait in the join forever.
        test_support::within_a_deadline(
            "dropping a domain with a scanner thread",
            TEST_DEADLINE,
            || {
                let domain = Domain::new();
                let object = Box::into_raw(Box::new(1u64));
                // Starts the scanner thread (this thread registers nowhere).
                domain.synchronize(object);
                assert!(domain.shared.scan.started.load(Ordering::Acquire));
                // Dropped once the scanner is asleep, as it is in a domain
                // idle for a while: the drop must wake it to stop (a scanner
                // still running would see the shutdown flag unwoken). Bounded,
                // so that a scanner that never sleeps fails here, not below.
                let asleep = Instant::now() + TEST_DEADLINE / 2;
                while domain.shared.scan.scanner_state.load(Ordering::SeqCst) != SLEEPING {
                    assert!(Instant::now() < asleep, "the idle scanner never slept");
                    std::thread::sleep(Duration::from_millis(1));
                }
                // From its SLEEPING store into the futex wait.
                std::thread::sleep(Duration::from_millis(20));
                let shared = Arc::downgrade(&domain.shared);
                drop(domain);
                assert!(
                    shared.upgrade().is_none(),
                    "the domain's shared part outlived its drop: its scanner thread still runs"
                );
                // SAFETY: never published.
                drop(unsafe { Box::from_raw(object) });
            },
        );
    }

    /// `before_fork` waits for a scan pass in progress (the domain's driver
    /// flag held) to finish before it returns, so that no pass is half done
    /// when the memory is copied, and `after_fork_parent` gives the flag
    /// back. Deterministic: the hooks can only take the flag after the store
    /// that says the pass is over; the sleep only gives hooks that do not
    /// wait the time to return early. (Catches `hold_driver` doing nothing:
    /// the hooks then return at once, and `after_fork_parent`'s release
    /// clears a flag that a running pass holds, so that a second driver can
    /// share that pass's buffers.)
    #[test]
    fn before_fork_waits_for_a_pass_in_progress() {
        test_support::within_a_deadline(
            "before_fork while a pass holds the driver flag",
            TEST_DEADLINE,
            || {
                let domain = Domain::new();
                let scan = &domain.shared.scan;
                // A pass in progress: taken as `drive_once` takes it.
                assert!(
                    scan.driver
                        .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
                        .is_ok()
                );
                let pass_over = AtomicBool::new(false);
                std::thread::scope(|s| {
                    let forker = s.spawn(|| {
                        crate::fork::before_fork();
                        let waited = pass_over.load(Ordering::SeqCst);
                        crate::fork::after_fork_parent();
                        waited
                    });
                    std::thread::sleep(Duration::from_millis(50));
                    pass_over.store(true, Ordering::SeqCst);
                    // The pass ends (Release, as in `drive_once`).
                    scan.driver.store(false, Ordering::Release);
                    assert!(
                        forker.join().expect("the hooks return"),
                        "before_fork returned while a scan pass held the driver flag"
                    );
                });
                assert!(
                    !scan.driver.load(Ordering::Acquire),
                    "after_fork_parent kept the driver flag"
                );
            },
        );
    }

    /// The scanner goes to sleep (without a timeout, where only a caller's
    /// wake gets it out) only if its last pass finds no queued and no
    /// pending waiter: a caller asleep while its waiter is pending (its
    /// address still protected) relies on the scanner to see the protection
    /// end. Here the test thread plays the scanner (no scanner thread runs).
    /// Deterministic: the caller is asleep with its waiter pending before the
    /// test's `scanner_sleep`. (Catches `scanner_sleep` sleeping after a pass
    /// that found work, `sleep && !shutdown` as `sleep || !shutdown`: the
    /// scanner then sleeps with the waiter pending, and the caller, asleep
    /// too, is never released.)
    #[test]
    fn the_scanner_does_not_sleep_while_a_waiter_is_pending() {
        test_support::within_a_deadline(
            "the scanner's sleep with a waiter pending",
            TEST_DEADLINE,
            || {
                let domain = Domain::new();
                let scan = &domain.shared.scan;
                // No scanner thread: `synchronize` queues for one that the
                // test thread plays.
                scan.started.store(true, Ordering::Release);
                let object = Box::into_raw(Box::new(3u64));
                let published = AtomicPtr::new(object);
                let mut guard = domain.guard();
                assert_eq!(guard.protect_ptr(&published), object);
                published.store(std::ptr::null_mut(), Ordering::Release);
                let addr = object as usize;
                std::thread::scope(|s| {
                    let caller = s.spawn(|| domain.synchronize(addr as *const u64));
                    // The caller counts itself a sleeper after its own passes
                    // found the hit (its waiter is pending).
                    while scan.sleepers.load(Ordering::SeqCst) == 0 {
                        std::thread::yield_now();
                    }
                    // Returns at once: the pass finds the waiter pending.
                    scanner_sleep(&domain.shared, None);
                    drop(guard);
                    // The scanner's next passes see the protection end and
                    // release the caller.
                    while !caller.is_finished() {
                        drive_once(&domain.shared);
                        std::thread::yield_now();
                    }
                    caller.join().expect("synchronize returns");
                });
                // SAFETY: unpublished and synchronized.
                drop(unsafe { Box::from_raw(object) });
            },
        );
    }

    /// An idle domain's scanner thread blocks in its futex wait instead of
    /// spinning: Linux reports it asleep (state `S` in `/proc`) on several
    /// reads in a row. (Catches `scanner_sleep` waiting only during
    /// shutdown, `!shutdown` as `shutdown`: the idle scanner then runs pass
    /// after pass forever, a CPU spent on nothing, though its state word
    /// reads SLEEPING now and then.)
    #[cfg(target_os = "linux")]
    #[cfg_attr(miri, ignore = "reads /proc, which miri's isolation hides")]
    #[test]
    fn an_idle_scanner_thread_blocks_instead_of_spinning() {
        // Under a deadline: the first `synchronize` waits for the scanner,
        // which never runs if a domain's driver flag stays held (as after a
        // fork hook of another test that keeps it).
        test_support::within_a_deadline("an idle scanner thread", TEST_DEADLINE, || {
            let domain = Domain::new();
            let object = Box::into_raw(Box::new(1u64));
            // Starts the scanner thread; nothing is left for it to do.
            domain.synchronize(object);
            test_support::until_asleep(
                &format!("hazptr-scan-{}", domain.shared.id),
                5,
                TEST_DEADLINE / 2,
                "the idle scanner thread never blocked",
            );
            drop(domain);
            // SAFETY: never published.
            drop(unsafe { Box::from_raw(object) });
        });
    }
}
