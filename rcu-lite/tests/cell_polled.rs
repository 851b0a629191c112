//! `Rcu::replace_polled` and `Retired`: the old value comes back only once a
//! grace period that began after the unpublish has ended, polled
//! (`try_into_inner`) or waited for (`into_inner`); dropped unclaimed, it is
//! dropped at once when that grace period has ended and after it otherwise.

use rcu_lite::qsbr::QsbrThread;
use rcu_lite::{Memb, Qsbr, Rcu, Retired, memb, qsbr};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::thread;
use std::time::{Duration, Instant};
use test_support::Holders;

/// Held by every test here for its whole run: a `replace_polled`'s started
/// poll must elapse with nobody else calling `synchronize_rcu()`, which
/// another test here running beside it would do.
fn alone() -> std::sync::MutexGuard<'static, ()> {
    static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());
    SERIAL
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// How long a grace period may take before the test counts it as never
/// ending: generous, for a loaded 2-CPU machine.
const LIMIT: Duration = Duration::from_secs(60);
/// How long a wait that must not end is watched.
const STILL_WAITING: Duration = Duration::from_millis(50);

/// A value that says when it is dropped.
struct Flagged {
    id: u32,
    dropped: Arc<AtomicBool>,
}

impl Flagged {
    fn new(id: u32) -> (Flagged, Arc<AtomicBool>) {
        let dropped = Arc::new(AtomicBool::new(false));
        let value = Flagged {
            id,
            dropped: Arc::clone(&dropped),
        };
        (value, dropped)
    }
}

impl Drop for Flagged {
    fn drop(&mut self) {
        assert!(
            !self.dropped.swap(true, SeqCst),
            "{} dropped twice",
            self.id
        );
    }
}

/// A memb section in which a reader read a value: dropping it checks,
/// before the section ends, that the value is still alive.
struct Reading {
    dropped: Arc<AtomicBool>,
    _section: memb::Guard,
}

impl Drop for Reading {
    fn drop(&mut self) {
        assert!(!self.dropped.load(SeqCst), "dropped under a reader");
    }
}

/// A memb reader that read `cell`'s value `id` and holds its section until
/// [`Holders::release`].
fn reader_inside(cell: &Arc<Rcu<Flagged>>, id: u32) -> Holders {
    let cell = Arc::clone(cell);
    let mut reader = Holders::new();
    reader.hold(move || {
        let section = memb::read_lock();
        let value = cell.read(&section);
        assert_eq!(value.id, id);
        Reading {
            dropped: Arc::clone(&value.dropped),
            _section: section,
        }
    });
    reader
}

/// Polls `retired` until it gives its value up; panics after `LIMIT`.
fn poll_until_taken<F: rcu_lite::Flavor>(mut retired: Retired<Flagged, F>) -> Flagged {
    let deadline = Instant::now() + LIMIT;
    loop {
        match retired.try_into_inner() {
            Ok(value) => return value,
            Err(not_yet) => retired = not_yet,
        }
        assert!(Instant::now() < deadline, "{retired:?} never became ready");
        thread::sleep(Duration::from_millis(1));
    }
}

#[test]
fn try_into_inner_gives_nothing_back_while_a_reader_holds_the_old_value() {
    let _alone = alone();
    let (first, first_dropped) = Flagged::new(1);
    let cell = Arc::new(Rcu::<Flagged>::new(first));
    let reader = reader_inside(&cell, 1);
    let retired = cell.replace_polled(Flagged::new(2).0);
    thread::sleep(STILL_WAITING);
    let Err(retired) = retired.try_into_inner() else {
        panic!("the old value came back while a reader held it");
    };
    assert!(!retired.is_ready());
    // `state()` is the cookie of that grace period, polled like any other.
    let state = retired.state();
    assert!(
        !memb::poll_state_synchronize_rcu(state),
        "Retired::state() names a grace period that ended while a reader held the value"
    );
    reader.release();
    // Nobody else calls synchronize_rcu(): the started poll elapses alone.
    let old = poll_until_taken(retired);
    assert!(memb::poll_state_synchronize_rcu(state));
    assert_eq!(old.id, 1);
    assert!(!first_dropped.load(SeqCst), "handed back, not dropped");
    drop(old);
    assert!(first_dropped.load(SeqCst));
}

#[test]
fn into_inner_waits_for_a_reader_of_the_old_value() {
    let _alone = alone();
    let cell = Arc::new(Rcu::<Flagged>::new(Flagged::new(1).0));
    let reader = reader_inside(&cell, 1);
    let retired = cell.replace_polled(Flagged::new(2).0);
    let taker = thread::spawn(move || retired.into_inner().id);
    thread::sleep(STILL_WAITING);
    assert!(
        !taker.is_finished(),
        "into_inner() did not wait for the reader"
    );
    reader.release();
    assert_eq!(taker.join().unwrap(), 1);
}

#[test]
fn dropped_unclaimed_before_its_grace_period_the_value_goes_to_call_rcu() {
    let _alone = alone();
    let (first, first_dropped) = Flagged::new(1);
    let cell = Arc::new(Rcu::<Flagged>::new(first));
    let reader = reader_inside(&cell, 1);
    drop(cell.replace_polled(Flagged::new(2).0));
    thread::sleep(STILL_WAITING);
    assert!(!first_dropped.load(SeqCst), "dropped under a reader");
    reader.release();
    memb::rcu_barrier();
    assert!(first_dropped.load(SeqCst), "never dropped");
}

#[test]
fn dropped_unclaimed_after_its_grace_period_the_value_is_dropped_at_once() {
    let _alone = alone();
    let (first, first_dropped) = Flagged::new(1);
    let cell = Rcu::<Flagged, Memb>::new(first);
    let retired = cell.replace_polled(Flagged::new(2).0);
    memb::synchronize_rcu();
    assert!(retired.is_ready());
    drop(retired);
    assert!(first_dropped.load(SeqCst));
}

#[test]
fn a_qsbr_cell_waits_for_an_online_registration() {
    let _alone = alone();
    let cell = Arc::new(Rcu::<Flagged, Qsbr>::new(Flagged::new(1).0));
    let mut reader = Holders::new();
    {
        let cell = Arc::clone(&cell);
        // Online from registration until dropped on release.
        reader.hold(move || {
            let registration = QsbrThread::register();
            assert_eq!(cell.read(&registration.read_lock()).id, 1);
            registration
        });
    }
    let retired = cell.replace_polled(Flagged::new(2).0);
    thread::sleep(STILL_WAITING);
    assert!(
        !retired.is_ready(),
        "ready while a registration stayed online"
    );
    reader.release();
    assert_eq!(poll_until_taken(retired).id, 1);
    qsbr::rcu_barrier();
}
