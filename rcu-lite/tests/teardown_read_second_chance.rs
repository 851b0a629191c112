//! A memb read from a POSIX thread-specific key destructor that runs after
//! rcu-lite's second chance gave the thread's record back
//! (`thread_record.rs`, "Exit") must not use that record: another thread may
//! have claimed it. The second chance points the thread's fast slot at the
//! placeholder before it gives the record back, so such a read takes the
//! slow path and registers a record of its own, given back in glibc's next
//! pass over the keys. `tests/teardown_read.rs` checks the same for the
//! give-back at thread-local teardown.
//!
//! Its own binary: the check relies on the exiting thread's record being the
//! only free one, so that the next registration of the process takes it, and
//! other tests registering and exiting threads meanwhile would break that.
#![cfg(not(loom))]

use rcu_lite::memb;
use std::sync::OnceLock;
use std::sync::atomic::Ordering::SeqCst;
use std::sync::atomic::{AtomicBool, AtomicU8};
use std::thread;
use std::time::{Duration, Instant};

/// How long a grace period or a step of the handshake may take before the
/// test counts it as never ending: generous, for a loaded 2-CPU machine.
const LIMIT: Duration = Duration::from_secs(60);

/// How long the key destructor's reader stays inside its section: a grace
/// period that does not wait for it returns well before.
const HOLD: Duration = Duration::from_millis(50);

/// Steps of the handshake between the key destructor and the test, in
/// `STEP`. Plain atomics and sleeps: the destructor runs after the thread's
/// thread-locals are gone, where a channel's blocking receive may need them.
const STARTING: u8 = 0;
/// The test's key destructor runs (after the second chance gave the record
/// back), or gave up: `KEY_FAILED`.
const DESTRUCTOR_RUNS: u8 = 1;
/// Another thread has claimed the record.
const RECORD_CLAIMED: u8 = 2;
/// The key destructor is inside its section.
const INSIDE: u8 = 3;
/// The thread could not create the test's key.
const KEY_FAILED: u8 = 4;

static STEP: AtomicU8 = AtomicU8::new(STARTING);
/// Set just before the key destructor's section ends.
static LEAVING: AtomicBool = AtomicBool::new(false);

/// Waits until `STEP` is `step`; false after `LIMIT`.
fn wait_for_step(step: u8) -> bool {
    wait_until(|current| current == step)
}

/// Waits until `done` holds for `STEP`; false after `LIMIT`.
fn wait_until(done: impl Fn(u8) -> bool) -> bool {
    let deadline = Instant::now() + LIMIT;
    while !done(STEP.load(SeqCst)) {
        if Instant::now() > deadline {
            return false;
        }
        thread::sleep(Duration::from_millis(1));
    }
    true
}

/// The test's key, whose destructor reads: created after memb's second-chance
/// key, and glibc calls key destructors in the order of the keys, so it runs
/// after memb's has given the record back. `None` if the process ran out of
/// keys.
static KEY: OnceLock<Option<libc::pthread_key_t>> = OnceLock::new();

/// The key's destructor: the exiting thread's side of the handshake.
unsafe extern "C" fn reads_after_the_second_chance(_: *mut libc::c_void) {
    // A panic cannot unwind out of this function (the process would
    // abort): a broken handshake returns, and the test side reports it when
    // its own wait for the next step times out.
    STEP.store(DESTRUCTOR_RUNS, SeqCst);
    if !wait_for_step(RECORD_CLAIMED) {
        return;
    }
    let guard = memb::read_lock();
    STEP.store(INSIDE, SeqCst);
    thread::sleep(HOLD);
    LEAVING.store(true, SeqCst);
    drop(guard);
}

/// Reads from its destructor, which runs after rcu-lite's own thread-local
/// destructor when the thread touched this first: the record goes back, this
/// read registers one again, and only the second chance can give that one
/// back. Then it sets the test's key, so that its destructor runs once the
/// second chance has.
struct RegistersDuringTeardown;

impl Drop for RegistersDuringTeardown {
    fn drop(&mut self) {
        // Creates memb's second-chance key if it does not exist yet, so
        // before the test's own below.
        drop(memb::read_lock());
        let key = *KEY.get_or_init(|| {
            let mut key: libc::pthread_key_t = 0;
            // SAFETY: `key` is a valid place for the new key; the destructor
            // is a function for the whole process's life.
            let rc =
                unsafe { libc::pthread_key_create(&mut key, Some(reads_after_the_second_chance)) };
            (rc == 0).then_some(key)
        });
        let set = key.map(|key| {
            // SAFETY: a key this process created and never deletes. A
            // non-null value (never dereferenced) is what makes glibc call
            // the destructor.
            unsafe { libc::pthread_setspecific(key, std::ptr::dangling::<u8>().cast()) }
        });
        if set != Some(0) {
            STEP.store(KEY_FAILED, SeqCst);
        }
    }
}

thread_local! {
    static REGISTERS_DURING_TEARDOWN: RegistersDuringTeardown = const { RegistersDuringTeardown };
}

#[test]
fn a_read_in_a_key_destructor_after_the_second_chance_is_waited_for_by_the_records_next_owner() {
    // The process's first grace period registers it for membarrier; paid
    // here, on a thread that then exits, so its record is free and the
    // exiting thread below takes it over: that thread's record is then the
    // only one of the process.
    test_support::within_a_deadline(
        "the first memb::synchronize_rcu",
        LIMIT,
        memb::synchronize_rcu,
    );
    let exiting = thread::spawn(|| {
        // Touched before the thread's first read lock registers the record's
        // owner: thread-local destructors run in the reverse order of their
        // registration, so this one runs after the owner's.
        REGISTERS_DURING_TEARDOWN.with(|_| ());
        drop(memb::read_lock());
    });
    test_support::within_a_deadline("the exiting thread's key destructor", LIMIT, || {
        wait_until(|step| step != STARTING);
    });
    assert!(
        STEP.load(SeqCst) != KEY_FAILED,
        "premise: the exiting thread could not set the test's key"
    );
    assert_eq!(
        STEP.load(SeqCst),
        DESTRUCTOR_RUNS,
        "premise: the exiting thread's key destructor ran"
    );
    test_support::within_a_deadline(
        "memb::synchronize_rcu behind a reader in a key destructor",
        LIMIT,
        || {
            let records = memb::grace_periods().records;
            drop(memb::read_lock());
            assert_eq!(
                memb::grace_periods().records,
                records,
                "premise: this thread's registration took over the exiting thread's record (the \
                 only free one) instead of adding one"
            );
            STEP.store(RECORD_CLAIMED, SeqCst);
            assert!(
                wait_for_step(INSIDE),
                "the key destructor entered its section"
            );
            // The destructor's section began before this grace period: it
            // must wait for it. Had the destructor read through a fast slot
            // still pointing at the given-back record, its section would be
            // on this thread's record: this thread would count as inside a
            // section (`synchronize_rcu` refuses to wait, with a panic), and
            // a grace period it drove would not wait for the section either
            // (a driver never judges its own record by its word).
            memb::synchronize_rcu();
            assert!(
                LEAVING.load(SeqCst),
                "memb::synchronize_rcu returned while a reader in a key destructor that began \
                 before it was still inside"
            );
        },
    );
    exiting.join().expect("the exiting thread ended cleanly");
}
