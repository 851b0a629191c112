//! The SeqCst fallback, forced before any fence runs (its own test binary, so
//! its own process and its own one-time mode decision).

mod common;

use membarrier_sim::fence::{self, Mode};

fn forced() {
    // Every test here forces the same mode; whichever runs first decides it.
    assert_eq!(fence::force(Mode::SeqCst), Ok(()));
    assert_eq!(fence::mode(), Mode::SeqCst);
}

#[test]
fn forced_fallback_sticks() {
    forced();
    assert_eq!(
        fence::force(Mode::Membarrier).map_err(|e| e.decided),
        Err(Mode::SeqCst)
    );
    assert_eq!(fence::mode(), Mode::SeqCst);
}

#[test]
fn fallback_forbids_store_buffering() {
    forced();
    assert_eq!(
        common::store_buffering(common::ROUNDS, fence::light, fence::heavy).forbidden,
        0
    );
}

#[test]
fn fallback_heavy_from_eight_threads() {
    forced();
    std::thread::scope(|s| {
        for _ in 0..8 {
            s.spawn(|| {
                for _ in 0..1000 {
                    fence::heavy();
                }
            });
        }
    });
}
