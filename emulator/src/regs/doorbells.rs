//! BAR2, the doorbells (hardware-map §5.6). Stores are the RoCE engine's
//! ([`crate::roce::doorbell`]); the BAR is write-only, so loads are loud (warned once per offset,
//! counted, recorded) and read all-ones.

use super::Loud;

const BAR: u8 = 2;

/// A 32-bit load from the doorbell BAR.
pub fn read32(offset: u64, loud: &mut Loud<'_>) -> u32 {
    loud.read(BAR, offset, "doorbell BAR load (doorbells are write-only)")
}
