//! The qsbr flavor: read-side sections that cost nothing; registered threads
//! announce quiescent states instead.
//!
//! Kernel/liburcu counterpart: liburcu's `urcu-qsbr` flavor
//! (`rcu_quiescent_state()`, `rcu_thread_offline()`/`rcu_thread_online()`) and
//! the kernel's non-preemptible RCU, where every context switch is a quiescent
//! state.
//!
//! # Model
//!
//! A [`QsbrThread`] is a registration: while it is online, its thread may hold
//! references obtained under any of its guards, so every grace period waits for
//! it to announce a quiescent state ([`QsbrThread::quiescent_state`]) or go
//! offline. Announcing takes `&mut self`, so the borrow checker proves that no
//! guard (which borrows the registration) is alive across it. A `QsbrThread`
//! that code outside this module can reach is online. There are two ways to
//! go offline:
//!
//! - [`QsbrThread::while_offline`] runs a closure offline (as do the waits of the
//!   registration's own `synchronize_rcu` and `rcu_barrier`); a drop guard
//!   that no caller can forget brings it back online when the closure returns
//!   or unwinds.
//! - [`QsbrThread::offline`] (`rcu_thread_offline()`) consumes the
//!   registration and returns an [`OfflineQsbrThread`], which has no
//!   `read_lock`; its [`OfflineQsbrThread::online`]
//!   (`rcu_thread_online()`) gives the `QsbrThread` back. Consuming it proves
//!   that no guard is alive, and forgetting the offline one only leaks a
//!   record that no grace period waits for. This form suits a loop whose
//!   blocking call is not one closure (an event loop, a `select!`).
//!
//! So the read side does no run-time work at all: which state a registration
//! is in is a matter of its type.
//!
//! Each registration has its own record (see `record.rs`): online, its word is
//! the engine's `gp_word` as of the last quiescent state (nesting 1); offline,
//! nesting 0. Announcing a quiescent state is one Acquire load of `gp_word` and,
//! if it moved, a Release store, `fence::full()` and the check of the
//! record's `wake_driver` flag.
//! A thread may hold several registrations; each is credited on its own.
//!
//! # Fences
//!
//! A qsbr reader fences only where its word changes: at a quiescent state
//! that moved it (at most once per grace period), going offline and coming
//! online. So it can afford `fence::full()` there, as liburcu's qsbr flavor
//! issues `smp_mb()`, and the grace periods pair with it through
//! `fence::full()` as well (`ReaderFence::Full`), with no `membarrier()`
//! that would interrupt every CPU running a reader. The memb flavor's readers
//! fence at every section, so there the pair is light and heavy.
//!
//! # Misuse
//!
//! The free [`synchronize_rcu`] panics when the calling thread has an online
//! registration: the grace period would wait for that registration's thread,
//! which is the caller (deadlock). [`QsbrThread::synchronize_rcu`] takes the
//! registration offline for the wait instead, as liburcu does.
//!
//! `mem::forget` of a [`QsbrThread`] leaves its record online for good, and
//! every later grace period waits for it forever (as a liburcu thread that
//! never unregisters and never goes offline); a stall warning on stderr names
//! the thread after 21 s (see the crate docs). That is a hang, not a
//! use-after-free; there is no other way to leave a registration in a state
//! its guards cannot see.

use crate::config::GpConfig;
use crate::engine::{GpCounts, ReaderFence};
use crate::flavor::Qsbr;
use crate::poll::GpState;
use crate::record::{NEST_ONE, Record};
use std::cell::Cell;
use std::fmt;
use std::marker::PhantomData;
use std::sync::atomic::Ordering::{Acquire, Relaxed, Release};

/// The fence pair of qsbr readers and grace periods: `fence::full()` on both
/// sides (see `ReaderFence::Full`).
const READER_FENCE: ReaderFence = ReaderFence::Full;

crate::engine::flavor_engine!(READER_FENCE);

// The thread's own record: used when the thread drives grace periods, never
// online (registrations have records of their own).
crate::thread_record::thread_record!(|_record| {});

#[cfg(not(loom))]
std::thread_local! {
    /// Online registrations of this thread.
    static ONLINE: Cell<u32> = const { Cell::new(0) };
}
#[cfg(loom)]
loom::thread_local! {
    /// Online registrations of this thread.
    static ONLINE: Cell<u32> = Cell::new(0);
}

pub(crate) fn online_count() -> u32 {
    ONLINE.with(Cell::get)
}

/// Adds `delta` to the calling thread's online registrations. Going online
/// counts up before [`mark_online`], going offline counts down after
/// `mark_offline`, so the count never runs below the online records: a
/// `synchronize_rcu` that a signal handler runs in between panics as a call
/// from an online thread instead of waiting forever for this thread.
fn add_online(delta: i32) {
    ONLINE.with(|c| c.set(c.get().wrapping_add_signed(delta)));
}

/// A thread's registration with the qsbr flavor; online while it exists,
/// except inside [`QsbrThread::while_offline`] (and as the [`OfflineQsbrThread`]
/// that [`QsbrThread::offline`] turns it into). `!Send` and `!Sync`.
///
/// A registration cannot leave its thread: it counts in the thread's online
/// registrations, which the misuse checks of that thread's calls read.
///
/// ```compile_fail,E0277
/// let registration = rcu_lite::qsbr::QsbrThread::register();
/// // `*const ()` cannot be sent between threads safely
/// std::thread::spawn(move || drop(registration));
/// ```
#[must_use = "a registration is online while it lives: dropping it at once unregisters"]
pub struct QsbrThread {
    /// Online (nesting 1) whenever a method other than `while_offline` can see it.
    record: &'static Record,
    _not_send: PhantomData<*const ()>,
}

impl fmt::Debug for QsbrThread {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("QsbrThread").finish_non_exhaustive()
    }
}

/// A registration taken offline by [`QsbrThread::offline`]
/// (`rcu_thread_offline()`): no grace period waits for it, and it offers no
/// read-side section. [`OfflineQsbrThread::online`] brings it back.
/// Dropping it unregisters, as dropping a [`QsbrThread`] does; forgetting it
/// leaks a record that stays offline, so nothing waits for it either.
///
/// It has no read-side section:
///
/// ```compile_fail,E0599
/// let offline = rcu_lite::qsbr::QsbrThread::register().offline();
/// // no method named `read_lock` found
/// let _guard = offline.read_lock();
/// ```
///
/// and no guard of the registration survives going offline:
///
/// ```compile_fail,E0505
/// let registration = rcu_lite::qsbr::QsbrThread::register();
/// let guard = registration.read_lock();
/// // cannot move out of `registration` because it is borrowed
/// let offline = registration.offline();
/// drop(guard);
/// ```
///
/// `!Send`, as the registration it came from:
///
/// ```compile_fail,E0277
/// let offline = rcu_lite::qsbr::QsbrThread::register().offline();
/// // `*const ()` cannot be sent between threads safely
/// std::thread::spawn(move || drop(offline.online()));
/// ```
pub struct OfflineQsbrThread {
    /// Offline (nesting 0) for as long as this value owns it.
    record: &'static Record,
    _not_send: PhantomData<*const ()>,
}

impl fmt::Debug for OfflineQsbrThread {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OfflineQsbrThread").finish_non_exhaustive()
    }
}

/// A qsbr read-side section: free. It borrows the registration, so no
/// quiescent state can be announced while it lives:
///
/// ```compile_fail,E0502
/// let mut registration = rcu_lite::qsbr::QsbrThread::register();
/// let guard = registration.read_lock();
/// // cannot borrow `registration` as mutable: `guard` borrows it
/// registration.quiescent_state();
/// drop(guard);
/// ```
///
/// `!Send`: it protects references for its own thread's registration only,
/// so it cannot go to another thread, even one that the registration
/// outlives.
///
/// ```compile_fail,E0277
/// let registration = rcu_lite::qsbr::QsbrThread::register();
/// let guard = registration.read_lock();
/// std::thread::scope(|s| {
///     // `*const ()` cannot be shared between threads safely
///     s.spawn(move || drop(guard));
/// });
/// ```
#[must_use = "a guard only protects references while it is alive"]
pub struct Guard<'t> {
    _thread: PhantomData<&'t QsbrThread>,
}

impl fmt::Debug for Guard<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("qsbr::Guard").finish_non_exhaustive()
    }
}

/// Brings a registration that [`QsbrThread::while_offline`] took offline back
/// online when dropped, also when the closure unwinds. Private, so nothing can
/// forget it.
struct BackOnline<'t> {
    record: &'t Record,
}

impl QsbrThread {
    /// Registers the calling thread (`rcu_register_thread()`); the
    /// registration starts online.
    pub fn register() -> QsbrThread {
        let record = engine().registry().acquire();
        add_online(1);
        mark_online(record);
        QsbrThread {
            record,
            _not_send: PhantomData,
        }
    }

    /// Enters a read-side section (`rcu_read_lock()`). It costs nothing: a
    /// registration that callers can borrow is online, and the guard's
    /// borrow keeps every quiescent state out until it is dropped.
    #[inline(always)]
    pub fn read_lock(&self) -> Guard<'_> {
        Guard {
            _thread: PhantomData,
        }
    }

    /// Announces a quiescent state (`rcu_quiescent_state()`): the thread holds
    /// no reference obtained before this call.
    #[inline]
    pub fn quiescent_state(&mut self) {
        // Acquire pairs with the Release store of `gp_word` in
        // `Engine::grace_period`: what this thread reads from now on includes
        // every update published before that grace period.
        let current = engine().reader.gp_word.load(Acquire);
        // Relaxed: only this thread writes its word.
        if self.record.word.load(Relaxed) != current {
            report(self.record, current);
        }
    }

    /// Runs `blocking` with the registration offline (`rcu_thread_offline()`
    /// before it, `rcu_thread_online()` after it): meanwhile it holds up no
    /// grace period, so `blocking` may wait for long, or wait for a grace
    /// period itself. The registration is back online when `blocking`
    /// returns or unwinds.
    ///
    /// ```
    /// use rcu_lite::qsbr::{self, QsbrThread};
    ///
    /// let mut registration = QsbrThread::register();
    /// // A blocking wait, here for a grace period: with the registration
    /// // online, qsbr::synchronize_rcu() would panic (it would wait for
    /// // this very thread).
    /// registration.while_offline(qsbr::synchronize_rcu);
    /// let _guard = registration.read_lock();
    /// ```
    pub fn while_offline<R>(&mut self, blocking: impl FnOnce() -> R) -> R {
        mark_offline(self.record);
        add_online(-1);
        let _back_online = BackOnline {
            record: self.record,
        };
        blocking()
    }

    /// Takes the registration offline (`rcu_thread_offline()`) until
    /// [`OfflineQsbrThread::online`]: meanwhile it holds up no grace
    /// period, and the thread may block or wait for a grace period itself.
    /// Consuming `self` ends every guard first, as `quiescent_state` does.
    ///
    /// Use it where the offline stretch is not one closure, as in an event
    /// loop; otherwise [`QsbrThread::while_offline`] reads more simply.
    ///
    /// ```
    /// use rcu_lite::qsbr::{self, QsbrThread};
    /// use std::sync::mpsc;
    ///
    /// let (tx, rx) = mpsc::channel();
    /// tx.send(1).unwrap();
    /// drop(tx);
    /// let mut registration = QsbrThread::register();
    /// loop {
    ///     // Offline while blocked in recv(), online again to handle the
    ///     // message: the two calls sit in different arms.
    ///     let offline = registration.offline();
    ///     let message = rx.recv();
    ///     qsbr::synchronize_rcu(); // allowed: no registration is online
    ///     registration = offline.online();
    ///     match message {
    ///         Ok(n) => {
    ///             let _guard = registration.read_lock();
    ///             assert_eq!(n, 1);
    ///         }
    ///         Err(_) => break,
    ///     }
    /// }
    /// ```
    #[must_use = "dropping the offline registration unregisters the thread; \
                  call online() to read again"]
    pub fn offline(self) -> OfflineQsbrThread {
        let record = self.record;
        // Not dropped: that would unregister. The record changes hands.
        std::mem::forget(self);
        mark_offline(record);
        add_online(-1);
        OfflineQsbrThread {
            record,
            _not_send: PhantomData,
        }
    }

    /// Waits for a grace period, taking this registration offline meanwhile
    /// (the call is a quiescent state for it).
    ///
    /// # Panics
    ///
    /// If the thread has another online registration: the grace period would
    /// wait for it, that is, for the caller (deadlock). Between the fork
    /// hooks and inside an [`Rcu::update`](crate::Rcu::update) function, as
    /// [`synchronize_rcu`].
    pub fn synchronize_rcu(&mut self) {
        self.while_offline(|| synchronize(false, "QsbrThread::synchronize_rcu"));
    }

    /// [`QsbrThread::synchronize_rcu`], expedited (see
    /// [`synchronize_rcu_expedited`]).
    ///
    /// # Panics
    ///
    /// As [`QsbrThread::synchronize_rcu`].
    pub fn synchronize_rcu_expedited(&mut self) {
        self.while_offline(|| synchronize(true, "QsbrThread::synchronize_rcu_expedited"));
    }

    /// Waits until every qsbr callback queued before this call has run (see
    /// [`rcu_barrier`]), taking this registration offline meanwhile, as
    /// [`QsbrThread::synchronize_rcu`] does.
    ///
    /// # Panics
    ///
    /// If the thread has another online registration (the callbacks' grace
    /// period would wait for the caller), and otherwise as [`rcu_barrier`].
    pub fn rcu_barrier(&mut self) {
        self.while_offline(|| barrier("QsbrThread::rcu_barrier"));
    }
}

impl OfflineQsbrThread {
    /// Brings the registration back online (`rcu_thread_online()`) with a
    /// fresh snapshot: grace periods that start from now on wait for it
    /// again, and what it reads includes every update published before the
    /// grace periods that ran while it was offline.
    #[must_use = "dropping the registration unregisters the thread (and takes it offline \
                  again); keep it to read"]
    pub fn online(self) -> QsbrThread {
        let record = self.record;
        // Not dropped: that would unregister. The record changes hands.
        std::mem::forget(self);
        add_online(1);
        mark_online(record);
        QsbrThread {
            record,
            _not_send: PhantomData,
        }
    }
}

impl Drop for OfflineQsbrThread {
    fn drop(&mut self) {
        // Offline already, and not counted among the thread's online
        // registrations.
        engine().registry().release(self.record);
    }
}

impl Drop for QsbrThread {
    fn drop(&mut self) {
        mark_offline(self.record);
        add_online(-1);
        engine().registry().release(self.record);
    }
}

impl Drop for BackOnline<'_> {
    fn drop(&mut self) {
        // `while_offline` took it offline, and its `&mut` borrow kept every other
        // use of the registration out since.
        add_online(1);
        mark_online(self.record);
    }
}

/// Stores quiescent-state word `word` into `record`.
#[inline]
fn report(record: &Record, word: u64) {
    // Release pairs with the Acquire loads of record words in the scan and
    // rechecks: everything before the quiescent state happens before the
    // grace period ends.
    record.word.store(word, Release);
    // Orders the store before the load of the wake-up flag; pairs with the
    // engine's fence in `Engine::sleep_for_holdouts` or `Engine::fqs_wait`'s
    // early wake (`ReaderFence::Full`).
    READER_FENCE.reader_side();
    engine().wake_driver_if_flagged(record);
}

fn mark_online(record: &Record) {
    // Acquire: as in `quiescent_state`.
    let current = engine().reader.gp_word.load(Acquire);
    debug_assert_eq!(current & NEST_ONE, NEST_ONE);
    // Release: a scan that reads this word credits the thread, so what came
    // before must happen before that scan. After an offline period the full
    // fence of `report` already orders it, but a recycled record's previous
    // owner is ordered before us only by our Acquire claim of the record
    // (`Registry::acquire`), which a Relaxed store would not pass on.
    record.word.store(current, Release);
    #[cfg(all(test, not(loom)))]
    tests::interrupt_after_marking_online();
    // Orders the store before the thread's next reads; pairs with the
    // engine's fence in `Engine::grace_period` (`ReaderFence::Full`). A
    // grace period's scan that misses this store (and credits the thread as
    // offline) fenced before this fence, so those reads see its updates.
    READER_FENCE.reader_side();
}

fn mark_offline(record: &Record) {
    report(record, 0);
}

/// Waits for a grace period (`synchronize_rcu()`), from a thread with no
/// online registration. Concurrent callers share grace periods.
///
/// # Panics
///
/// If the calling thread has an online [`QsbrThread`]: its whole online time
/// is a read-side section, and the grace period would wait for it forever.
/// Use [`QsbrThread::synchronize_rcu`] or go offline first. Also between the
/// calling thread's [`fork::before_fork`](crate::fork::before_fork) and
/// `after_fork_*`: a reader of another thread may then be waiting in
/// `call_rcu()` without having reported a quiescent state. And inside an
/// [`Rcu::update`](crate::Rcu::update) function: a reader may be waiting for
/// that cell's update lock without having reported one.
///
/// Not caught, and a hang: a caller holding a lock (a mutex, a `qrwlock`
/// guard) that an online reader waits for before its next quiescent state,
/// or a caller inside a memb read-side section while an online reader waits
/// for a memb grace period (`memb::synchronize_rcu()`) before its next one.
/// Release such locks, and leave memb sections, first.
pub fn synchronize_rcu() {
    synchronize(false, "synchronize_rcu");
}

/// Like [`synchronize_rcu`], but the grace period it needs runs at once, with
/// adaptive FQS and quick QS (`synchronize_rcu_expedited()`).
///
/// # Panics
///
/// As [`synchronize_rcu`].
pub fn synchronize_rcu_expedited() {
    synchronize(true, "synchronize_rcu_expedited");
}

fn synchronize(expedited: bool, name: &'static str) {
    refuse_to_wait_here(name);
    engine().synchronize(thread_record(), expedited);
}

/// Panics if a grace period waited for here, by `name`, could never end: the
/// calling thread has an online registration, is between the fork hooks, or
/// runs an [`Rcu::update`](crate::Rcu::update) function.
pub(crate) fn refuse_to_wait_here(name: &'static str) {
    #[cfg(not(loom))]
    crate::fork::refuse_between_hooks("qsbr", crate::fork::Refused::Waiting(name));
    crate::cell::refuse_to_wait_in_an_update("qsbr", name);
    if online_count() != 0 {
        panic!(
            "{path} called while this thread has {which} online QsbrThread, which is inside a \
             read-side critical section until its next quiescent state: the grace period would \
             wait for this very thread forever (deadlock); {advice}",
            path = crate::api_path("qsbr", name),
            which = online_registration(name),
            advice = wait_advice(name, "synchronize_rcu"),
        );
    }
}

/// "an", or "another" for a `QsbrThread` method, which took its own
/// registration offline before it waits: only another one can be online.
fn online_registration(name: &str) -> &'static str {
    if name.starts_with("QsbrThread::") {
        "another"
    } else {
        "an"
    }
}

/// What to do instead of the refused wait `name`: a `QsbrThread` method
/// already waits offline, so only taking the other registration offline
/// helps; a cell's method has no registration's counterpart, so
/// `while_offline` does; elsewhere, the registration's own method
/// (`method`) or `while_offline` does.
fn wait_advice(name: &str, method: &str) -> String {
    if name.starts_with("QsbrThread::") {
        "take the other registration offline first (offline() or while_offline)".to_owned()
    } else if name.starts_with("Rcu::") || name.starts_with("Retired::") {
        "call it inside registration.while_offline(|| ...)".to_owned()
    } else {
        format!(
            "call QsbrThread::{method}() on the registration, or wait inside \
             registration.while_offline(|| ...)"
        )
    }
}

/// A cookie for the grace period whose completion means that every
/// read-side section that began before this call has ended
/// (`get_state_synchronize_rcu()`). Never blocks, and may be called
/// anywhere, with an online registration too.
///
/// It starts no grace period: the cookie elapses once a
/// [`synchronize_rcu`] caller or the callback thread has driven one.
/// [`start_poll_synchronize_rcu`] makes sure one runs.
///
/// ```
/// use rcu_lite::qsbr;
///
/// let state = qsbr::get_state_synchronize_rcu();
/// qsbr::synchronize_rcu();
/// assert!(qsbr::poll_state_synchronize_rcu(state));
/// ```
#[must_use = "the cookie is what poll_state_synchronize_rcu() checks"]
pub fn get_state_synchronize_rcu() -> GpState<Qsbr> {
    GpState::new(engine().poll_target())
}

/// [`get_state_synchronize_rcu`], and a grace period that elapses the
/// cookie runs without any other caller: queues a callback that does
/// nothing, as [`call_rcu`] would, whose grace period the callback thread
/// drives (`start_poll_synchronize_rcu()`). Only when no callback is queued:
/// one that is already gets such a grace period, so polls while a grace
/// period is held up queue one callback in all. Never waits for a grace
/// period; like `call_rcu()`, it may wait for the callback-queue lock (held
/// while another thread is between its fork hooks) and, on a flavor's first
/// call, for the start of its callback worker.
///
/// Freeing an unpublished object once a grace period has elapsed, without
/// waiting for one:
///
/// ```
/// use rcu_lite::qsbr;
/// use std::sync::atomic::{AtomicPtr, Ordering};
///
/// let shared = AtomicPtr::new(Box::into_raw(Box::new(1u64)));
/// let old = shared.swap(Box::into_raw(Box::new(2u64)), Ordering::AcqRel);
/// let state = qsbr::start_poll_synchronize_rcu();
/// // ... other work, then, at some later point: if the grace period is
/// // not over yet, keep `old` for a later look, or wait for it as here. (A
/// // loop of polls would spin, and for good on a thread whose own read
/// // section or online registration holds the grace period up;
/// // cond_synchronize_rcu refuses that misuse with a panic.)
/// if !qsbr::poll_state_synchronize_rcu(state) {
///     qsbr::cond_synchronize_rcu(state);
/// }
/// // SAFETY: `old` was unpublished before the cookie was taken, and the
/// // cookie's grace period has elapsed: no reader can still hold it.
/// drop(unsafe { Box::from_raw(old) });
/// # drop(unsafe { Box::from_raw(shared.load(Ordering::Acquire)) });
/// ```
///
/// # Panics
///
/// As [`call_rcu`]. Where `call_rcu` would not panic because the calling
/// thread already unwinds (between the fork hooks, or with a callback
/// thread that cannot be started), the cookie comes back with no grace
/// period driven for it: it elapses only once another caller's grace
/// period does.
pub fn start_poll_synchronize_rcu() -> GpState<Qsbr> {
    crate::poll::start_poll(&engine().callbacks, synchronize_rcu)
}

/// Whether the grace period `state` names has completed
/// (`poll_state_synchronize_rcu()`). Once it says `true`, it always will,
/// and every read-side section that began before the call that made
/// `state` has ended. Never blocks, and may be called anywhere, with an
/// online registration too; but while this thread's registration stays
/// online without a quiescent state, the cookie cannot elapse (its online
/// time is a section that began before the cookie).
#[must_use = "polling only reads whether the grace period ended"]
pub fn poll_state_synchronize_rcu(state: GpState<Qsbr>) -> bool {
    engine().poll_done(state.target())
}

/// Waits as [`synchronize_rcu`] does, unless the grace period `state` names
/// has already completed (`cond_synchronize_rcu()`). A thread with an online
/// [`QsbrThread`] calls it through [`QsbrThread::while_offline`]:
/// `registration.while_offline(|| qsbr::cond_synchronize_rcu(state))`.
///
/// # Panics
///
/// As [`synchronize_rcu`], whether or not it would have to wait, so that
/// the misuse shows the first time.
pub fn cond_synchronize_rcu(state: GpState<Qsbr>) {
    crate::poll::cond_synchronize(state);
}

/// Runs `callback` on the flavor's callback thread after a grace period that
/// begins after this call (`call_rcu()`).
///
/// `callback` must return outside every memb read-side section and with no
/// qsbr registration online on the callback thread: one left behind would
/// hold up every later grace period, so the worker aborts the process with a
/// message naming it.
///
/// Callbacks wait in memory until their grace period ends, without bound:
/// while a reader holds a grace period up (a section that never ends, a
/// qsbr thread that stays online), every `call_rcu()` adds its callback to
/// the queue, as the kernel's does. [`callbacks_pending`] shows the
/// backlog; a writer that may outpace its readers can wait on
/// [`rcu_barrier`] past a bound. A callback that panics is reported on
/// stderr and the worker goes on, with `panic = "unwind"`; with
/// `panic = "abort"` it aborts the process.
///
/// Callbacks still queued when the process exits (`main` returns, or
/// `std::process::exit`) never run and are not dropped: call
/// [`rcu_barrier`] first where their work matters (a `Drop` that flushes or
/// closes something). It works from an exit-time destructor of a main-thread
/// thread-local or an `atexit` handler too.
///
/// # Panics
///
/// Between the calling thread's [`fork::before_fork`](crate::fork::before_fork)
/// and `after_fork_*` (it would wait for the queue lock the thread holds);
/// `callback` is then leaked, neither run nor dropped (what it owns may
/// still be reachable by readers). If the callback thread cannot be started (the system refuses a new
/// thread): `callback` is queued all the same, and runs once a later
/// `call_rcu()` or [`rcu_barrier`] of this flavor starts the thread.
///
/// Neither panics while the calling thread is already unwinding (a drop that
/// a panic runs), where a second panic would abort the process: a failed
/// start is reported on stderr instead (the callback stays queued), and
/// between the fork hooks the refusal returns, with the callback leaked as
/// above.
pub fn call_rcu(callback: impl FnOnce() + Send + 'static) {
    engine()
        .callbacks
        .enqueue(Box::new(callback), synchronize_rcu, "qsbr");
}

/// Waits until every callback queued by [`call_rcu`] before this call has run
/// (`rcu_barrier()`). With none queued and no batch running, returns at once.
///
/// # Panics
///
/// If called from inside a qsbr RCU callback (it would wait for itself), or while
/// the thread has an online [`QsbrThread`] (the callbacks' grace period would
/// wait for this thread), inside an [`Rcu::update`](crate::Rcu::update)
/// function (a callback may be waiting for that cell's update lock), from
/// inside a memb callback while a qsbr callback
/// waits in `memb::rcu_barrier()` (each worker would wait for the other),
/// between the fork hooks, or if the callback thread cannot be started (as
/// [`call_rcu`]). Unlike `call_rcu`, also while the calling thread unwinds
/// (a drop that a panic runs), which aborts the process: between the hooks,
/// or with no callback thread, nobody would run the callbacks it waits for.
///
/// Waits forever, without a panic, if a queued qsbr callback waits for memb
/// (`memb::rcu_barrier()`, `memb::synchronize_rcu()`) and this thread is
/// inside a memb read-side section that the callback's memb grace period
/// waits for: leave it first. Likewise if a queued callback (or the drop of
/// a value `Rcu::replace` deferred) takes a lock this thread holds. A
/// callback that never returns stalls every later callback and barrier of
/// the flavor.
pub fn rcu_barrier() {
    barrier("rcu_barrier");
}

fn barrier(name: &'static str) {
    // First: inside an update function, the advice of the message below
    // (`QsbrThread::rcu_barrier()`) would be refused too.
    crate::cell::refuse_to_wait_in_an_update("qsbr", name);
    if online_count() != 0 {
        panic!(
            "{path} called while this thread has {which} online QsbrThread: the callbacks' \
             grace period would wait for this very thread forever (deadlock); {advice}",
            path = crate::api_path("qsbr", name),
            which = online_registration(name),
            advice = wait_advice(name, "rcu_barrier"),
        );
    }
    engine().callbacks.barrier(synchronize_rcu, "qsbr", name);
}

/// Sets how this flavor's grace periods are driven, returning the previous
/// settings.
///
/// A [`Fqs::FixedInterval`](crate::Fqs::FixedInterval) under the timer's
/// slack (about 50 us) rescans about that often, and a long one makes even a
/// grace period nobody holds up last that long (its first wait never ends
/// early) wherever another thread holds a record (or quick QS is off), as it
/// does every `call_rcu()` batch and `rcu_barrier()`. Setting
/// [`GpConfig::DEFAULT`] again does not shorten a wait already begun; an
/// expedited grace period does.
///
/// # Panics
///
/// With `Fqs::FixedInterval(Duration::ZERO)`: it asks for scans without
/// waiting between them, which the driver never does (every FQS wait that
/// does not end early sleeps, at least 50 us).
pub fn configure(config: GpConfig) -> GpConfig {
    engine().configure(config)
}

/// The settings the next grace period of this flavor will use.
pub fn config() -> GpConfig {
    engine().config()
}

/// Starts this flavor's grace-period worker thread now, if it does not run
/// yet, and returns whether it runs (false if the system refused the thread).
/// It returns once the thread runs, so a `fork()` right after it does not
/// copy the thread's start-up half done (see [`fork`](crate::fork)); and so
/// it waits for ever where no thread can start meanwhile, as in a shared
/// library's constructor on glibc before 2.35 (the loader's lock).
///
/// Callers drive their own grace periods while they come alone; the worker
/// takes over when many wait at once, and its thread starts then, inside
/// that grace period. A program that times its first crowded
/// `synchronize_rcu()` calls, or cannot afford a thread spawn inside one,
/// starts it here first. Not under loom, which has no worker thread.
///
/// The thread (`rcu-lite-qsbr-gp`; `/proc`, `top` and `pgrep` show the
/// kernel's 15 bytes of it, `rcu-lite-qsbr-g`) gets the scheduling policy,
/// priority and allowed CPUs of the thread that starts it, here or in a crowded
/// `synchronize_rcu()`, and its cgroup and seccomp filter (a sandbox put on
/// that thread alone passes on to the worker); not its signal
/// mask (the worker blocks every signal sent to the process, all but the
/// faults) nor its timer slack (the kernel's default, 50 us). The same
/// holds for the callback worker. The callers it serves sleep until it completes
/// their grace period, so a program with real-time (`SCHED_FIFO`,
/// `SCHED_RR`) callers starts it here from a thread at the priority of its
/// highest-priority caller: below that, on a CPU that threads at or above
/// its own priority keep busy, it does not run, and they wait for as long
/// as those threads run (see docs/rcu-lite.md, *Limits*). The `call_rcu()`
/// worker, which `rcu_barrier()` waits for, starts at the flavor's first
/// `call_rcu()` (or `Rcu::replace`, `update`, `raw::defer_drop_box`,
/// `start_poll_synchronize_rcu()`, or an `rcu_barrier()` that finds
/// callbacks queued), from that caller.
///
/// ```
/// assert!(rcu_lite::qsbr::start_grace_period_worker());
/// ```
#[cfg(not(loom))]
pub fn start_grace_period_worker() -> bool {
    let engine = engine();
    engine.gp_worker.start(engine)
}

/// How many grace periods this flavor has started and completed.
pub fn grace_periods() -> GpCounts {
    engine().counts()
}

/// How many callbacks queued by [`call_rcu`] (and by `Rcu::replace` and
/// `Rcu::update`, which queue the old value's drop, and the callback that
/// does nothing which [`start_poll_synchronize_rcu`] queues when none is
/// queued) have not started running: a snapshot, for writers that bound the
/// memory waiting to be freed. Once [`rcu_barrier`] returns it counts only
/// callbacks queued after the barrier began.
///
/// `call_rcu` never waits for a grace period, so writers that queue faster than the one
/// callback thread runs grow the queue for as long as they keep it up. A
/// writer that may wait (see [`rcu_barrier`]) can bound it:
///
/// ```
/// use rcu_lite::{Rcu, qsbr};
///
/// let config = Rcu::<Vec<u8>, rcu_lite::Qsbr>::new(vec![0; 64]);
/// for i in 0..1000u32 {
///     config.replace(vec![i as u8; 64]);
///     if qsbr::callbacks_pending() > 256 {
///         // Everything queued so far is freed before this returns. (A
///         // registered writer calls `registration.rcu_barrier()`, which
///         // goes offline meanwhile: this one panics on a thread whose
///         // registration is online.)
///         qsbr::rcu_barrier();
///     }
///     // Holds only while this thread alone queues callbacks: the queue is
///     // the process's, other writers' and libraries' callbacks included.
///     assert!(qsbr::callbacks_pending() <= 256);
/// }
/// qsbr::rcu_barrier();
/// assert_eq!(qsbr::callbacks_pending(), 0); // as alone as above
/// ```
pub fn callbacks_pending() -> usize {
    engine().callbacks.pending()
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    std::thread_local! {
        /// Run once the record is marked online, as a signal handler could,
        /// once.
        static AFTER_MARKING_ONLINE: Cell<Option<fn()>> = const { Cell::new(None) };
        /// What the interruption saw: the thread's online registrations.
        static SEEN_ONLINE: Cell<Option<u32>> = const { Cell::new(None) };
    }

    pub(super) fn interrupt_after_marking_online() {
        if let Some(interrupt) = AFTER_MARKING_ONLINE.take() {
            interrupt();
        }
    }

    /// A registration is counted online before its record is marked, on
    /// each way online (`register`, `online`, the end of `while_offline`):
    /// a `synchronize_rcu` that a signal handler runs once the record is
    /// marked then panics as the misuse it is, instead of waiting for its
    /// own thread forever. (Marked first, the count read 0 there.)
    #[test]
    fn a_registration_is_counted_online_before_it_is_marked() {
        let seen = || {
            AFTER_MARKING_ONLINE.set(Some(|| SEEN_ONLINE.set(Some(online_count()))));
        };
        seen();
        let mut registration = QsbrThread::register();
        assert_eq!(SEEN_ONLINE.take(), Some(1), "register");
        seen();
        registration.while_offline(|| ());
        assert_eq!(SEEN_ONLINE.take(), Some(1), "back from while_offline");
        let offline = registration.offline();
        seen();
        let registration = offline.online();
        assert_eq!(SEEN_ONLINE.take(), Some(1), "online");
        drop(registration);
        assert_eq!(online_count(), 0);
    }
}
