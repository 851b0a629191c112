//! [`Rcu<T>`]: an RCU-protected value with a safe API.
//!
//! Kernel counterpart: an `__rcu` pointer with `rcu_dereference()`,
//! `rcu_replace_pointer()` + `call_rcu()`/`kfree_rcu()` (or, for
//! `replace_polled`, `start_poll_synchronize_rcu()` and a later
//! `poll_state_synchronize_rcu()` before the free), and the update-side lock
//! that serializes updaters.
//!
//! # Invariants
//!
//! - `current` always points at a live `Box<T>` owned by the cell.
//! - A value that `replace`/`update` unpublishes is dropped only after a grace
//!   period of the flavor that began after it was unpublished (through
//!   `call_rcu`), so a reader whose guard predates the grace period still sees
//!   it alive. `replace_and_synchronize` waits for that grace period itself and
//!   hands the value back; `replace_polled` hands it back inside a [`Retired`]
//!   that gives it up only once the cookie it took after the unpublish has
//!   elapsed, and otherwise drops it as `replace` would.
//! - Updaters are serialized by `update_lock`, so `update` may read the current
//!   value without a guard: nobody else can unpublish it meanwhile.
//! - `read` ties the returned reference to both the cell and the guard: it
//!   cannot outlive the read-side section.

use crate::flavor::{Flavor, Memb, ReadGuard};
use crate::poll::GpState;
use crate::sync::{AtomicPtr, Mutex};
#[cfg(not(loom))]
use std::cell::Cell;
use std::fmt;
use std::marker::PhantomData;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::Ordering::{AcqRel, Acquire};

/// A value readers reach inside read-side sections of flavor `F` while
/// updaters replace it, freeing old values only after a grace period.
///
/// Readers on other threads get `&T`, and replaced values are dropped on the
/// callback thread, so the cell is `Sync` (and `Send`) only for
/// `T: Send + Sync`:
///
/// ```compile_fail,E0277
/// use rcu_lite::{Rcu, memb};
/// use std::cell::Cell;
///
/// let cell = Rcu::<Cell<u32>>::new(Cell::new(1));
/// // `Cell<u32>` cannot be shared between threads safely
/// std::thread::scope(|s| {
///     s.spawn(|| cell.read(&memb::read_lock()).set(2));
/// });
/// ```
///
/// And the updates that defer a drop to the callback thread need
/// `T: Send + 'static`:
///
/// ```compile_fail,E0599
/// use rcu_lite::Rcu;
/// use std::rc::Rc;
///
/// let cell = Rcu::<Rc<u32>>::new(Rc::new(1));
/// // the trait bound `Rc<u32>: Send` is not satisfied
/// cell.replace(Rc::new(2));
/// ```
///
/// The cell is invariant in `T`, which `replace_and_synchronize` (no
/// `'static` bound) relies on: were it covariant, an `&Rcu<&'static str>`
/// could be viewed as a cell of shorter-lived `&str`, given one that borrows
/// a local, and read back as `&'static str` after the local is gone.
///
/// ```compile_fail
/// use rcu_lite::Rcu;
///
/// // error: lifetime may not live long enough (`Rcu` is invariant over `T`)
/// fn shorten<'a>(cell: &'a Rcu<&'static str>) -> &'a Rcu<&'a str> {
///     cell
/// }
/// ```
pub struct Rcu<T, F: Flavor = Memb> {
    current: AtomicPtr<T>,
    update_lock: Mutex<()>,
    _owns: PhantomData<(Box<T>, F)>,
}

// SAFETY: the cell owns a `T` (moving the cell moves it: `T: Send`) and hands
// out `&T` to any thread that holds a guard (`T: Sync`); values are dropped on
// the callback thread (`T: Send`).
unsafe impl<T: Send + Sync, F: Flavor> Send for Rcu<T, F> {}
// SAFETY: as above; all mutation goes through atomics and `update_lock`.
unsafe impl<T: Send + Sync, F: Flavor> Sync for Rcu<T, F> {}

/// An unpublished value on its way to the callback thread.
struct Unpublished<T>(*mut T);

// SAFETY: the pointer is an owned `Box<T>` nobody else frees; sending it sends
// the `T`.
unsafe impl<T: Send> Send for Unpublished<T> {}

impl<T> Unpublished<T> {
    /// Drops the value.
    ///
    /// # Safety
    ///
    /// No reader may still hold a reference to it: a grace period began after
    /// it was unpublished and has ended.
    unsafe fn drop_value(self) {
        // SAFETY: an owned `Box` (`Rcu` invariant), unreachable per the contract.
        drop(unsafe { Box::from_raw(self.0) });
    }
}

impl<T, F: Flavor> Rcu<T, F> {
    /// A cell holding `value`.
    pub fn new(value: T) -> Rcu<T, F> {
        Rcu {
            current: AtomicPtr::new(Box::into_raw(Box::new(value))),
            update_lock: Mutex::new(()),
            _owns: PhantomData,
        }
    }

    /// The current value (`rcu_dereference()`), valid for as long as `guard`'s
    /// read-side section lasts. The reference cannot outlive the guard:
    ///
    /// ```compile_fail,E0505
    /// use rcu_lite::{Rcu, memb};
    ///
    /// let cell = Rcu::<String>::new("v1".to_owned());
    /// let guard = memb::read_lock();
    /// let value = cell.read(&guard);
    /// // cannot move out of `guard` because it is borrowed
    /// drop(guard);
    /// assert_eq!(value, "v1");
    /// ```
    ///
    /// Only a guard of the cell's flavor will do: a memb section does not
    /// hold up qsbr's grace periods, which free a qsbr cell's old values.
    ///
    /// ```compile_fail,E0271
    /// use rcu_lite::{Qsbr, Rcu, memb};
    ///
    /// let cell = Rcu::<String, Qsbr>::new("v1".to_owned());
    /// let guard = memb::read_lock();
    /// // type mismatch resolving `<memb::Guard as ReadGuard>::Flavor == Qsbr`
    /// assert_eq!(cell.read(&guard), "v1");
    /// ```
    #[inline]
    pub fn read<'g, G: ReadGuard<Flavor = F>>(&'g self, _guard: &'g G) -> &'g T {
        // Acquire pairs with the AcqRel swap in `swap_current`: the value's
        // initialization happens before our reads of it.
        let current = self.current.load(Acquire);
        // SAFETY: `current` is a live `Box` (invariant). A value unpublished
        // after this load is freed only after a grace period that begins after
        // the unpublish, which waits for the section `guard` proves we are in,
        // and the returned borrow cannot outlive `guard`.
        unsafe { &*current }
    }

    /// Exclusive access: no reader can be in the cell while `&mut self` lives.
    pub fn get_mut(&mut self) -> &mut T {
        // Acquire, as in `read`: pairs with the AcqRel swap in
        // `swap_current` (whatever gave us `&mut self` already ordered it).
        // SAFETY: `&mut self` excludes readers and updaters; the value is live.
        unsafe { &mut *self.current.load(Acquire) }
    }

    /// The value, consuming the cell.
    pub fn into_inner(self) -> T {
        // Acquire: as in `get_mut`.
        let current = self.current.load(Acquire);
        std::mem::forget(self);
        // SAFETY: an owned `Box`; `self` is forgotten, so it is not freed twice.
        *unsafe { Box::from_raw(current) }
    }

    /// Publishes `new` and returns the previous value's pointer. Caller holds
    /// `update_lock`. The callers that have their value before they lock
    /// box it first: the lock is then held for the swap alone, not for an
    /// allocation (a `fork()` meanwhile leaves the child's copy of the
    /// cell locked: see [`crate::fork`]).
    fn swap_current(&self, new: Box<T>) -> Unpublished<T> {
        // AcqRel: Release pairs with the Acquire load in `read` (the new value
        // is initialized before readers see it); Acquire orders our later drop
        // of the old value after its publisher's writes.
        Unpublished(self.current.swap(Box::into_raw(new), AcqRel))
    }

    /// Takes the update lock. `what` names the caller for the panic when this
    /// thread already holds it: an update function of this cell that calls
    /// `replace`/`update`/`replace_and_synchronize` on the same cell.
    fn lock_updates(&self, what: &str) -> impl Drop + '_ {
        #[cfg(loom)]
        let _ = what;
        #[cfg(not(loom))]
        if Updating::runs(self.address()) {
            updated_from_its_own_update(what);
        }
        self.update_lock
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The cell's identity in [`UPDATING`].
    #[cfg(not(loom))]
    fn address(&self) -> usize {
        std::ptr::from_ref(self).addr()
    }
}

impl<T: Send + 'static, F: Flavor> Rcu<T, F> {
    /// Publishes `new`; the old value is dropped on the callback thread after a
    /// grace period (`rcu_replace_pointer()` + `call_rcu()`).
    ///
    /// Old values wait for their grace period in memory, without bound: while
    /// a reader holds a grace period up, every `replace` or `update` keeps
    /// one more (the flavor's `callbacks_pending` counts them; see
    /// `call_rcu`). A value whose drop panics is reported on stderr, with
    /// `panic = "unwind"`; with `panic = "abort"` the process aborts. Old
    /// values still waiting when the process exits are never dropped (as
    /// `call_rcu`'s callbacks): call the flavor's `rcu_barrier()` before
    /// exiting where their `Drop` does work that matters.
    ///
    /// # Panics
    ///
    /// Between the calling thread's [`fork::before_fork`](crate::fork::before_fork)
    /// and `after_fork_*`, and from inside an [`Rcu::update`] function of this
    /// same cell, both before publishing anything. If the callback thread
    /// cannot be started, after publishing `new`: the old value's drop is
    /// queued all the same (as `call_rcu`'s callback), and runs once a later
    /// `call_rcu()` or `rcu_barrier()` of the flavor starts the thread.
    pub fn replace(&self, new: T) {
        // Before the update lock: another thread's update may hold it while
        // it waits for the queue lock the hooks hold.
        #[cfg(not(loom))]
        crate::fork::refuse_between_hooks(F::NAME, crate::fork::Refused::Queuing);
        let old = {
            let new = Box::new(new);
            let _serialized = self.lock_updates("replace");
            self.swap_current(new)
        };
        defer_drop::<T, F>(old);
    }

    /// Publishes `update(&current)`; the old value is dropped after a grace
    /// period (or never, if the process exits first: see [`Rcu::replace`]).
    /// Updates are serialized, so `update` sees the latest value.
    ///
    /// `update` runs holding the cell's update lock: it must not wait for a
    /// grace period (`synchronize_rcu`, `rcu_barrier`, or
    /// [`fork::before_fork`](crate::fork::before_fork), which waits for a
    /// running callback batch and so for that batch's grace period), since a
    /// reader may be waiting for that lock in a `replace` inside its section,
    /// or a callback in one of its own. Those calls panic there.
    ///
    /// # Panics
    ///
    /// As [`Rcu::replace`], and if `update` calls `replace`, `update`,
    /// `replace_polled` or `replace_and_synchronize` on this same cell (the
    /// lock is not reentrant).
    pub fn update(&self, update: impl FnOnce(&T) -> T) {
        // As in `replace`.
        #[cfg(not(loom))]
        crate::fork::refuse_between_hooks(F::NAME, crate::fork::Refused::Queuing);
        let old = {
            let _serialized = self.lock_updates("update");
            // SAFETY: only updaters unpublish values and we hold `update_lock`,
            // so the current value stays published while `update` reads it.
            let current = unsafe { &*self.current.load(Acquire) };
            #[cfg(not(loom))]
            let updating = Updating::new(self.address());
            #[cfg(not(loom))]
            let _entered = updating.enter();
            let new = update(current);
            self.swap_current(Box::new(new))
        };
        defer_drop::<T, F>(old);
    }

    /// Publishes `new` and returns the old value as a [`Retired`], which
    /// gives it back once a grace period has elapsed, without waiting here:
    /// [`Retired::try_into_inner`] polls, [`Retired::into_inner`] waits.
    /// The grace period is started (`start_poll_synchronize_rcu()`), so it
    /// elapses even if nobody else calls `synchronize_rcu()`. A `Retired`
    /// dropped unclaimed drops its value as [`Rcu::replace`] would.
    ///
    /// ```
    /// use rcu_lite::Rcu;
    ///
    /// let buffers = Rcu::<Vec<u8>>::new(vec![1; 4096]);
    /// let retired = buffers.replace_polled(vec![2; 4096]);
    /// // ... other work, then take the old buffer back to reuse it: at once
    /// // if its grace period is over, else by waiting for it. (A loop of
    /// // try_into_inner would spin, and for good on a thread whose own read
    /// // section holds the grace period up; into_inner refuses that misuse
    /// // with a panic.)
    /// let old = match retired.try_into_inner() {
    ///     Ok(old) => old,
    ///     Err(not_yet) => not_yet.into_inner(),
    /// };
    /// assert_eq!(old[0], 1);
    /// ```
    ///
    /// # Panics
    ///
    /// As [`Rcu::replace`]. If the callback thread cannot be started, after
    /// publishing `new`, the old value is leaked, not dropped.
    pub fn replace_polled(&self, new: T) -> Retired<T, F> {
        // As in `replace`.
        #[cfg(not(loom))]
        crate::fork::refuse_between_hooks(F::NAME, crate::fork::Refused::Queuing);
        let old = {
            let new = Box::new(new);
            let _serialized = self.lock_updates("replace_polled");
            self.swap_current(new)
        };
        // After the unpublish (program order, and the cookie's AcqRel RMW):
        // the cookie's grace period begins after it. If its no-op callback
        // cannot be queued with a running worker, this panics and `old`,
        // which has no drop, is leaked.
        let state = F::start_poll_synchronize_rcu();
        Retired {
            old: Some(old),
            state,
        }
    }
}

/// A value [`Rcu::replace_polled`] unpublished, held until a grace period
/// that began after the unpublish has ended, when no reader can hold it
/// any more (the kernel's pattern of `get_state_synchronize_rcu()` or
/// `start_poll_synchronize_rcu()` before freeing, with the free kept safe).
///
/// Dropped unclaimed, it drops the value at once if that grace period has
/// ended, and otherwise hands it to `call_rcu`, as [`Rcu::replace`] does
/// (between the calling thread's fork hooks, where `call_rcu` is refused,
/// it leaks the value instead). Either way a panic of the value's drop is
/// reported on standard error and not passed on, as on the callback
/// thread (with `panic = "abort"` the process aborts).
#[must_use = "dropping a Retired defers its value as Rcu::replace would: use replace() for that"]
pub struct Retired<T: Send + 'static, F: Flavor> {
    /// The unpublished value; `None` once handed out.
    old: Option<Unpublished<T>>,
    /// The grace period after which no reader can hold `old`.
    state: GpState<F>,
}

impl<T: Send + 'static, F: Flavor> Retired<T, F> {
    /// The cookie of the grace period this value waits for.
    #[must_use]
    pub fn state(&self) -> GpState<F> {
        self.state
    }

    /// Whether the grace period has ended, so that the value can be taken
    /// (`poll_state_synchronize_rcu()`).
    #[must_use]
    pub fn is_ready(&self) -> bool {
        F::poll_state_synchronize_rcu(self.state)
    }

    /// The value if its grace period has ended; otherwise `self` back.
    /// Never blocks.
    ///
    /// # Errors
    ///
    /// `Err(self)` while the grace period has not ended, as
    /// `Arc::try_unwrap` hands its `Arc` back: try again later, or
    /// [`Retired::into_inner`] to wait.
    pub fn try_into_inner(mut self) -> Result<T, Self> {
        if !self.is_ready() {
            return Err(self);
        }
        let old = self
            .old
            .take()
            .expect("a Retired holds its value until taken");
        // SAFETY: the cookie, taken after the unpublish, has elapsed: a
        // grace period that began after the unpublish has ended, so no
        // reader holds the value; it is an owned `Box`.
        Ok(*unsafe { Box::from_raw(old.0) })
    }

    /// The value, waiting for its grace period if it has not ended
    /// (`cond_synchronize_rcu()`).
    ///
    /// # Panics
    ///
    /// As the flavor's `synchronize_rcu()`, whether or not it would wait:
    /// inside a read-side section (memb), with an online registration on
    /// this thread (qsbr), between the fork hooks, or inside an
    /// [`Rcu::update`] function. The value is then
    /// dropped after a grace period, as by [`Rcu::replace`] (leaked
    /// between the fork hooks: see [`Retired`]).
    pub fn into_inner(mut self) -> T {
        // Names this function in the refusal (`cond_synchronize_rcu` checks
        // again, finding nothing).
        F::refuse_to_wait_here("Retired::into_inner");
        F::cond_synchronize_rcu(self.state);
        let old = self
            .old
            .take()
            .expect("a Retired holds its value until taken");
        // SAFETY: as in `try_into_inner`: `cond_synchronize_rcu` returned,
        // so the cookie has elapsed.
        *unsafe { Box::from_raw(old.0) }
    }
}

impl<T: Send + 'static, F: Flavor> Drop for Retired<T, F> {
    fn drop(&mut self) {
        let Some(old) = self.old.take() else {
            return;
        };
        if F::poll_state_synchronize_rcu(self.state) {
            // Dropped here, on the calling thread, but as the callback worker
            // would drop it (`Rcu::replace`): a panic of the value's drop is
            // reported, not passed on. Passed on during an unwind (a
            // `Retired` dropped by a panic), it would abort the process.
            let dropped = catch_unwind(AssertUnwindSafe(|| {
                // SAFETY: the cookie has elapsed (see `try_into_inner`).
                unsafe { old.drop_value() }
            }));
            if let Err(payload) = dropped {
                crate::callbacks::report_panic(
                    "rcu-lite: the value of a dropped Retired panicked in its drop; it is \
                     dropped and the panic is not passed on",
                    payload,
                );
            }
            return;
        }
        // Between the fork hooks `call_rcu` panics (it would wait for the
        // queue lock this thread holds), and a drop must not: the value,
        // which readers may still hold, is leaked instead. That is also
        // where `into_inner`'s refusal between the hooks leaves it.
        #[cfg(not(loom))]
        if crate::fork::between_the_hooks() {
            return;
        }
        defer_drop::<T, F>(old);
    }
}

impl<T: Send + 'static, F: Flavor> fmt::Debug for Retired<T, F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Retired")
            .field("state", &self.state)
            .field("ready", &self.is_ready())
            .finish_non_exhaustive()
    }
}

impl<T, F: Flavor> Rcu<T, F> {
    /// Publishes `new`, waits for a grace period (`synchronize_rcu()`), and
    /// returns the old value, which no reader can hold any more.
    ///
    /// # Panics
    ///
    /// As the flavor's `synchronize_rcu()`: inside a read-side section (memb),
    /// with an online registration on this thread (qsbr), or between the
    /// calling thread's fork hooks, or inside an [`Rcu::update`] function
    /// (of this cell or another); before publishing anything.
    pub fn replace_and_synchronize(&self, new: T) -> T {
        // The wait's misuse checks before anything is published: a panic in
        // the wait itself would leave `new` published and the old value
        // leaked. Inside an update of this same cell, that misuse is the one
        // to name.
        #[cfg(not(loom))]
        if Updating::runs(self.address()) {
            updated_from_its_own_update("replace_and_synchronize");
        }
        F::refuse_to_wait_here("Rcu::replace_and_synchronize");
        let old = {
            let new = Box::new(new);
            let _serialized = self.lock_updates("replace_and_synchronize");
            self.swap_current(new)
        };
        F::synchronize_rcu();
        // SAFETY: a full grace period began after the unpublish and has ended,
        // so no reader holds the value; it is an owned `Box`.
        *unsafe { Box::from_raw(old.0) }
    }
}

#[cfg(not(loom))]
std::thread_local! {
    /// The innermost update function this thread runs ([`Updating`], linked
    /// to the ones it runs inside), each holding its cell's update lock,
    /// which is not reentrant. A plain pointer with no destructor, so that it
    /// stays usable while the thread's thread-locals are destroyed: an
    /// `update` from a thread-local destructor must not find it gone.
    static UPDATING: Cell<*const Updating> = const { Cell::new(std::ptr::null()) };
}

/// One update function this thread runs, for the cell at an address: a node
/// of the [`UPDATING`] list, on the stack of `Rcu::update`, linked while the
/// [`Entered`] that borrows it lives (also when the function panics).
#[cfg(not(loom))]
struct Updating {
    cell: usize,
    /// The node that was innermost when this one was entered.
    outer: Cell<*const Updating>,
}

/// [`Updating`] linked as the innermost node, until dropped.
#[cfg(not(loom))]
struct Entered<'a>(&'a Updating);

#[cfg(not(loom))]
impl Updating {
    fn new(cell: usize) -> Updating {
        Updating {
            cell,
            outer: Cell::new(std::ptr::null()),
        }
    }

    /// Links this node as the thread's innermost; the borrow keeps it in
    /// place until the returned value unlinks it.
    fn enter(&self) -> Entered<'_> {
        UPDATING.with(|innermost| {
            self.outer.set(innermost.get());
            innermost.set(self);
        });
        Entered(self)
    }

    /// Whether this thread runs an update function of the cell at `cell`.
    fn runs(cell: usize) -> bool {
        let mut node = UPDATING.with(Cell::get);
        // SAFETY: every pointer on the list is an `Updating` that an `Entered`
        // of this thread borrows, so it is alive and in place: an `Entered`
        // unlinks its node when dropped, and they are dropped innermost first
        // (each lives in a scope of `Rcu::update` that the next one is
        // entered inside).
        while let Some(updating) = unsafe { node.as_ref() } {
            if updating.cell == cell {
                return true;
            }
            node = updating.outer.get();
        }
        false
    }
}

#[cfg(not(loom))]
impl Drop for Entered<'_> {
    fn drop(&mut self) {
        UPDATING.with(|innermost| {
            debug_assert!(
                std::ptr::eq(innermost.get(), self.0),
                "unlinked innermost first"
            );
            innermost.set(self.0.outer.get());
        });
    }
}

/// Panics if the calling thread runs an [`Rcu::update`] function: `flavor`'s
/// `name` would wait for a grace period (or a callback batch) holding that
/// cell's update lock, which a reader inside its section or a callback may
/// be waiting for (`replace` of the same cell), and neither could then end.
/// The kernel's rule: no waiting for a grace period under a lock that
/// readers or callbacks take.
#[inline]
pub(crate) fn refuse_to_wait_in_an_update(flavor: &str, name: &str) {
    #[cfg(not(loom))]
    if runs_an_update() {
        waited_in_an_update(flavor, name);
    }
    #[cfg(loom)]
    let _ = (flavor, name);
}

/// Whether the calling thread runs an [`Rcu::update`] function.
#[cfg(not(loom))]
pub(crate) fn runs_an_update() -> bool {
    !UPDATING.with(Cell::get).is_null()
}

#[cold]
#[inline(never)]
#[cfg(not(loom))]
fn waited_in_an_update(flavor: &str, name: &str) -> ! {
    panic!(
        "{path} called inside an Rcu::update() function: it would wait \
         holding the cell's update lock, which a reader inside its section or a callback may \
         be waiting for (deadlock); wait after update() returns",
        path = crate::api_path(flavor, name)
    )
}

#[cold]
#[inline(never)]
#[cfg(not(loom))]
fn updated_from_its_own_update(what: &str) -> ! {
    panic!(
        "rcu_lite::Rcu::{what}() called from inside an Rcu::update() function of the same \
         cell: this thread holds the cell's update lock, which is not reentrant (deadlock)"
    )
}

fn defer_drop<T: Send + 'static, F: Flavor>(old: Unpublished<T>) {
    F::call_rcu(move || {
        let old = old;
        // SAFETY: `call_rcu` runs this after a grace period that began after
        // the unpublish, so no reader holds the value.
        unsafe { old.drop_value() }
    });
}

impl<T, F: Flavor> Drop for Rcu<T, F> {
    fn drop(&mut self) {
        // Acquire: as in `get_mut`.
        // SAFETY: `&mut self`: no reader borrows the cell (reads borrow it), and
        // the current value is an owned, live `Box`.
        drop(unsafe { Box::from_raw(self.current.load(Acquire)) });
    }
}

/// Names the flavor, not the value: reading it takes a read-side section of
/// the cell's flavor, which a qsbr thread enters only through its
/// registration. Print `cell.read(&guard)` for the value.
impl<T, F: Flavor> fmt::Debug for Rcu<T, F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Rcu")
            .field("flavor", &F::NAME)
            .finish_non_exhaustive()
    }
}

/// `Rcu::from(value)`, as `Rcu::new(value)`.
///
/// ```
/// let cell: rcu_lite::Rcu<u32> = 7.into();
/// assert_eq!(*cell.read(&rcu_lite::memb::read_lock()), 7);
/// ```
impl<T, F: Flavor> From<T> for Rcu<T, F> {
    fn from(value: T) -> Rcu<T, F> {
        Rcu::new(value)
    }
}

impl<T: Default, F: Flavor> Default for Rcu<T, F> {
    fn default() -> Rcu<T, F> {
        Rcu::new(T::default())
    }
}
