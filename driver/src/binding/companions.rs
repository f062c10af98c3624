//! The functions a function cannot be moved without: those of the same PCI device (same domain,
//! bus and slot: a dual-port card's ports are functions 0 and 1 of one device) and those of the
//! same IOMMU group (VFIO hands out a group whole: every function in it must be bound to vfio-pci
//! or to no driver before any is usable, Linux Documentation/driver-api/vfio.rst, "Groups,
//! Devices, and IOMMUs"). Every vendor's function counts, whatever it is.

use std::path::Path;

use crate::sysfs::parse_bus_address;

/// Why a function goes with another.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tie {
    /// It is another function of the same device.
    Device,
    /// It is in the same IOMMU group (and not of the same device).
    Group,
}

/// A function tied to another.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Companion {
    /// Its bus address.
    pub bus: String,
    /// The driver holding it, if any.
    pub driver: Option<String>,
    /// Why it goes with the other.
    pub tie: Tie,
}

impl std::fmt::Display for Companion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let tie = match self.tie {
            Tie::Device => "same device",
            Tie::Group => "same IOMMU group",
        };
        write!(f, "{} ({}, {tie})", self.bus, self.driver.as_deref().unwrap_or("no driver"))
    }
}

/// The name of the target of `dir/link` (a driver's or group's folder), if it is a link.
pub(crate) fn link_name(dir: &Path, link: &str) -> Option<String> {
    let target = std::fs::read_link(dir.join(link)).ok()?;
    target.file_name().and_then(|n| n.to_str()).map(str::to_owned)
}

/// The functions listed under `root` (a `/sys/bus/pci/devices`) tied to `bus`, in name order;
/// `bus` itself is not among them. A tree that cannot be read has none.
pub fn companions(root: &Path, bus: &str) -> Vec<Companion> {
    let Some((d, b, s, _)) = parse_bus_address(bus) else { return Vec::new() };
    let group = link_name(&root.join(bus), "iommu_group");
    let Ok(entries) = std::fs::read_dir(root) else { return Vec::new() };
    let mut out = Vec::new();
    for entry in entries.flatten() {
        let Some(name) = entry.file_name().to_str().map(str::to_owned) else { continue };
        let Some((d2, b2, s2, _)) = parse_bus_address(&name) else { continue };
        if name == bus {
            continue;
        }
        let tie = if (d2, b2, s2) == (d, b, s) {
            Tie::Device
        } else if group.is_some() && link_name(&entry.path(), "iommu_group") == group {
            Tie::Group
        } else {
            continue;
        };
        out.push(Companion { bus: name, driver: link_name(&entry.path(), "driver"), tie });
    }
    out.sort_by(|a, b| a.bus.cmp(&b.bus));
    out
}
