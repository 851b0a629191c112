//! Loom models of the grace-period engine.
//!
//! Run with
//! `LOOM_MAX_PREEMPTIONS=2 RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom cargo test -p rcu-lite --test loom --release`.
//!
//! Every protected object holds a `loom::cell::UnsafeCell`: readers read it
//! inside their section, and the updater writes it (standing in for the free)
//! once the grace period or the callback says no reader can hold it. If any
//! read is not ordered before that write, loom reports a causality violation,
//! so the models check the happens-before guarantee itself, not merely values.
#![cfg(loom)]

use loom::cell::UnsafeCell;
use loom::sync::Arc;
use loom::sync::atomic::AtomicBool;
use loom::sync::atomic::AtomicPtr;
use loom::thread;
use rcu_lite::qsbr::QsbrThread;
use rcu_lite::{Fqs, GpConfig, memb, qsbr};
use std::sync::atomic::Ordering::{AcqRel, Acquire, Release};

/// A published object; `value` is 1 while live, 0 once "freed".
struct Object {
    value: UnsafeCell<u64>,
}

impl Object {
    fn boxed() -> *mut Object {
        Box::into_raw(Box::new(Object {
            value: UnsafeCell::new(1),
        }))
    }
}

/// A pointer readers load inside their sections.
struct Slot {
    ptr: AtomicPtr<Object>,
}

impl Slot {
    fn new() -> Arc<Slot> {
        Arc::new(Slot {
            ptr: AtomicPtr::new(Object::boxed()),
        })
    }

    /// Reads the current object; the caller is inside a read-side section.
    fn read(&self) -> u64 {
        // Acquire pairs with the AcqRel swap in `unpublish`.
        let object = self.ptr.load(Acquire);
        // SAFETY: objects are freed only after the test joins every thread;
        // the UnsafeCell access is what loom checks.
        unsafe { &*object }.value.with(|v| unsafe { *v })
    }

    /// Publishes a fresh object and returns the old one.
    fn unpublish(&self) -> *mut Object {
        self.ptr.swap(Object::boxed(), AcqRel)
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        // SAFETY: the last published object, owned by the slot.
        drop(unsafe { Box::from_raw(self.ptr.load(Acquire)) });
    }
}

/// "Frees" `object` (writes its cell), then really frees it.
///
/// # Safety
///
/// `object` came from `Object::boxed`, is unpublished, and nobody frees it
/// again.
unsafe fn retire_now(object: *mut Object) {
    // SAFETY: per the contract.
    let o = unsafe { &*object };
    // SAFETY: loom checks that every reader's access happens before this write.
    o.value.with_mut(|v| unsafe { *v = 0 });
    // SAFETY: per the contract.
    drop(unsafe { Box::from_raw(object) });
}

/// `loom::model` with `LOOM_MAX_PREEMPTIONS` brought into `min..=max` (unset,
/// `min`: loom's own default would be no bound at all): at least `min` for a
/// model that needs that many to catch the weakened ordering it stands for,
/// at most `max` for one whose state space a deeper search cannot finish in
/// reasonable time.
fn model_with_preemptions(min: usize, max: usize, model: impl Fn() + Sync + Send + 'static) {
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = Some(builder.preemption_bound.map_or(min, |b| b.clamp(min, max)));
    builder.check(model);
}

fn configure(quick_qs: bool) {
    let config = GpConfig {
        quick_qs,
        fqs: Fqs::Adaptive,
    };
    memb::configure(config);
    qsbr::configure(config);
}

/// A memb reader: one section around a read of `slot`.
fn memb_reader(slot: &Slot) {
    let guard = memb::read_lock();
    assert_eq!(slot.read(), 1, "reader reached a freed object");
    drop(guard);
}

/// A qsbr reader: registers, and reads `slot` in one section while online.
fn qsbr_reader(slot: &Slot) {
    let registration = QsbrThread::register();
    let guard = registration.read_lock();
    assert_eq!(slot.read(), 1, "reader reached a freed object");
    drop(guard);
    drop(registration);
}

/// The body of a model: a reader thread runs `reader` on a slot while this
/// thread unpublishes the slot's object, calls `wait` and then frees it.
fn reader_against_updater(reader: fn(&Slot), wait: fn()) {
    let slot = Slot::new();
    let reader_thread = {
        let slot = Arc::clone(&slot);
        thread::spawn(move || reader(&slot))
    };
    let old = slot.unpublish();
    wait();
    // SAFETY: unpublished, and `wait` let a grace period elapse.
    unsafe { retire_now(old) };
    reader_thread.join().unwrap();
}

/// A grace period waits for a reader whose section began before it, with quick
/// QS on and off.
#[test]
fn grace_period_waits_for_a_reader_that_began_before_it() {
    for quick_qs in [true, false] {
        rcu_lite::loom_model_with_spurious_wakeups_too(move || {
            configure(quick_qs);
            reader_against_updater(memb_reader, memb::synchronize_rcu);
        });
    }
}

/// The same at the kernel's fixed FQS interval, where the driver's wait for
/// holdouts is the fixed-interval wait that ends early once they pass
/// (`fqs_wait`). Under loom that wait has no timer, so the holdout's unlock
/// must wake the driver through the flag the driver set on its record, or
/// the model deadlocks. The timer's own waits stay a yield under loom: the
/// first, before scan 1 (left out, with quick QS, in the executions where
/// the reader has not registered by then), and with quick QS off the one
/// that gives the driver its own quiescent state.
#[test]
fn fixed_interval_grace_period_is_woken_by_the_reader_it_waits_for() {
    for quick_qs in [true, false] {
        rcu_lite::loom_model_with_spurious_wakeups_too(move || {
            memb::configure(GpConfig {
                quick_qs,
                fqs: Fqs::kernel(),
            });
            reader_against_updater(memb_reader, memb::synchronize_rcu);
        });
    }
}

/// An expedited caller ends a fixed-interval wait that only the FQS timer
/// would end (`request_expedited` against `fqs_wait`). Under
/// `loom_fqs_timer_never_fires` that timer never fires, so a lost wake-up is
/// a deadlock: the driver must see the request after it publishes that it
/// waits, or the caller must see it waiting and wake it. The caller asks
/// only once grace period 1 has started, so that both grace periods of the
/// model (1, the plain caller's, and 2, the expedited one's) are ones it
/// asks for. Two waits, one run each: with quick QS on, the one before scan
/// 1; with quick QS off, the driver's own after scan 1 (the one before scan 1
/// is then a yield, since an expedite that ended it would skip the other).
#[test]
fn an_expedited_caller_wakes_a_driver_waiting_for_the_fqs_timer() {
    for quick_qs in [true, false] {
        rcu_lite::loom_model_with_spurious_wakeups_too(move || {
            memb::configure(GpConfig {
                quick_qs,
                fqs: Fqs::kernel(),
            });
            rcu_lite::loom_fqs_timer_never_fires(quick_qs, !quick_qs);
            // This thread registers first: with quick QS, a driver that is
            // the only thread holding a record makes no first wait.
            drop(memb::read_lock());
            let plain = thread::spawn(memb::synchronize_rcu);
            while memb::grace_periods().started < 1 {
                thread::yield_now();
            }
            memb::synchronize_rcu_expedited();
            plain.join().unwrap();
        });
    }
}

/// A grace period does not wait for a reader whose section began after it: the
/// reader holds its section until the updater's `synchronize_rcu()` has
/// returned, which would never happen if the grace period waited for it.
///
/// Fixed-interval FQS: under loom its first wait is a yield between init and
/// scan 1, which lets the spinning reader enter its section there. (Loom
/// rarely preempts a thread in favour of one that is spinning with yields, so
/// in adaptive mode the reader would almost always enter after scan 1.) With
/// quick QS on and off: off, the driver is a holdout of its own until its
/// FQS wait, and the reader may enter during either wait.
#[test]
fn grace_period_does_not_wait_for_a_reader_that_began_after_it() {
    for quick_qs in [true, false] {
        reader_after_init_model(quick_qs);
    }
}

fn reader_after_init_model(quick_qs: bool) {
    loom::model(move || {
        memb::configure(GpConfig {
            quick_qs,
            fqs: Fqs::kernel(),
        });
        let updater_done = Arc::new(AtomicBool::new(false));
        let registered = Arc::new(AtomicBool::new(false));
        let reader = {
            let updater_done = Arc::clone(&updater_done);
            let registered = Arc::clone(&registered);
            thread::spawn(move || {
                // Registered before the grace period starts, so that its
                // first wait happens with quick QS too (a driver that is the
                // only thread holding a record makes none).
                drop(memb::read_lock());
                // Release pairs with the updater's Acquire load below.
                registered.store(true, Release);
                // Wait until grace period 1 has passed init.
                while memb::grace_periods().started < 1 {
                    thread::yield_now();
                }
                let guard = memb::read_lock();
                while !updater_done.load(Acquire) {
                    thread::yield_now();
                }
                drop(guard);
            })
        };
        // Acquire pairs with the reader's Release store: its record is
        // taken before the grace period starts.
        while !registered.load(Acquire) {
            thread::yield_now();
        }
        memb::synchronize_rcu();
        updater_done.store(true, Release);
        reader.join().unwrap();
    });
}

/// Two concurrent callers, possibly sharing one grace period: each one's
/// unpublished object outlives the reader that may hold it. Run twice: a
/// driver that finds the other caller's grace period needed wakes it to take
/// over, or (as a crowded engine does) hands over to the grace-period worker,
/// whose part the driver then runs itself under loom.
#[test]
fn concurrent_callers_sharing_a_grace_period_are_each_covered() {
    for worker in [false, true] {
        concurrent_callers_model(worker);
    }
}

fn concurrent_callers_model(worker: bool) {
    rcu_lite::loom_model_with_spurious_wakeups_too(move || {
        configure(true);
        rcu_lite::loom_worker_inline(worker);
        let first = Slot::new();
        let second = Slot::new();
        let reader = {
            let (first, second) = (Arc::clone(&first), Arc::clone(&second));
            thread::spawn(move || {
                let guard = memb::read_lock();
                assert_eq!(
                    first.read() + second.read(),
                    2,
                    "reader reached a freed object"
                );
                drop(guard);
            })
        };
        let other_caller = {
            let second = Arc::clone(&second);
            thread::spawn(move || {
                let old = second.unpublish();
                memb::synchronize_rcu();
                // SAFETY: unpublished, and a grace period has elapsed.
                unsafe { retire_now(old) };
            })
        };
        let old = first.unpublish();
        memb::synchronize_rcu();
        // SAFETY: unpublished, and a grace period has elapsed.
        unsafe { retire_now(old) };
        other_caller.join().unwrap();
        reader.join().unwrap();
        let counts = memb::grace_periods();
        assert!(counts.completed <= 2, "{counts:?}");
    });
}

/// The driver's quick QS credits the driver only: a memb reader still inside a
/// nested section is waited for.
#[test]
fn quick_qs_never_credits_a_memb_thread_inside_a_read_section() {
    rcu_lite::loom_model_with_spurious_wakeups_too(|| {
        configure(true);
        reader_against_updater(
            |slot| {
                let outer = memb::read_lock();
                let inner = memb::read_lock();
                drop(inner);
                // Still inside `outer`.
                assert_eq!(slot.read(), 1, "reader reached a freed object");
                drop(outer);
            },
            memb::synchronize_rcu_expedited,
        );
    });
}

/// A nested `read_lock` keeps the outer section's snapshot: the pointer the
/// reader loaded before nesting stays protected. (Models the nested lock's
/// store, which adds one to the nesting: a nested lock that stored a fresh
/// snapshot from `gp_word` instead would let a scan credit the thread while
/// its outer section, begun before the grace period, still holds the old
/// object: this model then fails from 2 preemptions on, so it runs with at
/// least 2.)
#[test]
fn a_nested_read_lock_keeps_the_outer_sections_snapshot() {
    model_with_preemptions(2, usize::MAX, || {
        configure(true);
        reader_against_updater(
            |slot| {
                let outer = memb::read_lock();
                // Acquire pairs with the AcqRel swap in `unpublish`.
                let object = slot.ptr.load(Acquire);
                let inner = memb::read_lock();
                // SAFETY: loaded inside `outer`, which is still open; the
                // UnsafeCell access is what loom checks.
                let value = unsafe { &*object }.value.with(|v| unsafe { *v });
                assert_eq!(value, 1, "reader reached a freed object");
                drop(inner);
                drop(outer);
            },
            memb::synchronize_rcu,
        );
    });
}

/// The driver's quick QS credits the driver only: an online qsbr registration
/// is waited for until it goes offline.
#[test]
fn quick_qs_never_credits_an_online_qsbr_thread() {
    rcu_lite::loom_model_with_spurious_wakeups_too(|| {
        configure(true);
        reader_against_updater(qsbr_reader, qsbr::synchronize_rcu);
    });
}

/// A memb reader's next section does not end what its previous one held: a
/// scan may credit the thread on the later section's snapshot, and what the
/// earlier section read must still happen before the free. (Models the
/// ordering of the section-entry store of the snapshot, and of the nested
/// stores after it.)
#[test]
fn a_memb_readers_second_section_does_not_cover_its_first() {
    model_with_preemptions(3, usize::MAX, || {
        configure(true);
        reader_against_updater(
            |slot| {
                memb_reader(slot);
                let guard = memb::read_lock();
                // Nested: the scan may credit the thread on the nested
                // word's store too.
                let nested = memb::read_lock();
                drop(nested);
                drop(guard);
            },
            memb::synchronize_rcu,
        );
    });
}

/// A memb reader whose snapshot is two grace periods old: it loads
/// `gp_word` before the first grace period begins, stores it only after
/// that grace period credited it (its word still said "outside"), then reads
/// the object that the second grace period's caller unpublishes. The second
/// grace period must hold it: a snapshot older than the grace period is not
/// quiescent, however old. (Catches a holdout rule that credits snapshots
/// two or more grace periods behind, such as one that waits only for the
/// previous grace period's: it needs the reader stalled across a whole grace
/// period and a preemption on each side of it, so this runs with at least
/// 4.)
#[test]
fn a_snapshot_two_grace_periods_old_is_still_waited_for() {
    model_with_preemptions(4, usize::MAX, || {
        configure(true);
        let slot = Slot::new();
        let reader_thread = {
            let slot = Arc::clone(&slot);
            thread::spawn(move || memb_reader(&slot))
        };
        memb::synchronize_rcu();
        let old = slot.unpublish();
        memb::synchronize_rcu();
        // SAFETY: unpublished, and a grace period elapsed since.
        unsafe { retire_now(old) };
        reader_thread.join().unwrap();
    });
}

/// A qsbr reader's quiescent state ends what it may hold: in its next section
/// it must reach the new object, or the updater that saw the quiescent state
/// would free the old one under it. (Models the Acquire load of `gp_word` in
/// `quiescent_state`: made Relaxed, this model fails from 4 preemptions on,
/// so it runs with at least 4 whatever `LOOM_MAX_PREEMPTIONS` says; about a
/// second.)
#[test]
fn a_qsbr_reader_after_its_quiescent_state_reaches_the_new_object() {
    model_with_preemptions(4, usize::MAX, || {
        configure(true);
        reader_against_updater(
            |slot| {
                let mut registration = QsbrThread::register();
                let guard = registration.read_lock();
                assert_eq!(slot.read(), 1, "reader reached a freed object");
                drop(guard);
                registration.quiescent_state();
                let guard = registration.read_lock();
                assert_eq!(slot.read(), 1, "reader reached a freed object");
                drop(guard);
                drop(registration);
            },
            qsbr::synchronize_rcu,
        );
    });
}

/// A `call_rcu()` callback runs only after a grace period: the reader that may
/// hold the object has left its section first.
#[test]
fn call_rcu_callbacks_run_only_after_their_grace_period() {
    struct Retire(*mut Object);
    // SAFETY: the pointer is an unpublished object the callback alone frees.
    unsafe impl Send for Retire {}

    loom::model(|| {
        configure(true);
        let slot = Slot::new();
        let reader = {
            let slot = Arc::clone(&slot);
            thread::spawn(move || memb_reader(&slot))
        };
        let old = Retire(slot.unpublish());
        memb::call_rcu(move || {
            let old = old;
            // SAFETY: unpublished; call_rcu runs this after a grace period.
            unsafe { retire_now(old.0) };
        });
        // Under loom the barrier runs the callback batch itself.
        memb::rcu_barrier();
        reader.join().unwrap();
    });
}

/// A polled grace period covers a reader that began before the cookie: the
/// updater unpublishes, takes a cookie, polls until another thread's
/// `synchronize_rcu()` (which began after the cookie) has made it elapse,
/// and frees. Only the poll orders the free after the reader's access: with
/// a Relaxed load of the completed count, loom reports a causality
/// violation.
#[test]
fn a_polled_cookie_covers_a_reader_that_began_before_it() {
    rcu_lite::loom_model_with_spurious_wakeups_too(|| {
        configure(true);
        let slot = Slot::new();
        let reader = {
            let slot = Arc::clone(&slot);
            thread::spawn(move || memb_reader(&slot))
        };
        let old = slot.unpublish();
        let state = memb::get_state_synchronize_rcu();
        let other_caller = thread::spawn(memb::synchronize_rcu);
        // Only the poll links this thread to the other's grace period.
        while !memb::poll_state_synchronize_rcu(state) {
            thread::yield_now();
        }
        // SAFETY: unpublished before the cookie, which has elapsed.
        unsafe { retire_now(old) };
        other_caller.join().unwrap();
        reader.join().unwrap();
    });
}

/// `cond_synchronize_rcu()` with a cookie that has not elapsed waits for a
/// reader that began before it, with quick QS on and off.
#[test]
fn cond_synchronize_waits_for_a_reader_that_began_before_the_cookie() {
    for quick_qs in [true, false] {
        rcu_lite::loom_model_with_spurious_wakeups_too(move || {
            configure(quick_qs);
            reader_against_updater(memb_reader, || {
                memb::cond_synchronize_rcu(memb::get_state_synchronize_rcu());
            });
        });
    }
}

/// `Rcu::replace_polled`: the `Retired` value comes back (`try_into_inner`)
/// only once no reader can hold it. The updater polls until another
/// thread's `synchronize_rcu()` has made the cookie elapse, then writes the
/// value it got back: a reader's access that the poll did not order before
/// that write is a causality violation.
#[test]
fn a_retired_value_comes_back_only_after_its_readers() {
    rcu_lite::loom_model_with_spurious_wakeups_too(|| {
        configure(true);
        let cell = Arc::new(rcu_lite::Rcu::<UnsafeCell<u64>>::new(UnsafeCell::new(1)));
        let reader = {
            let cell = Arc::clone(&cell);
            thread::spawn(move || {
                let guard = memb::read_lock();
                // SAFETY: a shared read, which loom checks against the write.
                let value = cell.read(&guard).with(|v| unsafe { *v });
                assert_ne!(value, 0, "reader reached a value handed back");
                drop(guard);
            })
        };
        let mut retired = cell.replace_polled(UnsafeCell::new(2));
        let other_caller = thread::spawn(memb::synchronize_rcu);
        let old = loop {
            match retired.try_into_inner() {
                Ok(old) => break old,
                Err(not_yet) => retired = not_yet,
            }
            thread::yield_now();
        };
        // SAFETY: handed back, so ours alone (loom checks the readers).
        old.with_mut(|v| unsafe { *v = 0 });
        other_caller.join().unwrap();
        reader.join().unwrap();
    });
}

/// `start_poll_synchronize_rcu()`'s cookie elapses through the callback
/// batch it queued (run here by the barrier, under loom), with no
/// `synchronize_rcu()` caller, and covers a reader that began before it.
#[test]
fn a_started_poll_elapses_through_its_callback_batch() {
    loom::model(|| {
        configure(true);
        let slot = Slot::new();
        let reader = {
            let slot = Arc::clone(&slot);
            thread::spawn(move || memb_reader(&slot))
        };
        let old = slot.unpublish();
        let state = memb::start_poll_synchronize_rcu();
        // Under loom the barrier runs the callback batch itself.
        memb::rcu_barrier();
        assert!(memb::poll_state_synchronize_rcu(state));
        // SAFETY: unpublished before the cookie, which has elapsed.
        unsafe { retire_now(old) };
        reader.join().unwrap();
    });
}

/// A `start_poll_synchronize_rcu()` that finds a callback queued queues
/// none of its own, and its cookie still elapses with no caller but the
/// callback worker: the worker takes that callback's batch after the poll,
/// or took it before and then finds the poll's own callback, so some
/// batch's grace period begins after the cookie. The worker's own loop runs
/// on a loom thread, racing the queuing. (With the poll never queuing a
/// callback of its own, loom finds the interleaving where the worker took
/// the batch before the poll and its grace period began before the
/// cookie: the cookie never elapses, and the model exceeds its branch
/// limit.)
#[test]
fn a_started_poll_behind_a_queued_callback_elapses() {
    loom::model(|| {
        configure(true);
        let done = Arc::new(AtomicBool::new(false));
        let worker = {
            let done = Arc::clone(&done);
            // Acquire pairs with the Release store below; nothing is
            // published through it but the stop.
            thread::spawn(move || memb::loom_run_callback_worker_until(|| done.load(Acquire)))
        };
        memb::call_rcu(|| {});
        let state = memb::start_poll_synchronize_rcu();
        while !memb::poll_state_synchronize_rcu(state) {
            thread::yield_now();
        }
        done.store(true, Release);
        // Wakes the worker if it sleeps, so that it sees `done`.
        memb::call_rcu(|| {});
        worker.join().unwrap();
    });
}

/// The callback worker never sleeps with a callback queued: a `call_rcu()`
/// racing the worker's decision to sleep either finds it marked asleep and
/// wakes it, or queues before the worker takes the queue lock to sleep, and
/// the worker then finds the callback there and runs it. The worker's own
/// loop runs on a loom thread until the callback has run. (Models the queue
/// check in `prepare_to_sleep`: without it a worker whose batch came up
/// empty sleeps even though the callback was queued just after, by a
/// `call_rcu()` that found it awake and woke nobody, and loom reports the
/// join of the worker as a deadlock.)
#[test]
fn the_callback_worker_never_sleeps_with_a_callback_queued() {
    rcu_lite::loom_model_with_spurious_wakeups_too(|| {
        configure(true);
        let ran = Arc::new(AtomicBool::new(false));
        let worker = {
            let ran = Arc::clone(&ran);
            // Acquire pairs with the callback's Release store.
            thread::spawn(move || memb::loom_run_callback_worker_until(|| ran.load(Acquire)))
        };
        let signal = Arc::clone(&ran);
        memb::call_rcu(move || signal.store(true, Release));
        worker.join().unwrap();
    });
}

/// A fork that waits for the callback batch finds every callback either run
/// or queued, none taken and not yet run, and the callbacks the worker put
/// back for it run once each, in the order they were queued, before those
/// queued since. The worker runs a batch of two while the model's thread
/// queues a third and a forking thread waits for the batch lock (as
/// `rcu_lite::fork::before_fork` does, counted in `fork_waiting`): the worker
/// may end the batch after its first callback and put the second back at
/// the front of the queue. (Put back at its end, the third runs before the
/// second and the order check fails; not put back, the fork finds the
/// second neither run nor queued.)
#[test]
fn a_fork_finds_each_callback_run_or_queued_and_the_rest_run_in_order() {
    /// The ids of the callbacks run, in order: written by the callbacks on
    /// the worker, read by the fork under the batch lock and by the model's
    /// thread after the join. Loom reports a read not ordered after a write.
    struct RunLog {
        ids: UnsafeCell<Vec<u32>>,
        /// How many have run, for the worker's `done` (Release in the
        /// callbacks, Acquire in `done`).
        count: loom::sync::atomic::AtomicUsize,
    }
    // SAFETY: loom checks every access to `ids`; ordering them is the
    // model's question.
    unsafe impl Sync for RunLog {}

    impl RunLog {
        fn ids(&self) -> Vec<u32> {
            // SAFETY: loom reports an access not ordered after a write.
            self.ids.with(|ids| unsafe { (*ids).clone() })
        }
    }

    fn queue(log: &Arc<RunLog>, id: u32) {
        let log = Arc::clone(log);
        memb::call_rcu(move || {
            // SAFETY: callbacks run one at a time on the worker; loom checks
            // that the fork's and the final reads are ordered after this.
            log.ids.with_mut(|ids| unsafe { (*ids).push(id) });
            // Release pairs with the Acquire load in the worker's `done`.
            log.count.fetch_add(1, Release);
        });
    }

    loom::model(|| {
        configure(true);
        let log = Arc::new(RunLog {
            ids: UnsafeCell::new(Vec::new()),
            count: loom::sync::atomic::AtomicUsize::new(0),
        });
        queue(&log, 0);
        queue(&log, 1);
        let worker = {
            let log = Arc::clone(&log);
            // Acquire pairs with the callbacks' Release increments.
            thread::spawn(move || {
                memb::loom_run_callback_worker_until(|| log.count.load(Acquire) == 3);
            })
        };
        let fork = {
            let log = Arc::clone(&log);
            thread::spawn(move || {
                memb::loom_fork_window(|queued_total, queued_now| {
                    let ran = log.ids();
                    assert_eq!(
                        ran.len() as u64 + queued_now as u64,
                        queued_total,
                        "the fork found a callback neither run nor queued (ran {ran:?}, \
                         {queued_now} queued of {queued_total})"
                    );
                    assert!(
                        ran.iter().copied().eq(0..ran.len() as u32),
                        "callbacks ran out of order before the fork: {ran:?}"
                    );
                });
            })
        };
        queue(&log, 2);
        fork.join().unwrap();
        worker.join().unwrap();
        assert_eq!(log.ids(), [0, 1, 2], "each callback once, in queue order");
    });
}

/// A barrier that finds nothing queued and no batch in flight returns at
/// once, and still after the effects of every callback queued before it:
/// here the other thread's barrier may have run the batch with the callback
/// already. (With the check made on the queue alone, not under the batch
/// lock, the barrier returns while the other thread's batch is taken but not
/// yet run, and loom reports the callback's write racing the read.)
#[test]
fn a_barrier_finding_nothing_queued_follows_the_callbacks_it_covers() {
    /// A word the callback writes and the barriers' callers read.
    struct Written(UnsafeCell<u64>);
    // SAFETY: loom checks every access to the cell; ordering them is the
    // model's question.
    unsafe impl Sync for Written {}

    impl Written {
        fn read(&self) -> u64 {
            // SAFETY: loom reports an access not ordered after the write.
            self.0.with(|value| unsafe { *value })
        }
    }

    loom::model(|| {
        configure(true);
        let written = Arc::new(Written(UnsafeCell::new(0)));
        let writer = Arc::clone(&written);
        memb::call_rcu(move || {
            // SAFETY: the only write; readers wait for it in `rcu_barrier`.
            writer.0.with_mut(|value| unsafe { *value = 1 });
        });
        let other = {
            let written = Arc::clone(&written);
            thread::spawn(move || {
                memb::rcu_barrier();
                assert_eq!(
                    written.read(),
                    1,
                    "a barrier returned before the callback ran"
                );
            })
        };
        memb::rcu_barrier();
        assert_eq!(
            written.read(),
            1,
            "a barrier returned before the callback ran"
        );
        other.join().unwrap();
    });
}

/// A qsbr reader coming back online reaches the new object: a scan credits it
/// on the word it stores there, so its sections from then on must see every
/// update published before that word's grace period. (Models the Acquire
/// load of `gp_word` in `mark_online`: made Relaxed, this model fails from 4
/// preemptions on, so it runs with at least 4.)
///
/// Both ways back online: the end of `while_offline`'s closure, and
/// `OfflineQsbrThread::online`.
#[test]
fn a_qsbr_reader_back_online_reaches_the_new_object() {
    let ways: [fn(&Slot); 2] = [
        |slot| {
            let mut registration = QsbrThread::register();
            registration.while_offline(|| ());
            let guard = registration.read_lock();
            assert_eq!(slot.read(), 1, "reader reached a freed object");
            drop(guard);
            drop(registration);
        },
        |slot| {
            let registration = QsbrThread::register().offline().online();
            let guard = registration.read_lock();
            assert_eq!(slot.read(), 1, "reader reached a freed object");
            drop(guard);
            drop(registration);
        },
    ];
    for reader in ways {
        model_with_preemptions(4, usize::MAX, move || {
            configure(true);
            reader_against_updater(reader, qsbr::synchronize_rcu);
        });
    }
}

/// Three threads call `memb::synchronize_rcu()` at once: two spawned
/// callers and the model's own thread.
fn three_callers() {
    let callers: Vec<_> = (0..2)
        .map(|_| thread::spawn(memb::synchronize_rcu))
        .collect();
    memb::synchronize_rcu();
    for caller in callers {
        caller.join().unwrap();
    }
}

/// Three concurrent callers and no reader: two of them may sleep for the
/// same grace period, and its completion wakes both. (Models the
/// `wake_all` of `announce_completion`: a `wake_one` there leaves a sleeper
/// blocked, which loom reports as a deadlock, at 2 preemptions; at 0 the
/// mutant passes. So it runs at exactly 2: at 3 the search ran for over 15
/// minutes without finishing.)
#[test]
fn three_callers_sleeping_for_one_grace_period_all_return() {
    model_with_preemptions(2, 2, || {
        configure(true);
        three_callers();
    });
}

/// A record given back at thread exit and taken over by a new thread: a scan
/// that reads only the new owner's first store (nesting 0, before it ever
/// enters a section) credits the record, and what the old owner read in its
/// last section must still happen before the free. (Models the Release
/// store of the first word of a recycled record, the `thread_record!` hook
/// of `memb.rs`: made Relaxed, the scan's Acquire load of it synchronizes
/// with nothing.)
#[test]
fn a_recycled_records_first_word_carries_its_previous_owners_section() {
    model_with_preemptions(2, usize::MAX, || {
        configure(true);
        let slot = Slot::new();
        let heir = {
            let slot = Arc::clone(&slot);
            thread::spawn(move || {
                // The old owner reads in a section and exits, giving its
                // record back.
                thread::spawn(move || memb_reader(&slot)).join().unwrap();
                // Registers (no section is open yet when a scan may read the
                // record): takes the old owner's record over.
                drop(memb::read_lock());
            })
        };
        let old = slot.unpublish();
        memb::synchronize_rcu();
        // SAFETY: unpublished, and a grace period has elapsed.
        unsafe { retire_now(old) };
        heir.join().unwrap();
    });
}

/// Three concurrent callers, the driver running the worker's part: a caller
/// that asks for a grace period while the worker is leaving (after it found
/// none needed, before it gave `DRIVER` up) is served. (Models
/// `drive_for_others` taking `DRIVER` back when its `fetch_and` finds
/// `NEED_GP`: a worker that returned there left that caller asleep for good,
/// which loom reports as a deadlock, at 2 preemptions and not at 1, so it
/// runs at exactly 2: at 3 it would not finish, as the model above.)
#[test]
fn a_caller_arriving_while_the_worker_leaves_is_served() {
    model_with_preemptions(2, 2, || {
        configure(true);
        rcu_lite::loom_worker_inline(true);
        three_callers();
    });
}

/// A record given back at thread exit and taken over by a thread that never
/// synchronized with its previous owner (no join, no shared lock): a scan
/// that reads only the new owner's first store credits the record, and what
/// the old owner read in its last section must still happen before the
/// free. Only the claim of the record (`Registry::acquire`, an Acquire CAS
/// of `in_use` against the Release store in `release`) orders the old
/// owner's word stores and section before the new owner's. (Models that
/// claim: made Relaxed, the old owner's word stores may follow the new
/// owner's in the word's modification order, and loom finds the new owner
/// reading one of them back: its unlock panics with "unbalanced unlock", at
/// 2 preemptions. The model above cannot see it: its heir joins the old
/// owner. Capped at 2 like the other three-thread models.)
#[test]
fn a_record_claimed_by_an_unrelated_thread_carries_its_previous_owners_section() {
    model_with_preemptions(2, 2, || {
        configure(true);
        let slot = Slot::new();
        let old_owner = {
            let slot = Arc::clone(&slot);
            thread::spawn(move || memb_reader(&slot))
        };
        // Registers, possibly taking over the record the old owner gave back.
        let heir = thread::spawn(|| drop(memb::read_lock()));
        let old = slot.unpublish();
        memb::synchronize_rcu();
        // SAFETY: unpublished, and a grace period has elapsed.
        unsafe { retire_now(old) };
        old_owner.join().unwrap();
        heir.join().unwrap();
    });
}

/// Two qsbr holdouts flagged across two grace periods: one may report a
/// grace period that is already too old while the driver flags it for the
/// next, and find its flag and clear it late, over a later flag; the other
/// may wake the driver between two of its sleeps. Whatever the order, the
/// driver is woken once each holdout has reported (a lost wake-up leaves it
/// asleep for good, which loom reports as a deadlock). The weak-memory
/// lost wake-up fixed in `flag_holdouts` on 2026-12-05 (the driver's load
/// of a flag that a holdout's swap had already erased, read stale) is beyond
/// this model: it passes with that bug at 2 and at 3 preemptions (10 s and
/// 230 s); it checks the handshake's interleavings, not that outcome.
#[test]
fn qsbr_holdouts_flagged_across_two_grace_periods_wake_the_driver() {
    rcu_lite::loom_model_with_spurious_wakeups_too(|| {
        configure(true);
        let holdout = || {
            thread::spawn(|| {
                let mut registration = QsbrThread::register();
                registration.quiescent_state();
                registration.quiescent_state();
                drop(registration);
            })
        };
        let (first, second) = (holdout(), holdout());
        qsbr::synchronize_rcu();
        qsbr::synchronize_rcu();
        first.join().unwrap();
        second.join().unwrap();
    });
}

/// A thread that registers after a grace period built the driver's roster
/// (`Registry::refresh`) is covered by the next grace period: that grace
/// period's driver reuses the roster unless the registry's count of claims
/// has moved, and the reader's claim may come after the driver's load of
/// that count, when the reader's section must see the unpublish instead.
/// memb and qsbr. (With a roster that is never rebuilt, the model fails:
/// the reader reaches the freed object.)
#[test]
fn a_reader_registered_after_the_roster_was_built_is_covered() {
    // A reader, and the wait of its flavor.
    type Flavor = (fn(&Slot), fn());
    let readers: [Flavor; 2] = [
        (memb_reader, memb::synchronize_rcu),
        (qsbr_reader, qsbr::synchronize_rcu),
    ];
    for (reader, wait) in readers {
        rcu_lite::loom_model_with_spurious_wakeups_too(move || {
            configure(true);
            // A grace period before the reader exists builds the roster.
            wait();
            reader_against_updater(reader, wait);
        });
    }
}
