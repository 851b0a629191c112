//! `refscale`: the cost of one read-side critical section, in ns per operation.
//!
//! Mirrors `kernel/rcu/refscale.c`: every reader thread runs a fixed number of
//! read-side sections back to back; a run's figure is the mean over readers of
//! (reader time / sections); several runs give a median. Each contender writes
//! its own tight loop ([`ReadSide::read_sections`]) so that no dynamic dispatch
//! sits inside the timed region, as refscale's `readsection()` hooks do.

mod hazptr;
mod liburcu;
mod peers;
mod qrwlock;
mod rcu_lite;

use crate::progress::Progress;
use crate::registry::Implementation;
use crate::start_gate::{StartGate, ThreadRefused, spawn_scoped};
use crate::stats;
use serde::{Deserialize, Serialize};
use std::io::Write;
use std::time::{Duration, Instant};

/// A read-side primitive measured by `refscale`.
pub trait ReadSide: Send + Sync {
    /// Runs `iterations` read-side critical sections on the calling thread and
    /// returns how long the sections took. Per-thread set-up (registration, a
    /// hazard-pointer slot) happens before the clock starts. Each section must
    /// enter, read the protected value through [`std::hint::black_box`], and exit.
    fn read_sections(&self, iterations: u64) -> Duration;
}

/// Times `iterations` calls of `section`: the loop every [`ReadSide`] uses.
#[inline(always)]
pub fn time_sections(iterations: u64, mut section: impl FnMut()) -> Duration {
    let start = Instant::now();
    for _ in 0..iterations {
        section();
    }
    start.elapsed()
}

/// Every read-side contender, ours and peers.
pub fn implementations() -> &'static [Implementation<dyn ReadSide>] {
    IMPLEMENTATIONS
}

/// The registry: this workspace's implementations first, then the peers.
static IMPLEMENTATIONS: &[Implementation<dyn ReadSide>] = &[
    hazptr::HAZPTR,
    rcu_lite::RCU_LITE_MEMB,
    rcu_lite::RCU_LITE_QSBR,
    qrwlock::QRWLOCK_READ,
    peers::CROSSBEAM_EPOCH,
    peers::HAPHAZARD,
    peers::SEIZE,
    peers::ARC_SWAP,
    peers::SEQLOCK,
    peers::PARKING_LOT_READ,
    peers::STD_READ,
    liburcu::LIBURCU_MEMB,
    liburcu::LIBURCU_QSBR,
];

/// How to run refscale.
#[derive(Clone, Copy, Debug)]
pub struct Config {
    /// Reader threads.
    pub threads: usize,
    /// Read-side sections per reader per run.
    pub iterations: u64,
    /// Timed runs (a warm-up run of a tenth of the iterations comes first).
    pub runs: usize,
}

/// The outcome for one implementation.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Outcome {
    /// Implementation name.
    #[serde(rename = "impl")]
    pub name: String,
    /// Reader threads.
    pub threads: usize,
    /// Median over runs, ns per read-side section.
    pub ns_per_op: f64,
    /// Sections per reader per run.
    pub iterations: u64,
    /// Each run's ns per section.
    pub runs_ns: Vec<f64>,
}

/// Runs one timed pass: every reader starts together and runs `iterations`
/// sections; returns the mean ns per section over readers. A reader the OS
/// refuses calls the pass off (the readers already started return without
/// timing) and is named in the error.
fn one_run(
    imp: &dyn ReadSide,
    name: &str,
    threads: usize,
    iterations: u64,
) -> Result<f64, ThreadRefused> {
    let start = StartGate::new(threads);
    let per_thread: Vec<Duration> = std::thread::scope(|s| {
        let mut handles = Vec::with_capacity(threads);
        for i in 0..threads {
            let what = || format!("reader thread {} of {threads} for {name}", i + 1);
            let reader = spawn_scoped(s, "refscale reader", what, || {
                let _cancel = start.cancel_on_panic();
                // Let every reader do its set-up before any starts timing.
                imp.read_sections(1);
                start.wait().then(|| imp.read_sections(iterations))
            });
            match reader {
                Ok(reader) => handles.push(reader),
                Err(refused) => {
                    start.cancel();
                    return Err(refused);
                }
            }
        }
        // A reader's panic first: one that panicked in its set-up cancelled
        // the gate, and the others came back without timing anything.
        let joined: Vec<_> = handles.into_iter().map(|h| h.join()).collect();
        let mut timed = Vec::with_capacity(threads);
        for reader in joined {
            match reader {
                Ok(time) => timed.push(time),
                Err(panic) => std::panic::resume_unwind(panic),
            }
        }
        Ok(timed
            .into_iter()
            .map(|time| time.expect("no reader panicked, so the gate opened"))
            .collect())
    })?;
    let ns: Vec<f64> = per_thread
        .iter()
        .map(|d| d.as_nanos() as f64 / iterations as f64)
        .collect();
    Ok(stats::mean(&ns))
}

/// Measures every implementation in `chosen`, taking turns: each does its
/// warm-up run, then the first timed run of each, the second of each, and so
/// on, the order rotated by one from run to run ([`crate::turns::in_turns`]).
/// A slow stretch of the machine (a host hiccup, another process) then lands
/// on one run of several contenders, which their medians discard, rather
/// than on every run of whichever contender ran then, and no contender
/// always runs first (given as many runs as contenders; each still follows
/// the same one in every run but the one it starts). A reader thread the OS refuses
/// ends the runs with the error, naming it.
pub fn measure_all(
    chosen: &[&Implementation<dyn ReadSide>],
    config: Config,
) -> Result<Vec<Outcome>, ThreadRefused> {
    let mut progress = Progress::new((chosen.len() * config.runs) as u64, "refscale");
    measure_in_turns(chosen, config, &mut progress)
}

/// [`measure_all`], advancing `progress` by one per timed run.
pub fn measure_in_turns(
    chosen: &[&Implementation<dyn ReadSide>],
    config: Config,
    progress: &mut Progress,
) -> Result<Vec<Outcome>, ThreadRefused> {
    let instances: Vec<_> = chosen.iter().map(|imp| imp.build(&())).collect();
    for (imp, instance) in chosen.iter().zip(&instances) {
        progress.set_label(imp.name);
        one_run(
            &**instance,
            imp.name,
            config.threads,
            (config.iterations / 10).max(1),
        )?;
    }
    // In turns, the order rotated from run to run, so that no contender
    // always runs first.
    let runs_ns = crate::turns::try_in_turns(chosen.len(), config.runs, |i| {
        progress.set_label(chosen[i].name);
        let ns = one_run(
            &*instances[i],
            chosen[i].name,
            config.threads,
            config.iterations,
        )?;
        progress.inc(1);
        Ok(ns)
    })?;
    Ok(chosen
        .iter()
        .zip(runs_ns)
        .map(|(imp, runs_ns)| Outcome {
            name: imp.name.to_owned(),
            threads: config.threads,
            ns_per_op: stats::median(&runs_ns),
            iterations: config.iterations,
            runs_ns,
        })
        .collect())
}

/// Writes the kernel-style text output: a header per implementation, then
/// `Runs\tTime(ns)` lines and the median.
pub fn write_text(out: &mut impl Write, outcomes: &[Outcome]) -> std::io::Result<()> {
    for o in outcomes {
        writeln!(
            out,
            "refscale: {} threads={} iterations={}",
            o.name, o.threads, o.iterations
        )?;
        writeln!(out, "Runs\tTime(ns)")?;
        for (i, ns) in o.runs_ns.iter().enumerate() {
            writeln!(out, "{}\t{:.3}", i + 1, ns)?;
        }
        writeln!(out, "median\t{:.3}", o.ns_per_op)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::Origin;
    use std::sync::Mutex;

    /// Which contender ran each timed run, in order.
    static TIMED: Mutex<Vec<&'static str>> = Mutex::new(Vec::new());

    const TIMED_ITERATIONS: u64 = 100;

    struct Recorder(&'static str);

    impl ReadSide for Recorder {
        fn read_sections(&self, iterations: u64) -> Duration {
            if iterations == TIMED_ITERATIONS {
                TIMED.lock().unwrap().push(self.0);
            }
            time_sections(iterations, || {
                std::hint::black_box(self.0);
            })
        }
    }

    const A: Implementation<dyn ReadSide> = Implementation {
        name: "a",
        summary: "records its runs",
        origin: Origin::Workspace,
        make: |_| Ok(Box::new(Recorder("a"))),
    };
    const B: Implementation<dyn ReadSide> = Implementation {
        name: "b",
        summary: "records its runs",
        origin: Origin::Peer,
        make: |_| Ok(Box::new(Recorder("b"))),
    };

    #[test]
    fn contenders_take_turns_run_by_run() {
        let config = Config {
            threads: 1,
            iterations: TIMED_ITERATIONS,
            runs: 3,
        };
        let outcomes = measure_all(&[&A, &B], config).unwrap();
        assert_eq!(*TIMED.lock().unwrap(), ["a", "b", "b", "a", "a", "b"]);
        let names: Vec<_> = outcomes.iter().map(|o| o.name.as_str()).collect();
        assert_eq!(names, ["a", "b"]);
        assert!(outcomes.iter().all(|o| o.runs_ns.len() == 3));
    }

    /// The iterations of every `read_sections` call of [`Logged`], in order.
    static SECTIONS_ASKED: Mutex<Vec<u64>> = Mutex::new(Vec::new());

    /// A reader that logs how many sections each call asked for.
    struct Logged;

    impl ReadSide for Logged {
        fn read_sections(&self, iterations: u64) -> Duration {
            SECTIONS_ASKED.lock().unwrap().push(iterations);
            Duration::ZERO
        }
    }

    /// Each run's reader does one untimed section of set-up, then its
    /// sections; the warm-up run before the timed ones has a tenth of the
    /// iterations, as `Config::runs` says.
    #[test]
    fn a_warm_up_of_a_tenth_of_the_iterations_comes_before_the_timed_runs() {
        const LOGGED: Implementation<dyn ReadSide> = Implementation {
            name: "logged",
            summary: "",
            origin: Origin::Workspace,
            make: |_| Ok(Box::new(Logged)),
        };
        let config = Config {
            threads: 1,
            iterations: 200,
            runs: 2,
        };
        measure_all(&[&LOGGED], config).unwrap();
        assert_eq!(*SECTIONS_ASKED.lock().unwrap(), [1, 20, 1, 200, 1, 200]);
    }

    /// The loop every contender times runs the section `iterations` times,
    /// all inside the clock: three sections of at least 1 ms each take at
    /// least 3 ms (a bound `sleep` guarantees, whatever the machine's speed).
    #[test]
    fn time_sections_times_every_section() {
        let mut sections = 0;
        let took = time_sections(3, || {
            sections += 1;
            std::thread::sleep(Duration::from_millis(1));
        });
        assert_eq!(sections, 3);
        assert!(took >= Duration::from_millis(3), "{took:?}");
    }

    /// Per-section times handed out to timed runs, in order: a reader's
    /// timed run takes the next one.
    static SCRIPT_MEDIAN: Mutex<Vec<u64>> = Mutex::new(Vec::new());
    static SCRIPT_MEAN: Mutex<Vec<u64>> = Mutex::new(Vec::new());

    /// A reader whose timed runs report the scripted ns per section.
    struct Scripted(&'static Mutex<Vec<u64>>);

    impl ReadSide for Scripted {
        fn read_sections(&self, iterations: u64) -> Duration {
            if iterations != TIMED_ITERATIONS {
                return Duration::ZERO;
            }
            let ns = self.0.lock().unwrap().remove(0);
            Duration::from_nanos(ns * iterations)
        }
    }

    /// A run's figure is the mean over readers of each reader's time per
    /// section; the outcome's is the median of the runs.
    #[test]
    fn a_run_is_the_mean_over_readers_and_the_figure_the_median_run() {
        const MEDIAN: Implementation<dyn ReadSide> = Implementation {
            name: "scripted",
            summary: "",
            origin: Origin::Workspace,
            make: |_| Ok(Box::new(Scripted(&SCRIPT_MEDIAN))),
        };
        const MEAN: Implementation<dyn ReadSide> = Implementation {
            name: "scripted",
            summary: "",
            origin: Origin::Workspace,
            make: |_| Ok(Box::new(Scripted(&SCRIPT_MEAN))),
        };
        *SCRIPT_MEDIAN.lock().unwrap() = vec![1, 2, 9];
        let config = Config {
            threads: 1,
            iterations: TIMED_ITERATIONS,
            runs: 3,
        };
        let out = measure_all(&[&MEDIAN], config).unwrap();
        assert_eq!(out[0].runs_ns, [1.0, 2.0, 9.0]);
        assert_eq!(out[0].ns_per_op, 2.0);
        *SCRIPT_MEAN.lock().unwrap() = vec![1, 3];
        let config = Config {
            threads: 2,
            runs: 1,
            ..config
        };
        let out = measure_all(&[&MEAN], config).unwrap();
        assert_eq!(out[0].runs_ns, [2.0]);
        let mut text = Vec::new();
        write_text(&mut text, &out).unwrap();
        assert_eq!(
            String::from_utf8(text).unwrap(),
            "refscale: scripted threads=2 iterations=100\nRuns\tTime(ns)\n1\t2.000\nmedian\t2.000\n"
        );
    }
}
