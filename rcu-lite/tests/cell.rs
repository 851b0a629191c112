//! The safe `Rcu<T>` cell.

use rcu_lite::{Memb, Rcu, memb};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::thread;
use std::time::Duration;
use test_support::DropCounted as Counted;

/// How long a grace period or barrier may take before the test counts it as
/// never ending (a lost wake-up): generous, for a loaded 2-CPU machine.
const LIMIT: Duration = Duration::from_secs(60);

#[test]
fn replace_defers_the_drop_until_readers_have_left() {
    let drops = Arc::new(AtomicUsize::new(0));
    let counted = |value| Counted::new(value, &drops);
    let cell: Rcu<Counted, Memb> = Rcu::new(counted(1));
    let guard = memb::read_lock();
    let seen = cell.read(&guard);
    cell.replace(counted(2));
    thread::sleep(Duration::from_millis(20));
    // Our section began before the replace: the old value must still be alive.
    assert_eq!(seen.value, 1);
    assert_eq!(drops.load(SeqCst), 0);
    assert_eq!(cell.read(&guard).value, 2);
    drop(guard);
    test_support::within_a_deadline("memb::rcu_barrier", LIMIT, memb::rcu_barrier);
    assert_eq!(drops.load(SeqCst), 1);
    drop(cell);
    assert_eq!(drops.load(SeqCst), 2);
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
