//! A memb read from a thread-local destructor that runs after the thread gave
//! its record back (`thread_record.rs`, "Exit") must not use that record:
//! another thread may have claimed it, and the two would then share one
//! record word. The give-back points the thread's fast slot at the
//! placeholder first, so such a read takes the slow path and registers a
//! record of its own.
//!
//! Its own binary: the check relies on the exiting thread's record being the
//! only free one, so that the next registration of the process takes it, and
//! other tests registering and exiting threads meanwhile would break that.
#![cfg(not(loom))]

use rcu_lite::memb;
use std::cell::RefCell;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::sync::atomic::Ordering::SeqCst;
use std::sync::mpsc::{self, Receiver, Sender};
use std::thread;
use std::time::Duration;

/// How long a grace period or a step of the handshake may take before the
/// test counts it as never ending: generous, for a loaded 2-CPU machine.
const LIMIT: Duration = Duration::from_secs(60);

/// How long the teardown reader stays inside its section: a grace period
/// that does not wait for it returns well before.
const HOLD: Duration = Duration::from_millis(50);

/// The exiting thread's side of the handshake, run by its destructor.
struct ReadsAfterTheRecordWentBack {
    /// Signalled once the destructor runs, after the record went back.
    destructor_runs: Sender<()>,
    /// Signalled once another thread has claimed the record.
    record_claimed: Receiver<()>,
    /// Signalled once the destructor is inside its section.
    inside: Sender<()>,
    /// Set just before the section ends.
    leaving: Arc<AtomicBool>,
}

impl Drop for ReadsAfterTheRecordWentBack {
    fn drop(&mut self) {
        // Nothing here may panic (a panic in a thread-local destructor aborts
        // the whole process): a broken handshake returns, and the test side
        // reports it when its own wait for the next step times out.
        if self.destructor_runs.send(()).is_err()
            || self.record_claimed.recv_timeout(LIMIT).is_err()
        {
            return;
        }
        let guard = memb::read_lock();
        let _ = self.inside.send(());
        thread::sleep(HOLD);
        self.leaving.store(true, SeqCst);
        drop(guard);
    }
}

thread_local! {
    static READS_AFTER_THE_RECORD_WENT_BACK: RefCell<Option<ReadsAfterTheRecordWentBack>> =
        const { RefCell::new(None) };
}

#[test]
fn a_read_in_a_destructor_after_the_record_went_back_is_waited_for_by_the_records_next_owner() {
    // The process's first grace period registers it for membarrier; paid
    // here, on a thread that then exits, so its record is free and the
    // exiting thread below takes it over: that thread's record is then the
    // only one of the process.
    test_support::within_a_deadline(
        "the first memb::synchronize_rcu",
        LIMIT,
        memb::synchronize_rcu,
    );
    let (destructor_runs, destructor_ran) = mpsc::channel();
    let (record_claimed, claim_seen) = mpsc::channel();
    let (inside, inside_seen) = mpsc::channel();
    let leaving = Arc::new(AtomicBool::new(false));
    let exiting = {
        let leaving = Arc::clone(&leaving);
        thread::spawn(move || {
            // Touched before the thread's first read lock registers the
            // record's owner: thread-local destructors run in the reverse
            // order of their registration, so this one runs after the owner's
            // has given the record back.
            READS_AFTER_THE_RECORD_WENT_BACK.with(|slot| {
                *slot.borrow_mut() = Some(ReadsAfterTheRecordWentBack {
                    destructor_runs,
                    record_claimed: claim_seen,
                    inside,
                    leaving,
                });
            });
            drop(memb::read_lock());
        })
    };
    destructor_ran
        .recv_timeout(LIMIT)
        .expect("the exiting thread's destructor ran");
    test_support::within_a_deadline(
        "memb::synchronize_rcu behind a reader in a thread-local destructor",
        LIMIT,
        move || {
            let records = memb::grace_periods().records;
            drop(memb::read_lock());
            assert_eq!(
                memb::grace_periods().records,
                records,
                "premise: this thread's registration took over the exiting thread's record (the \
                 only free one) instead of adding one"
            );
            record_claimed
                .send(())
                .expect("the exiting thread waits for this");
            inside_seen
                .recv_timeout(LIMIT)
                .expect("the destructor entered its section");
            // The destructor's section began before this grace period: it
            // must wait for it. Had the destructor read through a fast slot
            // still pointing at the given-back record, its section would be
            // on this thread's record: this thread would count as inside a
            // section (`synchronize_rcu` refuses to wait, with a panic), and
            // a grace period it drove would not wait for the section either
            // (a driver never judges its own record by its word).
            memb::synchronize_rcu();
            assert!(
                leaving.load(SeqCst),
                "memb::synchronize_rcu returned while a reader in a thread-local destructor \
                 that began before it was still inside"
            );
        },
    );
    exiting.join().expect("the exiting thread ended cleanly");
}
