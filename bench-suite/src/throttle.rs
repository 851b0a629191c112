//! How often a cgroup CPU quota stopped this process during a measurement.
//!
//! A container's CPU limit (cgroup v2 `cpu.max`, v1 `cpu.cfs_quota_us`)
//! stops every thread of the group for the rest of a period (100 ms by
//! default) once the group has spent its quota: a reader inside its
//! section, a lock holder, a grace-period driver. A run's figures then mix
//! the primitive's costs with those stops (a review on a 2-vCPU guest,
//! 2026-12-06: at 0.2 CPU every rcuscale maximum became one period, 80-98
//! ms, and per-GP times grew 5-12x), and nothing in them says so. The
//! kernel counts the stops in the group's `cpu.stat` (`nr_throttled`, and
//! `throttled_usec` in v2, `throttled_time` in nanoseconds in v1), and in
//! each ancestor's for the ancestor's own quota: [`read`] sums the process's
//! group and its ancestors, and `syncbench` compares a reading from before
//! a measuring command with one from after it.

use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Throttling counted so far by the groups that hold this process.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Throttling {
    /// Periods in which a quota ran out (`nr_throttled`).
    pub periods: u64,
    /// Time the groups spent stopped (`throttled_usec` or `throttled_time`).
    pub stopped: Duration,
}

impl Throttling {
    /// What `self`, read after a measurement, adds to `before`.
    pub fn since(self, before: Throttling) -> Throttling {
        Throttling {
            periods: self.periods.saturating_sub(before.periods),
            stopped: self.stopped.saturating_sub(before.stopped),
        }
    }

    /// The note `syncbench` prints on stderr when a measurement was
    /// throttled; `None` when it was not.
    pub fn note(self) -> Option<String> {
        (self.periods > 0).then(|| {
            format!(
                "syncbench: note: a cgroup CPU quota stopped this process {} time(s) during the \
                 run ({:.1} ms stopped in all, as its cpu.stat counts it): every thread of the \
                 group waits for the next period then, so the figures include those stops \
                 (each up to a period, 100 ms by default); measure outside the quota to compare \
                 the primitives themselves",
                self.periods,
                self.stopped.as_secs_f64() * 1e3
            )
        })
    }
}

/// A run's throttling as `results.json` records it.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Throttled {
    /// Periods in which a quota ran out during the run.
    pub periods: u64,
    /// Milliseconds the groups spent stopped during the run, as `cpu.stat`
    /// counts them (summed over the CPUs of the group).
    pub stopped_ms: f64,
}

impl From<Throttling> for Throttled {
    fn from(run: Throttling) -> Throttled {
        Throttled {
            periods: run.periods,
            stopped_ms: run.stopped.as_secs_f64() * 1e3,
        }
    }
}

/// The throttling counted so far for this process's cgroup and its
/// ancestors; `None` where no `cpu.stat` can be read (no cgroup file
/// system, no `cpu` controller).
pub fn read() -> Option<Throttling> {
    let membership = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let mut found = false;
    let mut total = Throttling::default();
    for stat in stat_files(&membership, Path::new("/sys/fs/cgroup")) {
        if let Ok(text) = std::fs::read_to_string(&stat) {
            let counted = parse_stat(&text);
            total.periods += counted.periods;
            total.stopped += counted.stopped;
            found = true;
        }
    }
    found.then_some(total)
}

/// The `cpu.stat` files of the group that `membership` (the text of
/// `/proc/self/cgroup`) names for the `cpu` controller, and of its
/// ancestors, under `root`: in v1 the `cpu` hierarchy's (mounted as `cpu`
/// or `cpu,cpuacct`), otherwise the unified hierarchy's (`0::/path`).
fn stat_files(membership: &str, root: &Path) -> Vec<PathBuf> {
    let mut v1 = None;
    let mut unified = None;
    for line in membership.lines() {
        let mut fields = line.splitn(3, ':');
        let (Some(_id), Some(controllers), Some(path)) =
            (fields.next(), fields.next(), fields.next())
        else {
            continue;
        };
        if controllers.split(',').any(|c| c == "cpu") {
            v1 = Some((controllers, path));
        } else if controllers.is_empty() {
            unified = Some(path);
        }
    }
    let (base, path) = match v1 {
        Some((controllers, path)) => {
            let mounted = [controllers, "cpu", "cpu,cpuacct", "cpuacct,cpu"]
                .into_iter()
                .map(|name| root.join(name))
                .find(|dir| dir.is_dir());
            match mounted {
                Some(dir) => (dir, path),
                None => return Vec::new(),
            }
        }
        None => match unified {
            // A hybrid system mounts the unified hierarchy under `unified`.
            Some(path) if root.join("unified/cgroup.controllers").exists() => {
                (root.join("unified"), path)
            }
            Some(path) => (root.to_path_buf(), path),
            None => return Vec::new(),
        },
    };
    let mut files = Vec::new();
    let mut group = Some(Path::new(path.trim_start_matches('/')));
    while let Some(dir) = group {
        files.push(base.join(dir).join("cpu.stat"));
        group = dir.parent();
    }
    files
}

/// The throttling counts of one `cpu.stat` text (v1 or v2).
fn parse_stat(text: &str) -> Throttling {
    let mut counted = Throttling::default();
    for line in text.lines() {
        let mut fields = line.split_whitespace();
        let (Some(key), Some(Ok(value))) = (fields.next(), fields.next().map(str::parse::<u64>))
        else {
            continue;
        };
        match key {
            "nr_throttled" => counted.periods = value,
            "throttled_usec" => counted.stopped = Duration::from_micros(value),
            "throttled_time" => counted.stopped = Duration::from_nanos(value),
            _ => {}
        }
    }
    counted
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_v2_stat_counts_periods_and_microseconds() {
        let text = "usage_usec 5000\nuser_usec 4000\nsystem_usec 1000\nnr_periods 30\n\
                    nr_throttled 7\nthrottled_usec 250000\nnr_bursts 0\nburst_usec 0\n";
        assert_eq!(
            parse_stat(text),
            Throttling {
                periods: 7,
                stopped: Duration::from_millis(250)
            }
        );
    }

    #[test]
    fn a_v1_stat_counts_periods_and_nanoseconds() {
        let text = "nr_periods 12\nnr_throttled 3\nthrottled_time 1500000000\n";
        assert_eq!(
            parse_stat(text),
            Throttling {
                periods: 3,
                stopped: Duration::from_millis(1500)
            }
        );
    }

    /// The group and every ancestor up to the root, in the hierarchy that
    /// holds the `cpu` controller.
    #[test]
    fn the_files_are_the_group_and_its_ancestors() {
        let dir = std::env::temp_dir().join(format!("throttle-test-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("cpu,cpuacct")).unwrap();
        let v1 = "4:memory:/a\n2:cpu,cpuacct:/pod/box\n0::/\n";
        assert_eq!(
            stat_files(v1, &dir),
            [
                dir.join("cpu,cpuacct/pod/box/cpu.stat"),
                dir.join("cpu,cpuacct/pod/cpu.stat"),
                dir.join("cpu,cpuacct/cpu.stat"),
            ]
        );
        // v2 alone: the unified hierarchy at the root.
        assert_eq!(
            stat_files("0::/user.slice/run\n", &dir),
            [
                dir.join("user.slice/run/cpu.stat"),
                dir.join("user.slice/cpu.stat"),
                dir.join("cpu.stat"),
            ]
        );
        // No `cpu` controller anywhere: nothing to read.
        assert!(stat_files("4:memory:/a\n", &dir).is_empty());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_note_counts_what_the_run_added() {
        let before = Throttling {
            periods: 10,
            stopped: Duration::from_millis(900),
        };
        let after = Throttling {
            periods: 14,
            stopped: Duration::from_millis(1250),
        };
        assert_eq!(before.since(before).note(), None);
        let note = after.since(before).note().expect("throttled");
        assert!(
            note.contains("stopped this process 4 time(s)") && note.contains("350.0 ms stopped"),
            "{note}"
        );
    }
}
