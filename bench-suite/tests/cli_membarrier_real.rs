//! `syncbench membarrier --mode real`: defaults follow `--targets`, and flags
//! the mode would ignore are refused. Apart from `tests/cli.rs` so that the
//! two files can change independently.

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
