//! Stall warnings: a `synchronize` that has waited past
//! `SYNCPRIMS_STALL_TIMEOUT_S` for a guard of another thread says so on
//! stderr, naming that thread's kernel id, and goes on waiting, with
//! sharing on and off. Each case runs in
//! a child process of its own with the variable set (the timeout is read
//! once per process); the parent reads the child's stderr.
#![cfg(not(loom))]

use hazptr::Domain;
use std::sync::atomic::AtomicPtr;
use std::sync::mpsc;
use std::thread;
use std::time::Duration;
use test_support::stall::{in_the_child, kernel_thread_id, stderr_of};

/// Another thread protects an object for `hold` while this one
/// synchronizes on its address, in a domain with sharing `shared`.
fn synchronize_held_for(shared: bool, hold: Duration) {
    let domain = Domain::builder().shared_scan(shared).build();
    let value = Box::into_raw(Box::new(7u64));
    let src = AtomicPtr::new(value);
    let (protected, held) = mpsc::channel();
    let (domain, src, expected) = (&domain, &src, value as usize);
    thread::scope(|s| {
        s.spawn(move || {
            let (guard, p) = domain.acquire(src);
            assert_eq!(p as usize, expected);
            eprintln!("holder {}", kernel_thread_id());
            protected.send(()).unwrap();
            thread::sleep(hold);
            drop(guard);
        });
        held.recv().unwrap();
        domain.synchronize(value);
    });
    eprintln!("address {:#x}", value as usize);
    // SAFETY: from `Box::into_raw`; synchronized, and no guard is left.
    drop(unsafe { Box::from_raw(value) });
}

/// What the child printed after `prefix` on a line of its own.
fn printed<'a>(stderr: &'a str, prefix: &str) -> &'a str {
    stderr
        .lines()
        .find_map(|line| line.strip_prefix(prefix))
        .unwrap_or_else(|| panic!("no {prefix:?} line in:\n{stderr}"))
}

/// Whether `stderr` warns of a `synchronize` held up at the address the
/// child printed, by a guard of the thread whose kernel id it printed:
/// `held` is how the line names that thread, given the id.
fn warns_of_the_held_address(stderr: &str, held: impl Fn(&str) -> String) -> bool {
    let addr = printed(stderr, "address ");
    let holder = held(printed(stderr, "holder "));
    stderr.lines().any(|line| {
        line.starts_with(&format!("hazptr: stall: synchronize({addr}), waiting for"))
            && line.contains(&holder)
            && line.ends_with("; it goes on waiting")
    })
}

/// A guard held 1.5 s against a stall timeout of 0.2 s: the unshared
/// caller's wait names the address, and still ends.
#[test]
#[cfg_attr(miri, ignore = "a child process, which miri does not start")]
fn an_unshared_synchronize_held_up_by_a_guard_says_so() {
    if in_the_child() {
        return synchronize_held_for(false, Duration::from_millis(1500));
    }
    let stderr = stderr_of("an_unshared_synchronize_held_up_by_a_guard_says_so", "0.2");
    assert!(
        warns_of_the_held_address(&stderr, |id| format!(
            "a guard of another thread that protects that address (held by thread {id}:"
        )),
        "{stderr}"
    );
}

/// The same with the shared scan, whose caller sleeps until the scanner
/// releases it. Its first sleep (up to 10 ms, the waiter's first recheck
/// bound) reads no clock, so its warning may come that much after the
/// unshared caller's would; the guard is held 3 s.
#[test]
#[cfg_attr(miri, ignore = "a child process, which miri does not start")]
fn a_shared_synchronize_held_up_by_a_guard_says_so() {
    if in_the_child() {
        return synchronize_held_for(true, Duration::from_millis(3000));
    }
    let stderr = stderr_of("a_shared_synchronize_held_up_by_a_guard_says_so", "0.2");
    assert!(
        warns_of_the_held_address(&stderr, |id| format!(
            "(a guard of thread {id} protects that address;"
        )),
        "{stderr}"
    );
}

/// A guard held well inside the timeout draws no warning, nor any wait when
/// the warnings are off.
#[test]
#[cfg_attr(miri, ignore = "a child process, which miri does not start")]
fn no_warning_inside_the_timeout_or_when_off() {
    test_support::stall::assert_no_warning_inside_the_timeout_or_when_off(
        "no_warning_inside_the_timeout_or_when_off",
        |hold| {
            synchronize_held_for(false, hold);
            synchronize_held_for(true, hold);
        },
    );
}

/// In a fork child the forking thread's guard is named by the child
/// thread's kernel id, which `after_fork_child` records in its slots: not
/// by the parent thread's, whose thread the child does not have.
#[test]
#[cfg_attr(miri, ignore = "a child process, which miri does not start")]
fn a_fork_child_names_its_own_thread() {
    if in_the_child() {
        return synchronize_in_a_fork_child_held_by_the_forking_thread();
    }
    let stderr = stderr_of("a_fork_child_names_its_own_thread", "0.2");
    let (parent, holder) = (printed(&stderr, "parent "), printed(&stderr, "holder "));
    assert_ne!(
        parent, holder,
        "the fork child's thread has an id of its own"
    );
    assert!(
        warns_of_the_held_address(&stderr, |id| format!("(held by thread {id}:")),
        "{stderr}"
    );
}

fn synchronize_in_a_fork_child_held_by_the_forking_thread() {
    use test_support::{ForkHooks, assert_child_succeeded, fork_and_wait};
    let domain = &Domain::builder().shared_scan(false).build();
    let value = Box::into_raw(Box::new(7u64));
    let src = AtomicPtr::new(value);
    let (guard, _) = domain.acquire(&src);
    eprintln!("parent {}", kernel_thread_id());
    let hooks = ForkHooks {
        before: hazptr::fork::before_fork,
        after_parent: hazptr::fork::after_fork_parent,
        after_child: hazptr::fork::after_fork_child,
    };
    let addr = value as usize;
    // SAFETY: the child uses the forking thread's own guard and addresses,
    // no reference another thread's guard protected.
    let status = unsafe {
        fork_and_wait(hooks, move || {
            eprintln!("holder {}", kernel_thread_id());
            thread::scope(|s| {
                s.spawn(move || domain.synchronize(addr as *const u64));
                thread::sleep(Duration::from_millis(1500));
                drop(guard);
            });
        })
    };
    assert_child_succeeded(status, "the fork child's synchronize");
    eprintln!("address {addr:#x}");
    // SAFETY: from `Box::into_raw`; the parent's guard went with the
    // closure, and no other guard protects it.
    drop(unsafe { Box::from_raw(value) });
}
