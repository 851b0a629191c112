//! The one place that chooses between `std` and `loom` types.
//!
//! Everything else in the crate imports atomics, cells, mutexes and the
//! futex-style sleep/wake helpers from here, so `RUSTFLAGS="--cfg loom"` swaps
//! the whole crate onto loom's model checker. The `std` side wraps `UnsafeCell`
//! to offer loom's `with_mut` access style, so code reads the same under both.
//!
//! The futex helpers come from the workspace's `futex-word` crate, whose loom
//! model turns a lost wake-up into a deadlock that loom reports.

#[cfg(loom)]
pub(crate) use loom::{
    cell::UnsafeCell,
    hint::spin_loop,
    sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, AtomicUsize, Ordering, fence},
    sync::{Mutex, MutexGuard},
    thread::{Builder as ThreadBuilder, JoinHandle, yield_now},
};

#[cfg(not(loom))]
pub(crate) use std::{
    hint::spin_loop,
    sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, AtomicUsize, Ordering, fence},
    sync::{Mutex, MutexGuard},
    thread::{Builder as ThreadBuilder, JoinHandle, yield_now},
};

use std::time::Duration;

/// Locks one of a domain's mutexes (its retired list, its scanner thread's
/// handle), whatever the poison flag says. No code panics halfway through
/// an update under them: a list is pushed onto or taken whole, a handle
/// stored or taken. But the fork hooks hold them across the caller's own
/// code, and an `after_fork_*` called while a panic unwinds (from a `Drop`)
/// releases them while the thread panics, which poisons them. Refusing a
/// poisoned lock would then turn every later hand-over of retired objects,
/// reclamation pass and scanner start into a panic, and a thread's exit,
/// which hands its batch over from a thread-local destructor, into an abort.
#[inline]
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

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

/// Sleeps while `word` holds `expected`, for at most `timeout` if given
/// (spurious returns allowed: callers recheck), and wakes every thread
/// sleeping on a word: the workspace's `futex-word` crate, a real futex or,
/// under loom, its model.
pub(crate) use futex_word::{wait as futex_wait, wake_all as futex_wake_all};

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

    /// Whether the steps have come to sleeping (never under loom): a wait
    /// there may be a stall, worth a look at the clock
    /// (`futex_word::stall`).
    pub(crate) fn is_sleeping(&self) -> bool {
        !cfg!(loom) && self.step > Self::YIELD_STEPS
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
