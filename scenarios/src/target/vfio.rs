//! The `vfio` target: this machine's BCM57608 functions, in bus order, taken through the kernel's
//! VFIO (`bnxt::sysfs::SysfsMachine`, `bnxt::vfio`). They must be bound to vfio-pci first
//! (`bnxt-rig detach N`), and the process needs access to `/dev/vfio`. These are real cards on a
//! lab machine, or model NICs a QEMU guest sees through `vfio-user-pci` (the guest test
//! `ci/guest-test.sh --driver` runs the suite so).
//!
//! Real time, real firmware. Firmware faults are injected at the driver's seam
//! ([`bnxt_interpose::Interposed`] over the functions): a request or command a fault names is
//! withheld, answered late or refused there, so a real card's firmware never sees what it should
//! not; those of `fault` steps are armed there mid-run. What the seam cannot do is not offered: malformed answers (only the model's firmware
//! writes them), wire faults (they need a switch between the cards that loses, reorders and
//! corrupts frames), a look inside the NIC (`inspect` steps are skipped), captures. The NICs move
//! RoCE traffic between them when they share an Ethernet. Config-space checks read the function's
//! `config` file in sysfs, beside the driver rather than through it.

use std::os::unix::fs::FileExt;

use bnxt::sysfs::SysfsMachine;
use bnxt::{Clock, Machine, PciError, RealClock};
use bnxt_interpose::Interposed;

use super::{Capabilities, ConfigState, Internals, MachinePlan, Session, Target, TargetError};
use crate::scenario::Capability;

/// The kind name scenarios use in `targets:`.
pub const KIND: &str = "vfio";

/// This machine's functions through VFIO.
pub struct VfioTarget {
    machine: SysfsMachine,
    count: usize,
}

impl VfioTarget {
    /// The target over `machine`'s functions (counted now: a scenario that needs more is skipped).
    pub fn new(machine: SysfsMachine) -> Result<VfioTarget, TargetError> {
        let count = machine.buses()?.len();
        Ok(VfioTarget { machine, count })
    }
}

impl Target for VfioTarget {
    fn name(&self) -> String {
        KIND.into()
    }

    fn kind(&self) -> &'static str {
        KIND
    }

    fn faults_at_seam(&self) -> bool {
        true
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities { faults: true, inspect: false, max_nics: self.count, virtual_time: false }
    }

    /// RoCE and firmware faults (at the seam, from the start or armed mid-run), and nothing a
    /// model alone can do.
    fn supports(&self, capability: Capability) -> bool {
        matches!(capability, Capability::Roce | Capability::Faults | Capability::LiveFaults)
    }

    fn start(&self, plan: &MachinePlan<'_>) -> Result<Box<dyn Session>, TargetError> {
        let (seam, device) = super::seam_faults(super::model::fault_plan(plan));
        if !device.firmware.is_empty() || !device.wire.is_empty() {
            let what = "inject malformed firmware answers or wire faults (only the model can)".into();
            return Err(TargetError::Cannot { target: KIND.into(), what });
        }
        let machine = super::ready_for_live(Interposed::new(self.machine.clone(), seam), plan);
        Ok(Box::new(VfioSession { machine, nics: plan.nics, clock: RealClock::new() }))
    }
}

/// One scenario's NICs, through the firmware-fault layer.
struct VfioSession {
    machine: Interposed<SysfsMachine>,
    nics: usize,
    clock: RealClock,
}

impl VfioSession {
    /// Read config space of NIC `nic` from its sysfs `config` file.
    fn config(&self, nic: usize, offset: u16, data: &mut [u8]) -> Result<(), TargetError> {
        if nic >= self.nics {
            return Err(TargetError::NoSuchNic { nic, count: self.nics });
        }
        let buses = self.machine.buses()?;
        let bus = buses.get(nic).ok_or(TargetError::NoSuchNic { nic, count: buses.len() })?;
        let path = self.machine.inner().root().join(bus).join("config");
        let len = data.len();
        let fail = |reason: String| TargetError::Pci(PciError::Config { offset, len, reason });
        let file = std::fs::File::open(&path).map_err(|e| fail(format!("{}: {e}", path.display())))?;
        file.read_exact_at(data, u64::from(offset)).map_err(|e| fail(format!("{}: {e}", path.display())))
    }
}

impl Session for VfioSession {
    fn machine(&self) -> &dyn Machine {
        &self.machine
    }

    fn clock(&self) -> &dyn Clock {
        &self.clock
    }

    fn config_state(&self, nic: usize) -> Result<ConfigState, TargetError> {
        ConfigState::read(|offset, data| self.config(nic, offset, data))
    }

    fn internals(&self, _nic: usize) -> Result<Internals, TargetError> {
        Err(TargetError::Cannot { target: KIND.into(), what: "show a NIC's inner state".into() })
    }

    fn arm_fault(&self, fault: &crate::scenario::faults::ModelFault) -> Result<(), TargetError> {
        if fault.nic() >= self.nics {
            return Err(TargetError::NoSuchNic { nic: fault.nic(), count: self.nics });
        }
        super::arm_at_seam(&self.machine, KIND, fault)
    }

    fn seam_log(&self) -> Vec<(std::time::Duration, String)> {
        self.machine.take_log().into_iter().map(|l| (l.at, format!("NIC {}: {}", l.nic, l.text))).collect()
    }

    fn unimplemented(&self) -> Vec<String> {
        Vec::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nics_are_counted_and_config_state_is_read_from_sysfs() {
        let t = tempfile::tempdir().unwrap();
        let dir = t.path().join("0000:41:00.0");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("vendor"), "0x14e4\n").unwrap();
        std::fs::write(dir.join("device"), "0x1760\n").unwrap();
        // Config space: command = memory + bus master; capability list at 0x40 (PM, id 1) ->
        // 0x50 (PCIe, id 0x10) whose Device Control (at +8) has relaxed ordering (bit 4) on.
        let mut config = vec![0u8; 256];
        config[0x04] = 0x06;
        config[0x34] = 0x40;
        config[0x40] = 0x01;
        config[0x41] = 0x50;
        config[0x50] = 0x10;
        config[0x58] = 0x10;
        std::fs::write(dir.join("config"), &config).unwrap();
        let target = VfioTarget::new(SysfsMachine::with_root(t.path())).unwrap();
        assert_eq!(target.capabilities().max_nics, 1);
        assert!(target.supports(Capability::Roce) && target.supports(Capability::Faults));
        assert!(target.supports(Capability::LiveFaults));
        assert!(!target.supports(Capability::WireFaults) && !target.supports(Capability::MalformedAnswers));
        let plan = MachinePlan {
            nics: 1,
            seed: 0,
            faults: &[],
            live_faults: &[],
            firmware: crate::scenario::FirmwareSettings::default(),
            pcap: None,
            events: false,
        };
        let session = target.start(&plan).unwrap();
        let state = session.config_state(0).unwrap();
        assert_eq!(state, ConfigState { memory: true, bus_master: true, relaxed_ordering: true });
        assert!(matches!(session.config_state(1), Err(TargetError::NoSuchNic { nic: 1, .. })));
        config[0x58] = 0;
        std::fs::write(dir.join("config"), &config).unwrap();
        assert!(!session.config_state(0).unwrap().relaxed_ordering);
    }
}
