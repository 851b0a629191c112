//! This workspace's reader-writer lock: `qrwlock`.

use super::TortureLock;
use crate::registry::{Implementation, Origin};

/// `qrwlock`.
pub(super) const QRWLOCK: Implementation<dyn TortureLock> = Implementation {
    name: "qrwlock",
    summary: "qrwlock::RwLock (kernel qrwlock: FIFO MCS wait queue, waiting writer blocks new readers, spin then futex)",
    origin: Origin::Workspace,
    make: |_| Ok(Box::new(qrwlock::RwLock::new(()))),
};

impl TortureLock for qrwlock::RwLock<()> {
    fn write_section(&self, section: &mut dyn FnMut()) {
        let _guard = self.write();
        section();
    }
    fn read_section(&self, section: &mut dyn FnMut()) {
        let _guard = self.read();
        section();
    }
}
