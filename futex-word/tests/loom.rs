//! Loom checks of the futex model itself: the qrwlock, hazptr and rcu-lite
//! models find lost wake-ups only because a sleep here ends by a wake of its
//! own word, and `wake_one` wakes one sleeper, not every one.
//!
//! Run: `RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom cargo test -p
//! futex-word --test loom --release`
#![cfg(loom)]

use futex_word::{AtomicU32, wait, wake_all, wake_one};
use loom::sync::Arc;
use loom::sync::atomic::Ordering::Relaxed;
use loom::thread;

/// A thread that sleeps on `word` once, while it holds zero, and returns
/// what the word holds once it is awake: zero if what ended the sleep came
/// before the word changed.
fn sleeper(word: &Arc<AtomicU32>) -> thread::JoinHandle<u32> {
    let word = word.clone();
    thread::spawn(move || {
        wait(&word, 0, None);
        word.load(Relaxed)
    })
}

/// A waiter that rechecks is woken by `wake_one` after the change it waits
/// for.
#[test]
fn wake_one_wakes_a_sleeper() {
    loom::model(|| {
        let word = Arc::new(AtomicU32::new(0));
        let waiter = {
            let word = word.clone();
            thread::spawn(move || {
                while word.load(Relaxed) == 0 {
                    wait(&word, 0, None);
                }
            })
        };
        word.store(1, Relaxed);
        wake_one(&word);
        waiter.join().unwrap();
    });
}

/// A wake of another word does not end a sleep: only a change of the word
/// or a wake of the word itself does, so the sleeper sees the change.
#[test]
fn a_wake_of_another_word_does_not_end_a_sleep() {
    loom::model(|| {
        let (word, other) = (Arc::new(AtomicU32::new(0)), AtomicU32::new(0));
        let sleeper = sleeper(&word);
        wake_all(&other);
        word.store(1, Relaxed);
        wake_all(&word);
        assert_eq!(sleeper.join().unwrap(), 1, "woken by another word's wake");
    });
}

/// `wake_one` ends one sleep: of two threads asleep on the word, at most one
/// wakes before the word changes.
#[test]
fn wake_one_wakes_at_most_one_sleeper() {
    loom::model(|| {
        let word = Arc::new(AtomicU32::new(0));
        let sleepers = [sleeper(&word), sleeper(&word)];
        wake_one(&word);
        word.store(1, Relaxed);
        wake_all(&word);
        let early = sleepers
            .into_iter()
            .map(|s| s.join().unwrap())
            .filter(|&seen| seen == 0)
            .count();
        assert!(early <= 1, "wake_one woke {early} sleepers");
    });
}
