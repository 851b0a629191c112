//! The one place that chooses between `std` and `loom` types.
//!
//! Everything else in the crate imports atomics, cells, mutexes and the
//! futex-style sleep/wake helpers from here, so `RUSTFLAGS="--cfg loom"` swaps
//! the whole crate onto loom's model checker. The `std` side wraps `UnsafeCell`
//! to offer loom's `with_mut` access style, so code reads the same under both.
//!
//! Under loom the futex is a loom `Mutex` and `Condvar` standing in for the
//! kernel's hash bucket: [`futex_wait`] checks the word under the mutex and
//! blocks until a wake, and [`futex_wake_all`] takes the mutex and notifies
//! every waiter (of any word: callers recheck, so the extra wake-ups are
//! spurious returns). A waiter nobody wakes stays blocked, so a lost wake-up
//! is a deadlock that loom reports. A timed wait cannot block in a model
//! (time does not pass there): it yields instead.

#[cfg(loom)]
pub(crate) use loom::{
    cell::UnsafeCell,
    hint::spin_loop,
    sync::Mutex,
    sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, AtomicUsize, Ordering, fence},
    thread::{Builder as ThreadBuilder, JoinHandle, yield_now},
};

#[cfg(not(loom))]
pub(crate) use std::{
    hint::spin_loop,
    sync::Mutex,
    sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, AtomicUsize, Ordering, fence},
    thread::{Builder as ThreadBuilder, JoinHandle, yield_now},
};

use std::time::Duration;

/// `std`'s `UnsafeCell` with loom's closure-based accessor.
#[cfg(not(loom))]
#[derive(Debug, Default)]
pub(crate) struct UnsafeCell<T>(std::cell::UnsafeCell<T>);

#[cfg(not(loom))]
impl<T> UnsafeCell<T> {
    /// Wraps `value`.
    pub(crate) const fn new(value: T) -> Self {
        UnsafeCell(std::cell::UnsafeCell::new(value))
    }

    /// Calls `f` with a mutable raw pointer to the contents.
    #[inline(always)]
    pub(crate) fn with_mut<R>(&self, f: impl FnOnce(*mut T) -> R) -> R {
        f(self.0.get())
    }
}

/// Sleeps while `word` holds `expected`, for at most `timeout` if given.
/// Spurious returns are allowed: callers re-check their condition in a loop.
#[cfg(not(loom))]
pub(crate) fn futex_wait(word: &AtomicU32, expected: u32, timeout: Option<Duration>) {
    use rustix::thread::futex;
    let timespec = timeout.map(|t| futex::Timespec {
        tv_sec: t.as_secs() as _,
        tv_nsec: t.subsec_nanos() as _,
    });
    // EAGAIN (the word changed), EINTR and ETIMEDOUT are all "go and re-check".
    let _ = futex::wait(word, futex::Flags::PRIVATE, expected, timespec.as_ref());
}

/// Wakes every thread sleeping in [`futex_wait`] on `word`.
#[cfg(not(loom))]
pub(crate) fn futex_wake_all(word: &AtomicU32) {
    use rustix::thread::futex;
    let _ = futex::wake(word, futex::Flags::PRIVATE, i32::MAX as u32);
}

#[cfg(loom)]
loom::lazy_static! {
    /// The model's one futex hash bucket: its lock and its wait queue.
    static ref BUCKET: (Mutex<()>, loom::sync::Condvar) = (Mutex::new(()), loom::sync::Condvar::new());
}

/// Under loom: blocks until a wake if `word` holds `expected` when checked
/// under the bucket lock; a timed wait yields instead (see the module docs).
#[cfg(loom)]
pub(crate) fn futex_wait(word: &AtomicU32, expected: u32, timeout: Option<Duration>) {
    if timeout.is_some() {
        yield_now();
        return;
    }
    let (lock, queue) = &*BUCKET;
    let guard = lock.lock().expect("never poisoned");
    // Relaxed, as the kernel's read of the word: the ordering comes from the
    // bucket lock, which a waker takes after storing the word.
    if word.load(Ordering::Relaxed) == expected {
        drop(queue.wait(guard).expect("never poisoned"));
    }
}

/// Under loom: takes the bucket lock and wakes every waiter.
#[cfg(loom)]
pub(crate) fn futex_wake_all(_word: &AtomicU32) {
    let (lock, queue) = &*BUCKET;
    let _guard = lock.lock().expect("never poisoned");
    queue.notify_all();
}

/// One step of a [`Backoff`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Pause {
    /// Spin this many `spin_loop` iterations.
    Spin(u32),
    /// Yield the CPU once.
    Yield,
    /// Sleep (or futex-wait with this timeout).
    Sleep(Duration),
}

/// Bounded exponential back-off for waits nobody will end with a wake-up (a
/// reader in its wildcard window or holding an address never signals): spin,
/// then yield, then sleep in growing steps up to about 1 ms. Under loom every
/// step is a yield.
pub(crate) struct Backoff {
    step: u32,
}

impl Backoff {
    /// Spinning steps (1, 2, 4, ... iterations).
    const SPIN_STEPS: u32 = 6;
    /// Steps before sleeping.
    const YIELD_STEPS: u32 = Self::SPIN_STEPS + 4;

    pub(crate) const fn new() -> Self {
        Backoff { step: 0 }
    }

    /// The next step, each longer than the last.
    pub(crate) fn next_pause(&mut self) -> Pause {
        let step = self.step;
        self.step = self.step.saturating_add(1);
        if cfg!(loom) {
            Pause::Yield
        } else if step < Self::SPIN_STEPS {
            Pause::Spin(1 << step)
        } else if step < Self::YIELD_STEPS {
            Pause::Yield
        } else {
            Pause::Sleep(Duration::from_micros(
                1 << (step - Self::YIELD_STEPS).min(10),
            ))
        }
    }

    /// Takes the next step.
    pub(crate) fn snooze(&mut self) {
        match self.next_pause() {
            Pause::Spin(n) => {
                for _ in 0..n {
                    spin_loop();
                }
            }
            Pause::Yield => yield_now(),
            Pause::Sleep(d) => std::thread::sleep(d),
        }
    }
}
