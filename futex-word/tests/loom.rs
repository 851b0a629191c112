//! Loom checks of the futex model itself: the qrwlock, hazptr and rcu-lite
//! models find lost wake-ups only because a sleep here ends by a wake of its
//! own word, and `wake_one` wakes one sleeper, not every one; and they check
//! that their waits recheck only because `loom_spurious_wakeups` really ends
//! waits that nobody woke.
//!
//! Run: `RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom cargo test -p
//! futex-word --test loom --release`
#![cfg(loom)]

use futex_word::{
    AtomicU32, loom_model_with_spurious_wakeups_too, loom_spurious_wakeups, wait, wake_all,
    wake_one,
};
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

/// With `loom_spurious_wakeups(true)`, every other untimed wait of a thread
/// returns at once, as documented: the first and the third here return
/// though the word still holds what they expect and nobody wakes them
/// (without the injection loom reports each as a deadlock), and the second
/// sleeps as usual, returning only after the change its waker made before
/// its wake.
#[test]
fn spurious_wakeups_end_every_other_wait_of_a_thread() {
    loom::model(|| {
        loom_spurious_wakeups(true);
        let word = Arc::new(AtomicU32::new(0));
        // The first: no other thread exists yet, so nothing can end it but
        // the injection.
        wait(&word, 0, None);
        assert_eq!(word.load(Relaxed), 0);
        let waker = change_and_wake_all(&word);
        // The second sleeps: it ends on the change or the wake after it.
        wait(&word, 0, None);
        assert_eq!(
            word.load(Relaxed),
            1,
            "the second wait returned before the word changed: not every other one"
        );
        waker.join().unwrap();
        // The third: the word holds 1 and nobody will wake it again.
        wait(&word, 1, None);
    });
}

/// Starts a thread that stores 1 into `word` and wakes every sleeper on it.
fn change_and_wake_all(word: &Arc<AtomicU32>) -> thread::JoinHandle<()> {
    let word = word.clone();
    thread::spawn(move || {
        // Relaxed: the wake takes the bucket lock after it, and the sleeper
        // checks the word under that lock (the futex model).
        word.store(1, Relaxed);
        wake_all(&word);
    })
}

/// Whether a run of the model below saw its wait return on an unchanged
/// word (a spurious return). A setting across runs, not a model variable.
static RETURNED_UNWOKEN: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// `loom_model_with_spurious_wakeups_too` runs its body a second time with
/// the injection on: a wait whose waker may not have run yet returns on the
/// unchanged word in some execution (in the plain runs it never does: it
/// returns only once the waker changed the word or woke it).
#[test]
fn the_second_run_of_the_model_has_spurious_wakeups() {
    loom_model_with_spurious_wakeups_too(|| {
        let word = Arc::new(AtomicU32::new(0));
        let waker = change_and_wake_all(&word);
        wait(&word, 0, None);
        if word.load(Relaxed) == 0 {
            // Relaxed: read after `loom::model` has returned, on this thread.
            RETURNED_UNWOKEN.store(true, std::sync::atomic::Ordering::Relaxed);
        }
        waker.join().unwrap();
    });
    assert!(
        RETURNED_UNWOKEN.load(std::sync::atomic::Ordering::Relaxed),
        "no run returned from a wait nobody woke: the injection never ran"
    );
}
