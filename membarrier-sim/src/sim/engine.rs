//! The event loop: callers, their home CPUs, the serialization mutexes and
//! the IPIs, over the interrupts-off windows of [`Schedule`].
//!
//! Mirrors `membarrier_private_expedited()` with `SERIALIZE_IPI()` or
//! `SERIALIZE_IPI_CPU(cpu_id)` around `smp_call_function_single()` (and
//! `smp_call_function_many()` for broadcasts); see [`crate::sim`] for the model.
//!
//! # Events
//!
//! Only two kinds, keyed `time << 24 | id` in one [`EventQueue`] (ties go to
//! the smaller id, so the order is total and the run deterministic; the id is
//! the queue's slot):
//! - `CpuStep(h)` (`id = h`): home CPU `h` is free to run its next caller.
//! - `MutexRelease(m)` (`id = cpus + m`): the owner of mutex `m` has seen its
//!   call complete; the first waiter gets the mutex.
//!
//! A call is usually one event. When a caller takes a mutex its whole call is
//! already determined (the windows do not depend on the callers, and IPIs to
//! one target are handled in the order they are sent), so the completion time
//! is computed at once and stored as the mutex's `held_until`: a later caller
//! that arrives after it finds the mutex free without a release event having
//! run. Only a contended mutex schedules a release.
//!
//! # Invariants
//!
//! - A home CPU has at most one live `CpuStep` (`step_at`); older heap
//!   entries for it are stale and skipped.
//! - A mutex with waiters and a known `held_until` has its release scheduled
//!   (`release_at == held_until`). `held_until == NEVER` while the owner is a
//!   woken waiter that has not yet sent its IPI.
//! - `ipi_busy_until[c]` is when CPU `c` finishes the handlers queued so far;
//!   sends happen in time order, so arrivals reach each target in order.

use super::histogram::Histogram;
use super::queue::{EventQueue, ID_BITS, ID_MASK};
use super::throttle::Schedule;
use super::{Config, Policy, Report};
use std::collections::VecDeque;

/// No event scheduled / not known yet.
const NEVER: u64 = u64::MAX;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// Between calls: the next call starts when its home CPU runs it.
    Ready,
    /// Asleep in a mutex's wait queue.
    WaitingMutex,
    /// Handed the mutex while asleep; sends its IPI once its CPU runs it.
    HoldsMutex,
}

/// 32 bytes, aligned to 32: a caller is one random access per call among
/// thousands, so it takes half a cache line and never straddles two.
#[repr(align(32))]
#[derive(Clone, Copy)]
struct Caller {
    /// When the current (or last) call started on the home CPU.
    issued_at: u64,
    /// While `WaitingMutex`: when the caller asked for the mutex. From the
    /// hand-off on: when the woken waiter may run (never again read once
    /// it has run, so a caller never waited for reads 0 or a past time).
    wait_mark: u64,
    home: u32,
    target: u32,
    /// Calls this caller began. 32 bits, to keep the caller in 32 bytes: it
    /// wraps only past 2^32 calls of one caller (more than 4e9 simulated
    /// events, hours of CPU), and a wrap moves one broadcast by a call or
    /// two when `broadcast_every` does not divide 2^32.
    calls_started: u32,
    phase: Phase,
    /// Whether the current call is a broadcast.
    broadcast: bool,
    stalled: bool,
    /// Whether the last call completed after the end of the run.
    done_after_end: bool,
}

const _: () = assert!(std::mem::size_of::<Caller>() == 32);

struct HomeCpu {
    /// Callers ready to run, in arrival order.
    runq: VecDeque<u32>,
    /// Callers thinking between calls, with their wake-up times (in order,
    /// as the think time is fixed).
    sleepers: VecDeque<(u64, u32)>,
    /// The caller doing its exit work until the pending step.
    finishing: Option<u32>,
    step_at: u64,
}

struct SimMutex {
    held: bool,
    /// When the owner sees its call complete (NEVER: not known yet).
    held_until: u64,
    waiters: VecDeque<u32>,
    release_at: u64,
}

struct Engine<'a> {
    cfg: &'a Config,
    end: u64,
    queue: EventQueue,
    /// Events produced while handling the current one.
    pending: Vec<u64>,
    callers: Vec<Caller>,
    cpus: Vec<HomeCpu>,
    ipi_busy_until: Vec<u64>,
    mutexes: Vec<SimMutex>,
    schedule: Schedule,
    latency: Histogram,
    calls: u64,
    stalls: u64,
    mutex_wait_max: u64,
    events: u64,
    /// Whether a woken waiter on an idle CPU has its call settled at once
    /// (off only in tests, which check that it changes nothing).
    settle_early: bool,
}

pub(super) fn run(cfg: &Config) -> Report {
    let mut engine = Engine::new(cfg);
    engine.event_loop();
    engine.finish()
}

impl<'a> Engine<'a> {
    fn new(cfg: &'a Config) -> Engine<'a> {
        let n = cfg.cpus as usize;
        let mut cpus: Vec<HomeCpu> = (0..n)
            .map(|_| HomeCpu {
                runq: VecDeque::new(),
                sleepers: VecDeque::new(),
                finishing: None,
                step_at: NEVER,
            })
            .collect();
        let callers: Vec<Caller> = cfg
            .placement()
            .into_iter()
            .enumerate()
            .map(|(i, (home, target))| {
                cpus[home as usize].runq.push_back(i as u32);
                Caller {
                    issued_at: 0,
                    wait_mark: 0,
                    home,
                    target,
                    calls_started: 0,
                    phase: Phase::Ready,
                    broadcast: false,
                    stalled: false,
                    done_after_end: false,
                }
            })
            .collect();
        let mutex_count = match cfg.policy {
            Policy::Global => 1,
            Policy::PerCpu => 1 + n,
            Policy::None => 0,
        };
        let mut engine = Engine {
            cfg,
            end: cfg.sim_time_ns,
            queue: EventQueue::with_slots(n + mutex_count),
            pending: Vec::with_capacity(8),
            callers,
            cpus,
            ipi_busy_until: vec![0; n],
            mutexes: (0..mutex_count)
                .map(|_| SimMutex {
                    held: false,
                    held_until: 0,
                    waiters: VecDeque::new(),
                    release_at: NEVER,
                })
                .collect(),
            schedule: Schedule::new(
                cfg.cpus,
                cfg.throttle.as_ref(),
                cfg.costs.ipi_latency_ns,
                cfg.seed,
                cfg.sim_time_ns,
            ),
            latency: Histogram::new(),
            calls: 0,
            stalls: 0,
            mutex_wait_max: 0,
            events: 0,
            settle_early: true,
        };
        for h in 0..cfg.cpus {
            if !engine.cpus[h as usize].runq.is_empty() {
                engine.schedule_step(h, 0);
            }
        }
        for key in std::mem::take(&mut engine.pending) {
            engine.queue.push(key);
        }
        engine
    }

    #[inline]
    fn push(&mut self, t: u64, id: u64) {
        // Nothing after the end is ever handled.
        if t <= self.end {
            self.pending.push(t << ID_BITS | id);
        }
    }

    #[inline]
    fn schedule_step(&mut self, h: u32, t: u64) {
        let cpu = &mut self.cpus[h as usize];
        if t < cpu.step_at {
            cpu.step_at = t;
            self.push(t, u64::from(h));
        }
    }

    fn event_loop(&mut self) {
        let cpus = u64::from(self.cfg.cpus);
        while let Some(key) = self.queue.min() {
            let t = key >> ID_BITS;
            if t > self.end {
                break;
            }
            self.schedule.set_now(t);
            self.events += 1;
            let id = key & ID_MASK;
            if id < cpus {
                self.cpu_step(id as u32, t);
            } else {
                self.mutex_release((id - cpus) as usize, t);
            }
            // The handled event's slot takes the first new one (one sift
            // instead of a pop and a push).
            match self.pending.first() {
                None => self.queue.pop_min(),
                Some(&first) => {
                    self.queue.replace_min(first);
                    for i in 1..self.pending.len() {
                        self.queue.push(self.pending[i]);
                    }
                    self.pending.clear();
                }
            }
        }
    }

    fn cpu_step(&mut self, h: u32, t: u64) {
        let cpu = &mut self.cpus[h as usize];
        if cpu.step_at != t {
            return; // superseded by an earlier step
        }
        cpu.step_at = NEVER;
        let on = self.schedule.irq_on_at(h, t);
        if on > t {
            // The CPU is in an interrupts-off window: nothing runs until it ends.
            self.schedule_step(h, on);
            return;
        }
        let think = self.cfg.think_ns;
        let cpu = &mut self.cpus[h as usize];
        if let Some(done) = cpu.finishing.take() {
            if think == 0 {
                cpu.runq.push_back(done);
            } else {
                cpu.sleepers.push_back((t + think, done));
            }
        }
        while cpu.sleepers.front().is_some_and(|&(wake, _)| wake <= t) {
            let (_, c) = cpu.sleepers.pop_front().expect("checked non-empty");
            cpu.runq.push_back(c);
        }
        while let Some(c) = self.cpus[h as usize].runq.pop_front() {
            let ready_at = self.callers[c as usize].wait_mark;
            if ready_at > t {
                self.cpus[h as usize].runq.push_front(c);
                self.schedule_step(h, ready_at);
                return;
            }
            if self.run_caller(h, c, t) {
                return;
            }
        }
        if let Some(&(wake, _)) = self.cpus[h as usize].sleepers.front() {
            self.schedule_step(h, wake);
        }
    }

    /// The mutex a call of `c` needs, if any.
    #[inline]
    fn mutex_of(&self, c: &Caller) -> Option<usize> {
        match self.cfg.policy {
            Policy::None => None,
            Policy::Global => Some(0),
            Policy::PerCpu if c.broadcast => Some(0),
            Policy::PerCpu => Some(1 + c.target as usize),
        }
    }

    /// Home CPU `h` runs caller `c` at `t`. Returns whether `h` is now busy
    /// with it (false: `c` went to sleep on a mutex).
    fn run_caller(&mut self, h: u32, c: u32, t: u64) -> bool {
        let every = self.cfg.broadcast_every;
        let caller = &mut self.callers[c as usize];
        match caller.phase {
            Phase::Ready => {
                caller.calls_started = caller.calls_started.wrapping_add(1);
                caller.broadcast = every > 0 && caller.calls_started.is_multiple_of(every);
                caller.issued_at = t;
                let Some(m) = self.mutex_of(&self.callers[c as usize]) else {
                    let done = self.send(c, t);
                    self.complete(h, c, done);
                    return true;
                };
                let mutex = &mut self.mutexes[m];
                if !mutex.held || (mutex.held_until <= t && mutex.waiters.is_empty()) {
                    mutex.held = true;
                    let done = self.send(c, t);
                    self.mutexes[m].held_until = done;
                    self.complete(h, c, done);
                    true
                } else {
                    let caller = &mut self.callers[c as usize];
                    caller.phase = Phase::WaitingMutex;
                    caller.wait_mark = t;
                    mutex.waiters.push_back(c);
                    if mutex.release_at == NEVER && mutex.held_until != NEVER {
                        let at = mutex.held_until;
                        mutex.release_at = at;
                        self.push(at, u64::from(self.cfg.cpus) + m as u64);
                    }
                    false
                }
            }
            Phase::HoldsMutex => {
                let m = self
                    .mutex_of(&self.callers[c as usize])
                    .expect("a caller holding a mutex has a policy with mutexes");
                let done = self.send(c, t);
                let mutex = &mut self.mutexes[m];
                mutex.held_until = done;
                if !mutex.waiters.is_empty() && mutex.release_at == NEVER {
                    mutex.release_at = done;
                    self.push(done, u64::from(self.cfg.cpus) + m as u64);
                }
                self.complete(h, c, done);
                true
            }
            Phase::WaitingMutex => unreachable!("a sleeping waiter is on no run queue"),
        }
    }

    /// Caller `c` sends its IPI(s) at `t`; returns when it sees completion.
    fn send(&mut self, c: u32, t: u64) -> u64 {
        let caller = &self.callers[c as usize];
        let (home, target, broadcast) = (caller.home, caller.target, caller.broadcast);
        let costs = &self.cfg.costs;
        let arrival = t + costs.ipi_latency_ns;
        if broadcast {
            // smp_call_function_many(): every other CPU, wait for all.
            let mut done = t;
            for cpu in 0..self.cfg.cpus {
                if cpu != home {
                    done = done.max(self.deliver(cpu, arrival));
                }
            }
            self.schedule.irq_on_at(home, done)
        } else if target == home {
            // smp_call_function_single() on the calling CPU runs the
            // function right there.
            t + costs.ipi_handler_ns
        } else {
            let handled = self.deliver(target, arrival);
            self.schedule.irq_on_at(home, handled)
        }
    }

    /// An IPI reaches `cpu` at `arrival`; returns when its handler is done.
    #[inline]
    fn deliver(&mut self, cpu: u32, arrival: u64) -> u64 {
        let start = self
            .schedule
            .irq_on_at(cpu, arrival)
            .max(self.ipi_busy_until[cpu as usize]);
        let done = start + self.cfg.costs.ipi_handler_ns;
        self.ipi_busy_until[cpu as usize] = done;
        done
    }

    /// Caller `c` on `h` sees its call complete at `done`.
    fn complete(&mut self, h: u32, c: u32, done: u64) {
        let caller = &mut self.callers[c as usize];
        caller.phase = Phase::Ready;
        caller.done_after_end = done > self.end;
        if done <= self.end {
            let latency = done - caller.issued_at;
            self.latency.record(latency);
            self.calls += 1;
            if latency > self.cfg.watchdog_ns {
                self.stalls += 1;
                caller.stalled = true;
            }
        }
        self.cpus[h as usize].finishing = Some(c);
        let next = self.schedule.advance(h, done, self.cfg.costs.syscall_ns);
        self.schedule_step(h, next);
    }

    fn mutex_release(&mut self, m: usize, t: u64) {
        let mutex = &mut self.mutexes[m];
        debug_assert_eq!(mutex.release_at, t);
        mutex.release_at = NEVER;
        let Some(w) = mutex.waiters.pop_front() else {
            mutex.held = false;
            return;
        };
        mutex.held_until = NEVER;
        let ready = t + self.cfg.costs.mutex_handoff_ns;
        let waiter = &mut self.callers[w as usize];
        self.mutex_wait_max = self.mutex_wait_max.max(ready - waiter.wait_mark);
        waiter.phase = Phase::HoldsMutex;
        let home = waiter.home;
        // The waiter runs once awake and its CPU's interrupts are on.
        let ready = self.schedule.irq_on_at(home, ready);
        self.callers[w as usize].wait_mark = ready;
        let cpu = &mut self.cpus[home as usize];
        // Settling early sends the waiter's IPIs at `ready`, before events
        // still due until then: only safe where no one else may send to its
        // targets meanwhile. Under per-CPU mutexes a broadcast (global
        // mutex) and a targeted call (its CPU's mutex) run side by side.
        let sole_sender = self.cfg.policy != Policy::PerCpu || self.cfg.broadcast_every == 0;
        if self.settle_early
            && sole_sender
            && cpu.finishing.is_none()
            && cpu.runq.is_empty()
            && cpu.step_at == NEVER
        {
            // Its CPU is idle with nothing else due: it runs the waiter at
            // `ready` for sure, so the call can be settled now, saving a
            // wake-up event. (Sends to one target still reach it in send
            // order: only this waiter may send to its target until its
            // call completes; see `sole_sender`.)
            let ran = self.run_caller(home, w, ready);
            debug_assert!(ran, "a caller holding its mutex never blocks");
        } else {
            cpu.runq.push_back(w);
            if cpu.finishing.is_none() {
                self.schedule_step(home, ready);
            }
        }
    }

    fn finish(mut self) -> Report {
        let windows = self.schedule.summary();
        let end = self.end;
        let watchdog = self.cfg.watchdog_ns;
        for caller in &mut self.callers {
            let in_flight = caller.phase != Phase::Ready || caller.done_after_end;
            if caller.phase == Phase::WaitingMutex {
                self.mutex_wait_max = self.mutex_wait_max.max(end - caller.wait_mark);
            }
            if in_flight && end - caller.issued_at > watchdog {
                self.stalls += 1;
                caller.stalled = true;
            }
        }
        Report {
            cpus: self.cfg.cpus,
            callers: self.cfg.callers,
            policy: self.cfg.policy,
            seed: self.cfg.seed,
            time_ns: end,
            calls: self.calls,
            mutex_wait_max_ns: self.mutex_wait_max,
            stalls: self.stalls,
            stalled_callers: self.callers.iter().filter(|c| c.stalled).count() as u32,
            watchdog_ns: watchdog,
            irq_off_fraction: windows.irq_off_fraction,
            irq_off_longest_ns: windows.longest_ns,
            timer_passes: windows.passes,
            chained_passes: windows.chained_passes,
            period_scalings: windows.period_scalings,
            events: self.events,
            latency: self.latency,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::{NS_PER_S, Throttle};

    fn run_with(cfg: &Config, settle_early: bool) -> Report {
        cfg.validate().unwrap();
        let mut engine = Engine::new(cfg);
        engine.settle_early = settle_early;
        engine.event_loop();
        engine.finish()
    }

    /// Settling a woken waiter's call at once is only a saving of events:
    /// the report must be the one the step at `ready` would give.
    #[test]
    #[cfg_attr(miri, ignore = "simulates many calls")]
    fn settling_a_woken_waiter_early_changes_no_result() {
        for (policy, broadcast_every, think_ns, cpus, seed) in [
            (Policy::Global, 0, 0, 8, 1),
            (Policy::Global, 4, 0, 8, 1),
            (Policy::Global, 3, 20_000, 4, 2),
            (Policy::PerCpu, 0, 0, 8, 1),
            (Policy::PerCpu, 0, 20_000, 4, 2),
            (Policy::PerCpu, 4, 0, 8, 1),
            (Policy::PerCpu, 3, 20_000, 4, 3),
        ] {
            let mut c = Config::selftest(cpus);
            c.policy = policy;
            c.callers = 4 * cpus;
            c.sim_time_ns = NS_PER_S / 5;
            c.broadcast_every = broadcast_every;
            c.think_ns = think_ns;
            c.seed = seed;
            c.throttle = Some(Throttle::selftest());
            let early = run_with(&c, true);
            let late = run_with(&c, false);
            assert_eq!(
                (
                    early.to_string(),
                    early.calls,
                    early.stalls,
                    early.mutex_wait_max_ns
                ),
                (
                    late.to_string(),
                    late.calls,
                    late.stalls,
                    late.mutex_wait_max_ns
                ),
                "{policy}, broadcast every {broadcast_every}"
            );
        }
    }

    /// A short run without interrupts-off windows, where every figure can be
    /// worked out by hand.
    fn quiet(cpus: u32, callers: u32, policy: Policy) -> Config {
        let mut c = Config::selftest(cpus);
        c.callers = callers;
        c.policy = policy;
        c.throttle = None;
        c.sim_time_ns = NS_PER_S / 1_000;
        c
    }

    /// The run covers its last instant: a call that completes exactly at
    /// the end is counted. With a free handler each call completes where it
    /// starts, every `syscall_ns`, so 0, 100, ..., 1000 ns give 11 calls.
    #[test]
    fn a_call_that_completes_at_the_last_instant_of_the_run_counts() {
        let mut c = quiet(1, 1, Policy::None);
        c.sim_time_ns = 1_000;
        c.costs.ipi_handler_ns = 0;
        c.costs.syscall_ns = 100;
        let r = run_with(&c, true);
        assert_eq!(r.calls, 11, "{r}");
        assert_eq!(r.latency.max(), 0, "{r}");
    }

    /// A CPU whose step falls inside one of its interrupts-off windows runs
    /// nobody: it tries again when the window ends, and its caller has not
    /// started a call.
    #[test]
    fn a_cpu_inside_an_interrupts_off_window_runs_no_caller_until_it_ends() {
        let mut c = Config::selftest(2);
        c.callers = 2;
        c.policy = Policy::None;
        c.sim_time_ns = NS_PER_S / 10;
        let mut e = Engine::new(&c);
        let w = e.schedule.windows_until(1, c.sim_time_ns)[0];
        assert!(w.end - w.start > 1, "{w:?}");
        let t = w.start + 1;
        let on = e.schedule.irq_on_at(1, t);
        assert!(on >= w.end, "{w:?} {on}");
        // Caller 0 lives on CPU 1 (see `Config::placement`).
        assert_eq!(e.callers[0].home, 1);
        e.cpus[1].step_at = t;
        e.cpu_step(1, t);
        assert_eq!(e.callers[0].calls_started, 0);
        assert_eq!(e.cpus[1].runq.front(), Some(&0));
        assert_eq!(e.cpus[1].step_at, on);
    }

    /// Each policy's mutex for a call: per-cpu gives every target CPU a
    /// mutex of its own, none of them the one all broadcasts share; global
    /// puts every call on that one; none takes no mutex.
    #[test]
    fn per_cpu_targets_get_mutexes_of_their_own_and_broadcasts_share_one() {
        // The mutexes of caller i's call, targeted and broadcast, i = 0..4.
        let mutexes = |policy| {
            let c = quiet(4, 4, policy);
            let e = Engine::new(&c);
            assert_eq!(
                e.callers.iter().map(|c| c.target).collect::<Vec<_>>(),
                [0, 1, 2, 3]
            );
            let of = |i: usize, broadcast| {
                let caller = Caller {
                    broadcast,
                    ..e.callers[i]
                };
                let m = e.mutex_of(&caller);
                assert!(m.is_none_or(|m| m < e.mutexes.len()), "{m:?}");
                m
            };
            let targeted: Vec<_> = (0..4).map(|i| of(i, false)).collect();
            let broadcast: Vec<_> = (0..4).map(|i| of(i, true)).collect();
            (targeted, broadcast)
        };
        let (targeted, broadcast) = mutexes(Policy::PerCpu);
        assert!(
            broadcast.iter().all(|&m| m == broadcast[0]),
            "{broadcast:?}"
        );
        let mut distinct = targeted.clone();
        distinct.push(broadcast[0]);
        distinct.sort_unstable();
        distinct.dedup();
        assert_eq!(distinct.len(), 5, "{targeted:?} {broadcast:?}");
        assert_eq!(
            mutexes(Policy::Global),
            (vec![Some(0); 4], vec![Some(0); 4])
        );
        assert_eq!(mutexes(Policy::None), (vec![None; 4], vec![None; 4]));
    }

    /// Every `broadcast_every`-th call of a caller is a broadcast, the
    /// others are targeted. One caller on CPU 1 aimed at itself runs its
    /// targeted calls locally (0.5 us) and sends its broadcasts to CPU 0
    /// (1.5 us): replaying that by hand gives the count and mean.
    #[test]
    fn every_nth_call_is_a_broadcast_and_the_others_are_targeted() {
        let mut c = quiet(2, 1, Policy::Global);
        c.targets = Some(vec![1]);
        c.broadcast_every = 3;
        assert_eq!(c.placement(), [(1, 1)]);
        let k = &c.costs;
        let (local, remote) = (k.ipi_handler_ns, k.ipi_latency_ns + k.ipi_handler_ns);
        let (mut t, mut calls, mut broadcasts) = (0, 0, 0);
        for n in 1.. {
            let latency = if n % 3 == 0 { remote } else { local };
            if t + latency > c.sim_time_ns {
                break;
            }
            calls += 1;
            broadcasts += u64::from(n % 3 == 0);
            t += latency + k.syscall_ns;
        }
        assert!(broadcasts > 100, "{broadcasts}");
        let r = run_with(&c, true);
        assert_eq!(r.calls, calls, "{r}");
        assert_eq!(r.latency.max(), remote, "{r}");
        let mean = (broadcasts * remote + (calls - broadcasts) * local) as f64 / calls as f64;
        assert_eq!(r.latency.mean(), mean, "{r}");
    }

    /// On two CPUs a broadcast reaches the one other CPU, as a call aimed
    /// at it does, and takes the global mutex under either policy: with
    /// interrupts-off windows in play, a run of broadcasts only (global or
    /// per-cpu) reports what the run of calls aimed at the other CPU under
    /// the global mutex reports.
    #[test]
    #[cfg_attr(miri, ignore = "simulates many calls")]
    fn on_two_cpus_a_broadcast_is_a_call_to_the_other_cpu_on_the_global_mutex() {
        let mut c = Config::selftest(2);
        c.callers = 2;
        c.sim_time_ns = NS_PER_S / 5;
        assert_eq!(c.placement(), [(1, 0), (0, 1)]);
        // The report without its first line, which names the policy.
        let figures = |r: &Report| {
            let text = r.to_string();
            let body = text.split_once('\n').unwrap().1.to_owned();
            (body, r.calls, r.stalls, r.mutex_wait_max_ns)
        };
        let targeted = figures(&run_with(&c, true));
        assert!(targeted.3 > 0, "{}", targeted.0);
        c.broadcast_every = 1;
        for policy in [Policy::Global, Policy::PerCpu] {
            c.policy = policy;
            assert_eq!(figures(&run_with(&c, true)), targeted, "{policy}");
        }
    }

    /// Two callers on two CPUs, each aimed at the other's CPU, take turns
    /// on the global mutex in lock step: each call waits for the other's
    /// IPI round trip plus the hand-off (2.5 us) and then makes its own, so
    /// after the first every call takes 4 us and the mutex passes every
    /// 2.5 us (completions at 1.5, 4, 6.5, ... us: 400 in 1 ms).
    #[test]
    fn two_callers_on_the_global_mutex_alternate_in_lock_step() {
        let c = quiet(2, 2, Policy::Global);
        assert_eq!(c.placement(), [(1, 0), (0, 1)]);
        let k = &c.costs;
        let round_trip = k.ipi_latency_ns + k.ipi_handler_ns;
        let wait = round_trip + k.mutex_handoff_ns;
        for settle_early in [true, false] {
            let r = run_with(&c, settle_early);
            assert_eq!(r.mutex_wait_max_ns, wait, "{r}");
            assert_eq!(r.latency.max(), wait + round_trip, "{r}");
            assert_eq!(r.calls, (c.sim_time_ns - round_trip) / wait + 1, "{r}");
            assert_eq!(r.calls, 400, "{r}");
            assert_eq!(r.stalls, 0, "{r}");
        }
        // A stall is a call that waited longer than the watchdog: none at
        // exactly 4 us, all 399 after the first at 1 ns less. (At the end
        // one caller has waited 2.5 us for its call, the other not at all.)
        let mut c = c.clone();
        for (watchdog, stalls, stalled_callers) in [(4_000, 0, 0), (3_999, 399, 2)] {
            c.watchdog_ns = watchdog;
            let r = run_with(&c, true);
            assert_eq!(
                (r.stalls, r.stalled_callers),
                (stalls, stalled_callers),
                "{r}"
            );
        }
    }

    /// Two callers on two CPUs, each aimed at the other's CPU, on the
    /// global mutex, with IPIs slow enough (0.4 ms) that the end of the
    /// run catches calls in flight. The first call (CPU 0's caller) ends at
    /// 400.5 us; the second, which waited from 0, at 802 us; CPU 0's
    /// caller calls again at 401.5 us, gets the mutex at 803 us and ends at
    /// 1203.5 us; CPU 1's caller calls again at 803 us and waits.
    fn slow_ipis(sim_time_ns: u64, watchdog_ns: u64) -> Config {
        let mut c = quiet(2, 2, Policy::Global);
        c.costs.ipi_latency_ns = 400_000;
        c.sim_time_ns = sim_time_ns;
        c.watchdog_ns = watchdog_ns;
        c
    }

    /// At the end a call still in flight (waiting for the mutex, or
    /// settled but completing after the end) is a stall if it has already
    /// waited longer than the watchdog; a call that completed, even at the
    /// last instant, is judged once, by its latency.
    #[test]
    fn calls_in_flight_at_the_end_are_stalls_once_they_waited_past_the_watchdog() {
        // (end, watchdog, calls, stalls, stalled callers)
        for (end, watchdog, calls, stalls, stalled) in [
            // Both completed calls stalled; at 1 ms CPU 0's caller has
            // been in its call 598.5 us (a stall), CPU 1's 197 us (not).
            (1_000_000, 300_000, 2, 3, 2),
            // At exactly 598.5 us it has not waited longer: only the
            // 802 us call stalled.
            (1_000_000, 598_500, 2, 1, 1),
            // At 802 us the second call completes at the last instant: it
            // is a stall, once; CPU 0's caller, in its call since 401.5 us
            // (400.5 us), is another.
            (802_000, 300_000, 2, 3, 2),
        ] {
            let r = run_with(&slow_ipis(end, watchdog), true);
            assert_eq!(
                (r.calls, r.stalls, r.stalled_callers),
                (calls, stalls, stalled),
                "end {end} watchdog {watchdog}\n{r}"
            );
            // Every wait was the other's call plus the hand-off.
            assert_eq!(r.mutex_wait_max_ns, 401_500, "{r}");
        }
    }

    /// A caller still asleep on the mutex at the end counts the wait so
    /// far in the longest mutex wait. Three callers on three CPUs: the
    /// first call holds the global mutex until 400.5 us, the second until
    /// 802 us; the third caller, queued since 0, still waits at 801.999 us.
    #[test]
    fn a_caller_still_waiting_for_the_mutex_at_the_end_counts_its_wait_so_far() {
        let mut c = slow_ipis(801_999, 300_000);
        c.cpus = 3;
        c.callers = 3;
        let r = run_with(&c, true);
        assert_eq!(r.calls, 1, "{r}");
        assert_eq!(r.mutex_wait_max_ns, 801_999, "{r}");
    }
}
