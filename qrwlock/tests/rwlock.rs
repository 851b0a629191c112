//! The public API on real threads: `lock_api` guards (the raw layer's misuse
//! panics are in `misuse.rs`), FIFO behaviour behind a waiting writer, `cond_load_acquire`
//! and `cond_load_relaxed` with a real futex, and a stress run with more threads than this
//! machine's cores.
#![cfg(not(loom))]

use qrwlock::{
    MappedRwLockReadGuard, MappedRwLockWriteGuard, ReadRecursive, RwLock, RwLockReadGuard,
    RwLockWriteGuard, cond_load_acquire, cond_load_relaxed, wake_sleepers,
};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering::*};
use std::sync::{Arc, Barrier};
use std::time::Duration;

#[test]
fn guards_share_and_exclude() {
    test_support::within_a_deadline(
        "guards_share_and_exclude (a try_read or try_write that waited)",
        Duration::from_secs(10),
        || {
            let lock = RwLock::new(5);
            {
                let a = lock.read();
                let b = lock.try_read().expect("readers share");
                assert_eq!(*a + *b, 10);
                assert!(lock.try_write().is_none());
                assert!(lock.is_locked() && !lock.is_locked_exclusive());
            }
            {
                let mut w = lock.try_write().expect("free");
                *w += 1;
                assert!(lock.try_read().is_none());
                assert!(lock.try_write().is_none());
                assert!(lock.is_locked_exclusive());
            }
            assert!(!lock.is_locked());
            assert_eq!(lock.into_inner(), 6);
        },
    );
}

#[test]
fn downgrade_keeps_writers_out_and_lets_readers_in() {
    let lock = RwLock::new(0);
    let mut w = lock.write();
    *w = 7;
    let r = RwLockWriteGuard::downgrade(w);
    assert_eq!(*r, 7);
    assert!(lock.try_write().is_none());
    assert_eq!(*lock.try_read().expect("shared now"), 7);
    drop(r);
    assert!(lock.try_write().is_some());
}

/// A writer queued at the front while the lock is write-held must not get in
/// between the exclusive hold and the shared one `downgrade` turns it into:
/// the downgraded guard still sees the value written under the write guard.
#[test]
fn downgrade_keeps_a_queued_writer_out() {
    test_support::within_a_deadline(
        "downgrade_keeps_a_queued_writer_out (the queued writer or the downgraded reader never got in)",
        Duration::from_secs(10),
        || {
            let lock = Arc::new(RwLock::new(0u32));
            let mut w = lock.write();
            *w = 1;
            let writer = spawn_waiting_writer(&lock, 2);
            let r = RwLockWriteGuard::downgrade(w);
            assert_eq!(*r, 1, "the queued writer entered during the downgrade");
            drop(r);
            writer.join().unwrap();
            assert_eq!(*lock.read(), 2);
        },
    );
}

/// With the `send_guard` feature guards are `Send` (an unlock does not
/// depend on the thread that locked): a write guard, then read guards, taken
/// here are dropped on another thread, and the lock is free afterwards.
/// (Without the feature this does not compile, which the crate docs'
/// `compile_fail` example checks; `scripts/test.sh` runs this file with it.)
#[cfg(feature = "send_guard")]
#[test]
fn guards_are_send_and_unlock_on_another_thread() {
    fn assert_send<T: Send>(_: &T) {}
    let lock = RwLock::new(0u32);
    let mut w = lock.write();
    assert_send(&w);
    *w = 1;
    std::thread::scope(|s| s.spawn(move || drop(w)).join().unwrap());
    assert!(
        !lock.is_locked(),
        "the write guard dropped elsewhere left it locked"
    );
    let (a, b) = (lock.read(), lock.read());
    assert_send(&a);
    let seen = std::thread::scope(|s| {
        s.spawn(move || {
            let seen = *a + *b;
            drop((a, b));
            seen
        })
        .join()
        .unwrap()
    });
    assert_eq!(seen, 2);
    assert!(
        !lock.is_locked(),
        "the read guards dropped elsewhere left it locked"
    );
    let downgraded = RwLockWriteGuard::downgrade(lock.write());
    std::thread::scope(|s| s.spawn(move || drop(downgraded)).join().unwrap());
    assert!(lock.try_write().is_some(), "the lock is free");
}

#[test]
fn static_lock_from_const_init() {
    static LOCK: RwLock<u32> = RwLock::new(1);
    *LOCK.write() += 1;
    assert_eq!(*LOCK.read(), 2);
}

/// The mapped guards parking_lot users name, under the same names: a
/// mapped hold keeps the lock held as the guard it came from did.
#[test]
fn mapped_guards_hold_the_lock() {
    let lock = RwLock::new((1u32, [2u32; 3]));
    let read: MappedRwLockReadGuard<'_, [u32; 3]> = RwLockReadGuard::map(lock.read(), |v| &v.1);
    assert_eq!(*read, [2; 3]);
    assert!(
        lock.try_write().is_none(),
        "a mapped read hold excludes writers"
    );
    drop(read);
    let mut write: MappedRwLockWriteGuard<'_, u32> =
        RwLockWriteGuard::map(lock.write(), |v| &mut v.0);
    *write += 1;
    assert!(
        lock.try_read().is_none(),
        "a mapped write hold excludes readers"
    );
    drop(write);
    assert_eq!(lock.read().0, 2);
    // The lock_api traits through the re-export, with no dependency of the
    // test's own.
    use qrwlock::lock_api::RawRwLock;
    let _hold = lock.read();
    // SAFETY: only reads the lock's state; the raw lock is not unlocked.
    let raw = unsafe { lock.raw() };
    assert!(RawRwLock::is_locked(raw) && !RawRwLock::is_locked_exclusive(raw));
}

/// `arc_lock`: guards that own the lock's `Arc`, as parking_lot's.
#[cfg(feature = "arc_lock")]
#[test]
fn arc_guards_own_the_lock() {
    use qrwlock::{ArcRwLockReadGuard, ArcRwLockWriteGuard};
    let lock = Arc::new(RwLock::new(5u32));
    let mut write: ArcRwLockWriteGuard<u32> = lock.write_arc();
    *write += 1;
    assert!(
        lock.try_read().is_none(),
        "the owned write hold excludes readers"
    );
    // The guard outlives the caller's `Arc`.
    let weak = Arc::downgrade(&lock);
    drop(lock);
    let read: ArcRwLockReadGuard<u32> = ArcRwLockWriteGuard::downgrade(write);
    assert_eq!(*read, 6);
    assert!(weak.upgrade().is_some(), "the guard keeps the lock alive");
    // With `send_guard`, an owned guard may also be dropped on another
    // thread (without it, it is not `Send`, as the crate docs check).
    #[cfg(feature = "send_guard")]
    std::thread::spawn(move || drop(read)).join().unwrap();
    #[cfg(not(feature = "send_guard"))]
    drop(read);
    assert!(weak.upgrade().is_none(), "the last guard frees it");
}

/// `arc_lock`: the recursive read lock with an owned guard enters past a
/// queued writer, as `read_recursive` does, and `try_read_recursive_arc`
/// is refused only while a writer holds the lock. The guards keep the lock
/// alive.
#[cfg(feature = "arc_lock")]
#[test]
fn recursive_arc_guards_enter_past_a_waiting_writer() {
    test_support::within_a_deadline(
        "recursive_arc_guards_enter_past_a_waiting_writer (a recursive reader or the writer never got in)",
        Duration::from_secs(10),
        || {
            use qrwlock::{ArcRwLockReadGuard, ReadRecursive};
            let lock = Arc::new(RwLock::new(7u32));
            let outer = lock.read_arc();
            let writer = spawn_waiting_writer(&lock, 8);
            assert!(
                lock.try_read().is_none(),
                "a plain reader waits behind the writer"
            );
            let inner: ArcRwLockReadGuard<u32> = lock.read_recursive_arc();
            let tried = lock
                .try_read_recursive_arc()
                .expect("only a reader holds the lock");
            assert_eq!(*outer + *inner + *tried, 21);
            drop((outer, inner, tried));
            writer.join().unwrap();
            assert_eq!(
                *lock.read_recursive_arc(),
                8,
                "the writer ran after the readers left"
            );
            let held = lock.write_arc();
            assert!(
                lock.try_read_recursive_arc().is_none(),
                "a writer inside keeps recursive readers out"
            );
            drop(held);
            let weak = Arc::downgrade(&lock);
            let owned = lock.try_read_recursive_arc().expect("the lock is free");
            drop(lock);
            assert_eq!(*owned, 8);
            assert!(weak.upgrade().is_some(), "the guard keeps the lock alive");
            drop(owned);
            assert!(weak.upgrade().is_none(), "the last guard frees it");
        },
    );
}

/// Readers that arrive after a writer started waiting enter after it, even
/// though the lock is only read-locked when they arrive.
#[test]
fn readers_queue_behind_a_waiting_writer() {
    test_support::within_a_deadline(
        "readers_queue_behind_a_waiting_writer (the writer or a reader never got in)",
        Duration::from_secs(10),
        || {
            let lock = Arc::new(RwLock::new(0u32));
            let first = lock.read();
            let writer = spawn_waiting_writer(&lock, 1);
            assert!(
                lock.try_read().is_none(),
                "try_read passed a waiting writer"
            );
            assert!(
                lock.is_locked() && !lock.is_locked_exclusive(),
                "a reader holds the lock; the writer only waits"
            );
            let readers: Vec<_> = (0..3)
                .map(|_| {
                    let lock = lock.clone();
                    std::thread::spawn(move || *lock.read())
                })
                .collect();
            std::thread::sleep(Duration::from_millis(20));
            drop(first);
            for r in readers {
                assert_eq!(
                    r.join().unwrap(),
                    1,
                    "a late reader entered before the writer"
                );
            }
            writer.join().unwrap();
        },
    );
}

/// A thread that holds a read lock takes another with `read_recursive` while
/// a writer waits for the first: the writer waits at the front for the
/// holds inside, so a plain `read` would queue behind it for good. The
/// nested hold enters at once, the writer after both are given up, and a
/// late plain reader after the writer.
#[test]
fn a_recursive_read_enters_past_a_waiting_writer() {
    test_support::within_a_deadline(
        "a_recursive_read_enters_past_a_waiting_writer (the recursive read queued behind \
         the writer that waits for its own thread's hold)",
        Duration::from_secs(10),
        || {
            let lock = Arc::new(RwLock::new(0u32));
            let outer = lock.read();
            let writer = spawn_waiting_writer(&lock, 1);
            assert!(
                lock.try_read().is_none(),
                "try_read passed a waiting writer"
            );
            let inner = lock.read_recursive();
            let tried = lock
                .try_read_recursive()
                .expect("try_read_recursive refused with no writer inside");
            assert_eq!(
                *outer + *inner + *tried,
                0,
                "a reader overlapped the writer"
            );
            assert!(writer_waiting(&lock), "the writer stopped waiting");
            let late = {
                let lock = lock.clone();
                std::thread::spawn(move || *lock.read())
            };
            drop((outer, inner));
            std::thread::sleep(Duration::from_millis(20));
            assert!(!writer.is_finished(), "the writer entered past a read hold");
            drop(tried);
            writer.join().unwrap();
            assert_eq!(
                late.join().unwrap(),
                1,
                "a late reader entered before the writer"
            );
        },
    );
}

/// A recursive reader that finds a writer inside waits for it (queueing, as
/// the calling thread holds no read lock then), and sees its write.
#[test]
fn a_recursive_read_waits_for_the_writer_inside() {
    test_support::within_a_deadline(
        "a_recursive_read_waits_for_the_writer_inside (the reader was never woken)",
        Duration::from_secs(10),
        || {
            let lock = Arc::new(RwLock::new(0u32));
            let mut w = lock.write();
            assert!(
                lock.try_read_recursive().is_none(),
                "try_read_recursive entered past a writer inside"
            );
            let reader = {
                let lock = lock.clone();
                std::thread::spawn(move || *lock.read_recursive())
            };
            std::thread::sleep(Duration::from_millis(20));
            assert!(
                !reader.is_finished(),
                "a recursive read entered past a writer inside"
            );
            *w = 7;
            drop(w);
            assert_eq!(reader.join().unwrap(), 7);
            assert!(!lock.is_locked());
        },
    );
}

/// A thread spawned by [`spawn_named`], and whether it has reached the lock.
struct Named<R> {
    name: &'static str,
    handle: std::thread::JoinHandle<R>,
    /// Set right before `body` takes the lock: from then on the thread
    /// allocates nothing and blocks on nothing but the lock.
    at_the_lock: Arc<AtomicBool>,
}

/// Spawns a thread named `name` (see `test_support::thread_states`) that
/// runs `body` on the lock.
fn spawn_named<T: Send + Sync + 'static, R: Send + 'static>(
    name: &'static str,
    lock: &Arc<RwLock<T>>,
    body: impl FnOnce(&RwLock<T>) -> R + Send + 'static,
) -> Named<R> {
    let lock = lock.clone();
    let at_the_lock = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&at_the_lock);
    let handle = std::thread::Builder::new()
        .name(name.into())
        .spawn(move || {
            flag.store(true, SeqCst);
            body(&lock)
        })
        .expect("spawn");
    Named {
        name,
        handle,
        at_the_lock,
    }
}

/// Returns once the thread is asleep in the lock: queued and waiting. (Seen
/// asleep before it reached the lock, it could be waiting on something else
/// of its start, such as an allocator lock.)
fn until_queued<R>(thread: &Named<R>) {
    while !thread.at_the_lock.load(SeqCst) {
        std::thread::sleep(Duration::from_millis(1));
    }
    test_support::until_asleep(
        thread.name,
        3,
        Duration::from_secs(5),
        "a thread that should queue",
    );
}

/// The queue is FIFO (the crate docs' *Fairness*): while a read lock is
/// held, writer W1 queues and waits at the front (the waiting bit set), then
/// writer W2 queues behind it (asleep); once the read lock goes, W1 enters
/// before W2. Each writer appends its name to the protected log, so the log
/// is the order in which they entered.
#[test]
#[cfg_attr(miri, ignore = "reads /proc, which miri does not offer")]
fn queued_writers_enter_in_arrival_order() {
    test_support::within_a_deadline(
        "queued_writers_enter_in_arrival_order (a queued writer, never woken)",
        Duration::from_secs(40),
        || {
            let lock = Arc::new(RwLock::new(Vec::new()));
            let held = lock.read();
            let w1 = spawn_named("qrw-fifo-w1", &lock, |lock| lock.write().push("W1"));
            while !writer_waiting(&lock) {
                std::thread::sleep(Duration::from_millis(1));
            }
            let w2 = spawn_named("qrw-fifo-w2", &lock, |lock| lock.write().push("W2"));
            until_queued(&w2);
            assert!(held.is_empty(), "a writer entered past the read hold");
            drop(held);
            w1.handle.join().unwrap();
            w2.handle.join().unwrap();
            assert_eq!(
                *lock.read(),
                ["W1", "W2"],
                "the writers entered out of arrival order"
            );
        },
    );
}

/// FIFO with readers and a writer queued behind a writer inside: R1, R2, W,
/// R3 queue in that order (each asleep before the next comes). R1 and R2
/// enter before W and see the value the first writer left; R3, queued after
/// W, enters after it and sees W's value, though R1 and R2 entered together
/// (a front reader admits the readers directly behind it, up to the first
/// writer, not past it). R1 and R2 meet at a barrier while they hold the
/// lock, so entering one after the other fails the deadline.
#[test]
#[cfg_attr(miri, ignore = "reads /proc, which miri does not offer")]
fn queued_readers_and_writers_enter_in_arrival_order() {
    test_support::within_a_deadline(
        "queued_readers_and_writers_enter_in_arrival_order (a queued thread, never woken)",
        Duration::from_secs(40),
        || {
            let lock = Arc::new(RwLock::new(0u32));
            let mut held = lock.write();
            let together = Arc::new(std::sync::Barrier::new(2));
            let meet = |together: Arc<std::sync::Barrier>| {
                move |lock: &RwLock<u32>| {
                    let read = lock.read();
                    together.wait();
                    *read
                }
            };
            let r1 = spawn_named("qrw-rrwr-r1", &lock, meet(together.clone()));
            until_queued(&r1);
            let r2 = spawn_named("qrw-rrwr-r2", &lock, meet(together));
            until_queued(&r2);
            let w = spawn_named("qrw-rrwr-w", &lock, |lock| *lock.write() = 2);
            until_queued(&w);
            let r3 = spawn_named("qrw-rrwr-r3", &lock, |lock| *lock.read());
            until_queued(&r3);
            *held = 1;
            drop(held);
            assert_eq!(
                [
                    r1.handle.join().unwrap(),
                    r2.handle.join().unwrap(),
                    r3.handle.join().unwrap(),
                ],
                [1, 1, 2],
                "what R1, R2 and R3 saw: each must enter in its turn around W"
            );
            w.handle.join().unwrap();
        },
    );
}

/// Threads queued behind the front sleep on their own queue nodes, and each
/// is woken when the thread ahead hands it the queue or admits it. The
/// pauses let each queue in turn and fall asleep there (if one has not, the
/// test only checks less).
#[test]
fn queued_threads_asleep_on_their_nodes_are_woken() {
    test_support::within_a_deadline(
        "queued_threads_asleep_on_their_nodes_are_woken (a queued thread, never woken)",
        Duration::from_secs(10),
        || {
            let lock = Arc::new(RwLock::new(0u32));
            let w = lock.write();
            let threads: Vec<_> = [false, false, true, false]
                .into_iter()
                .map(|writes| {
                    let lock = lock.clone();
                    let thread = std::thread::spawn(move || {
                        if writes {
                            *lock.write() += 1;
                        } else {
                            let _ = *lock.read();
                        }
                    });
                    std::thread::sleep(Duration::from_millis(20));
                    thread
                })
                .collect();
            drop(w);
            for t in threads {
                t.join().unwrap();
            }
            assert_eq!(*lock.read(), 1);
        },
    );
}

/// Spawns a writer that stores `value`, and returns once it waits at the
/// front of the queue (the caller holds the lock, so it cannot enter yet).
fn spawn_waiting_writer(lock: &Arc<RwLock<u32>>, value: u32) -> std::thread::JoinHandle<()> {
    let writer = {
        let lock = lock.clone();
        std::thread::spawn(move || *lock.write() = value)
    };
    while !writer_waiting(lock) {
        std::thread::sleep(Duration::from_millis(1));
    }
    writer
}

fn writer_waiting<T: ?Sized>(lock: &RwLock<T>) -> bool {
    // SAFETY: `raw()` is unsafe only because the raw lock could be unlocked
    // through it; this only inspects it.
    unsafe { lock.raw() }.is_writer_waiting()
}

/// `cond_load_acquire` on a real futex: the waiter spins, sets the sleeper
/// bit, sleeps, and the RMW that satisfies it wakes it; the acquire makes the
/// data written before that RMW visible.
#[test]
fn cond_load_acquire_sleeps_and_is_woken() {
    test_support::within_a_deadline(
        "cond_load_acquire_sleeps_and_is_woken (the waiter asleep on the word, never woken)",
        Duration::from_secs(10),
        || {
            const SLEEPER: u32 = 1 << 31;
            let word = Arc::new(AtomicU32::new(0));
            let data = Arc::new(AtomicU32::new(0));
            let waiter = {
                let (word, data) = (word.clone(), data.clone());
                std::thread::spawn(move || {
                    let seen = cond_load_acquire(&word, SLEEPER, |v| v == 1);
                    (seen & !SLEEPER, data.load(Relaxed))
                })
            };
            while word.load(Relaxed) & SLEEPER == 0 {
                std::thread::sleep(Duration::from_millis(1));
            }
            data.store(42, Relaxed);
            let previous = word.fetch_add(1, Release);
            assert_ne!(previous & SLEEPER, 0);
            wake_sleepers(&word, previous, SLEEPER);
            assert_eq!(waiter.join().unwrap(), (1, 42));
            assert_eq!(word.load(Relaxed), 1, "the waker cleared the sleeper bit");
        },
    );
}

/// `cond_load_relaxed` on a real futex: the waiter spins, sets the sleeper
/// bit and sleeps; an RMW that does not satisfy it wakes it, and it rechecks,
/// sets the bit again and sleeps again; the RMW that satisfies it wakes it
/// for good, and it returns that value.
#[test]
fn cond_load_relaxed_sleeps_rechecks_and_is_woken() {
    test_support::within_a_deadline(
        "cond_load_relaxed_sleeps_rechecks_and_is_woken (the waiter asleep on the word, never woken)",
        Duration::from_secs(10),
        || {
            const SLEEPER: u32 = 1 << 31;
            let word = Arc::new(AtomicU32::new(0));
            let waiter = {
                let word = word.clone();
                std::thread::spawn(move || cond_load_relaxed(&word, SLEEPER, |v| v == 2) & !SLEEPER)
            };
            for _ in 0..2 {
                while word.load(Relaxed) & SLEEPER == 0 {
                    assert!(
                        !waiter.is_finished(),
                        "the waiter returned before the word was 2"
                    );
                    std::thread::sleep(Duration::from_millis(1));
                }
                let previous = word.fetch_add(1, Relaxed);
                assert_ne!(previous & SLEEPER, 0);
                wake_sleepers(&word, previous, SLEEPER);
            }
            assert_eq!(waiter.join().unwrap(), 2);
            assert_eq!(word.load(Relaxed), 2, "the waker cleared the sleeper bit");
        },
    );
}

/// Two threads wait on one word and one RMW satisfies both: `wake_sleepers`
/// must wake both. The pause lets both fall asleep first (the second sleeps
/// on the bit the first set); if one has not, the test only checks less.
#[test]
fn wake_sleepers_wakes_every_sleeper() {
    test_support::within_a_deadline(
        "wake_sleepers_wakes_every_sleeper (a waiter asleep on the word, never woken)",
        Duration::from_secs(10),
        || {
            const SLEEPER: u32 = 1 << 31;
            let word = Arc::new(AtomicU32::new(0));
            let waiters: Vec<_> = (0..2)
                .map(|_| {
                    let word = word.clone();
                    std::thread::spawn(move || cond_load_acquire(&word, SLEEPER, |v| v == 1))
                })
                .collect();
            while word.load(Relaxed) & SLEEPER == 0 {
                std::thread::sleep(Duration::from_millis(1));
            }
            std::thread::sleep(Duration::from_millis(50));
            let previous = word.fetch_add(1, Release);
            wake_sleepers(&word, previous, SLEEPER);
            for w in waiters {
                assert_eq!(w.join().unwrap() & !SLEEPER, 1);
            }
        },
    );
}

/// Many more threads than cores, mixing every operation: the protected pair
/// must never be seen torn, and every thread must finish (a nested read that
/// queued behind a waiting writer would not).
#[test]
fn oversubscribed_stress_keeps_exclusion() {
    test_support::within_a_deadline(
        "oversubscribed_stress_keeps_exclusion (a thread that never got the lock)",
        Duration::from_secs(60),
        || {
            const THREADS: usize = 12;
            // Fewer rounds under miri (a minute for 2,000); still oversubscribed.
            const ROUNDS: usize = if cfg!(miri) { 200 } else { 2_000 };
            let lock = Arc::new(RwLock::new((0u64, 0u64)));
            let torn = Arc::new(AtomicBool::new(false));
            let writes = Arc::new(AtomicUsize::new(0));
            let start = Arc::new(Barrier::new(THREADS));
            let threads: Vec<_> = (0..THREADS)
                .map(|t| {
                    let (lock, torn, writes, start) =
                        (lock.clone(), torn.clone(), writes.clone(), start.clone());
                    std::thread::spawn(move || {
                        start.wait();
                        for i in 0..ROUNDS {
                            match (t + i) % 7 {
                                0 => {
                                    let mut w = lock.write();
                                    w.0 += 1;
                                    std::hint::spin_loop();
                                    w.1 += 1;
                                    writes.fetch_add(1, Relaxed);
                                }
                                1 => {
                                    if let Some(mut w) = lock.try_write() {
                                        w.0 += 1;
                                        w.1 += 1;
                                        writes.fetch_add(1, Relaxed);
                                    }
                                }
                                2 => {
                                    let mut w = lock.write();
                                    w.0 += 1;
                                    w.1 += 1;
                                    writes.fetch_add(1, Relaxed);
                                    let r = RwLockWriteGuard::downgrade(w);
                                    if r.0 != r.1 {
                                        torn.store(true, Relaxed);
                                    }
                                }
                                3 => {
                                    if let Some(r) = lock.try_read()
                                        && r.0 != r.1
                                    {
                                        torn.store(true, Relaxed);
                                    }
                                }
                                4 => {
                                    // A nested read: a plain `read` here would
                                    // wait behind a writer queued between the
                                    // two, and that writer for `outer`.
                                    let outer = lock.read();
                                    let inner = lock.read_recursive();
                                    if outer.0 != outer.1 || *inner != *outer {
                                        torn.store(true, Relaxed);
                                    }
                                }
                                5 => {
                                    if let Some(r) = lock.try_read_recursive()
                                        && r.0 != r.1
                                    {
                                        torn.store(true, Relaxed);
                                    }
                                }
                                _ => {
                                    let r = lock.read();
                                    if r.0 != r.1 {
                                        torn.store(true, Relaxed);
                                    }
                                }
                            }
                        }
                    })
                })
                .collect();
            for t in threads {
                t.join().unwrap();
            }
            assert!(!torn.load(Relaxed), "a reader saw a half-done write");
            let (a, b) = *lock.read();
            assert_eq!(
                (a, b),
                (writes.load(Relaxed) as u64, writes.load(Relaxed) as u64)
            );
        },
    );
}

/// `RawQRwLock::default()` is an unlocked lock, as `RawQRwLock::INIT`.
#[test]
fn a_default_raw_lock_is_unlocked() {
    use lock_api::RawRwLock;
    let raw = qrwlock::RawQRwLock::default();
    assert!(!RawRwLock::is_locked(&raw));
    let held = RawRwLock::try_lock_exclusive(&raw).expect("a default lock is free");
    // SAFETY: held exclusively by this thread, with this token.
    unsafe { RawRwLock::unlock_exclusive(&raw, held) };
    let held = RawRwLock::try_lock_shared(&raw).expect("free again");
    // SAFETY: held shared by this thread, with this token.
    unsafe { RawRwLock::unlock_shared(&raw, held) };
}
