//! One traced function: where its BARs are, and what each load and store into them means
//! (docs/hardware-map.md §1.2, §2.1, §2.4, §5.6; bnxt-hsi's `bar0`, `fw_status` and `doorbell`).

use std::collections::HashMap;

use bnxt_hsi::bar0;
use bnxt_hsi::pci::{BAR_DOORBELLS, BAR_REGS};
use bnxt_hsi::roce::doorbell::{DbPath, Doorbell};

use crate::args::MsixTable;
use crate::events::TraceEvent;
use crate::hwrm::{self, GuestMemory, Pending, Window};
use crate::pci::{ConfigChange, ConfigWrite, FunctionConfig};

/// The BARs the tracer follows (the BCM57608's three 64-bit BARs).
pub const BARS: [u8; 3] = [0, 2, 4];

/// `hcomm_status.fw_status_loc` address spaces (bits 1:0; bnxt.h `BNXT_FW_STATUS_REG_TYPE_*`).
const LOC_GRC: u32 = 1;
const LOC_BAR0: u32 = 2;

/// A traced function.
#[derive(Debug)]
pub struct Nic {
    config: FunctionConfig,
    sizes: [u64; 6],
    msix: MsixTable,
    chimp: Window,
    kong: Window,
    pending: Option<Pending>,
    grc: [u32; bar0::GRC_WINDOW_COUNT as usize],
    fw_status_grc: Option<u32>,
    fw_status_bar0: Option<u64>,
    rcfw_prod: u32,
    msix_entries: HashMap<u64, [u32; 4]>,
    last_read: HashMap<(u8, u64), u64>,
    /// Stores into the doorbell BAR.
    pub doorbell_stores: u64,
    /// The bytes of the last response seen answered, for the access log.
    pub last_response: Option<Vec<u8>>,
}

impl Nic {
    /// A function whose BARs start at `bars` (from the arguments), of `sizes`, with its MSI-X
    /// table at `msix`.
    pub fn new(bars: [Option<u64>; 6], sizes: [u64; 6], msix: MsixTable) -> Nic {
        Nic {
            config: FunctionConfig::with_bases(bars),
            sizes,
            msix,
            chimp: Window::default(),
            kong: Window::default(),
            pending: None,
            grc: [0; bar0::GRC_WINDOW_COUNT as usize],
            fw_status_grc: None,
            fw_status_bar0: None,
            rcfw_prod: 0,
            msix_entries: HashMap::new(),
            last_read: HashMap::new(),
            doorbell_stores: 0,
            last_response: None,
        }
    }

    /// The guest-physical range `[start, end)` of BAR `bar`, when it has a base.
    pub fn bar_range(&self, bar: u8) -> Option<(u64, u64)> {
        let base = self.config.base(usize::from(bar))?;
        Some((base, base.saturating_add(self.sizes[usize::from(bar)])))
    }

    /// The range a pending response may occupy.
    pub fn response_range(&self) -> Option<(u64, u64)> {
        self.pending.as_ref().map(Pending::response_range)
    }

    /// A configuration write to this function.
    pub fn config_write(&mut self, w: &ConfigWrite) -> Vec<TraceEvent> {
        self.config
            .write(w)
            .into_iter()
            .map(|c| match c {
                ConfigChange::Bar(bar, base) => TraceEvent::Bar { bar, base },
                ConfigChange::Command { memory, bus_master } => TraceEvent::Command { memory, bus_master },
            })
            .collect()
    }

    /// A load from guest memory within [`Nic::response_range`].
    pub fn ram_load(&mut self, mem: &mut dyn GuestMemory) -> Option<TraceEvent> {
        let pending = self.pending?;
        let (event, body) = hwrm::response_load(&pending, mem)?;
        self.pending = None;
        self.last_response = Some(body);
        Some(event)
    }

    /// A load or store of `size` bytes at `offset` into BAR `bar`.
    pub fn access(
        &mut self,
        bar: u8,
        offset: u64,
        size: u8,
        store: bool,
        value: u64,
        mem: &mut dyn GuestMemory,
    ) -> Option<TraceEvent> {
        match (bar, store) {
            (BAR_REGS, true) => self.bar0_store(offset, size, value, mem),
            (BAR_DOORBELLS, true) => Some(self.doorbell(offset, size, value)),
            (b, true) if b == self.msix.bar && self.in_msix_table(offset) => self.msix_store(offset, size, value),
            (b, true) => Some(TraceEvent::Write { at: at(b, offset), name: "", size, value }),
            (b, false) => {
                let name = if b == BAR_REGS { self.bar0_name(offset) } else { "" };
                let at = if b == BAR_REGS { self.bar0_read_at(offset) } else { at(b, offset) };
                self.read(b, offset, at, name, value)
            }
        }
    }

    fn read(&mut self, bar: u8, offset: u64, at: String, name: &'static str, value: u64) -> Option<TraceEvent> {
        if name == "hcomm_status.fw_status_loc" {
            let loc = value as u32;
            match loc & 3 {
                LOC_GRC => self.fw_status_grc = Some(loc & !3),
                LOC_BAR0 => self.fw_status_bar0 = Some(u64::from(loc & !3)),
                _ => {}
            }
        }
        // Polled registers (the heartbeat, the status) are written once per value they show.
        if self.last_read.insert((bar, offset), value) == Some(value) {
            return None;
        }
        Some(TraceEvent::Read { at, name, value })
    }

    fn bar0_store(&mut self, offset: u64, size: u8, value: u64, mem: &mut dyn GuestMemory) -> Option<TraceEvent> {
        let window_end = bar0::HWRM_REQ_WINDOW + hwrm::WINDOW_LEN as u64;
        let kong_end = bar0::KONG_REQ_WINDOW + hwrm::WINDOW_LEN as u64;
        let grc_end = bar0::GRC_WINDOW_BASE + 4 * bar0::GRC_WINDOW_COUNT;
        match offset {
            o if o < window_end => {
                self.chimp.store(o - bar0::HWRM_REQ_WINDOW, size, value);
                None
            }
            o if (bar0::KONG_REQ_WINDOW..kong_end).contains(&o) => {
                self.kong.store(o - bar0::KONG_REQ_WINDOW, size, value);
                None
            }
            bar0::HWRM_TRIGGER | bar0::KONG_TRIGGER if value as u32 == bar0::TRIGGER_VALUE => {
                let kong = offset == bar0::KONG_TRIGGER;
                let window = if kong { &self.kong } else { &self.chimp };
                let (pending, event) = hwrm::trigger(window, kong, mem);
                self.pending = pending;
                Some(event)
            }
            o if (bar0::GRC_WINDOW_BASE..grc_end).contains(&o) && size == 4 => {
                let k = ((o - bar0::GRC_WINDOW_BASE) / 4) as usize;
                let base = value as u32;
                (self.grc[k] != base).then(|| {
                    self.grc[k] = base;
                    TraceEvent::GrcWindow { window: k as u8 + 1, base }
                })
            }
            bar0::RCFW_CMDQ_PROD => {
                self.rcfw_prod = value as u32;
                None
            }
            bar0::RCFW_CMDQ_TRIG if value as u32 == bar0::TRIGGER_VALUE => {
                Some(TraceEvent::RoceTrigger { prod: self.rcfw_prod })
            }
            o => Some(TraceEvent::Write { at: at(BAR_REGS, o), name: self.bar0_name(o), size, value }),
        }
    }

    /// The GRC address a BAR0 offset reads through its window, if it is in one.
    fn grc_address(&self, offset: u64) -> Option<u32> {
        let k = offset / bar0::GRC_WINDOW_SIZE;
        if k == 0 || k > bar0::GRC_WINDOW_COUNT {
            return None;
        }
        let base = self.grc[(k - 1) as usize];
        Some(base.wrapping_add((offset % bar0::GRC_WINDOW_SIZE) as u32))
    }

    fn bar0_read_at(&self, offset: u64) -> String {
        match self.grc_address(offset) {
            Some(grc) => format!("GRC 0x{grc:x}"),
            None => at(BAR_REGS, offset),
        }
    }

    fn bar0_name(&self, offset: u64) -> &'static str {
        if let Some(grc) = self.grc_address(offset) {
            return match grc {
                g if g == bar0::HCOMM_STATUS_STRUCT_LOC => "hcomm_status.sig_ver",
                g if g == bar0::HCOMM_STATUS_STRUCT_LOC + 4 => "hcomm_status.fw_status_loc",
                g if g == bar0::GRC_REG_BASE + bar0::GRC_REG_CHIP_NUM => "chip_num",
                g if Some(g) == self.fw_status_grc => "fw_status",
                _ => "",
            };
        }
        match offset {
            o if Some(o) == self.fw_status_bar0 || o == bar0::FW_STATUS_P5 => "fw_status",
            bar0::HWRM_TRIGGER => "hwrm trigger",
            bar0::KONG_TRIGGER => "kong trigger",
            bar0::RCFW_CMDQ_TRIG => "rcfw trigger",
            // `cmdq_init` (roce_hsi.h; hardware-map §4): +0 `cmdq_pbl`, the CMDQ's address, then
            // its size and level, the CREQ ring id and the producer.
            o if (bar0::RCFW_COMM_BASE..bar0::RCFW_COMM_BASE + 8).contains(&o) => "rcfw cmdq_init pbl address",
            o if (bar0::RCFW_COMM_BASE..bar0::RCFW_COMM_BASE + 16).contains(&o) => "rcfw cmdq_init",
            _ => "",
        }
    }

    fn doorbell(&mut self, offset: u64, size: u8, value: u64) -> TraceEvent {
        self.doorbell_stores += 1;
        if size != 8 {
            let why = format!("a {size}-byte store (P7 doorbells are one 64-bit store)");
            return TraceEvent::DoorbellStore { offset, size, value, why };
        }
        match Doorbell::decode(value) {
            Ok(db) => TraceEvent::Doorbell {
                ty: db.ty.name(),
                xid: db.xid,
                index: db.index,
                l2: db.path == DbPath::L2,
                valid: db.valid,
            },
            Err(e) => TraceEvent::DoorbellStore { offset, size, value, why: e.to_string() },
        }
    }

    fn in_msix_table(&self, offset: u64) -> bool {
        (self.msix.offset..self.msix.offset + 16 * self.msix.entries).contains(&offset)
    }

    fn msix_store(&mut self, offset: u64, size: u8, value: u64) -> Option<TraceEvent> {
        let rel = offset - self.msix.offset;
        let entry = rel / 16;
        let words = self.msix_entries.entry(entry).or_insert([0, 0, 0, 1]);
        let mut touched_control = false;
        for (i, chunk) in value.to_le_bytes()[..usize::from(size.min(8))].chunks(4).enumerate() {
            let word = ((rel % 16) / 4) as usize + i;
            if word < 4 && chunk.len() == 4 {
                words[word] = u32::from_le_bytes(chunk.try_into().expect("4 bytes"));
                touched_control |= word == 3;
            }
        }
        touched_control.then(|| TraceEvent::Msix {
            entry,
            address: u64::from(words[1]) << 32 | u64::from(words[0]),
            data: words[2],
            masked: words[3] & 1 != 0,
        })
    }
}

/// `BARn+0x...`.
pub fn at(bar: u8, offset: u64) -> String {
    format!("BAR{bar}+0x{offset:x}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hwrm::tests::{Ram, header};

    fn nic() -> Nic {
        let mut bars = [None; 6];
        bars[0] = Some(0xfe00_0000);
        bars[2] = Some(0xfc00_0000);
        bars[4] = Some(0xfe01_0000);
        Nic::new(bars, [0x1_0000, 0, 0x80_0000, 0, 0x4000, 0], MsixTable { bar: 4, offset: 0, entries: 128 })
    }

    fn text(e: Option<TraceEvent>) -> Option<String> {
        e.map(|e| e.to_string())
    }

    #[test]
    fn a_request_through_the_window_its_answer_and_a_doorbell() {
        let mut n = nic();
        let mut ram = Ram::default();
        assert_eq!(n.bar_range(2), Some((0xfc00_0000, 0xfc80_0000)));
        for (i, chunk) in header(0x0, 0, 0x5000).chunks(8).enumerate() {
            assert_eq!(
                n.access(0, 8 * i as u64, 8, true, u64::from_le_bytes(chunk.try_into().unwrap()), &mut ram),
                None
            );
        }
        let e = n.access(0, bar0::HWRM_TRIGGER, 4, true, 1, &mut ram);
        assert_eq!(text(e).as_deref(), Some("hwrm-request VER_GET seq=0"));
        assert_eq!(n.response_range(), Some((0x5000, 0x5000 + 704)));
        let mut resp = vec![0u8; 176];
        resp[6..8].copy_from_slice(&176u16.to_le_bytes());
        resp[175] = 1;
        ram.put(0x5000, &resp);
        let e = n.ram_load(&mut ram);
        assert_eq!(text(e).as_deref(), Some("hwrm-answer VER_GET seq=0 ok len=176"));
        assert_eq!(n.response_range(), None);
        assert_eq!(n.last_response.as_ref().map(Vec::len), Some(176));
        // An L2 NQ_ARM doorbell (type 0xb, path 1, valid) for ring 3, index 7.
        let db = (0xbu64 << 60) | (1 << 58) | (1 << 56) | (3 << 32) | 7;
        let e = n.access(2, 0x1_0000, 8, true, db, &mut ram);
        assert_eq!(text(e).as_deref(), Some("doorbell NQ_ARM xid=3 index=7 l2"));
        let e = n.access(2, 0x1_0000, 4, true, 7, &mut ram);
        assert!(text(e).unwrap().starts_with("doorbell-store BAR2+0x10000 4B 0x7: a 4-byte store"));
        assert_eq!(n.doorbell_stores, 2);
    }

    #[test]
    fn status_reads_through_a_grc_window_are_named_and_written_once_per_value() {
        let mut n = nic();
        let mut ram = Ram::default();
        let e = n.access(0, bar0::GRC_WINDOW_BASE + 8, 4, true, 0x310_0000, &mut ram);
        assert_eq!(text(e).as_deref(), Some("grc-window 3 base=0x3100000"));
        let e = n.access(0, 0x31f0, 4, false, u64::from(bnxt_hsi::fw_status::HCOMM_SIG_VER), &mut ram);
        assert_eq!(text(e).as_deref(), Some("read GRC 0x31001f0 (hcomm_status.sig_ver) = 0x4843_5301"));
        // fw_status_loc: BAR0 space, offset 0x520.
        n.access(0, 0x31f4, 4, false, 0x520 | 2, &mut ram);
        let e = n.access(0, 0x520, 4, false, 0x8000, &mut ram);
        assert_eq!(text(e).as_deref(), Some("read BAR0+0x520 (fw_status) = 0x8000 ready"));
        assert_eq!(n.access(0, 0x520, 4, false, 0x8000, &mut ram), None);
        // MSI-X: address, data, then the vector control unmasks entry 2.
        assert_eq!(n.access(4, 0x20, 8, true, 0xfee0_0000, &mut ram), None);
        assert_eq!(n.access(4, 0x28, 4, true, 0x41, &mut ram), None);
        let e = n.access(4, 0x2c, 4, true, 0, &mut ram);
        assert_eq!(text(e).as_deref(), Some("msix entry=2 address=0xfee00000 data=0x41 unmasked"));
    }
}
