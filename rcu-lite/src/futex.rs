//! Sleeping and waking on a 32-bit word: the "then sleep" half of every wait.
//!
//! Every wait that another thread ends sleeps in [`wait`], and the party that
//! ends the wait calls [`wake_one`] or [`wake_all`] on the same word (waiting
//! for a worker thread to start sleeps in 50 us steps instead,
//! `sync::wait_for_a_start`). Most spin
//! briefly first (a driver waiting for holdouts, a waiting caller, an
//! `rcu_barrier()` caller, the grace-period worker before it parks); a caller
//! in a crowd, a fixed-interval FQS wait (timed) and the idle callback worker
//! sleep at once.
//!
//! The three functions are the workspace's `futex-word` crate: `FUTEX_WAIT`
//! and `FUTEX_WAKE`, process-private, and under `cfg(loom)` a model in which a
//! lost wake-up is a deadlock that loom reports (see that crate's docs).

pub(crate) use futex_word::{wait, wake_all, wake_one};
