//! How grace periods are driven: quick quiescent-state reporting on or off, and
//! how force-quiescent-state (FQS) scans are paced.
//!
//! Kernel counterpart: the seed's patch (report the grace-period kthread's own
//! quiescent state at the end of `rcu_gp_init()`) and the `jiffies_till_first_fqs`
//! / `jiffies_till_next_fqs` pacing of `rcu_gp_fqs_loop()`.
//!
//! An engine keeps its settings in one word (`encode_config`), which the
//! driver of each grace period reads whole when the grace period begins.

use std::time::Duration;

/// How the driver paces its force-quiescent-state scans.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Fqs {
    /// Scan at once after init; recheck holdouts while spinning briefly, then
    /// sleep until a holdout's unlock or quiescent state wakes the driver. The
    /// default: the lowest latency this engine can give.
    #[default]
    Adaptive,
    /// The kernel's pacing: wait `interval` after init, scan, and while any
    /// thread holds out wait `interval` again before the next scan. A wait ends
    /// early once every holdout has passed a quiescent state and the driver has
    /// already been credited (the kernel's `rcu_gp_fqs_check_wake()`); the
    /// first is left out when the driver is credited and no other thread holds
    /// a record (the kernel's one-CPU system, where nothing is left to wait
    /// for).
    ///
    /// Every wait that does not end early (its holdouts already past a
    /// quiescent state once flagged, or an expedited caller waiting) sleeps,
    /// however short the interval: its first sleep lasts at least 50 us, whatever is left of the interval once the driver
    /// gets there (the scan and a heavy fence come first), as the kernel's
    /// grace-period kthread sleeps at least one jiffy. 50 us is the kernel's
    /// default timer slack, to which a normal thread's shorter timed waits
    /// are lengthened anyway. However short the interval, the driver never
    /// rescans a holdout back to back. Zero is refused; an interval above
    /// 2^63 - 1 ns (about 292 years) is taken as that, which
    /// [`config`](crate::memb::config) then returns. Stall warnings count
    /// from the grace period's start, and a wait after a scan ends when the
    /// next one is due; but the first comes no sooner than scan 1, which
    /// follows the first wait: with an interval past the stall timeout
    /// (21 s by default) that is where a stall is first named, and with the
    /// 292-year one, never.
    FixedInterval(Duration),
}

impl Fqs {
    /// The kernel's FQS interval at `HZ=1000` as the seed measured it: 3 ms.
    pub const KERNEL_INTERVAL: Duration = Duration::from_millis(3);

    /// [`Fqs::FixedInterval`] with [`Fqs::KERNEL_INTERVAL`].
    pub const fn kernel() -> Fqs {
        Fqs::FixedInterval(Fqs::KERNEL_INTERVAL)
    }
}

/// The settings of a flavor's grace-period engine (see `memb::configure`,
/// `qsbr::configure`). The driver of a grace period reads them when the grace
/// period begins.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct GpConfig {
    /// Whether the driver reports its own quiescent state at the end of init
    /// (the seed's patch). Off, the driver is credited like any other thread:
    /// only once it has passed a quiescent state, which it does when it waits
    /// between two FQS scans, as the kernel's grace-period kthread did before
    /// the patch. On by default.
    ///
    /// The switch matters under [`Fqs::FixedInterval`], where it turns an idle
    /// grace period's two FQS waits into one (an idle system: other
    /// registered threads outside their sections, its idle CPUs), or into
    /// none where the driver's thread is the only one holding a record. Under [`Fqs::Adaptive`] the
    /// driver's wait for holdouts is its quiescent state and begins as soon
    /// as scan 1 is over (at once when there are none), so off costs nothing
    /// measurable there.
    pub quick_qs: bool,
    /// How FQS scans are paced.
    pub fqs: Fqs,
}

impl GpConfig {
    /// Quick quiescent-state reporting on, adaptive FQS.
    pub const DEFAULT: GpConfig = GpConfig {
        quick_qs: true,
        fqs: Fqs::Adaptive,
    };
}

impl Default for GpConfig {
    fn default() -> GpConfig {
        GpConfig::DEFAULT
    }
}

/// A [`GpConfig`] in the one word an engine keeps it in, so that
/// `configure` swaps the whole of it: bit 63 is [`GpConfig::quick_qs`], the
/// rest the [`Fqs::FixedInterval`] in nanoseconds (at least 1, at most
/// 2^63 - 1: about 292 years), or 0 for [`Fqs::Adaptive`].
const QUICK_QS_BIT: u64 = 1 << 63;

/// `config` as one word (see `QUICK_QS_BIT`). An interval of zero becomes
/// 1 ns (`configure` refuses zero before it gets here), one beyond the range
/// the longest the word holds.
pub(crate) const fn encode_config(config: GpConfig) -> u64 {
    let interval_ns = match config.fqs {
        Fqs::Adaptive => 0,
        Fqs::FixedInterval(d) => {
            let ns = d.as_nanos();
            if ns == 0 {
                1
            } else if ns >= QUICK_QS_BIT as u128 {
                QUICK_QS_BIT - 1
            } else {
                // In range: checked just above.
                ns as u64
            }
        }
    };
    interval_ns | if config.quick_qs { QUICK_QS_BIT } else { 0 }
}

/// The [`GpConfig`] that `encode_config` made `word` from.
pub(crate) fn decode_config(word: u64) -> GpConfig {
    let interval_ns = word & !QUICK_QS_BIT;
    GpConfig {
        quick_qs: word & QUICK_QS_BIT != 0,
        fqs: if interval_ns == 0 {
            Fqs::Adaptive
        } else {
            Fqs::FixedInterval(Duration::from_nanos(interval_ns))
        },
    }
}

/// `configure`'s refusal of [`Fqs::FixedInterval`] with a zero interval.
#[cold]
#[inline(never)]
pub(crate) fn zero_fqs_interval() -> ! {
    panic!(
        "rcu_lite: configure() with Fqs::FixedInterval(0): a zero interval asks for scans \
         without waiting between them, which the driver never does (every FQS wait that does not end early sleeps); \
         Fqs::Adaptive gives the fastest grace periods"
    )
}
