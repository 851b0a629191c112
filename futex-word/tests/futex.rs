//! The real futex: each wake function wakes the threads asleep on the word.
#![cfg(not(loom))]

use futex_word::{AtomicU32, wait, wake_all, wake_all_at, wake_one};
use std::sync::atomic::AtomicUsize;
use std::sync::atomic::Ordering::Relaxed;
use std::time::Duration;

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
