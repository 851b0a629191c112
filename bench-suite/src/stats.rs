//! Small statistics helpers: medians and percentiles of measured samples.

/// The median of `samples` (the mean of the two middle values for an even
/// count); `NaN` for no samples.
pub fn median(samples: &[f64]) -> f64 {
    percentile(samples, 50.0)
}

/// A winner's margin (the better figure over the worse, or the median of
/// paired rounds' ratios) below this is within the run-to-run spread of a
/// small shared machine (`docs/choosing.md` reads its figures to the
/// nearest 10%): the report's *Choosing* rows and `advise` call it a tie.
pub const TIE_MARGIN: f64 = 1.10;

/// Whether `margin` is under [`TIE_MARGIN`] as the report and `advise`
/// print it (`{:.2}`): "1.09x" always ties and "1.10x" never does. The
/// printed text itself is judged: rounding the value (`(m * 100).round()`)
/// takes 219/200, 1.09499999999999997 and printed "1.09", to 1.10. (Until
/// 2026-12-07 the raw value was compared, so 3.3 ns against 3.0,
/// 1.0999999999999999 in floating point, tied while printed "1.10x", and
/// so did 1.0996.) `false` for NaN and infinities, which callers handle as
/// they mean them.
pub fn under_tie_margin(margin: f64) -> bool {
    format!("{margin:.2}")
        .parse::<f64>()
        .is_ok_and(|printed| printed < TIE_MARGIN)
}

/// The median of the ratios `a[i] / b[i]` of runs taken in turns (run `i`
/// of each in the same round), so that a slow stretch of the machine weighs
/// on both sides of a ratio alike; `NaN` for no runs.
pub fn median_of_ratios(a: &[f64], b: &[f64]) -> f64 {
    debug_assert_eq!(a.len(), b.len(), "runs taken in turns pair up");
    let ratios: Vec<f64> = a.iter().zip(b).map(|(x, y)| x / y).collect();
    median(&ratios)
}

/// The `p`-th percentile (0..=100) of `samples`, linearly interpolated between
/// closest ranks; `NaN` for no samples.
pub fn percentile(samples: &[f64], p: f64) -> f64 {
    if samples.is_empty() {
        return f64::NAN;
    }
    let mut sorted = samples.to_vec();
    sorted.sort_by(f64::total_cmp);
    let rank = (p / 100.0).clamp(0.0, 1.0) * (sorted.len() - 1) as f64;
    let lo = rank.floor() as usize;
    let hi = rank.ceil() as usize;
    if sorted[lo] == sorted[hi] {
        // One sample, or two equal ones: itself, even an infinite one
        // (inf - inf is NaN: the median of [inf, inf] was NaN until
        // 2026-12-07).
        return sorted[lo];
    }
    sorted[lo] + (sorted[hi] - sorted[lo]) * (rank - lo as f64)
}

/// The time-weighted median of durations: the shortest `d` among `samples`
/// such that the samples no longer than `d` add up to at least half the
/// total, so that at least half of all the time was spent in samples of `d`
/// or longer. A plain median counts every wait once; this one counts each
/// by its length, which is how a thread spends its time: many short waits
/// and a few long ones that take most of it show here and not in the
/// median, nor in a high percentile when the long ones are fewer than one
/// in a hundred. `NaN` for no samples; the samples must be finite and not
/// negative.
pub fn time_weighted_median(samples: &[f64]) -> f64 {
    let mut sorted = samples.to_vec();
    sorted.sort_by(f64::total_cmp);
    let total: f64 = sorted.iter().sum();
    let mut below = 0.0;
    for &d in &sorted {
        below += d;
        if below >= total / 2.0 {
            return d;
        }
    }
    f64::NAN
}

/// The arithmetic mean; `NaN` for no samples.
pub fn mean(samples: &[f64]) -> f64 {
    samples.iter().sum::<f64>() / samples.len() as f64
}

/// `x` to three significant figures with an SI prefix, joined by `sep`:
/// `si_figures(1.234e9, " ")` is "1.23 G", `si_figures(420.4e6, "")` is
/// "420M", and below a thousand there is no prefix ("312", "0.50").
pub fn si_figures(x: f64, sep: &str) -> String {
    fn scaled(x: f64) -> (f64, &'static str, f64) {
        match x.abs() {
            a if a >= 1e9 => (x / 1e9, "G", 1e9),
            a if a >= 1e6 => (x / 1e6, "M", 1e6),
            a if a >= 1e3 => (x / 1e3, "k", 1e3),
            _ => (x, "", 1.0),
        }
    }
    fn decimals(a: f64) -> usize {
        match a {
            a if a >= 100.0 => 0,
            a if a >= 10.0 => 1,
            _ => 2,
        }
    }
    let (mut value, mut prefix, unit) = scaled(x);
    let mut places = decimals(value.abs());
    // Rounding can carry into the next decade (99.97 shows as 100.0) or
    // past the prefix (999.7 as 1000): then the rounded value decides both.
    let shown: f64 = format!("{value:.places$}")
        .parse()
        .expect("a formatted number parses");
    if decimals(shown.abs()) != places || (shown.abs() >= 1e3 && prefix != "G") {
        (value, prefix, _) = scaled(shown * unit);
        places = decimals(value.abs());
    }
    let sep = if prefix.is_empty() { "" } else { sep };
    format!("{value:.places$}{sep}{prefix}")
}

/// A run's length in seconds for a summary line: one decimal from a second
/// up ("3.0"), three below ("0.007"), and three significant figures below
/// a millisecond ("2.00e-6"), where `{:.1}` printed a 7 ms or 2 us run as
/// "0.0" (until 2026-12-07).
pub fn seconds(s: f64) -> String {
    if s >= 1.0 || s == 0.0 || !s.is_finite() {
        format!("{s:.1}")
    } else if s >= 1e-3 {
        format!("{s:.3}")
    } else {
        format!("{s:.2e}")
    }
}

/// The index of the median of `samples` (the lower middle one for an even
/// count): the run whose other figures stand for a set of rounds.
///
/// # Panics
///
/// If `samples` is empty.
pub fn median_index(samples: &[f64]) -> usize {
    assert!(!samples.is_empty(), "no samples to take the median of");
    let mut order: Vec<usize> = (0..samples.len()).collect();
    order.sort_by(|&a, &b| samples[a].total_cmp(&samples[b]));
    order[(samples.len() - 1) / 2]
}

/// The failures of a set of rounds, in the order they ran, as one text
/// naming each failed round ("round 2 of 3: hang: ..."); `None` if no round
/// failed.
pub fn rounds_failure<'a>(
    failures: impl ExactSizeIterator<Item = Option<&'a str>>,
) -> Option<String> {
    let count = failures.len();
    let named: Vec<String> = failures
        .enumerate()
        .filter_map(|(i, f)| Some(format!("round {} of {count}: {}", i + 1, f?)))
        .collect();
    (!named.is_empty()).then(|| named.join("; "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_keep_a_short_runs_length_visible() {
        assert_eq!(seconds(3.04), "3.0");
        assert_eq!(seconds(0.007_2), "0.007");
        assert_eq!(seconds(2e-6), "2.00e-6");
        assert_eq!(seconds(0.0), "0.0");
        assert!(seconds(2e-6).parse::<f64>().unwrap() > 0.0);
    }

    /// 995 waits of 1 us and 5 of 20 ms: the median and the 99th
    /// percentile say 1 us, while 99% of the time went to the 20 ms waits.
    /// The weighted median says so; it moves to the short waits only once
    /// they hold half the time.
    #[test]
    fn time_weighted_median_counts_each_sample_by_its_length() {
        let mut waits = vec![1.0; 995];
        waits.extend([20_000.0; 5]);
        assert_eq!(percentile(&waits, 99.0), 1.0);
        assert_eq!(time_weighted_median(&waits), 20_000.0);
        assert_eq!(
            time_weighted_median(&[3.0, 1.0, 2.0]),
            2.0,
            "1 + 2 is half of 6"
        );
        assert_eq!(
            time_weighted_median(&[1.0, 1.0, 1.0, 2.0]),
            1.0,
            "3 of 5 in waits of 1"
        );
        assert_eq!(
            time_weighted_median(&[1.0, 1.0, 1.0, 4.0]),
            4.0,
            "4 of 7 in one wait"
        );
        assert_eq!(time_weighted_median(&[5.0]), 5.0);
        assert!(time_weighted_median(&[]).is_nan());
    }

    /// A rank that falls on one sample is that sample, an infinite one
    /// too (a round ratio against a figure of 0): interpolating between it
    /// and itself would give inf - inf, NaN. So is a rank between two
    /// equal infinite samples (an even count of rounds: the median of
    /// [inf, inf] was NaN until 2026-12-07).
    #[test]
    fn a_percentile_on_an_infinite_sample_is_infinite() {
        assert_eq!(
            percentile(&[2.0, f64::INFINITY, f64::INFINITY], 50.0),
            f64::INFINITY
        );
        assert_eq!(percentile(&[1.0, 3.0], 50.0), 2.0);
        assert_eq!(median(&[f64::INFINITY, f64::INFINITY]), f64::INFINITY);
        assert_eq!(
            median(&[1.0, f64::INFINITY, f64::INFINITY, f64::INFINITY]),
            f64::INFINITY
        );
        assert_eq!(median_of_ratios(&[2.0, 2.0], &[0.0, 0.0]), f64::INFINITY);
    }

    /// A margin ties as printed, to two decimals.
    #[test]
    fn a_margin_ties_as_printed() {
        assert!(under_tie_margin(1.0949));
        assert!(under_tie_margin(0.5));
        assert!(
            !under_tie_margin(3.3 / 3.0),
            "1.0999999999999999 prints 1.10x"
        );
        assert!(!under_tie_margin(1.0996));
        assert!(!under_tie_margin(f64::INFINITY));
        assert!(!under_tie_margin(f64::NAN));
        // 219/200 is 1.09499999999999997 and prints "1.09": a tie, though
        // `(m * 100).round()` makes it 1.10.
        assert_eq!(format!("{:.2}", 219.0 / 200.0), "1.09");
        assert!(under_tie_margin(219.0 / 200.0));
    }

    #[test]
    fn median_index_takes_the_lower_middle_and_rounds_failure_names_rounds() {
        assert_eq!(median_index(&[3.0, 1.0, 2.0]), 2);
        assert_eq!(median_index(&[4.0, 1.0, 3.0, 2.0]), 3);
        assert_eq!(rounds_failure([None, None].into_iter()), None);
        assert_eq!(
            rounds_failure([None, Some("hang"), Some("panic")].into_iter()).as_deref(),
            Some("round 2 of 3: hang; round 3 of 3: panic")
        );
    }

    /// A value that rounds up to the next power of ten keeps three
    /// significant figures: 999,700 is "1.00M", not "1000k".
    #[test]
    fn si_figures_round_across_a_prefix_or_a_decade() {
        assert_eq!(si_figures(999.7, ""), "1.00k");
        assert_eq!(si_figures(999_700.0, ""), "1.00M");
        assert_eq!(si_figures(999_700_000.0, " "), "1.00 G");
        assert_eq!(si_figures(99.97, ""), "100");
        assert_eq!(si_figures(9.997, ""), "10.0");
        assert_eq!(si_figures(99_970.0, ""), "100k");
        assert_eq!(si_figures(-999.7, ""), "-1.00k");
        // Away from the boundaries, as before.
        assert_eq!(si_figures(999.4, ""), "999");
        assert_eq!(si_figures(1.234e9, " "), "1.23 G");
        assert_eq!(si_figures(0.5, ""), "0.50");
        assert_eq!(si_figures(0.0, ""), "0.00");
        assert_eq!(si_figures(f64::NAN, ""), "NaN");
    }

    #[test]
    fn median_and_percentiles() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
        assert_eq!(percentile(&[1.0, 2.0, 3.0, 4.0, 5.0], 100.0), 5.0);
        assert_eq!(percentile(&[1.0, 2.0, 3.0, 4.0, 5.0], 0.0), 1.0);
        assert!((percentile(&[0.0, 10.0], 99.0) - 9.9).abs() < 1e-9);
        assert!(median(&[]).is_nan());
        // Out of range, the nearest end.
        assert_eq!(percentile(&[1.0, 2.0, 3.0], 150.0), 3.0);
        assert_eq!(percentile(&[1.0, 2.0, 3.0], -5.0), 1.0);
        assert_eq!(mean(&[1.0, 2.0, 6.0]), 3.0);
    }
}
