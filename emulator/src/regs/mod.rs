//! Register decode of the three BARs: BAR0 (HWRM mailbox, GRC windows, firmware status, RoCE
//! and KONG mailboxes), BAR2 (doorbells) and BAR4 (MSI-X table and PBA).
//!
//! Each BAR is a small state machine over 32-bit registers. 8-byte accesses are split into two
//! 32-bit accesses, low half first (a 64-bit store to two 32-bit registers). Accesses of other
//! widths and offsets the model does not implement are loud: [`unimplemented::Unimplemented`]
//! warns once per offset, counts every hit and records an event; loads of them read all-ones,
//! as a read the device does not claim does on PCIe.

pub mod bar0;
pub mod doorbells;
pub mod grc;
pub mod msix;
pub mod unimplemented;

/// Value a load of an unimplemented register returns.
pub const UNIMPLEMENTED_READ: u32 = u32::MAX;

use std::time::Duration;

use crate::events::{AccessKind, Recorder};
use unimplemented::Unimplemented;

/// What a register block needs to be loud about an access it does not implement.
pub struct Loud<'a> {
    /// The counts.
    pub unimplemented: &'a mut Unimplemented,
    /// Where events go.
    pub rec: &'a mut Recorder,
    /// Virtual time of the access.
    pub now: Duration,
}

impl Loud<'_> {
    /// Count and log an unimplemented load; returns what the load reads.
    pub fn read(&mut self, bar: u8, offset: u64, what: &'static str) -> u32 {
        self.unimplemented.hit(self.rec, self.now, bar, offset, AccessKind::Read, 0, what);
        UNIMPLEMENTED_READ
    }

    /// Count and log an unimplemented store.
    pub fn write(&mut self, bar: u8, offset: u64, value: u64, what: &'static str) {
        self.unimplemented.hit(self.rec, self.now, bar, offset, AccessKind::Write, value, what);
    }
}
