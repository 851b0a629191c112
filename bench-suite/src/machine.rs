//! A description of the machine a measurement ran on, for reports.

use serde::{Deserialize, Serialize};

/// What a reader of a report needs to judge its numbers.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Machine {
    /// CPU model name from `/proc/cpuinfo`.
    pub cpu: String,
    /// The CPU's family, model and stepping from `/proc/cpuinfo` (x86), e.g.
    /// `family 26 model 2 stepping 1`: a virtual machine's model name may say
    /// only "AMD EPYC", while fast paths of a few nanoseconds differ by
    /// generation (crossbeam-epoch's `pin()` cost 2.2 ns on one such guest
    /// and 6.1 ns on another). `None` where the file does not give them.
    pub cpu_id: Option<String>,
    /// CPUs this process may run on (`available_parallelism()`: its
    /// affinity, and a cgroup's CPU quota, rounded down, at least 1).
    pub cores: usize,
    /// CPUs online in the machine (`sysconf(_SC_NPROCESSORS_ONLN)`): more
    /// than [`Machine::cores`] in a container with a CPU quota or under
    /// `taskset`, whose threads may still be spread over all of them. `None`
    /// in a `results.json` from before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub online_cpus: Option<usize>,
    /// Kernel release (`/proc/sys/kernel/osrelease`).
    pub kernel: String,
    /// The compiler that built `syncbench`.
    pub rustc: String,
    /// The fence mode `hazptr` and `rcu-lite` use on this machine.
    pub fence_mode: String,
    /// How liburcu's memb flavor fences here, as it chose when it loaded
    /// (`liburcu::memb_fence_mode`); `None` in a build without liburcu, or
    /// in a `results.json` from before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub liburcu_memb_fences: Option<String>,
    /// What their heavy fence costs here (see [`HeavyFenceCost`]).
    pub heavy_fence: HeavyFenceCost,
    /// What one `fence(SeqCst)` costs here, in nanoseconds (see
    /// [`full_fence_ns`]): the price crossbeam-epoch, haphazard and seize pay
    /// on every read-side entry, which hazptr and rcu-lite's memb flavor move
    /// to the writer's heavy fence. It sets most of the read-side ratios.
    /// `None` in a `results.json` from before it was measured.
    pub full_fence_ns: Option<f64>,
}

/// What built `syncbench`, as its build script recorded it: what a reader
/// needs to rebuild the binary that measured a report, and to see that an
/// unoptimized build's figures are not comparable.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Build {
    /// `syncbench`'s own version.
    pub version: String,
    /// The commit built (12 hex digits), `-dirty` where tracked files had
    /// changes; `None` where the build had no git checkout.
    pub commit: Option<String>,
    /// Cargo's optimization level for bench-suite (`3` in release and bench
    /// builds, `0` in a plain `cargo build`).
    pub opt_level: String,
    /// Whether debug assertions (and overflow checks) were compiled in.
    pub debug_assertions: bool,
    /// The target triple.
    pub target: String,
    /// `name version` of each Rust peer, from `Cargo.lock`.
    pub peers: Vec<String>,
    /// The liburcu version whose headers the C shims were compiled against
    /// (pkg-config's), `None` in a build without the liburcu peers.
    pub liburcu: Option<String>,
}

impl Build {
    /// This binary's.
    pub fn current() -> Build {
        let recorded = |value: &str| (!value.is_empty()).then(|| value.to_owned());
        Build {
            version: env!("CARGO_PKG_VERSION").to_owned(),
            commit: recorded(env!("SYNCBENCH_COMMIT")),
            opt_level: env!("SYNCBENCH_OPT_LEVEL").to_owned(),
            debug_assertions: cfg!(debug_assertions),
            target: env!("SYNCBENCH_TARGET").to_owned(),
            peers: env!("SYNCBENCH_PEER_VERSIONS")
                .split(',')
                .filter(|p| !p.is_empty())
                .map(str::to_owned)
                .collect(),
            liburcu: option_env!("SYNCBENCH_LIBURCU_VERSION").map(str::to_owned),
        }
    }

    /// Whether its timings mean anything: optimized, without debug
    /// assertions (which add a check to every counter and every atomic
    /// wrapper's fast path).
    pub fn optimized(&self) -> bool {
        self.opt_level != "0" && !self.debug_assertions
    }

    /// Why its timings are not comparable, for a warning; `None` for an
    /// optimized build.
    pub fn unoptimized_warning(&self) -> Option<String> {
        (!self.optimized()).then(|| {
            format!(
                "this syncbench is an unoptimized build (opt-level {}{}): its timings are \
                 not comparable with a release build's, nor between contenders (build it \
                 with `cargo build --release -p bench-suite`)",
                self.opt_level,
                if self.debug_assertions {
                    ", debug assertions on"
                } else {
                    ""
                }
            )
        })
    }

    /// One line for report headers and `syncbench --version`.
    pub fn summary(&self) -> String {
        let commit = self.commit.as_deref().unwrap_or("unknown commit");
        let liburcu = match &self.liburcu {
            Some(v) => format!("; liburcu {v}"),
            None => "; no liburcu".to_owned(),
        };
        let peers = if self.peers.is_empty() {
            String::new()
        } else {
            format!("; peers {}", self.peers.join(", "))
        };
        format!(
            "syncbench {} ({commit}), opt-level {}{}, {}{peers}{liburcu}",
            self.version,
            self.opt_level,
            if self.debug_assertions {
                " with debug assertions"
            } else {
                ""
            },
            self.target,
        )
    }
}

/// Median cost of one `membarrier_sim::fence::heavy()`, in microseconds: with
/// every other CPU idle, and with each running a spinning thread of this
/// process. `MEMBARRIER_CMD_PRIVATE_EXPEDITED` interrupts only the CPUs that
/// run a thread of the process, so a lone waiter on an idle machine pays the
/// first and every contended run pays the second (on the 2-vCPU VM of the
/// reference reports: 0.36 against 8.4-12.2 us, 8.68 in the current one).
/// `cargo run --release -p bench-suite --example contention_floor` measures it
/// at length.
#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
pub struct HeavyFenceCost {
    /// No other thread of the process runs.
    pub idle_us: f64,
    /// Every other CPU runs a spinning thread of the process (`None` on a
    /// machine with one CPU, or where the spinners could not be started).
    pub busy_us: Option<f64>,
}

/// Fences timed per figure of [`HeavyFenceCost`].
const FENCE_SAMPLES: usize = 2000;

impl HeavyFenceCost {
    /// Measures it now: about 25 ms with membarrier on a virtual machine.
    pub fn measure() -> HeavyFenceCost {
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        HeavyFenceCost {
            idle_us: heavy_fence_us(0, FENCE_SAMPLES)
                .expect("no thread to start without spinners")
                .p50,
            // A refused spinner (a thread limit) leaves the figure out
            // rather than failing the report before it measured anything.
            busy_us: busy_spinners(cpus)
                .and_then(|others| heavy_fence_us(others, FENCE_SAMPLES).ok())
                .map(|latency| latency.p50),
        }
    }
}

/// The spinning threads [`HeavyFenceCost::busy_us`] is timed with on `cpus`
/// CPUs: one on each CPU but the timing thread's, so `None` (no figure) with
/// one CPU.
fn busy_spinners(cpus: usize) -> Option<usize> {
    let others = cpus - 1;
    (others > 0).then_some(others)
}

/// Fences per round of [`full_fence_ns`].
const FULL_FENCES_PER_ROUND: u32 = 1_000_000;

/// Median over five rounds of the time of one `fence(SeqCst)` between plain
/// loop iterations, in nanoseconds (an `mfence` on x86-64, `dmb ish` on
/// arm64): about 25 ms in all on a 2020s x86 machine.
pub fn full_fence_ns() -> f64 {
    use std::sync::atomic::{Ordering::SeqCst, fence};
    use std::time::Instant;
    let mut rounds: Vec<f64> = (0..5)
        .map(|_| {
            let start = Instant::now();
            for i in 0..FULL_FENCES_PER_ROUND {
                std::hint::black_box(i);
                fence(SeqCst);
            }
            start.elapsed().as_secs_f64() * 1e9 / f64::from(FULL_FENCES_PER_ROUND)
        })
        .collect();
    rounds.sort_by(f64::total_cmp);
    rounds[rounds.len() / 2]
}

/// Latencies of `fence::heavy()` in microseconds.
#[derive(Clone, Copy, Debug)]
pub struct FenceLatency {
    /// Median.
    pub p50: f64,
    /// 99th percentile.
    pub p99: f64,
    /// Mean.
    pub mean: f64,
}

impl FenceLatency {
    /// The figures of `us`, fence times in microseconds in any order (at
    /// least one).
    fn of(mut us: Vec<f64>) -> FenceLatency {
        us.sort_by(f64::total_cmp);
        let at = |q: f64| us[((us.len() - 1) as f64 * q).round() as usize];
        FenceLatency {
            p50: at(0.5),
            p99: at(0.99),
            mean: us.iter().sum::<f64>() / us.len() as f64,
        }
    }
}

/// Times `samples` back-to-back `fence::heavy()` calls while `spinners`
/// threads of this process spin. The timing thread is pinned to the first CPU
/// the process may use and each spinner to another one, so that a spinner
/// never shares the timing thread's CPU (which would leave another CPU idle
/// and make the fence cheap); where pinning fails, the scheduler places them.
/// The caller gets its own affinity back before this returns.
///
/// # Errors
///
/// If a spinner thread cannot be started (a thread limit): the ones already
/// started are stopped first.
pub fn heavy_fence_us(spinners: usize, samples: usize) -> std::io::Result<FenceLatency> {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::Relaxed};
    use std::time::{Duration, Instant};
    let allowed: Vec<usize> = rustix::thread::sched_getaffinity(None)
        .map(|set| {
            (0..rustix::thread::CpuSet::MAX_CPU)
                .filter(|&cpu| set.is_set(cpu))
                .collect()
        })
        .unwrap_or_default();
    // Pins the calling thread to `allowed[index]`, if there is one.
    let pin = move |index: usize| {
        if let Some(&cpu) = allowed.get(index) {
            let mut set = rustix::thread::CpuSet::new();
            set.set(cpu);
            // A refusal only costs the placement described above.
            let _ = rustix::thread::sched_setaffinity(None, &set);
        }
    };
    let stop = Arc::new(AtomicBool::new(false));
    let running = Arc::new(AtomicUsize::new(0));
    let mut threads = Vec::with_capacity(spinners);
    for i in 0..spinners {
        let (stop_flag, running, pin) = (Arc::clone(&stop), Arc::clone(&running), pin.clone());
        let spawned = std::thread::Builder::new()
            .name(format!("fence-spinner-{i}"))
            .spawn(move || {
                pin(1 + i);
                // Relaxed: a start count and a stop flag; nothing is published
                // through them (the join orders the end).
                running.fetch_add(1, Relaxed);
                while !stop_flag.load(Relaxed) {
                    std::hint::spin_loop();
                }
            });
        match spawned {
            Ok(thread) => threads.push(thread),
            Err(refused) => {
                stop.store(true, Relaxed);
                threads.into_iter().for_each(|t| t.join().expect("spinner"));
                return Err(refused);
            }
        }
    }
    // Timed on the calling thread (a spawned timing thread measured the
    // idle fence 0.15 us dearer on the 2-vCPU VM), pinned for the duration
    // and given its own affinity back afterwards.
    let own_affinity = rustix::thread::sched_getaffinity(None);
    pin(0);
    while running.load(Relaxed) < spinners {
        std::thread::yield_now();
    }
    if spinners > 0 {
        // Let every spinner get onto its CPU.
        std::thread::sleep(Duration::from_millis(20));
    }
    let us: Vec<f64> = (0..samples.max(1))
        .map(|_| {
            let start = Instant::now();
            membarrier_sim::fence::heavy();
            start.elapsed().as_secs_f64() * 1e6
        })
        .collect();
    if let Ok(set) = own_affinity {
        // Best effort, as the pinning.
        let _ = rustix::thread::sched_setaffinity(None, &set);
    }
    stop.store(true, Relaxed);
    threads.into_iter().for_each(|t| t.join().expect("spinner"));
    Ok(FenceLatency::of(us))
}

/// The fence mode's name, with the kernel's answer when it refused
/// membarrier (`seqcst (membarrier: ...)`, the error's own words): the
/// reason the read sides pay a real fence here.
fn fence_mode() -> String {
    let mode = membarrier_sim::fence::mode();
    match membarrier_sim::fence::fallback_reason() {
        // Each `sys::Error` message begins with "membarrier: ".
        Some(reason) => format!("{mode} ({reason})"),
        None => mode.to_string(),
    }
}

/// liburcu-memb's fence mode where this build links liburcu.
fn liburcu_memb_fences() -> Option<String> {
    #[cfg(syncbench_liburcu)]
    {
        Some(crate::liburcu::memb_fence_mode())
    }
    #[cfg(not(syncbench_liburcu))]
    {
        None
    }
}

impl Machine {
    /// Describes the current machine.
    pub fn current() -> Machine {
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo");
        // Without /proc (a chroot, a sandbox) the model is unknown, and says
        // so: the bare architecture read as a model, and `compare` then
        // reported another machine (until 2026-12-07). A cpuinfo without a
        // model name (arm64's) still gives the architecture, as before.
        let cpu = match &cpuinfo {
            Ok(text) => cpuinfo_field(text, "model name")
                .unwrap_or(std::env::consts::ARCH)
                .to_owned(),
            Err(_) => format!(
                "{} (model unknown: no /proc/cpuinfo)",
                std::env::consts::ARCH
            ),
        };
        let cpuinfo = cpuinfo.unwrap_or_default();
        // The release from uname(2), which needs no /proc: the fallback was
        // the OS's name, "linux".
        let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
            .map(|s| s.trim().to_owned())
            .ok()
            .or_else(kernel_release)
            .unwrap_or_else(|| "unknown".to_owned());
        Machine {
            cpu,
            cpu_id: cpu_id(&cpuinfo),
            cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
            online_cpus: online_cpus(),
            kernel,
            rustc: env!("SYNCBENCH_RUSTC_VERSION").to_owned(),
            fence_mode: fence_mode(),
            liburcu_memb_fences: liburcu_memb_fences(),
            heavy_fence: HeavyFenceCost::measure(),
            full_fence_ns: Some(full_fence_ns()),
        }
    }

    /// One line for report headers.
    pub fn summary(&self) -> String {
        let busy = match self.heavy_fence.busy_us {
            Some(us) => format!(", {us:.2} us with the other CPUs busy"),
            None => String::new(),
        };
        let id = match &self.cpu_id {
            Some(id) => format!("{id}, "),
            None => String::new(),
        };
        let full = match self.full_fence_ns {
            Some(ns) => format!(
                "; a SeqCst fence, which the read sides of crossbeam-epoch, haphazard and seize pay, {ns:.2} ns"
            ),
            None => String::new(),
        };
        let cpus = match self.online_cpus {
            Some(online) if online != self.cores => {
                format!("{} CPUs usable of {online} online", self.cores)
            }
            _ => format!("{} CPUs", self.cores),
        };
        let liburcu = match &self.liburcu_memb_fences {
            Some(mode) => format!("; liburcu-memb's: {mode}"),
            None => String::new(),
        };
        format!(
            "{} ({id}{cpus}), Linux {}, {}, fences: {} (heavy fence {:.2} us with the other CPUs idle{busy}{full}{liburcu})",
            self.cpu, self.kernel, self.rustc, self.fence_mode, self.heavy_fence.idle_us,
        )
    }
}

/// The kernel's release, from `uname(2)`.
fn kernel_release() -> Option<String> {
    // SAFETY: `utsname` is plain bytes; `uname` fills it in.
    let mut names: libc::utsname = unsafe { std::mem::zeroed() };
    // SAFETY: `names` is valid for the call to write.
    if unsafe { libc::uname(&mut names) } != 0 {
        return None;
    }
    let release: Vec<u8> = names
        .release
        .iter()
        .take_while(|&&c| c != 0)
        .map(|&c| c as u8)
        .collect();
    String::from_utf8(release).ok().filter(|r| !r.is_empty())
}

/// CPUs online, from `sysconf`; `None` where it cannot say. glibc reads
/// `/sys/devices/system/cpu/online`, then `/proc/stat`, and with neither
/// counts this thread's allowed CPUs, which is no count of those online
/// (`taskset -c 1` in a sandbox without both read as 1 CPU online).
fn online_cpus() -> Option<usize> {
    let readable = |path: &str| std::fs::File::open(path).is_ok();
    if !readable("/sys/devices/system/cpu/online") && !readable("/proc/stat") {
        return None;
    }
    // SAFETY: sysconf takes any name and returns -1 for one it lacks.
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    usize::try_from(n).ok().filter(|&n| n > 0)
}

/// The value of the first `key : value` line of `/proc/cpuinfo` text whose key
/// is exactly `key`.
fn cpuinfo_field<'a>(cpuinfo: &'a str, key: &str) -> Option<&'a str> {
    cpuinfo.lines().find_map(|line| {
        let (k, v) = line.split_once(':')?;
        (k.trim() == key).then(|| v.trim())
    })
}

/// `family F model M stepping S` of the first CPU, if the text has all three.
fn cpu_id(cpuinfo: &str) -> Option<String> {
    let family = cpuinfo_field(cpuinfo, "cpu family")?;
    let model = cpuinfo_field(cpuinfo, "model")?;
    let stepping = cpuinfo_field(cpuinfo, "stepping")?;
    Some(format!("family {family} model {model} stepping {stepping}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The release `uname` gives, which a machine without /proc records,
    /// is the one /proc gives (it was "linux" until 2026-12-07).
    #[test]
    fn the_kernel_release_comes_from_uname_without_proc() {
        let release = kernel_release().expect("uname");
        if let Ok(proc) = std::fs::read_to_string("/proc/sys/kernel/osrelease") {
            assert_eq!(release, proc.trim());
        }
        assert_ne!(release, std::env::consts::OS);
    }

    /// The build script's records reach the binary: a version, an
    /// optimization level, the target, and every Rust peer with a version.
    #[test]
    fn the_build_description_names_the_peers_and_the_optimization() {
        let build = Build::current();
        assert_eq!(build.version, env!("CARGO_PKG_VERSION"));
        assert!(!build.opt_level.is_empty());
        assert!(build.target.contains("-"), "{}", build.target);
        for peer in [
            "crossbeam-epoch",
            "haphazard",
            "seize",
            "arc-swap",
            "seqlock",
            "parking_lot",
            "spin",
        ] {
            let entry = build
                .peers
                .iter()
                .find(|p| p.split(' ').next() == Some(peer))
                .unwrap_or_else(|| panic!("{peer} missing from {:?}", build.peers));
            let version = entry.split(' ').nth(1).unwrap();
            assert!(
                version.split('.').all(|part| part.parse::<u32>().is_ok()),
                "{entry}"
            );
        }
        assert!(
            build.summary().contains("parking_lot "),
            "{}",
            build.summary()
        );
        // Only a build at an optimization level above 0 and without debug
        // assertions (which check every counter) times anything comparable.
        let release = Build {
            opt_level: "3".into(),
            debug_assertions: false,
            ..build.clone()
        };
        assert_eq!(release.unoptimized_warning(), None);
        for (opt_level, debug_assertions, says) in [
            ("0", true, "(opt-level 0, debug assertions on)"),
            ("0", false, "(opt-level 0)"),
            ("3", true, "(opt-level 3, debug assertions on)"),
        ] {
            let warning = Build {
                opt_level: opt_level.into(),
                debug_assertions,
                ..build.clone()
            }
            .unoptimized_warning()
            .unwrap_or_else(|| panic!("no warning at {opt_level}, {debug_assertions}"));
            assert!(warning.contains(says), "{warning}");
        }
        // A results.json whose build lacks a field still reads back.
        let partial: Build = serde_json::from_str(r#"{"commit": "abc"}"#).unwrap();
        assert_eq!(partial.commit.as_deref(), Some("abc"));
    }

    #[test]
    fn the_cpu_generation_is_read_from_cpuinfo() {
        let x86 = "processor\t: 0\nvendor_id\t: AuthenticAMD\ncpu family\t: 26\nmodel\t\t: 2\n\
                   model name\t: AMD EPYC\nstepping\t: 1\n\nprocessor\t: 1\ncpu family\t: 25\n";
        assert_eq!(cpuinfo_field(x86, "model name"), Some("AMD EPYC"));
        // "model" is not taken from the "model name" line.
        assert_eq!(cpuinfo_field(x86, "model"), Some("2"));
        assert_eq!(cpu_id(x86).as_deref(), Some("family 26 model 2 stepping 1"));
        let arm = "processor\t: 0\nBogoMIPS\t: 50.00\nCPU implementer\t: 0x41\n";
        assert_eq!(cpu_id(arm), None);
    }

    /// The busy figure needs a CPU besides the timing thread's: counts a
    /// test machine may not have (the measured figure is checked against
    /// this machine's below).
    #[test]
    fn the_busy_fence_spins_on_every_other_cpu_and_needs_one() {
        for (cpus, spinners) in [(1, None), (2, Some(1)), (8, Some(7))] {
            assert_eq!(busy_spinners(cpus), spinners, "{cpus} CPUs");
        }
    }

    /// Fixed times, given out of order: the median and the 99th percentile
    /// are nearest ranks of the sorted times, and the mean is their average.
    #[test]
    fn fence_latency_figures_come_from_the_sorted_times() {
        let latency = FenceLatency::of((1..=100).rev().map(f64::from).collect());
        assert_eq!(
            (latency.p50, latency.p99, latency.mean),
            (51.0, 99.0, 50.5),
            "{latency:?}"
        );
        let one = FenceLatency::of(vec![0.25]);
        assert_eq!((one.p50, one.p99, one.mean), (0.25, 0.25, 0.25), "{one:?}");
    }

    #[test]
    fn the_heavy_fence_cost_is_measured_and_in_the_summary() {
        let cpus_of = || {
            let set = rustix::thread::sched_getaffinity(None).expect("own affinity");
            (0..rustix::thread::CpuSet::MAX_CPU)
                .filter(|&cpu| set.is_set(cpu))
                .collect::<Vec<_>>()
        };
        let before = cpus_of();
        let machine = Machine::current();
        let fence = machine.heavy_fence;
        assert!(
            fence.idle_us.is_finite() && fence.idle_us >= 0.0,
            "{fence:?}"
        );
        assert_eq!(fence.busy_us.is_some(), machine.cores > 1, "{fence:?}");
        let summary = machine.summary();
        if let Some(id) = &machine.cpu_id {
            assert!(summary.contains(id.as_str()), "{summary}");
        }
        let full = machine.full_fence_ns.expect("measured");
        assert!(full > 0.0 && full.is_finite(), "{machine:?}");
        assert!(
            summary.contains(&format!("seize pay, {full:.2} ns")),
            "{summary}"
        );
        // liburcu-memb's fences beside ours, where this build has liburcu.
        assert_eq!(
            machine.liburcu_memb_fences.is_some(),
            crate::liburcu::LINKED,
            "{machine:?}"
        );
        assert_eq!(
            summary.contains("; liburcu-memb's: "),
            crate::liburcu::LINKED,
            "{summary}"
        );
        // A process allowed fewer CPUs than are online says both.
        let online = machine.online_cpus.expect("sysconf answers on Linux");
        assert!(online >= machine.cores, "{machine:?}");
        let quota = Machine {
            cores: 2,
            online_cpus: Some(64),
            ..machine.clone()
        };
        assert!(
            quota.summary().contains("(2 CPUs usable of 64 online)")
                || quota.summary().contains(", 2 CPUs usable of 64 online)"),
            "{}",
            quota.summary()
        );
        // A run from before the fence was measured: the line leaves it out.
        let older = Machine {
            full_fence_ns: None,
            cpu_id: None,
            online_cpus: None,
            liburcu_memb_fences: None,
            ..machine.clone()
        };
        assert!(
            !older.summary().contains("SeqCst") && older.summary().ends_with("busy)")
                || machine.cores == 1,
            "{}",
            older.summary()
        );
        assert!(
            summary.contains(&format!(
                "heavy fence {:.2} us with the other CPUs idle",
                fence.idle_us
            )),
            "{summary}"
        );
        if let Some(busy) = fence.busy_us {
            assert!(
                summary.contains(&format!("{busy:.2} us with the other CPUs busy")),
                "{summary}"
            );
        }
        let latency = heavy_fence_us(1, 100).expect("one spinner starts");
        assert!(latency.p50 <= latency.p99, "{latency:?}");
        assert!(latency.mean > 0.0, "{latency:?}");
        assert_eq!(
            cpus_of(),
            before,
            "the caller's affinity was not given back"
        );
    }
}
