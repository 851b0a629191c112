//! The choosing table: for each use case, which primitive wins on this
//! machine, by how much, and what it costs elsewhere, computed from the
//! figures of one report run (never from constants).
//!
//! Each use case names the measurement that decides it, the contenders that
//! fit it, and whether lower or higher wins. A contender missing from the run
//! (an unavailable peer, a profile that skipped it) is left out of that row,
//! and so is one whose torture or locktorture run failed its checks, in any
//! row: a primitive that freed an object under a reader, let a writer in
//! beside a reader, hung or panicked is no one's pick, whatever else it
//! measured. The row names it and says why.
//!
//! # Ranking
//!
//! The leader is the contender with the best deciding figure. Every other
//! contender gets a margin: how many times better the leader is, paired turn
//! by turn where both ran in turns (the median of per-turn ratios), else the
//! ratio of the figures. A contender whose margin is under `stats::TIE_MARGIN`
//! as printed, to two decimals (`stats::under_tie_margin`), ties with the
//! leader, and so does one the pairs put ahead where the
//! figures put it behind (a margin under 1): the row then names them all as
//! winners. The tied contenders are a prefix of the order of figures: one
//! whose figure is better than a tied contender's ties too, whatever its own
//! margin (see `row`). Where the rounds are few and long (the waiting-writer row's
//! rcuscale rounds, the write-heavy lock row's locktorture rounds and the
//! bulk-freeing row's deferred-only torture rounds), a contender also ties
//! unless every paired round puts the leader ahead. Those rows rank on a
//! contender's median round; a run read back from before the report took
//! rounds has one run each, which counts as one round.
//!
//! The bulk-freeing row ranks on objects handed over per second, which on a
//! machine with fewer CPUs than threads also counts how much CPU time the
//! scheduler gave the writers. Its costs give the winner's writers' share
//! of the CPU time and their CPU time per object, and name the contender
//! whose objects cost the least CPU time (writers' and other threads'
//! together) when that is not the winner (see `cheapest_in_cpu`).

use super::{FailedRun, Results};
use crate::stats::under_tie_margin;
use serde::Serialize;

/// One row of the table.
#[derive(Clone, Debug, Serialize)]
pub struct Choice {
    /// The job, in a user's words.
    pub use_case: &'static str,
    /// The winner on this machine: the leader, whose figure and costs the
    /// row gives.
    pub winner: String,
    /// Contenders that tie with the winner (see the module's *Ranking*).
    pub tied_with: Vec<String>,
    /// The winner's deciding figure, with its unit.
    pub figure: String,
    /// The contenders tied with the winner, then the first one behind it,
    /// each with its figure and margin.
    pub runner_up: String,
    /// What the winner costs elsewhere (another measured figure).
    pub costs_elsewhere: String,
    /// The measurement that decided the row, and the contenders it left out.
    pub measured_by: String,
}

impl Choice {
    /// The winner, and any contenders tied with it, as the table shows them.
    pub fn winners(&self) -> String {
        if self.tied_with.is_empty() {
            self.winner.clone()
        } else {
            format!("{}, {} (a tie)", self.winner, self.tied_with.join(", "))
        }
    }
}

/// A contender's deciding figure.
struct Candidate {
    name: String,
    value: f64,
    /// Its runs or rounds, taken in turns with the other contenders' (a
    /// refscale figure's runs, an rcuscale, locktorture or deferred-only
    /// torture figure's rounds), so that the margin can pair them; empty
    /// otherwise.
    runs: Vec<f64>,
}

impl Candidate {
    fn new(name: impl Into<String>, value: f64) -> Candidate {
        Candidate {
            name: name.into(),
            value,
            runs: Vec::new(),
        }
    }
}

/// A contender measured in rounds taken in turns with the others': its
/// figure is the median round's, the lower middle one of an even count, as
/// in the locktorture and torture tables (`stats::median_index`), and the
/// margins pair its rounds.
fn in_rounds(name: &str, rounds: Vec<f64>) -> Candidate {
    Candidate {
        name: name.to_owned(),
        value: if rounds.is_empty() {
            f64::NAN
        } else {
            rounds[crate::stats::median_index(&rounds)]
        },
        runs: rounds,
    }
}

/// How a row measured in rounds ([`in_rounds`]) was decided, for
/// `measured_by`, from each contender's count of rounds.
fn rounds_note(counts: impl Iterator<Item = usize>) -> String {
    match counts.max().unwrap_or(1) {
        1 => "one run each, one contender after the other (a run from before the report took \
              rounds)"
            .to_owned(),
        n => format!(
            "median of {n} rounds taken in turns; a tie unless every round puts the winner ahead"
        ),
    }
}

/// How many times better the leader is than one other contender.
struct Margin {
    /// The median of the per-turn ratios where both ran in turns, else the
    /// ratio of the two figures; above 1 where the leader is better.
    ratio: f64,
    /// The smallest and largest per-turn ratio, where paired.
    turns: Option<(f64, f64)>,
    /// How many turns were paired (0 where none were).
    paired: usize,
    /// How many of those put the contender ahead (a ratio below 1).
    turns_lost: usize,
}

impl Margin {
    /// Whether the contender ties with the leader: a margin within the
    /// spread of repeated runs, or pairs that put it ahead; with
    /// `every_turn`, also any turn that did not put the leader ahead (one
    /// that put the contender ahead, or one the two tied: a ratio of 1).
    fn tie(&self, every_turn: bool) -> bool {
        under_tie_margin(self.ratio) || (every_turn && self.turns.is_some_and(|(lo, _)| lo <= 1.0))
    }
}

/// The per-turn ratios of `a`'s runs to `b`'s, where both have runs taken
/// in turns (as the report's read-side table gives its ratios).
fn turn_ratios(a: &Candidate, b: &Candidate) -> Option<Vec<f64>> {
    if b.runs.is_empty() || a.runs.len() != b.runs.len() {
        return None;
    }
    Some(
        a.runs
            .iter()
            .zip(&b.runs)
            .map(|(x, y)| ratio(*x, *y))
            .collect(),
    )
}

/// `a / b`, except that two equal figures (two zeros among them) are a
/// ratio of 1, not NaN: no round or figure is dropped from a range for
/// being 0/0, and a median of rounds is NaN for none (`stats::percentile`
/// takes an infinite middle round as it is). A non-zero figure against 0 is infinitely many
/// times the other, which [`better_by`] words.
fn ratio(a: f64, b: f64) -> f64 {
    if a == b { 1.0 } else { a / b }
}

/// "1.50x better", or, for a ratio against a figure of 0, "better outright"
/// rather than "infx better".
fn better_by(ratio: f64) -> String {
    if ratio.is_finite() {
        format!("{ratio:.2}x better")
    } else {
        "better outright (a figure of 0 against one above 0)".to_owned()
    }
}

/// `candidates` ranked: the leader, and every other contender with its
/// margin, in the order of their figures (the runner-up has the next best
/// figure, whatever its paired margin).
struct Ranking {
    leader: Candidate,
    others: Vec<(Candidate, Margin)>,
}

/// Ranks `candidates` (`lower` wins, or higher): the best figure leads, and
/// each other contender's margin pairs its runs with the leader's where both
/// ran in turns. The order never swaps on the pairs: where they disagree
/// with the figures, the margin is under 1 and [`Margin::tie`] says so.
fn rank(mut candidates: Vec<Candidate>, lower: bool) -> Option<Ranking> {
    candidates.retain(|c| c.value.is_finite());
    candidates.sort_by(|a, b| {
        if lower {
            a.value.total_cmp(&b.value)
        } else {
            b.value.total_cmp(&a.value)
        }
    });
    let mut it = candidates.into_iter();
    let leader = it.next()?;
    if !lower && leader.value <= 0.0 {
        // The best of a higher-wins figure is 0 (no contender got a write
        // in): nothing was measured to choose by. Until 2026-12-07 such a
        // row named every contender "a tie" at 1.00x (0/0 read as equal).
        return None;
    }
    let others: Vec<(Candidate, Margin)> = it
        .map(|c| {
            let paired = if lower {
                turn_ratios(&c, &leader)
            } else {
                turn_ratios(&leader, &c)
            };
            let margin = match paired {
                Some(ratios) => Margin {
                    paired: ratios.len(),
                    turns_lost: ratios.iter().filter(|&&r| r < 1.0).count(),
                    ratio: crate::stats::median(&ratios),
                    turns: Some((
                        ratios.iter().copied().fold(f64::INFINITY, f64::min),
                        ratios.iter().copied().fold(f64::NEG_INFINITY, f64::max),
                    )),
                },
                None => Margin {
                    ratio: if lower {
                        ratio(c.value, leader.value)
                    } else {
                        ratio(leader.value, c.value)
                    },
                    turns: None,
                    paired: 0,
                    turns_lost: 0,
                },
            };
            (c, margin)
        })
        .collect();
    Some(Ranking { leader, others })
}

fn refscale_ns(results: &Results, name: &str, threads: usize) -> Option<f64> {
    read_candidate(results, name, threads).map(|c| c.value)
}

/// A read-side contender's median and runs.
fn read_candidate(results: &Results, name: &str, threads: usize) -> Option<Candidate> {
    results
        .refscale
        .iter()
        .find(|o| o.name == name && o.threads == threads)
        .map(|o| Candidate {
            name: o.name.clone(),
            value: o.ns_per_op,
            runs: o.runs_ns.clone(),
        })
}

/// A lone writer's mean and p99 wait, with the fewest readers measured but
/// at least one: with none, liburcu's `synchronize_rcu()` skips its fence and
/// its scan (`docs/measuring.md`), so that wait waits for nobody.
fn wait_latency(results: &Results, name: &str) -> Option<(f64, f64)> {
    lone_writer(results, name).map(|o| (o.latency_us.mean, o.latency_us.p99))
}

/// The rcuscale run of one writer with the fewest readers measured, but at
/// least one (see [`wait_latency`]).
fn lone_writer<'a>(results: &'a Results, name: &str) -> Option<&'a crate::rcuscale::Outcome> {
    results
        .rcuscale
        .iter()
        .filter(|o| o.name == name && o.writers == 1 && o.readers >= 1 && o.idle_threads == 0)
        .min_by_key(|o| o.readers)
}

/// The torture or locktorture implementation that a contender of another
/// kind is: the lock of a read-side lock (`qrwlock-read` is `qrwlock`),
/// the memb flavor for rcuscale's `rcu-lite` (its writer calls
/// `memb::synchronize_rcu`), hazptr for `hazptr-unshared`.
pub(super) fn tortured_as(name: &str) -> &str {
    match name {
        "rcu-lite" | "rcu-lite-noqs" => "rcu-lite-memb",
        "hazptr-unshared" => "hazptr",
        _ => name.strip_suffix("-read").unwrap_or(name),
    }
}

/// The contenders of one row that are fit to rank, and a note for
/// `measured_by` on those left out.
struct Screened {
    kept: Vec<Candidate>,
    /// `name (run: why)` for each contender with a failed run.
    failed: Vec<String>,
}

/// Leaves out of `candidates` every contender with a failed torture or
/// locktorture run, in any mix (`failed`).
fn screen(candidates: Vec<Candidate>, failed: &[FailedRun]) -> Screened {
    let mut kept = Vec::new();
    let mut left_out = Vec::new();
    for c in candidates {
        let why: Vec<String> = failed
            .iter()
            .filter(|f| tortured_as(&f.name) == tortured_as(&c.name))
            .map(|f| format!("{}: {}", f.run, f.why))
            .collect();
        if why.is_empty() {
            kept.push(c);
        } else {
            left_out.push(format!("{} ({})", c.name, why.join("; ")));
        }
    }
    Screened {
        kept,
        failed: left_out,
    }
}

/// `measured_by`, naming the contenders left out because a run of theirs
/// failed its checks, and those this run could not measure.
fn with_left_out(measured_by: String, failed: &[String], unavailable: &[&str]) -> String {
    let mut out = measured_by;
    if !failed.is_empty() {
        out.push_str(&format!(
            "; left out for failing their checks: {}",
            failed.join(", ")
        ));
    }
    if !unavailable.is_empty() {
        out.push_str(&format!(
            "; not measured, unavailable in the build that ran (see above): {}",
            unavailable.join(", ")
        ));
    }
    out
}

/// The contenders of `kind` among `names` that the run could not measure.
fn unavailable<'a>(results: &'a Results, kind: &str, fits: impl Fn(&str) -> bool) -> Vec<&'a str> {
    let mut out: Vec<&str> = Vec::new();
    for u in &results.unavailable {
        if u.kind == kind && fits(&u.name) && !out.contains(&u.name.as_str()) {
            out.push(&u.name);
        }
    }
    out
}

/// How many read-side sections rcuscale's qsbr readers (`rcu-lite-qsbr`,
/// `liburcu-qsbr`) run between two quiescent states.
const QSBR_SECTIONS_PER_QS: usize = crate::rcuscale::QSBR_SECTIONS_PER_QS;

/// The rcuscale writer of a read-side contender (`rcu-lite-memb` writes as
/// `rcu-lite`); empty for one without.
fn rcuscale_writer_of(reader: &str) -> &'static str {
    POINTER_READERS
        .iter()
        .find(|(n, _)| *n == reader)
        .map_or("", |(_, w)| *w)
}

/// A read-side contender and the writer-side implementation that pairs with it.
const POINTER_READERS: &[(&str, &str)] = &[
    ("rcu-lite-memb", "rcu-lite"),
    ("rcu-lite-qsbr", "rcu-lite-qsbr"),
    ("hazptr", "hazptr"),
    ("liburcu-memb", "liburcu-memb"),
    ("liburcu-qsbr", "liburcu-qsbr"),
    ("crossbeam-epoch", "crossbeam-epoch"),
    ("seize", ""),
    ("haphazard", ""),
    ("arc-swap", ""),
];

/// How one contender behind or tied with the winner compares with it.
fn describe(c: &Candidate, m: &Margin, unit: &str, every_turn: bool) -> String {
    let figure = fmt_value(c.value, unit);
    // One round (a single run each, read back from before the report took
    // rounds) has no range to give.
    // The range is of the same ratio as the figure before it: the winner's
    // lead, or, where the pairs put the other contender ahead, its lead
    // (each round's inverted, so the range reads the same way as the figure).
    // A round of a figure of 0 against one above it is a lead "outright",
    // as in `better_by`, not "infx".
    let range = |lo: f64, hi: f64| match (lo.is_finite(), hi.is_finite()) {
        (true, true) => format!(", {lo:.2}-{hi:.2}x round by round"),
        (true, false) => format!(", from {lo:.2}x to outright round by round"),
        _ => ", outright in every round".to_owned(),
    };
    let turns = |invert: bool| match m.turns {
        Some((lo, hi)) if every_turn && m.paired > 1 => {
            if invert {
                range(1.0 / hi, 1.0 / lo)
            } else {
                range(lo, hi)
            }
        }
        _ => String::new(),
    };
    if m.ratio < 1.0 {
        format!(
            "{} ({figure}; a tie: the winner's figure is better, but paired turn by turn {} is \
             {}{})",
            c.name,
            c.name,
            better_by(1.0 / m.ratio),
            turns(true)
        )
    } else if under_tie_margin(m.ratio) {
        format!(
            "{} ({figure}; a tie: winner {:.2}x better{}, within the spread of repeated runs)",
            c.name,
            m.ratio,
            turns(false)
        )
    } else if m.tie(every_turn) {
        format!(
            "{} ({figure}; a tie: winner {} by the median round{}, but not in every round)",
            c.name,
            better_by(m.ratio),
            turns(false)
        )
    } else {
        // Where the margin is the median of paired turns and the row does
        // not give their range (the read-side rows), say how many turns
        // went the other way: a median lead of 1.19x can stand on seven
        // turns of which two put the contender ahead.
        let split = if !every_turn && m.turns_lost > 0 {
            format!(
                ", though {} of {} turns put {} ahead",
                m.turns_lost, m.paired, c.name
            )
        } else {
            String::new()
        };
        format!(
            "{} ({figure}; winner {}{}{split})",
            c.name,
            better_by(m.ratio),
            turns(false)
        )
    }
}

/// One row from `ranked`. With `every_turn`, a contender ties with the
/// winner unless every paired turn (a round) puts the winner ahead, and
/// each margin gives the range of the per-turn ratios where there are
/// several.
fn row(
    use_case: &'static str,
    measured_by: String,
    unit: &str,
    ranked: Option<Ranking>,
    every_turn: bool,
    costs: impl Fn(&str) -> String,
) -> Option<Choice> {
    let Ranking { leader, others } = ranked?;
    // The tied contenders are a prefix of the order of figures: one whose
    // figure is better than a tied contender's ties too, even where its own
    // margin alone would not (the pairs decide the margins, the figures
    // the order, and the two can disagree near the threshold).
    let last_tie = others.iter().rposition(|(_, m)| m.tie(every_turn));
    let (tied, behind) = others.split_at(last_tie.map_or(0, |i| i + 1));
    let mut parts: Vec<String> = tied
        .iter()
        .map(|(c, m)| {
            let described = describe(c, m, unit, every_turn);
            match last_tie {
                Some(i) if !m.tie(every_turn) => {
                    let (through, _) = &others[i];
                    format!(
                        "{}; a tie all the same: its figure is better than that of {}, which \
                         ties)",
                        described.strip_suffix(')').unwrap_or(&described),
                        through.name
                    )
                }
                _ => described,
            }
        })
        .collect();
    if let Some((c, m)) = behind.first() {
        let next = describe(c, m, unit, every_turn);
        parts.push(if tied.is_empty() {
            next
        } else {
            format!("next {next}")
        });
    }
    let runner_up = if parts.is_empty() {
        "none measured".to_owned()
    } else {
        parts.join("; ")
    };
    Some(Choice {
        use_case,
        figure: fmt_value(leader.value, unit),
        costs_elsewhere: costs(&leader.name),
        tied_with: tied.iter().map(|(c, _)| c.name.clone()).collect(),
        winner: leader.name,
        runner_up,
        measured_by,
    })
}

fn fmt_value(v: f64, unit: &str) -> String {
    // The value as shown with `places` decimals decides the format, so that a
    // rounding carry (99.996 as "100.00", 999,999.6 as "1000000") takes the
    // next format as the value itself would.
    let shown = |places: usize| -> f64 {
        format!("{v:.places$}")
            .parse()
            .expect("a formatted number parses")
    };
    if unit.ends_with("/s") && shown(0) >= 1e6 {
        format!("{:.2} M{unit}", v / 1e6)
    } else if unit == "objects" || shown(2) >= 100.0 {
        // A count of objects is whole: "30 objects", not "30.00 objects".
        format!("{v:.0} {unit}")
    } else {
        format!("{v:.2} {unit}")
    }
}

/// The settings the bench runs only to show what a feature buys (rcu-lite
/// without quick QS, hazptr without the shared scan): not contenders.
const FEATURE_SETTINGS: [&str; 2] = ["rcu-lite-noqs", "hazptr-unshared"];

/// The reader-thread count the read-side rows go by: the most the run
/// measured that the machine's CPUs hold (two at least, so that a 1-CPU run
/// still shows readers sharing the primitive), else the fewest measured. On
/// 2 CPUs that is 2; on 16, the full profile's 8 readers, whose contention
/// a 2-reader figure would not show.
fn read_side_threads(results: &Results) -> usize {
    let fits = results.machine.cores.max(2);
    let counts = || results.refscale.iter().map(|o| o.threads);
    counts()
        .filter(|&t| t <= fits)
        .max()
        .or_else(|| counts().min())
        .unwrap_or(1)
}

/// The table for `results`.
pub fn table(results: &Results) -> Vec<Choice> {
    let threads = read_side_threads(results);
    let failed = results.failed_runs();
    let mut rows = Vec::new();

    // 1. A read-mostly shared pointer that is swapped rarely: read-side cost.
    let pointers = screen(
        POINTER_READERS
            .iter()
            .filter_map(|(n, _)| read_candidate(results, n, threads))
            .collect(),
        &failed,
    );
    rows.extend(row(
        "read-mostly shared pointer, swapped rarely",
        with_left_out(
            format!("refscale, {threads} reader thread(s), ns per read-side section"),
            &pointers.failed,
            &unavailable(results, "refscale", |n| {
                POINTER_READERS.iter().any(|(p, _)| *p == n)
            }),
        ),
        "ns/read",
        rank(pointers.kept, true),
        false,
        |winner| {
            let writer = rcuscale_writer_of(winner);
            let wait = wait_latency(results, writer);
            if winner.ends_with("qsbr") {
                if let Some((mean, p99)) = wait {
                    return format!(
                        "a writer waiting for readers ({writer}) takes {mean:.1} us mean, \
                         {p99:.1} us p99, its readers announcing a quiescent state every \
                         {QSBR_SECTIONS_PER_QS} sections; every reader thread must announce \
                         quiescent states"
                    );
                }
                // Results from before rcuscale measured qsbr writers: a qsbr
                // writer waits for quiescent states, so the memb flavor's
                // figure is not its cost.
                let memb_writer = rcuscale_writer_of(&winner.replace("qsbr", "memb"));
                let memb = match wait_latency(results, memb_writer) {
                    Some((mean, p99)) => format!(
                        " (the memb flavor's, {memb_writer}: {mean:.1} us mean, {p99:.1} us p99)"
                    ),
                    None => String::new(),
                };
                return format!(
                    "a qsbr writer's wait for readers is not measured{memb}; every reader \
                     thread must announce quiescent states"
                );
            }
            match wait {
                Some((mean, p99)) => {
                    format!("a writer waiting for readers ({writer}) takes {mean:.1} us mean, {p99:.1} us p99")
                }
                None => "writer-side wait not measured".into(),
            }
        },
    ));

    // 2. Per-object protection with bounded memory: memory held back when
    //    every writer only retires. (In the mixed torture run hazptr's writers
    //    synchronize and free half their objects at once, which the peers
    //    cannot: fewer objects wait there, for a different reason.)
    const BOUNDED: [&str; 2] = ["hazptr", "haphazard"];
    let bounded = screen(
        BOUNDED
            .iter()
            .filter_map(|n| {
                let o = results.deferred_free.iter().find(|o| o.name == *n)?;
                Some(Candidate::new(*n, o.unreclaimed_max as f64))
            })
            .collect(),
        &failed,
    );
    let unbounded = results
        .deferred_free
        .iter()
        .filter(|o| {
            !BOUNDED.contains(&o.name.as_str())
                && !failed
                    .iter()
                    .any(|f| tortured_as(&f.name) == tortured_as(&o.name))
        })
        .max_by_key(|o| o.unreclaimed_max);
    rows.extend(row(
        "per-object protection with bounded memory",
        with_left_out(
            "torture with deferred reclamation only: most objects retired but not yet freed at \
             once (hazard-pointer schemes bound it)"
                .into(),
            &bounded.failed,
            &unavailable(results, "torture", |n| BOUNDED.contains(&n)),
        ),
        "objects",
        rank(bounded.kept, true),
        false,
        |winner| {
            let read = refscale_ns(results, winner, 1)
                .map_or("read cost not measured".into(), |ns| {
                    format!("1-thread reads cost {ns:.2} ns")
                });
            match unbounded {
                Some(u) => format!(
                    "{read}; for comparison {} held back up to {} objects",
                    u.name, u.unreclaimed_max
                ),
                None => read,
            }
        },
    ));

    // 3. A read-mostly lock over a large struct: read lock cost at `threads`
    //    readers (2, or 1 where only 1 was measured: readers sharing the
    //    lock word), as the other read-side rows.
    let locks = ["qrwlock-read", "parking_lot-read", "std-read"];
    let read_locks = screen(
        locks
            .iter()
            .filter_map(|n| read_candidate(results, n, threads))
            .collect(),
        &failed,
    );
    rows.extend(row(
        "read-mostly lock over a large struct",
        with_left_out(
            format!("refscale, {threads} reader thread(s), ns per read lock + unlock"),
            &read_locks.failed,
            &unavailable(results, "refscale", |n| locks.contains(&n)),
        ),
        "ns/read",
        rank(read_locks.kept, true),
        false,
        |winner| {
            // The winner passed every locktorture run: a lock with a failed
            // one was left out above, so this quotes a run that passed.
            let lock = tortured_as(winner);
            match results
                .locktorture
                .iter()
                .filter(|o| o.lock == lock)
                .max_by_key(|o| o.writers + o.readers)
            {
                Some(o) => {
                    // Every round's verdict, not the median round's alone:
                    // a short round flags a side or not by chance.
                    let rounds = o.starved_by_round();
                    let starving = rounds.iter().filter(|s| s.any()).count();
                    format!(
                        "under contention ({}w/{}r) {}{}",
                        o.writers,
                        o.readers,
                        o.writer_share().map_or_else(
                            || "the readers got no acquisition".to_owned(),
                            |share| format!("writers get {share:.3} of a reader's share")
                        ),
                        match (starving, rounds.len()) {
                            (0, _) => String::new(),
                            (_, 1) => ", some threads starved".to_owned(),
                            (k, n) => format!(", some threads starved in {k} of {n} rounds"),
                        }
                    )
                }
                None => "contention not measured".into(),
            }
        },
    ));

    // 4. A write-heavy lock: writer acquisitions per second in the mix with
    //    the most writers per reader.
    if let Some(mix) = results
        .locktorture
        .iter()
        .map(|o| (o.writers, o.readers))
        .filter(|(w, _)| *w > 0)
        .max_by(|a, b| {
            (a.0 as f64 / (a.1 as f64 + 1.0)).total_cmp(&(b.0 as f64 / (b.1 as f64 + 1.0)))
        })
    {
        // Ranked by the median round, paired round by round: a single run
        // each decided nothing (in ten alternated 2 s runs of 4w/1r qrwlock
        // and parking_lot each won five). The rounds are few, so a
        // contender ties unless every round puts the leader ahead.
        let mixed: Vec<&crate::locktorture::Outcome> = results
            .locktorture
            .iter()
            .filter(|o| (o.writers, o.readers) == mix)
            .collect();
        let writers = screen(
            mixed
                .iter()
                .map(|o| in_rounds(&o.lock, o.writes_per_s_by_round()))
                .collect(),
            &failed,
        );
        rows.extend(row(
            "write-heavy lock",
            with_left_out(
                format!(
                    "locktorture {}w/{}r: writer acquisitions per second, {}",
                    mix.0,
                    mix.1,
                    rounds_note(mixed.iter().map(|o| o.writes_per_s_by_round().len()))
                ),
                &writers.failed,
                &unavailable(results, "locktorture", |_| true),
            ),
            "writes/s",
            rank(writers.kept, false),
            true,
            |winner| match results
                .locktorture
                .iter()
                .find(|o| o.lock == winner && (o.writers, o.readers) == mix)
            {
                Some(o) if o.readers > 0 => {
                    // Every round's verdict, as the read-lock row gives it.
                    let rounds = o.starved_by_round();
                    let starving = rounds.iter().filter(|s| s.readers).count();
                    format!(
                        "its readers got {:.0} acquisitions/s per thread{}",
                        o.reads.per_thread(o.readers) / o.duration_s,
                        match (starving, rounds.len()) {
                            (0, _) => String::new(),
                            (_, 1) => " (some starved)".to_owned(),
                            (k, n) => format!(" (some starved in {k} of {n} rounds)"),
                        }
                    )
                }
                _ => "readers not measured".into(),
            },
        ));
    }

    // 5. A writer that must wait for readers with low latency.
    let mut waiters: Vec<&str> = Vec::new();
    for o in &results.rcuscale {
        if !waiters.contains(&o.name.as_str()) && !FEATURE_SETTINGS.contains(&o.name.as_str()) {
            waiters.push(&o.name);
        }
    }
    // Ranked by the lone writer's time per grace period (its mean wait plus
    // its replace), round by round: the rounds ran in turns, so the margin
    // pairs them, and one round's preemptions (a mean wait pooled over
    // every round is decided by a few multi-millisecond ones) move one
    // round's figure only. Three rounds of 0.4 s are few: a contender ties
    // with the leader unless every round puts the leader ahead.
    let waiting = screen(
        waiters
            .iter()
            .filter_map(|n| {
                let o = lone_writer(results, n)?;
                Some(Candidate {
                    name: o.name.clone(),
                    value: o.per_gp_us,
                    runs: o.per_gp_rounds_us.clone(),
                })
            })
            .collect(),
        &failed,
    );
    rows.extend(row(
        "writer that must wait for readers, with low latency",
        with_left_out(
            "rcuscale, 1 writer and the fewest readers measured (at least 1): time per grace \
             period (the writer's mean wait, its replace included), median of rounds taken in \
             turns; a tie unless every round puts the winner ahead"
                .into(),
            &waiting.failed,
            &unavailable(results, "rcuscale", |n| !FEATURE_SETTINGS.contains(&n)),
        ),
        "us",
        rank(waiting.kept, true),
        true,
        |winner| {
            let per_gp = results
                .rcuscale
                .iter()
                .filter(|o| o.name == winner && o.idle_threads == 0)
                .max_by_key(|o| o.writers)
                .map(|o| {
                    // Per-GP time is throughput: writers that sleep for
                    // milliseconds now and then leave the others to wait
                    // less, which the time-weighted median shows.
                    let long = o.latency_us.time_weighted_p50.map_or(String::new(), |t| {
                        format!(" (half their waiting time in waits of {t:.1} us or longer)")
                    });
                    // Per-GP time is the run's time over every writer's
                    // waits: with concurrent writers, waits that share a
                    // grace period share its time, so it is how often a
                    // wait completed, not how long one lasted or how far
                    // apart the grace periods were.
                    format!(
                        "with {} concurrent writers and {} reader(s), a wait completed every \
                         {:.2} us (per-GP time, all writers together), each lasting {:.1} us \
                         mean{long}",
                        o.writers, o.readers, o.per_gp_us, o.latency_us.mean
                    )
                });
            let wait = wait_latency(results, winner)
                .map(|(mean, p99)| format!("wait {mean:.1} us mean, {p99:.1} us p99"));
            let qsbr = winner.ends_with("qsbr").then(|| {
                format!(
                    "its readers announced a quiescent state every {QSBR_SECTIONS_PER_QS} \
                     sections, as every qsbr reader thread must"
                )
            });
            [wait, per_gp, qsbr]
                .into_iter()
                .flatten()
                .collect::<Vec<_>>()
                .join("; ")
        },
    ));

    // 6. Small Copy data: reading one word, through something that replaces
    //    the value safely. Left out: the qsbr flavors (every reader thread
    //    must announce quiescent states), liburcu (C, through FFI), and the
    //    reclamation schemes whose users free a replaced value through an
    //    unsafe call (crossbeam-epoch's `defer_destroy`, haphazard's
    //    `retire`, seize's `retire`).
    let small = [
        "seqlock",
        "arc-swap",
        "rcu-lite-memb",
        "hazptr",
        "qrwlock-read",
        "parking_lot-read",
        "std-read",
    ];
    let copies = screen(
        small
            .iter()
            .filter_map(|n| read_candidate(results, n, threads))
            .collect(),
        &failed,
    );
    rows.extend(row(
        "small Copy data (one word)",
        with_left_out(
            format!(
                "refscale, {threads} reader thread(s), ns per read of a u64; not contenders: \
                 rcu-lite-qsbr and liburcu-qsbr (every reader thread must announce quiescent \
                 states), liburcu-memb (a C library, reached through FFI), crossbeam-epoch, \
                 haphazard and seize (replacing a value frees the old one through an unsafe \
                 call)"
            ),
            &copies.failed,
            &unavailable(results, "refscale", |n| small.contains(&n)),
        ),
        "ns/read",
        rank(copies.kept, true),
        false,
        |winner| {
            let read = format!(
                "1-thread read {:.2} ns",
                refscale_ns(results, winner, 1).unwrap_or(f64::NAN)
            );
            if winner == "seqlock" {
                // What it costs besides its reads is not measured here (the
                // report times no seqlock writer): said as such, beside
                // the figure.
                format!(
                    "{read}; not measured here: readers retry while a write is in progress, \
                     and writers serialize on a spin lock"
                )
            } else {
                read
            }
        },
    ));

    // 7. Freeing in bulk from a background thread: objects handed to deferred
    //    reclamation per second, writers never waiting for readers.
    //    Ranked by the median round, paired round by round, a tie unless
    //    every round agrees: single runs' rates moved more than 2x between
    //    reference runs.
    let bulk = screen(
        results
            .deferred_free
            .iter()
            .map(|o| in_rounds(&o.name, o.replaced_per_s_by_round()))
            .collect(),
        &failed,
    );
    rows.extend(row(
        "freeing in bulk from a background thread",
        with_left_out(
            format!(
                "torture with deferred reclamation only: objects replaced and handed to deferred \
                 reclamation per second (handed over, not yet freed: see what it held back), {}",
                rounds_note(
                    results
                        .deferred_free
                        .iter()
                        .map(|o| o.replaced_per_s_by_round().len())
                )
            ),
            &bulk.failed,
            &unavailable(results, "torture", |_| true),
        ),
        "objects/s",
        rank(bulk.kept, false),
        true,
        |winner| {
            match results.deferred_free.iter().find(|o| o.name == winner) {
            Some(o) => {
                let held = format!("held back up to {} unreclaimed objects", o.unreclaimed_max);
                match (o.writers_cpu_share(), o.writer_cpu_ns_per_replaced()) {
                    (Some(share), Some(ns)) => format!(
                        "{held}; its writers had {:.0}% of the run's CPU time and used {ns:.0} ns \
                         of it per object{}",
                        share * 100.0,
                        o.others_cpu_ns_per_replaced()
                            .filter(|&others| others >= 0.5)
                            .map_or(String::new(), |others| format!(
                                " (other threads {others:.0} ns more)"
                            ))
                    ),
                    _ => held,
                }
            }
            None => String::new(),
        }
        .to_string()
            + &cheapest_in_cpu(results, &failed, winner)
        },
    ));
    rows
}

/// `; cheapest per object in writers' and background CPU time: NAME, X ns (NEXT Y ns next)`: the
/// deferred-only contender (none that failed) whose objects cost the least
/// CPU time each, writers' and other threads' together, and the one after
/// it, for a reader to see how close the two are. Empty if the cheapest is
/// `winner` (whose own figures the row gives) or no contender's CPU time
/// was measured.
fn cheapest_in_cpu(results: &Results, failed: &[FailedRun], winner: &str) -> String {
    let cost = |o: &crate::torture::Outcome| {
        Some(o.writer_cpu_ns_per_replaced()? + o.others_cpu_ns_per_replaced().unwrap_or(0.0))
    };
    let mut costs: Vec<(&str, f64)> = results
        .deferred_free
        .iter()
        .filter(|o| {
            !o.failed()
                && !failed
                    .iter()
                    .any(|f| tortured_as(&f.name) == tortured_as(&o.name))
        })
        .filter_map(|o| Some((o.name.as_str(), cost(o)?)))
        .collect();
    costs.sort_by(|a, b| a.1.total_cmp(&b.1));
    match costs.as_slice() {
        [(cheapest, _), ..] if *cheapest == winner => String::new(),
        [] => String::new(),
        [(cheapest, ns)] => format!(
            "; cheapest per object in writers' and background CPU time: {cheapest}, {ns:.0} ns"
        ),
        [(cheapest, ns), (next, next_ns), ..] => format!(
            "; cheapest per object in writers' and background CPU time: {cheapest}, {ns:.0} ns ({next} {next_ns:.0} ns next)"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::tests::{counts, sample};
    use crate::{locktorture, rcuscale, refscale, torture};

    fn read(name: &str, threads: usize, ns: f64) -> refscale::Outcome {
        refscale::Outcome {
            name: name.into(),
            threads,
            ns_per_op: ns,
            iterations: 1,
            runs_ns: vec![ns],
        }
    }

    fn wait(name: &str, writers: usize, mean: f64) -> rcuscale::Outcome {
        rcuscale::Outcome {
            name: name.into(),
            writers,
            readers: 1,
            idle_threads: 0,
            gps: 10,
            per_gp_us: mean / writers as f64,
            latency_us: rcuscale::Latency {
                mean,
                p50: mean,
                p99: mean * 2.0,
                max: mean * 3.0,
                time_weighted_p50: Some(mean * 2.5),
            },
            reads: 1,
            duration_s: 1.0,
            per_gp_rounds_us: vec![mean / writers as f64],
            fqs_interval_ms: None,
            fqs: None,
            cpu: None,
            timed_with_every_reader_in: true,
        }
    }

    /// A 2-thread read-side contender whose runs were taken in turns.
    fn read_in_turns(name: &str, runs_ns: Vec<f64>) -> refscale::Outcome {
        refscale::Outcome {
            ns_per_op: crate::stats::median(&runs_ns),
            runs_ns,
            ..read(name, 2, 0.0)
        }
    }

    fn pointer_row(rows: &[Choice]) -> &Choice {
        rows.iter()
            .find(|c| c.use_case.starts_with("read-mostly shared pointer"))
            .expect("the shared-pointer row")
    }

    fn waiter_row(rows: &[Choice]) -> &Choice {
        rows.iter()
            .find(|c| c.use_case.starts_with("writer that must wait"))
            .expect("the waiting-writer row")
    }

    fn tortured(name: &str, replaced: u64, unreclaimed_max: u64) -> torture::Outcome {
        torture::Outcome {
            name: name.into(),
            readers: 4,
            writers: 2,
            slow_path: false,
            deferred_only: false,
            duration_s: 2.0,
            reads: 1,
            replaced,
            errors: 0,
            unreclaimed_max,
            unreclaimed_halves: [unreclaimed_max, unreclaimed_max],
            write_max_ms: 1.0,
            rss_max_kib: None,
            faults: None,
            failure: None,
            replaced_per_s_rounds: Vec::new(),
            cpu: None,
        }
    }

    fn lock(name: &str, writers: usize, readers: usize, writes: u64) -> locktorture::Outcome {
        locktorture::Outcome {
            lock: name.into(),
            writers,
            readers,
            duration_s: 2.0,
            writes: counts(writes, writes, writes),
            reads: counts(100, 50, 50),
            writes_served_per_ms: None,
            reads_served_per_ms: None,
            fail: 0,
            write_fail: 0,
            read_fail: 0,
            faults: None,
            failure: None,
            writes_per_s_rounds: Vec::new(),
            starved_rounds: Vec::new(),
        }
    }

    /// The read-lock row's note on starvation counts the rounds that
    /// flagged it: the median round alone says "starved" or not by chance
    /// when a round lasts well under a second.
    #[test]
    fn the_read_lock_row_counts_the_rounds_that_starved() {
        let mut r = sample();
        r.refscale = vec![
            read("qrwlock-read", 2, 4.0),
            read("parking_lot-read", 2, 5.0),
        ];
        let starving = |writes: u64| locktorture::Outcome {
            reads: counts(100, 50, 20),
            ..lock("qrwlock", 4, 16, writes)
        };
        // Rounds of 900, 1000 and 1100 writes: the median one (the second)
        // starved no side, the third starved readers.
        let merged = locktorture::merge_rounds(vec![
            lock("qrwlock", 4, 16, 900),
            lock("qrwlock", 4, 16, 1000),
            starving(1100),
        ]);
        r.locktorture = vec![merged];
        let note = |r: &Results| {
            table(r)
                .into_iter()
                .find(|c| c.use_case.starts_with("read-mostly lock"))
                .unwrap()
                .costs_elsewhere
        };
        assert!(
            note(&r).ends_with("of a reader's share, some threads starved in 1 of 3 rounds"),
            "{}",
            note(&r)
        );
        // A run from before the report took rounds is its own one round.
        r.locktorture = vec![starving(1000)];
        assert!(
            note(&r).ends_with("share, some threads starved"),
            "{}",
            note(&r)
        );
        r.locktorture = vec![lock("qrwlock", 4, 16, 1000)];
        assert!(note(&r).ends_with("of a reader's share"), "{}", note(&r));
    }

    /// The write-heavy row's note on starved readers counts the rounds
    /// that flagged them, not the median round's verdict alone.
    #[test]
    fn the_write_heavy_row_counts_the_rounds_whose_readers_starved() {
        let mut r = sample();
        let with_readers = |writes: u64, min_reads: u64| locktorture::Outcome {
            reads: counts(100, 50, min_reads),
            ..lock("qrwlock", 4, 2, writes)
        };
        // The median round (1000 writes) starved no reader; the last did.
        r.locktorture = vec![locktorture::merge_rounds(vec![
            with_readers(900, 50),
            with_readers(1000, 50),
            with_readers(1100, 20),
        ])];
        let costs = row_of(&table(&r), "write-heavy lock")
            .costs_elsewhere
            .clone();
        assert!(
            costs.ends_with("per thread (some starved in 1 of 3 rounds)"),
            "{costs}"
        );
        r.locktorture = vec![with_readers(1000, 20)];
        let costs = row_of(&table(&r), "write-heavy lock")
            .costs_elsewhere
            .clone();
        assert!(costs.ends_with("per thread (some starved)"), "{costs}");
    }

    #[test]
    fn each_use_case_is_decided_by_its_figures() {
        let mut r = sample();
        r.refscale = vec![
            read("rcu-lite-memb", 2, 1.0),
            read("hazptr", 2, 1.5),
            read("crossbeam-epoch", 2, 3.0),
            read("seqlock", 2, 0.5),
            read("qrwlock-read", 2, 4.0),
            read("parking_lot-read", 2, 5.0),
            read("hazptr", 1, 1.2),
            read("seqlock", 1, 0.4),
        ];
        r.rcuscale = vec![
            wait("rcu-lite", 1, 8.0),
            wait("hazptr", 1, 20.0),
            wait("rcu-lite", 16, 40.0),
        ];
        // The mixed run would pick haphazard; the bounded-memory row must
        // go by the run where every writer only retires.
        r.torture = vec![
            tortured("hazptr", 1000, 90),
            tortured("haphazard", 400, 40),
            tortured("crossbeam-epoch", 2000, 7000),
        ];
        r.deferred_free = vec![
            tortured("hazptr", 3000, 60),
            tortured("haphazard", 2500, 80),
            tortured("crossbeam-epoch", 2000, 9000),
        ];
        r.locktorture = vec![
            lock("qrwlock", 4, 1, 900),
            lock("parking_lot", 4, 1, 1200),
            lock("qrwlock", 1, 1, 10),
        ];
        let rows = table(&r);
        let get = |use_case: &str| {
            rows.iter()
                .find(|c| c.use_case.starts_with(use_case))
                .unwrap()
        };

        let pointer = get("read-mostly shared pointer");
        assert_eq!(pointer.winner, "rcu-lite-memb");
        assert_eq!(pointer.figure, "1.00 ns/read");
        assert!(
            pointer
                .runner_up
                .starts_with("hazptr (1.50 ns/read; winner 1.50x better)"),
            "{pointer:?}"
        );
        assert!(
            pointer.costs_elsewhere.contains("rcu-lite")
                && pointer.costs_elsewhere.contains("8.0 us mean")
        );

        let bounded = get("per-object protection");
        assert_eq!(bounded.winner, "hazptr");
        assert!(
            bounded
                .costs_elsewhere
                .contains("crossbeam-epoch held back up to 9000"),
            "{bounded:?}"
        );

        assert_eq!(get("read-mostly lock").winner, "qrwlock-read");
        let write_heavy = get("write-heavy lock");
        assert_eq!(write_heavy.winner, "parking_lot");
        assert!(write_heavy.measured_by.contains("4w/1r"), "{write_heavy:?}");
        assert_eq!(get("writer that must wait").winner, "rcu-lite");
        assert!(
            get("writer that must wait")
                .costs_elsewhere
                .contains("with 16 concurrent writers")
        );
        let small = get("small Copy data");
        assert_eq!(small.winner, "seqlock");
        // A measured figure first, and what is not measured said so.
        assert!(
            small
                .costs_elsewhere
                .starts_with("1-thread read 0.40 ns; not measured here: "),
            "{small:?}"
        );
        assert_eq!(get("freeing in bulk").winner, "hazptr");
        assert!(
            get("freeing in bulk")
                .costs_elsewhere
                .contains("60 unreclaimed")
        );
        assert_eq!(rows.len(), 7);
    }

    #[test]
    fn a_qsbr_winner_is_not_given_the_memb_writers_cost() {
        let mut r = sample();
        r.refscale = vec![read("rcu-lite-qsbr", 2, 0.3), read("rcu-lite-memb", 2, 1.0)];
        r.rcuscale = vec![wait("rcu-lite", 1, 8.0)];
        let rows = table(&r);
        let pointer = pointer_row(&rows);
        assert_eq!(pointer.winner, "rcu-lite-qsbr");
        assert!(
            pointer.costs_elsewhere.starts_with(
                "a qsbr writer's wait for readers is not measured (the memb flavor's, rcu-lite: 8.0 us mean"
            ) && pointer.costs_elsewhere.ends_with("must announce quiescent states"),
            "{}",
            pointer.costs_elsewhere
        );
    }

    /// With a qsbr writer measured, the qsbr winner gets its own flavor's
    /// wait, and a qsbr winner of the waiting-writer row says how often its
    /// readers announced quiescent states.
    #[test]
    fn a_qsbr_winner_is_given_its_own_writers_cost() {
        let mut r = sample();
        r.refscale = vec![read("liburcu-qsbr", 2, 0.3), read("rcu-lite-memb", 2, 1.0)];
        r.rcuscale = vec![
            wait("rcu-lite", 1, 8.0),
            wait("liburcu-qsbr", 1, 0.5),
            wait("liburcu-memb", 1, 9.0),
        ];
        let rows = table(&r);
        let pointer = pointer_row(&rows);
        assert_eq!(pointer.winner, "liburcu-qsbr");
        assert!(
            pointer.costs_elsewhere.starts_with(
                "a writer waiting for readers (liburcu-qsbr) takes 0.5 us mean, 1.0 us p99, its \
                 readers announcing a quiescent state every 64 sections"
            ),
            "{}",
            pointer.costs_elsewhere
        );
        let waiter = rows
            .iter()
            .find(|c| c.use_case.starts_with("writer that must wait"))
            .unwrap();
        assert_eq!(waiter.winner, "liburcu-qsbr");
        assert!(
            waiter
                .costs_elsewhere
                .ends_with("its readers announced a quiescent state every 64 sections, as every qsbr reader thread must"),
            "{}",
            waiter.costs_elsewhere
        );
    }

    /// Results from before rcuscale measured qsbr writers: liburcu-qsbr's
    /// readers are given liburcu-memb's wait as the memb flavor's.
    #[test]
    fn an_unmeasured_liburcu_qsbr_writer_names_liburcu_memb() {
        let mut r = sample();
        r.refscale = vec![read("liburcu-qsbr", 2, 0.3), read("rcu-lite-memb", 2, 1.0)];
        r.rcuscale = vec![wait("rcu-lite", 1, 8.0), wait("liburcu-memb", 1, 9.0)];
        let rows = table(&r);
        let pointer = pointer_row(&rows);
        assert!(
            pointer.costs_elsewhere.starts_with(
                "a qsbr writer's wait for readers is not measured (the memb flavor's, \
                 liburcu-memb: 9.0 us mean"
            ),
            "{}",
            pointer.costs_elsewhere
        );
    }

    #[test]
    fn read_side_margins_pair_the_runs_of_one_turn() {
        let mut r = sample();
        // Turn 3 was slow for both; turn 2 for the runner-up alone. By
        // medians the margin would be 4.0x; paired, 2.0x.
        r.refscale = vec![
            read_in_turns("rcu-lite-memb", vec![1.0, 1.0, 2.0]),
            read_in_turns("hazptr", vec![2.0, 4.0, 4.0]),
        ];
        let rows = table(&r);
        let pointer = pointer_row(&rows);
        assert_eq!(pointer.winner, "rcu-lite-memb");
        assert!(
            pointer.runner_up.contains("winner 2.00x better"),
            "{}",
            pointer.runner_up
        );
    }

    #[test]
    fn contenders_that_failed_their_checks_are_not_picked() {
        let mut r = sample();
        let mut broken = tortured("hazptr", 9000, 10);
        broken.errors = 3;
        r.deferred_free = vec![broken, tortured("haphazard", 2500, 80)];
        let mut failing = lock("parking_lot", 4, 1, 5000);
        failing.fail = 1;
        r.locktorture = vec![lock("qrwlock", 4, 1, 900), failing];
        let rows = table(&r);
        let get = |use_case: &str| {
            rows.iter()
                .find(|c| c.use_case.starts_with(use_case))
                .unwrap()
        };
        for (use_case, winner, left_out) in [
            ("per-object protection", "haphazard", "hazptr"),
            ("freeing in bulk", "haphazard", "hazptr"),
            ("write-heavy lock", "qrwlock", "parking_lot"),
        ] {
            let row = get(use_case);
            assert_eq!(row.winner, winner, "{row:?}");
            assert!(
                row.measured_by
                    .contains(&format!("left out for failing their checks: {left_out} (")),
                "{row:?}"
            );
        }
    }

    /// The read-side rows go by the most reader threads the CPUs hold: 2 of
    /// 1, 2 and 8 measured on 2 CPUs (8 would be oversubscribed), 8 on 16.
    #[test]
    fn the_read_side_rows_use_the_most_readers_the_cpus_hold() {
        let mut r = sample();
        r.refscale = vec![
            read("rcu-lite-memb", 1, 1.0),
            read("rcu-lite-memb", 2, 2.0),
            read("rcu-lite-memb", 8, 8.0),
            read("hazptr", 1, 1.5),
            read("hazptr", 2, 2.5),
            read("hazptr", 8, 4.0),
        ];
        for (cores, readers, winner) in [(2, 2, "rcu-lite-memb"), (16, 8, "hazptr")] {
            r.machine.cores = cores;
            assert_eq!(read_side_threads(&r), readers, "{cores} CPUs");
            let rows = table(&r);
            let pointer = pointer_row(&rows);
            assert!(
                pointer
                    .measured_by
                    .contains(&format!("{readers} reader thread(s)")),
                "{pointer:?}"
            );
            assert_eq!(pointer.winner, winner, "{pointer:?}");
        }
        // One CPU: still 2 readers; only more than any count: the fewest.
        r.machine.cores = 1;
        assert_eq!(read_side_threads(&r), 2);
        r.refscale.retain(|o| o.threads == 8);
        assert_eq!(read_side_threads(&r), 8);
    }

    #[test]
    fn a_margin_within_the_spread_of_runs_is_a_tie() {
        let mut r = sample();
        r.refscale = vec![read("rcu-lite-memb", 2, 1.0), read("hazptr", 2, 1.05)];
        let rows = table(&r);
        let pointer = pointer_row(&rows);
        assert!(
            pointer.runner_up.contains("a tie: winner 1.05x better"),
            "{}",
            pointer.runner_up
        );
    }

    #[test]
    fn medians_and_turns_that_disagree_make_a_tie() {
        let mut r = sample();
        // By medians rcu-lite-memb leads (4.0 against 5.0), but hazptr was
        // faster in two turns of three (paired, 1.20x): neither is ahead.
        // The winner keeps the better figure; hazptr is named beside it.
        r.refscale = vec![
            read_in_turns("rcu-lite-memb", vec![2.0, 4.0, 6.0]),
            read_in_turns("hazptr", vec![1.0, 5.0, 5.0]),
        ];
        let rows = table(&r);
        let pointer = pointer_row(&rows);
        assert_eq!(pointer.winner, "rcu-lite-memb", "{pointer:?}");
        assert_eq!(pointer.figure, "4.00 ns/read", "{pointer:?}");
        assert_eq!(pointer.tied_with, ["hazptr"], "{pointer:?}");
        assert_eq!(pointer.winners(), "rcu-lite-memb, hazptr (a tie)");
        assert!(
            pointer.runner_up.starts_with(
                "hazptr (5.00 ns/read; a tie: the winner's figure is better, but paired turn by \
                 turn hazptr is 1.20x better)"
            ),
            "{}",
            pointer.runner_up
        );
    }

    /// Figures of 0 are words, not `inf` or `NaN`: two zeros tie (a ratio of
    /// 1, in the figure and in each round), and a winner at 0 against a
    /// figure above it leads outright.
    #[test]
    fn figures_of_zero_tie_or_lead_outright() {
        let mut r = sample();
        r.deferred_free = vec![tortured("hazptr", 100, 0), tortured("haphazard", 100, 0)];
        let rows = table(&r);
        let bounded = row_of(&rows, "per-object protection with bounded memory");
        assert_eq!(
            bounded.runner_up,
            "haphazard (0 objects; a tie: winner 1.00x better, within the spread of repeated runs)"
        );
        r.deferred_free = vec![tortured("hazptr", 100, 0), tortured("haphazard", 100, 3)];
        let rows = table(&r);
        let bounded = row_of(&rows, "per-object protection with bounded memory");
        assert_eq!(
            bounded.runner_up,
            "haphazard (3 objects; winner better outright (a figure of 0 against one above 0))"
        );
        // Rounds of 0 against 0 pair as ties, not NaN: the range keeps them.
        let zeros = Candidate {
            name: "a".to_owned(),
            value: 0.0,
            runs: vec![0.0, 0.0, 1.0],
        };
        let other = Candidate {
            name: "b".to_owned(),
            value: 0.0,
            runs: vec![0.0, 2.0, 2.0],
        };
        assert_eq!(
            turn_ratios(&other, &zeros),
            Some(vec![1.0, f64::INFINITY, 2.0])
        );
        let ranked = rank(vec![zeros, other], true).unwrap();
        let (_, m) = &ranked.others[0];
        assert_eq!((m.ratio, m.turns), (2.0, Some((1.0, f64::INFINITY))));
        assert_eq!(
            describe(&ranked.others[0].0, m, "objects", true),
            "b (0 objects; a tie: winner 2.00x better by the median round, from 1.00x to outright \
             round by round, but not in every round)"
        );
    }

    #[test]
    fn a_third_contender_is_checked_and_ties_are_named() {
        let mut r = sample();
        // Medians: rcu-lite-memb 1.0, hazptr 1.15, crossbeam-epoch 1.2. Paired
        // with the leader, hazptr is 1.15x behind, but crossbeam-epoch is
        // ahead (0.90x): it ties with the leader, and hazptr, whose figure
        // is better than crossbeam-epoch's, ties too (the tied contenders
        // are a prefix of the order of figures).
        r.refscale = vec![
            read_in_turns("rcu-lite-memb", vec![1.0, 2.0, 1.0]),
            read_in_turns("hazptr", vec![1.15, 1.15, 1.15]),
            read_in_turns("crossbeam-epoch", vec![1.2, 1.2, 0.9]),
        ];
        let rows = table(&r);
        let pointer = pointer_row(&rows);
        assert_eq!(pointer.winner, "rcu-lite-memb", "{pointer:?}");
        assert_eq!(pointer.figure, "1.00 ns/read", "{pointer:?}");
        assert_eq!(
            pointer.tied_with,
            ["hazptr", "crossbeam-epoch"],
            "{pointer:?}"
        );
        assert_eq!(
            pointer.runner_up,
            "hazptr (1.15 ns/read; winner 1.15x better, though 1 of 3 turns put hazptr ahead; a \
             tie all the same: its figure is better than that of crossbeam-epoch, which ties); \
             crossbeam-epoch (1.20 ns/read; a tie: \
             the winner's figure is better, but paired turn by turn crossbeam-epoch is 1.11x \
             better)"
        );
        // Every contender behind the winner is behind by its figure too:
        // no "winner" with a worse figure, no margin under 1 outside a tie.
        let mut r = sample();
        r.refscale = vec![
            read_in_turns("rcu-lite-memb", vec![1.0, 1.0, 1.0]),
            read_in_turns("hazptr", vec![1.02, 1.02, 1.02]),
            read_in_turns("crossbeam-epoch", vec![1.05, 1.05, 1.05]),
            read_in_turns("seize", vec![3.0, 3.0, 3.0]),
        ];
        let rows = table(&r);
        let pointer = pointer_row(&rows);
        assert_eq!(
            pointer.winners(),
            "rcu-lite-memb, hazptr, crossbeam-epoch (a tie)"
        );
        assert!(
            pointer
                .runner_up
                .ends_with("; next seize (3.00 ns/read; winner 3.00x better)"),
            "{}",
            pointer.runner_up
        );
    }

    #[test]
    fn the_waiting_writer_row_goes_by_rounds_not_a_pooled_mean() {
        let mut r = sample();
        // hazptr's last round was preempted: its mean wait over every
        // round is 7 us, yet it led the two rounds before by 2x.
        let rounds = |name: &str, rounds: Vec<f64>, mean: f64| rcuscale::Outcome {
            per_gp_us: crate::stats::median(&rounds),
            per_gp_rounds_us: rounds,
            fqs: None,
            cpu: None,
            timed_with_every_reader_in: true,
            ..wait(name, 1, mean)
        };
        r.rcuscale = vec![
            rounds("hazptr", vec![0.5, 0.5, 0.9], 7.0),
            rounds("rcu-lite", vec![1.0, 1.0, 1.0], 1.0),
        ];
        let rows = table(&r);
        let waiter = waiter_row(&rows);
        assert_eq!(waiter.winner, "hazptr", "{waiter:?}");
        assert!(waiter.tied_with.is_empty(), "{waiter:?}");
        assert_eq!(
            waiter.runner_up,
            "rcu-lite (1.00 us; winner 2.00x better, 1.11-2.00x round by round)"
        );
        assert!(
            waiter.costs_elsewhere.contains("wait 7.0 us mean"),
            "{waiter:?}"
        );
    }

    #[test]
    fn the_waiting_writer_row_is_a_tie_unless_every_round_agrees() {
        let mut r = sample();
        // By the median round rcu-lite leads by 1.20x, but in the third
        // round hazptr was 5x faster: three 0.4 s rounds cannot tell them
        // apart.
        let rounds = |name: &str, rounds: Vec<f64>| rcuscale::Outcome {
            per_gp_us: crate::stats::median(&rounds),
            per_gp_rounds_us: rounds,
            fqs: None,
            cpu: None,
            timed_with_every_reader_in: true,
            ..wait(name, 1, 1.0)
        };
        r.rcuscale = vec![
            rounds("rcu-lite", vec![1.0, 1.0, 1.0]),
            rounds("hazptr", vec![1.2, 1.2, 0.2]),
            rounds("liburcu-memb", vec![2.0, 2.0, 2.0]),
        ];
        let rows = table(&r);
        let waiter = waiter_row(&rows);
        assert_eq!(waiter.winner, "rcu-lite", "{waiter:?}");
        assert_eq!(waiter.tied_with, ["hazptr"], "{waiter:?}");
        assert_eq!(
            waiter.runner_up,
            "hazptr (1.20 us; a tie: winner 1.20x better by the median round, 0.20-1.20x round \
             by round, but not in every round); next liburcu-memb (2.00 us; winner 2.00x \
             better, 2.00-2.00x round by round)"
        );
        // Where the pairs put the other contender ahead, its range reads as
        // its lead does: 2.00x in the first round (1.0 against 2.0), 0.80x in
        // the second (5.0 against 4.0).
        r.rcuscale = vec![
            rounds("rcu-lite", vec![2.0, 4.0, 6.0]),
            rounds("hazptr", vec![1.0, 5.0, 5.0]),
        ];
        let rows = table(&r);
        let waiter = waiter_row(&rows);
        assert_eq!(
            waiter.runner_up,
            "hazptr (5.00 us; a tie: the winner's figure is better, but paired turn by turn \
             hazptr is 1.20x better, 0.80-2.00x round by round)"
        );
        // Under 1.10x by the median round is a tie even where every round agrees.
        r.rcuscale = vec![
            rounds("rcu-lite", vec![1.0, 1.0, 1.0]),
            rounds("hazptr", vec![1.05, 1.05, 1.05]),
        ];
        let rows = table(&r);
        assert_eq!(waiter_row(&rows).tied_with, ["hazptr"]);
    }

    #[test]
    fn a_primitive_that_failed_any_run_wins_no_row() {
        let mut r = sample();
        // crossbeam-epoch and seize lead the read side and crossbeam-epoch
        // the waiting writer, but crossbeam-epoch's mixed torture freed
        // objects under readers and seize's hung; qrwlock leads the
        // read-lock row and the write-heavy mix (4w/1r, which passed) but
        // failed exclusion at 4w/16r.
        r.refscale = vec![
            read("crossbeam-epoch", 2, 0.5),
            read("seize", 2, 0.6),
            read("rcu-lite-memb", 2, 1.0),
            read("hazptr", 2, 2.0),
            read("qrwlock-read", 2, 4.0),
            read("parking_lot-read", 2, 8.0),
        ];
        r.rcuscale = vec![wait("crossbeam-epoch", 1, 0.5), wait("rcu-lite", 1, 8.0)];
        let mut broken = tortured("crossbeam-epoch", 1000, 10);
        broken.errors = 7;
        let mut hung = tortured("seize", 1000, 10);
        hung.failure = Some("hang: a reader made no progress for 20.0 s".into());
        r.torture = vec![broken, hung, tortured("hazptr", 1000, 10)];
        r.deferred_free = vec![
            tortured("crossbeam-epoch", 9000, 90000),
            tortured("hazptr", 3000, 60),
        ];
        let mut exclusion = lock("qrwlock", 4, 16, 100);
        exclusion.fail = 2;
        r.locktorture = vec![
            lock("qrwlock", 4, 1, 900),
            lock("parking_lot", 4, 1, 600),
            exclusion,
            lock("parking_lot", 4, 16, 50),
        ];
        let rows = table(&r);
        let get = |use_case: &str| {
            rows.iter()
                .find(|c| c.use_case.starts_with(use_case))
                .unwrap()
        };
        let epoch = "crossbeam-epoch (torture: 7 errors (an object read after reclamation))";
        let seize = "seize (torture: hang: a reader made no progress for 20.0 s)";
        let qrwlock = |name: &str| format!("{name} (locktorture 4w/16r: 2 exclusion failures)");
        for (use_case, winner, left_out) in [
            (
                "read-mostly shared pointer",
                "rcu-lite-memb",
                format!("{epoch}, {seize}"),
            ),
            ("writer that must wait", "rcu-lite", epoch.to_owned()),
            ("freeing in bulk", "hazptr", epoch.to_owned()),
            (
                "read-mostly lock",
                "parking_lot-read",
                qrwlock("qrwlock-read"),
            ),
            ("write-heavy lock", "parking_lot", qrwlock("qrwlock")),
        ] {
            let row = get(use_case);
            assert_eq!(row.winner, winner, "{row:?}");
            assert!(
                row.measured_by
                    .ends_with(&format!("; left out for failing their checks: {left_out}")),
                "{row:?}"
            );
            assert!(!row.runner_up.contains("qrwlock"), "{row:?}");
        }
        // The read-lock row's costs quote the winner's run, which passed.
        assert!(
            get("read-mostly lock")
                .costs_elsewhere
                .starts_with("under contention (4w/16r) writers get 2.000"),
            "{:?}",
            get("read-mostly lock")
        );
        // Without the failures, the same figures pick the failed ones.
        r.torture.clear();
        r.locktorture.retain(|o| o.fail == 0);
        let rows = table(&r);
        let winner = |use_case: &str| {
            &rows
                .iter()
                .find(|c| c.use_case.starts_with(use_case))
                .unwrap()
                .winner
        };
        assert_eq!(winner("read-mostly shared pointer"), "crossbeam-epoch");
        assert_eq!(winner("writer that must wait"), "crossbeam-epoch");
        assert_eq!(winner("read-mostly lock"), "qrwlock-read");
        assert_eq!(winner("write-heavy lock"), "qrwlock");
    }

    #[test]
    fn unavailable_contenders_are_named_where_they_would_compete() {
        let mut r = sample();
        r.refscale = vec![read("rcu-lite-memb", 2, 1.0), read("seqlock", 2, 0.5)];
        r.rcuscale = vec![wait("rcu-lite", 1, 8.0)];
        let why = "liburcu (liburcu-memb, liburcu-qsbr) was disabled by SYNCBENCH_NO_LIBURCU";
        r.unavailable = [
            ("refscale", "liburcu-memb"),
            ("refscale", "liburcu-qsbr"),
            ("rcuscale", "liburcu-memb"),
        ]
        .iter()
        .map(|(kind, name)| crate::report::NotMeasured {
            kind: (*kind).into(),
            name: (*name).into(),
            why: why.into(),
        })
        .collect();
        let rows = table(&r);
        let note = "; not measured, unavailable in the build that ran (see above): ";
        assert!(
            pointer_row(&rows)
                .measured_by
                .ends_with(&format!("{note}liburcu-memb, liburcu-qsbr")),
            "{:?}",
            pointer_row(&rows)
        );
        assert!(
            waiter_row(&rows)
                .measured_by
                .ends_with(&format!("{note}liburcu-memb")),
            "{:?}",
            waiter_row(&rows)
        );
        let small = rows
            .iter()
            .find(|c| c.use_case.starts_with("small Copy"))
            .unwrap();
        assert!(!small.measured_by.contains(note), "{small:?}");
        let intro = crate::report::document(&r).intro.join("\n");
        assert!(
            intro.contains(&format!(
                "Not measured, unavailable in the build that ran: liburcu-memb, liburcu-qsbr: {why}."
            )),
            "{intro}"
        );
    }

    #[test]
    fn the_small_copy_row_says_what_it_leaves_out_and_why() {
        let mut r = sample();
        r.refscale = vec![read("seqlock", 2, 0.5), read("rcu-lite-memb", 2, 1.0)];
        let rows = table(&r);
        let small = rows
            .iter()
            .find(|c| c.use_case.starts_with("small Copy"))
            .unwrap();
        for left_out in [
            "rcu-lite-qsbr and liburcu-qsbr (every reader thread must announce quiescent states)",
            "liburcu-memb (a C library, reached through FFI)",
            "crossbeam-epoch, haphazard and seize (replacing a value frees the old one through \
             an unsafe call)",
        ] {
            assert!(small.measured_by.contains(left_out), "{small:?}");
        }
    }

    #[test]
    fn a_wait_with_no_reader_to_wait_for_does_not_count() {
        let mut r = sample();
        let lonely = |name: &str, mean: f64| rcuscale::Outcome {
            readers: 0,
            ..wait(name, 1, mean)
        };
        r.rcuscale = vec![
            lonely("liburcu-memb", 0.1),
            wait("liburcu-memb", 1, 12.0),
            wait("rcu-lite", 1, 9.0),
        ];
        let rows = table(&r);
        let waiter = waiter_row(&rows);
        assert_eq!(waiter.winner, "rcu-lite", "{waiter:?}");
    }

    /// A 4w/1r lock's merged rounds: `rates` writes/s, in the order they ran.
    fn lock_in_rounds(name: &str, rates: Vec<f64>) -> locktorture::Outcome {
        let runs = rates
            .iter()
            .map(|&rate| lock(name, 4, 1, (rate * 2.0) as u64))
            .collect();
        locktorture::merge_rounds(runs)
    }

    /// A deferred-only torture's merged rounds: `rates` objects/s.
    fn deferred_in_rounds(name: &str, rates: Vec<f64>) -> torture::Outcome {
        let runs = rates
            .iter()
            .map(|&rate| tortured(name, (rate * 2.0) as u64, 60))
            .collect();
        torture::merge_rounds(runs)
    }

    fn row_of<'a>(rows: &'a [Choice], use_case: &str) -> &'a Choice {
        rows.iter()
            .find(|c| c.use_case.starts_with(use_case))
            .unwrap_or_else(|| panic!("the {use_case} row"))
    }

    /// With an even count of rounds the row's figure is the median round
    /// the lock table shows (the lower middle one), not the mean of the two
    /// middle rounds, which no table shows.
    #[test]
    fn an_even_count_of_rounds_gives_the_tables_median_round() {
        let mut r = sample();
        r.locktorture = vec![
            lock_in_rounds("qrwlock", vec![400e3, 300e3, 360e3, 340e3]),
            lock_in_rounds("std", vec![90e3, 95e3, 93e3, 91e3]),
        ];
        let median_round = r.locktorture[0].writes.total as f64 / r.locktorture[0].duration_s;
        assert_eq!(median_round, 340e3);
        let rows = table(&r);
        let lock = row_of(&rows, "write-heavy lock");
        assert_eq!(lock.winner, "qrwlock", "{lock:?}");
        assert_eq!(lock.figure, "340000 writes/s", "{lock:?}");
    }

    #[test]
    fn write_heavy_and_bulk_rows_tie_unless_every_round_agrees() {
        let mut r = sample();
        // By the median round qrwlock leads by 1.21x and hazptr by 1.19x,
        // but parking_lot and haphazard each won the second round: three
        // rounds of 0.67 s cannot tell them apart (as ten 2 s runs of the
        // two locks could not, each winning five).
        r.locktorture = vec![
            lock_in_rounds("qrwlock", vec![365e3, 330e3, 340e3]),
            lock_in_rounds("parking_lot", vec![285e3, 392e3, 280e3]),
            lock_in_rounds("std", vec![90e3, 95e3, 93e3]),
        ];
        r.deferred_free = vec![
            deferred_in_rounds("hazptr", vec![3.0e6, 2.0e6, 2.5e6]),
            deferred_in_rounds("haphazard", vec![2.0e6, 2.2e6, 2.1e6]),
        ];
        let rows = table(&r);
        let locks = row_of(&rows, "write-heavy lock");
        assert_eq!(locks.winner, "qrwlock", "{locks:?}");
        assert_eq!(locks.figure, "340000 writes/s", "{locks:?}");
        assert_eq!(locks.tied_with, ["parking_lot"], "{locks:?}");
        assert_eq!(
            locks.runner_up,
            "parking_lot (285000 writes/s; a tie: winner 1.21x better by the median round, \
             0.84-1.28x round by round, but not in every round); next std (93000 writes/s; \
             winner 3.66x better, 3.47-4.06x round by round)"
        );
        assert!(
            locks.measured_by.starts_with(
                "locktorture 4w/1r: writer acquisitions per second, median of 3 rounds taken in \
                 turns; a tie unless every round puts the winner ahead"
            ),
            "{locks:?}"
        );
        let bulk = row_of(&rows, "freeing in bulk");
        assert_eq!(bulk.winner, "hazptr", "{bulk:?}");
        assert_eq!(bulk.figure, "2.50 Mobjects/s", "{bulk:?}");
        assert_eq!(bulk.winners(), "hazptr, haphazard (a tie)");
        assert!(
            bulk.runner_up.contains("but not in every round")
                && bulk
                    .measured_by
                    .contains("median of 3 rounds taken in turns"),
            "{bulk:?}"
        );
    }

    #[test]
    fn write_heavy_and_bulk_rows_keep_a_winner_every_round_agrees_on() {
        let mut r = sample();
        r.locktorture = vec![
            lock_in_rounds("qrwlock", vec![400e3, 380e3, 390e3]),
            lock_in_rounds("parking_lot", vec![300e3, 320e3, 310e3]),
        ];
        r.deferred_free = vec![
            deferred_in_rounds("hazptr", vec![3.0e6, 2.8e6, 2.9e6]),
            deferred_in_rounds("seize", vec![1.5e6, 1.4e6, 1.6e6]),
        ];
        let rows = table(&r);
        let locks = row_of(&rows, "write-heavy lock");
        assert_eq!(locks.winners(), "qrwlock", "{locks:?}");
        assert_eq!(locks.figure, "390000 writes/s");
        assert_eq!(
            locks.runner_up,
            "parking_lot (310000 writes/s; winner 1.26x better, 1.19-1.33x round by round)"
        );
        let bulk = row_of(&rows, "freeing in bulk");
        assert_eq!(bulk.winners(), "hazptr", "{bulk:?}");
        assert_eq!(bulk.figure, "2.90 Mobjects/s");
        assert_eq!(
            bulk.runner_up,
            "seize (1.50 Mobjects/s; winner 2.00x better, 1.81-2.00x round by round)"
        );
    }

    /// The bulk-freeing row's winner is the fastest in wall time; its costs
    /// say what share of the CPU its writers had and what an object cost
    /// them, and name the contender whose objects cost the least CPU time
    /// (writers' and other threads' together) when that is another.
    #[test]
    fn the_bulk_row_says_what_the_winners_writers_used_and_who_used_least() {
        let with_cpu = |name, replaced, (readers_s, writers_s, others_s)| torture::Outcome {
            cpu: Some(torture::CpuSplit {
                readers_s,
                writers_s,
                others_s,
            }),
            ..tortured(name, replaced, 60)
        };
        let mut r = sample();
        r.deferred_free = vec![
            // Its readers yield: its writers get half the CPU, 300 ns an object.
            with_cpu("haphazard", 6_000_000, (1.8, 1.8, Some(0.0))),
            // 300 ns in the writers and 100 ns on the callback worker.
            with_cpu("rcu-lite-memb", 3_000_000, (2.7, 0.9, Some(0.3))),
            // The least in all: 250 ns.
            with_cpu("hazptr", 4_000_000, (2.9, 1.0, Some(0.0))),
        ];
        let bulk = row_of(&table(&r), "freeing in bulk").clone();
        assert_eq!(bulk.winner, "haphazard", "{bulk:?}");
        assert_eq!(
            bulk.costs_elsewhere,
            "held back up to 60 unreclaimed objects; its writers had 50% of the run's CPU time \
             and used 300 ns of it per object; cheapest per object in writers' and background CPU time: hazptr, 250 ns \
             (haphazard 300 ns next)"
        );
        // The other threads' part is named where it is not 0, and no
        // cheaper contender where the winner is the cheapest.
        r.deferred_free = vec![
            with_cpu("rcu-lite-memb", 6_000_000, (2.7, 0.9, Some(0.3))),
            with_cpu("haphazard", 3_000_000, (1.8, 1.8, Some(0.0))),
        ];
        let bulk = row_of(&table(&r), "freeing in bulk").clone();
        assert_eq!(
            bulk.costs_elsewhere,
            "held back up to 60 unreclaimed objects; its writers had 23% of the run's CPU time \
             and used 150 ns of it per object (other threads 50 ns more)"
        );
        // A contender whose run failed is no cheapest, and results without
        // CPU time (written before it was measured) say only what was held
        // (the last case, below).
        r.deferred_free = vec![
            with_cpu("haphazard", 6_000_000, (1.8, 1.8, Some(0.0))),
            torture::Outcome {
                errors: 1,
                ..with_cpu("hazptr", 4_000_000, (2.9, 0.1, Some(0.0)))
            },
            tortured("seize", 1_000_000, 60),
        ];
        let bulk = row_of(&table(&r), "freeing in bulk").clone();
        assert_eq!(bulk.winner, "haphazard", "{bulk:?}");
        assert!(
            bulk.costs_elsewhere
                .ends_with("used 300 ns of it per object"),
            "{bulk:?}"
        );
        // Nor is one whose other torture run failed, though its
        // deferred-only run was clean and the cheapest: the next is named.
        r.deferred_free = vec![
            with_cpu("haphazard", 6_000_000, (1.8, 1.8, Some(0.0))),
            with_cpu("hazptr", 4_000_000, (2.9, 0.8, Some(0.0))),
            with_cpu("seize", 3_000_000, (2.9, 0.75, Some(0.0))),
        ];
        r.torture.push(torture::Outcome {
            errors: 1,
            ..tortured("hazptr", 100, 60)
        });
        let bulk = row_of(&table(&r), "freeing in bulk").clone();
        assert_eq!(bulk.winner, "haphazard", "{bulk:?}");
        assert!(
            bulk.costs_elsewhere.ends_with(
                "; cheapest per object in writers' and background CPU time: seize, 250 ns (haphazard 300 ns next)"
            ),
            "{bulk:?}"
        );
        r.deferred_free = vec![tortured("haphazard", 6_000_000, 60)];
        let bulk = row_of(&table(&r), "freeing in bulk").clone();
        assert_eq!(
            bulk.costs_elsewhere,
            "held back up to 60 unreclaimed objects"
        );
    }

    /// The pairs give the margins and the figures the order, and near the
    /// threshold the two disagree: a contender whose figure is better than
    /// a tied one's must tie too, not come "next" after it.
    #[test]
    fn a_contender_ahead_of_a_tied_one_ties_too() {
        let mut r = sample();
        r.deferred_free = vec![
            deferred_in_rounds("haphazard", vec![1.67e6, 1.51e6, 1.68e6]),
            // Median 1.50M; paired 1.39x, 1.01x and 1.11x: a margin of 1.11x
            // that every round puts the leader ahead by.
            deferred_in_rounds("rcu-lite-memb", vec![1.20e6, 1.50e6, 1.52e6]),
            // Median 1.39M; paired 1.08x, 1.09x and 1.27x: a margin of 1.09x.
            deferred_in_rounds("hazptr", vec![1.54e6, 1.39e6, 1.32e6]),
            deferred_in_rounds("seize", vec![0.8e6, 0.8e6, 0.8e6]),
        ];
        let rows = table(&r);
        let bulk = row_of(&rows, "freeing in bulk");
        assert_eq!(
            bulk.winners(),
            "haphazard, rcu-lite-memb, hazptr (a tie)",
            "{bulk:?}"
        );
        assert_eq!(
            bulk.runner_up,
            "rcu-lite-memb (1.50 Mobjects/s; winner 1.11x better, 1.01-1.39x round by round; \
             a tie all the same: its figure is better than that of hazptr, which ties); hazptr \
             (1.39 Mobjects/s; a tie: winner 1.09x better, 1.08-1.27x round by round, within \
             the spread of repeated runs); next seize (800000 objects/s; winner 2.09x better, \
             1.89-2.10x round by round)",
            "{bulk:?}"
        );
    }

    #[test]
    fn a_failed_round_leaves_the_primitive_out_of_every_row() {
        let mut r = sample();
        // parking_lot and haphazard lead by every round, but one round of
        // each failed its checks: the merged outcome carries it.
        let mut runs: Vec<_> = [500e3, 520e3, 510e3]
            .iter()
            .map(|&rate| lock("parking_lot", 4, 1, (rate * 2.0) as u64))
            .collect();
        runs[1].fail = 2;
        r.locktorture = vec![
            locktorture::merge_rounds(runs),
            lock_in_rounds("qrwlock", vec![300e3, 310e3, 320e3]),
        ];
        let mut runs: Vec<_> = [9e6, 9e6, 9e6]
            .iter()
            .map(|&rate| tortured("haphazard", (rate * 2.0) as u64, 60))
            .collect();
        runs[2].errors = 1;
        runs[2].failure = Some("hang: a writer made no progress for 20.0 s".into());
        r.deferred_free = vec![
            torture::merge_rounds(runs),
            deferred_in_rounds("hazptr", vec![3.0e6, 2.8e6, 2.9e6]),
        ];
        r.refscale = vec![
            read("parking_lot-read", 2, 1.0),
            read("qrwlock-read", 2, 2.0),
        ];
        let rows = table(&r);
        for (use_case, winner, left_out) in [
            (
                "write-heavy lock",
                "qrwlock",
                "parking_lot (locktorture 4w/1r: 2 exclusion failures)",
            ),
            (
                "read-mostly lock",
                "qrwlock-read",
                "parking_lot-read (locktorture 4w/1r: 2 exclusion failures)",
            ),
            (
                "freeing in bulk",
                "hazptr",
                "haphazard (torture --deferred-only: round 3 of 3: hang: a writer made no \
                 progress for 20.0 s)",
            ),
            (
                "per-object protection",
                "hazptr",
                "haphazard (torture --deferred-only: round 3 of 3: hang: a writer made no \
                 progress for 20.0 s)",
            ),
        ] {
            let row = row_of(&rows, use_case);
            assert_eq!(row.winner, winner, "{row:?}");
            assert!(
                row.measured_by
                    .contains(&format!("left out for failing their checks: {left_out}")),
                "{row:?}"
            );
        }
    }

    #[test]
    fn a_report_read_back_from_single_runs_still_decides_the_rows() {
        // An earlier reference run's results.json (kept in tests/data),
        // written before the report took rounds: one run per lock and per
        // deferred-only implementation, each its own one round.
        let json = include_str!("../../tests/data/results-before-rounds.json");
        let r = crate::report::read_back(json).unwrap();
        assert!(
            r.locktorture
                .iter()
                .all(|o| o.writes_per_s_rounds.is_empty())
        );
        let rows = table(&r);
        let locks = row_of(&rows, "write-heavy lock");
        assert_eq!(locks.winners(), "qrwlock", "{locks:?}");
        assert_eq!(locks.figure, "349924 writes/s");
        assert!(
            locks
                .runner_up
                .starts_with("parking_lot (299575 writes/s; winner 1.17x better)"),
            "{locks:?}"
        );
        assert!(
            locks.measured_by.contains(
                "one run each, one contender after the other (a run from before the report \
                 took rounds)"
            ),
            "{locks:?}"
        );
        let bulk = row_of(&rows, "freeing in bulk");
        assert_eq!(
            bulk.winners(),
            "haphazard, crossbeam-epoch (a tie)",
            "{bulk:?}"
        );
        assert!(bulk.measured_by.contains("one run each"), "{bulk:?}");
        // And the whole report builds, with the one-run tables.
        let md = crate::report::document(&r).to_markdown();
        assert!(
            md.contains("Each lock ran once per mix, one after the other"),
            "{md}"
        );
    }

    #[test]
    fn contenders_missing_from_the_run_are_left_out() {
        let mut r = sample();
        r.refscale.clear();
        r.deferred_free.clear();
        let rows = table(&r);
        assert!(
            rows.iter()
                .all(|c| !c.use_case.starts_with("read-mostly shared pointer"))
        );
        assert!(
            rows.iter()
                .all(|c| !c.use_case.starts_with("freeing in bulk"))
        );
    }

    /// A value that rounds up across a boundary takes the format past it:
    /// "100.00 ns" and "1000000 writes/s" were printed before.
    #[test]
    fn a_figure_that_rounds_across_a_boundary_takes_the_next_format() {
        assert_eq!(fmt_value(99.994, "ns"), "99.99 ns");
        assert_eq!(fmt_value(99.996, "ns"), "100 ns");
        assert_eq!(fmt_value(999_999.4, "writes/s"), "999999 writes/s");
        assert_eq!(fmt_value(999_999.6, "writes/s"), "1.00 Mwrites/s");
        assert_eq!(fmt_value(2_500_000.0, "reads/s"), "2.50 Mreads/s");
        // Only rates take the M prefix.
        assert_eq!(fmt_value(2_500_000.0, "ns"), "2500000 ns");
        // A count of objects is whole under 100 too ("30.00 objects" before).
        assert_eq!(fmt_value(30.0, "objects"), "30 objects");
        assert_eq!(fmt_value(2003.0, "objects"), "2003 objects");
    }

    /// Figures without runs taken in turns are compared by their ratio,
    /// the leader's way up, whichever way wins; a contender with no finite
    /// figure is left out rather than ranked (it would lead a
    /// higher-wins row, since NaN sorts above every number).
    #[test]
    fn unpaired_margins_are_the_ratio_of_the_figures_and_nan_is_not_ranked() {
        let lower = rank(
            vec![
                Candidate::new("nan", f64::NAN),
                Candidate::new("slow", 30.0),
                Candidate::new("fast", 10.0),
            ],
            true,
        )
        .unwrap();
        assert_eq!(lower.leader.name, "fast");
        assert_eq!(lower.others.len(), 1, "a NaN figure was ranked");
        let (c, m) = &lower.others[0];
        assert_eq!(c.name, "slow");
        assert_eq!((m.ratio, m.turns, m.paired), (3.0, None, 0));
        let higher = rank(
            vec![
                Candidate::new("few", 10.0),
                Candidate::new("nan", f64::NAN),
                Candidate::new("many", 40.0),
            ],
            false,
        )
        .unwrap();
        assert_eq!(higher.leader.name, "many");
        assert_eq!(higher.others.len(), 1, "a NaN figure was ranked");
        assert_eq!(higher.others[0].1.ratio, 4.0);
    }

    /// A higher-wins row whose best figure is 0 (every lock's writers shut
    /// out) has nothing to choose by: no ranking, not a tie of all at
    /// 1.00x. A contender at 0 behind one above it is still ranked.
    #[test]
    fn a_higher_wins_figure_of_zero_for_all_is_not_ranked() {
        let zeros = || {
            vec![
                Candidate::new("qrwlock", 0.0),
                Candidate::new("parking_lot", 0.0),
            ]
        };
        assert!(rank(zeros(), false).is_none());
        // Lower-wins: 0 is a figure like any other.
        assert!(rank(zeros(), true).is_some());
        let mut some = zeros();
        some.push(Candidate::new("std", 5.0));
        let ranked = rank(some, false).unwrap();
        assert_eq!(ranked.leader.name, "std");
        assert_eq!(ranked.others.len(), 2);
        assert!(ranked.others.iter().all(|(_, m)| m.ratio.is_infinite()));
    }

    /// [`TIE_MARGIN`](crate::stats::TIE_MARGIN) itself is no tie: a margin *under* it is. And a
    /// margin of exactly 1 (equal figures) is a tie within the spread, not
    /// one where the pairs put the contender ahead.
    #[test]
    fn the_tie_margin_is_exclusive_and_an_equal_figure_is_within_the_spread() {
        let margin = |ratio: f64| Margin {
            ratio,
            turns: None,
            paired: 0,
            turns_lost: 0,
        };
        assert!(!margin(11.0 / 10.0).tie(false), "1.10x called a tie");
        assert!(!margin(11.0 / 10.0).tie(true), "1.10x called a tie");
        assert!(margin(1.0949).tie(false));
        // Judged as printed: 3.3 ns against 3.0 is 1.0999999999999999 in
        // floating point, and 1.0996 prints "1.10x" too; neither ties.
        assert!(
            !margin(3.3 / 3.0).tie(false),
            "3.3 against 3.0 called a tie"
        );
        assert!(
            !margin(1.0996).tie(false),
            "1.0996 (\"1.10x\") called a tie"
        );
        assert_eq!(
            describe(&Candidate::new("b", 10.0), &margin(1.07), "ns/read", false),
            "b (10.00 ns/read; a tie: winner 1.07x better, within the spread of repeated runs)"
        );
        let equal = describe(&Candidate::new("b", 10.0), &margin(1.0), "ns/read", false);
        assert_eq!(
            equal,
            "b (10.00 ns/read; a tie: winner 1.00x better, within the spread of repeated runs)"
        );
    }

    /// The bounded-memory row ranks figures without rounds: its margin is
    /// the ratio of the two, and its cost names the unbounded contender
    /// that held back the most.
    #[test]
    fn the_bounded_memory_row_gives_the_ratio_and_the_largest_unbounded_hold() {
        let mut r = sample();
        r.deferred_free = vec![
            tortured("hazptr", 100, 10),
            tortured("haphazard", 100, 30),
            tortured("crossbeam-epoch", 100, 500),
            tortured("rcu-lite-memb", 100, 9000),
            tortured("seize", 100, 700),
        ];
        let rows = table(&r);
        let bounded = row_of(&rows, "per-object protection with bounded memory");
        assert_eq!(bounded.winner, "hazptr");
        assert!(bounded.tied_with.is_empty(), "{bounded:?}");
        assert_eq!(
            bounded.runner_up,
            "haphazard (30 objects; winner 3.00x better)"
        );
        assert!(
            bounded
                .costs_elsewhere
                .ends_with("for comparison rcu-lite-memb held back up to 9000 objects"),
            "{bounded:?}"
        );
    }

    /// The waiting-writer row and its costs go by the lone writer with the
    /// fewest readers (at least one) and no idle threads.
    #[test]
    fn the_lone_writer_has_the_fewest_readers_and_no_idle_threads() {
        let mut r = sample();
        let with = |readers: usize, idle_threads: usize, mean: f64| rcuscale::Outcome {
            readers,
            idle_threads,
            ..wait("w", 1, mean)
        };
        r.rcuscale = vec![with(1, 8, 900.0), with(4, 0, 400.0), with(1, 0, 20.0)];
        let lone = lone_writer(&r, "w").expect("a lone writer");
        assert_eq!((lone.readers, lone.idle_threads), (1, 0));
        assert_eq!(lone.per_gp_us, 20.0);
    }

    /// The write-heavy row is the mix with the most writers per reader
    /// (2w/0r over 3w/1r), and the winner's readers are given per thread
    /// per second.
    #[test]
    fn the_write_heavy_row_takes_the_most_writers_per_reader() {
        let mut r = sample();
        r.locktorture = vec![
            lock("qrwlock", 3, 1, 900),
            lock("qrwlock", 2, 0, 800),
            lock("parking_lot", 3, 1, 600),
            lock("parking_lot", 2, 0, 400),
        ];
        let rows = table(&r);
        let heavy = row_of(&rows, "write-heavy lock");
        assert!(
            heavy.measured_by.starts_with("locktorture 2w/0r:"),
            "{heavy:?}"
        );
        r.locktorture = vec![lock("qrwlock", 3, 2, 900), lock("parking_lot", 3, 2, 400)];
        let rows = table(&r);
        let heavy = row_of(&rows, "write-heavy lock");
        // 100 reads over 2 readers and 2 s: 25 per thread per second.
        assert_eq!(
            heavy.costs_elsewhere,
            "its readers got 25 acquisitions/s per thread"
        );
    }

    /// The small-Copy row's cost is the winner's 1-thread read, whatever
    /// thread count decided the row.
    #[test]
    fn the_small_copy_cost_is_the_one_thread_read() {
        let mut r = sample();
        r.refscale = vec![read("arc-swap", 1, 3.0), read("arc-swap", 2, 5.0)];
        let rows = table(&r);
        let small = row_of(&rows, "small Copy data");
        assert_eq!(small.winner, "arc-swap");
        assert_eq!(small.costs_elsewhere, "1-thread read 3.00 ns");
    }

    /// rcuscale's `rcu-lite` is the memb flavor's writer: a failed
    /// `rcu-lite-memb` torture run leaves it out of the waiting row.
    #[test]
    fn a_failed_memb_torture_leaves_rcuscales_rcu_lite_out() {
        let mut r = sample();
        r.rcuscale = vec![wait("rcu-lite", 1, 5.0), wait("hazptr", 1, 50.0)];
        r.torture = vec![torture::Outcome {
            errors: 3,
            ..tortured("rcu-lite-memb", 100, 10)
        }];
        let rows = table(&r);
        let waiting = waiter_row(&rows);
        assert_eq!(waiting.winner, "hazptr", "{waiting:?}");
        assert!(
            waiting
                .measured_by
                .contains("left out for failing their checks: rcu-lite (torture: 3 errors"),
            "{waiting:?}"
        );
    }

    /// "A tie unless every round puts the winner ahead": a round the two
    /// tie puts no one ahead, so a contender with one such round ties
    /// with the leader however far behind its median round is.
    #[test]
    fn a_round_of_equal_figures_does_not_put_the_winner_ahead() {
        let mut r = sample();
        let rounds = |name: &str, rounds: Vec<f64>| rcuscale::Outcome {
            per_gp_us: crate::stats::median(&rounds),
            per_gp_rounds_us: rounds,
            fqs: None,
            cpu: None,
            timed_with_every_reader_in: true,
            ..wait(name, 1, 10.0)
        };
        r.rcuscale = vec![
            rounds("hazptr", vec![10.0, 10.0, 10.0]),
            rounds("rcu-lite", vec![20.0, 10.0, 30.0]),
        ];
        let rows = table(&r);
        let waiting = waiter_row(&rows);
        assert_eq!(waiting.winner, "hazptr");
        assert_eq!(waiting.tied_with, ["rcu-lite"], "{waiting:?}");
        assert!(
            waiting
                .runner_up
                .contains("winner 2.00x better by the median round, 1.00-3.00x round by round, but not in every round"),
            "{waiting:?}"
        );
    }

    /// Whole counts of objects can be exactly [`TIE_MARGIN`](crate::stats::TIE_MARGIN) apart (11
    /// against 10): no tie, and the row must not call it one.
    #[test]
    fn counts_exactly_the_tie_margin_apart_are_not_called_a_tie() {
        let mut r = sample();
        r.deferred_free = vec![tortured("hazptr", 100, 10), tortured("haphazard", 100, 11)];
        let rows = table(&r);
        let bounded = row_of(&rows, "per-object protection with bounded memory");
        assert_eq!(bounded.winners(), "hazptr", "{bounded:?}");
        assert_eq!(
            bounded.runner_up,
            "haphazard (11 objects; winner 1.10x better)"
        );
    }

    /// The shared-pointer row's cost is the wait of the winner's own
    /// writer: hazptr's where hazptr wins, not another contender's.
    #[test]
    fn the_pointer_rows_cost_is_the_wait_of_the_winners_own_writer() {
        let mut r = sample();
        r.refscale = vec![read("hazptr", 2, 1.0), read("rcu-lite-memb", 2, 3.0)];
        r.rcuscale = vec![wait("rcu-lite", 1, 8.0), wait("hazptr", 1, 20.0)];
        let rows = table(&r);
        let pointer = pointer_row(&rows);
        assert_eq!(pointer.winner, "hazptr", "{pointer:?}");
        assert_eq!(
            pointer.costs_elsewhere,
            "a writer waiting for readers (hazptr) takes 20.0 us mean, 40.0 us p99"
        );
    }

    /// The bounded-memory row's comparison never quotes a contender whose
    /// torture failed its checks, however much it held back.
    #[test]
    fn the_bounded_memory_comparison_leaves_out_a_failed_contender() {
        let mut r = sample();
        r.deferred_free = vec![
            tortured("hazptr", 100, 10),
            tortured("crossbeam-epoch", 100, 90000),
            tortured("rcu-lite-memb", 100, 500),
        ];
        r.torture = vec![torture::Outcome {
            errors: 3,
            ..tortured("crossbeam-epoch", 100, 10)
        }];
        let rows = table(&r);
        let bounded = row_of(&rows, "per-object protection with bounded memory");
        assert_eq!(bounded.winner, "hazptr");
        assert!(
            bounded
                .costs_elsewhere
                .ends_with("for comparison rcu-lite-memb held back up to 500 objects"),
            "{bounded:?}"
        );
    }

    /// The write-heavy row's cost quotes the winner's own readers in the
    /// deciding mix, not another lock's nor another mix's.
    #[test]
    fn the_write_heavy_rows_cost_is_the_winners_readers_in_that_mix() {
        let mut r = sample();
        let reading = |name: &str, writers: usize, writes: u64, reads: u64| locktorture::Outcome {
            reads: counts(reads, reads / 2, reads / 2),
            ..lock(name, writers, 1, writes)
        };
        r.locktorture = vec![
            reading("qrwlock", 4, 900, 40),
            reading("parking_lot", 1, 5000, 80),
            reading("parking_lot", 4, 1200, 60),
        ];
        let rows = table(&r);
        let heavy = row_of(&rows, "write-heavy lock");
        assert_eq!(heavy.winner, "parking_lot", "{heavy:?}");
        // 60 reads by 1 reader over 2 s.
        assert_eq!(
            heavy.costs_elsewhere,
            "its readers got 30 acquisitions/s per thread"
        );
    }

    /// rcuscale measures each writer in several mixes: the waiting-writer
    /// row ranks each primitive once, never against itself.
    #[test]
    fn a_primitive_measured_in_several_mixes_is_one_waiting_contender() {
        let mut r = sample();
        r.rcuscale = vec![
            wait("rcu-lite", 1, 8.0),
            wait("rcu-lite", 16, 40.0),
            wait("hazptr", 1, 20.0),
            wait("hazptr", 16, 90.0),
        ];
        let rows = table(&r);
        let waiting = waiter_row(&rows);
        assert_eq!(waiting.winners(), "rcu-lite", "{waiting:?}");
        assert!(
            waiting
                .runner_up
                .starts_with("hazptr (20.00 us; winner 2.50x better"),
            "{waiting:?}"
        );
    }

    /// The waiting-writer row's cost under concurrent writers is the
    /// winner's own run with the most writers, not another primitive's.
    #[test]
    fn the_waiting_rows_cost_is_the_winners_own_run_with_the_most_writers() {
        let mut r = sample();
        r.rcuscale = vec![
            wait("rcu-lite", 1, 8.0),
            wait("rcu-lite", 4, 40.0),
            wait("hazptr", 1, 20.0),
            wait("hazptr", 16, 90.0),
        ];
        let rows = table(&r);
        let waiting = waiter_row(&rows);
        assert_eq!(waiting.winner, "rcu-lite", "{waiting:?}");
        assert_eq!(
            waiting.costs_elsewhere,
            "wait 8.0 us mean, 16.0 us p99; with 4 concurrent writers and 1 reader(s), a wait \
             completed every 10.00 us (per-GP time, all writers together), each lasting 40.0 us \
             mean (half their waiting time in waits of 100.0 us or longer)"
        );
        // Results saved before the time-weighted median was measured.
        for o in &mut r.rcuscale {
            o.latency_us.time_weighted_p50 = None;
        }
        let rows = table(&r);
        assert_eq!(
            waiter_row(&rows).costs_elsewhere,
            "wait 8.0 us mean, 16.0 us p99; with 4 concurrent writers and 1 reader(s), a wait \
             completed every 10.00 us (per-GP time, all writers together), each lasting 40.0 us \
             mean"
        );
    }
}
