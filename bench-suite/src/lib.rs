//! # bench-suite: `syncbench` and its measurements
//!
//! Measures this workspace's primitives side by side with the crates Rust users
//! reach for today, in one process and one run, so that ratios are honest.
//!
//! Each kind of measurement has one trait, implemented for every contender:
//!
//! | kind | trait | command | kernel counterpart |
//! |---|---|---|---|
//! | read-side cost | [`refscale::ReadSide`] | `syncbench refscale` | `kernel/rcu/refscale.c` |
//! | lock contention and exclusion | [`locktorture::TortureLock`] | `syncbench locktorture` | `kernel/locking/locktorture.c` |
//! | waiting for readers | [`rcuscale::GracePeriod`] | `syncbench rcuscale` | `kernel/rcu/rcuscale.c` |
//! | use-after-free detection | [`torture::Torture`] | `syncbench torture` | `kernel/rcu/rcutorture.c` |
//! | membarrier serialization | [`membarrier_sim::sim`] | `syncbench membarrier` | `selftests/membarrier/membarrier_rseq_stress.c` |
//!
//! Every implementation is listed in a registry ([`registry`]) by name; the CLI
//! validates names against it and `syncbench list` prints it grouped by kind.
//! `syncbench report` runs a profile of everything and writes a markdown report
//! and `results.json`. The C peer liburcu is linked when `build.rs` finds it
//! ([`liburcu`]).

pub mod advise;
pub mod cli;
pub mod compare;
pub mod console;
pub mod cpu_time;
pub mod delay;
pub mod end_gate;
pub mod fault;
pub mod liburcu;
pub mod locktorture;
pub mod machine;
pub mod membarrier;
pub mod progress;
pub mod rcuscale;
pub mod refscale;
pub mod registry;
pub mod report;
pub mod start_gate;
pub mod stats;
pub mod throttle;
pub mod torture;
pub mod turns;
pub mod wait_log;
