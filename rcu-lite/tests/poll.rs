//! Polled grace periods (`get_state_synchronize_rcu()`,
//! `start_poll_synchronize_rcu()`, `poll_state_synchronize_rcu()`,
//! `cond_synchronize_rcu()`): a cookie elapses only once every section that
//! began before it has ended, `start_poll` makes one elapse with no other
//! caller, and `cond_synchronize_rcu` waits exactly when the cookie has not
//! elapsed.

use rcu_lite::qsbr::QsbrThread;
use rcu_lite::{Flavor, GpState, Memb, Qsbr, memb, qsbr};
use std::thread;
use std::time::{Duration, Instant};
use test_support::Holders;

/// Held by every test here for its whole run: a started poll must elapse
/// with nobody else calling `synchronize_rcu()`, which another test here
/// running beside it would do.
fn alone() -> std::sync::MutexGuard<'static, ()> {
    static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());
    SERIAL
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// How long a grace period may take before the test counts it as never
/// ending: generous, for a loaded 2-CPU machine.
const LIMIT: Duration = Duration::from_secs(60);
/// How long a wait that must not end is watched before the test lets it end.
const STILL_WAITING: Duration = Duration::from_millis(50);

/// Polls `state` until it elapses; panics after `LIMIT`.
fn poll_until_elapsed<F: Flavor>(state: GpState<F>) {
    let deadline = Instant::now() + LIMIT;
    while !F::poll_state_synchronize_rcu(state) {
        assert!(
            Instant::now() < deadline,
            "{state:?} did not elapse within {LIMIT:?}"
        );
        thread::sleep(Duration::from_millis(1));
    }
}

/// Cookies hash as they compare: two of the same grace period are one key
/// of a set, a later one another.
#[test]
fn cookies_of_one_grace_period_are_one_key() {
    let _alone = alone();
    // Two cookies taken with no grace period started between them (a
    // leftover of another test's poll may start one: then take them again).
    let mut cookies = std::collections::HashSet::new();
    loop {
        cookies.clear();
        let started = memb::grace_periods().started;
        cookies.insert(memb::get_state_synchronize_rcu());
        cookies.insert(memb::get_state_synchronize_rcu());
        if memb::grace_periods().started == started {
            break;
        }
    }
    assert_eq!(
        cookies.len(),
        1,
        "two cookies of one grace period hashed apart"
    );
    memb::synchronize_rcu();
    cookies.insert(memb::get_state_synchronize_rcu());
    assert_eq!(cookies.len(), 2);
}

/// With nobody else calling `synchronize_rcu()`, the callback thread drives
/// the grace period a `start_poll_synchronize_rcu()` cookie names.
#[test]
fn a_started_poll_elapses_without_another_caller() {
    let _alone = alone();
    poll_until_elapsed(memb::start_poll_synchronize_rcu());
    poll_until_elapsed(qsbr::start_poll_synchronize_rcu());
}

/// A section that began before the cookie holds it up, whoever drives the
/// grace period; once the section ends and a grace period runs, the cookie
/// has elapsed and stays so.
#[test]
fn a_memb_reader_inside_since_before_the_cookie_holds_it_up() {
    let _alone = alone();
    let mut reader = Holders::new();
    reader.hold(memb::read_lock);
    let state = memb::get_state_synchronize_rcu();
    let driver = thread::spawn(memb::synchronize_rcu);
    thread::sleep(STILL_WAITING);
    assert!(
        !memb::poll_state_synchronize_rcu(state),
        "{state:?} elapsed while a reader from before it was inside"
    );
    assert!(!driver.is_finished(), "synchronize_rcu() did not wait");
    reader.release();
    driver.join().unwrap();
    // The driver's call began after the cookie: its grace period is the
    // cookie's or a later one.
    assert!(memb::poll_state_synchronize_rcu(state));
    assert!(memb::poll_state_synchronize_rcu(state), "it stays elapsed");
}

/// The same with a qsbr registration, online (a read-side section) since
/// before the cookie, and `cond_synchronize_rcu` as the waiter.
#[test]
fn a_qsbr_registration_online_since_before_the_cookie_holds_it_up() {
    let _alone = alone();
    let mut reader = Holders::new();
    // Online from registration until dropped on release.
    reader.hold(QsbrThread::register);
    let state = qsbr::get_state_synchronize_rcu();
    let waiter = thread::spawn(move || qsbr::cond_synchronize_rcu(state));
    thread::sleep(STILL_WAITING);
    assert!(!qsbr::poll_state_synchronize_rcu(state));
    assert!(!waiter.is_finished(), "cond_synchronize_rcu() did not wait");
    reader.release();
    waiter.join().unwrap();
    assert!(qsbr::poll_state_synchronize_rcu(state));
}

/// Once the cookie has elapsed, `cond_synchronize_rcu` returns without a
/// grace period: here any grace period would wait for a reader that stays
/// inside until `cond_synchronize_rcu` has returned, so a wait is a hang,
/// which the deadline fails.
#[test]
fn cond_synchronize_returns_at_once_for_an_elapsed_cookie() {
    let _alone = alone();
    test_support::within_a_deadline("cond_synchronize_rcu of an elapsed cookie", LIMIT, || {
        let state = memb::get_state_synchronize_rcu();
        memb::synchronize_rcu();
        assert!(memb::poll_state_synchronize_rcu(state));
        let mut reader = Holders::new();
        reader.hold(memb::read_lock);
        memb::cond_synchronize_rcu(state);
        reader.release();
    });
}

/// Through the `Flavor` trait, for code generic over the flavor: a cookie
/// from `start_poll` is waited out by `cond_synchronize_rcu`.
#[test]
fn the_flavor_trait_polls_both_flavors() {
    let _alone = alone();
    fn round<F: Flavor>() {
        let state = F::start_poll_synchronize_rcu();
        F::cond_synchronize_rcu(state);
        assert!(F::poll_state_synchronize_rcu(state), "{state:?}");
        let later = F::get_state_synchronize_rcu();
        assert_ne!(state, later, "a grace period completed in between");
    }
    round::<Memb>();
    round::<Qsbr>();
}

/// A `start_poll` call inside a section never waits (it only queues), and
/// its cookie elapses once the section has ended.
#[test]
fn start_poll_inside_a_section_does_not_wait() {
    let _alone = alone();
    test_support::within_a_deadline("start_poll inside a section", LIMIT, || {
        let state = {
            let _guard = memb::read_lock();
            let state = memb::start_poll_synchronize_rcu();
            assert!(!memb::poll_state_synchronize_rcu(state));
            state
        };
        poll_until_elapsed(state);
    });
}
