//! liburcu, the C user-space RCU library, as a peer of `rcu-lite`.
//!
//! `build.rs` finds liburcu with `pkg-config`, compiles the shims in `csrc/`
//! (liburcu's read lock is a static inline function in its headers, so the
//! read-side loops are C, running liburcu's real inlined fast path) and sets
//! `cfg(syncbench_liburcu)`. Without it every liburcu implementation is listed
//! as unavailable with [`INSTALL_HINT`], or as disabled where
//! `SYNCBENCH_NO_LIBURCU` was set (`cfg(syncbench_liburcu_disabled)`).
//!
//! The wrappers below are safe: each upholds liburcu's calling rules itself
//! (a reader thread registers before its sections and unregisters after).
//! liburcu aborts the process when a thread registers with a flavor it is
//! already registered with; the wrappers keep a thread-local flag per flavor
//! and panic instead, naming the misuse, while the first registration is
//! alive.

use crate::registry::Unavailable;

/// How to make the liburcu peers available.
pub const INSTALL_HINT: &str = "apt-get install -y liburcu-dev";

/// Whether this build links liburcu.
pub const LINKED: bool = cfg!(syncbench_liburcu);

/// Whether liburcu was left out on purpose: `SYNCBENCH_NO_LIBURCU` was set
/// when syncbench was built (`build.rs`).
pub const DISABLED: bool = cfg!(syncbench_liburcu_disabled);

/// Why the liburcu peers cannot run in a build without liburcu: switched
/// off by `SYNCBENCH_NO_LIBURCU`, or not found.
pub fn unavailable() -> Unavailable {
    if DISABLED {
        Unavailable {
            reason: "liburcu (liburcu-memb, liburcu-qsbr) was disabled by SYNCBENCH_NO_LIBURCU \
                     when syncbench was built"
                .to_owned(),
            hint: format!(
                "build without SYNCBENCH_NO_LIBURCU, with liburcu installed: {INSTALL_HINT}"
            ),
        }
    } else {
        Unavailable {
            reason: "liburcu (liburcu-memb, liburcu-qsbr) was not found by pkg-config when \
                     syncbench was built"
                .to_owned(),
            hint: INSTALL_HINT.to_owned(),
        }
    }
}

/// `Ok` if this build links liburcu, else [`unavailable`].
pub fn availability() -> Result<(), Unavailable> {
    if LINKED { Ok(()) } else { Err(unavailable()) }
}

#[cfg(syncbench_liburcu)]
pub use linked::*;

#[cfg(syncbench_liburcu)]
mod linked {
    use std::cell::Cell;
    use std::marker::PhantomData;
    use std::sync::atomic::{AtomicBool, AtomicPtr};

    thread_local! {
        /// Whether this thread holds a [`MembReader`].
        static MEMB_REGISTERED: Cell<bool> = const { Cell::new(false) };
        /// Whether this thread holds a [`QsbrReader`].
        static QSBR_REGISTERED: Cell<bool> = const { Cell::new(false) };
    }

    /// Marks the calling thread registered with `flavor` in `flag`, or
    /// panics if it already is: liburcu would abort the process.
    fn claim(flag: &'static std::thread::LocalKey<Cell<bool>>, flavor: &str, reader: &str) {
        if flag.with(|f| f.replace(true)) {
            panic!(
                "liburcu: {reader}::register() on a thread already registered with the {flavor} \
                 flavor (its first {reader} is still alive); liburcu aborts on a second \
                 registration, so drop the first {reader} before registering again"
            );
        }
    }

    mod ffi {
        unsafe extern "C" {
            pub fn syncbench_urcu_memb_register_thread();
            pub fn syncbench_urcu_memb_unregister_thread();
            pub fn syncbench_urcu_memb_synchronize_rcu();
            pub fn syncbench_urcu_memb_read_sections(slot: *const *mut u64, iterations: u64);
            pub fn syncbench_urcu_memb_read_until(slot: *const *mut u64, stop: *const u8) -> u64;
            pub fn syncbench_urcu_qsbr_register_thread();
            pub fn syncbench_urcu_qsbr_unregister_thread();
            pub fn syncbench_urcu_qsbr_synchronize_rcu();
            pub fn syncbench_urcu_qsbr_read_sections(slot: *const *mut u64, iterations: u64);
        }
    }

    /// `urcu_memb_synchronize_rcu()`. The calling thread must not be inside a
    /// memb read-side section; syncbench's callers never are (their sections
    /// all run inside the C loops below).
    pub fn memb_synchronize_rcu() {
        // SAFETY: no read-side section of this thread is open (see above); an
        // unregistered caller is allowed by liburcu.
        unsafe { ffi::syncbench_urcu_memb_synchronize_rcu() }
    }

    /// `urcu_qsbr_synchronize_rcu()` from a thread that is not registered.
    pub fn qsbr_synchronize_rcu() {
        // SAFETY: allowed from unregistered threads.
        unsafe { ffi::syncbench_urcu_qsbr_synchronize_rcu() }
    }

    /// The calling thread's registration with liburcu's memb flavor
    /// (`urcu_memb_register_thread()` until dropped). `!Send`.
    pub struct MembReader {
        _not_send: PhantomData<*const ()>,
    }

    impl MembReader {
        /// Registers the calling thread.
        ///
        /// # Panics
        ///
        /// If the thread already holds a `MembReader` (liburcu would abort).
        pub fn register() -> MembReader {
            claim(&MEMB_REGISTERED, "memb", "MembReader");
            // SAFETY: paired with the unregister in `drop`, on this thread
            // (`MembReader` is `!Send`); not registered yet (`claim`).
            unsafe { ffi::syncbench_urcu_memb_register_thread() };
            MembReader {
                _not_send: PhantomData,
            }
        }

        /// Runs `iterations` memb read-side sections over `slot` in C.
        ///
        /// `slot` must always point at a live `u64` that is freed only after
        /// a memb grace period (as every caller in this crate arranges).
        pub fn read_sections(&self, slot: &AtomicPtr<u64>, iterations: u64) {
            // SAFETY: the thread is registered; `slot` is an `AtomicPtr<u64>`,
            // layout-equal to `*mut u64`, which C reads with rcu_dereference
            // (a relaxed load plus dependency ordering); its pointee is live
            // per the contract.
            unsafe { ffi::syncbench_urcu_memb_read_sections(slot.as_ptr(), iterations) }
        }

        /// Runs memb read-side sections over `slot` in C until `stop`;
        /// returns how many. Same contract as [`MembReader::read_sections`].
        pub fn read_until(&self, slot: &AtomicPtr<u64>, stop: &AtomicBool) -> u64 {
            // SAFETY: as in `read_sections`; `stop` is an `AtomicBool`,
            // layout-equal to `u8`, which C reads with an atomic load.
            unsafe {
                ffi::syncbench_urcu_memb_read_until(slot.as_ptr(), stop.as_ptr().cast::<u8>())
            }
        }
    }

    impl Drop for MembReader {
        fn drop(&mut self) {
            // SAFETY: registered in `register` on this thread; the C loops
            // leave no section open.
            unsafe { ffi::syncbench_urcu_memb_unregister_thread() }
            MEMB_REGISTERED.with(|f| f.set(false));
        }
    }

    /// The calling thread's registration with liburcu's qsbr flavor
    /// (`urcu_qsbr_register_thread()`, online, until dropped). `!Send`.
    pub struct QsbrReader {
        _not_send: PhantomData<*const ()>,
    }

    impl QsbrReader {
        /// Registers the calling thread; it is online.
        ///
        /// # Panics
        ///
        /// If the thread already holds a `QsbrReader` (liburcu would abort).
        pub fn register() -> QsbrReader {
            claim(&QSBR_REGISTERED, "qsbr", "QsbrReader");
            // SAFETY: paired with the unregister in `drop`, on this thread;
            // not registered yet (`claim`).
            unsafe { ffi::syncbench_urcu_qsbr_register_thread() };
            QsbrReader {
                _not_send: PhantomData,
            }
        }

        /// Runs `iterations` qsbr read-side sections over `slot` in C. Same
        /// contract as [`MembReader::read_sections`], for qsbr grace periods.
        pub fn read_sections(&self, slot: &AtomicPtr<u64>, iterations: u64) {
            // SAFETY: the thread is registered and online throughout the loop,
            // so its reads are protected; `slot` as in `MembReader`.
            unsafe { ffi::syncbench_urcu_qsbr_read_sections(slot.as_ptr(), iterations) }
        }
    }

    impl Drop for QsbrReader {
        fn drop(&mut self) {
            // SAFETY: registered in `register` on this thread.
            unsafe { ffi::syncbench_urcu_qsbr_unregister_thread() }
            QSBR_REGISTERED.with(|f| f.set(false));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[cfg(syncbench_liburcu)]
    use std::sync::atomic::{AtomicBool, AtomicPtr};

    #[test]
    fn unavailable_names_the_install_hint() {
        let why = unavailable();
        assert_eq!(why.hint, "apt-get install -y liburcu-dev");
        let text = why.to_string();
        assert!(
            text.contains("pkg-config") && text.contains(INSTALL_HINT),
            "{text}"
        );
        assert_eq!(availability().is_ok(), LINKED);
    }

    #[cfg(syncbench_liburcu)]
    #[test]
    fn linked_liburcu_reads_and_synchronizes() {
        let value = Box::into_raw(Box::new(7u64));
        let slot = AtomicPtr::new(value);
        let memb = MembReader::register();
        memb.read_sections(&slot, 1000);
        let stop = AtomicBool::new(true);
        assert_eq!(memb.read_until(&slot, &stop), 0);
        drop(memb);
        let qsbr = QsbrReader::register();
        qsbr.read_sections(&slot, 1000);
        drop(qsbr);
        memb_synchronize_rcu();
        qsbr_synchronize_rcu();
        // SAFETY: from Box::into_raw above; no reader remains.
        drop(unsafe { Box::from_raw(value) });
    }

    /// A second registration of a thread with one flavor panics naming the
    /// misuse (liburcu itself aborts the process); the first stays usable,
    /// and once it is dropped the thread may register again.
    #[cfg(syncbench_liburcu)]
    #[test]
    fn registering_a_thread_twice_panics_instead_of_aborting() {
        let value = Box::into_raw(Box::new(7u64));
        let slot = AtomicPtr::new(value);
        let message = |payload: Box<dyn std::any::Any + Send>| {
            payload.downcast::<String>().map(|s| *s).unwrap_or_default()
        };
        std::thread::scope(|s| {
            s.spawn(|| {
                let first = MembReader::register();
                let twice = std::panic::catch_unwind(MembReader::register).map(drop);
                let why = message(twice.unwrap_err());
                assert!(
                    why.contains(
                        "MembReader::register() on a thread already registered with the memb flavor"
                    ),
                    "{why}"
                );
                first.read_sections(&slot, 10);
                // The other flavor is a registration of its own.
                let qsbr = QsbrReader::register();
                let twice = std::panic::catch_unwind(QsbrReader::register).map(drop);
                let why = message(twice.unwrap_err());
                assert!(
                    why.contains(
                        "QsbrReader::register() on a thread already registered with the qsbr flavor"
                    ),
                    "{why}"
                );
                drop((first, qsbr));
                let again = MembReader::register();
                again.read_sections(&slot, 10);
                drop((again, QsbrReader::register()));
            });
        });
        memb_synchronize_rcu();
        // SAFETY: from Box::into_raw above; no reader remains.
        drop(unsafe { Box::from_raw(value) });
    }
}
