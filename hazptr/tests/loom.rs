//! Loom models of the hazard-pointer protocol (run with
//! `LOOM_MAX_PREEMPTIONS=2 RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom
//! cargo test -p hazptr --test loom --release`).
//!
//! Objects carry a loom `UnsafeCell`; the writer poisons it through
//! `with_mut` before freeing, and the reader reads it through `with` while
//! protected. Loom reports any interleaving in which the two accesses are not
//! ordered by happens-before: a reader that used an object after (or while)
//! it was reclaimed.
#![cfg(loom)]

use hazptr::{AtomicBox, Domain};
use loom::cell::UnsafeCell;
use loom::sync::atomic::Ordering::{AcqRel, Acquire, Release};
use loom::sync::atomic::{AtomicBool, AtomicPtr};
use loom::thread;
use std::sync::Arc;

const LIVE: u64 = 0x11fe;
const POISON: u64 = 0xdead;

struct Obj {
    value: UnsafeCell<u64>,
}

fn obj() -> *mut Obj {
    Box::into_raw(Box::new(Obj {
        value: UnsafeCell::new(LIVE),
    }))
}

/// Reads a protected object (a loom-tracked access).
///
/// # Safety
///
/// `p` is null or protected by a guard of the domain it was published in.
unsafe fn check(p: *mut Obj) {
    // SAFETY: per the contract, null or protected, so alive.
    if let Some(o) = unsafe { p.as_ref() } {
        // SAFETY: loom checks that this read happens before any reclaim.
        o.value
            .with(|v| assert_eq!(unsafe { *v }, LIVE, "read a reclaimed object"));
    }
}

/// Poisons and frees an object no reader may still hold.
///
/// # Safety
///
/// `p` came from `obj()`, is unpublished and unprotected.
unsafe fn reclaim(p: *mut Obj) {
    // SAFETY: per the contract, `p` is from `obj()` (a `Box`) and nobody can
    // reach it any more; loom checks the write against every reader's access.
    unsafe {
        (*p).value.with_mut(|v| *v = POISON);
        drop(Box::from_raw(p));
    }
}

fn free_last(src: &AtomicPtr<Obj>) {
    let last = src.swap(std::ptr::null_mut(), AcqRel);
    if !last.is_null() {
        // SAFETY: every thread has finished.
        unsafe { reclaim(last) };
    }
}

/// One model: a reader thread and the main thread, as the writer, share a
/// domain (shared scan or not) and one published object; once both are done
/// the last published object is freed and the domain dropped (which stops a
/// scanner thread).
fn reader_against_writer(
    shared_scan: bool,
    reader: fn(&Domain, &AtomicPtr<Obj>),
    writer: fn(&Domain, &AtomicPtr<Obj>),
) {
    hazptr::loom_model_with_spurious_wakeups_too(move || {
        let domain = Arc::new(Domain::builder().shared_scan(shared_scan).build());
        let src = Arc::new(AtomicPtr::new(obj()));
        let reader_thread = {
            let (domain, src) = (Arc::clone(&domain), Arc::clone(&src));
            thread::spawn(move || reader(&domain, &src))
        };
        writer(&domain, &src);
        reader_thread.join().unwrap();
        free_last(&src);
    });
}

/// The writer's step: unpublish, synchronize, reclaim.
fn replace_and_synchronize(domain: &Domain, src: &AtomicPtr<Obj>) {
    let old = src.swap(obj(), AcqRel);
    domain.synchronize(old);
    // SAFETY: unpublished by the swap, and synchronize returned.
    unsafe { reclaim(old) };
}

/// A reader that protects the published object and reads it.
fn protect_and_read(domain: &Domain, src: &AtomicPtr<Obj>) {
    let mut guard = domain.guard();
    let p = guard.protect_ptr(src);
    // SAFETY: protected by `guard`.
    unsafe { check(p) };
}

/// A reader that protects the published object, moves the protection to a
/// backup slot, and reads the object.
fn protect_promote_and_read(domain: &Domain, src: &AtomicPtr<Obj>) {
    let mut guard = domain.guard();
    let p = guard.protect_ptr(src);
    guard.promote();
    // SAFETY: protected by `guard` (now in a backup slot).
    unsafe { check(p) };
}

/// A reader that loads the pointer, protects it with `protect_raw` and
/// re-validates (the classic hazard-pointer loop), then reads the object.
fn protect_raw_validate_and_read(domain: &Domain, src: &AtomicPtr<Obj>) {
    let mut guard = domain.guard();
    let p = loop {
        let p = src.load(Acquire);
        // SAFETY: `p` is not dereferenced before the re-validation below.
        unsafe { guard.protect_raw(p) };
        // The reload's pointer (see `Guard::protect_raw`'s example).
        let again = src.load(Acquire);
        if again == p {
            break again;
        }
    };
    // SAFETY: protected, and still published after the protection began.
    unsafe { check(p) };
}

/// The shared-scan series' acquire-before-scan litmus test (not in
/// mainline): a reader's acquire races a writer's unpublish + synchronize;
/// either the reader loads the new pointer or synchronize waits for it.
fn acquire_racing_synchronize(shared_scan: bool) {
    reader_against_writer(
        shared_scan,
        |domain, src| {
            // The fused form, as the kernel's hazptr_acquire().
            let (guard, p) = domain.acquire(src);
            // SAFETY: protected by `guard`.
            unsafe { check(p) };
            drop(guard);
        },
        replace_and_synchronize,
    );
}

#[test]
fn acquire_racing_synchronize_shared() {
    acquire_racing_synchronize(true);
}

#[test]
fn acquire_racing_synchronize_unshared() {
    acquire_racing_synchronize(false);
}

/// Two callers of the shared scan with the real scanner thread and the
/// blocking futex model: whatever the interleaving of their pushes, drives,
/// sleeps and the scanner's own sleep, each caller is released (a lost
/// wake-up of a sleeping caller or of the scanner leaves a thread blocked,
/// which loom reports as a deadlock), and the domain's drop stops the scanner.
/// No reader: a reader in its wildcard window makes the driving caller yield
/// while the scanner yields too (it finds the scan busy), and loom can then
/// schedule those two against each other forever without running the reader;
/// the models above cover readers against one caller.
#[test]
fn concurrent_callers_of_the_shared_scan_are_each_released() {
    hazptr::loom_model_with_spurious_wakeups_too(|| {
        let domain = Arc::new(Domain::builder().shared_scan(true).build());
        // One object each, so that the callers meet only in the domain.
        let first = Arc::new(AtomicPtr::new(obj()));
        let second = Arc::new(AtomicPtr::new(obj()));
        let other_caller = {
            let (domain, second) = (Arc::clone(&domain), Arc::clone(&second));
            thread::spawn(move || replace_and_synchronize(&domain, &second))
        };
        replace_and_synchronize(&domain, &first);
        other_caller.join().unwrap();
        free_last(&first);
        free_last(&second);
    });
}

/// A fork's wait for the driver flag (`hazptr::fork::before_fork`, through
/// `Domain::loom_fork_window`) against a caller of the shared scan, with the
/// real scanner thread: while the fork is counted in `fork_waiting`, the
/// caller's lone scan and every `drive_once` find the flag busy, so the
/// caller queues; the fork takes the flag once no pass holds it and looks
/// at the driver's buffers, as `reset_after_fork` does in a child; once it
/// gives the flag back, the caller is served, and the pass that serves it
/// touches the buffers after the fork's look (loom reports one that is not
/// ordered after it). Mutation checks: `release_driver`'s store made Relaxed
/// fails with a causality violation on the buffers; a count never taken
/// back leaves every caller and the scanner finding the flag busy, and
/// exceeds loom's branch limit. (A lone caller's scan touches no buffers,
/// so no pass runs before the fork's look here: `hold_driver`'s Acquire is
/// checked only by reading, as `drive_once`'s is by the models above.)
#[test]
fn a_fork_waiting_for_the_driver_flag_takes_it_between_passes() {
    hazptr::loom_model_with_spurious_wakeups_too(|| {
        let domain = Arc::new(Domain::builder().shared_scan(true).build());
        let src = Arc::new(AtomicPtr::new(obj()));
        let caller = {
            let (domain, src) = (Arc::clone(&domain), Arc::clone(&src));
            thread::spawn(move || replace_and_synchronize(&domain, &src))
        };
        domain.loom_fork_window();
        caller.join().unwrap();
        free_last(&src);
    });
}

/// Two callers queued for one pass, one of whose addresses a guard protects
/// from before either call: the pass's hit holds the waiter of that address,
/// and only it. (A hit credited to whichever waiter heads the batch releases
/// the protected address's caller while the guard still holds it, which the
/// flag below catches, or holds the other caller, whose join the guard's
/// drop waits for: a deadlock.) The guard is taken before the callers start,
/// so that no reader sits in its wildcard window (see the model above).
/// One preemption is enough to queue both waiters for one pass (a caller
/// preempted between its push and its drive), and all this model can
/// afford: with the scanner it has four threads, and at two preemptions it
/// had not finished after 17 minutes.
#[test]
fn a_hit_holds_the_waiter_of_its_own_address() {
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = Some(1);
    builder.check(|| {
        let domain = Arc::new(Domain::builder().shared_scan(true).build());
        let src = AtomicPtr::new(obj());
        let (guard, held) = domain.acquire(&src);
        let guard_dropped = Arc::new(AtomicBool::new(false));
        let held_addr = held as usize;
        let held_caller = {
            let (domain, guard_dropped) = (Arc::clone(&domain), Arc::clone(&guard_dropped));
            thread::spawn(move || {
                domain.synchronize(held_addr as *mut Obj);
                // Acquire pairs with the Release store below, through the
                // scan's Acquire load of the emptied slot.
                assert!(
                    guard_dropped.load(Acquire),
                    "synchronize returned while a guard still protected its address"
                );
            })
        };
        let other = obj();
        let other_addr = other as usize;
        let other_caller = {
            let domain = Arc::clone(&domain);
            thread::spawn(move || domain.synchronize(other_addr as *mut Obj))
        };
        other_caller.join().unwrap();
        guard_dropped.store(true, Release);
        drop(guard);
        held_caller.join().unwrap();
        // SAFETY: never published.
        unsafe { reclaim(other) };
        free_last(&src);
    });
}

/// Wildcard-flip escape: the writer synchronizes twice (two generation
/// flips) while the reader may sit between loading the generation and
/// storing its wildcard, or inside the wildcard window, across a flip.
#[test]
fn wildcard_flip_escape() {
    reader_against_writer(false, protect_and_read, |domain, src| {
        replace_and_synchronize(domain, src);
        replace_and_synchronize(domain, src);
    });
}

/// The same escape against the shared scan: the two flips are a lone
/// caller's walk or a queued pass of the driver's, in whichever mix the
/// interleaving gives, and the reader may be held across both.
#[test]
fn wildcard_flip_escape_shared() {
    reader_against_writer(true, protect_and_read, |domain, src| {
        replace_and_synchronize(domain, src);
        replace_and_synchronize(domain, src);
    });
}

/// A guard promoted from its block slot to a backup slot while a scan runs:
/// the scan reads every block slot before any overflow list, so it sees the
/// protection in one place or the other.
#[test]
fn backup_promotion_racing_a_scan() {
    reader_against_writer(false, protect_promote_and_read, replace_and_synchronize);
}

/// The same race against the shared scan, whose waiter is released only
/// when the slot it found changes: a change of a block slot by `promote` must
/// send the scanner to the overflow lists again instead of releasing.
#[test]
fn backup_promotion_racing_a_shared_scan() {
    reader_against_writer(true, protect_promote_and_read, replace_and_synchronize);
}

/// Retire and reclaim never free an object a guard protects. (The domain's
/// drop frees whatever is still retired.)
#[test]
fn retire_never_frees_a_protected_object() {
    reader_against_writer(true, protect_and_read, |domain, src| {
        let old = src.swap(obj(), AcqRel);
        // SAFETY: unpublished by the swap, retired once; `reclaim` frees an
        // `obj()` box.
        unsafe { domain.retire(old, reclaim) };
        domain.reclaim();
    });
}

/// Objects freed by `reclaim_counted`, in the current model iteration.
static COUNTED_FREES: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// `reclaim`, counted in [`COUNTED_FREES`].
///
/// # Safety
///
/// As [`reclaim`].
unsafe fn reclaim_counted(p: *mut Obj) {
    COUNTED_FREES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    // SAFETY: forwarded contract.
    unsafe { reclaim(p) };
}

/// One model at a time counts in [`COUNTED_FREES`] (the test harness runs
/// the tests of this binary in parallel).
static COUNTING: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// A thread retiring `retires` objects while this one calls `reclaim()`
/// `reclaims` times: each object is freed exactly once, by a pass, the
/// thread's own hand-over (a second retire fills loom's batch of two) or
/// its exit's flush, or the domain's drop.
fn retirer_against_reclaims(retires: usize, reclaims: usize) {
    let _counting = COUNTING
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    hazptr::loom_model_with_spurious_wakeups_too(move || {
        COUNTED_FREES.store(0, std::sync::atomic::Ordering::Relaxed);
        let domain = Arc::new(Domain::new());
        let retirer = {
            let domain = Arc::clone(&domain);
            thread::spawn(move || {
                for _ in 0..retires {
                    // SAFETY: never published, retired once; `reclaim_counted`
                    // frees an `obj()` box.
                    unsafe { domain.retire(obj(), reclaim_counted) };
                }
            })
        };
        for _ in 0..reclaims {
            domain.reclaim();
        }
        retirer.join().unwrap();
        drop(domain);
        assert_eq!(
            COUNTED_FREES.load(std::sync::atomic::Ordering::Relaxed),
            retires,
            "each retired object freed exactly once"
        );
    });
}

/// `reclaim()` takes the batch of another live thread while that thread may
/// be pushing onto it: the `pushing`/`draining` handshake keeps the push and
/// the take apart (loom checks the batch's cell), and the object is freed
/// exactly once, by this pass, the thread's own hand-over (at its second
/// retire) or exit flush, or the domain's drop.
#[test]
fn reclaim_takes_a_batch_another_thread_is_retiring_into() {
    retirer_against_reclaims(2, 1);
}

/// A thread retires one object, which waits in its batch (loom's batch
/// holds two), then drops its handle of the domain and exits, while this
/// thread drops its own handle, after a `reclaim()` when `reclaim_first`:
/// the exit's give-back flushes the batch under the retired list's mutex,
/// a pass drains it (the `pushing`/`draining` handshake), and whichever
/// thread drops the last handle runs `Domain::drop`, whose `free_all`
/// takes every block's batch under the same mutex. The handles are loom's
/// `Arc`s, so the model explores which drop comes last. The object must be
/// freed exactly once, and no access to the batch may race (loom checks
/// its cell).
fn retiring_thread_exits_against_the_domains_drop(reclaim_first: bool) {
    let _counting = COUNTING
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    hazptr::loom_model_with_spurious_wakeups_too(move || {
        COUNTED_FREES.store(0, std::sync::atomic::Ordering::Relaxed);
        let domain = loom::sync::Arc::new(Domain::new());
        let retirer = {
            let domain = loom::sync::Arc::clone(&domain);
            thread::spawn(move || {
                // SAFETY: never published, retired once; `reclaim_counted`
                // frees an `obj()` box.
                unsafe { domain.retire(obj(), reclaim_counted) };
                drop(domain);
                // The thread's registration gives its block back as it
                // exits, flushing the batch.
            })
        };
        if reclaim_first {
            domain.reclaim();
        }
        drop(domain);
        retirer.join().unwrap();
        assert_eq!(
            COUNTED_FREES.load(std::sync::atomic::Ordering::Relaxed),
            1,
            "the retired object freed exactly once"
        );
    });
}

/// [`retiring_thread_exits_against_the_domains_drop`]: the exit's flush
/// against `free_all`.
#[test]
fn a_domain_dropped_while_a_retiring_thread_exits_frees_its_batch_once() {
    retiring_thread_exits_against_the_domains_drop(false);
}

/// [`retiring_thread_exits_against_the_domains_drop`] with a pass first:
/// the pass drains the exiting thread's batch, or the exit's flush hands
/// it over first.
#[test]
fn a_reclaim_racing_a_retiring_threads_exit_frees_its_batch_once() {
    retiring_thread_exits_against_the_domains_drop(true);
}

/// Two `reclaim()` calls back to back against a thread retiring: a retire
/// that finds the first drain in progress counts itself in `drain_waiters`,
/// and the second drain waits for it to get through before it sets
/// `draining` again (bounded, a yield a step under loom). The waiting owner,
/// the drainer that waits for it and the handshake must still keep every
/// push and take apart and free each object exactly once, with no thread
/// left waiting for another for good.
#[test]
fn retires_between_two_reclaims_are_each_freed_once() {
    retirer_against_reclaims(1, 2);
}

/// The same, with the guard promoted to a backup slot while the pass runs:
/// a pass keeps an object as soon as it sees its address, so it must read
/// every block slot before any backup slot (`promote` writes the backup slot
/// before it empties the block slot), as `synchronize` does.
#[test]
fn retire_never_frees_a_promoted_protection() {
    reader_against_writer(true, protect_promote_and_read, |domain, src| {
        let old = src.swap(obj(), AcqRel);
        // SAFETY: as in `retire_never_frees_a_protected_object`.
        unsafe { domain.retire(old, reclaim) };
        domain.reclaim();
    });
}

/// `protect_raw` with the re-validation its contract asks for, against an
/// unshared and a shared `synchronize`: the light fence after the slot store
/// pairs with the scan's heavy fence, so either the scan sees the address or
/// the re-validating load sees the unpublish.
#[test]
fn validated_protect_raw_racing_synchronize() {
    reader_against_writer(
        false,
        protect_raw_validate_and_read,
        replace_and_synchronize,
    );
}

/// A reader that reads the object under one guard, drops it, and protects
/// again with a new guard, which takes the same slot. A scan that reads the
/// new guard's wildcard (of its own generation: skipped) or pointer (not the
/// writer's address) must still be ordered after the first guard's read:
/// every store into a slot is a Release store, not only the `EMPTY` that
/// ends a protection (a Relaxed store would not continue that store's
/// release sequence).
fn read_then_protect_again(domain: &Domain, src: &AtomicPtr<Obj>) {
    protect_and_read(domain, src);
    let mut guard = domain.guard();
    let _ = guard.protect_ptr(src);
}

#[test]
fn a_slot_reused_after_a_read_orders_that_read_before_the_scan() {
    reader_against_writer(false, read_then_protect_again, replace_and_synchronize);
}

/// A reader that reads the object under a guard in a backup slot, drops it,
/// and then promotes a new guard into the same backup slot: a scan that
/// reads the promoted value there (not the writer's address) must be ordered
/// after the first read, so `promote` stores into the backup slot with
/// Release too.
fn read_in_a_backup_slot_then_promote_into_it(domain: &Domain, src: &AtomicPtr<Obj>) {
    let mut guard = domain.guard();
    guard.promote();
    let p = guard.protect_ptr(src);
    // SAFETY: protected by `guard` (in a backup slot).
    unsafe { check(p) };
    drop(guard);
    let mut guard = domain.guard();
    let _ = guard.protect_ptr(src);
    guard.promote();
}

#[test]
fn a_promotion_into_a_reused_backup_slot_orders_its_last_read_before_the_scan() {
    reader_against_writer(
        false,
        read_in_a_backup_slot_then_promote_into_it,
        replace_and_synchronize,
    );
}

/// A reader that protects and reads the object, then resets its guard
/// (keeping the slot) before dropping it. A scan that reads the reset's
/// `RESERVED` must be ordered after the read: `reset` stores with Release,
/// as `drop` does.
fn protect_read_and_reset(domain: &Domain, src: &AtomicPtr<Obj>) {
    let mut guard = domain.guard();
    let p = guard.protect_ptr(src);
    // SAFETY: protected by `guard`.
    unsafe { check(p) };
    guard.reset();
    // Still held: the slot reads `RESERVED` until this drop.
    drop(guard);
}

#[test]
fn a_reset_orders_the_read_before_the_scan() {
    reader_against_writer(false, protect_read_and_reset, replace_and_synchronize);
}

/// An object in an `AtomicBox`, shared with readers: the loom cell is only
/// read through `&`, and written only by the one owner of a taken-back box.
struct BoxedObj(Obj);

// SAFETY: readers only read the cell (`check`); the one write is through the
// `Box` that `Replaced::synchronize` hands back, once no reader holds it.
unsafe impl Sync for BoxedObj {}
// SAFETY: the cell holds a `u64`; the box moves between threads only through
// the `AtomicBox`.
unsafe impl Send for BoxedObj {}

fn boxed_obj() -> Option<Box<BoxedObj>> {
    Some(Box::new(BoxedObj(Obj {
        value: UnsafeCell::new(LIVE),
    })))
}

/// Two writers of one `AtomicBox`: one replaces the value with
/// `compare_exchange` and then reads the current value under a guard, the
/// other replaces it with `swap`, takes back what it replaced with
/// `Replaced::synchronize` and writes to it. Each may get an object the
/// other published, so the exchanges publish with Release and take back
/// with Acquire: otherwise the read or the write races with the object's
/// initialization (loom reports the causality violation).
#[test]
fn an_atomic_box_hands_over_an_object_another_thread_published() {
    hazptr::loom_model_with_spurious_wakeups_too(|| {
        // Freed below, once the box and every thread using it are gone.
        let domain = Box::into_raw(Box::new(Domain::builder().shared_scan(false).build()));
        // SAFETY: alive until the `Box::from_raw` at the end.
        let domain_ref: &'static Domain = unsafe { &*domain };
        let boxed = Arc::new(AtomicBox::from_box_in(boxed_obj(), domain_ref));
        let other = {
            let boxed = Arc::clone(&boxed);
            thread::spawn(move || {
                let taken = boxed.swap(boxed_obj()).expect("never empty").synchronize();
                // SAFETY: taken back after `synchronize`: this thread owns it.
                taken.0.value.with_mut(|v| unsafe { *v = POISON });
            })
        };
        let current = boxed.load_ptr();
        // Succeeds unless the other writer swapped first; what it replaced is
        // retired to the domain (freed with it).
        let _ = boxed.compare_exchange(current, boxed_obj());
        // Reads what is published now, maybe the other writer's object.
        let mut guard = domain_ref.guard();
        let now = boxed.load(&mut guard).map_or(std::ptr::null(), |o| &o.0);
        // SAFETY: protected by `guard` in the box's domain.
        unsafe { check(now.cast_mut()) };
        drop(guard);
        other.join().unwrap();
        drop(boxed);
        // SAFETY: the box is dropped and the other thread joined; nothing
        // refers to the domain any more.
        drop(unsafe { Box::from_raw(domain) });
    });
}

/// A reader that protects the published object and does not read it.
fn protect_only(domain: &Domain, src: &AtomicPtr<Obj>) {
    let mut guard = domain.guard();
    let _ = guard.protect_ptr(src);
}

/// A reader that reads the object under a guard in a backup slot and drops
/// it, racing another reader that then protects in the same backup slot
/// (taken over when the first gives it back). A scan that reads the second
/// reader's value there (not the writer's address) must be ordered after the
/// first reader's read: the slot's next holder takes it with an Acquire CAS,
/// pairing with the Release store that gives it back.
#[test]
fn a_backup_slot_taken_over_by_another_thread_orders_the_last_read_before_the_scan() {
    hazptr::loom_model_with_spurious_wakeups_too(|| {
        let domain = Arc::new(
            Domain::builder()
                .shared_scan(false)
                .force_slow_path(true)
                .build(),
        );
        let src = Arc::new(AtomicPtr::new(obj()));
        let readers: Vec<_> = [protect_and_read, protect_only]
            .into_iter()
            .map(|reader| {
                let (domain, src) = (Arc::clone(&domain), Arc::clone(&src));
                thread::spawn(move || reader(&domain, &src))
            })
            .collect();
        replace_and_synchronize(&domain, &src);
        for reader in readers {
            reader.join().unwrap();
        }
        free_last(&src);
    });
}

/// The retired list's count (`retired_count`, which decides on passes) and
/// `retired_len()` count exactly the objects on the list once nothing runs:
/// a retire that goes straight onto the list (a forced slow path) races a
/// pass, which resets the list's count when it takes the list. The retire
/// must add its object to both counts under the list's mutex, with the
/// push; added after it, the list's count keeps an object the pass already
/// freed.
#[test]
fn retired_len_counts_what_a_racing_pass_left_on_the_list() {
    hazptr::loom_model_with_spurious_wakeups_too(|| {
        let domain = Arc::new(
            Domain::builder()
                .force_slow_path(true)
                .retire_threshold(usize::MAX)
                .build(),
        );
        let retirer = {
            let domain = Arc::clone(&domain);
            thread::spawn(move || {
                // SAFETY: never published, retired once; `reclaim` frees an
                // `obj()` box.
                unsafe { domain.retire(obj(), reclaim) };
            })
        };
        let freed = domain.reclaim();
        retirer.join().unwrap();
        assert_eq!(
            domain.loom_retired_count(),
            1 - freed,
            "the list's count keeps an object a concurrent pass already freed"
        );
        assert_eq!(
            domain.retired_len(),
            1 - freed,
            "retired_len() counts an object a concurrent pass already freed"
        );
    });
}
