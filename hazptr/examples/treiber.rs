//! A Treiber stack (lock-free LIFO) on [`hazptr::AtomicBox`].
//!
//! Lock-free in its links: push and pop are CAS loops that another thread's
//! stall cannot hold up. Not in its reclamation: the retire at the end of a
//! pop may hand the thread's batch to the domain under a mutex and run a
//! reclamation pass, which waits out readers caught in a scan's wildcard
//! window, so a preempted thread can hold a pop up there.
//!
//! Push links a new node in front of the head with a CAS. Pop protects the
//! head with a guard (so it cannot be freed, and its address cannot be
//! reused, while we read its `next`), swings the head to `next` with a CAS,
//! moves the value out and retires the node. Retired nodes are freed in
//! batches once no guard protects them.
//!
//! Run with `cargo run --release -p hazptr --example treiber`. The
//! `treiber` criterion group of bench-suite measures this very stack.

use hazptr::{AtomicBox, Domain};
use std::mem::ManuallyDrop;
use std::ptr;

/// A lock-free stack whose popped nodes are reclaimed through hazard pointers.
pub struct TreiberStack<'d, T: Send + Sync> {
    head: AtomicBox<'d, Node<T>>,
}

struct Node<T> {
    /// Moved out by the pop that unlinks the node; the node's own drop (at
    /// reclamation) must not drop it again.
    value: ManuallyDrop<T>,
    /// The next node; owned through this link until a pop unlinks this node.
    next: *mut Node<T>,
}

// SAFETY: a node is shared between threads only through the stack. Its
// `next` is only read, and only under protection; its value is moved out
// once, by the pop whose CAS unlinked it, on whatever thread that runs
// (needs `T: Send`), and is never reached through `&T` by two threads.
// `T: Sync` is more than that needs: the stack asks for it because
// `AtomicBox` requires its pointee to be `Send + Sync`.
//
// Two rules for anyone extending this stack, which the pop below relies on:
// never hand out a `&T` from a node (no `peek`, no iterator), since a pop
// moves the value out while other threads may still hold the node; and
// never push a node again (no free list of nodes), since the CAS's argument
// against ABA is that a node's address is not reused while a guard holds it.
unsafe impl<T: Send + Sync> Send for Node<T> {}
// SAFETY: as above.
unsafe impl<T: Send + Sync> Sync for Node<T> {}

impl<T: Send + Sync + 'static> TreiberStack<'static, T> {
    /// An empty stack in the global domain.
    pub fn new() -> Self {
        TreiberStack {
            head: AtomicBox::null(),
        }
    }
}

impl<T: Send + Sync + 'static> Default for TreiberStack<'static, T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<'d, T: Send + Sync + 'static> TreiberStack<'d, T> {
    /// An empty stack whose nodes are retired to `domain`.
    pub fn new_in(domain: &'d Domain) -> Self {
        TreiberStack {
            head: AtomicBox::from_box_in(None, domain),
        }
    }

    /// Pushes `value`.
    pub fn push(&self, value: T) {
        let node = Box::into_raw(Box::new(Node {
            value: ManuallyDrop::new(value),
            next: ptr::null_mut(),
        }));
        loop {
            let head = self.head.load_ptr();
            // SAFETY: `node` is ours until the CAS publishes it.
            unsafe { (*node).next = head };
            // SAFETY: `node` is a `Box::into_raw` pointer the stack owns from
            // now on; the old head stays linked (through `node.next`), so it
            // is neither retired nor freed here.
            if unsafe { self.head.compare_exchange_ptr(head, node) }.is_ok() {
                return;
            }
        }
    }

    /// Pops the most recently pushed value.
    pub fn pop(&self) -> Option<T> {
        let mut guard = self.head.domain().guard();
        loop {
            let head = self.head.load(&mut guard)?;
            let head_ptr = ptr::from_ref(head).cast_mut();
            // SAFETY (of the read): `head` is protected, so it is not freed.
            let next = head.next;
            // SAFETY: `next` is the rest of the list, owned through `head`'s
            // link, which this CAS transfers to the stack's head.
            if let Ok(unlinked) = unsafe { self.head.compare_exchange_ptr(head_ptr, next) } {
                // SAFETY: our CAS unlinked the node, so this pop alone moves
                // the value out; other poppers holding it only read `next`.
                let value = unsafe { ptr::read(&*head.value) };
                // SAFETY: unlinked (unreachable for new readers), retired
                // once, allocated by `Box::new` in `push`; dropping the node
                // does not drop the moved-out value (`ManuallyDrop`). Retire
                // the pointer the head held, which carries `Box::into_raw`'s
                // right to free the node: `head_ptr`, made from the shared
                // `&Node`, only has the right to read it.
                unsafe { self.head.retire_ptr(unlinked) };
                return Some(value);
            }
        }
    }

    /// Whether the stack is empty (a snapshot).
    pub fn is_empty(&self) -> bool {
        self.head.load_ptr().is_null()
    }
}

impl<T: Send + Sync> Drop for TreiberStack<'_, T> {
    fn drop(&mut self) {
        // `&mut self`: no reader; free the remaining nodes and their values.
        let mut node = self.head.take().map_or(ptr::null_mut(), Box::into_raw);
        while !node.is_null() {
            // SAFETY: every linked node is a `Box::into_raw` pointer owned by
            // the stack through its predecessor's link.
            let mut boxed = unsafe { Box::from_raw(node) };
            // SAFETY: the value was not moved out (the node is still linked).
            unsafe { ManuallyDrop::drop(&mut boxed.value) };
            node = boxed.next;
        }
    }
}

#[allow(dead_code)]
fn main() {
    const THREADS: u64 = 4;
    const PER_THREAD: u64 = if cfg!(miri) { 30 } else { 100_000 };
    let stack = TreiberStack::new();
    let popped_sum: u64 = std::thread::scope(|s| {
        let workers: Vec<_> = (0..THREADS)
            .map(|t| {
                let stack = &stack;
                s.spawn(move || {
                    let mut sum = 0;
                    for i in 0..PER_THREAD {
                        stack.push(t * PER_THREAD + i);
                        sum += stack.pop().expect("at least our own push is there");
                    }
                    sum
                })
            })
            .collect();
        workers.into_iter().map(|w| w.join().unwrap()).sum()
    });
    let n = THREADS * PER_THREAD;
    assert_eq!(
        popped_sum,
        n * (n - 1) / 2,
        "every pushed value popped once"
    );
    assert!(stack.is_empty());
    println!(
        "treiber: {THREADS} threads pushed and popped {n} values; sum checks out; {} nodes still retired",
        hazptr::Domain::global().retired_len()
    );
}

/// `cargo test` runs `main`'s check too (the example is `test = true` in
/// `hazptr/Cargo.toml`): every pushed value is popped exactly once.
#[cfg(test)]
#[test]
fn every_pushed_value_is_popped_once() {
    main();
}

/// A stack in a domain of its own (`new_in`), dropped with values still on
/// it and popped nodes retired (in this thread's batch, which the domain's
/// drop frees too), and then its domain: every value is dropped
/// exactly once (the popped ones by their popper, the rest by the stack's
/// drop), and the domain's drop frees the retired nodes without dropping
/// their moved-out values again.
#[cfg(test)]
#[test]
fn dropping_the_stack_and_its_domain_drops_every_value_once() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
    struct Counted(Arc<AtomicUsize>);
    impl Drop for Counted {
        fn drop(&mut self) {
            // Relaxed: read on this thread after the drops.
            self.0.fetch_add(1, Relaxed);
        }
    }
    let drops = Arc::new(AtomicUsize::new(0));
    let domain = Domain::new();
    let stack = TreiberStack::new_in(&domain);
    for _ in 0..10 {
        stack.push(Counted(Arc::clone(&drops)));
    }
    for _ in 0..3 {
        drop(stack.pop().expect("ten were pushed"));
    }
    assert_eq!(drops.load(Relaxed), 3, "the popped values, by their popper");
    drop(stack);
    assert_eq!(
        drops.load(Relaxed),
        10,
        "the values left on the stack, by its drop"
    );
    drop(domain);
    assert_eq!(
        drops.load(Relaxed),
        10,
        "a retired node dropped its value again"
    );
}
