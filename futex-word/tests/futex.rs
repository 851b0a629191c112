//! The real futex: each wake function wakes the threads asleep on the word;
//! `wait` returns at its timeout, and at once on a word that no longer holds
//! what it expects.
#![cfg(not(loom))]

use futex_word::{AtomicU32, wait, wake_all, wake_all_at, wake_one};
use std::sync::atomic::AtomicUsize;
use std::sync::atomic::Ordering::Relaxed;
use std::time::{Duration, Instant};

/// `sleepers` threads each wait once on a word that holds what they expect
/// for good, so only a wake ends their sleep; `wake` is called until every
/// one has returned (a wake that comes before a thread is asleep wakes
/// nobody, so one call is not enough). Fails under a deadline if a wake
/// wakes nobody.
fn wake_until_every_sleeper_returns(what: &str, sleepers: usize, wake: fn(&AtomicU32)) {
    test_support::within_a_deadline(what, Duration::from_secs(10), move || {
        let word = AtomicU32::new(0);
        let returned = AtomicUsize::new(0);
        std::thread::scope(|s| {
            for _ in 0..sleepers {
                s.spawn(|| {
                    wait(&word, 0, None);
                    returned.fetch_add(1, Relaxed);
                });
            }
            while returned.load(Relaxed) < sleepers {
                wake(&word);
                std::thread::sleep(Duration::from_millis(1));
            }
        });
    });
}

#[test]
fn wake_one_wakes_a_sleeper() {
    wake_until_every_sleeper_returns(
        "wake_one_wakes_a_sleeper (a thread asleep on the word, never woken)",
        2,
        wake_one,
    );
}

#[test]
fn wake_all_wakes_the_sleepers() {
    wake_until_every_sleeper_returns(
        "wake_all_wakes_the_sleepers (a thread asleep on the word, never woken)",
        2,
        wake_all,
    );
}

#[test]
fn wake_all_at_wakes_the_sleepers_at_the_address() {
    wake_until_every_sleeper_returns(
        "wake_all_at_wakes_the_sleepers_at_the_address (a thread asleep on the word, never woken)",
        2,
        |word| wake_all_at(word),
    );
}

/// `sleepers` threads, named `{name}-{i}` (under the 15 bytes the kernel
/// keeps of a thread's name), each wait once on a word that
/// holds what they expect for good; once every one is seen asleep, a single
/// call of `wake` must end every sleep (fails under a deadline if one sleeper
/// is left).
fn one_wake_ends_every_sleep(
    what: &'static str,
    name: &'static str,
    sleepers: usize,
    wake: fn(&AtomicU32),
) {
    test_support::within_a_deadline(what, Duration::from_secs(40), move || {
        let word = AtomicU32::new(0);
        let returned = AtomicUsize::new(0);
        // Sleepers that reached their wait: from then on each allocates
        // nothing and blocks on nothing but the word (seen asleep before,
        // it could be waiting on an allocator lock of its start).
        let at_the_wait = AtomicUsize::new(0);
        std::thread::scope(|s| {
            for i in 0..sleepers {
                std::thread::Builder::new()
                    .name(format!("{name}-{i}"))
                    .spawn_scoped(s, || {
                        at_the_wait.fetch_add(1, Relaxed);
                        wait(&word, 0, None);
                        returned.fetch_add(1, Relaxed);
                    })
                    .expect("spawn");
            }
            while at_the_wait.load(Relaxed) < sleepers {
                std::thread::sleep(Duration::from_millis(1));
            }
            let asleep = std::panic::catch_unwind(|| {
                for i in 0..sleepers {
                    test_support::until_asleep(
                        &format!("{name}-{i}"),
                        3,
                        Duration::from_secs(5),
                        "a thread that only waits on the word",
                    );
                }
            });
            if let Err(panic) = asleep {
                // Let the sleepers go, so that the scope ends and the test
                // fails with the message of what went wrong.
                while returned.load(Relaxed) < sleepers {
                    wake_all(&word);
                    std::thread::sleep(Duration::from_millis(1));
                }
                std::panic::resume_unwind(panic);
            }
            assert_eq!(
                returned.load(Relaxed),
                0,
                "a wait returned with nobody waking it"
            );
            wake(&word);
        });
        assert_eq!(returned.load(Relaxed), sleepers);
    });
}

/// `wake_all` wakes every thread asleep on the word with one call (the
/// loop above would pass a `wake_all` that woke one per call).
#[test]
#[cfg_attr(
    miri,
    ignore = "waits for the sleepers in /proc, which miri does not offer"
)]
fn one_wake_all_wakes_every_sleeper() {
    one_wake_ends_every_sleep(
        "one_wake_all_wakes_every_sleeper (a thread asleep on the word, never woken)",
        "fx-wake-all",
        2,
        wake_all,
    );
}

/// `wake_all_at` likewise wakes every sleeper at the address with one call.
#[test]
#[cfg_attr(
    miri,
    ignore = "waits for the sleepers in /proc, which miri does not offer"
)]
fn one_wake_all_at_wakes_every_sleeper() {
    one_wake_ends_every_sleep(
        "one_wake_all_at_wakes_every_sleeper (a thread asleep on the word, never woken)",
        "fx-wake-at",
        2,
        |word| wake_all_at(word),
    );
}

/// A timed `wait` that nobody wakes, on a word that keeps holding what it
/// expects, returns once the timeout has passed: not before it (less a
/// little slack for the clock), and at all (under a deadline). Over a
/// second, so that both the seconds and the nanoseconds of the timeout count.
#[test]
fn a_timed_wait_nobody_wakes_returns_after_its_timeout() {
    test_support::within_a_deadline(
        "a_timed_wait_nobody_wakes_returns_after_its_timeout (the timed wait never returned)",
        Duration::from_secs(10),
        || {
            const TIMEOUT: Duration = Duration::from_millis(1_100);
            let word = AtomicU32::new(0);
            let start = Instant::now();
            wait(&word, 0, Some(TIMEOUT));
            let waited = start.elapsed();
            assert!(
                waited >= TIMEOUT - Duration::from_millis(10),
                "the wait returned after {waited:?}, before its timeout of {TIMEOUT:?}"
            );
        },
    );
}

/// A `wait` on a word that no longer holds `expected` returns at once, timed
/// or not (the check is part of the wait): under a deadline far shorter than
/// the timeout.
#[test]
fn a_wait_on_a_word_that_no_longer_holds_expected_returns_at_once() {
    test_support::within_a_deadline(
        "a_wait_on_a_word_that_no_longer_holds_expected_returns_at_once (it slept)",
        Duration::from_secs(10),
        || {
            let word = AtomicU32::new(1);
            wait(&word, 0, None);
            wait(&word, 0, Some(Duration::from_secs(3_600)));
        },
    );
}
