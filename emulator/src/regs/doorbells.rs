//! BAR2, the doorbells (hardware-map §5.6). The RoCE engine that consumes them comes in a later
//! step: until then every doorbell store is loud (warned once per offset, counted, recorded with
//! its value, so transcripts show it) and loads read all-ones.

use super::Loud;

const BAR: u8 = 2;

/// A doorbell store of 4 or 8 bytes (`value` holds them, little-endian).
pub fn write(offset: u64, value: u64, loud: &mut Loud<'_>) {
    loud.write(BAR, offset, value, "doorbell (not implemented yet)");
}

/// A 32-bit load from the doorbell BAR.
pub fn read32(offset: u64, loud: &mut Loud<'_>) -> u32 {
    loud.read(BAR, offset, "doorbell BAR load (not implemented)")
}
