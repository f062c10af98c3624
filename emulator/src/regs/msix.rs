//! BAR4: the MSI-X table and pending-bit array (PCI Local Bus spec 3.0 §6.8.2; Linux
//! pci_regs.h `PCI_MSIX_ENTRY_*`).
//!
//! The table holds 16 bytes per vector: message address low (bits 1:0 read-only zero), message
//! address high, message data, vector control (bit 0 = mask, set at reset; the other bits are
//! reserved, read-only zero). The device hands the vectors it raises to its
//! executor ([`crate::device::Device::take_interrupts`]) and leaves masking and delivery to its executor
//! (QEMU emulates the table of a vfio-user device; the in-process executor has no interrupt sink
//! and records each vector as an event), so no vector is ever pending here and every PBA bit
//! reads 0. Stores to the PBA are ignored, as the spec lets a device do.

use crate::config_space::{MSIX_PBA_OFFSET, MSIX_TABLE_OFFSET, MSIX_VECTORS};

use super::Loud;

/// Bytes per table entry (`PCI_MSIX_ENTRY_SIZE`).
pub const ENTRY_SIZE: u64 = 16;
/// Vector control: mask bit (`PCI_MSIX_ENTRY_CTRL_MASKBIT`).
pub const CTRL_MASKBIT: u32 = 0x1;

const BAR: u8 = 4;

/// One table entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MsixEntry {
    /// Message address (64-bit).
    pub address: u64,
    /// Message data.
    pub data: u32,
    /// Vector control (bit 0: masked).
    pub control: u32,
}

impl Default for MsixEntry {
    fn default() -> MsixEntry {
        MsixEntry { address: 0, data: 0, control: CTRL_MASKBIT }
    }
}

/// The MSI-X table and PBA of one function.
#[derive(Debug, Clone)]
pub struct MsixTable {
    entries: Vec<MsixEntry>,
}

impl Default for MsixTable {
    fn default() -> MsixTable {
        MsixTable { entries: vec![MsixEntry::default(); MSIX_VECTORS as usize] }
    }
}

fn table_len() -> u64 {
    MSIX_VECTORS as u64 * ENTRY_SIZE
}

fn pba_len() -> u64 {
    (MSIX_VECTORS as u64).div_ceil(64) * 8
}

impl MsixTable {
    /// Every vector masked, addresses and data zero.
    pub fn new() -> MsixTable {
        MsixTable::default()
    }

    /// Entry `vector`, if the table has it.
    pub fn entry(&self, vector: u16) -> Option<&MsixEntry> {
        self.entries.get(vector as usize)
    }

    /// A 32-bit load at `offset` into BAR4.
    pub fn read32(&self, offset: u64, loud: &mut Loud<'_>) -> u32 {
        let table = MSIX_TABLE_OFFSET as u64;
        let pba = MSIX_PBA_OFFSET as u64;
        if !offset.is_multiple_of(4) {
            return loud.read(BAR, offset, "unaligned MSI-X access");
        }
        if offset >= table && offset < table + table_len() {
            let e = &self.entries[((offset - table) / ENTRY_SIZE) as usize];
            match (offset - table) % ENTRY_SIZE {
                0 => e.address as u32,
                4 => (e.address >> 32) as u32,
                8 => e.data,
                _ => e.control,
            }
        } else if offset >= pba && offset < pba + pba_len() {
            0
        } else {
            loud.read(BAR, offset, "BAR4 outside the MSI-X table and PBA")
        }
    }

    /// A 32-bit store at `offset` into BAR4.
    pub fn write32(&mut self, offset: u64, value: u32, loud: &mut Loud<'_>) {
        let table = MSIX_TABLE_OFFSET as u64;
        let pba = MSIX_PBA_OFFSET as u64;
        if !offset.is_multiple_of(4) {
            loud.write(BAR, offset, value.into(), "unaligned MSI-X access");
        } else if offset >= table && offset < table + table_len() {
            let e = &mut self.entries[((offset - table) / ENTRY_SIZE) as usize];
            match (offset - table) % ENTRY_SIZE {
                0 => e.address = (e.address & !0xffff_ffff) | u64::from(value & !0x3),
                4 => e.address = (e.address & 0xffff_ffff) | (u64::from(value) << 32),
                8 => e.data = value,
                _ => e.control = value & CTRL_MASKBIT,
            }
        } else if !(offset >= pba && offset < pba + pba_len()) {
            loud.write(BAR, offset, value.into(), "BAR4 outside the MSI-X table and PBA");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::Recorder;
    use crate::regs::unimplemented::Unimplemented;
    use std::time::Duration;

    #[test]
    fn entries_start_masked_and_keep_what_is_written() {
        let mut t = MsixTable::new();
        let mut unimpl = Unimplemented::default();
        let mut rec = Recorder::new(0);
        let mut loud = Loud { unimplemented: &mut unimpl, rec: &mut rec, now: Duration::ZERO };
        assert_eq!(t.read32(3 * 16 + 12, &mut loud), 1);
        t.write32(3 * 16, 0xfee0_0003, &mut loud);
        t.write32(3 * 16 + 4, 0x1, &mut loud);
        t.write32(3 * 16 + 8, 0x4021, &mut loud);
        t.write32(3 * 16 + 12, 0xffff_fffe, &mut loud);
        assert_eq!(*t.entry(3).unwrap(), MsixEntry { address: 0x1_fee0_0000, data: 0x4021, control: 0 });
        assert_eq!(t.read32(0x2000, &mut loud), 0);
        t.write32(0x2000, 5, &mut loud);
        assert_eq!(unimpl.total(), 0);
        let mut loud = Loud { unimplemented: &mut unimpl, rec: &mut rec, now: Duration::ZERO };
        assert_eq!(t.read32(0x1000, &mut loud), u32::MAX);
        assert_eq!(unimpl.total(), 1);
    }
}
