//! A global allocator that counts, for the tests that prove code allocates
//! nothing (or gives back every byte it took). A test binary installs it
//! and reads [`CountingAllocator::allocations`] or
//! [`CountingAllocator::live_bytes`] before and after the code it checks.
//! Every thread of the binary counts, so such a binary holds one test.
//!
//! ```
//! use test_support::CountingAllocator;
//!
//! #[global_allocator]
//! static GLOBAL: CountingAllocator = CountingAllocator::new();
//!
//! fn main() {
//!     let (before, live) = (GLOBAL.allocations(), GLOBAL.live_bytes());
//!     let boxed = std::hint::black_box(Box::new([0u8; 32]));
//!     assert_eq!(GLOBAL.allocations(), before + 1);
//!     assert_eq!(GLOBAL.live_bytes(), live + 32);
//!     drop(boxed);
//!     assert_eq!(GLOBAL.live_bytes(), live);
//! }
//! ```

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::AtomicUsize;
use std::sync::atomic::Ordering::SeqCst;

/// The system allocator, counting allocations and bytes.
#[derive(Debug)]
pub struct CountingAllocator {
    /// `alloc` and `realloc` calls.
    allocations: AtomicUsize,
    /// Bytes handed out and given back, in total.
    allocated: AtomicUsize,
    freed: AtomicUsize,
}

impl CountingAllocator {
    /// An allocator with every count at zero.
    pub const fn new() -> CountingAllocator {
        CountingAllocator {
            allocations: AtomicUsize::new(0),
            allocated: AtomicUsize::new(0),
            freed: AtomicUsize::new(0),
        }
    }

    /// `alloc` and `realloc` calls so far.
    pub fn allocations(&self) -> usize {
        // SeqCst, as every count here: a test reads them against the
        // allocations of the code it checks, which may run on other threads
        // and must be ordered before the reading thread's later look.
        self.allocations.load(SeqCst)
    }

    /// Bytes allocated and not yet freed.
    pub fn live_bytes(&self) -> usize {
        let freed = self.freed.load(SeqCst);
        self.allocated.load(SeqCst) - freed
    }
}

impl Default for CountingAllocator {
    fn default() -> Self {
        CountingAllocator::new()
    }
}

// SAFETY: forwards every call to the system allocator and only counts.
unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        self.allocations.fetch_add(1, SeqCst);
        self.allocated.fetch_add(layout.size(), SeqCst);
        // SAFETY: the caller's contract, forwarded.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        self.freed.fetch_add(layout.size(), SeqCst);
        // SAFETY: the caller's contract, forwarded.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        self.allocations.fetch_add(1, SeqCst);
        self.freed.fetch_add(layout.size(), SeqCst);
        self.allocated.fetch_add(new_size, SeqCst);
        // SAFETY: the caller's contract, forwarded.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}
