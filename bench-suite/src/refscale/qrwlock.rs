//! This workspace's reader-writer lock's read side: `qrwlock-read`.

use super::{ReadSide, time_sections};
use crate::registry::{Implementation, Origin};
use std::hint::black_box;
use std::time::Duration;

/// `qrwlock-read`.
pub(super) const QRWLOCK_READ: Implementation<dyn ReadSide> = Implementation {
    name: "qrwlock-read",
    summary: "qrwlock::RwLock::read + drop (one fetch_add, one fetch_sub)",
    origin: Origin::Workspace,
    make: |_| Ok(Box::new(qrwlock::RwLock::new(42u64))),
};

impl ReadSide for qrwlock::RwLock<u64> {
    fn read_sections(&self, iterations: u64) -> Duration {
        time_sections(iterations, || {
            black_box(*self.read());
        })
    }
}
