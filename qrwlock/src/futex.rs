//! Sleeping on a 32-bit word: the slow half of every wait in this crate.
//!
//! [`wait`] blocks while `*word == expected` (the check and the sleep are one
//! step, so a wake that follows a change of the word cannot be missed); the
//! wake functions wake every thread sleeping on a word. Spurious returns are
//! allowed: every caller re-reads the word and decides again.
//!
//! Two wakes exist because of the MCS queue: a thread that hands the queue to
//! its successor flips the successor's node word, and from that instant the
//! successor may return and pop the node off its stack. [`wake_all`] takes a
//! reference, so it is only for words that outlive the call (the lock word);
//! [`wake_all_at`] takes an address that may already be dangling. A private
//! `FUTEX_WAKE` never reads the memory at that address, it only hashes the
//! address: a stale wake is at worst a spurious wake of whoever waits there
//! now (the same argument as `parking_lot_core`'s Linux unpark).
//!
//! Both come from the workspace's `futex-word` crate: a private futex, or
//! under loom a model built from loom's `Mutex` and `Condvar`, in which a
//! lost wake-up is a deadlock that loom reports.

use crate::sync::AtomicU32;

/// Sleeps while `*word == expected`; may return spuriously.
#[inline]
pub(crate) fn wait(word: &AtomicU32, expected: u32) {
    futex_word::wait(word, expected, None)
}

/// Wakes every thread sleeping on `word`; and on the word at an address that
/// may no longer be allocated (see the module docs).
pub(crate) use futex_word::{wake_all, wake_all_at};
