//! The torture fault driver (`syncbench torture --faults`).
//!
//! One driver thread per run injects faults in a fixed cycle, each on threads
//! of its own (never on the driver, which must not register with the
//! primitive: an online qsbr registration waiting for writers would hold up
//! their grace periods itself):
//!
//! 1. **panic in read**: a thread panics inside a read section and catches it;
//!    the unwind must end the section, and the thread reads again;
//! 2. **death in read**: a thread panics inside a read section and dies of it
//!    (its thread-local registration is torn down during the unwind);
//! 3. **exit registered**: a thread registers (one read section) and exits;
//! 4. **churn**: [`CHURN_THREADS`] short-lived threads, [`CHURN_WAVE`] at a
//!    time, each registering with one read section and exiting;
//! 5. **stall**: a reader stays inside a section for 100-300 ms
//!    ([`fault::stall_length`]); the object it reached must still be live when
//!    it resumes (reclamation waited), or the run counts an error;
//! 6. **retire storm**: an extra thread replaces [`STORM_OBJECTS`] objects
//!    back to back (for at most [`STORM_TIME`]), piling work on reclamation;
//!    the ledger's high-water mark shows how much memory that holds back.
//!
//! After each fault the writers must complete [`progress_needed`] more
//! replacements within the run's stall limit: with every writer blocked
//! behind a section that the fault failed to end, they could not.

use super::Shared;
use super::object::TortureObject;
use crate::fault;
use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::sync::atomic::Ordering::Relaxed;
use std::thread::Scope;
use std::time::{Duration, Instant};

/// Short-lived threads per churn fault.
pub const CHURN_THREADS: u64 = 256;
/// Churn threads alive at once (each wave costs a round of scheduling on a
/// loaded machine, so waves are wide).
pub const CHURN_WAVE: u64 = 64;
/// Objects one retire storm replaces, at most.
pub const STORM_OBJECTS: u64 = 1024;
/// How long one retire storm lasts, at most (a primitive whose replacements
/// wait for slow grace periods would otherwise make storms last minutes).
pub const STORM_TIME: Duration = Duration::from_secs(2);
/// The pause between two faults.
const GAP: Duration = Duration::from_millis(5);
/// The top bits of storm objects' sequence numbers (writers use their index).
const STORM_TAG: u64 = 0xffff << 48;

/// A kind of fault.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    PanicInRead,
    DeathInRead,
    ExitRegistered,
    Churn,
    Stall,
    RetireStorm,
}

/// The order faults are injected in, over and over.
const CYCLE: [Kind; 6] = [
    Kind::PanicInRead,
    Kind::DeathInRead,
    Kind::ExitRegistered,
    Kind::Churn,
    Kind::Stall,
    Kind::RetireStorm,
];

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Kind::PanicInRead => "panic in read",
            Kind::DeathInRead => "death in read",
            Kind::ExitRegistered => "exit registered",
            Kind::Churn => "churn",
            Kind::Stall => "stall",
            Kind::RetireStorm => "retire storm",
        })
    }
}

/// Replacements the writers must complete after a fault: more than they can
/// do without any of them finishing a wait for readers (each writer waits at
/// least every third replacement).
fn progress_needed(writers: usize) -> u64 {
    4 * writers as u64 + 4
}

/// The driver: injects faults until the run stops.
pub(super) fn drive(shared: &Shared) {
    let mut n = 0u64;
    while !shared.stop.load(Relaxed) && step(shared, n) {
        n += 1;
        std::thread::sleep(GAP);
    }
}

/// Injects the `n`-th fault of the cycle and waits for the writers to make
/// progress after it. Returns false if the run stopped or failed meanwhile.
pub(super) fn step(shared: &Shared, n: u64) -> bool {
    let kind = CYCLE[(n % KINDS) as usize];
    std::thread::scope(|scope| inject(scope, shared, kind, n));
    shared.faults.heartbeat.fetch_add(1, Relaxed);
    writers_progress(shared, kind)
}

/// Faults in one cycle (one of each kind).
pub(super) const KINDS: u64 = CYCLE.len() as u64;

/// Waits until the writers completed [`progress_needed`] replacements, or
/// the run stopped; fails the run after the stall limit.
fn writers_progress(shared: &Shared, after: Kind) -> bool {
    let needed = progress_needed(shared.config.writers);
    let from = shared.replaced_total();
    let began = Instant::now();
    loop {
        let done = shared.replaced_total() - from;
        if done >= needed || shared.config.writers == 0 {
            return true;
        }
        if shared.stop.load(Relaxed) {
            return false;
        }
        if began.elapsed() >= shared.config.stall_limit {
            shared.fail(format!(
                "hang: writers completed {done} of {needed} replacements in {:.1} s after a {after} fault",
                began.elapsed().as_secs_f64()
            ));
            return false;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// One read section on this thread, counting an error if the object it
/// reached is not live.
fn read_once(shared: &Shared) {
    if !shared.primitive.read() {
        shared.error();
    }
}

fn inject<'scope>(scope: &'scope Scope<'scope, '_>, shared: &'scope Shared, kind: Kind, n: u64) {
    let faults = &shared.faults;
    match kind {
        Kind::PanicInRead => {
            let Ok(thread) = fault::spawn_fault_thread(scope, kind, || {
                let outcome = catch_unwind(AssertUnwindSafe(|| {
                    shared.primitive.read_with(&mut |object| {
                        if !object.is_live() {
                            shared.error();
                        }
                        fault::inject("panic inside a read section")
                    })
                }));
                match outcome {
                    Err(payload) if fault::is_injected(&*payload) => {}
                    Err(payload) => resume_unwind(payload),
                    Ok(()) => {
                        shared.fail("read_with returned although its section panicked".into())
                    }
                }
                // The unwind ended the section: this thread reads on.
                read_once(shared);
            })
            .map_err(|refused| shared.fail(refused.to_string())) else {
                return;
            };
            if fault::join_normal(kind, thread, |why| shared.fail(why)) {
                faults.panic_in_read.fetch_add(1, Relaxed);
            }
        }
        Kind::DeathInRead => {
            let Ok(thread) = fault::spawn_fault_thread(scope, kind, || {
                shared.primitive.read_with(&mut |object| {
                    if !object.is_live() {
                        shared.error();
                    }
                    fault::inject("thread dies inside a read section")
                });
            })
            .map_err(|refused| shared.fail(refused.to_string())) else {
                return;
            };
            match thread.join() {
                Err(payload) if fault::is_injected(&*payload) => {
                    faults.death_in_read.fetch_add(1, Relaxed);
                }
                Err(payload) => shared.fail(format!(
                    "a {kind} fault thread panicked: {}",
                    fault::describe(&*payload)
                )),
                Ok(()) => shared.fail("read_with returned although its section panicked".into()),
            }
        }
        Kind::ExitRegistered => {
            let Ok(thread) = fault::spawn_fault_thread(scope, kind, || read_once(shared))
                .map_err(|refused| shared.fail(refused.to_string()))
            else {
                return;
            };
            if fault::join_normal(kind, thread, |why| shared.fail(why)) {
                faults.exit_registered.fetch_add(1, Relaxed);
            }
        }
        Kind::Churn => {
            for _ in 0..CHURN_THREADS / CHURN_WAVE {
                if shared.stop.load(Relaxed) {
                    break;
                }
                // The first refusal ends the wave, and the driver: the
                // threads already started are joined by the scope.
                let wave: Result<Vec<_>, _> = (0..CHURN_WAVE)
                    .map(|_| fault::spawn_fault_thread(scope, kind, || read_once(shared)))
                    .collect();
                let Ok(wave) = wave.map_err(|refused| shared.fail(refused.to_string())) else {
                    return;
                };
                for thread in wave {
                    if fault::join_normal(kind, thread, |why| shared.fail(why)) {
                        faults.churn_threads.fetch_add(1, Relaxed);
                        faults.heartbeat.fetch_add(1, Relaxed);
                    }
                }
            }
        }
        Kind::Stall => {
            let length = fault::stall_length(n);
            let writers = shared.config.writers as u64;
            let Ok(thread) = fault::spawn_fault_thread(scope, kind, move || {
                shared.primitive.read_with(&mut |object| {
                    // One error at most for the one read, as `held_read`
                    // counts (until 2026-12-07 an object poisoned already
                    // counted twice, before the stall and after).
                    let mut sound = object.is_live();
                    let seq = object.seq();
                    let before = shared.replaced_total();
                    let began = Instant::now();
                    std::thread::sleep(length);
                    let stalled = began.elapsed();
                    // Reclamation must have waited for this section: the
                    // object is live and still the same one (a sleep that
                    // overran the quarantine could find a premature free's
                    // memory reused by a new object).
                    sound &= object.is_still(seq);
                    if !sound {
                        shared.error();
                    }
                    // More replacements than writers: at least one began
                    // after this section reached its object, and unpublished
                    // it.
                    if shared.replaced_total() > before + writers {
                        faults.stalls_unpublished.fetch_add(1, Relaxed);
                    }
                    faults
                        .stall_max_us
                        .fetch_max(stalled.as_micros() as u64, Relaxed);
                });
            })
            .map_err(|refused| shared.fail(refused.to_string())) else {
                return;
            };
            if fault::join_normal(kind, thread, |why| shared.fail(why)) {
                faults.stalls.fetch_add(1, Relaxed);
            }
        }
        Kind::RetireStorm => {
            let Ok(thread) = fault::spawn_fault_thread(scope, kind, move || {
                let began = Instant::now();
                let mut done = 0;
                for i in 0..STORM_OBJECTS {
                    if shared.stop.load(Relaxed) || began.elapsed() >= STORM_TIME {
                        break;
                    }
                    let seq = STORM_TAG | (n << 20) | i;
                    shared
                        .primitive
                        .replace(TortureObject::new(&shared.ledger, seq));
                    faults.heartbeat.fetch_add(1, Relaxed);
                    done += 1;
                }
                faults.storm_objects.fetch_add(done, Relaxed);
                done
            })
            .map_err(|refused| shared.fail(refused.to_string())) else {
                return;
            };
            match thread.join() {
                // A storm cut short by the end of the run still counts.
                Ok(done) => {
                    if done > 0 {
                        faults.retire_storms.fetch_add(1, Relaxed);
                    }
                }
                Err(payload) => shared.fail(format!(
                    "a {kind} fault thread panicked: {}",
                    fault::describe(&*payload)
                )),
            }
        }
    }
}
