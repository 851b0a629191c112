//! The `syncbench` binary, run as a user would run it.

use std::process::{Command, Output};

fn syncbench(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_syncbench"))
        .args(args)
        .output()
        .expect("syncbench runs")
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
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
    let (p50, p99, max) = (
        lat["p50"].as_f64().unwrap(),
        lat["p99"].as_f64().unwrap(),
        lat["max"].as_f64().unwrap(),
    );
    assert!(p50 <= p99 && p99 <= max, "{row}");
    assert!(row["per_gp_us"].as_f64().unwrap() > 0.0, "{row}");
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

#[test]
fn bad_input_is_refused_with_status_2_and_the_valid_choices() {
    let cases: &[(&[&str], &str)] = &[
        (&["refscale", "--impl", "nonesuch"], "possible values"),
        (&["refscale", "--threads", "0"], "0"),
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
        (&["torture", "--impl", "nonesuch"], "crossbeam-epoch"),
        (&["torture", "--duration-s", "-1"], "unexpected argument"),
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

#[test]
fn list_names_rcu_lite_and_liburcu_in_every_kind_they_join() {
    let out = syncbench(&["list", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let kinds: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let names = |command: &str| -> Vec<String> {
        kinds
            .as_array()
            .unwrap()
            .iter()
            .find(|k| k["command"] == command)
            .unwrap()["implementations"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["name"].as_str().unwrap().to_owned())
            .collect()
    };
    let refscale = names("refscale");
    assert_eq!(
        &refscale[..2],
        ["rcu-lite-memb", "rcu-lite-qsbr"],
        "ours first"
    );
    assert!(refscale.contains(&"liburcu-memb".into()) && refscale.contains(&"liburcu-qsbr".into()));
    let rcuscale = names("rcuscale");
    assert_eq!(&rcuscale[..2], ["rcu-lite", "rcu-lite-noqs"], "ours first");
    assert!(rcuscale.contains(&"liburcu-memb".into()));
    let torture = names("torture");
    assert_eq!(
        &torture[..2],
        ["rcu-lite-memb", "rcu-lite-qsbr"],
        "ours first"
    );
}

/// The liburcu peers are available exactly when the build found liburcu;
/// otherwise `list` says why and how to install it, and selecting one is
/// refused with the same hint. `.ci/run` runs this test a second time with
/// `SYNCBENCH_NO_LIBURCU=1`, which makes the build script act as if liburcu
/// were absent.
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
    assert_eq!(liburcu.len(), 3, "{liburcu:?}");
    let text = String::from_utf8(syncbench(&["list"]).stdout).unwrap();
    if cfg!(syncbench_liburcu) {
        for imp in &liburcu {
            assert_eq!(imp["available"], true, "{imp}");
        }
        for line in text.lines().filter(|l| l.contains("liburcu-")) {
            assert!(!line.contains("[unavailable"), "{line}");
        }
    } else {
        for imp in &liburcu {
            assert_eq!(imp["available"], false, "{imp}");
            let why = imp["unavailable"].as_str().unwrap();
            assert!(why.contains("apt-get install -y liburcu-dev"), "{why}");
        }
        assert!(
            text.contains("[unavailable: liburcu")
                && text.contains("(apt-get install -y liburcu-dev)]"),
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
    let mut impls = vec!["rcu-lite", "rcu-lite-noqs"];
    if cfg!(syncbench_liburcu) {
        impls.push("liburcu-memb");
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
    for bad in ["0", "-1", "x", "60001"] {
        let out = syncbench(&["rcuscale", "--fqs-interval-ms", bad]);
        assert_eq!(out.status.code(), Some(2), "--fqs-interval-ms {bad}");
    }
    let help = syncbench(&["rcuscale", "--help"]);
    let help = String::from_utf8(help.stdout).unwrap();
    assert!(
        help.contains("--fqs-interval-ms") && help.contains("rcu-lite-noqs"),
        "{help}"
    );
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
