//! Targets: what a scenario runs against. Each builds a fresh [`bnxt::Machine`] for a scenario
//! and can say what state a NIC's PCI function is in.
//!
//! The in-process model (`model`), NICs behind vfio-user sockets (`vfio-user:SOCKET,...`) and
//! this machine's functions bound to vfio-pci (`vfio`: real cards, or model NICs a QEMU guest
//! sees) implement the same trait. A scenario that needs what a
//! target cannot do ([`Target::supports`]: wire faults, malformed firmware answers, a virtual
//! clock, more NICs than it has) is skipped on it with the reason; a step that needs what it
//! cannot do (`inspect`) is skipped and the scenario runs on.
//!
//! Firmware faults run on every target: the model's firmware injects them on `model`; on
//! `vfio-user` and `vfio` the runner puts [`bnxt_interpose::Interposed`] between the driver and
//! the functions ([`seam_faults`]), so the same `faults: firmware:` lines withhold, delay and
//! refuse HWRM requests and RoCE commands of a model behind a socket or of a real card.

pub mod model;
pub mod vfio;
pub mod vfio_user;

use std::path::Path;
use std::sync::Arc;

use bnxt::{Clock, Machine, PciError};

use crate::scenario::faults::ModelFault;
use crate::scenario::{Capability, Fault, FirmwareSettings};
use crate::suggest::closest;
use crate::transcript::record::EventSource;

/// The kinds of target a scenario's `targets:` may name.
pub const KINDS: &[&str] = &["model", vfio_user::KIND, vfio::KIND];

/// What a target can do beyond running the driver.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Capabilities {
    /// It can inject faults (firmware misbehaviour).
    pub faults: bool,
    /// It can show the NIC's inner state (`inspect` steps).
    pub inspect: bool,
    /// The most NICs it can give a scenario.
    pub max_nics: usize,
    /// Its clock is virtual (time passes only when the driver waits; a 40 s timeout costs no
    /// wall time).
    pub virtual_time: bool,
}

/// What a scenario asks of a target's machine.
#[derive(Debug, Clone, Copy)]
pub struct MachinePlan<'a> {
    /// How many NICs.
    pub nics: usize,
    /// Seed of every random choice the target makes.
    pub seed: u64,
    /// Faults to inject.
    pub faults: &'a [Fault],
    /// The firmware faults the scenario's `fault` steps will arm mid-run
    /// ([`Session::arm_fault`]), for a target that must be ready for them from the start (the
    /// layer at the driver's seam stands in for a NIC's CMDQ and CREQ from its first open).
    pub live_faults: &'a [ModelFault],
    /// What the NICs' firmware advertises beyond its defaults.
    pub firmware: FirmwareSettings,
    /// Write the frames between the NICs to this pcap file (where the target can).
    pub pcap: Option<&'a Path>,
    /// Record the target's own events in full, data path included (for a transcript).
    pub events: bool,
}

/// A NIC's PCI config-space state, as the `config` step checks it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConfigState {
    /// Command register: memory space enable.
    pub memory: bool,
    /// Command register: bus master enable.
    pub bus_master: bool,
    /// PCIe Device Control: relaxed ordering enable.
    pub relaxed_ordering: bool,
}

impl ConfigState {
    /// The state config space shows, read through `read` (offset, bytes): the command register,
    /// and Device Control of the PCI Express capability (found by walking the capability list).
    pub fn read(read: impl Fn(u16, &mut [u8]) -> Result<(), TargetError>) -> Result<ConfigState, TargetError> {
        use bnxt_pci::regs;
        let read16 = |offset: u16| {
            let mut b = [0u8; 2];
            read(offset, &mut b).map(|()| u16::from_le_bytes(b))
        };
        let command = read16(regs::COMMAND)?;
        let mut ptr = [0u8; 1];
        read(0x34, &mut ptr)?;
        let mut at = u16::from(ptr[0] & 0xfc);
        let mut pcie = None;
        for _ in 0..48 {
            if at < 0x40 {
                break;
            }
            let header = read16(at)?;
            if header as u8 == regs::CAP_ID_EXP {
                pcie = Some(at);
                break;
            }
            at = (header >> 8) & 0xfc;
        }
        let pcie = pcie.ok_or_else(|| {
            TargetError::Pci(PciError::Config {
                offset: 0x34,
                len: 1,
                reason: "no PCI Express capability in the capability list".into(),
            })
        })?;
        let devctl = read16(pcie + regs::EXP_DEVCTL)?;
        Ok(ConfigState {
            memory: command & regs::COMMAND_MEMORY != 0,
            bus_master: command & regs::COMMAND_MASTER != 0,
            relaxed_ordering: devctl & regs::EXP_DEVCTL_RELAX_EN != 0,
        })
    }
}

/// What only a model can show of a NIC (`inspect` steps): its whole outside view.
pub use bnxt_model_host::world::NicState as Internals;

/// Why a target could not do something.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TargetError {
    /// `--target` named no known target.
    #[error("unknown target `{spec}`{}; available: {}", did_you_mean(.suggestion), KINDS.join(", "))]
    Unknown {
        /// What was given.
        spec: String,
        /// The closest known kind.
        suggestion: Option<String>,
    },
    /// The target cannot do this.
    #[error("the {target} target cannot {what}")]
    Cannot {
        /// The target.
        target: String,
        /// What it cannot do.
        what: String,
    },
    /// There is no NIC with this index.
    #[error("no NIC {nic} (the machine has {count})")]
    NoSuchNic {
        /// The index.
        nic: usize,
        /// How many there are.
        count: usize,
    },
    /// A PCI access failed.
    #[error(transparent)]
    Pci(#[from] PciError),
}

fn did_you_mean(s: &Option<String>) -> String {
    s.as_ref().map(|s| format!(" (did you mean `{s}`?)")).unwrap_or_default()
}

/// Something scenarios run against.
pub trait Target: Send + Sync {
    /// The target as `--target` names it (`model`).
    fn name(&self) -> String;
    /// Its kind, as a scenario's `targets:` names it.
    fn kind(&self) -> &'static str;
    /// What it can do.
    fn capabilities(&self) -> Capabilities;
    /// A fresh machine for one scenario run.
    fn start(&self, plan: &MachinePlan<'_>) -> Result<Box<dyn Session>, TargetError>;

    /// Whether it can do `capability` (what a scenario's `requires:`, faults and steps ask).
    /// By default: firmware faults, `inspect` and a virtual clock as [`Target::capabilities`]
    /// says, and nothing else.
    fn supports(&self, capability: Capability) -> bool {
        let caps = self.capabilities();
        match capability {
            Capability::Faults => caps.faults,
            Capability::Inspect => caps.inspect,
            Capability::VirtualTime => caps.virtual_time,
            Capability::WireFaults
            | Capability::Pcap
            | Capability::Roce
            | Capability::FirmwareSettings
            | Capability::MalformedAnswers
            | Capability::LiveFaults => false,
        }
    }

    /// Whether it injects firmware faults at the driver's seam ([`bnxt_interpose`]) rather than
    /// in the device's firmware. By default not.
    fn faults_at_seam(&self) -> bool {
        false
    }

    /// Whether several scenarios may run on it at once (each on its own machine). By default
    /// not.
    fn parallel(&self) -> bool {
        false
    }
}

/// One scenario's machine on a target.
pub trait Session {
    /// The machine the driver opens NICs on.
    fn machine(&self) -> &dyn Machine;
    /// The machine's clock (virtual on the model).
    fn clock(&self) -> &dyn Clock;
    /// NIC `nic`'s config-space state.
    fn config_state(&self, nic: usize) -> Result<ConfigState, TargetError>;
    /// NIC `nic`'s inner state, where the target can show it.
    fn internals(&self, nic: usize) -> Result<Internals, TargetError>;
    /// Arm `fault` on its NIC from now on (a `fault` step): `nth` counts from now. By default the
    /// target cannot.
    fn arm_fault(&self, fault: &ModelFault) -> Result<(), TargetError> {
        let _ = fault;
        Err(TargetError::Cannot { target: "this".into(), what: "arm a fault in the middle of a run".into() })
    }
    /// What the target was asked during the run and does not implement, each said once (the
    /// model counts HWRM requests it answered CMD_NOT_SUPPORTED). `--strict` fails a run on it.
    fn unimplemented(&self) -> Vec<String>;

    /// The target's own record of what happened, for transcripts (the model's event log). By
    /// default none: a transcript then has the runner's and the driver's lines only.
    fn events(&self) -> Option<Arc<dyn EventSource>> {
        None
    }

    /// What the layer at the driver's seam did since the last call (each line with its time on
    /// the function's clock), where the target has one. By default nothing.
    fn seam_log(&self) -> Vec<(std::time::Duration, String)> {
        Vec::new()
    }

    /// Finish the pcap file the plan asked for: how many frames it holds, or `None` when there
    /// is none.
    fn finish_pcap(&self) -> Result<Option<u64>, String> {
        Ok(None)
    }
}

/// `plan` split between the layer at the driver's seam and the device behind it: the firmware
/// faults the layer injects (every HWRM and RoCE command fault but the malformed answers, which
/// only the model's firmware writes), and what is left for the device (those malformed answers
/// and the wire plan, which only the model's segment applies).
pub fn seam_faults(
    plan: bnxt_model::faults::FaultPlan,
) -> (bnxt_model::faults::FaultPlan, bnxt_model::faults::FaultPlan) {
    use bnxt_model::faults::FaultPlan;
    let (device_firmware, seam_firmware): (Vec<_>, Vec<_>) =
        plan.firmware.into_iter().partition(|f| !f.action.kind().applies_to_roce());
    let seam = FaultPlan { firmware: seam_firmware, roce_commands: plan.roce_commands, ..FaultPlan::default() };
    let device = FaultPlan { firmware: device_firmware, roce_commands: Vec::new(), wire: plan.wire };
    (seam, device)
}

/// `seam` ready for the faults `plan`'s `fault` steps will arm on each NIC (RoCE command faults
/// among them where one is).
pub fn ready_for_live<M: Machine>(
    seam: bnxt_interpose::Interposed<M>,
    plan: &MachinePlan<'_>,
) -> bnxt_interpose::Interposed<M> {
    plan.live_faults.iter().fold(seam, |seam, f| seam.live(f.nic(), matches!(f, ModelFault::Roce(_))))
}

/// Arm `fault` at the layer `seam` of the `target` target (what [`Session::arm_fault`] does
/// where firmware faults are injected at the driver's seam).
pub fn arm_at_seam<M: Machine>(
    seam: &bnxt_interpose::Interposed<M>,
    target: &str,
    fault: &ModelFault,
) -> Result<(), TargetError> {
    let (request, nth, action) = fault.armed();
    seam.arm(fault.nic(), request, nth, None, action).map(|_| ()).map_err(|e| TargetError::Cannot {
        target: target.into(),
        what: format!("arm the fault at the driver's seam: {e}"),
    })
}

/// The target `spec` names (`model`).
pub fn from_spec(spec: &str) -> Result<Box<dyn Target>, TargetError> {
    match spec {
        "model" => Ok(Box::new(model::ModelTarget)),
        vfio::KIND => Ok(Box::new(vfio::VfioTarget::new(bnxt::sysfs::SysfsMachine::new())?)),
        other if other.starts_with("vfio-user:") => {
            Ok(Box::new(vfio_user::VfioUserTarget::from_spec(&other["vfio-user:".len()..])?))
        }
        other => {
            let kind = other.split(':').next().unwrap_or(other);
            Err(TargetError::Unknown {
                spec: other.to_string(),
                suggestion: closest(kind, KINDS.iter().copied()).map(str::to_string),
            })
        }
    }
}
