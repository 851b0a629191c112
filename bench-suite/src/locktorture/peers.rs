//! The peers' reader-writer locks.

use super::TortureLock;
use crate::registry::{Implementation, Origin};

/// `parking_lot`.
pub(super) const PARKING_LOT: Implementation<dyn TortureLock> = Implementation {
    name: "parking_lot",
    summary: "parking_lot::RwLock (task-fair, eventual fairness, parks waiters)",
    origin: Origin::Peer,
    make: |_| Ok(Box::new(parking_lot::RwLock::new(()))),
};

/// `std`.
pub(super) const STD: Implementation<dyn TortureLock> = Implementation {
    name: "std",
    summary: "std::sync::RwLock (futex-based, writer-preferring)",
    origin: Origin::Peer,
    make: |_| Ok(Box::new(std::sync::RwLock::new(()))),
};

/// `spin`.
pub(super) const SPIN: Implementation<dyn TortureLock> = Implementation {
    name: "spin",
    summary: "spin::RwLock (reader-preferring spinning lock, like the pre-qrwlock arm64 rwlock)",
    origin: Origin::Peer,
    make: |_| Ok(Box::new(spin::RwLock::new(()))),
};

impl TortureLock for parking_lot::RwLock<()> {
    fn write_section(&self, section: &mut dyn FnMut()) {
        let _guard = self.write();
        section();
    }
    fn read_section(&self, section: &mut dyn FnMut()) {
        let _guard = self.read();
        section();
    }
}

impl TortureLock for std::sync::RwLock<()> {
    fn write_section(&self, section: &mut dyn FnMut()) {
        let _guard = self.write().expect("never poisoned: sections do not panic");
        section();
    }
    fn read_section(&self, section: &mut dyn FnMut()) {
        let _guard = self.read().expect("never poisoned: sections do not panic");
        section();
    }
}

impl TortureLock for spin::RwLock<()> {
    fn write_section(&self, section: &mut dyn FnMut()) {
        let _guard = self.write();
        section();
    }
    fn read_section(&self, section: &mut dyn FnMut()) {
        let _guard = self.read();
        section();
    }
}
