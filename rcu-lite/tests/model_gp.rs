//! Randomized grace-period tests of rcu-lite's raw API: memb
//! readers (nested sections, short-lived threads that register on first
//! use and unregister at exit) and qsbr readers (register, read sections,
//! quiescent states, offline/online, while_offline, drop of the
//! registration), against updaters that replace a published node and end
//! the old one's life through `call_rcu`, `synchronize_rcu`,
//! `synchronize_rcu_expedited`, the polled API (`get_state`/`start_poll` +
//! `poll_state`/`cond_synchronize`), checking that no reader ever sees a
//! node marked dead inside a section that began while it was published,
//! and that `rcu_barrier` returns only after every callback queued before
//! it has run. Nodes are only marked dead, never freed, so a violation is
//! a failed check, not undefined behaviour.
//!
//! Every atomic access here is SeqCst: the tests check the library's
//! orderings, not their own bookkeeping's.
//!
//! `MODEL_SEED=N` runs one seed; `MODEL_SCALE=K` multiplies the work.
//! `MODEL_BROKEN=1` leaves out the wait before freeing (a `synchronize`),
//! which the concurrent test must then catch: a check that it can fail.
#![cfg(not(loom))]

use rcu_lite::{memb, qsbr};
use std::sync::atomic::Ordering::SeqCst;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, AtomicUsize};
use test_support::model::{Rng, scale, seeds};

struct Node {
    dead: AtomicBool,
    generation: u64,
}

fn leak(generation: u64) -> *mut Node {
    Box::into_raw(Box::new(Node {
        dead: AtomicBool::new(false),
        generation,
    }))
}

struct Shared {
    cur: AtomicPtr<Node>,
    violations: AtomicUsize,
    /// Per updater: callbacks it queued, and how many of them ran.
    callbacks_queued: [AtomicU64; 2],
    callbacks_run: [AtomicU64; 2],
    stop: AtomicBool,
    read_sections: AtomicU64,
}

fn read_check(sh: &Shared, rng: &mut Rng, what: &str) {
    let p = sh.cur.load(SeqCst);
    // SAFETY: nodes are never freed.
    let n = unsafe { &*p };
    for _ in 0..rng.below(4) {
        std::hint::spin_loop();
        if rng.percent(5) {
            std::thread::yield_now();
        }
    }
    if n.dead.load(SeqCst) {
        eprintln!(
            "VIOLATION ({what}): node generation {} died inside a read section that saw it published",
            n.generation
        );
        sh.violations.fetch_add(1, SeqCst);
    }
    sh.read_sections.fetch_add(1, SeqCst);
}

fn memb_reader(sh: &Shared, seed: u64) {
    let mut rng = Rng::new(seed);
    while !sh.stop.load(SeqCst) {
        let g = memb::read_lock();
        read_check(sh, &mut rng, "memb");
        if rng.percent(30) {
            let g2 = memb::read_lock();
            read_check(sh, &mut rng, "memb nested");
            let p_outer = sh.cur.load(SeqCst);
            drop(g2);
            // Still inside the outer section: the node we saw stays alive.
            for _ in 0..rng.below(50) {
                std::hint::spin_loop();
            }
            // SAFETY: never freed.
            if unsafe { &*p_outer }.dead.load(SeqCst) {
                eprintln!(
                    "VIOLATION: node died after the inner section ended, inside the outer one"
                );
                sh.violations.fetch_add(1, SeqCst);
            }
        }
        drop(g);
        if rng.below(1000) == 0 {
            // Exit: the thread's registration is given back (about every
            // thousand sections, so that readers are there for most
            // updates, and threads still come and go).
            return;
        }
    }
}

fn qsbr_reader(sh: &Shared, seed: u64) {
    let mut rng = Rng::new(seed);
    let mut t = qsbr::QsbrThread::register();
    while !sh.stop.load(SeqCst) {
        {
            let _g = t.read_lock();
            read_check(sh, &mut rng, "qsbr");
        }
        match rng.below(10) {
            0..=5 => t.quiescent_state(),
            6 => t.while_offline(std::thread::yield_now),
            7 => {
                let off = t.offline();
                std::thread::yield_now();
                t = off.online();
            }
            // Drop the registration, about every two thousand loops.
            8 if rng.below(200) == 0 => return,
            _ => {}
        }
    }
}

fn retire_node(sh: &'static Shared, u: usize, old: *mut Node, how: usize, flavor_memb: bool) {
    let old_addr = old as usize;
    let kill = move || {
        // SAFETY: never freed.
        unsafe { &*(old_addr as *const Node) }
            .dead
            .store(true, SeqCst);
    };
    match (how, flavor_memb) {
        (0, true) => {
            sh.callbacks_queued[u].fetch_add(1, SeqCst);
            memb::call_rcu(move || {
                kill();
                sh.callbacks_run[u].fetch_add(1, SeqCst);
            });
        }
        (0, false) => {
            sh.callbacks_queued[u].fetch_add(1, SeqCst);
            qsbr::call_rcu(move || {
                kill();
                sh.callbacks_run[u].fetch_add(1, SeqCst);
            });
        }
        (1, true) => {
            if std::env::var_os("MODEL_BROKEN").is_none() {
                memb::synchronize_rcu();
            }
            kill();
        }
        (1, false) => {
            if std::env::var_os("MODEL_BROKEN").is_none() {
                qsbr::synchronize_rcu();
            }
            kill();
        }
        (2, true) => {
            memb::synchronize_rcu_expedited();
            kill();
        }
        (2, false) => {
            qsbr::synchronize_rcu_expedited();
            kill();
        }
        (3, true) => {
            let s = memb::get_state_synchronize_rcu();
            memb::cond_synchronize_rcu(s);
            kill();
        }
        (3, false) => {
            let s = qsbr::get_state_synchronize_rcu();
            qsbr::cond_synchronize_rcu(s);
            kill();
        }
        (_, true) => {
            let s = memb::start_poll_synchronize_rcu();
            while !memb::poll_state_synchronize_rcu(s) {
                std::thread::yield_now();
            }
            kill();
        }
        (_, false) => {
            let s = qsbr::start_poll_synchronize_rcu();
            while !qsbr::poll_state_synchronize_rcu(s) {
                std::thread::yield_now();
            }
            kill();
        }
    }
}

fn run(seed: u64, flavor_memb: bool, updates: usize) -> (u64, u64) {
    let sh: &'static Shared = Box::leak(Box::new(Shared {
        cur: AtomicPtr::new(leak(0)),
        violations: AtomicUsize::new(0),
        callbacks_queued: [AtomicU64::new(0), AtomicU64::new(0)],
        callbacks_run: [AtomicU64::new(0), AtomicU64::new(0)],
        stop: AtomicBool::new(false),
        read_sections: AtomicU64::new(0),
    }));
    // Per seed: quick_qs on or off, adaptive or fixed-interval FQS, and
    // sometimes the grace-period worker started up front.
    let config = rcu_lite::GpConfig {
        quick_qs: seed.is_multiple_of(2),
        fqs: if seed.is_multiple_of(3) {
            rcu_lite::Fqs::FixedInterval(std::time::Duration::from_micros(200 + seed % 7 * 100))
        } else {
            rcu_lite::Fqs::Adaptive
        },
    };
    if flavor_memb {
        memb::configure(config);
        if seed % 5 == 1 {
            memb::start_grace_period_worker();
        }
    } else {
        qsbr::configure(config);
        if seed % 5 == 1 {
            qsbr::start_grace_period_worker();
        }
    }
    let readers = 1 + (seed % 3) as usize;
    let mut generation = 1u64;
    let mut handles = vec![];
    let spawn_reader = |i: u64| {
        let s = seed * 1000 + i;
        if flavor_memb {
            std::thread::spawn(move || memb_reader(sh, s))
        } else {
            std::thread::spawn(move || qsbr_reader(sh, s))
        }
    };
    for i in 0..readers {
        handles.push(spawn_reader(i as u64));
    }
    let updaters = 2;
    let updaters_left = AtomicUsize::new(updaters as usize);
    let updaters_left = &updaters_left;
    std::thread::scope(|s| {
        for u in 0..updaters {
            let mut rng = Rng::new(seed ^ (u + 77));
            s.spawn(move || {
                for i in 0..updates {
                    let new = leak((u << 32) + i as u64 + 1);
                    let old = sh.cur.swap(new, SeqCst);
                    retire_node(sh, u as usize, old, rng.below(5), flavor_memb);
                    if rng.percent(3) {
                        // Every callback queued before the barrier has run after it.
                        let queued = sh.callbacks_queued[u as usize].load(SeqCst);
                        if flavor_memb {
                            memb::rcu_barrier()
                        } else {
                            qsbr::rcu_barrier()
                        }
                        let ran = sh.callbacks_run[u as usize].load(SeqCst);
                        assert!(
                            ran >= queued,
                            "seed {seed}: rcu_barrier returned with {ran} of {queued} callbacks run"
                        );
                    }
                }
                updaters_left.fetch_sub(1, SeqCst);
            });
        }
        // Keep readers coming until the updaters are done: respawn exited
        // ones.
        while updaters_left.load(SeqCst) > 0 {
            std::thread::sleep(std::time::Duration::from_millis(1));
            handles.retain(|h| !h.is_finished());
            while handles.len() < readers {
                generation += 1;
                handles.push(spawn_reader(generation));
            }
        }
    });
    sh.stop.store(true, SeqCst);
    for h in handles {
        h.join().unwrap();
    }
    let queued: u64 = sh.callbacks_queued.iter().map(|c| c.load(SeqCst)).sum();
    if flavor_memb {
        memb::rcu_barrier()
    } else {
        qsbr::rcu_barrier()
    }
    assert_eq!(
        sh.callbacks_run.iter().map(|c| c.load(SeqCst)).sum::<u64>(),
        queued,
        "seed {seed}: callbacks after the final barrier"
    );
    let pending = if flavor_memb {
        memb::callbacks_pending()
    } else {
        qsbr::callbacks_pending()
    };
    assert_eq!(
        pending, 0,
        "seed {seed}: callbacks_pending after the final barrier, nothing queued since"
    );
    assert_eq!(
        sh.violations.load(SeqCst),
        0,
        "seed {seed} (memb {flavor_memb}): reader saw a dead node"
    );
    (sh.read_sections.load(SeqCst), queued)
}

#[test]
fn memb_grace_periods_cover_readers() {
    let mut sections = 0;
    for seed in seeds(12 * scale()) {
        let t = std::time::Instant::now();
        sections += run(seed, true, 400).0;
        if std::env::var_os("MODEL_TIMES").is_some() {
            eprintln!("memb seed {seed}: {:?}", t.elapsed());
        }
    }
    eprintln!("memb: {sections} read sections checked");
}

#[test]
fn qsbr_grace_periods_cover_readers() {
    let mut sections = 0;
    for seed in seeds(12 * scale()) {
        let t = std::time::Instant::now();
        sections += run(seed, false, 400).0;
        if std::env::var_os("MODEL_TIMES").is_some() {
            eprintln!("qsbr seed {seed}: {:?}", t.elapsed());
        }
    }
    eprintln!("qsbr: {sections} read sections checked");
}
