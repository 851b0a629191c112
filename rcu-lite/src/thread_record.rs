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
//! - `RECORD`, a `Cell<usize>` holding a [`ThreadRecord`] (0 before
//!   registration) with a `const` initializer and no destructor: the read-side
//!   fast path reads it with one thread-pointer-relative load and no
//!   "initialized yet?" check;
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
//! reused: the guard's drop ends its section as usual and the record stays
//! registered and outside for good. A thread that registers again during its
//! own thread-local teardown gets a record that is never given back, for the
//! same reason; it too ends up outside.
//!
//! Under loom, `loom::thread_local!` has no `const` form: `OWNER` alone holds
//! the pointer.

use crate::engine::Engine;
use crate::record::{Record, nesting};
use membarrier_sim::fence;
use std::cell::Cell;
use std::ptr;
use std::sync::atomic::Ordering::{Relaxed, SeqCst};

/// A thread's record, with the read-side fence it must use folded into the
/// low bit of the address (records are 128-byte aligned).
///
/// `fence::light()` decides per call between a compiler fence (membarrier
/// mode) and `fence(SeqCst)` by loading the process's fence mode. The mode is
/// decided once and never changes, so it is read once, when the thread
/// registers, and carried here: the fast path tests a bit of a value it has in
/// a register instead of loading the mode twice per section. [`Self::light`]
/// is therefore exactly `fence::light()`.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) struct ThreadRecord(usize);

impl ThreadRecord {
    /// Set when light fences must be `fence(SeqCst)`.
    const SEQCST_FENCES: usize = 1;

    /// Tags `record` with the process's fence mode (deciding it if needed).
    pub(crate) fn new(record: &'static Record) -> ThreadRecord {
        let address = ptr::from_ref(record) as usize;
        debug_assert_eq!(address & Self::SEQCST_FENCES, 0);
        let seqcst = cfg!(loom) || fence::mode() == fence::Mode::SeqCst;
        ThreadRecord(address | if seqcst { Self::SEQCST_FENCES } else { 0 })
    }

    /// The raw tagged value (never 0).
    #[inline(always)]
    pub(crate) fn bits(self) -> usize {
        self.0
    }

    /// From [`Self::bits`]; 0 means none.
    #[inline(always)]
    pub(crate) fn from_bits(bits: usize) -> Option<ThreadRecord> {
        (bits != 0).then_some(ThreadRecord(bits))
    }

    /// The record.
    #[inline(always)]
    pub(crate) fn record(self) -> &'static Record {
        // SAFETY: built by `new` from a `'static` record (registry records are
        // never freed); the tag bit is masked off.
        unsafe { &*((self.0 & !Self::SEQCST_FENCES) as *const Record) }
    }

    /// `fence::light()`: a compiler fence in membarrier mode, `fence(SeqCst)`
    /// otherwise (always under loom). Pairs with `fence::heavy()`.
    #[inline(always)]
    pub(crate) fn light(self) {
        if self.0 & Self::SEQCST_FENCES != 0 {
            seqcst_fence();
        } else {
            std::sync::atomic::compiler_fence(SeqCst);
        }
    }
}

/// The fallback light fence, out of line so the membarrier-mode fast path
/// falls straight through.
#[cold]
#[inline(never)]
fn seqcst_fence() {
    crate::sync::fence(SeqCst);
}

/// Gives this thread's record back to its engine when the thread exits.
pub(crate) struct Owner {
    /// The record's [`ThreadRecord::bits`], or 0 before registration.
    pub(crate) record: Cell<usize>,
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
                record: Cell::new(0),
                engine: Cell::new(ptr::null()),
                clear_fast_slot: Cell::new(None),
            }
        }
    }

    /// Takes ownership of `record`, registered with `engine`.
    pub(crate) fn own(&self, record: ThreadRecord, engine: &'static Engine, clear: Option<fn()>) {
        self.record.set(record.bits());
        self.engine.set(engine);
        self.clear_fast_slot.set(clear);
    }
}

impl Drop for Owner {
    fn drop(&mut self) {
        let (Some(record), engine) = (
            ThreadRecord::from_bits(self.record.get()),
            self.engine.get(),
        ) else {
            return;
        };
        if let Some(clear) = self.clear_fast_slot.get() {
            clear();
        }
        let record = record.record();
        // SAFETY: set by `own`, with the record, from a `'static` reference
        // (engines are statics, leaked boxes under loom).
        let engine = unsafe { &*engine };
        // Relaxed: only this thread writes its word.
        if nesting(record.word.load(Relaxed)) == 0 {
            engine.registry().release(record);
        }
    }
}

/// Declares this thread's record for the flavor module that invokes it (see
/// the module docs). The module must have `fn engine() -> &'static Engine`.
/// Defines `thread_record()` (registering on first use) and
/// `registered_record()`.
macro_rules! thread_record {
    () => {
        #[cfg(not(loom))]
        std::thread_local! {
            /// This thread's `ThreadRecord` bits; 0 before registration and after exit.
            static RECORD: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
            /// Gives the record back when the thread exits.
            static OWNER: $crate::thread_record::Owner =
                const { $crate::thread_record::Owner::new() };
        }
        #[cfg(loom)]
        loom::thread_local! {
            /// This thread's record, and gives it back when the thread exits.
            static OWNER: $crate::thread_record::Owner = $crate::thread_record::Owner::new();
        }

        /// This thread's record, registering it on first use.
        #[inline(always)]
        pub(crate) fn thread_record() -> $crate::thread_record::ThreadRecord {
            match registered_record() {
                Some(record) => record,
                None => register_thread_record(),
            }
        }

        /// This thread's record, if it has registered one.
        #[inline(always)]
        pub(crate) fn registered_record() -> Option<$crate::thread_record::ThreadRecord> {
            #[cfg(not(loom))]
            let bits = RECORD.with(|slot| slot.get());
            #[cfg(loom)]
            let bits = OWNER.with(|owner| owner.record.get());
            $crate::thread_record::ThreadRecord::from_bits(bits)
        }

        #[cold]
        #[inline(never)]
        fn register_thread_record() -> $crate::thread_record::ThreadRecord {
            let engine = engine();
            let record = $crate::thread_record::ThreadRecord::new(engine.registry().acquire());
            #[cfg(not(loom))]
            {
                RECORD.with(|slot| slot.set(record.bits()));
                // During the thread's own teardown `OWNER` may be gone: the
                // record then stays registered for good (see the module docs).
                let _ = OWNER.try_with(|owner| {
                    owner.own(record, engine, Some(|| RECORD.with(|slot| slot.set(0))))
                });
            }
            #[cfg(loom)]
            OWNER.with(|owner| owner.own(record, engine, None));
            record
        }
    };
}

pub(crate) use thread_record;
