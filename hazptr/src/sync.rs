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

/// [`lock`] if nobody holds `mutex` now; `None` if somebody does.
#[inline]
pub(crate) fn try_lock<T>(mutex: &Mutex<T>) -> Option<MutexGuard<'_, T>> {
    match mutex.try_lock() {
        Ok(guard) => Some(guard),
        Err(std::sync::TryLockError::Poisoned(poisoned)) => Some(poisoned.into_inner()),
        Err(std::sync::TryLockError::WouldBlock) => None,
    }
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
/// then yield, then sleep in growing steps up to about 1 ms; past that, a
/// sleep of a sixteenth of the time spent at the cap, at least 1 ms and at
/// most 100 ms. Under loom every step is a yield.
///
/// The last part is for long waits: a guard held for seconds kept the
/// scanner (or an unshared caller) waking 900 times a second, 17-20 ms of
/// CPU each second (a wake-up review, 2-vCPU guest, 2026-12-06). A wait now
/// notices the end of what it waits for at most a sixteenth of its length
/// (and 100 ms) late, and a wait under 17 ms is unchanged.
pub(crate) struct Backoff {
    step: u32,
    /// When the first sleep at the cap began (`None` before).
    capped_since: Option<std::time::Instant>,
}

impl Backoff {
    /// Spinning steps (1, 2, 4, ... iterations).
    const SPIN_STEPS: u32 = 6;
    /// Steps before sleeping.
    const YIELD_STEPS: u32 = Self::SPIN_STEPS + 4;

    /// Steps of growing sleeps before the cap: 1 µs to 512 µs.
    const GROWING_STEPS: u32 = 10;
    /// The sleep at the cap, where the sleeps start to follow the wait's age.
    const CAP: Duration = Duration::from_micros(1 << Self::GROWING_STEPS);
    /// The longest sleep: how late a long wait may notice its end.
    const MAX_SLEEP: Duration = Duration::from_millis(100);

    pub(crate) const fn new() -> Self {
        Backoff {
            step: 0,
            capped_since: None,
        }
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
        } else if step < Self::YIELD_STEPS + Self::GROWING_STEPS {
            Pause::Sleep(Duration::from_micros(1 << (step - Self::YIELD_STEPS)))
        } else {
            let since = *self
                .capped_since
                .get_or_insert_with(std::time::Instant::now);
            Pause::Sleep((since.elapsed() / 16).clamp(Self::CAP, Self::MAX_SLEEP))
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

#[cfg(all(test, not(loom)))]
mod tests {
    use super::{Backoff, Pause};
    use std::time::{Duration, Instant};

    /// The steps: spins of 1 to 32, 4 yields, sleeps of 1 µs doubling to
    /// 512 µs, then sleeps of a sixteenth of the time spent at the cap,
    /// between 1.024 ms and 100 ms. (Catches a cap that never moves, the
    /// 900 wake-ups a second of a long wait, and one without a ceiling.)
    #[test]
    fn the_steps_grow_and_then_follow_the_waits_age() {
        let mut backoff = Backoff::new();
        let steps: Vec<Pause> = (0..20).map(|_| backoff.next_pause()).collect();
        let mut expected: Vec<Pause> = (0..6).map(|i| Pause::Spin(1 << i)).collect();
        expected.extend([Pause::Yield; 4]);
        expected.extend((0..10).map(|i| Pause::Sleep(Duration::from_micros(1 << i))));
        assert_eq!(steps, expected);
        assert!(backoff.is_sleeping());
        // The first sleep at the cap: the wait's age there is 0.
        assert_eq!(backoff.next_pause(), Pause::Sleep(Backoff::CAP));
        for (age_ms, sleep) in [
            (10, Backoff::CAP),
            (160, Duration::from_millis(10)),
            (1_600, Backoff::MAX_SLEEP),
            (10_000, Backoff::MAX_SLEEP),
        ] {
            let age = Duration::from_millis(age_ms);
            // None only on a machine up for less than the age.
            let Some(since) = Instant::now().checked_sub(age) else {
                continue;
            };
            backoff.capped_since = Some(since);
            let Pause::Sleep(took) = backoff.next_pause() else {
                panic!("not a sleep at the cap")
            };
            // The clock moves between the two reads: a sixteenth of a few
            // milliseconds at most, on a loaded machine.
            assert!(
                took >= sleep && took <= sleep + Duration::from_millis(1),
                "{age:?} at the cap: slept {took:?}, not {sleep:?}"
            );
        }
    }
}
