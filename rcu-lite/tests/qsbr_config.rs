//! The qsbr flavor's settings: `qsbr::configure` sets what `qsbr::config`
//! reports and hands back what it replaced.
//!
//! Alone in its test binary: the settings are the process's, and the tests
//! of `qsbr.rs` run grace periods that they would slow down.

use rcu_lite::{Fqs, GpConfig, qsbr};
use std::time::Duration;

/// `qsbr::configure` returns the previous settings, and `qsbr::config`
/// reports the ones it set: the flavor's own, not memb's or the default.
#[test]
fn qsbr_configure_sets_what_config_reports_and_returns_the_previous_settings() {
    let kernel = GpConfig {
        quick_qs: false,
        fqs: Fqs::kernel(),
    };
    let old = qsbr::configure(kernel);
    assert_eq!(
        old,
        GpConfig::DEFAULT,
        "the settings did not start as the default"
    );
    assert_eq!(qsbr::config(), kernel, "qsbr::config() is not what was set");
    let shortest = GpConfig {
        quick_qs: true,
        fqs: Fqs::FixedInterval(Duration::from_nanos(1)),
    };
    assert_eq!(
        qsbr::configure(shortest),
        kernel,
        "qsbr::configure() did not return the settings it replaced"
    );
    assert_eq!(qsbr::configure(old), shortest);
    assert_eq!(qsbr::config(), GpConfig::DEFAULT);
}
