//! A log of wait lengths whose memory does not grow with the number of
//! waits: rcuscale's writers record every wait into one each, and a run's
//! latency figures come from their merge.
//!
//! Keeping every wait, as rcuscale did until 2026-12-05, cost 8 bytes a
//! wait: an hour of a primitive that completes a wait in under a
//! microsecond took tens of GiB, and the list's regrowth fell inside the
//! waits it measured. The kernel's rcuscale keeps a fixed number of
//! samples per writer and drops the rest; this log keeps them all, in
//! buckets. It is not the simulator's `membarrier_sim::sim::Histogram`,
//! which keeps counts only and reports nearest-rank bucket middles: rcuscale
//! reports percentiles interpolated as [`crate::stats::percentile`] does and
//! a time-weighted median, and waits of equal length must give their exact
//! figures; both need each bucket's sum.
//!
//! Invariants:
//! - Waits are kept in nanoseconds, in log-linear buckets: exact below
//!   256 ns, and above that 128 buckets per power of two, so that a bucket
//!   spans at most 1/128 of its lowest value.
//! - Every bucket keeps its count and the exact sum of its waits; the log
//!   keeps the count, sum, shortest and longest of all. So the mean, the
//!   minimum and the maximum are exact, and a figure read from a bucket is
//!   its waits' mean, within 0.8% of each of them (exact when they are
//!   equal, as in the tests).
//! - The buckets for waits up to about 17 ms are allocated with the log:
//!   recording a wait allocates only when a longer one first arrives.

use std::time::Duration;

/// log2 of the buckets per power of two.
const SUB_BITS: u32 = 7;
/// Buckets per power of two; waits below `2 * SUB` ns have one bucket each.
const SUB: u64 = 1 << SUB_BITS;
/// Buckets allocated up front: every wait below 2^24 ns (16.8 ms).
const PREALLOCATED: usize = bucket_of((1 << 24) - 1) + 1;

/// The bucket of a wait of `ns` nanoseconds.
const fn bucket_of(ns: u64) -> usize {
    if ns < SUB {
        return ns as usize;
    }
    // ns >= 128: its highest set bit is bit 7 or above.
    let shift = 63 - ns.leading_zeros() - SUB_BITS;
    ((shift as u64 + 1) * SUB + ((ns >> shift) - SUB)) as usize
}

/// One bucket: how many waits, and their sum in nanoseconds. A writer's
/// waits follow one another, so their sum is at most its run's length: a
/// `u64` holds 584 years of them, all writers and rounds merged. Past that
/// it saturates (rcuscale's limits allow it only for 1,000 rounds of a day
/// each with thousands of writers), and the figures read from that bucket
/// are then low, though never `NaN`.
#[derive(Clone, Copy, Debug, Default)]
struct Bucket {
    count: u64,
    sum_ns: u64,
}

/// Wait lengths, bucketed; see the module docs.
#[derive(Clone, Debug)]
pub struct WaitLog {
    buckets: Vec<Bucket>,
    count: u64,
    sum_ns: u128,
    min_ns: u64,
    max_ns: u64,
}

impl Default for WaitLog {
    fn default() -> WaitLog {
        WaitLog::new()
    }
}

impl WaitLog {
    /// An empty log, with room for waits up to about 17 ms.
    pub fn new() -> WaitLog {
        WaitLog {
            buckets: vec![Bucket::default(); PREALLOCATED],
            count: 0,
            sum_ns: 0,
            min_ns: u64::MAX,
            max_ns: 0,
        }
    }

    /// Records one wait.
    #[inline]
    pub fn record(&mut self, wait: Duration) {
        let ns = u64::try_from(wait.as_nanos()).unwrap_or(u64::MAX);
        let i = bucket_of(ns);
        if i >= self.buckets.len() {
            self.grow(i);
        }
        let bucket = &mut self.buckets[i];
        bucket.count += 1;
        bucket.sum_ns = bucket.sum_ns.saturating_add(ns);
        self.count += 1;
        self.sum_ns += u128::from(ns);
        self.min_ns = self.min_ns.min(ns);
        self.max_ns = self.max_ns.max(ns);
    }

    #[cold]
    fn grow(&mut self, bucket: usize) {
        self.buckets.resize(bucket + 1, Bucket::default());
    }

    /// Adds every wait of `other`.
    pub fn merge(&mut self, other: &WaitLog) {
        if other.buckets.len() > self.buckets.len() {
            self.grow(other.buckets.len() - 1);
        }
        for (mine, theirs) in self.buckets.iter_mut().zip(&other.buckets) {
            mine.count += theirs.count;
            mine.sum_ns = mine.sum_ns.saturating_add(theirs.sum_ns);
        }
        self.count += other.count;
        self.sum_ns += other.sum_ns;
        self.min_ns = self.min_ns.min(other.min_ns);
        self.max_ns = self.max_ns.max(other.max_ns);
    }

    /// How many waits were recorded.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// The waits' total, in microseconds.
    pub fn sum_us(&self) -> f64 {
        self.sum_ns as f64 / 1000.0
    }

    /// The mean wait in microseconds; `NaN` for no waits.
    pub fn mean_us(&self) -> f64 {
        self.sum_us() / self.count as f64
    }

    /// The longest wait in microseconds; `NaN` for no waits.
    pub fn max_us(&self) -> f64 {
        if self.count == 0 {
            return f64::NAN;
        }
        self.max_ns as f64 / 1000.0
    }

    /// The non-empty buckets in order, each as (count, sum in ns, the
    /// waits' mean in ns).
    fn filled(&self) -> impl Iterator<Item = (u64, u64, f64)> + '_ {
        self.buckets
            .iter()
            .filter(|b| b.count > 0)
            .map(|b| (b.count, b.sum_ns, b.sum_ns as f64 / b.count as f64))
    }

    /// The `rank`-th shortest wait (from 0), in nanoseconds: exact for the
    /// shortest and the longest, else the mean of its bucket.
    fn at_rank(&self, rank: u64) -> f64 {
        if rank == 0 {
            return self.min_ns as f64;
        }
        if rank + 1 >= self.count {
            return self.max_ns as f64;
        }
        let mut below = 0;
        for (count, _, mean) in self.filled() {
            below += count;
            if rank < below {
                return mean;
            }
        }
        unreachable!("rank {rank} is below the count {}", self.count)
    }

    /// The `p`-th percentile (0..=100) in microseconds, linearly
    /// interpolated between closest ranks as [`crate::stats::percentile`];
    /// `NaN` for no waits.
    pub fn percentile_us(&self, p: f64) -> f64 {
        if self.count == 0 {
            return f64::NAN;
        }
        let rank = (p / 100.0).clamp(0.0, 1.0) * (self.count - 1) as f64;
        let (lo, hi) = (rank.floor() as u64, rank.ceil() as u64);
        let (at_lo, at_hi) = (self.at_rank(lo), self.at_rank(hi));
        (at_lo + (at_hi - at_lo) * (rank - lo as f64)) / 1000.0
    }

    /// The time-weighted median in microseconds, as
    /// [`crate::stats::time_weighted_median`] defines it, over buckets: the
    /// first bucket at which the waits up to it add up to at least half the
    /// total gives its waits' mean. `NaN` for no waits.
    pub fn time_weighted_median_us(&self) -> f64 {
        // The buckets' own total (not `sum_ns`), so that the last bucket
        // reaches it even where a bucket's sum saturated.
        let total: u128 = self.filled().map(|(_, sum, _)| u128::from(sum)).sum();
        let mut below = 0u128;
        for (_, sum_ns, mean) in self.filled() {
            below += u128::from(sum_ns);
            if 2 * below >= total {
                return mean / 1000.0;
            }
        }
        f64::NAN
    }

    /// A log of `waits_us`, in microseconds (rounded to nanoseconds).
    #[cfg(test)]
    pub(crate) fn of_us(waits_us: &[f64]) -> WaitLog {
        let mut log = WaitLog::new();
        for &us in waits_us {
            log.record(Duration::from_nanos((us * 1000.0).round() as u64));
        }
        log
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats;

    /// Buckets are exact below 256 ns, then each spans at most 1/128 of
    /// its lowest value, in order and without gaps up to the largest wait.
    #[test]
    fn buckets_cover_every_length_in_order() {
        for ns in 0..256 {
            assert_eq!(bucket_of(ns), ns as usize);
        }
        let mut last = bucket_of(255);
        for ns in [256u64, 258, 1000, 4095, 4096, 1 << 24, 1 << 40, u64::MAX] {
            assert!(bucket_of(ns) > last, "{ns}");
            last = bucket_of(ns);
        }
        // Consecutive buckets: where the bucket changes, it changes by one,
        // and a bucket's width stays under 1/128 of its lowest value.
        let mut start = 256u64;
        for ns in 257..(1u64 << 16) {
            if bucket_of(ns) != bucket_of(ns - 1) {
                assert_eq!(bucket_of(ns), bucket_of(ns - 1) + 1, "{ns}");
                assert!((ns - start) * 128 <= start, "bucket from {start} to {ns}");
                start = ns;
            }
        }
        assert_eq!(bucket_of(u64::MAX), 57 * 128 + 127);
        assert_eq!(PREALLOCATED, bucket_of(1 << 24));
    }

    /// Waits of a few equal lengths give exactly the figures of
    /// `stats` over the list of them.
    #[test]
    fn equal_waits_give_the_exact_figures() {
        let waits = [10.0, 20.0, 10.0, 90.0, 20.0, 10.0];
        let log = WaitLog::of_us(&waits);
        assert_eq!(log.count(), 6);
        assert!((log.mean_us() - stats::mean(&waits)).abs() < 1e-9);
        for p in [0.0, 1.0, 50.0, 75.0, 99.0, 100.0] {
            let exact = stats::percentile(&waits, p);
            assert!((log.percentile_us(p) - exact).abs() < 1e-9, "p{p}");
        }
        assert_eq!(log.max_us(), 90.0);
        // The cases of `stats`' own test, and one whose median is not the
        // longest wait.
        for waits in [
            &waits[..],
            &[3.0, 1.0, 2.0],
            &[1.0, 1.0, 1.0, 2.0],
            &[1.0, 1.0, 1.0, 4.0],
            &[5.0],
            &[5.0, 6.0, 5.0, 5.0, 5.0, 5.0],
        ] {
            assert_eq!(
                WaitLog::of_us(waits).time_weighted_median_us(),
                stats::time_weighted_median(waits),
                "{waits:?}"
            );
        }
        // Waits of different lengths in one bucket (10,000 and 10,020 ns
        // share one 64 ns wide): figures read from it are their mean, where
        // the list gives the wait itself.
        let shared = WaitLog::of_us(&[1.0, 10.0, 10.02]);
        assert_eq!(stats::time_weighted_median(&[1.0, 10.0, 10.02]), 10.0);
        assert!((shared.time_weighted_median_us() - 10.01).abs() < 1e-9);
        assert!((shared.percentile_us(50.0) - 10.01).abs() < 1e-9);
        assert_eq!(shared.max_us(), 10.02);
    }

    /// Spread waits: every figure within 0.8% of the exact one (the mean and
    /// maximum exactly), and merging logs is recording into one.
    #[test]
    fn spread_waits_stay_within_a_bucket_of_the_exact_figures() {
        // Deterministic lengths from 0.1 us to about 5 ms, with a tail.
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let waits: Vec<f64> = (0..20_000)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let unit = (x >> 11) as f64 / (1u64 << 53) as f64;
                0.1 * (50_000f64).powf(unit * unit)
            })
            .collect();
        let (first, second) = waits.split_at(7_000);
        let mut log = WaitLog::of_us(first);
        log.merge(&WaitLog::of_us(second));
        let whole = WaitLog::of_us(&waits);
        assert_eq!(log.count(), whole.count());
        assert_eq!(log.sum_us(), whole.sum_us());
        let close = |got: f64, exact: f64| (got - exact).abs() <= exact * 0.008 + 1e-3;
        assert!(close(log.mean_us(), stats::mean(&waits)));
        for p in [1.0, 50.0, 90.0, 99.0, 99.9] {
            let exact = stats::percentile(&waits, p);
            assert!(close(log.percentile_us(p), exact), "p{p}: {}", exact);
            assert_eq!(log.percentile_us(p), whole.percentile_us(p));
        }
        let max = waits.iter().copied().fold(f64::NAN, f64::max);
        assert!(close(log.max_us(), max));
        assert!(close(
            log.time_weighted_median_us(),
            stats::time_weighted_median(&waits)
        ));
    }

    /// No waits: every figure is `NaN`; a wait longer than the preallocated
    /// buckets grows them.
    #[test]
    fn an_empty_log_has_no_figures_and_a_long_wait_grows_it() {
        let empty = WaitLog::new();
        assert_eq!(empty.count(), 0);
        assert!(empty.mean_us().is_nan());
        assert!(empty.percentile_us(50.0).is_nan());
        assert!(empty.max_us().is_nan());
        assert!(empty.time_weighted_median_us().is_nan());
        let mut log = WaitLog::new();
        log.record(Duration::from_secs(3));
        log.record(Duration::from_nanos(1));
        assert_eq!(log.max_us(), 3e6);
        assert_eq!(log.percentile_us(0.0), 0.001);
        let mut merged = WaitLog::new();
        merged.merge(&log);
        assert_eq!(merged.max_us(), 3e6);
        assert_eq!(merged.count(), 2);
    }
}
