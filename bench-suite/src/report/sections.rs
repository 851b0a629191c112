//! The report's document: one section per measurement, each built from
//! [`Results`] alone, so that `report --from results.json` rewrites the
//! same pages a run wrote.
//!
//! Invariants: every table compares contenders measured in the same run,
//! and every ratio is of figures from that run (paired round by round
//! where the measurement takes turns).

use super::document::{Document, Section, Table};
use super::plots::{self, Series};
use super::{QUICK_QS_FQS, QUICK_QS_PAIR, QUICK_QS_WAITS, Results, checks_cell, choosing};
use crate::{locktorture, rcuscale, refscale, stats, torture};

/// The intro's line on what measured `results`.
fn build_line(results: &Results) -> String {
    match &results.build {
        Some(build) => format!("Build: {}.", build.summary()),
        None => "Build: not recorded (a `results.json` from before syncbench recorded its build)."
            .to_owned(),
    }
}

/// Builds the report document from `results` alone.
pub fn document(results: &Results) -> Document {
    let mut doc = Document {
        title: format!("syncbench report ({} profile)", results.profile.name()),
        intro: vec![
            format!("Machine: {}.", results.machine.summary()),
            format!(
                "All figures in a table were measured in the same run, one contender after the other; \
                 ratios compare them to the best in the same column. Every figure is also in `results.json`. \
                 Run wall time: {:.0} s.",
                results.wall_s
            ),
        ],
        sections: Vec::new(),
    };
    doc.intro.insert(1, build_line(results));
    if let Some(warning) = results.build.as_ref().and_then(|b| b.unoptimized_warning()) {
        doc.intro
            .insert(2, format!("**Not comparable: {warning}.**"));
    }
    if let Some(throttled) = results.throttled.filter(|t| t.periods > 0) {
        doc.intro.push(format!(
            "**Throttled: a cgroup CPU quota stopped this process {} time(s) during the run \
             ({:.1} ms stopped in all, as its cpu.stat counts it).** Every thread of the group \
             waits for the next period then (100 ms by default), so the figures include those \
             stops: waits and maxima grow by up to a period, and the order of close contenders \
             can change. Measure outside the quota to compare the primitives themselves.",
            throttled.periods, throttled.stopped_ms
        ));
    }
    if !results.unavailable.is_empty() {
        let mut by_why: Vec<(&str, Vec<&str>)> = Vec::new();
        for u in &results.unavailable {
            match by_why.iter().position(|(why, _)| *why == u.why) {
                Some(i) if by_why[i].1.contains(&u.name.as_str()) => {}
                Some(i) => by_why[i].1.push(u.name.as_str()),
                None => by_why.push((u.why.as_str(), vec![u.name.as_str()])),
            }
        }
        let list: Vec<String> = by_why
            .iter()
            .map(|(why, names)| format!("{}: {why}", names.join(", ")))
            .collect();
        doc.intro.push(format!(
            "Not measured, unavailable in the build that ran: {}. The tables and the *Choosing* \
             rows compare the other contenders only.",
            list.join("; ")
        ));
    }
    if results.read_back {
        doc.intro.push(
            "Written again by `syncbench report --from` from that run's `results.json`: the figures \
             are the run's, the tables and the *Choosing* picks are this build's."
                .into(),
        );
    }
    doc.sections.push(choosing_section(results));
    doc.sections.push(refscale_section(results));
    doc.sections.push(locktorture_section(results));
    doc.sections.push(rcuscale_section(results));
    doc.sections.push(quick_qs_section(results));
    doc.sections.push(torture_section(results));
    doc.sections.push(deferred_free_section(results));
    doc.sections.push(membarrier_section(results));
    doc
}

/// One side of the quick-QS comparison over all its runs.
struct QuickQsSide {
    name: String,
    runs: usize,
    waits: u64,
    /// Mean of the runs' means (= the mean of all waits: the runs are equal).
    mean: f64,
    /// Median over runs of each run's p99.
    p99: f64,
    /// Median over runs of each run's maximum.
    run_max: f64,
    /// The largest wait of all runs (the seed's "max").
    max: f64,
    /// FQS waits per grace period over all runs, from the engine's own
    /// counts; `None` if a run has none (results saved before they were
    /// counted).
    fqs_per_gp: Option<f64>,
}

impl QuickQsSide {
    fn of(name: &str, outcomes: &[rcuscale::Outcome]) -> Option<QuickQsSide> {
        let runs: Vec<_> = outcomes.iter().filter(|o| o.name == name).collect();
        if runs.is_empty() {
            return None;
        }
        let each = |f: fn(&rcuscale::Latency) -> f64| -> Vec<f64> {
            runs.iter().map(|o| f(&o.latency_us)).collect()
        };
        Some(QuickQsSide {
            name: name.to_owned(),
            runs: runs.len(),
            waits: runs.iter().map(|o| o.gps).sum(),
            mean: stats::mean(&each(|l| l.mean)),
            p99: stats::median(&each(|l| l.p99)),
            run_max: stats::median(&each(|l| l.max)),
            max: each(|l| l.max).into_iter().fold(f64::NAN, f64::max),
            fqs_per_gp: runs
                .iter()
                .map(|o| o.fqs)
                .sum::<Option<rcuscale::FqsCounts>>()
                .and_then(|counts| counts.waits_per_grace_period()),
        })
    }
}

fn quick_qs_section(results: &Results) -> Section {
    let mut section =
        Section::new("Synchronize latency with quick quiescent-state reporting on and off");
    // The settings the runs recorded, not this build's (a report rendered
    // `--from` an older run): the interval, and waits per run from the
    // waits counted over the runs.
    let interval_ms = results
        .quick_qs
        .iter()
        .find_map(|o| o.fqs_interval_ms)
        .unwrap_or(QUICK_QS_FQS.as_secs_f64() * 1000.0);
    let waits_per_run = results
        .quick_qs
        .first()
        .and_then(|o| {
            let runs = (o.per_gp_rounds_us.len() * o.writers) as u64;
            (runs > 0).then(|| o.gps / runs)
        })
        .unwrap_or(QUICK_QS_WAITS);
    // Runs before 2026-12-06 had none: their engine made the first FQS wait
    // whatever else was registered.
    let idle_threads = results.quick_qs.first().map_or(0, |o| o.idle_threads);
    section.paragraph(format!(
        "One writer, no readers, {}, fixed-interval force-quiescent-state scans every {} ms as \
         the kernel paces them. `{}` reports the grace-period driver's own quiescent state at the end of \
         init (the seed's patch); `{}` credits the driver only after it passes one, so an idle grace period \
         needs a second FQS wait. As in the seed, each run is {} `synchronize_rcu()` calls, and the two \
         sides alternate run by run; *mean* is the mean of all waits, *p99* the median over runs of each \
         run's p99 (with {} waits a run, near that run's largest), *max* the largest wait of all runs (the \
         seed's figure), *run max* the median over runs of each run's largest. The seed measured mean \
         0.62x and max 0.40x.",
        match idle_threads {
            // The report's own runs have had one since 2026-12-06.
            0 => "no idle registered thread (a run from before 2026-12-06: its engine made the \
                  first FQS wait as on an idle system, whatever else was registered)"
                .to_owned(),
            1 => "1 idle registered thread (an idle system: its idle CPU)".to_owned(),
            n => format!("{n} idle registered threads (an idle system)"),
        },
        interval_ms,
        QUICK_QS_PAIR[0],
        QUICK_QS_PAIR[1],
        waits_per_run,
        waits_per_run,
    ));
    let sides: Vec<_> = QUICK_QS_PAIR
        .iter()
        .filter_map(|name| QuickQsSide::of(name, &results.quick_qs))
        .collect();
    // A column for the FQS waits only where every side counted them: a
    // report read back from results saved before keeps its old table.
    let counted = !sides.is_empty() && sides.iter().all(|s| s.fqs_per_gp.is_some());
    let mut columns = vec![
        "implementation",
        "runs>",
        "waits>",
        "mean us>",
        "p99 us>",
        "run max us>",
        "max us>",
    ];
    if counted {
        columns.push("FQS waits per grace period>");
    }
    let mut table = Table::new(&columns);
    for side in &sides {
        let mut row = vec![
            side.name.clone(),
            side.runs.to_string(),
            side.waits.to_string(),
            format!("{:.0}", side.mean),
            format!("{:.0}", side.p99),
            format!("{:.0}", side.run_max),
            format!("{:.0}", side.max),
        ];
        if let Some(per_gp) = side.fqs_per_gp.filter(|_| counted) {
            row.push(format!("{per_gp:.2}"));
        }
        table.row(row);
    }
    section.table(table);
    if let [on, off] = &sides[..] {
        section.paragraph(format!(
            "On/off: mean {:.2}x, max {:.2}x, run max {:.2}x.",
            on.mean / off.mean,
            on.max / off.max,
            on.run_max / off.run_max
        ));
        if let (Some(1.0), Some(2.0)) = (on.fqs_per_gp, off.fqs_per_gp) {
            section.paragraph(format!(
                "Every grace period of `{}` ended after one FQS wait and every one of `{}` after two \
                 (the engine's own count), so a wait longer than that many intervals is the timer or \
                 the scheduler waking the driver or the caller late, not an extra scan.",
                on.name, off.name
            ));
        }
        let categories = vec![on.name.clone(), off.name.clone()];
        let bars = |label: &str, f: fn(&QuickQsSide) -> f64| {
            Series::bars(label, vec![Some(f(on) / 1000.0), Some(f(off) / 1000.0)])
        };
        let series = vec![
            bars("mean", |s| s.mean),
            bars("p99", |s| s.p99),
            bars("run max", |s| s.run_max),
            bars("max", |s| s.max),
        ];
        section.plot(
            "plots/quick-qs.svg",
            "synchronize_rcu() latency, quick QS on vs off (lower is better)",
            plots::bar_chart(
                "synchronize_rcu() latency, idle system",
                "milliseconds",
                &categories,
                &series,
                false,
            ),
        );
    }
    section
}

fn deferred_free_section(results: &Results) -> Section {
    let mut section = Section::new("Freeing in bulk: deferred reclamation only");
    section.paragraph(
        "The torture harness again, but every writer hands each replaced object to the primitive's deferred \
         reclamation (hazptr `retire`, rcu-lite `call_rcu` through `Rcu::replace`, crossbeam-epoch \
         `defer_destroy`, haphazard and seize `retire`) and never waits for readers itself, as a thread \
         freeing in bulk would. *Handed over/s* is replaced objects handed to reclamation per second \
         (not yet freed: background schemes free them later); *unreclaimed max* is the memory that \
         reclamation held back. With more threads than CPUs the rate also says how the scheduler \
         shared the CPUs out: readers that yield or sleep hand their time to the writers. *Writers' \
         CPU* is the writers' part of the CPU time the run's threads used, *writer ns/object* their \
         CPU time per object handed over, and *others ns/object* that of the process's other \
         threads (a callback worker that frees in the background; the harness's own, which sleeps \
         between checks, is near 0). Their sum is what an object handed over cost in CPU time, \
         less two parts it leaves out: what readers spent freeing (crossbeam-epoch's `pin()` \
         collects garbage, seize's guards free batches as they drop) and what was freed after the \
         timed window (the backlog a run ends with). So it is a lower bound, lowest for the schemes \
         that free on their readers or leave a backlog.",
    );
    let mut table = Table::new(&[
        "implementation",
        "readers>",
        "writers>",
        "handed over/s>",
        "handed over/s by round>",
        "vs best>",
        "writers' CPU>",
        "writer ns/object>",
        "others ns/object>",
        "unreclaimed max>",
        "reads>",
        "errors>",
    ]);
    let rate = |o: &torture::Outcome| o.replaced as f64 / o.duration_s.max(1e-9);
    // Results written before the CPU time was measured have none: "-".
    let or_dash = |x: Option<String>| x.unwrap_or_else(|| "-".into());
    // A run that failed its checks is no baseline.
    let best = results
        .deferred_free
        .iter()
        .filter(|o| !o.failed())
        .map(rate)
        .fold(0.0f64, f64::max);
    for o in &results.deferred_free {
        table.row(vec![
            o.name.clone(),
            o.readers.to_string(),
            o.writers.to_string(),
            format!("{:.0}", rate(o)),
            rounds_cell(&o.replaced_per_s_by_round()),
            // No run passed its checks: no baseline.
            ratio_to_best(rate(o), best),
            or_dash(
                o.writers_cpu_share()
                    .map(|share| format!("{:.0}%", share * 100.0)),
            ),
            or_dash(o.writer_cpu_ns_per_replaced().map(|ns| format!("{ns:.0}"))),
            or_dash(o.others_cpu_ns_per_replaced().map(|ns| format!("{ns:.0}"))),
            o.unreclaimed_max.to_string(),
            o.reads.to_string(),
            checks_cell(o.errors, o.failure.as_deref()),
        ]);
    }
    section.table(table);
    let rounds = results
        .deferred_free
        .iter()
        .map(|o| o.replaced_per_s_by_round().len())
        .max()
        .unwrap_or(1);
    if rounds > 1 {
        section.paragraph(format!(
            "Each implementation ran in {rounds} rounds, taking turns in an order rotated from \
             round to round. A row is its median round by objects handed over per second (*reads* \
             too), *handed over/s by round* gives every round's rate in the order they ran, *unreclaimed \
             max* is the most of any round, and *errors* count every round."
        ));
    }
    section
}

/// Rates of the rounds of one contender, in the order they ran, to three
/// significant figures ("327k, 365k, 1.05M").
fn rounds_cell(rates: &[f64]) -> String {
    rates
        .iter()
        .map(|&x| crate::stats::si_figures(x, ""))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Stalled calls, and the callers that made them where the run counted those.
pub(super) fn stalls_cell(outcome: &crate::membarrier::Outcome) -> String {
    match outcome.stalled_callers {
        Some(callers) if outcome.stalls > 0 => format!("{} ({callers} callers)", outcome.stalls),
        _ => outcome.stalls.to_string(),
    }
}

fn membarrier_section(results: &Results) -> Section {
    let mut section =
        Section::new("Targeted membarrier: per-CPU mutexes vs one global mutex (simulated)");
    section.paragraph(
        "The discrete-event simulator of `membarrier-sim` (see docs/membarrier.md): 25 callers per CPU issue \
         targeted `MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ` commands while CFS bandwidth throttling of a deep \
         cgroup hierarchy keeps target CPUs' interrupts off for long windows. *Stalls* are calls that waited \
         past the 1 s watchdog (in brackets, the callers that stalled at least once): the stand-in for \
         the hard lockups the seed reports. The seed measured about \
         200x more successful calls with per-CPU mutexes on a 384-CPU machine.",
    );
    let mut table = Table::new(&[
        "CPUs>",
        "callers>",
        "global calls/s>",
        "per-cpu calls/s>",
        "per-cpu / global>",
        "stalls global>",
        "stalls per-cpu>",
        "no serialization calls/s>",
    ]);
    for r in &results.membarrier_sweep {
        table.row(vec![
            r.cpus.to_string(),
            r.callers.to_string(),
            format!("{:.0}", r.global.calls_per_s),
            format!("{:.0}", r.per_cpu.calls_per_s),
            r.ratio.map_or("-".into(), |x| format!("{x:.1}x")),
            stalls_cell(&r.global),
            stalls_cell(&r.per_cpu),
            format!("{:.0}", r.none.calls_per_s),
        ]);
    }
    section.table(table);
    let points: Vec<(f64, f64)> = results
        .membarrier_sweep
        .iter()
        .filter_map(|r| Some((r.cpus as f64, r.ratio?)))
        .collect();
    if points.len() > 1 {
        section.plot(
            "plots/membarrier-ratio.svg",
            "Successful calls, per-CPU mutexes over the global mutex, against CPU count (higher means the fix matters more)",
            plots::line_chart(
                "membarrier: per-cpu / global successful calls",
                "CPUs",
                "ratio",
                &[Series::line("per-cpu / global", points)],
                true,
                true,
            ),
        );
    }
    section
}

fn choosing_section(results: &Results) -> Section {
    let mut section = Section::new("Choosing a primitive on this machine");
    section.paragraph(
        "Each row is decided by the measurement it names, from this run only; *costs elsewhere* is \
         another figure of the same run that the winner pays. A read-side margin (*winner Nx better*) \
         pairs the runs of one turn, as the read-side table does; the waiting-writer, write-heavy \
         lock and bulk-freeing rows rank on each contender's median round, pair the rounds turn \
         by turn, and call a tie unless every round puts the winner ahead. A margin under 1.10x, \
         or pairs of turns that put a contender ahead where its figure is behind, is a tie: the winner \
         column then names every contender tied with the first, whose figure and costs the row \
         gives. A contender with a failed torture or locktorture run is left out of every row, \
         and *measured by* names it. Details and the other contenders are in the sections below.",
    );
    let mut table = Table::new(&[
        "use case",
        "winner",
        "figure",
        "runner-up",
        "costs elsewhere",
        "measured by",
    ]);
    for c in choosing::table(results) {
        table.row(vec![
            c.use_case.to_owned(),
            c.winners(),
            c.figure,
            c.runner_up,
            c.costs_elsewhere,
            c.measured_by,
        ]);
    }
    section.table(table);
    section
}

/// Names in first-seen order.
fn ordered<'a>(names: impl Iterator<Item = &'a str>) -> Vec<&'a str> {
    let mut out: Vec<&str> = Vec::new();
    for n in names {
        if !out.contains(&n) {
            out.push(n);
        }
    }
    out
}

/// The median over runs of `o`'s run time over `best`'s in the same turn
/// (`refscale::measure_in_turns` gives every contender of one thread count
/// the same number of runs, in turns).
pub(super) fn paired_ratio(o: &refscale::Outcome, best: &refscale::Outcome) -> f64 {
    stats::median_of_ratios(&o.runs_ns, &best.runs_ns)
}

fn refscale_section(results: &Results) -> Section {
    let mut section = Section::new("Read side (refscale): ns per read-side critical section");
    let threads = ordered_numbers(results.refscale.iter().map(|o| o.threads));
    let names = ordered(results.refscale.iter().map(|o| o.name.as_str()));
    let mut headers = vec!["implementation".to_owned()];
    for t in &threads {
        headers.push(format!(
            "{t} thread{} (median ns)>",
            if *t == 1 { "" } else { "s" }
        ));
        headers.push("vs best (paired)>".to_owned());
    }
    let mut table = Table::new(&headers.iter().map(String::as_str).collect::<Vec<_>>());
    let find = |name: &str, t: usize| {
        results
            .refscale
            .iter()
            .find(|o| o.threads == t && o.name == name)
    };
    // A contender whose torture or locktorture run failed is no baseline,
    // as in the Choosing rows: its reads may be fast because they protect
    // nothing.
    let failed = results.failed_runs();
    let unfit = |name: &str| {
        failed
            .iter()
            .any(|f| choosing::tortured_as(&f.name) == choosing::tortured_as(name))
    };
    for name in &names {
        let mut row = vec![(*name).to_owned()];
        for &t in &threads {
            let best = results
                .refscale
                .iter()
                .filter(|o| o.threads == t && !unfit(&o.name))
                .min_by(|a, b| a.ns_per_op.total_cmp(&b.ns_per_op));
            match (find(name, t), best) {
                (Some(o), Some(best)) => {
                    row.push(format!("{:.2}", o.ns_per_op));
                    row.push(format!("{:.2}x", paired_ratio(o, best)));
                }
                _ => row.extend(["-".to_owned(), "-".to_owned()]),
            }
        }
        table.row(row);
    }
    section.table(table);
    section.paragraph(
        "The contenders take turns run by run, so run *i* of each falls in the same stretch of the \
         machine's time. *vs best (paired)* is the median over runs of each run's ratio to the fastest \
         contender's run of the same turn: a slow stretch that hits one turn cancels out of it, where it \
         can move a median alone.",
    );
    let unfit_names: Vec<&str> = names.iter().copied().filter(|n| unfit(n)).collect();
    if !unfit_names.is_empty() {
        section.paragraph(format!(
            "Not a baseline, since a torture or locktorture run of theirs failed its checks (see \
             below): {}.",
            unfit_names.join(", ")
        ));
    }
    section.paragraph(format!(
        "With more threads than cores ({} here) a thread's time includes time descheduled, so compare \
         rows within a column, not across columns.",
        results.machine.cores
    ));
    let categories: Vec<String> = names.iter().map(|n| (*n).to_owned()).collect();
    let series: Vec<Series> = threads
        .iter()
        .map(|&t| {
            Series::bars(
                format!("{t} thread{}", if t == 1 { "" } else { "s" }),
                names
                    .iter()
                    .map(|n| find(n, t).map(|o| o.ns_per_op))
                    .collect(),
            )
        })
        .collect();
    section.plot(
        "plots/refscale.svg",
        "Read-side ns/op per primitive (lower is better)",
        plots::bar_chart(
            "Read-side critical section, ns/op (median)",
            "ns per section",
            &categories,
            &series,
            false,
        ),
    );
    section
}

fn ordered_numbers(values: impl Iterator<Item = usize>) -> Vec<usize> {
    let mut out: Vec<usize> = Vec::new();
    for v in values {
        if !out.contains(&v) {
            out.push(v);
        }
    }
    out
}

/// A *starved* cell of the locktorture table: which sides failed the
/// starvation test (`side` picks the writers' and readers' verdicts of a
/// round, `None` where the round did not measure it). One round names the
/// sides; several count, per side, the rounds that flagged it.
fn starved_cell(
    rounds: &[locktorture::Starved],
    side: impl Fn(&locktorture::Starved) -> (Option<bool>, Option<bool>),
) -> String {
    let verdicts: Vec<(Option<bool>, Option<bool>)> = rounds.iter().map(side).collect();
    if verdicts.iter().all(|(w, r)| w.is_none() && r.is_none()) {
        return "n/a".to_owned();
    }
    let sides = [
        (
            "writers",
            verdicts.iter().filter(|v| v.0 == Some(true)).count(),
        ),
        (
            "readers",
            verdicts.iter().filter(|v| v.1 == Some(true)).count(),
        ),
    ];
    let named: Vec<String> = sides
        .iter()
        .filter(|(_, n)| *n > 0)
        .map(|(name, n)| {
            if verdicts.len() == 1 {
                (*name).to_owned()
            } else {
                format!("{name} {n}/{}", verdicts.len())
            }
        })
        .collect();
    if named.is_empty() {
        "no".to_owned()
    } else {
        named.join(", ")
    }
}

/// `value` over `best` as "1.23x", or "-" where no run gave a baseline
/// (`best` 0: every run failed its checks, or none did any work).
fn ratio_to_best(value: f64, best: f64) -> String {
    if best > 0.0 {
        format!("{:.2}x", value / best)
    } else {
        "-".to_owned()
    }
}

fn locktorture_section(results: &Results) -> Section {
    let mut section = Section::new("Reader-writer locks under contention (locktorture)");
    section.paragraph(format!(
        "Writers hold the lock {} us, readers {} us (busy-wait), as the kernel's rw_lock torture does. \
         *Writes vs best* and *reads vs best* are each side's acquisitions per second over the \
         best lock's in the same mix (rates: each round's window has its own length); they are \
         not added, since a write excludes everyone and a read does not, and a lock that starves \
         its writers gains reads. \
         *Writer share* is writer acquisitions per writer thread over reader acquisitions per reader \
         thread: 1.0 is even, near 0 means writers starve, and `-` means the readers got none. *Starved* marks the kernel's `???` \
         (a thread got less than half the busiest thread's count, the kernel's `max / 2 > min` in \
         whole acquisitions), and *writers got none* (or readers) a side that never got the lock \
         in the timed window, which that test passes (0 / 2 is not more than 0). With more threads than CPUs \
         that count also depends on how evenly the scheduler ran the threads; *starved off \
         runqueue* applies the same test to each thread's acquisitions per millisecond it was \
         not waiting for a CPU (`/proc/thread-self/schedstat`), which leaves only the lock's \
         share: time asleep or spinning in the lock still counts.",
        locktorture::Config::WRITE_HOLD.as_micros(),
        locktorture::Config::READ_HOLD.as_micros()
    ));
    let mut table = Table::new(&[
        "lock",
        "writers>",
        "readers>",
        "writes>",
        "reads>",
        "writes/s by round>",
        "writes vs best>",
        "reads vs best>",
        "writer share>",
        "starved",
        "starved off runqueue",
        "fail>",
    ]);
    // Acquisitions per second, each side's: each round's window is
    // measured, and a late wake-up of the main thread lengthens one; counts
    // would compare windows of different lengths.
    let per_s = |o: &locktorture::Outcome, side: fn(&locktorture::Outcome) -> u64| {
        side(o) as f64 / o.duration_s.max(f64::MIN_POSITIVE)
    };
    let writes: fn(&locktorture::Outcome) -> u64 = |o| o.writes.total;
    let reads: fn(&locktorture::Outcome) -> u64 = |o| o.reads.total;
    for o in &results.locktorture {
        // The best rate of a side among the locks of this mix that passed
        // their checks: a run that failed them is no baseline.
        let best = |side: fn(&locktorture::Outcome) -> u64| {
            results
                .locktorture
                .iter()
                .filter(|p| {
                    p.writers == o.writers && p.readers == o.readers && p.why_failed().is_none()
                })
                .map(|p| per_s(p, side))
                .fold(0.0, f64::max)
        };
        let rounds = o.starved_by_round();
        let mut starved = starved_cell(&rounds, |s| (Some(s.writers), Some(s.readers)));
        // The kernel's Max/Min test passes a side whose threads all got 0
        // (0/2 > 0 is false): "no" beside 0 writes read as fair (spin's
        // writers among 16 readers, until 2026-12-07).
        if let Some(side) = o.exclusion_unchecked_side() {
            starved = if starved == "no" {
                format!("{side}rs got none")
            } else {
                format!("{side}rs got none; {starved}")
            };
        }
        let starved_served = starved_cell(&rounds, |s| {
            (s.writers_off_runqueue, s.readers_off_runqueue)
        });
        table.row(vec![
            o.lock.clone(),
            o.writers.to_string(),
            o.readers.to_string(),
            o.writes.total.to_string(),
            o.reads.total.to_string(),
            rounds_cell(&o.writes_per_s_by_round()),
            // No lock of the mix passed its checks, or none acquired that
            // side (a mix without readers): no baseline.
            ratio_to_best(per_s(o, writes), best(writes)),
            ratio_to_best(per_s(o, reads), best(reads)),
            // No reader acquisition, no share (not `inf`).
            o.writer_share()
                .map_or("-".to_owned(), |share| format!("{share:.3}")),
            starved,
            starved_served,
            checks_cell(o.fail, o.failure.as_deref()),
        ]);
    }
    section.table(table);
    let rounds = results
        .locktorture
        .iter()
        .map(|o| o.writes_per_s_by_round().len())
        .max()
        .unwrap_or(1);
    section.paragraph(if rounds > 1 {
        format!(
            "Each mix ran in {rounds} rounds, the locks taking turns in an order rotated from round \
             to round. A row is the lock's median round by writer acquisitions per second (its \
             counts and share), *writes/s by round* gives every round's rate in the order they \
             ran, the *starved* columns count the rounds in which a side failed the test \
             (*writers 1/{rounds}*: in one round of {rounds}), and *fail* counts the exclusion \
             failures of every round."
        )
    } else {
        "Each lock ran once per mix, one after the other: *writes/s by round* is that one run's \
         rate."
            .to_owned()
    });
    // The most contended mix, as a picture: per-thread acquisitions per side.
    if let Some(mix) = results
        .locktorture
        .iter()
        .map(|o| (o.writers, o.readers))
        .max_by_key(|(w, r)| w + r)
    {
        let rows: Vec<_> = results
            .locktorture
            .iter()
            .filter(|o| (o.writers, o.readers) == mix)
            .collect();
        let categories: Vec<String> = rows.iter().map(|o| o.lock.clone()).collect();
        // Per second, as the table: the locks' median rounds have windows
        // of different lengths. No bar for a side with no acquisition at
        // all (a log axis has no 0; the table gives the 0).
        let per = |o: &locktorture::Outcome, c: locktorture::Counts, n: usize| {
            Some(c.per_thread(n) / o.duration_s).filter(|v| *v > 0.0 && v.is_finite())
        };
        let series = vec![
            Series::bars(
                "per writer thread",
                rows.iter().map(|o| per(o, o.writes, o.writers)).collect(),
            ),
            Series::bars(
                "per reader thread",
                rows.iter().map(|o| per(o, o.reads, o.readers)).collect(),
            ),
        ];
        section.plot(
            "plots/locktorture.svg",
            "Acquisitions per thread per second, writers vs readers (log scale; a writer bar far left of its reader bar means writer starvation, and a missing bar a side with no acquisition at all)",
            plots::bar_chart(
                &format!(
                    "locktorture, {} writers / {} readers: acquisitions per thread per second",
                    mix.0, mix.1
                ),
                "acquisitions per thread per second (log)",
                &categories,
                &series,
                true,
            ),
        );
    }
    section
}

fn rcuscale_section(results: &Results) -> Section {
    let mut section = Section::new("Waiting for readers (rcuscale)");
    // Results saved before 2026-12-05 counted the threads' start in the
    // others' CPU time (`CpuPerWait::others_timed_window`).
    let others_over = if results
        .rcuscale
        .iter()
        .filter_map(|o| o.cpu)
        .all(|c| c.others_timed_window)
    {
        "the idle threads' and the harness's; over the run's timed window, which leaves out starting, \
         registering and ending the threads"
    } else {
        "the idle threads' and the harness's, which in this run's version of syncbench also paid for \
         starting the threads"
    };
    section.paragraph(format!(
        "W writers loop \"unpublish, wait until no reader holds it\". *Per-GP* is run time over all waits \
         (lower with concurrent writers when waits share work); latency is per wait, in microseconds. \
         *Idle* threads registered with the primitive, read once and then sleep: every scan or grace period \
         still accounts for them, as the kernel does for idle CPUs, so they model a process with many \
         threads (the seed measured on 24 to 256 CPUs). Each mix ran in rounds, the implementations taking \
         turns within a round: *per-GP* is the median round, *rounds* the fastest and slowest, and the \
         latency figures cover every wait of every round. The qsbr flavors' readers (rcu-lite-qsbr, \
         liburcu-qsbr) announce a quiescent state every 64 sections, and their idle threads are \
         offline, as a qsbr thread that blocks must be. *Time-weighted p50* counts each wait by its \
         length: at least half of the writers' waiting time went to waits this long or longer. Far \
         above p99, it says that a few long waits (under one in a hundred) took most of the writers' \
         time, which per-GP time and the percentiles do not show. *Writer CPU* is the CPU time the \
         writers used per wait (a writer that spins while it waits uses it all along, one that sleeps \
         only to scan and wake), *others CPU* that of the process's other threads per wait (a \
         grace-period or scanner thread that waits for the writers; {others_over}), both over every \
         round."
    ));
    let mut table = Table::new(&[
        "implementation",
        "writers>",
        "readers>",
        "idle>",
        "waits>",
        "per-GP us>",
        "rounds>",
        "mean us>",
        "p50 us>",
        "p99 us>",
        "max us>",
        "time-weighted p50 us>",
        "writer CPU us>",
        "others CPU us>",
    ]);
    for o in &results.rcuscale {
        let l = o.latency_us;
        table.row(vec![
            o.name.clone(),
            o.writers.to_string(),
            o.readers.to_string(),
            o.idle_threads.to_string(),
            o.gps.to_string(),
            format!("{:.2}", o.per_gp_us),
            {
                let (lo, hi) = o.per_gp_range();
                format!("{lo:.2}-{hi:.2}")
            },
            format!("{:.2}", l.mean),
            format!("{:.2}", l.p50),
            format!("{:.2}", l.p99),
            format!("{:.1}", l.max),
            l.time_weighted_p50
                .map_or("-".to_owned(), |t| format!("{t:.1}")),
            // Results saved before the CPU time was measured: "-".
            o.cpu
                .map_or("-".to_owned(), |c| format!("{:.2}", c.writers_us)),
            o.cpu
                .map_or("-".to_owned(), |c| format!("{:.2}", c.others_us)),
        ]);
    }
    section.table(table);
    let names = ordered(results.rcuscale.iter().map(|o| o.name.as_str()));
    let idles = ordered_numbers(results.rcuscale.iter().map(|o| o.idle_threads));
    // One plot per idle-thread count, each contender in its own colour in
    // every plot. A plot shows one reader count: the one measured at the
    // most writer counts (the full profile also runs 1 writer with no
    // reader and 16 with 4, which would join points of different mixes).
    for &idle in &idles {
        let at_idle = || results.rcuscale.iter().filter(|o| o.idle_threads == idle);
        let Some(readers) = ordered_numbers(at_idle().map(|o| o.readers))
            .into_iter()
            .max_by_key(|&r| {
                let writers =
                    ordered_numbers(at_idle().filter(|o| o.readers == r).map(|o| o.writers));
                // The most writer counts; among equals, the fewest readers.
                (writers.len(), std::cmp::Reverse(r))
            })
        else {
            continue;
        };
        let series: Vec<Series> = names
            .iter()
            .enumerate()
            .map(|(i, n)| {
                let points = at_idle()
                    .filter(|o| o.name == *n && o.readers == readers && o.per_gp_us > 0.0)
                    .map(|o| (o.writers as f64, o.per_gp_us))
                    .collect();
                Series::line(*n, points).with_colour(i)
            })
            .filter(|s| s.points.len() > 1)
            .collect();
        if series.is_empty() {
            continue;
        }
        let with_readers = format!("{readers} reader{}", if readers == 1 { "" } else { "s" });
        let (file, title) = if idle == 0 {
            (
                "plots/rcuscale-per-gp.svg".to_owned(),
                format!("Per-GP time vs concurrent callers, {with_readers}"),
            )
        } else {
            (
                format!("plots/rcuscale-per-gp-idle{idle}.svg"),
                format!(
                    "Per-GP time vs concurrent callers, {with_readers}, {idle} idle registered threads"
                ),
            )
        };
        section.plot(
            file,
            format!(
                "Effective per-grace-period time against concurrent synchronize callers, {with_readers}, \
                 {idle} idle threads (lower is better)"
            ),
            plots::line_chart(&title, "concurrent callers (writers)", "per-GP time, us", &series, true, true),
        );
    }
    section
}

fn torture_section(results: &Results) -> Section {
    let mut section = Section::new("Deferred reclamation under torture");
    section.paragraph(
        "Readers check every object they reach is live; reclamation poisons objects before a delayed free. \
         *Unreclaimed max* is the most objects allocated but not yet reclaimed at once: the memory the \
         primitive holds back. This run exercises every path a primitive has, so the writers' work differs: \
         hazptr's writers wait for readers and free at once on half their replacements, rcu-lite's on a \
         quarter (and a quarter more once a later writer finds the polled grace period over), qrwlock's \
         free under the write lock (and one read in four nests a recursive read), while crossbeam-epoch, \
         haphazard and seize always defer. Compare rates (*handed over/s*) and \
         *unreclaimed max* across primitives in the next table, where every writer only defers.",
    );
    let mut table = Table::new(&[
        "implementation",
        "readers>",
        "writers>",
        "reads>",
        "replaced>",
        "unreclaimed max>",
        "errors>",
    ]);
    for o in &results.torture {
        table.row(vec![
            o.name.clone(),
            o.readers.to_string(),
            o.writers.to_string(),
            o.reads.to_string(),
            o.replaced.to_string(),
            o.unreclaimed_max.to_string(),
            checks_cell(o.errors, o.failure.as_deref()),
        ]);
    }
    section.table(table);
    section
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::tests::quick_qs_run;

    /// A run that a CPU quota throttled says so at the top, with the count
    /// and the time stopped; one that was not (or could not tell) does not.
    #[test]
    fn a_throttled_run_says_so_in_the_intro() {
        let mut results = crate::report::tests::sample();
        for throttled in [
            None,
            Some(crate::throttle::Throttled {
                periods: 0,
                stopped_ms: 0.0,
            }),
        ] {
            results.throttled = throttled;
            let markdown = document(&results).to_markdown();
            assert!(!markdown.contains("Throttled"), "{markdown}");
        }
        results.throttled = Some(crate::throttle::Throttled {
            periods: 11,
            stopped_ms: 1633.0,
        });
        let markdown = document(&results).to_markdown();
        assert!(
            markdown.contains(
                "**Throttled: a cgroup CPU quota stopped this process 11 time(s) during the run \
                 (1633.0 ms stopped in all, as its cpu.stat counts it).**"
            ),
            "{markdown}"
        );
    }

    /// *Writes vs best* and *reads vs best* compare rates: two locks at the
    /// same rates whose median rounds lasted 0.700 and 0.667 s both show
    /// 1.00x. (Until 2026-12-05 a total divided counts: 21,000 against
    /// 20,010, "0.95x".) Each side is its own: a lock that starves its
    /// writers and gains reads leads on reads and trails on writes. (Until
    /// 2026-12-06 one *total vs best* added the two, and put such a lock
    /// ahead.)
    #[test]
    fn locktorture_each_side_vs_best_compares_rates() {
        let mut results = crate::report::tests::sample();
        let mut a = results.locktorture[0].clone();
        a.duration_s = 0.700;
        a.writes = crate::report::tests::counts(7_000, 1_750, 1_750);
        a.reads = crate::report::tests::counts(14_000, 875, 875);
        let mut b = a.clone();
        b.lock = "lock-b".into();
        b.duration_s = 0.667;
        b.writes = crate::report::tests::counts(6_670, 1_668, 1_667);
        b.reads = crate::report::tests::counts(13_340, 834, 833);
        results.locktorture = vec![a, b];
        // The two locks' rows of the table.
        let rows = |results: &Results| -> Vec<String> {
            let markdown = document(results).to_markdown();
            let rows: Vec<String> = markdown
                .lines()
                .filter(|l| l.starts_with("| lock-a |") || l.starts_with("| lock-b |"))
                .map(str::to_owned)
                .collect();
            assert_eq!(rows.len(), 2, "{markdown}");
            rows
        };
        for row in rows(&results) {
            assert!(row.contains("| 1.00x | 1.00x |"), "{row}");
        }
        // lock-b lets 2,001 writes through instead of 6,670 and gains 9,000
        // reads: 24,341 in all, 1.22x lock-a's rate as a total.
        results.locktorture[1].writes = crate::report::tests::counts(2_001, 501, 500);
        results.locktorture[1].reads = crate::report::tests::counts(22_340, 1_397, 1_396);
        let table = rows(&results);
        assert!(table[0].contains("| 1.00x | 0.60x |"), "{}", table[0]);
        assert!(table[1].contains("| 0.30x | 1.00x |"), "{}", table[1]);
        // Where no lock of the mix passed its checks, no ratio ("-"), not
        // one to a baseline of nothing ("infx").
        for o in &mut results.locktorture {
            o.fail = 1;
        }
        for row in rows(&results) {
            assert!(row.contains("| - | - |") && !row.contains("inf"), "{row}");
        }
    }

    /// A side that never got the lock shows as such in *starved*: the
    /// kernel's Max/Min test passes it (0 / 2 is not more than 0), and the
    /// cell read "no" beside 0 writes until 2026-12-07.
    #[test]
    fn a_side_that_got_no_acquisition_is_named_in_starved() {
        let mut results = crate::report::tests::sample();
        let mut o = results.locktorture[0].clone();
        o.writes = crate::report::tests::counts(0, 0, 0);
        o.reads = crate::report::tests::counts(14_000, 875, 875);
        o.starved_rounds.clear();
        results.locktorture = vec![o];
        let markdown = document(&results).to_markdown();
        let row = markdown
            .lines()
            .find(|l| l.starts_with("| lock-a |"))
            .unwrap_or_else(|| panic!("{markdown}"));
        assert!(row.contains("| writers got none |"), "{row}");
    }

    #[test]
    fn ratio_to_best_gives_no_ratio_without_a_baseline() {
        assert_eq!(ratio_to_best(3.0, 2.0), "1.50x");
        assert_eq!(ratio_to_best(3.0, 0.0), "-");
        assert_eq!(ratio_to_best(0.0, 0.0), "-");
    }

    /// The quick-QS figures over three runs (two would make every median
    /// a mean): the mean of the run means, the median of the run p99s and
    /// of the run maxima, and the largest wait of all.
    #[test]
    fn quick_qs_takes_the_mean_of_means_and_the_median_of_maxima() {
        let runs = [
            quick_qs_run("rcu-lite", 1.0, 5.0, 10.0),
            quick_qs_run("rcu-lite", 2.0, 6.0, 20.0),
            quick_qs_run("rcu-lite", 9.0, 60.0, 90.0),
            quick_qs_run("other", 100.0, 100.0, 100.0),
        ];
        let side = QuickQsSide::of("rcu-lite", &runs).expect("three runs");
        assert_eq!((side.runs, side.waits), (3, 300));
        assert_eq!(side.mean, 4.0);
        assert_eq!(side.p99, 6.0);
        assert_eq!(side.run_max, 20.0);
        assert_eq!(side.max, 90.0);
        assert_eq!(side.fqs_per_gp, None);
    }

    /// The section states the settings the runs recorded, not this
    /// build's: a report rendered `--from` a run at another FQS interval or
    /// with other waits per run says what that run did.
    #[test]
    fn quick_qs_states_the_interval_and_waits_the_runs_recorded() {
        let mut results = crate::report::tests::sample();
        let md = crate::report::document(&results).to_markdown();
        assert!(md.contains("scans every 3 ms"), "{md}");
        assert!(
            md.contains("no readers, no idle registered thread (a run from before"),
            "{md}"
        );
        assert!(
            md.contains("each run is 100 `synchronize_rcu()` calls"),
            "{md}"
        );
        for run in &mut results.quick_qs {
            run.fqs_interval_ms = Some(5.0);
            run.gps = 40;
            run.idle_threads = 1;
        }
        let md = crate::report::document(&results).to_markdown();
        assert!(md.contains("scans every 5 ms"), "{md}");
        assert!(
            md.contains(
                "no readers, 1 idle registered thread (an idle system: its idle CPU), fixed"
            ),
            "{md}"
        );
        assert!(
            md.contains("each run is 40 `synchronize_rcu()` calls"),
            "{md}"
        );
    }

    /// The FQS waits per grace period add up over every run of a side,
    /// and the section gives them (a column, and what one and two waits
    /// mean) only where every side counted them.
    #[test]
    fn quick_qs_gives_fqs_waits_per_grace_period_where_counted() {
        let counted = |name: &str, max: f64, grace_periods: u64, fqs_waits: u64| {
            let mut run = quick_qs_run(name, 3000.0, 3100.0, max);
            run.fqs = Some(rcuscale::FqsCounts {
                grace_periods,
                fqs_waits,
            });
            run
        };
        let runs = [
            counted("rcu-lite", 3200.0, 100, 100),
            counted("rcu-lite-noqs", 6400.0, 100, 200),
            counted("rcu-lite", 6500.0, 100, 100),
            counted("rcu-lite-noqs", 6300.0, 100, 200),
        ];
        let side = QuickQsSide::of("rcu-lite-noqs", &runs).unwrap();
        assert_eq!(side.fqs_per_gp, Some(2.0));
        let mut results = crate::report::tests::sample();
        results.quick_qs = runs.to_vec();
        let md = crate::report::document(&results).to_markdown();
        assert!(
            md.contains("FQS waits per grace period |")
                && md.contains("| 6500 | 1.00 |")
                && md.contains("| 6400 | 2.00 |")
                && md.contains("is the timer or the scheduler waking"),
            "{md}"
        );
        // One extra wait in 200 grace periods: the figure says so, and the
        // section makes no claim about late wake-ups.
        results.quick_qs[2] = counted("rcu-lite", 6500.0, 100, 101);
        let md = crate::report::document(&results).to_markdown();
        assert!(md.contains("| 1.00 |") || md.contains("| 1.01 |"), "{md}");
        assert!(!md.contains("waking"), "{md}");
        // Results saved before the counts: the old table.
        results.quick_qs[0].fqs = None;
        let md = crate::report::document(&results).to_markdown();
        assert!(!md.contains("FQS waits per grace period |"), "{md}");
    }
}
