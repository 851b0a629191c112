//! Stall warnings: a grace period that waits past
//! `SYNCPRIMS_STALL_TIMEOUT_S` for its holdouts says so on stderr,
//! naming the holdouts' thread ids, as the kernel's RCU CPU stall warnings
//! do, and goes on waiting. Each case runs in a child process of its own,
//! with the variable set (the timeout is read once per process); the parent
//! reads the child's stderr.
#![cfg(not(loom))]

use rcu_lite::{memb, qsbr};
use std::sync::mpsc;
use std::thread;
use std::time::Duration;
use test_support::stall::{in_the_child, kernel_thread_id, stderr_of};

/// The holdout's id, which the child prints as "holdout tid N".
fn holdout_tid(stderr: &str) -> i32 {
    stderr
        .lines()
        .find_map(|line| line.strip_prefix("holdout tid "))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no holdout tid line in:\n{stderr}"))
}

/// A thread inside a memb section for `hold`, started and inside when this
/// returns; it prints its kernel id as "holdout tid N".
fn memb_reader_inside_for(hold: Duration) -> thread::JoinHandle<()> {
    let (entered, inside) = mpsc::channel();
    let reader = thread::spawn(move || {
        let guard = memb::read_lock();
        eprintln!("holdout tid {}", kernel_thread_id());
        entered.send(()).unwrap();
        thread::sleep(hold);
        drop(guard);
    });
    inside.recv().unwrap();
    reader
}

/// A memb reader that holds its section for `hold` while this thread waits
/// for a grace period.
fn memb_grace_period_held_for(hold: Duration) {
    let reader = memb_reader_inside_for(hold);
    memb::synchronize_rcu();
    reader.join().unwrap();
}

/// A memb reader inside a section 1.2 s long, with a timeout of 0.2 s: the
/// grace period names it, as a memb stall, and still ends.
#[test]
#[cfg_attr(miri, ignore = "a child process, which miri does not start")]
fn a_memb_reader_holding_a_grace_period_up_is_named() {
    if in_the_child() {
        return memb_grace_period_held_for(Duration::from_millis(1200));
    }
    let stderr = stderr_of("a_memb_reader_holding_a_grace_period_up_is_named", "0.2");
    let tid = holdout_tid(&stderr);
    assert!(
        stderr.lines().any(
            |line| line.starts_with("rcu-lite: stall: memb grace period ")
                && line.contains(&format!("for 1 thread(s) (thread ids {tid})"))
                && line.contains("memb::Guard")
        ),
        "{stderr}"
    );
}

/// A thread that forgot its guard and exited holds every grace period up
/// for good, with a timeout of 0.2 s: the warning names its id marked
/// "(exited)", as hazptr's do, so that it is not read as whatever live
/// thread the kernel gives the id to next, and its exit notice named the
/// same id. (The child gives up on the grace period after 0.7 s.)
#[test]
#[cfg_attr(miri, ignore = "a child process, which miri does not start")]
fn a_holdout_that_exited_is_named_as_exited() {
    if in_the_child() {
        thread::spawn(|| {
            std::mem::forget(memb::read_lock());
            eprintln!("holdout tid {}", kernel_thread_id());
        })
        .join()
        .unwrap();
        let (done_tx, done) = mpsc::channel();
        thread::spawn(move || {
            memb::synchronize_rcu();
            let _ = done_tx.send(());
        });
        assert!(
            done.recv_timeout(Duration::from_millis(700)).is_err(),
            "a grace period ended although a thread had exited inside its section"
        );
        return;
    }
    let stderr = stderr_of("a_holdout_that_exited_is_named_as_exited", "0.2");
    let tid = holdout_tid(&stderr);
    assert!(
        stderr.contains(&format!(
            "rcu-lite: thread {tid} exited inside a read-side section"
        )),
        "{stderr}"
    );
    assert!(
        stderr.lines().any(
            |line| line.starts_with("rcu-lite: stall: memb grace period ")
                && line.contains(&format!("for 1 thread(s) (thread ids {tid} (exited))"))
                && line.contains("by one since exited, whose id is marked so")
        ),
        "{stderr}"
    );
}

/// A qsbr grace period waited for inside a memb section, while the qsbr
/// thread it waits for waits for a memb grace period: each call legal on
/// its own thread, together a hang for good (docs/rcu-lite.md, *Waiting
/// for one flavor inside the other binds both*). With a timeout of 0.2 s
/// both flavors' warnings name the thread holding them up: the memb one
/// the reader, the qsbr one the registered thread. (The child gives up
/// after 0.7 s.)
#[test]
#[cfg_attr(miri, ignore = "a child process, which miri does not start")]
fn a_wait_for_each_flavor_inside_the_other_names_both_threads() {
    if in_the_child() {
        let (online_tx, online) = mpsc::channel();
        let (inside_tx, inside) = mpsc::channel();
        let (done_tx, done) = mpsc::channel();
        let qsbr_done = done_tx.clone();
        thread::spawn(move || {
            let _registration = qsbr::QsbrThread::register();
            eprintln!("qsbr thread tid {}", kernel_thread_id());
            online_tx.send(()).unwrap();
            inside.recv().unwrap();
            memb::synchronize_rcu();
            let _ = qsbr_done.send(());
        });
        online.recv().unwrap();
        thread::spawn(move || {
            let _guard = memb::read_lock();
            eprintln!("memb reader tid {}", kernel_thread_id());
            inside_tx.send(()).unwrap();
            qsbr::synchronize_rcu();
            let _ = done_tx.send(());
        });
        assert!(
            done.recv_timeout(Duration::from_millis(700)).is_err(),
            "a grace period ended although each waited for the other's thread"
        );
        return;
    }
    let stderr = stderr_of(
        "a_wait_for_each_flavor_inside_the_other_names_both_threads",
        "0.2",
    );
    let tid_of = |prefix: &str| -> i32 {
        stderr
            .lines()
            .find_map(|line| line.strip_prefix(prefix))
            .and_then(|n| n.trim().parse().ok())
            .unwrap_or_else(|| panic!("no {prefix:?} line in:\n{stderr}"))
    };
    let (reader, registered) = (tid_of("memb reader tid "), tid_of("qsbr thread tid "));
    for (flavor, tid) in [("memb", reader), ("qsbr", registered)] {
        assert!(
            stderr.lines().any(|line| line
                .starts_with(&format!("rcu-lite: stall: {flavor} grace period "))
                && line.contains(&format!("for 1 thread(s) (thread ids {tid})"))),
            "no {flavor} stall line naming thread {tid} in:\n{stderr}"
        );
    }
}

/// Under a fixed FQS interval longer than the timeout, the stall counts from
/// the grace period's start and the waits for holdouts end in time for each
/// warning: a reader inside for 1.8 s across a 1 s interval (the first wait
/// knows no holdouts, the scan after it finds the reader) is named, with the
/// 1 s of the first wait counted. Until 2026-12-07 the watch was armed only
/// after the first wait for holdouts, which this reader's unlock ends early,
/// so no warning came at all (from a review of boundary values). The first
/// wait itself is not cut short: nothing names a stall before scan 1.
#[test]
#[cfg_attr(miri, ignore = "a child process, which miri does not start")]
fn a_stall_under_a_long_fixed_interval_is_named_in_time() {
    stall_under_a_long_fixed_interval("a_stall_under_a_long_fixed_interval_is_named_in_time", true);
}

/// The same with quick QS off, where the wait after scan 1 is the driver's
/// own (it ends at the interval, not when the holdouts leave): it too ends
/// when the warning is due, and names the holdout after a recheck.
#[test]
#[cfg_attr(miri, ignore = "a child process, which miri does not start")]
fn a_stall_under_a_long_fixed_interval_without_quick_qs_is_named_in_time() {
    stall_under_a_long_fixed_interval(
        "a_stall_under_a_long_fixed_interval_without_quick_qs_is_named_in_time",
        false,
    );
}

/// A memb grace period under a 1 s fixed interval, with `quick_qs`, held up
/// 1.8 s by a reader, at a timeout of 0.2 s: the first warning names the
/// reader and counts the first 1 s wait.
fn stall_under_a_long_fixed_interval(test: &str, quick_qs: bool) {
    if in_the_child() {
        memb::configure(rcu_lite::GpConfig {
            fqs: rcu_lite::Fqs::FixedInterval(Duration::from_secs(1)),
            quick_qs,
        });
        return memb_grace_period_held_for(Duration::from_millis(1800));
    }
    let stderr = stderr_of(test, "0.2");
    let tid = holdout_tid(&stderr);
    let waited: Vec<f64> = stderr
        .lines()
        .filter(|line| {
            line.starts_with("rcu-lite: stall: memb grace period ")
                && line.contains(&format!("(thread ids {tid})"))
        })
        .filter_map(|line| {
            let (_, after) = line.split_once("has waited ")?;
            after.split_once(" s")?.0.parse().ok()
        })
        .collect();
    assert!(
        waited.first().is_some_and(|&s| s >= 0.9),
        "no warning counting the first 1 s wait: {waited:?} in\n{stderr}"
    );
}

/// An online qsbr registration that reports no quiescent state for 1.2 s,
/// with a timeout of 0.2 s: named, as a qsbr stall.
#[test]
#[cfg_attr(miri, ignore = "a child process, which miri does not start")]
fn an_online_qsbr_thread_holding_a_grace_period_up_is_named() {
    if !in_the_child() {
        let stderr = stderr_of(
            "an_online_qsbr_thread_holding_a_grace_period_up_is_named",
            "0.2",
        );
        let tid = holdout_tid(&stderr);
        assert!(
            stderr.lines().any(
                |line| line.starts_with("rcu-lite: stall: qsbr grace period ")
                    && line.contains(&format!("(thread ids {tid})"))
                    && line.contains("QsbrThread")
            ),
            "{stderr}"
        );
        return;
    }
    let (online, registered) = mpsc::channel();
    let holdout = thread::spawn(move || {
        let registration = qsbr::QsbrThread::register();
        eprintln!("holdout tid {}", kernel_thread_id());
        online.send(()).unwrap();
        thread::sleep(Duration::from_millis(1200));
        drop(registration);
    });
    registered.recv().unwrap();
    qsbr::synchronize_rcu();
    holdout.join().unwrap();
}

/// A section well inside the timeout draws no warning, and `0` turns the
/// warnings off however long the wait.
#[test]
#[cfg_attr(miri, ignore = "a child process, which miri does not start")]
fn no_warning_inside_the_timeout_or_when_off() {
    test_support::stall::assert_no_warning_inside_the_timeout_or_when_off(
        "no_warning_inside_the_timeout_or_when_off",
        memb_grace_period_held_for,
    );
}

/// The barrier stall lines of `stderr`, checked to be whole. The tests
/// check the wording of the first only: a later one may come as the wait
/// ends (a blocking callback returned), where another wording is right.
fn barrier_stall_lines(stderr: &str) -> Vec<&str> {
    let lines: Vec<&str> = stderr
        .lines()
        .filter(|line| {
            line.starts_with("rcu-lite: stall: rcu_lite::memb::rcu_barrier() has waited ")
        })
        .collect();
    assert!(!lines.is_empty(), "no barrier stall line in:\n{stderr}");
    for line in &lines {
        assert!(line.ends_with("; it goes on waiting"), "{stderr}");
    }
    lines
}

/// A callback that blocks for 1.5 s holds up an `rcu_barrier()` queued
/// behind it, with a timeout of 0.3 s: the barrier says so (its grace
/// period has ended, so no grace-period warning would), from its first
/// line on, and still returns. (The callback starts after the barrier
/// begins, once its grace period ends: counting starts, the first lines
/// called it a backlog.)
#[test]
#[cfg_attr(miri, ignore = "a child process, which miri does not start")]
fn a_barrier_held_up_by_a_blocking_callback_says_so() {
    if in_the_child() {
        memb::call_rcu(|| thread::sleep(Duration::from_millis(1500)));
        return memb::rcu_barrier();
    }
    let stderr = stderr_of("a_barrier_held_up_by_a_blocking_callback_says_so", "0.3");
    for line in barrier_stall_lines(&stderr).into_iter().take(1) {
        assert!(
            line.contains(
                "no callback returned since the last look: the thread rcu-lite-memb-callbacks is \
                 running one that does not return"
            ),
            "{stderr}"
        );
    }
    assert!(
        !stderr.contains("rcu-lite: stall: memb grace period"),
        "{stderr}"
    );
}

/// Callbacks of 40 ms each, 30 of them, ahead of an `rcu_barrier()` with a
/// timeout of 0.2 s: a backlog being worked through, which the first
/// barrier line says (some have returned by then).
#[test]
#[cfg_attr(miri, ignore = "a child process, which miri does not start")]
fn a_barrier_behind_a_backlog_says_so() {
    if in_the_child() {
        for _ in 0..30 {
            memb::call_rcu(|| thread::sleep(Duration::from_millis(40)));
        }
        return memb::rcu_barrier();
    }
    let stderr = stderr_of("a_barrier_behind_a_backlog_says_so", "0.2");
    for line in barrier_stall_lines(&stderr).into_iter().take(1) {
        assert!(
            line.contains(
                "callbacks returned since the last look, so the thread \
                 rcu-lite-memb-callbacks is still working through a backlog"
            ),
            "{stderr}"
        );
    }
}

/// A barrier whose callback waits for a grace period that a reader holds
/// up for 1.2 s, with a timeout of 0.2 s: no callback is running, and the
/// barrier's first line says that it waits for a grace period, which the
/// grace-period warning names.
#[test]
#[cfg_attr(miri, ignore = "a child process, which miri does not start")]
fn a_barrier_behind_a_held_up_grace_period_says_so() {
    if in_the_child() {
        let reader = memb_reader_inside_for(Duration::from_millis(1200));
        memb::call_rcu(|| {});
        memb::rcu_barrier();
        return reader.join().unwrap();
    }
    let stderr = stderr_of("a_barrier_behind_a_held_up_grace_period_says_so", "0.2");
    for line in barrier_stall_lines(&stderr).into_iter().take(1) {
        assert!(
            line.contains(
                "no callback is running: the thread rcu-lite-memb-callbacks waits for a grace \
                 period that is held up"
            ),
            "{stderr}"
        );
    }
    assert!(
        stderr.contains("rcu-lite: stall: memb grace period"),
        "{stderr}"
    );
}

/// A `before_fork()` that waits 1.2 s for a callback blocked on a lock,
/// with a timeout of 0.2 s, says what it waits for (before 2026-12-06 it
/// waited in silence), and still returns.
#[test]
#[cfg_attr(miri, ignore = "a child process, which miri does not start")]
fn a_fork_held_up_by_a_blocking_callback_says_so() {
    if in_the_child() {
        let lock = std::sync::Arc::new(std::sync::Mutex::new(()));
        let (locked, held) = mpsc::channel();
        let holder = {
            let lock = std::sync::Arc::clone(&lock);
            thread::spawn(move || {
                let _held = lock.lock().unwrap();
                locked.send(()).unwrap();
                thread::sleep(Duration::from_millis(1200));
            })
        };
        held.recv().unwrap();
        let (started, running) = mpsc::channel();
        memb::call_rcu(move || {
            started.send(()).unwrap();
            drop(lock.lock().unwrap());
        });
        running.recv().unwrap();
        rcu_lite::fork::before_fork();
        rcu_lite::fork::after_fork_parent();
        return holder.join().unwrap();
    }
    let stderr = stderr_of("a_fork_held_up_by_a_blocking_callback_says_so", "0.2");
    let lines: Vec<&str> = stderr
        .lines()
        .filter(|line| {
            line.starts_with("rcu-lite: stall: rcu_lite::fork::before_fork() has waited ")
        })
        .collect();
    assert!(!lines.is_empty(), "no before_fork stall line in:\n{stderr}");
    for line in lines {
        assert!(
            line.contains(
                "for the memb call_rcu() batch that the thread rcu-lite-memb-callbacks runs: a \
                 callback that does not return"
            ) && line.ends_with("; it goes on waiting"),
            "{stderr}"
        );
    }
}

/// A `before_fork()` that waits 1.2 s for another thread's fork hooks, with
/// a timeout of 0.2 s, says so, and then goes ahead.
#[test]
#[cfg_attr(miri, ignore = "a child process, which miri does not start")]
fn a_fork_waiting_for_another_threads_hooks_says_so() {
    if in_the_child() {
        let (holding, held) = mpsc::channel();
        let first = thread::spawn(move || {
            rcu_lite::fork::before_fork();
            holding.send(()).unwrap();
            thread::sleep(Duration::from_millis(1200));
            rcu_lite::fork::after_fork_parent();
        });
        held.recv().unwrap();
        rcu_lite::fork::before_fork();
        rcu_lite::fork::after_fork_parent();
        return first.join().unwrap();
    }
    let stderr = stderr_of("a_fork_waiting_for_another_threads_hooks_says_so", "0.2");
    assert!(
        stderr.lines().any(|line| line
            .starts_with("rcu-lite: stall: rcu_lite::fork::before_fork() has waited ")
            && line.contains("for another thread's fork hooks")),
        "{stderr}"
    );
}
