//! # rcu-lite: user-space RCU with quick quiescent-state reporting
//!
//! A user-space rebuild of Tree RCU's grace-period engine and of the patch that
//! reports the grace-period driver's own quiescent state at the end of
//! `rcu_gp_init()` (`../shared/seeds/rcu-gp-kthread-qs-early-v2.txt`), so that on
//! an idle system one force-quiescent-state scan suffices instead of two.
//!
//! This crate will hold:
//!
//! - two flavors sharing one engine: `memb` (a per-thread nesting counter and a
//!   light fence on the read side, like liburcu's memb flavor) and `qsbr` (a free
//!   read side; registered threads announce quiescent states or go offline);
//! - `synchronize_rcu()` callers sharing grace periods, `synchronize_rcu_expedited()`,
//!   `call_rcu()` with a batching callback worker and `rcu_barrier()`;
//! - a safe `Rcu<T>` cell whose `replace` defers freeing the old value.
//!
//! Calling `synchronize_rcu()` inside a read-side section would deadlock; it
//! panics with a message saying so.
#![deny(unsafe_op_in_unsafe_fn)]

mod sync;
