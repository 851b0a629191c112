//! `treiber`: a Treiber stack's push + pop with the popped node retired,
//! hazptr (the stack of `hazptr/examples/treiber.rs`, compiled in here)
//! against the same stack on haphazard. Time per iteration = one push+pop
//! pair on each thread (threads run concurrently), on 1 and 2 threads, and on
//! one thread per CPU where the machine has more than 2.
use bench_suite::start_gate::{StartGate, first_start_to_last_end};
use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use std::hint::black_box;
use std::mem::ManuallyDrop;
use std::ptr;
use std::time::{Duration, Instant};

#[allow(dead_code)]
#[path = "../../hazptr/examples/treiber.rs"]
mod hazptr_treiber;

/// The same stack on haphazard: `AtomicPtr`, a `HazardPointer` per thread
/// reused by every pop (its cheapest form: a new one per pop costs a CAS on
/// the domain's record list, about 10% of a push+pop), `Replaced::retire` for
/// the popped node.
struct HaphazardStack<T> {
    head: haphazard::AtomicPtr<Node<T>>,
}

struct Node<T> {
    value: ManuallyDrop<T>,
    next: *mut Node<T>,
}

// SAFETY: as in the hazptr example: nodes move `T` between threads and
// expose `next` read-only under protection.
unsafe impl<T: Send + Sync> Send for Node<T> {}
// SAFETY: as above.
unsafe impl<T: Send + Sync> Sync for Node<T> {}

impl<T: Send + Sync> HaphazardStack<T> {
    fn new() -> Self {
        HaphazardStack {
            // SAFETY: null is a valid (empty) value for haphazard's AtomicPtr.
            head: unsafe { haphazard::AtomicPtr::new(ptr::null_mut()) },
        }
    }

    fn push(&self, value: T) {
        let node = Box::into_raw(Box::new(Node {
            value: ManuallyDrop::new(value),
            next: ptr::null_mut(),
        }));
        loop {
            let head = self.head.load_ptr();
            // SAFETY: `node` is ours until published.
            unsafe { (*node).next = head };
            // SAFETY: `node` is a valid `Box` pointer the stack owns from now on.
            if unsafe { self.head.compare_exchange_weak_ptr(head, node) }.is_ok() {
                return;
            }
        }
    }

    fn pop(&self) -> Option<T> {
        thread_local! {
            /// This thread's hazard pointer in the global domain.
            static HAZARD: std::cell::RefCell<haphazard::HazardPointer<'static>> =
                std::cell::RefCell::new(haphazard::HazardPointer::new());
        }
        HAZARD.with_borrow_mut(|hp| {
            let popped = loop {
                let Some(head) = self.head.safe_load(hp) else {
                    break None;
                };
                let head_ptr = ptr::from_ref(head).cast_mut();
                let next = head.next;
                // SAFETY: `next` is owned through `head`'s link.
                if let Ok(Some(old)) = unsafe { self.head.compare_exchange_ptr(head_ptr, next) } {
                    // SAFETY: we unlinked it; only we move the value out.
                    let value = unsafe { ptr::read(&*head.value) };
                    // SAFETY: unlinked and retired once.
                    unsafe { old.retire() };
                    break Some(value);
                }
            };
            hp.reset_protection();
            popped
        })
    }
}

fn pairs<S: Sync>(
    stack: &S,
    threads: usize,
    iters: u64,
    pair: impl Fn(&S, u64) + Sync,
) -> Duration {
    let start = StartGate::new(threads + 1);
    std::thread::scope(|s| {
        // A spawn the OS refuses panics here: the guard then cancels the
        // gate, so that the threads already started return and the scope
        // can join them (at a `Barrier` they would wait for ever).
        let _cancel = start.cancel_on_panic();
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| {
                    if !start.wait() {
                        return None;
                    }
                    let began = Instant::now();
                    for i in 0..iters {
                        pair(stack, i);
                    }
                    // Its own start and end (see `first_start_to_last_end`).
                    Some((began, Instant::now()))
                })
            })
            .collect();
        assert!(
            start.wait(),
            "the start was cancelled with every thread started"
        );
        // Joined, not met at an end barrier: a thread that panics would
        // leave the others waiting there for ever.
        first_start_to_last_end(workers.into_iter().map(|h| {
            h.join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
                .expect("the gate opened for every thread")
        }))
    })
}

fn treiber(c: &mut Criterion) {
    let mut group = c.benchmark_group("treiber");
    group
        .sample_size(20)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let counts = [1, 2].into_iter().chain((cpus > 2).then_some(cpus));
    for threads in counts {
        let ours = hazptr_treiber::TreiberStack::new();
        group.bench_function(BenchmarkId::new("hazptr", threads), |b| {
            b.iter_custom(|iters| {
                pairs(&ours, threads, iters, |s, i| {
                    s.push(i);
                    black_box(s.pop());
                })
            })
        });
        let theirs = HaphazardStack::new();
        group.bench_function(BenchmarkId::new("haphazard", threads), |b| {
            b.iter_custom(|iters| {
                pairs(&theirs, threads, iters, |s, i| {
                    s.push(i);
                    black_box(s.pop());
                })
            })
        });
    }
    group.finish();
}

criterion_group!(benches, treiber);
criterion_main!(benches);
