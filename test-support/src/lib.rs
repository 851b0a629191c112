//! Helpers the primitive crates' integration tests share. Not a primitive and
//! not part of any crate's API: only `[dev-dependencies]` name it.
//!
//! - [`fork_and_wait`] forks between a crate's fork hooks; the child runs a
//!   closure under an alarm and reports through its exit status, which
//!   [`assert_child_succeeded`] checks.
//! - [`Crowd`] keeps threads calling one closure back to back, counting the
//!   calls, across whatever the test does meanwhile (a fork, say).
//! - [`Holders`] keeps threads holding something (a read guard, a
//!   registration) until the test releases them.
//! - [`assert_waits_for_reader`] checks that a grace period (or any wait)
//!   does not end before a reader that began before it has left.
//! - [`misuse`] runs a misuse on a fresh thread under a watchdog and checks
//!   that it panics with a message naming it.
//! - [`within_a_deadline`] runs a wait that must end (a grace period, a
//!   barrier) on a fresh thread, and ends the process if it does not.
//! - [`in_a_child_process`] runs one test again in a child process, for a
//!   case that would abort or hang the whole test binary if it went wrong
//!   (a panic inside a thread-local destructor, a lock never given back);
//!   [`stderr_of_an_aborted_child_process`] for a case that must abort, and
//!   [`run_in_a_child_process`] for one with an outcome of its own;
//!   [`forking_test`] runs a test that forks in a process of its own.
//! - [`CountingAllocator`] is a global allocator that counts allocations
//!   and live bytes, for the tests that prove code allocates nothing;
//!   [`uncounted`] leaves a test's scaffolding out of its counts.
//! - [`threads_exiting_through_a_key`] runs threads whose exit calls a
//!   POSIX key destructor after their thread-local destructors, as another
//!   library's "at thread exit" hook that calls into Rust would.
//! - [`thread_states`] reads the scheduler state of this process's threads
//!   of one name from `/proc`, for the tests that check a worker thread
//!   sleeps once it has nothing to do; [`until_asleep`] waits for one to.
//! - [`model`] holds the generator, seeds and failure trace of the
//!   model-based randomized tests.

mod counting_alloc;
pub mod misuse;
pub mod model;
pub mod stall;

pub use counting_alloc::{CountingAllocator, uncounted};

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::atomic::{AtomicBool, AtomicUsize};
use std::sync::{Arc, Condvar, Mutex, mpsc};
use std::thread;
use std::time::{Duration, Instant};

/// A crate's `fork()` hooks (liburcu's `before_fork`, `after_fork_parent`,
/// `after_fork_child`).
#[derive(Clone, Copy, Debug)]
pub struct ForkHooks {
    /// Called right before `fork()`.
    pub before: fn(),
    /// Called in the parent right after it.
    pub after_parent: fn(),
    /// Called in the child right after it, before anything else.
    pub after_child: fn(),
}

/// How long a child may run before `SIGALRM` ends it (a hang then fails the
/// test instead of stalling it).
/// Well above the limits the children's own waits have (15-20 s), so that
/// a slow child on a loaded machine fails with their messages, and below
/// [`CHILD_PROCESS_LIMIT`], which a forking test's whole process runs under.
pub const CHILD_ALARM_S: u32 = 40;

/// Forks between `hooks`; the child runs the child hook and then `child`
/// under a [`CHILD_ALARM_S`] alarm and exits 0 if both returned, 1 if either
/// panicked. Returns the child's wait status. A child's panic message goes
/// straight to the process's stderr: the test harness's capture of the
/// output, which the child inherits, would keep it in the child's memory.
///
/// # Safety
///
/// The contract of the crates' fork hooks (`hazptr::fork`, `rcu_lite::fork`),
/// which `hooks` are: `child` uses no reference that only another thread's
/// guard, read-side section or registration protected. The child has none of
/// the other threads, and its `after_child` hook releases what they held, so
/// whatever such a reference points to may be freed in the child. (A safe
/// function here would let safe code read freed memory: a `&'static T`
/// loaded through a guard that another thread leaked.)
pub unsafe fn fork_and_wait(hooks: ForkHooks, child: impl FnOnce()) -> i32 {
    (hooks.before)();
    // SAFETY: the caller's promise covers what the child touches of the
    // parent's synchronization state; for the rest, the child only runs Rust
    // code that glibc's fork handlers make safe in practice (allocation,
    // threads) and then `_exit`s.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork failed");
    if pid == 0 {
        // The alarm first and the hook inside the catch: the hook is code
        // under test too. A panic escaping it would unwind into the child's
        // copy of the test harness, which could end the child with status 0
        // without running `child`; a hang in it would keep the parent's
        // `waitpid` waiting for good (alarms do not cross a fork).
        // SAFETY: plain libc call; a hang ends the child with SIGALRM.
        unsafe { libc::alarm(CHILD_ALARM_S) };
        let code = match catch_unwind(AssertUnwindSafe(|| {
            (hooks.after_child)();
            child();
        })) {
            Ok(()) => 0,
            Err(payload) => {
                let line = format!(
                    "fork_and_wait: the child panicked: {}\n",
                    misuse::message_of(&*payload)
                );
                // SAFETY: writes the bytes of a live buffer to fd 2.
                unsafe { libc::write(2, line.as_ptr().cast(), line.len()) };
                1
            }
        };
        // SAFETY: leaves the child without running the parent's test harness.
        unsafe { libc::_exit(code) };
    }
    (hooks.after_parent)();
    let mut status = 0;
    // SAFETY: waits for our own child.
    let waited = unsafe { libc::waitpid(pid, &mut status, 0) };
    assert_eq!(waited, pid, "waitpid");
    status
}

/// The environment variable that tells a test run by [`forking_test`] that
/// it is in its process of its own.
pub const FORKING_TEST_ENV: &str = "SYNCPRIMS_FORKING_TEST";

/// Runs the test `name` (its path in the test binary) in a process of its
/// own, where no other test runs, and there runs `body`; for a test that
/// forks and then starts threads in the child. The child of a fork gets
/// std's locks as they were, and std takes one as a thread starts and as
/// it exits (to record the thread's stack for overflow reports): if a
/// thread of another test was in either at the fork, the child's first
/// thread waits for that lock for ever (seen 1 run in 200 on a loaded
/// machine, every thread of the child asleep in `set_current_info`).
/// `body` must itself fork only once its own threads have started.
pub fn forking_test(name: &str, body: impl FnOnce()) {
    if std::env::var_os(FORKING_TEST_ENV).is_some_and(|v| v == name) {
        body();
    } else {
        in_a_child_process(name, FORKING_TEST_ENV, name);
    }
}

/// Fails unless `status` says the child exited with 0; `what` names the
/// child's work in the message.
pub fn assert_child_succeeded(status: i32, what: &str) {
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "the child did not finish {what} (wait status {status:#x}: exit code {} or signal {})",
        libc::WEXITSTATUS(status),
        libc::WTERMSIG(status)
    );
}

/// Threads calling one closure back to back until stopped: four per CPU and
/// two more, so that on any machine most of them wait while a few run.
pub struct Crowd {
    stop: Arc<AtomicBool>,
    calls: Arc<AtomicUsize>,
    /// Threads that have completed at least one call.
    started: Arc<AtomicUsize>,
    threads: Vec<thread::JoinHandle<()>>,
}

impl Crowd {
    /// Starts the threads, each calling `call` in a loop.
    pub fn start(call: impl Fn() + Send + Sync + 'static) -> Crowd {
        let call = Arc::new(call);
        let stop = Arc::new(AtomicBool::new(false));
        let calls = Arc::new(AtomicUsize::new(0));
        let started = Arc::new(AtomicUsize::new(0));
        let threads = (0..4 * thread::available_parallelism().map_or(1, |n| n.get()) + 2)
            .map(|_| {
                let (call, stop, calls, started) = (
                    Arc::clone(&call),
                    Arc::clone(&stop),
                    Arc::clone(&calls),
                    Arc::clone(&started),
                );
                thread::spawn(move || {
                    // Relaxed: a stop flag and progress counts; nothing is
                    // published through them (joins order the end).
                    let mut first = true;
                    while !stop.load(Relaxed) {
                        call();
                        calls.fetch_add(1, Relaxed);
                        if first {
                            started.fetch_add(1, Relaxed);
                            first = false;
                        }
                    }
                })
            })
            .collect();
        Crowd {
            stop,
            calls,
            started,
            threads,
        }
    }

    /// Waits until the crowd has completed `n` more calls and every one of
    /// its threads at least one (a thread not yet scheduled on a loaded
    /// machine has touched nothing, which tests of what the crowd leaves
    /// behind must not depend on); fails with `what` after `limit`.
    pub fn until_calls(&self, n: usize, limit: Duration, what: &str) {
        // Relaxed: progress counts, polled.
        let target = self.calls.load(Relaxed) + n;
        let deadline = deadline_after(limit);
        while self.calls.load(Relaxed) < target || self.started.load(Relaxed) < self.threads.len() {
            assert!(!past(deadline), "{what}");
            thread::sleep(Duration::from_millis(1));
        }
    }

    /// Stops and joins the threads; a panic in one fails here. A thread still
    /// inside its call after [`CROWD_STOP_LIMIT`] (a wait that never ends,
    /// such as a lost wake-up, which the other threads' progress hid from
    /// [`Crowd::until_calls`]) ends the test process with a message.
    pub fn stop(mut self) {
        self.stop.store(true, Relaxed);
        let deadline = Instant::now() + CROWD_STOP_LIMIT;
        while !self.threads.iter().all(thread::JoinHandle::is_finished) {
            if Instant::now() >= deadline {
                use std::io::Write;
                let stuck = self.threads.iter().filter(|t| !t.is_finished()).count();
                let _ = writeln!(
                    std::io::stderr(),
                    "{stuck} crowd thread(s) still inside a call {CROWD_STOP_LIMIT:?} after the \
                     crowd was stopped, which can only be a wait that never ends"
                );
                std::process::exit(101);
            }
            thread::sleep(Duration::from_millis(1));
        }
        for t in std::mem::take(&mut self.threads) {
            t.join().expect("a crowd thread panicked");
        }
    }
}

/// How long [`Crowd::stop`] waits for the threads' last calls to end.
pub const CROWD_STOP_LIMIT: Duration = Duration::from_secs(20);

impl Drop for Crowd {
    /// A crowd dropped without [`Crowd::stop`] (a test that failed meanwhile)
    /// stops calling; its threads are not joined.
    fn drop(&mut self) {
        self.stop.store(true, Relaxed);
    }
}

/// Threads that each take something (a read guard, a registration) and hold
/// it until [`Holders::release`]: readers that stay inside across a fork.
#[derive(Default)]
pub struct Holders {
    /// Set once, when the holders may let go.
    released: Arc<(Mutex<bool>, Condvar)>,
    threads: Vec<thread::JoinHandle<()>>,
}

impl Holders {
    /// No holders yet.
    pub fn new() -> Holders {
        Holders::default()
    }

    /// Starts a thread that calls `take` and holds what it returns until
    /// [`Holders::release`]; returns once the thread holds it.
    pub fn hold<T: 'static>(&mut self, take: impl FnOnce() -> T + Send + 'static) {
        let (holding_tx, holding_rx) = mpsc::channel();
        let released = Arc::clone(&self.released);
        self.threads.push(thread::spawn(move || {
            let held = take();
            holding_tx.send(()).expect("the test waits for this");
            let (flag, changed) = &*released;
            let mut go = flag.lock().unwrap_or_else(|e| e.into_inner());
            while !*go {
                go = changed.wait(go).unwrap_or_else(|e| e.into_inner());
            }
            drop(go);
            drop(held);
        }));
        holding_rx
            .recv()
            .expect("a holder thread panicked before it held anything");
    }

    /// Lets every holder drop what it holds, and joins them; a panic in one
    /// fails here.
    pub fn release(mut self) {
        self.let_go();
        for t in std::mem::take(&mut self.threads) {
            t.join().expect("a holder thread panicked");
        }
    }

    /// Tells every holder to drop what it holds.
    fn let_go(&self) {
        let (flag, changed) = &*self.released;
        *flag.lock().unwrap_or_else(|e| e.into_inner()) = true;
        changed.notify_all();
    }
}

impl Drop for Holders {
    /// Holders dropped without [`Holders::release`] (a test that failed
    /// meanwhile) let go, so that a read section they hold does not hang
    /// the other tests of the binary; their threads are not joined.
    fn drop(&mut self) {
        self.let_go();
    }
}

/// A value whose drops are counted: tests of deferred reclamation check that
/// an object is freed only after the readers that reached it have left, and
/// freed once.
#[derive(Debug)]
pub struct DropCounted {
    /// What readers check they still see.
    pub value: u64,
    drops: Arc<AtomicUsize>,
}

impl DropCounted {
    /// A value that adds one to `drops` when it is dropped.
    pub fn new(value: u64, drops: &Arc<AtomicUsize>) -> DropCounted {
        DropCounted {
            value,
            drops: Arc::clone(drops),
        }
    }
}

impl Drop for DropCounted {
    fn drop(&mut self) {
        // SeqCst: a test reads the count from another thread after a barrier
        // or join that already orders it; the strongest ordering keeps that
        // reasoning out of every test.
        self.drops.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }
}

/// Checks that `wait` does not return before a reader that began before it
/// has left: a thread calls `enter` (a read guard, a registration), signals,
/// holds what it returned for `hold`, marks itself as leaving, and passes it
/// to `leave` (drop it, report a quiescent state). `wait` starts after the
/// signal and must find the mark when it returns; `what` names the wait in
/// the failure message.
pub fn assert_waits_for_reader<T: 'static>(
    what: &str,
    hold: Duration,
    enter: impl FnOnce() -> T + Send + 'static,
    leave: impl FnOnce(T) + Send + 'static,
    wait: impl FnOnce(),
) {
    let (entered_tx, entered_rx) = mpsc::channel();
    let leaving = Arc::new(AtomicBool::new(false));
    let reader = {
        let leaving = Arc::clone(&leaving);
        thread::spawn(move || {
            let held = enter();
            entered_tx.send(()).expect("the test waits for this");
            thread::sleep(hold);
            // SeqCst with the load below: the store comes before `leave`
            // ends the read side, which `wait` must wait for.
            leaving.store(true, std::sync::atomic::Ordering::SeqCst);
            leave(held);
        })
    };
    entered_rx
        .recv()
        .expect("the reader panicked before it entered");
    wait();
    assert!(
        leaving.load(std::sync::atomic::Ordering::SeqCst),
        "{what} returned while a reader that began before it was still inside"
    );
    reader.join().expect("the reader panicked");
}

/// Runs `body` on a fresh thread and returns once it has; if it is still
/// running after `limit` (a wait that can never end), prints `what` and ends
/// the test process, since the stuck thread (and whatever waits behind it in
/// other tests of the binary) would keep the harness waiting forever. A panic
/// in `body` fails here. The waiting thread's allocations are [`uncounted`]
/// (it allocates as it first blocks, at a time the scheduler picks); those
/// of `body` count.
pub fn within_a_deadline(what: &str, limit: Duration, body: impl FnOnce() + Send + 'static) {
    let (done_tx, done_rx) = mpsc::channel();
    let runner = thread::spawn(move || {
        body();
        let _ = done_tx.send(());
    });
    match uncounted(|| done_rx.recv_timeout(limit)) {
        Ok(()) => runner.join().expect("finished"),
        Err(mpsc::RecvTimeoutError::Disconnected) => {
            // It panicked: fail with its message.
            if let Err(panic) = runner.join() {
                std::panic::resume_unwind(panic);
            }
        }
        Err(mpsc::RecvTimeoutError::Timeout) => {
            // One write to fd 2, not through std's stderr lock, which the
            // stuck thread may hold (a test of a wait that must not need it).
            let line = format!(
                "{what}: still waiting after {limit:?}, which can only be a wait that never ends\n"
            );
            // SAFETY: a valid buffer of `line.len()` bytes; a failed write is
            // harmless.
            let _ = unsafe { libc::write(2, line.as_ptr().cast(), line.len()) };
            std::process::exit(101);
        }
    }
}

/// How long [`in_a_child_process`] lets the child run: above the bounded
/// waits of the longest test run that way (rcu-lite's fork tests allow
/// themselves 240 s in all, hazptr's a 60 s deadline around a 40 s child
/// alarm), so that a slow child on a loaded machine fails with its own
/// message rather than being killed as hung. A child that passes takes
/// seconds.
pub const CHILD_PROCESS_LIMIT: Duration = Duration::from_secs(300);

/// Points this process's stderr at a pipe whose read end is closed: every
/// later write to fd 2 fails with `EPIPE` (Rust ignores `SIGPIPE`). For a
/// child process (see [`in_a_child_process`]) whose code must not panic or
/// die when it cannot report.
pub fn stderr_to_a_pipe_nobody_reads() {
    let mut ends = [0; 2];
    // SAFETY: `ends` is a two-element array, as pipe(2) writes; the read end
    // is closed and the write end replaces fd 2, closing nothing else.
    unsafe {
        assert_eq!(libc::pipe(ends.as_mut_ptr()), 0);
        assert_eq!(libc::close(ends[0]), 0);
        assert_eq!(libc::dup2(ends[1], 2), 2);
        assert_eq!(libc::close(ends[1]), 0);
    }
}

/// Runs the test named `test` of this test binary again in a child process,
/// with the environment variable `env` set to `case` (the test does the
/// case's work when it finds `env` set, and otherwise calls this), and fails
/// unless the child exits with 0 within [`CHILD_PROCESS_LIMIT`]: a panic in a
/// thread-local destructor aborts the child, not the test binary, and a hang
/// is killed. The message gives the child's stderr.
pub fn in_a_child_process(test: &str, env: &str, case: &str) {
    let (status, stderr) = run_in_a_child_process(test, env, case);
    assert!(
        status.success(),
        "{case}: the child failed ({status:?}); stderr:\n{stderr}"
    );
}

/// Runs `test` in a child process as [`in_a_child_process`] does, with the
/// variables `extra` set too, fails unless it passed, and returns its
/// stderr, for a case whose messages the parent checks (the stall warnings'
/// tests, whose timeout variable is not the child's marker: a user who sets
/// it for the whole test run must not turn the parents into children).
pub fn stderr_of_a_passing_child_process(
    test: &str,
    env: &str,
    case: &str,
    extra: &[(&str, &str)],
) -> String {
    let (status, stderr) = run_in_a_child_process_with(test, env, case, extra);
    assert!(
        status.success(),
        "{test} ({case}): the child failed ({status:?}); stderr:\n{stderr}"
    );
    stderr
}

/// Runs `test` in a child process as [`in_a_child_process`] does, for a case
/// that must end the process with `abort()` (a misuse no caller could go on
/// from), and returns the child's stderr, to check the message; fails unless
/// the child died of `SIGABRT` within [`CHILD_PROCESS_LIMIT`].
pub fn stderr_of_an_aborted_child_process(test: &str, env: &str, case: &str) -> String {
    use std::os::unix::process::ExitStatusExt;
    let (status, stderr) = run_in_a_child_process(test, env, case);
    assert_eq!(
        status.signal(),
        Some(libc::SIGABRT),
        "{case}: the child was not aborted ({status:?}); stderr:\n{stderr}"
    );
    stderr
}

/// Runs `test` in a child process as [`in_a_child_process`] does, and returns
/// how it exited and its stderr, for a case with an outcome of its own to
/// check; fails if the child still runs after [`CHILD_PROCESS_LIMIT`] (it is
/// killed), or if its test harness did not start exactly that one test: a
/// name that matches no test (a test renamed, a unit test named without its
/// module path) or an ignored one makes the child exit 0 having run nothing.
pub fn run_in_a_child_process(
    test: &str,
    env: &str,
    case: &str,
) -> (std::process::ExitStatus, String) {
    run_in_a_child_process_with(test, env, case, &[])
}

/// [`run_in_a_child_process`] with the variables `extra` set too.
pub fn run_in_a_child_process_with(
    test: &str,
    env: &str,
    case: &str,
    extra: &[(&str, &str)],
) -> (std::process::ExitStatus, String) {
    // A parent run with `--ignored` or `--include-ignored` (cargo test --
    // --include-ignored) may be an ignored test itself: the child must run
    // it too, or it skips it and the check below blames the test's name.
    let include_ignored = std::env::args().any(|a| a == "--ignored" || a == "--include-ignored");
    let mut child = std::process::Command::new(std::env::current_exe().expect("the test binary"))
        .args([test, "--exact", "--nocapture", "--test-threads=1"])
        .args(include_ignored.then_some("--include-ignored"))
        .env(env, case)
        .envs(extra.iter().copied())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run the child");
    // Read stdout and stderr on threads of their own, so that a child
    // writing much to either cannot block on a full pipe while this thread
    // waits for its exit.
    fn read_all(mut pipe: impl std::io::Read + Send + 'static) -> thread::JoinHandle<String> {
        thread::spawn(move || {
            let mut bytes = Vec::new();
            let _ = pipe.read_to_end(&mut bytes);
            String::from_utf8_lossy(&bytes).into_owned()
        })
    }
    let stdout = read_all(child.stdout.take().expect("piped stdout"));
    let stderr = read_all(child.stderr.take().expect("piped stderr"));
    let deadline = Instant::now() + CHILD_PROCESS_LIMIT;
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for the child") {
            break Some(status);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        thread::sleep(Duration::from_millis(10));
    };
    let stdout = stdout.join().unwrap_or_default();
    let stderr = stderr.join().unwrap_or_default();
    let Some(status) = status else {
        panic!(
            "{case}: the child still ran after {CHILD_PROCESS_LIMIT:?} (hung); stderr:\n{stderr}"
        )
    };
    // libtest prints "running N tests" (flushed: stdout is line-buffered)
    // before it runs any, so the line is there even when the test aborted
    // the child; an ignored test is listed as "test NAME ... ignored".
    let ran_one = stdout.lines().any(|line| line == "running 1 test")
        && !stdout.contains(&format!("test {test} ... ignored"));
    assert!(
        ran_one,
        "{case}: the child ran no test: {test:?} names no test of this binary that runs \
         (give the full path, with the module, of a test that is not ignored); \
         stdout:\n{stdout}\nstderr:\n{stderr}"
    );
    (status, stderr)
}

/// Runs `threads` threads one after another, each of which only sets a
/// POSIX thread-specific key (created here) whose destructor is `at_exit`:
/// glibc runs `at_exit` in each thread's exit after every thread-local
/// destructor, as it would another library's "at thread exit" hook that
/// calls into Rust. Returns once the last thread is joined.
pub fn threads_exiting_through_a_key(
    threads: usize,
    at_exit: unsafe extern "C" fn(*mut libc::c_void),
) {
    let mut key: libc::pthread_key_t = 0;
    // SAFETY: a valid out-pointer and an `extern "C"` destructor for the
    // process's whole life (the key is never deleted).
    let created = unsafe { libc::pthread_key_create(&raw mut key, Some(at_exit)) };
    assert_eq!(created, 0, "pthread_key_create");
    for _ in 0..threads {
        thread::spawn(move || {
            // SAFETY: a key of this process; the value is only a flag, and
            // non-null, which is what makes glibc call the destructor.
            let set = unsafe { libc::pthread_setspecific(key, std::ptr::dangling()) };
            assert_eq!(set, 0, "pthread_setspecific");
        })
        .join()
        .expect("the thread ran");
    }
}

/// CPU time the calling thread has used (`CLOCK_THREAD_CPUTIME_ID`): what a
/// test compares with the wall time of a wait, to tell a waiter that sleeps
/// from one that spins or yields.
pub fn thread_cpu_time() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid place for the result.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    assert_eq!(rc, 0, "clock_gettime(CLOCK_THREAD_CPUTIME_ID)");
    Duration::new(
        u64::try_from(ts.tv_sec).expect("non-negative"),
        u32::try_from(ts.tv_nsec).expect("under a second"),
    )
}

/// The resolution of `CLOCK_MONOTONIC_COARSE` (a timer tick, which hazptr's
/// retirement clock counts in) in whole milliseconds, at least 1. Under miri,
/// whose clocks are its own and which has no `clock_getres`, 1.
pub fn coarse_clock_tick_ms() -> u64 {
    if cfg!(miri) {
        return 1;
    }
    let mut res = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `res` is a valid place for the result.
    let rc = unsafe { libc::clock_getres(libc::CLOCK_MONOTONIC_COARSE, &mut res) };
    assert_eq!(rc, 0, "clock_getres(CLOCK_MONOTONIC_COARSE)");
    let ms = u64::try_from(res.tv_sec).expect("non-negative") * 1000
        + u64::try_from(res.tv_nsec).expect("non-negative") / 1_000_000;
    ms.max(1)
}

/// The process's mapped size, from `/proc/self/status` (in the type of a
/// limit: 32 bits on a 32-bit target).
fn vm_size() -> libc::rlim_t {
    let status = std::fs::read_to_string("/proc/self/status").expect("read /proc/self/status");
    let line = status
        .lines()
        .find(|line| line.starts_with("VmSize:"))
        .expect("a VmSize line");
    let kib: libc::rlim_t = line
        .split_whitespace()
        .nth(1)
        .and_then(|kib| kib.parse().ok())
        .expect("VmSize in kB");
    kib * 1024
}

/// Runs `body` with the address-space limit 1 MiB above what is mapped now:
/// a thread's stack (2 MiB) cannot be mapped meanwhile, so every thread
/// start in `body` fails. The limit is the whole process's: call it where no
/// other thread starts one meanwhile, and in a process where no thread has
/// exited yet (glibc reuses an exited thread's cached stack without mapping
/// one). The limit comes back however `body` ends.
pub fn with_no_room_for_a_thread<R>(body: impl FnOnce() -> R) -> R {
    /// Puts the limits back when dropped, a panic of `body` included.
    struct Restore(libc::rlimit);
    impl Drop for Restore {
        fn drop(&mut self) {
            // SAFETY: the limits read before they were lowered.
            let rc = unsafe { libc::setrlimit(libc::RLIMIT_AS, &self.0) };
            if rc != 0 && !std::thread::panicking() {
                panic!("setrlimit(RLIMIT_AS) failed to restore the limit");
            }
        }
    }
    let mut old = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `old` is a valid place for the limits.
    assert_eq!(unsafe { libc::getrlimit(libc::RLIMIT_AS, &mut old) }, 0);
    let tight = libc::rlimit {
        rlim_cur: vm_size() + (1 << 20),
        rlim_max: old.rlim_max,
    };
    // SAFETY: a valid limit, lower than the hard limit it keeps.
    assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_AS, &tight) }, 0);
    let _restore = Restore(old);
    body()
}

/// The scheduler state (`R`, `S`, ...) of each of this process's threads
/// named `name`, as `/proc/self/task/*/stat` shows it (Linux). The kernel
/// keeps the first 15 bytes of a thread's name, and so does the match here.
/// A thread that exits while this reads is left out.
pub fn thread_states(name: &str) -> Vec<char> {
    let name = &name[..name.len().min(15)];
    let mut states = Vec::new();
    for task in std::fs::read_dir("/proc/self/task").expect("/proc/self/task lists the threads") {
        let path = task.expect("a /proc/self/task entry").path();
        // A thread that exited meanwhile has no files left: skip it.
        let Ok(comm) = std::fs::read_to_string(path.join("comm")) else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(path.join("stat")) else {
            continue;
        };
        if comm.trim_end() == name {
            // "tid (comm) S ...": the state follows the last ')'.
            let after = &stat[stat
                .rfind(')')
                .expect("stat names the thread in parentheses")
                + 1..];
            if let Some(state) = after.trim_start().chars().next() {
                states.push(state);
            }
        }
    }
    states
}

/// The blocked-signal mask (`SigBlk` in `/proc/self/task/*/status`; bit
/// `n - 1` for signal `n`) of each of this process's threads named `name`
/// (matched as in [`thread_states`]).
pub fn blocked_signals(name: &str) -> Vec<u64> {
    let name = &name[..name.len().min(15)];
    let mut masks = Vec::new();
    for task in std::fs::read_dir("/proc/self/task").expect("/proc/self/task lists the threads") {
        let path = task.expect("a /proc/self/task entry").path();
        // A thread that exited meanwhile has no files left: skip it.
        let (Ok(comm), Ok(status)) = (
            std::fs::read_to_string(path.join("comm")),
            std::fs::read_to_string(path.join("status")),
        ) else {
            continue;
        };
        if comm.trim_end() == name {
            let mask = status
                .lines()
                .find_map(|l| l.strip_prefix("SigBlk:"))
                .expect("status has a SigBlk line");
            masks.push(u64::from_str_radix(mask.trim(), 16).expect("SigBlk is hex"));
        }
    }
    masks
}

/// The timer slack in nanoseconds (`/proc/TID/timerslack_ns`) of each of
/// this process's threads named `name` (matched as in [`thread_states`]);
/// `None` where the kernel refuses to show another thread's slack (it asks
/// for `CAP_SYS_NICE`, which a test run as an ordinary user lacks), for the
/// caller to skip its check and say so.
pub fn timer_slacks_ns(name: &str) -> Option<Vec<u64>> {
    let name = &name[..name.len().min(15)];
    let mut slacks = Vec::new();
    for task in std::fs::read_dir("/proc/self/task").expect("/proc/self/task lists the threads") {
        let task = task.expect("a /proc/self/task entry");
        // A thread that exited meanwhile has no files left: skip it.
        let Ok(comm) = std::fs::read_to_string(task.path().join("comm")) else {
            continue;
        };
        if comm.trim_end() != name {
            continue;
        }
        // Only the /proc/TID directory has the file, not .../task/TID.
        let tid = task.file_name().into_string().expect("a tid");
        match std::fs::read_to_string(format!("/proc/{tid}/timerslack_ns")) {
            Ok(slack) => slacks.push(slack.trim().parse().expect("timerslack_ns is a number")),
            Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => return None,
            // Exited meanwhile.
            Err(_) => {}
        }
    }
    Some(slacks)
}

/// Returns once the one thread named `name` has the kernel's default timer
/// slack, 50 us (see [`timer_slacks_ns`]), which a thread sets as it
/// starts, a little after it has its name; panics with what it last read if
/// that has not happened within `limit`. Where reading another thread's
/// slack is refused, says so on stderr, past the test harness's capture
/// (which hides a passing test's `eprintln!`), and returns; unless
/// `SYNCPRIMS_REQUIRE_SLACK_CHECK` is set, as `.ci/run` sets it, and then
/// panics: a CI that lost the capability must not pass the check unchecked.
pub fn until_default_timer_slack(name: &str, limit: Duration) {
    let deadline = deadline_after(limit);
    loop {
        let Some(slacks) = timer_slacks_ns(name) else {
            assert!(
                std::env::var_os("SYNCPRIMS_REQUIRE_SLACK_CHECK").is_none(),
                "SYNCPRIMS_REQUIRE_SLACK_CHECK is set but {name}'s timer slack cannot be read: \
                 reading another thread's /proc/TID/timerslack_ns needs CAP_SYS_NICE"
            );
            let line =
                format!("note: {name}'s timer slack not checked: reading it needs CAP_SYS_NICE\n");
            // SAFETY: a valid buffer of `line.len()` bytes; a failed write is
            // harmless.
            let _ = unsafe { libc::write(2, line.as_ptr().cast(), line.len()) };
            return;
        };
        if slacks == [50_000] {
            return;
        }
        assert!(
            !past(deadline),
            "{name}'s timer slack is {slacks:?} ns, not the default 50000"
        );
        thread::sleep(Duration::from_millis(1));
    }
}

/// Sets this thread's timer slack (`PR_SET_TIMERSLACK`) to `ns`: a thread
/// that starts a library's threads with the slack a program gives its
/// background threads.
pub fn set_this_threads_timer_slack(ns: u64) {
    // SAFETY: PR_SET_TIMERSLACK takes its value as the second argument and
    // reads no memory.
    let rc = unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, ns as libc::c_ulong) };
    assert_eq!(rc, 0, "prctl(PR_SET_TIMERSLACK, {ns})");
}

/// Checks that `mask` (see [`blocked_signals`]) blocks the signals a
/// process is sent (`SIGINT`, `SIGTERM`, `SIGUSR1`, `SIGALRM`, `SIGCHLD`,
/// `SIGPROF`) and leaves the faults a thread raises on itself (`SIGSEGV`,
/// `SIGBUS`, `SIGFPE`, `SIGILL`) unblocked; panics naming `thread`.
pub fn assert_blocks_process_signals(thread: &str, mask: u64) {
    let bit = |sig: libc::c_int| 1u64 << (sig - 1);
    for (sig, name) in [
        (libc::SIGINT, "SIGINT"),
        (libc::SIGTERM, "SIGTERM"),
        (libc::SIGUSR1, "SIGUSR1"),
        (libc::SIGALRM, "SIGALRM"),
        (libc::SIGCHLD, "SIGCHLD"),
        (libc::SIGPROF, "SIGPROF"),
    ] {
        assert!(
            mask & bit(sig) != 0,
            "{thread} does not block {name} (SigBlk {mask:016x})"
        );
    }
    for (sig, name) in [
        (libc::SIGSEGV, "SIGSEGV"),
        (libc::SIGBUS, "SIGBUS"),
        (libc::SIGFPE, "SIGFPE"),
        (libc::SIGILL, "SIGILL"),
    ] {
        assert!(
            mask & bit(sig) == 0,
            "{thread} blocks {name} (SigBlk {mask:016x})"
        );
    }
}

/// Empties this thread's blocked-signal mask: a thread that starts a
/// library's threads with nothing blocked, as a program's threads usually
/// are.
pub fn unblock_every_signal_on_this_thread() {
    // SAFETY: `sigset_t` is plain bits, which `sigemptyset` initialises;
    // `pthread_sigmask` reads `empty`.
    unsafe {
        let mut empty: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut empty);
        assert_eq!(
            libc::pthread_sigmask(libc::SIG_SETMASK, &empty, std::ptr::null_mut()),
            0
        );
    }
}

/// This thread's blocked-signal mask as `/proc` shows it (see
/// [`blocked_signals`]).
pub fn this_threads_blocked_signals() -> u64 {
    let status = std::fs::read_to_string("/proc/thread-self/status").expect("/proc/thread-self");
    let mask = status
        .lines()
        .find_map(|l| l.strip_prefix("SigBlk:"))
        .expect("status has a SigBlk line");
    u64::from_str_radix(mask.trim(), 16).expect("SigBlk is hex")
}

/// Whether a thread of this process named `name` (see [`thread_states`])
/// appears within `limit`: a thread sets its name once it runs, a little
/// after the call that spawned it returned.
pub fn thread_appears(name: &str, limit: Duration) -> bool {
    let deadline = deadline_after(limit);
    loop {
        if !thread_states(name).is_empty() {
            return true;
        }
        if past(deadline) {
            return false;
        }
        thread::sleep(Duration::from_millis(5));
    }
}

/// Whether the thread `tid` of this process is gone from
/// `/proc/self/task` within `limit`: a thread that was joined may still be
/// listed a moment after the join returns (the kernel clears the id that
/// `join` waits for before it unlists the thread).
pub fn thread_unlisted(tid: i32, limit: Duration) -> bool {
    let deadline = deadline_after(limit);
    let entry = std::path::PathBuf::from(format!("/proc/self/task/{tid}"));
    loop {
        if !entry.exists() {
            return true;
        }
        if past(deadline) {
            return false;
        }
        thread::sleep(Duration::from_millis(1));
    }
}

/// Returns once the one thread of this process named `name` has been seen
/// asleep (`S`, see [`thread_states`]) on `looks` reads in a row, 2 ms
/// apart; panics with `what` and the states last read if that has not
/// happened within `limit`. A thread that blocks when it has nothing to do
/// passes; one that spins, or has not started, does not.
pub fn until_asleep(name: &str, looks: usize, limit: Duration, what: &str) {
    let deadline = deadline_after(limit);
    let mut asleep_in_a_row = 0;
    while asleep_in_a_row < looks {
        let states = thread_states(name);
        asleep_in_a_row = if states == ['S'] {
            asleep_in_a_row + 1
        } else {
            0
        };
        assert!(
            !past(deadline),
            "{what}: {name:?} not seen asleep {looks} times in a row within {limit:?} \
             (states last read: {states:?})"
        );
        thread::sleep(Duration::from_millis(2));
    }
}

/// The instant `limit` from now; `None` (no deadline) where that is past
/// what `Instant` holds (`Duration::MAX`, say), instead of a panic.
fn deadline_after(limit: Duration) -> Option<Instant> {
    Instant::now().checked_add(limit)
}

/// Whether `deadline` (from [`deadline_after`]) has passed.
fn past(deadline: Option<Instant>) -> bool {
    deadline.is_some_and(|deadline| Instant::now() >= deadline)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nothing() {}

    /// A limit too far for `Instant` is no limit: the helpers that take one
    /// do not panic on it (`thread_appears` with `Duration::MAX` did, until
    /// 2026-12-07).
    #[test]
    fn a_limit_past_what_instant_holds_is_no_limit() {
        assert_eq!(deadline_after(Duration::MAX), None);
        assert!(!past(None));
        assert!(past(deadline_after(Duration::ZERO)));
        assert!(!past(deadline_after(Duration::from_secs(3_600))));
        let name = "limit-max";
        let (done, wait) = std::sync::mpsc::channel::<()>();
        let thread = thread::Builder::new()
            .name(name.into())
            .spawn(move || {
                let _ = wait.recv();
            })
            .unwrap();
        assert!(thread_appears(name, Duration::MAX));
        drop(done);
        thread.join().unwrap();
    }

    /// Held by the tests here that panic and by the one that forks: a
    /// panic printing its backtrace (`RUST_BACKTRACE=1`) holds std's
    /// backtrace lock, and a child forked meanwhile that panics waits for
    /// that lock for ever (its `CHILD_ALARM_S` alarm then ends it).
    static PANIC_OR_FORK: Mutex<()> = Mutex::new(());

    fn panic_or_fork() -> std::sync::MutexGuard<'static, ()> {
        PANIC_OR_FORK.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn panicking_child_hook() {
        panic!("the child hook failed");
    }

    /// A child hook that panics fails the child, and `child` does not run.
    #[test]
    #[cfg_attr(miri, ignore = "fork(2), which miri does not implement")]
    fn a_panicking_child_hook_fails_the_child() {
        let _serial = panic_or_fork();
        let hooks = ForkHooks {
            before: nothing,
            after_parent: nothing,
            after_child: panicking_child_hook,
        };
        // SAFETY: the child uses nothing of the parent's.
        let status = unsafe {
            // SAFETY: plain libc call, in the child only.
            fork_and_wait(hooks, || libc::_exit(0))
        };
        assert!(
            libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 1,
            "wait status {status:#x}"
        );
        let fine = ForkHooks {
            after_child: nothing,
            ..hooks
        };
        // SAFETY: the child uses nothing of the parent's.
        assert_child_succeeded(unsafe { fork_and_wait(fine, || {}) }, "nothing");
    }

    /// Set in the child processes of the tests below.
    const CHILD_ENV: &str = "TEST_SUPPORT_CHILD_CASE";

    /// A child that runs its test passes.
    #[test]
    #[cfg_attr(miri, ignore = "a child process, which miri does not start")]
    fn a_child_process_that_runs_its_test_passes() {
        if std::env::var_os(CHILD_ENV).is_some() {
            return;
        }
        in_a_child_process(
            "tests::a_child_process_that_runs_its_test_passes",
            CHILD_ENV,
            "1",
        );
    }

    /// An ignored test that runs itself in a child process, run on request
    /// (`--ignored`), runs there too.
    #[test]
    #[ignore = "checks `--ignored` runs; its child must run it too"]
    fn an_ignored_test_in_a_child_process() {
        if std::env::var_os(CHILD_ENV).is_some() {
            return;
        }
        in_a_child_process("tests::an_ignored_test_in_a_child_process", CHILD_ENV, "1");
    }

    /// A name that matches no test of the binary (a test renamed, a unit
    /// test named without its module path) runs nothing in the child, which
    /// libtest reports as a success: that must fail, not pass unchecked.
    #[test]
    #[cfg_attr(miri, ignore = "a child process, which miri does not start")]
    fn a_child_process_that_runs_no_test_fails() {
        let _serial = panic_or_fork();
        for name in [
            "no_such_test_in_this_binary",
            // The test above, without its module path.
            "a_child_process_that_runs_its_test_passes",
        ] {
            let outcome = catch_unwind(|| in_a_child_process(name, CHILD_ENV, "1"));
            let payload = outcome.expect_err("a child that ran no test passed");
            let message = crate::misuse::message_of(&*payload);
            assert!(message.contains("ran no test"), "{message}");
        }
    }
}
