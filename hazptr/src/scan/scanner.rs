//! The domain's scanner thread: started by the first shared `synchronize`
//! that queues a waiter (a lone caller whose walk finds no protection of its
//! address needs none), it drives the shared scan ([`drive_once`]) for callers that sleep, and
//! sleeps on a futex when no waiter is queued or pending.
//!
//! # Invariants
//!
//! - At most one scanner thread per domain (`start_scanner` under the
//!   `thread` lock); once `started` reads true, a queued waiter is served
//!   even if its caller sleeps.
//! - The scanner sleeps without a timeout only after announcing `SLEEPING`
//!   and then finding, in a pass under the driver flag, no queued and no
//!   pending waiter; a caller about to sleep wakes it (`wake_scanner`) if it
//!   reads `SLEEPING`. The queue's RMWs order the two sides (see
//!   `wake_scanner`), so no caller sleeps with the scanner asleep too.
//! - With waiters pending (addresses still protected) it polls them with
//!   backoff, sleeping with a timeout at most.
//! - A failed spawn is tried again only [`SPAWN_RETRY_MS`] later; callers
//!   scan alone meanwhile, as with sharing turned off.
//! - A domain's drop stops and joins it ([`stop_scanner`]): the `shutdown`
//!   flag against the scanner's sleep is a store-buffering (Dekker) pair,
//!   with an `atomic_fence(SeqCst)` on each side between its store and its
//!   load.

use super::sharing::{Progress, ScanState, drive_once};
use crate::domain::Shared;
use crate::retire::now_ms;
use crate::sync::{
    Backoff, Ordering, Pause, ThreadBuilder, fence as atomic_fence, futex_wait, futex_wake_all,
    spin_loop,
};
use std::sync::Arc;

/// Scanner states (the futex word callers wake it through).
pub(super) const AWAKE: u32 = 0;
pub(super) const SLEEPING: u32 = 1;

/// Makes sure the scanner thread is awake (it then drives until there is no
/// queued or pending waiter left).
pub(super) fn wake_scanner(scan: &ScanState) {
    // The other half of the handshake in `scanner_sleep`, which stores
    // SLEEPING and then takes the queue with an RMW (`swap`). Our push was an
    // RMW on the same queue: if it came first, the scanner's swap takes our
    // waiter; if the swap came first, our push read from it or from a later
    // push in its release sequence (SeqCst: Release there, Acquire here), so
    // this load sees SLEEPING. No fence needed: the queue's modification
    // order decides it, which loom checks exactly.
    if scan.scanner_state.load(Ordering::SeqCst) == SLEEPING
        && scan
            .scanner_state
            .compare_exchange(SLEEPING, AWAKE, Ordering::SeqCst, Ordering::Relaxed)
            .is_ok()
    {
        futex_wake_all(&scan.scanner_state);
    }
}

/// After a failed spawn of the scanner thread, callers scan alone for this
/// long before one tries again: a spawn fails when the process is out of
/// threads or memory, which a retry on every call would only make worse (each
/// try takes the `thread` lock, allocates the thread's name and makes a
/// system call).
pub(super) const SPAWN_RETRY_MS: u32 = 1000;

/// Makes sure the scanner thread runs; false if it cannot be started (the
/// caller then scans alone).
#[inline]
pub(super) fn ensure_scanner(shared: &Arc<Shared>) -> bool {
    // Acquire pairs with the Release store in `start_scanner`.
    shared.scan.started.load(Ordering::Acquire) || start_scanner(shared)
}

#[cold]
#[inline(never)]
fn start_scanner(shared: &Arc<Shared>) -> bool {
    let scan = &shared.scan;
    // Relaxed: a hint, read without the lock; a stale value only tries a
    // spawn sooner or later.
    let failed = scan.spawn_failed_ms.load(Ordering::Relaxed);
    // `max(1)` as when it was stored (0 stands for none failed).
    if failed != 0 && now_ms().max(1).wrapping_sub(failed) < SPAWN_RETRY_MS {
        return false;
    }
    let mut handle = crate::sync::lock(&scan.thread);
    // Relaxed, both: the `thread` lock orders them. `started` is stored
    // true under it (below); `stop_scanner` stores `shutdown` before it
    // takes the lock, so a start that takes the lock after it sees the
    // store, and one before it leaves a handle for it to join.
    if scan.started.load(Ordering::Relaxed) {
        return true;
    }
    if scan.shutdown.load(Ordering::Relaxed) {
        return false;
    }
    // Relaxed, both: a test's counter and switch, which the test thread
    // itself reads and sets between its calls; they order nothing.
    #[cfg(test)]
    scan.spawn_tries.fetch_add(1, Ordering::Relaxed);
    #[cfg(test)]
    if scan.fail_spawn.load(Ordering::Relaxed) {
        return spawn_failed(scan);
    }
    let for_thread = Arc::clone(shared);
    let name = format!("hazptr-scan-{}", shared.id);
    // The scanner starts with the process's signals blocked (see
    // `futex_word::thread_start`).
    let spawned = futex_word::thread_start::with_signals_blocked(|| {
        ThreadBuilder::new()
            .name(name)
            .spawn(move || scanner_main(&for_thread))
    });
    match spawned {
        Ok(h) => {
            *handle = Some(h);
            // Release pairs with the Acquire load in `ensure_scanner`.
            scan.started.store(true, Ordering::Release);
            true
        }
        Err(_) => spawn_failed(scan),
    }
}

/// Remembers when a spawn failed (see [`SPAWN_RETRY_MS`]); false, for the
/// caller to scan alone.
fn spawn_failed(scan: &ScanState) -> bool {
    // Relaxed: a hint (see `start_scanner`). At least 1: 0 means none failed.
    scan.spawn_failed_ms
        .store(now_ms().max(1), Ordering::Relaxed);
    false
}

/// Yields of the scanner thread while another thread holds the driver flag,
/// before it backs off into sleeps (see `scanner_main`): about a millisecond
/// on an idle CPU, longer when the yields let other threads run.
const BUSY_YIELDS: u32 = 1024;

/// The scanner thread: drive the scan while there is work, sleep otherwise.
fn scanner_main(shared: &Shared) {
    futex_word::thread_start::default_timer_slack();
    let scan = &shared.scan;
    let mut backoff = Backoff::new();
    let mut busy_yields = 0;
    loop {
        let progress = drive_once(shared);
        if progress != Progress::Busy {
            busy_yields = 0;
        }
        match progress {
            Progress::Worked => backoff = Backoff::new(),
            // Another thread holds the driver flag (or a fork waits for it,
            // and then holds it until its `after_fork_*`): mostly a caller's pass,
            // a few microseconds, after which the scanner takes the queue
            // over at once (yielding, it keeps that hand-over quick: sleeping
            // here at once took 16 writers' per-GP time on 2 vCPUs from
            // 3.7-4.5 to 4.2-6.4 us). But a pass may wait for a reader
            // preempted in its wildcard window, and the fork hooks hold the
            // flag for as long as their caller likes: past `BUSY_YIELDS`
            // the scanner backs off into timed sleeps as for pending hits (a
            // queued caller's `wake_scanner` ends them). Yielding without end
            // burned a CPU for as long as the flag was held and, at
            // SCHED_FIFO, kept a lower-priority holder on its CPU from ever
            // running again.
            Progress::Busy if busy_yields < BUSY_YIELDS => {
                busy_yields += 1;
                crate::sync::yield_now();
            }
            Progress::Busy | Progress::Pending => match backoff.next_pause() {
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
    // SeqCst, as every access to `scanner_state` (see `wake_scanner`): a
    // caller that reads AWAKE leaves its waiter to this thread, which sleeps
    // without a timeout again only after a pass that finds nothing queued.
    scan.scanner_state.store(AWAKE, Ordering::SeqCst);
}

/// Stops and joins the scanner thread (domain drop).
pub(crate) fn stop_scanner(shared: &Shared) {
    let scan = &shared.scan;
    // SeqCst pairs with the SeqCst loads in `scanner_main` and
    // `scanner_sleep` (with the fences, a Dekker pair with the latter).
    scan.shutdown.store(true, Ordering::SeqCst);
    // Pairs with the fence in `scanner_sleep`.
    atomic_fence(Ordering::SeqCst);
    let handle = crate::sync::lock(&scan.thread).take();
    if let Some(handle) = handle {
        // SeqCst, as every access to `scanner_state`: a scanner not yet in
        // its futex wait finds the word changed from SLEEPING and returns.
        scan.scanner_state.store(AWAKE, Ordering::SeqCst);
        futex_wake_all(&scan.scanner_state);
        // A scanner panic would already have been reported; the domain is
        // going away either way.
        let _ = handle.join();
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::{SLEEPING, SPAWN_RETRY_MS, ensure_scanner, scanner_sleep};
    use crate::Domain;
    use crate::scan::sharing::drive_once;
    use crate::sync::{AtomicPtr, Ordering};
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    /// How long a test that waits on another thread (the scanner's) may run
    /// before it counts as a hang and fails with a message instead of
    /// stalling the binary; it takes milliseconds alone, the margin is for
    /// CI's 2 busy cores (and for miri, whose clock counts 5 µs per
    /// interpreted basic block).
    const TEST_DEADLINE: Duration = Duration::from_secs(if cfg!(miri) { 600 } else { 30 });

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
                // Another test's fork hooks would hold the domain.
                let _alone = crate::scan::tests::no_fork_hooks_meanwhile();
                let domain = Domain::new();
                assert!(ensure_scanner(&domain.shared));
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

    /// A domain whose scanner thread cannot be spawned has its callers scan
    /// alone, and tries the spawn again only once per `SPAWN_RETRY_MS`, not on
    /// every call; once that time has passed, a call spawns it. (Catches a
    /// `start_scanner` that forgets the failure: every one of the calls below
    /// then tries, taking the lock and allocating the thread's name.)
    ///
    /// The calls queue (not a lone caller's walk, which needs no scanner):
    /// the driver flag is held as if another caller's pass ran, and they
    /// fall back to scanning alone, past the held flag.
    #[test]
    fn a_failed_scanner_spawn_is_tried_again_only_after_a_while() {
        test_support::within_a_deadline(
            "synchronize calls with a scanner that cannot start",
            TEST_DEADLINE,
            || {
                // Another test's fork hooks would hold the domain's `thread`
                // lock while they wait for the driver flag held below.
                let _alone = crate::scan::tests::no_fork_hooks_meanwhile();
                let domain = Domain::new();
                let scan = &domain.shared.scan;
                // Relaxed, here and below: no scanner thread runs, and the
                // calls that read these fields run on this thread.
                scan.fail_spawn.store(true, Ordering::Relaxed);
                let object = Box::into_raw(Box::new(1u64));
                // Another caller's pass, as far as these calls can tell.
                scan.driver.store(true, Ordering::Relaxed);
                let began = Instant::now();
                for _ in 0..200 {
                    domain.synchronize(object);
                }
                let elapsed_ms = began.elapsed().as_millis();
                let tries = scan.spawn_tries.load(Ordering::Relaxed);
                assert!(!scan.started.load(Ordering::Acquire));
                // One try, and one more per retry period the calls took (on a
                // slow machine they may take that long); a period measured on
                // the tick-resolution clock may be up to a tick short.
                let tick_ms = u128::from(test_support::coarse_clock_tick_ms());
                let allowed = 1 + elapsed_ms / (u128::from(SPAWN_RETRY_MS) - tick_ms);
                assert!(
                    tries >= 1 && u128::from(tries) <= allowed,
                    "200 calls in {elapsed_ms} ms tried to spawn the failing scanner {tries} \
                     times (at most {allowed} expected)"
                );
                // The period over (as if `SPAWN_RETRY_MS` had passed), the next
                // call that queues spawns the thread.
                scan.fail_spawn.store(false, Ordering::Relaxed);
                let failed = scan.spawn_failed_ms.load(Ordering::Relaxed);
                scan.spawn_failed_ms
                    .store(failed.wrapping_sub(SPAWN_RETRY_MS), Ordering::Relaxed);
                scan.driver.store(false, Ordering::Relaxed);
                assert!(
                    ensure_scanner(&domain.shared),
                    "the scanner thread was not spawned once the retry period had passed"
                );
                drop(domain);
                // SAFETY: never published.
                drop(unsafe { Box::from_raw(object) });
            },
        );
    }

    /// A lone caller whose walk finds no protection starts no scanner
    /// thread; a caller that finds its address protected queues and starts
    /// it (its caller may sleep, and a sleeping caller's waiter is the
    /// scanner's to serve). (Catches the scanner started on every domain's
    /// first call again, as before 2026-12-05; and a queued waiter without
    /// one: the second call below then never returns.)
    #[test]
    fn only_a_caller_that_queues_starts_the_scanner_thread() {
        test_support::within_a_deadline("a synchronize that queues", TEST_DEADLINE, || {
            // Another test's fork hooks holding the driver flag would make
            // the lone calls below queue.
            let _alone = crate::scan::tests::no_fork_hooks_meanwhile();
            let domain = Domain::new();
            let scan = &domain.shared.scan;
            let object = Box::into_raw(Box::new(1u64));
            for _ in 0..10 {
                domain.synchronize(object);
            }
            assert!(
                !scan.started.load(Ordering::Acquire),
                "uncontended calls that found no protection started the scanner thread"
            );
            let published = AtomicPtr::new(object);
            let mut guard = domain.guard();
            assert_eq!(guard.protect_ptr(&published), object);
            let addr = object as usize;
            std::thread::scope(|s| {
                let caller = s.spawn(|| domain.synchronize(addr as *const u64));
                // The caller queues (its walk finds the guard) and starts
                // the scanner before it waits.
                let deadline = Instant::now() + TEST_DEADLINE / 2;
                while !scan.started.load(Ordering::Acquire) {
                    assert!(
                        Instant::now() < deadline,
                        "a caller that found its address protected started no scanner"
                    );
                    std::thread::sleep(Duration::from_millis(1));
                }
                drop(guard);
                caller.join().expect("synchronize returns");
            });
            drop(domain);
            // SAFETY: unpublished (never read again) and synchronized.
            drop(unsafe { Box::from_raw(object) });
        });
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
            let _alone = crate::scan::tests::no_fork_hooks_meanwhile();
            let domain = Domain::new();
            // Nothing is queued for it to do.
            assert!(ensure_scanner(&domain.shared));
            test_support::until_asleep(
                &format!("hazptr-scan-{}", domain.shared.id),
                5,
                TEST_DEADLINE / 2,
                "the idle scanner thread never blocked",
            );
            drop(domain);
        });
    }
}
