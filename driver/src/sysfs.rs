//! The BCM57608 functions of a Linux machine, as sysfs lists them: each directory under
//! `/sys/bus/pci/devices` is a function named by its bus address (`DDDD:BB:DD.F`), with its
//! `vendor` and `device` ids as hexadecimal text (`0x14e4`, `0x1760`) and, when a driver holds it,
//! a `driver` link whose target's name is the driver's (Linux Documentation/ABI/testing/sysfs-bus-pci).
//!
//! This is the machine [`crate::nic::buses`] and [`crate::nic::count`] read on real hardware. It
//! lists functions whichever driver holds each, as the contract says. Taking a function needs a
//! VFIO backend, which is not written yet: [`Machine::take`] says so.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use bnxt_hsi::pci::{DEVICE_ID_57608, VENDOR_ID};

use crate::pci::{Machine, PciError, PciFunction};

/// Where Linux lists PCI functions.
pub const SYSFS_PCI_DEVICES: &str = "/sys/bus/pci/devices";

/// The machine's functions as a sysfs tree lists them.
#[derive(Debug, Clone)]
pub struct SysfsMachine {
    root: PathBuf,
}

/// One BCM57608 function as sysfs shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SysfsFunction {
    /// Its bus address (`0000:41:00.0`).
    pub bus: String,
    /// The driver that holds it (`bnxt_en`, `vfio-pci`), if any.
    pub driver: Option<String>,
}

impl SysfsMachine {
    /// The running machine's functions ([`SYSFS_PCI_DEVICES`]).
    pub fn new() -> SysfsMachine {
        SysfsMachine::with_root(SYSFS_PCI_DEVICES)
    }

    /// The functions listed under `root`, a folder laid out as `/sys/bus/pci/devices` is (for
    /// tests, or a copy of another machine's tree).
    pub fn with_root(root: impl Into<PathBuf>) -> SysfsMachine {
        SysfsMachine { root: root.into() }
    }

    /// The BCM57608 functions, in bus order, with the driver holding each.
    ///
    /// # Errors
    ///
    /// [`PciError::List`] naming the folder or file that could not be read.
    pub fn functions(&self) -> Result<Vec<SysfsFunction>, PciError> {
        let list_error = |what: &Path, e: std::io::Error| PciError::List(format!("{}: {e}", what.display()));
        let entries = std::fs::read_dir(&self.root).map_err(|e| list_error(&self.root, e))?;
        let mut out = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|e| list_error(&self.root, e))?;
            let dir = entry.path();
            let Some(bus) = entry.file_name().to_str().map(str::to_owned) else { continue };
            let Some(address) = parse_bus_address(&bus) else { continue };
            if read_id(&dir.join("vendor"))? != Some(VENDOR_ID)
                || read_id(&dir.join("device"))? != Some(DEVICE_ID_57608)
            {
                continue;
            }
            let driver = std::fs::read_link(dir.join("driver"))
                .ok()
                .and_then(|t| t.file_name().and_then(|n| n.to_str()).map(str::to_owned));
            out.push((address, SysfsFunction { bus, driver }));
        }
        out.sort_by_key(|(address, _)| *address);
        Ok(out.into_iter().map(|(_, f)| f).collect())
    }
}

impl Default for SysfsMachine {
    fn default() -> SysfsMachine {
        SysfsMachine::new()
    }
}

impl Machine for SysfsMachine {
    fn buses(&self) -> Result<Vec<String>, PciError> {
        Ok(self.functions()?.into_iter().map(|f| f.bus).collect())
    }

    fn take(&self, bus: &str) -> Result<Arc<dyn PciFunction>, PciError> {
        Err(PciError::Take {
            bus: bus.to_owned(),
            reason: "taking a function of a real machine needs the VFIO backend, which is not written yet \
                     (the model and vfio-user targets can be taken)"
                .to_owned(),
        })
    }
}

/// A PCI bus address as Linux writes it, `DDDD:BB:DD.F` in hexadecimal (the domain may have more
/// than four digits, as VMD domains do: `10000:e1:00.0`), as (domain, bus, device, function) in
/// bus order; `None` if `text` is not one.
pub fn parse_bus_address(text: &str) -> Option<(u32, u8, u8, u8)> {
    let (domain, rest) = text.split_once(':')?;
    let (bus, rest) = rest.split_once(':')?;
    let (device, function) = rest.split_once('.')?;
    let hex = |s: &str, digits: std::ops::RangeInclusive<usize>| {
        (digits.contains(&s.len()) && s.bytes().all(|c| c.is_ascii_hexdigit()))
            .then(|| u32::from_str_radix(s, 16).ok())?
    };
    let (d, b, dev, f) = (hex(domain, 4..=8)?, hex(bus, 2..=2)?, hex(device, 2..=2)?, hex(function, 1..=1)?);
    (dev < 0x20 && f < 8).then_some((d, b as u8, dev as u8, f as u8))
}

/// A `vendor` or `device` file's id (`0x14e4\n`); `None` when the file is missing (not a
/// function's folder).
fn read_id(path: &Path) -> Result<Option<u16>, PciError> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(PciError::List(format!("{}: {e}", path.display()))),
    };
    let t = text.trim();
    let hex = t.strip_prefix("0x").unwrap_or(t);
    u16::from_str_radix(hex, 16)
        .map(Some)
        .map_err(|_| PciError::List(format!("{}: {t:?} is not an id", path.display())))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A function folder under `root` with `vendor`, `device` and optionally a `driver` link.
    fn function(root: &Path, bus: &str, vendor: &str, device: &str, driver: Option<&str>) {
        let dir = root.join(bus);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("vendor"), format!("{vendor}\n")).unwrap();
        std::fs::write(dir.join("device"), format!("{device}\n")).unwrap();
        if let Some(d) = driver {
            let target = root.join("drivers").join(d);
            std::fs::create_dir_all(&target).unwrap();
            std::os::unix::fs::symlink(&target, dir.join("driver")).unwrap();
        }
    }

    #[test]
    fn bcm57608_functions_are_listed_in_bus_order_with_their_drivers() {
        let t = tempfile::tempdir().unwrap();
        function(t.path(), "0000:c1:00.1", "0x14e4", "0x1760", None);
        function(t.path(), "0000:41:00.0", "0x14e4", "0x1760", Some("bnxt_en"));
        function(t.path(), "0000:41:00.1", "0x14e4", "0x1750", Some("bnxt_en"));
        function(t.path(), "0000:00:1f.0", "0x8086", "0x1760", None);
        function(t.path(), "0000:c1:00.0", "0x14e4", "0x1760", Some("vfio-pci"));
        std::fs::create_dir_all(t.path().join("not-a-function")).unwrap();
        let m = SysfsMachine::with_root(t.path());
        let f = m.functions().unwrap();
        let expect = [("0000:41:00.0", Some("bnxt_en")), ("0000:c1:00.0", Some("vfio-pci")), ("0000:c1:00.1", None)];
        let got: Vec<(&str, Option<&str>)> = f.iter().map(|f| (f.bus.as_str(), f.driver.as_deref())).collect();
        assert_eq!(got, expect);
        assert_eq!(crate::nic::count(&m).unwrap(), 3);
        assert_eq!(crate::nic::buses(&m).unwrap()[2], "0000:c1:00.1");
    }

    #[test]
    fn an_unreadable_tree_or_a_bad_id_is_an_error_naming_the_path() {
        let t = tempfile::tempdir().unwrap();
        let missing = SysfsMachine::with_root(t.path().join("nowhere"));
        let e = missing.buses().unwrap_err().to_string();
        assert!(e.contains("nowhere"), "{e}");
        function(t.path(), "0000:41:00.0", "0x14e4", "bogus", None);
        let e = SysfsMachine::with_root(t.path()).buses().unwrap_err().to_string();
        assert!(e.contains("0000:41:00.0/device") && e.contains("bogus"), "{e}");
    }

    #[test]
    fn taking_a_function_says_the_vfio_backend_is_missing() {
        let t = tempfile::tempdir().unwrap();
        function(t.path(), "0000:41:00.0", "0x14e4", "0x1760", None);
        let m = SysfsMachine::with_root(t.path());
        let e = match m.take("0000:41:00.0") {
            Err(e) => e.to_string(),
            Ok(_) => panic!("a real function was taken without a VFIO backend"),
        };
        assert!(e.contains("0000:41:00.0") && e.contains("VFIO"), "{e}");
        // Opening NIC 0 of that machine fails with the same reason, naming the NIC.
        let e = crate::Nic::open(&m, 0).unwrap_err().to_string();
        assert!(e.contains("BNXT") && e.contains("VFIO"), "{e}");
    }

    #[test]
    fn bus_addresses_are_recognised() {
        assert_eq!(parse_bus_address("0000:41:00.0"), Some((0, 0x41, 0, 0)));
        assert_eq!(parse_bus_address("abcd:ef:1f.7"), Some((0xabcd, 0xef, 0x1f, 7)));
        assert_eq!(parse_bus_address("10000:e1:00.1"), Some((0x10000, 0xe1, 0, 1)));
        for bad in ["0000:41:00", "pci0000:00", "0000:4g:00.0", "0000:41:20.0", "0000:41:00.8", "000:41:00.0"] {
            assert_eq!(parse_bus_address(bad), None, "{bad}");
        }
    }

    #[test]
    fn a_vmd_domain_sorts_after_the_usual_one_and_symlinked_entries_count() {
        let t = tempfile::tempdir().unwrap();
        let real = t.path().join("devices-real");
        function(&real, "10000:01:00.0", "0x14e4", "0x1760", None);
        function(&real, "0000:c1:00.0", "0x14e4", "0x1760", None);
        // /sys/bus/pci/devices holds symlinks to the functions' folders.
        let listed = t.path().join("devices");
        std::fs::create_dir_all(&listed).unwrap();
        for bus in ["10000:01:00.0", "0000:c1:00.0"] {
            std::os::unix::fs::symlink(real.join(bus), listed.join(bus)).unwrap();
        }
        let buses = SysfsMachine::with_root(&listed).buses().unwrap();
        assert_eq!(buses, ["0000:c1:00.0", "10000:01:00.0"]);
    }
}
