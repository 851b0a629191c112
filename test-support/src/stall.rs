//! The stall-warning tests' shared parts (`hazptr/tests/stall_warning.rs`,
//! `rcu-lite/tests/stall_warning.rs`): each case runs in a child process of
//! its own with the stall timeout set (the crates read it once per
//! process), and the parent reads the child's stderr; the child prints the
//! kernel ids the warnings should name.

/// The variable the stall warnings read (`futex_word::stall`); the
/// children get it set.
pub const TIMEOUT_ENV: &str = "SYNCPRIMS_STALL_TIMEOUT_S";

/// Set in the children, to the timeout they run with: not [`TIMEOUT_ENV`]
/// itself, which a user may have set for the whole test run (it would
/// turn every parent into a child that checks nothing).
pub const CHILD: &str = "SYNCPRIMS_STALL_TEST_CHILD";

/// Whether this process is a stall test's child.
pub fn in_the_child() -> bool {
    std::env::var_os(CHILD).is_some()
}

/// The stderr of the child running `test`, once it passed, with a stall
/// timeout of `timeout_s` seconds.
pub fn stderr_of(test: &str, timeout_s: &str) -> String {
    crate::stderr_of_a_passing_child_process(test, CHILD, timeout_s, &[(TIMEOUT_ENV, timeout_s)])
}

/// The calling thread's kernel id (`gettid()`), which the warnings name.
pub fn kernel_thread_id() -> i32 {
    // SAFETY: gettid() takes nothing and cannot fail.
    unsafe { libc::gettid() }
}

/// The no-warning case every stall test file has: run as the test `test`,
/// it has the child call `hold` with how long to hold a wait up (50 ms,
/// well inside a 5 s timeout; 500 ms with the warnings off, `0`), and the
/// parent run the child at both timeouts and find no stall line.
pub fn assert_no_warning_inside_the_timeout_or_when_off(
    test: &str,
    hold: impl FnOnce(std::time::Duration),
) {
    if in_the_child() {
        let off = std::env::var(TIMEOUT_ENV).as_deref() == Ok("0");
        return hold(std::time::Duration::from_millis(if off { 500 } else { 50 }));
    }
    for timeout in ["5", "0"] {
        let stderr = stderr_of(test, timeout);
        assert!(
            !stderr.contains("stall"),
            "{TIMEOUT_ENV}={timeout}: {stderr}"
        );
    }
}
