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

use hazptr::Domain;
use loom::cell::UnsafeCell;
use loom::sync::atomic::AtomicPtr;
use loom::sync::atomic::Ordering::AcqRel;
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

/// The kernel's acquire-before-scan litmus test: a reader's acquire races a
/// writer's unpublish + synchronize; either the reader loads the new pointer
/// or synchronize waits for it.
fn acquire_racing_synchronize(shared_scan: bool) {
    loom::model(move || {
        let domain = Arc::new(Domain::builder().shared_scan(shared_scan).build());
        let src = Arc::new(AtomicPtr::new(obj()));
        let reader = {
            let (domain, src) = (Arc::clone(&domain), Arc::clone(&src));
            thread::spawn(move || {
                // The fused form, as the kernel's hazptr_acquire().
                let (guard, p) = domain.acquire(&src);
                // SAFETY: protected by `guard`.
                unsafe { check(p) };
                drop(guard);
            })
        };
        let old = src.swap(obj(), AcqRel);
        domain.synchronize(old);
        // SAFETY: unpublished by the swap, and synchronize returned.
        unsafe { reclaim(old) };
        reader.join().unwrap();
        free_last(&src);
    });
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
    loom::model(|| {
        let domain = Arc::new(Domain::builder().shared_scan(true).build());
        let first = Arc::new(AtomicPtr::new(obj()));
        let second = Arc::new(AtomicPtr::new(obj()));
        let other_caller = {
            let (domain, second) = (Arc::clone(&domain), Arc::clone(&second));
            thread::spawn(move || {
                let old = second.swap(obj(), AcqRel);
                domain.synchronize(old);
                // SAFETY: unpublished by the swap, and synchronize returned.
                unsafe { reclaim(old) };
            })
        };
        let old = first.swap(obj(), AcqRel);
        domain.synchronize(old);
        // SAFETY: unpublished by the swap, and synchronize returned.
        unsafe { reclaim(old) };
        other_caller.join().unwrap();
        free_last(&first);
        free_last(&second);
    });
}

/// Wildcard-flip escape: the writer synchronizes twice (two generation
/// flips) while the reader may sit between loading the generation and
/// storing its wildcard, or inside the wildcard window, across a flip.
#[test]
fn wildcard_flip_escape() {
    loom::model(|| {
        let domain = Arc::new(Domain::builder().shared_scan(false).build());
        let src = Arc::new(AtomicPtr::new(obj()));
        let reader = {
            let (domain, src) = (Arc::clone(&domain), Arc::clone(&src));
            thread::spawn(move || {
                let mut guard = domain.guard();
                let p = guard.protect_ptr(&src);
                // SAFETY: protected by `guard`.
                unsafe { check(p) };
            })
        };
        for _ in 0..2 {
            let old = src.swap(obj(), AcqRel);
            domain.synchronize(old);
            // SAFETY: unpublished, synchronized.
            unsafe { reclaim(old) };
        }
        reader.join().unwrap();
        free_last(&src);
    });
}

/// A guard promoted from its block slot to a backup slot while a scan runs:
/// the scan reads every block slot before any overflow list, so it sees the
/// protection in one place or the other.
#[test]
fn backup_promotion_racing_a_scan() {
    loom::model(|| {
        let domain = Arc::new(Domain::builder().shared_scan(false).build());
        let src = Arc::new(AtomicPtr::new(obj()));
        let reader = {
            let (domain, src) = (Arc::clone(&domain), Arc::clone(&src));
            thread::spawn(move || {
                let mut guard = domain.guard();
                let p = guard.protect_ptr(&src);
                guard.promote();
                // SAFETY: protected by `guard` (now in a backup slot).
                unsafe { check(p) };
            })
        };
        let old = src.swap(obj(), AcqRel);
        domain.synchronize(old);
        // SAFETY: unpublished, synchronized.
        unsafe { reclaim(old) };
        reader.join().unwrap();
        free_last(&src);
    });
}

/// The same race against the shared scan, whose waiter is released only
/// when the slot it found changes: a change of a block slot by `promote` must
/// send the scanner to the overflow lists again instead of releasing.
#[test]
fn backup_promotion_racing_a_shared_scan() {
    loom::model(|| {
        let domain = Arc::new(Domain::builder().shared_scan(true).build());
        let src = Arc::new(AtomicPtr::new(obj()));
        let reader = {
            let (domain, src) = (Arc::clone(&domain), Arc::clone(&src));
            thread::spawn(move || {
                let mut guard = domain.guard();
                let p = guard.protect_ptr(&src);
                guard.promote();
                // SAFETY: protected by `guard` (now in a backup slot).
                unsafe { check(p) };
            })
        };
        let old = src.swap(obj(), AcqRel);
        domain.synchronize(old);
        // SAFETY: unpublished, synchronized.
        unsafe { reclaim(old) };
        reader.join().unwrap();
        free_last(&src);
    });
}

/// Retire and reclaim never free an object a guard protects.
#[test]
fn retire_never_frees_a_protected_object() {
    loom::model(|| {
        let domain = Arc::new(Domain::builder().build());
        let src = Arc::new(AtomicPtr::new(obj()));
        let reader = {
            let (domain, src) = (Arc::clone(&domain), Arc::clone(&src));
            thread::spawn(move || {
                let mut guard = domain.guard();
                let p = guard.protect_ptr(&src);
                // SAFETY: protected by `guard`.
                unsafe { check(p) };
            })
        };
        let old = src.swap(obj(), AcqRel);
        // SAFETY: unpublished by the swap, retired once; `reclaim` frees an
        // `obj()` box.
        unsafe { domain.retire(old, reclaim) };
        domain.reclaim();
        reader.join().unwrap();
        free_last(&src);
        // Dropping the domain frees whatever is still retired.
    });
}
