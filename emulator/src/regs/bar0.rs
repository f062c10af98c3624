//! BAR0, the register space (hardware-map §2.1; bnxt.h `BNXT_GRCPF_REG_*`,
//! `BNXT_GRC_REG_STATUS_P5`; bnxt_re qplib_rcfw.h `RCFW_COMM_*`).
//!
//! | offset | register | model |
//! |---|---|---|
//! | 0x000-0x07f | HWRM request window | stores dwords; readable |
//! | 0x100 | HWRM trigger | a store of 1 submits the window's contents |
//! | 0x400, 0x404, 0x408 | GRC window 1-3 base | stores `addr & 0xfffff000` |
//! | 0x520 | firmware status (P5/P7) | reads 0x8000 (ready), SHUTDOWN while a fatal reset has the firmware down |
//! | 0x524, 0x528 | firmware heartbeat, reset counter | with the error recovery option only ([`crate::firmware::recovery`]); otherwise not implemented, loud |
//! | 0x600-0x60f | RoCE command-queue mailbox (`cmdq_init`, producer at 0x60c) | stores kept, readable |
//! | 0x700 | RoCE command-queue trigger | a store of 1 hands the mailbox to the RoCE engine |
//! | 0xa00-0xa7f, 0xb00 | KONG mailbox | not implemented, loud |
//! | 0x1000-0x3fff | GRC windows 1-3 | reads of the addresses in [`super::grc`] |
//! | anything else | | not implemented, loud, reads all-ones |

use bnxt_hsi::bar0::{
    FW_STATUS_P5, GRC_WINDOW_BASE, GRC_WINDOW_COUNT, GRC_WINDOW_SIZE, HWRM_REQ_WINDOW, HWRM_REQ_WINDOW_LEN,
    HWRM_TRIGGER, KONG_REQ_WINDOW, KONG_TRIGGER, RCFW_CMDQ_TRIG, RCFW_COMM_BASE, TRIGGER_VALUE,
};
use bnxt_hsi::fw_status::CODE_READY;

use super::{Loud, grc};
use crate::firmware::recovery::{HEARTBEAT_REG, RESET_COUNT_REG};

/// Size of the HWRM request window in bytes.
pub const WINDOW_LEN: usize = HWRM_REQ_WINDOW_LEN as usize;
/// Mask applied to GRC window base writes (bnxt.h `BNXT_GRC_BASE_MASK`).
pub const GRC_BASE_MASK: u32 = 0xffff_f000;
/// Mask of the offset within a GRC window (bnxt.h `BNXT_GRC_OFFSET_MASK`).
pub const GRC_OFFSET_MASK: u32 = 0x0000_0ffc;
/// Length of the RoCE command-queue mailbox (`cmdq_init`, 16 bytes).
const RCFW_MAILBOX_LEN: u64 = 16;
/// Length of the KONG request window (same as the CHIMP one).
const KONG_WINDOW_LEN: u64 = HWRM_REQ_WINDOW_LEN;

/// What a BAR0 store asks the rest of the device to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Bar0Effect {
    /// Nothing beyond the register update.
    None,
    /// The HWRM trigger was written: submit this snapshot of the request window.
    HwrmSubmit(Box<[u8; WINDOW_LEN]>),
    /// The RoCE command-queue trigger was written: the mailbox as it stands (`cmdq_init`, with the
    /// producer in its last dword).
    RcfwTrigger([u8; RCFW_MAILBOX_LEN as usize]),
}

/// BAR0 register state.
#[derive(Debug, Clone)]
pub struct Bar0 {
    window: [u8; WINDOW_LEN],
    grc_base: [u32; GRC_WINDOW_COUNT as usize],
    rcfw_mailbox: [u8; RCFW_MAILBOX_LEN as usize],
    /// What the firmware status register reads (the firmware's; ready unless it is down).
    fw_status: u32,
    /// What the heartbeat and reset-counter registers read, when the firmware offers them.
    health: Option<(u32, u32)>,
}

impl Default for Bar0 {
    fn default() -> Bar0 {
        Bar0 {
            window: [0; WINDOW_LEN],
            grc_base: [0; GRC_WINDOW_COUNT as usize],
            rcfw_mailbox: [0; 16],
            fw_status: CODE_READY,
            health: None,
        }
    }
}

const BAR: u8 = 0;

impl Bar0 {
    /// Registers just out of reset.
    pub fn new() -> Bar0 {
        Bar0::default()
    }

    /// Set what the firmware status register reads.
    pub fn set_fw_status(&mut self, status: u32) {
        self.fw_status = status;
    }

    /// What the heartbeat and reset-counter registers read next (`None`: the firmware does not
    /// offer them, and they are not implemented).
    pub fn set_health(&mut self, health: Option<(u32, u32)>) {
        self.health = health;
    }

    /// The HWRM request window as it stands.
    pub fn window(&self) -> &[u8; WINDOW_LEN] {
        &self.window
    }

    /// The last values stored into the RoCE command-queue mailbox (0x600-0x60f).
    pub fn rcfw_mailbox(&self) -> &[u8; 16] {
        &self.rcfw_mailbox
    }

    /// A 32-bit load at `offset` (4-byte aligned; the caller splits wider loads).
    pub fn read32(&mut self, offset: u64, loud: &mut Loud<'_>) -> u32 {
        if !offset.is_multiple_of(4) {
            return loud.read(BAR, offset, "unaligned register");
        }
        match offset {
            o if in_range(o, HWRM_REQ_WINDOW, HWRM_REQ_WINDOW_LEN) => {
                dword(&self.window, (o - HWRM_REQ_WINDOW) as usize)
            }
            o if in_range(o, GRC_WINDOW_BASE, 4 * GRC_WINDOW_COUNT) => {
                self.grc_base[((o - GRC_WINDOW_BASE) / 4) as usize]
            }
            FW_STATUS_P5 => self.fw_status,
            HEARTBEAT_REG if self.health.is_some() => self.health.map_or(0, |h| h.0),
            RESET_COUNT_REG if self.health.is_some() => self.health.map_or(0, |h| h.1),
            o if in_range(o, RCFW_COMM_BASE, RCFW_MAILBOX_LEN) => {
                dword(&self.rcfw_mailbox, (o - RCFW_COMM_BASE) as usize)
            }
            o if in_range(o, GRC_WINDOW_SIZE, GRC_WINDOW_SIZE * GRC_WINDOW_COUNT) => {
                let k = (o / GRC_WINDOW_SIZE) as usize; // 1-based window number
                let addr = self.grc_base[k - 1] + (o as u32 & GRC_OFFSET_MASK);
                grc::read(addr).unwrap_or_else(|| loud.read(BAR, offset, "GRC window (address not modelled)"))
            }
            o => loud.read(BAR, o, region_name(o)),
        }
    }

    /// A 32-bit store at `offset` (4-byte aligned; the caller splits wider stores).
    pub fn write32(&mut self, offset: u64, value: u32, loud: &mut Loud<'_>) -> Bar0Effect {
        if !offset.is_multiple_of(4) {
            loud.write(BAR, offset, value.into(), "unaligned register");
            return Bar0Effect::None;
        }
        match offset {
            o if in_range(o, HWRM_REQ_WINDOW, HWRM_REQ_WINDOW_LEN) => {
                put_dword(&mut self.window, (o - HWRM_REQ_WINDOW) as usize, value);
            }
            HWRM_TRIGGER if value == TRIGGER_VALUE => {
                return Bar0Effect::HwrmSubmit(Box::new(self.window));
            }
            o if in_range(o, GRC_WINDOW_BASE, 4 * GRC_WINDOW_COUNT) => {
                self.grc_base[((o - GRC_WINDOW_BASE) / 4) as usize] = value & GRC_BASE_MASK;
            }
            o if in_range(o, RCFW_COMM_BASE, RCFW_MAILBOX_LEN) => {
                put_dword(&mut self.rcfw_mailbox, (o - RCFW_COMM_BASE) as usize, value);
            }
            RCFW_CMDQ_TRIG if value == TRIGGER_VALUE => return Bar0Effect::RcfwTrigger(self.rcfw_mailbox),
            o => loud.write(BAR, o, value.into(), region_name(o)),
        }
        Bar0Effect::None
    }
}

fn in_range(o: u64, base: u64, len: u64) -> bool {
    o >= base && o < base + len
}

fn dword(bytes: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]])
}

fn put_dword(bytes: &mut [u8], at: usize, v: u32) {
    bytes[at..at + 4].copy_from_slice(&v.to_le_bytes());
}

/// What an offset the model does not implement belongs to, for logs.
fn region_name(o: u64) -> &'static str {
    match o {
        HWRM_TRIGGER => "HWRM trigger (only a store of 1 is defined)",
        RCFW_CMDQ_TRIG => "RoCE command-queue trigger (write-only; only a store of 1 is defined)",
        o if in_range(o, KONG_REQ_WINDOW, KONG_WINDOW_LEN) => "KONG mailbox (not implemented)",
        KONG_TRIGGER => "KONG trigger (not implemented)",
        FW_STATUS_P5 => "firmware status (read-only)",
        o if in_range(o, GRC_WINDOW_SIZE, GRC_WINDOW_SIZE * GRC_WINDOW_COUNT) => "GRC window (stores not modelled)",
        _ => "unassigned BAR0 offset",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::Recorder;
    use crate::regs::unimplemented::Unimplemented;
    use std::time::Duration;

    #[test]
    fn window_trigger_and_status_behave_and_others_are_counted() {
        let mut bar = Bar0::new();
        let mut unimpl = Unimplemented::default();
        let mut rec = Recorder::new(0);
        let mut loud = Loud { unimplemented: &mut unimpl, rec: &mut rec, now: Duration::ZERO };
        assert_eq!(bar.write32(0x4, 0xdead_beef, &mut loud), Bar0Effect::None);
        assert_eq!(bar.read32(0x4, &mut loud), 0xdead_beef);
        match bar.write32(HWRM_TRIGGER, 1, &mut loud) {
            Bar0Effect::HwrmSubmit(w) => assert_eq!(&w[4..8], &0xdead_beefu32.to_le_bytes()),
            other => panic!("{other:?}"),
        }
        assert_eq!(bar.read32(0x520, &mut loud), 0x8000);
        bar.write32(0x408, 0x0310_01f0, &mut loud);
        assert_eq!(bar.read32(0x408, &mut loud), 0x0310_0000);
        assert_eq!(bar.read32(0x3000 + 0x1f0, &mut loud) >> 8, 0x48_4353);
        assert_eq!(unimpl.total(), 0);
        let mut loud = Loud { unimplemented: &mut unimpl, rec: &mut rec, now: Duration::ZERO };
        assert_eq!(bar.read32(0xa00, &mut loud), u32::MAX);
        bar.write32(0xb00, 1, &mut loud);
        bar.write32(0x600, 7, &mut loud);
        bar.write32(0x60c, 0x8000_0002, &mut loud);
        assert_eq!(bar.rcfw_mailbox()[0], 7);
        match bar.write32(0x700, 1, &mut loud) {
            Bar0Effect::RcfwTrigger(m) => assert_eq!(&m[12..16], &0x8000_0002u32.to_le_bytes()),
            other => panic!("{other:?}"),
        }
        bar.write32(0x700, 2, &mut loud);
        assert_eq!(unimpl.total(), 3, "KONG read and write, and a trigger value other than 1");
        assert_eq!(rec.pending().len(), 3);
    }
}
