//! Sleeping and waking on a 32-bit word: the "then sleep" half of every wait.
//!
//! Every wait in this crate spins briefly and then calls [`wait`], and the
//! party that ends the wait calls [`wake_one`] or [`wake_all`] on the same
//! word (`FUTEX_WAIT`/`FUTEX_WAKE`, process-private, through `rustix`). A
//! `wait` returns when woken, when the word no longer holds `expected`, on a
//! signal, or when the timeout passes; callers always recheck their condition,
//! so spurious returns are harmless.
//!
//! Under `cfg(loom)` the futex is modelled with a loom `Mutex` and `Condvar`
//! standing in for the kernel's hash bucket: `wait` checks the word under the
//! mutex and blocks on the condition variable, and a wake takes the mutex and
//! notifies every waiter (of any word: callers recheck, so the extra wake-ups
//! are spurious returns, and `wake_one` is modelled as waking all). A waiter
//! nobody wakes stays blocked, so a lost wake-up is a deadlock that loom
//! reports. A timed wait cannot block in a model (time does not pass there):
//! it yields instead.
//!
//! (The model once made every wait a plain yield. Loom may schedule two
//! yielding threads against each other forever, never running the third that
//! both wait for, so deep models exceeded their branch limit without any bug;
//! and a lost wake-up went unseen, because a yield always returns.)

use crate::sync::AtomicU32;
use std::time::Duration;

/// Sleeps while `word` holds `expected`, for at most `timeout` (forever if
/// `None`).
#[cfg(not(loom))]
pub(crate) fn wait(word: &AtomicU32, expected: u32, timeout: Option<Duration>) {
    use rustix::thread::futex;
    let timespec = timeout.map(|t| futex::Timespec {
        tv_sec: t.as_secs().min(i64::MAX as u64) as i64,
        tv_nsec: i64::from(t.subsec_nanos()),
    });
    // EAGAIN (the word changed), EINTR and ETIMEDOUT all mean "recheck", which
    // every caller does; no other error is possible for a valid private futex.
    let _ = futex::wait(word, futex::Flags::PRIVATE, expected, timespec.as_ref());
}

/// Wakes at most one thread sleeping on `word`.
#[cfg(not(loom))]
pub(crate) fn wake_one(word: &AtomicU32) {
    let _ = rustix::thread::futex::wake(word, rustix::thread::futex::Flags::PRIVATE, 1);
}

/// Wakes every thread sleeping on `word`.
#[cfg(not(loom))]
pub(crate) fn wake_all(word: &AtomicU32) {
    let _ =
        rustix::thread::futex::wake(word, rustix::thread::futex::Flags::PRIVATE, i32::MAX as u32);
}

#[cfg(loom)]
loom::lazy_static! {
    /// The model's one futex hash bucket: its lock and its wait queue.
    static ref BUCKET: (loom::sync::Mutex<()>, loom::sync::Condvar) =
        (loom::sync::Mutex::new(()), loom::sync::Condvar::new());
}

/// Under loom: blocks until a wake if `word` holds `expected` when checked
/// under the bucket lock; a timed wait yields instead (see the module docs).
#[cfg(loom)]
pub(crate) fn wait(word: &AtomicU32, expected: u32, timeout: Option<Duration>) {
    if timeout.is_some() {
        crate::sync::yield_now();
        return;
    }
    let (lock, queue) = &*BUCKET;
    let guard = lock.lock().expect("never poisoned");
    // Relaxed, as the kernel's read of the word: the ordering comes from the
    // bucket lock, which a waker takes after storing the word.
    if word.load(std::sync::atomic::Ordering::Relaxed) == expected {
        drop(queue.wait(guard).expect("never poisoned"));
    }
}

/// Under loom: wakes every waiter (see the module docs).
#[cfg(loom)]
pub(crate) fn wake_one(word: &AtomicU32) {
    wake_all(word);
}

/// Under loom: takes the bucket lock and wakes every waiter.
#[cfg(loom)]
pub(crate) fn wake_all(_word: &AtomicU32) {
    let (lock, queue) = &*BUCKET;
    let _guard = lock.lock().expect("never poisoned");
    queue.notify_all();
}
