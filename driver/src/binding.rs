//! Moving a function between its kernel driver and vfio-pci: the contract's `detach` and `attach`
//! ("Changes to the machine"). Both write sysfs files (Linux Documentation/ABI/testing/sysfs-bus-pci:
//! `driver_override`, `driver/unbind`, and `/sys/bus/pci/drivers_probe`), so they need
//! CAP_SYS_ADMIN and persist after the process. Both refuse a function a process holds (this one
//! through its machine; another one when it has the function's VFIO group open).

use std::path::{Path, PathBuf};

use crate::sysfs::{SysfsFunction, SysfsMachine, VFIO_PCI, parse_bus_address};

/// Why a function could not be detached or attached.
#[derive(Debug, thiserror::Error)]
pub enum BindError {
    /// The machine's functions could not be listed.
    #[error(transparent)]
    List(#[from] crate::PciError),
    /// There is no NIC with this index.
    #[error("no NIC {index} (the machine has {count})")]
    NoSuchNic {
        /// The index asked for.
        index: usize,
        /// How many there are.
        count: usize,
    },
    /// A process holds the function.
    #[error("{bus} is held by {holder}")]
    Held {
        /// The function.
        bus: String,
        /// Who holds it.
        holder: String,
    },
    /// Other functions of the same device are bound to kernel drivers (a function taken through
    /// VFIO must be alone on its device).
    #[error("{bus} shares its device with functions bound to kernel drivers: {}", .others.join(", "))]
    Siblings {
        /// The function.
        bus: String,
        /// The others, as `BUS (driver)`.
        others: Vec<String>,
    },
    /// vfio-pci is not loaded.
    #[error("vfio-pci is not loaded ({} is missing): modprobe vfio-pci", .0.display())]
    NoVfioPci(PathBuf),
    /// A sysfs file could not be written.
    #[error("write {text:?} to {}: {source}", .path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// What was written.
        text: String,
        /// Why it failed.
        source: std::io::Error,
    },
    /// The kernel bound the function elsewhere than asked.
    #[error("{bus} is bound to {}, not {want}, after the kernel probed it", .now.as_deref().unwrap_or("no driver"))]
    NotBound {
        /// The function.
        bus: String,
        /// The driver it should have.
        want: String,
        /// The driver it has.
        now: Option<String>,
    },
}

/// What a detach did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Detached {
    /// The function.
    pub bus: String,
    /// The driver it was taken from (`None`: it had none, or already had vfio-pci).
    pub from: Option<String>,
}

fn write(path: &Path, text: &str) -> Result<(), BindError> {
    std::fs::write(path, text).map_err(|source| BindError::Write { path: path.into(), text: text.into(), source })
}

/// NIC `index` of `machine`.
fn nic(machine: &SysfsMachine, index: usize) -> Result<SysfsFunction, BindError> {
    let functions = machine.functions()?;
    let count = functions.len();
    functions.into_iter().nth(index).ok_or(BindError::NoSuchNic { index, count })
}

/// Refuse a function a process holds: this one (through `machine`), or another with the
/// function's VFIO group open.
fn refuse_held(machine: &SysfsMachine, bus: &str) -> Result<(), BindError> {
    if machine.is_held(bus) {
        return Err(BindError::Held { bus: bus.into(), holder: "this process".into() });
    }
    if let Some(group) = machine.iommu_group(bus) {
        let pids = group_holders(Path::new("/proc"), &group);
        if !pids.is_empty() {
            let list: Vec<String> = pids.iter().map(u32::to_string).collect();
            return Err(BindError::Held { bus: bus.into(), holder: format!("process {}", list.join(", ")) });
        }
    }
    Ok(())
}

/// The processes under `proc` with `/dev/vfio/GROUP` open.
pub fn group_holders(proc: &Path, group: &str) -> Vec<u32> {
    let want = Path::new(crate::sysfs::DEV_VFIO).join(group);
    let Ok(entries) = std::fs::read_dir(proc) else { return Vec::new() };
    let mut pids = Vec::new();
    for entry in entries.flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else { continue };
        let Ok(fds) = std::fs::read_dir(entry.path().join("fd")) else { continue };
        if fds.flatten().any(|fd| std::fs::read_link(fd.path()).is_ok_and(|t| t == want)) {
            pids.push(pid);
        }
    }
    pids.sort_unstable();
    pids
}

/// The other functions of `bus`'s device (same domain, bus and slot) that kernel drivers other
/// than vfio-pci hold, as `BUS (driver)`. Every vendor's function counts: it is listed under
/// `root` whatever it is.
fn busy_siblings(root: &Path, bus: &str) -> Vec<String> {
    let Some((d, b, s, _)) = parse_bus_address(bus) else { return Vec::new() };
    let Ok(entries) = std::fs::read_dir(root) else { return Vec::new() };
    let mut out = Vec::new();
    for entry in entries.flatten() {
        let Some(name) = entry.file_name().to_str().map(str::to_owned) else { continue };
        match parse_bus_address(&name) {
            Some((d2, b2, s2, _)) if (d2, b2, s2) == (d, b, s) && name != bus => {}
            _ => continue,
        }
        let driver = std::fs::read_link(entry.path().join("driver"))
            .ok()
            .and_then(|t| t.file_name().and_then(|n| n.to_str()).map(str::to_owned));
        if let Some(driver) = driver.filter(|d| d != VFIO_PCI) {
            out.push(format!("{name} ({driver})"));
        }
    }
    out.sort();
    out
}

fn driver_of(root: &Path, bus: &str) -> Option<String> {
    std::fs::read_link(root.join(bus).join("driver"))
        .ok()
        .and_then(|t| t.file_name().and_then(|n| n.to_str()).map(str::to_owned))
}

/// The folder of `/sys/bus/pci` (the parent of the devices folder).
fn bus_dir(machine: &SysfsMachine) -> PathBuf {
    machine.root().parent().map(Path::to_path_buf).unwrap_or_else(|| PathBuf::from("/sys/bus/pci"))
}

/// Take NIC `index` of `machine` from its kernel driver and bind it to vfio-pci, so that a
/// process can open it. Nothing is written when it already is bound to vfio-pci.
///
/// # Errors
///
/// When the machine cannot be listed, there is no such NIC, a process holds it, other functions
/// of its device are bound to kernel drivers, vfio-pci is not loaded, a sysfs file cannot be
/// written, or the kernel bound it elsewhere.
pub fn detach(machine: &SysfsMachine, index: usize) -> Result<Detached, BindError> {
    let f = nic(machine, index)?;
    refuse_held(machine, &f.bus)?;
    if f.driver.as_deref() == Some(VFIO_PCI) {
        return Ok(Detached { bus: f.bus, from: None });
    }
    let root = machine.root();
    let others = busy_siblings(root, &f.bus);
    if !others.is_empty() {
        return Err(BindError::Siblings { bus: f.bus, others });
    }
    let pci = bus_dir(machine);
    let vfio_pci = pci.join("drivers").join(VFIO_PCI);
    if !vfio_pci.is_dir() {
        return Err(BindError::NoVfioPci(vfio_pci));
    }
    write(&root.join(&f.bus).join("driver_override"), VFIO_PCI)?;
    if f.driver.is_some() {
        write(&root.join(&f.bus).join("driver").join("unbind"), &f.bus)?;
    }
    write(&pci.join("drivers_probe"), &f.bus)?;
    let now = driver_of(root, &f.bus);
    if now.as_deref() != Some(VFIO_PCI) {
        return Err(BindError::NotBound { bus: f.bus, want: VFIO_PCI.into(), now });
    }
    Ok(Detached { bus: f.bus, from: f.driver })
}

/// Give NIC `index` of `machine` back to the kernel: clear its driver override, unbind it from
/// vfio-pci and let the kernel probe it (bnxt_en takes it where it is loaded). Returns the driver
/// it is bound to afterwards.
///
/// # Errors
///
/// When the machine cannot be listed, there is no such NIC, a process holds it, or a sysfs file
/// cannot be written.
pub fn attach(machine: &SysfsMachine, index: usize) -> Result<Option<String>, BindError> {
    let f = nic(machine, index)?;
    refuse_held(machine, &f.bus)?;
    let root = machine.root();
    // An empty line clears the override (sysfs-bus-pci, driver_override).
    write(&root.join(&f.bus).join("driver_override"), "\n")?;
    if f.driver.as_deref() == Some(VFIO_PCI) {
        write(&root.join(&f.bus).join("driver").join("unbind"), &f.bus)?;
        write(&bus_dir(machine).join("drivers_probe"), &f.bus)?;
    }
    Ok(driver_of(root, &f.bus))
}

#[cfg(test)]
mod tests;
