//! Stall warnings for waits on other threads: a wait that has lasted
//! [`timeout`] says so once, then again every three timeouts, as the
//! kernel's RCU CPU stall warnings do (`CONFIG_RCU_CPU_STALL_TIMEOUT`, 21 s
//! by default; `kernel/rcu/tree_stall.h`). rcu-lite's grace periods and
//! hazptr's `synchronize` use it, so that a leaked guard or registration is
//! named instead of being a silent hang; what to print is theirs.
//!
//! Invariants: a [`Watch`] reads the clock only when its owner asks it to
//! (where the wait is about to sleep, or has slept), never changes the wait
//! it watches, and under loom is never due (time must not steer a model).
//! `SYNCPRIMS_STALL_TIMEOUT_S` sets the timeout in seconds (decimals
//! allowed; `0` turns the warnings off), read once per process.

use std::time::Duration;
#[cfg(not(loom))]
use std::time::Instant;

/// The environment variable that sets [`timeout`].
pub const TIMEOUT_ENV: &str = "SYNCPRIMS_STALL_TIMEOUT_S";

/// How long a wait lasts before its first warning (`None`: never): the
/// kernel's default, 21 s, unless [`TIMEOUT_ENV`] says otherwise (from
/// 0.001 to 1e9 seconds, or 0 for never). Another value keeps the default
/// and says so once.
pub fn timeout() -> Option<Duration> {
    static TIMEOUT: std::sync::OnceLock<Option<Duration>> = std::sync::OnceLock::new();
    *TIMEOUT.get_or_init(|| {
        let default = Some(Duration::from_secs(21));
        let Ok(text) = std::env::var(TIMEOUT_ENV) else {
            return default;
        };
        match parse_timeout(&text) {
            Some(timeout) => timeout,
            None => {
                write_line(format_args!(
                    "stall warnings: {TIMEOUT_ENV}={text:?} is not a number of seconds from \
                     0.001 to 1e9 (0 turns them off): they come after 21 s"
                ));
                default
            }
        }
    })
}

/// Writes `message`, and a newline, to standard error in one `write(2)`
/// call where it can: the stall warnings, panic reports and notices of
/// hazptr, rcu-lite, qrwlock and membarrier-sim (those written where nothing
/// may be allocated, in a thread's exit, are a raw write of their own).
///
/// Not `eprintln!`, which panics when stderr cannot be written (a closed
/// pipe), nor `writeln!(std::io::stderr(), ..)`, which takes std's stderr
/// lock: the warnings are written by threads that hold what other threads
/// wait for (rcu-lite's grace-period driver flag and callback batch, hazptr's
/// scan driver flag), and a user thread that held `std::io::stderr().lock()`
/// while it waited for one of those (a `synchronize_rcu`, an `rcu_barrier`)
/// would wait for itself. One write of the whole line also keeps it from
/// being split by other threads' or processes' output (a pipe takes up to
/// 4 KiB at once). Errors are ignored: a diagnostic must not fail its
/// caller. A full pipe that nobody reads still blocks the write, as any
/// write to it does.
#[cfg(not(loom))]
pub fn write_line(message: std::fmt::Arguments<'_>) {
    use std::fmt::Write;
    let mut line = String::new();
    // A `Display` that fails leaves what it wrote, which is still worth
    // reading.
    let _ = line.write_fmt(message);
    line.push('\n');
    let mut rest = line.as_bytes();
    while !rest.is_empty() {
        // SAFETY: a valid buffer of `rest.len()` bytes; fd 2 is at worst
        // closed or not ours, and then the write fails or goes where the
        // process's own stderr output goes.
        let written = unsafe { libc::write(2, rest.as_ptr().cast(), rest.len()) };
        match usize::try_from(written) {
            Ok(0) => return,
            Ok(n) => rest = &rest[n.min(rest.len())..],
            Err(_) if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted => {
            }
            Err(_) => return,
        }
    }
}

/// Under loom: as [`write_line`] (diagnostics print nothing a model checks).
#[cfg(loom)]
pub fn write_line(message: std::fmt::Arguments<'_>) {
    eprintln!("{message}");
}

/// [`TIMEOUT_ENV`]'s value as a timeout (`Some(None)`: warnings off), or
/// `None` if it is not one.
fn parse_timeout(text: &str) -> Option<Option<Duration>> {
    match text.trim().parse::<f64>() {
        Ok(0.0) => Some(None),
        // At least a millisecond: shorter would warn at every look.
        Ok(s) if (0.001..=1e9).contains(&s) => Some(Some(Duration::from_secs_f64(s))),
        _ => None,
    }
}

/// One wait's watch. Armed (the clock read) the first time its owner asks
/// how long it may sleep or whether a warning is due; the stall counts from
/// there.
#[derive(Debug, Default)]
pub struct Watch {
    #[cfg(not(loom))]
    armed: Option<Instant>,
    /// When the next warning is due (`None`: not armed, or warnings off).
    #[cfg(not(loom))]
    due: Option<Instant>,
}

impl Watch {
    /// An unarmed watch.
    pub const fn new() -> Watch {
        Watch {
            #[cfg(not(loom))]
            armed: None,
            #[cfg(not(loom))]
            due: None,
        }
    }

    /// Arms the watch if it is not; returns the time now.
    #[cfg(not(loom))]
    fn arm(&mut self) -> Instant {
        let now = Instant::now();
        if self.armed.is_none() {
            self.armed = Some(now);
            self.due = timeout().map(|timeout| now + timeout);
        }
        now
    }

    /// The longest the wait may sleep before it must ask [`Watch::due`]
    /// again: until the next warning is due (`None`: no limit).
    pub fn sleep_limit(&mut self) -> Option<Duration> {
        #[cfg(loom)]
        return None;
        #[cfg(not(loom))]
        {
            let now = self.arm();
            self.due.map(|due| {
                due.saturating_duration_since(now)
                    .max(Duration::from_millis(1))
            })
        }
    }

    /// How long the wait has lasted, if a warning is due now; the next one
    /// is then due three timeouts later.
    #[must_use = "a due warning not printed is lost: the next one is three timeouts later"]
    pub fn due(&mut self) -> Option<Duration> {
        #[cfg(loom)]
        return None;
        #[cfg(not(loom))]
        {
            let now = self.arm();
            let (armed, due) = (self.armed?, self.due?);
            if now < due {
                return None;
            }
            self.due = timeout().map(|timeout| now + timeout * 3);
            Some(now - armed)
        }
    }
}

/// A kernel thread id (`gettid()`) as a stall warning names it: marked
/// "(exited)" when it is no longer one of this process's threads (not in
/// `/proc/self/task`). A leaked guard or record outlives its thread, and
/// the kernel may give the id to another thread, which the bare id would
/// then seem to name. (A thread that exited a moment ago may still be
/// listed.) 0, an id nobody recorded, is left as it is.
pub fn thread_id_text(tid: i32) -> String {
    if thread_exited(tid) {
        format!("{tid} (exited)")
    } else {
        tid.to_string()
    }
}

/// Whether the thread `tid` is known to have exited: it is not listed in
/// `/proc/self/task` while that directory is there. Without `/proc` (a
/// chroot, a sandbox) nothing is known, and the answer is false: until
/// 2026-12-07 every id then read as exited. 0 never has.
pub fn thread_exited(tid: i32) -> bool {
    let tasks = std::path::Path::new("/proc/self/task");
    tid != 0 && tasks.is_dir() && !tasks.join(tid.to_string()).exists()
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    /// A live thread's id is bare; one that exited is marked.
    #[test]
    #[cfg_attr(miri, ignore = "reads /proc, which miri does not offer")]
    fn an_exited_threads_id_is_marked() {
        // SAFETY: gettid() takes nothing and cannot fail.
        let me = unsafe { libc::gettid() };
        assert_eq!(thread_id_text(me), me.to_string());
        // SAFETY: as above.
        let gone = std::thread::spawn(|| unsafe { libc::gettid() })
            .join()
            .unwrap();
        // A joined thread may still be listed for a moment (as the docs
        // above say), which failed this test once in CI (2026-12-08).
        assert!(
            test_support::thread_unlisted(gone, std::time::Duration::from_secs(10)),
            "thread {gone} still listed 10 s after its join"
        );
        assert_eq!(thread_id_text(gone), format!("{gone} (exited)"));
        assert_eq!(thread_id_text(0), "0");
    }

    /// The documented range, both ends included (1e9 was refused until
    /// 2026-12-07, by the message that named it as allowed).
    #[test]
    fn the_timeout_takes_0_001_to_1e9_seconds_or_0() {
        let secs = |s: f64| Some(Some(Duration::from_secs_f64(s)));
        assert_eq!(parse_timeout("0"), Some(None));
        assert_eq!(parse_timeout(" -0 "), Some(None));
        assert_eq!(parse_timeout("0.001"), secs(0.001));
        assert_eq!(parse_timeout("1e9"), secs(1e9));
        for refused in ["0.0005", "1.000001e9", "-1", "nan", "inf", "", "21s"] {
            assert_eq!(parse_timeout(refused), None, "{refused:?}");
        }
    }

    /// An armed watch is not due before the timeout, and a warning's due
    /// time moves on by three timeouts. (The process's timeout is the
    /// default here, 21 s, unless the environment sets one.)
    #[test]
    fn a_watch_is_due_only_after_the_timeout() {
        let Some(timeout) = timeout() else { return };
        let mut watch = Watch::new();
        let limit = watch.sleep_limit().unwrap();
        assert!(limit <= timeout && limit > Duration::ZERO, "{limit:?}");
        assert_eq!(watch.due(), None);
        // As if the timeout had passed since arming.
        let armed = watch.armed.unwrap();
        watch.armed = Some(armed - timeout);
        watch.due = Some(armed);
        let waited = watch.due().expect("due");
        assert!(waited >= timeout, "{waited:?}");
        assert!(watch.due.unwrap() >= armed + timeout * 3);
        assert_eq!(watch.due(), None);
    }
}
