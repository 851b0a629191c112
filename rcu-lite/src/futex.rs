//! Sleeping and waking on a 32-bit word: the "then sleep" half of every wait.
//!
//! Every wait in this crate spins briefly and then calls [`wait`], and the
//! party that ends the wait calls [`wake_one`] or [`wake_all`] on the same
//! word. They are the workspace's `futex-word` crate: `FUTEX_WAIT` and
//! `FUTEX_WAKE`, process-private, and under `cfg(loom)` a model in which a
//! lost wake-up is a deadlock that loom reports (see that crate's docs).

pub(crate) use futex_word::{wait, wake_all, wake_one};
