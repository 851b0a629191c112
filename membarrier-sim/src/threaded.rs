//! The simulator's cross-check in real time: threads as CPUs, sleeps as
//! interrupts-off windows, `std::sync::Mutex` as the serialization.
//!
//! Mirrors the same kernel code as [`crate::sim`] (`membarrier_private_expedited()`
//! with `SERIALIZE_IPI()` or `SERIALIZE_IPI_CPU()` around
//! `smp_call_function_single()`), played out by real threads instead of an
//! event queue, so that the simulator's central claim can be checked against
//! real blocking, real wake-ups and a real scheduler at small scale:
//!
//! - One **CPU thread** per simulated CPU replays that CPU's interrupts-off
//!   windows, drawn from the same `Schedule` as the simulator for the same
//!   [`Config`] and seed: inside a window it sleeps (interrupts off: its IPI
//!   inbox waits), outside it runs the IPI handlers queued for it and sleeps
//!   until the next request or window.
//! - One **caller thread** per caller loops like a selftest hammer: take its
//!   home CPU's run token (a `Mutex<()>`: the CPU the caller spins on, as
//!   `csd_lock_wait()` does with preemption off), wait for that CPU's
//!   interrupts, take the policy's mutex (sleeping for it without the run
//!   token), post the request to the target's inbox, wait for the handler,
//!   wait for its home CPU's interrupts again, release both.
//!
//! Costs are whatever this machine charges for them (futex wake-ups of a few
//! to tens of microseconds instead of the simulator's 1 µs IPI); the windows,
//! in milliseconds, dominate either way, which is why the two modes can be
//! compared on the per-cpu/global ratio.
//!
//! Invariants: a caller holds at most its policy mutex and its home CPU's
//! run token, always taking the mutex first when it has to sleep for it and
//! never blocking on anything but its IPI while holding the token, so no
//! cycle of waits can form. A caller's wait for its handlers spins briefly,
//! then sleeps on a futex the handling CPU thread rings. The waits at the
//! start gate and a CPU thread's wait on its doorbell sleep on a futex at
//! once, woken by whoever ends the wait (the doorbell wait also ends at the
//! CPU's next window or after 10 ms); the policy mutex and the run token
//! are `std::sync::Mutex` locks; interrupts-off time, on a CPU thread or
//! for a caller waiting for its home CPU's interrupts, is a timed sleep
//! that nothing cuts short. Threads start at a gate that opens once all
//! exist; if one cannot be started, or the spawning thread panics, the gate
//! aborts and every stop flag is set (see `crate::spawn`), so a run ends
//! with [`Error::Spawn`] or the panic, never a hang.

use crate::sim::{Config, ConfigError, Histogram, Policy, Report, Schedule, Window};
use crate::spawn::{self, Gate, OnDrop};
use crate::sync::{AtomicBool, AtomicU32, Ordering};
use std::fmt;
use std::sync::{Mutex, MutexGuard, OnceLock, PoisonError};
use std::time::{Duration, Instant};

/// Spins before a wait goes to sleep.
const SPINS: u32 = 100;

/// Why a threaded run could not run.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// A parameter that cannot be used. Transparent: it displays as the
    /// [`ConfigError`] it holds (match on it to know which), and its
    /// `source()` is that error's.
    Config(ConfigError),
    /// The OS refused a thread (one per CPU and per caller are needed); the
    /// threads already started were stopped.
    Spawn {
        /// Threads the run needs: `cpus + callers`.
        threads: u32,
        /// Threads started before the one refused.
        started: u32,
        /// The OS's answer.
        source: std::io::Error,
    },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Config(e) => e.fmt(f),
            Error::Spawn {
                threads,
                started,
                source,
            } => write!(
                f,
                "could not start thread {} of {threads} (one per CPU and per caller): {source}; {}",
                started + 1,
                spawn::LIMITS
            ),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            // Transparent: `Display` already printed `e` (until 2026-12-07
            // this returned `e`, and a chain walker printed it twice).
            Error::Config(e) => e.source(),
            Error::Spawn { source, .. } => Some(source),
        }
    }
}

impl From<ConfigError> for Error {
    fn from(e: ConfigError) -> Error {
        Error::Config(e)
    }
}

/// Runs `config` in real time for `config.sim_time_ns`; `think_ns` is slept,
/// the `costs` are this machine's own.
///
/// # Errors
///
/// [`Error::Config`] naming the first parameter that cannot be used, or
/// [`Error::Spawn`] if this machine refused one of the `cpus + callers`
/// threads.
///
/// # Panics
///
/// If a thread of the run panicked (a bug), with its panic, once every other
/// thread has stopped.
pub fn run(config: &Config) -> Result<Report, Error> {
    config.validate()?;
    let duration = config.sim_time_ns;
    let mut schedule = Schedule::new(
        config.cpus,
        config.throttle.as_ref(),
        config.costs.ipi_latency_ns,
        config.seed,
        duration,
    );
    // The run's figures first: the windows below reach past its end, and
    // the timer passes generated for them are not the run's.
    let summary = schedule.summary();
    // Every window of the run, drawn up front (16 bytes each: about 6 KB
    // per CPU per second at the default 5 ms period), while the schedule's
    // own copy is let go before the run.
    let windows = schedule.all_windows(replay_horizon_ns(duration));
    drop(schedule);
    let machine = Machine::new(config, windows);
    let outcome = machine.run(config).map_err(|e| Error::Spawn {
        threads: config.cpus + config.callers,
        started: e.started,
        source: e.source,
    })?;
    Ok(Report {
        cpus: config.cpus,
        callers: config.callers,
        policy: config.policy,
        seed: config.seed,
        time_ns: duration,
        calls: outcome.calls,
        latency: outcome.latency,
        mutex_wait_max_ns: outcome.mutex_wait_max_ns,
        stalls: outcome.stalls,
        stalled_callers: outcome.stalled_callers,
        watchdog_ns: config.watchdog_ns,
        irq_off_fraction: summary.irq_off_fraction,
        irq_off_longest_ns: summary.longest_ns,
        timer_passes: summary.passes,
        chained_passes: summary.chained_passes,
        period_scalings: summary.period_scalings,
        events: 0,
    })
}

/// How far the CPU threads' interrupts-off windows are drawn for a run of
/// `duration`: a little past its end, for callers finishing their last
/// call.
fn replay_horizon_ns(duration: u64) -> u64 {
    duration + duration / 4 + 100_000_000
}

/// The shared state of one run.
struct Machine {
    windows: Vec<Vec<Window>>,
    /// Per CPU: the callers whose IPIs wait for it.
    inboxes: Vec<Mutex<Vec<u32>>>,
    /// Per CPU: bumped after each post; the CPU thread sleeps on it.
    doorbells: Vec<AtomicU32>,
    /// Per caller: handlers run for its current call.
    handled: Vec<AtomicU32>,
    /// Per CPU: held by the caller spinning on that CPU.
    run_tokens: Vec<Mutex<()>>,
    /// `[global, cpu 0, cpu 1, ...]` as the policy needs them.
    mutexes: Vec<Mutex<()>>,
    placement: Vec<(u32, u32)>,
    callers_stop: AtomicBool,
    cpus_stop: AtomicBool,
}

/// What the callers measured.
struct Outcome {
    calls: u64,
    latency: Histogram,
    mutex_wait_max_ns: u64,
    stalls: u64,
    stalled_callers: u32,
}

/// What one caller measured.
#[derive(Default)]
struct CallerTally {
    calls: u64,
    latency: Histogram,
    mutex_wait_max_ns: u64,
    stalls: u64,
}

impl Machine {
    fn new(config: &Config, windows: Vec<Vec<Window>>) -> Machine {
        let n = config.cpus as usize;
        let mutexes = match config.policy {
            Policy::Global => 1,
            Policy::PerCpu => 1 + n,
            Policy::None => 0,
        };
        Machine {
            windows,
            inboxes: (0..n).map(|_| Mutex::new(Vec::new())).collect(),
            doorbells: (0..n).map(|_| AtomicU32::new(0)).collect(),
            handled: (0..config.callers).map(|_| AtomicU32::new(0)).collect(),
            run_tokens: (0..n).map(|_| Mutex::new(())).collect(),
            mutexes: (0..mutexes).map(|_| Mutex::new(())).collect(),
            placement: config.placement(),
            callers_stop: AtomicBool::new(false),
            cpus_stop: AtomicBool::new(false),
        }
    }

    fn run(&self, config: &Config) -> Result<Outcome, spawn::Failure> {
        let threads = config.cpus + config.callers;
        let gate = Gate::new();
        // Everyone measures time from one epoch, taken once all threads exist.
        let epoch: OnceLock<Instant> = OnceLock::new();
        let tallies: Vec<CallerTally> = std::thread::scope(|s| {
            let (gate, epoch) = (&gate, &epoch);
            // However this closure ends (a spawn refused, a panic), every
            // thread started here must end before the scope can join it.
            let _stop_all = OnDrop(|| self.stop_all(gate));
            // In each thread: its panic stops the run at once. A CPU thread's
            // would leave callers waiting for its handlers; a caller's would
            // otherwise end the run only at the end of the simulated time
            // (the unwind releases its locks). `run` then passes it on.
            let stop_on_panic = move || {
                OnDrop(move || {
                    if std::thread::panicking() {
                        self.stop_all(gate);
                    }
                })
            };
            let mut started = 0;
            let mut cpu_threads = Vec::with_capacity(config.cpus as usize);
            for cpu in 0..config.cpus {
                cpu_threads.push(spawn::scoped(s, started, move || {
                    let _stop_on_panic = stop_on_panic();
                    if gate.arrive_and_wait() {
                        self.cpu_loop(cpu, *epoch.get().expect("set before the gate opens"));
                    }
                })?);
                started += 1;
            }
            let mut caller_threads = Vec::with_capacity(config.callers as usize);
            for caller in 0..config.callers {
                caller_threads.push(spawn::scoped(s, started, move || {
                    let _stop_on_panic = stop_on_panic();
                    if !gate.arrive_and_wait() {
                        return CallerTally::default();
                    }
                    let start = *epoch.get().expect("set before the gate opens");
                    self.caller_loop(config, caller, start)
                })?);
                started += 1;
            }
            gate.wait_for(threads);
            let start = *epoch.get_or_init(Instant::now);
            gate.open();
            sleep_until(start, config.sim_time_ns);
            // Relaxed: the flags only end loops; the joins below order the rest.
            self.callers_stop.store(true, Ordering::Relaxed);
            // Every caller is joined before the CPU threads stop (a caller
            // waits for a CPU thread's handler), and a panic is passed on
            // only then, from the spawning thread.
            let callers: Vec<_> = caller_threads.into_iter().map(|h| h.join()).collect();
            self.stop_cpu_threads();
            let cpus: Vec<_> = cpu_threads.into_iter().map(|h| h.join()).collect();
            if let Some(panicked) = cpus.into_iter().find_map(Result::err) {
                std::panic::resume_unwind(panicked);
            }
            Ok(callers
                .into_iter()
                .map(|r| r.unwrap_or_else(|panicked| std::panic::resume_unwind(panicked)))
                .collect())
        })?;
        let mut outcome = Outcome {
            calls: 0,
            latency: Histogram::new(),
            mutex_wait_max_ns: 0,
            stalls: 0,
            stalled_callers: 0,
        };
        for t in &tallies {
            outcome.calls += t.calls;
            outcome.latency.merge(&t.latency);
            outcome.mutex_wait_max_ns = outcome.mutex_wait_max_ns.max(t.mutex_wait_max_ns);
            outcome.stalls += t.stalls;
            outcome.stalled_callers += u32::from(t.stalls > 0);
        }
        Ok(outcome)
    }

    /// Ends the run early: the gate aborts (if it had not opened), callers
    /// and CPU threads stop, and every sleeper is woken to see it. What a
    /// run that ends this way measured is thrown away, so callers may give
    /// up a call midway (`wait_handled` returns once `cpus_stop` is set).
    fn stop_all(&self, gate: &Gate) {
        gate.abort();
        // Relaxed: see `run`.
        self.callers_stop.store(true, Ordering::Relaxed);
        self.cpus_stop.store(true, Ordering::Relaxed);
        for word in self.doorbells.iter().chain(&self.handled) {
            bump_and_ring(word);
        }
    }

    /// Stops the CPU threads once the callers are done (`run`'s normal end):
    /// sets `cpus_stop` and bumps every doorbell. A ring alone would be lost
    /// on a CPU thread that read its doorbell before the stop and had not
    /// yet gone to sleep on it: it would sleep out its 10 ms wait.
    fn stop_cpu_threads(&self) {
        // Relaxed: see `run`.
        self.cpus_stop.store(true, Ordering::Relaxed);
        for bell in &self.doorbells {
            bump_and_ring(bell);
        }
    }

    /// The window of `cpu` holding `now`, if any (`cursor` only moves forward).
    fn window_at(&self, cpu: u32, cursor: &mut usize, now: u64) -> Option<Window> {
        let windows = &self.windows[cpu as usize];
        while windows.get(*cursor).is_some_and(|w| w.end <= now) {
            *cursor += 1;
        }
        windows.get(*cursor).copied().filter(|w| w.start <= now)
    }

    /// Sleeps until `cpu`'s interrupts are on.
    fn wait_irq_on(&self, cpu: u32, cursor: &mut usize, start: Instant) {
        while let Some(w) = self.window_at(cpu, cursor, elapsed_ns(start)) {
            sleep_until(start, w.end);
        }
    }

    fn cpu_loop(&self, cpu: u32, start: Instant) {
        let mut cursor = 0;
        let inbox = &self.inboxes[cpu as usize];
        let doorbell = &self.doorbells[cpu as usize];
        let mut batch = Vec::new();
        loop {
            // Read the doorbell before the stop flag and the inbox: a post or
            // a stop after this read changes it, so the sleep below cannot
            // miss either. Acquire pairs with the Release increment in `post`
            // and `bump_and_ring`: a read that sees a stop's bump sees its
            // flag below.
            let rung = doorbell.load(Ordering::Acquire);
            // Relaxed: see `run`.
            if self.cpus_stop.load(Ordering::Relaxed) {
                break;
            }
            let now = elapsed_ns(start);
            if let Some(w) = self.window_at(cpu, &mut cursor, now) {
                // Interrupts off: the inbox waits.
                sleep_until(start, w.end);
                continue;
            }
            std::mem::swap(&mut batch, &mut *lock(inbox));
            for caller in batch.drain(..) {
                // ipi_rseq() would do smp_mb() and rseq_preempt(); here the
                // handler is just the sender's CSD unlock.
                let handled = &self.handled[caller as usize];
                // Release pairs with the Acquire load in `wait_handled`.
                handled.fetch_add(1, Ordering::Release);
                ring(handled);
            }
            let next_window = self.windows[cpu as usize]
                .get(cursor)
                .map_or(u64::MAX, |w| w.start);
            let until = next_window.min(elapsed_ns(start) + 10_000_000);
            wait_for_change(doorbell, rung, start, until);
        }
    }

    fn caller_loop(&self, config: &Config, caller: u32, start: Instant) -> CallerTally {
        let (home, target) = self.placement[caller as usize];
        let home_token = &self.run_tokens[home as usize];
        let mut home_cursor = 0;
        let mut tally = CallerTally::default();
        let mut calls_started = 0u32;
        let handled = &self.handled[caller as usize];
        // Relaxed: see `run`.
        while !self.callers_stop.load(Ordering::Relaxed) {
            calls_started = calls_started.wrapping_add(1);
            let broadcast =
                config.broadcast_every > 0 && calls_started.is_multiple_of(config.broadcast_every);
            let mut token = Some(lock(home_token));
            self.wait_irq_on(home, &mut home_cursor, start);
            let issued = elapsed_ns(start);
            let mutex = mutex_index(config.policy, broadcast, target).map(|i| &self.mutexes[i]);
            let guard: Option<MutexGuard<'_, ()>> = mutex.map(|m| match m.try_lock() {
                Ok(g) => g,
                Err(_) => {
                    // Sleep for the mutex without holding the CPU, then get
                    // the CPU back.
                    drop(token.take());
                    let g = lock(m);
                    token = Some(lock(home_token));
                    self.wait_irq_on(home, &mut home_cursor, start);
                    // Counted up to the end of the run at most, as the
                    // simulator counts a wait still going on then.
                    let waited = elapsed_ns(start)
                        .min(config.sim_time_ns)
                        .saturating_sub(issued);
                    tally.mutex_wait_max_ns = tally.mutex_wait_max_ns.max(waited);
                    g
                }
            });
            if self.callers_stop.load(Ordering::Relaxed) {
                // In flight at the end of the run: a stall if it had waited
                // past the watchdog by then, as the simulator counts it.
                if stalled_by_the_end(issued, elapsed_ns(start), config) {
                    tally.stalls += 1;
                }
                break;
            }
            // Only this caller resets its counter, and the inbox mutex
            // orders the reset before any handler's increment. An RMW, not a
            // store: a `stop_all` bump it replaces must still deliver the stop
            // flags (Acquire pairs with that bump's Release), or
            // `wait_handled` could read the 0 and sleep through the stop.
            handled.swap(0, Ordering::Acquire);
            if broadcast {
                let others: Vec<u32> = (0..config.cpus).filter(|&c| c != home).collect();
                for &cpu in &others {
                    self.post(cpu, caller);
                }
                wait_handled(handled, others.len() as u32, &self.cpus_stop);
            } else if target == home {
                // smp_call_function_single() on the calling CPU runs the
                // handler right here: nothing to wait for.
            } else {
                self.post(target, caller);
                wait_handled(handled, 1, &self.cpus_stop);
            }
            self.wait_irq_on(home, &mut home_cursor, start);
            let finished = elapsed_ns(start);
            drop(guard);
            drop(token);
            let latency = finished - issued;
            if stalled_by_the_end(issued, finished, config) {
                tally.stalls += 1;
            }
            if finished <= config.sim_time_ns {
                tally.calls += 1;
                tally.latency.record(latency);
            }
            if config.think_ns > 0 {
                std::thread::sleep(Duration::from_nanos(config.think_ns));
            }
        }
        tally
    }

    /// Queues `caller`'s IPI on `cpu` and rings its doorbell.
    fn post(&self, cpu: u32, caller: u32) {
        lock(&self.inboxes[cpu as usize]).push(caller);
        let doorbell = &self.doorbells[cpu as usize];
        // Release pairs with the Acquire load in `cpu_loop`.
        doorbell.fetch_add(1, Ordering::Release);
        ring(doorbell);
    }
}

/// Which of `Machine::mutexes` a call takes under `policy`, if any
/// (`SERIALIZE_IPI()` or `SERIALIZE_IPI_CPU()` in the kernel, `mutex_of` in
/// the simulator): per-CPU mutexes serialize targeted calls only, and leave
/// broadcasts on the global mutex, as the seed's series does.
fn mutex_index(policy: Policy, broadcast: bool, target: u32) -> Option<usize> {
    match policy {
        Policy::None => None,
        Policy::Global => Some(0),
        Policy::PerCpu if broadcast => Some(0),
        Policy::PerCpu => Some(1 + target as usize),
    }
}

/// Waits until `count` handlers have run for this call, or the CPU threads
/// stopped (only ever while callers run when a run is torn down: see
/// `Machine::stop_all`): spin, then sleep.
fn wait_handled(handled: &AtomicU32, count: u32, cpus_stop: &AtomicBool) {
    let mut spins = 0;
    loop {
        // Acquire pairs with the Release increment in `cpu_loop`.
        let seen = handled.load(Ordering::Acquire);
        // Relaxed: a stop flag; `stop_all` rings `handled` after setting it.
        if seen >= count || cpus_stop.load(Ordering::Relaxed) {
            return;
        }
        if spins < SPINS {
            spins += 1;
            std::hint::spin_loop();
        } else {
            sleep_while(handled, seen, None);
        }
    }
}

/// Locks `m`, shrugging off poisoning (a panicking thread fails the run anyway).
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Whether a call issued at `issued` and finished (or given up) at `finished`
/// counts as a stall: it waited past the watchdog within the run. A call in
/// flight at the end counts by how long it had waited by then, as in the
/// simulator (`engine.rs`, `complete` and `finish`).
fn stalled_by_the_end(issued: u64, finished: u64, config: &Config) -> bool {
    finished.min(config.sim_time_ns).saturating_sub(issued) > config.watchdog_ns
}

fn elapsed_ns(start: Instant) -> u64 {
    u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX)
}

fn sleep_until(start: Instant, at_ns: u64) {
    let now = elapsed_ns(start);
    if at_ns > now {
        std::thread::sleep(Duration::from_nanos(at_ns - now));
    }
}

/// Sleeps while `word` still reads `seen`, at most until `until_ns`.
fn wait_for_change(word: &AtomicU32, seen: u32, start: Instant, until_ns: u64) {
    let now = elapsed_ns(start);
    if until_ns <= now {
        return;
    }
    sleep_while(word, seen, Some(Duration::from_nanos(until_ns - now)));
}

/// One futex wait (`futex_word::wait`): returns when `word != value` may
/// hold, on a wake-up, or after `timeout`.
pub(crate) fn sleep_while(word: &AtomicU32, value: u32, timeout: Option<Duration>) {
    #[cfg(target_os = "linux")]
    futex_word::wait(word, value, timeout);
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (word, value);
        std::thread::sleep(timeout.map_or(Duration::from_micros(50), |d| {
            d.min(Duration::from_micros(50))
        }));
    }
}

/// Changes `word`, then wakes every thread sleeping on it: a thread about
/// to sleep on `word` then finds it changed instead of missing the
/// wake-up. Release pairs with the Acquire load in `wait_handled` and in
/// `cpu_loop`'s doorbell read: whoever sees the bump sees the stop flags
/// stored before it. `cpu_loop` reads its doorbell before its flag, so a
/// pass that missed the flag read the doorbell before the bump, and its
/// wait returns at once; but a CPU thread sleeping through an
/// interrupts-off window (a plain sleep, which no ring cuts short) sees the
/// stop only when that window ends.
fn bump_and_ring(word: &AtomicU32) {
    word.fetch_add(1, Ordering::Release);
    ring(word);
}

/// Wakes every thread sleeping on `word` (`futex_word::wake_all`).
pub(crate) fn ring(word: &AtomicU32) {
    #[cfg(target_os = "linux")]
    futex_word::wake_all(word);
    #[cfg(not(target_os = "linux"))]
    let _ = word;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::{NS_PER_S, Window};
    use crate::spawn::Injected;

    /// A thread the OS refuses, with CPU threads or callers already waiting
    /// at the start gate, ends the run with `Error::Spawn`; a panic in the
    /// spawning thread ends it with that panic. Before the abortable gate
    /// and the stop guard, both waited for ever (a `Barrier` sized for
    /// threads that never came); the deadline turns that into a failure.
    #[test]
    fn a_refused_thread_ends_the_run_instead_of_hanging() {
        // 2 CPU threads, then 4 callers: fail at the first, at a CPU thread,
        // and at a caller.
        for (fail_at, how) in [
            (0, Injected::Error),
            (1, Injected::Error),
            (4, Injected::Error),
            (1, Injected::Panic),
            (4, Injected::Panic),
        ] {
            test_support::within_a_deadline(
                "threaded::run with a refused thread",
                Duration::from_secs(20),
                move || {
                    let mut c = Config::selftest(2);
                    c.throttle = None;
                    c.callers = 4;
                    c.sim_time_ns = 30 * NS_PER_S;
                    spawn::fail_after(fail_at, how);
                    match how {
                        Injected::Error => {
                            let err = run(&c).unwrap_err();
                            assert!(
                                matches!(err, Error::Spawn { threads: 6, started, .. } if started == fail_at),
                                "{err}"
                            );
                            let text = err.to_string();
                            assert!(
                                text.contains(&format!("thread {} of 6", fail_at + 1)),
                                "{text}"
                            );
                            assert!(text.contains("pid_max"), "{text}");
                        }
                        Injected::Panic => {
                            let panicked = std::panic::catch_unwind(|| run(&c)).unwrap_err();
                            let message = panicked.downcast_ref::<String>().map_or("", |m| m);
                            assert!(message.contains("injected"), "{message}");
                        }
                    }
                },
            );
        }
    }

    /// A targeted call takes its target's mutex under the per-CPU policy,
    /// but a broadcast stays on the global one, as the seed's series leaves
    /// it (and as the simulator's `mutex_of` does).
    #[test]
    fn each_policy_takes_the_mutex_the_kernel_takes() {
        for target in [0, 3] {
            assert_eq!(mutex_index(Policy::None, false, target), None);
            assert_eq!(mutex_index(Policy::None, true, target), None);
            assert_eq!(mutex_index(Policy::Global, false, target), Some(0));
            assert_eq!(mutex_index(Policy::Global, true, target), Some(0));
            assert_eq!(
                mutex_index(Policy::PerCpu, false, target),
                Some(1 + target as usize)
            );
            assert_eq!(
                mutex_index(Policy::PerCpu, true, target),
                Some(0),
                "a broadcast under per-CPU mutexes takes the global mutex"
            );
        }
    }

    /// A CPU thread runs no IPI handler inside one of its interrupts-off
    /// windows: an IPI posted at its start is handled only once it ends.
    /// (A lower bound on when the handler ran, not a speed: `sleep` never
    /// returns early.)
    #[test]
    fn an_ipi_waits_for_the_end_of_the_targets_interrupts_off_window() {
        const WINDOW_END_NS: u64 = 50_000_000;
        test_support::within_a_deadline(
            "an IPI to a CPU with interrupts off",
            Duration::from_secs(20),
            || {
                let mut c = Config::selftest(2);
                c.throttle = None;
                c.callers = 1;
                let windows = vec![
                    Vec::new(),
                    vec![Window {
                        start: 0,
                        end: WINDOW_END_NS,
                    }],
                ];
                let machine = Machine::new(&c, windows);
                let start = Instant::now();
                let handled_at = std::thread::scope(|s| {
                    let cpu = s.spawn(|| machine.cpu_loop(1, start));
                    machine.post(1, 0);
                    wait_handled(&machine.handled[0], 1, &machine.cpus_stop);
                    let handled_at = elapsed_ns(start);
                    machine.stop_cpu_threads();
                    cpu.join().unwrap();
                    handled_at
                });
                assert!(
                    handled_at >= WINDOW_END_NS,
                    "the handler ran {handled_at} ns in, inside CPU 1's interrupts-off \
                     window [0, {WINDOW_END_NS}) ns"
                );
            },
        );
    }

    /// Stopping the CPU threads changes every doorbell, so a CPU thread
    /// that read its doorbell before the stop and sleeps on that value
    /// afterwards returns at once: here CPU 1's thread is held at its inbox
    /// lock (after its doorbell and flag reads) across the stop. Before
    /// 2026-12-07 `run` only rang, and such a thread slept out its 10 ms
    /// wait (which this test cannot time; the doorbells' values show it).
    #[test]
    fn stopping_the_cpu_threads_changes_every_doorbell() {
        test_support::within_a_deadline(
            "stopping the CPU threads",
            Duration::from_secs(20),
            || {
                let mut c = Config::selftest(2);
                c.throttle = None;
                c.callers = 1;
                let machine = Machine::new(&c, vec![Vec::new(), Vec::new()]);
                let start = Instant::now();
                std::thread::scope(|s| {
                    let held = lock(&machine.inboxes[1]);
                    let cpu = s.spawn(|| machine.cpu_loop(1, start));
                    std::thread::sleep(Duration::from_millis(20));
                    let before: Vec<u32> = machine
                        .doorbells
                        .iter()
                        .map(|b| b.load(Ordering::Relaxed))
                        .collect();
                    machine.stop_cpu_threads();
                    for (cpu, (bell, was)) in machine.doorbells.iter().zip(before).enumerate() {
                        assert_ne!(
                            bell.load(Ordering::Relaxed),
                            was,
                            "CPU {cpu}'s doorbell is unchanged by the stop: a thread about to \
                         sleep on it would miss the stop's wake-up"
                        );
                    }
                    drop(held);
                    cpu.join().unwrap();
                });
            },
        );
    }

    /// A broadcast interrupts every CPU but the caller's own and waits for
    /// all of them: with CPU 2's interrupts off for the first 200 ms, the
    /// first broadcast of a caller on CPU 1 waits past a 40 ms watchdog.
    /// (Posting the broadcast to the caller's own CPU instead of the others
    /// would let it return at once.) The window leaves the caller's thread
    /// 160 ms to post its first call: with 60 ms, a loaded machine that kept
    /// it off a CPU for 20 ms left its wait under the watchdog.
    #[test]
    fn a_broadcast_waits_for_every_other_cpu() {
        test_support::within_a_deadline(
            "a broadcast to a CPU with interrupts off",
            Duration::from_secs(20),
            || {
                let mut c = Config::selftest(3);
                c.throttle = None;
                c.callers = 1;
                c.broadcast_every = 1;
                c.sim_time_ns = 250_000_000;
                c.watchdog_ns = 40_000_000;
                assert_eq!(c.placement(), vec![(1, 0)]);
                let windows = vec![
                    Vec::new(),
                    Vec::new(),
                    vec![Window {
                        start: 0,
                        end: 200_000_000,
                    }],
                ];
                let outcome = Machine::new(&c, windows).run(&c).unwrap();
                assert!(outcome.stalls >= 1, "no broadcast waited for CPU 2");
                // It ended within the run, so its latency was recorded.
                assert!(
                    outcome.latency.max() > c.watchdog_ns,
                    "longest latency {} ns",
                    outcome.latency.max()
                );
            },
        );
    }

    /// A call still waiting for the global mutex when the run ends counts
    /// as a stall if it had waited past the watchdog by then, as the
    /// simulator counts it. CPU 0's interrupts stay off past the end, so
    /// caller 0 (on CPU 1, aiming at CPU 0) holds the mutex past it, and
    /// caller 1 (on CPU 2, aiming at CPU 1) waits for the mutex past it:
    /// one stall each, both callers stalled, and a mutex wait of most of
    /// the run. Caller 1's earlier calls (a round trip to CPU 1, whose
    /// interrupts are on) take far less than the 30 ms watchdog.
    #[test]
    fn a_call_waiting_for_the_mutex_at_the_end_is_a_stall() {
        const RUN_NS: u64 = 100_000_000;
        test_support::within_a_deadline(
            "a caller waiting for the mutex at the end",
            Duration::from_secs(20),
            || {
                let mut c = Config::selftest(3);
                c.throttle = None;
                c.callers = 2;
                c.policy = Policy::Global;
                c.sim_time_ns = RUN_NS;
                c.watchdog_ns = 30_000_000;
                assert_eq!(c.placement(), vec![(1, 0), (2, 1)]);
                let windows = vec![
                    vec![Window {
                        start: 0,
                        end: RUN_NS + RUN_NS / 2,
                    }],
                    Vec::new(),
                    Vec::new(),
                ];
                let outcome = Machine::new(&c, windows).run(&c).unwrap();
                // One stall each at the end. An earlier call of caller 1
                // stalls too only if the OS kept it off a CPU for the whole
                // watchdog, which an oversubscribed machine may: at most
                // three such in a 100 ms run.
                assert!(
                    (2..=5).contains(&outcome.stalls),
                    "{} stalls, not one per caller at the end (and at most three \
                     earlier ones from scheduling)",
                    outcome.stalls
                );
                assert_eq!(outcome.stalled_callers, 2);
                assert!(
                    outcome.mutex_wait_max_ns > c.watchdog_ns,
                    "caller 1 waited {} ns for the mutex",
                    outcome.mutex_wait_max_ns
                );
                // Its wait went on past the end (it got the mutex at 150
                // ms): counted up to the end, as the simulator counts it.
                assert!(
                    outcome.mutex_wait_max_ns <= RUN_NS,
                    "a mutex wait of {} ns counted in a run of {RUN_NS} ns",
                    outcome.mutex_wait_max_ns
                );
            },
        );
    }

    /// A caller runs on its home CPU, so it waits out that CPU's
    /// interrupts-off window before it issues a call and again before the
    /// call completes: `wait_irq_on` returns only once the window holding
    /// the present has ended. Emptied, callers would issue and complete
    /// calls inside their home CPU's windows. (A lower bound, not a speed:
    /// `sleep` never returns early.)
    #[test]
    fn a_caller_waits_out_its_home_cpus_interrupts_off_window() {
        const WINDOW_END_NS: u64 = 50_000_000;
        let mut c = Config::selftest(1);
        c.throttle = None;
        c.callers = 1;
        let windows = vec![vec![Window {
            start: 0,
            end: WINDOW_END_NS,
        }]];
        let machine = Machine::new(&c, windows);
        let start = Instant::now();
        let mut cursor = 0;
        machine.wait_irq_on(0, &mut cursor, start);
        let returned_at = elapsed_ns(start);
        assert!(
            returned_at >= WINDOW_END_NS,
            "returned {returned_at} ns in, inside CPU 0's interrupts-off window \
             [0, {WINDOW_END_NS}) ns"
        );
    }

    /// The CPU threads replay windows over the whole run and past its end.
    /// A horizon short of the end (the 100 ms margin subtracted instead of
    /// added: 150 ms for a 200 ms run, an overflow below 80 ms) would leave
    /// the run's tail without interrupts-off windows, so its late calls
    /// would never wait for one and the report would understate latency
    /// and stalls.
    #[test]
    fn windows_are_replayed_past_the_end_of_the_run() {
        for duration in [1, NS_PER_S / 5, NS_PER_S, crate::sim::MAX_SIM_TIME_NS] {
            let horizon = replay_horizon_ns(duration);
            assert!(
                horizon > duration,
                "windows until {horizon} ns for a run of {duration} ns"
            );
        }
    }

    #[test]
    fn stalls_are_counted_as_the_simulator_counts_them() {
        let mut c = Config::selftest(2);
        c.sim_time_ns = 1_000;
        c.watchdog_ns = 100;
        assert!(stalled_by_the_end(0, 200, &c), "finished in the run, late");
        assert!(
            !stalled_by_the_end(0, 50, &c),
            "finished in the run, in time"
        );
        // Exactly the watchdog is not past it (the simulator's `latency >
        // watchdog_ns`), at the end of the run or in it.
        assert!(
            !stalled_by_the_end(0, 100, &c),
            "waited exactly the watchdog"
        );
        assert!(!stalled_by_the_end(900, 5_000, &c));
        // Finished after the end, having waited only 50 ns by then.
        assert!(!stalled_by_the_end(950, 5_000, &c));
        // Still waiting at the end, for 150 ns by then.
        assert!(stalled_by_the_end(850, 5_000, &c));
    }
}
