//! The BCM57608 functions of a Linux machine, as sysfs lists them: each directory under
//! `/sys/bus/pci/devices` is a function named by its bus address (`DDDD:BB:DD.F`), with its
//! `vendor` and `device` ids as hexadecimal text (`0x14e4`, `0x1760`) and, when a driver holds it,
//! a `driver` link whose target's name is the driver's (Linux Documentation/ABI/testing/sysfs-bus-pci).
//!
//! This is the machine [`crate::nic::buses`] and [`crate::nic::count`] read on real hardware. It
//! lists functions whichever driver holds each, as the contract says. It takes a function through
//! the kernel's VFIO ([`crate::vfio`]): the function must be bound to vfio-pci first
//! ([`crate::binding::detach`]) and sit in an IOMMU group (its `iommu_group` link), which is opened
//! under `/dev/vfio`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, Weak};

use bnxt_hsi::pci::{DEVICE_ID_57608, VENDOR_ID};

use crate::held::HeldSet;
use crate::vfio::{Container, ContainerError, VfioFunction};
use bnxt_pci::{Machine, PciError, PciFunction};

/// Where Linux lists PCI functions.
pub const SYSFS_PCI_DEVICES: &str = "/sys/bus/pci/devices";

/// Where Linux puts VFIO's container and group files.
pub const DEV_VFIO: &str = "/dev/vfio";

/// The driver a function must be bound to for this process to take it.
pub const VFIO_PCI: &str = "vfio-pci";

/// The machine's functions as a sysfs tree lists them.
#[derive(Debug, Clone)]
pub struct SysfsMachine {
    root: PathBuf,
    dev_vfio: PathBuf,
    held: HeldSet,
    // Groups open in this process, by group number: functions of one group share its container.
    groups: Arc<Mutex<HashMap<String, Weak<Container>>>>,
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
        SysfsMachine::with_paths(root, DEV_VFIO)
    }

    /// The functions listed under `root`, taken through the VFIO files under `dev_vfio`.
    pub fn with_paths(root: impl Into<PathBuf>, dev_vfio: impl Into<PathBuf>) -> SysfsMachine {
        SysfsMachine {
            root: root.into(),
            dev_vfio: dev_vfio.into(),
            held: HeldSet::default(),
            groups: Arc::new(Mutex::new(HashMap::new())),
        }
    }

    /// The folder the functions are listed in.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Whether this process holds the function at `bus`.
    pub fn is_held(&self, bus: &str) -> bool {
        self.held.is_held(bus)
    }

    /// The IOMMU group of the function at `bus` (the name of its `iommu_group` link's target).
    pub fn iommu_group(&self, bus: &str) -> Option<String> {
        let target = std::fs::read_link(self.root.join(bus).join("iommu_group")).ok()?;
        target.file_name().and_then(|n| n.to_str()).map(str::to_owned)
    }

    /// The group's container, opened once per process.
    fn container(&self, bus: &str, group: &str) -> Result<Arc<Container>, PciError> {
        let mut groups = self.groups.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(c) = groups.get(group).and_then(Weak::upgrade) {
            return Ok(c);
        }
        let c = Container::open(&self.dev_vfio, group).map_err(|e| match e {
            ContainerError::Busy { path } => PciError::Busy {
                bus: bus.to_string(),
                holder: format!("another process ({} is open there)", path.display()),
            },
            other => PciError::Take { bus: bus.to_string(), reason: other.to_string() },
        })?;
        groups.insert(group.to_string(), Arc::downgrade(&c));
        Ok(c)
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

    /// Take the function through VFIO. It must be one of the machine's BCM57608 functions, bound
    /// to vfio-pci, in an IOMMU group no other process has open.
    fn take(&self, bus: &str) -> Result<Arc<dyn PciFunction>, PciError> {
        let refuse = |reason: String| PciError::Take { bus: bus.to_string(), reason };
        let function = self
            .functions()?
            .into_iter()
            .find(|f| f.bus == bus)
            .ok_or_else(|| refuse(format!("no BCM57608 function at {bus} under {}", self.root.display())))?;
        match function.driver.as_deref() {
            Some(VFIO_PCI) => {}
            Some(other) => return Err(refuse(format!("it is bound to {other}, not {VFIO_PCI}: detach it first"))),
            None => return Err(refuse(format!("it is bound to no driver, not {VFIO_PCI}: detach it first"))),
        }
        let group = self.iommu_group(bus).ok_or_else(|| {
            refuse(
                "it has no IOMMU group: the kernel runs without an IOMMU (boot with intel_iommu=on or amd_iommu=on)"
                    .into(),
            )
        })?;
        let guard = self
            .held
            .hold(bus)
            .ok_or_else(|| PciError::Busy { bus: bus.to_string(), holder: "this process".into() })?;
        let container = self.container(bus, &group)?;
        Ok(Arc::new(VfioFunction::open(container, bus, guard)?))
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

    /// What `take` says of `bus` on `m` (which must refuse it).
    fn refusal(m: &SysfsMachine, bus: &str) -> String {
        match m.take(bus) {
            Err(e) => e.to_string(),
            Ok(_) => panic!("{bus} was taken"),
        }
    }

    #[test]
    fn a_function_is_taken_only_bound_to_vfio_pci_in_an_iommu_group_with_vfio_present() {
        let t = tempfile::tempdir().unwrap();
        function(t.path(), "0000:41:00.0", "0x14e4", "0x1760", Some("bnxt_en"));
        function(t.path(), "0000:42:00.0", "0x14e4", "0x1760", None);
        function(t.path(), "0000:43:00.0", "0x14e4", "0x1760", Some("vfio-pci"));
        let m = SysfsMachine::with_paths(t.path(), t.path().join("dev-vfio"));
        let e = refusal(&m, "0000:41:00.0");
        assert!(e.contains("0000:41:00.0") && e.contains("bound to bnxt_en") && e.contains("detach"), "{e}");
        let e = refusal(&m, "0000:42:00.0");
        assert!(e.contains("bound to no driver"), "{e}");
        let e = refusal(&m, "0000:43:00.0");
        assert!(e.contains("no IOMMU group"), "{e}");
        let e = refusal(&m, "0000:99:00.0");
        assert!(e.contains("no BCM57608 function"), "{e}");
        // In a group, but with no VFIO files where the machine looks: the open names the file.
        std::fs::create_dir_all(t.path().join("groups/7")).unwrap();
        std::os::unix::fs::symlink(t.path().join("groups/7"), t.path().join("0000:43:00.0/iommu_group")).unwrap();
        assert_eq!(m.iommu_group("0000:43:00.0").as_deref(), Some("7"));
        let e = refusal(&m, "0000:43:00.0");
        assert!(e.contains("dev-vfio/vfio"), "{e}");
        assert!(!m.is_held("0000:43:00.0"), "a failed take holds nothing");
        // Opening NIC 0 of that machine fails with the reason, naming the NIC.
        let e = crate::Nic::open(&m, 0).unwrap_err().to_string();
        assert!(e.starts_with("BNXT") && e.contains("bnxt_en"), "{e}");
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
