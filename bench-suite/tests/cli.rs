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
fn qrwlock_is_listed_first_as_ours_and_runs_in_locktorture_and_refscale() {
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
        let first = &kind["implementations"][0];
        assert_eq!(first["name"], name, "{kind}");
        assert_eq!(first["origin"], "workspace", "{kind}");
        assert_eq!(first["available"], true, "{kind}");
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
