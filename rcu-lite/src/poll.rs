//! Polled grace periods: a cookie now, a check later, without blocking.
//!
//! Kernel counterparts: `get_state_synchronize_rcu()`,
//! `start_poll_synchronize_rcu()`, `poll_state_synchronize_rcu()` and
//! `cond_synchronize_rcu()` (liburcu: `start_poll_synchronize_rcu()` and
//! `poll_state_synchronize_rcu()`).
//!
//! # Invariants
//!
//! - A [`GpState`] holds the number of the first grace period to start after
//!   the call that made it (`Engine::poll_target`, the target a
//!   `synchronize_rcu()` caller would have had), so once that grace period
//!   has completed, every read-side section that began before the call has
//!   ended, and the caller's updates before the call were published to every
//!   section that began after it.
//! - Grace periods complete in order and the completed count only grows, so
//!   a cookie that has elapsed stays elapsed.
//! - Taking a cookie starts no grace period: one elapses when some caller
//!   drives it (`synchronize_rcu()`, the callback worker). `start_poll_*`
//!   makes sure the callback worker drives one: it queues a callback that
//!   does nothing, as liburcu's `start_poll_synchronize_rcu()` does, but
//!   only when the queue is empty, since any queued callback's batch waits
//!   for a grace period that begins after the call
//!   (`CallbackQueue::request_grace_period`).
//! - A cookie belongs to one flavor: `GpState<Memb>` and `GpState<Qsbr>` are
//!   different types, so one cannot be checked against the other's grace
//!   periods.

use crate::callbacks::CallbackQueue;
use crate::flavor::Flavor;
use std::fmt;
use std::marker::PhantomData;

/// A cookie from `get_state_synchronize_rcu()` or
/// `start_poll_synchronize_rcu()` of flavor `F` ([`memb`](crate::memb),
/// [`qsbr`](crate::qsbr)): names the grace period whose completion means a
/// full grace period has elapsed since the call that made it. Check it with
/// the same flavor's `poll_state_synchronize_rcu()`, or wait for it with
/// `cond_synchronize_rcu()`. Another flavor's does not compile:
///
/// ```compile_fail,E0308
/// use rcu_lite::{memb, qsbr};
///
/// let state = memb::get_state_synchronize_rcu();
/// // expected `GpState<Qsbr>`, found `GpState<Memb>`
/// qsbr::poll_state_synchronize_rcu(state);
/// ```
pub struct GpState<F: Flavor> {
    /// The grace period to wait for (`Engine::poll_target`).
    target: u64,
    flavor: PhantomData<fn() -> F>,
}

impl<F: Flavor> GpState<F> {
    pub(crate) fn new(target: u64) -> GpState<F> {
        GpState {
            target,
            flavor: PhantomData,
        }
    }

    pub(crate) fn target(self) -> u64 {
        self.target
    }
}

impl<F: Flavor> Clone for GpState<F> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<F: Flavor> Copy for GpState<F> {}

impl<F: Flavor> PartialEq for GpState<F> {
    fn eq(&self, other: &Self) -> bool {
        self.target == other.target
    }
}

impl<F: Flavor> Eq for GpState<F> {}

/// Consistent with `PartialEq`: cookies can key a set or a map (the
/// updates waiting for each grace period, say).
///
/// ```
/// use rcu_lite::memb;
/// use std::collections::HashMap;
///
/// let mut waiting: HashMap<_, Vec<&str>> = HashMap::new();
/// waiting.entry(memb::get_state_synchronize_rcu()).or_default().push("a");
/// waiting.entry(memb::get_state_synchronize_rcu()).or_default().push("b");
/// assert_eq!(waiting.len(), 1, "no grace period started in between");
/// memb::synchronize_rcu();
/// assert!(waiting.keys().all(|&state| memb::poll_state_synchronize_rcu(state)));
/// ```
impl<F: Flavor> std::hash::Hash for GpState<F> {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.target.hash(state);
    }
}

impl<F: Flavor> fmt::Debug for GpState<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GpState")
            .field("flavor", &F::NAME)
            .field("grace_period", &self.target)
            .finish()
    }
}

/// `start_poll_synchronize_rcu()` of flavor `F`, whose callback queue is
/// `callbacks` and whose `synchronize_rcu` is `synchronize`: a cookie, then
/// a queued callback (one that does nothing, unless some callback is queued
/// already), whose grace period the callback thread drives.
pub(crate) fn start_poll<F: Flavor>(
    callbacks: &'static CallbackQueue,
    synchronize: fn(),
) -> GpState<F> {
    let state = F::get_state_synchronize_rcu();
    // Requested after the cookie was taken: the worker takes the queued
    // batch after this, and its `synchronize_rcu()` for that batch begins
    // after the take, so it waits for the cookie's grace period or a later
    // one.
    callbacks.request_grace_period(synchronize, F::NAME);
    state
}

/// `cond_synchronize_rcu()` of flavor `F`: the flavor's misuse checks
/// whether or not it waits, then `synchronize_rcu()` unless `state` has
/// elapsed (whose grace period begins after this call, so it is the
/// cookie's or a later one).
pub(crate) fn cond_synchronize<F: Flavor>(state: GpState<F>) {
    F::refuse_to_wait_here("cond_synchronize_rcu");
    if !F::poll_state_synchronize_rcu(state) {
        F::synchronize_rcu();
    }
}
