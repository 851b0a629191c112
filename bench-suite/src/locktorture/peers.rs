//! The peers' reader-writer locks.

use super::TortureLock;
use crate::registry::{Implementation, Origin};
use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{PoisonError, RwLock};

/// `parking_lot`.
pub(super) const PARKING_LOT: Implementation<dyn TortureLock> = Implementation {
    name: "parking_lot",
    summary: "parking_lot::RwLock (task-fair, eventual fairness, parks waiters)",
    origin: Origin::Peer,
    make: |_| Ok(Box::new(parking_lot::RwLock::new(()))),
};

/// `std`.
pub(super) const STD: Implementation<dyn TortureLock> = Implementation {
    name: "std",
    summary: "std::sync::RwLock (futex-based, writer-preferring; a panic while write-locked poisons it, recovered with into_inner)",
    origin: Origin::Peer,
    make: |_| Ok(Box::new(StdRwLock::default())),
};

/// `spin`.
pub(super) const SPIN: Implementation<dyn TortureLock> = Implementation {
    name: "spin",
    summary: "spin::RwLock (reader-preferring spinning lock, like the pre-qrwlock arm64 rwlock)",
    origin: Origin::Peer,
    make: |_| Ok(Box::new(spin::RwLock::new(()))),
};

/// std's lock, which a write section that panics poisons: the next
/// acquisition recovers the guard with `into_inner`, clears the poison (the
/// `()` it protects has no invariant a panic could break) and counts it.
#[derive(Default)]
struct StdRwLock {
    lock: RwLock<()>,
    recovered: AtomicU64,
}

impl StdRwLock {
    fn recover<G>(&self, poisoned: PoisonError<G>) -> G {
        self.lock.clear_poison();
        self.recovered.fetch_add(1, Relaxed);
        poisoned.into_inner()
    }
}

impl TortureLock for StdRwLock {
    fn write_section(&self, section: &mut dyn FnMut()) {
        let _guard = self.lock.write().unwrap_or_else(|p| self.recover(p));
        section();
    }
    fn read_section(&self, section: &mut dyn FnMut()) {
        let _guard = self.lock.read().unwrap_or_else(|p| self.recover(p));
        section();
    }
    fn poison_recoveries(&self) -> u64 {
        self.recovered.load(Relaxed)
    }
}

impl TortureLock for spin::RwLock<()> {
    fn write_section(&self, section: &mut dyn FnMut()) {
        let _guard = self.write();
        section();
    }
    fn read_section(&self, section: &mut dyn FnMut()) {
        let _guard = self.read();
        section();
    }
}

#[cfg(test)]
mod tests {
    use super::super::implementations;
    use super::*;
    use std::sync::{Arc, Barrier};
    use std::time::Duration;

    /// Every contender's read side is shared: two readers are inside at
    /// once, each waiting inside for the other, which a read side that took
    /// the lock exclusively would never let them be (the exclusion check
    /// would pass it). `peers_exclude_and_count` checks the write side.
    #[test]
    fn two_readers_are_inside_every_lock_at_once() {
        for imp in implementations() {
            let what = format!("two readers inside {} at once", imp.name);
            test_support::within_a_deadline(&what, Duration::from_secs(20), || {
                let lock: Arc<dyn TortureLock> = Arc::from(imp.build(&()));
                let both_inside = Arc::new(Barrier::new(2));
                let readers: Vec<_> = (0..2)
                    .map(|_| {
                        let (lock, both_inside) = (Arc::clone(&lock), Arc::clone(&both_inside));
                        std::thread::spawn(move || {
                            lock.read_section(&mut || {
                                both_inside.wait();
                            })
                        })
                    })
                    .collect();
                readers.into_iter().for_each(|r| r.join().unwrap());
            });
        }
    }
}
