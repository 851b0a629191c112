//! Asymmetric fences: a nearly free [`light`] fence for hot paths and a
//! process-wide [`heavy`] fence for the rare side that must order against them.
//!
//! # The guarantee
//!
//! For any two threads A and B, if A runs `light()` and B runs `heavy()`, then
//! either everything A did before `light()` is visible to B after `heavy()`, or
//! everything B did before `heavy()` is visible to A after `light()`. In the
//! store-buffering shape
//!
//! ```text
//! A: x = 1; light(); r1 = y        B: y = 1; heavy(); r2 = x
//! ```
//!
//! the outcome `r1 == 0 && r2 == 0` is forbidden, exactly as if both sides had
//! used `fence(SeqCst)`. This is the pairing that user-space RCU (`smp_mb_slave`
//! / `smp_mb_master` in liburcu) and hazard pointers (the slot store against the
//! scan) rely on.
//!
//! The same shape with threads, round after round (`tests/fence.rs` runs it
//! with a control that shows the store buffer's `(0, 0)` without fences):
//!
//! ```
//! use membarrier_sim::fence;
//! use std::sync::Barrier;
//! use std::sync::atomic::{AtomicU32, Ordering::Relaxed};
//!
//! let (x, y) = (AtomicU32::new(0), AtomicU32::new(0));
//! let round = Barrier::new(2);
//! for _ in 0..200 {
//!     let (r1, r2) = std::thread::scope(|s| {
//!         let a = s.spawn(|| {
//!             round.wait();
//!             x.store(1, Relaxed);
//!             fence::light(); // the frequent side: a compiler fence in membarrier mode
//!             y.load(Relaxed)
//!         });
//!         let b = s.spawn(|| {
//!             round.wait();
//!             y.store(1, Relaxed);
//!             fence::heavy(); // the rare side: membarrier(), or fence(SeqCst)
//!             x.load(Relaxed)
//!         });
//!         (a.join().unwrap(), b.join().unwrap())
//!     });
//!     assert_ne!((r1, r2), (0, 0), "one side, at least, sees the other's store");
//!     x.store(0, Relaxed);
//!     y.store(0, Relaxed);
//! }
//! ```
//!
//! # How
//!
//! In [`Mode::Membarrier`], `light()` is a compiler fence only (the CPU may still
//! reorder), and `heavy()` is `membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED)`: the
//! kernel sends an IPI to every CPU running a thread of this process and each
//! executes a full barrier (`smp_mb()` in `ipi_mb()`), while threads not running
//! passed a full barrier in the context switch. Either way the light side's
//! program order becomes a real order at the instant of the heavy call.
//!
//! In [`Mode::SeqCst`] (old kernels, seccomp, non-Linux, or when forced) both
//! sides are `fence(SeqCst)`.
//!
//! # Mode choice
//!
//! The mode is decided once per process, at the first call of [`light`],
//! [`heavy`], [`mode`], [`force`] or [`light_is_full_fence`] (not [`full`],
//! which is `fence(SeqCst)` in either mode, so a process that uses only
//! `full` never decides it):
//! SeqCst if the `SYNCPRIMS_FENCE` environment variable is `seqcst`, else
//! membarrier when the kernel supports and accepts registration for
//! `PRIVATE_EXPEDITED` and then carries out one such barrier, else SeqCst
//! ([`fallback_reason`] keeps the kernel's answer). The trial barrier is
//! there for sandboxes that filter membarrier by command, letting the
//! registration through but not the barrier: choosing membarrier mode there
//! would abort the process at its first heavy fence. Any other value of the variable,
//! `membarrier` included, leaves the automatic choice: it cannot force
//! membarrier mode where registration fails. The mode never changes
//! afterwards, because a light fence issued under one mode only pairs with
//! heavy fences of that mode.
//! [`force`] picks the mode before the first use (tests use it for the fallback).
//! Under `cfg(loom)` and `cfg(miri)` the mode is always SeqCst.
//!
//! Deciding registers the process with the kernel
//! (`MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED`), which in a process that
//! already has several threads waits for an RCU grace period: milliseconds,
//! or longer on a busy machine. Every fence called meanwhile, on any thread,
//! waits for the decision. A program whose first fence could run in a signal
//! handler, or under a deadline, calls [`mode`] once at startup. So does one
//! that forks while other threads may be making their first fence call: a
//! child forked in the middle of the decision inherits it unfinished, and
//! its fences wait for ever (hazptr's and rcu-lite's fork hooks call [`mode`]
//! for this reason).
//!
//! # Loom
//!
//! Under `cfg(loom)` both fences are a `SeqCst` read-modify-write of one loom
//! word, as under ThreadSanitizer (below), not `fence(SeqCst)`. Loom's SeqCst
//! fence also acquires every store its thread has already read, so a load
//! before `light()` that should be Acquire would pass the models as Relaxed;
//! in membarrier mode `light()` is only a compiler fence, which acquires
//! nothing. The RMW keeps exactly the pairing: of a `light()` and a `heavy()`,
//! the later one acquires what the earlier one's thread did before it. (Two
//! `light()`s pair too, and a `light()` with a [`full`], which membarrier
//! mode does not promise; the callers never rely on either. A word of each
//! thread's own for `light()` would not separate them: loom counts an
//! atomic's initial value as a store by the thread that created it, and a
//! word created lazily is created by whichever thread fences first, so
//! every later fence that reads it acquires what that thread had done.
//! Tried on 2026-12-07: two `light()`s on two such words still paired.
//! `tests/loom.rs` checks what the model orders.)
//!
//! # ThreadSanitizer
//!
//! TSan does not model standalone fences (nor, of course, membarrier), so it
//! would report the accesses these fences order as races. Built with
//! `--cfg syncprims_tsan` (what `scripts/sanitize.sh` does), both fences become
//! a `SeqCst` read-modify-write of one global word. Those RMWs are totally
//! ordered, and the later one acquires from the earlier one, so whatever a
//! thread did before its fence happens-before whatever the other thread does
//! after its later fence: the same guarantee, expressed in a way TSan tracks.

#[cfg(all(not(loom), not(syncprims_tsan)))]
use crate::sync::compiler_fence;
#[cfg(all(not(loom), not(syncprims_tsan)))]
use crate::sync::fence;
use std::fmt;
use std::sync::OnceLock;
use std::sync::atomic::Ordering::SeqCst;
#[cfg(not(loom))]
use std::sync::atomic::{AtomicU8, Ordering::Relaxed};

/// Which implementation the fences use.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Mode {
    /// `light()` is a compiler fence, `heavy()` is
    /// `membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED)`.
    Membarrier,
    /// Both are `fence(SeqCst)`.
    SeqCst,
}

impl Mode {
    /// A short lower-case name (`membarrier`, `seqcst`); `SYNCPRIMS_FENCE`
    /// acts only on `seqcst`.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Membarrier => "membarrier",
            Mode::SeqCst => "seqcst",
        }
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The environment variable that overrides the mode choice: `seqcst` forces
/// SeqCst; any other value is ignored (the automatic choice).
pub const MODE_ENV: &str = "SYNCPRIMS_FENCE";

/// The decision, made once (see the module docs).
static DECISION: OnceLock<Mode> = OnceLock::new();

/// A copy of the decision for the fast paths: 0 until decided, then
/// `MODE_MEMBARRIER` or `MODE_SEQCST`. Written once, by `DECISION`'s
/// initializer (in [`mode`] or [`force`]) just before `get_or_init` stores
/// the same mode; read with `Relaxed` because any value but 0 is the mode
/// `DECISION` holds or is about to hold (membarrier only once registration
/// succeeded), and a reader that sees 0 goes through `DECISION` itself.
#[cfg(not(loom))]
static FAST_MODE: AtomicU8 = AtomicU8::new(MODE_UNDECIDED);
#[cfg(not(loom))]
const MODE_UNDECIDED: u8 = 0;
#[cfg(not(loom))]
const MODE_MEMBARRIER: u8 = 1;
#[cfg(not(loom))]
const MODE_SEQCST: u8 = 2;

/// The light fence: the read-side half of the pair (see the module docs).
///
/// Costs a compiler fence in membarrier mode.
///
/// # Context
///
/// Once the mode is decided (by any fence, [`mode`] or [`force`], on any
/// thread), this is a relaxed load and a fence: it never blocks, takes no
/// lock and is async-signal-safe. Before that, it decides the mode (see the
/// module docs, *Mode choice*): it blocks while the kernel registers the
/// process, and so does every call racing it. A first call from a signal
/// handler that interrupted the thread deciding would wait for that thread
/// for ever (a `OnceLock` re-entered on one thread deadlocks): call [`mode`]
/// before installing such a handler.
#[inline]
pub fn light() {
    #[cfg(syncprims_tsan)]
    return sanitizer_fence();
    #[cfg(all(not(loom), not(syncprims_tsan)))]
    match FAST_MODE.load(Relaxed) {
        MODE_MEMBARRIER => compiler_fence(SeqCst),
        MODE_SEQCST => fence(SeqCst),
        _ => light_undecided(),
    }
    #[cfg(loom)]
    loom_fence();
}

/// Whether [`light`] is a full fence: `true` in SeqCst mode, `false` in
/// membarrier mode, where it is a compiler fence. Decides the mode if no
/// fence has run yet, as `light` would; once decided, a relaxed load.
///
/// For code with two ways to order a store before a load, one cheap only
/// where `light` is: hazptr's acquire leaves a wildcard window open across
/// `light()` in membarrier mode, and in SeqCst mode, where the fence makes
/// that window long enough for a preempted reader to hold every scan up,
/// validates the pointer instead. Under `cfg(loom)` and `cfg(syncprims_tsan)`
/// `true`: both fences are there the same SeqCst read-modify-write.
#[inline]
pub fn light_is_full_fence() -> bool {
    #[cfg(any(loom, syncprims_tsan))]
    return true;
    #[cfg(all(not(loom), not(syncprims_tsan)))]
    match FAST_MODE.load(Relaxed) {
        MODE_MEMBARRIER => false,
        MODE_SEQCST => true,
        _ => mode() == Mode::SeqCst,
    }
}

/// Both fences under `cfg(loom)` (see the module docs): a SeqCst RMW of one
/// loom word.
#[cfg(loom)]
fn loom_fence() {
    loom::lazy_static! {
        static ref LOOM_FENCE: loom::sync::atomic::AtomicUsize =
            loom::sync::atomic::AtomicUsize::new(0);
    }
    LOOM_FENCE.fetch_add(0, SeqCst);
}

/// Both fences under `cfg(syncprims_tsan)` (see the module docs): a SeqCst RMW
/// of one word, which pairs with every other thread's RMW of the same word.
#[cfg(syncprims_tsan)]
#[inline]
fn sanitizer_fence() {
    static SANITIZER_FENCE: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    SANITIZER_FENCE.fetch_add(0, SeqCst);
}

#[cfg(all(not(loom), not(syncprims_tsan)))]
#[cold]
#[inline(never)]
fn light_undecided() {
    match mode() {
        Mode::Membarrier => compiler_fence(SeqCst),
        Mode::SeqCst => fence(SeqCst),
    }
}

/// A full fence that needs no partner of its own kind: `fence(SeqCst)` in
/// either mode, a few nanoseconds and no system call.
///
/// It pairs with another `full()`, as two SeqCst fences do, and with
/// [`heavy`], since it is at least the barrier that [`light`] is. It does not
/// pair with `light()`, which in membarrier mode is a compiler fence only.
/// Code whose two sides both run rarely uses a pair of them instead of
/// light/heavy: the rare side then costs nanoseconds instead of a
/// `membarrier()` that interrupts every CPU running the process (rcu-lite's
/// qsbr flavor, whose readers fence only when they announce a quiescent
/// state or go online or offline, as liburcu's qsbr `smp_mb()`s do).
///
/// Under `cfg(loom)` and `cfg(syncprims_tsan)` it is the same SeqCst
/// read-modify-write as the other two fences (see the module docs), which
/// pairs with both.
#[inline]
pub fn full() {
    #[cfg(syncprims_tsan)]
    return sanitizer_fence();
    #[cfg(all(not(loom), not(syncprims_tsan)))]
    fence(SeqCst);
    #[cfg(loom)]
    loom_fence();
}

/// The heavy fence: the update/scan-side half of the pair (see the module docs).
///
/// In membarrier mode it is a system call that interrupts every CPU running a
/// thread of this process (about a microsecond on small machines); do not call
/// it on a fast path.
///
/// # Aborts
///
/// If `membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED)` fails after registration
/// succeeded, other than with `ENOMEM` (a seccomp filter installed after the
/// decision could make it). `ENOMEM`, which the kernel returns when it cannot
/// allocate the CPU mask it works on, is retried until the call succeeds:
/// the barrier has not happened yet, and memory comes back. Falling back would silently break the pairing with light
/// fences already issued as compiler fences, and no caller can go on safely
/// either: a reclaimer would free what a reader still uses, and one that
/// unwound in the middle of a scan or grace period would leave every other
/// waiter stuck. So this prints why and aborts the process, rather than
/// panic into code that might catch it.
#[inline]
pub fn heavy() {
    #[cfg(syncprims_tsan)]
    return sanitizer_fence();
    #[cfg(all(not(loom), not(syncprims_tsan)))]
    match FAST_MODE.load(Relaxed) {
        MODE_SEQCST => fence(SeqCst),
        _ => heavy_slow(),
    }
    #[cfg(loom)]
    loom_fence();
}

#[cfg(all(not(loom), not(syncprims_tsan)))]
fn heavy_slow() {
    match mode() {
        Mode::SeqCst => fence(SeqCst),
        Mode::Membarrier => {
            // The syscall is opaque to the compiler; the compiler fences make the
            // program order around it explicit. The kernel's `smp_mb()` before
            // and after the IPIs (in `membarrier_private_expedited()`) orders
            // this thread's own accesses; the IPIs order the other threads'.
            compiler_fence(SeqCst);
            if let Err(err) = retrying_out_of_memory(crate::sys::private_expedited) {
                heavy_failed(err);
            }
            compiler_fence(SeqCst);
        }
    }
}

/// Calls `membarrier` until it succeeds or fails with anything but `ENOMEM`
/// (the kernel could not allocate its CPU mask: the barrier has not happened,
/// and memory comes back), yielding between the first tries and then
/// sleeping 100 us between the others: memory comes back when reclaim or
/// another thread frees it, which a waiter yielding back to back (at a real-
/// time priority, above them) could keep from running.
#[cfg(all(not(loom), not(syncprims_tsan)))]
fn retrying_out_of_memory(
    mut membarrier: impl FnMut() -> Result<(), crate::sys::Error>,
) -> Result<(), crate::sys::Error> {
    const YIELDS: u32 = 8;
    let mut tries = 0_u32;
    loop {
        match membarrier() {
            Err(crate::sys::Error::Os { source, .. })
                if source.kind() == std::io::ErrorKind::OutOfMemory =>
            {
                tries = tries.saturating_add(1);
                if tries <= YIELDS {
                    std::thread::yield_now();
                } else {
                    std::thread::sleep(std::time::Duration::from_micros(100));
                }
            }
            done => return done,
        }
    }
}

#[cfg(all(not(loom), not(syncprims_tsan)))]
#[cold]
fn heavy_failed(err: crate::sys::Error) -> ! {
    // Not `eprintln!`: it panics when stderr cannot be written (a closed
    // pipe gives EPIPE, SIGPIPE being ignored in Rust programs), and that
    // panic would unwind out of `heavy()` instead of aborting. Nor std's
    // stderr lock (`write_line`): a heavy fence runs under rcu-lite's and
    // hazptr's driver flags, which a thread holding that lock may wait for,
    // and the abort would wait for it in turn.
    #[cfg(target_os = "linux")]
    futex_word::stall::write_line(format_args!("{}", heavy_failure_message(&err)));
    #[cfg(not(target_os = "linux"))]
    {
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), "{}", heavy_failure_message(&err));
    }
    std::process::abort()
}

/// What [`heavy_failed`] prints. Membarrier mode is chosen only once
/// registration succeeded, so `EPERM` here is [`crate::sys::Error::Refused`]
/// (a filter installed since), never "not registered".
#[cfg(all(not(loom), not(syncprims_tsan)))]
fn heavy_failure_message(err: &crate::sys::Error) -> String {
    format!(
        "fence::heavy(): {err}; the fences chose membarrier mode once registration succeeded, \
         and light fences already issued as compiler fences cannot be paired with anything \
         else: aborting"
    )
}

/// The mode in use, deciding it now if no fence has run yet.
pub fn mode() -> Mode {
    *DECISION.get_or_init(|| {
        let decided = decide();
        publish_fast_mode(decided);
        decided
    })
}

/// Chooses the mode for this process before any fence has run.
///
/// Returns `Ok(())` if `wanted` is now the mode (including when it already
/// was). Asking for [`Mode::Membarrier`] decides as the first fence would:
/// SeqCst where `SYNCPRIMS_FENCE=seqcst` asks for it, the kernel does not
/// support membarrier, or refuses its registration or the trial barrier
/// after it ([`fallback_reason`] says which).
///
/// # Errors
///
/// [`ModeDecided`], naming the mode in use, when it is not `wanted`:
/// decided earlier (by any fence, [`mode`], [`light_is_full_fence`] or
/// another `force`; hazptr's and rcu-lite's fork hooks call [`mode`]),
/// which cannot change,
/// or, for [`Mode::Membarrier`], decided now as SeqCst for the reasons
/// above. (Until 2026-12-07 the error was the bare `Mode`, not an `Error`.)
pub fn force(wanted: Mode) -> Result<(), ModeDecided> {
    let decided = *DECISION.get_or_init(|| {
        let decided = match wanted {
            Mode::SeqCst => Mode::SeqCst,
            Mode::Membarrier => decide(),
        };
        publish_fast_mode(decided);
        decided
    });
    if decided == wanted {
        Ok(())
    } else {
        Err(ModeDecided { wanted, decided })
    }
}

/// [`force`] asked for a mode other than the one in use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ModeDecided {
    /// The mode asked for.
    pub wanted: Mode,
    /// The mode in use, for the rest of the process.
    pub decided: Mode,
}

impl std::fmt::Display for ModeDecided {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the fences use {} mode, not the {} mode asked for (decided once per process)",
            self.decided.name(),
            self.wanted.name()
        )?;
        if self.wanted == Mode::Membarrier && self.decided == Mode::SeqCst {
            // Perhaps decided just now: the environment or the kernel.
            f.write_str("; fence::fallback_reason() says why, where membarrier was refused")?;
        }
        Ok(())
    }
}

impl std::error::Error for ModeDecided {}

fn publish_fast_mode(mode: Mode) {
    #[cfg(not(loom))]
    FAST_MODE.store(
        match mode {
            Mode::Membarrier => MODE_MEMBARRIER,
            Mode::SeqCst => MODE_SEQCST,
        },
        Relaxed,
    );
    #[cfg(loom)]
    let _ = mode;
}

fn decide() -> Mode {
    if cfg!(any(loom, miri, syncprims_tsan)) {
        return Mode::SeqCst;
    }
    match std::env::var(MODE_ENV).as_deref() {
        Ok("seqcst") => Mode::SeqCst,
        // An unknown value is ignored rather than fatal: the automatic choice is
        // always correct, only its speed differs.
        _ => decide_from_kernel(),
    }
}

/// Why the kernel's membarrier was not chosen: the error its registration,
/// or the trial barrier after it, returned (see the module docs, *Mode
/// choice*). `None` while the mode is undecided, in membarrier mode, and in
/// SeqCst mode chosen by `SYNCPRIMS_FENCE`, [`force`], `cfg(loom)`,
/// `cfg(miri)` or `cfg(syncprims_tsan)`. It tells an unsupported kernel
/// (`ENOSYS`, a `QUERY` without the command) from a sandbox's refusal
/// (`EPERM` to the registration or the barrier, or to the query itself:
/// [`crate::sys::Error::Blocked`]), which the mode alone cannot.
pub fn fallback_reason() -> Option<&'static crate::sys::Error> {
    FALLBACK_REASON.get()
}

/// Set at most once, by the decision, before `DECISION` holds `SeqCst`.
static FALLBACK_REASON: OnceLock<crate::sys::Error> = OnceLock::new();

fn decide_from_kernel() -> Mode {
    #[cfg(any(loom, miri, syncprims_tsan))]
    return Mode::SeqCst;
    // `ENOMEM` is retried, as by `heavy`: the kernel could not allocate the
    // registration's CPU mask for now, and taking it for a refusal would
    // leave the process on SeqCst fences for good. The trial barrier runs
    // before any light fence has been issued (they all wait for this
    // decision), so refusing membarrier mode here is still safe.
    #[cfg(not(any(loom, miri, syncprims_tsan)))]
    match retrying_out_of_memory(|| crate::sys::register(crate::sys::Command::PrivateExpedited))
        .and_then(|()| retrying_out_of_memory(crate::sys::private_expedited))
    {
        Ok(()) => Mode::Membarrier,
        Err(reason) => {
            let _ = FALLBACK_REASON.set(reason);
            Mode::SeqCst
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    /// `ENOMEM` is retried until the call succeeds; any other error ends the
    /// retries at once (and `heavy` then aborts with it).
    #[test]
    #[cfg(not(syncprims_tsan))]
    fn heavy_retries_out_of_memory_and_nothing_else() {
        use crate::sys::{Command, Error};
        let os = |errno| Error::Os {
            command: Command::PrivateExpedited,
            source: std::io::Error::from_raw_os_error(errno),
        };
        let mut calls = 0;
        let outcome = retrying_out_of_memory(|| {
            calls += 1;
            if calls <= 3 {
                Err(os(libc::ENOMEM))
            } else {
                Ok(())
            }
        });
        assert!(outcome.is_ok(), "{outcome:?}");
        assert_eq!(calls, 4, "three ENOMEM answers, then the barrier");
        let mut calls = 0;
        let outcome = retrying_out_of_memory(|| {
            calls += 1;
            Err(os(libc::EINVAL))
        });
        assert!(
            matches!(&outcome, Err(Error::Os { source, .. }) if source.raw_os_error() == Some(libc::EINVAL)),
            "{outcome:?}"
        );
        assert_eq!(calls, 1, "EINVAL is not retried");
        let mut calls = 0;
        let outcome = retrying_out_of_memory(|| {
            calls += 1;
            Err(Error::Refused {
                command: Command::PrivateExpedited,
                registering: false,
            })
        });
        assert!(matches!(outcome, Err(Error::Refused { .. })), "{outcome:?}");
        assert_eq!(calls, 1, "a refusal is not retried");
    }

    /// Past its first tries, the retry of `ENOMEM` sleeps between tries
    /// rather than yielding back to back: 100 answers of `ENOMEM` take at
    /// least the 92 sleeps of 100 us (yields alone took about 0.1 ms).
    #[test]
    #[cfg(not(syncprims_tsan))]
    fn a_lasting_out_of_memory_is_retried_asleep() {
        use crate::sys::{Command, Error};
        let mut calls = 0;
        let started = std::time::Instant::now();
        let outcome = retrying_out_of_memory(|| {
            calls += 1;
            if calls <= 100 {
                Err(Error::Os {
                    command: Command::PrivateExpedited,
                    source: std::io::Error::from_raw_os_error(libc::ENOMEM),
                })
            } else {
                Ok(())
            }
        });
        assert!(outcome.is_ok(), "{outcome:?}");
        let elapsed = started.elapsed();
        assert!(
            elapsed >= std::time::Duration::from_micros(92 * 100),
            "100 ENOMEM answers retried in {elapsed:?}: not asleep between them"
        );
    }

    /// The names are what `SYNCPRIMS_FENCE` and the benchmark reports
    /// (`fence_mode` in the machine record) use: a wrong or empty name, or
    /// a `Display` that writes nothing, would record the wrong mode.
    #[test]
    fn modes_display_their_documented_names() {
        assert_eq!(Mode::Membarrier.name(), "membarrier");
        assert_eq!(Mode::SeqCst.name(), "seqcst");
        assert_eq!(Mode::Membarrier.to_string(), "membarrier");
        assert_eq!(Mode::SeqCst.to_string(), "seqcst");
    }

    #[test]
    fn fast_mode_matches_the_decision() {
        let decided = mode();
        let fast = FAST_MODE.load(Relaxed);
        assert_eq!(
            fast,
            match decided {
                Mode::Membarrier => MODE_MEMBARRIER,
                Mode::SeqCst => MODE_SEQCST,
            }
        );
        // A second force to the decided mode is accepted; the other one is refused.
        assert_eq!(force(decided), Ok(()));
        let other = match decided {
            Mode::Membarrier => Mode::SeqCst,
            Mode::SeqCst => Mode::Membarrier,
        };
        let refused = force(other).unwrap_err();
        assert_eq!(
            refused,
            ModeDecided {
                wanted: other,
                decided
            }
        );
        // An `Error`, which `?` takes into a `Box<dyn Error>`.
        let boxed: Box<dyn std::error::Error + Send + Sync> = refused.into();
        assert!(
            boxed.to_string().starts_with(&format!(
                "the fences use {} mode, not the {} mode asked for",
                decided.name(),
                other.name()
            )),
            "{boxed}"
        );
        light();
        heavy();
    }

    /// A seccomp filter installed after registration answers EPERM: the
    /// abort message must say so, not tell the user to register.
    #[test]
    #[cfg(all(target_os = "linux", not(syncprims_tsan)))]
    fn the_abort_message_does_not_contradict_itself() {
        let err = crate::sys::Error::Refused {
            command: crate::sys::Command::PrivateExpedited,
            registering: false,
        };
        let message = heavy_failure_message(&err);
        assert!(message.contains("seccomp"), "{message}");
        assert!(!message.contains("has not registered"), "{message}");
        assert!(!message.contains("register("), "{message}");
    }
}
