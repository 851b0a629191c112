//! This workspace's `hazptr` read side.

use super::{ReadSide, time_sections};
use crate::registry::{Implementation, Origin};
use std::hint::black_box;
use std::sync::atomic::AtomicPtr;
use std::time::Duration;

/// `hazptr`: one guard per section, as the kernel's `hazptr_acquire()` /
/// `hazptr_release()` pair.
pub(super) const HAZPTR: Implementation<dyn ReadSide> = Implementation {
    name: "hazptr",
    summary: "hazptr::acquire + drop (free slot, wildcard, light fence, load, store; release store)",
    origin: Origin::Workspace,
    make: |_| Ok(Box::new(Hazptr::new())),
};

struct Hazptr {
    value: AtomicPtr<u64>,
}

impl Hazptr {
    fn new() -> Self {
        Hazptr {
            value: AtomicPtr::new(Box::into_raw(Box::new(42u64))),
        }
    }
}

impl ReadSide for Hazptr {
    fn read_sections(&self, iterations: u64) -> Duration {
        // Registration (the thread's slot block) happens on the first guard,
        // which the untimed set-up call of `read_sections(1)` makes.
        time_sections(iterations, || {
            let (guard, p) = hazptr::acquire(&self.value);
            // SAFETY: protected by `guard`; freed only in `drop`, which cannot
            // run while `&self` is borrowed.
            black_box(unsafe { *p });
            drop(guard);
        })
    }
}

impl Drop for Hazptr {
    fn drop(&mut self) {
        // SAFETY: allocated by `Box::new` in `new`, never retired; `&mut
        // self` excludes readers.
        drop(unsafe { Box::from_raw(*self.value.get_mut()) });
    }
}
