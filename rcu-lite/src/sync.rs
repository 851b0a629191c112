//! The one place that chooses between `std` and `loom` types.
//!
//! Everything else in the crate imports atomics, the mutex and the thread
//! helpers from here, so `RUSTFLAGS="--cfg loom"` swaps the whole crate onto
//! loom's model checker. Thread-locals and statics cannot be swapped by a
//! re-export (loom needs its own macros); the flavor modules (`memb`, `qsbr`)
//! declare them under `cfg` themselves.

#[cfg(loom)]
pub(crate) use loom::{
    hint::spin_loop,
    sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, AtomicU64},
    sync::{Arc, Mutex, MutexGuard},
    thread::yield_now,
};

#[cfg(not(loom))]
pub(crate) use std::{
    hint::spin_loop,
    sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, AtomicU64},
    sync::{Arc, Mutex, MutexGuard},
    thread::yield_now,
};

/// Locks one of the callback queues' mutexes (a flavor's queue, its batch
/// lock), whatever the poison flag says. No code panics under them halfway
/// through an update (a callback is pushed, a queue taken whole; callbacks
/// run under `catch_unwind`), but the fork hooks hold them across the
/// caller's own code, and an `after_fork_*` called while a panic unwinds
/// (from a `Drop`) releases them while the thread panics, which poisons
/// them. Refusing a poisoned lock would then break `call_rcu()`,
/// `rcu_barrier()`, polled grace periods and the worker thread for the rest
/// of the process.
#[inline]
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// [`lock`] if the mutex is free now, ignoring poison the same way.
#[inline]
pub(crate) fn try_lock<T>(mutex: &Mutex<T>) -> Option<MutexGuard<'_, T>> {
    match mutex.try_lock() {
        Ok(held) => Some(held),
        Err(std::sync::TryLockError::Poisoned(poisoned)) => Some(poisoned.into_inner()),
        Err(std::sync::TryLockError::WouldBlock) => None,
    }
}

/// One round of waiting for another thread to start a worker thread
/// (`pthread_create`: tens of microseconds, longer under memory pressure):
/// spins, then yields a few times, then sleeps 50 us a round. It ends in
/// sleeps, not yields: a waiter of a higher real-time priority than the
/// starter, sharing its CPU, would otherwise never let the start finish,
/// and any waiter would burn a CPU for as long as a slow start lasts.
#[cfg(not(loom))]
pub(crate) fn wait_for_a_start(rounds: &mut u32) {
    const SPINS: u32 = 64;
    const YIELDS: u32 = 4;
    *rounds = rounds.saturating_add(1);
    if *rounds <= SPINS {
        spin_loop();
    } else if *rounds <= SPINS + YIELDS {
        yield_now();
    } else {
        std::thread::sleep(std::time::Duration::from_micros(50));
    }
}
