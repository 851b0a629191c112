//! The two flavors as types, so that [`crate::Rcu`] can be generic over them.
//!
//! [`Memb`] and [`Qsbr`] are uninhabited markers; [`Flavor`] gives their
//! update-side entry points and [`ReadGuard`] ties each guard type to its
//! flavor, so a memb guard cannot be used to read a qsbr cell. Both traits are
//! sealed: the crate's safety argument covers exactly these two flavors.

use crate::poll::GpState;
use crate::{memb, qsbr};

mod sealed {
    pub trait Sealed {}
}

/// A flavor of RCU: [`Memb`] or [`Qsbr`].
pub trait Flavor: sealed::Sealed + Sized + Send + Sync + 'static {
    /// `memb` or `qsbr`.
    const NAME: &'static str;
    /// The flavor's `synchronize_rcu()`.
    fn synchronize_rcu();
    /// The flavor's `synchronize_rcu_expedited()`.
    fn synchronize_rcu_expedited();
    /// The flavor's `call_rcu()`.
    fn call_rcu(callback: impl FnOnce() + Send + 'static);
    /// The flavor's `rcu_barrier()`.
    fn rcu_barrier();
    /// The flavor's `callbacks_pending()`.
    fn callbacks_pending() -> usize;
    /// The flavor's `get_state_synchronize_rcu()`.
    #[must_use = "the cookie is what poll_state_synchronize_rcu() checks"]
    fn get_state_synchronize_rcu() -> GpState<Self>;
    /// The flavor's `start_poll_synchronize_rcu()`.
    fn start_poll_synchronize_rcu() -> GpState<Self>;
    /// The flavor's `poll_state_synchronize_rcu()`.
    #[must_use = "polling only reads whether the grace period ended"]
    fn poll_state_synchronize_rcu(state: GpState<Self>) -> bool;
    /// The flavor's `cond_synchronize_rcu()`.
    fn cond_synchronize_rcu(state: GpState<Self>);
    #[doc(hidden)]
    /// The misuse checks of the flavor's `synchronize_rcu()`, without the
    /// wait: panics, naming `name`, where that wait could never end.
    fn refuse_to_wait_here(name: &'static str);
}

/// A read-side guard of flavor [`ReadGuard::Flavor`]: proof that the thread
/// is inside a read-side section of that flavor.
pub trait ReadGuard: sealed::Sealed {
    /// The flavor the guard belongs to.
    type Flavor: Flavor;
}

/// The memb flavor ([`crate::memb`]).
#[derive(Debug)]
pub enum Memb {}

/// The qsbr flavor ([`crate::qsbr`]).
#[derive(Debug)]
pub enum Qsbr {}

impl sealed::Sealed for Memb {}
impl sealed::Sealed for Qsbr {}
impl sealed::Sealed for memb::Guard {}
impl sealed::Sealed for qsbr::Guard<'_> {}

impl Flavor for Memb {
    const NAME: &'static str = "memb";
    fn synchronize_rcu() {
        memb::synchronize_rcu();
    }
    fn synchronize_rcu_expedited() {
        memb::synchronize_rcu_expedited();
    }
    fn call_rcu(callback: impl FnOnce() + Send + 'static) {
        memb::call_rcu(callback);
    }
    fn rcu_barrier() {
        memb::rcu_barrier();
    }
    fn callbacks_pending() -> usize {
        memb::callbacks_pending()
    }
    fn get_state_synchronize_rcu() -> GpState<Self> {
        memb::get_state_synchronize_rcu()
    }
    fn start_poll_synchronize_rcu() -> GpState<Self> {
        memb::start_poll_synchronize_rcu()
    }
    fn poll_state_synchronize_rcu(state: GpState<Self>) -> bool {
        memb::poll_state_synchronize_rcu(state)
    }
    fn cond_synchronize_rcu(state: GpState<Self>) {
        memb::cond_synchronize_rcu(state);
    }
    fn refuse_to_wait_here(name: &'static str) {
        memb::refuse_to_wait_here(name);
    }
}

impl Flavor for Qsbr {
    const NAME: &'static str = "qsbr";
    fn synchronize_rcu() {
        qsbr::synchronize_rcu();
    }
    fn synchronize_rcu_expedited() {
        qsbr::synchronize_rcu_expedited();
    }
    fn call_rcu(callback: impl FnOnce() + Send + 'static) {
        qsbr::call_rcu(callback);
    }
    fn rcu_barrier() {
        qsbr::rcu_barrier();
    }
    fn callbacks_pending() -> usize {
        qsbr::callbacks_pending()
    }
    fn get_state_synchronize_rcu() -> GpState<Self> {
        qsbr::get_state_synchronize_rcu()
    }
    fn start_poll_synchronize_rcu() -> GpState<Self> {
        qsbr::start_poll_synchronize_rcu()
    }
    fn poll_state_synchronize_rcu(state: GpState<Self>) -> bool {
        qsbr::poll_state_synchronize_rcu(state)
    }
    fn cond_synchronize_rcu(state: GpState<Self>) {
        qsbr::cond_synchronize_rcu(state);
    }
    fn refuse_to_wait_here(name: &'static str) {
        qsbr::refuse_to_wait_here(name);
    }
}

impl ReadGuard for memb::Guard {
    type Flavor = Memb;
}

impl ReadGuard for qsbr::Guard<'_> {
    type Flavor = Qsbr;
}
