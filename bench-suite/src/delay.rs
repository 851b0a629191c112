//! Busy-wait delays: the counterpart of the kernel's `udelay()` used by the
//! torture tests to hold a lock "briefly". Wall-clock based, so a thread that is
//! preempted while holding a lock does not hold it longer than asked once it
//! runs again.

use std::time::{Duration, Instant};

/// Spins for about `d`, reading the clock every few iterations.
#[inline]
pub fn spin_for(d: Duration) {
    if d.is_zero() {
        return;
    }
    let start = Instant::now();
    while start.elapsed() < d {
        for _ in 0..16 {
            std::hint::spin_loop();
        }
    }
}

/// A cache-line-padded value, so per-thread counters do not share lines.
#[derive(Debug, Default)]
#[repr(align(128))]
pub struct Padded<T>(pub T);

impl<T> std::ops::Deref for Padded<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

/// How long the calling thread has waited on a runqueue so far: runnable but
/// not running because the CPUs were busy with other threads (the second field
/// of `/proc/thread-self/schedstat`). `None` where the kernel does not keep it.
pub fn thread_runqueue_wait() -> Option<Duration> {
    if cfg!(miri) {
        // No file system under miri's isolation.
        return None;
    }
    let stat = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let wait_ns: u64 = stat.split_whitespace().nth(1)?.parse().ok()?;
    Some(Duration::from_nanos(wait_ns))
}
