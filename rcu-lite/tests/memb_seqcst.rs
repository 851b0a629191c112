//! The memb flavor with the fences forced to their `fence(SeqCst)` fallback:
//! every read-side section takes the out-of-line slow path (`SLOW_PATH`).
//! One test, since the fence mode is decided once per process.

use membarrier_sim::fence::{self, Mode};
use rcu_lite::{Rcu, memb};
use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::sync::{Arc, Barrier};
use std::thread;
use std::time::Duration;

#[test]
fn memb_works_with_seqcst_fallback_fences() {
    assert_eq!(
        fence::force(Mode::SeqCst),
        Ok(()),
        "no fence may run before this"
    );

    // Nesting on the slow path.
    let outer = memb::read_lock();
    let inner = memb::read_lock();
    drop(inner);
    assert!(memb::read_ongoing());
    drop(outer);
    assert!(!memb::read_ongoing());

    // A grace period waits for a section that began before it.
    let entered = Arc::new(Barrier::new(2));
    let left = Arc::new(AtomicBool::new(false));
    let reader = {
        let (entered, left) = (Arc::clone(&entered), Arc::clone(&left));
        thread::spawn(move || {
            let guard = memb::read_lock();
            entered.wait();
            thread::sleep(Duration::from_millis(30));
            left.store(true, SeqCst);
            drop(guard);
        })
    };
    entered.wait();
    memb::synchronize_rcu();
    assert!(left.load(SeqCst));
    reader.join().unwrap();

    // Deferred drops run after their grace period.
    let cell = Rcu::<String>::new("a".into());
    cell.replace("b".into());
    assert_eq!(cell.replace_and_synchronize("c".into()), "b");
    memb::rcu_barrier();
    let guard = memb::read_lock();
    assert_eq!(cell.read(&guard), "c");
}
