//! A read-mostly routing table behind [`Rcu`], read by lookup threads of both
//! flavors while one writer keeps replacing it:
//!
//! - memb readers take `memb::read_lock()` around each lookup; they need no
//!   registration and may block anywhere outside a section;
//! - a qsbr reader registers a [`QsbrThread`], reads inside
//!   `thread.read_lock()` for free, announces a quiescent state every 64
//!   lookups, and goes offline around a sleep, as a worker that blocks must;
//! - the writer publishes each new version with `Rcu::replace`, which builds
//!   nothing under the cell's update lock (the new table is made before the
//!   call) and defers the old one's drop to a grace period through
//!   `call_rcu` (`Rcu::update` is for a new value made from the old one); a
//!   guard tells the readers to stop however the writer ends, a panic
//!   included, so that they never spin on without it; once every
//!   thread has finished, `rcu_barrier()` of each flavor waits until every
//!   deferred drop has run, before the drops are counted.
//!
//! Every table a reader reaches must still be alive and whole: each route
//! carries the table's version, and a dropped table is poisoned first.
//!
//! `cargo run --release -p rcu-lite --example routing_table`

use rcu_lite::qsbr::{self, QsbrThread};
use rcu_lite::{Qsbr, Rcu, memb};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::atomic::{AtomicBool, AtomicUsize};
use std::thread;
use std::time::Duration;

/// Tables dropped so far (every replaced one, after its grace period).
static DROPPED: AtomicUsize = AtomicUsize::new(0);

const ALIVE: u64 = 0xa11ce;
const POISONED: u64 = 0xdead;

/// A table: `routes[i]` is `(prefix, next hop, version)`.
struct Table {
    magic: u64,
    version: u64,
    routes: Vec<(u32, u32, u64)>,
}

impl Table {
    fn new(version: u64) -> Table {
        Table {
            magic: ALIVE,
            version,
            routes: (0..16).map(|p| (p, p + version as u32, version)).collect(),
        }
    }

    /// The next hop for `prefix`, checking that the table is alive and whole.
    fn lookup(&self, prefix: u32) -> u32 {
        assert_eq!(self.magic, ALIVE, "a reader reached a dropped table");
        let (_, hop, version) = self.routes[prefix as usize % self.routes.len()];
        assert_eq!(version, self.version, "a reader saw a table half built");
        hop
    }
}

impl Drop for Table {
    fn drop(&mut self) {
        self.magic = POISONED;
        DROPPED.fetch_add(1, Relaxed);
    }
}

/// Runs the readers and the writer; returns the tables replaced. The two
/// current tables are dropped with their cells on return.
fn run(updates: u64) -> usize {
    let memb_table: Rcu<Table> = Rcu::new(Table::new(0));
    let qsbr_table: Rcu<Table, Qsbr> = Rcu::new(Table::new(0));
    // Relaxed: only a signal to stop; the scope's joins order the rest.
    let writer_done = AtomicBool::new(false);
    thread::scope(|s| {
        s.spawn(|| {
            // Stores the stop flag when dropped: at the end, or if building a
            // table panics.
            struct StopReaders<'a>(&'a AtomicBool);
            impl Drop for StopReaders<'_> {
                fn drop(&mut self) {
                    self.0.store(true, Relaxed);
                }
            }
            let _stop = StopReaders(&writer_done);
            for version in 1..=updates {
                memb_table.replace(Table::new(version));
                qsbr_table.replace(Table::new(version));
            }
        });
        for _ in 0..2 {
            s.spawn(|| {
                let mut prefix = 0u32;
                while !writer_done.load(Relaxed) {
                    let guard = memb::read_lock();
                    memb_table.read(&guard).lookup(prefix);
                    prefix = prefix.wrapping_add(1);
                }
            });
        }
        s.spawn(|| {
            let mut worker = QsbrThread::register();
            let mut lookups = 0u32;
            while !writer_done.load(Relaxed) {
                {
                    let guard = worker.read_lock();
                    qsbr_table.read(&guard).lookup(lookups);
                }
                lookups = lookups.wrapping_add(1);
                if lookups.is_multiple_of(64) {
                    // No reference from before this point is used after it.
                    worker.quiescent_state();
                }
                if lookups.is_multiple_of(4096) {
                    // Blocking: offline, so grace periods do not wait for us.
                    worker.while_offline(|| thread::sleep(Duration::from_micros(100)));
                }
            }
        });
    });
    // Every replaced table's drop was handed to a callback; run them all.
    memb::rcu_barrier();
    qsbr::rcu_barrier();
    2 * updates as usize
}

fn main() {
    let updates = if cfg!(miri) { 20 } else { 2_000 };
    let replaced = run(updates);
    assert_eq!(
        DROPPED.load(Relaxed),
        replaced + 2,
        "every replaced table dropped once, after its grace period, and the two current ones \
         with their cells"
    );
    println!(
        "routing_table: {replaced} tables replaced under readers of both flavors, each dropped once"
    );
}

/// `cargo test` runs `main`'s checks too (the example is `test = true` in
/// `rcu-lite/Cargo.toml`).
#[cfg(test)]
#[test]
fn every_reader_sees_a_live_table_and_every_old_one_is_dropped() {
    main();
}
