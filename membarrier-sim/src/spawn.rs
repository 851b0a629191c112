//! Starting the threads of [`crate::stress`] and [`crate::threaded`] so that
//! a thread the OS refuses cannot hang the run.
//!
//! `std::thread::Scope::spawn` panics when the OS refuses a thread (`EAGAIN`
//! past `pid_max` or `RLIMIT_NPROC`, `ENOMEM` for its stack). The panic
//! unwinds to `std::thread::scope`, which first joins every thread already
//! started; the runners' threads loop until a stop flag, or wait at a start
//! gate, that the spawning thread sets only after starting them all, so the
//! scope waited for ever. Here:
//!
//! - [`scoped`] starts a thread with `Builder::spawn_scoped`, which returns
//!   the error instead, so a runner can stop what it started and report it;
//! - [`OnDrop`] runs the runner's "stop everything" when the spawning
//!   thread leaves the scope's closure, by a return or by a panic, before the
//!   scope joins: whatever fails there, the threads end;
//! - [`Gate`] holds the started threads until all exist, like a `Barrier`,
//!   but can be aborted, which a `Barrier` cannot (its waiters wait for
//!   threads that will never exist).
//!
//! Unit tests make the n-th spawn of their own thread fail (`fail_after`,
//! built only under `cfg(test)`), with an error or with a panic as
//! `Scope::spawn`'s.

use crate::sync::{AtomicU32, Ordering};
use crate::threaded::{ring, sleep_while};
use std::io;
use std::thread::{Builder, Scope, ScopedJoinHandle};

/// A spawn that failed: the threads started before it, and why.
#[derive(Debug)]
pub(crate) struct Failure {
    /// Threads started before the one refused.
    pub(crate) started: u32,
    /// The OS's answer.
    pub(crate) source: io::Error,
}

/// What a refused spawn means for the user, for the runners' messages.
pub(crate) const LIMITS: &str = "threads are limited by /proc/sys/kernel/pid_max, \
     /proc/sys/kernel/threads-max, RLIMIT_NPROC (ulimit -u), a cgroup's pids.max, memory \
     for their stacks, and /proc/sys/vm/max_map_count (about 4 mappings a thread)";

/// Starts `f` on a thread of `scope`, returning the OS's error rather than
/// panicking; `started` (the threads this run started so far) goes into the
/// error.
pub(crate) fn scoped<'scope, 'env, F, T>(
    scope: &'scope Scope<'scope, 'env>,
    started: u32,
    f: F,
) -> Result<ScopedJoinHandle<'scope, T>, Failure>
where
    F: FnOnce() -> T + Send + 'scope,
    T: Send + 'scope,
{
    #[cfg(test)]
    injected(started)?;
    Builder::new()
        .spawn_scoped(scope, f)
        .map_err(|source| Failure { started, source })
}

/// Runs its closure when dropped: on every way out of a scope's closure.
pub(crate) struct OnDrop<F: FnMut()>(pub(crate) F);

impl<F: FnMut()> Drop for OnDrop<F> {
    fn drop(&mut self) {
        (self.0)();
    }
}

/// Where started threads wait until every thread of the run exists.
///
/// `state` goes from [`Gate::CLOSED`] to [`Gate::OPEN`] or [`Gate::ABORTED`],
/// once; waiters sleep on it (futex) and are woken by the change.
pub(crate) struct Gate {
    state: AtomicU32,
    /// Threads that have reached [`Gate::arrive_and_wait`]; the spawning
    /// thread sleeps on it in [`Gate::wait_for`].
    arrived: AtomicU32,
}

impl Gate {
    const CLOSED: u32 = 0;
    const OPEN: u32 = 1;
    const ABORTED: u32 = 2;

    pub(crate) fn new() -> Gate {
        Gate {
            state: AtomicU32::new(Gate::CLOSED),
            arrived: AtomicU32::new(0),
        }
    }

    /// Counts the calling thread in, then waits: `true` once the gate
    /// opens, `false` if the run was aborted (the thread should return).
    pub(crate) fn arrive_and_wait(&self) -> bool {
        // Relaxed: a count the spawning thread only compares; nothing is
        // published through it.
        self.arrived.fetch_add(1, Ordering::Relaxed);
        ring(&self.arrived);
        loop {
            // Acquire pairs with the Release store in `open`: what the
            // spawning thread set up before opening (the run's epoch) is
            // visible after.
            let state = self.state.load(Ordering::Acquire);
            if state != Gate::CLOSED {
                return state == Gate::OPEN;
            }
            sleep_while(&self.state, Gate::CLOSED, None);
        }
    }

    /// Waits until `threads` threads have arrived.
    pub(crate) fn wait_for(&self, threads: u32) {
        loop {
            // Relaxed: see `arrive_and_wait`.
            let arrived = self.arrived.load(Ordering::Relaxed);
            if arrived >= threads {
                return;
            }
            sleep_while(&self.arrived, arrived, None);
        }
    }

    /// Lets every waiter, present and future, go.
    pub(crate) fn open(&self) {
        // Release pairs with the Acquire load in `arrive_and_wait`.
        self.state.store(Gate::OPEN, Ordering::Release);
        ring(&self.state);
    }

    /// Sends every waiter, present and future, home; no effect once open.
    pub(crate) fn abort(&self) {
        // Relaxed: nothing is published to threads that give up.
        if self
            .state
            .compare_exchange(
                Gate::CLOSED,
                Gate::ABORTED,
                Ordering::Relaxed,
                Ordering::Relaxed,
            )
            .is_ok()
        {
            ring(&self.state);
        }
    }
}

/// How an injected spawn failure fails.
#[cfg(test)]
#[derive(Clone, Copy, Debug)]
pub(crate) enum Injected {
    /// `Builder::spawn_scoped`'s error (`EAGAIN`, as past `pid_max`).
    Error,
    /// A panic, as `Scope::spawn` does on that error.
    Panic,
}

#[cfg(test)]
thread_local! {
    /// The spawn number (its `started`) that fails on this thread, and how.
    static FAIL: std::cell::Cell<Option<(u32, Injected)>> = const { std::cell::Cell::new(None) };
}

/// Makes the spawn that would be this thread's run's `started`-th (counting
/// from 0) fail as `how`, for the rest of this thread's life.
#[cfg(test)]
pub(crate) fn fail_after(started: u32, how: Injected) {
    FAIL.with(|f| f.set(Some((started, how))));
}

#[cfg(test)]
fn injected(started: u32) -> Result<(), Failure> {
    match FAIL.with(std::cell::Cell::get) {
        Some((n, how)) if n == started => match how {
            Injected::Error => Err(Failure {
                started,
                source: io::Error::new(
                    io::ErrorKind::WouldBlock,
                    "injected: Resource temporarily unavailable",
                ),
            }),
            Injected::Panic => panic!("injected: failed to spawn thread {started}"),
        },
        _ => Ok(()),
    }
}
