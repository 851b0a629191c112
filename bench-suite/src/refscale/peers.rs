//! The peers' read sides: the crates Rust users reach for today.
//!
//! Every section reads one `u64` behind the primitive and passes it through
//! `black_box`, so each contender pays its full enter + load + exit.

use super::{ReadSide, time_sections};
use crate::registry::{Implementation, Origin};
use std::hint::black_box;
use std::sync::atomic::Ordering::{Acquire, Relaxed};
use std::time::Duration;

/// `crossbeam-epoch`.
pub(super) const CROSSBEAM_EPOCH: Implementation<dyn ReadSide> = Implementation {
    name: "crossbeam-epoch",
    summary: "crossbeam_epoch LocalHandle::pin (a handle held by the reader) + Atomic::load + unpin",
    origin: Origin::Peer,
    make: |_| Ok(Box::new(CrossbeamEpoch::new())),
};

/// `haphazard`.
pub(super) const HAPHAZARD: Implementation<dyn ReadSide> = Implementation {
    name: "haphazard",
    summary: "haphazard AtomicPtr::safe_load + reset_protection (one HazardPointer per thread)",
    origin: Origin::Peer,
    make: |_| Ok(Box::new(Haphazard::new())),
};

/// `seize`.
pub(super) const SEIZE: Implementation<dyn ReadSide> = Implementation {
    name: "seize",
    summary: "seize Collector::enter + Guard::protect + drop",
    origin: Origin::Peer,
    make: |_| Ok(Box::new(Seize::new())),
};

/// `arc-swap`.
pub(super) const ARC_SWAP: Implementation<dyn ReadSide> = Implementation {
    name: "arc-swap",
    summary: "arc_swap::ArcSwap::load (debt-list fast path) + drop",
    origin: Origin::Peer,
    make: |_| Ok(Box::new(arc_swap::ArcSwap::from_pointee(42u64))),
};

/// `seqlock`.
pub(super) const SEQLOCK: Implementation<dyn ReadSide> = Implementation {
    name: "seqlock",
    summary: "seqlock::SeqLock<u64>::read (sequence check + copy)",
    origin: Origin::Peer,
    make: |_| Ok(Box::new(seqlock::SeqLock::new(42u64))),
};

/// `parking_lot-read`.
pub(super) const PARKING_LOT_READ: Implementation<dyn ReadSide> = Implementation {
    name: "parking_lot-read",
    summary: "parking_lot::RwLock::read + drop",
    origin: Origin::Peer,
    make: |_| Ok(Box::new(parking_lot::RwLock::new(42u64))),
};

/// `std-read`.
pub(super) const STD_READ: Implementation<dyn ReadSide> = Implementation {
    name: "std-read",
    summary: "std::sync::RwLock::read + drop",
    origin: Origin::Peer,
    make: |_| Ok(Box::new(std::sync::RwLock::new(42u64))),
};

struct CrossbeamEpoch {
    value: crossbeam_epoch::Atomic<u64>,
}

impl CrossbeamEpoch {
    fn new() -> Self {
        CrossbeamEpoch {
            value: crossbeam_epoch::Atomic::new(42),
        }
    }
}

impl ReadSide for CrossbeamEpoch {
    fn read_sections(&self, iterations: u64) -> Duration {
        // A handle held by the reader, as haphazard's reader holds its
        // hazard pointer: `handle.pin()` is what `crossbeam_epoch::pin()`
        // costs once inlined, without its thread-local lookup. Whether the
        // compiler inlines `pin()`'s lookup into this loop changed with
        // unrelated code (2.2 ns inlined, 3.4-3.7 out of line, on the same
        // guest): the handle keeps the peer at its best in every build.
        let handle = crossbeam_epoch::default_collector().register();
        time_sections(iterations, || {
            let guard = handle.pin();
            // Acquire pairs with the Release of the publication (`Atomic::new`).
            let shared = self.value.load(Acquire, &guard);
            // SAFETY: the pointer was allocated in `new` and is only freed in
            // `drop`, which cannot run while `&self` is borrowed; `guard` pins.
            black_box(*unsafe { shared.deref() });
        })
    }
}

impl Drop for CrossbeamEpoch {
    fn drop(&mut self) {
        // SAFETY: `&mut self` means no reader holds a guard-protected reference.
        let owned = unsafe {
            std::mem::replace(&mut self.value, crossbeam_epoch::Atomic::null()).into_owned()
        };
        drop(owned);
    }
}

struct Haphazard {
    /// `Some` until drop, which takes it to free the pointee.
    value: Option<haphazard::AtomicPtr<u64>>,
}

impl Haphazard {
    fn new() -> Self {
        Haphazard {
            value: Some(haphazard::AtomicPtr::from(Box::new(42u64))),
        }
    }
}

impl ReadSide for Haphazard {
    fn read_sections(&self, iterations: u64) -> Duration {
        let value = self.value.as_ref().expect("present until drop");
        // One hazard pointer per reader thread, allocated before timing; each
        // section protects and releases, as a reader of a linked structure would.
        let mut hp = haphazard::HazardPointer::new();
        time_sections(iterations, || {
            black_box(value.safe_load(&mut hp).copied());
            hp.reset_protection();
        })
    }
}

impl Drop for Haphazard {
    fn drop(&mut self) {
        if let Some(value) = self.value.take() {
            // SAFETY: the pointer came from `Box::new` in `new` and was never
            // retired; `&mut self` means no reader protects it any more.
            drop(unsafe { Box::from_raw(value.into_inner()) });
        }
    }
}

struct Seize {
    collector: seize::Collector,
    value: std::sync::atomic::AtomicPtr<u64>,
}

impl Seize {
    fn new() -> Self {
        Seize {
            collector: seize::Collector::new(),
            value: std::sync::atomic::AtomicPtr::new(Box::into_raw(Box::new(42u64))),
        }
    }
}

impl ReadSide for Seize {
    fn read_sections(&self, iterations: u64) -> Duration {
        use seize::Guard;
        time_sections(iterations, || {
            let guard = self.collector.enter();
            // Acquire pairs with the Release of the publication (`AtomicPtr::new`).
            let ptr = guard.protect(&self.value, Acquire);
            // SAFETY: the pointer is valid from `new` until `drop`, which cannot
            // run while `&self` is borrowed.
            black_box(unsafe { *ptr });
        })
    }
}

impl Drop for Seize {
    fn drop(&mut self) {
        // SAFETY: allocated by `Box::new` in `new`, never retired; `&mut self`
        // excludes readers.
        drop(unsafe { Box::from_raw(self.value.load(Relaxed)) });
    }
}

impl ReadSide for arc_swap::ArcSwap<u64> {
    fn read_sections(&self, iterations: u64) -> Duration {
        time_sections(iterations, || {
            black_box(**self.load());
        })
    }
}

impl ReadSide for seqlock::SeqLock<u64> {
    fn read_sections(&self, iterations: u64) -> Duration {
        time_sections(iterations, || {
            black_box(self.read());
        })
    }
}

impl ReadSide for parking_lot::RwLock<u64> {
    fn read_sections(&self, iterations: u64) -> Duration {
        time_sections(iterations, || {
            black_box(*self.read());
        })
    }
}

impl ReadSide for std::sync::RwLock<u64> {
    fn read_sections(&self, iterations: u64) -> Duration {
        time_sections(iterations, || {
            black_box(*self.read().expect("never poisoned: readers do not panic"));
        })
    }
}
