//! `syncbench compare OLD.json NEW.json`: the change of every figure between
//! two report runs, flagging regressions beyond a threshold.
//!
//! Works on any `results.json` without knowing its schema in detail: every
//! top-level array is a section, every object in it a measurement whose
//! *identity* is its string and boolean fields (not `failure`, an outcome)
//! plus its configuration numbers (threads, writers, readers, cpus, ...),
//! and whose *figures* are its other numeric leaves (nested objects flatten
//! to `latency_us.p99`; arrays, such as each run's or round's figures, are
//! left out), with `failed` (0 or 1) added to a torture or locktorture
//! outcome. A figure's direction
//! (lower or higher is better) comes from its name; figures of unknown
//! direction are shown but never flagged. Counts of work done in a timed run
//! (`writes.total`, `gps`, `replaced`, ...) are compared per second of the
//! run (`writes.total_per_s`): two runs of different length (a quick and a
//! full profile) would otherwise show the longer one as an improvement.
//! The same holds for a membarrier outcome's `calls`, `stalls` and `events`,
//! counted over its own `seconds` (`membarrier_sweep`'s `global.stalls` is
//! compared as `global.stalls_per_s`). A torture outcome's CPU time by role
//! (`cpu.writers_s`, `cpu.others_s`, shown but not judged) is also compared
//! per object replaced (`cpu.writer_per_object_ns`,
//! `cpu.others_per_object_ns`, lower is better): what an object cost the
//! writers and the other threads, whatever the run's length. Each role's
//! change is judged as a share of what an object cost both roles in the old
//! run ([`Change::judged_pct`]): the others' time is often a fraction of a
//! nanosecond per object (the threads that are neither readers nor writers
//! barely run), and its doubling from 0.3 to 0.7 ns beside the writers' 230
//! is no regression. An rcuscale outcome's others' CPU time per wait
//! (`cpu.others_us`) is judged the same way, as a share of both roles'
//! (`cpu.writers_us` + `cpu.others_us`); the writers' own time per wait is
//! what the writers pay, judged by its own change. Its `cpu.others_us` is
//! judged only
//! between runs that measured it the same way: before 2026-12-05 it also
//! counted starting the threads (`cpu.others_timed_window`, 0 or 1 here);
//! across that change it is shown, not judged, with a note
//! ([`Comparison::method_changes`]). Likewise every figure of an rcuscale
//! outcome (the report's quick-QS runs too) between a run from before
//! 2026-12-07, whose writers started their clocks without waiting for every
//! reader to be in and whose readers read on past the writers' span, and one
//! from after (`timed_with_every_reader_in`; results saved by a build of
//! that day before the flag was recorded read as the old way).
//!
//! # The gate
//!
//! `--fail-on-regression` fails ([`Comparison::gate_failures`]) on a
//! regression, and also on what would let one through unseen: a measurement
//! or a figure that the old run has and the new one lacks (a measurement that
//! no longer runs, or a figure that went NaN, which JSON writes as null), and
//! a comparison of no figures at all. Both files must be results documents
//! ([`check_results`]): a `profile`, a `machine` and at least one section.

use serde::Serialize;
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::io::Write;

/// Why `value` (read from the file `name`) is not a syncbench results
/// document: a report's `results.json` has a `profile` (a string), a
/// `machine` (an object) and sections (arrays of measurements). Sections
/// come and go between versions, so any one will do; `{}` is refused.
pub fn check_results(name: &str, value: &Value) -> Result<(), String> {
    let not = |why: String| Err(format!("{name} is not a syncbench results.json: {why}"));
    let Some(top) = value.as_object() else {
        return not("expected an object".to_owned());
    };
    match top.get("profile") {
        Some(Value::String(_)) => {}
        Some(other) => return not(format!("key \"profile\" is {other}, not a string")),
        None => return not("it has no key \"profile\"".to_owned()),
    }
    match top.get("machine") {
        Some(Value::Object(_)) => {}
        Some(other) => return not(format!("key \"machine\" is {other}, not an object")),
        None => return not("it has no key \"machine\"".to_owned()),
    }
    if !top.values().any(Value::is_array) {
        return not(
            "it has no section (a key holding an array of measurements, such as \"refscale\")"
                .to_owned(),
        );
    }
    Ok(())
}

/// Numeric fields that identify a measurement rather than measure it.
const IDENTITY_NUMBERS: &[&str] = &[
    "threads",
    "writers",
    "readers",
    "idle_threads",
    "cpus",
    "callers",
    "reads_per_write",
    "payload_bytes",
    "interval_ms",
];

/// Numeric fields that are neither identity nor figures (run settings).
/// `fqs_interval_ms` is one: a report's profile fixes it per section, so it
/// tells no two measurements of a results document apart, and as an
/// identity it would part the quick-QS rows from those saved before it was
/// recorded.
const SETTINGS: &[&str] = &[
    "fqs_interval_ms",
    "iterations",
    "duration_s",
    "sim_seconds",
    "seed",
    "runs",
    "watchdog_s",
];

/// An rcuscale outcome's flag of how its waits and reads were timed
/// (`rcuscale::Outcome::timed_with_every_reader_in`): compared as a figure,
/// 0 or 1, and not judged; no figure of the measurement is judged across a
/// change of it.
const EVERY_READER_IN: &str = "timed_with_every_reader_in";

/// Figures (whole paths) that count work done over a run's `duration_s`:
/// compared as rates (`_per_s`), since they grow with the run's length. Not
/// `latency_us.max` (a time) nor `writes_served_per_ms.min` (already a rate).
const RUN_COUNTS: &[&str] = &[
    "writes.total",
    "writes.min",
    "writes.max",
    "reads.total",
    "reads.min",
    "reads.max",
    "gps",
    "reads",
    "replaced",
    // rcuscale's forced-quiescent-state counts, over all of its rounds.
    "fqs.grace_periods",
    "fqs.fqs_waits",
];

/// Figures of a membarrier outcome that count what happened over its
/// `seconds` (a sibling field): compared as rates, as [`RUN_COUNTS`] are.
const SECONDS_COUNTS: &[&str] = &[
    "calls",
    "stalls",
    "events",
    // The global command's timer: its passes and those chained to another.
    "timer.passes",
    "timer.chained",
];

/// Whether lower or higher is better for a figure.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Direction {
    /// Times, latencies, errors, memory held back.
    LowerIsBetter,
    /// Throughputs and counts of work done.
    HigherIsBetter,
    /// Not judged.
    Neutral,
}

/// The direction of the figure at `path` (dot-separated).
pub fn direction(path: &str) -> Direction {
    let last = path.rsplit('.').next().unwrap_or(path);
    // A count made a rate keeps its count's direction.
    let count = last.strip_suffix("_per_s").unwrap_or(last);
    // Injected faults (torture `--faults`) are settings that happened, not
    // results: more injected stalls is not a regression.
    if path.starts_with("faults.") {
        return Direction::Neutral;
    }
    let lower = [
        "errors",
        "failed",
        "fail",
        "write_fail",
        "read_fail",
        "stalls",
        "unreclaimed_max",
        "rss_max_kib",
    ];
    let higher = [
        "total",
        "min",
        "gps",
        "reads",
        "replaced",
        "calls",
        "ops",
        "writer_share",
        "throughput",
    ];
    let timing = path.contains("latency")
        || path.ends_with("_us")
        || path.ends_with("_ns")
        || path.ends_with("_ms")
        || last == "ns_per_op";
    if timing || lower.contains(&count) {
        Direction::LowerIsBetter
    } else if higher.contains(&count) {
        Direction::HigherIsBetter
    } else {
        Direction::Neutral
    }
}

/// Whether a change of `pct` percent goes past `threshold_pct`, judged on
/// the change as `write_text` prints it (`{:+.1}`): 1 -> 1.1 is a change of
/// 10.000000000000009% in floating point, printed "+10.0%", and is no more
/// past a 10% threshold than 100 -> 110 is. The printed text itself is
/// judged: rounding the value instead takes 2000 -> 2601, 30.049999999999997%
/// and printed "+30.0%", to 30.1. (Until 2026-12-07 the raw value was
/// compared, so of two changes printed alike one was flagged.)
fn past(pct: f64, threshold_pct: f64) -> bool {
    format!("{pct:.1}")
        .parse::<f64>()
        .is_ok_and(|printed| printed > threshold_pct)
}

/// One figure present in both runs.
#[derive(Clone, Debug, Serialize)]
pub struct Change {
    /// Section and identity, e.g. `refscale impl=hazptr threads=1`.
    pub measurement: String,
    /// The figure's path within the measurement, e.g. `ns_per_op`.
    pub figure: String,
    /// Old value.
    pub old: f64,
    /// New value.
    pub new: f64,
    /// (new - old) / old, in percent (`null` when old is 0).
    pub change_pct: Option<f64>,
    /// The change the judgement used, in percent, where it is not
    /// `change_pct`: a role's CPU time per object (torture) or the others'
    /// CPU time per wait (rcuscale) changes by this share of what both roles
    /// cost in the old run.
    pub judged_pct: Option<f64>,
    /// Which way is better.
    pub direction: Direction,
    /// Worse by more than the threshold (or an error count that rose from 0).
    pub regression: bool,
    /// Better by more than the threshold.
    pub improvement: bool,
}

/// The whole comparison.
#[derive(Debug, Serialize)]
pub struct Comparison {
    /// The threshold used, percent.
    pub threshold_pct: f64,
    /// Figures in both runs.
    pub changes: Vec<Change>,
    /// Measurements only in the old run, and figures of a measurement in
    /// both that only the old run has (one that is null in the new run).
    pub only_old: Vec<String>,
    /// Measurements only in the new run, and figures only the new run has.
    pub only_new: Vec<String>,
    /// The two runs' profiles (`"quick" -> "full"`) where they differ: other
    /// mixes, thread counts and run lengths.
    pub profile_difference: Option<String>,
    /// Machine fields that differ (`field: old -> new`): ratios across
    /// machines are not like for like.
    pub machine_differences: Vec<String>,
    /// Machine costs measured at the start of each run
    /// ([`MEASURED_MACHINE_FIELDS`]) that differ: not a different machine,
    /// but figures that depend on them move with them.
    pub machine_cost_changes: Vec<String>,
    /// Machine fields that one run records and the other does not (an older
    /// run predates them, `field (old run only)` or `field (new run only)`):
    /// a change there cannot be seen, so neither kind of line above rules
    /// it out.
    pub machine_unrecorded: Vec<String>,
    /// Figures shown but not judged because the two runs measured them
    /// differently (`measurement figure: why`).
    pub method_changes: Vec<String>,
    /// Fields of the runs' `build` that differ (`field: old -> new`): the
    /// commit is what a comparison usually sets out to change; the
    /// optimization level or a peer's version is not.
    pub build_differences: Vec<String>,
    /// The runs (`old run`, `new run`) measured by an unoptimized build,
    /// whose figures compare with nothing.
    pub unoptimized: Vec<String>,
    /// The runs that a cgroup CPU quota stopped (`which`, how many times),
    /// whose figures include those stops (`throttled` in `results.json`).
    pub throttled: Vec<(String, u64)>,
}

/// Fields of a run's `machine` that are measurements, not the machine's
/// identity: they differ between any two runs, so a difference in them does
/// not mean the machines differ.
pub const MEASURED_MACHINE_FIELDS: [&str; 2] = ["heavy_fence", "full_fence_ns"];

impl Comparison {
    /// How many figures regressed.
    pub fn regressions(&self) -> usize {
        self.changes.iter().filter(|c| c.regression).count()
    }

    /// How many figures improved.
    pub fn improvements(&self) -> usize {
        self.changes.iter().filter(|c| c.improvement).count()
    }

    /// Why `--fail-on-regression` fails this comparison, one line per
    /// reason; empty when it passes. Besides regressions, what the old run
    /// measured and the new one lacks ([`Comparison::only_old`]: a whole
    /// measurement, or a figure written as null) fails it, and so does a
    /// comparison of no figures: either would pass a gate that looked only
    /// at regressions, with nothing checked.
    pub fn gate_failures(&self) -> Vec<String> {
        let mut why = Vec::new();
        let regressions = self.regressions();
        if regressions > 0 {
            why.push(format!(
                "{regressions} figures regressed beyond {}%",
                self.threshold_pct
            ));
        }
        if !self.only_old.is_empty() {
            why.push(format!(
                "missing from the new run (measured in the old one): {}",
                self.only_old.join("; ")
            ));
        }
        if self.changes.is_empty() {
            why.push("0 figures compared: the two runs have no figure in common".to_owned());
        }
        why
    }
}

/// Flattens a results document into `measurement -> figure -> value`.
pub fn flatten(results: &Value) -> BTreeMap<String, BTreeMap<String, f64>> {
    let mut out = BTreeMap::new();
    let Some(top) = results.as_object() else {
        return out;
    };
    for (section, value) in top {
        let Some(items) = value.as_array() else {
            continue;
        };
        for item in items {
            let Some(fields) = item.as_object() else {
                continue;
            };
            let mut identity = Vec::new();
            let mut figures = BTreeMap::new();
            for (name, v) in fields {
                match v {
                    // A torture run's failure text is an outcome, not part of
                    // what was measured: it must not split the measurement
                    // into an old key and a new one (see `failed` below).
                    Value::String(_) if name == "failure" => {}
                    // How an rcuscale run was timed: a figure, below, not
                    // part of the measurement's identity.
                    Value::Bool(_) if name == EVERY_READER_IN => {}
                    Value::String(s) => identity.push(format!("{name}={s}")),
                    Value::Bool(b) => identity.push(format!("{name}={b}")),
                    Value::Number(n) if IDENTITY_NUMBERS.contains(&name.as_str()) => {
                        identity.push(format!("{name}={n}"))
                    }
                    _ if SETTINGS.contains(&name.as_str()) => {}
                    _ => collect_figures(name, v, &mut figures),
                }
            }
            // A torture outcome's CPU time by role, per object replaced:
            // the seconds themselves grow with the run's length and say
            // nothing alone (see the module docs).
            if let Some(replaced) = figures.get("replaced").copied().filter(|r| *r > 0.0) {
                for (seconds, per_object) in [
                    ("cpu.writers_s", "cpu.writer_per_object_ns"),
                    ("cpu.others_s", "cpu.others_per_object_ns"),
                ] {
                    if let Some(s) = figures.get(seconds).copied() {
                        figures.insert(per_object.to_owned(), s * 1e9 / replaced);
                    }
                }
            }
            // How an rcuscale run measured its others' CPU time: see the
            // module docs. Results saved before the window have no flag.
            if figures.contains_key("cpu.others_us") {
                let window = fields
                    .get("cpu")
                    .and_then(|cpu| cpu.get("others_timed_window"))
                    .and_then(Value::as_bool)
                    .unwrap_or(false);
                figures.insert(
                    "cpu.others_timed_window".to_owned(),
                    f64::from(u8::from(window)),
                );
            }
            // How an rcuscale run (a report's quick-QS runs too) was timed:
            // see the module docs. Results saved before have no flag.
            if fields.contains_key("per_gp_us") {
                let every_reader_in = fields
                    .get(EVERY_READER_IN)
                    .and_then(Value::as_bool)
                    .unwrap_or(false);
                figures.insert(
                    EVERY_READER_IN.to_owned(),
                    f64::from(u8::from(every_reader_in)),
                );
            }
            // Counts of work in a timed run, as rates: see the module docs.
            if let Some(d) = fields
                .get("duration_s")
                .and_then(Value::as_f64)
                .filter(|d| *d > 0.0)
            {
                let counts: Vec<String> = figures
                    .keys()
                    .filter(|k| RUN_COUNTS.contains(&k.as_str()))
                    .cloned()
                    .collect();
                for k in counts {
                    let count = figures.remove(&k).expect("listed above");
                    figures.insert(format!("{k}_per_s"), count / d);
                }
            }
            // A membarrier run (or a sweep's policy) that completed no call
            // has no latency. Results saved before 2026-12-07 recorded
            // zeros there, which would compare as a latency gone to nothing
            // (or risen from it): left out, as newer results leave them.
            let idle: Vec<String> = figures
                .iter()
                .filter(|(k, n)| (k.as_str() == "calls" || k.ends_with(".calls")) && **n == 0.0)
                .map(|(k, _)| format!("{}latency_us.", &k[..k.len() - "calls".len()]))
                .collect();
            for prefix in idle {
                figures.retain(|k, _| !k.starts_with(&prefix));
            }
            // Counts of a membarrier run over its own `seconds` (simulated
            // or wall-clock; nested per policy in the report's sweep), as
            // rates: the quick and full profiles simulate 5 and 20 s.
            let timed: Vec<(String, f64)> = figures
                .iter()
                .filter(|(k, s)| (k.as_str() == "seconds" || k.ends_with(".seconds")) && **s > 0.0)
                .map(|(k, s)| (k[..k.len() - "seconds".len()].to_owned(), *s))
                .collect();
            for (prefix, seconds) in timed {
                for count in SECONDS_COUNTS {
                    let Some(n) = figures.remove(&format!("{prefix}{count}")) else {
                        continue;
                    };
                    // `calls_per_s` is recorded beside `calls`: keep that one.
                    figures
                        .entry(format!("{prefix}{count}_per_s"))
                        .or_insert(n / seconds);
                }
            }
            // Torture and locktorture outcomes (they count failed checks)
            // record `failure` only when the run hung or panicked: 0 or 1
            // here, so a run that newly fails is a regression from zero.
            if fields.contains_key("errors") || fields.contains_key("fail") {
                let failed = f64::from(u8::from(fields.contains_key("failure")));
                figures.insert("failed".to_owned(), failed);
            }
            let mut key = format!("{section} {}", identity.join(" "));
            // Repeated runs of one configuration (the report's quick-QS runs)
            // are told apart by their order: the second is `run=2`, ...
            let mut run = 1;
            while out.contains_key(&key) {
                run += 1;
                key = format!("{section} {} run={run}", identity.join(" "));
            }
            out.insert(key, figures);
        }
    }
    out
}

/// The smallest rise from 0 that is judged a regression: 0.0005, what
/// printed as "0.001" when figures had three decimals. Below it a figure is
/// a trace (rcuscale's others' CPU time per wait of 0.0004 us where they did
/// nothing, flagged "0 -> 0.000" until 2026-12-07); counts start at 1.
const RISE_FROM_ZERO_FLOOR: f64 = 0.0005;

/// CPU figures by role that are judged against both roles' sum, the
/// writers' first: a torture outcome's per object replaced, and an rcuscale
/// outcome's per wait, whose others' time is often a few nanoseconds beside
/// the writers' microseconds (tripled from 0.005 to 0.015 us, it was judged
/// a +199% regression, printed "0.000 -> 0.000", until 2026-12-07). Of the
/// rcuscale pair only the others' figure is judged so: the writers' own
/// time per wait is what the writers pay, judged by its own change (see
/// [`roles_total`]).
const CPU_BY_ROLE: [[&str; 2]; 2] = [
    ["cpu.writer_per_object_ns", "cpu.others_per_object_ns"],
    ["cpu.writers_us", "cpu.others_us"],
];

/// What the writers and the other threads cost together in a run
/// (`figures`), where `figure` is one of a [`CPU_BY_ROLE`] pair and the run
/// has both.
fn roles_total(figure: &str, figures: &BTreeMap<String, f64>) -> Option<f64> {
    if figure == "cpu.writers_us" {
        return None;
    }
    let pair = CPU_BY_ROLE.iter().find(|pair| pair.contains(&figure))?;
    pair.iter().map(|f| figures.get(*f).copied()).sum()
}

fn collect_figures(path: &str, value: &Value, out: &mut BTreeMap<String, f64>) {
    match value {
        Value::Number(n) => {
            if let Some(f) = n.as_f64() {
                out.insert(path.to_owned(), f);
            }
        }
        Value::Object(map) => {
            for (k, v) in map {
                collect_figures(&format!("{path}.{k}"), v, out);
            }
        }
        _ => {}
    }
}

/// Compares two results documents.
pub fn compare(old: &Value, new: &Value, threshold_pct: f64) -> Comparison {
    let (a, b) = (flatten(old), flatten(new));
    let mut changes = Vec::new();
    // Figures of a measurement in both runs that only one of them has (a
    // NaN figure is written as null, which carries no number) are listed
    // with the measurements only one run has.
    let mut only_old: Vec<String> = Vec::new();
    let mut only_new: Vec<String> = Vec::new();
    let mut method_changes = Vec::new();
    for (measurement, new_figures) in &b {
        if let Some(old_figures) = a.get(measurement) {
            only_new.extend(
                new_figures
                    .keys()
                    .filter(|f| !old_figures.contains_key(*f))
                    .map(|f| format!("{measurement} {f}")),
            );
        }
    }
    for (measurement, old_figures) in &a {
        let Some(new_figures) = b.get(measurement) else {
            continue;
        };
        for (figure, &o) in old_figures {
            let Some(&n) = new_figures.get(figure) else {
                only_old.push(format!("{measurement} {figure}"));
                continue;
            };
            let mut dir = direction(figure);
            let window = "cpu.others_timed_window";
            if figure != EVERY_READER_IN
                && old_figures.get(EVERY_READER_IN) != new_figures.get(EVERY_READER_IN)
            {
                // Not like for like: shown, not judged.
                dir = Direction::Neutral;
                method_changes.push(format!(
                    "{measurement} {figure}: the {} run timed its waits without waiting for \
                     every reader to be in, and counted reads past them (before 2026-12-07)",
                    if old_figures.get(EVERY_READER_IN) == Some(&1.0) {
                        "new"
                    } else {
                        "old"
                    }
                ));
            } else if figure == "cpu.others_us"
                && old_figures.get(window) != new_figures.get(window)
            {
                // Not like for like: shown, not judged.
                dir = Direction::Neutral;
                method_changes.push(format!(
                    "{measurement} {figure}: the {} run's figure also counted starting the threads",
                    if old_figures.get(window) == Some(&1.0) {
                        "new"
                    } else {
                        "old"
                    }
                ));
            }
            let change_pct = (o != 0.0).then(|| (n - o) / o.abs() * 100.0);
            // A role's CPU time per object, against both roles' (see the
            // module docs).
            let judged_pct = roles_total(figure, old_figures)
                .filter(|total| *total > 0.0)
                .map(|total| (n - o) / total * 100.0);
            let worse_pct = match (dir, judged_pct.or(change_pct)) {
                (Direction::LowerIsBetter, Some(p)) => p,
                (Direction::HigherIsBetter, Some(p)) => -p,
                _ => 0.0,
            };
            // A figure rising from zero (no percentage to judge) is a
            // regression at any size from `RISE_FROM_ZERO_FLOOR` up: an
            // error count, objects held back, a CPU time of 500 us.
            let from_zero = o == 0.0
                && n >= RISE_FROM_ZERO_FLOOR
                && dir == Direction::LowerIsBetter
                && judged_pct.is_none();
            changes.push(Change {
                measurement: measurement.clone(),
                figure: figure.clone(),
                old: o,
                new: n,
                change_pct,
                judged_pct,
                direction: dir,
                regression: from_zero || past(worse_pct, threshold_pct),
                improvement: dir != Direction::Neutral && past(-worse_pct, threshold_pct),
            });
        }
    }
    only_old.extend(a.keys().filter(|k| !b.contains_key(*k)).cloned());
    only_new.extend(b.keys().filter(|k| !a.contains_key(*k)).cloned());
    let profile_difference = match (old.get("profile"), new.get("profile")) {
        (Some(pa), Some(pb)) if pa != pb => Some(format!("{pa} -> {pb}")),
        _ => None,
    };
    let mut machine_differences = Vec::new();
    let mut machine_cost_changes = Vec::new();
    let mut machine_unrecorded = Vec::new();
    if let (Some(Value::Object(ma)), Some(Value::Object(mb))) =
        (old.get("machine"), new.get("machine"))
    {
        // A field holding null (`cpu_id` where cpuinfo lacks it) is as good
        // as absent: there is nothing to compare.
        let recorded = |m: &Map<String, Value>, k: &str| m.get(k).filter(|v| !v.is_null()).cloned();
        let mut keys: Vec<&String> = ma.keys().chain(mb.keys()).collect();
        keys.sort();
        keys.dedup();
        for k in keys {
            match (recorded(ma, k), recorded(mb, k)) {
                (Some(va), Some(vb)) if va != vb => {
                    let line = format!("{k}: {va} -> {vb}");
                    if MEASURED_MACHINE_FIELDS.contains(&k.as_str()) {
                        machine_cost_changes.push(line);
                    } else {
                        machine_differences.push(line);
                    }
                }
                (Some(_), None) => machine_unrecorded.push(format!("{k} (old run only)")),
                (None, Some(_)) => machine_unrecorded.push(format!("{k} (new run only)")),
                _ => {}
            }
        }
    }
    let mut build_differences = Vec::new();
    match (old.get("build"), new.get("build")) {
        (Some(_), None) => build_differences.push("build recorded in the old run only".to_owned()),
        (None, Some(_)) => build_differences.push("build recorded in the new run only".to_owned()),
        _ => {}
    }
    if let (Some(Value::Object(ba)), Some(Value::Object(bb))) = (old.get("build"), new.get("build"))
    {
        let mut keys: Vec<&String> = ba.keys().chain(bb.keys()).collect();
        keys.sort();
        keys.dedup();
        for k in keys {
            let (va, vb) = (
                ba.get(k).unwrap_or(&Value::Null),
                bb.get(k).unwrap_or(&Value::Null),
            );
            if va != vb {
                build_differences.push(format!("{k}: {va} -> {vb}"));
            }
        }
    }
    let unoptimized = [("old run", old), ("new run", new)]
        .into_iter()
        .filter(|(_, run)| {
            run.get("build").is_some_and(|b| {
                b.get("opt_level").and_then(Value::as_str) == Some("0")
                    || b.get("debug_assertions").and_then(Value::as_bool) == Some(true)
            })
        })
        .map(|(which, _)| which.to_owned())
        .collect();
    let throttled = [("old run", old), ("new run", new)]
        .into_iter()
        .filter_map(|(which, run)| {
            let periods = run.get("throttled")?.get("periods")?.as_u64()?;
            (periods > 0).then(|| (which.to_owned(), periods))
        })
        .collect();
    Comparison {
        threshold_pct,
        changes,
        only_old,
        only_new,
        profile_difference,
        machine_differences,
        machine_cost_changes,
        machine_unrecorded,
        method_changes,
        build_differences,
        unoptimized,
        throttled,
    }
}

/// Writes the comparison as text: regressions first, then improvements, then
/// (with `all`) every other figure, and a summary line.
pub fn write_text(out: &mut impl Write, c: &Comparison, all: bool) -> std::io::Result<()> {
    if let Some(d) = &c.profile_difference {
        writeln!(
            out,
            "warning: profiles differ ({d}): other mixes, thread counts and run lengths; only \
             measurements in both are compared, counts per second of run"
        )?;
    }
    for d in &c.machine_differences {
        writeln!(
            out,
            "warning: machines differ ({d}); ratios across machines are not like for like"
        )?;
    }
    for which in &c.unoptimized {
        writeln!(
            out,
            "warning: the {which} was measured by an unoptimized syncbench build: its figures \
             compare with nothing"
        )?;
    }
    for (which, periods) in &c.throttled {
        writeln!(
            out,
            "warning: a cgroup CPU quota stopped the {which} {periods} time(s): its figures \
             include those stops (each up to a period, 100 ms by default)"
        )?;
    }
    for d in &c.build_differences {
        writeln!(out, "note: builds differ ({d})")?;
    }
    for d in &c.machine_cost_changes {
        writeln!(
            out,
            "note: a machine cost measured at the start moved ({d}); figures that depend on it move with it"
        )?;
    }
    if !c.machine_unrecorded.is_empty() {
        writeln!(
            out,
            "note: machine fields recorded in one run only: {}; a change there cannot be seen",
            c.machine_unrecorded.join(", ")
        )?;
    }
    // One line per reason, however many measurements share it (every
    // rcuscale row of a report does); the JSON lists each.
    let mut reasons: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for m in &c.method_changes {
        let (what, why) = m.split_once(": ").unwrap_or((m, ""));
        reasons.entry(why).or_default().push(what);
    }
    for (why, what) in reasons {
        let first = what[0];
        let more = match what.len() {
            1 => String::new(),
            n => format!(" and {} more", n - 1),
        };
        writeln!(
            out,
            "note: measured differently, not judged: {first}{more} ({why})"
        )?;
    }
    let line = |out: &mut dyn Write, ch: &Change, tag: &str| {
        let mut pct = ch
            .change_pct
            .map_or("n/a".to_owned(), |p| format!("{p:+.1}%"));
        if let Some(j) = ch.judged_pct {
            let per = if ch.figure.contains("per_object") {
                "an object's"
            } else {
                "a wait's"
            };
            pct.push_str(&format!("; {j:+.1}% of {per} CPU time"));
        }
        writeln!(
            out,
            "{tag:<11} {} {}: {} -> {} ({pct})",
            ch.measurement,
            ch.figure,
            fmt(ch.old),
            fmt(ch.new)
        )
    };
    for ch in c.changes.iter().filter(|ch| ch.regression) {
        line(out, ch, "REGRESSION")?;
    }
    for ch in c.changes.iter().filter(|ch| ch.improvement) {
        line(out, ch, "improved")?;
    }
    if all {
        for ch in c
            .changes
            .iter()
            .filter(|ch| !ch.regression && !ch.improvement)
        {
            line(out, ch, "")?;
        }
    }
    for m in &c.only_old {
        writeln!(out, "only in old: {m}")?;
    }
    for m in &c.only_new {
        writeln!(out, "only in new: {m}")?;
    }
    writeln!(
        out,
        "{} figures compared: {} regressions and {} improvements beyond {}%",
        c.changes.len(),
        c.regressions(),
        c.improvements(),
        c.threshold_pct
    )
}

fn fmt(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{v:.0}")
    } else if v.abs() < 0.01 {
        // Below 0.01, three significant figures: `{:.3}` printed 0.005 us
        // and 0.0015 us alike as "0.005" and "0.002", and 0.0004 as "0.000".
        format!("{v:.2e}")
    } else {
        format!("{v:.3}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn run(ns: f64, writes: u64, errors: u64) -> Value {
        json!({
            "profile": "quick",
            "machine": {"cpu": "X", "cores": 2, "full_fence_ns": 2.0},
            "refscale": [{"impl": "hazptr", "threads": 1, "ns_per_op": ns, "iterations": 100, "runs_ns": [ns]}],
            "locktorture": [{"lock": "qrwlock", "writers": 4, "readers": 16, "duration_s": 5.0,
                             "writes": {"total": writes, "max": 10, "min": 5}, "fail": 0}],
            "torture": [{"impl": "hazptr", "readers": 4, "writers": 2, "errors": errors}],
        })
    }

    #[test]
    fn flags_regressions_by_direction_and_threshold() {
        let c = compare(&run(1.0, 1000, 0), &run(1.2, 850, 0), 10.0);
        let get = |f: &str| c.changes.iter().find(|ch| ch.figure == f).unwrap();
        assert!(get("ns_per_op").regression, "20% slower reads");
        assert!(get("writes.total_per_s").regression, "15% fewer writes");
        assert!(
            !get("writes.max_per_s").regression
                && get("writes.max_per_s").direction == Direction::Neutral
        );
        assert!(!get("errors").regression);
        assert_eq!(c.regressions(), 2);
        // Settings are not figures; identity numbers are part of the key.
        assert!(
            c.changes
                .iter()
                .all(|ch| ch.figure != "iterations" && ch.figure != "duration_s")
        );
        assert!(get("ns_per_op").measurement.contains("threads=1"));

        let better = compare(&run(1.0, 1000, 0), &run(0.8, 1200, 0), 10.0);
        assert_eq!(better.regressions(), 0);
        assert_eq!(better.improvements(), 2);

        let within = compare(&run(1.0, 1000, 0), &run(1.05, 960, 0), 10.0);
        assert_eq!(within.regressions() + within.improvements(), 0);
    }

    #[test]
    fn counts_of_runs_of_different_lengths_compare_as_rates() {
        let mut long = run(1.0, 2500, 0);
        long["profile"] = json!("full");
        long["locktorture"][0]["duration_s"] = json!(12.5);
        long["locktorture"][0]["writes"]["max"] = json!(25);
        long["locktorture"][0]["writes"]["min"] = json!(12.5);
        // 1000 writes in 5 s against 2500 in 12.5 s: the same rate.
        let c = compare(&run(1.0, 1000, 0), &long, 10.0);
        let total = c
            .changes
            .iter()
            .find(|ch| ch.figure == "writes.total_per_s")
            .unwrap();
        assert_eq!((total.old, total.new), (200.0, 200.0));
        assert_eq!(c.regressions() + c.improvements(), 0);
        assert_eq!(
            c.profile_difference.as_deref(),
            Some("\"quick\" -> \"full\"")
        );
        assert!(c.machine_differences.is_empty());
    }

    #[test]
    fn membarrier_counts_of_runs_of_different_lengths_compare_as_rates() {
        // The quick profile simulates 5 s per sweep run, the full one 20 s:
        // the same rates, four times the counts.
        let sweep = |seconds: f64| {
            let outcome = |calls: f64, stalls: f64| {
                json!({"mode": "sim", "cpus": 64, "callers": 1600, "seconds": seconds,
                       "calls": calls * seconds, "calls_per_s": calls, "stalls": stalls * seconds,
                       "events": 3.0 * calls * seconds, "latency_us": {"max": 5.0}})
            };
            json!({"profile": "quick", "machine": {},
                   "membarrier_sweep": [{"cpus": 64, "callers": 1600, "ratio": 34.6,
                                         "global": outcome(1600.0, 785.0),
                                         "per_cpu": outcome(55000.0, 0.0)}]})
        };
        for (old, new) in [(5.0, 20.0), (20.0, 5.0)] {
            let c = compare(&sweep(old), &sweep(new), 10.0);
            assert_eq!(
                (c.regressions(), c.improvements()),
                (0, 0),
                "{old} s -> {new} s: {:?}",
                c.changes
                    .iter()
                    .filter(|ch| ch.regression || ch.improvement)
                    .collect::<Vec<_>>()
            );
            let get = |f: &str| c.changes.iter().find(|ch| ch.figure == f);
            assert_eq!(get("global.stalls_per_s").map(|ch| ch.new), Some(785.0));
            assert_eq!(get("global.calls_per_s").map(|ch| ch.new), Some(1600.0));
            assert!(get("global.calls").is_none() && get("global.stalls").is_none());
        }
        // More stalls per second is still a regression.
        let mut worse = sweep(5.0);
        worse["membarrier_sweep"][0]["global"]["stalls"] = json!(2.0 * 785.0 * 5.0);
        let c = compare(&sweep(5.0), &worse, 10.0);
        assert_eq!(c.regressions(), 1, "{:?}", c.changes);
    }

    #[test]
    fn times_and_rates_are_not_made_rates() {
        let with = |max_us: f64, served_min: f64, duration: f64| {
            json!({
                "rcuscale": [{"impl": "rcu-lite", "writers": 1, "readers": 1, "duration_s": duration,
                              "gps": 100, "latency_us": {"max": max_us}}],
                "locktorture": [{"lock": "qrwlock", "writers": 4, "readers": 16, "duration_s": duration,
                                 "writes_served_per_ms": {"min": served_min}, "fail": 0}],
            })
        };
        let c = compare(&with(10.0, 3.0, 1.0), &with(20.0, 3.0, 2.0), 10.0);
        let get = |f: &str| c.changes.iter().find(|ch| ch.figure == f).unwrap();
        assert!(get("latency_us.max").regression, "a doubled latency");
        assert!(!get("writes_served_per_ms.min").regression);
        assert!(
            get("gps_per_s").regression,
            "half the grace periods per second"
        );
    }

    #[test]
    fn a_figure_null_in_one_run_is_listed_not_dropped() {
        let mut new = run(1.0, 1000, 0);
        new["refscale"][0]["ns_per_op"] = Value::Null;
        let c = compare(&run(1.0, 1000, 0), &new, 10.0);
        assert_eq!(
            c.only_old,
            vec!["refscale impl=hazptr threads=1 ns_per_op".to_owned()]
        );
        assert!(c.only_new.is_empty());
    }

    #[test]
    fn the_gate_fails_on_missing_measurements_null_figures_and_nothing_compared() {
        let same = compare(&run(1.0, 1000, 0), &run(1.0, 1000, 0), 10.0);
        assert!(
            same.gate_failures().is_empty(),
            "{:?}",
            same.gate_failures()
        );

        let mut fewer = run(1.0, 1000, 0);
        fewer["torture"] = json!([]);
        let why = compare(&run(1.0, 1000, 0), &fewer, 10.0).gate_failures();
        assert_eq!(
            why,
            vec![
                "missing from the new run (measured in the old one): torture impl=hazptr \
                 readers=4 writers=2"
                    .to_owned()
            ]
        );

        let mut nan = run(1.0, 1000, 0);
        nan["refscale"][0]["ns_per_op"] = Value::Null;
        let why = compare(&run(1.0, 1000, 0), &nan, 10.0).gate_failures();
        assert_eq!(why.len(), 1, "{why:?}");
        assert!(
            why[0].contains("refscale impl=hazptr threads=1 ns_per_op"),
            "{why:?}"
        );

        let empty = json!({"profile": "quick", "machine": {}, "refscale": []});
        let why = compare(&empty, &empty, 10.0).gate_failures();
        assert_eq!(
            why,
            vec!["0 figures compared: the two runs have no figure in common".to_owned()]
        );

        let slower = compare(&run(1.0, 1000, 0), &run(2.0, 1000, 0), 10.0).gate_failures();
        assert_eq!(slower, vec!["1 figures regressed beyond 10%".to_owned()]);
    }

    /// A time named only by its `_us` suffix, with no `latency` in its path
    /// (rcuscale's `per_gp_us`, the membarrier run's `mutex_wait_max_us`),
    /// is lower-is-better: a grace period that takes twice as long regresses.
    #[test]
    fn a_figure_in_microseconds_is_a_time_even_without_latency_in_its_name() {
        assert_eq!(direction("per_gp_us"), Direction::LowerIsBetter);
        assert_eq!(
            direction("global.mutex_wait_max_us"),
            Direction::LowerIsBetter
        );
        let gp = |us: f64| json!({"rcuscale": [{"impl": "rcu-lite", "writers": 1, "readers": 1, "per_gp_us": us}]});
        let c = compare(&gp(10.0), &gp(20.0), 10.0);
        assert_eq!(c.regressions(), 1, "{:?}", c.changes);
    }

    /// A boolean field is part of a measurement's identity, as the report's
    /// `deferred_only` is: a deferred-only run is not the same measurement
    /// as a plain run of the same implementation, so a change between the
    /// two is not compared as a change of one figure.
    #[test]
    fn a_boolean_field_tells_measurements_apart() {
        let torture = |deferred_only: bool| {
            json!({"torture": [{"impl": "hazptr", "readers": 4, "writers": 2,
                                "deferred_only": deferred_only, "errors": 0}]})
        };
        assert_eq!(
            flatten(&torture(true)).keys().collect::<Vec<_>>(),
            ["torture deferred_only=true impl=hazptr readers=4 writers=2"]
        );
        let c = compare(&torture(false), &torture(true), 10.0);
        assert!(c.changes.is_empty(), "{:?}", c.changes);
        assert_eq!(
            c.only_old,
            ["torture deferred_only=false impl=hazptr readers=4 writers=2"]
        );
        assert_eq!(
            c.only_new,
            ["torture deferred_only=true impl=hazptr readers=4 writers=2"]
        );
    }

    /// The threshold is the most a figure may move and still be unflagged:
    /// a count worse or better by exactly the threshold is neither a
    /// regression nor an improvement (`unreclaimed_max` and `reads` are
    /// integers, so an exact 10% is a real outcome).
    #[test]
    fn a_change_of_exactly_the_threshold_is_not_flagged() {
        let torture = |unreclaimed_max: u64, reads: u64| {
            json!({"torture": [{"impl": "hazptr", "readers": 4, "writers": 2,
                                "unreclaimed_max": unreclaimed_max, "reads": reads}]})
        };
        let c = compare(&torture(100, 100), &torture(110, 110), 10.0);
        let pct: Vec<_> = c.changes.iter().map(|ch| ch.change_pct).collect();
        assert_eq!(pct, [Some(10.0), Some(10.0)], "{:?}", c.changes);
        assert_eq!(
            (c.regressions(), c.improvements()),
            (0, 0),
            "{:?}",
            c.changes
        );
        let c = compare(&torture(110, 110), &torture(99, 99), 10.0);
        assert_eq!(
            (c.regressions(), c.improvements()),
            (0, 0),
            "{:?}",
            c.changes
        );
    }

    /// A change is judged as printed, to 0.1%: 1 -> 1.1 (10.000000000000009%
    /// in floating point, "+10.0%") is no more past a 10% threshold than
    /// 100 -> 110, and 1.1 -> 0.99 is no improvement past it; 1 -> 1.1006
    /// ("+10.1%") is. (Until 2026-12-07 the first was flagged, the second
    /// not.)
    #[test]
    fn a_change_is_judged_as_printed() {
        let refscale =
            |ns: f64| json!({"refscale": [{"impl": "hazptr", "threads": 1, "ns_per_op": ns}]});
        let flagged = |old: f64, new: f64, threshold_pct: f64| {
            let c = compare(&refscale(old), &refscale(new), threshold_pct);
            (c.regressions(), c.improvements())
        };
        for (old, new) in [(1.0, 1.1), (0.3, 0.33), (2.0, 2.2), (7.0, 7.7), (1.1, 0.99)] {
            assert_eq!(flagged(old, new, 10.0), (0, 0), "{old} -> {new}");
        }
        assert_eq!(flagged(1.0, 1.1006, 10.0), (1, 0));
        assert_eq!(flagged(1.1006, 1.0, 10.0), (0, 0), "-9.1%");
        assert_eq!(flagged(1.0, 0.899, 10.0), (0, 1), "-10.1%");
        // 2000 -> 2601 is 30.049999999999997%, printed "+30.0%": not past
        // 30, though rounding the value gives 30.1.
        assert_eq!(flagged(2000.0, 2601.0, 30.0), (0, 0));
    }

    /// A figure rising from 0 is a regression from [`RISE_FROM_ZERO_FLOOR`]
    /// up (an error, objects held back, CPU time), not a trace below it:
    /// rcuscale's others' CPU time per wait is about 0 where they did
    /// nothing, and 0.0004 us was flagged "0 -> 0.000" until 2026-12-07.
    #[test]
    fn a_figure_rising_from_zero_is_a_regression_from_the_floor_up() {
        let run = |others_us: f64, errors: u64, unreclaimed_max: u64| {
            json!({"rcuscale": [{"impl": "rcu-lite", "writers": 1, "readers": 0, "duration_s": 1.0,
                                 "gps": 100, "cpu": {"others_us": others_us}}],
                   "torture": [{"impl": "hazptr", "readers": 4, "writers": 2, "reads": 100,
                                "errors": errors, "unreclaimed_max": unreclaimed_max}]})
        };
        let regressed = |old: Value, new: Value| -> Vec<String> {
            compare(&old, &new, 10.0)
                .changes
                .iter()
                .filter(|ch| ch.regression)
                .map(|ch| ch.figure.clone())
                .collect()
        };
        assert!(regressed(run(0.0, 0, 0), run(0.0004, 0, 0)).is_empty());
        assert_eq!(regressed(run(0.0, 0, 0), run(0.0, 1, 0)), ["errors"]);
        assert_eq!(
            regressed(run(0.0, 0, 0), run(500.0, 0, 0)),
            ["cpu.others_us"]
        );
        assert_eq!(
            regressed(run(0.0, 0, 0), run(0.0, 0, 1)),
            ["unreclaimed_max"]
        );
    }

    /// The membarrier sweep's ratio (per-CPU calls over global calls) is
    /// shown, not judged: a faster global path lowers it, and its two
    /// sides are judged on their own. (Until 2026-12-07 it was judged
    /// higher-is-better, so one change was both a regression and an
    /// improvement.)
    #[test]
    fn the_membarrier_ratio_is_not_judged() {
        let sweep = |global: f64| {
            let outcome = |calls: f64| {
                json!({"mode": "sim", "cpus": 64, "callers": 1600, "seconds": 5.0,
                       "calls": calls * 5.0, "calls_per_s": calls, "stalls": 0.0, "events": 0.0})
            };
            json!({"membarrier_sweep": [{"cpus": 64, "callers": 1600, "ratio": 24000.0 / global,
                                         "global": outcome(global),
                                         "per_cpu": outcome(24000.0)}]})
        };
        let c = compare(&sweep(5000.0), &sweep(8000.0), 10.0);
        assert_eq!(
            (c.regressions(), c.improvements()),
            (0, 1),
            "{:?}",
            c.changes
        );
        let ratio = c.changes.iter().find(|ch| ch.figure == "ratio").unwrap();
        assert_eq!(ratio.direction, Direction::Neutral);
    }

    /// Two runs of the same profile raise no profile warning: the warning
    /// (other mixes, thread counts and run lengths) is for runs whose
    /// profiles differ, and would be noise on every like-for-like compare.
    #[test]
    fn runs_of_one_profile_raise_no_profile_warning() {
        let c = compare(&run(1.0, 1000, 0), &run(1.0, 1000, 0), 10.0);
        assert_eq!(c.profile_difference, None);
        let mut text = Vec::new();
        write_text(&mut text, &c, false).unwrap();
        let text = String::from_utf8(text).unwrap();
        assert!(!text.contains("profiles differ"), "{text}");
    }

    /// With `all`, every figure is written once: a regression and an
    /// improvement under their tags only, and each figure that moved within
    /// the threshold on an untagged line of its own; without `all`, those
    /// within the threshold are left out.
    #[test]
    fn all_lists_each_unflagged_figure_once_and_flagged_ones_only_under_their_tag() {
        // Reads 20% slower, writes 20% more, errors unchanged.
        let c = compare(&run(1.0, 1000, 0), &run(1.2, 1200, 0), 10.0);
        let text = |all: bool| {
            let mut text = Vec::new();
            write_text(&mut text, &c, all).unwrap();
            String::from_utf8(text).unwrap()
        };
        let lines_with = |text: &str, what: &str| {
            text.lines()
                .filter(|l| l.contains(what))
                .map(str::to_owned)
                .collect::<Vec<_>>()
        };
        let all = text(true);
        assert_eq!(
            lines_with(&all, "ns_per_op"),
            ["REGRESSION  refscale impl=hazptr threads=1 ns_per_op: 1 -> 1.200 (+20.0%)"],
            "{all}"
        );
        assert_eq!(
            lines_with(&all, "writes.total_per_s"),
            [
                "improved    locktorture lock=qrwlock readers=16 writers=4 writes.total_per_s: \
                 200 -> 240 (+20.0%)"
            ],
            "{all}"
        );
        assert_eq!(
            lines_with(&all, "errors"),
            ["            torture impl=hazptr readers=4 writers=2 errors: 0 -> 0 (n/a)"],
            "{all}"
        );
        let flagged = text(false);
        assert!(lines_with(&flagged, "errors").is_empty(), "{flagged}");
        assert_eq!(lines_with(&flagged, "ns_per_op").len(), 1, "{flagged}");
    }

    /// Figures print whole when they are whole and to three decimals when
    /// not: 0.5 us is not rounded to "0" or "1".
    #[test]
    fn figures_print_whole_numbers_whole_and_fractions_to_three_places() {
        assert_eq!(fmt(3.0), "3");
        assert_eq!(fmt(-40.0), "-40");
        assert_eq!(fmt(0.5), "0.500");
        assert_eq!(fmt(1234.5678), "1234.568");
        assert_eq!(fmt(0.012_34), "0.012");
        assert_eq!(fmt(0.005_012), "5.01e-3");
        assert_eq!(fmt(-8.7e-5), "-8.70e-5");
    }

    #[test]
    fn results_documents_need_a_profile_a_machine_and_a_section() {
        assert_eq!(check_results("a.json", &run(1.0, 1000, 0)), Ok(()));
        let refused = |doc: Value| check_results("a.json", &doc).unwrap_err();
        assert!(
            refused(json!({}))
                .contains("a.json is not a syncbench results.json: it has no key \"profile\"")
        );
        assert!(refused(json!([])).contains("expected an object"));
        assert!(
            refused(json!({"profile": "quick", "refscale": []}))
                .contains("it has no key \"machine\"")
        );
        assert!(refused(json!({"profile": 3, "machine": {}})).contains("\"profile\" is 3"));
        assert!(
            refused(json!({"profile": "quick", "machine": {}, "wall_s": 1.0}))
                .contains("it has no section")
        );
    }

    #[test]
    fn errors_rising_from_zero_always_regress() {
        let c = compare(&run(1.0, 1000, 0), &run(1.0, 1000, 1), 10.0);
        assert_eq!(c.regressions(), 1);
        let mut text = Vec::new();
        write_text(&mut text, &c, false).unwrap();
        let text = String::from_utf8(text).unwrap();
        assert!(
            text.contains("REGRESSION  torture impl=hazptr readers=4 writers=2 errors: 0 -> 1"),
            "{text}"
        );
    }

    #[test]
    fn torture_cpu_time_is_compared_per_object_replaced() {
        let torture = |duration_s: f64, replaced: u64, writers_s: f64, others: Option<f64>| {
            let mut cpu = json!({"readers_s": 3.0, "writers_s": writers_s});
            if let Some(o) = others {
                cpu["others_s"] = json!(o);
            }
            json!({"profile": "quick", "machine": {"cpu": "X"},
                   "deferred_free": [{"impl": "hazptr", "readers": 4, "writers": 2,
                                      "duration_s": duration_s, "replaced": replaced,
                                      "errors": 0, "cpu": cpu}]})
        };
        let flat = flatten(&torture(2.0, 2_000_000, 0.4, Some(0.002)));
        let figures = &flat["deferred_free impl=hazptr readers=4 writers=2"];
        assert_eq!(figures["cpu.writer_per_object_ns"], 200.0, "{figures:?}");
        assert_eq!(figures["cpu.others_per_object_ns"], 1.0, "{figures:?}");
        assert_eq!(figures["replaced_per_s"], 1_000_000.0);
        // Twice the objects in a run twice as long, at the same CPU time
        // per object: no change, though every second doubled.
        let c = compare(
            &torture(2.0, 2_000_000, 0.4, Some(0.002)),
            &torture(4.0, 4_000_000, 0.8, Some(0.004)),
            10.0,
        );
        assert_eq!(c.regressions() + c.improvements(), 0, "{c:?}");
        assert_eq!(
            direction("cpu.writer_per_object_ns"),
            Direction::LowerIsBetter
        );
        // The writers' CPU time per object up by a quarter: a regression;
        // a run without the others' time has no such figure to compare.
        let c = compare(
            &torture(2.0, 2_000_000, 0.4, Some(0.002)),
            &torture(2.0, 2_000_000, 0.5, None),
            10.0,
        );
        let get = |f: &str| c.changes.iter().find(|ch| ch.figure == f);
        assert!(get("cpu.writer_per_object_ns").unwrap().regression, "{c:?}");
        assert_eq!(get("cpu.writer_per_object_ns").unwrap().new, 250.0);
        assert!(!get("cpu.writers_s").unwrap().regression);
        assert!(get("cpu.others_per_object_ns").is_none());
        assert_eq!(c.regressions(), 1, "{c:?}");
        // Nothing replaced: nothing to divide by.
        let flat = flatten(&torture(2.0, 0, 0.4, Some(0.002)));
        let figures = &flat["deferred_free impl=hazptr readers=4 writers=2"];
        assert!(!figures.contains_key("cpu.writer_per_object_ns"));
    }

    #[test]
    fn a_roles_cpu_time_per_object_is_judged_against_the_whole_objects() {
        let torture = |writers_s: f64, others_s: f64| {
            json!({"profile": "quick", "machine": {"cpu": "X"},
                   "deferred_free": [{"impl": "hazptr", "readers": 4, "writers": 2,
                                      "duration_s": 1.0, "replaced": 1_000_000,
                                      "errors": 0,
                                      "cpu": {"writers_s": writers_s, "others_s": others_s}}]})
        };
        let get = |c: &Comparison, f: &str| {
            c.changes
                .iter()
                .find(|ch| ch.figure == f)
                .cloned()
                .unwrap_or_else(|| panic!("no {f} in {c:?}"))
        };
        // The others' time from 0.3 to 0.7 ns per object beside the writers'
        // 230: +133% of itself, +0.17% of an object's cost. Not judged a
        // regression, though its own change is still shown.
        let c = compare(&torture(230e-3, 0.3e-3), &torture(230e-3, 0.7e-3), 10.0);
        let others = get(&c, "cpu.others_per_object_ns");
        assert!(!others.regression, "{others:?}");
        assert!(
            (others.change_pct.unwrap() - 133.33).abs() < 0.01,
            "{others:?}"
        );
        assert!((others.judged_pct.unwrap() - 0.4 / 230.3 * 100.0).abs() < 1e-3);
        assert_eq!(c.regressions(), 0, "{c:?}");
        let mut text = Vec::new();
        write_text(&mut text, &c, true).unwrap();
        let text = String::from_utf8(text).unwrap();
        assert!(
            text.contains(
                "cpu.others_per_object_ns: 0.300 -> 0.700 (+133.3%; +0.2% of an object's CPU time)"
            ),
            "{text}"
        );
        // From nothing to 1 ns: not an error count rising from zero.
        let c = compare(&torture(200e-3, 0.0), &torture(200e-3, 1e-3), 10.0);
        assert!(!get(&c, "cpu.others_per_object_ns").regression, "{c:?}");
        // The others' time growing by a fifth of the whole object's is one,
        // and so is its fall an improvement.
        let c = compare(&torture(200e-3, 50e-3), &torture(200e-3, 100e-3), 10.0);
        let others = get(&c, "cpu.others_per_object_ns");
        assert!(others.regression, "{others:?}");
        assert_eq!(others.judged_pct, Some(20.0));
        let c = compare(&torture(200e-3, 100e-3), &torture(200e-3, 50e-3), 10.0);
        assert!(get(&c, "cpu.others_per_object_ns").improvement, "{c:?}");
        // The writers' figure is judged the same way: 200 to 225 beside
        // others' 50 is +10% of the object's 250, not beyond 10%.
        let c = compare(&torture(200e-3, 50e-3), &torture(225e-3, 50e-3), 10.0);
        let writers = get(&c, "cpu.writer_per_object_ns");
        assert_eq!(writers.judged_pct, Some(10.0));
        assert!(!writers.regression && (writers.change_pct.unwrap() - 12.5).abs() < 1e-9);
        // Other figures keep their own change.
        assert_eq!(get(&c, "errors").judged_pct, None);
    }

    /// rcuscale's FQS counts (over all rounds, as `duration_s`) and the
    /// membarrier timer's passes (over `seconds`) are compared per second,
    /// as the other counts of a run: a quick run against a full one does not
    /// show them growing with the run's length. They are shown, not judged.
    #[test]
    fn fqs_and_timer_counts_are_compared_per_second() {
        let rcuscale = json!({"rcuscale": [{"impl": "rcu-lite", "writers": 1, "readers": 0,
                                            "per_gp_us": 5.0, "duration_s": 2.0,
                                            "fqs": {"grace_periods": 800, "fqs_waits": 40}}]});
        let flat = flatten(&rcuscale);
        let figures = flat.values().next().unwrap();
        assert_eq!(figures["fqs.grace_periods_per_s"], 400.0, "{figures:?}");
        assert_eq!(figures["fqs.fqs_waits_per_s"], 20.0, "{figures:?}");
        assert!(
            !figures.contains_key("fqs.grace_periods") && !figures.contains_key("fqs.fqs_waits")
        );
        let sweep = json!({"membarrier_sweep": [{"cpus": 64, "callers": 1600,
            "global": {"mode": "sim", "seconds": 5.0, "calls": 100,
                       "timer": {"passes": 1000, "chained": 10, "period_scalings": 1}}}]});
        let flat = flatten(&sweep);
        let figures = flat.values().next().unwrap();
        assert_eq!(figures["global.timer.passes_per_s"], 200.0, "{figures:?}");
        assert_eq!(figures["global.timer.chained_per_s"], 2.0, "{figures:?}");
        assert!(!figures.contains_key("global.timer.passes"), "{figures:?}");
        for figure in ["fqs.grace_periods_per_s", "global.timer.passes_per_s"] {
            assert_eq!(direction(figure), Direction::Neutral, "{figure}");
        }
    }

    /// No figure of an rcuscale outcome is judged between a run timed before
    /// every reader was in (results from before 2026-12-07, no flag) and one
    /// timed after; the flag splits no measurement, and the same way in both
    /// runs is judged as usual.
    #[test]
    fn rcuscale_runs_timed_two_ways_are_shown_not_judged() {
        let run = |per_gp_us: f64, every_reader_in: Option<bool>| {
            let mut outcome = json!({"impl": "rcu-lite", "writers": 1, "readers": 4,
                                     "idle_threads": 0, "per_gp_us": per_gp_us,
                                     "latency_us": {"mean": per_gp_us}, "gps": 100,
                                     "duration_s": 1.0});
            if let Some(flag) = every_reader_in {
                outcome["timed_with_every_reader_in"] = json!(flag);
            }
            json!({"profile": "quick", "machine": {"cpu": "X"}, "rcuscale": [outcome]})
        };
        let per_gp = |c: &Comparison| {
            c.changes
                .iter()
                .find(|ch| ch.figure == "per_gp_us")
                .cloned()
                .unwrap()
        };
        // 0.5 us before, 12 us after: not a regression, a change of method.
        let c = compare(&run(0.5, None), &run(12.0, Some(true)), 10.0);
        assert!(c.only_old.is_empty() && c.only_new.is_empty(), "{c:?}");
        assert!(!per_gp(&c).regression, "{c:?}");
        assert_eq!(c.improvements() + c.regressions(), 0, "{c:?}");
        assert!(
            c.method_changes
                .iter()
                .all(|m| m.contains("the old run timed its waits without waiting")),
            "{c:?}"
        );
        assert!(
            c.method_changes.iter().any(|m| m.contains("per_gp_us")),
            "{c:?}"
        );
        let c = compare(&run(12.0, Some(true)), &run(0.5, Some(false)), 10.0);
        assert!(!per_gp(&c).improvement, "{c:?}");
        assert!(c.method_changes[0].contains("the new run timed"), "{c:?}");
        // The same way in both runs: judged.
        let c = compare(&run(6.0, Some(true)), &run(12.0, Some(true)), 10.0);
        assert!(
            per_gp(&c).regression && c.method_changes.is_empty(),
            "{c:?}"
        );
        let c = compare(&run(6.0, None), &run(12.0, None), 10.0);
        assert!(
            per_gp(&c).regression && c.method_changes.is_empty(),
            "{c:?}"
        );
    }

    /// rcuscale's others' CPU time is judged only between runs that measured
    /// it the same way: a run from before the timed window (no flag)
    /// against one after it is shown with a note, not flagged.
    #[test]
    fn others_cpu_time_measured_two_ways_is_shown_not_judged() {
        let run = |others_us: f64, window: Option<bool>| {
            let mut cpu = json!({"writers_us": 3.0, "others_us": others_us});
            if let Some(w) = window {
                cpu["others_timed_window"] = json!(w);
            }
            json!({"profile": "quick", "machine": {"cpu": "X"},
                   "rcuscale": [{"impl": "crossbeam-epoch", "writers": 1, "readers": 1,
                                 "idle_threads": 256, "per_gp_us": 5.0, "cpu": cpu}]})
        };
        let others = |c: &Comparison| {
            c.changes
                .iter()
                .find(|ch| ch.figure == "cpu.others_us")
                .cloned()
                .unwrap()
        };
        // The old way (thread start counted) against the new: not judged.
        let c = compare(&run(0.5, None), &run(0.002, Some(true)), 10.0);
        assert!(!others(&c).improvement && !others(&c).regression, "{c:?}");
        assert_eq!(c.improvements() + c.regressions(), 0, "{c:?}");
        assert_eq!(c.method_changes.len(), 1, "{c:?}");
        assert!(c.method_changes[0].contains("the old run's figure also counted"));
        let mut text = Vec::new();
        write_text(&mut text, &c, false).unwrap();
        let text = String::from_utf8(text).unwrap();
        assert!(
            text.contains(
                "note: measured differently, not judged: rcuscale idle_threads=256 \
                 impl=crossbeam-epoch readers=1 writers=1 cpu.others_us (the old run's figure \
                 also counted starting the threads)"
            ),
            "{text}"
        );
        // And the other way round.
        let c = compare(&run(0.002, Some(true)), &run(0.5, Some(false)), 10.0);
        assert!(!others(&c).regression, "{c:?}");
        assert!(c.method_changes[0].contains("the new run's figure also counted"));
        // The same way in both runs: judged as any time.
        let c = compare(&run(0.5, Some(true)), &run(1.0, Some(true)), 10.0);
        assert!(others(&c).regression, "{c:?}");
        assert!(c.method_changes.is_empty());
        let c = compare(&run(0.5, None), &run(1.0, None), 10.0);
        assert!(others(&c).regression, "{c:?}");
    }

    /// A membarrier run that completed no call has no latency to compare:
    /// the zeros results saved before 2026-12-07 recorded there are left
    /// out, so they neither fail the gate as figures gone from a newer run
    /// nor make a real latency a rise from 0.
    #[test]
    fn zero_latencies_of_a_run_with_no_call_are_not_compared() {
        let sweep = |latency: Option<f64>, calls: u64| {
            let mut global = json!({"calls": calls, "seconds": 5.0});
            if let Some(us) = latency {
                global["latency_us"] = json!({"mean": us, "p50": us, "p99": us, "max": us});
            }
            json!({"profile": "quick", "machine": {"cpu": "X"},
                   "membarrier_sweep": [{"cpus": 8, "callers": 200, "global": global}]})
        };
        let old = sweep(Some(0.0), 0);
        let c = compare(&old, &sweep(None, 0), 10.0);
        assert!(
            c.gate_failures().iter().all(|f| !f.contains("latency")),
            "{c:?}"
        );
        let c = compare(&old, &sweep(Some(4_999_610.0), 3), 10.0);
        assert!(
            c.changes.iter().all(|ch| !ch.figure.contains("latency")),
            "{c:?}"
        );
        // With calls on both sides, latencies compare as before.
        let c = compare(&sweep(Some(10.0), 3), &sweep(Some(30.0), 3), 10.0);
        assert!(
            c.changes
                .iter()
                .any(|ch| ch.figure == "global.latency_us.p99" && ch.regression),
            "{c:?}"
        );
    }

    /// rcuscale's CPU time per wait by role is judged as a share of both
    /// roles', as torture's per object is: the others' few nanoseconds
    /// tripling beside the writers' 50 us is no regression (judged +199%
    /// and printed "0.000 -> 0.000" until 2026-12-07), and the line shows
    /// the figures.
    #[test]
    fn others_cpu_time_per_wait_is_judged_against_both_roles() {
        let run = |writers_us: f64, others_us: f64| {
            json!({"profile": "quick", "machine": {"cpu": "X"},
                   "rcuscale": [{"impl": "rcu-lite-qsbr", "writers": 1, "readers": 1,
                                 "per_gp_us": 5.0,
                                 "cpu": {"writers_us": writers_us, "others_us": others_us,
                                         "others_timed_window": true}}]})
        };
        let figure = |c: &Comparison, name: &str| {
            c.changes
                .iter()
                .find(|ch| ch.figure == name)
                .cloned()
                .unwrap()
        };
        let c = compare(&run(50.0, 0.005), &run(50.0, 0.015), 10.0);
        let others = figure(&c, "cpu.others_us");
        assert!(!others.regression, "{c:?}");
        assert!((others.judged_pct.unwrap() - 0.01 / 50.005 * 100.0).abs() < 1e-9);
        let mut text = Vec::new();
        write_text(&mut text, &c, true).unwrap();
        let text = String::from_utf8(text).unwrap();
        assert!(
            text.contains("cpu.others_us: 5.00e-3 -> 0.015 (+200.0%; +0.0% of a wait's CPU time)"),
            "{text}"
        );
        // The others' time grown to a real share of the wait still is one.
        let c = compare(&run(50.0, 0.005), &run(50.0, 10.0), 10.0);
        assert!(figure(&c, "cpu.others_us").regression, "{c:?}");
        // The writers' own time is judged by its own change, beside
        // others' time of any size.
        let c = compare(&run(50.0, 0.005), &run(60.0, 0.005), 10.0);
        assert!(figure(&c, "cpu.writers_us").regression, "{c:?}");
        assert_eq!(figure(&c, "cpu.writers_us").judged_pct, None);
        let c = compare(&run(4.08, 4.55), &run(4.9, 4.55), 10.0);
        assert!(figure(&c, "cpu.writers_us").regression, "{c:?}");
    }

    #[test]
    fn repeated_runs_of_one_configuration_are_compared_run_by_run() {
        let runs = |a: f64, b: f64| {
            json!({"quick_qs": [
                {"impl": "rcu-lite", "writers": 1, "latency_us": {"max": a}},
                {"impl": "rcu-lite", "writers": 1, "latency_us": {"max": b}},
            ]})
        };
        let flat = flatten(&runs(3.0, 4.0));
        assert_eq!(flat.len(), 2, "{flat:?}");
        assert_eq!(
            flat["quick_qs impl=rcu-lite writers=1"]["latency_us.max"],
            3.0
        );
        assert_eq!(
            flat["quick_qs impl=rcu-lite writers=1 run=2"]["latency_us.max"],
            4.0
        );
        // Only the second run got slower: one regression, on that run.
        let c = compare(&runs(3.0, 4.0), &runs(3.0, 8.0), 10.0);
        assert_eq!(c.regressions(), 1);
        assert!(
            c.changes
                .iter()
                .any(|ch| ch.regression && ch.measurement.ends_with("run=2"))
        );
    }

    #[test]
    fn a_run_that_newly_fails_is_a_regression_and_injected_faults_are_not() {
        let mut old = run(1.0, 1000, 0);
        old["torture"][0]["faults"] = json!({"stalls": 0, "panics": 2});
        let mut new = run(1.0, 1000, 1);
        new["torture"][0]["failure"] = json!("hang: no progress for 10 s");
        new["torture"][0]["faults"] = json!({"stalls": 5, "panics": 1});
        let c = compare(&old, &new, 10.0);
        assert!(c.only_old.is_empty() && c.only_new.is_empty(), "{c:?}");
        let get = |f: &str| {
            c.changes
                .iter()
                .find(|ch| ch.measurement.starts_with("torture") && ch.figure == f)
                .unwrap()
        };
        assert!(get("failed").regression, "{:?}", get("failed"));
        assert!(get("errors").regression, "{:?}", get("errors"));
        assert_eq!((get("failed").old, get("failed").new), (0.0, 1.0));
        assert!(!get("faults.stalls").regression && !get("faults.panics").improvement);
        assert_eq!(c.regressions(), 2);
        // The membarrier sweep's stalls are results.
        assert_eq!(direction("stalls"), Direction::LowerIsBetter);
        // Rates the runs record themselves, and times in milliseconds.
        assert_eq!(direction("per_cpu.calls_per_s"), Direction::HigherIsBetter);
        assert_eq!(direction("ops_per_s"), Direction::HigherIsBetter);
        assert_eq!(direction("write_max_ms"), Direction::LowerIsBetter);
        assert_eq!(
            direction("global.irq_off_longest_ms"),
            Direction::LowerIsBetter
        );
        assert_eq!(direction("rss_max_kib"), Direction::LowerIsBetter);
        // Lock runs count failures too.
        assert!(
            flatten(&old)["locktorture lock=qrwlock readers=16 writers=4"].contains_key("failed")
        );
        assert!(!flatten(&old)["refscale impl=hazptr threads=1"].contains_key("failed"));
    }

    #[test]
    fn added_and_removed_measurements_and_machines_are_reported() {
        let mut new = run(1.0, 1000, 0);
        new["refscale"][0]["impl"] = json!("hazptr-v2");
        new["machine"]["cores"] = json!(16);
        new["machine"]["full_fence_ns"] = json!(5.0);
        new["machine"]["cpu_id"] = json!("family 26 model 2 stepping 1");
        let mut old = run(1.0, 1000, 0);
        // Null, as `cpu_id` serializes where cpuinfo lacks it: not recorded.
        old["machine"]["cpu_id"] = Value::Null;
        let c = compare(&old, &new, 10.0);
        assert_eq!(
            c.only_old,
            vec!["refscale impl=hazptr threads=1".to_owned()]
        );
        assert_eq!(
            c.only_new,
            vec!["refscale impl=hazptr-v2 threads=1".to_owned()]
        );
        assert_eq!(c.machine_differences, vec!["cores: 2 -> 16".to_owned()]);
        assert_eq!(
            c.machine_cost_changes,
            vec!["full_fence_ns: 2.0 -> 5.0".to_owned()]
        );
        assert_eq!(
            c.machine_unrecorded,
            vec!["cpu_id (new run only)".to_owned()]
        );
        assert_eq!(
            compare(&new, &old, 10.0).machine_unrecorded,
            vec!["cpu_id (old run only)".to_owned()]
        );
        let mut text = Vec::new();
        write_text(&mut text, &c, false).unwrap();
        let text = String::from_utf8(text).unwrap();
        assert!(
            text.contains("warning: machines differ (cores: 2 -> 16)")
                && text.contains(
                    "note: a machine cost measured at the start moved (full_fence_ns: 2.0 -> 5.0)"
                )
                && text.contains(
                    "note: machine fields recorded in one run only: cpu_id (new run only)"
                )
                && !text.contains("machines differ (full_fence_ns")
                && !text.contains("machines differ (cpu_id"),
            "{text}"
        );
    }

    /// Builds that differ are named (the commit is usually the point of the
    /// comparison), none of their fields is judged as a figure, and a run
    /// by an unoptimized build is flagged.
    #[test]
    fn builds_that_differ_are_noted_and_an_unoptimized_one_is_flagged() {
        let build = |commit: &str, opt: &str, debug: bool| {
            json!({"version": "0.1.0", "commit": commit, "opt_level": opt,
                   "debug_assertions": debug, "target": "x86_64-unknown-linux-gnu",
                   "peers": ["parking_lot 0.13.0"], "liburcu": "0.13.2"})
        };
        let mut old = run(1.0, 1000, 0);
        let mut new = run(1.0, 1000, 0);
        old["build"] = build("aaaaaaaaaaaa", "3", false);
        new["build"] = build("bbbbbbbbbbbb-dirty", "3", false);
        let c = compare(&old, &new, 10.0);
        assert_eq!(
            c.build_differences,
            vec![r#"commit: "aaaaaaaaaaaa" -> "bbbbbbbbbbbb-dirty""#.to_owned()]
        );
        assert!(c.unoptimized.is_empty());
        assert!(
            c.changes
                .iter()
                .all(|ch| !ch.measurement.starts_with("build")),
            "{:?}",
            c.changes
        );
        new["build"] = build("bbbbbbbbbbbb", "0", true);
        // A throttled run is flagged too, one that was not is not.
        old["throttled"] = json!({"periods": 0, "stopped_ms": 0.0});
        new["throttled"] = json!({"periods": 11, "stopped_ms": 1633.0});
        let c = compare(&old, &new, 10.0);
        assert_eq!(c.unoptimized, vec!["new run".to_owned()]);
        assert_eq!(c.throttled, vec![("new run".to_owned(), 11)]);
        let mut text = Vec::new();
        write_text(&mut text, &c, false).unwrap();
        let text = String::from_utf8(text).unwrap();
        assert!(
            text.contains("warning: the new run was measured by an unoptimized syncbench build")
                && text.contains("warning: a cgroup CPU quota stopped the new run 11 time(s)")
                && text.contains(r#"note: builds differ (opt_level: "3" -> "0")"#),
            "{text}"
        );
        // A run from before builds were recorded: nothing to compare, but
        // said.
        old.as_object_mut().unwrap().remove("build");
        let c = compare(&old, &new, 10.0);
        assert_eq!(
            c.build_differences,
            vec!["build recorded in the new run only".to_owned()]
        );
    }
}
