//! The memb flavor: nestable read-side sections that cost two record-word
//! stores and two compiler fences, for any thread, without registration calls.
//!
//! Kernel/liburcu counterpart: liburcu's `urcu-memb` flavor
//! (`_urcu_memb_read_lock()` / `_urcu_memb_read_unlock()`, `smp_mb_slave()`
//! against `smp_mb_master()`), on top of this crate's Tree-RCU-style engine.
//!
//! # Read side
//!
//! A thread's record word holds its nesting depth and a snapshot (see
//! `record.rs`). [`read_lock`]:
//!
//! - outermost: store the engine's `gp_word` (the newest grace period started,
//!   nesting 1) into the record, then `fence::light()`, which pairs with the
//!   grace period's `fence::heavy()`;
//! - nested: add one to the nesting.
//!
//! Dropping the [`Guard`]:
//!
//! - outermost: store nesting 0 with Release (the section's loads happen before
//!   a scan that sees it), `fence::light()`, then one load of the record's
//!   own `wake_driver` flag and a predictable branch to wake a driver that
//!   sleeps waiting for this thread;
//! - nested: subtract one.
//!
//! Only the owning thread writes its word, so no read-modify-write is needed.
//! The guard is `!Send`: the section belongs to the thread's record.
//!
//! # Fast path and slow path
//!
//! The inline fast path handles the common case only: a registered thread, in
//! `fence::Mode::Membarrier`, entering its outermost section or leaving it. It
//! tests the low 16 bits of the record word once (`== 0` to enter, `== 1` to
//! leave) and needs no other check, because everything else sets one of those
//! bits for good: a thread not registered yet reads the flavor's placeholder
//! record, whose word is `SLOW_PATH`; a thread registered while the fences are
//! in `fence::Mode::SeqCst` carries `SLOW_PATH` in its word for life (the mode
//! never changes once decided); nesting sets the count. In membarrier mode
//! `fence::light()` is a compiler fence, which is what the fast path issues;
//! the out-of-line slow path calls `fence::light()` itself. Under loom the
//! mode is always SeqCst, so the models check the slow path's ordering.
//!
//! # Misuse
//!
//! [`synchronize_rcu`] or [`rcu_barrier`] inside a read-side section would wait
//! for the caller itself forever: they panic instead. So does an unlock without
//! a matching lock (possible only through [`crate::raw`]) and nesting deeper
//! than 32767. `tests/misuse.rs` checks every one of these messages.

use crate::config::GpConfig;
use crate::engine::GpCounts;
use crate::flavor::Memb;
use crate::poll::GpState;
use crate::record::{LOW_BITS, NEST_MASK, NEST_ONE, Record, SLOW_PATH, nesting};
use membarrier_sim::fence;
use std::fmt;
use std::marker::PhantomData;
use std::sync::atomic::Ordering::SeqCst;
use std::sync::atomic::Ordering::{Acquire, Relaxed, Release};
use std::sync::atomic::compiler_fence;

// Readers fence with `fence::light()` (inline, as a compiler fence, on the
// fast path); grace periods with `fence::heavy()`.
crate::engine::flavor_engine!(crate::engine::ReaderFence::Light);

crate::thread_record::thread_record!(|record| {
    // Fallback fences send this thread's read side to the slow path for good.
    let slow = cfg!(loom) || fence::mode() == fence::Mode::SeqCst;
    // Release, though nobody else uses the record: it may be a recycled one,
    // and a scan that reads this store credits the thread. The previous
    // owner's sections happen before our Acquire claim of the record
    // (`Registry::acquire`); Release carries that on to the scan, as the
    // Release snapshot stores of our sections do (see `lock`).
    record.word.store(if slow { SLOW_PATH } else { 0 }, Release);
});

/// A memb read-side critical section, ended when dropped.
///
/// While any guard of a thread is alive, no grace period that began after the
/// thread's outermost [`read_lock`] can complete, so objects it reached through
/// [`crate::Rcu::read`] stay valid. Guards nest. `!Send` and `!Sync`.
///
/// A guard cannot leave its thread: its section is the thread's record's,
/// and a drop on another thread would end a section that thread never
/// entered.
///
/// ```compile_fail,E0277
/// let guard = rcu_lite::memb::read_lock();
/// // `*const ()` cannot be sent between threads safely
/// std::thread::spawn(move || drop(guard));
/// ```
///
/// Nor can another thread share it (`!Sync`): a guard reached through a
/// reference elsewhere would let that thread read as if inside this
/// thread's section.
///
/// ```compile_fail,E0277
/// let guard = rcu_lite::memb::read_lock();
/// std::thread::scope(|s| {
///     let shared = &guard;
///     // `*const ()` cannot be shared between threads safely
///     s.spawn(move || drop(shared));
/// });
/// ```
#[must_use = "the read-side section ends when the guard is dropped"]
pub struct Guard {
    record: &'static Record,
    _not_send: PhantomData<*const ()>,
}

impl fmt::Debug for Guard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Relaxed: the guard is `!Send`, so this is its thread reading its
        // own word, which only it writes.
        f.debug_struct("memb::Guard")
            .field("nesting", &nesting(self.record.word.load(Relaxed)))
            .finish()
    }
}

/// Enters a read-side critical section (`rcu_read_lock()`); it lasts until the
/// guard is dropped. Registers the thread on its first call.
///
/// # Panics
///
/// If the thread's sections would nest more than 32767 deep (the record's
/// nesting field has 15 bits).
#[inline]
pub fn read_lock() -> Guard {
    Guard {
        record: lock(),
        _not_send: PhantomData,
    }
}

impl Drop for Guard {
    #[inline]
    fn drop(&mut self) {
        unlock(self.record);
    }
}

/// The read lock on the calling thread's record, which it returns.
#[inline(always)]
pub(crate) fn lock() -> &'static Record {
    #[cfg(not(loom))]
    let record = current_record();
    #[cfg(loom)]
    let record = thread_record();
    // Relaxed: only this thread writes its word; this reads its own last store.
    let word = record.word.load(Relaxed);
    if word & LOW_BITS == 0 {
        // Registered, membarrier fences, outermost (see the module docs).
        // Acquire pairs with the Release store of `gp_word` in
        // `Engine::grace_period`: this section sees every update published
        // before the grace period it snapshots, which is why a scan may credit
        // a section that began after init.
        let snapshot = engine().reader.gp_word.load(Acquire);
        // Release, not Relaxed: a scan may credit the thread on this store
        // (the snapshot is recent enough) without ever reading the Release
        // store that ended the thread's previous section, and a plain store
        // does not continue that one's release sequence; so this store must
        // carry the previous sections (and a recycled record's previous
        // owner) to the scan itself. A plain `mov` on x86-64, as Relaxed.
        record.word.store(snapshot, Release);
        // fence::light() in membarrier mode: orders the store above before
        // the section's loads; pairs with fence::heavy() in
        // `Engine::grace_period`.
        compiler_fence(SeqCst);
        record
    } else {
        lock_slow(record)
    }
}

/// The read lock's slow path: registration, fallback fences, nesting.
#[cold]
#[inline(never)]
fn lock_slow(record: &'static Record) -> &'static Record {
    if is_placeholder(record) {
        return lock_registered(thread_record());
    }
    lock_registered(record);
    record
}

/// The read lock on `record`, registered, with `fence::light()`.
fn lock_registered(record: &'static Record) -> &'static Record {
    // Relaxed: only this thread writes its word.
    let word = record.word.load(Relaxed);
    match nesting(word) {
        0 => {
            // Acquire: as in `lock`.
            let snapshot = engine().reader.gp_word.load(Acquire);
            // Release: as in `lock`.
            record.word.store(snapshot | (word & SLOW_PATH), Release);
            // Pairs with fence::heavy() in `Engine::grace_period`.
            fence::light();
        }
        NEST_MASK => nesting_overflow(),
        // Release, as the outermost store: a scan may credit the thread on
        // this word (its snapshot is recent), and a Relaxed store would not
        // carry the thread's earlier sections, whose release sequence a
        // later plain store of the same thread does not continue.
        _ => record.word.store(word + NEST_ONE, Release),
    }
    record
}

/// The read unlock on `record`, the calling thread's.
#[inline(always)]
pub(crate) fn unlock(record: &'static Record) {
    // Relaxed: only this thread writes its word.
    let word = record.word.load(Relaxed);
    if word & LOW_BITS == NEST_ONE {
        // Membarrier fences, outermost. Release pairs with the Acquire loads of
        // record words in the scan and rechecks: the section's loads happen
        // before the grace period ends.
        record.word.store(0, Release);
        // fence::light() in membarrier mode: orders the store before the load
        // of the wake-up flag; pairs with fence::heavy() in
        // `Engine::sleep_for_holdouts` (or `Engine::fqs_wait`'s early wake).
        compiler_fence(SeqCst);
        engine().wake_driver_if_flagged(record);
    } else {
        unlock_slow(record, word);
    }
}

/// The read unlock's slow path: fallback fences, nesting, misuse.
#[cold]
#[inline(never)]
fn unlock_slow(record: &'static Record, word: u64) {
    match nesting(word) {
        0 => unbalanced_unlock(),
        NEST_ONE => {
            // Release: as in `unlock`.
            record.word.store(word & SLOW_PATH, Release);
            // Pairs with fence::heavy() in `Engine::sleep_for_holdouts` (or
            // `Engine::fqs_wait`'s early wake).
            fence::light();
            engine().wake_driver_if_flagged(record);
        }
        // Release: as the nested store in `lock_registered`.
        _ => record.word.store(word - NEST_ONE, Release),
    }
}

#[cold]
#[inline(never)]
fn nesting_overflow() -> ! {
    panic!("rcu_lite::memb::read_lock(): read-side sections nested more than 32767 deep")
}

#[cold]
#[inline(never)]
pub(crate) fn unbalanced_unlock() -> ! {
    panic!(
        "rcu_lite::memb read unlock without a matching read lock (unbalanced unlock): this \
         thread is not in a read-side section"
    )
}

/// Whether the calling thread is inside a read-side section.
pub fn read_ongoing() -> bool {
    // Relaxed: this thread's own word, which only it writes.
    registered_record().is_some_and(|record| nesting(record.word.load(Relaxed)) != 0)
}

/// Waits until every read-side section that began before the call has ended
/// (`synchronize_rcu()`). Concurrent callers share grace periods.
///
/// # Panics
///
/// If the calling thread is inside a read-side section: the grace period would
/// wait for the caller itself (deadlock). Also between the calling thread's
/// [`fork::before_fork`](crate::fork::before_fork) and `after_fork_*`: a
/// reader of another thread may then be waiting in `call_rcu()` inside its
/// section. And inside an [`Rcu::update`](crate::Rcu::update) function: a
/// reader may be waiting for that cell's update lock inside its section.
///
/// Other waits of that shape are not caught and hang: a caller that holds a
/// lock (a mutex, a `qrwlock` guard) that some reader takes inside its
/// read-side section, or a hazptr guard whose `synchronize` that reader
/// waits in, or an online qsbr registration while that reader waits for a
/// qsbr grace period, waits for a reader that waits for the caller. Release
/// such locks and guards, and go offline, first, or take them outside
/// read-side sections.
pub fn synchronize_rcu() {
    synchronize(false, "synchronize_rcu");
}

/// Like [`synchronize_rcu`], but the grace period it needs runs at once, with
/// adaptive FQS and quick QS, whatever [`configure`] says
/// (`synchronize_rcu_expedited()`).
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
/// calling thread is inside a read-side section, between the fork hooks, or
/// inside an [`Rcu::update`](crate::Rcu::update) function.
pub(crate) fn refuse_to_wait_here(name: &'static str) {
    #[cfg(not(loom))]
    crate::fork::refuse_between_hooks("memb", crate::fork::Refused::Waiting(name));
    crate::cell::refuse_to_wait_in_an_update("memb", name);
    if read_ongoing() {
        panic!(
            "{path} called inside a read-side critical section: the grace \
             period would wait for this very thread forever (deadlock); drop every \
             memb::Guard (and end every raw::memb_read_lock() section) first",
            path = crate::api_path("memb", name)
        );
    }
}

/// A cookie for the grace period whose completion means that every
/// read-side section that began before this call has ended
/// (`get_state_synchronize_rcu()`). Never blocks, and may be called
/// anywhere, inside a read-side section too.
///
/// It starts no grace period: the cookie elapses once a
/// [`synchronize_rcu`] caller or the callback thread has driven one.
/// [`start_poll_synchronize_rcu`] makes sure one runs.
///
/// ```
/// use rcu_lite::memb;
///
/// let state = memb::get_state_synchronize_rcu();
/// memb::synchronize_rcu();
/// assert!(memb::poll_state_synchronize_rcu(state));
/// ```
#[must_use = "the cookie is what poll_state_synchronize_rcu() checks"]
pub fn get_state_synchronize_rcu() -> GpState<Memb> {
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
/// use rcu_lite::memb;
/// use std::sync::atomic::{AtomicPtr, Ordering};
///
/// let shared = AtomicPtr::new(Box::into_raw(Box::new(1u64)));
/// let old = shared.swap(Box::into_raw(Box::new(2u64)), Ordering::AcqRel);
/// let state = memb::start_poll_synchronize_rcu();
/// // ... other work, then, at some later point: if the grace period is
/// // not over yet, keep `old` for a later look, or wait for it as here. (A
/// // loop of polls would spin, and for good on a thread whose own read
/// // section holds the grace period up;
/// // cond_synchronize_rcu refuses that misuse with a panic.)
/// if !memb::poll_state_synchronize_rcu(state) {
///     memb::cond_synchronize_rcu(state);
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
pub fn start_poll_synchronize_rcu() -> GpState<Memb> {
    crate::poll::start_poll(&engine().callbacks, synchronize_rcu)
}

/// Whether the grace period `state` names has completed
/// (`poll_state_synchronize_rcu()`). Once it says `true`, it always will,
/// and every read-side section that began before the call that made
/// `state` has ended. Never blocks, and may be called anywhere, inside a
/// read-side section too; but a section of this thread that began before
/// the cookie holds it up until it ends.
#[must_use = "polling only reads whether the grace period ended"]
pub fn poll_state_synchronize_rcu(state: GpState<Memb>) -> bool {
    engine().poll_done(state.target())
}

/// Waits as [`synchronize_rcu`] does, unless the grace period `state` names
/// has already completed (`cond_synchronize_rcu()`).
///
/// # Panics
///
/// As [`synchronize_rcu`], whether or not it would have to wait, so that
/// the misuse shows the first time.
pub fn cond_synchronize_rcu(state: GpState<Memb>) {
    crate::poll::cond_synchronize(state);
}

/// Runs `callback` on the flavor's callback thread after a grace period that
/// begins after this call (`call_rcu()`).
///
/// `callback` must return outside every memb read-side section and with no
/// qsbr registration online on the callback thread: one left behind would
/// hold up every later grace period, so the worker aborts the process with a
/// message naming it. Callbacks queued together share one
/// grace period.
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
        .enqueue(Box::new(callback), synchronize_rcu, "memb");
}

/// Under loom: runs the memb callback worker's loop on the calling thread
/// until `done()` says so, for a model of a `call_rcu()` racing the worker's
/// sleep. `done` is checked before each batch.
#[cfg(loom)]
#[doc(hidden)]
pub fn loom_run_callback_worker_until(done: impl Fn() -> bool) {
    engine()
        .callbacks
        .worker_rounds(synchronize_rcu, || !done());
}

/// Under loom: what `fork::before_fork()` and `after_fork_parent()` do to
/// the memb callback queue (count the fork as waiting, take the batch lock,
/// then the queue lock, let go of both), with `inspect` called in between
/// with the callbacks ever queued and those queued now.
#[cfg(loom)]
#[doc(hidden)]
pub fn loom_fork_window(inspect: impl FnOnce(u64, usize)) {
    engine().callbacks.loom_fork_window(inspect);
}

/// Waits until every callback queued by [`call_rcu`] before this call has run
/// (`rcu_barrier()`). With none queued and no batch running, returns at once.
///
/// # Panics
///
/// If called from inside a memb RCU callback (it would wait for itself), inside
/// a read-side section (the callbacks' grace period would wait for the caller),
/// inside an [`Rcu::update`](crate::Rcu::update) function (a callback may be
/// waiting for that cell's update lock),
/// from inside a qsbr callback while a memb callback waits in
/// `qsbr::rcu_barrier()` (each worker would wait for the other), between
/// the fork hooks, or if the callback thread cannot be started (as
/// [`call_rcu`]). Unlike `call_rcu`, also while the calling thread unwinds
/// (a drop that a panic runs), which aborts the process: between the hooks,
/// or with no callback thread, nobody would run the callbacks it waits for.
///
/// Waits forever, without a panic, if a queued memb callback waits for qsbr
/// (`qsbr::rcu_barrier()`, `qsbr::synchronize_rcu()`) and this thread has an
/// online [`QsbrThread`](crate::qsbr::QsbrThread) that the callback's qsbr
/// grace period waits for: take it offline first. Likewise if a queued
/// callback (or the drop of a value `Rcu::replace` deferred) takes a lock
/// this thread holds, or synchronizes on a hazptr guard it holds: release
/// them before the barrier. A callback that never returns stalls every
/// later callback and barrier of the flavor.
pub fn rcu_barrier() {
    // First: inside an update function, the advice of the message below
    // (leave the section) would not be enough.
    crate::cell::refuse_to_wait_in_an_update("memb", "rcu_barrier");
    if read_ongoing() {
        barrier_inside_a_section();
    }
    engine()
        .callbacks
        .barrier(synchronize_rcu, "memb", "rcu_barrier");
}

#[cold]
#[inline(never)]
fn barrier_inside_a_section() -> ! {
    panic!(
        "rcu_lite::memb::rcu_barrier() called inside a read-side critical section: the \
         callbacks' grace period would wait for this very thread forever (deadlock); drop \
         every memb::Guard (and end every raw::memb_read_lock() section) first"
    )
}

/// Sets how this flavor's grace periods are driven, returning the previous
/// settings. Grace periods already running keep theirs.
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
/// The thread (`rcu-lite-memb-gp`; `/proc`, `top` and `pgrep` show the
/// kernel's 15 bytes of it, `rcu-lite-memb-g`) gets the scheduling policy,
/// priority and allowed CPUs of the thread that starts it, here or in a crowded
/// `synchronize_rcu()`, and its cgroup and seccomp filter (a sandbox put on
/// that thread alone passes on to the worker: one that refuses `membarrier`
/// makes the worker's first heavy fence abort the process); not its signal
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
/// assert!(rcu_lite::memb::start_grace_period_worker());
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
/// use rcu_lite::{Rcu, memb};
///
/// let config = Rcu::<Vec<u8>, rcu_lite::Memb>::new(vec![0; 64]);
/// for i in 0..1000u32 {
///     config.replace(vec![i as u8; 64]);
///     if memb::callbacks_pending() > 256 {
///         // Everything queued so far is freed before this returns.
///         memb::rcu_barrier();
///     }
///     // Holds only while this thread alone queues callbacks: the queue is
///     // the process's, other writers' and libraries' callbacks included.
///     assert!(memb::callbacks_pending() <= 256);
/// }
/// memb::rcu_barrier();
/// assert_eq!(memb::callbacks_pending(), 0); // as alone as above
/// ```
pub fn callbacks_pending() -> usize {
    engine().callbacks.pending()
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    /// Set in the child process of
    /// `seqcst_fallback_fences_send_every_section_to_the_slow_path`.
    const CHILD_ENV: &str = "RCU_LITE_MEMB_SEQCST_SLOW_PATH_CHILD";

    /// With the fences in their `fence(SeqCst)` fallback, a thread's record
    /// carries `SLOW_PATH` from registration on, inside its sections and
    /// between them, so that no section takes the inline fast path: that
    /// path's fences are compiler fences (the membarrier mode's light
    /// fence), which in this mode no heavy fence pairs with, and a section's
    /// entry store could pass its loads unseen by a scan. The behaviour
    /// under that mode is `tests/memb_seqcst.rs`; a missing fence there
    /// shows only as a rare race, so this checks the word. In a child
    /// process: the fence mode is decided once per process. Except under
    /// miri, which starts no process and in which the mode is always the
    /// fallback, so the check runs in the test's own.
    #[test]
    fn seqcst_fallback_fences_send_every_section_to_the_slow_path() {
        if !cfg!(miri) && std::env::var_os(CHILD_ENV).is_none() {
            test_support::in_a_child_process(
                "memb::tests::seqcst_fallback_fences_send_every_section_to_the_slow_path",
                CHILD_ENV,
                "1",
            );
            return;
        }
        assert_eq!(
            fence::force(fence::Mode::SeqCst),
            Ok(()),
            "no fence may run before this"
        );
        let guard = read_lock();
        let record = registered_record().expect("read_lock registers the thread");
        // Relaxed: this thread's own stores.
        let inside = record.word.load(Relaxed);
        drop(guard);
        let outside = record.word.load(Relaxed);
        assert_eq!(nesting(inside), 1, "inside one section");
        assert_ne!(
            inside & SLOW_PATH,
            0,
            "a section under SeqCst fallback fences took the fast path's word"
        );
        assert_eq!(
            outside, SLOW_PATH,
            "between sections under SeqCst fallback fences the word must send the next \
             read_lock to the slow path"
        );
    }

    /// A thread's first section, entered through the slow path that registers
    /// the thread, snapshots the newest grace period started, as the fast
    /// path's sections do: a scan credits such a section by its snapshot
    /// instead of waiting for it to end, and the snapshot's Acquire load is
    /// what makes that safe.
    #[test]
    fn a_threads_first_section_snapshots_the_newest_grace_period() {
        // Past grace period 0, whose snapshot a section without one would
        // match by accident.
        synchronize_rcu();
        for _ in 0..1000 {
            // A fresh thread: its first read_lock registers it.
            let (before, inside, after) = std::thread::spawn(|| {
                // Acquire: as in `lock`.
                let before = engine().reader.gp_word.load(Acquire);
                let guard = read_lock();
                let record = registered_record().expect("read_lock registers the thread");
                // Relaxed: this thread's own store.
                let inside = record.word.load(Relaxed);
                let after = engine().reader.gp_word.load(Acquire);
                drop(guard);
                (before, inside, after)
            })
            .join()
            .expect("the reader thread panicked");
            if before != after {
                // A grace period started meanwhile: the snapshot may be
                // either. Try again.
                continue;
            }
            assert_eq!(
                inside & !SLOW_PATH,
                before,
                "the first section's word is not the snapshot of the newest grace period with \
                 nesting 1"
            );
            return;
        }
        panic!("grace periods kept starting during every one of 1000 sections");
    }

    /// Under membarrier fences, a thread leaves its first section (entered
    /// through the slow path that registers it) with its word at 0, so that
    /// every later section takes the inline fast path: only the `SeqCst`
    /// fallback sends a thread to the slow path for good.
    #[test]
    fn under_membarrier_fences_a_thread_leaves_its_first_section_for_the_fast_path() {
        std::thread::spawn(|| {
            drop(read_lock());
            if fence::mode() != fence::Mode::Membarrier {
                // The fallback fences: the other test's case.
                return;
            }
            let record = registered_record().expect("read_lock registers the thread");
            // Relaxed: this thread's own store.
            assert_eq!(
                record.word.load(Relaxed),
                0,
                "under membarrier fences the first section left the word sending the next \
                 read_lock to the slow path"
            );
        })
        .join()
        .expect("the reader thread panicked");
    }

    /// A guard's `Debug` output names it and shows the thread's nesting
    /// depth at the time of formatting.
    #[test]
    fn a_guards_debug_output_shows_the_nesting_depth() {
        let outer = read_lock();
        let inner = read_lock();
        assert_eq!(format!("{inner:?}"), "memb::Guard { nesting: 2 }");
        drop(inner);
        assert_eq!(format!("{outer:?}"), "memb::Guard { nesting: 1 }");
    }
}
