//! PCI configuration space of a BCM57608 physical function (4 KiB, PCIe extended).
//!
//! Register offsets and bit meanings are the PCI Local Bus and PCI Express Base specifications'
//! as Linux names them in include/uapi/linux/pci_regs.h (`PCI_COMMAND`, `PCI_EXP_DEVCTL`, ...).
//! The identity (14e4:1760, class 0x020000) is bnxt.c `bnxt_pci_tbl` / DPDK bnxt.h
//! `BROADCOM_DEV_ID_57608`. No public lspci dump of a P7 was found, so BAR sizes, the MSI-X
//! vector count, the revision and the subsystem id are the model's choices (named constants
//! below, each with its reason).
//!
//! Each byte carries a write mask (bits software may change) and a write-1-to-clear mask; every
//! other bit is read-only and writes to it are ignored, as on hardware. BAR size probing works
//! through the masks: the address bits below the BAR size are read-only zero.

use bnxt_hsi::pci::{CLASS_ETHERNET, DEVICE_ID_57608, VENDOR_ID};

/// Size of the configuration space (PCIe extended).
pub const CONFIG_SPACE_SIZE: usize = 4096;

/// `PCI_COMMAND`.
pub const COMMAND: u16 = 0x04;
/// `PCI_COMMAND_MEMORY`: memory space enable.
pub const COMMAND_MEMORY: u16 = 0x0002;
/// `PCI_COMMAND_MASTER`: bus master enable.
pub const COMMAND_MASTER: u16 = 0x0004;
/// `PCI_STATUS`.
pub const STATUS: u16 = 0x06;
/// `PCI_STATUS_CAP_LIST`.
pub const STATUS_CAP_LIST: u16 = 0x0010;
/// `PCI_REVISION_ID`.
pub const REVISION_ID: u16 = 0x08;
/// `PCI_HEADER_TYPE`.
pub const HEADER_TYPE: u16 = 0x0e;
/// `PCI_BASE_ADDRESS_0`; BAR n's register is at `BAR0_REG + 4*n`.
pub const BAR0_REG: u16 = 0x10;
/// `PCI_SUBSYSTEM_VENDOR_ID`.
pub const SUBSYSTEM_VENDOR_ID: u16 = 0x2c;
/// `PCI_SUBSYSTEM_ID`.
pub const SUBSYSTEM_ID: u16 = 0x2e;
/// `PCI_CAPABILITY_LIST`.
pub const CAPABILITY_LIST: u16 = 0x34;
/// `PCI_INTERRUPT_LINE`.
pub const INTERRUPT_LINE: u16 = 0x3c;
/// `PCI_INTERRUPT_PIN`.
pub const INTERRUPT_PIN: u16 = 0x3d;

/// `PCI_CAP_ID_PM`.
pub const CAP_ID_PM: u8 = 0x01;
/// `PCI_CAP_ID_MSIX`.
pub const CAP_ID_MSIX: u8 = 0x11;
/// `PCI_CAP_ID_EXP`.
pub const CAP_ID_EXP: u8 = 0x10;
/// `PCI_EXT_CAP_ID_DSN` (Device Serial Number extended capability).
pub const EXT_CAP_ID_DSN: u16 = 0x0003;

/// Where the model places the power-management capability.
pub const PM_CAP: u16 = 0x40;
/// Where the model places the MSI-X capability.
pub const MSIX_CAP: u16 = 0x50;
/// Where the model places the PCI Express capability.
pub const EXP_CAP: u16 = 0x60;
/// `PCI_CAP_ID_VPD`.
pub const CAP_ID_VPD: u8 = 0x03;
/// Where the model places the Vital Product Data capability (after the PCI Express capability's
/// 0x3c bytes).
pub const VPD_CAP: u16 = 0xa0;
/// `PCI_VPD_ADDR_F`: in the VPD address register, set by the device when a read completes,
/// cleared when a write does.
pub const VPD_ADDR_F: u16 = 0x8000;
/// Where the model places the Device Serial Number extended capability.
pub const DSN_CAP: u16 = 0x100;

/// `PCI_EXP_DEVCAP` offset in the PCIe capability.
pub const EXP_DEVCAP: u16 = 0x04;
/// `PCI_EXP_DEVCTL` offset in the PCIe capability.
pub const EXP_DEVCTL: u16 = 0x08;
/// `PCI_EXP_DEVCAP_FLR`: function-level reset supported.
pub const DEVCAP_FLR: u32 = 1 << 28;
/// `PCI_EXP_DEVCTL_RELAX_EN`: relaxed ordering enable.
pub const DEVCTL_RELAX_EN: u16 = bnxt_hsi::pci::PCI_EXP_DEVCTL_RELAX_EN;
/// `PCI_EXP_DEVCTL_BCR_FLR`: writing 1 initiates a function-level reset (always reads 0).
pub const DEVCTL_BCR_FLR: u16 = 0x8000;
/// Device Control at reset: relaxed ordering (bit 4), no-snoop (bit 11), max read request 512 B
/// (bits 14:12 = 2), max payload 128 B: the value PCIe devices commonly come out of reset with.
pub const DEVCTL_RESET: u16 = 0x2810;

/// PCI revision id: chip revision 1, metal 0 in the `rev << 4 | metal` form bnxt parts show in
/// lspci (`rev 11` for a B1); matches VER_GET `chip_rev`/`chip_metal`.
pub const REVISION: u8 = 0x10;
/// Subsystem id: no public subsystem id of a P7 board was found; the model uses the device id,
/// as Broadcom reference boards commonly do.
pub const SUBSYSTEM: u16 = 0x1760;

/// Size of BAR0, the register space (covers the HWRM, RoCE and KONG mailboxes, the firmware
/// status register and GRC windows 1-3 at 0x1000-0x3fff).
pub const BAR0_SIZE: u64 = bnxt_hsi::bar0::BAR0_SIZE;
/// Size of BAR2, the doorbells: 8 MiB, room for the L2 doorbell area FUNC_QCFG reports and
/// ~2000 RoCE doorbell pages beyond it.
pub const BAR2_SIZE: u64 = 8 << 20;
/// Size of BAR4: the MSI-X table (2 KiB for 128 vectors) at 0 and the PBA at 0x2000, each in
/// its own 4-KiB page as the PCI spec recommends; 16 KiB is the next power of two.
pub const BAR4_SIZE: u64 = 16 << 10;
/// MSI-X vectors: 128, enough for bnxt_en's per-CPU NQs plus bnxt_re's CREQ and NQs on a large
/// host; FUNC_RESOURCE_QCAPS `max_msix` reports the same number.
pub const MSIX_VECTORS: u16 = 128;
/// Offset of the MSI-X table in BAR4.
pub const MSIX_TABLE_OFFSET: u32 = 0x0;
/// Offset of the MSI-X pending-bit array in BAR4.
pub const MSIX_PBA_OFFSET: u32 = 0x2000;

/// Sizes of the three 64-bit BARs, by BAR index (0, 2, 4).
pub const BAR_SIZES: [(u8, u64); 3] = [(0, BAR0_SIZE), (2, BAR2_SIZE), (4, BAR4_SIZE)];

/// What a config write changed that the rest of the device must act on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ConfigEffects {
    /// The command register's memory or bus-master bit changed.
    pub command_changed: bool,
    /// Device Control relaxed ordering changed.
    pub relaxed_ordering_changed: bool,
    /// Device Control bit 15 was written as 1: the function must reset.
    pub flr: bool,
}

/// The configuration space of one function.
#[derive(Clone)]
pub struct ConfigSpace {
    bytes: Box<[u8; CONFIG_SPACE_SIZE]>,
    reset: Box<[u8; CONFIG_SPACE_SIZE]>,
    wmask: Box<[u8; CONFIG_SPACE_SIZE]>,
    w1c: Box<[u8; CONFIG_SPACE_SIZE]>,
    /// The Vital Product Data the VPD capability serves (`crate::vpd`).
    vpd: std::sync::Arc<[u8]>,
}

impl std::fmt::Debug for ConfigSpace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConfigSpace")
            .field("command", &format_args!("0x{:04x}", self.command()))
            .field("devctl", &format_args!("0x{:04x}", self.devctl()))
            .finish()
    }
}

/// Builds the reset image: values and masks, register by register.
struct Image {
    bytes: Box<[u8; CONFIG_SPACE_SIZE]>,
    wmask: Box<[u8; CONFIG_SPACE_SIZE]>,
    w1c: Box<[u8; CONFIG_SPACE_SIZE]>,
}

impl Image {
    fn new() -> Image {
        Image {
            bytes: Box::new([0; CONFIG_SPACE_SIZE]),
            wmask: Box::new([0; CONFIG_SPACE_SIZE]),
            w1c: Box::new([0; CONFIG_SPACE_SIZE]),
        }
    }

    fn put(&mut self, off: u16, len: usize, value: u64, wmask: u64, w1c: u64) {
        let off = off as usize;
        for i in 0..len {
            self.bytes[off + i] = (value >> (8 * i)) as u8;
            self.wmask[off + i] = (wmask >> (8 * i)) as u8;
            self.w1c[off + i] = (w1c >> (8 * i)) as u8;
        }
    }
    fn ro8(&mut self, off: u16, v: u8) {
        self.put(off, 1, v.into(), 0, 0);
    }
    fn ro16(&mut self, off: u16, v: u16) {
        self.put(off, 2, v.into(), 0, 0);
    }
    fn ro32(&mut self, off: u16, v: u32) {
        self.put(off, 4, v.into(), 0, 0);
    }
    fn rw16(&mut self, off: u16, v: u16, wmask: u16) {
        self.put(off, 2, v.into(), wmask.into(), 0);
    }
    fn rw32(&mut self, off: u16, v: u32, wmask: u32) {
        self.put(off, 4, v.into(), wmask.into(), 0);
    }
}

/// Type bits of a 64-bit prefetchable memory BAR (`PCI_BASE_ADDRESS_MEM_TYPE_64 |
/// PCI_BASE_ADDRESS_MEM_PREFETCH`).
const BAR_64_PREFETCH: u32 = 0x4 | 0x8;

/// Device serial number (PCIe DSN capability and FUNC_QCAPS `device_serial_number`) derived from
/// a MAC address as an EUI-64 (`mac[0..3] ff fe mac[3..6]`), the usual construction for NICs.
pub fn serial_from_mac(mac: [u8; 6]) -> u64 {
    u64::from_be_bytes([mac[0], mac[1], mac[2], 0xff, 0xfe, mac[3], mac[4], mac[5]])
}

fn reset_image(serial: u64) -> Image {
    let mut im = Image::new();
    // Type 0 header.
    im.ro16(0x00, VENDOR_ID);
    im.ro16(0x02, DEVICE_ID_57608);
    // Command: memory (1), bus master (2), parity response (6), SERR# (8), INTx disable (10).
    // No I/O BARs, so I/O space enable is hardwired 0.
    im.rw16(COMMAND, 0, 0x0546);
    // Status: capability list; error bits are write-1-to-clear (the model never sets them).
    im.put(STATUS, 2, STATUS_CAP_LIST.into(), 0, 0xf900);
    im.ro8(REVISION_ID, REVISION);
    im.put(0x09, 3, CLASS_ETHERNET.into(), 0, 0);
    im.put(0x0c, 1, 0, 0xff, 0); // cache line size
    im.ro8(HEADER_TYPE, 0x00); // single-function type 0 header
    for (bar, size) in BAR_SIZES {
        let reg = BAR0_REG + 4 * bar as u16;
        let lo_mask = !(size as u32 - 1) & !0xf;
        im.rw32(reg, BAR_64_PREFETCH, lo_mask);
        im.rw32(reg + 4, 0, u32::MAX);
    }
    im.ro16(SUBSYSTEM_VENDOR_ID, VENDOR_ID);
    im.ro16(SUBSYSTEM_ID, SUBSYSTEM);
    im.ro8(CAPABILITY_LIST, PM_CAP as u8);
    im.put(INTERRUPT_LINE, 1, 0, 0xff, 0);
    im.ro8(INTERRUPT_PIN, 0x01); // INTA#

    // Power management (PCI PM 1.2): PMC version 3, no D1/D2, no PME. PMCSR: power state RW,
    // No_Soft_Reset set (state is kept across D3hot->D0).
    im.ro8(PM_CAP, CAP_ID_PM);
    im.ro8(PM_CAP + 1, MSIX_CAP as u8);
    im.ro16(PM_CAP + 2, 0x0003);
    im.rw16(PM_CAP + 4, 0x0008, 0x0003);

    // MSI-X: table size N-1 (RO), function mask (bit 14) and enable (bit 15) RW; table at BAR4+0,
    // PBA at BAR4+0x2000 (BIR = 4).
    im.ro8(MSIX_CAP, CAP_ID_MSIX);
    im.ro8(MSIX_CAP + 1, EXP_CAP as u8);
    im.rw16(MSIX_CAP + 2, MSIX_VECTORS - 1, 0xc000);
    im.ro32(MSIX_CAP + 4, MSIX_TABLE_OFFSET | 4);
    im.ro32(MSIX_CAP + 8, MSIX_PBA_OFFSET | 4);

    // PCI Express capability, version 2, endpoint.
    im.ro8(EXP_CAP, CAP_ID_EXP);
    im.ro8(EXP_CAP + 1, VPD_CAP as u8);
    im.ro16(EXP_CAP + 2, 0x0002);
    // DevCap: MPS 512 B, extended tags, L0s/L1 acceptable latency "no limit", role-based error
    // reporting, FLR.
    im.ro32(EXP_CAP + EXP_DEVCAP, 0x2 | 0x20 | (7 << 6) | (7 << 9) | 0x8000 | DEVCAP_FLR);
    // DevCtl: everything RW except phantom functions (unsupported, bit 9) and the FLR bit, which
    // reads 0 and is acted on in `write`.
    im.rw16(EXP_CAP + EXP_DEVCTL, DEVCTL_RESET, 0x7dff);
    // DevSta: error-detected bits RW1C.
    im.put(EXP_CAP + 0x0a, 2, 0, 0, 0x000f);
    // LinkCap: 32 GT/s (Gen5), x16, no ASPM, ASPM optionality compliance.
    im.ro32(EXP_CAP + 0x0c, 0x5 | (16 << 4) | (1 << 22));
    // LinkCtl: ASPM control, RCB, common clock, extended synch.
    im.rw16(EXP_CAP + 0x10, 0, 0x00cb);
    // LinkSta: 32 GT/s x16, slot clock configuration.
    im.ro16(EXP_CAP + 0x12, 0x5 | (16 << 4) | (1 << 12));
    // DevCap2: completion timeout ranges A-D, completion timeout disable.
    im.ro32(EXP_CAP + 0x24, 0x1f);
    // DevCtl2: completion timeout value/disable, AtomicOp requester enable (bnxt_re sets it),
    // IDO request/completion, LTR.
    im.rw16(EXP_CAP + 0x28, 0, 0x075f);
    // LinkCap2: supported speeds 2.5-32 GT/s.
    im.ro32(EXP_CAP + 0x2c, 0x3e);
    // LinkCtl2: target link speed 32 GT/s, RW.
    im.rw16(EXP_CAP + 0x30, 0x5, 0x003f);
    // LinkSta2: equalization complete, phases 1-3 successful.
    im.ro16(EXP_CAP + 0x32, 0x001e);

    // Vital Product Data, last in the list: the address register (bits 14:0, and the F flag
    // that starts and completes an access) and the data register (PCI Local Bus 3.0 §I.3).
    im.ro8(VPD_CAP, CAP_ID_VPD);
    im.ro8(VPD_CAP + 1, 0x00);
    im.rw16(VPD_CAP + 2, 0, 0xffff);
    im.rw32(VPD_CAP + 4, 0, 0xffff_ffff);

    // Device Serial Number extended capability, version 1, last in the list.
    im.ro32(DSN_CAP, (1 << 16) | EXT_CAP_ID_DSN as u32);
    im.ro32(DSN_CAP + 4, serial as u32);
    im.ro32(DSN_CAP + 8, (serial >> 32) as u32);
    im
}

impl ConfigSpace {
    /// Config space just out of reset, for a function whose serial number is `serial`.
    pub fn new(serial: u64) -> ConfigSpace {
        let im = reset_image(serial);
        ConfigSpace {
            reset: im.bytes.clone(),
            bytes: im.bytes,
            wmask: im.wmask,
            w1c: im.w1c,
            vpd: crate::vpd::image(serial).into(),
        }
    }

    /// Read `data.len()` bytes at `offset`; bytes past the end of config space read as all-ones.
    pub fn read(&self, offset: u16, data: &mut [u8]) {
        for (i, b) in data.iter_mut().enumerate() {
            *b = self.bytes.get(offset as usize + i).copied().unwrap_or(0xff);
        }
    }

    /// Write `data` at `offset`, honouring read-only and write-1-to-clear bits; bytes past the end
    /// are dropped. Returns what changed that the device must act on.
    pub fn write(&mut self, offset: u16, data: &[u8]) -> ConfigEffects {
        let before_cmd = self.command() & (COMMAND_MEMORY | COMMAND_MASTER);
        let before_ro = self.relaxed_ordering();
        let flr_byte = (EXP_CAP + EXP_DEVCTL + 1) as usize;
        let mut flr = false;
        for (i, &v) in data.iter().enumerate() {
            let at = offset as usize + i;
            if at >= CONFIG_SPACE_SIZE {
                break;
            }
            if at == flr_byte && v & (DEVCTL_BCR_FLR >> 8) as u8 != 0 {
                flr = true;
            }
            let old = self.bytes[at];
            let kept = old & !self.wmask[at];
            let cleared = old & self.w1c[at] & v;
            self.bytes[at] = (kept | (v & self.wmask[at])) & !cleared;
        }
        let vpd_addr = usize::from(VPD_CAP + 2)..usize::from(VPD_CAP + 4);
        let written = usize::from(offset)..usize::from(offset) + data.len();
        if written.start < vpd_addr.end && vpd_addr.start < written.end {
            self.vpd_access();
        }
        ConfigEffects {
            command_changed: before_cmd != self.command() & (COMMAND_MEMORY | COMMAND_MASTER),
            relaxed_ordering_changed: before_ro != self.relaxed_ordering(),
            flr,
        }
    }

    /// A write of the VPD address register starts an access, which the model completes at once:
    /// with F clear, a read of the four bytes at the address into the data register, then F set;
    /// with F set, a write, which the model's read-only VPD ignores (loudly), then F clear.
    fn vpd_access(&mut self) {
        let reg = self.u16_at(VPD_CAP + 2);
        let addr = usize::from(reg & !VPD_ADDR_F);
        let data_at = usize::from(VPD_CAP + 4);
        let f = if reg & VPD_ADDR_F == 0 {
            for i in 0..4 {
                self.bytes[data_at + i] = self.vpd.get(addr + i).copied().unwrap_or(0);
            }
            VPD_ADDR_F
        } else {
            tracing::warn!(addr, "VPD write ignored: the model's VPD has no writable (VPD-W) area");
            0
        };
        let done = (reg & !VPD_ADDR_F) | f;
        self.bytes[usize::from(VPD_CAP + 2)..usize::from(VPD_CAP + 4)].copy_from_slice(&done.to_le_bytes());
    }

    /// Return every register to its reset value (function-level reset).
    pub fn reset(&mut self) {
        *self.bytes = *self.reset;
    }

    fn u16_at(&self, off: u16) -> u16 {
        u16::from_le_bytes([self.bytes[off as usize], self.bytes[off as usize + 1]])
    }

    /// The command register.
    pub fn command(&self) -> u16 {
        self.u16_at(COMMAND)
    }

    /// Whether memory space (BAR access) is enabled.
    pub fn memory_enabled(&self) -> bool {
        self.command() & COMMAND_MEMORY != 0
    }

    /// Whether the function may master the bus (DMA).
    pub fn bus_master(&self) -> bool {
        self.command() & COMMAND_MASTER != 0
    }

    /// PCIe Device Control.
    pub fn devctl(&self) -> u16 {
        self.u16_at(EXP_CAP + EXP_DEVCTL)
    }

    /// Whether Device Control enables relaxed ordering.
    pub fn relaxed_ordering(&self) -> bool {
        self.devctl() & DEVCTL_RELAX_EN != 0
    }

    /// Bus address programmed into BAR `bar` (0, 2 or 4), type bits removed.
    pub fn bar_address(&self, bar: u8) -> u64 {
        let reg = (BAR0_REG + 4 * bar as u16) as usize;
        let mut b = [0u8; 8];
        b.copy_from_slice(&self.bytes[reg..reg + 8]);
        u64::from_le_bytes(b) & !0xf
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r32(cs: &ConfigSpace, off: u16) -> u32 {
        let mut b = [0; 4];
        cs.read(off, &mut b);
        u32::from_le_bytes(b)
    }

    #[test]
    fn identity_and_class_are_a_bcm57608() {
        let cs = ConfigSpace::new(1);
        assert_eq!(r32(&cs, 0), 0x1760_14e4);
        assert_eq!(r32(&cs, 0x08) >> 8, 0x02_0000);
        assert_eq!(r32(&cs, 0x2c), 0x1760_14e4);
    }

    #[test]
    fn bar_sizing_reads_back_the_size_mask() {
        let mut cs = ConfigSpace::new(1);
        for (bar, size) in BAR_SIZES {
            let reg = BAR0_REG + 4 * bar as u16;
            cs.write(reg, &u32::MAX.to_le_bytes());
            cs.write(reg + 4, &u32::MAX.to_le_bytes());
            let lo = r32(&cs, reg);
            let hi = r32(&cs, reg + 4);
            let mask = (u64::from(hi) << 32) | u64::from(lo & !0xf);
            assert_eq!(lo & 0xf, 0xc, "64-bit prefetchable");
            assert_eq!((!mask).wrapping_add(1), size, "BAR{bar}");
        }
    }

    #[test]
    fn read_only_bits_ignore_writes_and_flr_bit_reads_zero() {
        let mut cs = ConfigSpace::new(1);
        cs.write(0, &[0, 0, 0, 0]);
        assert_eq!(r32(&cs, 0), 0x1760_14e4);
        let fx = cs.write(EXP_CAP + EXP_DEVCTL, &(DEVCTL_BCR_FLR | DEVCTL_RESET).to_le_bytes());
        assert!(fx.flr);
        assert_eq!(cs.devctl() & DEVCTL_BCR_FLR, 0);
        let fx = cs.write(EXP_CAP + EXP_DEVCTL, &(DEVCTL_RESET & !DEVCTL_RELAX_EN).to_le_bytes());
        assert!(fx.relaxed_ordering_changed && !fx.flr);
        assert!(!cs.relaxed_ordering());
        cs.reset();
        assert!(cs.relaxed_ordering());
    }

    #[test]
    fn vpd_is_read_four_bytes_at_a_time_through_the_capability_and_writes_are_refused() {
        let mut cs = ConfigSpace::new(0x0257_60ff_fe80_0001);
        // The capability list reaches the VPD capability after the PCI Express one.
        let mut b = [0u8; 1];
        cs.read(EXP_CAP + 1, &mut b);
        assert_eq!(u16::from(b[0]), VPD_CAP);
        cs.read(VPD_CAP, &mut b);
        assert_eq!(b[0], CAP_ID_VPD);
        // Read the whole image as Linux's pci_vpd_read does: address with F clear, wait for F,
        // take the data register.
        let want = crate::vpd::image(0x0257_60ff_fe80_0001);
        let mut got = Vec::new();
        for addr in (0..want.len() as u16).step_by(4) {
            cs.write(VPD_CAP + 2, &addr.to_le_bytes());
            let reg = r32(&cs, VPD_CAP) >> 16;
            assert_eq!(reg as u16, addr | VPD_ADDR_F, "F set once the read is done");
            got.extend(r32(&cs, VPD_CAP + 4).to_le_bytes());
        }
        assert_eq!(&got[..want.len()], &want[..]);
        // A write (F set) changes nothing and completes with F clear.
        cs.write(VPD_CAP + 4, &0xdead_beefu32.to_le_bytes());
        cs.write(VPD_CAP + 2, &VPD_ADDR_F.to_le_bytes());
        assert_eq!((r32(&cs, VPD_CAP) >> 16) as u16, 0);
        cs.write(VPD_CAP + 2, &0u16.to_le_bytes());
        assert_eq!(r32(&cs, VPD_CAP + 4).to_le_bytes(), want[..4]);
    }
}
