//! A Bloom filter of the addresses queued synchronize callers wait for (the
//! shared-scan series' replacement for a per-waiter allocation).
//!
//! Built by the scanner from one batch of waiters; every slot value the scan
//! reads is tested against it first, and only values it may contain are
//! compared exactly against the batch. 256 bits and two hash functions: with
//! 16 waiters a non-matching address passes with probability about 1.4%.
//!
//! Invariant: [`Bloom::may_contain`] is true for every inserted address (no
//! false negatives); false positives only cost an exact comparison.

/// A fixed-size Bloom filter of addresses.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Bloom {
    bits: [u64; 4],
}

impl Bloom {
    /// An empty filter.
    pub(crate) const fn new() -> Self {
        Bloom { bits: [0; 4] }
    }

    /// The two bit positions of `addr` (0..256 each).
    #[inline]
    fn positions(addr: usize) -> (usize, usize) {
        // Drop the alignment bits, then a multiplicative hash; the two
        // positions come from independent high bytes of the product.
        let h = ((addr >> 3) as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        ((h >> 56) as usize, ((h >> 48) & 0xff) as usize)
    }

    /// Adds `addr`.
    #[inline]
    pub(crate) fn insert(&mut self, addr: usize) {
        let (a, b) = Self::positions(addr);
        self.bits[a / 64] |= 1 << (a % 64);
        self.bits[b / 64] |= 1 << (b % 64);
    }

    /// False only if `addr` was never inserted.
    #[inline]
    pub(crate) fn may_contain(&self, addr: usize) -> bool {
        let (a, b) = Self::positions(addr);
        self.bits[a / 64] & (1 << (a % 64)) != 0 && self.bits[b / 64] & (1 << (b % 64)) != 0
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::Bloom;

    /// Addresses like those of the target's mappings: where the inserted
    /// objects are, and where the others are.
    #[cfg(target_pointer_width = "64")]
    const INSERTED_BASE: usize = 0x7f00_0000_1000;
    #[cfg(target_pointer_width = "64")]
    const OTHER_BASE: usize = 0x5500_0000_0000;
    #[cfg(not(target_pointer_width = "64"))]
    const INSERTED_BASE: usize = 0xb700_1000;
    #[cfg(not(target_pointer_width = "64"))]
    const OTHER_BASE: usize = 0x5500_0000;

    #[test]
    fn no_false_negatives_and_few_false_positives() {
        let mut bloom = Bloom::new();
        let inserted: Vec<usize> = (0..16).map(|i| INSERTED_BASE + i * 0x40).collect();
        for &a in &inserted {
            bloom.insert(a);
        }
        assert!(inserted.iter().all(|&a| bloom.may_contain(a)));
        let false_positives = (0..10_000usize)
            .map(|i| OTHER_BASE + i * 0x30)
            .filter(|&a| bloom.may_contain(a))
            .count();
        assert!(false_positives < 500, "{false_positives} of 10000");
        assert!(!Bloom::new().may_contain(inserted[0]));
    }
}
