//! # qrwlock: the kernel's fair queued reader-writer lock
//!
//! A user-space rebuild of `kernel/locking/qrwlock.c` after Will Deacon's series
//! (`../shared/seeds/arm64-qrwlock-locktorture.txt`): one 32-bit word (writer-
//! locked byte, writer-waiting bit, reader count above them) and a fair FIFO
//! wait queue.
//!
//! This crate will hold:
//!
//! - `RawQRwLock`, with inline reader and writer fast paths and out-of-line slow
//!   paths (`queued_read_lock_slowpath()`, `queued_write_lock_slowpath()`), where a
//!   waiting writer sets the waiting bit so new fast-path readers queue behind it;
//! - the wait queue as a real queued lock (MCS-style nodes, each waiter spinning
//!   on its own cache line, then sleeping on a futex);
//! - `cond_load_acquire`, the user-space `atomic_cond_read_acquire()` (WFE on
//!   aarch64, `pause` on x86_64, a futex after a bounded spin);
//! - `lock_api::RawRwLock` for it, so `RwLock<T>` is
//!   `lock_api::RwLock<RawQRwLock, T>`.
#![deny(unsafe_op_in_unsafe_fn)]

mod sync;
