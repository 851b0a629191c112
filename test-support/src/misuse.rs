//! The misuse-test harness shared by `hazptr`, `qrwlock` and `rcu-lite`
//! (each crate's `tests/misuse.rs`).
//!
//! Each misuse runs on a fresh thread under a watchdog: a misuse that returns
//! normally fails the test, and one still running after [`HANG_LIMIT`] (which
//! is what a misuse that deadlocks would do without its check) ends the test
//! process with a message, so a hang cannot pass silently.
use std::any::Any;
use std::io::Write;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

/// How long a misuse may run before it counts as a hang (miri interprets
/// every instruction, so a misuse that must first take 32768 nested read locks
/// needs minutes there).
pub const HANG_LIMIT: Duration = Duration::from_secs(if cfg!(miri) { 300 } else { 20 });

/// Runs `misuse` on a fresh thread and returns its panic message.
pub fn panic_message_of(what: &str, misuse: impl FnOnce() + Send + 'static) -> String {
    let (tx, rx) = mpsc::channel();
    let misuse_thread = thread::Builder::new()
        .name(format!("misuse: {what}"))
        .spawn(move || {
            let outcome = catch_unwind(AssertUnwindSafe(misuse));
            let message = outcome.err().map(|payload| message_of(&*payload));
            let _ = tx.send(message);
        })
        .expect("spawn the misuse thread");
    let outcome = rx.recv_timeout(HANG_LIMIT);
    if outcome.is_ok() {
        // It has sent its outcome and is exiting: join it, so that no thread
        // outlives the test (miri reports one that does).
        misuse_thread
            .join()
            .expect("the misuse thread catches its panic");
    }
    match outcome {
        Ok(Some(message)) => message,
        Ok(None) => panic!("{what}: returned normally instead of panicking"),
        Err(_) => {
            // Report outside the test harness's capture and end the process:
            // the hung thread would otherwise keep the harness waiting.
            let _ = writeln!(
                std::io::stderr(),
                "misuse test HUNG: {what} still running after {HANG_LIMIT:?} instead of panicking"
            );
            std::process::exit(101);
        }
    }
}

/// A panic's message: its `String` or `&str` payload.
pub fn message_of(payload: &(dyn Any + Send)) -> String {
    payload
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| payload.downcast_ref::<&str>().map(|s| (*s).to_owned()))
        .unwrap_or_else(|| "<non-string panic payload>".to_owned())
}

/// Calls a fork hook where it does not belong (`after_fork_child` in the
/// process that called `before_fork`, or `after_fork_parent` in its child)
/// on the calling thread, which holds what `before_fork` took: asserts that
/// it panics with a message containing `names`, which leaves that for the
/// right hook.
pub fn assert_wrong_fork_hook_refused(hook: fn(), names: &str) {
    let payload = catch_unwind(hook).expect_err("the fork hook of the other process returned");
    let message = message_of(&*payload);
    assert!(message.contains(names), "{message}");
}

/// Asserts that `misuse` panics with a message containing every one of `names`.
pub fn assert_misuse(what: &str, names: &[&str], misuse: impl FnOnce() + Send + 'static) {
    let message = panic_message_of(what, misuse);
    for name in names {
        assert!(
            message.contains(name),
            "{what}: the panic message does not name the misuse ({name:?}): {message}"
        );
    }
}

/// Runs `misuse`, then `after` (which checks that the domain still works),
/// then passes `misuse`'s panic on.
pub fn refused_then(misuse: impl FnOnce(), after: impl FnOnce()) {
    let outcome = catch_unwind(AssertUnwindSafe(misuse));
    after();
    if let Err(payload) = outcome {
        resume_unwind(payload);
    }
}
