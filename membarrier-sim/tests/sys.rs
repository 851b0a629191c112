//! The real syscall on this machine's kernel (Linux).
#![cfg(target_os = "linux")]

use membarrier_sim::sys::{self, Command, Error};

/// `MEMBARRIER_CMD_QUERY` straight from the kernel: its mask, or `None`
/// where the call fails (a kernel without the syscall, a seccomp filter).
fn raw_query() -> Option<u32> {
    // SAFETY: MEMBARRIER_CMD_QUERY (0) with flags 0 and cpu 0 reads and
    // writes no memory of ours.
    let mask = unsafe { libc::syscall(libc::SYS_membarrier, 0, 0, 0) };
    u32::try_from(mask).ok()
}

/// `MEMBARRIER_CMD_PRIVATE_EXPEDITED`'s bit in the query's mask.
const PRIVATE_EXPEDITED_BIT: u32 = 1 << 3;

/// `sys::query()` reports the kernel's own mask, and every kernel this
/// project supports (4.14+) has PRIVATE_EXPEDITED. A machine whose raw
/// query fails (too old a kernel, or a sandbox's seccomp filter) must get
/// the empty set, on which the fences run their SeqCst fallback: this test
/// then checks that and says so.
#[test]
#[cfg_attr(miri, ignore = "membarrier(2), a syscall miri does not implement")]
fn query_reports_the_kernels_mask() {
    let supported = sys::query();
    let Some(raw) = raw_query() else {
        assert_eq!(
            supported.bits(),
            0,
            "the raw query failed, the crate's did not"
        );
        eprintln!("membarrier(2) is unavailable here: only the empty query was checked");
        return;
    };
    assert_eq!(
        supported.bits(),
        raw,
        "sys::query() is not the kernel's mask"
    );
    assert_ne!(
        raw & PRIVATE_EXPEDITED_BIT,
        0,
        "MEMBARRIER_CMD_QUERY returned {raw:#x}, without PRIVATE_EXPEDITED"
    );
    assert!(supported.contains(Command::PrivateExpedited));
}

/// Registering again is a no-op that keeps the command working. Needs the
/// command, which `query_reports_the_kernels_mask` checks against the
/// kernel's own answer.
#[test]
#[cfg_attr(miri, ignore = "membarrier(2), a syscall miri does not implement")]
fn registration_is_idempotent() {
    if raw_query().is_none_or(|raw| raw & PRIVATE_EXPEDITED_BIT == 0) {
        let err = sys::register(Command::PrivateExpedited).unwrap_err();
        assert!(err.is_unavailable(), "{err}");
        eprintln!("membarrier(2) is unavailable here: checked that register says so");
        return;
    }
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
