//! # hazptr: hazard pointers with a shared scan
//!
//! A user-space rebuild of Mathieu Desnoyers's kernel hazard pointers
//! (`hazptr_acquire()`, `hazptr_release()`, `hazptr_synchronize()`) and of the
//! shared-scan series (`../shared/seeds/hazptr-shared-scan-rfc-v3.txt`), in which
//! concurrent `synchronize()` callers share one scan.
//!
//! This crate will hold:
//!
//! - a `Domain` (a global default and user-created ones) owning per-thread slot
//!   blocks, overflow lists of backup slots, retired lists and the scan state;
//! - acquire/release: a wildcard into a free slot, a light fence
//!   (`membarrier_sim::fence::light`), one load, the pointer into the slot;
//!   release is a store-release of null;
//! - `synchronize(addr)`, whose callers queue a waiter on their own stack and are
//!   served by one scanner per domain that screens slots with a Bloom filter of
//!   the waiters' addresses and flips the wildcard generation so new readers
//!   cannot starve it;
//! - `retire`/`reclaim` with batched reclamation, and a safe atomic owning
//!   pointer on top.
//!
//! Readers pay a compiler fence; the scan side pays `membarrier(2)`
//! (`membarrier_sim::fence::heavy`).
#![deny(unsafe_op_in_unsafe_fn)]

mod sync;
