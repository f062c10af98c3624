//! A lab machine's preflight (`bnxt-rig doctor`): whether this machine can run the `vfio` target,
//! each finding with the command that fixes it. Everything is read from folders laid out as
//! `/sys`, `/proc` and `/dev/vfio` are, so that the checks run on fake trees in tests as
//! [`crate::sysfs::SysfsMachine`] does.
//!
//! What a run needs (docs/lab.md): an IOMMU the kernel uses (a function without an IOMMU group
//! cannot be taken, [`crate::sysfs`]); VFIO's type1 IOMMU in its v2 form (what
//! [`crate::vfio::Container`] asks for); vfio-pci loaded; every BCM57608 function to be opened bound
//! to vfio-pci with every function of its device and IOMMU group off kernel drivers
//! ([`crate::binding`]); enough locked memory for what the opens pin (`memlock`); and the right
//! to write the sysfs files `detach` and `attach` write.

mod memlock;
mod pinned;

use std::path::{Path, PathBuf};

pub use memlock::{Memlock, read_memlock};
pub use pinned::{Pinned, measure_open};

use crate::binding::{Tie, companions, group_holders};
use crate::sysfs::{SysfsMachine, VFIO_PCI};

/// How much a finding matters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    /// As a run needs it.
    Ok,
    /// Worth knowing; does not stop a run.
    Warn,
    /// A run cannot work until it is fixed.
    Block,
}

impl Level {
    /// The word the report prints.
    pub fn word(self) -> &'static str {
        match self {
            Level::Ok => "ok",
            Level::Warn => "warn",
            Level::Block => "BLOCK",
        }
    }
}

/// One thing found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// How much it matters.
    pub level: Level,
    /// What was found.
    pub what: String,
    /// The command (or action) that fixes it.
    pub fix: Option<String>,
}

impl Finding {
    fn ok(what: impl Into<String>) -> Finding {
        Finding { level: Level::Ok, what: what.into(), fix: None }
    }

    fn warn(what: impl Into<String>, fix: impl Into<String>) -> Finding {
        Finding { level: Level::Warn, what: what.into(), fix: Some(fix.into()) }
    }

    fn block(what: impl Into<String>, fix: impl Into<String>) -> Finding {
        Finding { level: Level::Block, what: what.into(), fix: Some(fix.into()) }
    }
}

/// Where the machine's trees are.
#[derive(Debug, Clone)]
pub struct Paths {
    /// `/sys`.
    pub sys: PathBuf,
    /// `/proc`.
    pub proc: PathBuf,
    /// `/dev/vfio`.
    pub dev_vfio: PathBuf,
}

impl Default for Paths {
    fn default() -> Paths {
        Paths { sys: "/sys".into(), proc: "/proc".into(), dev_vfio: crate::sysfs::DEV_VFIO.into() }
    }
}

impl Paths {
    /// The PCI functions' folder (`/sys/bus/pci/devices`).
    pub fn devices(&self) -> PathBuf {
        self.sys.join("bus/pci/devices")
    }

    /// The machine these paths show.
    pub fn machine(&self) -> SysfsMachine {
        SysfsMachine::with_paths(self.devices(), &self.dev_vfio)
    }
}

/// What one NIC's open pins, measured by opening one ([`measure_open`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenCost {
    /// Bytes of DMA memory the open allocated (context memory, rings, command buffers).
    pub bytes: u64,
    /// Of which context memory given to the firmware.
    pub context_bytes: u64,
    /// What was opened to measure it (`the model's NIC`, `nic0 0000:41:00.0`).
    pub measured_on: String,
}

/// The fewest DMA mappings the suite's largest scenario needs live at once is far below this;
/// `regions-10k` makes 10,000 regions one after another, and a lab that keeps regions registered
/// for a long run wants at least as many: below it, `doctor` warns.
pub const DMA_ENTRIES_WANTED: u64 = 10_000;

/// Whether any finding blocks a run.
pub fn blocks(findings: &[Finding]) -> bool {
    findings.iter().any(|f| f.level == Level::Block)
}

/// Every check, in the order a lab fixes them. `cost`: what one NIC's open pins, if measured.
pub fn check(paths: &Paths, cost: Option<&OpenCost>) -> Vec<Finding> {
    let mut out = Vec::new();
    let iommu_fix = iommu_fix(paths);
    out.extend(iommu(paths, &iommu_fix));
    out.extend(vfio(paths));
    out.push(if paths.sys.join("bus/pci/drivers").join(VFIO_PCI).is_dir() {
        Finding::ok("vfio-pci: loaded")
    } else {
        Finding::block("vfio-pci: not loaded", "modprobe vfio-pci")
    });
    let nics = nics(paths, &iommu_fix, &mut out);
    out.push(memlock::finding(&paths.proc, nics, cost));
    out
}

/// The fix for an IOMMU the kernel does not use, by the CPU's vendor (`/proc/cpuinfo`).
/// Linux Documentation/admin-guide/kernel-parameters.txt: `intel_iommu=on` turns Intel's VT-d
/// translation on where the kernel was built with it off by default; AMD's IOMMU is used whenever
/// the firmware describes it (IVRS) unless `amd_iommu=off` (there is no `amd_iommu=on`).
fn iommu_fix(paths: &Paths) -> String {
    let cpuinfo = std::fs::read_to_string(paths.proc.join("cpuinfo")).unwrap_or_default();
    let intel = "turn VT-d on in the firmware setup, add intel_iommu=on to the kernel command line \
                 (GRUB_CMDLINE_LINUX in /etc/default/grub, then update-grub) and reboot";
    let amd = "turn the IOMMU (AMD-Vi) on in the firmware setup, remove amd_iommu=off from the kernel \
               command line if it is there, and reboot";
    if cpuinfo.contains("GenuineIntel") {
        intel.into()
    } else if cpuinfo.contains("AuthenticAMD") {
        amd.into()
    } else {
        format!("Intel: {intel}; AMD: {amd}")
    }
}

/// The names of the entries of `dir`, sorted (none when it cannot be read).
fn entries(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|r| r.flatten().filter_map(|e| e.file_name().to_str().map(str::to_owned)).collect())
        .unwrap_or_default();
    names.sort();
    names
}

/// The IOMMU: units the kernel drives (`/sys/class/iommu`), groups it made
/// (`/sys/kernel/iommu_groups`), and the command line's words about it.
fn iommu(paths: &Paths, fix: &str) -> Vec<Finding> {
    let units = entries(&paths.sys.join("class/iommu"));
    let groups = entries(&paths.sys.join("kernel/iommu_groups")).len();
    let cmdline = std::fs::read_to_string(paths.proc.join("cmdline")).unwrap_or_default();
    let words: Vec<&str> = cmdline.split_whitespace().filter(|w| w.contains("iommu")).collect();
    let said = if words.is_empty() { "no iommu words".to_string() } else { words.join(" ") };
    let mut out = Vec::new();
    if units.is_empty() || groups == 0 {
        out.push(Finding::block(
            format!(
                "IOMMU: not in use ({} IOMMU units, {groups} IOMMU groups; kernel command line: {said})",
                units.len()
            ),
            fix,
        ));
    } else {
        out.push(Finding::ok(format!(
            "IOMMU: on ({}; {groups} groups; kernel command line: {said})",
            units.join(", ")
        )));
    }
    // iommu=pt gives the host's own drivers an identity domain; a group VFIO takes gets a
    // translated domain of its own all the same (Linux drivers/iommu/iommu.c, iommu_def_domain_type
    // applies to default domains only; vfio_iommu_type1 allocates its own).
    if words.contains(&"iommu=pt") {
        out.push(Finding::ok(
            "iommu=pt: the host's drivers bypass translation; VFIO's domains are translated all the same",
        ));
    }
    out
}

/// VFIO itself: type1 (v2) and its mapping limit.
fn vfio(paths: &Paths) -> Vec<Finding> {
    let mut out = Vec::new();
    let module = paths.sys.join("module/vfio_iommu_type1");
    let container = paths.dev_vfio.join("vfio");
    if !container.exists() {
        out.push(Finding::block(format!("VFIO: {} is missing", container.display()), "modprobe vfio vfio_iommu_type1"));
        return out;
    }
    if !module.is_dir() && !paths.sys.join("module/iommufd").is_dir() {
        out.push(Finding::block("VFIO: the type1 IOMMU driver is not loaded", "modprobe vfio_iommu_type1"));
        return out;
    }
    out.push(match type1v2(&container) {
        Ok(Some(true)) => Finding::ok(format!("VFIO: {} offers the type1v2 IOMMU", container.display())),
        Ok(Some(false)) => Finding::block(
            format!("VFIO: {} does not offer the type1v2 IOMMU (VFIO_CHECK_EXTENSION)", container.display()),
            "modprobe vfio_iommu_type1 (a kernel of 3.16 or later has it)",
        ),
        Ok(None) => {
            Finding::ok(format!("VFIO: {} present (not a character device: type1v2 not asked)", container.display()))
        }
        Err(e) => Finding::block(
            format!("VFIO: {} cannot be opened to ask for type1v2: {e}", container.display()),
            "run as root, or give this user /dev/vfio/vfio (it is usually 0666)",
        ),
    });
    let limit_file = module.join("parameters/dma_entry_limit");
    if let Ok(text) = std::fs::read_to_string(&limit_file) {
        out.push(match text.trim().parse::<u64>() {
            Ok(n) if n >= DMA_ENTRIES_WANTED => {
                Finding::ok(format!("VFIO: dma_entry_limit {n} mappings per container"))
            }
            Ok(n) => Finding::warn(
                format!("VFIO: dma_entry_limit is {n}, fewer mappings than {DMA_ENTRIES_WANTED} regions need"),
                "echo 65535 > /sys/module/vfio_iommu_type1/parameters/dma_entry_limit",
            ),
            Err(_) => Finding::warn(
                format!("VFIO: {}: {:?} is not a number", limit_file.display(), text.trim()),
                "reload vfio_iommu_type1",
            ),
        });
    }
    out
}

/// Whether the container file offers VFIO_TYPE1v2_IOMMU; `None` when it is not a character
/// device (a fake tree), so nothing can be asked.
fn type1v2(container: &Path) -> std::io::Result<Option<bool>> {
    use std::os::unix::fs::FileTypeExt;
    if !std::fs::metadata(container)?.file_type().is_char_device() {
        return Ok(None);
    }
    let file = std::fs::OpenOptions::new().read(true).write(true).open(container)?;
    let fd = std::os::fd::AsFd::as_fd(&file);
    crate::vfio::sys::has_extension(fd, crate::vfio::sys::VFIO_TYPE1v2_IOMMU).map(Some)
}

/// Whether this process may write `path` (it must exist).
fn writable(path: &Path) -> Result<(), String> {
    rustix::fs::access(path, rustix::fs::Access::WRITE_OK).map_err(|e| format!("{}: {e}", path.display()))
}

/// Whether this process may read and write `path`.
fn usable(path: &Path) -> Result<(), String> {
    rustix::fs::access(path, rustix::fs::Access::READ_OK | rustix::fs::Access::WRITE_OK)
        .map_err(|e| format!("{}: {e}", path.display()))
}

/// The BCM57608 functions: driver, group, companions, holders, permissions. Returns how many
/// there are.
fn nics(paths: &Paths, iommu_fix: &str, out: &mut Vec<Finding>) -> usize {
    let machine = paths.machine();
    let functions = match machine.functions() {
        Ok(f) => f,
        Err(e) => {
            out.push(Finding::block(format!("NICs: {e}"), "check that sysfs is mounted: mount -t sysfs sysfs /sys"));
            return 0;
        }
    };
    if functions.is_empty() {
        out.push(Finding::block(
            format!("NICs: no BCM57608 (14e4:1760) function under {}", paths.devices().display()),
            "lspci -nn -d 14e4: shows what the machine has; seat the card or change its firmware's mode",
        ));
        return 0;
    }
    let devices = paths.devices();
    let probe = paths.sys.join("bus/pci/drivers_probe");
    for (i, f) in functions.iter().enumerate() {
        let name = format!("NIC {i} {}", f.bus);
        let driver = f.driver.as_deref().unwrap_or("no driver");
        let group = machine.iommu_group(&f.bus);
        let tied = companions(&devices, &f.bus);
        let ours: Vec<&crate::binding::Companion> =
            tied.iter().filter(|c| functions.iter().any(|g| g.bus == c.bus)).collect();
        let detach =
            if ours.is_empty() { format!("bnxt-rig detach {i}") } else { format!("bnxt-rig detach --device {i}") };
        let Some(group) = group else {
            out.push(Finding::block(format!("{name}: {driver}, no IOMMU group"), iommu_fix));
            continue;
        };
        out.push(Finding::ok(format!("{name}: {driver}, IOMMU group {group}")));
        for c in &tied {
            let tie = match c.tie {
                Tie::Device => "the same device",
                Tie::Group => "the same IOMMU group",
            };
            let on_kernel = c.driver.as_deref().is_some_and(|d| d != VFIO_PCI);
            if ours.iter().any(|o| o.bus == c.bus) {
                let moves = if on_kernel { format!("; they move together: {detach}") } else { String::new() };
                out.push(Finding::ok(format!("{name}: shares {tie} with {c}{moves}")));
            } else if on_kernel {
                out.push(Finding::block(
                    format!("{name}: shares {tie} with {c}, which is not a BCM57608 and holds the group"),
                    format!("echo {0} > /sys/bus/pci/devices/{0}/driver/unbind", c.bus),
                ));
            } else {
                out.push(Finding::ok(format!("{name}: shares {tie} with {c}")));
            }
        }
        // The files detach and attach write (crate::binding).
        let mut files = vec![devices.join(&f.bus).join("driver_override"), probe.clone()];
        if f.driver.is_some() {
            files.push(devices.join(&f.bus).join("driver/unbind"));
        }
        let denied: Vec<String> = files.iter().filter_map(|p| writable(p).err()).collect();
        if !denied.is_empty() {
            out.push(Finding::block(
                format!("{name}: detach and attach cannot write {}", denied.join("; ")),
                format!("run them as root: sudo {detach}"),
            ));
        }
        if f.driver.as_deref() != Some(VFIO_PCI) {
            out.push(Finding::block(format!("{name}: bound to {driver}, not vfio-pci"), detach));
            continue;
        }
        let group_file = paths.dev_vfio.join(&group);
        if let Err(e) = usable(&group_file) {
            out.push(Finding::block(
                format!("{name}: its group's file cannot be opened ({e})"),
                format!("run as root, or: chown $USER {}", Path::new(crate::sysfs::DEV_VFIO).join(&group).display()),
            ));
        }
        let holders = group_holders(&paths.proc, &group);
        if !holders.is_empty() {
            let list: Vec<String> = holders.iter().map(u32::to_string).collect();
            out.push(Finding::block(
                format!("{name}: IOMMU group {group} is open in process {}", list.join(", ")),
                format!("stop it (kill {}) before a run", list.join(" ")),
            ));
        }
    }
    functions.len()
}

#[cfg(test)]
mod tests;
