//! The `vfio-user:SOCK[,SOCK…]` target: NICs in other processes (`bnxt-model serve`, one NIC
//! per socket), reached through the driver's vfio-user backend, on the real clock.
//!
//! The sockets are connected once, when the first scenario starts, and the connections are kept
//! for the whole run (a server serves one client at a time). Each scenario still gets fresh NICs:
//! at its start every NIC it uses is replaced on its server by one just powered on, with the
//! scenario's seed and the faults that name it, through the model's extension command
//! `BNXT_RIG_RESTART` (`bnxt_vfio_user::ext`); the scenario's NIC *i* is socket *i*, so a fault
//! on NIC *i* goes to server *i* as a fault on its NIC 0. `inspect` steps and the list of what
//! the model left unimplemented come from `BNXT_RIG_STATE`. Config-space checks read config
//! space through the protocol, as they would on any vfio-user device.
//!
//! A server that is not the model refuses those extension commands; a scenario with faults or
//! `inspect` steps then fails to start, naming the refusal.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use bnxt::pci::regs;
use bnxt::vfio_user::{Client, VfioUserMachine};
use bnxt::{Clock, Machine, PciError};
use bnxt_hsi::hwrm::req_name;
use bnxt_model::faults::FaultPlan;
use bnxt_model::vfio_user::control::{Restart, State};
use bnxt_vfio_user::header::Command;
use bnxt_vfio_user::linux::PCI_CONFIG_REGION_INDEX;

use super::model::fault_plan;
use super::{Capabilities, ConfigState, Internals, MachinePlan, Session, Target, TargetError};

/// The kind name scenarios use in `targets:`.
pub const KIND: &str = "vfio-user";

/// Model NICs behind vfio-user sockets.
pub struct VfioUserTarget {
    sockets: Vec<PathBuf>,
    machine: Mutex<Option<Arc<VfioUserMachine>>>,
}

impl VfioUserTarget {
    /// The target for `spec`, the part after `vfio-user:` (comma-separated socket paths).
    pub fn from_spec(spec: &str) -> Result<VfioUserTarget, TargetError> {
        let sockets: Vec<PathBuf> = spec.split(',').filter(|s| !s.is_empty()).map(PathBuf::from).collect();
        if sockets.is_empty() {
            return Err(TargetError::Cannot {
                target: KIND.into(),
                what: "run without sockets (`vfio-user:PATH[,PATH…]`)".into(),
            });
        }
        Ok(VfioUserTarget { sockets, machine: Mutex::new(None) })
    }

    fn machine(&self) -> Result<Arc<VfioUserMachine>, TargetError> {
        let mut slot = self.machine.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(m) = slot.as_ref() {
            return Ok(m.clone());
        }
        let machine =
            VfioUserMachine::connect(&self.sockets).map_err(|e| TargetError::Pci(PciError::List(e.to_string())))?;
        let machine = Arc::new(machine);
        *slot = Some(machine.clone());
        Ok(machine)
    }
}

impl Target for VfioUserTarget {
    fn name(&self) -> String {
        let paths: Vec<String> = self.sockets.iter().map(|p| p.display().to_string()).collect();
        format!("{KIND}:{}", paths.join(","))
    }

    fn kind(&self) -> &'static str {
        KIND
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities { faults: true, inspect: true, max_nics: self.sockets.len(), virtual_time: false }
    }

    fn start(&self, plan: &MachinePlan<'_>) -> Result<Box<dyn Session>, TargetError> {
        let machine = self.machine()?;
        let faults = fault_plan(plan);
        for nic in 0..plan.nics {
            let client = client_of(&machine, nic)?;
            let restart = Restart { seed: plan.seed, faults: faults_of(&faults, nic) };
            let json = serde_json::to_vec(&restart).expect("a restart request serialises");
            client
                .call(Command::RigRestart, &[&json], &[])
                .map_err(|e| cannot(format!("give NIC {nic} a fresh state: {e}")))?;
        }
        Ok(Box::new(VfioUserSession { machine, nics: plan.nics }))
    }
}

/// The faults of `plan` that name `nic`, renumbered as its server's NIC 0.
fn faults_of(plan: &FaultPlan, nic: usize) -> FaultPlan {
    let firmware = plan
        .firmware
        .iter()
        .filter(|f| f.nic == nic)
        .map(|f| bnxt_model::faults::FirmwareFault { nic: 0, ..f.clone() })
        .collect();
    FaultPlan { firmware, ..FaultPlan::default() }
}

fn cannot(what: String) -> TargetError {
    TargetError::Cannot { target: KIND.into(), what }
}

fn client_of(machine: &VfioUserMachine, nic: usize) -> Result<&Arc<Client>, TargetError> {
    let count = machine.buses().map(|b| b.len()).unwrap_or(0);
    machine.client(nic).ok_or(TargetError::NoSuchNic { nic, count })
}

/// One scenario's NICs.
struct VfioUserSession {
    machine: Arc<VfioUserMachine>,
    nics: usize,
}

impl VfioUserSession {
    fn client(&self, nic: usize) -> Result<&Arc<Client>, TargetError> {
        if nic >= self.nics {
            return Err(TargetError::NoSuchNic { nic, count: self.nics });
        }
        client_of(&self.machine, nic)
    }

    fn state(&self, nic: usize) -> Result<State, TargetError> {
        let reply = self
            .client(nic)?
            .call(Command::RigState, &[], &[])
            .map_err(|e| cannot(format!("show NIC {nic}'s state: {e}")))?;
        serde_json::from_slice(&reply.body).map_err(|e| cannot(format!("read NIC {nic}'s state: {e}")))
    }

    fn config(&self, nic: usize, offset: u16, data: &mut [u8]) -> Result<(), TargetError> {
        self.client(nic)?
            .region_read(PCI_CONFIG_REGION_INDEX, u64::from(offset), data)
            .map_err(|e| TargetError::Pci(PciError::Config { offset, len: data.len(), reason: e.to_string() }))
    }

    fn config16(&self, nic: usize, offset: u16) -> Result<u16, TargetError> {
        let mut b = [0u8; 2];
        self.config(nic, offset, &mut b)?;
        Ok(u16::from_le_bytes(b))
    }

    /// The PCI Express capability's offset (walking the capability list).
    fn pcie_capability(&self, nic: usize) -> Result<u16, TargetError> {
        let mut ptr = [0u8; 1];
        self.config(nic, 0x34, &mut ptr)?;
        let mut at = u16::from(ptr[0] & 0xfc);
        for _ in 0..48 {
            if at < 0x40 {
                break;
            }
            let header = self.config16(nic, at)?;
            if header as u8 == regs::CAP_ID_EXP {
                return Ok(at);
            }
            at = (header >> 8) & 0xfc;
        }
        Err(cannot(format!("find NIC {nic}'s PCI Express capability")))
    }
}

impl Session for VfioUserSession {
    fn machine(&self) -> &dyn Machine {
        &*self.machine
    }

    fn clock(&self) -> &dyn Clock {
        self.machine.clock()
    }

    fn config_state(&self, nic: usize) -> Result<ConfigState, TargetError> {
        let command = self.config16(nic, regs::COMMAND)?;
        let devctl = self.config16(nic, self.pcie_capability(nic)? + regs::EXP_DEVCTL)?;
        Ok(ConfigState {
            memory: command & regs::COMMAND_MEMORY != 0,
            bus_master: command & regs::COMMAND_MASTER != 0,
            relaxed_ordering: devctl & regs::EXP_DEVCTL_RELAX_EN != 0,
        })
    }

    fn internals(&self, nic: usize) -> Result<Internals, TargetError> {
        let s = self.state(nic)?;
        Ok(Internals { dma_mappings: s.dma_mappings, driver_registered: s.driver_registered })
    }

    fn unimplemented(&self) -> Vec<String> {
        let mut said = Vec::new();
        for nic in 0..self.nics {
            match self.state(nic) {
                Ok(s) => {
                    for (req_type, count) in s.unsupported_requests {
                        let name = req_name(req_type)
                            .map(str::to_string)
                            .unwrap_or_else(|| format!("request 0x{req_type:04x}"));
                        said.push(format!("NIC {nic}: the model answered {name} CMD_NOT_SUPPORTED ({count}×)"));
                    }
                }
                Err(e) => said.push(format!("NIC {nic}: {e}")),
            }
        }
        said
    }
}
