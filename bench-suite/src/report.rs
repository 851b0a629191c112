//! `syncbench report`: run a profile of every measurement and write
//! `report.md` and `results.json`.
//!
//! Every figure in the markdown comes from the same [`Results`] value that is
//! written to `results.json`, and every table compares contenders measured in
//! the same run, so ratios are honest even on a noisy machine.

use crate::machine::Machine;
use crate::progress::Progress;
use crate::{locktorture, rcuscale, refscale, torture};
use serde::Serialize;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// How much to measure.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Profile {
    /// Under 3 minutes on 2 cores.
    Quick,
    /// More threads, runs and time.
    Full,
}

impl Profile {
    fn refscale_threads(self) -> &'static [usize] {
        match self {
            Profile::Quick => &[1, 2],
            Profile::Full => &[1, 2, 8],
        }
    }

    fn refscale_config(self, threads: usize) -> refscale::Config {
        match self {
            Profile::Quick => refscale::Config {
                threads,
                iterations: 1_000_000,
                runs: 5,
            },
            Profile::Full => refscale::Config {
                threads,
                iterations: 5_000_000,
                runs: 7,
            },
        }
    }

    /// (writers, readers) pairs: one not oversubscribed, one heavily.
    fn locktorture_mixes(self) -> &'static [(usize, usize)] {
        match self {
            Profile::Quick => &[(1, 1), (4, 16)],
            Profile::Full => &[(1, 1), (4, 16), (8, 32)],
        }
    }

    /// (writers, readers) pairs for rcuscale: one writer alone, then many
    /// concurrent writers whose waits can share work.
    fn rcuscale_mixes(self) -> &'static [(usize, usize)] {
        match self {
            Profile::Quick => &[(1, 1), (16, 1)],
            Profile::Full => &[(1, 0), (1, 1), (4, 1), (16, 1), (16, 4)],
        }
    }

    fn rcuscale_duration(self) -> Duration {
        match self {
            Profile::Quick => Duration::from_secs(1),
            Profile::Full => Duration::from_secs(3),
        }
    }

    fn torture_config(self) -> torture::Config {
        match self {
            Profile::Quick => torture::Config {
                readers: 4,
                writers: 2,
                duration: Duration::from_secs(2),
                slow_path: false,
            },
            Profile::Full => torture::Config {
                readers: 8,
                writers: 2,
                duration: Duration::from_secs(10),
                slow_path: false,
            },
        }
    }

    fn locktorture_duration(self) -> Duration {
        match self {
            Profile::Quick => Duration::from_secs(2),
            Profile::Full => Duration::from_secs(5),
        }
    }
}

/// Everything a report run measured.
#[derive(Debug, Serialize)]
pub struct Results {
    /// The profile that ran.
    pub profile: Profile,
    /// Where it ran.
    pub machine: Machine,
    /// Wall time of the whole run, seconds.
    pub wall_s: f64,
    /// Read-side cost per thread count.
    pub refscale: Vec<refscale::Outcome>,
    /// Lock contention per mix.
    pub locktorture: Vec<locktorture::Outcome>,
    /// Waiting for readers per mix.
    pub rcuscale: Vec<rcuscale::Outcome>,
    /// Use-after-free torture smoke runs.
    pub torture: Vec<torture::Outcome>,
}

impl Results {
    /// Whether any torture run saw an exclusion failure.
    pub fn any_failure(&self) -> bool {
        self.locktorture.iter().any(|o| o.fail > 0) || self.torture.iter().any(|o| o.errors > 0)
    }
}

/// What [`generate`] wrote.
pub struct Written {
    /// The measured figures.
    pub results: Results,
    /// Path of `report.md`.
    pub markdown: PathBuf,
    /// Path of `results.json`.
    pub json: PathBuf,
}

/// Runs `profile` and writes `report.md` and `results.json` into `out`.
pub fn generate(profile: Profile, out: &Path) -> std::io::Result<Written> {
    let results = measure(profile);
    std::fs::create_dir_all(out)?;
    let markdown = out.join("report.md");
    let json = out.join("results.json");
    std::fs::write(&markdown, render_markdown(&results))?;
    std::fs::write(
        &json,
        serde_json::to_string_pretty(&results).map_err(std::io::Error::other)?,
    )?;
    Ok(Written {
        results,
        markdown,
        json,
    })
}

/// Runs every measurement of `profile`.
pub fn measure(profile: Profile) -> Results {
    let began = Instant::now();
    let machine = Machine::current();
    let readers: Vec<_> = refscale::implementations()
        .iter()
        .filter(|i| i.availability().is_ok())
        .collect();
    let locks: Vec<_> = locktorture::implementations()
        .iter()
        .filter(|i| i.availability().is_ok())
        .collect();
    let waiters: Vec<_> = rcuscale::implementations()
        .iter()
        .filter(|i| i.availability().is_ok())
        .collect();
    let tortured: Vec<_> = torture::implementations()
        .iter()
        .filter(|i| i.availability().is_ok())
        .collect();
    let mixes = profile.locktorture_mixes();
    let units = profile.refscale_threads().len() * readers.len()
        + mixes.len() * locks.len()
        + profile.rcuscale_mixes().len() * waiters.len()
        + tortured.len();
    let mut progress = Progress::new(units as u64, "report");

    let mut refscale_out = Vec::new();
    for &threads in profile.refscale_threads() {
        let config = profile.refscale_config(threads);
        for imp in &readers {
            // A nested bar per measure would fight with this one; measure quietly.
            let mut quiet = Progress::new(config.runs as u64, imp.name);
            refscale_out.push(refscale::measure(imp, config, &mut quiet));
            progress.set_label(imp.name);
            progress.inc(1);
        }
    }

    let mut torture_out = Vec::new();
    for &(writers, readers) in mixes {
        let config = locktorture::Config {
            writers,
            readers,
            duration: profile.locktorture_duration(),
            stat_interval: None,
            write_hold: locktorture::Config::WRITE_HOLD,
            read_hold: locktorture::Config::READ_HOLD,
        };
        for imp in &locks {
            let mut quiet = Progress::new(config.duration.as_millis() as u64, imp.name);
            let outcome = locktorture::torture(imp, config, &mut quiet, None)
                .expect("no output is written during the run");
            torture_out.push(outcome);
            progress.set_label(imp.name);
            progress.inc(1);
        }
    }

    let mut rcuscale_out = Vec::new();
    for &(writers, readers) in profile.rcuscale_mixes() {
        let config = rcuscale::Config {
            writers,
            readers,
            duration: profile.rcuscale_duration(),
        };
        for imp in &waiters {
            let mut quiet = Progress::new(config.duration.as_millis() as u64, imp.name);
            rcuscale_out.push(rcuscale::measure(imp, config, &mut quiet));
            progress.set_label(imp.name);
            progress.inc(1);
        }
    }

    let mut uaf_out = Vec::new();
    let config = profile.torture_config();
    for imp in &tortured {
        let mut quiet = Progress::new(config.duration.as_millis() as u64, imp.name);
        uaf_out.push(torture::torture(imp, config, &mut quiet));
        progress.set_label(imp.name);
        progress.inc(1);
    }

    Results {
        profile,
        machine,
        wall_s: began.elapsed().as_secs_f64(),
        refscale: refscale_out,
        locktorture: torture_out,
        rcuscale: rcuscale_out,
        torture: uaf_out,
    }
}

/// Renders the markdown report from `results` alone.
pub fn render_markdown(results: &Results) -> String {
    let mut md = String::new();
    let _ = writeln!(md, "# syncbench report ({:?} profile)\n", results.profile);
    let _ = writeln!(md, "Machine: {}.\n", results.machine.summary());
    let _ = writeln!(
        md,
        "All figures in a table were measured in the same run, one contender after the other; \
         ratios compare them to the best in the same column. Every figure is also in `results.json`. \
         Run wall time: {:.0} s.\n",
        results.wall_s
    );

    let _ = writeln!(
        md,
        "## Read side (refscale): ns per read-side critical section\n"
    );
    let mut threads: Vec<usize> = results.refscale.iter().map(|o| o.threads).collect();
    threads.dedup();
    let mut names: Vec<&str> = Vec::new();
    for o in &results.refscale {
        if !names.contains(&o.name.as_str()) {
            names.push(&o.name);
        }
    }
    let _ = write!(md, "| implementation |");
    for t in &threads {
        let _ = write!(
            md,
            " {t} thread{} (median ns) | vs best |",
            if *t == 1 { "" } else { "s" }
        );
    }
    let _ = write!(md, "\n|---|");
    for _ in &threads {
        let _ = write!(md, "---:|---:|");
    }
    let _ = writeln!(md);
    for name in &names {
        let _ = write!(md, "| {name} |");
        for t in &threads {
            let best = results
                .refscale
                .iter()
                .filter(|o| o.threads == *t)
                .map(|o| o.ns_per_op)
                .fold(f64::INFINITY, f64::min);
            match results
                .refscale
                .iter()
                .find(|o| o.threads == *t && o.name == *name)
            {
                Some(o) => {
                    let _ = write!(md, " {:.2} | {:.2}x |", o.ns_per_op, o.ns_per_op / best);
                }
                None => {
                    let _ = write!(md, " - | - |");
                }
            }
        }
        let _ = writeln!(md);
    }
    let _ = writeln!(
        md,
        "\nWith more threads than cores ({} here) a thread's time includes time descheduled, so \
         compare rows within a column, not across columns.\n",
        results.machine.cores
    );

    let _ = writeln!(
        md,
        "## Reader-writer locks under contention (locktorture)\n"
    );
    let _ = writeln!(
        md,
        "Writers hold the lock {} us, readers {} us (busy-wait), as the kernel's rw_lock torture does. \
         *Writer share* is writer acquisitions per writer thread over reader acquisitions per reader \
         thread: 1.0 is even, near 0 means writers starve. *Starved* marks the kernel's `???` \
         (a thread got less than half the busiest thread's count).\n",
        locktorture::Config::WRITE_HOLD.as_micros(),
        locktorture::Config::READ_HOLD.as_micros()
    );
    let _ = writeln!(
        md,
        "| lock | writers | readers | writes | reads | total vs best | writer share | starved | fail |\n\
         |---|---:|---:|---:|---:|---:|---:|---|---:|"
    );
    for o in &results.locktorture {
        let best = results
            .locktorture
            .iter()
            .filter(|p| p.writers == o.writers && p.readers == o.readers)
            .map(|p| p.writes.total + p.reads.total)
            .max()
            .unwrap_or(1)
            .max(1);
        let starved = match (o.writes.starved(), o.reads.starved()) {
            (true, true) => "writers, readers",
            (true, false) => "writers",
            (false, true) => "readers",
            (false, false) => "no",
        };
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {} | {:.2}x | {:.3} | {} | {}{} |",
            o.lock,
            o.writers,
            o.readers,
            o.writes.total,
            o.reads.total,
            (o.writes.total + o.reads.total) as f64 / best as f64,
            o.writer_share(),
            starved,
            o.fail,
            if o.fail > 0 { " !!!" } else { "" }
        );
    }

    let _ = writeln!(md, "\n## Waiting for readers (rcuscale)\n");
    let _ = writeln!(
        md,
        "W writers loop \"unpublish, wait until no reader holds it\". *Per-GP* is run time over all waits \
         (lower with concurrent writers when waits share work); latency is per wait, in microseconds.\n"
    );
    let _ = writeln!(
        md,
        "| implementation | writers | readers | waits | per-GP us | mean us | p50 us | p99 us | max us |\n\
         |---|---:|---:|---:|---:|---:|---:|---:|---:|"
    );
    for o in &results.rcuscale {
        let l = o.latency_us;
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {:.2} | {:.2} | {:.2} | {:.2} | {:.1} |",
            o.name, o.writers, o.readers, o.gps, o.per_gp_us, l.mean, l.p50, l.p99, l.max
        );
    }

    let _ = writeln!(md, "\n## Deferred reclamation under torture\n");
    let _ = writeln!(
        md,
        "Readers check every object they reach is live; reclamation poisons objects before a delayed free. \
         *Unreclaimed max* is the most objects allocated but not yet reclaimed at once: the memory the \
         primitive holds back.\n"
    );
    let _ = writeln!(
        md,
        "| implementation | readers | writers | reads | replaced | unreclaimed max | errors |\n\
         |---|---:|---:|---:|---:|---:|---:|"
    );
    for o in &results.torture {
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {} | {} | {}{} |",
            o.name,
            o.readers,
            o.writers,
            o.reads,
            o.replaced,
            o.unreclaimed_max,
            o.errors,
            if o.errors > 0 { " !!!" } else { "" }
        );
    }
    md
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counts(total: u64, max: u64, min: u64) -> locktorture::Counts {
        locktorture::Counts { total, max, min }
    }

    #[test]
    fn markdown_carries_the_figures_of_the_results() {
        let results = Results {
            profile: Profile::Quick,
            machine: Machine {
                cpu: "Test CPU".into(),
                cores: 2,
                kernel: "6.0".into(),
                rustc: "rustc 1.95.0".into(),
                fence_mode: "membarrier".into(),
            },
            wall_s: 12.0,
            refscale: vec![
                refscale::Outcome {
                    name: "fast".into(),
                    threads: 1,
                    ns_per_op: 2.0,
                    iterations: 10,
                    runs_ns: vec![2.0],
                },
                refscale::Outcome {
                    name: "slow".into(),
                    threads: 1,
                    ns_per_op: 5.0,
                    iterations: 10,
                    runs_ns: vec![5.0],
                },
            ],
            locktorture: vec![locktorture::Outcome {
                lock: "lock-a".into(),
                writers: 4,
                readers: 16,
                duration_s: 2.0,
                writes: counts(400, 110, 90),
                reads: counts(1600, 110, 90),
                fail: 0,
                write_fail: 0,
                read_fail: 0,
            }],
            rcuscale: vec![rcuscale::Outcome {
                name: "waiter".into(),
                writers: 16,
                readers: 1,
                gps: 1000,
                per_gp_us: 12.5,
                latency_us: rcuscale::Latency {
                    mean: 200.0,
                    p50: 150.0,
                    p99: 900.0,
                    max: 1500.0,
                },
                reads: 10,
                duration_s: 1.0,
            }],
            torture: vec![torture::Outcome {
                name: "tortured".into(),
                readers: 4,
                writers: 2,
                duration_s: 2.0,
                reads: 100,
                replaced: 50,
                errors: 0,
                unreclaimed_max: 7,
            }],
        };
        let md = render_markdown(&results);
        assert!(md.contains("Test CPU (2 CPUs)"), "{md}");
        assert!(md.contains("| fast | 2.00 | 1.00x |"), "{md}");
        assert!(md.contains("| slow | 5.00 | 2.50x |"), "{md}");
        assert!(
            md.contains("| lock-a | 4 | 16 | 400 | 1600 | 1.00x | 1.000 | no | 0 |"),
            "{md}"
        );
        assert!(
            md.contains("| waiter | 16 | 1 | 1000 | 12.50 | 200.00 | 150.00 | 900.00 | 1500.0 |"),
            "{md}"
        );
        assert!(
            md.contains("| tortured | 4 | 2 | 100 | 50 | 7 | 0 |"),
            "{md}"
        );
        assert!(!results.any_failure());
    }
}
