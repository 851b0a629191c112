//! The safe `Rcu<T>` cell.

use rcu_lite::qsbr::QsbrThread;
use rcu_lite::{Flavor, Memb, Qsbr, Rcu, memb};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::thread;
use std::time::Duration;
use test_support::DropCounted as Counted;

/// How long a grace period or barrier may take before the test counts it as
/// never ending (a lost wake-up): generous, for a loaded 2-CPU machine.
const LIMIT: Duration = Duration::from_secs(60);

/// Publishes `new` in `cell` through one of the calls that defer the old
/// value's drop (`replace`, `update`).
type Change<F> = fn(&Rcu<Counted, F>, Counted);

fn replace<F: Flavor>(cell: &Rcu<Counted, F>, new: Counted) {
    cell.replace(new);
}

fn update<F: Flavor>(cell: &Rcu<Counted, F>, new: Counted) {
    cell.update(move |old| {
        assert_eq!(old.value, 1, "the update function saw the current value");
        new
    });
}

/// Reads `cell` inside the memb section `guard` holds: the guard keeps the
/// thread a reader.
fn memb_read(guard: &memb::Guard, cell: &Rcu<Counted, Memb>) -> *const Counted {
    cell.read(guard)
}

/// Reads `cell` inside a section of `registration`, which ends at once: what
/// it read stays protected for as long as the registration stays online
/// without a quiescent state (until it is dropped, here).
fn qsbr_read(registration: &QsbrThread, cell: &Rcu<Counted, Qsbr>) -> *const Counted {
    cell.read(&registration.read_lock())
}

/// `change` of an `Rcu<_, F>` cell leaves the old value alive while this
/// thread, a reader (for as long as it holds what `enter` returns) that
/// reached it before the change, is still one; a reader's read after the change sees the new value;
/// the old value is dropped once the reader has left, by the time
/// `rcu_barrier()` returns, and only once. `read` reads the cell as the
/// reader. `what` names the flavor and the change in the messages. The drop
/// count is checked before the old value is touched again, so a change that
/// drops it at once fails here without a read of freed memory.
fn assert_the_old_value_outlives_its_reader<F: Flavor, R>(
    what: &str,
    change: Change<F>,
    enter: fn() -> R,
    read: fn(&R, &Rcu<Counted, F>) -> *const Counted,
) {
    let drops = Arc::new(AtomicUsize::new(0));
    let counted = |value| Counted::new(value, &drops);
    let cell: Rcu<Counted, F> = Rcu::new(counted(1));
    let reader = enter();
    let seen = read(&reader, &cell);
    change(&cell, counted(2));
    // Time for the callback thread to run a grace period that wrongly did
    // not wait for this reader, and the drop after it.
    thread::sleep(Duration::from_millis(20));
    assert_eq!(
        drops.load(SeqCst),
        0,
        "{what}: the old value was dropped while a reader that reached it before the change \
         was still one"
    );
    // SAFETY: not dropped (checked just above), and it cannot be while
    // `reader` keeps this thread a reader.
    assert_eq!(unsafe { &*seen }.value, 1);
    // SAFETY: read just now by the reader that `reader` keeps this thread,
    // which it still is.
    let now = unsafe { &*read(&reader, &cell) };
    assert_eq!(
        now.value, 2,
        "{what}: a read after the change did not see the new value"
    );
    drop(reader);
    test_support::within_a_deadline(
        &format!("{what}, then {}::rcu_barrier", F::NAME),
        LIMIT,
        F::rcu_barrier,
    );
    assert_eq!(
        drops.load(SeqCst),
        1,
        "{what}: the old value was not dropped by the time rcu_barrier returned"
    );
    drop(cell);
    assert_eq!(
        drops.load(SeqCst),
        2,
        "{what}: a value dropped twice or never"
    );
}

/// `replace` defers the old value's drop past a memb reader that reached it
/// before the call. Fails where `replace` drops the old value at once.
#[test]
fn replace_defers_the_drop_until_readers_have_left() {
    assert_the_old_value_outlives_its_reader::<Memb, _>(
        "memb, Rcu::replace",
        replace,
        memb::read_lock,
        memb_read,
    );
}

/// `update` defers the old value's drop past a memb reader that reached it
/// before the call. Fails where `update` drops the old value at once instead
/// of through `call_rcu`.
#[test]
fn update_defers_the_drop_until_readers_have_left() {
    assert_the_old_value_outlives_its_reader::<Memb, _>(
        "memb, Rcu::update",
        update,
        memb::read_lock,
        memb_read,
    );
}

/// A qsbr cell's `replace` and `update` defer the old value's drop past an
/// online registration that read it, after its read-side section has ended
/// and until it goes offline. Fails where either drops the old value at
/// once (the `update` mutant: `update` dropping it instead of deferring).
#[test]
fn qsbr_replace_and_update_defer_the_drop_until_registrations_go_offline() {
    assert_the_old_value_outlives_its_reader::<Qsbr, _>(
        "qsbr, Rcu::replace",
        replace,
        QsbrThread::register,
        qsbr_read,
    );
    assert_the_old_value_outlives_its_reader::<Qsbr, _>(
        "qsbr, Rcu::update",
        update,
        QsbrThread::register,
        qsbr_read,
    );
}

/// Concurrent updates are serialized: each update function sees the value
/// the previous update stored. The threads start together and yield inside
/// the update function, so that unserialized updates would overlap (and lose
/// increments) on any machine.
#[test]
fn update_sees_every_previous_update() {
    let cell = Arc::new(Rcu::<u64>::new(0));
    let start = Arc::new(std::sync::Barrier::new(4));
    let threads: Vec<_> = (0..4)
        .map(|_| {
            let cell = Arc::clone(&cell);
            let start = Arc::clone(&start);
            thread::spawn(move || {
                start.wait();
                for _ in 0..500 {
                    cell.update(|v| {
                        thread::yield_now();
                        v + 1
                    });
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let guard = memb::read_lock();
    assert_eq!(*cell.read(&guard), 2000);
}

#[test]
fn replace_and_synchronize_hands_back_the_old_value() {
    let cell = Rcu::<String>::new("a".into());
    let (back, cell_back) = std::sync::mpsc::channel();
    test_support::within_a_deadline("Rcu::replace_and_synchronize", LIMIT, move || {
        assert_eq!(cell.replace_and_synchronize("b".into()), "a");
        back.send(cell).unwrap();
    });
    let mut cell = cell_back.recv().unwrap();
    cell.get_mut().push('c');
    assert_eq!(cell.into_inner(), "bc");
}

#[test]
fn replace_and_synchronize_waits_for_a_reader_that_began_before_it() {
    let cell = Arc::new(Rcu::<String>::new("old".into()));
    let (back, old_back) = std::sync::mpsc::channel();
    test_support::assert_waits_for_reader(
        "Rcu::replace_and_synchronize",
        Duration::from_millis(50),
        memb::read_lock,
        drop,
        || {
            let cell = Arc::clone(&cell);
            test_support::within_a_deadline(
                "Rcu::replace_and_synchronize behind a reader",
                LIMIT,
                move || {
                    back.send(cell.replace_and_synchronize("new".into()))
                        .unwrap()
                },
            );
        },
    );
    assert_eq!(old_back.recv().unwrap(), "old");
}

/// A cell's `Debug` output names its flavor and, since reading the value
/// needs a read-side section, not the value.
#[test]
fn a_cells_debug_output_names_its_flavor() {
    assert_eq!(
        format!("{:?}", Rcu::<u64, Memb>::new(7)),
        r#"Rcu { flavor: "memb", .. }"#
    );
    assert_eq!(
        format!("{:?}", Rcu::<u64, rcu_lite::Qsbr>::new(7)),
        r#"Rcu { flavor: "qsbr", .. }"#
    );
}

/// `Rcu::default()` publishes the value's default, as `Rcu::new` would.
#[test]
fn a_default_cell_holds_the_default_value() {
    let cell: Rcu<Vec<u32>> = Rcu::default();
    assert!(cell.read(&memb::read_lock()).is_empty());
    let cell: Rcu<u64, Qsbr> = Rcu::default();
    let registration = QsbrThread::register();
    assert_eq!(*cell.read(&registration.read_lock()), 0);
}

/// Two writers each publish an increasing series while readers read the
/// cell several times per section: every reader sees each writer's series
/// in order, within a section and from one section to the next (a read
/// never returns a value published before one the thread already read).
/// arc-swap's `load_parallel` and `multi_writers` properties.
#[test]
fn readers_see_each_writers_values_in_order() {
    const WRITES: u32 = if cfg!(miri) { 40 } else { 20_000 };
    const READS_PER_SECTION: usize = 16;
    let cell = Rcu::<(usize, u32)>::new((0, 0));
    let writers_done = AtomicUsize::new(0);
    let start = std::sync::Barrier::new(4);
    thread::scope(|s| {
        for writer in 0..2 {
            let (cell, writers_done, start) = (&cell, &writers_done, &start);
            s.spawn(move || {
                start.wait();
                for i in 1..=WRITES {
                    cell.replace((writer, i));
                }
                // SeqCst, as the readers' load: only a count to stop on; what the
                // readers check is ordered by the cell's own Release/Acquire.
                writers_done.fetch_add(1, SeqCst);
            });
        }
        for _ in 0..2 {
            s.spawn(|| {
                let mut last = [0u32; 2];
                start.wait();
                loop {
                    // SeqCst: pairs with the writers' increments; read before
                    // the last round, so that round follows every write.
                    let finished = writers_done.load(SeqCst) == 2;
                    let guard = memb::read_lock();
                    for _ in 0..READS_PER_SECTION {
                        let &(writer, i) = cell.read(&guard);
                        assert!(
                            i >= last[writer],
                            "writer {writer}'s value {i} read after its value {}",
                            last[writer]
                        );
                        last[writer] = i;
                    }
                    drop(guard);
                    if finished {
                        break;
                    }
                }
            });
        }
    });
    memb::rcu_barrier();
}

/// An update function that panics leaves the cell as it was, and usable:
/// the value unchanged, and later updates, on the same thread and another,
/// apply (the unwind releases the update lock and the mark that refuses an
/// update inside an update). arc-swap's `rcu_panic` property.
#[test]
fn a_panicking_update_function_leaves_the_cell_usable() {
    let cell = Rcu::<u64>::new(1);
    let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        cell.update(|_| -> u64 { panic!("the update function panics") });
    }));
    assert!(panicked.is_err(), "the panic went through update()");
    assert_eq!(*cell.read(&memb::read_lock()), 1, "the value is unchanged");
    cell.update(|old| old + 1);
    assert_eq!(cell.replace_and_synchronize(3), 2);
    thread::scope(|s| {
        s.spawn(|| cell.update(|old| old + 1));
    });
    assert_eq!(*cell.read(&memb::read_lock()), 4);
    memb::rcu_barrier();
}

/// A value whose drop panics when `panics` is set, counting its drops.
struct PanicsInDrop {
    panics: bool,
    drops: Arc<AtomicUsize>,
}

impl Drop for PanicsInDrop {
    fn drop(&mut self) {
        self.drops.fetch_add(1, SeqCst);
        if self.panics {
            panic!("the value's drop panics");
        }
    }
}

/// A `Retired` dropped unclaimed after its grace period drops its value on
/// the calling thread, as `Rcu::replace`'s callback would: a panic of that
/// drop is reported, not passed on. It was passed on until 2026-12-07, out
/// of a plain drop, and during an unwind (a `Retired` dropped by a panic)
/// the second panic aborted the process.
#[test]
fn a_retired_value_whose_drop_panics_is_reported_not_passed_on() {
    let drops = Arc::new(AtomicUsize::new(0));
    let value = |panics| PanicsInDrop {
        panics,
        drops: Arc::clone(&drops),
    };
    let cell = Rcu::<PanicsInDrop>::new(value(true));

    let retired = cell.replace_polled(value(true));
    memb::synchronize_rcu();
    assert!(
        retired.is_ready(),
        "a full grace period began after the unpublish"
    );
    drop(retired);
    assert_eq!(drops.load(SeqCst), 1, "the value was dropped once, here");

    let retired = cell.replace_polled(value(false));
    memb::synchronize_rcu();
    assert!(retired.is_ready());
    let unwound = std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || {
        let _retired = retired;
        panic!("the first panic");
    }));
    let payload = unwound.expect_err("the first panic went through");
    assert_eq!(payload.downcast_ref::<&str>(), Some(&"the first panic"));
    assert_eq!(drops.load(SeqCst), 2, "the unwind dropped the value once");

    drop(cell);
    assert_eq!(drops.load(SeqCst), 3);
}
