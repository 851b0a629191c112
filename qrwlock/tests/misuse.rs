//! Every documented misuse of qrwlock panics with a message that names it,
//! none hangs, and the lock is usable afterwards (the word is restored before
//! the panic). Each misuse here is alone on its lock: one that races other
//! threads using the lock can disturb them before the repair (see the
//! crate's *Misuse* section).
//!
//! Each misuse runs on a fresh thread under a watchdog: a misuse that returns
//! normally fails the test, and one still running after [`HANG_LIMIT`] (a wait
//! that can never end, e.g. a futex sleep on a bad sleeper bit) ends the test
//! process with a message.
#![cfg(not(loom))]

use qrwlock::{
    READER_OVERFLOW, READER_SHIFT, RawQRwLock, RwLock, cond_load_acquire, cond_load_relaxed,
};
use std::sync::Arc;
use std::sync::atomic::AtomicU32;
use std::thread;
use std::time::Duration;

use test_support::misuse::*;

const WRITE_UNHELD: &[&str] = &["write_unlock", "not write-locked"];
const READ_UNHELD: &[&str] = &["read_unlock", "no reader holds"];
const DOWNGRADE_UNHELD: &[&str] = &["downgrade", "not write-locked"];

#[test]
fn write_unlock_of_a_lock_not_write_locked() {
    assert_misuse("RawQRwLock::write_unlock, unheld", WRITE_UNHELD, || {
        let lock = RawQRwLock::new();
        refused_then(
            // SAFETY: deliberately violated: nothing is held; the check must
            // panic before the word is left corrupted.
            || unsafe { lock.write_unlock() },
            || {
                assert!(!lock.is_locked());
                assert!(lock.try_write_lock(), "word restored");
            },
        );
    });
    assert_misuse(
        "RawQRwLock::write_unlock, read-locked",
        WRITE_UNHELD,
        || {
            let lock = RawQRwLock::new();
            lock.read_lock();
            refused_then(
                // SAFETY: deliberately violated: held shared, not exclusive.
                || unsafe { lock.write_unlock() },
                || {
                    assert!(!lock.try_write_lock(), "the reader is still counted");
                    // SAFETY: the shared hold taken above.
                    unsafe { lock.read_unlock() };
                    assert!(lock.try_write_lock());
                },
            );
        },
    );
}

#[test]
fn read_unlock_of_a_lock_no_reader_holds() {
    assert_misuse("RawQRwLock::read_unlock, unheld", READ_UNHELD, || {
        let lock = RawQRwLock::new();
        refused_then(
            // SAFETY: deliberately violated: nothing is held.
            || unsafe { lock.read_unlock() },
            || {
                assert!(!lock.is_locked());
                assert!(lock.try_write_lock(), "count restored");
            },
        );
    });
    assert_misuse("RawQRwLock::read_unlock, write-locked", READ_UNHELD, || {
        let lock = RawQRwLock::new();
        lock.write_lock();
        refused_then(
            // SAFETY: deliberately violated: held exclusive, not shared.
            || unsafe { lock.read_unlock() },
            || {
                assert!(lock.is_locked_exclusive(), "the writer still holds it");
                // SAFETY: the exclusive hold taken above.
                unsafe { lock.write_unlock() };
                assert!(lock.try_read_lock());
            },
        );
    });
}

/// A writer's `read_unlock` while a reader waits at the front of the queue,
/// already counted in the word: the count is not zero, but the writer byte
/// says no reader holds the lock. Undetected, it took the waiting reader's
/// count, so a writer could later enter beside that reader, and the reader's
/// own correct unlock took the blame.
#[test]
fn read_unlock_of_a_write_locked_lock_with_a_reader_queued() {
    assert_misuse(
        "RawQRwLock::read_unlock, write-locked, a reader queued",
        &["read_unlock", "write-locked", "no reader holds"],
        || {
            let lock = Arc::new(RawQRwLock::new());
            lock.write_lock();
            let reader = {
                let lock = Arc::clone(&lock);
                thread::spawn(move || {
                    lock.read_lock();
                    // SAFETY: the shared hold taken above.
                    unsafe { lock.read_unlock() };
                })
            };
            // The front reader counts itself in before it waits for the byte.
            // Its fast path adds and takes back a count too, for an instant:
            // wait until the count has held for a while.
            let mut held = 0;
            while held < 10 {
                if format!("{lock:?}").contains("reader_count: 1") {
                    held += 1;
                } else {
                    held = 0;
                }
                thread::sleep(Duration::from_millis(2));
            }
            refused_then(
                // SAFETY: deliberately violated: held exclusive, not shared.
                || unsafe { lock.read_unlock() },
                || {
                    assert!(lock.is_locked_exclusive(), "the writer still holds it");
                    // SAFETY: the exclusive hold taken above.
                    unsafe { lock.write_unlock() };
                    reader.join().expect("the reader's unlock is a correct one");
                    assert!(lock.try_write_lock(), "the count is back to zero");
                },
            );
        },
    );
}

#[test]
fn downgrade_of_a_lock_not_write_locked() {
    assert_misuse("RawQRwLock::downgrade, unheld", DOWNGRADE_UNHELD, || {
        let lock = RawQRwLock::new();
        refused_then(
            // SAFETY: deliberately violated: nothing is held.
            || unsafe { lock.downgrade() },
            || {
                assert!(!lock.is_locked());
                assert!(lock.try_write_lock(), "word restored");
            },
        );
    });
    assert_misuse(
        "RawQRwLock::downgrade, read-locked",
        DOWNGRADE_UNHELD,
        || {
            let lock = RawQRwLock::new();
            lock.read_lock();
            refused_then(
                // SAFETY: deliberately violated: held shared, not exclusive.
                || unsafe { lock.downgrade() },
                || {
                    assert!(!lock.is_locked_exclusive());
                    // SAFETY: the one shared hold taken above.
                    unsafe { lock.read_unlock() };
                    assert!(lock.try_write_lock(), "word restored");
                },
            );
        },
    );
}

/// `lock_api`'s unlock escape hatches on [`RwLock`] reach the raw unlocks and
/// their checks.
#[test]
fn lock_api_force_unlocks_of_an_unheld_lock() {
    assert_misuse("RwLock::force_unlock_write, unheld", WRITE_UNHELD, || {
        let lock = RwLock::new(5u32);
        refused_then(
            // SAFETY: deliberately violated: no write guard was forgotten.
            || unsafe { lock.force_unlock_write(qrwlock::GuardMarker::new()) },
            || {
                *lock.write() += 1;
                assert_eq!(*lock.read(), 6);
            },
        );
    });
    assert_misuse("RwLock::force_unlock_read, unheld", READ_UNHELD, || {
        let lock = RwLock::new(5u32);
        refused_then(
            // SAFETY: deliberately violated: no read guard was forgotten.
            || unsafe { lock.force_unlock_read(qrwlock::GuardMarker::new()) },
            || {
                *lock.write() += 1;
                assert_eq!(*lock.read(), 6);
            },
        );
    });
}

#[test]
#[cfg_attr(
    miri,
    ignore = "2 million read locks outlast the hang limit under miri; raw.rs's reader_overflow_panics_before_the_count_wraps covers it from a prefilled count"
)]
fn reader_count_overflow() {
    assert_misuse(
        "RawQRwLock::read_lock past the reader count",
        &["reader count overflow"],
        || {
            let lock = RawQRwLock::new();
            let below = READER_OVERFLOW >> READER_SHIFT;
            for _ in 0..below {
                lock.read_lock();
            }
            refused_then(
                || lock.read_lock(),
                || {
                    assert!(!lock.try_write_lock());
                    for _ in 0..below {
                        // SAFETY: one of the shared holds taken above.
                        unsafe { lock.read_unlock() };
                    }
                    assert!(lock.try_write_lock(), "the refused bias was taken back");
                },
            );
        },
    );
}

#[test]
fn cond_load_acquire_with_a_sleeper_bit_that_is_not_one_bit() {
    // The predicate is never true: without the check the wait would sleep
    // forever, which the watchdog turns into a failure.
    assert_misuse(
        "cond_load_acquire with sleeper bit 0b11",
        &["cond_load_acquire", "exactly one bit"],
        || {
            let word = AtomicU32::new(0);
            cond_load_acquire(&word, 0b11, |v| v == 1);
        },
    );
}

/// `cond_load_relaxed` runs the same check, and its message names it.
#[test]
fn cond_load_relaxed_with_a_sleeper_bit_that_is_not_one_bit() {
    assert_misuse(
        "cond_load_relaxed with sleeper bit 0b11",
        &["qrwlock::cond_load_relaxed:", "exactly one bit"],
        || {
            let word = AtomicU32::new(0);
            cond_load_relaxed(&word, 0b11, |v| v == 1);
        },
    );
}
