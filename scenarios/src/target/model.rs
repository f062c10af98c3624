//! The `model` target: a fresh in-process world of model NICs per scenario, on a virtual clock,
//! with the scenario's faults injected by the model's firmware.

use std::sync::Arc;

use bnxt::{Clock, Machine};
use bnxt_hsi::hwrm::req_name;
use bnxt_model::faults::{self, FaultPlan};
use bnxt_model::world::WorldConfig;

use super::model_pci::{ModelClock, ModelMachine};
use super::{Capabilities, ConfigState, Internals, MachinePlan, Session, Target, TargetError};
use crate::scenario::{FaultKind, FirmwareAction, MAX_NICS};

/// The in-process model.
#[derive(Debug, Clone, Copy, Default)]
pub struct ModelTarget;

impl Target for ModelTarget {
    fn name(&self) -> String {
        "model".into()
    }

    fn kind(&self) -> &'static str {
        "model"
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities { faults: true, inspect: true, max_nics: MAX_NICS, virtual_time: true }
    }

    fn start(&self, plan: &MachinePlan<'_>) -> Result<Box<dyn Session>, TargetError> {
        let config = WorldConfig { nics: plan.nics, seed: plan.seed, faults: fault_plan(plan) };
        let machine = ModelMachine::new(config);
        let clock = machine.clock();
        Ok(Box::new(ModelSession { machine, clock, nics: plan.nics }))
    }
}

/// The scenario's faults as the model takes them.
pub fn fault_plan(plan: &MachinePlan<'_>) -> FaultPlan {
    let firmware = plan
        .faults
        .iter()
        .map(|fault| match &fault.kind {
            FaultKind::Firmware(f) => faults::FirmwareFault {
                nic: f.nic,
                req_type: f.req_type,
                nth: f.nth,
                action: match f.action {
                    FirmwareAction::NoResponse => faults::FirmwareAction::NoResponse,
                    FirmwareAction::Error(code) => faults::FirmwareAction::Error(code.value()),
                    FirmwareAction::Delay(d) => faults::FirmwareAction::Delay(d),
                },
            },
        })
        .collect();
    FaultPlan { firmware, ..FaultPlan::default() }
}

/// One scenario's world.
struct ModelSession {
    machine: Arc<ModelMachine>,
    clock: ModelClock,
    nics: usize,
}

impl ModelSession {
    fn check_nic(&self, nic: usize) -> Result<(), TargetError> {
        if nic < self.nics { Ok(()) } else { Err(TargetError::NoSuchNic { nic, count: self.nics }) }
    }
}

impl Session for ModelSession {
    fn machine(&self) -> &dyn Machine {
        &*self.machine
    }

    fn clock(&self) -> &dyn Clock {
        &self.clock
    }

    fn config_state(&self, nic: usize) -> Result<ConfigState, TargetError> {
        self.check_nic(nic)?;
        let s = self.machine.world().nic_state(nic);
        Ok(ConfigState { memory: s.memory_enabled, bus_master: s.bus_master, relaxed_ordering: s.relaxed_ordering })
    }

    fn internals(&self, nic: usize) -> Result<Internals, TargetError> {
        self.check_nic(nic)?;
        let s = self.machine.world().nic_state(nic);
        Ok(Internals { dma_mappings: s.dma_mappings, driver_registered: s.driver_registered })
    }

    fn unimplemented(&self) -> Vec<String> {
        let world = self.machine.world();
        let mut said = Vec::new();
        for nic in 0..self.nics {
            for (req_type, count) in world.nic_state(nic).unsupported_requests {
                let name = req_name(req_type).map(str::to_string).unwrap_or_else(|| format!("request 0x{req_type:04x}"));
                said.push(format!("NIC {nic}: the model answered {name} CMD_NOT_SUPPORTED ({count}×)"));
            }
        }
        said
    }
}
