//! Model-based randomized tests of hazptr's raw layer: several
//! user domains created and dropped, guards taken, moved (swapped, boxed,
//! promoted), protecting with `protect_ptr` and `protect_raw`, reset and
//! dropped; objects published, unpublished, retired (`retire_box` and
//! `retire` with a deleter of our own), some of whose drops retire a child
//! object into the same domain; `reclaim`, `synchronize` (and freeing after
//! it), and domain drops. Every object counts its drops and checks, when
//! dropped, that it was retired and that no guard of its domain protects
//! it. After `reclaim` every retired, unprotected object of the domain is
//! freed (children retired by deleters during it included) and the count
//! returned is what it freed; after a domain's drop every object retired
//! into it is freed; nothing is freed twice.
//!
//! Every atomic access here is SeqCst: the tests check the library's
//! orderings, not their own bookkeeping's.
//!
//! `MODEL_SEED=N` runs one seed; `MODEL_SCALE=K` multiplies the seeds.
//! `MODEL_BROKEN=1` leaves out the wait before freeing (a `synchronize`),
//! which the concurrent test must then catch: a check that it can fail.
#![cfg(not(loom))]

use hazptr::{Domain, Guard, usable_slots_per_thread};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::Ordering::SeqCst;
use std::sync::atomic::{AtomicPtr, AtomicU32, AtomicUsize};
use test_support::model::{Rng, Trace, scale, seeds};

const LIVE: u32 = 0;
const RETIRED: u32 = 1;
const FREED: u32 = 2;
const MAX_OBJECTS: usize = 4096;

struct World {
    state: Vec<AtomicU32>,
    drops: Vec<AtomicU32>,
    /// (domain slot, address) of every guard's protection, as the model has it.
    prot: Mutex<Vec<(usize, usize)>>,
    addr_of: Vec<AtomicUsize>,
    domain_of: Vec<AtomicUsize>,
    violations: Mutex<Vec<String>>,
}

struct Obj {
    id: usize,
    _pad: u64,
    world: Arc<World>,
    /// A child retired into `domain` when this object is dropped.
    child: Option<(*mut Obj, *const Domain)>,
}

impl Drop for Obj {
    fn drop(&mut self) {
        let w = &self.world;
        let id = self.id;
        if w.drops[id].fetch_add(1, SeqCst) != 0 {
            w.violations
                .lock()
                .unwrap()
                .push(format!("object {id} dropped twice"));
        }
        let st = w.state[id].swap(FREED, SeqCst);
        if st != RETIRED {
            w.violations
                .lock()
                .unwrap()
                .push(format!("object {id} freed in state {st}"));
        }
        let me = (
            w.domain_of[id].load(SeqCst),
            std::ptr::from_ref(self).addr(),
        );
        if w.prot.lock().unwrap().contains(&me) {
            w.violations.lock().unwrap().push(format!(
                "object {id} freed while a guard of its domain protects it"
            ));
        }
        if let Some((child, domain)) = self.child.take() {
            // SAFETY: the child was never published and is retired once,
            // here. Its domain is alive: the deleter runs in a pass of that
            // domain, or in its drop, which frees what its deleters retire
            // into it meanwhile (a documented use). In the drop this reaches
            // the domain through a pointer older than the drop's `&mut`, the
            // aliasing for which miri's borrow models reject
            // domain.rs's `dropping_a_domain_frees_what_its_deleters_retire_into_it`.
            unsafe {
                let cid = (*child).id;
                w.state[cid].store(RETIRED, SeqCst);
                (*domain).retire_box(child);
            }
        }
    }
}

// SAFETY: the raw pointers are a child box, owned by the object, and a
// domain alive wherever a deleter runs (see the deleter above); the
// single-threaded test never sends one, and the concurrent test's objects
// have no child.
unsafe impl Send for Obj {}

/// A deleter of our own for `Domain::retire`.
///
/// # Safety
///
/// As `Domain::retire`'s deleter: `p` is an `Obj` box, unreachable to new
/// readers, freed once.
unsafe fn our_deleter(p: *mut Obj) {
    // SAFETY: retire's contract.
    drop(unsafe { Box::from_raw(p) });
}

/// A guard the model holds, boxed so that moving it moves only the box,
/// with the slot of the domain it belongs to and the address it protects.
struct HeldGuard {
    guard: Box<Guard<'static>>,
    domain: usize,
    protects: Option<usize>,
}

/// Records which (domain slot, address) pairs the held guards protect,
/// for the objects' drops to check against.
fn record_protections(guards: &[HeldGuard], world: &World) {
    *world.prot.lock().unwrap() = guards
        .iter()
        .filter_map(|g| g.protects.map(|a| (g.domain, a)))
        .collect();
}

/// A user domain the model created, boxed at a fixed address (the
/// deleters reach it through a pointer), with its id.
struct LiveDomain {
    domain: Box<Domain>,
    id: usize,
}

fn one_seed(seed: u64, ops: usize) -> usize {
    let mut trace = Trace::new(
        "-p hazptr --test model_raw",
        "raw_layer_matches_the_model",
        seed,
    );
    let mut rng = Rng::new(seed);
    let world = Arc::new(World {
        state: (0..MAX_OBJECTS).map(|_| AtomicU32::new(LIVE)).collect(),
        drops: (0..MAX_OBJECTS).map(|_| AtomicU32::new(0)).collect(),
        prot: Mutex::new(vec![]),
        addr_of: (0..MAX_OBJECTS).map(|_| AtomicUsize::new(0)).collect(),
        domain_of: (0..MAX_OBJECTS)
            .map(|_| AtomicUsize::new(usize::MAX))
            .collect(),
        violations: Mutex::new(vec![]),
    });
    let mut domains: Vec<Option<LiveDomain>> = Vec::new();
    let mut next_domain = 0usize;
    // Published objects: (object id, domain slot index, the source).
    let mut published: Vec<(usize, usize, Box<AtomicPtr<Obj>>)> = Vec::new();
    // Unpublished, still owned, not retired: (id, domain slot, ptr).
    let mut unpublished: Vec<(usize, usize, *mut Obj)> = Vec::new();
    let mut guards: Vec<HeldGuard> = Vec::new();
    let mut next_id = 0usize;
    let max_guards = usable_slots_per_thread() + 3;
    let check = |w: &World, trace_note: &str| {
        let v = w.violations.lock().unwrap();
        assert!(v.is_empty(), "{trace_note}: {v:?}");
    };
    let mut done = 0;
    for _ in 0..ops {
        if next_id + 4 >= MAX_OBJECTS {
            break;
        }
        done += 1;
        let live_domains: Vec<usize> = (0..domains.len())
            .filter(|&i| domains[i].is_some())
            .collect();
        record_protections(&guards, &world);
        let op = rng.below(14);
        match op {
            // Create a domain.
            0 if live_domains.len() < 3 => {
                let shared = rng.percent(70);
                let slow = rng.percent(20);
                let threshold = 1 + rng.below(8);
                trace.op(format!(
                    "domain {next_domain} shared_scan {shared} slow {slow} threshold {threshold}"
                ));
                let domain = Box::new(
                    Domain::builder()
                        .shared_scan(shared)
                        .force_slow_path(slow)
                        .retire_threshold(threshold)
                        .build(),
                );
                domains.push(Some(LiveDomain {
                    domain,
                    id: next_domain,
                }));
                next_domain += 1;
            }
            // Drop a domain: its guards first (they borrow it), its
            // published objects are unpublished and retired into it first.
            1 if !live_domains.is_empty() && rng.percent(30) => {
                let d = live_domains[rng.below(live_domains.len())];
                let did = domains[d].as_ref().unwrap().id;
                trace.op(format!("drop domain {did}"));
                guards.retain(|g| g.domain != d);
                record_protections(&guards, &world);
                let dom: &Domain = &domains[d].as_ref().unwrap().domain;
                let mut i = 0;
                while i < published.len() {
                    if published[i].1 == d {
                        let (id, _, src) = published.swap_remove(i);
                        let p = src.swap(std::ptr::null_mut(), SeqCst);
                        world.state[id].store(RETIRED, SeqCst);
                        // SAFETY: unpublished, retired once.
                        unsafe { dom.retire_box(p) };
                    } else {
                        i += 1;
                    }
                }
                unpublished.retain(|&(id, dd, p)| {
                    if dd == d {
                        world.state[id].store(RETIRED, SeqCst);
                        // SAFETY: unpublished, retired once.
                        unsafe { dom.retire_box(p) };
                        false
                    } else {
                        true
                    }
                });
                drop(domains[d].take());
                check(&world, "domain drop");
                for id in 0..next_id {
                    if world.domain_of[id].load(SeqCst) == d {
                        assert_eq!(
                            world.state[id].load(SeqCst),
                            FREED,
                            "seed {seed}: object {id} of dropped domain {did} not freed"
                        );
                    }
                }
            }
            // Publish a new object (maybe with a child).
            2 | 3 if !live_domains.is_empty() => {
                let d = live_domains[rng.below(live_domains.len())];
                let with_child = rng.percent(30);
                let id = next_id;
                next_id += 1;
                world.domain_of[id].store(d, SeqCst);
                let child = if with_child {
                    let cid = next_id;
                    next_id += 1;
                    world.domain_of[cid].store(d, SeqCst);
                    let c = Box::into_raw(Box::new(Obj {
                        id: cid,
                        _pad: 0,
                        world: world.clone(),
                        child: None,
                    }));
                    world.addr_of[cid].store(c.addr(), SeqCst);
                    let dom: *const Domain = &*domains[d].as_ref().unwrap().domain;
                    Some((c, dom))
                } else {
                    None
                };
                trace.op(format!(
                    "publish {id} in domain slot {d} child {with_child}"
                ));
                let p = Box::into_raw(Box::new(Obj {
                    id,
                    _pad: 0,
                    world: world.clone(),
                    child,
                }));
                world.addr_of[id].store(p.addr(), SeqCst);
                published.push((id, d, Box::new(AtomicPtr::new(p))));
            }
            // Take a guard in a domain.
            4 if !live_domains.is_empty() && guards.len() < max_guards => {
                let d = live_domains[rng.below(live_domains.len())];
                let dom: &Domain = &domains[d].as_ref().unwrap().domain;
                // SAFETY: the guard is dropped before its domain (the
                // domain drop above drops its guards first).
                let g: Guard<'static> =
                    unsafe { std::mem::transmute::<Guard<'_>, Guard<'static>>(dom.guard()) };
                trace.op(format!("guard in slot {d} -> g{}", guards.len()));
                guards.push(HeldGuard {
                    guard: Box::new(g),
                    domain: d,
                    protects: None,
                });
            }
            // Protect a published object with protect_ptr (or protect_raw).
            5 | 6 if !guards.is_empty() && !published.is_empty() => {
                let gi = rng.below(guards.len());
                let pi = rng.below(published.len());
                let g = &mut guards[gi];
                let (id, d, src) = &published[pi];
                let raw = rng.percent(40);
                trace.op(format!(
                    "g{gi} protects {id} (raw {raw}); same domain {}",
                    *d == g.domain
                ));
                let p = if raw {
                    let p = src.load(SeqCst);
                    // SAFETY: published; we are the only writer and do not unpublish in between.
                    unsafe { g.guard.protect_raw(p) };
                    p
                } else {
                    g.guard.protect_ptr(src)
                };
                g.protects = Some(p.addr());
                // SAFETY: published and (in its own domain) protected; with
                // one thread nothing frees it here anyway.
                assert_eq!(unsafe { (*p).id }, *id);
            }
            // Reset a guard.
            7 if !guards.is_empty() => {
                let gi = rng.below(guards.len());
                trace.op(format!("g{gi} reset"));
                let g = &mut guards[gi];
                g.protects = None;
                g.guard.reset();
            }
            // Drop a guard, or move one (swap places, unbox and rebox, promote).
            8 if !guards.is_empty() => {
                let gi = rng.below(guards.len());
                match rng.below(4) {
                    0 => {
                        trace.op(format!("drop g{gi}"));
                        drop(guards.swap_remove(gi));
                    }
                    1 => {
                        let gj = rng.below(guards.len());
                        trace.op(format!("swap g{gi} g{gj}"));
                        guards.swap(gi, gj);
                        if gi != gj {
                            let (a, b) = if gi < gj {
                                guards.split_at_mut(gj)
                            } else {
                                guards.split_at_mut(gi)
                            };
                            let (x, y) = (&mut a[gi.min(gj)], &mut b[0]);
                            std::mem::swap(&mut *x.guard, &mut *y.guard);
                            std::mem::swap(&mut x.domain, &mut y.domain);
                            std::mem::swap(&mut x.protects, &mut y.protects);
                        }
                    }
                    2 => {
                        trace.op(format!("move g{gi} out of its box and back"));
                        let g = guards.swap_remove(gi);
                        let inner: Guard<'static> = *g.guard;
                        let moved = vec![inner];
                        let inner = moved.into_iter().next().unwrap();
                        guards.push(HeldGuard {
                            guard: Box::new(inner),
                            domain: g.domain,
                            protects: g.protects,
                        });
                    }
                    _ => {
                        trace.op(format!("promote g{gi}"));
                        guards[gi].guard.promote();
                        assert!(guards[gi].guard.is_backup());
                    }
                }
            }
            // Unpublish an object (keep owning it).
            9 if !published.is_empty() => {
                let pi = rng.below(published.len());
                let (id, d, src) = published.swap_remove(pi);
                trace.op(format!("unpublish {id}"));
                let p = src.swap(std::ptr::null_mut(), SeqCst);
                unpublished.push((id, d, p));
            }
            // Retire an unpublished object (retire_box or our deleter).
            10 if !unpublished.is_empty() => {
                let ui = rng.below(unpublished.len());
                let (id, d, p) = unpublished.swap_remove(ui);
                let custom = rng.percent(50);
                trace.op(format!("retire {id} (custom deleter {custom})"));
                world.state[id].store(RETIRED, SeqCst);
                let dom: &Domain = &domains[d].as_ref().unwrap().domain;
                // SAFETY: unpublished, from Box::into_raw, retired once.
                unsafe {
                    if custom {
                        dom.retire(p, our_deleter);
                    } else {
                        dom.retire_box(p);
                    }
                }
            }
            // Synchronize on an unpublished object; free it after if it returns.
            11 if !unpublished.is_empty() => {
                let ui = rng.below(unpublished.len());
                let (id, d, p) = unpublished[ui];
                let dom: &Domain = &domains[d].as_ref().unwrap().domain;
                let mine = guards
                    .iter()
                    .any(|g| g.domain == d && g.protects == Some(p.addr()));
                trace.op(format!(
                    "synchronize {id} (protected by a guard of ours: {mine})"
                ));
                let r = catch_unwind(AssertUnwindSafe(|| dom.synchronize(p)));
                assert_eq!(
                    r.is_err(),
                    mine,
                    "seed {seed}: synchronize panics exactly when our guard protects it"
                );
                if r.is_ok() {
                    unpublished.swap_remove(ui);
                    world.state[id].store(RETIRED, SeqCst); // ours to free now
                    // SAFETY: unpublished, synchronized, freed once.
                    drop(unsafe { Box::from_raw(p) });
                }
            }
            // Reclaim a domain: exactly what no guard protects goes.
            12 | 13 if !live_domains.is_empty() => {
                let d = live_domains[rng.below(live_domains.len())];
                let dom: &Domain = &domains[d].as_ref().unwrap().domain;
                let before: Vec<u32> = (0..next_id).map(|i| world.state[i].load(SeqCst)).collect();
                let freed = dom.reclaim();
                trace.op(format!("reclaim slot {d} -> {freed}"));
                check(&world, "reclaim");
                let mut freed_here = 0;
                #[allow(clippy::needless_range_loop)] // ids index four tables
                for id in 0..next_id {
                    if world.domain_of[id].load(SeqCst) != d {
                        continue;
                    }
                    let st = world.state[id].load(SeqCst);
                    if st == FREED && before[id] != FREED {
                        freed_here += 1;
                    }
                    if st == RETIRED {
                        assert!(
                            world
                                .prot
                                .lock()
                                .unwrap()
                                .contains(&(d, world.addr_of[id].load(SeqCst))),
                            "seed {seed}: reclaim left retired, unprotected object {id}"
                        );
                    }
                }
                assert_eq!(freed, freed_here, "seed {seed}: reclaim's count");
                // After reclaim (which moved this thread's batch to the list)
                // the domain's unfreed count is what it kept.
                let kept = (0..next_id)
                    .filter(|&id| {
                        world.domain_of[id].load(SeqCst) == d
                            && world.state[id].load(SeqCst) == RETIRED
                    })
                    .count();
                assert_eq!(
                    dom.retired_len(),
                    kept,
                    "seed {seed}: retired_len after reclaim"
                );
            }
            _ => {}
        }
        check(&world, "after op");
    }
    // Teardown: guards, then everything published or owned retired, then domains.
    guards.clear();
    record_protections(&guards, &world);
    for (id, d, src) in published.drain(..) {
        world.state[id].store(RETIRED, SeqCst);
        // SAFETY: unpublished, retired once.
        unsafe {
            domains[d]
                .as_ref()
                .unwrap()
                .domain
                .retire_box(src.swap(std::ptr::null_mut(), SeqCst))
        };
    }
    for (id, d, p) in unpublished.drain(..) {
        world.state[id].store(RETIRED, SeqCst);
        // SAFETY: as above.
        unsafe { domains[d].as_ref().unwrap().domain.retire_box(p) };
    }
    domains.clear();
    check(&world, "teardown");
    for id in 0..next_id {
        assert_eq!(
            world.drops[id].load(SeqCst),
            1,
            "seed {seed}: object {id} drops"
        );
    }
    drop(trace);
    done
}

#[test]
fn raw_layer_matches_the_model() {
    // The synchronize calls this model expects to panic need no backtrace.
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if !info
            .to_string()
            .contains("it would wait for itself forever")
        {
            default(info);
        }
    }));
    let mut total = 0;
    for seed in seeds(300 * scale()) {
        total += one_seed(seed, 1500);
    }
    eprintln!("raw_layer_matches_the_model: {total} operations");
}

/// An object that is never deallocated: its "free" only marks it dead, so a
/// reader that finds it dead under protection is a failed check, not UB.
struct MortalCell {
    dead: std::sync::atomic::AtomicBool,
    frees: AtomicU32,
}

/// The deleter of the concurrent test: marks the cell dead and counts it.
///
/// # Safety
///
/// `p` is a cell of [`new_cell`], which is never deallocated.
unsafe fn mark_dead(p: *mut MortalCell) {
    // SAFETY: never deallocated.
    let c = unsafe { &*p };
    c.dead.store(true, SeqCst);
    c.frees.fetch_add(1, SeqCst);
}

fn new_cell(all: &Mutex<Vec<usize>>) -> *mut MortalCell {
    let p = Box::into_raw(Box::new(MortalCell {
        dead: std::sync::atomic::AtomicBool::new(false),
        frees: AtomicU32::new(0),
    }));
    all.lock().unwrap().push(p.addr());
    p
}

/// Several short-lived threads share two domains and four published
/// pointers per domain: readers protect (protect_ptr, or protect_raw with
/// validation, or a promoted guard) and check the object is not dead;
/// writers swap in new objects and retire the old (batched retires, which
/// exiting threads hand over), or synchronize then mark dead, and call
/// reclaim. At the end every object is freed exactly once (those still
/// published by us, the rest by passes, exits and the domains' drops).
#[test]
fn concurrent_raw_layer_invariants() {
    for seed in seeds(30 * scale()) {
        let all = Mutex::new(Vec::new());
        let violations = AtomicUsize::new(0);
        let domains: Vec<Domain> = (0..2)
            .map(|i| {
                Domain::builder()
                    .shared_scan(seed % 2 == 0)
                    .force_slow_path(i == 1 && seed % 3 == 0)
                    .retire_threshold(1 + (seed as usize % 5))
                    .build()
            })
            .collect();
        let srcs: Vec<Vec<AtomicPtr<MortalCell>>> = (0..2)
            .map(|_| (0..4).map(|_| AtomicPtr::new(new_cell(&all))).collect())
            .collect();
        std::thread::scope(|s| {
            for t in 0..4u64 {
                let (domains, srcs, all, violations) = (&domains, &srcs, &all, &violations);
                s.spawn(move || {
                    let mut rng = Rng::new(seed * 16 + t);
                    for _round in 0..6 {
                        // A short-lived thread: its registration and batches go at exit.
                        std::thread::scope(|s2| {
                            s2.spawn(|| {
                                let mut rng = Rng::new(rng.next());
                                for _ in 0..400 {
                                    let d = rng.below(2);
                                    let dom = &domains[d];
                                    let src = &srcs[d][rng.below(4)];
                                    match rng.below(10) {
                                        0..=4 => {
                                            let mut g = dom.guard();
                                            let p = match rng.below(3) {
                                                0 => g.protect_ptr(src),
                                                1 => loop {
                                                    let p = src.load(SeqCst);
                                                    // SAFETY: validated below before use.
                                                    unsafe { g.protect_raw(p) };
                                                    if src.load(SeqCst) == p {
                                                        break p;
                                                    }
                                                },
                                                _ => {
                                                    let p = g.protect_ptr(src);
                                                    g.promote();
                                                    p
                                                }
                                            };
                                            for _ in 0..rng.below(20) {
                                                std::hint::spin_loop();
                                            }
                                            // SAFETY: never deallocated.
                                            if unsafe { &*p }.dead.load(SeqCst) {
                                                violations.fetch_add(1, SeqCst);
                                                eprintln!(
                                                    "seed {seed}: a protected object was freed"
                                                );
                                            }
                                            drop(g);
                                        }
                                        5..=7 => {
                                            let old = src.swap(new_cell(all), SeqCst);
                                            // SAFETY: unpublished, retired once.
                                            unsafe { dom.retire(old, mark_dead) };
                                        }
                                        8 => {
                                            let old = src.swap(new_cell(all), SeqCst);
                                            // MODEL_BROKEN: skip the wait (self-check: the test must fail).
                                            if std::env::var_os("MODEL_BROKEN").is_none() {
                                                dom.synchronize(old);
                                            }
                                            // SAFETY: unpublished and synchronized.
                                            unsafe { mark_dead(old) };
                                        }
                                        _ => {
                                            dom.reclaim();
                                        }
                                    }
                                }
                            });
                        });
                    }
                });
            }
        });
        for (d, dom) in domains.into_iter().enumerate() {
            for src in &srcs[d] {
                // SAFETY: no guard remains; retire the last published.
                unsafe { dom.retire(src.swap(std::ptr::null_mut(), SeqCst), mark_dead) };
            }
            drop(dom);
        }
        assert_eq!(violations.load(SeqCst), 0, "seed {seed}");
        for &a in all.lock().unwrap().iter() {
            // SAFETY: never deallocated during the test.
            let c = unsafe { &*(a as *const MortalCell) };
            assert_eq!(
                c.frees.load(SeqCst),
                1,
                "seed {seed}: an object freed {} times",
                c.frees.load(SeqCst)
            );
        }
        for &a in all.lock().unwrap().iter() {
            // SAFETY: from Box::into_raw, dropped once here.
            drop(unsafe { Box::from_raw(a as *mut MortalCell) });
        }
    }
}
