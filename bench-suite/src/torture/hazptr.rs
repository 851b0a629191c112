//! This workspace's `hazptr` under torture.

use super::object::{self, TortureObject};
use super::{Options, Torture};
use crate::registry::{Implementation, Origin};
use hazptr::Domain;
use std::sync::atomic::AtomicPtr;
use std::sync::atomic::Ordering::{AcqRel, Relaxed};

/// `hazptr`; with `--slow-path` every acquire uses a backup slot.
pub(super) const HAZPTR: Implementation<dyn Torture, Options> = Implementation {
    name: "hazptr",
    summary: "hazptr: readers protect; writers swap, then alternately synchronize+reclaim and retire (--slow-path: backup slots only)",
    origin: Origin::Workspace,
    make: |o| Ok(Box::new(Hazptr::new(o))),
};

struct Hazptr {
    domain: Domain,
    current: AtomicPtr<TortureObject>,
}

impl Hazptr {
    fn new(options: &Options) -> Self {
        Hazptr {
            domain: Domain::builder().force_slow_path(options.slow_path).build(),
            current: AtomicPtr::new(Box::into_raw(TortureObject::new(&options.ledger, 0))),
        }
    }
}

impl Torture for Hazptr {
    fn read(&self) -> bool {
        let mut guard = self.domain.guard();
        let p = guard.protect_ptr(&self.current);
        // SAFETY: never null; protected by `guard`, so not reclaimed before
        // the check (that is what the run verifies).
        unsafe { &*p }.is_live()
    }

    fn replace(&self, fresh: Box<TortureObject>) {
        let old = self.current.swap(Box::into_raw(fresh), AcqRel);
        // SAFETY: `old` came from `Box::into_raw` and is unpublished.
        let seq = unsafe { &*old }.seq();
        if seq % 2 == 0 {
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
