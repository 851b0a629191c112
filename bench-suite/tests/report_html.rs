//! Renders a report's `report.html` in headless Chromium and checks that the
//! page and its plots are really drawn (the screenshot is not blank and shows
//! the plots' bar colour).
//!
//! Needs Debian's `chromium` package. Without it the test checks the HTML
//! alone (nothing fetched from the network, five plots inlined), says the
//! rendering was not checked and passes, unless `SYNCPRIMS_REQUIRE_CHROMIUM=1` is set, as `.ci/run` does (and installs
//! chromium), so CI always runs it.

use bench_suite::machine::{Build, Machine};
use bench_suite::progress::Progress;
use bench_suite::report::{self, Profile, Results};
use bench_suite::{locktorture, membarrier, rcuscale, refscale, torture};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn chromium() -> Option<PathBuf> {
    ["chromium", "chromium-browser", "google-chrome"]
        .iter()
        .find_map(|name| {
            let out = Command::new("sh")
                .arg("-c")
                .arg(format!("command -v {name}"))
                .output()
                .ok()?;
            out.status
                .success()
                .then(|| PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()))
        })
}

fn sample_results() -> Results {
    let refscale = ["crossbeam-epoch", "haphazard", "arc-swap"]
        .iter()
        .enumerate()
        .flat_map(|(i, name)| {
            [1usize, 2].map(|threads| refscale::Outcome {
                name: (*name).into(),
                threads,
                ns_per_op: 2.0 + i as f64 + threads as f64,
                iterations: 1000,
                runs_ns: vec![3.0],
            })
        })
        .collect();
    let counts = |total, max, min| locktorture::Counts { total, max, min };
    let locktorture = ["parking_lot", "spin"]
        .iter()
        .map(|lock| locktorture::Outcome {
            lock: (*lock).into(),
            writers: 4,
            readers: 16,
            duration_s: 2.0,
            writes: counts(4000, 1100, 900),
            reads: counts(160_000, 11_000, 9000),
            writes_served_per_ms: None,
            reads_served_per_ms: None,
            fail: 0,
            write_fail: 0,
            read_fail: 0,
            faults: None,
            failure: None,
            writes_per_s_rounds: vec![1800.0, 2000.0, 2400.0],
            starved_rounds: vec![locktorture::Starved::default(); 3],
        })
        .collect();
    let rcuscale = [1usize, 4, 16]
        .iter()
        .map(|&writers| rcuscale::Outcome {
            name: "crossbeam-epoch".into(),
            writers,
            readers: 1,
            idle_threads: 0,
            gps: 1000,
            per_gp_us: 10.0 / writers as f64,
            latency_us: rcuscale::Latency {
                mean: 10.0,
                p50: 9.0,
                p99: 30.0,
                max: 100.0,
                time_weighted_p50: Some(40.0),
            },
            reads: 1,
            duration_s: 1.0,
            per_gp_rounds_us: vec![
                9.0 / writers as f64,
                10.0 / writers as f64,
                12.0 / writers as f64,
            ],
            fqs_interval_ms: None,
            fqs: None,
            cpu: None,
            timed_with_every_reader_in: true,
        })
        .collect();
    Results {
        profile: Profile::Quick,
        machine: Machine::current(),
        build: Some(Build::current()),
        wall_s: 1.0,
        refscale,
        locktorture,
        rcuscale,
        torture: vec![torture::Outcome {
            name: "crossbeam-epoch".into(),
            readers: 4,
            writers: 2,
            slow_path: false,
            deferred_only: false,
            duration_s: 1.0,
            reads: 10,
            replaced: 5,
            errors: 0,
            unreclaimed_max: 3,
            unreclaimed_halves: [3, 3],
            write_max_ms: 0.5,
            rss_max_kib: None,
            faults: None,
            failure: None,
            replaced_per_s_rounds: Vec::new(),
            cpu: None,
        }],
        deferred_free: Vec::new(),
        quick_qs: ["rcu-lite", "rcu-lite-noqs"]
            .iter()
            .enumerate()
            .map(|(i, name)| rcuscale::Outcome {
                name: (*name).into(),
                writers: 1,
                readers: 0,
                idle_threads: 0,
                gps: 100,
                per_gp_us: 3000.0 * (i + 1) as f64,
                latency_us: rcuscale::Latency {
                    mean: 3000.0 * (i + 1) as f64,
                    p50: 3000.0,
                    p99: 6000.0,
                    max: 9000.0,
                    time_weighted_p50: Some(9000.0),
                },
                reads: 0,
                duration_s: 1.0,
                per_gp_rounds_us: vec![3000.0 * (i + 1) as f64],
                fqs_interval_ms: None,
                fqs: None,
                cpu: None,
                timed_with_every_reader_in: true,
            })
            .collect(),
        membarrier_sweep: membarrier::sweep_rows(
            &membarrier::MembarrierArgs::for_sweep(0.02),
            &mut Progress::new(1, "test"),
        )
        .expect("sweep runs"),
        throttled: None,
        unavailable: Vec::new(),
        read_back: false,
    }
}

/// How long chromium may take over one screenshot: seconds when it works.
/// A headless chromium that stalls would otherwise hold CI until its budget
/// runs out; this fails the test instead.
const CHROMIUM_LIMIT: Duration = Duration::from_secs(180);

fn screenshot(chromium: &Path, html: &Path, png: &Path, profile_dir: &Path) {
    // Its output goes to a file, not a pipe: helper processes that outlive
    // the browser (the crash handler) would keep a pipe open, and reading
    // it to the end would wait for them.
    let log_path = profile_dir.with_extension("log");
    let log = std::fs::File::create(&log_path).expect("a log file for chromium");
    let mut child = Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-crash-reporter",
            "--disable-sync",
            "--hide-scrollbars",
            "--window-size=1200,2600",
        ])
        .arg(format!("--user-data-dir={}", profile_dir.display()))
        .arg(format!("--screenshot={}", png.display()))
        .arg(format!("file://{}", html.display()))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .expect("chromium runs");
    let began = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("chromium's status") {
            break status;
        }
        if began.elapsed() > CHROMIUM_LIMIT {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "chromium still running after {CHROMIUM_LIMIT:?} (killed); its output:\n{}",
                std::fs::read_to_string(&log_path).unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    // Chromium logs harmless D-Bus complaints on a headless machine; show its
    // output only when it fails.
    assert!(
        status.success(),
        "chromium exited with {status}:\n{}",
        std::fs::read_to_string(&log_path).unwrap_or_default()
    );
}

#[test]
fn report_html_renders_with_its_plots() {
    let dir = std::env::temp_dir().join(format!("syncbench-html-{}", std::process::id()));
    let written = report::write(sample_results(), &dir).expect("report written");
    let html = std::fs::read_to_string(&written.html).unwrap();
    // Namespaces (xmlns="http://www.w3.org/2000/svg") are names, not fetches.
    for fetch in [
        "src=\"http",
        "href=\"http",
        "url(http",
        "@import",
        "<script src",
        "<link ",
    ] {
        assert!(
            !html.contains(fetch),
            "report.html must not need the network: found {fetch}"
        );
    }
    assert_eq!(html.matches("<svg").count(), 5, "five plots inlined");

    // Only the rendering needs chromium; the checks above run without it.
    let Some(chromium) = chromium() else {
        std::fs::remove_dir_all(&dir).ok();
        assert!(
            std::env::var_os("SYNCPRIMS_REQUIRE_CHROMIUM").is_none(),
            "SYNCPRIMS_REQUIRE_CHROMIUM is set but chromium is not installed (apt-get install -y chromium)"
        );
        eprintln!(
            "chromium not installed: report.html rendering not checked (apt-get install -y chromium)"
        );
        return;
    };

    let png_path = dir.join("shot.png");
    screenshot(
        &chromium,
        &written.html,
        &png_path,
        &dir.join("chromium-profile"),
    );
    let decoder = png::Decoder::new(std::io::BufReader::new(
        std::fs::File::open(&png_path).unwrap(),
    ));
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).unwrap();
    let bytes = &buf[..info.buffer_size()];
    let channels = info.color_type.samples();
    let pixels = bytes.chunks(channels).map(|p| (p[0], p[1], p[2]));
    let (mut non_white, mut bar_blue) = (0usize, 0usize);
    for (r, g, b) in pixels {
        if (r, g, b) != (255, 255, 255) {
            non_white += 1;
        }
        // The first series colour of every plot (#1f77b4), drawn only by plots.
        if r.abs_diff(0x1f) < 8 && g.abs_diff(0x77) < 8 && b.abs_diff(0xb4) < 8 {
            bar_blue += 1;
        }
    }
    let total = (info.width * info.height) as usize;
    assert!(
        non_white > total / 50,
        "screenshot nearly blank: {non_white} of {total} pixels drawn"
    );
    assert!(
        bar_blue > 2000,
        "plots not drawn: only {bar_blue} pixels of the bar colour"
    );
    std::fs::remove_dir_all(&dir).ok();
}
