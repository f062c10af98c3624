//! The `model` target: a fresh in-process world of model NICs per scenario, on a virtual clock,
//! with the scenario's faults injected by the model's firmware.

use std::sync::Arc;

use bnxt::{Clock, Machine};
use bnxt_hsi::hwrm::req_name;
use bnxt_model::faults::FaultPlan;
use bnxt_model::firmware::options::FirmwareOptions;
use bnxt_model_host::world::WorldConfig;

use super::{Capabilities, ConfigState, Internals, MachinePlan, Session, Target, TargetError};
use crate::scenario::{Capability, FirmwareSettings, MAX_NICS};
use crate::transcript::model::ModelEvents;
use crate::transcript::record::EventSource;
use bnxt_model_host::machine::{ModelClock, ModelMachine};

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

    fn supports(&self, _: Capability) -> bool {
        true
    }

    fn parallel(&self) -> bool {
        true
    }

    fn start(&self, plan: &MachinePlan<'_>) -> Result<Box<dyn Session>, TargetError> {
        let config = WorldConfig {
            nics: plan.nics,
            seed: plan.seed,
            faults: fault_plan(plan),
            firmware: firmware_options(plan.firmware),
        };
        // A wire plan the model refuses panics here, naming why; the runner reports it. The
        // decoder has checked every probability and NIC already.
        let machine = ModelMachine::new(config);
        {
            let mut world = machine.world();
            world.set_data_path_events(plan.events);
            if let Some(path) = plan.pcap {
                if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
                    std::fs::create_dir_all(dir).map_err(|e| TargetError::Cannot {
                        target: "model".into(),
                        what: format!("make {}: {e}", dir.display()),
                    })?;
                }
                world.set_pcap(path).map_err(|e| TargetError::Cannot {
                    target: "model".into(),
                    what: format!("write {}: {e}", path.display()),
                })?;
            }
        }
        let clock = machine.clock();
        Ok(Box::new(ModelSession { machine, clock, nics: plan.nics }))
    }
}

/// The scenario's firmware settings as the model takes them.
pub fn firmware_options(s: FirmwareSettings) -> FirmwareOptions {
    FirmwareOptions {
        resource_limits: s.resource_limits.unwrap_or(false),
        fast_destroy_qps: s.fast_destroy_qps.unwrap_or(0),
        mrav_entries: s.mrav_entries.unwrap_or(0),
        ..FirmwareOptions::default()
    }
}

/// The scenario's faults as the model takes them.
pub fn fault_plan(plan: &MachinePlan<'_>) -> FaultPlan {
    crate::scenario::fault_plan(plan.faults)
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
        Ok(self.machine.world().nic_state(nic))
    }

    fn events(&self) -> Option<Arc<dyn EventSource>> {
        Some(Arc::new(ModelEvents(self.machine.clone())))
    }

    fn finish_pcap(&self) -> Result<Option<u64>, String> {
        self.machine.world().finish_pcap().map_err(|e| e.to_string())
    }

    fn arm_fault(&self, fault: &crate::scenario::faults::ModelFault) -> Result<(), TargetError> {
        let (nic, (target, nth, action)) = (fault.nic(), fault.armed());
        self.check_nic(nic)?;
        // As `bnxt-model ctl fault add` arms it: with `nth` once, at the nth from now; without,
        // every one from now.
        self.machine
            .world()
            .arm_fault(nic, target, nth, None, action)
            .map(|_| ())
            .map_err(|e| TargetError::Cannot { target: "model".into(), what: format!("arm the fault: {e}") })
    }

    fn unimplemented(&self) -> Vec<String> {
        let world = self.machine.world();
        let mut said = Vec::new();
        for nic in 0..self.nics {
            for (req_type, count) in world.nic_state(nic).unsupported_requests {
                let name =
                    req_name(req_type).map(str::to_string).unwrap_or_else(|| format!("request 0x{req_type:04x}"));
                said.push(format!("NIC {nic}: the model answered {name} CMD_NOT_SUPPORTED ({count}×)"));
            }
        }
        said
    }
}
