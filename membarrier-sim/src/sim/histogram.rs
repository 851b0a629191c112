//! A log-linear latency histogram with exact count, sum, minimum and maximum.
//!
//! A run of the simulator completes tens of millions of calls; keeping every
//! latency would cost gigabytes, so latencies go into buckets: exact below
//! 128 ns, then 64 buckets per power of two. A percentile is reported as the
//! middle of its bucket, clamped to the observed minimum and maximum, so it is
//! within 1/128 (0.8%) of the true order statistic. Everything is integer
//! arithmetic: the same samples give the same figures on every platform.
//!
//! Kernel counterpart: none.

/// Sub-buckets per power of two, as a power of two.
const SUB_BITS: u32 = 6;
const SUB: u64 = 1 << SUB_BITS;
/// Bucket count: values below `2 * SUB` exactly, then `SUB` per octave up to 2^64.
const BUCKETS: usize = ((64 - SUB_BITS) as usize) * SUB as usize + SUB as usize;

/// Latency samples in nanoseconds.
#[derive(Clone, Debug)]
pub struct Histogram {
    counts: Vec<u64>,
    count: u64,
    sum: u128,
    min: u64,
    max: u64,
}

impl Default for Histogram {
    fn default() -> Histogram {
        Histogram::new()
    }
}

impl Histogram {
    /// An empty histogram.
    pub fn new() -> Histogram {
        Histogram {
            counts: vec![0; BUCKETS],
            count: 0,
            sum: 0,
            min: u64::MAX,
            max: 0,
        }
    }

    #[inline]
    fn bucket(value: u64) -> usize {
        let top = 63 - (value | 1).leading_zeros();
        let shift = top.saturating_sub(SUB_BITS);
        (u64::from(shift) * SUB + (value >> shift)) as usize
    }

    /// The smallest value and the width of bucket `b`.
    fn bucket_range(b: usize) -> (u64, u64) {
        let b = b as u64;
        if b < 2 * SUB {
            return (b, 1);
        }
        let shift = b / SUB - 1;
        let mantissa = b - shift * SUB;
        (mantissa << shift, 1 << shift)
    }

    /// Records one sample.
    #[inline]
    pub fn record(&mut self, value: u64) {
        self.counts[Self::bucket(value)] += 1;
        self.count += 1;
        self.sum += u128::from(value);
        self.min = self.min.min(value);
        self.max = self.max.max(value);
    }

    /// Adds every sample of `other`.
    pub fn merge(&mut self, other: &Histogram) {
        for (mine, theirs) in self.counts.iter_mut().zip(&other.counts) {
            *mine += theirs;
        }
        self.count += other.count;
        self.sum += other.sum;
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
    }

    /// How many samples.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// The mean, or 0 without samples.
    pub fn mean(&self) -> f64 {
        if self.count == 0 {
            0.0
        } else {
            self.sum as f64 / self.count as f64
        }
    }

    /// The largest sample, or 0 without samples.
    pub fn max(&self) -> u64 {
        self.max
    }

    /// The `p`-th percentile (nearest rank, 0 < p <= 100), or 0 without samples.
    /// A `p` at or below 0 counts as the first rank (the smallest sample's
    /// bucket), one above 100 as 100 (the largest sample).
    ///
    /// # Panics
    ///
    /// If `p` is NaN (a caller's arithmetic gone wrong, which a clamp would
    /// have turned into the smallest sample without a word).
    pub fn percentile(&self, p: f64) -> u64 {
        assert!(!p.is_nan(), "Histogram::percentile: p is NaN");
        if self.count == 0 {
            return 0;
        }
        let rank = ((p / 100.0 * self.count as f64).ceil() as u64).clamp(1, self.count);
        if rank == self.count {
            return self.max;
        }
        let mut seen = 0;
        for (b, &n) in self.counts.iter().enumerate() {
            seen += n;
            if seen >= rank {
                let (low, width) = Self::bucket_range(b);
                return (low + (width - 1) / 2).clamp(self.min, self.max);
            }
        }
        self.max
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_contiguous_and_exact_below_128() {
        for v in 0..128 {
            assert_eq!(Histogram::bucket_range(Histogram::bucket(v)), (v, 1));
        }
        let mut expected_low = 128;
        for b in 128..BUCKETS {
            let (low, width) = Histogram::bucket_range(b);
            assert_eq!(low, expected_low, "bucket {b}");
            assert_eq!(Histogram::bucket(low), b);
            assert_eq!(Histogram::bucket(low + (width - 1)), b);
            expected_low = low.wrapping_add(width);
        }
        assert_eq!(Histogram::bucket(u64::MAX), BUCKETS - 1);
    }

    #[test]
    fn percentiles_outside_0_to_100_clamp_and_nan_panics() {
        let mut h = Histogram::new();
        for v in [10, 20, 30, 1000] {
            h.record(v);
        }
        assert_eq!(h.percentile(-5.0), h.percentile(1.0));
        assert_eq!(h.percentile(0.0), 10);
        assert_eq!(h.percentile(150.0), 1000);
        assert_eq!(h.percentile(f64::INFINITY), 1000);
        let nan = std::panic::catch_unwind(|| h.percentile(f64::NAN)).unwrap_err();
        assert_eq!(
            nan.downcast_ref::<&str>().copied(),
            Some("Histogram::percentile: p is NaN")
        );
    }

    #[test]
    fn percentiles_are_within_a_bucket_of_the_truth() {
        // Samples 37, 74, ..., 37 n (fewer under miri, which interprets slowly).
        let n: u64 = if cfg!(miri) { 10_000 } else { 100_000 };
        let mut h = Histogram::new();
        for v in 1..=n {
            h.record(v * 37);
        }
        assert_eq!(h.count(), n);
        assert_eq!(h.max(), 37 * n);
        let p50 = h.percentile(50.0) as f64;
        let p99 = h.percentile(99.0) as f64;
        let max = (37 * n) as f64;
        assert!((p50 / (max * 0.5) - 1.0).abs() < 0.01, "{p50}");
        assert!((p99 / (max * 0.99) - 1.0).abs() < 0.01, "{p99}");
        assert!((h.mean() - 37.0 * (n + 1) as f64 / 2.0).abs() < 1e-6);
        assert_eq!(h.percentile(100.0), 37 * n);
        assert_eq!(Histogram::new().percentile(50.0), 0);
    }

    #[test]
    fn merge_adds_samples() {
        let mut a = Histogram::new();
        let mut b = Histogram::new();
        a.record(10);
        b.record(1_000_000);
        a.merge(&b);
        assert_eq!(a.count(), 2);
        assert_eq!(a.max(), 1_000_000);
        assert_eq!(a.percentile(1.0), 10);
    }

    /// A percentile is the middle of its bucket: 1000 and 1007 share the
    /// 8 ns wide bucket [1000, 1008), whose middle is 1003.
    #[test]
    fn a_percentile_is_the_middle_of_its_bucket() {
        assert_eq!(
            Histogram::bucket_range(Histogram::bucket(1_000)),
            (1_000, 8)
        );
        assert_eq!(Histogram::bucket(1_007), Histogram::bucket(1_000));
        let mut h = Histogram::new();
        for v in [1_000, 1_007, 2_000] {
            h.record(v);
        }
        assert_eq!(h.percentile(1.0), 1_003);
        assert_eq!(h.percentile(50.0), 1_003);
        assert_eq!(h.percentile(100.0), 2_000);
    }

    /// Merging adds the other histogram's sum too: the mean of the merged
    /// samples is the mean of them all.
    #[test]
    fn a_merged_histogram_has_the_mean_of_all_samples() {
        let mut a = Histogram::new();
        let mut b = Histogram::new();
        a.record(10);
        b.record(1_000_000);
        b.record(20);
        a.merge(&b);
        assert_eq!(a.mean(), 1_000_030.0 / 3.0);
    }
}
