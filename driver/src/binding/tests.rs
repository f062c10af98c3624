//! detach and attach against a sysfs tree in a temporary folder: the files they write, in order,
//! and their refusals. (The kernel's side, rebinding, happens only on a real tree: the guest test
//! `ci/guest-test.sh --driver` runs them there.)

use std::path::{Path, PathBuf};

use super::*;

/// `t/bus/pci/{devices,drivers}` with BCM57608 functions and their driver links.
struct Tree {
    _dir: tempfile::TempDir,
    pci: PathBuf,
}

impl Tree {
    fn new() -> Tree {
        let dir = tempfile::tempdir().unwrap();
        let pci = dir.path().join("bus/pci");
        std::fs::create_dir_all(pci.join("devices")).unwrap();
        std::fs::create_dir_all(pci.join("drivers")).unwrap();
        Tree { _dir: dir, pci }
    }

    fn devices(&self) -> PathBuf {
        self.pci.join("devices")
    }

    fn driver(&self, name: &str) -> PathBuf {
        let d = self.pci.join("drivers").join(name);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    /// Put `bus` in IOMMU group `group`.
    fn group(&self, bus: &str, group: &str) {
        let g = self.pci.join("../../kernel/iommu_groups").join(group);
        std::fs::create_dir_all(&g).unwrap();
        std::os::unix::fs::symlink(g, self.devices().join(bus).join("iommu_group")).unwrap();
    }

    /// Bind `bus` to `driver` (what the kernel's probe would do).
    fn bind(&self, bus: &str, driver: &str) {
        let link = self.devices().join(bus).join("driver");
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(self.driver(driver), link).unwrap();
    }

    fn function(&self, bus: &str, device: &str, driver: Option<&str>) {
        let dir = self.devices().join(bus);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("vendor"), "0x14e4\n").unwrap();
        std::fs::write(dir.join("device"), format!("{device}\n")).unwrap();
        if let Some(d) = driver {
            std::os::unix::fs::symlink(self.driver(d), dir.join("driver")).unwrap();
        }
    }

    fn machine(&self) -> SysfsMachine {
        SysfsMachine::with_root(self.devices())
    }

    fn read(&self, path: impl AsRef<Path>) -> Option<String> {
        std::fs::read_to_string(self.pci.join(path)).ok()
    }
}

#[test]
fn detach_unbinds_overrides_and_probes_then_checks_the_binding() {
    let t = Tree::new();
    t.function("0000:41:00.0", "0x1760", Some("bnxt_en"));
    t.driver(VFIO_PCI);
    // The kernel would now bind vfio-pci; a plain folder does not, and detach says so.
    let e = detach(&t.machine(), 0).unwrap_err().to_string();
    assert!(e.contains("0000:41:00.0 is bound to bnxt_en, not vfio-pci"), "{e}");
    assert_eq!(t.read("devices/0000:41:00.0/driver_override").as_deref(), Some("vfio-pci"));
    assert_eq!(t.read("drivers/bnxt_en/unbind").as_deref(), Some("0000:41:00.0"));
    assert_eq!(t.read("drivers_probe").as_deref(), Some("0000:41:00.0"));
}

#[test]
fn detach_of_a_function_vfio_pci_holds_writes_nothing() {
    let t = Tree::new();
    t.function("0000:41:00.0", "0x1760", Some(VFIO_PCI));
    let d = detach(&t.machine(), 0).unwrap();
    assert_eq!(d, Detached { bus: "0000:41:00.0".into(), from: None });
    assert_eq!(t.read("devices/0000:41:00.0/driver_override"), None);
    assert_eq!(t.read("drivers_probe"), None);
}

#[test]
fn detach_refuses_a_function_whose_device_has_kernel_bound_siblings_or_no_vfio_pci() {
    let t = Tree::new();
    t.function("0000:41:00.0", "0x1760", Some("bnxt_en"));
    t.function("0000:41:00.1", "0x1760", Some("bnxt_en"));
    t.function("0000:42:00.0", "0x1760", None);
    let m = t.machine();
    let e = detach(&m, 0).unwrap_err().to_string();
    assert!(e.starts_with("0000:41:00.0 cannot go to vfio-pci without 0000:41:00.1 (bnxt_en, same device)"), "{e}");
    assert!(e.contains("bnxt-rig detach --device 0"), "{e}");
    let e = detach(&m, 2).unwrap_err().to_string();
    assert!(e.contains("vfio-pci is not loaded") && e.contains("modprobe vfio-pci"), "{e}");
    let e = detach(&m, 3).unwrap_err().to_string();
    assert_eq!(e, "no NIC 3 (the machine has 3)");
    assert_eq!(t.read("drivers_probe"), None, "nothing was written");
}

#[test]
fn attach_clears_the_override_and_unbinds_from_vfio_pci() {
    let t = Tree::new();
    t.function("0000:41:00.0", "0x1760", Some(VFIO_PCI));
    let now = attach(&t.machine(), 0).unwrap();
    // A plain folder keeps its link; on a real tree the kernel's probe changes it.
    assert_eq!(now.as_deref(), Some(VFIO_PCI));
    assert_eq!(t.read("devices/0000:41:00.0/driver_override").as_deref(), Some("\n"));
    assert_eq!(t.read("drivers/vfio-pci/unbind").as_deref(), Some("0000:41:00.0"));
    assert_eq!(t.read("drivers_probe").as_deref(), Some("0000:41:00.0"));
}

#[test]
fn holders_of_a_group_are_found_by_their_open_files() {
    let t = tempfile::tempdir().unwrap();
    for (pid, target) in [("12", "/dev/vfio/7"), ("30", "/dev/null"), ("5", "/dev/vfio/7"), ("self", "/dev/vfio/7")] {
        let fd = t.path().join(pid).join("fd");
        std::fs::create_dir_all(&fd).unwrap();
        std::os::unix::fs::symlink(target, fd.join("3")).unwrap();
    }
    assert_eq!(group_holders(t.path(), "7"), [5, 12]);
    assert!(group_holders(t.path(), "8").is_empty());
}

#[test]
fn a_port_is_refused_while_a_function_of_its_iommu_group_stays_on_a_kernel_driver() {
    let t = Tree::new();
    t.driver(VFIO_PCI);
    t.function("0000:41:00.0", "0x1760", Some("bnxt_en"));
    t.function("0000:42:00.0", "0x1760", Some("bnxt_en"));
    t.group("0000:41:00.0", "7");
    t.group("0000:42:00.0", "7");
    let e = detach(&t.machine(), 1).unwrap_err().to_string();
    assert!(
        e.starts_with("0000:42:00.0 cannot go to vfio-pci without 0000:41:00.0 (bnxt_en, same IOMMU group)"),
        "{e}"
    );
    assert!(e.contains("bnxt-rig detach --device 1"), "{e}");
    assert_eq!(device_nics(&t.machine(), 1).unwrap(), [0, 1]);
    assert_eq!(t.read("drivers_probe"), None, "nothing was written");
}

#[test]
fn a_foreign_function_of_the_device_on_its_driver_is_named_with_the_unbind_that_frees_it() {
    let t = Tree::new();
    t.driver(VFIO_PCI);
    t.function("0000:41:00.0", "0x1760", Some("bnxt_en"));
    // Function 1 of the same slot, another device id (not a NIC of ours), on a driver of its own.
    t.function("0000:41:00.1", "0x1750", Some("other"));
    let e = detach(&t.machine(), 0).unwrap_err().to_string();
    assert!(e.contains("0000:41:00.1 (other, same device)"), "{e}");
    assert!(e.contains("echo 0000:41:00.1 > /sys/bus/pci/devices/0000:41:00.1/driver/unbind"), "{e}");
    // --device does not take it along: it is not a BCM57608.
    assert_eq!(device_nics(&t.machine(), 0).unwrap(), [0]);
}

#[test]
fn both_ports_of_a_dual_port_card_move_together_and_come_back_together() {
    let t = Tree::new();
    t.driver(VFIO_PCI);
    t.function("0000:41:00.0", "0x1760", Some("bnxt_en"));
    t.function("0000:41:00.1", "0x1760", Some("bnxt_en"));
    t.function("0000:42:00.0", "0x1760", Some("bnxt_en"));
    let m = t.machine();
    assert_eq!(device_nics(&m, 1).unwrap(), [0, 1]);
    // The kernel's probe binds vfio-pci; a plain folder does not, so the check after it fails,
    // but only after every override, every unbind and every probe was written.
    let e = detach_nics(&m, &[0, 1]).unwrap_err().to_string();
    assert!(e.contains("0000:41:00.0 is bound to bnxt_en, not vfio-pci"), "{e}");
    for bus in ["0000:41:00.0", "0000:41:00.1"] {
        assert_eq!(t.read(format!("devices/{bus}/driver_override")).as_deref(), Some("vfio-pci"), "{bus}");
    }
    assert_eq!(t.read("devices/0000:42:00.0/driver_override"), None, "the other card is left alone");
    // sysfs files take one write each; a plain file keeps the last.
    assert_eq!(t.read("drivers_probe").as_deref(), Some("0000:41:00.1"));
    // As the kernel would have it after the probes:
    t.bind("0000:41:00.0", VFIO_PCI);
    t.bind("0000:41:00.1", VFIO_PCI);
    let done = detach_nics(&m, &[1, 0, 1]).unwrap();
    assert_eq!(done.iter().map(|d| d.bus.as_str()).collect::<Vec<_>>(), ["0000:41:00.1", "0000:41:00.0"]);
    // Back: both overrides cleared, both unbound from vfio-pci and probed.
    std::fs::remove_file(t.pci.join("drivers_probe")).unwrap();
    let back = attach_nics(&m, &[0, 1]).unwrap();
    assert_eq!(back.len(), 2);
    for bus in ["0000:41:00.0", "0000:41:00.1"] {
        assert_eq!(t.read(format!("devices/{bus}/driver_override")).as_deref(), Some("\n"), "{bus}");
    }
    assert_eq!(t.read("drivers/vfio-pci/unbind").as_deref(), Some("0000:41:00.1"));
    assert_eq!(t.read("drivers_probe").as_deref(), Some("0000:41:00.1"));
    let e = attach_nics(&m, &[0, 5]).unwrap_err().to_string();
    assert_eq!(e, "no NIC 5 (the machine has 3)");
}
