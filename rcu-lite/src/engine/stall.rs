//! Stall warnings: a grace period that has waited `futex_word::stall`'s
//! timeout for its holdouts says so on stderr, naming their threads, as the
//! kernel's RCU CPU stall warnings do (`print_other_cpu_stall()` in
//! `kernel/rcu/tree_stall.h`, after `CONFIG_RCU_CPU_STALL_TIMEOUT`, 21 s by
//! default, then again every three timeouts).
//!
//! A grace period that never ends is a hang with no message otherwise: a
//! memb guard leaked with `mem::forget` in a live thread, a read-side
//! section that blocks, or a qsbr registration that stays online without
//! reporting quiescent states (a loop without `quiescent_state()`, a
//! `QsbrThread` leaked with `mem::forget`). The warning changes nothing
//! else: the grace period goes on waiting.
//!
//! Invariants: the driver looks at the clock only where it would sleep for
//! holdouts, has just woken with holdouts left, or starts a fixed-interval
//! FQS wait (never on the readers' side, never in an adaptive grace period
//! without holdouts), and sleeps for holdouts no longer than until the next
//! warning is due. Under a fixed interval the first warning comes no
//! sooner than scan 1, after the first wait: no holdout is known before.
//! `SYNCPRIMS_STALL_TIMEOUT_S` sets the timeout (seconds; `0`: off). Under
//! loom the watch is never due.

use crate::record::Record;
use futex_word::stall::Watch;
use std::time::Duration;

/// One grace period's watch on its holdouts. Armed (the clock read) the
/// first time the driver is about to sleep for them, or at a fixed-interval
/// grace period's first FQS wait, so that an adaptive grace period without
/// holdouts never reads the clock for it: the stall counts from there (in
/// an adaptive one, a spin phase after the grace period began; in a
/// fixed-interval one, from its start).
pub(super) struct StallWatch(Watch);

impl StallWatch {
    /// An unarmed watch.
    #[inline]
    pub(super) fn new() -> StallWatch {
        StallWatch(Watch::new())
    }

    /// The longest the driver may sleep for its holdouts before it must look
    /// again: until the next warning is due (`None`: no limit).
    pub(super) fn sleep_limit(&mut self) -> Option<Duration> {
        self.0.sleep_limit()
    }

    /// Warns if `holdouts` (records that have not passed a quiescent state
    /// for grace period `gp`) are left and a warning is due.
    #[inline]
    pub(super) fn check(&mut self, holdouts: &[&'static Record], gp: u64, flavor: &str) {
        if !holdouts.is_empty() {
            self.check_due(holdouts, gp, flavor);
        }
    }

    #[cold]
    fn check_due(&mut self, holdouts: &[&'static Record], gp: u64, flavor: &str) {
        // (Never due under loom, where records keep no thread id.)
        #[cfg(not(loom))]
        if let Some(waited) = self.0.due() {
            // Through `write_line`: not `eprintln!`, which panics when
            // stderr cannot be written (a closed pipe), and a panic here
            // would leave the grace period unfinished with `DRIVER` held,
            // and every later one waiting; nor std's stderr lock, which a
            // `synchronize_rcu` caller waiting for this driver may hold.
            futex_word::stall::write_line(format_args!(
                "{}",
                message(flavor, gp, waited, holdouts)
            ));
        }
        #[cfg(loom)]
        let _ = (self.0.due(), holdouts, gp, flavor);
    }
}

/// The warning's text: the flavor, the grace period, how long it waited,
/// and the kernel's ids of the holdouts' threads.
#[cfg(not(loom))]
fn message(flavor: &str, gp: u64, waited: Duration, holdouts: &[&'static Record]) -> String {
    let shown = 16;
    let mut tids: Vec<String> = holdouts
        .iter()
        .take(shown)
        .map(|r| futex_word::stall::thread_id_text(r.os_tid()))
        .collect();
    if holdouts.len() > shown {
        tids.push(format!("and {} more", holdouts.len() - shown));
    }
    let why = if flavor == "memb" {
        "each is inside a read-side section that has not ended (a memb::Guard leaked with \
         mem::forget or a raw::memb_read_lock() never unlocked, by a thread still running or \
         by one since exited, whose id is marked so; a section that blocks; or \
         guards held across .await by tasks of one executor thread, whose sections overlap \
         into one that ends only when no task of the thread holds a guard), or a thread kept \
         off its CPU inside its section (an overloaded machine, or a CPU quota throttling the \
         process: see nr_throttled in its cgroup's cpu.stat)"
    } else {
        "each has an online QsbrThread registration that reports no quiescent state (a loop \
         without quiescent_state(); a registration leaked with mem::forget, by a thread still \
         running or by one since exited, whose id is marked so; or a thread \
         blocked while online, such as an idle pool or runtime worker: go offline while it \
         parks), or a thread kept off its CPU while online (an overloaded machine, or a CPU \
         quota throttling the process: see nr_throttled in its cgroup's cpu.stat)"
    };
    format!(
        "rcu-lite: stall: {flavor} grace period {gp} has waited {:.1} s for {} thread(s) \
         (thread ids {}): {why}; it goes on waiting",
        waited.as_secs_f64(),
        holdouts.len(),
        tids.join(", ")
    )
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    /// The message names the flavor, the grace period, the wait and every
    /// holdout's thread id, up to 16 of them.
    #[test]
    fn the_message_names_the_holdouts_threads() {
        let records: Vec<&'static Record> = (0..18)
            .map(|_| &*Box::leak(Box::new(crate::record::Record::placeholder())))
            .collect();
        let text = message("qsbr", 7, Duration::from_millis(21_300), &records);
        assert!(
            text.starts_with(
                "rcu-lite: stall: qsbr grace period 7 has waited 21.3 s for 18 thread(s)"
            ) && text.contains("(thread ids 0, 0, ")
                && text.contains(", and 2 more)")
                && text.contains("QsbrThread"),
            "{text}"
        );
    }
}
