//! Contenders measured in turns: each runs once per round, and the order
//! rotates by one from round to round (`advise`, rcuscale's rounds, the
//! report's locktorture and deferred-only torture rounds). A slow stretch of
//! the machine then costs several contenders a round each instead of every
//! round of one, no contender always runs first, and round `r` of one
//! contender pairs with round `r` of another.

/// Runs each of `n` contenders once per round, `rounds` rounds, calling
/// `run(i)` for contender `i`, in the order `r, r+1, ..., r-1` (mod `n`) in
/// round `r`. Returns each contender's results in the order its rounds ran.
pub fn in_turns<T>(n: usize, rounds: usize, mut run: impl FnMut(usize) -> T) -> Vec<Vec<T>> {
    let mut out: Vec<Vec<T>> = (0..n).map(|_| Vec::with_capacity(rounds)).collect();
    for round in 0..rounds {
        for turn in 0..n {
            let i = (turn + round) % n;
            out[i].push(run(i));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_round_starts_one_contender_later() {
        let mut order = Vec::new();
        let out = in_turns(3, 4, |i| {
            order.push(i);
            order.len()
        });
        assert_eq!(order, [0, 1, 2, 1, 2, 0, 2, 0, 1, 0, 1, 2]);
        assert_eq!(
            out,
            [vec![1, 6, 8, 10], vec![2, 4, 9, 11], vec![3, 5, 7, 12]]
        );
        assert!(in_turns(0, 3, |i| i).is_empty());
    }
}
