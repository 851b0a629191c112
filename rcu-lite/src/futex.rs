//! Sleeping and waking on a 32-bit word: the "then sleep" half of every wait.
//!
//! Every wait in this crate spins briefly and then calls [`wait`], and the
//! party that ends the wait calls [`wake_one`] or [`wake_all`] on the same
//! word (`FUTEX_WAIT`/`FUTEX_WAKE`, process-private, through `rustix`). A
//! `wait` returns when woken, when the word no longer holds `expected`, on a
//! signal, or when the timeout passes; callers always recheck their condition,
//! so spurious returns are harmless.
//!
//! Under `cfg(loom)` there is no futex: `wait` is `loom::thread::yield_now()`
//! and the wakes do nothing, so every wait becomes a yielding spin that loom's
//! scheduler can explore.

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

/// Under loom: a yield (see the module docs).
#[cfg(loom)]
pub(crate) fn wait(_word: &AtomicU32, _expected: u32, _timeout: Option<Duration>) {
    crate::sync::yield_now();
}

/// Under loom: nothing to wake, waiters are yielding.
#[cfg(loom)]
pub(crate) fn wake_one(_word: &AtomicU32) {}

/// Under loom: nothing to wake, waiters are yielding.
#[cfg(loom)]
pub(crate) fn wake_all(_word: &AtomicU32) {}
