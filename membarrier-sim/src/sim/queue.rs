//! The event queue: packed `u64` event keys in a tournament tree over the
//! event sources, with a heap for the rare extra key.
//!
//! A key is `time << ID_BITS | id` (see `engine.rs`), so comparing keys orders
//! events by time and breaks ties by id: the order is total and a run is
//! deterministic. Keys are plain values, so any exact priority queue over the
//! same keys hands out the same sequence; this one is shaped for the engine,
//! where the `id` (a home CPU or a mutex) is a small slot index and a slot
//! almost always has one key pending at a time.
//!
//! - Each slot `id` has a leaf holding at most one of its keys (or [`EMPTY`]);
//!   further keys of the slot (a CPU's superseded steps) go to `extra`, a
//!   binary heap whose smallest key is the last leaf's.
//! - The tree is an implicit binary tree over `2 * leaves` entries: node `i`
//!   has children `2i` and `2i + 1`, leaf `j` is node `leaves + j`, and every
//!   inner node holds the smaller of its children, so node 1 holds the
//!   smallest key. Changing a leaf replays its path to the root: the sibling
//!   addresses are known in advance, so the loads do not wait on the
//!   comparisons as a heap's sift does, and nothing branches on the keys.
//!
//! Invariants: every key in the queue is in exactly one leaf or in `extra`;
//! `tree[i] == min(tree[2i], tree[2i + 1])` for every inner node `i`; the
//! `extra` leaf holds `extra`'s smallest key. No key equals [`EMPTY`]
//! (times are below 2^40).
//!
//! Kernel counterpart: none.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Bits of a key below the time: the slot (event source) id.
pub(crate) const ID_BITS: u32 = 24;
/// The slot of a key.
pub(crate) const ID_MASK: u64 = (1 << ID_BITS) - 1;
/// An empty leaf: larger than every key.
const EMPTY: u64 = u64::MAX;

#[derive(Debug)]
pub(crate) struct EventQueue {
    /// `tree[1]` is the root; `tree[leaves..]` the leaves; `tree[0]` unused.
    tree: Vec<u64>,
    /// Leaves in the tree: slots plus the one for `extra`, rounded up to a
    /// power of two.
    leaves: usize,
    /// The slots' keys beyond the one in their leaf.
    extra: BinaryHeap<Reverse<u64>>,
    /// The leaf that holds `extra`'s smallest key.
    extra_leaf: usize,
}

impl EventQueue {
    /// A queue for keys whose ids are below `slots`.
    pub(crate) fn with_slots(slots: usize) -> EventQueue {
        let leaves = (slots + 1).next_power_of_two();
        EventQueue {
            tree: vec![EMPTY; 2 * leaves],
            leaves,
            extra: BinaryHeap::new(),
            extra_leaf: slots,
        }
    }

    /// The smallest key.
    #[inline]
    pub(crate) fn min(&self) -> Option<u64> {
        let k = self.tree[1];
        (k != EMPTY).then_some(k)
    }

    #[inline]
    pub(crate) fn push(&mut self, key: u64) {
        let slot = (key & ID_MASK) as usize;
        debug_assert!(slot < self.extra_leaf, "key {key:#x} beyond the slots");
        if self.tree[self.leaves + slot] == EMPTY {
            self.set_leaf(slot, key);
        } else {
            self.push_extra(key);
        }
    }

    /// Removes the smallest key.
    #[inline]
    pub(crate) fn pop_min(&mut self) {
        let min = self.tree[1];
        debug_assert_ne!(min, EMPTY, "pop_min on an empty queue");
        let slot = (min & ID_MASK) as usize;
        if self.tree[self.leaves + slot] == min {
            self.set_leaf(slot, EMPTY);
        } else {
            self.pop_extra();
        }
    }

    /// Replaces the smallest key with `key`: when both belong to the same
    /// slot (the usual case: a CPU's next step), one path replay.
    #[inline]
    pub(crate) fn replace_min(&mut self, key: u64) {
        let min = self.tree[1];
        debug_assert_ne!(min, EMPTY, "replace_min on an empty queue");
        let slot = (min & ID_MASK) as usize;
        if slot == (key & ID_MASK) as usize && self.tree[self.leaves + slot] == min {
            self.set_leaf(slot, key);
        } else {
            self.pop_min();
            self.push(key);
        }
    }

    /// Puts `key` in `slot`'s leaf and replays the path to the root.
    #[inline]
    fn set_leaf(&mut self, slot: usize, key: u64) {
        let tree = &mut self.tree[..];
        let mut i = self.leaves + slot;
        tree[i] = key;
        let mut smallest = key;
        while i > 1 {
            smallest = smallest.min(tree[i ^ 1]);
            i >>= 1;
            tree[i] = smallest;
        }
    }

    #[cold]
    #[inline(never)]
    fn push_extra(&mut self, key: u64) {
        self.extra.push(Reverse(key));
        self.sync_extra_leaf();
    }

    #[cold]
    #[inline(never)]
    fn pop_extra(&mut self) {
        self.extra.pop();
        self.sync_extra_leaf();
    }

    fn sync_extra_leaf(&mut self) {
        let min = self.extra.peek().map_or(EMPTY, |&Reverse(k)| k);
        if self.tree[self.leaves + self.extra_leaf] != min {
            self.set_leaf(self.extra_leaf, min);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::rng::Xoshiro256;

    #[test]
    fn keys_come_out_in_order() {
        // Few slots, many keys: most slots have extra keys, duplicates too.
        let slots = 37;
        let mut q = EventQueue::with_slots(slots);
        let mut rng = Xoshiro256::for_stream(5, 5);
        let key = |rng: &mut Xoshiro256, time: u64| {
            time << ID_BITS | rng.below_inclusive(slots as u64 - 1)
        };
        let mut expected = Vec::new();
        // Fewer keys under miri, which interprets slowly.
        let (keys, replacements) = if cfg!(miri) { (200, 50) } else { (2_000, 500) };
        for _ in 0..keys {
            let t = rng.below_inclusive(1_000);
            let k = key(&mut rng, t);
            q.push(k);
            expected.push(k);
        }
        // Interleave replacements as the engine does, some in the same slot.
        for n in 0..replacements {
            let min = q.min().unwrap();
            let t = (min >> ID_BITS) + rng.below_inclusive(50);
            let next = if n % 2 == 0 {
                t << ID_BITS | (min & ID_MASK)
            } else {
                key(&mut rng, t)
            };
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

    /// One slot per source, one key each: the queue is a plain tournament
    /// and empties to nothing.
    #[test]
    fn one_key_per_slot_empties_cleanly() {
        let mut q = EventQueue::with_slots(5);
        for (id, t) in [(3, 9), (0, 4), (4, 4), (1, 7)] {
            q.push(t << ID_BITS | id);
        }
        let mut got = Vec::new();
        while let Some(k) = q.min() {
            got.push((k >> ID_BITS, k & ID_MASK));
            q.pop_min();
        }
        assert_eq!(got, [(4, 0), (4, 4), (7, 1), (9, 3)]);
        assert!(q.extra.is_empty());
        assert!(q.tree.iter().all(|&k| k == EMPTY));
    }
}
