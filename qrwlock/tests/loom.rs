//! Loom models of the raw lock: every interleaving of 2-4 threads (up to
//! `LOOM_MAX_PREEMPTIONS` preemptions) of the fast paths, the slow paths, the
//! MCS wait queue and the sleep/wake protocol.
//!
//! Under loom the spin budgets are one round, so every wait that is not over
//! at once goes to the futex model (a loom `Mutex` + `Condvar`, see the
//! `futex-word` crate): a lost wake-up leaves a thread asleep forever, which loom
//! reports as a deadlock. Data races on the protected cell (an exclusion or
//! ordering bug) are reported by loom's `UnsafeCell`.
//!
//! A missing wake shows up only in a schedule where the waiter is asleep
//! before the RMW that should wake it. A thread that yields in a spin runs
//! again only after another thread's next operation, so where that operation
//! is the waking RMW itself the waiter never gets to sleep first: with
//! `write_unlock`'s wake removed, the two-thread models
//! `reader_and_writer_exclude_each_other` and `two_writers_exclude_each_other`
//! pass (the three-thread ones deadlock). A model meant to check one wake
//! gives the waker schedule points before it, as
//! `downgrade_admits_readers_not_writers` does.
//!
//! Run: `LOOM_MAX_PREEMPTIONS=2 RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom
//! cargo test -p qrwlock --test loom --release`
#![cfg(loom)]

use loom::cell::UnsafeCell;
use loom::sync::Arc;
use loom::sync::atomic::{AtomicBool, AtomicU32, Ordering::*};
use loom::thread;
use qrwlock::{RawQRwLock, cond_load_acquire, wake_sleepers};

/// A raw lock and the value it protects.
struct Locked {
    lock: RawQRwLock,
    value: UnsafeCell<u32>,
}

// SAFETY: `value` is only accessed under `lock` (readers shared, writers
// exclusive), which is what the models check.
unsafe impl Sync for Locked {}

impl Locked {
    fn new() -> Arc<Locked> {
        Arc::new(Locked {
            lock: RawQRwLock::new(),
            value: UnsafeCell::new(0),
        })
    }

    fn add(&self, n: u32) {
        self.lock.write_lock();
        // SAFETY: write-locked.
        self.value.with_mut(|v| unsafe { *v += n });
        // SAFETY: we hold it exclusively.
        unsafe { self.lock.write_unlock() };
    }

    fn read(&self) -> u32 {
        self.lock.read_lock();
        // SAFETY: read-locked.
        let v = self.value.with(|v| unsafe { *v });
        // SAFETY: we hold it shared.
        unsafe { self.lock.read_unlock() };
        v
    }

    /// The value once every other thread has been joined (join orders their
    /// sections before this read).
    fn value_after_join(&self) -> u32 {
        // SAFETY: no other thread runs any more.
        self.value.with(|v| unsafe { *v })
    }

    /// Once every other thread has been joined: the lock is as a fresh one,
    /// its word zero (no reader count, no writer byte, no `WRITER_WAITING`, no
    /// sleeper bit) and its wait queue empty. A count or writer bit left over
    /// keeps the next locker out for good; a stale `WRITER_WAITING` sends
    /// every later reader through the queue; a queue tail left behind makes
    /// the next slow-path locker link to a node that is gone and wait for a
    /// grant that never comes.
    ///
    /// Mutants it kills at `LOOM_MAX_PREEMPTIONS=2` (applied by hand):
    /// - A slow-path writer whose acquiring CAS keeps its waiting bit (`cnts`
    ///   -> `WRITER_LOCKED | WRITER_WAITING`): every model passed it (the stale
    ///   bit only sends readers through the queue, and a writer at the front
    ///   waits for exactly that bit); now 11 models fail with "the lock word
    ///   once every thread has left: 0x100, not 0".
    /// - A writer at the front that finds the lock free and takes it without
    ///   handing the queue on (no `wait_queue.unlock` before its early
    ///   return), or a front reader that skips `unlock_admitting_readers` when
    ///   nobody is linked behind it: 7 and 10 models fail with "the wait queue
    ///   once every thread has left: not empty". Before, only
    ///   `a_front_reader_admits_readers_only` caught them, as a deadlock that
    ///   aborted the test binary (a later locker linked to the dead node).
    /// - A `downgrade` that counts its owner in twice: "0x400, not 0" (the
    ///   `!is_locked()` this replaced caught that one too). One that leaves
    ///   the writer byte deadlocks `downgrade_admits_readers_not_writers`'s
    ///   reader first.
    ///
    /// A sleeper bit the queue head leaves behind (its acquiring CAS keeping
    /// `HEAD_SLEEPING`) passes: the next RMW that sees the bit clears it.
    fn assert_back_to_fresh(&self) {
        let (word, queue_empty) = self.lock.loom_word_and_queue_empty();
        assert_eq!(
            word, 0,
            "the lock word once every thread has left: {word:#x}, not 0"
        );
        assert!(
            queue_empty,
            "the wait queue once every thread has left: not empty"
        );
    }
}

#[test]
fn two_writers_exclude_each_other() {
    qrwlock::loom_model_with_spurious_wakeups_too(|| {
        let locked = Locked::new();
        let other = {
            let locked = locked.clone();
            thread::spawn(move || locked.add(1))
        };
        locked.add(2);
        other.join().unwrap();
        assert_eq!(locked.value_after_join(), 3);
        locked.assert_back_to_fresh();
    });
}

#[test]
fn reader_and_writer_exclude_each_other() {
    qrwlock::loom_model_with_spurious_wakeups_too(|| {
        let locked = Locked::new();
        let reader = {
            let locked = locked.clone();
            thread::spawn(move || locked.read())
        };
        locked.add(1);
        let seen = reader.join().unwrap();
        assert!(seen == 0 || seen == 1, "reader saw {seen}");
        locked.assert_back_to_fresh();
    });
}

#[test]
fn two_writers_and_a_reader() {
    qrwlock::loom_model_with_spurious_wakeups_too(|| {
        let locked = Locked::new();
        let w = {
            let locked = locked.clone();
            thread::spawn(move || locked.add(1))
        };
        let r = {
            let locked = locked.clone();
            thread::spawn(move || locked.read())
        };
        locked.add(2);
        w.join().unwrap();
        let seen = r.join().unwrap();
        assert!([0, 1, 2, 3].contains(&seen), "reader saw {seen}");
        assert_eq!(locked.value_after_join(), 3);
        locked.assert_back_to_fresh();
    });
}

#[test]
fn two_readers_and_a_writer() {
    qrwlock::loom_model_with_spurious_wakeups_too(|| {
        let locked = Locked::new();
        let readers: Vec<_> = (0..2)
            .map(|_| {
                let locked = locked.clone();
                thread::spawn(move || locked.read())
            })
            .collect();
        locked.add(1);
        for r in readers {
            let seen = r.join().unwrap();
            assert!(seen <= 1, "reader saw {seen}");
        }
        locked.assert_back_to_fresh();
    });
}

/// Two readers queue behind a writer that holds the lock; the first to reach
/// the front admits the other. Both must see the writer's value (the admitted
/// one through the front's grant), none may overlap the writer, and the lock
/// must end empty: the bias the front added for the other is removed by that
/// reader's own unlock.
#[test]
fn readers_queued_behind_a_writer_are_admitted() {
    qrwlock::loom_model_with_spurious_wakeups_too(|| readers_queued_behind_a_writer(2));
}

/// `readers` readers queue behind a writer that holds the lock; each must see
/// the writer's value, and the lock must end empty.
fn readers_queued_behind_a_writer(readers: usize) {
    let locked = Locked::new();
    locked.lock.write_lock();
    let readers: Vec<_> = (0..readers)
        .map(|_| {
            let locked = locked.clone();
            thread::spawn(move || locked.read())
        })
        .collect();
    // SAFETY: write-locked above.
    locked.value.with_mut(|v| unsafe { *v = 7 });
    // SAFETY: we hold it exclusively.
    unsafe { locked.lock.write_unlock() };
    for r in readers {
        assert_eq!(r.join().unwrap(), 7);
    }
    locked.assert_back_to_fresh();
    assert!(locked.lock.try_write_lock(), "nothing left in the word");
}

/// A reader and a writer queue behind a writer; the reader, if it reaches
/// the front first, must not admit the writer, and the writer must not enter
/// while the reader is inside.
#[test]
fn a_front_reader_admits_readers_only() {
    qrwlock::loom_model_with_spurious_wakeups_too(|| {
        let locked = Locked::new();
        locked.lock.write_lock();
        let r = {
            let locked = locked.clone();
            thread::spawn(move || locked.read())
        };
        let w = {
            let locked = locked.clone();
            thread::spawn(move || locked.add(1))
        };
        // SAFETY: write-locked above.
        locked.value.with_mut(|v| unsafe { *v = 10 });
        // SAFETY: we hold it exclusively.
        unsafe { locked.lock.write_unlock() };
        w.join().unwrap();
        let seen = r.join().unwrap();
        assert!(seen == 10 || seen == 11, "reader saw {seen}");
        assert_eq!(locked.value_after_join(), 11);
        locked.assert_back_to_fresh();
    });
}

#[test]
fn three_writers_queue() {
    qrwlock::loom_model_with_spurious_wakeups_too(|| {
        let locked = Locked::new();
        let writers: Vec<_> = (0..2)
            .map(|i| {
                let locked = locked.clone();
                thread::spawn(move || locked.add(1 << i))
            })
            .collect();
        locked.add(4);
        for w in writers {
            w.join().unwrap();
        }
        assert_eq!(locked.value_after_join(), 7);
        locked.assert_back_to_fresh();
    });
}

/// "Prevent slowpath writers getting held up by fastpath": once a writer
/// waits at the front, new readers (fast path or try) do not enter before it.
#[test]
fn waiting_writer_blocks_new_fast_path_readers() {
    qrwlock::loom_model_with_spurious_wakeups_too(|| {
        let locked = Locked::new();
        locked.lock.read_lock();
        let writer = {
            let locked = locked.clone();
            thread::spawn(move || locked.add(1))
        };
        while !locked.lock.is_writer_waiting() {
            thread::yield_now();
        }
        assert!(
            !locked.lock.try_read_lock(),
            "a try-reader entered past a waiting writer"
        );
        let reader = {
            let locked = locked.clone();
            thread::spawn(move || locked.read())
        };
        // SAFETY: taken above.
        unsafe { locked.lock.read_unlock() };
        assert_eq!(
            reader.join().unwrap(),
            1,
            "a reader that arrived after the writer waited entered first"
        );
        writer.join().unwrap();
        locked.assert_back_to_fresh();
    });
}

/// A try-reader that starts after a writer waits at the front must fail, even
/// if its first look at the word misses the waiting bit: it learns that the
/// writer waits only through a Relaxed flag, which orders nothing, so that
/// Relaxed look may read an older word. Its add cannot (an RMW reads the
/// latest value), so the check of the value the add returned must catch the
/// bit; checking only the writer byte there lets the try-reader in.
#[test]
fn try_read_lock_checks_the_word_its_add_returned() {
    qrwlock::loom_model_with_spurious_wakeups_too(|| {
        let locked = Locked::new();
        let told = Arc::new(AtomicBool::new(false));
        locked.lock.read_lock();
        let writer = {
            let locked = locked.clone();
            thread::spawn(move || locked.add(1))
        };
        let try_reader = {
            let locked = locked.clone();
            let told = told.clone();
            thread::spawn(move || {
                while !told.load(Relaxed) {
                    thread::yield_now();
                }
                let entered = locked.lock.try_read_lock();
                if entered {
                    // SAFETY: taken just above.
                    unsafe { locked.lock.read_unlock() };
                }
                entered
            })
        };
        while !locked.lock.is_writer_waiting() {
            thread::yield_now();
        }
        told.store(true, Relaxed);
        assert!(
            !try_reader.join().unwrap(),
            "a try-reader entered past a waiting writer"
        );
        // SAFETY: taken above.
        unsafe { locked.lock.read_unlock() };
        writer.join().unwrap();
        assert_eq!(locked.value_after_join(), 1);
        locked.assert_back_to_fresh();
    });
}

/// A thread that holds a read lock takes it again, recursively, while a
/// writer waits at the front for the first hold: both recursive forms enter
/// (with the waiting bit in `read_lock_recursive`'s check, the thread queues
/// behind the writer that waits for it, which loom reports as a deadlock; in
/// `try_read_lock_recursive`'s, the assertion fails), the holds see the value
/// from before the writer, and the writer enters once all three are given
/// up: the last unlock wakes it if it sleeps.
#[test]
fn a_recursive_read_enters_past_a_waiting_writer() {
    qrwlock::loom_model_with_spurious_wakeups_too(|| {
        let locked = Locked::new();
        locked.lock.read_lock();
        let writer = {
            let locked = locked.clone();
            thread::spawn(move || locked.add(1))
        };
        while !locked.lock.is_writer_waiting() {
            thread::yield_now();
        }
        locked.lock.read_lock_recursive();
        assert!(
            locked.lock.try_read_lock_recursive(),
            "a recursive try-reader refused with no writer inside"
        );
        // SAFETY: read-locked (three times).
        let seen = locked.value.with(|v| unsafe { *v });
        assert_eq!(seen, 0, "a reader overlapped the writer");
        // SAFETY: the three shared holds taken above, each given up once.
        unsafe {
            locked.lock.read_unlock();
            locked.lock.read_unlock();
            locked.lock.read_unlock();
        }
        writer.join().unwrap();
        assert_eq!(locked.value_after_join(), 1);
        locked.assert_back_to_fresh();
    });
}

/// A recursive reader racing a writer enters only while no writer is inside
/// (loom's cell reports an overlap: with no writer check in
/// `read_lock_recursive`, or the waiting bit only in
/// `try_read_lock_recursive`'s, it does), sees the value from before or
/// after the write, never the later one first, and when it finds the writer
/// inside it queues and is woken.
#[test]
fn a_recursive_reader_and_a_writer_exclude_each_other() {
    qrwlock::loom_model_with_spurious_wakeups_too(|| {
        let locked = Locked::new();
        let reader = {
            let locked = locked.clone();
            thread::spawn(move || {
                let tried = locked.lock.try_read_lock_recursive().then(|| {
                    // SAFETY: read-locked just above.
                    let v = locked.value.with(|v| unsafe { *v });
                    // SAFETY: the hold taken just above.
                    unsafe { locked.lock.read_unlock() };
                    v
                });
                locked.lock.read_lock_recursive();
                // SAFETY: read-locked just above.
                let seen = locked.value.with(|v| unsafe { *v });
                // SAFETY: the hold taken just above.
                unsafe { locked.lock.read_unlock() };
                (tried, seen)
            })
        };
        locked.add(1);
        let (tried, seen) = reader.join().unwrap();
        assert!(seen <= 1, "reader saw {seen}");
        assert!(
            tried.is_none_or(|t| t <= seen),
            "the recursive try-reader saw {tried:?}, the later reader {seen}"
        );
        locked.assert_back_to_fresh();
    });
}

/// Downgrade keeps writers out and lets a waiting reader in with the owner.
///
/// The reader must be able to fall asleep before the downgrade, or the
/// downgrade's wake is never needed: a loom thread that yields in a spin runs
/// again only after another thread's next operation, and without the loads
/// below the writer's next operation is the downgrade itself. With them, the
/// model deadlocks if `downgrade` does not wake the sleeping reader.
#[test]
fn downgrade_admits_readers_not_writers() {
    qrwlock::loom_model_with_spurious_wakeups_too(|| {
        let locked = Locked::new();
        locked.lock.write_lock();
        let reader = {
            let locked = locked.clone();
            thread::spawn(move || locked.read())
        };
        // Schedule points, so that the reader can queue and sleep first.
        for _ in 0..3 {
            let _ = locked.lock.is_locked();
        }
        // SAFETY: write-locked.
        locked.value.with_mut(|v| unsafe { *v = 5 });
        // SAFETY: we hold it exclusively.
        unsafe { locked.lock.downgrade() };
        assert!(!locked.lock.try_write_lock());
        // SAFETY: read-locked now.
        let mine = locked.value.with(|v| unsafe { *v });
        assert_eq!(mine, 5);
        assert_eq!(reader.join().unwrap(), 5);
        // SAFETY: the shared hold downgrade gave us.
        unsafe { locked.lock.read_unlock() };
        locked.assert_back_to_fresh();
    });
}

/// A writer that queued behind a write lock which is then downgraded gets in
/// once the downgraded hold ends, and not before: the downgrade keeps the
/// waiting writer's `WRITER_WAITING`, and the `read_unlock` that ends the
/// last shared hold wakes the writer if it sleeps. (A downgrade that also
/// clears `WRITER_WAITING` leaves the writer asleep for good: this model
/// fails with it as a deadlock at 2 preemptions, while every other model,
/// with no writer behind a downgrade, passes it; checked by hand,
/// 2026-12-02.)
#[test]
fn a_writer_queued_behind_a_downgrade_gets_in_after_it() {
    qrwlock::loom_model_with_spurious_wakeups_too(|| {
        let locked = Locked::new();
        locked.lock.write_lock();
        let writer = {
            let locked = locked.clone();
            thread::spawn(move || locked.add(1))
        };
        // Schedule points, so that the writer can queue and sleep first.
        for _ in 0..3 {
            let _ = locked.lock.is_locked();
        }
        // SAFETY: write-locked.
        locked.value.with_mut(|v| unsafe { *v = 5 });
        // SAFETY: we hold it exclusively.
        unsafe { locked.lock.downgrade() };
        // SAFETY: read-locked now; a writer inside would race this read.
        let mine = locked.value.with(|v| unsafe { *v });
        assert_eq!(mine, 5);
        // SAFETY: the shared hold downgrade gave us.
        unsafe { locked.lock.read_unlock() };
        writer.join().unwrap();
        assert_eq!(locked.value_after_join(), 6);
        locked.assert_back_to_fresh();
    });
}

/// The bare sleep/wake protocol: a waiter that sleeps is always woken by the
/// RMW that satisfies it (a lost wake-up is a loom deadlock).
#[test]
fn cond_load_never_loses_a_wake_up() {
    const SLEEPER: u32 = 1 << 31;
    qrwlock::loom_model_with_spurious_wakeups_too(|| {
        let word = Arc::new(AtomicU32::new(0));
        let wakers: Vec<_> = (0..2)
            .map(|_| {
                let word = word.clone();
                thread::spawn(move || {
                    let previous = word.fetch_add(1, Release);
                    wake_sleepers(&word, previous, SLEEPER);
                })
            })
            .collect();
        let seen = cond_load_acquire(&word, SLEEPER, |v| v == 2);
        assert_eq!(seen & !SLEEPER, 2);
        for w in wakers {
            w.join().unwrap();
        }
    });
}

/// A waiter for the word to reach zero sleeps on the value it announced (the
/// one with its sleeper bit), not on the value it read before: if the RMW
/// that satisfies it, and the waker's clearing of the bit, both come between
/// its announcing CAS and its sleep, the word is zero by then, and a sleep on
/// zero (what the sleeper bit's `|=` turned into `&=` gives) never ends.
#[test]
fn cond_load_sleeps_on_the_value_with_its_sleeper_bit() {
    const SLEEPER: u32 = 1 << 31;
    qrwlock::loom_model_with_spurious_wakeups_too(|| {
        let word = Arc::new(AtomicU32::new(1));
        let waker = {
            let word = word.clone();
            thread::spawn(move || {
                let previous = word.fetch_sub(1, Release);
                wake_sleepers(&word, previous, SLEEPER);
            })
        };
        let seen = cond_load_acquire(&word, SLEEPER, |v| v == 0);
        assert_eq!(seen & !SLEEPER, 0);
        waker.join().unwrap();
    });
}

/// Three readers queue behind a writer that holds the lock. The front admits
/// the others one by one, and may find one of them not yet linked to the next:
/// it then waits for `LINKED` on that reader's node, whose owner waits on the
/// same word for its admission (the two-waiters path). Every reader must be
/// admitted and see the writer's value, and the lock must end empty.
///
/// The link's wake must reach both sleepers: made a wake of one, this model
/// deadlocks at `LOOM_MAX_PREEMPTIONS=3` (about 5 minutes, so CI runs it at 2,
/// where it takes about 4 s and that mutant passes).
#[test]
fn three_readers_queued_behind_a_writer_are_admitted() {
    // Without the spurious-wake-up run: it would add about 50 s.
    loom::model(|| readers_queued_behind_a_writer(3));
}

/// A try-reader whose first look misses the waiting bit adds its bias after
/// the writer at the front went to sleep, and the last reader inside leaves
/// while that bias is still counted, so its unlock does not wake the writer.
/// The try-reader's undo is then what leaves the count at zero: it must wake
/// the writer, or the writer sleeps for good.
#[test]
fn a_failed_try_read_wakes_the_writer_its_bias_held_up() {
    qrwlock::loom_model_with_spurious_wakeups_too(|| {
        let locked = Locked::new();
        locked.lock.read_lock();
        let writer = {
            let locked = locked.clone();
            thread::spawn(move || locked.add(1))
        };
        let try_reader = {
            let locked = locked.clone();
            thread::spawn(move || {
                if locked.lock.try_read_lock() {
                    // SAFETY: taken just above.
                    unsafe { locked.lock.read_unlock() };
                }
            })
        };
        // SAFETY: taken above.
        unsafe { locked.lock.read_unlock() };
        try_reader.join().unwrap();
        writer.join().unwrap();
        assert_eq!(locked.value_after_join(), 1);
        locked.assert_back_to_fresh();
    });
}

/// A try-reader that gets in after a writer left must see the writer's
/// value: its add is an acquire, like the fast path's.
#[test]
fn a_try_reader_sees_the_last_writers_value() {
    qrwlock::loom_model_with_spurious_wakeups_too(|| {
        let locked = Locked::new();
        let writer = {
            let locked = locked.clone();
            thread::spawn(move || locked.add(1))
        };
        let seen = loop {
            if locked.lock.try_read_lock() {
                // SAFETY: read-locked.
                let v = locked.value.with(|v| unsafe { *v });
                // SAFETY: we hold it shared.
                unsafe { locked.lock.read_unlock() };
                break v;
            }
            thread::yield_now();
        };
        writer.join().unwrap();
        assert!(seen == 0 || seen == 1, "try-reader saw {seen}");
        locked.assert_back_to_fresh();
    });
}

/// A try-writer that gets in after a reader left must not overlap the
/// reader's read: its CAS is an acquire, like the fast path's.
#[test]
fn a_try_writer_follows_the_last_readers_read() {
    qrwlock::loom_model_with_spurious_wakeups_too(|| {
        let locked = Locked::new();
        let reader = {
            let locked = locked.clone();
            thread::spawn(move || locked.read())
        };
        while !locked.lock.try_write_lock() {
            thread::yield_now();
        }
        // SAFETY: write-locked.
        locked.value.with_mut(|v| unsafe { *v = 1 });
        // SAFETY: we hold it exclusively.
        unsafe { locked.lock.write_unlock() };
        let seen = reader.join().unwrap();
        assert!(seen == 0 || seen == 1, "reader saw {seen}");
        locked.assert_back_to_fresh();
    });
}

/// Two waiters asleep on one word: the RMW that satisfies both must wake
/// both (`wake_sleepers` wakes every sleeper, not one).
#[test]
fn wake_sleepers_wakes_every_sleeper() {
    const SLEEPER: u32 = 1 << 31;
    qrwlock::loom_model_with_spurious_wakeups_too(|| {
        let word = Arc::new(AtomicU32::new(0));
        let waiters: Vec<_> = (0..2)
            .map(|_| {
                let word = word.clone();
                thread::spawn(move || cond_load_acquire(&word, SLEEPER, |v| v == 1))
            })
            .collect();
        let previous = word.fetch_add(1, Release);
        wake_sleepers(&word, previous, SLEEPER);
        for w in waiters {
            assert_eq!(w.join().unwrap() & !SLEEPER, 1);
        }
    });
}

/// `cond_load_acquire` is an acquire: what the waker wrote before its
/// Release RMW is visible to the waiter it satisfied.
#[test]
fn cond_load_acquire_sees_what_the_waker_wrote() {
    const SLEEPER: u32 = 1 << 31;
    qrwlock::loom_model_with_spurious_wakeups_too(|| {
        let word = Arc::new(AtomicU32::new(0));
        let data = Arc::new(UnsafeCell::new(0u32));
        let waker = {
            let (word, data) = (word.clone(), data.clone());
            thread::spawn(move || {
                // SAFETY: the waiter reads it only after the RMW below.
                data.with_mut(|d| unsafe { *d = 7 });
                let previous = word.fetch_add(1, Release);
                wake_sleepers(&word, previous, SLEEPER);
            })
        };
        cond_load_acquire(&word, SLEEPER, |v| v == 1);
        // SAFETY: written before the RMW the wait saw.
        assert_eq!(data.with(|d| unsafe { *d }), 7);
        waker.join().unwrap();
    });
}

/// Two waiters on one word wait for different values. The one whose value
/// comes must get out even if the other has set the sleeper bit again by
/// then: the condition is tested with the sleeper bit masked off.
#[test]
fn cond_load_masks_a_sleeper_bit_another_waiter_set() {
    const SLEEPER: u32 = 1 << 31;
    qrwlock::loom_model_with_spurious_wakeups_too(|| {
        let word = Arc::new(AtomicU32::new(0));
        let waiters: Vec<_> = [1, 2]
            .into_iter()
            .map(|target| {
                let word = word.clone();
                thread::spawn(move || cond_load_acquire(&word, SLEEPER, move |v| v == target))
            })
            .collect();
        let mut waiters = waiters.into_iter();
        let (first, second) = (waiters.next().unwrap(), waiters.next().unwrap());
        let previous = word.fetch_add(1, Release);
        wake_sleepers(&word, previous, SLEEPER);
        assert_eq!(first.join().unwrap() & !SLEEPER, 1);
        let previous = word.fetch_add(1, Release);
        wake_sleepers(&word, previous, SLEEPER);
        assert_eq!(second.join().unwrap() & !SLEEPER, 2);
    });
}

/// The front reader counts each reader it admits in before it grants it: an
/// admitted reader may leave at once, and if its unlock took the front's own
/// count, a writer's fast-path CAS from zero would succeed beside the front.
#[test]
fn an_admitted_reader_is_counted_in_before_it_enters() {
    qrwlock::loom_model_with_spurious_wakeups_too(|| {
        let locked = Locked::new();
        locked.lock.write_lock();
        let readers: Vec<_> = (0..2)
            .map(|_| {
                let locked = locked.clone();
                thread::spawn(move || locked.read())
            })
            .collect();
        // SAFETY: write-locked above.
        unsafe { locked.lock.write_unlock() };
        locked.add(1);
        for r in readers {
            let seen = r.join().unwrap();
            assert!(seen <= 1, "reader saw {seen}");
        }
        assert_eq!(locked.value_after_join(), 1);
        locked.assert_back_to_fresh();
    });
}
