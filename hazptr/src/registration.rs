//! Thread registration: the slot block a thread uses in each domain, and the
//! backup slots its guards hold. The kernel's slots are per CPU and need no
//! registration; threads come and go, so a thread registers with a domain on
//! its first acquire there.
//!
//! A registration takes a free block of the domain (or allocates one) and
//! records it twice in thread-local storage: in a registration list
//! (`REGISTRATIONS`) whose destructor gives the block back at thread exit,
//! and in a destructor-free cache (`FAST`) that the acquire fast path reads
//! with one TLS access.
//!
//! # Invariants
//!
//! - A block in `FAST` is also in `REGISTRATIONS`, and this thread owns it
//!   until the list's destructor (or the exit key's) gives it back. The
//!   give-back clears `FAST` first, so a later thread-local destructor that
//!   acquires finds no block and takes a backup slot instead.
//! - `FAST` caches the global domain's block and the last user domain's, by
//!   domain id; ids are never reused, so a cached id of a dropped domain
//!   matches no live one. The user pair is written only with
//!   `user_updating` set, and a signal handler that finds it set leaves the
//!   pair alone: a handler's write between the interrupted code's block and
//!   id stores would otherwise pair one domain's id with another's block.
//! - `HELD_BACKUPS` lists the backup slots this thread's guards hold, keyed
//!   by domain id, from [`remember_backup`] (the guard's slow path) to
//!   [`forget_backup`] (its drop), so that [`thread_holds`] sees every slot
//!   of this thread, its block's and its backups'. It needs no drop, so it
//!   is never destroyed; beyond its 16 entries it counts, and
//!   `thread_holds` then walks the domain's backup slots for the thread's
//!   token.
//! - A thread with a registration has armed the exit key ([`settle_exit_key`]):
//!   glibc runs the thread-local destructors once, then the POSIX key
//!   destructors, and a thread whose first registration came from a key
//!   destructor (another library's exit hook calling into Rust) never runs
//!   `REGISTRATIONS`' destructor. The exit key's destructor then gives the
//!   blocks back; after the thread-local destructor it finds nothing (the
//!   list is gone or empty).
//! - The address of `TOKEN` is the thread's token ([`thread_token`]),
//!   unique among live threads: slot owners are recorded by it, and it
//!   spreads threads over a domain's overflow lists. Its value caches the
//!   thread's kernel id ([`thread_os_id`], 0 until first read), which slot
//!   owners record too, for the stall warnings; `after_fork_child` forgets
//!   it, since the child's thread has an id of its own.

use crate::domain::{Domain, GLOBAL_ID, Shared};
use crate::slot::{BackupSlot, SlotBlock};
use crate::sync::Ordering;
use std::cell::{Cell, RefCell};
use std::ptr::{self, NonNull};
use std::sync::Arc;
use std::sync::atomic::compiler_fence;

/// The destructor-free thread-local cache the fast path reads.
struct FastCache {
    /// This thread's block in the global domain, or null.
    global: Cell<*mut SlotBlock>,
    /// The id and block of the last user domain this thread used.
    user_id: Cell<u64>,
    user_block: Cell<*mut SlotBlock>,
    /// Set while this thread writes `user_id` and `user_block`.
    user_updating: Cell<bool>,
    /// Whether this thread ever registered (and so has `REGISTRATIONS`):
    /// the exit key's destructor, armed by `fork::before_fork` too, touches
    /// `REGISTRATIONS` only then, instead of creating it after the
    /// thread-local destructors have run (never to be destroyed).
    #[cfg(not(loom))]
    registered: Cell<bool>,
}

impl FastCache {
    /// The cached block of the domain with id `id`, or null.
    #[inline(always)]
    fn block_of(&self, id: u64) -> *mut SlotBlock {
        if id == GLOBAL_ID {
            self.global.get()
        } else if self.user_id.get() == id {
            self.user_block.get()
        } else {
            ptr::null_mut()
        }
    }
}

/// A thread's blocks, given back by the destructor at thread exit.
struct Registrations {
    list: RefCell<Vec<Registration>>,
}

struct Registration {
    shared: Arc<Shared>,
    block: NonNull<SlotBlock>,
}

#[cfg(not(loom))]
thread_local! {
    static FAST: FastCache = const {
        FastCache {
            global: Cell::new(ptr::null_mut()),
            user_id: Cell::new(0),
            user_block: Cell::new(ptr::null_mut()),
            user_updating: Cell::new(false),
            registered: Cell::new(false),
        }
    };
    static REGISTRATIONS: Registrations = const { Registrations { list: RefCell::new(Vec::new()) } };
    static TOKEN: Cell<i32> = const { Cell::new(0) };
    static HELD_BACKUPS: HeldBackups = const { HeldBackups::new() };
}

#[cfg(loom)]
loom::thread_local! {
    static FAST: FastCache = FastCache {
        global: Cell::new(ptr::null_mut()),
        user_id: Cell::new(0),
        user_block: Cell::new(ptr::null_mut()),
        user_updating: Cell::new(false),
    };
    static REGISTRATIONS: Registrations = Registrations { list: RefCell::new(Vec::new()) };
    static TOKEN: Cell<i32> = Cell::new(0);
    static HELD_BACKUPS: HeldBackups = HeldBackups::new();
}

/// How many of the backup slots a thread holds [`HeldBackups`] lists; the
/// rest it only counts.
const HELD_BACKUP_ENTRIES: usize = 16;

/// The backup slots this thread's guards hold, keyed by domain id, for
/// [`thread_holds`]: the first [`HELD_BACKUP_ENTRIES`] listed, the rest
/// counted (a `synchronize` check of a thread with some unlisted walks the
/// domain's backup slots for its token instead). Plain cells in a fixed
/// array: the type needs no drop, so std neither destroys it at thread exit
/// nor, for a first use in a POSIX key destructor, registers a destructor
/// that would never run. Until 2026-12-07 it was a `RefCell<Vec<_>>`: gone
/// for a thread-local destructor that ran after it (whose guard's
/// `synchronize` then hung), and its buffer leaked by every thread that
/// first took a backup slot in a key destructor.
struct HeldBackups {
    len: Cell<usize>,
    /// Backup slots held beyond the listed ones.
    unlisted: Cell<usize>,
    entries: [Cell<(u64, *const BackupSlot)>; HELD_BACKUP_ENTRIES],
}

#[cfg(not(loom))]
const _: () = assert!(!std::mem::needs_drop::<HeldBackups>());

impl HeldBackups {
    const fn new() -> HeldBackups {
        HeldBackups {
            len: Cell::new(0),
            unlisted: Cell::new(0),
            entries: [const { Cell::new((0, ptr::null())) }; HELD_BACKUP_ENTRIES],
        }
    }

    fn remember(&self, domain: u64, node: *const BackupSlot) {
        let len = self.len.get();
        match self.entries.get(len) {
            Some(entry) => {
                entry.set((domain, node));
                self.len.set(len + 1);
            }
            None => self.unlisted.set(self.unlisted.get() + 1),
        }
    }

    fn forget(&self, domain: u64, node: *const BackupSlot) {
        let len = self.len.get();
        let listed = &self.entries[..len];
        match listed.iter().rposition(|e| e.get() == (domain, node)) {
            Some(i) => {
                // Swap-remove: the last entry takes its place.
                listed[i].set(listed[len - 1].get());
                self.len.set(len - 1);
            }
            None => self.unlisted.set(self.unlisted.get().saturating_sub(1)),
        }
    }

    /// Whether a listed slot of the domain with id `domain` holds `addr`.
    fn lists(&self, domain: u64, addr: usize) -> bool {
        self.entries[..self.len.get()].iter().any(|e| {
            let (d, n) = e.get();
            // SAFETY: an entry of this domain, which is alive, and its
            // backup slots live as long as it does. Entries are keyed by
            // the domain's id, never reused, not by its address: a
            // forgotten guard's entry outlives its domain, whose address
            // (and whose nodes') a later domain may get. Relaxed: only this
            // thread writes the values of the backup slots it holds.
            d == domain && unsafe { &*n }.value.load(Ordering::Relaxed) == addr
        })
    }
}

/// Whether this thread may have registrations (`REGISTRATIONS` exists): the
/// lookups that only read it leave it alone otherwise, so that a thread that
/// never registered does not create it in a POSIX key destructor (where its
/// destructor would never run and glibc's record of it leaks).
#[inline]
fn may_have_registrations() -> bool {
    #[cfg(not(loom))]
    return FAST.with(|fast| fast.registered.get());
    #[cfg(loom)]
    true
}

/// The calling thread's block in `shared`, registering on first use (the
/// fast path is the TLS read). `None` when the domain forces the slow path
/// or the thread is exiting.
#[inline]
pub(crate) fn block(shared: &Arc<Shared>) -> Option<NonNull<SlotBlock>> {
    let cached = FAST.with(|fast| fast.block_of(shared.id));
    match NonNull::new(cached) {
        Some(block) => Some(block),
        None => register(shared),
    }
}

/// The calling thread's block in `shared` if it has registered there,
/// without registering (`Domain::reclaim` reads its retire count).
pub(crate) fn registered_block(shared: &Shared) -> Option<NonNull<SlotBlock>> {
    let cached = FAST
        .try_with(|fast| fast.block_of(shared.id))
        .unwrap_or(ptr::null_mut());
    NonNull::new(cached).or_else(|| {
        if !may_have_registrations() {
            return None;
        }
        REGISTRATIONS
            .try_with(|regs| {
                // Borrowed mutably: this is a signal handler that
                // interrupted a registration; `None` only costs `reclaim`
                // a round.
                let list = regs.list.try_borrow().ok()?;
                list.iter()
                    .find(|r| r.shared.id == shared.id)
                    .map(|r| r.block)
            })
            .ok()
            .flatten()
    })
}

/// Records `node` of the domain with id `domain` among the calling thread's
/// held backup slots (a guard's slow path), until [`forget_backup`].
pub(crate) fn remember_backup(domain: u64, node: NonNull<BackupSlot>) {
    HELD_BACKUPS.with(|held| held.remember(domain, node.as_ptr().cast_const()));
}

/// Forgets `node` of the domain with id `domain` from the calling thread's
/// held backup slots (guard drop).
pub(crate) fn forget_backup(domain: u64, node: NonNull<BackupSlot>) {
    HELD_BACKUPS.with(|held| held.forget(domain, node.as_ptr().cast_const()));
}

/// The calling thread's block in the global domain, registering on first use
/// (the fast path of [`Guard::new`](crate::Guard::new) is the TLS read).
#[inline(always)]
pub(crate) fn global_block() -> Option<NonNull<SlotBlock>> {
    match NonNull::new(FAST.with(|fast| fast.global.get())) {
        Some(block) => Some(block),
        None => register_global(),
    }
}

#[cold]
#[inline(never)]
fn register_global() -> Option<NonNull<SlotBlock>> {
    Domain::global().block()
}

/// A backup slot of the global domain (the slow path of `Guard::new`).
#[cold]
#[inline(never)]
pub(crate) fn global_backup_slot() -> NonNull<BackupSlot> {
    Domain::global().backup_slot()
}

/// A number unique to the calling thread among live threads (the address of
/// a thread-local), used to spread threads over the overflow lists. 0 if the
/// thread-locals are gone (thread exit).
pub(crate) fn thread_token() -> usize {
    TOKEN.try_with(|t| ptr::from_ref(t) as usize).unwrap_or(0)
}

/// The kernel's id of the calling thread (`gettid()`), read once per thread
/// and cached in `TOKEN`, which has no destructor and so can be read
/// throughout thread exit too (0, for a failed read, is only a fallback).
/// Slot owners record it so that a stall warning can name the thread whose
/// guard holds a scan up, as a debugger or `top -H` shows it.
#[cfg(not(loom))]
pub(crate) fn thread_os_id() -> i32 {
    TOKEN
        .try_with(|t| {
            if t.get() == 0 {
                // SAFETY: gettid() takes nothing and cannot fail.
                t.set(unsafe { libc::gettid() });
            }
            t.get()
        })
        .unwrap_or(0)
}

/// Forgets the cached kernel id of the calling thread: in a fork child,
/// whose one thread has an id of its own (`after_fork_child`).
#[cfg(not(loom))]
pub(crate) fn forget_thread_os_id() {
    let _ = TOKEN.try_with(|t| t.set(0));
}

/// True once the calling thread's registrations are being or have been
/// destroyed (thread exit): what runs then runs in a thread-local
/// destructor, out of which a panic aborts the process.
pub(crate) fn thread_state_gone() -> bool {
    may_have_registrations() && REGISTRATIONS.try_with(|_| ()).is_err()
}

/// Finds or creates the calling thread's block in `shared`.
#[cold]
#[inline(never)]
fn register(shared: &Arc<Shared>) -> Option<NonNull<SlotBlock>> {
    if shared.options.force_slow_path {
        return None;
    }
    let block = REGISTRATIONS
        .try_with(|regs| {
            // Borrowed already: a signal handler that interrupted this
            // thread inside a look at the list (`registered_block`,
            // `thread_holds`, a registration). It goes without a block, as a
            // thread at exit does (a backup slot, the shared retired list),
            // rather than panicking inside the handler.
            let Ok(mut list) = regs.list.try_borrow_mut() else {
                return None;
            };
            if let Some(r) = list.iter().find(|r| r.shared.id == shared.id) {
                return Some(r.block);
            }
            // Give back blocks of dropped domains first, so that a thread
            // using many short-lived domains does not pile them up. Only
            // where the dropped domain's retired-list lock is free: a
            // reader's first guard must not wait for a pass, nor for the
            // fork hooks of any thread, this one's included, which hold it
            // (the domain lives on while this registration keeps it). A
            // later registration gives such blocks back.
            let forking = crate::between_fork_hooks();
            list.retain(|r| {
                // Relaxed: see the store in `Drop for Domain`; the give-back
                // synchronizes through the retired-list mutex.
                !(r.shared.dropped.load(Ordering::Relaxed)
                    && !forking
                    // SAFETY: this thread owns `r.block`; the domain handle
                    // is gone, so no guard or retire of this thread uses it.
                    && unsafe { r.shared.try_give_back_block(r.block) })
            });
            let block = shared.take_block(thread_token());
            list.push(Registration {
                shared: Arc::clone(shared),
                block,
            });
            #[cfg(not(loom))]
            {
                let _ = FAST.try_with(|fast| fast.registered.set(true));
                arm_exit_key();
            }
            Some(block)
        })
        .ok()??;
    let _ = FAST.try_with(|fast| {
        if shared.id == GLOBAL_ID {
            fast.global.set(block.as_ptr());
        } else if !fast.user_updating.get() {
            // Three steps, with compiler fences between them, so that a
            // signal handler that acquires on this thread in between never
            // pairs the new id with the old block (a block of another
            // domain, perhaps given back above): it sees no cached block and
            // registers itself, which finds its registration in the list
            // and, finding `user_updating` set, leaves the pair to this
            // update instead of writing a pair of its own into the middle
            // of it.
            fast.user_updating.set(true);
            compiler_fence(Ordering::SeqCst);
            fast.user_id.set(0);
            compiler_fence(Ordering::SeqCst);
            fast.user_block.set(block.as_ptr());
            compiler_fence(Ordering::SeqCst);
            #[cfg(all(test, not(loom)))]
            tests::interrupt_mid_update();
            fast.user_id.set(shared.id);
            compiler_fence(Ordering::SeqCst);
            fast.user_updating.set(false);
        }
    });
    Some(block)
}

impl Registrations {
    /// Gives every block of the exiting thread back: the thread-local's
    /// destructor, or the exit key's when that one never runs.
    fn give_back_all(&self) {
        // A thread that exits between the fork hooks (a misuse) holds the
        // retired-list locks that the hand-overs below take.
        #[cfg(not(loom))]
        crate::fork::release_at_thread_exit();
        // Later destructors that use hazard pointers must not find the
        // blocks in the cache: they go to backup slots instead (after the
        // thread-local destructor), or register again (after the exit key's,
        // which a new registration arms again).
        let _ = FAST.try_with(|fast| {
            fast.global.set(ptr::null_mut());
            fast.user_id.set(0);
            fast.user_block.set(ptr::null_mut());
        });
        // Taken out first, and the borrow ended: a give-back may drop the
        // last handle of a dropped domain, whose drop runs the deleters of
        // anything still retired in it, and a signal handler may register:
        // either may borrow the list.
        let list = match self.list.try_borrow_mut() {
            Ok(mut list) => std::mem::take(&mut *list),
            Err(_) => return,
        };
        for r in list {
            // SAFETY: this thread owns `r.block` and is exiting.
            unsafe { r.shared.give_back_block(r.block) };
        }
    }
}

impl Drop for Registrations {
    fn drop(&mut self) {
        self.give_back_all();
    }
}

/// The exit key: a POSIX thread-specific key whose destructor gives back the
/// blocks of a thread whose `REGISTRATIONS` destructor never runs (see the
/// module docs). `None` if the process ran out of keys: such a thread's
/// blocks then stay in use, as they did before the key.
#[cfg(not(loom))]
static EXIT_KEY: std::sync::OnceLock<Option<libc::pthread_key_t>> = std::sync::OnceLock::new();

/// Creates the exit key if no thread has yet. `fork::before_fork` calls it
/// too: a thread creating it at the fork would leave the child a `OnceLock`
/// that blocks every registration forever.
#[cfg(not(loom))]
pub(crate) fn settle_exit_key() -> Option<libc::pthread_key_t> {
    *EXIT_KEY.get_or_init(|| {
        let mut key: libc::pthread_key_t = 0;
        // SAFETY: `key` is a valid place for the new key; the destructor is
        // a function for the whole process's life.
        let rc = unsafe { libc::pthread_key_create(&mut key, Some(give_back_at_key_exit)) };
        (rc == 0).then_some(key)
    })
}

/// Sets the calling thread's exit-key value (a registration, or any
/// `fork::before_fork`): a non-null value is what makes glibc call the
/// key's destructor at thread exit.
#[cold]
#[cfg(not(loom))]
pub(crate) fn arm_exit_key() {
    if let Some(key) = settle_exit_key() {
        // SAFETY: a key this process created and never deletes; the value is
        // a flag, never dereferenced.
        let _ = unsafe { libc::pthread_setspecific(key, ptr::dangling::<libc::c_void>()) };
    }
}

/// The exit key's destructor: releases what a `fork::before_fork` without
/// its `after_fork_*` still holds (a thread exiting between the hooks,
/// whose `before_fork` ran in a thread-local destructor after the one that
/// would release it, or in a key destructor), then
/// gives back what `REGISTRATIONS` still holds (its hand-over of the
/// thread's batch takes a lock `before_fork` holds). `REGISTRATIONS`' own
/// destructor ran first when it runs at all, and then the list is gone
/// (`try_with` fails) or empty.
#[cfg(not(loom))]
unsafe extern "C" fn give_back_at_key_exit(_: *mut libc::c_void) {
    crate::fork::release_at_thread_exit();
    if FAST.try_with(|fast| fast.registered.get()) == Ok(true) {
        let _ = REGISTRATIONS.try_with(Registrations::give_back_all);
    }
}

/// The calling thread's slot values, for the synchronize-while-holding check:
/// true if one of this thread's slots in `shared` holds `addr`.
pub(crate) fn thread_holds(domain: &Domain, addr: usize) -> bool {
    let id = domain.shared.id;
    let block = FAST
        .try_with(|fast| fast.block_of(id))
        .unwrap_or(ptr::null_mut());
    let block = NonNull::new(block).or_else(|| {
        if !may_have_registrations() {
            return None;
        }
        REGISTRATIONS
            .try_with(|regs| {
                regs.list
                    .borrow()
                    .iter()
                    .find(|r| r.shared.id == id)
                    .map(|r| r.block)
            })
            .ok()
            .flatten()
    });
    if let Some(block) = block {
        // SAFETY: the block is this thread's and lives as long as the domain.
        let b = unsafe { block.as_ref() };
        // Relaxed: only this thread writes its own slots.
        if b.hot
            .slots
            .iter()
            .any(|s| s.load(Ordering::Relaxed) == addr)
        {
            return true;
        }
    }
    let (listed, unlisted) =
        HELD_BACKUPS.with(|held| (held.lists(id, addr), held.unlisted.get() != 0));
    listed || (unlisted && backup_slots_of_this_thread_hold(&domain.shared, addr))
}

/// Whether a backup slot of `shared` that the calling thread holds (by the
/// owner token each records) holds `addr`: a walk of them all, for a thread
/// that holds more than [`HeldBackups`] lists. Exact: a slot records the token
/// from its holder's take to its give-back, which only the holder does, so
/// a slot with this thread's token is this thread's until it gives it back
/// (or a forgotten guard's of a dead thread whose token this one reuses:
/// then `synchronize(addr)` would wait for ever, and panics instead). Blocks
/// are left out: an orphaned block keeps this thread's token, and another
/// thread may take it over once it is empty and protect `addr` in it while
/// this walk reads it.
#[cold]
#[inline(never)]
fn backup_slots_of_this_thread_hold(shared: &Shared, addr: usize) -> bool {
    #[cfg(not(loom))]
    {
        let token = thread_token();
        let mut found = false;
        // Relaxed, both: only this thread writes the slots it holds (and
        // its token into their owner), so it reads its own latest stores;
        // a slot it gave back it cleared first, so it never reads its own
        // token there again.
        shared.for_each_backup(|n| {
            found |= n.owner.is(token) && n.value.load(Ordering::Relaxed) == addr;
        });
        found
    }
    #[cfg(loom)]
    {
        let _ = (shared, addr);
        false
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::cell::Cell;

    thread_local! {
        /// Run between the cache's block and id stores, as a signal
        /// handler could, once.
        static MID_UPDATE: Cell<Option<Box<dyn FnOnce()>>> = const { Cell::new(None) };
    }

    pub(super) fn interrupt_mid_update() {
        if let Some(interrupt) = MID_UPDATE.take() {
            interrupt();
        }
    }

    /// The block of `domain` in this thread's registration list.
    fn listed_block(domain: &Domain) -> *mut SlotBlock {
        REGISTRATIONS.with(|regs| {
            regs.list
                .borrow()
                .iter()
                .find(|r| r.shared.id == domain.id())
                .map_or(ptr::null_mut(), |r| r.block.as_ptr())
        })
    }

    /// A handler that acquires in another domain while the interrupted code
    /// writes the user-domain cache leaves the cache pairing each id with
    /// its own domain's block. (Without the `user_updating` flag the handler
    /// wrote its own pair into the middle of the update, and the interrupted
    /// code's id store then paired the first domain's id with the second's
    /// block: that domain's later guards protected where its scans never
    /// look.)
    #[test]
    #[cfg_attr(
        feature = "force-slow-path",
        ignore = "tests the cache of the threads' slot blocks, which the force-slow-path \
                  feature leaves unused"
    )]
    fn an_acquire_interrupting_the_cache_update_leaves_each_id_on_its_block() {
        // A static: the interruption must be `'static`, and a leaked box
        // would be a leak under miri.
        static SECOND: std::sync::LazyLock<Domain> = std::sync::LazyLock::new(Domain::new);
        let first = Domain::new();
        let second: &'static Domain = &SECOND;
        // Registered in both, the second last: the next acquire in the
        // first misses the cache and updates it.
        drop(first.guard());
        drop(second.guard());
        MID_UPDATE.set(Some(Box::new(move || drop(second.guard()))));
        drop(first.guard());
        assert!(MID_UPDATE.take().is_none(), "the interruption ran");
        for domain in [&first, second] {
            let cached = FAST.with(|fast| fast.block_of(domain.id()));
            assert!(
                cached.is_null() || cached == listed_block(domain),
                "the cache hands domain {} another domain's block",
                domain.id()
            );
        }
        // And a guard of the first domain now sits in the first domain's
        // block, where its scans look.
        assert_eq!(
            first.block().map(NonNull::as_ptr),
            Some(listed_block(&first))
        );
    }

    /// A registration that finds the list borrowed (a signal handler that
    /// interrupted a look at it, here played by the test holding it) goes
    /// without a block, as a thread at exit does, and a guard then takes a
    /// backup slot: until 2026-12-07 `borrow_mut` panicked, inside the
    /// handler. And `registered_block` gives `None` for a domain the thread
    /// never registered in, without registering it.
    #[test]
    #[cfg_attr(
        feature = "force-slow-path",
        ignore = "tests the threads' slot blocks, which the force-slow-path feature leaves unused"
    )]
    fn a_registration_that_finds_the_list_borrowed_goes_without_a_block() {
        let domain = Domain::new();
        assert_eq!(registered_block(&domain.shared), None);
        REGISTRATIONS.with(|regs| {
            let _held = regs.list.borrow();
            assert_eq!(domain.block(), None);
            assert!(domain.guard().is_backup());
        });
        assert_eq!(
            registered_block(&domain.shared),
            None,
            "registered by the look"
        );
        let block = domain.block().expect("registered once the list is free");
        assert_eq!(registered_block(&domain.shared), Some(block));
    }
}
