//! The `syncbench` binary, run as a user would run it.

use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

fn syncbench(args: &[&str]) -> Output {
    let run = || {
        Command::new(env!("CARGO_BIN_EXE_syncbench"))
            .args(args)
            .output()
            .expect("syncbench runs")
    };
    let mut out = run();
    // A short torture run whose timed window a loaded machine left without a
    // read or a replacement "checked nothing" and exits 1 for that alone: it
    // says nothing of the implementations, so it is run again (up to four
    // runs in all). A run that found errors, or failed otherwise, is never
    // rerun.
    for _ in 0..3 {
        if args.first() != Some(&"torture")
            || out.status.success()
            || !torture_only_checked_nothing(&String::from_utf8_lossy(&out.stdout))
        {
            break;
        }
        out = run();
    }
    out
}

/// Whether a failed torture run's stdout (text or `--json`) shows only
/// "checked nothing" failures: every implementation either passed (0
/// errors) or failed for that alone, which counts one error and nothing
/// else (`torture::Run::finish`).
fn torture_only_checked_nothing(stdout: &str) -> bool {
    const CHECKED_NOTHING: &str = "checked nothing";
    if let Ok(serde_json::Value::Array(rows)) = serde_json::from_str(stdout) {
        let mut any = false;
        for row in &rows {
            let errors = row["errors"].as_u64();
            match row["failure"].as_str() {
                None if errors == Some(0) => {}
                Some(f) if f.starts_with(CHECKED_NOTHING) && errors == Some(1) => any = true,
                _ => return false,
            }
        }
        return any;
    }
    // Text: "torture: NAME readers=... errors: N[ !!!]" per implementation,
    // and "torture: NAME FAILURE: ..." for one that failed.
    let mut any = false;
    for line in stdout.lines() {
        let Some(rest) = line.strip_prefix("torture: ") else {
            continue;
        };
        let Some((name, rest)) = rest.split_once(' ') else {
            continue;
        };
        if let Some(failure) = rest.strip_prefix("FAILURE: ") {
            if !failure.starts_with(CHECKED_NOTHING) {
                return false;
            }
            any = true;
        } else if let Some((_, count)) = rest.rsplit_once(" errors: ") {
            let count: u64 = match count.trim_end_matches(" !!!").parse() {
                Ok(n) => n,
                Err(_) => return false,
            };
            let checked_nothing =
                stdout.contains(&format!("torture: {name} FAILURE: {CHECKED_NOTHING}"));
            if count != u64::from(checked_nothing) {
                return false;
            }
        }
    }
    any
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The reference run's results.json, which report and compare tests read.
const REFERENCE_RESULTS: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../docs/reference-report/results.json"
);

/// A fresh directory for one test's files, named after it and this process.
fn scratch_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Runs syncbench as [`syncbench`] does, but kills it and fails the test if
/// it is still running after `limit`: for refusals that must come before a
/// long or unbounded run.
fn syncbench_within(args: &[&str], limit: Duration) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_syncbench"));
    command.args(args);
    run_within(command, args, limit)
}

/// Runs `command` (syncbench with `args`) as [`syncbench_within`] does.
fn run_within(mut command: Command, args: &[&str], limit: Duration) -> Output {
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("syncbench runs");
    let began = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if began.elapsed() > limit {
            child.kill().unwrap();
            let out = child.wait_with_output().unwrap();
            panic!(
                "{args:?} still running after {limit:?}; stderr:\n{}",
                stderr(&out)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

#[test]
fn list_names_every_implementation_by_kind() {
    let out = syncbench(&["list"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8(out.stdout).unwrap();
    for name in [
        "crossbeam-epoch",
        "haphazard",
        "seize",
        "arc-swap",
        "seqlock",
        "parking_lot-read",
        "std-read",
        "parking_lot",
        "spin",
    ] {
        assert!(text.contains(name), "{name} missing from:\n{text}");
    }
    let out = syncbench(&["list", "--json"]);
    let kinds: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let commands: Vec<&str> = kinds
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["command"].as_str().unwrap())
        .collect();
    assert!(commands.contains(&"refscale") && commands.contains(&"locktorture"));
}

#[test]
fn refscale_json_has_a_median_per_implementation() {
    let out = syncbench(&[
        "refscale",
        "--impl",
        "arc-swap,seqlock",
        "--iterations",
        "1000",
        "--runs",
        "3",
        "--threads",
        "2",
        "--json",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let rows: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let rows = rows.as_array().unwrap();
    assert_eq!(rows.len(), 2);
    for row in rows {
        assert_eq!(row["threads"], 2);
        let ns = row["ns_per_op"].as_f64().unwrap();
        assert!(ns > 0.0 && ns.is_finite(), "{row}");
        assert_eq!(row["runs_ns"].as_array().unwrap().len(), 3);
    }
    assert_eq!(rows[0]["impl"], "arc-swap");
}

#[test]
fn refscale_text_has_kernel_style_lines() {
    let out = syncbench(&[
        "refscale",
        "--impl",
        "std-read",
        "--iterations",
        "1000",
        "--runs",
        "2",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("Runs\tTime(ns)\n1\t"), "{text}");
    assert!(
        text.contains("\n2\t") && text.contains("median\t"),
        "{text}"
    );
}

#[test]
fn locktorture_json_and_kernel_lines() {
    let out = syncbench(&[
        "locktorture",
        "--lock",
        "parking_lot,std",
        "--writers",
        "1",
        "--readers",
        "2",
        "--duration-s",
        "0.3",
        "--json",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let rows: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    for row in rows.as_array().unwrap() {
        assert_eq!(row["fail"], 0, "{row}");
        assert_eq!(row["writers"], 1);
        assert_eq!(row["readers"], 2);
        for side in ["writes", "reads"] {
            let c = &row[side];
            assert!(
                c["total"].as_u64().unwrap() >= c["max"].as_u64().unwrap(),
                "{row}"
            );
            assert!(
                c["max"].as_u64().unwrap() >= c["min"].as_u64().unwrap(),
                "{row}"
            );
        }
    }
    let out = syncbench(&[
        "locktorture",
        "--lock",
        "spin",
        "--writers",
        "1",
        "--readers",
        "1",
        "--duration-s",
        "0.5",
        "--stat-interval-s",
        "0.2",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("spin: Writes:  Total: "), "{text}");
    assert!(
        text.contains("\nWrites:  Total: ") && text.contains("\nReads :  Total: "),
        "{text}"
    );
}

/// `--version` names the build as reports do (commit, optimization, peers);
/// a measurement by an unoptimized build (these tests' own, unless run with
/// `--release`) warns that its timings are not comparable, and a command
/// that times nothing does not.
#[test]
fn the_version_names_the_build_and_an_unoptimized_build_warns() {
    let out = syncbench(&["--version"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8(out.stdout).unwrap();
    for part in [
        "syncbench 0.",
        "opt-level ",
        "crossbeam-epoch 0.",
        "parking_lot 0.",
    ] {
        assert!(text.contains(part), "{part:?} missing from {text}");
    }
    let out = syncbench(&[
        "refscale",
        "--impl",
        "hazptr",
        "--iterations",
        "1000",
        "--runs",
        "1",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        stderr(&out).contains("is an unoptimized build"),
        cfg!(debug_assertions),
        "{}",
        stderr(&out)
    );
    let out = syncbench(&["list"]);
    assert!(!stderr(&out).contains("unoptimized"), "{}", stderr(&out));
}

/// A pipe: its read end, then its write end.
fn pipe() -> (std::os::fd::OwnedFd, std::os::fd::OwnedFd) {
    use std::os::fd::{FromRawFd, OwnedFd};
    let mut fds = [0; 2];
    // SAFETY: `fds` has room for the two descriptors `pipe2` writes.
    assert_eq!(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) }, 0);
    // SAFETY: both descriptors are fresh, and nothing else owns them.
    unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) }
}

/// A reader that stops reading holds up locktorture's live lines, not the
/// run: a 0.5 s run still measures 0.5 s behind a one-page pipe nobody reads
/// for 3 s. (When the main thread wrote the lines itself, it blocked on the
/// full pipe and the run lasted until the reader came back: `duration=3.0s`.)
#[test]
fn locktorture_live_lines_behind_a_stalled_reader_do_not_stretch_the_run() {
    use std::io::Read;
    use std::os::fd::AsRawFd;
    let (read_end, write_end) = pipe();
    // One page, the smallest pipe: a few dozen lines fill it.
    // SAFETY: F_SETPIPE_SZ on a pipe this test owns.
    let size = unsafe { libc::fcntl(write_end.as_raw_fd(), libc::F_SETPIPE_SZ, 4096) };
    assert!(
        size > 0,
        "F_SETPIPE_SZ: {}",
        std::io::Error::last_os_error()
    );
    let mut child = Command::new(env!("CARGO_BIN_EXE_syncbench"))
        .args([
            "locktorture",
            "--lock",
            "qrwlock",
            "--writers",
            "1",
            "--readers",
            "1",
            "--duration-s",
            "0.5",
            "--stat-interval-s",
            "0.01",
        ])
        .stdout(Stdio::from(write_end))
        .stderr(Stdio::null())
        .spawn()
        .expect("syncbench runs");
    std::thread::sleep(Duration::from_secs(3));
    let mut text = String::new();
    std::fs::File::from(read_end)
        .read_to_string(&mut text)
        .unwrap();
    assert!(child.wait().unwrap().success(), "{text}");
    let summary = text
        .lines()
        .find(|l| l.starts_with("locktorture: qrwlock "))
        .unwrap_or_else(|| panic!("no summary line: {text}"));
    let seconds: f64 = summary
        .split("duration=")
        .nth(1)
        .and_then(|d| d.strip_suffix('s'))
        .and_then(|d| d.parse().ok())
        .unwrap_or_else(|| panic!("no duration in {summary:?}"));
    assert!(seconds < 1.5, "the run lasted {seconds} s: {summary}");
    // Two lines a tick: at least two ticks came out (a loaded machine may
    // run the main thread's 10 ms ticks late, never not at all).
    let live = text.lines().filter(|l| l.starts_with('[')).count();
    assert!(live >= 2 * 2, "too few live lines ({live}): {text}");
}

/// A reader that closes standard output early is not a failure of the run:
/// the status is the command's own (it was 1, the status of a failed run,
/// with "Broken pipe" on stderr).
#[test]
fn a_closed_stdout_leaves_the_exit_status_to_the_run() {
    for args in [&["list"][..], &["list", "--json"][..]] {
        // Closed before the child starts, so that its first write fails.
        let (read_end, write_end) = pipe();
        drop(read_end);
        let out = Command::new(env!("CARGO_BIN_EXE_syncbench"))
            .args(args)
            .stdout(Stdio::from(write_end))
            .output()
            .expect("syncbench runs");
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
        assert!(out.stderr.is_empty(), "{args:?}: {}", stderr(&out));
    }
}

/// An FQS interval longer than the run is allowed (the run measures one
/// wait per writer) but said on stderr, since the run then outlasts
/// --duration-s.
#[test]
fn rcuscale_names_an_fqs_interval_longer_than_the_run() {
    let out = syncbench(&[
        "rcuscale",
        "--impl",
        "rcu-lite",
        "--writers",
        "1",
        "--fqs-interval-ms",
        "200",
        "--duration-s",
        "0.05",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("--fqs-interval-ms 200 is longer than --duration-s 0.05"),
        "{}",
        stderr(&out)
    );
    // A lone writer with nothing else registered makes no FQS wait with
    // quick QS (the kernel's one-CPU system): said on stderr, and the
    // count, 0, is printed all the same.
    assert!(
        stderr(&out).contains("quick QS leaves a grace period no FQS wait"),
        "{}",
        stderr(&out)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("rcu-lite FQS waits per grace period 0.00 (0 waits, "),
        "{text}"
    );
    let out = syncbench(&[
        "rcuscale",
        "--impl",
        "rcu-lite",
        "--writers",
        "1",
        "--idle-threads",
        "1",
        "--fqs-interval-ms",
        "1",
        "--duration-s",
        "0.05",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        !stderr(&out).contains("quick QS leaves"),
        "{}",
        stderr(&out)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("rcu-lite FQS waits per grace period 1.00 ("),
        "{text}"
    );
}

/// A closed or full stderr does not turn a note printed before a run into a
/// panic (status 101 with no message): the run goes on and its status is
/// its own.
#[test]
fn a_full_stderr_does_not_end_the_run() {
    let out = Command::new(env!("CARGO_BIN_EXE_syncbench"))
        .args([
            "rcuscale",
            "--impl",
            "rcu-lite,hazptr",
            "--writers",
            "1",
            "--fqs-interval-ms",
            "1",
            "--duration-s",
            "0.05",
            "--json",
        ])
        .stderr(
            std::fs::OpenOptions::new()
                .write(true)
                .open("/dev/full")
                .unwrap(),
        )
        .output()
        .expect("syncbench runs");
    assert!(out.status.success(), "status {:?}", out.status);
    let rows: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(rows.as_array().unwrap().len(), 2, "{rows}");
}

#[test]
fn rcuscale_json_reports_per_gp_time_and_latency() {
    let out = syncbench(&[
        "rcuscale",
        "--impl",
        "crossbeam-epoch",
        "--writers",
        "2",
        "--readers",
        "1",
        "--duration-s",
        "0.3",
        "--json",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let rows: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let row = &rows.as_array().unwrap()[0];
    assert_eq!(row["impl"], "crossbeam-epoch");
    assert_eq!(row["writers"], 2);
    assert!(row["gps"].as_u64().unwrap() > 0, "{row}");
    let lat = &row["latency_us"];
    let (p50, p99, max, time_weighted) = (
        lat["p50"].as_f64().unwrap(),
        lat["p99"].as_f64().unwrap(),
        lat["max"].as_f64().unwrap(),
        lat["time_weighted_p50"].as_f64().unwrap(),
    );
    assert!(p50 <= p99 && p99 <= max, "{row}");
    // Weighting each wait by its length moves the median up, never down.
    assert!(p50 <= time_weighted && time_weighted <= max, "{row}");
    assert!(row["per_gp_us"].as_f64().unwrap() > 0.0, "{row}");
}

/// However short the run, every writer completes a wait, so no figure is
/// NaN (written as null) and per-GP time is not 0.
#[test]
fn rcuscale_runs_too_short_for_the_clock_still_measure_a_wait_per_writer() {
    let out = syncbench(&[
        "rcuscale",
        "--impl",
        "hazptr,crossbeam-epoch",
        "--writers",
        "2",
        "--readers",
        "1",
        "--duration-s",
        "1e-9",
        "--json",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let rows: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    for row in rows.as_array().unwrap() {
        assert!(row["gps"].as_u64().unwrap() >= 2, "{row}");
        assert!(row["per_gp_us"].as_f64().unwrap() > 0.0, "{row}");
        for figure in ["mean", "p50", "p99", "max", "time_weighted_p50"] {
            assert!(row["latency_us"][figure].is_f64(), "{figure} in {row}");
        }
    }
}

#[test]
fn torture_json_counts_reads_replacements_and_errors() {
    let out = syncbench(&[
        "torture",
        "--impl",
        "crossbeam-epoch",
        "--duration-s",
        "0.3",
        "--json",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let rows: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let row = &rows.as_array().unwrap()[0];
    assert_eq!(row["errors"], 0, "{row}");
    assert!(
        row["reads"].as_u64().unwrap() > 0 && row["replaced"].as_u64().unwrap() > 0,
        "{row}"
    );
}

/// The self-check `busted` frees without waiting for readers: its run
/// counts errors, marks them, and makes the command exit with 1 even beside
/// an implementation that passes; `list` names it a self-check.
#[test]
fn torture_of_busted_counts_errors_and_exits_1() {
    // Up to five runs, for a machine that seldom interrupts a section (one
    // error is enough; a run of 0.3 s here finds tens to thousands). A run
    // whose timed window a loaded machine left without a read or a
    // replacement "checked nothing" and fails for that alone: it says
    // nothing of either implementation, so it is run again.
    let checked_nothing = |row: &serde_json::Value| {
        row["failure"]
            .as_str()
            .is_some_and(|f| f.starts_with("checked nothing"))
    };
    let mut runs = Vec::new();
    let mut found = false;
    for _ in 0..5 {
        let out = syncbench(&[
            "torture",
            "--impl",
            "busted,hazptr",
            "--duration-s",
            "0.3",
            "--json",
        ]);
        let rows: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let (busted, hazptr) = (&rows[0], &rows[1]);
        assert!(
            busted["impl"] == "busted" && hazptr["impl"] == "hazptr",
            "{rows}"
        );
        assert_eq!(hazptr["errors"], 0, "{rows}");
        if checked_nothing(busted) || checked_nothing(hazptr) {
            assert_eq!(out.status.code(), Some(1), "{rows}");
            runs.push(serde_json::json!("checked nothing"));
            continue;
        }
        assert!(hazptr.get("failure").is_none(), "{rows}");
        found = busted["errors"].as_u64().unwrap() > 0;
        assert_eq!(
            out.status.code(),
            Some(if found { 1 } else { 0 }),
            "{rows}\n{}",
            stderr(&out)
        );
        runs.push(busted["errors"].clone());
        if found {
            break;
        }
    }
    assert!(found, "busted found no error in five runs: {runs:?}");
    let text = syncbench(&["torture", "--impl", "busted", "--duration-s", "0.3"]);
    let stdout = String::from_utf8_lossy(&text.stdout);
    if text.status.code() == Some(1) {
        assert!(stdout.contains("!!!"), "{stdout}");
    }
    let list = syncbench(&["list", "--json"]);
    let kinds: serde_json::Value = serde_json::from_slice(&list.stdout).unwrap();
    let busted: Vec<_> = kinds
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|k| k["implementations"].as_array().unwrap())
        .filter(|i| i["name"] == "busted")
        .collect();
    assert_eq!(busted.len(), 1, "{kinds}");
    assert_eq!(busted[0]["origin"], "self-check", "{kinds}");
}

#[test]
fn bad_input_is_refused_with_status_2_and_the_valid_choices() {
    let cases: &[(&[&str], &str)] = &[
        (&["refscale", "--impl", "nonesuch"], "possible values"),
        (&["refscale", "--threads", "0"], "0"),
        (
            &["refscale", "--iterations", "10000000001"],
            "10000000001 is not in 1..=10000000000",
        ),
        (&["locktorture", "--lock", "nonesuch"], "parking_lot"),
        (&["locktorture", "--duration-s", "0"], "more than 0 seconds"),
        (
            &["locktorture", "--writers", "0", "--readers", "0"],
            "at least one thread",
        ),
        (&["refscale", "--frobnicate"], "unexpected argument"),
        (&["report", "--quick", "--full"], "cannot be used with"),
        (&["nonesuch"], "unrecognized subcommand"),
        (&["rcuscale", "--writers", "0"], "0"),
        (&["rcuscale", "--writers", "1,0"], "0"),
        (
            &["rcuscale", "--writers", "16,1,16"],
            "--writers names 16 twice",
        ),
        (&["torture", "--impl", "nonesuch"], "crossbeam-epoch"),
        // A negative number is a value the option refuses, not an unknown
        // flag: the message names the option and its bound.
        (
            &["torture", "--duration-s", "-1"],
            "more than 0 seconds (got -1)",
        ),
        (&["refscale", "--threads", "-3"], "-3 is not in 1..=4096"),
        (&["rcuscale", "--writers", "1,-2"], "-2 is not in 1..=4096"),
        (&["membarrier", "--cpus", "-1"], "'--cpus <CPUS>'"),
        (
            &["compare", "--threshold-pct", "-5", "a", "b"],
            "must be 0 or more",
        ),
        (
            &["locktorture", "--stat-interval-s", "0.000001"],
            "at least 0.01 seconds",
        ),
        // Statistics lines are text output: with --json they would be
        // dropped without a word.
        (
            &["locktorture", "--json", "--stat-interval-s", "1"],
            "cannot be used with",
        ),
        (&["torture", "--stall-limit-s", "0.5"], "at least 1 second"),
        (
            &["locktorture", "--stall-limit-s", "0"],
            "more than 0 seconds",
        ),
    ];
    for (args, needle) in cases {
        let out = syncbench(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        let err = stderr(&out);
        assert!(
            err.contains(needle),
            "{args:?}: expected '{needle}' in:\n{err}"
        );
        assert!(out.stdout.is_empty(), "{args:?} printed to stdout");
    }
    let out = syncbench(&["refscale", "--impl", "nonesuch"]);
    let err = stderr(&out);
    for valid in ["crossbeam-epoch", "haphazard", "std-read"] {
        assert!(
            err.contains(valid),
            "valid choice {valid} not named:\n{err}"
        );
    }
}

/// One option's value check, run by [`each_value_check_refuses_past_its_bound_and_accepts_the_bound`].
struct ValueCheck {
    /// The subcommand and the option.
    command: &'static str,
    option: &'static str,
    /// Arguments the command refuses after parsing, and the words of that
    /// refusal: an accepted value reaches it, so nothing is measured.
    then: &'static [&'static str],
    then_says: &'static str,
    /// Values at the bounds that must pass.
    accepted: &'static [&'static str],
    /// Values that must be refused, each with the words of the refusal.
    refused: &'static [(&'static str, &'static str)],
}

/// What every number-of-seconds option refuses (`positive_seconds`).
const NOT_SECONDS: &[(&str, &str)] = &[
    ("0", "must be more than 0 seconds (got 0)"),
    ("-1", "must be more than 0 seconds (got -1)"),
    ("NaN", "must be a finite number (got NaN)"),
    ("inf", "must be a finite number (got inf)"),
    ("86400.5", "at most 86400 seconds (got 86400.5)"),
    ("x", "'x' is not a number of seconds"),
    // Under the one-nanosecond floor (under half of one would run no time).
    ("9e-10", "at least 1e-9 seconds, one nanosecond (got 9e-10)"),
];

/// `locktorture` refuses both thread counts 0 once its values are parsed.
const LOCKTORTURE_THEN: &[&str] = &["--writers", "0", "--readers", "0"];
/// `torture` refuses --slow-path for an implementation without one.
const TORTURE_THEN: &[&str] = &["--impl", "crossbeam-epoch", "--slow-path"];
/// `rcuscale` refuses a writer count named twice.
const RCUSCALE_THEN: &[&str] = &["--writers", "1,1"];
/// `compare` and `advise` without their required arguments.
const MISSING: &str = "required arguments were not provided";

/// Every value check at its bounds: a value past a bound (0, negative, NaN,
/// infinite, just under the least or over the most) exits 2 with a message
/// naming the option and the bound, and the bound itself is accepted. An
/// accepted value gets to a refusal that comes after parsing, so no
/// benchmark runs.
#[test]
fn each_value_check_refuses_past_its_bound_and_accepts_the_bound() {
    let checks = [
        ValueCheck {
            command: "compare",
            option: "--threshold-pct",
            then: &[],
            then_says: MISSING,
            accepted: &["0", "0.001", "1000"],
            refused: &[
                ("-0.001", "must be 0 or more (got -0.001)"),
                ("NaN", "must be a finite number (got NaN)"),
                ("inf", "must be a finite number (got inf)"),
                ("x", "'x' is not a percentage"),
            ],
        },
        ValueCheck {
            command: "locktorture",
            option: "--duration-s",
            then: LOCKTORTURE_THEN,
            then_says: "at least one thread",
            accepted: &["1e-9", "86400"],
            refused: NOT_SECONDS,
        },
        ValueCheck {
            command: "rcuscale",
            option: "--duration-s",
            then: RCUSCALE_THEN,
            then_says: "--writers names 1 twice",
            accepted: &["1e-9", "86400"],
            refused: NOT_SECONDS,
        },
        ValueCheck {
            command: "torture",
            option: "--duration-s",
            then: TORTURE_THEN,
            then_says: "--slow-path forces",
            accepted: &["1e-9", "86400"],
            refused: NOT_SECONDS,
        },
        ValueCheck {
            command: "locktorture",
            option: "--stat-interval-s",
            then: LOCKTORTURE_THEN,
            then_says: "at least one thread",
            accepted: &["0.01", "86400"],
            refused: &[
                ("0.0099", "at least 0.01 seconds (got 0.0099)"),
                ("0", "must be more than 0 seconds"),
                ("NaN", "must be a finite number"),
                ("86400.5", "at most 86400 seconds"),
            ],
        },
        ValueCheck {
            command: "advise",
            option: "--duration-s",
            then: &[],
            then_says: MISSING,
            accepted: &["0.01", "86400"],
            refused: &[
                ("0.0099", "at least 0.01 seconds (got 0.0099)"),
                ("0", "must be more than 0 seconds"),
                ("-1", "must be more than 0 seconds"),
                ("inf", "must be a finite number"),
                ("86400.5", "at most 86400 seconds"),
            ],
        },
        ValueCheck {
            command: "locktorture",
            option: "--stall-limit-s",
            then: LOCKTORTURE_THEN,
            then_says: "at least one thread",
            accepted: &["1", "86400"],
            refused: &[
                ("0.999", "at least 1 second (got 0.999)"),
                ("0", "must be more than 0 seconds"),
                ("NaN", "must be a finite number"),
                ("86400.5", "at most 86400 seconds"),
            ],
        },
        ValueCheck {
            command: "torture",
            option: "--stall-limit-s",
            then: TORTURE_THEN,
            then_says: "--slow-path forces",
            accepted: &["1", "86400"],
            refused: &[
                ("0.999", "at least 1 second (got 0.999)"),
                ("-1", "must be more than 0 seconds"),
            ],
        },
        ValueCheck {
            command: "rcuscale",
            option: "--fqs-interval-ms",
            then: RCUSCALE_THEN,
            then_says: "--writers names 1 twice",
            accepted: &["0.001", "60000"],
            refused: &[
                ("0.0009", "at least 0.001 milliseconds, 1 us (got 0.0009)"),
                ("0", "at least 0.001 milliseconds"),
                ("-1", "at least 0.001 milliseconds"),
                ("NaN", "must be a finite number (got NaN)"),
                ("inf", "must be a finite number (got inf)"),
                ("60000.5", "at most 60000 milliseconds (got 60000.5)"),
                ("x", "'x' is not a number of milliseconds"),
            ],
        },
    ];
    for check in &checks {
        let run = |value: &'static str| {
            let mut args = vec![check.command, check.option, value];
            args.extend_from_slice(check.then);
            let out = syncbench(&args);
            assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
            assert!(out.stdout.is_empty(), "{args:?} printed to stdout");
            (args, stderr(&out))
        };
        for value in check.accepted {
            let (args, err) = run(value);
            assert!(
                err.contains(check.then_says) && !err.contains("invalid value"),
                "{args:?}: {value} should pass {}, expected '{}' in:\n{err}",
                check.option,
                check.then_says
            );
        }
        for (value, says) in check.refused {
            let (args, err) = run(value);
            let names = format!("invalid value '{value}' for '{}", check.option);
            assert!(
                err.contains(&names) && err.contains(says),
                "{args:?}: expected '{names}' and '{says}' in:\n{err}"
            );
        }
    }
}

#[test]
fn compare_flags_a_regression_and_can_fail_on_it() {
    let dir = scratch_dir("syncbench-compare");
    let write = |name: &str, ns: f64| {
        let path = dir.join(name);
        let doc = serde_json::json!({
            "profile": "quick",
            "machine": {"cpu": "X"},
            "refscale": [{"impl": "arc-swap", "threads": 1, "ns_per_op": ns}],
        });
        std::fs::write(&path, doc.to_string()).unwrap();
        path.to_str().unwrap().to_owned()
    };
    let (old, new) = (write("old.json", 2.0), write("new.json", 3.0));
    let out = syncbench(&["compare", &old, &new]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("REGRESSION  refscale impl=arc-swap threads=1 ns_per_op: 2 -> 3 (+50.0%)"),
        "{text}"
    );
    let out = syncbench(&["compare", &old, &new, "--fail-on-regression"]);
    assert_eq!(out.status.code(), Some(1));
    let out = syncbench(&[
        "compare",
        &old,
        &new,
        "--threshold-pct",
        "60",
        "--fail-on-regression",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = syncbench(&["compare", &old, "/nonexistent/results.json"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("cannot read /nonexistent/results.json"),
        "{}",
        stderr(&out)
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `compare --all` lists the figures that did not move as well, `--json`
/// gives the comparison as JSON, and a gate whose stdout reader went away
/// still fails with its reason on stderr (the closed pipe is not the
/// failure: a gate that passes exits 0 the same way).
#[test]
fn compare_all_json_and_a_gate_behind_a_closed_stdout() {
    let dir = scratch_dir("syncbench-compare-all");
    let write = |name: &str, hazptr_ns: f64| {
        let path = dir.join(name);
        let doc = serde_json::json!({
            "profile": "quick",
            "machine": {"cpu": "X"},
            "refscale": [
                {"impl": "arc-swap", "threads": 1, "ns_per_op": 2.0},
                {"impl": "hazptr", "threads": 1, "ns_per_op": hazptr_ns},
            ],
        });
        std::fs::write(&path, doc.to_string()).unwrap();
        path.to_str().unwrap().to_owned()
    };
    let (old, new) = (write("old.json", 1.0), write("new.json", 2.0));
    let unchanged = "refscale impl=arc-swap threads=1 ns_per_op";
    let out = syncbench(&["compare", &old, &new]);
    assert!(!String::from_utf8_lossy(&out.stdout).contains(unchanged));
    let out = syncbench(&["compare", &old, &new, "--all"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains(unchanged), "{text}");
    let out = syncbench(&["compare", &old, &new, "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let c: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let changes = c["changes"].as_array().unwrap();
    let hazptr = changes
        .iter()
        .find(|ch| ch["measurement"] == "refscale impl=hazptr threads=1")
        .unwrap_or_else(|| panic!("{c}"));
    assert_eq!(hazptr["regression"], true, "{c}");
    assert_eq!(
        (hazptr["old"].as_f64(), hazptr["new"].as_f64()),
        (Some(1.0), Some(2.0))
    );
    for (new_file, gate_fails) in [(&new, true), (&old, false)] {
        let (read_end, write_end) = pipe();
        drop(read_end);
        let out = Command::new(env!("CARGO_BIN_EXE_syncbench"))
            .args(["compare", &old, new_file, "--fail-on-regression"])
            .stdout(Stdio::from(write_end))
            .output()
            .expect("syncbench runs");
        assert_eq!(out.status.success(), !gate_fails, "{}", stderr(&out));
        assert_eq!(
            stderr(&out).contains("syncbench: --fail-on-regression: 1 figures regressed"),
            gate_fails,
            "{}",
            stderr(&out)
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `--fail-on-regression` fails on what a look at regressions alone lets
/// through: a measurement the new run lacks, a figure that went NaN (written
/// as null), no figure compared. Files that are not results documents are
/// refused with status 2, naming the file and the key.
#[test]
fn compare_gate_fails_when_the_new_run_measured_less_or_nothing() {
    let dir = scratch_dir("syncbench-compare-gate");
    let write = |name: &str, doc: serde_json::Value| {
        let path = dir.join(name);
        std::fs::write(&path, doc.to_string()).unwrap();
        path.to_str().unwrap().to_owned()
    };
    let row = |name: &str, ns: serde_json::Value| serde_json::json!({"impl": name, "threads": 1, "ns_per_op": ns});
    let doc = |rows: Vec<serde_json::Value>| serde_json::json!({"profile": "quick", "machine": {"cpu": "X"}, "refscale": rows});
    let old = write(
        "old.json",
        doc(vec![
            row("arc-swap", 2.0.into()),
            row("seqlock", 3.0.into()),
        ]),
    );
    let gate = |new: &str| syncbench(&["compare", &old, new, "--fail-on-regression"]);

    let fewer = write("fewer.json", doc(vec![row("arc-swap", 2.0.into())]));
    let out = gate(&fewer);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains(
            "missing from the new run (measured in the old one): refscale impl=seqlock threads=1"
        ),
        "{}",
        stderr(&out)
    );
    // Without the gate the same comparison only lists it.
    assert!(syncbench(&["compare", &old, &fewer]).status.success());

    let nan = write(
        "nan.json",
        doc(vec![
            row("arc-swap", 2.0.into()),
            row("seqlock", serde_json::Value::Null),
        ]),
    );
    let out = gate(&nan);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("refscale impl=seqlock threads=1 ns_per_op"),
        "{}",
        stderr(&out)
    );

    let empty = write("empty.json", doc(vec![]));
    let out = syncbench(&["compare", &empty, &empty, "--fail-on-regression"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("0 figures compared"),
        "{}",
        stderr(&out)
    );

    let same = gate(&old);
    assert!(same.status.success(), "{}", stderr(&same));

    let bare = write("bare.json", serde_json::json!({}));
    let no_machine = write(
        "no-machine.json",
        serde_json::json!({"profile": "quick", "refscale": []}),
    );
    for (file, key) in [(&bare, "\"profile\""), (&no_machine, "\"machine\"")] {
        let out = syncbench(&["compare", &old, file, "--fail-on-regression"]);
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        assert!(
            stderr(&out).contains(&format!(
                "{file} is not a syncbench results.json: it has no key {key}"
            )),
            "{}",
            stderr(&out)
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn report_from_writes_an_earlier_run_again_without_measuring() {
    let dir = scratch_dir("syncbench-report-from");
    let out_dir = dir.join("report");
    let reference = REFERENCE_RESULTS;
    let args = [
        "report",
        "--from",
        reference,
        "--out",
        out_dir.to_str().unwrap(),
    ];
    let out = syncbench(&args);
    assert!(out.status.success(), "{}", stderr(&out));
    // Standard output says where report.md is; with --json, it has the
    // results alone, for a pipe.
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(
        stdout.trim_end().ends_with("report.md"),
        "not the path of report.md: {stdout:?}"
    );
    let with_json = syncbench(&[&args[..], &["--json"]].concat());
    assert!(with_json.status.success(), "{}", stderr(&with_json));
    let results: serde_json::Value = serde_json::from_slice(&with_json.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&with_json.stdout)));
    assert!(results["refscale"].is_array(), "{results}");
    let markdown = std::fs::read_to_string(out_dir.join("report.md")).unwrap();
    // The committed run's figures, said to be read back, in every section.
    assert!(
        markdown.contains("Run wall time: 113 s.")
            && markdown.contains("Written again by `syncbench report --from`")
            && markdown.contains("## Choosing a primitive on this machine")
            && markdown.contains("| hazptr | 1.09 |")
            && markdown.contains("| 75.7k, 74.2k, 74.3k |"),
        "{markdown}"
    );
    assert!(out_dir.join("report.html").exists() && out_dir.join("results.json").exists());
    // The committed reference report says its tables and picks are this
    // build's: it must be what this build writes from its results.json
    // (after a change to the report, write it again with `syncbench report
    // --from docs/reference-report/results.json --out docs/reference-report`).
    for page in ["report.md", "report.html"] {
        let committed = std::path::Path::new(reference).with_file_name(page);
        let committed = std::fs::read_to_string(&committed).unwrap();
        let written = std::fs::read_to_string(out_dir.join(page)).unwrap();
        let differing = committed
            .lines()
            .zip(written.lines())
            .position(|(a, b)| a != b);
        assert!(
            committed == written,
            "docs/reference-report/{page} is not what this build writes from its \
             results.json (first differing line {:?}; lines {} against {})",
            differing.map(|i| i + 1),
            committed.lines().count(),
            written.lines().count()
        );
    }
    // The JSON written back compares equal to the one read: nothing re-measured.
    let out = syncbench(&[
        "compare",
        reference,
        out_dir.join("results.json").to_str().unwrap(),
        "--fail-on-regression",
        "--threshold-pct",
        "0",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        !text.contains("REGRESSION") && !text.contains("improved"),
        "{text}"
    );

    std::fs::create_dir_all(&dir).unwrap();
    let not_results = dir.join("other.json");
    std::fs::write(&not_results, r#"{"refscale": []}"#).unwrap();
    let out = syncbench(&["report", "--from", not_results.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("is not a syncbench report's results.json"),
        "{}",
        stderr(&out)
    );
    let out = syncbench(&["report", "--from", "/nonexistent/results.json"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("cannot read /nonexistent/results.json"));
    let out = syncbench(&["report", "--from", reference, "--quick"]);
    assert_eq!(
        out.status.code(),
        Some(2),
        "a profile measures: not with --from"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A run whose torture or locktorture checks failed (a hang leaves its
/// counts at 0) is written with the failure in its table; `report` exits
/// with 1 and says on stderr which runs failed and why.
#[test]
fn report_of_a_failed_run_names_the_failures_and_exits_1() {
    let dir = scratch_dir("syncbench-report-failed");
    let reference = REFERENCE_RESULTS;
    let mut results: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(reference).unwrap()).unwrap();
    let torture = results["torture"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|o| o["impl"] == "seize")
        .unwrap();
    torture["failure"] = "hang: a reader made no progress for 20.0 s".into();
    let lock = results["locktorture"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|o| o["lock"] == "std" && o["writers"] == 4 && o["readers"] == 16)
        .unwrap();
    lock["failure"] = "panic: a writer panicked outside an injected fault".into();
    let failed = dir.join("failed.json");
    std::fs::write(&failed, results.to_string()).unwrap();
    let out_dir = dir.join("report");
    let out = syncbench(&[
        "report",
        "--from",
        failed.to_str().unwrap(),
        "--out",
        out_dir.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("FAILURE: torture seize: hang: a reader made no progress for 20.0 s")
            && err.contains(
                "FAILURE: locktorture 4w/16r std: panic: a writer panicked outside an injected \
                 fault"
            )
            && err.contains("2 run(s) failed their checks"),
        "{err}"
    );
    let markdown = std::fs::read_to_string(out_dir.join("report.md")).unwrap();
    assert!(
        markdown.contains("| 0 !!! (hang: a reader made no progress for 20.0 s) |")
            && markdown.contains("| 0 !!! (panic: a writer panicked outside an injected fault) |")
            && markdown.contains(
                "left out for failing their checks: seize (torture: hang: a reader made no \
                 progress for 20.0 s)"
            ),
        "{markdown}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A results.json with a NaN figure (written as null) is refused naming the
/// line, and an --out that is a file is refused naming it.
#[test]
fn report_errors_name_the_null_figure_and_the_path() {
    let dir = scratch_dir("syncbench-report-errors");
    let reference = REFERENCE_RESULTS;
    let mut results: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(reference).unwrap()).unwrap();
    results["rcuscale"][0]["per_gp_us"] = serde_json::Value::Null;
    let with_null = dir.join("null.json");
    std::fs::write(&with_null, serde_json::to_string_pretty(&results).unwrap()).unwrap();
    let out = syncbench(&[
        "report",
        "--from",
        with_null.to_str().unwrap(),
        "--out",
        dir.join("report").to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("(`\"per_gp_us\": null,`) holds null where a figure belongs"),
        "{}",
        stderr(&out)
    );

    let a_file = dir.join("a-file");
    std::fs::write(&a_file, "").unwrap();
    let out = syncbench(&[
        "report",
        "--from",
        reference,
        "--out",
        a_file.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains(&format!(
            "cannot create the folder {}/plots",
            a_file.display()
        )),
        "{}",
        stderr(&out)
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// With --json, the warning of a run that measured reads only was in the
/// JSON alone; stderr says it too, as the text output does.
#[test]
fn advise_json_says_its_warning_on_stderr() {
    let out = syncbench(&[
        "advise",
        "--reads-per-write",
        "10000000",
        "--threads",
        "2",
        "--duration-s",
        "0.01",
        "--rounds",
        "1",
        "--json",
    ]);
    let err = stderr(&out);
    let advice: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let warning = advice["warning"].as_str().expect("a warning in the JSON");
    assert!(
        err.contains(&format!("syncbench: warning: {warning}")),
        "{err}"
    );
}

/// More threads than the CPUs the process may use are allowed, but said on
/// stderr: oversubscription can change the winner.
#[test]
fn advise_names_more_threads_than_cpus() {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let run = |threads: usize| {
        let threads = threads.to_string();
        let out = syncbench(&[
            "advise",
            "--reads-per-write",
            "100",
            "--threads",
            &threads,
            "--payload-bytes",
            "64",
            "--duration-s",
            "0.01",
            "--rounds",
            "1",
            "--json",
        ]);
        assert!(out.status.code().is_some(), "{}", stderr(&out));
        stderr(&out)
    };
    let over = run(cpus + 1);
    assert!(
        over.contains(&format!(
            "--threads {} is more than the {cpus} CPU(s) this process may use",
            cpus + 1
        )),
        "{over}"
    );
    let within = run(cpus);
    assert!(!within.contains("is more than the"), "{within}");
}

#[test]
fn advise_recommends_with_its_figures() {
    let out = syncbench(&[
        "advise",
        "--reads-per-write",
        "100",
        "--threads",
        "2",
        "--payload-bytes",
        "64",
        "--duration-s",
        "0.1",
        "--json",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let advice: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let pick = advice["recommended"].as_str().expect("a recommendation");
    let rows = advice["outcomes"].as_array().unwrap();
    assert_eq!(
        rows[0]["impl"], pick,
        "the fastest clean contender is recommended"
    );
    // The first row is the fastest by its figure, not only by its place.
    let ops = |row: &serde_json::Value| row["ops_per_s"].as_f64().unwrap();
    for row in rows.iter().filter(|r| r["skipped"].is_null()) {
        assert!(ops(row) <= ops(&rows[0]), "{row} beats {}", rows[0]);
    }
    assert!(advice["reason"].as_str().unwrap().contains(" ops/s"));
    for row in rows {
        assert_eq!(row["errors"], 0, "{row}");
    }
    let out = syncbench(&["advise", "--reads-per-write", "0", "--threads", "2"]);
    assert_eq!(out.status.code(), Some(2));
    let out = syncbench(&[
        "advise",
        "--reads-per-write",
        "1",
        "--threads",
        "1",
        "--duration-s",
        "0.001",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("at least 0.01 seconds"),
        "{}",
        stderr(&out)
    );
    let out = syncbench(&["advise", "--threads", "2"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("--reads-per-write"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn hazptr_is_listed_first_in_its_kinds() {
    let out = syncbench(&["list", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let kinds: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let first = |command: &str| {
        kinds
            .as_array()
            .unwrap()
            .iter()
            .find(|k| k["command"] == command)
            .map(|k| k["implementations"][0]["name"].clone())
            .unwrap()
    };
    assert_eq!(first("refscale"), "hazptr");
    assert_eq!(first("rcuscale"), "hazptr");
    assert_eq!(first("torture"), "hazptr");
    let text = String::from_utf8(syncbench(&["list"]).stdout).unwrap();
    assert!(text.contains("hazptr-unshared"), "{text}");
}

#[test]
fn hazptr_refscale_and_rcuscale_report_figures() {
    let out = syncbench(&[
        "refscale",
        "--impl",
        "hazptr",
        "--iterations",
        "10000",
        "--runs",
        "2",
        "--json",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let rows: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(rows[0]["impl"], "hazptr");
    assert!(rows[0]["ns_per_op"].as_f64().unwrap() > 0.0);

    let out = syncbench(&[
        "rcuscale",
        "--impl",
        "hazptr,hazptr-unshared",
        "--writers",
        "3",
        "--readers",
        "1",
        "--duration-s",
        "0.3",
        "--json",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let rows: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let rows = rows.as_array().unwrap();
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0]["impl"], "hazptr");
    assert_eq!(rows[1]["impl"], "hazptr-unshared");
    for row in rows {
        assert_eq!(row["writers"], 3);
        assert_eq!(row["readers"], 1);
        assert!(row["gps"].as_u64().unwrap() > 0, "{row}");
        let lat = &row["latency_us"];
        for key in ["mean", "p50", "p99", "max"] {
            assert!(lat[key].as_f64().unwrap() > 0.0, "{row}");
        }
        assert!(lat["p50"].as_f64() <= lat["max"].as_f64(), "{row}");
    }
}

#[test]
fn hazptr_torture_passes_on_both_paths_and_slow_path_is_hazptr_only() {
    for extra in [&[][..], &["--slow-path"][..]] {
        let mut args = vec![
            "torture",
            "--impl",
            "hazptr",
            "--readers",
            "2",
            "--writers",
            "2",
            "--duration-s",
            "0.4",
            "--json",
        ];
        args.extend_from_slice(extra);
        let out = syncbench(&args);
        assert!(out.status.success(), "{extra:?}: {}", stderr(&out));
        let rows: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let row = &rows[0];
        assert_eq!(row["impl"], "hazptr");
        assert_eq!(row["errors"], 0, "{row}");
        assert!(row["reads"].as_u64().unwrap() > 0 && row["replaced"].as_u64().unwrap() > 0);
        // The option reached the run (and only with the flag).
        assert_eq!(
            row["slow_path"].as_bool().unwrap_or(false),
            !extra.is_empty(),
            "{row}"
        );
    }
    let out = syncbench(&["torture", "--impl", "crossbeam-epoch", "--slow-path"]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("--slow-path")
            && err.contains("only hazptr")
            && err.contains("crossbeam-epoch"),
        "{err}"
    );
    assert!(out.stdout.is_empty());
}

#[test]
fn list_names_rcu_lite_and_liburcu_in_every_kind_they_join() {
    let out = syncbench(&["list", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let kinds: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    // (name, origin) in listing order.
    let listed = |command: &str| -> Vec<(String, String)> {
        kinds
            .as_array()
            .unwrap()
            .iter()
            .find(|k| k["command"] == command)
            .unwrap()["implementations"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| {
                (
                    i["name"].as_str().unwrap().to_owned(),
                    i["origin"].as_str().unwrap().to_owned(),
                )
            })
            .collect()
    };
    let check = |command: &str, ours: &[&str], peers: &[&str]| {
        let list = listed(command);
        let position = |name: &str| {
            list.iter()
                .position(|(n, _)| n == name)
                .unwrap_or_else(|| panic!("{name} missing from {command}: {list:?}"))
        };
        let first_peer = list.iter().position(|(_, o)| o == "peer").unwrap();
        for name in ours {
            assert_eq!(list[position(name)].1, "workspace", "{name}");
            assert!(position(name) < first_peer, "{name} listed after a peer");
        }
        for name in peers {
            assert_eq!(list[position(name)].1, "peer", "{name}");
        }
    };
    check(
        "refscale",
        &["rcu-lite-memb", "rcu-lite-qsbr"],
        &["liburcu-memb", "liburcu-qsbr"],
    );
    check(
        "rcuscale",
        &["rcu-lite", "rcu-lite-noqs", "rcu-lite-qsbr"],
        &["liburcu-memb", "liburcu-qsbr"],
    );
    check("torture", &["rcu-lite-memb", "rcu-lite-qsbr"], &[]);
}

/// The liburcu peers are available exactly when the build found liburcu;
/// otherwise `list` says why and how to install it, and selecting one is
/// refused with the same hint. `.ci/run` runs this test a second time with
/// `SYNCBENCH_NO_LIBURCU=1`, which makes the build script act as if liburcu
/// were absent: the peers then say they were disabled, not that pkg-config
/// missed liburcu. A build whose shims did not compile against the liburcu
/// that pkg-config found, or whose libraries did not link or load, says so.
#[test]
fn liburcu_peers_are_listed_with_their_availability() {
    let out = syncbench(&["list", "--json"]);
    let kinds: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let liburcu: Vec<&serde_json::Value> = kinds
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|k| k["implementations"].as_array().unwrap())
        .filter(|i| i["name"].as_str().unwrap().starts_with("liburcu-"))
        .collect();
    assert_eq!(liburcu.len(), 4, "{liburcu:?}");
    let text = String::from_utf8(syncbench(&["list"]).stdout).unwrap();
    if cfg!(syncbench_liburcu) {
        for imp in &liburcu {
            assert_eq!(imp["available"], true, "{imp}");
        }
        for line in text.lines().filter(|l| l.contains("liburcu-")) {
            assert!(!line.contains("[unavailable"), "{line}");
        }
    } else {
        let cause = if cfg!(syncbench_liburcu_disabled) {
            "was disabled by SYNCBENCH_NO_LIBURCU when syncbench was built"
        } else if cfg!(syncbench_liburcu_broken) {
            "was found by pkg-config when syncbench was built, but"
        } else {
            "was not found by pkg-config"
        };
        for imp in &liburcu {
            assert_eq!(imp["available"], false, "{imp}");
            let why = imp["unavailable"].as_str().unwrap();
            assert!(
                why.contains("apt-get install -y liburcu-dev") && why.contains(cause),
                "{why}"
            );
        }
        assert!(
            text.contains("[unavailable: liburcu")
                && text.contains(&format!("{})]", bench_suite::liburcu::INSTALL_HINT))
                && text.contains(cause),
            "{text}"
        );
        let out = syncbench(&["refscale", "--impl", "liburcu-memb", "--iterations", "10"]);
        assert_eq!(out.status.code(), Some(2));
        assert!(
            stderr(&out).contains("apt-get install -y liburcu-dev"),
            "{}",
            stderr(&out)
        );
    }
}

#[test]
fn refscale_runs_the_rcu_read_sides() {
    let mut impls = vec!["rcu-lite-memb", "rcu-lite-qsbr"];
    if cfg!(syncbench_liburcu) {
        impls.extend(["liburcu-memb", "liburcu-qsbr"]);
    }
    let impls = impls.join(",");
    let out = syncbench(&[
        "refscale",
        "--impl",
        &impls,
        "--iterations",
        "2000",
        "--runs",
        "2",
        "--threads",
        "2",
        "--json",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let rows: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let rows = rows.as_array().unwrap();
    assert_eq!(rows.len(), impls.split(',').count());
    for row in rows {
        let ns = row["ns_per_op"].as_f64().unwrap();
        assert!(ns > 0.0 && ns.is_finite(), "{row}");
    }
}

#[test]
fn rcuscale_runs_rcu_lite_with_and_without_quick_qs_at_a_fixed_fqs_interval() {
    let mut impls = vec!["rcu-lite", "rcu-lite-noqs", "rcu-lite-qsbr"];
    if cfg!(syncbench_liburcu) {
        impls.extend(["liburcu-memb", "liburcu-qsbr"]);
    }
    let impls = impls.join(",");
    let out = syncbench(&[
        "rcuscale",
        "--impl",
        &impls,
        "--writers",
        "2",
        "--readers",
        "1",
        "--duration-s",
        "0.3",
        "--fqs-interval-ms",
        "1",
        "--json",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let rows: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    for row in rows.as_array().unwrap() {
        assert!(row["gps"].as_u64().unwrap() > 0, "{row}");
        let lat = &row["latency_us"];
        assert!(
            lat["p50"].as_f64().unwrap() <= lat["max"].as_f64().unwrap(),
            "{row}"
        );
        if row["impl"].as_str().unwrap().starts_with("rcu-lite") {
            // A fixed 1 ms FQS interval: every grace period waits at least once.
            assert!(lat["p50"].as_f64().unwrap() >= 1000.0, "{row}");
        }
    }
    for bad in ["0", "0.0000001", "-1", "x", "60001"] {
        let out = syncbench(&["rcuscale", "--fqs-interval-ms", bad]);
        assert_eq!(out.status.code(), Some(2), "--fqs-interval-ms {bad}");
    }
    // An interval that would pace none of the chosen implementations is
    // refused rather than ignored.
    let out = syncbench(&[
        "rcuscale",
        "--impl",
        "hazptr,crossbeam-epoch",
        "--fqs-interval-ms",
        "3",
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains(
            "--fqs-interval-ms paces rcu-lite, rcu-lite-noqs, rcu-lite-qsbr only, and none of \
             them was chosen"
        ),
        "{}",
        stderr(&out)
    );
    let help = syncbench(&["rcuscale", "--help"]);
    let help = String::from_utf8(help.stdout).unwrap();
    assert!(
        help.contains("--fqs-interval-ms") && help.contains("rcu-lite-noqs"),
        "{help}"
    );
}

/// With a fixed FQS interval, no readers and one idle registered thread (an
/// idle system: its idle CPU), the engine's own count says what the seed's
/// patch changes: one FQS wait per grace period with quick QS (both
/// flavors), two without; the adaptive mode makes none, and implementations
/// without an engine count report nothing. Without the idle thread (the
/// kernel's one-CPU system) quick QS leaves no FQS wait at all.
#[test]
fn rcuscale_counts_one_fqs_wait_per_idle_grace_period_with_quick_qs_and_two_without() {
    let run = |extra: &[&str]| {
        let args = [
            &[
                "rcuscale",
                "--impl",
                "rcu-lite,rcu-lite-noqs,rcu-lite-qsbr,hazptr",
                "--writers",
                "1",
                "--readers",
                "0",
                "--idle-threads",
                "1",
                "--waits",
                "10",
            ][..],
            extra,
        ]
        .concat();
        let out = syncbench_within(&args, Duration::from_secs(60));
        assert!(out.status.success(), "{}", stderr(&out));
        out
    };
    let out = run(&["--fqs-interval-ms", "1", "--json"]);
    // The implementation the interval does not pace is named, and its
    // outcome records no interval; the others record theirs.
    assert!(
        stderr(&out).contains("note: --fqs-interval-ms paces rcu-lite, rcu-lite-noqs, rcu-lite-qsbr only; hazptr run as without it"),
        "{}",
        stderr(&out)
    );
    let rows: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    for i in 0..3 {
        assert_eq!(rows[i]["fqs_interval_ms"], 1.0, "{}", rows[i]);
    }
    assert!(rows[3].get("fqs_interval_ms").is_none(), "{}", rows[3]);
    let fqs = |i: usize| rows[i]["fqs"].clone();
    assert_eq!(
        fqs(0),
        serde_json::json!({"grace_periods": 10, "fqs_waits": 10})
    );
    assert_eq!(
        fqs(1),
        serde_json::json!({"grace_periods": 10, "fqs_waits": 20})
    );
    assert_eq!(
        fqs(2),
        serde_json::json!({"grace_periods": 10, "fqs_waits": 10})
    );
    assert!(rows[3].get("fqs").is_none(), "{}", rows[3]);
    let text = String::from_utf8(run(&["--fqs-interval-ms", "1"]).stdout).unwrap();
    assert!(
        text.contains("rcu-lite-noqs FQS waits per grace period 2.00 (20 waits, 10 grace periods)"),
        "{text}"
    );
    assert!(
        text.contains("rcuscale: rcu-lite fqs-interval-ms=1 writers=1 ")
            && text.contains("rcuscale: hazptr writers=1 "),
        "{text}"
    );
    let out = run(&["--json"]);
    let rows: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(rows[0]["fqs"]["fqs_waits"], 0, "{}", rows[0]);
    assert!(rows[0].get("fqs_interval_ms").is_none(), "{}", rows[0]);
}

/// `--fqs-interval-ms` without a value is the fixed mode at the kernel's
/// 3 ms: rcu-lite's idle grace periods (quick QS, beside an idle registered
/// thread) each wait one interval
/// before their scan, so none is shorter than 3 ms, and the engine counts one
/// FQS wait each. (Catches the option refusing a missing value, or taking it
/// as the adaptive mode or another interval.)
#[test]
fn rcuscale_fqs_interval_without_a_value_is_the_kernels_3_ms() {
    let out = syncbench_within(
        &[
            "rcuscale",
            "--impl",
            "rcu-lite",
            "--idle-threads",
            "1",
            "--waits",
            "3",
            "--fqs-interval-ms",
            "--json",
        ],
        Duration::from_secs(60),
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let rows: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let row = &rows[0];
    assert_eq!(
        row["fqs"],
        serde_json::json!({"grace_periods": 3, "fqs_waits": 3}),
        "{row}"
    );
    let p50 = row["latency_us"]["p50"].as_f64().unwrap();
    assert!(p50 >= 3000.0, "a grace period shorter than 3 ms: {row}");
    // Not the 1 ms or 1000 ms a wrong default or unit would give (the
    // bound is loose: the machine may wake the driver late).
    assert!(p50 < 1_000_000.0, "{row}");
}

/// `--fqs-interval-ms` is in milliseconds, fractions included: at 1000.5 ms
/// rcu-lite (quick QS, no readers, one idle thread) waits one interval
/// before its first scan, so its one grace period takes at least 1.0005 s,
/// and not 1000 times more.
#[test]
fn rcuscale_fqs_interval_is_in_milliseconds() {
    let out = syncbench_within(
        &[
            "rcuscale",
            "--impl",
            "rcu-lite",
            "--idle-threads",
            "1",
            "--waits",
            "1",
            "--fqs-interval-ms",
            "1000.5",
            "--json",
        ],
        Duration::from_secs(60),
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let rows: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let row = &rows[0];
    assert_eq!(row["gps"], 1, "{row}");
    assert!(
        row["latency_us"]["p50"].as_f64().unwrap() >= 1_000_500.0,
        "a grace period shorter than the 1000.5 ms interval: {row}"
    );
}

#[test]
fn rcuscale_waits_runs_a_fixed_number_of_waits_per_writer() {
    let out = syncbench(&[
        "rcuscale",
        "--impl",
        "hazptr,rcu-lite",
        "--writers",
        "2",
        "--readers",
        "1",
        "--waits",
        "7",
        "--json",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let rows: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    for row in rows.as_array().unwrap() {
        assert_eq!(row["gps"].as_u64(), Some(14), "{row}");
        // The run lasts as long as the waits: per-GP time is at least the
        // mean latency divided by the writers.
        let per_gp = row["per_gp_us"].as_f64().unwrap();
        let mean = row["latency_us"]["mean"].as_f64().unwrap();
        assert!(per_gp >= mean / 2.0 * 0.99, "{row}");
    }
    let out = syncbench(&["rcuscale", "--waits", "5", "--duration-s", "1"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("cannot be used with"),
        "{}",
        stderr(&out)
    );
    for bad in ["0", "-3", "x"] {
        let out = syncbench(&["rcuscale", "--waits", bad]);
        assert_eq!(out.status.code(), Some(2), "--waits {bad}");
    }
}

#[test]
fn rcuscale_writer_counts_are_measured_in_one_run() {
    let out = syncbench(&[
        "rcuscale",
        "--impl",
        "hazptr,hazptr-unshared",
        "--writers",
        "3,1",
        "--waits",
        "4",
        "--rounds",
        "2",
        "--json",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let rows: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let rows: Vec<(String, u64, u64, usize)> = rows
        .as_array()
        .unwrap()
        .iter()
        .map(|row| {
            (
                row["impl"].as_str().unwrap().to_owned(),
                row["writers"].as_u64().unwrap(),
                row["gps"].as_u64().unwrap(),
                row["per_gp_rounds_us"].as_array().unwrap().len(),
            )
        })
        .collect();
    // Grouped by writer count in the order given, then by implementation;
    // each writer of each round made its 4 waits.
    let expected: Vec<(String, u64, u64, usize)> = [
        ("hazptr", 3, 3 * 4 * 2),
        ("hazptr-unshared", 3, 3 * 4 * 2),
        ("hazptr", 1, 4 * 2),
        ("hazptr-unshared", 1, 4 * 2),
    ]
    .into_iter()
    .map(|(name, writers, gps)| (name.to_owned(), writers, gps, 2))
    .collect();
    assert_eq!(rows, expected);
}

#[test]
fn rcuscale_rounds_take_turns_and_report_the_median_round() {
    let out = syncbench(&[
        "rcuscale",
        "--impl",
        "hazptr,crossbeam-epoch",
        "--writers",
        "2",
        "--readers",
        "1",
        "--waits",
        "6",
        "--rounds",
        "3",
        "--json",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let rows: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let rows = rows.as_array().unwrap();
    assert_eq!(rows.len(), 2, "one row per implementation, not per round");
    for row in rows {
        // Every wait of every round counts, and each round has its figure.
        assert_eq!(row["gps"].as_u64(), Some(2 * 6 * 3), "{row}");
        let mut rounds: Vec<f64> = row["per_gp_rounds_us"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_f64().unwrap())
            .collect();
        assert_eq!(rounds.len(), 3, "{row}");
        rounds.sort_by(f64::total_cmp);
        assert_eq!(
            row["per_gp_us"].as_f64(),
            Some(rounds[1]),
            "the median round: {row}"
        );
        assert!(rounds[0] > 0.0, "{row}");
    }
    let text = syncbench(&[
        "rcuscale", "--impl", "hazptr", "--waits", "3", "--rounds", "2",
    ]);
    assert!(text.status.success(), "{}", stderr(&text));
    assert!(
        String::from_utf8_lossy(&text.stdout).contains("(median of 2 rounds, "),
        "{}",
        String::from_utf8_lossy(&text.stdout)
    );
    for bad in ["0", "-1", "x"] {
        let out = syncbench(&["rcuscale", "--rounds", bad]);
        assert_eq!(out.status.code(), Some(2), "--rounds {bad}");
    }
}

#[test]
fn torture_finds_no_errors_in_rcu_lite() {
    let out = syncbench(&[
        "torture",
        "--impl",
        "rcu-lite-memb,rcu-lite-qsbr",
        "--readers",
        "2",
        "--writers",
        "2",
        "--duration-s",
        "0.5",
        "--json",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let rows: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    for row in rows.as_array().unwrap() {
        assert_eq!(row["errors"], 0, "{row}");
        assert!(
            row["reads"].as_u64().unwrap() > 0 && row["replaced"].as_u64().unwrap() > 0,
            "{row}"
        );
    }
}

/// Each of the simulator's model options reaches the model: the same
/// seeded run with the option set differs from the run without it (until
/// now these options were only ever refused, never run with a value).
/// `--broadcast-every` is tried under per-CPU mutexes, where a broadcast
/// takes every CPU's mutex; under the global mutex every call is already
/// serialized, and the simulated outcome is the same.
#[test]
fn membarrier_sim_model_options_change_the_simulated_run() {
    let run = |extra: &[&str]| -> serde_json::Value {
        let mut args = vec![
            "membarrier",
            "--cpus",
            "8",
            "--sim-seconds",
            "0.2",
            "--json",
        ];
        args.extend_from_slice(extra);
        let out = syncbench(&args);
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let base = run(&[]);
    for option in [
        &["--siblings", "10"][..],
        &["--depth", "1"],
        &["--tg-visit-ns", "5000"],
        &["--period-us", "2000"],
        &["--quota-us", "2000"],
        &["--targets", "0,1"],
    ] {
        let with = run(option);
        assert_ne!(
            (&with["calls"], &with["latency_us"]),
            (&base["calls"], &base["latency_us"]),
            "{option:?} changed nothing"
        );
    }
    let per_cpu = run(&["--policy", "per-cpu"]);
    let broadcasts = run(&["--policy", "per-cpu", "--broadcast-every", "2"]);
    assert!(
        broadcasts["calls"].as_u64() < per_cpu["calls"].as_u64(),
        "broadcasts every other call completed {} calls, targeted ones {}",
        broadcasts["calls"],
        per_cpu["calls"]
    );
}

#[test]
fn membarrier_sim_json_has_the_documented_fields() {
    let out = syncbench(&[
        "membarrier",
        "--mode",
        "sim",
        "--cpus",
        "16",
        "--callers",
        "64",
        "--policy",
        "per-cpu",
        "--sim-seconds",
        "1",
        "--json",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let row: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(row["mode"], "sim");
    assert_eq!(row["cpus"], 16);
    assert_eq!(row["callers"], 64);
    assert_eq!(row["policy"], "per-cpu");
    assert!(row["calls_per_s"].as_f64().unwrap() > 0.0, "{row}");
    let lat = &row["latency_us"];
    let (mean, p50, p99, max) = (
        lat["mean"].as_f64().unwrap(),
        lat["p50"].as_f64().unwrap(),
        lat["p99"].as_f64().unwrap(),
        lat["max"].as_f64().unwrap(),
    );
    assert!(p50 <= p99 && p99 <= max && mean <= max, "{row}");
    assert_eq!(row["stalls"], 0, "{row}");
    assert!(row["irq_off_fraction"].as_f64().unwrap() > 0.0, "{row}");
}

#[test]
fn membarrier_sim_output_is_byte_identical_for_the_same_seed() {
    for json in [false, true] {
        let mut args = vec!["membarrier", "--cpus", "32", "--sim-seconds", "1"];
        if json {
            args.push("--json");
        }
        let a = syncbench(&args);
        let b = syncbench(&args);
        assert!(a.status.success(), "{}", stderr(&a));
        assert_eq!(a.stdout, b.stdout);
        args.extend(["--seed", "7"]);
        let c = syncbench(&args);
        assert_ne!(a.stdout, c.stdout, "the seed must matter");
    }
}

/// Each figure of a sim run in the unit its name gives, checked against
/// what the run must satisfy: the seconds and watchdog given, a stalled
/// completed call lasting longer than the watchdog, no call or window
/// longer than the run allows.
#[test]
fn membarrier_sim_figures_are_in_the_units_they_are_named_in() {
    let out = syncbench(&[
        "membarrier",
        "--cpus",
        "16",
        "--sim-seconds",
        "0.5",
        "--watchdog-ms",
        "1",
        "--json",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let row: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let f = |v: &serde_json::Value| v.as_f64().unwrap();
    assert_eq!(f(&row["seconds"]), 0.5, "{row}");
    assert_eq!(f(&row["watchdog_s"]), 0.001, "{row}");
    // A caller has at most one call in flight at the end, so stalls beyond
    // one per caller are completed calls of more than the watchdog (1 ms).
    let (stalls, callers) = (
        row["stalls"].as_u64().unwrap(),
        row["callers"].as_u64().unwrap(),
    );
    assert!(stalls > callers, "{row}");
    let max = f(&row["latency_us"]["max"]);
    assert!(max > 1_000.0 && max <= 0.5e6, "{row}");
    assert!(f(&row["latency_us"]["p50"]) > 0.0, "{row}");
    // The longest interrupts-off window lies within the run (500 ms), and
    // is part of all the CPUs' time in such windows.
    let longest_ms = f(&row["irq_off_longest_ms"]);
    let all_ms = f(&row["irq_off_fraction"]) * 16.0 * 0.5 * 1e3;
    assert!(longest_ms > 0.0 && longest_ms <= 500.0, "{row}");
    assert!(longest_ms <= all_ms, "{row}");
    assert!(row["events"].as_u64().unwrap() > 0, "{row}");
}

/// Without --cpus and --callers: the selftest's 384 CPUs in the simulator,
/// 8 for real threads, 25 callers per CPU in both.
#[test]
fn membarrier_default_cpus_depend_on_the_mode() {
    for (args, cpus) in [
        (&["--sim-seconds", "0.01"][..], 384),
        (&["--mode", "threaded", "--duration-s", "0.01"], 8),
    ] {
        let out = syncbench(&[&["membarrier", "--json"], args].concat());
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
        let row: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(row["cpus"], cpus, "{args:?}: {row}");
        assert_eq!(row["callers"], 25 * cpus, "{args:?}: {row}");
    }
}

/// --think-us is microseconds between calls: a caller makes at most one
/// call per think time (plus its first), and without throttling or
/// contention hardly fewer.
#[test]
fn membarrier_think_time_spaces_each_callers_calls() {
    let out = syncbench(&[
        "membarrier",
        "--no-throttle",
        "--cpus",
        "2",
        "--callers",
        "1",
        "--think-us",
        "1000",
        "--sim-seconds",
        "0.1",
        "--json",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let row: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let calls = row["calls"].as_u64().unwrap();
    assert!((90..=101).contains(&calls), "{row}");
}

#[test]
fn membarrier_sweep_shows_the_ratio_growing_with_cpus() {
    let out = syncbench(&["membarrier", "--sweep", "--sim-seconds", "2", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let rows: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let rows = rows.as_array().unwrap();
    let cpus: Vec<u64> = rows.iter().map(|r| r["cpus"].as_u64().unwrap()).collect();
    assert_eq!(cpus, [8, 16, 64, 128, 256, 384]);
    let ratio = |i: usize| rows[i]["ratio"].as_f64().unwrap();
    assert!(ratio(0) > 1.0, "{}", rows[0]);
    assert!(ratio(5) > 10.0 * ratio(0), "{} vs {}", ratio(5), ratio(0));
    let last = &rows[5];
    assert!(last["global"]["stalls"].as_u64().unwrap() > 0, "{last}");
    for row in rows {
        assert_eq!(row["per_cpu"]["stalls"], 0, "{row}");
        for policy in ["global", "per_cpu", "none"] {
            assert_eq!(row[policy]["mode"], "sim");
        }
    }
    let text = syncbench(&["membarrier", "--sweep", "--sim-seconds", "0.2"]);
    assert!(text.status.success(), "{}", stderr(&text));
    let text = String::from_utf8(text.stdout).unwrap();
    assert!(text.contains("per-cpu/global"), "{text}");
    assert_eq!(text.lines().count(), 2 + 6, "{text}");
}

/// A run in which no call completes has no latency: absent from the JSON
/// and `-` in the text, not zeros.
#[test]
fn membarrier_run_with_no_completed_call_reports_no_latency() {
    // 20 ms simulated, and a throttle walk with 100 us per thread group
    // keeps interrupts off longer: no call ends.
    let args = [
        "membarrier",
        "--cpus",
        "8",
        "--sim-seconds",
        "0.02",
        "--tg-visit-ns",
        "100000",
    ];
    let out = syncbench(&[&args[..], &["--json"]].concat());
    assert!(out.status.success(), "{}", stderr(&out));
    let row: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(row["calls"], 0, "{row}");
    // Absent, not zeros that `compare` would read as a latency gone to 0.
    assert!(row.get("latency_us").is_none(), "{row}");
    let out = syncbench(&args);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("latency_us - (no call completed)"), "{text}");
}

/// A sweep too short for any call to complete (1 simulated µs; each call
/// takes a few) has no per-cpu/global ratio: `-`, not a 0/0.
#[test]
fn membarrier_sweep_prints_no_ratio_where_global_completed_no_call() {
    let out = syncbench(&[
        "membarrier",
        "--sweep",
        "--no-throttle",
        "--sim-seconds",
        "0.000001",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8(out.stdout).unwrap();
    let rows: Vec<&str> = text.lines().skip(2).collect();
    assert_eq!(rows.len(), 6, "{text}");
    for row in rows {
        let fields: Vec<&str> = row.split_whitespace().collect();
        assert_eq!(fields[2], "0.0", "global completed a call: {row}");
        assert_eq!(fields[5], "-", "{row}");
    }
}

#[test]
fn membarrier_threaded_and_real_modes_run_or_say_why_not() {
    let out = syncbench(&[
        "membarrier",
        "--mode",
        "threaded",
        "--cpus",
        "2",
        "--callers",
        "2",
        "--duration-s",
        "0.2",
        "--json",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let row: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(row["mode"], "threaded");
    assert!(row["calls"].as_u64().unwrap() > 0, "{row}");
    // `events` counts the simulator's events: threaded mode has none.
    assert!(row.get("events").is_none(), "{row}");

    let out = syncbench(&[
        "membarrier",
        "--mode",
        "real",
        "--callers",
        "2",
        "--duration-s",
        "0.2",
        "--json",
    ]);
    if out.status.success() {
        let row: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(row["mode"], "real");
        assert_eq!(row["policy"], "kernel");
        assert!(row["calls_per_s"].as_f64().unwrap() > 0.0, "{row}");
    } else {
        // A kernel without the command: a clear error, status 1, no output.
        assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
        assert!(
            stderr(&out).contains("does not support"),
            "{}",
            stderr(&out)
        );
        assert!(out.stdout.is_empty());
    }
}

#[test]
fn membarrier_bad_parameters_exit_2_with_the_reason() {
    let cases: &[(&[&str], &str)] = &[
        (&["membarrier", "--cpus", "0"], "at least 1 CPU"),
        (
            &["membarrier", "--cpus", "8", "--targets", "3,9"],
            "target CPU 9",
        ),
        (
            &["membarrier", "--period-us", "0"],
            "period must be more than 0",
        ),
        (
            &["membarrier", "--quota-us", "0"],
            "quota must be more than 0",
        ),
        (&["membarrier", "--callers", "0"], "at least 1 caller"),
        (&["membarrier", "--policy", "fast"], "per-cpu"),
        (&["membarrier", "--mode", "kernel"], "threaded"),
        (&["membarrier", "--sim-seconds", "0"], "more than 0 seconds"),
        (
            &["membarrier", "--mode", "real", "--cpus", "100000"],
            "online",
        ),
        (
            &["membarrier", "--mode", "real", "--policy", "global"],
            "--policy",
        ),
        (
            &["membarrier", "--sweep", "--cpus", "8"],
            "cannot be used with",
        ),
        (
            &["membarrier", "--no-throttle", "--depth", "2"],
            "--no-throttle",
        ),
        // Past what a Duration holds: refused, not a panic.
        (
            &["membarrier", "--mode", "real", "--duration-s", "1e20"],
            "too long",
        ),
        // Past the day every other real run is bounded by.
        (
            &["membarrier", "--mode", "real", "--duration-s", "86401"],
            "at most 86400 seconds for --mode real (got 86401)",
        ),
        (
            &["membarrier", "--mode", "real", "--duration-s", "1e-12"],
            "at least 1e-9 seconds, one nanosecond (got 1e-12)",
        ),
        (
            &["membarrier", "--sim-seconds", "5e-10"],
            "at least 1e-9 seconds",
        ),
        // Past u64 nanoseconds: named as given, not as the saturated
        // 18446744073.710 seconds.
        (
            &["membarrier", "--sim-seconds", "1e300"],
            "too long: more nanoseconds than a u64 holds (got 1e300)",
        ),
        // Just past it (u64 nanoseconds end at 1.8e10 s): 1e300 is past it
        // however the seconds are scaled, 2e10 only when multiplied.
        (
            &["membarrier", "--sim-seconds", "2e10"],
            "too long: more nanoseconds than a u64 holds (got 2e10)",
        ),
        (
            &["membarrier", "--mode", "threaded", "--duration-s", "1e300"],
            "(got 1e300)",
        ),
        // Past the run: the throttle timer's arithmetic would overflow.
        (
            &[
                "membarrier",
                "--period-us",
                "18446744073709551",
                "--quota-us",
                "18446744073709551",
            ],
            "period_ns is",
        ),
    ];
    for (args, needle) in cases {
        let out = syncbench(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        let err = stderr(&out);
        assert!(
            err.contains(needle),
            "{args:?}: expected '{needle}' in:\n{err}"
        );
        assert!(out.stdout.is_empty(), "{args:?} printed to stdout");
    }
}

#[test]
fn list_names_the_membarrier_modes() {
    let out = syncbench(&["list", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let kinds: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let kind = kinds
        .as_array()
        .unwrap()
        .iter()
        .find(|k| k["command"] == "membarrier")
        .expect("a membarrier kind");
    let names: Vec<&str> = kind["implementations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["sim", "threaded", "real"]);
}

#[test]
fn qrwlock_is_listed_as_ours_and_runs_in_locktorture_and_refscale() {
    let out = syncbench(&["list", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let kinds: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    for (command, name) in [("locktorture", "qrwlock"), ("refscale", "qrwlock-read")] {
        let kind = kinds
            .as_array()
            .unwrap()
            .iter()
            .find(|k| k["command"] == command)
            .unwrap();
        let list = kind["implementations"].as_array().unwrap();
        let at = list.iter().position(|i| i["name"] == name).expect("listed");
        let first_peer = list.iter().position(|i| i["origin"] == "peer").unwrap();
        assert!(at < first_peer, "ours are listed before the peers: {kind}");
        assert_eq!(list[at]["origin"], "workspace", "{kind}");
        assert_eq!(list[at]["available"], true, "{kind}");
    }

    let out = syncbench(&[
        "locktorture",
        "--lock",
        "qrwlock",
        "--writers",
        "2",
        "--readers",
        "4",
        "--duration-s",
        "0.5",
        "--json",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let rows: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let row = &rows[0];
    assert_eq!(row["lock"], "qrwlock");
    assert_eq!(row["fail"], 0, "{row}");
    assert!(row["writes"]["total"].as_u64().unwrap() > 0, "{row}");
    assert!(row["reads"]["total"].as_u64().unwrap() > 0, "{row}");

    let out = syncbench(&[
        "refscale",
        "--impl",
        "qrwlock-read",
        "--iterations",
        "1000",
        "--runs",
        "2",
        "--json",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let rows: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(rows[0]["impl"], "qrwlock-read");
    assert!(rows[0]["ns_per_op"].as_f64().unwrap() > 0.0);
}

#[test]
fn rcuscale_idle_threads_are_reported() {
    let out = syncbench(&[
        "rcuscale",
        "--impl",
        "crossbeam-epoch,hazptr",
        "--writers",
        "2",
        "--idle-threads",
        "8",
        "--duration-s",
        "0.2",
        "--json",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let rows: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    for row in rows.as_array().unwrap() {
        assert_eq!(row["idle_threads"], 8, "{row}");
        assert!(row["gps"].as_u64().unwrap() > 0, "{row}");
    }
}

#[test]
fn torture_faults_are_counted_by_kind_and_leave_no_errors() {
    let out = syncbench(&[
        "torture",
        "--impl",
        "hazptr,rcu-lite-qsbr",
        "--readers",
        "2",
        "--writers",
        "2",
        "--duration-s",
        "3",
        "--sequential",
        "--faults",
        "--json",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let rows: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    for row in rows.as_array().unwrap() {
        assert_eq!(row["errors"], 0, "{row}");
        assert!(row.get("failure").is_none(), "{row}");
        let faults = &row["faults"];
        // The cycle starts with a caught panic, then a fatal one.
        assert!(faults["panic_in_read"].as_u64().unwrap() >= 1, "{row}");
        assert!(faults["death_in_read"].as_u64().unwrap() >= 1, "{row}");
        assert!(row["unreclaimed_max"].as_u64().unwrap() >= 1, "{row}");
    }
    // Without --faults there is no "faults" object.
    let out = syncbench(&[
        "torture",
        "--impl",
        "seize",
        "--duration-s",
        "0.3",
        "--json",
    ]);
    let rows: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(rows[0].get("faults").is_none(), "{}", rows[0]);
    assert_eq!(rows[0]["errors"], 0, "{}", rows[0]);
}

/// `--duration-s` is the whole run: every implementation gets all of it at
/// once, or an equal share with `--sequential`. Both bounds come from the
/// run's own sleeps, not from the machine's speed: a run lasts at least what
/// it was given, so a share lasts at least a third of 2.4 s, and a run that
/// was not shared would last at least 2.4 s. Only an overrun of a whole
/// 1.6 s (a descheduled main thread on a loaded machine) could fail it; with
/// 0.8 s split in two, overruns of 0.3 s under two mutation sweeps did.
#[test]
fn torture_duration_is_the_whole_run_shared_at_once_or_in_turn() {
    let run = |extra: &[&str]| {
        let mut args = vec![
            "torture",
            "--impl",
            "haphazard,qrwlock,seize",
            "--readers",
            "1",
            "--writers",
            "1",
            "--duration-s",
            "2.4",
            "--json",
        ];
        args.extend_from_slice(extra);
        let began = std::time::Instant::now();
        let out = syncbench(&args);
        assert!(out.status.success(), "{extra:?}: {}", stderr(&out));
        let rows: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let durations: Vec<f64> = rows
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["duration_s"].as_f64().unwrap())
            .collect();
        (durations, began.elapsed().as_secs_f64())
    };
    let (at_once, _) = run(&[]);
    assert!(
        at_once.len() == 3 && at_once.iter().all(|d| *d >= 2.39),
        "{at_once:?}"
    );
    let (in_turn, wall) = run(&["--sequential"]);
    assert!(
        in_turn.len() == 3 && in_turn.iter().all(|d| (0.79..2.39).contains(d)),
        "{in_turn:?}"
    );
    assert!(wall < 20.0, "{wall}");
    let out = syncbench(&["torture", "--help"]);
    let help = String::from_utf8_lossy(&out.stdout);
    assert!(
        help.contains("all at the same time")
            && help.contains("--sequential")
            && help.contains("--faults"),
        "{help}"
    );
}

/// Threads on one side only are enough: `--writers 0` or `--readers 0` alone
/// runs (only both 0 is refused), and the side without threads did nothing.
#[test]
fn locktorture_runs_with_writers_only_or_readers_only() {
    for (writers, readers, idle_side) in [("0", "1", "writes"), ("1", "0", "reads")] {
        let args = [
            "locktorture",
            "--lock",
            "spin",
            "--writers",
            writers,
            "--readers",
            readers,
            "--duration-s",
            "0.2",
            "--json",
        ];
        let out = syncbench(&args);
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
        let rows: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let row = &rows[0];
        assert_eq!(row["writers"].to_string(), writers, "{row}");
        assert_eq!(row["readers"].to_string(), readers, "{row}");
        assert_eq!(row[idle_side]["total"], 0, "{row}");
        assert_eq!(row["fail"], 0, "{row}");
    }
}

#[test]
fn locktorture_faults_recover_std_poisoning_and_keep_exclusion() {
    let out = syncbench(&[
        "locktorture",
        "--lock",
        "std,qrwlock",
        "--writers",
        "1",
        "--readers",
        "2",
        "--duration-s",
        "1.5",
        "--faults",
        "--json",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let rows: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    for row in rows.as_array().unwrap() {
        assert_eq!(row["fail"], 0, "{row}");
        assert!(row.get("failure").is_none(), "{row}");
        let faults = &row["faults"];
        assert!(faults["panic_in_write"].as_u64().unwrap() >= 1, "{row}");
        // Only std poisons; a panic in a write section happened, so it did.
        let poisoned = faults["poison_recoveries"].as_u64().unwrap();
        if row["lock"] == "std" {
            assert!(poisoned >= 1, "{row}");
        } else {
            assert_eq!(poisoned, 0, "{row}");
        }
    }
    let out = syncbench(&[
        "locktorture",
        "--lock",
        "qrwlock",
        "--writers",
        "1",
        "--readers",
        "1",
        "--duration-s",
        "0.5",
        "--faults",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("Faults:  Panics: "), "{text}");
}

#[test]
fn torture_deferred_only_runs_the_deferred_paths_and_refuses_locks() {
    let out = syncbench(&[
        "torture",
        "--impl",
        "hazptr,rcu-lite-memb,crossbeam-epoch",
        "--deferred-only",
        "--duration-s",
        "0.6",
        "--json",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let rows: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    for row in rows.as_array().unwrap() {
        assert_eq!(row["errors"], 0, "{row}");
        assert!(row["replaced"].as_u64().unwrap() > 0, "{row}");
        assert_eq!(
            row["deferred_only"], true,
            "the option reached the run: {row}"
        );
    }
    let out = syncbench(&[
        "torture",
        "--impl",
        "qrwlock",
        "--deferred-only",
        "--duration-s",
        "0.2",
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("no deferred reclamation"),
        "{}",
        stderr(&out)
    );
}

/// `--impl all --deferred-only` keeps every implementation that can run
/// that way and leaves out the ones that cannot (the locks) without refusing
/// the run, where a lock named explicitly is refused. Seen without running
/// anything: `--slow-path` is refused next, naming the implementations still
/// chosen that lack a slow path.
#[test]
fn torture_all_deferred_only_leaves_the_locks_out() {
    let out = syncbench(&["torture", "--impl", "all", "--deferred-only", "--slow-path"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("--slow-path forces"), "{err}");
    for name in ["rcu-lite-memb", "crossbeam-epoch", "seize"] {
        assert!(err.contains(name), "{name} left out:\n{err}");
    }
    assert!(!err.contains("qrwlock"), "a lock kept:\n{err}");
    assert!(out.stdout.is_empty());
}

// `syncbench membarrier --mode real`: defaults follow `--targets`, and flags
// the mode would ignore are refused.

/// 25 hammers per CPU hammered: per `--targets` CPU when given, not per
/// online CPU (which this once used, on a 2-CPU machine 50 for one target).
#[test]
fn real_mode_defaults_the_callers_from_the_targets() {
    let out = syncbench(&[
        "membarrier",
        "--mode",
        "real",
        "--targets",
        "0",
        "--duration-s",
        "0.05",
        "--json",
    ]);
    if !out.status.success() {
        // A kernel without the command: a clear error, status 1.
        assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
        assert!(
            stderr(&out).contains("does not support"),
            "{}",
            stderr(&out)
        );
        return;
    }
    let row: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(row["cpus"], 1, "{row}");
    assert_eq!(row["callers"], 25, "{row}");
}

/// Flags `--mode real` would silently ignore: status 2, the flag named, and
/// nothing run.
#[test]
fn real_mode_refuses_flags_it_would_ignore() {
    let cases: &[(&[&str], &str)] = &[
        (
            &[
                "membarrier",
                "--mode",
                "real",
                "--cpus",
                "1",
                "--targets",
                "0",
            ],
            "--cpus",
        ),
        (&["membarrier", "--mode", "real", "--seed", "7"], "--seed"),
        // A repeated target would count twice towards the default callers
        // and the report's CPUs; in every mode.
        (
            &["membarrier", "--mode", "real", "--targets", "0,0"],
            "CPU 0 twice",
        ),
        (
            &["membarrier", "--cpus", "8", "--targets", "3,5,3"],
            "CPU 3 twice",
        ),
    ];
    for (args, needle) in cases {
        let out = syncbench(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        let err = stderr(&out);
        assert!(
            err.contains(needle),
            "{args:?}: expected '{needle}' in:\n{err}"
        );
        assert!(out.stdout.is_empty(), "{args:?} printed to stdout");
    }
    // The seed still reaches the simulator.
    let out = syncbench(&[
        "membarrier",
        "--cpus",
        "8",
        "--sim-seconds",
        "0.01",
        "--seed",
        "7",
        "--json",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let row: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(row["seed"], 7, "{row}");
}

/// More threads than the OS can map stacks for (vm.max_map_count) made std
/// panic inside a new thread: `--mode real` aborted, `--mode threaded` hung.
/// Such runs are refused before any thread starts.
#[test]
fn membarrier_runs_of_too_many_threads_are_refused_before_starting_them() {
    let cases: &[&[&str]] = &[
        &[
            "membarrier",
            "--mode",
            "real",
            "--duration-s",
            "0.01",
            "--callers",
            "20000",
        ],
        &[
            "membarrier",
            "--mode",
            "threaded",
            "--duration-s",
            "0.01",
            "--cpus",
            "20000",
            "--callers",
            "1",
        ],
        // One past the limit, as CPUs plus callers (their product is the
        // limit itself).
        &[
            "membarrier",
            "--mode",
            "threaded",
            "--duration-s",
            "0.01",
            "--cpus",
            "1",
            "--callers",
            "10000",
        ],
    ];
    for args in cases {
        let out = syncbench_within(args, Duration::from_secs(20));
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains("at most 10000"), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        assert!(out.stdout.is_empty(), "{args:?} printed to stdout");
    }
}

/// A thread the OS refused (here under `ulimit -v`, which leaves no room
/// for more thread stacks; `ulimit -u` or a cgroup's pids.max refuse the
/// same way) made std panic in the main thread, and the threads already
/// started waited at the run's start barrier for ever: rcuscale, refscale
/// and advise hung. Every command now exits 1 naming the thread, without a
/// panic, within seconds. (torture --json named it only in the JSON.)
#[test]
fn a_thread_the_os_refuses_ends_the_command_with_its_name() {
    let cases: &[(&[&str], &str)] = &[
        (
            &[
                "rcuscale",
                "--impl",
                "hazptr",
                "--idle-threads",
                "4000",
                "--duration-s",
                "0.1",
            ],
            "idle thread ",
        ),
        (
            &[
                "rcuscale",
                "--impl",
                "rcu-lite",
                "--writers",
                "4000",
                "--duration-s",
                "0.1",
            ],
            "writer thread ",
        ),
        (
            &[
                "refscale",
                "--impl",
                "hazptr",
                "--threads",
                "4000",
                "--iterations",
                "100",
                "--runs",
                "1",
            ],
            "reader thread ",
        ),
        (
            &[
                "advise",
                "--reads-per-write",
                "10",
                "--threads",
                "4000",
                "--duration-s",
                "0.1",
                "--rounds",
                "1",
            ],
            "thread ",
        ),
        (
            &[
                "locktorture",
                "--lock",
                "qrwlock",
                "--writers",
                "2000",
                "--readers",
                "2000",
                "--duration-s",
                "0.1",
            ],
            "writer ",
        ),
        (
            &[
                "torture",
                "--impl",
                "hazptr",
                "--readers",
                "4000",
                "--writers",
                "1",
                "--duration-s",
                "0.5",
            ],
            "reader ",
        ),
        (
            &[
                "torture",
                "--impl",
                "hazptr",
                "--readers",
                "4000",
                "--writers",
                "1",
                "--duration-s",
                "0.5",
                "--json",
            ],
            "reader ",
        ),
    ];
    for &(args, thread) in cases {
        // 1.5 GiB of address space: room for the program, not for 4000
        // thread stacks. Under `ulimit -v` a refusal is only clean if the
        // room a refused stack leaves is enough for what the threads
        // already started still map: std maps each thread's signal stack
        // (a page and some KiB) from the thread itself, and aborts the
        // process if it cannot ("failed to allocate an alternative stack");
        // glibc maps a 64 MiB arena for each new thread's first malloc, up
        // to 8 per CPU. With stacks of 2 MiB that room was a few hundred
        // KiB at best, and the command aborted in most runs on a 2-CPU
        // machine. Stacks of 256 MiB (a handful fit) leave room that is
        // rarely that small, and one arena makes the room left the same
        // however many CPUs the machine has.
        let (out, text) = syncbench_in_address_space(1_500_000, args);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {text}");
        // On stderr, but for torture's text output, whose failure line
        // says it; with --json, stderr says it too.
        let said = if args[0] == "torture" && !args.contains(&"--json") {
            String::from_utf8_lossy(&out.stdout).into_owned()
        } else {
            stderr(&out)
        };
        assert!(
            said.contains(&format!("the OS refused to start {thread}")),
            "{args:?}: {text}"
        );
        assert!(text.contains("ulimit -u"), "{args:?}: {text}");
        assert!(!text.contains("panicked"), "{args:?}: {text}");
        // "thread N of M": counted from 1, and among the threads asked for.
        let (n, m) = thread_n_of_m(&said).unwrap_or_else(|| panic!("{args:?}: {said}"));
        assert!(1 <= n && n <= m && m >= 4000, "{args:?}: {said}");
    }
}

/// A fault thread the OS refuses (the churn fault starts 64 at a time, far
/// more than fit here) fails the run naming it, as the run's own threads
/// do: it made the fault driver panic ("fault driver panicked: spawn a
/// fault thread: Os { code: 11, .. }", with a backtrace on stderr).
#[test]
fn a_fault_thread_the_os_refuses_fails_the_run_with_its_name() {
    let cases: &[&[&str]] = &[
        &[
            "torture",
            "--impl",
            "hazptr",
            "--readers",
            "1",
            "--writers",
            "1",
            "--faults",
            "--duration-s",
            "2",
        ],
        &[
            "locktorture",
            "--lock",
            "qrwlock",
            "--writers",
            "1",
            "--readers",
            "1",
            "--faults",
            "--duration-s",
            "2",
        ],
    ];
    for &args in cases {
        // About 2.4 GiB of address space and stacks of 256 MiB (see
        // `a_thread_the_os_refuses_ends_the_command_with_its_name`): room
        // for the run's three threads and a few more, not for a churn wave.
        let (out, text) = syncbench_in_address_space(2_500_000, args);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {text}");
        assert!(
            text.contains("FAILURE: the OS refused to start a churn fault thread: "),
            "{args:?}: {text}"
        );
        assert!(!text.contains("panicked"), "{args:?}: {text}");
    }
}

/// advise with as many threads as the OS allows: rcu-lite's contender
/// started its call_rcu() worker from one of them, one thread too many,
/// and rcu-lite's panic at the refusal ended advise with "worker panicked"
/// (exit 101). The worker now starts before the run's threads, and their
/// refusal ends advise naming the thread.
#[test]
fn advise_with_every_thread_the_os_allows_ends_naming_a_refused_thread() {
    let advise = |threads: &str| {
        let args = [
            "advise",
            "--reads-per-write",
            "10",
            "--threads",
            threads,
            "--duration-s",
            "0.1",
            "--rounds",
            "1",
        ];
        // As in `a_thread_the_os_refuses_ends_the_command_with_its_name`.
        let (out, text) = syncbench_in_address_space(1_500_000, &args);
        (out.status.code(), text)
    };
    // How many threads the first contender (qrwlock, which starts no
    // thread of its own) gets: all but the one refused.
    let (code, text) = advise("4000");
    assert_eq!(code, Some(1), "{text}");
    let (refused, _) = thread_n_of_m(&text).unwrap_or_else(|| panic!("{text}"));
    let allowed = (refused - 1).to_string();
    let (code, text) = advise(&allowed);
    assert!(!text.contains("panicked"), "--threads {allowed}: {text}");
    assert_eq!(code, Some(1), "--threads {allowed}: {text}");
    assert!(
        text.contains(&format!(
            "the OS refused to start thread {allowed} of {allowed} for rcu-lite"
        )),
        "--threads {allowed}: {text}"
    );
}

/// N and M of the first "thread N of M" in `text`.
fn thread_n_of_m(text: &str) -> Option<(usize, usize)> {
    let number = |s: &str| -> Option<(usize, usize)> {
        let digits = s.chars().take_while(char::is_ascii_digit).count();
        Some((s[..digits].parse().ok()?, digits))
    };
    text.match_indices("thread ").find_map(|(at, word)| {
        let rest = &text[at + word.len()..];
        let (n, len) = number(rest)?;
        let (m, _) = number(rest[len..].strip_prefix(" of ")?)?;
        Some((n, m))
    })
}

/// Runs syncbench with `args` under `ulimit -v KIB`, with stacks of 256
/// MiB and one malloc arena (see
/// `a_thread_the_os_refuses_ends_the_command_with_its_name` for why), as
/// [`run_within`] with a minute's limit; its output, and its stdout and
/// stderr together.
fn syncbench_in_address_space(kib: u64, args: &[&str]) -> (Output, String) {
    let mut command = Command::new("sh");
    command
        .arg("-c")
        .arg(format!("ulimit -v {kib} && exec \"$0\" \"$@\""))
        .arg(env!("CARGO_BIN_EXE_syncbench"))
        .args(args)
        .env("RUST_MIN_STACK", (256 << 20).to_string())
        .env("MALLOC_ARENA_MAX", "1");
    let out = run_within(command, args, Duration::from_secs(60));
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), stderr(&out));
    (out, text)
}

/// A report whose --out cannot be created is refused before it measures
/// anything: the quick profile takes minutes, and ended with this error
/// only after them, its figures lost.
#[test]
fn report_refuses_an_out_it_cannot_create_before_measuring() {
    let dir = scratch_dir("syncbench-report-out-first");
    let a_file = dir.join("a-file");
    std::fs::write(&a_file, "mine").unwrap();
    let out = syncbench_within(
        &["report", "--out", a_file.to_str().unwrap()],
        Duration::from_secs(20),
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains(&format!(
            "cannot create the folder {}/plots",
            a_file.display()
        )),
        "{}",
        stderr(&out)
    );
    assert!(out.stdout.is_empty());
    assert_eq!(std::fs::read_to_string(&a_file).unwrap(), "mine");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The retry in `syncbench()` reruns a torture run whose only failure is
/// "checked nothing" (which counts one error), and never one that found
/// errors, in the text and JSON forms `torture` prints.
#[test]
fn the_checked_nothing_retry_tells_errors_found_from_none() {
    let checked_nothing = "torture: hazptr readers=4 writers=2 duration=0.0s reads: 10 replaced: 0 \
         unreclaimed max: 0 (sampled by half: 0/0) errors: 1 !!!\n\
         torture: hazptr cpu: readers 0.00 s, writers 0.00 s (50% of the run's), others 0.00 s\n\
         torture: hazptr FAILURE: checked nothing: 10 reads and 0 replacements in the 0.000100 \
         s timed window (a use-after-free needs both to be seen); run longer !!!\n";
    assert!(torture_only_checked_nothing(checked_nothing));
    let beside_a_pass = format!(
        "torture: crossbeam-epoch readers=4 writers=2 duration=0.3s reads: 5 replaced: 7 \
         unreclaimed max: 3 (sampled by half: 0/3) errors: 0\n{checked_nothing}"
    );
    assert!(torture_only_checked_nothing(&beside_a_pass));
    let found_errors = "torture: busted readers=4 writers=2 duration=0.3s reads: 19261861 \
         replaced: 247272 unreclaimed max: 3 (sampled by half: 0/3) errors: 2157 !!!\n";
    assert!(!torture_only_checked_nothing(found_errors));
    // Errors found and nothing checked in the same run: errors beyond the one.
    let both = checked_nothing.replace("errors: 1 !!!", "errors: 3 !!!");
    assert!(!torture_only_checked_nothing(&both));
    let other_failure = "torture: hazptr readers=4 writers=2 duration=0.3s reads: 5 replaced: 7 \
         unreclaimed max: 3 (sampled by half: 0/3) errors: 1 !!!\n\
         torture: hazptr FAILURE: the OS refused to start reader thread 3 of 4 !!!\n";
    assert!(!torture_only_checked_nothing(other_failure));
    let json = |errors: u64, failure: Option<&str>| {
        serde_json::json!([
            {"impl": "crossbeam-epoch", "errors": 0},
            {"impl": "hazptr", "errors": errors, "failure": failure},
        ])
        .to_string()
    };
    assert!(torture_only_checked_nothing(&json(
        1,
        Some("checked nothing: 10 reads and 0 replacements")
    )));
    assert!(!torture_only_checked_nothing(&json(
        2,
        Some("checked nothing: 10 reads and 0 replacements")
    )));
    assert!(!torture_only_checked_nothing(&json(
        1,
        Some("a reader stalled")
    )));
}
