//! This workspace's `hazptr` under torture.

use super::object::{self, TortureObject};
use super::{Options, Torture};
use crate::registry::{Implementation, Origin};
use hazptr::Domain;
use std::sync::atomic::Ordering::{AcqRel, Relaxed};
use std::sync::atomic::{AtomicPtr, AtomicU64};

/// `hazptr`; with `--slow-path` every acquire uses a backup slot, and
/// without it one read in [`OVERFLOW_EVERY`] does.
pub(super) const HAZPTR: Implementation<dyn Torture, Options> = Implementation {
    name: "hazptr",
    summary: "hazptr: readers protect (1 read in 8 nested past the thread's slots, in a backup slot); writers swap, then (half each, by a hash) synchronize+reclaim or retire (--slow-path: backup slots only; --deferred-only: retire only, and no nesting)",
    origin: Origin::Workspace,
    make: |o| Ok(Box::new(Hazptr::new(o))),
};

struct Hazptr {
    /// Every replacement retires (see [`Options::deferred_only`]).
    deferred_only: bool,
    domain: Domain,
    current: AtomicPtr<TortureObject>,
    /// Replacements so far, over all writers; a hash of the count picks the
    /// path of each. A strict alternation (by call or by the object's
    /// sequence number) would tie the path that reclaims an object to the
    /// path that published it: an object published by a synchronizing
    /// replacement stays published longest and would always be retired, so a
    /// reader that stalls (and so holds a long-published object) would never
    /// make a writer's synchronize wait.
    replacements: AtomicU64,
}

impl Hazptr {
    fn new(options: &Options) -> Self {
        Hazptr {
            domain: Domain::builder().force_slow_path(options.slow_path).build(),
            current: AtomicPtr::new(Box::into_raw(TortureObject::new(&options.ledger, 0))),
            replacements: AtomicU64::new(0),
            deferred_only: options.deferred_only,
        }
    }
}

/// One read in this many, per thread, protects from a backup slot: it first
/// reserves every slot of the thread's block, as a reader nested that deep
/// would. Without it a run never reaches the overflow path unless
/// `--slow-path` forces it, and a scan that skipped backup slots went
/// unnoticed (0 errors in 2 s; a helper's mutation run of 2026-12-02).
const OVERFLOW_EVERY: u32 = 8;

std::thread_local! {
    /// This thread's reads in this process, for [`OVERFLOW_EVERY`].
    static READS: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

impl Hazptr {
    /// Guards that hold every slot of the thread's block when this read is
    /// one to nest past them, so that the reader's own guard, taken next,
    /// gets a backup slot; none otherwise. Dropped after the read's guard.
    ///
    /// None in a deferred-only run (the report's bulk-freeing rates), whose
    /// readers do what every contender's do there, one protection per
    /// read: until 2026-12-06 hazptr's also took seven guards and a backup
    /// slot in one read of 8, a cost no peer's readers paid (measurement
    /// audit).
    fn nesting(&self) -> Vec<hazptr::Guard<'_>> {
        if self.deferred_only {
            return Vec::new();
        }
        let n = READS.with(|reads| {
            let n = reads.get();
            reads.set(n.wrapping_add(1));
            n
        });
        if n % OVERFLOW_EVERY == OVERFLOW_EVERY - 1 {
            (0..hazptr::usable_slots_per_thread())
                .map(|_| self.domain.guard())
                .collect()
        } else {
            Vec::new()
        }
    }
}

impl Torture for Hazptr {
    fn read(&self) -> bool {
        let _outer = self.nesting();
        let mut guard = self.domain.guard();
        let p = guard.protect_ptr(&self.current);
        // SAFETY: never null; protected by `guard`, so not reclaimed before
        // the check (that is what the run verifies).
        unsafe { &*p }.is_live()
    }

    fn read_with(&self, inside: &mut dyn FnMut(&TortureObject)) {
        let _outer = self.nesting();
        let mut guard = self.domain.guard();
        let p = guard.protect_ptr(&self.current);
        // SAFETY: as in `read`; the guard lives until `inside` returns or
        // unwinds.
        inside(unsafe { &*p });
    }

    fn replace(&self, fresh: Box<TortureObject>) {
        let old = self.current.swap(Box::into_raw(fresh), AcqRel);
        // The top bit of a multiplicative hash of the count: half of the
        // replacements, in no pattern a publication lasts. Not counted in a
        // deferred-only run, which retires every one: no peer's writers
        // share a counter there.
        if !self.deferred_only
            && self
                .replacements
                .fetch_add(1, Relaxed)
                .wrapping_mul(0x9e37_79b9_7f4a_7c15)
                >> 63
                == 0
        {
            self.domain.synchronize(old);
            // SAFETY: unpublished and synchronized: no reader holds it.
            unsafe { object::reclaim(old) };
        } else {
            // SAFETY: unpublished, retired once; `reclaim` is the torture
            // deleter and may run on any thread.
            unsafe { self.domain.retire(old, object::reclaim) };
        }
    }
}

impl Drop for Hazptr {
    fn drop(&mut self) {
        // SAFETY: the last published object, owned by `self`; no reader runs.
        unsafe { object::reclaim(self.current.load(Relaxed)) };
        // Dropping `domain` (next) reclaims every retired object.
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether this build forces every domain's slow path: hazptr's
    /// `force-slow-path` feature, which `cargo test --all-features` turns on
    /// for bench-suite too.
    fn built_with_a_forced_slow_path() -> bool {
        hazptr::Domain::new().forces_slow_path()
    }

    /// `--slow-path` reaches the domain the readers protect in.
    #[test]
    fn slow_path_forces_the_domains_slow_path() {
        for slow_path in [false, true] {
            let hazptr = Hazptr::new(&Options {
                slow_path,
                ..Options::default()
            });
            let forced = slow_path || built_with_a_forced_slow_path();
            assert_eq!(hazptr.domain.forces_slow_path(), forced);
            let mut guard = hazptr.domain.guard();
            // The slot taken is what is checked, not the pointer read.
            let _ = guard.protect_ptr(&hazptr.current);
            assert_eq!(guard.is_backup(), forced, "slow_path: {slow_path}");
        }
    }

    /// Which way a replacement reclaims (synchronize then reclaim, or
    /// retire) is not tied to the way the one before it went, which
    /// published the object it unpublishes (see [`Hazptr::replacements`]):
    /// an object published by a synchronizing replacement, which stays
    /// published longest, is reclaimed either way. A synchronize shows as
    /// the old object reclaimed before the call returns; a retire waits for
    /// the domain's threshold, far off here.
    #[test]
    fn objects_published_by_a_synchronize_are_reclaimed_either_way() {
        let ledger = object::Ledger::new();
        let hazptr = Hazptr::new(&Options {
            ledger: std::sync::Arc::clone(&ledger),
            ..Options::default()
        });
        let mut synchronized = Vec::new();
        for seq in 1..=16 {
            let before = ledger.reclaimed();
            hazptr.replace(TortureObject::new(&ledger, seq));
            synchronized.push(ledger.reclaimed() > before);
        }
        // Replacement n + 1 unpublishes the object replacement n published.
        let after_a_synchronize: std::collections::HashSet<bool> = synchronized
            .windows(2)
            .filter(|pair| pair[0])
            .map(|pair| pair[1])
            .collect();
        assert_eq!(
            after_a_synchronize.len(),
            2,
            "synchronized, replacement by replacement: {synchronized:?}"
        );
    }

    /// Without `--slow-path`, one read in [`OVERFLOW_EVERY`] nests past the
    /// thread's slots, so its guard takes a backup slot: a domain that only
    /// these reads used has one (and none before).
    #[test]
    fn one_read_in_eight_protects_from_a_backup_slot() {
        type Read = fn(&Hazptr);
        let reads: [(&str, Read); 2] = [
            ("read", |h| assert!(h.read())),
            ("read_with", |h| h.read_with(&mut |o| assert!(o.is_live()))),
        ];
        for (name, read) in reads {
            let hazptr = Hazptr::new(&Options::default());
            assert_eq!(hazptr.domain.backup_slots(), 0);
            if built_with_a_forced_slow_path() {
                // Every read protects from a backup slot.
                read(&hazptr);
                assert!(
                    hazptr.domain.backup_slots() > 0,
                    "a forced {name} took no backup slot"
                );
                continue;
            }
            for _ in 1..OVERFLOW_EVERY {
                read(&hazptr);
            }
            // The other reads take the thread's own slots: the fast path
            // stays the common one.
            assert_eq!(
                hazptr.domain.backup_slots(),
                0,
                "one of the first {} {name}s protected from a backup slot",
                OVERFLOW_EVERY - 1
            );
            read(&hazptr);
            assert!(
                hazptr.domain.backup_slots() > 0,
                "{OVERFLOW_EVERY} {name}s never protected from a backup slot"
            );
        }
    }

    /// A deferred-only run (the report's bulk-freeing rates) does per read
    /// and per replacement what the peers do there: one protection from the
    /// thread's own slots, no nesting, and no shared count of replacements.
    #[test]
    fn deferred_only_reads_and_replaces_do_nothing_extra() {
        if built_with_a_forced_slow_path() {
            return;
        }
        let ledger = object::Ledger::new();
        let hazptr = Hazptr::new(&Options {
            ledger: std::sync::Arc::clone(&ledger),
            deferred_only: true,
            ..Options::default()
        });
        for seq in 1..=u64::from(4 * OVERFLOW_EVERY) {
            assert!(hazptr.read());
            hazptr.read_with(&mut |o| assert!(o.is_live()));
            hazptr.replace(TortureObject::new(&ledger, seq));
        }
        assert_eq!(
            hazptr.domain.backup_slots(),
            0,
            "a deferred-only read nested"
        );
        assert_eq!(hazptr.replacements.load(Relaxed), 0);
    }
}
