//! Which fence each flavor's grace periods issue: memb's pair with its
//! readers' `fence::light()` through `fence::heavy()`, a `membarrier()` in
//! membarrier mode; qsbr's readers fence with `fence::full()` when they
//! announce a quiescent state or go online or offline, so its grace periods
//! make no system call. Its own process, so that no other test's grace
//! periods issue `membarrier()` while this one counts.

use membarrier_sim::fence::{self, Mode};
use membarrier_sim::sys::{self, Command};
use rcu_lite::{memb, qsbr};
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::mpsc;

/// Grace periods per flavor.
const CALLS: u64 = if cfg!(miri) { 5 } else { 100 };

#[test]
fn qsbr_grace_periods_issue_no_membarrier_and_memb_ones_do() {
    // A reader that stays online and announces quiescent states, and a memb
    // reader that enters and leaves sections: each grace period waits for
    // them, and would pair with them through the fence under test.
    let stop = &AtomicBool::new(false);
    std::thread::scope(|s| {
        let (online_tx, online_rx) = mpsc::channel();
        s.spawn(move || {
            let mut registration = qsbr::QsbrThread::register();
            online_tx.send(()).unwrap();
            // Relaxed: a stop request.
            while !stop.load(Relaxed) {
                drop(registration.read_lock());
                registration.quiescent_state();
            }
        });
        s.spawn(move || {
            while !stop.load(Relaxed) {
                drop(memb::read_lock());
            }
        });
        online_rx.recv().unwrap();
        // Decides the mode (and registers with the kernel) before counting.
        let mode = fence::mode();

        let before = sys::issued(Command::PrivateExpedited);
        let qsbr_before = qsbr::grace_periods().completed;
        for _ in 0..CALLS {
            qsbr::synchronize_rcu();
        }
        let after_qsbr = sys::issued(Command::PrivateExpedited);
        assert_eq!(qsbr::grace_periods().completed - qsbr_before, CALLS);
        for _ in 0..CALLS {
            memb::synchronize_rcu();
        }
        let after_memb = sys::issued(Command::PrivateExpedited);
        stop.store(true, Relaxed);

        let (Some(before), Some(after_qsbr), Some(after_memb)) = (before, after_qsbr, after_memb)
        else {
            eprintln!("no membarrier call counts without debug assertions: nothing checked");
            return;
        };
        assert_eq!(
            after_qsbr,
            before,
            "{CALLS} qsbr grace periods issued membarrier() {} times",
            after_qsbr - before
        );
        match mode {
            Mode::Membarrier => assert!(
                after_memb - after_qsbr >= CALLS,
                "{CALLS} memb grace periods issued membarrier() only {} times",
                after_memb - after_qsbr
            ),
            Mode::SeqCst => assert_eq!(after_memb, after_qsbr, "SeqCst mode issued membarrier()"),
        }
    });
}
