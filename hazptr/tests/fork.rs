//! `hazptr::fork`: a child forked while scanner threads ran, callers were
//! scanning and waiting, and readers of three domains (one of them on backup
//! slots) held protections keeps working, and keeps the forking thread's own
//! protections. (The hooks' misuse panics are in `misuse.rs`.)
#![cfg(not(any(miri, loom)))]

use hazptr::{Domain, Guard, fork};
use std::panic::catch_unwind;
use std::ptr;
use std::sync::Arc;
use std::sync::atomic::{AtomicPtr, AtomicUsize, Ordering::*};
use std::thread;
use std::time::Duration;
use test_support::misuse::{assert_wrong_fork_hook_refused, message_of};
use test_support::{Crowd, ForkHooks, Holders, assert_child_succeeded, fork_and_wait};

/// How long a test's parent side may run before it counts as a hang: a
/// caller of the shared scan or the scanner thread asleep on a futex nobody
/// wakes (a child has its alarm). The test then fails with a message instead
/// of stalling the binary. The crowd's waits have limits (and messages) of
/// their own; this one covers the joins of callers, which have none. Alone a
/// test takes well under a second; the margin is for CI's 2 busy cores.
const TEST_DEADLINE: Duration = Duration::from_secs(60);

fn leak<T>(value: T) -> &'static T {
    Box::leak(Box::new(value))
}

/// A published object readers protect.
fn object(value: u64) -> &'static AtomicPtr<u64> {
    leak(AtomicPtr::new(Box::into_raw(Box::new(value))))
}

/// The domains of the test: the global one, a user one, and one whose
/// guards all live in backup slots.
#[derive(Clone, Copy)]
struct Domains {
    global: &'static Domain,
    user: &'static Domain,
    slow: &'static Domain,
}

impl Domains {
    fn new() -> Domains {
        Domains {
            global: Domain::global(),
            user: leak(Domain::new()),
            slow: leak(Domain::builder().force_slow_path(true).build()),
        }
    }

    fn all(self) -> [&'static Domain; 3] {
        [self.global, self.user, self.slow]
    }
}

/// Enough threads protecting an object and calling `synchronize` back to
/// back, in every domain, that callers queue behind each other's scans and
/// sleep: the shared domains' scanner threads drive for them.
fn crowd(domains: Domains) -> Crowd {
    let read = object(1);
    let unpublished = object(2).load(Relaxed) as usize;
    Crowd::start(move || {
        for domain in domains.all() {
            let mut guard = domain.guard();
            assert!(!guard.protect_ptr(read).is_null());
            drop(guard);
            domain.synchronize(unpublished as *const u64);
        }
    })
}

const HOOKS: ForkHooks = ForkHooks {
    before: fork::before_fork,
    after_parent: fork::after_fork_parent,
    after_child: fork::after_fork_child,
};

static FREED: AtomicUsize = AtomicUsize::new(0);

/// A deleter that counts.
unsafe fn free_counted(p: *mut u64) {
    // SAFETY: `p` came from `Box::into_raw` in `object` and is retired once.
    drop(unsafe { Box::from_raw(p) });
    FREED.fetch_add(1, Relaxed);
}

/// Everything the child does; returns normally only if all of it completed.
/// `held[i]` is the object a vanished reader protected in `domains.all()[i]`;
/// `own` the forking thread's guards (user domain, slow domain) on `mine`.
fn child_work(
    domains: Domains,
    held: [&'static AtomicPtr<u64>; 3],
    own: (Guard<'static>, Guard<'static>),
    mine: [&'static AtomicPtr<u64>; 2],
) {
    // 1. The vanished readers' protections are gone: each of these waited
    //    for one at the fork.
    for (domain, obj) in domains.all().into_iter().zip(held) {
        domain.synchronize(obj.load(Relaxed));
    }
    // 2. The forking thread's own protections (a block slot, a backup slot)
    //    still hold: a synchronize of either waits until its guard goes.
    let done = Arc::new(AtomicUsize::new(0));
    let waiters: Vec<_> = [domains.user, domains.slow]
        .into_iter()
        .zip(mine)
        .map(|(domain, obj)| {
            let done = Arc::clone(&done);
            let addr = obj.load(Relaxed) as usize;
            thread::spawn(move || {
                domain.synchronize(addr as *const u64);
                // Relaxed: read after the join below, or as a hint before it.
                done.fetch_add(1, Relaxed);
            })
        })
        .collect();
    thread::sleep(Duration::from_millis(100));
    assert_eq!(
        done.load(Relaxed),
        0,
        "a synchronize returned while the forking thread's guard protected its address"
    );
    drop(own);
    for w in waiters {
        w.join().expect("synchronize of an own address");
    }
    // 3. The vanished threads' backup slots are free: this thread can hold
    //    them all at once without the domain adding one.
    let backups = domains.slow.backup_slots();
    let all: Vec<_> = (0..backups).map(|_| domains.slow.guard()).collect();
    assert_eq!(
        domains.slow.backup_slots(),
        backups,
        "a backup slot of a vanished thread stayed taken"
    );
    drop(all);
    // 4. A crowd in the child: its sleeping callers need a scanner thread,
    //    which is started anew; its threads take the blocks of the vanished
    //    threads instead of new ones (it has fewer threads than the parent).
    let blocks: Vec<usize> = domains.all().map(Domain::thread_blocks).to_vec();
    let crowd = crowd(domains);
    crowd.until_calls(200, Duration::from_secs(15), "the child's crowd stalled");
    crowd.stop();
    assert_eq!(
        domains.all().map(Domain::thread_blocks).to_vec(),
        blocks,
        "the child's threads did not reuse the blocks of vanished threads"
    );
    // How many backup slots the crowd needed depends on how many of its
    // guards overlapped, which a loaded machine makes more than the
    // parent's did (2 slots before, 3 after, in 1 of 116 runs under
    // SYNCPRIMS_FENCE=seqcst and load); once it stopped all are free again.
    let backups = domains.slow.backup_slots();
    let all: Vec<_> = (0..backups).map(|_| domains.slow.guard()).collect();
    assert_eq!(
        domains.slow.backup_slots(),
        backups,
        "a backup slot of the child's crowd stayed taken"
    );
    drop(all);
    // 5. Retire the objects the vanished readers held: nothing protects them.
    FREED.store(0, Relaxed);
    for (domain, obj) in domains.all().into_iter().zip(held) {
        let p = obj.swap(std::ptr::null_mut(), AcqRel);
        // SAFETY: unpublished above, retired once, allocated by `object`.
        unsafe { domain.retire(p, free_counted) };
        domain.reclaim();
    }
    assert_eq!(
        FREED.load(Relaxed),
        3,
        "reclaim left an object a vanished reader held"
    );
}

#[test]
fn a_child_forked_in_the_middle_of_everything_keeps_working() {
    test_support::forking_test(
        "a_child_forked_in_the_middle_of_everything_keeps_working",
        || {
            test_support::within_a_deadline(
                "a fork in the middle of scans, waits and reads",
                TEST_DEADLINE,
                || {
                    let domains = Domains::new();
                    let crowd = crowd(domains);
                    crowd.until_calls(50, Duration::from_secs(30), "the crowd never got going");
                    // A reader in each domain holds an object across the fork.
                    let held = [object(10), object(11), object(12)];
                    let mut readers = Holders::new();
                    for (domain, obj) in domains.all().into_iter().zip(held) {
                        readers.hold(move || {
                            let mut guard = domain.guard();
                            assert!(!guard.protect_ptr(obj).is_null());
                            guard
                        });
                    }
                    // A caller in each domain waits for its reader across the fork: in the
                    // shared domains its waiter sits on the scanner's pending list.
                    // Each has started before the fork (see `forking_test`).
                    let (started_tx, started_rx) = std::sync::mpsc::channel();
                    let waiting: Vec<_> = domains
                        .all()
                        .into_iter()
                        .zip(held)
                        .map(|(domain, obj)| {
                            let addr = obj.load(Relaxed) as usize;
                            let started = started_tx.clone();
                            thread::spawn(move || {
                                started.send(()).expect("the test waits");
                                domain.synchronize(addr as *const u64)
                            })
                        })
                        .collect();
                    for _ in &waiting {
                        started_rx.recv().expect("a caller started");
                    }
                    // The forking thread keeps guards of its own across the fork.
                    let mine = [object(20), object(21)];
                    // Only the slots matter here (what the child finds held),
                    // not the pointers read.
                    let mut in_block = domains.user.guard();
                    let _ = in_block.protect_ptr(mine[0]);
                    let mut in_backup = domains.slow.guard();
                    let _ = in_backup.protect_ptr(mine[1]);
                    assert!(in_backup.is_backup());
                    thread::sleep(Duration::from_millis(10));
                    assert!(
                        waiting.iter().all(|w| !w.is_finished()),
                        "a synchronize returned while a reader held its object"
                    );
                    // SAFETY: the child works with addresses (which `synchronize`
                    // takes), its own guards and objects of its own: no reference
                    // that another thread's guard protected.
                    let status = unsafe {
                        fork_and_wait(HOOKS, || {
                            child_work(domains, held, (in_block, in_backup), mine)
                        })
                    };
                    assert_child_succeeded(status, "its hazptr work");
                    // The parent goes on: release the readers, and everyone completes.
                    readers.release();
                    for t in waiting {
                        t.join().unwrap();
                    }
                    crowd.until_calls(100, Duration::from_secs(30), "the parent's crowd stopped");
                    crowd.stop();
                },
            );
        },
    );
}

/// `after_fork_child` in the process that called `before_fork` panics: it
/// would empty and free the slots of that process's live threads, so that a
/// reader's protected object could be freed under it. `after_fork_parent`
/// still works there.
#[test]
fn after_fork_child_in_the_parent_panics_and_leaves_readers_protected() {
    test_support::within_a_deadline(
        "synchronize after after_fork_child in the parent",
        TEST_DEADLINE,
        || {
            let domain = leak(Domain::new());
            let obj = object(30);
            let mut reader = Holders::new();
            reader.hold(move || {
                let mut guard = domain.guard();
                assert!(!guard.protect_ptr(obj).is_null());
                guard
            });
            fork::before_fork();
            let result = catch_unwind(fork::after_fork_child);
            if result.is_err() {
                fork::after_fork_parent();
            }
            // The reader still protects `obj`: a synchronize of it waits for it.
            let addr = obj.load(Relaxed) as usize;
            let synchronizer = thread::spawn(move || domain.synchronize(addr as *const u64));
            thread::sleep(Duration::from_millis(100));
            let early = synchronizer.is_finished();
            reader.release();
            synchronizer.join().expect("synchronize");
            assert!(
                !early,
                "a synchronize returned while a reader protected its address (after_fork_child in \
         the parent {})",
                if result.is_ok() {
                    "returned"
                } else {
                    "panicked"
                }
            );
            let err = result.expect_err("after_fork_child in the parent did not panic");
            let msg = message_of(&*err);
            assert!(
                msg.contains("after_fork_child() called in the process that called before_fork()"),
                "{msg}"
            );
        },
    );
}

/// The hooks of a child that first calls `after_fork_parent`, which panics
/// (the child would keep the vanished threads' slots, waiters and scanner
/// state), and then `after_fork_child`, which still works.
fn after_fork_parent_then_child() {
    assert_wrong_fork_hook_refused(
        fork::after_fork_parent,
        "after_fork_parent() called in a child of fork()",
    );
    fork::after_fork_child();
}

#[test]
fn after_fork_parent_in_the_child_panics_and_after_fork_child_still_works() {
    test_support::forking_test(
        "after_fork_parent_in_the_child_panics_and_after_fork_child_still_works",
        || {
            test_support::within_a_deadline(
                "a fork with the wrong hook first in the child",
                TEST_DEADLINE,
                || {
                    let domain = leak(Domain::new());
                    let obj = object(31);
                    let mut reader = Holders::new();
                    reader.hold(move || {
                        let mut guard = domain.guard();
                        assert!(!guard.protect_ptr(obj).is_null());
                        guard
                    });
                    let hooks = ForkHooks {
                        after_child: after_fork_parent_then_child,
                        ..HOOKS
                    };
                    // SAFETY: the child works with addresses (which `synchronize`
                    // takes), its own guards and objects of its own: no reference
                    // that another thread's guard protected.
                    let status = unsafe {
                        fork_and_wait(hooks, || {
                            // The vanished reader's protection is gone.
                            domain.synchronize(obj.load(Relaxed));
                        })
                    };
                    assert_child_succeeded(status, "its hooks and a synchronize");
                    reader.release();
                },
            );
        },
    );
}

/// A thread's first guard in a domain, between the hooks, when the thread
/// still has a block in a dropped domain: the guard registers the thread,
/// and registration gives back blocks of dropped domains, which takes a lock
/// that `before_fork` holds. It must wait for a later registration instead.
#[test]
fn a_first_guard_between_the_hooks_after_a_dropped_domain() {
    let user = leak(Domain::new());
    let obj = object(9);
    test_support::within_a_deadline(
        "a first guard between the fork hooks",
        TEST_DEADLINE,
        move || {
            let dropped = Domain::new();
            drop(dropped.guard());
            drop(dropped);
            fork::before_fork();
            // This thread's first guard in `user`, and in the global domain.
            assert_eq!(read_through(&mut user.guard(), obj), 9);
            assert_eq!(read_through(&mut Guard::new(), obj), 9);
            fork::after_fork_parent();
            // The next registration gives the dropped domain's block back.
            let later = Domain::new();
            drop(later.guard());
        },
    );
}

/// The same on another thread than the forking one: a reader whose first
/// guard in a domain finds a block of a dropped domain to give back must
/// not wait for the hooks, which hold that domain's retired list (the
/// domain lives on while the reader's registration keeps it). Until
/// 2026-12-07 only the forking thread's own registrations skipped the
/// give-back, and such a reader's first guard waited for as long as the
/// fork took (2 s in a scratch run, where its guard took 3 us otherwise:
/// from a review of progress guarantees). The give-back now waits for a
/// registration that finds the lock free.
#[test]
fn another_threads_first_guard_does_not_wait_for_the_hooks() {
    let user = leak(Domain::new());
    let obj = object(11);
    test_support::within_a_deadline(
        "another thread's first guard during the fork hooks",
        TEST_DEADLINE,
        move || {
            let (go_tx, go) = std::sync::mpsc::channel::<()>();
            let (read_tx, read) = std::sync::mpsc::channel();
            let (registered_tx, registered) = std::sync::mpsc::channel();
            let reader = {
                thread::spawn(move || {
                    let dropped = Domain::new();
                    drop(dropped.guard());
                    drop(dropped);
                    registered_tx.send(()).expect("the test waits");
                    go.recv().expect("the test says when");
                    // This thread's first guard in `user`.
                    let value = read_through(&mut user.guard(), obj);
                    read_tx.send(value).expect("the test waits");
                })
            };
            registered.recv().expect("the reader registered");
            fork::before_fork();
            go_tx.send(()).expect("the reader waits");
            let value = read.recv_timeout(Duration::from_secs(10));
            fork::after_fork_parent();
            reader.join().expect("the reader");
            assert_eq!(
                value,
                Ok(11),
                "the reader's first guard waited for the fork hooks"
            );
        },
    );
}

/// While the fork hooks hold a domain's driver flag, a caller that queues
/// behind them wakes the scanner thread, which finds the flag taken. After
/// a bounded run of yields it must wait for it asleep (its backoff's timed
/// sleeps), not in `sched_yield` without end: that burned a CPU for as long
/// as the hooks were held and, at SCHED_FIFO, would keep a lower-priority
/// flag holder sharing its CPU from ever running. A yielding thread never
/// shows as asleep.
#[test]
fn a_scanner_waits_asleep_for_the_driver_flag_the_hooks_hold() {
    let domain = leak(Domain::new());
    assert!(
        domain.start_scanner(),
        "the shared-scan domain started no scanner"
    );
    let scanner = format!("hazptr-scan-{}", domain.id());
    assert!(
        test_support::thread_appears(&scanner, Duration::from_secs(20)),
        "no thread named {scanner:?}"
    );
    test_support::within_a_deadline(
        "a synchronize queued behind the fork hooks",
        TEST_DEADLINE,
        move || {
            fork::before_fork();
            // An address nobody protects: the caller returns once a pass
            // runs, which only the hooks' end lets happen.
            let caller = thread::Builder::new()
                .name("hooked-caller".into())
                .spawn(move || domain.synchronize(ptr::without_provenance::<u64>(0x1000)))
                .expect("spawn the caller");
            // Asleep, the caller has queued its waiter and woken the scanner
            // (`wait_for_release`).
            test_support::until_asleep(
                "hooked-caller",
                5,
                Duration::from_secs(20),
                "the caller queued behind the hooks",
            );
            test_support::until_asleep(
                &scanner,
                5,
                Duration::from_secs(20),
                "the scanner waiting for the driver flag the hooks hold",
            );
            assert!(
                !caller.is_finished(),
                "synchronize returned while the hooks held its pass"
            );
            fork::after_fork_parent();
            caller.join().expect("the caller");
        },
    );
}

fn read_through(guard: &mut Guard<'_>, src: &AtomicPtr<u64>) -> u64 {
    let p = guard.protect_ptr(src);
    // SAFETY: protected, and the test never frees it.
    unsafe { *p }
}
