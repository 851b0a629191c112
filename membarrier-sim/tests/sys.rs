//! The real syscall on this machine's kernel.

use membarrier_sim::sys::{self, Command, Error};

#[test]
#[cfg_attr(miri, ignore = "membarrier(2), a syscall miri does not implement")]
fn query_reports_private_expedited_here() {
    let supported = sys::query();
    // Every kernel this project supports (4.14+) has PRIVATE_EXPEDITED; if this
    // fails the machine is too old or the syscall is filtered, and the fences
    // run in their SeqCst fallback.
    assert!(
        supported.contains(Command::PrivateExpedited),
        "MEMBARRIER_CMD_QUERY returned {:#x}",
        supported.bits()
    );
    assert!(supported.commands().count() >= 1);
}

#[test]
#[cfg_attr(miri, ignore = "membarrier(2), a syscall miri does not implement")]
fn registration_is_idempotent() {
    for _ in 0..3 {
        sys::register(Command::PrivateExpedited).unwrap();
        assert!(sys::is_registered(Command::PrivateExpedited));
        sys::private_expedited().unwrap();
    }
}

#[test]
#[cfg_attr(miri, ignore = "membarrier(2), a syscall miri does not implement")]
fn rseq_before_registration_is_refused_then_works() {
    if !sys::query().contains(Command::PrivateExpeditedRseq) {
        // Documented outcome on kernels before 5.10.
        let err = sys::private_expedited_rseq(None).unwrap_err();
        assert!(err.is_unavailable(), "{err}");
        return;
    }
    // This test binary registers RSEQ only here, so the first call must be refused.
    if !sys::is_registered(Command::PrivateExpeditedRseq) {
        let err = sys::private_expedited_rseq(None).unwrap_err();
        assert!(matches!(err, Error::NotRegistered { .. }), "{err}");
        assert!(err.to_string().contains("register"));
    }
    sys::register(Command::PrivateExpeditedRseq).unwrap();
    sys::private_expedited_rseq(None).unwrap();
    for cpu in sys::online_cpus().iter() {
        sys::private_expedited_rseq(Some(cpu)).unwrap();
    }
}

#[test]
#[cfg_attr(miri, ignore = "membarrier(2), a syscall miri does not implement")]
fn a_cpu_that_does_not_exist_is_a_clear_error() {
    let err = sys::private_expedited_rseq(Some(100_000)).unwrap_err();
    assert!(matches!(err, Error::BadCpu { cpu: 100_000, .. }), "{err}");
    assert!(err.to_string().contains("CPU 100000"));
    let err = sys::issue_on_cpu(Command::PrivateExpedited, Some(0)).unwrap_err();
    assert!(matches!(err, Error::CpuNotAccepted { .. }), "{err}");
}

/// `MEMBARRIER_CMD_GLOBAL` has no `REGISTER_*` command: `register` succeeds
/// exactly where the kernel offers it, and it always counts as registered.
#[test]
#[cfg_attr(miri, ignore = "membarrier(2), a syscall miri does not implement")]
fn global_needs_no_registration() {
    let supported = sys::query().contains(Command::Global);
    match sys::register(Command::Global) {
        Ok(()) => assert!(
            supported,
            "register(Global) succeeded on a kernel without it"
        ),
        Err(e) => {
            assert!(
                !supported,
                "register(Global) failed on a kernel that has it: {e}"
            );
            assert!(e.is_unavailable(), "{e}");
        }
    }
    assert!(sys::is_registered(Command::Global));
}
