//! The peers' ways to share a payload.

use super::{Counts, Options, Workload, check_payload, mixed_loop};
use crate::registry::{Implementation, Origin, Unavailable};
use crossbeam_epoch::{self as epoch, Atomic, Owned};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::sync::atomic::Ordering::{AcqRel, Acquire};

/// Adds one to every word: the update every contender performs.
#[inline(always)]
pub(crate) fn bump(words: &mut [u64]) {
    for w in words {
        *w += 1;
    }
}

/// `parking_lot`.
pub(super) const PARKING_LOT: Implementation<dyn Workload, Options> = Implementation {
    name: "parking_lot",
    summary: "parking_lot::RwLock<Vec<u64>>: read lock and sum; write lock and update in place",
    origin: Origin::Peer,
    make: |o| {
        Ok(Box::new(parking_lot::RwLock::new(vec![
            0u64;
            o.payload_words
        ])))
    },
};

/// Every `lock_api` reader-writer lock (parking_lot's and qrwlock's): read
/// lock and sum; write lock and update in place.
impl<R: lock_api::RawRwLock + Send + Sync> Workload for lock_api::RwLock<R, Vec<u64>> {
    fn run(&self, reads_per_write: u32, stop: &AtomicBool) -> Counts {
        mixed_loop(
            reads_per_write,
            stop,
            || check_payload(&self.read()),
            || bump(&mut self.write()),
        )
    }
}

/// `std`.
pub(super) const STD: Implementation<dyn Workload, Options> = Implementation {
    name: "std",
    summary: "std::sync::RwLock<Vec<u64>>: read lock and sum; write lock and update in place",
    origin: Origin::Peer,
    make: |o| {
        Ok(Box::new(std::sync::RwLock::new(vec![
            0u64;
            o.payload_words
        ])))
    },
};

impl Workload for std::sync::RwLock<Vec<u64>> {
    fn run(&self, reads_per_write: u32, stop: &AtomicBool) -> Counts {
        mixed_loop(
            reads_per_write,
            stop,
            || check_payload(&self.read().expect("never poisoned")),
            || bump(&mut self.write().expect("never poisoned")),
        )
    }
}

/// `seqlock`: the payload must be `Copy`, so sizes are fixed at compile time.
pub(super) const SEQLOCK: Implementation<dyn Workload, Options> = Implementation {
    name: "seqlock",
    summary: "seqlock::SeqLock<[u64; N]>: optimistic copy-out reads; payloads of a power of two words up to 4 KiB",
    origin: Origin::Peer,
    make: make_seqlock,
};

fn make_seqlock(o: &Options) -> Result<Box<dyn Workload>, Unavailable> {
    // Exact sizes only: a payload rounded up would make every seqlock read
    // copy and check more words than the other contenders' readers do.
    macro_rules! sized {
        ($($n:literal)*) => {
            $(if o.payload_words == $n {
                return Ok(Box::new(seqlock::SeqLock::new([0u64; $n])));
            })*
        };
    }
    sized!(1 2 4 8 16 32 64 128 256 512);
    if o.payload_words < 512 {
        let below = 1usize << o.payload_words.ilog2();
        return Err(Unavailable {
            reason: format!(
                "seqlock is built for payloads of a power of two words, and {} bytes is not one",
                o.payload_words * 8
            ),
            hint: format!(
                "measure it with --payload-bytes {} or {}, the sizes around yours",
                below * 8,
                below * 16
            ),
        });
    }
    Err(Unavailable {
        reason: format!(
            "a {}-byte payload is too large to copy out on every read",
            o.payload_words * 8
        ),
        hint: "seqlock is measured for payloads up to 4096 bytes".into(),
    })
}

impl<const N: usize> Workload for seqlock::SeqLock<[u64; N]> {
    fn run(&self, reads_per_write: u32, stop: &AtomicBool) -> Counts {
        mixed_loop(
            reads_per_write,
            stop,
            || check_payload(&self.read()),
            || bump(&mut *self.lock_write()),
        )
    }
}

/// `arc-swap`.
pub(super) const ARC_SWAP: Implementation<dyn Workload, Options> = Implementation {
    name: "arc-swap",
    summary: "arc_swap::ArcSwap<Vec<u64>>: load and sum; rcu() copy, update, publish",
    origin: Origin::Peer,
    make: |o| {
        Ok(Box::new(arc_swap::ArcSwap::from_pointee(
            vec![0u64; o.payload_words],
        )))
    },
};

impl Workload for arc_swap::ArcSwap<Vec<u64>> {
    fn run(&self, reads_per_write: u32, stop: &AtomicBool) -> Counts {
        mixed_loop(
            reads_per_write,
            stop,
            || check_payload(&self.load()),
            || {
                self.rcu(|old| {
                    let mut fresh = Vec::clone(old);
                    bump(&mut fresh);
                    Arc::new(fresh)
                });
            },
        )
    }
}

/// `crossbeam-epoch`.
pub(super) const CROSSBEAM_EPOCH: Implementation<dyn Workload, Options> = Implementation {
    name: "crossbeam-epoch",
    summary: "crossbeam_epoch::Atomic<Vec<u64>>: pin, load and sum; copy, update, CAS, defer_destroy",
    origin: Origin::Peer,
    make: |o| {
        Ok(Box::new(CrossbeamPayload {
            current: Atomic::new(vec![0u64; o.payload_words]),
        }))
    },
};

struct CrossbeamPayload {
    current: Atomic<Vec<u64>>,
}

impl Workload for CrossbeamPayload {
    fn run(&self, reads_per_write: u32, stop: &AtomicBool) -> Counts {
        // A handle held by the thread: `epoch::pin()` at its best, whichever
        // way the compiler inlines its thread-local lookup into this loop
        // (see refscale's crossbeam-epoch reader).
        let handle = epoch::default_collector().register();
        mixed_loop(
            reads_per_write,
            stop,
            || {
                let guard = handle.pin();
                // SAFETY: never null; `guard` keeps it from being destroyed.
                check_payload(unsafe { self.current.load(Acquire, &guard).deref() })
            },
            || {
                let guard = handle.pin();
                let mut old = self.current.load(Acquire, &guard);
                loop {
                    // SAFETY: as above.
                    let mut fresh = Vec::clone(unsafe { old.deref() });
                    bump(&mut fresh);
                    // AcqRel: Release publishes `fresh`'s contents to readers'
                    // Acquire loads; Acquire orders the next copy after a
                    // competing writer's publication on failure.
                    match self.current.compare_exchange(
                        old,
                        Owned::new(fresh),
                        AcqRel,
                        Acquire,
                        &guard,
                    ) {
                        Ok(_) => {
                            // SAFETY: `old` is unpublished now; destroyed once
                            // every thread pinned now has unpinned.
                            unsafe { guard.defer_destroy(old) };
                            break;
                        }
                        Err(e) => old = e.current,
                    }
                }
            },
        )
    }

    /// Runs the replaced payloads' deferred frees: the exited threads' bags
    /// went to crossbeam-epoch's global queue, which only pinned threads
    /// collect. With no other thread pinned, each flush can advance the
    /// epoch and free what expired.
    fn settle(&self) {
        for _ in 0..CROSSBEAM_SETTLE_FLUSHES {
            epoch::pin().flush();
        }
    }
}

/// Flushes that [`CrossbeamPayload::settle`] makes: each collects up to
/// crossbeam-epoch's few sealed bags of up to 64 deferred functions, so this
/// many frees some hundreds of thousands of payloads, more than a short run
/// replaces on this machine.
const CROSSBEAM_SETTLE_FLUSHES: usize = 4096;

impl Drop for CrossbeamPayload {
    fn drop(&mut self) {
        // SAFETY: `&mut self`: no thread is inside; the last payload is ours.
        let last = unsafe { self.current.load(Acquire, epoch::unprotected()) };
        // SAFETY: allocated by `Owned::new`, unreachable by anyone else now.
        drop(unsafe { last.into_owned() });
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::check_every_update_lands;
    use super::*;

    #[test]
    fn every_update_adds_one_to_every_word() {
        let lock = parking_lot::RwLock::new(vec![0u64; 4]);
        check_every_update_lands(&lock, &|| lock.read().clone());
        let lock = std::sync::RwLock::new(vec![0u64; 4]);
        check_every_update_lands(&lock, &|| lock.read().unwrap().clone());
        let seq = seqlock::SeqLock::new([0u64; 4]);
        check_every_update_lands(&seq, &|| seq.read().to_vec());
        let swap = arc_swap::ArcSwap::from_pointee(vec![0u64; 4]);
        check_every_update_lands(&swap, &|| swap.load().to_vec());
        let payload = CrossbeamPayload {
            current: Atomic::new(vec![0u64; 4]),
        };
        check_every_update_lands(&payload, &|| {
            let guard = epoch::pin();
            // SAFETY: never null; `guard` keeps it from being destroyed.
            unsafe { payload.current.load(Acquire, &guard).deref() }.clone()
        });
    }

    #[test]
    fn seqlock_copies_exactly_the_payload_or_is_skipped() {
        for words in [1, 8, 512] {
            assert!(
                make_seqlock(&Options {
                    payload_words: words
                })
                .is_ok()
            );
        }
        let Err(skipped) = make_seqlock(&Options { payload_words: 9 }) else {
            panic!("a 72-byte payload would be copied as 128 bytes");
        };
        assert!(
            skipped.reason.contains("72 bytes is not one") && skipped.hint.contains("64 or 128"),
            "{skipped:?}"
        );
        let Err(too_large) = make_seqlock(&Options { payload_words: 513 }) else {
            panic!("too large to copy out");
        };
        assert!(too_large.reason.contains("too large"), "{too_large:?}");
    }
}
