//! The event queue: a binary min-heap of packed `u64` event keys.
//!
//! A key is `time << 24 | id` (see `engine.rs`), so comparing keys orders
//! events by time and breaks ties by id: the order is total and a run is
//! deterministic. Handling an event usually schedules exactly one successor,
//! so [`EventQueue::replace_min`] swaps the handled key for the new one with
//! a single sift instead of a pop and a push.
//!
//! Invariant: `keys[i] <= keys[2i + 1]` and `keys[i] <= keys[2i + 2]`.
//!
//! Kernel counterpart: none.

#[derive(Debug, Default)]
pub(crate) struct EventQueue {
    keys: Vec<u64>,
}

impl EventQueue {
    pub(crate) fn with_capacity(capacity: usize) -> EventQueue {
        EventQueue {
            keys: Vec::with_capacity(capacity),
        }
    }

    /// The smallest key.
    #[inline]
    pub(crate) fn min(&self) -> Option<u64> {
        self.keys.first().copied()
    }

    #[inline]
    pub(crate) fn push(&mut self, key: u64) {
        let mut i = self.keys.len();
        self.keys.push(key);
        while i > 0 {
            let parent = (i - 1) / 2;
            if self.keys[parent] <= key {
                break;
            }
            self.keys[i] = self.keys[parent];
            i = parent;
        }
        self.keys[i] = key;
    }

    /// Removes the smallest key.
    #[inline]
    pub(crate) fn pop_min(&mut self) {
        let last = self.keys.pop().expect("pop_min on an empty queue");
        if !self.keys.is_empty() {
            self.sift_down_from_root(last);
        }
    }

    /// Replaces the smallest key with `key`.
    #[inline]
    pub(crate) fn replace_min(&mut self, key: u64) {
        debug_assert!(!self.keys.is_empty());
        self.sift_down_from_root(key);
    }

    /// Puts `key` into the hole at the root and sifts it down.
    #[inline]
    fn sift_down_from_root(&mut self, key: u64) {
        let keys = &mut self.keys[..];
        let n = keys.len();
        let mut i = 0;
        loop {
            let left = 2 * i + 1;
            let right = left + 1;
            if right >= n {
                if left < n && keys[left] < key {
                    keys[i] = keys[left];
                    i = left;
                }
                break;
            }
            // Branch-free choice of the smaller child: which one wins is
            // unpredictable, and a mispredicted branch costs more than it saves.
            let child = left + usize::from(keys[right] < keys[left]);
            let smaller = keys[child];
            if smaller >= key {
                break;
            }
            keys[i] = smaller;
            i = child;
        }
        keys[i] = key;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::rng::Xoshiro256;

    #[test]
    fn keys_come_out_in_order() {
        let mut q = EventQueue::with_capacity(4);
        let mut rng = Xoshiro256::for_stream(5, 5);
        let mut expected = Vec::new();
        // Fewer keys under miri, which interprets slowly.
        let (keys, replacements) = if cfg!(miri) { (200, 50) } else { (2_000, 500) };
        for _ in 0..keys {
            let k = rng.below_inclusive(1_000);
            q.push(k);
            expected.push(k);
        }
        // Interleave replacements as the engine does.
        for _ in 0..replacements {
            let min = q.min().unwrap();
            let next = min + rng.below_inclusive(50);
            let pos = expected.iter().position(|&k| k == min).unwrap();
            expected[pos] = next;
            q.replace_min(next);
        }
        expected.sort_unstable();
        let mut got = Vec::new();
        while let Some(k) = q.min() {
            got.push(k);
            q.pop_min();
        }
        assert_eq!(got, expected);
    }
}
