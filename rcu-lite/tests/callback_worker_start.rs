//! A `call_rcu()` whose worker thread cannot be started panics, but does
//! not lose its callback: the next `call_rcu()` or `rcu_barrier()` that
//! starts the worker runs it. `Rcu::replace` publishes its new value before
//! it queues the old one's drop, so a lost callback was a value never
//! dropped (until this test, `dropped after the barrier: 0`).
//!
//! The case runs in a child process (this test binary run again with
//! `CHILD_ENV` set): it lowers the process's address-space limit so that the
//! worker's stack cannot be mapped, and needs a process whose memb worker
//! has not started yet.
#![cfg(not(loom))]

use rcu_lite::{Memb, Rcu, memb};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::time::Duration;

const CHILD_ENV: &str = "RCU_LITE_CALLBACK_WORKER_START_CHILD";

/// Counts its drops.
struct Counted(Arc<AtomicUsize>);

impl Drop for Counted {
    fn drop(&mut self) {
        self.0.fetch_add(1, SeqCst);
    }
}

fn the_replaced_value_is_dropped_once_a_worker_starts() {
    let dropped = Arc::new(AtomicUsize::new(0));
    let cell = Rcu::<Counted, Memb>::new(Counted(Arc::clone(&dropped)));
    let new = Counted(Arc::clone(&dropped));
    let outcome = test_support::with_no_room_for_a_thread(|| {
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| cell.replace(new)))
    });
    let message = test_support::misuse::message_of(
        &*outcome.expect_err("the worker started anyway: the case checks nothing"),
    );
    assert!(
        message.contains("cannot start the call_rcu() worker thread"),
        "{message}"
    );
    test_support::within_a_deadline(
        "rcu_barrier after a failed worker start",
        Duration::from_secs(20),
        memb::rcu_barrier,
    );
    assert_eq!(
        dropped.load(SeqCst),
        1,
        "the value replaced while the worker could not start was never dropped \
         (dropped after the barrier: {})",
        dropped.load(SeqCst)
    );
}

#[test]
#[cfg_attr(
    miri,
    ignore = "runs this test binary again as a child process, which miri cannot"
)]
fn a_failed_worker_start_loses_no_callback() {
    if std::env::var_os(CHILD_ENV).is_some() {
        the_replaced_value_is_dropped_once_a_worker_starts();
        return;
    }
    test_support::in_a_child_process("a_failed_worker_start_loses_no_callback", CHILD_ENV, "1");
}

/// Set in the child process of `a_callback_has_a_main_threads_stack`.
const STACK_CHILD_ENV: &str = "RCU_LITE_CALLBACK_WORKER_STACK_CHILD";

/// Recurses until its frames span `bytes` of stack (1 KiB of locals
/// each), and returns the span reached: the distance from the first
/// frame's locals to the last's.
fn recurse(bytes: usize, top: usize) -> usize {
    let frame = [0u8; 1024];
    let here = std::hint::black_box(&frame).as_ptr() as usize;
    let span = top.max(here) - top.min(here);
    if span >= bytes {
        return span;
    }
    recurse(bytes, top).max(usize::from(std::hint::black_box(&frame)[1023]))
}

/// [`recurse`] from the caller's frame.
fn recurse_through(bytes: usize) -> usize {
    let frame = [0u8; 16];
    recurse(bytes, std::hint::black_box(&frame).as_ptr() as usize)
}

/// A callback may use as much stack as a main thread usually has: it runs
/// the drops of what readers no longer see, which recurse through linked
/// structures. Here one recurses through 4 MiB. Until 2026-12-07 the
/// worker had std's 2 MiB: the stack overflowed and the process aborted
/// (a 100,000-node `Box` list replaced in an `Rcu`). In a child process,
/// which such an abort ends, not the test binary.
#[test]
#[cfg_attr(
    miri,
    ignore = "runs this test binary again as a child process, which miri cannot"
)]
fn a_callback_has_a_main_threads_stack() {
    if std::env::var_os(STACK_CHILD_ENV).is_some() {
        const DEPTH: usize = 4 << 20;
        let span = Arc::new(AtomicUsize::new(0));
        let into = Arc::clone(&span);
        memb::call_rcu(move || into.store(recurse_through(DEPTH), SeqCst));
        test_support::within_a_deadline(
            "rcu_barrier after a deep callback",
            Duration::from_secs(20),
            memb::rcu_barrier,
        );
        let span = span.load(SeqCst);
        assert!(span >= DEPTH, "the deep callback reached {span} bytes");
        return;
    }
    test_support::in_a_child_process("a_callback_has_a_main_threads_stack", STACK_CHILD_ENV, "1");
}
