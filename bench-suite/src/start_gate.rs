//! Starting a run's threads together, and calling the start off when the OS
//! refuses one of them.
//!
//! A measured run spawns its threads, each waits at a start gate, and the
//! run begins when all have arrived, as with `std::sync::Barrier`. If the OS
//! refuses a thread (`EAGAIN` from `clone()` under `ulimit -u` or a cgroup's
//! `pids.max`, or no room to map its stack under `ulimit -v`),
//! `Scope::spawn` panics, a `Barrier` waits for that thread for ever, and
//! the thread scope, which joins the threads already started, never
//! returns: the command hung instead of saying what went wrong.
//!
//! Under `ulimit -v` this covers the refusal of a stack, not what a thread
//! maps for itself once started: std maps each thread's signal stack from
//! the new thread, and aborts the whole process if it cannot ("failed to
//! allocate an alternative stack"), and a failed allocation aborts too.
//! When the stack that was refused leaves too little room for the threads
//! started just before it, the command aborts rather than naming it; no
//! caller can catch that. `ulimit -u` and `pids.max` refuse at `clone()`,
//! before the thread exists.
//!
//! Invariants:
//! - [`StartGate::wait`] returns `true` in every party only once all
//!   `parties` have arrived, and `false` in every party once the gate was
//!   [cancelled](StartGate::cancel) first; a gate opens or is cancelled once,
//!   and a later call of either changes nothing.
//! - [`StartGate::wait_last`] calls its closure only once every other
//!   party has arrived and before any has left, then opens the gate: a run
//!   reads what its timed window starts from (CPU clocks) there.
//! - Every thread that waits at a gate obeys its answer: on `false` it
//!   returns at once, measuring nothing, so the scope's joins end.
//! - A party that panics before the gate opens cancels it, through the
//!   [`CancelOnPanic`] guard its thread holds: the others return, and the
//!   coordinator, which gets `false` with no refusal of its own, panics
//!   saying so (the thread's own message is printed above it).
//! - [`spawn_scoped`] never panics on a refusal: it returns [`ThreadRefused`],
//!   naming the thread, for the run to cancel its gate and pass the error up
//!   (`syncbench` then exits 1 with the message).
//!
//! Used by refscale, rcuscale, advise, locktorture and torture (whose runs
//! record a refusal as their failure, and cancel the gate).
//! `membarrier-sim`'s runners have their own gate (private to that crate).
//! [`StopOnDrop`] ends the threads that loop until a stop flag when the
//! scope around them unwinds (the criterion benches' readers).

use futex_word::AtomicU32;
use std::fmt;
use std::sync::atomic::{
    AtomicBool, AtomicUsize,
    Ordering::{AcqRel, Acquire, Relaxed},
};
use std::thread::{Scope, ScopedJoinHandle};
use std::time::{Duration, Instant};

/// [`StartGate::state`]: parties are arriving.
const WAITING: u32 = 0;
/// Every party arrived.
const OPEN: u32 = 1;
/// Called off before every party arrived.
const CANCELLED: u32 = 2;

/// A start barrier for `parties` threads that can be called off.
///
/// The parties sleep on one futex word, which the last to arrive (or a
/// cancel) changes once and wakes. A woken party reads the word and goes: it
/// takes no lock on the way out. (With a `Mutex` and `Condvar`, every woken
/// party took the mutex in turn, and a holder preempted among hundreds of
/// threads that had already started kept the rest waiting: with 200 threads
/// on 2 CPUs, the run's own thread left the gate 10 s after it opened.)
#[derive(Debug)]
pub struct StartGate {
    parties: usize,
    arrived: AtomicUsize,
    /// `WAITING`, then `OPEN` or `CANCELLED` for good.
    state: AtomicU32,
    /// How many parties have left the opened gate (see
    /// [`StartGate::until_every_party_left`]).
    departed: AtomicUsize,
}

impl StartGate {
    /// A gate that opens when `parties` threads have called [`wait`](Self::wait).
    /// A gate of 0 or 1 parties opens at the first `wait`.
    pub fn new(parties: usize) -> Self {
        Self {
            parties,
            arrived: AtomicUsize::new(0),
            departed: AtomicUsize::new(0),
            state: AtomicU32::new(WAITING),
        }
    }

    /// Waits until every party has arrived (`true`: start) or the gate is
    /// cancelled (`false`: the run is off; return without measuring).
    ///
    /// What a party did before it arrived happens before every party's
    /// return from an opened gate: the arrivals' `AcqRel` increments form one
    /// release sequence that the opener's increment reads, and the opener's
    /// `AcqRel` change to `OPEN` is what each party's `Acquire` load reads.
    #[must_use = "a cancelled gate means the run is off: return without measuring"]
    pub fn wait(&self) -> bool {
        // Acquire: pairs with the change away from WAITING, as below.
        if self.state.load(Acquire) == WAITING {
            let arrived = self.arrived.fetch_add(1, AcqRel) + 1;
            // A cancel may have come first: the exchange then fails, and
            // this party reads CANCELLED below.
            if arrived >= self.parties
                && self
                    .state
                    .compare_exchange(WAITING, OPEN, AcqRel, Acquire)
                    .is_ok()
            {
                futex_word::wake_all(&self.state);
            }
        }
        loop {
            // Acquire: pairs with the AcqRel exchange that opened or
            // cancelled the gate.
            match self.state.load(Acquire) {
                // The futex returns once the word changed (or spuriously).
                WAITING => futex_word::wait(&self.state, WAITING, None),
                OPEN => {
                    // Relaxed: a count the waiters of
                    // `until_every_party_left` poll; it publishes nothing.
                    self.departed.fetch_add(1, Relaxed);
                    return true;
                }
                _ => return false,
            }
        }
    }

    /// [`wait`](Self::wait) for the coordinator, taking its arrival last:
    /// it waits until every other party has arrived, calls `before_opening`
    /// (which reads what the timed window starts from: no party has yet
    /// left the gate, and each has done its set-up), then arrives, opening
    /// the gate. Returns `false`, without calling `before_opening`, once
    /// the gate was cancelled. It polls the arrivals with short sleeps: the
    /// coordinator's own CPU time while the others set up is a few wake-ups.
    #[must_use = "a cancelled gate means the run is off: return without measuring"]
    pub fn wait_last(&self, before_opening: impl FnOnce()) -> bool {
        loop {
            // Acquire: pairs with the AcqRel exchange that cancelled the
            // gate. Only the coordinator's own arrival can open it.
            if self.state.load(Acquire) != WAITING {
                return self.wait();
            }
            // Acquire: pairs with the arrivals' AcqRel increments, so that
            // what each party did before it arrived happens before
            // `before_opening`.
            if self.arrived.load(Acquire) + 1 >= self.parties {
                break;
            }
            std::thread::sleep(std::time::Duration::from_micros(200));
        }
        before_opening();
        self.wait()
    }

    /// Whether every party but the coordinator's last one has arrived, or
    /// the gate is no longer waiting (opened, or cancelled): what a
    /// coordinator of several gates polls before it opens any, so that no
    /// run starts its clock while another's threads are still being set up.
    pub fn others_arrived(&self) -> bool {
        // Acquire, both: as in `wait_last`.
        self.state.load(Acquire) != WAITING || self.arrived.load(Acquire) + 1 >= self.parties
    }

    /// After this party's [`wait`](Self::wait) returned `true`: yields the
    /// CPU until every party has left the gate, i.e. each has been given a
    /// CPU since it opened. A party that times work done beside the others
    /// (rcuscale's writers, beside its readers) starts its clock after
    /// this: with more threads than CPUs, a woken party may get a CPU only
    /// after a timeslice or more, and a short run could be over before
    /// then, measured with none of the others running.
    pub fn until_every_party_left(&self) {
        // Relaxed: see `wait`.
        while self.departed.load(Relaxed) < self.parties {
            std::thread::yield_now();
        }
    }

    /// A guard for a party's thread to hold from its first line: if the
    /// thread unwinds from a panic before the gate opened (in its set-up,
    /// before it reached [`wait`](Self::wait)), the guard cancels the gate,
    /// so that the other parties, and the coordinator, do not wait for it
    /// for ever. The coordinator's `false` then means a thread panicked.
    pub fn cancel_on_panic(&self) -> CancelOnPanic<'_> {
        CancelOnPanic(self)
    }

    /// Calls the start off: every party waiting, and every later one, gets
    /// `false`. Does nothing to a gate that already opened.
    pub fn cancel(&self) {
        // AcqRel: as the exchange that opens the gate in `wait`.
        if self
            .state
            .compare_exchange(WAITING, CANCELLED, AcqRel, Acquire)
            .is_ok()
        {
            futex_word::wake_all(&self.state);
        }
    }
}

/// Cancels its gate if dropped while its thread panics: see
/// [`StartGate::cancel_on_panic`].
#[derive(Debug)]
#[must_use = "the guard cancels the gate only while it is held"]
pub struct CancelOnPanic<'a>(&'a StartGate);

impl Drop for CancelOnPanic<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.cancel();
        }
    }
}

/// Sets a run's stop flag when dropped: at the end of the scope that holds
/// it, or while that scope unwinds from a panic, so that threads looping
/// until the flag is set end, and the thread scope joining them returns
/// (and passes the panic on) instead of waiting for them for ever.
#[derive(Debug)]
pub struct StopOnDrop<'a>(pub &'a AtomicBool);

impl Drop for StopOnDrop<'_> {
    fn drop(&mut self) {
        // Relaxed: the flag publishes nothing; the joins order the rest.
        self.0.store(true, Relaxed);
    }
}

/// A sample's wall time as its threads saw it, from the earliest of their
/// own starts to the latest of their own ends: a thread may get a CPU well
/// after the others began, and a stretch where one thread ran alone is part
/// of the sample. Panics on no spans.
pub fn first_start_to_last_end(spans: impl IntoIterator<Item = (Instant, Instant)>) -> Duration {
    spans
        .into_iter()
        .reduce(|(b0, e0), (b1, e1)| (b0.min(b1), e0.max(e1)))
        .map(|(began, ended)| ended.saturating_duration_since(began))
        .expect("at least one thread's span")
}

/// The OS refused to start a thread a run asked for.
#[derive(Debug)]
pub struct ThreadRefused {
    /// Which thread, in words (`"idle thread 37 of 1000 for hazptr"`).
    pub thread: String,
    /// What `clone()` (or the stack's `mmap`) said.
    pub source: std::io::Error,
}

impl ThreadRefused {
    /// The refusal of the thread labelled `label` (`"writer 5"`, as the
    /// run's output names its threads), the `n`th of the run's `of`
    /// (1-based), for the implementation `name`.
    pub fn labelled(label: &str, n: usize, of: usize, name: &str, source: std::io::Error) -> Self {
        Self {
            thread: format!("{label} (thread {n} of {of}) for {name}"),
            source,
        }
    }
}

impl fmt::Display for ThreadRefused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the OS refused to start {}: {}; run fewer threads (threads are limited by \
             /proc/sys/kernel/pid_max, /proc/sys/kernel/threads-max, RLIMIT_NPROC (ulimit -u), \
             a cgroup's pids.max, memory for their stacks (ulimit -v), and \
             /proc/sys/vm/max_map_count, about 4 mappings a thread)",
            self.thread, self.source
        )
    }
}

impl std::error::Error for ThreadRefused {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.source)
    }
}

impl From<ThreadRefused> for std::io::Error {
    fn from(refused: ThreadRefused) -> Self {
        std::io::Error::new(refused.source.kind(), refused)
    }
}

/// Spawns `body` on a thread of `scope` named `name`; a refusal is returned
/// as [`ThreadRefused`] naming it as `thread()` says, where
/// `std::thread::Scope::spawn` would panic.
pub fn spawn_scoped<'scope, T: Send + 'scope>(
    scope: &'scope Scope<'scope, '_>,
    name: &str,
    thread: impl FnOnce() -> String,
    body: impl FnOnce() -> T + Send + 'scope,
) -> Result<ScopedJoinHandle<'scope, T>, ThreadRefused> {
    std::thread::Builder::new()
        .name(name.to_owned())
        .spawn_scoped(scope, body)
        .map_err(|source| ThreadRefused {
            thread: thread(),
            source,
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    #[test]
    fn the_coordinator_arriving_last_reads_before_any_party_leaves() {
        let gate = StartGate::new(4);
        let arrived_before = AtomicUsize::new(usize::MAX);
        let left = AtomicUsize::new(0);
        std::thread::scope(|s| {
            for _ in 0..3 {
                s.spawn(|| {
                    std::thread::sleep(std::time::Duration::from_millis(10));
                    assert!(gate.wait());
                    left.fetch_add(1, Relaxed);
                });
            }
            assert!(gate.wait_last(|| {
                arrived_before.store(gate.arrived.load(Relaxed), Relaxed);
                assert_eq!(left.load(Relaxed), 0);
            }));
        });
        assert_eq!(arrived_before.load(Relaxed), 3);
        assert_eq!(left.load(Relaxed), 3);
        // Cancelled first: `false`, and nothing is read.
        let gate = StartGate::new(3);
        std::thread::scope(|s| {
            s.spawn(|| assert!(!gate.wait()));
            s.spawn(|| gate.cancel());
            assert!(!gate.wait_last(|| panic!("read on a cancelled gate")));
        });
    }

    #[test]
    fn the_gate_opens_when_every_party_has_arrived() {
        let gate = StartGate::new(4);
        let passed = AtomicUsize::new(0);
        std::thread::scope(|s| {
            for _ in 0..3 {
                s.spawn(|| {
                    assert!(gate.wait());
                    passed.fetch_add(1, Relaxed);
                });
            }
            // Three of four arrived: nobody is through yet.
            std::thread::sleep(std::time::Duration::from_millis(50));
            assert_eq!(passed.load(Relaxed), 0);
            assert!(gate.wait());
        });
        assert_eq!(passed.load(Relaxed), 3);
        // Open for good: cancelling afterwards changes nothing.
        gate.cancel();
        assert!(gate.wait());
    }

    #[test]
    fn a_cancel_releases_the_parties_waiting_and_turns_away_later_ones() {
        let gate = StartGate::new(5);
        std::thread::scope(|s| {
            let waiting: Vec<_> = (0..3).map(|_| s.spawn(|| gate.wait())).collect();
            std::thread::sleep(std::time::Duration::from_millis(20));
            gate.cancel();
            for h in waiting {
                assert!(
                    !h.join().unwrap(),
                    "a waiting party started after the cancel"
                );
            }
        });
        // The fourth and fifth parties arriving do not open it.
        assert!(!gate.wait());
        assert!(!gate.wait());
    }

    #[test]
    fn a_panic_in_the_scope_stops_the_threads_looping_until_stop() {
        let stop = AtomicBool::new(false);
        let joined = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            std::thread::scope(|s| {
                let _stop = StopOnDrop(&stop);
                s.spawn(|| {
                    while !stop.load(Relaxed) {
                        std::thread::yield_now();
                    }
                });
                panic!("a planted panic in the run");
            })
        }));
        assert!(joined.is_err(), "the panic came out of the scope");
        assert!(stop.load(Relaxed));
    }

    #[test]
    fn a_party_that_panics_before_the_gate_cancels_it() {
        let gate = StartGate::new(3);
        std::thread::scope(|s| {
            let other = s.spawn(|| gate.wait());
            let panicking = s.spawn(|| {
                let _cancel = gate.cancel_on_panic();
                panic!("a planted panic in a party's set-up");
            });
            assert!(panicking.join().is_err());
            assert!(!gate.wait(), "the coordinator was let start");
            assert!(!other.join().unwrap(), "a party was let start");
        });
        // After the gate opened, a panic changes nothing.
        let gate = StartGate::new(1);
        assert!(gate.wait());
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let _cancel = gate.cancel_on_panic();
            panic!("a planted panic after the start");
        }));
        assert!(gate.wait());
    }

    #[test]
    fn a_gate_of_one_party_opens_at_once() {
        assert!(StartGate::new(1).wait());
        assert!(StartGate::new(0).wait());
    }

    #[test]
    fn a_refusal_names_the_thread_and_the_limits() {
        let refused = ThreadRefused {
            thread: "idle thread 37 of 1000 for hazptr".into(),
            source: std::io::Error::from_raw_os_error(11),
        };
        let text = refused.to_string();
        assert!(text.starts_with("the OS refused to start idle thread 37 of 1000 for hazptr: "));
        assert!(text.contains("ulimit -u"), "{text}");
        // The OS's own error stays reachable down the chain, for a caller
        // that walks `source()` (as anyhow's `{:#}` does).
        use std::error::Error as _;
        let os = refused
            .source()
            .and_then(|e| e.downcast_ref::<std::io::Error>());
        assert_eq!(os.and_then(std::io::Error::raw_os_error), Some(11));
        let io: std::io::Error = refused.into();
        assert_eq!(io.kind(), std::io::ErrorKind::WouldBlock);
        assert!(io.to_string().contains("idle thread 37"), "{io}");
        let inner = io.get_ref().and_then(|e| e.downcast_ref::<ThreadRefused>());
        assert_eq!(inner.map(|r| r.source.raw_os_error()), Some(Some(11)));
    }
}
