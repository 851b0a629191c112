//! The simulator's own pseudo-random numbers: SplitMix64 for seeding and
//! xoshiro256** for the streams.
//!
//! Invariants: every value drawn is a pure function of the seed and the number
//! of earlier draws from the same stream, using integer arithmetic only, so a
//! run is reproducible bit for bit on every platform. Each simulated CPU owns
//! its own stream (see [`Xoshiro256::for_stream`]), so the interrupts-off
//! windows of CPU 5 are the same whatever the serialization policy or the
//! callers do: the policies are compared under common random numbers.
//!
//! Kernel counterpart: none (the kernel has no part in this; the selftest's
//! randomness is the machine's own timing).

/// SplitMix64 (Steele, Lea and Flood): a 64-bit counter through a strong
/// mixer. Used only to expand one seed into well-spread stream states.
#[derive(Clone, Debug)]
pub(crate) struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    pub(crate) fn new(seed: u64) -> SplitMix64 {
        SplitMix64 { state: seed }
    }

    pub(crate) fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

/// xoshiro256** (Blackman and Vigna): the per-stream generator.
#[derive(Clone, Debug)]
pub(crate) struct Xoshiro256 {
    s: [u64; 4],
}

impl Xoshiro256 {
    /// The generator for stream `stream` of run seed `seed`: distinct streams
    /// of one seed are independent for all practical purposes.
    pub(crate) fn for_stream(seed: u64, stream: u64) -> Xoshiro256 {
        let mut mix = SplitMix64::new(seed ^ stream.wrapping_mul(0xd1b5_4a32_d192_ed03));
        let s = [
            mix.next_u64(),
            mix.next_u64(),
            mix.next_u64(),
            mix.next_u64(),
        ];
        // SplitMix64 never yields four zero words in a row, which is the one
        // state xoshiro must avoid.
        Xoshiro256 { s }
    }

    pub(crate) fn next_u64(&mut self) -> u64 {
        let result = self.s[1].wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        let t = self.s[1] << 17;
        self.s[2] ^= self.s[0];
        self.s[3] ^= self.s[1];
        self.s[1] ^= self.s[2];
        self.s[0] ^= self.s[3];
        self.s[2] ^= t;
        self.s[3] = self.s[3].rotate_left(45);
        result
    }

    /// A uniform integer in `0..=bound` (Lemire's multiply-shift; the bias is
    /// below 2^-40 for the bounds used here, and deterministic either way).
    pub(crate) fn below_inclusive(&mut self, bound: u64) -> u64 {
        if bound == u64::MAX {
            return self.next_u64();
        }
        ((u128::from(self.next_u64()) * u128::from(bound + 1)) >> 64) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splitmix_matches_the_reference_sequence() {
        // First outputs of SplitMix64 seeded with 1234567 (Vigna's reference C code).
        let mut m = SplitMix64::new(1_234_567);
        assert_eq!(m.next_u64(), 6_457_827_717_110_365_317);
        assert_eq!(m.next_u64(), 3_203_168_211_198_807_973);
    }

    #[test]
    fn streams_are_reproducible_and_distinct() {
        let mut a = Xoshiro256::for_stream(7, 0);
        let mut b = Xoshiro256::for_stream(7, 0);
        let mut c = Xoshiro256::for_stream(7, 1);
        let xs: Vec<u64> = (0..8).map(|_| a.next_u64()).collect();
        let ys: Vec<u64> = (0..8).map(|_| b.next_u64()).collect();
        let zs: Vec<u64> = (0..8).map(|_| c.next_u64()).collect();
        assert_eq!(xs, ys);
        assert_ne!(xs, zs);
    }

    #[test]
    fn bounded_draws_stay_in_range_and_cover_it() {
        let mut r = Xoshiro256::for_stream(1, 2);
        let mut seen = [false; 11];
        for _ in 0..10_000 {
            let v = r.below_inclusive(10);
            assert!(v <= 10);
            seen[v as usize] = true;
        }
        assert!(seen.iter().all(|s| *s));
        assert_eq!(r.below_inclusive(0), 0);
    }

    /// xoshiro256** from the state {1, 2, 3, 4} gives the reference C
    /// code's first outputs (Blackman and Vigna's `xoshiro256starstar.c`):
    /// the generator is that one, output and state update both.
    #[test]
    fn xoshiro256_starstar_matches_the_reference_sequence() {
        let mut x = Xoshiro256 { s: [1, 2, 3, 4] };
        let got: Vec<u64> = (0..6).map(|_| x.next_u64()).collect();
        assert_eq!(
            got,
            [
                11_520,
                0,
                1_509_978_240,
                1_215_971_899_390_074_240,
                1_216_172_134_540_287_360,
                607_988_272_756_665_600,
            ]
        );
    }

    /// Every seed gives each stream (each simulated CPU) a stream of its
    /// own, seeds whose bits overlap the stream multiplier's included: with
    /// the seed all ones, or the multiplier itself, a mix that merely set
    /// bits would hand every CPU the same windows.
    #[test]
    fn every_seed_gives_each_stream_its_own_numbers() {
        for seed in [0, 1, 7, u64::MAX, 0xd1b5_4a32_d192_ed03] {
            let mut firsts: Vec<u64> = (0..64)
                .map(|stream| Xoshiro256::for_stream(seed, stream).next_u64())
                .collect();
            firsts.sort_unstable();
            firsts.dedup();
            assert_eq!(firsts.len(), 64, "seed {seed:#x}");
        }
    }
}
