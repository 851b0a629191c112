//! How grace periods are driven: quick quiescent-state reporting on or off, and
//! how force-quiescent-state (FQS) scans are paced.
//!
//! Kernel counterpart: the seed's patch (report the grace-period kthread's own
//! quiescent state at the end of `rcu_gp_init()`) and the `jiffies_till_first_fqs`
//! / `jiffies_till_next_fqs` pacing of `rcu_gp_fqs_loop()`.

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
    /// already been credited (the kernel's `rcu_gp_fqs_check_wake()`).
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
