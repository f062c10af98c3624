//! Following the guest's configuration-space writes to learn where the traced functions' BARs
//! are: the legacy mechanism (a 32-bit address at I/O port 0xCF8, then the data at 0xCFC–0xCFF;
//! PCI Local Bus spec 3.0 §3.2.2.3.2, what SeaBIOS and Linux's x86 `pci_conf1` use for the first
//! 256 bytes) and the memory-mapped one (ECAM: bus << 20 | device << 15 | function << 12 |
//! register; PCI Express base spec §7.2.2).
//!
//! Only writes are followed: the base a BAR holds is the last address written to it that is not
//! the all-ones pattern of BAR sizing (software writes all ones, reads the size mask back, and
//! restores the address).

/// The configuration address port (`PCI_CONF1_ADDRESS` in Linux's arch/x86/pci/direct.c).
pub const CONFIG_ADDRESS: u16 = 0xcf8;
/// The first configuration data port.
pub const CONFIG_DATA: u16 = 0xcfc;
/// Size of the ECAM window of one segment of 256 buses.
pub const ECAM_SIZE: u64 = 256 << 20;
/// Offset of BAR 0 in a type-0 header.
const BAR0_REG: u16 = 0x10;
/// The command register.
const COMMAND_REG: u16 = 0x04;
/// Command register: memory space enable.
const COMMAND_MEMORY: u32 = 0x2;
/// Command register: bus master enable.
const COMMAND_MASTER: u32 = 0x4;

/// A configuration-space write to one function.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConfigWrite {
    /// Bus, device, function.
    pub bdf: (u8, u8, u8),
    /// Register offset.
    pub reg: u16,
    /// Bytes written (1, 2 or 4).
    pub size: u8,
    /// The value.
    pub value: u32,
}

/// The legacy mechanism's address latch.
#[derive(Debug, Default)]
pub struct PortDecoder {
    address: u32,
}

impl PortDecoder {
    /// An `out` of `size` bytes of `value` to `port`: the configuration write it makes, if any.
    pub fn out(&mut self, port: u16, size: u8, value: u32) -> Option<ConfigWrite> {
        if port == CONFIG_ADDRESS && size == 4 {
            self.address = value;
            return None;
        }
        if !(CONFIG_DATA..CONFIG_DATA + 4).contains(&port) || self.address & 0x8000_0000 == 0 {
            return None;
        }
        let a = self.address;
        let bdf = ((a >> 16) as u8, ((a >> 11) & 0x1f) as u8, ((a >> 8) & 7) as u8);
        let reg = (a & 0xfc) as u16 + (port - CONFIG_DATA);
        Some(ConfigWrite { bdf, reg, size, value: value & mask(size) })
    }
}

fn mask(size: u8) -> u32 {
    match size {
        1 => 0xff,
        2 => 0xffff,
        _ => 0xffff_ffff,
    }
}

/// A store into the ECAM window at `offset` from its base.
pub fn ecam_write(offset: u64, size: u8, value: u64) -> Option<ConfigWrite> {
    if offset >= ECAM_SIZE || size > 4 {
        return None;
    }
    let bdf = ((offset >> 20) as u8, ((offset >> 15) & 0x1f) as u8, ((offset >> 12) & 7) as u8);
    Some(ConfigWrite { bdf, reg: (offset & 0xfff) as u16, size, value: value as u32 & mask(size) })
}

/// What a configuration write changed that a transcript names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConfigChange {
    /// A BAR now holds this base (or none: it is being sized or was cleared).
    Bar(u8, Option<u64>),
    /// The command register's memory-space and bus-master enables.
    Command {
        /// Memory space enable.
        memory: bool,
        /// Bus master enable.
        bus_master: bool,
    },
}

/// The BAR registers and command register of one function, as the guest wrote them.
#[derive(Debug, Clone, Default)]
pub struct FunctionConfig {
    regs: [u32; 6],
    written: [bool; 6],
    bases: [Option<u64>; 6],
    command: Option<(bool, bool)>,
}

impl FunctionConfig {
    /// A function whose BARs start at `preset` (from the plugin's arguments).
    pub fn with_bases(preset: [Option<u64>; 6]) -> FunctionConfig {
        FunctionConfig { bases: preset, ..FunctionConfig::default() }
    }

    /// The base of BAR `n`.
    pub fn base(&self, n: usize) -> Option<u64> {
        self.bases[n]
    }

    /// Apply a write to this function; what it changed. The function's BARs 0, 2 and 4 are
    /// 64-bit (the BCM57608's and the model's), each taking two registers.
    pub fn write(&mut self, w: &ConfigWrite) -> Vec<ConfigChange> {
        let mut changes = Vec::new();
        let end = w.reg + u16::from(w.size);
        if w.reg < COMMAND_REG + 2 && end > COMMAND_REG {
            let v = if w.reg == COMMAND_REG { w.value } else { 0 };
            let now = (v & COMMAND_MEMORY != 0, v & COMMAND_MASTER != 0);
            if w.reg == COMMAND_REG && self.command != Some(now) {
                self.command = Some(now);
                changes.push(ConfigChange::Command { memory: now.0, bus_master: now.1 });
            }
        }
        if w.reg >= BAR0_REG && w.reg < BAR0_REG + 24 {
            let i = usize::from((w.reg - BAR0_REG) / 4);
            let shift = 8 * u32::from((w.reg - BAR0_REG) % 4);
            let m = mask(w.size) << shift;
            self.regs[i] = (self.regs[i] & !m) | ((w.value << shift) & m);
            self.written[i] = true;
            let bar = i & !1;
            let (lo, hi) = (self.regs[bar], self.regs[bar + 1]);
            let sizing = lo | 0xf == 0xffff_ffff || hi == 0xffff_ffff;
            let base = if sizing || !self.written[bar] {
                None
            } else {
                Some(u64::from(hi) << 32 | u64::from(lo & !0xf)).filter(|b| *b != 0)
            };
            if base != self.bases[bar] {
                // The preset base stands until the guest writes an address of its own.
                if base.is_some() || self.written[bar] {
                    self.bases[bar] = base;
                    changes.push(ConfigChange::Bar(bar as u8, base));
                }
            }
        }
        changes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bars_are_learnt_through_sizing_and_restore() {
        let mut ports = PortDecoder::default();
        let mut f = FunctionConfig::default();
        let mut write = |ports: &mut PortDecoder, reg: u32, value: u32| {
            ports.out(CONFIG_ADDRESS, 4, 0x8000_0000 | (5 << 11) | reg);
            let w = ports.out(CONFIG_DATA, 4, value).unwrap();
            assert_eq!(w.bdf, (0, 5, 0));
            f.write(&w)
        };
        // Sizing, then the firmware's assignment of a 64-bit BAR 2.
        assert_eq!(write(&mut ports, 0x18, 0xffff_ffff), vec![]);
        write(&mut ports, 0x1c, 0xffff_ffff);
        write(&mut ports, 0x1c, 0x0000_0000);
        assert_eq!(write(&mut ports, 0x18, 0xfd00_000c), vec![ConfigChange::Bar(2, Some(0xfd00_0000))]);
        // Linux sizes it again and puts it back: no net change, but "being sized" in between.
        assert_eq!(write(&mut ports, 0x18, 0xffff_ffff), vec![ConfigChange::Bar(2, None)]);
        assert_eq!(write(&mut ports, 0x18, 0xfd00_000c), vec![ConfigChange::Bar(2, Some(0xfd00_0000))]);
        assert_eq!(write(&mut ports, 0x04, 0x0006), vec![ConfigChange::Command { memory: true, bus_master: true }]);
        assert_eq!(write(&mut ports, 0x04, 0x0006), vec![]);
        // Without the enable bit, the data port writes nothing.
        ports.out(CONFIG_ADDRESS, 4, 0x18);
        assert_eq!(ports.out(CONFIG_DATA, 4, 1), None);
    }

    #[test]
    fn ecam_offsets_name_the_function_and_register() {
        let w = ecam_write((1 << 20) | (6 << 15) | (2 << 12) | 0x10, 4, 0xfe00_0004).unwrap();
        assert_eq!((w.bdf, w.reg, w.value), ((1, 6, 2), 0x10, 0xfe00_0004));
        assert_eq!(ecam_write(ECAM_SIZE, 4, 0), None);
        let mut f = FunctionConfig::with_bases([Some(0x1000), None, None, None, None, None]);
        assert_eq!(f.base(0), Some(0x1000));
        // A 16-bit write to the upper half of BAR 0's low register.
        f.write(&ConfigWrite { bdf: (0, 0, 0), reg: 0x12, size: 2, value: 0xfe00 });
        assert_eq!(f.base(0), Some(0xfe00_0000));
    }
}
