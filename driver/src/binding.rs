//! Moving a function between its kernel driver and vfio-pci: the contract's `detach` and `attach`
//! ("Changes to the machine"). Both write sysfs files (Linux Documentation/ABI/testing/sysfs-bus-pci:
//! `driver_override`, `driver/unbind`, and `/sys/bus/pci/drivers_probe`), so they need
//! CAP_SYS_ADMIN and persist after the process. Both refuse a function a process holds (this one
//! through its machine; another one when it has the function's VFIO group open).

use std::path::{Path, PathBuf};

mod companions;

pub use companions::{Companion, Tie, companions};

use crate::sysfs::{SysfsFunction, SysfsMachine, VFIO_PCI};

fn others_text(others: &[Companion]) -> String {
    others.iter().map(Companion::to_string).collect::<Vec<_>>().join(", ")
}

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
    /// Functions tied to this one (the same device, or the same IOMMU group) are bound to kernel
    /// drivers and are not being moved with it: VFIO takes a device's functions and a group whole.
    #[error("{bus} cannot go to vfio-pci without {}, still bound to kernel drivers: {hint}", others_text(.others))]
    Siblings {
        /// The function.
        bus: String,
        /// The others, with their drivers and why each goes with it.
        others: Vec<Companion>,
        /// What to do (the command).
        hint: String,
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

/// NICs `indices` of `machine` (each once, in the order given), with their indices.
fn nics(machine: &SysfsMachine, indices: &[usize]) -> Result<Vec<(usize, SysfsFunction)>, BindError> {
    let functions = machine.functions()?;
    let count = functions.len();
    let mut out: Vec<(usize, SysfsFunction)> = Vec::new();
    for &index in indices {
        let f = functions.get(index).cloned().ok_or(BindError::NoSuchNic { index, count })?;
        if !out.iter().any(|(i, _)| *i == index) {
            out.push((index, f));
        }
    }
    Ok(out)
}

/// NIC `index` and every other BCM57608 function of `machine` tied to it (the same device or
/// IOMMU group: a dual-port card's other port), as NIC indices in bus order.
///
/// # Errors
///
/// When the machine cannot be listed or there is no such NIC.
pub fn device_nics(machine: &SysfsMachine, index: usize) -> Result<Vec<usize>, BindError> {
    let functions = machine.functions()?;
    let count = functions.len();
    let f = functions.get(index).ok_or(BindError::NoSuchNic { index, count })?;
    let tied = companions(machine.root(), &f.bus);
    Ok(functions
        .iter()
        .enumerate()
        .filter(|(i, g)| *i == index || tied.iter().any(|c| c.bus == g.bus))
        .map(|(i, _)| i)
        .collect())
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

fn driver_of(root: &Path, bus: &str) -> Option<String> {
    companions::link_name(&root.join(bus), "driver")
}

/// The folder of `/sys/bus/pci` (the parent of the devices folder).
fn bus_dir(machine: &SysfsMachine) -> PathBuf {
    machine.root().parent().map(Path::to_path_buf).unwrap_or_else(|| PathBuf::from("/sys/bus/pci"))
}

/// Refuse to move `f` (NIC `index`) while a function tied to it that is not among `moving` is
/// bound to a kernel driver other than vfio-pci.
fn refuse_tied(
    machine: &SysfsMachine,
    index: usize,
    f: &SysfsFunction,
    moving: &[(usize, SysfsFunction)],
) -> Result<(), BindError> {
    let others: Vec<Companion> = companions(machine.root(), &f.bus)
        .into_iter()
        .filter(|c| !moving.iter().any(|(_, m)| m.bus == c.bus))
        .filter(|c| c.driver.as_deref().is_some_and(|d| d != VFIO_PCI))
        .collect();
    if others.is_empty() {
        return Ok(());
    }
    let nics = machine.functions()?;
    let hint = if others.iter().all(|c| nics.iter().any(|n| n.bus == c.bus)) {
        format!("detach them together: bnxt-rig detach --device {index}")
    } else {
        let foreign: Vec<String> = others
            .iter()
            .filter(|c| !nics.iter().any(|n| n.bus == c.bus))
            .map(|c| format!("echo {0} > /sys/bus/pci/devices/{0}/driver/unbind", c.bus))
            .collect();
        format!("unbind the functions that are not BCM57608s first ({})", foreign.join("; "))
    };
    Err(BindError::Siblings { bus: f.bus.clone(), others, hint })
}

/// Take NIC `index` of `machine` from its kernel driver and bind it to vfio-pci, so that a
/// process can open it. Nothing is written when it already is bound to vfio-pci. It is refused
/// while another function of its device or IOMMU group (a dual-port card's other port) is bound to
/// a kernel driver: [`detach_nics`] moves them together.
///
/// # Errors
///
/// As [`detach_nics`].
pub fn detach(machine: &SysfsMachine, index: usize) -> Result<Detached, BindError> {
    let mut done = detach_nics(machine, &[index])?;
    Ok(done.remove(0))
}

/// Take NICs `indices` of `machine` from their kernel drivers and bind them all to vfio-pci: every
/// override is written, then every function unbound, then each probed, so that the functions of
/// one device move together. Those already bound to vfio-pci are left as they are.
///
/// # Errors
///
/// When the machine cannot be listed, there is no such NIC, a process holds one, a function tied
/// to one (same device or IOMMU group) and not among them is bound to a kernel driver, vfio-pci is
/// not loaded, a sysfs file cannot be written, or the kernel bound one elsewhere. Nothing is
/// written when a check before the writes refuses.
pub fn detach_nics(machine: &SysfsMachine, indices: &[usize]) -> Result<Vec<Detached>, BindError> {
    let moving = nics(machine, indices)?;
    for (index, f) in &moving {
        refuse_held(machine, &f.bus)?;
        if f.driver.as_deref() != Some(VFIO_PCI) {
            refuse_tied(machine, *index, f, &moving)?;
        }
    }
    let to_move: Vec<&SysfsFunction> =
        moving.iter().map(|(_, f)| f).filter(|f| f.driver.as_deref() != Some(VFIO_PCI)).collect();
    let root = machine.root();
    let pci = bus_dir(machine);
    if !to_move.is_empty() {
        let vfio_pci = pci.join("drivers").join(VFIO_PCI);
        if !vfio_pci.is_dir() {
            return Err(BindError::NoVfioPci(vfio_pci));
        }
    }
    for f in &to_move {
        write(&root.join(&f.bus).join("driver_override"), VFIO_PCI)?;
    }
    for f in to_move.iter().filter(|f| f.driver.is_some()) {
        write(&root.join(&f.bus).join("driver").join("unbind"), &f.bus)?;
    }
    for f in &to_move {
        write(&pci.join("drivers_probe"), &f.bus)?;
    }
    for f in &to_move {
        let now = driver_of(root, &f.bus);
        if now.as_deref() != Some(VFIO_PCI) {
            return Err(BindError::NotBound { bus: f.bus.clone(), want: VFIO_PCI.into(), now });
        }
    }
    Ok(moving
        .into_iter()
        .map(|(_, f)| {
            let from = f.driver.filter(|d| d != VFIO_PCI);
            Detached { bus: f.bus, from }
        })
        .collect())
}

/// Give NIC `index` of `machine` back to the kernel: clear its driver override, unbind it from
/// vfio-pci and let the kernel probe it (bnxt_en takes it where it is loaded). Returns the driver
/// it is bound to afterwards.
///
/// # Errors
///
/// As [`attach_nics`].
pub fn attach(machine: &SysfsMachine, index: usize) -> Result<Option<String>, BindError> {
    let mut done = attach_nics(machine, &[index])?;
    Ok(done.remove(0).1)
}

/// Give NICs `indices` of `machine` back to the kernel together: every override cleared, then
/// every function unbound from vfio-pci, then each probed. Returns each function's bus address
/// and the driver it is bound to afterwards.
///
/// # Errors
///
/// When the machine cannot be listed, there is no such NIC, a process holds one, or a sysfs file
/// cannot be written. Nothing is written when a process holds one.
pub fn attach_nics(machine: &SysfsMachine, indices: &[usize]) -> Result<Vec<(String, Option<String>)>, BindError> {
    let moving = nics(machine, indices)?;
    for (_, f) in &moving {
        refuse_held(machine, &f.bus)?;
    }
    let root = machine.root();
    let pci = bus_dir(machine);
    for (_, f) in &moving {
        // An empty line clears the override (sysfs-bus-pci, driver_override).
        write(&root.join(&f.bus).join("driver_override"), "\n")?;
    }
    let held: Vec<&SysfsFunction> =
        moving.iter().map(|(_, f)| f).filter(|f| f.driver.as_deref() == Some(VFIO_PCI)).collect();
    for f in &held {
        write(&root.join(&f.bus).join("driver").join("unbind"), &f.bus)?;
    }
    for f in &held {
        write(&pci.join("drivers_probe"), &f.bus)?;
    }
    Ok(moving.into_iter().map(|(_, f)| (f.bus.clone(), driver_of(root, &f.bus))).collect())
}

#[cfg(test)]
mod tests;
