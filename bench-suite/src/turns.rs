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
    try_in_turns(n, rounds, |i| Ok::<T, std::convert::Infallible>(run(i)))
        .unwrap_or_else(|never| match never {})
}

/// [`in_turns`] for runs that can fail: the first error ends the rounds and
/// is returned (a run that could not start its threads, say).
pub fn try_in_turns<T, E>(
    n: usize,
    rounds: usize,
    mut run: impl FnMut(usize) -> Result<T, E>,
) -> Result<Vec<Vec<T>>, E> {
    let mut out: Vec<Vec<T>> = (0..n).map(|_| Vec::with_capacity(rounds)).collect();
    for round in 0..rounds {
        for turn in 0..n {
            let i = (turn + round) % n;
            out[i].push(run(i)?);
        }
    }
    Ok(out)
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

    #[test]
    fn the_first_error_ends_the_rounds() {
        let mut calls = 0;
        let out = try_in_turns(3, 4, |i| {
            calls += 1;
            if calls == 5 {
                Err(format!("run {calls}, contender {i}"))
            } else {
                Ok(i)
            }
        });
        assert_eq!(out, Err("run 5, contender 2".to_owned()));
        assert_eq!(calls, 5, "a run after the error ran");
    }
}
