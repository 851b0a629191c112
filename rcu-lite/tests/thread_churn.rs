//! Threads that use rcu-lite from their own thread-local destructors, or
//! keep a read guard in one, give their registry record back when they end
//! (the second chance in `thread_record.rs`): the registry, which every scan
//! walks, stays as large as the most threads registered at once. Its own
//! binary, so that no other test registers threads meanwhile; the tests that
//! register threads in this process take `SERIAL`.

use rcu_lite::{memb, qsbr};
use std::cell::RefCell;
use std::sync::{Mutex, MutexGuard};
use std::thread;

/// Held by each test that registers threads in this process, so that the
/// registry sizes one test reads count only its own threads.
static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// How long a grace period or barrier may take before the test counts it as
/// never ending (a lost wake-up): generous, for a loaded 2-CPU machine.
const LIMIT: std::time::Duration = std::time::Duration::from_secs(60);

/// Reads from its destructor, which runs after rcu-lite's own per-thread
/// clean-up when the thread touched this first.
struct ReadsWhenDropped;

impl Drop for ReadsWhenDropped {
    fn drop(&mut self) {
        drop(memb::read_lock());
        let mut qsbr = qsbr::QsbrThread::register();
        qsbr.quiescent_state();
    }
}

thread_local! {
    static READS_WHEN_DROPPED: ReadsWhenDropped = const { ReadsWhenDropped };
    /// A guard that outlives rcu-lite's per-thread clean-up.
    static KEPT: RefCell<Option<memb::Guard>> = const { RefCell::new(None) };
}

#[test]
fn threads_that_read_during_their_teardown_give_their_records_back() {
    const THREADS: usize = if cfg!(miri) { 10 } else { 200 };
    let _serial = serial();
    // Registered here, and in the first thread below: the registry's size
    // once a thread has come and gone.
    thread::spawn(|| drop(memb::read_lock())).join().unwrap();
    drop(memb::read_lock());
    let (memb_before, qsbr_before) = (memb::grace_periods().records, qsbr::grace_periods().records);
    for i in 0..THREADS {
        thread::spawn(move || {
            // Touched before rcu-lite's thread-locals: destroyed after them.
            READS_WHEN_DROPPED.with(|_| ());
            KEPT.with(|_| ());
            let guard = memb::read_lock();
            if i % 2 == 0 {
                KEPT.with(|kept| *kept.borrow_mut() = Some(guard));
            }
        })
        .join()
        .unwrap();
    }
    let (memb_after, qsbr_after) = (memb::grace_periods().records, qsbr::grace_periods().records);
    // A handful of slack for other threads (the callback workers).
    assert!(
        memb_after <= memb_before + 2,
        "memb: {memb_before} records before {THREADS} threads, {memb_after} after"
    );
    assert!(
        qsbr_after <= qsbr_before + 2,
        "qsbr: {qsbr_before} records before {THREADS} threads, {qsbr_after} after"
    );
    // Nothing is left inside a section: grace periods still complete.
    test_support::within_a_deadline("memb::synchronize_rcu", LIMIT, memb::synchronize_rcu);
    test_support::within_a_deadline("qsbr::synchronize_rcu", LIMIT, qsbr::synchronize_rcu);
}

/// A thread that exits outside every section gives its record back at once
/// (`Owner`'s destructor in `thread_record.rs`), so threads that come and go
/// one at a time all use one record: the registry, which every scan walks,
/// does not grow with them. Its word says "outside", so it never held up a
/// grace period either: grace periods go on.
#[test]
fn threads_that_exit_outside_a_section_give_their_records_back() {
    const THREADS: usize = if cfg!(miri) { 10 } else { 200 };
    let _serial = serial();
    // Registered here, then in a thread that comes and goes beside it: the
    // registry's size from then on. (The other way round, this thread would
    // take the record the first one gave back.)
    drop(memb::read_lock());
    thread::spawn(|| drop(memb::read_lock())).join().unwrap();
    let before = memb::grace_periods().records;
    for _ in 0..THREADS {
        thread::spawn(|| drop(memb::read_lock())).join().unwrap();
    }
    let after = memb::grace_periods().records;
    assert_eq!(
        after, before,
        "memb: {before} records before {THREADS} threads that each exited outside a section, \
         {after} after: their records were not given back"
    );
    test_support::within_a_deadline(
        "memb::synchronize_rcu after threads exited",
        LIMIT,
        memb::synchronize_rcu,
    );
    test_support::within_a_deadline(
        "memb::synchronize_rcu_expedited after threads exited",
        LIMIT,
        memb::synchronize_rcu_expedited,
    );
}

/// Set in the child process of
/// `a_thread_that_exits_inside_a_section_keeps_its_record`.
const INSIDE_CHILD_ENV: &str = "RCU_LITE_THREAD_CHURN_EXIT_INSIDE_CHILD";

/// A thread that exits inside a section (its guard forgotten) keeps its
/// record, still inside, as the crate documents: grace periods go on waiting
/// for it, and no later thread takes the record over, which would end that
/// section (the new owner's first store clears the word). Its exit says so
/// on stderr: nothing else would explain the hang. In a child process,
/// which is left with a grace period that never ends.
#[test]
#[cfg_attr(
    miri,
    ignore = "runs this test binary again as a child process, which miri cannot"
)]
fn a_thread_that_exits_inside_a_section_keeps_its_record() {
    if std::env::var_os(INSIDE_CHILD_ENV).is_some() {
        thread::spawn(|| {
            std::mem::forget(memb::read_lock());
            eprintln!("exiting tid {}", test_support::stall::kernel_thread_id());
        })
        .join()
        .unwrap();
        // Later threads register, one at a time: none may get that record.
        for _ in 0..4 {
            thread::spawn(|| drop(memb::read_lock())).join().unwrap();
        }
        let (done_tx, done) = std::sync::mpsc::channel();
        thread::spawn(move || {
            memb::synchronize_rcu();
            let _ = done_tx.send(());
        });
        assert!(
            done.recv_timeout(std::time::Duration::from_millis(300))
                .is_err(),
            "a grace period ended although a thread had exited inside its section"
        );
        return;
    }
    let (status, stderr) = test_support::run_in_a_child_process(
        "a_thread_that_exits_inside_a_section_keeps_its_record",
        INSIDE_CHILD_ENV,
        "1",
    );
    assert!(
        status.success(),
        "the child failed ({status:?}); stderr:\n{stderr}"
    );
    // The exit says what will hang, once, naming the thread: the four later
    // threads exited outside every section.
    let tid = stderr
        .lines()
        .find_map(|line| line.strip_prefix("exiting tid "))
        .unwrap_or_else(|| panic!("no exiting tid line in:\n{stderr}"));
    assert_eq!(
        stderr.matches(" exited inside a read-side section").count(),
        1,
        "the thread's exit inside its section was not reported once; stderr:\n{stderr}"
    );
    assert!(
        stderr.contains(&format!(
            "rcu-lite: thread {tid} exited inside a read-side section"
        )),
        "the notice does not name thread {tid}; stderr:\n{stderr}"
    );
    // One line, in words: what was leaked and what it does.
    assert!(
        stderr.contains(
            "read-side section (a memb::Guard leaked with mem::forget, or a \
             raw::memb_read_lock() never ended): every later grace period waits for it forever\n"
        ),
        "the message is not the one line expected; stderr:\n{stderr}"
    );
}
