//! Loom checks of the fences' own model: the hazptr and rcu-lite models are
//! only as strict as the pairing `fence.rs` gives its three fences under
//! `cfg(loom)`. In the store-buffering shape (each thread stores its flag,
//! fences, then loads the other's), every pair membarrier mode orders must
//! keep both loads from missing, and without fences loom must find the
//! store buffer's outcome (or the checks would say nothing).
//!
//! The model is stronger than membarrier mode where it need not be (see
//! `fence.rs`, *Loom*): two `light()`s, or a `light()` and a `full()`, pair
//! too, and the last test pins that down, so that a model made stricter
//! shows up here first.
//!
//! Run: `RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom cargo test -p
//! membarrier-sim --test loom --release`
#![cfg(loom)]

use loom::sync::Arc;
use loom::sync::atomic::AtomicU32;
use loom::sync::atomic::Ordering::Relaxed;
use loom::thread;
use membarrier_sim::fence;
use std::sync::atomic::AtomicBool;
use std::sync::atomic::Ordering::SeqCst;

/// One store-buffering round: this thread runs `a`'s side, a spawned one
/// `b`'s. Returns what the two loads read.
fn store_buffering(a: fn(), b: fn()) -> (u32, u32) {
    let x = Arc::new(AtomicU32::new(0));
    let y = Arc::new(AtomicU32::new(0));
    let other = {
        let (x, y) = (x.clone(), y.clone());
        thread::spawn(move || {
            y.store(1, Relaxed);
            b();
            x.load(Relaxed)
        })
    };
    x.store(1, Relaxed);
    a();
    let r1 = y.load(Relaxed);
    (r1, other.join().unwrap())
}

/// Whether some execution of the pair lets both loads miss.
fn both_can_miss(a: fn(), b: fn()) -> bool {
    // A std `Arc`: it outlives the model's executions.
    let missed = std::sync::Arc::new(AtomicBool::new(false));
    let seen = missed.clone();
    loom::model(move || {
        if store_buffering(a, b) == (0, 0) {
            seen.store(true, SeqCst);
        }
    });
    missed.load(SeqCst)
}

#[test]
fn light_against_heavy_orders_one_side() {
    assert!(!both_can_miss(fence::light, fence::heavy));
    assert!(!both_can_miss(fence::heavy, fence::light));
}

#[test]
fn heavy_and_full_order_each_other_and_themselves() {
    assert!(!both_can_miss(fence::heavy, fence::heavy));
    assert!(!both_can_miss(fence::full, fence::heavy));
    assert!(!both_can_miss(fence::full, fence::full));
}

/// What the model orders beyond membarrier mode: every two fences, since
/// they are one word's read-modify-writes. Code must not lean on it (the
/// crates' callers pair light with heavy, and full with full or heavy).
#[test]
fn the_model_also_orders_light_against_light_and_full() {
    assert!(!both_can_miss(fence::light, fence::light));
    assert!(!both_can_miss(fence::light, fence::full));
}

/// The control: with no fences, the store buffer shows.
#[test]
fn without_fences_both_loads_can_miss() {
    assert!(both_can_miss(|| {}, || {}));
}
