//! A global allocator that counts, for the tests that prove code allocates
//! nothing (or gives back every byte it took). A test binary installs it
//! and reads [`CountingAllocator::allocations`] or
//! [`CountingAllocator::live_bytes`] before and after the code it checks.
//! Every thread of the binary counts, so such a binary holds one test, with
//! two exceptions:
//!
//! - [`CountingAllocator::under_the_test_harness`] leaves out the process's
//!   main thread, which under libtest is the harness's own: it books a test
//!   in a table (an allocation) after starting the test's thread, so on a
//!   loaded machine that allocation can land inside the test's count.
//! - [`uncounted`] leaves out the calling thread while it runs a closure, for
//!   a test's own scaffolding (a watchdog waiting on a channel allocates as it
//!   first blocks).
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
//!     // Scaffolding that is not under test:
//!     let scaffolding = test_support::uncounted(|| Box::new(7u64));
//!     assert_eq!(GLOBAL.allocations(), before + 1);
//!     drop(scaffolding);
//! }
//! ```

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::Ordering::SeqCst;
use std::sync::atomic::{AtomicIsize, AtomicUsize};

std::thread_local! {
    /// Whether this thread's allocations count now (see [`uncounted`]). A
    /// `const` cell without a destructor: readable from the allocator at any
    /// point of the thread's life, and its first use allocates nothing.
    static COUNTED: Cell<bool> = const { Cell::new(true) };
    /// Whether this thread is the process's main thread: unknown (0), yes
    /// (1) or no (2), asked of the kernel once per thread.
    static MAIN_THREAD: Cell<u8> = const { Cell::new(0) };
}

/// Runs `f` with the calling thread's allocations and frees left out of
/// every count, for a test's scaffolding (not the code it checks); threads
/// that `f` starts count as usual.
pub fn uncounted<R>(f: impl FnOnce() -> R) -> R {
    /// Restores the thread's previous state, also when `f` panics.
    struct Restore(bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            COUNTED.with(|c| c.set(self.0));
        }
    }
    let _restore = Restore(COUNTED.with(|c| c.replace(false)));
    f()
}

/// Whether the calling thread is the process's main thread.
fn on_main_thread() -> bool {
    MAIN_THREAD.with(|main| {
        if main.get() == 0 {
            // SAFETY: plain syscalls without arguments.
            let yes = unsafe { libc::gettid() == libc::getpid() };
            main.set(if yes { 1 } else { 2 });
        }
        main.get() == 1
    })
}

/// The system allocator, counting allocations and bytes.
#[derive(Debug)]
pub struct CountingAllocator {
    /// `alloc` and `realloc` calls.
    allocations: AtomicUsize,
    /// Bytes handed out less bytes given back: one count, so that a reading
    /// is a value it held (two totals read one after the other could catch
    /// another thread's allocations without their frees: until 2026-12-07,
    /// one reading in about 10^8 came out hundreds of MB high under churn).
    live: AtomicIsize,
    /// Whether the process's main thread is left out.
    skips_main_thread: bool,
}

impl CountingAllocator {
    /// An allocator with every count at zero that counts every thread.
    pub const fn new() -> CountingAllocator {
        CountingAllocator {
            allocations: AtomicUsize::new(0),
            live: AtomicIsize::new(0),
            skips_main_thread: false,
        }
    }

    /// An allocator with every count at zero that counts every thread but
    /// the process's main thread: under libtest that thread is the
    /// harness's, and the tests run on threads it starts. Its counts may not
    /// be read on the main thread (they would leave out the reader's own
    /// allocations): that panics.
    ///
    /// ```
    /// use std::sync::Barrier;
    /// use test_support::CountingAllocator;
    ///
    /// #[global_allocator]
    /// static GLOBAL: CountingAllocator = CountingAllocator::under_the_test_harness();
    ///
    /// fn main() {
    ///     let [counted, allocated] = [(); 2].map(|()| Barrier::new(2));
    ///     std::thread::scope(|s| {
    ///         let test = s.spawn(|| {
    ///             let before = GLOBAL.allocations();
    ///             counted.wait();
    ///             allocated.wait();
    ///             let after = GLOBAL.allocations();
    ///             after - before
    ///         });
    ///         counted.wait();
    ///         // An allocation of the main thread meanwhile is left out.
    ///         let on_main = std::hint::black_box(Box::new(1u64));
    ///         allocated.wait();
    ///         assert_eq!(test.join().unwrap(), 0);
    ///         drop(on_main);
    ///     });
    /// }
    /// ```
    ///
    /// ```should_panic
    /// # use test_support::CountingAllocator;
    /// # #[global_allocator]
    /// # static GLOBAL: CountingAllocator = CountingAllocator::under_the_test_harness();
    /// // Read on the main thread: panics.
    /// # fn main() {
    /// let _ = GLOBAL.allocations();
    /// # }
    /// ```
    pub const fn under_the_test_harness() -> CountingAllocator {
        CountingAllocator {
            skips_main_thread: true,
            ..CountingAllocator::new()
        }
    }

    /// Whether the calling thread's allocations count now.
    #[inline]
    fn counts_here(&self) -> bool {
        COUNTED.with(Cell::get) && !(self.skips_main_thread && on_main_thread())
    }

    /// Panics on a read that would leave out the reader's own allocations.
    fn check_reader(&self) {
        assert!(
            !(self.skips_main_thread && on_main_thread()),
            "CountingAllocator::under_the_test_harness() read on the process's main thread, \
             whose allocations it leaves out: read it on a test's own thread"
        );
    }

    /// `alloc` and `realloc` calls so far.
    pub fn allocations(&self) -> usize {
        // SeqCst, as every count here: a test reads them against the
        // allocations of the code it checks, which may run on other threads
        // and must be ordered before the reading thread's later look.
        self.check_reader();
        self.allocations.load(SeqCst)
    }

    /// Bytes the counted threads allocated minus those they freed: what they
    /// hold, if they free only what they allocated. Compare two readings;
    /// it can be negative, when they free what an uncounted thread (the
    /// harness's, say) allocated.
    pub fn live_bytes(&self) -> isize {
        self.check_reader();
        self.live.load(SeqCst)
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
        if self.counts_here() {
            self.allocations.fetch_add(1, SeqCst);
            self.live.fetch_add(layout.size() as isize, SeqCst);
        }
        // SAFETY: the caller's contract, forwarded.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if self.counts_here() {
            self.live.fetch_sub(layout.size() as isize, SeqCst);
        }
        // SAFETY: the caller's contract, forwarded.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if self.counts_here() {
            self.allocations.fetch_add(1, SeqCst);
            // Sizes fit in `isize` (`Layout`'s rule), and so does their
            // difference.
            self.live
                .fetch_add(new_size as isize - layout.size() as isize, SeqCst);
        }
        // SAFETY: the caller's contract, forwarded.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}
