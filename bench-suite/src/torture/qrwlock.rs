//! This workspace's `qrwlock` under torture: the lock as the reclamation
//! scheme. Readers reach and check the object under the read lock; writers
//! swap it under the write lock and reclaim the old one at once, which is safe
//! exactly when the lock excludes readers from writers. A premature reclamation
//! here is an exclusion failure; a reader that stalls holds writers off; a
//! panicking reader must release its read lock during the unwind.
//!
//! One `read` in [`NESTED_EVERY`] of each thread takes a second, recursive
//! hold inside the first (`read_recursive`), as a re-entrant reader would,
//! and checks the object through it: with a writer waiting for the outer
//! hold, a plain second `read` would deadlock (the run would end in a hang).

use super::object::{self, TortureObject};
use super::{Options, Torture};
use crate::registry::{Implementation, Origin};
use qrwlock::ReadRecursive;
use std::cell::Cell;
use std::ptr::NonNull;

/// One `read` in this many, per thread, nests a recursive hold.
const NESTED_EVERY: u32 = 4;

thread_local! {
    /// This thread's `read` calls, to pick the nested ones.
    static READS: Cell<u32> = const { Cell::new(0) };
}

/// Whether this thread's `read` now nests (one in [`NESTED_EVERY`]).
fn nested_this_time() -> bool {
    READS.with(|reads| {
        let n = reads.get().wrapping_add(1);
        reads.set(n);
        n % NESTED_EVERY == 0
    })
}

/// `qrwlock`.
pub(super) const QRWLOCK: Implementation<dyn Torture, Options> = Implementation {
    name: "qrwlock",
    summary: "qrwlock::RwLock: readers check under the read lock; writers swap under the write lock and reclaim at once",
    origin: Origin::Workspace,
    make: |o| {
        if o.deferred_only {
            return Err(crate::registry::Unavailable {
                reason: "a lock has no deferred reclamation: writers free under the write lock"
                    .into(),
                hint: "compare locks with syncbench locktorture".into(),
            });
        }
        Ok(Box::new(Qrwlock::new(o)))
    },
};

/// The published object: owned by the lock's contents.
struct Current(NonNull<TortureObject>);

// SAFETY: `Current` owns its object (a `TortureObject` is `Send + Sync`); the
// lock serializes replacement against every access.
unsafe impl Send for Current {}
// SAFETY: shared access only reads the object through `&TortureObject`.
unsafe impl Sync for Current {}

struct Qrwlock {
    current: qrwlock::RwLock<Current>,
}

impl Qrwlock {
    fn new(options: &Options) -> Self {
        let first = NonNull::from(Box::leak(TortureObject::new(&options.ledger, 0)));
        Qrwlock {
            current: qrwlock::RwLock::new(Current(first)),
        }
    }
}

impl Torture for Qrwlock {
    fn read(&self) -> bool {
        let current = self.current.read();
        // SAFETY: live while the read lock is held: writers reclaim only the
        // object they unpublished under the write lock.
        let object = unsafe { current.0.as_ref() };
        if !nested_this_time() {
            return object.is_live();
        }
        // No writer can be inside between the two holds: the inner one must
        // see the object the outer one does.
        let inner = self.current.read_recursive();
        inner.0 == current.0 && object.is_live()
    }

    fn read_with(&self, inside: &mut dyn FnMut(&TortureObject)) {
        let current = self.current.read();
        // SAFETY: as in `read`; the guard is dropped after `inside` returns
        // or during its unwind.
        inside(unsafe { current.0.as_ref() });
    }

    fn replace(&self, fresh: Box<TortureObject>) {
        let mut current = self.current.write();
        let old = std::mem::replace(&mut current.0, NonNull::from(Box::leak(fresh)));
        // SAFETY: `old` came from `Box::leak` of a `TortureObject::new` box
        // and is unpublished; the write lock excludes every reader, so none
        // holds it.
        unsafe { object::reclaim(old.as_ptr()) };
    }
}

impl Drop for Qrwlock {
    fn drop(&mut self) {
        // SAFETY: the last published object, owned by the lock's contents;
        // `&mut self` means no reader holds it.
        unsafe { object::reclaim(self.current.get_mut().0.as_ptr()) };
    }
}
