//! Sleeping and waking on a 32-bit word: the "then sleep" half of every wait
//! in hazptr, qrwlock and rcu-lite.
//!
//! [`wait`] blocks while the word holds `expected` (the check and the sleep
//! are one step, so a wake that follows a change of the word cannot be
//! missed); [`wake_one`], [`wake_all`] and [`wake_all_at`] wake threads
//! sleeping on a word. This is `FUTEX_WAIT`/`FUTEX_WAKE`, process-private,
//! through `rustix`. `wait` also returns when the word no longer holds
//! `expected`, on a signal, when the timeout passes, or spuriously; every
//! caller rechecks its condition.
//!
//! [`wake_all_at`] takes an address that may already be dangling, for a
//! waker whose sleeper may return, and pop the word off its stack, as soon as
//! it sees the word change (qrwlock's MCS queue). A private `FUTEX_WAKE` only
//! hashes the address and never reads the memory there: a stale wake is at
//! worst a spurious wake of whoever waits there now (the argument of
//! `parking_lot_core`'s Linux unpark).
//!
//! # Under loom
//!
//! With `RUSTFLAGS="--cfg loom"` the futex is a model: one loom `Mutex` and
//! `Condvar` stand in for the kernel's hash bucket. `wait` checks the word
//! under the mutex and blocks on the condition variable; every wake takes the
//! mutex and notifies every waiter (of any word: callers recheck, so the extra
//! wake-ups are spurious returns, and `wake_one` wakes all). A waiter nobody
//! wakes stays blocked, so a lost wake-up is a deadlock that loom reports. A
//! timed wait cannot block in a model (time does not pass there): it yields.
//!
//! (A model in which every wait was a plain yield was tried first. Loom may
//! schedule two yielding threads against each other forever, never running a
//! third that both wait for, so deep models exceeded their branch limit
//! without any bug; and a lost wake-up went unseen, because a yield always
//! returns.)
//!
//! [`AtomicU32`] is loom's under `cfg(loom)` and std's otherwise, as in the
//! crates that use this one.

#[cfg(loom)]
pub use loom::sync::atomic::AtomicU32;
#[cfg(not(loom))]
pub use std::sync::atomic::AtomicU32;

use std::time::Duration;

/// Sleeps while `word` holds `expected`, for at most `timeout` (forever if
/// `None`). May return early; the caller rechecks.
#[cfg(not(loom))]
#[inline]
pub fn wait(word: &AtomicU32, expected: u32, timeout: Option<Duration>) {
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
#[inline]
pub fn wake_one(word: &AtomicU32) {
    let _ = rustix::thread::futex::wake(word, rustix::thread::futex::Flags::PRIVATE, 1);
}

/// Wakes every thread sleeping on `word`.
#[cfg(not(loom))]
#[inline]
pub fn wake_all(word: &AtomicU32) {
    let _ =
        rustix::thread::futex::wake(word, rustix::thread::futex::Flags::PRIVATE, i32::MAX as u32);
}

/// Wakes every thread sleeping on the word at `word`, which may no longer be
/// allocated (see the crate docs).
#[cfg(not(loom))]
#[inline]
#[expect(
    clippy::not_unsafe_ptr_arg_deref,
    reason = "the syscall only hashes the address; nothing dereferences it"
)]
pub fn wake_all_at(word: *const AtomicU32) {
    // SAFETY: FUTEX_WAKE | FUTEX_PRIVATE_FLAG takes the address as a key only
    // (`get_futex_key()` for a private futex reads no memory), so a dangling
    // `word` is not dereferenced by anyone: the call then wakes nobody, or
    // spuriously wakes a thread that now waits at that address, or fails with
    // EFAULT if the page is gone; all three are harmless.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word,
            libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG,
            i32::MAX,
        );
    }
}

#[cfg(loom)]
loom::lazy_static! {
    /// The model's one futex hash bucket: its lock and its wait queue.
    static ref BUCKET: (loom::sync::Mutex<()>, loom::sync::Condvar) =
        (loom::sync::Mutex::new(()), loom::sync::Condvar::new());
}

/// Under loom: blocks until a wake if `word` holds `expected` when checked
/// under the bucket lock; a timed wait yields instead (see the crate docs).
#[cfg(loom)]
pub fn wait(word: &AtomicU32, expected: u32, timeout: Option<Duration>) {
    if timeout.is_some() {
        loom::thread::yield_now();
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

/// Under loom: wakes every waiter (see the crate docs).
#[cfg(loom)]
pub fn wake_one(word: &AtomicU32) {
    wake_all(word);
}

/// Under loom: takes the bucket lock and wakes every waiter.
#[cfg(loom)]
pub fn wake_all(_word: &AtomicU32) {
    let (lock, queue) = &*BUCKET;
    let _guard = lock.lock().expect("never poisoned");
    queue.notify_all();
}

/// Under loom: as [`wake_all`]; the address is never used.
#[cfg(loom)]
pub fn wake_all_at(_word: *const AtomicU32) {
    let (lock, queue) = &*BUCKET;
    let _guard = lock.lock().expect("never poisoned");
    queue.notify_all();
}
