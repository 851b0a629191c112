//! The simulator through its public API: determinism, the policies'
//! behaviour with and without interrupts-off windows, and parameter checks.

use membarrier_sim::sim::{self, Config, ConfigError, NS_PER_S, Policy, Report, Throttle};

fn run(config: &Config) -> Report {
    sim::run(config).unwrap_or_else(|e| panic!("{e}"))
}

fn scenario(cpus: u32, policy: Policy, seconds: u64) -> Config {
    let mut c = Config::selftest(cpus);
    c.policy = policy;
    c.sim_time_ns = seconds * NS_PER_S;
    c
}

#[test]
#[cfg_attr(miri, ignore = "too slow under miri: simulates seconds of many CPUs")]
fn same_parameters_and_seed_give_the_same_report_byte_for_byte() {
    for policy in Policy::ALL {
        let c = scenario(16, policy, 2);
        let a = run(&c).to_string();
        let b = run(&c).to_string();
        assert_eq!(a, b, "{policy}");
        assert!(a.contains(&format!("policy {policy}")), "{a}");
        let mut other = c.clone();
        other.seed = 2;
        assert_ne!(run(&other).to_string(), a, "{policy}: the seed must matter");
    }
}

#[test]
#[cfg_attr(miri, ignore = "too slow under miri: simulates seconds of many CPUs")]
fn without_windows_and_an_unsaturated_mutex_the_policies_match() {
    // Eight callers that think 50 us between calls offer about 150k calls/s,
    // well below what one global mutex passes (~400k/s): serializing costs
    // nothing but a little queueing.
    let mut c = scenario(8, Policy::Global, 1);
    c.throttle = None;
    c.callers = 8;
    c.think_ns = 50_000;
    let global = run(&c);
    c.policy = Policy::PerCpu;
    let per_cpu = run(&c);
    let ratio = per_cpu.calls_per_s() / global.calls_per_s();
    assert!(
        (0.97..1.03).contains(&ratio),
        "{ratio}\n{global}\n{per_cpu}"
    );
    assert_eq!(global.irq_off_fraction, 0.0);
    assert_eq!(global.stalls + per_cpu.stalls, 0);
}

#[test]
#[cfg_attr(miri, ignore = "too slow under miri: simulates seconds of many CPUs")]
fn without_windows_a_tight_loop_still_saturates_the_global_mutex_but_never_stalls() {
    // The selftest's tight loop on 8 CPUs: the global mutex passes one IPI
    // round trip at a time while per-CPU mutexes pass eight, so per-cpu is
    // faster even without throttling; but every caller still gets through
    // within milliseconds.
    let mut c = scenario(8, Policy::Global, 1);
    c.throttle = None;
    c.sim_time_ns = NS_PER_S / 5;
    let global = run(&c);
    c.policy = Policy::PerCpu;
    let per_cpu = run(&c);
    assert!(
        per_cpu.calls_per_s() > 2.0 * global.calls_per_s(),
        "{global}\n{per_cpu}"
    );
    assert_eq!(global.stalls + per_cpu.stalls, 0);
    assert!(global.latency().max_ns < 10_000_000, "{global}");
}

#[test]
#[cfg_attr(miri, ignore = "too slow under miri: simulates seconds of many CPUs")]
fn with_windows_per_cpu_never_does_worse_than_global() {
    for cpus in [1, 2, 4, 8, 16, 32] {
        for seed in 1..=4 {
            let mut c = scenario(cpus, Policy::Global, 1);
            c.seed = seed;
            let global = run(&c);
            c.policy = Policy::PerCpu;
            let per_cpu = run(&c);
            assert!(
                per_cpu.calls >= global.calls,
                "cpus {cpus} seed {seed}:\n{global}\n{per_cpu}"
            );
            assert!(per_cpu.stalls <= global.stalls, "cpus {cpus} seed {seed}");
            assert!(global.irq_off_fraction > 0.3, "{global}");
        }
    }
}

#[test]
#[cfg_attr(miri, ignore = "too slow under miri: simulates seconds of many CPUs")]
fn on_a_large_machine_global_stalls_and_per_cpu_does_not() {
    let global = run(&scenario(128, Policy::Global, 3));
    let per_cpu = run(&scenario(128, Policy::PerCpu, 3));
    assert!(global.stalls > 0, "{global}");
    assert_eq!(per_cpu.stalls, 0, "{per_cpu}");
    assert!(
        per_cpu.calls_per_s() > 20.0 * global.calls_per_s(),
        "{global}\n{per_cpu}"
    );
    // A stalled global caller waited for the whole queue, not for one window.
    assert!(global.mutex_wait_max_ns > NS_PER_S, "{global}");
    assert!(global.latency().max_ns > NS_PER_S, "{global}");
}

#[test]
#[cfg_attr(miri, ignore = "too slow under miri: simulates seconds of many CPUs")]
fn a_call_on_the_callers_own_cpu_runs_the_handler_locally() {
    let mut c = scenario(1, Policy::Global, 1);
    c.throttle = None;
    c.callers = 1;
    let r = run(&c);
    let l = r.latency();
    // No IPI: the handler alone, then the syscall's own CPU time, per call.
    assert_eq!(l.max_ns, c.costs.ipi_handler_ns);
    assert_eq!(l.p50_ns, c.costs.ipi_handler_ns);
    let per_call = c.costs.ipi_handler_ns + c.costs.syscall_ns;
    assert_eq!(r.calls, NS_PER_S / per_call + 1);
    assert_eq!(r.mutex_wait_max_ns, 0);
}

#[test]
#[cfg_attr(miri, ignore = "too slow under miri: simulates seconds of many CPUs")]
fn a_remote_call_costs_one_ipi_round_trip_without_contention() {
    let mut c = scenario(2, Policy::PerCpu, 1);
    c.throttle = None;
    c.callers = 1;
    let r = run(&c);
    assert_eq!(
        r.latency().max_ns,
        c.costs.ipi_latency_ns + c.costs.ipi_handler_ns
    );
    assert!(r.latency().mean_ns > 0.0);
}

#[test]
#[cfg_attr(miri, ignore = "too slow under miri: simulates seconds of many CPUs")]
fn broadcasts_wait_for_every_cpu_and_take_the_global_mutex() {
    let mut c = scenario(16, Policy::PerCpu, 1);
    let targeted = run(&c);
    c.broadcast_every = 4;
    let mixed = run(&c);
    assert!(mixed.calls > 0);
    // A broadcast waits for whichever CPU is walking, and every fourth call
    // queues on the one global mutex.
    assert!(mixed.calls < targeted.calls, "{targeted}\n{mixed}");
    assert!(mixed.latency().max_ns > targeted.latency().max_ns);
}

#[test]
#[cfg_attr(miri, ignore = "too slow under miri: simulates seconds of many CPUs")]
fn targets_confine_the_callers_to_the_cpus_named() {
    let mut c = scenario(8, Policy::PerCpu, 1);
    c.throttle = None;
    c.callers = 16;
    c.targets = Some(vec![3]);
    let one_target = run(&c);
    c.targets = None;
    let all_targets = run(&c);
    // Sixteen callers behind one per-CPU mutex pass one call at a time.
    assert!(
        all_targets.calls_per_s() > 3.0 * one_target.calls_per_s(),
        "{one_target}\n{all_targets}"
    );
    let placement = {
        let mut c = c.clone();
        c.targets = Some(vec![3, 5]);
        c.placement()
    };
    assert!(placement.iter().all(|&(_, t)| t == 3 || t == 5));
}

#[test]
#[cfg_attr(miri, ignore = "too slow under miri: simulates seconds of many CPUs")]
fn latency_figures_are_ordered() {
    for policy in Policy::ALL {
        let r = run(&scenario(32, policy, 1));
        let l = r.latency();
        assert!(l.p50_ns <= l.p99_ns && l.p99_ns <= l.max_ns, "{r}");
        assert!(l.mean_ns <= l.max_ns as f64, "{r}");
        assert!(r.calls > 0 && r.events > 0, "{r}");
        assert!(r.timer_passes >= 199, "{r}");
    }
}

#[test]
#[cfg_attr(miri, ignore = "too slow under miri: simulates seconds of many CPUs")]
fn bad_parameters_are_refused_with_the_reason() {
    let ok = scenario(8, Policy::Global, 1);
    assert!(sim::run(&ok).is_ok());
    type Spoil = Box<dyn Fn(&mut Config)>;
    let cases: Vec<(Spoil, &str)> = vec![
        (Box::new(|c| c.cpus = 0), "at least 1 CPU"),
        (Box::new(|c| c.callers = 0), "at least 1 caller"),
        (Box::new(|c| c.targets = Some(vec![2, 9])), "target CPU 9"),
        (Box::new(|c| c.targets = Some(vec![])), "empty"),
        (Box::new(|c| c.sim_time_ns = 0), "more than 0"),
        (
            Box::new(|c| c.sim_time_ns = 2_000 * NS_PER_S),
            "at most 1000",
        ),
        (Box::new(|c| c.costs.syscall_ns = 0), "syscall_ns"),
        // A cost or think time past the run would overflow the clock (or, for
        // syscall_ns, generate throttle windows far past the end).
        (
            Box::new(|c| c.costs.syscall_ns = 2_000 * NS_PER_S),
            "syscall_ns is 2000000000000 ns, longer than the whole simulated run",
        ),
        (Box::new(|c| c.think_ns = u64::MAX), "think_ns is"),
        (
            Box::new(|c| c.costs.ipi_latency_ns = u64::MAX),
            "ipi_latency_ns is",
        ),
        (
            Box::new(|c| c.costs.mutex_handoff_ns = u64::MAX),
            "mutex_handoff_ns is",
        ),
        (Box::new(|c| c.watchdog_ns = 0), "watchdog"),
        (
            Box::new(|c| c.throttle.as_mut().unwrap().period_ns = 0),
            "period must be more than 0",
        ),
        (
            Box::new(|c| c.throttle.as_mut().unwrap().quota_ns = 0),
            "quota must be more than 0",
        ),
        (
            Box::new(|c| c.throttle.as_mut().unwrap().quota_ns = 40_000_000),
            "never throttle",
        ),
        // The kernel's bounds: nanosecond periods cost a timer pass each.
        (
            Box::new(|c| c.throttle.as_mut().unwrap().period_ns = 999_999),
            "from 1 ms to 1 s, as the kernel allows (got 999999 ns)",
        ),
        (
            Box::new(|c| {
                c.sim_time_ns = 2 * NS_PER_S;
                c.throttle.as_mut().unwrap().period_ns = 1_000_000_001;
            }),
            "from 1 ms to 1 s",
        ),
        (
            Box::new(|c| c.throttle.as_mut().unwrap().quota_ns = 999_999),
            "at least 1 ms, as the kernel allows (got 999999 ns)",
        ),
        // Past the run they overflowed the timer's arithmetic.
        (
            Box::new(|c| c.throttle.as_mut().unwrap().distribute_entry_ns = u64::MAX / 4),
            "distribute_entry_ns is",
        ),
        (
            Box::new(|c| {
                let t = c.throttle.as_mut().unwrap();
                t.period_ns = 18_446_744_073_709_551_000;
                t.quota_ns = 18_446_744_073_709_551_000;
            }),
            "period_ns is",
        ),
        (
            Box::new(|c| c.throttle.as_mut().unwrap().overshoot_ns = 0),
            "overshoot",
        ),
        (
            Box::new(|c| c.throttle.as_mut().unwrap().window_spread_pct = 101),
            "at most 100%",
        ),
        (
            Box::new(|c| c.throttle.as_mut().unwrap().timer_cpu = 8),
            "timer fires on CPU 8",
        ),
        (
            Box::new(|c| c.throttle.as_mut().unwrap().tg_visit_ns = u64::MAX / 2),
            "throttle walk",
        ),
    ];
    for (i, (spoil, needle)) in cases.iter().enumerate() {
        let mut c = ok.clone();
        spoil(&mut c);
        let err = sim::run(&c).expect_err(needle);
        assert!(
            err.to_string().contains(needle),
            "case {i}: expected '{needle}' in '{err}'"
        );
        assert_eq!(c.validate(), Err(err));
    }
    assert_eq!(
        sim::run(&Config {
            cpus: 0,
            ..ok.clone()
        })
        .unwrap_err(),
        ConfigError::NoCpus
    );
    // Built by hand (`validate` reports NoCpus first): its message
    // underflowed `cpus - 1`.
    assert_eq!(
        ConfigError::NoSuchTarget { target: 3, cpus: 0 }.to_string(),
        "callers target CPU 3, but the simulated machine has no CPUs"
    );
    assert_eq!("per-cpu".parse::<Policy>(), Ok(Policy::PerCpu));
    let unknown: Box<dyn std::error::Error + Send + Sync> =
        "fast".parse::<Policy>().unwrap_err().into();
    assert_eq!(
        unknown.to_string(),
        "unknown policy 'fast' (valid: global, per-cpu, none)"
    );
    assert_eq!(Throttle::selftest().task_groups(), 12_001);
}

/// Every upper limit `validate` enforces is inclusive: the largest value
/// allowed passes and the next one is refused with its own error. Only the
/// far side of each limit was tested, so a limit moved by one (`>` written
/// `>=`, or `==`) went unnoticed.
#[test]
fn each_limit_accepts_its_largest_value_and_refuses_the_next() {
    let ok = Config::selftest(8);
    type Set = Box<dyn Fn(&mut Config, u64)>;
    fn throttle(c: &mut Config) -> &mut Throttle {
        c.throttle.as_mut().unwrap()
    }
    let limits: Vec<(&str, u64, Set, ConfigError)> = vec![
        (
            "cpus",
            u64::from(sim::MAX_CPUS),
            Box::new(|c, v| c.cpus = u32::try_from(v).unwrap()),
            ConfigError::TooManyCpus {
                cpus: sim::MAX_CPUS + 1,
            },
        ),
        (
            "callers",
            u64::from(sim::MAX_CALLERS),
            Box::new(|c, v| c.callers = u32::try_from(v).unwrap()),
            ConfigError::TooManyCallers {
                callers: sim::MAX_CALLERS + 1,
            },
        ),
        (
            "sim_time_ns",
            sim::MAX_SIM_TIME_NS,
            Box::new(|c, v| c.sim_time_ns = v),
            ConfigError::TooLong {
                sim_time_ns: sim::MAX_SIM_TIME_NS + 1,
            },
        ),
        // A cost may last the whole run, not longer.
        (
            "ipi_latency_ns",
            ok.sim_time_ns,
            Box::new(|c, v| c.costs.ipi_latency_ns = v),
            ConfigError::LongerThanTheRun {
                what: "ipi_latency_ns",
                ns: ok.sim_time_ns + 1,
                sim_time_ns: ok.sim_time_ns,
            },
        ),
        // An overshoot may take the whole quota.
        (
            "overshoot_ns",
            ok.throttle.as_ref().unwrap().quota_ns,
            Box::new(|c, v| throttle(c).overshoot_ns = v),
            ConfigError::BadOvershoot {
                overshoot_ns: 1_000_001,
                quota_ns: 1_000_000,
            },
        ),
        (
            "window_spread_pct",
            100,
            Box::new(|c, v| throttle(c).window_spread_pct = u32::try_from(v).unwrap()),
            ConfigError::BadSpread { spread_pct: 101 },
        ),
        // The kernel's longest CFS period.
        (
            "period_ns",
            1_000_000_000,
            Box::new(|c, v| throttle(c).period_ns = v),
            ConfigError::PeriodOutOfRange {
                period_ns: 1_000_000_001,
            },
        ),
        // One task group (no siblings): the walk is tg_visit_ns itself.
        (
            "tg_visit_ns",
            sim::MAX_WALK_NS,
            Box::new(|c, v| {
                let t = throttle(c);
                t.siblings = 0;
                t.tg_visit_ns = v;
            }),
            ConfigError::WalkTooLong,
        ),
    ];
    for (what, limit, set, past) in &limits {
        let mut c = ok.clone();
        set(&mut c, *limit);
        assert_eq!(c.validate(), Ok(()), "{what} = {limit}");
        set(&mut c, limit + 1);
        assert_eq!(c.validate().as_ref(), Err(past), "{what} = {}", limit + 1);
    }
    // The kernel's shortest CFS period and quota, 1 ms each, are accepted
    // (a nanosecond less is refused: `bad_parameters_are_refused_with_the_reason`).
    let mut c = ok.clone();
    throttle(&mut c).period_ns = 1_000_000;
    throttle(&mut c).quota_ns = 1_000_000;
    throttle(&mut c).overshoot_ns = 1_000;
    assert_eq!(c.validate(), Ok(()));
    // No siblings is one task group however deep (the depth's count of
    // groups once overflowed and was refused as a walk too long).
    let mut c = ok.clone();
    throttle(&mut c).siblings = 0;
    throttle(&mut c).depth = u64::MAX;
    assert_eq!(c.validate(), Ok(()));
    // The walk's limit is the 10 s its refusal names.
    assert!(
        ConfigError::WalkTooLong
            .to_string()
            .ends_with("more than 10 s"),
        "{}",
        ConfigError::WalkTooLong
    );
}

/// A quota one nanosecond short of covering every CPU for the whole period
/// still throttles, so it is accepted; the whole `period * cpus` is refused
/// (see `bad_parameters_are_refused_with_the_reason`).
#[test]
fn a_quota_just_short_of_every_cpu_for_the_whole_period_is_accepted() {
    let mut c = Config::selftest(8);
    let t = c.throttle.as_mut().unwrap();
    t.quota_ns = t.period_ns * 8 - 1;
    assert_eq!(c.validate(), Ok(()));
}

/// `Config::selftest` is what its documentation says: the selftest's 25
/// callers per CPU (`N_HAMMER_PER_CPU`) aimed at every CPU, on the
/// selftest's cgroups, under the global mutex, for 10 simulated seconds
/// with a 1 s watchdog. Every other test overrides the run's length, so
/// nothing checked it.
#[test]
fn the_selftest_scenario_is_10_s_of_25_callers_per_cpu_under_the_global_mutex() {
    for cpus in [1, 8, 64] {
        let c = Config::selftest(cpus);
        assert_eq!(c.callers, 25 * cpus, "{cpus} CPUs");
        assert_eq!(c.targets, None);
        assert_eq!(c.throttle, Some(Throttle::selftest()));
        assert_eq!(c.policy, Policy::Global);
        assert_eq!(c.sim_time_ns, 10 * NS_PER_S);
        assert_eq!((c.think_ns, c.broadcast_every), (0, 0));
        assert_eq!(c.watchdog_ns, NS_PER_S);
        assert_eq!(c.validate(), Ok(()));
    }
    // Saturates rather than overflowing.
    assert_eq!(Config::selftest(u32::MAX).callers, u32::MAX);
}

/// Policies print as their command-line names, which parse back: the
/// reports and the CLI's `--policy` use the same spelling.
#[test]
fn policies_print_as_their_command_line_names() {
    let printed: Vec<String> = Policy::ALL.iter().map(|p| p.to_string()).collect();
    assert_eq!(printed, ["global", "per-cpu", "none"]);
    for (p, name) in Policy::ALL.iter().zip(&printed) {
        assert_eq!(name.parse::<Policy>(), Ok(*p));
    }
}

/// A report prints each figure in the unit its label names (latencies and
/// the mutex wait in µs, the window in ms, the watchdog in s) and its calls
/// per second over the time it covers. Determinism was checked on the text,
/// but nothing checked what the text says.
#[test]
fn a_report_prints_each_figure_in_the_unit_its_label_names() {
    let mut latency = sim::Histogram::new();
    for ns in [120, 120, 4_000] {
        latency.record(ns);
    }
    let r = Report {
        cpus: 4,
        callers: 8,
        policy: Policy::PerCpu,
        seed: 7,
        time_ns: 2 * NS_PER_S,
        calls: 3,
        latency,
        mutex_wait_max_ns: 1_234_567,
        stalls: 2,
        stalled_callers: 1,
        watchdog_ns: NS_PER_S / 2,
        irq_off_fraction: 0.25,
        irq_off_longest_ns: 2_400_000,
        timer_passes: 400,
        chained_passes: 0,
        period_scalings: 0,
        events: 10,
    };
    assert_eq!(r.calls_per_s(), 1.5);
    assert_eq!(
        r.to_string(),
        "cpus 4 callers 8 policy per-cpu seed 7 seconds 2.000\n\
         calls 3 (1.5/s)\n\
         latency_us mean 1.413 p50 0.120 p99 4.000 max 4.000\n\
         mutex_wait_max_us 1234.567\n\
         stalls 2 (callers stalled 1 of 8, watchdog 0.500 s)\n\
         irq_off 25.00% of CPU time, longest window 2.400 ms\n"
    );
}

/// Callers are placed as `Config::placement` documents: each block of
/// `cpus` callers covers every home CPU once, shifted by one per block, so
/// one target's callers sit on distinct CPUs and on the target itself only
/// every `cpus`-th time; with a target list they may share a home (the
/// example in `Config::callers`).
#[test]
fn placement_puts_one_targets_callers_on_distinct_home_cpus() {
    let mut c = Config::selftest(4);
    c.callers = 8;
    assert_eq!(
        c.placement(),
        [
            (1, 0),
            (2, 1),
            (3, 2),
            (0, 3),
            (2, 0),
            (3, 1),
            (0, 2),
            (1, 3)
        ]
    );
    // Four blocks: every target's callers on all four CPUs, its own last,
    // and every CPU home to four callers.
    c.callers = 16;
    let p = c.placement();
    for target in 0..4 {
        let homes: Vec<u32> = p
            .iter()
            .filter(|&&(_, t)| t == target)
            .map(|&(h, _)| h)
            .collect();
        let expected: Vec<u32> = (1..=4).map(|k| (target + k) % 4).collect();
        assert_eq!(homes, expected, "target {target}");
    }
    // Targets [0, 1, 2] on 8 CPUs: CPU 0's first 6 callers (0, 3, 6, ...)
    // have homes 1, 4, 7, 3, 6 and 1 again.
    let mut c = Config::selftest(8);
    c.callers = 18;
    c.targets = Some(vec![0, 1, 2]);
    let p = c.placement();
    let targets: Vec<u32> = p.iter().map(|&(_, t)| t).collect();
    assert_eq!(targets, [0, 1, 2].repeat(6));
    let homes_of_0: Vec<u32> = p.iter().step_by(3).map(|&(h, _)| h).collect();
    assert_eq!(homes_of_0, [1, 4, 7, 3, 6, 1]);
}
