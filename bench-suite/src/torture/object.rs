//! The objects torture runs publish, and the ledger that reclaims them.
//!
//! A [`TortureObject`] carries a magic word that is [`LIVE`] from allocation
//! until the primitive's reclamation hands it back ([`reclaim`]). Reclamation
//! poisons the word first and then parks the object in a quarantine before
//! really freeing it, so a reader that reaches an object its primitive
//! reclaimed too early reads the poison (a counted error) rather than freed
//! memory. The quarantine frees its oldest object only once it holds more than
//! [`QUARANTINE`] objects *and* that one has waited [`QUARANTINE_MIN_AGE`]:
//! longer than the longest injected reader stall, so a stalled reader whose
//! object was reclaimed under it still finds the poison, not memory the
//! allocator has handed to a writer's next object. The ledger also tracks how many objects are retired but not yet
//! reclaimed, and its high-water mark: the memory a primitive holds back.
//!
//! An object refers to its ledger weakly: the quarantine owns objects, so a
//! strong reference back would be a cycle that leaks any ledger nobody closes
//! (such as the one an availability check builds and drops). A ledger frees
//! its quarantine when it closes or is dropped.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::*};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

/// The magic word of an object no reclamation has reached.
pub const LIVE: u64 = 0x5afe_0b1e_c7a1_1fe0;
/// The magic word written by [`reclaim`].
pub const POISON: u64 = 0xdead_dead_dead_dead;
/// The magic word of an object reclaimed through a reference to it (tests:
/// `reclaim_in_place`): counted as reclaimed, but not yet owned by the
/// quarantine, since a pointer made from a reference may not free it. The
/// primitive's own reclamation later hands it over.
const POISON_UNOWNED: u64 = 0xdead_dead_dead_0000;
/// Objects held in quarantine after poisoning, at least, before they are
/// freed.
pub const QUARANTINE: usize = 1 << 14;
/// How long an object stays in quarantine, at least: the longest injected
/// reader stall (300 ms, `faults.rs`) and a margin for a reader the
/// scheduler descheduled inside its section.
pub const QUARANTINE_MIN_AGE: Duration = Duration::from_millis(600);
/// Reclamations per reading of the clock. Each quarantine entry is stamped
/// with the first reading taken at or after its admission, so an entry never
/// looks older than it is: an entry admitted between readings carries the
/// previous one until the next reading restamps it, and it cannot reach the
/// front of the queue before that (it is among the last `STAMP_EVERY`
/// entries, and the front leaves only when more than [`QUARANTINE`] are held).
const STAMP_EVERY: u32 = 256;
const _: () = assert!((STAMP_EVERY as usize) < QUARANTINE);

/// An object a torture writer publishes and readers check.
#[derive(Debug)]
pub struct TortureObject {
    /// [`LIVE`] until reclaimed, then [`POISON`].
    magic: AtomicU64,
    /// The writer's sequence number for this object.
    seq: u64,
    /// `checksum(seq)`: a second word a reader can verify.
    check: u64,
    /// Weak: the ledger's quarantine may own this object (see the module docs).
    ledger: Weak<Ledger>,
}

/// A reclaimed object that was never allocated: what a reader gets in place
/// of an object it could not reach safely (the pointer to it was itself in
/// memory reclaimed too early), so that it counts the premature reclamation
/// like any other.
pub static RECLAIMED: TortureObject = TortureObject {
    magic: AtomicU64::new(POISON),
    seq: 0,
    check: 0,
    ledger: Weak::new(),
};

fn checksum(seq: u64) -> u64 {
    seq.rotate_left(17) ^ LIVE
}

impl TortureObject {
    /// A fresh live object accounted to `ledger`.
    pub fn new(ledger: &Arc<Ledger>, seq: u64) -> Box<TortureObject> {
        ledger.allocated.fetch_add(1, Relaxed);
        // One counter, so the high-water mark is exact: the difference of two
        // separately loaded counters can be off (or wrap) while other threads
        // allocate and reclaim in between.
        let outstanding = ledger.outstanding.fetch_add(1, Relaxed) + 1;
        ledger.unreclaimed_max.fetch_max(outstanding, Relaxed);
        Box::new(TortureObject {
            magic: AtomicU64::new(LIVE),
            seq,
            check: checksum(seq),
            ledger: Arc::downgrade(ledger),
        })
    }

    /// Whether the object is live and intact: what a reader checks.
    #[inline]
    pub fn is_live(&self) -> bool {
        // Acquire pairs with nothing in particular: the poison store is
        // Relaxed-or-stronger and a stale LIVE is the race the quarantine exists
        // to make harmless. Any value but LIVE is a premature reclamation.
        self.magic.load(Acquire) == LIVE && self.check == checksum(self.seq)
    }

    /// The writer's sequence number.
    pub fn seq(&self) -> u64 {
        self.seq
    }

    /// Whether the object is live and still the one of sequence number
    /// `seq`, which a reader noted when it reached it: what a reader checks
    /// after holding a section long. An object freed under it, past the
    /// quarantine, and its memory reused for a new object (the same size)
    /// reads as live; only its sequence number tells.
    #[inline]
    pub fn is_still(&self, seq: u64) -> bool {
        self.is_live() && self.seq == seq
    }
}

// The quarantine outlasts the longest injected stall with room for a
// stalled reader's late wake-up: a stall that outlives it can miss a
// premature free whose memory went to a new object (`is_still` then tells,
// by the sequence number).
const _: () = assert!(
    QUARANTINE_MIN_AGE.as_millis() >= crate::fault::STALL_MAX.as_millis() * 2,
    "the torture quarantine must outlast twice the longest injected stall"
);

/// Bookkeeping for one torture run's objects.
#[derive(Debug, Default)]
pub struct Ledger {
    allocated: AtomicU64,
    reclaimed: AtomicU64,
    /// Allocated and not yet reclaimed, now.
    outstanding: AtomicU64,
    unreclaimed_max: AtomicU64,
    /// Reclamations of an object already reclaimed (see [`reclaim`]).
    reclaimed_twice: AtomicU64,
    /// Set by [`Ledger::close`]: later reclamations free at once.
    closed: AtomicBool,
    quarantine: Mutex<Quarantine>,
}

/// Poisoned objects waiting to be freed, oldest first, with when they came
/// (see [`STAMP_EVERY`]).
#[derive(Debug, Default)]
struct Quarantine {
    objects: VecDeque<(SendPtr, Instant)>,
    /// The clock as last read.
    clock: Option<Instant>,
    /// Entries admitted since `clock` was read: the last ones in `objects`,
    /// stamped with `clock` until the next reading restamps them.
    unstamped: u32,
}

impl Quarantine {
    /// Takes `ptr` in and returns up to two objects old enough to free (two,
    /// so that it shrinks back after a burst held it above its size).
    fn admit(&mut self, ptr: SendPtr) -> [Option<SendPtr>; 2] {
        let now = match self.clock {
            Some(clock) if self.unstamped + 1 < STAMP_EVERY => {
                self.unstamped += 1;
                clock
            }
            _ => {
                let now = Instant::now();
                let held = self.objects.len();
                let pending = self.unstamped as usize;
                for (_, stamp) in self.objects.range_mut(held - pending..) {
                    *stamp = now;
                }
                self.clock = Some(now);
                self.unstamped = 0;
                now
            }
        };
        self.objects.push_back((ptr, now));
        let mut free = [None, None];
        for slot in &mut free {
            match self.objects.front() {
                Some(&(_, since))
                    if self.objects.len() > QUARANTINE
                        && now.duration_since(since) >= QUARANTINE_MIN_AGE =>
                {
                    *slot = self.objects.pop_front().map(|(p, _)| p);
                }
                _ => break,
            }
        }
        free
    }
}

#[derive(Debug)]
struct SendPtr(*mut TortureObject);
// SAFETY: the pointer is an owned, poisoned object that only the quarantine
// (under its mutex) refers to; moving it between threads moves that ownership.
unsafe impl Send for SendPtr {}

impl Ledger {
    /// A ledger for a new run.
    pub fn new() -> Arc<Ledger> {
        Arc::new(Ledger::default())
    }

    /// Objects allocated so far.
    pub fn allocated(&self) -> u64 {
        self.allocated.load(Relaxed)
    }

    /// Objects handed to [`reclaim`] so far.
    pub fn reclaimed(&self) -> u64 {
        self.reclaimed.load(Relaxed)
    }

    /// The most objects that were allocated and not yet reclaimed at once
    /// (the published ones included).
    pub fn unreclaimed_max(&self) -> u64 {
        self.unreclaimed_max.load(Relaxed)
    }

    /// Reclamations of an object that had already been reclaimed (a double
    /// retire, a callback run twice): errors of the primitive, each seen
    /// while the first reclamation still held the object in quarantine.
    pub fn reclaimed_twice(&self) -> u64 {
        // Relaxed: read after the run's threads are joined (`Run::finish`).
        self.reclaimed_twice.load(Relaxed)
    }

    /// Objects allocated and not yet reclaimed, now.
    pub fn unreclaimed(&self) -> u64 {
        self.outstanding.load(Relaxed)
    }

    /// Frees every quarantined object; objects reclaimed afterwards are freed
    /// at once. Called when a run ends.
    pub fn close(&self) {
        self.closed.store(true, Relaxed);
        let drained: Vec<(SendPtr, Instant)> = {
            let mut quarantine = self.quarantine.lock().expect("not poisoned");
            // A reclamation that read `closed` before the store above may
            // still admit an object: to an empty queue with nothing unstamped.
            quarantine.unstamped = 0;
            quarantine.objects.drain(..).collect()
        };
        for (SendPtr(ptr), _) in drained {
            // SAFETY: quarantined pointers came from `Box::into_raw` in
            // `reclaim` and are owned by the quarantine alone.
            drop(unsafe { Box::from_raw(ptr) });
        }
    }
}

impl Drop for Ledger {
    fn drop(&mut self) {
        self.close();
    }
}

/// Poisons `ptr` and hands it to the quarantine: the deleter every torture
/// implementation's reclamation calls.
///
/// # Safety
///
/// `ptr` came from `Box::into_raw` of a [`TortureObject::new`] box, and the
/// caller's primitive has decided that no reader can still reach it (that is
/// the claim a torture run checks). It is not used by the caller afterwards.
pub unsafe fn reclaim(ptr: *mut TortureObject) {
    // SAFETY: valid and owned, per the contract.
    let object = unsafe { &*ptr };
    // Relaxed: the reader's check is a detector, not a synchronization.
    let was = object.magic.swap(POISON, Relaxed);
    let Some(ledger) = object.ledger.upgrade() else {
        if was != LIVE && was != POISON_UNOWNED {
            // Already reclaimed, and with no ledger any more already freed:
            // nothing is left to count or to free.
            return;
        }
        // The run and its ledger are gone: nobody counts or checks any more.
        // SAFETY: owned per the contract, and no longer referenced.
        drop(unsafe { Box::from_raw(ptr) });
        return;
    };
    if was != LIVE {
        // A second reclamation: the first one parked the object in the
        // quarantine (or freed it after `close`), which owns it now. Count
        // the error; admitting it again would free it twice, killing the
        // run with no report.
        // Relaxed: a count, read once the run's threads have been joined.
        ledger.reclaimed_twice.fetch_add(1, Relaxed);
        if was != POISON_UNOWNED {
            return;
        }
        // Except after `reclaim_in_place`, which took no ownership: this
        // pointer, from `Box::into_raw`, is the one that may free it.
    } else {
        ledger.reclaimed.fetch_add(1, Relaxed);
        ledger.outstanding.fetch_sub(1, Relaxed);
    }
    if ledger.closed.load(Relaxed) {
        // SAFETY: owned per the contract, and no longer referenced.
        drop(unsafe { Box::from_raw(ptr) });
        return;
    }
    let evicted = ledger
        .quarantine
        .lock()
        .expect("not poisoned")
        .admit(SendPtr(ptr));
    for SendPtr(old) in evicted.into_iter().flatten() {
        // SAFETY: an old quarantined object, owned by the quarantine alone.
        drop(unsafe { Box::from_raw(old) });
    }
}

/// Reclaims `object` in place, as a premature reclamation would for the
/// readers that reach it: poisoned and counted, but kept allocated and
/// owned by nobody until the primitive's own [`reclaim`] of it (counted as
/// a second reclamation) hands it to the quarantine. A test that reached
/// the object through a read holds only a reference, and a pointer made
/// from a reference may not free it.
#[cfg(test)]
pub(crate) fn reclaim_in_place(object: &TortureObject) {
    // Relaxed: as in `reclaim`.
    if object.magic.swap(POISON_UNOWNED, Relaxed) == LIVE
        && let Some(ledger) = object.ledger.upgrade()
    {
        ledger.reclaimed.fetch_add(1, Relaxed);
        ledger.outstanding.fetch_sub(1, Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `is_still` tells a reused object from the one a reader reached: a
    /// live object of another sequence number fails it, as does a poisoned
    /// one of the same.
    #[test]
    fn is_still_tells_the_object_a_reader_reached() {
        let ledger = Arc::new(Ledger::default());
        let reached = TortureObject::new(&ledger, 7);
        let other = TortureObject::new(&ledger, 8);
        assert!(reached.is_still(7));
        assert!(
            other.is_live() && !other.is_still(7),
            "a new object passed for the old one"
        );
        reached.magic.store(0, Relaxed);
        assert!(!reached.is_still(7), "a poisoned object passed");
    }

    /// An object reclaimed in place reads as reclaimed and is counted once;
    /// the primitive's own reclamation then counts a second one and hands
    /// the object to the quarantine, which frees it at `close` (a leak
    /// otherwise: nothing else owns it).
    #[test]
    fn an_object_reclaimed_in_place_is_owned_by_the_quarantine_after_its_own_reclamation() {
        let ledger = Ledger::new();
        let a = Box::into_raw(TortureObject::new(&ledger, 1));
        let counts = || {
            (
                ledger.reclaimed(),
                ledger.unreclaimed(),
                ledger.reclaimed_twice(),
                ledger.quarantine.lock().unwrap().objects.len(),
            )
        };
        // SAFETY: `a` is alive until the ledger closes.
        reclaim_in_place(unsafe { &*a });
        // SAFETY: as above.
        assert!(!unsafe { &*a }.is_live());
        assert_eq!(
            counts(),
            (1, 0, 0, 0),
            "(reclaimed, unreclaimed, twice, quarantined)"
        );
        // SAFETY: `a` came from `Box::into_raw`, and is not used after this.
        unsafe { reclaim(a) };
        assert_eq!(
            counts(),
            (1, 0, 1, 1),
            "(reclaimed, unreclaimed, twice, quarantined)"
        );
        ledger.close();
        assert_eq!(
            counts(),
            (1, 0, 1, 0),
            "(reclaimed, unreclaimed, twice, quarantined)"
        );
    }

    #[test]
    fn reclaim_poisons_and_counts() {
        let ledger = Ledger::new();
        let a = Box::into_raw(TortureObject::new(&ledger, 1));
        let b = TortureObject::new(&ledger, 2);
        assert_eq!(ledger.unreclaimed_max(), 2);
        // SAFETY: `a` is alive until reclaimed below; nobody else holds it.
        assert!(unsafe { &*a }.is_live());
        // SAFETY: `a` came from `Box::into_raw` and is not used after this
        // except through the quarantine, which keeps it allocated.
        unsafe { reclaim(a) };
        // SAFETY: quarantined objects stay allocated until `close`.
        assert!(!unsafe { &*a }.is_live());
        assert_eq!(ledger.reclaimed(), 1);
        ledger.close();
        // SAFETY: as above; after `close`, reclaim frees at once.
        unsafe { reclaim(Box::into_raw(b)) };
        assert_eq!(ledger.allocated(), 2);
        assert_eq!(ledger.reclaimed(), 2);
        assert_eq!(ledger.unreclaimed(), 0);
    }

    /// Closing a ledger frees its quarantine, and an object reclaimed after
    /// the close is freed at once: each object holds a weak reference to
    /// its ledger until it is freed.
    #[test]
    fn closing_frees_the_quarantine_and_later_reclamations_at_once() {
        let ledger = Ledger::new();
        for seq in 0..3 {
            // SAFETY: a `TortureObject::new` box; the quarantine owns it now.
            unsafe { reclaim(Box::into_raw(TortureObject::new(&ledger, seq))) };
        }
        assert_eq!(Arc::weak_count(&ledger), 3, "the quarantine holds three");
        ledger.close();
        assert_eq!(
            Arc::weak_count(&ledger),
            0,
            "the close left objects quarantined"
        );
        // SAFETY: as above.
        unsafe { reclaim(Box::into_raw(TortureObject::new(&ledger, 3))) };
        assert_eq!(
            Arc::weak_count(&ledger),
            0,
            "an object reclaimed after the close was kept"
        );
        assert_eq!(ledger.reclaimed(), 4);
    }

    #[test]
    #[cfg_attr(miri, ignore = "tens of thousands of allocations: minutes under miri")]
    fn the_quarantine_keeps_young_objects_past_its_size() {
        // Far more than the quarantine's size, far faster than its minimum
        // age: a reader stalled on `first` meanwhile must still find it. A
        // burst that outlasts the minimum age (a debug build on a loaded
        // machine: 3 of about 40 runs on 2 busy CPUs) may rightly free its
        // first objects, and says nothing: it is taken again.
        let (ledger, first) = within_min_age(Ledger::new, |ledger| {
            let first = Box::into_raw(TortureObject::new(ledger, 0));
            // SAFETY: `first` came from `Box::into_raw`; after this the
            // quarantine owns it.
            unsafe { reclaim(first) };
            for seq in 1..=2 * QUARANTINE as u64 {
                // SAFETY: as above.
                unsafe { reclaim(Box::into_raw(TortureObject::new(ledger, seq))) };
            }
            first
        });
        let held = ledger.quarantine.lock().unwrap().objects.len();
        assert_eq!(held, 2 * QUARANTINE + 1, "a young object was freed");
        // SAFETY: `first` is still quarantined (checked above), so allocated.
        assert!(!unsafe { &*first }.is_live(), "it reads as poisoned");
        // Once old enough, the quarantine shrinks back toward its size, two
        // objects per admission.
        std::thread::sleep(QUARANTINE_MIN_AGE + Duration::from_millis(50));
        for seq in 0..2 * u64::from(STAMP_EVERY) {
            // SAFETY: as above.
            unsafe { reclaim(Box::into_raw(TortureObject::new(&ledger, seq))) };
        }
        let held = ledger.quarantine.lock().unwrap().objects.len();
        assert!(held < 2 * QUARANTINE, "{held}: old objects were not freed");
    }
    /// An object admitted long after the clock was last read is not stamped
    /// with that old reading: a burst of reclamations right after it must not
    /// free it as if it had waited all that time.
    #[test]
    #[cfg_attr(miri, ignore = "tens of thousands of allocations: minutes under miri")]
    fn an_object_admitted_between_clock_readings_is_not_freed_early() {
        // Again, with a new ledger, if the burst outlasted the minimum age
        // (which may rightly free `late`).
        let (ledger, late) = within_min_age(
            || {
                let ledger = Ledger::new();
                // SAFETY: the pointer came from `Box::into_raw`; after the
                // call the quarantine owns it.
                unsafe { reclaim(Box::into_raw(TortureObject::new(&ledger, 0))) };
                // Reclamation pauses after the clock reading of that
                // admission...
                std::thread::sleep(QUARANTINE_MIN_AGE + Duration::from_millis(50));
                ledger
            },
            |ledger| {
                let late = Box::into_raw(TortureObject::new(ledger, 1));
                // SAFETY: as above.
                unsafe { reclaim(late) };
                // ...then bursts, far past the quarantine's size.
                for seq in 2..=QUARANTINE as u64 + 4 * u64::from(STAMP_EVERY) {
                    // SAFETY: as above.
                    unsafe { reclaim(Box::into_raw(TortureObject::new(ledger, seq))) };
                }
                late
            },
        );
        // The first object, which did wait, was freed; `late` was not.
        let front = ledger
            .quarantine
            .lock()
            .unwrap()
            .objects
            .front()
            .map(|(p, _)| p.0);
        assert!(
            front == Some(late),
            "an object quarantined for less than {QUARANTINE_MIN_AGE:?} was freed, \
             or the one that waited longer was not"
        );
    }

    /// Prepares and then runs `burst` until one run of the burst takes less
    /// than [`QUARANTINE_MIN_AGE`] (up to five times), and returns what that
    /// run prepared and returned: within one, no object the burst reclaims
    /// can be old enough to free.
    fn within_min_age<S, T>(
        mut prepare: impl FnMut() -> S,
        mut burst: impl FnMut(&S) -> T,
    ) -> (S, T) {
        for _ in 0..5 {
            let prepared = prepare();
            let began = Instant::now();
            let made = burst(&prepared);
            if began.elapsed() < QUARANTINE_MIN_AGE {
                return (prepared, made);
            }
        }
        panic!(
            "five bursts each outlasted {QUARANTINE_MIN_AGE:?}: too slow a machine for this test"
        )
    }

    /// An object is live only with the magic word [`LIVE`] (not merely
    /// without the poison: memory reused by something else holds any value)
    /// and with its checksum agreeing with its sequence number, the second
    /// word a reader checks.
    #[test]
    fn an_object_with_any_word_wrong_is_not_live() {
        let ledger = Ledger::new();
        let mut object = TortureObject::new(&ledger, 7);
        assert!(object.is_live());
        object.magic.store(0, Relaxed);
        assert!(!object.is_live(), "a magic word of 0 read as live");
        object.magic.store(LIVE, Relaxed);
        object.check ^= 1;
        assert!(!object.is_live(), "a wrong checksum read as live");
        object.check ^= 1;
        object.seq += 1;
        assert!(!object.is_live(), "a wrong sequence number read as live");
    }

    /// The check word binds every bit of the sequence number: a sequence
    /// number wrong in any one bit (a torn or half-written object) does not
    /// read as live, whichever bits of [`LIVE`] its rotation lands on.
    #[test]
    fn a_sequence_number_wrong_in_any_one_bit_is_not_live() {
        let ledger = Ledger::new();
        let mut object = TortureObject::new(&ledger, 7);
        for bit in 0..u64::BITS {
            object.seq = 7 ^ (1 << bit);
            assert!(
                !object.is_live(),
                "a sequence number wrong in bit {bit} read as live"
            );
        }
        object.seq = 7;
        assert!(object.is_live());
    }

    /// Age alone frees nothing: however long they waited, objects stay until
    /// the quarantine holds more than [`QUARANTINE`].
    #[test]
    fn an_old_object_stays_while_the_quarantine_holds_few() {
        let ledger = Ledger::new();
        let first = Box::into_raw(TortureObject::new(&ledger, 0));
        // SAFETY: `first` came from `Box::into_raw`; after this the
        // quarantine owns it.
        unsafe { reclaim(first) };
        std::thread::sleep(QUARANTINE_MIN_AGE + Duration::from_millis(50));
        // Enough admissions for the clock to be read again, so that `first`
        // is known to be old.
        for seq in 1..=u64::from(STAMP_EVERY) {
            // SAFETY: as above.
            unsafe { reclaim(Box::into_raw(TortureObject::new(&ledger, seq))) };
        }
        let held = {
            let quarantine = ledger.quarantine.lock().unwrap();
            let front = quarantine.objects.front().map(|(p, _)| p.0);
            (quarantine.objects.len(), front)
        };
        assert_eq!(
            held,
            (STAMP_EVERY as usize + 1, Some(first)),
            "an object was freed while the quarantine held no more than {QUARANTINE}"
        );
    }
}
