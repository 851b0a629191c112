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
//! The generation is an unbounded counter, flipped without a lock and
//! compared by the sign of the wrapping difference (see `slot`), so
//! unshared scans run in parallel. The kernel's flipping wildcard takes two
//! values, 1 and 2, and `hazptr_synchronize()` runs its scan periods and
//! the flip between them under one global mutex (`hazptr_wildcard_lock`),
//! so there concurrent callers are serialised; other kernel versions use
//! one constant wildcard. The counter's price is a wrap on 32-bit targets
//! (see `docs/hazptr.md`, *Limits*).
//!
//! # Sharing the scan
//!
//! With sharing off, each caller runs [`begin`] and the walk itself
//! (`synchronize_alone`). In shared mode (the default) concurrent callers
//! share one pass: [`sharing`] queues their waiters and drives the passes,
//! and [`scanner`] runs the domain's scanner thread, which drives for the
//! callers that sleep.

mod scanner;
mod sharing;

pub(crate) use scanner::stop_scanner;
pub(crate) use sharing::ScanState;
#[cfg(loom)]
pub(crate) use sharing::loom_fork_window;
#[cfg(not(loom))]
pub(crate) use sharing::{hold_driver, release_driver, reset_after_fork};

use crate::domain::{Domain, Shared};
use crate::registration::thread_holds;
use crate::slot::{EMPTY, RESERVED, is_older_wildcard, is_wildcard};
use crate::sync::{AtomicUsize, Backoff, Ordering};
use membarrier_sim::fence;
use sharing::synchronize_shared;

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

/// After a step of `backoff` in a wait for other threads' guards: once the
/// wait has come to sleeping, warns on stderr if it has lasted the stall
/// timeout (`futex_word::stall`: 21 s unless `SYNCPRIMS_STALL_TIMEOUT_S`
/// says otherwise; again every three timeouts), with `what` it waits for.
/// A guard leaked with `mem::forget`, or held by a thread that never goes
/// on, is otherwise a silent hang. Reads the clock only in the sleeping
/// steps.
#[inline]
pub(crate) fn warn_if_stalled(
    backoff: &crate::sync::Backoff,
    watch: &mut futex_word::stall::Watch,
    what: impl FnOnce() -> String,
) {
    if backoff.is_sleeping() {
        warn_if_due(watch, what);
    }
}

/// The warning of [`warn_if_stalled`], for a wait that has just slept.
/// Through `write_line`: not `eprintln!`, which panics when stderr cannot be
/// written (a closed pipe), and a panic here would unwind out of a wait whose
/// queued waiter or driver flag other threads still use; nor std's stderr
/// lock, which a thread waiting for that driver may hold.
#[cold]
pub(crate) fn warn_if_due(watch: &mut futex_word::stall::Watch, what: impl FnOnce() -> String) {
    if let Some(waited) = watch.due() {
        futex_word::stall::write_line(format_args!(
            "hazptr: stall: {} has waited {:.1} s; it goes on waiting",
            what(),
            waited.as_secs_f64()
        ));
    }
}

/// Slot reads that found an older generation's wildcard and waited it out
/// (tests only: `guard.rs`'s test of SeqCst mode).
#[cfg(test)]
pub(crate) static OLDER_WILDCARD_WAITS: std::sync::atomic::AtomicUsize =
    std::sync::atomic::AtomicUsize::new(0);

/// Reads `slot`, one of `shared`'s, for a scan that began with wildcard
/// `mine`, waiting out wildcards of older generations. Returns the value:
/// empty, a newer wildcard, or an address.
#[inline]
pub(crate) fn read_slot(shared: &Shared, slot: &AtomicUsize, mine: usize) -> usize {
    // Acquire pairs with the Release store that ended the protection
    // (`Drop for Guard`, `Guard::reset`, `promote`), or a later one into the
    // slot (see `guard.rs`): what the reader did under protection happens
    // before what the scan's caller does next (free the object).
    let mut value = slot.load(Ordering::Acquire);
    if is_wildcard(value) && is_older_wildcard(value, mine) {
        // Relaxed: a test's count, read by the same thread once its scan
        // has returned.
        #[cfg(test)]
        OLDER_WILDCARD_WAITS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let mut backoff = Backoff::new();
        let mut watch = futex_word::stall::Watch::new();
        while is_wildcard(value) && is_older_wildcard(value, mine) {
            backoff.snooze();
            warn_if_stalled(&backoff, &mut watch, || {
                format!(
                    "a scan (a synchronize or reclamation pass) waiting for a reader inside its \
                     acquire, between its wildcard and its pointer store (slot {slot:p}, held \
                     by {}: a thread stopped by a debugger or SIGSTOP, or kept off its CPU)",
                    threads(&holder_of_slot(shared, slot).into_iter().collect::<Vec<_>>())
                )
            });
            // Acquire: as above.
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

/// For a stall warning: the kernel ids of the threads whose slots protect
/// `addr` now (a walk of every slot, Relaxed: what it finds may be a moment
/// stale), each once. An id is 0 only for a slot freed meanwhile.
#[cold]
pub(crate) fn holders_of(shared: &Shared, addr: usize) -> Vec<i32> {
    let mut ids = Vec::new();
    // Relaxed: a diagnostic; no access depends on what it reads.
    shared.for_each_block(|b| {
        if b.hot
            .slots
            .iter()
            .any(|s| s.load(Ordering::Relaxed) == addr)
        {
            ids.push(b.link.owner.os_id());
        }
    });
    shared.for_each_backup(|n| {
        if n.value.load(Ordering::Relaxed) == addr {
            ids.push(n.owner.os_id());
        }
    });
    // A thread with nested guards of the address, in its block and in a
    // backup slot, is named once.
    ids.sort_unstable();
    ids.dedup();
    ids
}

/// For a stall warning: the kernel id of the thread holding `slot`, one of
/// `shared`'s (its block's owner, or its backup slot's).
#[cold]
fn holder_of_slot(shared: &Shared, slot: &AtomicUsize) -> Option<i32> {
    let mut id = None;
    shared.for_each_block(|b| {
        if b.hot.slots.iter().any(|s| std::ptr::eq(s, slot)) {
            id = Some(b.link.owner.os_id());
        }
    });
    shared.for_each_backup(|n| {
        if std::ptr::eq(&n.value, slot) {
            id = Some(n.owner.os_id());
        }
    });
    id
}

/// Kernel thread ids as a stall warning names them: "thread 4242", "threads
/// 4242, 4243", "a thread whose id is unknown" for 0 (or none found). An
/// id that is no longer one of this process's threads is marked
/// "(exited)": the guard of a thread that exited (one forgotten, or kept
/// in a thread-local destroyed later) holds on, and the kernel may give
/// its id to another thread. (A thread that exited a moment ago may still
/// be listed there.)
pub(crate) fn threads(ids: &[i32]) -> String {
    let known: Vec<String> = ids
        .iter()
        .filter(|&&id| id != 0)
        .map(|&id| futex_word::stall::thread_id_text(id))
        .collect();
    match known.len() {
        0 => "a thread whose id is unknown".to_owned(),
        1 => format!("thread {}", known[0]),
        _ => format!("threads {}", known.join(", ")),
    }
}

impl Domain {
    /// Waits until no protection of `addr` that began before this call is
    /// still held (the kernel's `hazptr_synchronize()`). Only this domain's
    /// guards count: a guard of another domain protecting `addr` is not
    /// waited for.
    ///
    /// The caller must already have unpublished `addr` (made it unreachable
    /// for new readers); afterwards it may free the object. Concurrent callers
    /// share one scan unless the domain was built with
    /// [`shared_scan(false)`](crate::DomainBuilder::shared_scan). A marked
    /// `addr` (low bit set) stands for the object it marks, as in a guard. A
    /// call allocates nothing, unless it prints a stall warning (the
    /// scanner thread is started by the first call that has to queue, one
    /// that meets another caller's scan or a protection of its address; the
    /// driver's lists of slot hits, with room for 64 to start, grow only
    /// when more hits are pending at once than ever before, and keep that
    /// room). A domain whose calls never meet
    /// starts no thread. If the scanner thread cannot be spawned, callers
    /// scan alone, and one tries the spawn again a second later.
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
    /// thread still protects in its block (the check finds the thread's
    /// block through that state; see `docs/hazptr.md`, *Misuse that
    /// panics*). A guard taken there, on a backup slot, is caught. Nor are
    /// waits through another primitive: a caller holding a lock that the
    /// guard's holder is waiting for, or waiting inside an RCU read-side
    /// section while that holder waits for a grace period, hangs.
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
        // Under loom the scanner starts at the first call, as it did before
        // it started lazily, so that the models run it beside every caller:
        // with it idle, a lone caller's walk (correct in itself) decides
        // most executions before any pass of the shared scan can go wrong
        // (the models stopped catching a driver's pass that skipped the
        // wildcard wait).
        if shared.options.shared_scan {
            #[cfg(loom)]
            scanner::ensure_scanner(shared);
            synchronize_shared(shared, addr);
        } else {
            synchronize_alone(shared, addr);
        }
    }

    /// Starts the domain's scanner thread now, unless it runs already; true
    /// if it runs. Otherwise the first [`synchronize`](Domain::synchronize)
    /// caller that has to queue starts it and pays for the spawn (tens of
    /// microseconds) inside its wait: a program that wants no such outlier,
    /// or a benchmark that times its first waits, starts it up front. False
    /// for a domain built with
    /// [`shared_scan(false)`](crate::DomainBuilder::shared_scan), which has
    /// no scanner, or if the thread cannot be spawned (a later call tries
    /// again a second later at the earliest).
    ///
    /// The thread (named `hazptr-scan-ID`, the [`id`](Domain::id)) gets the
    /// scheduling policy, priority and allowed CPUs of the thread that
    /// starts it, here or in a queued `synchronize`, and its cgroup and
    /// seccomp filter (a sandbox put on that thread alone passes on to the
    /// scanner: one that refuses `membarrier` makes the scanner's first heavy
    /// fence abort the process); not its signal mask (the scanner blocks every signal sent
    /// to the process, all but the faults) nor its timer slack (the
    /// scanner's is the kernel's default, 50 us). A program with
    /// real-time (`SCHED_FIFO`, `SCHED_RR`) callers starts it from a thread
    /// at the priority of its highest-priority caller: a scanner below a
    /// caller's priority, kept off its CPU by busy threads at or above its
    /// own, leaves that caller to drive its own passes, in timed sleeps of
    /// 10 ms and more, doubling (see docs/hazptr.md, *Limits*).
    ///
    /// ```
    /// let domain = hazptr::Domain::new();
    /// assert!(domain.start_scanner());
    /// let unshared = hazptr::Domain::builder().shared_scan(false).build();
    /// assert!(!unshared.start_scanner());
    /// ```
    ///
    /// # Panics
    ///
    /// Between the calling thread's [`before_fork`](crate::fork::before_fork)
    /// and `after_fork_*`, whose hooks hold the lock it takes.
    pub fn start_scanner(&self) -> bool {
        crate::refuse_between_hooks("Domain::start_scanner");
        self.shared.options.shared_scan && scanner::ensure_scanner(&self.shared)
    }
}

/// What a `synchronize` held up by a guard waits for, for its stall warning:
/// names the threads whose guards protect `addr` (the kernel's thread ids,
/// as `top -H` or a debugger's thread list shows them).
#[cold]
pub(crate) fn held_up(shared: &Shared, addr: usize) -> String {
    format!(
        "synchronize({addr:#x}), waiting for a guard of another thread that protects that \
         address (held by {}: a guard leaked with mem::forget, one held across a wait that \
         does not end, or a holder kept off its CPU by an overloaded machine or a CPU quota \
         throttling the process)",
        threads(&holders_of(shared, addr))
    )
}

#[cold]
#[inline(never)]
fn synchronize_while_holding(addr: usize) -> ! {
    panic!(
        "hazptr: synchronize({addr:#x}) called while this thread holds a guard protecting \
         that address; it would wait for itself forever (drop or reset the guard first; a \
         guard protects the address it last loaded until then, even once that object is gone \
         and its address reused)"
    )
}

/// One caller, one scan.
pub(super) fn synchronize_alone(shared: &Shared, addr: usize) {
    let mine = begin(shared);
    // One watch for the call: guards that hold it up in turn, each for less
    // than the timeout, add up.
    let mut watch = futex_word::stall::Watch::new();
    for_each_slot(shared, |slot| {
        let mut value = read_slot(shared, slot, mine);
        if value == addr {
            let mut backoff = Backoff::new();
            while value == addr {
                backoff.snooze();
                warn_if_stalled(&backoff, &mut watch, || held_up(shared, addr));
                // Acquire: as in `read_slot`.
                value = slot.load(Ordering::Acquire);
            }
        }
    });
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::{begin, holders_of, read_slot, threads};
    use crate::Domain;
    use crate::slot::is_older_wildcard;
    use crate::sync::{AtomicUsize, Ordering};
    use std::sync::{Mutex, MutexGuard, PoisonError};

    /// Held by the tests that call the fork hooks and by those that check
    /// that a dropped domain's shared part is gone: from `before_fork` to
    /// `after_fork_parent` the hooks hold every live domain (an `Arc` of its
    /// shared part) and its scanner-thread handle, so a domain dropped
    /// meanwhile by a test running beside them outlives its drop for that
    /// long (once in 8 runs under `scripts/stress-tests.sh`).
    static FORK_HOOKS: Mutex<()> = Mutex::new(());

    /// Keeps the fork hooks of other tests in this binary out until dropped.
    pub(super) fn no_fork_hooks_meanwhile() -> MutexGuard<'static, ()> {
        // A test that panicked holding it left nothing to undo.
        FORK_HOOKS.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// With sharing off every caller scans alone: each of several callers
    /// flips the generation once, none queues, and no scanner thread
    /// starts, even while another pass holds the driver flag (a shared-scan
    /// caller would queue behind it and sleep until it ended).
    #[test]
    fn unshared_callers_each_scan_alone() {
        const CALLERS: usize = 4;
        let _alone = no_fork_hooks_meanwhile();
        let domain = std::sync::Arc::new(Domain::builder().shared_scan(false).build());
        let scan = &domain.shared.scan;
        // A pass in progress, as `drive_once` takes it.
        assert!(
            scan.driver
                .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
        );
        // Acquire, as a reader loads it; only the callers below flip it.
        let before = domain.shared.wildcard().load(Ordering::Acquire);
        let callers: Vec<_> = (0..CALLERS)
            .map(|i| {
                let domain = std::sync::Arc::clone(&domain);
                std::thread::spawn(move || {
                    // An address no slot holds.
                    let object = Box::new(i);
                    domain.synchronize(&raw const *object);
                })
            })
            .collect();
        let (done_tx, done_rx) = std::sync::mpsc::channel();
        test_support::within_a_deadline(
            "unshared callers while the driver flag is held",
            std::time::Duration::from_secs(if cfg!(miri) { 600 } else { 30 }),
            move || {
                for caller in callers {
                    caller.join().unwrap();
                }
                done_tx.send(()).unwrap();
            },
        );
        done_rx.recv().unwrap();
        // Acquire, as above; the joins ordered the callers' flips before it.
        let moved = domain
            .shared
            .wildcard()
            .load(Ordering::Acquire)
            .wrapping_sub(before);
        assert_eq!(
            moved,
            2 * CALLERS,
            "{CALLERS} unshared calls made {moved} / 2 flips"
        );
        // SeqCst and Acquire, as the callers and `start_scanner` use them.
        assert_eq!(scan.sleepers.load(Ordering::SeqCst), 0);
        assert!(
            !scan.started.load(Ordering::Acquire),
            "a scanner thread started"
        );
        // Release: as `drive_once` gives the flag back.
        scan.driver.store(false, Ordering::Release);
    }

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
        // waited out, nothing would ever change this slot: under a deadline,
        // so that such a regression fails instead of hanging the binary).
        test_support::within_a_deadline(
            "read_slot of a wildcard stored after the scan began",
            std::time::Duration::from_secs(if cfg!(miri) { 600 } else { 30 }),
            move || {
                let slot = AtomicUsize::new(arriving);
                // Any domain: `read_slot` reads it only for a stall warning.
                assert_eq!(read_slot(&Domain::new().shared, &slot, mine), arriving);
            },
        );
    }

    /// A stall warning names a live thread by its id, marks one that has
    /// exited (whose id the kernel may give to another thread), and names
    /// each id once however many of its slots hold the address.
    #[test]
    #[cfg_attr(miri, ignore = "reads /proc, which miri's isolation hides")]
    fn stall_warnings_name_live_and_exited_threads() {
        use test_support::stall::kernel_thread_id;
        let me = kernel_thread_id();
        let gone = std::thread::spawn(kernel_thread_id).join().unwrap();
        // `join` returns once the thread's id word is cleared, which the
        // kernel does before it takes the thread out of /proc/self/task:
        // wait for that (seen in a CI run, 2026-12-06), within a bound.
        let task = format!("/proc/self/task/{gone}");
        let since = std::time::Instant::now();
        while std::path::Path::new(&task).exists() {
            assert!(
                since.elapsed() < std::time::Duration::from_secs(30),
                "{task} still there 30 s after the thread was joined"
            );
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        assert_eq!(threads(&[me]), format!("thread {me}"));
        assert_eq!(
            threads(&[me, gone]),
            format!("threads {me}, {gone} (exited)")
        );
        assert_eq!(threads(&[0]), "a thread whose id is unknown");
    }

    /// A thread whose nested guards hold an address in its block and in
    /// backup slots is one holder.
    #[test]
    fn a_holder_with_nested_guards_is_named_once() {
        let domain = Domain::new();
        let value = Box::into_raw(Box::new(7u64));
        let src = std::sync::atomic::AtomicPtr::new(value);
        let guards: Vec<_> = (0..=crate::usable_slots_per_thread())
            .map(|_| domain.acquire(&src).0)
            .collect();
        assert!(guards.last().is_some_and(|g| g.is_backup()));
        let me = test_support::stall::kernel_thread_id();
        assert_eq!(holders_of(&domain.shared, value as usize), [me]);
        drop(guards);
        // SAFETY: from `Box::into_raw`; no guard is left.
        drop(unsafe { Box::from_raw(value) });
    }
}
