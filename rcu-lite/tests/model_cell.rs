//! Model-based randomized tests of the memb [`Rcu<T>`] cell: seeded random
//! sequences of its operations and of the flavor's grace-period calls,
//! checked against a model after every step.
//!
//! The example-based tests in `cell.rs` and `cell_polled.rs` check one
//! scenario each; these check that any mix of read-side sections, updates
//! and waits keeps the cell's promises. The values stored count their drops
//! per instance id.
//!
//! - `single_thread_matches_the_model`: one thread; a sequential model of
//!   the cell (its current value), of each old value's owner (the callback
//!   queue, a `Retired` we hold, the test itself, or dropped) and of the
//!   thread's read-side section (its nesting, and what was unpublished or
//!   which cookies were taken while it was open). Every read returns the
//!   model's value; no value is dropped twice, none the test owns is dropped
//!   behind its back, and none unpublished while the section is open is
//!   dropped before the section ends (nor does its `Retired`, or a cookie
//!   taken inside the section, read as elapsed before then); the waits panic
//!   exactly when called inside a section (and publish nothing then);
//!   every cookie and `Retired` has elapsed after a `synchronize_rcu`,
//!   every deferred drop has run after an `rcu_barrier`, and at the end
//!   every value was dropped exactly once.
//! - `concurrent_invariants_hold`: 2-4 threads on one cell, checked
//!   through invariants: a reader sees only values that were stored, and
//!   never one that has been dropped while its section lasts (each value's
//!   drop sets its flag, which the reader checks after every operation);
//!   after the threads, the cell's drop and an `rcu_barrier`, every value
//!   was dropped exactly once.
//!
//! A failure prints the seed and the operations up to it; `MODEL_SEED=N`
//! runs that seed alone. The generator is a xorshift64* written here (no
//! property-testing crate is used).
#![cfg(not(loom))]

use rcu_lite::{GpState, Memb, Rcu, Retired, memb};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use test_support::model::{CANARY, Rng, Trace, Tracked, Tracker};

/// Seeds of the single-thread model, and operations per seed.
/// (Few under miri, which interprets every step: `scripts/sanitize.sh`
/// runs these files there.)
const SEEDS: u64 = if cfg!(miri) { 2 } else { 200 };
const OPS: usize = if cfg!(miri) { 50 } else { 200 };
/// Seeds of the concurrent test, and operations per thread.
const CONCURRENT_SEEDS: u64 = if cfg!(miri) { 1 } else { 48 };
const CONCURRENT_OPS: usize = if cfg!(miri) { 40 } else { 600 };
/// How deep the sections nest.
const MAX_NESTING: usize = 4;
/// Cookies the single-thread model keeps at once.
const MAX_COOKIES: usize = 6;

/// Who owns a value, in the model.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Owner {
    /// The cell's current value.
    Cell,
    /// Queued for its drop after a grace period (`replace`, `update`, a
    /// `Retired` dropped before its grace period ended).
    Deferred,
    /// In a `Retired` the test holds.
    Retired,
    /// Handed back to the test.
    Test,
    /// Dropped (by the test, or seen dropped after a barrier).
    Dropped,
}

struct Obj {
    owner: Owner,
    payload: u64,
    /// Unpublished while this thread's current read-side section was open:
    /// no grace period can end, so it cannot be dropped, until the section
    /// ends.
    shielded: bool,
}

/// A grace-period cookie the model keeps.
struct Cookie {
    state: GpState<Memb>,
    /// Taken inside the current section, which holds it up.
    shielded: bool,
    /// Seen elapsed once: it must stay so.
    elapsed: bool,
}

struct Model {
    tracker: Arc<Tracker>,
    objs: Vec<Obj>,
    current: usize,
    /// The thread's guards: its nesting is their number.
    guards: Vec<memb::Guard>,
    /// Values read inside the current section, with their addresses.
    views: Vec<(usize, *const Tracked)>,
    retired: Vec<(Retired<Tracked, Memb>, usize)>,
    owned: Vec<Tracked>,
    cookies: Vec<Cookie>,
    payloads: u64,
    stats: Stats,
}

/// How often the runs met the cases worth meeting: the test fails if the
/// seeds stop reaching one of them.
#[derive(Debug, Default)]
struct Stats {
    refused_waits: usize,
    shielded_updates: usize,
    retired_taken: usize,
    retired_not_ready: usize,
    barrier_drops: usize,
}

impl test_support::model::Coverage for Stats {
    fn add(&mut self, o: &Stats) {
        self.refused_waits += o.refused_waits;
        self.shielded_updates += o.shielded_updates;
        self.retired_taken += o.retired_taken;
        self.retired_not_ready += o.retired_not_ready;
        self.barrier_drops += o.barrier_drops;
    }

    fn assert_all_met(&self) {
        let Stats {
            refused_waits,
            shielded_updates,
            retired_taken,
            retired_not_ready,
            barrier_drops,
        } = *self;
        assert!(
            [
                refused_waits,
                shielded_updates,
                retired_taken,
                retired_not_ready,
                barrier_drops
            ]
            .iter()
            .all(|&n| n > 0),
            "the seeds no longer reach every case: {self:?}"
        );
    }
}

impl Model {
    fn in_section(&self) -> bool {
        !self.guards.is_empty()
    }

    fn new_value(&mut self) -> Tracked {
        self.payloads += 1;
        let value = self.tracker.make_stored(self.payloads);
        assert_eq!(value.id, self.objs.len(), "ids are dense");
        self.objs.push(Obj {
            owner: Owner::Test,
            payload: value.payload,
            shielded: false,
        });
        value
    }

    /// `new` is now the cell's value; the old one goes to `old_owner`.
    fn publish(&mut self, new: usize, old_owner: Owner) -> usize {
        let old = self.current;
        let shielded = self.in_section();
        self.stats.shielded_updates += usize::from(shielded);
        self.objs[old] = Obj {
            owner: old_owner,
            shielded,
            ..self.objs[old]
        };
        self.objs[new].owner = Owner::Cell;
        self.current = new;
        old
    }

    fn want(&self) -> (usize, u64, u64) {
        (self.current, self.objs[self.current].payload, CANARY)
    }

    fn drop_owned(&mut self, v: Tracked) {
        let id = v.id;
        drop(v);
        self.objs[id].owner = Owner::Dropped;
        assert_eq!(self.tracker.drops(id), 1, "id {id}: dropped once, by us");
    }

    /// The section ended: nothing is held up by it any more.
    fn section_ended(&mut self) {
        self.views.clear();
        for o in &mut self.objs {
            o.shielded = false;
        }
        for c in &mut self.cookies {
            c.shielded = false;
        }
    }

    /// After a `synchronize_rcu` (outside every section): every cookie and
    /// `Retired` taken before it has elapsed.
    fn everything_elapsed(&mut self, what: &str) {
        for (i, c) in self.cookies.iter_mut().enumerate() {
            assert!(
                memb::poll_state_synchronize_rcu(c.state),
                "{what}: cookie {i} ({:?}) has not elapsed",
                c.state
            );
            c.elapsed = true;
        }
        for (r, id) in &self.retired {
            assert!(r.is_ready(), "{what}: the Retired of id {id} is not ready");
        }
    }

    /// The checks that hold after every step.
    fn check(&mut self) {
        assert_eq!(
            memb::read_ongoing(),
            self.in_section(),
            "read_ongoing() with {} guards",
            self.guards.len()
        );
        for (id, obj) in self.objs.iter().enumerate() {
            let drops = self.tracker.drops(id);
            match obj.owner {
                Owner::Cell | Owner::Retired | Owner::Test => assert_eq!(
                    drops, 0,
                    "id {id} ({:?}-owned) was dropped by someone else",
                    obj.owner
                ),
                Owner::Dropped => assert_eq!(drops, 1, "id {id}: dropped more than once"),
                Owner::Deferred => {
                    assert!(drops <= 1, "id {id}: deferred and dropped {drops} times");
                }
            }
            if obj.shielded {
                assert_eq!(
                    drops, 0,
                    "id {id}: unpublished inside the section still open, and dropped"
                );
            }
        }
        for &(id, ptr) in &self.views {
            assert_eq!(
                self.tracker.drops(id),
                0,
                "id {id}: read in the section still open, and dropped"
            );
            // SAFETY: read inside the section that is still open: the value
            // is dropped only after a grace period that waits for it, and it
            // was not dropped (checked above). The test creates no `&mut`
            // to a published value (`get_mut` clears the views first).
            let (seen, canary) = unsafe { ((*ptr).id, (*ptr).canary) };
            assert_eq!((seen, canary), (id, CANARY), "id {id} read in the section");
        }
        for (i, c) in self.cookies.iter_mut().enumerate() {
            let elapsed = memb::poll_state_synchronize_rcu(c.state);
            assert!(
                !(c.shielded && elapsed),
                "cookie {i} taken inside the section still open has elapsed"
            );
            assert!(!c.elapsed || elapsed, "cookie {i} elapsed, then did not");
            c.elapsed = elapsed;
        }
        for (r, id) in &self.retired {
            if self.objs[*id].shielded {
                assert!(
                    !r.is_ready(),
                    "the Retired of id {id}, unpublished inside the section still open, is ready"
                );
            }
        }
    }
}

/// A wait that must panic exactly when called inside a section.
fn expect_refusal_inside<R>(m: &mut Model, what: &str, call: impl FnOnce() -> R) -> Option<R> {
    let inside = m.in_section();
    match catch_unwind(AssertUnwindSafe(call)) {
        Ok(r) => {
            assert!(!inside, "{what}: returned inside a read-side section");
            Some(r)
        }
        Err(payload) => {
            let message = test_support::misuse::message_of(&*payload);
            assert!(inside, "{what}: panicked outside every section: {message}");
            assert!(
                message.contains("inside a read-side critical section"),
                "{what}: {message}"
            );
            m.stats.refused_waits += 1;
            None
        }
    }
}

fn one_seed(seed: u64) -> Stats {
    let mut rng = Rng::new(seed);
    let mut trace = Trace::new(
        "-p rcu-lite --test model_cell",
        "single_thread_matches_the_model",
        seed,
    );
    let tracker = Tracker::new(OPS + 2);
    let mut m = Model {
        tracker: Arc::clone(&tracker),
        objs: Vec::new(),
        current: 0,
        guards: Vec::new(),
        views: Vec::new(),
        retired: Vec::new(),
        owned: Vec::new(),
        cookies: Vec::new(),
        payloads: 0,
        stats: Stats::default(),
    };
    let first = m.new_value();
    m.objs[0].owner = Owner::Cell;
    let mut cell = Rcu::<Tracked>::new(first);
    trace.op("Rcu::new(0)".into());
    for _ in 0..OPS {
        step(&mut m, &mut cell, &mut rng, &mut trace);
        m.check();
    }
    // Wind down: leave the section, give everything back, drop the cell,
    // and wait for every deferred drop.
    trace.op("end: drop every guard".into());
    m.guards.clear();
    m.section_ended();
    m.check();
    for (r, id) in std::mem::take(&mut m.retired) {
        let ready = r.is_ready();
        trace.op(format!("end: drop the Retired of id {id} (ready: {ready})"));
        drop(r);
        if ready {
            assert_eq!(
                tracker.drops(id),
                1,
                "a ready Retired drops its value at once"
            );
        }
        m.objs[id].owner = Owner::Deferred;
    }
    for v in std::mem::take(&mut m.owned) {
        trace.op(format!("end: drop owned id {}", v.id));
        m.drop_owned(v);
    }
    let current = m.current;
    trace.op(format!("end: drop the cell (current {current})"));
    drop(cell);
    assert_eq!(tracker.drops(current), 1, "the cell's drop drops its value");
    m.objs[current].owner = Owner::Dropped;
    trace.op("end: rcu_barrier()".into());
    memb::rcu_barrier();
    assert_eq!(
        tracker.made(),
        m.objs.len(),
        "every value was made by the model"
    );
    for id in 0..m.objs.len() {
        assert_eq!(
            tracker.drops(id),
            1,
            "id {id}: dropped {} times by the end",
            tracker.drops(id)
        );
    }
    drop(trace);
    m.stats
}

fn step(m: &mut Model, cell: &mut Rcu<Tracked>, rng: &mut Rng, trace: &mut Trace) {
    match rng.below(20) {
        0 | 1 => {
            if m.guards.len() < MAX_NESTING && (m.guards.is_empty() || rng.percent(60)) {
                trace.op(format!("read_lock() (nesting {})", m.guards.len() + 1));
                m.guards.push(memb::read_lock());
            } else if !m.guards.is_empty() {
                let i = rng.below(m.guards.len());
                trace.op(format!("drop guard {i} (nesting {})", m.guards.len() - 1));
                drop(m.guards.remove(i));
                if m.guards.is_empty() {
                    m.section_ended();
                }
            }
        }
        2 | 3 if m.in_section() => {
            let i = rng.below(m.guards.len());
            let want = m.want();
            let v = cell.read(&m.guards[i]);
            trace.op(format!("read via guard {i} -> {}", v.id));
            assert_eq!((v.id, v.payload, v.canary), want, "read vs the model");
            m.views.push((v.id, std::ptr::from_ref(v)));
        }
        4 | 5 => {
            let new = m.new_value();
            let id = new.id;
            trace.op(format!("replace({id}) over {}", m.current));
            cell.replace(new);
            m.publish(id, Owner::Deferred);
        }
        6 => {
            let new = m.new_value();
            let id = new.id;
            let want = m.want();
            trace.op(format!("update(-> {id}) over {}", m.current));
            cell.update(|cur| {
                assert_eq!(
                    (cur.id, cur.payload, cur.canary),
                    want,
                    "update's function sees the current value"
                );
                new
            });
            m.publish(id, Owner::Deferred);
        }
        7 => {
            let new = m.new_value();
            let id = new.id;
            trace.op(format!(
                "replace_and_synchronize({id}) over {} (in a section: {})",
                m.current,
                m.in_section()
            ));
            match expect_refusal_inside(m, "replace_and_synchronize", || {
                cell.replace_and_synchronize(new)
            }) {
                Some(old) => {
                    let old_id = m.publish(id, Owner::Test);
                    assert_eq!(old.id, old_id, "replace_and_synchronize: the old value");
                    m.everything_elapsed("replace_and_synchronize");
                    if rng.percent(50) {
                        m.owned.push(old);
                    } else {
                        m.drop_owned(old);
                    }
                }
                None => {
                    // Refused before publishing: the unwind dropped `new`.
                    assert_eq!(m.tracker.drops(id), 1, "the refused new value is dropped");
                    m.objs[id].owner = Owner::Dropped;
                }
            }
        }
        8 | 9 => {
            let new = m.new_value();
            let id = new.id;
            let r = cell.replace_polled(new);
            let old_id = m.publish(id, Owner::Retired);
            trace.op(format!("replace_polled({id}) -> Retired of {old_id}"));
            m.retired.push((r, old_id));
        }
        10 | 11 if !m.retired.is_empty() => {
            let (r, id) = m.retired.swap_remove(rng.below(m.retired.len()));
            let shielded = m.objs[id].shielded;
            match rng.below(4) {
                0 => {
                    // The cookie's poll first: once it says elapsed, so
                    // must `is_ready`.
                    let polled = memb::poll_state_synchronize_rcu(r.state());
                    let ready = r.is_ready();
                    trace.op(format!(
                        "Retired of {id}: poll(state()) -> {polled}, is_ready() -> {ready}"
                    ));
                    assert!(ready || !polled, "is_ready() is its cookie's poll");
                    assert!(!(ready && shielded), "ready although a section holds it");
                    m.retired.push((r, id));
                }
                1 => match r.try_into_inner() {
                    Ok(v) => {
                        trace.op(format!("Retired of {id}: try_into_inner() -> Ok"));
                        assert!(
                            !shielded,
                            "try_into_inner handed back a value a section holds"
                        );
                        assert_eq!(v.id, id, "try_into_inner: its value");
                        m.stats.retired_taken += 1;
                        m.objs[id].owner = Owner::Test;
                        m.owned.push(v);
                    }
                    Err(r) => {
                        trace.op(format!("Retired of {id}: try_into_inner() -> Err"));
                        m.stats.retired_not_ready += 1;
                        m.retired.push((r, id));
                    }
                },
                2 => {
                    trace.op(format!(
                        "Retired of {id}: into_inner() (in a section: {})",
                        m.in_section()
                    ));
                    match expect_refusal_inside(m, "Retired::into_inner", || r.into_inner()) {
                        Some(v) => {
                            assert_eq!(v.id, id, "into_inner: its value");
                            m.stats.retired_taken += 1;
                            m.objs[id].owner = Owner::Test;
                            m.owned.push(v);
                        }
                        // Dropped after a grace period, as by `replace`.
                        None => m.objs[id].owner = Owner::Deferred,
                    }
                }
                _ => {
                    let ready = r.is_ready();
                    trace.op(format!("drop the Retired of {id} (ready: {ready})"));
                    drop(r);
                    if ready {
                        assert_eq!(
                            m.tracker.drops(id),
                            1,
                            "a ready Retired drops its value at once"
                        );
                    }
                    m.objs[id].owner = Owner::Deferred;
                }
            }
        }
        12 => {
            let expedited = rng.percent(30);
            let name = if expedited {
                "synchronize_rcu_expedited"
            } else {
                "synchronize_rcu"
            };
            trace.op(format!("{name}() (in a section: {})", m.in_section()));
            let wait = if expedited {
                memb::synchronize_rcu_expedited
            } else {
                memb::synchronize_rcu
            };
            if expect_refusal_inside(m, name, wait).is_some() {
                m.everything_elapsed(name);
            }
        }
        13 => {
            trace.op(format!("rcu_barrier() (in a section: {})", m.in_section()));
            if expect_refusal_inside(m, "rcu_barrier", memb::rcu_barrier).is_some() {
                for id in 0..m.objs.len() {
                    if m.objs[id].owner == Owner::Deferred {
                        assert_eq!(
                            m.tracker.drops(id),
                            1,
                            "id {id}: its deferred drop has not run after rcu_barrier()"
                        );
                        m.objs[id].owner = Owner::Dropped;
                        m.stats.barrier_drops += 1;
                    }
                }
                // `replace_polled` started their grace periods, whose
                // callbacks the barrier waited for.
                for (r, id) in &m.retired {
                    assert!(
                        r.is_ready(),
                        "rcu_barrier(): the Retired of id {id} is not ready"
                    );
                }
            }
        }
        14 | 15 => {
            if m.cookies.len() < MAX_COOKIES && (m.cookies.is_empty() || rng.percent(50)) {
                let start = rng.percent(50);
                let state = if start {
                    memb::start_poll_synchronize_rcu()
                } else {
                    memb::get_state_synchronize_rcu()
                };
                trace.op(format!(
                    "cookie {} = {}() = {state:?} (in a section: {})",
                    m.cookies.len(),
                    if start {
                        "start_poll_synchronize_rcu"
                    } else {
                        "get_state_synchronize_rcu"
                    },
                    m.in_section()
                ));
                let shielded = m.in_section();
                m.cookies.push(Cookie {
                    state,
                    shielded,
                    elapsed: false,
                });
            } else if !m.cookies.is_empty() {
                let i = rng.below(m.cookies.len());
                let state = m.cookies[i].state;
                if rng.percent(50) {
                    trace.op(format!("forget cookie {i}"));
                    m.cookies.remove(i);
                } else {
                    trace.op(format!(
                        "cond_synchronize_rcu(cookie {i}) (in a section: {})",
                        m.in_section()
                    ));
                    if expect_refusal_inside(m, "cond_synchronize_rcu", || {
                        memb::cond_synchronize_rcu(state);
                    })
                    .is_some()
                    {
                        assert!(
                            memb::poll_state_synchronize_rcu(state),
                            "cond_synchronize_rcu returned before its cookie elapsed"
                        );
                    }
                }
            }
        }
        16 => {
            // `&mut` access: nothing may read through the views meanwhile.
            m.views.retain(|&(id, _)| id != m.current);
            let v = cell.get_mut();
            trace.op(format!("get_mut() -> {}, payload += 1000", v.id));
            v.payload += 1000;
            m.objs[m.current].payload += 1000;
        }
        17 if !m.owned.is_empty() => {
            let v = m.owned.swap_remove(rng.below(m.owned.len()));
            trace.op(format!("drop owned id {}", v.id));
            m.drop_owned(v);
        }
        _ => {
            trace.op("read in a section of its own".into());
            let want = m.want();
            let g = memb::read_lock();
            let v = cell.read(&g);
            assert_eq!((v.id, v.payload, v.canary), want, "read vs the model");
        }
    }
}

#[test]
fn single_thread_matches_the_model() {
    test_support::model::each_seed_meeting_every_case(
        "single_thread_matches_the_model (a grace period or barrier that never ended)",
        SEEDS,
        one_seed,
    );
}

#[test]
fn concurrent_invariants_hold() {
    test_support::model::each_seed(
        "concurrent_invariants_hold (a grace period or barrier that never ended)",
        CONCURRENT_SEEDS,
        concurrent_seed,
    );
}

fn concurrent_seed(seed: u64) {
    let mut rng = Rng::new(seed ^ 0xc0ff_ee00_c0ff_ee00);
    let threads = 2 + rng.below(3);
    let config = format!(" ({threads} threads)");
    let tracker = Tracker::new(threads * CONCURRENT_OPS + 1);
    {
        let cell = Rcu::<Tracked>::new(tracker.make_stored(0));
        std::thread::scope(|s| {
            for t in 0..threads {
                let thread_seed = rng.next();
                let (cell, tracker, config) = (&cell, &tracker, &config);
                s.spawn(move || worker(seed, t, thread_seed, cell, tracker, config));
            }
        });
    }
    memb::rcu_barrier();
    for id in 0..tracker.made() {
        assert_eq!(
            tracker.drops(id),
            1,
            "seed {seed}{config}: id {id} dropped {} times after the cell's drop and rcu_barrier()",
            tracker.drops(id)
        );
    }
}

/// One thread of the concurrent test: random operations, and after each
/// the check that no value read in its current section has been dropped.
fn worker(
    seed: u64,
    t: usize,
    thread_seed: u64,
    cell: &Rcu<Tracked>,
    tracker: &Arc<Tracker>,
    config: &str,
) {
    let mut rng = Rng::new(thread_seed);
    let mut trace = Trace::new(
        "-p rcu-lite --test model_cell",
        "concurrent_invariants_hold",
        seed,
    );
    trace.config = format!("{config}, thread {t}");
    let mut guards: Vec<memb::Guard> = Vec::new();
    let mut views: Vec<(usize, *const Tracked)> = Vec::new();
    let check_seen = |v: &Tracked, what: &str| {
        assert!(
            tracker.was_stored(v.id),
            "{what}: id {} was never stored",
            v.id
        );
        assert_eq!(
            tracker.drops(v.id),
            0,
            "{what}: id {} read after its drop",
            v.id
        );
        assert_eq!(v.canary, CANARY, "{what}: id {} corrupted", v.id);
    };
    for _ in 0..CONCURRENT_OPS {
        match rng.below(12) {
            0 | 1 => {
                if guards.len() < MAX_NESTING && (guards.is_empty() || rng.percent(60)) {
                    trace.op(format!("read_lock() (nesting {})", guards.len() + 1));
                    guards.push(memb::read_lock());
                } else if !guards.is_empty() {
                    let i = rng.below(guards.len());
                    trace.op(format!("drop guard {i}"));
                    drop(guards.remove(i));
                    if guards.is_empty() {
                        views.clear();
                    }
                }
            }
            2..=4 if !guards.is_empty() => {
                let v = cell.read(&guards[rng.below(guards.len())]);
                trace.op(format!("read -> {}", v.id));
                check_seen(v, "read");
                views.push((v.id, std::ptr::from_ref(v)));
            }
            5 | 6 => {
                let new = tracker.make_stored(0);
                trace.op(format!("replace({})", new.id));
                cell.replace(new);
            }
            7 => {
                trace.op("update(payload + 1)".into());
                cell.update(|cur| {
                    check_seen(cur, "update's function");
                    tracker.make_stored(cur.payload + 1)
                });
            }
            8 => {
                let new = tracker.make_stored(0);
                let r = cell.replace_polled(new);
                let ready = r.is_ready();
                trace.op(format!(
                    "replace_polled, then drop the Retired (ready: {ready})"
                ));
                match r.try_into_inner() {
                    Ok(v) => {
                        check_seen(&v, "try_into_inner");
                        let id = v.id;
                        drop(v);
                        assert_eq!(tracker.drops(id), 1, "id {id}: ours, dropped once");
                    }
                    Err(r) => drop(r),
                }
            }
            // The waits, outside every section (inside they panic).
            9 if guards.is_empty() => {
                let new = tracker.make_stored(0);
                let old = cell.replace_and_synchronize(new);
                trace.op(format!("replace_and_synchronize -> {}", old.id));
                check_seen(&old, "replace_and_synchronize's old value");
                let id = old.id;
                drop(old);
                assert_eq!(tracker.drops(id), 1, "id {id}: ours, dropped once");
            }
            10 if guards.is_empty() => {
                if rng.percent(50) {
                    trace.op("synchronize_rcu()".into());
                    memb::synchronize_rcu();
                } else {
                    trace.op("rcu_barrier()".into());
                    memb::rcu_barrier();
                }
            }
            _ => {
                trace.op("yield".into());
                std::thread::yield_now();
            }
        }
        for &(id, ptr) in &views {
            assert_eq!(
                tracker.drops(id),
                0,
                "thread {t}: id {id}, read in the section still open, was dropped"
            );
            // SAFETY: read inside this thread's section, which is still
            // open: its value is dropped only after a grace period that
            // waits for the section; not dropped (checked above), so alive.
            // No thread takes `&mut` to a shared cell's value.
            let (seen, canary) = unsafe { ((*ptr).id, (*ptr).canary) };
            assert_eq!((seen, canary), (id, CANARY), "thread {t}: id {id}");
        }
    }
    drop(guards);
    drop(trace);
}
