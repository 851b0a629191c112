//! The safe layer: [`AtomicBox`], an atomically replaceable owning pointer
//! whose readers protect what they load with a [`Guard`].
//!
//! Invariants: the box owns the object it currently points to (a
//! `Box::into_raw` pointer, or null). An object replaced by `store`, `swap`
//! or `compare_exchange` is unpublished at that moment; it is retired to the
//! box's domain (or, through [`Replaced::synchronize`], handed back after a
//! `synchronize`), never freed while a guard of that domain protects it.

use crate::domain::Domain;
use crate::guard::Guard;
use crate::sync::{AtomicPtr, Ordering};
use std::fmt;
use std::marker::PhantomData;
use std::ops::Deref;
use std::ptr::{self, NonNull};

/// An atomic, owning, nullable pointer to a `T`, readable under hazard-pointer
/// protection.
///
/// ```
/// use hazptr::{AtomicBox, Guard};
///
/// let config = AtomicBox::new(String::from("v1"));
/// let mut guard = Guard::new();
/// let current = config.load(&mut guard).expect("set");
/// assert_eq!(current, "v1");
///
/// // Writers replace the value; the old one is retired, and freed once no
/// // guard protects it any more. `current` stays valid meanwhile.
/// config.store(Some(Box::new(String::from("v2"))));
/// assert_eq!(current, "v1");
/// drop(guard);
///
/// assert_eq!(hazptr::scoped(&config, |v| v.cloned()), Some("v2".into()));
/// ```
///
/// Taking an old value back instead of retiring it, with `synchronize`:
///
/// ```
/// use hazptr::AtomicBox;
///
/// let slot = AtomicBox::new(vec![1, 2, 3]);
/// let old = slot.swap(Some(Box::new(vec![4]))).expect("was set");
/// let mut owned: Box<Vec<i32>> = old.synchronize(); // waits for readers
/// owned.push(99);
/// assert_eq!(*owned, vec![1, 2, 3, 99]);
/// ```
///
/// A box borrows its domain (`'d`), so a data structure cannot own both
/// its domain and boxes in it, as a struct cannot borrow from itself. Give
/// it a domain that outlives it instead: the global one (`AtomicBox::new`);
/// one made beside it and lent to it (`examples/treiber.rs` takes a
/// `&'d Domain`), whose drop then frees whatever the structure retired; or,
/// for a structure that lives as long as the program, a leaked one, whose
/// retired objects only reclamation passes free:
///
/// ```
/// use hazptr::{AtomicBox, Domain};
///
/// // Leaked on purpose, once per process: a domain made per structure or
/// // per request would leak each time. Those borrow a domain they own.
/// let domain: &'static Domain = Box::leak(Box::new(Domain::new()));
/// let config = AtomicBox::new_in(String::from("v1"), domain);
/// config.store(Some(Box::new(String::from("v2"))));
/// let mut guard = domain.guard();
/// assert_eq!(config.load(&mut guard).map(String::as_str), Some("v2"));
/// ```
///
/// `T: 'static`: a replaced value is dropped later, on whichever thread
/// reclaims it, at the latest when the domain is dropped, and by then any
/// borrow it held may have ended (the domain's type does not name `T`, so the
/// drop check cannot see it). A box of borrowed data does not compile:
///
/// ```compile_fail,E0597
/// let name = String::from("v1");
/// let slot = hazptr::AtomicBox::new(name.as_str()); // `name` does not live long enough
/// slot.store(Some(Box::new("v2")));
/// ```
///
/// Nor does a box of a zero-sized type: its boxes all have one address,
/// which a hazard pointer cannot tell apart.
///
/// ```compile_fail,E0080
/// #[repr(align(8))]
/// struct Marker;
/// let slot = hazptr::AtomicBox::new(Marker); // size_of::<Marker>() == 0
/// ```
///
/// Nor does a box of a type aligned to one byte (`u8`, `bool`, `[u8; N]`):
/// a slot with its low bit set is a wildcard, so a protected address must
/// be even. A wrapper with `#[repr(align(2))]` will do. Like the check
/// above, this one fails a build, not `cargo check`, which does not
/// evaluate it.
///
/// ```compile_fail,E0080
/// let slot = hazptr::AtomicBox::new(7u8); // align_of::<u8>() == 1
/// ```
///
/// Readers on other threads get `&T`, and a replaced value is freed on
/// whichever thread reclaims it, so `T` must be `Send` and `Sync`:
///
/// ```compile_fail,E0277
/// let slot = hazptr::AtomicBox::new(std::rc::Rc::new(7u32)); // `Rc<u32>` cannot be sent
/// ```
///
/// The box is invariant in `T`, which `retire_ptr` and `Replaced`'s drop
/// rely on: were it covariant, a `&AtomicBox<&'static str>` could be viewed
/// as a box of shorter-lived `&str`, given one that borrows a local, and
/// read back as `&'static str` after the local is gone.
///
/// ```compile_fail
/// use hazptr::AtomicBox;
///
/// // error: lifetime may not live long enough (`AtomicBox` is invariant over `T`)
/// fn shorten<'a>(b: &'a AtomicBox<'static, &'static str>) -> &'a AtomicBox<'static, &'a str> {
///     b
/// }
/// ```
pub struct AtomicBox<'d, T> {
    ptr: AtomicPtr<T>,
    domain: &'d Domain,
    _owns: PhantomData<Box<T>>,
}

// SAFETY: the box owns a `T` (so `Send` needs `T: Send`) and hands out `&T`
// to readers on other threads (so `Sync` needs `T: Sync`); replaced objects
// are freed on whichever thread reclaims them (so both need `T: Send`).
unsafe impl<T: Send + Sync> Send for AtomicBox<'_, T> {}
// SAFETY: as above.
unsafe impl<T: Send + Sync> Sync for AtomicBox<'_, T> {}

impl<T> fmt::Debug for AtomicBox<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Relaxed: printed, never dereferenced.
        f.debug_struct("AtomicBox")
            .field("ptr", &self.ptr.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

/// An empty box in the global domain, as [`AtomicBox::null`] (a null
/// pointer, like `AtomicPtr`'s default).
impl<T: Send + Sync + 'static> Default for AtomicBox<'static, T> {
    fn default() -> Self {
        AtomicBox::null()
    }
}

/// `AtomicBox::from(value)`, as [`AtomicBox::new`]: in the global domain.
impl<T: Send + Sync + 'static> From<T> for AtomicBox<'static, T> {
    fn from(value: T) -> Self {
        AtomicBox::new(value)
    }
}

/// An owned box, published as it is (no new allocation), in the global
/// domain. (Without it, `AtomicBox::from(Box::new(x))` would resolve to
/// `From<T>` and box the box.)
///
/// ```
/// let shared: hazptr::AtomicBox<u32> = hazptr::AtomicBox::from(Box::new(5));
/// assert_eq!(hazptr::scoped(&shared, |v| v.copied()), Some(5));
/// ```
impl<T: Send + Sync + 'static> From<Box<T>> for AtomicBox<'static, T> {
    fn from(value: Box<T>) -> Self {
        AtomicBox::from_box_in(Some(value), Domain::global())
    }
}

/// An owned box or none, published as it is (no new allocation), in the
/// global domain.
///
/// ```
/// let shared = hazptr::AtomicBox::from(Some(Box::new(5)));
/// assert_eq!(hazptr::scoped(&shared, |v| v.copied()), Some(5));
/// let empty = hazptr::AtomicBox::<u32>::from(None);
/// assert!(empty.load_ptr().is_null());
/// ```
impl<T: Send + Sync + 'static> From<Option<Box<T>>> for AtomicBox<'static, T> {
    fn from(value: Option<Box<T>>) -> Self {
        AtomicBox::from_box_in(value, Domain::global())
    }
}

impl<T: Send + Sync + 'static> AtomicBox<'static, T> {
    /// A box holding `value`, in the global domain.
    pub fn new(value: T) -> Self {
        AtomicBox::from_box_in(Some(Box::new(value)), Domain::global())
    }

    /// An empty box, in the global domain.
    pub fn null() -> Self {
        AtomicBox::from_box_in(None, Domain::global())
    }
}

impl<'d, T: Send + Sync + 'static> AtomicBox<'d, T> {
    /// A box holding `value`, in `domain`.
    pub fn new_in(value: T, domain: &'d Domain) -> Self {
        AtomicBox::from_box_in(Some(Box::new(value)), domain)
    }

    /// A box holding `value` (or nothing), in `domain`.
    pub fn from_box_in(value: Option<Box<T>>, domain: &'d Domain) -> Self {
        // 2-aligned and sized, as every protected type (`guard::protectable`).
        crate::guard::protectable::<T>();
        AtomicBox {
            ptr: AtomicPtr::new(value.map_or(ptr::null_mut(), Box::into_raw)),
            domain,
            _owns: PhantomData,
        }
    }
}

// Only the constructors ask for `T: 'static` (see the type's docs): every
// box is built by one of them.
impl<'d, T: Send + Sync> AtomicBox<'d, T> {
    /// The underlying pointer (for [`crate::scoped`]).
    pub(crate) fn raw(&self) -> &AtomicPtr<T> {
        &self.ptr
    }

    /// The domain whose guards protect this box's values.
    pub fn domain(&self) -> &'d Domain {
        self.domain
    }

    /// Loads the current value and protects it with `guard` until the guard
    /// protects something else, is reset or dropped.
    ///
    /// The reference borrows the guard mutably, so it cannot outlive that
    /// protection: each of these fails to compile while the value is still
    /// used afterwards.
    ///
    /// ```compile_fail,E0505
    /// let config = hazptr::AtomicBox::new(String::from("v1"));
    /// let mut guard = hazptr::Guard::new();
    /// let current = config.load(&mut guard).expect("set");
    /// drop(guard); // E0505: the protection ends while `current` is in use
    /// assert_eq!(current, "v1");
    /// ```
    ///
    /// ```compile_fail,E0499
    /// let config = hazptr::AtomicBox::new(String::from("v1"));
    /// let mut guard = hazptr::Guard::new();
    /// let current = config.load(&mut guard).expect("set");
    /// guard.reset(); // E0499: as is resetting it
    /// assert_eq!(current, "v1");
    /// ```
    ///
    /// ```compile_fail,E0499
    /// let first = hazptr::AtomicBox::new(1u64);
    /// let second = hazptr::AtomicBox::new(2u64);
    /// let mut guard = hazptr::Guard::new();
    /// let one = first.load(&mut guard).expect("set");
    /// let two = second.load(&mut guard).expect("set"); // E0499: as is protecting another
    /// assert_eq!(*one + *two, 3);
    /// ```
    ///
    /// Nor can it outlive the box, which owns the current value:
    ///
    /// ```compile_fail,E0505
    /// let config = hazptr::AtomicBox::new(String::from("v1"));
    /// let mut guard = hazptr::Guard::new();
    /// let current = config.load(&mut guard).expect("set");
    /// drop(config); // E0505: the box, and its value, go while `current` is in use
    /// assert_eq!(current, "v1");
    /// ```
    ///
    /// # Panics
    ///
    /// If `guard` belongs to another domain than the box (its protection
    /// would not be seen by this domain's reclamation).
    #[inline]
    pub fn load<'a>(&'a self, guard: &'a mut Guard<'_>) -> Option<&'a T> {
        if !ptr::eq(guard.wildcard_word(), self.domain.shared.wildcard()) {
            wrong_domain();
        }
        let p = guard.protect_ptr(&self.ptr);
        // SAFETY: `p` is null or an object this box published; `guard`
        // protects it in the box's domain, so it is not freed before the
        // guard's protection ends, which needs `&mut guard`, borrowed for
        // `'a`. `&self` for `'a` keeps the box (owner of the current value)
        // alive.
        unsafe { p.as_ref() }
    }

    /// The current pointer, unprotected (for comparisons, e.g. as the
    /// `current` argument of [`AtomicBox::compare_exchange`]).
    pub fn load_ptr(&self) -> *mut T {
        // Acquire pairs with the Release of the stores that published it.
        self.ptr.load(Ordering::Acquire)
    }

    /// Replaces the value and retires the old one. (haphazard's `store`
    /// does not: code ported from it must not retire the old pointer
    /// again.)
    ///
    /// The retire may run a reclamation pass on this thread, dropping other
    /// objects retired earlier (see [`Domain::retire`] on where deleters run:
    /// a `T` whose `Drop` takes a lock that updaters hold can deadlock here).
    ///
    /// # Panics
    ///
    /// If the retire runs a pass and a dropped value panics, as
    /// [`Domain::retire`] says.
    pub fn store(&self, value: Option<Box<T>>) {
        drop(self.swap(value));
    }

    /// Replaces the value and returns the old one as [`Replaced`]: retired
    /// when dropped, or handed back by [`Replaced::synchronize`].
    #[must_use = "dropping the old value retires it: use store() for that"]
    pub fn swap(&self, value: Option<Box<T>>) -> Option<Replaced<'d, T>> {
        let new = value.map_or(ptr::null_mut(), Box::into_raw);
        // AcqRel: Release publishes the new object to readers' Acquire
        // loads; Acquire makes the old object's contents visible to us (we
        // may take it back).
        let old = self.ptr.swap(new, Ordering::AcqRel);
        NonNull::new(old).map(|ptr| Replaced {
            ptr,
            domain: self.domain,
        })
    }

    /// Stores `new` if the current pointer is `current`. On success returns
    /// the old value (retired when dropped); on failure returns the pointer
    /// found instead, unprotected (a comparand for the next attempt, as from
    /// [`AtomicBox::load_ptr`]), and hands `new` back.
    ///
    /// A read-modify-write loop loads under a guard, builds the new value
    /// from what it read, and retries with the value it gets back:
    ///
    /// ```
    /// use hazptr::{AtomicBox, Guard};
    ///
    /// let counter = AtomicBox::new(1u64);
    /// let mut guard = Guard::new();
    /// let mut fresh = Box::new(0);
    /// loop {
    ///     let seen = counter.load(&mut guard).expect("never empty");
    ///     *fresh = *seen + 1;
    ///     match counter.compare_exchange(seen, Some(fresh)) {
    ///         Ok(_replaced) => break, // retired when dropped
    ///         Err(lost) => fresh = lost.new.expect("we offered a value"),
    ///     }
    /// }
    /// drop(guard);
    /// assert_eq!(hazptr::scoped(&counter, |v| v.copied()), Some(2));
    /// ```
    ///
    /// # Errors
    ///
    /// [`CompareExchangeError`] when the pointer was not `current`: its
    /// `current` is the pointer found there, a comparand only (protect and
    /// validate it before reading through it), and its `new` hands back the
    /// value not stored.
    pub fn compare_exchange(
        &self,
        current: *const T,
        new: Option<Box<T>>,
    ) -> Result<Option<Replaced<'d, T>>, CompareExchangeError<T>> {
        let new_ptr = new.map_or(ptr::null_mut(), Box::into_raw);
        // AcqRel on success as in `swap`. Acquire on failure, as `load_ptr`:
        // it pairs with the Release of the store that published the pointer
        // handed back, for a caller that protects and validates it.
        match self.ptr.compare_exchange(
            current.cast_mut(),
            new_ptr,
            Ordering::AcqRel,
            Ordering::Acquire,
        ) {
            Ok(old) => Ok(NonNull::new(old).map(|ptr| Replaced {
                ptr,
                domain: self.domain,
            })),
            Err(found) => Err(CompareExchangeError {
                current: found,
                // SAFETY: the exchange failed, so `new_ptr` was never
                // published and is still exclusively ours.
                new: NonNull::new(new_ptr).map(|p| unsafe { Box::from_raw(p.as_ptr()) }),
            }),
        }
    }

    /// The raw exchange for data structures whose links own differently
    /// (a Treiber stack's head): stores `new` if the pointer is `current` and
    /// returns the old pointer, which is neither retired nor freed.
    ///
    /// # Errors
    ///
    /// `Err(found)` when the pointer was not `current`: `found` is the
    /// pointer there instead, a comparand only (protect and validate it
    /// before reading through it), and `new` was not stored: the caller
    /// still owns it, to offer again or to free.
    ///
    /// # Safety
    ///
    /// `new` is null or a `Box::into_raw` pointer that the box may own from
    /// now on, and the caller takes responsibility for the old pointer
    /// (retire it with [`AtomicBox::retire_ptr`] once it is unreachable).
    pub unsafe fn compare_exchange_ptr(
        &self,
        current: *mut T,
        new: *mut T,
    ) -> Result<*mut T, *mut T> {
        // AcqRel on success, as in `compare_exchange`. Relaxed on failure,
        // unlike `compare_exchange`'s Acquire: the pointer handed back is a
        // comparand only, and a caller that reads through it protects it and
        // validates it with an Acquire load first (`load_ptr`), which orders
        // the object's contents.
        self.ptr
            .compare_exchange(current, new, Ordering::AcqRel, Ordering::Relaxed)
    }

    /// Retires `ptr` to this box's domain, to be freed as a `Box<T>`.
    ///
    /// # Panics and aborts
    ///
    /// As [`Domain::retire`].
    ///
    /// # Safety
    ///
    /// As [`Domain::retire_box`]: `ptr` came from `Box::into_raw`, is
    /// unreachable for new readers, and is retired once. It must carry the
    /// `Box::into_raw` pointer's right to free: pass the pointer
    /// [`AtomicBox::compare_exchange_ptr`] returned (or [`AtomicBox::load_ptr`]
    /// read), not one made from the `&T` that [`AtomicBox::load`] gave, which
    /// may only read the object (freeing through it is undefined behaviour).
    pub unsafe fn retire_ptr(&self, ptr: *mut T) {
        // SAFETY: `Domain::retire`'s items 1, 2 and 5 and the `Box` origin
        // are the caller's (forwarded contract). Item 3: `T: Send` from the
        // impl bounds, and `T: 'static` from every constructor's bound
        // (`AtomicBox` is invariant in `T`, through `AtomicPtr`). Item 4:
        // `from_box_in`'s const assert.
        unsafe { self.domain.retire_box(ptr) }
    }

    /// Takes the value out (no reader can hold it: `&mut self`).
    pub fn take(&mut self) -> Option<Box<T>> {
        // Relaxed: `&mut self` means every other access happened before.
        let old = self.ptr.swap(ptr::null_mut(), Ordering::Relaxed);
        // SAFETY: owned by the box, and `&mut self` excludes readers.
        NonNull::new(old).map(|p| unsafe { Box::from_raw(p.as_ptr()) })
    }

    /// The value, to change in place without a guard or a retire, as
    /// `AtomicPtr::get_mut` and `Mutex::get_mut` give theirs: `&mut self`
    /// means no reader holds it and none can load it meanwhile.
    ///
    /// ```
    /// use hazptr::AtomicBox;
    ///
    /// let mut config = AtomicBox::new(vec![1, 2]);
    /// config.get_mut().expect("not null").push(3);
    /// assert_eq!(config.into_inner().as_deref(), Some(&vec![1, 2, 3]));
    /// ```
    pub fn get_mut(&mut self) -> Option<&mut T> {
        // Relaxed: `&mut self` means every other access happened before.
        let p = self.ptr.load(Ordering::Relaxed);
        // SAFETY: owned by the box; `&mut self` excludes readers (their
        // references borrow the box), and the result borrows the box
        // mutably, so no load or swap runs while it lives.
        unsafe { p.as_mut() }
    }

    /// The value, the box consumed (what [`take`](Self::take) gives, without
    /// a `mut` binding).
    pub fn into_inner(mut self) -> Option<Box<T>> {
        self.take()
    }
}

#[cold]
#[inline(never)]
fn wrong_domain() -> ! {
    panic!(
        "hazptr: AtomicBox::load with a guard of another domain (use the box's domain().guard())"
    )
}

impl<T> Drop for AtomicBox<'_, T> {
    fn drop(&mut self) {
        // Relaxed suffices: `&mut self` means every other access happened
        // before (through whatever gave us exclusive ownership).
        let p = self.ptr.load(Ordering::Relaxed);
        if !p.is_null() {
            // SAFETY: owned by the box; `&mut self` excludes readers (their
            // references borrow the box).
            drop(unsafe { Box::from_raw(p) });
        }
    }
}

/// What a failed [`AtomicBox::compare_exchange`] returns: the pointer found
/// in the box instead of the comparand, and the value that was not stored.
pub struct CompareExchangeError<T> {
    /// The box's pointer when the exchange failed: unprotected, so only an
    /// address to compare, or to pass as the next attempt's `current`. To
    /// read the object, load it again under a guard.
    pub current: *mut T,
    /// The value the exchange offered, handed back.
    pub new: Option<Box<T>>,
}

// SAFETY: `current` is an address the error never dereferences; `new` is an
// owned box, which may move to another thread when `T` may.
unsafe impl<T: Send> Send for CompareExchangeError<T> {}
// SAFETY: as above; shared access reads `new` through `&Box<T>`.
unsafe impl<T: Sync> Sync for CompareExchangeError<T> {}

impl<T> fmt::Display for CompareExchangeError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "compare_exchange found {:p} instead of the expected pointer",
            self.current
        )
    }
}

impl<T> std::error::Error for CompareExchangeError<T> {}

impl<T> fmt::Debug for CompareExchangeError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CompareExchangeError")
            .field("current", &self.current)
            .field("new", &self.new.as_ref().map(|_| ..))
            .finish()
    }
}

/// A value replaced in an [`AtomicBox`]: unpublished, possibly still read by
/// guards. Dropping it retires it; [`Replaced::synchronize`] waits for the
/// readers and hands it back. It dereferences to the old value, and may be
/// sent to another thread (a reclaimer, say) to be synchronized or retired
/// there.
#[must_use = "dropping a Replaced retires it; call synchronize() to take it back"]
pub struct Replaced<'d, T: Send> {
    ptr: NonNull<T>,
    domain: &'d Domain,
}

// SAFETY: a `Replaced` owns its object: sending it moves the `T` (`T: Send`),
// which `synchronize` or the retirement then frees on the receiving thread,
// while readers on other threads may still hold `&T` to it (`T: Sync`, as
// `AtomicBox` requires to be shared). `&Domain` is `Send`: `Domain` is `Sync`.
unsafe impl<T: Send + Sync> Send for Replaced<'_, T> {}
// SAFETY: `&Replaced` gives out only the address and `&T` (`T: Sync`).
unsafe impl<T: Send + Sync> Sync for Replaced<'_, T> {}

impl<T: Send> Deref for Replaced<'_, T> {
    type Target = T;

    /// The old value, which stays alive until the `Replaced` is dropped
    /// (retired) or synchronized.
    fn deref(&self) -> &T {
        // SAFETY: the object is freed only after this `Replaced` is consumed
        // (`synchronize` hands it back, `drop` retires it), and readers hold
        // only shared references to it.
        unsafe { self.ptr.as_ref() }
    }
}

impl<T: Send> fmt::Debug for Replaced<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Replaced").field(&self.ptr).finish()
    }
}

impl<T: Send> Replaced<'_, T> {
    /// The old object's address.
    pub fn as_ptr(&self) -> *const T {
        self.ptr.as_ptr()
    }

    /// Waits until no guard that protected the object before this call still
    /// does ([`Domain::synchronize`]), then returns it.
    ///
    /// # Panics
    ///
    /// As [`Domain::synchronize`] does, for instance if the calling thread
    /// holds a guard protecting the object. The object is then retired (the
    /// unwinding drops `self`), so it is freed once no guard protects it;
    /// except between the fork hooks with no batch to retire it to (see
    /// [`Domain::retire`]'s *Panics*), where it is leaked: that retire is
    /// refused too, and a second panic would abort the process.
    pub fn synchronize(self) -> Box<T> {
        // Before taking the object out: if this panics, unwinding drops
        // `self`, which retires the object instead of leaking it.
        self.domain.synchronize(self.ptr.as_ptr());
        let this = std::mem::ManuallyDrop::new(self);
        // SAFETY: the object came from `Box::into_raw`, was unpublished by
        // the replacing operation, and after `synchronize` no guard protects
        // it; `ManuallyDrop` keeps `Drop` from retiring it as well.
        unsafe { Box::from_raw(this.ptr.as_ptr()) }
    }

    /// Retires it now (what dropping does).
    ///
    /// # Panics and aborts
    ///
    /// As [`Domain::retire`] (a drop while the thread unwinds leaks the
    /// object rather than panic between the fork hooks).
    pub fn retire(self) {
        drop(self);
    }
}

impl<T: Send> Drop for Replaced<'_, T> {
    fn drop(&mut self) {
        // SAFETY: a `Box::into_raw` pointer unpublished by the replacing
        // operation (item 1); `Replaced` is its only owner and retires it
        // once (item 2). It came from an `AtomicBox<T>` of this domain,
        // whose constructors ask for `T: Send + 'static` and a 2-aligned `T`
        // (items 3 and 4: `Replaced`'s covariance in `T` can only shorten
        // lifetimes the object does not need), and whose `load` refuses a
        // guard of another domain (item 5).
        unsafe { self.domain.retire_box(self.ptr.as_ptr()) };
    }
}
