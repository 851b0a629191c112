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
//! Under loom there is no futex: the model is one loom `Mutex` and `Condvar`
//! for the whole process. [`wait`] checks the word under the mutex and waits
//! on the condvar; a wake takes the mutex and notifies everyone. That is the
//! futex's contract (the value check is atomic with respect to wakes issued
//! after the word changed), so a lost wake-up shows up in a model as a deadlock
//! that loom reports.

use crate::sync::AtomicU32;

#[cfg(not(loom))]
mod imp {
    use super::AtomicU32;
    use rustix::thread::futex;

    #[inline]
    pub(crate) fn wait(word: &AtomicU32, expected: u32) {
        // EAGAIN (the word changed), EINTR and spurious returns all mean
        // "look again", which every caller does.
        let _ = futex::wait(word, futex::Flags::PRIVATE, expected, None);
    }

    #[inline]
    pub(crate) fn wake_all(word: &AtomicU32) {
        let _ = futex::wake(word, futex::Flags::PRIVATE, i32::MAX as u32);
    }

    #[inline]
    pub(crate) fn wake_all_at(word: *const AtomicU32) {
        // SAFETY: FUTEX_WAKE | FUTEX_PRIVATE_FLAG takes the address as a key
        // only (`get_futex_key()` for a private futex reads no memory), so a
        // dangling `word` is not dereferenced by anyone: the call then wakes
        // nobody, or spuriously wakes a thread that now waits at that address,
        // or fails with EFAULT if the page is gone; all three are harmless.
        unsafe {
            libc::syscall(
                libc::SYS_futex,
                word,
                libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG,
                i32::MAX,
            );
        }
    }
}

#[cfg(loom)]
mod imp {
    use super::AtomicU32;
    use crate::sync::Ordering::SeqCst;
    use loom::sync::{Condvar, Mutex};

    loom::lazy_static! {
        /// The model's only futex hash bucket.
        static ref BUCKET: (Mutex<()>, Condvar) = (Mutex::new(()), Condvar::new());
    }

    pub(crate) fn wait(word: &AtomicU32, expected: u32) {
        let guard = BUCKET.0.lock().unwrap();
        if word.load(SeqCst) == expected {
            drop(BUCKET.1.wait(guard).unwrap());
        }
    }

    pub(crate) fn wake_all(_word: &AtomicU32) {
        let _guard = BUCKET.0.lock().unwrap();
        BUCKET.1.notify_all();
    }

    pub(crate) fn wake_all_at(_word: *const AtomicU32) {
        let _guard = BUCKET.0.lock().unwrap();
        BUCKET.1.notify_all();
    }
}

/// Sleeps while `*word == expected`; may return spuriously.
#[inline]
pub(crate) fn wait(word: &AtomicU32, expected: u32) {
    imp::wait(word, expected)
}

/// Wakes every thread sleeping on `word`.
#[inline]
pub(crate) fn wake_all(word: &AtomicU32) {
    imp::wake_all(word)
}

/// Wakes every thread sleeping on the word at `word`, which may no longer be
/// allocated (see the module docs).
#[inline]
pub(crate) fn wake_all_at(word: *const AtomicU32) {
    imp::wake_all_at(word)
}
