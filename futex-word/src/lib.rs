//! Sleeping and waking on a 32-bit word: the "then sleep" half of every wait
//! in hazptr, qrwlock and rcu-lite; and [`stall`], the stall warnings of
//! their waits for other threads.
//!
//! [`wait`] blocks while the word holds `expected` (the check and the sleep
//! are one step, so a wake that follows a change of the word cannot be
//! missed); [`wake_one`], [`wake_all`] and [`wake_all_at`] wake threads
//! sleeping on a word. This is `FUTEX_WAIT`/`FUTEX_WAKE`, process-private,
//! through `rustix` (`wake_all_at` through `libc::syscall`, since it takes a
//! raw address that may no longer point to a live word). `wait` also returns when the word no longer holds
//! `expected`, on a signal, when the timeout passes, or spuriously; every
//! caller rechecks its condition.
//!
//! A one-shot flag: the waiter sleeps until the word changes; the setter
//! changes it, then wakes (the order that makes a wake-up impossible to
//! lose: a waiter that checked before the change is asleep when the wake
//! comes, or its `wait` finds the word changed and returns).
//!
//! ```
//! use futex_word::{AtomicU32, wait, wake_all};
//! use std::sync::atomic::Ordering::{Acquire, Release};
//!
//! let done = AtomicU32::new(0);
//! std::thread::scope(|s| {
//!     s.spawn(|| {
//!         // Acquire: pairs with the Release store below.
//!         while done.load(Acquire) == 0 {
//!             wait(&done, 0, None); // returns early at times: loop
//!         }
//!     });
//!     done.store(1, Release);
//!     wake_all(&done);
//! });
//! ```
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
//! under the mutex, records its address and blocks; a wake takes the mutex,
//! marks the sleepers on its address as woken (`wake_one` the one that has
//! waited longest, `wake_all` every one) and notifies the condition variable.
//! A sleeper returns only once a wake of its own address marked it, so a
//! lost wake-up is a deadlock that loom reports even when other words are
//! woken meanwhile (a model that woke every sleeper on every wake hid those).
//! A timed wait cannot block in a model (time does not pass there): it
//! yields.
//!
//! A real futex also returns without a wake (a signal, a stale wake by
//! address). `loom_spurious_wakeups` (built under `--cfg loom` only) makes a model do so too: every other
//! untimed wait of each thread returns at once, so a caller that does not
//! recheck its condition fails the model instead of passing it.
//!
//! The model is stronger than the kernel in one way: a sleeper woken by a
//! wake leaves through the bucket mutex that the waker took after changing
//! the word, so it acquires everything the waker did before; `FUTEX_WAKE`
//! promises user space no such ordering. A caller whose re-read of the word
//! after a sleep is Relaxed where it should acquire passes a model that
//! ends the wait that way. The spurious returns above and the spinning
//! before a sleep take no mutex, so each acquire after a wait needs a model
//! that ends the wait on one of those paths (as
//! `cond_load_acquire_sees_what_the_waker_wrote` in qrwlock's models does).
//!
//! (A model in which every wait was a plain yield was tried first. Loom may
//! schedule two yielding threads against each other forever, never running a
//! third that both wait for, so deep models exceeded their branch limit
//! without any bug; and a lost wake-up went unseen, because a yield always
//! returns.)
//!
//! [`AtomicU32`] is loom's under `cfg(loom)` and std's otherwise, as in the
//! crates that use this one.

// Only Linux (and Android, its kernel) has `futex(2)`; a port would need each
// system's own word wait (`__ulock_wait`, `_umtx_op`, `WaitOnAddress`) and a
// new argument for `wake_all_at`, whose dangling-address reasoning holds for
// Linux private futexes only.
#[cfg(not(any(target_os = "linux", target_os = "android")))]
compile_error!(
    "futex-word, and hazptr, qrwlock and rcu-lite, which sleep on it, support Linux only \
     (they need futex(2)); membarrier-sim builds elsewhere with SeqCst fences"
);

pub mod stall;
pub mod thread_start;

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
    // Seconds capped at `i32::MAX` (68 years): on 32-bit targets rustix
    // sends a longer timeout through `futex_time64`, which kernels older
    // than 5.1 lack (ENOSYS, or a seccomp kill), so such a wait would fail
    // at once and a caller waiting that long would spin.
    let timespec = timeout.map(|t| futex::Timespec {
        tv_sec: t.as_secs().min(i32::MAX as u64) as i64,
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
    // spuriously wakes a thread that now waits at that address; both are
    // harmless. Not even an unmapped page makes it fail: a private key checks
    // only that the address is aligned and in user space (`access_ok()`).
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
    /// The model's one futex hash bucket: its lock (with the sleepers, by
    /// address) and its wait queue.
    static ref BUCKET: (loom::sync::Mutex<Sleepers>, loom::sync::Condvar) =
        (loom::sync::Mutex::new(Sleepers::default()), loom::sync::Condvar::new());
}

#[cfg(loom)]
loom::lazy_static! {
    /// Whether untimed waits return spuriously ([`loom_spurious_wakeups`]).
    /// A setting, not a synchronization variable: a plain std atomic, in a
    /// lazy static so that each model execution starts with it off.
    static ref SPURIOUS: std::sync::atomic::AtomicBool =
        std::sync::atomic::AtomicBool::new(false);
}

#[cfg(loom)]
loom::thread_local! {
    /// With [`SPURIOUS`] on: whether this thread's next untimed wait returns
    /// at once.
    static SPURIOUS_NEXT: std::cell::Cell<bool> = std::cell::Cell::new(true);
}

/// Under loom: with `on`, every other untimed [`wait`] of each thread (its
/// first, third, ...) returns at once without a wake, as a real futex may;
/// the others sleep as usual, so a caller that rechecks and waits again makes
/// progress. Call it inside the model, before the threads start: the setting
/// lasts one execution.
#[cfg(loom)]
pub fn loom_spurious_wakeups(on: bool) {
    // Relaxed: a setting read by this execution's threads, all spawned after
    // this call (see `SPURIOUS`).
    SPURIOUS.store(on, std::sync::atomic::Ordering::Relaxed);
}

/// Under loom: runs `body` under `loom::model` twice, with the futex model as
/// it is and with [`loom_spurious_wakeups`], so that the waits on `body`'s
/// paths are checked to recheck their conditions.
#[cfg(loom)]
pub fn loom_model_with_spurious_wakeups_too(body: impl Fn() + Sync + Send + 'static) {
    let body = std::sync::Arc::new(body);
    let plain = std::sync::Arc::clone(&body);
    loom::model(move || plain());
    loom::model(move || {
        loom_spurious_wakeups(true);
        body();
    });
}

/// Who sleeps on which address, in arrival order, under the bucket lock.
#[cfg(loom)]
#[derive(Default)]
struct Sleepers {
    /// `(address, ticket)` of each thread asleep and not yet woken.
    asleep: Vec<(usize, u64)>,
    /// Tickets of woken threads that have not left `wait` yet.
    woken: Vec<u64>,
    next_ticket: u64,
}

/// Under loom: blocks until a wake of this word if `word` holds `expected`
/// when checked under the bucket lock; a timed wait yields instead (see the
/// crate docs).
#[cfg(loom)]
pub fn wait(word: &AtomicU32, expected: u32, timeout: Option<Duration>) {
    if timeout.is_some() {
        loom::thread::yield_now();
        return;
    }
    // Relaxed: a setting, fixed before the threads start.
    if SPURIOUS.load(std::sync::atomic::Ordering::Relaxed)
        && SPURIOUS_NEXT.with(|next| next.replace(!next.get()))
    {
        loom::thread::yield_now();
        return;
    }
    let (lock, queue) = &*BUCKET;
    let mut sleepers = lock.lock().expect("never poisoned");
    // Relaxed, as the kernel's read of the word: the ordering comes from the
    // bucket lock, which a waker takes after storing the word.
    if word.load(std::sync::atomic::Ordering::Relaxed) != expected {
        return;
    }
    let ticket = sleepers.next_ticket;
    sleepers.next_ticket += 1;
    sleepers
        .asleep
        .push((word as *const AtomicU32 as usize, ticket));
    // Only a wake of this address ends the sleep: a wake of another word
    // must not hide a lost wake-up of this one.
    loop {
        sleepers = queue.wait(sleepers).expect("never poisoned");
        if let Some(i) = sleepers.woken.iter().position(|&t| t == ticket) {
            sleepers.woken.swap_remove(i);
            return;
        }
    }
}

/// Under loom: wakes the longest-waiting sleeper on `word`, if any.
#[cfg(loom)]
pub fn wake_one(word: &AtomicU32) {
    wake(word, 1);
}

/// Under loom: wakes every sleeper on `word`.
#[cfg(loom)]
pub fn wake_all(word: &AtomicU32) {
    wake(word, usize::MAX);
}

/// Under loom: as [`wake_all`]; the address is only compared, never read.
#[cfg(loom)]
pub fn wake_all_at(word: *const AtomicU32) {
    wake(word, usize::MAX);
}

#[cfg(loom)]
fn wake(word: *const AtomicU32, mut count: usize) {
    let (lock, queue) = &*BUCKET;
    let mut sleepers = lock.lock().expect("never poisoned");
    let sleepers = &mut *sleepers;
    sleepers.asleep.retain(|&(address, ticket)| {
        if address != word as usize || count == 0 {
            return true;
        }
        count -= 1;
        sleepers.woken.push(ticket);
        false
    });
    queue.notify_all();
}
