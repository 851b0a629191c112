//! `cond_load_acquire`: the user-space `atomic_cond_read_acquire()`.
//!
//! The kernel's `smp_cond_load_acquire(ptr, cond)` (older than the qrwlock
//! series: its "Add atomic_cond_read_acquire" patch added the `atomic_t`
//! wrapper around it) re-reads `*ptr` until `cond` holds, waiting
//! between reads with the architecture's hint: on arm64 `__cmpwait()` arms the
//! exclusive monitor with LDXR and sleeps in WFE until another CPU writes the
//! cache line; elsewhere `cpu_relax()`. It then orders later accesses after the
//! final read (`smp_acquire__after_ctrl_dep()`).
//!
//! User space adds one problem the kernel does not have: the thread that will
//! end the wait may not be running. A waiter that only spins burns the core
//! the lock holder needs. So a wait here is a bounded spin with the hint (LDXR
//! + WFE on aarch64, `pause` on x86_64), then a futex sleep.
//!
//! # The sleeper protocol
//!
//! The word reserves one bit, the *sleeper bit*, meaning "someone may sleep on
//! this word". A waiter sets it with a CAS from a value it has just seen to be
//! unsatisfying, then sleeps on the futex for that exact value. The parties
//! that can end a wait must change the word only with read-modify-writes and
//! pass the value each returned to [`wake_sleepers`]: if the bit was set, it is
//! cleared and every sleeper is woken. Nobody else pays anything: when no one
//! sleeps, a waker's cost is one bit test of a value it already has. Two
//! wakers wake without clearing: `RawQRwLock::wake_head` leaves the bit set
//! when the head may not go on yet, and the queue's link wake-up
//! (`WaitQueue::lock`) wakes on a word whose `SLEEPING` it leaves. A bit left
//! set costs a later waker a spare wake-up, never a lost one.
//!
//! No lost wake-up: the waiter's CAS makes "bit set, condition false" the
//! current value in the word's modification order. Any later change that makes
//! the condition true is an RMW, so it returns a value with the bit set (or a
//! later one where another waker already cleared it and woke everyone), and
//! wakes. If that wake comes before the waiter is inside the futex, the word
//! has changed and `FUTEX_WAIT` returns at once.
//!
//! Under loom the spin is one `yield_now()` and the futex is a model (see
//! `src/futex.rs`), so the sleep path is what the models check.

use crate::futex;
use crate::sync::{AtomicU32, Ordering, fence};

/// How long a wait spins before it sleeps, in nanoseconds of wall time.
///
/// Time, not rounds: a round of the hint costs anything from a few ns (an
/// old x86 `pause`) to 100 us (an aarch64 WFE that no write ends before the
/// event-stream tick; longer where the kernel gives user space no event
/// stream, see `wait_for_change`). Under loom any non-zero budget is one
/// round.
pub(crate) mod budget {
    /// The default for [`super::cond_load_acquire`] and
    /// [`super::cond_load_relaxed`].
    pub(crate) const DEFAULT_NS: u32 = 10_000;
}

/// Waits until `cond` holds for the value of `word`, then returns the value
/// (sleeper bit included), ordering every later memory access after the read
/// that satisfied `cond`: the user-space `atomic_cond_read_acquire()`.
///
/// `cond` is called with `sleeper_bit` masked off. `sleeper_bit` must be one
/// bit of `word` that no one but waiters sets, and every write that can make
/// `cond` true must be a read-modify-write followed by [`wake_sleepers`] with
/// the value it returned (see the module docs); then no wake-up is lost.
/// Spins briefly with the architecture's wait hint, then sleeps on a futex.
///
/// # Panics
///
/// If `sleeper_bit` is not exactly one bit (checked when the wait does not
/// end at the first read).
#[inline]
pub fn cond_load_acquire(word: &AtomicU32, sleeper_bit: u32, cond: impl FnMut(u32) -> bool) -> u32 {
    // Pairs with the Release RMW of the party that made `cond` true.
    cond_load_then_acquire(word, sleeper_bit, budget::DEFAULT_NS, cond)
}

/// [`cond_load_acquire`] without the final acquire: the user-space
/// `atomic_cond_read_relaxed()`, for callers that follow the wait with an
/// acquire RMW of their own.
///
/// # Panics
///
/// As [`cond_load_acquire`]: if `sleeper_bit` is not exactly one bit (checked
/// when the wait does not end at the first read).
#[inline]
pub fn cond_load_relaxed(word: &AtomicU32, sleeper_bit: u32, cond: impl FnMut(u32) -> bool) -> u32 {
    cond_load(word, sleeper_bit, budget::DEFAULT_NS, cond)
}

/// How [`cond_load_then_acquire`] reads the word: `Relaxed`, made an acquire
/// by the fence that follows the read that satisfied the wait. ThreadSanitizer
/// does not model standalone fences, so under `cfg(syncprims_tsan)` (what
/// `scripts/sanitize.sh` builds) every read of the wait is `Acquire` itself:
/// for the value that ends the wait that is exactly what "relaxed read, then
/// `fence(Acquire)`" promises (std's `Arc` swaps its acquire fence for an
/// acquire load under TSan for the same reason).
const FENCED_READ: Ordering = if cfg!(syncprims_tsan) {
    Ordering::Acquire
} else {
    Ordering::Relaxed
};

/// [`cond_load`], then an acquire: the reads of the wait are relaxed and the
/// one that satisfied `cond` is turned into an acquire as
/// `smp_acquire__after_ctrl_dep()` does, so every later access is ordered
/// after the write (or release sequence) that read saw.
#[inline]
pub(crate) fn cond_load_then_acquire(
    word: &AtomicU32,
    sleeper_bit: u32,
    spin_ns: u32,
    cond: impl FnMut(u32) -> bool,
) -> u32 {
    let value = wait_loop::<true>(word, sleeper_bit, spin_ns, cond);
    fence(Ordering::Acquire);
    value
}

/// Wakes the threads sleeping in [`cond_load_acquire`] on `word` if
/// `previous`, the value a read-modify-write of `word` just returned, has
/// `sleeper_bit` set. Costs one bit test when nobody sleeps.
#[inline]
pub fn wake_sleepers(word: &AtomicU32, previous: u32, sleeper_bit: u32) {
    if previous & sleeper_bit != 0 {
        wake_all_sleepers(word, sleeper_bit);
    }
}

/// Clears `sleeper_bit` and wakes every thread sleeping on `word`: the slow
/// half of [`wake_sleepers`], for callers that already know the bit was set.
#[cold]
#[inline(never)]
pub(crate) fn wake_all_sleepers(word: &AtomicU32, sleeper_bit: u32) {
    // Clear the bit first so later wakers pay nothing; a sleeper that is still
    // unsatisfied after waking sets it again before it sleeps again. Relaxed:
    // the wake itself is ordered by the futex call, and the change that ended
    // the wait was the caller's RMW, which precedes this one.
    word.fetch_and(!sleeper_bit, Ordering::Relaxed);
    futex::wake_all(word);
}

/// The wait loop: rounds of the wait hint for `spin_ns` nanoseconds, then
/// futex sleeps. Returns the first value (sleeper bit included) for which
/// `cond(value & !sleeper_bit)` holds, read with a relaxed load.
#[inline]
pub(crate) fn cond_load(
    word: &AtomicU32,
    sleeper_bit: u32,
    spin_ns: u32,
    cond: impl FnMut(u32) -> bool,
) -> u32 {
    wait_loop::<false>(word, sleeper_bit, spin_ns, cond)
}

/// How the wait loop reads the word: [`FENCED_READ`] when an acquire fence
/// follows (`FENCED`), else `Relaxed`.
const fn read_order(fenced: bool) -> Ordering {
    if fenced {
        FENCED_READ
    } else {
        Ordering::Relaxed
    }
}

/// The wait loop, reading `word` with [`read_order`]`(FENCED)`.
#[inline]
fn wait_loop<const FENCED: bool>(
    word: &AtomicU32,
    sleeper_bit: u32,
    spin_ns: u32,
    mut cond: impl FnMut(u32) -> bool,
) -> u32 {
    let value = word.load(read_order(FENCED));
    if cond(value & !sleeper_bit) {
        return value;
    }
    cond_load_slow::<FENCED>(word, sleeper_bit, spin_ns, value, &mut cond)
}

#[cold]
#[inline(never)]
fn cond_load_slow<const FENCED: bool>(
    word: &AtomicU32,
    sleeper_bit: u32,
    spin_ns: u32,
    mut value: u32,
    cond: &mut dyn FnMut(u32) -> bool,
) -> u32 {
    assert!(
        sleeper_bit.is_power_of_two(),
        "qrwlock::{}: the sleeper bit must be exactly one bit (got {sleeper_bit:#x})",
        if FENCED {
            "cond_load_acquire"
        } else {
            "cond_load_relaxed"
        }
    );
    let mut spin = Spin::new(spin_ns);
    loop {
        if cond(value & !sleeper_bit) {
            return value;
        }
        if spin.again() {
            wait_for_change(word, value);
        } else {
            if value & sleeper_bit == 0 {
                // Announce the sleep on a value seen to be unsatisfying (see
                // "No lost wake-up"). Relaxed: only the word's modification
                // order matters here; the acquire comes from the caller. A
                // failure's value may end the wait, so it is read as the
                // loads are.
                if let Err(now) = word.compare_exchange_weak(
                    value,
                    value | sleeper_bit,
                    Ordering::Relaxed,
                    read_order(FENCED),
                ) {
                    value = now;
                    continue;
                }
                value |= sleeper_bit;
            }
            futex::wait(word, value);
        }
        value = word.load(read_order(FENCED));
    }
}

/// The spin phase's budget: [`Spin::again`] says whether to spin one more
/// round. The clock is read once per round; a round is long enough (a few
/// `pause`s, or a WFE) that the read costs little next to it.
#[cfg(not(loom))]
struct Spin {
    budget: std::time::Duration,
    deadline: Option<std::time::Instant>,
}

#[cfg(not(loom))]
impl Spin {
    fn new(spin_ns: u32) -> Spin {
        Spin {
            budget: std::time::Duration::from_nanos(spin_ns.into()),
            deadline: None,
        }
    }

    #[inline]
    fn again(&mut self) -> bool {
        if self.budget.is_zero() {
            return false;
        }
        let now = std::time::Instant::now();
        let deadline = *self.deadline.get_or_insert(now + self.budget);
        if now < deadline {
            true
        } else {
            self.budget = std::time::Duration::ZERO;
            false
        }
    }
}

/// Under loom a non-zero budget is one round.
#[cfg(loom)]
struct Spin {
    rounds: u32,
}

#[cfg(loom)]
impl Spin {
    fn new(spin_ns: u32) -> Spin {
        Spin {
            rounds: u32::from(spin_ns > 0),
        }
    }

    fn again(&mut self) -> bool {
        let again = self.rounds > 0;
        self.rounds = self.rounds.saturating_sub(1);
        again
    }
}

/// One round of the architecture's wait hint while `word` still holds `seen`.
///
/// aarch64: `__cmpwait()`: LDXR arms the exclusive monitor on the word's cache
/// line, and if the word still holds `seen`, WFE sleeps until the monitor is
/// cleared by another CPU's write to that line, or an event (including the
/// kernel's 10 kHz event stream, which bounds the sleep). The event stream
/// reaches user space only where the kernel enables it (`HWCAP_EVTSTRM`);
/// without it a round ends only at a write to the line or an interrupt
/// (such as a timer tick), so the spin budget can overrun by that much.
#[cfg(all(target_arch = "aarch64", not(loom), not(miri)))]
#[inline]
fn wait_for_change(word: &AtomicU32, seen: u32) {
    // SAFETY: the asm reads the 4-byte aligned word `word` points to with a
    // single-copy-atomic LDXR (an atomic read of an atomic, racing only with
    // other atomics) and writes no memory; SEVL/WFE only touch the event
    // register and the exclusive monitor. The first SEVL+WFE pair clears a
    // stale event so the second WFE really waits.
    unsafe {
        core::arch::asm!(
            "sevl",
            "wfe",
            "ldxr {current:w}, [{addr}]",
            "eor {current:w}, {current:w}, {seen:w}",
            "cbnz {current:w}, 2f",
            "wfe",
            "2:",
            addr = in(reg) word.as_ptr(),
            seen = in(reg) seen,
            current = out(reg) _,
            options(nostack, preserves_flags),
        );
    }
}

/// One round of the wait hint: a few `pause` (x86) or `yield` (other) hints.
#[cfg(all(any(not(target_arch = "aarch64"), miri), not(loom)))]
#[inline]
fn wait_for_change(_word: &AtomicU32, _seen: u32) {
    for _ in 0..4 {
        core::hint::spin_loop();
    }
}

/// Under loom a spin round lets the other threads run.
#[cfg(loom)]
fn wait_for_change(_word: &AtomicU32, _seen: u32) {
    crate::sync::yield_now();
}
