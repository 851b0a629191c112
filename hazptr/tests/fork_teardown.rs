//! The fork hooks and thread teardown. A thread-local destructor may fork
//! (a thread's clean-up may run a helper process, and once the hooks are
//! registered with `pthread_atfork` every fork runs them) after hazptr's own
//! per-thread state is gone; and a thread that exits between the hooks gives
//! back the locks they hold. Each case runs in a child process (this test
//! binary run again with `CHILD_ENV` naming it) under a watchdog: a panic
//! inside a thread-local destructor aborts the whole process, and a lock
//! never given back hangs it.
#![cfg(not(any(miri, loom)))]

use hazptr::{Domain, Guard, fork};
use std::cell::RefCell;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::atomic::{AtomicI32, AtomicPtr};
use std::thread;
use std::time::Duration;
use test_support::{ForkHooks, assert_child_succeeded, fork_and_wait};

const CHILD_ENV: &str = "HAZPTR_FORK_TEARDOWN_CHILD";

const HOOKS: ForkHooks = ForkHooks {
    before: fork::before_fork,
    after_parent: fork::after_fork_parent,
    after_child: fork::after_fork_child,
};

/// The wait status of the last fork a thread-local destructor made, or -1.
static FORK_STATUS: AtomicI32 = AtomicI32::new(-1);

/// Forks between the hooks when the thread ends; the child uses the global
/// domain.
struct ForkWhenDropped;

impl Drop for ForkWhenDropped {
    fn drop(&mut self) {
        // SAFETY: the child synchronizes an address of its own object.
        let status = unsafe {
            fork_and_wait(HOOKS, || {
                let obj = 7u64;
                Domain::global().synchronize(&obj);
            })
        };
        // Relaxed: read after the thread's join.
        FORK_STATUS.store(status, Relaxed);
    }
}

thread_local! {
    static FORK_WHEN_DROPPED: ForkWhenDropped = const { ForkWhenDropped };
}

fn leak<T>(value: T) -> &'static T {
    Box::leak(Box::new(value))
}

/// A published object a guard protects.
fn object(value: u64) -> &'static AtomicPtr<u64> {
    leak(AtomicPtr::new(Box::into_raw(Box::new(value))))
}

/// Guards kept until the thread ends (taken before hazptr's per-thread state
/// goes), and then a fork while they, and one more taken in the destructor,
/// still protect their objects.
struct GuardsThenFork {
    /// Each guard's domain and the address it protects.
    guards: RefCell<Vec<(Guard<'static>, &'static Domain, usize)>>,
}

impl Drop for GuardsThenFork {
    fn drop(&mut self) {
        let mut guards = std::mem::take(self.guards.get_mut());
        // A guard taken now, after the thread's registrations and its record
        // of held backup slots are gone: a backup slot.
        let obj = object(3);
        let mut late = Guard::new();
        let addr = late.protect_ptr(obj) as usize;
        assert!(late.is_backup());
        guards.push((late, Domain::global(), addr));
        // SAFETY: the child works with addresses and this thread's own
        // guards: no reference that another thread's guard protected.
        let status = unsafe {
            fork_and_wait(HOOKS, move || {
                // Each of this thread's protections still holds in the child: a
                // synchronize of its address waits until its guard goes.
                let waiters: Vec<_> = guards
                    .iter()
                    .map(|&(_, domain, addr)| {
                        thread::spawn(move || domain.synchronize(addr as *const u64))
                    })
                    .collect();
                thread::sleep(Duration::from_millis(100));
                let early = waiters.iter().filter(|w| w.is_finished()).count();
                drop(guards);
                for w in waiters {
                    w.join().expect("synchronize of an own address");
                }
                assert_eq!(
                    early, 0,
                    "a synchronize returned while the forking thread's guard protected its address"
                );
            })
        };
        // Relaxed: read after the thread's join.
        FORK_STATUS.store(status, Relaxed);
    }
}

thread_local! {
    static GUARDS_THEN_FORK: GuardsThenFork = const {
        GuardsThenFork {
            guards: RefCell::new(Vec::new()),
        }
    };
}

#[test]
fn a_fork_from_a_thread_local_destructor_keeps_its_guards() {
    if std::env::var_os(CHILD_ENV).is_some() {
        let user = leak(Domain::new());
        let slow = leak(Domain::builder().force_slow_path(true).build());
        thread::spawn(move || {
            // Touched before hazptr's per-thread state, so destroyed after
            // it: the block of `user`'s guard is orphaned by then, and the
            // record of `slow`'s backup slot gone.
            GUARDS_THEN_FORK.with(|_| ());
            for (domain, obj) in [(user, object(1)), (slow, object(2))] {
                let mut guard = domain.guard();
                let addr = guard.protect_ptr(obj) as usize;
                GUARDS_THEN_FORK.with(|g| g.guards.borrow_mut().push((guard, domain, addr)));
            }
        })
        .join()
        .expect("the thread ends cleanly");
        assert_child_succeeded(FORK_STATUS.load(Relaxed), "its checks of the guards");
        return;
    }
    test_support::in_a_child_process(
        "a_fork_from_a_thread_local_destructor_keeps_its_guards",
        CHILD_ENV,
        "guards",
    );
}

#[test]
fn a_fork_from_a_thread_local_destructor() {
    if std::env::var_os(CHILD_ENV).is_some() {
        thread::spawn(|| {
            // Touched before hazptr's per-thread state, which the hooks and
            // guards set up, so destroyed after it.
            FORK_WHEN_DROPPED.with(|_| ());
            fork::before_fork();
            fork::after_fork_parent();
            drop(Domain::global().guard());
        })
        .join()
        .expect("the thread ends cleanly");
        assert_child_succeeded(FORK_STATUS.load(Relaxed), "a synchronize");
        let obj = 8u64;
        Domain::global().synchronize(&obj);
        return;
    }
    test_support::in_a_child_process(
        "a_fork_from_a_thread_local_destructor",
        CHILD_ENV,
        "teardown",
    );
}

#[test]
fn a_thread_that_exits_between_the_hooks_gives_their_locks_back() {
    if std::env::var_os(CHILD_ENV).is_some() {
        thread::spawn(fork::before_fork)
            .join()
            .expect("the thread ends cleanly");
        // Waits for the registry lock the hooks took.
        let domain = Domain::new();
        let obj = 9u64;
        domain.synchronize(&obj);
        drop(domain);
        return;
    }
    test_support::in_a_child_process(
        "a_thread_that_exits_between_the_hooks_gives_their_locks_back",
        CHILD_ENV,
        "exit",
    );
}

/// Calls `before_fork` when dropped, and never `after_fork_*`.
struct BeforeForkWhenDropped;

impl Drop for BeforeForkWhenDropped {
    fn drop(&mut self) {
        fork::before_fork();
    }
}

thread_local! {
    static BEFORE_FORK_WHEN_DROPPED: BeforeForkWhenDropped = const { BeforeForkWhenDropped };
}

/// Calls `before_fork` from a POSIX key's destructor, after every
/// thread-local destructor of its thread ran, and never `after_fork_*`.
extern "C" fn before_fork_at_key_exit(_: *mut libc::c_void) {
    fork::before_fork();
}

/// A thread-local destructor that calls `before_fork` after the hooks' own
/// release at exit is gone, and then lets its thread exit between the hooks,
/// still gives the locks back (through the exit key; until 2026-12-07 the
/// next `Domain::new` waited for the registry lock for ever); and so does a
/// POSIX key's destructor that does the same on a thread that never ran
/// the hooks before (where the release at exit, created then, never runs).
#[test]
fn a_thread_local_destructor_that_exits_between_the_hooks_gives_their_locks_back() {
    if std::env::var_os(CHILD_ENV).is_some() {
        let the_locks_are_free = || {
            // Waits for the registry lock the hooks took.
            test_support::within_a_deadline("Domain::new", Duration::from_secs(60), || {
                let domain = Domain::new();
                let obj = 9u64;
                domain.synchronize(&obj);
                drop(domain);
                Domain::global().reclaim();
            });
        };
        thread::spawn(|| {
            // Touched before the hooks' release at exit, which the hooks
            // below set up, so destroyed after it.
            BEFORE_FORK_WHEN_DROPPED.with(|_| ());
            fork::before_fork();
            fork::after_fork_parent();
        })
        .join()
        .expect("the thread ends cleanly");
        the_locks_are_free();
        test_support::threads_exiting_through_a_key(1, before_fork_at_key_exit);
        the_locks_are_free();
        return;
    }
    test_support::in_a_child_process(
        "a_thread_local_destructor_that_exits_between_the_hooks_gives_their_locks_back",
        CHILD_ENV,
        "exit from a late destructor",
    );
}

#[test]
fn a_thread_whose_first_guard_follows_its_before_fork_exits_between_the_hooks() {
    if std::env::var_os(CHILD_ENV).is_some() {
        // The thread's registrations are first used after `before_fork`, so
        // their destructor runs before the one that releases the hooks'
        // locks, and hands the thread's batch over under a lock the hooks
        // hold.
        thread::spawn(|| {
            fork::before_fork();
            drop(Guard::new());
            // (With a forced slow path there is no batch, and a retire
            // between the hooks is refused.)
            if !cfg!(feature = "force-slow-path") {
                let object = Box::into_raw(Box::new(3u64));
                // SAFETY: never published; freed once, by the domain.
                unsafe { Domain::global().retire_box(object) };
            }
        })
        .join()
        .expect("the thread ends cleanly");
        let domain = Domain::new();
        let obj = 9u64;
        domain.synchronize(&obj);
        Domain::global().synchronize(&obj);
        Domain::global().reclaim();
        drop(domain);
        return;
    }
    test_support::in_a_child_process(
        "a_thread_whose_first_guard_follows_its_before_fork_exits_between_the_hooks",
        CHILD_ENV,
        "first use after before_fork",
    );
}

/// Calls `after_fork_parent` when dropped.
struct AfterForkParentWhenDropped;

impl Drop for AfterForkParentWhenDropped {
    fn drop(&mut self) {
        fork::after_fork_parent();
    }
}

#[test]
fn the_hooks_released_during_an_unwind_leave_the_domains_usable() {
    if std::env::var_os(CHILD_ENV).is_some() {
        // `after_fork_parent` runs while the refused `synchronize` unwinds:
        // the locks the hooks held are released by a panicking thread.
        let boxed = hazptr::AtomicBox::new(0u64);
        let refused = std::panic::catch_unwind(|| {
            fork::before_fork();
            let _after = AfterForkParentWhenDropped;
            Domain::global().synchronize(&1u64);
        });
        assert!(refused.is_err(), "synchronize between the hooks is refused");
        // Hand-overs of the thread's batch and reclamation passes take the
        // retired-list lock; a thread's exit hands its batch over too.
        for i in 0..200 {
            boxed.store(Some(Box::new(i)));
        }
        Domain::global().reclaim();
        thread::spawn(|| {
            let _guard = Guard::new();
            let object = Box::into_raw(Box::new(4u64));
            // SAFETY: never published; freed once, by the domain.
            unsafe { Domain::global().retire_box(object) };
        })
        .join()
        .expect("the thread ends cleanly");
        let domain = Domain::new();
        domain.synchronize(&1u64);
        drop(domain);
        return;
    }
    test_support::in_a_child_process(
        "the_hooks_released_during_an_unwind_leave_the_domains_usable",
        CHILD_ENV,
        "released while unwinding",
    );
}

/// The wait status of the child of the fork `fork_in_a_deleter` made, or -1.
static DELETER_FORK_STATUS: AtomicI32 = AtomicI32::new(-1);
/// Set in that child.
static IN_THE_DELETERS_CHILD: std::sync::atomic::AtomicBool =
    std::sync::atomic::AtomicBool::new(false);

/// A deleter that frees its box and then forks, as a deleter may (a pass
/// runs its deleters with no lock held). The child returns into the pass,
/// which goes on freeing in the child; the parent waits for the child.
///
/// # Safety
///
/// `p` came from `Box::into_raw` and is freed by nobody else.
unsafe fn fork_in_a_deleter(p: *mut u64) {
    // SAFETY: the caller's contract.
    drop(unsafe { Box::from_raw(p) });
    fork::before_fork();
    // SAFETY: the child uses only what this thread holds, through the
    // hooks, and exits from the test below.
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        fork::after_fork_child();
        IN_THE_DELETERS_CHILD.store(true, Relaxed);
        return;
    }
    fork::after_fork_parent();
    assert!(pid > 0, "fork failed");
    let mut status = 0;
    // SAFETY: our own child; `status` is a valid place for its status.
    let waited = unsafe { libc::waitpid(pid, &mut status, 0) };
    assert_eq!(waited, pid, "waitpid");
    // Relaxed: read by this thread.
    DELETER_FORK_STATUS.store(status, Relaxed);
}

/// A fork from inside a deleter leaves `retired_len` exact in the child,
/// where the pass goes on: the child counts the list and what the forking
/// thread's deleters are handed, which that pass then subtracts. (Counting
/// the list alone, as `after_fork_child` did for a few hours on 2026-12-07,
/// the child's count wrapped to about `usize::MAX`.)
#[test]
fn a_fork_from_a_deleter_leaves_the_childs_retired_len_exact() {
    if std::env::var_os(CHILD_ENV).is_some() {
        let domain = Domain::new();
        for i in 0..3u64 {
            // SAFETY: never published; retired once.
            unsafe { domain.retire_box(Box::into_raw(Box::new(i))) };
        }
        // SAFETY: never published; retired once; `fork_in_a_deleter` frees
        // a box.
        unsafe { domain.retire(Box::into_raw(Box::new(9u64)), fork_in_a_deleter) };
        let freed = domain.reclaim();
        let left = domain.retired_len();
        if IN_THE_DELETERS_CHILD.load(Relaxed) {
            let right = freed == 4 && left == 0;
            if !right {
                eprintln!("in the child: freed {freed}, retired_len {left}");
            }
            // SAFETY: ends the forked child without running the test
            // harness's code in it.
            unsafe { libc::_exit(i32::from(!right)) };
        }
        assert_eq!((freed, left), (4, 0), "in the parent");
        assert_child_succeeded(DELETER_FORK_STATUS.load(Relaxed), "its pass");
        return;
    }
    test_support::in_a_child_process(
        "a_fork_from_a_deleter_leaves_the_childs_retired_len_exact",
        CHILD_ENV,
        "fork in a deleter",
    );
}
