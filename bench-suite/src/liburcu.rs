//! liburcu, the C user-space RCU library, as a peer of `rcu-lite`.
//!
//! `build.rs` finds liburcu with `pkg-config`, compiles the shims in `csrc/`
//! (liburcu's read lock is a static inline function in its headers, so the
//! read-side loops are C, running liburcu's real inlined fast path) and sets
//! `cfg(syncbench_liburcu)`. Without it every liburcu implementation is listed
//! as unavailable with [`INSTALL_HINT`]: disabled where
//! `SYNCBENCH_NO_LIBURCU` was set (`cfg(syncbench_liburcu_disabled)`), found
//! but not compiling where the shims failed against liburcu's headers
//! (`cfg(syncbench_liburcu_broken)`), not found otherwise.
//!
//! The wrappers uphold liburcu's calling rules themselves:
//! - A thread registers only for the length of a closure
//!   ([`MembReader::with`], [`QsbrReader::with`]), and unregisters when it
//!   returns or unwinds: liburcu requires unregistering before a thread
//!   exits, and a registration the caller owned could be leaked with
//!   `mem::forget`, leaving a dead thread on liburcu's list (a later
//!   `synchronize_rcu` then hung for good).
//! - liburcu aborts the process when a thread registers with a flavor it is
//!   already registered with; the wrappers keep a thread-local flag per
//!   flavor and panic instead, naming the misuse.
//! - A qsbr thread is online only inside a C read loop, so an idle
//!   registration never holds up a grace period.
//!
//! The read loops dereference whatever the slot points at, so they are
//! `unsafe`: the caller keeps the pointee live until a grace period after
//! unpublishing it.

use crate::registry::Unavailable;

/// How to make the liburcu peers available.
pub const INSTALL_HINT: &str =
    "apt-get install -y liburcu-dev pkg-config, then cargo clean -p bench-suite and build again";

/// Whether this build links liburcu.
pub const LINKED: bool = cfg!(syncbench_liburcu);

/// Whether liburcu was left out on purpose: `SYNCBENCH_NO_LIBURCU` was set
/// when syncbench was built (`build.rs`).
pub const DISABLED: bool = cfg!(syncbench_liburcu_disabled);

/// Whether pkg-config found liburcu but it cannot be used: the shims did not
/// compile against its headers, or its libraries did not link or load
/// (`build.rs`).
pub const BROKEN: bool = cfg!(syncbench_liburcu_broken);

/// What failed, where [`BROKEN`]: the compile of the shims, or the link or
/// the run of a program linked with liburcu's libraries.
const BUILD_ERROR: Option<&str> = option_env!("SYNCBENCH_LIBURCU_BUILD_ERROR");

/// pkg-config's answer, where liburcu was not found.
const NOT_FOUND: Option<&str> = option_env!("SYNCBENCH_LIBURCU_NOT_FOUND");

/// Why the liburcu peers cannot run in a build without liburcu: switched
/// off by `SYNCBENCH_NO_LIBURCU`, found but not compiling, or not found.
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
    } else if BROKEN {
        Unavailable {
            reason: format!(
                "liburcu (liburcu-memb, liburcu-qsbr) was found by pkg-config when syncbench \
                 was built, but {}",
                BUILD_ERROR.unwrap_or("could not be used (no message)")
            ),
            hint: format!(
                "the build script's warnings give the compiler's or linker's messages; \
                 reinstall liburcu: {INSTALL_HINT}"
            ),
        }
    } else {
        Unavailable {
            reason: format!(
                "liburcu (liburcu-memb, liburcu-qsbr) was not found by pkg-config when \
                 syncbench was built ({})",
                NOT_FOUND.unwrap_or("no message")
            ),
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
        /// Whether this thread is inside [`MembReader::with`].
        static MEMB_REGISTERED: Cell<bool> = const { Cell::new(false) };
        /// Whether this thread is inside [`QsbrReader::with`].
        static QSBR_REGISTERED: Cell<bool> = const { Cell::new(false) };
    }

    /// Marks the calling thread registered with `flavor` in `flag`, or
    /// panics if it already is: liburcu would abort the process.
    fn claim(flag: &'static std::thread::LocalKey<Cell<bool>>, flavor: &str, reader: &str) {
        if flag.with(|f| f.replace(true)) {
            panic!(
                "liburcu: {reader}::with() inside {reader}::with() on one thread: the thread is \
                 already registered with the {flavor} flavor, and liburcu aborts on a second \
                 registration; use the outer {reader}"
            );
        }
    }

    mod ffi {
        unsafe extern "C" {
            pub fn syncbench_urcu_memb_register_thread();
            pub fn syncbench_urcu_memb_unregister_thread();
            pub fn syncbench_urcu_memb_synchronize_rcu();
            pub fn syncbench_urcu_memb_has_sys_membarrier() -> std::ffi::c_int;
            pub fn syncbench_urcu_memb_read_sections(slot: *const *mut u64, iterations: u64);
            pub fn syncbench_urcu_memb_read_until(slot: *const *mut u64, stop: *const u8) -> u64;
            pub fn syncbench_urcu_memb_call_rcu_sleeping(us: u64) -> std::ffi::c_int;
            pub fn syncbench_urcu_memb_call_rcu_before_fork();
            pub fn syncbench_urcu_memb_call_rcu_after_fork_parent();
            pub fn syncbench_urcu_qsbr_register_thread();
            pub fn syncbench_urcu_qsbr_unregister_thread();
            pub fn syncbench_urcu_qsbr_synchronize_rcu();
            pub fn syncbench_urcu_qsbr_read_sections(slot: *const *mut u64, iterations: u64);
            pub fn syncbench_urcu_qsbr_read_until(slot: *const *mut u64, stop: *const u8) -> u64;
        }
    }

    /// How liburcu's memb flavor orders its readers in this process, as it
    /// chose when the library loaded: with `membarrier(2)`'s private
    /// expedited command (as hazptr and rcu-lite do), with its older global
    /// command (`MEMBARRIER_CMD_SHARED`, a grace period of the kernel's
    /// per `synchronize_rcu()`), or, without membarrier, with `smp_mb()` in
    /// every read-side lock and unlock. A report states it beside our own
    /// fence mode: the two can differ (a kernel or sandbox that refuses one
    /// command, or `SYNCPRIMS_FENCE=seqcst`, which liburcu does not read).
    pub fn memb_fence_mode() -> String {
        use membarrier_sim::sys::{Command, query};
        // SAFETY: reads an int the library set in its constructor, before
        // `main`; nothing writes it afterwards.
        let has = unsafe { ffi::syncbench_urcu_memb_has_sys_membarrier() } != 0;
        if !has {
            "smp_mb() in every read-side lock and unlock (no membarrier)".to_owned()
        } else if query().contains(Command::PrivateExpedited) {
            // liburcu takes the private expedited command wherever the
            // kernel offers it, and the global one only otherwise.
            "membarrier, private expedited".to_owned()
        } else {
            "membarrier, global (MEMBARRIER_CMD_SHARED)".to_owned()
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

    /// `urcu_qsbr_synchronize_rcu()`. Registered threads are offline outside
    /// the C read loops, so it cannot wait on an idle [`QsbrReader`].
    pub fn qsbr_synchronize_rcu() {
        // SAFETY: allowed from any thread: liburcu takes an online caller
        // offline for the wait, and this crate's qsbr threads are offline
        // outside their read loops.
        unsafe { ffi::syncbench_urcu_qsbr_synchronize_rcu() }
    }

    /// Takes back a flavor's registration when [`MembReader::with`] or
    /// [`QsbrReader::with`] returns or unwinds.
    struct Registered {
        unregister: unsafe extern "C" fn(),
        flag: &'static std::thread::LocalKey<Cell<bool>>,
    }

    impl Drop for Registered {
        fn drop(&mut self) {
            // SAFETY: registered by the `with` that made this guard, on this
            // thread (the guard never leaves that call); the C loops leave no
            // section open and a qsbr thread offline.
            unsafe { (self.unregister)() }
            self.flag.with(|f| f.set(false));
        }
    }

    /// The calling thread's registration with liburcu's memb flavor, lent to
    /// the closure of [`MembReader::with`]. `!Send`.
    pub struct MembReader {
        _not_send: PhantomData<*const ()>,
    }

    impl MembReader {
        /// Registers the calling thread (`urcu_memb_register_thread()`), runs
        /// `body`, and unregisters it, also if `body` panics.
        ///
        /// # Panics
        ///
        /// If the thread is already inside a `MembReader::with` (liburcu
        /// would abort).
        pub fn with<R>(body: impl FnOnce(&MembReader) -> R) -> R {
            claim(&MEMB_REGISTERED, "memb", "MembReader");
            // SAFETY: not registered yet (`claim`); the guard unregisters on
            // this thread before `with` returns.
            unsafe { ffi::syncbench_urcu_memb_register_thread() };
            let _registered = Registered {
                unregister: ffi::syncbench_urcu_memb_unregister_thread,
                flag: &MEMB_REGISTERED,
            };
            body(&MembReader {
                _not_send: PhantomData,
            })
        }

        /// Runs `iterations` memb read-side sections over `slot` in C.
        ///
        /// # Safety
        ///
        /// `slot` must point at a live `u64` whenever a section may load it:
        /// a value unpublished from it is freed only after a memb grace
        /// period, and the last one outlives the call.
        pub unsafe fn read_sections(&self, slot: &AtomicPtr<u64>, iterations: u64) {
            // SAFETY: the thread is registered; `slot` is an `AtomicPtr<u64>`,
            // layout-equal to `*mut u64`, which C reads with rcu_dereference
            // (a relaxed load plus dependency ordering); its pointee is live
            // per the caller's contract.
            unsafe { ffi::syncbench_urcu_memb_read_sections(slot.as_ptr(), iterations) }
        }

        /// Runs memb read-side sections over `slot` in C until `stop`;
        /// returns how many.
        ///
        /// # Safety
        ///
        /// As [`MembReader::read_sections`].
        pub unsafe fn read_until(&self, slot: &AtomicPtr<u64>, stop: &AtomicBool) -> u64 {
            // SAFETY: as in `read_sections`; `stop` is an `AtomicBool`,
            // layout-equal to `u8`, which C reads with an atomic load.
            unsafe {
                ffi::syncbench_urcu_memb_read_until(slot.as_ptr(), stop.as_ptr().cast::<u8>())
            }
        }
    }

    /// liburcu's memb `call_rcu_before_fork()`, held until the value drops,
    /// which calls `call_rcu_after_fork_parent()` on the same thread (the
    /// `fork_wait` example times the first against rcu-lite's hook; it
    /// forks nothing). `!Send`.
    pub struct MembCallRcuForkHeld {
        _not_send: PhantomData<*const ()>,
    }

    /// `urcu_memb_call_rcu_before_fork()`: waits until liburcu's memb
    /// call_rcu threads pause between batches, and keeps them paused until
    /// the returned value drops.
    pub fn memb_call_rcu_before_fork() -> MembCallRcuForkHeld {
        // SAFETY: paired with `call_rcu_after_fork_parent()` on this thread
        // by the returned value's drop (it is `!Send`).
        unsafe { ffi::syncbench_urcu_memb_call_rcu_before_fork() };
        MembCallRcuForkHeld {
            _not_send: PhantomData,
        }
    }

    impl Drop for MembCallRcuForkHeld {
        fn drop(&mut self) {
            // SAFETY: after `call_rcu_before_fork()` on this thread (above).
            unsafe { ffi::syncbench_urcu_memb_call_rcu_after_fork_parent() }
        }
    }

    impl MembReader {
        /// Queues a memb `call_rcu()` callback that sleeps `us` microseconds
        /// on liburcu's call_rcu thread (the caller registered, as liburcu
        /// requires).
        ///
        /// # Panics
        ///
        /// If the shim cannot allocate the callback.
        pub fn call_rcu_sleeping(&self, us: u64) {
            // SAFETY: the thread is registered (`self`); the callback owns
            // its allocation and frees it.
            let rc = unsafe { ffi::syncbench_urcu_memb_call_rcu_sleeping(us) };
            assert_eq!(rc, 0, "liburcu shim: out of memory for a call_rcu callback");
        }
    }

    /// The calling thread's registration with liburcu's qsbr flavor, lent to
    /// the closure of [`QsbrReader::with`]. The thread is offline (never
    /// holding up a grace period) except inside [`QsbrReader::read_sections`].
    /// `!Send`.
    pub struct QsbrReader {
        _not_send: PhantomData<*const ()>,
    }

    impl QsbrReader {
        /// Registers the calling thread (`urcu_qsbr_register_thread()`, then
        /// offline), runs `body`, and unregisters it, also if `body` panics.
        ///
        /// # Panics
        ///
        /// If the thread is already inside a `QsbrReader::with` (liburcu
        /// would abort).
        pub fn with<R>(body: impl FnOnce(&QsbrReader) -> R) -> R {
            claim(&QSBR_REGISTERED, "qsbr", "QsbrReader");
            // SAFETY: not registered yet (`claim`); the guard unregisters on
            // this thread before `with` returns.
            unsafe { ffi::syncbench_urcu_qsbr_register_thread() };
            let _registered = Registered {
                unregister: ffi::syncbench_urcu_qsbr_unregister_thread,
                flag: &QSBR_REGISTERED,
            };
            body(&QsbrReader {
                _not_send: PhantomData,
            })
        }

        /// Runs `iterations` qsbr read-side sections over `slot` in C, online
        /// for the loop (`urcu_qsbr_thread_online()` before it, offline
        /// after: two full fences per call, not per section).
        ///
        /// # Safety
        ///
        /// As [`MembReader::read_sections`], for qsbr grace periods.
        pub unsafe fn read_sections(&self, slot: &AtomicPtr<u64>, iterations: u64) {
            // SAFETY: the thread is registered and online throughout the loop,
            // so its reads are protected; `slot` as in `MembReader`.
            unsafe { ffi::syncbench_urcu_qsbr_read_sections(slot.as_ptr(), iterations) }
        }

        /// Runs qsbr read-side sections over `slot` in C until `stop`, online
        /// for the loop and announcing a quiescent state
        /// (`urcu_qsbr_quiescent_state()`) after every 64 sections; returns
        /// how many sections ran.
        ///
        /// # Safety
        ///
        /// As [`QsbrReader::read_sections`].
        pub unsafe fn read_until(&self, slot: &AtomicPtr<u64>, stop: &AtomicBool) -> u64 {
            // SAFETY: as in `read_sections`; `stop` is an `AtomicBool`,
            // layout-equal to `u8`, which C reads with an atomic load.
            unsafe {
                ffi::syncbench_urcu_qsbr_read_until(slot.as_ptr(), stop.as_ptr().cast::<u8>())
            }
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
        let text = why.to_string();
        if DISABLED {
            assert!(text.contains("SYNCBENCH_NO_LIBURCU"), "{text}");
            assert!(why.hint.contains(INSTALL_HINT), "{}", why.hint);
        } else if BROKEN {
            assert!(
                text.contains("was found by pkg-config")
                    && BUILD_ERROR.is_some_and(|e| text.contains(e)),
                "{text}"
            );
            assert!(why.hint.contains(INSTALL_HINT), "{}", why.hint);
        } else {
            assert_eq!(
                why.hint,
                "apt-get install -y liburcu-dev pkg-config, then cargo clean -p bench-suite and build again"
            );
            assert!(
                text.contains("not found by pkg-config")
                    // A linked build has no answer of pkg-config to give.
                    && (LINKED || NOT_FOUND.is_some_and(|e| text.contains(e)))
                    && text.contains(INSTALL_HINT),
                "{text}"
            );
        }
        assert_eq!(availability().is_ok(), LINKED);
    }

    /// liburcu registers for the private expedited command wherever the
    /// kernel offers it (and aborts the process before `main` if that
    /// fails), so where it is offered the memb flavor reports it: a shim
    /// that read the library's flag wrongly would say "no membarrier".
    #[cfg(syncbench_liburcu)]
    #[test]
    fn liburcu_memb_reports_the_membarrier_it_took() {
        use membarrier_sim::sys::{Command, query};
        let mode = memb_fence_mode();
        if query().contains(Command::PrivateExpedited) {
            assert_eq!(mode, "membarrier, private expedited");
        } else {
            assert!(!mode.contains("private expedited"), "{mode}");
        }
    }

    #[cfg(syncbench_liburcu)]
    #[test]
    fn linked_liburcu_reads_and_synchronizes() {
        let value = Box::into_raw(Box::new(7u64));
        let slot = AtomicPtr::new(value);
        MembReader::with(|memb| {
            // SAFETY: `slot` points at `value` until the end of the test.
            unsafe { memb.read_sections(&slot, 1000) };
            let stop = AtomicBool::new(true);
            // SAFETY: as above.
            let read = unsafe { memb.read_until(&slot, &stop) };
            assert_eq!(read, 0);
        });
        QsbrReader::with(|qsbr| {
            // SAFETY: as above.
            unsafe { qsbr.read_sections(&slot, 1000) }
        });
        memb_synchronize_rcu();
        qsbr_synchronize_rcu();
        // SAFETY: from Box::into_raw above; no reader remains.
        drop(unsafe { Box::from_raw(value) });
    }

    /// Set in the child process of
    /// [`memb_synchronize_rcu_runs_a_grace_period`].
    #[cfg(syncbench_liburcu)]
    const GRACE_PERIOD_CHILD: &str = "SYNCBENCH_LIBURCU_GRACE_PERIOD_CHILD";

    /// `memb_synchronize_rcu` runs a grace period: with a thread registered
    /// (this one, outside any section), liburcu flips the phase bit of its
    /// grace-period counter, `urcu_memb_gp.ctr` (exported for the inlined
    /// read lock, which copies it), once per grace period. It runs in a child
    /// process of its own, where no other thread's grace period can be in
    /// flight (liburcu lets concurrent callers share one). Catches 'replace
    /// linked::memb_synchronize_rcu with ()', which every test let live.
    #[cfg(syncbench_liburcu)]
    #[test]
    fn memb_synchronize_rcu_runs_a_grace_period() {
        if std::env::var_os(GRACE_PERIOD_CHILD).is_none() {
            return test_support::in_a_child_process(
                "liburcu::tests::memb_synchronize_rcu_runs_a_grace_period",
                GRACE_PERIOD_CHILD,
                "1",
            );
        }
        unsafe extern "C" {
            /// The first field of liburcu's `struct urcu_gp` (an `unsigned
            /// long`).
            static urcu_memb_gp: std::sync::atomic::AtomicUsize;
        }
        // SAFETY: liburcu-memb is linked (the shims' inlined read lock reads
        // this counter), and liburcu writes it with single-word stores
        // (`CMM_STORE_SHARED`).
        let counter = || unsafe { urcu_memb_gp.load(std::sync::atomic::Ordering::SeqCst) };
        MembReader::with(|_| each_call_moves(counter, memb_synchronize_rcu));
    }

    /// Calls `synchronize` three times and asserts that each call moved
    /// liburcu's grace-period `counter`.
    #[cfg(syncbench_liburcu)]
    fn each_call_moves(counter: impl Fn() -> usize, synchronize: fn()) {
        for _ in 0..3 {
            let before = counter();
            synchronize();
            assert_ne!(
                before,
                counter(),
                "no grace period: the grace-period counter did not move"
            );
        }
    }

    /// `qsbr_synchronize_rcu` runs a grace period: with a thread registered
    /// (this one, offline outside the read loops), liburcu's qsbr flavor adds
    /// `URCU_QSBR_GP_CTR` to its grace-period counter, `urcu_qsbr_gp.ctr`
    /// (exported for the inlined quiescent-state and online calls, which copy
    /// it), once per grace period on 64-bit targets (32-bit ones flip the
    /// same bit twice, leaving the counter as it was, hence the cfg). In a
    /// child process of its own, as the memb test above. Catches 'replace
    /// linked::qsbr_synchronize_rcu with ()', which every other test let
    /// live.
    #[cfg(all(syncbench_liburcu, target_pointer_width = "64"))]
    #[test]
    fn qsbr_synchronize_rcu_runs_a_grace_period() {
        if std::env::var_os(GRACE_PERIOD_CHILD).is_none() {
            return test_support::in_a_child_process(
                "liburcu::tests::qsbr_synchronize_rcu_runs_a_grace_period",
                GRACE_PERIOD_CHILD,
                "1",
            );
        }
        unsafe extern "C" {
            /// The first field of liburcu's `struct urcu_gp` (an `unsigned
            /// long`).
            static urcu_qsbr_gp: std::sync::atomic::AtomicUsize;
        }
        // SAFETY: liburcu-qsbr is linked (the shims' inlined quiescent-state
        // and online calls read this counter), and liburcu writes it with
        // single-word stores (`CMM_STORE_SHARED`).
        let counter = || unsafe { urcu_qsbr_gp.load(std::sync::atomic::Ordering::SeqCst) };
        QsbrReader::with(|_| each_call_moves(counter, qsbr_synchronize_rcu));
    }

    /// Grace periods go on while threads are registered but not reading: a
    /// registration that is still alive, or one whose closure panicked (the
    /// thread was unregistered on the way out, not left on liburcu's list).
    #[cfg(syncbench_liburcu)]
    #[test]
    fn idle_and_unwound_registrations_do_not_hold_up_grace_periods() {
        use std::sync::Barrier;
        let (registered, done) = (Barrier::new(2), AtomicBool::new(false));
        std::thread::scope(|s| {
            s.spawn(|| {
                QsbrReader::with(|_| {
                    MembReader::with(|_| {
                        registered.wait();
                        while !done.load(std::sync::atomic::Ordering::Acquire) {
                            std::thread::sleep(std::time::Duration::from_millis(1));
                        }
                    })
                })
            });
            registered.wait();
            // Before the qsbr shim took threads offline, this never returned.
            let waited = std::panic::catch_unwind(|| {
                test_support::within_a_deadline(
                    "grace periods beside an idle registered thread",
                    std::time::Duration::from_secs(20),
                    || {
                        qsbr_synchronize_rcu();
                        memb_synchronize_rcu();
                    },
                )
            });
            // Let the registered thread go before failing, so the scope ends.
            done.store(true, std::sync::atomic::Ordering::Release);
            if let Err(panic) = waited {
                std::panic::resume_unwind(panic);
            }
        });
        std::thread::spawn(|| {
            let unwound = std::panic::catch_unwind(|| {
                MembReader::with(|_| QsbrReader::with(|_| panic!("inside with")))
            });
            assert!(unwound.is_err());
        })
        .join()
        .unwrap();
        // A second thread's registration reuses the first one's memory.
        std::thread::spawn(|| MembReader::with(|_| QsbrReader::with(|_| ())))
            .join()
            .unwrap();
        qsbr_synchronize_rcu();
        memb_synchronize_rcu();
    }

    /// A second registration of a thread with one flavor panics naming the
    /// misuse (liburcu itself aborts the process); the first stays usable,
    /// and once it is over the thread may register again.
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
                MembReader::with(|first| {
                    let twice = std::panic::catch_unwind(|| MembReader::with(|_| ()));
                    let why = message(twice.unwrap_err());
                    assert!(
                        why.contains(
                            "MembReader::with() inside MembReader::with() on one thread: the \
                             thread is already registered with the memb flavor"
                        ),
                        "{why}"
                    );
                    // SAFETY: `slot` points at `value` until the end.
                    unsafe { first.read_sections(&slot, 10) };
                    // The other flavor is a registration of its own.
                    QsbrReader::with(|_| {
                        let twice = std::panic::catch_unwind(|| QsbrReader::with(|_| ()));
                        let why = message(twice.unwrap_err());
                        assert!(
                            why.contains(
                                "QsbrReader::with() inside QsbrReader::with() on one thread: \
                                 the thread is already registered with the qsbr flavor"
                            ),
                            "{why}"
                        );
                    });
                });
                MembReader::with(|again| {
                    // SAFETY: as above.
                    unsafe { again.read_sections(&slot, 10) }
                });
                QsbrReader::with(|_| ());
            });
        });
        memb_synchronize_rcu();
        // SAFETY: from Box::into_raw above; no reader remains.
        drop(unsafe { Box::from_raw(value) });
    }
}
