//! This workspace's reader-writer lock: `qrwlock` (its `TortureLock` impl is
//! the generic one for every `lock_api::RwLock`, in `mod.rs`).

use super::TortureLock;
use crate::registry::{Implementation, Origin};

/// `qrwlock`.
pub(super) const QRWLOCK: Implementation<dyn TortureLock> = Implementation {
    name: "qrwlock",
    summary: "qrwlock::RwLock (kernel qrwlock: FIFO MCS wait queue, waiting writer blocks new readers, spin then futex)",
    origin: Origin::Workspace,
    make: |_| Ok(Box::new(qrwlock::RwLock::new(()))),
};
