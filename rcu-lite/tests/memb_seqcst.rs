//! The memb flavor with the fences forced to their `fence(SeqCst)` fallback:
//! every read-side section takes the out-of-line slow path (`SLOW_PATH`).
//! One test, since the fence mode is decided once per process.

use membarrier_sim::fence::{self, Mode};
use rcu_lite::{Rcu, memb};
use std::sync::Arc;
use std::time::Duration;
use test_support::within_a_deadline;

/// How long a grace period or barrier may take before the test counts it as
/// never ending (a lost wake-up): generous, for a loaded 2-CPU machine.
const LIMIT: Duration = Duration::from_secs(60);

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
        || {
            within_a_deadline(
                "memb::synchronize_rcu behind a reader (SeqCst fences)",
                LIMIT,
                memb::synchronize_rcu,
            )
        },
    );

    // Deferred drops run after their grace period.
    let cell = Arc::new(Rcu::<String>::new("a".into()));
    cell.replace("b".into());
    within_a_deadline(
        "Rcu::replace_and_synchronize and memb::rcu_barrier (SeqCst fences)",
        LIMIT,
        {
            let cell = Arc::clone(&cell);
            move || {
                assert_eq!(cell.replace_and_synchronize("c".into()), "b");
                memb::rcu_barrier();
            }
        },
    );
    let guard = memb::read_lock();
    assert_eq!(cell.read(&guard), "c");
}
