//! `syncbench advise`: run a short benchmark matrix for one workload on this
//! machine and recommend a primitive, with the numbers behind the advice.
//!
//! The workload: T threads share one payload of B bytes; each thread loops
//! "R read-side sections over the whole payload, then one update of the whole
//! payload". A read sums the payload's words and checks they are all equal;
//! an update adds one to every word (in place under a lock, or on a copy that
//! is then published for copy-on-write primitives, with writers serialized or
//! retried so no update is lost). Unequal words mean a reader saw a torn
//! payload: counted as an error, and a contender with errors is never
//! recommended.
//!
//! Contenders take turns: each round runs every contender once, in an order
//! rotated from round to round, and a contender's figures are those of its
//! median run. A slow stretch of the machine then costs several contenders
//! one run each instead of every run of one. The lead of the fastest over the
//! next is the median of their per-round ratios (runs of one round ran
//! back to back), as the report pairs its runs; a lead under [`TIE_MARGIN`]
//! is reported as a tie.

mod ours;
mod peers;

use crate::registry::{Implementation, Origin};
use crate::start_gate::{StartGate, ThreadRefused, spawn_scoped};
use serde::Serialize;
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::time::{Duration, Instant};

/// A primitive protecting a shared payload, for a mixed read/write workload.
pub trait Workload: Send + Sync {
    /// Runs the per-thread loop until `stop`: `reads_per_write` reads, then one
    /// update, repeated. Each contender writes its own loop with
    /// [`mixed_loop`] so no dynamic dispatch sits inside it.
    fn run(&self, reads_per_write: u32, stop: &AtomicBool) -> Counts;

    /// Once the run's threads have stopped, outside the timed window: runs
    /// or frees what the contender deferred, so that none of it is left to
    /// run during another contender's turn (`rcu-lite`'s callback worker
    /// would otherwise go on freeing old payloads beside the next contender's
    /// threads) or to be paid for by this contender's next run. What a
    /// scheme frees in the background *during* its run stays in its figures.
    fn settle(&self) {}
}

/// What one thread did.
#[derive(Clone, Copy, Debug, Default)]
pub struct Counts {
    /// Read-side sections completed.
    pub reads: u64,
    /// Updates completed.
    pub writes: u64,
    /// Reads that saw unequal words (a torn payload).
    pub torn: u64,
}

/// Reads between two looks at `stop` inside one write's run of reads: with
/// many reads per write of a large payload, a run would otherwise last until
/// its batch of reads was done (seconds past `--duration-s`). A batch of at
/// most this many reads costs no extra look.
pub const READS_PER_STOP_CHECK: u32 = 16;

/// The loop every [`Workload`] uses: `read` returns whether the payload it
/// saw was consistent. It looks at `stop` before each write's reads and
/// every [`READS_PER_STOP_CHECK`] reads among them (the same looks for every
/// contender); stopped among them, it returns without the write.
#[inline(always)]
pub fn mixed_loop(
    reads_per_write: u32,
    stop: &AtomicBool,
    mut read: impl FnMut() -> bool,
    mut write: impl FnMut(),
) -> Counts {
    let mut c = Counts::default();
    // Relaxed: `stop` is a stop request and publishes nothing; the counts
    // go back through the thread's join, which orders them.
    'run: while !stop.load(Relaxed) {
        let mut left = reads_per_write;
        loop {
            let chunk = left.min(READS_PER_STOP_CHECK);
            for _ in 0..chunk {
                c.torn += u64::from(!read());
            }
            c.reads += u64::from(chunk);
            left -= chunk;
            if left == 0 {
                break;
            }
            if stop.load(Relaxed) {
                break 'run;
            }
        }
        write();
        c.writes += 1;
    }
    c
}

/// Sums `words` and reports whether they were all equal (an untorn payload).
#[inline(always)]
pub fn check_payload(words: &[u64]) -> bool {
    let first = words.first().copied().unwrap_or(0);
    let mut same = true;
    let mut sum = 0u64;
    for &w in words {
        same &= w == first;
        sum = sum.wrapping_add(w);
    }
    std::hint::black_box(sum);
    same
}

/// What contenders are built with.
#[derive(Clone, Copy, Debug)]
pub struct Options {
    /// Payload size in 8-byte words.
    pub payload_words: usize,
}

impl Default for Options {
    fn default() -> Self {
        Options { payload_words: 8 }
    }
}

/// Every contender, ours first, then peers.
pub fn implementations() -> &'static [Implementation<dyn Workload, Options>] {
    IMPLEMENTATIONS
}

static IMPLEMENTATIONS: &[Implementation<dyn Workload, Options>] = &[
    ours::QRWLOCK,
    ours::RCU_LITE,
    ours::HAZPTR,
    peers::PARKING_LOT,
    peers::STD,
    peers::SEQLOCK,
    peers::ARC_SWAP,
    peers::CROSSBEAM_EPOCH,
];

/// The workload to advise on.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Config {
    /// Reads per write, per thread.
    pub reads_per_write: u32,
    /// Threads.
    pub threads: usize,
    /// Payload size in bytes: whole 8-byte words (see [`Config::new`]).
    pub payload_bytes: usize,
    /// How long each run of a contender lasts (JSON: `duration_s`).
    #[serde(rename = "duration_s", serialize_with = "seconds")]
    pub duration: Duration,
    /// Runs of each contender, taken in turns with the others'.
    pub rounds: usize,
}

impl Config {
    /// The workload, its payload of `payload_bytes` rounded up to whole
    /// 8-byte words (at least one): the size measured, and reported.
    pub fn new(
        reads_per_write: u32,
        threads: usize,
        payload_bytes: usize,
        duration: Duration,
        rounds: usize,
    ) -> Config {
        Config {
            reads_per_write,
            threads,
            payload_bytes: payload_bytes.div_ceil(8).max(1) * 8,
            duration,
            rounds,
        }
    }
}

fn seconds<S: serde::Serializer>(duration: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(duration.as_secs_f64())
}

pub use crate::stats::TIE_MARGIN;

/// One contender's figures.
#[derive(Clone, Debug, Serialize)]
pub struct Outcome {
    /// Implementation name.
    #[serde(rename = "impl")]
    pub name: String,
    /// Ours or a peer.
    pub origin: Origin,
    /// Reads plus writes per second, all threads together.
    pub ops_per_s: f64,
    /// Reads per second.
    pub reads_per_s: f64,
    /// Writes per second.
    pub writes_per_s: f64,
    /// Torn reads seen, in all of its runs.
    pub errors: u64,
    /// Reads plus writes per second of every run, in round order; the
    /// figures above are those of the median run.
    pub runs_ops_per_s: Vec<f64>,
    /// Why it was not measured, if it was not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skipped: Option<String>,
}

/// The advice: the matrix and the pick.
#[derive(Debug, Serialize)]
pub struct Advice {
    /// The workload.
    pub workload: Config,
    /// Every contender, fastest first.
    pub outcomes: Vec<Outcome>,
    /// The recommended contender.
    pub recommended: Option<String>,
    /// The recommendation in words, with its figures.
    pub reason: String,
    /// Contenders whose median run completed no write: they measured reads
    /// only, not the mix asked for (a run stops at `--duration-s`, even
    /// inside a write's batch of reads).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub warning: Option<String>,
}

/// Measures one contender on `config`.
pub fn measure(
    imp: &Implementation<dyn Workload, Options>,
    config: Config,
) -> Result<Outcome, ThreadRefused> {
    let options = Options {
        payload_words: config.payload_bytes.div_ceil(8).max(1),
    };
    let primitive = match (imp.make)(&options) {
        Ok(p) => p,
        Err(why) => {
            return Ok(Outcome {
                name: imp.name.into(),
                origin: imp.origin,
                ops_per_s: 0.0,
                reads_per_s: 0.0,
                writes_per_s: 0.0,
                errors: 0,
                runs_ops_per_s: Vec::new(),
                skipped: Some(why.to_string()),
            });
        }
    };
    let primitive = &*primitive;
    let stop = AtomicBool::new(false);
    let start = StartGate::new(config.threads + 1);
    let (elapsed, totals) = std::thread::scope(|s| {
        let mut handles = Vec::with_capacity(config.threads);
        for i in 0..config.threads {
            let what = || format!("thread {} of {} for {}", i + 1, config.threads, imp.name);
            let worker = spawn_scoped(s, "advise", what, || {
                let _cancel = start.cancel_on_panic();
                if !start.wait() {
                    return None; // Called off.
                }
                let began = Instant::now();
                let counts = primitive.run(config.reads_per_write, &stop);
                Some((counts, began, Instant::now()))
            });
            match worker {
                Ok(worker) => handles.push(worker),
                Err(refused) => {
                    start.cancel();
                    return Err(refused);
                }
            }
        }
        // Cancelled with no refusal of ours: a worker panicked before the
        // start (its message is above); the others return.
        assert!(
            start.wait(),
            "advise: a thread of {} panicked before the run started",
            imp.name
        );
        std::thread::sleep(config.duration);
        stop.store(true, Relaxed);
        // The clock runs from the first thread's start to the last one's
        // return from its loop, as the threads saw them (as rcuscale's
        // writers time themselves): not from when this thread got a CPU
        // after the gate (the others may have been counting since), nor
        // to the joins, which also wait out each thread's exit (its
        // per-thread state torn down, dearer for some contenders).
        let mut counts = Vec::with_capacity(config.threads);
        let mut span: Option<(Instant, Instant)> = None;
        for h in handles {
            let (c, began, ended) = h.join().expect("worker panicked").expect("the gate opened");
            counts.push(c);
            span = Some(span.map_or((began, ended), |(a, b)| (a.min(began), b.max(ended))));
        }
        Ok((span.map_or(Duration::ZERO, |(a, b)| b - a), counts))
    })?;
    primitive.settle();
    let secs = elapsed.as_secs_f64();
    let reads: u64 = totals.iter().map(|c| c.reads).sum();
    let writes: u64 = totals.iter().map(|c| c.writes).sum();
    Ok(Outcome {
        name: imp.name.into(),
        origin: imp.origin,
        ops_per_s: (reads + writes) as f64 / secs,
        reads_per_s: reads as f64 / secs,
        writes_per_s: writes as f64 / secs,
        errors: totals.iter().map(|c| c.torn).sum(),
        runs_ops_per_s: vec![(reads + writes) as f64 / secs],
        skipped: None,
    })
}

/// One contender's runs as one outcome: the median run's figures (the lower
/// middle one for an even count), every run's errors and throughput.
fn combine(mut runs: Vec<Outcome>) -> Outcome {
    if let Some(skipped) = runs.iter().position(|o| o.skipped.is_some()) {
        return runs.swap_remove(skipped);
    }
    let all: Vec<f64> = runs.iter().map(|o| o.ops_per_s).collect();
    let errors = runs.iter().map(|o| o.errors).sum();
    runs.sort_by(|a, b| a.ops_per_s.total_cmp(&b.ops_per_s));
    let mut median = runs.swap_remove((runs.len() - 1) / 2);
    median.errors = errors;
    median.runs_ops_per_s = all;
    median
}

/// Runs the matrix, `config.rounds` runs of each contender in turns, and
/// picks the fastest contender that saw no errors. A thread the OS refuses
/// ends the runs with the error, naming it.
pub fn advise(
    config: Config,
    progress: &mut crate::progress::Progress,
) -> Result<Advice, ThreadRefused> {
    advise_among(implementations(), config, progress)
}

/// [`advise`] over the contenders `imps`.
fn advise_among(
    imps: &[Implementation<dyn Workload, Options>],
    config: Config,
    progress: &mut crate::progress::Progress,
) -> Result<Advice, ThreadRefused> {
    // First one short untimed run of each contender, as refscale warms up:
    // a scheme's first use in the process starts what the process keeps
    // (rcu-lite's registration for expedited membarrier, which waits for a
    // kernel grace period, and its callback worker), and the first timed
    // run would pay for it: 145 ops/s against 4.8M in a 10 ms run. Its
    // errors count; its figures do not.
    let warm_up = Config {
        duration: config.duration / 10,
        ..config
    };
    let warm_up_errors: Vec<u64> = imps
        .iter()
        .map(|imp| {
            progress.set_label(imp.name);
            Ok(measure(imp, warm_up)?.errors)
        })
        .collect::<Result<_, ThreadRefused>>()?;
    let runs = crate::turns::try_in_turns(imps.len(), config.rounds.max(1), |i| {
        progress.set_label(imps[i].name);
        let outcome = measure(&imps[i], config)?;
        progress.inc(1);
        Ok(outcome)
    })?;
    let outcomes = runs
        .into_iter()
        .zip(warm_up_errors)
        .map(|(runs, errors)| {
            let mut outcome = combine(runs);
            outcome.errors += errors;
            outcome
        })
        .collect();
    Ok(recommend(config, outcomes))
}

/// The advice from each contender's combined outcome: the outcomes fastest
/// first, and the fastest contender that saw no errors.
fn recommend(config: Config, mut outcomes: Vec<Outcome>) -> Advice {
    outcomes.sort_by(|a, b| b.ops_per_s.total_cmp(&a.ops_per_s));
    let eligible: Vec<&Outcome> = outcomes
        .iter()
        .filter(|o| o.skipped.is_none() && o.errors == 0)
        .collect();
    let (recommended, reason) = match eligible.as_slice() {
        [] => (None, "no contender ran without errors".to_owned()),
        [only] => (
            Some(only.name.clone()),
            format!("{} is the only contender that ran cleanly", only.name),
        ),
        [best, next, ..] => (
            Some(best.name.clone()),
            format!(
                "use {}: {} ops/s ({} reads/s, {} writes/s), {:.2}x the next best ({}, {} ops/s{}){} \
                 for {} reads per write on {} threads with a {}-byte payload",
                best.name,
                rate(best.ops_per_s),
                rate(best.reads_per_s),
                rate(best.writes_per_s),
                lead(best, next),
                next.name,
                rate(next.ops_per_s),
                if paired(best, next) {
                    format!(
                        "; the median of {} rounds' ratios",
                        best.runs_ops_per_s.len()
                    )
                } else {
                    String::new()
                },
                tie_note(best, &eligible[1..]),
                config.reads_per_write,
                config.threads,
                config.payload_bytes
            ),
        ),
    };
    let writeless: Vec<&str> = outcomes
        .iter()
        .filter(|o| o.skipped.is_none() && o.writes_per_s == 0.0)
        .map(|o| o.name.as_str())
        .collect();
    let warning = (!writeless.is_empty() && config.reads_per_write > 0).then(|| {
        format!(
            "the median run of {} completed no write in {} s, so it measured reads only, not \
             {} reads per write: raise --duration-s until every run holds many batches of reads \
             and their write",
            writeless.join(", "),
            config.duration.as_secs_f64(),
            config.reads_per_write
        )
    });
    let reason = match &recommended {
        Some(name) if writeless.contains(&name.as_str()) => {
            format!("{reason} (reads only: see the warning)")
        }
        _ => reason,
    };
    Advice {
        workload: config,
        outcomes,
        recommended,
        reason,
        warning,
    }
}

/// What the advice adds when `best` does not lead every other clean
/// contender clearly (`rest`, fastest median first). The tied contenders
/// are a prefix of that order, as the report's rows rank them
/// (`report::choosing`): every contender up to the last one `best` leads by
/// under [`TIE_MARGIN`] (or not at all, by the rounds), since a contender
/// whose figure is ahead of a tied one ties too. The runner-up's wording
/// says why it ties: a lead within the spread of repeated runs, one under 1
/// (the rounds put it ahead although its median run was slower: the
/// evidence disagrees, as the report calls it), or a figure ahead of a tied
/// contender's. The others tied are named after it.
fn tie_note(best: &Outcome, rest: &[&Outcome]) -> String {
    let ties = |lead: f64| crate::stats::under_tie_margin(lead) || lead.is_nan();
    let leads: Vec<f64> = rest.iter().map(|o| lead(best, o)).collect();
    let Some(last) = leads.iter().rposition(|&lead| ties(lead)) else {
        return String::new();
    };
    let next = rest[0];
    let mut note = if leads[0] < 1.0 {
        format!(
            ": a tie, the evidence disagreeing: the rounds put {} ahead by {:.2}x although \
             its median run was no faster, so {} serves as well",
            next.name,
            1.0 / leads[0],
            next.name
        )
    } else if ties(leads[0]) {
        // (NaN: no work done on either side of a ratio, no lead either.)
        format!(
            ": a tie within the spread of repeated runs, so {} serves as well",
            next.name
        )
    } else {
        format!(
            ": a tie, since {}'s figure is ahead of {}'s, which {} leads by under \
             {TIE_MARGIN:.2}x, so {} serves as well",
            next.name, rest[last].name, best.name, next.name
        )
    };
    let also: Vec<String> = rest[1..=last]
        .iter()
        .zip(&leads[1..=last])
        .map(|(o, &lead)| {
            if lead < 1.0 {
                format!("{} (the rounds put it ahead by {:.2}x)", o.name, 1.0 / lead)
            } else {
                format!("{} ({lead:.2}x)", o.name)
            }
        })
        .collect();
    if !also.is_empty() {
        note.push_str(&format!(
            "; {} {} too, so {} as well",
            also.join(", "),
            if also.len() == 1 { "ties" } else { "tie" },
            if also.len() == 1 {
                "it serves"
            } else {
                "they serve"
            }
        ));
    }
    note
}

/// Whether `a`'s and `b`'s runs pair up round by round (both ran every
/// round, and more than once).
fn paired(a: &Outcome, b: &Outcome) -> bool {
    a.runs_ops_per_s.len() == b.runs_ops_per_s.len() && a.runs_ops_per_s.len() > 1
}

/// How far `best` leads `next`: the median of their per-round throughput
/// ratios where their runs pair up (a slow stretch of the machine then
/// weighs on both sides of a ratio alike), else the ratio of their figures.
/// Below 1 where the rounds put `next` ahead, whatever the medians say.
fn lead(best: &Outcome, next: &Outcome) -> f64 {
    if paired(best, next) {
        crate::stats::median_of_ratios(&best.runs_ops_per_s, &next.runs_ops_per_s)
    } else {
        best.ops_per_s / next.ops_per_s
    }
}

/// A rate to three significant figures with an SI prefix ("1.23 G",
/// "456 M", "12.0 k", "0.50"): a 16 MiB payload's few hundred writes a
/// second and a small Copy's billion reads print alike.
fn rate(per_s: f64) -> String {
    crate::stats::si_figures(per_s, " ")
}

/// Writes the matrix and the recommendation as text.
pub fn write_text(out: &mut impl Write, advice: &Advice) -> std::io::Result<()> {
    let w = advice.workload;
    writeln!(
        out,
        "advise: {} reads per write, {} threads, {}-byte payload, {} run(s) of {} s per contender \
         in turns (median run shown)",
        w.reads_per_write,
        w.threads,
        w.payload_bytes,
        w.rounds,
        w.duration.as_secs_f64()
    )?;
    // The fastest contender that could be recommended: one that tore a
    // payload is no baseline (unless every one did).
    let fastest = |clean_only: bool| {
        advice
            .outcomes
            .iter()
            .filter(|o| o.skipped.is_none() && (o.errors == 0 || !clean_only))
            .map(|o| o.ops_per_s)
            .fold(0.0f64, f64::max)
    };
    let clean = fastest(true);
    let best = if clean > 0.0 { clean } else { fastest(false) }.max(1e-9);
    // Against the recommended contender, the ratio is the one its lead in
    // the recommendation is made of: paired round by round where the runs
    // pair up (until 2026-12-07 the column gave the ratio of the medians
    // while the recommendation gave the paired one, so the two could
    // disagree for the same pair).
    let recommended = advice
        .outcomes
        .iter()
        .find(|o| o.skipped.is_none() && advice.recommended.as_deref() == Some(o.name.as_str()));
    let vs_best = |o: &Outcome| match recommended {
        Some(best) => 1.0 / lead(best, o),
        None => o.ops_per_s / best,
    };
    writeln!(
        out,
        "{:<18} {:>10} {:>8} {:>10} {:>10} {:>7}",
        "impl", "ops/s", "vs best", "reads/s", "writes/s", "errors"
    )?;
    for o in &advice.outcomes {
        match &o.skipped {
            Some(why) => writeln!(out, "{:<18} skipped: {why}", o.name)?,
            None => writeln!(
                out,
                "{:<18} {:>10} {:>7.2}x {:>10} {:>10} {:>7}{}",
                o.name,
                rate(o.ops_per_s),
                vs_best(o),
                rate(o.reads_per_s),
                rate(o.writes_per_s),
                o.errors,
                if o.errors > 0 { " !!!" } else { "" }
            )?,
        }
    }
    if let Some(best) = recommended
        && advice
            .outcomes
            .iter()
            .any(|o| o.skipped.is_none() && !std::ptr::eq(o, best) && paired(best, o))
    {
        writeln!(
            out,
            "vs best: against {}, the median of the per-round ratios where the rounds pair up",
            best.name
        )?;
    }
    if let Some(warning) = &advice.warning {
        writeln!(out, "warning: {warning}")?;
    }
    writeln!(out, "recommendation: {}", advice.reason)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_keep_three_significant_figures_at_every_scale() {
        assert_eq!(rate(1.234e9), "1.23 G");
        assert_eq!(rate(420.4e6), "420 M");
        assert_eq!(rate(18.64e6), "18.6 M");
        assert_eq!(rate(2_800.0), "2.80 k");
        assert_eq!(rate(312.0), "312");
        assert_eq!(rate(0.5), "0.50");
        assert_eq!(rate(0.0), "0.00");
    }

    /// How many of its threads had finished their runs each time the
    /// [`Settling`] contender was asked to settle.
    static SETTLED_AFTER: std::sync::Mutex<Vec<usize>> = std::sync::Mutex::new(Vec::new());

    /// A contender that counts its finished runs and records that count
    /// in [`SETTLED_AFTER`] when it settles.
    #[derive(Default)]
    struct Settling {
        finished: std::sync::atomic::AtomicUsize,
    }

    impl Workload for Settling {
        fn run(&self, reads_per_write: u32, stop: &AtomicBool) -> Counts {
            let counts = mixed_loop(reads_per_write, stop, || true, || {});
            // Relaxed: `measure` joins every run's thread before it settles,
            // and the join orders this increment before the load there.
            self.finished.fetch_add(1, Relaxed);
            counts
        }

        fn settle(&self) {
            // Relaxed: see `run`.
            let finished = self.finished.load(Relaxed);
            SETTLED_AFTER.lock().unwrap().push(finished);
        }
    }

    #[test]
    fn a_contender_settles_once_after_its_threads_stop() {
        const SETTLING: Implementation<dyn Workload, Options> = Implementation {
            name: "settling",
            summary: "records when it settles",
            origin: Origin::Workspace,
            make: |_| Ok(Box::<Settling>::default()),
        };
        let config = Config {
            reads_per_write: 4,
            threads: 3,
            payload_bytes: 8,
            duration: Duration::from_millis(20),
            rounds: 1,
        };
        let outcome = measure(&SETTLING, config).unwrap();
        assert!(
            outcome.skipped.is_none() && outcome.writes_per_s > 0.0,
            "{outcome:?}"
        );
        // Reads and writes per second split the operations per second, four
        // reads (or fewer, stopped among them) before each write.
        let (ops, reads, writes) = (outcome.ops_per_s, outcome.reads_per_s, outcome.writes_per_s);
        assert!(
            (reads + writes - ops).abs() <= ops * 1e-9 && reads >= 4.0 * writes * (1.0 - 1e-9),
            "reads/s and writes/s do not split ops/s at 4 reads per write: {outcome:?}"
        );
        // Once, and only after all three runs returned.
        assert_eq!(*SETTLED_AFTER.lock().unwrap(), [3]);
    }

    /// What the [`SlowExit`] contender's threads did: operations, and the
    /// span from the first thread's start to the last one's return.
    static SLOW_EXIT: std::sync::Mutex<(u64, Option<(Instant, Instant)>)> =
        std::sync::Mutex::new((0, None));

    /// Thread-exit work (a thread-local's destructor: what a primitive's
    /// per-thread state does when its thread ends) of 300 ms.
    struct ExitWork;

    impl Drop for ExitWork {
        fn drop(&mut self) {
            std::thread::sleep(Duration::from_millis(300));
        }
    }

    thread_local! {
        static EXIT_WORK: std::cell::RefCell<Option<ExitWork>> =
            const { std::cell::RefCell::new(None) };
    }

    /// A contender whose threads pay [`ExitWork`] when they end.
    struct SlowExit;

    impl Workload for SlowExit {
        fn run(&self, reads_per_write: u32, stop: &AtomicBool) -> Counts {
            EXIT_WORK.with(|w| *w.borrow_mut() = Some(ExitWork));
            let began = Instant::now();
            let counts = mixed_loop(reads_per_write, stop, || true, || {});
            let ended = Instant::now();
            let mut seen = SLOW_EXIT.lock().unwrap();
            seen.0 += counts.reads + counts.writes;
            seen.1 = Some(
                seen.1
                    .map_or((began, ended), |(a, b)| (a.min(began), b.max(ended))),
            );
            counts
        }
    }

    /// Operations per second are over the span the threads ran their
    /// loops: not over the joins, which wait out each thread's exit work
    /// (per-thread state torn down: more for some contenders than others).
    #[test]
    fn the_rate_is_over_the_loops_not_the_thread_exits() {
        const SLOW_EXIT_IMP: Implementation<dyn Workload, Options> = Implementation {
            name: "slow-exit",
            summary: "300 ms of thread-exit work",
            origin: Origin::Workspace,
            make: |_| Ok(Box::new(SlowExit)),
        };
        let config = Config {
            reads_per_write: 4,
            threads: 2,
            payload_bytes: 8,
            duration: Duration::from_millis(100),
            rounds: 1,
        };
        let outcome = measure(&SLOW_EXIT_IMP, config).unwrap();
        let (ops, span) = *SLOW_EXIT.lock().unwrap();
        let (first, last) = span.expect("the threads ran");
        let loops_rate = ops as f64 / (last - first).as_secs_f64();
        let ratio = outcome.ops_per_s / loops_rate;
        assert!(
            (0.8..1.25).contains(&ratio),
            "{} ops/s measured, {loops_rate:.0} ops/s over the loops ({ratio:.2}x)",
            outcome.ops_per_s
        );
    }

    #[test]
    fn every_contender_runs_cleanly_and_advice_names_the_fastest() {
        let config = Config {
            reads_per_write: 10,
            threads: 2,
            payload_bytes: 64,
            duration: Duration::from_millis(50),
            rounds: 2,
        };
        let advice = advise(config, &mut crate::progress::Progress::new(1, "test")).unwrap();
        assert_eq!(advice.outcomes.len(), implementations().len());
        for o in &advice.outcomes {
            assert_eq!(o.errors, 0, "{o:?}");
            assert!(o.skipped.is_some() || o.runs_ops_per_s.len() == 2, "{o:?}");
            assert!(
                o.skipped.is_some() || (o.reads_per_s > 0.0 && o.writes_per_s > 0.0),
                "{o:?}"
            );
        }
        // The fastest by its figure, not the first of the advice's own order.
        let fastest = advice
            .outcomes
            .iter()
            .filter(|o| o.skipped.is_none())
            .max_by(|a, b| a.ops_per_s.total_cmp(&b.ops_per_s))
            .unwrap();
        assert_eq!(advice.recommended.as_deref(), Some(fastest.name.as_str()));
        assert!(advice.reason.contains(&fastest.name));
    }

    /// One run's outcome: `ops` reads per second and no write.
    fn outcome(name: &str, ops: f64, errors: u64) -> Outcome {
        Outcome {
            name: name.into(),
            origin: Origin::Peer,
            // The mix of `workload()`: 10 reads per write.
            ops_per_s: ops,
            reads_per_s: ops * 10.0 / 11.0,
            writes_per_s: ops / 11.0,
            errors,
            runs_ops_per_s: vec![ops],
            skipped: None,
        }
    }

    /// The lead pairs the runs round by round: a contender whose median run
    /// fell in a slow stretch of the machine that the other's missed is not
    /// trailing by the ratio of the medians. Rounds of a, b: 110, 100; then
    /// the machine slows 3.3x from a's turn on: 33, 100 and 33, 30. The
    /// medians say b by 3.03x; the rounds say a in two of three. (Until
    /// 2026-12-05 the advice was "use b: ... 3.03x the next best".)
    #[test]
    fn the_lead_pairs_runs_taken_in_turns() {
        let runs = |name: &str, all: [f64; 3]| {
            combine(all.iter().map(|&ops| outcome(name, ops, 0)).collect())
        };
        let advice = recommend(
            workload(),
            vec![
                runs("a", [110.0, 33.0, 33.0]),
                runs("b", [100.0, 100.0, 30.0]),
            ],
        );
        assert_eq!(
            advice.recommended.as_deref(),
            Some("b"),
            "the higher median leads"
        );
        assert!(
            advice
                .reason
                .contains("0.91x the next best (a, 33.0 ops/s; the median of 3 rounds' ratios)")
                && advice
                    .reason
                    .contains("a tie, the evidence disagreeing: the rounds put a ahead by 1.10x"),
            "{}",
            advice.reason
        );
        // Rounds that put the median's loser well ahead: 0.50x, a tie
        // whose wording says so (not "the spread of repeated runs").
        let reversed = recommend(
            workload(),
            vec![
                runs("a", [1.0, 100.0, 100.0]),
                runs("b", [50.0, 200.0, 60.0]),
            ],
        );
        assert!(
            reversed.reason.contains("0.50x the next best")
                && reversed.reason.contains("the rounds put b ahead by 2.00x"),
            "{}",
            reversed.reason
        );
        // Rounds that agree keep the lead: 2x in each.
        let clear = recommend(
            workload(),
            vec![
                runs("a", [100.0, 50.0, 80.0]),
                runs("b", [50.0, 25.0, 40.0]),
            ],
        );
        assert!(
            clear.reason.contains("2.00x the next best") && !clear.reason.contains("a tie"),
            "{}",
            clear.reason
        );
    }

    /// The payload is measured in whole words, and the workload says so:
    /// `--payload-bytes 65` measures and reports 72 bytes. The JSON gives
    /// the run length that every rate depends on.
    #[test]
    fn the_workload_reports_what_was_measured() {
        let config = Config::new(10, 2, 65, Duration::from_millis(250), 3);
        assert_eq!(config.payload_bytes, 72);
        assert_eq!(
            Config::new(10, 2, 1, Duration::from_millis(250), 3).payload_bytes,
            8
        );
        let advice = recommend(config, vec![outcome("a", 2.0e6, 0), outcome("b", 1.0e6, 0)]);
        assert!(
            advice.reason.contains("with a 72-byte payload"),
            "{}",
            advice.reason
        );
        let json = serde_json::to_value(&advice).expect("the advice serializes");
        assert_eq!(json["workload"]["duration_s"], 0.25, "{json}");
        assert_eq!(json["workload"]["payload_bytes"], 72, "{json}");
    }

    #[test]
    fn a_contender_is_its_median_run_with_every_runs_errors() {
        let run = |ops: f64, errors: u64| outcome("x", ops, errors);
        let o = combine(vec![run(5.0, 0), run(1.0, 2), run(3.0, 0)]);
        assert_eq!(o.ops_per_s, 3.0);
        assert_eq!(o.errors, 2);
        assert_eq!(o.runs_ops_per_s, vec![5.0, 1.0, 3.0]);
    }

    /// Stopped among a write's reads, the loop returns within
    /// `READS_PER_STOP_CHECK` reads, without the write.
    #[test]
    fn the_loop_stops_among_the_reads_of_one_write() {
        let stop = AtomicBool::new(false);
        let mut reads = 0;
        let c = mixed_loop(
            1_000_000,
            &stop,
            || {
                reads += 1;
                if reads == 3 {
                    stop.store(true, Relaxed);
                }
                true
            },
            || panic!("no write: the run stopped among its reads"),
        );
        assert!(
            (3..=READS_PER_STOP_CHECK as u64).contains(&c.reads),
            "{c:?}"
        );
        assert_eq!((c.writes, c.torn), (0, 0));
        // Without a stop, every write follows its reads; each read that saw
        // a torn payload (here every other one) counts once.
        let stop = AtomicBool::new(false);
        let mut calls = 0;
        let mut reads = 0;
        let c = mixed_loop(
            40,
            &stop,
            || {
                reads += 1;
                reads % 2 == 0
            },
            || {
                calls += 1;
                if calls == 2 {
                    stop.store(true, Relaxed);
                }
            },
        );
        assert_eq!((c.reads, c.writes, c.torn), (80, 2, 40));
    }

    /// A contender that tore a payload is never recommended, so it is no
    /// baseline either: *vs best* is against the fastest clean contender,
    /// which the recommendation names (as the report leaves failed runs out
    /// of its *vs best* baselines).
    #[test]
    fn vs_best_is_against_the_fastest_clean_contender() {
        let advice = Advice {
            workload: Config {
                reads_per_write: 10,
                threads: 2,
                payload_bytes: 64,
                duration: Duration::from_millis(500),
                rounds: 3,
            },
            outcomes: vec![
                outcome("torn", 2.0e6, 5),
                outcome("clean", 1.0e6, 0),
                outcome("slower", 0.5e6, 0),
            ],
            recommended: Some("clean".into()),
            reason: "use clean".into(),
            warning: None,
        };
        let text = |advice: &Advice| {
            let mut out = Vec::new();
            write_text(&mut out, advice).unwrap();
            String::from_utf8(out).unwrap()
        };
        let vs_best = |text: &str, name: &str| {
            let line = text
                .lines()
                .find(|l| l.starts_with(&format!("{name} ")))
                .unwrap_or_else(|| panic!("no line for {name}: {text}"));
            let x = line.split_whitespace().find(|t| t.ends_with('x'));
            x.unwrap().to_owned()
        };
        let clean = text(&advice);
        assert_eq!(vs_best(&clean, "clean"), "1.00x", "{clean}");
        assert_eq!(vs_best(&clean, "slower"), "0.50x", "{clean}");
        assert_eq!(vs_best(&clean, "torn"), "2.00x", "{clean}");
        // Where every contender tore, the fastest of them is the baseline.
        let all_torn = Advice {
            outcomes: vec![outcome("torn", 2.0e6, 5), outcome("also-torn", 0.5e6, 1)],
            recommended: None,
            ..advice
        };
        let all_torn = text(&all_torn);
        assert_eq!(vs_best(&all_torn, "torn"), "1.00x", "{all_torn}");
        assert_eq!(vs_best(&all_torn, "also-torn"), "0.25x", "{all_torn}");
    }

    #[test]
    fn torn_payloads_are_detected() {
        assert!(check_payload(&[3, 3, 3]));
        assert!(!check_payload(&[3, 4, 3]));
    }

    /// An even count of runs gives the lower middle one; errors add up over
    /// every run.
    #[test]
    fn an_even_count_of_runs_gives_the_lower_middle_run_and_errors_add_up() {
        let run = |ops: f64, errors: u64| outcome("x", ops, errors);
        let o = combine(vec![run(4.0, 1), run(1.0, 2), run(3.0, 0), run(2.0, 0)]);
        assert_eq!(o.ops_per_s, 2.0);
        assert_eq!(o.errors, 3);
    }

    /// A broken contender: its update adds one to the first word only, so
    /// every read after a thread's first update sees unequal words.
    struct FirstWordOnly;

    impl Workload for FirstWordOnly {
        fn run(&self, reads_per_write: u32, stop: &AtomicBool) -> Counts {
            let words = std::cell::RefCell::new(vec![0u64; 4]);
            mixed_loop(
                reads_per_write,
                stop,
                || check_payload(&words.borrow()),
                || words.borrow_mut()[0] += 1,
            )
        }
    }

    /// How many [`TORN_IN_WARM_UP`] contenders were made, warm-up included.
    static MADE_TORN_IN_WARM_UP: std::sync::atomic::AtomicUsize =
        std::sync::atomic::AtomicUsize::new(0);

    /// A contender whose first run, the warm-up, tears as [`FirstWordOnly`]
    /// does, and whose timed runs are std's lock and clean.
    const TORN_IN_WARM_UP: Implementation<dyn Workload, Options> = Implementation {
        name: "torn-in-warm-up",
        summary: "tears in its first run only",
        origin: Origin::Workspace,
        make: |o| {
            // Relaxed: a count, made and read on the test's own thread.
            let first = MADE_TORN_IN_WARM_UP.fetch_add(1, Relaxed) == 0;
            Ok(Box::new(TornInWarmUp {
                first,
                clean: std::sync::RwLock::new(vec![0; o.payload_words]),
            }))
        },
    };

    struct TornInWarmUp {
        first: bool,
        clean: std::sync::RwLock<Vec<u64>>,
    }

    impl Workload for TornInWarmUp {
        fn run(&self, reads_per_write: u32, stop: &AtomicBool) -> Counts {
            if self.first {
                FirstWordOnly.run(reads_per_write, stop)
            } else {
                self.clean.run(reads_per_write, stop)
            }
        }
    }

    /// The warm-up run's torn reads count among the contender's errors, so
    /// a contender that tore only there is not recommended either.
    #[test]
    fn errors_of_the_warm_up_run_count() {
        let config = Config {
            duration: Duration::from_millis(300),
            rounds: 2,
            ..workload()
        };
        let progress = &mut crate::progress::Progress::new(1, "test");
        let advice = advise_among(&[TORN_IN_WARM_UP], config, progress).unwrap();
        // The warm-up, then the two timed runs.
        assert_eq!(MADE_TORN_IN_WARM_UP.load(Relaxed), 3);
        let [torn] = advice.outcomes.as_slice() else {
            panic!("{:?}", advice.outcomes)
        };
        assert!(
            torn.errors > 0,
            "the warm-up's torn reads uncounted: {torn:?}"
        );
        assert_eq!(advice.recommended, None);
    }

    /// A contender whose readers saw torn payloads has them counted as
    /// errors, over all its runs, and is not recommended though fastest.
    #[test]
    fn a_contender_that_tears_has_errors_and_is_never_recommended() {
        const TORN: Implementation<dyn Workload, Options> = Implementation {
            name: "first-word-only",
            summary: "updates the first word only",
            origin: Origin::Workspace,
            make: |_| Ok(Box::new(FirstWordOnly)),
        };
        let config = Config {
            duration: Duration::from_millis(20),
            ..workload()
        };
        let runs = (0..config.rounds).map(|_| measure(&TORN, config).unwrap());
        let torn = combine(runs.collect());
        assert!(
            torn.errors > 0 && torn.ops_per_s > 0.0,
            "torn reads uncounted: {torn:?}"
        );
        let advice = recommend(config, vec![outcome("clean", 1e-3, 0), torn]);
        assert_eq!(advice.outcomes[0].name, "first-word-only");
        assert_eq!(advice.recommended.as_deref(), Some("clean"));
    }

    /// Runs `workload` on two threads until its payload, as `words` reads
    /// it, shows 50,000 updates (or 5 s passed), then checks every word went up
    /// by one for each update the threads counted: an update adds one to
    /// every word, and none is lost beside another thread's.
    pub(super) fn check_every_update_lands(
        workload: &dyn Workload,
        words: &(dyn Fn() -> Vec<u64> + Sync),
    ) {
        let stop = AtomicBool::new(false);
        let writes: u64 = std::thread::scope(|s| {
            let threads: Vec<_> = (0..2).map(|_| s.spawn(|| workload.run(3, &stop))).collect();
            let deadline = Instant::now() + Duration::from_secs(5);
            while words()[0] < 50_000 && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(1));
            }
            stop.store(true, Relaxed);
            threads.into_iter().map(|t| t.join().unwrap().writes).sum()
        });
        let words = words();
        assert!(writes > 0, "no update in 5 s");
        assert_eq!(words, vec![writes; words.len()], "after {writes} updates");
    }

    fn workload() -> Config {
        Config {
            reads_per_write: 10,
            threads: 2,
            payload_bytes: 64,
            duration: Duration::from_millis(500),
            rounds: 3,
        }
    }

    /// The advice names the fastest contender that saw no errors, lists
    /// the outcomes fastest first, and calls a lead of exactly
    /// [`TIE_MARGIN`] no tie.
    #[test]
    fn the_advice_is_the_fastest_clean_contender() {
        let advice = recommend(
            workload(),
            vec![
                outcome("slow", 1.0e6, 0),
                outcome("torn", 3.0e6, 1),
                outcome("fast", 2.2e6, 0),
                outcome("middle", 2.0e6, 0),
            ],
        );
        let names: Vec<_> = advice.outcomes.iter().map(|o| o.name.as_str()).collect();
        assert_eq!(names, ["torn", "fast", "middle", "slow"]);
        assert_eq!(advice.recommended.as_deref(), Some("fast"));
        assert!(
            advice.reason.starts_with("use fast: ")
                && advice.reason.contains("1.10x the next best (middle, ")
                && !advice.reason.contains("a tie"),
            "{}",
            advice.reason
        );
        let tie = recommend(
            workload(),
            vec![outcome("a", 2.1e6, 0), outcome("b", 2.0e6, 0)],
        );
        assert!(
            tie.reason
                .contains("a tie within the spread of repeated runs, so b serves as well"),
            "{}",
            tie.reason
        );
        // Judged as printed: a lead of 1.0996 prints "1.10x" and is no tie.
        let printed = recommend(
            workload(),
            vec![outcome("a", 1.0996e6, 0), outcome("b", 1.0e6, 0)],
        );
        assert!(
            printed.reason.contains("1.10x the next best") && !printed.reason.contains("a tie"),
            "{}",
            printed.reason
        );
        let none = recommend(workload(), vec![outcome("torn", 1.0, 2)]);
        assert_eq!(none.recommended, None);
        assert_eq!(advice.warning, None);
    }

    /// Every clean contender the best does not lead by [`TIE_MARGIN`] is
    /// named, not the runner-up alone: a third within the margin is no
    /// less a tie for coming third. (Until 2026-12-06 the advice named b
    /// and passed c over.) The tied contenders are a prefix of the order of
    /// figures, as in the report: a runner-up led clearly ties too when a
    /// contender whose figure is behind its own ties.
    #[test]
    fn every_contender_within_the_margin_is_a_tie() {
        let three = recommend(
            workload(),
            vec![
                outcome("a", 2.1e6, 0),
                outcome("b", 2.05e6, 0),
                outcome("c", 2.0e6, 0),
                outcome("d", 1.0e6, 0),
            ],
        );
        assert!(
            three
                .reason
                .contains("so b serves as well; c (1.05x) ties too, so it serves as well")
                && !three.reason.contains("d ("),
            "{}",
            three.reason
        );
        // The rounds can lead the runner-up clearly and a contender further
        // down barely: b trails a by 1.11x or more in two rounds of three, c
        // by 1.05x in two, although c's median run is slower than b's.
        let runs = |name: &str, all: [f64; 3]| {
            combine(all.iter().map(|&ops| outcome(name, ops, 0)).collect())
        };
        let skipped = recommend(
            workload(),
            vec![
                runs("a", [200.0, 100.0, 100.0]),
                runs("b", [150.0, 98.0, 90.0]),
                runs("c", [190.476, 95.238, 10.0]),
            ],
        );
        assert!(
            skipped
                .reason
                .contains("1.11x the next best (b, 98.0 ops/s")
                && skipped.reason.contains(
                    ": a tie, since b's figure is ahead of c's, which a leads by under 1.10x, \
                     so b serves as well; c (1.05x) ties too, so it serves as well"
                ),
            "{}",
            skipped.reason
        );
    }

    /// A median run that completed no write measured reads only: the advice
    /// says which contenders and what to change, and a recommendation
    /// decided on such a run says so.
    #[test]
    fn a_median_run_without_a_write_is_named() {
        let reads_only = |name: &str, ops: f64| Outcome {
            reads_per_s: ops,
            writes_per_s: 0.0,
            ..outcome(name, ops, 0)
        };
        let advice = recommend(
            workload(),
            vec![
                reads_only("fast", 3.0e6),
                outcome("mixed", 1.0e6, 0),
                reads_only("slow", 0.5e6),
            ],
        );
        assert_eq!(
            advice.warning.as_deref(),
            Some(
                "the median run of fast, slow completed no write in 0.5 s, so it measured reads \
                 only, not 10 reads per write: raise --duration-s until every run holds many \
                 batches of reads and their write"
            )
        );
        assert!(
            advice.reason.starts_with("use fast: ")
                && advice.reason.ends_with(" (reads only: see the warning)"),
            "{}",
            advice.reason
        );
        let mut out = Vec::new();
        write_text(&mut out, &advice).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(
            text.contains("3 run(s) of 0.5 s per contender")
                && text.contains("\nwarning: the median run of fast, slow completed no write"),
            "{text}"
        );
        // A recommended contender that wrote is not marked, though another
        // one's run is named.
        let advice = recommend(
            workload(),
            vec![outcome("mixed", 3.0e6, 0), reads_only("slow", 0.5e6)],
        );
        assert!(advice.warning.is_some());
        assert!(!advice.reason.contains("reads only"), "{}", advice.reason);
        // With no reads asked for per write, a run without a write measured
        // no reads instead: nothing to warn of.
        let no_reads = Config {
            reads_per_write: 0,
            ..workload()
        };
        let advice = recommend(no_reads, vec![reads_only("idle", 0.0)]);
        assert_eq!(advice.warning, None);
    }
}
