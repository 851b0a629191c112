//! How late a timed sleep wakes up on this machine: the noise floor under the
//! quick-QS comparison, whose fixed-interval FQS waits are timed futex waits.
//!
//! Each sample is one `std::thread::park_timeout` (a futex wait with a timeout
//! on Linux, as rcu-lite's `fqs_wait` makes) minus the interval asked for.
//!
//! ```sh
//! cargo run --release -p bench-suite --example timer_lateness -- 2000 3000
//! ```
//! (samples, interval in microseconds; defaults 2000 and 3000).

use std::time::{Duration, Instant};

fn main() {
    let mut arg = bench_suite::cli::example_numbers("timer_lateness");
    let samples = arg("samples", 2000).max(1);
    let interval = Duration::from_micros(arg("interval-us", 3000));
    let mut late_us: Vec<f64> = (0..samples)
        .map(|_| {
            let start = Instant::now();
            // park_timeout may return early (spuriously): sleep out the rest.
            while start.elapsed() < interval {
                std::thread::park_timeout(interval.saturating_sub(start.elapsed()));
            }
            (start.elapsed() - interval).as_secs_f64() * 1e6
        })
        .collect();
    late_us.sort_by(f64::total_cmp);
    let at = |q: f64| late_us[((late_us.len() - 1) as f64 * q).round() as usize];
    let over_1ms = late_us.iter().filter(|&&l| l > 1000.0).count();
    println!(
        "{samples} timed waits of {} us, lateness in us: p50 {:.0} p90 {:.0} p99 {:.0} p99.9 {:.0} max {:.0}; over 1 ms: {over_1ms}",
        interval.as_micros(),
        at(0.5),
        at(0.9),
        at(0.99),
        at(0.999),
        at(1.0),
    );
}
