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
//! reused yet, and `RECORD` keeps pointing at it, so that later destructors
//! see the open section (in `read_ongoing`, the misuse checks, a nested raw
//! section): the guard's drop ends its section as usual. A thread that
//! registers again during its own thread-local teardown (a destructor that
//! reads) gets a record that `OWNER`, gone, cannot give back. And a thread
//! whose first registration comes from a POSIX key destructor (another
//! library's exit hook calling into Rust) touches `OWNER` first there, after
//! glibc ran the thread-local destructors: the destructor that touch
//! registers never runs (`tests/key_destructor_first_use.rs`).
//!
//! All three go back in a second chance: a POSIX thread-specific key per
//! flavor whose destructor gives the record back. Every registration arms it
//! with the record, and `OWNER` disarms it when it gives the record back
//! itself; the key's destructor takes the record from an `OWNER` whose
//! destructor did not run, so that neither gives it back twice. glibc runs those destructors after
//! every thread-local destructor (`__call_tls_dtors`, which Rust's use, then
//! `__nptl_deallocate_tsd`). Other keys' destructors may still run code
//! afterwards (glibc takes keys in index order, pass after pass), and one that
//! reads registers again through the placeholder, since the second chance too
//! points `RECORD` back at it first (`tests/teardown_read_second_chance.rs`).
//! A record still inside a section then (a guard leaked with `mem::forget`)
//! stays registered for good. Without the second chance a stream of threads
//! with such destructors leaked one record each, and every scan walked them
//! all.
//!
//! Under loom, `loom::thread_local!` has no `const` form and loom atomics no
//! `const` constructors: `OWNER` alone holds the pointer, null until
//! registration.

use crate::engine::Engine;
use crate::record::{Record, nesting};
use std::cell::Cell;
use std::ptr;
use std::sync::atomic::Ordering::Relaxed;

/// Arms a flavor's second chance with a record, or disarms it (`None`).
pub(crate) type SecondChance = fn(Option<&'static Record>);

/// Gives this thread's record back to its engine when the thread exits.
pub(crate) struct Owner {
    /// The record, or null before registration.
    pub(crate) record: Cell<*const Record>,
    /// The engine whose registry the record belongs to.
    engine: Cell<*const Engine>,
    /// Clears the fast-path `RECORD` thread-local (std only).
    clear_fast_slot: Cell<Option<fn()>>,
    /// Arms the second chance with the record, or disarms it (`None`) (see
    /// the module docs; std only).
    second_chance: Cell<Option<SecondChance>>,
}

impl Owner {
    crate::const_unless_loom! {
        /// An owner of nothing yet.
        pub(crate) fn new() -> Owner {
            Owner {
                record: Cell::new(ptr::null()),
                engine: Cell::new(ptr::null()),
                clear_fast_slot: Cell::new(None),
                second_chance: Cell::new(None),
            }
        }
    }

    /// Takes ownership of `record`, registered with `engine`.
    pub(crate) fn own(
        &self,
        record: &'static Record,
        engine: &'static Engine,
        clear: Option<fn()>,
        second_chance: Option<SecondChance>,
    ) {
        self.record.set(record);
        self.engine.set(engine);
        self.clear_fast_slot.set(clear);
        self.second_chance.set(second_chance);
    }

    /// Gives up the record without releasing it, if it is `record`: the
    /// second chance released it (a thread whose first registration came
    /// from a key destructor, whose `OWNER` destructor glibc never runs; on
    /// a platform that ran it later, it must not release the record again).
    #[cfg(not(loom))]
    pub(crate) fn disown(&self, record: &'static Record) {
        if ptr::eq(self.record.get(), record) {
            self.record.set(ptr::null());
        }
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
            // The second chance, armed at registration, must not release
            // it again once another thread may have claimed it. Disarmed
            // before the fast slot is cleared: a signal handler that reads
            // after the clear registers a record of its own and arms the
            // key with it, which a later disarm would lose.
            if let Some(second_chance) = self.second_chance.get() {
                second_chance(None);
            }
            if let Some(clear) = self.clear_fast_slot.get() {
                clear();
            }
            engine.registry().release(record);
        }
        // Otherwise the record stays this thread's until the second chance
        // (armed with it at registration), and the fast slot (which has no
        // destructor) keeps pointing at it: the guard's drop, and any read
        // lock, `read_ongoing` or misuse check made by a later destructor,
        // see the open section, not a fresh record.
    }
}

/// The second chance (see the module docs): a thread-specific key whose
/// destructor, `give_back`, gets the record when the thread ends, armed with
/// `record` at every registration and disarmed (`None`) when `OWNER` gives
/// the record back itself. `key` is the flavor's, created on first use;
/// without one (the process ran out of keys) a record that `OWNER` cannot
/// give back stays registered, as it did before keys were used.
#[cfg(not(loom))]
pub(crate) fn set_second_chance(
    key: &'static std::sync::OnceLock<Option<libc::pthread_key_t>>,
    give_back: unsafe extern "C" fn(*mut libc::c_void),
    record: Option<&'static Record>,
) {
    if let Some(key) = teardown_key(key, give_back) {
        let value = record.map_or(ptr::null(), |r| ptr::from_ref(r).cast());
        // SAFETY: a key this process created and never deletes. A non-null
        // value is what makes glibc call the destructor at thread exit.
        let _ = unsafe { libc::pthread_setspecific(key, value) };
    }
}

/// The flavor's second-chance key, created on first use (`None` if the
/// process ran out of keys). Also called by `fork::before_fork`: a thread
/// creating it at the fork would leave the child a `OnceLock` that blocks
/// forever every thread that later registers (each arms the key).
#[cfg(not(loom))]
pub(crate) fn teardown_key(
    key: &'static std::sync::OnceLock<Option<libc::pthread_key_t>>,
    give_back: unsafe extern "C" fn(*mut libc::c_void),
) -> Option<libc::pthread_key_t> {
    *key.get_or_init(|| {
        let mut key: libc::pthread_key_t = 0;
        // SAFETY: `key` is a valid place for the new key; `give_back` is a
        // function for the whole process's life.
        let rc = unsafe { libc::pthread_key_create(&mut key, Some(give_back)) };
        (rc == 0).then_some(key)
    })
}

/// The second chance's destructor body: gives `record` back to `engine` if
/// it is outside every section, after `clear` points the fast slot back at
/// the placeholder and `disown` takes it from an `OWNER` whose destructor
/// did not run.
///
/// # Safety
///
/// `record` is the calling thread's record, set by [`set_second_chance`].
#[cfg(not(loom))]
pub(crate) unsafe fn give_back_after_teardown(
    record: *mut libc::c_void,
    engine: &'static Engine,
    clear: fn(),
    disown: fn(&'static Record),
) {
    // SAFETY: registry records are never freed (the caller passes one).
    let record: &'static Record = unsafe { &*record.cast::<Record>().cast_const() };
    // Relaxed: only this thread writes its word.
    if nesting(record.word.load(Relaxed)) == 0 {
        clear();
        disown(record);
        engine.registry().release(record);
    } else {
        // Every thread-local destructor has run, so no guard is left to end
        // the section: every later grace period will wait for it. A hang
        // with no message is the hardest misuse to find, so this says so;
        // a panic cannot leave this `extern "C"` destructor, and std's
        // stderr may need thread-locals that are gone (nor may it allocate),
        // so it is one write of a stack buffer. It names the thread's kernel
        // id, which the stall warnings then mark "(exited)".
        let mut line = [0u8; 256];
        let len = exit_notice(&mut line, record.os_tid());
        // SAFETY: a valid buffer of at least that length; fd 2 is at worst
        // closed, and then the write fails harmlessly.
        let _ = unsafe { libc::write(2, line.as_ptr().cast(), len) };
    }
}

/// Writes into `line` the notice of thread `tid`'s exit inside a read-side
/// section, and returns its length.
#[cfg(not(loom))]
fn exit_notice(line: &mut [u8; 256], tid: i32) -> usize {
    const BEFORE: &[u8] = b"rcu-lite: thread ";
    const AFTER: &[u8] = concat!(
        " exited inside a read-side section (a memb::Guard leaked with mem::forget, or a ",
        "raw::memb_read_lock() never ended): every later grace period waits for it forever\n",
    )
    .as_bytes();
    // The longest id, 10 digits, fits.
    const _: () = assert!(BEFORE.len() + 10 + AFTER.len() <= 256);
    // The id's decimal digits, backwards (a kernel id is positive; a
    // negative one, which gettid() never returns, is written as its
    // magnitude).
    let mut digits = [0u8; 10];
    let mut n = tid.unsigned_abs();
    let mut count = 0;
    loop {
        digits[count] = b'0' + (n % 10) as u8;
        count += 1;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    let mut len = 0;
    let mut put = |bytes: &[u8]| {
        line[len..len + bytes.len()].copy_from_slice(bytes);
        len += bytes.len();
    };
    put(BEFORE);
    for i in (0..count).rev() {
        put(&digits[i..=i]);
    }
    put(AFTER);
    len
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
                // Keeps the fast slot's store after `on_register`'s stores in
                // program order, for a signal handler on this thread: one
                // that found the record in the slot before its word was set
                // would read without the fence that word calls for.
                std::sync::atomic::compiler_fence(std::sync::atomic::Ordering::SeqCst);
                RECORD.with(|slot| slot.set(record));
                // During the thread's own teardown `OWNER` may be gone, and
                // first touched in a key destructor its destructor never
                // runs: the second chance is armed either way, and `OWNER`
                // disarms it when it gives the record back (module docs).
                set_second_chance(Some(record));
                let _ = OWNER.try_with(|owner| {
                    owner.own(
                        record,
                        engine,
                        Some(clear_fast_slot),
                        Some(set_second_chance),
                    )
                });
            }
            #[cfg(loom)]
            OWNER.with(|owner| owner.own(record, engine, None, None));
            record
        }

        /// Points the fast slot back at the placeholder.
        #[cfg(not(loom))]
        fn clear_fast_slot() {
            RECORD.with(|slot| slot.set(&raw const PLACEHOLDER));
        }

        /// This flavor's second-chance key (see the module docs).
        #[cfg(not(loom))]
        static TEARDOWN_KEY: std::sync::OnceLock<Option<libc::pthread_key_t>> =
            std::sync::OnceLock::new();

        /// Creates this flavor's second-chance key now if no thread has yet
        /// (`fork::before_fork`; see `thread_record::teardown_key`).
        #[cfg(not(loom))]
        pub(crate) fn settle_teardown_key() {
            let _ = $crate::thread_record::teardown_key(&TEARDOWN_KEY, give_back);
        }

        /// Whether this flavor's second-chance key was created (tests).
        #[cfg(all(test, not(loom)))]
        pub(crate) fn teardown_key_settled() -> bool {
            TEARDOWN_KEY.get().is_some()
        }

        #[cfg(not(loom))]
        fn set_second_chance(record: Option<&'static $crate::record::Record>) {
            $crate::thread_record::set_second_chance(&TEARDOWN_KEY, give_back, record);
        }

        /// Takes `record` from `OWNER` if its destructor has not run.
        #[cfg(not(loom))]
        fn disown(record: &'static $crate::record::Record) {
            let _ = OWNER.try_with(|owner| owner.disown(record));
        }

        /// The key's destructor.
        #[cfg(not(loom))]
        unsafe extern "C" fn give_back(record: *mut libc::c_void) {
            // SAFETY: glibc passes the value this thread set, its record, once
            // every thread-local destructor has run.
            unsafe {
                $crate::thread_record::give_back_after_teardown(
                    record,
                    engine(),
                    clear_fast_slot,
                    disown,
                )
            }
        }
    };
}

pub(crate) use thread_record;

#[cfg(all(test, not(loom)))]
mod tests {
    use super::exit_notice;

    /// The exit notice is one line naming the thread's kernel id, however
    /// many digits it has.
    #[test]
    fn the_exit_notice_names_the_thread() {
        for (tid, text) in [
            (0, "0"),
            (7, "7"),
            (26_213, "26213"),
            (i32::MAX, "2147483647"),
        ] {
            let mut line = [0u8; 256];
            let len = exit_notice(&mut line, tid);
            let notice = std::str::from_utf8(&line[..len]).unwrap();
            assert!(
                notice.starts_with(&format!(
                    "rcu-lite: thread {text} exited inside a read-side section (a memb::Guard"
                )) && notice.ends_with("waits for it forever\n")
                    && notice.matches('\n').count() == 1,
                "{notice:?}"
            );
        }
    }
}
