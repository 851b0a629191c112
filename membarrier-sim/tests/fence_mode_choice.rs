//! How a fresh process chooses the fence mode, and what registration does:
//! each test runs again in a child process of its own (through
//! `test_support::in_a_child_process`), because the mode is decided once per
//! process and a registration or a seccomp filter cannot be undone.
#![cfg(all(target_os = "linux", not(miri)))]

use membarrier_sim::fence::{self, Mode};
use membarrier_sim::sys::{self, Command, Error};

/// Set in the child: run the case instead of starting a child.
const CHILD: &str = "MEMBARRIER_SIM_MODE_CHILD";

fn in_the_child() -> bool {
    std::env::var_os(CHILD).is_some()
}

/// Whether the environment asks for SeqCst fences, which the child
/// processes inherit.
fn seqcst_asked_for() -> bool {
    std::env::var(fence::MODE_ENV).as_deref() == Ok("seqcst")
}

/// `heavy()` calls that issued `MEMBARRIER_CMD_PRIVATE_EXPEDITED` so far
/// (0 without debug assertions, which do not count).
fn private_expedited_issued() -> u64 {
    sys::issued(Command::PrivateExpedited).unwrap_or(0)
}

/// The kernel refuses `PRIVATE_EXPEDITED` from a process that has not
/// registered for it: the wrapper must issue that command (not, say,
/// `MEMBARRIER_CMD_GLOBAL`, which needs no registration and would succeed
/// here) and report `NotRegistered` until `register` has run.
#[test]
fn private_expedited_is_refused_until_the_process_registers() {
    if !in_the_child() {
        return test_support::in_a_child_process(
            "private_expedited_is_refused_until_the_process_registers",
            CHILD,
            "1",
        );
    }
    if !sys::query().contains(Command::PrivateExpedited) {
        eprintln!("no PRIVATE_EXPEDITED on this kernel: nothing to register for");
        return;
    }
    assert!(!sys::is_registered(Command::PrivateExpedited));
    let err = sys::private_expedited().unwrap_err();
    assert!(
        matches!(
            err,
            Error::NotRegistered {
                command: Command::PrivateExpedited
            }
        ),
        "{err}"
    );
    sys::register(Command::PrivateExpedited).unwrap();
    assert!(sys::is_registered(Command::PrivateExpedited));
    sys::private_expedited().unwrap();
}

/// The targeted form (`MEMBARRIER_CMD_FLAG_CPU`) really makes the call:
/// before registration the kernel refuses it, after it the call succeeds
/// and is counted. A targeted call that returned `Ok` without the syscall
/// would pass for a barrier on that CPU.
#[test]
fn a_targeted_rseq_barrier_is_refused_until_the_process_registers() {
    if !in_the_child() {
        return test_support::in_a_child_process(
            "a_targeted_rseq_barrier_is_refused_until_the_process_registers",
            CHILD,
            "1",
        );
    }
    if !sys::query().contains(Command::PrivateExpeditedRseq) {
        eprintln!("no PRIVATE_EXPEDITED_RSEQ on this kernel: nothing to register for");
        return;
    }
    let cpu = sys::online_cpus().iter().next().unwrap();
    let online = sys::OnlineCpu::new(cpu).unwrap();
    for err in [
        sys::private_expedited_rseq(Some(cpu)).unwrap_err(),
        sys::private_expedited_rseq_on(online).unwrap_err(),
    ] {
        assert!(
            matches!(
                err,
                Error::NotRegistered {
                    command: Command::PrivateExpeditedRseq
                }
            ),
            "{err}"
        );
    }
    sys::register(Command::PrivateExpeditedRseq).unwrap();
    let before = sys::issued(Command::PrivateExpeditedRseq);
    sys::private_expedited_rseq(Some(cpu)).unwrap();
    sys::private_expedited_rseq_on(online).unwrap();
    if let Some(before) = before {
        assert_eq!(sys::issued(Command::PrivateExpeditedRseq), Some(before + 2));
    }
}

/// `force(Mode::Membarrier)` registers the process before it settles on
/// membarrier mode: a `heavy()` after it must issue the command, not abort
/// with "not registered".
#[test]
fn forcing_membarrier_mode_registers_the_process() {
    if !in_the_child() {
        return test_support::in_a_child_process(
            "forcing_membarrier_mode_registers_the_process",
            CHILD,
            "1",
        );
    }
    // `SYNCPRIMS_FENCE=seqcst` in the environment holds against forcing
    // (see the test after next), as does a kernel without the command.
    if !sys::query().contains(Command::PrivateExpedited) || seqcst_asked_for() {
        assert_eq!(
            fence::force(Mode::Membarrier).map_err(|e| e.decided),
            Err(Mode::SeqCst)
        );
        return;
    }
    assert_eq!(fence::force(Mode::Membarrier), Ok(()));
    assert!(
        sys::is_registered(Command::PrivateExpedited),
        "force(Membarrier) chose membarrier mode without registering"
    );
    let before = private_expedited_issued();
    fence::light();
    fence::heavy();
    if sys::issued(Command::PrivateExpedited).is_some() {
        assert_eq!(private_expedited_issued(), before + 1);
    }
}

/// A `light()` that runs before any other fence function decides the mode
/// (and then fences in it): afterwards the mode is fixed, and forcing the
/// other one is refused. A `light()` that skipped the undecided path would
/// issue no fence at all, and leave the mode to whatever ran next.
#[test]
fn the_first_light_fence_decides_the_mode() {
    if !in_the_child() {
        return test_support::in_a_child_process(
            "the_first_light_fence_decides_the_mode",
            CHILD,
            "1",
        );
    }
    let expected = if std::env::var(fence::MODE_ENV).as_deref() == Ok("seqcst")
        || !sys::query().contains(Command::PrivateExpedited)
    {
        Mode::SeqCst
    } else {
        Mode::Membarrier
    };
    let other = match expected {
        Mode::Membarrier => Mode::SeqCst,
        Mode::SeqCst => Mode::Membarrier,
    };
    fence::light();
    assert_eq!(
        fence::force(other).map_err(|e| e.decided),
        Err(expected),
        "the first light() left the mode undecided"
    );
    assert_eq!(
        sys::is_registered(Command::PrivateExpedited),
        expected == Mode::Membarrier
    );
}

/// Any other value of `SYNCPRIMS_FENCE` is ignored, `membarrier` and a
/// differently spelt `SeqCst` included: the automatic choice stands (the
/// module docs, *Mode choice*). Until 2026-12-07 no test set one.
#[test]
fn another_value_of_the_environment_variable_leaves_the_automatic_choice() {
    let value = std::env::var(fence::MODE_ENV);
    if !matches!(value.as_deref(), Ok("membarrier" | "SeqCst")) {
        for case in ["membarrier", "SeqCst"] {
            test_support::in_a_child_process(
                "another_value_of_the_environment_variable_leaves_the_automatic_choice",
                fence::MODE_ENV,
                case,
            );
        }
        return;
    }
    let automatic = if sys::query().contains(Command::PrivateExpedited) {
        Mode::Membarrier
    } else {
        Mode::SeqCst
    };
    assert_eq!(fence::mode(), automatic, "{}={value:?}", fence::MODE_ENV);
}

/// `SYNCPRIMS_FENCE=seqcst` picks the fallback without asking the kernel:
/// no registration, and `heavy()` issues no membarrier.
#[test]
fn the_environment_variable_selects_the_seqcst_fallback() {
    if std::env::var(fence::MODE_ENV).as_deref() != Ok("seqcst") {
        return test_support::in_a_child_process(
            "the_environment_variable_selects_the_seqcst_fallback",
            fence::MODE_ENV,
            "seqcst",
        );
    }
    assert_eq!(fence::mode(), Mode::SeqCst);
    let before = private_expedited_issued();
    fence::light();
    fence::heavy();
    assert_eq!(
        private_expedited_issued(),
        before,
        "heavy() in SeqCst mode issued membarrier"
    );
}

/// `SYNCPRIMS_FENCE=seqcst` holds against code that forces membarrier mode
/// too: the variable is the user's way out of a fence mode that misbehaves
/// on their system, so `force(Mode::Membarrier)` settles on SeqCst, without
/// registering.
#[test]
fn the_environment_variable_holds_against_forcing_membarrier_mode() {
    if std::env::var(fence::MODE_ENV).as_deref() != Ok("seqcst") {
        return test_support::in_a_child_process(
            "the_environment_variable_holds_against_forcing_membarrier_mode",
            fence::MODE_ENV,
            "seqcst",
        );
    }
    assert_eq!(
        fence::force(Mode::Membarrier).map_err(|e| e.decided),
        Err(Mode::SeqCst)
    );
    assert_eq!(fence::mode(), Mode::SeqCst);
    assert!(!sys::is_registered(Command::PrivateExpedited));
}

/// A seccomp filter (a container runtime's, say) that answers `EPERM` to
/// `MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED`: registering reports that it
/// was refused, not that the process should register, and the fences fall
/// back to SeqCst instead of choosing a membarrier mode whose `heavy()`
/// would abort.
#[test]
fn refused_registration_falls_back_to_seqcst_fences() {
    if !in_the_child() {
        return test_support::in_a_child_process(
            "refused_registration_falls_back_to_seqcst_fences",
            CHILD,
            "1",
        );
    }
    if !sys::query().contains(Command::PrivateExpedited) {
        assert_eq!(fence::mode(), Mode::SeqCst);
        return;
    }
    if let Err(e) = refuse_registration() {
        eprintln!("cannot install a seccomp filter here ({e}): case not run");
        return;
    }
    let err = sys::register(Command::PrivateExpedited).unwrap_err();
    assert!(
        matches!(
            err,
            Error::Refused {
                command: Command::PrivateExpedited,
                registering: true
            }
        ),
        "{err}"
    );
    assert!(!sys::is_registered(Command::PrivateExpedited));
    assert_seqcst_fallback_for_a_refusal(true);
}

/// The fences fell back to SeqCst for a refused `PRIVATE_EXPEDITED`
/// registration (`registering`) or trial barrier, keep that refusal as the
/// reason, and issue no membarrier from then on.
fn assert_seqcst_fallback_for_a_refusal(registering: bool) {
    assert_eq!(
        fence::mode(),
        Mode::SeqCst,
        "a refused registration or barrier must leave the fences in SeqCst mode"
    );
    let reason = fence::fallback_reason();
    assert!(
        matches!(
            reason,
            Some(Error::Refused {
                command: Command::PrivateExpedited,
                registering: r
            }) if *r == registering
        ),
        "fallback_reason(): {reason:?}"
    );
    let before = private_expedited_issued();
    fence::light();
    fence::heavy();
    assert_eq!(private_expedited_issued(), before);
}

/// A seccomp filter that lets the registration through but answers `EPERM`
/// to `MEMBARRIER_CMD_PRIVATE_EXPEDITED` itself, installed before the first
/// fence (a sandbox that filters membarrier by command): the mode choice's
/// trial barrier is refused, so the fences fall back to SeqCst, keeping the
/// refusal as the reason. Choosing membarrier mode on the registration
/// alone would abort the process at the first `heavy()`.
#[test]
fn a_refused_trial_barrier_falls_back_to_seqcst_fences() {
    if !in_the_child() {
        return test_support::in_a_child_process(
            "a_refused_trial_barrier_falls_back_to_seqcst_fences",
            CHILD,
            "1",
        );
    }
    if !sys::query().contains(Command::PrivateExpedited) || seqcst_asked_for() {
        assert_eq!(fence::mode(), Mode::SeqCst);
        assert!(seqcst_asked_for() || fence::fallback_reason().is_some());
        return;
    }
    if let Err(e) = refuse_membarrier_command(PRIVATE_EXPEDITED) {
        eprintln!("cannot install a seccomp filter here ({e}): case not run");
        return;
    }
    assert_seqcst_fallback_for_a_refusal(false);
    assert!(
        sys::is_registered(Command::PrivateExpedited),
        "the registration itself was allowed"
    );
}

/// Membarrier mode chosen the usual way leaves no fallback reason.
#[test]
fn membarrier_mode_has_no_fallback_reason() {
    if !in_the_child() {
        return test_support::in_a_child_process(
            "membarrier_mode_has_no_fallback_reason",
            CHILD,
            "1",
        );
    }
    match fence::mode() {
        Mode::Membarrier => assert!(fence::fallback_reason().is_none()),
        Mode::SeqCst if seqcst_asked_for() => assert!(fence::fallback_reason().is_none()),
        Mode::SeqCst => {
            let reason = fence::fallback_reason();
            assert!(reason.is_some(), "SeqCst mode with no reason given");
            eprintln!("SeqCst fences here: {}", reason.unwrap());
        }
    }
}

/// A seccomp filter installed after the process chose membarrier mode, that
/// answers `EPERM` to `MEMBARRIER_CMD_PRIVATE_EXPEDITED` itself: `heavy()`
/// cannot fall back (light fences already issued were compiler fences), so
/// it prints why and aborts the process, naming the refused command and
/// the filter, rather than returning without a barrier or panicking into
/// code that could catch it.
#[test]
fn a_barrier_refused_after_registration_aborts_with_a_message() {
    const TEST: &str = "a_barrier_refused_after_registration_aborts_with_a_message";
    if in_the_child() {
        if !sys::query().contains(Command::PrivateExpedited) {
            eprintln!("no PRIVATE_EXPEDITED on this kernel: case not run");
            return;
        }
        if seqcst_asked_for() {
            eprintln!(
                "{}=seqcst in the environment: case not run",
                fence::MODE_ENV
            );
            return;
        }
        assert_eq!(fence::force(Mode::Membarrier), Ok(()));
        // One barrier that the kernel carries out, before the filter.
        fence::heavy();
        if let Err(e) = refuse_membarrier_command(PRIVATE_EXPEDITED) {
            eprintln!("cannot install a seccomp filter here ({e}): case not run");
            return;
        }
        if std::env::var(CHILD).as_deref() == Ok(STDERR_CLOSED) {
            test_support::stderr_to_a_pipe_nobody_reads();
        }
        fence::heavy();
        panic!("heavy() returned although the kernel refused the barrier");
    }
    let (status, stderr) = test_support::run_in_a_child_process(TEST, CHILD, "1");
    if stderr.contains("case not run") {
        eprintln!("{stderr}");
        assert!(status.success(), "{status:?}; stderr:\n{stderr}");
        return;
    }
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(
        status.signal(),
        Some(libc::SIGABRT),
        "the child was not aborted ({status:?}); stderr:\n{stderr}"
    );
    for part in [
        "fence::heavy()",
        "MEMBARRIER_CMD_PRIVATE_EXPEDITED",
        "seccomp",
        "aborting",
    ] {
        assert!(
            stderr.contains(part),
            "no {part:?} in the message:\n{stderr}"
        );
    }
    assert!(
        !stderr.contains("heavy() returned"),
        "heavy() returned before aborting:\n{stderr}"
    );

    // Again with the child's stderr a pipe whose reader has gone: writing
    // the message fails with EPIPE (Rust programs ignore SIGPIPE), and
    // `heavy()` must still abort rather than panic over the failed write
    // (which would unwind, and end the test harness with status 101).
    let (status, stderr) = test_support::run_in_a_child_process(TEST, CHILD, STDERR_CLOSED);
    assert_eq!(
        status.signal(),
        Some(libc::SIGABRT),
        "with stderr closed, the child was not aborted ({status:?}); stderr before:\n{stderr}"
    );
}

/// The child value that makes the abort case write into a closed pipe.
const STDERR_CLOSED: &str = "stderr-closed";

/// A kernel that does not know a command answers `EINVAL` to it and leaves
/// it out of `MEMBARRIER_CMD_QUERY`: that is [`Error::Unsupported`] (the
/// documented outcome before Linux 5.10 for the RSEQ pair), not an opaque
/// OS error. Emulated with seccomp: `QUERY` fails (rustix then reports an
/// empty set) and `MEMBARRIER_CMD_GLOBAL`, which needs no registration,
/// answers `EINVAL`.
#[test]
fn einval_to_a_command_the_kernel_does_not_list_is_unsupported() {
    if !in_the_child() {
        return test_support::in_a_child_process(
            "einval_to_a_command_the_kernel_does_not_list_is_unsupported",
            CHILD,
            "1",
        );
    }
    if let Err(e) = answer_membarrier_command(QUERY, libc::EPERM)
        .and_then(|()| answer_membarrier_command(GLOBAL, libc::EINVAL))
    {
        eprintln!("cannot install a seccomp filter here ({e}): case not run");
        return;
    }
    assert!(sys::query().is_empty());
    let err = sys::issue(Command::Global).unwrap_err();
    assert!(
        matches!(
            err,
            Error::Unsupported {
                command: Command::Global
            }
        ),
        "{err}"
    );
}

/// A sandbox that answers `EPERM` to every membarrier command, the query
/// included, is named as such: the query's refusal is no old kernel, and
/// "register first" would not help. (Until 2026-12-06 registration was
/// reported `Unsupported`, "the running kernel does not support", and an
/// unregistered barrier `NotRegistered`; the fences' fallback reason said
/// the kernel lacked membarrier.)
#[test]
fn a_sandbox_refusing_the_query_is_named_as_blocking_membarrier() {
    if !in_the_child() {
        return test_support::in_a_child_process(
            "a_sandbox_refusing_the_query_is_named_as_blocking_membarrier",
            CHILD,
            "1",
        );
    }
    if let Err(e) = refuse_membarrier_command(QUERY)
        .and_then(|()| refuse_membarrier_command(REGISTER_PRIVATE_EXPEDITED))
        .and_then(|()| refuse_membarrier_command(PRIVATE_EXPEDITED))
    {
        eprintln!("cannot install a seccomp filter here ({e}): case not run");
        return;
    }
    assert!(sys::query().is_empty());
    let blocked = |err: &Error| {
        matches!(
            err,
            Error::Blocked {
                command: Command::PrivateExpedited
            }
        )
    };
    let err = sys::register(Command::PrivateExpedited).unwrap_err();
    assert!(blocked(&err), "register: {err}");
    assert!(err.to_string().contains("blocks membarrier(2)"), "{err}");
    let err = sys::private_expedited().unwrap_err();
    assert!(blocked(&err), "unregistered barrier: {err}");
    // What callers that skip work membarrier cannot do test.
    assert!(err.is_unavailable());
    if !seqcst_asked_for() {
        assert_eq!(fence::mode(), Mode::SeqCst);
        let reason = fence::fallback_reason();
        assert!(reason.is_some_and(blocked), "fallback_reason(): {reason:?}");
    }
}

/// `MEMBARRIER_CMD_GLOBAL_EXPEDITED` needs no registration of the caller
/// (registering makes a process one of its targets): the kernel issues it
/// unregistered, and an `EPERM` to it (a seccomp filter's) is reported as a
/// refusal, not as "register first", which would not help. (Until
/// 2026-12-05 it was reported as `NotRegistered`.)
#[test]
fn global_expedited_needs_no_registration_and_its_eperm_is_a_refusal() {
    if !in_the_child() {
        return test_support::in_a_child_process(
            "global_expedited_needs_no_registration_and_its_eperm_is_a_refusal",
            CHILD,
            "1",
        );
    }
    if !sys::query().contains(Command::GlobalExpedited) {
        eprintln!("no GLOBAL_EXPEDITED on this kernel: case not run");
        return;
    }
    assert!(!sys::is_registered(Command::GlobalExpedited));
    sys::issue(Command::GlobalExpedited)
        .expect("the kernel issues GLOBAL_EXPEDITED for an unregistered caller");
    if let Err(e) = refuse_membarrier_command(GLOBAL_EXPEDITED) {
        eprintln!("cannot install a seccomp filter here ({e}): rest of the case not run");
        return;
    }
    let err = sys::issue(Command::GlobalExpedited).unwrap_err();
    assert!(
        matches!(
            err,
            Error::Refused {
                command: Command::GlobalExpedited,
                registering: false
            }
        ),
        "{err}"
    );
}

/// `MEMBARRIER_CMD_QUERY` in `uapi/linux/membarrier.h`.
const QUERY: u32 = 0;
/// `MEMBARRIER_CMD_GLOBAL` in `uapi/linux/membarrier.h`.
const GLOBAL: u32 = 1 << 0;
/// `MEMBARRIER_CMD_GLOBAL_EXPEDITED` in `uapi/linux/membarrier.h`.
const GLOBAL_EXPEDITED: u32 = 1 << 1;
/// `MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED` in `uapi/linux/membarrier.h`.
const REGISTER_PRIVATE_EXPEDITED: u32 = 1 << 4;
/// `MEMBARRIER_CMD_PRIVATE_EXPEDITED` in `uapi/linux/membarrier.h`.
const PRIVATE_EXPEDITED: u32 = 1 << 3;

/// Installs, on the calling thread (which runs the whole case), a seccomp
/// filter answering `EPERM` to `membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, ..)`
/// and allowing everything else.
fn refuse_registration() -> std::io::Result<()> {
    refuse_membarrier_command(REGISTER_PRIVATE_EXPEDITED)
}

/// Installs, on the calling thread, a seccomp filter answering `EPERM` to
/// `membarrier(command, ..)` and allowing everything else.
fn refuse_membarrier_command(command: u32) -> std::io::Result<()> {
    answer_membarrier_command(command, libc::EPERM)
}

/// Installs, on the calling thread, a seccomp filter answering `errno` to
/// `membarrier(command, ..)` and allowing everything else. Filters stack:
/// each call adds one.
fn answer_membarrier_command(command: u32, errno: i32) -> std::io::Result<()> {
    // `struct seccomp_data`: `nr` at 0, `args[0]` at 16 (its low half on a
    // little-endian machine; `cmd` is an `int`).
    const NR: u32 = 0;
    const ARG0: u32 = if cfg!(target_endian = "little") {
        16
    } else {
        20
    };
    let stmt = |code: u32, k: u32| libc::sock_filter {
        code: code as u16,
        jt: 0,
        jf: 0,
        k,
    };
    let jump = |code: u32, k: u32, jt: u8, jf: u8| libc::sock_filter {
        code: code as u16,
        jt,
        jf,
        k,
    };
    let mut filter = [
        stmt(libc::BPF_LD | libc::BPF_W | libc::BPF_ABS, NR),
        // Not membarrier: jump to ALLOW.
        jump(
            libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K,
            libc::SYS_membarrier as u32,
            0,
            3,
        ),
        stmt(libc::BPF_LD | libc::BPF_W | libc::BPF_ABS, ARG0),
        // Not the refused command: jump to ALLOW.
        jump(libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K, command, 0, 1),
        stmt(
            libc::BPF_RET | libc::BPF_K,
            libc::SECCOMP_RET_ERRNO | errno as u32,
        ),
        stmt(libc::BPF_RET | libc::BPF_K, libc::SECCOMP_RET_ALLOW),
    ];
    let program = libc::sock_fprog {
        len: filter.len() as u16,
        filter: filter.as_mut_ptr(),
    };
    // SAFETY: PR_SET_NO_NEW_PRIVS takes plain integers; it only restricts
    // this thread (and is what lets an unprivileged thread install a filter).
    if unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: `program` points at `filter`, both alive for the call (the
    // kernel copies the program); the filter only ever answers EPERM to one
    // membarrier command, on this thread of this child process.
    if unsafe {
        libc::prctl(
            libc::PR_SET_SECCOMP,
            libc::SECCOMP_MODE_FILTER as libc::c_ulong,
            &program as *const libc::sock_fprog,
        )
    } != 0
    {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}
