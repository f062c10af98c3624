//! The preflight on fake `/sys`, `/proc` and `/dev/vfio` trees in a temporary folder.

use std::path::{Path, PathBuf};

use super::*;

/// A machine's trees: `sys/`, `proc/`, `dev-vfio/`.
struct Trees {
    _dir: tempfile::TempDir,
    paths: Paths,
}

fn write(path: impl AsRef<Path>, text: &str) {
    let path = path.as_ref();
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn link(target: impl AsRef<Path>, at: impl AsRef<Path>) {
    let at = at.as_ref();
    let _ = std::fs::remove_file(at);
    std::fs::create_dir_all(at.parent().unwrap()).unwrap();
    std::os::unix::fs::symlink(target, at).unwrap();
}

/// `Max locked memory` of `/proc/self/limits` and the effective capabilities of `/proc/self/status`.
fn proc_self(proc: &Path, memlock: &str, cap_eff: &str) {
    write(
        proc.join("self/limits"),
        &format!(
            "Limit                     Soft Limit           Hard Limit           Units     \n\
             Max processes             63304                63304                processes \n\
             Max locked memory         {memlock:<20} {memlock:<20} bytes     \n"
        ),
    );
    write(proc.join("self/status"), &format!("Name:\tbnxt-rig\nCapInh:\t0000000000000000\nCapEff:\t{cap_eff}\n"));
}

impl Trees {
    /// A machine ready for a run but for its NICs: an Intel IOMMU in use, VFIO with type1 and
    /// vfio-pci loaded, a 64 KiB memlock limit and no capabilities.
    fn ready() -> Trees {
        let dir = tempfile::tempdir().unwrap();
        let p =
            Paths { sys: dir.path().join("sys"), proc: dir.path().join("proc"), dev_vfio: dir.path().join("dev-vfio") };
        std::fs::create_dir_all(p.sys.join("class/iommu/dmar0")).unwrap();
        write(p.sys.join("module/vfio_iommu_type1/parameters/dma_entry_limit"), "65535\n");
        std::fs::create_dir_all(p.devices()).unwrap();
        std::fs::create_dir_all(p.sys.join("bus/pci/drivers/vfio-pci")).unwrap();
        std::fs::create_dir_all(p.sys.join("bus/pci/drivers/bnxt_en")).unwrap();
        write(p.sys.join("bus/pci/drivers_probe"), "");
        write(p.dev_vfio.join("vfio"), "");
        write(p.proc.join("cmdline"), "BOOT_IMAGE=/vmlinuz root=/dev/sda1 intel_iommu=on iommu=pt\n");
        write(p.proc.join("cpuinfo"), "processor\t: 0\nvendor_id\t: GenuineIntel\n");
        proc_self(&p.proc, "65536", "0000000000000000");
        Trees { _dir: dir, paths: p }
    }

    /// A function `bus` (`vendor:device`) on `driver`, in IOMMU group `group`.
    fn function(&self, bus: &str, id: (&str, &str), driver: Option<&str>, group: Option<&str>) {
        let dir = self.paths.devices().join(bus);
        write(dir.join("vendor"), &format!("{}\n", id.0));
        write(dir.join("device"), &format!("{}\n", id.1));
        write(dir.join("driver_override"), "(null)\n");
        if let Some(d) = driver {
            let drv = self.paths.sys.join("bus/pci/drivers").join(d);
            write(drv.join("unbind"), "");
            link(&drv, dir.join("driver"));
            if d == VFIO_PCI
                && let Some(g) = group
            {
                write(self.paths.dev_vfio.join(g), "");
            }
        }
        if let Some(g) = group {
            let gdir = self.paths.sys.join("kernel/iommu_groups").join(g);
            std::fs::create_dir_all(&gdir).unwrap();
            link(&gdir, dir.join("iommu_group"));
        }
    }

    fn nic(&self, bus: &str, driver: Option<&str>, group: Option<&str>) {
        self.function(bus, ("0x14e4", "0x1760"), driver, group);
    }

    fn check(&self, cost: Option<&OpenCost>) -> Vec<Finding> {
        check(&self.paths, cost)
    }
}

/// The findings at `level`, as `what` lines with their fixes (`what => fix`).
fn at(findings: &[Finding], level: Level) -> Vec<String> {
    findings
        .iter()
        .filter(|f| f.level == level)
        .map(|f| match &f.fix {
            Some(fix) => format!("{} => {fix}", f.what),
            None => f.what.clone(),
        })
        .collect()
}

fn has(lines: &[String], want: &str) -> bool {
    lines.iter().any(|l| l.contains(want))
}

const COST: OpenCost = OpenCost { bytes: 48 << 20, context_bytes: 40 << 20, measured_on: String::new() };

#[test]
fn a_machine_ready_for_a_run_has_nothing_blocking_and_says_what_it_found() {
    let t = Trees::ready();
    // A dual-port card, both ports on vfio-pci, one IOMMU group; root (CAP_IPC_LOCK is bit 14).
    t.nic("0000:41:00.0", Some(VFIO_PCI), Some("7"));
    t.nic("0000:41:00.1", Some(VFIO_PCI), Some("7"));
    proc_self(&t.paths.proc, "65536", "000001ffffffffff");
    let f = t.check(Some(&COST));
    assert!(!blocks(&f), "{:#?}", at(&f, Level::Block));
    let ok = at(&f, Level::Ok);
    assert!(has(&ok, "IOMMU: on (dmar0; 1 groups; kernel command line: intel_iommu=on iommu=pt)"), "{ok:#?}");
    assert!(has(&ok, "iommu=pt: the host's drivers bypass translation"), "{ok:#?}");
    assert!(has(&ok, "present (not a character device: type1v2 not asked)"), "{ok:#?}");
    assert!(has(&ok, "dma_entry_limit 65535"), "{ok:#?}");
    assert!(has(&ok, "vfio-pci: loaded"), "{ok:#?}");
    assert!(has(&ok, "NIC 0 0000:41:00.0: vfio-pci, IOMMU group 7"), "{ok:#?}");
    assert!(
        has(&ok, "NIC 0 0000:41:00.0: shares the same device with 0000:41:00.1 (vfio-pci, same device)"),
        "{ok:#?}"
    );
    assert!(
        has(&ok, "locked memory: not limited (CAP_IPC_LOCK); 2 NIC(s) × 48 MiB per open (40 MiB of it context memory"),
        "{ok:#?}"
    );
    assert!(at(&f, Level::Warn).is_empty(), "{:#?}", at(&f, Level::Warn));
}

#[test]
fn a_fresh_machine_gets_every_fix_it_needs() {
    let t = Trees::ready();
    // No IOMMU in use, vfio-pci not loaded, a low mapping limit.
    std::fs::remove_dir_all(t.paths.sys.join("class/iommu")).unwrap();
    std::fs::remove_dir_all(t.paths.sys.join("bus/pci/drivers/vfio-pci")).unwrap();
    write(t.paths.proc.join("cmdline"), "root=/dev/sda1\n");
    write(t.paths.sys.join("module/vfio_iommu_type1/parameters/dma_entry_limit"), "1000\n");
    // A dual-port card on bnxt_en; a card of another kind in the second port's group.
    t.nic("0000:41:00.0", Some("bnxt_en"), Some("7"));
    t.nic("0000:41:00.1", Some("bnxt_en"), Some("8"));
    t.function("0000:42:00.0", ("0x8086", "0x1572"), Some("i40e"), Some("8"));
    // A card without a group, whose override cannot be written (it is missing).
    t.nic("0000:c1:00.0", None, None);
    std::fs::remove_file(t.paths.devices().join("0000:c1:00.0/driver_override")).unwrap();
    let f = t.check(Some(&COST));
    assert!(blocks(&f));
    let b = at(&f, Level::Block);
    assert!(
        has(
            &b,
            "IOMMU: not in use (0 IOMMU units, 2 IOMMU groups; kernel command line: no iommu words) => turn VT-d on in the firmware setup, add intel_iommu=on"
        ),
        "{b:#?}"
    );
    assert!(has(&b, "vfio-pci: not loaded => modprobe vfio-pci"), "{b:#?}");
    assert!(has(&b, "NIC 0 0000:41:00.0: bound to bnxt_en, not vfio-pci => bnxt-rig detach --device 0"), "{b:#?}");
    assert!(
        has(
            &b,
            "NIC 1 0000:41:00.1: shares the same IOMMU group with 0000:42:00.0 (i40e, same IOMMU group), which is not a BCM57608 and holds the group => echo 0000:42:00.0 > /sys/bus/pci/devices/0000:42:00.0/driver/unbind"
        ),
        "{b:#?}"
    );
    assert!(has(&b, "NIC 2 0000:c1:00.0: no driver, no IOMMU group => turn VT-d on"), "{b:#?}");
    assert!(has(&b, "locked memory: limit 64 KiB is less than 3 NIC(s) × 48 MiB per open"), "{b:#?}");
    assert!(has(&b, "=> ulimit -l unlimited"), "{b:#?}");
    let ok = at(&f, Level::Ok);
    assert!(
        has(
            &ok,
            "NIC 0 0000:41:00.0: shares the same device with 0000:41:00.1 (bnxt_en, same device); they move together: bnxt-rig detach --device 0"
        ),
        "{ok:#?}"
    );
    let w = at(&f, Level::Warn);
    assert!(
        has(
            &w,
            "dma_entry_limit is 1000, fewer mappings than 10000 regions need => echo 65535 > /sys/module/vfio_iommu_type1/parameters/dma_entry_limit"
        ),
        "{w:#?}"
    );
    // The missing file: detach could not write it.
    let t2 = Trees::ready();
    t2.nic("0000:c1:00.0", Some("bnxt_en"), Some("3"));
    std::fs::remove_file(t2.paths.devices().join("0000:c1:00.0/driver_override")).unwrap();
    let b = at(&t2.check(None), Level::Block);
    assert!(
        has(&b, "NIC 0 0000:c1:00.0: detach and attach cannot write") && has(&b, "0000:c1:00.0/driver_override"),
        "{b:#?}"
    );
    assert!(has(&b, "=> run them as root: sudo bnxt-rig detach 0"), "{b:#?}");
}

#[test]
fn an_amd_machine_is_told_about_its_firmware_setup_and_a_held_group_names_its_process() {
    let t = Trees::ready();
    write(t.paths.proc.join("cpuinfo"), "vendor_id\t: AuthenticAMD\n");
    std::fs::remove_dir_all(t.paths.sys.join("class/iommu")).unwrap();
    t.nic("0000:41:00.0", Some(VFIO_PCI), Some("7"));
    link("/dev/vfio/7", t.paths.proc.join("4242/fd/5"));
    proc_self(&t.paths.proc, "unlimited", "0000000000000000");
    let f = t.check(None);
    let b = at(&f, Level::Block);
    assert!(has(&b, "=> turn the IOMMU (AMD-Vi) on in the firmware setup"), "{b:#?}");
    assert!(has(&b, "NIC 0 0000:41:00.0: IOMMU group 7 is open in process 4242 => stop it (kill 4242)"), "{b:#?}");
    assert!(has(&at(&f, Level::Ok), "locked memory: unlimited; an open's need was not measured"), "{f:#?}");
}

#[test]
fn no_vfio_or_no_nic_blocks_with_the_module_to_load_or_the_card_to_look_for() {
    let t = Trees::ready();
    std::fs::remove_file(t.paths.dev_vfio.join("vfio")).unwrap();
    let b = at(&t.check(None), Level::Block);
    assert!(has(&b, "dev-vfio/vfio is missing => modprobe vfio vfio_iommu_type1"), "{b:#?}");
    assert!(has(&b, "NICs: no BCM57608 (14e4:1760) function under") && has(&b, "lspci -nn -d 14e4:"), "{b:#?}");
    let t = Trees::ready();
    std::fs::remove_dir_all(t.paths.sys.join("module/vfio_iommu_type1")).unwrap();
    let b = at(&t.check(None), Level::Block);
    assert!(has(&b, "the type1 IOMMU driver is not loaded => modprobe vfio_iommu_type1"), "{b:#?}");
}

#[test]
fn the_memlock_limit_and_capability_are_read_and_bad_files_named() {
    let t = Trees::ready();
    assert_eq!(read_memlock(&t.paths.proc).unwrap(), Memlock { soft: Some(65536), ipc_lock: false });
    proc_self(&t.paths.proc, "unlimited", "0000000000004000");
    assert_eq!(read_memlock(&t.paths.proc).unwrap(), Memlock { soft: None, ipc_lock: true });
    proc_self(&t.paths.proc, "lots", "0");
    let e = read_memlock(&t.paths.proc).unwrap_err();
    assert!(e.contains("self/limits") && e.contains("\"lots\" is not a number"), "{e}");
    let nowhere = PathBuf::from("/nonexistent-proc");
    let f = memlock::finding(&nowhere, 1, None);
    assert_eq!(f.level, Level::Warn);
    assert!(f.what.contains("/nonexistent-proc/self/limits"), "{f:?}");
    // The limit against a measured need, either side of it.
    proc_self(&t.paths.proc, &(96u64 << 20).to_string(), "0");
    assert_eq!(memlock::finding(&t.paths.proc, 2, Some(&COST)).level, Level::Ok);
    assert_eq!(memlock::finding(&t.paths.proc, 3, Some(&COST)).level, Level::Block);
    assert_eq!(memlock::size(1536), "1.5 KiB");
}

#[test]
fn an_open_is_measured_by_what_it_allocates() {
    let m = crate::testing::machine::FakeMachine::new(1);
    let cost = measure_open(&m, 0, "the fake firmware").unwrap();
    assert!(cost.context_bytes > 0 && cost.bytes > cost.context_bytes, "{cost:?}");
    assert_eq!(cost.bytes % 4096, 0, "{cost:?}");
    assert_eq!(m.f(0).dma_live(), 0, "the NIC was closed again");
}
