//! The `membarrier(2)` system call.
//!
//! Mirrors the command set of `kernel/sched/membarrier.c` (`sys_membarrier()` and
//! `membarrier_private_expedited()`): query the supported commands, register the
//! process for the private expedited commands, and issue them, optionally aimed at
//! one CPU with `MEMBARRIER_CMD_FLAG_CPU` (only the `_RSEQ` command takes a CPU).
//!
//! Errors are typed. The kernel answers `EPERM` when the process is not
//! registered and `EINVAL` when it does not know a command; it never answers
//! `EPERM` to a `REGISTER_*` command, nor to a command the process registered
//! for (registration survives `fork()`), so `EPERM` there is a seccomp filter
//! or security module refusing the call ([`Error::Refused`]). It silently succeeds
//! for a target CPU that does not exist or is offline, so this module checks the
//! CPU against `/sys/devices/system/cpu/online` first and reports
//! [`Error::BadCpu`] instead of pretending a barrier happened.
//!
//! Registration is idempotent in the kernel; [`register`] also remembers what it
//! registered so that repeated calls cost no syscall.

use std::fmt;
use std::io;
#[cfg(debug_assertions)]
use std::sync::atomic::AtomicUsize;
use std::sync::atomic::{AtomicU32, Ordering};

/// A membarrier command this crate can issue or register for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Command {
    /// `MEMBARRIER_CMD_GLOBAL`: a barrier on every thread of every process
    /// (implemented by the kernel with `synchronize_rcu()`; slow).
    Global,
    /// `MEMBARRIER_CMD_GLOBAL_EXPEDITED`: IPIs to every CPU running a thread of a
    /// process registered with `REGISTER_GLOBAL_EXPEDITED`.
    GlobalExpedited,
    /// `MEMBARRIER_CMD_PRIVATE_EXPEDITED`: IPIs to every CPU running a thread of
    /// this process (Linux 4.14+). The heavy side of [`crate::fence`].
    PrivateExpedited,
    /// `MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE`: as above, plus a
    /// core-serializing instruction on each target.
    PrivateExpeditedSyncCore,
    /// `MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ`: restart the rseq critical
    /// sections of this process's threads, on every CPU or on one CPU (Linux 5.10+).
    PrivateExpeditedRseq,
}

impl Command {
    /// Every command, in the kernel's numbering order.
    pub const ALL: [Command; 5] = [
        Command::Global,
        Command::GlobalExpedited,
        Command::PrivateExpedited,
        Command::PrivateExpeditedSyncCore,
        Command::PrivateExpeditedRseq,
    ];

    /// The kernel's name for the command.
    pub fn kernel_name(self) -> &'static str {
        match self {
            Command::Global => "MEMBARRIER_CMD_GLOBAL",
            Command::GlobalExpedited => "MEMBARRIER_CMD_GLOBAL_EXPEDITED",
            Command::PrivateExpedited => "MEMBARRIER_CMD_PRIVATE_EXPEDITED",
            Command::PrivateExpeditedSyncCore => "MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE",
            Command::PrivateExpeditedRseq => "MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ",
        }
    }

    /// The kernel's command bit (`enum membarrier_cmd` in `uapi/linux/membarrier.h`).
    fn bit(self) -> u32 {
        match self {
            Command::Global => 1 << 0,
            Command::GlobalExpedited => 1 << 1,
            Command::PrivateExpedited => 1 << 3,
            Command::PrivateExpeditedSyncCore => 1 << 5,
            Command::PrivateExpeditedRseq => 1 << 7,
        }
    }

    /// The command's place in [`Command::ALL`].
    #[cfg(debug_assertions)]
    fn index(self) -> usize {
        match self {
            Command::Global => 0,
            Command::GlobalExpedited => 1,
            Command::PrivateExpedited => 2,
            Command::PrivateExpeditedSyncCore => 3,
            Command::PrivateExpeditedRseq => 4,
        }
    }

    /// The bit of the matching `REGISTER_*` command, if the command needs one.
    fn register_bit(self) -> Option<u32> {
        match self {
            Command::Global => None,
            Command::GlobalExpedited => Some(1 << 2),
            Command::PrivateExpedited => Some(1 << 4),
            Command::PrivateExpeditedSyncCore => Some(1 << 6),
            Command::PrivateExpeditedRseq => Some(1 << 8),
        }
    }

    #[cfg(target_os = "linux")]
    fn to_rustix(self) -> rustix::thread::MembarrierCommand {
        use rustix::thread::MembarrierCommand as C;
        match self {
            Command::Global => C::Global,
            Command::GlobalExpedited => C::GlobalExpedited,
            Command::PrivateExpedited => C::PrivateExpedited,
            Command::PrivateExpeditedSyncCore => C::PrivateExpeditedSyncCore,
            Command::PrivateExpeditedRseq => C::PrivateExpeditedRseq,
        }
    }

    #[cfg(target_os = "linux")]
    fn register_rustix(self) -> Option<rustix::thread::MembarrierCommand> {
        use rustix::thread::MembarrierCommand as C;
        match self {
            Command::Global => None,
            Command::GlobalExpedited => Some(C::RegisterGlobalExpedited),
            Command::PrivateExpedited => Some(C::RegisterPrivateExpedited),
            Command::PrivateExpeditedSyncCore => Some(C::RegisterPrivateExpeditedSyncCore),
            Command::PrivateExpeditedRseq => Some(C::RegisterPrivateExpeditedRseq),
        }
    }
}

impl fmt::Display for Command {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.kernel_name())
    }
}

/// The commands the running kernel supports (`MEMBARRIER_CMD_QUERY`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Supported {
    bits: u32,
}

impl Supported {
    /// Whether `command` (and its registration command, where it has one) is supported.
    pub fn contains(self, command: Command) -> bool {
        let needed = command.bit() | command.register_bit().unwrap_or(0);
        self.bits & needed == needed
    }

    /// Whether the kernel supports `membarrier` at all.
    pub fn is_empty(self) -> bool {
        self.bits == 0
    }

    /// The raw bit mask returned by `MEMBARRIER_CMD_QUERY`.
    pub fn bits(self) -> u32 {
        self.bits
    }

    /// The supported commands, in the kernel's order.
    pub fn commands(self) -> impl Iterator<Item = Command> {
        Command::ALL.into_iter().filter(move |c| self.contains(*c))
    }
}

/// Why a membarrier call failed.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// The running kernel (or a seccomp filter, or a non-Linux OS) does not offer
    /// the command.
    Unsupported {
        /// The command that was refused.
        command: Command,
    },
    /// The process issued a private expedited command without registering for it
    /// first (`EPERM` from the kernel).
    NotRegistered {
        /// The command that was refused.
        command: Command,
    },
    /// `EPERM` where the kernel itself never answers it: to the `REGISTER_*`
    /// command for `command`, or to `command` after this process registered
    /// for it. A seccomp filter or a security module (a container runtime, a
    /// sandbox) refused the call; registering (again) cannot help.
    Refused {
        /// The command whose registration, or whose call, was refused.
        command: Command,
        /// Whether the registration was refused (`true`) or the command
        /// itself, after registration succeeded (`false`).
        registering: bool,
    },
    /// `EPERM` to `MEMBARRIER_CMD_QUERY`, which the kernel never answers
    /// with it: a seccomp filter or security module blocks membarrier(2)
    /// altogether, so `command` cannot be registered for or issued here
    /// (neither an old kernel nor a missing registration).
    Blocked {
        /// The command that was asked for.
        command: Command,
    },
    /// The target CPU does not exist or is offline.
    BadCpu {
        /// The CPU that was asked for.
        cpu: u32,
        /// The online CPUs, as the kernel lists them (`0-1`, `0-3,8-11`, ...).
        online: String,
    },
    /// A CPU was given to a command that cannot target one.
    CpuNotAccepted {
        /// The command that was given a CPU.
        command: Command,
    },
    /// Any other failure of the system call.
    Os {
        /// The command that failed.
        command: Command,
        /// The error the kernel returned.
        source: io::Error,
    },
}

impl Error {
    /// Whether the command cannot be used here at all: the kernel lacks it
    /// ([`Error::Unsupported`]) or a sandbox blocks membarrier(2)
    /// ([`Error::Blocked`]). A caller that skips what needs membarrier
    /// should test this, not one of the two variants.
    pub fn is_unavailable(&self) -> bool {
        matches!(self, Error::Unsupported { .. } | Error::Blocked { .. })
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Unsupported { command } => write!(
                f,
                "membarrier: the running kernel does not support {command} \
                 (PRIVATE_EXPEDITED needs Linux 4.14, PRIVATE_EXPEDITED_RSEQ Linux 5.10; \
                 GLOBAL is withdrawn on a kernel booted with nohz_full CPUs; \
                 a seccomp filter can also hide the syscall)"
            ),
            Error::NotRegistered { command } => write!(
                f,
                "membarrier: {command} refused with EPERM: the process has not registered for it \
                 (call membarrier_sim::sys::register({command:?}) first)"
            ),
            Error::Refused {
                command,
                registering: true,
            } => write!(
                f,
                "membarrier: registering for {command} refused with EPERM, which the kernel never \
                 answers to a registration: a seccomp filter or security module (a container or \
                 sandbox) blocks membarrier(2)"
            ),
            Error::Refused {
                command,
                registering: false,
            } => write!(
                f,
                "membarrier: {command} refused with EPERM although the process registered for it \
                 (or the kernel checks no registration of its caller): \
                 a seccomp filter or security module (a container or sandbox) blocks membarrier(2)"
            ),
            Error::Blocked { command } => write!(
                f,
                "membarrier: {command} unavailable: MEMBARRIER_CMD_QUERY was refused with EPERM, \
                 which the kernel never answers to it, so a seccomp filter or security module (a \
                 container or sandbox) blocks membarrier(2)"
            ),
            Error::BadCpu { cpu, online } => write!(
                f,
                "membarrier: CPU {cpu} does not exist or is offline (online CPUs: {online})"
            ),
            Error::CpuNotAccepted { command } => write!(
                f,
                "membarrier: {command} cannot target one CPU (only PRIVATE_EXPEDITED_RSEQ takes MEMBARRIER_CMD_FLAG_CPU)"
            ),
            Error::Os { command, source } => write!(f, "membarrier: {command} failed: {source}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Os { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// Per command, in [`Command::ALL`] order: the calls that succeeded (see
/// [`issued`]). Only with debug assertions: every thread calling
/// `fence::heavy()` would otherwise share one more contended cache line.
/// `usize`, not `u64`: the crate builds on targets without 64-bit atomics.
#[cfg(debug_assertions)]
static ISSUED: [AtomicUsize; 5] = [const { AtomicUsize::new(0) }; 5];

/// How many calls of `command` have succeeded through this module in this
/// process, in builds with debug assertions; `None` in builds without them,
/// which do not count. Tests use it to check that a fence really issued
/// the command (`fence::heavy()` in membarrier mode issues
/// [`Command::PrivateExpedited`]).
pub fn issued(command: Command) -> Option<u64> {
    #[cfg(debug_assertions)]
    {
        // Relaxed: a statistic; the caller's own calls, sequenced before
        // this load on its thread, are counted in it.
        Some(ISSUED[command.index()].load(Ordering::Relaxed) as u64)
    }
    #[cfg(not(debug_assertions))]
    {
        let _ = command;
        None
    }
}

/// Counts one successful call of `command` (see [`issued`]).
#[cfg(target_os = "linux")]
#[inline]
fn count_issued(command: Command) {
    #[cfg(debug_assertions)]
    {
        // Relaxed: a statistic, read by `issued`.
        ISSUED[command.index()].fetch_add(1, Ordering::Relaxed);
    }
    #[cfg(not(debug_assertions))]
    {
        let _ = command;
    }
}

/// Why `command` is missing from [`query`]'s set: [`Error::Blocked`] where
/// the query itself was refused with `EPERM` (a sandbox), else
/// [`Error::Unsupported`] (an old kernel, or no syscall).
#[cold]
fn unlisted(command: Command) -> Error {
    if query_refused() {
        Error::Blocked { command }
    } else {
        Error::Unsupported { command }
    }
}

/// Whether `MEMBARRIER_CMD_QUERY` fails with `EPERM`, which the kernel
/// never returns to it (rustix's query reports any failure as an empty
/// set).
fn query_refused() -> bool {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: MEMBARRIER_CMD_QUERY (0) with flags 0 and cpu 0 reads no
        // memory of ours; the raw call is only for its errno.
        let ret = unsafe { libc::syscall(libc::SYS_membarrier, 0, 0, 0) };
        ret == -1 && io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
    }
    #[cfg(not(target_os = "linux"))]
    {
        false
    }
}

/// Register bits this process has already registered (see [`register`]).
static REGISTERED: AtomicU32 = AtomicU32::new(0);

/// Asks the kernel which commands it supports (`MEMBARRIER_CMD_QUERY`).
///
/// Never fails: a kernel without the syscall reports an empty set, and so
/// does a sandbox that refuses the query (see [`Error::Blocked`]).
pub fn query() -> Supported {
    #[cfg(target_os = "linux")]
    {
        Supported {
            bits: rustix::thread::membarrier_query().bits(),
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        Supported::default()
    }
}

/// Registers the process for `command` (`MEMBARRIER_CMD_REGISTER_*`).
///
/// Idempotent: the kernel accepts repeated registrations, and this function
/// skips the syscall once a registration has succeeded. Commands that need no
/// registration ([`Command::Global`]) succeed at once if supported.
///
/// # Errors
///
/// [`Error::Unsupported`] where the kernel does not list `command`,
/// [`Error::Blocked`] where a seccomp filter or security module refuses
/// membarrier(2) altogether, [`Error::Refused`] (`registering: true`) where
/// one refuses only the registration, and [`Error::Os`] for any other
/// failure of the system call.
pub fn register(command: Command) -> Result<(), Error> {
    let Some(bit) = command.register_bit() else {
        return if query().contains(command) {
            Ok(())
        } else {
            Err(unlisted(command))
        };
    };
    // The bit saves a syscall; the kernel's own registration state (in
    // `mm->membarrier_state`) is what the commands check. Acquire pairs with
    // the Release `fetch_or` in `register_slow`: a thread that finds the bit
    // also finds the registration that the registering thread's syscall made
    // before it set the bit (the kernel sets the state with an unordered
    // `atomic_or`, and a syscall's entry is no barrier on every CPU), so its
    // next command is not refused as unregistered.
    if REGISTERED.load(Ordering::Acquire) & bit != 0 {
        return Ok(());
    }
    register_slow(command, bit)
}

#[cold]
fn register_slow(command: Command, bit: u32) -> Result<(), Error> {
    if !query().contains(command) {
        return Err(unlisted(command));
    }
    #[cfg(target_os = "linux")]
    {
        let register = command
            .register_rustix()
            .expect("command has a register bit");
        rustix::thread::membarrier(register).map_err(|e| map_errno(command, e, Call::Register))?;
        // Release pairs with the Acquire loads in `register` and
        // `is_registered`.
        REGISTERED.fetch_or(bit, Ordering::Release);
        Ok(())
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = bit;
        Err(Error::Unsupported { command })
    }
}

/// Whether this process has registered for `command` through [`register`].
pub fn is_registered(command: Command) -> bool {
    match command.register_bit() {
        None => true,
        // Acquire: as in `register`.
        Some(bit) => REGISTERED.load(Ordering::Acquire) & bit != 0,
    }
}

/// Issues `command` once, on every CPU it concerns.
///
/// `PRIVATE_EXPEDITED*` commands need [`register`] first, or fail with
/// [`Error::NotRegistered`].
///
/// # Errors
///
/// [`Error::NotRegistered`] for a command this process has not registered
/// for; [`Error::Refused`] (`registering: false`) where a seccomp filter or
/// security module refuses the command after its registration succeeded;
/// [`Error::Blocked`] where one refuses membarrier(2) altogether;
/// [`Error::Unsupported`] where the kernel does not offer the command; and
/// [`Error::Os`] for any other failure (`ENOMEM`: the kernel could not
/// allocate the CPU mask it works on, and a retry may succeed).
pub fn issue(command: Command) -> Result<(), Error> {
    #[cfg(target_os = "linux")]
    {
        rustix::thread::membarrier(command.to_rustix())
            .map_err(|e| map_errno(command, e, Call::issue(command)))?;
        count_issued(command);
        Ok(())
    }
    #[cfg(not(target_os = "linux"))]
    {
        Err(Error::Unsupported { command })
    }
}

/// `membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0)`: a full memory barrier on
/// every running thread of this process. Needs
/// `register(Command::PrivateExpedited)` first.
///
/// # Errors
///
/// As [`issue`].
#[inline]
pub fn private_expedited() -> Result<(), Error> {
    issue(Command::PrivateExpedited)
}

/// `membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ, flags, cpu)`: restart the
/// rseq critical sections of this process's threads, on one CPU (`Some(cpu)`,
/// with `MEMBARRIER_CMD_FLAG_CPU`) or on all of them (`None`). Needs
/// `register(Command::PrivateExpeditedRseq)` first.
///
/// # Errors
///
/// As [`issue_on_cpu`].
pub fn private_expedited_rseq(cpu: Option<u32>) -> Result<(), Error> {
    issue_on_cpu(Command::PrivateExpeditedRseq, cpu)
}

/// Issues `command`, aimed at `cpu` when given. Only
/// [`Command::PrivateExpeditedRseq`] accepts a CPU.
///
/// # Errors
///
/// [`Error::CpuNotAccepted`] for a CPU given to any other command,
/// [`Error::BadCpu`] for a CPU that is not online now; otherwise as
/// [`issue`].
pub fn issue_on_cpu(command: Command, cpu: Option<u32>) -> Result<(), Error> {
    let Some(cpu) = cpu else {
        return issue(command);
    };
    if command != Command::PrivateExpeditedRseq {
        return Err(Error::CpuNotAccepted { command });
    }
    let cpu = OnlineCpu::new(cpu)?;
    issue_on_online_cpu(command, cpu)
}

/// A CPU found online when it was checked, for issuing many targeted
/// commands without reading `/sys/devices/system/cpu/online` before each one
/// (as [`issue_on_cpu`] does).
///
/// If the CPU goes offline later, the kernel silently does nothing for it:
/// keep an `OnlineCpu` only as long as the CPU set cannot change under you.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct OnlineCpu {
    cpu: u32,
}

impl OnlineCpu {
    /// Checks that `cpu` is online now.
    ///
    /// # Errors
    ///
    /// [`Error::BadCpu`], with the online list, when it is not.
    pub fn new(cpu: u32) -> Result<OnlineCpu, Error> {
        let online = online_cpus();
        if !online.contains(cpu) {
            return Err(Error::BadCpu {
                cpu,
                online: online.to_string(),
            });
        }
        Ok(OnlineCpu { cpu })
    }

    /// The CPU number.
    pub fn get(self) -> u32 {
        self.cpu
    }
}

/// `membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ, MEMBARRIER_CMD_FLAG_CPU,
/// cpu)` for a CPU checked beforehand: [`private_expedited_rseq`] without
/// the per-call online check. Needs `register(Command::PrivateExpeditedRseq)`.
///
/// # Errors
///
/// As [`issue`].
#[inline]
pub fn private_expedited_rseq_on(cpu: OnlineCpu) -> Result<(), Error> {
    issue_on_online_cpu(Command::PrivateExpeditedRseq, cpu)
}

fn issue_on_online_cpu(command: Command, cpu: OnlineCpu) -> Result<(), Error> {
    let cpu = cpu.get();
    #[cfg(target_os = "linux")]
    {
        // SAFETY: `Cpuid::from_raw` requires "the value of a valid Linux CPU
        // ID" (rustix's contract). `OnlineCpu::new` found `cpu` in the online
        // list (or, without `/sys`, among the CPUs the thread may run on, or
        // failing that below the available parallelism), all far below
        // 2^31; a CPU gone offline since is still a CPU ID, and
        // `membarrier_private_expedited()` does nothing for a `cpu_id` at or
        // past `nr_cpu_ids`. (It reads `cpu_id` as an `int`: a value of 2^31
        // or more would be negative there and mean every CPU, which is why
        // only an `OnlineCpu`'s number is passed.)
        let id = unsafe { rustix::thread::Cpuid::from_raw(cpu) };
        rustix::thread::membarrier_cpu(command.to_rustix(), id)
            .map_err(|e| map_errno(command, e, Call::issue(command)))?;
        count_issued(command);
        Ok(())
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = cpu;
        Err(Error::Unsupported { command })
    }
}

/// Which call of `command` failed, for [`map_errno`].
#[cfg(target_os = "linux")]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Call {
    /// Its `REGISTER_*` command.
    Register,
    /// The command itself; `registered`: whether [`register`] had succeeded
    /// for it, or the kernel does not check the caller's registration for it
    /// (read after the failure, so a registration racing the call counts as
    /// one: the kernel keeps a registration once made).
    Issue { registered: bool },
}

#[cfg(target_os = "linux")]
impl Call {
    fn issue(command: Command) -> Call {
        // `GLOBAL_EXPEDITED`'s registration makes a process a target of
        // other processes' barriers; the kernel issues the command for any
        // caller (`membarrier_global_expedited()` checks no registration),
        // so an `EPERM` there is a filter's, not "register first".
        Call::Issue {
            registered: command == Command::GlobalExpedited || is_registered(command),
        }
    }
}

/// The error for `errno` from `call`. `EPERM` means "not registered" only
/// where the process has not registered: the kernel answers it to nothing
/// else (`membarrier_private_expedited()`'s registration check), and keeps
/// a registration for the life of the `mm`, across `fork()` too.
#[cfg(target_os = "linux")]
fn map_errno(command: Command, errno: rustix::io::Errno, call: Call) -> Error {
    use rustix::io::Errno;
    if errno == Errno::PERM {
        match call {
            // "Register first" would not help where membarrier is blocked.
            Call::Issue { registered: false } if query_refused() => Error::Blocked { command },
            Call::Issue { registered: false } => Error::NotRegistered { command },
            Call::Register => Error::Refused {
                command,
                registering: true,
            },
            Call::Issue { registered: true } => Error::Refused {
                command,
                registering: false,
            },
        }
    } else if errno == Errno::NOSYS || (errno == Errno::INVAL && !query().contains(command)) {
        Error::Unsupported { command }
    } else {
        Error::Os {
            command,
            source: io::Error::from_raw_os_error(errno.raw_os_error()),
        }
    }
}

/// The set of online CPUs, as ranges.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CpuList {
    ranges: Vec<(u32, u32)>,
}

impl CpuList {
    /// Parses the kernel's CPU-list format (`0-3,8,10-11`): ascending ranges
    /// that neither overlap nor repeat a CPU, as the kernel writes them, so
    /// that [`CpuList::len`] counts each CPU once.
    pub fn parse(text: &str) -> Option<CpuList> {
        let mut ranges = Vec::new();
        for part in text.trim().split(',').filter(|p| !p.is_empty()) {
            let (lo, hi) = match part.split_once('-') {
                Some((lo, hi)) => (lo.trim().parse().ok()?, hi.trim().parse().ok()?),
                None => {
                    let cpu = part.trim().parse().ok()?;
                    (cpu, cpu)
                }
            };
            if lo > hi || ranges.last().is_some_and(|&(_, prev_hi)| lo <= prev_hi) {
                return None;
            }
            ranges.push((lo, hi));
        }
        (!ranges.is_empty()).then_some(CpuList { ranges })
    }

    /// The list of `cpus`, given in strictly ascending order; `None` if
    /// there are none or they are out of order.
    fn of_ascending(cpus: &[u32]) -> Option<CpuList> {
        let mut ranges: Vec<(u32, u32)> = Vec::new();
        for &cpu in cpus {
            match ranges.last_mut() {
                Some((_, hi)) if cpu <= *hi => return None,
                Some((_, hi)) if cpu == *hi + 1 => *hi = cpu,
                _ => ranges.push((cpu, cpu)),
            }
        }
        (!ranges.is_empty()).then_some(CpuList { ranges })
    }

    /// Whether `cpu` is in the list.
    pub fn contains(&self, cpu: u32) -> bool {
        self.ranges.iter().any(|&(lo, hi)| (lo..=hi).contains(&cpu))
    }

    /// How many CPUs the list holds (at most `usize::MAX`: a 32-bit target
    /// cannot count the 2^32 of a list `0-4294967295`).
    pub fn len(&self) -> usize {
        let cpus: u64 = self
            .ranges
            .iter()
            .map(|&(lo, hi)| u64::from(hi - lo) + 1)
            .sum();
        usize::try_from(cpus).unwrap_or(usize::MAX)
    }

    /// Whether the list is empty (never, for a parsed list).
    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }

    /// The CPUs in ascending order of ranges.
    pub fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        self.ranges.iter().flat_map(|&(lo, hi)| lo..=hi)
    }
}

impl fmt::Display for CpuList {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, &(lo, hi)) in self.ranges.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            if lo == hi {
                write!(f, "{lo}")?;
            } else {
                write!(f, "{lo}-{hi}")?;
            }
        }
        Ok(())
    }
}

/// The online CPUs, from `/sys/devices/system/cpu/online`; where that file is
/// missing or unreadable, the CPUs the calling thread may run on (online
/// ones all, as the kernel keeps the mask within the active CPUs: a CPU
/// left out is refused as [`Error::BadCpu`], never passed off as online);
/// where that cannot be read either, `0..available_parallelism`.
pub fn online_cpus() -> CpuList {
    let listed = std::fs::read_to_string("/sys/devices/system/cpu/online").ok();
    let parallelism = std::thread::available_parallelism().map_or(1, |n| n.get());
    online_cpus_from(listed.as_deref(), allowed_cpus, parallelism)
}

/// The CPUs the calling thread may run on, ascending; `None` if they
/// cannot be read.
#[cfg(target_os = "linux")]
fn allowed_cpus() -> Option<Vec<u32>> {
    let set = rustix::thread::sched_getaffinity(None).ok()?;
    Some(
        (0..rustix::thread::CpuSet::MAX_CPU)
            .filter(|&cpu| set.is_set(cpu))
            .filter_map(|cpu| u32::try_from(cpu).ok())
            .collect(),
    )
}

/// The CPUs the calling thread may run on: not read off Linux.
#[cfg(not(target_os = "linux"))]
fn allowed_cpus() -> Option<Vec<u32>> {
    None
}

/// [`online_cpus`] on given inputs: the kernel's list when it parses, else
/// the `allowed` CPUs (ascending; asked only then) when there are any, else
/// CPUs `0..parallelism` (at least CPU 0, at most `u32::MAX + 1` CPUs).
fn online_cpus_from(
    listed: Option<&str>,
    allowed: impl FnOnce() -> Option<Vec<u32>>,
    parallelism: usize,
) -> CpuList {
    listed
        .and_then(CpuList::parse)
        .or_else(|| allowed().as_deref().and_then(CpuList::of_ascending))
        .unwrap_or_else(|| {
            let last = u32::try_from(parallelism.saturating_sub(1)).unwrap_or(u32::MAX);
            CpuList {
                ranges: vec![(0, last)],
            }
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_list_parses_kernel_format() {
        let list = CpuList::parse("0-3,8,10-11\n").unwrap();
        assert_eq!(list.len(), 7);
        assert!(list.contains(0) && list.contains(3) && list.contains(8) && list.contains(11));
        assert!(!list.contains(4) && !list.contains(9) && !list.contains(12));
        assert_eq!(list.to_string(), "0-3,8,10-11");
        assert_eq!(list.iter().collect::<Vec<_>>(), vec![0, 1, 2, 3, 8, 10, 11]);
        assert!(CpuList::parse("").is_none());
        assert!(CpuList::parse("3-1").is_none());
        assert!(CpuList::parse("x").is_none());
        // Overlapping or out-of-order ranges would count a CPU twice.
        assert!(CpuList::parse("0-3,2-5").is_none());
        assert!(CpuList::parse("4,0").is_none());
        assert!(CpuList::parse("1,1").is_none());
        // The widest range counts every CPU without overflowing.
        assert_eq!(
            CpuList::parse("0-4294967295").unwrap().len(),
            usize::try_from(1_u64 << 32).unwrap_or(usize::MAX)
        );
    }

    #[test]
    fn online_cpus_falls_back_to_the_parallelism_when_the_list_is_missing() {
        let fallback = online_cpus_from(None, || None, 4);
        assert_eq!(fallback.len(), 4);
        assert_eq!(fallback.iter().collect::<Vec<_>>(), vec![0, 1, 2, 3]);
        assert_eq!(fallback.to_string(), "0-3");
        // An unparsable file falls back the same way.
        assert_eq!(
            online_cpus_from(Some("garbage\n"), || None, 2).to_string(),
            "0-1"
        );
        // A single CPU, and no parallelism reported at all, both mean CPU 0.
        assert_eq!(online_cpus_from(None, || None, 1).to_string(), "0");
        assert_eq!(online_cpus_from(None, || None, 0).to_string(), "0");
        // The kernel's list wins over the parallelism (a CPU set may be
        // smaller than the online CPUs, and hold holes).
        assert_eq!(
            online_cpus_from(Some("0-1,4\n"), || None, 1).to_string(),
            "0-1,4"
        );
        // Without the list, the CPUs the thread may run on, by number: under
        // `taskset -c 4-7` those are CPUs 4-7, not 0-3.
        let pinned = || Some(vec![4, 5, 6, 7, 9]);
        assert_eq!(online_cpus_from(None, pinned, 5).to_string(), "4-7,9");
        let not_asked = || -> Option<Vec<u32>> { panic!("the mask is read with the list there") };
        assert_eq!(
            online_cpus_from(Some("0-15"), not_asked, 5).to_string(),
            "0-15"
        );
        // An empty or unordered set is no answer: the parallelism is used.
        assert_eq!(
            online_cpus_from(None, || Some(vec![]), 2).to_string(),
            "0-1"
        );
        assert_eq!(
            online_cpus_from(None, || Some(vec![3, 1]), 2).to_string(),
            "0-1"
        );
        // This machine's mask, where it can be read, is a list.
        if let Some(allowed) = (!cfg!(miri)).then(allowed_cpus).flatten() {
            assert!(CpuList::of_ascending(&allowed).is_some(), "{allowed:?}");
        }
        // What this machine reports is a non-empty list (miri's isolation
        // refuses the file's `open`).
        if !cfg!(miri) {
            assert!(!online_cpus().is_empty());
        }
    }

    #[test]
    fn errors_name_the_problem() {
        let e = Error::NotRegistered {
            command: Command::PrivateExpedited,
        };
        assert!(e.to_string().contains("MEMBARRIER_CMD_PRIVATE_EXPEDITED"));
        assert!(e.to_string().contains("register"));
        let e = Error::BadCpu {
            cpu: 9,
            online: "0-1".into(),
        };
        assert!(e.to_string().contains("CPU 9") && e.to_string().contains("0-1"));
    }

    /// With debug assertions, a successful call shows in `issued` (the fence
    /// tests rely on it to see that `heavy()` issued the command, and skip
    /// that check when it answers `None`); without them it is `None`.
    #[test]
    #[cfg_attr(miri, ignore = "membarrier(2), a syscall miri does not implement")]
    fn issued_counts_each_successful_call_in_debug_builds() {
        let command = Command::PrivateExpedited;
        if !cfg!(debug_assertions) {
            assert_eq!(issued(command), None);
            return;
        }
        if register(command).is_err() {
            eprintln!("no {command} here: nothing to count");
            return;
        }
        let before = issued(command).expect("debug builds count calls");
        issue(command).unwrap();
        private_expedited().unwrap();
        let after = issued(command).expect("debug builds count calls");
        // Other tests may issue it meanwhile; none take calls back.
        assert!(
            after >= before + 2,
            "two calls, counted {before} -> {after}"
        );
    }

    /// An OS failure keeps the kernel's error as its `source()`, so that an
    /// error chain (`anyhow`, a `Report`) still shows the errno; the typed
    /// errors, whose message says it all, have none.
    #[test]
    fn os_errors_keep_the_kernels_error_as_their_source() {
        use std::error::Error as _;
        let e = Error::Os {
            command: Command::PrivateExpedited,
            source: io::Error::from_raw_os_error(12),
        };
        let source = e.source().expect("Error::Os has a source");
        let io = source
            .downcast_ref::<io::Error>()
            .expect("the source is the io::Error");
        assert_eq!(io.raw_os_error(), Some(12));
        let e = Error::NotRegistered {
            command: Command::PrivateExpedited,
        };
        assert!(e.source().is_none());
    }

    #[test]
    #[cfg(target_os = "linux")]
    fn eperm_means_not_registered_only_where_the_process_has_not_registered() {
        use rustix::io::Errno;
        let cmd = Command::PrivateExpedited;
        // Mapping EPERM to an unregistered command asks the kernel whether
        // the query is refused too (a sandbox), with a raw membarrier(2),
        // which miri does not implement (from 2026-12-06, when that check
        // came, to 2026-12-07 it stopped the sanitize.sh miri phase's run of
        // this crate's unit tests).
        #[cfg(not(miri))]
        {
            let e = map_errno(cmd, Errno::PERM, Call::Issue { registered: false });
            assert!(
                matches!(e, Error::NotRegistered { command } if command == cmd),
                "{e}"
            );
        }
        // A seccomp filter answering EPERM to the registration: telling the
        // user to call register() would send them round in a circle.
        let e = map_errno(cmd, Errno::PERM, Call::Register);
        assert!(
            matches!(e, Error::Refused { command, registering: true } if command == cmd),
            "{e}"
        );
        let text = e.to_string();
        assert!(text.contains("seccomp") && text.contains("MEMBARRIER_CMD_PRIVATE_EXPEDITED"));
        assert!(!text.contains("register("), "{text}");
        // A filter installed after registration, refusing the command itself.
        let e = map_errno(cmd, Errno::PERM, Call::Issue { registered: true });
        assert!(
            matches!(e, Error::Refused { command, registering: false } if command == cmd),
            "{e}"
        );
        assert!(
            e.to_string().contains("although the process registered"),
            "{e}"
        );
        // EINVAL means "unknown command" only where the kernel does not
        // list it; for a command it supports it is some other misuse
        // (flags, a CPU), which must not read as "upgrade your kernel".
        // Mapping EINVAL asks the kernel (MEMBARRIER_CMD_QUERY), a syscall
        // miri does not implement.
        #[cfg(not(miri))]
        {
            let e = map_errno(cmd, Errno::INVAL, Call::Issue { registered: true });
            if query().contains(cmd) {
                assert!(
                    matches!(&e, Error::Os { source, .. } if source.kind() == io::ErrorKind::InvalidInput),
                    "{e}"
                );
            } else {
                assert!(matches!(e, Error::Unsupported { .. }), "{e}");
            }
        }
        // Other errors keep their meaning, whatever the call.
        for call in [Call::Register, Call::Issue { registered: true }] {
            let e = map_errno(cmd, Errno::NOSYS, call);
            assert!(matches!(e, Error::Unsupported { .. }), "{e}");
            let e = map_errno(cmd, Errno::NOMEM, call);
            assert!(
                matches!(&e, Error::Os { source, .. } if source.kind() == io::ErrorKind::OutOfMemory),
                "{e}"
            );
        }
    }

    /// The bits `MEMBARRIER_CMD_QUERY` reports are the command numbers of
    /// `enum membarrier_cmd` (`uapi/linux/membarrier.h`), and the commands
    /// this module issues and registers with are those same numbers: a
    /// slip in either table would report a command the kernel lacks as
    /// supported, or issue a different command than the one named.
    #[test]
    fn command_bits_are_the_kernels_command_numbers() {
        let uapi = [
            (Command::Global, 1 << 0, None),
            (Command::GlobalExpedited, 1 << 1, Some(1 << 2)),
            (Command::PrivateExpedited, 1 << 3, Some(1 << 4)),
            (Command::PrivateExpeditedSyncCore, 1 << 5, Some(1 << 6)),
            (Command::PrivateExpeditedRseq, 1 << 7, Some(1 << 8)),
        ];
        for (command, bit, register_bit) in uapi {
            assert_eq!(command.bit(), bit, "{command}");
            assert_eq!(command.register_bit(), register_bit, "{command}");
            #[cfg(target_os = "linux")]
            {
                assert_eq!(
                    command.to_rustix() as u32,
                    bit,
                    "{command} issues another command"
                );
                assert_eq!(
                    command.register_rustix().map(|r| r as u32),
                    register_bit,
                    "{command} registers for another command"
                );
            }
        }
        // A 5.4 kernel has every command but the rseq pair (0x7f).
        let before_rseq = Supported { bits: 0x7f };
        assert_eq!(
            before_rseq.commands().collect::<Vec<_>>(),
            Command::ALL[..4].to_vec()
        );
    }

    /// `issued` counts each command in its own slot: an `index` that
    /// sent two commands to one slot would let a fence test count, say,
    /// `MEMBARRIER_CMD_GLOBAL` calls as the `PRIVATE_EXPEDITED` ones it
    /// checks `heavy()` for.
    #[test]
    #[cfg(debug_assertions)]
    fn each_command_is_counted_in_its_own_slot() {
        for (place, command) in Command::ALL.into_iter().enumerate() {
            assert_eq!(command.index(), place, "{command}");
        }
    }

    /// An `OnlineCpu` hands back the CPU it checked: the targeted
    /// commands pass `get()` to the kernel, which silently accepts any
    /// online CPU, so a wrong number would aim every targeted barrier at
    /// another CPU than the one asked for.
    #[test]
    #[cfg_attr(
        miri,
        ignore = "reads /sys for the online CPUs, which miri does not offer"
    )]
    fn an_online_cpu_is_the_cpu_it_checked() {
        for cpu in online_cpus().iter() {
            assert_eq!(OnlineCpu::new(cpu).unwrap().get(), cpu);
        }
        assert!(matches!(
            OnlineCpu::new(100_000),
            Err(Error::BadCpu { cpu: 100_000, .. })
        ));
    }

    /// `is_empty` and `bits` report the raw `MEMBARRIER_CMD_QUERY` answer:
    /// an inverted `is_empty` would call a kernel with every command one
    /// without membarrier (and the reverse), and a constant `bits` would
    /// print a made-up mask in every diagnostic that shows it.
    #[test]
    fn supported_reports_its_raw_bits_and_emptiness() {
        let none = Supported { bits: 0 };
        assert!(none.is_empty());
        assert_eq!(none.bits(), 0);
        assert_eq!(none.commands().count(), 0);
        let before_rseq = Supported { bits: 0x7f };
        assert!(!before_rseq.is_empty());
        assert_eq!(before_rseq.bits(), 0x7f);
        let rseq_only = Supported { bits: 0x180 };
        assert!(!rseq_only.is_empty());
        assert_eq!(rseq_only.bits(), 0x180);
    }

    #[test]
    fn supported_needs_the_register_bit_too() {
        let only_command = Supported {
            bits: Command::PrivateExpedited.bit(),
        };
        assert!(!only_command.contains(Command::PrivateExpedited));
        let both = Supported {
            bits: Command::PrivateExpedited.bit()
                | Command::PrivateExpedited.register_bit().unwrap(),
        };
        assert!(both.contains(Command::PrivateExpedited));
        assert_eq!(
            both.commands().collect::<Vec<_>>(),
            vec![Command::PrivateExpedited]
        );
    }
}
