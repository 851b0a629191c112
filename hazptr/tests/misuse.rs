//! Every documented misuse of hazptr panics with a message that names it, none
//! hangs, and the domain keeps working afterwards.
//!
//! Each misuse runs on a fresh thread (slots are per thread) under a watchdog:
//! a misuse that returns normally fails the test, and one still running after
//! [`HANG_LIMIT`] (synchronize waiting for its own caller, which is what these
//! misuses would be without their check) ends the test process with a message.
#![cfg(not(loom))]

use hazptr::{AtomicBox, Domain, Guard};
use std::io::Write;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::sync::atomic::AtomicPtr;
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

/// How long a misuse may run before it counts as a hang.
const HANG_LIMIT: Duration = Duration::from_secs(20);

/// Runs `misuse` on a fresh thread and returns its panic message.
fn panic_message_of(what: &str, misuse: impl FnOnce() + Send + 'static) -> String {
    let (tx, rx) = mpsc::channel();
    thread::Builder::new()
        .name(format!("misuse: {what}"))
        .spawn(move || {
            let outcome = catch_unwind(AssertUnwindSafe(misuse));
            let message = outcome.err().map(|payload| {
                payload
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| payload.downcast_ref::<&str>().map(|s| (*s).to_owned()))
                    .unwrap_or_else(|| "<non-string panic payload>".to_owned())
            });
            let _ = tx.send(message);
        })
        .expect("spawn the misuse thread");
    match rx.recv_timeout(HANG_LIMIT) {
        Ok(Some(message)) => message,
        Ok(None) => panic!("{what}: returned normally instead of panicking"),
        Err(_) => {
            // Report outside the test harness's capture and end the process:
            // the hung thread would otherwise keep the harness waiting.
            let _ = writeln!(
                std::io::stderr(),
                "misuse test HUNG: {what} still running after {HANG_LIMIT:?} instead of panicking"
            );
            std::process::exit(101);
        }
    }
}

/// Asserts that `misuse` panics with a message containing every one of `names`.
fn assert_misuse(what: &str, names: &[&str], misuse: impl FnOnce() + Send + 'static) {
    let message = panic_message_of(what, misuse);
    for name in names {
        assert!(
            message.contains(name),
            "{what}: the panic message does not name the misuse ({name:?}): {message}"
        );
    }
}

/// Runs `misuse`, then `after` (which checks that the domain still works),
/// then passes `misuse`'s panic on.
fn refused_then(misuse: impl FnOnce(), after: impl FnOnce()) {
    let outcome = catch_unwind(AssertUnwindSafe(misuse));
    after();
    if let Err(payload) = outcome {
        resume_unwind(payload);
    }
}

const HOLDING: &[&str] = &["synchronize(", "holds a guard protecting that address"];
/// Builds one kind of domain.
type Build = fn() -> Domain;

const OTHER_DOMAIN: &[&str] = &["AtomicBox::load", "guard of another domain"];

#[test]
fn synchronize_while_holding_a_guard_on_the_address() {
    let builders: [(&str, Build); 3] = [
        ("shared scan", Domain::new),
        ("own scan", || Domain::builder().shared_scan(false).build()),
        ("backup slots", || {
            Domain::builder().force_slow_path(true).build()
        }),
    ];
    for (kind, build) in builders {
        assert_misuse(
            &format!("Domain::synchronize while holding ({kind})"),
            HOLDING,
            move || {
                let domain = build();
                let shared = AtomicPtr::new(Box::into_raw(Box::new(1u64)));
                let mut guard = domain.guard();
                let p = guard.protect_ptr(&shared);
                refused_then(
                    || domain.synchronize(p),
                    || {
                        drop(guard);
                        domain.synchronize(p);
                        // SAFETY: never shared with another thread; no guard
                        // protects it any more.
                        drop(unsafe { Box::from_raw(shared.into_inner()) });
                    },
                );
            },
        );
    }
}

#[test]
fn synchronize_while_holding_a_promoted_guard() {
    assert_misuse(
        "Domain::synchronize while holding a guard promoted to a backup slot",
        HOLDING,
        || {
            let domain = Domain::new();
            let shared = AtomicPtr::new(Box::into_raw(Box::new(1u64)));
            let mut guard = domain.guard();
            let p = guard.protect_ptr(&shared);
            guard.promote();
            assert!(guard.is_backup());
            refused_then(
                || domain.synchronize(p),
                || {
                    drop(guard);
                    domain.synchronize(p);
                    // SAFETY: never shared; no guard protects it any more.
                    drop(unsafe { Box::from_raw(shared.into_inner()) });
                },
            );
        },
    );
}

#[test]
fn global_synchronize_while_holding_the_address() {
    assert_misuse(
        "hazptr::synchronize while holding (global domain)",
        HOLDING,
        || {
            let shared = AtomicPtr::new(Box::into_raw(Box::new(1u64)));
            let (guard, p) = hazptr::acquire(&shared);
            refused_then(
                || hazptr::synchronize(p),
                || {
                    drop(guard);
                    hazptr::synchronize(p);
                    // SAFETY: never shared; no guard protects it any more.
                    drop(unsafe { Box::from_raw(shared.into_inner()) });
                },
            );
        },
    );
}

#[test]
fn replaced_synchronize_while_holding_the_old_value() {
    assert_misuse(
        "Replaced::synchronize while this thread's guard protects the old value",
        HOLDING,
        || {
            let domain = Domain::new();
            let boxed = AtomicBox::new_in(7u64, &domain);
            let mut guard = domain.guard();
            assert_eq!(boxed.load(&mut guard), Some(&7));
            let old = boxed.swap(Some(Box::new(8))).expect("was set");
            refused_then(
                // The refused wait leaks the old value (it is never freed
                // while possibly protected).
                || drop(old.synchronize()),
                || {
                    drop(guard);
                    let again = boxed.swap(Some(Box::new(9))).expect("was set");
                    assert_eq!(*again.synchronize(), 8);
                },
            );
        },
    );
}

#[test]
fn atomic_box_load_with_a_guard_of_another_domain() {
    assert_misuse(
        "AtomicBox::load (user domain) with a global guard",
        OTHER_DOMAIN,
        || {
            let domain = Domain::new();
            let boxed = AtomicBox::new_in(1u64, &domain);
            let mut guard = Guard::new();
            refused_then(
                || {
                    let _ = boxed.load(&mut guard);
                },
                || {
                    let mut own = domain.guard();
                    assert_eq!(boxed.load(&mut own), Some(&1));
                },
            );
        },
    );
    assert_misuse(
        "AtomicBox::load (global domain) with a user domain's guard",
        OTHER_DOMAIN,
        || {
            let domain = Domain::new();
            let boxed = AtomicBox::new(2u64);
            let mut guard = domain.guard();
            refused_then(
                || {
                    let _ = boxed.load(&mut guard);
                },
                || {
                    let mut own = Guard::new();
                    assert_eq!(boxed.load(&mut own), Some(&2));
                },
            );
        },
    );
    assert_misuse(
        "AtomicBox::load with the guard of another user domain",
        OTHER_DOMAIN,
        || {
            let (a, b) = (Domain::new(), Domain::new());
            let boxed = AtomicBox::new_in(3u64, &a);
            let mut guard = b.guard();
            refused_then(
                || {
                    let _ = boxed.load(&mut guard);
                },
                || {
                    let mut own = a.guard();
                    assert_eq!(boxed.load(&mut own), Some(&3));
                },
            );
        },
    );
}
