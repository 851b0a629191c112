//! Model-based randomized tests of [`AtomicBox`]: seeded random sequences of
//! its operations, checked against a model after every step.
//!
//! The example-based tests elsewhere check one scenario each; these check
//! that any interleaving of the API's operations keeps its promises. The
//! values stored count their drops per instance id, so that the tests see
//! exactly when each one is freed.
//!
//! - `single_thread_matches_the_model`: one thread; a sequential model of
//!   the box (its current value), of every value's owner (the box, a
//!   `Replaced` we hold, a box we took back, the domain's retired list, or
//!   ourselves once dropped) and of the address each guard's slot holds.
//!   Every load returns the model's value; no value is dropped twice, none
//!   we own is dropped behind our back, a retired one is never freed while
//!   a guard's slot holds its address, `Domain::reclaim` frees exactly the
//!   retired values that no guard protects (and says how many), a
//!   `synchronize` panics exactly when a guard of the calling thread holds
//!   the address, guards past the thread's slots take backup slots, and the
//!   domain's drop (or, for the global domain, `reclaim` once no guard
//!   remains) frees everything that was retired.
//! - `concurrent_invariants_hold`: 2-4 threads on one box in a domain of
//!   their own, checked through invariants: a reader sees only values that
//!   were stored, never one that has been dropped while its guard holds it
//!   (each value's drop sets its flag, which the reader checks after every
//!   operation), and after the domain's drop every value was dropped
//!   exactly once.
//!
//! A failure prints the seed, the domain's options and the operations up to
//! it; `MODEL_SEED=N` runs that seed alone. The generator is a xorshift64*
//! written here (no property-testing crate is used).
#![cfg(not(loom))]

use hazptr::{AtomicBox, Domain, Guard, Replaced, usable_slots_per_thread};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use test_support::model::{CANARY, Rng, Trace, Tracked, Tracker};

/// Seeds of the single-thread model, and operations per seed.
/// (Few under miri, which interprets every step: `scripts/sanitize.sh`
/// runs these files there.)
const SEEDS: u64 = if cfg!(miri) { 2 } else { 200 };
const OPS: usize = if cfg!(miri) { 50 } else { 200 };
/// Seeds of the concurrent test, and operations per thread.
const CONCURRENT_SEEDS: u64 = if cfg!(miri) { 1 } else { 64 };
const CONCURRENT_OPS: usize = if cfg!(miri) { 40 } else { 300 };
/// Guards a thread may hold at once: past its block's slots, into backup
/// slots.
fn max_guards() -> usize {
    usable_slots_per_thread() + 3
}

/// Who owns a value, in the model.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Owner {
    /// The box's current value.
    Box,
    /// A `Replaced` the test holds.
    Replaced,
    /// A `Box` the test holds (taken, synchronized back, or refused by a
    /// failed exchange).
    Test,
    /// Retired to the domain: freed by it, once, when unprotected.
    Domain,
    /// Dropped by the test itself.
    Dropped,
}

struct Obj {
    addr: usize,
    owner: Owner,
    payload: u64,
    /// Seen freed by the domain (retired values only). Its address may then
    /// be a new value's, which a guard may hold: that protects the new value
    /// only.
    freed: bool,
}

/// What one guard holds, in the model.
#[derive(Clone, Copy, Default)]
struct GuardModel {
    /// The address in the guard's slot (`None`: null, reset, or fresh).
    slot: Option<usize>,
    /// The value the guard's last load returned, while the test may still
    /// read it through the pointer (until the test itself frees or mutates
    /// it).
    view: Option<(usize, *const Tracked)>,
}

struct Model<'d> {
    domain: &'d Domain,
    tracker: Arc<Tracker>,
    objs: Vec<Obj>,
    current: Option<usize>,
    guards: Vec<Guard<'d>>,
    gm: Vec<GuardModel>,
    replaced: Vec<(Replaced<'d, Tracked>, usize)>,
    /// Boxed, not moved out: a value keeps the address the model knows.
    #[allow(clippy::vec_box)]
    owned: Vec<Box<Tracked>>,
    payloads: u64,
    stats: Stats,
}

/// How often the runs met the cases worth meeting: the test fails if the
/// seeds stop reaching one of them.
#[derive(Debug, Default)]
struct Stats {
    backup_guards: usize,
    refused_synchronize: usize,
    kept_by_reclaim: usize,
    freed_by_reclaim: usize,
    failed_exchanges: usize,
    retired_under_a_guard: usize,
}

impl test_support::model::Coverage for Stats {
    fn add(&mut self, o: &Stats) {
        self.backup_guards += o.backup_guards;
        self.refused_synchronize += o.refused_synchronize;
        self.kept_by_reclaim += o.kept_by_reclaim;
        self.freed_by_reclaim += o.freed_by_reclaim;
        self.failed_exchanges += o.failed_exchanges;
        self.retired_under_a_guard += o.retired_under_a_guard;
    }

    fn assert_all_met(&self) {
        let Stats {
            backup_guards,
            refused_synchronize,
            kept_by_reclaim,
            freed_by_reclaim,
            failed_exchanges,
            retired_under_a_guard,
        } = *self;
        assert!(
            [
                backup_guards,
                refused_synchronize,
                kept_by_reclaim,
                freed_by_reclaim,
                failed_exchanges,
                retired_under_a_guard
            ]
            .iter()
            .all(|&n| n > 0),
            "the seeds no longer reach every case: {self:?}"
        );
    }
}

impl<'d> Model<'d> {
    fn new_value(&mut self) -> Box<Tracked> {
        self.payloads += 1;
        let value = Box::new(self.tracker.make(self.payloads));
        assert_eq!(value.id, self.objs.len(), "ids are dense");
        self.objs.push(Obj {
            addr: std::ptr::from_ref::<Tracked>(&value).addr(),
            owner: Owner::Test,
            payload: value.payload,
            freed: false,
        });
        value
    }

    fn cur_addr(&self) -> usize {
        self.current.map_or(0, |id| self.objs[id].addr)
    }

    /// Whether a guard of the test's slots holds `addr`.
    fn protected(&self, addr: usize) -> bool {
        self.gm.iter().any(|g| g.slot == Some(addr))
    }

    /// The test gives up its right to read `id` through a guard's pointer
    /// (it is about to free or mutate it).
    fn forget_views(&mut self, id: usize) {
        for g in &mut self.gm {
            if g.view.is_some_and(|(v, _)| v == id) {
                g.view = None;
            }
        }
    }

    fn set_owner(&mut self, id: usize, owner: Owner) {
        if owner == Owner::Domain && self.protected(self.objs[id].addr) {
            self.stats.retired_under_a_guard += 1;
        }
        self.objs[id].owner = owner;
    }

    /// The value now current in the box becomes `new` (an id of a value the
    /// test just handed over, or `None`); the old one goes to `old_owner`.
    fn publish(&mut self, new: Option<usize>, old_owner: Owner) -> Option<usize> {
        let old = self.current;
        if let Some(old) = old {
            self.set_owner(old, old_owner);
        }
        if let Some(new) = new {
            self.set_owner(new, Owner::Box);
        }
        self.current = new;
        old
    }

    /// Takes one more guard: on a block slot until the thread's usable ones
    /// are taken, then on a backup slot.
    fn new_guard(&mut self, trace: &mut Trace) {
        let on_blocks = self.guards.iter().filter(|g| !g.is_backup()).count();
        let g = self.domain.guard();
        let backup = g.is_backup();
        trace.op(format!(
            "guard #{} (backup: {backup}, {on_blocks} on the block)",
            self.guards.len()
        ));
        assert_eq!(
            backup,
            self.domain.forces_slow_path() || on_blocks >= usable_slots_per_thread(),
            "a new guard takes a backup slot exactly when the block's {} usable slots are taken",
            usable_slots_per_thread()
        );
        self.stats.backup_guards += usize::from(backup);
        self.guards.push(g);
        self.gm.push(GuardModel::default());
    }

    /// Drops a value the test owns, and records that.
    fn drop_owned(&mut self, value: Box<Tracked>) {
        let id = value.id;
        self.forget_views(id);
        drop(value);
        self.set_owner(id, Owner::Dropped);
        assert_eq!(self.tracker.drops(id), 1, "id {id}: dropped once, by us");
    }

    /// The checks that hold after every step.
    fn check(&mut self) {
        for id in 0..self.objs.len() {
            let obj = &self.objs[id];
            let drops = self.tracker.drops(id);
            match obj.owner {
                Owner::Box | Owner::Replaced | Owner::Test => assert_eq!(
                    drops, 0,
                    "id {id} ({:?}-owned, at {:#x}) was dropped by someone else",
                    obj.owner, obj.addr
                ),
                Owner::Dropped => assert_eq!(drops, 1, "id {id}: dropped more than once"),
                Owner::Domain => {
                    assert!(drops <= 1, "id {id}: retired and dropped {drops} times");
                    // Protections begin only with loads of the current
                    // value, so a slot holds a retired value's address
                    // either since before it was retired, or because a new
                    // value took the address after the retired one was
                    // freed (seen at an earlier step: nothing allocates
                    // between a free and the end of its step).
                    if !obj.freed && self.protected(obj.addr) {
                        assert_eq!(
                            drops, 0,
                            "id {id}: retired and freed while a guard's slot holds {:#x}",
                            obj.addr
                        );
                    }
                    self.objs[id].freed = drops == 1;
                }
            }
        }
        for (i, g) in self.gm.iter().enumerate() {
            if let Some((id, ptr)) = g.view {
                assert_eq!(
                    self.tracker.drops(id),
                    0,
                    "guard {i}: id {id} was dropped while the guard protected it"
                );
                // SAFETY: the guard still protects `ptr` (its view is
                // cleared whenever its slot changes), the object was not
                // dropped (checked just above: no free before its drop), and
                // the test has not created a `&mut` to it since the load
                // (`forget_views` before `get_mut`, `take` and our drops).
                let (seen, canary) = unsafe { ((*ptr).id, (*ptr).canary) };
                assert_eq!((seen, canary), (id, CANARY), "guard {i}: id {id} corrupted");
            }
        }
        assert_eq!(self.guards.len(), self.gm.len());
    }
}

/// A user domain's options, or the global domain, drawn for one seed.
fn domain_for(rng: &mut Rng, config: &mut String) -> Option<Domain> {
    if rng.percent(15) {
        *config = " (the global domain)".into();
        return None;
    }
    let shared = rng.percent(60);
    let slow = rng.percent(25);
    let threshold = if rng.percent(50) {
        1 + rng.below(4)
    } else {
        1000
    };
    *config = format!(
        " (Domain::builder().shared_scan({shared}).force_slow_path({slow}).retire_threshold({threshold}))"
    );
    Some(
        Domain::builder()
            .shared_scan(shared)
            .force_slow_path(slow)
            .retire_threshold(threshold)
            .build(),
    )
}

/// A `synchronize`-like call that must panic exactly when `expect_panic`.
fn expect_self_wait_refusal<R>(
    expect_panic: bool,
    what: &str,
    call: impl FnOnce() -> R,
) -> Option<R> {
    match catch_unwind(AssertUnwindSafe(call)) {
        Ok(r) => {
            assert!(
                !expect_panic,
                "{what}: returned although a guard of this thread holds the address"
            );
            Some(r)
        }
        Err(payload) => {
            let message = test_support::misuse::message_of(&*payload);
            assert!(
                expect_panic,
                "{what}: panicked with no guard of this thread on the address: {message}"
            );
            assert!(
                message.contains("holds a guard protecting"),
                "{what}: {message}"
            );
            None
        }
    }
}

fn one_seed(seed: u64) -> Stats {
    let mut rng = Rng::new(seed);
    let mut trace = Trace::new(
        "-p hazptr --test model_atomic_box",
        "single_thread_matches_the_model",
        seed,
    );
    let mut user_domain = domain_for(&mut rng, &mut trace.config);
    let tracker = Tracker::new(OPS * 2 + 8);
    let domain = user_domain.as_ref().unwrap_or(Domain::global());
    let (ids, stats) = run_ops(domain, &tracker, &mut rng, &mut trace);
    // Everything retired to a user domain is freed when it is dropped; the
    // global domain frees it on the first pass once no guard remains.
    match user_domain.take() {
        Some(d) => {
            trace.op("drop the domain".into());
            drop(d);
        }
        None => {
            let freed = hazptr::reclaim();
            trace.op(format!("hazptr::reclaim() -> {freed}"));
        }
    }
    assert_eq!(tracker.made(), ids, "every value was made by the model");
    for id in 0..ids {
        assert_eq!(
            tracker.drops(id),
            1,
            "id {id}: dropped {} times by the end",
            tracker.drops(id)
        );
    }
    drop(trace);
    stats
}

/// Runs the operations of one seed; returns how many values it made, and
/// how often it met the cases of [`Stats`].
fn run_ops(
    domain: &Domain,
    tracker: &Arc<Tracker>,
    rng: &mut Rng,
    trace: &mut Trace,
) -> (usize, Stats) {
    let mut m = Model {
        domain,
        tracker: Arc::clone(tracker),
        objs: Vec::new(),
        current: None,
        guards: Vec::new(),
        gm: Vec::new(),
        replaced: Vec::new(),
        owned: Vec::new(),
        payloads: 0,
        stats: Stats::default(),
    };
    let first = if rng.percent(85) {
        let v = m.new_value();
        let id = v.id;
        m.set_owner(id, Owner::Box);
        m.current = Some(id);
        Some(v)
    } else {
        None
    };
    let mut b = AtomicBox::from_box_in(first, domain);
    trace.op(format!("from_box_in({:?})", m.current));
    for _ in 0..OPS {
        step(&mut m, &mut b, rng, trace);
        m.check();
    }
    // Wind down: everything the test holds goes back, then the box.
    for (r, id) in std::mem::take(&mut m.replaced) {
        trace.op(format!("end: retire Replaced id {id}"));
        drop(r);
        m.set_owner(id, Owner::Domain);
        m.check();
    }
    for v in std::mem::take(&mut m.owned) {
        trace.op(format!("end: drop owned id {}", v.id));
        m.drop_owned(v);
    }
    trace.op("end: drop every guard".into());
    m.guards.clear();
    m.gm.clear();
    m.check();
    let current = m.current;
    trace.op(format!("end: drop the box (current {current:?})"));
    drop(b);
    if let Some(id) = current {
        assert_eq!(
            tracker.drops(id),
            1,
            "the box's drop drops its value: id {id}"
        );
        m.set_owner(id, Owner::Dropped);
    }
    m.check();
    (m.objs.len(), m.stats)
}

fn step<'d>(m: &mut Model<'d>, b: &mut AtomicBox<'d, Tracked>, rng: &mut Rng, trace: &mut Trace) {
    let n_guards = m.guards.len();
    match rng.below(22) {
        // New guards (a burst of them to past the block's slots, or one),
        // or drop every guard.
        0 | 1 => {
            let burst = rng.percent(30);
            if n_guards == max_guards() || (n_guards > 0 && rng.percent(20)) {
                trace.op("drop every guard".into());
                m.guards.clear();
                m.gm.clear();
            }
            while m.guards.len() < max_guards() {
                m.new_guard(trace);
                if !burst {
                    break;
                }
            }
        }
        // Load through a guard (and keep the protection).
        2..=5 if n_guards > 0 => {
            let i = rng.below(n_guards);
            let want = m.current.map(|id| (id, m.objs[id].payload, CANARY));
            let loaded = b.load(&mut m.guards[i]);
            let seen = loaded.map(|v| (v.id, std::ptr::from_ref(v)));
            trace.op(format!("load via guard {i} -> {:?}", seen.map(|s| s.0)));
            assert_eq!(
                loaded.map(|v| (v.id, v.payload, v.canary)),
                want,
                "load: (id, payload, canary) vs the model's"
            );
            m.gm[i] = GuardModel {
                slot: seen.map(|(_, p)| p.addr()),
                view: seen,
            };
        }
        6 if n_guards > 0 => {
            let i = rng.below(n_guards);
            if rng.percent(50) {
                trace.op(format!("drop guard {i}"));
                drop(m.guards.remove(i));
                m.gm.remove(i);
            } else {
                trace.op(format!("reset guard {i}"));
                m.guards[i].reset();
                m.gm[i] = GuardModel::default();
            }
        }
        7 if n_guards > 0 => {
            let i = rng.below(n_guards);
            trace.op(format!("promote guard {i}"));
            m.guards[i].promote();
            assert!(
                m.guards[i].is_backup(),
                "a promoted guard is on a backup slot"
            );
        }
        8 => {
            trace.op("scoped".into());
            let cur = m.current.map(|id| (id, m.objs[id].payload));
            hazptr::scoped(b, |v| {
                assert_eq!(
                    v.map(|v| (v.id, v.payload)),
                    cur,
                    "scoped: (id, payload) vs the model's"
                );
            });
        }
        // store: the old value is retired.
        9 | 10 => {
            let new = if rng.percent(90) {
                Some(m.new_value())
            } else {
                None
            };
            let new_id = new.as_ref().map(|v| v.id);
            trace.op(format!("store({new_id:?}) over {:?}", m.current));
            b.store(new);
            m.publish(new_id, Owner::Domain);
        }
        // swap: the old value comes back as a `Replaced`.
        11 | 12 => {
            let new = if rng.percent(90) {
                Some(m.new_value())
            } else {
                None
            };
            let new_id = new.as_ref().map(|v| v.id);
            let old = b.swap(new);
            trace.op(format!(
                "swap({new_id:?}) -> {:?}",
                old.as_ref().map(|r| r.id)
            ));
            let old_id = m.publish(new_id, Owner::Replaced);
            match (old, old_id) {
                (None, None) => {}
                (Some(r), Some(id)) => {
                    assert_eq!(
                        (r.id, r.as_ptr().addr()),
                        (id, m.objs[id].addr),
                        "swap: the old value"
                    );
                    m.replaced.push((r, id));
                }
                (r, id) => panic!(
                    "swap returned {:?}, the model's old value is {id:?}",
                    r.map(|r| r.id)
                ),
            }
        }
        // compare_exchange, against the current pointer or another one.
        13..=15 => {
            let cur = m.cur_addr();
            let comparand = match rng.below(4) {
                0 | 1 => cur,
                2 => 0,
                _ if m.objs.is_empty() => cur,
                _ => m.objs[rng.below(m.objs.len())].addr,
            };
            let new = if rng.percent(85) {
                Some(m.new_value())
            } else {
                None
            };
            let new_id = new.as_ref().map(|v| v.id);
            let result = b.compare_exchange(std::ptr::without_provenance(comparand), new);
            trace.op(format!(
                "compare_exchange({comparand:#x} (current {cur:#x}), {new_id:?}) -> {}",
                if result.is_ok() { "Ok" } else { "Err" }
            ));
            match result {
                Ok(old) => {
                    assert_eq!(
                        comparand, cur,
                        "compare_exchange succeeded against a stale pointer"
                    );
                    let old_id = m.publish(new_id, Owner::Replaced);
                    assert_eq!(
                        old.as_ref().map(|r| r.id),
                        old_id,
                        "compare_exchange: the old value"
                    );
                    if let Some(r) = old {
                        let id = r.id;
                        if rng.percent(50) {
                            trace.op(format!("  retire Replaced id {id} at once"));
                            drop(r);
                            m.set_owner(id, Owner::Domain);
                        } else {
                            m.replaced.push((r, id));
                        }
                    }
                }
                Err(e) => {
                    m.stats.failed_exchanges += 1;
                    assert_ne!(
                        comparand, cur,
                        "compare_exchange failed against the current pointer"
                    );
                    assert_eq!(
                        e.current.addr(),
                        cur,
                        "compare_exchange: the pointer it found"
                    );
                    assert_eq!(
                        e.new.as_ref().map(|v| v.id),
                        new_id,
                        "compare_exchange hands `new` back"
                    );
                    if let Some(v) = e.new {
                        if rng.percent(50) {
                            m.owned.push(v);
                        } else {
                            m.drop_owned(v);
                        }
                    }
                }
            }
        }
        // Give back a `Replaced`: retire it, or synchronize and take it.
        16 | 17 if !m.replaced.is_empty() => {
            let (r, id) = m.replaced.swap_remove(rng.below(m.replaced.len()));
            assert_eq!(r.id, id, "a Replaced dereferences to its value");
            if rng.percent(40) {
                trace.op(format!("retire Replaced id {id}"));
                r.retire();
                m.set_owner(id, Owner::Domain);
            } else {
                let held = m.protected(m.objs[id].addr);
                trace.op(format!(
                    "Replaced::synchronize id {id} (held by a guard here: {held})"
                ));
                match expect_self_wait_refusal(held, "Replaced::synchronize", || r.synchronize()) {
                    Some(v) => {
                        assert_eq!(v.id, id, "synchronize hands back its value");
                        m.set_owner(id, Owner::Test);
                        m.owned.push(v);
                    }
                    // The unwind retired it.
                    None => {
                        m.stats.refused_synchronize += 1;
                        m.set_owner(id, Owner::Domain);
                    }
                }
            }
        }
        18 if !m.owned.is_empty() => {
            let v = m.owned.swap_remove(rng.below(m.owned.len()));
            trace.op(format!("drop owned id {}", v.id));
            m.drop_owned(v);
        }
        // A reclamation pass frees exactly the unprotected retired values.
        19 => {
            let before: Vec<u32> = (0..m.objs.len()).map(|id| m.tracker.drops(id)).collect();
            let freed = m.domain.reclaim();
            trace.op(format!("reclaim() -> {freed}"));
            let mut newly = 0;
            for (id, obj) in m.objs.iter().enumerate() {
                let drops = m.tracker.drops(id);
                if obj.owner != Owner::Domain {
                    continue;
                }
                if obj.freed {
                    continue;
                }
                let protected = m.protected(obj.addr);
                assert_eq!(
                    drops,
                    u32::from(!protected),
                    "reclaim: retired id {id} at {:#x} (a guard holds it: {protected}) dropped {drops} times",
                    obj.addr
                );
                newly += usize::from(before[id] == 0 && drops == 1);
                m.stats.kept_by_reclaim += usize::from(protected);
            }
            assert_eq!(freed, newly, "reclaim's count of the values it freed");
            m.stats.freed_by_reclaim += freed;
        }
        // synchronize an address: panics exactly when a guard here holds it.
        20 => {
            let addr = match rng.below(3) {
                0 => m.cur_addr(),
                _ if m.objs.is_empty() => 0,
                _ => m.objs[rng.below(m.objs.len())].addr,
            };
            let held = addr != 0 && m.protected(addr);
            trace.op(format!(
                "Domain::synchronize({addr:#x}) (held by a guard here: {held})"
            ));
            let p: *const Tracked = std::ptr::without_provenance(addr);
            if expect_self_wait_refusal(held, "Domain::synchronize", || m.domain.synchronize(p))
                .is_none()
            {
                m.stats.refused_synchronize += 1;
            }
        }
        // `&mut` access: take the value out, change it in place, or the raw
        // exchange that a data structure uses.
        _ => match rng.below(3) {
            0 => {
                let taken = b.take();
                trace.op(format!("take() -> {:?}", taken.as_ref().map(|v| v.id)));
                let old = m.publish(None, Owner::Test);
                assert_eq!(taken.as_ref().map(|v| v.id), old, "take: the current value");
                if let Some(v) = taken {
                    m.forget_views(v.id);
                    if rng.percent(50) {
                        m.owned.push(v);
                    } else {
                        m.drop_owned(v);
                    }
                }
            }
            1 => {
                if let Some(id) = m.current {
                    m.forget_views(id);
                }
                let v = b.get_mut();
                trace.op(format!(
                    "get_mut() -> {:?}, payload += 1000",
                    v.as_ref().map(|v| v.id)
                ));
                if let Some(v) = v {
                    v.payload += 1000;
                }
                if let Some(id) = m.current {
                    m.objs[id].payload += 1000;
                }
            }
            _ => {
                let cur = b.load_ptr();
                assert_eq!(cur.addr(), m.cur_addr(), "load_ptr");
                let new = Box::into_raw(m.new_value());
                // SAFETY: `new` is a fresh `Box::into_raw` pointer the box may
                // own from now on; the old pointer, unpublished by the
                // exchange, is retired below exactly once.
                let exchanged = unsafe { b.compare_exchange_ptr(cur, new) };
                // SAFETY: `new` came from `Box::into_raw` above.
                let new_id = unsafe { (*new).id };
                trace.op(format!(
                    "compare_exchange_ptr(current, {new_id}) + retire_ptr(old)"
                ));
                let old = exchanged.expect("nobody else changes the box");
                m.publish(Some(new_id), Owner::Domain);
                if !old.is_null() {
                    // SAFETY: `old` is the `Box::into_raw` pointer the box
                    // owned until the exchange unpublished it; retired once.
                    unsafe { b.retire_ptr(old) };
                }
            }
        },
    }
}

#[test]
fn single_thread_matches_the_model() {
    test_support::model::each_seed_meeting_every_case(
        "single_thread_matches_the_model (a synchronize or reclaim that never returned)",
        SEEDS,
        one_seed,
    );
}

#[test]
fn concurrent_invariants_hold() {
    test_support::model::each_seed(
        "concurrent_invariants_hold (a synchronize or reclaim that never returned)",
        CONCURRENT_SEEDS,
        concurrent_seed,
    );
}

fn concurrent_seed(seed: u64) {
    let mut rng = Rng::new(seed ^ 0xc0ff_ee00_c0ff_ee00);
    let threads = 2 + rng.below(3);
    let shared = rng.percent(70);
    let slow = rng.percent(25);
    let threshold = if rng.percent(50) {
        1 + rng.below(4)
    } else {
        1000
    };
    let config = format!(
        "{threads} threads, Domain::builder().shared_scan({shared}).force_slow_path({slow})\
         .retire_threshold({threshold})"
    );
    let domain = Domain::builder()
        .shared_scan(shared)
        .force_slow_path(slow)
        .retire_threshold(threshold)
        .build();
    // Each operation makes at most one value that it keeps; a failed
    // exchange makes one per retry.
    let tracker = Tracker::new(threads * CONCURRENT_OPS * 64 + 1);
    {
        let first = Box::new(tracker.make(0));
        tracker.mark_stored(&first);
        let b = AtomicBox::from_box_in(Some(first), &domain);
        std::thread::scope(|s| {
            for t in 0..threads {
                let thread_seed = rng.next();
                let (b, tracker, config) = (&b, &tracker, &config);
                s.spawn(move || worker(seed, t, thread_seed, b, tracker, config));
            }
        });
    }
    drop(domain);
    for id in 0..tracker.made() {
        assert_eq!(
            tracker.drops(id),
            1,
            "seed {seed} ({config}): id {id} dropped {} times once the domain was dropped",
            tracker.drops(id)
        );
    }
}

/// One thread of the concurrent test: random operations, and after each
/// the check that no value any of its guards loaded has been dropped.
fn worker(
    seed: u64,
    t: usize,
    thread_seed: u64,
    b: &AtomicBox<'_, Tracked>,
    tracker: &Arc<Tracker>,
    config: &str,
) {
    let mut rng = Rng::new(thread_seed);
    let mut trace = Trace::new(
        "-p hazptr --test model_atomic_box",
        "concurrent_invariants_hold",
        seed,
    );
    trace.config = format!(" ({config}; this is thread {t})");
    let domain = b.domain();
    let mut guards: Vec<Guard<'_>> = Vec::new();
    // The value each guard's last load returned (its slot holds its
    // address).
    let mut views: Vec<Option<(usize, *const Tracked)>> = Vec::new();
    let new_value = |rng: &mut Rng| {
        (!rng.percent(5)).then(|| {
            let v = Box::new(tracker.make(0));
            tracker.mark_stored(&v);
            v
        })
    };
    let check_seen = |v: &Tracked, what: &str| {
        assert!(
            tracker.was_stored(v.id),
            "{what}: id {} was never stored",
            v.id
        );
        assert_eq!(
            tracker.drops(v.id),
            0,
            "{what}: id {} loaded after its drop",
            v.id
        );
        assert_eq!(v.canary, CANARY, "{what}: id {} corrupted", v.id);
    };
    for _ in 0..CONCURRENT_OPS {
        match rng.below(12) {
            0 if guards.len() < max_guards() => {
                trace.op(format!("guard #{}", guards.len()));
                guards.push(domain.guard());
                views.push(None);
            }
            1 if !guards.is_empty() => {
                let i = rng.below(guards.len());
                trace.op(format!("drop guard {i}"));
                drop(guards.remove(i));
                views.remove(i);
            }
            2..=4 if !guards.is_empty() => {
                let i = rng.below(guards.len());
                let loaded = b.load(&mut guards[i]);
                if let Some(v) = loaded {
                    check_seen(v, "load");
                }
                views[i] = loaded.map(|v| (v.id, std::ptr::from_ref(v)));
                trace.op(format!("load via guard {i} -> {:?}", views[i].map(|v| v.0)));
            }
            5 => {
                let new = new_value(&mut rng);
                trace.op(format!("store({:?})", new.as_ref().map(|v| v.id)));
                b.store(new);
            }
            6 | 7 => {
                let new = new_value(&mut rng);
                let new_id = new.as_ref().map(|v| v.id);
                let old = b.swap(new);
                let old_id = old.as_ref().map(|r| r.id);
                trace.op(format!("swap({new_id:?}) -> {old_id:?}"));
                let Some(r) = old else { continue };
                check_seen(&r, "swap's old value");
                if rng.percent(30) {
                    trace.op("  drop every guard".into());
                    guards.clear();
                    views.clear();
                }
                // No synchronize while holding guards: two threads that
                // each wait for the other's guard would never return.
                if guards.is_empty() && rng.percent(60) {
                    let v = r.synchronize();
                    trace.op(format!("  synchronize -> id {}, dropped by us", v.id));
                    check_seen(&v, "synchronized value");
                    let id = v.id;
                    drop(v);
                    assert_eq!(
                        tracker.drops(id),
                        1,
                        "id {id}: the synchronized value, dropped once"
                    );
                } else {
                    trace.op("  retire".into());
                    r.retire();
                }
            }
            // A read-modify-write loop, as AtomicBox::compare_exchange's docs
            // show it.
            8 => {
                let mut g = domain.guard();
                let mut tries = 0;
                loop {
                    tries += 1;
                    let seen = b.load(&mut g);
                    if let Some(v) = seen {
                        check_seen(v, "compare_exchange loop's load");
                    }
                    let cur = seen.map_or(std::ptr::null(), std::ptr::from_ref);
                    let payload = seen.map_or(0, |v| v.payload + 1);
                    let new = Box::new(tracker.make(payload));
                    tracker.mark_stored(&new);
                    match b.compare_exchange(cur, Some(new)) {
                        Ok(old) => {
                            trace.op(format!("compare_exchange loop: {tries} tries"));
                            drop(old);
                            break;
                        }
                        Err(e) => {
                            let id = e.new.as_ref().map(|v| v.id);
                            drop(e.new);
                            if let Some(id) = id {
                                assert_eq!(tracker.drops(id), 1, "a refused value is ours");
                            }
                            assert!(tries < 60, "compare_exchange loop: {tries} tries");
                        }
                    }
                }
            }
            9 => {
                let freed = domain.reclaim();
                trace.op(format!("reclaim() -> {freed}"));
            }
            _ => {
                trace.op("scoped".into());
                hazptr::scoped(b, |v| {
                    if let Some(v) = v {
                        check_seen(v, "scoped");
                    }
                });
                std::thread::yield_now();
            }
        }
        for (i, view) in views.iter().enumerate() {
            if let Some((id, ptr)) = *view {
                assert_eq!(
                    tracker.drops(id),
                    0,
                    "guard {i} of thread {t}: id {id} dropped while the guard protects it"
                );
                // SAFETY: guard `i` protects `ptr` (its slot holds it since
                // the load), and the value was not dropped (checked above),
                // so not freed; nobody writes to it through `&mut` (no
                // thread calls `get_mut` or `take` on a shared box).
                let (seen, canary) = unsafe { ((*ptr).id, (*ptr).canary) };
                assert_eq!(
                    (seen, canary),
                    (id, CANARY),
                    "guard {i} of thread {t}: id {id}"
                );
            }
        }
    }
    drop(guards);
    drop(trace);
}
