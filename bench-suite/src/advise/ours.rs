//! This workspace's primitives sharing a payload.

use super::peers::bump;
use super::{Counts, Options, Workload, check_payload, mixed_loop};
use crate::registry::{Implementation, Origin};
use std::sync::atomic::AtomicBool;

/// `qrwlock`.
pub(super) const QRWLOCK: Implementation<dyn Workload, Options> = Implementation {
    name: "qrwlock",
    summary: "qrwlock::RwLock<Vec<u64>>: read lock and sum; write lock and update in place",
    origin: Origin::Workspace,
    make: |o| Ok(Box::new(qrwlock::RwLock::new(vec![0u64; o.payload_words]))),
};

/// `rcu-lite-memb` (the memb flavor, as the report names it: qsbr would
/// need the user's threads to announce quiescent states).
pub(super) const RCU_LITE: Implementation<dyn Workload, Options> = Implementation {
    name: "rcu-lite-memb",
    summary: "rcu_lite::Rcu<Vec<u64>> (memb): read guard and sum; update() copies, publishes, frees after a grace period",
    origin: Origin::Workspace,
    make: |o| {
        // memb's callback worker, which frees the replaced payloads, is
        // started here, on the measuring thread before the run's threads,
        // and lives as long as the process. Left to the first update, it
        // was started by one of the run's threads, when they may have
        // taken every thread the OS allows: rcu-lite panics when call_rcu()
        // cannot start it, and advise ended in that panic instead of the
        // refusal naming the thread that the run's own threads get.
        rcu_lite::memb::call_rcu(|| {});
        rcu_lite::memb::rcu_barrier();
        Ok(Box::new(rcu_lite::Rcu::<Vec<u64>>::new(
            vec![0u64; o.payload_words],
        )))
    },
};

impl Workload for rcu_lite::Rcu<Vec<u64>> {
    fn run(&self, reads_per_write: u32, stop: &AtomicBool) -> Counts {
        mixed_loop(
            reads_per_write,
            stop,
            || {
                let guard = rcu_lite::memb::read_lock();
                check_payload(self.read(&guard))
            },
            || {
                self.update(|old| {
                    let mut fresh = old.clone();
                    bump(&mut fresh);
                    fresh
                })
            },
        )
    }

    /// Waits for every replaced payload's deferred free (memb's callback
    /// worker) to have run.
    fn settle(&self) {
        rcu_lite::memb::rcu_barrier();
    }
}

/// `hazptr`.
pub(super) const HAZPTR: Implementation<dyn Workload, Options> = Implementation {
    name: "hazptr",
    summary: "hazptr::AtomicBox<Vec<u64>>: protect and sum; copy, update, compare_exchange, retire",
    origin: Origin::Workspace,
    make: |o| {
        Ok(Box::new(hazptr::AtomicBox::new(vec![
            0u64;
            o.payload_words
        ])))
    },
};

impl Workload for hazptr::AtomicBox<'static, Vec<u64>> {
    fn run(&self, reads_per_write: u32, stop: &AtomicBool) -> Counts {
        mixed_loop(
            reads_per_write,
            stop,
            || hazptr::scoped(self, |v| check_payload(v.expect("never empty"))),
            || {
                let mut guard = hazptr::Guard::new();
                loop {
                    let current = self.load(&mut guard).expect("never empty");
                    let mut fresh = current.clone();
                    bump(&mut fresh);
                    let current: *const Vec<u64> = current;
                    // The replaced value is retired when `Replaced` drops.
                    if self
                        .compare_exchange(current, Some(Box::new(fresh)))
                        .is_ok()
                    {
                        break;
                    }
                }
            },
        )
    }

    /// Frees the replaced payloads still retired in the global domain (the
    /// exiting threads handed their batches over).
    fn settle(&self) {
        hazptr::reclaim();
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::check_every_update_lands;

    #[test]
    fn every_update_adds_one_to_every_word() {
        let lock = qrwlock::RwLock::new(vec![0u64; 4]);
        check_every_update_lands(&lock, &|| lock.read().clone());
        let rcu = rcu_lite::Rcu::<Vec<u64>>::new(vec![0u64; 4]);
        check_every_update_lands(&rcu, &|| {
            let guard = rcu_lite::memb::read_lock();
            rcu.read(&guard).clone()
        });
        let boxed = hazptr::AtomicBox::new(vec![0u64; 4]);
        check_every_update_lands(&boxed, &|| {
            hazptr::scoped(&boxed, |v| v.expect("never empty").clone())
        });
    }
}
