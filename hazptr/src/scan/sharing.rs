//! The shared scan: concurrent `synchronize` callers queue waiters on their
//! own stacks, and one driver serves them all with one pass (the RFC
//! series' shared scan, which the kernel runs in a kthread).
//!
//! # Invariants
//!
//! - A [`Waiter`] lives on its caller's stack from its push until its
//!   release (the SeqCst store of `DONE`); no driver touches it after that
//!   store, and its caller returns only after it.
//! - Exactly one thread drives at a time: whoever holds the domain's
//!   `driver` flag ([`drive_once`], `lone_scan_protected`, the fork hooks'
//!   `hold_driver`). The flag owns the driver's buffers; its Release store
//!   hands them, and everything the pass did, to the next holder's Acquire.
//! - A waiter is released only once no slot that held its address in its
//!   batch's pass still holds it: its hit count is 0.
//! - No sleeping caller is left without a driver: a caller wakes the
//!   scanner thread ([`scanner`](super::scanner)) before it sleeps.
//!
//! # One pass for many callers
//!
//! A caller queues a [`Waiter`] (no allocation) and then tries to drive the
//! scan itself: whoever takes the domain's `driver` flag ([`drive_once`])
//! takes every queued waiter at once, builds a [`Bloom`] filter of their
//! addresses, runs one scan, checks each protected address against the
//! filter and then exactly against the batch, and releases at once every
//! waiter whose address no slot holds. A caller that finds the scan busy
//! waits for its release: it spins briefly, drives the next batch itself if
//! the scan has become free by then, and otherwise sleeps on the domain's
//! `release_seq` futex. Before it sleeps it wakes the domain's scanner
//! thread (started lazily, one per domain), which from then on drives for
//! it; a sleep that ends at its time limit with no release pass meanwhile
//! lets the caller drive once more, in case the scanner cannot run. Callers
//! that arrive during a scan share the next one.
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
//! A caller's `sleepers` count against the release of its waiter is a
//! store-buffering (Dekker) pair: each side puts an `atomic_fence(SeqCst)`
//! (the atomic fence; `fence::heavy()` is the scan's membarrier) between
//! its store and its load. The accesses are SeqCst too, but loom checks
//! SeqCst accesses only as Acquire/Release, and SeqCst fences exactly: with
//! the fences, the models run the real scanner thread and a blocking model
//! of the futex (the `futex-word` crate's, which `sync.rs` re-exports), so
//! they cover the wake-up handshakes as well as the scan.

use super::scanner::{AWAKE, ensure_scanner, wake_scanner};
use super::{begin, for_each_slot, protects, read_slot, synchronize_alone};
use crate::bloom::Bloom;
use crate::domain::Shared;
use crate::sync::{
    AtomicBool, AtomicPtr, AtomicU32, AtomicUsize, JoinHandle, Mutex, Ordering, UnsafeCell,
    fence as atomic_fence, futex_wait, futex_wake_all, spin_loop,
};
use std::cell::Cell;
use std::ptr;
use std::sync::Arc;

/// Spins a waiter does before sleeping (a scan takes microseconds; on an
/// oversubscribed machine a spinning waiter only delays the driver).
const WAITER_SPINS: u32 = if cfg!(loom) { 0 } else { 8 };

/// The longest a waiter sleeps on `release_seq` before it looks at its
/// state again, after `quiet` sleeps that ended at their limit with no
/// release pass meanwhile: 10 ms, doubling with each up to 1.28 s.
///
/// Where the scanner thread cannot run, a quiet sleep lets the waiter drive
/// once more (`wait_for_release`), so the first bound is short: at
/// SCHED_FIFO a scanner of a lower priority than the waiter, kept off its
/// CPU, held the waiter up for as long as the CPU stayed busy (2.1 s, and
/// past 10 s, on a 2-vCPU guest, 2026-12-06; the waiter drove only before
/// its first sleep then). The doubling keeps a waiter that a long-held
/// guard holds up (the scanner watches that slot) from waking 100 times a
/// second; sleeps that other waiters' releases end do not double it.
///
/// A release always bumps the word and wakes, so otherwise the bound only
/// matters where the 32-bit word came back round to the value the waiter
/// read: 2^32 release passes (about an hour of back-to-back scans) between
/// its load and its futex call, with its own release among them. Without a
/// bound it would then sleep until the domain's next release, which an idle
/// domain never has. Unbounded under loom, whose model of a timed wait
/// yields instead of sleeping and would hide a lost wake-up.
fn release_recheck(quiet: u32) -> Option<std::time::Duration> {
    const FIRST: std::time::Duration = std::time::Duration::from_millis(10);
    (!cfg!(loom)).then(|| FIRST * (1 << quiet.min(7)))
}

// No yield phase: on a machine with more threads than CPUs, a yield hands
// the CPU to whatever else runs there, and a busy reader thread then keeps it
// for a whole time slice (rcuscale, 16 writers and 1 reader on 2 CPUs: per-GP
// time 3-4x worse with 32 yields before sleeping), while a woken sleeper is
// scheduled at once.

/// Waiter states.
const WAITING: u32 = 0;
const DONE: u32 = 1;

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

/// The shared-scan part of a domain, on cache lines of its own: every
/// `synchronize` writes the queue, each pass the driver flag, the release
/// count and the sleepers, and none of that may take from the readers the
/// line with the domain's id, which a user domain's every acquire reads
/// (`registration::block`).
#[repr(align(128))]
pub(crate) struct ScanState {
    /// Queued waiters (a Treiber stack of stack-allocated nodes).
    queue: AtomicPtr<Waiter>,
    /// `AWAKE` or `SLEEPING`: the futex word the scanner sleeps on.
    pub(super) scanner_state: AtomicU32,
    /// Bumped after each release of waiters: the futex word waiters sleep on.
    release_seq: AtomicU32,
    /// Waiters that are (about to be) asleep on `release_seq`.
    pub(super) sleepers: AtomicU32,
    /// Whoever drives the scan (a caller that finds it free, or the scanner
    /// thread; see [`drive_once`]) holds this.
    pub(super) driver: AtomicBool,
    /// Forking threads waiting for `driver` ([`hold_driver`]): while
    /// nonzero, nobody else takes it. Without it, callers took the flag
    /// back between passes faster than the fork's backoff looked: one
    /// caller calling `synchronize` in a loop held `before_fork` up 40 ms
    /// at the median, 16 of them 0.47 s (`fork_wait` example, see
    /// docs/hazptr.md). At most one thread counts at a
    /// time, and none at a fork: `before_fork` holds the registry of
    /// domains while it waits here, so a second forker waits for that
    /// registry until the first has called `after_fork_*`.
    fork_waiting: AtomicU32,
    /// Owned by whoever holds `driver`.
    buffers: UnsafeCell<Buffers>,
    /// Whether the scanner thread runs.
    pub(super) started: AtomicBool,
    /// Set when the domain is dropped: the scanner exits.
    pub(super) shutdown: AtomicBool,
    /// When (`retire::now_ms`, at least 1) the last try to spawn the scanner
    /// thread failed; 0 if none did. Callers scan alone until
    /// `SPAWN_RETRY_MS` later instead of trying again on every call.
    pub(super) spawn_failed_ms: AtomicU32,
    pub(crate) thread: Mutex<Option<JoinHandle<()>>>,
    /// Tests: makes every spawn of the scanner thread fail.
    #[cfg(test)]
    pub(super) fail_spawn: AtomicBool,
    /// Tests: tries to spawn the scanner thread so far.
    #[cfg(test)]
    pub(super) spawn_tries: AtomicU32,
    /// Tests: protected slots that passed the Bloom filter and were checked
    /// against every waiter of a batch.
    #[cfg(test)]
    pub(super) exact_checks: AtomicU32,
}

impl ScanState {
    pub(crate) fn new() -> Self {
        ScanState {
            queue: AtomicPtr::new(ptr::null_mut()),
            scanner_state: AtomicU32::new(AWAKE),
            release_seq: AtomicU32::new(0),
            sleepers: AtomicU32::new(0),
            driver: AtomicBool::new(false),
            fork_waiting: AtomicU32::new(0),
            buffers: UnsafeCell::new(Buffers {
                pending: Vec::with_capacity(64),
                cleared: Vec::with_capacity(64),
            }),
            started: AtomicBool::new(false),
            shutdown: AtomicBool::new(false),
            spawn_failed_ms: AtomicU32::new(0),
            thread: Mutex::new(None),
            #[cfg(test)]
            fail_spawn: AtomicBool::new(false),
            #[cfg(test)]
            spawn_tries: AtomicU32::new(0),
            #[cfg(test)]
            exact_checks: AtomicU32::new(0),
        }
    }
}

/// Queues a waiter for the scanner and waits for its release; a lone
/// caller scans alone first (see [`lone_scan_protected`]). The scanner
/// thread is started here, before the first waiter is queued: a domain
/// whose callers never meet (and never find their address protected) needs
/// none. If it cannot be started, the caller scans alone.
pub(super) fn synchronize_shared(shared: &Arc<Shared>, addr: usize) {
    let scan = &shared.scan;
    // Relaxed: hints only. Whatever they read, the caller's own scan below
    // (unshared mode's algorithm) or its queued waiter covers `addr`.
    if scan.queue.load(Ordering::Relaxed).is_null()
        && !scan.driver.load(Ordering::Relaxed)
        && !lone_scan_protected(shared, addr)
    {
        return;
    }
    // Before queuing: a queued waiter whose caller sleeps needs the scanner
    // (`wait_for_release` wakes it).
    if !ensure_scanner(shared) {
        synchronize_alone(shared, addr);
        return;
    }
    let waiter = Waiter {
        addr,
        state: AtomicU32::new(WAITING),
        next: Cell::new(ptr::null()),
        hits: Cell::new(0),
    };
    let me = ptr::from_ref(&waiter).cast_mut();
    // From the push on, drivers may write `waiter` until its release: an
    // unwind out of this frame before that would leave them writing a dead
    // stack frame. Nothing here unwinds (the heavy fence and the stall
    // warning abort or ignore their errors); this keeps it so.
    let queued = AbortIfUnwound(
        "hazptr: a panic inside Domain::synchronize while its waiter was queued: \
         aborting, as drivers may still write the waiter on this thread's stack",
    );
    // Relaxed: a first guess at the head; the CAS below re-checks it and
    // carries the ordering.
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
    std::mem::forget(queued);
}

/// Aborts the process with its message if dropped, which only an unwind
/// does: held while another thread may still write a node on this
/// thread's stack.
struct AbortIfUnwound(&'static str);

impl Drop for AbortIfUnwound {
    #[cold]
    fn drop(&mut self) {
        // Under loom a model reports what it found (a deadlock, a failed
        // assertion) by panicking on a blocked thread, often in here: let
        // it fail that model, not the whole test binary.
        if cfg!(loom) {
            return;
        }
        futex_word::stall::write_line(format_args!("{}", self.0));
        std::process::abort();
    }
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
    if fork_waits(scan)
        || scan
            .driver
            .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
    {
        return true;
    }
    let mine = begin(shared);
    let mut protected = false;
    for_each_slot(shared, |slot| {
        protected = protected || read_slot(shared, slot, mine) == addr;
    });
    // Release pairs with the Acquire CAS of the next driver.
    scan.driver.store(false, Ordering::Release);
    protected
}

/// Spins, drives the scan once if it is free, then sleeps on `release_seq`
/// with the scanner thread awake, until `waiter` is released. A sleep that
/// ends at its time limit with no release pass meanwhile (`release_seq`
/// unchanged) lets it drive once more: the scanner thread may be unable to
/// run. It inherits the scheduling policy, priority and CPUs of the thread
/// that started it, so at SCHED_FIFO a lower-priority scanner waits for as
/// long as any thread of its priority or above keeps its CPU busy; the
/// waiter's own pass then releases it within a bound that starts at 10 ms
/// (`release_recheck`), where it waited without bound. (Not a pass in
/// progress: a lower-priority thread kept off its CPU while it holds the
/// driver flag holds every waiter up, as a lock holder would.)
// Under loom `WAITER_SPINS` is 0 (smaller models): the spin branch is meant
// to be dead there.
#[cfg_attr(loom, allow(clippy::absurd_extreme_comparisons))]
fn wait_for_release(shared: &Shared, waiter: &Waiter) {
    let scan = &shared.scan;
    let mut spins = 0;
    let mut tried_driving = false;
    let mut watch = futex_word::stall::Watch::new();
    let mut sleeps = 0u32;
    // Sleeps that ended with no release pass: `release_recheck`'s exponent.
    let mut quiet = 0u32;
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
        // SeqCst, as the bump in `wake_released`: read before the re-check
        // below, so a release that the re-check misses bumps it after this
        // load, and the futex wait then returns at once.
        let seq = scan.release_seq.load(Ordering::SeqCst);
        // SeqCst (Dekker with `wake_released`): either this re-check sees DONE,
        // or the scanner's `sleepers` load sees us and wakes; and if its bump
        // of `release_seq` came first, the futex wait returns at once.
        scan.sleepers.fetch_add(1, Ordering::SeqCst);
        // Pairs with the fence in `wake_released`.
        atomic_fence(Ordering::SeqCst);
        if waiter.state.load(Ordering::SeqCst) != DONE {
            // From the second sleep on, no longer than until a stall
            // warning is due (the first reads no clock: see below).
            let limit = if sleeps == 0 {
                release_recheck(quiet)
            } else {
                match (release_recheck(quiet), watch.sleep_limit()) {
                    (Some(a), Some(b)) => Some(a.min(b)),
                    (a, b) => a.or(b),
                }
            };
            futex_wait(&scan.release_seq, seq, limit);
            // Relaxed: a hint, as the driver-flag look above; `drive_once`
            // orders what the pass reads. A sleep with no release pass
            // meanwhile ended at its limit (or spuriously: under loom, whose
            // waits are untimed, that is how the models reach this).
            if scan.release_seq.load(Ordering::Relaxed) == seq {
                tried_driving = false;
                quiet = quiet.saturating_add(1);
            }
        }
        // SeqCst, as the increment; a driver that still counts us only
        // wakes the futex once more.
        scan.sleepers.fetch_sub(1, Ordering::SeqCst);
        // After a second sleep (the first one's release usually wakes the
        // waiter, and the common call reads no clock): a stall warning,
        // counted from the second sleep on (never due under loom).
        sleeps = sleeps.saturating_add(1);
        if sleeps > 1 {
            super::warn_if_due(&mut watch, || {
                let holders = super::holders_of(shared, waiter.addr);
                let why = if holders.is_empty() {
                    "no guard protects that address now: the scan itself is held up, by a \
                     reader stopped inside its acquire (see any other stall line) or by the \
                     thread driving it, kept off its CPU (an overloaded machine, or a CPU \
                     quota throttling the process)"
                        .to_owned()
                } else {
                    format!(
                        "a guard of {} protects that address",
                        super::threads(&holders)
                    )
                };
                format!(
                    "synchronize({:#x}), waiting for the shared scan to release it ({why}; this \
                     wait is counted from its second sleep, up to 10 ms after it began)",
                    waiter.addr
                )
            });
        }
    }
}

/// Marks `waiter` released. The waiter may return (and its stack frame
/// vanish) right after this store, so nothing touches it afterwards.
///
/// # Safety
///
/// `waiter` is queued and not yet released.
unsafe fn release(waiter: *const Waiter) {
    // SAFETY: still queued, so still alive (per the contract) when the
    // reference is made and when the store begins. The store itself may
    // release the waiter's thread, which may pop the frame before `store`
    // returns: the pattern of rust-lang/rust#55005 (a `&` argument whose
    // memory is freed during the call), which std's `Arc::drop` shares. It
    // is sound as long as nothing reads or writes through `w` after the
    // atomic write itself, which is all `AtomicU32::store` does.
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
    /// Someone else is driving, or a fork waits for the driver flag
    /// ([`hold_driver`]).
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
    if fork_waits(scan)
        || scan
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
            let value = read_slot(shared, slot, mine);
            if protects(value) && bloom.may_contain(value) {
                // Relaxed: a test's count, read after the pass.
                #[cfg(test)]
                scan.exact_checks.fetch_add(1, Ordering::Relaxed);
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

/// Whether a fork waits for the driver flag ([`hold_driver`]): callers and
/// the scanner then leave the flag alone, as if a pass held it. Relaxed: a
/// hint for the fork's liveness, ordering nothing (the flag's own CAS does);
/// a look that misses it takes the flag for one pass, which ends.
#[inline]
fn fork_waits(scan: &ScanState) -> bool {
    scan.fork_waiting.load(Ordering::Relaxed) != 0
}

/// Takes the driver flag, waiting for a pass in progress to finish (the fork
/// hooks: no pass is half done when the memory is copied); meanwhile nobody
/// else starts one ([`fork_waits`]). A pass never waits for long with the
/// flag held (only for readers in their wildcard window).
pub(crate) fn hold_driver(shared: &Shared) {
    let scan = &shared.scan;
    // Relaxed: see `fork_waits`.
    scan.fork_waiting.fetch_add(1, Ordering::Relaxed);
    let mut backoff = crate::sync::Backoff::new();
    // Acquire: as in `drive_once`; the previous driver's buffer writes are
    // visible to `reset_after_fork`.
    while scan
        .driver
        .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
        .is_err()
    {
        // Backs off into sleeps: the pass may wait for a preempted reader,
        // and a yield-only wait would keep it from running at SCHED_FIFO.
        backoff.snooze();
    }
    // Relaxed: as the increment. Held now: the others find the flag taken.
    scan.fork_waiting.fetch_sub(1, Ordering::Relaxed);
}

/// Gives back the flag [`hold_driver`] took.
pub(crate) fn release_driver(shared: &Shared) {
    // Release pairs with the Acquire CAS in `drive_once`.
    shared.scan.driver.store(false, Ordering::Release);
}

/// Under loom: what the fork hooks do to the shared scan of a domain
/// (`hold_driver`, then `release_driver`), with a look at the driver's
/// buffers in between, as `reset_after_fork` takes in a child: loom reports
/// the look if a pass's accesses are not ordered before it.
#[cfg(loom)]
pub(crate) fn loom_fork_window(shared: &Shared) {
    hold_driver(shared);
    shared.scan.buffers.with_mut(|buffers| {
        // SAFETY: the driver flag, held, owns the buffers.
        let buffers = unsafe { &mut *buffers };
        let _ = buffers.pending.len() + buffers.cleared.len();
    });
    release_driver(shared);
}

/// In a fork child, with the driver flag held ([`hold_driver`]) and the
/// scanner-thread handle locked (`thread`): forgets every queued and pending
/// waiter and the scanner thread. The forking thread waits for nothing (it is
/// in the fork hooks), so every waiter belongs to a thread that did not come
/// along; the child never touches them again, since their stacks may be
/// handed to the child's new threads. The child's first `synchronize` that
/// queues starts a new scanner thread, even if the parent's last spawn
/// failed less than `SPAWN_RETRY_MS` before the fork.
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
    scan.spawn_failed_ms.store(0, Ordering::Relaxed);
    // `fork_waiting` needs no reset: it is 0 at every fork (see its field).
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::{Progress, drive_locked};
    use crate::Domain;
    use crate::sync::{AtomicBool, Ordering};
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    /// As in the scanner's tests: a hang fails with a message instead of
    /// stalling the binary.
    const TEST_DEADLINE: Duration = Duration::from_secs(if cfg!(miri) { 600 } else { 30 });

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
                let _alone = crate::scan::tests::no_fork_hooks_meanwhile();
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

    /// While a fork waits for the driver flag, nobody else takes it: a
    /// caller's lone scan and `drive_once` find it as if a pass held it,
    /// though it is free, and take it again once the count is back to 0.
    /// And the hooks leave the count at 0. (Without the count, callers took
    /// the flag back between passes faster than the fork's backoff looked:
    /// `before_fork` beside 16 callers in a loop waited up to 2.3 s.)
    #[test]
    fn while_a_fork_waits_nobody_else_takes_the_driver_flag() {
        let _alone = crate::scan::tests::no_fork_hooks_meanwhile();
        let domain = Domain::new();
        let scan = &domain.shared.scan;
        // Marked started so that no scanner thread takes the flag meanwhile
        // (Release, as `start_scanner` stores it).
        scan.started.store(true, Ordering::Release);
        // Relaxed, as in `hold_driver`: this thread's own count, read back
        // by this thread.
        scan.fork_waiting.fetch_add(1, Ordering::Relaxed);
        assert_eq!(super::drive_once(&domain.shared), Progress::Busy);
        assert!(
            super::lone_scan_protected(&domain.shared, 0x1000),
            "a lone scan took the flag a fork waits for"
        );
        assert!(!scan.driver.load(Ordering::Acquire), "the flag was taken");
        scan.fork_waiting.fetch_sub(1, Ordering::Relaxed);
        assert_eq!(super::drive_once(&domain.shared), Progress::Idle);
        assert!(!super::lone_scan_protected(&domain.shared, 0x1000));
        crate::fork::before_fork();
        crate::fork::after_fork_parent();
        assert_eq!(scan.fork_waiting.load(Ordering::Relaxed), 0);
    }

    /// A waiter whose scanner thread never runs is released by a pass of its
    /// own once a timed sleep ends with no release pass meanwhile: here the
    /// scanner is marked started with no thread (as one that higher-priority
    /// threads keep off its CPU), the caller's address is protected when it
    /// queues, so its first passes leave it pending, and the guard is
    /// dropped once it sleeps. It returns when its first timed sleep ends
    /// (`release_recheck`: 10 ms). (Catches a waiter that drives only before
    /// its first sleep: it sleeps on, and the deadline fails the test.)
    #[test]
    fn a_waiter_drives_again_when_its_sleep_ends_with_no_release() {
        test_support::within_a_deadline(
            "a waiter whose scanner thread never runs",
            TEST_DEADLINE,
            || {
                let _alone = crate::scan::tests::no_fork_hooks_meanwhile();
                let domain = Arc::new(Domain::new());
                let scan = &domain.shared.scan;
                // Release, as `start_scanner` stores it: no scanner starts.
                scan.started.store(true, Ordering::Release);
                let object = Box::new(7u64);
                let addr = std::ptr::from_ref::<u64>(&object) as usize;
                let published = std::sync::atomic::AtomicPtr::new(addr as *mut u64);
                let mut guard = domain.guard();
                assert_eq!(guard.protect_ptr(&published) as usize, addr);
                let caller = {
                    let domain = Arc::clone(&domain);
                    std::thread::spawn(move || domain.synchronize(addr as *const u64))
                };
                // SeqCst, as the caller's increment before it sleeps.
                while scan.sleepers.load(Ordering::SeqCst) == 0 {
                    std::thread::yield_now();
                }
                drop(guard);
                caller.join().unwrap();
            },
        );
    }

    /// Marks the scanner thread started, so that none starts and only the
    /// test thread drives (as in the scanner's tests), and takes the driver
    /// flag as `drive_once` takes it: a pass in progress, which the test
    /// runs itself with `drive_locked`.
    fn pass_in_progress_without_scanner(scan: &super::ScanState) {
        // Release, as `start_scanner` stores it.
        scan.started.store(true, Ordering::Release);
        assert!(
            scan.driver
                .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
        );
    }

    /// A pass screens every protected slot with the Bloom filter of its
    /// batch's addresses before it checks the slot against each waiter: a
    /// slot whose value the filter rejects costs no walk of the batch.
    /// (Catches a filter that lets every value through: the pass then
    /// checks each of the protected slots exactly.)
    #[test]
    fn the_bloom_filter_screens_slots_before_the_exact_check() {
        test_support::within_a_deadline("a pass over screened slots", TEST_DEADLINE, || {
            let _alone = crate::scan::tests::no_fork_hooks_meanwhile();
            let domain = Arc::new(Domain::new());
            let scan = &domain.shared.scan;
            pass_in_progress_without_scanner(scan);
            // The waiter's object, never published nor protected.
            let waited = Box::new(0u64);
            let addr = std::ptr::from_ref::<u64>(&waited) as usize;
            let mut filter = crate::bloom::Bloom::new();
            filter.insert(addr);
            // Objects the filter rejects (kept, with the ones it lets
            // through, so that no address comes back), each protected.
            let mut kept = Vec::new();
            let mut rejected = Vec::new();
            while rejected.len() < 3 {
                let object = Box::into_raw(Box::new(1u64));
                if filter.may_contain(object as usize) {
                    kept.push(object);
                } else {
                    rejected.push(std::sync::atomic::AtomicPtr::new(object));
                }
            }
            let guards: Vec<_> = rejected
                .iter()
                .map(|src| {
                    let mut guard = domain.guard();
                    let _ = guard.protect_ptr(src);
                    guard
                })
                .collect();
            let caller = {
                let domain = Arc::clone(&domain);
                std::thread::spawn(move || domain.synchronize(addr as *const u64))
            };
            // SeqCst, as the callers' increments.
            while scan.sleepers.load(Ordering::SeqCst) < 1 {
                std::thread::yield_now();
            }
            let progress = scan.buffers.with_mut(|buffers| {
                // SAFETY: this thread holds the driver flag, which owns the
                // buffers.
                let buffers = unsafe { &mut *buffers };
                drive_locked(&domain.shared, buffers)
            });
            assert_eq!(progress, Progress::Worked);
            // Relaxed: written by this thread's pass.
            assert_eq!(
                scan.exact_checks.load(Ordering::Relaxed),
                0,
                "slots the filter rejects were checked against the waiters"
            );
            caller.join().expect("the released caller returns");
            // Release, as `drive_once` gives the flag back.
            scan.driver.store(false, Ordering::Release);
            drop(guards);
            for object in kept
                .into_iter()
                .chain(rejected.iter().map(|src| src.load(Ordering::Relaxed)))
            {
                // SAFETY: from `Box::into_raw` above; no guard is left.
                drop(unsafe { Box::from_raw(object) });
            }
        });
    }

    /// Callers that queue while a pass runs are all served by the next pass:
    /// it takes every queued waiter, runs one scan (one flip of the wildcard
    /// generation) and releases each waiter whose address no slot holds. The test
    /// thread holds the driver flag (a pass in progress, taken as
    /// `drive_once` takes it) while `CALLERS` threads queue and go to sleep,
    /// then runs one pass under that flag: no caller can drive or scan alone
    /// meanwhile, so one that the pass leaves behind stays asleep, and the
    /// count of callers that returned is exact. (Catches a pass that takes
    /// only the queue's first waiter or leaves the last one queued, a release
    /// walk that stops a waiter short, and a pass that scans more than once,
    /// per waiter or with a flip done twice.)
    #[test]
    fn callers_queued_during_a_pass_are_all_served_by_the_next_one() {
        const CALLERS: u32 = 6;
        test_support::within_a_deadline(
            "callers queued behind a pass in progress",
            TEST_DEADLINE,
            || {
                // Another test's fork hooks would take the driver flag.
                let _alone = crate::scan::tests::no_fork_hooks_meanwhile();
                // In an `Arc`, and the callers not scoped: if this test fails,
                // it fails with its message, leaving the callers a pass left
                // behind asleep instead of joining them forever.
                let domain = Arc::new(Domain::new());
                let scan = &domain.shared.scan;
                pass_in_progress_without_scanner(scan);
                // One address per caller, never published: no slot holds any.
                let objects: Vec<Box<u64>> = (0..u64::from(CALLERS)).map(Box::new).collect();
                let callers: Vec<_> = objects
                    .iter()
                    .map(|object| {
                        let addr = std::ptr::from_ref::<u64>(object) as usize;
                        let domain = Arc::clone(&domain);
                        std::thread::spawn(move || domain.synchronize(addr as *const u64))
                    })
                    .collect();
                // A caller counts itself a sleeper only after its push (it
                // found the flag taken, so it queued without scanning).
                // SeqCst, as the callers' increments.
                while scan.sleepers.load(Ordering::SeqCst) < CALLERS {
                    std::thread::yield_now();
                }
                // Acquire, as a reader loads it; only the pass below flips it
                // (no other scan of this domain runs: the flag is held and
                // nothing is retired to it).
                let generation_before = domain.shared.wildcard().load(Ordering::Acquire);
                // One pass, what `drive_once` runs under the flag.
                let progress = scan.buffers.with_mut(|buffers| {
                    // SAFETY: this thread holds the driver flag, which owns
                    // the buffers.
                    let buffers = unsafe { &mut *buffers };
                    drive_locked(&domain.shared, buffers)
                });
                assert_eq!(progress, Progress::Worked);
                let generation_after = domain.shared.wildcard().load(Ordering::Acquire);
                let moved = generation_after.wrapping_sub(generation_before);
                assert_eq!(
                    moved, 2,
                    "one pass for {CALLERS} queued callers moved the wildcard generation by \
                     {moved}, not by one flip (2)"
                );
                // A released caller returns; one left behind wakes with the
                // others and sleeps again (the flag is still held).
                let given_up = Instant::now() + TEST_DEADLINE / 2;
                while callers.iter().any(|c| !c.is_finished()) && Instant::now() < given_up {
                    std::thread::sleep(Duration::from_millis(1));
                }
                let released = callers.iter().filter(|c| c.is_finished()).count();
                assert_eq!(
                    released, CALLERS as usize,
                    "one pass released {released} of {CALLERS} queued callers"
                );
                // Relaxed: the queue is read only for this check, by the
                // thread that holds the flag and ran the pass.
                assert!(
                    scan.queue.load(Ordering::Relaxed).is_null(),
                    "the pass left waiters queued"
                );
                // The pass is over (Release, as in `drive_once`).
                scan.driver.store(false, Ordering::Release);
                for caller in callers {
                    caller.join().expect("synchronize returns");
                }
                drop(objects);
            },
        );
    }
}
