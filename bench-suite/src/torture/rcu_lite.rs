//! `rcu-lite` under torture: readers reach the object in an `Rcu` cell inside
//! memb or qsbr read-side sections; writers rotate through the four ways the
//! cell retires a value (`replace`: `call_rcu`; `update`: `call_rcu`;
//! `replace_and_synchronize`: `synchronize_rcu` then reclaim at once;
//! `replace_polled`: a `Retired` queued until its polled grace period has
//! elapsed, reclaimed by the writer that next finds it ready).

use super::object::{self, POISON, TortureObject};
use super::{Options, Torture};
use crate::registry::{Implementation, Origin};
use rcu_lite::Retired;
use rcu_lite::qsbr::QsbrThread;
use rcu_lite::{Flavor, Memb, Qsbr, Rcu, memb};
use std::cell::RefCell;
use std::collections::VecDeque;
use std::sync::Mutex;
use std::sync::atomic::Ordering::{Acquire, Relaxed, Release};
use std::sync::atomic::{AtomicPtr, AtomicU64};

/// `rcu-lite-memb`.
pub(super) const RCU_LITE_MEMB: Implementation<dyn Torture, Options> = Implementation {
    name: "rcu-lite-memb",
    summary: "rcu_lite memb: readers read_lock + Rcu::read; writers replace / update / replace_and_synchronize / replace_polled",
    origin: Origin::Workspace,
    make: |o| Ok(Box::new(RcuLite::<Memb>::new(o))),
};

/// `rcu-lite-qsbr`.
pub(super) const RCU_LITE_QSBR: Implementation<dyn Torture, Options> = Implementation {
    name: "rcu-lite-qsbr",
    summary: "rcu_lite qsbr: registered readers, a quiescent state every 16 reads; writers as for memb",
    origin: Origin::Workspace,
    make: |o| Ok(Box::new(RcuLite::<Qsbr>::new(o))),
};

/// An owned torture object whose drop is the ledger's reclamation.
///
/// The cell keeps each value in a box of its own and frees that box with no
/// quarantine. A reader that reaches a box freed too early reads whatever the
/// allocator wrote there (glibc's tcache stores its list link and a key in
/// the first two words): following a plain pointer from it would crash the
/// run instead of counting the error. So the pointer sits between a magic
/// word and a check word, [`check_of`] the pointer, and a reader follows it
/// only when the magic word reads [`TRACKED_LIVE`] and the check word matches
/// the pointer it loaded; otherwise it gets [`object::RECLAIMED`], a poisoned
/// object, and counts a premature reclamation.
///
/// The check word is bound to the pointer, not a second magic word, because
/// a box is not always freed after its value's drop: `Rcu::update`'s and
/// `Rcu::replace`'s callbacks drop the value in its box (poisoning both words
/// first), but `Rcu::replace_and_synchronize` moves the value out and frees
/// the box before the value is dropped, so that box is freed with both words
/// still live. A reader that loaded the magic word before that free and the
/// pointer after it would see a live word on each side of the allocator's
/// key, and follow it. A box the allocator has already handed to a writer's
/// next value reads as that value: a miss, not a crash.
// repr(C): the words stay in this order, the pointer between them.
#[repr(C)]
struct Tracked {
    magic: AtomicU64,
    object: AtomicPtr<TortureObject>,
    /// [`check_of`] `object`, until the drop poisons it.
    check: AtomicU64,
}

/// The check word of a [`Tracked`] holding `object`.
fn check_of(object: *mut TortureObject) -> u64 {
    TRACKED_LIVE ^ object.addr() as u64
}

/// The magic words of a [`Tracked`] no drop has reached.
const TRACKED_LIVE: u64 = 0x7ac4_ed0b_1ec7_11fe;

// SAFETY: `Tracked` owns its object (a `TortureObject` is `Send + Sync`: atomics
// and an `Arc`); it is only reclaimed once, by `drop`.
unsafe impl Send for Tracked {}
// SAFETY: shared access only reads the object through `&TortureObject`.
unsafe impl Sync for Tracked {}

impl Tracked {
    fn new(object: Box<TortureObject>) -> Tracked {
        let object = Box::into_raw(object);
        Tracked {
            magic: AtomicU64::new(TRACKED_LIVE),
            object: AtomicPtr::new(object),
            check: AtomicU64::new(check_of(object)),
        }
    }

    /// The tracked object, or [`object::RECLAIMED`] when this `Tracked` was
    /// dropped (or its box freed and reused) under the reader.
    #[inline]
    fn object(&self) -> &TortureObject {
        // Acquire, all three: each load stays after the one before it. The
        // drop poisons `check` before it clears `object` (Release), so a
        // reader whose `object` load sees the clearing sees the poison; and
        // whatever else an `object` load finds in a freed box (the
        // allocator's key, a torn write of the next value), the check word
        // loaded after it does not match it.
        let before = self.magic.load(Acquire);
        let object = self.object.load(Acquire);
        let check = self.check.load(Acquire);
        if before != TRACKED_LIVE || check != check_of(object) || !object.is_aligned() {
            return &object::RECLAIMED;
        }
        // SAFETY: the magic word was live before the pointer's load and the
        // check word matched it after, so it is this value's object, which
        // `drop` hands to the ledger's
        // quarantine: it stays allocated (poisoned once reclaimed) for as
        // long as any reader can still be inside.
        match unsafe { object.as_ref() } {
            Some(object) => object,
            None => &object::RECLAIMED,
        }
    }

    fn seq(&self) -> u64 {
        self.object().seq()
    }
}

impl Drop for Tracked {
    fn drop(&mut self) {
        // Relaxed for the words, Release for the clearing: see `object`.
        self.magic.store(POISON, Relaxed);
        self.check.store(POISON, Relaxed);
        let object = self.object.swap(std::ptr::null_mut(), Release);
        // SAFETY: the pointer came from `Box::into_raw` of a
        // `TortureObject::new` box in `new`, and this drop runs once; the
        // cell drops a value only when no reader can reach it (unless the
        // primitive is broken, which the poison lets readers count).
        unsafe { object::reclaim(object) };
    }
}

struct RcuLite<F: Flavor> {
    cell: Rcu<Tracked, F>,
    /// Every replacement goes through `call_rcu` (see [`Options::deferred_only`]).
    deferred_only: bool,
    /// Values `replace_polled` unpublished, oldest first, until a writer
    /// finds their grace period ended and reclaims them.
    polled: Mutex<VecDeque<Retired<Tracked, F>>>,
}

impl<F: Flavor> RcuLite<F> {
    fn new(options: &Options) -> Self {
        RcuLite {
            cell: Rcu::new(Tracked::new(TortureObject::new(&options.ledger, 0))),
            deferred_only: options.deferred_only,
            polled: Mutex::new(VecDeque::new()),
        }
    }

    fn replace_with(&self, fresh: Box<TortureObject>) {
        let fresh = Tracked::new(fresh);
        if self.deferred_only {
            return self.cell.replace(fresh);
        }
        match fresh.seq() % 4 {
            0 => self.cell.replace(fresh),
            1 => self.cell.update(move |_| fresh),
            2 => drop(self.cell.replace_and_synchronize(fresh)),
            _ => self.replace_polled(fresh),
        }
    }

    /// `replace_polled`, queueing the old value, then reclaims the queued
    /// values whose grace period has ended, from the front until one has
    /// not. Cookies elapse in order and are queued nearly so (two writers
    /// may take theirs in one order and queue them in the other), so a
    /// ready value may wait behind a later cookie that is not: a delay,
    /// not a leak (the cell's drop hands over what is left).
    fn replace_polled(&self, fresh: Tracked) {
        let retired = self.cell.replace_polled(fresh);
        let mut polled = self.polled.lock().unwrap_or_else(|e| e.into_inner());
        polled.push_back(retired);
        while let Some(oldest) = polled.pop_front() {
            match oldest.try_into_inner() {
                Ok(old) => drop(old),
                Err(not_yet) => {
                    polled.push_front(not_yet);
                    break;
                }
            }
        }
    }
}

impl Torture for RcuLite<Memb> {
    fn read(&self) -> bool {
        let guard = memb::read_lock();
        self.cell.read(&guard).object().is_live()
    }

    fn read_with(&self, inside: &mut dyn FnMut(&TortureObject)) {
        let guard = memb::read_lock();
        inside(self.cell.read(&guard).object());
    }

    fn replace(&self, fresh: Box<TortureObject>) {
        self.replace_with(fresh);
    }
}

std::thread_local! {
    /// This reader thread's qsbr registration and its reads since the last
    /// quiescent state.
    static QSBR_READER: RefCell<Option<(QsbrThread, u32)>> = const { RefCell::new(None) };
}

/// Reads between two quiescent states of a qsbr torture reader.
const READS_PER_QS: u32 = 16;

impl Torture for RcuLite<Qsbr> {
    fn read(&self) -> bool {
        QSBR_READER.with(|slot| {
            let mut slot = slot.borrow_mut();
            let (registration, reads) = slot.get_or_insert_with(|| (QsbrThread::register(), 0));
            *reads += 1;
            if *reads == READS_PER_QS {
                *reads = 0;
                registration.quiescent_state();
            }
            let guard = registration.read_lock();
            self.cell.read(&guard).object().is_live()
        })
    }

    fn read_with(&self, inside: &mut dyn FnMut(&TortureObject)) {
        QSBR_READER.with(|slot| {
            let mut slot = slot.borrow_mut();
            // A thread that only ever reads through `read_with` (a fault
            // thread) stays online from here until it exits: exiting while
            // registered is one of the faults.
            let (registration, _) = slot.get_or_insert_with(|| (QsbrThread::register(), 0));
            let guard = registration.read_lock();
            inside(self.cell.read(&guard).object());
        })
    }

    fn replace(&self, fresh: Box<TortureObject>) {
        self.replace_with(fresh);
    }
}

impl<F: Flavor> Drop for RcuLite<F> {
    fn drop(&mut self) {
        // Queued polled values go to `call_rcu` (or are dropped at once if
        // ready), then every deferred reclamation runs before the ledger
        // closes.
        drop(std::mem::take(
            self.polled.get_mut().unwrap_or_else(|e| e.into_inner()),
        ));
        F::rcu_barrier();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::torture::object::Ledger;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
    use std::time::Duration;

    /// A reader that reaches a `Tracked` after its drop (the cell freed its
    /// box too early) gets the poisoned stand-in, which counts as an error.
    #[test]
    fn a_dropped_tracked_reads_as_reclaimed() {
        let ledger = Ledger::new();
        let mut tracked = std::mem::ManuallyDrop::new(Tracked::new(TortureObject::new(&ledger, 1)));
        assert!(tracked.object().is_live());
        assert_eq!(tracked.seq(), 1);
        // SAFETY: dropped once; the memory stays owned by the ManuallyDrop,
        // which is never dropped again, so reading it afterwards is sound.
        unsafe { std::mem::ManuallyDrop::drop(&mut tracked) };
        assert!(std::ptr::eq(tracked.object(), &object::RECLAIMED));
        assert!(!tracked.object().is_live());
        assert_eq!(ledger.reclaimed(), 1);
    }

    /// What an allocator writes into a freed box (glibc's tcache: a list link
    /// and a key over the first two words) is never followed as a pointer:
    /// each word that is not live turns the read into the poisoned stand-in.
    /// A reader that followed the garbage pointer here would crash the test.
    #[test]
    fn garbage_in_a_freed_box_is_never_followed() {
        let ledger = Ledger::new();
        let tracked = Tracked::new(TortureObject::new(&ledger, 2));
        let real = tracked.object.load(Relaxed);
        // An aligned address that is mapped by nothing.
        let garbage = std::ptr::without_provenance_mut::<TortureObject>(0x10);
        let cases: [(&str, &AtomicU64, u64); 4] = [
            (
                "link over the first word",
                &tracked.magic,
                0x5555_0000_1234_5678,
            ),
            ("poison in the first word", &tracked.magic, POISON),
            ("poison in the last word", &tracked.check, POISON),
            ("a live word's neighbour", &tracked.check, 0),
        ];
        for (what, word, value) in cases {
            let was = word.load(Relaxed);
            tracked.object.store(garbage, Relaxed);
            word.store(value, Relaxed);
            assert!(
                std::ptr::eq(tracked.object(), &object::RECLAIMED),
                "{what}: not read as reclaimed"
            );
            word.store(was, Relaxed);
        }
        // Words that match a null or misaligned pointer: not followed either.
        for bad in [std::ptr::null_mut(), real.wrapping_byte_add(1)] {
            tracked.object.store(bad, Relaxed);
            tracked.check.store(check_of(bad), Relaxed);
            assert!(std::ptr::eq(tracked.object(), &object::RECLAIMED));
        }
        tracked.object.store(real, Relaxed);
        tracked.check.store(check_of(real), Relaxed);
        assert!(tracked.object().is_live());
    }

    /// The check word binds every bit of the pointer: a pointer word wrong
    /// in any one bit that alignment leaves free (a torn write, the
    /// allocator's key over part of it) is not followed, whichever bits of
    /// [`TRACKED_LIVE`] that bit meets.
    #[test]
    fn a_pointer_wrong_in_any_one_bit_is_not_followed() {
        let ledger = Ledger::new();
        let tracked = Tracked::new(TortureObject::new(&ledger, 4));
        let real = tracked.object.load(Relaxed);
        let free_bits = std::mem::align_of::<TortureObject>().trailing_zeros()..usize::BITS;
        // Only compared, never read; the real pointer is back before any
        // assertion, so that the drop reclaims the real object.
        let followed: Vec<u32> = free_bits
            .filter(|bit| {
                tracked
                    .object
                    .store(real.map_addr(|a| a ^ (1usize << bit)), Relaxed);
                !std::ptr::eq(tracked.object(), &object::RECLAIMED)
            })
            .collect();
        tracked.object.store(real, Relaxed);
        assert!(
            followed.is_empty(),
            "pointers wrong in bits {followed:?} were followed"
        );
        assert!(tracked.object().is_live());
    }

    /// `Rcu::replace_and_synchronize` moves the value out of its box and
    /// frees the box before the value's drop, so the box is freed with its
    /// words unpoisoned. A reader that loaded the magic word before that
    /// free and the pointer after it (glibc's tcache key, over the second
    /// word) must not follow it: here the first and last words are as the
    /// value left them, live, around an aligned address mapped by nothing.
    /// (With a second magic word in place of the check, it was followed.)
    #[test]
    fn a_box_freed_before_its_values_drop_is_never_followed() {
        let ledger = Ledger::new();
        let boxed = Box::into_raw(Box::new(Tracked::new(TortureObject::new(&ledger, 3))));
        // The move out of the box, as `*Box::from_raw(old)` makes it.
        // SAFETY: `boxed` is a live box; its value is owned by `moved` from
        // here on and never dropped through `boxed`.
        let moved = unsafe { std::ptr::read(boxed) };
        // SAFETY: the box's memory stays allocated (freed below); the test
        // writes what the allocator's free would write over the pointer.
        let left = unsafe { &*boxed };
        left.object.store(
            std::ptr::without_provenance_mut::<TortureObject>(0x10),
            Relaxed,
        );
        assert_eq!(
            left.magic.load(Relaxed),
            TRACKED_LIVE,
            "the first word, unpoisoned"
        );
        assert!(
            std::ptr::eq(left.object(), &object::RECLAIMED),
            "garbage between two unpoisoned words was followed"
        );
        // SAFETY: the box's allocation, whose value `moved` owns.
        drop(unsafe { Box::from_raw(boxed.cast::<std::mem::MaybeUninit<Tracked>>()) });
        drop(moved);
        assert_eq!(ledger.reclaimed(), 1);
    }

    /// Whether `cell.replace` of an object numbered `seq`, made on another
    /// thread while this one holds a memb read section, returned within
    /// `patience`. The section then ends, which lets a replacement that
    /// waits for it go.
    fn returns_during_a_section(
        cell: &RcuLite<Memb>,
        ledger: &Arc<Ledger>,
        seq: u64,
        patience: Duration,
    ) -> bool {
        std::thread::scope(|s| {
            let section = memb::read_lock();
            let writer = s.spawn(|| cell.replace(TortureObject::new(ledger, seq)));
            let deadline = std::time::Instant::now() + patience;
            while !writer.is_finished() && std::time::Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(1));
            }
            let returned = writer.is_finished();
            drop(section);
            returned
        })
    }

    /// Writers take the cell's four ways by sequence number (the module
    /// docs): `replace` and `update` hand the old value to `call_rcu` and
    /// return while a reader holds its section, `replace_and_synchronize`
    /// waits for it, and `replace_polled` returns and queues it. A rotation
    /// stuck on one way would leave the others untortured. (The bound on a
    /// replacement that does not wait is far above what it takes; a
    /// synchronizing one never returns within a section.)
    #[test]
    fn writers_take_the_cells_four_ways_by_sequence_number() {
        test_support::within_a_deadline("rcu-lite's four ways", Duration::from_secs(120), || {
            let ledger = Ledger::new();
            let cell = RcuLite::<Memb>::new(&Options {
                ledger: Arc::clone(&ledger),
                ..Options::default()
            });
            let long = Duration::from_secs(10);
            for (seq, way) in [(8, "replace"), (9, "update"), (11, "replace_polled")] {
                assert!(
                    returns_during_a_section(&cell, &ledger, seq, long),
                    "object {seq}: {way} (no wait) waited for a reader"
                );
            }
            assert_eq!(
                cell.polled.lock().unwrap().len(),
                1,
                "object 11's predecessor was not queued by replace_polled"
            );
            assert!(
                !returns_during_a_section(&cell, &ledger, 10, Duration::from_millis(100)),
                "object 10: returned while a reader held its section, so it did not \
                     replace_and_synchronize"
            );
        });
    }

    /// Dropping the torture cell waits for its pending `call_rcu`
    /// reclamations (`rcu_barrier`): the run's ledger must see every object
    /// reclaimed before it closes, or a leak is reported.
    #[test]
    fn dropping_waits_for_pending_reclamations() {
        // A replacement that synchronized would wait for the reader below,
        // which waits for the replacement: a hang, failed by the deadline.
        test_support::within_a_deadline(
            "a cell's drop with a reclamation pending",
            Duration::from_secs(60),
            || {
                let ledger = Ledger::new();
                let cell = RcuLite::<Memb>::new(&Options {
                    ledger: Arc::clone(&ledger),
                    ..Options::default()
                });
                let (inside, release) = (AtomicBool::new(false), AtomicBool::new(false));
                std::thread::scope(|s| {
                    // A reader whose section holds up every grace period.
                    s.spawn(|| {
                        let _section = memb::read_lock();
                        inside.store(true, SeqCst);
                        while !release.load(SeqCst) {
                            std::thread::sleep(Duration::from_millis(1));
                        }
                    });
                    while !inside.load(SeqCst) {
                        std::thread::yield_now();
                    }
                    // Sequence number 4: `Rcu::replace`, a `call_rcu`;
                    // 7: `Rcu::replace_polled`, queued in the cell.
                    cell.replace(TortureObject::new(&ledger, 4));
                    cell.replace(TortureObject::new(&ledger, 7));
                    let dropper = s.spawn(move || drop(cell));
                    // A drop that does not wait returns meanwhile.
                    std::thread::sleep(Duration::from_millis(100));
                    let (returned, pending) = (dropper.is_finished(), ledger.unreclaimed());
                    release.store(true, SeqCst);
                    dropper.join().unwrap();
                    assert!(
                        !returned || pending == 0,
                        "the cell's drop returned with {pending} reclamations pending"
                    );
                });
                assert_eq!(ledger.unreclaimed(), 0);
            },
        );
    }
}
