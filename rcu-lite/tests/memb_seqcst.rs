//! The memb flavor with the fences forced to their `fence(SeqCst)` fallback:
//! every read-side section takes the out-of-line slow path (`SLOW_PATH`).
//! One test, since the fence mode is decided once per process.

use membarrier_sim::fence::{self, Mode};
use rcu_lite::{Rcu, memb};
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
    test_support::assert_waits_for_reader(
        "memb::synchronize_rcu",
        Duration::from_millis(30),
        memb::read_lock,
        drop,
        memb::synchronize_rcu,
    );

    // Deferred drops run after their grace period.
    let cell = Rcu::<String>::new("a".into());
    cell.replace("b".into());
    assert_eq!(cell.replace_and_synchronize("c".into()), "b");
    memb::rcu_barrier();
    let guard = memb::read_lock();
    assert_eq!(cell.read(&guard), "c");
}
