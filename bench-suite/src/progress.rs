//! Progress bars for long runs, on standard error so `--json` output stays clean.
//!
//! A bar stays hidden for the first two seconds and appears only if the run is
//! still going (and standard error is a terminal), so short runs print nothing.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::time::{Duration, Instant};

/// How long a run goes before its bar appears.
pub const SHOW_AFTER: Duration = Duration::from_secs(2);

/// A progress bar that shows itself once a run has lasted [`SHOW_AFTER`].
pub struct Progress {
    bar: ProgressBar,
    started: Instant,
    shown: bool,
}

impl Progress {
    /// A bar over `total` units of work, labelled `label`.
    pub fn new(total: u64, label: &str) -> Progress {
        let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::hidden());
        bar.set_style(
            ProgressStyle::with_template("{msg:>12} [{elapsed_precise}] {wide_bar} {pos}/{len}")
                .expect("valid template"),
        );
        bar.set_message(label.to_owned());
        Progress {
            bar,
            started: Instant::now(),
            shown: false,
        }
    }

    /// Sets the label.
    pub fn set_label(&self, label: &str) {
        self.bar.set_message(label.to_owned());
    }

    /// Records `n` more units done.
    pub fn inc(&mut self, n: u64) {
        self.maybe_show();
        self.bar.inc(n);
    }

    /// The units done so far.
    pub fn position(&self) -> u64 {
        self.bar.position()
    }

    /// Sets the units done.
    pub fn set_position(&mut self, pos: u64) {
        self.maybe_show();
        self.bar.set_position(pos);
    }

    fn maybe_show(&mut self) {
        if !self.shown && self.started.elapsed() >= SHOW_AFTER {
            self.shown = true;
            self.bar.set_draw_target(ProgressDrawTarget::stderr());
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.bar.finish_and_clear();
    }
}
