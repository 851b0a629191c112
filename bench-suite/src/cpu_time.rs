//! CPU time of threads and of the process, read from outside the thread.
//!
//! A run's rates (objects replaced per second, reads per second) say what the
//! threads got done in wall time; on a machine with fewer CPUs than threads
//! they also say how the scheduler shared the CPUs out. Readers that yield
//! or sleep hand their time to the writers, and a writer that blocks hands
//! its time to the readers. The CPU time each thread used in the timed
//! window separates the two: the cost per operation is CPU time divided by
//! the operations done in it.
//!
//! [`ThreadCpuClock`] is a thread's CPU clock (`pthread_getcpuclockid`),
//! which any thread of the process can read while that thread lives
//! (`clock_gettime` on it fails once the thread has exited). The kernel
//! keeps the time per task (`CLOCK_THREAD_CPUTIME_ID` for the thread
//! itself), so a reading from the controlling thread is exact at the moment
//! it is taken: no cooperation from the measured thread, no sampling.
//!
//! Under miri, which implements neither call, every reading is `None`: the
//! harness then reports no CPU time, as for a platform without the clocks.

use std::os::unix::thread::JoinHandleExt;
use std::thread::JoinHandle;
use std::time::Duration;

/// The CPU-time clock of one thread of this process. The kernel names it
/// by the thread's id: read after the thread has exited, it fails, unless
/// the id has meanwhile gone to a new thread of this process (whose time it
/// would then read), so read it only while the thread is known to live.
#[derive(Clone, Copy, Debug)]
pub struct ThreadCpuClock(libc::clockid_t);

impl ThreadCpuClock {
    /// The clock of `thread`'s thread; `None` if the system has none for it
    /// (the thread has been joined, or the platform lacks thread clocks).
    pub fn of<T>(thread: &JoinHandle<T>) -> Option<ThreadCpuClock> {
        // SAFETY: the handle's thread is live: not yet joined, since the
        // handle is borrowed.
        unsafe { Self::of_pthread(libc_pthread(thread.as_pthread_t())) }
    }

    /// The clock of the calling thread, which other threads of the process
    /// can read while it lives; `None` where the platform lacks thread
    /// clocks.
    pub fn current() -> Option<ThreadCpuClock> {
        // SAFETY: `pthread_self()` is the calling thread, alive for the call.
        unsafe { Self::of_pthread(libc::pthread_self()) }
    }

    /// The clock of `thread`.
    ///
    /// # Safety
    ///
    /// `thread` must be a live (not joined, not exited and detached) thread
    /// of this process.
    unsafe fn of_pthread(thread: libc::pthread_t) -> Option<ThreadCpuClock> {
        if cfg!(miri) {
            return None;
        }
        let mut clock: libc::clockid_t = 0;
        // SAFETY: `thread` is live (the caller's contract), and `clock` is a
        // valid place for the result.
        let rc = unsafe { libc::pthread_getcpuclockid(thread, &mut clock) };
        (rc == 0).then_some(ThreadCpuClock(clock))
    }

    /// CPU time the thread has used so far; `None` once it has exited.
    pub fn read(self) -> Option<Duration> {
        read_clock(self.0)
    }
}

/// std's `RawPthread` is the integer `pthread_t` of `std::os::*::raw`, and
/// the libc crate's `pthread_t` is the same integer on glibc (and bionic).
#[cfg(not(any(target_env = "musl", target_env = "ohos")))]
fn libc_pthread(raw: std::os::unix::thread::RawPthread) -> libc::pthread_t {
    raw
}

/// std's `RawPthread` is an integer, but the libc crate types musl's (and
/// OpenHarmony's, a musl) `pthread_t` as the pointer it is (to the thread's
/// descriptor, which std exposed when it cast it to the integer).
#[cfg(any(target_env = "musl", target_env = "ohos"))]
fn libc_pthread(raw: std::os::unix::thread::RawPthread) -> libc::pthread_t {
    let address = usize::try_from(raw).expect("a pthread_t is an address");
    std::ptr::with_exposed_provenance_mut(address)
}

/// CPU time every thread of the process has used so far, the exited ones
/// included.
pub fn process() -> Option<Duration> {
    read_clock(libc::CLOCK_PROCESS_CPUTIME_ID)
}

/// CPU time the calling thread has used so far.
pub fn this_thread() -> Option<Duration> {
    read_clock(libc::CLOCK_THREAD_CPUTIME_ID)
}

fn read_clock(clock: libc::clockid_t) -> Option<Duration> {
    if cfg!(miri) {
        return None;
    }
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `now` is a valid place for the result; an unknown or stale
    // clock id is an error return (EINVAL), not undefined behaviour.
    let rc = unsafe { libc::clock_gettime(clock, &mut now) };
    (rc == 0).then(|| Duration::new(now.tv_sec as u64, now.tv_nsec as u32))
}

/// The sum of the clocks' readings; `None` if any of them cannot be read
/// (a thread that exited: its share would be missing from the sum).
pub fn sum(clocks: &[ThreadCpuClock]) -> Option<Duration> {
    clocks.iter().map(|c| c.read()).sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;
    use std::time::Instant;

    /// Spins until this thread's own CPU clock has advanced `cpu`: on a
    /// loaded machine a spin of fixed wall time may get almost no CPU. Gives
    /// up after 20 s of wall time (the caller's assertions then fail).
    fn spin_cpu(cpu: Duration) {
        let start = this_thread().expect("Linux has thread clocks");
        let began = Instant::now();
        while this_thread().expect("Linux has thread clocks") - start < cpu
            && began.elapsed() < Duration::from_secs(20)
        {
            for _ in 0..1_000 {
                std::hint::spin_loop();
            }
        }
    }

    #[test]
    #[cfg_attr(miri, ignore = "miri has no CPU-time clocks")]
    fn a_spinning_thread_is_charged_and_a_sleeping_one_is_not() {
        let (go_spin, spin_told) = mpsc::channel::<()>();
        let (go_sleep, sleep_told) = mpsc::channel::<()>();
        let (done, done_rx) = mpsc::channel::<()>();
        let spinner = std::thread::spawn({
            let done = done.clone();
            move || {
                spin_told.recv().unwrap();
                spin_cpu(Duration::from_millis(10));
                done.send(()).unwrap();
                spin_told.recv().unwrap();
            }
        });
        let sleeper = std::thread::spawn(move || {
            sleep_told.recv().unwrap();
            std::thread::sleep(Duration::from_millis(60));
            done.send(()).unwrap();
            sleep_told.recv().unwrap();
        });
        let spin_clock = ThreadCpuClock::of(&spinner).expect("Linux has thread clocks");
        let sleep_clock = ThreadCpuClock::of(&sleeper).expect("Linux has thread clocks");
        let (spin0, sleep0) = (spin_clock.read().unwrap(), sleep_clock.read().unwrap());
        go_spin.send(()).unwrap();
        go_sleep.send(()).unwrap();
        // Both are done, and on their way to their second `recv`, when their
        // clocks are read.
        done_rx.recv().unwrap();
        done_rx.recv().unwrap();
        let spun = spin_clock.read().unwrap() - spin0;
        let slept = sleep_clock.read().unwrap() - sleep0;
        // The spinner ran until its own clock passed 10 ms, so another
        // thread's reading of that clock shows it; the sleeper used only
        // what a wake-up costs.
        assert!(
            spun >= Duration::from_millis(10),
            "spinner charged {spun:?}"
        );
        assert!(
            slept < Duration::from_millis(5),
            "sleeper charged {slept:?}"
        );
        assert!(slept < spun, "{slept:?} against {spun:?}");
        go_spin.send(()).unwrap();
        go_sleep.send(()).unwrap();
        spinner.join().unwrap();
        sleeper.join().unwrap();
    }

    #[test]
    #[cfg_attr(miri, ignore = "miri has no CPU-time clocks")]
    fn an_exited_thread_reads_as_unknown_and_so_does_a_sum_with_it() {
        let (stay, stay_told) = mpsc::channel::<()>();
        let (exit, exit_told) = mpsc::channel::<()>();
        let alive = std::thread::spawn(move || stay_told.recv().unwrap());
        let exits = std::thread::spawn(move || exit_told.recv().unwrap());
        let clocks = [
            ThreadCpuClock::of(&alive).unwrap(),
            ThreadCpuClock::of(&exits).unwrap(),
        ];
        exit.send(()).unwrap();
        // Until the kernel has reaped it, an exited thread's clock may read.
        let began = Instant::now();
        while clocks[1].read().is_some() && began.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(1));
        }
        assert_eq!(clocks[1].read(), None, "an exited thread's clock");
        assert!(clocks[0].read().is_some());
        assert_eq!(sum(&clocks), None);
        assert!(sum(&clocks[..1]).is_some());
        stay.send(()).unwrap();
        alive.join().unwrap();
        exits.join().unwrap();
    }

    #[test]
    #[cfg_attr(miri, ignore = "miri has no CPU-time clocks")]
    fn a_threads_own_clock_is_read_from_another_thread() {
        let (go, told) = mpsc::channel::<()>();
        let (clock_tx, clock_rx) = mpsc::channel();
        let (done, done_rx) = mpsc::channel::<()>();
        let spinner = std::thread::spawn(move || {
            clock_tx.send(ThreadCpuClock::current().unwrap()).unwrap();
            told.recv().unwrap();
            spin_cpu(Duration::from_millis(10));
            done.send(()).unwrap();
            told.recv().unwrap();
        });
        let clock = clock_rx.recv().unwrap();
        let before = clock.read().unwrap();
        let mine = this_thread().unwrap();
        go.send(()).unwrap();
        done_rx.recv().unwrap();
        // The spinner's time, not this (waiting) thread's.
        let spun = clock.read().unwrap() - before;
        assert!(
            spun >= Duration::from_millis(10),
            "spinner charged {spun:?}"
        );
        assert!(this_thread().unwrap() - mine < Duration::from_millis(5));
        go.send(()).unwrap();
        spinner.join().unwrap();
    }

    #[test]
    #[cfg_attr(miri, ignore = "miri has no CPU-time clocks")]
    fn the_process_clock_counts_the_calling_thread() {
        let before = process().unwrap();
        spin_cpu(Duration::from_millis(5));
        assert!(process().unwrap() > before);
    }

    #[test]
    #[cfg_attr(miri, ignore = "miri has no CPU-time clocks")]
    fn this_threads_clock_counts_its_spinning_and_not_its_sleeping() {
        let before = this_thread().unwrap();
        std::thread::sleep(Duration::from_millis(30));
        let slept = this_thread().unwrap() - before;
        spin_cpu(Duration::from_millis(10));
        let spun = this_thread().unwrap() - before - slept;
        assert!(slept < Duration::from_millis(5), "{slept:?}");
        assert!(spun > slept, "{spun:?} against {slept:?}");
    }
}
