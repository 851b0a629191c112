//! The wait queue: an MCS lock whose nodes live on the waiters' stacks.
//!
//! The kernel's qrwlock serializes its slow paths on `lock->wait_lock`, an
//! `arch_spinlock_t`. On x86, and on arm64 since 4.19, that is the queued
//! (MCS-based) spinlock, whose waiters beyond the first spin each on their
//! own per-CPU node; on arm64 at the time of the qrwlock series it was a
//! ticket lock, which every waiter polls. Here a real MCS queue is used on
//! every architecture. Threads stand in for CPUs and the node
//! is a local of the slow-path frame, aligned to its own 128-byte pair of cache
//! lines, so a waiter's spinning touches no line another waiter spins on.
//!
//! # Invariants
//!
//! - `tail` is null, or points at the node of the last thread to join. The
//!   thread whose node is at the front (it joined an empty queue, or was
//!   granted by its predecessor) *holds* the queue until [`WaitQueue::unlock`].
//! - A node is alive until its owner returns from `unlock` (an admitted
//!   reader's, until its owner returns from `lock`); the owner does not return
//!   while a successor may still link to it (an admitted reader's node: the
//!   front reads its `next` before the grant), and a predecessor (or the front)
//!   touches the node for the last time with the read-modify-write that grants
//!   it.
//! - `QNode::next` is null, a successor, or [`awaiting_link()`]: the holder
//!   found the tail moved but no link yet, and waits on its state word for
//!   [`LINKED`].
//!
//! # Admitting readers
//!
//! A reader at the front, once inside the lock, admits every reader queued
//! directly behind it ([`WaitQueue::unlock_admitting_readers`]): it counts each
//! one into the lock word for it (its caller's `admit`) and grants it
//! [`ADMITTED`] instead of the queue, up to the first writer, which gets the
//! queue. The kernel's readers pass the queue along one by one, each adding
//! its own bias; that costs nothing when every waiter spins on its own CPU,
//! but here each hop can be a futex wake-up and a trip through a runqueue, and
//! while the chain crawls, readers that never queued keep entering on the fast
//! path ahead of it (at 4 writers and 16 readers on 16 CPUs, queued readers
//! got as little as a third of the others' acquisitions). The front holds the
//! queue while it admits, so no writer can reach the front meanwhile, and a
//! reader's `next` is read before it is granted (after the grant its node may
//! be gone).
//!
//! # Waiting
//!
//! A waiter spins on `state` with the wait hint for a bounded time, then
//! sets [`SLEEPING`] and sleeps on the futex
//! ([`crate::wait`]'s protocol). Its predecessor grants with a swap, which
//! returns whether the bit was set, so a handoff to a spinning waiter costs no
//! system call. The wake goes through [`futex::wake_all_at`] because the
//! granted thread may pop its node off the stack before the wake is issued.

use crate::futex;
use crate::sync::{AtomicPtr, AtomicU32, Ordering};
use crate::wait;
use core::ptr;

/// `QNode::state` bit: the predecessor has handed over the queue.
const GRANTED: u32 = 1;
/// `QNode::state` bit: the successor has linked itself after an
/// [`awaiting_link()`] request.
const LINKED: u32 = 1 << 1;
/// `QNode::state` bit: the owner may be asleep on this word (the sleeper bit).
/// The thread at the front may also sleep on a reader's word, waiting for
/// [`LINKED`] while it admits readers; every change of the word is an RMW
/// that wakes all sleepers, so each re-checks its own condition.
const SLEEPING: u32 = 1 << 2;
/// `QNode::state` bit: the front has counted this reader into the lock and
/// admitted it; it does not hold the queue.
const ADMITTED: u32 = 1 << 3;

/// How a thread got out of [`WaitQueue::lock`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Entry {
    /// It holds the queue and must [`WaitQueue::unlock`] it.
    Front,
    /// A reader admitted by the front (see the module docs): already counted
    /// in the lock and inside; it does not hold the queue.
    Admitted,
}

/// Grants `next` the queue ([`GRANTED`]) or admission ([`ADMITTED`]), waking
/// it if it sleeps.
///
/// # Safety
///
/// `next` waits in [`WaitQueue::lock`] and has not been granted anything;
/// after this call it may be gone.
unsafe fn grant(next: *mut QNode, how: u32) {
    // SAFETY: per the contract, the node is alive until the swap below has
    // completed; after it we only use the address.
    let next_state = unsafe { &(*next).state };
    let next_state_at = ptr::from_ref(next_state);
    // Release: pairs with the Acquire in the successor's `lock` wait. The
    // swap also clears SLEEPING (and LINKED), which are no longer needed.
    let was = next_state.swap(how, Ordering::Release);
    if was & SLEEPING != 0 {
        futex::wake_all_at(next_state_at);
    }
}

/// `QNode::next` sentinel: the holder waits for its successor to link. Never a
/// node address (nodes are 128-byte aligned).
fn awaiting_link() -> *mut QNode {
    ptr::without_provenance_mut(1)
}

/// Spin budgets before sleeping, in nanoseconds (see `wait::budget`).
mod spin_ns {
    /// A queued waiter on its own node: it waits at least one whole turn of
    /// the thread ahead of it, so it spins only briefly.
    pub(super) const QUEUED: u32 = 5_000;
    /// The holder waiting for a successor that is between joining and linking
    /// (a few instructions, unless that thread was preempted there).
    pub(super) const LINK: u32 = 10_000;
}

/// One waiter's queue entry. Lives in the slow path's stack frame.
#[repr(align(128))]
pub(crate) struct QNode {
    /// [`GRANTED`] | [`ADMITTED`] | [`LINKED`] | [`SLEEPING`]; written by the
    /// owner (the sleeper bit), by its successor ([`LINKED`]), and by whoever
    /// grants it (its predecessor, or the front that admits it; the front may
    /// also set the sleeper bit, waiting here for [`LINKED`]).
    state: AtomicU32,
    /// The successor, null, or [`awaiting_link()`].
    next: AtomicPtr<QNode>,
    /// Whether the owner waits to write. Fixed before the node is published
    /// (by the tail swap); read by the front when it admits readers.
    writer: bool,
}

impl QNode {
    /// A node not yet in any queue, for a writer or a reader.
    pub(crate) fn new(writer: bool) -> Self {
        QNode {
            state: AtomicU32::new(0),
            next: AtomicPtr::new(ptr::null_mut()),
            writer,
        }
    }
}

/// An MCS queue lock.
pub(crate) struct WaitQueue {
    /// The last node to join, or null when nobody holds or waits.
    tail: AtomicPtr<QNode>,
}

impl WaitQueue {
    /// An empty queue.
    #[cfg(not(loom))]
    pub(crate) const fn new() -> Self {
        WaitQueue {
            tail: AtomicPtr::new(ptr::null_mut()),
        }
    }

    /// An empty queue.
    #[cfg(loom)]
    pub(crate) fn new() -> Self {
        WaitQueue {
            tail: AtomicPtr::new(ptr::null_mut()),
        }
    }

    /// Whether nobody holds or waits in the queue (a snapshot), for the
    /// loom models' final checks.
    #[cfg(loom)]
    pub(crate) fn is_empty(&self) -> bool {
        self.tail.load(Ordering::Relaxed).is_null()
    }

    /// Joins the queue with `node` and returns when `node` holds it (the
    /// user-space `arch_spin_lock(&lock->wait_lock)`), or when the front
    /// admitted it (readers only).
    ///
    /// `node` must be fresh ([`QNode::new`]) and must stay where it is until
    /// the matching [`WaitQueue::unlock`] returns, or until this returns
    /// [`Entry::Admitted`].
    #[inline]
    pub(crate) fn lock(&self, node: &QNode) -> Entry {
        let me = ptr::from_ref(node).cast_mut();
        // AcqRel: Release publishes the node's initial fields to whoever reads
        // the tail next; Acquire pairs with the Release CAS in `successor`
        // (via `unlock` or `unlock_admitting_readers`) of a holder that
        // emptied the queue, so our turn follows its.
        let prev = self.tail.swap(me, Ordering::AcqRel);
        if prev.is_null() {
            return Entry::Front;
        }
        // SAFETY: `prev` was the tail, so its owner is in the queue and cannot
        // return from `unlock` before it has seen our link: the tail is no
        // longer its node, so its CAS there fails and it waits for `next`
        // (directly, or via `awaiting_link()` + LINKED). If `prev` is a reader
        // the front admits, the front reads its `next` the same way before the
        // grant that lets its owner return from `lock`. The node stays alive
        // until then.
        let prev_next = unsafe { &(*prev).next };
        // Release: publishes our node to whoever follows the link: the
        // predecessor's owner in `successor` (from `unlock` or
        // `unlock_admitting_readers`) or its CAS in `wait_for_link`, both
        // Acquire; when the predecessor is a reader being admitted, that is
        // the front reader walking the queue.
        let old = prev_next.swap(me, Ordering::Release);
        if old == awaiting_link() {
            // The predecessor is waiting for this link on its state word.
            // SAFETY: it (or the front, admitting it) waits for LINKED in
            // `successor` before it grants anything, so the node is alive
            // until the RMW below, our last access (the wake takes an address).
            let prev_state = unsafe { &(*prev).state };
            let prev_state_at = ptr::from_ref(prev_state);
            // Release: pairs with the Acquire wait for LINKED in
            // `wait_for_link`, after which the predecessor reads `next`.
            let was = prev_state.fetch_or(LINKED, Ordering::Release);
            if was & SLEEPING != 0 {
                futex::wake_all_at(prev_state_at);
            }
        }
        // Acquire: pairs with the Release swap in `grant`, called by the
        // predecessor's `unlock` (or the front's `unlock_admitting_readers`),
        // so our turn follows its.
        let state = wait::cond_load_then_acquire(&node.state, SLEEPING, spin_ns::QUEUED, |s| {
            s & (GRANTED | ADMITTED) != 0
        });
        if state & ADMITTED != 0 {
            debug_assert!(!node.writer, "only readers are admitted");
            Entry::Admitted
        } else {
            Entry::Front
        }
    }

    /// Hands the queue to the next waiter, if any: the user-space
    /// `arch_spin_unlock(&lock->wait_lock)`.
    ///
    /// `node` must be the node that [`WaitQueue::lock`] returned holding.
    #[inline]
    pub(crate) fn unlock(&self, node: &QNode) {
        if let Some(next) = self.successor(node) {
            // SAFETY: a successor waits in `lock` until granted.
            unsafe { grant(next, GRANTED) };
        }
    }

    /// [`WaitQueue::unlock`] for a reader at the front that is inside the
    /// lock: every reader queued directly behind it is counted in by `admit`
    /// and admitted, and the first writer behind them gets the queue (see the
    /// module docs).
    ///
    /// `node` must be the node that [`WaitQueue::lock`] returned holding, and
    /// its owner must be inside the lock, so that no writer can enter while
    /// the admitted readers are counted.
    pub(crate) fn unlock_admitting_readers(&self, node: &QNode, mut admit: impl FnMut()) {
        let mine = ptr::from_ref(node);
        let mut current = mine;
        loop {
            // SAFETY: `current` is our node, or a reader we counted in but have
            // not granted yet: it waits in `lock`, so it is alive.
            let next = self.successor(unsafe { &*current });
            let reader_next = match next {
                // SAFETY: as in `unlock`; `writer` was fixed before the node
                // was published (the Acquire read of the link in `successor`).
                Some(n) if unsafe { !(*n).writer } => Some(n),
                _ => None,
            };
            if reader_next.is_some() {
                admit();
            }
            if current != mine {
                // SAFETY: a reader waiting in `lock`; its successor was read
                // above, so nothing touches the node after this grant.
                unsafe { grant(current.cast_mut(), ADMITTED) };
            }
            match (next, reader_next) {
                (Some(reader), Some(_)) => current = reader,
                (Some(writer), None) => {
                    // SAFETY: as in `unlock`.
                    unsafe { grant(writer, GRANTED) };
                    return;
                }
                (None, _) => return,
            }
        }
    }

    /// The node after `node`, or `None` if `node` was the last and the queue
    /// is now empty. `node` holds the queue, or is a reader the holder is
    /// about to admit.
    fn successor(&self, node: &QNode) -> Option<*mut QNode> {
        let me = ptr::from_ref(node).cast_mut();
        // Acquire: pairs with the successor's Release swap of our `next`, so
        // its node's fields are visible.
        let next = node.next.load(Ordering::Acquire);
        if !next.is_null() {
            return Some(next);
        }
        // Release: pairs with the AcqRel tail swap of the next thread to
        // join an empty queue.
        if self
            .tail
            .compare_exchange(me, ptr::null_mut(), Ordering::Release, Ordering::Relaxed)
            .is_ok()
        {
            return None;
        }
        Some(self.wait_for_link(node))
    }

    /// The tail has moved past `node` but the successor has not linked yet:
    /// wait for the link, sleeping if it takes long (the successor was
    /// preempted between its tail swap and its link). `node` is the holder's
    /// own, or a reader it is admitting (whose owner may sleep on the same
    /// word, waiting for its grant).
    #[cold]
    #[inline(never)]
    fn wait_for_link(&self, node: &QNode) -> *mut QNode {
        // Acquire on failure: the value read is the successor's link, and the
        // Acquire pairs with its Release swap of `next`. On success the value
        // read is the node's initial null, which no one released, so that
        // Acquire pairs with nothing; the link is then acquired by the wait
        // for LINKED below.
        match node.next.compare_exchange(
            ptr::null_mut(),
            awaiting_link(),
            Ordering::Acquire,
            Ordering::Acquire,
        ) {
            Err(next) => next,
            Ok(_) => {
                // Acquire: pairs with the Release fetch_or(LINKED) in the
                // successor's `lock`, which follows its swap of `next`.
                wait::cond_load_then_acquire(&node.state, SLEEPING, spin_ns::LINK, |s| {
                    s & LINKED != 0
                });
                node.next.load(Ordering::Relaxed)
            }
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::time::Duration;

    /// A holder whose successor has moved the tail but not linked yet asks
    /// for the link (`awaiting_link()`) and sleeps on its own node; the
    /// successor's link must set LINKED and wake it, and the holder then hands
    /// the queue to that successor. Real threads cannot stop a successor
    /// between its tail swap and its link, so the holder asks before the
    /// successor comes; the pause lets it fall asleep first (if it has not,
    /// the test only checks less).
    #[test]
    fn a_holder_waiting_for_its_successors_link_is_woken_by_it() {
        test_support::within_a_deadline(
            "a_holder_waiting_for_its_successors_link_is_woken_by_it (the holder asleep on its node, never woken)",
            Duration::from_secs(10),
            || {
                let queue = WaitQueue::new();
                let (a, b) = (QNode::new(true), QNode::new(true));
                assert_eq!(queue.lock(&a), Entry::Front);
                std::thread::scope(|s| {
                    let holder = s.spawn(|| {
                        let next = queue.wait_for_link(&a);
                        // Grants `b` whatever the wait returned, so that a
                        // wrong answer fails the assertion below instead of
                        // leaving the successor waiting.
                        // SAFETY: `b` lives until the scope ends, and is
                        // granted nothing else.
                        unsafe { grant(ptr::from_ref(&b).cast_mut(), GRANTED) };
                        next.addr()
                    });
                    while a.state.load(Ordering::Relaxed) & SLEEPING == 0 && !holder.is_finished() {
                        std::thread::sleep(Duration::from_millis(1));
                    }
                    std::thread::sleep(Duration::from_millis(50));
                    let successor = s.spawn(|| {
                        assert_eq!(queue.lock(&b), Entry::Front);
                        queue.unlock(&b);
                    });
                    assert_eq!(
                        holder.join().unwrap(),
                        ptr::from_ref(&b).addr(),
                        "the link the holder waited for is its successor's node"
                    );
                    successor.join().unwrap();
                });
                assert!(queue.tail.load(Ordering::Relaxed).is_null(), "queue empty");
            },
        );
    }

    /// A successor that links to a holder that did not ask for the link
    /// leaves the holder's node alone afterwards: the holder may have seen
    /// the link, handed the queue on and returned, popping the node off its
    /// stack, so any later write to it would be a use after free.
    #[test]
    fn a_successor_does_not_touch_a_holder_that_did_not_ask_for_the_link() {
        test_support::within_a_deadline(
            "a_successor_does_not_touch_a_holder_that_did_not_ask_for_the_link (the successor, never granted)",
            Duration::from_secs(10),
            || {
                let queue = WaitQueue::new();
                let (a, b) = (QNode::new(true), QNode::new(true));
                assert_eq!(queue.lock(&a), Entry::Front);
                let state = std::thread::scope(|s| {
                    let successor = s.spawn(|| {
                        assert_eq!(queue.lock(&b), Entry::Front);
                        queue.unlock(&b);
                    });
                    // Linked and asleep on its node. Seeing SLEEPING alone
                    // does not make the link visible here: the sleeper bit is
                    // set with a Relaxed CAS, so a Relaxed read of `a.next`
                    // after it may still return null (miri's weak-memory
                    // emulation does, and an assertion on it then failed
                    // inside the scope, leaving the successor waiting).
                    // Acquire: pairs with the successor's Release swap of
                    // `a.next`.
                    while a.next.load(Ordering::Acquire) != ptr::from_ref(&b).cast_mut()
                        || b.state.load(Ordering::Relaxed) & SLEEPING == 0
                    {
                        std::thread::sleep(Duration::from_millis(1));
                    }
                    let state = a.state.load(Ordering::Relaxed);
                    queue.unlock(&a);
                    successor.join().unwrap();
                    state
                });
                assert_eq!(
                    state, 0,
                    "the successor wrote to the holder's node after linking"
                );
                assert!(queue.tail.load(Ordering::Relaxed).is_null(), "queue empty");
            },
        );
    }

    /// A reader at the front admits the readers queued directly behind it,
    /// counting each in, and hands the queue to the first writer after them;
    /// a reader behind that writer waits for the writer's turn.
    #[test]
    fn a_front_reader_admits_the_readers_behind_it_up_to_the_first_writer() {
        test_support::within_a_deadline(
            "a_front_reader_admits_the_readers_behind_it_up_to_the_first_writer (a queued thread, never granted)",
            Duration::from_secs(10),
            || {
                let queue = WaitQueue::new();
                let front = QNode::new(false);
                let nodes = [false, false, true, false].map(QNode::new);
                assert_eq!(queue.lock(&front), Entry::Front);
                std::thread::scope(|s| {
                    let waiters: Vec<_> = nodes
                        .iter()
                        .map(|node| {
                            let waiter = s.spawn(|| {
                                let entry = queue.lock(node);
                                if entry == Entry::Front {
                                    queue.unlock(node);
                                }
                                entry
                            });
                            // Joined: the tail is its node (queued in order).
                            while queue.tail.load(Ordering::Relaxed).cast_const()
                                != ptr::from_ref(node)
                            {
                                std::thread::sleep(Duration::from_millis(1));
                            }
                            waiter
                        })
                        .collect();
                    let mut admitted = 0;
                    queue.unlock_admitting_readers(&front, || admitted += 1);
                    let entries: Vec<_> = waiters.into_iter().map(|w| w.join().unwrap()).collect();
                    assert_eq!(
                        entries,
                        [Entry::Admitted, Entry::Admitted, Entry::Front, Entry::Front],
                        "readers, writer, reader"
                    );
                    assert_eq!(admitted, 2, "each admitted reader counted in once");
                });
                assert!(queue.tail.load(Ordering::Relaxed).is_null(), "queue empty");
            },
        );
    }
}
