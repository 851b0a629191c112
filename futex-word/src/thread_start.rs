//! How this workspace's primitives start their own threads (hazptr's
//! scanner, rcu-lite's grace-period and callback workers): with the
//! process's signals blocked, and the kernel's default timer slack.
//!
//! Invariants: a thread a primitive starts never runs a handler for a
//! signal sent to the process (`SIGINT`, `SIGTERM`, `SIGCHLD`, `SIGALRM`,
//! `SIGUSR1`, a `timer_create` signal, ...). The kernel hands such a signal
//! to any thread that does not block it, and a new thread inherits the mask
//! of the thread that starts it, which is whichever user thread first
//! needed it: a handler could then run there, where a wait (`synchronize`,
//! `rcu_barrier`) would wait for the very thread it stopped, and a program
//! that leaves a signal unblocked in one thread, to be told by it, would be
//! told on the primitive's thread instead.
//!
//! So the starting thread blocks every signal around the spawn and then
//! puts its own mask back, as liburcu does around the creation of its
//! `call_rcu` threads and glibc around its timer helper thread. The fault
//! signals a thread raises on itself (`SIGSEGV`, `SIGBUS`, `SIGFPE`,
//! `SIGILL`, `SIGTRAP`, `SIGSYS`) stay unblocked: blocked, a fault kills
//! the process with no handler run, Rust's stack-overflow report included.
//! glibc keeps its own internal signals (cancellation, `setxid`) out of the
//! mask itself.
//!
//! And the thread's timed sleeps end within the kernel's default timer
//! slack (50 us) of their deadline. A thread's slack
//! (`prctl(PR_SET_TIMERSLACK)`, which a program sets on a background thread
//! to save power) is inherited by the threads it starts, as their default
//! too: started from a thread with 100 ms of slack, hazptr's scanner woke a
//! waiting `synchronize` 30 ms after its guard dropped instead of 0.5 ms,
//! and rcu-lite's timer-driven grace periods ended up to 100 ms late (until
//! 2026-12-07). So the new thread sets its own slack first
//! ([`default_timer_slack`]).

/// Runs `spawn` (which starts a thread) with every signal but the faults
/// blocked on the calling thread, so that the new thread starts with them
/// blocked; the caller's mask is back when this returns, or unwinds.
pub fn with_signals_blocked<R>(spawn: impl FnOnce() -> R) -> R {
    #[cfg(any(loom, miri))]
    {
        // Loom's threads are simulated, and miri has no signal masks.
        spawn()
    }
    #[cfg(not(any(loom, miri)))]
    {
        let _restore = Blocked::all_but_faults();
        spawn()
    }
}

/// The caller's mask while every signal but the faults is blocked; restored
/// on drop.
#[cfg(not(any(loom, miri)))]
struct Blocked {
    /// The caller's mask, if the block took effect (it fails only for an
    /// invalid `how`; were it to, restoring an unset mask would unblock
    /// every signal on the caller).
    previous: Option<libc::sigset_t>,
}

#[cfg(not(any(loom, miri)))]
impl Blocked {
    fn all_but_faults() -> Blocked {
        // SAFETY: `sigset_t` is plain bits; `sigfillset` and `sigdelset`
        // initialise and edit the set they are given, and `pthread_sigmask`
        // reads `all` and writes `previous`, both valid for the calls.
        unsafe {
            let mut all: libc::sigset_t = std::mem::zeroed();
            libc::sigfillset(&mut all);
            for fault in [
                libc::SIGSEGV,
                libc::SIGBUS,
                libc::SIGFPE,
                libc::SIGILL,
                libc::SIGTRAP,
                libc::SIGSYS,
            ] {
                libc::sigdelset(&mut all, fault);
            }
            let mut previous: libc::sigset_t = std::mem::zeroed();
            // Fails only for an invalid `how`.
            let failed = libc::pthread_sigmask(libc::SIG_BLOCK, &all, &mut previous) != 0;
            debug_assert!(!failed, "pthread_sigmask(SIG_BLOCK) failed");
            Blocked {
                previous: (!failed).then_some(previous),
            }
        }
    }
}

#[cfg(not(any(loom, miri)))]
impl Drop for Blocked {
    fn drop(&mut self) {
        let Some(previous) = &self.previous else {
            return;
        };
        // SAFETY: `previous` is the mask `pthread_sigmask` filled in above.
        let failed =
            unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, previous, std::ptr::null_mut()) }
                != 0;
        debug_assert!(!failed, "pthread_sigmask(SIG_SETMASK) failed");
    }
}

/// The kernel's default timer slack for a thread, in nanoseconds.
#[cfg(not(any(loom, miri)))]
const DEFAULT_TIMER_SLACK_NS: libc::c_ulong = 50_000;

/// Sets this thread's timer slack to the kernel's default (50 us): called
/// first by each of the crate's own threads (see the module docs). Not 0,
/// which resets the slack to the thread's inherited default, itself the
/// starting thread's slack.
pub fn default_timer_slack() {
    // Loom's threads are simulated, and miri has no `prctl`.
    #[cfg(not(any(loom, miri)))]
    {
        // SAFETY: PR_SET_TIMERSLACK takes its value as the second argument
        // and reads no memory.
        let failed = unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, DEFAULT_TIMER_SLACK_NS) } != 0;
        // Fails only for a kernel without it (before 2.6.28): the thread
        // keeps its slack.
        debug_assert!(!failed, "prctl(PR_SET_TIMERSLACK) failed");
    }
}
