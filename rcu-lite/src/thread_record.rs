//! Each thread's own record in a flavor's registry: registered on first use,
//! given back when the thread exits.
//!
//! Kernel counterpart: the per-CPU `rcu_data` a CPU gets at boot and that goes
//! offline with the CPU (`rcutree_report_cpu_dead()`).
//!
//! # Layout
//!
//! [`thread_record!`] declares, in the flavor module that invokes it, two
//! thread-locals:
//!
//! - `RECORD`, a `Cell<*const Record>` with a `const` initializer and no
//!   destructor, pointing at the flavor's `PLACEHOLDER` record until the thread
//!   registers: the read-side fast path reads it with one
//!   thread-pointer-relative load and no "initialized yet?" check, because the
//!   placeholder's word sends it to the slow path (`record.rs`, `SLOW_PATH`),
//!   which registers;
//! - `OWNER`, an [`Owner`] whose destructor gives the record back when the
//!   thread exits. It is touched only on registration, so its lazy destructor
//!   registration stays off the fast path.
//!
//! # Exit
//!
//! A thread that exits outside every read-side section (nesting 0) gives its
//! record back at once, and since its word says "outside" it never held up a
//! grace period. If a guard is still alive when `OWNER` is destroyed (a guard
//! kept in another thread-local that is destroyed later), the record is not
//! reused, and `RECORD` keeps pointing at it, so that later destructors see
//! the open section (in `read_ongoing`, the misuse checks, a nested raw
//! section): the guard's drop ends its section as usual and the record stays
//! registered and outside for good. A thread that registers again during its
//! own thread-local teardown gets a record that is never given back, for the
//! same reason; it too ends up outside.
//!
//! Under loom, `loom::thread_local!` has no `const` form and loom atomics no
//! `const` constructors: `OWNER` alone holds the pointer, null until
//! registration.

use crate::engine::Engine;
use crate::record::{Record, nesting};
use std::cell::Cell;
use std::ptr;
use std::sync::atomic::Ordering::Relaxed;

/// Gives this thread's record back to its engine when the thread exits.
pub(crate) struct Owner {
    /// The record, or null before registration.
    pub(crate) record: Cell<*const Record>,
    /// The engine whose registry the record belongs to.
    engine: Cell<*const Engine>,
    /// Clears the fast-path `RECORD` thread-local (std only).
    clear_fast_slot: Cell<Option<fn()>>,
}

impl Owner {
    crate::const_unless_loom! {
        /// An owner of nothing yet.
        pub(crate) fn new() -> Owner {
            Owner {
                record: Cell::new(ptr::null()),
                engine: Cell::new(ptr::null()),
                clear_fast_slot: Cell::new(None),
            }
        }
    }

    /// Takes ownership of `record`, registered with `engine`.
    pub(crate) fn own(
        &self,
        record: &'static Record,
        engine: &'static Engine,
        clear: Option<fn()>,
    ) {
        self.record.set(record);
        self.engine.set(engine);
        self.clear_fast_slot.set(clear);
    }
}

impl Drop for Owner {
    fn drop(&mut self) {
        let (record, engine) = (self.record.get(), self.engine.get());
        if record.is_null() || engine.is_null() {
            return;
        }
        // SAFETY: both set by `own` from `'static` references (registry records
        // are never freed; engines are statics, leaked boxes under loom).
        let (record, engine) = unsafe { (&*record, &*engine) };
        // Relaxed: only this thread writes its word.
        if nesting(record.word.load(Relaxed)) == 0 {
            // The fast slot must not keep pointing at a record that another
            // thread may now claim.
            if let Some(clear) = self.clear_fast_slot.get() {
                clear();
            }
            engine.registry().release(record);
        }
        // Otherwise the record stays this thread's for good, and the fast slot
        // (which has no destructor) keeps pointing at it: the guard's drop, and
        // any read lock, `read_ongoing` or misuse check made by a later
        // destructor, see the open section, not a fresh record.
    }
}

/// Declares this thread's record for the flavor module that invokes it (see
/// the module docs). The module must have `fn engine() -> &'static Engine`;
/// `$on_register: fn(&'static Record)` prepares a newly acquired record.
/// Defines `current_record()` (the placeholder before registration, std
/// only), `thread_record()` (registering on first use) and
/// `registered_record()`.
macro_rules! thread_record {
    ($on_register:expr) => {
        /// What `current_record()` returns before the thread registers.
        #[cfg(not(loom))]
        static PLACEHOLDER: $crate::record::Record = $crate::record::Record::placeholder();

        #[cfg(not(loom))]
        std::thread_local! {
            /// This thread's record; `PLACEHOLDER` before registration and
            /// after exit.
            static RECORD: std::cell::Cell<*const $crate::record::Record> =
                const { std::cell::Cell::new(&raw const PLACEHOLDER) };
            /// Gives the record back when the thread exits.
            static OWNER: $crate::thread_record::Owner =
                const { $crate::thread_record::Owner::new() };
        }
        #[cfg(loom)]
        loom::thread_local! {
            /// This thread's record, and gives it back when the thread exits.
            static OWNER: $crate::thread_record::Owner = $crate::thread_record::Owner::new();
        }

        /// This thread's record, or the placeholder (whose word is
        /// `SLOW_PATH`) if it has not registered: one thread-local load.
        #[cfg(not(loom))]
        #[inline(always)]
        #[allow(dead_code)]
        pub(crate) fn current_record() -> &'static $crate::record::Record {
            // SAFETY: `RECORD` always points at `PLACEHOLDER` or at a registry
            // record, and neither is ever freed.
            unsafe { &*RECORD.with(|slot| slot.get()) }
        }

        /// Whether `record` is the not-yet-registered placeholder.
        #[allow(dead_code)]
        pub(crate) fn is_placeholder(record: &$crate::record::Record) -> bool {
            #[cfg(not(loom))]
            return std::ptr::eq(record, &raw const PLACEHOLDER);
            #[cfg(loom)]
            {
                let _ = record;
                false
            }
        }

        /// This thread's record, registering it on first use.
        #[inline(always)]
        pub(crate) fn thread_record() -> &'static $crate::record::Record {
            match registered_record() {
                Some(record) => record,
                None => register_thread_record(),
            }
        }

        /// This thread's record, if it has registered one.
        #[inline(always)]
        pub(crate) fn registered_record() -> Option<&'static $crate::record::Record> {
            #[cfg(not(loom))]
            {
                let record = current_record();
                (!is_placeholder(record)).then_some(record)
            }
            #[cfg(loom)]
            {
                // SAFETY: non-null only while it points at a registry record,
                // and registry records are never freed.
                unsafe { OWNER.with(|owner| owner.record.get()).as_ref() }
            }
        }

        #[cold]
        #[inline(never)]
        fn register_thread_record() -> &'static $crate::record::Record {
            let engine = engine();
            let record = engine.registry().acquire();
            let on_register: fn(&'static $crate::record::Record) = $on_register;
            on_register(record);
            #[cfg(not(loom))]
            {
                RECORD.with(|slot| slot.set(record));
                // During the thread's own teardown `OWNER` may be gone: the
                // record then stays registered for good (see the module docs).
                let _ = OWNER.try_with(|owner| {
                    owner.own(
                        record,
                        engine,
                        Some(|| RECORD.with(|slot| slot.set(&raw const PLACEHOLDER))),
                    )
                });
            }
            #[cfg(loom)]
            OWNER.with(|owner| owner.own(record, engine, None));
            record
        }
    };
}

pub(crate) use thread_record;
